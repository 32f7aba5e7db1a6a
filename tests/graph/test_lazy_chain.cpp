// Deferred calls (weft/Lazy.h): separately built pipelines chained lazily and compiled as one.
// Each chain's result is compared bit for bit with the same parts called one by one.
#include <gtest/gtest.h>
#include <weft/weft.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "lang/lang_test_util.h"

using namespace weft;
using weft_test::error_of;

namespace {

/** A part: a pipeline built on its own, ImageParam in, Func out, and its Callable. */
struct Part {
    ImageParam in;
    Param<float> k;
    Func out;
    Callable fn;
};

/** 3x3 box filter pulled toward the input by k (a denoise). */
Part denoise(bool scheduled) {
    Part p{ImageParam(Float(32), 2, "in"), Param<float>("strength"), Func("denoise"), {}};
    Var x("x"), y("y");
    Func c = BoundaryConditions::repeat_edge(p.in);
    Func bx("bx");
    bx(x, y) = c(x - 1, y) + c(x, y) + c(x + 1, y);
    Func b("box");
    b(x, y) = (bx(x, y - 1) + bx(x, y) + bx(x, y + 1)) * (1.0f / 9);
    p.out(x, y) = p.in(x, y) + p.k * (b(x, y) - p.in(x, y));
    if (scheduled) {
        Var yo, yi;
        p.out.split(y, yo, yi, 16).parallel(yo).vectorize(x, 8);
        bx.compute_at(p.out, yo).vectorize(x, 8);
    }
    p.fn = Pipeline(p.out).compile_to_callable({p.in, p.k});
    return p;
}

/** Pointwise colour curve 1 - exp(-k x). */
Part colour(bool scheduled) {
    Part p{ImageParam(Float(32), 2, "in"), Param<float>("gain"), Func("colour"), {}};
    Var x("x"), y("y");
    p.out(x, y) = 1.0f - exp(-p.k * p.in(x, y));
    if (scheduled) p.out.vectorize(x, 16).parallel(y);
    p.fn = Pipeline(p.out).compile_to_callable({p.in, p.k});
    return p;
}

/** Unsharp mask: x + k (x - blur(x)), the blur separable over a repeat_edge border. */
Part sharpen(bool scheduled) {
    Part p{ImageParam(Float(32), 2, "in"), Param<float>("amount"), Func("sharpen"), {}};
    Var x("x"), y("y");
    Func c = BoundaryConditions::repeat_edge(p.in);
    Func h("h"), v("v");
    h(x, y) = 0.25f * c(x - 1, y) + 0.5f * c(x, y) + 0.25f * c(x + 1, y);
    v(x, y) = 0.25f * h(x, y - 1) + 0.5f * h(x, y) + 0.25f * h(x, y + 1);
    p.out(x, y) = p.in(x, y) + p.k * (p.in(x, y) - v(x, y));
    if (scheduled) {
        h.compute_root().vectorize(x, 8);
        p.out.vectorize(x, 8);
    }
    p.fn = Pipeline(p.out).compile_to_callable({p.in, p.k});
    return p;
}

/** Smoothstep tone curve, clamped. */
Part tone(bool scheduled) {
    Part p{ImageParam(Float(32), 2, "in"), Param<float>("lift"), Func("tone"), {}};
    Var x("x"), y("y");
    Expr t = clamp(p.in(x, y) + p.k, 0.0f, 1.0f);
    p.out(x, y) = t * t * (3.0f - 2.0f * t);
    if (scheduled) p.out.vectorize(x, 8);
    p.fn = Pipeline(p.out).compile_to_callable({p.in, p.k});
    return p;
}

Buffer<float> photo(int w, int h, int seed = 0) {
    Buffer<float> b(w, h);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            b(x, y) = 0.5f + 0.4f * std::sin(0.05f * x + 0.3f * seed) * std::cos(0.07f * y) + 0.05f * ((x * 7 + y * 13 + seed) % 5);
    return b;
}

void expect_same_bits(const Buffer<float> &a, const Buffer<float> &b) {
    ASSERT_EQ(a.width(), b.width());
    ASSERT_EQ(a.height(), b.height());
    int bad = 0;
    for (int y = 0; y < a.height(); y++)
        for (int x = 0; x < a.width(); x++)
            if (std::memcmp(&a(x, y), &b(x, y), sizeof(float)) != 0 && bad++ < 5)
                ADD_FAILURE() << "at (" << x << ", " << y << "): " << a(x, y) << " vs " << b(x, y);
    EXPECT_EQ(bad, 0);
}

/** The four parts one by one (eager) and chained (lazy). */
void check_image_chain(bool s0, bool s1, bool s2, bool s3, int w, int h) {
    Part a = denoise(s0), b = colour(s1), c = sharpen(s2), d = tone(s3);
    Buffer<float> in = photo(w, h);
    Buffer<float> t0(w, h), t1(w, h), t2(w, h), eager(w, h);
    a.fn(in, 0.7f, t0);
    b.fn(t0, 1.3f, t1);
    c.fn(t1, 0.8f, t2);
    d.fn(t2, -0.05f, eager);

    LazyBuffer l0 = a.fn.defer({w, h}, in, 0.7f);
    LazyBuffer l1 = b.fn.defer({w, h}, l0, 1.3f);
    LazyBuffer l2 = c.fn.defer({w, h}, l1, 0.8f);
    LazyBuffer l3 = d.fn.defer({w, h}, l2, -0.05f);
    EXPECT_FALSE(l3.is_buffer());
    EXPECT_EQ(l3.type(), Float(32));
    EXPECT_EQ(l3.sizes(), (std::vector<int>{w, h}));
    Buffer<float> lazy = l3.realize();
    expect_same_bits(lazy, eager);
}

/** Sets an environment variable for a scope. */
struct ScopedEnv {
    std::string name, old;
    bool had;
    ScopedEnv(const char *n, const char *v) : name(n) {
        const char *o = std::getenv(n);
        had = o != nullptr;
        if (o) old = o;
        setenv(n, v, 1);
    }
    ~ScopedEnv() {
        if (had) setenv(name.c_str(), old.c_str(), 1);
        else unsetenv(name.c_str());
    }
};

}  // namespace

