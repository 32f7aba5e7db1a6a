// Builds each Func's loop nest from its schedule and places it at its compute_at / store_at
// level, with the region to compute found by bounds inference.
#include "lower/ScheduleFunctions.h"
#include "lower/RealizationOrder.h"
#include <algorithm>
#include <functional>
#include <numeric>
#include <optional>
#include <set>
#include <iostream>
#include "ir/IRVisitor.h"
#include "ir/Interval.h"
#include "ir/Simplify.h"
#include "lower/BoxesTouched.h"
#include "lower/ComputeWith.h"

namespace weft {
namespace internal {

bool is_loop_of(const std::string &loop, const std::string &func, const std::string &var) {
    std::string p = func + ".s";
    if (loop.compare(0, p.size(), p) != 0) return false;
    size_t i = p.size();
    while (i < loop.size() && isdigit((unsigned char)loop[i])) i++;
    return i > p.size() && loop.substr(i) == "." + var;
}
namespace {


std::string describe(const Interval &i) { return "[" + to_string(i.min) + ", " + to_string(i.max) + "]"; }


struct Builder {
    Env &env;
    std::vector<Stmt> &top_asserts;
    const std::function<int(const std::string &)> &profile_id;
    bool uses_compute_with = false;  // (its loops are merged afterwards: their extents are left as written)
    std::set<std::string> fused_groups;  // compute_with groups fused already (see fuse_group_computing)
    std::set<std::string> fused_members;  // the Funcs with a stage in a compute_with group

    /** Are sp's inner and outer both loops of the stage, the inner serial and inside the outer
        (so that the inner loop's extent may depend on the outer loop's variable)? */
    static bool serial_inside_outer(const StageSchedule &sched, const Split &sp) {
        // (Neither split or fused again: a later split may reuse the name for its own outer.)
        bool after = false;
        for (auto &s : sched.splits) {
            if (&s == &sp) {
                after = true;
                continue;
            }
            if (!after) continue;
            for (const std::string &v : {sp.inner, sp.outer})
                if (s.kind == Split::SplitVar ? s.old_var == v : (s.inner == v || s.outer == v)) return false;
        }
        int in = -1, out = -1;
        for (size_t i = 0; i < sched.dims.size(); i++) {
            if (sched.dims[i].var == sp.inner) in = (int)i;
            if (sched.dims[i].var == sp.outer) out = (int)i;
        }
        return in >= 0 && out > in && sched.dims[in].for_type == ForType::Serial;
    }

    TailStrategy resolve_tail(const LFunc &f, int k, const StageSchedule &sched, const Split &sp, bool is_rvar,
                              const Expr &oext, const Expr &F) {
        TailStrategy t = sp.tail;
        if (t == TailStrategy::Auto) {
            if (can_prove(simplify(oext % F) == 0)) return TailStrategy::RoundUp;  // exact
            // GPU threads filling a Func kept in their registers: a tail shifted inwards would
            // have two threads compute the same elements, and then no thread owns its own.
            bool per_thread = f.contents->schedule.memory == MemoryType::Register &&
                              std::any_of(sched.dims.begin(), sched.dims.end(),
                                          [](const Dim &d) { return d.for_type == ForType::GPUThread; });
            if (!is_rvar && !per_thread && can_prove(simplify(oext >= F)) &&
                (k == 0 || recomputing_is_harmless(f, k, sched, sp)))
                return TailStrategy::ShiftInwards;
            return TailStrategy::GuardWithIf;
        }
        if (t == TailStrategy::ShiftInwards && (k > 0 || is_rvar))
            user_error("weft: " + stage_name(*f.contents, k) + ".split(" + sp.old_var +
                       ", ShiftInwards): an update or reduction loop would compute some points twice; use GuardWithIf");
        if (t == TailStrategy::RoundUp && is_rvar && !can_prove(simplify(oext % F) == 0))
            user_error("weft: " + stage_name(*f.contents, k) + ".split(" + sp.old_var +
                       ", RoundUp): the reduction domain's extent is not a multiple of the factor; use GuardWithIf");
        return t;
    }

    /** Whether an update may compute some points of its pure Var sp.old_var twice (a tail
        shifted inwards) with the same result: every read of the Func in its value is at that
        Var itself in its dimension, and, in some dimension, at a point an earlier iteration of
        the stage's outermost reduction loop wrote (`f(x, r) = g(f(x, r - 1), f(x + 0, r - 1))`
        with r the outer reduction loop: a scan, pyramid slices). So a point is never read where
        it is written, nor before it is written; a second computation reads what the first read.
        Along that dimension the outer loop's variable alone moves the point, one step per
        iteration, so each coordinate there is written in one iteration only. Not where the
        Var's loops are parallel (two threads would write what a third reads), nor where a
        reduction loop of the stage is split or fused (its order is then not the dimension's). */
    bool recomputing_is_harmless(const LFunc &f, int k, const StageSchedule &sched, const Split &sp) {
        const LStage &st = f.stages[k];
        int p = -1;
        for (size_t i = 0; i < st.args.size(); i++) {
            auto *v = st.args[i].as<Variable>();
            if (v && v->name == sp.old_var) p = (int)i;
        }
        if (p < 0 || st.rvars.empty()) return false;
        std::set<std::string> rvar_names;
        for (auto &rv : st.rvars) rvar_names.insert(rv.var);
        for (auto &other : sched.splits)
            if (rvar_names.count(other.old_var) || rvar_names.count(other.inner) || rvar_names.count(other.outer)) return false;
        std::string outer_r;
        for (auto &d : sched.dims) {
            if (d.is_rvar) outer_r = d.var;
            if ((d.var == sp.outer || d.var == sp.inner) && d.for_type != ForType::Serial && d.for_type != ForType::Vectorized &&
                d.for_type != ForType::Unrolled)
                return false;
        }
        if (!rvar_names.count(outer_r)) return false;
        class SelfCalls : public IRVisitor {
        public:
            std::string name;
            std::vector<const Call *> calls;

        protected:
            void visit(const Call *op) override {
                if (op->call_type != Call::Intrinsic && op->name == name) calls.push_back(op);
                IRVisitor::visit(op);
            }
        } sc;
        sc.name = f.name;
        sc.include(st.value);
        for (auto &a : st.args) sc.include(a);
        if (st.predicate.defined()) sc.include(st.predicate);
        if (sc.calls.empty()) return false;
        Expr r = Variable::make(Int(32), outer_r);
        for (const Call *c : sc.calls) {
            if (c->args.size() != st.args.size() || !equal(c->args[p], st.args[p])) return false;
            bool earlier = false;
            for (size_t d = 0; d < st.args.size() && !earlier; d++) {
                int64_t diff = 0, slope = 0;
                const Expr &L = st.args[d];
                if (!expr_uses_var(L, outer_r) || !is_const_int(simplify(L - c->args[d]), &diff) ||
                    !is_const_int(simplify(substitute(outer_r, r + 1, L) - substitute(outer_r, r, L)), &slope))
                    continue;
                // Each coordinate along d is written by one iteration of r only (no other
                // reduction variable in L, slope 1 or -1): what is read there is final.
                bool only_r = true;
                for (auto &rv : st.rvars)
                    if (rv.var != outer_r && expr_uses_var(L, rv.var)) only_r = false;
                earlier = only_r && diff != 0 && (slope == 1 || slope == -1) && (diff > 0) == (slope > 0);
            }
            if (!earlier) return false;
        }
        return true;
    }

