#include "lower/AlignLoads.h"
#include "ir/IRVisitor.h"
#include "ir/Simplify.h"
#include <optional>

namespace weft {
namespace internal {
namespace {

/** What is known of an integer: value = r modulo m, with m a power of two up to 1024 (m = 1:
    nothing is known). Halide's modulus-remainder analysis, kept to powers of two: that is all
    the alignment of a vector access needs, and it costs one pass over the index, where proving
    `base % a == 0` by simplification cost a simplification per width tried. */
struct ModRem {
    int64_t m = 1, r = 0;
};
constexpr int64_t kMaxModulus = 1024;

int64_t gcd64(int64_t a, int64_t b) {
    a = a < 0 ? -a : a;
    b = b < 0 ? -b : b;
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}
ModRem mod_rem(int64_t m, int64_t r) {
    m = gcd64(m, kMaxModulus);
    if (m <= 0) m = 1;
    r %= m;
    if (r < 0) r += m;
    return {m, r};
}
ModRem unify(const ModRem &a, const ModRem &b) {  // a value that is one or the other
    return mod_rem(gcd64(gcd64(a.m, b.m), a.r - b.r), a.r);
}

class Align : public IRMutator {
    std::map<std::string, ModRem> lets;  // what is known of the enclosing lets' values
    std::map<std::string, Expr> values;  // their values, with the lets inside them substituted
    /** Runs body with `name` bound to what is known of it (m, and its value where defined; a
        null m: unbound, a loop variable shadowing a let of its name), then puts back both maps'
        entries as they were. */
    template <typename F>
    auto with_let(const std::string &name, const ModRem *m, const Expr &value, F body) {
        auto lt = lets.find(name);
        auto vt = values.find(name);
        std::optional<ModRem> saved = lt != lets.end() ? std::optional<ModRem>(lt->second) : std::nullopt;
        std::optional<Expr> saved_value = vt != values.end() ? std::optional<Expr>(vt->second) : std::nullopt;
        if (m) lets[name] = *m;
        else lets.erase(name);
        if (value.defined()) values[name] = value;
        else values.erase(name);
        auto r = body();
        if (saved) lets[name] = *saved;
        else lets.erase(name);
        if (saved_value) values[name] = *saved_value;
        else values.erase(name);
        return r;
    }

    ModRem known(const Expr &e) {
        if (!e.defined() || !e.type().is_int_or_uint()) return {};
        int64_t c;
        if (is_const_int(e, &c)) return mod_rem(kMaxModulus, c);
        if (auto v = e.as<Variable>()) {
            auto it = lets.find(v->name);
            return it != lets.end() ? it->second : ModRem();
        }
        if (auto a = e.as<Add>()) {
            ModRem x = known(a->a), y = known(a->b);
            return mod_rem(gcd64(x.m, y.m), x.r + y.r);
        }
        if (auto a = e.as<Sub>()) {
            ModRem x = known(a->a), y = known(a->b);
            return mod_rem(gcd64(x.m, y.m), x.r - y.r);
        }
        if (auto a = e.as<Mul>()) {
            // (m1 i + r1)(m2 j + r2) = m1 m2 ij + m1 r2 i + m2 r1 j + r1 r2
            ModRem x = known(a->a), y = known(a->b);
            int64_t m = gcd64(gcd64(x.m * y.m, x.m * y.r), y.m * x.r);
            return mod_rem(m, x.r * y.r);
        }
        if (auto d = e.as<Div>()) {
            // (m i + r) / c = (m / c) i + r / c where c divides m and r (floor division).
            ModRem x = known(d->a);
            if (is_const_int(d->b, &c) && c > 0 && x.m % c == 0 && x.r % c == 0) return mod_rem(x.m / c, x.r / c);
            return {};
        }
        if (auto d = e.as<Mod>()) {
            ModRem x = known(d->a);
            if (is_const_int(d->b, &c) && c > 0 && x.m % c == 0) return mod_rem(c, x.r);
            return {};
        }
        if (auto a = e.as<Min>()) return unify(known(a->a), known(a->b));
        if (auto a = e.as<Max>()) return unify(known(a->a), known(a->b));
        if (auto a = e.as<Select>()) return unify(known(a->true_value), known(a->false_value));
        if (auto a = e.as<Cast>()) {
            // Widening keeps the value; anything else may wrap.
            Type from = a->value.type();
            if (from.is_int_or_uint() && a->type.bits() > from.bits()) return known(a->value);
            return {};
        }
        if (auto l = e.as<Let>()) {
            ModRem m = known(l->value);
            auto vt = values.find(l->name);  // (values keeps its entry: known() substitutes nothing)
            return with_let(l->name, &m, vt != values.end() ? vt->second : Expr(), [&] { return known(l->body); });
        }
        if (auto c = e.as<Call>())
            if (c->is_intrinsic("likely") || c->is_intrinsic("promise_clamped")) return known(c->args[0]);
        return {};
    }

    /** The largest power of two up to `lanes` that provably divides the ramp's base, or 0. */
    int alignment_of(const Expr &index) {
        const Ramp *r = index.as<Ramp>();
        int64_t stride;
        if (!r || !is_const_int(r->stride, &stride) || stride != 1) return 0;
        ModRem k = known(r->base);
        int a = r->lanes;
        while (a >= 2 && (k.m % a != 0 || k.r % a != 0)) a /= 2;
        if (a < r->lanes) {
            // Terms that cancel (an index less its buffer's min, both through lets): one
            // simplification of base % lanes with the lets substituted.
            Expr base = substitute(values, r->base);
            int64_t m;
            if (is_const_int(simplify(Mod::make(base, make_const(base.type(), (int64_t)r->lanes))), &m)) {
                int b = r->lanes;
                while (b >= 2 && m % b != 0) b /= 2;
                a = std::max(a, b);
            }
        }
        return a >= 2 ? a : 0;
    }

protected:
    Stmt visit(const LetStmt *op, const Stmt &s) override {
        Expr v = mutate(op->value);
        ModRem m = known(v);
        Stmt b = with_let(op->name, &m, substitute(values, v), [&] { return mutate(op->body); });
        return v.same_as(op->value) && b.same_as(op->body) ? s : LetStmt::make(op->name, v, b);
    }
    Stmt visit(const For *op, const Stmt &s) override {
        // The loop variable shadows any let of the same name.
        return with_let(op->name, nullptr, Expr(), [&] { return IRMutator::visit(op, s); });
    }
    Expr visit(const Load *op, const Expr &e) override {
        Expr i = mutate(op->index);
        int a = alignment_of(i);
        if (i.same_as(op->index) && a == op->alignment) return e;
        return Load::make(op->type.element_of(), op->name, i, a);
    }
    Stmt visit(const Store *op, const Stmt &s) override {
        Expr v = mutate(op->value), i = mutate(op->index);
        int a = alignment_of(i);
        if (v.same_as(op->value) && i.same_as(op->index) && a == op->alignment) return s;
        return Store::make(op->name, v, i, a, op->nontemporal, op->atomic);
    }
};

}  // namespace

Stmt align_loads(const Stmt &s) { return Align().mutate(s); }

}  // namespace internal
}  // namespace weft
