// The LLVM backend's kernel: machine code called directly.
#pragma once
#include "cache/Kernel.h"
#include "llvm/CodeGen_LLVM.h"
#include "runtime/Runtime.h"

namespace weft {
namespace internal {

class LLVMKernel : public CompiledKernel {
public:
    LLVMKernel(LoweredFunc f, std::shared_ptr<CompiledModule> m) : CompiledKernel(std::move(f)), module_(std::move(m)) {}
    int32_t call(void **args, const BufferContents *const *, weft_context_t *ctx) const override {
        weft_rt_enter_run();  // (this thread's freed blocks reused without the pool's lock)
        int32_t r = module_->fn(args, ctx);
        weft_rt_leave_run();
        return r;
    }

private:
    std::shared_ptr<CompiledModule> module_;  // keeps the code alive
};

}  // namespace internal
}  // namespace weft
