// Mixed precision (issue 20): float16 and bfloat16 as element types, their conversions (round to
// nearest even, once, from any type), arithmetic in float32 rounded back, and the fixed-point
// intrinsics with Halide's names, exhaustively for 8-bit operands against an exact reference and
// against the interpreter, vectorized and not.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "lang/lang_test_util.h"
#include "pipeline/PipelineInternal.h"

using namespace weft;
using weft_test::error_of;

namespace {

uint32_t bits_of(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
float float_of(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
/** float -> bfloat16 bits by the textbook integer rounding (an independent reference). */
uint16_t bf16_reference(float f) {
    uint32_t u = bits_of(f);
    if ((u & 0x7fffffff) > 0x7f800000) return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}
/** Interesting floats: zeros, subnormals of every kind, limits, ties, NaN, infinities, randoms. */
std::vector<float> interesting_floats() {
    std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.99f, 65520.0f, -65520.0f, 1e-8f, 5.96e-8f,
                            2.98e-8f, 6.1e-5f, 3.0e38f, 3.4028235e38f, 1.17549435e-38f, 1e-45f,
                            std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            std::nanf(""), 1.0009765625f, 1.00048828125f, 1.00146484375f, 2049.0f, 2051.0f};
    std::mt19937 rng(7);
    for (int i = 0; i < 3000; i++) v.push_back(float_of(rng()));  // every exponent, NaNs included
    for (int i = 0; i < 1000; i++) v.push_back(std::ldexp((float)(rng() % 100000) / 100000.0f, (int)(rng() % 40) - 28));
    return v;
}

template <typename T>
bool same16(T a, T b) {
    if (a.is_nan() && b.is_nan()) return true;
    return a.bits == b.bits;
}

}  // namespace

TEST(Float16, HostTypeConvertsExactlyAndRoundsToNearestEven) {
    // float16 -> float -> float16 is the identity for every bit pattern but NaNs (which stay NaN).
    for (uint32_t b = 0; b < 65536; b++) {
        float16_t h = float16_t::from_bits((uint16_t)b);
        float f = (float)h;
        if (h.is_nan()) {
            EXPECT_TRUE(std::isnan(f));
            EXPECT_TRUE(float16_t(f).is_nan());
            continue;
        }
        ASSERT_EQ(float16_t(f).bits, b) << b;
        bfloat16_t g = bfloat16_t::from_bits((uint16_t)b);
        if (!g.is_nan()) ASSERT_EQ(bfloat16_t((float)g).bits, b) << b;
    }
    for (float f : interesting_floats()) {
        EXPECT_TRUE(same16(bfloat16_t(f), bfloat16_t::from_bits(bf16_reference(f)))) << f;
#if defined(__FLT16_MAX__)
        _Float16 ref = (_Float16)f;  // the compiler's conversion (round to nearest even)
        uint16_t rb;
        std::memcpy(&rb, &ref, 2);
        EXPECT_TRUE(same16(float16_t(f), float16_t::from_bits(rb))) << f;
#endif
    }
    EXPECT_EQ(float16_t(65520.0f).bits, 0x7c00);  // the tie past the largest finite value: infinity
    EXPECT_EQ(float16_t(65519.0f).bits, 0x7bff);
    EXPECT_EQ(float16_t(-0.0f).bits, 0x8000);
    EXPECT_EQ(float16_t(1.0f + 1.0f / 2048).bits, 0x3c00);  // tie to even
    EXPECT_EQ(float16_t(1.0f + 3.0f / 2048).bits, 0x3c02);
    EXPECT_EQ(float16_t(std::ldexp(1.0, -25)).bits, 0x0000);  // half the smallest subnormal: to even (0)
    EXPECT_EQ(float16_t(std::ldexp(1.5, -25)).bits, 0x0001);
    // One rounding from double: 1 + 2^-11 + 2^-40 is above the tie; through float32 it would be the tie.
    EXPECT_EQ(float16_t(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)).bits, 0x3c01);
}

