// Tensor cores (Stage::gpu_mma, issue 20): float16 and bfloat16 matrix products as warp-wide
// mma.sync.m16n8k16 steps. The kernels compile with NVRTC (no spills), run on the device or its
// emulation and match the CPU's sums (exactly on the emulation, which sums in k's order; within
// float32 rounding of the sums on a device); schedules that do not fit the instruction are
// refused with an Error naming the Func.
#include <gtest/gtest.h>
#include <cmath>
#include <random>
#include "cuda/CudaDriver.h"
#include "cuda/Nvrtc.h"
#include "gpu/gpu_testing.h"

using namespace weft;
using namespace weft::internal;
using namespace weft_gpu_test;

namespace {

template <typename T>
void fill(Buffer<T> &b, unsigned seed) {
    std::mt19937 rng(seed);
    for (int y = 0; y < b.height(); y++)
        for (int x = 0; x < b.width(); x++) b(x, y) = T((float)(int)(rng() % 2001) / 1000.0f - 1.0f);
}

/** The largest |gpu - cpu| over the sum of the products' magnitudes at that element (the
    bound on float32 rounding differences between two orders of summation is about n eps). */
template <typename T>
double worst_relative(const Buffer<T> &A, const Buffer<T> &B, const Buffer<float> &gpu, const Buffer<float> &cpu, int n) {
    double worst = 0;
    for (int y = 0; y < n; y++)
        for (int x = 0; x < n; x++) {
            double mag = 0;
            for (int k = 0; k < n; k++) mag += std::fabs((double)(float)A(k, y) * (double)(float)B(x, k));
            double d = std::fabs((double)gpu(x, y) - (double)cpu(x, y)) / std::max(mag, 1e-30);
            if (!(d <= worst)) worst = std::isnan(d) ? 1e30 : d;
        }
    return worst;
}

GpuCase mma_case(bool bf16, bool staged) {
    GpuCase c;
    c.name = std::string("mma_") + (bf16 ? "bf16" : "f16") + (staged ? "_staged" : "");
    const int n = 128;
    if (bf16) {
        Buffer<bfloat16_t> A(n, n, "A"), B(n, n, "B");
        c.out = matmul_mma(A, B, n, staged, staged ? 4 : 2, staged ? 4 : 2, staged ? 4 : 2, 2);
    } else {
        Buffer<float16_t> A(n, n, "A"), B(n, n, "B");
        c.out = matmul_mma(A, B, n, staged, staged ? 4 : 2, staged ? 4 : 2, staged ? 4 : 2, 2);
    }
    c.sizes = {n, n};
    return c;
}

template <typename T>
void run_matches_cpu(int n, bool staged, int xt, int yt, int wx, int wy) {
    Buffer<T> A(n, n, "A"), B(n, n, "B");
    fill(A, 1);
    fill(B, 2);
    Func f = matmul_mma(A, B, n, staged, xt, yt, wx, wy);
    Buffer<float> gpu(n, n), cpu(n, n);
    f.realize(gpu, Target::cuda());
    gpu.copy_to_host();
    f.realize(cpu);  // the directive does nothing on the CPU: the loop's order of summation
    double w = worst_relative(A, B, gpu, cpu, n);
    if (cuda_emulated()) EXPECT_EQ(w, 0.0) << "the emulation sums in k's order, as the CPU";
    EXPECT_LE(w, 1e-5) << "n " << n << " staged " << staged;
}

}  // namespace

TEST(GPUNvrtcMma, KernelsUseMmaSyncWithoutSpills) {
    std::string why;
    if (!nvrtc_available(&why)) GTEST_SKIP() << "NVRTC is not available: " << why;
    for (bool bf16 : {false, true})
        for (bool staged : {false, true}) {
            GpuCase c = mma_case(bf16, staged);
            SCOPED_TRACE(c.name);
            Built b = build(c);
            ASSERT_FALSE(b.out.binary.empty()) << b.out.log;
            EXPECT_NE(b.prog.source.find(bf16 ? "weft_mma_m16n8k16<true>(" : "weft_mma_m16n8k16<false>("), std::string::npos);
            for (auto &k : b.prog.kernels) {
                auto it = b.out.usage.find(k.name);
                if (it == b.out.usage.end()) continue;  // (the update's kernel has the report below)
                EXPECT_EQ(it->second.spill_stores, 0) << k.name;
                EXPECT_EQ(it->second.spill_loads, 0) << k.name;
            }
        }
}

TEST(GPURunMma, Float16AndBFloat16MatchTheCpu) {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device (libcuda.so.1 and a GPU, or WEFT_CUDA_EMULATOR=1)";
    run_matches_cpu<float16_t>(64, false, 1, 1, 1, 1);   // one warp, one tile
    run_matches_cpu<float16_t>(64, false, 2, 2, 2, 1);   // two warps of 2 x 2 tiles, from global memory
    run_matches_cpu<bfloat16_t>(64, true, 2, 1, 2, 2);   // tiles staged in shared memory
    run_matches_cpu<float16_t>(128, true, 4, 4, 4, 2);   // the benchmark's shape: 8 warps of 4 x 4 tiles
}

