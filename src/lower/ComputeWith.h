// compute_with: two stages' loop nests fused from the outermost loop down to a given level.
#pragma once
#include <set>
#include <string>
#include "lower/Env.h"

namespace weft {
namespace internal {

/** Fuses every stage scheduled compute_with(parent, var) with its parent's loop nest in s
    (the statement schedule_functions built, each stage's nest placed where it is computed).
    Checks what makes a fusion impossible or unsound and says so (weft::Error). The groups
    whose parent stage ("func.s<stage>") is in `fused` were fused already. */
Stmt fuse_compute_with(Env &env, const Stmt &s, const std::set<std::string> &fused);

/** For a Func `read` computed at loop `var` of Func `reader`: where `reader` is in a fused group
    that shares that loop with another member reading `read` too, fuses that group in s now (its
    members' nests placed, their producers not all yet), so that `read` is computed in the one loop
    both read it in (Halide's meaning). Returns whether `reader`'s loop `var` is now a fused loop
    (fused now or before; its parent's in the statement: *loop_func); adds the group's parent
    stage to `fused`. */
bool fuse_group_computing(Env &env, Stmt &s, const std::string &reader, const std::string &var, const std::string &read,
                          std::set<std::string> &fused, std::string *loop_func);

}  // namespace internal
}  // namespace weft