TEST(LazyChain, UnscheduledPartsFusedMatchEagerBitForBit) { check_image_chain(false, false, false, false, 157, 93); }

TEST(LazyChain, ScheduledPartsKeepTheirSchedules) { check_image_chain(true, true, true, true, 130, 70); }

TEST(LazyChain, MixedScheduledAndUnscheduledParts) { check_image_chain(true, false, true, false, 96, 41); }

TEST(LazyChain, WithoutAutomaticScheduling) {
    ScopedEnv off("WEFT_AUTOSCHEDULE", "0");
    check_image_chain(false, false, false, false, 64, 33);
    check_image_chain(true, false, false, true, 64, 33);
}

TEST(LazyChain, TinyAndDegenerateShapes) {
    check_image_chain(false, false, false, false, 1, 1);
    check_image_chain(true, true, true, true, 3, 1);
    check_image_chain(false, true, false, true, 1, 17);
}

TEST(LazyChain, CompiledOncePerStructureAndShape) {
    Part a = denoise(false), c = sharpen(false);
    Buffer<float> in = photo(80, 60);
    auto run = [&](float k) {
        LazyBuffer v = c.fn.defer({80, 60}, a.fn.defer({80, 60}, in, k), 0.5f);
        return Buffer<float>(v.realize());
    };
    Buffer<float> first = run(0.25f);
    CacheStats before = cache_stats();
    Buffer<float> second = run(0.75f);  // a new chain of the same structure, another scalar
    CacheStats after = cache_stats();
    EXPECT_EQ(after.compilations, before.compilations);
    EXPECT_GT(after.hits, before.hits);
    // The scalar reached the kernel: the result is that of the eager calls with 0.75.
    Buffer<float> t(80, 60), eager(80, 60);
    a.fn(in, 0.75f, t);
    c.fn(t, 0.5f, eager);
    expect_same_bits(second, eager);
    // Another shape compiles again.
    Buffer<float> in2 = photo(81, 60);
    LazyBuffer v = c.fn.defer({81, 60}, a.fn.defer({81, 60}, in2, 0.5f), 0.5f);
    v.realize();
    EXPECT_GT(cache_stats().compilations, after.compilations);
}

TEST(LazyChain, OnePartCalledTwiceWithOtherScalars) {
    Part s = sharpen(false);
    Buffer<float> in = photo(70, 50);
    Buffer<float> t(70, 50), eager(70, 50);
    s.fn(in, 0.5f, t);
    s.fn(t, 1.5f, eager);
    Buffer<float> lazy = s.fn.defer({70, 50}, s.fn.defer({70, 50}, in, 0.5f), 1.5f).realize();
    expect_same_bits(lazy, eager);
    Part s2 = sharpen(true);
    s2.fn(in, 0.5f, t);
    s2.fn(t, 1.5f, eager);
    lazy = s2.fn.defer({70, 50}, s2.fn.defer({70, 50}, in, 0.5f), 1.5f).realize();
    expect_same_bits(lazy, eager);
}

TEST(LazyChain, SharedProducerAndSeveralValuesInOneCall) {
    // A diamond: one value read by two parts; then both results and a third asked for at once.
    Part a = denoise(false), b = colour(false), c = sharpen(false);
    Var x("x"), y("y");
    ImageParam p(Float(32), 2, "p"), q(Float(32), 2, "q");
    Func mix("mix");
    mix(x, y) = 0.5f * p(x, y) + 0.5f * q(x, y);
    Callable mixer = Pipeline(mix).compile_to_callable({p, q});

    const int w = 66, h = 45;
    Buffer<float> in = photo(w, h, 3);
    Buffer<float> e0(w, h), e1(w, h), e2(w, h), e3(w, h);
    a.fn(in, 0.5f, e0);
    b.fn(e0, 2.0f, e1);
    c.fn(e0, 1.0f, e2);
    mixer(e1, e2, e3);

    LazyBuffer l0 = a.fn.defer({w, h}, in, 0.5f);
    LazyBuffer l1 = b.fn.defer({w, h}, l0, 2.0f);
    LazyBuffer l2 = c.fn.defer({w, h}, l0, 1.0f);
    LazyBuffer l3 = mixer.defer({w, h}, l1, l2);
    Realization r = realize({l3, l1, l0});
    ASSERT_EQ(r.size(), 3u);
    {
        SCOPED_TRACE("mix");
        expect_same_bits(Buffer<float>(r[0]), e3);
    }
    {
        SCOPED_TRACE("colour");
        expect_same_bits(Buffer<float>(r[1]), e1);
    }
    {
        SCOPED_TRACE("denoise");
        expect_same_bits(Buffer<float>(r[2]), e0);
    }
    // Into existing buffers.
    Buffer<float> o3(w, h), o2(w, h);
    realize({l3, l2}, {o3, o2});
    SCOPED_TRACE("into buffers");
    expect_same_bits(o3, e3);
    expect_same_bits(o2, e2);
}