TEST(Float16, ConversionsInPipelinesMatchTheHostTypes) {
    std::vector<float> vals = interesting_floats();
    const int n = (int)vals.size();
    Buffer<float> in(n, "in");
    Buffer<double> ind(n, "ind");
    for (int i = 0; i < n; i++) {
        in(i) = vals[i];
        ind(i) = (double)vals[i] * (1.0 + std::ldexp(1.0, -30));  // not exactly a float: one rounding matters
    }
    ind(0) = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
    for (int vec : {1, 16}) {
        SCOPED_TRACE(vec);
        Var x("x");
        Func h("h"), b("b"), hd("hd"), bd("bd"), back("back"), bback("bback");
        h(x) = cast<float16_t>(in(x));
        b(x) = cast<bfloat16_t>(in(x));
        hd(x) = cast<float16_t>(ind(x));
        bd(x) = cast<bfloat16_t>(ind(x));
        back(x) = cast<float>(h(x)) + cast<float>(b(x)) * 0.0f;
        bback(x) = cast<double>(b(x));
        for (Func *f : {&h, &b, &hd, &bd, &back, &bback})
            if (vec > 1) f->vectorize(x, vec, TailStrategy::GuardWithIf);
        h.compute_root();
        b.compute_root();
        Buffer<float16_t> oh(n), ohd(n);
        Buffer<bfloat16_t> ob(n), obd(n);
        Buffer<float> oback(n);
        Buffer<double> obback(n);
        Pipeline(h).realize(oh);
        Pipeline(b).realize(ob);
        Pipeline(hd).realize(ohd);
        Pipeline(bd).realize(obd);
        Pipeline(back).realize(oback);
        Pipeline(bback).realize(obback);
        for (int i = 0; i < n; i++) {
            ASSERT_TRUE(same16(oh(i), float16_t(in(i)))) << i << " " << in(i);
            ASSERT_TRUE(same16(ob(i), bfloat16_t(in(i)))) << i << " " << in(i);
            ASSERT_TRUE(same16(ohd(i), float16_t(ind(i)))) << i << " " << ind(i);
            ASSERT_TRUE(same16(obd(i), bfloat16_t(ind(i)))) << i << " " << ind(i);
            float want = (float)float16_t(in(i));
            if (std::isnan(want) || std::isinf((float)bfloat16_t(in(i)))) continue;
            ASSERT_EQ(bits_of(oback(i)), bits_of(want + (float)bfloat16_t(in(i)) * 0.0f)) << i;
            ASSERT_EQ(obback(i), (double)bfloat16_t(in(i))) << i;
        }
    }
}

TEST(Float16, WideIntegersRoundOnce) {
    // 2^24 + 2^16 + 1 is just above a bfloat16 tie; through float32 it would be the tie (2^24).
    const int n = 6;
    Buffer<int32_t> in(n);
    Buffer<int64_t> in64(n);
    int32_t v[n] = {(1 << 24) + (1 << 16) + 1, -((1 << 24) + (1 << 16) + 1), 2147483647, -2147483647 - 1, 65519, 65520};
    for (int i = 0; i < n; i++) {
        in(i) = v[i];
        in64(i) = (int64_t)v[i] * ((int64_t)1 << 31) + 1;  // above 2^53: not a double either
    }
    Var x("x");
    Func b("b"), h("h"), b64("b64");
    b(x) = cast<bfloat16_t>(in(x));
    h(x) = cast<float16_t>(in(x));
    b64(x) = cast<bfloat16_t>(in64(x));
    Buffer<bfloat16_t> ob(n), ob64(n);
    Buffer<float16_t> oh(n);
    Pipeline(b).realize(ob);
    Pipeline(h).realize(oh);
    Pipeline(b64).realize(ob64);
    for (int i = 0; i < n; i++) {
        long double exact = v[i];
        EXPECT_EQ(ob(i).bits, bfloat16_t((double)v[i]).bits) << v[i];  // (an int32 is exact in double)
        EXPECT_EQ(oh(i).bits, float16_t((double)v[i]).bits) << v[i];
        (void)exact;
    }
    EXPECT_EQ((float)ob(0), (float)((1 << 24) + (1 << 17)));
    // int64: the value is 2^31 * v + 1; rounded once to bfloat16 it is bfloat16(2^31 * v) unless v's
    // bfloat16 rounding is a tie, where the +1 breaks it upward (in magnitude for positive values).
    EXPECT_EQ((double)ob64(0), std::ldexp((double)((1 << 24) + (1 << 17)), 31));
    EXPECT_EQ((double)ob64(4), (double)bfloat16_t(65519.0 * std::ldexp(1.0, 31)));
}

