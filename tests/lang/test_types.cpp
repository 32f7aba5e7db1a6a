// API.md "Types and expressions": Type, promotion rules, floor division, math, select/clamp.
#include "lang_test_util.h"

#include <limits>

using namespace weft;
using weft_test::error_of;

namespace {

TEST(Types, Constructors) {
    EXPECT_EQ(Int(32).bits(), 32);
    EXPECT_EQ(UInt(8).bits(), 8);
    EXPECT_EQ(Float(64).bits(), 64);
    EXPECT_TRUE(Float(32).is_float());
    EXPECT_FALSE(Int(16).is_float());
    EXPECT_FALSE(UInt(64).is_float());
    EXPECT_TRUE(Bool().is_bool());
    EXPECT_EQ(type_of<uint8_t>(), UInt(8));
    EXPECT_EQ(type_of<int16_t>(), Int(16));
    EXPECT_EQ(type_of<int64_t>(), Int(64));
    EXPECT_EQ(type_of<float>(), Float(32));
    EXPECT_EQ(type_of<double>(), Float(64));
    EXPECT_EQ(type_of<bool>(), Bool());
    EXPECT_NE(Int(32), UInt(32));
}

TEST(Types, ImplicitConstants) {
    EXPECT_EQ(Expr(3).type(), Int(32));
    EXPECT_EQ(Expr(3.0f).type(), Float(32));
    EXPECT_EQ(Expr(3.0).type(), Float(64));
}

template <typename T>
T realize_scalar(Expr e) {
    Var x("x");
    Func f("scalar_of_type");
    f(x) = e;
    Buffer<T> out = f.realize({1});
    return out(0);
}

// Unsigned and 64-bit constants, as Halide spells them: `1u` is UInt(32) (and, a constant, takes
// a narrower operand's type where it fits); Int(64) and UInt(64) explicitly.
TEST(Types, UnsignedAnd64BitConstants) {
    EXPECT_EQ(Expr(3u).type(), UInt(32));
    EXPECT_EQ(Expr(int64_t(1) << 40).type(), Int(64));
    EXPECT_EQ(Expr(uint64_t(1) << 63).type(), UInt(64));
    Expr e = 4000000000u;  // (implicit, as an int would be)
    EXPECT_EQ(realize_scalar<uint32_t>(e), 4000000000u);
    EXPECT_EQ(realize_scalar<int64_t>(Expr(-(int64_t(5) << 40))), -(int64_t(5) << 40));
    EXPECT_EQ(realize_scalar<uint64_t>(Expr(uint64_t(1) << 63) + Expr(uint64_t(7))), (uint64_t(1) << 63) + 7);
    Param<uint8_t> p8("p8", 200);
    Expr u8 = p8;
    EXPECT_EQ((u8 | 1u).type(), UInt(8));
    EXPECT_EQ(realize_scalar<uint8_t>(u8 | 1u), 201);
    EXPECT_EQ(realize_scalar<uint8_t>(u8 >> 3u), 25);
    // A constant that does not fit in the other operand's type is an error, with advice.
    EXPECT_CONTAINS(error_of([&] { Expr r = u8 + 300u; }), "does not fit in uint8");
    // Two constants: the wider type.
    EXPECT_EQ((Expr(7) + 3000000000u).type(), UInt(32));
}

TEST(Types, MaxMinValues) {
    EXPECT_EQ(Int(8).max().type(), Int(8));
    EXPECT_EQ(UInt(16).min().type(), UInt(16));
    EXPECT_EQ(realize_scalar<int8_t>(Int(8).max()), 127);
    EXPECT_EQ(realize_scalar<int8_t>(Int(8).min()), -128);
    EXPECT_EQ(realize_scalar<uint8_t>(UInt(8).max()), 255);
    EXPECT_EQ(realize_scalar<uint8_t>(UInt(8).min()), 0);
    EXPECT_EQ(realize_scalar<int16_t>(Int(16).min()), -32768);
    EXPECT_EQ(realize_scalar<uint16_t>(UInt(16).max()), 65535);
    EXPECT_EQ(realize_scalar<int32_t>(Int(32).max()), std::numeric_limits<int32_t>::max());
    EXPECT_EQ(realize_scalar<int32_t>(Int(32).min()), std::numeric_limits<int32_t>::min());
    EXPECT_EQ(realize_scalar<uint32_t>(UInt(32).max()), std::numeric_limits<uint32_t>::max());
    EXPECT_EQ(realize_scalar<int64_t>(Int(64).max()), std::numeric_limits<int64_t>::max());
    EXPECT_EQ(realize_scalar<int64_t>(Int(64).min()), std::numeric_limits<int64_t>::min());
    EXPECT_EQ(realize_scalar<uint64_t>(UInt(64).max()), std::numeric_limits<uint64_t>::max());
    EXPECT_EQ(realize_scalar<float>(Float(32).max()), std::numeric_limits<float>::max());
    EXPECT_EQ(realize_scalar<float>(Float(32).min()), std::numeric_limits<float>::lowest());
    EXPECT_EQ(realize_scalar<double>(Float(64).max()), std::numeric_limits<double>::max());
}

TEST(Types, PromotionConstantTakesOtherType) {
    Var x("x");
    Expr u8 = cast<uint8_t>(x);
    EXPECT_EQ((u8 + 1).type(), UInt(8));
    EXPECT_EQ((1 + u8).type(), UInt(8));
    EXPECT_EQ((cast<int16_t>(x) * 3).type(), Int(16));
    EXPECT_EQ((cast<float>(x) + 2.5).type(), Float(32));
    EXPECT_EQ((cast<double>(x) + 2.5f).type(), Float(64));
    EXPECT_EQ((cast<int64_t>(x) - 7).type(), Int(64));
}

TEST(Types, PromotionIntWithFloatGivesFloat) {
    Var x("x");
    EXPECT_EQ((x + 1.5f).type(), Float(32));
    EXPECT_EQ((x + cast<float>(x)).type(), Float(32));
    EXPECT_EQ((cast<uint8_t>(x) * cast<float>(x)).type(), Float(32));
    EXPECT_EQ((cast<int16_t>(x) + cast<double>(x)).type(), Float(64));
}

TEST(Types, PromotionNarrowerWithWider) {
    Var x("x");
    EXPECT_EQ((cast<int16_t>(x) + cast<int32_t>(x)).type(), Int(32));
    EXPECT_EQ((cast<int8_t>(x) + cast<int64_t>(x)).type(), Int(64));
    EXPECT_EQ((cast<uint8_t>(x) + cast<uint16_t>(x)).type(), UInt(16));
    EXPECT_EQ((cast<float>(x) + cast<double>(x)).type(), Float(64));
    EXPECT_EQ((cast<double>(x) * cast<float>(x)).type(), Float(64));
}

TEST(Types, ComparisonsGiveBool) {
    Var x("x");
    EXPECT_EQ((x < 3).type(), Bool());
    EXPECT_EQ((cast<float>(x) >= 1.0f).type(), Bool());
    EXPECT_EQ((x == x).type(), Bool());
    EXPECT_EQ(((x < 3) && (x > 1)).type(), Bool());
    EXPECT_EQ((!(x != 2)).type(), Bool());
}

TEST(Types, LossyMixesAskForCast) {
    Var x("x");
    std::string m = error_of([&] { Expr e = cast<int32_t>(x) + cast<uint32_t>(x); });
    EXPECT_CONTAINS(m, "cast");
    m = error_of([&] { Expr e = cast<uint16_t>(x) * cast<int16_t>(x); });
    EXPECT_CONTAINS(m, "cast");
    m = error_of([&] { Expr e = cast<int64_t>(x) < cast<uint64_t>(x); });
    EXPECT_CONTAINS(m, "cast");
    EXPECT_THROW((void)(cast<uint32_t>(x) - cast<int32_t>(x)), Error);
}

TEST(Types, ExplicitCastsAndTruncation) {
    Var x("x");
    Func f("casts");
    // 300 -> uint8 wraps to 44; -1.75f -> int truncates toward zero.
    f(x) = cast<int>(cast<uint8_t>(x + 300)) + cast<int>(cast(Float(32), x) - 1.75f) * 1000;
    Buffer<int> out = f.realize({4});
    for (int i = 0; i < 4; i++) EXPECT_EQ(out(i), (int)(uint8_t)(i + 300) + (int)((float)i - 1.75f) * 1000) << i;
}

// Division and modulo computed by JIT code on values it cannot see at compile time.
template <typename T>
void check_div_mod(bool vectorized) {
    SCOPED_TRACE(type_of<T>().str() + (vectorized ? " vectorized" : " scalar"));
    std::vector<T> nums, dens;
    std::vector<int64_t> vals = {0, 1, 2, 3, 5, 7, 8, 9, 17, 100, 127};
    if constexpr (std::is_signed_v<T>) {
        for (int64_t v : {-1, -2, -3, -5, -7, -8, -9, -17, -100, -127}) vals.push_back(v);
    }
    for (int64_t v : vals) nums.push_back((T)v);
    for (int64_t v : vals) dens.push_back((T)v);  // includes 0
    const int n = (int)nums.size(), m = (int)dens.size();
    Buffer<T> a(n, m), b(n, m);
    for (int j = 0; j < m; j++)
        for (int i = 0; i < n; i++) {
            a(i, j) = nums[i];
            b(i, j) = dens[j];
        }
    Var x("x"), y("y");
    Func q("quot"), r("rem");
    q(x, y) = a(x, y) / b(x, y);
    r(x, y) = a(x, y) % b(x, y);
    if (vectorized) {
        q.vectorize(x, 8);
        r.vectorize(x, 8);
    }
    Buffer<T> qo = q.realize({n, m});
    Buffer<T> ro = r.realize({n, m});
    for (int j = 0; j < m; j++)
        for (int i = 0; i < n; i++) {
            EXPECT_EQ((int64_t)qo(i, j), (int64_t)weft_test::floor_div<T>(nums[i], dens[j]))
                << (int64_t)nums[i] << " / " << (int64_t)dens[j];
            EXPECT_EQ((int64_t)ro(i, j), (int64_t)weft_test::floor_mod<T>(nums[i], dens[j]))
                << (int64_t)nums[i] << " % " << (int64_t)dens[j];
        }
}

TEST(Arithmetic, FloorDivModInt32) {
    check_div_mod<int32_t>(false);
    check_div_mod<int32_t>(true);
}
TEST(Arithmetic, FloorDivModInt8) { check_div_mod<int8_t>(false); }
TEST(Arithmetic, FloorDivModInt16) { check_div_mod<int16_t>(true); }
TEST(Arithmetic, FloorDivModInt64) {
    check_div_mod<int64_t>(false);
    check_div_mod<int64_t>(true);
}
TEST(Arithmetic, FloorDivModUInt8) { check_div_mod<uint8_t>(false); }
TEST(Arithmetic, FloorDivModUInt32) {
    check_div_mod<uint32_t>(false);
    check_div_mod<uint32_t>(true);
}

TEST(Arithmetic, DivModByConstantsOnNegativeCoordinates) {
    Var x("x");
    Func f("divc"), g("modc"), h("modneg");
    f(x) = x / 4 + (x / -3) * 1000;
    g(x) = x % 4 + (x % 7) * 100;
    h(x) = x % -3;
    Buffer<int> fo(41), go(41), ho(41);
    fo.set_min({-20});
    go.set_min({-20});
    ho.set_min({-20});
    f.realize(fo);
    g.realize(go);
    h.realize(ho);
    for (int i = -20; i <= 20; i++) {
        EXPECT_EQ(fo(i), weft_test::floor_div(i, 4) + weft_test::floor_div(i, -3) * 1000) << i;
        EXPECT_EQ(go(i), weft_test::floor_mod(i, 4) + weft_test::floor_mod(i, 7) * 100) << i;
        EXPECT_GE(go(i) % 100, 0) << "modulo by a positive divisor is never negative";
        EXPECT_EQ(ho(i), weft_test::floor_mod(i, -3)) << i;
    }
}

TEST(Arithmetic, DivisionByConstantZeroGivesZero) {
    Var x("x");
    Func f("divzero");
    f(x) = x / 0 + (x % 0) * 10 + 1;
    Buffer<int> out(9);
    out.set_min({-4});
    f.realize(out);
    for (int i = -4; i <= 4; i++) EXPECT_EQ(out(i), 1) << i;
}

TEST(Arithmetic, FloatDivision) {
    Var x("x");
    Func f("fdiv");
    f(x) = cast<float>(x - 5) / 4.0f;
    Buffer<float> out = f.realize({11});
    for (int i = 0; i < 11; i++) EXPECT_FLOAT_EQ(out(i), (float)(i - 5) / 4.0f) << i;
}

TEST(Arithmetic, IntegerOpsAndLogic) {
    Var x("x");
    Func f("intops");
    f(x) = (x * 7 - 3) + select((x > 2) && !(x == 5), 100, 0) + select((x < 1) || (x >= 8), 1000, 0) +
           select(x != 4, 0, 10000) + select(x <= 3, 7, 0) + (-x);
    Buffer<int> out = f.realize({10});
    for (int i = 0; i < 10; i++) {
        int e = (i * 7 - 3) + ((i > 2 && i != 5) ? 100 : 0) + ((i < 1 || i >= 8) ? 1000 : 0) + (i != 4 ? 0 : 10000) +
                (i <= 3 ? 7 : 0) - i;
        EXPECT_EQ(out(i), e) << i;
    }
}

TEST(Arithmetic, SelectMinMaxClamp) {
    Buffer<int> in(16);
    for (int i = 0; i < 16; i++) in(i) = (i * 37) % 23 - 11;
    Var x("x");
    Func f("smc");
    f(x) = select(in(x) > 0, in(x) * 2, in(x) - 1) + 100 * clamp(in(x), -3, 4) + 10000 * min(in(x), 2) +
           1000000 * max(in(x), -5);
    f.vectorize(x, 4);
    Buffer<int> out = f.realize({16});
    for (int i = 0; i < 16; i++) {
        int v = in(i);
        int e = (v > 0 ? v * 2 : v - 1) + 100 * std::min(std::max(v, -3), 4) + 10000 * std::min(v, 2) +
                1000000 * std::max(v, -5);
        EXPECT_EQ(out(i), e) << i;
    }
}

TEST(Arithmetic, ClampFloat) {
    Var x("x");
    Func f("clampf");
    f(x) = clamp(cast<float>(x) * 0.5f - 2.0f, -1.25f, 1.5f);
    Buffer<float> out = f.realize({12});
    for (int i = 0; i < 12; i++) EXPECT_FLOAT_EQ(out(i), std::min(std::max(i * 0.5f - 2.0f, -1.25f), 1.5f));
}

TEST(MathFunctions, MatchStdFloat32) {
    const int n = 40;
    Buffer<float> in(n);
    for (int i = 0; i < n; i++) in(i) = 0.05f + 0.37f * (float)i - (i % 3 == 0 ? 7.0f : 0.0f);
    Var x("x");
    struct Case {
        const char *name;
        std::function<Expr(Expr)> weft_fn;
        std::function<double(double)> std_fn;
        bool positive_only;
    };
    std::vector<Case> cases = {
        {"abs", [](Expr e) { return abs(e); }, [](double v) { return std::fabs(v); }, false},
        {"sqrt", [](Expr e) { return sqrt(e); }, [](double v) { return std::sqrt(v); }, true},
        {"exp", [](Expr e) { return exp(e); }, [](double v) { return std::exp(v); }, false},
        {"log", [](Expr e) { return log(e); }, [](double v) { return std::log(v); }, true},
        {"sin", [](Expr e) { return sin(e); }, [](double v) { return std::sin(v); }, false},
        {"cos", [](Expr e) { return cos(e); }, [](double v) { return std::cos(v); }, false},
        {"tanh", [](Expr e) { return tanh(e); }, [](double v) { return std::tanh(v); }, false},
        {"floor", [](Expr e) { return floor(e); }, [](double v) { return std::floor(v); }, false},
        {"ceil", [](Expr e) { return ceil(e); }, [](double v) { return std::ceil(v); }, false},
        {"round", [](Expr e) { return round(e); }, [](double v) { return std::nearbyint(v); }, false},
        {"pow", [](Expr e) { return pow(e, 1.5f); }, [](double v) { return std::pow(v, 1.5); }, true},
    };
    for (const auto &c : cases) {
        for (bool vec : {false, true}) {
            SCOPED_TRACE(std::string(c.name) + (vec ? " vectorized" : ""));
            Func f(std::string("math_") + c.name);
            Expr v = c.positive_only ? abs(in(x)) + 0.01f : in(x);
            f(x) = c.weft_fn(v);
            EXPECT_EQ(f.type(), Float(32));
            if (vec) f.vectorize(x, 8);
            Buffer<float> out = f.realize({n});
            for (int i = 0; i < n; i++) {
                double arg = c.positive_only ? std::fabs((double)in(i)) + 0.01f : (double)in(i);
                double e = c.std_fn((float)arg);
                EXPECT_NEAR(out(i), e, 1e-5 * std::max(1.0, std::fabs(e))) << c.name << "(" << arg << ")";
            }
        }
    }
}

TEST(MathFunctions, Float64AndIntAbs) {
    Var x("x");
    Func f("math64"), g("iabs");
    f(x) = sqrt(cast<double>(x) + 2.0) + exp(cast<double>(x) * 0.25) + pow(cast<double>(x) + 1.0, 2.0);
    g(x) = cast<int>(abs(x - 5));
    EXPECT_EQ(f.type(), Float(64));
    Buffer<double> fo = f.realize({8});
    Buffer<int> go = g.realize({10});
    for (int i = 0; i < 8; i++)
        EXPECT_NEAR(fo(i), std::sqrt(i + 2.0) + std::exp(i * 0.25) + std::pow(i + 1.0, 2.0), 1e-9) << i;
    for (int i = 0; i < 10; i++) EXPECT_EQ(go(i), std::abs(i - 5)) << i;
}

TEST(Expressions, ToStringIsReadable) {
    Var x("x");
    std::string s = to_string(x + 1);
    EXPECT_CONTAINS(s, "x");
    EXPECT_CONTAINS(s, "1");
}

}  // namespace
