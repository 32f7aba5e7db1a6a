// The simplifier. See Simplify.h.
//
// Overflow model (as in Halide): Int(32) and Int(64) scalar arithmetic is assumed not to
// overflow. Rules that are only exact without overflow (comparison of linear forms, min/max of
// expressions differing by a constant, (a*c + k)/c -> a + k/c, distributing a sum over min/max,
// reasoning with variable ranges) are applied to those types only. Rewrites that are exact in
// wrapping (two's complement) arithmetic -- collecting linear terms with +, -, * by a constant,
// constant folding, min/max of constants, (x % c1) % c2 -- are applied to every integer type.
// Floats: constants are folded (float32 results rounded to float), nothing is reassociated.
#include "ir/Simplify.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "ir/Constants.h"
#include "ir/Evaluate.h"
#include "ir/IRVisitor.h"
#include "ir/ModulusRemainder.h"
#include "ir/Stack.h"

namespace weft {
namespace internal {

namespace {

using namespace ir_constants;

bool is_c(const Expr &e) { return cint(e) || cflt(e); }

/** A scalar integer expression of one variable and constants through + - * / % with at most
    `budget` nodes, e.g. the region minimum y % 56 or co * 32 of a compute_at tile. Lets bound
    to such values are substituted: the terms then cancel against their uses (a consumer's
    index co * 32 - tile.min becomes 0, so a register tile's accesses have constant offsets). */
bool cheap_affine(const Expr &e, int &budget, std::string &var) {
    if (--budget < 0 || e.type().lanes() != 1 || !e.type().is_int()) return false;
    if (cint(e)) return true;
    if (auto *v = e.as<Variable>()) {
        if (!var.empty() && var != v->name) return false;
        var = v->name;
        return true;
    }
    IRNodeType nt = e.get()->node_type;
    if (nt == IRNodeType::Add || nt == IRNodeType::Sub || nt == IRNodeType::Mul || nt == IRNodeType::Div ||
        nt == IRNodeType::Mod) {
        auto *op = static_cast<const BinaryExprNode *>(e.get());
        if (nt != IRNodeType::Add && nt != IRNodeType::Sub && !cint(op->b)) return false;
        return cheap_affine(op->a, budget, var) && cheap_affine(op->b, budget, var);
    }
    return false;
}
bool cheap_affine(const Expr &e) {
    int budget = 7;
    std::string var;
    return cheap_affine(e, budget, var);
}

Expr mkf(Type t, double v) {
    Expr r = FloatImm::make(t.element_of(), v);
    return t.lanes() > 1 ? Broadcast::make(r, t.lanes()) : r;
}
Expr mkbool(bool b, int lanes) { return mkc(Bool(lanes), b); }
bool float_foldable(Type t) { return t.is_float() && (t.bits() == 32 || t.bits() == 64); }

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
i128 mulw(i128 a, i128 b) { return (i128)((u128)a * (u128)b); }

// Int(32)/Int(64): the no-overflow assumption applies.
bool strict(Type t) { return t.is_int() && t.bits() >= 32; }

// ---------------- structural equality ----------------
bool eq(const Expr &a, const Expr &b) { return equal(a, b); }
bool eqv(const std::vector<Expr> &a, const std::vector<Expr> &b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); i++)
        if (!equal(a[i], b[i])) return false;
    return true;
}

// ---------------- linear forms ----------------
struct Lin {
    std::vector<std::pair<Expr, i128>> terms;
    i128 k = 0;
    bool exact = true;  // no coefficient was wrapped to the type's width
};

void norm(Type t, i128 &v, bool &exact) {
    i128 w = swrap(t.bits(), v);
    if (w != v) exact = false;
    v = w;
}
void add_term(Lin &L, const Expr &e, i128 c, Type t) {
    for (auto &p : L.terms) {
        if (eq(p.first, e)) {
            p.second += c;
            norm(t, p.second, L.exact);
            return;
        }
    }
    L.terms.emplace_back(e, c);
}
/** budget: how many more nodes this linear form may look through. Past it, a subtree is one
    opaque term: without a bound, a deep sum that stays unflattened (coefficients that overflow)
    is walked again at each level above it, and simplifying it takes time quadratic in its depth. */
void lin_of(const Expr &e, i128 scale, Lin &L, Type t, int &budget) {
    norm(t, scale, L.exact);
    if (scale == 0) return;
    if (--budget < 0) {
        add_term(L, e, scale, t);
        return;
    }
    i128 v;
    if (cint(e, &v)) {
        v = swrap(t.bits(), v);  // uint constants in signed form
        L.k += scale * v;
        norm(t, L.k, L.exact);
        return;
    }
    if (auto *p = e.as<Add>()) {
        lin_of(p->a, scale, L, t, budget);
        lin_of(p->b, scale, L, t, budget);
        return;
    }
    if (auto *p = e.as<Sub>()) {
        lin_of(p->a, scale, L, t, budget);
        lin_of(p->b, -scale, L, t, budget);
        return;
    }
    if (auto *p = e.as<Mul>()) {
        if (cint(p->b, &v)) {
            lin_of(p->a, scale * swrap(t.bits(), v), L, t, budget);
            return;
        }
        if (cint(p->a, &v)) {
            lin_of(p->b, scale * swrap(t.bits(), v), L, t, budget);
            return;
        }
    }
    add_term(L, e, scale, t);
}
void cleanup(Lin &L) {
    L.terms.erase(std::remove_if(L.terms.begin(), L.terms.end(), [](auto &p) { return p.second == 0; }),
                  L.terms.end());
}
Lin lin(const Expr &e) {
    Lin L;
    int budget = 256;
    lin_of(e, 1, L, e.type(), budget);
    cleanup(L);
    return L;
}
Lin lin_combine(const Lin &a, const Lin &b, i128 sb, Type t) {
    Lin L = a;
    L.exact = a.exact && b.exact;
    for (auto &p : b.terms) {
        i128 c = p.second * sb;
        norm(t, c, L.exact);
        add_term(L, p.first, c, t);
    }
    i128 k = b.k * sb;
    norm(t, k, L.exact);
    L.k += k;
    norm(t, L.k, L.exact);
    cleanup(L);
    return L;
}
Lin lin_scale(const Lin &a, i128 s, Type t) {
    Lin L;
    L.exact = a.exact;
    norm(t, s, L.exact);
    for (auto &p : a.terms) {
        i128 c = p.second * s;
        norm(t, c, L.exact);
        L.terms.emplace_back(p.first, c);
    }
    L.k = a.k * s;
    norm(t, L.k, L.exact);
    cleanup(L);
    return L;
}

Expr term_times(const Expr &t, i128 c, Type ty) { return c == 1 ? t : Mul::make(t, mkc(ty, c)); }

Expr emit(const Lin &L, Type t) {
    Expr r;
    i128 k = L.k;
    std::vector<std::pair<Expr, i128>> neg;
    for (auto &p : L.terms) {
        // Negative coefficients are subtracted, unless negating would overflow the type.
        if (p.second < 0 && representable(Int(t.bits()), -p.second)) {
            neg.push_back(p);
            continue;
        }
        Expr piece = term_times(p.first, p.second, t);
        r = r.defined() ? Add::make(r, piece) : piece;
    }
    for (auto &p : neg) {
        Expr piece = term_times(p.first, -p.second, t);
        if (!r.defined()) {
            if (k > 0) {
                r = mkc(t, k);
                k = 0;
            } else {
                r = mkc(t, 0);
            }
        }
        r = Sub::make(r, piece);
    }
    if (!r.defined()) return mkc(t, k);
    if (k > 0 || (k < 0 && !representable(Int(t.bits()), -k))) r = Add::make(r, mkc(t, k));
    else if (k < 0) r = Sub::make(r, mkc(t, -k));
    return r;
}

// Constant upper (upper = true) or lower bound of a Int(32)/Int(64) expression from its
// structure alone: constants, min/max, + and - of constants, * by constants, select.
bool cbound(const Expr &e, bool upper, i128 *v, int depth = 0);
bool cbound_(const Expr &e, bool upper, i128 *v, int depth);
bool cbound(const Expr &e, bool upper, i128 *v, int depth) {
    const i128 lim = (i128)1 << 62;  // keeps the i128 arithmetic below exact
    return cbound_(e, upper, v, depth) && *v < lim && *v > -lim;
}
bool cbound_(const Expr &e, bool upper, i128 *v, int depth) {
    if (depth > 8) return false;
    if (cint(e, v)) return true;
    i128 a, b;
    if (auto *p = e.as<Min>()) {
        if (upper) {
            bool ha = cbound(p->a, true, &a, depth + 1), hb = cbound(p->b, true, &b, depth + 1);
            if (ha && hb) *v = std::min(a, b);
            else if (ha) *v = a;
            else if (hb) *v = b;
            return ha || hb;
        }
        if (cbound(p->a, false, &a, depth + 1) && cbound(p->b, false, &b, depth + 1)) {
            *v = std::min(a, b);
            return true;
        }
        return false;
    }
    if (auto *p = e.as<Max>()) {
        if (!upper) {
            bool ha = cbound(p->a, false, &a, depth + 1), hb = cbound(p->b, false, &b, depth + 1);
            if (ha && hb) *v = std::max(a, b);
            else if (ha) *v = a;
            else if (hb) *v = b;
            return ha || hb;
        }
        if (cbound(p->a, true, &a, depth + 1) && cbound(p->b, true, &b, depth + 1)) {
            *v = std::max(a, b);
            return true;
        }
        return false;
    }
    if (auto *p = e.as<Select>()) {
        if (cbound(p->true_value, upper, &a, depth + 1) && cbound(p->false_value, upper, &b, depth + 1)) {
            *v = upper ? std::max(a, b) : std::min(a, b);
            return true;
        }
        return false;
    }
    if (auto *p = e.as<Add>()) {
        if (cbound(p->a, upper, &a, depth + 1) && cbound(p->b, upper, &b, depth + 1)) {
            *v = a + b;
            return true;
        }
        return false;
    }
    if (auto *p = e.as<Sub>()) {
        if (cbound(p->a, upper, &a, depth + 1) && cbound(p->b, !upper, &b, depth + 1)) {
            *v = a - b;
            return true;
        }
        return false;
    }
    if (auto *p = e.as<Mul>()) {
        i128 c;
        if (cint(p->b, &c)) {
            if (c >= 0 && cbound(p->a, upper, &a, depth + 1)) {
                *v = a * c;
                return true;
            }
            if (c < 0 && cbound(p->a, !upper, &a, depth + 1)) {
                *v = a * c;
                return true;
            }
        }
        return false;
    }
    if (auto *p = e.as<Mod>()) {  // a % k is in [0, k) for k > 0 (Euclidean)
        i128 k;
        if (!cint(p->b, &k) || k <= 0) return false;
        *v = upper ? k - 1 : 0;
        return true;
    }
    if (auto *p = e.as<Div>()) {  // rounds down: monotone in a for k > 0
        i128 k;
        if (!cint(p->b, &k) || k <= 0 || !cbound(p->a, upper, &a, depth + 1)) return false;
        *v = a >= 0 ? a / k : -((-a + k - 1) / k);
        return true;
    }
    return false;
}

// ---------------- small visitors ----------------
/** Uses of each of a set of names. */
class CountUsesOf : public IRVisitor {
public:
    explicit CountUsesOf(std::unordered_map<std::string, int> &c) : counts(c) {}
    std::unordered_map<std::string, int> &counts;

protected:
    void visit(const Variable *op) override {
        auto it = counts.find(op->name);
        if (it != counts.end()) it->second++;
    }
};

/** The Lets directly nested at the top of e (e, its body if a Let, ...) and what is inside the
    last; false where two of them bind the same name. */
bool let_chain(const Expr &e, std::vector<const Let *> &chain, Expr &inner) {
    std::unordered_map<std::string, int> seen;
    inner = e;
    while (auto l = inner.as<Let>()) {
        if (seen[l->name]++) return false;
        chain.push_back(l);
        inner = l->body;
    }
    return true;
}

/** Walks a chain of Lets from the innermost out in one walk over it (each Let's own count would
    walk the rest of the chain: quadratic in its length), calling keep(let, uses) with how many
    times the Let's body uses its name; where keep says true, the Let's value counts for the Lets
    around it. */
template <typename F>
void walk_let_uses(const std::vector<const Let *> &chain, const Expr &inner, F &&keep) {
    std::unordered_map<std::string, int> counts;
    for (auto *l : chain) counts[l->name] = 0;
    CountUsesOf c(counts);
    c.include(inner);
    for (size_t k = chain.size(); k-- > 0;)
        if (keep(chain[k], counts[chain[k]->name])) c.include(chain[k]->value);
}

class UsesAny : public IRVisitor {
public:
    explicit UsesAny(const Scope &s) : sc(s) {}
    const Scope &sc;
    bool found = false;

protected:
    void visit(const Variable *op) override {
        if (!found && sc.count(op->name)) found = true;
    }
};

bool is_noop(const Stmt &s) {
    if (!s.defined()) return true;
    if (auto *e = s.as<Evaluate>()) return is_c(e->value);
    return false;
}

// ---------------- the simplifier ----------------
class Simp : public IRMutator {
public:
    Scope sc;
    /** What is known modulo powers of two of the enclosing LetStmts' values (ir/ModulusRemainder.h). */
    std::map<std::string, ModRem> mr_lets;
    using IRMutator::mutate;

