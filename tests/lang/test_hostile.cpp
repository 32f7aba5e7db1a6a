// Hostile input: what a user gets wrong, or pushes to the edges, gives a clear weft::Error or
// the right answer, never a crash, a write outside a buffer or a silently wrong result. Each
// case found by trying the library as a hostile user would has a test here; the last tests
// draw more such cases at random (fixed seed).
#include <climits>
#include <cmath>
#include <random>
#include <thread>
#include "cache/Kernel.h"
#include "lang_test_util.h"

using namespace weft;
using weft_test::error_of;

namespace {

// ---------------- everything inlined ----------------

// A pyramid of down- and upsamplings with nothing stored (a schedule directive on the output
// only: no automatic schedule): each level calls the one below at different points, so inlining
// it all is exponential in the depth. It ran out of memory (or ran for hours); it is a clear
// weft::Error within seconds, naming the Func and what to do. A shallow one still runs.
TEST(Hostile, InliningAnExponentialPyramidIsAnError) {
    auto pyramid = [](int levels) {
        Buffer<float> in(std::vector<int>{64, 64}, "pyr_in");
        in.fill(1.0f);
        Var x("x"), y("y");
        Func level = BoundaryConditions::repeat_edge(in);
        std::vector<Func> down{level};
        for (int j = 1; j < levels; j++) {
            Func d("down_" + std::to_string(j));
            Func f = down.back();
            d(x, y) = (f(2 * x - 1, 2 * y) + 3.0f * (f(2 * x, 2 * y) + f(2 * x + 1, 2 * y + 1)) + f(2 * x + 2, 2 * y - 1)) / 8.0f;
            down.push_back(d);
        }
        Func up = down.back();
        for (int j = levels - 2; j >= 0; j--) {
            Func u("up_" + std::to_string(j));
            u(x, y) = 0.25f * up((x / 2) - 1 + 2 * (x % 2), y / 2) + 0.75f * up(x / 2, (y / 2) - 1 + 2 * (y % 2)) + down[j](x, y);
            up = u;
        }
        Func out("pyr_out");
        out(x, y) = up(x, y);
        out.vectorize(x, 8);
        return out;
    };
    std::string e = error_of([&] { pyramid(8).realize({64, 64}); });
    EXPECT_NE(e.find("inlining makes the definition of Func \"pyr_out\" an expression of more than"), std::string::npos) << e;
    EXPECT_NE(e.find("compute_root"), std::string::npos) << e;
    Buffer<float> small = pyramid(3).realize({64, 64});
    EXPECT_TRUE(std::isfinite(small(10, 10)));
}

// ---------------- coordinates at the top of int32 ----------------

// An update's tail guard (GuardWithIf) was evaluated after min + o * F + i had wrapped past
// INT32_MAX, so the lanes beyond the buffer passed it and were written (a segfault).
TEST(Hostile, TailGuardNearInt32Max) {
    Var x("x"), xo("xo"), xi("xi");
    for (int sched = 0; sched < 4; sched++) {
        Buffer<int> out(13);
        out.set_min({INT_MAX - 13});
        Func f("guard_top_" + std::to_string(sched));
        f(x) = 1;
        f(x) += x % 5 + 2;  // (x >= 0 here: % as in C++)
        if (sched == 0) f.update().vectorize(x, 8);
        if (sched == 1) f.update().split(x, xo, xi, 8);
        if (sched == 2) f.update().parallel(x, 8);
        if (sched == 3) f.update().unroll(x, 4).vectorize(x, 8, TailStrategy::GuardWithIf);
        f.realize(out);
        for (int i = INT_MAX - 13; i < INT_MAX; i++) ASSERT_EQ(out(i), 3 + i % 5) << "schedule " << sched << " at " << i;
    }
}

// An input read under such a guard: the reads stay inside the input too.
TEST(Hostile, GuardedReadsNearInt32Max) {
    Var x("x");
    Buffer<int> in(std::vector<int>{13}, "top_in");
    in.set_min({INT_MAX - 13});
    for (int i = INT_MAX - 13; i < INT_MAX; i++) in(i) = i % 7;
    Func f("guard_read_top");
    f(x) = 0;
    f(x) += in(x) * 2;
    f.update().vectorize(x, 16);
    Buffer<int> out(13);
    out.set_min({INT_MAX - 13});
    f.realize(out);
    for (int i = INT_MAX - 13; i < INT_MAX; i++) ASSERT_EQ(out(i), (i % 7) * 2) << i;
}

// The outer loop's count was (extent + F - 1) / F, which wraps for extents near 2^31: the
// output was silently left unwritten.
TEST(Hostile, SplitOfAnExtentNear2To31) {
    Var x("x"), xo("xo"), xi("xi");
    Func f("huge_split");
    f(x) = cast<uint8_t>(x);
    f.split(x, xo, xi, 64);
    Buffer<uint8_t> out(INT_MAX - 10);
    f.realize(out);
    EXPECT_EQ(out(0), 0);
    EXPECT_EQ(out(INT_MAX - 11), (uint8_t)(INT_MAX - 11));
    EXPECT_EQ(out(1000003), (uint8_t)1000003);
}

// A factor of INT32_MAX (legal, absurd): the same count wrapped, and nothing was computed.
TEST(Hostile, SplitFactorInt32Max) {
    Var x("x"), xo("xo"), xi("xi");
    Func f("split_intmax");
    f(x) = x * 3;
    f.split(x, xo, xi, INT_MAX);
    Buffer<int> out = f.realize({16});
    for (int i = 0; i < 16; i++) ASSERT_EQ(out(i), i * 3);
}

// ---------------- schedule values ----------------

// A split factor from a Param is checked at each call: a negative one left the output untouched,
// and zero gave a message about RoundUp.
TEST(Hostile, SplitFactorParamNotPositive) {
    Var x("x"), xo("xo"), xi("xi");
    Param<int> factor("factor", 4);
    Func f("param_split");
    f(x) = x + 1;
    f.split(x, xo, xi, factor);
    Buffer<int> out(16);
    f.realize(out);
    EXPECT_EQ(out(15), 16);
    for (int bad : {-4, 0, INT_MIN}) {
        factor.set(bad);
        out.fill(-7);
        std::string m = error_of([&] { f.realize(out); });
        EXPECT_CONTAINS(m, "param_split");
        EXPECT_CONTAINS(m, "split(x)");
        EXPECT_CONTAINS(m, "must be positive");
        EXPECT_CONTAINS(m, std::to_string(bad));
        EXPECT_EQ(out(3), -7);  // nothing written
    }
    factor.set(INT_MAX);
    f.realize(out);
    EXPECT_EQ(out(15), 16);
}

// Each directive that takes a factor names itself in the error (all said "split()").
TEST(Hostile, ZeroFactorsNameTheirDirective) {
    Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
    auto msg = [&](const std::function<void(Func &)> &s) {
        Func f("zero_factor");
        f(x, y) = x + y;
        return error_of([&] { s(f); });
    };
    EXPECT_CONTAINS(msg([&](Func &f) { f.vectorize(x, 0); }), "vectorize()");
    EXPECT_CONTAINS(msg([&](Func &f) { f.unroll(x, 0); }), "unroll()");
    EXPECT_CONTAINS(msg([&](Func &f) { f.parallel(y, 0); }), "parallel()");
    EXPECT_CONTAINS(msg([&](Func &f) { f.tile(x, y, xo, yo, xi, yi, 0, 4); }), "tile()");
    EXPECT_CONTAINS(msg([&](Func &f) { f.tile(x, y, xi, yi, 4, -1); }), "tile()");
    EXPECT_CONTAINS(msg([&](Func &f) { f.gpu_tile(x, y, xo, yo, xi, yi, 8, 0); }), "gpu_tile()");
    EXPECT_CONTAINS(msg([&](Func &f) { f.split(x, xo, xi, 0); }), "split()");
    EXPECT_CONTAINS(msg([&](Func &f) { f.vectorize(x, -8); }), "got -8");
}

// bound() on an output smaller than its buffer was ignored; Halide refuses it, and so does weft.
TEST(Hostile, OutputBufferBeyondItsBound) {
    Var x("x");
    Func f("bounded_out");
    f(x) = x;
    f.bound(x, 0, 4);
    Buffer<int> small(4);
    f.realize(small);
    EXPECT_EQ(small(3), 3);
    Buffer<int> big(8);
    big.fill(-1);
    std::string m = error_of([&] { f.realize(big); });
    EXPECT_CONTAINS(m, "bounded_out");
    EXPECT_CONTAINS(m, "bound()");
    EXPECT_CONTAINS(m, "output buffer");
    EXPECT_EQ(big(0), -1);
}

// A specialization made before the split that gives the loop a producer is computed at: the
// producer (stored at root) was read there without being computed: silently wrong values.
TEST(Hostile, ComputeAtALoopASpecializationLacks) {
    Var x("x"), y("y"), yo("yo"), yi("yi");
    Param<int> p("spec_p", 1);
    Func g("spec_g"), out("spec_out");
    g(x, y) = x * 10 + y;
    out(x, y) = g(x, y) + g(x, y + 1);
    out.specialize(p < 0);  // made before the split: no loop yo
    out.split(y, yo, yi, 4);
    g.store_root().compute_at(out, yo);
    std::string m = error_of([&] { out.realize({8, 8}); });
    EXPECT_CONTAINS(m, "spec_g");
    EXPECT_CONTAINS(m, "no loop yo");
    EXPECT_CONTAINS(m, "specialization");

    // With the loop in every specialization it runs, in each branch.
    Func g2("spec_g2"), out2("spec_out2");
    g2(x, y) = x * 10 + y;
    out2(x, y) = g2(x, y) + g2(x, y + 1);
    out2.split(y, yo, yi, 4);
    out2.specialize(p < 0).vectorize(x, 4);
    g2.store_root().compute_at(out2, yo);
    for (int pv : {1, -1}) {
        p.set(pv);
        Buffer<int> o = out2.realize({8, 8});
        for (int yy = 0; yy < 8; yy++)
            for (int xx = 0; xx < 8; xx++) ASSERT_EQ(o(xx, yy), xx * 20 + 2 * yy + 1) << pv;
    }
}

// ---------------- undefined handles ----------------

TEST(Hostile, UndefinedBufferAccessors) {
    Buffer<int> b;
    EXPECT_FALSE(b.defined());
    std::vector<std::function<void()>> uses = {
        [&] { (void)b.width(); },        [&] { (void)b.height(); },      [&] { (void)b.dim(0); },
        [&] { (void)b.data(); },         [&] { (void)b(0); },            [&] { b.set_min({1}); },
        [&] { (void)b.dimensions(); },   [&] { (void)b.type(); },        [&] { (void)b.name(); },
        [&] { b.fill(3); },              [&] { (void)b.raw_data(); },    [&] { (void)b.host_dirty(); },
        [&] { b.set_host_dirty(); },     [&] { b.copy_to_host(); },      [&] { (void)b.has_device_allocation(); },
    };
    for (size_t i = 0; i < uses.size(); i++) EXPECT_CONTAINS(error_of(uses[i]), "undefined") << "use " << i;
    Func f("reads_undefined");
    Var x("x");
    EXPECT_CONTAINS(error_of([&] { f(x) = b(x); }), "undefined Buffer");
}

TEST(Hostile, RealizationIndexOutOfRange) {
    Var x("x");
    Func f("one_output");
    f(x) = x;
    Realization r = Pipeline(f).realize({4});
    std::string m = error_of([&] { (void)r[3]; });
    EXPECT_CONTAINS(m, "Realization[3]");
    EXPECT_CONTAINS(m, "1 buffer");
}

// An undefined Buffer or ImageParam handed to a Callable was reported as "a scalar of type
// int32", or crashed.
TEST(Hostile, UndefinedHandlesInACallable) {
    Var x("x");
    ImageParam in(Int(32), 1, "cin");
    Func f("callable_f");
    f(x) = in(x) + 1;
    Callable c = Pipeline(f).compile_to_callable({in});
    Buffer<int> undef, a(4), out(4);
    std::string m = error_of([&] { c(undef, out); });
    EXPECT_CONTAINS(m, "undefined");
    EXPECT_CONTAINS(m, "cin");
    EXPECT_CONTAINS(error_of([&] { c(a, undef); }), "undefined");
    EXPECT_CONTAINS(error_of([&] { c(3, out); }), "scalar");
    c(a, out);
    EXPECT_EQ(out(2), 1);

    ImageParam none;
    Func g("callable_g");
    g(x) = x;
    EXPECT_CONTAINS(error_of([&] { Pipeline(g).compile_to_callable({none}); }), "undefined");
}

// ---------------- threads ----------------

// Several threads realizing one new Func at once raced on its lazily made pipeline.
TEST(Hostile, ThreadsRealizeOneNewFunc) {
    Var x("x");
    for (int it = 0; it < 20; it++) {
        Func f("fresh_" + std::to_string(it));
        f(x) = x * 2 + it;
        std::vector<std::thread> ts;
        std::vector<int> got(8, -1);
        for (int t = 0; t < 8; t++)
            ts.emplace_back([&, t] {
                Buffer<int> o = f.realize({8});
                got[t] = o(3);
            });
        for (auto &t : ts) t.join();
        for (int t = 0; t < 8; t++) ASSERT_EQ(got[t], 6 + it);
    }
}

// ---------------- memory ----------------

// Each live Func's memo kept its last kernel alive after clear_cache() (and after eviction):
// about 20 KB per Func that the cache no longer counted.
TEST(Hostile, ClearedKernelsAreFreedWhileTheirFuncsLive) {
    Var x("x");
    clear_cache();
    int64_t before = internal::live_kernels();
    std::vector<Func> fs;
    for (int i = 0; i < 5; i++) {
        Func f("kept_" + std::to_string(i));
        f(x) = x + i;
        f.realize({8});
        fs.push_back(f);
    }
    EXPECT_GE(internal::live_kernels(), before + 5);
    clear_cache();
    EXPECT_EQ(internal::live_kernels(), before);
    Buffer<int> o = fs[2].realize({8});  // compiled again
    EXPECT_EQ(o(3), 5);
    EXPECT_EQ(cache_stats().compilations, 1u);

    // Evicted: a cache of 2 keeps 2 kernels alive, whatever the Funcs that ran the others.
    set_cache_capacity(2);
    for (auto &f : fs) f.realize({8});
    EXPECT_LE(internal::live_kernels(), before + 2);
    set_cache_capacity(256);
}

// ---------------- size ----------------

// A Func with hundreds of update stages: LLVM's loop analyses walked from each loop up through
// all the loops before it in the function (2,000 updates took 31 s to compile); each top-level
// loop nest is now a function of its own. The results are the same. (Compile time against
// program size is measured, with a budget, by bench/weft_bench_compile.)
TEST(Hostile, HundredsOfUpdateStages) {
    Var x("x"), y("y");
    Func g("many_g"), f("many_updates");
    g(x, y) = x + y;
    f(x, y) = g(x, y);
    for (int i = 0; i < 300; i++) f(x, y) = f(x, y) + (i % 7);
    g.compute_root().parallel(y);
    f.update(5).parallel(y);
    f.update(17).vectorize(x, 8);
    f.update(200).split(y, y, Var("yi"), 4);
    Buffer<int> out = f.realize({20, 6});
    int add = 0;
    for (int i = 0; i < 300; i++) add += i % 7;
    for (int yy = 0; yy < 6; yy++)
        for (int xx = 0; xx < 20; xx++) ASSERT_EQ(out(xx, yy), xx + yy + add) << xx << "," << yy;
}

// ---------------- random: extents and mins at the edges of int32 ----------------

// Random 1-D pipelines (a pure definition and an update reading an input) over buffers placed
// near INT32_MAX, near INT32_MIN or at 0, with random splits, tails, vectorize, unroll and
// parallel: every output element right, or a weft::Error (never a crash or a stray write).
TEST(Hostile, RandomSchedulesAtInt32Edges) {
    std::mt19937 rng(20261201);
    auto pick = [&](int n) { return (int)(rng() % (unsigned)n); };
    const TailStrategy tails[] = {TailStrategy::Auto, TailStrategy::GuardWithIf, TailStrategy::RoundUp,
                                  TailStrategy::ShiftInwards};
    int ran = 0, refused = 0;
    for (int trial = 0; trial < 40; trial++) {
        int extent = 1 + pick(70);
        int where = pick(3);
        int mn = where == 0 ? INT_MAX - extent - pick(3) : where == 1 ? INT_MIN + pick(3) : 0;
        Var x("x"), xo("xo"), xi("xi");
        Buffer<int> in(std::vector<int>{extent}, "edge_in");
        in.set_min({mn});
        for (int i = 0; i < extent; i++) in(mn + i) = (i * 7919) % 101;
        Func f("edge_" + std::to_string(trial));
        f(x) = x % 13;
        f(x) += in(x) * 3;
        int factor = 1 + pick(20);
        switch (pick(4)) {
        case 0: f.split(x, xo, xi, factor, tails[pick(4)]).vectorize(xi); break;
        case 1: f.update().vectorize(x, factor, pick(2) ? TailStrategy::GuardWithIf : TailStrategy::Auto); break;
        case 2: f.update().parallel(x, factor).unroll(x, 1 + pick(4)); break;
        default: f.vectorize(x, 1 + pick(16)).update().split(x, xo, xi, factor).unroll(xi); break;
        }
        Buffer<int> out(extent);
        out.set_min({mn});
        out.fill(INT_MIN);
        try {
            f.realize(out);
        } catch (Error &) {
            refused++;
            continue;
        }
        ran++;
        for (int i = 0; i < extent; i++) {
            int c = mn + i;
            int m = (c % 13 + 13) % 13;  // weft's % rounds toward minus infinity
            ASSERT_EQ(out(c), m + in(c) * 3) << "trial " << trial << " coordinate " << c;
        }
    }
    EXPECT_GT(ran, refused);  // most of them are legal and run
}

}  // namespace
