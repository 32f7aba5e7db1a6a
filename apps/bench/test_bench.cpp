// Tests of the benchmarking library (weft/bench.h): statistics, the significance test, sizes,
// registration, runs (checked output, schedules, errors), and its files (JSON, CSV).
#include <gtest/gtest.h>
#include <weft/bench.h>

#include <cmath>

namespace {

using namespace weft;
using bench::Sizes;

TEST(BenchStats, PercentilesAsNumpy) {
    // numpy.percentile([1..10], [10, 50, 90]) = 1.9, 5.5, 9.1
    std::vector<double> v = {10, 3, 5, 1, 2, 9, 8, 7, 6, 4};
    bench::Stats s = bench::summarize(v);
    EXPECT_EQ(s.reps, 10);
    EXPECT_DOUBLE_EQ(s.median, 5.5);
    EXPECT_NEAR(s.p10, 1.9, 1e-12);
    EXPECT_NEAR(s.p90, 9.1, 1e-12);
    EXPECT_DOUBLE_EQ(s.min, 1);
    EXPECT_DOUBLE_EQ(s.max, 10);
    EXPECT_DOUBLE_EQ(s.mean, 5.5);
    EXPECT_NEAR(s.stddev, 3.0276503540974917, 1e-12);  // sample standard deviation
    EXPECT_NEAR(s.spread, (9.1 - 1.9) / 5.5, 1e-12);
    EXPECT_EQ(s.samples, v);  // in the order measured
    bench::Stats one = bench::summarize({2.5});
    EXPECT_DOUBLE_EQ(one.median, 2.5);
    EXPECT_DOUBLE_EQ(one.p10, 2.5);
    EXPECT_DOUBLE_EQ(one.stddev, 0);
    bench::Stats none = bench::summarize({});
    EXPECT_EQ(none.reps, 0);
    EXPECT_DOUBLE_EQ(none.median, 0);
}

TEST(BenchStats, MannWhitney) {
    // scipy.stats.mannwhitneyu([1..5], [6..10], method="asymptotic"): U = 0, p = 0.012186
    std::vector<double> a = {1, 2, 3, 4, 5}, b = {6, 7, 8, 9, 10};
    EXPECT_NEAR(bench::mann_whitney_p(a, b), 0.012186, 2e-6);
    EXPECT_DOUBLE_EQ(bench::mann_whitney_p(a, b), bench::mann_whitney_p(b, a));
    // The same samples: no evidence of a difference.
    EXPECT_GT(bench::mann_whitney_p(a, a), 0.9);
    // Ties everywhere, one sample, NaN: defined, in [0, 1].
    EXPECT_DOUBLE_EQ(bench::mann_whitney_p({1, 1, 1}, {1, 1, 1}), 1.0);
    EXPECT_DOUBLE_EQ(bench::mann_whitney_p({1}, {2, 3}), 1.0);
    EXPECT_DOUBLE_EQ(bench::mann_whitney_p({1, NAN}, {2, 3}), 1.0);
    std::vector<double> x, y;
    for (int i = 0; i < 40; i++) x.push_back(1.0 + 0.001 * (i % 7)), y.push_back(1.1 + 0.001 * (i % 5));
    EXPECT_LT(bench::mann_whitney_p(x, y), 1e-6);
    std::vector<double> t1 = {1, 2, 2, 3, 3, 3}, t2 = {2, 3, 4, 4, 5, 5};
    double p = bench::mann_whitney_p(t1, t2);
    EXPECT_GT(p, 0.0);
    EXPECT_LT(p, 0.2);
}

TEST(BenchSizes, OrderLabelAndErrors) {
    Sizes s = {{"width", 640}, {"height", 480}};
    EXPECT_EQ(s.label(), "640x480");
    EXPECT_DOUBLE_EQ(s.volume(), 640.0 * 480);
    EXPECT_EQ(s["height"], 480);
    s.set("width", 10);
    s.set("c", 3);
    EXPECT_EQ(s.label(), "10x480x3");
    try {
        (void)s["depth"];
        FAIL();
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("width, height, c"), std::string::npos) << e.what();
    }
}