TEST(Float16, ArithmeticIsFloatRoundedToTheType) {
    const int n = 1000;
    Buffer<float16_t> a(n), b(n), c(n);
    Buffer<bfloat16_t> ba(n), bb(n);
    std::mt19937 rng(3);
    for (int i = 0; i < n; i++) {
        a(i) = float16_t((float)(rng() % 20000) / 100.0f - 100.0f);
        b(i) = float16_t((float)(rng() % 20000) / 1000.0f - 10.0f);
        c(i) = float16_t((float)(rng() % 2000) / 10.0f);
        ba(i) = bfloat16_t((float)a(i) * 1e30f);
        bb(i) = bfloat16_t((float)b(i));
    }
    auto r16 = [](float f) { return (float)float16_t(f); };
    auto rb = [](float f) { return (float)bfloat16_t(f); };
    for (int vec : {0, 1, 8}) {
        SCOPED_TRACE(vec);
        Var x("x");
        Func f("f"), g("g");
        f(x) = a(x) * b(x) + c(x) / b(x) - sqrt(c(x)) + min(a(x), c(x)) + float16_t(0.1f);
        g(x) = ba(x) * bb(x) + exp(bb(x));
        if (vec > 1) {
            f.vectorize(x, vec, TailStrategy::GuardWithIf);
            g.vectorize(x, vec, TailStrategy::GuardWithIf);
        }
        Buffer<float16_t> of(n);
        Buffer<bfloat16_t> og(n);
        if (vec == 0) {
            internal::interpret_pipeline(Pipeline(f), {of});
            internal::interpret_pipeline(Pipeline(g), {og});
        } else {
            Pipeline(f).realize(of);
            Pipeline(g).realize(og);
        }
        EXPECT_EQ(f.type(), Float(16));
        EXPECT_EQ(g.type(), BFloat(16));
        for (int i = 0; i < n; i++) {
            float A = (float)a(i), B = (float)b(i), C = (float)c(i);
            // (a * b + c written in one definition is a fused multiply-add, as for float32: in
            // float32, rounded once to the type)
            float want = r16(r16(r16(r16(std::fma(A, B, r16(C / B))) - r16(std::sqrt(C))) + r16(std::min(A, C))) +
                             (float)float16_t(0.1f));
            ASSERT_TRUE(same16(of(i), float16_t(want))) << i << ": " << (float)of(i) << " vs " << want;
            float wg = rb(std::fma((float)ba(i), (float)bb(i), rb(std::exp((float)bb(i)))));
            ASSERT_TRUE(same16(og(i), bfloat16_t(wg))) << i;
        }
    }
}

TEST(Float16, StencilOnHalfStorage) {
    const int w = 203, h = 61;
    Buffer<float16_t> in(w + 2, h + 2);
    for (int y = 0; y < h + 2; y++)
        for (int x = 0; x < w + 2; x++) in(x, y) = float16_t((float)((x * 7 + y * 13) % 101) / 7.0f);
    Var x("x"), y("y"), xi("xi");
    Func blur("blur");
    Expr s = cast<float>(in(x, y)) + cast<float>(in(x + 1, y)) + cast<float>(in(x + 2, y)) +
             cast<float>(in(x, y + 1)) + cast<float>(in(x + 1, y + 1)) + cast<float>(in(x + 2, y + 1)) +
             cast<float>(in(x, y + 2)) + cast<float>(in(x + 1, y + 2)) + cast<float>(in(x + 2, y + 2));
    blur(x, y) = cast<float16_t>(s / 9.0f);
    blur.vectorize(x, 16).parallel(y);
    Buffer<float16_t> out(w, h);
    Pipeline(blur).realize(out);
    for (int yy = 0; yy < h; yy++)
        for (int xx = 0; xx < w; xx++) {
            float t = 0;
            for (int dy = 0; dy < 3; dy++)
                for (int dx = 0; dx < 3; dx++) t += (float)in(xx + dx, yy + dy);
            ASSERT_EQ(out(xx, yy).bits, float16_t(t / 9.0f).bits) << xx << "," << yy;
        }
}

