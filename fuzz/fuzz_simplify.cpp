// libFuzzer target: random integer Exprs are simplified and evaluated before and after, for
// several variable assignments; any difference aborts. Also checks simplify(e, scope) and
// bounds_of_expr_in_scope against sampled values inside the scope's ranges.
//
// Overflow model: Int(32)/Int(64) add/sub/mul (and INT_MIN / -1) are assumed not to overflow
// (as the simplifier assumes). An assignment under which the original or the simplified Expr
// overflows such an operation is skipped; a vector operation overflows if any of its lanes
// does. Narrow and unsigned types wrap and are always checked.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "ir/IR.h"
#include "ir/IRVisitor.h"
#include "ir/Interval.h"
#include "ir/Simplify.h"

using namespace weft;
using namespace weft::internal;

namespace {

using i128 = __int128;
using Env = std::map<std::string, int64_t>;

// ---------------- a small exact evaluator (IR.h semantics) ----------------
bool strict_type(Type t) { return t.is_int() && t.bits() >= 32; }
i128 wrap_to(Type t, i128 v) {
    if (t.is_bool()) return v != 0;
    int b = t.bits();
    unsigned __int128 m = b >= 64 ? (unsigned __int128)UINT64_MAX : (((unsigned __int128)1 << b) - 1);
    unsigned __int128 u = (unsigned __int128)v & m;
    if (t.is_uint()) return (i128)u;
    if ((u >> (b - 1)) & 1) return (i128)u - ((i128)1 << b);
    return (i128)u;
}
i128 fdiv(i128 a, i128 b) {
    if (b == 0) return 0;
    i128 q = a / b, r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) q--;
    return q;
}
i128 fmod_(i128 a, i128 b) {
    if (b == 0) return 0;
    i128 r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

struct Evaluator {
    bool overflow = false;
    i128 arith(Type t, i128 r) {
        i128 w = wrap_to(t, r);
        if (strict_type(t) && w != r) overflow = true;
        return w;
    }
    int lane = 0;  // which lane of a vector Expr to evaluate
    i128 eval(const Expr &e, Env &env) {
        Type t = e.type().element_of();
        if (auto *p = e.as<Ramp>()) return arith(t, eval(p->base, env) + (i128)lane * eval(p->stride, env));
        if (auto *p = e.as<Broadcast>()) return eval(p->value, env);
        if (auto *p = e.as<IntImm>()) return p->value;
        if (auto *p = e.as<UIntImm>()) return (i128)p->value;
        if (auto *p = e.as<Variable>()) {
            auto it = env.find(p->name);
            if (it == env.end()) {
                std::cerr << "evaluator: unbound variable " << p->name << "\n";
                abort();
            }
            return wrap_to(t, it->second);
        }
        if (auto *p = e.as<Cast>()) return wrap_to(t, eval(p->value, env));
        if (auto *p = e.as<Add>()) return arith(t, eval(p->a, env) + eval(p->b, env));
        if (auto *p = e.as<Sub>()) return arith(t, eval(p->a, env) - eval(p->b, env));
        if (auto *p = e.as<Mul>()) return arith(t, eval(p->a, env) * eval(p->b, env));
        if (auto *p = e.as<Div>()) return arith(t, fdiv(eval(p->a, env), eval(p->b, env)));
        if (auto *p = e.as<Mod>()) return arith(t, fmod_(eval(p->a, env), eval(p->b, env)));
        if (auto *p = e.as<Min>()) {
            i128 a = eval(p->a, env), b = eval(p->b, env);
            return a < b ? a : b;
        }
        if (auto *p = e.as<Max>()) {
            i128 a = eval(p->a, env), b = eval(p->b, env);
            return a > b ? a : b;
        }
        if (auto *p = e.as<EQ>()) return eval(p->a, env) == eval(p->b, env);
        if (auto *p = e.as<NE>()) return eval(p->a, env) != eval(p->b, env);
        if (auto *p = e.as<LT>()) return eval(p->a, env) < eval(p->b, env);
        if (auto *p = e.as<LE>()) return eval(p->a, env) <= eval(p->b, env);
        if (auto *p = e.as<GT>()) return eval(p->a, env) > eval(p->b, env);
        if (auto *p = e.as<GE>()) return eval(p->a, env) >= eval(p->b, env);
        if (auto *p = e.as<And>()) {
            i128 a = eval(p->a, env), b = eval(p->b, env);
            return a && b;
        }
        if (auto *p = e.as<Or>()) {
            i128 a = eval(p->a, env), b = eval(p->b, env);
            return a || b;
        }
        if (auto *p = e.as<Not>()) return !eval(p->a, env);
        if (auto *p = e.as<Select>()) {
            i128 c = eval(p->condition, env), a = eval(p->true_value, env), b = eval(p->false_value, env);
            return c ? a : b;
        }
        if (auto *p = e.as<Let>()) {
            i128 v = eval(p->value, env);
            auto it = env.find(p->name);
            bool had = it != env.end();
            int64_t old = had ? it->second : 0;
            env[p->name] = (int64_t)v;
            i128 r = eval(p->body, env);
            if (had) env[p->name] = old;
            else env.erase(p->name);
            return r;
        }
        std::cerr << "evaluator: unsupported node " << e << "\n";
        abort();
    }
};

// The single place that evaluates an Expr (to be switched to the interpreter later).
int64_t eval_expr(const Expr &e, const Env &env, bool *overflow, int lane = 0) {
    Evaluator ev;
    ev.lane = lane;
    Env copy = env;
    i128 r = ev.eval(e, copy);
    *overflow = ev.overflow;
    return (int64_t)r;
}

// ---------------- decoding bytes into an Expr ----------------
struct Reader {
    const uint8_t *d;
    size_t n, i = 0;
    uint8_t next() { return i < n ? d[i++] : 0; }
    bool done() const { return i >= n; }
};

const Type kTypes[] = {Int(32), Int(32), Int(32), Int(8), UInt(16), Int(64)};

struct Gen {
    Reader &r;
    int budget = 48;
    int let_count = 0;
    int lanes = 1;
    std::vector<std::pair<std::string, Type>> vars;

    explicit Gen(Reader &rd) : r(rd) {
        vars = {{"x", Int(32)}, {"y", Int(32)}, {"z", Int(32)}, {"w", Int(8)}, {"u", UInt(16)}, {"l", Int(64)}};
    }

    Expr constant(Type t) {
        static const int64_t table[] = {0, 1, -1, 2, 3, 4, 7, 8, -8, 16, 100, -100, 127, 128, 255, 256, 65535,
                                        INT32_MAX, INT32_MIN, INT32_MAX - 1, INT32_MIN + 1, INT64_MAX, INT64_MIN,
                                        1 << 20, -(1 << 20), 0x40000000, 5, 6, -3, 9, 31, 32};
        uint8_t b = r.next();
        int64_t v = (b & 0x80) ? (int64_t)(int8_t)(b << 1) / 2 : table[b % (sizeof(table) / sizeof(table[0]))];
        Type s = t.element_of();
        Expr c = s.is_bool() ? UIntImm::make(s, v & 1) : s.is_uint() ? UIntImm::make(s, (uint64_t)v) : IntImm::make(s, v);
        return Broadcast::make(c, t.lanes());
    }
    Type T(Type t) const { return t.with_lanes(lanes); }
    Expr leaf(Type t) {
        if (t.is_vector()) {
            uint8_t b = r.next();
            Type s = t.element_of();
            Expr base = b % 3 == 0 ? constant(s) : scalar_leaf(s);
            if ((b & 4) && !s.is_bool()) return Ramp::make(base, constant(s), t.lanes());
            return Broadcast::make(base, t.lanes());
        }
        return scalar_leaf(t);
    }
    Expr scalar_leaf(Type t) {
        uint8_t b = r.next();
        if (b % 3 == 0) return constant(t);
        std::vector<int> c;
        for (size_t i = 0; i < vars.size(); i++)
            if (vars[i].second == t) c.push_back((int)i);
        if (c.empty()) return constant(t);
        auto &v = vars[c[b % c.size()]];
        return Variable::make(v.second, v.first);
    }
    Expr boolean(int depth) {
        uint8_t b = r.next();
        if (depth <= 0 || budget <= 0 || r.done()) return constant(Bool(lanes));
        budget--;
        switch (b % 10) {
        case 0: return And::make(boolean(depth - 1), boolean(depth - 1));
        case 1: return Or::make(boolean(depth - 1), boolean(depth - 1));
        case 2: return Not::make(boolean(depth - 1));
        case 3: return Broadcast::make(UIntImm::make(Bool(), (b >> 4) & 1), lanes);
        default: {
            Type t = T(kTypes[(b >> 4) % 6]);
            Expr a = gen(t, depth - 1), c = gen(t, depth - 1);
            switch ((b >> 1) % 6) {
            case 0: return EQ::make(a, c);
            case 1: return NE::make(a, c);
            case 2: return LT::make(a, c);
            case 3: return LE::make(a, c);
            case 4: return GT::make(a, c);
            default: return GE::make(a, c);
            }
        }
        }
    }
    Expr gen(Type t, int depth) {
        uint8_t b = r.next();
        if (depth <= 0 || budget <= 0 || r.done() || b < 40) return leaf(t);
        budget--;
        switch (b % 14) {
        case 0: return Add::make(gen(t, depth - 1), gen(t, depth - 1));
        case 1: return Sub::make(gen(t, depth - 1), gen(t, depth - 1));
        case 2: return Mul::make(gen(t, depth - 1), r.next() & 1 ? constant(t) : gen(t, depth - 1));
        case 3: return Div::make(gen(t, depth - 1), r.next() & 1 ? constant(t) : gen(t, depth - 1));
        case 4: return Mod::make(gen(t, depth - 1), r.next() & 1 ? constant(t) : gen(t, depth - 1));
        case 5: return Min::make(gen(t, depth - 1), gen(t, depth - 1));
        case 6: return Max::make(gen(t, depth - 1), gen(t, depth - 1));
        case 7: {
            Expr c = boolean(depth - 1);
            return Select::make(c, gen(t, depth - 1), gen(t, depth - 1));
        }
        case 8: {
            Type s = T(kTypes[r.next() % 6]);
            return Cast::make(t, gen(s, depth - 1));
        }
        case 9: return Cast::make(t, boolean(depth - 1));
        case 10: {
            if (let_count >= 2 || lanes > 1) return Add::make(gen(t, depth - 1), constant(t));
            std::string name = "t" + std::to_string(let_count++);
            Type vt = kTypes[r.next() % 6];
            Expr v = gen(vt, depth - 1);
            vars.emplace_back(name, vt);
            Expr body = gen(t, depth - 1);
            vars.pop_back();
            return Let::make(name, v, body);
        }
        case 11: return Add::make(gen(t, depth - 1), constant(t));
        case 12: return Mul::make(Add::make(gen(t, depth - 1), constant(t)), constant(t));
        default: return Sub::make(gen(t, depth - 1), gen(t, depth - 1));
        }
    }
};

uint64_t rng_state;
uint64_t rnd() {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
int64_t pick_value() {
    static const int64_t special[] = {0, 1, -1, 2, -2, 7, 8, -8, 255, 256, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN,
                                      32767, -32768, 65535, 1 << 30, -(1 << 30)};
    uint64_t r = rnd();
    switch (r % 4) {
    case 0: return special[(r >> 8) % (sizeof(special) / sizeof(special[0]))];
    case 1: return (int64_t)((r >> 8) % 41) - 20;
    case 2: return (int64_t)(int32_t)(r >> 16);
    default: return (int64_t)((r >> 8) % 2001) - 1000;
    }
}

std::string scope_desc;

[[noreturn]] void fail(const char *what, const Expr &e, const Expr &s, const Env &env, int64_t a, int64_t b) {
    std::cerr << "\n*** simplifier fuzz failure: " << what << "\n  original:   " << e << "\n  simplified: " << s
              << "\n  env:";
    for (auto &p : env) std::cerr << " " << p.first << "=" << p.second;
    std::cerr << "\n  values: " << a << " vs " << b << "\n" << scope_desc;
    abort();
}

struct Stats {
    long inputs = 0, checked = 0, skip_orig = 0, skip_simpl = 0, changed = 0, bounds_checked = 0;
    ~Stats() {
        if (getenv("FUZZ_STATS"))
            fprintf(stderr, "inputs %ld changed %ld checked %ld skipped(orig ovf) %ld skipped(simplified ovf) %ld bounds %ld\n",
                    inputs, changed, checked, skip_orig, skip_simpl, bounds_checked);
    }
} stats;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    Reader rd{data, size};
    uint8_t mode = rd.next();
    Gen g(rd);
    if (mode & 0x20) g.lanes = (mode & 0x10) ? 8 : 4;
    Type t = g.T(kTypes[mode % 6]);
    Expr e;
    try {
        e = (mode & 0x40) ? Cast::make(Int(32, g.lanes), g.boolean(5)) : g.gen(t, 6);
    } catch (const std::exception &ex) {
        return 0;  // the generator built something the IR rejects
    }
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 1099511628211ull;
    rng_state = h | 1;

    bool scoped = (mode & 0x80) != 0;
    Scope scope;
    int64_t xlo = 0, xhi = 0, ylo = 0, yhi = 0;
    if (scoped) {
        xlo = (int64_t)(rnd() % 41) - 20;
        xhi = xlo + (int64_t)(rnd() % 20);
        ylo = (int64_t)(rnd() % 201) - 100;
        yhi = ylo + (int64_t)(rnd() % 60);
        scope["x"] = Interval(IntImm::make(Int(32), xlo), IntImm::make(Int(32), xhi));
        scope["y"] = Interval(IntImm::make(Int(32), ylo), IntImm::make(Int(32), yhi));
        scope_desc = "  scope: x in [" + std::to_string(xlo) + ", " + std::to_string(xhi) + "], y in [" +
                     std::to_string(ylo) + ", " + std::to_string(yhi) + "]\n";
    } else {
        scope_desc.clear();
    }

    Expr s;
    Interval bounds;
    try {
        s = scoped ? simplify(e, scope) : simplify(e);
        if (scoped) bounds = bounds_of_expr_in_scope(e, scope);
    } catch (const std::exception &ex) {
        std::cerr << "\n*** exception in simplify: " << ex.what() << "\n  original: " << e << "\n";
        abort();
    }
    // The interval arithmetic's step: simplify_binary over the simplified operands of a binary
    // node, checked below against the node's values like s.
    Expr sb;
    switch (e.get()->node_type) {
    case IRNodeType::Add:
    case IRNodeType::Sub:
    case IRNodeType::Mul:
    case IRNodeType::Div:
    case IRNodeType::Min:
    case IRNodeType::Max: {
        auto *bn = static_cast<const BinaryExprNode *>(e.get());
        try {
            sb = simplify_binary(bn->node_type, simplify(bn->a), simplify(bn->b));
        } catch (const std::exception &ex) {
            std::cerr << "\n*** exception in simplify_binary: " << ex.what() << "\n  original: " << e << "\n";
            abort();
        }
        if (!(sb.type() == e.type())) fail("type changed (simplify_binary)", e, sb, Env(), 0, 0);
        break;
    }
    default: break;
    }
    stats.inputs++;
    if (!s.same_as(e)) stats.changed++;
    if (getenv("FUZZ_PRINT")) std::cerr << e << "\n   -> " << s << "\n";
    if (!(s.type() == e.type())) fail("type changed", e, s, Env(), 0, 0);

    for (int iter = 0; iter < 12; iter++) {
        Env env;
        for (const char *v : {"x", "y", "z", "w", "u", "l"}) env[v] = pick_value();
        if (scoped) {
            env["x"] = iter == 0 ? xlo : iter == 1 ? xhi : xlo + (int64_t)(rnd() % (uint64_t)(xhi - xlo + 1));
            env["y"] = iter == 0 ? ylo : iter == 1 ? yhi : ylo + (int64_t)(rnd() % (uint64_t)(yhi - ylo + 1));
        }
        bool o1 = false, o2 = false;
        int lane = (int)(rnd() % (uint64_t)e.type().lanes());
        if (iter < e.type().lanes()) lane = iter;
        int64_t a = eval_expr(e, env, &o1, lane);
        // A vector operation is one operation: if it overflows in any lane, the assumption
        // that it does not lets the simplifier change every lane (ramp(INT_MAX, -k) + 1 folds
        // its base with the others' stride).
        for (int l = 0; l < e.type().lanes() && !o1; l++) {
            bool ol = false;
            eval_expr(e, env, &ol, l);
            o1 = ol;
        }
        if (o1) {
            stats.skip_orig++;
            continue;
        }
        int64_t b = eval_expr(s, env, &o2, lane);
        if (o2) stats.skip_simpl++;
        else stats.checked++;
        if (!o2 && a != b) fail("value mismatch", e, s, env, a, b);
        if (sb.defined()) {
            bool o3 = false;
            int64_t c = eval_expr(sb, env, &o3, lane);
            if (!o3 && a != c) fail("value mismatch (simplify_binary)", e, sb, env, a, c);
        }
        if (scoped && e.type().is_int_or_uint()) {
            const int64_t *lo = as_const_int(bounds.min);
            const int64_t *hi = as_const_int(bounds.max);
            int64_t lo_v = 0, hi_v = 0;
            bool hl = false, hh = false;
            if (auto *p = bounds.min.as<UIntImm>()) lo_v = (int64_t)p->value, hl = true;
            else if (lo) lo_v = *lo, hl = true;
            if (auto *p = bounds.max.as<UIntImm>()) hi_v = (int64_t)p->value, hh = true;
            else if (hi) hi_v = *hi, hh = true;
            if (hl || hh) stats.bounds_checked++;
            if (hl && a < lo_v) fail("value below lower bound", e, bounds.min, env, a, lo_v);
            if (hh && a > hi_v) fail("value above upper bound", e, bounds.max, env, a, hi_v);
        }
    }
    return 0;
}
