// GPU pipelines run on a CUDA device and compared with the interpreter. Suites start with
// "GPURun" (CTest label gpu); every test skips where there is no CUDA device.
#include <gtest/gtest.h>
#include "gpu/gpu_testing.h"
#include "lang/atomic_cases.h"

using namespace weft;
using namespace weft_gpu_test;

#define REQUIRE_DEVICE() \
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device (libcuda.so.1 and a GPU are needed)"

TEST(GPURun, AllCasesMatchInterpreter) {
    REQUIRE_DEVICE();
    Target t = Target::cuda();
    for (auto &make : all_cases()) {
        GpuCase c = make();
        SCOPED_TRACE(c.name);
        EXPECT_LE(compare_with_interpreter(c, t), 1e-5) << c.name;
    }
}

TEST(GPURun, OddSizesWithTails) {
    REQUIRE_DEVICE();
    Target t = Target::cuda();
    GpuCase a = pointwise(250, 77);
    EXPECT_LE(compare_with_interpreter(a, t), 1e-6);
    GpuCase b = blur_shared(200, 45);
    EXPECT_LE(compare_with_interpreter(b, t), 1e-6);
    GpuCase d = update_stage(333);
    EXPECT_LE(compare_with_interpreter(d, t), 1e-6);
    // Partial sums added up as a tree: thread counts that are not powers of two.
    for (int threads : {100, 48, 3}) {
        GpuCase rs = row_sum_rfactor(501, 9, threads), rm = row_sum_rfactor(300, 5, threads, true);
        EXPECT_LE(compare_with_interpreter(rs, t), 1e-5) << threads;
        EXPECT_LE(compare_with_interpreter(rm, t), 0) << threads;  // max: exact in any order
    }
    GpuCase serial = row_sum_rfactor(501, 9, 128, false, 4);  // 32 threads: the last step stays serial
    EXPECT_LE(compare_with_interpreter(serial, t), 1e-5);
    // Tiles shifted inwards at the edges, a last step of k of 8 (200 = 12 * 16 + 8): the
    // staged tiles' shared buffers and the register copies get the largest step's size. Tiles
    // larger than the matrix (40 < 64, 123 < 128): the edge threads' elements are cut off.
    std::vector<GpuCase> ms = {matmul_shared_vec(200, 8, true), matmul_shared_vec(200, 16, false),
                               matmul_shared_vec(200, 16, true), matmul_shared_vec(202, 4, true),
                               matmul_shared_vec(123), matmul_shared_staged(40), matmul_vectorized(39),
                               matmul_shared_vec(65, 16),  // edge threads' offsets with no digit structure
                               matmul_shared_vec(200, 8, false, true),  // double-buffered: 25 steps, the last alone
                               matmul_shared_vec(119, 16, true),        // load_ahead, the tile larger than the matrix
                               matmul_shared_vec(200, 8, true, true),   // both: 13 pairs, the last step alone
                               matmul_shared_vec(72, 16, true, true)};  // both, one pair: its second step past k
    for (auto &m : ms) {
        SCOPED_TRACE(m.name + " n=" + std::to_string(m.sizes[0]));
        EXPECT_LE(compare_with_interpreter(m, t), 1e-5);
    }
}

// atomic() updates of each element type and operation, over GPU blocks and threads of the
// RDom: atomicAdd / atomicSub / atomicMin / atomicMax, compare-and-swap loops (float max, a
// product, a non-associative update), on 4- and 8-byte elements and within the 4-byte word of
// 1- and 2-byte ones; exact against C++.
TEST(GPURun, AtomicUpdatesOfEachType) {
    REQUIRE_DEVICE();
    Buffer<int32_t> in = weft_test::atomic_input(203, 61);
    auto s = [](Func &f, Stage u, const RDom &r) {
        Var xo("xo"), xi("xi");
        RVar rxo("rxo"), ryo("ryo"), rxi("rxi"), ryi("ryi");
        f.gpu_tile(Var("x"), xo, xi, 16);
        u.gpu_tile(r.x, r.y, rxo, ryo, rxi, ryi, 32, 4);
    };
    for (auto &c : weft_test::atomic_cases(in, s)) EXPECT_EQ(c.check(Target::cuda()), "") << c.name;
}

