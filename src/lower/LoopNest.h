// A summary of a lowered statement's loop nest (Halide's print_loop_nest): the loops with
// their kinds and ranges, the allocations, the Funcs each loop body stores, the branches.
#pragma once
#include <string>
#include "ir/IR.h"

namespace weft {
namespace internal {

/** The loop nest of s (taken after storage flattening, before vectorization and unrolling,
    so that vectorized and unrolled loops still show as loops). */
std::string loop_nest_text(const Stmt &s);

}  // namespace internal
}  // namespace weft
