#include "lower/AlignLoads.h"
#include "ir/IRVisitor.h"
#include "ir/Simplify.h"
#include <optional>

namespace weft {
namespace internal {
namespace {

class Align : public IRMutator {
    std::map<std::string, Expr> lets;  // enclosing lets, to see through them

    /** The largest power of two up to `lanes` that provably divides the ramp's base, or 0. */
    int alignment_of(const Expr &index) {
        const Ramp *r = index.as<Ramp>();
        int64_t stride;
        if (!r || !is_const_int(r->stride, &stride) || stride != 1) return 0;
        Expr base = substitute(lets, r->base);
        for (int a = r->lanes; a >= 2; a /= 2) {
            int64_t m;
            if (is_const_int(simplify(Mod::make(base, make_const(base.type(), (int64_t)a))), &m) && m == 0) return a;
        }
        return 0;
    }

protected:
    Stmt visit(const LetStmt *op, const Stmt &s) override {
        Expr v = mutate(op->value);
        auto saved = lets.find(op->name) != lets.end() ? std::optional<Expr>(lets[op->name]) : std::nullopt;
        lets[op->name] = substitute(lets, v);
        Stmt b = mutate(op->body);
        if (saved) lets[op->name] = *saved;
        else lets.erase(op->name);
        return LetStmt::make(op->name, v, b);
    }
    Stmt visit(const For *op, const Stmt &s) override {
        // The loop variable shadows any let of the same name.
        auto saved = lets.find(op->name) != lets.end() ? std::optional<Expr>(lets[op->name]) : std::nullopt;
        lets.erase(op->name);
        Stmt r = IRMutator::visit(op, s);
        if (saved) lets[op->name] = *saved;
        return r;
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