/** A small registered pipeline: out(x, y) = in(x, y) * 2 + 1 over width x height. */
bench::Instance scale_instance(const Sizes &s, bool wrong_reference) {
    const int W = s["width"], H = s["height"];
    bench::Instance in;
    Buffer<float> src(W, H), out(W, H);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) src(x, y) = (float)(x - 2 * y) * 0.25f;
    Var x("x"), y("y");
    Func f("scale");
    f(x, y) = src(x, y) * 2.0f + 1.0f;
    in.pipeline = Pipeline(f);
    in.outputs = {out};
    in.schedule = [f, x, y]() mutable { f.parallel(y).vectorize(x, 8); };
    in.reference = [src, W, H, wrong_reference](std::vector<Buffer<void>> &e) {
        Buffer<float> o(e[0]);
        for (int yy = 0; yy < H; yy++)
            for (int xx = 0; xx < W; xx++) o(xx, yy) = src(xx, yy) * 2.0f + 1.0f + (wrong_reference && xx == 3 ? 1 : 0);
    };
    in.peers.push_back({"loop", [src, out, W, H]() {
                            for (int yy = 0; yy < H; yy++)
                                for (int xx = 0; xx < W; xx++) out(xx, yy) = src(xx, yy) * 2.0f + 1.0f;
                        }});
    in.work = {2.0 * W * H, 8.0 * W * H};
    return in;
}

void register_test_benchmarks() {
    static bool done = false;
    if (done) return;
    done = true;
    bench::register_benchmark({"test_scale", "x * 2 + 1", {{"width", 64}, {"height", 16}}, {}, {"loop"},
                               [](const Sizes &s) { return scale_instance(s, false); }});
    bench::register_benchmark({"test_scale_wrong", "a reference that disagrees", {{"width", 64}, {"height", 16}}, {}, {},
                               [](const Sizes &s) { return scale_instance(s, true); }});
    bench::register_benchmark({"test_throws", "a builder that fails", {{"n", 4}}, {}, {},
                               [](const Sizes &) -> bench::Instance { throw Error("the builder failed"); }});
}

bench::Options quick() {
    bench::Options o;
    o.warmup_seconds = 0.0;
    o.min_seconds = 0.01;
    o.min_reps = 5;
    o.max_reps = 50;
    return o;
}

TEST(BenchRegistry, BadRegistrationsAreErrors) {
    register_test_benchmarks();
    auto build = [](const Sizes &) { return bench::Instance(); };
    EXPECT_THROW(bench::register_benchmark({"", "", {}, {}, {}, build}), Error);
    EXPECT_THROW(bench::register_benchmark({"a b", "", {}, {}, {}, build}), Error);
    EXPECT_THROW(bench::register_benchmark({"test_scale", "again", {}, {}, {}, build}), Error);
    EXPECT_THROW(bench::register_benchmark({"no_builder", "", {}, {}, {}, nullptr}), Error);
    EXPECT_THROW(bench::register_benchmark({"neg", "", {{"n", -1}}, {}, {}, build}), Error);
    EXPECT_NE(bench::find_benchmark("test_scale"), nullptr);
    EXPECT_EQ(bench::find_benchmark("nope"), nullptr);
}

TEST(BenchRun, ChecksTimesAndComparesWithPeers) {
    register_test_benchmarks();
    int calls = 0;
    bench::Result r = bench::run(*bench::find_benchmark("test_scale"), {{"width", 40}}, quick(),
                                 [&](const bench::Progress &p) {
                                     calls++;
                                     EXPECT_GE(p.fraction, 0.0);
                                     EXPECT_LE(p.fraction, 1.0);
                                 });
    ASSERT_TRUE(r.error.empty()) << r.error;
    EXPECT_GT(calls, 5);
    EXPECT_EQ(r.sizes.label(), "40x16");
    EXPECT_EQ(r.variant, "default");
    EXPECT_EQ(r.check.status, bench::Check::Status::Ok) << r.check.message;
    EXPECT_GE(r.time.reps, 5);
    EXPECT_GT(r.time.median, 0);
    EXPECT_LE(r.time.p10, r.time.median);
    EXPECT_LE(r.time.median, r.time.p90);
    EXPECT_GT(r.first_call_ms, 0);
    EXPECT_NE(r.schedule.find("vectorize"), std::string::npos) << r.schedule;
    ASSERT_EQ(r.peers.size(), 1u);
    EXPECT_EQ(r.peers[0].name, "loop");
    EXPECT_GT(r.peers[0].speedup, 0);
    EXPECT_NEAR(r.gflops, 2.0 * 40 * 16 / (r.time.median / 1000) / 1e9, 1e-9);
    EXPECT_NEAR(r.intensity, 0.25, 1e-12);
    EXPECT_NE(r.profile.find("scale"), std::string::npos) << r.profile;
    EXPECT_FALSE(profile_enabled());  // the profiled call leaves profiling as it was
}

