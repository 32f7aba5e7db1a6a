// API.md "Added with the CPU-speed work": in() wrappers, reorder_storage, rfactor, specialize,
// prefetch, store_in, fast_exp / fast_log, reinterpret and per-Func profiling. Each feature is
// checked against plain C++ (or the reference interpreter) on sizes that are and are not
// multiples of the factors used, and its user errors are checked by message.
#include "lang_test_util.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <sstream>

#include "interp/Interpreter.h"

using namespace weft;
using weft_test::error_of;

namespace {

// Compares a 2-D buffer with fn(i, j) over its domain (floats: relative tolerance tol).
template <typename T, typename Fn>
int check_2d(const Buffer<T> &got, Fn ref, const std::string &what, double tol = 0) {
    int bad = 0;
    for (int j = got.dim(1).min(); j <= got.dim(1).max(); j++)
        for (int i = got.dim(0).min(); i <= got.dim(0).max(); i++) {
            double g = (double)got(i, j), r = (double)ref(i, j);
            bool ok = tol > 0 ? std::fabs(g - r) <= tol * std::max(1.0, std::fabs(r)) : g == r;
            if (!ok && bad++ < 5) ADD_FAILURE() << what << ": (" << i << ", " << j << ") got " << g << ", expected " << r;
        }
    return bad;
}

template <typename T, typename Fn>
int check_1d(const Buffer<T> &got, Fn ref, const std::string &what, double tol = 0) {
    int bad = 0;
    for (int i = got.dim(0).min(); i <= got.dim(0).max(); i++) {
        double g = (double)got(i), r = (double)ref(i);
        bool ok = tol > 0 ? std::fabs(g - r) <= tol * std::max(1.0, std::fabs(r)) : g == r;
        if (!ok && bad++ < 5) ADD_FAILURE() << what << ": (" << i << ") got " << g << ", expected " << r;
    }
    return bad;
}

std::string sz(int a, int b, int c = -1) {
    return std::to_string(a) + "x" + std::to_string(b) + (c >= 0 ? "x" + std::to_string(c) : "");
}

// ============================================================================ in() wrappers

// C(i, j) = sum_k A(k, j) * B(i, k), with B read through a wrapper that packs a tile of it
// (computed at the output's tile loop, stored transposed, vectorized).
enum class BSource { Buffer, Func, ImageParam };

void packed_matmul(int M, int N, int K, BSource src, bool transpose_storage) {
    SCOPED_TRACE("matmul " + sz(M, N, K) + " source " + std::to_string((int)src) +
                 (transpose_storage ? " transposed" : ""));
    Buffer<float> A(K, N), B(M, K);
    weft_test::fill_pattern(A, (uint32_t)(M * 7 + N * 3 + K), -10, 10);
    weft_test::fill_pattern(B, (uint32_t)(M + N * 11 + K * 5), -10, 10);
    Var i("i"), j("j"), io("io"), jo("jo"), ii("ii"), ji("ji");
    RDom k(0, K, "k");
    Func C("C"), out("out"), Bf("Bf");
    ImageParam Bp(Float(32), 2, "Bp");
    Bp.set(B);
    Func packed;
    Expr b_ik;
    if (src == BSource::Buffer) {
        b_ik = B(i, k);
        packed = B.in();
    } else if (src == BSource::Func) {
        Var x("x"), y("y");
        Bf(x, y) = B(x, y) * 0.5f;
        b_ik = Bf(i, k);
        packed = Bf.in();
    } else {
        b_ik = Bp(i, k);
        packed = Bp.in();
    }
    C(i, j) = 0.0f;
    C(i, j) += A(k, j) * b_ik;
    out(i, j) = C(i, j) + 1.0f;

    out.tile(i, j, io, jo, ii, ji, 16, 4).vectorize(ii, 8);
    C.compute_at(out, io).vectorize(i, 8);
    C.update(0).reorder(i, k, j).vectorize(i, 8);
    std::vector<Var> pa = packed.args();
    ASSERT_EQ(pa.size(), 2u);
    packed.compute_at(out, io).vectorize(pa[0], 8);
    if (transpose_storage) packed.reorder_storage(pa[1], pa[0]);

    Buffer<float> o(M, N);
    o.fill(-777.0f);
    out.realize(o);
    float scale = src == BSource::Func ? 0.5f : 1.0f;
    check_2d(
        o,
        [&](int x, int y) {
            float s = 0.0f;
            for (int kk = 0; kk < K; kk++) s += A(kk, y) * (B(x, kk) * scale);
            return s + 1.0f;
        },
        "packed matmul", 1e-5);
}

TEST(CpuFeaturesIn, PackedMatmulBuffer) {
    for (auto s : {std::vector<int>{32, 16, 24}, {37, 13, 19}, {1, 1, 1}, {8, 4, 3}, {17, 5, 33}})
        for (bool t : {true, false}) packed_matmul(s[0], s[1], s[2], BSource::Buffer, t);
}
TEST(CpuFeaturesIn, PackedMatmulFunc) {
    for (auto s : {std::vector<int>{32, 16, 24}, {37, 13, 19}, {1, 1, 1}, {9, 7, 2}})
        for (bool t : {true, false}) packed_matmul(s[0], s[1], s[2], BSource::Func, t);
}
TEST(CpuFeaturesIn, PackedMatmulImageParam) {
    for (auto s : {std::vector<int>{32, 16, 24}, {37, 13, 19}, {1, 1, 1}, {23, 9, 8}})
        for (bool t : {true, false}) packed_matmul(s[0], s[1], s[2], BSource::ImageParam, t);
}

TEST(CpuFeaturesIn, FuncWrapperArgsAndNames) {
    Var x("x"), y("y");
    Func f("f"), g("g"), h("h");
    f(x, y) = x + y;
    g(x, y) = f(x, y) * 2;
    h(x, y) = f(x, y) + g(x, y);
    Func w = f.in();
    ASSERT_EQ(w.args().size(), 2u);
    EXPECT_EQ(w.args()[0].name(), "x");
    EXPECT_EQ(w.args()[1].name(), "y");
    EXPECT_EQ(w.dimensions(), 2);
    EXPECT_EQ(w.type(), Int(32));
    EXPECT_NE(w.name(), f.name());
    // The same call gives the same wrapper; a wrapper for one consumer is another Func.
    EXPECT_EQ(f.in().contents(), w.contents());
    Func wg = f.in(g);
    EXPECT_NE(wg.contents(), w.contents());
    EXPECT_EQ(f.in(g).contents(), wg.contents());
    EXPECT_NE(f.in(h).contents(), wg.contents());
    ASSERT_EQ(wg.args().size(), 2u);
    EXPECT_EQ(wg.args()[0].name(), "x");
    EXPECT_EQ(wg.args()[1].name(), "y");

    ImageParam ip(Float(32), 3, "ip");
    Func wi = ip.in();
    ASSERT_EQ(wi.args().size(), 3u);
    EXPECT_EQ(wi.type(), Float(32));
    // Implicit names, as Halide's: _0, _1, _2.
    EXPECT_EQ(wi.args()[0].name(), "_0");
    EXPECT_EQ(wi.args()[1].name(), "_1");
    EXPECT_EQ(wi.args()[2].name(), "_2");
    Buffer<uint8_t> b(4, 5);
    Func wb = b.in();
    ASSERT_EQ(wb.args().size(), 2u);
    EXPECT_EQ(wb.type(), UInt(8));
    EXPECT_EQ(wb.args()[0].name(), "_0");
    EXPECT_EQ(wb.args()[1].name(), "_1");
    EXPECT_EQ(b.in().contents(), wb.contents());
}

// A wrapper wrapped in turn (b.in().in(), f.in().in()): consumers read the outer wrapper, which
// reads the inner one, which reads the original; each realized where it is scheduled.
TEST(CpuFeaturesIn, WrapperOfWrapperChains) {
    for (int W : {16, 13, 1}) {
        SCOPED_TRACE("W " + std::to_string(W));
        Buffer<int> b({W + 1}, "b");
        for (int i = 0; i <= W; i++) b(i) = i * 3 - 5;
        Var x("x"), xo("xo"), xi("xi");
        Func f("f"), h("h");
        f(x) = b(x) * 2 + b(x + 1);
        h(x) = f(x) - f(x) * f(x);
        Func bi = b.in(), bo = bi.in(), fi = f.in(), fo = fi.in();
        EXPECT_NE(bo.contents(), bi.contents());
        h.split(x, xo, xi, 4, TailStrategy::GuardWithIf);
        fo.compute_at(h, xo);
        fi.compute_at(h, xo);
        f.compute_at(h, xo);
        bo.compute_at(h, xo);
        bi.compute_root();
        Buffer<int> o = h.realize({W});
        auto F = [&](int i) { return b(i) * 2 + b(i + 1); };
        check_1d(o, [&](int i) { return F(i) - F(i) * F(i); }, "in().in()");
        std::string ir = Pipeline(h).lowered_ir({W});
        ir = ir.substr(ir.find("after storage_flattening"));
        for (const std::string &name : {bi.name(), bo.name(), fi.name(), fo.name()})
            EXPECT_NE(ir.find("allocate " + name + "["), std::string::npos) << name << "\n" << ir;
        // h reads only the outer wrapper of f.
        size_t h_store = ir.find("h[");
        ASSERT_NE(h_store, std::string::npos) << ir;
        std::string h_line = ir.substr(h_store, ir.find('\n', h_store) - h_store);
        EXPECT_NE(h_line.find(fo.name() + "["), std::string::npos) << h_line;
        EXPECT_EQ(h_line.find(fi.name() + "["), std::string::npos) << h_line;
    }
}

// f.in(g) is read by g alone: h still reads f (results; the wrapper is realized in the lowered
// IR; asking again gives the same wrapper). WrapperForOneConsumerBound shows h does not read it.
TEST(CpuFeaturesIn, WrapperForOneConsumer) {
    for (int W : {16, 13, 1}) {
        SCOPED_TRACE("W " + std::to_string(W));
        Var x("x");
        Func f("f"), g("g"), h("h");
        f(x) = x * x - 7;
        g(x) = f(x) + f(x + 2) * 3;
        h(x) = f(x) * 5 + g(x) - g(x + 1);
        Func w = f.in(g);
        w.compute_root().vectorize(x, 4);
        g.compute_root();
        f.compute_root();
        Buffer<int> o = h.realize({W});
        auto F = [](int i) { return i * i - 7; };
        auto G = [&](int i) { return F(i) + F(i + 2) * 3; };
        check_1d(o, [&](int i) { return F(i) * 5 + G(i) - G(i + 1); }, "in(g)");

        std::string ir = Pipeline(h).lowered_ir({W});
        EXPECT_CONTAINS(ir, w.name());
        Func w2 = f.in(g);
        EXPECT_EQ(w2.contents(), w.contents());
    }
}

// in(g) leaves other consumers alone: bound() on the wrapper restricted to g's region is
// enough; if h read the wrapper it would need more of it than the bound allows.
TEST(CpuFeaturesIn, WrapperForOneConsumerBound) {
    const int W = 10;
    Var x("x");
    Func f("f"), g("g"), h("h");
    f(x) = x * 3;
    g(x) = f(x) + 1;  // reads f over [0, W)
    h(x) = f(x + 20) + g(x);  // reads f over [20, W + 20) directly
    Func w = f.in(g);
    w.compute_root().bound(x, 0, W);
    f.compute_root();
    Buffer<int> o = h.realize({W});
    check_1d(o, [&](int i) { return (i + 20) * 3 + i * 3 + 1; }, "in(g) with bound");
    // The same bound on a wrapper for all consumers is too small: h needs [0, W + 20).
    Var y("y");
    Func f2("f2"), g2("g2"), h2("h2");
    f2(y) = y * 3;
    g2(y) = f2(y) + 1;
    h2(y) = f2(y + 20) + g2(y);
    Func w2 = f2.in();
    w2.compute_root().bound(y, 0, W);
    std::string msg = error_of([&] { h2.realize({W}); });
    EXPECT_CONTAINS(msg, w2.name());
}

TEST(CpuFeaturesIn, ImageParamWrapper) {
    for (auto s : {std::vector<int>{16, 8}, {13, 7}, {1, 1}, {5, 3}}) {
        const int W = s[0], H = s[1];
        SCOPED_TRACE(sz(W, H));
        Buffer<int> in(W + 2, H + 1);
        weft_test::fill_pattern(in, (uint32_t)(W * 5 + H), -50, 50);
        ImageParam ip(Int(32), 2, "img");
        ip.set(in);
        Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
        Func out("out");
        out(x, y) = ip(x, y) * 2 + ip(x + 2, y) - ip(x + 1, y + 1);
        Func w = ip.in();
        std::vector<Var> a = w.args();
        out.tile(x, y, xo, yo, xi, yi, 8, 4);
        w.compute_at(out, xo).reorder_storage(a[1], a[0]).vectorize(a[0], 4);
        Buffer<int> o = out.realize({W, H});
        check_2d(o, [&](int i, int j) { return in(i, j) * 2 + in(i + 2, j) - in(i + 1, j + 1); }, "ImageParam.in()");
        // A wrapper for one consumer only, computed at root.
        ImageParam ip2(Int(32), 2, "img2");
        ip2.set(in);
        Func g("g"), out2("out2");
        g(x, y) = ip2(x + 1, y) + 1;
        out2(x, y) = g(x, y) * ip2(x, y + 1);
        ip2.in(g).compute_root().vectorize(Var("_0"), 8);
        g.compute_root();
        Buffer<int> o2 = out2.realize({W, H});
        check_2d(o2, [&](int i, int j) { return (in(i + 1, j) + 1) * in(i, j + 1); }, "ImageParam.in(g)");
    }
}

TEST(CpuFeaturesIn, BufferWrapper) {
    for (auto s : {std::vector<int>{16, 8}, {13, 7}, {1, 1}}) {
        const int W = s[0], H = s[1];
        SCOPED_TRACE(sz(W, H));
        Buffer<float> in(W + 1, H + 1);
        weft_test::fill_pattern(in, (uint32_t)(W * 3 + H), -20, 20);
        Var x("x"), y("y"), yo("yo"), yi("yi");
        Func out("out");
        out(x, y) = in(x, y) + in(x + 1, y + 1) * 0.5f;
        Func w = in.in();
        out.split(y, yo, yi, 3).vectorize(x, 8);
        w.compute_at(out, yo).vectorize(w.args()[0], 8);
        Buffer<float> o = out.realize({W, H});
        check_2d(o, [&](int i, int j) { return in(i, j) + in(i + 1, j + 1) * 0.5f; }, "Buffer.in()");
    }
}

TEST(CpuFeaturesIn, Errors) {
    Var x("x");
    Func undef("undef"), f("f");
    EXPECT_CONTAINS(error_of([&] { undef.in(); }), "undef");
    f(x) = x;
    EXPECT_CONTAINS(error_of([&] { f.in(f); }), "\"f\"");
}

// ============================================================================ reorder_storage

TEST(CpuFeaturesReorderStorage, IntermediateResultsUnchanged) {
    for (auto s : {std::vector<int>{16, 8, 3}, {13, 7, 2}, {1, 1, 1}, {9, 4, 5}}) {
        const int W = s[0], H = s[1], Cn = s[2];
        SCOPED_TRACE(sz(W, H, Cn));
        Var x("x"), y("y"), c("c");
        Func prod("prod"), out("out");
        prod(x, y, c) = x * 100 + y * 10 + c;
        out(x, y, c) = prod(x, y, c) * 2 + prod(x + 1, y, c) - prod(x, y + 1, c);
        for (int variant = 0; variant < 4; variant++) {
            SCOPED_TRACE("variant " + std::to_string(variant));
            prod.compute_root();
            if (variant == 0) prod.reorder_storage(c, x, y);
            if (variant == 1) prod.reorder_storage(y, x);  // only y and x swap: (y, x, c)
            if (variant == 2) prod.reorder_storage(c, y, x).vectorize(x, 4);
            if (variant == 3) {
                Var yo("yo"), yi("yi");
                out.split(y, yo, yi, 2);
                prod.compute_at(out, yo).reorder_storage(y, c, x);
            }
            Realization r = out.realize({W, H, Cn});
            Buffer<int> o = r;
            int bad = 0;
            for (int k = 0; k < Cn; k++)
                for (int j = 0; j < H; j++)
                    for (int i = 0; i < W; i++) {
                        auto P = [](int a, int b, int cc) { return a * 100 + b * 10 + cc; };
                        int e = P(i, j, k) * 2 + P(i + 1, j, k) - P(i, j + 1, k);
                        if (o(i, j, k) != e && bad++ < 5)
                            ADD_FAILURE() << "(" << i << ", " << j << ", " << k << ") got " << o(i, j, k) << ", expected " << e;
                    }
            EXPECT_EQ(bad, 0);
        }
    }
}

TEST(CpuFeaturesReorderStorage, OnOutputResultsUnchanged) {
    Var x("x"), y("y");
    Func out("out");
    out(x, y) = x * 7 - y * 3;
    out.reorder_storage(y, x);  // the output buffer's layout is the caller's: must be unaffected
    Buffer<int> o = out.realize({11, 6});
    check_2d(o, [](int i, int j) { return i * 7 - j * 3; }, "reorder_storage on output");
}

TEST(CpuFeaturesReorderStorage, Errors) {
    Var x("x"), y("y"), z("z");
    Func f("f"), undef("undef");
    f(x, y) = x + y;
    std::string m = error_of([&] { f.reorder_storage(z, x); });
    EXPECT_CONTAINS(m, "reorder_storage");
    EXPECT_CONTAINS(m, "\"z\"");
    EXPECT_CONTAINS(m, "\"f\"");
    m = error_of([&] { f.reorder_storage(x, x); });
    EXPECT_CONTAINS(m, "\"x\"");
    m = error_of([&] { undef.reorder_storage(x, y); });
    EXPECT_CONTAINS(m, "undef");
}

// ============================================================================ rfactor

// total() = sum of in(r): split r, factor the inner part into a Var (vectorized intermediate).
TEST(CpuFeaturesRfactor, FloatSumInnerSplit) {
    for (int N : {64, 61, 8, 5, 1, 1000}) {
        SCOPED_TRACE("N " + std::to_string(N));
        Buffer<float> in(N);
        weft_test::fill_pattern(in, (uint32_t)N, 0, 1000);
        RDom r(0, N, "r");
        Func total("total");
        total() = 0.0f;
        total() += in(r) * 0.001f;
        RVar ro("ro"), ri("ri");
        Var u("u");
        total.update(0).split(r, ro, ri, 8);
        Func intm = total.update(0).rfactor(ri, u);
        ASSERT_TRUE(intm.defined());
        EXPECT_EQ(intm.dimensions(), 1);
        intm.compute_root().vectorize(u, 8);
        intm.update(0).vectorize(u, 8);
        Buffer<float> o = total.realize();
        double ref = 0;
        for (int i = 0; i < N; i++) ref += in(i) * 0.001f;
        EXPECT_NEAR(o(), ref, 1e-4 * std::max(1.0, std::fabs(ref)));
    }
}

// rowsum(y) = sum_x in(x, y) in ints: split r, factor the outer part into a Var and run the
// intermediate in parallel over it.
TEST(CpuFeaturesRfactor, IntRowSumOuterSplitParallel) {
    for (auto s : {std::vector<int>{64, 8}, {50, 5}, {3, 2}, {16, 1}, {1, 3}}) {
        const int W = s[0], H = s[1];
        SCOPED_TRACE(sz(W, H));
        Buffer<int> in(W, H);
        weft_test::fill_pattern(in, (uint32_t)(W * 3 + H), -1000, 1000);
        Var y("y"), v("v");
        RDom r(0, W, "r");
        Func rowsum("rowsum");
        rowsum(y) = 0;
        rowsum(y) += in(r, y);
        RVar ro("ro"), ri("ri");
        rowsum.update(0).split(r, ro, ri, 16);
        Func intm = rowsum.update(0).rfactor(ro, v);
        EXPECT_EQ(intm.dimensions(), 2);
        intm.compute_root().parallel(v);
        intm.update(0).parallel(v);
        Buffer<int> o = rowsum.realize({H});
        check_1d(o,
                 [&](int j) {
                     int t = 0;
                     for (int i = 0; i < W; i++) t += in(i, j);
                     return t;
                 },
                 "rowsum");
    }
}

// Without a split: rfactor of a 2-D RDom's y into a Var (the vector form with two pairs too).
TEST(CpuFeaturesRfactor, TwoDimensionalAndVectorForm) {
    for (auto s : {std::vector<int>{16, 8}, {13, 7}, {1, 1}}) {
        const int W = s[0], H = s[1];
        SCOPED_TRACE(sz(W, H));
        Buffer<int> in(W, H);
        weft_test::fill_pattern(in, (uint32_t)(W + H * 13), -100, 100);
        int ref = 0;
        for (int j = 0; j < H; j++)
            for (int i = 0; i < W; i++) ref += in(i, j) * (i + 1);
        for (int form = 0; form < 3; form++) {
            SCOPED_TRACE("form " + std::to_string(form));
            RDom r(0, W, 0, H, "r");
            Func total("total");
            total() = 0;
            total() += in(r.x, r.y) * (r.x + 1);
            Var u("u"), v("v");
            Func intm;
            if (form == 0) {
                intm = total.update(0).rfactor(r.y, v);
                intm.compute_root().parallel(v);
            } else if (form == 1) {
                intm = total.update(0).rfactor({{r.x, u}, {r.y, v}});
                intm.compute_root().vectorize(u, 4).parallel(v);
            } else {
                intm = total.update(0).rfactor({{r.x, u}});
                intm.compute_root().vectorize(u, 8);
                intm.update(0).vectorize(u, 8);
            }
            Buffer<int> o = total.realize();
            EXPECT_EQ(o(), ref);
        }
    }
}

template <typename T>
void minmax_product_check(int which, int W, int H) {
    // which: 0 max, 1 min, 2 product
    SCOPED_TRACE(std::string(which == 0 ? "maximum" : which == 1 ? "minimum" : "product") + " " + sz(W, H));
    Buffer<T> in(W, H);
    if (which == 2) {
        // Factors -1, 1, 1, 2 (ints: |product| < 2^24; floats: exact).
        uint32_t s = (uint32_t)(W * 17 + H);
        in.for_each_offset([&](int64_t off) {
            s = s * 1664525u + 1013904223u;
            const T vals[] = {(T)-1, (T)1, (T)1, (T)2};
            in.data()[off] = vals[(s >> 10) % 4];
        });
    } else {
        weft_test::fill_pattern(in, (uint32_t)(W * 5 + H * 3), -10000, 10000);
    }
    Var y("y"), u("u");
    RDom r(0, W, "r");
    Func f("f");
    if (which == 0) {
        f(y) = type_of<T>().min();
        f(y) = max(f(y), in(r, y));
    } else if (which == 1) {
        f(y) = type_of<T>().max();
        f(y) = min(f(y), in(r, y));
    } else {
        f(y) = cast<T>(1);
        f(y) = f(y) * in(r, y);
    }
    RVar ro("ro"), ri("ri");
    f.update(0).split(r, ro, ri, 4);
    Func intm = f.update(0).rfactor(ri, u);
    intm.compute_root().vectorize(u, 4);
    intm.update(0).vectorize(u, 4).parallel(y);
    Buffer<T> o = f.realize({H});
    check_1d(o,
             [&](int j) {
                 double acc = which == 0 ? -1e300 : which == 1 ? 1e300 : 1.0;
                 for (int i = 0; i < W; i++) {
                     double v = (double)in(i, j);
                     acc = which == 0 ? std::max(acc, v) : which == 1 ? std::min(acc, v) : acc * v;
                 }
                 return acc;
             },
             "rfactor");
}

TEST(CpuFeaturesRfactor, MaximumMinimumProduct) {
    for (auto s : {std::vector<int>{16, 4}, {13, 3}, {1, 1}, {24, 5}, {3, 2}})
        for (int which = 0; which < 3; which++) {
            minmax_product_check<int>(which, s[0], s[1]);
            minmax_product_check<float>(which, s[0], s[1]);
        }
}

// A 2-D Func's reduction factored over the inner part of a split RVar, with the Func and its
// intermediate both computed at a split loop of the consumer.
TEST(CpuFeaturesRfactor, IntermediateComputedAtConsumerLoop) {
    for (auto s : {std::vector<int>{16, 8, 12}, {13, 7, 5}, {1, 1, 1}}) {
        const int W = s[0], H = s[1], K = s[2];
        SCOPED_TRACE(sz(W, H, K));
        Buffer<int> in(K, W, H);
        weft_test::fill_pattern(in, (uint32_t)(W + H + K), -30, 30);
        Var x("x"), y("y"), u("u"), yo("yo"), yi("yi");
        RDom r(0, K, "r");
        Func s_("s"), out("out");
        s_(x, y) = 0;
        s_(x, y) += in(r, x, y);
        out(x, y) = s_(x, y) * 2;
        RVar ro("ro"), ri("ri");
        s_.update(0).split(r, ro, ri, 3);
        Func intm = s_.update(0).rfactor(ri, u);
        out.split(y, yo, yi, 2);
        s_.compute_at(out, yo);
        intm.compute_at(out, yo).vectorize(x, 4);
        Buffer<int> o = out.realize({W, H});
        check_2d(o,
                 [&](int i, int j) {
                     int t = 0;
                     for (int k = 0; k < K; k++) t += in(k, i, j);
                     return t * 2;
                 },
                 "rfactor at loop");
    }
}

TEST(CpuFeaturesRfactor, Errors) {
    Var x("x"), u("u");
    RDom r(0, 10, "r"), other(0, 4, "other");
    Func g("g");
    g(x) = x * 3;
    {
        Func f("fnonassoc");
        f(x) = 1;
        f(x) = f(x) * 2 + g(r);
        std::string m = error_of([&] { f.update(0).rfactor(r, u); });
        EXPECT_CONTAINS(m, "fnonassoc");
        EXPECT_CONTAINS(m, "associative");
    }
    {
        Func f("fsub");
        f(x) = 1;
        f(x) = g(r) - f(x);  // not f(x) op e
        std::string m = error_of([&] { f.update(0).rfactor(r, u); });
        EXPECT_CONTAINS(m, "fsub");
    }
    {
        Func f("fpure");
        f(x) = 0;
        f(x) += g(r);
        std::string m = error_of([&] { Stage(f.contents(), 0).rfactor(r, u); });
        EXPECT_CONTAINS(m, "fpure");
        EXPECT_CONTAINS(m, "update");
    }
    {
        Func f("fother");
        f(x) = 0;
        f(x) += g(r);
        std::string m = error_of([&] { f.update(0).rfactor(other, u); });
        EXPECT_CONTAINS(m, "fother");
        EXPECT_CONTAINS(m, other.x.name());
        EXPECT_CONTAINS(m, "not an RVar");
        // The new Var may not be one of the Func's own.
        m = error_of([&] { f.update(0).rfactor(r, x); });
        EXPECT_CONTAINS(m, "\"x\"");
        // The algorithm is untouched by the failed attempts: it still computes.
        Buffer<int> o = f.realize({2});
        EXPECT_EQ(o(0), 3 * 45);
    }
    {
        Func f("fself");  // the reduced value reads f again
        f(x) = 1;
        f(x) = f(x) + f(x - 1) * g(r);
        EXPECT_CONTAINS(error_of([&] { f.update(0).rfactor(r, u); }), "fself");
    }
}

// ============================================================================ specialize

TEST(CpuFeaturesSpecialize, ParamBranches) {
    Param<int> p("p");
    ImageParam ip(Int(32), 2, "in");
    Var x("x"), y("y"), xi("xi"), yo("yo"), yi("yi");
    Func out("out");
    out(x, y) = ip(x, y) * p + x - y;
    out(x, y) += ip(x + 1, y) * (p + 1);
    out.specialize(p == 1).vectorize(x, 8).parallel(y);
    out.specialize(p > 10).split(y, yo, yi, 2).vectorize(x, 4);
    out.update(0).specialize(p == 1).vectorize(x, 4);
    out.update(0).specialize(p < 0).split(x, x, xi, 3).unroll(xi);
    Callable fn = Pipeline(out).compile_to_callable({ip, p});
    for (auto s : {std::vector<int>{16, 8}, {13, 7}, {1, 1}}) {
        const int W = s[0], H = s[1];
        Buffer<int> in(W + 1, H);
        weft_test::fill_pattern(in, (uint32_t)(W * 9 + H), -100, 100);
        uint64_t comps = 0;
        int call = 0;
        for (int pv : {1, 20, 3, -4, 1, 11, 0, 10}) {
            SCOPED_TRACE(sz(W, H) + " p " + std::to_string(pv));
            Buffer<int> o(W, H);
            o.fill(-1);
            ASSERT_EQ(fn(in, pv, o), 0);
            if (call++ == 0) comps = cache_stats().compilations;
            // Param values are not in the cache key: no compilation after the first call.
            EXPECT_EQ(cache_stats().compilations, comps);
            check_2d(o, [&](int i, int j) { return in(i, j) * pv + i - j + in(i + 1, j) * (pv + 1); }, "specialize");
        }
    }
    // Through realize with p.set() as well.
    Buffer<int> in(10, 4);
    weft_test::fill_pattern(in, 3u, -5, 5);
    ip.set(in);
    for (int pv : {1, 15, 2}) {
        p.set(pv);
        Buffer<int> o = out.realize({9, 4});
        check_2d(o, [&](int i, int j) { return in(i, j) * pv + i - j + in(i + 1, j) * (pv + 1); }, "specialize realize");
    }
}

TEST(CpuFeaturesSpecialize, BufferExtentCondition) {
    ImageParam in(Float(32), 2, "in");
    Var x("x"), y("y"), xo("xo"), xi("xi");
    Func out("out");
    out(x, y) = in(x, y) * 2.0f + 1.0f;
    out.specialize(in.extent(0) % 16 == 0).vectorize(x, 16);
    out.specialize(in.extent(0) >= 8 && in.extent(1) % 2 == 1).split(x, xo, xi, 8, TailStrategy::GuardWithIf).vectorize(xi);
    for (auto s : {std::vector<int>{32, 4}, {30, 4}, {16, 1}, {9, 3}, {9, 2}, {1, 1}, {48, 7}}) {
        const int W = s[0], H = s[1];
        SCOPED_TRACE(sz(W, H));
        Buffer<float> b(W, H);
        weft_test::fill_pattern(b, (uint32_t)(W + H), -40, 40);
        in.set(b);
        Buffer<float> o = out.realize({W, H});
        check_2d(o, [&](int i, int j) { return b(i, j) * 2.0f + 1.0f; }, "extent specialization");
    }
}

// A producer computed at a loop that every branch of its consumer keeps (yo), itself with a
// specialization on the same Param.
TEST(CpuFeaturesSpecialize, ProducerAtLoopAcrossBranches) {
    Param<int> p("p");
    Var x("x"), y("y"), yo("yo"), yi("yi"), xi("xi");
    Buffer<int> in(40, 30);
    weft_test::fill_pattern(in, 9u, -9, 9);
    Func prod("prod"), out("out");
    prod(x, y) = in(x, y) + in(x + 1, y) * 2;
    out(x, y) = prod(x, y) * p + prod(x, y + 1);
    out.split(y, yo, yi, 4);
    out.specialize(p == 2).vectorize(x, 8);
    out.specialize(p > 5).split(x, x, xi, 3);
    prod.compute_at(out, yo).vectorize(x, 4);
    prod.specialize(p == 2).vectorize(x, 8);
    for (int pv : {2, 7, 0, 2}) {
        for (auto s : {std::vector<int>{16, 8}, {13, 7}, {1, 1}}) {
            SCOPED_TRACE(sz(s[0], s[1]) + " p " + std::to_string(pv));
            p.set(pv);
            Buffer<int> o = out.realize({s[0], s[1]});
            auto P = [&](int i, int j) { return in(i, j) + in(i + 1, j) * 2; };
            check_2d(o, [&](int i, int j) { return P(i, j) * pv + P(i, j + 1); }, "producer at loop");
        }
    }
}

TEST(CpuFeaturesSpecialize, Errors) {
    Var x("x"), y("y");
    Param<int> p("p");
    Func f("fspec");
    f(x, y) = x + y * p;
    std::string m = error_of([&] { f.specialize(x > 3); });
    EXPECT_CONTAINS(m, "fspec");
    EXPECT_CONTAINS(m, "specialize");
    m = error_of([&] { f.specialize(p + 1); });  // not a bool
    EXPECT_CONTAINS(m, "fspec");
    RDom r(0, 3, "r");
    f(x, y) += r;
    m = error_of([&] { f.update(0).specialize(r.x > 1); });
    EXPECT_CONTAINS(m, "fspec");
    m = error_of([&] { f.update(0).specialize(x + y == 2); });
    EXPECT_CONTAINS(m, "fspec");
    p.set(2);
    Buffer<int> o = f.realize({4, 3});  // the failed attempts leave the Func computable
    check_2d(o, [](int i, int j) { return i + j * 2 + 3; }, "after errors");
    // A specialization's schedule errors name the missing loop, as the base schedule's do.
    m = error_of([&] { f.specialize(p == 1).vectorize(Var("nope")); });
    EXPECT_CONTAINS(m, "nope");
}

// A Param that appears only in a specialization's condition (not in the algorithm) is still an
// input of the pipeline: realize and compile_to_callable must both work.
TEST(CpuFeaturesSpecialize, ParamOnlyInCondition) {
    Param<int> q("q_only_in_cond");
    Var x("x");
    Func f("fq");
    f(x) = x * 3;
    f.specialize(q == 1).vectorize(x, 4);
    for (int qv : {1, 0}) {
        SCOPED_TRACE("q " + std::to_string(qv));
        q.set(qv);
        try {
            Buffer<int> o = f.realize({10});
            check_1d(o, [](int i) { return i * 3; }, "param only in condition");
        } catch (const Error &e) {
            ADD_FAILURE() << "realize threw: " << e.what();
        }
    }
    Callable fn = Pipeline(f).compile_to_callable({q});
    for (int qv : {1, 0}) {
        Buffer<int> o(7);
        try {
            fn(qv, o);
            check_1d(o, [](int i) { return i * 3; }, "param only in condition (callable)");
        } catch (const Error &e) {
            ADD_FAILURE() << "callable threw: " << e.what();
        }
    }
}

// ============================================================================ prefetch

TEST(CpuFeaturesPrefetch, InputsAndFuncs) {
    for (auto s : {std::vector<int>{16, 8}, {13, 7}, {1, 1}, {64, 3}}) {
        const int W = s[0], H = s[1];
        SCOPED_TRACE(sz(W, H));
        Buffer<float> b(W + 1, H + 2);
        weft_test::fill_pattern(b, (uint32_t)(W + 7 * H), -50, 50);
        ImageParam ip(Float(32), 2, "ip");
        ip.set(b);
        Var x("x"), y("y"), yo("yo"), yi("yi"), xo("xo"), xi("xi");
        auto R = [&](int i, int j) { return b(i, j) + b(i + 1, j + 1) * 2.0f; };
        for (int variant = 0; variant < 5; variant++) {
            SCOPED_TRACE("variant " + std::to_string(variant));
            Func prod("prod"), out("out");
            prod(x, y) = ip(x, y) + ip(x + 1, y + 1) * 2.0f;
            out(x, y) = prod(x, y) * 3.0f - prod(x, y + 1);
            if (variant == 0) {
                out.prefetch(ip, y, 1);
            } else if (variant == 1) {
                prod.compute_root();
                out.prefetch(prod, y, 2).vectorize(x, 8);
            } else if (variant == 2) {
                out.split(y, yo, yi, 2).vectorize(x, 4);
                prod.compute_at(out, yo).prefetch(ip, y, 3);
                out.prefetch(ip, yo, 1);
            } else if (variant == 3) {
                prod.compute_root().prefetch(ip, y, 1);
                out.tile(x, y, xo, yo, xi, yi, 4, 4).prefetch(prod, xo, 1).prefetch(prod, yo, 1);
            } else {
                // Offsets far beyond the loop's end, and 0, and negative.
                out.prefetch(ip, y, 1000).prefetch(ip, x, 0).prefetch(ip, x, -5);
            }
            Buffer<float> o = out.realize({W, H});
            check_2d(o, [&](int i, int j) { return R(i, j) * 3.0f - R(i, j + 1); }, "prefetch", 1e-6);
        }
    }
}

TEST(CpuFeaturesPrefetch, UpdateStageAndSpecialization) {
    Buffer<int> b(20, 10);
    weft_test::fill_pattern(b, 5u, -9, 9);
    Param<int> p("p");
    Var x("x"), y("y");
    RDom r(0, 5, "r");
    Func f("f");
    f(x, y) = 0;
    f(x, y) += b(x + r, y) * p;
    f.update(0).prefetch(b, y, 1).prefetch(b, r, 2);
    f.update(0).specialize(p == 3).prefetch(b, x, 4).vectorize(x, 4);
    for (int pv : {3, 1}) {
        p.set(pv);
        Buffer<int> o = f.realize({15, 9});
        check_2d(o,
                 [&](int i, int j) {
                     int t = 0;
                     for (int k = 0; k < 5; k++) t += b(i + k, j) * pv;
                     return t;
                 },
                 "prefetch in update");
    }
}

TEST(CpuFeaturesPrefetch, Errors) {
    Buffer<int> b(10);
    Var x("x"), y("y");
    Func f("fpf"), g("gpf");
    g(x) = b(x);
    f(x) = g(x) + b(x);
    std::string m = error_of([&] { f.prefetch(b, y, 1); });
    EXPECT_CONTAINS(m, "fpf");
    EXPECT_CONTAINS(m, "\"y\"");
    m = error_of([&] { f.prefetch(g, Var("nosuch"), 1); });
    EXPECT_CONTAINS(m, "nosuch");
    m = error_of([&] { f.prefetch(b, x, 1.5f); });
    EXPECT_CONTAINS(m, "offset");
    ImageParam ip(Int(32), 1, "ipf");
    m = error_of([&] { f.prefetch(ip, RVar("rr"), 1); });
    EXPECT_CONTAINS(m, "rr");
    // A source the Func does not read: refused when the pipeline is compiled, by name.
    Buffer<int> other(std::vector<int>{10}, "other_buf");
    Func h("hpf");
    h(x) = b(x) * 2;
    h.prefetch(other, x, 1);
    m = error_of([&] { h.realize({5}); });
    EXPECT_CONTAINS(m, "other_buf");
}

// ============================================================================ store_in

TEST(CpuFeaturesStoreIn, MemoryTypesResultsUnchanged) {
    for (int W : {16, 13, 1}) {
        for (MemoryType mt : {MemoryType::Auto, MemoryType::Heap, MemoryType::Stack, MemoryType::Register}) {
            SCOPED_TRACE("W " + std::to_string(W) + " memory " + std::to_string((int)mt));
            Var x("x"), y("y"), xo("xo"), xi("xi");
            Buffer<int> in(W + 3, 5);
            weft_test::fill_pattern(in, (uint32_t)W, -9, 9);
            Func prod("prod"), out("out");
            prod(x, y) = in(x, y) * 3 + in(x + 2, y);
            out(x, y) = prod(x, y) + prod(x + 1, y);
            out.split(x, xo, xi, 4);
            if (mt == MemoryType::Register) {
                // Registers: a small constant-size buffer in fully unrolled loops.
                out.unroll(xi);
                prod.compute_at(out, xi).store_in(mt);
            } else {
                prod.compute_at(out, xo).store_in(mt);
            }
            Buffer<int> o = out.realize({W, 5});
            auto P = [&](int i, int j) { return in(i, j) * 3 + in(i + 2, j); };
            check_2d(o, [&](int i, int j) { return P(i, j) + P(i + 1, j); }, "store_in");
        }
    }
}

// ============================================================================ fast_exp / fast_log

// fast_log's error, scaled so that < 1e-6 means "within the bound". The bound is an absolute
// error of 1e-6 beyond the rounding of the float32 result (half an ulp of log x). The plain
// "absolute error below 1e-6" of Expr.h cannot hold in float32 where |log x| >= 16: there half an
// ulp of the result alone is 9.5e-7 .. 3.8e-6 (x = 1e30 gives log 69.08, ulp 7.6e-6), so even a
// correctly rounded log misses it. Where |log x| < 8 the allowance adds at most 2.4e-7.
double log_error(float got, double exact) {
    float a = (float)std::fabs(exact);
    double half_ulp = 0.5 * ((double)std::nextafter(a, INFINITY) - (double)a);
    double err = std::fabs((double)got - exact);
    return err * 1e-6 / (1e-6 + half_ulp);
}

void fast_math_sweep(bool vectorized, bool is_exp) {
    SCOPED_TRACE(std::string(is_exp ? "fast_exp" : "fast_log") + (vectorized ? " vectorized" : " scalar"));
    const int N = 400003;  // not a multiple of the vector width
    Buffer<float> in(N);
    for (int i = 0; i < N; i++) {
        double t = (double)i / (N - 1);
        in(i) = is_exp ? (float)(-87.0 + 175.0 * t)       // [-87, 88]
                       : (float)std::pow(10.0, -30.0 + 60.0 * t);  // [1e-30, 1e30], geometric
    }
    // A dense sweep of the mantissa near 1 for log (where absolute error matters most) and near
    // 0 for exp, appended at the end.
    Var x("x");
    Func f("f");
    f(x) = is_exp ? fast_exp(in(x)) : fast_log(in(x));
    if (vectorized) f.vectorize(x, 8);
    Buffer<float> o = f.realize({N});
    double worst = 0;
    int worst_i = 0;
    for (int i = 0; i < N; i++) {
        double r = is_exp ? std::exp((double)in(i)) : std::log((double)in(i));
        double err = is_exp ? std::fabs(o(i) - r) / r : log_error(o(i), r);
        if (!(err <= worst)) {  // NaN counts as worst
            worst = std::isnan(err) ? 1e30 : err;
            worst_i = i;
        }
    }
    EXPECT_LT(worst, 1e-6) << "at x = " << in(worst_i) << ": got " << o(worst_i) << ", libm "
                           << (is_exp ? std::exp((double)in(worst_i)) : std::log((double)in(worst_i)));
}

TEST(CpuFeaturesFastMath, FastExpScalar) { fast_math_sweep(false, true); }
TEST(CpuFeaturesFastMath, FastExpVectorized) { fast_math_sweep(true, true); }
TEST(CpuFeaturesFastMath, FastLogScalar) { fast_math_sweep(false, false); }
TEST(CpuFeaturesFastMath, FastLogVectorized) { fast_math_sweep(true, false); }

// Every float in a few dense windows: around 0 for exp, around 1 for log (1 - 2^-12 .. 1 + 2^-12
// covers every representable float there), and the ends of the stated ranges.
TEST(CpuFeaturesFastMath, DenseWindows) {
    std::vector<float> xs_exp, xs_log;
    auto window = [](std::vector<float> &v, float lo, float hi) {
        for (float t = lo; t <= hi; t = std::nextafter(t, 1e38f)) v.push_back(t);
    };
    for (int i = -20000; i <= 20000; i++) xs_exp.push_back((float)i * 5e-8f);  // around 0
    window(xs_exp, 87.99f, 88.0f);
    window(xs_exp, -87.0f, -86.999f);
    window(xs_exp, 0.34657f, 0.34658f);  // near ln(2)/2, where the reduction switches k
    window(xs_log, 1.0f - 1.0f / 4096, 1.0f + 1.0f / 4096);
    window(xs_log, 1.1754944e-38f * 2, 1.1754944e-38f * 2.001f);  // small normals
    for (float v : {1e-30f, 1e30f, 2.0f, 0.5f, 3.4e38f, 1.17549435e-38f}) xs_log.push_back(v);
    for (int is_exp = 0; is_exp < 2; is_exp++) {
        auto &xs = is_exp ? xs_exp : xs_log;
        Buffer<float> in((int)xs.size());
        for (size_t i = 0; i < xs.size(); i++) in((int)i) = xs[i];
        for (bool vec : {false, true}) {
            Var x("x");
            Func f("f");
            f(x) = is_exp ? fast_exp(in(x)) : fast_log(in(x));
            if (vec) f.vectorize(x, 16);
            Buffer<float> o = f.realize({(int)xs.size()});
            int bad = 0;
            for (size_t i = 0; i < xs.size(); i++) {
                double r = is_exp ? std::exp((double)xs[i]) : std::log((double)xs[i]);
                double err = is_exp ? std::fabs(o((int)i) - r) / r : log_error(o((int)i), r);
                if (!(err < 1e-6) && bad++ < 5)
                    ADD_FAILURE() << (is_exp ? "fast_exp(" : "fast_log(") << xs[i] << ") = " << o((int)i) << ", libm " << r
                                  << (vec ? " (vectorized)" : "");
            }
            EXPECT_EQ(bad, 0);
        }
    }
}

// fast_tanh: relative error below 1e-6 over a sweep of [-12, 12], every float around the switch
// at |x| = 0.3, and the special values, scalar and vectorized (with a tail).
TEST(CpuFeaturesFastMath, FastTanh) {
    std::vector<float> xs;
    const int N = 400003;
    for (int i = 0; i < N; i++) xs.push_back((float)(-12.0 + 24.0 * (double)i / (N - 1)));
    for (float t = 0.2999f; t <= 0.3001f; t = std::nextafter(t, 1.0f)) {
        xs.push_back(t);
        xs.push_back(-t);
    }
    for (float v : {0.0f, 1e-30f, 1.4e-45f, 1e-5f, 9.0f, 9.02f, 10.0f, 10.5f, 88.0f, 1e30f, 3.4e38f}) {
        xs.push_back(v);
        xs.push_back(-v);
    }
    xs.push_back(INFINITY);
    xs.push_back(-INFINITY);
    xs.push_back(NAN);
    Buffer<float> in((int)xs.size());
    for (size_t i = 0; i < xs.size(); i++) in((int)i) = xs[i];
    for (bool vec : {false, true}) {
        Var x("x");
        Func f("ftanh");
        f(x) = fast_tanh(in(x));
        if (vec) f.vectorize(x, 16);
        Buffer<float> o = f.realize({(int)xs.size()});
        double worst = 0;
        int bad = 0;
        for (size_t i = 0; i < xs.size(); i++) {
            float got = o((int)i), x0 = xs[i];
            if (std::isnan(x0)) {
                EXPECT_TRUE(std::isnan(got)) << "fast_tanh(NaN) = " << got;
                continue;
            }
            double r = std::tanh((double)x0);
            double err = r == 0 ? std::fabs((double)got) : std::fabs((double)got - r) / std::fabs(r);
            worst = std::max(worst, std::isnan(err) ? 1e30 : err);
            if (!(err < 1e-6) && bad++ < 5)
                ADD_FAILURE() << "fast_tanh(" << x0 << ") = " << got << ", libm " << r << (vec ? " (vectorized)" : "");
            if (x0 == 0) EXPECT_EQ(std::signbit(got), std::signbit(x0)) << "the sign of zero";
        }
        EXPECT_EQ(bad, 0);
        std::printf("fast_tanh%s: worst relative error %.3g\n", vec ? " vectorized" : "", worst);
    }
}

TEST(CpuFeaturesFastMath, TypeErrors) {
    Func f("ffm");
    Var x("x");
    EXPECT_CONTAINS(error_of([&] { f(x) = fast_exp(cast<double>(x)); }), "fast_exp");
    EXPECT_CONTAINS(error_of([&] { f(x) = fast_log(cast<double>(x)); }), "fast_log");
    EXPECT_CONTAINS(error_of([&] { f(x) = fast_tanh(cast<double>(x)); }), "fast_tanh");
}

// ============================================================================ reinterpret

TEST(CpuFeaturesReinterpret, FloatIntRoundTrip) {
    std::vector<float> vals = {0.0f, -0.0f, 1.0f, -1.5f, 3.4028235e38f, 1.17549435e-38f, 1e-45f,
                               INFINITY, -INFINITY, 123456.78f, -2.5e-20f};
    for (int i = 0; i < 37; i++) vals.push_back((float)i * 0.37f - 5.0f);
    const int N = (int)vals.size();
    Buffer<float> in(N);
    for (int i = 0; i < N; i++) in(i) = vals[(size_t)i];
    for (bool vec : {false, true}) {
        SCOPED_TRACE(vec ? "vectorized" : "scalar");
        Var x("x");
        Func bits("bits"), back("back");
        bits(x) = reinterpret(Int(32), in(x));
        back(x) = reinterpret(Float(32), bits(x) + 0);  // through an int computation
        if (vec) {
            bits.vectorize(x, 8);
            back.vectorize(x, 4);
        }
        bits.compute_root();
        Buffer<int32_t> ob = bits.realize({N});
        Buffer<float> oback = back.realize({N});
        for (int i = 0; i < N; i++) {
            int32_t e;
            std::memcpy(&e, &vals[(size_t)i], 4);
            EXPECT_EQ(ob(i), e) << "bits of " << vals[(size_t)i];
            EXPECT_EQ(std::memcmp(&oback(i), &vals[(size_t)i], 4), 0)
                << "round trip of " << vals[(size_t)i] << " gave " << oback(i);
        }
    }
    // int -> float -> int, for bit patterns including NaN payloads.
    Buffer<int32_t> ib(9);
    const int32_t pats[] = {0, 1, -1, 0x7fc00001, 0x7f800000, (int32_t)0x80000000, 0x3f800000, 12345678, -98765};
    for (int i = 0; i < 9; i++) ib(i) = pats[i];
    Var x("x");
    Func rt("rt");
    rt(x) = reinterpret(Int(32), reinterpret(Float(32), ib(x)));
    Buffer<int32_t> o = rt.realize({9});
    for (int i = 0; i < 9; i++) EXPECT_EQ(o(i), pats[i]);
    // 64-bit: double <-> int64.
    Func d("d");
    d(x) = reinterpret(Int(64), cast<double>(x) + 0.5);
    Buffer<int64_t> od = d.realize({4});
    for (int i = 0; i < 4; i++) {
        double v = i + 0.5;
        int64_t e;
        std::memcpy(&e, &v, 8);
        EXPECT_EQ(od(i), e);
    }
}

TEST(CpuFeaturesReinterpret, WidthMismatch) {
    Var x("x");
    Expr f = cast<float>(x);
    std::string m = error_of([&] { reinterpret(Int(16), f); });
    EXPECT_CONTAINS(m, "reinterpret");
    EXPECT_CONTAINS(m, "width");
    m = error_of([&] { reinterpret(Float(64), Expr(x)); });
    EXPECT_CONTAINS(m, "reinterpret");
    m = error_of([&] { reinterpret(Int(8), f); });
    EXPECT_CONTAINS(m, "reinterpret");
    m = error_of([&] { reinterpret(Bool(), Expr(x)); });
    EXPECT_CONTAINS(m, "reinterpret");
}

// ============================================================================ profiling

// Restores the profiling switch (global state) whatever happens in the test.
struct ProfileGuard {
    bool was = profile_enabled();
    ~ProfileGuard() {
        set_profile(was);
        reset_profile();
    }
};

// The runs column of the report's line for `name`, or -1 if no line names it.
long long profile_runs(const std::string &report, const std::string &name) {
    std::istringstream is(report);
    std::string line;
    while (std::getline(is, line)) {
        std::istringstream ls(line);
        std::string n, ms, pct, runs;
        if (!(ls >> n >> ms >> pct >> runs)) continue;
        if (n != name) continue;
        try {
            return std::stoll(runs);
        } catch (...) {
            return -1;
        }
    }
    return -1;
}

TEST(CpuFeaturesProfile, TwoStageReport) {
    ProfileGuard guard;
    set_profile(true);
    EXPECT_TRUE(profile_enabled());
    reset_profile();
    Var x("x"), y("y");
    Buffer<float> in(64, 32);
    weft_test::fill_pattern(in, 1u, 0, 10);
    Func producer_("prof_producer"), consumer_("prof_consumer");
    producer_(x, y) = in(x, y) * 2.0f + 1.0f;
    consumer_(x, y) = producer_(x, y) + producer_(x + 1, y);
    producer_.compute_root();
    Buffer<float> o(63, 32);
    for (int rep = 0; rep < 3; rep++) consumer_.realize(o);
    for (int j = 0; j < 32; j++)
        for (int i = 0; i < 63; i++) ASSERT_EQ(o(i, j), in(i, j) * 2.0f + 1.0f + in(i + 1, j) * 2.0f + 1.0f);
    std::string rep = profile_report();
    SCOPED_TRACE(rep);
    EXPECT_GT(profile_runs(rep, "prof_producer"), 0);
    EXPECT_GT(profile_runs(rep, "prof_consumer"), 0);
    reset_profile();
    std::string empty = profile_report();
    EXPECT_EQ(profile_runs(empty, "prof_producer"), -1) << empty;
    EXPECT_EQ(profile_runs(empty, "prof_consumer"), -1) << empty;
    // Off again: a new pipeline runs unprofiled (profiling is part of the cache key).
    set_profile(false);
    EXPECT_FALSE(profile_enabled());
    Func p2("prof_off_p"), c2("prof_off_c");
    p2(x, y) = in(x, y) + 1.0f;
    c2(x, y) = p2(x, y) * 2.0f;
    p2.compute_root();
    Buffer<float> o2 = c2.realize({10, 10});
    EXPECT_EQ(o2(3, 4), (in(3, 4) + 1.0f) * 2.0f);
    // The first pipeline, recompiled without profiling (another cache entry), counts nothing.
    consumer_.realize(o);
    std::string off = profile_report();
    EXPECT_EQ(profile_runs(off, "prof_off_p"), -1) << off;
    EXPECT_EQ(profile_runs(off, "prof_consumer"), -1) << off;
}

TEST(CpuFeaturesProfile, ParallelAndCacheKey) {
    ProfileGuard guard;
    Var x("x"), y("y");
    Func a("prof_par_a"), b("prof_par_b");
    a(x, y) = x + y;
    b(x, y) = a(x, y) * 2;
    a.compute_root().parallel(y);
    b.parallel(y);
    set_profile(false);
    Buffer<int> o = b.realize({32, 16});
    uint64_t before = cache_stats().compilations;
    set_profile(true);
    reset_profile();
    o = b.realize({32, 16});  // the same pipeline and shape: compiled again, profiled
    EXPECT_GT(cache_stats().compilations, before);
    std::string rep = profile_report();
    EXPECT_GT(profile_runs(rep, "prof_par_a"), 0) << rep;
    EXPECT_GT(profile_runs(rep, "prof_par_b"), 0) << rep;
    EXPECT_EQ(o(5, 7), (5 + 7) * 2);
    set_profile(false);
}

}  // namespace

