// A pipeline's schedule read as a value, and a value applied to a pipeline (see ApplySchedule.h).
#include "pipeline/ApplySchedule.h"
#include <algorithm>
#include <set>
#include "ir/IRVisitor.h"
#include "ir/Stack.h"
#include "lower/Env.h"

namespace weft {
namespace internal {

namespace {

Env names_env(const std::vector<std::shared_ptr<FunctionContents>> &outputs) {
    // (The reference snapshot: it reads every Func's schedule without checking or deciding
    // where each Func is computed, so a pipeline whose schedule is wrong can get a new one.)
    return on_large_stack<Env>([&] { return build_env(outputs, true); });
}

std::string join(const std::vector<std::string> &v) {
    std::string r;
    for (auto &s : v) r += (r.empty() ? "\"" : ", \"") + s + "\"";
    return r;
}

std::string loops_text(const std::vector<Dim> &dims) {
    std::string r;
    for (auto &d : dims) r += (r.empty() ? "" : ", ") + std::string(d.is_rvar ? "RVar " : "") + d.var;
    return "(" + r + ")";
}

/** A schedule value's Exprs use the pipeline's unique names: back to the Params and inputs. */
class ToUser : public IRMutator {
public:
    std::map<std::string, std::shared_ptr<ParamContents>> params;
    std::map<std::string, std::string> inputs;  // unique name -> the input's own name

protected:
    Expr visit(const Variable *op, const Expr &e) override {
        auto p = params.find(op->name);
        if (p != params.end()) {
            if (p->second->type != op->type)
                user_error("weft: apply_schedule(): Param \"" + p->second->name + "\" is " + p->second->type.str() +
                           ", but the schedule uses it as " + op->type.str());
            return param_expr(p->second);
        }
        auto dot = op->name.find('.');
        if (dot != std::string::npos) {
            auto in = inputs.find(op->name.substr(0, dot));
            if (in != inputs.end()) return Variable::make(op->type, in->second + op->name.substr(dot));
        }
        return e;
    }
    Expr visit(const Call *op, const Expr &e) override {
        if (op->call_type != Call::Intrinsic)
            user_error("weft: apply_schedule(): an Expr of the schedule calls \"" + op->name +
                       "\"; only Params, buffer shapes and constants can be used there");
        return IRMutator::visit(op, e);
    }
};

VarOrRVar loop(const Directive &d, size_t i) {
    bool rv = i < d.rvars.size() && d.rvars[i];
    if (rv) return VarOrRVar(RVar(d.names[i]));
    return VarOrRVar(Var(d.names[i]));
}

std::string directive_name(const Directive &d) {
    static const char *n[] = {"compute_root", "compute_inline", "compute_at", "store_root", "store_at", "bound", "store_in",
                              "reorder_storage", "store_nontemporal", "load_ahead", "align_storage", "align_bounds", "fold_storage",
                              "hoist_storage_root", "hoist_storage", "specialize", "split", "fuse",
                              "atomic", "reorder", "a loop type", "prefetch", "gpu_single_thread", "gpu_mma", "compute_with",
                              "in"};
    static_assert(sizeof(n) / sizeof(n[0]) == Directive::Wrap + 1, "a name for every Directive::Op");
    if (d.op == Directive::Wrap) return "\"" + d.func + "\"." + (d.flag ? "clone_in" : "in");
    std::string where = "Func \"" + d.func + "\"";
    if (d.stage > 0) where += ".update(" + std::to_string(d.stage - 1) + ")";
    if (d.spec >= 0 && d.op != Directive::Specialize) where += " (specialization " + std::to_string(d.spec) + ")";
    if (d.op == Directive::Loop) return where + "." + word_of(loop_words(), (int)d.for_type).cpp + "(" + d.names[0] + ")";
    return where + "." + n[(int)d.op];
}

void apply_directives(const Env &env, const std::vector<std::string> &reset, const std::vector<Directive> &calls,
                      const char *who, size_t *failed = nullptr);

using WrapperMap = std::map<const FunctionContents *, std::shared_ptr<FunctionContents>>;

/** Each wrapper map of the pipeline: its owner's unique name, the map, the owner's change
    counter, and whether the owner is an input. */
struct WrapperOwner {
    std::string name;
    WrapperMap *map;
    ChangeCount *changes;
    bool input;
};
std::vector<WrapperOwner> wrapper_owners(const Env &env) {
    std::vector<WrapperOwner> r;
    for (auto &[n, f] : env.all_funcs) r.push_back({n, &f->wrappers, &f->changes, false});
    for (auto &in : env.inputs) {
        if (in.image) r.push_back({in.name, &in.image->wrappers, &in.image->wrapper_changes, true});
        else if (in.buffer) r.push_back({in.name, &in.buffer->wrappers, &in.buffer->wrapper_changes, true});
    }
    return r;
}

/** Was w made by clone_in() (a copy of of's definition) rather than in() (a call of it)? */
bool is_clone(const FunctionContents &w, const FunctionContents *of) {
    auto c = w.init.value.as<Call>();
    return !w.updates.empty() || !c || c->call_type != Call::Func || c->func.get() != of;
}

/** The wrappers this pipeline reads, each after those it wraps or is read by. */
std::vector<WrapperValue> wrappers_of(const Env &env) {
    std::map<const FunctionContents *, std::string> names;
    for (auto &[n, f] : env.all_funcs) names[f.get()] = n;
    std::vector<WrapperValue> found;
    for (auto &o : wrapper_owners(env)) {
        std::map<std::string, WrapperValue> by_wrapper;
        const FunctionContents *self = o.input ? nullptr : env.all_funcs.at(o.name).get();
        for (auto &[cons, w] : *o.map) {
            auto wn = names.find(w.get());
            if (wn == names.end()) continue;  // read by no Func of this pipeline
            std::string cn;
            if (cons) {
                auto c = names.find(cons);
                if (c == names.end()) continue;
                cn = c->second;
            }
            WrapperValue &v = by_wrapper[wn->second];
            v.of = o.name;
            v.wrapper = wn->second;
            v.clone = !o.input && is_clone(*w, self);
            if (!cn.empty()) v.consumers.push_back(cn);
        }
        for (auto &[n, v] : by_wrapper) {
            std::sort(v.consumers.begin(), v.consumers.end());
            found.push_back(v);
        }
    }
    // Each after the wrappers it names (f.in().in(), or a wrapper read by another's wrapper).
    std::vector<WrapperValue> out;
    std::set<std::string> placed;
    while (out.size() < found.size()) {
        size_t before = out.size();
        for (auto &v : found) {
            if (placed.count(v.wrapper)) continue;
            bool ready = true;
            for (auto &o : found) {
                if (&o == &v || placed.count(o.wrapper)) continue;
                if (o.wrapper == v.of || std::count(v.consumers.begin(), v.consumers.end(), o.wrapper)) ready = false;
            }
            if (!ready) continue;
            placed.insert(v.wrapper);
            out.push_back(v);
        }
        if (out.size() == before) {  // (a cycle cannot be made through the API; keep what is left)
            for (auto &v : found)
                if (!placed.count(v.wrapper)) out.push_back(v), placed.insert(v.wrapper);
        }
    }
    return out;
}

bool same_wrapper(const WrapperValue &a, const WrapperValue &b) {
    return a.of == b.of && a.consumers == b.consumers && a.clone == b.clone;
}

/** A function that puts back every wrapper map of env as it is now (`keep` holds the owners
    alive where env does not outlive the function). */
std::function<void()> restorer_for(const Env &env, std::shared_ptr<const Env> keep = nullptr) {
    std::vector<std::pair<WrapperOwner, WrapperMap>> saved;
    for (auto &o : wrapper_owners(env)) saved.push_back({o, *o.map});
    return [keep, saved] {
        for (auto &[o, m] : saved)
            if (*o.map != m) {
                *o.map = m;
                changed(*o.changes);
            }
    };
}

/** Takes away the wrappers for which drop(owner, wrapper) holds; whether any went. */
template <typename Drop>
bool erase_wrappers(const Env &env, Drop &&drop) {
    bool any = false;
    for (auto &o : wrapper_owners(env)) {
        bool here = false;
        for (auto it = o.map->begin(); it != o.map->end();) {
            if (drop(o, *it->second)) it = o.map->erase(it), here = true;
            else ++it;
        }
        if (here) changed(*o.changes);
        any = any || here;
    }
    return any;
}

}  // namespace

PipelineSchedule schedule_of(const std::vector<std::shared_ptr<FunctionContents>> &outputs) {
    Env env = names_env(outputs);
    PipelineSchedule s = env.given;
    s.wrappers = wrappers_of(env);
    return s;
}

void apply_schedule_to(const std::vector<std::shared_ptr<FunctionContents>> &outputs, const PipelineSchedule &s) {
    Env env = names_env(outputs);
    std::vector<std::string> all;
    for (auto &f : env.given.funcs) all.push_back(f.func);
    // The wrappers s makes that are not here yet: their Funcs are made by s's calls.
    std::set<std::string> to_make;
    std::vector<WrapperValue> here = wrappers_of(env);
    for (auto &w : s.wrappers) {
        bool found = false;
        for (auto &h : here) found = found || same_wrapper(h, w);
        if (!found) to_make.insert(w.wrapper);
        if (!env.all_funcs.count(w.of) &&
            std::none_of(env.inputs.begin(), env.inputs.end(), [&](const LInput &in) { return in.name == w.of; }) &&
            std::none_of(s.wrappers.begin(), s.wrappers.end(), [&](const WrapperValue &o) { return o.wrapper == w.of; }))
            user_error("weft: apply_schedule(): the schedule wraps \"" + w.of + "\" (in()), which is not part of this pipeline");
    }
    // Check first that s is for this algorithm: its Funcs, their Vars and their stages' loops.
    for (auto &v : s.funcs) {
        const FuncScheduleValue *mine = env.given.find(v.func);
        if (!mine && to_make.count(v.func)) continue;
        if (!mine)
            user_error("weft: apply_schedule(): the schedule names Func \"" + v.func +
                       "\", which is not part of this pipeline (its Funcs are " + join(all) + ")");
        if (v.args != mine->args)
            user_error("weft: apply_schedule(): Func \"" + v.func + "\" has the Vars (" + join(mine->args) +
                       ") here, but (" + join(v.args) + ") in the schedule");
        if (v.stages.size() != mine->stages.size())
            user_error("weft: apply_schedule(): Func \"" + v.func + "\" has " + std::to_string(mine->stages.size()) +
                       " stages here, but " + std::to_string(v.stages.size()) + " in the schedule");
        for (size_t k = 0; k < v.initial_loops.size() && k < mine->initial_loops.size(); k++)
            if (v.initial_loops[k] != mine->initial_loops[k])
                user_error("weft: apply_schedule(): stage " + std::to_string(k) + " of Func \"" + v.func +
                           "\" starts with the loops " + loops_text(mine->initial_loops[k]) + " here, but " +
                           loops_text(v.initial_loops[k]) + " in the schedule");
        if (v.initial_loops.size() != v.stages.size())
            user_error("weft: apply_schedule(): Func \"" + v.func + "\": the schedule does not give its stages' loops");
    }
    // The wrappers here that s does not have are taken away (a schedule value is the whole
    // schedule), then those it has are made by its calls; on an error, put back.
    std::function<void()> put_back = restorer_for(env);
    std::set<const FunctionContents *> unnamed;  // the wrappers here that s does not have
    for (auto &h : here)
        if (std::none_of(s.wrappers.begin(), s.wrappers.end(), [&](const WrapperValue &w) { return same_wrapper(h, w); }))
            unnamed.insert(env.all_funcs.at(h.wrapper).get());
    bool removed = erase_wrappers(env, [&](const WrapperOwner &, const FunctionContents &w) { return unnamed.count(&w) > 0; });
    try {
        if (removed) env = names_env(outputs);
        std::vector<std::string> reset;
        for (auto &v : s.funcs)
            if (env.given.find(v.func)) reset.push_back(v.func);
        apply_directives(env, reset, schedule_directives(s), "apply_schedule()");
    } catch (Error &) {
        put_back();
        throw;
    }
}

void apply_directives_to(const std::vector<std::shared_ptr<FunctionContents>> &outputs,
                         const std::vector<Directive> &calls, const char *who, size_t *failed) {
    apply_directives_to(names_env(outputs), calls, who, failed);
}

void drop_auto_copies(const std::vector<std::shared_ptr<FunctionContents>> &outputs) {
    erase_wrappers(names_env(outputs), [](const WrapperOwner &, const FunctionContents &w) { return w.auto_copy; });
}

std::function<void()> wrappers_restorer(const std::vector<std::shared_ptr<FunctionContents>> &outputs) {
    auto env = std::make_shared<const Env>(names_env(outputs));
    return restorer_for(*env, env);
}

void apply_directives_to(const Env &env, const std::vector<Directive> &calls, const char *who, size_t *failed) {
    std::vector<std::string> reset;
    for (auto &f : env.given.funcs) reset.push_back(f.func);
    apply_directives(env, reset, calls, who, failed);
}

namespace {
/** The wrapper a Wrap directive names: the one there is where its consumers read one already
    (made by the algorithm, or by an earlier apply), else a new one, as the call makes it. */
template <typename FuncOf>
std::shared_ptr<FunctionContents> make_wrapper(const Env &env, const Directive &d, FuncOf &&func) {
    std::vector<Func> cons;
    for (size_t i = 1; i < d.names.size(); i++) cons.push_back(func(d.names[i]));
    const LInput *input = nullptr;
    for (auto &in : env.inputs)
        if (in.name == d.func) input = &in;
    WrapperMap *map = input ? (input->image ? &input->image->wrappers : &input->buffer->wrappers) : &func(d.func).contents()->wrappers;
    // Already there: every consumer (or, for in(), the null key) reads one wrapper.
    std::shared_ptr<FunctionContents> there;
    bool all_there = true;
    if (cons.empty()) {
        auto it = map->find(nullptr);
        if (it != map->end()) there = it->second;
        else all_there = false;
    }
    for (auto &c : cons) {
        auto it = map->find(c.contents().get());
        if (it == map->end() || (there && it->second != there)) all_there = false;
        else there = it->second;
    }
    if (all_there && there) return there;
    if (input) {
        if (d.flag) user_error("weft: clone_in() of the input \"" + d.func + "\": inputs have in(), not clone_in()");
        Func w = cons.empty() ? (input->image ? ImageParam(input->image).in() : Buffer<void>(input->buffer).in())
                              : (input->image ? ImageParam(input->image).in(cons[0]) : Buffer<void>(input->buffer).in(cons[0]));
        for (size_t i = 1; i < cons.size(); i++) (*map)[cons[i].contents().get()] = w.contents();
        changed(input->image ? input->image->wrapper_changes : input->buffer->wrapper_changes);
        return w.contents();
    }
    Func of = func(d.func);
    Func w = d.flag ? of.clone_in(cons) : of.in(cons);
    return w.contents();
}

void apply_directives(const Env &env, const std::vector<std::string> &reset, const std::vector<Directive> &calls,
                      const char *who, size_t *failed) {
    std::vector<std::string> all;
    for (auto &f : env.given.funcs) all.push_back(f.func);
    ToUser to_user;
    for (auto &p : env.params) to_user.params[p.name] = p.param;
    for (auto &in : env.inputs) to_user.inputs[in.name] = in.image ? in.image->name : in.buffer->name;

    // What every Func has now, to put back on an error.
    struct Saved {
        std::shared_ptr<FunctionContents> f;
        FuncSchedule schedule;
        std::vector<DefinitionSchedule> stages;
    };
    std::vector<Saved> saved;
    for (auto &[n, f] : env.all_funcs) saved.push_back({f, f->schedule, f->stage_schedules});
    std::function<void()> restore_wrappers = restorer_for(env);
    auto restore = [&] {
        for (auto &sv : saved) {
            sv.f->schedule = sv.schedule;
            sv.f->stage_schedules = sv.stages;
            changed(*sv.f);
        }
        restore_wrappers();
    };
    std::map<std::string, std::shared_ptr<FunctionContents>> made;  // wrappers made by the calls, by name

    std::map<std::tuple<std::string, int, int>, Stage> specs;
    const Directive *current = nullptr;
    try {
        // The default schedule for each Func the value names.
        for (auto &name : reset) {
            FunctionContents &f = *env.all_funcs.at(name);
            const FuncScheduleValue &mine = *env.given.find(name);
            f.schedule = FuncSchedule();
            for (size_t k = 0; k < f.stage_schedules.size(); k++) {
                f.stage_schedules[k] = DefinitionSchedule();
                f.stage_schedules[k].schedule.dims = mine.initial_loops[k];
            }
            changed(f);
        }
        auto func = [&](const std::string &n) {
            // (A wrapper the calls made first: its name could also be another Func's.)
            auto m = made.find(n);
            if (m != made.end()) return Func(m->second);
            auto it = env.all_funcs.find(n);
            if (it != env.all_funcs.end()) return Func(it->second);
            user_error("weft: Func \"" + n + "\" is not part of this pipeline (its Funcs are " + join(all) + ")");
        };
        for (auto &d : calls) {
            current = &d;
            auto ex = [&](size_t i) { return d.exprs[i].defined() ? to_user.mutate(d.exprs[i]) : d.exprs[i]; };
            if (d.op == Directive::Wrap) {
                made[d.names.at(0)] = make_wrapper(env, d, func);
                continue;
            }
            Func f = func(d.func);
            auto stage = [&]() -> Stage {
                if (d.spec < 0) return Stage(f.contents(), d.stage);
                return specs.at({d.func, d.stage, d.spec});
            };
            switch (d.op) {
            case Directive::ComputeRoot: f.compute_root(); break;
            case Directive::ComputeInline: f.compute_inline(); break;
            case Directive::ComputeAt: f.compute_at(func(d.names[0]), Var(d.names[1])); break;
            case Directive::StoreRoot: f.store_root(); break;
            case Directive::StoreAt: f.store_at(func(d.names[0]), Var(d.names[1])); break;
            case Directive::HoistStorageRoot: f.hoist_storage_root(); break;
            case Directive::HoistStorage: f.hoist_storage(func(d.names[0]), Var(d.names[1])); break;
            case Directive::Bound: f.bound(Var(d.names[0]), ex(0), ex(1)); break;
            case Directive::StoreIn: f.store_in(d.memory); break;
            case Directive::ReorderStorage: {
                std::vector<Var> vs;
                for (auto &n : d.names) vs.emplace_back(n);
                f.reorder_storage(vs);
                break;
            }
            case Directive::StoreNontemporal: f.store_nontemporal(); break;
            case Directive::LoadAhead: f.load_ahead(); break;
            case Directive::AlignStorage: f.align_storage(Var(d.names[0]), ex(0)); break;
            case Directive::AlignBounds: f.align_bounds(Var(d.names[0]), ex(0), ex(1)); break;
            case Directive::FoldStorage: f.fold_storage(Var(d.names[0]), ex(0)); break;
            case Directive::Specialize:
                specs.emplace(std::make_tuple(d.func, d.stage, d.spec), Stage(f.contents(), d.stage).specialize(ex(0)));
                break;
            case Directive::Split: stage().split(loop(d, 0), loop(d, 1), loop(d, 2), ex(0), d.tail); break;
            case Directive::Fuse: stage().fuse(loop(d, 0), loop(d, 1), loop(d, 2)); break;
            case Directive::Atomic: stage().atomic(d.flag); break;
            case Directive::Reorder: {
                std::vector<VarOrRVar> vs;
                for (size_t i = 0; i < d.names.size(); i++) vs.push_back(loop(d, i));
                stage().reorder(vs);
                break;
            }
            case Directive::Loop: {
                Stage st = stage();
                VarOrRVar v = loop(d, 0);
                switch (d.for_type) {
                case ForType::Serial: st.serial(v); break;
                case ForType::Parallel: st.parallel(v); break;
                case ForType::Vectorized: st.vectorize(v); break;
                case ForType::Unrolled: st.unroll(v); break;
                case ForType::GPUBlock: st.gpu_blocks(v); break;
                case ForType::GPUThread: st.gpu_threads(v); break;
                }
                break;
            }
            case Directive::Prefetch: {
                const std::string &src = d.names[0];
                auto fi = env.all_funcs.find(src);
                if (fi != env.all_funcs.end()) {
                    stage().prefetch(Func(fi->second), loop(d, 1), ex(0));
                    break;
                }
                bool done = false;
                for (auto &in : env.inputs) {
                    if (in.name != src) continue;
                    if (in.image) {
                        stage().prefetch(ImageParam(in.image), loop(d, 1), ex(0));
                    } else {
                        stage().prefetch(Buffer<void>(in.buffer), loop(d, 1), ex(0));
                    }
                    done = true;
                    break;
                }
                if (!done) user_error("weft: prefetch of \"" + src + "\", which this pipeline does not read");
                break;
            }
            case Directive::SingleThread: stage().gpu_single_thread(); break;
            case Directive::Mma: stage().gpu_mma(loop(d, 0), loop(d, 1), loop(d, 2)); break;
            case Directive::ComputeWith: {
                int64_t ps = 0;
                if (d.exprs.empty() || !is_const_int(d.exprs[0], &ps)) user_error("weft: compute_with needs the parent's stage");
                Func parent = func(d.names[0]);
                if (ps < 0 || ps > parent.num_update_definitions())
                    user_error("weft: compute_with: Func \"" + d.names[0] + "\" has no stage " + std::to_string(ps));
                std::vector<std::pair<VarOrRVar, LoopAlignStrategy>> align;
                for (size_t i = 2; i < d.names.size(); i++) {
                    int64_t a = 0;
                    is_const_int(d.exprs.at(i - 1), &a);
                    align.push_back({loop(d, i), (LoopAlignStrategy)a});
                }
                stage().compute_with(Stage(parent.contents(), (int)ps), loop(d, 1), align);
                break;
            }
            }
        }
    } catch (Error &e) {
        restore();
        if (failed) *failed = current ? (size_t)(current - calls.data()) : calls.size();
        std::string msg = e.what();
        if (msg.rfind("weft: ", 0) == 0) msg = msg.substr(6);
        throw Error("weft: " + std::string(who) + ": " + (current ? directive_name(*current) + ": " : std::string()) + msg);
    }
}
}  // namespace

}  // namespace internal
}  // namespace weft
