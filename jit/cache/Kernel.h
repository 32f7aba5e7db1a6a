// A compiled pipeline: one interface, one implementation per backend (jit/llvm/LLVMKernel.h,
// jit/cuda/CudaPipelineKernel.h, jit/interp/InterpretedKernel.h). The cache keeps them without
// knowing which backend made them.
#pragma once
#include <atomic>
#include <cstdint>
#include "lower/LoweredFunc.h"
#include "runtime/Runtime.h"

namespace weft {
namespace internal {

struct BufferContents;

/** How many compiled kernels are alive (the cache's, and those a call still runs). */
std::atomic<int64_t> &live_kernels();

class CompiledKernel {
public:
    explicit CompiledKernel(LoweredFunc f) : lowered(std::move(f)) { live_kernels()++; }
    virtual ~CompiledKernel() { live_kernels()--; }
    /** Runs the pipeline. args: one per lowered.args (a weft_buffer_t * for a buffer, the
        value's address for a scalar); bufs: the BufferContents behind the buffer arguments,
        in the same order (a backend that keeps device copies reads and marks them there).
        Returns 0, or nonzero with the message in ctx->error. */
    virtual int32_t call(void **args, const BufferContents *const *bufs, weft_context_t *ctx) const = 0;

    const LoweredFunc lowered;
    /** Compiled without the shapes (a shape-generic kernel: its bounds checks are conservative). */
    bool generic = false;
};

}  // namespace internal
}  // namespace weft
