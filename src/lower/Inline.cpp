// Inlining (see Inline.h).
#include "lower/Inline.h"
#include <algorithm>
#include <unordered_map>
#include "ir/BindShared.h"
#include "ir/IRVisitor.h"
#include "ir/Simplify.h"
#include "lower/RealizationOrder.h"

namespace weft {
namespace internal {
namespace {

/** Replaces the calls to the inlined Funcs by their values, all of them in one pass: a call's
    arguments are expanded first, then put into the callee's value, whose own calls are expanded
    in turn. Each node of a graph is visited once (what is shared stays shared), and calls to the
    same Func with the same (simplified) arguments get the same replacement, so a chain of inlined
    Funcs each using the last several times (f2(x) = f1(x) * f1(x) + f1(x)) is a graph of the
    chain's size (bound by bind_shared_subexpressions once it is in its reader) instead of a tree
    exponential in its length, and inlining n Funcs costs the size of what they expand to, not n
    passes over a reader that grows with each. */
class Inliner : public GraphMutator {
public:
    const std::vector<LFunc> *funcs = nullptr;
    const std::map<std::string, int> *index = nullptr;
    const std::set<std::string> *inlined = nullptr;

protected:
    Expr visit(const Let *op, const Expr &e) override {
        lets_.push_back(op->name);
        Expr r = IRMutator::visit(op, e);
        lets_.pop_back();
        return r;
    }
    Expr visit(const Call *op, const Expr &e) override {
        Expr r = IRMutator::visit(op, e);
        auto c = r.as<Call>();
        if (c->call_type != Call::Func || !inlined->count(c->name)) return r;
        const LFunc &f = (*funcs)[index->at(c->name)];
        std::vector<Expr> args = c->args;
        std::string key = args_key(args);  // (args simplified: x - 1 + 1 and x are one key)
        if (!key.empty()) {
            key = c->name + "(" + key + ")[" + std::to_string(c->value_index) + "]";
            auto it = by_args_.find(key);
            if (it != by_args_.end()) return it->second;
        }
        std::map<std::string, Expr> m;
        for (size_t i = 0; i < f.args.size(); i++) m[f.args[i]] = args[i];
        // (The value's calls expanded with no Let of the caller's in scope: its own Lets are its
        // own, and the caller's names are not in it.)
        std::vector<std::string> outer;
        outer.swap(lets_);
        Expr value = tuple_value(f.stages[0].value, c->value_index);
        auto sz = sizes_.find(value.get());
        if (sz == sizes_.end()) sz = sizes_.emplace(value.get(), std::make_pair(value, graph_size(value))).first;
        expanded += sz->second.second;
        if (expanded > kMaxExpandedNodes)
            user_error("weft: inlining makes the definition of Func \"" + consumer + "\" an expression of more than " +
                       std::to_string(kMaxExpandedNodes) + " operations (Funcs inlined into it call each other at " +
                       "different points: a pyramid or a chain of stencils with nothing stored grows exponentially " +
                       "with its depth); compute some of them at root or in tiles (compute_root, compute_at), or leave " +
                       "the pipeline without schedule directives so that it is scheduled automatically");
        Expr v = mutate(substitute_graph(m, value));
        outer.swap(lets_);
        if (!key.empty()) by_args_.emplace(key, v);
        return v;
    }

    /** substitute(m, e), each node of e's graph once (sharing kept); as substitute() where a Let
        inside e rebinds one of m's names. */
    static Expr substitute_graph(const std::map<std::string, Expr> &m, const Expr &e) {
        class Once : public GraphMutator {
        public:
            explicit Once(const std::map<std::string, Expr> &m) : m_(m) {}
            bool rebinds = false;

        protected:
            Expr visit(const Variable *op, const Expr &e) override {
                auto it = m_.find(op->name);
                return it == m_.end() ? e : it->second;
            }
            Expr visit(const Let *op, const Expr &e) override {
                rebinds = rebinds || m_.count(op->name) > 0;
                return IRMutator::visit(op, e);
            }

        private:
            const std::map<std::string, Expr> &m_;
        } once(m);
        Expr r = once.mutate(e);
        return once.rebinds ? substitute(m, e) : r;
    }

public:
    /** The operations the expansions into `consumer`'s definition have substituted (each Func's
        value counted as a graph, per expansion): past kMaxExpandedNodes that definition is refused
        with a weft::Error, instead of a compile that would run out of memory or time. */
    static constexpr int64_t kMaxExpandedNodes = 1000000;
    int64_t expanded = 0;
    std::string consumer;

private:
    std::map<std::string, Expr> by_args_;
    std::vector<std::string> lets_;
    std::unordered_map<const ExprNode *, std::pair<Expr, int64_t>> sizes_;  // value -> (value held, graph size)

