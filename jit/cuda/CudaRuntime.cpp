#include "cuda/CudaRuntime.h"
#include <dlfcn.h>
#include <unistd.h>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <regex>
#include <sstream>
#include "interp/Interpreter.h"
#include "ir/IRVisitor.h"
#include "weft/Pipeline.h"

namespace weft {
namespace internal {

// ---------------- NVRTC ----------------
namespace {

struct Nvrtc {
    void *h = nullptr;
    std::string why;
    int (*version)(int *, int *) = nullptr;
    int (*create)(void **, const char *, const char *, int, const char *const *, const char *const *) = nullptr;
    int (*compile)(void *, int, const char *const *) = nullptr;
    int (*log_size)(void *, size_t *) = nullptr;
    int (*log)(void *, char *) = nullptr;
    int (*cubin_size)(void *, size_t *) = nullptr;
    int (*cubin)(void *, char *) = nullptr;
    int (*ptx_size)(void *, size_t *) = nullptr;
    int (*ptx)(void *, char *) = nullptr;
    int (*destroy)(void **) = nullptr;
    const char *(*error_string)(int) = nullptr;
};

void *open_first(const std::vector<std::string> &names, std::string *tried) {
    for (auto &n : names) {
        if (n.empty()) continue;
        if (void *h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
        *tried += (tried->empty() ? "" : ", ") + n;
    }
    return nullptr;
}

const Nvrtc &nvrtc() {
    static const Nvrtc n = [] {
        Nvrtc r;
        std::string tried;
        const char *env = std::getenv("WEFT_NVRTC");
        std::string cuda = std::getenv("CUDA_PATH") ? std::getenv("CUDA_PATH") : "/usr/local/cuda";
        r.h = open_first({env ? env : "", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", cuda + "/lib64/libnvrtc.so.13",
                          cuda + "/lib64/libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so"},
                         &tried);
        if (!r.h) {
            r.why = "libnvrtc could not be loaded (tried " + tried + "; set WEFT_NVRTC to its path)";
            return r;
        }
        auto sym = [&](const char *s) {
            void *p = dlsym(r.h, s);
            if (!p && r.why.empty()) r.why = std::string("libnvrtc lacks ") + s;
            return p;
        };
        r.version = (decltype(r.version))sym("nvrtcVersion");
        r.create = (decltype(r.create))sym("nvrtcCreateProgram");
        r.compile = (decltype(r.compile))sym("nvrtcCompileProgram");
        r.log_size = (decltype(r.log_size))sym("nvrtcGetProgramLogSize");
        r.log = (decltype(r.log))sym("nvrtcGetProgramLog");
        r.cubin_size = (decltype(r.cubin_size))sym("nvrtcGetCUBINSize");
        r.cubin = (decltype(r.cubin))sym("nvrtcGetCUBIN");
        r.ptx_size = (decltype(r.ptx_size))sym("nvrtcGetPTXSize");
        r.ptx = (decltype(r.ptx))sym("nvrtcGetPTX");
        r.destroy = (decltype(r.destroy))sym("nvrtcDestroyProgram");
        r.error_string = (decltype(r.error_string))sym("nvrtcGetErrorString");
        return r;
    }();
    return n;
}

std::string nvrtc_err(int code) {
    const Nvrtc &n = nvrtc();
    return n.error_string ? n.error_string(code) : ("NVRTC error " + std::to_string(code));
}

/** The source lines a compile log refers to ("name(LINE): error ..."). */
std::string quoted_lines(const std::string &log, const std::string &src) {
    std::vector<std::string> lines;
    std::stringstream ss(src);
    std::string l;
    while (std::getline(ss, l)) lines.push_back(l);
    std::string out;
    std::regex re("\\((\\d+)\\): (error|warning)");
    std::set<int> seen;
    for (auto it = std::sregex_iterator(log.begin(), log.end(), re); it != std::sregex_iterator(); ++it) {
        int n = std::stoi((*it)[1]);
        if (seen.count(n) || n < 1 || n > (int)lines.size() || seen.size() >= 8) continue;
        seen.insert(n);
        out += "\n  line " + std::to_string(n) + ": " + lines[n - 1];
    }
    return out;
}

void parse_usage(const std::string &log, NvrtcOutput &o) {
    // ptxas info    : Compiling entry function 'NAME' for 'sm_90'
    // ptxas info    : Function properties for NAME
    //     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
    // ptxas info    : Used 32 registers, used 1 barriers, 2048 bytes smem, 400 bytes cmem[0]
    std::stringstream ss(log);
    std::string line, cur;
    std::smatch m;
    std::regex entry("Compiling entry function '([^']+)'"), props("Function properties for ([A-Za-z0-9_]+)"),
        frame("(\\d+) bytes stack frame, (\\d+) bytes spill stores, (\\d+) bytes spill loads"),
        used("Used (\\d+) registers"), smem("(\\d+) bytes smem");
    while (std::getline(ss, line)) {
        if (std::regex_search(line, m, entry)) cur = m[1];
        else if (std::regex_search(line, m, props)) cur = m[1];
        if (cur.empty()) continue;
        KernelUsage &u = o.usage[cur];
        if (std::regex_search(line, m, frame)) {
            u.stack_bytes = std::stoll(m[1]);
            u.spill_stores = std::stoll(m[2]);
            u.spill_loads = std::stoll(m[3]);
        }
        if (std::regex_search(line, m, used)) u.registers = std::stoi(m[1]);
        if (std::regex_search(line, m, smem)) u.shared_bytes = std::stoll(m[1]);
    }
}

}  // namespace

bool nvrtc_available(std::string *why) {
    const Nvrtc &n = nvrtc();
    if (why) *why = n.why;
    return n.why.empty();
}

std::string nvrtc_version() {
    const Nvrtc &n = nvrtc();
    if (!n.why.empty()) throw Error("weft: CUDA: " + n.why);
    int a = 0, b = 0;
    n.version(&a, &b);
    return std::to_string(a) + "." + std::to_string(b);
}

NvrtcOutput nvrtc_compile(const std::string &source, const std::string &arch, bool ptx,
                          const std::vector<std::string> &defines) {
    const Nvrtc &n = nvrtc();
    if (!n.why.empty()) throw Error("weft: CUDA: " + n.why);
    NvrtcOutput o;
    o.arch = arch;
    o.is_ptx = ptx;
    void *prog = nullptr;
    int r = n.create(&prog, source.c_str(), "weft_kernels.cu", 0, nullptr, nullptr);
    if (r != 0) throw Error("weft: NVRTC could not create a program: " + nvrtc_err(r));
    std::string a = ptx ? "--gpu-architecture=compute_" + arch.substr(3) : "--gpu-architecture=" + arch;
    std::vector<const char *> opts = {a.c_str(), "--std=c++17", "--device-as-default-execution-space"};
    if (!ptx) opts.push_back("--ptxas-options=-v");
    std::vector<std::string> defs;
    for (auto &d : defines) defs.push_back("-D" + d);
    for (auto &d : defs) opts.push_back(d.c_str());
    r = n.compile(prog, (int)opts.size(), opts.data());
    size_t ls = 0;
    n.log_size(prog, &ls);
    o.log.assign(ls, '\0');
    if (ls) n.log(prog, &o.log[0]);
    while (!o.log.empty() && (o.log.back() == '\0' || o.log.back() == '\n')) o.log.pop_back();
    if (r != 0) {
        n.destroy(&prog);
        throw Error("weft: NVRTC failed to compile the generated CUDA source for " + arch + " (" + nvrtc_err(r) + "):\n" +
                    o.log + quoted_lines(o.log, source) + (debug_enabled() ? "\n// ---- source ----\n" + source : ""));
    }
    size_t sz = 0;
    if (ptx) {
        n.ptx_size(prog, &sz);
        o.binary.assign(sz, '\0');
        n.ptx(prog, &o.binary[0]);
    } else {
        n.cubin_size(prog, &sz);
        o.binary.assign(sz, '\0');
        n.cubin(prog, &o.binary[0]);
        parse_usage(o.log, o);
    }
    n.destroy(&prog);
    return o;
}

NvrtcOutput compile_kernels(const CudaProgram &p, const std::string &arch, const SmLimits &sm) {
    NvrtcOutput o = nvrtc_compile(p.source, arch);
    // The kernels to ask two blocks per multiprocessor of: registers are allocated per warp
    // in units of 256 (8 per thread).
    auto block_regs = [](const CudaKernel &k, const KernelUsage &u) {
        int64_t threads = (int64_t)k.block[0] * k.block[1] * k.block[2];
        return (threads + 31) / 32 * 32 * ((u.registers + 7) / 8 * 8);
    };
    std::set<std::string> two;
    for (auto &k : p.kernels) {
        auto it = o.usage.find(k.name);
        if (it == o.usage.end() || it->second.registers <= 0) continue;
        const KernelUsage &u = it->second;
        int64_t threads = (int64_t)k.block[0] * k.block[1] * k.block[2];
        int64_t per_block = block_regs(k, u);
        int64_t cap = sm.regs / (2 * ((threads + 31) / 32 * 32)) / 8 * 8;  // per thread, for two blocks
        bool one_block = per_block <= sm.regs && 2 * per_block > sm.regs;
        if (one_block && 2 * threads <= sm.threads && 2 * (u.shared_bytes + 1024) <= sm.shared && cap >= 32 &&
            u.registers <= cap + cap / 4 && u.spill_stores == 0 && u.spill_loads == 0)
            two.insert(k.name);
    }
    // Twice at most: a kernel the cap does not suit is compiled again without it.
    for (int round = 0; round < 2 && !two.empty(); round++) {
        std::vector<std::string> defines;
        for (auto &k : p.kernels)
            if (two.count(k.name))
                defines.push_back("WEFT_LAUNCH_BOUNDS_" + k.name + "=" + std::to_string(k.block[0] * k.block[1] * k.block[2]) + ",2");
        NvrtcOutput capped;
        try {
            capped = nvrtc_compile(p.source, arch, false, defines);
        } catch (const Error &) {
            return o;  // (not seen) the first compile stands
        }
        std::set<std::string> rejected;  // spilled, or still one block (ptxas caps for arch's multiprocessor)
        for (auto &k : p.kernels) {
            if (!two.count(k.name)) continue;
            const KernelUsage &u = capped.usage[k.name];
            if (u.spill_stores || u.spill_loads || u.stack_bytes > o.usage[k.name].stack_bytes ||
                2 * block_regs(k, u) > sm.regs)
                rejected.insert(k.name);
        }
        if (rejected.empty()) {
            for (auto &n : two) capped.usage[n].min_blocks = 2;
            return capped;
        }
        for (auto &n : rejected) two.erase(n);
    }
    return o;
}

void check_kernel_resources(const CudaProgram &p, const NvrtcOutput &o, int regs_per_block, int64_t max_shared) {
    for (auto &k : p.kernels) {
        auto it = o.usage.find(k.name);
        if (it == o.usage.end()) continue;
        const KernelUsage &u = it->second;
        int64_t threads = (int64_t)k.block[0] * k.block[1] * k.block[2];
        if (u.registers > 0 && threads * u.registers > regs_per_block)
            throw Error("weft: the GPU kernel for loop " + k.loop + " needs " + std::to_string(u.registers) +
                        " registers per thread x " + std::to_string(threads) + " threads = " +
                        std::to_string(threads * u.registers) + " registers per block, more than the " +
                        std::to_string(regs_per_block) + " available; use fewer threads per block or less per-thread work");
        if (u.shared_bytes > max_shared)
            throw Error("weft: the GPU kernel for loop " + k.loop + " uses " + std::to_string(u.shared_bytes) +
                        " bytes of shared memory, more than the " + std::to_string(max_shared) + " available per block");
    }
}

// ---------------- Driver API ----------------
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

// ---------------- the CPU emulation of a device ----------------
namespace emu {

constexpr int kLaunchFailed = 719, kInvalidValue = 1, kOutOfMemory = 2;
thread_local std::string last_failure;

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
        last_failure = k->name + ": " + e.what();
        return kLaunchFailed;
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
    *s = r == kLaunchFailed ? "CUDA_ERROR_LAUNCH_FAILED (emulated)" : r == kOutOfMemory ? "CUDA_ERROR_OUT_OF_MEMORY (emulated)"
                                                                                          : "CUDA_ERROR (emulated)";
    return 0;
}
CUresult_t error_string(CUresult_t r, const char **s) {
    *s = r == kLaunchFailed ? last_failure.c_str() : "emulated device error";
    return 0;
}

void install(CudaDriver &d) {
    d.cuCtxSetCurrent = set_current;
    d.cuCtxSynchronize = ok_noarg;
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

/** Compiles the emulation source with the host compiler and loads its launchers. */
Module *load(const CudaProgram &emulation) {
    char dir[] = "/tmp/weft-emu-XXXXXX";
    if (!mkdtemp(dir)) throw Error("weft: CUDA emulator: cannot create a temporary directory");
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
            throw Error("weft: CUDA emulator: cannot write " + src);
        }
        std::fwrite(emulation.source.data(), 1, emulation.source.size(), f);
        std::fclose(f);
    }
    const char *cxx = std::getenv("WEFT_EMULATOR_CXX");
    std::string cmd = std::string(cxx && *cxx ? cxx : "c++") + " -std=c++17 -O1 -fPIC -shared -fno-strict-aliasing -w " +
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
        throw Error("weft: CUDA emulator: the host compiler failed on the emulated kernels (" + cmd + "):\n" + text);
    }
    void *h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    std::string why = h ? "" : dlerror();
    cleanup();  // the loaded library stays mapped
    if (!h) throw Error("weft: CUDA emulator: cannot load the emulated kernels: " + why);
    auto *m = new Module;
    m->so = h;
    for (auto &k : emulation.kernels) {
        auto kern = std::make_unique<Kernel>();
        kern->name = k.name;
        kern->fn = (decltype(kern->fn))dlsym(h, ("weft_emu_" + k.name).c_str());
        if (!kern->fn) {
            module_unload(m);
            throw Error("weft internal error: CUDA emulator: no launcher for " + k.name);
        }
        m->kernels.push_back(std::move(kern));
    }
    return m;
}

}  // namespace emu

