// Func::trace_stores / trace_loads / trace_realizations: lines printed as the pipeline runs.
#pragma once
#include "ir/IR.h"
#include "lower/Env.h"

namespace weft {
namespace internal {

/** For each traced Func (by its user name): each Provide's value (but an atomic update's)
    becomes trace(value, "Store f.0(", args..., ") = ", value), each call of it trace(call,
    "Load f.0(", args..., ") = ", call), and each Realize of it is preceded by a line "Begin
    realization f.0(min, extent, ...)" and followed by "End realization f.0(...)". The
    "trace" intrinsic prints its pieces after the value joined without spaces, as print()
    does otherwise, and is the value. Runs on schedule_functions' output. */
Stmt inject_tracing(const Stmt &s, const Env &env);

}  // namespace internal
}  // namespace weft