    /** The number of distinct nodes in e's graph. */
    static int64_t graph_size(const Expr &e) {
        class Count : public GraphMutator {
        public:
            int64_t n = 0;

        protected:
            Expr mutate_once(const Expr &x) override {
                n++;
                return GraphMutator::mutate_once(x);
            }
        } c;
        c.mutate(e);
        return c.n;
    }

    /** The arguments' printed form, simplified (and args with them), where they are small and use no
        name bound by a Let around the call (the same text could mean another value under another
        Let); else empty. */
    std::string args_key(std::vector<Expr> &args) const {
        class Small : public IRMutator {
        public:
            int nodes = 0;
            std::set<std::string> vars;
            Expr mutate(const Expr &e) override {
                if (!e.defined() || ++nodes > 64) return e;
                if (auto v = e.as<Variable>()) vars.insert(v->name);
                return IRMutator::mutate(e);
            }
            using IRMutator::mutate;
        } small;
        for (auto &a : args) small.mutate(a);
        if (small.nodes > 64) return "";
        for (auto &l : lets_)
            if (small.vars.count(l)) return "";
        std::string key;
        for (auto &a : args) {
            a = simplify(a);
            key += to_string(a) + ";";
        }
        return key;
    }
};

/** The calls to Func `name` in an Expr, appended to out. */
void calls_to(const Expr &e, const std::string &name, std::vector<const Call *> &out) {
    class Find : public IRVisitor {
    public:
        const std::string *name;
        std::vector<const Call *> *out;

    protected:
        void visit(const Call *op) override {
            if (op->call_type == Call::Func && op->name == *name) out->push_back(op);
            IRVisitor::visit(op);
        }
    } v;
    v.name = &name;
    v.out = &out;
    v.include(e);
}
/** The calls to Func `name` in a stage's arguments and value. */
std::vector<const Call *> stage_calls_to(const LStage &s, const std::string &name) {
    std::vector<const Call *> out;
    for (const Expr &a : s.args) calls_to(a, name, out);
    calls_to(s.value, name, out);
    return out;
}

/** An inline reduction (a Func with updates left at the default schedule) is computed at the
    innermost loop of its consumer outside the consumer's vector loop: one vector's worth of
    points. As in Halide (where it is computed inside the vector loop and vectorized with it),
    its loops over the dimension that the vector spans are vectorized: the dimension i where
    every call reads f(..., v + k, ...) with v the consumer's vectorized variable (traced back
    through its splits) and k free of v, and whose updates write and read f only at their pure
    variable in that position (so the lanes are independent). Nothing changes otherwise. */
void vectorize_like_consumer(LFunc &f, const LStage &user) {
    const StageSchedule &us = user.sched;
    const Dim *vd = nullptr;
    for (const Dim &d : us.dims)
        if (d.for_type == ForType::Vectorized) {
            vd = &d;
            break;
        }
    if (!vd) return;
    // The consumer's variable the vector loop comes from, and its lanes.
    std::string v = vd->var;
    int64_t lanes = 0;
    bool split = false;  // false: a whole dimension vectorized (its extent known after bounds inference)
    for (size_t i = us.splits.size(); i-- > 0;) {
        const Split &sp = us.splits[i];
        if (sp.kind == Split::SplitVar && sp.inner == v) {
            if (!split && !is_const_int(sp.factor, &lanes)) return;
            split = true;
            v = sp.old_var;
        } else if (sp.kind == Split::SplitVar && sp.outer == v) {
            v = sp.old_var;
        } else if (sp.kind == Split::FuseVars && sp.old_var == v) {
            return;  // a fused vector loop: no one dimension of f follows it
        }
    }
    if (split && lanes < 2) return;
    std::vector<const Call *> calls = stage_calls_to(user, f.name);
    if (calls.empty()) return;
    int dim = -1;
    for (const Call *c : calls) {
        int found = -1;
        for (size_t i = 0; i < c->args.size(); i++) {
            if (!expr_uses_var(c->args[i], v)) continue;
            if (found >= 0) return;  // v in two dimensions
            Expr k = simplify(c->args[i] - Variable::make(c->args[i].type(), v));
            if (expr_uses_var(k, v)) return;
            found = (int)i;
        }
        if (found < 0 || (dim >= 0 && found != dim)) return;
        dim = found;
    }
    if (dim < 0 || dim >= (int)f.args.size()) return;
    const std::string &x = f.args[dim];
    // Every stage writes at x in that position and reads f only there.
    for (size_t k = 1; k < f.stages.size(); k++) {
        const LStage &st = f.stages[k];
        const Variable *w = st.args.at(dim).as<Variable>();
        if (!w || w->name != x || !st.sched.splits.empty()) return;
        for (const Call *c : stage_calls_to(st, f.name)) {
            const Variable *r = c->args.at(dim).as<Variable>();
            if (!r || r->name != x) return;
        }
    }
    if (!f.stages[0].sched.splits.empty()) return;
    for (auto &st : f.stages) {
        auto &dims = st.sched.dims;
        auto it = std::find_if(dims.begin(), dims.end(), [&](const Dim &d) { return d.var == x; });
        if (it == dims.end() || it->for_type != ForType::Serial) return;
    }
    for (auto &st : f.stages) {
        auto &dims = st.sched.dims;
        auto it = std::find_if(dims.begin(), dims.end(), [&](const Dim &d) { return d.var == x; });
        Dim d = *it;
        d.for_type = ForType::Vectorized;
        dims.erase(it);
        dims.insert(dims.begin(), d);  // innermost
    }
}

}  // namespace

std::set<std::string> choose_inlined(std::vector<LFunc> &all, bool reference) {
    // Inlined: the pure-only Funcs left at the default schedule.
    std::set<std::string> inlined;
    for (auto &f : all) {
        bool is_out = f.output_index >= 0;
        if (is_out) {
            f.sched.compute.kind = LoopLevelSpec::Root;
            f.sched.store.kind = LoopLevelSpec::Root;
            continue;
        }
        if (f.sched.compute.kind == LoopLevelSpec::Inline) {
            if (f.stages.size() == 1) inlined.insert(f.name);
            else {
                // A Func with updates cannot be inlined: it is computed at the innermost loop of its
                // one consumer stage that is not vectorized (as an inline reduction should be),
                // else at root.
                f.sched.compute.kind = LoopLevelSpec::Root;
                f.sched.store.kind = LoopLevelSpec::Root;
                int users = 0;
                LFunc *user = nullptr;
                int user_stage = -1;
                for (auto &c : all) {
                    if (&c == &f) continue;
                    for (size_t k = 0; k < c.stages.size(); k++) {
                        std::vector<std::string> called = funcs_called(c.stages[k]);
                        if (std::find(called.begin(), called.end(), f.name) != called.end()) {
                            users++;
                            user = &c;
                            user_stage = (int)k;
                        }
                    }
                }
                bool user_inlined = user && user->output_index < 0 && user->sched.compute.kind == LoopLevelSpec::Inline &&
                                    user->stages.size() == 1;
                if (!reference && users == 1 && !user_inlined) {
                    const auto &dims = user->stages[user_stage].sched.dims;
                    vectorize_like_consumer(f, user->stages[user_stage]);
                    bool placed = false, gpu_block = false;
                    for (auto &d : dims) {
                        if (d.for_type == ForType::Vectorized) continue;
                        // Inside a GPU kernel: at its innermost thread loop (each thread computes
                        // its own), never at a block loop (one thread for the block) or outside.
                        if (d.for_type == ForType::GPUBlock) {
                            gpu_block = true;
                            break;
                        }
                        f.sched.compute = LoopLevelSpec{LoopLevelSpec::At, user->contents, user->contents->name, d.var};
                        f.sched.store = f.sched.compute;
                        f.compute_func = f.store_func = user->name;
                        placed = true;
                        break;
                    }
                    if (!placed && !gpu_block && user->output_index < 0 && user->sched.compute.kind == LoopLevelSpec::At) {
                        // Every loop of the consumer is vectorized: where the consumer is computed
                        // (not at root, where producers computed at that loop would not be).
                        f.sched.compute = user->sched.compute;
                        f.sched.store = user->sched.compute;
                        f.compute_func = f.store_func = user->compute_func;
                    }
                }
            }
        } else if (f.sched.store.kind == LoopLevelSpec::Inline) {
            f.sched.store = f.sched.compute;
            f.store_func = f.compute_func;
        }
    }
    return inlined;
}

void inline_funcs(std::vector<LFunc> &funcs, const std::map<std::string, int> &index,
                  const std::vector<std::string> &order, const std::set<std::string> &inlined) {
    Inliner in;  // (one for all: a call's replacement does not depend on where it is)
    in.funcs = &funcs;
    in.index = &index;
    in.inlined = &inlined;
    for (const std::string &name : order) {
        if (inlined.count(name)) continue;
        in.consumer = funcs[index.at(name)].name;
        in.expanded = 0;  // (the bound is per definition: a long pipeline of small ones is linear)
        for (auto &s : funcs[index.at(name)].stages)
            for_each_expr(s, [&](Expr &e) {
                Expr r = in.mutate(e);
                if (!r.same_as(e)) e = bind_shared_subexpressions(r);
            });
    }
}

}  // namespace internal
}  // namespace weft