void load_driver() {
    CudaDriver &d = g_driver;
    if (cuda_emulated()) return emu::install(d);
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

// ---------------- compiled pipelines ----------------
CudaModule::~CudaModule() {
    if (!module || !g_driver.ok || !g_driver.cuModuleUnload) return;
    g_driver.cuCtxSynchronize();  // its kernels may still be running (launches are asynchronous)
    g_driver.cuModuleUnload(module);
}

std::shared_ptr<CudaModule> compile_cuda(const LoweredFunc &f, std::string *source, const CPUTargetInfo *cpu,
                                         std::string *llvm_ir) {
    auto m = std::make_shared<CudaModule>();
    m->program = codegen_cuda(f);
    if (source) *source = m->program.source;
    if (m->program.kernels.empty()) return m;
    if (!m->program.stages.empty()) {
        CPUTargetInfo host = cpu ? *cpu : host_cpu_info();
        for (auto &st : m->program.stages) {
            LoweredFunc sf = st.fn;
            sf.name = f.name + "_" + st.fn.name;
            std::string ir;
            m->stages.push_back(compile_llvm(sf, host, llvm_ir ? &ir : nullptr));
            if (llvm_ir) *llvm_ir += ir;
        }
    }
    CudaDriver &d = cuda_driver();
    std::string arch = "sm_" + std::to_string(d.cc_major) + std::to_string(d.cc_minor);
    if (cuda_emulated()) {
        // NVRTC (where it exists) checks that the device code compiles and fits; the emulated
        // kernels are the same kernels as host C++.
        if (nvrtc_available()) {
            m->compiled = compile_kernels(m->program, arch, d.per_sm);
            check_kernel_resources(m->program, m->compiled, d.regs_per_block, d.max_shared_per_block);
        }
        auto *mod = emu::load(codegen_cuda(f, true));
        m->module = mod;
        for (auto &k : mod->kernels) m->functions.push_back(k.get());
        return m;
    }
    try {
        m->compiled = compile_kernels(m->program, arch, d.per_sm);
    } catch (Error &e) {
        // NVRTC may not know this device's architecture: PTX for the driver to finish.
        if (std::string(e.what()).find("invalid value for --gpu-architecture") == std::string::npos) throw;
        m->compiled = nvrtc_compile(m->program.source, "sm_90", true);
    }
    check_kernel_resources(m->program, m->compiled, d.regs_per_block, d.max_shared_per_block);
    for (auto &k : m->program.kernels) {
        int64_t threads = (int64_t)k.block[0] * k.block[1] * k.block[2];
        if (threads > d.max_threads_per_block)
            throw Error("weft: the GPU kernel for loop " + k.loop + " uses " + std::to_string(threads) +
                        " threads per block; the device allows " + std::to_string(d.max_threads_per_block));
    }
    cuda_check(d.cuModuleLoadData(&m->module, m->compiled.binary.c_str()), "cuModuleLoadData");
    for (auto &k : m->program.kernels) {
        void *fn = nullptr;
        cuda_check(d.cuModuleGetFunction(&fn, m->module, k.name.c_str()), "cuModuleGetFunction(" + k.name + ")");
        m->functions.push_back(fn);
    }
    return m;
}

namespace {

int64_t span_elements(const BufferContents &b) {
    int64_t n = 1;
    for (int d = 0; d < b.dims; d++) {
        if (b.dim[d].extent <= 0) return 0;
        n += (int64_t)(b.dim[d].extent - 1) * std::abs((int64_t)b.dim[d].stride);
    }
    return n;
}

/** Runs the host part of a CUDA pipeline. */
struct HostRun {
    const CudaModule &m;
    weft_context_t *ctx;
    CudaDriver &d;
    std::map<std::string, int64_t> ivars;
    std::map<std::string, double> fvars;
    /** A buffer of the pipeline (its BufferContents keeps which copy is newest) or one of its
        internal allocations (host and device copies made when first needed). */
    struct Buf {
        BufferContents *arg = nullptr;
        const weft_buffer_t *w = nullptr;  // the pipeline's buffers
        size_t bytes = 0;
        CUdeviceptr_t dev = 0;
        std::shared_ptr<void> host;
        bool host_newer = false, dev_newer = false;
    };
    std::map<std::string, Buf> bufs;
    struct Fail {
        int32_t code;
    };

    Buf &buf(const std::string &name) {
        auto it = bufs.find(name);
        if (it == bufs.end()) throw Error("weft internal error: CUDA: no buffer " + name);
        return it->second;
    }
    /** The device copy, current. */
    CUdeviceptr_t on_device(Buf &b, const std::string &name) {
        if (b.arg) {
            ensure_device_copy(*b.arg, true);
            return b.arg->device;
        }
        if (!b.dev)
            cuda_check(d.cuMemAlloc(&b.dev, std::max<size_t>(b.bytes, 1)),
                       "cuMemAlloc(" + std::to_string(b.bytes) + " bytes for " + name + ")");
        if (b.host_newer && b.bytes) cuda_check(d.cuMemcpyHtoD(b.dev, b.host.get(), b.bytes), "cuMemcpyHtoD(" + name + ")");
        b.host_newer = false;
        return b.dev;
    }
    /** The host copy, current. */
    void *on_host(Buf &b, const std::string &name) {
        if (b.arg) {
            buffer_copy_to_host(*b.arg);
            return b.arg->host;
        }
        if (!b.host) {
            void *p = std::aligned_alloc(64, (std::max<size_t>(b.bytes, 1) + 63) / 64 * 64);
            if (!p) throw Error("weft: out of host memory (" + std::to_string(b.bytes) + " bytes for " + name + ")");
            b.host = std::shared_ptr<void>(p, std::free);
        }
        if (b.dev_newer && b.bytes)
            cuda_check(d.cuMemcpyDtoH(b.host.get(), b.dev, b.bytes),
                       "cuMemcpyDtoH(" + name + "; kernels run asynchronously, so this may be the error of a kernel that "
                       "wrote it: WEFT_CUDA_SYNC=1 reports such errors at the call that launched it)");
        b.dev_newer = false;
        return b.host.get();
    }
    /** b was written on the device (else on the host): that copy is now the newest. */
    void written(Buf &b, bool on_device) {
        bool &host_newer = b.arg ? b.arg->host_dirty : b.host_newer;
        bool &dev_newer = b.arg ? b.arg->device_dirty : b.dev_newer;
        dev_newer = on_device;
        host_newer = !on_device;
    }

    /** Runs host stage k on the CPU. */
    void run_stage(int k) {
        const CudaHostStage &st = m.program.stages[k];
        const LoweredFunc &fn = st.fn;
        std::vector<weft_buffer_t> wb;
        std::vector<uint64_t> slots;
        std::vector<void *> args(fn.args.size());
        size_t nb = 0;
        for (auto &a : fn.args) nb += a.kind == LoweredArg::Buffer;
        wb.resize(nb);
        slots.resize(fn.args.size() - nb);
        for (size_t i = 0, bi = 0, si = 0; i < fn.args.size(); i++) {
            const LoweredArg &a = fn.args[i];
            if (a.kind == LoweredArg::Buffer) {
                Buf &b = buf(a.name);
                weft_buffer_t &w = wb[bi++];
                if (b.w) w = *b.w;
                else std::memset(&w, 0, sizeof w);
                w.host = on_host(b, a.name);
                args[i] = &w;
                continue;
            }
            slots[si] = scalar_bits(a.name, a.type);
            args[i] = &slots[si++];
        }
        int32_t rc = m.stages[k] ? m.stages[k]->fn(args.data(), ctx) : interpret_lowered(fn, args.data(), ctx);
        if (rc != 0) throw Fail{rc};
        for (size_t i = 0, bi = 0; i < fn.args.size(); i++)
            if (fn.args[i].kind == LoweredArg::Buffer)
                if (st.written[bi++]) written(buf(fn.args[i].name), false);
    }
    /** A host variable's value as an argument slot holds it (a kernel's or a host stage's). */
    uint64_t scalar_bits(const std::string &name, Type t) {
        uint64_t bits = 0;
        auto f = fvars.find(name);
        auto i = ivars.find(name);
        if (i == ivars.end() && (f == fvars.end() || !t.is_float()))
            throw Error("weft internal error: CUDA: host variable " + name + " is unbound");
        if (t.is_float()) {
            double v = f != fvars.end() ? f->second : (double)i->second;
            if (t.bits() == 32) {
                float x = (float)v;
                std::memcpy(&bits, &x, 4);
            } else {
                std::memcpy(&bits, &v, 8);
            }
        } else {
            int64_t v = i->second;
            if (t.is_bool()) v = v != 0;
            std::memcpy(&bits, &v, 8);  // little-endian: the low bytes hold narrower types
        }
        return bits;
    }

    /** e with the values the interpreter of scalar Exprs cannot look up made constants: float
        host variables, and loads (a loop's extent read from a buffer, e.g. an RDom's), read
        from the buffer's host copy. */
    Expr resolved(const Expr &e) {
        class Resolve : public IRMutator {
        public:
            explicit Resolve(HostRun &r) : run(r) {}
            HostRun &run;

        protected:
            Expr visit(const Variable *op, const Expr &e) override {
                auto it = run.fvars.find(op->name);
                return it == run.fvars.end() ? e : FloatImm::make(op->type, it->second);
            }
            Expr visit(const Load *op, const Expr &e) override {
                int64_t i = evaluate_int(mutate(op->index), run.ivars);
                const char *p = (const char *)run.on_host(run.buf(op->name), op->name) + i * op->type.bytes();
                Type t = op->type;
                if (t.is_float()) {
                    if (t.bits() == 32) return FloatImm::make(t, *(const float *)p);
                    return FloatImm::make(t, *(const double *)p);
                }
                int64_t v = 0;
                switch (t.bytes()) {
                case 1: v = t.is_int() ? *(const int8_t *)p : *(const uint8_t *)p; break;
                case 2: v = t.is_int() ? *(const int16_t *)p : *(const uint16_t *)p; break;
                case 4: v = t.is_int() ? *(const int32_t *)p : *(const uint32_t *)p; break;
                default: v = *(const int64_t *)p;
                }
                return t.is_bool() ? make_const(t, (int64_t)(v != 0)) : make_const(t, v);
            }
        };
        class Needs : public IRVisitor {
        public:
            explicit Needs(const std::map<std::string, double> &f) : fvars(f) {}
            const std::map<std::string, double> &fvars;
            bool yes = false;

        protected:
            void visit(const Variable *op) override { yes |= fvars.count(op->name) > 0; }
            void visit(const Load *op) override { yes = true; }
        } needs(fvars);
        needs.include(e);
        return needs.yes ? Resolve(*this).mutate(e) : e;
    }
    int64_t ieval(const Expr &e) { return evaluate_int(resolved(e), ivars); }
    double feval(const Expr &e) { return evaluate_float(resolved(e), ivars); }

    void launch(int k) {
        const CudaKernel &K = m.program.kernels[k];
        unsigned grid[3];
        for (int i = 0; i < 3; i++) {
            int64_t g = ieval(K.grid[i]);
            if (g <= 0) return;  // nothing to do
            if (g > (i == 0 ? 2147483647LL : 65535LL))
                throw Error("weft: the GPU kernel for loop " + K.loop + " needs " + std::to_string(g) +
                            " blocks in grid dimension " + "xyz"[i] + ", more than the device allows");
            grid[i] = (unsigned)g;
        }
        std::vector<uint64_t> slots(K.params.size());
        std::vector<void *> ptrs(K.params.size());
        for (size_t i = 0; i < K.params.size(); i++) {
            const CudaKernelParam &p = K.params[i];
            slots[i] = p.is_buffer ? on_device(buf(p.name), p.name) : scalar_bits(p.name, p.type);
            ptrs[i] = &slots[i];
        }
        cuda_check(d.cuLaunchKernel(m.functions[k], grid[0], grid[1], grid[2], K.block[0], K.block[1], K.block[2], 0,
                                    nullptr, ptrs.data(), nullptr),
                   "cuLaunchKernel(" + K.name + ", loop " + K.loop + ")");
        for (auto &p : K.params)
            if (p.is_buffer && p.written) written(buf(p.name), true);
    }

    void exec(const Stmt &s) {
        if (!s.defined()) return;
        if (auto op = s.as<LetStmt>()) {
            Type t = op->value.type();
            if (t.is_float()) {
                auto saved = fvars.count(op->name) ? std::optional<double>(fvars[op->name]) : std::nullopt;
                fvars[op->name] = feval(op->value);
                exec(op->body);
                if (saved) fvars[op->name] = *saved;
                else fvars.erase(op->name);
            } else {
                auto saved = ivars.count(op->name) ? std::optional<int64_t>(ivars[op->name]) : std::nullopt;
                ivars[op->name] = ieval(op->value);
                exec(op->body);
                if (saved) ivars[op->name] = *saved;
                else ivars.erase(op->name);
            }
        } else if (auto op = s.as<AssertStmt>()) {
            if (ieval(op->condition)) return;
            std::vector<int64_t> args;
            for (auto &a : op->args) args.push_back(ieval(a));
            throw Fail{weft_rt_assert_fail(ctx, op->message.c_str(), args.data(), (int32_t)args.size())};
        } else if (auto op = s.as<Block>()) {
            exec(op->first);
            exec(op->rest);
        } else if (auto op = s.as<IfThenElse>()) {
            if (ieval(op->condition)) exec(op->then_case);
            else exec(op->else_case);
        } else if (auto op = s.as<For>()) {
            int64_t mn = ieval(op->min), ex = ieval(op->extent);
            for (int64_t i = mn; i < mn + ex; i++) {
                ivars[op->name] = i;
                exec(op->body);
            }
            ivars.erase(op->name);
        } else if (auto op = s.as<Allocate>()) {
            // Host and device copies are made where first used (on_host, on_device).
            Buf b;
            b.bytes = (size_t)std::max<int64_t>(ieval(op->extent), 1) * op->type.bytes();
            auto saved = bufs.count(op->name) ? std::optional<Buf>(bufs[op->name]) : std::nullopt;
            auto release = [&] {
                Buf &mine = bufs[op->name];
                if (mine.dev) {
                    d.cuCtxSynchronize();
                    d.cuMemFree(mine.dev);
                }
                if (saved) bufs[op->name] = *saved;
                else bufs.erase(op->name);
            };
            bufs[op->name] = b;
            try {
                exec(op->body);
            } catch (...) {
                release();
                throw;
            }
            release();
        } else if (auto op = s.as<Evaluate>()) {
            if (auto c = op->value.as<Call>()) {
                if (c->is_intrinsic("gpu_launch")) launch((int)*as_const_int(c->args[0]));
                else if (c->is_intrinsic("host_stage")) run_stage((int)*as_const_int(c->args[0]));
            }
        } else if (s.as<Store>()) {
            throw Error("weft internal error: CUDA: a store in host code");
        }
    }
};

}  // namespace

void ensure_device_copy(BufferContents &b, bool copy) {
    CudaDriver &d = cuda_driver();
    size_t bytes = (size_t)span_elements(b) * b.type.bytes();
    if (!b.device) {
        CUdeviceptr_t p = 0;
        cuda_check(d.cuMemAlloc(&p, std::max<size_t>(bytes, 1)), "cuMemAlloc(" + std::to_string(bytes) + " bytes for buffer \"" + b.name + "\")");
        b.device = p;
        b.device_storage = std::shared_ptr<void>((void *)(uintptr_t)p, [](void *q) {
            if (!g_driver.ok) return;
            g_driver.cuCtxSynchronize();  // a kernel still running may use it (launches are asynchronous)
            g_driver.cuMemFree((CUdeviceptr_t)(uintptr_t)q);
        });
        b.host_dirty = true;  // the new device copy holds nothing yet
    }
    if (copy && b.host_dirty && b.host && bytes) {
        cuda_check(d.cuMemcpyHtoD(b.device, b.host, bytes), "cuMemcpyHtoD(buffer \"" + b.name + "\")");
    }
    if (copy) b.host_dirty = false;
}

int32_t cuda_call(const CudaModule &m, const LoweredFunc &f, void **args, weft_context_t *ctx,
                  const BufferContents *const *bufs) {
    CudaDriver &d = cuda_driver();
    HostRun run{m, ctx, d, {}, {}, {}};
    size_t bi = 0;
    for (size_t i = 0; i < f.args.size(); i++) {
        const LoweredArg &a = f.args[i];
        if (a.kind == LoweredArg::Buffer) {
            auto *w = (weft_buffer_t *)args[i];
            HostRun::Buf &b = run.bufs[a.name];
            b.arg = const_cast<BufferContents *>(bufs[bi++]);
            b.w = w;
            for (int dd = 0; dd < w->dims; dd++) {
                run.ivars[buffer_field(a.name, "min", dd)] = w->dim[dd].min;
                run.ivars[buffer_field(a.name, "extent", dd)] = w->dim[dd].extent;
                run.ivars[buffer_field(a.name, "stride", dd)] = w->dim[dd].stride;
            }
        } else if (a.type.is_float()) {
            run.fvars[a.name] = a.type.bits() == 32 ? (double)*(float *)args[i] : *(double *)args[i];
        } else {
            int64_t v = 0;
            switch (a.type.bytes()) {
            case 1: v = a.type.is_int() ? *(int8_t *)args[i] : *(uint8_t *)args[i]; break;
            case 2: v = a.type.is_int() ? *(int16_t *)args[i] : *(uint16_t *)args[i]; break;
            case 4: v = a.type.is_int() ? *(int32_t *)args[i] : *(uint32_t *)args[i]; break;
            default: v = *(int64_t *)args[i];
            }
            run.ivars[a.name] = v;
        }
    }
    try {
        run.exec(m.program.host);
    } catch (HostRun::Fail &fail) {
        return fail.code;
    }
    // Kernels run asynchronously: the host goes on (its next call's host code overlaps them);
    // reading an output back (copy_to_host) waits for them, and an error of theirs shows
    // there. WEFT_DEBUG or WEFT_CUDA_SYNC=1 waits here, so that it shows at the call.
    static const bool sync_each = [] {
        const char *e = std::getenv("WEFT_CUDA_SYNC");
        return e && *e && std::strcmp(e, "0") != 0;
    }();
    if (sync_each || debug_enabled()) cuda_check(d.cuCtxSynchronize(), "kernel execution (cuCtxSynchronize)");
    return 0;
}

}  // namespace internal
}  // namespace weft