    Stmt noop() { return Evaluate::make(mkc(Int(32), 0)); }

    /** Runs f with `name` bound in mr_lets to what is known of `value` (undefined: nothing, a
        loop variable), then puts its entry back. */
    template <typename F>
    auto with_mod_rem(const std::string &name, const Expr &value, F f) {
        auto it = mr_lets.find(name);
        std::optional<ModRem> saved = it != mr_lets.end() ? std::optional<ModRem>(it->second) : std::nullopt;
        ModRem k = value.defined() ? modulus_remainder(value, mr_lets) : ModRem();
        if (k.m > 1) mr_lets[name] = k;
        else mr_lets.erase(name);
        auto r = f();
        if (saved) mr_lets[name] = *saved;
        else mr_lets.erase(name);
        return r;
    }

    bool scoped(const Expr &e) {
        if (sc.empty()) return false;
        UsesAny u(sc);
        u.include(e);
        return u.found;
    }
    Interval bnd(const Expr &e) {
        if (!scoped(e)) return Interval::single_point(e);
        return bounds_of_expr_in_scope(e, sc);
    }
    // Constant bounds of e from the scope (false if not both constant).
    bool cbounds(const Expr &e, i128 *lo, i128 *hi) {
        if (sc.empty()) return false;
        Interval I = bnd(e);
        return cint(I.min, lo) && cint(I.max, hi);
    }

    /** The cheap values of the enclosing LetStmts dropped (ir/Simplify.cpp, visit(LetStmt)): a
        use of the name is its value. repl_vars_ counts the variables those values use. */
    std::unordered_map<std::string, Expr> repl_;
    std::unordered_map<std::string, int> repl_vars_;
    struct Bound {
        std::string name;
        Expr old;  // its value before (undefined: none)
    };
    void count_vars(const Expr &v, int d) {
        struct Vars : IRVisitor {
            std::unordered_map<std::string, int> *m;
            int d;
            void visit(const Variable *op) override {
                int &n = (*m)[op->name];
                n += d;
                if (n == 0) m->erase(op->name);
            }
        } c;
        c.m = &repl_vars_;
        c.d = d;
        c.include(v);
    }
    /** repl_[n] = v, and the count of its variables. */
    void put(const std::string &n, const Expr &v) {
        take(n);
        repl_[n] = v;
        count_vars(v, +1);
    }
    /** repl_[n] taken out (undefined if none), and the count of its variables. */
    Expr take(const std::string &n) {
        auto it = repl_.find(n);
        if (it == repl_.end()) return Expr();
        Expr v = std::move(it->second);
        repl_.erase(it);
        count_vars(v, -1);
        return v;
    }
    Bound bind(const std::string &n, const Expr &v) {
        Bound b{n, take(n)};
        put(n, v);
        return b;
    }
    void unbind(const Bound &b) {
        take(b.name);
        if (b.old.defined()) put(b.name, b.old);
    }
    /** A binding of `name` that stays (a loop, a let kept): inside it the name is that binding,
        not a dropped let's value; and a dropped let's value that uses the name would see the new
        binding there (captured), so it is taken out for the body and, where the body still uses
        the let, the let is put back around the binding (by wrap()). */
    struct Rebind {
        std::vector<Bound> hidden;                           // to restore
        std::vector<std::pair<std::string, Expr>> captured;  // lets to put back around
    };
    Rebind rebind(const std::string &name) {
        Rebind r;
        if (repl_.empty()) return r;
        std::vector<std::string> out;
        if (repl_.count(name)) out.push_back(name);
        if (repl_vars_.count(name))
            for (auto &kv : repl_)
                if (kv.first != name && expr_uses_var(kv.second, name)) {
                    out.push_back(kv.first);
                    r.captured.push_back(kv);
                }
        for (auto &n : out) r.hidden.push_back(Bound{n, take(n)});
        return r;
    }
    void restore(const Rebind &r) {
        for (auto &b : r.hidden) put(b.name, b.old);
    }
    Stmt wrap(const Rebind &r, Stmt s) {
        for (auto &kv : r.captured)
            if (stmt_uses_var(s, kv.first)) s = LetStmt::make(kv.first, kv.second, s);
        return s;
    }
    Expr wrap(const Rebind &r, Expr e) {
        for (auto &kv : r.captured)
            if (expr_uses_var(e, kv.first)) e = Let::make(kv.first, kv.second, e);
        return e;
    }

