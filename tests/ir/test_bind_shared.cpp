// Tests of bind_shared_subexpressions (src/ir/BindShared.cpp), of the stack guard of deep
// recursions (src/ir/Stack.h) and of the release of deep IR without recursion (Expr, Stmt).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <unordered_set>

#include "ir/BindShared.h"
#include "ir/IR.h"
#include "ir/IRVisitor.h"
#include "ir/Stack.h"
#include "weft/weft.h"

namespace {

using namespace weft;
using namespace weft::internal;

/** Nodes of e's graph (each once) and of its tree (saturating at 2^40). */
struct Sizes {
    size_t graph = 0;
    uint64_t tree = 0;
};
Sizes sizes(const Expr &e) {
    class Count : public IRMutator {
    public:
        std::unordered_set<const ExprNode *> seen;
        std::unordered_map<const ExprNode *, uint64_t> tree;
        uint64_t acc = 0;
        Expr mutate(const Expr &x) override {
            if (!x.defined()) return x;
            auto it = tree.find(x.get());
            if (it == tree.end()) {
                uint64_t saved = acc;
                acc = 0;
                IRMutator::mutate(x);
                it = tree.emplace(x.get(), std::min<uint64_t>(acc + 1, (uint64_t)1 << 40)).first;
                acc = saved;
            }
            acc = std::min<uint64_t>(acc + it->second, (uint64_t)1 << 40);
            return x;
        }
    } c;
    c.mutate(e);
    return {c.tree.size(), c.tree.at(e.get())};
}

Expr newton(Expr a, int steps) {
    Expr r = 1.0f / (a + 1.0f);  // (below sqrt(3 / a): the steps converge)
    for (int i = 0; i < steps; i++) r = r * (1.5f - 0.5f * a * r * r);
    return r;
}

TEST(BindShared, SharedStepsBecomeLetsAndTheTreeShrinks) {
    Var x("x");
    Expr a = cast<float>(x) + 0.5f;
    Expr e = newton(a, 30);
    Sizes before = sizes(e);
    EXPECT_GT(before.tree, (uint64_t)1 << 30);  // about 3^30 as a tree
    EXPECT_LT(before.graph, 400u);
    Expr b = bind_shared_subexpressions(e);
    Sizes after = sizes(b);
    EXPECT_LT(after.tree, 2000u);
    EXPECT_NE(b.as<Let>(), nullptr);
}

TEST(BindShared, SmallOrTreeLikeExpressionsUnchanged) {
    Var x("x");
    Expr t = cast<float>(x) * 2.0f;
    Expr small = t * t + t;  // shared, but its tree is small
    EXPECT_TRUE(bind_shared_subexpressions(small).same_as(small));
    Expr chain = cast<float>(x);
    for (int i = 0; i < 5000; i++) chain = chain * 0.5f + 1.0f;  // large, but a tree
    EXPECT_TRUE(bind_shared_subexpressions(chain).same_as(chain));
}

// A shared subexpression that uses a name bound by a Let inside the expression stays inside it.
TEST(BindShared, NamesBoundInsideStayInScope) {
    Expr v = Variable::make(Float(32), "inner");
    Expr use = v * v + 1.0f;  // uses the Let's name: cannot move above the Let
    for (int i = 0; i < 14; i++) use = use + use * 0.5f;
    Expr free_part = Variable::make(Float(32), "x") * 3.0f;
    for (int i = 0; i < 14; i++) free_part = free_part + free_part * 0.5f;
    Expr e = Let::make("inner", Variable::make(Float(32), "x") + 1.0f, use + free_part);
    Expr b = bind_shared_subexpressions(e);
    ASSERT_FALSE(b.same_as(e));
    // Walking the result down its Lets to the original Let: everything bound above it is free of "inner".
    class UsesInner : public IRVisitor {
    public:
        bool found = false;
        void visit(const Variable *op) override { found = found || op->name == "inner"; }
    };
    Expr cur = b;
    int bound_above = 0;
    while (auto l = cur.as<Let>()) {
        if (l->name == "inner") break;
        UsesInner u;
        u.include(l->value);
        EXPECT_FALSE(u.found) << l->name;
        bound_above++;
        cur = l->body;
    }
    EXPECT_GT(bound_above, 0);
    ASSERT_NE(cur.as<Let>(), nullptr);
    EXPECT_EQ(cur.as<Let>()->name, "inner");
}

// A shared subexpression inside a Let but free of its name moves up; the same graph used both
// inside and outside a Let's scope is measured once (its use of the name counted at each use);
// where two Lets bind one name, nothing moves.
TEST(BindShared, LetScopesAndRepeatedNames) {
    Expr xv = Variable::make(Float(32), "x"), iv = Variable::make(Float(32), "inner");
    Expr free_part = xv * 3.0f;
    for (int i = 0; i < 14; i++) free_part = free_part + free_part * 0.5f;
    Expr e = Let::make("inner", xv + 1.0f, iv * free_part);
    Expr b = bind_shared_subexpressions(e);
    ASSERT_FALSE(b.same_as(e));
    EXPECT_NE(b.as<Let>()->name, "inner");  // the shared steps are bound above it
    EXPECT_LT(sizes(b).tree, 400u);
    // `inner` free outside its Let (another value of the same name) and bound inside: the
    // subexpression that uses it stays at its two places.
    Expr shared = iv * 2.0f;
    for (int i = 0; i < 14; i++) shared = shared + shared * 0.5f;
    Expr both = shared + Let::make("inner", xv, shared);
    Expr bb = bind_shared_subexpressions(both);
    class Bound : public IRVisitor {
    public:
        std::vector<std::string> lets;
        void visit(const Let *op) override {
            lets.push_back(op->name);
            IRVisitor::visit(op);
        }
    };
    // Nothing using `inner` is bound at the top: only subexpressions free of it.
    Expr cur = bb;
    while (auto l = cur.as<Let>()) {
        if (l->name == "inner") break;
        class UsesInner : public IRVisitor {
        public:
            bool found = false;
            void visit(const Variable *op) override { found = found || op->name == "inner"; }
        } u;
        u.include(l->value);
        EXPECT_FALSE(u.found) << l->name;
        cur = l->body;
    }
    // Two Lets of one name: unchanged.
    Expr twice = Let::make("inner", xv, shared) + Let::make("inner", xv * 2.0f, shared);
    EXPECT_TRUE(bind_shared_subexpressions(twice).same_as(twice));
}

// The same values as computing the tree: Newton steps for 1/sqrt on the CPU (JIT) and in a sum.
TEST(BindShared, SharedValuesRunOnce) {
    Var x("x");
    Func f("newton");
    Expr a = cast<float>(x) + 0.5f;
    f(x) = newton(a, 40);
    Buffer<float> o = f.realize({64});
    for (int i = 0; i < 64; i++) EXPECT_NEAR(o(i), 1.0f / std::sqrt(i + 0.5f), 1e-5f) << i;

    RDom r(0, 8, "r");
    Func g("newton_sum");
    g(x) = sum(newton(cast<float>(x + r) + 0.5f, 40));
    Buffer<float> s = g.realize({16});
    for (int i = 0; i < 16; i++) {
        double want = 0;
        for (int k = 0; k < 8; k++) want += 1.0 / std::sqrt(i + k + 0.5);
        EXPECT_NEAR(s(i), want, 1e-4) << i;
    }
}

TEST(DeepRecursion, StackGuardMovesToALargeStack) {
    // A recursion deeper than this thread's stack allows finishes: each level checks stack_low().
    struct Rec {
        static uint64_t down(uint64_t n) {
            volatile char pad[256];
            pad[0] = (char)n;
            if (n == 0) return pad[0];
            if (stack_low()) return on_large_stack<uint64_t>([&] { return down(n); });
            return down(n - 1) + 1 + pad[0] * 0;
        }
    };
    EXPECT_EQ(Rec::down(200000), 200000u);  // about 60 MiB of frames
    EXPECT_THROW(on_large_stack<int>([]() -> int { throw Error("from the other thread"); }), Error);
}

// A million-node chain is released without recursion (the release of an Expr or a Stmt that holds
// the last reference to a long chain used to recurse once per node).
TEST(DeepRecursion, LongChainsReleaseIteratively) {
    {
        Expr e = Variable::make(Int(32), "x");
        for (int i = 0; i < 1000000; i++) e = Add::make(e, IntImm::make(Int(32), 1));
        Expr other = e;  // two references: releasing one keeps the chain
        e = Expr();
        EXPECT_NE(other.as<Add>(), nullptr);
    }
    Stmt s = Evaluate::make(IntImm::make(Int(32), 0));
    for (int i = 0; i < 1000000; i++) s = Block::make(Evaluate::make(IntImm::make(Int(32), i)), s);
    s = Stmt();
    EXPECT_FALSE(s.defined());
}

}  // namespace
