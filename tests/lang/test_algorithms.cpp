// API.md "Algorithms": pure and update definitions, reductions, scans, RDom, Func handles.
#include "lang_test_util.h"

using namespace weft;

namespace {

TEST(Algorithms, PureDefinition) {
    Var x("x"), y("y");
    Func f("pure2d");
    f(x, y) = x * 10 + y * 3 - 7;
    Buffer<int> out = f.realize({6, 5});
    ASSERT_EQ(out.dimensions(), 2);
    for (int j = 0; j < 5; j++)
        for (int i = 0; i < 6; i++) EXPECT_EQ(out(i, j), i * 10 + j * 3 - 7);
}

TEST(Algorithms, ArgsAndType) {
    Var x("x"), y("y"), c("c");
    Func f("argsf");
    f(x, y, c) = cast<float>(x + y + c);
    auto args = f.args();
    ASSERT_EQ(args.size(), 3u);
    EXPECT_EQ(args[0].name(), "x");
    EXPECT_EQ(args[1].name(), "y");
    EXPECT_EQ(args[2].name(), "c");
    EXPECT_EQ(f.type(), Float(32));
    EXPECT_EQ(f.dimensions(), 3);
    EXPECT_EQ(f.name(), "argsf");
    EXPECT_TRUE(f.defined());
    Func g("argsg");
    g(x) = cast<uint8_t>(x);
    EXPECT_EQ(g.type(), UInt(8));
    EXPECT_EQ(g.args().size(), 1u);
    Func unnamed1, unnamed2;
    EXPECT_NE(unnamed1.name(), unnamed2.name());
    Var v1, v2;
    EXPECT_NE(v1.name(), v2.name());
}

TEST(Algorithms, UpdateDefinitionsAllOperators) {
    Var x("x"), y("y");
    Func f("updops");
    f(x, y) = x + y;
    f(x, y) = f(x, y) * 2;
    f(x, y) += 5;
    f(x, y) -= x;
    f(x, y) *= 3;
    f(x, y) /= 2;
    EXPECT_EQ(f.num_update_definitions(), 5);
    Buffer<int> out = f.realize({7, 4});
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < 7; i++) {
            int v = i + j;
            v = v * 2;
            v += 5;
            v -= i;
            v *= 3;
            v = weft_test::floor_div(v, 2);
            EXPECT_EQ(out(i, j), v) << i << "," << j;
        }
}

TEST(Algorithms, FloatUpdateDivide) {
    Var x("x");
    Func f("fupd");
    f(x) = cast<float>(x) + 1.0f;
    f(x) /= 4.0f;
    f(x) -= 0.5f;
    Buffer<float> out = f.realize({5});
    for (int i = 0; i < 5; i++) EXPECT_FLOAT_EQ(out(i), (i + 1.0f) / 4.0f - 0.5f);
}

TEST(Algorithms, UpdateAtSpecificPoints) {
    Var x("x");
    Func f("points");
    f(x) = 0;
    f(3) = 42;
    f(x) = f(x) + 1;
    f(0) += 100;
    Buffer<int> out = f.realize({6});
    for (int i = 0; i < 6; i++) EXPECT_EQ(out(i), (i == 3 ? 43 : 1) + (i == 0 ? 100 : 0)) << i;
}

TEST(Algorithms, HistogramOfUInt8Image) {
    const int W = 37, H = 23;
    Buffer<uint8_t> in(W, H);
    weft_test::fill_pattern(in, 7, 0, 255);
    in(0, 0) = 0;
    in(1, 0) = 255;
    std::vector<int> ref(256, 0);
    for (int j = 0; j < H; j++)
        for (int i = 0; i < W; i++) ref[in(i, j)]++;

    Var x("x");
    RDom r(0, W, 0, H);
    Func hist("hist");
    hist(x) = 0;
    hist(cast<int>(in(r.x, r.y))) += 1;

    // Bins 0..255 only: the output sits between two sentinels.
    std::vector<int> mem(256 + 2, -777);
    Buffer<int> out(mem.data() + 1, {256});
    hist.realize(out);
    EXPECT_EQ(mem[0], -777);
    EXPECT_EQ(mem[257], -777);
    for (int b = 0; b < 256; b++) EXPECT_EQ(out(b), ref[b]) << "bin " << b;
}

