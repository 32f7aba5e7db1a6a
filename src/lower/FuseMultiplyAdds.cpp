#include "lower/FuseMultiplyAdds.h"
#include "ir/IRVisitor.h"

namespace weft {
namespace internal {

namespace {

class Fuse : public GraphMutator {
    static Expr fma(const Mul *m, const Expr &c) { return Call::make_intrinsic(m->type, "fma", {m->a, m->b, c}); }
    /** -e exactly (the sign of a zero too, which 0 - e loses). */
    static Expr negate(const Expr &e) { return Mul::make(e, make_const(e.type(), -1.0)); }

protected:
    using GraphMutator::visit;
    Expr visit(const Add *op, const Expr &e) override {
        Expr a = mutate(op->a), b = mutate(op->b);
        if (op->type.is_float()) {
            if (auto m = a.as<Mul>()) return fma(m, b);
            if (auto m = b.as<Mul>()) return fma(m, a);
        }
        return a.same_as(op->a) && b.same_as(op->b) ? e : Add::make(a, b);
    }
    Expr visit(const Sub *op, const Expr &e) override {
        Expr a = mutate(op->a), b = mutate(op->b);
        if (op->type.is_float()) {
            if (auto m = a.as<Mul>()) return fma(m, negate(b));  // a*b - c = fma(a, b, -c)
            if (auto m = b.as<Mul>())                            // c - a*b = fma(-a, b, c)
                return Call::make_intrinsic(m->type, "fma", {negate(m->a), m->b, a});
        }
        return a.same_as(op->a) && b.same_as(op->b) ? e : Sub::make(a, b);
    }
};

}  // namespace

Expr fuse_multiply_adds(const Expr &e) {
    if (!e.defined()) return e;
    return Fuse().mutate(e);
}

}  // namespace internal
}  // namespace weft