TEST(Float16, ParamsOfSixteenBitFloats) {
    Param<float16_t> p("p");
    p.set(float16_t(1.5f));
    Var x("x");
    Func f("f");
    f(x) = cast<float16_t>(x) * p;
    Buffer<float16_t> out(10);
    Pipeline(f).realize(out);
    for (int i = 0; i < 10; i++) EXPECT_EQ((float)out(i), (float)float16_t(i * 1.5f));
}

TEST(Float16, BadInputsGiveClearErrors) {
    ImageParam im(Float(32), 1, "im");
    Var x("x");
    Func f("f");
    f(x) = im(x) * 2.0f;
    Buffer<float16_t> half(8);
    Buffer<float> out(8);
    std::string e = error_of([&] { im.set(half); });
    EXPECT_NE(e.find("float16"), std::string::npos) << e;
    EXPECT_NE(e.find("float32"), std::string::npos) << e;
    // float16 with bfloat16: no implicit conversion
    Buffer<float16_t> a(4);
    Buffer<bfloat16_t> b(4);
    e = error_of([&] { Expr s = a(x) + b(x); });
    EXPECT_NE(e.find("bfloat16"), std::string::npos) << e;
    // Buffer<float16_t> of a bfloat16 buffer
    Buffer<void> v(BFloat(16), {4});
    e = error_of([&] { Buffer<float16_t> w(v); });
    EXPECT_NE(e.find("bfloat16"), std::string::npos) << e;
    // no bfloat of other widths
    e = error_of([&] { Buffer<void> bad(BFloat(32), {4}); });
    EXPECT_NE(e.find("bfloat32"), std::string::npos) << e;
}

TEST(Float16, NanAndInfinityThroughEveryConversion) {
    float specials[] = {std::nanf(""), -std::nanf(""), INFINITY, -INFINITY, 1e30f, -1e30f};
    const int n = 6;
    Buffer<float> in(n);
    for (int i = 0; i < n; i++) in(i) = specials[i];
    Var x("x");
    Func h("h"), i8("i8"), u16v("u16v"), sat("sat");
    h(x) = cast<float16_t>(in(x));
    i8(x) = cast<int8_t>(h(x));  // float to int saturates, NaN gives 0
    u16v(x) = cast<uint16_t>(cast<bfloat16_t>(h(x)));
    sat(x) = saturating_cast<float16_t>(in(x));
    h.compute_root();
    Buffer<int8_t> o8(n);
    Buffer<uint16_t> o16(n);
    Buffer<float16_t> os(n);
    Pipeline(i8).realize(o8);
    Pipeline(u16v).realize(o16);
    Pipeline(sat).realize(os);
    int8_t want8[] = {0, 0, 127, -128, 127, -128};
    uint16_t want16[] = {0, 0, 65535, 0, 65535, 0};
    for (int i = 0; i < n; i++) {
        EXPECT_EQ(o8(i), want8[i]) << i;
        EXPECT_EQ(o16(i), want16[i]) << i;
    }
    EXPECT_TRUE(os(0).is_nan());
    EXPECT_EQ((float)os(2), 65504.0f);  // saturating: the largest finite value, not infinity
    EXPECT_EQ((float)os(5), -65504.0f);
}

// ---- fixed point ----