TEST(GPURun, BuffersCopyOnlyWhenNeeded) {
    REQUIRE_DEVICE();
    Target t = Target::cuda();
    GpuCase c = pointwise(64, 32);
    Buffer<float> in = c.inputs[0];
    Buffer<float> out(64, 32);
    Buffer<float> host_only(4);
    host_only.device_sync();  // no device copy: nothing to wait for
    c.out.realize(out, t);
    EXPECT_TRUE(out.device_dirty());
    out.device_sync();  // waits for the kernel, copies nothing
    EXPECT_TRUE(out.device_dirty());
    EXPECT_TRUE(in.has_device_allocation());
    EXPECT_FALSE(in.host_dirty());
    EXPECT_FLOAT_EQ(out(3, 4), in(3, 4) * 2.0f + 1.0f);  // copies back
    EXPECT_FALSE(out.device_dirty());
    in(3, 4) = 10.0f;  // a host write marks the host copy newer
    EXPECT_TRUE(in.host_dirty());
    c.out.realize(out, t);
    EXPECT_FLOAT_EQ(out(3, 4), 21.0f);
    in.copy_to_device();
    EXPECT_FALSE(in.host_dirty());
    out.copy_to_host();
    EXPECT_FALSE(out.device_dirty());
}

// Host stages (stages with no GPU schedule) in a CUDA pipeline: each buffer is copied only to
// the side about to use it, when that side's copy is older.
TEST(GPURun, HostStagesCopyOnlyWhatTheyUse) {
    REQUIRE_DEVICE();
    Target t = Target::cuda();
    const int w = 100, h = 37;
    Buffer<float> in = ramp_buffer(w, h, 1.0f, "in"), in2 = ramp_buffer(w, h, 3.0f, "in2");
    Param<float> gain("gain", 2.0f);
    Var x("x"), y("y"), xo("xo"), yo("yo"), yi("yi"), xi("xi"), yio("yio"), yii("yii");
    // `a` computed on the host at each row strip of `out`'s host loop, `out` on the device.
    Func a("a"), out("out");
    a(x, y) = in(x, y) * gain + in2(x, y);
    out(x, y) = a(x, y) + 1.0f;
    out.split(y, yo, yi, 8).gpu_tile(x, yi, xo, yio, xi, yii, 16, 4);
    a.compute_at(out, yo).vectorize(x, 8);
    auto expect_out = [&](Buffer<float> &o, float g) {
        for (int j = 0; j < h; j++)
            for (int i = 0; i < w; i++) ASSERT_FLOAT_EQ(o(i, j), in(i, j) * g + in2(i, j) + 1.0f) << i << "," << j;
    };
    Buffer<float> o(w, h);
    out.realize(o, t);
    EXPECT_FALSE(in.has_device_allocation());   // read on the host only
    EXPECT_FALSE(in2.has_device_allocation());
    EXPECT_TRUE(o.device_dirty());              // written by the kernel
    expect_out(o, 2.0f);
    in(5, 6) = 40.0f;  // the host copy is the one the host stage reads
    gain.set(3.0f);
    out.realize(o, t);
    expect_out(o, 3.0f);
    EXPECT_FALSE(in.has_device_allocation());

    // An output whose last stage is on the host: its host copy is the newest after the call.
    Func g("g");
    g(x, y) = in(x, y) + 1.0f;
    RDom r(1, w - 1, "r");
    g(r, y) = g(r, y) + g(r - 1, y);
    g.gpu_tile(x, y, xo, yo, xi, yi, 16, 4);
    Buffer<float> go(w, h);
    g.realize(go, t);
    EXPECT_TRUE(go.has_device_allocation());
    EXPECT_FALSE(go.device_dirty());
    EXPECT_TRUE(go.host_dirty());
    EXPECT_TRUE(in.has_device_allocation());  // now read by a kernel
    for (int j = 0; j < h; j++) {
        float acc = in(0, j) + 1.0f;
        EXPECT_FLOAT_EQ(go(0, j), acc);
        for (int i = 1; i < w; i++) {
            acc = in(i, j) + 1.0f + acc;
            ASSERT_FLOAT_EQ(go(i, j), acc) << i << "," << j;
        }
    }
    // The device copy is brought up to date on request.
    go.copy_to_device();
    EXPECT_FALSE(go.host_dirty());

    // A GPU schedule for one specialization only: the other runs on the host.
    Param<int> p("p", 1);
    Func s("s");
    s(x, y) = in(x, y) * 2.0f + cast<float>(p);
    s.specialize(p > 0).gpu_tile(x, y, xo, yo, xi, yi, 16, 4);
    Buffer<float> so(w, h);
    s.realize(so, t);
    EXPECT_TRUE(so.device_dirty());
    EXPECT_FLOAT_EQ(so(3, 4), in(3, 4) * 2.0f + 1.0f);
    p.set(-2);
    s.realize(so, t);
    EXPECT_TRUE(so.host_dirty());
    EXPECT_FLOAT_EQ(so(3, 4), in(3, 4) * 2.0f - 2.0f);
}

