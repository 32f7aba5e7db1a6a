// API.md "Schedules": every primitive on pure and update stages, compared with plain C++.
#include "lang_test_util.h"
#include <tuple>

using namespace weft;

namespace {

// The pipeline under test:
//   prod(x, y) = x*x - 3*x*y + y + in(x, y)
//   mid(x, y)  = prod(x - 1, y) + 2 * prod(x, y + 1) + prod(x + 1, y - 1)
//   out(x, y)  = mid(x, y) * 3 - mid(x + 1, y)
//   out(x, y) += x * y          (an update with pure vars)
// `in` covers every point the pipeline may read (also with RoundUp on intermediates).
struct Pipe {
    Var x{"x"}, y{"y"};
    Func prod{"prod"}, mid{"mid"}, out{"out"};
    Buffer<int> in;
    static constexpr int kPad = 40;
    Pipe(int W, int H) : in(W + 2 * kPad, H + 2 * kPad) {
        weft_test::fill_pattern(in, (uint32_t)(W * 131 + H), -20, 20);
        in.set_min(-kPad, -kPad);
        prod(x, y) = x * x - 3 * x * y + y + in(x, y);
        mid(x, y) = prod(x - 1, y) + 2 * prod(x, y + 1) + prod(x + 1, y - 1);
        out(x, y) = mid(x, y) * 3 - mid(x + 1, y);
        out(x, y) += x * y;
    }
    int P(int i, int j) const { return i * i - 3 * i * j + j + in(i, j); }
    int M(int i, int j) const { return P(i - 1, j) + 2 * P(i, j + 1) + P(i + 1, j - 1); }
    int O(int i, int j) const { return M(i, j) * 3 - M(i + 1, j) + i * j; }
};

using Schedule = std::function<void(Pipe &)>;

// min_extent: skip output sizes smaller than this (an explicit ShiftInwards split needs an
// extent of at least its factor; Auto and GuardWithIf must work for every size).
void check_schedule(const char *what, const Schedule &s, int min_extent = 1) {
    // Sizes that are and are not multiples of the factors used below (2, 3, 4, 8), and tiny ones.
    const int sizes[][2] = {{16, 8}, {13, 7}, {1, 1}, {3, 2}, {24, 12}};
    for (auto &sz : sizes) {
        const int W = sz[0], H = sz[1];
        if (W < min_extent || H < min_extent) continue;
        SCOPED_TRACE(std::string(what) + " at " + std::to_string(W) + "x" + std::to_string(H));
        Pipe p(W, H);
        s(p);
        Buffer<int> o(W, H);
        o.fill(-12345);
        p.out.realize(o);
        int bad = 0;
        for (int j = 0; j < H; j++)
            for (int i = 0; i < W; i++)
                if (o(i, j) != p.O(i, j) && bad++ < 5)
                    ADD_FAILURE() << "(" << i << ", " << j << "): got " << o(i, j) << ", expected " << p.O(i, j);
        EXPECT_EQ(bad, 0);
        // Also with non-zero output mins.
        Buffer<int> o2(W, H);
        o2.set_min(-3, 5);
        p.out.realize(o2);
        bad = 0;
        for (int j = 5; j < 5 + H; j++)
            for (int i = -3; i < -3 + W; i++)
                if (o2(i, j) != p.O(i, j) && bad++ < 5)
                    ADD_FAILURE() << "min -3,5 (" << i << ", " << j << "): got " << o2(i, j) << ", expected "
                                  << p.O(i, j);
        EXPECT_EQ(bad, 0);
    }
}

// The body may contain commas: it is the variadic part.
#define SCHED_TEST(name, ...)                \
    TEST(Schedules, name) {                  \
        check_schedule(#name, [](Pipe &p) {  \
            Var &x = p.x;                    \
            Var &y = p.y;                    \
            (void)x;                         \
            (void)y;                         \
            __VA_ARGS__;                     \
        });                                  \
    }

SCHED_TEST(DefaultInline, {})

// split with each TailStrategy, on the output (pure and update stage) and on intermediates.
SCHED_TEST(SplitAutoPure, { Var xo("xo"), xi("xi"); p.out.split(x, xo, xi, 4); })
SCHED_TEST(SplitGuardPure, { Var xo("xo"), xi("xi"); p.out.split(x, xo, xi, 3, TailStrategy::GuardWithIf); })
TEST(Schedules, SplitShiftInwardsPure) {
    check_schedule(
        "SplitShiftInwardsPure",
        [](Pipe &p) {
            Var yo("yo"), yi("yi");
            p.out.split(p.y, yo, yi, 2, TailStrategy::ShiftInwards);
        },
        2);
}
SCHED_TEST(SplitReuseName, { Var xi("xi"); p.out.split(x, x, xi, 4); })
SCHED_TEST(SplitAutoUpdate, { Var xo("xo"), xi("xi"); p.out.update(0).split(x, xo, xi, 4); })
SCHED_TEST(SplitGuardUpdate, {
    Var yo("yo"), yi("yi");
    p.out.update(0).split(y, yo, yi, 3, TailStrategy::GuardWithIf);
})
SCHED_TEST(SplitRoundUpIntermediate, {
    Var xo("xo"), xi("xi"), yo("yo"), yi("yi");
    p.mid.compute_root().split(x, xo, xi, 4, TailStrategy::RoundUp).split(y, yo, yi, 3, TailStrategy::RoundUp);
    p.prod.compute_root().split(x, xo, xi, 8, TailStrategy::RoundUp);
})
SCHED_TEST(SplitShiftInwardsIntermediate, {
    Var xo("xo"), xi("xi");
    p.mid.compute_root().split(x, xo, xi, 4, TailStrategy::ShiftInwards);
})
SCHED_TEST(SplitGuardIntermediate, {
    Var xo("xo"), xi("xi");
    p.prod.compute_root().split(x, xo, xi, 5, TailStrategy::GuardWithIf);
})
SCHED_TEST(SplitNested, {
    Var xo("xo"), xi("xi"), xii("xii");
    p.out.split(x, xo, xi, 8).split(xi, xi, xii, 3);
})