namespace {
using i128 = __int128;
i128 sat(i128 v, bool sgn, int bits) {
    i128 lo = sgn ? -((i128)1 << (bits - 1)) : 0, hi = sgn ? ((i128)1 << (bits - 1)) - 1 : ((i128)1 << bits) - 1;
    return v < lo ? lo : v > hi ? hi : v;
}
i128 wrap(i128 v, bool sgn, int bits) {
    i128 m = (i128)1 << bits;
    i128 r = ((v % m) + m) % m;
    if (sgn && r >= m / 2) r -= m;
    return r;
}
i128 floor_div(i128 a, i128 b) {
    i128 q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}
i128 rshr(i128 a, int n, bool sgn, int bits) {
    if (n <= 0) return -n >= bits ? 0 : wrap(a * ((i128)1 << -n), sgn, bits);
    if (n > 100) return 0;  // (a + 2^(n-1)) lies in (0, 2^n) for |a| < 2^64
    return floor_div(a + ((i128)1 << (n - 1)), (i128)1 << n);
}

struct FixedCase {
    std::string name;
    std::function<Expr(Expr, Expr)> f;
    std::function<i128(i128, i128, bool)> ref;  // exact result (in the result's type)
};

template <typename T>
void exhaustive_8bit() {
    const bool sgn = std::is_signed_v<T>;
    const int lo = sgn ? -128 : 0;
    Buffer<T> A(256, 256), B(256, 256);
    for (int y = 0; y < 256; y++)
        for (int x = 0; x < 256; x++) {
            A(x, y) = (T)(x + lo);
            B(x, y) = (T)(y + lo);
        }
    std::vector<FixedCase> cases = {
        {"saturating_add", [](Expr a, Expr b) { return saturating_add(a, b); }, [&](i128 a, i128 b, bool s) { return sat(a + b, s, 8); }},
        {"saturating_sub", [](Expr a, Expr b) { return saturating_sub(a, b); }, [&](i128 a, i128 b, bool s) { return sat(a - b, s, 8); }},
        {"halving_add", [](Expr a, Expr b) { return halving_add(a, b); }, [&](i128 a, i128 b, bool) { return floor_div(a + b, 2); }},
        {"rounding_halving_add", [](Expr a, Expr b) { return rounding_halving_add(a, b); },
         [&](i128 a, i128 b, bool) { return floor_div(a + b + 1, 2); }},
        {"halving_sub", [](Expr a, Expr b) { return halving_sub(a, b); }, [&](i128 a, i128 b, bool s) { return wrap(floor_div(a - b, 2), s, 8); }},
        {"widening_add", [](Expr a, Expr b) { return cast(Int(32), widening_add(a, b)); }, [&](i128 a, i128 b, bool) { return a + b; }},
        {"widening_sub", [](Expr a, Expr b) { return cast(Int(32), widening_sub(a, b)); }, [&](i128 a, i128 b, bool) { return a - b; }},
        {"widening_mul", [](Expr a, Expr b) { return cast(Int(32), widening_mul(a, b)); }, [&](i128 a, i128 b, bool) { return a * b; }},
        {"absd", [](Expr a, Expr b) { return cast(Int(32), absd(a, b)); }, [&](i128 a, i128 b, bool) { return a > b ? a - b : b - a; }},
    };
    for (int q : {0, 1, 3, 7, 8, 9, 15, 16, 40}) {
        cases.push_back({"mul_shift_right q=" + std::to_string(q), [q](Expr a, Expr b) { return mul_shift_right(a, b, q); },
                         [q](i128 a, i128 b, bool s) { return sat(floor_div(a * b, (i128)1 << q), s, 8); }});
        cases.push_back({"rounding_mul_shift_right q=" + std::to_string(q),
                         [q](Expr a, Expr b) { return rounding_mul_shift_right(a, b, q); },
                         [q](i128 a, i128 b, bool s) { return sat(rshr(a * b, q, s, 64), s, 8); }});
    }
    for (int n : {-9, -8, -3, -1, 0, 1, 2, 7, 8, 9, 100}) {
        cases.push_back({"rounding_shift_right n=" + std::to_string(n), [n](Expr a, Expr) { return rounding_shift_right(a, n); },
                         [n](i128 a, i128, bool s) { return wrap(rshr(a, n, s, 8), s, 8); }});
        cases.push_back({"rounding_shift_left n=" + std::to_string(n), [n](Expr a, Expr) { return rounding_shift_left(a, n); },
                         [n](i128 a, i128, bool s) { return wrap(rshr(a, -n, s, 8), s, 8); }});
    }
    // A shift amount known only at run time: the amount is B's value (every amount from -128 to 255).
    cases.push_back({"rounding_shift_right n=b", [](Expr a, Expr b) { return rounding_shift_right(a, b); },
                     [](i128 a, i128 b, bool s) { return wrap(rshr(a, (int)b, s, 8), s, 8); }});
    for (auto &c : cases) {
        SCOPED_TRACE(c.name);
        Var x("x"), y("y");
        Func f("f"), g("g");
        f(x, y) = c.f(A(x, y), B(x, y));
        g(x, y) = c.f(A(x, y), B(x, y));
        f.vectorize(x, 64);
        Type t = f.type();
        Buffer<void> of(t, {256, 256}), og(t, {256, 256});
        Pipeline(f).realize(of);
        internal::interpret_pipeline(Pipeline(g), {og});
        auto get = [&](const Buffer<void> &b, int xx, int yy) -> i128 {
            const unsigned char *p = (const unsigned char *)b.raw_data() + ((size_t)yy * 256 + xx) * t.bytes();
            if (t == Int(32)) return *(const int32_t *)p;
            if (t == Int(8)) return *(const int8_t *)p;
            return *(const uint8_t *)p;
        };
        int bad = 0;
        for (int yy = 0; yy < 256 && bad < 5; yy++)
            for (int xx = 0; xx < 256 && bad < 5; xx++) {
                i128 want = c.ref(xx + lo, yy + lo, sgn);
                if (get(of, xx, yy) != want || get(og, xx, yy) != want) {
                    bad++;
                    ADD_FAILURE() << "a=" << xx + lo << " b=" << yy + lo << ": jit " << (long long)get(of, xx, yy)
                                  << ", interpreter " << (long long)get(og, xx, yy) << ", exact " << (long long)want;
                }
            }
    }
}
}  // namespace

