// Pipeline::auto_schedule for a CUDA target: every GPU test pipeline's algorithm scheduled
// automatically compiles with NVRTC within the device's limits (GPUNvrtc: no device needed)
// and matches the interpreter on a device or its emulation (GPURun: labels gpu and
// gpu-emulated).
#include <gtest/gtest.h>
#include "cuda/CudaPipeline.h"
#include "gpu/gpu_testing.h"

using namespace weft;
using namespace weft_gpu_test;

namespace {

/** The case's output estimated at its sizes (its inputs are Buffers: their shapes are known). */
void estimate(GpuCase &c) {
    std::vector<std::pair<Expr, Expr>> r;
    for (int s : c.sizes) r.push_back({0, s});
    c.out.set_estimates(r);
}

}  // namespace

TEST(GPUNvrtcAutoSchedule, EveryCaseCompiles) {
    std::string why;
    if (!internal::nvrtc_available(&why)) GTEST_SKIP() << "NVRTC is not available: " << why;
    for (auto &make : all_cases()) {
        GpuCase c = make();
        SCOPED_TRACE(c.name);
        estimate(c);
        Pipeline p(c.out);
        AutoScheduleResult r = p.auto_schedule(internal::cuda_target_without_device());
        EXPECT_EQ(r.schedule_source, p.get_schedule().cpp_source());
        Built b;
        try {
            b = build(c);
        } catch (const Error &e) {
            ADD_FAILURE() << e.what() << "\nschedule:\n" << r.schedule_source;
            continue;
        }
        // Something runs on the device, unless nothing may run in parallel.
        if (r.schedule_source.find("gpu_blocks") != std::string::npos) EXPECT_FALSE(b.prog.kernels.empty());
    }
}

TEST(GPURunAutoSchedule, EveryCaseMatchesTheInterpreter) {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device (libcuda.so.1 and a GPU are needed)";
    Target t = Target::cuda();
    for (auto &make : all_cases()) {
        GpuCase c = make();
        SCOPED_TRACE(c.name);
        estimate(c);
        Pipeline p(c.out);
        AutoScheduleResult r = p.auto_schedule(t);
        EXPECT_LE(compare_with_interpreter(c, t), 1e-5) << r.schedule_source;
    }
}
