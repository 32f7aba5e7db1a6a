// Pipeline::auto_schedule for a CUDA target: every GPU test pipeline's algorithm scheduled
// automatically compiles with NVRTC within the device's limits (GPUNvrtc: no device needed)
// and matches the interpreter on a device or its emulation (GPURun: labels gpu and
// gpu-emulated).
#include <gtest/gtest.h>
#include "cuda/CudaPipeline.h"
#include "gpu/gpu_testing.h"
#include "lang/lang_test_util.h"

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

namespace {

/** A colour unsharp mask on a GPU: a 3x3 box over x then y of each channel, then the image
    pushed away from it, w x h x 3 (the input has a one-pixel border). Its two passes are
    stencils: the planner stages each one's producer in shared memory per block. */
GpuCase colour_unsharp(int w, int h) {
    GpuCase c;
    c.name = "colour_unsharp";
    Buffer<float> in({w + 2, h + 2, 3}, "in");
    for (int ch = 0; ch < 3; ch++)
        for (int y = 0; y < h + 2; y++)
            for (int x = 0; x < w + 2; x++) in(x, y, ch) = (float)((x * 7 + y * 13 + ch * 5) % 97) / 97.0f;
    in.set_min({-1, -1, 0});
    c.inputs.push_back(in);
    Var x("x"), y("y"), ch("ch");
    Func bx("box_x"), by("box_y"), out("unsharp");
    bx(x, y, ch) = in(x - 1, y, ch) + in(x, y, ch) + in(x + 1, y, ch);
    by(x, y, ch) = (bx(x, y - 1, ch) + bx(x, y, ch) + bx(x, y + 1, ch)) * (1.0f / 9.0f);
    out(x, y, ch) = in(x, y, ch) + 0.5f * (in(x, y, ch) - by(x, y, ch));
    c.out = out;
    c.sizes = {w, h, 3};
    return c;
}

}  // namespace

TEST(GPUNvrtcAutoSchedule, AStencilsFirstPassIsStagedInSharedMemory) {
    // The separable blur: blur_x computed per block of blur_y, in shared memory, a thread per
    // point of the block's 32 x 10 rows (Halide's expert GPU schedule of it); one kernel, its
    // barrier inserted by lowering. The next candidate is the same without staging (for a
    // measured search on a device), and the schedule's source reproduces it.
    std::string why;
    if (!internal::nvrtc_available(&why)) GTEST_SKIP() << "NVRTC is not available: " << why;
    GpuCase c;
    c.name = "blur";
    blur_algorithm(c, 256, 128);
    estimate(c);
    Pipeline p(c.out);
    AutoScheduleResult r = p.auto_schedule(internal::cuda_target_without_device());
    EXPECT_CONTAINS(r.schedule_source, "blur_x.compute_at(blur_y, ");
    EXPECT_CONTAINS(r.schedule_source, "blur_x.store_in(MemoryType::GPUShared);");
    EXPECT_CONTAINS(r.schedule_source, "blur_x.gpu_threads(");
    EXPECT_EQ(r.schedule_source, p.get_schedule().cpp_source());
    Built b = build(c);
    ASSERT_EQ(b.prog.kernels.size(), 1u) << b.prog.source;
    EXPECT_EQ(b.prog.kernels[0].shared_bytes, 32 * 10 * 4);
    EXPECT_NE(b.prog.source.find("__syncthreads()"), std::string::npos);
    internal::check_kernel_resources(b.prog, b.out);

    // Colour channels: box_y is inlined into the output (read at the point it computes), and
    // box_x is staged per block of the output, a channel per block, its loop over channels
    // inside each thread.
    GpuCase u = colour_unsharp(200, 90);
    estimate(u);
    Pipeline pu(u.out);
    std::string src = pu.auto_schedule(internal::cuda_target_without_device()).schedule_source;
    EXPECT_CONTAINS(src, "box_x.compute_at(unsharp, ");
    EXPECT_CONTAINS(src, "box_x.store_in(MemoryType::GPUShared);");
    EXPECT_CONTAINS(src, "box_x.reorder(ch, x, y);");
    Built bu = build(u);
    ASSERT_EQ(bu.prog.kernels.size(), 1u) << bu.prog.source;
    EXPECT_EQ(bu.prog.kernels[0].shared_bytes, 32 * 10 * 4);
    internal::check_kernel_resources(bu.prog, bu.out);

    // A block that would read more of its producer than a block has threads (columns 100
    // apart: 132 x 8 points) keeps the producer a kernel of its own.
    GpuCase far;
    far.name = "far";
    far.inputs.push_back(ramp_buffer(400, 64));
    Buffer<float> in = far.inputs[0];
    Var x("x"), y("y");
    Func f("scaled"), g("far_pair");
    Expr v = in(x, y);
    f(x, y) = exp(v) * sqrt(abs(v) + 1.0f) + sin(v) * cos(v * 3.0f);  // (not cheap: not inlined)
    g(x, y) = f(x, y) + f(x + 100, y);
    far.out = g;
    far.sizes = {300, 64};
    estimate(far);
    Pipeline pf(far.out);
    src = pf.auto_schedule(internal::cuda_target_without_device()).schedule_source;
    EXPECT_EQ(src.find("GPUShared"), std::string::npos) << src;
    EXPECT_CONTAINS(src, "scaled.compute_root();");

    // A chain of three stencils: the first two staged in the last one's kernel, one kernel
    // with both in shared memory (36 x 12 and 34 x 10 points of float per block of 32 x 8).
    GpuCase ch;
    ch.name = "stencil_chain";
    ch.inputs.push_back(ramp_buffer(300, 200));
    {
        Buffer<float> cin = ch.inputs[0];
        Var x("x"), y("y");
        Func s0("s0"), s1("s1"), s2("s2");
        Expr v = cin(clamp(x, 0, 299), clamp(y, 0, 199));
        s0(x, y) = exp(v) * sin(v) + cos(v * 3.0f);
        s1(x, y) = exp(s0(x - 1, y - 1) + s0(x + 1, y + 1)) * sin(s0(x, y));
        s2(x, y) = exp(s1(x - 1, y) * s1(x + 1, y)) + sin(s1(x, y - 1) - s1(x, y + 1));
        ch.out = s2;
        ch.sizes = {256, 160};
    }
    estimate(ch);
    Pipeline pc(ch.out);
    src = pc.auto_schedule(internal::cuda_target_without_device()).schedule_source;
    EXPECT_CONTAINS(src, "s0.store_in(MemoryType::GPUShared);");
    EXPECT_CONTAINS(src, "s1.store_in(MemoryType::GPUShared);");
    Built bc = build(ch);
    ASSERT_EQ(bc.prog.kernels.size(), 1u) << bc.prog.source;
    EXPECT_EQ(bc.prog.kernels[0].shared_bytes, (36 * 12 + 34 * 10) * 4);
    internal::check_kernel_resources(bc.prog, bc.out);

    // Hostile estimates (a point, a line, int32's edge): a legal schedule each time, staged or
    // not, that compiles within the device's limits at the blur's real size.
    for (auto [ew, eh] : {std::pair{1, 1}, std::pair{1, 100000}, std::pair{100000, 1}, std::pair{2147483647, 2147483647}}) {
        SCOPED_TRACE(std::to_string(ew) + "x" + std::to_string(eh));
        GpuCase h;
        h.name = "blur_hostile";
        blur_algorithm(h, 256, 128);
        h.out.set_estimates({{0, ew}, {0, eh}});
        Pipeline ph(h.out);
        try {
            ph.auto_schedule(internal::cuda_target_without_device());
        } catch (const Error &e) {
            // (An estimate the analysis cannot bound is a clear Error, not a crash.)
            EXPECT_CONTAINS(std::string(e.what()), "weft");
            continue;
        }
        Built bh = build(h);
        internal::check_kernel_resources(bh.prog, bh.out);
    }
}

