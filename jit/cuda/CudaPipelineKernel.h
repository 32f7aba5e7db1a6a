// The CUDA backend's kernel: host code that launches the kernels (and runs host stages).
#pragma once
#include "cache/Kernel.h"
#include "cuda/CudaPipeline.h"

namespace weft {
namespace internal {

class CudaPipelineKernel : public CompiledKernel {
public:
    /** host: the pipeline compiled for the CPU, run where lowering made no GPU kernel. */
    CudaPipelineKernel(LoweredFunc f, std::shared_ptr<CudaModule> m, std::shared_ptr<const CompiledKernel> host)
        : CompiledKernel(std::move(f)), module_(std::move(m)), host_(std::move(host)) {}
    int32_t call(void **args, const BufferContents *const *bufs, weft_context_t *ctx) const override {
        if (!module_->program.kernels.empty()) return cuda_call(*module_, lowered, args, ctx, bufs);
        // No GPU loops: it all runs on the host, which needs the host copies current.
        size_t n = 0;
        for (auto &a : lowered.args)
            if (a.kind == LoweredArg::Buffer) {
                auto *b = const_cast<BufferContents *>(bufs[n++]);
                buffer_copy_to_host(*b);
                if (b->device) b->host_dirty = true;
            }
        return host_->call(args, bufs, ctx);
    }
    const CudaModule &module() const { return *module_; }

private:
    std::shared_ptr<CudaModule> module_;
    std::shared_ptr<const CompiledKernel> host_;
};

}  // namespace internal
}  // namespace weft