namespace {

// A producer (here the input's wrapper) computed inside the loop of a reduction whose domain has
// a predicate must not be computed for the iterations the predicate excludes: the input below is
// exactly as large as the algorithm reads. Such predicates come from RDom::where() and from
// rfactor of an RVar split by a factor that does not divide its extent (16 by 3: the last ko
// iteration has one ki, 15; the other two are guarded off). A plain guarded split (variants 0, 1)
// already works.
TEST(CpuFeaturesRfactor, ProducerInsidePredicatedReduction) {
    const char *what[] = {"split(k, ko, ki, 3); in.in().compute_at(s, ko)",
                          "split(k, ko, ki, 3); in.in().compute_at(s, ki)",
                          "split(k, ko, ki, 3); intm = rfactor(ki, u), root; in.in().compute_at(intm, ko)",
                          "split(k, ko, ki, 3); intm = rfactor(ki, u), root; in.in().compute_at(intm, x)",
                          "split(k, ko, ki, 3); intm = rfactor(ko, u), root; in.in().compute_at(intm, ki)",
                          "RDom k(0, 18).where(k < 16); in.in().compute_at(s, k)",
                          "RDom k(0, 18).where(k < 16); in.in().compute_at(s, x)"};
    for (int variant = 0; variant < 7; variant++) {
        SCOPED_TRACE(what[variant]);
        const int K = 16;
        Buffer<int> in(K);
        for (int i = 0; i < K; i++) in(i) = i;
        RDom k(0, variant >= 5 ? K + 2 : K, "k");
        if (variant >= 5) k.where(k < K);
        Func s("s");
        Var x("x"), u("u");
        s(x) = 0;
        s(x) += in(k) * (x + 1);
        RVar ko("ko"), ki("ki");
        if (variant < 5) s.update(0).split(k, ko, ki, 3);
        Func w = in.in();
        if (variant == 0) {
            w.compute_at(s, ko);
        } else if (variant == 1) {
            w.compute_at(s, ki);
        } else if (variant == 2 || variant == 3) {
            Func intm = s.update(0).rfactor(ki, u);
            intm.compute_root();
            if (variant == 2)
                w.compute_at(intm, ko);
            else
                w.compute_at(intm, x);
        } else if (variant == 4) {
            Func intm = s.update(0).rfactor(ko, u);
            intm.compute_root();
            w.compute_at(intm, ki);
        } else if (variant == 5) {
            w.compute_at(s, k);
        } else {
            w.compute_at(s, x);
        }
        try {
            Buffer<int> o = s.realize({3});
            for (int i = 0; i < 3; i++) EXPECT_EQ(o(i), (i + 1) * 120);
        } catch (const Error &e) {
            ADD_FAILURE() << "realize threw: " << e.what();
        }
    }
}

}  // namespace

