// API.md "Running": realize forms, multi-output Pipelines, Callables, Targets.
#include "lang_test_util.h"
#include "pipeline/PipelineInternal.h"

using namespace weft;

namespace {

TEST(Running, RealizeSizes) {
    Var x("x"), y("y"), c("c");
    Func f("run_sizes");
    f(x, y, c) = x + 10 * y + 100 * c;
    Buffer<int> out = f.realize({7, 5, 3});
    ASSERT_EQ(out.dimensions(), 3);
    EXPECT_EQ(out.width(), 7);
    EXPECT_EQ(out.height(), 5);
    EXPECT_EQ(out.channels(), 3);
    for (int d = 0; d < 3; d++) EXPECT_EQ(out.dim(d).min(), 0);
    for (int k = 0; k < 3; k++)
        for (int j = 0; j < 5; j++)
            for (int i = 0; i < 7; i++) EXPECT_EQ(out(i, j, k), i + 10 * j + 100 * k);

    Func g("run_sizes_1d");
    g(x) = cast<uint8_t>(x * 3);
    Realization r = g.realize({300});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].type(), UInt(8));
    Buffer<uint8_t> go = r;
    for (int i = 0; i < 300; i++) EXPECT_EQ(go(i), (uint8_t)(i * 3));
}

TEST(Running, RealizeIntoBufferRespectsMins) {
    Var x("x"), y("y");
    Func f("run_mins");
    f(x, y) = x * 1000 + y;
    f.vectorize(x, 4);
    Buffer<int> out(9, 4);
    out.set_min(-100, 50);
    f.realize(out);
    for (int j = 50; j < 54; j++)
        for (int i = -100; i < -91; i++) EXPECT_EQ(out(i, j), i * 1000 + j);
    // The same Func into a buffer with other mins.
    Buffer<int> out2(3, 2);
    out2.set_min(7, -1);
    f.realize(out2);
    for (int j = -1; j < 1; j++)
        for (int i = 7; i < 10; i++) EXPECT_EQ(out2(i, j), i * 1000 + j);
}

TEST(Running, MultiOutputPipeline) {
    Var x("x"), y("y");
    Func common("mo_common"), f("mo_f"), g("mo_g");
    common(x, y) = x * 3 + y;
    f(x, y) = common(x, y) + 1;
    g(x, y) = cast<float>(common(x, y)) * 0.5f;
    common.compute_root();
    Pipeline p({f, g});
    EXPECT_EQ(p.outputs().size(), 2u);
    Buffer<int> fo(6, 4);
    Buffer<float> go(6, 4);
    p.realize({fo, go});
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < 6; i++) {
            EXPECT_EQ(fo(i, j), i * 3 + j + 1);
            EXPECT_FLOAT_EQ(go(i, j), (i * 3 + j) * 0.5f);
        }
    Realization r = p.realize({5, 3});
    ASSERT_EQ(r.size(), 2u);
    Buffer<int> f2 = r[0];
    Buffer<float> g2 = r[1];
    EXPECT_EQ(f2.width(), 5);
    EXPECT_EQ(g2.height(), 3);
    EXPECT_EQ(f2(4, 2), 4 * 3 + 2 + 1);
    EXPECT_FLOAT_EQ(g2(4, 2), (4 * 3 + 2) * 0.5f);
}

TEST(Running, PipelineOfOneFunc) {
    Var x("x");
    Func f("p1");
    f(x) = x * x;
    Pipeline p(f);
    Buffer<int> out(5);
    out.set_min(-2);
    p.realize(out);
    for (int i = -2; i < 3; i++) EXPECT_EQ(out(i), i * i);
    Buffer<int> o2 = p.realize(std::vector<int>{4});
    EXPECT_EQ(o2(3), 9);
}

