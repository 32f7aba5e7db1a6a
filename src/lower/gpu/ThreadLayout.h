// Where each GPU thread's elements of a buffer are, from the thread's accesses: the
// accesses of one buffer with the loops, lets and guards around them (BufferAccesses), the
// "digits" of a thread's offsets (offset_digits, compact_offset), and the rewrite of a
// buffer's indices relative to each thread's first element (RebaseIndices). Register
// promotion in InjectGPU.cpp builds on these.
#pragma once
#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>
#include "ir/IRVisitor.h"
#include "ir/Simplify.h"
#include "lower/gpu/Common.h"
#include "lower/gpu/InjectGPU.h"

namespace weft {
namespace internal {
namespace gpu {

/** Every Load and Store of one buffer inside a statement, with what encloses it there: the
    loops (outermost first) and the lets (substituted into the index, innermost first). */
class BufferAccesses : public IRVisitor {
public:
    explicit BufferAccesses(std::string n) : name(std::move(n)) {}
    struct Loop {
        std::string name;
        Expr min, extent;
        bool thread;
    };
    struct Access {
        Expr index;
        std::vector<Loop> loops;
        int nest_depth;            // the deepest thread nesting of the thread nest it is in
        std::vector<Expr> guards;  // the conditions of the branches it is in (a tile's edge)
        bool write;
    };
    std::string name;
    std::vector<Access> accesses;
    bool unsupported = false;  // an access in a let's value we cannot place, a vector index that is not a ramp

protected:
    std::vector<Loop> loops;
    LetStack lets;
    Expr with_lets(const Expr &e) const { return substitute_lets(e, lets); }
    void record(const Expr &index, bool write) {
        Access a{simplify(with_lets(index)), {}, nest_depth, {}, write};  // (terms of outer loops cancel)
        if (a.index.type().lanes() > 1 && !a.index.as<Ramp>()) unsupported = true;
        for (auto &l : loops) a.loops.push_back({l.name, with_lets(l.min), with_lets(l.extent), l.thread});
        for (auto &c : conds) a.guards.push_back(simplify(with_lets(c)));
        accesses.push_back(a);
    }
    void visit(const Load *op) override {
        if (op->name == name) record(op->index, false);
        IRVisitor::visit(op);
    }
    void visit(const Store *op) override {
        if (op->name == name) record(op->index, true);
        IRVisitor::visit(op);
    }
    template <typename L>
    void in_let_scope(const L *op) {
        include(op->value);
        lets.push_back({op->name, op->value});
        include(op->body);
        lets.pop_back();
    }
    void visit(const LetStmt *op) override { in_let_scope(op); }
    void visit(const Let *op) override { in_let_scope(op); }
    std::vector<Expr> conds;
    void visit(const IfThenElse *op) override {
        include(op->condition);
        conds.push_back(op->condition);
        include(op->then_case);
        conds.back() = Not::make(op->condition);
        include(op->else_case);
        conds.pop_back();
    }
    int nest_depth = 0;
    void visit(const For *op) override {
        include(op->min);
        include(op->extent);
        bool thread = op->for_type == ForType::GPUThread;
        bool outermost = thread && std::none_of(loops.begin(), loops.end(), [](const Loop &l) { return l.thread; });
        int saved = nest_depth;
        if (outermost) {
            ThreadDepth td;
            td.include(Stmt(std::shared_ptr<const StmtNode>(op, [](const StmtNode *) {})));
            nest_depth = td.max_depth;
        }
        loops.push_back({op->name, op->min, unwrap_extent(op->extent), thread});
        include(op->body);
        loops.pop_back();
        nest_depth = saved;
    }
};

using Digits = std::vector<std::pair<int64_t, int64_t>>;  // (place, count), lowest place first

/** rel (an offset made of the digits) -> its dense number: sum of d_j * (product of lower
    counts), the digits taken off from the highest place down. T: int64_t or Expr (rel >= 0). */
template <typename T>
T compact_offset(const Digits &digits, T rel) {
    auto c = [](int64_t v) { return T((int)v); };
    T out = c(0);
    std::vector<int64_t> radices;
    int64_t radix = 1;
    for (auto &d : digits) radices.push_back(radix), radix *= d.second;
    for (size_t j = digits.size(); j-- > 0;) {
        T d = rel / c(digits[j].first);
        out = out + d * c(radices[j]);
        if (j) rel = rel - d * c(digits[j].first);
    }
    return out;
}

/** Where the offsets S (from a thread's first element) are exactly
    { sum of d_j * place_j : 0 <= d_j < count_j } with each place above every offset made of
    the lower ones: the digits (place, count). Empty otherwise (or when S is dense already). */
Digits offset_digits(const std::set<int64_t> &S);

/** Subtracts each thread's base offset from the indices of one buffer: index - (b0 + sum of
    c[d] * (thread loop d's variable - its min)), the thread loops counted from the innermost
    (dimension x). */
class RebaseIndices : public IRMutator {
public:
    std::string name;
    int64_t b0 = 0, c[3] = {0, 0, 0};
    /** Where defined, the base instead of b0 + c . t: an Expr of the threads' coordinates
        (the variables thread_coordinate(d)) and the block indices. */
    Expr base;
    static std::string thread_coordinate(int d) { return std::string("weft.thread_coordinate.") + dim_letter(d); }

protected:
    std::vector<std::pair<std::string, Expr>> threads;  // (loop variable, min), outermost first
    Expr offset() const {
        Expr o = base.defined() ? base : Expr((int)b0);
        int n = (int)threads.size();
        for (int i = 0; i < n; i++) {
            int d = n - 1 - i;
            Expr t = Variable::make(Int(32), threads[i].first) - threads[i].second;
            if (base.defined()) o = substitute(thread_coordinate(d), t, o);
            else o = o + Expr((int)c[d]) * t;
        }
        return o;
    }
    LetStack lets;
    /** The index relative to the thread's first element, with the lets in scope substituted so
        that the thread's own terms cancel: unrolled accesses get constant indices (which the
        CUDA compiler keeps in registers). */
    Expr rebase(const Expr &index) {
        Expr e = substitute_lets(index, lets);
        Expr o = offset();
        if (auto r = e.as<Ramp>()) return Ramp::make(compact(simplify(r->base - o)), r->stride, r->lanes);
        return compact(simplify(e - o));
    }
    /** An offset from the thread's first element -> its position among the thread's elements. */
    Expr compact(const Expr &rel) const { return digits.empty() ? rel : simplify(compact_offset<Expr>(digits, rel)); }

public:
    /** The digits of the threads' offsets (offset_digits): indices become the offsets' dense
        numbers. Empty: indexed by the offset itself. */
    Digits digits;
    /** The lets in scope around the buffer's allocation (outermost first): substituted too,
        so that what is constant in the kernel folds (a tile cut at the image's edge). */
    void set_outer_lets(const LetStack &outer) { lets = outer; }

protected:
    template <typename L>
    auto in_let_scope(const L *op) {
        Expr v = mutate(op->value);
        lets.push_back({op->name, v});
        auto b = mutate(op->body);
        lets.pop_back();
        return L::make(op->name, v, b);
    }
    Stmt visit(const LetStmt *op, const Stmt &) override { return in_let_scope(op); }
    Expr visit(const Let *op, const Expr &) override { return in_let_scope(op); }
    Stmt visit(const For *op, const Stmt &s) override {
        bool t = op->for_type == ForType::GPUThread;
        if (t) threads.push_back({op->name, op->min});
        Stmt r = IRMutator::visit(op, s);
        if (t) threads.pop_back();
        return r;
    }
    Expr visit(const Load *op, const Expr &e) override {
        Expr i = mutate(op->index);
        if (op->name != name) return i.same_as(op->index) ? e : Load::make(op->type, op->name, i, op->alignment);
        return Load::make(op->type, op->name, rebase(i), 0);
    }
    Stmt visit(const Store *op, const Stmt &s) override {
        Expr v = mutate(op->value), i = mutate(op->index);
        if (op->name != name) return Store::make(op->name, v, i, op->alignment, op->nontemporal, op->atomic);
        return Store::make(op->name, v, rebase(i), 0, op->nontemporal, op->atomic);
    }
};

}  // namespace gpu
}  // namespace internal
}  // namespace weft