// A host loop whose extent is read from a buffer (an RDom over n(0) elements, its loop outside
// the kernels): the host reads it from the buffer's host copy, after a copy back where the
// device's is newer.
TEST(GPURun, HostLoopExtentReadFromABuffer) {
    REQUIRE_DEVICE();
    Target t = Target::cuda();
    Buffer<int> n(1);
    Buffer<float> in(10);
    for (int i = 0; i < 10; i++) in(i) = (float)i;
    Var x("x"), xo("xo"), xi("xi");
    for (int count : {5, 0, 10}) {
        n(0) = count;
        Func f("f");
        RDom r(0, n(Expr(0)), "r");
        f(x) = 0.0f;
        f(x) += in(clamp(r, 0, 9)) + cast<float>(x);
        f.gpu_tile(x, xo, xi, 8);
        f.update().reorder(x, r).gpu_tile(x, xo, xi, 8);  // r: a host loop around the kernel
        Buffer<float> o = f.realize({16}, t);
        for (int i = 0; i < 16; i++) EXPECT_FLOAT_EQ(o(i), count * (count - 1) / 2.0f + (float)(count * i)) << count << " " << i;
    }
    // The count written by a kernel of an earlier call: its device copy is the newest.
    Func c("c");
    c(x) = 7;
    c.gpu_tile(x, xo, xi, 8);
    c.realize(n, t);
    ASSERT_TRUE(n.device_dirty());
    Func g("g");
    RDom r(0, n(Expr(0)), "r");
    g(x) = 0.0f;
    g(x) += in(clamp(r, 0, 9));
    g.gpu_tile(x, xo, xi, 8);
    g.update().reorder(x, r).gpu_tile(x, xo, xi, 8);
    Buffer<float> o = g.realize({16}, t);
    EXPECT_FLOAT_EQ(o(3), 21.0f);  // 0 + 1 + ... + 6
}

TEST(GPURun, CachedSecondCall) {
    REQUIRE_DEVICE();
    Target t = Target::cuda();
    GpuCase c = elementwise_chain(256, 16);
    Buffer<float> out(256, 16);
    c.out.realize(out, t);
    auto before = cache_stats();
    c.out.realize(out, t);
    auto after = cache_stats();
    EXPECT_EQ(after.compilations, before.compilations);
}

// The public API on a GPU target beyond Func::realize: a Callable made for Target::cuda()
// taking an ImageParam and a Param (new values and a new input each call, one compile for the
// same shapes), and a Pipeline of two GPU outputs realized in one call.
TEST(GPURun, CallableWithParamsAndPipelineOfTwoOutputs) {
    REQUIRE_DEVICE();
    Target t = Target::cuda();
    ImageParam in(Float(32), 2, "in");
    Param<float> gain("gain", 1.0f);
    Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
    Func scaled("scaled"), shifted("shifted");
    scaled(x, y) = in(x, y) * gain;
    shifted(x, y) = in(x, y) + gain;
    scaled.gpu_tile(x, y, xo, yo, xi, yi, 16, 8);
    shifted.gpu_tile(x, y, xo, yo, xi, yi, 32, 4);
    Callable fn = Pipeline(scaled).compile_to_callable({in, gain}, t);
    Buffer<float> a(40, 20), b(40, 20), out(40, 20);
    for (int j = 0; j < 20; j++)
        for (int i = 0; i < 40; i++) a(i, j) = (float)(i + 100 * j), b(i, j) = (float)(i - j);
    auto before = cache_stats();
    fn(a, 2.0f, out);
    EXPECT_FLOAT_EQ(out(7, 3), 2.0f * a(7, 3));
    EXPECT_FLOAT_EQ(out(39, 19), 2.0f * a(39, 19));
    fn(b, -0.5f, out);
    EXPECT_FLOAT_EQ(out(7, 3), -0.5f * b(7, 3));
    EXPECT_FLOAT_EQ(out(39, 19), -0.5f * b(39, 19));
    EXPECT_EQ(cache_stats().compilations - before.compilations, 1u);  // the second call: cached

    in.set(a);
    gain.set(3.0f);
    Buffer<float> s(40, 20), h(40, 20);
    Pipeline({scaled, shifted}).realize({s, h}, t);
    const Buffer<float> &cs = s;  // read through a const reference: waits and copies back too
    EXPECT_FLOAT_EQ(cs(5, 6), 3.0f * a(5, 6));
    for (int j = 0; j < 20; j += 7)
        for (int i = 0; i < 40; i += 13) {
            EXPECT_FLOAT_EQ(s(i, j), 3.0f * a(i, j)) << i << "," << j;
            EXPECT_FLOAT_EQ(h(i, j), a(i, j) + 3.0f) << i << "," << j;
        }
}

