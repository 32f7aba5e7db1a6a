// The CPU emulation of one CUDA device (WEFT_CUDA_EMULATOR=1), behind the driver interface it
// imitates: install_emulated_driver() fills a CudaDriver with functions that do on the CPU what
// the Driver API's do on a device. A module's image is the kernels as host C++ (codegen_cuda
// with emulate), compiled by the host compiler with the header below; "device" memory is host
// memory; limits are an sm_90's. It checks results and barrier placement, not speed.
#include "cuda/emulator/Emulator.h"
#include <dlfcn.h>
#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace weft {
namespace internal {
namespace {

/** What the CUDA C needs from CUDA, for a host C++ compiler: the CPU emulation of a device
    (kernels from codegen_cuda with emulate). Blocks run one after another; each thread of a block is a
    fiber that runs until it reaches __syncthreads() or ends, thread 0 first (in every other
    block the last thread first): so a thread that reads shared memory written by other threads
    without a barrier in between reads it before they have written it, and a wrong or missing
    barrier shows in the results. Shared memory is filled with all-ones bytes (NaN for floats)
    at the start of each block, so that a read of what the block has not written shows too. */
const char *const kEmulationHeader = R"(// CPU emulation of the CUDA features weft's kernels use
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static thread_local
struct weft_emu_trap_error : std::runtime_error {
    weft_emu_trap_error() : std::runtime_error("__trap() (a failed assertion) in an emulated kernel") {}
};
static inline void __trap() { throw weft_emu_trap_error(); }
struct weft_emu_dim3 { unsigned x, y, z; };
static thread_local weft_emu_dim3 threadIdx, blockIdx;
struct weft_emu_fiber {
    ucontext_t ctx;
    weft_emu_dim3 idx;
    bool done;
};
static thread_local ucontext_t weft_emu_sched;
static thread_local weft_emu_fiber *weft_emu_cur;
static thread_local void (*weft_emu_body)(void **);
static thread_local void **weft_emu_params;
static thread_local std::string weft_emu_failure;
static inline void __syncthreads() { swapcontext(&weft_emu_cur->ctx, &weft_emu_sched); }
static void weft_emu_entry() {
    try {
        weft_emu_body(weft_emu_params);
    } catch (std::exception &e) {
        if (weft_emu_failure.empty()) weft_emu_failure = e.what();
    }
    weft_emu_cur->done = true;  // returns to uc_link, the scheduler
}
static void weft_emu_run_grid(void (*body)(void **), void (*poison)(), void **p, unsigned gx, unsigned gy,
                              unsigned gz, unsigned bx, unsigned by, unsigned bz) {
    const size_t kStack = 64 * 1024, n = (size_t)bx * by * bz;
    std::vector<weft_emu_fiber> f(n);
    std::unique_ptr<char[]> stacks(new char[n * kStack]);
    weft_emu_body = body;
    weft_emu_params = p;
    weft_emu_failure.clear();
    for (unsigned z = 0; z < gz && weft_emu_failure.empty(); z++)
        for (unsigned y = 0; y < gy && weft_emu_failure.empty(); y++)
            for (unsigned x = 0; x < gx && weft_emu_failure.empty(); x++) {
                blockIdx.x = x; blockIdx.y = y; blockIdx.z = z;
                poison();  // a read of shared memory this block did not write gives NaN (or all ones)
                // Every other block runs its threads last first: a read of what another thread
                // writes before the next barrier then sees the old value whichever thread wrote it.
                const bool reverse = (x + y + z) % 2 == 1;
                for (size_t t = 0; t < n; t++) {
                    f[t].idx.x = (unsigned)(t % bx);
                    f[t].idx.y = (unsigned)(t / bx % by);
                    f[t].idx.z = (unsigned)(t / ((size_t)bx * by));
                    f[t].done = false;
                    getcontext(&f[t].ctx);
                    f[t].ctx.uc_stack.ss_sp = stacks.get() + t * kStack;
                    f[t].ctx.uc_stack.ss_size = kStack;
                    f[t].ctx.uc_link = &weft_emu_sched;
                    makecontext(&f[t].ctx, weft_emu_entry, 0);
                }
                size_t alive = n;
                while (alive && weft_emu_failure.empty()) {
                    size_t waiting = 0, ended = 0;
                    for (size_t i = 0; i < n && weft_emu_failure.empty(); i++) {
                        size_t t = reverse ? n - 1 - i : i;
                        if (f[t].done) continue;
                        weft_emu_cur = &f[t];
                        threadIdx = f[t].idx;
                        swapcontext(&weft_emu_sched, &f[t].ctx);
                        if (f[t].done) alive--, ended++;
                        else waiting++;
                    }
                    if (waiting && ended && weft_emu_failure.empty())
                        weft_emu_failure = "__syncthreads() that not every thread of the block reaches";
                }
            }
    if (!weft_emu_failure.empty()) throw std::runtime_error(weft_emu_failure);
}
template <typename T> static inline T weft_emu_bits(const void *p) { T v; memcpy(&v, p, sizeof v); return v; }
// Shared memory is thread_local storage here; its address goes through this so that the host
// compiler cannot fold a constant index (a wrapped one, in a branch not taken) into the TLS
// relocation, whose 32 bits it can overflow.
template <typename T> static inline T *weft_emu_opaque(T *p) { asm volatile("" : "+r"(p)); return p; }
// Per-thread arrays start as all-ones bytes (NaN) too: reading an element not written shows.
#define WEFT_POISON_LOCAL(a) memset(a, 0xff, sizeof a)
static inline float __int_as_float(unsigned u) { return weft_emu_bits<float>(&u); }
static inline unsigned __float_as_uint(float f) { return weft_emu_bits<unsigned>(&f); }
#define WEFT_EMULATED 1  // (the prelude's 16-bit float conversions in C, not PTX)
// Atomics: a block's threads are fibers of one host thread, switching only at __syncthreads(),
// and blocks run one after another, so a plain read-modify-write is atomic here.
template <typename T> static inline T atomicAdd(T *p, T v) { T o = *p; *p = (T)(o + v); return o; }
template <typename T> static inline T atomicMin(T *p, T v) { T o = *p; *p = v < o ? v : o; return o; }
template <typename T> static inline T atomicMax(T *p, T v) { T o = *p; *p = v > o ? v : o; return o; }
template <typename T> static inline T atomicCAS(T *p, T c, T v) { T o = *p; if (o == c) *p = v; return o; }
static inline double __longlong_as_double(long long u) { return weft_emu_bits<double>(&u); }
// Tensor cores (weft_mma_m16n8k16, Stage::gpu_mma): the warp's fragments (as floats) meet in
// block-wide arrays between two barriers (every thread of the block takes part: the lowering
// checks it); each thread sums its four elements in k's order. lin: the thread's index in its block.
static inline void weft_emu_mma_m16n8k16(float &c0, float &c1, float &c2, float &c3, const float *a, const float *b, int lin) {
    static thread_local float fa[1024][8], fb[1024][4];
    for (int i = 0; i < 8; i++) fa[lin][i] = a[i];
    for (int i = 0; i < 4; i++) fb[lin][i] = b[i];
    __syncthreads();
    const int L = lin % 32, base = lin - L;
    float *c[4] = {&c0, &c1, &c2, &c3}, out[4];
    for (int r = 0; r < 4; r++) {
        const int row = L / 4 + 8 * (r / 2), col = 2 * (L % 4) + r % 2;
        float s = *c[r];
        for (int k = 0; k < 16; k++)  // A(row, k) and B(k, col) where the lanes hold them (exact products)
            s += fa[base + (row % 8) * 4 + (k % 8) / 2][k % 2 + 2 * (row / 8) + 4 * (k / 8)] *
                 fb[base + col * 4 + (k % 8) / 2][k % 2 + 2 * (k / 8)];
        out[r] = s;
    }
    __syncthreads();
    for (int r = 0; r < 4; r++) *c[r] = out[r];
}
// Saturating conversions toward zero, NaN -> 0 (as the cvt.rzi.sat instructions).
template <typename I, typename F> static inline I weft_emu_sat(F x, double lo, double hi) {
    if (x != x) return 0;
    if ((double)x <= lo) return (I)lo;
    if ((double)x >= hi) return (I)hi;
    return (I)x;
}
// 64-bit bounds are not exact in float or double: compare with 2^63 and 2^64 themselves.
template <typename F> static inline long long weft_emu_ll(F x) {
    if (x != x) return 0;
    if (x >= (F)9.2233720368547758e18) return INT64_MAX;
    if (x <= (F)-9.2233720368547758e18) return INT64_MIN;
    return (long long)x;
}
template <typename F> static inline unsigned long long weft_emu_ull(F x) {
    if (x != x || x <= 0) return 0;
    if (x >= (F)1.8446744073709552e19) return UINT64_MAX;
    return (unsigned long long)x;
}
static inline int __float2int_rz(float x) { return weft_emu_sat<int>(x, -2147483648.0, 2147483647.0); }
static inline unsigned __float2uint_rz(float x) { return weft_emu_sat<unsigned>(x, 0.0, 4294967295.0); }
static inline long long __float2ll_rz(float x) { return weft_emu_ll(x); }
static inline unsigned long long __float2ull_rz(float x) { return weft_emu_ull(x); }
static inline int __double2int_rz(double x) { return weft_emu_sat<int>(x, -2147483648.0, 2147483647.0); }
static inline unsigned __double2uint_rz(double x) { return weft_emu_sat<unsigned>(x, 0.0, 4294967295.0); }
static inline long long __double2ll_rz(double x) { return weft_emu_ll(x); }
static inline unsigned long long __double2ull_rz(double x) { return weft_emu_ull(x); }
#define WEFT_EMU_VEC(T, N2, N4)                                                             \
    struct alignas(2 * sizeof(T)) N2 { T x, y; };                                           \
    struct alignas(4 * sizeof(T)) N4 { T x, y, z, w; };                                     \
    static inline N2 make_##N2(T a, T b) { return N2{a, b}; }                               \
    static inline N4 make_##N4(T a, T b, T c, T d) { return N4{a, b, c, d}; }
WEFT_EMU_VEC(float, float2, float4)
WEFT_EMU_VEC(int, int2, int4)
WEFT_EMU_VEC(unsigned, uint2, uint4)
)";

constexpr int kLaunchFailed = 719, kOutOfMemory = 2, kInvalidImage = 200, kNotFound = 500;
thread_local std::string last_failure;
CUresult_t fail(int code, std::string why) {
    last_failure = std::move(why);
    return code;
}

struct Kernel {
    void (*fn)(void **, unsigned, unsigned, unsigned) = nullptr;
    std::string name;
};
struct Module {
    void *so = nullptr;
    std::vector<std::unique_ptr<Kernel>> kernels;
};
struct Event {
    std::chrono::steady_clock::time_point t;
};

CUresult_t ok_noarg() { return 0; }
CUresult_t set_current(void *) { return 0; }
CUresult_t mem_alloc(CUdeviceptr_t *p, size_t n) {
    void *q = std::calloc(std::max<size_t>(n, 1), 1);
    if (!q) return kOutOfMemory;
    *p = (CUdeviceptr_t)(uintptr_t)q;
    return 0;
}
CUresult_t mem_free(CUdeviceptr_t p) {
    std::free((void *)(uintptr_t)p);
    return 0;
}
CUresult_t htod(CUdeviceptr_t d, const void *h, size_t n) {
    std::memcpy((void *)(uintptr_t)d, h, n);
    return 0;
}
CUresult_t dtoh(void *h, CUdeviceptr_t d, size_t n) {
    std::memcpy(h, (const void *)(uintptr_t)d, n);
    return 0;
}
CUresult_t dtod(CUdeviceptr_t a, CUdeviceptr_t b, size_t n) {
    std::memmove((void *)(uintptr_t)a, (const void *)(uintptr_t)b, n);
    return 0;
}
CUresult_t memset32(CUdeviceptr_t d, unsigned v, size_t n) {
    auto *p = (unsigned *)(uintptr_t)d;
    for (size_t i = 0; i < n; i++) p[i] = v;
    return 0;
}
CUresult_t module_unload(void *m) {
    auto *mod = (Module *)m;
    if (mod->so) dlclose(mod->so);
    delete mod;
    return 0;
}
CUresult_t launch(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned, unsigned, unsigned, unsigned, void *,
                  void **params, void **) {
    auto *k = (Kernel *)f;
    try {
        k->fn(params, gx, gy, gz);
    } catch (std::exception &e) {
        return fail(kLaunchFailed, k->name + ": " + e.what());
    }
    return 0;
}
CUresult_t event_create(void **e, unsigned) {
    *e = new Event;
    return 0;
}
CUresult_t event_record(void *e, void *) {
    ((Event *)e)->t = std::chrono::steady_clock::now();
    return 0;
}
CUresult_t event_sync(void *) { return 0; }
CUresult_t event_elapsed(float *ms, void *a, void *b) {
    *ms = std::chrono::duration<float, std::milli>(((Event *)b)->t - ((Event *)a)->t).count();
    return 0;
}
CUresult_t event_destroy(void *e) {
    delete (Event *)e;
    return 0;
}
CUresult_t error_name(CUresult_t r, const char **s) {
    *s = r == kLaunchFailed   ? "CUDA_ERROR_LAUNCH_FAILED (emulated)"
         : r == kOutOfMemory  ? "CUDA_ERROR_OUT_OF_MEMORY (emulated)"
         : r == kInvalidImage ? "CUDA_ERROR_INVALID_IMAGE (emulated)"
         : r == kNotFound     ? "CUDA_ERROR_NOT_FOUND (emulated)"
                              : "CUDA_ERROR (emulated)";
    return 0;
}
CUresult_t error_string(CUresult_t r, const char **s) {
    *s = r == kLaunchFailed || r == kInvalidImage || r == kNotFound ? last_failure.c_str() : "emulated device error";
    return 0;
}


/** cuModuleLoadData: the image is the emulation's source (codegen_cuda with emulate), compiled
    with the header above by the host compiler and loaded. */
CUresult_t module_load(void **out, const void *image) {
    *out = nullptr;
    char dir[] = "/tmp/weft-emu-XXXXXX";
    if (!mkdtemp(dir)) return fail(kInvalidImage, "cannot create a temporary directory");
    std::string d = dir, src = d + "/kernels.cpp", so = d + "/kernels.so", log = d + "/log.txt";
    auto cleanup = [&] {
        std::remove(src.c_str());
        std::remove(so.c_str());
        std::remove(log.c_str());
        rmdir(dir);
    };
    {
        FILE *f = std::fopen(src.c_str(), "w");
        if (!f) {
            cleanup();
            return fail(kInvalidImage, "cannot write " + src);
        }
        std::fputs(kEmulationHeader, f);
        std::fputs((const char *)image, f);
        std::fclose(f);
    }
    const char *cxx = std::getenv("WEFT_EMULATOR_CXX");
    std::string cmd = std::string(cxx && *cxx ? cxx : "c++") + " -std=c++17 -O1 -ffp-contract=off -fPIC -shared -fno-strict-aliasing -w " +
                      src + " -o " + so + " > " + log + " 2>&1";
    int rc = std::system(cmd.c_str());
    if (rc != 0) {
        std::string text;
        if (FILE *f = std::fopen(log.c_str(), "r")) {
            char buf[4096];
            size_t n;
            while ((n = std::fread(buf, 1, sizeof buf, f)) > 0 && text.size() < 20000) text.append(buf, n);
            std::fclose(f);
        }
        cleanup();
        return fail(kInvalidImage, "the host compiler failed on the emulated kernels (" + cmd + "):\n" + text);
    }
    void *h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    std::string why = h ? "" : dlerror();
    cleanup();  // the loaded library stays mapped
    if (!h) return fail(kInvalidImage, "cannot load the emulated kernels: " + why);
    auto *m = new Module;
    m->so = h;
    *out = m;
    return 0;
}
/** cuModuleGetFunction: the kernel's launcher, weft_emu_<name>. */
CUresult_t module_get_function(void **out, void *mod, const char *name) {
    auto *m = (Module *)mod;
    auto k = std::make_unique<Kernel>();
    k->name = name;
    k->fn = (decltype(k->fn))dlsym(m->so, ("weft_emu_" + k->name).c_str());
    if (!k->fn) return fail(kNotFound, std::string("no launcher for kernel ") + name);
    *out = k.get();
    m->kernels.push_back(std::move(k));
    return 0;
}

}  // namespace