    /** The stage's loop nest; with specializations, a chain of branches on their conditions. */
    Stmt build_stage(LFunc &f, int k, const Box &box) {
        LStage &st = f.stages[k];
        Stmt r = build_stage_with(f, k, box, st.sched);
        for (auto it = st.specs.rbegin(); it != st.specs.rend(); ++it) {
            Expr c = simplify(it->first);
            if (is_true(c)) r = build_stage_with(f, k, box, it->second);
            else if (!is_false(c)) r = IfThenElse::make(c, build_stage_with(f, k, box, it->second), r);
        }
        return r;
    }

    Stmt build_stage_with(LFunc &f, int k, const Box &box, const StageSchedule &sched) {
        LStage &st = f.stages[k];
        if (k == 0 && is_undef(st.value)) return Evaluate::make(Expr(0));  // no initial value
        std::string prefix = f.name + ".s" + std::to_string(k) + ".";
        std::map<std::string, std::pair<Expr, Expr>> bounds;  // min, extent
        std::map<std::string, Expr> maxes;                    // the last value, as written by bounds inference
        std::map<std::string, bool> is_rvar;
        for (size_t i = 0; i < f.args.size(); i++) {
            if (!box[i].is_bounded())
                user_error("weft: Func \"" + f.contents->name + "\" dimension " + std::to_string(i) +
                           ": cannot bound the region to compute (" + describe(box[i]) +
                           "); clamp the coordinates it is called or written with");
            // An empty region (a consumer's guard fails throughout) has extent 0, never less:
            // fused loops multiply extents.
            Expr ext = simplify(box[i].max - box[i].min + 1);
            if (!can_prove(simplify(ext >= 0))) ext = simplify(Max::make(ext, 0));
            bounds[f.args[i]] = {box[i].min, ext};
            maxes[f.args[i]] = box[i].max;
        }
        for (auto &rv : st.rvars) {
            Expr rext = can_prove(simplify(rv.extent >= 0)) ? rv.extent : simplify(Max::make(rv.extent, 0));
            bounds[rv.var] = {rv.min, rext};
            maxes[rv.var] = simplify(rv.min + rv.extent - 1);
            is_rvar[rv.var] = true;
        }
        struct Rec {
            Split sp;
            TailStrategy tail;
            Expr omin, oext, omax, imin;
            Expr imax, outer_max;  // fuse: the inner's and the outer's last values
        };
        std::vector<Rec> recs;
        std::map<std::string, Expr> short_inner;  // see below
        // A guarded tail whose inner loop is serial and inside its outer loop: the inner loop
        // stops at the extent, min(F, oext - o * F) iterations, instead of running the factor's
        // iterations with a guard that fails in the last ones (what is computed at the inner loop
        // for those iterations, a producer's rows, was computed for nothing). The guard stays
        // (always true then): bounds inference narrows what is inside it by its condition. (A
        // Func computed per strip of a consumer, its own strips split by a factor the strip's
        // footprint is not a multiple of.)
        std::map<std::string, Expr> trimmed_inner;
        for (auto &sp : sched.splits) {
            if (sp.kind == Split::SplitVar) {
                auto it = bounds.find(sp.old_var);
                WEFT_ASSERT(it != bounds.end(), "split of unknown var " + sp.old_var);
                Expr omin = it->second.first, oext = it->second.second, F = sp.factor;
                bool rv = is_rvar[sp.old_var];
                TailStrategy t = resolve_tail(f, k, sched, sp, rv, oext, F);
                recs.push_back({sp, t, omin, oext, maxes.at(sp.old_var), Expr(), Expr(), Expr()});
                bounds[sp.inner] = {0, F};
                // A factor that may be huge (a Param, or a constant such as INT32_MAX): a serial or
                // parallel inner loop under a guard stops at the extent, past which the guard
                // fails anyway (else 2^31 iterations of a failing guard).
                int64_t fc = 0;
                if (t == TailStrategy::GuardWithIf && (!is_const_int(F, &fc) || fc > 65536))
                    short_inner[sp.inner] = simplify(Min::make(F, oext));
                else if (t == TailStrategy::GuardWithIf && !rv && serial_inside_outer(sched, sp) && !uses_compute_with)
                    trimmed_inner[sp.inner] = simplify(Min::make(F, oext - Variable::make(Int(32), prefix + sp.outer) * F));
                // ceil(oext / F) without (oext + F - 1) / F, which wraps for extents near 2^31.
                bounds[sp.outer] = {0, simplify((oext - 1) / F + 1)};
                if (!is_const(F))  // a Param: checked at each call, before anything runs
                    top_asserts.push_back(AssertStmt::make(
                        F > 0, stage_name(*f.contents, k) + ".split(" + sp.old_var + "): the factor is %, it must be positive", {F}));
                maxes[sp.inner] = simplify(F - 1);
                maxes[sp.outer] = simplify(bounds[sp.outer].second - 1);
                is_rvar[sp.inner] = is_rvar[sp.outer] = rv;
            } else {
                auto in = bounds.at(sp.inner), out = bounds.at(sp.outer);
                // omin: the outer's min, oext: the inner's extent, imin: the inner's min.
                recs.push_back({sp, TailStrategy::Auto, out.first, in.second, Expr(), in.first, maxes.at(sp.inner),
                                maxes.at(sp.outer)});
                bounds[sp.old_var] = {0, simplify(in.second * out.second)};
                maxes[sp.old_var] = simplify(bounds[sp.old_var].second - 1);
                is_rvar[sp.old_var] = is_rvar[sp.inner];
            }
        }
        // Each split-away variable's value is bound by a let, in terms of the loop variables;
        // a tail guard follows right after the let it checks, so that bounds inference can use it
        // for everything inside.
        std::map<std::string, Expr> values;
        for (auto &d : sched.dims) values[d.var] = Variable::make(Int(32), prefix + d.var);
        struct Wrap {
            std::string let;
            Expr value;  // a let, or (if let is empty) a guard condition
        };
        std::vector<Wrap> wraps;  // outermost first
        int counter = 0;
        // A bound variable that may leave its range (below a RoundUp split) is not promised.
        std::map<std::string, bool> overshoot;
        auto bind = [&](const std::string &var, Expr v, const Expr &lo, const Expr &hi) {
            std::string n = prefix + var + "$" + std::to_string(counter++);
            v = simplify(v);
            if (!overshoot[var]) v = Call::make_intrinsic(Int(32), "promise_clamped", {v, lo, hi});
            wraps.push_back({n, v});
            values[var] = Variable::make(Int(32), n);
        };
        for (auto it = recs.rbegin(); it != recs.rend(); ++it) {
            const Split &sp = it->sp;
            if (sp.kind == Split::SplitVar) {
                Expr o = values.at(sp.outer), i = values.at(sp.inner);
                Expr F = sp.factor;
                Expr base = it->omin + o * F;
                bool shift = it->tail == TailStrategy::ShiftInwards;
                bool guard = it->tail == TailStrategy::GuardWithIf || (shift && !can_prove(simplify(it->oext >= F)));
                bool child = overshoot[sp.outer] || overshoot[sp.inner];
                overshoot[sp.old_var] = !guard && (child || (it->tail == TailStrategy::RoundUp &&
                                                             !can_prove(simplify(it->oext % F) == 0)));
                // The last iteration moves down to end at the max. Where the extent is known to be
                // at least the factor, that start is never below the min (o >= 0): no max with the
                // min, which would stay in every index of the loop (a clamp per vector).
                if (shift) {
                    base = Min::make(base, it->omax - F + 1);
                    if (guard) base = Max::make(base, it->omin);
                }
                if (guard) {
                    // The let may exceed the range until the guard right after it. Near INT32_MAX
                    // the let wraps, and `let <= omax` alone admits lanes beyond the buffer: the
                    // guard also checks the offset from the min, i < oext - o * F, which never
                    // wraps (o * F < oext for every o it admits). (ShiftInwards moves the last
                    // iteration down: only the let's check applies.)
                    bool saved = overshoot[sp.old_var];
                    overshoot[sp.old_var] = true;
                    bind(sp.old_var, base + i, it->omin, it->omax);
                    overshoot[sp.old_var] = saved;
                    Expr c = values[sp.old_var] <= it->omax;
                    if (!shift) c = c && i < it->oext - o * F;
                    wraps.push_back({"", likely(c)});
                } else {
                    bind(sp.old_var, base + i, it->omin, it->omax);
                }
            } else {
                Expr fv = values.at(sp.old_var);
                overshoot[sp.inner] = overshoot[sp.outer] = overshoot[sp.old_var];
                bind(sp.inner, it->imin + fv % it->oext, it->imin, it->imax);
                bind(sp.outer, it->omin + fv / it->oext, it->omin, it->outer_max);
            }
        }
        std::map<std::string, Expr> subs;
        for (auto &a : f.args)
            if (values.count(a)) subs[a] = values[a];
        for (auto &rv : st.rvars) subs[rv.var] = values.at(rv.var);
        std::vector<Expr> args;
        for (auto &a : st.args) args.push_back(substitute(subs, a));
        Stmt body = Provide::make(f.name, substitute(subs, st.value), args, sched.atomic);
        // prefetch(src, at, offset): a hint for what iteration at + offset will read of src.
        std::vector<Stmt> prefetches;
        for (auto &pf : sched.prefetches) {
            auto nm = st.prefetch_names.find(pf.src);
            if (nm == st.prefetch_names.end()) continue;
            class FindCall : public IRVisitor {
            public:
                std::string name;
                Expr found;

            protected:
                void visit(const Call *op) override {
                    if (!found.defined() && op->call_type != Call::Intrinsic && op->name == name)
                        found = Expr(std::make_shared<Call>(*op));
                    IRVisitor::visit(op);
                }
            } fc;
            fc.name = nm->second;
            fc.include(body);
            if (!fc.found.defined()) continue;
            Expr call = fc.found;
            for (auto it = wraps.rbegin(); it != wraps.rend(); ++it)
                if (!it->let.empty()) call = substitute(it->let, it->value, call);
            Expr at = Variable::make(Int(32), prefix + pf.var);
            call = substitute(prefix + pf.var, at + pf.offset, call);
            prefetches.push_back(Evaluate::make(Call::make_intrinsic(Int(32), "prefetch", {call})));
        }
        if (!prefetches.empty()) {
            prefetches.push_back(body);
            body = Block::make(prefetches);
        }
        if (st.predicate.defined()) body = IfThenElse::make(substitute(subs, st.predicate), body);
        // Below a vectorized loop with loops inside it (an update's reduction loop, innermost
        // by default), the lets and tail guards that use none of those inner loops go right
        // inside the vectorized loop, around them: a guard that differs from lane to lane is then
        // decided once per vector (the vector body where every lane passes, lane by lane in the
        // tail), not inside the inner loops, where it made the whole loop run lane by lane.
        size_t vec_at = 0;  // index in sched.dims (innermost first) of such a vectorized loop
        for (size_t i = 1; i < sched.dims.size() && !vec_at; i++)
            if (sched.dims[i].for_type == ForType::Vectorized) vec_at = i;
        std::vector<bool> hoisted(wraps.size(), false);
        if (vec_at) {
            std::set<std::string> inner;  // the loops inside the vectorized one, and lets not hoisted
            for (size_t i = 0; i < vec_at; i++) inner.insert(prefix + sched.dims[i].var);
            for (size_t w = 0; w < wraps.size(); w++) {
                bool uses = false;
                for (auto &n : inner) uses = uses || expr_uses_var(wraps[w].value, n);
                hoisted[w] = !uses;
                if (!hoisted[w] && !wraps[w].let.empty()) inner.insert(wraps[w].let);
            }
        }
        auto wrap = [&](Stmt b, bool outer) {
            for (size_t w = wraps.size(); w-- > 0;)
                if (hoisted[w] == outer)
                    b = wraps[w].let.empty() ? IfThenElse::make(wraps[w].value, b) : LetStmt::make(wraps[w].let, wraps[w].value, b);
            return b;
        };
        body = wrap(body, false);
        for (size_t di = 0; di < sched.dims.size(); di++) {
            const Dim &d = sched.dims[di];
            if (vec_at && di == vec_at) body = wrap(body, true);
            auto b = bounds.at(d.var);
            auto si = short_inner.find(d.var);
            if (si != short_inner.end() && (d.for_type == ForType::Serial || d.for_type == ForType::Parallel))
                b.second = si->second;
            auto ti = trimmed_inner.find(d.var);
            if (ti != trimmed_inner.end()) b.second = ti->second;
            if (sched.single_thread && (d.for_type == ForType::GPUBlock || d.for_type == ForType::GPUThread))
                user_error("weft: " + stage_name(*f.contents, k) + " is scheduled gpu_single_thread() and also has the GPU loop " +
                           d.var + "; use one or the other");
            body = For::make(prefix + d.var, simplify(b.first), simplify(b.second), d.for_type, body);
        }
        if (sched.single_thread) {
            body = For::make(prefix + "single_thread", 0, 1, ForType::GPUThread, body);
            body = For::make(prefix + "single_block", 0, 1, ForType::GPUBlock, body);
        }
        return body;
    }

