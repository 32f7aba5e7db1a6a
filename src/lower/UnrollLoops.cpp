#include "lower/UnrollLoops.h"
#include <optional>
#include "ir/IRVisitor.h"
#include "ir/Interval.h"
#include "ir/Simplify.h"

namespace weft {
namespace internal {
namespace {
class Unroll : public IRMutator {
protected:
    LetStack lets;  // in scope, outermost first
    Scope loops;    // the enclosing loops' ranges (their bounds with the lets substituted)

    Stmt visit(const LetStmt *op, const Stmt &s) override {
        lets.push_back({op->name, op->value});
        Stmt b = mutate(op->body);
        lets.pop_back();
        return b.same_as(op->body) ? s : LetStmt::make(op->name, op->value, b);
    }
    Stmt visit(const For *op, const Stmt &s) override {
        Expr mn = simplify(substitute_lets(op->min, lets));
        Expr last = simplify(substitute_lets(op->min + op->extent - 1, lets));
        auto saved = loops.find(op->name) != loops.end() ? std::optional<Interval>(loops[op->name]) : std::nullopt;
        loops[op->name] = Interval(mn, last);
        Stmt body = mutate(op->body);
        if (saved) loops[op->name] = *saved;
        else loops.erase(op->name);
        if (op->for_type != ForType::Unrolled)
            return body.same_as(op->body) ? s : For::make(op->name, op->min, op->extent, op->for_type, body);
        int64_t n;
        Expr ext = simplify(op->extent);
        if (is_const_int(ext, &n)) {
            if (n > 1024) return For::make(op->name, op->min, op->extent, ForType::Serial, body);
            std::vector<Stmt> copies;
            for (int64_t i = 0; i < n; i++) copies.push_back(substitute(op->name, simplify(op->min + (int)i), body));
            return Block::make(copies);
        }
        // An extent that varies (a last, shorter step of a split) but has a constant bound:
        // that many copies, each run where its iteration exists.
        if (!constant_upper_bound_in_scope(substitute_lets(ext, lets), loops, &n) || n > 1024)
            return For::make(op->name, op->min, op->extent, ForType::Serial, body);
        std::vector<Stmt> copies;
        for (int64_t i = 0; i < n; i++) {
            Stmt c = substitute(op->name, simplify(op->min + (int)i), body);
            Expr runs = simplify(Expr((int)i) < ext);
            if (is_false(runs)) continue;
            copies.push_back(is_true(runs) ? c : IfThenElse::make(Call::make_intrinsic(Bool(), "likely", {runs}), c));
        }
        return copies.empty() ? Evaluate::make(Expr(0)) : Block::make(copies);
    }
};
}  // namespace
Stmt unroll_loops(const Stmt &s) { return Unroll().mutate(s); }
}  // namespace internal
}  // namespace weft
