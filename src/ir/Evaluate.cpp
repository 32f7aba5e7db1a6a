// Evaluating scalar Exprs (see ir/Evaluate.h).
#include "ir/Evaluate.h"
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include "ir/IRVisitor.h"
#include "ir/Stack.h"
#include "runtime/Runtime.h"

namespace weft {
namespace internal {
namespace {

int64_t wrap_s(int bits, uint64_t v) {
    if (bits >= 64) return (int64_t)v;
    uint64_t m = (uint64_t(1) << bits) - 1;
    v &= m;
    if (v >> (bits - 1)) v |= ~m;
    return (int64_t)v;
}
uint64_t wrap_u(int bits, uint64_t v) { return bits >= 64 ? v : v & ((uint64_t(1) << bits) - 1); }

}  // namespace

Val make_int(Type t, uint64_t bits) {
    Val v;
    v.t = t;
    if (t.is_int()) v.i = wrap_s(t.bits(), bits);
    else if (t.is_bool()) v.u = bits ? 1 : 0;
    else v.u = wrap_u(t.bits(), bits);
    return v;
}
Val make_float(Type t, double d) {
    Val v;
    v.t = t;
    v.f = round_to_float_type(t, d);
    return v;
}
double as_double(const Val &v) {
    if (v.t.is_float()) return v.f;
    if (v.t.is_int()) return (double)v.i;
    return (double)v.u;
}

namespace {
template <typename T>
T saturate(double d) {
    if (std::isnan(d)) return 0;
    if (d <= (double)std::numeric_limits<T>::lowest()) return std::numeric_limits<T>::lowest();
    if (d >= (double)std::numeric_limits<T>::max()) return std::numeric_limits<T>::max();
    return (T)d;
}

}  // namespace

Val do_cast(Type t, const Val &v) {
    if (t.is_bool()) {
        Val r;
        r.t = t;
        r.u = v.t.is_float() ? (v.f != 0) : (v.u != 0);
        return r;
    }
    if (t.is_float()) {
        if (v.t.is_int_or_uint() && v.t.bits() == 64 && t.bits() < 64) {
            // Rounded once: to double rounding to odd (exact enough for any narrower type), then to t.
            __int128 x = v.t.is_int() ? (__int128)v.i : (__int128)v.u;
            double d = v.t.is_int() ? (double)v.i : (double)v.u;
            __int128 back = (__int128)d;  // (|d| <= 2^64: fits)
            if (back != x) {
                if (x > 0 ? back > x : back < x) d = std::nextafter(d, 0.0);
                uint64_t b;
                std::memcpy(&b, &d, 8);
                b |= 1;
                std::memcpy(&d, &b, 8);
            }
            return make_float(t, d);
        }
        return make_float(t, as_double(v));
    }
    if (v.t.is_float()) {
        double d = v.f;
        if (t.is_int()) {
            switch (t.bits()) {
            case 8: return make_int(t, (uint64_t)(int64_t)saturate<int8_t>(d));
            case 16: return make_int(t, (uint64_t)(int64_t)saturate<int16_t>(d));
            case 32: return make_int(t, (uint64_t)(int64_t)saturate<int32_t>(d));
            default: return make_int(t, (uint64_t)saturate<int64_t>(d));
            }
        }
        switch (t.bits()) {
        case 8: return make_int(t, saturate<uint8_t>(d));
        case 16: return make_int(t, saturate<uint16_t>(d));
        case 32: return make_int(t, saturate<uint32_t>(d));
        default: return make_int(t, saturate<uint64_t>(d));
        }
    }
    return make_int(t, v.u);  // sign- or zero-extended already by representation
}


const Val &ExprEvaluator::lookup(const std::string &n) {
    for (auto it = vars.rbegin(); it != vars.rend(); ++it)
        if (it->first == n) return it->second;
    throw Error("weft internal error: interpreter: unbound variable " + n);
}


Val ExprEvaluator::eval(const Expr &e) {
    if (stack_low()) return on_large_stack<Val>([&] { return eval(e); });
    const ExprNode *n = e.get();
    if (n->type.is_vector()) throw Error("weft internal error: the interpreter runs scalar code only");
    switch (n->node_type) {
    case IRNodeType::IntImm: return make_int(n->type, (uint64_t)static_cast<const IntImm *>(n)->value);
    case IRNodeType::UIntImm: return make_int(n->type, static_cast<const UIntImm *>(n)->value);
    case IRNodeType::FloatImm: return make_float(n->type, static_cast<const FloatImm *>(n)->value);
    case IRNodeType::Variable: return variable(static_cast<const Variable *>(n));
    case IRNodeType::Cast: return do_cast(n->type, eval(static_cast<const Cast *>(n)->value));
    case IRNodeType::Add: case IRNodeType::Sub: case IRNodeType::Mul: case IRNodeType::Div:
    case IRNodeType::Mod: case IRNodeType::Min: case IRNodeType::Max:
        return arith(n->node_type, n->type, eval(static_cast<const BinaryExprNode *>(n)->a),
                     eval(static_cast<const BinaryExprNode *>(n)->b));
    case IRNodeType::EQ: case IRNodeType::NE: case IRNodeType::LT: case IRNodeType::LE: case IRNodeType::GT:
    case IRNodeType::GE:
        return compare(n->node_type, eval(static_cast<const BinaryExprNode *>(n)->a),
                       eval(static_cast<const BinaryExprNode *>(n)->b));
    case IRNodeType::And: {
        auto op = static_cast<const And *>(n);
        Val a = eval(op->a);
        if (!a.u) return a;
        return eval(op->b);
    }
    case IRNodeType::Or: {
        auto op = static_cast<const Or *>(n);
        Val a = eval(op->a);
        if (a.u) return a;
        return eval(op->b);
    }
    case IRNodeType::Not: {
        Val a = eval(static_cast<const Not *>(n)->a);
        a.u = !a.u;
        return a;
    }
    case IRNodeType::Select: {
        auto op = static_cast<const Select *>(n);
        return eval(op->condition).u ? eval(op->true_value) : eval(op->false_value);
    }
    case IRNodeType::Load: return load(static_cast<const Load *>(n));
    case IRNodeType::Let: {
        auto op = static_cast<const Let *>(n);
        vars.push_back({op->name, eval(op->value)});
        Val r = eval(op->body);
        vars.pop_back();
        return r;
    }
    case IRNodeType::Call: return call(static_cast<const Call *>(n));
    default: throw Error("weft internal error: interpreter: unsupported expression " + to_string(e));
    }
}


Val ExprEvaluator::load(const Load *op) {
    throw Error("weft internal error: a load from \"" + op->name + "\" where no memory is known");
}

Val ExprEvaluator::arith(IRNodeType op, Type t, const Val &a, const Val &b) {
    if (t.is_float()) {
        double x = a.f, y = b.f, r = 0;
        switch (op) {
        case IRNodeType::Add: r = x + y; break;
        case IRNodeType::Sub: r = x - y; break;
        case IRNodeType::Mul: r = x * y; break;
        case IRNodeType::Div: r = x / y; break;
        case IRNodeType::Mod: r = x - y * std::floor(x / y); break;
        case IRNodeType::Min: r = (x < y) ? x : y; break;
        case IRNodeType::Max: r = (x > y) ? x : y; break;
        default: break;
        }
        if (t.bits() <= 32) {  // (16-bit floats: in float32, then rounded by make_float)
            float fx = (float)x, fy = (float)y, fr = (float)r;
            switch (op) {
            case IRNodeType::Add: fr = fx + fy; break;
            case IRNodeType::Sub: fr = fx - fy; break;
            case IRNodeType::Mul: fr = fx * fy; break;
            case IRNodeType::Div: fr = fx / fy; break;
            case IRNodeType::Mod: fr = fx - fy * std::floor(fx / fy); break;
            default: break;
            }
            r = fr;
        }
        return make_float(t, r);
    }
    if (t.is_int()) {
        int64_t x = a.i, y = b.i;
        uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
        switch (op) {
        case IRNodeType::Add: return make_int(t, ux + uy);
        case IRNodeType::Sub: return make_int(t, ux - uy);
        case IRNodeType::Mul: return make_int(t, ux * uy);
        case IRNodeType::Div: {
            if (y == 0) return make_int(t, 0);
            if (y == -1) return make_int(t, (uint64_t)0 - ux);
            int64_t q = x / y, r = x % y;
            if (r != 0 && ((r < 0) != (y < 0))) q--;
            return make_int(t, (uint64_t)q);
        }
        case IRNodeType::Mod: {
            if (y == 0) return make_int(t, 0);
            if (y == -1) return make_int(t, 0);
            int64_t r = x % y;
            if (r != 0 && ((r < 0) != (y < 0))) r += y;
            return make_int(t, (uint64_t)r);
        }
        case IRNodeType::Min: return make_int(t, (uint64_t)std::min(x, y));
        case IRNodeType::Max: return make_int(t, (uint64_t)std::max(x, y));
        default: break;
        }
    }
    uint64_t x = a.u, y = b.u;
    switch (op) {
    case IRNodeType::Add: return make_int(t, x + y);
    case IRNodeType::Sub: return make_int(t, x - y);
    case IRNodeType::Mul: return make_int(t, x * y);
    case IRNodeType::Div: return make_int(t, y == 0 ? 0 : x / y);
    case IRNodeType::Mod: return make_int(t, y == 0 ? 0 : x % y);
    case IRNodeType::Min: return make_int(t, std::min(x, y));
    case IRNodeType::Max: return make_int(t, std::max(x, y));
    default: break;
    }
    throw Error("weft internal error: interpreter: bad arithmetic");
}
Val ExprEvaluator::compare(IRNodeType op, const Val &a, const Val &b) {
    Val r;
    r.t = Bool();
    int c;  // -1, 0, 1; 2 = unordered
    if (a.t.is_float()) c = (a.f < b.f) ? -1 : (a.f > b.f) ? 1 : (a.f == b.f) ? 0 : 2;
    else if (a.t.is_int()) c = a.i < b.i ? -1 : a.i > b.i ? 1 : 0;
    else c = a.u < b.u ? -1 : a.u > b.u ? 1 : 0;
    switch (op) {
    case IRNodeType::EQ: r.u = c == 0; break;
    case IRNodeType::NE: r.u = c != 0; break;
    case IRNodeType::LT: r.u = c == -1; break;
    case IRNodeType::LE: r.u = c == -1 || c == 0; break;
    case IRNodeType::GT: r.u = c == 1; break;
    case IRNodeType::GE: r.u = c == 1 || c == 0; break;
    default: break;
    }
    return r;
}

bool eval_bitwise(const std::string &n, Type t, const Val &a, const Val &b, Val *r) {
    if (n == "bitwise_and") *r = make_int(t, a.u & b.u);
    else if (n == "bitwise_or") *r = make_int(t, a.u | b.u);
    else if (n == "bitwise_xor") *r = make_int(t, a.u ^ b.u);
    else if (n == "shift_left" || n == "shift_right") {
        int64_t amt;
        bool neg = false;
        if (b.t.is_int()) {
            amt = b.i;
            if (amt < 0) {
                neg = true;
                amt = amt == INT64_MIN ? INT64_MAX : -amt;
            }
        } else {
            amt = b.u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)b.u;
        }
        bool left = (n == "shift_left") != neg;
        const int bits = t.bits();
        uint64_t v;
        if (left) v = amt >= bits ? 0 : a.u << amt;
        else if (t.is_int()) v = (uint64_t)(amt >= bits ? (a.i < 0 ? -1 : 0) : a.i >> amt);
        else v = amt >= bits ? 0 : a.u >> amt;
        *r = make_int(t, v);
    } else {
        return false;
    }
    return true;
}

namespace {
/** The C library's one-argument function `n` (is_libm_call) of x, in float32 where f32. */
double libm1(const std::string &n, double x, bool f32) {
    using F = double (*)(double, bool);
#define WEFT_LIBM1(f) {#f, [](double v, bool s) { return s ? (double)std::f((float)v) : std::f(v); }}
    static const std::map<std::string, F> fns = {WEFT_LIBM1(tanh), WEFT_LIBM1(tan),   WEFT_LIBM1(atan),
                                                 WEFT_LIBM1(asin), WEFT_LIBM1(acos),  WEFT_LIBM1(sinh),
                                                 WEFT_LIBM1(cosh), WEFT_LIBM1(asinh), WEFT_LIBM1(acosh),
                                                 WEFT_LIBM1(atanh)};
#undef WEFT_LIBM1
    auto it = fns.find(n);
    if (it == fns.end()) throw Error("weft internal error: interpreter: unknown intrinsic " + n);
    return it->second(x, f32);
}
}  // namespace

namespace {
__int128 int_value(const Val &v) { return v.t.is_int() ? (__int128)v.i : (__int128)v.u; }
__int128 saturate_to(Type t, __int128 x) {
    __int128 lo = t.is_int() ? -((__int128)1 << (t.bits() - 1)) : 0;
    __int128 hi = t.is_int() ? ((__int128)1 << (t.bits() - 1)) - 1 : ((__int128)1 << t.bits()) - 1;
    return x < lo ? lo : x > hi ? hi : x;
}
/** floor((x + 2^(n-1)) / 2^n) for n > 0, x for n == 0; |x| < 2^126. */
__int128 round_shift(__int128 x, int64_t n) {
    if (n <= 0) return x;
    if (n > 126) return 0;  // (x + 2^(n-1)) lies in (0, 2^n)
    return (x + ((__int128)1 << (n - 1))) >> n;
}
}  // namespace

Val fixed_point(const std::string &n, Type t, const Val &a, const Val &b, const Val &c) {
    __int128 x = int_value(a), y = int_value(b);
    if (n == "saturating_add") return make_int(t, (uint64_t)saturate_to(t, x + y));
    if (n == "saturating_sub") return make_int(t, (uint64_t)saturate_to(t, x - y));
    if (n == "rounding_shift_right") {
        if (y > 0) return make_int(t, (uint64_t)round_shift(x, y > 200 ? 200 : (int64_t)y));
        Val r, amt = make_int(UInt(64), y < -(__int128)INT64_MAX ? (uint64_t)INT64_MAX : (uint64_t)(int64_t)-y);
        eval_bitwise("shift_left", t, a, amt, &r);
        return r;
    }
    // mul_shift_right, rounding_mul_shift_right: the product is exact in 128 bits (<= 32-bit operands)
    __int128 p = x * y, q = int_value(c);
    int64_t qs = q > 200 ? 200 : (int64_t)q;
    __int128 r = n == "mul_shift_right" ? (qs > 126 ? (p < 0 ? -1 : 0) : p >> qs) : round_shift(p, qs);
    return make_int(t, (uint64_t)saturate_to(t, r));
}

Val ExprEvaluator::call(const Call *op) {
    if (op->call_type != Call::Intrinsic)
        throw Error("weft internal error: interpreter: unlowered call to " + op->name);
    const std::string &n = op->name;
    if (n == "prefetch") return make_int(Int(32), 0);  // a hint: nothing to do here
    if (n == "print" || n == "print_when" || n == "trace") {
        // trace(value, pieces...): the pieces joined without spaces; the value, not printed.
        size_t first = n == "print_when" ? 1 : 0;
        bool on = !first || eval(op->args[0]).u != 0;
        Val v = eval(op->args[first]);
        if (!on) return v;
        if (n == "trace") weft_rt_print_glued();
        for (size_t i = first + (n == "trace"); i < op->args.size(); i++) {
            if (auto str = op->args[i].as<StringImm>()) {
                weft_rt_print_str(str->value.c_str());
                continue;
            }
            Val p = i == first ? v : eval(op->args[i]);
            if (p.t.is_float()) weft_rt_print_f64(p.f, p.t.is_bfloat() ? -16 : p.t.bits());
            else if (p.t.is_int()) weft_rt_print_i64(p.i);
            else weft_rt_print_u64(p.u);
        }
        weft_rt_print_end();
        return v;
    }
    Val a = eval(op->args[0]);
    if (n == "likely") return a;
    if (op->args.size() == 2 && op->type.is_int_or_uint()) {
        Val r;
        if (eval_bitwise(n, op->type, a, eval(op->args[1]), &r)) return r;
    }
    if (n == "reinterpret") {
        Val r;
        r.t = op->type;
        uint64_t bits = 0;  // (little-endian: the low bytes hold narrower values)
        if (a.t.is_float()) float_to_bytes(a.t, a.f, &bits);
        else bits = a.u;
        if (op->type.is_float()) {
            r.f = float_from_bytes(op->type, &bits);
        } else {
            r = make_int(op->type, bits);
        }
        return r;
    }
    if (n == "is_nan") return make_int(op->type, std::isnan(a.f));
    if (n == "is_inf") return make_int(op->type, std::isinf(a.f));
    if (n == "is_finite") return make_int(op->type, std::isfinite(a.f));
    if (n == "abs") {
        if (a.t.is_float()) return make_float(a.t, std::fabs(a.f));
        if (a.t.is_int()) return make_int(a.t, a.i < 0 ? (uint64_t)0 - (uint64_t)a.i : (uint64_t)a.i);
        return a;
    }
    if (n == "saturating_add" || n == "saturating_sub" || n == "rounding_shift_right" || n == "mul_shift_right" ||
        n == "rounding_mul_shift_right")
        return fixed_point(n, op->type, a, eval(op->args[1]), op->args.size() > 2 ? eval(op->args[2]) : Val());
    bool f32 = op->type.bits() <= 32;  // (16-bit floats compute in float32)
    double x = a.f, r;
    if (n == "sqrt") r = f32 ? std::sqrt((float)x) : std::sqrt(x);
    else if (n == "exp") r = f32 ? std::exp((float)x) : std::exp(x);
    else if (n == "log") r = f32 ? std::log((float)x) : std::log(x);
    else if (n == "sin") r = f32 ? std::sin((float)x) : std::sin(x);
    else if (n == "cos") r = f32 ? std::cos((float)x) : std::cos(x);
    else if (is_libm_call(n) && op->args.size() == 1) r = libm1(n, x, f32);
    else if (n == "atan2" || n == "hypot") {
        double y = eval(op->args[1]).f;
        if (n == "atan2") r = f32 ? std::atan2((float)x, (float)y) : std::atan2(x, y);
        else r = f32 ? std::hypot((float)x, (float)y) : std::hypot(x, y);
    }
    else if (n == "floor") r = std::floor(x);
    else if (n == "ceil") r = std::ceil(x);
    else if (n == "round") r = std::nearbyint(x);
    else if (n == "pow") {
        double y = eval(op->args[1]).f;
        r = f32 ? std::pow((float)x, (float)y) : std::pow(x, y);
    } else if (n == "fma") {  // one rounding, as the backends' fused multiply-add
        double y = eval(op->args[1]).f, z = eval(op->args[2]).f;
        r = f32 ? std::fma((float)x, (float)y, (float)z) : std::fma(x, y, z);
    } else throw Error("weft internal error: interpreter: unknown intrinsic " + n);
    return make_float(op->type, r);
}


int64_t evaluate_int(const Expr &e, const std::map<std::string, int64_t> &vars) {
    // Each variable takes the type it is used with (read from the map as it is met: lowering
    // evaluates index expressions once per digit combination, and rebuilding the Expr with
    // constants in it each time was most of a kernel's lowering).
    class Typed : public ExprEvaluator {
    public:
        explicit Typed(const std::map<std::string, int64_t> &m) : vals(m) {}
        const std::map<std::string, int64_t> &vals;

    protected:
        Val variable(const Variable *op) override {
            auto it = vals.find(op->name);
            if (it == vals.end()) return lookup(op->name);
            if (op->type.is_float()) return make_float(op->type, (double)it->second);
            return make_int(op->type, (uint64_t)it->second);
        }
    } ev(vars);
    Val r = ev.eval(e);
    if (r.t.is_float()) return (int64_t)r.f;
    return r.t.is_int() ? r.i : (int64_t)r.u;
}

double evaluate_float(const Expr &e, const std::map<std::string, int64_t> &vars) {
    ExprEvaluator ev;
    for (auto &kv : vars) ev.vars.push_back({kv.first, make_int(Int(64), (uint64_t)kv.second)});
    return as_double(ev.eval(e));
}

}  // namespace internal
}  // namespace weft
