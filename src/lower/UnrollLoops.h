// Unrolled loops of constant extent become copies of their body.
#pragma once
#include "ir/IR.h"

namespace weft {
namespace internal {
/** Loops of non-constant extent (possible in shape-generic kernels) stay serial loops. */
Stmt unroll_loops(const Stmt &s);
}  // namespace internal
}  // namespace weft
