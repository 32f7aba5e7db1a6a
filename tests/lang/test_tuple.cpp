// Tuple: Funcs with several values at each point (Halide's Tuple), argmax / argmin, Tuple select
// and mux; checked against plain C++ and against the interpreter under schedules.
#include <cmath>
#include <cstdint>

#include "lang/lang_test_util.h"
#include "pipeline/PipelineInternal.h"

using namespace weft;
using weft_test::error_of;

namespace {

void expect_has(const std::string &m, const std::vector<std::string> &parts) {
    for (auto &p : parts) EXPECT_NE(m.find(p), std::string::npos) << "\"" << p << "\" not in: " << m;
}

TEST(Tuples, ValuesOfTheirOwnTypesRealizedIntoABufferEach) {
    Var x("x"), y("y");
    Func f("tuple_f");
    f(x, y) = Tuple(x + y, sin(cast<float>(x * y)));
    EXPECT_EQ(f.outputs(), 2);
    EXPECT_EQ(f.output_types(), (std::vector<Type>{Int(32), Float(32)}));
    Realization r = f.realize({30, 20});
    ASSERT_EQ(r.size(), 2u);
    Buffer<int> a = r[0];
    Buffer<float> b = r[1];
    for (int j = 0; j < 20; j++)
        for (int i = 0; i < 30; i++) {
            ASSERT_EQ(a(i, j), i + j);
            ASSERT_EQ(b(i, j), std::sin((float)(i * j))) << i << "," << j;
        }
    // Braces spell it too, and a consumer reads each value.
    Func g("tuple_g"), h("tuple_h");
    g(x, y) = {x * 2, cast<uint8_t>(y)};
    h(x, y) = g(x, y)[0] + cast<int>(g(x, y)[1]);
    for (int k = 0; k < 3; k++) {
        if (k == 1) g.compute_root();
        if (k == 2) g.compute_at(h, y).vectorize(x, 8);
        Buffer<int> o = h.realize({37, 5});
        for (int j = 0; j < 5; j++)
            for (int i = 0; i < 37; i++) ASSERT_EQ(o(i, j), i * 2 + j) << k;
    }
    // Into buffers given (their mins kept), the values' buffers with strides of their own.
    Buffer<int> a2(8, 4);
    Buffer<float> wide(20, 4);  // rows of 20 elements: another stride
    a2.set_min(3, 1);
    wide.set_min(3, 1);
    Buffer<float> b2(wide.cropped(0, 3, 8));
    f.realize({a2, b2});
    EXPECT_EQ(a2(10, 4), 14);
    EXPECT_EQ(b2(10, 4), std::sin(40.0f));
    EXPECT_EQ(wide(10, 4), std::sin(40.0f));
}

/** z <- z * z + c, three times, on Gaussian integers (exact). */
TEST(Tuples, AnUpdateComputesEveryValueFromThePointBeforeIt) {
    Var x("x");
    Func z("tuple_z");
    Expr cre = x % 7 - 3, cim = x / 7 - 2;
    z(x) = Tuple(cre, cim);
    for (int k = 0; k < 3; k++) {
        Expr re = z(x)[0], im = z(x)[1];
        z(x) = Tuple(re * re - im * im + cre, 2 * re * im + cim);
    }
    auto check = [&](const Realization &r) {
        Buffer<int> a = r[0], b = r[1];
        for (int i = 0; i < 35; i++) {
            int64_t c0 = i % 7 - 3, c1 = i / 7 - 2, re = c0, im = c1;
            for (int k = 0; k < 3; k++) {
                int64_t nre = re * re - im * im + c0, nim = 2 * re * im + c1;
                re = (int32_t)nre;
                im = (int32_t)nim;
            }
            ASSERT_EQ(a(i), (int32_t)re) << i;
            ASSERT_EQ(b(i), (int32_t)im) << i;
        }
    };
    check(z.realize({35}));
    z.vectorize(x, 8);
    z.update(0).vectorize(x, 4);
    z.update(2).parallel(x, 8);
    check(z.realize({35}));
}

TEST(Tuples, ArgmaxAndArgminTakeTheFirstOfTies) {
    Buffer<float> in(40, 6);
    for (int j = 0; j < 6; j++)
        for (int i = 0; i < 40; i++) in(i, j) = (float)((i * 7 + j * 3) % 11);  // many ties
    Var y("y");
    RDom r(0, 40);
    Func best("tuple_best"), worst("tuple_worst");
    Tuple mx = argmax(in(r, y)), mn = argmin(r, in(r, y));
    ASSERT_EQ(mx.size(), 2u);
    best(y) = {mx[0], mx[1]};
    worst(y) = {mn[0], mn[1]};
    Realization rb = best.realize({6}), rw = worst.realize({6});
    Buffer<int> bi = rb[0], wi = rw[0];
    Buffer<float> bv = rb[1], wv = rw[1];
    for (int j = 0; j < 6; j++) {
        int a = 0, b = 0;
        for (int i = 1; i < 40; i++) {
            if (in(i, j) > in(a, j)) a = i;
            if (in(i, j) < in(b, j)) b = i;
        }
        EXPECT_EQ(bi(j), a);
        EXPECT_EQ(bv(j), in(a, j));
        EXPECT_EQ(wi(j), b);
        EXPECT_EQ(wv(j), in(b, j));
    }
    // Two dimensions: the coordinates of each, then the value.
    RDom r2(0, 40, 0, 6);
    Func where("tuple_where");
    where() = argmax(in(r2.x, r2.y) - cast<float>(r2.x + r2.y) * 0.01f);
    Realization w = where.realize();
    ASSERT_EQ(w.size(), 3u);
    EXPECT_NE(error_of([&] { Func bad("tuple_bad"); bad() = argmax(RDom(0, 4), in(r, 0)); }).find("RDom"),
              std::string::npos);
}

TEST(Tuples, SelectAndMuxValueByValue) {
    Var x("x");
    Func f("tuple_sel");
    Tuple a(x, cast<float>(x) * 0.5f), b(-x, cast<float>(x) * 2.0f), c(x * 10, 1.0f);
    f(x) = select(x % 2 == 0, a, b);
    Func g("tuple_mux");
    g(x) = mux(x % 3, {a, b, c});
    Func h("tuple_mux_one");
    h(x) = mux(x % 2, a) + cast<float>(mux(x % 2, {x, x * 3}));
    Realization rf = f.realize({9}), rg = g.realize({9});
    Buffer<float> rh = h.realize({9});
    for (int i = 0; i < 9; i++) {
        EXPECT_EQ(Buffer<int>(rf[0])(i), i % 2 == 0 ? i : -i);
        EXPECT_EQ(Buffer<float>(rf[1])(i), i % 2 == 0 ? i * 0.5f : i * 2.0f);
        EXPECT_EQ(Buffer<int>(rg[0])(i), i % 3 == 0 ? i : i % 3 == 1 ? -i : i * 10);
        EXPECT_EQ(Buffer<float>(rg[1])(i), i % 3 == 0 ? i * 0.5f : i % 3 == 1 ? i * 2.0f : 1.0f);
        EXPECT_EQ(rh(i), (i % 2 == 0 ? (float)i : i * 0.5f) + (float)(i % 2 == 0 ? i : i * 3));
    }
    EXPECT_NE(error_of([&] { select(x > 0, a, Tuple(x, x, x)); }).find("one size"), std::string::npos);
}

/** A Tuple producer under schedules, against the interpreter. */
TEST(Tuples, SchedulesMatchTheInterpreter) {
    Buffer<int16_t> in(67, 41);
    for (int j = 0; j < 41; j++)
        for (int i = 0; i < 67; i++) in(i, j) = (int16_t)((i * 31 + j * 17) % 201 - 100);
    auto build = [&](Func &p, Func &out, Var &x, Var &y) {
        Func c("tuple_clamped");
        c(x, y) = in(clamp(x, 0, 66), clamp(y, 0, 40));
        p(x, y) = Tuple(c(x, y) + c(x + 1, y), cast<float>(c(x, y + 1)) * 0.25f);
        RDom r(0, 3);
        p(x, y) = Tuple(p(x, y)[0] + cast<int16_t>(r), p(x, y)[1] + cast<float>(p(x, y)[0]));
        out(x, y) = cast<float>(p(x, y)[0]) + p(x - 1, y)[1] + p(x, y + 1)[1];
    };
    for (int s = 0; s < 5; s++) {
        Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
        Func p("tuple_p"), out("tuple_out");
        build(p, out, x, y);
        switch (s) {
        case 0: p.compute_root(); break;
        case 1:
            out.tile(x, y, xo, yo, xi, yi, 16, 8).parallel(yo);
            p.compute_at(out, xo).vectorize(x, 8);
            p.update(0).vectorize(x, 8);
            break;
        case 2:
            out.split(y, yo, yi, 8);
            p.store_at(out, yo).compute_at(out, yi);
            break;
        case 3:
            out.split(y, yo, yi, 4);
            p.compute_at(out, yi).hoist_storage(out, yo);
            break;
        case 4:
            p.compute_root().parallel(y).update(0).unroll(x, 2);
            break;
        }
        Buffer<float> got(50, 30), want(50, 30);
        out.realize(got);
        Var rx("x"), ry("y");
        Func rp("tuple_p"), rout("tuple_out");
        build(rp, rout, rx, ry);
        internal::interpret_pipeline(Pipeline(rout), {want});
        for (int j = 0; j < 30; j++)
            for (int i = 0; i < 50; i++) ASSERT_EQ(got(i, j), want(i, j)) << "schedule " << s << " at " << i << "," << j;
    }
}

TEST(Tuples, TracingPrintsEachValue) {
    Var x("x");
    Func f("tr_tuple");
    f(x) = Tuple(x, cast<float>(x) + 0.5f);
    f.trace_stores();
    testing::internal::CaptureStderr();
    f.realize({2});
    std::string out = testing::internal::GetCapturedStderr();
    expect_has(out, {"Store tr_tuple.0(1) = 1", "Store tr_tuple.1(1) = 1.5"});
}

TEST(Tuples, MisuseIsAClearError) {
    Var x("x");
    Func f("tuple_e");
    f(x) = Tuple(x, cast<float>(x));
    Func one("one_e");
    one(x) = x;
    expect_has(error_of([&] { Expr e = f(x); }), {"\"tuple_e\"", "Tuple of 2 values", "[i]"});
    expect_has(error_of([&] { Expr e = f(x)[2]; }), {"[2]", "2 values"});
    expect_has(error_of([&] { f(x) = Tuple(x, x, x); }), {"3 values", "2 values"});
    expect_has(error_of([&] { f(x) = x + 1; }), {"one value", "Tuple of 2"});
    expect_has(error_of([&] { one(x) = Tuple(x, x); }), {"Tuple of 2", "one value"});
    expect_has(error_of([&] { f(x) = Tuple(x, f(x)[0] > 2); }), {"value 1", "bool", "float32"});
    expect_has(error_of([&] { f.type(); }), {"output_types"});
    expect_has(error_of([&] { Tuple t(one(x)); }), {"one value"});
    expect_has(error_of([&] { Tuple t(std::vector<Expr>{}); }), {"at least one"});
    expect_has(error_of([&] { Tuple t(x, x); t[5]; }), {"Tuple[5]"});
    expect_has(error_of([&] { Func g("tuple_in"); g(x) = Tuple(x, x); g.in(); }), {"in()", "Tuple"});
    {
        Func h("tuple_rf");
        RDom r(0, 10);
        h(x) = Tuple(0, 0);
        h(x) = Tuple(h(x)[0] + r, h(x)[1] + r * 2);
        Var u("u");
        expect_has(error_of([&] { h.update(0).rfactor(r, u); }), {"rfactor()", "Tuple"});
        expect_has(error_of([&] { h.update(0).atomic(); }), {"atomic()", "Tuple"});
    }
    // A Tuple of one value is that value.
    Func s("tuple_single");
    s(x) = Tuple(std::vector<Expr>{x * 3});
    EXPECT_EQ(s.outputs(), 1);
    EXPECT_EQ(Buffer<int>(s.realize({4}))(3), 9);
    // Buffers that do not fit.
    Buffer<int> a(4);
    Buffer<float> b(4), b5(5);
    expect_has(error_of([&] { f.realize(a); }), {"2 output buffers", "1 were given"});
    expect_has(error_of([&] { f.realize({a, a}); }), {"value 1", "float32"});
    expect_has(error_of([&] { f.realize({a, b5}); }), {"differ in dimension 0"});
    f.realize({a, b});
    EXPECT_EQ(b(3), 3.0f);
}

TEST(Tuples, InsideADeferredPart) {
    Var x("x");
    ImageParam in(Int(32), 1, "tuple_chain_in");
    Func t("tuple_chain_t"), o("tuple_chain_o");
    t(x) = Tuple(in(x), in(x) * 10);
    o(x) = t(x)[1] - t(x)[0];
    t.compute_root();
    Callable c = Pipeline(o).compile_to_callable({in});
    Buffer<int> b(8);
    for (int i = 0; i < 8; i++) b(i) = i;
    LazyBuffer l = c.defer({8}, b);
    Buffer<int> r = l.realize();
    for (int i = 0; i < 8; i++) EXPECT_EQ(r(i), 9 * i);
    // A part whose output is a Tuple Func: refused when deferred.
    Callable ct = Pipeline(t).compile_to_callable({in});
    expect_has(error_of([&] { ct.defer({8}, b); }), {"tuple_chain_t", "Tuple"});
}

}  // namespace
