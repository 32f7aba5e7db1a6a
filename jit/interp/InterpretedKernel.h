// The interpreter as a backend: the kernel of a build without LLVM (and of the reference).
#pragma once
#include "cache/Kernel.h"
#include "interp/Interpreter.h"

namespace weft {
namespace internal {

class InterpretedKernel : public CompiledKernel {
public:
    using CompiledKernel::CompiledKernel;
    int32_t call(void **args, const BufferContents *const *, weft_context_t *ctx) const override {
        return interpret_lowered(lowered, args, ctx);
    }
};

}  // namespace internal
}  // namespace weft
