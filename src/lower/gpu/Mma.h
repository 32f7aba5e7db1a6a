// Tensor cores for CUDA targets (Stage::gpu_mma): an update's three innermost loops, run by
// every thread of a block, become one warp-wide mma.sync.m16n8k16 per warp.
#pragma once
#include "ir/IR.h"
#include "lower/Env.h"

namespace weft {
namespace internal {

/** For each stage scheduled gpu_mma(i, j, k): its loops i, j (2 iterations each) and k (16),
    innermost and directly nested, whose body is acc[idx] = acc[idx] + float(a) * float(b)
    (or fma(float(a), float(b), acc[idx])) with a and b loads of one 16-bit float type, are
    replaced by Evaluate(Call intrinsic "gpu_mma_m16n8k16"(c0..c3, a0..a7, b0..b3, lane id)):
    c0..c3 the loads of the thread's four accumulators (which the call updates in place), a
    and b the fragments each lane holds (the operands' loads at the lane's rows, columns and
    steps of k), the last argument the thread's linear index in its block.
    Checked (a weft::Error naming the Func otherwise): the loops are found as described, their
    extents are constants 2, 2 and 16, the stage's thread loops cover the block exactly (every
    thread takes part, no condition around the loops), the block has whole warps, and, by
    evaluating the indices at every lane and iteration of a few warps, the threads and their
    i x j iterations are the instruction's accumulator layout and each operand depends only on
    its row (or column) and k. Runs after storage flattening, before unrolling. */
Stmt lower_gpu_mma(const Stmt &s, const Env &env);

}  // namespace internal
}  // namespace weft
