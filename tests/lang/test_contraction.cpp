// The contraction rule: a floating-point multiply-add written in one definition is always fused
// (one rounding, as std::fma), and nothing else is, whatever the schedule, the backend or the
// interpreter: a product defined in one Func and added in another gives the same bits inlined,
// computed at root, vectorized or interpreted.
#include <gtest/gtest.h>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include "pipeline/PipelineInternal.h"
#include "weft/weft.h"

using namespace weft;

namespace {

const int N = 4096;

Buffer<float> random_buffer(unsigned seed, const char *name) {
    Buffer<float> b(std::vector<int>{N}, name);
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    for (int i = 0; i < N; i++) b(i) = d(rng);
    return b;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

/** a * b rounded, then + c rounded: no fusion (volatile keeps the compiler from contracting). */
float unfused(float a, float b, float c) {
    volatile float p = a * b;
    return p + c;
}

struct Inputs {
    Buffer<float> A = random_buffer(1, "ca"), B = random_buffer(2, "cb"), C = random_buffer(3, "cc");
};

/** The schedules tried on a consumer f of a producer g (g may be null). */
std::vector<std::pair<std::string, std::function<void(Func &, Func *)>>> schedules() {
    Var x("x"), xo("xo"), xi("xi");
    return {
        {"default", [](Func &, Func *) {}},
        {"vectorized 8", [=](Func &f, Func *g) {
             f.vectorize(f.args()[0], 8);
             (void)g;
         }},
        {"vectorized 16, split, parallel", [=](Func &f, Func *) {
             Var v = f.args()[0];
             f.split(v, xo, xi, 256).parallel(xo).vectorize(xi, 16);
         }},
        {"producer at root", [](Func &f, Func *g) {
             if (g) g->compute_root();
             f.vectorize(f.args()[0], 8);
         }},
        {"producer at root, vectorized", [](Func &f, Func *g) {
             if (g) g->compute_root().vectorize(g->args()[0], 16);
         }},
        {"producer at the consumer's tiles", [=](Func &f, Func *g) {
             Var v = f.args()[0];
             f.split(v, xo, xi, 64).vectorize(xi, 8);
             if (g) g->compute_at(f, xo).vectorize(g->args()[0], 8);
         }},
    };
}

/** Realizes the Func make() returns under every schedule, and in the interpreter; every result
    must equal expect(i) bit for bit. */
void check_everywhere(const std::function<std::pair<Func, Func *>()> &make, const std::function<float(int)> &expect) {
    for (auto &[name, sched] : schedules()) {
        SCOPED_TRACE(name);
        auto [f, g] = make();
        sched(f, g);
        Buffer<float> out = f.realize({N});
        int bad = 0;
        for (int i = 0; i < N; i++)
            if (!same_bits(out(i), expect(i)) && bad++ < 3) ADD_FAILURE() << "at " << i << ": " << out(i) << " != " << expect(i);
        EXPECT_EQ(bad, 0);
    }
    auto [f, g] = make();
    Buffer<float> ref(N);
    internal::interpret_pipeline(Pipeline(f), {ref});
    int bad = 0;
    for (int i = 0; i < N; i++)
        if (!same_bits(ref(i), expect(i)) && bad++ < 3) ADD_FAILURE() << "interpreter at " << i;
    EXPECT_EQ(bad, 0) << "the interpreter";
}

TEST(Contraction, TheDataTellsFusedFromUnfused) {
    Inputs in;
    int differ = 0;
    for (int i = 0; i < N; i++) differ += !same_bits(std::fma(in.A(i), in.B(i), in.C(i)), unfused(in.A(i), in.B(i), in.C(i)));
    EXPECT_GT(differ, N / 10) << "the tests below could not tell fused from unfused";
}

TEST(Contraction, AMultiplyAddWrittenInOneDefinitionIsAlwaysFused) {
    Inputs in;
    auto make = [&](int form) {
        return [&, form]() -> std::pair<Func, Func *> {
            Var x("x");
            Func f("fused");
            Expr a = in.A(x), b = in.B(x), c = in.C(x);
            switch (form) {
            case 0: f(x) = a * b + c; break;
            case 1: f(x) = c + a * b; break;
            case 2: f(x) = a * b - c; break;
            default: f(x) = c - a * b; break;
            }
            return {f, nullptr};
        };
    };
    check_everywhere(make(0), [&](int i) { return std::fma(in.A(i), in.B(i), in.C(i)); });
    check_everywhere(make(1), [&](int i) { return std::fma(in.A(i), in.B(i), in.C(i)); });
    check_everywhere(make(2), [&](int i) { return std::fma(in.A(i), in.B(i), -in.C(i)); });
    check_everywhere(make(3), [&](int i) { return std::fma(-in.A(i), in.B(i), in.C(i)); });
}

TEST(Contraction, AProductDefinedInAnotherFuncIsNeverFused) {
    // The case: g = a * b, f = g + c. Inlined, g's product meets f's sum, but they were
    // written in two definitions: never fused, so inlined and at root agree.
    Inputs in;
    Func g;
    auto make = [&]() -> std::pair<Func, Func *> {
        Var x("x");
        g = Func("product");
        Func f("sum");
        g(x) = in.A(x) * in.B(x);
        f(x) = g(x) + in.C(x);
        return {f, &g};
    };
    check_everywhere(make, [&](int i) { return unfused(in.A(i), in.B(i), in.C(i)); });
}

TEST(Contraction, AnUpdateAccumulatesWithFusedSteps) {
    // f(x) += a(r) * b(r): each step fma(a, b, f), in order (a serial reduction).
    Inputs in;
    const int R = 64, W = N / R;
    auto make = [&]() -> std::pair<Func, Func *> {
        Var x("x");
        RDom r(0, R);
        Func f("dot");
        f(x) = in.C(x);
        f(x) += in.A(r + (x % W) * R) * in.B(r + (x % W) * R);
        return {f, nullptr};
    };
    check_everywhere(make, [&](int i) {
        float acc = in.C(i);
        int base = (i % W) * R;
        for (int r = 0; r < R; r++) acc = std::fma(in.A(base + r), in.B(base + r), acc);
        return acc;
    });
}

TEST(Contraction, BoundsOfAnIndexComputedByAMultiplyAdd) {
    // A resampling index: floor(x * 0.5 + 0.25) is an fma now; bounds inference still bounds it
    // (exactly: the corners' fma()s), so the input needs no more than its real extent.
    Buffer<float> in(std::vector<int>{N / 2 + 1}, "half");
    for (int i = 0; i <= N / 2; i++) in(i) = (float)i;
    Var x("x");
    Func f("upsample");
    Expr fx = cast<float>(x) * 0.5f + 0.25f;
    f(x) = in(cast<int>(floor(fx)));
    f.vectorize(x, 8);
    Buffer<float> out = f.realize({N});
    for (int i = 0; i < N; i++) ASSERT_EQ(out(i), (float)(int)std::floor(std::fma((float)i, 0.5f, 0.25f)));
}

}  // namespace
