// Property: whatever Pipeline::auto_schedule chooses, for random pipelines (pointwise chains,
// stencils, up- and down-sampling, transposes, reductions, scans, scalars), random estimates
// and thread counts, the results equal the interpreter's exactly (int32 arithmetic), at the
// estimated shapes and at others.
#include <cmath>
#include <gtest/gtest.h>
#include <weft/weft.h>

#include <cstdlib>
#include <iostream>

#include "pipeline/PipelineInternal.h"
#include "property/random_util.h"

using namespace weft;
using weft_test::Rng;

namespace {

int trials() {
    const char *e = std::getenv("WEFT_PROPERTY_SCHEDULES");
    int n = e ? std::atoi(e) : 0;
    return n > 0 ? std::max(8, n * 2) : 40;
}

struct RandomPipeline {
    ImageParam in{Int(32), 2, "in"};
    Var x{"x"}, y{"y"};
    std::vector<Func> funcs;
    std::string text;  // what was built, for a failing trial's message

    /** A read of Func g, at a random access pattern. */
    Expr read(Rng &r, Func g, bool two_d) {
        if (!two_d) return g(clamp(y, 0, 63));  // a Func of y only (a row reduction)
        switch (r.uniform(0, 7)) {
        case 0: text += "pointwise "; return g(x, y);
        case 1:
        case 2: {
            int dx = r.uniform(-2, 2), dy = r.uniform(-2, 2);
            text += "stencil(" + std::to_string(dx) + "," + std::to_string(dy) + ") ";
            return g(x + dx, y + dy);
        }
        case 3: text += "down "; return g(2 * x + r.uniform(0, 1), y);
        case 4: text += "up "; return g(x, y / 2);
        case 5: text += "transpose "; return g(y, x);
        case 6: text += "gather "; return g(clamp(g(x, y) & 31, 0, 31), y);
        default: text += "down-y "; return g(x, 2 * y - 1);
        }
    }

    RandomPipeline(Rng &r) {
        Func e("e");
        e(x, y) = in(clamp(x, 0, 99), clamp(y, 0, 99));
        std::vector<std::pair<Func, bool>> avail = {{e, true}};
        int n = r.uniform(1, 6);
        for (int i = 0; i < n; i++) {
            Func f("f" + std::to_string(i));
            auto pick = [&]() -> std::pair<Func, bool> { return avail[(size_t)r.uniform(0, (int)avail.size() - 1)]; };
            int kind = r.uniform(0, 10);
            text += "f" + std::to_string(i) + ": ";
            if (kind <= 5) {
                auto [a, a2] = pick();
                Expr v = read(r, a, a2);
                if (r.chance(0.6)) {
                    auto [b, b2] = pick();
                    Expr w = read(r, b, b2);
                    v = r.chance(0.5) ? v + w * 3 : max(v, w) - (w & 7);
                }
                f(x, y) = v;
                avail.push_back({f, true});
            } else if (kind == 6) {
                // A small convolution as a reduction.
                auto [a, a2] = pick();
                RDom k(-1, 3, "k" + std::to_string(i));
                f(x, y) = 1;
                f(x, y) += a2 ? a(x + k, y) * (k + 2) : a(clamp(y + k, 0, 63)) * 2;
                text += "conv ";
                avail.push_back({f, true});
            } else if (kind == 7) {
                // A row reduction, then a Func of y alone.
                auto [a, a2] = pick();
                RDom k(0, 17, "row" + std::to_string(i));
                Func s("s" + std::to_string(i));
                s(y) = 0;
                s(y) += a2 ? a(k, y) : a(clamp(y + k, 0, 63));
                f(x, y) = s(clamp(y, 0, 63)) + x;
                text += "rowsum ";
                avail.push_back({s, false});
                avail.push_back({f, true});
            } else if (kind == 8) {
                // A scan down the rows.
                auto [a, a2] = pick();
                RDom ry(1, 39, "ry" + std::to_string(i));
                Func s("scan" + std::to_string(i));
                s(x, y) = a2 ? a(x, y) : a(clamp(y, 0, 63));
                s(x, ry) = s(x, ry - 1) * 3 + s(x, ry);
                f(x, y) = s(x, clamp(y, 0, 39));
                text += "scan ";
                avail.push_back({f, true});
            } else if (kind == 10) {
                // Per column, a histogram of a Func's values down the rows: the update writes at
                // its pure Var x and at an index computed from x (x may still run in parallel).
                auto [a, a2] = pick();
                RDom rr(0, 12, "col" + std::to_string(i));
                Func h("colhist" + std::to_string(i));
                h(x, y) = 0;
                Expr v = a2 ? a(x, rr) : a(clamp(rr, 0, 63));
                h(x, clamp(v & 7, 0, 7)) += v;
                f(x, y) = h(x, clamp(y & 7, 0, 7)) - x;
                text += "column-histogram ";
                avail.push_back({f, true});
            } else {
                // A histogram of a Func's values, read back through them.
                auto [a, a2] = pick();
                RDom rr(0, 20, 0, 10, "h" + std::to_string(i));
                Func h("hist" + std::to_string(i));
                h(x) = 0;
                Expr v = a2 ? a(rr.x, rr.y) : a(clamp(rr.y, 0, 63));
                h(clamp(v & 15, 0, 15)) += 1;
                f(x, y) = h(clamp(x & 15, 0, 15)) + (a2 ? a(x, y) : a(clamp(y, 0, 63)));
                text += "histogram ";
                avail.push_back({f, true});
            }
            text += "\n";
            funcs.push_back(f);
        }
    }
};

}  // namespace