SCHED_TEST(FusePure, {
    Var xy("xy");
    p.out.fuse(x, y, xy);
})
SCHED_TEST(FuseUpdate, {
    Var xy("xy");
    p.out.update(0).fuse(x, y, xy);
})
SCHED_TEST(FuseThenParallelVectorize, {
    Var xy("xy");
    p.out.fuse(x, y, xy).parallel(xy, 5);
    p.mid.compute_root().fuse(x, y, xy).vectorize(xy, 4);
})
SCHED_TEST(Reorder, { p.out.reorder(y, x); })
SCHED_TEST(ReorderUpdate, { p.out.update(0).reorder(y, x); })
SCHED_TEST(ReorderIntermediate, { p.mid.compute_root().reorder(y, x); })

SCHED_TEST(TileSixNames, {
    Var xo("xo"), yo("yo"), xi("xi"), yi("yi");
    p.out.tile(x, y, xo, yo, xi, yi, 4, 3);
})
SCHED_TEST(TileFourNames, {
    Var xi("xi"), yi("yi");
    p.out.tile(x, y, xi, yi, 8, 2);
})
SCHED_TEST(TileGuard, {
    Var xo("xo"), yo("yo"), xi("xi"), yi("yi");
    p.out.tile(x, y, xo, yo, xi, yi, 3, 3, TailStrategy::GuardWithIf);
})
SCHED_TEST(TileUpdate, {
    Var xo("xo"), yo("yo"), xi("xi"), yi("yi");
    p.out.update(0).tile(x, y, xo, yo, xi, yi, 4, 2);
})
SCHED_TEST(TileRoundUpIntermediate, {
    Var xi("xi"), yi("yi");
    p.mid.compute_root().tile(x, y, xi, yi, 4, 4, TailStrategy::RoundUp);
})

SCHED_TEST(VectorizeWithFactor, { p.out.vectorize(x, 8); })
SCHED_TEST(VectorizeWithFactorGuard, { p.out.vectorize(x, 4, TailStrategy::GuardWithIf); })
SCHED_TEST(VectorizeWithoutFactor, {
    Var xi("xi");
    p.out.split(x, x, xi, 4).vectorize(xi);
})
SCHED_TEST(VectorizeUpdate, { p.out.update(0).vectorize(x, 4); })
SCHED_TEST(VectorizeIntermediates, {
    p.mid.compute_root().vectorize(x, 16);
    p.prod.compute_root().vectorize(x, 8, TailStrategy::RoundUp);
})
SCHED_TEST(UnrollWithFactor, { p.out.unroll(x, 3); })
SCHED_TEST(UnrollWithoutFactor, {
    Var yi("yi");
    p.out.split(y, y, yi, 2).unroll(yi);
})
SCHED_TEST(UnrollUpdate, { p.out.update(0).unroll(y, 2); })
SCHED_TEST(VectorizeAndUnroll, {
    p.out.vectorize(x, 4).unroll(x, 2).unroll(y, 2);
})

SCHED_TEST(UpdateVectorizeUnrollWithoutFactor, {
    Var xi("xi"), yi("yi");
    p.out.update(0).split(x, x, xi, 4).vectorize(xi).split(y, y, yi, 2).unroll(yi);
})
SCHED_TEST(UpdateSplitReorderTileTogether, {
    Var xo("xo"), yo("yo"), xi("xi"), yi("yi");
    p.out.update(0).reorder(y, x).tile(x, y, xo, yo, xi, yi, 3, 2, TailStrategy::GuardWithIf).parallel(yo);
    p.mid.compute_at(p.out, y);
})
SCHED_TEST(Parallel, { p.out.parallel(y); })
SCHED_TEST(ParallelTaskSize, { p.out.parallel(y, 3); })
SCHED_TEST(ParallelUpdate, { p.out.update(0).parallel(y); })
SCHED_TEST(ParallelUpdateTaskSize, { p.out.update(0).parallel(y, 2); })
SCHED_TEST(ParallelIntermediate, { p.mid.compute_root().parallel(y).vectorize(x, 4); })

