// Lowering for CUDA targets: turns gpu_blocks / gpu_threads loop nests into kernels in a
// canonical form that a GPU backend translates one to one, checks the GPU schedule, places
// storage (shared memory, registers) and inserts barriers. Knows nothing of CUDA itself.
#pragma once
#include "ir/IR.h"
#include "lower/Env.h"

namespace weft {
namespace internal {

/** Limits a GPU schedule is checked against (sm_90 defaults; the device's when known). */
struct GPULimits {
    int max_threads_per_block = 1024;
    int max_block_dim[3] = {1024, 1024, 64};
    int64_t max_shared_bytes = 48 * 1024;  // static __shared__ per block
};

/** The canonical form produced (every kernel is one outermost GPUBlock loop):
      For("blockIdx.z"?, 0, ez, GPUBlock,  For("blockIdx.y", ...) For("blockIdx.x", 0, ex, GPUBlock, B))
    - 1 to 3 GPUBlock loops, perfectly nested, innermost = x; min 0; extents are host values
      (they use no variable bound inside the kernel). B starts with the lets binding each
      original block loop variable to (its min + blockIdx.d).
    - In B, every GPUThread loop is For("threadIdx.d", 0, C, GPUThread, body) with C a
      constant; body binds the original loop variable and, where the loop's own extent may be
      smaller than C, is guarded by if (threadIdx.d < extent). A thread nest (an outermost
      GPUThread loop and everything inside it) runs on the threads whose indices in the
      dimensions it uses are below their C and whose indices in the other dimensions are 0
      (the backend emits those guards from the block size: the max C per dimension).
    - Block-level code outside thread loops that stores to memory is wrapped in a thread nest
      For("threadIdx.x", 0, 1, GPUThread, ...) (runs once per block).
    - Evaluate(Call intrinsic "gpu_thread_barrier") is a barrier for the block's threads; it
      only appears at block level (never inside a thread nest).
    - Allocate nodes at block level have memory_type GPUShared, inside thread nests
      Register; both have constant extents.
    - Code outside kernels is host code: loops that launch kernels, and stores of Funcs (or
      stages) with no GPU schedule, which run on the CPU (the CUDA backend's host stages);
      allocations there get a host and a device copy, each where it is used.
    Throws weft::Error (naming the Func and loop) for an illegal GPU schedule. A Stmt with no
    GPU loops is returned unchanged. */
Stmt inject_gpu(const Stmt &s, const Env &env, const GPULimits &limits = GPULimits());

/** Before the first simplification: hides GPU loop extents in an opaque intrinsic
    ("gpu_loop_extent") so that a GPU loop of extent 1 stays a loop. inject_gpu unwraps them. */
Stmt protect_gpu_loops(const Stmt &s);
/** A loop extent without protect_gpu_loops' wrapper (unchanged where there is none). */
Expr unwrap_extent(const Expr &e);

/** Does s contain a GPUBlock loop (a kernel)? */
bool has_gpu_kernels(const Stmt &s);

}  // namespace internal
}  // namespace weft