TEST(RandomAutoSchedule, ResultsEqualTheInterpreter) {
    int n = trials();
    int failures = 0;
    for (int t = 0; t < n && failures < 3; t++) {
        uint32_t seed = 7000u + (uint32_t)t;
        Rng r(seed);
        RandomPipeline rp(r);
        Func out = rp.funcs.back();
        // Estimates large enough for tiles and fusion; the planner's candidate of a random rank.
        int W = r.chance(0.2) ? r.uniform(1, 4) : r.uniform(5, 700), H = r.chance(0.2) ? r.uniform(1, 4) : r.uniform(5, 500);
        rp.in.set_estimates({{0, 100}, {0, 100}});
        internal::g_autoschedule_pick = r.uniform(0, 7);
        out.set_estimates({{0, W}, {0, H}});
        AutoScheduleOptions o;
        o.threads = r.uniform(1, 4);
        Pipeline p(out);
        std::string what = "seed " + std::to_string(seed) + " (" + std::to_string(W) + "x" + std::to_string(H) +
                           ", threads " + std::to_string(o.threads) + "):\n" + rp.text;
        try {
            AutoScheduleResult res = p.auto_schedule(Target::host(), o);
            Buffer<int32_t> input(100, 100);
            Rng d(seed + 1);
            input.for_each_offset([&](int64_t off) { input.data()[off] = d.uniform(-50, 50); });
            rp.in.set(input);
            for (int shape = 0; shape < 2; shape++) {
                int w = shape == 0 ? std::min(W, 150) : r.uniform(1, 60), h = shape == 0 ? std::min(H, 90) : r.uniform(1, 60);
                Buffer<int32_t> got(w, h), want(w, h);
                p.realize(got);
                internal::interpret_pipeline(p, {want});
                int64_t bad = 0;
                got.for_each_offset([&](int64_t off) { bad += got.data()[off] != want.data()[off]; });
                if (bad) {
                    ADD_FAILURE() << bad << " values differ at " << w << "x" << h << ", " << what << "schedule:\n"
                                  << res.schedule_source;
                    failures++;
                    break;
                }
            }
        } catch (const Error &e) {
            ADD_FAILURE() << "weft::Error " << e.what() << "\n" << what << "schedule:\n" << p.get_schedule().cpp_source();
            failures++;
        }
    }
    internal::g_autoschedule_pick = -1;
}