SCHED_TEST(ComputeRootAll, {
    p.prod.compute_root();
    p.mid.compute_root();
})
SCHED_TEST(ComputeAtY, { p.mid.compute_at(p.out, y); })
SCHED_TEST(ComputeAtX, { p.mid.compute_at(p.out, x); })
SCHED_TEST(ComputeAtChain, {
    p.mid.compute_at(p.out, y);
    p.prod.compute_at(p.mid, x);
})
SCHED_TEST(ComputeAtSplitLoop, {
    Var yo("yo"), yi("yi");
    p.out.split(y, yo, yi, 4);
    p.mid.compute_at(p.out, yo);
    p.prod.compute_at(p.mid, y);  // mid is computed at out.yo, outside out.yi: prod goes in mid's loops
})
SCHED_TEST(ComputeAtInnerOfSplit, {
    // The split factor exceeds some output extents: Auto must still work.
    Var yo("yo"), yi("yi");
    p.out.split(y, yo, yi, 8);
    p.mid.compute_at(p.out, yi);
})
SCHED_TEST(ComputeAtTile, {
    Var xo("xo"), yo("yo"), xi("xi"), yi("yi");
    p.out.tile(x, y, xo, yo, xi, yi, 4, 4).vectorize(xi).parallel(yo);
    p.mid.compute_at(p.out, xo).vectorize(x, 4);
    p.prod.compute_at(p.out, xo);
})
SCHED_TEST(ComputeAtFusedLoop, {
    Var xy("xy");
    p.out.fuse(x, y, xy);
    p.mid.compute_at(p.out, xy);
})
SCHED_TEST(ComputeAtFusedSplitLoop, {
    Var xo("xo"), xi("xi"), t("t");
    p.out.split(x, xo, xi, 4).fuse(xo, y, t);
    p.mid.compute_at(p.out, t);
    p.prod.store_at(p.out, t).compute_at(p.mid, y);
})
SCHED_TEST(ComputeInlineExplicit, {
    p.mid.compute_root();
    p.mid.compute_inline();
})
SCHED_TEST(StoreRootComputeAt, { p.mid.store_root().compute_at(p.out, y); })
SCHED_TEST(StoreRootComputeAtX, { p.prod.store_root().compute_at(p.mid, x); p.mid.compute_root(); })
SCHED_TEST(StoreAtComputeAt, {
    Var yo("yo"), yi("yi");
    p.out.split(y, yo, yi, 4);
    p.mid.store_at(p.out, yo).compute_at(p.out, yi);
    p.prod.store_root().compute_at(p.out, yi);
})
SCHED_TEST(StoreRootParallelConsumer, {
    p.out.parallel(y);
    p.mid.store_root().compute_at(p.out, y);
})
SCHED_TEST(Bound, {
    // mid is needed over [min - 0, max + 1]; a bound that covers more is fine.
    p.mid.compute_root().bound(x, -10, 45).bound(y, -5, 30);
})
SCHED_TEST(Chained, {
    Var xo("xo"), xi("xi"), yo("yo"), yi("yi");
    p.out.split(x, xo, xi, 8).split(y, yo, yi, 2).reorder(xi, yi, xo, yo).vectorize(xi).parallel(yo);
    p.out.update(0).split(x, xo, xi, 4, TailStrategy::GuardWithIf).vectorize(xi).unroll(y, 2);
    p.mid.compute_at(p.out, yo).split(x, xo, xi, 4).vectorize(xi);
    p.prod.store_at(p.out, yo).compute_at(p.mid, y);
})

// Schedules on reduction stages with RVars.
// o(x, y) is the sum over k < K of A(k, y) * B(x, k) at every point of o.
void expect_product(Buffer<int> &o, Buffer<int> &A, Buffer<int> &B, int K) {
    int bad = 0;
    for (int y = 0; y < o.height(); y++)
        for (int x = 0; x < o.width(); x++) {
            int e = 0;
            for (int kk = 0; kk < K; kk++) e += A(kk, y) * B(x, kk);
            if (o(x, y) != e && bad++ < 5) ADD_FAILURE() << "(" << x << ", " << y << "): got " << o(x, y) << ", expected " << e;
        }
    EXPECT_EQ(bad, 0);
}

// C(i, j) = 0; C(i, j) += a_kj * B(i, k) (a_kj: the left operand at (k, j)); out(i, j) = C(i, j);
// C computed at root. Returns {C, out}.
std::pair<Func, Func> product_pipeline(const Var &i, const Var &j, const RDom &k, const Expr &a_kj, Buffer<int> &B,
                                       const std::string &suffix = "") {
    Func C("C" + suffix), out("out" + suffix);
    C(i, j) = 0;
    C(i, j) += a_kj * B(i, k);
    out(i, j) = C(i, j);
    C.compute_root();
    return {C, out};
}

/** A (K x N) and B (M x K) filled from `seed`, and C = A * B (product_pipeline, Vars i, j,
    RDom k) with k in steps of 4, "ko" outermost: what the load_ahead and unroll tests
    schedule further. */
