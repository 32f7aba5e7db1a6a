// Halide's spellings that a Halide user reaches for (issue 21): more math, NaN/Inf tests,
// likely, lambda, Buffer views and loops, ImageParam dimensions, Param ranges, boundary
// conditions with explicit bounds, LoopLevel. Each is checked against the interpreter (the
// unscheduled reference) or against a plain C++ computation, and each error path has a test.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "lang/lang_test_util.h"
#include "pipeline/PipelineInternal.h"

using namespace weft;
using weft_test::error_of;

namespace {

Buffer<float> reference(Func f, const std::vector<int> &sizes) {
    Buffer<void> out(f.type(), sizes);
    internal::interpret_pipeline(Pipeline(f), {out});
    return Buffer<float>(out);
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }

TEST(ParityMath, LibmFunctionsMatchTheInterpreterUnderSchedules) {
    const int n = 67;
    Buffer<float> in(n), in2(n);
    for (int i = 0; i < n; i++) {
        in(i) = -0.97f + 1.94f * (float)i / (n - 1);  // inside (-1, 1): every function is defined
        in2(i) = 0.31f + 0.11f * (float)((i * 7) % 23) - (i % 4 == 0 ? 2.5f : 0.0f);
    }
    Var x("x");
    struct Case {
        const char *name;
        std::function<Expr(Expr, Expr)> weft_fn;
        std::function<double(double, double)> std_fn;
    };
    std::vector<Case> cases = {
        {"tan", [](Expr a, Expr) { return tan(a); }, [](double a, double) { return std::tan(a); }},
        {"atan", [](Expr a, Expr) { return atan(a * 9.0f); }, [](double a, double) { return std::atan((float)(a * 9.0f)); }},
        {"asin", [](Expr a, Expr) { return asin(a); }, [](double a, double) { return std::asin(a); }},
        {"acos", [](Expr a, Expr) { return acos(a); }, [](double a, double) { return std::acos(a); }},
        {"sinh", [](Expr a, Expr) { return sinh(a); }, [](double a, double) { return std::sinh(a); }},
        {"cosh", [](Expr a, Expr) { return cosh(a); }, [](double a, double) { return std::cosh(a); }},
        {"asinh", [](Expr a, Expr) { return asinh(a); }, [](double a, double) { return std::asinh(a); }},
        {"acosh", [](Expr a, Expr) { return acosh(a + 2.0f); },
         [](double a, double) { return std::acosh((float)(a + 2.0f)); }},
        {"atanh", [](Expr a, Expr) { return atanh(a); }, [](double a, double) { return std::atanh(a); }},
        {"atan2", [](Expr a, Expr b) { return atan2(a, b); }, [](double a, double b) { return std::atan2(a, b); }},
        {"hypot", [](Expr a, Expr b) { return hypot(a, b); }, [](double a, double b) { return std::hypot(a, b); }},
        {"fract", [](Expr a, Expr b) { return fract(a * 3.0f + b); },
         [](double a, double b) {
             float v = (float)a * 3.0f + (float)b;
             return (double)(v - std::trunc(v));
         }},
        {"fast_inverse", [](Expr, Expr b) { return fast_inverse(b); }, [](double, double b) { return 1.0 / b; }},
        {"fast_inverse_sqrt", [](Expr a, Expr) { return fast_inverse_sqrt(a + 1.5f); },
         [](double a, double) { return 1.0 / std::sqrt((float)(a + 1.5f)); }},
    };
    for (const auto &c : cases) {
        Func plain(std::string("plain_") + c.name);
        plain(x) = c.weft_fn(in(x), in2(x));
        EXPECT_EQ(plain.type(), Float(32)) << c.name;
        Buffer<float> ref = reference(plain, {n});
        for (int i = 0; i < n; i++) {
            double e = c.std_fn(in(i), in2(i));
            EXPECT_NEAR(ref(i), e, 2e-6 * std::max(1.0, std::fabs(e))) << c.name << " at " << i;
        }
        for (int sched = 0; sched < 4; sched++) {
            SCOPED_TRACE(std::string(c.name) + " schedule " + std::to_string(sched));
            Func f(std::string("math_") + c.name + "_" + std::to_string(sched));
            f(x) = c.weft_fn(in(x), in2(x));
            Var xo("xo"), xi("xi");
            if (sched == 1) f.vectorize(x, 8);
            if (sched == 2) f.split(x, xo, xi, 16).vectorize(xi).parallel(xo);
            if (sched == 3) f.vectorize(x, 4).unroll(x, 2);
            Buffer<float> out = f.realize({n});
            for (int i = 0; i < n; i++) EXPECT_TRUE(same_bits(out(i), ref(i))) << i << ": " << out(i) << " vs " << ref(i);
        }
    }
}

TEST(ParityMath, Float64AndIntegerArguments) {
    Var x("x");
    Func f("atan2_64"), g("int_args");
    f(x) = atan2(cast<double>(x) - 3.0, 2.0) + hypot(cast<double>(x), 1e300);
    g(x) = atan2(x - 3, 2) + fract(x);  // integers go to float32, as sin(x) does
    EXPECT_EQ(f.type(), Float(64));
    EXPECT_EQ(g.type(), Float(32));
    Buffer<double> fo = f.realize({7});
    Buffer<float> go = g.realize({7});
    for (int i = 0; i < 7; i++) {
        EXPECT_DOUBLE_EQ(fo(i), std::atan2(i - 3.0, 2.0) + std::hypot((double)i, 1e300)) << i;  // no overflow
        EXPECT_FLOAT_EQ(go(i), std::atan2((float)(i - 3), 2.0f)) << i;
    }
}

TEST(ParityMath, NanInfAndFiniteAreNeverFoldedAway) {
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> vals = {0.0f, -0.0f, 1.5f, -2.0f, inf, -inf, nan, -nan, 1e-40f, 3e38f,
                               std::numeric_limits<float>::max(), std::numeric_limits<float>::lowest()};
    const int n = 32;
    Buffer<float> in(n);
    Buffer<double> in64(n);
    for (int i = 0; i < n; i++) in(i) = vals[i % vals.size()], in64(i) = (double)vals[i % vals.size()];
    Var x("x");
    for (bool vec : {false, true}) {
        for (bool wide : {false, true}) {
            SCOPED_TRACE(std::string(vec ? "vectorized" : "scalar") + (wide ? " float64" : " float32"));
            Func f("classes");
            Expr v = wide ? Expr(in64(x)) : Expr(in(x));
            f(x) = select(is_nan(v), 1, 0) + select(is_inf(v), 2, 0) + select(is_finite(v), 4, 0) +
                   select(is_nan(v * 0.0f), 8, 0);  // x * 0 is NaN for inf and NaN: not simplified to 0
            if (vec) f.vectorize(x, 8);
            Buffer<int> out = f.realize({n});
            for (int i = 0; i < n; i++) {
                float a = vals[i % vals.size()];
                int e = (std::isnan(a) ? 1 : 0) + (std::isinf(a) ? 2 : 0) + (std::isfinite(a) ? 4 : 0) +
                        (std::isnan(a * 0.0f) ? 8 : 0);
                EXPECT_EQ(out(i), e) << "value " << a;
            }
        }
    }
    Func g("int_classes");
    g(x) = select(is_nan(x), 1, 0) + select(is_inf(x), 2, 0) + select(is_finite(x), 4, 0);
    Buffer<int> go = g.realize({3});
    for (int i = 0; i < 3; i++) EXPECT_EQ(go(i), 4);
    EXPECT_CONTAINS(error_of([] { is_nan(Expr()); }), "undefined");
}

TEST(ParityExpressions, LikelyIsTheValue) {
    Var x("x");
    Buffer<int> in(100);
    for (int i = 0; i < 100; i++) in(i) = i * 3 - 50;
    Func f("likely_f"), p("likely_plain");
    f(x) = select(likely(x < 90), in(x), in(min(x, 99)) * 2);
    p(x) = select(x < 90, in(x), in(min(x, 99)) * 2);
    f.vectorize(x, 8);
    Buffer<int> a = f.realize({100}), b = p.realize({100});
    for (int i = 0; i < 100; i++) EXPECT_EQ(a(i), b(i)) << i;
}

TEST(ParityExpressions, Lambda) {
    Var x("x"), y("y");
    Func f = lambda(x, y, x * 10 + y);
    EXPECT_EQ(f.dimensions(), 2);
    Buffer<int> out = f.realize({4, 3});
    for (int j = 0; j < 3; j++)
        for (int i = 0; i < 4; i++) EXPECT_EQ(out(i, j), i * 10 + j);
    Func g = lambda(x, f(x, 2) + 1);
    Buffer<int> go = g.realize({5});
    for (int i = 0; i < 5; i++) EXPECT_EQ(go(i), i * 10 + 3);
    EXPECT_CONTAINS(error_of([&] { lambda(x, Expr()); }), "undefined");
}

TEST(ParityBuffers, ConstructionAndShape) {
    std::vector<float> mem(6 * 4);
    for (size_t i = 0; i < mem.size(); i++) mem[i] = (float)i;
    Buffer<float> w(mem.data(), 6, 4);  // Halide's Buffer(data, w, h)
    EXPECT_EQ(w.width(), 6);
    EXPECT_EQ(w.height(), 4);
    EXPECT_EQ(w(2, 3), 20.0f);
    Buffer<float> b({4, 4});  // was ambiguous
    EXPECT_EQ(b.dimensions(), 2);
    EXPECT_EQ(b.extent(1), 4);
    Buffer<uint8_t> named(8, 8, "named_input");
    EXPECT_EQ(named.name(), "named_input");
    EXPECT_EQ(named.height(), 8);
    Buffer<int> c{3, 5, 2};
    EXPECT_EQ(c.channels(), 2);
    EXPECT_EQ(c.stride(2), 15);
    c.set_min(10, -2, 0);
    EXPECT_EQ(c.min(0), 10);
    EXPECT_EQ(c.left(), 10);
    EXPECT_EQ(c.right(), 12);
    EXPECT_EQ(c.top(), -2);
    EXPECT_EQ(c.bottom(), 2);
    EXPECT_EQ(c.number_of_elements(), 30);
    EXPECT_TRUE(c.contains({12, 2, 1}));
    EXPECT_FALSE(c.contains({13, 2, 1}));
    EXPECT_CONTAINS(error_of([&] { c.min(3); }), "dimension 3 does not exist");
    EXPECT_CONTAINS(error_of([] { Buffer<float> z((float *)nullptr, 4, 4); }), "null pointer");
}

TEST(ParityBuffers, CopyForEachElementForEachValue) {
    Buffer<int> a(5, 3);
    a.set_min(1, 2);
    a.for_each_element([&](int x, int y) { a(x, y) = x * 100 + y; });
    EXPECT_EQ(a(5, 4), 504);
    int count = 0;
    a.for_each_element([&](const int *pos) {
        EXPECT_EQ(a(pos[0], pos[1]), pos[0] * 100 + pos[1]);
        count++;
    });
    EXPECT_EQ(count, 15);
    Buffer<int> c = a.copy();
    EXPECT_EQ(c.min(0), 1);
    EXPECT_EQ(c.min(1), 2);
    c(3, 3) = -1;  // the copy has its own memory
    EXPECT_EQ(a(3, 3), 303);
    Buffer<float> f(5, 3);
    f.set_min(1, 2);
    f.for_each_value([](float &v, int &s) { v = (float)s * 0.5f; }, a);
    EXPECT_EQ(f(2, 3), 101.5f);
    int64_t sum = 0;
    a.for_each_value([&](int &v) { sum += v; });
    EXPECT_EQ(sum, (100 + 200 + 300 + 400 + 500) * 3 + (2 + 3 + 4) * 5);
    EXPECT_CONTAINS(error_of([&] { a.for_each_element([](int) {}); }), "function of 1 coordinates");
    Buffer<int> other(5, 3);  // mins differ
    EXPECT_CONTAINS(error_of([&] { f.for_each_value([](float &, int &) {}, other); }), "dimension 0 is [0, 4]");
    Buffer<int> empty(0, 3);
    empty.for_each_element([](int, int) { ADD_FAILURE() << "no elements"; });
}

TEST(ParityBuffers, CroppedAndSlicedViewsShareMemoryAndRunInPipelines) {
    Buffer<int> img(8, 6);
    img.for_each_element([&](int x, int y) { img(x, y) = x + 10 * y; });
    Buffer<int> crop = img.cropped(0, 2, 4).cropped(1, 1, 3);
    EXPECT_EQ(crop.min(0), 2);
    EXPECT_EQ(crop.extent(0), 4);
    EXPECT_EQ(crop(3, 2), 23);
    crop(3, 2) = -5;  // writes through to the parent
    EXPECT_EQ(img(3, 2), -5);
    img(3, 2) = 23;
    Buffer<int> row = img.sliced(1, 4);
    EXPECT_EQ(row.dimensions(), 1);
    EXPECT_EQ(row(6), 46);

    // As an input (strides not dense, mins not 0) and as an output.
    ImageParam in(Int(32), 2, "in");
    Var x("x"), y("y");
    Func f("double_it");
    f(x, y) = in(x, y) * 2;
    in.set(crop);
    Buffer<int> out(4, 3);
    out.set_min(2, 1);
    f.realize(out);
    out.for_each_element([&](int i, int j) { EXPECT_EQ(out(i, j), 2 * (i + 10 * j)); });
    Buffer<int> target(10, 10);
    Buffer<int> window = target.cropped(0, 3, 5).cropped(1, 4, 2);
    Func g("coords");
    g(x, y) = x * 1000 + y;
    g.vectorize(x, 4);
    g.realize(window);
    target.for_each_element([&](int i, int j) {
        bool inside = i >= 3 && i < 8 && j >= 4 && j < 6;
        EXPECT_EQ(target(i, j), inside ? i * 1000 + j : 0) << i << "," << j;
    });

    Buffer<int> in_place = img;
    in_place.crop(0, 1, 2);
    EXPECT_EQ(in_place.extent(0), 2);
    EXPECT_EQ(img.extent(0), 2);  // one handle: every copy sees the crop (as Halide's)
    EXPECT_CONTAINS(error_of([&] { crop.cropped(0, 1, 2); }), "outside it");
    EXPECT_CONTAINS(error_of([&] { crop.cropped(0, 3, 4); }), "[3, 6] is outside it");
    EXPECT_CONTAINS(error_of([&] { crop.sliced(2, 0); }), "names a dimension it does not have");
    EXPECT_CONTAINS(error_of([&] { crop.cropped(1, 1, -1); }), "outside");
}

TEST(ParityInputs, ImageParamDimensions) {
    ImageParam in(Float(32), 3, "rgb");
    Var x("x"), y("y"), c("c");
    Func flip("flip");
    flip(x, y, c) = in(in.width() - 1 - x + 2 * in.left(), y, in.channels() - 1 - c) + cast<float>(in.dim(1).max());
    Buffer<float> b(5, 4, 3);
    b.for_each_element([&](int i, int j, int k) { b(i, j, k) = (float)(i + 10 * j + 100 * k); });
    in.set(b);
    Buffer<float> out = flip.realize({5, 4, 3});
    out.for_each_element([&](int i, int j, int k) { EXPECT_EQ(out(i, j, k), b(4 - i, j, 2 - k) + 3.0f); });
    EXPECT_CONTAINS(error_of([&] { in.dim(3); }), "no dimension 3");
    ImageParam one(Int(8), 1, "line");
    EXPECT_CONTAINS(error_of([&] { one.height(); }), "no dimension 1");
}

TEST(ParityInputs, ParamRangeIsCheckedAtEachCall) {
    Param<int> k("k", 3, 0, 10);
    Param<float> s("s", 1.0f);
    s.set_range(-1.0f, 1.0f);
    Var x("x");
    Func f("scaled");
    f(x) = x * k + cast<int>(s * 100.0f);
    Buffer<int> out = f.realize({4});
    EXPECT_EQ(out(3), 109);
    k.set(11);
    Buffer<int> keep(4);
    keep.fill(7);
    EXPECT_CONTAINS(error_of([&] { f.realize(keep); }), "Param \"k\" is 11, outside its range [0, 10]");
    EXPECT_EQ(keep(0), 7);  // nothing ran
    k.set(10);
    s.set(std::numeric_limits<float>::quiet_NaN());
    EXPECT_CONTAINS(error_of([&] { f.realize({4}); }), "Param \"s\" is nan, outside its range [-1, 1]");
    s.set(-1.0f);
    out = f.realize({4});
    EXPECT_EQ(out(2), 20 - 100);
    Callable fn = Pipeline(f).compile_to_callable({k, s});
    EXPECT_EQ(fn(10, 0.5f, keep), 0);
    EXPECT_EQ(keep(1), 60);
    EXPECT_CONTAINS(error_of([&] { fn(-1, 0.5f, keep); }), "Param \"k\" is -1, outside its range [0, 10]");
    Param<uint8_t> u("u");
    u.set_min_value(200);
    u.set(100);
    Func g("umin");
    g(x) = cast<int>(u) + x;
    EXPECT_CONTAINS(error_of([&] { g.realize({2}); }), "is 100, outside its range [200, inf]");
}

TEST(ParityBoundaries, ExplicitBoundsAndTheOtherTwoConditions) {
    const int n = 10;
    Buffer<int> in(n);
    for (int i = 0; i < n; i++) in(i) = i * i;
    Var x("x");
    auto check = [&](Func f, std::function<int(int)> idx, int value_outside = INT32_MIN) {
        Func g(f.name() + "_out");
        g(x) = f(x);
        Buffer<int> out(40);
        out.set_min(-15);
        g.realize(out);
        for (int i = -15; i < 25; i++) {
            int k = idx(i);
            int e = k == INT32_MIN ? value_outside : in(k);
            EXPECT_EQ(out(i), e) << f.name() << " at " << i;
        }
    };
    auto mod = [](int a, int b) { return ((a % b) + b) % b; };
    // Bounds [2, 7] (min 2, extent 6) inside the buffer.
    check(BoundaryConditions::repeat_edge(in, {{2, 6}}), [](int i) { return std::min(std::max(i, 2), 7); });
    check(BoundaryConditions::constant_exterior(in, -1, {{2, 6}}),
          [](int i) { return i >= 2 && i <= 7 ? i : INT32_MIN; }, -1);
    check(BoundaryConditions::mirror_image(in, {{2, 6}}), [&](int i) {
        int m = mod(i - 2, 12);
        return 2 + (m < 6 ? m : 11 - m);
    });
    check(BoundaryConditions::mirror_interior(in, {{2, 6}}), [&](int i) {
        int m = mod(i - 2, 10);
        return 2 + (m < 6 ? m : 10 - m);
    });
    check(BoundaryConditions::repeat_image(in, {{2, 6}}), [&](int i) { return 2 + mod(i - 2, 6); });
    check(BoundaryConditions::mirror_interior(in), [&](int i) {
        int m = mod(i, 18);
        return m < 10 ? m : 18 - m;
    });
    check(BoundaryConditions::repeat_image(in), [&](int i) { return mod(i, 10); });
    // A Func source, and an ImageParam with Exprs of its shape as the bounds.
    Func sq("sq");
    sq(x) = in(clamp(x, 0, n - 1));
    check(BoundaryConditions::repeat_edge(sq, {{1, 3}}), [](int i) { return std::min(std::max(i, 1), 3); });
    ImageParam p(Int(32), 1, "p");
    p.set(in);
    check(BoundaryConditions::repeat_edge(p, {{p.left() + 1, p.width() - 2}}),
          [](int i) { return std::min(std::max(i, 1), 8); });
    // mirror_interior of extent 1 repeats the one element.
    check(BoundaryConditions::mirror_interior(in, {{4, 1}}), [](int) { return 4; });

    // A dimension with no bounds passes through.
    Buffer<int> img(4, 3);
    img.for_each_element([&](int i, int j) { img(i, j) = i + 10 * j; });
    Var y("y");
    Func e = BoundaryConditions::repeat_edge(img, {{0, 4}, {Expr(), Expr()}});
    Func h("pass");
    h(x, y) = e(x, y);
    Buffer<int> ho = h.realize({6, 3});
    EXPECT_EQ(ho(5, 2), 23);

    EXPECT_CONTAINS(error_of([&] { BoundaryConditions::repeat_edge(in, {{0, 2}, {0, 2}}); }),
                    "has 1 dimensions, given bounds for 2");
    EXPECT_CONTAINS(error_of([&] { BoundaryConditions::repeat_edge(sq, {{Expr(), Expr()}}); }), "bounds no dimension");
    EXPECT_CONTAINS(error_of([&] { BoundaryConditions::repeat_image(in, {{0.5f, 2}}); }), "must be integers");
    EXPECT_CONTAINS(error_of([&] { BoundaryConditions::repeat_edge(Func("undefined_f"), {{0, 2}}); }),
                    "has no definition");
}

TEST(ParitySchedules, LoopLevel) {
    Var x("x"), y("y");
    Buffer<int> in(20, 12);
    in.for_each_element([&](int i, int j) { in(i, j) = i * 3 + j; });
    Func prod("prod"), cons("cons"), plain_p("plain_p"), plain_c("plain_c");
    prod(x, y) = in(clamp(x, 0, 19), clamp(y, 0, 11)) * 2;
    cons(x, y) = prod(x - 1, y) + prod(x + 1, y + 1);
    plain_p(x, y) = in(clamp(x, 0, 19), clamp(y, 0, 11)) * 2;
    plain_c(x, y) = plain_p(x - 1, y) + plain_p(x + 1, y + 1);
    Buffer<int> ref = plain_c.realize({20, 12});
    for (LoopLevel l : {LoopLevel(cons, y), LoopLevel(cons, x), LoopLevel::root(), LoopLevel::inlined()}) {
        prod.compute_at(l);
        Buffer<int> out = cons.realize({20, 12});
        out.for_each_element([&](int i, int j) { ASSERT_EQ(out(i, j), ref(i, j)); });
    }
    LoopLevel later;
    EXPECT_TRUE(later.is_inlined());
    later.set(LoopLevel(cons, y));
    prod.store_at(LoopLevel::root()).compute_at(later);
    Buffer<int> out = cons.realize({20, 12});
    out.for_each_element([&](int i, int j) { ASSERT_EQ(out(i, j), ref(i, j)); });
    EXPECT_TRUE(LoopLevel(cons, y) == later);
    EXPECT_CONTAINS(error_of([] { LoopLevel::root().func(); }), "of the root level");
    EXPECT_CONTAINS(error_of([&] { prod.store_at(LoopLevel::inlined()); }), "storage must be at the root or at a loop");
}

TEST(ParityTools, CompileJitCompilesBeforeTheCall) {
    ImageParam in(Float(32), 2, "cj_in");
    Var x("x"), y("y");
    Func f("cj_f");
    f(x, y) = in(x, y) * 2.0f + 1.0f;
    f.vectorize(x, 8);
    Buffer<float> b(37, 9);
    b.fill(3.0f);
    in.set(b);
    clear_cache();
    f.compile_jit({37, 9});
    CacheStats s0 = cache_stats();
    EXPECT_EQ(s0.compilations, 1u);
    Buffer<float> out = f.realize({37, 9});
    CacheStats s1 = cache_stats();
    EXPECT_EQ(s1.compilations, 1u);  // the call compiled nothing
    EXPECT_EQ(out(36, 8), 7.0f);
    Buffer<float> keep(5, 5);
    keep.fill(-1.0f);
    Pipeline(f).compile_jit(keep);
    EXPECT_EQ(keep(0, 0), -1.0f);  // nothing ran
    EXPECT_CONTAINS(error_of([&] { f.compile_jit({4}); }), "2 dimensions but 1 sizes");
}

TEST(ParityTools, LoopNestAndLoweredStmt) {
    ImageParam in(Float(32), 2, "ln_in");
    Param<float> k("ln_k", 2.0f);
    Var x("x"), y("y"), xi("xi"), yo("yo");
    Func blur("ln_blur"), out("ln_out");
    blur(x, y) = in(x, y) + in(x + 1, y);
    out(x, y) = blur(x, y) * k + blur(x, y + 1);
    out.split(y, yo, y, 8).parallel(yo).vectorize(x, 8);
    blur.compute_at(out, yo).vectorize(x, 8);
    std::string any = Pipeline(out).loop_nest();
    EXPECT_CONTAINS(any, "parallel ln_out");
    EXPECT_CONTAINS(any, "vectorized");
    EXPECT_CONTAINS(any, "allocate ln_blur");
    EXPECT_CONTAINS(any, "ln_blur(...) = ...");
    EXPECT_CONTAINS(any, "ln_out(...) = ...");
    EXPECT_CONTAINS(any, "ln_out.extent");  // ranges in terms of the buffers' fields
    Buffer<float> b(66, 33);
    in.set(b);
    std::string sized = Pipeline(out).loop_nest({64, 32});
    EXPECT_CONTAINS(sized, "in [0, 3]:");  // yo: 32 rows in strips of 8
    EXPECT_FALSE(weft_test::contains(sized, "ln_out.extent"));
    // The same summary opens lowered_ir (and so WEFT_DEBUG's output).
    EXPECT_EQ(Pipeline(out).lowered_ir({64, 32}).rfind("// ---- loop nest ----\n" + sized, 0), 0u);
    testing::internal::CaptureStdout();
    out.print_loop_nest();
    EXPECT_EQ(testing::internal::GetCapturedStdout(), any);

    std::string dir = testing::TempDir();
    std::string txt = dir + "/weft_lowered.stmt", html = dir + "/weft_lowered.html";
    out.compile_to_lowered_stmt(txt, {in, k});
    out.compile_to_lowered_stmt(html, {in, k}, HTML);
    auto slurp = [](const std::string &f) {
        std::string r;
        FILE *fp = std::fopen(f.c_str(), "rb");
        if (!fp) return r;
        char buf[4096];
        size_t n;
        while ((n = std::fread(buf, 1, sizeof buf, fp)) > 0) r.append(buf, n);
        std::fclose(fp);
        return r;
    };
    std::string t = slurp(txt), h = slurp(html);
    EXPECT_CONTAINS(t, "// ---- loop nest ----");
    EXPECT_CONTAINS(t, "after plan_memory");
    EXPECT_CONTAINS(h, "<!DOCTYPE html>");
    EXPECT_CONTAINS(h, "<details open><summary>loop nest</summary>");
    EXPECT_CONTAINS(h, "&lt;");  // comparisons escaped
    EXPECT_FALSE(weft_test::contains(h, "ln_blur < "));
    EXPECT_CONTAINS(error_of([&] { out.compile_to_lowered_stmt(txt, {in}); }),
                    "uses Param \"ln_k\", which is not in the argument list (ln_in)");
    EXPECT_CONTAINS(error_of([&] { out.compile_to_lowered_stmt(dir + "/no/such/dir/x.stmt", {in, k}); }),
                    "cannot write");
}

TEST(ParityTools, ProfileTargetAndEnvironment) {
    Target p = Target::from_string("host-profile");
    EXPECT_TRUE(p.has_feature("profile"));
    EXPECT_FALSE(Target::host().has_feature("profile"));
    EXPECT_NE(p, Target::host());
    EXPECT_CONTAINS(p.str(), "-profile");
    EXPECT_EQ(p.without_feature("profile"), Target::host());
    Var x("x");
    Func f("profiled_by_target");
    f(x) = sqrt(cast<float>(x));
    reset_profile();
    Buffer<float> out = f.realize({1000}, p);
    EXPECT_NEAR(out(16), 4.0f, 1e-6f);
    EXPECT_CONTAINS(profile_report(), "profiled_by_target");
    Func g("not_profiled");
    g(x) = x;
    g.realize({10});
    if (!profile_enabled()) EXPECT_FALSE(weft_test::contains(profile_report(), "not_profiled"));

    setenv("WEFT_JIT_TARGET", "host-profile", 1);
    EXPECT_EQ(get_jit_target_from_environment(), p);
    setenv("WEFT_JIT_TARGET", "gameboy", 1);
    EXPECT_CONTAINS(error_of([] { get_jit_target_from_environment(); }), "WEFT_JIT_TARGET=\"gameboy\"");
    unsetenv("WEFT_JIT_TARGET");
    EXPECT_EQ(get_jit_target_from_environment(), Target::host());
    EXPECT_EQ(get_host_target(), Target::host());
}

TEST(ParityTools, WarningsOncePerCompile) {
    Buffer<float> in(256);
    for (int i = 0; i < 256; i++) in(i) = (float)((i * 37) % 101) - 50.0f;
    Var x("x"), y("y");
    auto warnings_of = [](const std::function<void()> &fn) {
        testing::internal::CaptureStderr();
        fn();
        return testing::internal::GetCapturedStderr();
    };
    // A gather: the index is not linear in the vectorized Var.
    Func g("warn_gather");
    g(x) = in((x * x) % 256);
    g.vectorize(x, 8);
    std::string w = warnings_of([&] { g.realize({64}); });
    EXPECT_CONTAINS(w, "weft: warning: Func \"warn_gather\": a vectorized loop");
    EXPECT_CONTAINS(w, "with a gather");
    EXPECT_EQ(w.find("with a gather"), w.rfind("with a gather"));  // once
    EXPECT_EQ(warnings_of([&] { g.realize({64}); }), "");  // a cache hit compiles nothing: no warning
    // The gathered value bound in a let before the store (a Tuple's two values share it): the
    // warning names the Func whose loop it is in, not "?".
    Func gt("warn_gather_tuple");
    Expr v = in((x * x) % 256);
    gt(x) = Tuple(v + 1.0f, v * 2.0f);
    gt.vectorize(x, 8);
    w = warnings_of([&] { gt.realize({64}); });
    EXPECT_CONTAINS(w, "Func \"warn_gather_tuple\": a vectorized loop");
    EXPECT_EQ(w.find("Func \"?\""), std::string::npos) << w;
    EXPECT_EQ(w.find(".v1"), std::string::npos) << w;  // a Tuple's second value: the same Func
    // Upsampling (x / 2) and stride-2 loads are dense loads and shuffles: nothing to say.
    Func up("warn_up");
    up(x) = in(x / 2) + in(2 * x);
    up.vectorize(x, 16);
    EXPECT_EQ(warnings_of([&] { up.realize({128}); }), "");
    // A transposed store: a scatter.
    Func tr("warn_scatter");
    tr(x, y) = in(x) + cast<float>(y);
    tr.reorder(y, x).vectorize(y, 8);
    EXPECT_CONTAINS(warnings_of([&] { tr.realize({16, 16}); }), "Func \"warn_scatter\": a vectorized loop inside loop");
    // Dense loads: nothing to say.
    Func d("warn_dense");
    d(x) = in(x) + in(x + 1);
    d.vectorize(x, 8);
    EXPECT_EQ(warnings_of([&] { d.realize({100}); }), "");
    // A boundary condition: the first and last vectors of each row are clamped on one side
    // (after loop partitioning), loaded densely with a run-time check, not gathered.
    Func edge = BoundaryConditions::repeat_edge(in);
    Func e3("warn_edge");
    e3(x) = edge(x - 1) + edge(x) + edge(x + 1);
    e3.vectorize(x, 16);
    Buffer<float> e3o;
    EXPECT_EQ(warnings_of([&] { e3o = e3.realize({256}); }), "");
    for (int i = 0; i < 256; i++)
        EXPECT_EQ(e3o(i), in(std::max(i - 1, 0)) + in(i) + in(std::min(i + 1, 255)));
    // Directives on an inlined Func.
    Func p("warn_inlined"), c("warn_consumer");
    p(x) = in(x) * 2.0f;
    p.vectorize(x, 8);
    c(x) = p(x) + 1.0f;
    EXPECT_CONTAINS(warnings_of([&] { c.realize({64}); }),
                    "Func \"warn_inlined\" is inlined, so its loop directives (split, vectorize, parallel, ...) have no "
                    "effect");
    // Register storage too large for registers.
    Func big("warn_big"), use("warn_use");
    big(x, y) = in(x) + cast<float>(y);
    use(x, y) = big(x, y) * 2.0f;
    big.compute_root().store_in(MemoryType::Register);
    EXPECT_CONTAINS(warnings_of([&] { use.realize({256, 256}); }),
                    "Func \"warn_big\" is stored in MemoryType::Register, but its storage (262144 bytes) is too large");
}

TEST(ParityTools, AScheduleFromAutoScheduleIsNotWarnedAbout) {
    // A table read at data-dependent indices (a histogram's map): a gather wherever the reader
    // is vectorized. Pipeline::auto_schedule's schedule is not warned about (as the first
    // call's is not); the same schedule written by hand is, and so is the automatic one once
    // the user changes it.
    Buffer<int> in(std::vector<int>{4096}, "aw_in");
    for (int i = 0; i < 4096; i++) in(i) = (i * 37) % 256;
    Var x("x");
    auto warnings_of = [](const std::function<void()> &fn) {
        testing::internal::CaptureStderr();
        fn();
        return testing::internal::GetCapturedStderr();
    };
    Func table("aw_table"), out("aw_out");
    table(x) = x * x + 1;
    out(x) = table(clamp(in(x), 0, 255)) * 3;
    out.set_estimates({{0, 4096}});
    Pipeline p(out);
    AutoScheduleResult r = p.auto_schedule(Target::host());
    ASSERT_NE(r.schedule_source.find("aw_out.vectorize("), std::string::npos) << r.schedule_source;
    Buffer<int> o(std::vector<int>{4096});
    EXPECT_EQ(warnings_of([&] { p.realize(o); }), "") << r.schedule_source;
    for (int i = 0; i < 4096; i++) ASSERT_EQ(o(i), (in(i) * in(i) + 1) * 3) << i;
    // The automatic schedule, then changed by the user: warned about.
    table.compute_root().vectorize(x, 8);
    EXPECT_CONTAINS(warnings_of([&] { p.realize(o); }), "with a gather");
}

TEST(ParitySchedules, CloneInSchedulesACopyApart) {
    Buffer<int> in(40, 30);
    in.for_each_element([&](int i, int j) { in(i, j) = (i * 7 + j * 13) % 31; });
    Var x("x"), y("y");
    RDom r(0, 3, "r");
    for (int variant = 0; variant < 3; variant++) {
        SCOPED_TRACE(variant);
        Func f("ci_f"), a("ci_a"), b("ci_b"), out("ci_out");
        f(x, y) = in(clamp(x, 0, 39), clamp(y, 0, 29));
        if (variant == 2) f(x, y) += f(x, y) * 2 + sum(in(clamp(x + r, 0, 39), clamp(y, 0, 29)));  // an update reading f
        a(x, y) = f(x, y) + f(x + 1, y);
        b(x, y) = f(x, y + 1) * 3;
        out(x, y) = a(x, y) + b(x, y);
        Buffer<int> ref(38, 28);
        internal::interpret_pipeline(Pipeline(out), {ref});
        Func c = f.clone_in(b);
        EXPECT_CONTAINS(c.name(), "ci_f_clone_in_ci_b");
        f.compute_root();
        if (variant >= 1) c.compute_at(b, y).vectorize(x, 4);
        a.compute_root().vectorize(x, 8);
        b.compute_root();
        Buffer<int> got = out.realize({38, 28});
        got.for_each_element([&](int i, int j) { ASSERT_EQ(got(i, j), ref(i, j)) << i << "," << j; });
        std::string nest = Pipeline(out).loop_nest({38, 28});
        if (variant >= 1) EXPECT_CONTAINS(nest, "ci_f_clone_in_ci_b");  // (inlined into ci_b otherwise)
        EXPECT_CONTAINS(nest, "for ci_f.s0.y");
        EXPECT_CONTAINS(error_of([&] { f.clone_in(b); }), "already reads a wrapper or clone");
    }
    Func u("ci_undefined");
    EXPECT_CONTAINS(error_of([&] { u.clone_in(Func("ci_other")); }), "has no definition");
}

TEST(ParityTools, TraceStoresLoadsAndRealizations) {
    Var x("x"), y("y");
    Buffer<int> in(3, 2, "in");
    in.for_each_element([&](const int *c) { in(c[0], c[1]) = c[0] + 10 * c[1]; });
    for (int sched = 0; sched < 3; sched++) {
        SCOPED_TRACE(sched);
        Func g("gradient"), h("doubled");
        g(x, y) = in(x, y) + 1;
        h(x, y) = g(x, y) * 2;
        g.compute_root().trace_stores().trace_loads().trace_realizations();
        h.trace_stores();
        if (sched == 1) h.vectorize(x, 4);  // (3 columns: a guarded vector)
        if (sched == 2) g.compute_at(h, y);
        testing::internal::CaptureStderr();
        Buffer<int> out = h.realize({3, 2});
        std::string got = testing::internal::GetCapturedStderr();
        std::vector<std::string> want;
        for (int j = 0; j < 2; j++)
            for (int i = 0; i < 3; i++) {
                std::string at = "(" + std::to_string(i) + ", " + std::to_string(j) + ")";
                int v = i + 10 * j + 1;
                want.push_back("Store gradient.0" + at + " = " + std::to_string(v));
                want.push_back("Load gradient.0" + at + " = " + std::to_string(v));
                want.push_back("Store doubled.0" + at + " = " + std::to_string(2 * v));
                EXPECT_EQ(out(i, j), 2 * v);
            }
        if (sched == 2) {  // one row of gradient per row of doubled
            for (int j = 0; j < 2; j++) {
                want.push_back("Begin realization gradient.0(0, 3, " + std::to_string(j) + ", 1)");
                want.push_back("End realization gradient.0(0, 3, " + std::to_string(j) + ", 1)");
            }
        } else {
            want.push_back("Begin realization gradient.0(0, 3, 0, 2)");
            want.push_back("End realization gradient.0(0, 3, 0, 2)");
        }
        std::sort(want.begin(), want.end());
        EXPECT_EQ(weft_test::sorted_lines(got), want) << got;
        if (sched != 0) continue;
        // The same lines from the interpreter (which runs the pipeline unscheduled).
        testing::internal::CaptureStderr();
        Buffer<int> ref(3, 2);
        internal::interpret_pipeline(Pipeline(h), {ref});
        EXPECT_EQ(weft_test::sorted_lines(testing::internal::GetCapturedStderr()), want);
    }
    // Tracing is part of what is compiled: the untraced Func of the same structure prints nothing.
    Func g2("gradient2"), h2("doubled2");
    g2(x, y) = in(x, y) + 1;
    h2(x, y) = g2(x, y) * 2;
    g2.compute_root();
    testing::internal::CaptureStderr();
    h2.realize({3, 2});
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST(ParityExpressions, ImplicitVars) {
    Buffer<float> in(4, 3, 2, "in");
    in.for_each_element([&](const int *c) { in(c[0], c[1], c[2]) = (float)(c[0] + 10 * c[1] + 100 * c[2]); });
    Var x("x"), c("c");
    Func f("f"), g("g"), h("h");
    f(x, _) = in(x, _) * 2;            // f(x, _0, _1)
    g(_) = in(_) + 1;                  // g(_0, _1, _2)
    h(_, c) = in(_, c) - f(_, c);      // _ first: h(_0, _1, c)
    h(_, c) += 1.0f;                   // an update with _
    EXPECT_EQ(f.dimensions(), 3);
    EXPECT_EQ(g.dimensions(), 3);
    EXPECT_EQ(h.dimensions(), 3);
    EXPECT_EQ(f.args()[1].name(), "_0");
    EXPECT_EQ(h.args()[2].name(), "c");
    g.vectorize(_0, 2);  // the implicit Vars by name, for schedules
    Buffer<float> fo = f.realize({4, 3, 2}), go = g.realize({4, 3, 2}), ho = h.realize({4, 3, 2});
    in.for_each_element([&](const int *p) {
        float v = in(p[0], p[1], p[2]);
        EXPECT_EQ(fo(p[0], p[1], p[2]), 2 * v);
        EXPECT_EQ(go(p[0], p[1], p[2]), v + 1);
        EXPECT_EQ(ho(p[0], p[1], p[2]), v - 2 * v + 1);
    });
    ImageParam ip(Float(32), 3, "ip");
    Func m("m");
    m(_) = ip(_) * 3;
    EXPECT_EQ(m.dimensions(), 3);
    // Errors: two placeholders; more arguments than dimensions; a Func called before it is defined.
    EXPECT_CONTAINS(error_of([&] { Func k("k"); k(_, _) = in(_); }), "at most one _");
    EXPECT_CONTAINS(error_of([&] { Func k("k"); k(x) = in(x, x, x, _, x); }), "3 dimensions but is called with 4 arguments besides _");
    EXPECT_CONTAINS(error_of([&] { Func k("k"), u("u"); k(_) = u(_); }), "called before it has a definition");
}

TEST(ParityExpressions, PrintAndPrintWhen) {
    Var x("x");
    for (int sched = 0; sched < 3; sched++) {
        SCOPED_TRACE(sched);
        Func f("printed");
        f(x) = print(x * 2, "is twice", x, cast<float>(x) * 0.1f);
        if (sched == 1) f.vectorize(x, 4);
        if (sched == 2) f.parallel(x);
        testing::internal::CaptureStderr();
        Buffer<int> out = f.realize({4});
        std::string got = testing::internal::GetCapturedStderr();
        for (int i = 0; i < 4; i++) EXPECT_EQ(out(i), 2 * i);
        EXPECT_EQ(weft_test::sorted_lines(got), (std::vector<std::string>{"0 is twice 0 0", "2 is twice 1 0.1", "4 is twice 2 0.2",
                                                               "6 is twice 3 0.3"}));
    }
    // The interpreter prints the same.
    Func g("printed_ref");
    g(x) = print(x - 1, "u8", cast<uint8_t>(250 + x), "f64", cast<double>(x) / 3.0);
    Buffer<int> ref(2);
    testing::internal::CaptureStderr();
    internal::interpret_pipeline(Pipeline(g), {ref});
    std::string a = testing::internal::GetCapturedStderr();
    testing::internal::CaptureStderr();
    Buffer<int> jit = g.realize({2});
    std::string b = testing::internal::GetCapturedStderr();
    EXPECT_EQ(weft_test::sorted_lines(a), weft_test::sorted_lines(b));
    EXPECT_EQ(weft_test::sorted_lines(a), (std::vector<std::string>{"-1 u8 250 f64 0", "0 u8 251 f64 0.3333333333333333"}));
    for (int vec : {1, 8}) {
        Func h("printed_when");
        h(x) = print_when(x == 5 || x == 10, cast<float>(x) * 0.5f, "at", x);
        if (vec > 1) h.vectorize(x, vec);
        testing::internal::CaptureStderr();
        Buffer<float> ho = h.realize({16});
        std::string w = testing::internal::GetCapturedStderr();
        EXPECT_EQ(ho(5), 2.5f);
        EXPECT_EQ(weft_test::sorted_lines(w), (std::vector<std::string>{"2.5 at 5", "5 at 10"}));
    }
    EXPECT_CONTAINS(error_of([] { print(std::vector<PrintArg>{"text first"}); }), "first argument must be an Expr");
    EXPECT_CONTAINS(error_of([&] { print_when(x, 1, "a"); }), "the condition must be a bool");
}

}  // namespace