    /** Binds a region's bounds to names (lets placed around the producer), so that the loop
        nests and the bounds inferred through them stay small. Constant extents stay visible. */
    int region_counter = 0;
    std::vector<std::pair<std::string, Expr>> name_region(const LFunc &f, Box &box) {
        std::vector<std::pair<std::string, Expr>> lets;
        std::string base = f.name + ".r" + std::to_string(region_counter++) + ".";
        for (size_t i = 0; i < box.size(); i++) {
            if (!box[i].is_bounded()) continue;
            Expr mn = simplify(box[i].min), mx = simplify(box[i].max);
            Expr ext = simplify(mx - mn + 1);
            Expr vmin = mn, vmax = mx;
            if (!is_const(mn)) {
                lets.push_back({base + "min." + std::to_string(i), mn});
                vmin = Variable::make(Int(32), lets.back().first);
            }
            if (is_const(ext)) {
                vmax = simplify(vmin + ext - 1);
            } else if (!is_const(mx)) {
                lets.push_back({base + "max." + std::to_string(i), mx});
                vmax = Variable::make(Int(32), lets.back().first);
            }
            box[i] = Interval(vmin, vmax);
        }
        return lets;
    }
    static Stmt wrap_lets(const std::vector<std::pair<std::string, Expr>> &lets, Stmt s) {
        for (auto it = lets.rbegin(); it != lets.rend(); ++it) s = LetStmt::make(it->first, it->second, s);
        return s;
    }