struct StepProduct {
    Buffer<int> A, B;
    Func C, out;
};
StepProduct step_product(int K, int M, int N, int seed) {
    StepProduct p{Buffer<int>({K, N}, "A"), Buffer<int>({M, K}, "B"), Func(), Func()};
    weft_test::fill_pattern(p.A, seed, -9, 9);
    weft_test::fill_pattern(p.B, seed + 1, -9, 9);
    Var i("i"), j("j");
    RDom k(0, K, "k");
    RVar ko("ko"), ki("ki");
    std::tie(p.C, p.out) = product_pipeline(i, j, k, p.A(k, j), p.B);
    p.C.update().split(k, ko, ki, 4).reorder(i, ki, j, ko);
    return p;
}

TEST(Schedules, UpdateWithRVarsSplitAndPureParallel) {
    const int K = 11, W = 9, H = 7;
    Buffer<int> A(K, H), B(W, K);
    weft_test::fill_pattern(A, 1, -9, 9);
    weft_test::fill_pattern(B, 2, -9, 9);
    for (int variant = 0; variant < 5; variant++) {
        SCOPED_TRACE("variant " + std::to_string(variant));
        Var i("i"), j("j"), io("io"), ii("ii"), jo("jo"), ji("ji");
        RDom k(0, K);
        RVar ko("ko"), ki("ki");
        Func C("mm");
        C(i, j) = 0;
        C(i, j) += A(k, j) * B(i, k);
        switch (variant) {
        case 0: C.update(0).split(k, ko, ki, 4); break;
        case 1: C.update(0).split(k, ko, ki, 3, TailStrategy::GuardWithIf).reorder(i, ki, ko, j).vectorize(i, 4); break;
        case 2: C.update(0).parallel(j).unroll(i, 2); break;
        case 3: C.update(0).reorder(i, k, j).vectorize(i, 8).parallel(j, 2); break;
        case 4: C.update(0).tile(i, j, io, jo, ii, ji, 4, 2).unroll(k.x, 2); break;
        }
        Buffer<int> out = C.realize({W, H});
        expect_product(out, A, B, K);
    }
}

TEST(Schedules, ComputeAtLoopOfUpdateStage) {
    // A producer used only by an update stage, computed at a loop that only that stage has.
    const int M = 7, N = 30, K = 4;
    Buffer<int> A(K, N), B(M, K);
    weft_test::fill_pattern(A, 5, -9, 9);
    weft_test::fill_pattern(B, 6, -9, 9);
    for (int variant = 0; variant < 3; variant++) {
        SCOPED_TRACE("variant " + std::to_string(variant));
        Var i("i"), j("j"), ji("ji"), io("io"), ii("ii"), jo("jo");
        RDom k(0, K, "k");
        Func Aw("Aw"), C("C"), out("out");
        Aw(i, j) = A(i, j);
        C(i, j) = 0;
        C(i, j) += Aw(k, j) * B(i, k);
        out(i, j) = C(i, j);
        C.compute_root();
        if (variant == 0) {
            C.update(0).split(j, j, ji, 8);
            Aw.compute_at(C, ji);
        } else if (variant == 1) {
            C.update(0).tile(i, j, io, jo, ii, ji, 6, 8);
            Aw.compute_at(C, ji);
        } else {
            Aw.compute_at(C, k.x);
        }
        Buffer<int> o = out.realize({M, N});
        expect_product(o, A, B, K);
    }
}

// Func::load_ahead(): the tiles of a product staged per step of k (ko), each computed one step
// ahead (the first before the loop, the next right after the tile's last read), give the same
// results for every size, also where the steps do not divide k or there is one step only; the
// lowered IR shows the move.
TEST(Schedules, LoadAheadComputesNextIteration) {
    for (int K : {1, 4, 10, 16}) {
        SCOPED_TRACE("K = " + std::to_string(K));
        const int M = 9, N = 6;
        StepProduct p = step_product(K, M, N, 7);
        Buffer<int> &A = p.A, &B = p.B;
        Func &C = p.C, &out = p.out;
        Var i("i"), j("j");
        RDom k(0, K, "k");
        RVar ko("ko"), ki("ki");
        Func Aw = A.in(), Bw = B.in();
        Aw.compute_at(C, ko).store_in(MemoryType::Register).load_ahead();
        Bw.compute_at(C, ko).load_ahead();
        Buffer<int> o = out.realize({M, N});
        expect_product(o, A, B, K);
        {
            // Inside a parallel loop, the consumer vectorized, steps of 3 (a guarded last step).
            auto C2_out2 = product_pipeline(i, j, k, A(k, j), B, "2");
            Func &C2 = C2_out2.first, &out2 = C2_out2.second;
            Var io("io"), ii("ii");
            C2.update().split(k, ko, ki, 3, TailStrategy::GuardWithIf).split(i, io, ii, 4).reorder(ii, ki, ko, io, j).vectorize(ii).parallel(j);
            A.in(C2).compute_at(C2, ko).load_ahead();
            B.in(C2).compute_at(C2, ko).store_in(MemoryType::Register).load_ahead();
            Buffer<int> o2 = out2.realize({M, N});
            expect_product(o2, A, B, K);
        }
        if (K <= 4) continue;  // one step: no loop (nothing to compute ahead)
        std::string ir = Pipeline(out).lowered_ir({M, N});
        size_t pass = ir.find("after load_ahead");
        ASSERT_NE(pass, std::string::npos);
        size_t loop = ir.find("for (C.s1.ko", pass), first = ir.find("A_in[", pass);
        ASSERT_NE(loop, std::string::npos) << ir.substr(pass);
        EXPECT_LT(first, loop) << "the first step's tile is not computed before the loop:\n" << ir.substr(pass);
        size_t guard = ir.find("if ((C.s1.ko < ", loop);  // the next step's tile, but at the last step
        ASSERT_NE(guard, std::string::npos) << ir.substr(pass);
        EXPECT_NE(ir.find("A_in[", guard), std::string::npos) << ir.substr(pass);
        EXPECT_NE(ir.find("B_in[", guard), std::string::npos) << ir.substr(pass);
    }
}