TEST(Running, CallableWithImageParamAndParam) {
    ImageParam in(Float(32), 2, "in");
    Param<float> k("k");
    Var x("x"), y("y");
    Func f("callable_f");
    f(x, y) = in(x, y) * k + in(x + 1, y);
    f.vectorize(x, 4);
    Callable fn = Pipeline(f).compile_to_callable({in, k});
    EXPECT_TRUE(fn.defined());
    for (int W : {8, 5}) {
        Buffer<float> in_buf(W + 1, 3);
        weft_test::fill_pattern(in_buf, (uint32_t)W, -9, 9);
        Buffer<float> out_buf(W, 3);
        fn(in_buf, 2.0f, out_buf);
        for (int j = 0; j < 3; j++)
            for (int i = 0; i < W; i++) EXPECT_FLOAT_EQ(out_buf(i, j), in_buf(i, j) * 2.0f + in_buf(i + 1, j));
        fn(in_buf, -0.5f, out_buf);
        for (int j = 0; j < 3; j++)
            for (int i = 0; i < W; i++) EXPECT_FLOAT_EQ(out_buf(i, j), in_buf(i, j) * -0.5f + in_buf(i + 1, j));
    }
    // Copies share one cache and work the same.
    Callable copy = fn;
    Buffer<float> in_buf(9, 2), out_buf(8, 2);
    in_buf.fill(1.0f);
    CacheStats before = cache_stats();
    copy(in_buf, 3.0f, out_buf);
    EXPECT_EQ(out_buf(7, 1), 4.0f);
    copy(in_buf, 4.0f, out_buf);
    EXPECT_EQ(out_buf(0, 0), 5.0f);
    EXPECT_LE(cache_stats().compilations, before.compilations + 1);
}

TEST(Running, CallableMultipleParamsAndOutputs) {
    ImageParam a(Int(32), 1, "a"), b(Int(32), 1, "b");
    Param<int> s("s");
    Param<double> d("d");
    Var x("x");
    Func sum_f("cm_sum"), scaled("cm_scaled");
    sum_f(x) = a(x) + b(x) * s;
    scaled(x) = cast<double>(a(x)) * d;
    Callable fn = Pipeline({sum_f, scaled}).compile_to_callable({a, s, b, d});
    Buffer<int> ab(6), bb(6), o1(6);
    Buffer<double> o2(6);
    for (int i = 0; i < 6; i++) {
        ab(i) = i;
        bb(i) = 10 * i;
    }
    fn(ab, 3, bb, 0.5, o1, o2);
    for (int i = 0; i < 6; i++) {
        EXPECT_EQ(o1(i), i + 30 * i);
        EXPECT_EQ(o2(i), i * 0.5);
    }
}

TEST(Running, CallableWithNonZeroMins) {
    ImageParam in(Int(32), 1, "in");
    Var x("x");
    Func f("callable_mins");
    f(x) = in(x) * 2;
    Callable fn = Pipeline(f).compile_to_callable({in});
    Buffer<int> ib(10), ob(4);
    ib.set_min(-5);
    for (int i = -5; i < 5; i++) ib(i) = i;
    ob.set_min(-3);
    fn(ib, ob);
    for (int i = -3; i < 1; i++) EXPECT_EQ(ob(i), 2 * i);
}

TEST(Running, TargetHost) {
    Target t = Target::host();
    EXPECT_EQ(t.arch(), Target::Arch::Host);
    EXPECT_FALSE(t.str().empty());
    EXPECT_GE(t.natural_vector_size(Float(32)), 1);
    EXPECT_GE(t.natural_vector_size<uint8_t>(), t.natural_vector_size<float>());
    Target narrow = t.without_feature("avx512");
    EXPECT_FALSE(narrow.has_feature("avx512"));
    EXPECT_LE(narrow.natural_vector_size(Float(32)), t.natural_vector_size(Float(32)));
    Var x("x");
    Func f("target_f");
    f(x) = x * 2;
    f.vectorize(x, 16);
    Buffer<int> o = f.realize({37}, narrow);
    for (int i = 0; i < 37; i++) EXPECT_EQ(o(i), 2 * i);
    Buffer<int> o2 = f.realize({37}, t);
    for (int i = 0; i < 37; i++) EXPECT_EQ(o2(i), 2 * i);
}

