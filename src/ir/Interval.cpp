// Interval arithmetic over symbolic Exprs. See Interval.h.
//
// Int(32)/Int(64) bounds assume no overflow for symbolic bounds (as the simplifier does);
// constant bounds are computed exactly and a side whose constant does not fit the type becomes
// unbounded. For the wrapping types (UInt*, Int8/16) any interval that is not a single point or
// a pair of exactly computed constants is widened to the full range of the type.
#include "ir/Interval.h"
#include <numeric>
#include <set>

#include <algorithm>
#include <cmath>

#include "ir/Constants.h"
#include "ir/IRVisitor.h"
#include "ir/Stack.h"
#include "ir/Simplify.h"

namespace weft {
namespace internal {

bool Interval::is_single_point() const {
    if (!min.defined() || !max.defined()) return false;
    return min.same_as(max) || equal(min, max);
}

namespace {

using namespace ir_constants;

// Sign of a constant bound: 1 positive, 0 zero, -1 negative, 2 unknown.
int csign(const Expr &e) {
    i128 v;
    double d;
    if (cint(e, &v)) return v > 0 ? 1 : v < 0 ? -1 : 0;
    if (cflt(e, &d) && !std::isnan(d)) return d > 0 ? 1 : d < 0 ? -1 : 0;
    return 2;
}
bool strict(Type t) { return t.is_int() && t.bits() >= 32; }
i128 floordiv(i128 a, i128 b) {
    if (b == 0) return 0;
    i128 q = a / b, r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) q--;
    return q;
}
i128 floormod(i128 a, i128 b) {
    if (b == 0) return 0;
    i128 r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

Interval point(const Expr &e) { return Interval(e, e); }
Interval bool_range() { return Interval(mkc(Bool(), 0), mkc(Bool(), 1)); }
Interval full_range(Type t) { return Interval(mkc(t, tmin(t)), mkc(t, tmax(t))); }
// The range of a Load or of a call to a Func/input.
Interval value_range(Type t) {
    if (t.is_bool()) return bool_range();
    if (t.is_int_or_uint() && t.bits() <= 16) return full_range(t);
    return Interval::everything();
}

enum BOp { BADD, BSUB, BMUL, BDIV, BMIN, BMAX };

// Node count of e, stopping early once it exceeds `limit`.
int expr_size(const Expr &e, int limit) {
    if (!e.defined() || limit <= 0) return 0;
    if (stack_low()) return on_large_stack<int>([&] { return expr_size(e, limit); });
    const ExprNode *n = e.get();
    int s = 1;
    auto sub = [&](const Expr &c) {
        if (s <= limit) s += expr_size(c, limit - s);
    };
    switch (n->node_type) {
#define BIN(T)                                 \
    case IRNodeType::T:                        \
        sub(static_cast<const T *>(n)->a);     \
        sub(static_cast<const T *>(n)->b);     \
        break;
        BIN(Add) BIN(Sub) BIN(Mul) BIN(Div) BIN(Mod) BIN(Min) BIN(Max) BIN(EQ) BIN(NE) BIN(LT) BIN(LE) BIN(GT)
        BIN(GE) BIN(And) BIN(Or)
#undef BIN
    case IRNodeType::Cast: sub(static_cast<const Cast *>(n)->value); break;
    case IRNodeType::Not: sub(static_cast<const Not *>(n)->a); break;
    case IRNodeType::Select: {
        auto *op = static_cast<const Select *>(n);
        sub(op->condition);
        sub(op->true_value);
        sub(op->false_value);
        break;
    }
    case IRNodeType::Call:
        for (auto &a : static_cast<const Call *>(n)->args) sub(a);
        break;
    case IRNodeType::Let: {
        auto *op = static_cast<const Let *>(n);
        sub(op->value);
        sub(op->body);
        break;
    }
    default: break;
    }
    return s;
}
// Symbolic bounds larger than this are dropped (unbounded), so that products of intervals
// cannot grow exponentially.
constexpr int kMaxBoundSize = 1000;

const IRNodeType kNodeOf[] = {IRNodeType::Add, IRNodeType::Sub, IRNodeType::Mul,
                               IRNodeType::Div, IRNodeType::Min, IRNodeType::Max};
/** The ends of the scope's intervals that the Bounder running on this thread has handed out,
    by node, each with its simplified form once arithmetic has asked for it: a scope's ends need
    not be simplified (a pyramid's nested divisions, substituted into a loop's bounds), and are
    simplified where they are combined, and once. */
using ScopeEnds = std::vector<std::pair<const ExprNode *, Expr>>;  // (a few: searched in order)
thread_local ScopeEnds *t_scope_ends = nullptr;
thread_local RememberScopeEnds *t_remembered = nullptr;
Expr operand(const Expr &e) {
    if (!t_scope_ends) return e;
    auto it = std::find_if(t_scope_ends->begin(), t_scope_ends->end(), [&](const auto &p) { return p.first == e.get(); });
    if (it == t_scope_ends->end()) return e;
    if (!it->second.defined()) {
        it->second = t_remembered ? t_remembered->simplified(e) : simplify(e);
    }
    return it->second;
}
/** simplify(a op b) for bounds already simplified (each from simplified() or simplify(), a
    leaf, or a scope's end): only the new node's rules run. */
Expr simplified(BOp op, const Expr &a, const Expr &b) { return simplify_binary(kNodeOf[op], operand(a), operand(b)); }

// a op b for bound Exprs; undefined if either is, or if a constant result does not fit.
Expr bop(BOp op, const Expr &a, const Expr &b) {
    if (!a.defined() || !b.defined()) return Expr();
    Type t = a.type();
    i128 x, y, r = 0;
    if (t.is_int_or_uint() && cint(a, &x) && cint(b, &y)) {
        switch (op) {
        case BADD: r = x + y; break;
        case BSUB: r = x - y; break;
        case BMUL:
            if (__builtin_mul_overflow(x, y, &r)) return Expr();
            break;
        case BDIV: r = floordiv(x, y); break;
        case BMIN: r = x < y ? x : y; break;
        case BMAX: r = x > y ? x : y; break;
        }
        if (!representable(t, r)) return Expr();
        return mkc(t, r);
    }
    // Symbolic arithmetic in a wrapping type says nothing about bounds.
    if (t.is_int_or_uint() && !strict(t)) return Expr();
    Expr e = simplified(op, a, b);
    if (expr_size(e, kMaxBoundSize + 1) > kMaxBoundSize) return Expr();
    return e;
}

class NeedsRange : public IRVisitor {
public:
    explicit NeedsRange(const Scope &s) : sc(s) {}
    const Scope &sc;
    bool found = false;

protected:
    void visit(const Variable *op) override {
        if (sc.count(op->name)) found = true;
    }
    void visit(const Load *) override { found = true; }
    void visit(const Ramp *) override { found = true; }
    void visit(const VectorReduce *) override { found = true; }
    void visit(const Call *op) override {
        if (op->call_type != Call::Intrinsic) found = true;
        else IRVisitor::visit(op);
    }
};

// The value of op applied to two single points. Constants of Int(32)/Int(64) are combined
// exactly: an overflow gives "everything" (the simplifier builds differences such as a - b
// that the program never computes, so wrapping here would be wrong).
Interval point_op(BOp op, const Interval &A, const Interval &B) {
    if (strict(A.min.type()) && cint(A.min) && cint(B.min)) {
        Expr r = bop(op, A.min, B.min);
        return r.defined() ? point(r) : Interval::everything();
    }
    return point(simplified(op, A.min, B.min));
}

class Bounder {
public:
    explicit Bounder(const Scope &s) : sc(s), outer(t_scope_ends) { t_scope_ends = &ends; }
    ~Bounder() { t_scope_ends = outer; }
    Bounder(const Bounder &) = delete;
    Bounder &operator=(const Bounder &) = delete;
    const Scope &sc;
    std::vector<std::pair<std::string, Interval>> lets;
    ScopeEnds ends, *outer;

    Interval get(const Expr &e) { return sanitize(e.type().element_of(), get_raw(e)); }

    Interval sanitize(Type t, const Interval &I) {
        if (t.is_bool()) {
            if (I.is_single_point() || (cint(I.min) && cint(I.max))) return I;
            return bool_range();
        }
        if (t.is_int_or_uint() && !strict(t)) {
            if (I.is_single_point()) return I;
            i128 lo, hi;
            if (cint(I.min, &lo) && cint(I.max, &hi) && representable(t, lo) && representable(t, hi)) return I;
            return full_range(t);
        }
        return I;
    }

    Interval mul_iv(const Interval &A, const Interval &B) {
        if (A.is_single_point() && B.is_single_point()) return point_op(BMUL, A, B);
        if (B.is_single_point()) {
            int s = csign(B.min);
            if (s == 0) return point(B.min);
            if (s == 1) return Interval(bop(BMUL, A.min, B.min), bop(BMUL, A.max, B.min));
            if (s == -1) return Interval(bop(BMUL, A.max, B.min), bop(BMUL, A.min, B.min));
        }
        if (A.is_single_point() && csign(A.min) != 2) return mul_iv(B, A);
        if (A.is_bounded() && B.is_bounded()) {
            bool nonneg = csign(A.min) >= 0 && csign(A.min) <= 1 && csign(B.min) >= 0 && csign(B.min) <= 1;
            if (nonneg) return Interval(bop(BMUL, A.min, B.min), bop(BMUL, A.max, B.max));
            Expr p[4] = {bop(BMUL, A.min, B.min), bop(BMUL, A.min, B.max), bop(BMUL, A.max, B.min),
                         bop(BMUL, A.max, B.max)};
            for (auto &x : p)
                if (!x.defined()) return Interval::everything();
            return Interval(bop(BMIN, bop(BMIN, p[0], p[1]), bop(BMIN, p[2], p[3])),
                            bop(BMAX, bop(BMAX, p[0], p[1]), bop(BMAX, p[2], p[3])));
        }
        int sa = csign(A.min), sb = csign(B.min);
        if ((sa == 0 || sa == 1) && (sb == 0 || sb == 1))
            return Interval(bop(BMUL, A.min, B.min), bop(BMUL, A.max, B.max));
        return Interval::everything();
    }

    Interval div_iv(const Interval &A, const Interval &B, Type t) {
        if (A.is_single_point() && B.is_single_point()) return point_op(BDIV, A, B);
        if (B.is_single_point()) {
            int s = csign(B.min);
            if (s == 0 && t.is_int_or_uint()) return point(mkc(t, 0));
            if (s == 1) return Interval(bop(BDIV, A.min, B.min), bop(BDIV, A.max, B.min));
            if (s == -1) return Interval(bop(BDIV, A.max, B.min), bop(BDIV, A.min, B.min));
        }
        if (!A.is_bounded() || !B.is_bounded()) return Interval::everything();
        int smin = csign(B.min), smax = csign(B.max);
        if (smin == 1 || smax == -1) {
            Expr p[4] = {bop(BDIV, A.min, B.min), bop(BDIV, A.min, B.max), bop(BDIV, A.max, B.min),
                         bop(BDIV, A.max, B.max)};
            for (auto &x : p)
                if (!x.defined()) return Interval::everything();
            return Interval(bop(BMIN, bop(BMIN, p[0], p[1]), bop(BMIN, p[2], p[3])),
                            bop(BMAX, bop(BMAX, p[0], p[1]), bop(BMAX, p[2], p[3])));
        }
        if (t.is_int_or_uint()) {
            // |a / b| <= |a| for integers (and a / 0 == 0).
            Expr zero = mkc(t, 0);
            Expr m = bop(BMAX, bop(BSUB, zero, A.min), A.max);
            Expr lo = bop(BSUB, zero, m);
            if (!m.defined() || !lo.defined()) return Interval::everything();
            return Interval(lo, m);
        }
        return Interval::everything();
    }

    Interval mod_iv(const Interval &A, const Interval &B, Type t) {
        if (A.is_single_point() && B.is_single_point()) return point(simplify(Mod::make(A.min, B.min)));
        if (t.is_float()) {
            if (csign(B.min) == 1 && B.max.defined()) return Interval(FloatImm::make(t, 0), B.max);
            return Interval::everything();
        }
        i128 c;
        if (B.is_single_point() && cint(B.min, &c)) {
            if (c == 0) return point(mkc(t, 0));
            if (c > 0) {
                i128 lo, hi;
                if (cint(A.min, &lo) && cint(A.max, &hi) && floordiv(lo, c) == floordiv(hi, c))
                    return Interval(mkc(t, floormod(lo, c)), mkc(t, floormod(hi, c)));
                if (csign(A.min) >= 0 && csign(A.min) <= 1 && cint(A.max, &hi) && hi < c) return A;
                return Interval(mkc(t, 0), mkc(t, c - 1));
            }
            return Interval(mkc(t, c + 1), mkc(t, 0));
        }
        if (csign(B.min) == 1) return Interval(mkc(t, 0), bop(BSUB, B.max, mkc(t, 1)));
        if (B.is_bounded()) {
            Expr zero = mkc(t, 0), one = mkc(t, 1);
            Expr lo = bop(BMIN, bop(BADD, B.min, one), zero);
            Expr hi = bop(BMAX, bop(BSUB, B.max, one), zero);
            return Interval(lo, hi);
        }
        return Interval::everything();
    }

    Interval cmp_iv(IRNodeType op, const Expr &a, const Expr &b) {
        Interval A = get(a), B = get(b);
        if (op == IRNodeType::GT) {
            op = IRNodeType::LT;
            std::swap(A, B);
        } else if (op == IRNodeType::GE) {
            op = IRNodeType::LE;
            std::swap(A, B);
        }
        auto mk = [&](IRNodeType o, const Expr &x, const Expr &y) -> Expr {
            switch (o) {
            case IRNodeType::LT: return LT::make(x, y);
            case IRNodeType::LE: return LE::make(x, y);
            case IRNodeType::EQ: return EQ::make(x, y);
            default: return NE::make(x, y);
            }
        };
        if (A.is_single_point() && B.is_single_point()) return point(simplify(mk(op, A.min, B.min)));
        auto prove = [&](IRNodeType o, const Expr &x, const Expr &y) {
            return x.defined() && y.defined() && is_true(simplify(mk(o, x, y)));
        };
        Expr T = mkc(Bool(), 1), F = mkc(Bool(), 0);
        switch (op) {
        case IRNodeType::LT:
            if (prove(IRNodeType::LT, A.max, B.min)) return point(T);
            if (prove(IRNodeType::LE, B.max, A.min)) return point(F);
            break;
        case IRNodeType::LE:
            if (prove(IRNodeType::LE, A.max, B.min)) return point(T);
            if (prove(IRNodeType::LT, B.max, A.min)) return point(F);
            break;
        default:
            if (prove(IRNodeType::LT, A.max, B.min) || prove(IRNodeType::LT, B.max, A.min))
                return point(op == IRNodeType::EQ ? F : T);
            break;
        }
        return bool_range();
    }

    Interval cast_iv(Type t, const Expr &v) {
        Type te = t.element_of(), se = v.type().element_of();
        Interval V = get(v);
        if (V.is_single_point()) return point(simplify(Cast::make(te, V.min)));
        auto cast_side = [&](const Expr &x) { return x.defined() ? simplify(Cast::make(te, x)) : Expr(); };
        if (te.is_bool()) {
            i128 lo, hi;
            if (cint(V.min, &lo) && cint(V.max, &hi) && (lo > 0 || hi < 0)) return point(mkc(te, 1));
            return bool_range();
        }
        if (se.is_bool()) return Interval(cast_side(V.min), cast_side(V.max));
        if (te.is_int_or_uint() && se.is_int_or_uint()) {
            i128 lo, hi;
            if (cint(V.min, &lo) && cint(V.max, &hi)) {
                if (representable(te, lo) && representable(te, hi)) return Interval(mkc(te, lo), mkc(te, hi));
                return full_range(te);
            }
            bool widening = (te.is_int() == se.is_int() && te.bits() >= se.bits()) ||
                            (te.is_int() && se.is_uint() && te.bits() > se.bits());
            if (widening) return Interval(cast_side(V.min), cast_side(V.max));
            return full_range(te);
        }
        if (te.is_int_or_uint() && se.is_float()) {
            // Saturating: the type's range bounds everything.
            Expr lo = V.min.defined() ? cast_side(V.min) : mkc(te, tmin(te));
            Expr hi = V.max.defined() ? cast_side(V.max) : mkc(te, tmax(te));
            return Interval(lo, hi);
        }
        // int->float, float->float: monotone.
        return Interval(cast_side(V.min), cast_side(V.max));
    }

    Interval call_iv(const Call *op) {
        Type t = op->type.element_of();
        if (op->call_type != Call::Intrinsic) return value_range(t);
        if (op->name == "fma" && op->args.size() == 3 && t.is_float()) {
            // a * b + c rounded once: monotone in c, and over a box in a and b extreme at its
            // corners (rounding is monotone), so the corners' fma()s bound it exactly.
            Interval A = get(op->args[0]), B = get(op->args[1]), C = get(op->args[2]);
            if (!A.min.defined() || !A.max.defined() || !B.min.defined() || !B.max.defined()) return value_range(t);
            auto corners = [&](const Expr &c, BOp pick) {
                if (!c.defined()) return Expr();
                Expr r;
                for (const Expr &x : {A.min, A.max})
                    for (const Expr &y : {B.min, B.max}) {
                        Expr v = simplify(Call::make_intrinsic(t, "fma", {x, y, c}));
                        r = r.defined() ? bop(pick, r, v) : v;
                    }
                return r;
            };
            return Interval(corners(C.min, BMIN), corners(C.max, BMAX));
        }
        if (op->args.size() == 2 && t.is_int_or_uint() &&
            (op->name == "bitwise_and" || op->name == "bitwise_or" || op->name == "bitwise_xor" ||
             op->name == "shift_right")) {
            const std::string &n = op->name;
            Interval A = get(op->args[0]), B = get(op->args[1]);
            auto nonneg = [&](const Interval &I) { return t.is_uint() || csign(I.min) == 0 || csign(I.min) == 1; };
            Expr zero = mkc(t, 0);
            if (n == "shift_right") {
                // Shifting right by a non-negative amount moves a value toward 0 (or -1).
                if (!(op->args[1].type().is_uint() || csign(B.min) == 0 || csign(B.min) == 1)) return value_range(t);
                if (nonneg(A)) return Interval(zero, A.max);
                Expr lo = A.min.defined() ? bop(BMIN, A.min, mkc(t, -1)) : Expr();
                Expr hi = A.max.defined() ? bop(BMAX, A.max, zero) : Expr();
                return Interval(lo, hi);
            }
            bool na = nonneg(A), nb = nonneg(B);
            if (n == "bitwise_and") {
                // x & y <= y for y >= 0, whatever x is.
                if (na && nb) {
                    if (A.max.defined() && B.max.defined()) return Interval(zero, bop(BMIN, A.max, B.max));
                    return Interval(zero, A.max.defined() ? A.max : B.max);
                }
                if (na && A.max.defined()) return Interval(zero, A.max);
                if (nb && B.max.defined()) return Interval(zero, B.max);
                return value_range(t);
            }
            // x | y and x ^ y lie in [0, x + y] for x, y >= 0.
            if (na && nb && A.max.defined() && B.max.defined()) {
                i128 am, bm;
                if (cint(A.max, &am) && cint(B.max, &bm) && am + bm <= tmax(t)) return Interval(zero, mkc(t, am + bm));
                if (!strict(t)) return value_range(t);
                return Interval(zero, bop(BADD, A.max, B.max));
            }
            return value_range(t);
        }
        if (op->name == "print" || op->name == "trace") return get(op->args[0]);
        if (op->name == "print_when") return get(op->args[1]);
        if (op->args.size() == 1) {
            const std::string &n = op->name;
            if (n == "likely") return get(op->args[0]);
            Interval X = get(op->args[0]);
            if (X.is_single_point())
                return point(simplify(Call::make_intrinsic(t, n, {X.min})));
            auto app = [&](const Expr &x) {
                return x.defined() ? simplify(Call::make_intrinsic(t, n, {x})) : Expr();
            };
            if (n == "floor" || n == "ceil" || n == "round") return Interval(app(X.min), app(X.max));
            if (t.is_float() && (n == "sin" || n == "cos" || n == "tanh"))
                return Interval(FloatImm::make(t, -1.0), FloatImm::make(t, 1.0));
            if (t.is_float() && (n == "atan" || n == "asin"))  // (rounded outwards: float pi/2 is above the real one)
                return Interval(FloatImm::make(t, -1.5707964), FloatImm::make(t, 1.5707964));
            if (t.is_float() && n == "acos") return Interval(FloatImm::make(t, 0.0), FloatImm::make(t, 3.1415927));
            if (t.is_float() && n == "exp")
                return Interval(X.min.defined() ? app(X.min) : FloatImm::make(t, 0.0), app(X.max));
            if (t.is_float() && n == "sqrt") {
                int s = csign(X.min);
                return Interval(s == 0 || s == 1 ? app(X.min) : FloatImm::make(t, 0.0), app(X.max));
            }
            if (t.is_float() && n == "log" && (csign(X.min) == 1)) return Interval(app(X.min), app(X.max));
            if (n == "abs" && op->args[0].type().element_of() == t) {
                if (t.is_uint()) return X;
                int smin = csign(X.min), smax = csign(X.max);
                if (smin == 0 || smin == 1) return X;
                Expr zero = t.is_float() ? FloatImm::make(t, 0.0) : mkc(t, 0);
                Expr nmin = bop(BSUB, zero, X.min), nmax = bop(BSUB, zero, X.max);
                if (smax == 0 || smax == -1) return Interval(nmax, nmin);
                Expr lo = (t.is_float() || X.min.defined()) ? zero : Expr();
                Expr hi = (nmin.defined() && X.max.defined()) ? bop(BMAX, nmin, X.max) : Expr();
                return Interval(lo, hi);
            }
        }
        return value_range(t);
    }

    Interval get_raw(const Expr &e) {
        if (stack_low()) return on_large_stack<Interval>([&] { return get_raw(e); });
        const ExprNode *n = e.get();
        switch (n->node_type) {
        case IRNodeType::IntImm:
        case IRNodeType::UIntImm:
        case IRNodeType::FloatImm: return point(e);
        case IRNodeType::StringImm: return Interval::everything();
        case IRNodeType::Variable: {
            auto *op = static_cast<const Variable *>(n);
            for (auto it = lets.rbegin(); it != lets.rend(); ++it)
                if (it->first == op->name) return it->second;
            auto it = sc.find(op->name);
            if (it != sc.end()) {
                for (const Expr &end : {it->second.min, it->second.max})
                    if (end.defined() && !end.as<IntImm>() && !end.as<Variable>() &&
                        std::none_of(ends.begin(), ends.end(), [&](const auto &p) { return p.first == end.get(); }))
                        ends.emplace_back(end.get(), Expr());
                return it->second;
            }
            return point(e);
        }
        case IRNodeType::Cast: return cast_iv(e.type(), static_cast<const Cast *>(n)->value);
        case IRNodeType::Add: {
            auto *op = static_cast<const Add *>(n);
            Interval A = get(op->a), B = get(op->b);
            if (A.is_single_point() && B.is_single_point()) return point_op(BADD, A, B);
            return Interval(bop(BADD, A.min, B.min), bop(BADD, A.max, B.max));
        }
        case IRNodeType::Sub: {
            auto *op = static_cast<const Sub *>(n);
            Interval A = get(op->a), B = get(op->b);
            if (A.is_single_point() && B.is_single_point()) return point_op(BSUB, A, B);
            return Interval(bop(BSUB, A.min, B.max), bop(BSUB, A.max, B.min));
        }
        case IRNodeType::Mul: {
            auto *op = static_cast<const Mul *>(n);
            return mul_iv(get(op->a), get(op->b));
        }
        case IRNodeType::Div: {
            auto *op = static_cast<const Div *>(n);
            return div_iv(get(op->a), get(op->b), e.type().element_of());
        }
        case IRNodeType::Mod: {
            auto *op = static_cast<const Mod *>(n);
            return mod_iv(get(op->a), get(op->b), e.type().element_of());
        }
        case IRNodeType::Min: {
            auto *op = static_cast<const Min *>(n);
            Interval A = get(op->a), B = get(op->b);
            if (A.is_single_point() && B.is_single_point()) return point_op(BMIN, A, B);
            Expr lo = bop(BMIN, A.min, B.min);
            Expr hi = (A.max.defined() && B.max.defined()) ? bop(BMIN, A.max, B.max)
                                                          : (A.max.defined() ? A.max : B.max);
            return Interval(lo, hi);
        }
        case IRNodeType::Max: {
            auto *op = static_cast<const Max *>(n);
            Interval A = get(op->a), B = get(op->b);
            if (A.is_single_point() && B.is_single_point()) return point_op(BMAX, A, B);
            Expr lo = (A.min.defined() && B.min.defined()) ? bop(BMAX, A.min, B.min)
                                                          : (A.min.defined() ? A.min : B.min);
            Expr hi = bop(BMAX, A.max, B.max);
            return Interval(lo, hi);
        }
        case IRNodeType::EQ: return cmp_iv(IRNodeType::EQ, static_cast<const EQ *>(n)->a, static_cast<const EQ *>(n)->b);
        case IRNodeType::NE: return cmp_iv(IRNodeType::NE, static_cast<const NE *>(n)->a, static_cast<const NE *>(n)->b);
        case IRNodeType::LT: return cmp_iv(IRNodeType::LT, static_cast<const LT *>(n)->a, static_cast<const LT *>(n)->b);
        case IRNodeType::LE: return cmp_iv(IRNodeType::LE, static_cast<const LE *>(n)->a, static_cast<const LE *>(n)->b);
        case IRNodeType::GT: return cmp_iv(IRNodeType::GT, static_cast<const GT *>(n)->a, static_cast<const GT *>(n)->b);
        case IRNodeType::GE: return cmp_iv(IRNodeType::GE, static_cast<const GE *>(n)->a, static_cast<const GE *>(n)->b);
        case IRNodeType::And:
        case IRNodeType::Or: {
            bool is_and = n->node_type == IRNodeType::And;
            Expr a = is_and ? static_cast<const And *>(n)->a : static_cast<const Or *>(n)->a;
            Expr b = is_and ? static_cast<const And *>(n)->b : static_cast<const Or *>(n)->b;
            Interval A = get(a), B = get(b);
            auto mk = [&](const Expr &x, const Expr &y) {
                return simplify(is_and ? And::make(x, y) : Or::make(x, y));
            };
            if (A.is_single_point() && B.is_single_point()) return point(mk(A.min, B.min));
            return Interval(mk(A.min, B.min), mk(A.max, B.max));
        }
        case IRNodeType::Not: {
            Interval A = get(static_cast<const Not *>(n)->a);
            if (A.is_single_point()) return point(simplify(Not::make(A.min)));
            return Interval(simplify(Not::make(A.max)), simplify(Not::make(A.min)));
        }
        case IRNodeType::Select: {
            auto *op = static_cast<const Select *>(n);
            Interval C = get(op->condition);
            i128 c;
            if (C.is_single_point() && cint(C.min, &c)) return get(c ? op->true_value : op->false_value);
            Interval T = get(op->true_value), F = get(op->false_value);
            if (C.is_single_point() && T.is_single_point() && F.is_single_point())
                return point(simplify(Select::make(C.min, T.min, F.min)));
            return interval_union(T, F);
        }
        case IRNodeType::Load: return value_range(e.type().element_of());
        case IRNodeType::Ramp: {
            auto *op = static_cast<const Ramp *>(n);
            Type s = op->base.type();
            Interval B = get(op->base), S = get(op->stride);
            Interval L(mkc(s, 0), s.is_float() ? FloatImm::make(s, op->lanes - 1) : mkc(s, op->lanes - 1));
            if (s.is_int_or_uint() && !representable(s, op->lanes - 1)) return Interval::everything();
            Interval M = mul_iv(S, L);
            return Interval(bop(BADD, B.min, M.min), bop(BADD, B.max, M.max));
        }
        case IRNodeType::Broadcast: return get(static_cast<const Broadcast *>(n)->value);
        case IRNodeType::Let: {
            auto *op = static_cast<const Let *>(n);
            Interval V = get(op->value);
            lets.emplace_back(op->name, V);
            Interval R = get(op->body);
            lets.pop_back();
            return R;
        }
        case IRNodeType::Call: return call_iv(static_cast<const Call *>(n));
        case IRNodeType::VectorReduce: {
            auto *op = static_cast<const VectorReduce *>(n);
            Interval V = get(op->value);
            Type s = e.type().element_of();
            int factor = op->value.type().lanes() / e.type().lanes();
            switch (op->op) {
            case VectorReduce::Min:
            case VectorReduce::Max: return V;
            case VectorReduce::Add:
                if (s.is_int_or_uint() && !representable(s, factor)) return Interval::everything();
                return mul_iv(V, point(s.is_float() ? FloatImm::make(s, factor) : mkc(s, factor)));
            default: return Interval::everything();
            }
        }
        default: return Interval::everything();
        }
    }
};

}  // namespace

RememberScopeEnds::RememberScopeEnds() : outer_(t_remembered) { t_remembered = this; }
RememberScopeEnds::~RememberScopeEnds() { t_remembered = outer_; }
const Expr &RememberScopeEnds::simplified(const Expr &end) {
    auto r = memo_.find(end.get());
    if (r == memo_.end()) r = memo_.emplace(end.get(), std::make_pair(end, simplify(end))).first;
    return r->second.second;
}

Interval bounds_of_expr_in_scope(const Expr &e, const Scope &scope) {
    if (!e.defined()) return Interval::everything();
    NeedsRange nr(scope);
    nr.include(e);
    if (!nr.found && e.type().is_scalar()) return point(simplify(e));
    Bounder b(scope);
    return b.get(e);
}

namespace {
/** e as x + c with c a constant (c = 0 where e has no constant term). */
const Expr &split_offset(const Expr &e, int64_t *c) {
    *c = 0;
    if (auto a = e.as<Add>())
        if (is_const_int(a->b, c)) return a->a;
    if (auto a = e.as<Sub>())
        if (is_const_int(a->b, c) && *c != INT64_MIN) {
            *c = -*c;
            return a->a;
        }
    return e;
}
/** min (take_min) or max of a and b, simplified; without the simplifier where both are one
    expression plus different constants (a stencil's taps, unioned one by one). */
Expr min_or_max(bool take_min, const Expr &a, const Expr &b) {
    if (a.same_as(b)) return a;
    int64_t ca, cb;
    const Expr &xa = split_offset(a, &ca), &xb = split_offset(b, &cb);
    if (a.type() == b.type() && a.type().is_int() && a.type().is_scalar() && (xa.same_as(xb) || equal(xa, xb)))
        return (ca <= cb) == take_min ? a : b;
    return simplify(take_min ? Min::make(a, b) : Max::make(a, b));
}
}  // namespace

Interval interval_union(const Interval &a, const Interval &b) {
    Expr lo, hi;
    if (a.min.defined() && b.min.defined()) lo = min_or_max(true, a.min, b.min);
    if (a.max.defined() && b.max.defined()) hi = min_or_max(false, a.max, b.max);
    return Interval(lo, hi);
}

Interval interval_intersection(const Interval &a, const Interval &b) {
    Expr lo, hi;
    if (a.min.defined() && b.min.defined()) lo = simplify(Max::make(a.min, b.min));
    else lo = a.min.defined() ? a.min : b.min;
    if (a.max.defined() && b.max.defined()) hi = simplify(Min::make(a.max, b.max));
    else hi = a.max.defined() ? a.max : b.max;
    return Interval(lo, hi);
}

namespace {
/** (min(a, b) - c) -> min(a - c, b - c), likewise for max and +, so that the linear parts
    of a region's extent cancel and its bounds become constant. */
class Distribute : public IRMutator {
    int budget = 256;  // pushes: each copies an operand into both sides (nested mins grow fast)

protected:
    Expr push(IRNodeType op, const Expr &a, const Expr &b, bool a_is_mm) {
        if (--budget < 0) return rebuild_binary(op, a, b);
        const BinaryExprNode *mm = static_cast<const BinaryExprNode *>((a_is_mm ? a : b).get());
        const Expr &other = a_is_mm ? b : a;
        Expr l = a_is_mm ? rebuild_binary(op, mm->a, other) : rebuild_binary(op, other, mm->a);
        Expr r = a_is_mm ? rebuild_binary(op, mm->b, other) : rebuild_binary(op, other, mm->b);
        l = mutate(simplify(l));
        r = mutate(simplify(r));
        if (op == IRNodeType::Sub && !a_is_mm)  // c - min(x, y) = max(c - x, c - y)
            return mm->node_type == IRNodeType::Min ? Max::make(l, r) : Min::make(l, r);
        return mm->node_type == IRNodeType::Min ? Min::make(l, r) : Max::make(l, r);
    }
    static bool is_mm(const Expr &e) { return e.as<Min>() || e.as<Max>(); }
    Expr visit(const Add *op, const Expr &e) override {
        Expr a = mutate(op->a), b = mutate(op->b);
        if (is_mm(a)) return push(IRNodeType::Add, a, b, true);
        if (is_mm(b)) return push(IRNodeType::Add, a, b, false);
        return Add::make(a, b);
    }
    Expr visit(const Sub *op, const Expr &e) override {
        Expr a = mutate(op->a), b = mutate(op->b);
        if (is_mm(a)) return push(IRNodeType::Sub, a, b, true);
        if (is_mm(b)) return push(IRNodeType::Sub, a, b, false);
        return Sub::make(a, b);
    }
};

/** In a sum, min(x + c, y) - min(x, y) -> clamp(y - x, 0, c) and max(x + c, y) - max(x, y) ->
    clamp(x + c - y, 0, c) (c >= 0; for c < 0 the negated pair): the extent of a region clipped
    at both ends (a tile at an image's edge: min(t + 1, M) - min(t, M) + 1) then has the constant
    bound c + 1, which interval arithmetic, losing the correlation of the two sides, cannot see. */
class PairClipped : public IRMutator {
    struct Term {
        Expr e;
        int sign;
    };
    void flatten(const Expr &e, int sign, std::vector<Term> &out) {
        if (auto *a = e.as<Add>()) {
            flatten(a->a, sign, out);
            flatten(a->b, sign, out);
        } else if (auto *s = e.as<Sub>()) {
            flatten(s->a, sign, out);
            flatten(s->b, -sign, out);
        } else {
            out.push_back({mutate(e), sign});
        }
    }
    static Expr clamp0(const Expr &v, i128 c) {
        Type t = v.type();
        return Min::make(Max::make(v, mkc(t, 0)), mkc(t, c));
    }
    /** plus - minus as one clamp, or undefined. */
    static Expr pair(const Expr &plus, const Expr &minus) {
        // (x + c) / k - x / k == (x % k + c) / k for k > 0 (division rounds down, the
        // remainder is in [0, k)): bounded by (k - 1 + c) / k whatever x is (the rows an
        // upsampling read y / 2 and (y + 1) / 2 needs).
        if (auto *pd = plus.as<Div>()) {
            auto *md = minus.as<Div>();
            i128 k, c;
            if (md && cint(pd->b, &k) && k > 0 && equal(pd->b, md->b) && cint(simplify(Sub::make(pd->a, md->a)), &c))
                return Div::make(Add::make(Mod::make(md->a, pd->b), mkc(md->a.type(), c)), pd->b);
            return Expr();
        }
        bool is_min = plus.as<Min>() != nullptr;
        if (!(is_min || plus.as<Max>()) || plus.get()->node_type != minus.get()->node_type) return Expr();
        auto *pb = static_cast<const BinaryExprNode *>(plus.get());
        auto *mb = static_cast<const BinaryExprNode *>(minus.get());
        const Expr pops[2] = {pb->a, pb->b}, mops[2] = {mb->a, mb->b};
        for (int i = 0; i < 2; i++) {
            for (int j = 0; j < 2; j++) {
                if (!equal(pops[1 - i], mops[1 - j])) continue;
                const Expr &xa = pops[i], &xb = mops[j], &y = pops[1 - i];
                i128 c;
                if (!cint(simplify(Sub::make(xa, xb)), &c)) continue;
                // xa = xb + c.
                Expr zero = mkc(y.type(), 0);
                if (is_min) return c >= 0 ? clamp0(Sub::make(y, xb), c) : Sub::make(zero, clamp0(Sub::make(y, xa), -c));
                return c >= 0 ? clamp0(Sub::make(xa, y), c) : Sub::make(zero, clamp0(Sub::make(xb, y), -c));
            }
        }
        return Expr();
    }
    Expr sum(const Expr &e) {
        std::vector<Term> terms;
        flatten(e, 1, terms);
        for (size_t i = 0; i < terms.size(); i++) {
            if (!terms[i].e.defined()) continue;
            for (size_t j = 0; j < terms.size(); j++) {
                if (i == j || !terms[j].e.defined() || terms[i].sign != 1 || terms[j].sign != -1) continue;
                Expr p = pair(terms[i].e, terms[j].e);
                if (!p.defined()) continue;
                terms[i].e = p;
                terms[j].e = Expr();
                break;
            }
        }
        Expr r;
        for (auto &t : terms) {
            if (!t.e.defined()) continue;
            if (!r.defined()) r = t.sign > 0 ? t.e : Sub::make(mkc(t.e.type(), 0), t.e);
            else r = t.sign > 0 ? Add::make(r, t.e) : Sub::make(r, t.e);
        }
        return r.defined() ? r : mkc(e.type(), 0);
    }

protected:
    Expr visit(const Add *op, const Expr &e) override { return strict(e.type()) && e.type().is_scalar() ? sum(e) : IRMutator::visit(op, e); }
    Expr visit(const Sub *op, const Expr &e) override { return strict(e.type()) && e.type().is_scalar() ? sum(e) : IRMutator::visit(op, e); }
};

}  // namespace

namespace {
/** The constant range [lo, hi] that scope gives variable n, if it gives one (not empty). */
bool constant_range(const Scope &scope, const std::string &n, int64_t *lo, int64_t *hi) {
    auto it = scope.find(n);
    return it != scope.end() && it->second.min.defined() && it->second.max.defined() &&
           is_const_int(simplify(it->second.min), lo) && is_const_int(simplify(it->second.max), hi) && *hi >= *lo;
}
}  // namespace

bool enumerated_max(const Expr &e, const Scope &scope, int64_t limit, int64_t *out) {
    class Vars : public IRVisitor {
    public:
        std::set<std::string> names;
        bool other = false;  // loads, calls: not a function of the variables alone

    protected:
        void visit(const Variable *op) override { names.insert(op->name); }
        void visit(const Load *) override { other = true; }
        void visit(const Call *op) override {
            other = other || op->call_type != Call::Intrinsic;
            IRVisitor::visit(op);
        }
        void visit(const Let *) override { other = true; }
    } vars;
    vars.include(e);
    if (vars.other || vars.names.empty()) return false;
    std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> ranges;
    int64_t points = 1;
    for (auto &n : vars.names) {
        int64_t lo, hi;
        if (!constant_range(scope, n, &lo, &hi)) return false;
        points *= hi - lo + 1;
        if (points > limit) return false;
        ranges.push_back({n, {lo, hi}});
    }
    std::vector<int64_t> at(ranges.size());
    for (size_t i = 0; i < ranges.size(); i++) at[i] = ranges[i].second.first;
    bool any = false;
    int64_t best = 0;
    for (int64_t p = 0; p < points; p++) {
        std::map<std::string, Expr> subs;
        for (size_t i = 0; i < ranges.size(); i++) subs[ranges[i].first] = make_const(Int(32), at[i]);
        int64_t v;
        if (!is_const_int(simplify(substitute(subs, e)), &v)) return false;
        best = any ? std::max(best, v) : v;
        any = true;
        for (size_t i = 0; i < ranges.size(); i++) {  // the next combination
            if (++at[i] <= ranges[i].second.second) break;
            at[i] = ranges[i].second.first;
        }
    }
    *out = best;
    return any;
}

namespace {
/** An upper bound of a - b over integers, by cases on the min, max and select at the top of
    either side (each rule sound on its own; the tightest that succeeds is kept):
      max(x, y) - b <= max(ub(x - b), ub(y - b));  min(x, y) - b <= min(ub(x - b), ub(y - b));
      a - min(x, y) <= max(ub(a - x), ub(a - y));  a - max(x, y) <= min(ub(a - x), ub(a - y));
      op(x, c) - op(y, c) <= max(ub(x - y), 0) for op min or max (both move by at most what
      their operand moves: a window clamped at an edge is no wider than the unclamped one);
    leaves are simplified and bounded by interval arithmetic in scope. Pairs already bounded are
    remembered (the sides share subexpressions), and a budget of steps caps the work however
    large the expressions. */
class DifferenceBound {
public:
    explicit DifferenceBound(const Scope &s) : scope(s) {}
    bool diff(const Expr &a, const Expr &b, int64_t *out) {
        auto key = std::make_pair(a.get(), b.get());
        auto it = memo.find(key);
        if (it != memo.end()) {
            if (it->second.first) *out = it->second.second;
            return it->second.first;
        }
        bool r = diff_uncached(a, b, out);
        if (budget >= 0) memo[key] = {r, r ? *out : 0};
        return r;
    }
    bool diff_uncached(const Expr &a, const Expr &b, int64_t *out) {
        if (--budget < 0) return false;
        int64_t c = 0, x = 0, y = 0;
        if (is_const_int(b, &c)) {
            if (!upper(a, &x)) return false;
            *out = x - c;
            return true;
        }
        if (auto *p = a.as<Add>())
            if (is_const_int(p->b, &c)) return diff(p->a, b, &x) && (*out = x + c, true);
        if (auto *p = a.as<Sub>())
            if (is_const_int(p->b, &c)) return diff(p->a, b, &x) && (*out = x - c, true);
        if (auto *p = b.as<Add>())
            if (is_const_int(p->b, &c)) return diff(a, p->a, &x) && (*out = x - c, true);
        if (auto *p = b.as<Sub>())
            if (is_const_int(p->b, &c)) return diff(a, p->a, &x) && (*out = x + c, true);
        bool ok = false;
        int64_t best = 0;
        auto take = [&](int64_t v) {
            best = ok ? std::min(best, v) : v;
            ok = true;
        };
        if ((a.as<Min>() || a.as<Max>()) && a.get()->node_type == b.get()->node_type) {
            auto *pa = static_cast<const BinaryExprNode *>(a.get());
            auto *pb = static_cast<const BinaryExprNode *>(b.get());
            const Expr ao[2] = {pa->a, pa->b}, bo[2] = {pb->a, pb->b};
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++)
                    if (equal(ao[1 - i], bo[1 - j]) && diff(ao[i], bo[j], &x)) take(std::max<int64_t>(x, 0));
            if (ok && best == 0) return *out = 0, true;
        }
        if (auto *p = a.as<Max>()) {
            if (diff(p->a, b, &x) && diff(p->b, b, &y)) take(std::max(x, y));
        } else if (auto *p = a.as<Min>()) {
            if (diff(p->a, b, &x)) take(x);
            if (diff(p->b, b, &y)) take(y);
        } else if (auto *p = a.as<Select>()) {
            if (diff(p->true_value, b, &x) && diff(p->false_value, b, &y)) take(std::max(x, y));
        } else if (auto *p = b.as<Min>()) {
            if (diff(a, p->a, &x) && diff(a, p->b, &y)) take(std::max(x, y));
        } else if (auto *p = b.as<Max>()) {
            if (diff(a, p->a, &x)) take(x);
            if (diff(a, p->b, &y)) take(y);
        } else if (auto *p = b.as<Select>()) {
            if (diff(a, p->true_value, &x) && diff(a, p->false_value, &y)) take(std::max(x, y));
        } else if (leaf(simplify(Sub::make(a, b)), &x)) {
            take(x);
        }
        if (ok) *out = best;
        return ok;
    }
    /** An upper bound of e (a difference at its top is bounded by diff). */
    bool upper(const Expr &e, int64_t *out) {
        if (--budget < 0) return false;
        if (is_const_int(e, out)) return true;
        int64_t c = 0, x = 0, y = 0;
        if (auto *p = e.as<Add>()) {
            if (is_const_int(p->b, &c)) return upper(p->a, &x) && (*out = x + c, true);
            if (is_const_int(p->a, &c)) return upper(p->b, &x) && (*out = x + c, true);
        }
        if (auto *p = e.as<Sub>()) return diff(p->a, p->b, out);
        if (auto *p = e.as<Max>()) return upper(p->a, &x) && upper(p->b, &y) && (*out = std::max(x, y), true);
        if (auto *p = e.as<Min>()) {
            bool ka = upper(p->a, &x), kb = upper(p->b, &y);
            if (ka && kb) *out = std::min(x, y);
            else if (ka || kb) *out = ka ? x : y;
            return ka || kb;
        }
        if (auto *p = e.as<Select>()) return upper(p->true_value, &x) && upper(p->false_value, &y) && (*out = std::max(x, y), true);
        return leaf(e, out);
    }

private:
    const Scope &scope;
    int budget = 4096;
    std::map<std::pair<const void *, const void *>, std::pair<bool, int64_t>> memo;
    bool leaf(const Expr &e, int64_t *out) {
        if (is_const_int(e, out)) return true;
        Interval I = bounds_of_expr_in_scope(e, scope);
        return I.max.defined() && is_const_int(simplify(I.max), out);
    }
};
}  // namespace

bool upper_bound_of_difference(const Expr &a, const Expr &b, const Scope &scope, int64_t *out) {
    if (!a.type().is_int() || !b.type().is_int() || !a.type().is_scalar() || a.type() != b.type() || a.type().bits() != 32) return false;
    DifferenceBound d(scope);
    return d.diff(a, b, out);
}

namespace {
/** The bound of constant_upper_bound_in_scope, of the simplified e, without residue classes. */
bool direct_upper_bound(const Expr &e, const Scope &scope, int64_t *out) {
    if (is_const_int(e, out)) return true;
    Interval I = bounds_of_expr_in_scope(e, scope);
    int64_t bound = 0, exact = 0;
    Expr hi = I.max.defined() ? simplify(I.max) : Expr();
    bool ok = hi.defined() && is_const_int(hi, &bound);
    // Variables the scope does not bound stay symbolic in I: a bound from the structure alone.
    int64_t sb;
    if (!ok && structural_bound(hi.defined() ? hi : e, true, &sb)) {
        bound = ok ? std::min(bound, sb) : sb;
        ok = true;
    }
    // Windows clamped at an edge: the difference of two clamps, term by term.
    int64_t db;
    if (e.type().is_int() && e.type().bits() == 32 && e.type().is_scalar() && DifferenceBound(scope).upper(e, &db)) {
        bound = ok ? std::min(bound, db) : db;
        ok = true;
    }
    // Where the interval bound may be loose and the variables take few values: the exact one.
    if (enumerated_max(e, scope, 64, &exact)) {
        bound = ok ? std::min(bound, exact) : exact;
        ok = true;
    }
    if (ok) *out = bound;
    return ok;
}

/** A bound by residue classes. Where e divides a variable of constant range by constants (a
    window of rows y / 2 - 1 to (y + 1) / 2 + 1 of a half-height producer), interval arithmetic
    takes the quotients apart, and the width's bound grows with the loop (y / 2 and (y + 1) / 2
    both anywhere in [0, n / 2]). With y = D * q + r for each r in [0, D) (D the divisors' least
    common multiple) every such quotient is D / d * q plus a constant, and the terms in q cancel.
    At most two variables and 64 classes in all; false where a class has no bound. */
bool residue_class_bound(const Expr &e, const Scope &scope, int64_t *out) {
    class Divided : public IRVisitor {
    public:
        std::set<std::string> names;
        int64_t lcm = 1;
        bool too_many = false;

    protected:
        void visit_division(const Expr &a, const Expr &b) {
            int64_t d;
            if (!a.type().is_int() || !a.type().is_scalar() || !is_const_int(b, &d) || d <= 1) return;
            class Names : public IRVisitor {
            public:
                std::set<std::string> *out;

            protected:
                // (Loop variables: 32-bit, as what replaces them.)
                void visit(const Variable *op) override {
                    if (op->type == Int(32)) out->insert(op->name);
                }
            } n;
            n.out = &names;
            n.include(a);
            lcm = std::lcm(lcm, d);
            if (lcm > 16) too_many = true;
        }
        void visit(const Div *op) override { visit_division(op->a, op->b), IRVisitor::visit(op); }
        void visit(const Mod *op) override { visit_division(op->a, op->b), IRVisitor::visit(op); }
    } divided;
    divided.include(e);
    if (divided.too_many || divided.lcm == 1) return false;
    const int64_t D = divided.lcm;
    struct Var {
        std::string name;
        int64_t lo, hi;
    };
    std::vector<Var> vars;
    int64_t classes = 1;
    for (auto &n : divided.names) {
        int64_t lo, hi;
        if (!constant_range(scope, n, &lo, &hi)) continue;
        if (hi - lo + 1 <= D) continue;  // few values: enumerated as they are
        vars.push_back({n, lo, hi});
        classes *= D;
        if (vars.size() > 2 || classes > 64) return false;
    }
    if (vars.empty()) return false;
    std::vector<int64_t> r(vars.size(), 0);
    bool any = false;
    int64_t best = 0;
    for (int64_t c = 0; c < classes; c++) {
        Scope s = scope;
        std::map<std::string, Expr> subs;
        bool empty = false;
        for (size_t i = 0; i < vars.size(); i++) {
            // v = D * q + r, q in [ceil((lo - r) / D), floor((hi - r) / D)].
            int64_t qlo = (int64_t)-floordiv(r[i] - vars[i].lo, D), qhi = (int64_t)floordiv(vars[i].hi - r[i], D);
            if (qlo > qhi) empty = true;
            std::string q = vars[i].name + ".residue" + std::to_string(r[i]);
            Expr qv = Variable::make(Int(32), q);
            s.erase(vars[i].name);
            s[q] = Interval(make_const(Int(32), qlo), make_const(Int(32), qhi));
            subs[vars[i].name] = Add::make(Mul::make(qv, make_const(Int(32), D)), make_const(Int(32), r[i]));
        }
        for (size_t i = 0; i < vars.size(); i++) {  // the next class
            if (++r[i] < D) break;
            r[i] = 0;
        }
        if (empty) continue;
        int64_t b;
        if (!direct_upper_bound(simplify(substitute(subs, e)), s, &b)) return false;
        best = any ? std::max(best, b) : b;
        any = true;
    }
    if (any) *out = best;
    return any;
}
}  // namespace

bool constant_upper_bound_in_scope(Expr e, const Scope &scope, int64_t *out) {
    if (auto c = e.as<Cast>())
        if (c->value.type().is_int_or_uint()) e = c->value;
    e = simplify(PairClipped().mutate(simplify(e)));
    if (is_const_int(e, out)) return true;
    e = simplify(Distribute().mutate(e));
    int64_t bound = 0, classes = 0;
    bool ok = direct_upper_bound(e, scope, &bound);
    if (residue_class_bound(e, scope, &classes)) {
        bound = ok ? std::min(bound, classes) : classes;
        ok = true;
    }
    if (ok) *out = bound;
    return ok;
}

}  // namespace internal
}  // namespace weft