// unroll() of a loop whose extent varies but has a constant bound (a tile computed at each
// step of k, the last step shorter: K = 10 in steps of 4): as many copies as the bound, each
// guarded by its iteration's existence (not a serial loop); results unchanged.
TEST(Schedules, UnrollOfVaryingExtentUnrollsToItsBound) {
    const int K = 10, M = 5, N = 3;
    StepProduct p = step_product(K, M, N, 3);
    Func Aw = p.A.in();
    Aw.compute_at(p.C, RVar("ko")).unroll(Aw.args()[0]);
    Buffer<int> o = p.out.realize({M, N});
    expect_product(o, p.A, p.B, K);
    std::string ir = Pipeline(p.out).lowered_ir({M, N});
    size_t pass = ir.find("after unroll");
    ASSERT_NE(pass, std::string::npos);
    std::string after = ir.substr(pass, ir.find("after partition_loops") - pass);
    EXPECT_EQ(after.find("for (A_in.s0._0"), std::string::npos) << after;  // no loop left
    EXPECT_NE(after.find("if (likely<bool>((3 < "), std::string::npos) << after;  // the 4th copy is guarded
}

// RVar() makes a new reduction variable with a unique name, as Var() does.
TEST(Schedules, DefaultRVarsHaveUniqueNames) {
    RVar a, b;
    EXPECT_FALSE(a.name().empty());
    EXPECT_NE(a.name(), b.name());
    Buffer<int> in(10);
    for (int i = 0; i < 10; i++) in(i) = i * i;
    RDom r(0, 10);
    Func s("s");
    s() = 0;
    s() += in(r);
    s.update().split(r, a, b, 4);
    Buffer<int> o = s.realize(std::vector<int>{});
    EXPECT_EQ(o(), 285);
}

TEST(Schedules, LoadAheadErrors) {
    using weft_test::error_of;
    // Fresh inputs for each case (A.in() is A's wrapper for every later pipeline).
    auto inputs = [] {
        std::pair<Buffer<int>, Buffer<int>> ab{Buffer<int>({8, 4}, "A"), Buffer<int>({4, 8}, "B")};
        weft_test::fill_pattern(ab.first, 1, -9, 9);
        weft_test::fill_pattern(ab.second, 2, -9, 9);
        return ab;
    };
    Var i("i"), j("j");
    RDom k(0, 8, "k");
    RVar ko("ko"), ki("ki");
    // Not computed at a loop.
    {
        auto [A, B] = inputs();
        auto C_out = product_pipeline(i, j, k, A(k, j), B);
        Func &C = C_out.first, &out = C_out.second;
        Func Aw = A.in();
        Aw.compute_root().load_ahead();
        std::string e = error_of([&] { out.realize({4, 4}); });
        EXPECT_NE(e.find("load_ahead"), std::string::npos) << e;
        EXPECT_NE(e.find("not computed at a loop"), std::string::npos) << e;
    }
    // Its loop unrolled.
    {
        auto [A, B] = inputs();
        auto C_out = product_pipeline(i, j, k, A(k, j), B);
        Func &C = C_out.first, &out = C_out.second;
        C.update().split(k, ko, ki, 4).reorder(i, ki, j, ko).unroll(ko);
        A.in().compute_at(C, ko).load_ahead();
        std::string e = error_of([&] { out.realize({4, 4}); });
        EXPECT_NE(e.find("serial loop"), std::string::npos) << e;
    }
    // Its production reads a Func written in the same loop.
    {
        auto [A, B] = inputs();
        Func h("h"), g("g");
        h(i, j) = A(i, j) * 2;
        g(i, j) = h(i, j) + 1;
        auto C_out = product_pipeline(i, j, k, g(k, j), B);
        Func &C = C_out.first, &out = C_out.second;
        C.update().split(k, ko, ki, 4).reorder(i, ki, j, ko);
        h.compute_at(C, ko);
        g.compute_at(C, ko).load_ahead();
        std::string e = error_of([&] { out.realize({4, 4}); });
        EXPECT_NE(e.find("\"g\".load_ahead()"), std::string::npos) << e;
        EXPECT_NE(e.find("reads \"h\""), std::string::npos) << e;
    }
}