namespace {
using weft::internal::CudaDriver;
using weft::internal::CUdeviceptr_t;
using weft::internal::CUresult_t;
using weft::internal::cuda_driver;
// Counts of the driver calls a deferred chain makes (the driver's entry points wrapped).
int g_launches = 0, g_to_host = 0, g_to_device = 0;
decltype(CudaDriver::cuLaunchKernel) g_launch_orig = nullptr;
decltype(CudaDriver::cuMemcpyDtoH) g_dtoh_orig = nullptr;
decltype(CudaDriver::cuMemcpyHtoD) g_htod_orig = nullptr;
CUresult_t counted_launch(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned sh,
                          void *st, void **params, void **extra) {
    g_launches++;
    return g_launch_orig(f, gx, gy, gz, bx, by, bz, sh, st, params, extra);
}
CUresult_t counted_dtoh(void *dst, CUdeviceptr_t src, size_t n) {
    g_to_host++;
    return g_dtoh_orig(dst, src, n);
}
CUresult_t counted_htod(CUdeviceptr_t dst, const void *src, size_t n) {
    g_to_device++;
    return g_htod_orig(dst, src, n);
}
}  // namespace

// A chain of two GPU-scheduled parts, deferred: one pipeline, one sequence of launches with no
// copy to the host between the parts and no host buffer for the intermediate; the values are
// the parts' run one by one, bit for bit.
TEST(GPURun, ADeferredChainStaysOnTheDevice) {
    REQUIRE_DEVICE();
    const int w = 200, h = 75;
    Target t = Target::cuda();
    Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
    ImageParam ia(Float(32), 2, "ia"), ib(Float(32), 2, "ib");
    Func fa("scale"), fb("neighbours");
    fa(x, y) = ia(x, y) * 2.0f + 1.0f;
    fa.gpu_tile(x, y, xo, yo, xi, yi, 16, 8);
    fb(x, y) = ib(x, y) + ib(min(x + 1, w - 1), y) * 0.5f;
    fb.gpu_tile(x, y, xo, yo, xi, yi, 32, 4);
    Callable a = Pipeline(fa).compile_to_callable({ia}, t), b = Pipeline(fb).compile_to_callable({ib}, t);
    Buffer<float> in = ramp_buffer(w, h, 1.0f, "in"), mid(w, h), eager(w, h), lazy(w, h);
    a(in, mid);
    b(mid, eager);
    eager.copy_to_host();
    auto chain = [&] { b.defer({w, h}, a.defer({w, h}, in)).realize(lazy); };
    chain();  // (compiles; the input goes to the device)
    CudaDriver &d = cuda_driver();
    g_launch_orig = d.cuLaunchKernel;
    g_dtoh_orig = d.cuMemcpyDtoH;
    g_htod_orig = d.cuMemcpyHtoD;
    d.cuLaunchKernel = counted_launch;
    d.cuMemcpyDtoH = counted_dtoh;
    d.cuMemcpyHtoD = counted_htod;
    g_launches = g_to_host = g_to_device = 0;
    reset_peak_memory();
    const uint64_t before = memory_stats().in_use;
    chain();
    const int launches = g_launches, to_host = g_to_host, to_device = g_to_device;
    const uint64_t host_peak = memory_stats().peak - before;
    d.cuLaunchKernel = g_launch_orig;
    d.cuMemcpyDtoH = g_dtoh_orig;
    d.cuMemcpyHtoD = g_htod_orig;
    EXPECT_EQ(launches, 2) << "one kernel per part";
    EXPECT_EQ(to_host, 0) << "nothing copied to the host during the chain";
    EXPECT_EQ(to_device, 0) << "the input is on the device already";
    EXPECT_LT(host_peak, (uint64_t)w * h * 4) << "a host buffer of the intermediate's size was held";
    lazy.copy_to_host();
    for (int yy = 0; yy < h; yy++)
        for (int xx = 0; xx < w; xx++) ASSERT_EQ(std::memcmp(&lazy(xx, yy), &eager(xx, yy), 4), 0) << xx << ", " << yy;
}