// A default-constructed Target is the host (it held no data before: every use crashed).
TEST(Running, DefaultTargetIsTheHost) {
    Target t;
    EXPECT_EQ(t, Target::host());
    EXPECT_EQ(t.arch(), Target::Arch::Host);
    EXPECT_EQ(t.str(), Target::host().str());
    Var x("x");
    Func f("default_target_f");
    f(x) = x + 1;
    Buffer<int> o = f.realize({5}, t);
    for (int i = 0; i < 5; i++) EXPECT_EQ(o(i), i + 1);
    Target copied = t;
    copied = Target();
    EXPECT_EQ(copied, t);
}

TEST(Running, TargetFromString) {
    EXPECT_EQ(Target::from_string("host"), Target::host());
    EXPECT_TRUE(Target::from_string("host-fma").has_feature("fma"));
    using weft_test::error_of;
    EXPECT_NE(error_of([] { Target::from_string("arm-linux"); }).find("starts with \"host\""), std::string::npos);
    EXPECT_NE(error_of([] { Target::from_string("host-no_such_feature"); }).find("no_such_feature"), std::string::npos);
    EXPECT_NE(error_of([] { Target::from_string("host--fma"); }).find("empty feature"), std::string::npos);
    if (!cuda_available()) {
        std::string e = error_of([] { Target::from_string("host-cuda"); });
        EXPECT_NE(e.find("libcuda.so.1"), std::string::npos) << e;
    } else {
        EXPECT_TRUE(Target::from_string("host-cuda").has_feature("cuda"));
    }
}

TEST(Running, LargeParallelRealize) {
    Var x("x"), y("y"), yo("yo"), yi("yi");
    Func f("big_par");
    f(x, y) = cast<float>(x) * 0.5f + cast<float>(y);
    f.split(y, yo, yi, 8).parallel(yo).vectorize(x, 8);
    Buffer<float> o = f.realize({257, 131});
    for (int j = 0; j < 131; j += 13)
        for (int i = 0; i < 257; i += 7) EXPECT_FLOAT_EQ(o(i, j), i * 0.5f + j);
    EXPECT_FLOAT_EQ(o(256, 130), 256 * 0.5f + 130);
}

TEST(Running, LoweredIRIsText) {
    Var x("x");
    Func f("lowered_f");
    f(x) = x + 1;
    std::string ir = Pipeline(f).lowered_ir({8});
    EXPECT_FALSE(ir.empty());
    EXPECT_CONTAINS(ir, "lowered_f");
}

// A deep expression (a chain of 120,000 operations, as a long unrolled polynomial or a chain of
// inlined Funcs makes): defining, lowering, compiling and releasing it recurse over it, deeper
// than the test thread's 8 MiB stack holds (about 50,000 levels defining it, 10,000 compiling):
// each recursion moves to a thread with a large stack when the stack runs low, and the Expr is
// released by a loop. (Shorter under AddressSanitizer, slower with its larger frames.)
TEST(Running, DeepExpressionCompiles) {
#if defined(__SANITIZE_ADDRESS__)
    const int depth = 30000;
#else
    const int depth = 120000;
#endif
    Var x("x");
    Expr e = cast<float>(x);
    for (int i = 0; i < depth; i++) e = e * 0.5f + 1.0f;
    Func f("deep_chain");
    f(x) = e;
    Buffer<float> o = f.realize({4});
    EXPECT_NEAR(o(3), 2.0f, 1e-4f);  // the fixed point of v * 0.5 + 1
}

}  // namespace

