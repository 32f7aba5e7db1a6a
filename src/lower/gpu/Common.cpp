#include "lower/gpu/Common.h"
#include <algorithm>
#include <cctype>

namespace weft {
namespace internal {
namespace gpu {

std::string block_var(int d) { return std::string("blockIdx.") + dim_letter(d); }
int block_dim_of(const std::string &n) {
    for (int d = 0; d < 3; d++)
        if (n == block_var(d)) return d;
    return -1;
}
std::string thread_var(int d) { return std::string("threadIdx.") + dim_letter(d); }

void FindLoops::visit(const For *op) {
    block |= op->for_type == ForType::GPUBlock;
    thread |= op->for_type == ForType::GPUThread;
    IRVisitor::visit(op);
}
void FindLoops::visit(const Store *op) {
    store = true;
    IRVisitor::visit(op);
}
FindLoops find_loops(const Stmt &s) {
    FindLoops f;
    f.include(s);
    return f;
}

void Accesses::visit(const For *op) {
    loops.push_back(op->name);
    IRVisitor::visit(op);
    loops.pop_back();
}
void Accesses::visit(const Load *op) {
    if (!in_atomic || in_atomic->name != op->name) not_atomic.insert(op->name);
    LoadsStores::visit(op);
}
void Accesses::visit(const Store *op) {
    bool pure = false;
    for (auto &l : loops) pure = pure || l.rfind(op->name + ".s0.", 0) == 0;
    (pure ? pure_writes : other_writes).insert(op->name);
    (op->atomic ? atomic_only : not_atomic).insert(op->name);
    const Store *outer = in_atomic;
    if (op->atomic) in_atomic = op;
    LoadsStores::visit(op);
    in_atomic = outer;
}
void Accesses::visit(const Allocate *op) {
    allocs.insert(op->name);
    IRVisitor::visit(op);
}
void Accesses::finish() {
    for (auto &a : allocs) {
        reads.erase(a);
        writes.erase(a);
    }
    for (auto &w : other_writes) pure_writes.erase(w);
    for (auto it = pure_writes.begin(); it != pure_writes.end();) it = writes.count(*it) ? std::next(it) : pure_writes.erase(it);
    for (auto &n : not_atomic) atomic_only.erase(n);
    for (auto it = atomic_only.begin(); it != atomic_only.end();) it = writes.count(*it) ? std::next(it) : atomic_only.erase(it);
}

void ThreadDepth::visit(const For *op) {
    bool t = op->for_type == ForType::GPUThread;
    depth += t;
    max_depth = std::max(max_depth, depth);
    IRVisitor::visit(op);
    depth -= t;
}

bool intersects(const std::set<std::string> &a, const std::set<std::string> &b) {
    for (auto &x : a)
        if (b.count(x)) return true;
    return false;
}

bool constant_upper_bound(Expr e, const Scope &scope, int64_t *out) {
    Scope sc = scope;
    for (int d = 0; d < 3; d++) sc[block_var(d)] = Interval(Expr(0), Expr());
    return constant_upper_bound_in_scope(e, sc, out);
}

Stmt barrier() { return Evaluate::make(Call::make_intrinsic(Int(32), "gpu_thread_barrier", {})); }
int count_barriers(const Stmt &s) {
    class Count : public IRVisitor {
    public:
        int n = 0;

    protected:
        void visit(const Call *op) override {
            n += op->is_intrinsic("gpu_thread_barrier");
            IRVisitor::visit(op);
        }
    } c;
    c.include(s);
    return c.n;
}

}  // namespace gpu
}  // namespace internal
}  // namespace weft
