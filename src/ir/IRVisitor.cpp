#include "ir/IRVisitor.h"
#include <cstring>
#include <cmath>
#include "ir/Stack.h"

namespace weft {
namespace internal {

#define DISPATCH_EXPR(T) \
    case IRNodeType::T: visit(static_cast<const T *>(n)); break;

void IRVisitor::include(const Expr &e) {
    if (!e.defined()) return;
    if (stack_low()) return on_large_stack_void([&] { include(e); });
    const ExprNode *n = e.get();
    switch (n->node_type) {
        DISPATCH_EXPR(IntImm) DISPATCH_EXPR(UIntImm) DISPATCH_EXPR(FloatImm) DISPATCH_EXPR(StringImm)
        DISPATCH_EXPR(Variable) DISPATCH_EXPR(Cast) DISPATCH_EXPR(Add) DISPATCH_EXPR(Sub) DISPATCH_EXPR(Mul)
        DISPATCH_EXPR(Div) DISPATCH_EXPR(Mod) DISPATCH_EXPR(Min) DISPATCH_EXPR(Max) DISPATCH_EXPR(EQ)
        DISPATCH_EXPR(NE) DISPATCH_EXPR(LT) DISPATCH_EXPR(LE) DISPATCH_EXPR(GT) DISPATCH_EXPR(GE)
        DISPATCH_EXPR(And) DISPATCH_EXPR(Or) DISPATCH_EXPR(Not) DISPATCH_EXPR(Select) DISPATCH_EXPR(Load)
        DISPATCH_EXPR(Ramp) DISPATCH_EXPR(Broadcast) DISPATCH_EXPR(Let) DISPATCH_EXPR(Call)
        DISPATCH_EXPR(VectorReduce)
    default: WEFT_ASSERT(false, "bad expr node");
    }
}
void IRVisitor::include(const Stmt &s) {
    if (!s.defined()) return;
    if (stack_low()) return on_large_stack_void([&] { include(s); });
    if (!enter(s)) return;
    const StmtNode *n = s.get();
    switch (n->node_type) {
        DISPATCH_EXPR(LetStmt) DISPATCH_EXPR(AssertStmt) DISPATCH_EXPR(For) DISPATCH_EXPR(Store)
        DISPATCH_EXPR(Provide) DISPATCH_EXPR(Allocate) DISPATCH_EXPR(Realize) DISPATCH_EXPR(Block)
        DISPATCH_EXPR(IfThenElse) DISPATCH_EXPR(Evaluate)
    default: WEFT_ASSERT(false, "bad stmt node");
    }
}
#undef DISPATCH_EXPR

// ---------------- the names in a statement ----------------
namespace {
struct NameBits {
    uint64_t w[4] = {0, 0, 0, 0};
    static void bits_of(const std::string &n, int *a, int *b) {
        size_t h = std::hash<std::string>()(n);
        *a = (int)(h & 255);
        *b = (int)((h >> 8) & 255);
    }
    void add(const std::string &n) {
        int a, b;
        bits_of(n, &a, &b);
        w[a >> 6] |= 1ull << (a & 63);
        w[b >> 6] |= 1ull << (b & 63);
    }
    bool may_have(const std::string &n) const {
        int a, b;
        bits_of(n, &a, &b);
        return (w[a >> 6] >> (a & 63) & 1) && (w[b >> 6] >> (b & 63) & 1);
    }
    void merge(const NameBits &o) {
        for (int i = 0; i < 4; i++) w[i] |= o.w[i];
    }
};

NameBits names_in(const Stmt &s);

/** The names in one statement: its own expressions walked, its statements' summaries looked up. */
class CollectNames : public IRVisitor {
public:
    const StmtNode *root = nullptr;
    NameBits bits;

protected:
    bool enter(const Stmt &s) override {
        if (s.get() == root) return true;
        bits.merge(names_in(s));
        return false;
    }
    void visit(const Call *op) override {
        bits.add(op->name);
        IRVisitor::visit(op);
    }
    void visit(const Provide *op) override {
        bits.add(op->name);
        IRVisitor::visit(op);
    }
    void visit(const Load *op) override {
        bits.add(op->name);
        IRVisitor::visit(op);
    }
    void visit(const Variable *op) override { bits.add(op->name); }
};

NameBits names_in(const Stmt &s) {
    const StmtNode *n = s.get();
    NameBits b;
    if (n->names_known.load(std::memory_order_acquire)) {
        for (int i = 0; i < 4; i++) b.w[i] = n->names[i].load(std::memory_order_relaxed);
        return b;
    }
    CollectNames c;
    c.root = n;
    c.include(s);
    // (Threads sharing the node may both build it: they store the same bits.)
    for (int i = 0; i < 4; i++) n->names[i].store(c.bits.w[i], std::memory_order_relaxed);
    n->names_known.store(true, std::memory_order_release);
    return c.bits;
}
}  // namespace

bool may_name(const Stmt &s, const std::string &name) {
    if (!s.defined()) return true;
    return names_in(s).may_have(name);
}

void IRVisitor::visit(const Cast *op) { include(op->value); }
#define BIN_VISIT(T) \
    void IRVisitor::visit(const T *op) { include(op->a); include(op->b); }
BIN_VISIT(Add) BIN_VISIT(Sub) BIN_VISIT(Mul) BIN_VISIT(Div) BIN_VISIT(Mod) BIN_VISIT(Min) BIN_VISIT(Max)
BIN_VISIT(EQ) BIN_VISIT(NE) BIN_VISIT(LT) BIN_VISIT(LE) BIN_VISIT(GT) BIN_VISIT(GE) BIN_VISIT(And) BIN_VISIT(Or)
#undef BIN_VISIT
void IRVisitor::visit(const Not *op) { include(op->a); }
void IRVisitor::visit(const Select *op) {
    include(op->condition);
    include(op->true_value);
    include(op->false_value);
}
void IRVisitor::visit(const Load *op) { include(op->index); }
void IRVisitor::visit(const Ramp *op) {
    include(op->base);
    include(op->stride);
}
void IRVisitor::visit(const Broadcast *op) { include(op->value); }
void IRVisitor::visit(const Let *op) {
    include(op->value);
    include(op->body);
}
void IRVisitor::visit(const Call *op) {
    for (auto &a : op->args) include(a);
}
void IRVisitor::visit(const VectorReduce *op) { include(op->value); }
void IRVisitor::visit(const LetStmt *op) {
    include(op->value);
    include(op->body);
}
void IRVisitor::visit(const AssertStmt *op) {
    include(op->condition);
    for (auto &a : op->args) include(a);
}
void IRVisitor::visit(const For *op) {
    include(op->min);
    include(op->extent);
    include(op->body);
}
void IRVisitor::visit(const Store *op) {
    include(op->value);
    include(op->index);
}
void IRVisitor::visit(const Provide *op) {
    include(op->value);
    for (auto &a : op->args) include(a);
}
void IRVisitor::visit(const Allocate *op) {
    include(op->extent);
    include(op->body);
}
void IRVisitor::visit(const Realize *op) {
    for (auto &r : op->bounds) {
        include(r.min);
        include(r.extent);
    }
    include(op->body);
}
void IRVisitor::visit(const Block *op) {
    include(op->first);
    include(op->rest);
}
void IRVisitor::visit(const IfThenElse *op) {
    include(op->condition);
    include(op->then_case);
    include(op->else_case);
}
void IRVisitor::visit(const Evaluate *op) { include(op->value); }

// ---------------- IRMutator ----------------
#define DISPATCH_M(T) \
    case IRNodeType::T: return visit(static_cast<const T *>(n), e);

Expr IRMutator::mutate(const Expr &e) {
    if (!e.defined()) return e;
    if (stack_low()) return on_large_stack<Expr>([&] { return mutate(e); });
    const ExprNode *n = e.get();
    switch (n->node_type) {
        DISPATCH_M(IntImm) DISPATCH_M(UIntImm) DISPATCH_M(FloatImm) DISPATCH_M(StringImm) DISPATCH_M(Variable)
        DISPATCH_M(Cast) DISPATCH_M(Add) DISPATCH_M(Sub) DISPATCH_M(Mul) DISPATCH_M(Div) DISPATCH_M(Mod)
        DISPATCH_M(Min) DISPATCH_M(Max) DISPATCH_M(EQ) DISPATCH_M(NE) DISPATCH_M(LT) DISPATCH_M(LE)
        DISPATCH_M(GT) DISPATCH_M(GE) DISPATCH_M(And) DISPATCH_M(Or) DISPATCH_M(Not) DISPATCH_M(Select)
        DISPATCH_M(Load) DISPATCH_M(Ramp) DISPATCH_M(Broadcast) DISPATCH_M(Let) DISPATCH_M(Call)
        DISPATCH_M(VectorReduce)
    default: WEFT_ASSERT(false, "bad expr node");
    }
}
#undef DISPATCH_M
#define DISPATCH_S(T) \
    case IRNodeType::T: return visit(static_cast<const T *>(n), s);
Stmt IRMutator::mutate(const Stmt &s) {
    if (!s.defined()) return s;
    if (stack_low()) return on_large_stack<Stmt>([&] { return mutate(s); });
    const StmtNode *n = s.get();
    switch (n->node_type) {
        DISPATCH_S(LetStmt) DISPATCH_S(AssertStmt) DISPATCH_S(For) DISPATCH_S(Store) DISPATCH_S(Provide)
        DISPATCH_S(Allocate) DISPATCH_S(Realize) DISPATCH_S(Block) DISPATCH_S(IfThenElse) DISPATCH_S(Evaluate)
    default: WEFT_ASSERT(false, "bad stmt node");
    }
}
#undef DISPATCH_S

Expr rebuild_binary(IRNodeType t, Expr a, Expr b) {
    switch (t) {
    case IRNodeType::Add: return Add::make(a, b);
    case IRNodeType::Sub: return Sub::make(a, b);
    case IRNodeType::Mul: return Mul::make(a, b);
    case IRNodeType::Div: return Div::make(a, b);
    case IRNodeType::Mod: return Mod::make(a, b);
    case IRNodeType::Min: return Min::make(a, b);
    case IRNodeType::Max: return Max::make(a, b);
    case IRNodeType::EQ: return EQ::make(a, b);
    case IRNodeType::NE: return NE::make(a, b);
    case IRNodeType::LT: return LT::make(a, b);
    case IRNodeType::LE: return LE::make(a, b);
    case IRNodeType::GT: return GT::make(a, b);
    case IRNodeType::GE: return GE::make(a, b);
    case IRNodeType::And: return And::make(a, b);
    case IRNodeType::Or: return Or::make(a, b);
    default: WEFT_ASSERT(false, "rebuild_binary of non-binary");
    }
}

Expr IRMutator::visit(const Cast *op, const Expr &e) {
    Expr v = mutate(op->value);
    return v.same_as(op->value) ? e : Cast::make(op->type, v);
}
#define BIN_MUT(T)                                                     \
    Expr IRMutator::visit(const T *op, const Expr &e) {                \
        Expr a = mutate(op->a), b = mutate(op->b);                     \
        if (a.same_as(op->a) && b.same_as(op->b)) return e;            \
        return T::make(a, b);                                          \
    }
BIN_MUT(Add) BIN_MUT(Sub) BIN_MUT(Mul) BIN_MUT(Div) BIN_MUT(Mod) BIN_MUT(Min) BIN_MUT(Max) BIN_MUT(EQ)
BIN_MUT(NE) BIN_MUT(LT) BIN_MUT(LE) BIN_MUT(GT) BIN_MUT(GE) BIN_MUT(And) BIN_MUT(Or)
#undef BIN_MUT
Expr IRMutator::visit(const Not *op, const Expr &e) {
    Expr a = mutate(op->a);
    return a.same_as(op->a) ? e : Not::make(a);
}
Expr IRMutator::visit(const Select *op, const Expr &e) {
    Expr c = mutate(op->condition), t = mutate(op->true_value), f = mutate(op->false_value);
    if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) return e;
    return Select::make(c, t, f);
}
Expr IRMutator::visit(const Load *op, const Expr &e) {
    Expr i = mutate(op->index);
    return i.same_as(op->index) ? e : Load::make(op->type, op->name, i, op->alignment);
}
Expr IRMutator::visit(const Ramp *op, const Expr &e) {
    Expr b = mutate(op->base), s = mutate(op->stride);
    if (b.same_as(op->base) && s.same_as(op->stride)) return e;
    return Ramp::make(b, s, op->lanes);
}
Expr IRMutator::visit(const Broadcast *op, const Expr &e) {
    Expr v = mutate(op->value);
    return v.same_as(op->value) ? e : Broadcast::make(v, op->lanes);
}
Expr IRMutator::visit(const Let *op, const Expr &e) {
    Expr v = mutate(op->value), b = mutate(op->body);
    if (v.same_as(op->value) && b.same_as(op->body)) return e;
    return Let::make(op->name, v, b);
}
Expr IRMutator::visit(const Call *op, const Expr &e) {
    std::vector<Expr> args;
    bool changed = false;
    for (auto &a : op->args) {
        args.push_back(mutate(a));
        changed |= !args.back().same_as(a);
    }
    if (!changed) return e;
    auto n = std::make_shared<Call>(*op);
    n->args = std::move(args);
    return Expr(n);
}
Expr IRMutator::visit(const VectorReduce *op, const Expr &e) {
    Expr v = mutate(op->value);
    return v.same_as(op->value) ? e : VectorReduce::make(op->op, v, op->type.lanes());
}
Stmt IRMutator::visit(const LetStmt *op, const Stmt &s) {
    Expr v = mutate(op->value);
    Stmt b = mutate(op->body);
    if (v.same_as(op->value) && b.same_as(op->body)) return s;
    return LetStmt::make(op->name, v, b);
}
Stmt IRMutator::visit(const AssertStmt *op, const Stmt &s) {
    Expr c = mutate(op->condition);
    std::vector<Expr> args;
    bool changed = !c.same_as(op->condition);
    for (auto &a : op->args) {
        args.push_back(mutate(a));
        changed |= !args.back().same_as(a);
    }
    return changed ? AssertStmt::make(c, op->message, args) : s;
}
Stmt IRMutator::visit(const For *op, const Stmt &s) {
    Expr mi = mutate(op->min), ex = mutate(op->extent);
    Stmt b = mutate(op->body);
    if (mi.same_as(op->min) && ex.same_as(op->extent) && b.same_as(op->body)) return s;
    return For::make(op->name, mi, ex, op->for_type, b);
}
Stmt IRMutator::visit(const Store *op, const Stmt &s) {
    Expr v = mutate(op->value), i = mutate(op->index);
    if (v.same_as(op->value) && i.same_as(op->index)) return s;
    return Store::make(op->name, v, i, op->alignment, op->nontemporal, op->atomic);
}
Stmt IRMutator::visit(const Provide *op, const Stmt &s) {
    Expr v = mutate(op->value);
    bool changed = !v.same_as(op->value);
    std::vector<Expr> args;
    for (auto &a : op->args) {
        args.push_back(mutate(a));
        changed |= !args.back().same_as(a);
    }
    return changed ? Provide::make(op->name, v, args, op->atomic) : s;
}
Stmt IRMutator::visit(const Allocate *op, const Stmt &s) {
    Expr ex = mutate(op->extent);
    Stmt b = mutate(op->body);
    if (ex.same_as(op->extent) && b.same_as(op->body)) return s;
    return Allocate::make(op->name, op->type, ex, op->memory_type, b);
}
Stmt IRMutator::visit(const Realize *op, const Stmt &s) {
    bool changed = false;
    Region r;
    for (auto &b : op->bounds) {
        Range n{mutate(b.min), mutate(b.extent)};
        changed |= !n.min.same_as(b.min) || !n.extent.same_as(b.extent);
        r.push_back(n);
    }
    Stmt body = mutate(op->body);
    changed |= !body.same_as(op->body);
    return changed ? Realize::make(op->name, op->type, r, op->memory_type, body) : s;
}
Stmt IRMutator::visit(const Block *op, const Stmt &s) {
    Stmt f = mutate(op->first), r = mutate(op->rest);
    if (f.same_as(op->first) && r.same_as(op->rest)) return s;
    return Block::make(f, r);
}
Stmt IRMutator::visit(const IfThenElse *op, const Stmt &s) {
    Expr c = mutate(op->condition);
    Stmt t = mutate(op->then_case), e = mutate(op->else_case);
    if (c.same_as(op->condition) && t.same_as(op->then_case) && e.same_as(op->else_case)) return s;
    if (!t.defined()) {
        if (!e.defined()) return Stmt();
        return IfThenElse::make(Not::make(c), e);
    }
    return IfThenElse::make(c, t, e);
}
Stmt IRMutator::visit(const Evaluate *op, const Stmt &s) {
    Expr v = mutate(op->value);
    return v.same_as(op->value) ? s : Evaluate::make(v);
}

// ---------------- utilities ----------------
namespace {
class Substitute : public IRMutator {
public:
    explicit Substitute(const std::map<std::string, Expr> &m) : m_(m) {}
    using IRMutator::mutate;

protected:
    const std::map<std::string, Expr> &m_;
    std::map<std::string, int> shadowed_;
    bool active(const std::string &n) const {
        auto it = shadowed_.find(n);
        return m_.count(n) && (it == shadowed_.end() || it->second == 0);
    }
    Expr visit(const Variable *op, const Expr &e) override {
        if (active(op->name)) return m_.at(op->name);
        return e;
    }
    Expr visit(const Let *op, const Expr &e) override {
        Expr v = mutate(op->value);
        shadowed_[op->name]++;
        Expr b = mutate(op->body);
        shadowed_[op->name]--;
        if (v.same_as(op->value) && b.same_as(op->body)) return e;
        return Let::make(op->name, v, b);
    }
    Stmt visit(const LetStmt *op, const Stmt &s) override {
        Expr v = mutate(op->value);
        shadowed_[op->name]++;
        Stmt b = mutate(op->body);
        shadowed_[op->name]--;
        if (v.same_as(op->value) && b.same_as(op->body)) return s;
        return LetStmt::make(op->name, v, b);
    }
    Stmt visit(const For *op, const Stmt &s) override {
        Expr mi = mutate(op->min), ex = mutate(op->extent);
        shadowed_[op->name]++;
        Stmt b = mutate(op->body);
        shadowed_[op->name]--;
        if (mi.same_as(op->min) && ex.same_as(op->extent) && b.same_as(op->body)) return s;
        return For::make(op->name, mi, ex, op->for_type, b);
    }
};

class UsesVar : public IRVisitor {
public:
    explicit UsesVar(const std::string &n) : name(n) {}
    const std::string &name;
    bool found = false;

protected:
    void visit(const Variable *op) override {
        if (op->name == name) found = true;
    }
    void visit(const Load *op) override {
        if (op->name == name) found = true;
        IRVisitor::visit(op);
    }
    // Statements stop being walked once a use is found (a use is mostly found early: asked for
    // every let of a long chain, a whole walk each made simplification quadratic).
    void visit(const Block *op) override {
        if (!found) include(op->first);
        if (!found) include(op->rest);
    }
    void visit(const LetStmt *op) override {
        if (!found) include(op->value);
        if (!found) include(op->body);
    }
    void visit(const For *op) override {
        if (!found) include(op->min);
        if (!found) include(op->extent);
        if (!found) include(op->body);
    }
    void visit(const IfThenElse *op) override {
        if (!found) include(op->condition);
        if (!found) include(op->then_case);
        if (!found) include(op->else_case);
    }
    void visit(const Store *op) override {
        if (!found) include(op->value);
        if (!found) include(op->index);
    }
};
}  // namespace

Expr substitute(const std::map<std::string, Expr> &m, const Expr &e) {
    if (m.empty()) return e;
    return Substitute(m).mutate(e);
}
Stmt substitute(const std::map<std::string, Expr> &m, const Stmt &s) {
    if (m.empty()) return s;
    return Substitute(m).mutate(s);
}
Expr substitute(const std::string &name, const Expr &value, const Expr &e) {
    std::map<std::string, Expr> m{{name, value}};
    return Substitute(m).mutate(e);
}
Stmt substitute(const std::string &name, const Expr &value, const Stmt &s) {
    std::map<std::string, Expr> m{{name, value}};
    return Substitute(m).mutate(s);
}
Expr substitute_lets(Expr e, const LetStack &lets) {
    for (auto it = lets.rbegin(); it != lets.rend(); ++it)
        if (expr_uses_var(e, it->first)) e = substitute(it->first, it->second, e);
    return e;
}
Stmt substitute_lets(Stmt s, const LetStack &lets) {
    for (auto it = lets.rbegin(); it != lets.rend(); ++it)
        if (stmt_uses_var(s, it->first)) s = substitute(it->first, it->second, s);
    return s;
}
void LoadsStores::visit(const Load *op) {
    reads.insert(op->name);
    IRVisitor::visit(op);
}
void LoadsStores::visit(const Store *op) {
    writes.insert(op->name);
    IRVisitor::visit(op);
}
void flatten(const Stmt &s, std::vector<Stmt> &out) {
    if (auto b = s.as<Block>()) {
        flatten(b->first, out);
        flatten(b->rest, out);
    } else if (s.defined()) {
        out.push_back(s);
    }
}
bool expr_uses_var(const Expr &e, const std::string &name) {
    UsesVar u(name);
    u.include(e);
    return u.found;
}
bool stmt_uses_var(const Stmt &s, const std::string &name) {
    UsesVar u(name);
    u.include(s);
    return u.found;
}
bool expr_uses_any_var(const Expr &e, const std::set<std::string> &names) {
    class Uses : public IRVisitor {
    public:
        const std::set<std::string> &names;
        bool found = false;
        explicit Uses(const std::set<std::string> &n) : names(n) {}

    protected:
        void visit(const Variable *op) override { found = found || names.count(op->name); }
    } u(names);
    u.include(e);
    return u.found;
}

// Node by node: types, names, constants (floats by value and sign), the Funcs and inputs
// called, and the Params and RDoms of variables.
static bool equal_all(const std::vector<Expr> &a, const std::vector<Expr> &b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); i++)
        if (!equal(a[i], b[i])) return false;
    return true;
}
template <typename T>
static bool equal_binary(const ExprNode *x, const ExprNode *y) {
    auto *p = static_cast<const T *>(x);
    auto *q = static_cast<const T *>(y);
    return equal(p->a, q->a) && equal(p->b, q->b);
}
bool equal(const Expr &a, const Expr &b) {
    if (a.same_as(b)) return true;
    if (!a.defined() || !b.defined()) return false;
    if (stack_low()) return on_large_stack<bool>([&] { return equal(a, b); });
    const ExprNode *x = a.get(), *y = b.get();
    if (x->node_type != y->node_type || !(x->type == y->type)) return false;
    switch (x->node_type) {
    case IRNodeType::IntImm: return static_cast<const IntImm *>(x)->value == static_cast<const IntImm *>(y)->value;
    case IRNodeType::UIntImm: return static_cast<const UIntImm *>(x)->value == static_cast<const UIntImm *>(y)->value;
    case IRNodeType::FloatImm: {
        // Bit for bit: 0.0 and -0.0 differ, a NaN equals the same NaN.
        double p = static_cast<const FloatImm *>(x)->value, q = static_cast<const FloatImm *>(y)->value;
        return std::memcmp(&p, &q, sizeof p) == 0;
    }
    case IRNodeType::StringImm:
        return static_cast<const StringImm *>(x)->value == static_cast<const StringImm *>(y)->value;
    case IRNodeType::Variable: {
        auto *p = static_cast<const Variable *>(x);
        auto *q = static_cast<const Variable *>(y);
        return p->name == q->name && p->param == q->param && p->rdom == q->rdom;
    }
    case IRNodeType::Cast: return equal(static_cast<const Cast *>(x)->value, static_cast<const Cast *>(y)->value);
    case IRNodeType::Add: return equal_binary<Add>(x, y);
    case IRNodeType::Sub: return equal_binary<Sub>(x, y);
    case IRNodeType::Mul: return equal_binary<Mul>(x, y);
    case IRNodeType::Div: return equal_binary<Div>(x, y);
    case IRNodeType::Mod: return equal_binary<Mod>(x, y);
    case IRNodeType::Min: return equal_binary<Min>(x, y);
    case IRNodeType::Max: return equal_binary<Max>(x, y);
    case IRNodeType::EQ: return equal_binary<EQ>(x, y);
    case IRNodeType::NE: return equal_binary<NE>(x, y);
    case IRNodeType::LT: return equal_binary<LT>(x, y);
    case IRNodeType::LE: return equal_binary<LE>(x, y);
    case IRNodeType::GT: return equal_binary<GT>(x, y);
    case IRNodeType::GE: return equal_binary<GE>(x, y);
    case IRNodeType::And: return equal_binary<And>(x, y);
    case IRNodeType::Or: return equal_binary<Or>(x, y);
    case IRNodeType::Not: return equal(static_cast<const Not *>(x)->a, static_cast<const Not *>(y)->a);
    case IRNodeType::Select: {
        auto *p = static_cast<const Select *>(x);
        auto *q = static_cast<const Select *>(y);
        return equal(p->condition, q->condition) && equal(p->true_value, q->true_value) &&
               equal(p->false_value, q->false_value);
    }
    case IRNodeType::Load: {
        auto *p = static_cast<const Load *>(x);
        auto *q = static_cast<const Load *>(y);
        return p->name == q->name && equal(p->index, q->index);
    }
    case IRNodeType::Ramp: {
        auto *p = static_cast<const Ramp *>(x);
        auto *q = static_cast<const Ramp *>(y);
        return p->lanes == q->lanes && equal(p->base, q->base) && equal(p->stride, q->stride);
    }
    case IRNodeType::Broadcast: {
        auto *p = static_cast<const Broadcast *>(x);
        auto *q = static_cast<const Broadcast *>(y);
        return p->lanes == q->lanes && equal(p->value, q->value);
    }
    case IRNodeType::Let: {
        auto *p = static_cast<const Let *>(x);
        auto *q = static_cast<const Let *>(y);
        return p->name == q->name && equal(p->value, q->value) && equal(p->body, q->body);
    }
    case IRNodeType::Call: {
        auto *p = static_cast<const Call *>(x);
        auto *q = static_cast<const Call *>(y);
        return p->name == q->name && p->call_type == q->call_type && p->func == q->func &&
               p->value_index == q->value_index && p->image == q->image && p->buffer == q->buffer && equal_all(p->args, q->args);
    }
    case IRNodeType::VectorReduce: {
        auto *p = static_cast<const VectorReduce *>(x);
        auto *q = static_cast<const VectorReduce *>(y);
        return p->op == q->op && equal(p->value, q->value);
    }
    default: return false;
    }
}

