#include "lower/BoxesTouched.h"
#include <optional>
#include "ir/IRVisitor.h"
#include "ir/Simplify.h"

namespace weft {
namespace internal {
namespace {

class Touched : public IRVisitor {
public:
    Touched(const std::string &n, bool calls, const Scope &outer) : name(n), calls(calls), scope(outer) {}
    std::string name;
    bool calls;
    Scope scope;
    Box box;

    void add(const std::vector<Expr> &args) {
        Box b;
        for (auto &a : args) b.push_back(bounds_of_expr_in_scope(a, scope));
        box = box_union(box, b);
    }

protected:
    void visit(const Call *op) override {
        IRVisitor::visit(op);
        if (calls && op->call_type != Call::Intrinsic && op->name == name) add(op->args);
    }
    void visit(const Provide *op) override {
        IRVisitor::visit(op);
        if (!calls && op->name == name) add(op->args);
    }
    void visit(const Let *op) override {
        include(op->value);
        Interval v = bounds_of_expr_in_scope(op->value, scope);
        auto saved = scope.find(op->name) != scope.end() ? std::optional<Interval>(scope[op->name]) : std::nullopt;
        scope[op->name] = v;
        include(op->body);
        if (saved) scope[op->name] = *saved;
        else scope.erase(op->name);
    }
    void visit(const LetStmt *op) override {
        include(op->value);
        Interval v = bounds_of_expr_in_scope(op->value, scope);
        auto saved = scope.find(op->name) != scope.end() ? std::optional<Interval>(scope[op->name]) : std::nullopt;
        scope[op->name] = v;
        include(op->body);
        if (saved) scope[op->name] = *saved;
        else scope.erase(op->name);
    }
    void visit(const For *op) override {
        include(op->min);
        include(op->extent);
        Interval mi = bounds_of_expr_in_scope(op->min, scope);
        Interval last = bounds_of_expr_in_scope(simplify(op->min + op->extent - 1), scope);
        auto saved = scope.find(op->name) != scope.end() ? std::optional<Interval>(scope[op->name]) : std::nullopt;
        scope[op->name] = Interval(mi.min, last.max);
        include(op->body);
        if (saved) scope[op->name] = *saved;
        else scope.erase(op->name);
    }
};
}  // namespace

Box box_union(const Box &a, const Box &b) {
    if (a.empty()) return b;
    if (b.empty()) return a;
    Box r;
    for (size_t i = 0; i < a.size() && i < b.size(); i++) r.push_back(interval_union(a[i], b[i]));
    return r;
}

Box box_required(const Stmt &s, const std::string &name, const Scope &outer) {
    Touched t(name, true, outer);
    t.include(s);
    return t.box;
}
Box box_provided(const Stmt &s, const std::string &name, const Scope &outer) {
    Touched t(name, false, outer);
    t.include(s);
    return t.box;
}

}  // namespace internal
}  // namespace weft
