// Pipeline::auto_schedule: estimates read, the planner's candidates (src/autoschedule), the
// tuning database, and with a budget, candidates compiled and timed on this machine.
#include <algorithm>
#include <functional>
#include <map>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <random>
#include <sstream>
#include "autoschedule/Planner.h"
#include "autoschedule/TuningDatabase.h"
#include "ir/IRVisitor.h"
#include "ir/Simplify.h"
#include "ir/Stack.h"
#include "pipeline/ApplySchedule.h"
#include "pipeline/PipelineInternal.h"
#include "runtime/Runtime.h"
#include "weft_build_id.h"

namespace weft {
using namespace internal;

namespace internal {
const std::string &target_key(const Target &t);
std::atomic<int> g_autoschedule_pick{-1};
}

namespace {

Expr param_value(const ParamContents &p, const unsigned char *bytes) {
    Type t = p.type;
    if (t.is_float()) return make_const(t, float_from_bytes(t, bytes));
    if (t.is_bool()) return make_const(t, (int64_t)(bytes[0] != 0));
    int64_t v = 0;
    if (t.is_uint()) {
        uint64_t u = 0;
        std::memcpy(&u, bytes, t.bytes());
        v = (int64_t)u;
    } else {
        switch (t.bytes()) {
        case 1: v = (int8_t)bytes[0]; break;
        case 2: {
            int16_t s;
            std::memcpy(&s, bytes, 2);
            v = s;
            break;
        }
        case 4: {
            int32_t s;
            std::memcpy(&s, bytes, 4);
            v = s;
            break;
        }
        default: std::memcpy(&v, bytes, 8);
        }
    }
    return make_const(t, v);
}

/** Params (by their contents) replaced by their estimates. */
class ParamsToConstants : public IRMutator {
public:
    std::map<const ParamContents *, Expr> values;
    std::string missing;

protected:
    Expr visit(const Variable *op, const Expr &e) override {
        if (!op->param) return e;
        auto it = values.find(op->param.get());
        if (it != values.end()) return it->second;
        missing = op->param->name;
        return e;
    }
};

int64_t estimate_constant(ParamsToConstants &pc, const Expr &e, const std::string &what) {
    pc.missing.clear();
    Expr s = simplify(pc.mutate(e));
    int64_t v;
    if (!is_const_int(s, &v))
        user_error("weft: auto_schedule(): the estimate of " + what + " is not a constant" +
                   (pc.missing.empty() ? std::string() : " (Param \"" + pc.missing + "\" has no estimate: set_estimate())"));
    return v;
}

ShapeEstimates user_estimates(const Env &env) {
    ShapeEstimates est;
    ParamsToConstants pc;
    for (auto &p : env.params) {
        const ParamContents &pp = *p.param;
        if (pp.has_estimate) pc.values[&pp] = param_value(pp, pp.estimate.bytes);
        else if (pp.has_value) pc.values[&pp] = param_value(pp, pp.value.bytes);
        else continue;
        est.scalars[p.name] = pc.values[&pp];
    }
    for (auto &n : env.outputs) {
        const LFunc &f = env.funcs[env.index.at(n)];
        const auto &e = f.contents->estimates;
        ConstRegion r;
        for (size_t d = 0; d < f.args.size(); d++) {
            if (d >= e.size() || !e[d].first.defined())
                user_error("weft: auto_schedule(): output Func \"" + f.contents->name + "\" dimension " + std::to_string(d) +
                           " (" + f.args[d] + ") has no estimate: call set_estimate(" + f.args[d] +
                           ", min, extent) or set_estimates({{min, extent}, ...}) on it");
            std::string what = "Func \"" + f.contents->name + "\" dimension " + std::to_string(d);
            r.push_back({estimate_constant(pc, e[d].first, what), estimate_constant(pc, e[d].second, what)});
        }
        est.outputs[n] = r;
    }
    for (auto &in : env.inputs) {
        ConstRegion r;
        if (in.buffer) {
            for (int d = 0; d < in.dims; d++) r.push_back({in.buffer->dim[d].min, in.buffer->dim[d].extent});
        } else {
            const auto &e = in.image->estimates;
            for (int d = 0; d < in.dims; d++) {
                if (d >= (int)e.size() || !e[d].first.defined())
                    user_error("weft: auto_schedule(): input \"" + in.image->name + "\" dimension " + std::to_string(d) +
                               " has no estimate: call set_estimates({{min, extent}, ...}) on it");
                std::string what = "input \"" + in.image->name + "\" dimension " + std::to_string(d);
                r.push_back({estimate_constant(pc, e[d].first, what), estimate_constant(pc, e[d].second, what)});
            }
        }
        est.inputs[in.name] = r;
    }
    return est;
}

std::string estimates_text(const ShapeEstimates &est) {
    std::string s;
    auto region = [&](const ConstRegion &r) {
        for (auto &sp : r) s += "[" + std::to_string(sp.min) + "," + std::to_string(sp.extent) + "]";
        s += ";";
    };
    for (auto &[n, r] : est.outputs) region(r);
    for (auto &[n, r] : est.inputs) region(r);
    for (auto &[n, v] : est.scalars) s += serialize_expr(v) + ";";
    return s;
}

/** Buffers for the inputs and outputs at the estimated shapes, filled with deterministic
    pseudo-random data, and the call of the pipeline on them. */
struct Bench {
    Callable fn;
    std::vector<Buffer<void>> keep;  // inputs and outputs
    std::vector<CallArg> args;

