// The pipeline snapshot (see Env.h): Funcs, inputs and Params reached from the outputs, with
// unique names, their schedules as given and as computed, inlined Funcs substituted.
#include "lower/Env.h"
#include <set>
#include "ir/IRVisitor.h"
#include "lower/CacheKey.h"
#include "lower/FuseMultiplyAdds.h"
#include "lower/Inline.h"
#include "lower/RealizationOrder.h"

namespace weft {
namespace internal {
namespace {

struct Names {
    std::set<std::string> used;
    std::string make(const std::string &base) {
        std::string n = base;
        for (int k = 2; used.count(n); k++) n = base + "$" + std::to_string(k);
        used.insert(n);
        return n;
    }
};

}  // namespace

std::shared_ptr<FunctionContents> wrapper_read_by(const Call *c, const FunctionContents *consumer) {
    std::shared_ptr<FunctionContents> w;
    if (c->call_type == Call::Func && c->func) w = wrapper_for(c->func->wrappers, consumer);
    else if (c->call_type == Call::Image && c->image) w = wrapper_for(c->image->wrappers, consumer);
    else if (c->call_type == Call::Image && c->buffer) w = wrapper_for(c->buffer->wrappers, consumer);
    for (int depth = 0; w && depth < 64; depth++) {
        auto outer = wrapper_for(w->wrappers, consumer);
        if (!outer || outer.get() == consumer) break;
        w = outer;
    }
    return w;
}

namespace {

/** Finds every Func, input and Param reachable from some Exprs. */
class Gather : public IRVisitor {
public:
    std::function<void(const std::shared_ptr<FunctionContents> &)> on_func;
    std::function<void(const Call *)> on_input;
    std::function<void(const std::shared_ptr<ParamContents> &)> on_param;
    std::function<void(const std::shared_ptr<ReductionDomainContents> &)> on_rdom;
    const FunctionContents *current = nullptr;

protected:
    void visit(const Call *op) override {
        if (auto w = wrapper_read_by(op, current)) on_func(w);
        else if (op->call_type == Call::Func && op->func) on_func(op->func);
        else if (op->call_type == Call::Image) on_input(op);
        IRVisitor::visit(op);
    }
    void visit(const Variable *op) override {
        if (op->param) on_param(op->param);
        if (op->rdom) on_rdom(op->rdom);
    }
};

class Rename : public IRMutator {
public:
    std::map<const FunctionContents *, std::string> funcs;
    std::map<const void *, std::string> inputs;  // image or buffer contents
    std::map<std::string, std::string> input_names;  // original name -> unique
    std::map<const ParamContents *, std::string> params;
    std::string self;
    const FunctionContents *self_contents = nullptr;

protected:
    Expr visit(const Call *op, const Expr &e) override {
        Expr r = IRMutator::visit(op, e);
        auto c = r.as<Call>();
        if (auto w = wrapper_read_by(c, self_contents)) {
            auto m = std::make_shared<Call>(w->type, funcs.at(w.get()), c->args, Call::Func);
            m->func = w;
            return Expr(m);
        }
        std::string n = c->name;
        if (c->call_type == Call::Func) n = c->func ? funcs.at(c->func.get()) : self;
        else if (c->call_type == Call::Image) n = inputs.at(c->image ? (const void *)c->image.get() : (const void *)c->buffer.get());
        else return r;
        if (n == c->name && (c->func || c->call_type != Call::Func)) return r;
        auto m = std::make_shared<Call>(*c);
        m->name = n;
        return Expr(m);
    }
    Expr visit(const Variable *op, const Expr &e) override {
        if (op->param) {
            auto it = params.find(op->param.get());
            if (it != params.end() && it->second != op->name) return Variable::make(op->type, it->second);
            return Variable::make(op->type, op->name);  // drops the pointer: lowering sees a plain name
        }
        auto dot = op->name.find('.');
        if (dot != std::string::npos && !op->rdom) {
            auto it = input_names.find(op->name.substr(0, dot));
            if (it != input_names.end() && it->second != op->name.substr(0, dot))
                return Variable::make(op->type, it->second + op->name.substr(dot));
        }
        return e;
    }
};

/** Stage k's loops before any directive. */
std::vector<Dim> initial_loops(const LFunc &f, size_t k) {
    std::vector<std::string> rvars;
    for (auto &rv : f.stages[k].rvars) rvars.push_back(rv.var);
    return default_stage_schedule(f.args, f.stages[k].args, rvars, k > 0).dims;
}

/** f's schedule as a value: levels by the names already in fs, prefetch sources by the
    pipeline's unique names, every Expr passed through `expr`, pointers dropped. */
FuncScheduleValue schedule_value(const LFunc &f, FuncSchedule fs, const std::vector<DefinitionSchedule> &stages,
                                 const std::function<Expr(const Expr &)> &expr) {
    FuncScheduleValue v;
    v.func = f.name;
    v.args = f.args;
    fs.compute.func.reset();
    fs.store.func.reset();
    fs.hoist.func.reset();
    for (auto &b : fs.bounds) {
        b.min = expr(b.min);
        b.extent = expr(b.extent);
    }
    v.schedule = std::move(fs);
    for (size_t k = 0; k < stages.size(); k++) {
        auto nest = [&](StageSchedule sc) {
            for (auto &sp : sc.splits)
                if (sp.factor.defined()) sp.factor = expr(sp.factor);
            for (auto &pf : sc.prefetches) {
                auto it = f.stages[k].prefetch_names.find(pf.src);
                if (it != f.stages[k].prefetch_names.end()) pf.src_name = it->second;
                pf.src = nullptr;
                pf.offset = expr(pf.offset);
            }
            return sc;
        };
        DefinitionSchedule ds;
        ds.schedule = nest(stages[k].schedule);
        if (k < f.stages.size() && f.stages[k].fuse.fused()) {
            ds.fuse = f.stages[k].fuse;
            ds.fuse.func.reset();
            if (!f.stages[k].fuse_func.empty()) ds.fuse.func_name = f.stages[k].fuse_func;
        }
        for (auto &sp : stages[k].specializations) ds.specializations.push_back({expr(sp.condition), nest(sp.schedule)});
        v.stages.push_back(std::move(ds));
        v.initial_loops.push_back(initial_loops(f, k));
    }
    return v;
}


}  // namespace

Env build_env(const std::vector<std::shared_ptr<FunctionContents>> &outputs, bool reference,
              const PipelineSchedule *override_schedule) {
    Env env;
    Names names;
    std::vector<std::shared_ptr<FunctionContents>> order;  // discovery order
    std::map<const FunctionContents *, std::string> fnames;
    std::map<const void *, std::string> inames;
    std::map<std::string, std::string> input_names;
    std::map<const ParamContents *, std::string> pnames;
    std::set<const ReductionDomainContents *> rdoms_seen;

    std::vector<std::shared_ptr<FunctionContents>> stack;
    Gather g;
    g.on_func = [&](const std::shared_ptr<FunctionContents> &f) {
        if (fnames.count(f.get())) return;
        if (!f->defined) user_error("weft: Func \"" + f->name + "\" is used but has no definition");
        fnames[f.get()] = names.make(f->name);
        env.sources.add(f, f->changes);
        order.push_back(f);
        stack.push_back(f);
    };
    g.on_input = [&](const Call *c) {
        const void *key = c->image ? (const void *)c->image.get() : (const void *)c->buffer.get();
        if (inames.count(key)) return;
        LInput in;
        in.name = names.make(c->image ? c->image->name : c->buffer->name);
        inames[key] = in.name;
        if (c->image) env.sources.add(c->image, c->image->wrapper_changes);
        else env.sources.add(c->buffer, c->buffer->wrapper_changes);
        input_names[c->image ? c->image->name : c->buffer->name] = in.name;
        in.type = c->type;
        in.image = c->image;
        in.buffer = c->buffer;
        in.dims = c->image ? c->image->dims : c->buffer->dims;
        env.inputs.push_back(in);
    };
    g.on_param = [&](const std::shared_ptr<ParamContents> &p) {
        if (pnames.count(p.get())) return;
        LParam lp;
        lp.name = names.make(p->name);
        lp.param = p;
        pnames[p.get()] = lp.name;
        env.params.push_back(lp);
    };
    std::function<void(const std::shared_ptr<ReductionDomainContents> &)> on_rdom =
        [&](const std::shared_ptr<ReductionDomainContents> &r) {
            if (!rdoms_seen.insert(r.get()).second) return;
            env.sources.add(r, r->changes);
            g.include(r->predicate);
            for (auto &rv : r->domain) {
                g.include(rv.min);
                g.include(rv.extent);
            }
        };
    g.on_rdom = on_rdom;
    for (auto &o : outputs) {
        if (!o) user_error("weft: a Pipeline output is a null Func");
        if (!o->defined) user_error("weft: output Func \"" + o->name + "\" has no definition");
        g.on_func(o);
    }
    while (!stack.empty()) {
        auto f = stack.back();
        stack.pop_back();
        g.current = f.get();
        auto visit_def = [&](const Definition &d, const DefinitionSchedule &ds) {
            for (auto &a : d.args) g.include(a);
            g.include(d.value);
            if (d.rdom) on_rdom(d.rdom);
            // Params may appear only in a specialization's condition or a schedule's factors.
            auto visit_sched = [&](const StageSchedule &sc) {
                for (auto &sp : sc.splits) g.include(sp.factor);
                for (auto &pf : sc.prefetches) g.include(pf.offset);
            };
            visit_sched(ds.schedule);
            for (auto &sp : ds.specializations) {
                g.include(sp.condition);
                visit_sched(sp.schedule);
            }
        };
        if (f->stage_schedules.size() != f->updates.size() + 1)
            internal_error("Func \"" + f->name + "\": stage schedules and definitions differ in number", __FILE__, __LINE__);
        visit_def(f->init, f->stage_schedules[0]);
        for (size_t k = 0; k < f->updates.size(); k++) visit_def(f->updates[k], f->stage_schedules[k + 1]);
    }

    // Snapshot with unique names.
    Rename rn;
    rn.funcs = fnames;
    rn.inputs = inames;
    rn.input_names = input_names;
    rn.params = pnames;
    std::vector<LFunc> all;
    std::map<std::string, int> all_index;
    std::map<std::string, FuncScheduleValue> given;
    for (auto &fc : order) {
        LFunc lf;
        lf.name = fnames[fc.get()];
        lf.contents = fc;
        lf.args = fc->args;
        lf.type = fc->type;
        lf.types = fc->types;
        const FuncScheduleValue *ov = override_schedule ? override_schedule->find(lf.name) : nullptr;
        if (ov && ov->stages.size() != fc->stage_schedules.size())
            internal_error("Func \"" + lf.name + "\": the schedule given in its place has another number of stages", __FILE__,
                           __LINE__);
        lf.sched = ov ? ov->schedule : fc->schedule;
        rn.self = lf.name;
        rn.self_contents = fc.get();
        auto add_stage = [&](const Definition &d) {
            const DefinitionSchedule &ds = ov ? ov->stages.at(lf.stages.size()) : fc->stage_schedules.at(lf.stages.size());
            LStage s;
            for (auto &a : d.args) s.args.push_back(rn.mutate(a));
            // The contraction rule: multiply-adds fused where written, before anything is inlined.
            s.value = fuse_multiply_adds(rn.mutate(d.value));
            if (d.rdom) {
                if (d.rdom->predicate.defined()) s.predicate = fuse_multiply_adds(rn.mutate(d.rdom->predicate));
                for (auto &rv : d.rdom->domain) s.rvars.push_back({rv.var, rn.mutate(rv.min), rn.mutate(rv.extent)});
            }
            s.sched = ds.schedule;
            s.fuse = ds.fuse;
            if (s.fuse.fused()) {
                auto pc = s.fuse.func.lock();
                if (pc && fnames.count(pc.get())) s.fuse_func = fnames[pc.get()];
                if (ov)  // (a schedule value names the parent by its unique name)
                    for (auto &[ptr, n] : fnames)
                        if (n == s.fuse.func_name) s.fuse_func = n;
            }
            for (auto &sp : ds.specializations)
                s.specs.push_back({fuse_multiply_adds(rn.mutate(sp.condition)), sp.schedule});
            auto note_prefetches = [&](const StageSchedule &sc) {
                for (auto &pf : sc.prefetches) {
                    auto fi = fnames.find((const FunctionContents *)pf.src);
                    auto ii = inames.find(pf.src);
                    if (fi != fnames.end()) s.prefetch_names[pf.src] = fi->second;
                    else if (ii != inames.end()) s.prefetch_names[pf.src] = ii->second;
                    else
                        user_error("weft: " + stage_name(*fc, (int)lf.stages.size()) + ".prefetch(" + pf.src_name +
                                   "): \"" + pf.src_name + "\" is not read by this pipeline");
                }
            };
            note_prefetches(s.sched);
            for (auto &sp : s.specs) note_prefetches(sp.second);
            lf.stages.push_back(std::move(s));
        };
        add_stage(fc->init);
        for (auto &u : fc->updates) add_stage(u);
        if (is_undef(lf.stages[0].value) && lf.stages.size() == 1)
            user_error("weft: Func \"" + fc->name + "\" is undef() and has no update definitions: nothing computes it");
        {
            // The schedule as given, in the pipeline's names.
            FuncSchedule fs = fc->schedule;
            for (LoopLevelSpec *l : {&fs.compute, &fs.store, &fs.hoist}) {
                auto c = l->func.lock();
                if (l->kind == LoopLevelSpec::At && c && fnames.count(c.get())) l->func_name = fnames[c.get()];
            }
            given[lf.name] = ov ? *ov : schedule_value(lf, fs, fc->stage_schedules, [&](const Expr &e) { return rn.mutate(e); });
        }
        for (size_t i = 0; i < outputs.size(); i++)
            if (outputs[i] == fc) lf.output_index = (int)i;
        auto resolve = [&](const LoopLevelSpec &l, std::string &out, const char *what) {
            if (l.kind != LoopLevelSpec::At) return;
            if (ov) {  // (levels by unique names)
                for (auto &[ptr, n] : fnames)
                    if (n == l.func_name) out = n;
                if (out.empty())
                    user_error("weft: Func \"" + lf.name + "\"." + what + "(" + l.func_name + ", " + l.var +
                               "): no Func of that name in this pipeline");
                return;
            }
            auto c = l.func.lock();
            if (!c || !fnames.count(c.get()))
                user_error("weft: Func \"" + fc->name + "\"." + what + "(" + l.func_name + ", " + l.var + "): Func \"" +
                           l.func_name + "\" is not part of this pipeline");
            out = fnames[c.get()];
        };
        if (reference) {
            lf.sched = FuncSchedule();
            lf.sched.compute.kind = LoopLevelSpec::Root;
            lf.sched.store.kind = LoopLevelSpec::Root;
            for (size_t k = 0; k < lf.stages.size(); k++) {
                lf.stages[k].sched = StageSchedule();
                lf.stages[k].sched.dims = initial_loops(lf, k);
                lf.stages[k].specs.clear();
                lf.stages[k].fuse = FuseLevel();
                lf.stages[k].fuse_func.clear();
            }
        } else {
            resolve(lf.sched.compute, lf.compute_func, "compute_at");
            resolve(lf.sched.store, lf.store_func, "store_at");
            resolve(lf.sched.hoist, lf.hoist_func, "hoist_storage");
            for (size_t k = 0; k < lf.stages.size(); k++)
                if (lf.stages[k].fuse.fused() && lf.stages[k].fuse_func.empty())
                    user_error("weft: " + stage_name(*fc, (int)k) + ".compute_with(" + lf.stages[k].fuse.func_name + ", " +
                               lf.stages[k].fuse.var + "): Func \"" + lf.stages[k].fuse.func_name +
                               "\" is not part of this pipeline");
        }
        all_index[lf.name] = (int)all.size();
        all.push_back(std::move(lf));
    }
    for (auto &o : outputs) {
        env.outputs.push_back(fnames[o.get()]);
        for (size_t i = 0; i < std::max<size_t>(1, o->types.size()); i++)
            env.output_buffers.push_back(tuple_buffer_name(env.outputs.back(), (int)i));
    }

    std::set<std::string> inlined = choose_inlined(all, reference);
    std::vector<std::string> topo = realization_order(all, all_index, env.outputs);

    for (auto &n : topo) {
        env.given.funcs.push_back(given[n]);
        env.all_funcs[n] = all[all_index[n]].contents;
    }
    inline_funcs(all, all_index, topo, inlined);

    for (auto &n : topo) {
        if (inlined.count(n)) continue;
        env.index[n] = (int)env.funcs.size();
        env.funcs.push_back(std::move(all[all_index[n]]));
    }
    // compute_at an inlined Func is impossible.
    for (auto &f : env.funcs) {
        for (auto *l : {&f.compute_func, &f.store_func, &f.hoist_func})
            if (!l->empty() && !env.index.count(*l))
                user_error("weft: Func \"" + f.contents->name + "\" is computed or stored at a loop of Func \"" +
                           all[all_index[*l]].contents->name +
                           "\", which is inlined (has no loops); schedule that Func with compute_root() or compute_at()");
    }

    // The schedule as computed, by the unique names.
    for (auto &f : env.funcs) {
        FuncSchedule fs = f.sched;
        if (fs.compute.kind == LoopLevelSpec::At) fs.compute.func_name = f.compute_func;
        if (fs.store.kind == LoopLevelSpec::At) fs.store.func_name = f.store_func;
        if (fs.hoist.kind == LoopLevelSpec::At) fs.hoist.func_name = f.hoist_func;
        fs.store_set = true;  // (decided here for every computed Func)
        std::vector<DefinitionSchedule> stages;
        for (auto &s : f.stages) {
            stages.push_back({s.sched, {}});
            for (auto &sp : s.specs) stages.back().specializations.push_back({sp.first, sp.second});
        }
        env.effective.funcs.push_back(schedule_value(f, fs, stages, [](const Expr &e) { return e; }));
    }

    env.canonical = cache_key(env);
    // Seams (deferred calls chained): checks of what consumers read, so part of the key; by
    // position in the realization order, as names are canonicalised.
    for (size_t i = 0; i < topo.size(); i++) {
        const auto &c = env.all_funcs[topo[i]];
        if (!c->seam) continue;
        env.seams.push_back({topo[i], c->seam});
        env.canonical += "|seam " + std::to_string(i) + ":";
        for (int e : c->seam->sizes) env.canonical += std::to_string(e) + ",";
    }
    return env;
}

}  // namespace internal
}  // namespace weft
