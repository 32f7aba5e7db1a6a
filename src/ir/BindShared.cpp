#include "ir/BindShared.h"
#include <algorithm>
#include <climits>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>
#include "ir/IRVisitor.h"

namespace weft {
namespace internal {

namespace {

struct NodeInfo {
    uint64_t tree_size = 0;  // nodes of the node's tree (saturating)
    int parents = 0;         // how many times the graph refers to it
    bool bindable = true;    // uses no name that a Let inside the expression binds, other than its own Lets'
};

constexpr uint64_t kSaturate = (uint64_t)1 << 62;
constexpr int kNoLetUse = INT_MAX;

/** One walk over the graph (each node once): tree sizes, parent counts, and which nodes use a
    name bound by a Let around them. Each Let's name gets the Let's nesting depth (1 for the
    outermost): a node uses a name bound around it exactly when the smallest depth among the
    Let names it uses is at most the number of Lets around it, and names bound inside it are
    deeper (so one number per node, not a set of names: expressions whose Lets are bound shared
    values, as the inliner's are, would make every node's set hold most of the names). A use of
    a Let's name outside its scope counts as depth 0 (bound around everything). This needs the
    Let names first (find_lets) and each bound by one Let only: `duplicate` says where that is
    not so. (An IRMutator that changes nothing: its visits reach every child of every node
    type.) */
class Measure : public IRMutator {
public:
    std::unordered_map<const ExprNode *, NodeInfo> info;
    bool duplicate = false;

    /** First, the names e's Lets bind (each node of the graph once). */
    void find_lets(const Expr &e) {
        class Lets : public GraphMutator {
        public:
            std::unordered_map<std::string, int> *depth_of;
            bool *duplicate;

        protected:
            Expr mutate_once(const Expr &x) override {
                if (auto l = x.as<Let>())
                    if (!depth_of->emplace(l->name, 0).second) *duplicate = true;
                return IRMutator::mutate(x);
            }
        } lets;
        lets.depth_of = &depth_of_;
        lets.duplicate = &duplicate;
        lets.mutate(e);
    }

    Expr mutate(const Expr &e) override {
        if (!e.defined()) return e;
        if (auto v = e.as<Variable>()) {  // per use: the same node may sit in and out of a Let's scope
            auto b = depth_of_.find(v->name);
            if (b != depth_of_.end()) min_use_ = std::min(min_use_, b->second);
        }
        auto it = info.find(e.get());
        if (it != info.end()) {
            it->second.parents++;
            size_ = std::min(kSaturate, size_ + it->second.tree_size);
            min_use_ = std::min(min_use_, min_use_of_.at(e.get()));
            return e;
        }
        uint64_t saved_size = size_;
        int saved_min = min_use_;
        size_ = 0;
        min_use_ = kNoLetUse;
        if (auto l = e.as<Let>()) {
            mutate(l->value);
            depth_of_[l->name] = ++depth_;
            mutate(l->body);
            depth_--;
            depth_of_[l->name] = 0;
        } else {
            IRMutator::mutate(e);  // children's sizes and uses accumulate in size_ and min_use_
        }
        NodeInfo n;
        n.tree_size = std::min(kSaturate, size_ + 1);
        n.parents = 1;
        n.bindable = min_use_ > depth_;
        min_use_of_[e.get()] = min_use_;
        size_ = std::min(kSaturate, saved_size + n.tree_size);
        min_use_ = std::min(saved_min, min_use_);
        info.emplace(e.get(), n);
        return e;
    }

private:
    uint64_t size_ = 0;
    int min_use_ = kNoLetUse;  // smallest depth among the Let names used so far in the current node
    int depth_ = 0;            // Lets around the current node
    // A Let name's depth while in its scope, else 0: a use of the name outside its Let (another
    // value of the same name, or the same node at another place) counts as bound around
    // everything, so what uses it is never moved.
    std::unordered_map<std::string, int> depth_of_;
    std::unordered_map<const ExprNode *, int> min_use_of_;
};

/** Rebuilds the graph once per node, a shared node of some size becoming a name bound in order. */
class Bind : public GraphMutator {
public:
    explicit Bind(const std::unordered_map<const ExprNode *, NodeInfo> &info) : info_(info) {}
    std::vector<std::pair<std::string, Expr>> bindings;  // innermost dependency first

protected:
    Expr mutate_once(const Expr &e) override {
        Expr r = IRMutator::mutate(e);
        const NodeInfo &n = info_.at(e.get());
        if (n.parents > 1 && n.tree_size >= kMinBoundSize && n.bindable && !r.as<Variable>()) {
            std::string name = unique_name('s');
            bindings.push_back({name, r});
            r = Variable::make(r.type(), name);
        }
        return r;
    }

private:
    const std::unordered_map<const ExprNode *, NodeInfo> &info_;
};

}  // namespace

Expr bind_shared_subexpressions(const Expr &e) {
    if (!e.defined()) return e;
    Measure m;
    m.find_lets(e);
    m.mutate(e);
    uint64_t tree = m.info.at(e.get()).tree_size, graph = m.info.size();
    if (tree < kMinTreeSize || tree < kMinTreeRatio * graph) return e;
    if (m.duplicate) return e;  // one name bound by two Lets: which uses are whose is not tracked
    Bind b(m.info);
    Expr body = b.mutate(e);
    for (auto it = b.bindings.rbegin(); it != b.bindings.rend(); ++it) body = Let::make(it->first, it->second, body);
    return body;
}

}  // namespace internal
}  // namespace weft
