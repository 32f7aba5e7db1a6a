// Func::trace_stores / trace_loads / trace_realizations (see Tracing.h).
#include "lower/Tracing.h"
#include <map>
#include "ir/IRVisitor.h"

namespace weft {
namespace internal {

namespace {

struct Traced {
    std::string user;
    bool stores = false, loads = false, realizations = false;
};

/** trace(value, head, a0, ", ", a1, ..., tail[, shown]): one line "head a0, a1, ... tail shown". */
Expr trace_line(const Expr &value, const std::string &head, const std::vector<Expr> &args, const std::string &tail,
                const Expr &shown = Expr()) {
    std::vector<Expr> pieces = {value, StringImm::make(head)};
    for (size_t i = 0; i < args.size(); i++) {
        if (i) pieces.push_back(StringImm::make(", "));
        pieces.push_back(args[i]);
    }
    pieces.push_back(StringImm::make(tail));
    if (shown.defined()) pieces.push_back(shown);
    return Call::make_intrinsic(value.type(), "trace", pieces);
}

class InjectTracing : public IRMutator {
public:
    explicit InjectTracing(const std::map<std::string, Traced> &t) : traced(t) {}

protected:
    const std::map<std::string, Traced> &traced;

    int lets = 0;

    /** value bound once (it is both the result and the line's last piece, and a traced load
        inside it prints its own line before this one). */
    Expr traced_value(const Expr &value, const std::string &head, const std::vector<Expr> &args) {
        std::string n = "trace.v" + std::to_string(lets++);
        Expr v = Variable::make(value.type(), n);
        return Let::make(n, value, trace_line(v, head, args, ") = ", v));
    }
    const Traced *find(const std::string &name) const {
        auto it = traced.find(name);
        return it == traced.end() ? nullptr : &it->second;
    }
    Expr visit(const Call *op, const Expr &e) override {
        Expr r = IRMutator::visit(op, e);
        const Traced *t = op->call_type == Call::Func ? find(op->name) : nullptr;
        if (!t || !t->loads) return r;
        return traced_value(r, "Load " + t->user + "." + std::to_string(op->value_index) + "(", r.as<Call>()->args);
    }
    Stmt visit(const Provide *op, const Stmt &s) override {
        Stmt r = IRMutator::visit(op, s);
        const Traced *t = find(op->name);
        auto p = r.as<Provide>();
        if (!t || !t->stores || p->atomic) return r;  // (an atomic update's value is its read-modify-write)
        if (const Call *tuple = tuple_call(p->value)) {  // a line per value: f.0, f.1, ...
            std::vector<Expr> values;
            for (size_t i = 0; i < tuple->args.size(); i++)
                values.push_back(traced_value(tuple->args[i], "Store " + t->user + "." + std::to_string(i) + "(", p->args));
            return Provide::make(p->name, Call::make_intrinsic(tuple->type, "tuple", values), p->args, p->atomic);
        }
        return Provide::make(p->name, traced_value(p->value, "Store " + t->user + ".0(", p->args), p->args, p->atomic);
    }
    Stmt visit(const Realize *op, const Stmt &s) override {
        Stmt r = IRMutator::visit(op, s);
        const Traced *t = find(op->name);
        if (!t || !t->realizations) return r;
        std::vector<Expr> bounds;
        for (auto &b : op->bounds) {
            bounds.push_back(b.min);
            bounds.push_back(b.extent);
        }
        auto line = [&](const std::string &what) {
            return Evaluate::make(trace_line(Expr(0), what + " realization " + t->user + ".0(", bounds, ")"));
        };
        return Block::make({line("Begin"), r, line("End")});
    }
};

}  // namespace

Stmt inject_tracing(const Stmt &s, const Env &env) {
    std::map<std::string, Traced> traced;
    for (auto &f : env.funcs) {
        const auto &c = f.contents;
        if (!c || !(c->trace_stores || c->trace_loads || c->trace_realizations)) continue;
        traced[f.name] = {c->name, c->trace_stores, c->trace_loads, c->trace_realizations};
    }
    if (traced.empty()) return s;
    return InjectTracing(traced).mutate(s);
}

}  // namespace internal
}  // namespace weft