    static Buffer<void> make(Type t, const ConstRegion &r, const std::string &name, std::mt19937 *rng) {
        std::vector<int> ext;
        std::vector<int> mins;
        for (auto &s : r) {
            ext.push_back((int)std::max<int64_t>(s.extent, 1));
            mins.push_back((int)s.min);
        }
        Buffer<void> b(t, ext, name);
        b.set_min(mins);
        if (rng) {
            size_t n = (size_t)b.contents()->num_elements();
            unsigned char *p = (unsigned char *)b.raw_data();
            for (size_t i = 0; i < n; i++) {
                unsigned char *q = p + i * t.bytes();
                if (t.is_float()) {
                    float_to_bytes(t, (double)((*rng)() % 10000) / 10000.0, q);
                } else {
                    uint64_t v = (*rng)() % (t.bits() == 8 ? 256 : 64);
                    std::memcpy(q, &v, t.bytes());
                }
            }
        }
        return b;
    }

    Bench(Pipeline &p, const Env &env, const PipelineInfo &info, const ShapeEstimates &est, const Target &t) {
        std::mt19937 rng(12345);
        std::vector<Argument> decl;
        for (auto &in : env.inputs) {
            if (!in.image) continue;
            decl.push_back(Argument(ImageParam(in.image)));
            Buffer<void> b = make(in.type, est.inputs.at(in.name), in.image->name, &rng);
            keep.push_back(b);
        }
        std::vector<std::pair<std::shared_ptr<ParamContents>, Expr>> params;
        for (auto &pr : env.params) {
            auto it = est.scalars.find(pr.name);
            if (it == est.scalars.end())
                user_error("weft: auto_schedule(): Param \"" + pr.param->name +
                           "\" has no estimate and no value: set_estimate() it before a search that measures");
            params.push_back({pr.param, it->second});
        }
        // Callable arguments: ImageParams then Params, in the order declared here.
        std::vector<Argument> all = decl;
        for (auto &pp : params) all.push_back(Argument(pp.first));
        fn = p.compile_to_callable(all, t);
        size_t nimg = keep.size();
        for (size_t i = 0; i < nimg; i++) {
            CallArg a;
            a.is_buffer = true;
            a.buf = keep[i].contents().get();
            args.push_back(a);
        }
        for (auto &pp : params) {
            CallArg a;
            a.type = pp.first->type;
            if (a.type.is_float()) {
                double d;
                const_float(pp.second, &d);
                float_to_bytes(a.type, d, a.bytes);
            } else {
                int64_t v = 0;
                is_const_int(pp.second, &v);
                std::memcpy(a.bytes, &v, a.type.bytes());
            }
            args.push_back(a);
        }
        for (auto &n : env.outputs) {
            const LFunc &f = env.funcs[env.index.at(n)];
            Buffer<void> b = make(f.type, info.func(n).region, f.contents->name, nullptr);
            keep.push_back(b);
            CallArg a;
            a.is_buffer = true;
            a.buf = b.contents().get();
            args.push_back(a);
        }
    }
    static bool const_float(const Expr &e, double *d) {
        if (auto f = e.as<FloatImm>()) {
            *d = f->value;
            return true;
        }
        *d = 0;
        return false;
    }
    double run_ms() {
        auto t0 = std::chrono::steady_clock::now();
        fn.call(args.data(), args.size());
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

namespace internal {

bool has_no_directives(const Env &env) {
    for (auto &v : env.given.funcs) {
        if (!(v.schedule == FuncSchedule())) return false;
        for (size_t k = 0; k < v.stages.size(); k++) {
            DefinitionSchedule d;
            if (k < v.initial_loops.size()) d.schedule.dims = v.initial_loops[k];
            if (!(v.stages[k] == d)) return false;
        }
    }
    for (auto &[n, f] : env.all_funcs)
        if (!f->wrappers.empty()) return false;
    for (auto &in : env.inputs)
        if ((in.image && !in.image->wrappers.empty()) || (in.buffer && !in.buffer->wrappers.empty())) return false;
    return true;
}

bool first_call_autoschedule_enabled() {
    const char *e = std::getenv("WEFT_AUTOSCHEDULE");
    return !(e && std::string(e) == "0");
}

std::vector<PipelineSchedule> first_call_schedules(const std::vector<std::shared_ptr<FunctionContents>> &outputs,
                                                   const std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> &shapes,
                                                   const std::map<std::string, const void *> &param_values,
                                                   const Target &t) {
    std::vector<PipelineSchedule> out;
    try {
        Env env = on_large_stack<Env>([&] { return build_env(outputs, true); });
        ShapeEstimates est;
        for (auto &[n, sh] : shapes) {
            ConstRegion r;
            for (auto &[mn, ex] : sh) r.push_back({mn, ex});
            if (env.index.count(n)) est.outputs[n] = r;
            else est.inputs[n] = r;
        }
        for (auto &p : env.params) {
            auto it = param_values.find(p.name);
            if (it != param_values.end()) est.scalars[p.name] = param_value(*p.param, (const unsigned char *)it->second);
        }
        PipelineInfo info = analyze_pipeline(env, est);
        MachineParams mp = machine_params(t, std::max(1, (int)weft_rt_num_threads()));
        for (auto &c : plan_schedules(info, t, mp, 3)) {
            out.push_back(schedule_with_directives(env.given, c.calls));
            if (debug_enabled())
                std::cerr << "weft: scheduled automatically at the first call (predicted " << c.predicted_ms << " ms):\n"
                          << c.summary;
        }
    } catch (Error &e) {
        if (debug_enabled()) std::cerr << "weft: not scheduled automatically: " << e.what() << "\n";
        out.clear();
    }
    return out;
}

}  // namespace internal

AutoScheduleResult Pipeline::auto_schedule(const Target &t, const AutoScheduleOptions &o) {
    if (!c_) throw Error("weft: auto_schedule() on an undefined (default-constructed) Pipeline");
    if (!(o.budget_seconds >= 0) || std::isinf(o.budget_seconds))
        user_error("weft: auto_schedule(): budget_seconds is " + std::to_string(o.budget_seconds) +
                   "; it must be 0 (the cost model alone) or a positive number of seconds");
    if (o.threads < 0) user_error("weft: auto_schedule(): threads is " + std::to_string(o.threads) + "; 0 means the pool's size");
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::shared_ptr<FunctionContents>> outs;
    for (auto &f : outputs()) outs.push_back(f.contents());
    drop_auto_copies(outs);  // (copies an earlier auto_schedule made: planned again from the algorithm)
    Env env = on_large_stack<Env>([&] { return build_env(outs, true); });
    ShapeEstimates est = user_estimates(env);
    PipelineInfo info = analyze_pipeline(env, est);
    int threads = o.threads > 0 ? o.threads : std::max(1, (int)weft_rt_num_threads());
    MachineParams mp = machine_params(t, threads);

    std::string db = tuning_database_path(o.database);
    std::string key = tuning_key_hash(env.canonical + "|" + estimates_text(est) + "|" + target_key(t) + "|threads " +
                                      std::to_string(threads) + "|weft " + WEFT_VERSION + " " + WEFT_BUILD_ID);
    AutoScheduleResult res;
    TuningRecord rec;
    bool hit = tuning_lookup(db, key, &rec);
    // With a budget: as many candidates as it might measure (a few per second).
    int want = hit ? rec.planned : o.budget_seconds > 0 ? (int)std::min(200.0, 8 + 4 * o.budget_seconds) : 4;
    std::vector<CopyOpportunity> copies;
    std::vector<PlanCandidate> cands =
        plan_schedules(info, t, mp, want, PlanHints(), t.arch() == Target::Arch::CUDA ? nullptr : &copies);
    bool dbg = debug_enabled();
    // Copies (Halide's clone trick, see CopyOpportunity): each costed with the copy made on the
    // Funcs, its plan put first where predicted no slower (and offered to a measured
    // search either way); the copy is taken away again, and made by the candidate's first call
    // when one that has it is applied.
    std::function<void()> restore_wrappers = wrappers_restorer(outs);
    std::string copy_note;
    // (One copy, the first producer's: a second trial would be costed without the first.)
    for (size_t i = 0; i < copies.size() && i < 1 && !cands.empty(); i++) {
        const PlanCandidate safe = cands.back();  // (every Func at root: kept last)
        const CopyOpportunity &op = copies[i];
        try {
            std::vector<Func> cons;
            for (auto &c : op.consumers) cons.push_back(Func(env.all_funcs.at(c)));
            Func w = Func(env.all_funcs.at(op.func)).in(cons);
            Env env2 = on_large_stack<Env>([&] { return build_env(outs, true); });
            std::string wname;
            for (auto &[n, f] : env2.all_funcs)
                if (f == w.contents()) wname = n;
            PipelineInfo info2 = analyze_pipeline(env2, est);
            PlanHints h;
            h.inline_funcs = {op.func};
            h.copies = {wname};
            std::vector<PlanCandidate> with = plan_schedules(info2, t, mp, want, h);
            Directive d;
            d.op = Directive::Wrap;
            d.func = op.func;
            d.names = {wname};
            d.names.insert(d.names.end(), op.consumers.begin(), op.consumers.end());
            for (auto &c : with) c.calls.insert(c.calls.begin(), d);
            if (!with.empty()) {
                bool better = with[0].predicted_ms <= cands[0].predicted_ms;
                std::ostringstream line;
                line << "copy " << wname << " of " << op.func << " for its downsampling readers: predicted "
                     << with[0].predicted_ms << " ms against " << cands[0].predicted_ms << " ms"
                     << (better ? ": put first\n" : ": not first\n");
                copy_note += line.str();
                for (auto &c : with) c.summary = line.str() + c.summary;
                if (better) with.insert(with.end(), cands.begin(), cands.end()), cands.swap(with);
                else if (o.budget_seconds > 0) cands.insert(cands.end(), with.begin(), with.end());
                if ((int)cands.size() > want + 1) {
                    cands.resize(want);
                    cands.push_back(safe);
                }
            }
        } catch (Error &e) {
            if (dbg) std::cerr << "weft: auto_schedule(): a copy of " << op.func << " was not costed: " << e.what() << "\n";
        }
        restore_wrappers();
    }
    if (dbg && !copy_note.empty()) std::cerr << "weft: auto_schedule(): " << copy_note;

    std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> shapes;
    for (auto &[n, r] : est.outputs)
        for (auto &sp : r) shapes[n].push_back({sp.min, sp.extent});
    for (auto &[n, r] : est.inputs)
        for (auto &sp : r) shapes[n].push_back({sp.min, sp.extent});
    // A candidate is applied, then lowered for the estimated shapes: lowering checks what
    // the directives alone cannot (levels, bounds), so that the schedule kept always compiles.
    auto apply = [&](const PlanCandidate &c) {
        restore_wrappers();  // (a copy an earlier candidate made)
        apply_directives_to(outs, c.calls, "auto_schedule()");
        check_lowers(outs, shapes, t);
    };
    int chosen = -1;
    if (hit && rec.candidate < (int)cands.size()) {
        try {
            apply(cands[rec.candidate]);
            chosen = rec.candidate;
            res.from_database = true;
            res.measured_ms = rec.measured_ms;
        } catch (Error &) {
            chosen = -1;  // (a record from a planner that emitted something else: search again)
        }
    }
    if (chosen < 0 && o.budget_seconds > 0) {
        Bench bench(*this, env, info, est, t);
        double best = NAN;
        double longest_compile = 0;
        std::vector<std::pair<double, int>> measured;  // (ms, candidate)
        // The sweep takes four fifths of the budget; the rest times the finalists again.
        const double sweep_seconds = 0.8 * o.budget_seconds;
        // The order: the model's first choice, then by predictions corrected by what was
        // measured so far (next_candidate_to_measure): a family of candidates that measures
        // slower than predicted gives way to the others.
        std::vector<double> predicted(cands.size()), measured_ms(cands.size(), NAN);
        std::vector<std::string> family(cands.size());
        std::vector<bool> tried(cands.size(), false);
        for (size_t k = 0; k < cands.size(); k++) {
            predicted[k] = cands[k].predicted_ms;
            family[k] = plan_family(cands[k].calls);
        }
        for (int step = 0;; step++) {
            int picked = next_candidate_to_measure(predicted, family, measured_ms, tried);
            if (picked < 0) break;
            const size_t i = (size_t)picked;
            double elapsed = seconds_since(t0);
            if (step > 0 && elapsed + longest_compile > sweep_seconds) break;
            tried[i] = true;
            auto c0 = std::chrono::steady_clock::now();
            double ms = NAN;
            try {
                apply(cands[i]);
                bench.run_ms();  // compiles
                longest_compile = std::max(longest_compile, seconds_since(c0));
                // Best of a few runs, at most about a tenth of the budget.
                ms = bench.run_ms();
                for (int r = 0; r < 4 && seconds_since(c0) < o.budget_seconds / 10; r++) ms = std::min(ms, bench.run_ms());
            } catch (Error &e) {
                if (dbg) std::cerr << "weft: auto_schedule(): candidate " << i << " failed: " << e.what() << "\n";
                continue;
            }
            res.candidates_measured++;
            measured.push_back({ms, (int)i});
            measured_ms[i] = ms;
            if (dbg)
                std::cerr << "weft: auto_schedule(): candidate " << i << ": predicted " << cands[i].predicted_ms
                          << " ms, measured " << ms << " ms\n";
            if (std::isnan(best) || ms < best) {
                best = ms;
                chosen = (int)i;
            }
            if (o.progress) {
                AutoScheduleProgress pr;
                pr.candidates_measured = res.candidates_measured;
                pr.best_ms = best;
                pr.elapsed_seconds = seconds_since(t0);
                pr.budget_fraction = std::min(1.0, pr.elapsed_seconds / o.budget_seconds);
                o.progress(pr);
            }
        }
        // Finalists: the three fastest and the model's first choice, timed again in turns
        // (one noisy reading, or a slow moment of a shared machine, should not decide): three
        // rounds, and more (up to 9) while the budget the sweep left allows; the model's choice
        // is kept unless another is faster by more than the noise seen in its own readings (the
        // sweep's and each round's: the median's distance from the fastest), and at least 3%.
        // On a shared machine one schedule's readings were 5-20% apart (layer norm, 3x3 blur):
        // a fixed 3% let a challenger win on noise (the 10 s search's layer norm and softmax
        // ran slower than the model's own first choice), while the 3x3 blur's sliding windows,
        // 17-22% faster, still win. The spread of all readings (max / min) let one slow
        // reading decide: camera_pipe's first choice read 99% apart once in a 60 s search, and
        // a finalist 7% faster lost.
        std::sort(measured.begin(), measured.end());
        std::vector<int> finalists;
        for (size_t k = 0; k < measured.size() && finalists.size() < 3; k++) finalists.push_back(measured[k].second);
        bool first_measured = std::any_of(measured.begin(), measured.end(), [](const std::pair<double, int> &m) { return m.second == 0; });
        if (first_measured && std::find(finalists.begin(), finalists.end(), 0) == finalists.end()) finalists.push_back(0);
        if (finalists.size() > 1) {
            std::map<int, double> again;
            std::vector<double> first_readings;  // the model's first choice: each reading of it
            if (first_measured) first_readings.push_back(measured_ms[0]);
            double round_seconds = 0;
            for (int round = 0; round < 9; round++) {
                if (round >= 3 && seconds_since(t0) + round_seconds > o.budget_seconds) break;
                auto r0 = std::chrono::steady_clock::now();
                for (int i : finalists) {
                    if (seconds_since(t0) + longest_compile > o.budget_seconds) break;
                    try {
                        apply(cands[i]);
                        double ms = bench.run_ms();
                        for (int r = 0; r < 2; r++) ms = std::min(ms, bench.run_ms());
                        again[i] = again.count(i) ? std::min(again[i], ms) : ms;
                        if (i == 0) first_readings.push_back(ms);
                    } catch (Error &) {
                        again.erase(i);
                    }
                }
                round_seconds = std::max(round_seconds, seconds_since(r0));
            }
            if (again.size() == finalists.size()) {
                double noise = 0;
                int kept = choose_finalist(again, first_readings, &noise);
                if (kept >= 0) chosen = kept, best = again.at(kept);
                if (dbg) {
                    for (auto &[i, ms] : again)
                        std::cerr << "weft: auto_schedule(): finalist " << i << ": measured again " << ms << " ms\n";
                    std::cerr << "weft: auto_schedule(): the model's first choice read " << first_readings.size()
                              << " times, " << 100 * noise << "% apart: kept unless another is that much faster\n";
                }
            }
        }
        res.measured_ms = best;
        if (chosen >= 0) apply(cands[chosen]);
    }
    if (chosen < 0) {
        int pick = g_autoschedule_pick.load();
        if (pick >= 0 && !cands.empty()) {
            // (tests) the candidate of that rank first, then the others in order
            std::rotate(cands.begin(), cands.begin() + pick % cands.size(), cands.end());
        }
        for (size_t i = 0; i < cands.size() && chosen < 0; i++) {
            try {
                apply(cands[i]);
                chosen = (int)i;
            } catch (Error &e) {
                if (dbg)
                    std::cerr << "weft: auto_schedule(): candidate " << i << " refused: " << e.what() << "\n"
                              << cands[i].summary << "// its schedule:\n" << get_schedule().cpp_source();
            }
        }
        if (chosen < 0) {
            restore_wrappers();
            apply_directives_to(outs, {}, "auto_schedule()");  // the default schedule
            res.schedule_source = get_schedule().cpp_source();
            return res;
        }
    }
    res.predicted_ms = cands[chosen].predicted_ms;
    // The copies it made are marked as its own (see drop_auto_copies).
    if (std::any_of(cands[chosen].calls.begin(), cands[chosen].calls.end(),
                    [](const Directive &d) { return d.op == Directive::Wrap; })) {
        Env now = on_large_stack<Env>([&] { return build_env(outs, true); });
        for (auto &d : cands[chosen].calls)
            if (d.op == Directive::Wrap) {
                auto it = now.all_funcs.find(d.names.at(0));
                if (it != now.all_funcs.end()) it->second->auto_copy = true;
            }
    }
    if (!res.from_database && !db.empty()) {
        TuningRecord r;
        r.candidate = chosen;
        r.planned = want;
        r.measured_ms = res.measured_ms;
        r.predicted_ms = res.predicted_ms;
        tuning_store(db, key, r);
    }
    res.schedule_source = get_schedule().cpp_source();
    note_auto_scheduled(on_large_stack<Env>([&] { return build_env(outs, false); }).canonical);
    if (dbg)
        std::cerr << "weft: auto_schedule(): " << (res.from_database ? "from the tuning database, " : "") << "candidate "
                  << chosen << " of " << cands.size() << ", predicted " << res.predicted_ms << " ms\n"
                  << cands[chosen].summary << res.schedule_source << "\n";
    return res;
}

}  // namespace weft
