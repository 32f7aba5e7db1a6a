// Unrolled loops of constant extent become copies of their body.
#pragma once
#include <set>
#include <string>
#include "ir/IR.h"

namespace weft {
namespace internal {
/** Loops of non-constant extent (possible in shape-generic kernels) stay serial loops. */
/** With `own_storage` (CUDA), what is allocated inside an unrolled loop gets its own storage in
    each copy (a buffer name per copy): a tile staged in shared memory at each of two unrolled
    steps is then double-buffered, and the next step's writes need not wait for this step's
    reads (one barrier per step instead of two). Funcs in `keep` (load_ahead) keep their names. */
Stmt unroll_loops(const Stmt &s, bool own_storage = false, const std::set<std::string> &keep = {});
}  // namespace internal
}  // namespace weft
