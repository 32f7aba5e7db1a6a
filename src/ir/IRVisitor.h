// Visitor and mutator over the IR. Override the visits you need; the defaults recurse.
#pragma once
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>
#include "ir/IR.h"

namespace weft {
namespace internal {

class IRVisitor {
public:
    virtual ~IRVisitor() = default;
    void include(const Expr &e);  // dispatches on e's node type (no-op if undefined)
    void include(const Stmt &s);

protected:
    /** Asked before a statement is walked: false skips it. By default true; may_name()
        answers for walks that look for one Func's calls or definitions. */
    virtual bool enter(const Stmt &) { return true; }
    virtual void visit(const IntImm *) {}
    virtual void visit(const UIntImm *) {}
    virtual void visit(const FloatImm *) {}
    virtual void visit(const StringImm *) {}
    virtual void visit(const Variable *) {}
    virtual void visit(const Cast *);
    virtual void visit(const Add *);
    virtual void visit(const Sub *);
    virtual void visit(const Mul *);
    virtual void visit(const Div *);
    virtual void visit(const Mod *);
    virtual void visit(const Min *);
    virtual void visit(const Max *);
    virtual void visit(const EQ *);
    virtual void visit(const NE *);
    virtual void visit(const LT *);
    virtual void visit(const LE *);
    virtual void visit(const GT *);
    virtual void visit(const GE *);
    virtual void visit(const And *);
    virtual void visit(const Or *);
    virtual void visit(const Not *);
    virtual void visit(const Select *);
    virtual void visit(const Load *);
    virtual void visit(const Ramp *);
    virtual void visit(const Broadcast *);
    virtual void visit(const Let *);
    virtual void visit(const Call *);
    virtual void visit(const VectorReduce *);
    virtual void visit(const LetStmt *);
    virtual void visit(const AssertStmt *);
    virtual void visit(const For *);
    virtual void visit(const Store *);
    virtual void visit(const Provide *);
    virtual void visit(const Allocate *);
    virtual void visit(const Realize *);
    virtual void visit(const Block *);
    virtual void visit(const IfThenElse *);
    virtual void visit(const Evaluate *);
};

/** May s name `name`: call it (a Func, image or intrinsic), define it (Provide), load it, or use
    it as a variable (not a name only stored to, allocated or realized)? false only where not.
    Each statement node keeps a summary of the names in it (256 bits, built once, from its own
    expressions and its statements' summaries), so that a walk looking for one name (an
    IRVisitor whose enter() asks this) skips the statements without it: finding each Func's
    bounds, or whether anything reads a buffer, no longer walks every stage of a long pipeline. */
bool may_name(const Stmt &s, const std::string &name);

/** Rebuilds the IR bottom-up; a node whose children are unchanged is returned as is. */
class IRMutator {
public:
    virtual ~IRMutator() = default;
    virtual Expr mutate(const Expr &e);
    virtual Stmt mutate(const Stmt &s);

protected:
    virtual Expr visit(const IntImm *, const Expr &e) { return e; }
    virtual Expr visit(const UIntImm *, const Expr &e) { return e; }
    virtual Expr visit(const FloatImm *, const Expr &e) { return e; }
    virtual Expr visit(const StringImm *, const Expr &e) { return e; }
    virtual Expr visit(const Variable *, const Expr &e) { return e; }
    virtual Expr visit(const Cast *, const Expr &e);
    virtual Expr visit(const Add *, const Expr &e);
    virtual Expr visit(const Sub *, const Expr &e);
    virtual Expr visit(const Mul *, const Expr &e);
    virtual Expr visit(const Div *, const Expr &e);
    virtual Expr visit(const Mod *, const Expr &e);
    virtual Expr visit(const Min *, const Expr &e);
    virtual Expr visit(const Max *, const Expr &e);
    virtual Expr visit(const EQ *, const Expr &e);
    virtual Expr visit(const NE *, const Expr &e);
    virtual Expr visit(const LT *, const Expr &e);
    virtual Expr visit(const LE *, const Expr &e);
    virtual Expr visit(const GT *, const Expr &e);
    virtual Expr visit(const GE *, const Expr &e);
    virtual Expr visit(const And *, const Expr &e);
    virtual Expr visit(const Or *, const Expr &e);
    virtual Expr visit(const Not *, const Expr &e);
    virtual Expr visit(const Select *, const Expr &e);
    virtual Expr visit(const Load *, const Expr &e);
    virtual Expr visit(const Ramp *, const Expr &e);
    virtual Expr visit(const Broadcast *, const Expr &e);
    virtual Expr visit(const Let *, const Expr &e);
    virtual Expr visit(const Call *, const Expr &e);
    virtual Expr visit(const VectorReduce *, const Expr &e);
    virtual Stmt visit(const LetStmt *, const Stmt &s);
    virtual Stmt visit(const AssertStmt *, const Stmt &s);
    virtual Stmt visit(const For *, const Stmt &s);
    virtual Stmt visit(const Store *, const Stmt &s);
    virtual Stmt visit(const Provide *, const Stmt &s);
    virtual Stmt visit(const Allocate *, const Stmt &s);
    virtual Stmt visit(const Realize *, const Stmt &s);
    virtual Stmt visit(const Block *, const Stmt &s);
    virtual Stmt visit(const IfThenElse *, const Stmt &s);
    virtual Stmt visit(const Evaluate *, const Stmt &s);
};

/** An IRMutator that visits each node of an Expr graph once: a node reached again (shared) gets
    its first visit's result, so what is shared stays shared and the work is the graph's size, not
    its tree's (which can be exponentially larger). mutate_once() is the work for one node. */
class GraphMutator : public IRMutator {
public:
    Expr mutate(const Expr &e) override {
        if (!e.defined()) return e;
        auto it = done_.find(e.get());
        if (it != done_.end()) return it->second.second;
        Expr r = mutate_once(e);
        done_.emplace(e.get(), std::make_pair(e, r));  // (e held: its address stays its own)
        return r;
    }
    using IRMutator::mutate;

protected:
    virtual Expr mutate_once(const Expr &e) { return IRMutator::mutate(e); }

private:
    std::unordered_map<const ExprNode *, std::pair<Expr, Expr>> done_;
};

/** Rebuilds a binary node of the same kind as `like` from new operands. */
Expr rebuild_binary(IRNodeType t, Expr a, Expr b);

// ---- small utilities over the IR ----
/** Replaces free uses of variables by name. */
Expr substitute(const std::map<std::string, Expr> &m, const Expr &e);
Stmt substitute(const std::map<std::string, Expr> &m, const Stmt &s);
Expr substitute(const std::string &name, const Expr &value, const Expr &e);
Stmt substitute(const std::string &name, const Expr &value, const Stmt &s);
/** Lets in scope, outermost first; substitute_lets puts their values in (innermost first, so a
    value may use outer lets). */
using LetStack = std::vector<std::pair<std::string, Expr>>;
Expr substitute_lets(Expr e, const LetStack &lets);
Stmt substitute_lets(Stmt s, const LetStack &lets);
/** The names of the buffers a statement loads from and stores to. */
class LoadsStores : public IRVisitor {
public:
    std::set<std::string> reads, writes;

protected:
    void visit(const Load *op) override;
    void visit(const Store *op) override;
};
/** The statements of a sequence of Blocks, in order, appended to out. */
void flatten(const Stmt &s, std::vector<Stmt> &out);
/** Does e / s use variable `name`? */
bool expr_uses_var(const Expr &e, const std::string &name);
bool stmt_uses_var(const Stmt &s, const std::string &name);
/** Does e use a variable named in `names`? (One walk, whatever the number of names.) */
bool expr_uses_any_var(const Expr &e, const std::set<std::string> &names);
/** Structural equality: Exprs node by node (types, names, constants, the Params, RDoms, Funcs
    and inputs referred to); Stmts by their printed form. */
bool equal(const Expr &a, const Expr &b);
bool equal(const Stmt &a, const Stmt &b);

/** An atomic Store (Store::atomic) taken apart for code generation. `value` is the new value
    with every Load of the stored buffer replaced by the variable `old` (the element's current
    value). Where the new value is old + e, old - e, min(old, e) or max(old, e) with e not using
    old, `op` says which and `operand` is e: one atomic instruction does it. Plain: the new value
    does not read the element (a plain store). Other: a compare-and-swap loop. */
struct AtomicUpdate {
    enum Op { Plain, Add, Sub, Min, Max, Other } op = Other;
    Expr value, operand;
};
AtomicUpdate atomic_update(const Store *op, const std::string &old);

}  // namespace internal
}  // namespace weft