    // Push / pop a variable's range.
    struct Saved {
        std::string name;
        bool had;
        Interval old;
    };
    Saved push(const std::string &n, const Interval &i) {
        Saved s{n, false, Interval()};
        auto it = sc.find(n);
        if (it != sc.end()) {
            s.had = true;
            s.old = it->second;
        }
        sc[n] = i;
        return s;
    }
    void pop(const Saved &s) {
        if (s.had) sc[s.name] = s.old;
        else sc.erase(s.name);
    }

    Expr mk_ramp(const Expr &base, const Expr &stride, int lanes) {
        if (cint(stride) && is_const_zero(stride)) return Broadcast::make(base, lanes);
        double f;
        if (cflt(stride, &f) && f == 0 && !std::signbit(f)) return Broadcast::make(base, lanes);
        return Ramp::make(base, stride, lanes);
    }

    // Min/max distribution: in L, a term min(p, q) / max(p, q) with coefficient +-1 whose rest R
    // cancels against p or q. Returns undefined if not applicable.
    Expr distribute(const Lin &L, Type t) {
        if (!strict(t) || L.terms.size() < 2) return Expr();
        for (size_t i = 0; i < L.terms.size(); i++) {
            const Expr &m = L.terms[i].first;
            i128 c = L.terms[i].second;
            if (c != 1 && c != -1) continue;
            const Min *mn = m.as<Min>();
            const Max *mx = m.as<Max>();
            if (!mn && !mx) continue;
            Expr p = mn ? mn->a : mx->a, q = mn ? mn->b : mx->b;
            Lin R;
            R.k = L.k;
            for (size_t j = 0; j < L.terms.size(); j++)
                if (j != i) R.terms.push_back(L.terms[j]);
            Lin lp = lin(p), lq = lin(q);
            Lin P = lin_combine(R, lp, c, t), Q = lin_combine(R, lq, c, t);
            if (!P.exact || !Q.exact || !lp.exact || !lq.exact) continue;
            // Only when some term of R cancels out entirely against p or q.
            auto cancels_in = [&](const Lin &X) {
                for (auto &r : R.terms) {
                    bool found = false;
                    for (auto &x : X.terms)
                        if (eq(x.first, r.first)) found = true;
                    if (!found) return true;
                }
                return false;
            };
            bool cancels = cancels_in(P) || cancels_in(Q);
            if (!cancels) continue;
            bool is_min = (mn != nullptr) == (c == 1);
            Expr pe = emit(P, t), qe = emit(Q, t);
            return is_min ? mk_min(pe, qe) : mk_max(pe, qe);
        }
        return Expr();
    }

    /** a * (x % c) + a * c * (x / c) -> a * x (floor division: exact for every x, c > 0). */
    static void fold_div_mod(Lin &L, Type t) {
        for (size_t i = 0; i < L.terms.size(); i++) {
            auto *m = L.terms[i].first.as<Mod>();
            i128 c;
            if (!m || !cint(m->b, &c) || c <= 0) continue;
            i128 a = L.terms[i].second, ac = a * c;
            norm(t, ac, L.exact);
            for (size_t j = 0; j < L.terms.size(); j++) {
                auto *d = L.terms[j].first.as<Div>();
                if (!d || L.terms[j].second != ac || !eq(d->a, m->a) || !eq(d->b, m->b)) continue;
                Expr x = m->a;
                L.terms.erase(L.terms.begin() + std::max(i, j));
                L.terms.erase(L.terms.begin() + std::min(i, j));
                L = lin_combine(L, lin(x), a, t);
                i = (size_t)-1;  // look again from the start
                break;
            }
        }
    }
    Expr finish(Lin &L, Type t, const Expr &fallback) {
        if (strict(t) && !L.exact) return fallback;
        if (t.is_scalar() && L.terms.size() >= 2) fold_div_mod(L, t);
        Expr d = distribute(L, t);
        if (d.defined()) return d;
        return emit(L, t);
    }

    // ---- arithmetic on simplified operands ----
    enum Op { ADD, SUB, MUL };
    Expr vec_arith(Op op, const Expr &a, const Expr &b) {
        Type t = a.type();
        int n = t.lanes();
        auto *ba = a.as<Broadcast>(), *bb = b.as<Broadcast>();
        auto *ra = a.as<Ramp>(), *rb = b.as<Ramp>();
        auto f = [&](const Expr &x, const Expr &y) { return op == ADD ? mk_add(x, y) : op == SUB ? mk_sub(x, y) : mk_mul(x, y); };
        if (ba && bb) return Broadcast::make(f(ba->value, bb->value), n);
        if (!t.is_int_or_uint()) return Expr();
        Type s = t.element_of();
        switch (op) {
        case ADD:
            if (ra && bb) return mk_ramp(mk_add(ra->base, bb->value), ra->stride, n);
            if (ba && rb) return mk_ramp(mk_add(ba->value, rb->base), rb->stride, n);
            if (ra && rb) return mk_ramp(mk_add(ra->base, rb->base), mk_add(ra->stride, rb->stride), n);
            if (cint(b) && is_const_zero(b)) return a;
            if (cint(a) && is_const_zero(a)) return b;
            break;
        case SUB:
            if (ra && bb) return mk_ramp(mk_sub(ra->base, bb->value), ra->stride, n);
            if (ba && rb) return mk_ramp(mk_sub(ba->value, rb->base), mk_sub(mkc(s, 0), rb->stride), n);
            if (ra && rb) return mk_ramp(mk_sub(ra->base, rb->base), mk_sub(ra->stride, rb->stride), n);
            if (cint(b) && is_const_zero(b)) return a;
            if (eq(a, b)) return mkc(t, 0);
            break;
        case MUL:
            if (ra && bb) return mk_ramp(mk_mul(ra->base, bb->value), mk_mul(ra->stride, bb->value), n);
            if (ba && rb) return mk_ramp(mk_mul(ba->value, rb->base), mk_mul(ba->value, rb->stride), n);
            if (cint(b) && is_const_one(b)) return a;
            if (cint(a) && is_const_one(a)) return b;
            if ((cint(b) && is_const_zero(b)) || (cint(a) && is_const_zero(a))) return mkc(t, 0);
            break;
        }
        return Expr();
    }

