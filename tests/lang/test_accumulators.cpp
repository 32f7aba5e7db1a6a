// A reduction register-blocked directly on a pipeline's output keeps its block of accumulators
// in a stack tile across the reduction loop (lower/PromoteAccumulators): the results are the
// interpreter's bit for bit, on sizes that are and are not multiples of the block, and the tile
// is used only where it is exact (the value reads the output only at the element written).
#include <gtest/gtest.h>
#include <cstring>
#include <random>
#include "pipeline/PipelineInternal.h"
#include "weft/weft.h"

using namespace weft;

namespace {

Buffer<float> random_2d(int w, int h, unsigned seed) {
    Buffer<float> b(w, h);
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) b(x, y) = d(rng);
    return b;
}

/** f realized by the JIT and by the interpreter: the same bits everywhere. */
void expect_interpreter_bits(Func f, const std::vector<int> &sizes) {
    Buffer<float> got(sizes), ref(sizes);
    Pipeline(f).realize(got);
    internal::interpret_pipeline(Pipeline(f), {ref});
    ASSERT_EQ(std::memcmp(got.raw_data(), ref.raw_data(), (size_t)got.number_of_elements() * sizeof(float)), 0) << "JIT and interpreter differ";
}

struct MatMul {
    ImageParam a{Float(32), 2, "a"}, w{Float(32), 2, "w"};
    Var j{"j"}, t{"t"}, jo{"jo"}, to{"to"}, ji{"ji"}, ti{"ti"};
    RDom k;
    Func mm{"mm"};
    Buffer<float> A, W;
    MatMul(int n, int tokens, int k_in) : k(0, k_in, "k"), A(random_2d(k_in, tokens, 1)), W(random_2d(n, k_in, 2)) {
        mm(j, t) = 0.0f;
        mm(j, t) += a(k, t) * w(j, k);
        a.set(A);
        w.set(W);
    }
};

bool has_tile(Func f, const std::vector<int> &sizes) {
    return Pipeline(f).lowered_ir(sizes).find("allocate mm$acc") != std::string::npos;
}

}  // namespace

TEST(Accumulators, AnOutputsRegisterBlockIsHeldInATileAcrossItsReduction) {
    for (auto [n, tokens, k_in] : {std::tuple{128, 12, 64}, std::tuple{131, 13, 37}, std::tuple{17, 5, 9}}) {
        SCOPED_TRACE("n " + std::to_string(n) + ", tokens " + std::to_string(tokens) + ", k " + std::to_string(k_in));
        MatMul m(n, tokens, k_in);
        m.mm.vectorize(m.j, 16);
        m.mm.update()
            .tile(m.j, m.t, m.jo, m.to, m.ji, m.ti, 64, 6)
            .reorder(m.ji, m.ti, m.k, m.jo, m.to)
            .vectorize(m.ji, 16)
            .unroll(m.ji)
            .unroll(m.ti)
            .parallel(m.to);
        // (17 wide: the block's rows, 64 apart in the tile, are 17 apart in the output; the
        // elements its guards leave out would share slots, so the output is updated in place.)
        EXPECT_EQ(has_tile(m.mm, {n, tokens}), n != 17);
        expect_interpreter_bits(m.mm, {n, tokens});
    }
}

TEST(Accumulators, AReductionUnrolledInsideItsLoopAccumulatesInOneSlot) {
    // The inner half of a split reduction unrolled under the outer: every step of it writes
    // the same element (a step of 0 in the tile), in the reduction's order.
    RVar ko("ko"), ki("ki");
    MatMul m2(40, 7, 48);
    m2.mm.update().split(m2.k, ko, ki, 4).reorder(ki, ko, m2.j, m2.t).unroll(ki);
    EXPECT_TRUE(has_tile(m2.mm, {40, 7}));
    expect_interpreter_bits(m2.mm, {40, 7});
}

TEST(Accumulators, NoTileWhereTheUpdateReadsOtherElementsOfTheOutput) {
    // A scan along t reads the row before: each step must see what the last one wrote.
    ImageParam in(Float(32), 2, "in");
    Buffer<float> I = random_2d(33, 9, 3);
    in.set(I);
    Var x("x"), y("y"), xo("xo"), xi("xi");
    RDom r(1, 8, "r");
    Func mm("mm");
    mm(x, y) = in(x, y);
    mm(x, r) = mm(x, r - 1) * 0.5f + in(x, r);
    mm.update().split(x, xo, xi, 8).reorder(xi, r, xo).unroll(xi);
    EXPECT_FALSE(has_tile(mm, {33, 9}));
    expect_interpreter_bits(mm, {33, 9});
    // A histogram-like update writes where the data says: no tile either.
    Func h("mm");
    ImageParam idx(Int(32), 1, "idx");
    Buffer<int> Ix(16);
    for (int i = 0; i < 16; i++) Ix(i) = (i * 7) % 5;
    idx.set(Ix);
    RDom q(0, 16, "q");
    h(x, y) = 0.0f;
    h(clamp(idx(q), 0, 4), y) += 1.0f;
    EXPECT_FALSE(has_tile(h, {5, 3}));
}