TEST(LazyChain, SeveralOutputsAndIntegerTypes) {
    // A part with two outputs of other types, read by a part taking both.
    Var x("x"), y("y");
    ImageParam in(UInt(8), 2, "in");
    Func lo("lo"), hi("hi");
    lo(x, y) = cast<int16_t>(in(x, y)) - 100;
    hi(x, y) = cast<int32_t>(in(x, y)) * 3 + x;
    Callable split = Pipeline({lo, hi}).compile_to_callable({in});
    ImageParam a(Int(16), 2, "a"), b(Int(32), 2, "b");
    Func join("join");
    Func ca = BoundaryConditions::repeat_edge(a);
    join(x, y) = cast<int32_t>(ca(x - 1, y) + ca(x + 1, y)) + b(x, y);
    Callable joiner = Pipeline(join).compile_to_callable({a, b});

    Buffer<uint8_t> img(40, 30);
    for (int yy = 0; yy < 30; yy++)
        for (int xx = 0; xx < 40; xx++) img(xx, yy) = (uint8_t)(xx * 31 + yy * 17);
    Buffer<int16_t> elo(40, 30);
    Buffer<int32_t> ehi(40, 30), eager(40, 30);
    split(img, elo, ehi);
    joiner(elo, ehi, eager);

    std::vector<LazyBuffer> parts = split.defer_outputs({{40, 30}, {40, 30}}, img);
    ASSERT_EQ(parts.size(), 2u);
    EXPECT_EQ(parts[0].type(), Int(16));
    EXPECT_EQ(parts[1].type(), Int(32));
    Buffer<int32_t> lazy = joiner.defer({40, 30}, parts[0], parts[1]).realize();
    for (int yy = 0; yy < 30; yy++)
        for (int xx = 0; xx < 40; xx++) ASSERT_EQ(lazy(xx, yy), eager(xx, yy)) << xx << ", " << yy;
}

TEST(LazyChain, ProducerOfAnotherShapeAndBufferLeaves) {
    // A downsampling part then an upsampling one: each seam has its own shape; the weights of
    // the second are a Buffer inside its definition.
    Var x("x"), y("y");
    ImageParam in(Float(32), 2, "in");
    Func down("down");
    Func c = BoundaryConditions::repeat_edge(in);
    down(x, y) = 0.25f * (c(2 * x, 2 * y) + c(2 * x + 1, 2 * y) + c(2 * x, 2 * y + 1) + c(2 * x + 1, 2 * y + 1));
    Callable downer = Pipeline(down).compile_to_callable({in});
    Buffer<float> weights(2);
    weights(0) = 0.75f;
    weights(1) = 0.25f;
    ImageParam small(Float(32), 2, "small");
    Func up("up");
    Func cs = BoundaryConditions::repeat_edge(small);
    up(x, y) = weights(x % 2) * cs(x / 2, y / 2) + weights(1 - x % 2) * cs(x / 2 + 1, y / 2);
    Callable upper = Pipeline(up).compile_to_callable({small});

    Buffer<float> img = photo(64, 48);
    Buffer<float> half(32, 24), eager(64, 48);
    downer(img, half);
    upper(half, eager);
    LazyBuffer h = downer.defer({32, 24}, img);
    Buffer<float> lazy = upper.defer({64, 48}, h).realize();
    expect_same_bits(lazy, eager);
}

TEST(LazyChain, ValuesThatAreBuffers) {
    Buffer<float> b = photo(5, 4);
    LazyBuffer v(b);
    EXPECT_TRUE(v.is_buffer());
    EXPECT_EQ(v.sizes(), (std::vector<int>{5, 4}));
    Buffer<float> same = v.realize();
    EXPECT_EQ(same.contents(), b.contents());
    Buffer<float> copy(5, 4);
    v.realize(copy);
    expect_same_bits(copy, b);
}

TEST(LazyChain, EditedPartIsRebuilt) {
    Var x("x"), y("y");
    ImageParam in(Float(32), 2, "in");
    Func f("f");
    f(x, y) = in(x, y) * 2.0f;
    Callable fn = Pipeline(f).compile_to_callable({in});
    Part t = tone(false);
    Buffer<float> img = photo(20, 10);
    Buffer<float> a = t.fn.defer({20, 10}, fn.defer({20, 10}, img), 0.0f).realize();
    f.vectorize(x, 4);  // a schedule: same values
    Buffer<float> b = t.fn.defer({20, 10}, fn.defer({20, 10}, img), 0.0f).realize();
    expect_same_bits(a, b);
}

TEST(LazyChain, ConcurrentRealizes) {
    Part a = denoise(false), c = sharpen(true);
    Buffer<float> in = photo(90, 64);
    Buffer<float> t(90, 64), eager(90, 64);
    a.fn(in, 0.5f, t);
    c.fn(t, 1.0f, eager);
    std::vector<Buffer<float>> got(4);
    std::vector<std::thread> ts;
    for (int i = 0; i < 4; i++)
        ts.emplace_back([&, i] {
            for (int rep = 0; rep < 3; rep++) got[i] = c.fn.defer({90, 64}, a.fn.defer({90, 64}, in, 0.5f), 1.0f).realize();
        });
    for (auto &th : ts) th.join();
    for (auto &g : got) expect_same_bits(g, eager);
    // A chain whose first realize times a vertical fusion (colour -> denoise in strips), first
    // realized from four threads at once: one decides, the others wait for it; all get eager's.
    // (An intermediate larger than L2: 1024 x 512 floats.)
    Part c2 = colour(true), d2 = denoise(true);
    Buffer<float> in2 = photo(1024, 512), t2(1024, 512), eager2(1024, 512);
    c2.fn(in2, 1.3f, t2);
    d2.fn(t2, 0.7f, eager2);
    std::vector<std::thread> ts2;
    for (int i = 0; i < 4; i++)
        ts2.emplace_back([&, i] {
            for (int rep = 0; rep < 3; rep++)
                got[i] = d2.fn.defer({1024, 512}, c2.fn.defer({1024, 512}, in2, 1.3f), 0.7f).realize();
        });
    for (auto &th : ts2) th.join();
    for (auto &g : got) expect_same_bits(g, eager2);
}

