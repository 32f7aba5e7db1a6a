// Chains of deferred calls (weft/Lazy.h) become one pipeline: each part's Funcs are copied
// (one copy per call, so a part called twice is two sets of Funcs), each consumer's ImageParam
// replaced by its producer's output Func over that output's shape, and the whole compiled as
// one Pipeline, whose first call schedules or fuses it. The copies for a chain structure are
// made once and kept (a bounded memo); later chains of that structure only bind their buffers
// and scalars.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <mutex>
#include <set>
#include <unordered_map>
#include "autoschedule/Planner.h"
#include "graph/Lazy.h"
#include "ir/IRVisitor.h"
#include "ir/Stack.h"
#include "lang/Function.h"

namespace weft {
namespace internal {
namespace {

/** What a part's ImageParams and Params become in the chain. */
struct Subst {
    struct ImageTo {
        std::shared_ptr<FunctionContents> func;     // a producer's output, over [0, sizes)
        std::shared_ptr<ImageParamContents> image;  // else another ImageParam
        std::vector<int> sizes;
    };
    std::map<const ImageParamContents *, ImageTo> images;
    std::map<const ParamContents *, std::shared_ptr<ParamContents>> params;
};

/** A call of f (of its value `value`, for a Func defined with a Tuple). */
Expr func_call(const std::shared_ptr<FunctionContents> &f, std::vector<Expr> args, int value = 0) {
    auto c = std::make_shared<Call>(f->types.empty() ? f->type : f->types.at((size_t)value), f->name, std::move(args), Call::Func);
    c->func = f;
    c->value_index = value;
    return Expr(c);
}

/** Copies the Funcs reachable from some outputs, with a Subst applied. The copies read what
    the originals read through in() wrappers directly (the wrappers are copied as Funcs), so
    they have no wrappers of their own. */
class Cloner {
public:
    explicit Cloner(const Subst &s) : sub(s) {
        // Buffer fields of the substituted ImageParams ("in.extent.0" in boundary conditions and
        // RDoms): constants of the producer's shape, or the new ImageParam's fields.
        for (auto &[img, to] : sub.images) {
            for (int d = 0; d < img->dims; d++) {
                int64_t stride = 1;
                for (int k = 0; k < d && to.func; k++) stride *= to.sizes[k];
                for (const char *fld : {"min", "extent", "stride"}) {
                    std::string n = buffer_field(img->name, fld, d);
                    if (to.func) {
                        int64_t v = !strcmp(fld, "min") ? 0 : !strcmp(fld, "extent") ? to.sizes[d] : stride;
                        fields[n] = make_const(Int(32), v);
                    } else if (to.image->name != img->name) {
                        fields[n] = Variable::make(Int(32), buffer_field(to.image->name, fld, d));
                    }
                }
            }
        }
    }

    std::shared_ptr<FunctionContents> get(const std::shared_ptr<FunctionContents> &f) {
        auto it = funcs.find(f.get());
        if (it != funcs.end()) return it->second;
        auto c = std::make_shared<FunctionContents>();
        funcs[f.get()] = c;
        order.push_back(f);
        c->name = f->name;
        c->args = f->args;
        c->type = f->type;
        c->types = f->types;
        c->defined = f->defined;
        c->seam = f->seam;
        c->init = definition(*f, f->init);
        for (auto &u : f->updates) c->updates.push_back(definition(*f, u));
        return c;
    }

    /** Schedules, after every Func is copied (they name Funcs, inputs and Params). */
    void copy_schedules() {
        for (auto &f : order) {
            auto &c = funcs.at(f.get());
            Mut m(*this, f.get());
            auto ex = [&](const Expr &e) { return m.mutate(e); };
            c->schedule = f->schedule;
            for (LoopLevelSpec *l : {&c->schedule.compute, &c->schedule.store, &c->schedule.hoist}) l->func = mapped(l->func.lock());
            for (auto &b : c->schedule.bounds) {
                b.min = ex(b.min);
                b.extent = ex(b.extent);
            }
            c->stage_schedules = f->stage_schedules;
            for (auto &ds : c->stage_schedules) {
                auto nest = [&](StageSchedule &sc) {
                    for (auto &sp : sc.splits)
                        if (sp.factor.defined()) sp.factor = ex(sp.factor);
                    for (auto &pf : sc.prefetches) {
                        pf.offset = ex(pf.offset);
                        pf.src = mapped_source(pf.src);
                    }
                };
                nest(ds.schedule);
                for (auto &sp : ds.specializations) {
                    sp.condition = ex(sp.condition);
                    nest(sp.schedule);
                }
                ds.fuse.func = mapped(ds.fuse.func.lock());
            }
            for (auto &[mn, ext] : f->estimates) c->estimates.push_back({ex(mn), ex(ext)});
        }
    }

    std::map<const FunctionContents *, std::shared_ptr<FunctionContents>> funcs;

private:
    const Subst &sub;
    std::map<std::string, Expr> fields;
    std::vector<std::shared_ptr<FunctionContents>> order;
    std::map<const ReductionDomainContents *, std::shared_ptr<ReductionDomainContents>> rdoms;

    class Mut : public GraphMutator {
    public:
        Mut(Cloner &c, const FunctionContents *consumer) : c_(c), consumer_(consumer) {}

