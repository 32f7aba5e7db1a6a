#include "interp/Interpreter.h"
#include <cmath>
#include <cstring>
#include <optional>
#include <limits>
#include "ir/IRVisitor.h"
#include "ir/Stack.h"

namespace weft {
namespace internal {
namespace {

struct Val {
    Type t;
    union {
        int64_t i;
        uint64_t u;
        double f;
    };
    Val() : t(Int(32)), i(0) {}
};

int64_t wrap_s(int bits, uint64_t v) {
    if (bits >= 64) return (int64_t)v;
    uint64_t m = (uint64_t(1) << bits) - 1;
    v &= m;
    if (v >> (bits - 1)) v |= ~m;
    return (int64_t)v;
}
uint64_t wrap_u(int bits, uint64_t v) { return bits >= 64 ? v : v & ((uint64_t(1) << bits) - 1); }

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
    v.f = t.bits() == 32 ? (double)(float)d : d;
    return v;
}
double as_double(const Val &v) {
    if (v.t.is_float()) return v.f;
    if (v.t.is_int()) return (double)v.i;
    return (double)v.u;
}

template <typename T>
T saturate(double d) {
    if (std::isnan(d)) return 0;
    if (d <= (double)std::numeric_limits<T>::lowest()) return std::numeric_limits<T>::lowest();
    if (d >= (double)std::numeric_limits<T>::max()) return std::numeric_limits<T>::max();
    return (T)d;
}

Val do_cast(Type t, const Val &v) {
    if (t.is_bool()) {
        Val r;
        r.t = t;
        r.u = v.t.is_float() ? (v.f != 0) : (v.u != 0);
        return r;
    }
    if (t.is_float()) return make_float(t, as_double(v));
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

class Interp {
public:
    std::vector<std::pair<std::string, Val>> vars;
    std::map<std::string, std::pair<void *, Type>> buffers;
    weft_context_t *ctx = nullptr;

    struct Fail {
        int32_t code;
    };

    const Val &lookup(const std::string &n) {
        for (auto it = vars.rbegin(); it != vars.rend(); ++it)
            if (it->first == n) return it->second;
        throw Error("weft internal error: interpreter: unbound variable " + n);
    }

    Val eval(const Expr &e) {
        if (stack_low()) return on_large_stack<Val>([&] { return eval(e); });
        const ExprNode *n = e.get();
        if (n->type.is_vector()) throw Error("weft internal error: the interpreter runs scalar code only");
        switch (n->node_type) {
        case IRNodeType::IntImm: return make_int(n->type, (uint64_t)static_cast<const IntImm *>(n)->value);
        case IRNodeType::UIntImm: return make_int(n->type, static_cast<const UIntImm *>(n)->value);
        case IRNodeType::FloatImm: return make_float(n->type, static_cast<const FloatImm *>(n)->value);
        case IRNodeType::Variable: return lookup(static_cast<const Variable *>(n)->name);
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
        case IRNodeType::Load: {
            auto op = static_cast<const Load *>(n);
            auto it = buffers.find(op->name);
            if (it == buffers.end()) throw Error("weft internal error: interpreter: unknown buffer " + op->name);
            int64_t idx = eval(op->index).i;
            return load(it->second.first, op->type, idx);
        }
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

    static Val load(void *base, Type t, int64_t idx) {
        Val v;
        v.t = t;
        char *p = (char *)base;
        if (t.is_bool()) v.u = ((uint8_t *)p)[idx] != 0;
        else if (t.is_float()) v.f = t.bits() == 32 ? (double)((float *)p)[idx] : ((double *)p)[idx];
        else if (t.is_int()) {
            switch (t.bits()) {
            case 8: v.i = ((int8_t *)p)[idx]; break;
            case 16: v.i = ((int16_t *)p)[idx]; break;
            case 32: v.i = ((int32_t *)p)[idx]; break;
            default: v.i = ((int64_t *)p)[idx];
            }
        } else {
            switch (t.bits()) {
            case 8: v.u = ((uint8_t *)p)[idx]; break;
            case 16: v.u = ((uint16_t *)p)[idx]; break;
            case 32: v.u = ((uint32_t *)p)[idx]; break;
            default: v.u = ((uint64_t *)p)[idx];
            }
        }
        return v;
    }
    static void store(void *base, Type t, int64_t idx, const Val &v) {
        char *p = (char *)base;
        if (t.is_bool()) ((uint8_t *)p)[idx] = v.u ? 1 : 0;
        else if (t.is_float()) {
            if (t.bits() == 32) ((float *)p)[idx] = (float)v.f;
            else ((double *)p)[idx] = v.f;
        } else {
            switch (t.bits()) {
            case 8: ((uint8_t *)p)[idx] = (uint8_t)v.u; break;
            case 16: ((uint16_t *)p)[idx] = (uint16_t)v.u; break;
            case 32: ((uint32_t *)p)[idx] = (uint32_t)v.u; break;
            default: ((uint64_t *)p)[idx] = v.u;
            }
        }
    }

    static Val arith(IRNodeType op, Type t, const Val &a, const Val &b) {
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
            if (t.bits() == 32) {
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
    static Val compare(IRNodeType op, const Val &a, const Val &b) {
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
    Val call(const Call *op) {
        if (op->call_type != Call::Intrinsic)
            throw Error("weft internal error: interpreter: unlowered call to " + op->name);
        const std::string &n = op->name;
        if (n == "prefetch") return make_int(Int(32), 0);  // a hint: nothing to do here
        Val a = eval(op->args[0]);
        if (n == "likely") return a;
        if (n == "reinterpret") {
            Val r;
            r.t = op->type;
            uint64_t bits = 0;
            if (a.t.is_float() && a.t.bits() == 32) {
                float f = (float)a.f;
                std::memcpy(&bits, &f, 4);
            } else if (a.t.is_float()) {
                std::memcpy(&bits, &a.f, 8);
            } else {
                bits = a.u;
            }
            if (op->type.is_float() && op->type.bits() == 32) {
                float f;
                uint32_t b32 = (uint32_t)bits;
                std::memcpy(&f, &b32, 4);
                r.f = f;
            } else if (op->type.is_float()) {
                std::memcpy(&r.f, &bits, 8);
            } else {
                r = make_int(op->type, bits);
            }
            return r;
        }
        if (n == "weft_rt_profile") {
            weft_rt_profile(ctx, (int32_t)a.i, (int32_t)eval(op->args[1]).i);
            return make_int(Int(32), 0);
        }
        if (n == "abs") {
            if (a.t.is_float()) return make_float(a.t, std::fabs(a.f));
            if (a.t.is_int()) return make_int(a.t, a.i < 0 ? (uint64_t)0 - (uint64_t)a.i : (uint64_t)a.i);
            return a;
        }
        bool f32 = op->type.bits() == 32;
        double x = a.f, r;
        if (n == "sqrt") r = f32 ? std::sqrt((float)x) : std::sqrt(x);
        else if (n == "exp") r = f32 ? std::exp((float)x) : std::exp(x);
        else if (n == "log") r = f32 ? std::log((float)x) : std::log(x);
        else if (n == "sin") r = f32 ? std::sin((float)x) : std::sin(x);
        else if (n == "cos") r = f32 ? std::cos((float)x) : std::cos(x);
        else if (n == "tanh") r = f32 ? std::tanh((float)x) : std::tanh(x);
        else if (n == "floor") r = std::floor(x);
        else if (n == "ceil") r = std::ceil(x);
        else if (n == "round") r = std::nearbyint(x);
        else if (n == "pow") {
            double y = eval(op->args[1]).f;
            r = f32 ? std::pow((float)x, (float)y) : std::pow(x, y);
        } else throw Error("weft internal error: interpreter: unknown intrinsic " + n);
        return make_float(op->type, r);
    }

    void exec(const Stmt &s) {
        const StmtNode *n = s.get();
        if (!n) return;
        if (stack_low()) return on_large_stack_void([&] { exec(s); });
        switch (n->node_type) {
        case IRNodeType::LetStmt: {
            auto op = static_cast<const LetStmt *>(n);
            vars.push_back({op->name, eval(op->value)});
            exec(op->body);
            vars.pop_back();
            return;
        }
        case IRNodeType::AssertStmt: {
            auto op = static_cast<const AssertStmt *>(n);
            if (eval(op->condition).u) return;
            std::vector<int64_t> args;
            for (auto &a : op->args) args.push_back(do_cast(Int(64), eval(a)).i);
            int32_t code = weft_rt_assert_fail(ctx, op->message.c_str(), args.data(), (int32_t)args.size());
            throw Fail{code};
        }
        case IRNodeType::For: {
            auto op = static_cast<const For *>(n);
            int64_t mn = eval(op->min).i, ex = eval(op->extent).i;
            vars.push_back({op->name, Val()});
            for (int64_t i = mn; i < mn + ex; i++) {
                vars.back().second = make_int(Int(32), (uint64_t)i);
                size_t depth = vars.size();
                exec(op->body);
                vars.resize(depth);
            }
            vars.pop_back();
            return;
        }
        case IRNodeType::Store: {
            auto op = static_cast<const Store *>(n);
            auto it = buffers.find(op->name);
            if (it == buffers.end()) throw Error("weft internal error: interpreter: unknown buffer " + op->name);
            Val v = eval(op->value);
            store(it->second.first, op->value.type(), eval(op->index).i, v);
            return;
        }
        case IRNodeType::Allocate: {
            auto op = static_cast<const Allocate *>(n);
            int64_t count = eval(op->extent).i;
            void *p = weft_rt_malloc(ctx, std::max<int64_t>(count, 1) * op->type.bytes());
            if (!p) throw Fail{-1};
            auto saved = buffers.count(op->name) ? std::optional<std::pair<void *, Type>>(buffers[op->name]) : std::nullopt;
            buffers[op->name] = {p, op->type};
            try {
                exec(op->body);
            } catch (...) {
                weft_rt_free(ctx, p);
                throw;
            }
            weft_rt_free(ctx, p);
            if (saved) buffers[op->name] = *saved;
            else buffers.erase(op->name);
            return;
        }
        case IRNodeType::Block: {
            auto op = static_cast<const Block *>(n);
            exec(op->first);
            exec(op->rest);
            return;
        }
        case IRNodeType::IfThenElse: {
            auto op = static_cast<const IfThenElse *>(n);
            if (eval(op->condition).u) exec(op->then_case);
            else exec(op->else_case);
            return;
        }
        case IRNodeType::Evaluate: eval(static_cast<const Evaluate *>(n)->value); return;
        default: throw Error("weft internal error: interpreter: unsupported statement");
        }
    }
};

}  // namespace

int64_t interpret_scalar_int(const Expr &e, const std::map<std::string, int64_t> &vars) {
    Interp in;
    for (auto &kv : vars) {
        Val v = make_int(Int(64), (uint64_t)kv.second);
        in.vars.push_back({kv.first, v});
    }
    // Variables take the type they are used with.
    class Retype : public IRMutator {
    public:
        std::map<std::string, int64_t> vals;

    protected:
        Expr visit(const Variable *op, const Expr &e) override {
            auto it = vals.find(op->name);
            if (it == vals.end()) return e;
            if (op->type.is_float()) return make_const(op->type, (double)it->second);
            return make_const(op->type, it->second);
        }
    } rt;
    rt.vals = vars;
    Val r = in.eval(rt.mutate(e));
    if (r.t.is_float()) return (int64_t)r.f;
    return r.t.is_int() ? r.i : (int64_t)r.u;
}

double interpret_scalar_float(const Expr &e, const std::map<std::string, int64_t> &vars) {
    Interp in;
    for (auto &kv : vars) in.vars.push_back({kv.first, make_int(Int(64), (uint64_t)kv.second)});
    Val r = in.eval(e);
    return as_double(r);
}

int32_t interpret_lowered(const LoweredFunc &f, void **args, weft_context_t *ctx) {
    Interp in;
    in.ctx = ctx;
    for (size_t i = 0; i < f.args.size(); i++) {
        const LoweredArg &a = f.args[i];
        if (a.kind == LoweredArg::Buffer) {
            auto *b = (weft_buffer_t *)args[i];
            in.buffers[a.name] = {b->host, a.type};
            for (int d = 0; d < b->dims; d++) {
                in.vars.push_back({a.name + ".min." + std::to_string(d), make_int(Int(32), (uint64_t)(int64_t)b->dim[d].min)});
                in.vars.push_back({a.name + ".extent." + std::to_string(d), make_int(Int(32), (uint64_t)(int64_t)b->dim[d].extent)});
                in.vars.push_back({a.name + ".stride." + std::to_string(d), make_int(Int(32), (uint64_t)(int64_t)b->dim[d].stride)});
            }
        } else {
            Val v;
            v.t = a.type;
            uint64_t bits = 0;
            std::memcpy(&bits, args[i], a.type.bytes());
            if (a.type.is_float()) v.f = a.type.bits() == 32 ? (double)*(float *)args[i] : *(double *)args[i];
            else v = make_int(a.type, bits);
            in.vars.push_back({a.name, v});
        }
    }
    try {
        in.exec(f.body);
    } catch (Interp::Fail &fail) {
        return fail.code;
    }
    return 0;
}

}  // namespace internal
}  // namespace weft
