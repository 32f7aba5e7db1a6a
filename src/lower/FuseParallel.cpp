#include "lower/FuseParallel.h"

#include <climits>

#include "ir/IRVisitor.h"

namespace weft {
namespace internal {
namespace {

class FuseParallel : public IRMutator {
    int counter = 0;

protected:
    Stmt visit(const For *op, const Stmt &s) override {
        Stmt body = mutate(op->body);
        Stmt same = body.same_as(op->body) ? s : For::make(op->name, op->min, op->extent, op->for_type, body);
        if (op->for_type != ForType::Parallel) return same;
        // The lets between the two loops, then the inner loop.
        std::vector<const LetStmt *> lets;
        Stmt at = body;
        while (auto *l = at.as<LetStmt>()) {
            lets.push_back(l);
            at = l->body;
        }
        const For *in = at.as<For>();
        int64_t n, m;
        if (!in || in->for_type != ForType::Parallel || !is_const_int(op->extent, &n) || !is_const_int(in->extent, &m) ||
            n < 1 || m < 1 || n * m > INT_MAX)
            return same;
        auto uses_outer = [&](const Expr &e) {
            if (expr_uses_var(e, op->name)) return true;
            for (auto *l : lets)
                if (expr_uses_var(e, l->name)) return true;
            return false;
        };
        if (uses_outer(in->min)) return same;
        Type t = Int(32);
        std::string f = op->name + ".fused" + std::to_string(counter++);
        Expr fv = Variable::make(t, f), mc = make_const(t, m);
        Stmt inner = in->body;
        inner = LetStmt::make(in->name, Add::make(in->min, Mod::make(fv, mc)), inner);
        for (auto it = lets.rbegin(); it != lets.rend(); ++it) inner = LetStmt::make((*it)->name, (*it)->value, inner);
        inner = LetStmt::make(op->name, Add::make(op->min, Div::make(fv, mc)), inner);
        return For::make(f, make_const(t, (int64_t)0), make_const(t, n * m), ForType::Parallel, inner);
    }
};

}  // namespace

Stmt fuse_parallel_nests(const Stmt &s) { return FuseParallel().mutate(s); }

}  // namespace internal
}  // namespace weft
