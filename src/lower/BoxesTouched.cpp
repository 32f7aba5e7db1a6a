#include "lower/BoxesTouched.h"
#include <optional>
#include <iostream>
#include <unordered_map>
#include <unordered_set>
#include "ir/IRVisitor.h"
#include "ir/Simplify.h"

namespace weft {
namespace internal {
namespace {

/** Which nodes (of the kinds where Touched computes bounds: lets, loops and ifs) read
    (`calls`) or write `name` somewhere inside them, found in one pass so that Touched can skip
    the rest: bounds of the lets and loops around code that does not touch the Func are not
    needed, and computing them made bounds inference quadratic in the size of a loop nest. */
class Mentions : public IRVisitor {
public:
    Mentions(const std::string &n, bool calls) : name(n), calls(calls) {}
    const std::string &name;
    bool calls;
    bool any = false;
    std::unordered_set<const void *> nodes;

protected:
    bool hit = false;
    bool enter(const Stmt &s) override { return may_name(s, name); }
    template <typename Node, typename Base>
    void track(const Node *op, Base base) {
        bool outer = hit;
        hit = false;
        base();
        if (hit) nodes.insert(op);
        hit = hit || outer;
    }
    void visit(const Call *op) override {
        if (op->is_intrinsic("prefetch")) return;
        IRVisitor::visit(op);
        if (calls && op->call_type != Call::Intrinsic && op->name == name) hit = any = true;
    }
    void visit(const Provide *op) override {
        IRVisitor::visit(op);
        if (!calls && op->name == name) hit = any = true;
    }
    void visit(const Let *op) override {
        track(op, [&] { IRVisitor::visit(op); });
    }
    void visit(const LetStmt *op) override {
        track(op, [&] { IRVisitor::visit(op); });
    }
    void visit(const For *op) override {
        track(op, [&] { IRVisitor::visit(op); });
    }
    void visit(const IfThenElse *op) override {
        track(op, [&] { IRVisitor::visit(op); });
    }
};

class Touched : public IRVisitor {
public:
    Touched(const std::string &n, bool calls, const Scope &outer) : name(n), calls(calls), scope(outer) {}
    std::string name;
    bool calls;
    Scope scope;
    Box box;
    /** Where set (run()), the nodes that touch name: the others are skipped. */
    const std::unordered_set<const void *> *relevant = nullptr;

    void run(const Stmt &s) {
        Mentions m(name, calls);
        m.include(s);
        if (!m.any) return;
        relevant = &m.nodes;
        include(s);
        relevant = nullptr;
    }
    bool skip(const void *op) const { return relevant && !relevant->count(op); }

    /** Conditions known to hold here: lhs <= hi (from enclosing ifs), used when an argument is
        lhs plus a constant (a predicate and the index it guards are built from one value). */
    struct Fact {
        Expr lhs, hi;
    };
    std::vector<Fact> facts;

    /** The argument lists added since the scope or the facts last changed: the same list again
        (a call repeated in an expression, as inlining makes them) adds nothing new. */
    /** By a hash of their leaves (args_hash), so that each call compares with the few lists
        like it, not all of them: a program with thousands of calls stays linear. */
    std::unordered_map<size_t, std::vector<const std::vector<Expr> *>> added;
    long scope_epoch = 0, added_epoch = -1;

    /** A hash of args' leaves (variables, constants, the Funcs called), in order: equal lists
        hash the same. */
    static size_t args_hash(const std::vector<Expr> &args) {
        struct Leaves : IRVisitor {
            size_t h = 0;
            void mix(size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); }
            void visit(const Variable *op) override { mix(std::hash<std::string>()(op->name)); }
            void visit(const IntImm *op) override { mix(std::hash<int64_t>()(op->value)); }
            void visit(const UIntImm *op) override { mix(std::hash<uint64_t>()(op->value)); }
            void visit(const FloatImm *op) override { mix(std::hash<double>()(op->value)); }
            void visit(const Call *op) override { mix(std::hash<std::string>()(op->name)), IRVisitor::visit(op); }
        } l;
        for (auto &a : args) l.mix(a.defined() ? (size_t)node_type_of(a.get()) : 0), l.include(a);
        return l.h;
    }