/** A 3x3 convolution with a bias and ReLU, register-tiled as a library would ship it: the
    reduction computed per 16-wide tile of its output. Input with a one-pixel border. */
struct ConvPart {
    ImageParam in{Float(32), 2, "conv_in"}, wts{Float(32), 2, "conv_w"};
    Param<float> bias{"bias"};
    Func cv{"conv"}, relu{"conv_relu"};
    Callable fn;
    ConvPart() {
        Var x("x"), y("y"), xo("xo"), xi("xi");
        RDom r(0, 3, 0, 3, "r");
        cv(x, y) = bias;
        cv(x, y) += wts(r.x, r.y) * in(x + r.x, y + r.y);
        relu(x, y) = max(0.0f, cv(x, y));
        relu.split(x, xo, xi, 16).vectorize(xi, 8).parallel(y);
        cv.compute_at(relu, xo).vectorize(x, 8);
        cv.update().reorder(x, r.x, r.y, y).vectorize(x, 8);
        fn = Pipeline(relu).compile_to_callable({in, wts, bias});
    }
};
/** A residual add, unscheduled, its Vars named unlike the producer's. */
Callable residual_add() {
    ImageParam a(Float(32), 2, "a"), res(Float(32), 2, "res");
    Var i("i"), j("j");
    Func s("residual");
    s(i, j) = a(i, j) + 0.5f * res(i, j);
    return Pipeline(s).compile_to_callable({a, res});
}

TEST(LazyChain, AnEpilogueRunsInItsScheduledProducersLoops) {
    // conv + bias + ReLU (scheduled) then a residual add (a pointwise part without a schedule):
    // the add is computed in the convolution's loops, so the convolution's result never goes
    // to memory (no buffer of its size is held), and the values are eager's, bit for bit.
    const int w = 200, h = 150;
    ConvPart conv;
    Callable add = residual_add();
    Buffer<float> in = photo(w + 2, h + 2, 1), res = photo(w, h, 2), wts(3, 3);
    for (int j = 0; j < 3; j++)
        for (int i = 0; i < 3; i++) wts(i, j) = 0.1f * (float)(i + 2 * j) - 0.35f;
    Buffer<float> t(w, h), eager(w, h);
    conv.fn(in, wts, 0.05f, t);
    add(t, res, eager);
    auto chain = [&] { return add.defer({w, h}, conv.fn.defer({w, h}, in, wts, 0.05f), res); };
    Buffer<float> first = chain().realize();
    expect_same_bits(first, eager);
    MemoryStats warm = memory_stats();
    reset_peak_memory();
    Buffer<float> again = chain().realize();
    expect_same_bits(again, eager);
    EXPECT_LT(memory_stats().peak - warm.in_use, (uint64_t)w * h * 4 / 4) << "the convolution's result was stored";
    // Asked for as well, the convolution's result is computed at root and both are right.
    LazyBuffer c = conv.fn.defer({w, h}, in, wts, 0.05f);
    LazyBuffer s = add.defer({w, h}, c, res);
    Buffer<float> got_c(w, h), got_s(w, h);
    weft::realize({c, s}, {got_c, got_s});
    expect_same_bits(got_c, t);
    expect_same_bits(got_s, eager);
    // An epilogue whose Vars are the producer's, swapped (its first dimension named "y").
    {
        ImageParam b(Float(32), 2, "b");
        Var y("y"), x("x");
        Func scaled("scaled");
        scaled(y, x) = 2.0f * b(y, x) + cast<float>(x);
        Callable scale = Pipeline(scaled).compile_to_callable({b});
        Buffer<float> want(w, h);
        scale(t, want);
        expect_same_bits(scale.defer({w, h}, conv.fn.defer({w, h}, in, wts, 0.05f)).realize(), want);
    }
    // Read at another point (a shift), the add is no epilogue: still eager's values.
    ImageParam a(Float(32), 2, "a");
    Var i("i"), j("j");
    Func shifted("shifted");
    shifted(i, j) = a(i, j) + a(min(i + 1, w - 1), j);
    Callable shift = Pipeline(shifted).compile_to_callable({a});
    Buffer<float> want(w, h);
    shift(t, want);
    expect_same_bits(shift.defer({w, h}, conv.fn.defer({w, h}, in, wts, 0.05f)).realize(), want);
    // An epilogue asked for over more than its producer computes: the same Error as without
    // the fusion, naming both parts, and nothing written.
    Buffer<float> big_res = photo(w + 3, h, 3), big(w + 3, h);
    big(0, 0) = 42.0f;
    std::string m = error_of([&] { add.defer({w + 3, h}, conv.fn.defer({w, h}, in, wts, 0.05f), big_res).realize(big); });
    EXPECT_CONTAINS(m, "part \"residual\" reads the output of part \"conv_relu\" in dimension 0 at [0, 202]");
    EXPECT_EQ(big(0, 0), 42.0f);
}