    Expr mk_add(const Expr &a, const Expr &b) {
        Type t = a.type();
        if (t.is_float()) {
            double x, y;
            if (float_foldable(t) && cflt(a, &x) && cflt(b, &y)) return mkf(t, x + y);
            auto *ba = a.as<Broadcast>(), *bb = b.as<Broadcast>();
            if (ba && bb) return Broadcast::make(mk_add(ba->value, bb->value), t.lanes());
            return Add::make(a, b);
        }
        if (!t.is_int_or_uint()) return Add::make(a, b);
        i128 x, y;
        if (cint(a, &x) && cint(b, &y)) return mkc(t, x + y);
        if (t.is_vector()) {
            Expr r = vec_arith(ADD, a, b);
            return r.defined() ? r : Add::make(a, b);
        }
        Lin L = lin_combine(lin(a), lin(b), 1, t);
        return finish(L, t, Add::make(a, b));
    }
    Expr mk_sub(const Expr &a, const Expr &b) {
        Type t = a.type();
        if (t.is_float()) {
            double x, y;
            if (float_foldable(t) && cflt(a, &x) && cflt(b, &y)) return mkf(t, x - y);
            auto *ba = a.as<Broadcast>(), *bb = b.as<Broadcast>();
            if (ba && bb) return Broadcast::make(mk_sub(ba->value, bb->value), t.lanes());
            return Sub::make(a, b);
        }
        if (!t.is_int_or_uint()) return Sub::make(a, b);
        i128 x, y;
        if (cint(a, &x) && cint(b, &y)) return mkc(t, x - y);
        if (t.is_vector()) {
            Expr r = vec_arith(SUB, a, b);
            return r.defined() ? r : Sub::make(a, b);
        }
        Lin L = lin_combine(lin(a), lin(b), -1, t);
        return finish(L, t, Sub::make(a, b));
    }
    Expr mk_mul(Expr a, Expr b) {
        Type t = a.type();
        if (t.is_float()) {
            double x, y;
            if (float_foldable(t) && cflt(a, &x) && cflt(b, &y)) return mkf(t, x * y);
            auto *ba = a.as<Broadcast>(), *bb = b.as<Broadcast>();
            if (ba && bb) return Broadcast::make(mk_mul(ba->value, bb->value), t.lanes());
            return Mul::make(a, b);
        }
        if (!t.is_int_or_uint()) return Mul::make(a, b);
        i128 x, y;
        if (cint(a, &x) && cint(b, &y)) return mkc(t, mulw(x, y));
        if (t.is_vector()) {
            Expr r = vec_arith(MUL, a, b);
            return r.defined() ? r : Mul::make(a, b);
        }
        if (cint(a)) std::swap(a, b);
        if (cint(b, &y)) {
            y = swrap(t.bits(), y);
            if (y == 0) return mkc(t, 0);
            if (y == 1) return a;
            Lin L = lin_scale(lin(a), y, t);
            return finish(L, t, Mul::make(a, b));
        }
        Lin la = lin(a), lb = lin(b);
        if (la.terms.size() == 1 && la.k == 0 && lb.terms.size() == 1 && lb.k == 0 &&
            (la.terms[0].second != 1 || lb.terms[0].second != 1)) {
            Lin L;
            L.exact = la.exact && lb.exact;
            i128 c = la.terms[0].second * lb.terms[0].second;
            norm(t, c, L.exact);
            L.terms.emplace_back(Mul::make(la.terms[0].first, lb.terms[0].first), c);
            cleanup(L);
            if (!strict(t) || L.exact) return emit(L, t);
        }
        return Mul::make(a, b);
    }

    Expr mk_div(const Expr &a, const Expr &b) {
        Type t = a.type();
        auto *ba = a.as<Broadcast>(), *bb = b.as<Broadcast>();
        if (t.is_float()) {
            double x, y;
            if (float_foldable(t) && cflt(a, &x) && cflt(b, &y)) return mkf(t, x / y);
            if (ba && bb) return Broadcast::make(mk_div(ba->value, bb->value), t.lanes());
            return Div::make(a, b);
        }
        if (!t.is_int_or_uint()) return Div::make(a, b);
        i128 x, y;
        if (!cint(b, &y)) {
            if (ba && bb) return Broadcast::make(mk_div(ba->value, bb->value), t.lanes());
            return Div::make(a, b);
        }
        if (y == 0) return mkc(t, 0);
        if (cint(a, &x)) return mkc(t, floordiv(x, y));
        if (y == 1) return a;
        if (ba && bb) return Broadcast::make(mk_div(ba->value, bb->value), t.lanes());
        Type s = t.element_of();
        if (t.is_int() && y == -1) return mk_sub(mkc(t, 0), a);
        if (y < 0) return Div::make(a, b);
        // (a / c1) / c2 -> a / (c1 * c2), c1, c2 > 0
        if (auto *d = a.as<Div>()) {
            i128 c1;
            if (cint(d->b, &c1) && c1 > 0 && representable(s, c1 * y)) return mk_div(d->a, mkc(t, c1 * y));
        }
        // (a / c1 + k) / c2 -> (a + k * c1) / (c1 * c2), c1, c2 > 0 (floor division; a pyramid's
        // coordinates, level after level, stay one division deep)
        if (auto *ad = a.as<Add>(); ad && strict(s)) {
            auto *d = ad->a.as<Div>();
            i128 c1, k;
            if (d && cint(d->b, &c1) && c1 > 0 && cint(ad->b, &k) && representable(s, c1 * y) && representable(s, k * c1))
                return mk_div(mk_add(d->a, mkc(t, k * c1)), mkc(t, c1 * y));
        }
        // With known ranges: a lies within one period.
        i128 lo, hi;
        if (t.is_scalar() && cbounds(a, &lo, &hi) && floordiv(lo, y) == floordiv(hi, y))
            return mkc(t, floordiv(lo, y));
        if (!strict(s)) return Div::make(a, b);
        if (auto *r = a.as<Ramp>()) {
            i128 st;
            if (cint(r->stride, &st)) {
                if (floormod(st, y) == 0)
                    return mk_ramp(mk_div(r->base, mkc(s, y)), mkc(s, st / y), r->lanes);
                // base = c*Q + r0 with 0 <= r0 and r0 + stride*(lanes-1) < c (stride >= 0)
                Lin L = lin(r->base);
                if (L.exact && st >= 0) {
                    Lin Q;
                    bool ok = true;
                    for (auto &p : L.terms) {
                        if (floormod(p.second, y) != 0) ok = false;
                        else Q.terms.emplace_back(p.first, p.second / y);
                    }
                    i128 q0 = floordiv(L.k, y), r0 = floormod(L.k, y);
                    Q.k = q0;
                    if (ok && r0 + st * (r->lanes - 1) < y) return Broadcast::make(emit(Q, s), r->lanes);
                }
            }
            return Div::make(a, b);
        }
        if (t.is_vector()) return Div::make(a, b);
        Lin L = lin(a);
        if (!L.exact) return Div::make(a, b);
        Lin Q, R;
        for (auto &p : L.terms) {
            if (floormod(p.second, y) == 0) Q.terms.emplace_back(p.first, p.second / y);
            else R.terms.push_back(p);
        }
        Q.k = floordiv(L.k, y);
        R.k = floormod(L.k, y);
        if (R.terms.empty()) return emit(Q, t);
        if (Q.terms.empty() && Q.k == 0 && R.k == L.k) return Div::make(a, b);
        Expr re = emit(R, t);
        if (cbounds(re, &lo, &hi) && floordiv(lo, y) == floordiv(hi, y)) {
            Q.k += floordiv(lo, y);
            return emit(Q, t);
        }
        Expr q = Div::make(re, b);
        if (Q.terms.empty() && Q.k == 0) return q;
        return mk_add(emit(Q, t), q);
    }

    Expr mk_mod(const Expr &a, const Expr &b) {
        Type t = a.type();
        auto *ba = a.as<Broadcast>(), *bb = b.as<Broadcast>();
        if (ba && bb) return Broadcast::make(mk_mod(ba->value, bb->value), t.lanes());
        if (!t.is_int_or_uint()) return Mod::make(a, b);
        i128 x, y;
        if (!cint(b, &y)) return Mod::make(a, b);
        if (y == 0) return mkc(t, 0);
        if (cint(a, &x)) return mkc(t, floormod(x, y));
        if (y == 1 || (t.is_int() && y == -1)) return mkc(t, 0);
        if (y < 0) return Mod::make(a, b);
        Type s = t.element_of();
        // (a % c1) % c2
        if (auto *m = a.as<Mod>()) {
            i128 c1;
            if (cint(m->b, &c1) && c1 > 0) {
                if (c1 <= y) return a;
                if (c1 % y == 0) return mk_mod(m->a, b);
            }
        }
        // A power of two (one the type's wrapping keeps residues modulo): what is known of a
        // modulo it, through the mins, selects and lets that hide a linear form (a tiled loop's
        // clamped start, `min(32 x - 1, 2529)`, is odd).
        if ((y & (y - 1)) == 0 && y <= kMaxModulus && y <= ((i128)1 << (s.bits() - 1))) {
            if (t.is_scalar()) {
                ModRem k = modulus_remainder(a, mr_lets);
                if (k.m % (int64_t)y == 0) return mkc(t, floormod(k.r, y));
            } else if (auto *r = a.as<Ramp>(); r && !cint(r->base) && cint(r->stride)) {
                ModRem k = modulus_remainder(r->base, mr_lets);
                if (k.m % (int64_t)y == 0) return mk_mod(mk_ramp(mkc(s, floormod(k.r, y)), r->stride, r->lanes), b);
            }
        }
        i128 lo, hi;
        if (t.is_scalar() && cbounds(a, &lo, &hi) && floordiv(lo, y) == floordiv(hi, y)) {
            i128 m = floordiv(lo, y);
            return m == 0 ? a : mk_sub(a, mkc(t, m * y));
        }
        bool pow2 = (y & (y - 1)) == 0;
        if (!strict(s) && !pow2) return Mod::make(a, b);
        if (auto *r = a.as<Ramp>()) {
            i128 st;
            if (strict(s) && cint(r->stride, &st)) {
                if (floormod(st, y) == 0) return Broadcast::make(mk_mod(r->base, mkc(s, y)), r->lanes);
                Lin L = lin(r->base);
                if (L.exact && st >= 0) {
                    bool ok = true;
                    for (auto &p : L.terms)
                        if (floormod(p.second, y) != 0) ok = false;
                    i128 r0 = floormod(L.k, y);
                    if (ok && r0 + st * (r->lanes - 1) < y) return mk_ramp(mkc(s, r0), r->stride, r->lanes);
                }
            }
            return Mod::make(a, b);
        }
        if (t.is_vector()) return Mod::make(a, b);
        Lin L = lin(a);
        if (strict(s) && !L.exact) return Mod::make(a, b);
        Lin R;
        bool changed = false;
        for (auto &p : L.terms) {
            if (floormod(p.second, y) == 0) changed = true;
            else R.terms.push_back(p);
        }
        R.k = floormod(L.k, y);
        if (R.k != L.k) changed = true;
        if (R.terms.empty()) return mkc(t, R.k);
        if (!changed) return Mod::make(a, b);
        Expr re = emit(R, t);
        if (cbounds(re, &lo, &hi) && floordiv(lo, y) == floordiv(hi, y)) {
            i128 m = floordiv(lo, y);
            return m == 0 ? re : mk_sub(re, mkc(t, m * y));
        }
        return Mod::make(re, b);
    }

