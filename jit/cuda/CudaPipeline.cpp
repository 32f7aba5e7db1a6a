#include "cuda/CudaPipeline.h"
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <sstream>
#include "cuda/CodeGen_CUDA.h"
#include "interp/Interpreter.h"
#include "weft/Pipeline.h"

namespace weft {
namespace internal {

CudaModule::~CudaModule() {
    CudaDriver *d = loaded_cuda_driver();
    if (!module || !d || !d->cuModuleUnload) return;
    d->cuCtxSynchronize();  // its kernels may still be running (launches are asynchronous)
    d->cuModuleUnload(module);
}

namespace {
/** NVRTC's output as disk cache sections, and back. */
void put_nvrtc(CodeSections &code, const NvrtcOutput &o) {
    code["gpu.bin"] = o.binary;
    std::string meta = std::string(o.is_ptx ? "ptx" : "cubin") + " " + o.arch + "\n";
    for (auto &[k, u] : o.usage)
        meta += k + " " + std::to_string(u.registers) + " " + std::to_string(u.shared_bytes) + " " +
                std::to_string(u.stack_bytes) + " " + std::to_string(u.spill_stores) + " " +
                std::to_string(u.spill_loads) + " " + std::to_string(u.min_blocks) + "\n";
    code["gpu.meta"] = meta;
}
bool get_nvrtc(const CodeSections &code, NvrtcOutput &o) {
    auto b = code.find("gpu.bin"), m = code.find("gpu.meta");
    if (b == code.end() || m == code.end()) return false;
    std::istringstream in(m->second);
    std::string kind;
    if (!(in >> kind >> o.arch) || (kind != "ptx" && kind != "cubin"))
        throw Error("weft: the cached GPU code's description is unreadable");
    o.is_ptx = kind == "ptx";
    o.binary = b->second;
    std::string name;
    KernelUsage u;
    while (in >> name >> u.registers >> u.shared_bytes >> u.stack_bytes >> u.spill_stores >> u.spill_loads >> u.min_blocks)
        o.usage[name] = u;
    return true;
}
}  // namespace

std::shared_ptr<CudaModule> compile_cuda(const LoweredFunc &f, std::string *source, const CPUTargetInfo *cpu,
                                         std::string *llvm_ir, CodeSections *code) {
    auto m = std::make_shared<CudaModule>();
    m->program = split_host_device(f);
    m->program.source = cuda_source(m->program);
    if (source) *source = m->program.source;
    if (m->program.kernels.empty()) return m;
    CPUTargetInfo host = cpu ? *cpu : host_cpu_info();
    m->host = make_host_code(f, m->program);
    std::string ir;
    m->host_fn = compile_llvm(m->host.fn, host, llvm_ir ? &ir : nullptr, code, "host");
    if (llvm_ir) *llvm_ir += ir;
    for (auto &st : m->program.stages) {
        LoweredFunc sf = st.fn;
        sf.name = f.name + "_" + st.fn.name;
        m->stages.push_back(
            compile_llvm(sf, host, llvm_ir ? &ir : nullptr, code, "stage" + std::to_string(m->stages.size())));
        if (llvm_ir) *llvm_ir += ir;
    }
    CudaDriver &d = cuda_driver();
    std::string arch = "sm_" + std::to_string(d.cc_major) + std::to_string(d.cc_minor);
    std::string emulated_image;
    const void *image = nullptr;
    if (cuda_emulated()) {
        // NVRTC (where it exists) checks that the device code compiles and fits; the emulated
        // driver's image is the same kernels as host C++.
        bool checked = code && get_nvrtc(*code, m->compiled);
        if (!checked && nvrtc_available()) {
            m->compiled = compile_kernels(m->program, arch, d.per_sm);
            if (code) put_nvrtc(*code, m->compiled);
            checked = true;
        }
        if (checked) check_kernel_resources(m->program, m->compiled, d.regs_per_block, d.max_shared_per_block);
        CudaProgram emulation = m->program;
        emulated_image = cuda_source(emulation, true);
        image = emulated_image.c_str();
    } else {
        if (!code || !get_nvrtc(*code, m->compiled)) {
            try {
                m->compiled = compile_kernels(m->program, arch, d.per_sm);
            } catch (Error &e) {
                // NVRTC may not know this device's architecture: PTX for the driver to finish.
                if (std::string(e.what()).find("invalid value for --gpu-architecture") == std::string::npos) throw;
                m->compiled = nvrtc_compile(m->program.source, "sm_90", true);
            }
            if (code) put_nvrtc(*code, m->compiled);
        }
        check_kernel_resources(m->program, m->compiled, d.regs_per_block, d.max_shared_per_block);
        for (auto &k : m->program.kernels) {
            int64_t threads = (int64_t)k.block[0] * k.block[1] * k.block[2];
            if (threads > d.max_threads_per_block)
                throw Error("weft: the GPU kernel for loop " + k.loop + " uses " + std::to_string(threads) +
                            " threads per block; the device allows " + std::to_string(d.max_threads_per_block));
        }
        image = m->compiled.binary.c_str();
    }
    cuda_check(d.cuModuleLoadData(&m->module, image), "cuModuleLoadData");
    for (auto &k : m->program.kernels) {
        void *fn = nullptr;
        cuda_check(d.cuModuleGetFunction(&fn, m->module, k.name.c_str()), "cuModuleGetFunction(" + k.name + ")");
        m->functions.push_back(fn);
    }
    return m;
}

namespace {

/** One call's device runtime: what the compiled host code's device_calls reach. */
struct HostRun : weft_device_t {
    HostRun(const CudaModule &mod, weft_context_t *c, CudaDriver &dr) : m(mod), ctx(c), d(dr) { call = &dispatch; }
    const CudaModule &m;
    weft_context_t *ctx;
    CudaDriver &d;
    /** A buffer of the pipeline (its BufferContents keeps which copy is newest) or one of its
        internal allocations (host and device copies made where first needed, from the pools). */
    struct Buf {
        BufferContents *arg = nullptr;
        const weft_buffer_t *w = nullptr;  // the pipeline's buffers
        bool live = false;                 // an internal buffer between its Alloc and Free
        size_t bytes = 0;
        CUdeviceptr_t dev = 0;
        void *host = nullptr;
        bool host_newer = false, dev_newer = false;
    };
    std::vector<Buf> bufs;
    std::exception_ptr error;  // what a device_call threw (the host code returns, then it is rethrown)

