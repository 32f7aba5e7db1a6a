// The CUDA runtime of weft: NVRTC and the Driver API, both loaded with dlopen (nothing CUDA is
// linked at build time, so every binary starts where neither exists), compiled modules, and
// running a CUDA pipeline (its host part here, its kernels on the device).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>
#include "cuda/CodeGen_CUDA.h"
#include "llvm/CodeGen_LLVM.h"
#include "runtime/Runtime.h"
#include "weft/Buffer.h"

namespace weft {
namespace internal {

// ---------------- NVRTC ----------------
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

// ---------------- Driver API ----------------
typedef int CUresult_t;
typedef unsigned long long CUdeviceptr_t;
struct CudaDriver {
    bool ok = false;
    std::string why;
    CUresult_t (*cuInit)(unsigned) = nullptr;
    CUresult_t (*cuDeviceGetCount)(int *) = nullptr;
    CUresult_t (*cuDeviceGet)(int *, int) = nullptr;
    CUresult_t (*cuDeviceGetAttribute)(int *, int, int) = nullptr;
    CUresult_t (*cuDeviceGetName)(char *, int, int) = nullptr;
    CUresult_t (*cuDevicePrimaryCtxRetain)(void **, int) = nullptr;
    CUresult_t (*cuCtxSetCurrent)(void *) = nullptr;
    CUresult_t (*cuCtxSynchronize)() = nullptr;
    CUresult_t (*cuModuleLoadData)(void **, const void *) = nullptr;
    CUresult_t (*cuModuleUnload)(void *) = nullptr;
    CUresult_t (*cuModuleGetFunction)(void **, void *, const char *) = nullptr;
    CUresult_t (*cuFuncGetAttribute)(int *, int, void *) = nullptr;
    CUresult_t (*cuLaunchKernel)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                                 void **, void **) = nullptr;
    CUresult_t (*cuMemAlloc)(CUdeviceptr_t *, size_t) = nullptr;
    CUresult_t (*cuMemFree)(CUdeviceptr_t) = nullptr;
    CUresult_t (*cuMemcpyHtoD)(CUdeviceptr_t, const void *, size_t) = nullptr;
    CUresult_t (*cuMemcpyDtoH)(void *, CUdeviceptr_t, size_t) = nullptr;
    CUresult_t (*cuMemcpyDtoD)(CUdeviceptr_t, CUdeviceptr_t, size_t) = nullptr;
    CUresult_t (*cuMemsetD32)(CUdeviceptr_t, unsigned, size_t) = nullptr;
    CUresult_t (*cuEventCreate)(void **, unsigned) = nullptr;
    CUresult_t (*cuEventRecord)(void *, void *) = nullptr;
    CUresult_t (*cuEventSynchronize)(void *) = nullptr;
    CUresult_t (*cuEventElapsedTime)(float *, void *, void *) = nullptr;
    CUresult_t (*cuEventDestroy)(void *) = nullptr;
    CUresult_t (*cuGetErrorString)(CUresult_t, const char **) = nullptr;
    CUresult_t (*cuGetErrorName)(CUresult_t, const char **) = nullptr;
    // The device in use (device 0) once initialised:
    int device = 0;
    void *context = nullptr;
    int cc_major = 0, cc_minor = 0;
    int max_threads_per_block = 1024, regs_per_block = 65536, sm_count = 0;
    int64_t max_shared_per_block = 48 * 1024;
    SmLimits per_sm;
    std::string name;
};
/** WEFT_CUDA_EMULATOR=1 in the environment: a CPU emulation of one CUDA device stands in for
    the driver (for tests and development on machines without a GPU). Kernels are generated as
    for the device (and compiled by NVRTC, where it exists, for the resource checks), then as
    host C++ (codegen_cuda's emulate), compiled by the host compiler ($WEFT_EMULATOR_CXX, else
    c++) and run block by block; "device" memory is host memory; limits are an sm_90 device's.
    It checks results and barrier placement (a thread nest reading shared memory that another
    nest writes sees nothing before the barrier's nest has run), not speed. */
bool cuda_emulated();

/** The driver, loaded and initialised on device 0 with its primary context current on
    the calling thread. Throws Error (naming the missing library or the failing call) where
    there is no driver or device. */
CudaDriver &cuda_driver();
/** Throws Error "weft: CUDA <what> failed: <name>: <description>" when r != 0. */
void cuda_check(CUresult_t r, const std::string &what);
/** "sm_90/nvrtc13.0": what a CUDA target's cache key should also hold. */
std::string cuda_device_key();

// ---------------- compiled pipelines ----------------
struct CudaModule {
    CudaProgram program;
    NvrtcOutput compiled;
    void *module = nullptr;
    std::vector<void *> functions;
    /** The host stages compiled for the CPU (null where this build has no LLVM: the
        interpreter runs them). */
    std::vector<std::shared_ptr<CompiledModule>> stages;
    ~CudaModule();
};
/** Generates, compiles (NVRTC) and loads the kernels of a LoweredFunc lowered for CUDA, and
    compiles its host stages for cpu (the host's CPU when null). If source is non-null it
    receives the CUDA C; llvm_ir, the host stages' LLVM IR. */
std::shared_ptr<CudaModule> compile_cuda(const LoweredFunc &f, std::string *source = nullptr,
                                         const CPUTargetInfo *cpu = nullptr, std::string *llvm_ir = nullptr);

/** Makes sure b has a device allocation (same layout as the host's); with copy, also that
    the device copy is current (copies the host's when host_dirty or new). */
void ensure_device_copy(BufferContents &b, bool copy);

/** Runs a CUDA pipeline: its host code here, its kernels on the device, its host stages on
    the CPU. bufs: the BufferContents of the buffer arguments, in the order they appear in
    f.args. Each buffer (the pipeline's and its internal ones) is copied between host and
    device only where the side about to use it does not have the newest copy; outputs written
    by kernels are left device_dirty, those written last by host stages host_dirty. */
int32_t cuda_call(const CudaModule &m, const LoweredFunc &f, void **args, weft_context_t *ctx,
                  const BufferContents *const *bufs);

}  // namespace internal
}  // namespace weft