    Expr mk_min(const Expr &a, const Expr &b) { return mk_minmax(true, a, b); }
    Expr mk_max(const Expr &a, const Expr &b) { return mk_minmax(false, a, b); }
    Expr mk_minmax(bool is_min, Expr a, Expr b) {
        Type t = a.type();
        auto build = [&](const Expr &x, const Expr &y) { return is_min ? Min::make(x, y) : Max::make(x, y); };
        if (t.is_float()) {
            double x, y;
            if (float_foldable(t) && cflt(a, &x) && cflt(b, &y) && !std::isnan(x) && !std::isnan(y)) {
                if (x == y) return a;  // e.g. min(0.0, -0.0): leave the choice to the backend
                return (is_min ? (x < y) : (x > y)) ? a : b;
            }
        }
        auto *ba = a.as<Broadcast>(), *bb = b.as<Broadcast>();
        if (ba && bb) return Broadcast::make(mk_minmax(is_min, ba->value, bb->value), t.lanes());
        if (!t.is_int_or_uint()) {
            if (t.is_bool()) {
                i128 x, y;
                if (cint(a, &x) && cint(b, &y)) return (is_min ? (x < y) : (x > y)) ? a : b;
            }
            if (!t.is_float() && eq(a, b)) return a;
            return build(a, b);
        }
        i128 x, y;
        if (cint(a, &x) && cint(b, &y)) return (is_min ? (x <= y) : (x >= y)) ? a : b;
        if (eq(a, b)) return a;
        if (cint(a)) std::swap(a, b);
        Type s = t.element_of();
        if (cint(b, &y)) {
            if (y == (is_min ? tmax(s) : tmin(s))) return a;
            if (y == (is_min ? tmin(s) : tmax(s))) return b;
            // nested constants
            if (auto *m = is_min ? nullptr : a.as<Max>()) {
                i128 c1;
                if (cint(m->b, &c1)) return mk_max(m->a, mkc(t, std::max(c1, y)));
            }
            if (auto *m = is_min ? a.as<Min>() : nullptr) {
                i128 c1;
                if (cint(m->b, &c1)) return mk_min(m->a, mkc(t, std::min(c1, y)));
            }
            if (is_min) {
                if (auto *m = a.as<Max>()) {
                    i128 c1;
                    if (cint(m->b, &c1) && c1 >= y) return b;
                }
            } else {
                if (auto *m = a.as<Min>()) {
                    i128 c1;
                    if (cint(m->b, &c1) && c1 <= y) return b;
                }
            }
        }
        // min(a, max(a, b)) -> a, min(a, min(a, b)) -> min(a, b), and the like.
        for (int swap = 0; swap < 2; swap++) {
            const Expr &p = swap ? b : a, &q = swap ? a : b;
            if (auto *m = q.as<Max>()) {
                if (is_min && (eq(m->a, p) || eq(m->b, p))) return p;
                if (!is_min && (eq(m->a, p) || eq(m->b, p))) return q;
            }
            if (auto *m = q.as<Min>()) {
                if (!is_min && (eq(m->a, p) || eq(m->b, p))) return p;
                if (is_min && (eq(m->a, p) || eq(m->b, p))) return q;
            }
        }
        if (t.is_scalar() && strict(s)) {
            const Lin La = lin(a), Lb = lin(b);
            Lin D = lin_combine(La, Lb, -1, t);
            if (D.exact) {
                if (D.terms.empty()) return ((D.k <= 0) == is_min) ? a : b;
                Expr de = emit(D, t);
                Interval I = sc.empty() ? Interval::single_point(de) : bnd(de);
                i128 v;
                if (cbound(I.max, true, &v) && v <= 0) return is_min ? a : b;
                if (cbound(I.min, false, &v) && v >= 0) return is_min ? b : a;
                if (D.terms.size() == 2 && D.terms[0].first.as<Div>() && D.terms[1].first.as<Div>()) {
                    // min(y / 2, (y + 1) / 2) -> y / 2: floor division is monotone (see mk_cmp).
                    if (is_true(mk_cmp(IRNodeType::LE, a, b))) return is_min ? a : b;
                    if (is_true(mk_cmp(IRNodeType::LE, b, a))) return is_min ? b : a;
                }
                // min(c + p, c + q) -> c + min(p, q), for the terms both sides share with the
                // same coefficient: the indices of one row clamped at its end (a ShiftInwards
                // tail, min(row + x * 8 - 26, row + 274)) then share one min, which code
                // generation computes once for all of them.
                if (La.exact && Lb.exact) {
                    Lin C, Pa, Pb;
                    for (auto &ta : La.terms)
                        for (auto &tb : Lb.terms)
                            if (ta.second == tb.second && eq(ta.first, tb.first)) C.terms.push_back(ta);
                    if (!C.terms.empty()) {
                        Pa = lin_combine(La, C, -1, t);
                        Pb = lin_combine(Lb, C, -1, t);
                        if (Pa.exact && Pb.exact && !(Pa.terms.empty() && Pb.terms.empty()))
                            return mk_add(emit(C, t), mk_minmax(is_min, emit(Pa, t), emit(Pb, t)));
                    }
                }
            }
        } else if (t.is_scalar() && !sc.empty()) {
            i128 alo, ahi, blo, bhi;
            if (cbounds(a, &alo, &ahi) && cbounds(b, &blo, &bhi)) {
                if (ahi <= blo) return is_min ? a : b;
                if (bhi <= alo) return is_min ? b : a;
            }
        }
        return build(a, b);
    }

