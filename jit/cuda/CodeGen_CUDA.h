// The CUDA backend's code generator: a lowered Stmt in InjectGPU's canonical form ->
// CUDA C source (one extern "C" __global__ function per kernel) + the host code that
// launches them.
#pragma once
#include <string>
#include <vector>
#include "lower/LoweredFunc.h"

namespace weft {
namespace internal {

struct CudaKernelParam {
    std::string name;  // IR name: a buffer (Load/Store name) or a scalar variable
    bool is_buffer = false;
    Type type;         // element type (buffers) or value type (scalars)
    bool written = false;
};

struct CudaKernel {
    std::string name;                    // the __global__ function's name
    std::vector<CudaKernelParam> params; // in the order of the C signature
    Expr grid[3];                        // host Exprs, Int(32); 1 where unused
    int block[3] = {1, 1, 1};
    int64_t shared_bytes = 0;            // static __shared__ bytes
    std::string loop;                    // the original outermost gpu_blocks loop (for messages)
};

/** A part of the host code that computes something itself (a Func, or a stage of one, with
    no GPU schedule): it runs on the CPU, on the host copies of the buffers it touches. */
struct CudaHostStage {
    /** Its code as a CPU pipeline: the buffers it loads or stores (in that order in fn.args,
        dims 0 except for the pipeline's own buffers), then the host variables it uses (loop
        variables, lets, Params). */
    LoweredFunc fn;
    std::vector<bool> written;  // per buffer argument
};

struct CudaProgram {
    std::string source;
    /** The host code: each kernel replaced by Evaluate(gpu_launch(index)), each host stage by
        Evaluate(host_stage(index)). */
    Stmt host;
    std::vector<CudaKernel> kernels;
    std::vector<CudaHostStage> stages;
};

/** Generates CUDA C for every kernel of f (which must have been lowered with cuda = true).
    Throws weft::Error for IR the backend cannot express. With emulate, the source is host C++
    for the CPU emulation of a device (WEFT_CUDA_EMULATOR, see CudaRuntime.h): the same kernels,
    each thread nest run as loops over threadIdx, plus for each kernel an
    extern "C" void weft_emu_<kernel>(void **args, unsigned gx, unsigned gy, unsigned gz)
    that runs the grid. */
CudaProgram codegen_cuda(const LoweredFunc &f, bool emulate = false);

}  // namespace internal
}  // namespace weft