    Stmt build_produce(LFunc &f, Box box) {
        const std::string &fname = f.contents->name;
        std::vector<Stmt> pre;
        for (auto &bs : f.sched.bounds) {
            size_t i = std::find(f.args.begin(), f.args.end(), bs.var) - f.args.begin();
            Interval b(bs.min, simplify(bs.min + bs.extent - 1));
            if (box[i].is_bounded()) {
                // An output computes its buffer's region: a buffer beyond the bound is refused, as
                // a consumer needing more than the bound is.
                Expr ok = simplify(box[i].min >= b.min && box[i].max <= b.max);
                pre.push_back(AssertStmt::make(ok,
                    "Func \"" + fname + "\" dimension " + std::to_string(i) + ": bound() gives [%, %] but " +
                        (f.output_index < 0 ? "the pipeline needs" : "its output buffer holds") + " [%, %]",
                    {b.min, b.max, box[i].min, box[i].max}));
            }
            if (f.output_index < 0) box[i] = b;
        }
        for (auto &ba : f.sched.bound_align) {
            // align_bounds: the region computed starts at remainder mod modulus and spans a
            // multiple of it (the storage, the union of what is read and written, follows).
            if (f.output_index >= 0)
                user_error("weft: Func \"" + fname + "\".align_bounds(): an output computes exactly its buffer's "
                           "region; align_bounds() is for Funcs that are not outputs");
            size_t i = std::find(f.args.begin(), f.args.end(), ba.var) - f.args.begin();
            if (i >= box.size() || !box[i].is_bounded()) continue;
            Expr m((int)ba.modulus), r((int)ba.remainder);
            Expr mn = simplify(((box[i].min - r) / m) * m + r);
            Expr mx = simplify(mn + ((box[i].max - mn + m) / m) * m - 1);
            box[i] = Interval(mn, mx);
        }
        size_t n = f.stages.size();
        std::vector<Box> sb(n);
        sb[n - 1] = box;
        for (size_t k = n - 1; k >= 1; k--) {
            LStage &st = f.stages[k];
            Scope sc;
            for (size_t i = 0; i < f.args.size(); i++) sc[f.args[i]] = sb[k][i];
            for (auto &rv : st.rvars) sc[rv.var] = Interval(rv.min, simplify(rv.min + rv.extent - 1));
            std::vector<Stmt> touch{Provide::make(f.name, st.value, st.args)};
            if (st.predicate.defined()) touch.push_back(Evaluate::make(st.predicate));
            Stmt ts = Block::make(touch);
            Box t = box_union(box_provided(ts, f.name, sc), box_required(ts, f.name, sc));
            sb[k - 1] = box_union(sb[k], t);
            for (auto &iv : sb[k - 1]) iv = Interval(iv.min.defined() ? simplify(iv.min) : iv.min,
                                                      iv.max.defined() ? simplify(iv.max) : iv.max);
        }
        if (f.output_index >= 0) {
            // Everything an output's stages touch must lie within its buffer: checked before any work.
            for (size_t i = 0; i < f.args.size(); i++) {
                const Interval &r = sb[0][i];
                if (!r.is_bounded())
                    user_error("weft: output Func \"" + fname + "\" dimension " + std::to_string(i) +
                               ": cannot bound the region its updates write; clamp the coordinates");
                Expr bmin = box[i].min, bmax = box[i].max;
                top_asserts.push_back(AssertStmt::make(simplify(r.min >= bmin && r.max <= bmax),
                    "output \"" + fname + "\" dimension " + std::to_string(i) + ": pipeline writes [%, %], buffer holds [%, %]",
                    {r.min, r.max, bmin, bmax}));
            }
        }
        std::vector<Stmt> stages;
        for (size_t k = 0; k < n; k++) stages.push_back(build_stage(f, (int)k, sb[k]));
        Stmt s = Block::make(stages);
        if (f.output_index >= 0) {
            Box prov = box_provided(s, f.name);
            for (size_t i = 0; i < prov.size(); i++) {
                const Interval &r = prov[i];
                if (!r.is_bounded()) continue;
                Expr bmin = box[i].min, bmax = box[i].max;
                top_asserts.push_back(AssertStmt::make(simplify(r.min >= bmin && r.max <= bmax),
                    "output \"" + fname + "\" dimension " + std::to_string(i) +
                    ": the schedule writes [%, %], buffer holds [%, %] (RoundUp needs an extent that is a multiple of the factor)",
                    {r.min, r.max, bmin, bmax}));
            }
        }
        pre.push_back(s);
        Stmt r = Block::make(pre);
        if (profile_id) {
            // Time this Func's computation (weft_rt_profile; exclusive of nested producers).
            Expr id = Expr(profile_id(fname));
            auto ev = [&](int begin) {
                return Evaluate::make(Call::make_intrinsic(Int(32), "weft_rt_profile", {id, Expr(begin)}));
            };
            r = Block::make({ev(1), r, ev(0)});
        }
        return r;
    }

    Region to_region(const Box &b) {
        Region r;
        for (auto &i : b) {
            WEFT_ASSERT(i.is_bounded(), "unbounded realization");
            // Empty where a consumer's tail guard fails for every point: never negative.
            r.push_back({simplify(i.min), simplify(Max::make(i.max - i.min + 1, 0))});
        }
        return r;
    }

    Stmt realize(LFunc &f, const Stmt &body, const Box *known_required = nullptr) {
        Box b = box_union(known_required ? *known_required : box_required(body, f.name), box_provided(body, f.name));
        if (debug_bounds()) {
            Box r = box_required(body, f.name), p = box_provided(body, f.name);
            for (size_t i = 0; i < r.size(); i++) std::cerr << "req " << i << ": " << r[i].min << " .. " << r[i].max << "\n";
            for (size_t i = 0; i < p.size(); i++) std::cerr << "prov " << i << ": " << p[i].min << " .. " << p[i].max << "\n";
            std::cerr << body << "\n";
        }
        for (size_t i = 0; i < b.size(); i++)
            if (!b[i].is_bounded())
                user_error("weft: Func \"" + f.contents->name + "\" dimension " + std::to_string(i) +
                           ": cannot bound the region it is read over (" + describe(b[i]) +
                           "); clamp the coordinates it is called with");
        return Realize::make(f.name, f.type, to_region(b), f.sched.memory, body);
    }

    class InjectAt : public IRMutator {
    public:
        Builder *b;
        LFunc *f;
        std::string func, var;
        bool produce;  // true: inject the computation; false: inject the storage
        bool with_realize;
        int count = 0, loops_seen = 0;
        bool slide = false;            // stored outside this loop: reuse what earlier iterations computed
        int fold_dim = -1;             // the dimension that slid, if any
        int64_t fold_factor = 0;       // a power of two >= the rows one iteration needs
        int64_t fold_window = 0;       // the rows one iteration needs
        std::string compute_loop;
        std::set<std::string> injected_loops;  // the loops it was put in
        std::vector<const For *> enclosing;    // the loops around the one visited, outermost first

        using IRMutator::mutate;
        // (It changes statements only: the expressions are not walked.)
        Expr mutate(const Expr &e) override { return e; }

