// The algorithm-and-schedule part of the cache key (see CacheKey.h).
#include "lower/CacheKey.h"
#include <sstream>
#include "ir/IRVisitor.h"

namespace weft {
namespace internal {
namespace {

/** Canonical renaming for the cache key: names aside, structure only. */
class Canon : public IRMutator {
public:
    std::map<std::string, std::string> names;
    std::string get(const std::string &n) {
        auto it = names.find(n);
        if (it != names.end()) return it->second;
        std::string c = "n" + std::to_string(names.size());
        names[n] = c;
        return c;
    }

protected:
    Expr visit(const Variable *op, const Expr &e) override {
        auto dot = op->name.find('.');
        if (dot != std::string::npos && names.count(op->name.substr(0, dot)))
            return Variable::make(op->type, names[op->name.substr(0, dot)] + op->name.substr(dot));
        return Variable::make(op->type, get(op->name));
    }
    Expr visit(const Call *op, const Expr &e) override {
        Expr r = IRMutator::visit(op, e);
        auto c = r.as<Call>();
        if (c->call_type == Call::Intrinsic) return r;
        auto m = std::make_shared<Call>(c->type, get(c->name), c->args, c->call_type);
        m->value_index = c->value_index;
        return Expr(m);
    }
    Expr visit(const Let *op, const Expr &e) override {
        std::string n = get(op->name);
        return Let::make(n, mutate(op->value), mutate(op->body));
    }
};

std::vector<Dim> initial_loops(const LFunc &f, size_t k);

}  // namespace

std::string cache_key(const Env &env) {
    // The definitions, then the schedule.
    std::ostringstream os;
    Canon canon;
    for (auto &in : env.inputs) os << "input " << canon.get(in.name) << " " << in.type.str() << " " << in.dims << (in.buffer ? " buf" : " img") << "\n";
    for (auto &p : env.params) os << "param " << canon.get(p.name) << " " << p.param->type.str() << "\n";
    for (auto &f : env.funcs) {
        os << "func " << canon.get(f.name) << " " << f.type.str();
        for (auto &t : f.types) os << "," << t.str();
        os << " out=" << f.output_index << " (";
        if (f.contents && (f.contents->trace_stores || f.contents->trace_loads || f.contents->trace_realizations))
            os << "traced " << f.contents->trace_stores << f.contents->trace_loads << f.contents->trace_realizations << " as \""
               << f.contents->name << "\" ";
        for (auto &a : f.args) os << canon.get(a) << ",";
        os << ")\n";
        for (auto &s : f.stages) {
            os << "  (";
            for (auto &a : s.args) os << canon.mutate(a) << ",";
            os << ") = " << canon.mutate(s.value);
            for (auto &rv : s.rvars) os << " rv " << canon.get(rv.var) << " " << canon.mutate(rv.min) << " " << canon.mutate(rv.extent);
            if (s.predicate.defined()) os << " where " << canon.mutate(s.predicate);
            os << "\n";
        }
    }
    os << serialize_schedule(rename_schedule(env.effective, [&](const std::string &n) { return canon.get(n); },
                                             [&](const Expr &e) { return canon.mutate(e); }));
    return os.str();
}

}  // namespace internal
}  // namespace weft
