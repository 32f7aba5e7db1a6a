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

// store_nontemporal: the same values whatever the vector width (4 to 64 bytes; 12 bytes is not
// streamed), the buffer's alignment (checked at run time) and the threads; nothing outside the
// output is written; the lowered IR marks the stores.
TEST(Alignment, NontemporalStoresSameResults) {
    const int W = 37, H = 6;
    for (int vec : {3, 4, 8, 16}) {
        for (int shift : {0, 1, 16}) {
            for (bool par : {false, true}) {
                std::vector<float> mem(W * H + 64 + 32, -5.0f);
                float *base = mem.data();
                while ((uintptr_t)base % 64) base++;
                Buffer<float> out(base + shift, {W, H});
                Var x("x"), y("y");
                Func f("nt_f");
                f(x, y) = cast<float>(x) * 2.0f + cast<float>(y);
                f.vectorize(x, vec).store_nontemporal();
                if (par) f.parallel(y);
                f.realize(out);
                for (int k = 0; k < (int)mem.size(); k++) {
                    float *p = mem.data() + k;
                    long rel = (long)(p - (base + shift));
                    float want = rel >= 0 && rel < W * H ? (float)(rel % W) * 2.0f + (float)(rel / W) : -5.0f;
                    ASSERT_EQ(*p, want) << "vec " << vec << " shift " << shift << " parallel " << par << " at " << rel;
                }
            }
        }
    }
    Var x("x"), y("y");
    Func g("nt_g");
    g(x, y) = x + y;
    g.vectorize(x, 16).store_nontemporal();
    std::string ir = Pipeline(g).lowered_ir({64, 4});
    EXPECT_NE(ir.substr(ir.find("after align_loads")).find("(nontemporal)"), std::string::npos) << ir;
    g.store_nontemporal(false);
    ir = Pipeline(g).lowered_ir({64, 4});
    EXPECT_EQ(ir.substr(ir.find("after align_loads")).find("(nontemporal)"), std::string::npos) << ir;
}

}  // namespace
