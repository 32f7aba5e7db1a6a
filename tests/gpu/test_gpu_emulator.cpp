// The CPU emulation of a CUDA device (WEFT_CUDA_EMULATOR=1; CTest runs the GPURun suites and
// these under it with the label gpu-emulated). Suites start with "GPUEmulator"; every test
// skips unless the emulator is on.
#include <gtest/gtest.h>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include "cache/DiskCache.h"
#include "cuda/CudaPipeline.h"
#include "cuda/Nvrtc.h"
#include "gpu/gpu_testing.h"
#include "ir/IRVisitor.h"

using namespace weft;
using namespace weft::internal;
using namespace weft_gpu_test;

#define REQUIRE_EMULATOR() \
    if (!cuda_emulated()) GTEST_SKIP() << "runs under WEFT_CUDA_EMULATOR=1 only (CTest label gpu-emulated)"

namespace {

void fill_dims(weft_buffer_t &w, const BufferContents &b) {
    std::memset(&w, 0, sizeof w);
    w.host = b.host;
    w.dims = b.dims;
    for (int d = 0; d < b.dims; d++) w.dim[d] = {b.dim[d].min, b.dim[d].extent, b.dim[d].stride, 0};
}

/** Lowers c for CUDA (shapes as constants), optionally drops every barrier (or every store to
    shared memory), and runs it on the emulated device; returns the largest relative difference
    from the interpreter. */
double run_lowered(GpuCase &c, bool drop_barriers, std::string *error = nullptr, bool drop_shared_stores = false) {
    Env env = build_env({c.out.contents()}, false);
    Buffer<float> out(c.sizes, "out");
    std::map<std::string, Expr> consts;
    std::map<std::string, std::shared_ptr<BufferContents>> by_name;
    auto add = [&](const std::string &name, const std::shared_ptr<BufferContents> &b) {
        by_name[name] = b;
        add_buffer_consts(consts, name, *b);
    };
    for (auto &in : env.inputs)
        if (in.buffer) add(in.name, in.buffer);
    add(env.outputs[0], out.contents());
    LoweredFunc lf = lower(env, consts, "weft_emu_" + c.name, cuda_lowering());
    if (drop_barriers) {
        class Drop : public IRMutator {
        protected:
            Stmt visit(const Evaluate *op, const Stmt &s) override {
                if (auto call = op->value.as<Call>())
                    if (call->is_intrinsic("gpu_thread_barrier")) return Evaluate::make(Expr(0));
                return s;
            }
        } drop;
        lf.body = drop.mutate(lf.body);
    }
    if (drop_shared_stores) {
        class Drop : public IRMutator {
        public:
            std::set<std::string> shared;

        protected:
            Stmt visit(const Allocate *op, const Stmt &s) override {
                if (op->memory_type == MemoryType::GPUShared) shared.insert(op->name);
                return IRMutator::visit(op, s);
            }
            Stmt visit(const Store *op, const Stmt &s) override {
                return shared.count(op->name) ? Evaluate::make(Expr(0)) : s;
            }
        } drop;
        lf.body = drop.mutate(lf.body);
        EXPECT_FALSE(drop.shared.empty());
    }
    std::shared_ptr<CudaModule> m;
    try {
        m = compile_cuda(lf);
    } catch (Error &e) {
        if (error) *error = e.what();
        return 1e30;
    }
    std::vector<weft_buffer_t> wb(lf.args.size());
    std::vector<void *> args;
    std::vector<const BufferContents *> bufs;
    for (size_t i = 0; i < lf.args.size(); i++) {
        auto b = by_name.at(lf.args[i].name);
        fill_dims(wb[i], *b);
        args.push_back(&wb[i]);
        bufs.push_back(b.get());
    }
    weft_context_t ctx;
    std::memset(&ctx, 0, sizeof ctx);
    try {
        if (cuda_call(*m, lf, args.data(), &ctx, bufs.data()) != 0) {
            if (error) *error = ctx.error;
            return 1e30;
        }
    } catch (Error &e) {
        if (error) *error = e.what();
        return 1e30;
    }
    out.copy_to_host();
    Buffer<float> ref(c.sizes);
    interpret_pipeline(Pipeline(c.out), {ref});
    return max_rel_diff(out, ref);
}

}  // namespace