TEST(Schedules, ScatterWithSplitRVars) {
    const int W = 19, H = 5;
    Buffer<uint8_t> in(W, H);
    weft_test::fill_pattern(in, 8, 0, 15);
    std::vector<int> ref(16, 0);
    for (int j = 0; j < H; j++)
        for (int i = 0; i < W; i++) ref[in(i, j)]++;
    Var x("x"), xo("xo"), xi("xi");
    RDom r(0, W, 0, H);
    RVar rxo("rxo"), rxi("rxi");
    Func h("hist_sched");
    h(x) = 0;
    h(cast<int>(in(r.x, r.y))) += 1;
    h.update(0).split(r.x, rxo, rxi, 4);
    h.vectorize(x, 8);
    Func o("hist_sched_out");
    o(x) = h(x) + 1;
    h.compute_root();
    Buffer<int> out = o.realize({16});
    for (int b = 0; b < 16; b++) EXPECT_EQ(out(b), ref[b] + 1) << b;
}

TEST(Schedules, ScanWithScheduledPureVar) {
    const int W = 12, H = 10;
    Buffer<int> in(W, H);
    weft_test::fill_pattern(in, 4, -5, 5);
    Var x("x"), y("y"), yo("yo"), yi("yi");
    RDom r(1, W - 1);
    Func s("scan_sched");
    s(x, y) = in(x, y);
    s(r, y) = s(r - 1, y) + in(r, y);
    s.update(0).split(y, yo, yi, 4).parallel(yo).reorder(yi, r.x, yo).vectorize(yi);
    s.vectorize(x, 4).parallel(y);
    Buffer<int> out = s.realize({W, H});
    for (int j = 0; j < H; j++) {
        int acc = 0;
        for (int i = 0; i < W; i++) {
            acc += in(i, j);
            EXPECT_EQ(out(i, j), acc) << i << "," << j;
        }
    }
}

TEST(Schedules, SlidingWindowStoreRoot) {
    // A vertical stencil with the producer stored at root and computed per row: sliding window.
    const int W = 10, H = 15;
    Var x("x"), y("y");
    Func p("slide_p"), c("slide_c");
    p(x, y) = x * 3 + y * y;
    c(x, y) = p(x, y - 1) + p(x, y) + p(x, y + 1);
    p.store_root().compute_at(c, y);
    Buffer<int> out = c.realize({W, H});
    for (int j = 0; j < H; j++)
        for (int i = 0; i < W; i++) {
            auto P = [](int a, int b) { return a * 3 + b * b; };
            EXPECT_EQ(out(i, j), P(i, j - 1) + P(i, j) + P(i, j + 1));
        }
}

TEST(Schedules, SlidingWindowWithRoundUpProducer) {
    // Stored at root, computed per x of the consumer, with a RoundUp split of the producer's x.
    const int W = 21, H = 32;
    Var x("x"), y("y"), xo("xo"), xi("xi");
    Func p("slide_ru_p"), c("slide_ru_c");
    p(x, y) = x * 3 + y * y;
    c(x, y) = p(x, y - 1) + p(x, y + 1) + p(x + 1, y);
    p.store_root().compute_at(c, x).split(x, xo, xi, 8, TailStrategy::RoundUp);
    Buffer<int> out = c.realize({W, H});
    auto P = [](int a, int b) { return a * 3 + b * b; };
    int bad = 0;
    for (int j = 0; j < H; j++)
        for (int i = 0; i < W; i++)
            if (out(i, j) != P(i, j - 1) + P(i, j + 1) + P(i + 1, j) && bad++ < 5)
                ADD_FAILURE() << "(" << i << ", " << j << "): got " << out(i, j);
    EXPECT_EQ(bad, 0);
}

TEST(Schedules, BoundOnOutput) {
    Var x("x"), y("y");
    Func f("bound_out");
    f(x, y) = x + y;
    f.bound(x, 0, 16).vectorize(x, 16);
    Buffer<int> out = f.realize({16, 3});
    for (int j = 0; j < 3; j++)
        for (int i = 0; i < 16; i++) EXPECT_EQ(out(i, j), i + j);
}

TEST(Schedules, ChainingReturnsSelf) {
    Var x("x"), y("y"), xo("xo"), xi("xi");
    Func f("chain_f");
    f(x, y) = x;
    f(x, y) += 1;
    Func &r1 = f.split(x, xo, xi, 4);
    EXPECT_EQ(&r1, &f);
    Stage s = f.update(0);
    Stage &r2 = s.split(x, xo, xi, 2);
    EXPECT_EQ(&r2, &s);
    EXPECT_EQ(&s.parallel(y), &s);
}

}  // namespace

