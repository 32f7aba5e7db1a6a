// The order Funcs are realized in (see RealizationOrder.h).
#include "lower/RealizationOrder.h"
#include <functional>
#include "ir/IRVisitor.h"

namespace weft {
namespace internal {

std::vector<std::string> funcs_called(const LStage &s) {
    class CallsOf : public IRVisitor {
    public:
        std::vector<std::string> names;

    protected:
        void visit(const Call *op) override {
            if (op->call_type == Call::Func) names.push_back(op->name);
            IRVisitor::visit(op);
        }
    } co;
    LStage copy = s;
    for_each_expr(copy, [&](Expr &e) { co.include(e); });
    return co.names;
}

std::vector<std::string> realization_order(const std::vector<LFunc> &funcs, const std::map<std::string, int> &index,
                                           const std::vector<std::string> &outputs) {
    std::vector<std::string> order;
    std::map<std::string, int> state;
    std::function<void(const std::string &)> dfs = [&](const std::string &n) {
        int &st = state[n];
        if (st == 2) return;
        if (st == 1) return;  // self or mutual recursion only through updates of the same Func
        st = 1;
        for (auto &s : funcs[index.at(n)].stages)
            for (auto &c : funcs_called(s))
                if (c != n) dfs(c);
        state[n] = 2;
        order.push_back(n);
    };
    for (auto &o : outputs) dfs(o);
    return order;
}

}  // namespace internal
}  // namespace weft
