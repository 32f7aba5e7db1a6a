// Accumulators of an output's reduction held in a local tile. A reduction scheduled in register
// blocks directly on the output (f.update().tile(x, y, xi, yi, 64, 6).reorder(xi, yi, k, x, y)
// .vectorize(xi).unroll(xi).unroll(yi)) updates the same few output elements at every step of
// its reduction loop. The output is the caller's buffer, which code generation cannot prove
// apart from the inputs read in that loop, so each step would load and store it through memory.
// This pass copies that block of elements into a stack tile before the loop, updates the tile,
// and writes it back after: the tile is the pipeline's own (it overlaps no other buffer) and
// every access to it is at a constant offset once the block's loops are unrolled, so it lives in
// registers. The same operations in the same order: results are unchanged, bit for bit.
#pragma once
#include "ir/IR.h"
#include <set>
#include <string>

namespace weft {
namespace internal {

/** s (flattened, before unrolling and vectorization) with the accumulators of the blocks
    described above, for stores to the buffers named in `outputs`, held in stack tiles. */
Stmt promote_accumulators(const Stmt &s, const std::set<std::string> &outputs);

}  // namespace internal
}  // namespace weft
