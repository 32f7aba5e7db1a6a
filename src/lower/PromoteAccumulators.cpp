#include "lower/PromoteAccumulators.h"
#include "ir/IRVisitor.h"
#include "ir/Simplify.h"
#include <algorithm>

namespace weft {
namespace internal {
namespace {

constexpr int64_t kMaxTileBytes = 4096;  // 64 vectors of 16 floats: what registers (or L1) hold

/** One statement on the way from the reduction loop down to the store. */
struct Frame {
    const For *loop = nullptr;
    const LetStmt *let = nullptr;
    const IfThenElse *cond = nullptr;
};

class Promote : public IRMutator {
public:
    explicit Promote(const std::set<std::string> &outputs) : outputs(outputs) {}

protected:
    Stmt visit(const For *op, const Stmt &s) override {
        // (Not inside a vectorized or unrolled loop: those loops are the block's.)
        if (op->for_type == ForType::Serial && lanes_outside == 0) {
            Stmt r = promote(op);
            if (r.defined()) return r;
        }
        bool block = op->for_type == ForType::Vectorized || op->for_type == ForType::Unrolled;
        lanes_outside += block;
        Stmt r = IRMutator::visit(op, s);
        lanes_outside -= block;
        return r;
    }

private:
    const std::set<std::string> &outputs;
    int count = 0, lanes_outside = 0;

    /** The reduction loop `L` over a block rewritten with a stack tile, or undefined where the
        block is not one: L's body must be unrolled or vectorized loops of constant bounds, lets
        and ifs around one store to an output, whose index and conditions do not depend on L,
        and whose value reads that buffer only at the element stored. */
    Stmt promote(const For *L) {
        std::vector<Frame> frames;
        LetStack lets;
        Stmt cur = L->body;
        const Store *st = nullptr;
        while (!st) {
            if (auto *f = cur.as<For>()) {
                if ((f->for_type != ForType::Unrolled && f->for_type != ForType::Vectorized) || !is_const_int(f->min) ||
                    !is_const_int(f->extent))
                    return Stmt();
                frames.push_back({f, nullptr, nullptr});
                cur = f->body;
            } else if (auto *l = cur.as<LetStmt>()) {
                frames.push_back({nullptr, l, nullptr});
                lets.emplace_back(l->name, l->value);
                cur = l->body;
            } else if (auto *c = cur.as<IfThenElse>()) {
                if (c->else_case.defined() || expr_uses_var(substitute_lets(c->condition, lets), L->name)) return Stmt();
                frames.push_back({nullptr, nullptr, c});
                cur = c->then_case;
            } else if (auto *s = cur.as<Store>()) {
                st = s;
            } else {
                return Stmt();
            }
        }
        if (!outputs.count(st->name) || st->atomic || st->nontemporal || st->value.type().lanes() != 1) return Stmt();
        const Expr index = substitute_lets(st->index, lets);
        if (expr_uses_var(index, L->name)) return Stmt();
        // The value reads the buffer only at the element it writes (an accumulation).
        class Reads : public IRVisitor {
        public:
            const Store *st;
            bool same = true, any = false;

        protected:
            void visit(const Load *op) override {
                if (op->name == st->name) {
                    any = true;
                    same = same && equal(op->index, st->index);
                }
                IRVisitor::visit(op);
            }
        } reads;
        reads.st = st;
        reads.include(st->value);
        if (!reads.any || !reads.same) return Stmt();

        // The tile: one slot per element the block writes. The index is affine in the block's
        // loops (a constant step along each); ordered by step, each step exceeds the span of
        // the smaller ones, so distinct elements get distinct slots (mixed radix).
        struct Axis {
            const For *loop;
            int64_t step, extent;
        };
        std::vector<Axis> axes;
        for (auto &fr : frames) {
            if (!fr.loop) continue;
            Expr v = Variable::make(Int(32), fr.loop->name);
            int64_t step, extent;
            if (!is_const_int(simplify(substitute(fr.loop->name, v + 1, index) - index), &step)) return Stmt();
            is_const_int(fr.loop->extent, &extent);
            if (step != 0) axes.push_back({fr.loop, std::abs(step), extent});
        }
        std::stable_sort(axes.begin(), axes.end(), [](const Axis &a, const Axis &b) { return a.step < b.step; });
        int64_t span = 0, slots = 1;
        Expr slot = make_const(Int(32), (int64_t)0);
        for (auto &a : axes) {
            if (a.extent <= 0 || a.step <= span) return Stmt();
            span += a.step * (a.extent - 1);
            slot = slot + (Variable::make(Int(32), a.loop->name) - a.loop->min) * make_const(Int(32), slots);
            slots *= a.extent;
            if (slots * st->value.type().bytes() > kMaxTileBytes) return Stmt();
        }
        slot = simplify(slot);
        const Type t = st->value.type();
        const std::string tile = st->name + "$acc" + std::to_string(count++);

        // The lets that depend on L (the value's): kept in the loop, left out of the copies in
        // and out of the tile (which use none of them).
        std::set<std::string> varying;
        {
            LetStack seen;
            for (auto &fr : frames)
                if (fr.let) {
                    if (expr_uses_var(substitute_lets(fr.let->value, seen), L->name)) varying.insert(fr.let->name);
                    seen.emplace_back(fr.let->name, fr.let->value);
                }
        }
        auto nest = [&](Stmt leaf, bool keep_varying) {
            for (size_t i = frames.size(); i-- > 0;) {
                const Frame &fr = frames[i];
                if (fr.loop) leaf = For::make(fr.loop->name, fr.loop->min, fr.loop->extent, fr.loop->for_type, leaf);
                else if (fr.cond) leaf = IfThenElse::make(fr.cond->condition, leaf);
                else if (keep_varying || !varying.count(fr.let->name)) leaf = LetStmt::make(fr.let->name, fr.let->value, leaf);
                else if (stmt_uses_var(leaf, fr.let->name)) return Stmt();
            }
            return leaf;
        };
        class ToTile : public IRMutator {
        public:
            const Store *st;
            Expr slot;
            std::string tile;

        protected:
            Expr visit(const Load *op, const Expr &e) override {
                if (op->name == st->name) return Load::make(op->type, tile, slot);
                return IRMutator::visit(op, e);
            }
        } to_tile;
        to_tile.st = st;
        to_tile.slot = slot;
        to_tile.tile = tile;
        Stmt in = nest(Store::make(tile, Load::make(t, st->name, st->index), slot), false);
        Stmt step = nest(Store::make(tile, to_tile.mutate(st->value), slot), true);
        Stmt out = nest(Store::make(st->name, Load::make(t, tile, slot), st->index, st->alignment), false);
        if (!in.defined() || !out.defined()) return Stmt();
        Stmt loop = For::make(L->name, L->min, L->extent, L->for_type, step);
        return Allocate::make(tile, t, make_const(Int(64), slots), MemoryType::Stack, Block::make({in, loop, out}));
    }
};

}  // namespace

Stmt promote_accumulators(const Stmt &s, const std::set<std::string> &outputs) { return Promote(outputs).mutate(s); }

}  // namespace internal
}  // namespace weft