    Expr mk_cmp(IRNodeType op, Expr a, Expr b) {
        if (op == IRNodeType::GT) {
            op = IRNodeType::LT;
            std::swap(a, b);
        } else if (op == IRNodeType::GE) {
            op = IRNodeType::LE;
            std::swap(a, b);
        }
        Type t = a.type();
        int lanes = t.lanes();
        auto build = [&](const Expr &x, const Expr &y) -> Expr {
            switch (op) {
            case IRNodeType::LT: return LT::make(x, y);
            case IRNodeType::LE: return LE::make(x, y);
            case IRNodeType::EQ: return EQ::make(x, y);
            default: return NE::make(x, y);
            }
        };
        auto res = [&](i128 d) -> bool {  // outcome given the sign of a - b
            switch (op) {
            case IRNodeType::LT: return d < 0;
            case IRNodeType::LE: return d <= 0;
            case IRNodeType::EQ: return d == 0;
            default: return d != 0;
            }
        };
        double fx, fy;
        if (float_foldable(t) && cflt(a, &fx) && cflt(b, &fy)) {
            bool r = op == IRNodeType::LT ? fx < fy : op == IRNodeType::LE ? fx <= fy : op == IRNodeType::EQ ? fx == fy : fx != fy;
            return mkbool(r, lanes);
        }
        auto *ba = a.as<Broadcast>(), *bb = b.as<Broadcast>();
        if (ba && bb) return Broadcast::make(mk_cmp(op, ba->value, bb->value), lanes);
        if (t.is_float()) return build(a, b);
        i128 x, y;
        if (cint(a, &x) && cint(b, &y)) return mkbool(res(x < y ? -1 : x > y ? 1 : 0), lanes);
        if (eq(a, b)) return mkbool(res(0), lanes);
        if (!t.is_int_or_uint() || t.is_vector()) return build(a, b);
        Type s = t.element_of();
        if (!strict(s)) {
            i128 alo, ahi, blo, bhi;
            if (cbounds(a, &alo, &ahi) && cbounds(b, &blo, &bhi)) {
                switch (op) {
                case IRNodeType::LT:
                    if (ahi < blo) return mkbool(true, lanes);
                    if (alo >= bhi) return mkbool(false, lanes);
                    break;
                case IRNodeType::LE:
                    if (ahi <= blo) return mkbool(true, lanes);
                    if (alo > bhi) return mkbool(false, lanes);
                    break;
                default:
                    if (ahi < blo || bhi < alo) return mkbool(op == IRNodeType::NE, lanes);
                    if (alo == ahi && blo == bhi && alo == blo) return mkbool(op == IRNodeType::EQ, lanes);
                    break;
                }
            }
            return build(a, b);
        }
        Lin D = lin_combine(lin(a), lin(b), -1, t);
        if (!D.exact) return build(a, b);
        if (D.terms.empty()) return mkbool(res(D.k), lanes);
        {
            Expr de = emit(D, t);
            Interval I = sc.empty() ? Interval::single_point(de) : bnd(de);
            i128 lo, hi;
            bool hl = cbound(I.min, false, &lo), hh = cbound(I.max, true, &hi);
            switch (op) {
            case IRNodeType::LT:
                if (hh && hi < 0) return mkbool(true, lanes);
                if (hl && lo >= 0) return mkbool(false, lanes);
                break;
            case IRNodeType::LE:
                if (hh && hi <= 0) return mkbool(true, lanes);
                if (hl && lo > 0) return mkbool(false, lanes);
                break;
            default:
                if ((hh && hi < 0) || (hl && lo > 0)) return mkbool(op == IRNodeType::NE, lanes);
                if (hh && hl && lo == 0 && hi == 0) return mkbool(op == IRNodeType::EQ, lanes);
                break;
            }
        }
        if ((op == IRNodeType::LE || op == IRNodeType::LT) && D.terms.size() == 2) {
            // p / c - q / c + k <= 0 (or < 0), one positive constant c: floor division is
            // monotone and (q + m * c) / c = q / c + m, so p <= q + m * c proves p / c <= q / c + m,
            // and p >= q + (m + 1) * c disproves it (a downsampled consumer's rows: y / 2 against
            // (y - 1) / 2, as sliding windows and bounds need).
            const Div *d0 = D.terms[0].first.as<Div>(), *d1 = D.terms[1].first.as<Div>();
            i128 c0 = 0, c1 = 0;
            if (d0 && d1 && cint(d0->b, &c0) && cint(d1->b, &c1) && c0 == c1 && c0 > 0 &&
                D.terms[0].second == -D.terms[1].second && (D.terms[0].second == 1 || D.terms[0].second == -1)) {
                const Div *pd = D.terms[0].second == 1 ? d0 : d1, *qd = D.terms[0].second == 1 ? d1 : d0;
                i128 m = -D.k - (op == IRNodeType::LT ? 1 : 0);  // p / c <= q / c + m
                if (representable(s, m * c0) && representable(s, (m + 1) * c0)) {
                    if (is_true(mk_cmp(IRNodeType::LE, pd->a, mk_add(qd->a, mkc(t, m * c0))))) return mkbool(true, lanes);
                    if (is_true(mk_cmp(IRNodeType::LE, mk_add(qd->a, mkc(t, (m + 1) * c0)), pd->a)))
                        return mkbool(false, lanes);
                }
            }
        }
        // Canonical form: (positive terms) op (negated negative terms) - k.
        Lin P, N;
        for (auto &p : D.terms) {
            if (p.second > 0) P.terms.push_back(p);
            else if (representable(s, -p.second)) N.terms.emplace_back(p.first, -p.second);
            else return build(a, b);
        }
        if (P.terms.empty()) {
            // k op N  (D = k - N)
            return build(mkc(t, D.k), emit(N, t));
        }
        if (!representable(s, -D.k)) return build(a, b);
        N.k = -D.k;
        return build(emit(P, t), emit(N, t));
    }

    Expr mk_not(const Expr &a) {
        i128 v;
        if (cint(a, &v)) return mkbool(v == 0, a.type().lanes());
        if (auto *b = a.as<Broadcast>()) return Broadcast::make(mk_not(b->value), b->lanes);
        if (auto *n = a.as<Not>()) return n->a;
        if (auto *c = a.as<LT>())
            if (!c->a.type().is_float()) return mk_cmp(IRNodeType::LE, c->b, c->a);
        if (auto *c = a.as<LE>())
            if (!c->a.type().is_float()) return mk_cmp(IRNodeType::LT, c->b, c->a);
        if (auto *c = a.as<GT>())
            if (!c->a.type().is_float()) return mk_cmp(IRNodeType::LE, c->a, c->b);
        if (auto *c = a.as<GE>())
            if (!c->a.type().is_float()) return mk_cmp(IRNodeType::LT, c->a, c->b);
        if (auto *c = a.as<EQ>()) return mk_cmp(IRNodeType::NE, c->a, c->b);
        if (auto *c = a.as<NE>()) return mk_cmp(IRNodeType::EQ, c->a, c->b);
        return Not::make(a);
    }

    Expr mk_andor(bool is_and, const Expr &a, const Expr &b) {
        int lanes = a.type().lanes();
        i128 v;
        // `absorbing` value: false for And, true for Or.
        for (int i = 0; i < 2; i++) {
            const Expr &p = i ? b : a, &q = i ? a : b;
            if (cint(p, &v)) {
                if ((v != 0) == is_and) return q;  // identity
                return mkbool(!is_and, lanes);
            }
        }
        auto *ba = a.as<Broadcast>(), *bb = b.as<Broadcast>();
        if (ba && bb) return Broadcast::make(mk_andor(is_and, ba->value, bb->value), lanes);
        if (eq(a, b)) return a;
        if (eq(mk_not(a), b)) return mkbool(!is_and, lanes);
        return is_and ? And::make(a, b) : Or::make(a, b);
    }

    Expr mk_select(const Expr &c, const Expr &tv, const Expr &fv) {
        i128 v;
        if (cint(c, &v)) return v ? tv : fv;
        if (eq(tv, fv)) return tv;
        int lanes = tv.type().lanes();
        if (auto *n = c.as<Not>()) return mk_select(n->a, fv, tv);
        if (tv.type().is_bool() && c.type().lanes() == lanes) {
            i128 x, y;
            if (cint(tv, &x) && cint(fv, &y)) return x ? c : mk_not(c);
        }
        if (auto *s = tv.as<Select>())
            if (eq(s->condition, c)) return mk_select(c, s->true_value, fv);
        if (auto *s = fv.as<Select>())
            if (eq(s->condition, c)) return mk_select(c, tv, s->false_value);
        auto *bc = c.as<Broadcast>(), *bt = tv.as<Broadcast>(), *bf = fv.as<Broadcast>();
        if (bt && bf && (bc || c.type().is_scalar()))
            return Broadcast::make(mk_select(bc ? bc->value : c, bt->value, bf->value), lanes);
        return Select::make(c, tv, fv);
    }