void install_emulated_driver(CudaDriver &d) {
    d.cuCtxSetCurrent = set_current;
    d.cuCtxSynchronize = ok_noarg;
    d.cuModuleLoadData = module_load;
    d.cuModuleGetFunction = module_get_function;
    d.cuModuleUnload = module_unload;
    d.cuLaunchKernel = launch;
    d.cuMemAlloc = mem_alloc;
    d.cuMemFree = mem_free;
    d.cuMemcpyHtoD = htod;
    d.cuMemcpyDtoH = dtoh;
    d.cuMemcpyDtoD = dtod;
    d.cuMemsetD32 = memset32;
    d.cuEventCreate = event_create;
    d.cuEventRecord = event_record;
    d.cuEventSynchronize = event_sync;
    d.cuEventElapsedTime = event_elapsed;
    d.cuEventDestroy = event_destroy;
    d.cuGetErrorName = error_name;
    d.cuGetErrorString = error_string;
    d.cc_major = 9;
    d.cc_minor = 0;
    d.max_threads_per_block = 1024;
    d.max_shared_per_block = 48 * 1024;
    d.regs_per_block = 65536;
    d.sm_count = 132;
    d.name = "CPU emulation of an sm_90 device (WEFT_CUDA_EMULATOR)";
    d.ok = true;
}

}  // namespace internal
}  // namespace weft