TEST(GPUNvrtcMma, SchedulesThatDoNotFitAreRefused) {
    const int n = 64;
    Buffer<float16_t> A(n, n, "A"), B(n, n, "B");
    Buffer<float> Af(n, n, "Af");
    Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
    RDom k(0, n, "k");
    RVar ko("ko"), ki("ki");
    auto refused = [](const std::function<void()> &f, const std::string &part) {
        try {
            f();
            ADD_FAILURE() << "no Error (expected one saying \"" << part << "\")";
        } catch (const Error &e) {
            EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
        }
    };
    // At the directive: the pure definition, float operands, Vars where an RVar is needed.
    {
        Func f("f");
        f(x, y) = 0.0f;
        f(x, y) += cast<float>(A(k, y)) * cast<float>(B(x, k));
        refused([&] { f.gpu_mma(x, y, x); }, "only an update");
        refused([&] { f.update().gpu_mma(x, y, x); }, "different loops");
        refused([&] { f.update().gpu_mma(x, k, y); }, "loops of the Func's own Vars");
        refused([&] { f.update().gpu_mma(x, y, Var("nope")); }, "no loop named");
        Func g("g");
        g(x, y) = 0.0f;
        g(x, y) += Af(k, y) * Af(x, k);
        refused([&] { g.update().gpu_mma(x, y, k); }, "both float16 or both bfloat16");
    }
    // At lowering (for CUDA, no device needed): a layout that is not the instruction's
    // (8 threads along the columns), a k step of 8, and loops not innermost.
    auto lowered = [&](Func out) { Pipeline(out).lowered_ir({n, n}, cuda_target_without_device()); };
    auto build = [&](int xlanes, int kstep, int order) {
        Var xq("xq"), xv("xv"), yh("yh"), yq("yq");
        Func acc("acc"), out("out");
        acc(x, y) = 0.0f;
        acc(x, y) += cast<float>(A(k, y)) * cast<float>(B(x, k));
        out(x, y) = acc(x, y);
        const int ylanes = 32 / xlanes;
        out.tile(x, y, xo, yo, xi, yi, 2 * xlanes, 2 * ylanes).split(xi, xq, xv, 2).split(yi, yh, yq, ylanes)
            .reorder(xv, yh, xq, yq, xo, yo).gpu_blocks(xo, yo).gpu_threads(xq, yq);
        acc.compute_at(out, xo).store_in(MemoryType::Register);
        acc.split(x, xq, xv, 2).split(y, yh, yq, ylanes).reorder(xv, yh, xq, yq).gpu_threads(xq, yq);
        Stage u = acc.update();
        u.split(x, xq, xv, 2).split(y, yh, yq, ylanes).split(k, ko, ki, kstep);
        if (order == 0) u.reorder(ki, xv, yh, xq, yq, ko);
        else if (order == 1) u.reorder(ki, xv, ko, yh, xq, yq);  // (ko between the three)
        else u.reorder(xv, ki, yh, xq, yq, ko);
        u.gpu_threads(xq, yq).gpu_mma(yh, xv, ki);
        return out;
    };
    EXPECT_NO_THROW(lowered(build(4, 16, 0)));
    EXPECT_NO_THROW(lowered(build(4, 16, 2)));  // the three loops in another order: the same instruction
    refused([&] { lowered(build(8, 16, 0)); }, "accumulator layout");
    refused([&] { lowered(build(4, 8, 0)); }, "k 16");
    refused([&] { lowered(build(4, 16, 1)); }, "innermost loops");
    // Tiles that do not divide the extents: the tails' guards would leave lanes out.
    refused([&] {
        Buffer<float16_t> A2(60, 60, "A"), B2(60, 60, "B");
        Pipeline(matmul_mma(A2, B2, 60, false, 1, 1, 1, 1)).lowered_ir({60, 60}, cuda_target_without_device());
    }, "tail's guard");
    // Threads that do not all take part: the output's stage has more threads than the update's.
    refused([&] {
        Func out = build(4, 16, 0);
        Var xq("xq"), yq("yq"), xv("xv"), yh("yh");
        out.gpu_threads(xv);  // (a third thread dimension of 2 the update does not have)
        lowered(out);
    }, "every thread of the block must take part");
}

TEST(GPUNvrtcMma, TheDirectiveReadsBackFromItsSource) {
    const int n = 64;
    Buffer<float16_t> A(n, n, "A"), B(n, n, "B");
    Func out = matmul_mma(A, B, n, false, 2, 2, 2, 2);
    Pipeline p(out);
    std::string src = p.get_schedule().cpp_source();
    EXPECT_NE(src.find(".gpu_mma(yh, xv, ki);"), std::string::npos) << src;
    Buffer<float16_t> A2(n, n, "A"), B2(n, n, "B");
    Var x("x"), y("y");
    RDom k(0, n, "k");
    Func acc("mma_acc"), out2("mma_out");
    acc(x, y) = 0.0f;
    acc(x, y) += cast<float>(A2(k, y)) * cast<float>(B2(x, k));
    out2(x, y) = acc(x, y);
    Pipeline q(out2);
    q.apply_schedule_source(src);
    EXPECT_EQ(q.get_schedule().cpp_source(), src);
}