namespace {

// Inlined chains whose trees are exponential in their length: each Func using the last three
// times at one point (80 Funcs: 3^80 as a tree), or at three neighbouring points (a 3-point
// stencil 24 deep: 3^24). Calls with the same (simplified) arguments share one replacement and
// shared values are bound to Lets, so both compile in well under a second.
TEST(Running, InlinedChainsStayGraphs) {
    Var x("x");
    {
        const int n = 80;
        Func prev("c0");
        prev(x) = cast<float>(x) * 0.01f;
        for (int i = 1; i <= n; i++) {
            Func f("c" + std::to_string(i));
            f(x) = prev(x) * prev(x) * 0.5f + prev(x) * 0.25f + 0.1f;  // (to about 0.148)
            prev = f;
        }
        Buffer<float> o = prev.realize({16});
        for (int i = 0; i < 16; i++) {
            double v = i * 0.01;
            for (int k = 0; k < n; k++) v = v * v * 0.5 + v * 0.25 + 0.1;
            EXPECT_NEAR(o(i), v, 1e-5) << i;
        }
    }
    {
        const int n = 48, w = 40;
        Func prev("s0");
        prev(x) = cast<float>(x % 7) + cast<float>(x % 3) * 0.5f;
        for (int i = 1; i <= n; i++) {
            Func f("s" + std::to_string(i));
            f(x) = (prev(x - 1) + prev(x) * 2.0f + prev(x + 1)) * 0.25f;
            prev = f;
        }
        Buffer<float> o = prev.realize({w});
        std::vector<double> v(w + 2 * n);
        for (int i = 0; i < (int)v.size(); i++) {
            int xi = i - n;  // (weft's % rounds toward negative infinity)
            v[i] = (double)(((xi % 7) + 7) % 7) + (double)(((xi % 3) + 3) % 3) * 0.5;
        }
        for (int k = 0; k < n; k++) {
            std::vector<double> u(v.size(), 0.0);
            for (size_t i = 1; i + 1 < v.size(); i++) u[i] = (v[i - 1] + 2 * v[i] + v[i + 1]) * 0.25;
            v = u;
        }
        for (int i = 0; i < w; i++) EXPECT_NEAR(o(i), v[i + n], 1e-4) << i;
    }
}

// The unscheduled reference compiled by LLVM gives what the interpreter gives, whatever the
// pipeline's own schedule; bad outputs and unbound inputs are errors, as for the interpreter.
TEST(Reference, CompiledMatchesInterpreted) {
    Var x("x"), y("y");
    ImageParam in(Int(32), 2, "ref_in");
    Param<int> k("ref_k");
    Func g("ref_g"), h("ref_h");
    RDom r(0, 5, "ref_r");
    g(x, y) = in(clamp(x + y - 2, 0, 19), y) * k + select(x % 3 == 0, y, -y);
    h(x, y) = 0;
    h(x, y) += g(x + r.x - 2, y) / 3 + r.x;  // an update over an RDom
    h.update().reorder(x, r.x, y);
    g.compute_at(h, y).vectorize(x, 8);  // ignored by both references
    h.parallel(y).vectorize(x, 4);

    Buffer<int> input(20, 7);
    for (int j = 0; j < 7; j++)
        for (int i = 0; i < 20; i++) input(i, j) = (i * 37 + j * 11) % 101 - 50;
    in.set(input);
    k.set(-3);
    Buffer<int> a(20, 7), b(20, 7), c(20, 7);
    internal::interpret_pipeline(Pipeline(h), {a});
    internal::compiled_reference(Pipeline(h), {b});
    h.realize(c);
    for (int j = 0; j < 7; j++)
        for (int i = 0; i < 20; i++) {
            ASSERT_EQ(a(i, j), b(i, j)) << i << "," << j;
            ASSERT_EQ(a(i, j), c(i, j)) << i << "," << j;
        }

    EXPECT_THROW(internal::compiled_reference(Pipeline(h), {Buffer<void>()}), Error);
    ImageParam unbound(Float(32), 1, "ref_unbound");
    Func u("ref_u");
    u(x) = unbound(x) * 2.0f;
    Buffer<float> uo(4);
    EXPECT_THROW(internal::compiled_reference(Pipeline(u), {uo}), Error);
}

}  // namespace