    protected:
        Expr visit(const Call *op, const Expr &e) override {
            if (op->call_type == Call::Intrinsic) return IRMutator::visit(op, e);
            std::vector<Expr> args;
            for (auto &a : op->args) args.push_back(mutate(a));
            if (auto w = wrapper_read_by(op, consumer_)) return func_call(c_.get(w), std::move(args));
            if (op->call_type == Call::Func && op->func) return func_call(c_.get(op->func), std::move(args), op->value_index);
            if (op->call_type == Call::Image && op->image) {
                auto it = c_.sub.images.find(op->image.get());
                if (it != c_.sub.images.end()) {
                    if (it->second.func) return func_call(it->second.func, std::move(args));
                    auto m = std::make_shared<Call>(*op);
                    m->image = it->second.image;
                    m->name = it->second.image->name;
                    m->args = std::move(args);
                    return Expr(m);
                }
            }
            auto m = std::make_shared<Call>(*op);  // a Buffer, an ImageParam bound outside, a self call
            m->args = std::move(args);
            return Expr(m);
        }
        Expr visit(const Variable *op, const Expr &e) override {
            if (op->param) {
                auto it = c_.sub.params.find(op->param.get());
                return it == c_.sub.params.end() ? e : param_expr(it->second);
            }
            if (op->rdom) {
                auto r = c_.rdom(op->rdom, consumer_);
                if (r == op->rdom) return e;
                auto v = std::make_shared<Variable>(*op);
                v->rdom = r;
                return Expr(v);
            }
            auto it = c_.fields.find(op->name);
            return it == c_.fields.end() ? e : it->second;
        }

    private:
        Cloner &c_;
        const FunctionContents *consumer_;
    };

    Definition definition(const FunctionContents &f, const Definition &d) {
        Mut m(*this, &f);
        Definition r;
        for (auto &a : d.args) r.args.push_back(m.mutate(a));
        r.value = m.mutate(d.value);
        if (d.rdom) r.rdom = rdom(d.rdom, &f);
        return r;
    }

    std::shared_ptr<ReductionDomainContents> rdom(const std::shared_ptr<ReductionDomainContents> &r,
                                                  const FunctionContents *consumer) {
        auto it = rdoms.find(r.get());
        if (it != rdoms.end()) return it->second;
        auto c = std::make_shared<ReductionDomainContents>();
        rdoms[r.get()] = c;
        c->name = r->name;
        Mut m(*this, consumer);
        for (auto &rv : r->domain) c->domain.push_back({rv.var, m.mutate(rv.min), m.mutate(rv.extent)});
        if (r->predicate.defined()) c->predicate = m.mutate(r->predicate);
        return c;
    }

    std::shared_ptr<FunctionContents> mapped(const std::shared_ptr<FunctionContents> &f) {
        if (!f) return f;
        auto it = funcs.find(f.get());
        return it == funcs.end() ? f : it->second;
    }
    const void *mapped_source(const void *src) {
        auto fi = funcs.find((const FunctionContents *)src);
        if (fi != funcs.end()) return fi->second.get();
        auto ii = sub.images.find((const ImageParamContents *)src);
        if (ii != sub.images.end())
            return ii->second.func ? (const void *)ii->second.func.get() : (const void *)ii->second.image.get();
        return src;
    }
};

std::vector<std::shared_ptr<FunctionContents>> clone_part(const std::vector<std::shared_ptr<FunctionContents>> &outputs,
                                                          const Subst &sub) {
    return on_large_stack<std::vector<std::shared_ptr<FunctionContents>>>([&] {
        Cloner c(sub);
        std::vector<std::shared_ptr<FunctionContents>> r;
        for (auto &o : outputs) r.push_back(c.get(o));
        c.copy_schedules();
        return r;
    });
}

/** The chain's structure, found from the values asked for. */
struct Walk {
    std::vector<const LazyNode *> nodes;  // deferred calls, producers first
    std::map<const LazyNode *, int> node_index;
    std::vector<Buffer<void>> leaves;  // distinct buffers read
    std::map<const BufferContents *, int> leaf_index;

