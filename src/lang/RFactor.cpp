// Stage::rfactor(): a reduction split into an intermediate Func that reduces over part of the
// RDom (in parallel over the preserved RVars, now pure Vars) and a merge over the rest.
#include <algorithm>
#include "ir/IRVisitor.h"
#include "lang/Function.h"

namespace weft {
using namespace internal;

Func Stage::rfactor(const RVar &r, const Var &v) { return rfactor(std::vector<std::pair<RVar, Var>>{{r, v}}); }

Func Stage::rfactor(const std::vector<std::pair<RVar, Var>> &preserved) {
    check_func(f_);
    FunctionContents &f = *f_;
    const std::string what = "weft: " + stage_name(f, stage_) + ".rfactor()";
    if (stage_ == 0) user_error(what + ": only an update definition (a reduction) can be factored");
    check_one_value(f, "rfactor()");
    Definition &d = f.updates.at(stage_ - 1);
    if (!d.rdom) user_error(what + ": this update has no RDom");
    // Splits of RVars scheduled so far become RVars of their own (so they can be factored).
    {
        auto dom2 = std::make_shared<ReductionDomainContents>(*d.rdom);
        std::map<std::string, Expr> subs;
        std::vector<Split> remaining;
        auto rvar = [&](const std::string &n) {
            auto v = std::make_shared<Variable>(Int(32), n);
            v->rdom = dom2;
            return Expr(v);
        };
        for (auto &sp : f.stage_schedules.at(stage_).schedule.splits) {
            auto it = std::find_if(dom2->domain.begin(), dom2->domain.end(),
                                   [&](const ReductionVariable &rv) { return rv.var == sp.old_var; });
            bool on_rvar = it != dom2->domain.end() ||
                           std::any_of(dom2->domain.begin(), dom2->domain.end(), [&](const ReductionVariable &rv) {
                               return rv.var == sp.inner || rv.var == sp.outer;
                           });
            if (!on_rvar) {
                remaining.push_back(sp);
                continue;
            }
            int64_t F;
            if (sp.kind != Split::SplitVar || !is_const_int(sp.factor, &F) || it == dom2->domain.end())
                user_error(what + ": RVars that were fused, or split by a non-constant factor, cannot be factored");
            ReductionVariable old = *it;
            ReductionVariable in{sp.inner, Expr(0), Expr((int)F)}, out{sp.outer, Expr(0), (old.extent + (int)F - 1) / (int)F};
            size_t pos = it - dom2->domain.begin();
            dom2->domain[pos] = in;
            dom2->domain.insert(dom2->domain.begin() + pos + 1, out);
            Expr value = old.min + rvar(sp.outer) * (int)F + rvar(sp.inner);
            int64_t e;
            if (!(is_const_int(old.extent, &e) && e % F == 0)) {
                Expr guard = value < old.min + old.extent;
                dom2->predicate = dom2->predicate.defined() ? (dom2->predicate && guard) : guard;
            }
            for (auto &kv : subs) kv.second = substitute(old.var, value, kv.second);
            subs[old.var] = value;
        }
        class Retarget : public IRMutator {
        public:
            std::map<std::string, Expr> subs;
            std::shared_ptr<ReductionDomainContents> dom;

        protected:
            Expr visit(const Variable *op, const Expr &e) override {
                auto it = subs.find(op->name);
                if (it != subs.end()) return it->second;
                if (op->rdom) {
                    auto v = std::make_shared<Variable>(op->type, op->name);
                    v->rdom = dom;
                    return Expr(v);
                }
                return e;
            }
        } rt;
        rt.subs = subs;
        rt.dom = dom2;
        for (auto &a : d.args) a = rt.mutate(a);
        d.value = rt.mutate(d.value);
        if (dom2->predicate.defined()) dom2->predicate = rt.mutate(dom2->predicate);
        // The domain's own RVars are referred to by name inside its predicate.
        class Strip : public IRMutator {
        protected:
            Expr visit(const Variable *op, const Expr &e) override {
                return op->rdom ? Variable::make(op->type, op->name) : e;
            }
        } strip;
        if (dom2->predicate.defined()) dom2->predicate = strip.mutate(dom2->predicate);
        d.rdom = dom2;
        f.stage_schedules.at(stage_).schedule.splits = remaining;
    }
    // The update must be f(args) = op(f(args), rest) for an associative and commutative op. Each
    // argument is f's pure Var at its own place or a computed index (a histogram's bin) that
    // reads only such Vars and the RDom (an update definition cannot be written otherwise): the
    // intermediate then writes at that index too, and the merge reduces it at f's pure Vars.
    auto is_self = [&](const Expr &e) {
        auto c = e.as<Call>();
        if (!c || c->call_type != Call::Func || c->func || c->name != f.name) return false;
        for (size_t i = 0; i < c->args.size(); i++)
            if (!equal(c->args[i], d.args[i])) return false;
        return true;
    };
    IRNodeType op;
    Expr rest;
    IRNodeType nt = d.value.get()->node_type;
    bool assoc = nt == IRNodeType::Add || nt == IRNodeType::Mul || nt == IRNodeType::Min || nt == IRNodeType::Max;
    auto bin = assoc ? static_cast<const BinaryExprNode *>(d.value.get()) : nullptr;
    if (bin && (is_self(bin->a) || is_self(bin->b))) {
        op = nt;
        rest = is_self(bin->a) ? bin->b : bin->a;
    } else {
        user_error(what + ": the update is not f(x) = f(x) op e for an associative op (+, *, min, max): " +
                   to_string(d.value));
    }
    if (self_reads(f, d.args, rest).total()) user_error(what + ": the reduced value reads the Func itself again; it cannot be reordered");
    Type t = f.type;
    Expr identity = op == IRNodeType::Add ? make_zero(t) : op == IRNodeType::Mul ? make_one(t)
                    : op == IRNodeType::Min ? t.max() : t.min();
    auto &dom = d.rdom->domain;
    std::map<std::string, std::string> keep;  // preserved RVar -> new Var
    for (auto &p : preserved) {
        bool found = false;
        for (auto &rv : dom) found |= rv.var == p.first.name();
        if (!found) user_error(what + ": \"" + p.first.name() + "\" is not an RVar of this update's RDom");
        if (std::find(f.args.begin(), f.args.end(), p.second.name()) != f.args.end())
            user_error(what + ": \"" + p.second.name() + "\" is already a Var of " + f.name);
        keep[p.first.name()] = p.second.name();
    }
    // The RDom over what is left (for the intermediate) and over what is kept (for the merge).
    auto left = std::make_shared<ReductionDomainContents>(), kept = std::make_shared<ReductionDomainContents>();
    left->name = d.rdom->name + "_left";
    kept->name = d.rdom->name + "_kept";
    for (auto &rv : dom) (keep.count(rv.var) ? kept : left)->domain.push_back(rv);
    class Retarget : public IRMutator {
    public:
        std::map<std::string, Expr> to;
        std::shared_ptr<ReductionDomainContents> left;

    protected:
        Expr visit(const Variable *op, const Expr &e) override {
            auto it = to.find(op->name);
            if (it != to.end()) return it->second;
            if (op->rdom) {
                auto v = std::make_shared<Variable>(op->type, op->name);
                v->rdom = left;
                return Expr(v);
            }
            return e;
        }
    } rt;
    for (auto &k : keep) rt.to[k.first] = Variable::make(Int(32), k.second);
    rt.left = left;
    if (d.rdom->predicate.defined()) left->predicate = rt.mutate(d.rdom->predicate);
    Expr intm_value = rt.mutate(rest);
    // intermediate(x..., v...) = identity; intermediate(x..., v...) = op(intermediate(...), rest)
    Func intm(f.name + "_intm");
    std::vector<Var> ivars;
    for (auto &a : f.args) ivars.emplace_back(a);
    for (auto &p : preserved) ivars.push_back(p.second);
    intm(ivars) = identity;
    // The intermediate's update writes where the update wrote (preserved RVars become its Vars).
    std::vector<Expr> uargs;
    for (auto &a : d.args) uargs.push_back(rt.mutate(a));
    for (auto &p : preserved) uargs.push_back(p.second);
    Expr cur = intm(uargs);
    if (left->domain.empty()) {
        Expr pred = left->predicate;
        Expr v = rebuild_binary(op, cur, intm_value);
        intm(uargs) = pred.defined() ? select(pred, v, cur) : v;
    } else {
        intm(uargs) = rebuild_binary(op, cur, intm_value);
    }
    // This stage now reduces the intermediate over the kept RVars.
    std::vector<Expr> margs;
    for (auto &a : f.args) margs.push_back(Var(a));
    for (auto &p : preserved) {
        auto v = std::make_shared<Variable>(Int(32), p.first.name());
        v->rdom = kept;
        margs.push_back(Expr(v));
    }
    std::vector<Expr> pure_args;
    for (auto &a : f.args) pure_args.push_back(Variable::make(Int(32), a));
    auto self = std::make_shared<Call>(t, f.name, pure_args, Call::Func);
    d.args = pure_args;
    d.value = rebuild_binary(op, Expr(self), Expr(intm(margs)));
    d.rdom = kept;
    f.stage_schedules.at(stage_) = DefinitionSchedule{default_stage_schedule(f.args, d.args, [&] {
        std::vector<std::string> r;
        for (auto &rv : kept->domain) r.push_back(rv.var);
        return r;
    }(), true), {}};
    changed(*f_);
    return intm;
}

}  // namespace weft
