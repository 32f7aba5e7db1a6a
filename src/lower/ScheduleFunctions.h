// Loop nests from schedules, placed at their compute_at / store_at levels.
#pragma once
#include "lower/BoxesTouched.h"
#include "lower/Env.h"

namespace weft {
namespace internal {

/** Builds the pipeline's statement (with Provide / Realize / multi-dimensional calls).
    output_boxes: each output's region (by unique name). Checks that must run before any work
    (outputs written within their buffers) are appended to top_asserts. */
Stmt schedule_functions(Env &env, const std::map<std::string, Box> &output_boxes, std::vector<Stmt> &top_asserts);

}  // namespace internal
}  // namespace weft