TEST(GPUEmulator, DeviceIsTheEmulator) {
    REQUIRE_EMULATOR();
    EXPECT_TRUE(cuda_available());
    CudaDriver &d = cuda_driver();
    EXPECT_NE(d.name.find("emulation"), std::string::npos);
    EXPECT_NE(cuda_device_key().find("emulated"), std::string::npos);
}

// Kernels lowered and launched directly (no Pipeline): one case of each kind (a barrier after a
// shared stage, per-thread registers across staged tiles' barriers, a reduction across threads,
// vector loads and stores). Every case runs through Pipeline on the emulator in GPURun.
TEST(GPUEmulator, KernelsMatchTheInterpreter) {
    REQUIRE_EMULATOR();
    std::vector<GpuCase> cases = {pointwise(), blur_shared(), blur_vectorized(), matmul_shared_staged(), row_sum_rfactor(),
                                  elementwise_chain()};
    for (auto &c : cases) {
        std::string err;
        EXPECT_LE(run_lowered(c, false, &err), 1e-5) << c.name << " " << err;
    }
}

// The emulator runs each thread until it reaches a barrier, thread 0 first: without the barrier
// between the shared-memory stage and its readers, threads read rows others have not written.
TEST(GPUEmulator, MissingBarrierChangesTheResult) {
    REQUIRE_EMULATOR();
    GpuCase with = blur_shared(64, 32), without = blur_shared(64, 32);
    EXPECT_LE(run_lowered(with, false), 1e-6);
    EXPECT_GT(run_lowered(without, true), 1e-3);
}

// Shared memory starts each block as all-ones bytes (NaN): a kernel that reads a staged tile
// nothing wrote gives NaN, not a tile left over from another block or zeros.
TEST(GPUEmulator, UnwrittenSharedMemoryReadsAsNaN) {
    REQUIRE_EMULATOR();
    GpuCase c = blur_shared(64, 32);
    EXPECT_EQ(run_lowered(c, false, nullptr, true), 1e30);  // max_rel_diff's value for a NaN
}

// A failed assertion inside a kernel becomes a weft::Error (the launch fails), not an abort.
TEST(GPUEmulator, TrapIsAnError) {
    REQUIRE_EMULATOR();
    GpuCase c = pointwise(64, 16);
    Env env = build_env({c.out.contents()}, false);
    std::map<std::string, Expr> consts;
    LoweredFunc lf = lower(env, consts, "weft_emu_trap", cuda_lowering());
    class AddTrap : public IRMutator {
    protected:
        Stmt visit(const Store *op, const Stmt &s) override {
            return Block::make(AssertStmt::make(Expr(false), "emulated trap", {}), s);
        }
    } add;
    lf.body = add.mutate(lf.body);
    std::string e;
    try {
        auto m = compile_cuda(lf);
        Buffer<float> out(64, 16);
        std::vector<weft_buffer_t> wb(lf.args.size());
        std::vector<void *> args;
        std::vector<const BufferContents *> bufs;
        for (size_t i = 0; i < lf.args.size(); i++) {
            const BufferContents *b = lf.args[i].name == env.outputs[0] ? out.contents().get() : c.inputs[0].contents().get();
            fill_dims(wb[i], *b);
            args.push_back(&wb[i]);
            bufs.push_back(b);
        }
        weft_context_t ctx;
        std::memset(&ctx, 0, sizeof ctx);
        cuda_call(*m, lf, args.data(), &ctx, bufs.data());
    } catch (Error &err) {
        e = err.what();
    }
    EXPECT_NE(e.find("__trap"), std::string::npos) << e;
}

// A host compiler that cannot be run gives a weft::Error naming the command, not a crash; the
// next compile with a working one succeeds.
TEST(GPUEmulator, MissingHostCompilerIsAnError) {
    REQUIRE_EMULATOR();
    GpuCase c = pointwise(64, 16);
    setenv("WEFT_EMULATOR_CXX", "/nonexistent/c++", 1);
    std::string err;
    double r = run_lowered(c, false, &err);
    unsetenv("WEFT_EMULATOR_CXX");
    EXPECT_GT(r, 1.0);
    EXPECT_NE(err.find("host compiler failed"), std::string::npos) << err;
    EXPECT_NE(err.find("/nonexistent/c++"), std::string::npos) << err;
    GpuCase again = pointwise(64, 16);
    EXPECT_LE(run_lowered(again, false), 1e-6);
}

