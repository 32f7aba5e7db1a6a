// Stage::atomic(): updates whose reduction loops run in parallel, with atomic read-modify-writes
// (histograms, scatter-adds, min / max), and the errors around it.
#include <gtest/gtest.h>
#include <weft/weft.h>

#include "lang/atomic_cases.h"
#include "lang/lang_test_util.h"

using namespace weft;
using weft_test::error_of;

namespace {

// Each atomic form in parallel over rows of the RDom, then over tasks of 8 rows with the
// columns split and unrolled.
TEST(Atomic, ParallelOverTheReductionDomain) {
    Buffer<int32_t> in = weft_test::atomic_input(203, 61);
    auto by_rows = [](Func &, Stage u, const RDom &r) { u.parallel(r.y); };
    for (auto &c : weft_test::atomic_cases(in, by_rows)) EXPECT_EQ(c.check(Target::host()), "") << c.name;
    RVar ryo("ryo"), ryi("ryi"), rxo("rxo"), rxi("rxi");
    auto tasks = [&](Func &, Stage u, const RDom &r) {
        u.split(r.y, ryo, ryi, 8).split(r.x, rxo, rxi, 4).unroll(rxi).reorder(rxi, rxo, ryi, ryo).parallel(ryo);
    };
    for (auto &c : weft_test::atomic_cases(in, tasks)) EXPECT_EQ(c.check(Target::host()), "") << c.name;
}

// The same with the rows parallel innermost-out (reordered: an atomic update's RVars may be
// reordered) and called repeatedly from the cache.
TEST(Atomic, ReorderedAndCached) {
    Buffer<int32_t> in = weft_test::atomic_input(64, 300);
    auto s = [](Func &, Stage u, const RDom &r) { u.reorder(r.y, r.x).parallel(r.x); };
    for (auto &c : weft_test::atomic_cases(in, s))
        for (int k = 0; k < 3; k++) EXPECT_EQ(c.check(Target::host()), "") << c.name << " call " << k;
}

// A 2-D scatter-add whose update also has a pure Var, vectorized: atomic stores are one
// element each, so that loop stays serial (the result is the same).
TEST(Atomic, PureVarOfAnAtomicUpdateIsNotVectorized) {
    const int w = 150, h = 40, bins = 12;
    Buffer<float> in(w, h);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) in(x, y) = (float)((x * 3 + y * 5) % 11);
    Var c("c"), b("b");
    RDom r(0, w, "r");
    Func f("scatter");
    f(c, b) = 0.0f;
    f(c, (r * 7 + c) % bins) += in(r, c) * 0.25f;  // quarters of small integers: exact in any order
    f.update().atomic().parallel(r).vectorize(c, 8);
    Buffer<float> got = f.realize({h, bins});
    std::vector<float> want((size_t)h * bins, 0.0f);
    for (int rr = 0; rr < w; rr++)
        for (int cc = 0; cc < h; cc++) want[(size_t)((rr * 7 + cc) % bins) * h + cc] += in(rr, cc) * 0.25f;
    for (int k = 0; k < bins; k++)
        for (int cc = 0; cc < h; cc++) EXPECT_EQ(got(cc, k), want[(size_t)k * h + cc]) << cc << "," << k;
}

TEST(Atomic, Errors) {
    Var x("x");
    RDom r(0, 100, "r");
    Buffer<int32_t> in(100);
    for (int i = 0; i < 100; i++) in(i) = i % 7;
    {
        Func f("pure_only");
        f(x) = x;
        EXPECT_CONTAINS(error_of([&] { Stage(f.contents(), 0).atomic(); }), "only an update can be atomic");
    }
    {
        Func f("reads_elsewhere");
        f(x) = 0;
        f(in(r)) = f(in(r)) + f(in(r) + 1);
        EXPECT_CONTAINS(error_of([&] { f.update().atomic(); }), "reads the Func at another place");
    }
    {
        Func f("not_associative");
        f(x) = 0;
        f(in(r)) = f(in(r)) * 2 + 1;
        std::string e = error_of([&] { f.update().atomic(); });
        EXPECT_CONTAINS(e, "not f(..) = f(..) op e");
        EXPECT_CONTAINS(e, "atomic(true)");
        f.update().atomic(true);  // accepted when asked for
    }
    {
        Func f("e_minus_f");
        f(x) = 0;
        f(in(r)) = in(r) - f(in(r));
        EXPECT_CONTAINS(error_of([&] { f.update().atomic(); }), "not f(..) = f(..) op e");
    }
    {
        Func f("place_from_self");
        f(x) = 0;
        f(f(in(r))) = f(f(in(r))) + 1;
        EXPECT_CONTAINS(error_of([&] { f.update().atomic(); }), "place written depends on the Func's own values");
    }
    {
        Func f("flags");
        f(x) = x > 1000;
        f(in(r)) = f(in(r)) || in(r) > 3;
        EXPECT_CONTAINS(error_of([&] { f.update().atomic(true); }), "bool");
    }
    {
        Func f("not_atomic");
        f(x) = 0;
        f(clamp(in(r), 0, 6)) += 1;
        std::string e = error_of([&] { f.update().parallel(r); });
        EXPECT_CONTAINS(e, "cannot run in parallel");
        EXPECT_CONTAINS(e, "atomic()");
        EXPECT_CONTAINS(error_of([&] { f.update().gpu_blocks(r); }), "atomic()");
        f.update().atomic();
        EXPECT_CONTAINS(error_of([&] { f.update().vectorize(r); }), "cannot run as vector lanes");
        f.update().parallel(r);  // now allowed
        Buffer<int32_t> got = f.realize({7});
        for (int k = 0; k < 7; k++) EXPECT_EQ(got(k), 100 / 7 + (k < 100 % 7 ? 1 : 0)) << k;
    }
}

}  // namespace
