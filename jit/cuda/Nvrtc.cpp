#include "cuda/Nvrtc.h"
#include <dlfcn.h>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include "cuda/CudaDriver.h"
#include "weft/Pipeline.h"

namespace weft {
namespace internal {

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

NvrtcOutput nvrtc_compile_once(const std::string &source, const std::string &arch, bool ptx,
                               const std::vector<std::string> &defines);

/** Each kernel's registers, shared and local (stack) bytes as the driver reads them from the
    cubin, where a real device is there (not the emulation); nothing otherwise. */
void usage_from_driver(NvrtcOutput &o, const std::string &source) {
    if (cuda_emulated() || !cuda_available()) return;
    CudaDriver &d = cuda_driver();
    void *mod = nullptr;
    if (d.cuModuleLoadData(&mod, o.binary.data()) != 0) return;
    std::regex kernel("__global__ void (?:__launch_bounds__\\([^)]*\\) )?([A-Za-z_][A-Za-z0-9_]*)\\(");
    for (auto it = std::sregex_iterator(source.begin(), source.end(), kernel); it != std::sregex_iterator(); ++it) {
        std::string name = (*it)[1];
        void *fn = nullptr;
        int regs = -1, shared = 0, local = 0;
        if (d.cuModuleGetFunction(&fn, mod, name.c_str()) != 0) continue;
        // CU_FUNC_ATTRIBUTE_NUM_REGS, _SHARED_SIZE_BYTES, _LOCAL_SIZE_BYTES
        if (d.cuFuncGetAttribute(&regs, 4, fn) || d.cuFuncGetAttribute(&shared, 1, fn) || d.cuFuncGetAttribute(&local, 3, fn))
            continue;
        KernelUsage &u = o.usage[name];
        u.registers = regs;
        u.shared_bytes = shared;
        u.stack_bytes = local;
    }
    d.cuModuleUnload(mod);
    if (!o.usage.empty()) o.log += "\n(ptxas gave no report: registers, shared and local memory read from the driver)";
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
    NvrtcOutput o = nvrtc_compile_once(source, arch, ptx, defines);
    // On an H200 machine's NVRTC 13.0, a cubin sometimes came back without the ptxas report in
    // its log, after other programs had been compiled in the same process (never seen on a
    // machine without a device; compiling again did not bring it back). The usage drives the
    // register cap and the resource checks: where a real device is there, its driver reads
    // registers, shared and local memory from the cubin (spills are not told apart from the
    // stack there).
    if (!ptx && o.usage.empty() && source.find("__global__") != std::string::npos) usage_from_driver(o, source);
    return o;
}

namespace {
NvrtcOutput nvrtc_compile_once(const std::string &source, const std::string &arch, bool ptx,
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
    // --fmad=false: no contraction; the multiply-adds written in one definition are fmaf() calls.
    std::vector<const char *> opts = {a.c_str(), "--std=c++17", "--device-as-default-execution-space", "--fmad=false"};
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

}  // namespace

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

}  // namespace internal
}  // namespace weft
