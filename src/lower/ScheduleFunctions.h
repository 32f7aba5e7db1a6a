// Loop nests from schedules, placed at their compute_at / store_at levels.
#pragma once
#include <functional>
#include "lower/BoxesTouched.h"
#include "lower/Env.h"

namespace weft {
namespace internal {

/** Is `loop` (a lowered loop's name, "g.s1.y") the loop `var` of a stage of Func `func` (its
    unique name)? */
bool is_loop_of(const std::string &loop, const std::string &func, const std::string &var);

/** Builds the pipeline's statement (with Provide / Realize / multi-dimensional calls).
    output_boxes: each output's region (by unique name). Checks that must run before any work
    (outputs written within their buffers) are appended to top_asserts. Where profile_id is
    set, each Func's computation is timed (weft_rt_profile with the Func's id). */
Stmt schedule_functions(Env &env, const std::map<std::string, Box> &output_boxes, std::vector<Stmt> &top_asserts,
                        const std::function<int(const std::string &)> &profile_id);

}  // namespace internal
}  // namespace weft