namespace {
// Perfectly nested parallel loops run as one parallel loop over their product (every thread
// finds work where the outer loop alone has fewer iterations than threads); a nest with storage
// between the two loops stays as it is (the storage belongs to one outer iteration). Both
// compute the same values as the serial schedule, at sizes that divide and do not.
TEST(Schedules, NestedParallelLoopsFuse) {
    for (int variant = 0; variant < 2; variant++) {
        for (auto sz : {std::array<int, 2>{16, 8}, std::array<int, 2>{13, 7}, std::array<int, 2>{1, 1}}) {
            SCOPED_TRACE(variant);
            Pipe p(sz[0], sz[1]);
            Var yo("yo"), yi("yi");
            // Loops, outermost first: yo, x, yi.
            p.out.split(p.y, yo, yi, 2).reorder(yi, p.x, yo).parallel(yo).parallel(p.x);
            p.out.update().parallel(p.y);
            if (variant == 0) p.mid.compute_at(p.out, p.x);  // inside the inner loop: fusable
            else p.mid.compute_at(p.out, yo);  // between the two loops: not
            Buffer<int> o = p.out.realize({sz[0], sz[1]});
            for (int j = 0; j < sz[1]; j++)
                for (int i = 0; i < sz[0]; i++) ASSERT_EQ(o(i, j), p.O(i, j)) << i << "," << j;
            std::string ir = Pipeline(p.out).lowered_ir({16, 8});
            std::string last = ir.substr(ir.find("after fuse_parallel_nests"));
            last = last.substr(0, last.find("// ----", 10));
            EXPECT_EQ(last.find(".fused") != std::string::npos, variant == 0) << last;
        }
    }
    // Extents whose product passes 2^31 - 1 (the fused loop's counter is 32-bit: an atomic
    // update over a 2^16 x 2^16 domain, both loops parallel): left nested.
    Var x("x");
    RDom r(0, 1 << 16, 0, 1 << 16, "r");
    Func big("big");
    big(x) = 0;
    big(r.x % 4) += 1;
    big.update().atomic().parallel(r.y).parallel(r.x);
    std::string ir = Pipeline(big).lowered_ir({4});
    std::string last = ir.substr(ir.find("after fuse_parallel_nests"));
    EXPECT_NE(last.find("parallel (big.s1.r.y"), std::string::npos) << last.substr(0, 600);
    EXPECT_EQ(last.find(".fused"), std::string::npos) << last.substr(0, 600);
}
}  // namespace

