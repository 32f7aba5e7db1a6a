// Loop partitioning: where clamps (from boundary conditions) turn vector loads into gathers,
// peel the first and last iterations so that the steady state needs no clamp.
#pragma once
#include "ir/IR.h"

namespace weft {
namespace internal {
/** For each serial loop whose body clamps a vector index that depends on the loop variable,
    splits off a prologue and an epilogue of at most two iterations each when that lets the
    simplifier remove every such clamp from the middle loop. Results are unchanged. */
Stmt partition_loops(const Stmt &s);
}  // namespace internal
}  // namespace weft