TEST(RandomAutoSchedule, HostileEstimates) {
    ImageParam in(Int(32), 2, "in");
    Var x("x"), y("y");
    Func a("a"), b("b");
    a(x, y) = in(clamp(x, 0, 9), clamp(y, 0, 9)) * 2;
    b(x, y) = a(x - 1, y) + a(x + 1, y + 1);
    in.set_estimates({{0, 10}, {0, 10}});
    for (auto ext : std::vector<std::pair<int, int>>{{0, 0}, {1, 1}, {0, 50}, {1 << 30, 1 << 30}, {7, 1 << 30}}) {
        b.set_estimates({{-(1 << 20), ext.first}, {0, ext.second}});
        Pipeline p(b);
        AutoScheduleResult r = p.auto_schedule();  // returns a schedule; no crash, overflow or hang
        EXPECT_EQ(r.schedule_source, p.get_schedule().cpp_source());
        Buffer<int32_t> input(10, 10);
        input.for_each_offset([&](int64_t off) { input.data()[off] = (int32_t)off; });
        in.set(input);
        Buffer<int32_t> got(33, 17), want(33, 17);
        p.realize(got);
        internal::interpret_pipeline(p, {want});
        int64_t bad = 0;
        got.for_each_offset([&](int64_t off) { bad += got.data()[off] != want.data()[off]; });
        EXPECT_EQ(bad, 0) << ext.first << "x" << ext.second << ":\n" << r.schedule_source;
    }
}

TEST(RandomAutoSchedule, HugeEstimatesInThreeDimensions) {
    // Strides and point counts past int64 in the estimates: no overflow, a schedule still comes back.
    ImageParam in(Float(32), 3, "in3");
    Var x("x"), y("y"), c("c");
    Func f("f3"), g("g3");
    f(x, y, c) = in(x, y, c) * 2.0f + in(x + 1, y, c);
    g(x, y, c) = f(x, y - 1, c) + f(x, y + 1, c);
    in.set_estimates({{0, 1 << 30}, {-1, 1 << 30}, {0, 1 << 30}});
    g.set_estimates({{0, (1 << 30) - 1}, {0, (1 << 30) - 2}, {0, 1 << 30}});
    Pipeline p(g);
    AutoScheduleResult r = p.auto_schedule();
    EXPECT_EQ(r.schedule_source, p.get_schedule().cpp_source());
    Buffer<float> input(20, 12, 3);
    input.set_min({0, -1, 0});
    input.for_each_offset([&](int64_t off) { input.data()[off] = (float)(off % 13); });
    in.set(input);
    Buffer<float> got(19, 10, 3), want(19, 10, 3);
    p.realize(got);
    internal::interpret_pipeline(p, {want});
    int64_t bad = 0;
    got.for_each_offset([&](int64_t off) { bad += got.data()[off] != want.data()[off]; });
    EXPECT_EQ(bad, 0) << r.schedule_source;
}

TEST(RandomAutoSchedule, HostileEstimatesForContractionsAndRowReductions) {
    // The register-block, packing and per-row costs under estimates of 0, 1, odd and 2^30
    // points, and a reduction whose extent (a Param) is estimated at 0 or 2^30: a schedule always
    // comes back (no crash, hang, or NaN cost) and its results equal the interpreter's.
    Param<int> K("K");
    ImageParam V(Float(32), 2, "V"), S(Float(32), 2, "S");
    Var x("x"), y("y");
    RDom k(0, K, "k");
    Func Vp("Vp"), prod("prod"), C("C"), mx("mx"), out("out");
    Vp(x, y) = V(x, y);
    prod(x, y) = 0.0f;
    prod(x, y) += Vp(x, k) * S(k, y);
    C(x, y) = prod(x, y);
    mx(y) = 0.0f;
    mx(y) = max(mx(y), C(k, y));
    out(x, y) = C(x, y) - mx(y);
    for (Func o : {C, out})  // (C alone: the register-blocked, packed form; out: per row)
    for (auto [n, kk] : std::vector<std::pair<int, int>>{{0, 0}, {1, 1}, {17, 3}, {1 << 30, 1 << 30}, {5, 1 << 30}}) {
        K.set_estimate(kk);
        V.set_estimates({{0, n}, {0, kk}});
        S.set_estimates({{0, kk}, {0, n}});
        o.set_estimates({{0, n}, {0, n}});
        Pipeline p(o);
        AutoScheduleResult r = p.auto_schedule();
        EXPECT_EQ(r.schedule_source, p.get_schedule().cpp_source());
        EXPECT_FALSE(std::isnan(r.predicted_ms)) << n << ", " << kk;
        const int N = 19, KK = 7;
        K.set(KK);
        Buffer<float> v(N, KK), s(KK, N);
        v.for_each_offset([&](int64_t off) { v.data()[off] = (float)(off % 5) - 2; });
        s.for_each_offset([&](int64_t off) { s.data()[off] = (float)(off % 3) - 1; });
        V.set(v);
        S.set(s);
        Buffer<float> got(N, N), want(N, N);
        p.realize(got);
        internal::interpret_pipeline(p, {want});
        int64_t bad = 0;
        got.for_each_offset([&](int64_t off) { bad += got.data()[off] != want.data()[off]; });
        EXPECT_EQ(bad, 0) << n << ", " << kk << ":\n" << r.schedule_source;
    }
}