TEST(BenchRun, APeerTimedElsewhereIsTimedInBatches) {
    register_test_benchmarks();
    static std::vector<int> asked;
    static bool registered = false;
    if (!registered) {
        registered = true;
        bench::register_benchmark({"test_elsewhere", "a peer timed in another process", {{"width", 32}, {"height", 8}},
                                   {}, {"elsewhere", "broken"}, [](const Sizes &s) {
                                       bench::Instance in = scale_instance(s, false);
                                       in.peers.clear();
                                       bench::Peer p;
                                       p.name = "elsewhere";
                                       p.time = [](int reps) {
                                           asked.push_back(reps);
                                           return std::vector<double>((size_t)reps, 2.0);  // 2 ms a call
                                       };
                                       in.peers.push_back(p);
                                       bench::Peer broken;
                                       broken.name = "broken";
                                       broken.time = [](int) -> std::vector<double> { throw Error("it crashed"); };
                                       in.peers.push_back(broken);
                                       return in;
                                   }});
    }
    bench::Options o = quick();
    o.min_seconds = 0.2;  // 200 ms of the peer's own time: 100 calls of 2 ms, in batches of about 50
    o.max_reps = 1000;
    bench::Result r = bench::run(*bench::find_benchmark("test_elsewhere"), {}, o);
    ASSERT_TRUE(r.error.empty()) << r.error;
    ASSERT_EQ(r.peers.size(), 2u);
    EXPECT_EQ(r.peers[0].time.reps, 100);
    EXPECT_DOUBLE_EQ(r.peers[0].time.median, 2.0);
    EXPECT_NEAR(r.peers[0].speedup, 2.0 / r.time.median, 1e-9);
    ASSERT_GE(asked.size(), 3u);
    EXPECT_EQ(asked[0], 1);  // warm-up: one call at a time
    EXPECT_GT(asked.back(), 1);  // then batches
    EXPECT_NE(r.peers[1].error.find("it crashed"), std::string::npos);
}

TEST(BenchRun, AMismatchIsReportedWithThePlace) {
    register_test_benchmarks();
    bench::Result r = bench::run(*bench::find_benchmark("test_scale_wrong"), {}, quick());
    ASSERT_TRUE(r.error.empty()) << r.error;
    EXPECT_EQ(r.check.status, bench::Check::Status::Mismatch);
    EXPECT_NE(r.check.message.find("16 of 1024 elements differ"), std::string::npos) << r.check.message;
    EXPECT_NE(r.check.message.find("(3, 0)"), std::string::npos) << r.check.message;
}

TEST(BenchRun, SchedulesAsTextAutomaticAndNone) {
    register_test_benchmarks();
    const bench::Definition &d = *bench::find_benchmark("test_scale");
    bench::Options o = quick();
    o.run_peers = false;
    o.mode = bench::Options::Mode::Custom;
    o.schedule = "scale.split(y, yo, yi, 4).parallel(yo);\n";
    bench::Result r = bench::run(d, {}, o);
    ASSERT_TRUE(r.error.empty()) << r.error;
    EXPECT_EQ(r.variant, "custom");
    EXPECT_NE(r.schedule.find("split(y, yo, yi, 4)"), std::string::npos) << r.schedule;
    EXPECT_EQ(r.check.status, bench::Check::Status::Ok);
    o.schedule = "scale.split(y, yo, yi, 4).parallel(yo);\nscale.vectorise(x);\n";
    r = bench::run(d, {}, o);
    EXPECT_NE(r.error.find("line 2"), std::string::npos) << r.error;
    o.mode = bench::Options::Mode::Auto;
    r = bench::run(d, {}, o);
    ASSERT_TRUE(r.error.empty()) << r.error;
    EXPECT_EQ(r.check.status, bench::Check::Status::Ok);
    o.mode = bench::Options::Mode::None;
    r = bench::run(d, {}, o);
    ASSERT_TRUE(r.error.empty()) << r.error;
    EXPECT_EQ(r.check.status, bench::Check::Status::Ok);
    EXPECT_EQ(r.schedule, "");
}