static bool equal_regions(const Region &a, const Region &b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); i++)
        if (!equal(a[i].min, b[i].min) || !equal(a[i].extent, b[i].extent)) return false;
    return true;
}

bool equal(const Stmt &a, const Stmt &b) {
    if (a.same_as(b)) return true;
    if (!a.defined() || !b.defined()) return false;
    if (stack_low()) return on_large_stack<bool>([&] { return equal(a, b); });
    const StmtNode *x = a.get(), *y = b.get();
    if (x->node_type != y->node_type) return false;
    switch (x->node_type) {
    case IRNodeType::LetStmt: {
        auto *p = static_cast<const LetStmt *>(x);
        auto *q = static_cast<const LetStmt *>(y);
        return p->name == q->name && equal(p->value, q->value) && equal(p->body, q->body);
    }
    case IRNodeType::AssertStmt: {
        auto *p = static_cast<const AssertStmt *>(x);
        auto *q = static_cast<const AssertStmt *>(y);
        return p->message == q->message && equal(p->condition, q->condition) && equal_all(p->args, q->args);
    }
    case IRNodeType::For: {
        auto *p = static_cast<const For *>(x);
        auto *q = static_cast<const For *>(y);
        return p->name == q->name && p->for_type == q->for_type && equal(p->min, q->min) &&
               equal(p->extent, q->extent) && equal(p->body, q->body);
    }
    case IRNodeType::Store: {
        auto *p = static_cast<const Store *>(x);
        auto *q = static_cast<const Store *>(y);
        return p->name == q->name && p->alignment == q->alignment && p->nontemporal == q->nontemporal &&
               p->atomic == q->atomic && equal(p->value, q->value) && equal(p->index, q->index);
    }
    case IRNodeType::Provide: {
        auto *p = static_cast<const Provide *>(x);
        auto *q = static_cast<const Provide *>(y);
        return p->name == q->name && p->atomic == q->atomic && equal(p->value, q->value) && equal_all(p->args, q->args);
    }
    case IRNodeType::Allocate: {
        auto *p = static_cast<const Allocate *>(x);
        auto *q = static_cast<const Allocate *>(y);
        return p->name == q->name && p->type == q->type && p->memory_type == q->memory_type &&
               equal(p->extent, q->extent) && equal(p->body, q->body);
    }
    case IRNodeType::Realize: {
        auto *p = static_cast<const Realize *>(x);
        auto *q = static_cast<const Realize *>(y);
        return p->name == q->name && p->type == q->type && p->memory_type == q->memory_type &&
               equal_regions(p->bounds, q->bounds) && equal(p->body, q->body);
    }
    case IRNodeType::Block: {
        // Long chains of statements: along `rest` by a loop, not by recursion.
        Stmt r = a, t = b;
        while (r.as<Block>() && t.as<Block>()) {
            auto *p = r.as<Block>();
            auto *q = t.as<Block>();
            if (!equal(p->first, q->first)) return false;
            r = p->rest;
            t = q->rest;
            if (r.same_as(t)) return true;
            if (!r.defined() || !t.defined()) return false;
        }
        return !r.as<Block>() && !t.as<Block>() && equal(r, t);
    }
    case IRNodeType::IfThenElse: {
        auto *p = static_cast<const IfThenElse *>(x);
        auto *q = static_cast<const IfThenElse *>(y);
        return equal(p->condition, q->condition) && equal(p->then_case, q->then_case) &&
               (p->else_case.defined() == q->else_case.defined()) &&
               (!p->else_case.defined() || equal(p->else_case, q->else_case));
    }
    case IRNodeType::Evaluate:
        return equal(static_cast<const Evaluate *>(x)->value, static_cast<const Evaluate *>(y)->value);
    default: return false;
    }
}

