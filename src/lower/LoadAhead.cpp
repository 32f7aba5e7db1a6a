#include "lower/LoadAhead.h"
#include <set>
#include "ir/IRVisitor.h"
#include "ir/Interval.h"
#include "ir/Simplify.h"
#include "lower/gpu/InjectGPU.h"

namespace weft {
namespace internal {

namespace {

LoadsStores reads_writes(const Stmt &s) {
    LoadsStores rw;
    rw.include(s);
    return rw;
}

/** Does s hold the allocation of `name` through lets, blocks and other allocations only (not
    inside a loop or a condition)? */
bool holds_allocation(const Stmt &s, const std::string &name) {
    if (auto op = s.as<LetStmt>()) return holds_allocation(op->body, name);
    if (auto op = s.as<Block>()) return holds_allocation(op->first, name) || holds_allocation(op->rest, name);
    if (auto op = s.as<Allocate>()) return op->name == name || holds_allocation(op->body, name);
    return false;
}

struct CountAllocations : public IRVisitor {
    std::string name;
    int count = 0;

protected:
    void visit(const Allocate *op) override {
        count += op->name == name;
        IRVisitor::visit(op);
    }
};

class LoadAhead : public IRMutator {
public:
    LoadAhead(std::string f, std::string user, std::string loop_prefix, std::string loop_suffix)
        : func(std::move(f)), user(std::move(user)), prefix(std::move(loop_prefix)), suffix(std::move(loop_suffix)) {}

protected:
    std::string func, user;
    std::string prefix, suffix;  // the compute_at loop's name: "<consumer>.s<stage>.<var>"
    bool is_compute_loop(const std::string &loop) const {
        return loop.size() > prefix.size() + suffix.size() && loop.compare(0, prefix.size(), prefix) == 0 &&
               loop.compare(loop.size() - suffix.size(), suffix.size(), suffix) == 0;
    }

    [[noreturn]] void fail(const std::string &why) const {
        user_error("weft: Func \"" + user + "\".load_ahead(): " + why);
    }

    // Around the loop: the lets, and the loops with constant ranges (their variables' values
    // bound the size of the storage, where interval arithmetic alone would not).
    LetStack outer_lets;
    Scope outer_loops;
    Stmt visit(const LetStmt *op, const Stmt &s) override {
        outer_lets.push_back({op->name, op->value});
        Stmt r = IRMutator::visit(op, s);
        outer_lets.pop_back();
        return r;
    }
    Stmt enclosing_loop(const For *op, const Stmt &s) {
        Expr extent = unwrap_extent(op->extent);  // a GPU loop's is wrapped (protect_gpu_loops)
        int64_t mn, ex;
        bool known = is_const_int(simplify(substitute_lets(op->min, outer_lets)), &mn) &&
                     is_const_int(simplify(substitute_lets(extent, outer_lets)), &ex) && ex > 0;
        if (known) outer_loops[op->name] = Interval(Expr((int)mn), Expr((int)(mn + ex - 1)));
        Stmt r = IRMutator::visit(op, s);
        outer_loops.erase(op->name);
        return r;
    }

    // ---- one loop ----
    LetStack path_lets;  // lets from the loop body down to the production
    const Allocate *alloc = nullptr;
    Stmt production;

    /** s without the allocation of func and without its production (kept in alloc, production). */
    Stmt strip(const Stmt &s) {
        if (auto op = s.as<LetStmt>()) {
            path_lets.push_back({op->name, op->value});
            return LetStmt::make(op->name, op->value, strip(op->body));
        }
        if (auto op = s.as<Block>()) {
            if (holds_allocation(op->first, func)) return Block::make(strip(op->first), op->rest);
            return Block::make(op->first, strip(op->rest));
        }
        auto op = s.as<Allocate>();
        if (op->name != func) return Allocate::make(op->name, op->type, op->extent, op->memory_type, strip(op->body));
        alloc = op;
        Stmt body = op->body;
        LetStack inner;  // lets between the allocation and the production
        while (auto l = body.as<LetStmt>()) {
            inner.push_back({l->name, l->value});
            body = l->body;
        }
        std::vector<Stmt> items;
        flatten(body, items);
        // The production: the statements that write it first (one loop nest, or its unrolled copies).
        size_t n = 0;
        while (n < items.size() && reads_writes(items[n]).writes.count(func)) n++;
        if (n == 0) fail("its storage does not begin with its production (is it computed where it is stored?)");
        production = Block::make(std::vector<Stmt>(items.begin(), items.begin() + n));
        for (size_t i = n; i < items.size(); i++)
            if (reads_writes(items[i]).writes.count(func))
                fail("it is written again after its production is read (an update definition?); only a Func "
                     "computed by its pure definition can be computed ahead");
        items.erase(items.begin(), items.begin() + n);
        Stmt rest = items.empty() ? Evaluate::make(Expr(0)) : Block::make(items);
        for (size_t i = inner.size(); i-- > 0;) rest = LetStmt::make(inner[i].first, inner[i].second, rest);
        path_lets.insert(path_lets.end(), inner.begin(), inner.end());
        return rest;
    }