    void visit(const LazyNode *n) {
        if (n->leaf.defined()) {
            if (!leaf_index.count(n->leaf.contents().get())) {
                leaf_index[n->leaf.contents().get()] = (int)leaves.size();
                leaves.push_back(n->leaf);
            }
            return;
        }
        if (node_index.count(n)) return;
        for (auto &a : n->args)
            if (!a.scalar) visit(a.node.get());
        node_index[n] = (int)nodes.size();
        nodes.push_back(n);
    }
    int leaf(const LazyArg &a) const { return leaf_index.at(a.node->leaf.contents().get()); }
};

/** A chain compiled for one structure: the Callable over the copies, and where each of its
    arguments comes from at a call. */
struct ChainPlan {
    Callable callable;
    /** Vertical fusion between scheduled parts (see build_plan): the seams that may be fused
        ("producer:output"), decided by timing at the first realize; `fused` those kept. */
    std::vector<std::string> candidates;
    std::set<std::string> inlinable;  // candidates read only at the point their reader computes
    std::set<std::string> fused;
    std::atomic<bool> decided{true};  // (set last: callable is not changed after)
    std::mutex decide;                // guards callable and fused while undecided
    struct Slot {
        int leaf = -1;           // a buffer read
        int node = -1, arg = -1;  // else a scalar of a deferred call
    };
    std::vector<Slot> slots;
    std::vector<std::shared_ptr<CallableContents>> parts;  // kept alive: the key names them by address
};

std::string structure_key(const Walk &w, const std::vector<LazyBuffer> &values) {
    std::string k = first_call_autoschedule_enabled() ? "auto;" : "noauto;";
    for (size_t i = 0; i < w.leaves.size(); i++) {
        const BufferContents &b = *w.leaves[i].contents();
        k += "L" + b.type.str() + ":";
        for (int d = 0; d < b.dims; d++) k += std::to_string(b.dim[d].min) + "+" + std::to_string(b.dim[d].extent) + ",";
        k += ";";
    }
    for (auto *n : w.nodes) {
        PartInfo pi = part_info(*n->call->pipeline);
        k += "C" + std::to_string((uintptr_t)n->call.get()) + "@" + std::to_string(pi.snapshot) + "(";
        for (auto &a : n->args) {
            if (a.scalar) k += "s,";
            else if (a.node->leaf.defined()) k += "l" + std::to_string(w.leaf(a)) + ",";
            else k += "n" + std::to_string(w.node_index.at(a.node.get())) + "." + std::to_string(a.index) + ",";
        }
        k += ")";
        for (auto &s : n->sizes) {
            for (int e : s) k += std::to_string(e) + "x";
            k += ";";
        }
    }
    k += "->";
    for (auto &v : values) k += std::to_string(w.node_index.at(v.node().get())) + "." + std::to_string(v.index()) + ",";
    return k;
}

std::shared_ptr<ParamContents> param_copy(const ParamContents &p, const LazyArg &a) {
    auto c = std::make_shared<ParamContents>();
    c->name = p.name;
    c->type = p.type;
    std::memcpy(c->value.bytes, a.bytes, sizeof(a.bytes));
    c->has_value = true;
    std::memcpy(c->estimate.bytes, a.bytes, sizeof(a.bytes));
    c->has_estimate = true;
    return c;
}

/** Does f's definition read input `img` only at its own pure Vars, in order (f(x, y) = ...
    img(x, y) ...), call no Func, and use no Param or RDom named like one of its Vars or of
    `producer`'s (f's Vars are renamed to those)? A part made of such a Func alone is an
    epilogue: it can be computed in its producer's loops. */
bool pointwise_epilogue(const FunctionContents &f, const ImageParamContents *img, const FunctionContents &producer) {
    if (!f.defined || !f.updates.empty() || f.init.rdom) return false;
    class Check : public IRVisitor {
    public:
        const FunctionContents *f, *q;
        const ImageParamContents *img;
        bool ok = true, reads = false;

    protected:
        void visit(const Call *op) override {
            if (op->call_type == Call::Func) ok = false;
            if (op->call_type == Call::Image && op->image.get() == img) {
                reads = true;
                if (op->args.size() != f->args.size()) ok = false;
                for (size_t k = 0; ok && k < op->args.size(); k++) {
                    auto *v = op->args[k].as<Variable>();
                    ok = v && !v->param && !v->rdom && v->name == f->args[k];
                }
            }
            IRVisitor::visit(op);
        }
        void visit(const Variable *op) override {
            if ((op->param || op->rdom) && (std::find(f->args.begin(), f->args.end(), op->name) != f->args.end() ||
                                            std::find(q->args.begin(), q->args.end(), op->name) != q->args.end()))
                ok = false;
        }
    } c;
    c.f = &f;
    c.q = &producer;
    c.img = img;
    c.include(f.init.value);
    return c.ok && c.reads;
}

/** Every Func reachable from `roots` through calls. */
std::vector<std::shared_ptr<FunctionContents>> reachable_funcs(const std::vector<std::shared_ptr<FunctionContents>> &roots) {
    std::vector<std::shared_ptr<FunctionContents>> out;
    std::set<const FunctionContents *> seen;
    class Calls : public IRVisitor {
    public:
        std::vector<std::shared_ptr<FunctionContents>> *found;

    protected:
        void visit(const Call *op) override {
            if (op->call_type == Call::Func && op->func) found->push_back(op->func);
            IRVisitor::visit(op);
        }
    };
    std::vector<std::shared_ptr<FunctionContents>> todo = roots;
    while (!todo.empty()) {
        auto f = todo.back();
        todo.pop_back();
        if (!f || !seen.insert(f.get()).second) continue;
        out.push_back(f);
        std::vector<std::shared_ptr<FunctionContents>> next;
        Calls c;
        c.found = &next;
        auto defn = [&](const Definition &d) {
            for (auto &a : d.args) c.include(a);
            c.include(d.value);
        };
        defn(f->init);
        for (auto &u : f->updates) defn(u);
        for (auto &[k, w] : f->wrappers) next.push_back(w);
        todo.insert(todo.end(), next.begin(), next.end());
    }
    return out;
}

/** The epilogue's other inputs (a residual) are read once per iteration of the loop the
    producer's work is computed at, after that work (a whole reduction): fetched one iteration
    ahead, their cache misses overlap that work instead of following it (5.0 -> 4.7 ms for
    conv + ReLU + add). */
void prefetch_other_inputs(FunctionContents &p, const std::shared_ptr<FunctionContents> &p_ptr, const std::string &loop) {
    class Inputs : public IRVisitor {
    public:
        std::vector<std::shared_ptr<ImageParamContents>> found;

    protected:
        void visit(const Call *op) override {
            if (op->call_type == Call::Image && op->image &&
                std::none_of(found.begin(), found.end(), [&](const auto &i) { return i == op->image; }))
                found.push_back(op->image);
            IRVisitor::visit(op);
        }
    } in;
    in.include(p.init.value);
    for (auto &img : in.found) Func(p_ptr).prefetch(ImageParam(img), Var(loop), 1);
}

/** WEFT_CHAIN_VERTICAL ("all", "off"; empty where unset). */
std::string vertical_mode() {
    const char *m = std::getenv("WEFT_CHAIN_VERTICAL");
    return m ? m : "";
}

/** p's pure Vars renamed to q's (the same number of them), in its definition too. */
void take_vars(FunctionContents &p, const FunctionContents &q) {
    std::map<std::string, Expr> rename;
    for (size_t k = 0; k < p.args.size(); k++)
        if (p.args[k] != q.args[k]) rename[p.args[k]] = Variable::make(Int(32), q.args[k]);
    if (!rename.empty()) {
        p.init.value = substitute(rename, p.init.value);
        for (auto &a : p.init.args) a = substitute(rename, a);
    }
    p.args = q.args;
}

/** Parallel loops of f made serial (it is computed inside another Func's parallel strips). */
void serial_loops(FunctionContents &f) {
    for (auto &ds : f.stage_schedules)
        for (auto &d : ds.schedule.dims)
            if (d.for_type == ForType::Parallel) d.for_type = ForType::Serial;
}

/** `to(f, level)` for each compute, store and hoist level of a Func f reachable from `roots`
    that is at a loop of q (the Funcs computed or stored in q's loops). */
template <typename F>
void levels_at_loops_of(const std::vector<std::shared_ptr<FunctionContents>> &roots, const FunctionContents &q, F to) {
    for (auto &f : reachable_funcs(roots))
        for (LoopLevelSpec *l : {&f->schedule.compute, &f->schedule.store, &f->schedule.hoist})
            if (l->kind == LoopLevelSpec::At && l->func.lock().get() == &q) to(*f, *l);
}

/** The epilogue `p` (a pointwise Func, see pointwise_epilogue) takes over the loops of its
    producer `q` (the scheduled result it reads): p's Vars are renamed to q's, p gets q's
    schedule, q is inlined into p, and whatever was computed or stored at q's loops is at p's.
    The values are those of q written out and read back: the same operations in the same order. */
void adopt_loops(FunctionContents &p, FunctionContents &q, const std::shared_ptr<FunctionContents> &p_ptr) {
    take_vars(p, q);
    FuncSchedule keep = p.schedule;
    p.schedule = q.schedule;
    p.schedule.compute = keep.compute;
    p.schedule.store = keep.store;
    p.schedule.store_set = keep.store_set;
    p.schedule.hoist = keep.hoist;
    p.stage_schedules = q.stage_schedules;
    q.schedule = FuncSchedule{};
    q.stage_schedules.assign(1, DefinitionSchedule{default_stage_schedule(q.args, q.init.args, {}, false), {}});
    std::string compute_loop;  // where q's members are computed, now a loop of p
    levels_at_loops_of({p_ptr}, q, [&](FunctionContents &f, LoopLevelSpec &l) {
        l.func = p_ptr;
        l.func_name = p.name;
        if (&l == &f.schedule.compute && compute_loop.empty()) compute_loop = l.var;
    });
    if (!compute_loop.empty()) prefetch_other_inputs(p, p_ptr, compute_loop);
}

/** The names in a stage's schedule that come from its RVars: its RVar loops and everything
    split from or fused into them. */
std::set<std::string> rvar_names(const StageSchedule &st) {
    std::set<std::string> r;
    for (auto &d : st.dims)
        if (d.is_rvar) r.insert(d.var);
    for (auto it = st.splits.rbegin(); it != st.splits.rend(); ++it) {
        if (it->kind == Split::SplitVar && (r.count(it->outer) || r.count(it->inner))) r.insert(it->old_var);
        if (it->kind == Split::FuseVars && r.count(it->old_var)) {
            r.insert(it->outer);
            r.insert(it->inner);
        }
    }
    return r;
}

/** Can the epilogue of q (a scheduled result with update stages) run in q's own blocks? Each
    update writes q at its pure Vars, in order, and reads q only there (a reduction at every
    point, such as a matmul's), nothing is specialised or fused, and the last update's loops
    outside its outermost reduction loop are pure (the blocks): the loop just outside it is
    returned, or "" where there is none. */
std::string update_blocks_loop(const FunctionContents &q) {
    if (q.updates.empty()) return "";
    for (auto &u : q.updates) {
        if (u.args.size() != q.args.size()) return "";
        for (size_t k = 0; k < u.args.size(); k++) {
            auto *v = u.args[k].as<Variable>();
            if (!v || v->param || v->rdom || v->name != q.args[k]) return "";
        }
        class SelfReads : public IRVisitor {
        public:
            const FunctionContents *q;
            const std::vector<Expr> *at;
            bool ok = true;

        protected:
            void visit(const Call *op) override {
                // (a Func's calls of itself may hold no pointer to it: by name)
                if (op->call_type == Call::Func && (op->func.get() == q || op->name == q->name))
                    for (size_t k = 0; ok && k < op->args.size(); k++) ok = equal(op->args[k], (*at)[k]);
                IRVisitor::visit(op);
            }
        } self;
        self.q = &q;
        self.at = &u.args;
        self.include(u.value);
        if (!self.ok) return "";
    }
    for (auto &ds : q.stage_schedules)
        if (!ds.specializations.empty() || ds.fuse.fused()) return "";
    const StageSchedule &st = q.stage_schedules.back().schedule;
    int outermost_r = -1;
    for (size_t i = 0; i < st.dims.size(); i++)
        if (st.dims[i].is_rvar) outermost_r = (int)i;
    if (outermost_r < 0 || outermost_r + 1 >= (int)st.dims.size()) return "";
    for (size_t i = outermost_r + 1; i < st.dims.size(); i++)
        if (st.dims[i].is_rvar) return "";
    return st.dims[outermost_r + 1].var;
}

/** The epilogue `p` (a pointwise Func) of a result `q` with update stages (see
    update_blocks_loop): p loops as q's last update loops over its blocks (the same splits and
    loop kinds of q's Vars, the reduction's loops left out), and q is computed per block, at p's
    loop `at`, its loops serial there. Each point of q reduces in the same order as before. */
void adopt_update_blocks(FunctionContents &p, const std::shared_ptr<FunctionContents> &q_ptr,
                         const std::shared_ptr<FunctionContents> &p_ptr, const std::string &at) {
    FunctionContents &q = *q_ptr;
    take_vars(p, q);
    const StageSchedule &st = q.stage_schedules.back().schedule;
    const std::set<std::string> rv = rvar_names(st);
    StageSchedule ps;
    for (auto &sp : st.splits)
        if (!rv.count(sp.old_var)) ps.splits.push_back(sp);
    for (auto &d : st.dims)
        if (!d.is_rvar) ps.dims.push_back(d);
    p.stage_schedules.assign(1, DefinitionSchedule{ps, {}, {}});
    serial_loops(q);
    Func(q_ptr).compute_at(Func(p_ptr), Var(at));
    prefetch_other_inputs(p, p_ptr, at);
}

/** May the scheduled result q be inlined into P, the part that reads it? Only where P's own
    definition reads it, at the point it computes (P(x, y) = ... q(x, y) ...), and no other Func
    of P's part does (each point of q is then computed once, inlined or not); q has one stage,
    no specialization, wrapper, bound or compute_with. */
bool inlinable_into(const FunctionContents &q, const std::shared_ptr<FunctionContents> &P) {
    if (!q.updates.empty() || q.stage_schedules.size() != 1 || !q.stage_schedules[0].specializations.empty() ||
        q.stage_schedules[0].fuse.fused() || !q.wrappers.empty() || !q.schedule.bounds.empty() || !P->updates.empty())
        return false;
    class Reads : public IRVisitor {
    public:
        const FunctionContents *q = nullptr;
        const std::vector<std::string> *at = nullptr;  // the pure Vars q must be read at; null: not at all
        bool ok = true;

    protected:
        void visit(const Call *op) override {
            if (op->call_type == Call::Func && op->func.get() == q) {
                ok = ok && at && op->args.size() == at->size();
                for (size_t k = 0; ok && k < op->args.size(); k++) {
                    auto *v = op->args[k].as<Variable>();
                    ok = v && !v->param && !v->rdom && v->name == (*at)[k];
                }
            }
            IRVisitor::visit(op);
        }
    };
    for (auto &f : reachable_funcs({P})) {
        if (f.get() == &q) continue;
        Reads r;
        r.q = &q;
        auto walk = [&](const Definition &d, const std::vector<std::string> *at) {
            r.at = at;
            for (auto &a : d.args) r.include(a);
            r.include(d.value);
        };
        walk(f->init, f == P ? &P->args : nullptr);
        for (auto &u : f->updates) walk(u, nullptr);
        if (!r.ok) return false;
    }
    return true;
}

/** q inlined into its reader; the Funcs computed or stored at q's loops are computed (and
    stored) per strip of A instead (its loop `a`), their loops serial there. */
void inline_into_strip(const std::shared_ptr<FunctionContents> &q, const std::shared_ptr<FunctionContents> &A, const std::string &a) {
    levels_at_loops_of({q}, *q, [&](FunctionContents &f, LoopLevelSpec &l) {
        l = LoopLevelSpec{LoopLevelSpec::At, A, A->name, a};
        serial_loops(f);
    });
    q->schedule = FuncSchedule{};
    q->stage_schedules.assign(1, DefinitionSchedule{default_stage_schedule(q->args, q->init.args, {}, false), {}});
}

std::shared_ptr<ChainPlan> build_plan(const Walk &w, const std::vector<LazyBuffer> &values,
                                      const std::set<std::string> &fuse = {}) {
    auto plan = std::make_shared<ChainPlan>();
    const Target target = w.nodes.back()->call->target;
    for (auto *n : w.nodes)
        if (n->call->target != target)
            throw Error("weft: a chain of deferred calls runs on one target: " + n->part + " is for " +
                        n->call->target.str() + ", " + w.nodes.back()->part + " for " + target.str());
    std::vector<PartInfo> info;
    bool all_unscheduled = true;
    for (auto *n : w.nodes) {
        info.push_back(part_info(*n->call->pipeline));
        all_unscheduled = all_unscheduled && !info.back().scheduled;
        plan->parts.push_back(n->call);
    }
    // With no schedule anywhere, the whole chain is scheduled at its first call (fusion across
    // the parts decided there); otherwise each part keeps its schedule (an unscheduled part gets
    // the one its own first call would choose) and the results of calls stay at root.
    const bool whole = all_unscheduled && first_call_autoschedule_enabled();

    std::vector<std::shared_ptr<ImageParamContents>> leaf_images(w.leaves.size());
    std::set<std::string> image_names;
    auto leaf_image = [&](int j, const ImageParamContents &like) {
        if (!leaf_images[j]) {
            auto c = std::make_shared<ImageParamContents>();
            c->name = like.name;
            for (int k = 2; image_names.count(c->name); k++) c->name = like.name + "_" + std::to_string(k);
            image_names.insert(c->name);
            c->type = like.type;
            c->dims = like.dims;
            leaf_images[j] = c;
        }
        return leaf_images[j];
    };
    // Epilogues (not when the chain is scheduled as a whole): a part without a schedule made of
    // one pointwise Func (bias, activation, residual add, requantisation) whose only reader
    // of a scheduled part's result is that Func, and which is that result's only reader, is
    // computed in the result's own loops instead of reading it back from memory.
    // Per result (node, output): how many arguments read it (a value asked for counts 2: it is
    // kept), and the last node reading it.
    std::map<std::pair<int, int>, int> reads, reader_node;
    for (size_t m = 0; m < w.nodes.size(); m++)
        for (auto &a : w.nodes[m]->args)
            if (!a.scalar && !a.node->leaf.defined()) {
                std::pair<int, int> k{w.node_index.at(a.node.get()), a.index};
                reads[k]++;
                reader_node[k] = (int)m;
            }
    for (auto &v : values) reads[{w.node_index.at(v.node().get()), v.index()}] += 2;
    std::map<int, std::pair<int, int>> epilogue;  // consumer node -> (producer node, output)
    if (!whole) {
        for (size_t m = 0; m < w.nodes.size(); m++) {
            if (info[m].scheduled || info[m].outputs.size() != 1) continue;
            const auto &decl = w.nodes[m]->call->args;
            int from = -1, from_out = 0, img_arg = -1, producers = 0;
            for (size_t k = 0; k < decl.size(); k++) {
                const LazyArg &a = w.nodes[m]->args[k];
                if (!decl[k].image() || a.node->leaf.defined()) continue;
                producers++;
                from = w.node_index.at(a.node.get());
                from_out = a.index;
                img_arg = (int)k;
            }
            if (producers != 1 || !info[from].scheduled || reads[{from, from_out}] != 1) continue;
            const FunctionContents &q = *info[from].outputs[from_out];
            const FunctionContents &pf = *info[m].outputs[0];
            bool fused_with = false;
            for (auto &ds : q.stage_schedules) fused_with = fused_with || ds.fuse.fused();
            if ((!q.updates.empty() && update_blocks_loop(q).empty()) || fused_with || q.args.size() != pf.args.size() ||
                !q.wrappers.empty() || !pointwise_epilogue(pf, decl[img_arg].image().get(), q))
                continue;
            epilogue[(int)m] = {from, from_out};
        }
    }
    std::vector<std::vector<std::shared_ptr<FunctionContents>>> outs(w.nodes.size());
    std::vector<std::vector<std::string>> readers(w.nodes.size());  // per node: parts reading its outputs
    std::vector<Argument> params;
    std::vector<ChainPlan::Slot> param_slots;
    for (size_t i = 0; i < w.nodes.size(); i++) {
        const LazyNode &n = *w.nodes[i];
        const auto &decl = n.call->args;
        Subst sub;
        for (size_t k = 0; k < decl.size(); k++) {
            const LazyArg &a = n.args[k];
            if (decl[k].image()) {
                const ImageParamContents *img = decl[k].image().get();
                if (a.node->leaf.defined()) {
                    sub.images[img].image = leaf_image(w.leaf(a), *img);
                } else {
                    int m = w.node_index.at(a.node.get());
                    sub.images[img].func = outs[m].at(a.index);
                    sub.images[img].sizes = a.node->sizes.at(a.index);
                    readers[m].push_back(n.part);
                }
            } else {
                auto p = param_copy(*decl[k].param(), a);
                sub.params[decl[k].param().get()] = p;
                params.emplace_back(p);
                param_slots.push_back({-1, (int)i, (int)k});
            }
        }
        if (!whole && !info[i].scheduled && !epilogue.count((int)i) && first_call_autoschedule_enabled() &&
            target.arch() == Target::Arch::Host) {
            // This part alone, scheduled as its own first call would for these shapes; then
            // copied again with its inputs replaced.
            Subst alone;
            Subst then;
            for (auto &[img, to] : sub.images) {
                auto c = std::make_shared<ImageParamContents>();
                c->name = img->name;
                c->type = img->type;
                c->dims = img->dims;
                const int k = (int)(std::find_if(decl.begin(), decl.end(), [&](const Argument &d) { return d.image().get() == img; }) -
                                    decl.begin());
                const LazyArg &a = n.args[k];
                for (int d = 0; d < img->dims; d++) {
                    if (a.node->leaf.defined())
                        c->estimates.push_back({a.node->leaf.dim(d).min(), a.node->leaf.dim(d).extent()});
                    else
                        c->estimates.push_back({0, to.sizes[d]});
                }
                alone.images[img].image = c;
                then.images[c.get()] = to;
            }
            alone.params = sub.params;
            auto first = clone_part(info[i].outputs, alone);
            for (size_t j = 0; j < first.size(); j++) {
                first[j]->estimates.clear();
                for (int e : n.sizes[j]) first[j]->estimates.push_back({0, e});
            }
            std::vector<Func> fs;
            for (auto &f : first) fs.emplace_back(f);
            bool scheduled = false;
            try {
                Pipeline(fs).auto_schedule(target);
                scheduled = true;
            } catch (Error &) {
                // As at a first call: a pipeline the planner cannot schedule runs as it is.
            }
            if (scheduled) {
                outs[i] = clone_part(first, then);
                continue;
            }
        }
        outs[i] = clone_part(info[i].outputs, sub);
    }
    std::set<const FunctionContents *> inlined_results;
    for (auto &[m, src] : epilogue) {
        auto q = outs[src.first].at(src.second);
        std::string blocks = update_blocks_loop(*q);
        if (!q->updates.empty()) adopt_update_blocks(*outs[m][0], q, outs[m][0], blocks);
        else adopt_loops(*outs[m][0], *q, outs[m][0]);
        inlined_results.insert(q.get());  // (not at root: inlined, or computed per block)
    }
    // The results that later parts read: checked where they are read, and at root unless the
    // whole chain is scheduled at once or the result is computed in its epilogue's loops.
    for (size_t i = 0; i < w.nodes.size(); i++) {
        if (readers[i].empty()) continue;
        std::string who;
        for (auto &r : readers[i])
            if (who.find(r) == std::string::npos) who += (who.empty() ? "" : ", ") + r;
        for (size_t j = 0; j < outs[i].size(); j++) {
            auto seam = std::make_shared<SeamInfo>();
            seam->sizes = w.nodes[i]->sizes[j];
            seam->producer = w.nodes[i]->part;
            seam->consumers = who;
            outs[i][j]->seam = seam;
            if (!whole && !inlined_results.count(outs[i][j].get())) Func(outs[i][j]).compute_root();
        }
    }
    // Vertical fusion between scheduled parts: a result without updates read by one part only
    // (not asked for, not made an epilogue's) whose output loops over strips of at least 8
    // (its outermost loop the outer half of a split) may be computed per strip of that output,
    // its own loops serial there; where that part reads it only at the point it computes
    // (f(x, y) = ... q(x, y) ...), it may instead be inlined into it, the Funcs computed in its
    // loops then computed per strip. Whether that pays (the strips it recomputes at their edges
    // against the round trip through memory it saves) is measured at the first realize, one
    // seam at a time (realize_chain); `fuse` names the seams fused in this build ("i:j", or
    // "i:j:inline"). A result fused into a part that is itself fused is computed per strip of
    // the outermost part of such a run: in the strip its reader is computed in, it would be
    // computed again per strip of that reader's own loops (a halo per inner strip).
    if (!whole && first_call_autoschedule_enabled() && target.arch() == Target::Arch::Host) {
        const double l2_bytes = machine_params(target, 1).l2_bytes;
        struct Fused {
            std::shared_ptr<FunctionContents> q, P;
            std::string v;
            bool inlined;
        };
        std::vector<Fused> fused;
        for (auto &[k, count] : reads) {
            if (count != 1) continue;
            int m = reader_node[k];
            auto q = outs[k.first].at(k.second);
            if (inlined_results.count(q.get()) || epilogue.count(m) || outs[m].size() != 1 || !q->updates.empty()) continue;
            auto P = outs[m][0];
            if (!P->updates.empty() || P->stage_schedules.empty()) continue;
            const StageSchedule &ps = P->stage_schedules[0].schedule;
            if (ps.dims.size() < 2) continue;
            const std::string v = ps.dims.back().var;
            bool strip = false;
            for (auto &sp : ps.splits) {
                int64_t f = 0;
                strip = strip || (sp.kind == Split::SplitVar && sp.outer == v && is_const_int(sp.factor, &f) && f >= 8);
            }
            if (!strip) continue;
            // (An intermediate that stays in L2 between the parts has little to save: not timed.)
            double bytes = (double)(q->types.empty() ? q->type : q->types[0]).bytes();
            for (int e : w.nodes[k.first]->sizes.at(k.second)) bytes *= (double)e;
            if (bytes <= l2_bytes && vertical_mode() != "all")
                continue;
            std::string id = std::to_string(k.first) + ":" + std::to_string(k.second);
            plan->candidates.push_back(id);
            if (inlinable_into(*q, P)) plan->inlinable.insert(id);
            if (fuse.count(id + ":inline") && plan->inlinable.count(id)) fused.push_back({q, P, v, true});
            else if (fuse.count(id)) fused.push_back({q, P, v, false});
        }
        // Where each is computed: per strip of the outermost reader of a run of fused seams.
        auto anchor = [&](const Fused &f) {
            const Fused *at = &f;
            for (bool further = true; further;) {
                further = false;
                for (auto &g : fused)
                    if (g.q == at->P) {
                        at = &g;
                        further = true;
                        break;
                    }
            }
            return std::make_pair(at->P, at->v);
        };
        for (auto &f : fused) {
            auto [A, a] = anchor(f);
            if (f.inlined) {
                inline_into_strip(f.q, A, a);
                continue;
            }
            serial_loops(*f.q);
            Func(f.q).compute_at(Func(A), Var(a));
        }
        plan->fused = fuse;
        plan->decided = plan->candidates.empty() || !fuse.empty();
    }
    std::vector<Func> result;
    for (auto &v : values) {
        auto f = outs[w.node_index.at(v.node().get())].at(v.index());
        for (auto &r : result)
            if (r.contents() == f)
                throw Error("weft: realize(): the same value (an output of " + v.node()->part + ") is asked for twice");
        result.emplace_back(f);
    }
    std::vector<Argument> decl;
    for (size_t j = 0; j < w.leaves.size(); j++) {
        if (!leaf_images[j]) continue;  // (a leaf read by no ImageParam: cannot happen)
        decl.emplace_back(ImageParam(leaf_images[j]));
        ChainPlan::Slot s;
        s.leaf = (int)j;
        plan->slots.push_back(s);
    }
    decl.insert(decl.end(), params.begin(), params.end());
    plan->slots.insert(plan->slots.end(), param_slots.begin(), param_slots.end());
    plan->callable = Pipeline(result).compile_to_callable(decl, target);
    return plan;
}

std::mutex g_plans_mutex;
std::unordered_map<std::string, std::shared_ptr<ChainPlan>> g_plans;
constexpr size_t kMaxPlans = 64;

std::shared_ptr<ChainPlan> plan_for(const Walk &w, const std::vector<LazyBuffer> &values) {
    std::string key = structure_key(w, values);
    {
        std::lock_guard<std::mutex> l(g_plans_mutex);
        auto it = g_plans.find(key);
        if (it != g_plans.end()) return it->second;
    }
    auto plan = build_plan(w, values);
    std::lock_guard<std::mutex> l(g_plans_mutex);
    if (g_plans.size() >= kMaxPlans) g_plans.clear();
    return g_plans.emplace(key, plan).first->second;
}

Walk walk(const std::vector<LazyBuffer> &values) {
    Walk w;
    for (auto &v : values) w.visit(v.node().get());
    return w;
}

}  // namespace

namespace {
double now_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/** The fastest of a few calls (each writes the same values). */
double time_call(Callable &c, std::vector<CallArg> &args, int reps) {
    double best = 1e300;
    for (int r = 0; r < reps; r++) {
        double t = now_ms();
        c.call(args.data(), args.size());
        best = std::min(best, now_ms() - t);
    }
    return best;
}

/** WEFT_DEBUG: the seams fused vertically, each inlined or per strip ("node:output", the nodes
    numbered producers first), and those left apart. */
void report_vertical(const ChainPlan &plan) {
    if (!debug_enabled()) return;
    std::string fused, apart;
    for (auto &seam : plan.candidates) {
        std::string &to = plan.fused.count(seam + ":inline") || plan.fused.count(seam) ? fused : apart;
        to += (to.empty() ? "" : ", ") + seam;
        if (plan.fused.count(seam + ":inline")) to += " inlined";
        else if (plan.fused.count(seam)) to += " per strip";
    }
    std::fprintf(stderr, "weft: chain: seams fused vertically: %s; apart: %s\n", fused.empty() ? "none" : fused.c_str(),
                 apart.empty() ? "none" : apart.c_str());
}

/** The first realize of a chain with seams that may be fused vertically: each seam in turn is
    fused on top of those kept (inlined where its reader reads it only at the point it computes,
    else, or where that was not kept, per strip), the chain built and timed against the best so
    far on this call's buffers, and kept where it is at least 5% faster (a variant lowering
    refuses is dropped); then, where some were left apart, every seam at once (each inlined
    where it can be), kept on the same terms.
    The values are the same either way; only time is at stake. */
void decide_vertical(const Walk &w, const std::vector<LazyBuffer> &values, ChainPlan &plan, std::vector<CallArg> &args) {
    // WEFT_CHAIN_VERTICAL=all fuses every such seam, each inlined where it can be (no timing;
    // where lowering refuses the whole, none), =off none; otherwise each is timed.
    const std::string mode = vertical_mode();
    if (mode == "off") return;
    // Each seam in its first form to try: inlined where it can be, else per strip.
    auto first_form = [&](const std::string &seam) { return plan.inlinable.count(seam) ? seam + ":inline" : seam; };
    std::set<std::string> all;
    for (auto &seam : plan.candidates) all.insert(first_form(seam));
    if (mode == "all") {
        try {
            QuietCompiles quiet;
            auto p = build_plan(w, values, all);
            Callable c = p->callable;
            c.call(args.data(), args.size());  // (lowered and compiled here: an Error keeps the chain apart)
            plan.callable = c;
            plan.fused = all;
            report_vertical(plan);
        } catch (Error &e) {
            if (debug_enabled()) std::fprintf(stderr, "weft: chain: not fused vertically: %s\n", e.what());
        }
        return;
    }
    std::set<std::string> kept;
    Callable best = plan.callable;
    double best_ms = time_call(best, args, 3);
    // The chain with `trial` fused, timed against the best so far (in turns), kept where it is
    // at least 5% faster.
    auto try_fused = [&](const std::set<std::string> &trial, const std::string &what) {
        try {
            QuietCompiles quiet;
            auto p = build_plan(w, values, trial);
            double t = time_call(p->callable, args, 3);
            best_ms = std::min(best_ms, time_call(best, args, 2));
            t = std::min(t, time_call(p->callable, args, 2));
            if (debug_enabled())
                std::fprintf(stderr, "weft: chain: %s fused vertically %.3f ms, apart %.3f ms%s\n", what.c_str(), t, best_ms,
                             t < 0.95 * best_ms ? ": fused" : "");
            if (t < 0.95 * best_ms) {
                kept = trial;
                best = p->callable;
                best_ms = t;
                return true;
            }
        } catch (Error &e) {
            if (debug_enabled()) std::fprintf(stderr, "weft: chain: %s not fused: %s\n", what.c_str(), e.what());
        }
        return false;
    };
    for (auto &seam : plan.candidates) {
        std::set<std::string> trial = kept;
        trial.insert(first_form(seam));
        if (try_fused(trial, "seam " + first_form(seam)) || first_form(seam) == seam) continue;
        // Not inlined: per strip.
        trial = kept;
        trial.insert(seam);
        try_fused(trial, "seam " + seam);
    }
    // Every seam at once, where some were left apart: together they may pay where none did
    // alone (each removes one round trip through memory, all of them every intermediate).
    if (plan.candidates.size() > 1 && kept.size() < plan.candidates.size()) try_fused(all, "every seam");
    plan.callable = best;
    plan.fused = kept;
    report_vertical(plan);
}
}  // namespace

void realize_chain(const std::vector<LazyBuffer> &values, const std::vector<Buffer<void>> &outs) {
    Walk w = walk(values);
    auto plan = plan_for(w, values);
    std::vector<CallArg> args(plan->slots.size() + outs.size());
    for (size_t k = 0; k < plan->slots.size(); k++) {
        const auto &s = plan->slots[k];
        if (s.leaf >= 0) {
            args[k].is_buffer = true;
            args[k].buf = w.leaves[s.leaf].contents().get();
        } else {
            const LazyArg &a = w.nodes[s.node]->args[s.arg];
            args[k].type = a.type;
            std::memcpy(args[k].bytes, a.bytes, sizeof(a.bytes));
        }
    }
    for (size_t j = 0; j < outs.size(); j++) {
        args[plan->slots.size() + j].is_buffer = true;
        args[plan->slots.size() + j].buf = outs[j].contents().get();
    }
    if (!plan->decided.load(std::memory_order_acquire)) {
        std::lock_guard<std::mutex> l(plan->decide);
        if (!plan->decided.load(std::memory_order_relaxed)) {
            decide_vertical(w, values, *plan, args);
            plan->decided.store(true, std::memory_order_release);
        }
    }
    plan->callable.call(args.data(), args.size());
}

}  // namespace internal
}  // namespace weft