TEST(BenchRun, BadSizesAndFailingBuildersAreErrorsInTheResult) {
    register_test_benchmarks();
    const bench::Definition &d = *bench::find_benchmark("test_scale");
    EXPECT_NE(bench::run(d, {{"depth", 3}}, quick()).error.find("no size called \"depth\""), std::string::npos);
    EXPECT_NE(bench::run(d, {{"width", 0}}, quick()).error.find("sizes are from 1"), std::string::npos);
    EXPECT_NE(bench::run(*bench::find_benchmark("test_throws"), {}, quick()).error.find("the builder failed"),
              std::string::npos);
}

TEST(BenchFiles, JsonRoundTripGoogleBenchmarkFormatAndCsv) {
    register_test_benchmarks();
    bench::Result r = bench::run(*bench::find_benchmark("test_scale"), {}, quick());
    ASSERT_TRUE(r.error.empty()) << r.error;
    r.id = "r1";
    r.warnings.push_back("a \"quoted\", comma warning</script>");
    bench::Machine m;
    m.cpu = "x86-64-test";
    m.threads = 2;
    m.peak_gflops = 123.5;
    m.bandwidth_gbs = 20;
    std::string js = bench::to_json({r}, m);
    // Google Benchmark's shape: per-repetition iterations, then aggregates.
    EXPECT_NE(js.find("\"run_type\": \"iteration\""), std::string::npos);
    EXPECT_NE(js.find("\"aggregate_name\": \"median\""), std::string::npos);
    EXPECT_NE(js.find("\"time_unit\": \"ms\""), std::string::npos);
    EXPECT_NE(js.find("\"name\": \"test_scale/64x16/default/threads:"), std::string::npos);
    bench::Machine m2;
    std::vector<bench::Result> back = bench::from_json(js, &m2);
    ASSERT_EQ(back.size(), 1u);
    const bench::Result &b = back[0];
    EXPECT_EQ(b.id, "r1");
    EXPECT_EQ(b.benchmark, "test_scale");
    EXPECT_TRUE(b.sizes == r.sizes);
    EXPECT_EQ(b.sizes.items()[0].first, "width");  // the order kept
    EXPECT_EQ(b.time.samples, r.time.samples);
    EXPECT_DOUBLE_EQ(b.time.median, r.time.median);
    EXPECT_EQ(b.check.status, r.check.status);
    EXPECT_EQ(b.warnings, r.warnings);
    EXPECT_EQ(b.peers.size(), r.peers.size());
    EXPECT_EQ(b.schedule, r.schedule);
    EXPECT_EQ(m2.cpu, "x86-64-test");
    EXPECT_DOUBLE_EQ(m2.peak_gflops, 123.5);
    std::string csv = bench::to_csv({r});
    EXPECT_EQ(csv.substr(0, csv.find('\n')),
              "id,benchmark,sizes,threads,target,variant,median_ms,p10_ms,p90_ms,mean_ms,stddev_ms,spread,reps,unstable,"
              "first_call_ms,gflops,gbs,check,peers,error");
    EXPECT_NE(csv.find("r1,test_scale,64x16,"), std::string::npos) << csv;
    // Not a weft-bench file, not JSON, damaged records: clear errors.
    EXPECT_THROW(bench::from_json("{\"benchmarks\": []}"), Error);
    EXPECT_THROW(bench::from_json("not json"), Error);
    EXPECT_THROW(bench::from_json("{\"weft_runs\": [{\"sizes\": 3}]}"), Error);
    EXPECT_THROW(bench::from_json(""), Error);
}

TEST(BenchFiles, CompareFindsTheMatchingRunsAndTestsThem) {
    bench::Result a, b;
    a.benchmark = b.benchmark = "k";
    a.sizes = b.sizes = {{"n", 8}};
    a.variant = b.variant = "default";
    std::vector<double> sa, sb;
    for (int i = 0; i < 30; i++) sa.push_back(2.0 + 0.01 * (i % 3)), sb.push_back(1.0 + 0.01 * (i % 4));
    a.time = bench::summarize(sa);
    b.time = bench::summarize(sb);
    bench::Result other = b;
    other.threads = 2;
    auto cs = bench::compare({a}, {b, other});
    ASSERT_EQ(cs.size(), 1u);
    EXPECT_NEAR(cs[0].ratio, b.time.median / a.time.median, 1e-12);
    EXPECT_TRUE(cs[0].significant);
    auto same = bench::compare({a}, {a});
    ASSERT_EQ(same.size(), 1u);
    EXPECT_FALSE(same[0].significant);
}

}  // namespace