    /** s with `what` right after its last statement that reads func (descending into lets and
        allocations); at its end if none does. */
    Stmt place(const Stmt &s, const Stmt &what, bool *placed) {
        if (!reads_writes(s).reads.count(func)) return s;
        if (auto op = s.as<LetStmt>(); op && !reads_writes(Evaluate::make(op->value)).reads.count(func))
            return LetStmt::make(op->name, op->value, place(op->body, what, placed));
        if (auto op = s.as<Allocate>())
            return Allocate::make(op->name, op->type, op->extent, op->memory_type, place(op->body, what, placed));
        if (s.as<Block>()) {
            std::vector<Stmt> items;
            flatten(s, items);
            for (size_t i = items.size(); i-- > 0;)
                if (reads_writes(items[i]).reads.count(func)) {
                    items[i] = place(items[i], what, placed);
                    break;
                }
            return Block::make(items);
        }
        *placed = true;
        return Block::make(s, what);
    }

    Stmt visit(const For *op, const Stmt &s) override {
        if (!is_compute_loop(op->name) || !holds_allocation(op->body, func)) return enclosing_loop(op, s);
        if (op->for_type != ForType::Serial)
            fail("the loop it is computed at (" + op->name + ") is not a serial loop (unrolled, vectorized, parallel or "
                 "GPU loops cannot carry a production to their next iteration)");
        CountAllocations ca;
        ca.name = func;
        ca.include(op->body);
        if (ca.count != 1)
            fail("it is computed " + std::to_string(ca.count) + " times in each iteration of " + op->name +
                 " (at an unrolled loop inside it?): compute it at the serial loop itself");
        path_lets.clear();
        alloc = nullptr;
        Stmt body = strip(op->body);
        // The production with the loop's lets in scope substituted: it moves across them.
        Stmt p = substitute_lets(production, path_lets);
        LoadsStores prw = reads_writes(p);
        LoadsStores lrw = reads_writes(op->body);
        for (auto &r : prw.reads)
            if (r != func && lrw.writes.count(r))
                fail("its production reads \"" + r + "\", which is written inside the loop it is computed at (" + op->name +
                     "): computed one iteration early it would read the wrong values");
        Expr extent = simplify(substitute_lets(alloc->extent, path_lets));
        if (expr_uses_var(extent, op->name)) {
            // Smaller at some iterations (a last partial step): the largest over the loop.
            Scope scope;
            scope[op->name] = Interval(op->min, simplify(op->min + op->extent - 1));
            int64_t c = 0, e = 0;
            bool bounded = constant_upper_bound_in_scope(extent, scope, &c);
            // Exactly, over the enclosing loops' iterations too where they are few.
            Scope all = outer_loops;
            all[op->name] = Interval(simplify(substitute_lets(op->min, outer_lets)),
                                     simplify(substitute_lets(op->min + op->extent - 1, outer_lets)));
            if (enumerated_max(simplify(substitute_lets(extent, outer_lets)), all, 256, &e)) {
                c = bounded ? std::min(c, e) : e;
                bounded = true;
            }
            if (bounded) {
                extent = make_const(extent.type(), c);
            } else {
                Interval I = bounds_of_expr_in_scope(extent, scope);
                if (!I.max.defined() || expr_uses_var(I.max, op->name))
                    fail("its size changes from one iteration of " + op->name + " to the next, without a bound");
                extent = simplify(I.max);
            }
        }
        Expr v = Variable::make(Int(32), op->name);
        Stmt next = simplify(substitute(op->name, v + 1, p));
        next = IfThenElse::make(v < op->min + op->extent - 1, next);
        bool placed = false;
        body = place(body, next, &placed);
        if (!placed) body = Block::make(body, next);
        Stmt first = simplify(substitute(op->name, op->min, p));
        Stmt loop = For::make(op->name, op->min, op->extent, op->for_type, body);
        Stmt both = Block::make(first, loop);
        Expr runs = simplify(op->extent > 0);  // the first production reads what the first iteration reads
        if (!is_const_one(runs)) both = IfThenElse::make(runs, both);
        return Allocate::make(alloc->name, alloc->type, extent, alloc->memory_type, both);
    }
};

}  // namespace

Stmt load_ahead(const Stmt &s, const Env &env) {
    Stmt r = s;
    for (auto &f : env.funcs) {
        if (!f.sched.load_ahead) continue;
        const std::string what = "weft: Func \"" + f.contents->name + "\".load_ahead(): ";
        if (f.sched.compute.kind != LoopLevelSpec::At)
            user_error(what + "it is not computed at a loop (compute_at a serial loop of its consumer is needed)");
        const std::string &var = f.sched.compute.var;
        auto c = env.index.find(f.compute_func);
        if (c != env.index.end())
            for (auto &st : env.funcs[c->second].stages)
                for (auto &d : st.sched.dims)
                    if (d.var == var && d.for_type != ForType::Serial)
                        user_error(what + "the loop it is computed at (" + var + " of \"" + f.sched.compute.func_name +
                                   "\") is not a serial loop (unrolled, vectorized, parallel or GPU loops cannot carry "
                                   "a production to their next iteration)");
        // Where the loop is not there (one iteration for these shapes) there is nothing to do.
        LoadAhead la(f.name, f.contents->name, f.compute_func + ".s", "." + var);
        r = la.mutate(r);
    }
    return r;
}

}  // namespace internal
}  // namespace weft