// ============================================================================ rfactor at computed indices

// A histogram (Halide's rfactor idiom): hist(in(r.x, r.y)) += 1, factored over rows (r.y -> u),
// the intermediate's rows counted in parallel, then merged. Also with r.y split first and its
// outer part factored, and with a per-channel histogram hist(c, bin) that keeps a pure Var.
TEST(CpuFeaturesRfactor, HistogramAtComputedIndex) {
    for (auto s : {std::vector<int>{37, 23}, {64, 64}, {1, 1}, {5, 300}}) {
        const int W = s[0], H = s[1];
        SCOPED_TRACE(sz(W, H));
        Buffer<uint8_t> in(W, H);
        weft_test::fill_pattern(in, (uint32_t)(W * 7 + H), 0, 255);
        std::vector<int> ref(256, 0);
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) ref[in(x, y)]++;
        for (int variant = 0; variant < 3; variant++) {
            SCOPED_TRACE("variant " + std::to_string(variant));
            Var x("x"), u("u");
            RDom r(0, W, 0, H, "r");
            Func hist("hist");
            hist(x) = 0;
            hist(cast<int>(in(r.x, r.y))) += 1;
            Func intm;
            if (variant == 0) {
                intm = hist.update(0).rfactor(r.y, u);
                intm.compute_root().vectorize(x, 8);
                intm.update(0).parallel(u);
            } else if (variant == 1) {
                RVar yo("yo"), yi("yi");
                hist.update(0).split(r.y, yo, yi, 4);
                intm = hist.update(0).rfactor(yo, u);
                intm.compute_root();
                intm.update(0).parallel(u);
                hist.update(0).vectorize(x, 8);
            } else {
                intm = hist.update(0).rfactor({{r.x, u}});
                intm.compute_root();
                intm.update(0).vectorize(u, 8);  // every lane writes its own u: no collisions
            }
            ASSERT_EQ(intm.dimensions(), 2);
            Buffer<int> o = hist.realize({256});
            check_1d(o, [&](int b) { return ref[b]; }, "hist");
        }
    }
    // Per channel: hist(c, bin) keeps the pure Var c at its place.
    const int W = 29, H = 11;
    Buffer<uint8_t> in(W, H, 3);
    weft_test::fill_pattern(in, 17, 0, 255);
    Var c("c"), b("b"), u("u");
    RDom r(0, W, 0, H, "r");
    Func hist("hist_c");
    hist(c, b) = 0;
    hist(c, cast<int>(in(r.x, r.y, c)) / 16) += 1;
    Func intm = hist.update(0).rfactor(r.y, u);
    intm.compute_root();
    intm.update(0).parallel(u);
    Buffer<int> o = hist.realize({3, 16});
    for (int ch = 0; ch < 3; ch++)
        for (int bin = 0; bin < 16; bin++) {
            int t = 0;
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++) t += in(x, y, ch) / 16 == bin;
            EXPECT_EQ(o(ch, bin), t) << "c " << ch << " bin " << bin;
        }
}