    static int64_t dispatch(weft_context_t *ctx, weft_device_t *self, int32_t op, int32_t index, const int64_t *args,
                            int32_t nargs) {
        auto *r = static_cast<HostRun *>(self);
        try {
            return r->handle((CudaHostOp)op, index, args, nargs);
        } catch (std::exception &e) {
            r->error = std::current_exception();
            if (ctx->error_code == 0) {
                std::snprintf(ctx->error, sizeof ctx->error, "%s", e.what());
                ctx->error_code = -1;
            }
            return 0;
        }
    }

    Buf &buf(int i, const char *what) {
        if (i < 0 || i >= (int)bufs.size() || !(bufs[i].arg || bufs[i].live))
            throw Error(std::string("weft internal error: CUDA host code: ") + what + " of a buffer not allocated");
        return bufs[i];
    }
    const std::string &name(int i) const { return m.host.buffers[i].name; }

    /** The device copy, current. */
    CUdeviceptr_t on_device(int i) {
        Buf &b = buf(i, "a device use");
        if (b.arg) {
            ensure_device_copy(*b.arg, true);
            return b.arg->device;
        }
        if (!b.dev) b.dev = device_pool_alloc(b.bytes, "buffer " + name(i));
        if (b.host_newer) cuda_check(d.cuMemcpyHtoD(b.dev, b.host, b.bytes), "cuMemcpyHtoD(" + name(i) + ")");
        b.host_newer = false;
        return b.dev;
    }
    /** The host copy, current. */
    void *on_host(int i) {
        Buf &b = buf(i, "a host use");
        if (b.arg) {
            buffer_copy_to_host(*b.arg);
            return b.arg->host;
        }
        if (!b.host) {
            b.host = weft_rt_malloc(ctx, (int64_t)b.bytes);
            if (!b.host) throw Error("weft: out of host memory (" + std::to_string(b.bytes) + " bytes for " + name(i) + ")");
        }
        if (b.dev_newer)
            cuda_check(d.cuMemcpyDtoH(b.host, b.dev, b.bytes),
                       "cuMemcpyDtoH(" + name(i) + "; kernels run asynchronously, so this may be the error of a kernel that "
                       "wrote it: WEFT_CUDA_SYNC=1 reports such errors at the call that launched it)");
        b.dev_newer = false;
        return b.host;
    }
    /** Buffer i was written on the device (else on the host): that copy is now the newest. */
    void written(int i, bool on_device) {
        Buf &b = bufs[i];
        bool &host_newer = b.arg ? b.arg->host_dirty : b.host_newer;
        bool &dev_newer = b.arg ? b.arg->device_dirty : b.dev_newer;
        dev_newer = on_device;
        host_newer = !on_device;
    }
    void release(Buf &b) {
        if (b.dev) device_pool_free(b.dev, b.bytes);
        if (b.host) weft_rt_free(ctx, b.host);
        b = Buf();
    }