TEST(LazyChain, AnEpilogueRunsInTheBlocksOfAScheduledReduction) {
    // A matmul scheduled in register blocks on its own output (mm(j, t) += ...; no wrapper
    // Func), then bias + GELU without a schedule: the epilogue loops over the matmul's blocks
    // and each block of the matmul is computed there, so no buffer of the matmul's size is
    // held; the values are eager's, bit for bit, on sizes that are and are not multiples of
    // the block.
    for (auto [n, tokens, k_in] : {std::tuple{128, 24, 48}, std::tuple{150, 13, 37}}) {
        SCOPED_TRACE(std::to_string(n) + "x" + std::to_string(tokens));
        ImageParam a(Float(32), 2, "a"), w(Float(32), 2, "w");
        Var j("j"), t("t"), jo("jo"), to("to"), ji("ji"), ti("ti");
        RDom k(0, k_in, "k");
        Func mm("linear");
        mm(j, t) = 0.0f;
        mm(j, t) += a(k, t) * w(j, k);
        mm.vectorize(j, 16).parallel(t);
        mm.update().tile(j, t, jo, to, ji, ti, 32, 4).reorder(ji, ti, k, jo, to).vectorize(ji, 16).unroll(ji).unroll(ti).parallel(to);
        Callable linear = Pipeline(mm).compile_to_callable({a, w});
        ImageParam h(Float(32), 2, "h"), bias(Float(32), 1, "bias");
        Var x("x"), y("y");
        Func g("bias_gelu");
        Expr v = h(x, y) + bias(x);
        g(x, y) = 0.5f * v * (1.0f + tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
        Callable act = Pipeline(g).compile_to_callable({h, bias});
        Buffer<float> A = photo(k_in, tokens, 1), W = photo(n, k_in, 2), B = photo(n, 1, 3);
        Buffer<float> b1(n);
        for (int i = 0; i < n; i++) b1(i) = B(i, 0) - 0.5f;
        Buffer<float> mid(n, tokens), eager(n, tokens);
        linear(A, W, mid);
        act(mid, b1, eager);
        auto chain = [&] { return act.defer({n, tokens}, linear.defer({n, tokens}, A, W), b1); };
        expect_same_bits(chain().realize(), eager);
        MemoryStats warm = memory_stats();
        reset_peak_memory();
        Buffer<float> again = chain().realize();
        expect_same_bits(again, eager);
        EXPECT_LT(memory_stats().peak - warm.in_use, (uint64_t)n * tokens * 4 / 4) << "the matmul's result was stored";
        // Asked for as well, the matmul is computed at root: both right.
        LazyBuffer m = linear.defer({n, tokens}, A, W);
        LazyBuffer r = act.defer({n, tokens}, m, b1);
        Buffer<float> got_m(n, tokens), got_r(n, tokens);
        weft::realize({m, r}, {got_m, got_r});
        expect_same_bits(got_m, mid);
        expect_same_bits(got_r, eager);
        // Hostile: the epilogue deferred over more columns than the matmul computes (its bias
        // long enough): the seam's Error naming both parts, before anything runs.
        Buffer<float> big_bias(n + 5), big(n + 5, tokens);
        big(0, 0) = 42.0f;
        std::string msg = error_of([&] { act.defer({n + 5, tokens}, linear.defer({n, tokens}, A, W), big_bias).realize(big); });
        EXPECT_CONTAINS(msg, "reads the output of part \"linear\" in dimension 0");
        EXPECT_EQ(big(0, 0), 42.0f);
    }
}

TEST(LazyChain, EpiloguesOfReductionsUnderOtherSchedules) {
    // The reduction's update under schedules a user might write: the default (its loops over
    // every point outside the reduction), the reduction split with its inner half unrolled in
    // the block, a block wider than the output, and a reduction read elsewhere than at its
    // point (a scan: no epilogue). Each deferred chain gives eager's bits.
    const int n = 45, tokens = 7, k_in = 19;
    Buffer<float> A = photo(k_in, tokens, 5), W = photo(n, k_in, 6), B = photo(n, 1, 7);
    Buffer<float> b1(n);
    for (int i = 0; i < n; i++) b1(i) = B(i, 0) - 0.5f;
    ImageParam h(Float(32), 2, "h"), bias(Float(32), 1, "bias");
    Var x("x"), y("y");
    Func g("bias_relu");
    g(x, y) = max(h(x, y) + bias(x), 0.0f);
    Callable act = Pipeline(g).compile_to_callable({h, bias});
    for (int variant = 0; variant < 4; variant++) {
        SCOPED_TRACE("variant " + std::to_string(variant));
        ImageParam a(Float(32), 2, "a"), w(Float(32), 2, "w");
        Var j("j"), t("t"), jo("jo"), to("to"), ji("ji"), ti("ti");
        RDom k(0, k_in, "k");
        RVar ko("ko"), ki("ki");
        Func mm("linear");
        mm(j, t) = 0.0f;
        if (variant == 3) mm(j, t) += a(k, t) * w(j, k) + mm(max(j - 1, 0), t) * 0.25f;
        else mm(j, t) += a(k, t) * w(j, k);
        if (variant == 0) mm.update().parallel(t);
        if (variant == 1)
            mm.update().tile(j, t, jo, to, ji, ti, 16, 2).split(k, ko, ki, 4).reorder(ji, ti, ki, ko, jo, to).vectorize(ji, 8).unroll(ki);
        if (variant == 2) mm.update().tile(j, t, jo, to, ji, ti, 64, 8).reorder(ji, ti, k, jo, to).vectorize(ji, 16).unroll(ti);
        if (variant == 3) mm.update().parallel(t);
        Callable linear = Pipeline(mm).compile_to_callable({a, w});
        Buffer<float> mid(n, tokens), eager(n, tokens);
        linear(A, W, mid);
        act(mid, b1, eager);
        expect_same_bits(act.defer({n, tokens}, linear.defer({n, tokens}, A, W), b1).realize(), eager);
    }
}

TEST(LazyChain, ScheduledPartsFusedVertically) {
    // Scheduled parts whose consumer loops over strips of rows: the producer may be computed
    // per strip of its consumer (decided by timing at the first realize; WEFT_CHAIN_VERTICAL=all
    // fuses every such seam, =off none; an intermediate that fits in L2 is not timed). Eager's
    // bits in every mode, at a large and a small odd size; with the seam fused, colour's result
    // is not held whole.
    const char *old = std::getenv("WEFT_CHAIN_VERTICAL");
    std::string saved = old ? old : "";
    std::map<std::string, uint64_t> peak;
    for (const char *mode : {"all", "off", ""}) {
        for (auto [w, h] : {std::pair{1024, 600}, std::pair{45, 19}}) {
            SCOPED_TRACE(std::string("mode '") + mode + "', " + std::to_string(w) + "x" + std::to_string(h));
            setenv("WEFT_CHAIN_VERTICAL", mode, 1);
            // colour (rows in parallel) -> denoise (strips of 16 rows) -> tone
            Part c = colour(true), a = denoise(true), s2 = tone(true);
            Buffer<float> img = photo(w, h, 8), t1(w, h), t2(w, h), eager(w, h);
            c.fn(img, 1.3f, t1);
            a.fn(t1, 0.7f, t2);
            s2.fn(t2, -0.05f, eager);
            auto chain = [&] { return s2.fn.defer({w, h}, a.fn.defer({w, h}, c.fn.defer({w, h}, img, 1.3f), 0.7f), -0.05f); };
            expect_same_bits(chain().realize(), eager);
            MemoryStats warm = memory_stats();
            reset_peak_memory();
            Buffer<float> again = chain().realize();
            expect_same_bits(again, eager);
            if (w == 1024) peak[mode] = memory_stats().peak - warm.in_use;
        }
    }
    // Apart, colour's and denoise's results are both held while denoise runs; with colour
    // computed per strip of denoise, only denoise's.
    EXPECT_LT(peak["all"], peak["off"]);
    // Hostile: denoise deferred over more rows than colour computes, with the seam timed or
    // fused: the seam's Error naming both parts, before anything runs.
    for (const char *mode : {"all", ""}) {
        setenv("WEFT_CHAIN_VERTICAL", mode, 1);
        Part c = colour(true), a = denoise(true);
        Buffer<float> img = photo(1024, 700, 9), out(1024, 700);
        out(0, 0) = 42.0f;
        std::string msg = error_of([&] { a.fn.defer({1024, 700}, c.fn.defer({1024, 600}, img, 1.3f), 0.7f).realize(out); });
        EXPECT_CONTAINS(msg, "part \"denoise\" reads the output of part \"colour\" in dimension 1");
        EXPECT_EQ(out(0, 0), 42.0f);
    }
    if (old) setenv("WEFT_CHAIN_VERTICAL", saved.c_str(), 1);
    else unsetenv("WEFT_CHAIN_VERTICAL");
}

/** The parts of an image library as its authors would schedule them: each output in parallel
    strips of rows, a separable filter's first pass a sliding window inside its own strips. */
Part denoise_in_strips() {
    Part p{ImageParam(Float(32), 2, "in"), Param<float>("strength"), Func("denoise"), {}};
    Var x("x"), y("y"), yo("yo"), yi("yi");
    Func c = BoundaryConditions::repeat_edge(p.in);
    Func bx("bx"), b("box");
    bx(x, y) = c(x - 1, y) + c(x, y) + c(x + 1, y);
    b(x, y) = (bx(x, y - 1) + bx(x, y) + bx(x, y + 1)) * (1.0f / 9);
    p.out(x, y) = p.in(x, y) + p.k * (b(x, y) - p.in(x, y));
    p.out.split(y, yo, yi, 32).parallel(yo).vectorize(x, 16);
    bx.store_at(p.out, yo).compute_at(p.out, yi).vectorize(x, 16);
    p.fn = Pipeline(p.out).compile_to_callable({p.in, p.k});
    return p;
}
Part sharpen_in_strips() {
    Part p{ImageParam(Float(32), 2, "in"), Param<float>("amount"), Func("sharpen"), {}};
    Var x("x"), y("y"), yo("yo"), yi("yi");
    Func c = BoundaryConditions::repeat_edge(p.in);
    Func h("h"), v("v");
    h(x, y) = 0.25f * c(x - 1, y) + 0.5f * c(x, y) + 0.25f * c(x + 1, y);
    v(x, y) = 0.25f * h(x, y - 1) + 0.5f * h(x, y) + 0.25f * h(x, y + 1);
    p.out(x, y) = p.in(x, y) + p.k * (p.in(x, y) - v(x, y));
    p.out.split(y, yo, yi, 32).parallel(yo).vectorize(x, 16);
    h.store_at(p.out, yo).compute_at(p.out, yi).vectorize(x, 16);
    p.fn = Pipeline(p.out).compile_to_callable({p.in, p.k});
    return p;
}
/** A pointwise part in parallel strips of 16 rows; `shift` reads its input one column to the
    right (clamped), not at the point it computes. */
Part curve_in_strips(const std::string &name, bool shift = false) {
    Part p{ImageParam(Float(32), 2, "in"), Param<float>("k"), Func(name), {}};
    Var x("x"), y("y");
    Expr v = shift ? p.in(min(x + 1, p.in.width() - 1), y) : p.in(x, y);
    p.out(x, y) = v + p.k * v * (1.0f - v);
    p.out.vectorize(x, 16).parallel(y, 16);
    p.fn = Pipeline(p.out).compile_to_callable({p.in, p.k});
    return p;
}

TEST(LazyChain, ARunOfScheduledPartsFusedIntoTheOutermostStrips) {
    // denoise -> colour -> sharpen -> tone, each scheduled in strips of its own: a result its
    // reader reads only at the point it computes (denoise in colour, sharpen in tone) is inlined
    // into it, the Funcs computed in its loops (denoise's bx, sharpen's h) then computed per
    // strip; colour (read by sharpen's blur at other rows) is computed per strip. Every fused
    // result is computed per strip of tone, the outermost reader, not per strip of its own
    // reader inside that. Eager's bits at sizes the strips divide and do not; the decisions in
    // WEFT_DEBUG's output (WEFT_CHAIN_VERTICAL=all; timed, whatever is kept gives the same bits).
    const char *old = std::getenv("WEFT_CHAIN_VERTICAL");
    std::string saved = old ? old : "";
    for (int variant = 0; variant < 7; variant++) {
        const bool timed = variant == 6, shift = variant >= 3 && !timed;
        auto [w, h] = timed ? std::pair{1024, 600} : std::vector<std::pair<int, int>>{{1024, 600}, {45, 19}, {333, 77}}[variant % 3];
        setenv("WEFT_CHAIN_VERTICAL", timed ? "" : "all", 1);
        SCOPED_TRACE(std::string(timed ? "timed, " : "") + (shift ? "shifted reads, " : "") + std::to_string(w) + "x" +
                     std::to_string(h));
        Part a = denoise_in_strips(), b = curve_in_strips("colour", shift), c = sharpen_in_strips(),
             d = curve_in_strips("tone", shift);
        Buffer<float> img = photo(w, h, 4), t0(w, h), t1(w, h), t2(w, h), eager(w, h);
        a.fn(img, 0.7f, t0);
        b.fn(t0, 1.3f, t1);
        c.fn(t1, 0.8f, t2);
        d.fn(t2, -0.05f, eager);
        set_debug(true);
        testing::internal::CaptureStderr();
        Buffer<float> lazy = d.fn.defer({w, h}, c.fn.defer({w, h}, b.fn.defer({w, h}, a.fn.defer({w, h}, img, 0.7f), 1.3f), 0.8f), -0.05f)
                                 .realize();
        std::string log = testing::internal::GetCapturedStderr();
        set_debug(false);
        expect_same_bits(lazy, eager);
        // (The decisions and the loop nest are checked at the large size, untimed.)
        if (w != 1024 || timed) continue;
        // Nodes, producers first: 0 denoise, 1 colour, 2 sharpen.
        if (!shift) {
            EXPECT_CONTAINS(log, "seams fused vertically: 0:0 inlined, 1:0 per strip, 2:0 inlined; apart: none");
            // In tone's strips, each computed once per strip (not denoise's bx per strip of colour).
            size_t at = log.rfind("---- loop nest ----");
            if (at == std::string::npos) {
                ADD_FAILURE() << "no loop nest in WEFT_DEBUG's output";
                continue;
            }
            std::string nest = log.substr(at);
            EXPECT_CONTAINS(nest, "\nparallel tone.s0.y in ");
            for (const char *f : {"bx", "colour", "h"}) EXPECT_CONTAINS(nest, std::string("\n  for ") + f + ".s0.y in ");
        }
        // Read at other columns, denoise and sharpen are computed per strip, not inlined.
        else EXPECT_CONTAINS(log, "seams fused vertically: 0:0 per strip, 1:0 per strip, 2:0 per strip; apart: none");
    }
    if (old) setenv("WEFT_CHAIN_VERTICAL", saved.c_str(), 1);
    else unsetenv("WEFT_CHAIN_VERTICAL");
}

TEST(LazyChain, ARequantisationEpilogueOfAnInt8Matmul) {
    // u8 x s8 -> s32 accumulated in blocks on the matmul's own update, then a requantisation
    // part (scale, shift, saturate to u8) without a schedule: computed in the matmul's blocks,
    // eager's bytes exactly.
    const int n = 70, tokens = 9, k_in = 24;
    ImageParam a(UInt(8), 2, "a"), w(Int(8), 2, "w");
    Var j("j"), t("t"), jo("jo"), to("to"), ji("ji"), ti("ti");
    RDom k(0, k_in, "k");
    Func mm("qlinear");
    mm(j, t) = 0;
    mm(j, t) += cast<int>(a(k, t)) * cast<int>(w(j, k));
    mm.update().tile(j, t, jo, to, ji, ti, 32, 4).reorder(ji, ti, k, jo, to).vectorize(ji, 16).unroll(ti).parallel(to);
    Callable linear = Pipeline(mm).compile_to_callable({a, w});
    ImageParam acc(Int(32), 2, "acc");
    Param<int> scale("scale");
    Var x("x"), y("y");
    Func rq("requantize");
    rq(x, y) = saturating_cast<uint8_t>((acc(x, y) * scale + 128) >> 8);
    Callable requant = Pipeline(rq).compile_to_callable({acc, scale});
    Buffer<uint8_t> A(k_in, tokens);
    Buffer<int8_t> W(n, k_in);
    for (int yy = 0; yy < tokens; yy++)
        for (int xx = 0; xx < k_in; xx++) A(xx, yy) = (uint8_t)((xx * 37 + yy * 11) % 256);
    for (int yy = 0; yy < k_in; yy++)
        for (int xx = 0; xx < n; xx++) W(xx, yy) = (int8_t)((xx * 13 + yy * 7) % 256 - 128);
    Buffer<int> mid(n, tokens);
    Buffer<uint8_t> eager(n, tokens), lazy(n, tokens);
    linear(A, W, mid);
    requant(mid, 3, eager);
    requant.defer({n, tokens}, linear.defer({n, tokens}, A, W), 3).realize(lazy);
    for (int yy = 0; yy < tokens; yy++)
        for (int xx = 0; xx < n; xx++) ASSERT_EQ(lazy(xx, yy), eager(xx, yy)) << xx << ", " << yy;
}

TEST(LazyChain, TwoReadersOfOneValueAskedForTogether) {
    // colour and tone both read denoise's result, and both are asked for: the chain is one
    // pipeline (the two readers may run in one pass over it, horizontally fused), with eager's
    // values bit for bit, at a size larger than L2 and at a small odd one.
    for (auto [w, h] : {std::pair{1024, 600}, std::pair{37, 11}}) {
        Part d = denoise(false), c = colour(false), t = tone(false);
        Buffer<float> img = photo(w, h, 4), mid(w, h), e1(w, h), e2(w, h);
        d.fn(img, 0.7f, mid);
        c.fn(mid, 1.3f, e1);
        t.fn(mid, -0.05f, e2);
        LazyBuffer v = d.fn.defer({w, h}, img, 0.7f);
        LazyBuffer a = c.fn.defer({w, h}, v, 1.3f), b = t.fn.defer({w, h}, v, -0.05f);
        Buffer<float> g1(w, h), g2(w, h);
        weft::realize({a, b}, {g1, g2});
        expect_same_bits(g1, e1);
        expect_same_bits(g2, e2);
    }
}

TEST(LazyChainErrors, MismatchesAtTheSeamsNameBothParts) {
    Part a = denoise(false);
    Var x("x"), y("y");
    ImageParam bytes(UInt(8), 2, "bytes");
    Func g("gray");
    g(x, y) = cast<float>(bytes(x, y));
    Callable gray = Pipeline(g).compile_to_callable({bytes});
    Buffer<float> img = photo(10, 10);
    LazyBuffer v = a.fn.defer({10, 10}, img, 1.0f);
    std::string m = error_of([&] { gray.defer({10, 10}, v); });
    EXPECT_CONTAINS(m, "part \"gray\"");
    EXPECT_CONTAINS(m, "part \"denoise\"");
    EXPECT_CONTAINS(m, "uint8");
    m = error_of([&] { a.fn.defer({10, 10}, img); });
    EXPECT_CONTAINS(m, "takes 2 arguments");
    m = error_of([&] { a.fn.defer({10, 10}, img, 1.0); });
    EXPECT_CONTAINS(m, "Param \"strength\" is float32, got float64");
    m = error_of([&] { a.fn.defer({10, 10}, 1.0f, 1.0f); });
    EXPECT_CONTAINS(m, "must be a LazyBuffer or Buffer");
    m = error_of([&] { a.fn.defer({10, 10}, LazyBuffer(), 1.0f); });
    EXPECT_CONTAINS(m, "undefined");
    m = error_of([&] { a.fn.defer({10}, img, 1.0f); });
    EXPECT_CONTAINS(m, "2 dimensions but 1 sizes");
    m = error_of([&] { a.fn.defer({10, -1}, img, 1.0f); });
    EXPECT_CONTAINS(m, "negative size");
    m = error_of([&] { Callable().defer({1}, img); });
    EXPECT_CONTAINS(m, "empty Callable");
    m = error_of([&] { LazyBuffer().realize(); });
    EXPECT_CONTAINS(m, "undefined");
    m = error_of([&] { LazyBuffer{Buffer<float>()}; });
    EXPECT_CONTAINS(m, "undefined");
    Buffer<float> wrong(10, 9);
    m = error_of([&] { v.realize(wrong); });
    EXPECT_CONTAINS(m, "float32 of 10x10");
    m = error_of([&] { realize({v, v}); });
    EXPECT_CONTAINS(m, "asked for twice");
}

TEST(LazyChainErrors, ConsumerReadingPastTheProducersOutput) {
    // The consumer reads one column past what the producer computes: one by one, the second
    // call fails on its input; chained, the fused pipeline fails the same way, naming both
    // parts, before anything is written, whatever the schedule inlines.
    Var x("x"), y("y");
    ImageParam in(Float(32), 2, "in");
    Func shift("shift");
    shift(x, y) = in(x + 1, y) - in(x, y);
    Callable shifter = Pipeline(shift).compile_to_callable({in});
    Part t = tone(false);
    Buffer<float> img = photo(12, 8);
    Buffer<float> tmp(12, 8), out(12, 8);
    t.fn(img, 0.0f, tmp);
    std::string eager = error_of([&] { shifter(tmp, out); });
    EXPECT_CONTAINS(eager, "input \"in\" dimension 0");
    for (const char *autos : {"1", "0"}) {
        ScopedEnv e("WEFT_AUTOSCHEDULE", autos);
        out(0, 0) = 42.0f;
        LazyBuffer v = shifter.defer({12, 8}, t.fn.defer({12, 8}, img, 0.0f));
        std::string m = error_of([&] { v.realize(out); });
        EXPECT_CONTAINS(m, "part \"shift\" reads the output of part \"tone\" in dimension 0 at [0, 12]");
        EXPECT_CONTAINS(m, "computes [0, 11]");
        EXPECT_EQ(out(0, 0), 42.0f);
        // A smaller result fits.
        Buffer<float> ok = shifter.defer({11, 8}, t.fn.defer({12, 8}, img, 0.0f)).realize();
        EXPECT_EQ(ok.width(), 11);
    }
}

TEST(LazyChainErrors, ChainsOfOneTargetOnly) {
    Var x("x");
    ImageParam in(Float(32), 1, "in");
    Func f("f");
    f(x) = in(x) + 1.0f;
    if (Target::host().without_feature("avx512") == Target::host()) GTEST_SKIP() << "the host has no AVX-512 to leave out";
    Callable host = Pipeline(f).compile_to_callable({in});
    Callable narrow = Pipeline(f).compile_to_callable({in}, Target::host().without_feature("avx512"));
    Buffer<float> b(8);
    for (int i = 0; i < 8; i++) b(i) = (float)i;
    std::string m = error_of([&] { narrow.defer({8}, host.defer({8}, b)).realize(); });
    EXPECT_CONTAINS(m, "one target");
}
