#include "ir/BindShared.h"
#include <algorithm>
#include <iterator>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>
#include "ir/IRVisitor.h"
#include "weft/Func.h"

namespace weft {
namespace internal {

namespace {

struct NodeInfo {
    uint64_t tree_size = 0;  // nodes of the node's tree (saturating)
    int parents = 0;         // how many times the graph refers to it
    std::vector<std::string> free_inner;  // names bound by Lets inside the expression it uses freely (sorted)
};

constexpr uint64_t kSaturate = (uint64_t)1 << 62;

void merge_into(std::vector<std::string> &a, const std::vector<std::string> &b) {
    if (b.empty()) return;
    std::vector<std::string> r;
    std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(r));
    a.swap(r);
}

/** One walk over the graph (each node once): tree sizes, parent counts, the names bound inside
    that each node uses freely. (An IRMutator that changes nothing: its visits reach every child of
    every node type.) */
class Measure : public IRMutator {
public:
    std::unordered_map<const ExprNode *, NodeInfo> info;
    std::set<std::string> let_names;

    Expr mutate(const Expr &e) override {
        if (!e.defined()) return e;
        auto it = info.find(e.get());
        if (it != info.end()) {
            it->second.parents++;
            add(it->second);
            return e;
        }
        uint64_t saved_size = size_;
        std::vector<std::string> saved_free;
        saved_free.swap(free_);
        size_ = 0;
        if (auto l = e.as<Let>()) {
            let_names.insert(l->name);  // (before its body: the uses come after)
            mutate(l->value);
            std::vector<std::string> of_value;
            of_value.swap(free_);
            mutate(l->body);
            free_.erase(std::remove(free_.begin(), free_.end(), l->name), free_.end());
            merge_into(free_, of_value);
        } else {
            IRMutator::mutate(e);  // children's sizes and names accumulate in size_ and free_
            if (auto v = e.as<Variable>())
                if (let_names.count(v->name)) free_ = {v->name};
        }
        NodeInfo n;
        n.tree_size = std::min(kSaturate, size_ + 1);
        n.parents = 1;
        n.free_inner.swap(free_);
        size_ = saved_size;
        free_.swap(saved_free);
        add(n);
        info.emplace(e.get(), std::move(n));
        return e;
    }

private:
    uint64_t size_ = 0;
    std::vector<std::string> free_;
    void add(const NodeInfo &n) {
        size_ = std::min(kSaturate, size_ + n.tree_size);
        merge_into(free_, n.free_inner);
    }
};

/** Rebuilds the graph once per node, a shared node of some size becoming a name bound in order. */
class Bind : public IRMutator {
public:
    explicit Bind(const std::unordered_map<const ExprNode *, NodeInfo> &info) : info_(info) {}
    std::vector<std::pair<std::string, Expr>> bindings;  // innermost dependency first

    Expr mutate(const Expr &e) override {
        if (!e.defined()) return e;
        auto m = done_.find(e.get());
        if (m != done_.end()) return m->second;
        Expr r = IRMutator::mutate(e);
        const NodeInfo &n = info_.at(e.get());
        if (n.parents > 1 && n.tree_size >= kMinBoundSize && n.free_inner.empty() && !r.as<Variable>()) {
            std::string name = unique_name('s');
            bindings.push_back({name, r});
            r = Variable::make(r.type(), name);
        }
        done_[e.get()] = r;
        return r;
    }

private:
    const std::unordered_map<const ExprNode *, NodeInfo> &info_;
    std::unordered_map<const ExprNode *, Expr> done_;
};

}  // namespace

Expr bind_shared_subexpressions(const Expr &e) {
    if (!e.defined()) return e;
    Measure m;
    m.mutate(e);
    uint64_t tree = m.info.at(e.get()).tree_size, graph = m.info.size();
    if (tree < kMinTreeSize || tree < kMinTreeRatio * graph) return e;
    Bind b(m.info);
    Expr body = b.mutate(e);
    for (auto it = b.bindings.rbegin(); it != b.bindings.rend(); ++it) body = Let::make(it->first, it->second, body);
    return body;
}

}  // namespace internal
}  // namespace weft