TEST(FixedPoint, ExhaustiveSignedEightBit) { exhaustive_8bit<int8_t>(); }
TEST(FixedPoint, ExhaustiveUnsignedEightBit) { exhaustive_8bit<uint8_t>(); }

TEST(FixedPoint, WiderTypesAtTheirLimits) {
    const int n = 8;
    Buffer<int16_t> a16(n), b16(n);
    Buffer<int32_t> a32(n), b32(n);
    Buffer<int64_t> a64(n), b64(n);
    Buffer<uint64_t> u64a(n), u64b(n);
    int16_t v16[n] = {-32768, -32768, 32767, 32767, -1, 0, 12345, -20000};
    int16_t w16[n] = {-32768, 32767, 32767, 1, -32768, 0, 23456, 30000};
    for (int i = 0; i < n; i++) {
        a16(i) = v16[i];
        b16(i) = w16[i];
        a32(i) = v16[i] * 65536 + (i & 1 ? 65535 : 0);
        b32(i) = w16[i] * 65536;
        a64(i) = (int64_t)a32(i) * ((int64_t)1 << 32);  // a shift of a negative value is UB
        b64(i) = (int64_t)b32(i) * ((int64_t)1 << 32);
        u64a(i) = (uint64_t)a64(i);
        u64b(i) = (uint64_t)b64(i);
    }
    Var x("x");
    Func q15("q15"), mh("mh"), s32("s32"), s64("s64"), d64("d64"), u64s("u64s"), h64("h64"), w32("w32");
    q15(x) = rounding_mul_shift_right(a16(x), b16(x), 15);  // vpmulhrsw's operation, but saturating
    mh(x) = mul_shift_right(a16(x), b16(x), 16);
    s32(x) = saturating_add(a32(x), b32(x));
    s64(x) = saturating_add(a64(x), b64(x));
    d64(x) = saturating_sub(a64(x), b64(x));
    u64s(x) = saturating_sub(u64a(x), u64b(x));
    h64(x) = rounding_halving_add(a64(x), b64(x));
    w32(x) = widening_mul(a32(x), b32(x));
    for (Func *f : {&q15, &mh, &s32, &s64, &d64, &u64s, &h64, &w32}) f->vectorize(x, 8);
    Buffer<int16_t> o15(n), omh(n);
    Buffer<int32_t> o32(n);
    Buffer<int64_t> o64(n), od64(n), oh64(n), ow32(n);
    Buffer<uint64_t> ou64(n);
    Pipeline(q15).realize(o15);
    Pipeline(mh).realize(omh);
    Pipeline(s32).realize(o32);
    Pipeline(s64).realize(o64);
    Pipeline(d64).realize(od64);
    Pipeline(u64s).realize(ou64);
    Pipeline(h64).realize(oh64);
    Pipeline(w32).realize(ow32);
    for (int i = 0; i < n; i++) {
        i128 p = (i128)v16[i] * w16[i];
        EXPECT_EQ(o15(i), (int16_t)sat(rshr(p, 15, true, 64), true, 16)) << i;
        EXPECT_EQ(omh(i), (int16_t)floor_div(p, 65536)) << i;
        EXPECT_EQ(o32(i), (int32_t)sat((i128)a32(i) + b32(i), true, 32)) << i;
        EXPECT_EQ(o64(i), (int64_t)sat((i128)a64(i) + b64(i), true, 64)) << i;
        EXPECT_EQ(od64(i), (int64_t)sat((i128)a64(i) - b64(i), true, 64)) << i;
        EXPECT_EQ(ou64(i), (uint64_t)sat((i128)u64a(i) - (i128)u64b(i), false, 64)) << i;
        EXPECT_EQ(oh64(i), (int64_t)floor_div((i128)a64(i) + b64(i) + 1, 2)) << i;
        EXPECT_EQ(ow32(i), (int64_t)a32(i) * b32(i)) << i;
    }
    EXPECT_EQ(o15(0), 32767);  // -32768 * -32768: pmulhrsw alone would give -32768
}