    protected:
        Stmt visit(const For *op, const Stmt &s) override {
            // The ranges of the loops around: a window clamped at the image's edge (a
            // boundary condition) has a constant width only knowing where the loops run.
            enclosing.push_back(op);
            Stmt body = mutate(op->body);
            enclosing.pop_back();
            if (!is_loop_of(op->name, func, var)) return body.same_as(op->body) ? s : For::make(op->name, op->min, op->extent, op->for_type, body);
            loops_seen++;
            bool uses = touches(body, f->name);
            if (!uses) return body.same_as(op->body) ? s : For::make(op->name, op->min, op->extent, op->for_type, body);
            count++;
            injected_loops.insert(op->name);
            if (produce) {
                Box req = box_required(body, f->name);
                Box unslid = req;
                if (slide && op->for_type == ForType::Serial && f->stages.size() == 1) slide_window(op, req);
                lets = b->name_region(*f, req);
                Stmt p = b->build_produce(*f, req);
                named = req;
                if (fold_dim >= 0) {
                    // The ring holds the window one iteration reads. Only where the computation
                    // writes exactly its region along that dimension (no RoundUp overshoot, which
                    // would wrap around onto rows still needed).
                    // (With a sliding consumer, in each of the forms of an iteration; the ring
                    // holds the largest.)
                    Box prov = box_provided(b->build_produce(*f, unslid), f->name);
                    Interval u = unslid[fold_dim];
                    int64_t w = 0;
                    bool exact = !prov.empty() && prov[fold_dim].is_bounded() && u.is_bounded();
                    if (exact) {
                        // The window may vary from one iteration to the next (a consumer reading
                        // rows y / 2 and (y + 1) / 2 needs one or two): the ring holds the widest,
                        // bounded over the loop's range, where what is computed is the window.
                        Scope scope = with_loop(op);
                        auto forms = iteration_forms(op, {u.max - u.min + 1, prov[fold_dim].max - prov[fold_dim].min + 1});
                        for (size_t i = 0; exact && i < forms.size(); i++) {
                            Expr we = simplify(forms[i][0]), pwe = simplify(forms[i][1]);
                            int64_t wi = 0, pwi = 0;
                            if (is_const_int(we, &wi) && is_const_int(pwe, &pwi)) exact = wi == pwi;
                            else {
                                // (A window that is a periodic function of the strip's start plus
                                // the loop, an upsampling's: its largest value over a period.)
                                std::vector<int64_t> ws;
                                exact = can_prove(simplify(we == pwe)) &&
                                        (periodic_values(we, op->name, [](const Expr &g, const Expr &) { return g; }, &ws)
                                             ? (wi = *std::max_element(ws.begin(), ws.end()), true)
                                             : constant_upper_bound_in_scope(we, scope, &wi));
                            }
                            w = std::max(w, exact ? wi : 0);
                        }
                    }
                    if (exact && w > 0 && w <= 1024) {
                        fold_window = w;
                        int64_t ff = 1;
                        while (ff < w) ff *= 2;
                        fold_factor = ff;
                    } else {
                        fold_dim = -1;
                    }
                }
                body = Block::make(p, body);
            }
            if (with_realize) body = b->realize(*f, body, produce ? &named : nullptr);
            if (produce) body = wrap_lets(lets, body);
            return For::make(op->name, op->min, op->extent, op->for_type, body);
        }
        std::vector<std::pair<std::string, Expr>> lets;
        Box named;

        /** A consumer that slides along loop `op` too computes, after the first iteration, only
            its new rows: its region is select(v <= min, first, later), and so is the region it
            needs of its producers (and select(v <= min + 1, ...) in what the previous iteration
            needed). Such selects on v <= k split the iterations into regimes: the first up to the
            smallest k, and so on. pick() gives e with each select decided by `holds(k)` (whether
            v <= k: 1 true, 0 false, -1 undecided); selects it does not decide stay. */
        template <typename F>
        static Expr pick(const For *op, const Expr &e, F holds) {
            class Pick : public IRMutator {
            public:
                const std::string *v;
                std::function<int(int64_t)> holds;  // 1 true, 0 false, -1 undecided

            protected:
                Expr visit(const Select *s, const Expr &e2) override {
                    const LE *le = s->condition.as<LE>();
                    const Variable *var = le ? le->a.as<Variable>() : nullptr;
                    int64_t k;
                    if (var && var->name == *v && is_const_int(le->b, &k)) {
                        int h = holds(k);
                        if (h >= 0) return mutate(h ? s->true_value : s->false_value);
                    }
                    return IRMutator::visit(s, e2);
                }
            } p;
            p.v = &op->name;
            p.holds = holds;
            return p.mutate(e);
        }
        template <typename F>
        static Expr resolve(const For *op, const Expr &e, F holds) {
            return simplify(pick(op, e, holds));
        }
        /** The thresholds k of the selects on v <= k in es. */
        static std::vector<int64_t> thresholds(const For *op, const std::vector<Expr> &es) {
            std::set<int64_t> ks;
            for (const Expr &e : es)
                pick(op, e, [&](int64_t k) {
                    ks.insert(k);
                    return -1;
                });
            return std::vector<int64_t>(ks.begin(), ks.end());
        }
        /** es in each regime of the loop's iterations (one regime, es themselves, where no select
            on v <= k is in them): result[r][i] is es[i] in regime r, earliest first. */
        static std::vector<std::vector<Expr>> iteration_forms(const For *op, const std::vector<Expr> &es) {
            std::vector<int64_t> T = thresholds(op, es);
            std::vector<std::vector<Expr>> r;
            for (size_t reg = 0; reg <= T.size(); reg++) {
                std::vector<Expr> f;
                for (const Expr &e : es)
                    f.push_back(T.empty() ? e : resolve(op, e, [&](int64_t k) { return reg < T.size() && k >= T[reg] ? 1 : 0; }));
                r.push_back(f);
            }
            return r;
        }

        /** a <= b, proved directly or, where both have one shape (the min and max of clamps and
            of several consumers' windows), term by term: min(a1, a2) <= min(b1, b2) when
            a1 <= b1 and a2 <= b2, and so for max and +. */
        static bool provably_le(const Expr &a, const Expr &b) {
            if (can_prove(simplify(a <= b))) return true;
            if (auto x = a.as<Min>()) {
                if (auto y = b.as<Min>())
                    return (provably_le(x->a, y->a) && provably_le(x->b, y->b)) ||
                           (provably_le(x->a, y->b) && provably_le(x->b, y->a));
                return provably_le(x->a, b) || provably_le(x->b, b);  // min(a1, a2) <= a1
            }
            if (auto y = b.as<Max>()) {
                if (auto x = a.as<Max>())
                    return (provably_le(x->a, y->a) && provably_le(x->b, y->b)) ||
                           (provably_le(x->a, y->b) && provably_le(x->b, y->a));
                return provably_le(a, y->a) || provably_le(a, y->b);  // b1 <= max(b1, b2)
            }
            if (auto x = a.as<Max>()) return provably_le(x->a, b) && provably_le(x->b, b);
            if (auto y = b.as<Min>()) return provably_le(a, y->a) && provably_le(a, y->b);
            if (auto x = a.as<Add>())
                if (auto y = b.as<Add>()) return provably_le(x->a, y->a) && provably_le(x->b, y->b);
            if (auto x = a.as<Sub>())
                if (auto y = b.as<Sub>()) return provably_le(x->a, y->a) && provably_le(y->b, x->b);
            return false;
        }

        /** Is e a non-decreasing function of v (v itself, sums, positive scalings and
            divisions, mins, maxes and selects on conditions without v, of such; terms without v
            subtracted)? dir -1: non-increasing. */
        static bool nondecreasing_in(const Expr &e, const std::string &v, int dir = 1) {
            if (!expr_uses_var(e, v)) return true;
            if (auto *x = e.as<Variable>()) return x->name == v && dir > 0;
            if (auto *x = e.as<Add>()) return nondecreasing_in(x->a, v, dir) && nondecreasing_in(x->b, v, dir);
            if (auto *x = e.as<Sub>()) return nondecreasing_in(x->a, v, dir) && nondecreasing_in(x->b, v, -dir);
            if (e.as<Min>() || e.as<Max>()) {
                auto *x = static_cast<const BinaryExprNode *>(e.get());
                return nondecreasing_in(x->a, v, dir) && nondecreasing_in(x->b, v, dir);
            }
            if (auto *x = e.as<Select>())
                return !expr_uses_var(x->condition, v) && nondecreasing_in(x->true_value, v, dir) &&
                       nondecreasing_in(x->false_value, v, dir);
            int64_t c = 0;
            if (auto *x = e.as<Mul>()) {
                if (is_const_int(x->b, &c)) return nondecreasing_in(x->a, v, c >= 0 ? dir : -dir);
                if (is_const_int(x->a, &c)) return nondecreasing_in(x->b, v, c >= 0 ? dir : -dir);
                return false;
            }
            if (auto *x = e.as<Div>()) return e.type().is_int() && is_const_int(x->b, &c) && c > 0 && nondecreasing_in(x->a, v, dir);
            return false;
        }

