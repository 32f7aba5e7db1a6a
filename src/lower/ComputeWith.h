// compute_with: two stages' loop nests fused from the outermost loop down to a given level.
#pragma once
#include "lower/Env.h"

namespace weft {
namespace internal {

/** Fuses every stage scheduled compute_with(parent, var) with its parent's loop nest in s
    (the statement schedule_functions built, each stage's nest placed where it is computed).
    Checks what makes a fusion impossible or unsound and says so (weft::Error). */
Stmt fuse_compute_with(Env &env, const Stmt &s);

}  // namespace internal
}  // namespace weft