TEST(GPUEmulator, LoweredIrShowsTheTargetsLowering) {
    // Pipeline::lowered_ir(sizes, target) lowered for the host whatever the target was.
    REQUIRE_EMULATOR();
    Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
    Func f("lowered_for_cuda");
    f(x, y) = x + y * 3;
    f.gpu_tile(x, y, xo, yo, xi, yi, 8, 8);
    Pipeline p(f);
    std::string host = p.lowered_ir({64, 32}, Target::host());
    std::string cuda = p.lowered_ir({64, 32}, Target::cuda());
    EXPECT_EQ(host.find("after inject_gpu"), std::string::npos) << host;
    EXPECT_NE(cuda.find("after inject_gpu"), std::string::npos) << cuda;
}

// The emulator stands behind the driver interface: a module's image is the kernels' host C++,
// loaded by cuModuleLoadData, its launchers found by cuModuleGetFunction; what it cannot
// compile or find is an error code with a message, as the driver's.
TEST(GPUEmulator, ModulesLoadThroughTheDriverInterface) {
    REQUIRE_EMULATOR();
    CudaDriver &d = cuda_driver();
    void *mod = nullptr;
    CUresult_t r = d.cuModuleLoadData(&mod, "this is not C++");
    ASSERT_NE(r, 0);
    const char *why = nullptr;
    d.cuGetErrorString(r, &why);
    EXPECT_NE(std::string(why ? why : "").find("host compiler failed"), std::string::npos);
    EXPECT_EQ(mod, nullptr);

    GpuCase c = pointwise(64, 16);
    Env env = build_env({c.out.contents()}, false);
    std::map<std::string, Expr> consts;
    LoweredFunc lf = lower(env, consts, "weft_emu_iface", cuda_lowering());
    CudaProgram p = codegen_cuda(lf, true);
    ASSERT_EQ(p.kernels.size(), 1u);
    ASSERT_EQ(d.cuModuleLoadData(&mod, p.source.c_str()), 0);
    void *fn = nullptr;
    EXPECT_EQ(d.cuModuleGetFunction(&fn, mod, p.kernels[0].name.c_str()), 0);
    EXPECT_NE(fn, nullptr);
    EXPECT_NE(d.cuModuleGetFunction(&fn, mod, "no_such_kernel"), 0);
    EXPECT_EQ(d.cuModuleUnload(mod), 0);
}

namespace {
std::atomic<int> g_syncs{0}, g_allocs{0};
CUresult_t (*g_real_sync)() = nullptr;
CUresult_t (*g_real_alloc)(CUdeviceptr_t *, size_t) = nullptr;
CUresult_t counting_sync() {
    g_syncs++;
    return g_real_sync();
}
CUresult_t counting_alloc(CUdeviceptr_t *p, size_t n) {
    g_allocs++;
    return g_real_alloc(p, n);
}
}  // namespace

// The host code of a CUDA pipeline is compiled (LLVM, where the build has it), and calls the
// runtime for each launch and internal buffer; the internal buffers' device memory comes from a
// pool: a second call allocates nothing and waits for nothing (launches are stream-ordered).
TEST(GPUEmulator, HostCodeCompiledAndDeviceMemoryPooled) {
    REQUIRE_EMULATOR();
    {
        GpuCase c = pointwise(64, 16);
        Env env = build_env({c.out.contents()}, false);
        std::map<std::string, Expr> consts;
        LoweredFunc lf = lower(env, consts, "weft_emu_hostcode", cuda_lowering());
        std::string ir;
        auto m = compile_cuda(lf, nullptr, nullptr, &ir);
        ASSERT_EQ(m->program.kernels.size(), 1u);
        EXPECT_EQ(m->host.fn.args.back().name, kDeviceArg);
        if (llvm_backend_available()) {
            EXPECT_NE(m->host_fn, nullptr);
            EXPECT_NE(ir.find("weft_emu_hostcode_host"), std::string::npos) << ir;
            EXPECT_NE(ir.find("weft_rt_device_call"), std::string::npos) << ir;
        }
    }
    const int w = 64, h = 48;
    Buffer<float> in = ramp_buffer(w, h, 1.0f, "pool_in");
    Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
    Func a("pool_a"), out("pool_out");
    a(x, y) = in(x, y) * 2.0f;
    out(x, y) = a(x, y) + a(x, min(y + 1, h - 1));
    a.compute_root().gpu_tile(x, y, xo, yo, xi, yi, 16, 8);
    out.gpu_tile(x, y, xo, yo, xi, yi, 16, 8);
    Pipeline p(out);
    Target t = Target::cuda();
    Buffer<float> o(w, h);
    p.realize(o, t);
    size_t pooled = device_pool_free_bytes();
    EXPECT_GE(pooled, (size_t)w * h * sizeof(float));  // pool_a's, given back
    CudaDriver &d = cuda_driver();
    g_real_sync = d.cuCtxSynchronize;
    g_real_alloc = d.cuMemAlloc;
    d.cuCtxSynchronize = counting_sync;
    d.cuMemAlloc = counting_alloc;
    g_syncs = 0;
    g_allocs = 0;
    p.realize(o, t);
    int syncs = g_syncs, allocs = g_allocs;
    d.cuCtxSynchronize = g_real_sync;
    d.cuMemAlloc = g_real_alloc;
    EXPECT_EQ(allocs, 0);
    EXPECT_EQ(syncs, 0);
    EXPECT_EQ(device_pool_free_bytes(), pooled);
    o.copy_to_host();
    for (int yy = 0; yy < h; yy++)
        for (int xx = 0; xx < w; xx++)
            ASSERT_FLOAT_EQ(o(xx, yy), in(xx, yy) * 2.0f + in(xx, std::min(yy + 1, h - 1)) * 2.0f) << xx << "," << yy;
}

