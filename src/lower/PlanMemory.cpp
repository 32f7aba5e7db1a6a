// Memory planning (see PlanMemory.h).
#include "lower/PlanMemory.h"
#include <algorithm>
#include <map>
#include <sstream>
#include "ir/IRVisitor.h"

namespace weft {
namespace internal {
namespace {

/** The buffers a statement or Expr touches: loads, stores and base pointers (Handle Variables). */
class Touched : public IRVisitor {
public:
    std::set<std::string> names;

protected:
    void visit(const Load *op) override {
        names.insert(op->name);
        IRVisitor::visit(op);
    }
    void visit(const Store *op) override {
        names.insert(op->name);
        IRVisitor::visit(op);
    }
    void visit(const Variable *op) override {
        if (op->type.is_handle()) names.insert(op->name);
    }
};

struct HeapBuffer {
    const Allocate *op;
    int first = 0;          // its first top-level statement
    int scope_end = -1;     // its scope's last top-level statement
    int last_use = -1;      // the last one that touches it
};

/** The top level: statements outside every loop, in order, and the heap buffers allocated
    there with their scopes. */
struct Spine {
    std::vector<const StmtNode *> units;
    std::vector<std::set<std::string>> touches;  // per unit
    std::vector<HeapBuffer> heap;
    std::set<std::string> pending;  // touched by lets before the next unit
    std::set<std::string> keep;     // touched where no statement follows: never freed early

    void walk(const Stmt &s) {
        if (!s.defined()) return;
        if (auto b = s.as<Block>()) {
            walk(b->first);
            walk(b->rest);
        } else if (auto l = s.as<LetStmt>()) {
            Touched t;
            t.include(l->value);
            pending.insert(t.names.begin(), t.names.end());
            walk(l->body);
        } else if (auto a = s.as<Allocate>()) {
            Touched t;
            t.include(a->extent);
            pending.insert(t.names.begin(), t.names.end());
            if (a->memory_type != MemoryType::Heap) {
                walk(a->body);
                return;
            }
            size_t k = heap.size();
            heap.push_back({a, (int)units.size()});
            walk(a->body);
            heap[k].scope_end = (int)units.size() - 1;
            keep.insert(pending.begin(), pending.end());  // (lets after the last statement)
        } else {
            Touched t;
            t.include(s);
            t.names.insert(pending.begin(), pending.end());
            pending.clear();
            touches.push_back(std::move(t.names));
            units.push_back(s.get());
        }
    }
};

/** The runtime pool's block size for a request (see weft_rt_malloc). */
int64_t pool_block(int64_t bytes) {
    int64_t b = 64;
    while (b < bytes && b < (int64_t(1) << 30)) b <<= 1;
    return b >= bytes ? b : ((bytes + 63) & ~int64_t(63));
}

std::string mib(int64_t bytes) {
    std::ostringstream os;
    os.setf(std::ios::fixed);
    os.precision(1);
    if (bytes >= (1 << 20)) os << bytes / 1048576.0 << " MiB";
    else os << bytes / 1024.0 << " KiB";
    return os.str();
}

class Insert : public IRMutator {
public:
    std::map<const StmtNode *, std::vector<std::string>> frees_after;

    Stmt mutate(const Stmt &s) override {
        if (!s.defined()) return s;
        if (auto b = s.as<Block>()) return Block::make(mutate(b->first), mutate(b->rest));
        if (auto l = s.as<LetStmt>()) return LetStmt::make(l->name, l->value, mutate(l->body));
        if (auto a = s.as<Allocate>()) return Allocate::make(a->name, a->type, a->extent, a->memory_type, mutate(a->body));
        auto it = frees_after.find(s.get());
        if (it == frees_after.end()) return s;
        std::vector<Stmt> v{s};
        for (auto &n : it->second)
            v.push_back(Evaluate::make(Call::make_intrinsic(Int(32), "free_buffer", {StringImm::make(n)})));
        return Block::make(v);
    }
    using IRMutator::mutate;
};

}  // namespace

Stmt plan_memory(const Stmt &s, std::string *log) {
    Spine sp;
    sp.walk(s);
    if (sp.heap.empty()) return s;
    sp.keep.insert(sp.pending.begin(), sp.pending.end());
    Insert ins;
    for (auto &h : sp.heap) {
        if (sp.keep.count(h.op->name)) continue;
        for (int i = h.first; i <= h.scope_end; i++)
            if (sp.touches[i].count(h.op->name)) h.last_use = i;
        if (h.last_use >= 0 && h.last_use < h.scope_end) ins.frees_after[sp.units[h.last_use]].push_back(h.op->name);
    }
    Stmt r = ins.frees_after.empty() ? s : ins.mutate(s);
    if (log) {
        // The plan, and what the pool holds as it runs: blocks of the pipeline's own buffers,
        // taken at each allocation (a freed one of the same size first) and given back.
        std::ostringstream os;
        os << "// ---- memory plan (heap buffers outside every loop; statements 0-" << (int)sp.units.size() - 1
           << " of the top level) ----\n";
        std::multimap<int64_t, std::string> free_blocks;  // block size -> the buffer that gave it back
        std::map<int, std::vector<const HeapBuffer *>> frees_at;
        int64_t live = 0, peak = 0, total = 0;
        bool all_constant = true;
        size_t next = 0;
        for (int i = 0; i <= (int)sp.units.size(); i++) {
            for (; next < sp.heap.size() && sp.heap[next].first <= i; next++) {
                const HeapBuffer &h = sp.heap[next];
                int64_t n = 0;
                bool k = is_const_int(h.op->extent, &n);
                int64_t bytes = k ? n * h.op->type.bytes() : 0;
                all_constant = all_constant && k;
                int64_t block = k ? pool_block(bytes) : 0;
                std::string reuse;
                auto it = k ? free_blocks.find(block) : free_blocks.end();
                if (it != free_blocks.end()) {
                    reuse = ", reuses the block of " + it->second;
                    free_blocks.erase(it);
                }
                live += block;
                total += block;
                peak = std::max(peak, live);
                int end = h.last_use >= 0 && h.last_use < h.scope_end ? h.last_use : h.scope_end;
                os << "//   " << h.op->name << ": " << (k ? mib(bytes) : std::string("size known at run time"))
                   << ", statements " << h.first << "-" << end
                   << (end < h.scope_end ? " (freed after its last use)" : " (to the end of its scope)") << reuse << "\n";
                frees_at[end].push_back(&h);
            }
            for (auto *h : frees_at[i]) {
                int64_t n = 0;
                if (!is_const_int(h->op->extent, &n)) continue;
                int64_t block = pool_block(n * h->op->type.bytes());
                live -= block;
                free_blocks.insert({block, h->op->name});
            }
        }
        os << "//   " << sp.heap.size() << " buffers, " << mib(total) << " of pool blocks if none were shared; at most "
           << mib(peak) << " live at once" << (all_constant ? "" : " (of those with constant sizes)") << "\n";
        *log += os.str();
    }
    return r;
}

}  // namespace internal
}  // namespace weft