TEST(FixedPoint, TypesAndErrors) {
    Var x("x");
    Expr u8v = cast<uint8_t>(x), i8v = cast<int8_t>(x), u16v = cast<uint16_t>(x);
    EXPECT_EQ(widening_add(u8v, u8v).type(), UInt(16));
    EXPECT_EQ(widening_sub(u8v, u8v).type(), Int(16));
    EXPECT_EQ(widening_mul(u8v, i8v).type(), Int(16));  // mixed signedness: signed
    EXPECT_EQ(widening_mul(u16v, 3).type(), UInt(32));
    EXPECT_EQ(saturating_add(u8v, 1).type(), UInt(8));
    EXPECT_EQ(rounding_shift_right(u16v, cast<int8_t>(x)).type(), UInt(16));
    std::string e = error_of([&] { widening_add(cast<int64_t>(x), cast<int64_t>(x)); });
    EXPECT_NE(e.find("widening_add"), std::string::npos) << e;
    e = error_of([&] { saturating_add(cast<float>(x), 1.0f); });
    EXPECT_NE(e.find("integers"), std::string::npos) << e;
    e = error_of([&] { mul_shift_right(i8v, i8v, -1); });
    EXPECT_NE(e.find(">= 0"), std::string::npos) << e;
    e = error_of([&] { saturating_add(u8v, 300); });
    EXPECT_NE(e.find("300"), std::string::npos) << e;
    e = error_of([&] { rounding_shift_right(u8v, 1.5f); });
    EXPECT_NE(e.find("integer"), std::string::npos) << e;
    e = error_of([&] { saturating_add(Expr(), u8v); });
    EXPECT_NE(e.find("undefined"), std::string::npos) << e;
}