        /** Where e reads loop v only through one sum t = A + v (A without v: a strip's clamped
            start plus the loop) and is, as a function of t, built of divisions and remainders by
            constants (an upsampling's rows t / 2 - 1 + 2 * (t % 2) and t / 2), of, min, max,
            select, sums and constant multiples of such: h = make(e as a function of t, t) is
            periodic in t up to a linear term, with period P the product of the nested divisors
            (at most 64). Its values at t = P * q + r for each r in [0, P), each simplified to a
            constant, go to *out; false where e is not of that form or one is not a constant. */
        static bool periodic_values(const Expr &e, const std::string &v, const std::function<Expr(const Expr &, const Expr &)> &make,
                                    std::vector<int64_t> *out) {
            class AsT : public IRMutator {
            public:
                std::string v;
                Expr t, sum;  // the sum replaced, and the variable replacing it
                bool mixed = false;
                using IRMutator::visit;
                Expr mutate(const Expr &x) override {
                    if (mixed || !expr_uses_var(x, v)) return x;
                    const Add *a = x.as<Add>();
                    auto is_v = [&](const Expr &y) { auto *w = y.as<Variable>(); return w && w->name == v; };
                    bool unit = is_v(x) || (a && ((is_v(a->a) && !expr_uses_var(a->b, v)) || (is_v(a->b) && !expr_uses_var(a->a, v))));
                    if (!unit) return IRMutator::mutate(x);
                    if (!sum.defined()) sum = x;
                    else if (!equal(sum, x)) mixed = true;
                    return t;
                }
            } as_t;
            if (!e.type().is_int()) return false;
            const std::string tn = v + ".periodic_t";
            as_t.v = v;
            as_t.t = Variable::make(e.type(), tn);
            Expr g = as_t.mutate(e);
            if (as_t.mixed || !as_t.sum.defined() || expr_uses_var(g, v)) return false;
            // g(t + P) - g(t) is the same for every t: a division or remainder by c of something
            // of period P has period P * c; other nodes the lcm of their operands'. 0: not of
            // that form (a load, a call, a product of two terms in t).
            std::function<int64_t(const Expr &)> period = [&](const Expr &x) -> int64_t {
                if (!expr_uses_var(x, tn) || x.as<Variable>()) return 1;
                auto lcm = [](int64_t p, int64_t q) -> int64_t { return p && q && std::lcm(p, q) <= 64 ? std::lcm(p, q) : 0; };
                int64_t c = 0;
                auto div = [&](const Expr &a, const Expr &d) -> int64_t {
                    int64_t p = period(a);
                    return is_const_int(d, &c) && c > 0 && p && p * c <= 64 ? p * c : 0;
                };
                if (auto *n = x.as<Div>()) return div(n->a, n->b);
                if (auto *n = x.as<Mod>()) return div(n->a, n->b);
                if (auto *n = x.as<Mul>()) return is_const_int(n->b, &c) ? period(n->a) : is_const_int(n->a, &c) ? period(n->b) : 0;
                if (auto *n = x.as<Select>()) return lcm(period(n->condition), lcm(period(n->true_value), period(n->false_value)));
                if (x.as<Add>() || x.as<Sub>() || x.as<Min>() || x.as<Max>() || x.as<LT>() || x.as<LE>() || x.as<EQ>() || x.as<NE>()) {
                    auto *n = static_cast<const BinaryExprNode *>(x.get());
                    return lcm(period(n->a), period(n->b));
                }
                return 0;
            };
            int64_t P = period(g);
            if (P == 0) return false;
            Expr h = make(g, as_t.t), q = Variable::make(e.type(), v + ".periodic_q");
            for (int64_t r = 0; r < P; r++) {
                int64_t k = 0;
                if (!is_const_int(simplify(substitute(tn, q * make_const(e.type(), P) + make_const(e.type(), r), h)), &k)) return false;
                out->push_back(k);
            }
            return true;
        }

        /** Is e non-decreasing in v, as a periodic function of one sum t = A + v (above): its
            step e(t) - e(t - 1) >= 0 at every residue. */
        static bool nondecreasing_periodic(const Expr &e, const std::string &v) {
            std::vector<int64_t> steps;
            auto step = [&](const Expr &g, const Expr &t) {
                return g - substitute(t.as<Variable>()->name, t - 1, g);
            };
            return periodic_values(e, v, step, &steps) && *std::min_element(steps.begin(), steps.end()) >= 0;
        }

        /** The ranges of the loops around, and of op. */
        Scope with_loop(const For *op) const {
            // (Built when asked, at the loops f is put in: built at every loop visited, for each
            // Func, it was quadratic in a pipeline's stages.)
            Scope scope;
            for (const For *l : enclosing) scope[l->name] = loop_range(l);
            scope[op->name] = loop_range(op);
            return scope;
        }
        mutable std::map<const For *, Interval> ranges_;
        const Interval &loop_range(const For *l) const {
            auto it = ranges_.find(l);
            if (it == ranges_.end()) it = ranges_.emplace(l, Interval(l->min, simplify(l->min + l->extent - 1))).first;
            return it->second;
        }

        /** a <= b where a - b has an upper bound <= 0 knowing the ranges of the loops around
            and of op (clamps at an image's edge on both sides, which provably_le's
            term-by-term pairing misses once the simplifier has reshaped one side). */
        bool le_by_difference(const Expr &a, const Expr &b, const For *op) const {
            Scope scope = with_loop(op);
            int64_t d = 0;
            // Where the loops take few values (after the iteration is fixed, the strips): each.
            if (enumerated_max(simplify(a - b), scope, 64, &d)) return d <= 0;
            return upper_bound_of_difference(a, b, scope, &d) && d <= 0;
        }

        /** Sliding window: along the first dimension whose required range moves monotonically
            with this serial loop, an iteration computes only what the previous one did not. */
        void slide_window(const For *op, Box &req) {
            Expr v = Variable::make(Int(32), op->name), prev = v - 1;
            // Monotone from one iteration to the next, in its regime and across to the next one.
            auto monotone = [&](const Expr &e) {
                auto f = iteration_forms(op, {e});
                std::vector<int64_t> T = thresholds(op, {e});
                for (size_t i = 0; i < f.size(); i++)
                    for (size_t j = i; j < f.size() && j <= i + 1; j++) {
                        // Within a regime: built of operations that never decrease with the loop.
                        if (i == j && (nondecreasing_in(f[i][0], op->name) || nondecreasing_periodic(f[i][0], op->name))) continue;
                        Expr before = simplify(substitute(op->name, prev, f[i][0])), after = f[j][0];
                        if (provably_le(before, after)) continue;
                        if (j > i && i < T.size()) {
                            // From one regime to the next: only at the iteration after its threshold.
                            Expr at = make_const(op->min.type(), T[i] + 1);
                            before = simplify(substitute(op->name, at, before));
                            after = simplify(substitute(op->name, at, after));
                        }
                        if (!le_by_difference(before, after, op)) return false;
                    }
                return true;
            };
            // Only one dimension of the region may move with the loop: where another one moves
            // too (a fused x*y loop: x = f % w, y = f / w), rows computed by earlier iterations
            // cover other columns than this one needs.
            int moving = 0;
            for (size_t d = 0; d < req.size(); d++)
                moving += (req[d].min.defined() && expr_uses_var(req[d].min, op->name)) ||
                          (req[d].max.defined() && expr_uses_var(req[d].max, op->name));
            if (moving > 1) return;
            for (size_t d = 0; d < req.size(); d++) {
                Expr mn = req[d].min, mx = req[d].max;
                if (!mn.defined() || !mx.defined()) continue;
                if (!expr_uses_var(mn, op->name) && !expr_uses_var(mx, op->name)) continue;
                Expr pmx = substitute(op->name, prev, mx);
                if (!monotone(mn) || !monotone(mx)) continue;
                // (In each branch, the consumers' windows take the same branch.)
                int64_t first = 0;
                bool const_min = is_const_int(op->min, &first);
                Expr first_min = const_min ? resolve(op, mn, [&](int64_t k) { return k >= first ? 1 : 0; }) : mn;
                Expr later = const_min ? resolve(op, mn, [&](int64_t k) { return k <= first ? 0 : -1; }) : mn;
                req[d].min = simplify(Select::make(v <= op->min, first_min, Max::make(later, pmx + 1)));
                fold_dim = (int)d;
                compute_loop = op->name;
                return;
            }
        }
    };

