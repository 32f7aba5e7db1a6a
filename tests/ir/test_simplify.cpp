// Tests of the simplifier (src/ir/Simplify.cpp) and interval analysis (src/ir/Interval.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdint>
#include <sstream>

#include "ir/IR.h"
#include "ir/IRVisitor.h"
#include "ir/Interval.h"
#include "ir/ModulusRemainder.h"
#include "ir/Simplify.h"
#include "ir/Evaluate.h"
#include "lower/AlignLoads.h"

namespace {

using namespace weft;
using namespace weft::internal;

Expr I(int64_t v, Type t = Int(32)) { return IntImm::make(t, v); }
Expr U(uint64_t v, Type t) { return UIntImm::make(t, v); }
Expr F(double v, Type t = Float(32)) { return FloatImm::make(t, v); }
Expr B(bool b) { return UIntImm::make(Bool(), b); }
Expr V(const std::string &n, Type t = Int(32)) { return Variable::make(t, n); }
Expr add(Expr a, Expr b) { return Add::make(a, b); }
Expr sub(Expr a, Expr b) { return Sub::make(a, b); }
Expr mul(Expr a, Expr b) { return Mul::make(a, b); }
Expr dv(Expr a, Expr b) { return Div::make(a, b); }
Expr md(Expr a, Expr b) { return Mod::make(a, b); }
Expr mn(Expr a, Expr b) { return Min::make(a, b); }
Expr mx(Expr a, Expr b) { return Max::make(a, b); }
Expr lt(Expr a, Expr b) { return LT::make(a, b); }
Expr le(Expr a, Expr b) { return LE::make(a, b); }
Expr gt(Expr a, Expr b) { return GT::make(a, b); }
Expr eq(Expr a, Expr b) { return EQ::make(a, b); }
Expr sel(Expr c, Expr a, Expr b) { return Select::make(c, a, b); }
Expr cst(Type t, Expr a) { return Cast::make(t, a); }

std::string str(const Expr &e) {
    std::ostringstream s;
    s << e;
    return s.str();
}

#define EXPECT_SIMP(e, expected)                                                                    \
    do {                                                                                            \
        Expr got_ = simplify(e);                                                                    \
        Expr exp_ = (expected);                                                                     \
        EXPECT_TRUE(equal(got_, exp_)) << "simplify(" << str(e) << ") = " << str(got_) \
                                                    << ", expected " << str(exp_);                 \
    } while (0)

#define EXPECT_CONST(e, v)                                                                          \
    do {                                                                                            \
        Expr got_ = simplify(e);                                                                    \
        int64_t val_ = 0;                                                                           \
        EXPECT_TRUE(is_const_int(got_, &val_) && val_ == (int64_t)(v))                              \
            << "simplify(" << str(e) << ") = " << str(got_) << ", expected " << (int64_t)(v);       \
    } while (0)

Scope range(const std::string &n, int64_t lo, int64_t hi) {
    Scope s;
    s[n] = Interval(I(lo), I(hi));
    return s;
}

void expect_bounds(const Interval &b, int64_t lo, int64_t hi) {
    int64_t l = 0, h = 0;
    ASSERT_TRUE(b.min.defined() && is_const_int(b.min, &l)) << (b.min.defined() ? str(b.min) : "undefined");
    ASSERT_TRUE(b.max.defined() && is_const_int(b.max, &h)) << (b.max.defined() ? str(b.max) : "undefined");
    EXPECT_EQ(l, lo);
    EXPECT_EQ(h, hi);
}

// ---------------- constant folding ----------------
TEST(Simplify, FoldsIntegerConstantsWithWrapping) {
    EXPECT_CONST(add(I(2), I(3)), 5);
    EXPECT_CONST(add(I(INT32_MAX), I(1)), INT32_MIN);
    EXPECT_CONST(mul(I(65536), I(65536)), 0);
    EXPECT_SIMP(add(I(100, Int(8)), I(100, Int(8))), I(-56, Int(8)));
    EXPECT_SIMP(sub(U(3, UInt(8)), U(5, UInt(8))), U(254, UInt(8)));
    EXPECT_SIMP(mul(U(300, UInt(16)), U(300, UInt(16))), U(90000 % 65536, UInt(16)));
    EXPECT_SIMP(add(I(INT64_MAX, Int(64)), I(1, Int(64))), I(INT64_MIN, Int(64)));
}

TEST(Simplify, NestedDivisionsWithAnOffsetBecomeOne) {
    // (x / c1 + k) / c2 == (x + k c1) / (c1 c2) for floor division with c1, c2 > 0: a pyramid's
    // coordinates, level after level, stay one division deep.
    Expr x = V("x");
    EXPECT_SIMP(dv(add(dv(x, I(2)), I(1)), I(2)), dv(add(x, I(2)), I(4)));
    for (int c1 : {1, 2, 3, 4})
        for (int c2 : {2, 3, 5})
            for (int k : {-3, -1, 0, 1, 2, 7}) {
                Expr e = dv(add(dv(x, I(c1)), I(k)), I(c2));
                Expr s = simplify(e);
                for (int xv = -40; xv <= 40; xv++)
                    ASSERT_EQ(evaluate_int(s, {{"x", xv}}), evaluate_int(e, {{"x", xv}}))
                        << to_string(e) << " -> " << to_string(s) << " at x = " << xv;
            }
    // Ten levels, each the max of two forms of one coordinate, (a + 1) / 4 and
    // ((a + 1) / 2 + 1) / 2 (what bounds of a pyramid's upsampling produce): stays small
    // instead of doubling with each level.
    Expr a = x;
    for (int l = 0; l < 10; l++) a = simplify(mx(dv(add(a, I(1)), I(4)), dv(add(dv(add(a, I(1)), I(2)), I(1)), I(2))));
    EXPECT_LT(to_string(a).size(), 60u) << to_string(a);
}

TEST(Simplify, MinAndMaxTakeOutTheTermsBothSidesShare) {
    // min(c + p, c + q) -> c + min(p, q): the indices of one row clamped at its end share one
    // min (a ShiftInwards tail); the values are unchanged.
    Expr x = V("x"), y = V("y"), z = V("z");
    Expr e = mn(sub(add(mul(y, I(308)), mul(x, I(8))), I(26)), add(mul(y, I(308)), I(274)));
    Expr s = simplify(e);
    Expr shared = simplify(mn(sub(mul(x, I(8)), I(26)), I(274)));
    EXPECT_NE(to_string(s).find(to_string(shared)), std::string::npos) << to_string(s);
    // Terms with different coefficients are not shared; unsigned types (which wrap) are left as
    // they are; values agree everywhere, int32 edges included.
    for (Expr f : {e, Expr(mx(add(mul(x, I(2)), y), add(x, mul(y, I(3))))), Expr(mn(add(x, z), sub(add(x, y), I(5)))),
                   Expr(mx(add(add(x, y), z), add(y, I(-7))))}) {
        Expr g = simplify(f);
        for (int xv : {-2147483647 / 16, -9, 0, 3, 40})
            for (int yv : {-5, 0, 1, 11})
                for (int zv : {-3, 0, 8})
                    ASSERT_EQ(evaluate_int(g, {{"x", xv}, {"y", yv}, {"z", zv}}), evaluate_int(f, {{"x", xv}, {"y", yv}, {"z", zv}}))
                        << to_string(f) << " -> " << to_string(g);
    }
    Expr u = mn(add(V("a", UInt(32)), V("b", UInt(32))), add(V("a", UInt(32)), U(3, UInt(32))));
    for (int64_t av : {int64_t(0), int64_t(4294967280)})  // (a + b wraps where a is near 2^32)
        EXPECT_EQ(evaluate_int(simplify(u), {{"a", av}, {"b", 32}}), evaluate_int(u, {{"a", av}, {"b", 32}})) << to_string(simplify(u));
}

TEST(Simplify, FloorDivModAndZero) {
    EXPECT_CONST(dv(I(7), I(2)), 3);
    EXPECT_CONST(dv(I(-7), I(2)), -4);
    EXPECT_CONST(dv(I(7), I(-2)), -4);
    EXPECT_CONST(dv(I(-7), I(-2)), 3);
    EXPECT_CONST(md(I(-7), I(2)), 1);
    EXPECT_CONST(md(I(7), I(-2)), -1);
    EXPECT_CONST(md(I(-7), I(-2)), -1);
    EXPECT_CONST(dv(I(7), I(0)), 0);
    EXPECT_CONST(md(I(7), I(0)), 0);
    EXPECT_CONST(dv(V("x"), I(0)), 0);
    EXPECT_CONST(md(V("x"), I(0)), 0);
    EXPECT_CONST(dv(I(INT32_MIN), I(-1)), INT32_MIN);
    EXPECT_SIMP(dv(I(-128, Int(8)), I(-1, Int(8))), I(-128, Int(8)));
}

TEST(Simplify, FoldsCasts) {
    EXPECT_SIMP(cst(Int(8), I(300)), I(44, Int(8)));
    EXPECT_SIMP(cst(UInt(8), I(-1)), U(255, UInt(8)));
    EXPECT_SIMP(cst(Int(32), I(-1, Int(8))), I(-1));
    EXPECT_SIMP(cst(Int(32), U(255, UInt(8))), I(255));
    EXPECT_SIMP(cst(Int(32), F(1e20)), I(INT32_MAX));
    EXPECT_SIMP(cst(Int(32), F(-1e20)), I(INT32_MIN));
    EXPECT_SIMP(cst(Int(32), F(NAN)), I(0));
    EXPECT_SIMP(cst(Int(32), F(-2.75)), I(-2));
    EXPECT_SIMP(cst(UInt(8), F(-3.0)), U(0, UInt(8)));
    EXPECT_SIMP(cst(Bool(), I(5)), B(true));
    EXPECT_SIMP(cst(Float(32), I(16777217)), F(16777216.0));
    EXPECT_SIMP(cst(Float(32), F(0.1, Float(64))), F(0.1));
    // widening then narrowing back is the identity
    Expr x = V("x");
    EXPECT_SIMP(cst(Int(32), cst(Int(64), x)), x);
    EXPECT_SIMP(cst(Int(32), x), x);
}

TEST(Simplify, FoldsFloatsWithoutReassociating) {
    EXPECT_SIMP(add(F(0.1), F(0.2)), F((double)(0.1f + 0.2f)));
    EXPECT_SIMP(mul(F(3.0, Float(64)), F(0.5, Float(64))), F(1.5, Float(64)));
    Expr a = V("a", Float(32));
    Expr e = sub(add(a, F(1.0)), F(1.0));
    EXPECT_SIMP(e, e);
    EXPECT_SIMP(lt(F(1.0), F(2.0)), B(true));
    EXPECT_SIMP(lt(F(NAN), F(2.0)), B(false));
    // !(a < b) is not b <= a for floats (NaN)
    Expr n = Not::make(lt(a, F(1.0)));
    EXPECT_SIMP(n, n);
}

// ---------------- linear forms ----------------
TEST(Simplify, LinearForms) {
    Expr x = V("x"), y = V("y"), xo = V("xo");
    EXPECT_SIMP(sub(x, x), I(0));
    EXPECT_SIMP(mul(x, I(1)), x);
    EXPECT_SIMP(add(x, I(0)), x);
    EXPECT_SIMP(mul(x, I(0)), I(0));
    EXPECT_CONST(sub(add(x, I(8)), sub(x, I(1))), 9);
    // ((xo*8 + 7) + 1) - (xo*8 - 1) + 1 -> 10
    EXPECT_CONST(add(sub(add(add(mul(xo, I(8)), I(7)), I(1)), sub(mul(xo, I(8)), I(1))), I(1)), 10);
    EXPECT_SIMP(add(add(x, y), sub(I(0), x)), y);
    EXPECT_SIMP(sub(add(mul(x, I(3)), y), add(x, y)), mul(x, I(2)));
    EXPECT_SIMP(mul(add(x, I(1)), I(3)), add(mul(x, I(3)), I(3)));
    // Wrapping types: ring identities still hold.
    Expr w = V("w", UInt(8));
    EXPECT_SIMP(sub(add(w, U(200, UInt(8))), U(200, UInt(8))), w);
}

TEST(Simplify, DivModOfLinearForms) {
    Expr x = V("x"), y = V("y");
    EXPECT_SIMP(dv(add(mul(x, I(8)), I(3)), I(8)), x);
    EXPECT_SIMP(dv(add(mul(x, I(8)), I(11)), I(8)), add(x, I(1)));
    EXPECT_SIMP(dv(sub(mul(x, I(8)), I(1)), I(8)), sub(x, I(1)));
    EXPECT_CONST(md(add(mul(x, I(8)), I(3)), I(8)), 3);
    EXPECT_CONST(md(sub(mul(x, I(8)), I(1)), I(8)), 7);
    EXPECT_SIMP(dv(add(mul(x, I(16)), y), I(8)), add(mul(x, I(2)), dv(y, I(8))));
    EXPECT_SIMP(md(add(mul(x, I(16)), y), I(8)), md(y, I(8)));
    EXPECT_SIMP(dv(dv(x, I(4)), I(2)), dv(x, I(8)));
    EXPECT_SIMP(md(md(x, I(16)), I(4)), md(x, I(4)));
    EXPECT_SIMP(dv(x, I(1)), x);
    EXPECT_SIMP(dv(x, I(-1)), sub(I(0), x));
    EXPECT_CONST(md(x, I(1)), 0);
    // Power-of-two mod is exact under wrapping, so it applies to uint8 too.
    Expr w = V("w", UInt(8));
    EXPECT_SIMP(md(add(mul(w, U(4, UInt(8))), U(5, UInt(8))), U(4, UInt(8))), U(1, UInt(8)));
    // a * (x % c) + a * c * (x / c) is a * x for every x (floor division and modulo): an index
    // split into digits and put back together (a thread's elements, rebased) folds away.
    EXPECT_SIMP(add(md(x, I(4)), mul(dv(x, I(4)), I(4))), x);
    EXPECT_CONST(sub(add(mul(md(x, I(4)), I(4)), mul(dv(x, I(4)), I(16))), mul(x, I(4))), 0);
    EXPECT_CONST(sub(add(add(mul(dv(x, I(3)), I(6)), y), mul(md(x, I(3)), I(2))), add(mul(x, I(2)), y)), 0);
    // Not when the coefficients do not match, nor for a divisor that is not a positive constant.
    Expr kept = simplify(add(md(x, I(4)), mul(dv(x, I(4)), I(8))));
    EXPECT_NE(str(kept).find("%"), std::string::npos) << str(kept);
    kept = simplify(add(md(x, y), mul(dv(x, y), y)));
    EXPECT_NE(str(kept).find("%"), std::string::npos) << str(kept);
}

// ---------------- min / max ----------------
TEST(Simplify, MinMax) {
    Expr x = V("x"), y = V("y");
    EXPECT_SIMP(mn(x, add(x, I(3))), x);
    EXPECT_SIMP(mx(x, add(x, I(3))), add(x, I(3)));
    EXPECT_SIMP(mn(x, x), x);
    EXPECT_CONST(mn(I(3), I(-2)), -2);
    EXPECT_SIMP(mn(mn(x, I(10)), I(5)), mn(x, I(5)));
    EXPECT_SIMP(mx(mx(x, I(10)), I(5)), mx(x, I(10)));
    EXPECT_SIMP(mn(I(5), x), mn(x, I(5)));
    Expr clamp = mx(mn(x, I(10)), I(0));
    EXPECT_SIMP(clamp, clamp);
    EXPECT_CONST(mn(mx(x, I(10)), I(5)), 5);
    EXPECT_SIMP(mn(x, mx(x, y)), x);
    // min(x*8 + 7, 99) - x*8 -> min(7, 99 - x*8) (the subtraction cancels inside the min)
    Expr e = sub(mn(add(mul(x, I(8)), I(7)), I(99)), mul(x, I(8)));
    Expr s = simplify(e);
    EXPECT_EQ(str(s), str(mn(sub(I(99), mul(x, I(8))), I(7)))) << str(s);
}

// ---------------- comparisons and booleans ----------------
TEST(Simplify, ComparisonsAndLogic) {
    Expr x = V("x"), y = V("y");
    EXPECT_SIMP(lt(x, add(x, I(1))), B(true));
    EXPECT_SIMP(le(add(x, I(2)), add(x, I(1))), B(false));
    EXPECT_SIMP(eq(add(x, y), add(y, x)), B(true));
    EXPECT_SIMP(gt(add(x, I(1)), y), lt(y, add(x, I(1))));
    EXPECT_SIMP(lt(add(x, I(1)), add(y, I(3))), lt(x, add(y, I(2))));
    EXPECT_SIMP(Not::make(lt(x, y)), le(y, x));
    EXPECT_SIMP(Not::make(Not::make(lt(x, y))), lt(x, y));
    Expr c = lt(x, y);
    EXPECT_SIMP(And::make(c, B(true)), c);
    EXPECT_SIMP(And::make(B(false), c), B(false));
    EXPECT_SIMP(Or::make(c, B(true)), B(true));
    EXPECT_SIMP(Or::make(B(false), c), c);
    EXPECT_SIMP(And::make(c, Not::make(c)), B(false));
    EXPECT_SIMP(sel(B(true), x, y), x);
    EXPECT_SIMP(sel(B(false), x, y), y);
    EXPECT_SIMP(sel(c, x, x), x);
    EXPECT_SIMP(sel(c, B(true), B(false)), c);
    // constant bounds of min/max/select structure
    EXPECT_SIMP(lt(mn(x, I(10)), I(11)), B(true));
    EXPECT_SIMP(le(add(mx(x, I(3)), I(1)), I(3)), B(false));
    EXPECT_SIMP(lt(sub(mn(add(x, I(5)), y), x), I(6)), B(true));
    // uint8 comparisons are not moved around (wrapping)
    Expr w = V("w", UInt(8));
    Expr cw = lt(add(w, U(1, UInt(8))), w);
    EXPECT_SIMP(cw, cw);
}

TEST(Simplify, Lets) {
    Expr x = V("x"), y = V("y"), t = V("t");
    EXPECT_SIMP(Let::make("t", I(3), add(t, t)), I(6));
    EXPECT_SIMP(Let::make("t", y, add(t, I(1))), add(y, I(1)));
    Expr v = mul(x, y);
    EXPECT_SIMP(Let::make("t", v, add(t, I(1))), add(v, I(1)));  // used once
    Expr multi = Let::make("t", v, mul(t, t));
    EXPECT_SIMP(multi, multi);
    EXPECT_SIMP(Let::make("t", v, x), x);
}

// A long chain of Lets (bound shared values, as bind_shared_subexpressions makes) is counted and
// cleaned in one walk each: the same result as Let by Let. Lets used several times stay, one used
// once or by a constant goes into its use, unused ones go (also one used only by an unused one,
// and one whose only use the simplifier removes), and the value is unchanged.
TEST(Simplify, LongLetChains) {
    Expr x = V("x"), y = V("y");
    for (int n : {5, 30}) {  // below and above the length where the chain is counted in one walk
        SCOPED_TRACE(n);
        std::vector<std::pair<std::string, Expr>> lets;
        Expr prev = mul(x, y);
        Expr dead_chain;
        for (int i = 0; i < n; i++) {
            std::string s = "s" + std::to_string(i);
            lets.push_back({s, prev});
            Expr sv = V(s);
            lets.push_back({"dead" + std::to_string(i), mul(sv, I(3))});  // unused
            if (i == n / 2) {
                lets.push_back({"e", mul(mul(x, x), y)});       // used only by the unused d2
                lets.push_back({"d2", mul(V("e"), V("e"))});
                lets.push_back({"z", add(mul(x, y), I(1))});    // its use simplifies away
                lets.push_back({"u", sub(x, y)});               // used once
                lets.push_back({"c", I(7)});                    // a constant
            }
            prev = add(mul(sv, sv), x);
        }
        Expr z0 = mul(V("z"), I(0));
        Expr body = add(add(prev, prev), add(add(z0, z0), add(V("u"), V("c"))));
        Expr e = body;
        for (auto it = lets.rbegin(); it != lets.rend(); ++it) e = Let::make(it->first, it->second, e);
        Expr r = simplify(e);
        std::vector<std::string> kept;
        Expr inner = r;
        while (auto l = inner.as<Let>()) {
            kept.push_back(l->name);
            inner = l->body;
        }
        ASSERT_EQ(kept.size(), (size_t)n) << str(r);
        for (int i = 0; i < n; i++) EXPECT_EQ(kept[i], "s" + std::to_string(i));
        for (int64_t xv : {3, -7, 100})
            for (int64_t yv : {2, 5}) {
                std::map<std::string, int64_t> vars{{"x", xv}, {"y", yv}};
                EXPECT_EQ(evaluate_int(r, vars), evaluate_int(e, vars)) << xv << "," << yv;
            }
    }
}

TEST(Simplify, Vectors) {
    Expr x = V("x"), y = V("y");
    Expr r = Ramp::make(x, I(1), 4);
    EXPECT_SIMP(add(Broadcast::make(x, 4), Broadcast::make(y, 4)), Broadcast::make(add(x, y), 4));
    EXPECT_SIMP(add(r, Broadcast::make(I(2), 4)), Ramp::make(add(x, I(2)), I(1), 4));
    EXPECT_SIMP(mul(r, Broadcast::make(I(3), 4)), Ramp::make(mul(x, I(3)), I(3), 4));
    EXPECT_SIMP(sub(r, r), Broadcast::make(I(0), 4));
    EXPECT_SIMP(Ramp::make(x, I(0), 4), Broadcast::make(x, 4));
    // (x*8 + ramp(0,1,8)) / 8 -> broadcast(x)
    Expr r8 = Ramp::make(mul(x, I(8)), I(1), 8);
    EXPECT_SIMP(dv(r8, Broadcast::make(I(8), 8)), Broadcast::make(x, 8));
    EXPECT_SIMP(md(r8, Broadcast::make(I(8), 8)), Ramp::make(I(0), I(1), 8));
}

// A branch hint about a constant is the constant (an unrolled copy past a loop's end goes);
// storage that nothing reads any more goes with its stores; storage still read stays.
TEST(Simplify, ConstantHintsAndUnreadStorage) {
    Expr likely_false = Call::make_intrinsic(Bool(), "likely", {lt(I(8), I(8))});
    EXPECT_SIMP(likely_false, B(false));
    Expr x = V("x");
    Stmt write_t = Store::make("t", x, I(0));
    Stmt copy_out = Store::make("out", Load::make(Int(32), "t", I(0)), I(0));
    auto text = [](const Stmt &s) {
        std::ostringstream o;
        o << s;
        return o.str();
    };
    Stmt dead = Allocate::make("t", Int(32), I(1), MemoryType::Stack,
                               Block::make(write_t, IfThenElse::make(likely_false, copy_out, Stmt())));
    std::string got = text(simplify(dead));
    EXPECT_EQ(got.find("t["), std::string::npos) << got;
    EXPECT_EQ(got.find("allocate"), std::string::npos) << got;
    Expr likely_x = Call::make_intrinsic(Bool(), "likely", {lt(x, I(8))});
    Stmt live = Allocate::make("t", Int(32), I(1), MemoryType::Stack,
                               Block::make(write_t, IfThenElse::make(likely_x, copy_out, Stmt())));
    got = text(simplify(live));
    EXPECT_NE(got.find("t[0] = x"), std::string::npos) << got;
    EXPECT_NE(got.find("out[0] = t[0]"), std::string::npos) << got;
    EXPECT_NE(got.find("likely"), std::string::npos) << got;  // a hint about a variable stays
}

TEST(Simplify, WithScope) {
    Expr x = V("x"), y = V("y");
    Scope s = range("x", 0, 9);
    EXPECT_TRUE(can_prove(lt(x, I(10)), s));
    EXPECT_TRUE(can_prove(le(I(0), x), s));
    EXPECT_FALSE(can_prove(lt(x, I(9)), s));
    EXPECT_TRUE(equal(simplify(mn(x, I(20)), s), x));
    EXPECT_TRUE(equal(simplify(mx(x, I(-1)), s), x));
    EXPECT_TRUE(is_const_zero(simplify(dv(x, I(10)), s)));
    EXPECT_TRUE(equal(simplify(md(x, I(10)), s), x));
    EXPECT_TRUE(equal(simplify(dv(add(mul(y, I(16)), x), I(16)), s), y));
    Scope s2 = s;
    s2["y"] = Interval(I(0), I(5));
    EXPECT_TRUE(equal(simplify(mn(x, add(x, y)), s2), x));
}

// ---------------- statements ----------------
TEST(Simplify, Statements) {
    Expr x = V("x");
    Stmt store = Store::make("buf", x, x);
    Stmt loop0 = For::make("x", I(0), I(0), ForType::Serial, store);
    EXPECT_TRUE(is_const(simplify(loop0).as<Evaluate>() ? simplify(loop0).as<Evaluate>()->value : Expr()));
    // extent 1: the loop disappears and x is replaced by its min.
    Stmt loop1 = For::make("x", I(5), I(1), ForType::Serial, store);
    Stmt s1 = simplify(loop1);
    ASSERT_TRUE(s1.as<Store>() != nullptr);
    EXPECT_TRUE(is_const(s1.as<Store>()->value));
    // constant-true condition
    Stmt ite = IfThenElse::make(lt(I(1), I(2)), store, Stmt());
    EXPECT_TRUE(simplify(ite).as<Store>() != nullptr);
    // the loop variable's range is known in the body
    Stmt body = IfThenElse::make(lt(x, I(10)), store, Stmt());
    Stmt loop = For::make("x", I(0), I(10), ForType::Serial, body);
    Stmt sl = simplify(loop);
    ASSERT_TRUE(sl.as<For>() != nullptr);
    EXPECT_TRUE(sl.as<For>()->body.as<Store>() != nullptr);
    // symbolic extent: x < n holds in for (x = 0; x < n; x++)
    Expr n = V("n");
    Stmt body_n = IfThenElse::make(lt(x, n), store, Stmt());
    Stmt loop_n = LetStmt::make("n", Load::make(Int(32), "sz", I(0)),
                                For::make("x", I(0), n, ForType::Serial, body_n));
    Stmt sn = simplify(loop_n);
    ASSERT_TRUE(sn.as<LetStmt>() != nullptr);
    ASSERT_TRUE(sn.as<LetStmt>()->body.as<For>() != nullptr);
    EXPECT_TRUE(sn.as<LetStmt>()->body.as<For>()->body.as<Store>() != nullptr);
    // extent min(n*2, 64): x < n*2 + 1 holds in the body
    Stmt body_m = IfThenElse::make(lt(x, add(mul(n, I(2)), I(1))), store, Stmt());
    Stmt loop_m = For::make("x", I(0), mn(mul(n, I(2)), I(64)), ForType::Serial, body_m);
    Stmt sm = simplify(loop_m);
    ASSERT_TRUE(sm.as<For>() != nullptr);
    EXPECT_TRUE(sm.as<For>()->body.as<Store>() != nullptr);
    // asserts that are true vanish; blocks of no-ops collapse
    Stmt a = AssertStmt::make(le(I(0), I(1)), "never", {});
    Stmt blk = Block::make(a, store);
    EXPECT_TRUE(simplify(blk).as<Store>() != nullptr);
    // constant lets are substituted
    Stmt let = LetStmt::make("t", I(4), Store::make("buf", V("t"), V("t")));
    Stmt sl2 = simplify(let);
    ASSERT_TRUE(sl2.as<Store>() != nullptr);
    EXPECT_TRUE(is_const(sl2.as<Store>()->index));
    // lets bound to a cheap affine function of one variable (a tile's minimum) are substituted,
    // so that a consumer's index relative to the tile cancels to a constant
    Expr co = V("co"), yn = V("yn");
    Stmt tile = LetStmt::make("t.min.0", mul(co, I(32)),
                              LetStmt::make("t.min.1", md(yn, I(56)),
                                            Store::make("buf", V("t.min.0"),
                                                        add(sub(mul(co, I(32)), V("t.min.0")),
                                                            mul(sub(md(yn, I(56)), V("t.min.1")), I(8))))));
    Stmt st = simplify(tile);
    ASSERT_TRUE(st.as<Store>() != nullptr) << st;
    EXPECT_TRUE(is_const(st.as<Store>()->index)) << st;
    // ... but not lets of two variables or of loads, which stay lets
    Stmt two = LetStmt::make("u", add(co, yn), Store::make("buf", V("u"), add(V("u"), V("u"))));
    EXPECT_TRUE(simplify(two).as<LetStmt>() != nullptr);
    Stmt ld = LetStmt::make("w", mul(Load::make(Int(32), "sz", I(0)), I(2)), Store::make("buf", V("w"), add(V("w"), V("w"))));
    EXPECT_TRUE(simplify(ld).as<LetStmt>() != nullptr);
}

// A let whose value is cheap is dropped and its uses see the value. Where a binding that stays
// (a loop, a let kept) rebinds a name the value uses, the value would be captured there: the
// let is kept around that binding instead. Where it rebinds the let's own name, that binding
// is what its body sees. And a chain of many such lets around many statements is simplified in
// time linear in its size.
TEST(Simplify, DroppedLetsAreNeverCapturedByARebinding) {
    auto text = [](const Stmt &s) {
        std::ostringstream o;
        o << s;
        return o.str();
    };
    Expr b = V("b"), a = V("a");
    Stmt store = Store::make("buf", a, b);
    // A loop rebinding b: buf[b] = (outer b) + 1 inside it.
    Stmt loop = simplify(LetStmt::make("a", add(b, I(1)), For::make("b", I(0), I(4), ForType::Serial, store)));
    const LetStmt *l = loop.as<LetStmt>();
    ASSERT_TRUE(l && l->name == "a") << loop;
    EXPECT_EQ(str(l->value), "(b + 1)");
    const For *f = l->body.as<For>();
    ASSERT_TRUE(f && f->body.as<Store>()) << loop;
    EXPECT_EQ(str(f->body.as<Store>()->value), "a") << loop;
    // A let that stays rebinding b.
    Expr sz = Load::make(Int(32), "sz", I(0));
    Stmt kept = simplify(LetStmt::make("a", mul(b, I(2)), LetStmt::make("b", sz, store)));
    ASSERT_TRUE(kept.as<LetStmt>() && kept.as<LetStmt>()->name == "a") << kept;
    EXPECT_NE(text(kept).find("buf[b] = a"), std::string::npos) << kept;
    // Not captured where the rebinding is a let that is dropped too (no binding stays).
    Stmt dropped = simplify(LetStmt::make("a", mul(b, I(2)), LetStmt::make("b", I(3), store)));
    EXPECT_EQ(text(dropped), text(Store::make("buf", mul(b, I(2)), I(3)))) << dropped;
    // An expression's let rebinding b, used twice (so it stays).
    Expr inner = Let::make("b", sz, add(mul(b, a), b));
    Stmt in_expr = simplify(LetStmt::make("a", add(b, I(1)), Store::make("buf", inner, I(0))));
    EXPECT_NE(text(in_expr).find("let a = (b + 1)"), std::string::npos) << in_expr;
    // The let's own name rebound by a loop: the loop's variable inside.
    Stmt own = simplify(LetStmt::make("t", I(4), For::make("t", I(0), V("n"), ForType::Serial, Store::make("buf", V("t"), V("t")))));
    ASSERT_TRUE(own.as<For>()) << own;
    EXPECT_EQ(text(own.as<For>()->body), text(Store::make("buf", V("t"), V("t")))) << own;
    // Outside the loop the value again: t, then the loop, then t.
    Stmt around = simplify(LetStmt::make(
        "t", I(4),
        Block::make({Store::make("buf", V("t"), I(0)), For::make("t", I(0), V("n"), ForType::Serial, Store::make("buf", V("t"), V("t"))),
                     Store::make("buf", V("t"), I(1))})));
    EXPECT_EQ(text(around), text(Block::make({Store::make("buf", I(4), I(0)),
                                              For::make("t", I(0), V("n"), ForType::Serial, Store::make("buf", V("t"), V("t"))),
                                              Store::make("buf", I(4), I(1))})))
        << around;
    // Many stages, each binding its cheap lets around all the stages after it (a pipeline's
    // storage): every let is dropped, every use sees its value.
    const int n = 3000;
    Stmt body = Evaluate::make(I(0));
    for (int i = n - 1; i >= 0; i--) {
        std::string m = "s" + std::to_string(i) + ".min";
        Stmt st = Store::make("buf", V("x"), sub(V("x"), V(m)));
        body = LetStmt::make(m, add(mul(V("y"), I(16)), I(i)), Block::make(st, body));
    }
    Stmt chain = simplify(body);
    std::string t = text(chain);
    EXPECT_EQ(t.find(".min"), std::string::npos);
    EXPECT_NE(t.find("buf[((x - (y * 16)) - 2999)] = x"), std::string::npos) << t.substr(0, 400);
}

// A statement's summary of the names in it (what walks looking for one Func or buffer skip
// by): every name anywhere in it is reported as possibly there, at any depth, and names absent
// from a small statement are ruled out; a copy of a node has its own summary.
TEST(Simplify, StatementsKnowTheNamesInThem) {
    Expr x = V("x");
    Expr call = Call::make(Float(32), "producer", {x}, Call::Func);
    Stmt provide = Provide::make("consumer", Let::make("t", call, V("t", Float(32))), {x});
    Stmt loop = For::make("x", I(0), Load::make(Int(32), "extents", I(0)), ForType::Serial, provide);
    Stmt s = Block::make(IfThenElse::make(lt(V("n"), I(3)), Evaluate::make(I(0))), loop);
    for (const char *n : {"producer", "consumer", "extents", "n", "x", "t"}) EXPECT_TRUE(may_name(s, n)) << n;
    for (const char *n : {"producer", "consumer", "x"}) EXPECT_TRUE(may_name(provide, n)) << n;
    EXPECT_FALSE(may_name(provide, "extents"));
    EXPECT_FALSE(may_name(provide, "n"));
    EXPECT_FALSE(may_name(Evaluate::make(I(0)), "producer"));
    // Asked again (the summary kept): the same.
    EXPECT_TRUE(may_name(s, "producer"));
    EXPECT_FALSE(may_name(provide, "extents"));
    // A copy of a node, then changed before it is shared (as the IR's builders do): its own.
    auto copy = std::make_shared<Provide>(*provide.as<Provide>());
    copy->name = "extents";
    EXPECT_TRUE(may_name(Stmt(copy), "extents"));
}

// ---------------- bounds ----------------
TEST(Bounds, Linear) {
    Expr x = V("x");
    expect_bounds(bounds_of_expr_in_scope(add(mul(x, I(2)), I(1)), range("x", 0, 9)), 1, 19);
    expect_bounds(bounds_of_expr_in_scope(sub(I(10), x), range("x", 0, 9)), 1, 10);
    expect_bounds(bounds_of_expr_in_scope(mul(x, I(-3)), range("x", -1, 2)), -6, 3);
}

TEST(Bounds, DivMod) {
    Expr x = V("x"), y = V("y");
    expect_bounds(bounds_of_expr_in_scope(dv(x, I(4)), range("x", -5, 7)), -2, 1);
    expect_bounds(bounds_of_expr_in_scope(md(x, I(4)), range("x", -5, 7)), 0, 3);
    expect_bounds(bounds_of_expr_in_scope(md(x, I(8)), range("x", 9, 12)), 1, 4);
    expect_bounds(bounds_of_expr_in_scope(dv(x, I(-2)), range("x", 0, 9)), -5, 0);
    Scope s = range("x", 0, 100);
    s["y"] = Interval(I(1), I(10));
    expect_bounds(bounds_of_expr_in_scope(dv(x, y), s), 0, 100);
    expect_bounds(bounds_of_expr_in_scope(md(x, y), s), 0, 9);
}

TEST(Bounds, MinMaxSelectMul) {
    Expr x = V("x"), y = V("y");
    Scope unb;
    unb["x"] = Interval();
    expect_bounds(bounds_of_expr_in_scope(mx(mn(x, I(10)), I(0)), unb), 0, 10);
    Scope s = range("x", -3, 4);
    s["y"] = Interval(I(-2), I(5));
    expect_bounds(bounds_of_expr_in_scope(mul(x, y), s), -15, 20);
    expect_bounds(bounds_of_expr_in_scope(sel(lt(x, y), x, y), s), -3, 5);
    Interval b = bounds_of_expr_in_scope(lt(x, I(10)), s);
    EXPECT_TRUE(is_true(b.min) && is_true(b.max));
}

TEST(Bounds, CastsLoadsAndTypes) {
    Expr x = V("x");
    Scope unb;
    unb["x"] = Interval();
    expect_bounds(bounds_of_expr_in_scope(cst(Int(32), cst(UInt(8), x)), unb), 0, 255);
    Interval b = bounds_of_expr_in_scope(cst(UInt(8), x), unb);
    uint64_t lo = b.min.as<UIntImm>() ? b.min.as<UIntImm>()->value : 99;
    uint64_t hi = b.max.as<UIntImm>() ? b.max.as<UIntImm>()->value : 99;
    EXPECT_EQ(lo, 0u);
    EXPECT_EQ(hi, 255u);
    expect_bounds(bounds_of_expr_in_scope(cst(Int(16), x), range("x", -5, 300)), -5, 300);
    expect_bounds(bounds_of_expr_in_scope(cst(Int(8), x), range("x", -5, 300)), -128, 127);
    Expr ld = Load::make(Int(16), "buf", I(0));
    expect_bounds(bounds_of_expr_in_scope(cst(Int(32), ld), Scope()), -32768, 32767);
    Interval lb = bounds_of_expr_in_scope(Load::make(Int(32), "buf", x), Scope());
    EXPECT_FALSE(lb.min.defined());
    EXPECT_FALSE(lb.max.defined());
    // wrapping uint8 arithmetic widens to the full range
    Expr w = V("w", UInt(8));
    Scope sw;
    sw["w"] = Interval(U(250, UInt(8)), U(255, UInt(8)));
    Interval bw = bounds_of_expr_in_scope(add(w, U(10, UInt(8))), sw);
    EXPECT_EQ(bw.min.as<UIntImm>()->value, 0u);
    EXPECT_EQ(bw.max.as<UIntImm>()->value, 255u);
}

TEST(Bounds, SymbolicAndVectors) {
    Expr x = V("x"), n = V("n");
    Scope s;
    s["x"] = Interval(I(0), sub(n, I(1)));
    Interval b = bounds_of_expr_in_scope(add(x, I(1)), s);
    EXPECT_TRUE(equal(b.min, I(1)));
    EXPECT_TRUE(equal(b.max, n)) << str(b.max);
    EXPECT_TRUE(can_prove(lt(x, n), s));
    expect_bounds(bounds_of_expr_in_scope(Ramp::make(x, I(2), 4), range("x", 0, 3)), 0, 9);
    expect_bounds(bounds_of_expr_in_scope(Broadcast::make(x, 4), range("x", 0, 3)), 0, 3);
    Expr y = V("y");
    Interval p = bounds_of_expr_in_scope(add(y, I(1)), s);
    EXPECT_TRUE(p.is_single_point());
}

TEST(Bounds, UnionIntersection) {
    Interval a(I(0), I(10)), b(I(5), I(20));
    expect_bounds(interval_union(a, b), 0, 20);
    expect_bounds(interval_intersection(a, b), 5, 10);
    Interval u = interval_union(a, Interval(I(3), Expr()));
    EXPECT_FALSE(u.max.defined());
    expect_bounds(interval_intersection(a, Interval(I(3), Expr())), 3, 10);
}

}  // namespace

