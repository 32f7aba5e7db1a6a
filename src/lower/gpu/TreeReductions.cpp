#include "lower/gpu/TreeReductions.h"
#include <algorithm>
#include "ir/IRVisitor.h"
#include "ir/Simplify.h"
#include "lower/gpu/InjectGPU.h"

namespace weft {
namespace internal {
namespace gpu {
namespace {

/** The last step of a reduction across a block's threads, done as a tree. An rfactor's
    partial results, one per thread in shared memory, are added up (or multiplied, or their
    min or max taken) by a serial loop at the block level, which one thread runs:
        for (v, min, T) { out[I] = out[I] op S[v + c] }
    Where that loop is the last to read S, it becomes log2(T) steps in which the block's
    threads combine pairs of elements of S in place, then out[I] = out[I] op S[min + c] (the
    barriers between the steps are put in like any others). The order of the operations
    changes: rfactor already asks for an associative op. */
class TreeReductions : public IRMutator {
public:
    /** Ready for a kernel's body: the block's thread count (the tree uses no more threads). */
    explicit TreeReductions(const Stmt &kernel_body) {
        class Threads : public IRVisitor {
        public:
            int64_t product = 1, most = 1;
            bool known = true;

        protected:
            void visit(const For *op) override {
                if (op->for_type != ForType::GPUThread) return IRVisitor::visit(op);
                int64_t e = 0;
                if (!is_const_int(unwrap_extent(op->extent), &e)) known = false;
                int64_t saved = product;
                product *= std::max<int64_t>(e, 1);
                most = std::max(most, product);
                IRVisitor::visit(op);
                product = saved;
            }
        } th;
        th.include(kernel_body);
        block_threads = th.known ? th.most : 0;
    }

protected:
    int counter = 0;
    int64_t block_threads = 0;
    Stmt visit(const For *op, const Stmt &s) override {
        return op->for_type == ForType::GPUThread ? s : IRMutator::visit(op, s);  // the block level only
    }
    Stmt visit(const Allocate *op, const Stmt &s) override {
        Stmt body = mutate(op->body);
        // At the block level, storage other than registers is the block's shared memory.
        if (op->memory_type == MemoryType::Register) return Allocate::make(op->name, op->type, op->extent, op->memory_type, body);
        std::vector<Stmt> items;
        flatten(body, items);
        for (size_t i = items.size(); i-- > 0;) {
            LoadsStores rw;
            rw.include(items[i]);
            if (!rw.reads.count(op->name)) continue;
            if (Stmt t = tree(items[i], op->name, op->type); t.defined()) {
                items[i] = t;
                body = Block::make(items);
            }
            break;
        }
        return Allocate::make(op->name, op->type, op->extent, op->memory_type, body);
    }
    Stmt tree(const Stmt &s, const std::string &S, Type t) {
        auto loop = s.as<For>();
        int64_t T = 0;
        if (!loop || loop->for_type != ForType::Serial || !is_const_int(unwrap_extent(loop->extent), &T) || T < 2 || T > 2048)
            return Stmt();
        auto st = loop->body.as<Store>();
        if (!st || st->atomic || st->name == S || st->value.type() != t || t.is_vector() || t.is_bool() ||
            stmt_uses_var(Evaluate::make(st->index), loop->name))
            return Stmt();
        IRNodeType nt = st->value.get()->node_type;
        if (nt != IRNodeType::Add && nt != IRNodeType::Mul && nt != IRNodeType::Min && nt != IRNodeType::Max) return Stmt();
        auto bin = static_cast<const BinaryExprNode *>(st->value.get());
        auto self = [&](const Expr &e) {
            auto l = e.as<Load>();
            return l && l->name == st->name && equal(l->index, st->index);
        };
        const Load *part = nullptr;
        if (self(bin->a)) part = bin->b.as<Load>();
        else if (self(bin->b)) part = bin->a.as<Load>();
        if (!part || part->name != S) return Stmt();
        Expr v = Variable::make(Int(32), loop->name);
        Expr c = simplify(part->index - v);  // S[v + c]
        if (expr_uses_var(c, loop->name)) return Stmt();
        Expr base = simplify(loop->min + c);
        auto combine = [&](Expr a, Expr b) -> Expr {
            switch (nt) {
            case IRNodeType::Add: return a + b;
            case IRNodeType::Mul: return a * b;
            case IRNodeType::Min: return min(a, b);
            default: return max(a, b);
            }
        };
        std::vector<Stmt> steps;
        int64_t len = T, half = 1;
        while (half * 2 < T) half *= 2;
        if (half > block_threads) return Stmt();  // more threads than the block has: it stays serial
        for (; half >= 1; half /= 2) {  // elements [0, len) of S combined into [0, half)
            std::string name = S + ".tree" + std::to_string(counter++);
            Expr tid = Variable::make(Int(32), name);
            Stmt step = Store::make(S, combine(Load::make(t, S, base + tid), Load::make(t, S, base + tid + (int)half)), base + tid);
            if (len < 2 * half) step = IfThenElse::make(tid < (int)(len - half), step);
            steps.push_back(For::make(name, 0, (int)half, ForType::GPUThread, step));
            len = half;
        }
        steps.push_back(Store::make(st->name, combine(Load::make(t, st->name, st->index), Load::make(t, S, base)), st->index,
                                    st->alignment, st->nontemporal));
        return simplify(Block::make(steps));
    }
};

}  // namespace

Stmt tree_reductions(const Stmt &kernel_body) { return TreeReductions(kernel_body).mutate(kernel_body); }

}  // namespace gpu
}  // namespace internal
}  // namespace weft
