// The CUDA backend's first step: a Stmt lowered for CUDA (InjectGPU's canonical form) split
// into its kernels (each outermost gpu_blocks loop nest, with its parameters, grid and block),
// the host stages (host code that computes something: it runs on the CPU) and the host code
// that drives them.
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
    int64_t shared_bytes = 0;            // static __shared__ bytes (set by cuda_source)
    std::string loop;                    // the original outermost gpu_blocks loop (for messages)
    Stmt body;                           // inside the grid loops: the block's thread nests
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
    std::string source;  // cuda_source's
    /** The host code: each kernel replaced by Evaluate(gpu_launch(index)), each host stage by
        Evaluate(host_stage(index)). */
    Stmt host;
    std::vector<CudaKernel> kernels;
    std::vector<CudaHostStage> stages;
};

/** Splits f (lowered with a CUDA target): kernels replaced by gpu_launch(index) in the host
    code, then each largest run of host statements that stores something and launches nothing
    replaced by host_stage(index). No source yet (cuda_source makes it). */
CudaProgram split_host_device(const LoweredFunc &f);

}  // namespace internal
}  // namespace weft
