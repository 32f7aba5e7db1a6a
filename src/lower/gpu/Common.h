// What the GPU lowering passes share: the names of the canonical form's block and thread
// variables, and small analyses of loop nests (which GPU loops a statement has, the buffers it
// reads and writes, its thread nesting depth, barriers).
#pragma once
#include <set>
#include <string>
#include <vector>
#include "ir/IRVisitor.h"
#include "ir/Interval.h"

namespace weft {
namespace internal {
namespace gpu {

/** 'x', 'y', 'z' for dimension 0, 1, 2. */
inline char dim_letter(int d) { return "xyz"[d]; }
/** "blockIdx.x" ... for dimension d. */
std::string block_var(int d);
/** 0, 1, 2 for blockIdx.x, .y, .z; -1 for another name. */
int block_dim_of(const std::string &n);
/** "threadIdx.x" ... for dimension d. */
std::string thread_var(int d);

/** Which GPU loops and stores a statement has. */
class FindLoops : public IRVisitor {
public:
    bool block = false, thread = false, store = false;

protected:
    void visit(const For *op) override;
    void visit(const Store *op) override;
};
FindLoops find_loops(const Stmt &s);

/** Buffers read and written by a statement, minus those it allocates itself (call finish()
    after include()). */
struct Accesses : public LoadsStores {
    std::set<std::string> allocs;
    // Buffers written only inside the loops of their pure definition (stage s0): such a
    // definition's loops write each point once, so writes of it from different threads never
    // overlap (write after write needs no barrier between them).
    std::set<std::string> pure_writes, other_writes;
    // Buffers accessed only by atomic updates (Store::atomic, and their reads of the element
    // they update): such updates from different threads commute (no barrier between them).
    std::set<std::string> atomic_only, not_atomic;
    std::vector<std::string> loops;
    const Store *in_atomic = nullptr;
    void visit(const For *op) override;
    void visit(const Load *op) override;
    void visit(const Store *op) override;
    void visit(const Allocate *op) override;
    void finish();
};

/** The maximum number of nested GPUThread loops on any path. */
class ThreadDepth : public IRVisitor {
public:
    int depth = 0, max_depth = 0;

protected:
    void visit(const For *op) override;
};

/** The free variables of an Expr. */
class FreeVars : public IRVisitor {
public:
    std::set<std::string> names;

protected:
    void visit(const Variable *op) override { names.insert(op->name); }
};

bool intersects(const std::set<std::string> &a, const std::set<std::string> &b);

/** A constant upper bound of e (an integer), knowing the ranges in scope; block indices
    are >= 0. */
bool constant_upper_bound(Expr e, const Scope &scope, int64_t *out);

/** A barrier for the block's threads (the "gpu_thread_barrier" intrinsic), and how many a
    statement has. */
Stmt barrier();
int count_barriers(const Stmt &s);

}  // namespace gpu
}  // namespace internal
}  // namespace weft