    Expr mk_cast(Type t, const Expr &v) {
        Type s = v.type();
        if (s == t) return v;
        Type te = t.element_of(), se = s.element_of();
        i128 x;
        double d;
        if (cint(v, &x)) {
            if (te.is_int_or_uint() || te.is_bool()) return mkc(t, x);
            if (te.is_float()) return mkf(t, do_cast(te, make_int(se, (uint64_t)x)).f);  // (one rounding, as at run time)
        }
        if (cflt(v, &d)) {  // (any float type: FloatImm::make rounds once to the target)
            if (te.is_bool()) return mkbool(d != 0, t.lanes());
            if (te.is_int_or_uint()) {
                i128 r;
                if (std::isnan(d)) r = 0;
                else if (d <= (double)tmin(te)) r = tmin(te);
                else if (d >= (double)tmax(te)) r = tmax(te);
                else r = (i128)std::trunc(d);
                return mkc(t, r);
            }
            if (te.is_float()) return mkf(t, d);
        }
        if (auto *b = v.as<Broadcast>()) return Broadcast::make(mk_cast(te, b->value), b->lanes);
        // cast(T, cast(U, x)) with x of type T and U an integer type at least as wide: x.
        if (auto *c = v.as<Cast>()) {
            if (c->value.type() == t && te.is_int_or_uint() && se.is_int_or_uint() && se.bits() >= te.bits())
                return c->value;
        }
        return Cast::make(t, v);
    }

    // ---- visits ----
    Expr visit(const Variable *op, const Expr &e) override {
        if (!repl_.empty()) {
            auto r = repl_.find(op->name);
            if (r != repl_.end()) return r->second;
        }
        auto it = sc.find(op->name);
        if (it != sc.end()) {
            i128 lo, hi;
            if (cint(it->second.min, &lo) && cint(it->second.max, &hi) && lo == hi &&
                it->second.min.type() == e.type())
                return it->second.min;
        }
        return e;
    }
    Expr visit(const Cast *op, const Expr &) override { return mk_cast(op->type, mutate(op->value)); }
    Expr visit(const Add *op, const Expr &) override { return mk_add(mutate(op->a), mutate(op->b)); }
    Expr visit(const Sub *op, const Expr &) override { return mk_sub(mutate(op->a), mutate(op->b)); }
    Expr visit(const Mul *op, const Expr &) override { return mk_mul(mutate(op->a), mutate(op->b)); }
    Expr visit(const Div *op, const Expr &) override { return mk_div(mutate(op->a), mutate(op->b)); }
    Expr visit(const Mod *op, const Expr &) override { return mk_mod(mutate(op->a), mutate(op->b)); }
    Expr visit(const Min *op, const Expr &) override { return mk_min(mutate(op->a), mutate(op->b)); }
    Expr visit(const Max *op, const Expr &) override { return mk_max(mutate(op->a), mutate(op->b)); }
    Expr visit(const EQ *op, const Expr &) override { return mk_cmp(IRNodeType::EQ, mutate(op->a), mutate(op->b)); }
    Expr visit(const NE *op, const Expr &) override { return mk_cmp(IRNodeType::NE, mutate(op->a), mutate(op->b)); }
    Expr visit(const LT *op, const Expr &) override { return mk_cmp(IRNodeType::LT, mutate(op->a), mutate(op->b)); }
    Expr visit(const LE *op, const Expr &) override { return mk_cmp(IRNodeType::LE, mutate(op->a), mutate(op->b)); }
    Expr visit(const GT *op, const Expr &) override { return mk_cmp(IRNodeType::GT, mutate(op->a), mutate(op->b)); }
    Expr visit(const GE *op, const Expr &) override { return mk_cmp(IRNodeType::GE, mutate(op->a), mutate(op->b)); }
    Expr visit(const And *op, const Expr &) override { return mk_andor(true, mutate(op->a), mutate(op->b)); }
    Expr visit(const Or *op, const Expr &) override { return mk_andor(false, mutate(op->a), mutate(op->b)); }
    Expr visit(const Not *op, const Expr &) override { return mk_not(mutate(op->a)); }
    Expr visit(const Select *op, const Expr &) override {
        return mk_select(mutate(op->condition), mutate(op->true_value), mutate(op->false_value));
    }
    Expr visit(const Ramp *op, const Expr &) override {
        return mk_ramp(mutate(op->base), mutate(op->stride), op->lanes);
    }
    Expr visit(const Broadcast *op, const Expr &e) override {
        Expr v = mutate(op->value);
        return v.same_as(op->value) ? e : Broadcast::make(v, op->lanes);
    }
    Expr visit(const Let *op, const Expr &e) override {
        // A long chain of Lets (a graph's shared values bound in order, bind_shared_subexpressions)
        // is counted in one walk, and its unused Lets dropped in one walk at the end.
        bool chain_top = false;
        auto known = let_uses_.find(op);
        if (known == let_uses_.end() && op->body.as<Let>()) {
            std::vector<const Let *> chain;
            Expr inner;
            if (let_chain(e, chain, inner) && chain.size() >= kLongLetChain) {
                walk_let_uses(chain, inner, [&](const Let *l, int uses) {
                    let_uses_[l] = uses;
                    return true;
                });
                chain_top = true;
                known = let_uses_.find(op);
            }
        }
        bool in_chain = known != let_uses_.end();
        int uses = 0;
        if (in_chain) {
            uses = known->second;
        } else {
            std::unordered_map<std::string, int> counts{{op->name, 0}};
            CountUsesOf(counts).include(op->body);
            uses = counts[op->name];
        }
        // (The name is bound anew inside: what an enclosing LetStmt's value is known to be
        // modulo powers of two does not hold of it.)
        Expr r = with_mod_rem(op->name, Expr(), [&] { return simplify_let(op, uses, in_chain); });
        if (chain_top) {
            r = drop_unused_lets(r);
            for (const Expr *l = &e; l->as<Let>(); l = &l->as<Let>()->body) let_uses_.erase(l->as<Let>());
        }
        return r;
    }
    static constexpr size_t kLongLetChain = 16;
    std::unordered_map<const Let *, int> let_uses_;  // uses of the name in the body, for the Lets of long chains

    /** The Lets at the top of e whose names nothing uses, removed (innermost first, so that a Let
        used only by an unused one goes too). */
    static Expr drop_unused_lets(const Expr &e) {
        std::vector<const Let *> chain;
        Expr inner;
        if (!let_chain(e, chain, inner)) return e;
        std::vector<const Let *> kept;
        walk_let_uses(chain, inner, [&](const Let *l, int uses) {
            if (uses > 0) kept.push_back(l);
            return uses > 0;
        });
        if (kept.size() == chain.size()) return e;
        Expr r = inner;
        for (auto *l : kept) r = Let::make(l->name, l->value, r);  // (kept: innermost first)
        return r;
    }

    /** A Let whose body uses its name `uses` times; in a long chain, an unused one is left for
        drop_unused_lets. */
    Expr simplify_let(const Let *op, int uses, bool in_chain) {
        Expr v = mutate(op->value);
        if (is_c(v) || v.as<Variable>() || uses <= 1) return mutate(substitute(op->name, v, op->body));
        // The let variable stays a symbol (not a range): keeping it correlated with its uses
        // proves more (e.g. x < t for a loop x in [0, t)). Shadow any range of the same name.
        Saved s;
        bool pushed = sc.count(op->name) > 0;
        if (pushed) {
            s = push(op->name, Interval());
            sc.erase(op->name);
        }
        Rebind rb = rebind(op->name);
        Expr body = mutate(op->body);
        restore(rb);
        if (pushed) pop(s);
        if (!in_chain && !expr_uses_var(body, op->name)) return wrap(rb, body);
        return wrap(rb, Let::make(op->name, v, body));
    }
    Expr visit(const Call *op, const Expr &e) override {
        std::vector<Expr> args;
        bool changed = false;
        for (auto &a : op->args) {
            args.push_back(mutate(a));
            if (!args.back().same_as(a)) changed = true;
        }
        if (op->call_type == Call::Intrinsic && args.size() == 1) {
            Type t = op->type;
            i128 x;
            double d;
            if (op->name == "abs" && cint(args[0], &x) && t.is_int_or_uint() && args[0].type() == t)
                return mkc(t, x < 0 ? -x : x);
            if (op->name == "likely" && is_c(args[0])) return args[0];  // a hint about a constant: the constant
            if (cflt(args[0], &d) && float_foldable(t) && args[0].type() == t) {
                if (op->name == "abs") return mkf(t, std::fabs(d));
                if (op->name == "floor") return mkf(t, std::floor(d));
                if (op->name == "ceil") return mkf(t, std::ceil(d));
                if (op->name == "round") return mkf(t, std::nearbyint(d));
                if (op->name == "sqrt") return mkf(t, std::sqrt(d));
            }
        }
        if (op->call_type == Call::Intrinsic && args.size() == 2 && op->type.is_int_or_uint() &&
            args[0].type().is_int_or_uint() && args[1].type().is_int_or_uint()) {
            i128 x, y;
            if (cint(args[0], &x) && cint(args[1], &y)) {
                Val r;
                if (eval_bitwise(op->name, op->type, make_int(args[0].type(), (uint64_t)(int64_t)x),
                                 make_int(args[1].type(), (uint64_t)(int64_t)y), &r))
                    return mkc(op->type, op->type.is_int() ? (i128)r.i : (i128)r.u);
            }
        }
        if (op->call_type == Call::Intrinsic && op->name == "fma" && args.size() == 3) {
            Type t = op->type;
            double x, y, z;
            if (float_foldable(t) && cflt(args[0], &x) && cflt(args[1], &y) && cflt(args[2], &z))
                return mkf(t, t.bits() == 32 ? (double)std::fma((float)x, (float)y, (float)z) : std::fma(x, y, z));
        }
        if (!changed) return e;
        auto n = std::make_shared<Call>(*op);
        n->args = std::move(args);
        return Expr(n);
    }

