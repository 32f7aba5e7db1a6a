// See lower/NarrowArithmetic.h.
#include "lower/NarrowArithmetic.h"
#include "ir/IRVisitor.h"

namespace weft {
namespace internal {

Expr cast_to_f32_round_to_odd(const Expr &x) {
    Type t = x.type();
    int l = t.lanes();
    std::string xn = unique_name('r'), rn = unique_name('r');
    Expr xv = Variable::make(t, xn);
    Expr r = Variable::make(Float(32, l), rn);
    Expr back = Cast::make(t, r);  // (float to int saturates: then it differs from x, or x is the limit)
    Expr inexact = NE::make(back, xv);
    Expr away;  // |r| > |x|
    if (t.is_float()) away = GT::make(Call::make_intrinsic(t, "abs", {back}), Call::make_intrinsic(t, "abs", {xv}));
    else if (t.is_uint()) away = GT::make(back, xv);
    else away = Or::make(And::make(GT::make(xv, make_zero(t)), GT::make(back, xv)),
                         And::make(LT::make(xv, make_zero(t)), LT::make(back, xv)));
    Type u = UInt(32, l);
    Expr bits = Call::make_intrinsic(u, "reinterpret", {r});
    Expr toward_zero = Select::make(away, Sub::make(bits, make_one(u)), bits);
    Expr odd = Call::make_intrinsic(u, "bitwise_or", {toward_zero, make_one(u)});
    Expr res = Call::make_intrinsic(Float(32, l), "reinterpret", {Select::make(inexact, odd, bits)});
    return Let::make(xn, x, Let::make(rn, Cast::make(Float(32, l), xv), res));
}

namespace {

Type f32_like(const Expr &e) { return Float(32, e.type().lanes()); }
Expr to_f32(const Expr &e) { return e.type().element_of() == Float(32) ? e : Cast::make(f32_like(e), e); }

/** The conversion of v to t where one of them is a 16-bit float, in conversions to and from float32. */
Expr convert(Type t, const Expr &v) {
    Type to = t.element_of(), from = v.type().element_of();
    if (to == from) return v;
    if (to == Float(32) || from == Float(32)) return Cast::make(t, v);  // the backends' conversions
    if (!to.is_16bit_float()) return Cast::make(t, Cast::make(f32_like(v), v));  // float32 holds a 16-bit float exactly
    // To a 16-bit float from something other than float32.
    bool exact_in_f32 = from.is_16bit_float() || from.is_bool() || (from.is_int_or_uint() && from.bits() <= 16);
    // float16's range ends below 2^24: a wide integer rounded to float32 first lands where float16
    // overflows, or is exact. bfloat16 and float64 sources need the rounding to odd.
    bool through_f32 = exact_in_f32 || (!to.is_bfloat() && from.is_int_or_uint());
    Expr f = through_f32 ? Cast::make(f32_like(v), v) : cast_to_f32_round_to_odd(v);
    return Cast::make(t, f);
}

bool is_math(const std::string &n) {
    static const char *names[] = {"sqrt", "exp", "log", "pow", "sin", "cos", "floor", "ceil", "round", "abs", "fma"};
    for (const char *m : names)
        if (n == m) return true;
    return is_libm_call(n);
}

int64_t shift_const(const Expr &n, bool *is_const) {
    int64_t v = 0;
    uint64_t uv = 0;
    *is_const = true;
    if (is_const_int(n, &v)) return v;
    if (auto u = n.as<UIntImm>()) {
        uv = u->value;
        return uv > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)uv;
    }
    *is_const = false;
    return 0;
}

Expr rounding_shift_right_ir(const Expr &a, const Expr &n) {
    Type t = a.type();
    Expr one = make_one(t);
    bool c;
    int64_t nv = shift_const(n, &c);
    if (c) {
        if (nv <= 0) return a << make_const(UInt(64), (int64_t)(nv == INT64_MIN ? INT64_MAX : -nv));
        // floor((a + 2^(n-1)) / 2^n) = (a >> n) + bit n-1 of a: no overflow
        return (a >> make_const(UInt(64), nv)) + ((a >> make_const(UInt(64), nv - 1)) & one);
    }
    Type nt = n.type();
    Expr pos = (a >> n) + ((a >> (n - make_one(nt))) & one);
    if (nt.is_uint()) return Select::make(GT::make(n, make_zero(nt)), pos, a);
    // n <= 0: a << -n, with n first kept above -64 (-(-128) wraps in int8)
    Expr nn = Max::make(n, make_const(nt, (int64_t)-64));
    return Select::make(GT::make(n, make_zero(nt)), pos, a << (make_zero(nt) - nn));
}

Expr mul_shift_right_ir(const Call *op, const Expr &a, const Expr &b, const Expr &q) {
    Type t = a.type();
    bool rounding = op->name == "rounding_mul_shift_right";
    Type w = t.with_bits(t.bits() * 2);
    Expr p = Mul::make(Cast::make(w, a), Cast::make(w, b));
    bool c;
    int64_t qv = shift_const(q, &c);
    Expr r;
    if (c) {
        if (qv == 0) r = p;
        else if (!rounding) r = p >> make_const(UInt(64), qv);
        else r = ((p >> make_const(UInt(64), qv - 1)) + make_one(w)) >> 1;
    } else {
        Expr qm1 = q - make_one(q.type());
        r = rounding ? Select::make(EQ::make(q, make_zero(q.type())), p, ((p >> qm1) + make_one(w)) >> 1) : p >> q;
    }
    // Clamp to t only on the sides the result can pass.
    __int128 tmin = t.is_int() ? -((__int128)1 << (t.bits() - 1)) : 0;
    __int128 tmax = t.is_int() ? ((__int128)1 << (t.bits() - 1)) - 1 : ((__int128)1 << t.bits()) - 1;
    __int128 pmin = t.is_int() ? tmin * tmax : 0, pmax = t.is_int() ? tmin * tmin : tmax * tmax;
    __int128 rmin = pmin, rmax = pmax;
    if (c && qv > 0) {
        int64_t s = qv > 126 ? 126 : qv;
        auto fl = [&](__int128 x) { return rounding ? (x + ((__int128)1 << (s - 1))) >> s : x >> s; };
        rmin = fl(pmin);
        rmax = fl(pmax);
    }
    if (rmin < tmin) r = Max::make(r, make_const(w, (int64_t)tmin));
    if (rmax > tmax) r = Min::make(r, make_const(w, (int64_t)tmax));
    return Cast::make(t, r);
}

Expr saturating_add_sub_ir(const Call *op, const Expr &a, const Expr &b) {
    Type t = a.type();
    bool add = op->name == "saturating_add";
    Expr tmin = t.min(), tmax = t.max();
    if (t.bits() <= 32) {
        Type w = Int(t.bits() * 2, t.lanes());
        Expr wa = Cast::make(w, a), wb = Cast::make(w, b);
        Expr r = add ? Add::make(wa, wb) : Sub::make(wa, wb);
        return Cast::make(t, Min::make(Max::make(r, Cast::make(w, tmin)), Cast::make(w, tmax)));
    }
    std::string rn = unique_name('s');
    Expr r = Variable::make(t, rn);
    Expr v;
    if (t.is_uint()) {
        v = add ? Select::make(LT::make(r, a), tmax, r) : Select::make(LT::make(a, b), tmin, r);
    } else {
        Expr z = make_zero(t);
        Expr over = add ? LT::make((a ^ r) & (b ^ r), z) : LT::make((a ^ b) & (a ^ r), z);
        v = Select::make(over, Select::make(LT::make(a, z), tmin, tmax), r);
    }
    return Let::make(rn, add ? Add::make(a, b) : Sub::make(a, b), v);
}

class Narrow : public GraphMutator {
public:
    explicit Narrow(bool cuda) : cuda_(cuda) {}

protected:
    bool cuda_;
    Expr mutate_once(const Expr &e) override {
        Expr m = GraphMutator::mutate_once(e);
        const ExprNode *n = m.get();
        Type t = n->type;
        switch (n->node_type) {
        case IRNodeType::Add: case IRNodeType::Sub: case IRNodeType::Mul: case IRNodeType::Div:
        case IRNodeType::Mod: case IRNodeType::Min: case IRNodeType::Max: {
            if (!t.is_16bit_float()) return m;
            auto b = static_cast<const BinaryExprNode *>(n);
            return Cast::make(t, rebuild_binary(n->node_type, to_f32(b->a), to_f32(b->b)));
        }
        case IRNodeType::EQ: case IRNodeType::NE: case IRNodeType::LT: case IRNodeType::LE: case IRNodeType::GT:
        case IRNodeType::GE: {
            auto b = static_cast<const BinaryExprNode *>(n);
            if (!b->a.type().is_16bit_float()) return m;
            return rebuild_binary(n->node_type, to_f32(b->a), to_f32(b->b));
        }
        case IRNodeType::Cast: {
            auto c = static_cast<const Cast *>(n);
            if (!t.is_16bit_float() && !c->value.type().is_16bit_float()) return m;
            return convert(t, c->value);
        }
        case IRNodeType::Call: {
            auto c = static_cast<const Call *>(n);
            if (c->call_type != Call::Intrinsic) return m;
            const std::string &nm = c->name;
            if (nm == "rounding_shift_right") return rounding_shift_right_ir(c->args[0], c->args[1]);
            if (nm == "mul_shift_right" || nm == "rounding_mul_shift_right")
                return mul_shift_right_ir(c, c->args[0], c->args[1], c->args[2]);
            if (cuda_ && (nm == "saturating_add" || nm == "saturating_sub"))
                return saturating_add_sub_ir(c, c->args[0], c->args[1]);
            if ((nm == "is_nan" || nm == "is_inf" || nm == "is_finite") && c->args[0].type().is_16bit_float())
                return Call::make_intrinsic(t, nm, {to_f32(c->args[0])});
            if (t.is_16bit_float() && is_math(nm)) {
                std::vector<Expr> args;
                for (auto &a : c->args) args.push_back(to_f32(a));
                return Cast::make(t, Call::make_intrinsic(f32_like(m), nm, args));
            }
            return m;
        }
        default: return m;
        }
    }
};

}  // namespace

Stmt lower_narrow_arithmetic(const Stmt &s, bool cuda) { return Narrow(cuda).mutate(s); }

}  // namespace internal
}  // namespace weft
