// The CUDA Driver API, loaded with dlopen (nothing CUDA is linked at build time, so every binary
// starts where there is none), or its CPU emulation (WEFT_CUDA_EMULATOR=1) behind the same
// table of functions; and device memory: buffers' device copies and the pool of a pipeline's
// internal device allocations.
#pragma once
#include <cstddef>
#include <string>
#include "cuda/Nvrtc.h"
#include "weft/Buffer.h"

namespace weft {
namespace internal {

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
/** WEFT_CUDA_EMULATOR=1 in the environment: the CPU emulation of one CUDA device
    (cuda/emulator/Emulator.h) stands in for the driver. */
bool cuda_emulated();

/** The driver, loaded and initialised on device 0 with its primary context current on
    the calling thread. Throws Error (naming the missing library or the failing call) where
    there is no driver or device. */
CudaDriver &cuda_driver();
/** Throws Error "weft: CUDA <what> failed: <name>: <description>" when r != 0. */
void cuda_check(CUresult_t r, const std::string &what);
/** "sm_90/nvrtc13.0": what a CUDA target's cache key should also hold. */
std::string cuda_device_key();
/** The driver where it has been loaded and works, else null; never loads it nor throws (for
    destructors). */
CudaDriver *loaded_cuda_driver();

// ---------------- device memory (DeviceMemory.cpp) ----------------
/** Elements from a buffer's first to its last (its host copy's and device copy's size). */
int64_t span_elements(const BufferContents &b);
/** Makes sure b has a device allocation (same layout as the host's); with copy, also that
    the device copy is current (copies the host's when host_dirty or new). */
void ensure_device_copy(BufferContents &b, bool copy);

/** Device memory for a pipeline's internal buffers, from a pool reused across calls (as
    weft_rt_malloc's host memory is). A block given back is reused by later work without waiting
    for the device: every launch and copy goes to the one (legacy default) stream, so a later
    kernel or copy that reuses it runs after the earlier ones that used it. Where the device is
    out of memory, the pool's free blocks are released and the allocation tried again.
    Thread-safe; what throws Error names `what`. */
CUdeviceptr_t device_pool_alloc(size_t bytes, const std::string &what);
void device_pool_free(CUdeviceptr_t p, size_t bytes);
/** Bytes held by the pool's free blocks (for tests). */
size_t device_pool_free_bytes();

}  // namespace internal
}  // namespace weft