    int64_t handle(CudaHostOp op, int index, const int64_t *args, int nargs) {
        switch (op) {
        case CudaHostOp::Launch: launch(index, args, nargs); return 0;
        case CudaHostOp::HostStage: run_stage(index, args, nargs); return 0;
        case CudaHostOp::Alloc: {
            Buf &b = bufs.at(index);
            if (b.live) release(b);
            int64_t n = nargs > 0 ? args[0] : 0;
            int64_t eb = m.host.buffers[index].type.bytes();
            if (n < 0 || n > (INT64_MAX - 63) / eb)
                throw Error("weft: buffer " + name(index) + " needs " + std::to_string(n) + " elements: too many");
            b.live = true;
            b.bytes = (size_t)std::max<int64_t>(n, 1) * eb;
            return 0;
        }
        case CudaHostOp::Free: release(bufs.at(index)); return 0;
        case CudaHostOp::Load: return load(index, nargs > 0 ? args[0] : 0);
        }
        throw Error("weft internal error: CUDA host code: unknown device call " + std::to_string((int)op));
    }

    int64_t load(int i, int64_t idx) {
        const char *p = (const char *)on_host(i);
        Buf &b = bufs[i];
        Type t = m.host.buffers[i].type;
        int64_t n = b.arg ? span_elements(*b.arg) : (int64_t)(b.bytes / t.bytes());
        if (idx < 0 || idx >= n)
            throw Error("weft: the host code read element " + std::to_string(idx) + " of " + name(i) + ", which has " +
                        std::to_string(n));
        p += idx * t.bytes();
        switch (t.bytes()) {
        case 1: return t.is_int() ? (int64_t) * (const int8_t *)p : (int64_t) * (const uint8_t *)p;
        case 2: return t.is_int() ? (int64_t) * (const int16_t *)p : (int64_t) * (const uint16_t *)p;
        case 4: return t.is_int() ? (int64_t) * (const int32_t *)p : (int64_t) * (const uint32_t *)p;
        default: {
            int64_t v;
            std::memcpy(&v, p, 8);
            return v;
        }
        }
    }