    /** Are all reads of f inside the loop named `loop`, with no parallel loop around it inside
        f's storage (iterations would share the ring of rows)? */
    class ReadsOutside : public IRVisitor {
    public:
        std::string name, loop;
        int depth = 0, parallel = 0;
        bool outside = false;

    protected:
        bool enter(const Stmt &s) override { return may_name(s, name); }
        void visit(const Realize *op) override {
            // Only the parallel loops inside f's storage share it (one outside has a copy per task).
            if (op->name != name) return IRVisitor::visit(op);
            int saved = parallel;
            parallel = 0;
            IRVisitor::visit(op);
            parallel = saved;
        }
        void visit(const For *op) override {
            bool in = op->name == loop;
            if (in && parallel > 0) outside = true;
            bool p = op->for_type == ForType::Parallel || op->for_type == ForType::Vectorized;
            depth += in;
            parallel += p;
            IRVisitor::visit(op);
            depth -= in;
            parallel -= p;
        }
        void visit(const Call *op) override {
            if (op->call_type == Call::Func && op->name == name && depth == 0) outside = true;
            IRVisitor::visit(op);
        }
    };

    /** Finds a read of f inside the loops of the Func it is computed at (cfunc) but in none of
        the loops f was computed in: a specialization or update stage of cfunc without that loop.
        There f would be read before it is computed (or, stored outside, stale). */
    class ReadsWhereNotComputed : public IRVisitor {
    public:
        std::string name, prefix;  // prefix: cfunc's loops, "<cfunc>.s"
        const std::set<std::string> *computed = nullptr;
        int in_cfunc = 0, in_computed = 0;
        std::string where;  // the innermost loop of cfunc around the first such read

    protected:
        bool enter(const Stmt &s) override { return may_name(s, name); }
        std::vector<std::string> loops;
        void visit(const For *op) override {
            bool c = op->name.compare(0, prefix.size(), prefix) == 0, k = computed->count(op->name) > 0;
            in_cfunc += c;
            in_computed += k;
            if (c) loops.push_back(op->name);
            IRVisitor::visit(op);
            if (c) loops.pop_back();
            in_cfunc -= c;
            in_computed -= k;
        }
        void visit(const Call *op) override {
            if (op->call_type == Call::Func && op->name == name && in_cfunc > 0 && in_computed == 0 && where.empty())
                where = loops.back();
            IRVisitor::visit(op);
        }
    };

    /** Checks that every use of f lies inside a Realize of f. */
    class CheckInside : public IRVisitor {
    public:
        std::string name;
        int depth = 0;
        bool bad = false;

    protected:
        bool enter(const Stmt &s) override { return may_name(s, name); }
        void visit(const Realize *op) override {
            if (op->name == name) depth++;
            IRVisitor::visit(op);
            if (op->name == name) depth--;
        }
        void visit(const Call *op) override {
            if (op->call_type == Call::Func && op->name == name && depth == 0) bad = true;
            IRVisitor::visit(op);
        }
        void visit(const Provide *op) override {
            if (op->name == name && depth == 0) bad = true;
            IRVisitor::visit(op);
        }
    };

    /** Finds a parallel loop of another Func between f's storage and a store to f: its
        iterations would share (and race on) one buffer. */
    class FindRace : public IRVisitor {
    public:
        std::string name, race;
        int realize_depth = 0;
        std::vector<std::string> parallel;  // parallel loops inside the storage, outermost first

    protected:
        void visit(const Realize *op) override {
            if (op->name != name) return IRVisitor::visit(op);
            auto saved = parallel;
            parallel.clear();
            realize_depth++;
            IRVisitor::visit(op);
            realize_depth--;
            parallel = saved;
        }
        void visit(const For *op) override {
            bool mine = op->name.compare(0, name.size() + 2, name + ".s") == 0;
            bool p = op->for_type == ForType::Parallel && realize_depth > 0 && !mine;
            if (p) parallel.push_back(op->name);
            IRVisitor::visit(op);
            if (p) parallel.pop_back();
        }
        void visit(const Provide *op) override {
            if (op->name == name && !parallel.empty() && race.empty()) race = parallel.front();
            IRVisitor::visit(op);
        }
    };

    std::string loops_of(const std::string &func) {
        std::string r;
        LFunc &g = env.func(func);
        for (size_t k = 0; k < g.stages.size(); k++)
            for (auto it = g.stages[k].sched.dims.rbegin(); it != g.stages[k].sched.dims.rend(); ++it)
                if (r.find(" " + it->var + ",") == std::string::npos) r += " " + it->var + ",";
        if (!r.empty()) r.pop_back();
        return r;
    }

    /** Whether f reads an output of the pipeline, directly or through Funcs that are not
        outputs: then it is computed after that output, not before everything. */
    bool reads_an_output(const LFunc &f) {
        // (Known once per Func: asked afresh through every producer, a chain of stages at
        // root was quadratic. One being answered counts as not reading one, against cycles.)
        auto it = reads_output_.find(f.name);
        if (it != reads_output_.end()) return it->second;
        reads_output_[f.name] = false;
        bool r = false;
        for (auto &st : f.stages) {
            for (auto &c : funcs_called(st)) {
                if (c == f.name) continue;
                const LFunc &g = env.func(c);
                if (g.output_index >= 0 || reads_an_output(g)) {
                    r = true;
                    break;
                }
            }
            if (r) break;
        }
        return reads_output_[f.name] = r;
    }
    std::map<std::string, bool> reads_output_;

    /** wrap(tail) in place of the part of s from the first statement that touches name to
        its end, found through the Realizes, lets and Blocks of the top level. */
    static Stmt at_first_use(const Stmt &s, const std::string &name, const std::function<Stmt(const Stmt &)> &wrap) {
        auto expr_touches = [&](const Expr &e) { return e.defined() && touches(Evaluate::make(e), name); };
        if (auto r = s.as<Realize>()) {
            for (auto &rg : r->bounds)
                if (expr_touches(rg.min) || expr_touches(rg.extent)) return wrap(s);
            return Realize::make(r->name, r->type, r->bounds, r->memory_type, at_first_use(r->body, name, wrap));
        }
        if (auto l = s.as<LetStmt>()) {
            if (expr_touches(l->value)) return wrap(s);
            return LetStmt::make(l->name, l->value, at_first_use(l->body, name, wrap));
        }
        if (auto b = s.as<Block>()) {
            if (!touches(b->first, name)) return Block::make(b->first, at_first_use(b->rest, name, wrap));
            if (!b->rest.defined() || !touches(b->rest, name)) return Block::make(at_first_use(b->first, name, wrap), b->rest);
        }
        return wrap(s);
    }

