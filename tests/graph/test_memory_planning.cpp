// Memory planning: heap buffers of the top level given back after their last use, so that a
// chain of root stages holds a few buffers at once, and later calls take nothing from the system.
#include <gtest/gtest.h>
#include <weft/weft.h>

#include <cstring>

#include "lang/lang_test_util.h"
#include "pipeline/PipelineInternal.h"

using namespace weft;

namespace {

/** n stages, each at root, each reading the last (and the first reading the input). */
Func root_chain(const ImageParam &in, int n, std::vector<Func> &stages) {
    Var x("x"), y("y");
    Func prev = BoundaryConditions::repeat_edge(in);
    for (int i = 0; i < n; i++) {
        Func f("stage" + std::to_string(i));
        f(x, y) = 0.5f * prev(x, y) + 0.25f * prev(x + 1, y) + 0.25f * prev(x, y + 1) + (float)i;
        if (i + 1 < n) f.compute_root().vectorize(x, 8);
        stages.push_back(f);
        prev = f;
    }
    return prev;
}

Buffer<float> ramp(int w, int h) {
    Buffer<float> b(w, h);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) b(x, y) = (float)((x * 3 + y * 5) % 17);
    return b;
}

}  // namespace

TEST(MemoryPlanning, ChainOfRootStagesHoldsFewBuffers) {
    const int w = 256, h = 128, n = 8;  // each stage about 128 KiB (plus its border)
    ImageParam in(Float(32), 2, "in");
    std::vector<Func> stages;
    Func out = root_chain(in, n, stages);
    Buffer<float> img = ramp(w, h);
    in.set(img);
    Buffer<float> a = out.realize({w, h});  // compiles; the pool gets its blocks
    MemoryStats warm = memory_stats();
    reset_peak_memory();
    Buffer<float> b = out.realize({w, h});
    MemoryStats st = memory_stats();
    EXPECT_EQ(st.allocations, warm.allocations) << "a call after the first took blocks from the system";
    const uint64_t block = 256 * 1024;  // the pool's block for one stage (a power of two above 128 KiB)
    EXPECT_LE(st.peak - warm.in_use, 3 * block) << "peak " << st.peak << " with " << warm.in_use << " held before";
    EXPECT_GE(st.peak - warm.in_use, 2 * block);
    // Same results as the reference interpreter.
    Buffer<float> ref(w, h);
    internal::interpret_pipeline(Pipeline(out), {ref});
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) ASSERT_EQ(b(x, y), ref(x, y)) << x << ", " << y;
    // The plan is in the lowered IR (and WEFT_DEBUG's output).
    std::string ir = Pipeline(out).lowered_ir({w, h});
    EXPECT_CONTAINS(ir, "memory plan");
    EXPECT_CONTAINS(ir, "freed after its last use");
    EXPECT_CONTAINS(ir, "reuses the block of");
    EXPECT_CONTAINS(ir, "free_buffer");
}

TEST(MemoryPlanning, BufferUsedToTheEndIsNotFreedEarly) {
    // stage0 is read by the last stage too: it lives to the end; the others go early. The
    // results show no use after a free (ASan would see one in the interpreter, garbage here).
    Var x("x"), y("y");
    ImageParam in(Float(32), 2, "in");
    Func s0("s0"), s1("s1"), s2("s2"), out("out");
    s0(x, y) = in(x, y) * 2.0f;
    s1(x, y) = s0(x, y) + 1.0f;
    s2(x, y) = s1(x, y) * s1(x, y);
    out(x, y) = s2(x, y) - s0(x, y);
    s0.compute_root();
    s1.compute_root();
    s2.compute_root();
    Buffer<float> img = ramp(256, 128);
    in.set(img);
    Buffer<float> r = out.realize({256, 128});
    for (int yy = 0; yy < 128; yy++)
        for (int xx = 0; xx < 256; xx++) {
            float a = img(xx, yy) * 2.0f, b = a + 1.0f;
            ASSERT_EQ(r(xx, yy), b * b - a);
        }
    std::string ir = Pipeline(out).lowered_ir({256, 128});
    // (each 128 KiB: on the heap, so planned)
    EXPECT_CONTAINS(ir, "(to the end of its scope)");
    EXPECT_CONTAINS(ir, "s1: 128.0 KiB");
    EXPECT_CONTAINS(ir, "free_buffer<int32>(\"s1\")");
    EXPECT_FALSE(weft_test::contains(ir, "free_buffer<int32>(\"s0\")")) << ir;
}

TEST(MemoryPlanning, ChainOfDeferredCallsHoldsFewBuffers) {
    // Six separately built parts, scheduled (so their results stay at root), chained lazily:
    // the fused pipeline holds two or three of the intermediates at once, not five.
    const int w = 256, h = 128, parts = 6;
    std::vector<Callable> fns;
    std::vector<ImageParam> ins;
    for (int i = 0; i < parts; i++) {
        Var x("x"), y("y");
        ImageParam in(Float(32), 2, "in");
        Func c = BoundaryConditions::repeat_edge(in);
        Func f("part" + std::to_string(i));
        f(x, y) = 0.5f * c(x, y) + 0.5f * c(x + 1, y) + (float)i;
        f.vectorize(x, 8);
        fns.push_back(Pipeline(f).compile_to_callable({in}));
        ins.push_back(in);
    }
    Buffer<float> img = ramp(w, h);
    auto chain = [&] {
        LazyBuffer v = img;
        for (auto &fn : fns) v = fn.defer({w, h}, v);
        return v;
    };
    Buffer<float> first = chain().realize();
    MemoryStats warm = memory_stats();
    reset_peak_memory();
    Buffer<float> again = chain().realize();
    MemoryStats st = memory_stats();
    EXPECT_EQ(st.allocations, warm.allocations);
    EXPECT_LE(st.peak - warm.in_use, 3 * 256 * 1024u);
    // Eager, for the values (bit for bit) and the memory a user holds that way.
    Buffer<float> cur = img;
    for (auto &fn : fns) {
        Buffer<float> next(w, h);
        fn(cur, next);
        cur = next;
    }
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) ASSERT_EQ(std::memcmp(&again(x, y), &cur(x, y), 4), 0) << x << ", " << y;
}
