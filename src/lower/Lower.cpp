#include "lower/HoistStorage.h"
#include "lower/Lower.h"
#include <chrono>
#include <algorithm>
#include <sstream>
#include "ir/IRVisitor.h"
#include "ir/Simplify.h"
#include "ir/Warnings.h"
#include "lower/BoxesTouched.h"
#include "lower/gpu/InjectGPU.h"
#include "lower/gpu/Mma.h"
#include "lower/LoadAhead.h"
#include "lower/LoopNest.h"
#include "lower/NarrowArithmetic.h"
#include "lower/ScheduleFunctions.h"
#include "lower/AlignLoads.h"
#include "lower/PartitionLoops.h"
#include "lower/PlanMemory.h"
#include "lower/PromoteAccumulators.h"
#include "lower/FuseParallel.h"
#include "lower/StreamStores.h"
#include "lower/StorageFlattening.h"
#include "lower/Tracing.h"
#include "lower/UnrollLoops.h"
#include "lower/VectorizeLoops.h"

namespace weft {
namespace internal {

static Expr field(const std::string &name, const char *f, int d, const std::map<std::string, Expr> &consts) {
    std::string n = buffer_field(name, f, d);
    auto it = consts.find(n);
    return it != consts.end() ? it->second : Variable::make(Int(32), n);
}

/** Reading outside an input fails with a clear message before anything is written; so does
    reading an output (a Func that is an output and also used by another Func, or an update
    of it reading elsewhere) outside its buffer, which holds all of it there is. */
static std::vector<Stmt> input_checks(const Stmt &s, const Env &env, const std::map<std::string, Expr> &consts) {
    std::vector<Stmt> checks;
    auto check = [&](const std::string &name, const std::string &what, const std::string &shown) {
        Box req = box_required(s, name);
        for (size_t d = 0; d < req.size(); d++) {
            if (!req[d].is_bounded())
                user_error("weft: " + what + " \"" + shown + "\" dimension " + std::to_string(d) +
                           ": cannot bound the region the pipeline reads (" +
                           (req[d].min.defined() ? to_string(req[d].min) : std::string("-inf")) + " to " +
                           (req[d].max.defined() ? to_string(req[d].max) : std::string("+inf")) +
                           "); clamp the coordinates, e.g. with BoundaryConditions");
            Expr mn = field(name, "min", (int)d, consts), ex = field(name, "extent", (int)d, consts);
            Expr mx = simplify(mn + ex - 1);
            Expr lo = simplify(req[d].min), hi = simplify(req[d].max);
            checks.push_back(AssertStmt::make(simplify(lo >= mn && hi <= mx),
                what + " \"" + shown + "\" dimension " + std::to_string(d) + ": pipeline reads [%, %], buffer holds [%, %]",
                {lo, hi, mn, mx}));
        }
    };
    for (auto &in : env.inputs) check(in.name, "input", in.name);
    for (auto &o : env.outputs) check(o, "output", env.funcs[env.index.at(o)].contents->name);
    return checks;
}

/** Buffer fields used in definitions (boundary conditions, RDom over a buffer) become constants. */
static void substitute_consts(Env &env, const std::map<std::string, Expr> &consts) {
    if (consts.empty()) return;
    for (auto &f : env.funcs)
        for (auto &st : f.stages) {
            for (auto &a : st.args) a = substitute(consts, a);
            st.value = substitute(consts, st.value);
            if (st.predicate.defined()) st.predicate = substitute(consts, st.predicate);
            for (auto &rv : st.rvars) {
                rv.min = substitute(consts, rv.min);
                rv.extent = substitute(consts, rv.extent);
            }
            for (auto &sp : st.specs) sp.first = substitute(consts, sp.first);
        }
}

static std::map<std::string, Box> output_boxes_of(Env &env, const std::map<std::string, Expr> &consts) {
    std::map<std::string, Box> output_boxes;
    for (auto &o : env.outputs) {
        LFunc &f = env.func(o);
        Box b;
        for (size_t d = 0; d < f.args.size(); d++) {
            Expr mn = field(o, "min", (int)d, consts), ex = field(o, "extent", (int)d, consts);
            b.push_back(Interval(mn, simplify(mn + ex - 1)));
        }
        output_boxes[o] = b;
    }
    return output_boxes;
}

/** The outputs of deferred calls in a chain (env.seams) hold what their calls computed,
    [0, extent) per dimension: their consumers reading past it is an error before anything runs,
    as reading past an input buffer is when the parts run one by one. The region read is that
    of the unscheduled pipeline (every Func at root), so what the schedule inlines or fuses
    does not hide it. */
static std::vector<Stmt> seam_checks(const Env &env, const std::map<std::string, Expr> &consts) {
    std::vector<std::shared_ptr<FunctionContents>> outs;
    for (auto &o : env.outputs) outs.push_back(env.funcs[env.index.at(o)].contents);
    Env ref = build_env(outs, true);
    substitute_consts(ref, consts);
    std::vector<Stmt> unused;
    Stmt s = schedule_functions(ref, output_boxes_of(ref, consts), unused, nullptr);
    std::vector<Stmt> checks;
    for (auto &[name, seam] : env.seams) {
        Box req = box_required(s, name);
        for (size_t d = 0; d < req.size() && d < seam->sizes.size(); d++) {
            std::string what = seam->consumers + " reads the output of " + seam->producer + " in dimension " + std::to_string(d);
            if (!req[d].is_bounded())
                user_error("weft: " + what + " over a region that cannot be bounded; clamp the coordinates, e.g. with "
                           "BoundaryConditions");
            Expr lo = simplify(substitute(consts, req[d].min)), hi = simplify(substitute(consts, req[d].max));
            Expr mx = make_const(Int(32), (int64_t)seam->sizes[d] - 1);
            checks.push_back(AssertStmt::make(simplify(lo >= 0 && hi <= mx),
                                              what + " at [%, %], but that call computes [%, %]",
                                              {lo, hi, make_const(Int(32), (int64_t)0), mx}));
        }
    }
    return checks;
}

/** promise_clamped(v, lo, hi) served bounds inference; the value itself is v. */
static Stmt strip_promises(const Stmt &s) {
    class Strip : public IRMutator {
    protected:
        Expr visit(const Call *op, const Expr &e) override {
            if (op->is_intrinsic("promise_clamped")) return mutate(op->args[0]);
            return IRMutator::visit(op, e);
        }
    };
    return Strip().mutate(s);
}

static void log_pass(std::string *log, const char *name, const Stmt &s) {
    if (!log) return;
    std::ostringstream os;
    os << "// ---- after " << name << " ----\n" << s;
    *log += os.str();
}

LoweredFunc lower(Env env, const std::map<std::string, Expr> &consts, const std::string &fn_name,
                  const LowerOptions &options) {
    std::string *log = options.log;
    const bool cuda = options.cuda(), host_vectors = options.host_vectors;
    WarningsScope warnings_scope(options.warnings);  // (lowering may nest: an automatic schedule's check)
    RememberScopeEnds remember_scope_ends;  // (the loops' ranges, asked about many times)
    if (options.warnings) {
        // Directives on a Func that is inlined: it has no loops of its own.
        for (const auto &g : env.given.funcs) {
            if (env.index.count(g.func) || g.stages.empty()) continue;
            const StageSchedule &st = g.stages[0].schedule;
            bool loops = !st.splits.empty();
            for (auto &d : st.dims) loops |= d.for_type != ForType::Serial;
            auto fit = env.all_funcs.find(g.func);
            std::string user = fit != env.all_funcs.end() && fit->second ? fit->second->name : g.func;
            if (loops)
                compile_warning("Func \"" + user + "\" is inlined, so its loop directives (split, vectorize, parallel, "
                                 "...) have no effect: compute_root() or compute_at() it to give it loops");
            if (g.schedule.memory != MemoryType::Auto)
                compile_warning("Func \"" + user + "\" is inlined, so store_in() has no effect: it has no storage");
            if (g.schedule.hoist.kind != LoopLevelSpec::Inline)
                compile_warning("Func \"" + user + "\" is inlined, so hoist_storage() has no effect: it has no storage");
        }
    }
    // Each pass's time, where asked for: the time since the last mark, under the pass's name.
    auto mark_t0 = std::chrono::steady_clock::now();
    auto mark = [&](const char *name) {
        if (!options.pass_times) return;
        auto now = std::chrono::steady_clock::now();
        options.pass_times->push_back({name, std::chrono::duration<double, std::milli>(now - mark_t0).count()});
        mark_t0 = now;
    };
    substitute_consts(env, consts);
    std::map<std::string, Box> output_boxes = output_boxes_of(env, consts);

    std::vector<Stmt> checks;
    mark("bounds of the outputs");
    Stmt s = schedule_functions(env, output_boxes, checks, options.profile_id);
    s = inject_tracing(s, env);
    mark("schedule_functions");
    log_pass(log, "schedule_functions", s);

    // The seams first: when a consumer reads past its producer's output, that is what the
    // user needs to hear, not the out-of-range read of the chain's input it leads to.
    std::vector<Stmt> in_checks;
    if (!env.seams.empty()) in_checks = seam_checks(env, consts);
    auto ic = input_checks(s, env, consts);
    in_checks.insert(in_checks.end(), ic.begin(), ic.end());
    checks.insert(checks.begin(), in_checks.begin(), in_checks.end());
    checks.push_back(s);
    s = strip_promises(Block::make(checks));
    mark("input checks");

    s = storage_flattening(s, env, cuda);
    log_pass(log, "storage_flattening", s);
    s = lower_narrow_arithmetic(s, cuda);
    mark("storage_flattening");

    if (!consts.empty()) s = substitute(consts, s);
    s = hoist_storage(s, env);  // (before simplify, which removes loops of one iteration)
    if (cuda) s = protect_gpu_loops(s);
    mark("hoist_storage");
    s = simplify(s);
    mark("simplify");
    if (log || options.loop_nest) {
        std::string nest = loop_nest_text(s);
        if (options.loop_nest) *options.loop_nest = nest;
        if (log) log->insert(0, "// ---- loop nest ----\n" + nest);
    }
    log_pass(log, "simplify", s);

    if (!cuda) {
        // (before unrolling: it finds a reduction's loop around a block's loops)
        std::set<std::string> out_buffers;
        for (auto &o : env.outputs) {
            const LFunc &f = env.func(o);
            for (size_t i = 0; i < std::max<size_t>(1, f.types.size()); i++) out_buffers.insert(tuple_buffer_name(o, (int)i));
        }
        // (and the pipeline's own buffers on the heap: a root reduction blocked in place)
        class Heap : public IRVisitor {
        public:
            std::set<std::string> *names;

        protected:
            void visit(const Allocate *op) override {
                if (op->memory_type == MemoryType::Heap) names->insert(op->name);
                IRVisitor::visit(op);
            }
        } heap;
        heap.names = &out_buffers;
        heap.include(s);
        Stmt p = promote_accumulators(s, out_buffers);
        if (!p.same_as(s)) log_pass(log, "promote_accumulators", p);
        s = p;
        mark("promote_accumulators");
    }

    if (cuda) {
        s = lower_gpu_mma(s, env);  // (before unrolling: it works on the stages' innermost loops)
        log_pass(log, "lower_gpu_mma", s);
    }

    std::set<std::string> ahead;  // load_ahead finds these by name after unrolling
    for (auto &f : env.funcs)
        if (f.sched.load_ahead) ahead.insert(f.name);
    s = unroll_loops(s, cuda, ahead);
    mark("unroll_loops");
    s = vectorize_loops(s, cuda, host_vectors);
    mark("vectorize_loops");
    s = simplify(s);
    mark("simplify");
    log_pass(log, "unroll, vectorize, simplify", s);

    s = partition_loops(s);
    mark("partition_loops");
    log_pass(log, "partition_loops", s);

    s = align_loads(s);
    mark("align_loads");
    log_pass(log, "align_loads", s);

    if (std::any_of(env.funcs.begin(), env.funcs.end(), [](const LFunc &f) { return f.sched.load_ahead; })) {
        s = load_ahead(s, env);
        mark("load_ahead");
        log_pass(log, "load_ahead", s);
    }

    if (!cuda) {
        s = plan_memory(s, log);
        mark("plan_memory");
        log_pass(log, "plan_memory", s);
        s = fuse_parallel_nests(s);
        mark("fuse_parallel_nests");
        log_pass(log, "fuse_parallel_nests", s);
        Stmt streamed = stream_large_stores(s);
        if (!streamed.same_as(s)) log_pass(log, "stream_large_stores", streamed);
        s = streamed;
        mark("stream_large_stores");
    }

    if (cuda) {
        s = inject_gpu(s, env);
        s = lower_narrow_arithmetic(s, cuda);  // (tree reductions combine values of the Func's type)
        mark("inject_gpu");
        log_pass(log, "inject_gpu", s);
    }

    LoweredFunc lf;
    lf.name = fn_name;
    lf.body = s;
    for (auto &in : env.inputs) lf.args.push_back({in.name, LoweredArg::Buffer, in.type, in.dims});
    for (auto &p : env.params) lf.args.push_back({p.name, LoweredArg::Scalar, p.param->type, 0});
    for (auto &o : env.outputs) {
        LFunc &f = env.func(o);
        for (size_t i = 0; i < std::max<size_t>(1, f.types.size()); i++)
            lf.args.push_back({tuple_buffer_name(o, (int)i), LoweredArg::Buffer, f.types.empty() ? f.type : f.types[i],
                               (int)f.args.size()});
    }
    return lf;
}

}  // namespace internal
}  // namespace weft