    Stmt inject(Stmt s, LFunc &f) {
        const std::string &fname = f.contents->name;
        if (f.sched.compute.kind == LoopLevelSpec::Root && !f.sched.storage_fold.empty())
            user_error("weft: Func \"" + fname + "\".fold_storage(" + f.sched.storage_fold[0].var +
                       "): it is computed at root, so its storage has no window to fold; fold_storage needs a Func "
                       "stored outside the loop it is computed in (store_at / compute_at)");
        if (f.sched.compute.kind == LoopLevelSpec::Root) {
            if (!touches(s, f.name)) return s;  // nobody reads it
            Box req = box_required(s, f.name);
            auto lets = name_region(f, req);
            Stmt p = build_produce(f, req);
            if (!reads_an_output(f)) return wrap_lets(lets, realize(f, Block::make(p, s), &req));
            // After the outputs it reads (Pipeline({g, f}) with g reading a Func that reads f).
            return at_first_use(s, f.name, [&](const Stmt &tail) { return wrap_lets(lets, realize(f, Block::make(p, tail), &req)); });
        }
        // compute_at
        InjectAt in;
        in.b = this;
        in.f = &f;
        in.func = f.compute_func;
        in.var = f.sched.compute.var;
        std::string fused_loop;  // (a loop fused by compute_with: named after the group's parent)
        if (fused_members.count(f.compute_func) && fuse_group_computing(env, s, f.compute_func, in.var, f.name, fused_groups, &fused_loop))
            in.func = fused_loop;
        in.produce = true;
        bool same = f.sched.store.kind == LoopLevelSpec::At && f.store_func == f.compute_func &&
                    f.sched.store.var == f.sched.compute.var;
        in.with_realize = same;
        in.slide = !same;
        s = in.mutate(s);
        const std::string &cname = env.func(f.compute_func).contents->name;
        if (in.loops_seen == 0)
            user_error("weft: Func \"" + fname + "\".compute_at(" + cname + ", " + in.var + "): Func \"" + cname +
                       "\" has no loop named \"" + in.var + "\"; its loops are (outermost first):" + loops_of(f.compute_func));
        if (in.count == 0)
            user_error("weft: Func \"" + fname + "\".compute_at(" + cname + ", " + in.var + "): \"" + fname +
                       "\" is not used inside that loop of \"" + cname + "\"; compute it at a consumer's loop");
        {
            ReadsWhereNotComputed rw;
            rw.name = f.name;
            rw.prefix = in.func + ".s";
            rw.computed = &in.injected_loops;
            rw.include(s);
            if (!rw.where.empty())
                user_error("weft: Func \"" + fname + "\".compute_at(" + cname + ", " + in.var + "): \"" + cname +
                           "\" also reads \"" + fname + "\" where it has no loop " + in.var + " (in loop " + rw.where +
                           ": a specialization, or an update stage, scheduled without it), so \"" + fname +
                           "\" would be read there before it is computed; give that schedule the loop " + in.var +
                           " too, or compute \"" + fname + "\" at root");
        }
        if (!same) {
            if (f.sched.store.kind == LoopLevelSpec::Root) {
                s = realize(f, s);
            } else {
                InjectAt st;
                st.b = this;
                st.f = &f;
                st.func = f.store_func;
                st.var = f.sched.store.var;
                if (fused_members.count(f.store_func) && fuse_group_computing(env, s, f.store_func, st.var, f.name, fused_groups, &fused_loop))
                    st.func = fused_loop;
                st.produce = false;
                st.with_realize = true;
                s = st.mutate(s);
                const std::string &sname = env.func(f.store_func).contents->name;
                if (st.loops_seen == 0)
                    user_error("weft: Func \"" + fname + "\".store_at(" + sname + ", " + st.var + "): Func \"" + sname +
                               "\" has no loop named \"" + st.var + "\"; its loops are (outermost first):" + loops_of(f.store_func));
                if (st.count == 0)
                    user_error("weft: Func \"" + fname + "\".store_at(" + sname + ", " + st.var +
                               "): that loop does not contain the loop where \"" + fname +
                               "\" is computed; store_at must be at or outside compute_at");
            }
        }
        bool folded = false;
        if (!same && in.count == 1 && in.fold_dim >= 0) {
            // Storage folding: keep only the rows the sliding window still needs.
            ReadsOutside ro;
            ro.name = f.name;
            ro.loop = in.compute_loop;
            ro.include(s);
            if (!ro.outside) {
                env.folds[f.name] = {in.fold_dim, in.fold_factor};
                folded = true;
            }
        }
        for (const StorageFold &uf : f.sched.storage_fold) {
            // fold_storage(var, n): the ring's size, where weft can fold and n holds a window.
            const std::string head = "weft: Func \"" + fname + "\".fold_storage(" + uf.var + ", " + std::to_string(uf.factor) + "): ";
            int d = (int)(std::find(f.args.begin(), f.args.end(), uf.var) - f.args.begin());
            if (!folded || in.fold_dim != d)
                user_error(head + "its storage cannot be folded along " + uf.var +
                           ": that needs a Func stored outside the loop it is computed in (store_at / compute_at), "
                           "with a window that moves monotonically along " + uf.var + " with that loop, read only inside it" +
                           (folded ? " (it folds along " + f.args[in.fold_dim] + ")" : ""));
            if (uf.factor < in.fold_window)
                user_error(head + "one iteration of " + in.compute_loop + " reads " + std::to_string(in.fold_window) +
                           " slots of " + uf.var + "; the fold must hold at least that many");
            env.folds[f.name] = {d, uf.factor};
        }
        if (!same && f.stages.size() > 1) {
            // (A pure Func's iterations may overlap harmlessly: they write the same values.)
            FindRace fr;
            fr.name = f.name;
            fr.include(s);
            if (!fr.race.empty())
                user_error("weft: Func \"" + fname + "\" has update definitions and is stored outside the parallel loop " +
                           fr.race + " but computed inside it: iterations would update one buffer at once; store it at "
                           "or inside that loop (store_at), or make the loop serial");
        }
        CheckInside ci;
        ci.name = f.name;
        ci.include(s);
        if (ci.bad)
            user_error("weft: Func \"" + fname + "\" is computed at " + cname + "." + in.var +
                       ", but it is also used outside that loop (by another Func or stage, or store_at is inside "
                       "compute_at); compute it at an outer loop or at root");
        return s;
    }
};

}  // namespace

Stmt schedule_functions(Env &env, const std::map<std::string, Box> &output_boxes, std::vector<Stmt> &top_asserts,
                        const std::function<int(const std::string &)> &profile_id) {
    Builder b{env, top_asserts, profile_id};
    for (auto &f : env.funcs)
        for (auto &st : f.stages)
            if (st.fuse.fused()) {
                b.uses_compute_with = true;
                b.fused_members.insert(f.name);
                b.fused_members.insert(st.fuse_func);
            }
    std::vector<Stmt> outs;
    for (auto &f : env.funcs)
        if (f.output_index >= 0) outs.push_back(b.build_produce(f, output_boxes.at(f.name)));
    Stmt s = Block::make(outs);
    for (auto it = env.funcs.rbegin(); it != env.funcs.rend(); ++it)
        if (it->output_index < 0) s = b.inject(s, *it);
    return fuse_compute_with(env, s, b.fused_groups);
}

}  // namespace internal
}  // namespace weft
