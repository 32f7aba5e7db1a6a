// Structural equality of Exprs and Stmts (src/ir/IRVisitor.cpp): node by node, every field,
// never through the printed text (which leaves out some fields, such as a store's hints).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "ir/IR.h"
#include "ir/IRVisitor.h"

namespace {

using namespace weft;
using namespace weft::internal;

Stmt store(const std::string &buf, int value, int alignment = 0, bool nontemporal = false, bool atomic = false) {
    return Store::make(buf, Expr(value), Variable::make(Int(32), "i"), alignment, nontemporal, atomic);
}

Stmt nest(int value, ForType ft = ForType::Serial, int alignment = 0, bool nontemporal = false, bool atomic = false) {
    Stmt body = store("b", value, alignment, nontemporal, atomic);
    body = IfThenElse::make(LT::make(Variable::make(Int(32), "i"), Expr(5)), body, Evaluate::make(Expr(0)));
    body = For::make("i", Expr(0), Expr(10), ft, body);
    body = Allocate::make("b", Float(32), make_const(Int(64), (int64_t)10), MemoryType::Heap, body);
    return LetStmt::make("n", Expr(3), Block::make(AssertStmt::make(Expr(true), "n is %", {Variable::make(Int(32), "n")}), body));
}

TEST(IREquality, StmtsBuiltTwiceAreEqual) {
    EXPECT_TRUE(equal(nest(1), nest(1)));
    EXPECT_FALSE(equal(nest(1), nest(2)));
    EXPECT_FALSE(equal(nest(1), nest(1, ForType::Parallel)));
    EXPECT_FALSE(equal(nest(1), Stmt()));
    EXPECT_TRUE(equal(Stmt(), Stmt()));
}

TEST(IREquality, EveryFieldOfAStoreCounts) {
    EXPECT_TRUE(equal(store("b", 1, 16, true), store("b", 1, 16, true)));
    EXPECT_FALSE(equal(store("b", 1, 16), store("b", 1, 32)));
    EXPECT_FALSE(equal(store("b", 1), store("b", 1, 0, true)));
    EXPECT_FALSE(equal(store("b", 1), store("b", 1, 0, false, true)));
    EXPECT_FALSE(equal(store("b", 1), store("c", 1)));
}

TEST(IREquality, IfWithAndWithoutElse) {
    Expr c = LT::make(Variable::make(Int(32), "i"), Expr(5));
    Stmt t = store("b", 1);
    EXPECT_TRUE(equal(IfThenElse::make(c, t), IfThenElse::make(c, t)));
    EXPECT_FALSE(equal(IfThenElse::make(c, t), IfThenElse::make(c, t, t)));
}

TEST(IREquality, FloatsBitForBit) {
    double nan = std::numeric_limits<double>::quiet_NaN();
    EXPECT_TRUE(equal(FloatImm::make(Float(64), nan), FloatImm::make(Float(64), nan)));
    EXPECT_FALSE(equal(FloatImm::make(Float(64), 0.0), FloatImm::make(Float(64), -0.0)));
    EXPECT_FALSE(equal(FloatImm::make(Float(32), 1.0), FloatImm::make(Float(64), 1.0)));
}

// A long sequence of statements compares in a loop: no deep recursion, and time linear in its length.
TEST(IREquality, LongBlocks) {
    std::vector<Stmt> a, b;
    for (int i = 0; i < 200000; i++) {
        a.push_back(store("b", i));
        b.push_back(store("b", i));
    }
    Stmt x = Block::make(a), y = Block::make(b);
    EXPECT_TRUE(equal(x, y));
    b.back() = store("b", -1);
    EXPECT_FALSE(equal(x, Block::make(b)));
    b.pop_back();
    EXPECT_FALSE(equal(x, Block::make(b)));
}

}  // namespace