TEST(GPURunAutoSchedule, StagedProducersMatchTheInterpreter) {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device (libcuda.so.1 and a GPU are needed)";
    // Sizes the blocks divide and do not.
    for (auto [w, h] : {std::pair{256, 128}, std::pair{75, 19}}) {
        SCOPED_TRACE(std::to_string(w) + "x" + std::to_string(h));
        GpuCase u = colour_unsharp(w, h);
        estimate(u);
        Pipeline p(u.out);
        AutoScheduleResult r = p.auto_schedule(Target::cuda());
        EXPECT_CONTAINS(r.schedule_source, "GPUShared");
        EXPECT_LE(compare_with_interpreter(u, Target::cuda()), 1e-5) << r.schedule_source;
    }
    // A producer read transposed, and a chain of three stencils (the middle one staged in the
    // last; the first, whose reader is staged, a kernel of its own).
    for (int variant = 0; variant < 2; variant++) {
        SCOPED_TRACE(variant ? "chain of stencils" : "transposed");
        GpuCase c;
        c.name = variant ? "stencil_chain" : "transposed";
        c.inputs.push_back(ramp_buffer(90, 90));
        Buffer<float> in = c.inputs[0];
        Var x("x"), y("y");
        Func f("f"), g("g"), h("h");
        Expr cx = clamp(x, 0, 89), cy = clamp(y, 0, 89);
        f(x, y) = exp(in(cx, cy)) * sin(in(cx, cy)) + cos(in(cx, cy) * 3.0f);
        if (variant == 0) {
            g(x, y) = f(y, x) + f(y + 1, x) * 2.0f;
            c.out = g;
        } else {
            g(x, y) = exp(f(x - 1, y) + f(x + 1, y)) * sin(f(x, y));
            h(x, y) = g(x, y - 1) * g(x, y + 1) + g(x, y);
            c.out = h;
        }
        c.sizes = {70, 60};
        estimate(c);
        Pipeline p(c.out);
        AutoScheduleResult r = p.auto_schedule(Target::cuda());
        EXPECT_CONTAINS(r.schedule_source, "GPUShared");
        EXPECT_LE(compare_with_interpreter(c, Target::cuda()), 1e-5) << r.schedule_source;
    }
}
