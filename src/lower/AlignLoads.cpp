#include "lower/AlignLoads.h"
#include "ir/IRVisitor.h"
#include "ir/ModulusRemainder.h"
#include "ir/Simplify.h"
#include <optional>
#include <vector>

namespace weft {
namespace internal {
namespace {

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
        memo.clear();
        if (m) lets[name] = *m;
        else lets.erase(name);
        if (value.defined()) values[name] = value;
        else values.erase(name);
        auto r = body();
        if (saved) lets[name] = *saved;
        else lets.erase(name);
        if (saved_value) values[name] = *saved_value;
        else values.erase(name);
        memo.clear();
        return r;
    }

    /** What is known of e modulo a power of two (ir/ModulusRemainder.h): one pass over the
        index, where proving `base % a == 0` by simplification cost a simplification per width
        tried. */
    ModRem known(const Expr &e) { return modulus_remainder(e, lets); }

    /** The largest power of two up to `lanes` that provably divides the ramp's base, or 0. */
    int alignment_of(const Expr &index) {
        const Ramp *r = index.as<Ramp>();
        int64_t stride;
        if (!r || !is_const_int(r->stride, &stride) || stride != 1) return 0;
        ModRem k = known(r->base);
        int a = r->lanes;
        while (a >= 2 && (k.m % a != 0 || k.r % a != 0)) a /= 2;
        int64_t m;
        if (a < r->lanes && base_mod(r->base, r->lanes, &m)) {
            int b = r->lanes;
            while (b >= 2 && m % b != 0) b /= 2;
            a = std::max(a, b);
        }
        return a >= 2 ? a : 0;
    }

    /** base % lanes where it is a constant once terms cancel (an index less its buffer's min,
        both through lets): a simplification of x % lanes with the lets substituted, for base =
        x + c, remembered for the x of the loads that follow under the same lets (the loads of
        an unrolled loop differ in c alone). */
    struct Known {
        Expr x;
        int lanes;
        bool constant;
        int64_t m;
    };
    std::vector<Known> memo;  // cleared whenever the lets change
    bool base_mod(const Expr &base, int lanes, int64_t *out) {
        Expr x = base;
        int64_t c = 0;
        if (const Add *add = base.as<Add>(); add && is_const_int(add->b, &c) && c != INT64_MIN) x = add->a;
        else c = 0;
        const Known *k = nullptr;
        for (const Known &e : memo)
            if (e.lanes == lanes && (e.x.same_as(x) || equal(e.x, x))) k = &e;
        if (!k) {
            Expr sx = substitute(values, x);
            int64_t v = 0;
            bool constant = is_const_int(simplify(Mod::make(sx, make_const(sx.type(), (int64_t)lanes))), &v);
            if (memo.size() >= 32) memo.erase(memo.begin());
            memo.push_back({x, lanes, constant, v});
            k = &memo.back();
        }
        if (!k->constant) return false;
        // (x + c) % lanes = (x % lanes + c % lanes) % lanes, Euclidean.
        int64_t r = (k->m + c % lanes) % lanes;
        *out = r < 0 ? r + lanes : r;
        return true;
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