namespace {
// partition_loops: a loop whose vectorized body clamps indices that move with it is split into
// edges and a middle with no clamp; clamps that do not move with a loop (an index computed from
// an outer loop only) leave that loop whole. Values as the plain C++ computes them.
TEST(Schedules, PartitionLoopsPeelsOnlyLoopsItsClampsMoveWith) {
    const int W = 100, H = 6;
    Buffer<float> in(W, H);
    for (int j = 0; j < H; j++)
        for (int i = 0; i < W; i++) in(i, j) = (float)(i * 7 + j);
    Var x("x"), y("y"), k("k");
    Func f("f");
    // The row index is clamped with y only: not a clamp that the k loop moves.
    f(x, y, k) = in(clamp(x - 1, 0, W - 1), clamp(y * 2 - 1, 0, H - 1)) * 2.0f + in(clamp(x + 1, 0, W - 1), 0) + k;
    f.vectorize(x, 8).reorder(x, k, y);
    Buffer<float> o = f.realize({W, H, 2});
    for (int kk = 0; kk < 2; kk++)
        for (int j = 0; j < H; j++)
            for (int i = 0; i < W; i++) {
                float want = in(std::clamp(i - 1, 0, W - 1), std::clamp(j * 2 - 1, 0, H - 1)) * 2.0f +
                             in(std::clamp(i + 1, 0, W - 1), 0) + kk;
                ASSERT_EQ(o(i, j, kk), want) << i << "," << j << "," << kk;
            }
    std::string ir = Pipeline(f).lowered_ir({W, H, 2});
    std::string after = ir.substr(ir.find("after partition_loops"));
    after = after.substr(0, after.find("// ----", 10));
    auto count = [&](const std::string &s) {
        size_t n = 0;
        for (size_t p = after.find(s); p != std::string::npos; p = after.find(s, p + 1)) n++;
        return n;
    };
    EXPECT_EQ(count("for (f.s0.x, "), 3u) << after;  // the x loop: edges and middle
    EXPECT_EQ(count("for (f.s0.k, "), 1u) << after;  // the k loop: whole
}

// A clamp decided by the ranges of the loops around as well (x + y, y in [0, 5]) is bounded with
// those ranges: the x loop is peeled. A loop of a few steps is not worth three copies of its body:
// a 4-step x loop stays whole. Values as the plain C++ computes them.
TEST(Schedules, PartitionLoopsBoundsClampsWithTheLoopsAround) {
    const int W = 100, H = 6;
    Buffer<float> in(W);
    for (int i = 0; i < W; i++) in(i) = (float)(i * 3 % 17);
    auto check = [&](int w, size_t loops) {
        Var x("x"), y("y");
        Func f("f");
        f(x, y) = in(clamp(x + y - 2, 0, W - 1)) * 2.0f;
        f.vectorize(x, 8);
        Buffer<float> o = f.realize({w, H});
        for (int j = 0; j < H; j++)
            for (int i = 0; i < w; i++) ASSERT_EQ(o(i, j), in(std::clamp(i + j - 2, 0, W - 1)) * 2.0f) << i << "," << j;
        std::string ir = Pipeline(f).lowered_ir({w, H});
        std::string after = ir.substr(ir.find("after partition_loops"));
        after = after.substr(0, after.find("// ----", 10));
        size_t n = 0;
        for (size_t p = after.find("for (f.s0.x, "); p != std::string::npos; p = after.find("for (f.s0.x, ", p + 1)) n++;
        EXPECT_EQ(n, loops) << "width " << w << ":\n" << after;
    };
    check(96, 3);  // 12 steps: edges and a middle with no clamp
    check(32, 1);  // 4 steps: whole
}

// A Func computed per strip of its consumer, its own strips split by a factor that the strip's
// footprint is not a multiple of (GuardWithIf: 9 rows per strip of 8, in strips of 16): its inner
// loop stops at the footprint, 9 iterations, not 16 with a guard failing in 7, and what is computed
// at that loop (a producer's row) is computed for the 9 only. The same with names a later split
// reuses (the outer keeps its Var's name, then is split again), and on an update stage. Values as
// the plain C++ computes them, for several heights (the last strip clipped).
TEST(Schedules, AGuardedInnerLoopStopsAtTheExtent) {
    for (int variant = 0; variant < 3; variant++)
        for (int H : {8, 29, 64}) {
            const int W = 40;
            Buffer<int> in(W, H + 1);
            for (int j = 0; j <= H; j++)
                for (int i = 0; i < W; i++) in(i, j) = (i * 7 + j * 13) % 23 - 11;
            Var x("x"), y("y"), yo("yo"), yi("yi"), yoo("yoo"), yoi("yoi");
            Func p("p"), m("m"), c("c");
            p(x, y) = in(x, y) * 3 + 1;
            m(x, y) = p(x, y) - y;
            if (variant == 2) m(x, y) += x;
            c(x, y) = m(x, y) + m(x, y + 1);
            c.split(y, yo, yi, 8);
            m.compute_at(c, yo);
            if (variant == 0) m.split(y, yo, yi, 16);
            if (variant == 1) m.split(y, y, yi, 16).split(y, yoo, yoi, 2);  // (y reused as the outer)
            if (variant == 2) m.update().split(y, yo, yi, 16);
            p.compute_at(m, variant == 2 ? y : yi);
            Buffer<int> o = c.realize({W, H});
            for (int j = 0; j < H; j++)
                for (int i = 0; i < W; i++) {
                    auto M = [&](int a, int b) { return in(a, b) * 3 + 1 - b + (variant == 2 ? a : 0); };
                    ASSERT_EQ(o(i, j), M(i, j) + M(i, j + 1)) << "variant " << variant << " height " << H << " at " << i << "," << j;
                }
            if (variant != 0) continue;  // (the others: checked by their values)
            std::string ir = Pipeline(c).lowered_ir({W, 64});
            std::string nest = ir.substr(0, ir.find("// ---- after"));
            EXPECT_EQ(nest.find("for m.s0.yi in [0, 15]"), std::string::npos) << nest;
            EXPECT_NE(nest.find("for m.s0.yi in [0, 8]"), std::string::npos) << nest;
        }
}

// An update vectorized along a pure Var, its reduction loop inside (innermost by default), over a
// width that is not a multiple of the vector: the tail's guard is decided once per vector, the
// update runs as vectors where every lane is in range and lane by lane only in the tail (it had
// run lane by lane throughout: the guard sat inside the reduction loop), and is not warned about.
TEST(Schedules, AVectorizedUpdateWithATailRunsAsVectors) {
    for (int W : {97, 64, 5, 1}) {
        const int H = 13;
        Buffer<int> in(W, H);
        for (int j = 0; j < H; j++)
            for (int i = 0; i < W; i++) in(i, j) = (i * 7 + j * 13) % 23 - 11;
        Var x("x"), y("y");
        RDom ry(1, H - 1, "ry");
        Func s("colsum");
        s(x, y) = in(x, y);
        s(x, ry) = s(x, ry - 1) + s(x, ry);  // a scan down the columns: each point once
        s.vectorize(x, 8).update().vectorize(x, 8);
        Buffer<int> o = s.realize({W, H});
        for (int i = 0; i < W; i++) {
            int acc = 0;
            for (int j = 0; j < H; j++) {
                acc += in(i, j);
                ASSERT_EQ(o(i, j), acc) << "width " << W << " at " << i << "," << j;
            }
        }
        if (W != 97) continue;
        std::string ir = Pipeline(s).lowered_ir({W, H});
        std::string last = ir.substr(ir.rfind("// ----"));
        // The update's vector stores (8 lanes), in the loop over all but the tail.
        EXPECT_NE(last.find("colsum[ramp(((colsum.s1.x * 8) + (colsum.s1.ry.x * 97)), 1, 8)]"), std::string::npos) << last;
        testing::internal::CaptureStderr();
        Func s2("colsum2");
        s2(x, y) = in(x, y);
        s2(x, ry) = s2(x, ry - 1) + s2(x, ry);
        s2.vectorize(x, 8).update().vectorize(x, 8);
        s2.realize({W, H});
        std::string warnings = testing::internal::GetCapturedStderr();
        EXPECT_EQ(warnings.find("runs as a serial loop"), std::string::npos) << warnings;
    }
}
}  // namespace