AtomicUpdate atomic_update(const Store *op, const std::string &old) {
    class ReplaceLoads : public IRMutator {
    public:
        const Store *st = nullptr;
        Expr old;
        bool found = false;

    protected:
        Expr visit(const Load *l, const Expr &e) override {
            if (l->name != st->name) return IRMutator::visit(l, e);
            found = true;
            return old;
        }
    } r;
    r.st = op;
    r.old = Variable::make(op->value.type(), old);
    AtomicUpdate u;
    u.value = r.mutate(op->value);
    if (!r.found) {
        u.op = AtomicUpdate::Plain;
        return u;
    }
    auto is_old = [&](const Expr &e) {
        auto v = e.as<Variable>();
        return v && v->name == old;
    };
    if (auto c = u.value.as<Call>()) {
        // f = fma(a, b, f), a multiply-add written in the update (lower/FuseMultiplyAdds.h): an
        // atomic add of the rounded product (an atomic add cannot fuse; atomic updates already
        // add in no fixed order).
        if (c->is_intrinsic("fma") && c->args.size() == 3 && is_old(c->args[2]) && !expr_uses_var(c->args[0], old) &&
            !expr_uses_var(c->args[1], old)) {
            u.op = AtomicUpdate::Add;
            u.operand = Mul::make(c->args[0], c->args[1]);
        }
        return u;
    }
    IRNodeType nt = u.value.get()->node_type;
    if (nt != IRNodeType::Add && nt != IRNodeType::Sub && nt != IRNodeType::Min && nt != IRNodeType::Max) return u;
    auto b = static_cast<const BinaryExprNode *>(u.value.get());
    Expr e;
    if (is_old(b->a) && !expr_uses_var(b->b, old)) e = b->b;
    else if (nt != IRNodeType::Sub && is_old(b->b) && !expr_uses_var(b->a, old)) e = b->a;
    else return u;
    u.operand = e;
    u.op = nt == IRNodeType::Add ? AtomicUpdate::Add : nt == IRNodeType::Sub ? AtomicUpdate::Sub
           : nt == IRNodeType::Min ? AtomicUpdate::Min : AtomicUpdate::Max;
    return u;
}

}  // namespace internal
}  // namespace weft