TEST(GPUEmulator, DiskCacheKeepsHostCodeHostStagesAndDeviceCode) {
    REQUIRE_EMULATOR();
    if (!llvm_backend_available()) GTEST_SKIP() << "the disk cache keeps LLVM's object code";
    char tmpl[] = "/tmp/weft-gpu-disk-cache-XXXXXX";
    std::string dir = mkdtemp(tmpl);
    setenv("WEFT_CACHE_DIR", dir.c_str(), 1);
    const int w = 64, h = 48;
    Buffer<float> in = ramp_buffer(w, h, 1.0f, "disk_in");
    auto run = [&] {
        clear_cache();
        Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
        Func pre("disk_pre"), a("disk_a"), out("disk_out");
        pre(x, y) = in(x, y) + 1.0f;  // computed at root with no GPU schedule: a host stage
        a(x, y) = pre(x, y) * 2.0f;
        out(x, y) = a(x, y) + a(x, min(y + 1, h - 1));
        pre.compute_root();
        a.compute_root().gpu_tile(x, y, xo, yo, xi, yi, 16, 8);
        out.gpu_tile(x, y, xo, yo, xi, yi, 16, 8);
        Buffer<float> o(w, h);
        Pipeline(out).realize(o, Target::cuda());
        o.copy_to_host();
        for (int yy = 0; yy < h; yy++)
            for (int xx = 0; xx < w; xx++) {
                int y1 = std::min(yy + 1, h - 1);
                EXPECT_FLOAT_EQ(o(xx, yy), (in(xx, yy) + 1.0f) * 2.0f + (in(xx, y1) + 1.0f) * 2.0f) << xx << "," << yy;
            }
        return cache_stats();
    };
    CacheStats first = run();
    EXPECT_EQ(first.compilations, 1u);
    EXPECT_EQ(first.disk_writes, 1u);
    CacheStats second = run();
    EXPECT_EQ(second.compilations, 0u);
    EXPECT_EQ(second.disk_hits, 1u);
    // The entry: the host code and the host stage as objects, and NVRTC's cubin where NVRTC is.
    std::vector<std::string> files;
    for (auto &e : std::filesystem::directory_iterator(dir + "/kernels")) files.push_back(e.path().string());
    ASSERT_EQ(files.size(), 1u);
    std::ifstream f(files[0], std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(f)), {});
    std::string key, versions;
    ASSERT_TRUE(peek_cache_entry(bytes, key, versions));
    CodeSections code;
    ASSERT_EQ(decode_cache_entry(bytes, key, versions, code), "");
    EXPECT_TRUE(code.count("host.o") && code.count("host.sym"));
    EXPECT_TRUE(code.count("stage0.o") && code.count("stage0.sym"));
    if (nvrtc_available()) EXPECT_TRUE(code.count("gpu.bin") && code.count("gpu.meta"));
    setenv("WEFT_CACHE_DIR", "off", 1);
    std::filesystem::remove_all(dir);
}
