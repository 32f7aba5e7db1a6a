// Expr operators with API.md's type rules, math functions and inline reductions.
#include <set>
#include "ir/BindShared.h"
#include "ir/IRVisitor.h"
#include "lang/Function.h"

namespace weft {

using namespace internal;

Expr::Expr(int v) : Expr(IntImm::make(Int(32), v)) {}
Expr::Expr(float v) : Expr(FloatImm::make(Float(32), v)) {}
Expr::Expr(double v) : Expr(FloatImm::make(Float(64), v)) {}

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
Expr sqrt(Expr a) { return unary_float("sqrt", a); }
Expr exp(Expr a) { return unary_float("exp", a); }
Expr log(Expr a) { return unary_float("log", a); }
Expr sin(Expr a) { return unary_float("sin", a); }
Expr cos(Expr a) { return unary_float("cos", a); }
Expr tanh(Expr a) { return unary_float("tanh", a); }
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

Expr inline_reduction(Expr e, const char *kind) {
    if (!e.defined()) user_error(std::string("weft: ") + kind + "() of an undefined Expr");
    e = bind_shared_subexpressions(e);  // (before walking it: a graph with an exponentially larger tree)
    FindVars fv;
    fv.include(e);
    if (!fv.rdom)
        user_error(std::string("weft: ") + kind + "(" + to_string(e) + ") uses no RDom; an inline reduction needs one");
    Func f(std::string(kind) + "_" + unique_name('r'));
    std::vector<Expr> args;
    std::vector<Var> vars;
    for (auto &n : fv.free_vars) {
        vars.emplace_back(n);
        args.push_back(Variable::make(Int(32), n));
    }
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