    void launch(int k, const int64_t *args, int nargs) {
        const CudaKernel &K = m.program.kernels.at(k);
        const std::vector<int> &kb = m.host.kernel_buffers.at(k);
        unsigned grid[3];
        for (int i = 0; i < 3; i++) {
            int64_t g = args[i];
            if (g <= 0) return;  // nothing to do
            if (g > (i == 0 ? 2147483647LL : 65535LL))
                throw Error("weft: the GPU kernel for loop " + K.loop + " needs " + std::to_string(g) +
                            " blocks in grid dimension " + "xyz"[i] + ", more than the device allows");
            grid[i] = (unsigned)g;
        }
        size_t np = K.params.size();
        uint64_t slots[64];
        void *ptrs[64];
        std::vector<uint64_t> more_slots;
        std::vector<void *> more_ptrs;
        uint64_t *sl = slots;
        void **pt = ptrs;
        if (np > 64) {
            more_slots.resize(np);
            more_ptrs.resize(np);
            sl = more_slots.data();
            pt = more_ptrs.data();
        }
        int a = 3;
        for (size_t i = 0; i < np; i++) {
            if (kb[i] >= 0) {
                sl[i] = on_device(kb[i]);
            } else {
                if (a >= nargs) throw Error("weft internal error: CUDA host code: too few kernel arguments");
                sl[i] = (uint64_t)args[a++];
            }
            pt[i] = &sl[i];
        }
        cuda_check(d.cuLaunchKernel(m.functions[k], grid[0], grid[1], grid[2], K.block[0], K.block[1], K.block[2], 0,
                                    nullptr, pt, nullptr),
                   "cuLaunchKernel(" + K.name + ", loop " + K.loop + ")");
        for (size_t i = 0; i < np; i++)
            if (kb[i] >= 0 && K.params[i].written) written(kb[i], true);
    }

    void run_stage(int k, const int64_t *args, int nargs) {
        const CudaHostStage &st = m.program.stages.at(k);
        const LoweredFunc &fn = st.fn;
        const std::vector<int> &sb = m.host.stage_buffers.at(k);
        size_t n = fn.args.size();
        std::vector<weft_buffer_t> wb(n);
        std::vector<uint64_t> slots(n);
        std::vector<void *> ptrs(n);
        int a = 0;
        for (size_t i = 0; i < n; i++) {
            if (sb[i] >= 0) {
                Buf &b = buf(sb[i], "a host stage's use");
                if (b.w) wb[i] = *b.w;
                else std::memset(&wb[i], 0, sizeof wb[i]);
                wb[i].host = on_host(sb[i]);
                ptrs[i] = &wb[i];
            } else {
                if (a >= nargs) throw Error("weft internal error: CUDA host code: too few host stage arguments");
                slots[i] = (uint64_t)args[a++];
                ptrs[i] = &slots[i];
            }
        }
        int32_t rc = m.stages[k] ? m.stages[k]->fn(ptrs.data(), ctx) : interpret_lowered(fn, ptrs.data(), ctx);
        if (rc != 0) {
            if (ctx->error_code == 0) ctx->error_code = rc;
            return;
        }
        for (size_t i = 0, bi = 0; i < n; i++)
            if (sb[i] >= 0)
                if (st.written[bi++]) written(sb[i], false);
    }
};

}  // namespace

int32_t cuda_call(const CudaModule &m, const LoweredFunc &f, void **args, weft_context_t *ctx,
                  const BufferContents *const *bufs) {
    CudaDriver &d = cuda_driver();
    HostRun run(m, ctx, d);
    run.bufs.resize(m.host.buffers.size());
    size_t nargs = f.args.size();
    void *stack_args[32];
    std::vector<void *> more;
    void **hargs = stack_args;
    if (nargs + 1 > 32) {
        more.resize(nargs + 1);
        hargs = more.data();
    }
    for (size_t i = 0, bi = 0; i < nargs; i++) {
        hargs[i] = args[i];
        if (f.args[i].kind == LoweredArg::Buffer) {
            HostRun::Buf &b = run.bufs[bi];
            b.arg = const_cast<BufferContents *>(bufs[bi]);
            b.w = (const weft_buffer_t *)args[i];
            bi++;
        }
    }
    weft_device_t *device = &run;
    hargs[nargs] = &device;
    int32_t rc = m.host_fn ? m.host_fn->fn(hargs, ctx) : interpret_lowered(m.host.fn, hargs, ctx);
    for (auto &b : run.bufs)
        if (b.live) run.release(b);
    if (run.error) std::rethrow_exception(run.error);
    if (rc != 0) return rc;
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
