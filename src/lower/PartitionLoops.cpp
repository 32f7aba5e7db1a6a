#include "lower/PartitionLoops.h"
#include "ir/IRVisitor.h"
#include "ir/Simplify.h"
#include <optional>
#include <unordered_map>
#include <set>

namespace weft {
namespace internal {
namespace {

/** Counts the min/max nodes of integer vector type (vector clamps of indices) whose operands
    depend on the loop variable `var`, directly or through lets and the bounds of inner loops:
    only those can become no-ops in the middle of var's range. (Clamps of values, floats, are
    not decided by the ranges of loop variables; a clamp that does not move with var is the
    same in every part of its loop. Bounding either costs much and gains nothing.) */
class CountClamps : public IRVisitor {
public:
    std::set<std::string> tainted;  // var, and what is defined from it
    int count = 0;

protected:
    bool uses(const Expr &e) { return expr_uses_any_var(e, tainted); }
    void check(const Expr &a, const Expr &b, Type t) {
        if (t.is_vector() && t.is_int_or_uint() && (uses(a) || uses(b))) count++;
    }
    void visit(const Min *op) override {
        check(op->a, op->b, op->type);
        IRVisitor::visit(op);
    }
    void visit(const Max *op) override {
        check(op->a, op->b, op->type);
        IRVisitor::visit(op);
    }
    void visit(const LetStmt *op) override {
        if (uses(op->value)) tainted.insert(op->name);
        IRVisitor::visit(op);
    }
    void visit(const Let *op) override {
        if (uses(op->value)) tainted.insert(op->name);
        IRVisitor::visit(op);
    }
    void visit(const For *op) override {
        if (uses(op->min) || uses(op->extent)) tainted.insert(op->name);
        IRVisitor::visit(op);
    }
};

int clamps(const Stmt &s, const std::string &var) {
    CountClamps c;
    c.tainted.insert(var);
    c.include(s);
    return c.count;
}

/** Removes vector clamps of integers (indices) that are no-ops given the known ranges of
    variables (see CountClamps: those of floats are not decided by them). */
class FoldClamps : public IRMutator {
public:
    Scope scope;

protected:
    /** Bounds of the expressions met since the scope last changed, by node (the Expr is held, so
        that no other node takes its address): a nest of vector mins and maxes is bounded once per
        node, not once per enclosing min or max (which made this pass quadratic in its depth). */
    std::unordered_map<const void *, std::pair<Expr, Interval>> memo;

    Interval iv(const Expr &e) {
        auto it = memo.find(e.get());
        if (it != memo.end()) return it->second.second;
        Interval i = bounds_of_expr_in_scope(e, scope);
        memo.emplace(e.get(), std::make_pair(e, i));
        return i;
    }
    // Inner loops and lets add the ranges of their variables.
    Stmt visit(const For *op, const Stmt &s) override {
        Interval mi = bounds_of_expr_in_scope(op->min, scope);
        Interval ma = bounds_of_expr_in_scope(simplify(op->min + op->extent - 1), scope);
        auto saved = scope.count(op->name) ? std::optional<Interval>(scope[op->name]) : std::nullopt;
        scope[op->name] = Interval(mi.min, ma.max);
        memo.clear();
        Stmt body = mutate(op->body);
        if (saved) scope[op->name] = *saved;
        else scope.erase(op->name);
        memo.clear();
        return body.same_as(op->body) ? s : For::make(op->name, op->min, op->extent, op->for_type, body);
    }
    Stmt visit(const LetStmt *op, const Stmt &s) override {
        Expr v = mutate(op->value);
        auto saved = scope.count(op->name) ? std::optional<Interval>(scope[op->name]) : std::nullopt;
        scope[op->name] = bounds_of_expr_in_scope(v, scope);
        memo.clear();
        Stmt body = mutate(op->body);
        if (saved) scope[op->name] = *saved;
        else scope.erase(op->name);
        memo.clear();
        return v.same_as(op->value) && body.same_as(op->body) ? s : LetStmt::make(op->name, v, body);
    }

