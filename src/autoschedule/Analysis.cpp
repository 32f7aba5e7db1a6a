// The pipeline as automatic scheduling sees it (see Analysis.h).
#include "autoschedule/Analysis.h"
#include <algorithm>
#include <climits>
#include <set>
#include <sstream>
#include "ir/IRVisitor.h"
#include "ir/Simplify.h"
#include "lower/BoxesTouched.h"

namespace weft {
namespace internal {

double region_points(const ConstRegion &r) {
    double p = 1;
    for (auto &s : r) p *= (double)std::max<int64_t>(s.extent, 0);
    return p;
}

namespace {

int64_t constant_of(const Expr &e, const std::map<std::string, Expr> &consts, const std::string &what) {
    Expr s = simplify(substitute(consts, e));
    int64_t v;
    if (!is_const_int(s, &v)) {
        std::ostringstream os;
        os << s;
        user_error("weft: auto_schedule(): " + what + " is " + os.str() +
                   " at the estimated shapes, not a constant: give the Params it uses an estimate (set_estimate)");
    }
    return v;
}

class Calls : public IRVisitor {
public:
    std::vector<std::pair<std::string, std::vector<Expr>>> calls;

protected:
    void visit(const Call *op) override {
        IRVisitor::visit(op);
        if (op->call_type != Call::Intrinsic) calls.push_back({op->name, op->args});
    }
};

bool to_region(const Box &b, ConstRegion *out) {
    out->clear();
    for (auto &i : b) {
        int64_t lo, hi;
        if (!i.is_bounded() || !is_const_int(simplify(i.min), &lo) || !is_const_int(simplify(i.max), &hi)) return false;
        out->push_back({lo, std::max<int64_t>(hi - lo + 1, 0)});
    }
    return true;
}

ConstRegion region_union(const ConstRegion &a, const ConstRegion &b) {
    if (a.empty()) return b;
    if (b.empty()) return a;
    ConstRegion r = a;
    for (size_t d = 0; d < r.size() && d < b.size(); d++) {
        if (b[d].extent <= 0) continue;
        if (r[d].extent <= 0) {
            r[d] = b[d];
            continue;
        }
        int64_t lo = std::min(a[d].min, b[d].min), hi = std::max(a[d].min + a[d].extent, b[d].min + b[d].extent);
        r[d] = {lo, hi - lo};
    }
    return r;
}

}  // namespace

bool region_read(const FuncInfo &f, int stage, const ConstRegion &r, const std::string &callee, ConstRegion *out) {
    const StageInfo &s = f.stages[stage];
    Scope scope;
    for (size_t d = 0; d < f.f->args.size() && d < r.size(); d++)
        scope[f.f->args[d]] = Interval(IntImm::make(Int(32), r[d].min), IntImm::make(Int(32), r[d].min + r[d].extent - 1));
    for (size_t k = 0; k < s.rvars.size(); k++)
        scope[s.rvars[k]] =
            Interval(IntImm::make(Int(32), s.rdom[k].min), IntImm::make(Int(32), s.rdom[k].min + s.rdom[k].extent - 1));
    Box b = box_required(s.body, callee, scope);
    if (b.empty()) {
        // Not called, or a Func of no dimensions.
        for (auto &c : s.calls)
            if (c.first == callee && c.second.empty()) {
                out->clear();
                return true;
            }
        return false;
    }
    return to_region(b, out);
}

PipelineInfo analyze_pipeline(const Env &env, const ShapeEstimates &est) {
    PipelineInfo info;
    info.consts = est.scalars;
    for (auto &in : env.inputs) {
        auto it = est.inputs.find(in.name);
        if (it == est.inputs.end())
            user_error("weft: auto_schedule(): input \"" + in.name +
                       "\" has no estimate: call set_estimates({{min, extent}, ...}) on it");
        info.input_types[in.name] = in.type;
        int64_t stride = 1;
        for (int d = 0; d < in.dims && d < (int)it->second.size(); d++) {
            std::string p = in.name + ".";
            info.consts[p + "min." + std::to_string(d)] = IntImm::make(Int(32), it->second[d].min);
            info.consts[p + "extent." + std::to_string(d)] = IntImm::make(Int(32), it->second[d].extent);
            info.consts[p + "stride." + std::to_string(d)] = IntImm::make(Int(32), stride);
            stride = std::min<int64_t>(stride * std::max<int64_t>(std::min<int64_t>(it->second[d].extent, INT32_MAX), 1),
                                       INT32_MAX);  // (a stride past int32 only matters to the cost, not to legality)
        }
    }
    for (auto &p : env.params)
        if (!info.consts.count(p.name))
            info.consts[p.name] = Variable::make(p.param->type, p.name);  // stays symbolic

    for (auto &lf : env.funcs) {
        FuncInfo fi;
        fi.name = lf.name;
        fi.f = &lf;
        fi.output = lf.output_index >= 0;
        for (size_t k = 0; k < lf.stages.size(); k++) {
            const LStage &ls = lf.stages[k];
            StageInfo si;
            std::vector<Stmt> parts;
            for (auto &a : ls.args) parts.push_back(Evaluate::make(a));
            parts.push_back(Evaluate::make(ls.value));
            if (ls.predicate.defined()) parts.push_back(Evaluate::make(ls.predicate));
            Stmt body = parts.back();
            for (int i = (int)parts.size() - 2; i >= 0; i--) body = Block::make(parts[i], body);
            si.body = substitute(info.consts, body);
            for (auto &rv : ls.rvars) {
                si.rvars.push_back(rv.var);
                int64_t mn = constant_of(rv.min, info.consts, "the min of RVar \"" + rv.var + "\" of Func \"" + lf.name + "\"");
                int64_t ex = constant_of(rv.extent, info.consts, "the extent of RVar \"" + rv.var + "\" of Func \"" + lf.name + "\"");
                si.rdom.push_back({mn, std::max<int64_t>(ex, 0)});
            }
            Calls c;
            c.include(si.body);
            si.calls = c.calls;
            for (size_t d = 0; d < lf.args.size(); d++) {
                const std::string &v = lf.args[d];
                bool writes_at_v = k == 0;
                bool loops = k == 0;
                if (k > 0) {
                    for (size_t j = 0; j < ls.args.size(); j++) {
                        if (expr_uses_var(ls.args[j], v)) loops = true;
                        auto var = ls.args[j].as<Variable>();
                        if (j == d && var && var->name == v) writes_at_v = true;
                    }
                    bool only_here = true;
                    for (auto &[callee, args] : si.calls)
                        if (callee == lf.name) {
                            auto var = d < args.size() ? args[d].as<Variable>() : nullptr;
                            if (!var || var->name != v) only_here = false;
                        }
                    // (Other arguments of the left side may depend on v: two values of v still
                    // write two different places, v's own argument differing.)
                    writes_at_v = writes_at_v && only_here;
                }
                si.pure_parallel.push_back(writes_at_v);
                si.loops_over.push_back(loops);
            }
            fi.stages.push_back(std::move(si));
        }
        info.index[fi.name] = (int)info.funcs.size();
        info.funcs.push_back(std::move(fi));
    }
    // Consumers.
    for (auto &fi : info.funcs)
        for (auto &s : fi.stages)
            for (auto &[callee, args] : s.calls) {
                if (callee == fi.name || !info.is_func(callee)) continue;
                auto &cons = info.funcs[info.index[callee]].consumers;
                if (std::find(cons.begin(), cons.end(), fi.name) == cons.end()) cons.push_back(fi.name);
            }
    // Regions, consumers first.
    for (int i = (int)info.funcs.size() - 1; i >= 0; i--) {
        FuncInfo &fi = info.funcs[i];
        ConstRegion r;
        if (fi.output) {
            auto it = est.outputs.find(fi.name);
            if (it == est.outputs.end() || it->second.size() != fi.f->args.size())
                user_error("weft: auto_schedule(): output Func \"" + fi.name +
                           "\" has no estimate: call set_estimates({{min, extent}, ...}) on it");
            r = it->second;
        }
        for (auto &cn : fi.consumers) {
            const FuncInfo &c = info.func(cn);
            for (size_t k = 0; k < c.stages.size(); k++) {
                ConstRegion got;
                bool called = false;
                for (auto &call : c.stages[k].calls) called = called || call.first == fi.name;
                if (!called) continue;
                if (!region_read(c, (int)k, c.region, fi.name, &got)) {
                    // A region at the ends of int32 (an estimate running up to INT_MAX): the
                    // reads around it leave the int32 range, which is what to say.
                    std::string edge;
                    const int64_t margin = 1 << 16;
                    for (size_t d = 0; d < c.region.size() && edge.empty(); d++) {
                        int64_t lo = c.region[d].min, hi = c.region[d].min + c.region[d].extent - 1;
                        if (lo < (int64_t)INT32_MIN + margin || hi > (int64_t)INT32_MAX - margin)
                            edge = "; its region in dimension " + std::to_string(d) + ", [" + std::to_string(lo) +
                                   ", " + std::to_string(hi) +
                                   "], reaches the ends of int32, where the coordinates read around it overflow: "
                                   "give estimates well within the int32 range";
                    }
                    user_error("weft: auto_schedule(): cannot bound the region of Func \"" + fi.name + "\" that \"" + cn +
                               "\" reads at the estimated shapes" +
                               (edge.empty() ? " (clamp the coordinates, or give the Params an estimate)" : edge));
                }
                r = region_union(r, got);
            }
        }
        if (r.size() != fi.f->args.size()) r.assign(fi.f->args.size(), Span{0, 1});
        fi.region = r;
        for (size_t k = 0; k < fi.stages.size(); k++) {
            StageInfo &s = fi.stages[k];
            double it = 1;
            for (size_t d = 0; d < r.size(); d++)
                if (s.loops_over[d]) it *= (double)std::max<int64_t>(r[d].extent, 0);
            for (auto &sp : s.rdom) it *= (double)sp.extent;
            s.iterations = it;
        }
    }
    for (auto &fi : info.funcs)
        for (size_t k = 0; k < fi.stages.size(); k++) {
            // (Each input once per stage: region_read bounds all of a stage's calls to it, and a
            // stage may call it thousands of times.)
            std::set<std::string> inputs;
            for (auto &call : fi.stages[k].calls)
                if (!info.is_func(call.first)) inputs.insert(call.first);
            for (auto &name : inputs) {
                ConstRegion got;
                if (!region_read(fi, (int)k, fi.region, name, &got)) continue;
                info.inputs[name] = region_union(info.inputs[name], got);
            }
        }
    return info;
}

}  // namespace internal
}  // namespace weft
