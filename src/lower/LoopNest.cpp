#include "lower/LoopNest.h"
#include <sstream>
#include "ir/Simplify.h"

namespace weft {
namespace internal {
namespace {

const char *kind_of(ForType t) {
    switch (t) {
    case ForType::Serial: return "for";
    case ForType::Parallel: return "parallel";
    case ForType::Vectorized: return "vectorized";
    case ForType::Unrolled: return "unrolled";
    case ForType::GPUBlock: return "gpu_block";
    case ForType::GPUThread: return "gpu_thread";
    }
    return "for";
}
const char *memory_of(MemoryType m) {
    switch (m) {
    case MemoryType::Stack: return "stack";
    case MemoryType::Register: return "register";
    case MemoryType::GPUShared: return "gpu shared";
    default: return "heap";
    }
}
std::string shorten(std::string s) {
    if (s.size() > 100) s = s.substr(0, 97) + "...";
    return s;
}

struct Printer {
    std::ostringstream os;
    std::string last_store;  // the store just printed at this depth (repeated ones are folded)

    void line(int depth, const std::string &s) {
        os << std::string(2 * depth, ' ') << s << "\n";
        last_store.clear();
    }
    void stored(const std::string &name, int depth) {
        if (last_store == name) return;
        line(depth, name + "(...) = ...");
        last_store = name;
    }
    void stmt(const Stmt &s, int depth) {
        if (!s.defined()) return;
        const StmtNode *n = s.get();
        switch (n->node_type) {
        case IRNodeType::LetStmt: stmt(static_cast<const LetStmt *>(n)->body, depth); return;
        case IRNodeType::AssertStmt: return;  // the checks of inputs and bounds
        case IRNodeType::Evaluate: return;
        case IRNodeType::For: {
            auto op = static_cast<const For *>(n);
            Expr max = simplify(op->min + op->extent - 1);
            line(depth, std::string(kind_of(op->for_type)) + " " + op->name + " in [" + to_string(simplify(op->min)) +
                            ", " + to_string(max) + "]:");
            stmt(op->body, depth + 1);
            last_store.clear();
            return;
        }
        case IRNodeType::Allocate: {
            auto op = static_cast<const Allocate *>(n);
            line(depth, "allocate " + op->name + "[" + op->type.str() + " * " + to_string(simplify(op->extent)) + "] in " +
                            memory_of(op->memory_type));
            stmt(op->body, depth);
            return;
        }
        case IRNodeType::Realize: {
            auto op = static_cast<const Realize *>(n);
            line(depth, "realize " + op->name + ":");
            stmt(op->body, depth + 1);
            return;
        }
        case IRNodeType::Block: {
            Stmt cur = s;  // (a loop along the rest: a long block would be a deep recursion)
            while (auto b = cur.as<Block>()) {
                stmt(b->first, depth);
                cur = b->rest;
            }
            stmt(cur, depth);
            return;
        }
        case IRNodeType::IfThenElse: {
            auto op = static_cast<const IfThenElse *>(n);
            line(depth, "if " + shorten(to_string(op->condition)) + ":");
            stmt(op->then_case, depth + 1);
            if (op->else_case.defined()) {
                line(depth, "else:");
                stmt(op->else_case, depth + 1);
            }
            last_store.clear();
            return;
        }
        case IRNodeType::Store: stored(static_cast<const Store *>(n)->name, depth); return;
        case IRNodeType::Provide: stored(static_cast<const Provide *>(n)->name, depth); return;
        default: return;
        }
    }
};

}  // namespace

std::string loop_nest_text(const Stmt &s) {
    Printer p;
    p.stmt(s, 0);
    return p.os.str();
}

}  // namespace internal
}  // namespace weft
