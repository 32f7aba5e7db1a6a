// NVRTC, loaded with dlopen (nothing CUDA is linked at build time): CUDA C -> cubin or PTX,
// with ptxas' report of each kernel's resources, and the checks of those against a device.
#pragma once
#include <map>
#include <string>
#include <vector>
#include "cuda/CodeGen_CUDA.h"

namespace weft {
namespace internal {

/** Loads libnvrtc (once). False, with the reason in *why, where it cannot be loaded. */
bool nvrtc_available(std::string *why = nullptr);
/** e.g. "13.0"; throws Error where NVRTC is missing. */
std::string nvrtc_version();

/** Resource use of one compiled kernel, as ptxas reports it (--ptxas-options=-v). */
struct KernelUsage {
    int registers = -1;
    int64_t shared_bytes = 0, stack_bytes = 0, spill_stores = 0, spill_loads = 0;
    int min_blocks = 1;  // blocks per multiprocessor asked of ptxas (compile_kernels)
};
struct NvrtcOutput {
    std::string binary;  // cubin, or PTX text when is_ptx
    bool is_ptx = false;
    std::string arch;    // "sm_90"
    std::string log;
    std::map<std::string, KernelUsage> usage;  // by kernel name (cubin compiles only)
};
/** Compiles CUDA C for arch ("sm_90"): a cubin (with ptxas' resource report) or, with
    ptx = true, PTX for compute_XX. Every failure -> Error with the log and the source lines
    the log points at. */
NvrtcOutput nvrtc_compile(const std::string &source, const std::string &arch, bool ptx = false,
                          const std::vector<std::string> &defines = {});

/** What one multiprocessor holds (an sm_90's by default). */
struct SmLimits {
    int regs = 65536, threads = 2048;
    int64_t shared = 228 * 1024;
};
/** Compiles a program's kernels for arch (a cubin) as nvrtc_compile does; then, for each kernel
    whose registers alone keep a second block off a multiprocessor, where only a little more
    than half of them are needed (and two blocks' threads and shared memory would fit), compiles
    again asking ptxas for two blocks per multiprocessor (__launch_bounds__(threads, 2), via the
    macro WEFT_LAUNCH_BOUNDS_<kernel>), and keeps that for the kernels it did not make spill
    and that two blocks then fit: twice the warps to hide latency with. usage[k].min_blocks
    says which. */
NvrtcOutput compile_kernels(const CudaProgram &p, const std::string &arch, const SmLimits &sm = SmLimits());

/** Checks the compiled kernels' resource use against their launch shapes (threads x
    registers <= regs_per_block, shared <= max_shared) -> Error naming the kernel's loop. */
void check_kernel_resources(const CudaProgram &p, const NvrtcOutput &o, int regs_per_block = 65536,
                            int64_t max_shared = 48 * 1024);

}  // namespace internal
}  // namespace weft