    bool le(const Interval &ia, const Interval &ib) {
        return ia.max.defined() && ib.min.defined() && can_prove(simplify(ia.max <= ib.min));
    }
    /** min (is_min) or max of a and b: one of them where the bounds decide, else both, with
        the bounds of the result remembered from theirs. */
    Expr fold(bool is_min, const Expr &a, const Expr &b, const Expr &e, const Expr &ea, const Expr &eb) {
        Interval ia = iv(a), ib = iv(b);
        if (is_min ? le(ia, ib) : le(ib, ia)) return a;
        if (is_min ? le(ib, ia) : le(ia, ib)) return b;
        Expr r = a.same_as(ea) && b.same_as(eb) ? e : is_min ? Min::make(a, b) : Max::make(a, b);
        auto both = [&](const Expr &x, const Expr &y, bool take_min) {
            if (!x.defined() || !y.defined()) return Expr();
            return simplify(take_min ? Min::make(x, y) : Max::make(x, y));
        };
        auto either = [&](const Expr &x, const Expr &y, bool take_min) {
            if (!x.defined()) return y;
            if (!y.defined()) return x;
            return simplify(take_min ? Min::make(x, y) : Max::make(x, y));
        };
        // min(a, b) lies in [min(a.min, b.min), min(a.max, b.max)]; max alike.
        Interval ir = is_min ? Interval(both(ia.min, ib.min, true), either(ia.max, ib.max, true))
                             : Interval(either(ia.min, ib.min, false), both(ia.max, ib.max, false));
        memo.emplace(r.get(), std::make_pair(r, ir));
        return r;
    }
    Expr visit(const Min *op, const Expr &e) override {
        Expr a = mutate(op->a), b = mutate(op->b);
        if (op->type.is_vector() && op->type.is_int_or_uint()) return fold(true, a, b, e, op->a, op->b);
        return a.same_as(op->a) && b.same_as(op->b) ? e : Min::make(a, b);
    }
    Expr visit(const Max *op, const Expr &e) override {
        Expr a = mutate(op->a), b = mutate(op->b);
        if (op->type.is_vector() && op->type.is_int_or_uint()) return fold(false, a, b, e, op->a, op->b);
        return a.same_as(op->a) && b.same_as(op->b) ? e : Max::make(a, b);
    }
};

class Partition : public IRMutator {
protected:
    /** The ranges of the loops and lets around (constant where their own bounds are): a clamp
        is then bounded in numbers, not in symbols of the loops outside (bounds that grow
        with every operation, and decide nothing). */
    Scope outer;

    /** Binds name to iv in outer while body runs. */
    template <typename F>
    Stmt with(const std::string &name, const Interval &iv, F body) {
        auto saved = outer.count(name) ? std::optional<Interval>(outer[name]) : std::nullopt;
        outer[name] = iv;
        Stmt r = body();
        if (saved) outer[name] = *saved;
        else outer.erase(name);
        return r;
    }
    Stmt visit(const LetStmt *op, const Stmt &s) override {
        if (!op->value.type().is_scalar() || !op->value.type().is_int_or_uint()) return IRMutator::visit(op, s);
        return with(op->name, bounds_of_expr_in_scope(op->value, outer), [&] {
            Stmt body = mutate(op->body);
            return body.same_as(op->body) ? s : LetStmt::make(op->name, op->value, body);
        });
    }
    Stmt visit(const For *op, const Stmt &s) override {
        Interval range(bounds_of_expr_in_scope(op->min, outer).min,
                       bounds_of_expr_in_scope(simplify(op->min + op->extent - 1), outer).max);
        return with(op->name, range, [&] { return partition(op, s); });
    }
    Stmt partition(const For *op, const Stmt &s) {
        Stmt body = mutate(op->body);
        Stmt same = body.same_as(op->body) ? s : For::make(op->name, op->min, op->extent, op->for_type, body);
        if (op->for_type != ForType::Serial) return same;
        // (a loop of a few steps is not worth three copies of its body)
        int64_t steps = 0;
        if (is_const_int(op->extent, &steps) && steps < 8) return same;
        int before = clamps(body, op->name);
        if (before == 0) return same;
        static const int peels[][2] = {{1, 1}, {1, 0}, {0, 1}, {2, 2}};
        bool folds_inside = true;  // whether the middle of the first peel, {1, 1}, folded any clamp
        for (auto &p : peels) {
            int lo = p[0], hi = p[1];
            // A clamp no bound decides inside [min + 1, max - 1] none decides in a wider range.
            if (!folds_inside && lo + hi == 1) continue;
            // prologue [min, min + e_lo), middle, epilogue: the three cover the loop exactly.
            Expr ext = op->extent;
            Expr e_lo = simplify(Min::make(Expr(lo), Max::make(ext, 0)));
            Expr mid_start = simplify(op->min + e_lo);
            Expr mid_ext = simplify(Max::make(ext - (lo + hi), 0));
            Expr epi_start = simplify(mid_start + mid_ext);
            Expr epi_ext = simplify(Max::make(ext, 0) - e_lo - mid_ext);
            FoldClamps fold;
            fold.scope = outer;
            fold.scope[op->name] = Interval(mid_start, simplify(mid_start + mid_ext - 1));
            Stmt folded = fold.mutate(body);
            if (folded.same_as(body)) {  // no clamp decided: simplifying would remove none either
                if (lo == 1 && hi == 1) folds_inside = false;
                continue;
            }
            Stmt mid_body = simplify(folded);
            if (clamps(mid_body, op->name) >= before) continue;  // removed none
            Stmt mid = For::make(op->name, mid_start, mid_ext, ForType::Serial, mid_body);
            std::vector<Stmt> parts;
            if (!is_const_zero(e_lo)) parts.push_back(For::make(op->name, op->min, e_lo, ForType::Serial, body));
            parts.push_back(mid);
            if (!is_const_zero(epi_ext)) parts.push_back(For::make(op->name, epi_start, epi_ext, ForType::Serial, body));
            return Block::make(parts);
        }
        return same;
    }
};

}  // namespace

Stmt partition_loops(const Stmt &s) { return Partition().mutate(s); }

}  // namespace internal
}  // namespace weft