namespace {
using namespace weft;
using namespace weft::internal;

// Floor division by a positive constant is monotone, and (q + m * c) / c = q / c + m: the
// simplifier proves comparisons of quotients (a consumer reading rows y / 2 and (y + 1) / 2:
// sliding windows and the bounds of pyramids need it), and nothing it proves is false.
TEST(Simplify, MonotoneFloorDivision) {
    Expr v = Variable::make(Int(32), "v");
    auto I = [](int64_t x) { return IntImm::make(Int(32), x); };
    EXPECT_TRUE(is_true(simplify(LE::make(Div::make(v - 1, I(2)), Div::make(v, I(2))))));
    EXPECT_TRUE(is_true(simplify(LE::make(Div::make(v, I(2)), Div::make(v + 1, I(2))))));
    EXPECT_TRUE(is_false(simplify(LT::make(Div::make(v + 2, I(2)), Div::make(v, I(2))))));
    EXPECT_TRUE(equal(simplify(Min::make(Div::make(v, I(2)), Div::make(v + 1, I(2)))), simplify(Div::make(v, I(2)))));
    EXPECT_TRUE(equal(simplify(Max::make(Div::make(v, I(2)), Div::make(v + 1, I(2)))), simplify(Div::make(v + 1, I(2)))));
    int decided = 0;
    for (int c : {2, 3, 4})
        for (int a = -5; a <= 5; a++)
            for (int b = -5; b <= 5; b++)
                for (int k = -2; k <= 2; k++)
                    for (bool lt : {false, true}) {
                        Expr x = Div::make(v + I(a), I(c)), y = Div::make(v + I(b), I(c)) + I(k);
                        Expr e = lt ? LT::make(x, y) : LE::make(x, y);
                        Expr s = simplify(e);
                        if (!is_true(s) && !is_false(s)) continue;
                        decided++;
                        for (int vv = -40; vv <= 40; vv++)
                            ASSERT_EQ(evaluate_int(e, {{"v", vv}}) != 0, is_true(s))
                                << to_string(e) << " simplified to " << to_string(s) << " at v = " << vv;
                    }
    EXPECT_GT(decided, 400);  // most are decided
}
}  // namespace