TEST(Algorithms, HistogramIntermediateBoundedByCast) {
    // hist is computed at root; bounds inference must see that cast<int>(uint8) covers 0..255.
    const int W = 20, H = 9;
    Buffer<uint8_t> in(W, H);
    weft_test::fill_pattern(in, 3, 0, 255);
    std::vector<int> ref(256, 0);
    for (int j = 0; j < H; j++)
        for (int i = 0; i < W; i++) ref[in(i, j)]++;
    Var x("x");
    RDom r(in);
    Func hist("hist_mid"), out("hist_out");
    hist(x) = 0;
    hist(cast<int>(in(r.x, r.y))) += 1;
    out(x) = hist(x) * 2;
    hist.compute_root();
    Buffer<int> o = out.realize({256});
    for (int b = 0; b < 256; b++) EXPECT_EQ(o(b), 2 * ref[b]) << "bin " << b;
}

TEST(Algorithms, HistogramWithClampIndex) {
    const int N = 50;
    Buffer<int> in(N);
    for (int i = 0; i < N; i++) in(i) = (i * 13) % 21 - 5;  // some outside [0, 9]
    std::vector<int> ref(10, 0);
    for (int i = 0; i < N; i++) ref[std::min(std::max(in(i), 0), 9)]++;
    Var x("x");
    RDom r(0, N);
    Func h("hist_clamp");
    h(x) = 0;
    h(clamp(in(r), 0, 9)) += 1;
    Buffer<int> out = h.realize({10});
    for (int b = 0; b < 10; b++) EXPECT_EQ(out(b), ref[b]) << b;
}

TEST(Algorithms, Scan1D) {
    const int N = 30;
    Buffer<int> in(N);
    weft_test::fill_pattern(in, 11, -50, 50);
    Var x("x");
    Func f("scan1d");
    f(x) = in(x);
    RDom r(1, N - 1);
    f(r.x) = f(r.x - 1) + in(r.x);
    Buffer<int> out = f.realize({N});
    int acc = 0;
    for (int i = 0; i < N; i++) {
        acc += in(i);
        EXPECT_EQ(out(i), acc) << i;
    }
}

TEST(Algorithms, ScanAlongXOf2D) {
    const int W = 17, H = 6;
    Buffer<float> in(W, H);
    weft_test::fill_pattern(in, 5, -10, 10);
    Var x("x"), y("y");
    Func f("scan2d");
    f(x, y) = in(x, y);
    RDom r(1, W - 1);
    f(r, y) = f(r - 1, y) + in(r, y);
    Buffer<float> out = f.realize({W, H});
    for (int j = 0; j < H; j++) {
        float acc = 0;
        for (int i = 0; i < W; i++) {
            acc += in(i, j);
            EXPECT_FLOAT_EQ(out(i, j), acc) << i << "," << j;
        }
    }
}

TEST(Algorithms, RDomWhere) {
    Var x("x");
    RDom r(0, 10, 0, 12);
    r.where(r.x < r.y);
    r.where((r.x + r.y) % 3 != 0);
    Func f("where_sum");
    f(x) = 0;
    f(x) += r.x * r.y + x;
    Buffer<int> out = f.realize({3});
    for (int i = 0; i < 3; i++) {
        int e = 0;
        for (int ry = 0; ry < 12; ry++)
            for (int rx = 0; rx < 10; rx++)
                if (rx < ry && (rx + ry) % 3 != 0) e += rx * ry + i;
        EXPECT_EQ(out(i), e) << i;
    }
}

TEST(Algorithms, RDomProperties) {
    RDom r(2, 5, -1, 3, "rr");
    EXPECT_EQ(r.dimensions(), 2);
    EXPECT_EQ(r[0].name(), r.x.name());
    EXPECT_EQ(r[1].name(), r.y.name());
    EXPECT_NE(r.x.name(), r.y.name());
    RDom r1(0, 4);
    RVar rv = r1;
    Expr e = r1;
    EXPECT_EQ(rv.name(), r1.x.name());
    EXPECT_TRUE(e.defined());
    Buffer<int> b(3, 4, 5);
    RDom rb(b);
    EXPECT_EQ(rb.dimensions(), 3);
}

TEST(Algorithms, RDomFourDimensions) {
    Var x("x");
    RDom r(0, 2, 0, 3, 0, 2, 1, 2);
    Func f("r4");
    f(x) = 0;
    f(x) += r.x + 10 * r.y + 100 * r.z + 1000 * r.w + x;
    Buffer<int> out = f.realize({2});
    for (int i = 0; i < 2; i++) {
        int e = 0;
        for (int w = 1; w < 3; w++)
            for (int z = 0; z < 2; z++)
                for (int yy = 0; yy < 3; yy++)
                    for (int xx = 0; xx < 2; xx++) e += xx + 10 * yy + 100 * z + 1000 * w + i;
        EXPECT_EQ(out(i), e);
    }
}

