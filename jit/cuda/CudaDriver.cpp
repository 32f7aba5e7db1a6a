#include "cuda/CudaDriver.h"
#include <dlfcn.h>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include "cuda/emulator/Emulator.h"

namespace weft {
namespace internal {

bool cuda_emulated() {
    static const bool on = [] {
        const char *e = std::getenv("WEFT_CUDA_EMULATOR");
        return e && *e && std::strcmp(e, "0") != 0;
    }();
    return on;
}

namespace {
std::once_flag g_driver_once;
CudaDriver g_driver;

void load_driver() {
    CudaDriver &d = g_driver;
    if (cuda_emulated()) return install_emulated_driver(d);
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        d.why = "no CUDA driver (libcuda.so.1 could not be loaded)";
        return;
    }
    bool missing = false;
    auto sym = [&](const char *a, const char *b = nullptr) {
        void *p = dlsym(h, a);
        if (!p && b) p = dlsym(h, b);
        if (!p) {
            if (!missing) d.why = std::string("libcuda.so.1 lacks ") + a;
            missing = true;
        }
        return p;
    };
#define WEFT_SYM(f, ...) d.f = (decltype(d.f))sym(__VA_ARGS__)
    WEFT_SYM(cuInit, "cuInit");
    WEFT_SYM(cuDeviceGetCount, "cuDeviceGetCount");
    WEFT_SYM(cuDeviceGet, "cuDeviceGet");
    WEFT_SYM(cuDeviceGetAttribute, "cuDeviceGetAttribute");
    WEFT_SYM(cuDeviceGetName, "cuDeviceGetName");
    WEFT_SYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    WEFT_SYM(cuCtxSetCurrent, "cuCtxSetCurrent");
    WEFT_SYM(cuCtxSynchronize, "cuCtxSynchronize");
    WEFT_SYM(cuModuleLoadData, "cuModuleLoadData");
    WEFT_SYM(cuModuleUnload, "cuModuleUnload");
    WEFT_SYM(cuModuleGetFunction, "cuModuleGetFunction");
    WEFT_SYM(cuFuncGetAttribute, "cuFuncGetAttribute");
    WEFT_SYM(cuLaunchKernel, "cuLaunchKernel");
    WEFT_SYM(cuMemAlloc, "cuMemAlloc_v2");
    WEFT_SYM(cuMemFree, "cuMemFree_v2");
    WEFT_SYM(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
    WEFT_SYM(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
    WEFT_SYM(cuMemcpyDtoD, "cuMemcpyDtoD_v2");
    WEFT_SYM(cuMemsetD32, "cuMemsetD32_v2");
    WEFT_SYM(cuEventCreate, "cuEventCreate");
    WEFT_SYM(cuEventRecord, "cuEventRecord");
    WEFT_SYM(cuEventSynchronize, "cuEventSynchronize");
    WEFT_SYM(cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime");
    WEFT_SYM(cuEventDestroy, "cuEventDestroy_v2");
    WEFT_SYM(cuGetErrorString, "cuGetErrorString");
    WEFT_SYM(cuGetErrorName, "cuGetErrorName");
#undef WEFT_SYM
    if (missing) return;
    int r = d.cuInit(0);
    if (r != 0) {
        d.why = "cuInit failed (error " + std::to_string(r) + "): no usable CUDA device";
        return;
    }
    int count = 0;
    if (d.cuDeviceGetCount(&count) != 0 || count < 1) {
        d.why = "no CUDA device";
        return;
    }
    d.cuDeviceGet(&d.device, 0);
    if ((r = d.cuDevicePrimaryCtxRetain(&d.context, d.device)) != 0) {
        d.why = "cuDevicePrimaryCtxRetain failed (error " + std::to_string(r) + ")";
        return;
    }
    auto attr = [&](int a) {
        int v = 0;
        d.cuDeviceGetAttribute(&v, a, d.device);
        return v;
    };
    d.cc_major = attr(75);
    d.cc_minor = attr(76);
    d.max_threads_per_block = attr(1);
    d.max_shared_per_block = attr(8);
    d.regs_per_block = attr(12);
    d.sm_count = attr(16);
    d.per_sm.regs = attr(82);     // MAX_REGISTERS_PER_MULTIPROCESSOR
    d.per_sm.threads = attr(39);  // MAX_THREADS_PER_MULTIPROCESSOR
    d.per_sm.shared = attr(81);   // MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
    char name[256] = {0};
    d.cuDeviceGetName(name, sizeof name, d.device);
    d.name = name;
    d.ok = true;
}
}  // namespace

CudaDriver *loaded_cuda_driver() { return g_driver.ok ? &g_driver : nullptr; }

CudaDriver &cuda_driver() {
    std::call_once(g_driver_once, load_driver);
    if (!g_driver.ok) throw Error("weft: CUDA: " + g_driver.why);
    thread_local bool current = false;
    if (!current) {
        cuda_check(g_driver.cuCtxSetCurrent(g_driver.context), "cuCtxSetCurrent");
        current = true;
    }
    return g_driver;
}

void cuda_check(CUresult_t r, const std::string &what) {
    if (r == 0) return;
    const char *name = nullptr, *desc = nullptr;
    if (g_driver.cuGetErrorName) g_driver.cuGetErrorName(r, &name);
    if (g_driver.cuGetErrorString) g_driver.cuGetErrorString(r, &desc);
    throw Error("weft: CUDA " + what + " failed: " + (name ? name : "error " + std::to_string(r)) + ": " +
                (desc ? desc : "unknown error"));
}

std::string cuda_device_key() {
    std::string arch = "sm_90";
    try {
        CudaDriver &d = cuda_driver();
        arch = "sm_" + std::to_string(d.cc_major) + std::to_string(d.cc_minor);
    } catch (Error &) {
    }
    std::string v = "none";
    try {
        v = nvrtc_version();
    } catch (Error &) {
    }
    return arch + "/nvrtc" + v + (cuda_emulated() ? "/emulated" : "");
}

}  // namespace internal
}  // namespace weft
