// Vector loads and stores of internal allocations are marked aligned where the index provably
// is a multiple of the vector width (and results are unchanged).
#include <gtest/gtest.h>
#include <weft/weft.h>

using namespace weft;

namespace {

TEST(Alignment, DenseAccessesOfAStageAreAligned) {
    Var x("x"), y("y"), xi("xi");
    Buffer<float> in(66, 10);
    in.set_min(-1, 0);
    for (int j = 0; j < 10; j++)
        for (int i = -1; i < 65; i++) in(i, j) = (float)(i * 3 + j);
    Func a("align_a"), b("align_b");
    a(x, y) = in(x - 1, y) + in(x + 1, y);
    b(x, y) = a(x, y) * 2.0f;
    b.vectorize(x, 16);
    a.compute_at(b, y).vectorize(x, 16);
    std::string ir = Pipeline(b).lowered_ir({64, 10});
    std::string last = ir.substr(ir.find("after align_loads"));
    // a's store and b's load of a are at multiples of 16 elements.
    EXPECT_NE(last.find("]@16 = "), std::string::npos) << last;
    EXPECT_NE(last.find("]@16"), std::string::npos) << last;
    Buffer<float> out = b.realize({64, 10});
    for (int j = 0; j < 10; j++)
        for (int i = 0; i < 64; i++) EXPECT_EQ(out(i, j), (in(i - 1, j) + in(i + 1, j)) * 2.0f);
}

}  // namespace
