// Expr operators with API.md's type rules, math functions and inline reductions.
#include <cmath>
#include <limits>
#include <set>
#include "ir/BindShared.h"
#include "ir/IRVisitor.h"
#include "lang/Function.h"

namespace weft {

using namespace internal;

Expr::Expr(int v) : Expr(IntImm::make(Int(32), v)) {}
Expr::Expr(unsigned int v) : Expr(UIntImm::make(UInt(32), v)) {}
Expr::Expr(int64_t v) : Expr(IntImm::make(Int(64), v)) {}
Expr::Expr(uint64_t v) : Expr(UIntImm::make(UInt(64), v)) {}
Expr::Expr(float v) : Expr(FloatImm::make(Float(32), v)) {}
Expr::Expr(double v) : Expr(FloatImm::make(Float(64), v)) {}
Expr::Expr(float16_t v) : Expr(FloatImm::make(Float(16), (double)v)) {}
Expr::Expr(bfloat16_t v) : Expr(FloatImm::make(BFloat(16), (double)v)) {}

namespace internal {

static bool is_literal(const Expr &e) { return e.as<IntImm>() || e.as<UIntImm>() || e.as<FloatImm>(); }

static void check_defined(const Expr &e, const char *op) {
    if (!e.defined()) user_error(std::string("weft: operator ") + op + " applied to an undefined Expr");
}

static Expr coerce_literal(const Expr &lit, Type t, const char *op) {
    // A constant takes the other operand's type; integer constants must keep their value.
    if (t.is_float()) {
        if (auto f = lit.as<FloatImm>()) return FloatImm::make(t.element_of(), f->value);
        int64_t v = 0;
        is_const_int(lit, &v);
        return FloatImm::make(t.element_of(), (double)v);
    }
    if (t.is_int_or_uint()) {
        int64_t v = 0;
        if (!is_const_int(lit, &v))
            user_error(std::string("weft: operator ") + op + ": cannot mix " + t.str() + " with the constant " +
                       to_string(lit) + "; use cast<>()");
        if (!t.can_represent(v))
            user_error(std::string("weft: operator ") + op + ": the constant " + std::to_string(v) +
                       " does not fit in " + t.str() + "; use cast<>()");
        return make_const(t.element_of(), v);
    }
    if (t.is_bool()) {
        int64_t v = 0;
        if (is_const_int(lit, &v) && (v == 0 || v == 1)) return make_bool(v != 0);
    }
    user_error(std::string("weft: operator ") + op + ": cannot mix " + t.str() + " with the constant " +
               to_string(lit) + "; use cast<>()");
}

static Expr widen_lanes(const Expr &e, int lanes) {
    if (e.type().lanes() == lanes) return e;
    WEFT_ASSERT(e.type().is_scalar(), "lane mismatch");
    return Broadcast::make(e, lanes);
}

void match_types(Expr &a, Expr &b, const char *op) {
    check_defined(a, op);
    check_defined(b, op);
    int lanes = std::max(a.type().lanes(), b.type().lanes());
    Type ta = a.type().element_of(), tb = b.type().element_of();
    if (ta != tb) {
        bool la = is_literal(a), lb = is_literal(b);
        if (la && !lb && !(tb.is_int_or_uint() && ta.is_float())) a = coerce_literal(a, tb, op);
        else if (lb && !la && !(ta.is_int_or_uint() && tb.is_float())) b = coerce_literal(b, ta, op);
        else if (ta.is_float() && (tb.is_int_or_uint() || (tb.is_float() && tb.bits() < ta.bits()))) b = Cast::make(ta, b);
        else if (tb.is_float() && (ta.is_int_or_uint() || (ta.is_float() && ta.bits() < tb.bits()))) a = Cast::make(tb, a);
        else if (la && lb) {
            // Two constants of different kinds (e.g. int and float): the wider kind wins.
            if (ta.is_float()) b = coerce_literal(b, ta, op);
            else a = coerce_literal(a, tb, op);
        } else if (ta.code() == tb.code() && ta.code() != TypeCode::Bool) {
            if (ta.bits() < tb.bits()) a = Cast::make(tb, a);
            else b = Cast::make(ta, b);
        } else if (ta.is_int() && tb.is_uint() && tb.bits() < ta.bits()) {
            b = Cast::make(ta, b);  // a narrower unsigned value fits in the signed type
        } else if (tb.is_int() && ta.is_uint() && ta.bits() < tb.bits()) {
            a = Cast::make(tb, a);
        } else {
            user_error(std::string("weft: operator ") + op + ": cannot mix " + ta.str() + " (" + to_string(a) +
                       ") with " + tb.str() + " (" + to_string(b) + ") without losing information; use cast<>()");
        }
    }
    a = widen_lanes(a, lanes);
    b = widen_lanes(b, lanes);
}

static void check_arith(const Expr &a, const char *op) {
    if (a.type().is_bool())
        user_error(std::string("weft: operator ") + op + " applied to a bool (" + to_string(a) + "); use select() or cast<>()");
    if (a.type().is_handle()) user_error(std::string("weft: operator ") + op + " applied to a handle");
}
static void check_bool(const Expr &a, const char *op) {
    if (!a.type().is_bool())
        user_error(std::string("weft: operator ") + op + " needs bool operands, got " + a.type().str() + " (" +
                   to_string(a) + ")");
}

}  // namespace internal

#define ARITH(OP, NODE)                       \
    Expr operator OP(Expr a, Expr b) {        \
        match_types(a, b, #OP);               \
        check_arith(a, #OP);                  \
        return NODE::make(a, b);              \
    }
ARITH(+, Add)
ARITH(-, Sub)
ARITH(*, Mul)
ARITH(/, Div)
ARITH(%, Mod)
#undef ARITH
#define CMP(OP, NODE)                  \
    Expr operator OP(Expr a, Expr b) { \
        match_types(a, b, #OP);        \
        return NODE::make(a, b);       \
    }
CMP(<, LT)
CMP(<=, LE)
CMP(>, GT)
CMP(>=, GE)
CMP(==, EQ)
CMP(!=, NE)
#undef CMP
Expr operator-(Expr a) {
    check_defined(a, "-");
    check_arith(a, "-");
    return Sub::make(make_zero(a.type()), a);
}
Expr operator&&(Expr a, Expr b) {
    match_types(a, b, "&&");
    check_bool(a, "&&");
    return And::make(a, b);
}
Expr operator||(Expr a, Expr b) {
    match_types(a, b, "||");
    check_bool(a, "||");
    return Or::make(a, b);
}
Expr operator!(Expr a) {
    check_defined(a, "!");
    check_bool(a, "!");
    return Not::make(a);
}

// ------------------------------------------------------------------------- bitwise operators
// Where the arithmetic form is exact it is used (x & (2^k - 1) is x % 2^k, x << k is x * 2^k,
// x >> k is x / 2^k, all with floor semantics, ~x is -1 - x), so that bounds inference and the
// simplifier understand them; the rest are intrinsics "bitwise_and", "bitwise_or",
// "bitwise_xor", "shift_left" and "shift_right" (whose amount may have another integer type).
static void check_bitwise(const Expr &a, const char *op, bool allow_bool) {
    if (a.type().is_float() || a.type().is_handle() || (!allow_bool && a.type().is_bool()))
        user_error(std::string("weft: operator ") + op + " needs integer operands, got " + a.type().str() + " (" +
                   to_string(a) + ")");
}
static bool const_of(const Expr &e, int64_t *v) {
    if (auto b = e.as<Broadcast>()) return is_const_int(b->value, v);
    return is_const_int(e, v);
}
static Expr bitwise_intrinsic(const char *name, const Expr &a, const Expr &b) {
    return Call::make_intrinsic(a.type(), name, {a, b});
}
Expr operator&(Expr a, Expr b) {
    match_types(a, b, "&");
    check_bitwise(a, "&", true);
    if (a.type().is_bool()) return And::make(a, b);
    if (const_of(a, nullptr) && !const_of(b, nullptr)) std::swap(a, b);
    int64_t m = 0;
    if (const_of(b, &m) && a.type().bits() < 64) {
        uint64_t mask = (uint64_t(1) << a.type().bits()) - 1, um = (uint64_t)m & mask;
        if (um == 0) return make_zero(a.type());
        if (um == mask) return a;
        if ((um & (um + 1)) == 0) return Mod::make(a, make_const(a.type(), (int64_t)(um + 1)));  // low bits
    }
    return bitwise_intrinsic("bitwise_and", a, b);
}
Expr operator|(Expr a, Expr b) {
    match_types(a, b, "|");
    check_bitwise(a, "|", true);
    if (a.type().is_bool()) return Or::make(a, b);
    int64_t v = 0;
    if (const_of(b, &v) && v == 0) return a;
    if (const_of(a, &v) && v == 0) return b;
    return bitwise_intrinsic("bitwise_or", a, b);
}
Expr operator^(Expr a, Expr b) {
    match_types(a, b, "^");
    check_bitwise(a, "^", true);
    if (a.type().is_bool()) return NE::make(a, b);
    int64_t v = 0;
    if (const_of(b, &v) && v == 0) return a;
    if (const_of(a, &v) && v == 0) return b;
    return bitwise_intrinsic("bitwise_xor", a, b);
}
Expr operator~(Expr a) {
    check_defined(a, "~");
    check_bitwise(a, "~", true);
    if (a.type().is_bool()) return Not::make(a);
    // All ones minus a, in wrapping arithmetic: -1 - a (signed), max - a (unsigned).
    Expr ones = a.type().is_int() ? make_const(a.type(), (int64_t)-1)
                                  : make_const(a.type(), (int64_t)(a.type().bits() >= 64 ? ~uint64_t(0)
                                                                                         : (uint64_t(1) << a.type().bits()) - 1));
    return Sub::make(ones, a);
}
static Expr shift(Expr a, Expr b, bool left) {
    const char *op = left ? "<<" : ">>";
    check_defined(a, op);
    check_defined(b, op);
    check_bitwise(a, op, false);
    check_bitwise(b, op, false);
    int lanes = std::max(a.type().lanes(), b.type().lanes());
    a = widen_lanes(a, lanes);
    b = widen_lanes(b, lanes);
    Type t = a.type();
    const int bits = t.bits();
    int64_t k = 0;
    if (const_of(b, &k) && (b.type().is_int() || k >= 0)) {
        if (k < 0) {
            left = !left;
            k = (k == INT64_MIN) ? INT64_MAX : -k;
        }
        if (k == 0) return a;
        if (k >= bits) {
            if (left || t.is_uint()) return make_zero(t);
            k = bits - 1;  // every bit a copy of the sign
        }
        if (k < bits - 1 || (t.is_uint() && k < 63)) {
            Expr p = make_const(t, (int64_t)(uint64_t(1) << k));
            return left ? Mul::make(a, p) : Div::make(a, p);
        }
        return Call::make_intrinsic(t, left ? "shift_left" : "shift_right", {a, make_const(t, k)});
    }
    return Call::make_intrinsic(t, left ? "shift_left" : "shift_right", {a, b});
}
Expr operator<<(Expr a, Expr b) { return shift(std::move(a), std::move(b), true); }
Expr operator>>(Expr a, Expr b) { return shift(std::move(a), std::move(b), false); }

Expr &operator+=(Expr &a, Expr b) { return a = a + b; }
Expr &operator-=(Expr &a, Expr b) { return a = a - b; }
Expr &operator*=(Expr &a, Expr b) { return a = a * b; }
Expr &operator/=(Expr &a, Expr b) { return a = a / b; }

Expr select(Expr c, Expr t, Expr f) {
    check_defined(c, "select");
    check_bool(c, "select");
    match_types(t, f, "select");
    if (c.type().lanes() != t.type().lanes()) {
        if (c.type().is_scalar()) { /* scalar condition is fine */ }
        else {
            t = widen_lanes(t, c.type().lanes());
            f = widen_lanes(f, c.type().lanes());
        }
    }
    return Select::make(c, t, f);
}
Expr min(Expr a, Expr b) {
    match_types(a, b, "min");
    check_arith(a, "min");
    return Min::make(a, b);
}
Expr max(Expr a, Expr b) {
    match_types(a, b, "max");
    check_arith(a, "max");
    return Max::make(a, b);
}
Expr clamp(Expr x, Expr lo, Expr hi) {
    check_defined(x, "clamp");
    check_defined(lo, "clamp");
    check_defined(hi, "clamp");
    // The bounds take x's type.
    Type t = x.type();
    if (lo.type() != t) lo = is_literal(lo) ? coerce_literal(lo, t, "clamp") : cast(t, lo);
    if (hi.type() != t) hi = is_literal(hi) ? coerce_literal(hi, t, "clamp") : cast(t, hi);
    return max(min(x, hi), lo);
}

static Expr to_float(Expr a, const char *name) {
    check_defined(a, name);
    check_arith(a, name);
    if (!a.type().is_float()) a = Cast::make(Float(32, a.type().lanes()), a);
    return a;
}
static Expr unary_float(const char *name, Expr a) {
    a = to_float(a, name);
    return Call::make_intrinsic(a.type(), name, {a});
}
Expr abs(Expr a) {
    check_defined(a, "abs");
    check_arith(a, "abs");
    if (a.type().is_uint()) return a;
    return Call::make_intrinsic(a.type(), "abs", {a});
}
Expr undef(Type t) {
    if (t.is_vector() || t.is_handle()) user_error("weft: undef() takes a scalar type, got " + t.str());
    return Call::make_intrinsic(t, "undef", {});
}

Expr absd(Expr a, Expr b) {
    match_types(a, b, "absd");
    check_arith(a, "absd");
    Type t = a.type();
    if (t.is_float()) return abs(a - b);
    Type u = Type(TypeCode::UInt, t.bits(), t.lanes());
    Expr ua = t.is_uint() ? a : Cast::make(u, a), ub = t.is_uint() ? b : Cast::make(u, b);
    return Select::make(LT::make(a, b), Sub::make(ub, ua), Sub::make(ua, ub));  // wraps to the exact distance
}
Expr mux(Expr id, const std::vector<Expr> &values) {
    check_defined(id, "mux");
    if (values.empty()) user_error("weft: mux needs at least one value");
    if (!id.type().is_int_or_uint()) user_error("weft: mux: the index must be an integer, got " + id.type().str());
    Expr r = values.back();
    check_defined(r, "mux");
    for (size_t i = values.size() - 1; i-- > 0;) {
        Expr idx = make_const(id.type().element_of(), (int64_t)i);
        r = select(id == idx, values[i], r);
    }
    return r;
}
Expr saturating_cast(Type t, Expr e) {
    check_defined(e, "saturating_cast");
    check_arith(e, "saturating_cast");
    Type f = e.type().element_of();
    t = t.with_lanes(e.type().lanes());
    Type te = t.element_of();
    if (te.is_bool() || te.is_handle()) user_error("weft: saturating_cast to " + te.str());
    check_supported_type(te, "saturating_cast to " + te.str());
    if (f.is_16bit_float() && te.is_int_or_uint()) {  // (exact in float32)
        e = Cast::make(Float(32, t.lanes()), e);
        f = Float(32);
    }
    if (f.is_int_or_uint() && te.is_int_or_uint()) {
        // Clamp in e's type to the part of t's range it can hold, then convert.
        __int128 lo = std::max(f.is_int() ? -((__int128)1 << (f.bits() - 1)) : (__int128)0,
                           te.is_int() ? -((__int128)1 << (te.bits() - 1)) : (__int128)0);
        __int128 hi = std::min(f.is_int() ? ((__int128)1 << (f.bits() - 1)) - 1 : ((__int128)1 << f.bits()) - 1,
                           te.is_int() ? ((__int128)1 << (te.bits() - 1)) - 1 : ((__int128)1 << te.bits()) - 1);
        __int128 fmin = f.is_int() ? -((__int128)1 << (f.bits() - 1)) : 0;
        __int128 fmax = f.is_int() ? ((__int128)1 << (f.bits() - 1)) - 1 : ((__int128)1 << f.bits()) - 1;
        if (lo > fmin) e = Max::make(e, make_const(e.type(), (int64_t)lo));
        if (hi < fmax) e = Min::make(e, make_const(e.type(), (int64_t)(uint64_t)hi));
        return te == f ? e : Cast::make(t, e);
    }
    if (f.is_float() && te.is_int_or_uint()) {
        // The largest float of e's type not above t's maximum (2^31 - 1 is not a float32).
        double hi = te.is_int() ? std::ldexp(1.0, te.bits() - 1) : std::ldexp(1.0, te.bits());
        double lo = te.is_int() ? -hi : 0.0;
        hi = f.bits() == 32 ? (double)std::nextafter((float)hi, 0.0f) : std::nextafter(hi, 0.0);
        e = Min::make(Max::make(e, make_const(e.type(), lo)), make_const(e.type(), hi));
        return Cast::make(t, e);
    }
    if (f.is_float() && te.is_float() && (te.bits() < f.bits() || (te.bits() == 16 && te != f))) {
        if (f.is_16bit_float()) {  // float16 <-> bfloat16: clamped in float32 (exact)
            e = Cast::make(Float(32, t.lanes()), e);
            f = Float(32);
        }
        double m = largest_finite_float(te);
        Expr c = Min::make(Max::make(e, make_const(e.type(), -m)), make_const(e.type(), m));
        e = Select::make(Call::make_intrinsic(Bool(t.lanes()), "is_nan", {e}), e, c);  // NaN stays NaN
    }
    return te == f ? e : Cast::make(t, e);
}
Expr lerp(Expr zero_val, Expr one_val, Expr weight) {
    match_types(zero_val, one_val, "lerp");
    check_defined(weight, "lerp");
    check_arith(zero_val, "lerp");
    Type t = zero_val.type();
    if (t.is_float()) {
        if (weight.type().element_of() != t.element_of())
            weight = is_literal(weight) ? coerce_literal(weight, t.element_of(), "lerp") : cast(t.element_of(), weight);
        Expr w = widen_lanes(weight, t.lanes());
        return zero_val * (make_const(t, 1.0) - w) + one_val * w;
    }
    if (t.is_uint() && (t.bits() == 8 || t.bits() == 16)) {
        Type wide = t.with_bits(t.bits() * 2);
        int64_t mx = (int64_t(1) << t.bits()) - 1;
        Expr tw;
        if (weight.type().is_float()) tw = Cast::make(wide.with_lanes(weight.type().lanes()), clamp(weight, 0.0f, 1.0f) * (float)mx + 0.5f);
        else if (weight.type().element_of() == t.element_of()) tw = Cast::make(wide.with_lanes(weight.type().lanes()), weight);
        else user_error("weft: lerp of " + t.str() + " values takes a float weight or a " + t.str() + " one, got " +
                        weight.type().str());
        tw = widen_lanes(tw, t.lanes());
        Expr z = Cast::make(wide, zero_val), o = Cast::make(wide, one_val);
        Expr sum = z * (make_const(wide, mx) - tw) + o * tw;
        return Cast::make(t, (sum + make_const(wide, mx / 2)) / make_const(wide, mx));
    }
    user_error("weft: lerp of " + t.str() + " values: floats and 8- or 16-bit unsigned integers are supported");
}
Expr sqrt(Expr a) { return unary_float("sqrt", a); }
Expr exp(Expr a) { return unary_float("exp", a); }
Expr log(Expr a) { return unary_float("log", a); }
Expr sin(Expr a) { return unary_float("sin", a); }
Expr cos(Expr a) { return unary_float("cos", a); }
Expr tanh(Expr a) { return unary_float("tanh", a); }
Expr tan(Expr a) { return unary_float("tan", a); }
Expr atan(Expr a) { return unary_float("atan", a); }
Expr asin(Expr a) { return unary_float("asin", a); }
Expr acos(Expr a) { return unary_float("acos", a); }
Expr sinh(Expr a) { return unary_float("sinh", a); }
Expr cosh(Expr a) { return unary_float("cosh", a); }
Expr asinh(Expr a) { return unary_float("asinh", a); }
Expr acosh(Expr a) { return unary_float("acosh", a); }
Expr atanh(Expr a) { return unary_float("atanh", a); }
static Expr binary_float(const char *name, Expr a, Expr b) {
    check_defined(a, name);
    check_defined(b, name);
    check_arith(a, name);
    check_arith(b, name);
    if (!a.type().is_float() && !b.type().is_float()) {
        a = to_float(a, name);
        b = to_float(b, name);
    }
    match_types(a, b, name);  // (a literal takes the other's type; an integer with a float: the float)
    return Call::make_intrinsic(a.type(), name, {a, b});
}
Expr atan2(Expr y, Expr x) { return binary_float("atan2", std::move(y), std::move(x)); }
Expr hypot(Expr x, Expr y) { return binary_float("hypot", std::move(x), std::move(y)); }
Expr fract(Expr a) {
    a = to_float(a, "fract");
    Expr zero = make_const(a.type().element_of(), 0.0);
    return select(a < zero, a - ceil(a), a - floor(a));
}
static Expr float_class(const char *name, Expr a, bool int_value) {
    check_defined(a, name);
    check_arith(a, name);
    if (!a.type().is_float()) return make_bool(int_value, a.type().lanes());
    return Call::make_intrinsic(Bool(a.type().lanes()), name, {a});
}
Expr is_nan(Expr a) { return float_class("is_nan", std::move(a), false); }
Expr is_inf(Expr a) { return float_class("is_inf", std::move(a), false); }
Expr is_finite(Expr a) { return float_class("is_finite", std::move(a), true); }
Expr likely(Expr e) {
    check_defined(e, "likely");
    return Call::make_intrinsic(e.type(), "likely", {e});
}
static Expr make_print(const char *who, Expr cond, const std::vector<PrintArg> &args) {
    if (args.empty() || args[0].is_string())
        user_error(std::string("weft: ") + who + "(): the first " + (cond.defined() ? "argument after the condition " : "argument ") +
                   "must be an Expr (its value is " + who + "'s value)");
    std::vector<Expr> pieces;
    if (cond.defined()) {
        if (!cond.type().is_bool()) user_error(std::string("weft: ") + who + "(): the condition must be a bool, got " + cond.type().str());
        pieces.push_back(cond);
    }
    for (size_t i = 0; i < args.size(); i++) {
        if (args[i].is_string()) {
            pieces.push_back(StringImm::make(args[i].str()));
            continue;
        }
        check_defined(args[i].expr(), who);
        if (args[i].expr().type().is_handle()) user_error(std::string("weft: ") + who + "() of a handle");
        pieces.push_back(args[i].expr());
    }
    return Call::make_intrinsic(args[0].expr().type(), who, pieces);
}
Expr print(const std::vector<PrintArg> &args) { return make_print("print", Expr(), args); }
Expr print_when(Expr cond, const std::vector<PrintArg> &args) {
    check_defined(cond, "print_when");
    return make_print("print_when", std::move(cond), args);
}
Expr fast_inverse(Expr a) {
    a = to_float(a, "fast_inverse");
    return make_const(a.type(), 1.0) / a;
}
Expr fast_inverse_sqrt(Expr a) {
    a = to_float(a, "fast_inverse_sqrt");
    return make_const(a.type(), 1.0) / sqrt(a);
}
Expr floor(Expr a) {
    check_defined(a, "floor");
    return a.type().is_float() ? unary_float("floor", a) : to_float(a, "floor");
}
Expr ceil(Expr a) {
    check_defined(a, "ceil");
    return a.type().is_float() ? unary_float("ceil", a) : to_float(a, "ceil");
}
Expr round(Expr a) {
    check_defined(a, "round");
    return a.type().is_float() ? unary_float("round", a) : to_float(a, "round");
}
Expr pow(Expr a, Expr b) {
    a = to_float(a, "pow");
    check_defined(b, "pow");
    if (b.type() != a.type()) b = is_literal(b) ? coerce_literal(b, a.type(), "pow") : cast(a.type(), b);
    return Call::make_intrinsic(a.type(), "pow", {a, b});
}
Expr cast(Type t, Expr e) {
    check_defined(e, "cast");
    if (t.is_handle() || e.type().is_handle()) user_error("weft: cannot cast to or from a handle");
    check_supported_type(t, "cast to " + t.str());
    t = t.with_lanes(e.type().lanes());
    if (e.type() == t) return e;
    if (is_literal(e)) {
        // Fold literal casts here so that constants stay constants.
        if (t.is_float()) {
            if (auto f = e.as<FloatImm>()) return FloatImm::make(t, f->value);
            int64_t v;
            if (auto u = e.as<UIntImm>()) return FloatImm::make(t, (double)u->value);
            if (is_const_int(e, &v)) return FloatImm::make(t, (double)v);
        } else if (t.is_bool()) {
            return make_bool(!is_const_zero(e));
        } else if (!e.type().is_float()) {
            if (auto u = e.as<UIntImm>()) return t.is_int() ? IntImm::make(t, (int64_t)u->value) : UIntImm::make(t, u->value);
            if (auto i = e.as<IntImm>()) return t.is_int() ? IntImm::make(t, i->value) : UIntImm::make(t, (uint64_t)i->value);
        }
    }
    return Cast::make(t, e);
}

// ---------------- inline reductions ----------------
namespace {
class FindVars : public IRVisitor {
public:
    std::vector<std::string> free_vars;
    std::set<std::string> seen;
    std::shared_ptr<ReductionDomainContents> rdom;
    std::set<std::string> bound;

protected:
    void visit(const Variable *op) override {
        if (op->rdom) {
            if (rdom && rdom != op->rdom)
                user_error("weft: an inline reduction uses two different RDoms (" + rdom->name + " and " +
                           op->rdom->name + "); use one RDom");
            rdom = op->rdom;
            return;
        }
        if (op->param || op->type.is_handle() || bound.count(op->name)) return;
        if (op->name.find('.') != std::string::npos) return;  // buffer fields such as in.min.0
        if (seen.insert(op->name).second) free_vars.push_back(op->name);
    }
    void visit(const Let *op) override {
        include(op->value);
        bound.insert(op->name);
        include(op->body);
        bound.erase(op->name);
    }
};

}  // namespace

InlineReduction internal::inline_reduction_of(Expr e, const char *kind) {
    if (!e.defined()) user_error(std::string("weft: ") + kind + "() of an undefined Expr");
    InlineReduction r;
    r.e = bind_shared_subexpressions(e);  // (before walking it: a graph with an exponentially larger tree)
    FindVars fv;
    fv.include(r.e);
    if (!fv.rdom)
        user_error(std::string("weft: ") + kind + "(" + to_string(r.e) + ") uses no RDom; an inline reduction needs one");
    r.rdom = fv.rdom;
    r.f = Func(std::string(kind) + "_" + unique_name('r'));
    for (auto &n : fv.free_vars) {
        r.vars.emplace_back(n);
        r.args.push_back(Variable::make(Int(32), n));
    }
    return r;
}

namespace {
Expr inline_reduction(Expr e_in, const char *kind) {
    InlineReduction r = inline_reduction_of(e_in, kind);
    Expr e = r.e;
    Func f = r.f;
    const std::vector<Expr> &args = r.args;
    const std::vector<Var> &vars = r.vars;
    Type t = e.type();
    Expr init;
    std::string k = kind;
    if (k == "sum") init = make_zero(t);
    else if (k == "product") init = make_one(t);
    else if (k == "maximum") init = t.min();
    else init = t.max();
    f(vars) = init;
    FuncRef ref = f(args);
    if (k == "sum") ref = Expr(f(args)) + e;
    else if (k == "product") ref = Expr(f(args)) * e;
    else if (k == "maximum") ref = max(Expr(f(args)), e);
    else ref = min(Expr(f(args)), e);
    return f(args);
}
}  // namespace

Expr sum(Expr e) { return inline_reduction(e, "sum"); }
Expr product(Expr e) { return inline_reduction(e, "product"); }
Expr maximum(Expr e) { return inline_reduction(e, "maximum"); }
Expr minimum(Expr e) { return inline_reduction(e, "minimum"); }

}  // namespace weft

namespace weft {
using namespace internal;

Expr reinterpret(Type t, Expr e) {
    if (!e.defined()) user_error("weft: reinterpret of an undefined Expr");
    check_supported_type(t, "reinterpret as " + t.str());
    t = t.with_lanes(e.type().lanes());
    if (t.bits() != e.type().bits() || t.is_bool() || e.type().is_bool())
        user_error("weft: reinterpret from " + e.type().str() + " to " + t.str() + ": the widths must match");
    if (t == e.type()) return e;
    return Call::make_intrinsic(t, "reinterpret", {e});
}

namespace {
/** Binds e to a fresh name for the body: shared subexpressions are computed once. */
template <typename F>
Expr with_let(const Expr &e, F &&body) {
    if (e.as<Variable>() || is_const(e)) return body(e);
    std::string n = unique_name('t');
    return Let::make(n, e, body(Variable::make(e.type(), n)));
}
}  // namespace

Expr fast_exp(Expr x_in) {
    Expr x0 = to_float(x_in, "fast_exp");
    if (x0.type().element_of() != Float(32)) user_error("weft: fast_exp takes float32, got " + x0.type().str());
    // exp(x) = 2^k * e^f with k = round(x log2 e) and f = x - k ln 2 (Cody-Waite, in two parts so
    // that f is exact), |f| <= ln(2)/2; e^f by a degree-5 polynomial fitted for the least maximum
    // relative error (9.1e-8 in exact arithmetic; 1.6e-7 in float over [-87, 88], against 7.4e-8
    // for the Taylor series to f^7, which costs two more operations).
    return with_let(clamp(x0, -87.3f, 88.7f), [](const Expr &x) {
        return with_let(round(x * 1.44269504088896341f), [&](const Expr &k) {
            return with_let((x - k * 0.693145751953125f) - k * 1.428606765330187045e-06f, [&](const Expr &f) {
                Expr p = 0.00829031225f;
                for (float c : {0.0418979302f, 0.166676357f, 0.499991506f, 0.999999702f, 1.0f}) p = p * f + c;
                // 2^k from the bits, without a float->int conversion (saturating ones are slow as
                // vectors): k + (1.5*2^23 + 127) holds k + 127 in its low mantissa bits (|k| <
                // 2^22), and shifting the bits left by 23 (a wrapping multiply) leaves exactly
                // (k + 127) << 23, the float 2^k for k in [-126, 127].
                Expr scale = reinterpret(Float(32), reinterpret(Int(32), k + 12583039.0f) * 8388608);
                return p * scale;
            });
        });
    });
}

Expr fast_tanh(Expr x_in) {
    Expr x0 = to_float(x_in, "fast_tanh");
    if (x0.type().element_of() != Float(32)) user_error("weft: fast_tanh takes float32, got " + x0.type().str());
    // |x| < 0.3: the odd Taylor series to x^11 (its remainder below 2e-8 relative there), so tiny
    // and subnormal x give x itself and -0 gives -0. Elsewhere sign(x) (1 - 2 / (e^2|x| + 1)),
    // e^2|x| by fast_exp (relative error 1.6e-7 measured): the subtraction multiplies it by
    // 2E / (E^2 - 1), at most 1.6 from |x| = 0.3; |x| is capped at 10, where tanh is 1 in float
    // (from 9.01). NaN gives NaN.
    return with_let(x0, [](const Expr &x) {
        return with_let(abs(x), [&](const Expr &a) {
            return with_let(x * x, [&](const Expr &x2) {
                Expr p = -1382.0f / 155925.0f;
                for (float c : {62.0f / 2835.0f, -17.0f / 315.0f, 2.0f / 15.0f, -1.0f / 3.0f}) p = p * x2 + c;
                Expr small = x * (1.0f + x2 * p);  // (x + x x2 p would make -0 +0)
                Expr big = 1.0f - 2.0f / (fast_exp(2.0f * min(a, 10.0f)) + 1.0f);
                Expr t = select(a < 0.3f, small, select(x < 0.0f, -big, big));
                return select(is_nan(x), x, t);
            });
        });
    });
}

Expr fast_log(Expr x_in) {
    Expr x0 = to_float(x_in, "fast_log");
    if (x0.type().element_of() != Float(32)) user_error("weft: fast_log takes float32, got " + x0.type().str());
    // x = m * 2^e with m in [sqrt(1/2), sqrt(2)); log(m) = 2 atanh(t), t = (m-1)/(m+1), |t| < 0.172.
    return with_let(reinterpret(Int(32), x0), [](const Expr &bits) {
        Expr m0 = reinterpret(Float(32), bits % 8388608 + 1065353216);  // in [1, 2)
        return with_let(m0, [&](const Expr &m1) {
            return with_let(m1 > 1.41421356f, [&](const Expr &big) {
                Expr e = select(big, bits / 8388608 - 126, bits / 8388608 - 127);
                return with_let(select(big, m1 * 0.5f, m1), [&](const Expr &m) {
                    return with_let((m - 1.0f) / (m + 1.0f), [&](const Expr &t) {
                        return with_let(t * t, [&](const Expr &t2) {
                            Expr s = 1.0f / 11;
                            for (float c : {1.0f / 9, 1.0f / 7, 1.0f / 5, 1.0f / 3, 1.0f}) s = s * t2 + c;
                            return cast<float>(e) * 0.693147180559945309f + 2.0f * t * s;
                        });
                    });
                });
            });
        });
    });
}

}  // namespace weft

// ---- fixed-point arithmetic (Expr.h) ----
namespace weft {
namespace internal {
namespace {
void fixed_point_operands(Expr &a, Expr &b, const char *name, int max_bits) {
    match_types(a, b, name);
    Type t = a.type().element_of();
    if (!t.is_int_or_uint())
        user_error(std::string("weft: ") + name + " takes integers, got " + t.str() + " (" + to_string(a) + ")");
    if (t.bits() > max_bits)
        user_error(std::string("weft: ") + name + " of " + t.str() + ": operands of up to " + std::to_string(max_bits) +
                   " bits (the result needs twice the bits)");
}
Expr widened(const Expr &e, Type wide) { return Cast::make(wide.with_lanes(e.type().lanes()), e); }
Expr shift_amount(Expr n, const char *name) {
    check_defined(n, name);
    if (!n.type().is_int_or_uint())
        user_error(std::string("weft: ") + name + ": the shift must be an integer, got " + n.type().str());
    return n;
}
}  // namespace
}  // namespace internal

Expr saturating_add(Expr a, Expr b) {
    fixed_point_operands(a, b, "saturating_add", 64);
    return Call::make_intrinsic(a.type(), "saturating_add", {a, b});
}
Expr saturating_sub(Expr a, Expr b) {
    fixed_point_operands(a, b, "saturating_sub", 64);
    return Call::make_intrinsic(a.type(), "saturating_sub", {a, b});
}
Expr widening_add(Expr a, Expr b) {
    fixed_point_operands(a, b, "widening_add", 32);
    Type w = a.type().with_bits(a.type().bits() * 2);
    return Add::make(widened(a, w), widened(b, w));
}
Expr widening_sub(Expr a, Expr b) {
    fixed_point_operands(a, b, "widening_sub", 32);
    Type w = Int(a.type().bits() * 2, a.type().lanes());
    return Sub::make(widened(a, w), widened(b, w));
}
Expr widening_mul(Expr a, Expr b) {
    check_defined(a, "widening_mul");
    check_defined(b, "widening_mul");
    Type ta = a.type().element_of(), tb = b.type().element_of();
    bool mixed = ta.is_int_or_uint() && tb.is_int_or_uint() && ta.bits() == tb.bits() && ta != tb &&
                 !is_literal(a) && !is_literal(b);
    Type w;
    if (mixed) {
        if (ta.bits() > 32) user_error("weft: widening_mul of " + ta.str() + ": operands of up to 32 bits");
        int lanes = std::max(a.type().lanes(), b.type().lanes());
        a = widen_lanes(a, lanes);
        b = widen_lanes(b, lanes);
        w = Int(ta.bits() * 2, lanes);  // one operand is signed
    } else {
        fixed_point_operands(a, b, "widening_mul", 32);
        w = a.type().with_bits(a.type().bits() * 2);
    }
    return Mul::make(widened(a, w), widened(b, w));
}
Expr widening_shift_left(Expr a, Expr n) {
    Expr z = make_zero(a.defined() ? a.type() : Int(32));
    fixed_point_operands(a, z, "widening_shift_left", 32);
    return widened(a, a.type().with_bits(a.type().bits() * 2)) << shift_amount(n, "widening_shift_left");
}
Expr widening_shift_right(Expr a, Expr n) {
    Expr z = make_zero(a.defined() ? a.type() : Int(32));
    fixed_point_operands(a, z, "widening_shift_right", 32);
    return widened(a, a.type().with_bits(a.type().bits() * 2)) >> shift_amount(n, "widening_shift_right");
}
Expr halving_add(Expr a, Expr b) {
    fixed_point_operands(a, b, "halving_add", 64);
    Type t = a.type();
    if (t.bits() <= 32) {
        Type w = t.with_bits(t.bits() * 2);
        return Cast::make(t, (widened(a, w) + widened(b, w)) >> 1);
    }
    return (a >> 1) + (b >> 1) + (a & b & make_one(t));
}
Expr rounding_halving_add(Expr a, Expr b) {
    fixed_point_operands(a, b, "rounding_halving_add", 64);
    Type t = a.type();
    if (t.bits() <= 32) {
        Type w = t.with_bits(t.bits() * 2);
        return Cast::make(t, (widened(a, w) + widened(b, w) + make_one(w)) >> 1);
    }
    return (a >> 1) + (b >> 1) + ((a | b) & make_one(t));
}
Expr halving_sub(Expr a, Expr b) {
    fixed_point_operands(a, b, "halving_sub", 64);
    Type t = a.type();
    if (t.bits() <= 32) {
        Type w = Int(t.bits() * 2, t.lanes());
        return Cast::make(t, (widened(a, w) - widened(b, w)) >> 1);
    }
    return (a >> 1) - (b >> 1) - (~a & b & make_one(t));
}
Expr rounding_shift_right(Expr a, Expr n) {
    Expr z = make_zero(a.defined() ? a.type() : Int(32));
    fixed_point_operands(a, z, "rounding_shift_right", 64);
    n = shift_amount(n, "rounding_shift_right");
    int lanes = std::max(a.type().lanes(), n.type().lanes());
    return Call::make_intrinsic(a.type().with_lanes(lanes), "rounding_shift_right", {widen_lanes(a, lanes), widen_lanes(n, lanes)});
}
Expr rounding_shift_left(Expr a, Expr n) {
    n = shift_amount(n, "rounding_shift_left");
    // rounding_shift_right(a, -n); an unsigned n is negated in 64 bits (a huge n shifts everything out either way)
    if (n.type().is_uint()) n = Cast::make(Int(64, n.type().lanes()), n);
    return rounding_shift_right(std::move(a), make_zero(n.type()) - n);
}
static Expr mul_shift(const char *name, Expr a, Expr b, Expr q) {
    fixed_point_operands(a, b, name, 32);
    check_defined(q, name);
    int64_t qv = 0;
    if (is_const_int(q, &qv) && qv < 0)
        user_error(std::string("weft: ") + name + ": the shift q must be >= 0, got " + std::to_string(qv));
    if (!q.type().is_int_or_uint()) user_error(std::string("weft: ") + name + ": q must be an integer, got " + q.type().str());
    Type ut = UInt(std::max(q.type().bits(), 8));
    if (is_literal(q)) q = make_const(ut, qv);
    else if (!q.type().is_uint()) q = Cast::make(ut.with_lanes(q.type().lanes()), q);
    int lanes = std::max(a.type().lanes(), q.type().lanes());
    return Call::make_intrinsic(a.type().with_lanes(lanes), name, {widen_lanes(a, lanes), widen_lanes(b, lanes), widen_lanes(q, lanes)});
}
Expr mul_shift_right(Expr a, Expr b, Expr q) { return mul_shift("mul_shift_right", a, b, q); }
Expr rounding_mul_shift_right(Expr a, Expr b, Expr q) { return mul_shift("rounding_mul_shift_right", a, b, q); }

}  // namespace weft
