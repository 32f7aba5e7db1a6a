// Func::hoist_storage: the allocation of a Func's storage moved out of the loops between its
// store level and an outer loop, at the largest size an iteration needs.
#include "lower/HoistStorage.h"
#include <climits>
#include "ir/IRVisitor.h"
#include "ir/Interval.h"
#include "ir/Simplify.h"
#include "lower/LoweredFunc.h"
#include "lower/ScheduleFunctions.h"

namespace weft {
namespace internal {
namespace {

const char *loop_kind(ForType t) {
    switch (t) {
    case ForType::Parallel: return "parallel";
    case ForType::Vectorized: return "vectorized";
    case ForType::GPUBlock: return "GPU block";
    case ForType::GPUThread: return "GPU thread";
    default: return nullptr;
    }
}

/** Removes the Allocates of one Func below the hoist level, recording an upper bound of their
    sizes over the loops and lets between (which they may depend on; the hoisted one may not). */
class TakeAllocations : public IRMutator {
public:
    TakeAllocations(const std::string &n, const std::string &h) : name(n), head(h) {}
    const std::string &name, &head;
    std::vector<Expr> sizes;  // one bound per allocation taken
    Type type;
    MemoryType memory = MemoryType::Auto;

protected:
    std::vector<const For *> loops;
    LetStack lets;

    Stmt visit(const For *op, const Stmt &s) override {
        loops.push_back(op);
        Stmt r = IRMutator::visit(op, s);
        loops.pop_back();
        return r;
    }
    Stmt visit(const LetStmt *op, const Stmt &s) override {
        lets.push_back({op->name, op->value});
        Stmt r = IRMutator::visit(op, s);
        lets.pop_back();
        return r;
    }
    Expr without_lets(const Expr &e) const { return simplify(substitute_lets(e, lets)); }
    /** A name defined between the hoist level and the allocation that e uses, or "". */
    std::string inner_name(const Expr &e) const {
        for (const For *l : loops)
            if (expr_uses_var(e, l->name)) return "loop " + l->name;
        for (auto &l : lets)
            if (expr_uses_var(e, l.first)) return l.first;
        return "";
    }
    /** An upper bound of the (non-negative) size e over the loops between: a constant where
        there is one, else an expression of names defined outside them; undefined if none. */
    Expr upper(const Expr &e, const Scope &scope) const {
        int64_t c = 0;
        if (constant_upper_bound_in_scope(e, scope, &c)) return make_const(e.type(), std::max<int64_t>(c, 0));
        if (auto m = e.as<Mul>()) {
            Expr a = upper(m->a, scope), b = upper(m->b, scope);
            return a.defined() && b.defined() ? simplify(a * b) : Expr();
        }
        if (auto k = e.as<Cast>()) {
            Expr v = upper(k->value, scope);
            return v.defined() ? simplify(Cast::make(e.type(), v)) : Expr();
        }
        Interval i = bounds_of_expr_in_scope(e, scope);
        if (!i.has_upper_bound() || !inner_name(i.max).empty()) return Expr();
        return simplify(max(i.max, make_zero(i.max.type())));
    }
    Stmt visit(const Allocate *op, const Stmt &s) override {
        if (op->name != name) return IRMutator::visit(op, s);
        for (const For *l : loops)
            if (const char *k = loop_kind(l->for_type))
                user_error(head + "the " + k + " loop " + l->name + " lies between the hoist level and the storage; its "
                           "iterations would share one buffer: hoist it to a loop inside " + l->name + ", or make " +
                           l->name + " serial");
        Scope scope;
        for (const For *l : loops) scope[l->name] = Interval(without_lets(l->min), without_lets(l->min + l->extent - 1));
        Expr size = without_lets(op->extent);
        Expr bound = upper(size, scope);
        if (!bound.defined())
            user_error(head + "the size of its storage (" + to_string(size) + " elements) depends on " +
                       inner_name(size) + " and has no bound at that level; bound() its region, or hoist it less far");
        sizes.push_back(bound);
        type = op->type;
        memory = op->memory_type;
        return mutate(op->body);
    }
};

class Hoist : public IRMutator {
public:
    Hoist(const LFunc &lf, const std::string &s, const std::string &h) : f(lf), storage(s), head(h) {}
    const LFunc &f;
    const std::string storage;  // f's, or a value's of a Tuple
    const std::string head;     // "weft: Func "f".hoist_storage(g, y): "
    int loops_seen = 0, hoisted = 0;