    // ---- statements ----
    Stmt visit(const LetStmt *op, const Stmt &) override {
        Expr v = mutate(op->value);
        if (is_c(v) || v.as<Variable>() || cheap_affine(v)) {
            // The body sees the value in place of the name, as it is visited (substituting it
            // into the body first rewrote the body once per let: a pipeline's every stage binds
            // such lets around the stages after it, and that was quadratic).
            Bound b = bind(op->name, v);
            Stmt body = mutate(op->body);
            unbind(b);
            return body;
        }
        // A vector bound to a name that is a ramp or a broadcast of a scalar (a vectorized loop
        // variable bound in a let, with a loop inside it): its uses see the ramp, so that loads
        // and stores through it stay dense and arithmetic on it folds; its scalar part stays
        // shared in a let of its own.
        const Ramp *ramp = v.as<Ramp>();
        const Broadcast *bc = v.as<Broadcast>();
        if ((ramp && ramp->base.type().lanes() == 1 && is_c(ramp->stride)) || (bc && bc->value.type().lanes() == 1)) {
            Expr scalar = ramp ? ramp->base : bc->value;
            auto rebuild = [&](const Expr &x) {
                return ramp ? Ramp::make(x, ramp->stride, ramp->lanes) : Broadcast::make(x, bc->lanes);
            };
            if (is_c(scalar) || scalar.as<Variable>() || cheap_affine(scalar)) {
                Bound b = bind(op->name, v);
                Stmt body = mutate(op->body);
                unbind(b);
                return body;
            }
            std::string base = op->name + ".base";
            Stmt body = substitute(op->name, rebuild(Variable::make(scalar.type(), base)), op->body);
            return mutate(LetStmt::make(base, scalar, body));
        }
        Saved s;
        bool pushed = sc.count(op->name) > 0;
        if (pushed) {
            s = push(op->name, Interval());
            sc.erase(op->name);
        }
        Rebind rb = rebind(op->name);
        Stmt body = with_mod_rem(op->name, v, [&] { return mutate(op->body); });
        restore(rb);
        if (pushed) pop(s);
        if (!stmt_uses_var(body, op->name)) return wrap(rb, body);
        return wrap(rb, LetStmt::make(op->name, v, body));
    }
    Stmt visit(const AssertStmt *op, const Stmt &) override {
        Expr c = mutate(op->condition);
        if (is_true(c)) return noop();
        std::vector<Expr> args;
        for (auto &a : op->args) args.push_back(mutate(a));
        return AssertStmt::make(c, op->message, args);
    }
    Stmt visit(const For *op, const Stmt &) override {
        Expr mi = mutate(op->min), ex = mutate(op->extent);
        i128 n;
        if (cint(ex, &n) && n <= 0) return noop();
        if (!cint(ex)) {
            Interval I = bnd(ex);
            if (cint(I.max, &n) && n <= 0) return noop();
        }
        if (cint(ex, &n) && n == 1) return mutate(LetStmt::make(op->name, mi, op->body));
        Saved s = push(op->name, Interval(mi, mk_sub(mk_add(mi, ex), mkc(ex.type(), 1))));
        Rebind rb = rebind(op->name);
        Stmt body = with_mod_rem(op->name, Expr(), [&] { return mutate(op->body); });
        restore(rb);
        pop(s);
        if (is_noop(body)) return noop();
        return wrap(rb, For::make(op->name, mi, ex, op->for_type, body));
    }
    Stmt visit(const IfThenElse *op, const Stmt &) override {
        Expr c = mutate(op->condition);
        if (is_true(c)) return mutate(op->then_case);
        if (is_false(c)) return op->else_case.defined() ? mutate(op->else_case) : noop();
        Stmt t = mutate(op->then_case);
        Stmt e = op->else_case.defined() ? mutate(op->else_case) : Stmt();
        if (e.defined() && is_noop(e)) e = Stmt();
        if (is_noop(t)) {
            if (!e.defined()) return noop();
            return IfThenElse::make(mk_not(c), e, Stmt());
        }
        return IfThenElse::make(c, t, e);
    }
    Stmt visit(const Block *op, const Stmt &) override {
        Stmt f = mutate(op->first), r = mutate(op->rest);
        if (is_noop(f)) return is_noop(r) ? noop() : r;
        if (is_noop(r)) return f;
        return Block::make(f, r);
    }
    Stmt visit(const Allocate *op, const Stmt &s) override {
        Stmt r = IRMutator::visit(op, s);
        if (auto *a = r.as<Allocate>()) {
            if (is_noop(a->body)) return noop();
            // Storage that nothing reads (its reads were in branches found never to run, e.g.
            // an unrolled copy past the end of a loop): its stores go, and the storage.
            if (!refers_to(a->body, a->name)) return mutate(DropStores(a->name).mutate(a->body));
        }
        return r;
    }
    /** Does s load `name`, or use it as a variable or call name? */
    static bool refers_to(const Stmt &s, const std::string &name) {
        struct Refers : IRVisitor {
            const std::string &name;
            bool found = false;
            explicit Refers(const std::string &n) : name(n) {}
            void visit(const Load *op) override {
                found = found || op->name == name;
                IRVisitor::visit(op);
            }
            void visit(const Variable *op) override { found = found || op->name == name; }
            void visit(const Call *op) override {
                found = found || op->name == name;
                IRVisitor::visit(op);
            }
            // (Statements stop being walked once a use is found, and those without the name
            // are skipped: asked of each of many nested allocations, whole walks were
            // quadratic.)
            bool enter(const Stmt &s) override { return !found && may_name(s, name); }
        } r(name);
        r.include(s);
        return r.found;
    }
    struct DropStores : IRMutator {
        std::string name;
        explicit DropStores(std::string n) : name(std::move(n)) {}
        Stmt visit(const Store *op, const Stmt &s) override {
            return op->name == name ? Evaluate::make(make_const(Int(32), (int64_t)0)) : s;
        }
    };
    Stmt visit(const Realize *op, const Stmt &s) override {
        Stmt r = IRMutator::visit(op, s);
        if (auto *a = r.as<Realize>())
            if (is_noop(a->body)) return noop();
        return r;
    }
};

}  // namespace

Expr simplify(const Expr &e) {
    if (!e.defined()) return e;
    Simp s;
    return s.mutate(e);
}

Expr simplify(const Expr &e, const Scope &bounds) {
    if (!e.defined()) return e;
    Simp s;
    s.sc = bounds;
    return s.mutate(e);
}

Expr simplify_binary(IRNodeType op, const Expr &a, const Expr &b) {
    Simp s;
    switch (op) {
    case IRNodeType::Add: return s.mk_add(a, b);
    case IRNodeType::Sub: return s.mk_sub(a, b);
    case IRNodeType::Mul: return s.mk_mul(a, b);
    case IRNodeType::Div: return s.mk_div(a, b);
    case IRNodeType::Min: return s.mk_min(a, b);
    case IRNodeType::Max: return s.mk_max(a, b);
    default: return simplify(rebuild_binary(op, a, b));
    }
}

Stmt simplify(const Stmt &st) {
    if (!st.defined()) return st;
    Simp s;
    return s.mutate(st);
}

bool structural_bound(const Expr &e, bool upper, int64_t *out) {
    i128 v;
    if (!e.defined() || !e.type().is_int() || !cbound(e, upper, &v) || v > INT64_MAX || v < INT64_MIN) return false;
    *out = (int64_t)v;
    return true;
}

bool can_prove(const Expr &e, const Scope &bounds) {
    Expr r = simplify(e, bounds);
    return is_true(r);
}

}  // namespace internal
}  // namespace weft
