// A CUDA pipeline compiled and called: its kernels loaded on the device (NVRTC, or the CPU
// emulation), its host code and host stages compiled for the CPU; and the runtime the host code
// calls (launches, host stages, internal buffers), which keeps each buffer's host and device
// copies and copies one to the other only where the side about to use it lacks the newest.
#pragma once
#include <memory>
#include <string>
#include <vector>
#include "cuda/CudaDriver.h"
#include "cuda/HostCode.h"
#include "llvm/CodeGen_LLVM.h"
#include "runtime/Runtime.h"

namespace weft {
namespace internal {

struct CudaModule {
    CudaProgram program;
    NvrtcOutput compiled;
    void *module = nullptr;
    std::vector<void *> functions;
    CudaHostCode host;
    /** The host code and the host stages compiled for the CPU (null where this build has no
        LLVM: the interpreter runs them). */
    std::shared_ptr<CompiledModule> host_fn;
    std::vector<std::shared_ptr<CompiledModule>> stages;
    ~CudaModule();
};
/** Generates, compiles (NVRTC) and loads the kernels of a LoweredFunc lowered for CUDA, and
    compiles its host code and host stages for cpu (the host's CPU when null). If source is
    non-null it receives the CUDA C; llvm_ir, the host code's and host stages' LLVM IR. With
    code: the compiled parts (host objects, the kernels' cubin) are taken from its sections
    where it has them (the disk cache's), else compiled and added to it. */
std::shared_ptr<CudaModule> compile_cuda(const LoweredFunc &f, std::string *source = nullptr,
                                         const CPUTargetInfo *cpu = nullptr, std::string *llvm_ir = nullptr,
                                         CodeSections *code = nullptr);

/** Runs a CUDA pipeline that has kernels: its host code here, its kernels on the device, its
    host stages on the CPU. bufs: the BufferContents of the buffer arguments, in the order they
    appear in f.args. Outputs written by kernels are left device_dirty, those written last by
    host stages host_dirty. Returns nonzero after an assertion failed (message in ctx); throws
    Error for what the device or driver refused. */
int32_t cuda_call(const CudaModule &m, const LoweredFunc &f, void **args, weft_context_t *ctx,
                  const BufferContents *const *bufs);

}  // namespace internal
}  // namespace weft