namespace {
using namespace weft;
using namespace weft::internal;

// The extent of a region clipped at both ends (min(t + c, m) - min(t, m) + 1, a tile at an
// image's edge inside a window whose position is known only when run) has the constant bound
// c + 1: storage computed at such a tile is a constant size (on the stack), not a malloc per tile.
// Each bound found holds at every point tried, and is reached.
TEST(Bounds, RegionsClippedAtBothEndsHaveAConstantExtentBound) {
    Expr t = Variable::make(Int(32), "t"), m = Variable::make(Int(32), "m"), s = Variable::make(Int(32), "s");
    auto I = [](int64_t x) { return IntImm::make(Int(32), x); };
    struct Case {
        Expr e;
        int64_t want;
    };
    std::vector<Case> cases;
    for (int c : {0, 1, 3, 7}) {
        Expr hi = t + s * 2 + I(c), lo = t + s * 2;
        cases.push_back({Max::make(Min::make(hi, m) - Min::make(lo, m) + I(1), I(0)), c + 1});
        cases.push_back({Max::make(Min::make(m, hi) - Min::make(lo, m) + I(1), I(0)), c + 1});  // operands swapped
        cases.push_back({Max::make(hi, m) - Max::make(lo, m) + I(1), c + 1});
        // Reversed: the lower end above the upper one gives an empty (0) or negative extent.
        cases.push_back({Max::make(Min::make(lo, m) - Min::make(hi, m) + I(1), I(0)), 1});
        // Rows read by a y / k and (y + c) / k upsampling consumer: (c + k - 1) / k + 1.
        for (int k : {2, 3, 4})
            cases.push_back({((lo + I(c)) / I(k) + m) - (lo / I(k) + m) + I(1), (c + k - 1) / k + 1});
    }
    Scope none;
    for (auto &k : cases) {
        int64_t b = -1;
        ASSERT_TRUE(constant_upper_bound_in_scope(k.e, none, &b)) << to_string(k.e) << " simplified " << to_string(simplify(k.e));
        EXPECT_EQ(b, k.want) << to_string(k.e);
        int64_t seen = INT64_MIN;
        for (int tv = -6; tv <= 6; tv++)
            for (int mv = -6; mv <= 6; mv++)
                for (int sv = -2; sv <= 2; sv++) {
                    int64_t v = evaluate_int(k.e, {{"t", tv}, {"m", mv}, {"s", sv}});
                    ASSERT_LE(v, b) << to_string(k.e) << " at t = " << tv << ", m = " << mv << ", s = " << sv;
                    seen = std::max(seen, v);
                }
        EXPECT_EQ(seen, b) << to_string(k.e);
    }
    // Different clipping values: no such bound.
    int64_t b;
    EXPECT_FALSE(constant_upper_bound_in_scope(Min::make(t + I(1), m) - Min::make(t, s), none, &b));
}


// A window of rows read through divisions of a loop variable (a half-height consumer reading rows
// 2 * (y / 2) + k of its producer, a quarter-height one y / 4) has a width independent of the
// loop, but interval arithmetic takes y / 2 and (y + 1) / 2 apart and bounds it by the loop's
// extent. By residue classes of y (y = D * q + r) the bound is the exact one, for loops of more
// steps than are enumerated, with another variable (the strip's start) cancelling.
TEST(Bounds, WindowsThroughDivisionsOfALongLoopHaveTheirExactWidth) {
    Expr y = Variable::make(Int(32), "y"), o = Variable::make(Int(32), "o");
    auto I = [](int64_t x) { return IntImm::make(Int(32), x); };
    Expr base = o * I(128);
    std::vector<Expr> cases = {
        // rows (2 * ((y + 1) / 2) + 3) - 2 * (y / 2 + 1) + 1: what camera_pipe's deinterleaving
        // reads of its denoised rows, per row of a 128-row strip.
        (base + ((y + I(1)) / I(2)) * I(2) + I(3)) - (base + (y / I(2) + I(1)) * I(2)) + I(1),
        // min of two windows' starts.
        (base + ((y + I(1)) / I(2)) * I(2) + I(3)) -
            Min::make(base + (y / I(2) + I(1)) * I(2), base + ((y + I(1)) / I(2) - I(1)) * I(2) + I(1)) + I(1),
        // quarter height, and a remainder.
        ((y + I(3)) / I(4) - y / I(4)) * I(5) + y % I(4),
        // no division: the interval bound, unchanged.
        y - I(7),
    };
    for (int extent : {65, 128, 1000}) {
        Scope scope;
        scope["y"] = Interval(I(0), I(extent - 1));
        for (auto &e : cases) {
            int64_t b = -1, seen = INT64_MIN;
            ASSERT_TRUE(constant_upper_bound_in_scope(e, scope, &b)) << to_string(e);
            for (int yv = 0; yv < extent; yv++)
                for (int ov : {-3, 0, 5}) {
                    int64_t v = evaluate_int(e, {{"y", yv}, {"o", ov}});
                    ASSERT_LE(v, b) << to_string(e) << " at y = " << yv;
                    seen = std::max(seen, v);
                }
            EXPECT_EQ(seen, b) << to_string(e) << " over " << extent << " steps";
        }
    }
    // Without the loop's range, no bound is made up.
    int64_t b;
    EXPECT_FALSE(constant_upper_bound_in_scope(y / I(2) + y % I(4), Scope(), &b));
    // At int32's ends, exact and sound.
    for (auto [lo, e] : {std::make_pair(int64_t(INT32_MAX) - 999, y / I(2) - (y - I(1)) / I(2)),
                         std::make_pair(int64_t(INT32_MIN), (y + I(1)) / I(2) - y / I(2))}) {
        Scope edge;
        edge["y"] = Interval(I(lo), I(lo + 999));
        ASSERT_TRUE(constant_upper_bound_in_scope(e, edge, &b)) << to_string(e);
        EXPECT_EQ(b, 1) << to_string(e);
    }
    // A 64-bit variable is not replaced by a 32-bit one: any bound found still holds.
    Expr w = Variable::make(Int(64), "w");
    Scope wide;
    wide["w"] = Interval(make_const(Int(64), int64_t(0)), make_const(Int(64), int64_t(999)));
    Expr we = (w + make_const(Int(64), int64_t(1))) / make_const(Int(64), int64_t(2)) - w / make_const(Int(64), int64_t(2));
    if (constant_upper_bound_in_scope(we, wide, &b)) EXPECT_GE(b, 1);
}


// simplify_binary(op, a, b), the interval arithmetic's step: for operands simplify() returned,
// the same Expr as simplify(op(a, b)) (only the new node's rules run), and the same values
// whatever the operands are (int32's ends, division by zero and negative divisors included).
TEST(Simplify, ABinaryNodeOfSimplifiedOperandsIsTheWholeSimplified) {
    Expr x = V("x"), y = V("y");
    std::vector<Expr> leaves = {
        I(0), I(1), I(-7), I(16), I(INT32_MAX), I(INT32_MIN), x, y,
        add(mul(x, I(16)), I(3)), sub(add(x, I(8)), sub(x, I(1))), dv(add(dv(add(y, I(1)), I(2)), I(1)), I(2)),
        mn(add(x, I(3)), x), mx(sub(mn(add(mul(x, I(16)), I(31)), I(118)), mul(x, I(16))), I(16)),
        md(add(y, I(5)), I(4)), sel(lt(x, y), add(x, I(1)), y), mul(sub(x, y), I(-3)),
    };
    const IRNodeType ops[] = {IRNodeType::Add, IRNodeType::Sub, IRNodeType::Mul,
                              IRNodeType::Div, IRNodeType::Min, IRNodeType::Max};
    int compared = 0;
    for (const Expr &ra : leaves)
        for (const Expr &rb : leaves) {
            Expr a = simplify(ra), b = simplify(rb);
            for (IRNodeType op : ops) {
                Expr got = simplify_binary(op, a, b);
                Expr whole = simplify(rebuild_binary(op, a, b));
                EXPECT_TRUE(equal(got, whole)) << str(rebuild_binary(op, a, b)) << ": " << str(got) << " against "
                                               << str(whole);
                // Unsimplified operands: still the value of op(a, b), wherever it is defined
                // without overflow.
                Expr raw = rebuild_binary(op, ra, rb), fast = simplify_binary(op, ra, rb);
                for (int64_t xv : {-9, -1, 0, 2, 37})
                    for (int64_t yv : {-4, 0, 1, 15}) {
                        std::map<std::string, int64_t> env{{"x", xv}, {"y", yv}};
                        int64_t want = evaluate_int(raw, env), have = evaluate_int(fast, env);
                        // (int32 results past the type's range wrap differently in the forms.)
                        if (want >= INT32_MIN && want <= INT32_MAX && have >= INT32_MIN && have <= INT32_MAX &&
                            std::llabs(xv) < 100 && !(is_const_int(ra) || is_const_int(rb)))
                            EXPECT_EQ(want, have) << str(raw) << " at x = " << xv << ", y = " << yv << ": " << str(fast);
                    }
                compared++;
            }
        }
    EXPECT_EQ(compared, (int)(leaves.size() * leaves.size() * 6));
    // Floats: folded where constant, never reassociated.
    Expr f = V("f", Float(32));
    EXPECT_TRUE(equal(simplify_binary(IRNodeType::Add, F(1.5), F(2)), F(3.5)));
    EXPECT_TRUE(equal(simplify_binary(IRNodeType::Add, add(f, F(1)), F(2)), simplify(add(add(f, F(1)), F(2)))));
}

// A scope whose ends are not simplified (a pyramid's nested divisions, substituted into a
// loop's bounds): bounds inference simplifies each end once before its arithmetic, so nested
// divisions still fold: ((y + 1) / 2 + 1) / 2 is (y + 3) / 4.
TEST(Bounds, AScopesUnsimplifiedEndsAreSimplifiedBeforeTheArithmetic) {
    Expr x = V("x"), y = V("y");
    Scope s;
    s["x"] = Interval(I(0), dv(add(dv(add(y, I(1)), I(2)), I(1)), I(2)));
    Interval b = bounds_of_expr_in_scope(add(x, I(5)), s);
    EXPECT_TRUE(equal(b.max, simplify(add(dv(add(y, I(3)), I(4)), I(5))))) << str(b.max);
    EXPECT_TRUE(is_const_int(b.min)) << str(b.min);
    // Used twice, the same bound (simplified once per query).
    Interval c = bounds_of_expr_in_scope(add(x, x), s);
    EXPECT_TRUE(equal(c.max, simplify(mul(dv(add(y, I(3)), I(4)), I(2))))) << str(c.max);
    // Remembered across queries (as in a lowering), and nested: the same bounds.
    {
        RememberScopeEnds outer;
        for (int k = 0; k < 3; k++) {
            Interval r = bounds_of_expr_in_scope(add(x, I(5)), s);
            EXPECT_TRUE(equal(r.max, b.max)) << str(r.max);
            RememberScopeEnds inner;
            Interval q = bounds_of_expr_in_scope(add(x, x), s);
            EXPECT_TRUE(equal(q.max, c.max)) << str(q.max);
        }
        // A scope rebuilt with other ends (other nodes) is not answered from memory.
        Scope t;
        t["x"] = Interval(I(0), dv(add(dv(add(y, I(3)), I(2)), I(1)), I(2)));
        EXPECT_TRUE(equal(bounds_of_expr_in_scope(add(x, I(5)), t).max, simplify(add(dv(add(y, I(5)), I(4)), I(5)))));
    }
    // Undefined ends stay undefined.
    Scope open;
    open["x"] = Interval(Expr(), add(y, I(0)));
    Interval o = bounds_of_expr_in_scope(add(x, I(1)), open);
    EXPECT_FALSE(o.min.defined());
    EXPECT_TRUE(equal(o.max, simplify(add(y, I(1))))) << str(o.max);
}

// align_loads: a vector load's alignment from what cancels once the lets are substituted (an
// index less its buffer's min), for loads under the same lets that differ by a constant (an
// unrolled loop's), and again under a let that changes the index (nothing remembered across).
TEST(Simplify, LoadsUnderTheSameLetsAreAlignedByTheirOffsets) {
    Expr p = V("p"), q = V("q"), i = V("i");
    auto load_at = [&](int64_t c) { return Load::make(Float(32), "buf", Ramp::make(add(sub(i, p), I(c)), I(1), 16)); };
    auto stores = [&](const std::string &out) {
        std::vector<Stmt> v;
        for (int64_t c : {0, 4, 8, 16, 3, 32, 2})
            v.push_back(Store::make(out, load_at(c), Ramp::make(I(c * 16), I(1), 16)));
        return Block::make(v);
    };
    // i = p + 16 q: i - p = 16 q, whatever p is.
    Stmt inner = LetStmt::make("i", add(add(p, mul(q, I(16))), I(2)), stores("o2"));
    Stmt body = LetStmt::make("i", add(p, mul(q, I(16))), Block::make(stores("o1"), inner));
    Stmt s = For::make("q", I(0), I(8), ForType::Serial, body);
    std::vector<std::pair<std::string, int>> seen;
    struct Loads : IRVisitor {
        std::vector<std::pair<std::string, int>> *out;
        std::string store;
        void visit(const Store *op) override {
            store = op->name;
            IRVisitor::visit(op);
        }
        void visit(const Load *op) override { out->push_back({store, op->alignment}); }
    } v;
    v.out = &seen;
    v.include(align_loads(s));
    std::vector<std::pair<std::string, int>> want = {{"o1", 16}, {"o1", 4}, {"o1", 8}, {"o1", 16}, {"o1", 0},
                                                     {"o1", 16}, {"o1", 2}, {"o2", 2}, {"o2", 2}, {"o2", 2},
                                                     {"o2", 2},  {"o2", 0}, {"o2", 2}, {"o2", 4}};
    EXPECT_EQ(seen, want);
}

}  // namespace