    /** body with f's allocations below it made once, at its top. */
    Stmt hoist_into(const Stmt &body) {
        TakeAllocations t(storage, head);
        Stmt b = t.mutate(body);
        if (t.sizes.empty()) return body;
        hoisted++;
        Expr size = t.sizes[0];
        for (size_t i = 1; i < t.sizes.size(); i++) size = simplify(max(size, t.sizes[i]));
        int64_t n = 0;
        bool constant = is_const_int(size, &n);
        const int64_t bytes = constant ? n * t.type.bytes() : 0;
        if (constant && n > INT32_MAX)
            user_error(head + "its storage there takes " + std::to_string(n) + " elements, more than the 2147483647 "
                       "that 32-bit indices address; hoist it less far");
        MemoryType asked = f.sched.memory, m = t.memory;
        if (asked == MemoryType::Stack && (!constant || bytes > kMaxStackAllocationBytes))
            user_error(head + "it is stored on the stack (store_in(MemoryType::Stack)), but its storage there " +
                       (constant ? "takes " + std::to_string(bytes) + " bytes, more than the 1 MiB a stack allocation may take"
                                 : "has a size known only at run time (" + to_string(size) + " elements)") +
                       "; hoist it less far, or store it in MemoryType::Heap");
        // As storage flattening chooses: the stack where asked (checked above) or small and
        // constant; registers only what is small and constant.
        const bool small = constant && bytes <= kSmallStackAllocationBytes;
        if (asked == MemoryType::Heap) m = MemoryType::Heap;
        else if (m == MemoryType::Stack || m == MemoryType::Heap)
            m = small || asked == MemoryType::Stack ? MemoryType::Stack : MemoryType::Heap;
        else if (!small) m = MemoryType::Heap;
        Stmt a = Allocate::make(storage, t.type, size, m, b);
        if (!constant) {
            const std::string msg = "Func \"" + f.contents->name + "\" needs storage for % elements where it is hoisted, "
                                    "more than the 2147483647 that 32-bit indices address; hoist it less far";
            a = Block::make(AssertStmt::make(size <= make_const(Int(64), (int64_t)INT32_MAX), msg, {size}), a);
        }
        return a;
    }

protected:
    Stmt visit(const For *op, const Stmt &s) override {
        if (!is_loop_of(op->name, f.hoist_func, f.sched.hoist.var)) return IRMutator::visit(op, s);
        loops_seen++;
        Stmt body = hoist_into(op->body);
        return body.same_as(op->body) ? s : For::make(op->name, op->min, op->extent, op->for_type, body);
    }
};

}  // namespace

Stmt hoist_storage(const Stmt &s, const Env &env) {
    Stmt r = s;
    for (const LFunc &f : env.funcs) {
        const LoopLevelSpec &h = f.sched.hoist;
        if (h.kind == LoopLevelSpec::Inline) continue;
        const std::string &user = f.contents->name;
        const bool root = h.kind == LoopLevelSpec::Root;
        const std::string consumer = root ? "" : env.funcs[env.index.at(f.hoist_func)].contents->name;
        const std::string head = "weft: Func \"" + user + "\"." +
                                 (root ? "hoist_storage_root()" : "hoist_storage(" + consumer + ", " + h.var + ")") + ": ";
        if (f.output_index >= 0) user_error(head + "it is an output of the pipeline: its storage is the buffer it is realized into");
        for (size_t value = 0; value < std::max<size_t>(1, f.types.size()); value++) {
            Hoist ho(f, tuple_buffer_name(f.name, (int)value), head);
            if (root) {
                r = ho.hoist_into(r);
            } else {
                r = ho.mutate(r);
                if (ho.loops_seen == 0) user_error(head + "Func \"" + consumer + "\" has no loop named \"" + h.var + "\"");
            }
            if (ho.hoisted == 0)
                user_error(head + "that level does not contain the storage of \"" + user +
                           "\"; hoist_storage must be at or outside its store_at level");
        }
    }
    return r;
}

}  // namespace internal
}  // namespace weft