/** p (its output estimated at W x H) scheduled for CUDA and run on the device at W x H, its
    input `in` 100 x 100 random values from `seed`, against the interpreter: false (and a
    failure naming `what`) where they differ or an Error is thrown. */
bool matches_on_device(Pipeline &p, ImageParam &in, int W, int H, uint32_t seed, const std::string &what) {
    try {
        AutoScheduleResult res = p.auto_schedule(Target::cuda());
        Buffer<int32_t> input(100, 100);
        Rng d(seed + 1);
        input.for_each_offset([&](int64_t off) { input.data()[off] = d.uniform(-50, 50); });
        in.set(input);
        Buffer<int32_t> got(W, H), want(W, H);
        p.realize(got, Target::cuda());
        internal::interpret_pipeline(p, {want});
        int64_t bad = 0;
        got.for_each_offset([&](int64_t off) { bad += got.data()[off] != want.data()[off]; });
        if (bad) ADD_FAILURE() << bad << " values differ, " << what << "schedule:\n" << res.schedule_source;
        return bad == 0;
    } catch (const Error &e) {
        ADD_FAILURE() << "weft::Error " << e.what() << "\n" << what << "schedule:\n" << p.get_schedule().cpp_source();
        return false;
    }
}

TEST(GPURunRandomAutoSchedule, ResultsEqualTheInterpreter) {
    // The same random pipelines scheduled for a CUDA target (stencils' producers staged in
    // shared memory per block where the planner stages them; updates that may not run in
    // parallel on the host), run on a device or its emulation: the interpreter's values.
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device (libcuda.so.1 and a GPU are needed)";
    int n = std::max(6, trials() / 4);
    int failures = 0;
    for (int t = 0; t < n && failures < 3; t++) {
        uint32_t seed = 9100u + (uint32_t)t;
        Rng r(seed);
        RandomPipeline rp(r);
        Func out = rp.funcs.back();
        int W = r.uniform(1, 80), H = r.uniform(1, 50);
        rp.in.set_estimates({{0, 100}, {0, 100}});
        out.set_estimates({{0, W}, {0, H}});
        Pipeline p(out);
        failures += !matches_on_device(p, rp.in, W, H, seed,
                                       "seed " + std::to_string(seed) + " (" + std::to_string(W) + "x" + std::to_string(H) + "):\n" + rp.text);
    }
    // Chains of stencils, each stage costly enough to be kept (not inlined) and read by the
    // next alone: the planner's candidates for staging, at random offsets and shapes.
    for (int t = 0; t < n && failures < 3; t++) {
        uint32_t seed = 9500u + (uint32_t)t;
        Rng r(seed);
        ImageParam in(Int(32), 2, "in");
        Var x("x"), y("y");
        Func prev("e");
        prev(x, y) = in(clamp(x, 0, 99), clamp(y, 0, 99));
        std::string text;
        int stages = r.uniform(2, 4);
        for (int i = 0; i < stages; i++) {
            Func f("s" + std::to_string(i));
            int dx = r.uniform(-3, 3), dy = r.uniform(-3, 3);
            Expr a = prev(x + dx, y + dy), b = prev(x - dy, y + dx);
            f(x, y) = (a * 3 + b) * (a - b) + ((a ^ b) & 255) + max(a, b) / 3 + min(a * b, 999) % 7;
            text += "s" + std::to_string(i) + ": (" + std::to_string(dx) + "," + std::to_string(dy) + ")\n";
            prev = f;
        }
        int W = r.uniform(1, 90), H = r.uniform(1, 60);
        in.set_estimates({{0, 100}, {0, 100}});
        prev.set_estimates({{0, W}, {0, H}});
        Pipeline p(prev);
        failures += !matches_on_device(p, in, W, H, seed,
                                       "stencil chain, seed " + std::to_string(seed) + " (" + std::to_string(W) + "x" +
                                           std::to_string(H) + "):\n" + text);
    }
}