// Remainders modulo powers of two known through the mins, selects and lets that hide a linear
// form (ir/ModulusRemainder.h): a tiled loop's clamped start, `min(32 x - 1, 2529)`, is odd, so
// an interleaving's `x % 2` folds; a ramp from it becomes a ramp from its remainder. A name
// bound again inside (a loop, a Let) is not taken for the outer one.
TEST(Simplify, RemaindersModuloPowersOfTwoThroughMinsSelectsAndLets) {
    Expr x = V("x"), y = V("y"), z = V("z"), c = V("c", Bool());
    Expr start = mn(sub(mul(x, I(32)), I(1)), I(2529));
    EXPECT_EQ(str(simplify(md(start, I(2)))), "1");
    EXPECT_EQ(str(simplify(eq(md(add(start, I(3)), I(2)), I(0)))), str(B(true)));
    EXPECT_EQ(str(simplify(md(sel(c, add(mul(y, I(2)), I(1)), add(mul(z, I(4)), I(3))), I(2)))), "1");
    EXPECT_EQ(str(simplify(md(mx(mul(y, I(8)), add(mul(z, I(16)), I(4))), I(4)))), "0");
    // Not known: the clamp's two sides differ in parity; a modulus the values do not share.
    EXPECT_EQ(str(simplify(md(mn(sub(mul(x, I(32)), I(1)), I(2530)), I(2)))).find('%') != std::string::npos, true);
    EXPECT_EQ(str(simplify(md(start, I(64)))).find('%') != std::string::npos, true);
    // Lets: known through a LetStmt, not past a loop or a Let that binds its name again.
    Stmt use = Evaluate::make(md(V("t"), I(2)));
    auto evaluated = [](const Stmt &s) {
        std::ostringstream o;
        o << s;
        return o.str();
    };
    EXPECT_EQ(evaluated(simplify(LetStmt::make("t", start, Block::make(use, Evaluate::make(Load::make(Int(32), "b", V("t"))))))).find("t % 2"),
              std::string::npos);
    Stmt shadowed = LetStmt::make("t", start, For::make("t", I(0), V("n"), ForType::Serial, use));
    EXPECT_NE(evaluated(simplify(shadowed)).find("% 2"), std::string::npos);
    Stmt rebound = LetStmt::make("t", start,
                                 Block::make(Evaluate::make(Load::make(Int(32), "b", V("t"))),
                                             Evaluate::make(Let::make("t", Load::make(Int(32), "b", I(0)), md(V("t"), I(2))))));
    EXPECT_NE(evaluated(simplify(rebound)).find("% 2"), std::string::npos);
    // A vector from it: its lanes' remainders are constants.
    Expr lanes = md(Ramp::make(start, I(1), 8), Broadcast::make(I(2), 8));
    Expr r = simplify(lanes);
    EXPECT_EQ(str(r), "(ramp(1, 1, 8) % x8(2))");
    // The same values as before, wherever the variables are (int32 edges included: wrapping
    // keeps residues modulo powers of two).
    std::vector<Expr> checked = {md(start, I(2)), md(add(start, y), I(4)), md(sel(lt(y, z), add(mul(y, I(2)), I(1)), add(mul(z, I(4)), I(3))), I(2)),
                                 md(mx(mul(y, I(8)), add(mul(z, I(16)), I(4))), I(4)), md(sub(mul(mn(x, y), I(6)), z), I(2))};
    for (const Expr &e : checked) {
        Expr simple = simplify(e);
        for (int64_t vx : {-7, 0, 1, 80, 134217728, 2147483647})
            for (int64_t vy : {-3, 2, 5, -2147483647 - 1})
                for (int64_t vz : {0, 9, -12}) {
                    std::map<std::string, int64_t> vars{{"x", vx}, {"y", vy}, {"z", vz}};
                    EXPECT_EQ(evaluate_int(e, vars), evaluate_int(simple, vars)) << str(e) << " -> " << str(simple);
                }
    }
    // Narrow types wrap: uint8 (2 y + 1) % 2 is 1 still; no claim modulo more than the type holds
    // (widened, (512 u v + 200) + (512 u v + 100) in uint8 is 44, not 300 modulo 512).
    Expr u8 = V("u", UInt(8)), v8 = V("v", UInt(8));
    Expr p512 = mul(mul(u8, U(32, UInt(8))), mul(v8, U(16, UInt(8))));
    Expr wrapped = cst(Int(32), add(add(p512, U(200, UInt(8))), add(p512, U(100, UInt(8)))));
    Expr w512 = md(wrapped, I(512));
    // (The analysis itself, before any simplification: no claim modulo more than 2^8 of it.)
    std::map<std::string, ModRem> none;
    ModRem k = modulus_remainder(wrapped, none);
    EXPECT_LE(k.m, 256);
    EXPECT_EQ(44 % k.m, k.r);
    for (int64_t vu : {0, 1, 3, 255}) {
        std::map<std::string, int64_t> vars{{"u", vu}, {"v", 7}};
        EXPECT_EQ(evaluate_int(w512, vars), evaluate_int(simplify(w512), vars)) << str(simplify(w512));
    }
    Expr u = V("u", UInt(8));
    EXPECT_EQ(str(simplify(md(add(mul(u, U(2, UInt(8))), U(1, UInt(8))), U(2, UInt(8))))), str(U(1, UInt(8))));
}
