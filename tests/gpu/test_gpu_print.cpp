// print / print_when in CUDA kernels (issue 21): one device printf per line, on stdout; the
// kernels compile with NVRTC and, on the device or its emulation, print the CPU's pieces.
#include <gtest/gtest.h>
#include <algorithm>
#include <cstdio>
#include "cuda/CudaDriver.h"
#include "cuda/Nvrtc.h"
#include "gpu/gpu_testing.h"
#include "lang/lang_test_util.h"

using namespace weft;
using namespace weft::internal;
using namespace weft_gpu_test;

namespace {
Func printing_kernel(bool when) {
    Var x("x"), xo("xo"), xi("xi");
    Func f(when ? "print_when_k" : "print_k");
    if (when) f(x) = print_when(x == 5, cast<float>(x) * 0.5f, "at", x);
    else f(x) = cast<float>(print(x * 2, "is 100% \"twice\"", x, cast<float>(x) * 0.1f, cast<float16_t>(x), cast<uint8_t>(250 + x)));
    f.gpu_tile(x, xo, xi, 4);
    return f;
}
}  // namespace

TEST(GPUNvrtcPrint, KernelsCallPrintf) {
    std::string why;
    if (!nvrtc_available(&why)) GTEST_SKIP() << "NVRTC is not available: " << why;
    for (bool when : {false, true}) {
        GpuCase c;
        c.name = when ? "print_when" : "print";
        c.out = printing_kernel(when);
        c.sizes = {16};
        Built b = build(c);
        EXPECT_FALSE(b.out.binary.empty()) << b.out.log;
        EXPECT_NE(b.prog.source.find("printf(\""), std::string::npos) << b.prog.source;
    }
}

TEST(GPURunPrint, LinesOnStdout) {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device (libcuda.so.1 and a GPU, or WEFT_CUDA_EMULATOR=1)";
    Buffer<float> out(4), when(16);
    testing::internal::CaptureStdout();
    printing_kernel(false).realize(out, Target::cuda());
    out.copy_to_host();
    printing_kernel(true).realize(when, Target::cuda());
    when.copy_to_host();
    std::fflush(stdout);
    std::string got = testing::internal::GetCapturedStdout();
    for (int i = 0; i < 4; i++) EXPECT_EQ(out(i), 2.0f * i);
    EXPECT_EQ(when(5), 2.5f);
    EXPECT_EQ(weft_test::sorted_lines(got), (std::vector<std::string>{"0 is 100% \"twice\" 0 0 0 250", "2 is 100% \"twice\" 1 0.100000001 1 251",
                                                        "2.5 at 5", "4 is 100% \"twice\" 2 0.200000003 2 252",
                                                        "6 is 100% \"twice\" 3 0.300000012 3 253"}));
}
