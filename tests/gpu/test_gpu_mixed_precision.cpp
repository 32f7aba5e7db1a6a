// 16-bit floats and fixed-point intrinsics in CUDA kernels (issue 20): the kernels compile with
// NVRTC (conversions are cvt.rn.f16.f32 and its kin, no header needed), and on the emulated
// device (WEFT_CUDA_EMULATOR=1, CTest label gpu-emulated) give the CPU's results bit for bit.
#include <gtest/gtest.h>
#include <cstring>
#include <random>
#include "cuda/CudaDriver.h"
#include "cuda/Nvrtc.h"
#include "gpu/gpu_testing.h"

using namespace weft;
using namespace weft::internal;
using namespace weft_gpu_test;

namespace {

struct MixedCase {
    Buffer<float16_t> a;
    Buffer<bfloat16_t> b;
    Buffer<int8_t> q;
    Func out;
};

MixedCase mixed_case() {
    const int w = 70, h = 20;
    MixedCase m{Buffer<float16_t>(w, h, "mp_a"), Buffer<bfloat16_t>(w, h, "mp_b"), Buffer<int8_t>(w, h, "mp_q"), Func("mp_out")};
    std::mt19937 rng(5);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            m.a(x, y) = float16_t((float)(int)(rng() % 4000) / 16.0f - 120.0f);
            m.b(x, y) = bfloat16_t((float)(int)(rng() % 4000) * 1e-3f);
            m.q(x, y) = (int8_t)(rng() & 0xff);
        }
    m.a(0, 0) = float16_t(60000.0f);
    m.b(1, 0) = bfloat16_t(std::nanf(""));
    Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
    Func prod("mp_prod");
    prod(x, y) = m.a(x, y) * m.a(x, y) + cast<float16_t>(m.b(x, y));  // float16, overflows at (0, 0)
    Expr fixed = cast<float>(saturating_add(m.q(x, y), m.q(x, y)) + rounding_shift_right(m.q(x, y), 2) +
                             cast<int8_t>(rounding_mul_shift_right(m.q(x, y), m.q(x, y), 7)));
    m.out(x, y) = cast<bfloat16_t>(cast<float>(prod(x, y)) * 0.5f + cast<float>(m.b(x, y)) + fixed);
    prod.compute_root().gpu_tile(x, y, xo, yo, xi, yi, 16, 8);
    m.out.gpu_tile(x, y, xo, yo, xi, yi, 16, 8);
    return m;
}

}  // namespace

TEST(GPUNvrtcMixedPrecision, Compiles) {
    std::string why;
    if (!nvrtc_available(&why)) GTEST_SKIP() << "NVRTC is not available: " << why;
    MixedCase m = mixed_case();
    GpuCase c;
    c.name = "mixed_precision";
    c.out = m.out;
    c.sizes = {70, 20};
    Built b = build(c);
    EXPECT_FALSE(b.out.binary.empty()) << b.out.log;
    EXPECT_NE(b.prog.source.find("weft_f32_to_f16("), std::string::npos) << b.prog.source;
    EXPECT_NE(b.prog.source.find("weft_f32_to_bf16("), std::string::npos) << b.prog.source;
}

TEST(GPURunMixedPrecision, DeviceMatchesTheCpuBitForBit) {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device (libcuda.so.1 and a GPU, or WEFT_CUDA_EMULATOR=1)";
    MixedCase m = mixed_case();
    Buffer<bfloat16_t> gpu(70, 20), cpu(70, 20);
    Pipeline(m.out).realize(gpu, Target::cuda());
    gpu.copy_to_host();
    MixedCase n = mixed_case();  // the same values (one seed); its GPU directives do nothing on the host
    Pipeline(n.out).realize(cpu);
    for (int y = 0; y < 20; y++)
        for (int x = 0; x < 70; x++) {
            bool nan = gpu(x, y).is_nan() && cpu(x, y).is_nan();
            ASSERT_TRUE(nan || gpu(x, y).bits == cpu(x, y).bits) << x << "," << y << ": " << (float)gpu(x, y) << " vs "
                                                                  << (float)cpu(x, y);
        }
    EXPECT_TRUE(std::isinf((float)cpu(0, 0)) || (float)cpu(0, 0) > 1e30f);  // 60000^2 overflows float16
}