    void add(const std::vector<Expr> &args) {
        if (added_epoch != scope_epoch) {
            // A fresh map, not clear(): that costs its buckets, as many as it ever held.
            if (!added.empty()) decltype(added)().swap(added);
            added_epoch = scope_epoch;
        }
        std::vector<const std::vector<Expr> *> &alike = added[args_hash(args)];
        for (const std::vector<Expr> *prev : alike) {
            bool same = prev->size() == args.size();
            for (size_t i = 0; same && i < args.size(); i++) same = args[i].same_as((*prev)[i]) || equal(args[i], (*prev)[i]);
            if (same) return;
        }
        alike.push_back(&args);
        Box b;
        for (auto &a : args) {
            Interval i = bounds_of_expr_in_scope(a, scope);
            if (a.type().is_int() && a.type().is_scalar())
                for (auto &f : facts) {
                    if (f.lhs.type() != a.type()) continue;
                    int64_t c;
                    if (!is_const_int(simplify(a - f.lhs), &c)) continue;
                    Interval h = bounds_of_expr_in_scope(f.hi, scope);
                    if (!h.max.defined()) continue;
                    Expr cap = simplify(h.max + (int)c);
                    i.max = i.max.defined() ? simplify(Min::make(i.max, cap)) : cap;
                }
            b.push_back(i);
        }
        box = box_union(box, b);
    }

protected:
    void visit(const Call *op) override {
        if (op->is_intrinsic("prefetch")) return;  // a hint: may point past what is read
        IRVisitor::visit(op);
        if (calls && op->call_type != Call::Intrinsic && op->name == name) add(op->args);
    }
    void visit(const Provide *op) override {
        IRVisitor::visit(op);
        if (!calls && op->name == name) add(op->args);
    }
    void visit(const Let *op) override {
        if (skip(op)) return;
        include(op->value);
        Interval v = bounds_of_expr_in_scope(op->value, scope);
        auto saved = scope.find(op->name) != scope.end() ? std::optional<Interval>(scope[op->name]) : std::nullopt;
        scope[op->name] = v;
        scope_epoch++;
        include(op->body);
        if (saved) scope[op->name] = *saved;
        else scope.erase(op->name);
        scope_epoch++;
    }
    void visit(const LetStmt *op) override {
        if (skip(op)) return;
        include(op->value);
        Interval v;
        auto pc = op->value.as<Call>();
        if (pc && pc->is_intrinsic("promise_clamped")) {
            // The value is known to lie within [lo, hi] wherever it is used.
            // Of the value's own bounds and the promised range, the narrower where that is
            // known (a constant width keeps constant extents visible downstream); their
            // intersection otherwise.
            Interval pv = bounds_of_expr_in_scope(pc->args[0], scope);
            Interval lo = bounds_of_expr_in_scope(pc->args[1], scope), hi = bounds_of_expr_in_scope(pc->args[2], scope);
            Interval pr(lo.min, hi.max);
            if (!pv.is_bounded()) {
                v = interval_intersection(pv, pr);
            } else if (!pr.is_bounded()) {
                v = pv;
            } else {
                int64_t a = 0, b = 0;
                bool ca = is_const_int(simplify(pv.max - pv.min), &a), cb = is_const_int(simplify(pr.max - pr.min), &b);
                if (ca && cb) v = a <= b ? pv : pr;
                else if (ca) v = pv;
                else if (cb) v = pr;
                else v = interval_intersection(pv, pr);
            }
        } else {
            v = bounds_of_expr_in_scope(op->value, scope);
        }
        if (debug_bounds()) std::cerr << "LET " << op->name << " in [" << v.min << ", " << v.max << "]\n";
        auto saved = scope.find(op->name) != scope.end() ? std::optional<Interval>(scope[op->name]) : std::nullopt;
        scope[op->name] = v;
        scope_epoch++;
        include(op->body);
        if (saved) scope[op->name] = *saved;
        else scope.erase(op->name);
        scope_epoch++;
    }
    /** Inside a branch, a tail guard "likely(v < e)" bounds v. */
    void narrow(const Expr &c, std::vector<std::pair<std::string, Interval>> &saved) {
        if (auto call = c.as<Call>()) {
            if (call->is_intrinsic("likely")) narrow(call->args[0], saved);
            return;
        }
        if (auto a = c.as<And>()) {
            narrow(a->a, saved);
            narrow(a->b, saved);
            return;
        }
        {
            // lo <= w, lo < w: a lower bound on a variable in scope.
            Expr w, lo;
            if (auto le = c.as<LE>()) {
                w = le->b;
                lo = le->a;
            } else if (auto lt = c.as<LT>()) {
                w = lt->b;
                lo = lt->a + 1;
            }
            auto wv = w.defined() ? w.as<Variable>() : nullptr;
            auto it = wv && w.type().is_int() && !w.type().is_vector() ? scope.find(wv->name) : scope.end();
            if (it != scope.end()) {
                Interval l = bounds_of_expr_in_scope(lo, scope);
                if (l.min.defined()) {
                    saved.push_back(*it);
                    Expr old_min = it->second.min;
                    it->second.min = old_min.defined() ? simplify(Max::make(old_min, l.min)) : l.min;
                    // (As below: where min > max the branch never runs. Raised to the bound
                    // alone, not to the new min: that is max(old max, bound) >= new min wherever
                    // the range was not empty, with no expression of both to widen later bounds.)
                    if (it->second.max.defined()) it->second.max = simplify(Max::make(it->second.max, l.min));
                }
            }
        }
        Expr v, hi;
        if (auto lt = c.as<LT>()) {
            v = lt->a;
            hi = lt->b - 1;
        } else if (auto le = c.as<LE>()) {
            v = le->a;
            hi = le->b;
        }
        if (!v.defined() || !v.type().is_int() || v.type().is_vector()) return;
        auto var = v.as<Variable>();
        if (!var) {
            // rest + w <= hi with w a variable in scope (coefficient 1): w <= hi - rest.
            class Vars : public IRVisitor {
            public:
                std::vector<std::string> names;

            protected:
                void visit(const Variable *op) override { names.push_back(op->name); }
            } vs;
            vs.include(v);
            for (auto &n : vs.names) {
                if (!scope.count(n)) continue;
                Expr w = Variable::make(v.type(), n);
                Expr rest = simplify(v - w);
                if (expr_uses_var(rest, n)) continue;
                narrow(LE::make(w, simplify(hi - rest)), saved);
            }
            return;
        }
        auto it = scope.find(var->name);
        if (it == scope.end()) return;
        Interval h = bounds_of_expr_in_scope(hi, scope);
        if (!h.max.defined()) return;
        saved.push_back(*it);
        it->second.max = it->second.max.defined() ? simplify(Min::make(it->second.max, h.max)) : h.max;
        // Where min > max the branch never runs, so any range is sound there: keeping min <= max
        // stops such iterations from widening what the live ones need. min(old min, bound) is
        // <= the new max wherever the range was not empty; min(old min, new max) would be too,
        // but its bounds over the loops outside (the new max holds the loop's rounded-up last
        // value) come out below every real read: a chain's input refused at x = -1.
        if (it->second.min.defined()) it->second.min = simplify(Min::make(it->second.min, h.max));
    }
    void add_facts(const Expr &c) {
        if (auto call = c.as<Call>()) {
            if (call->is_intrinsic("likely")) add_facts(call->args[0]);
            return;
        }
        if (auto a = c.as<And>()) {
            add_facts(a->a);
            add_facts(a->b);
            return;
        }
        if (auto lt = c.as<LT>()) facts.push_back({lt->a, lt->b - 1});
        else if (auto le = c.as<LE>()) facts.push_back({le->a, le->b});
    }
    void visit(const IfThenElse *op) override {
        if (skip(op)) return;
        include(op->condition);
        std::vector<std::pair<std::string, Interval>> saved;
        narrow(op->condition, saved);
        size_t nf = facts.size();
        if (op->condition.type().is_scalar()) add_facts(op->condition);
        scope_epoch++;
        include(op->then_case);
        facts.resize(nf);
        for (auto it = saved.rbegin(); it != saved.rend(); ++it) scope[it->first] = it->second;
        scope_epoch++;
        include(op->else_case);
    }
    void visit(const For *op) override {
        if (skip(op)) return;
        include(op->min);
        include(op->extent);
        Interval mi = bounds_of_expr_in_scope(op->min, scope);
        // An extent max(e, 0) means the loop is empty where e <= 0: those iterations add no
        // values, so the last value is bounded by min + e - 1 alone.
        Expr ext = op->extent;
        if (auto mx = ext.as<Max>())
            if (is_const_zero(mx->b)) ext = mx->a;
        Interval last = bounds_of_expr_in_scope(simplify(op->min + ext - 1), scope);
        if (debug_bounds()) std::cerr << "FOR " << op->name << " last " << last.max << "\n";
        auto saved = scope.find(op->name) != scope.end() ? std::optional<Interval>(scope[op->name]) : std::nullopt;
        scope[op->name] = Interval(mi.min, last.max);
        scope_epoch++;
        include(op->body);
        if (saved) scope[op->name] = *saved;
        else scope.erase(op->name);
        scope_epoch++;
    }
};
}  // namespace

/** WEFT_DEBUG_BOUNDS=1 traces bounds inference on stderr. */
bool debug_bounds() {
    static const bool on = [] {
        const char *e = getenv("WEFT_DEBUG_BOUNDS");
        return e && *e && *e != '0';
    }();
    return on;
}

Box box_union(const Box &a, const Box &b) {
    if (a.empty()) return b;
    if (b.empty()) return a;
    Box r;
    for (size_t i = 0; i < a.size() && i < b.size(); i++) r.push_back(interval_union(a[i], b[i]));
    return r;
}

bool touches(const Stmt &s, const std::string &name) {
    Mentions a(name, true), b(name, false);
    a.include(s);
    if (a.any) return true;
    b.include(s);
    return b.any;
}

Box box_required(const Stmt &s, const std::string &name, const Scope &outer) {
    Touched t(name, true, outer);
    t.run(s);
    return t.box;
}
Box box_provided(const Stmt &s, const std::string &name, const Scope &outer) {
    Touched t(name, false, outer);
    t.run(s);
    return t.box;
}

}  // namespace internal
}  // namespace weft