TEST(Algorithms, InlineReductions) {
    const int N = 20;
    Buffer<int> in(N + 4);
    weft_test::fill_pattern(in, 9, -30, 30);
    Var x("x");
    RDom r(0, 5);
    Func s("isum"), mx("imax"), mn("imin");
    s(x) = sum(in(x + r));
    mx(x) = maximum(in(x + r));
    mn(x) = minimum(in(x + r) * 2);
    Buffer<int> so = s.realize({N}), mxo = mx.realize({N}), mno = mn.realize({N});
    for (int i = 0; i < N; i++) {
        int es = 0, emx = INT32_MIN, emn = INT32_MAX;
        for (int k = 0; k < 5; k++) {
            es += in(i + k);
            emx = std::max(emx, in(i + k));
            emn = std::min(emn, in(i + k) * 2);
        }
        EXPECT_EQ(so(i), es) << i;
        EXPECT_EQ(mxo(i), emx) << i;
        EXPECT_EQ(mno(i), emn) << i;
    }
}

TEST(Algorithms, InlineSum2DFloat) {
    Buffer<float> in(8, 8);
    weft_test::fill_pattern(in, 4, 0, 9);
    Var x("x"), y("y");
    RDom r(-1, 3, -1, 3);
    Func blur("blur_sum");
    blur(x, y) = sum(in(clamp(x + r.x, 0, 7), clamp(y + r.y, 0, 7))) / 9.0f;
    Buffer<float> out = blur.realize({8, 8});
    for (int j = 0; j < 8; j++)
        for (int i = 0; i < 8; i++) {
            float e = 0;
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++)
                    e += in(std::min(std::max(i + dx, 0), 7), std::min(std::max(j + dy, 0), 7));
            EXPECT_NEAR(out(i, j), e / 9.0f, 1e-5f);
        }
}

TEST(Algorithms, ZeroDimensionalFunc) {
    Func f("zero_d");
    f() = 42;
    EXPECT_EQ(f.dimensions(), 0);
    Buffer<int> out = f.realize(std::vector<int>{});
    EXPECT_EQ(out.dimensions(), 0);
    EXPECT_EQ(out(), 42);

    Buffer<int> in(10);
    for (int i = 0; i < 10; i++) in(i) = i * i;
    RDom r(0, 10);
    Func total("zero_d_sum");
    total() = sum(in(r));
    Buffer<int> t = total.realize(std::vector<int>{});
    EXPECT_EQ(t(), 285);

    Func g("zero_d_update");
    g() = 1;
    g() += sum(in(r));
    g() *= 2;
    Buffer<int> go = g.realize(std::vector<int>{});
    EXPECT_EQ(go(), 572);

    // A zero-dimensional Func used by another.
    Var x("x");
    Func h("uses_zero_d");
    h(x) = x + total();
    Buffer<int> ho = h.realize({4});
    for (int i = 0; i < 4; i++) EXPECT_EQ(ho(i), i + 285);
}

Func make_chain(const Buffer<int> &in, int k) {
    Var x("x");
    Func a("helper_a"), b("helper_b");
    a(x) = in(x) + k;
    b(x) = a(x) * 2 + a(x + 1);
    return b;  // a goes out of scope here but must stay alive with b
}

Func make_outer(const Buffer<int> &in) {
    Func inner = make_chain(in, 3);
    Var x("x");
    Func c("helper_c");
    c(x) = inner(x) - 1;
    return c;
}

TEST(Algorithms, FuncHandlesOutliveHelpers) {
    Buffer<int> in(9);
    for (int i = 0; i < 9; i++) in(i) = i * 5;
    Func c = make_outer(in);
    Buffer<int> out = c.realize({8});
    for (int i = 0; i < 8; i++) EXPECT_EQ(out(i), ((in(i) + 3) * 2 + (in(i + 1) + 3)) - 1) << i;

    // Copies of a Func are the same function.
    Var x("x");
    Func f("handle_f");
    Func g = f;
    g(x) = x * 3;
    EXPECT_TRUE(f.defined());
    Buffer<int> fo = f.realize({3});
    EXPECT_EQ(fo(2), 6);
}

TEST(Algorithms, CallWithComputedArgs) {
    Var x("x"), y("y");
    Func f("callee"), g("caller");
    f(x, y) = x * 100 + y;
    g(x, y) = f(y, x) + f(x / 2, 3) + f(clamp(x - 1, 0, 5), y * 2);
    Buffer<int> out = g.realize({6, 4});
    auto F = [](int a, int b) { return a * 100 + b; };
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < 6; i++)
            EXPECT_EQ(out(i, j), F(j, i) + F(i / 2, 3) + F(std::min(std::max(i - 1, 0), 5), j * 2));
}

}  // namespace
