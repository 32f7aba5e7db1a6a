// Pipeline::auto_schedule: estimates, the schedules it chooses (results equal the
// interpreter's), its errors, a search that measures, and the tuning database.
#include <gtest/gtest.h>
#include <weft/weft.h>

#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "lang/lang_test_util.h"
#include "autoschedule/Planner.h"
#include "autoschedule/TuningDatabase.h"
#include "pipeline/PipelineInternal.h"
#include "property/random_util.h"

using namespace weft;
using weft_test::error_of;

namespace {

template <typename T>
void fill(Buffer<T> &b, uint32_t seed, int lo, int hi) {
    weft_test::Rng r(seed);
    b.for_each_offset([&](int64_t off) {
        if constexpr (std::is_floating_point_v<T>)
            b.data()[off] = (T)(lo + (hi - lo) * std::uniform_real_distribution<double>(0, 1)(r.g));
        else
            b.data()[off] = (T)r.uniform(lo, hi);
    });
}

/** Realizes p into `out` and into a buffer of the same shape by the interpreter; counts
    differing elements. */
template <typename T>
int64_t differences(Pipeline p, Buffer<T> out, const Target &t = Target::host()) {
    Buffer<T> ref(std::vector<int>{out.dim(0).extent(), out.dimensions() > 1 ? out.dim(1).extent() : 1});
    std::vector<int> ext, mins;
    for (int d = 0; d < out.dimensions(); d++) {
        ext.push_back(out.dim(d).extent());
        mins.push_back(out.dim(d).min());
    }
    ref = Buffer<T>(ext);
    ref.set_min(mins);
    p.realize(out, t);
    internal::interpret_pipeline(p, {ref});
    int64_t bad = 0;
    out.for_each_offset([&](int64_t off) {
        if (!(out.data()[off] == ref.data()[off])) bad++;
    });
    return bad;
}

/** Two threads and fixed caches: the same ranking of candidates on every machine. */
internal::MachineParams fixed_machine() {
    internal::MachineParams m;
    m.threads = 2;
    m.l1_bytes = 48 << 10;
    m.l2_bytes = 1 << 20;
    m.l3_bytes = 32 << 20;
    return m;
}

/** The line of a plan's summary for the group of `root`: its members and the configuration
    taken (empty if none). */
std::string group_line(const std::string &summary, const std::string &root) {
    size_t at = summary.find("group " + root + " (members");
    return at == std::string::npos ? std::string() : summary.substr(at, summary.find('\n', at) - at);
}

/** A pipeline of `out` scheduled with the planner's candidate of rank `pick` (the model's
    first choice is 0). */
Pipeline candidate(Func out, int pick, const AutoScheduleOptions &o = AutoScheduleOptions()) {
    internal::g_autoschedule_pick = pick;
    Pipeline q(out);
    try {
        q.auto_schedule(Target::host(), o);
    } catch (...) {
        internal::g_autoschedule_pick = -1;
        throw;
    }
    internal::g_autoschedule_pick = -1;
    return q;
}

struct Blur {
    ImageParam in{Float(32), 2, "in"};
    Var x{"x"}, y{"y"};
    Func bx{"blur_x"}, by{"blur_y"};
    Blur() {
        bx(x, y) = (in(x - 1, y) + in(x, y) + in(x + 1, y)) * (1.0f / 3);
        by(x, y) = (bx(x, y - 1) + bx(x, y) + bx(x, y + 1)) * (1.0f / 3);
    }
};

/** Binds a (W + 2) x (H + 2) input with mins -1 to the blur and counts the outputs of p over
    W x H that differ from the interpreter's. */
int64_t blur_differences(Blur &b, Pipeline p, int W, int H, uint32_t seed) {
    Buffer<float> in(W + 2, H + 2);
    in.set_min({-1, -1});
    fill(in, seed, -10, 10);
    b.in.set(in);
    Buffer<float> out(W, H);
    return differences(p, out);
}

/** The blur's pipeline with estimates for a W x H output. */
Pipeline estimated(Blur &b, int W, int H) {
    b.in.set_estimates({{-1, W + 2}, {-1, H + 2}});
    b.by.set_estimates({{0, W}, {0, H}});
    return Pipeline(b.by);
}

}  // namespace

TEST(AutoSchedule, BlurMatchesTheInterpreterAndSaysWhatItChose) {
    Blur b;
    const int W = 600, H = 400;
    Pipeline p = estimated(b, W, H);
    AutoScheduleResult r = p.auto_schedule();
    EXPECT_FALSE(r.from_database);
    EXPECT_EQ(r.candidates_measured, 0);
    EXPECT_TRUE(std::isnan(r.measured_ms));
    EXPECT_GT(r.predicted_ms, 0);
    // The source is the schedule the Funcs now have, in C++.
    EXPECT_EQ(r.schedule_source, p.get_schedule().cpp_source());
    EXPECT_CONTAINS(r.schedule_source, "vectorize");
    EXPECT_CONTAINS(r.schedule_source, "blur_x.");  // the producer is not left inlined: it is a stencil

    EXPECT_EQ(blur_differences(b, p, W, H, 1), 0);
    EXPECT_EQ(blur_differences(b, p, 33, 7, 2), 0);  // other shapes than the estimates: still right
}

TEST(AutoSchedule, MissingEstimatesNameTheFuncOrInput) {
    Blur b;
    Pipeline p(b.by);
    b.in.set_estimates({{-1, 66}, {-1, 66}});
    std::string e = error_of([&] { p.auto_schedule(); });
    EXPECT_CONTAINS(e, "blur_y");
    EXPECT_CONTAINS(e, "dimension 0");
    Blur c;
    c.by.set_estimates({{0, 64}, {0, 64}});
    e = error_of([&] { Pipeline(c.by).auto_schedule(); });
    EXPECT_CONTAINS(e, "input \"in\"");
    EXPECT_CONTAINS(e, "set_estimates");
    // Bad estimates and options.
    EXPECT_CONTAINS(error_of([&] { c.by.set_estimates({{0, 64}}); }), "2 dimensions");
    EXPECT_CONTAINS(error_of([&] { c.by.set_estimate(Var("q"), 0, 4); }), "not one of its Vars");
    EXPECT_CONTAINS(error_of([&] { c.by.set_estimate(c.x, 0, -4); }), "negative");
    EXPECT_CONTAINS(error_of([&] { c.by.set_estimate(c.x, 0.5f, 4); }), "integers");
    EXPECT_CONTAINS(error_of([&] { c.in.set_estimates({{0, 4}}); }), "2 dimensions");
    c.in.set_estimates({{-1, 66}, {-1, 66}});
    AutoScheduleOptions o;
    o.budget_seconds = -1;
    EXPECT_CONTAINS(error_of([&] { Pipeline(c.by).auto_schedule(Target::host(), o); }), "budget_seconds");
    o.budget_seconds = NAN;
    EXPECT_CONTAINS(error_of([&] { Pipeline(c.by).auto_schedule(Target::host(), o); }), "budget_seconds");
    EXPECT_CONTAINS(error_of([&] { Pipeline().auto_schedule(); }), "undefined");
}

TEST(AutoSchedule, EstimatesFromParams) {
    Param<int> n("n");
    ImageParam in(Int(32), 1, "in");
    Var x("x");
    Func f("f"), g("g");
    f(x) = in(x) * 3 + 1;
    g(x) = f(x) + f(x + n);
    in.set_estimates({{0, n + 1000}});
    g.set_estimates({{0, 1000}});
    std::string e = error_of([&] { Pipeline(g).auto_schedule(); });
    EXPECT_CONTAINS(e, "\"n\"");
    n.set_estimate(7);
    Pipeline p(g);
    p.auto_schedule();
    Buffer<int> ib(1007);
    fill(ib, 3, -100, 100);
    in.set(ib);
    n.set(7);
    Buffer<int> out(1000);
    EXPECT_EQ(differences(p, out), 0);
}

TEST(AutoSchedule, MatrixMultiplyIsRegisterBlockedAndExact) {
    const int N = 96;
    ImageParam A(Float(32), 2, "A"), B(Float(32), 2, "B");
    Var x("x"), y("y");
    RDom k(0, N, "k");
    Func prod("prod"), C("C");
    prod(x, y) = 0.0f;
    prod(x, y) += A(k, y) * B(x, k);
    C(x, y) = prod(x, y);
    A.set_estimates({{0, N}, {0, N}});
    B.set_estimates({{0, N}, {0, N}});
    C.set_estimates({{0, N}, {0, N}});
    Pipeline p(C);
    AutoScheduleResult r = p.auto_schedule();
    EXPECT_CONTAINS(r.schedule_source, "prod.compute_at(C");
    EXPECT_CONTAINS(r.schedule_source, "unroll");
    Buffer<float> a(N, N), bb(N, N);
    fill(a, 4, -3, 3);
    fill(bb, 5, -3, 3);
    A.set(a);
    B.set(bb);
    Buffer<float> out(N, N);
    // The reduction order over k is unchanged, so the floats are bit for bit the interpreter's
    // (both use the same multiply-adds).
    Buffer<float> ref(N, N);
    p.realize(out);
    internal::interpret_pipeline(p, {ref});
    double maxdiff = 0;
    for (int j = 0; j < N; j++)
        for (int i = 0; i < N; i++) maxdiff = std::max(maxdiff, (double)std::fabs(out(i, j) - ref(i, j)));
    EXPECT_LE(maxdiff, 1e-4);
}

TEST(AutoSchedule, ReductionsHistogramsAndScalars) {
    ImageParam in(UInt(8), 2, "in");
    Var x("x"), y("y"), b("b");
    RDom r(0, 200, 0, 100, "r");
    Func hist("hist"), total("total"), rowsum("rowsum"), out("out");
    hist(b) = 0;
    hist(clamp(cast<int>(in(r.x, r.y)), 0, 255)) += 1;
    RDom rx(0, 200, "rx");
    rowsum(y) = 0;
    rowsum(y) += cast<int>(in(rx, y));
    out(x, y) = hist(cast<int>(in(x, y))) * 2 + rowsum(y);
    in.set_estimates({{0, 200}, {0, 100}});
    out.set_estimates({{0, 200}, {0, 100}});
    Pipeline p(out);
    p.auto_schedule(Target::host());
    Buffer<uint8_t> ib(200, 100);
    fill(ib, 6, 0, 255);
    in.set(ib);
    Buffer<int> o(200, 100);
    EXPECT_EQ(differences(p, o), 0);
    // A scalar output.
    RDom all(0, 200, 0, 100, "all");
    total() = 0;
    total() += cast<int>(in(all.x, all.y));
    total.set_estimates({});
    Pipeline q(total);
    q.auto_schedule();
    Buffer<int> t = q.realize(std::vector<int>{});
    int64_t s = 0;
    for (int j = 0; j < 100; j++)
        for (int i = 0; i < 200; i++) s += ib(i, j);
    EXPECT_EQ(t(), (int)s);
}

TEST(AutoSchedule, ASearchMeasuresAndReportsProgress) {
    Blur b;
    Pipeline p = estimated(b, 512, 256);
    AutoScheduleOptions o;
    o.budget_seconds = 3;
    int calls = 0;
    double last_fraction = -1;
    o.progress = [&](const AutoScheduleProgress &pr) {
        calls++;
        EXPECT_EQ(pr.candidates_measured, calls);
        EXPECT_GE(pr.budget_fraction, last_fraction);
        EXPECT_LE(pr.budget_fraction, 1.0);
        last_fraction = pr.budget_fraction;
        EXPECT_FALSE(std::isnan(pr.best_ms));
    };
    auto t0 = std::chrono::steady_clock::now();
    AutoScheduleResult r = p.auto_schedule(Target::host(), o);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_GE(r.candidates_measured, 1);
    EXPECT_EQ(calls, r.candidates_measured);
    EXPECT_FALSE(std::isnan(r.measured_ms));
    EXPECT_GT(r.measured_ms, 0);
    EXPECT_LT(secs, 3 + 10);  // the budget, and at most one candidate's compile past it (a loaded machine)
    EXPECT_EQ(blur_differences(b, p, 512, 256, 7), 0);
}

TEST(AutoSchedule, TuningDatabaseReplaysTheSameScheduleAndSurvivesDamage) {
    char tmpl[] = "/tmp/weft_tuning_XXXXXX";
    int fd = mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    close(fd);
    std::remove(tmpl);
    std::string path = tmpl;
    AutoScheduleOptions o;
    o.database = path;
    Schedule first;
    {
        Blur b;
        Pipeline p = estimated(b, 256, 128);
        AutoScheduleResult r = p.auto_schedule(Target::host(), o);
        EXPECT_FALSE(r.from_database);
        first = p.get_schedule();
    }
    {
        // The same algorithm under other names: found, and the same schedule (names aside).
        ImageParam in(Float(32), 2, "input");
        Var i("i"), j("j");
        Func h("h"), v("v");
        h(i, j) = (in(i - 1, j) + in(i, j) + in(i + 1, j)) * (1.0f / 3);
        v(i, j) = (h(i, j - 1) + h(i, j) + h(i, j + 1)) * (1.0f / 3);
        in.set_estimates({{-1, 258}, {-1, 130}});
        v.set_estimates({{0, 256}, {0, 128}});
        Pipeline p(v);
        AutoScheduleResult r = p.auto_schedule(Target::host(), o);
        EXPECT_TRUE(r.from_database);
        // Same decisions: the text differs only by the names.
        std::string a = first.cpp_source(), bsrc = p.get_schedule().cpp_source();
        EXPECT_EQ(std::count(a.begin(), a.end(), '\n'), std::count(bsrc.begin(), bsrc.end(), '\n'));
    }
    {
        // Damaged records are skipped; the file stays usable.
        std::ofstream(path, std::ios::app) << "garbage line\n0123 4 5\n";
        Blur b;
        Pipeline p = estimated(b, 256, 128);
        AutoScheduleResult r = p.auto_schedule(Target::host(), o);
        EXPECT_TRUE(r.from_database);
        EXPECT_EQ(p.get_schedule(), first);
    }
    {
        // A measured search's winner is what a later call replays (whatever its budget).
        Blur b;
        Pipeline p = estimated(b, 400, 300);
        AutoScheduleOptions searched = o;
        searched.budget_seconds = 1;
        AutoScheduleResult r = p.auto_schedule(Target::host(), searched);
        EXPECT_FALSE(r.from_database);
        EXPECT_GE(r.candidates_measured, 1);
        Schedule won = p.get_schedule();
        p.apply_schedule(first);  // something else
        AutoScheduleResult again = p.auto_schedule(Target::host(), o);
        EXPECT_TRUE(again.from_database);
        EXPECT_EQ(again.measured_ms, r.measured_ms);
        EXPECT_EQ(p.get_schedule(), won);
    }
    std::remove(path.c_str());
    {
        // A foreign file is neither read nor written.
        std::ofstream(path) << "not a database\n";
        Blur b;
        Pipeline p = estimated(b, 256, 128);
        AutoScheduleResult r = p.auto_schedule(Target::host(), o);
        EXPECT_FALSE(r.from_database);
        std::ifstream f(path);
        std::stringstream ss;
        ss << f.rdbuf();
        EXPECT_EQ(ss.str(), "not a database\n");
    }
    std::remove(path.c_str());
}

TEST(AutoSchedule, TuningDatabaseOffInTheEnvironmentIsNone) {
    // As WEFT_CACHE_DIR: "off" turns the database off rather than naming a file "off".
    const char *old = std::getenv("WEFT_TUNING_DB");
    std::string saved = old ? old : "";
    for (const char *v : {"off", "OFF", "0", "none"}) {
        setenv("WEFT_TUNING_DB", v, 1);
        EXPECT_EQ(internal::tuning_database_path(""), "") << v;
        EXPECT_EQ(internal::tuning_database_path("/tmp/given.db"), "/tmp/given.db") << v;
    }
    setenv("WEFT_TUNING_DB", "/tmp/weft_tuning_env.db", 1);
    EXPECT_EQ(internal::tuning_database_path(""), "/tmp/weft_tuning_env.db");
    if (old) setenv("WEFT_TUNING_DB", saved.c_str(), 1);
    else unsetenv("WEFT_TUNING_DB");
}

// ---------------------------------------------------------------- at the first call

#include "autoschedule/Planner.h"
#include "lower/Env.h"
#include "pipeline/ApplySchedule.h"

TEST(AutoSchedule, FirstCallOfAPipelineWithNoDirectiveIsScheduled) {
    Blur b;
    Pipeline p(b.by);
    EXPECT_EQ(blur_differences(b, p, 1024, 768, 8), 0);
    // What a call runs: vectorized loops, the producer not inlined into the consumer.
    std::string ir = p.lowered_ir({1024, 768});
    EXPECT_CONTAINS(ir, "vectorized");
    // The Funcs keep their (empty) schedules: nothing the user wrote changed.
    EXPECT_EQ(p.get_schedule().cpp_source(), "");
    // Any directive: exactly the schedule given (here the producer at root, serial loops).
    b.bx.compute_root();
    std::string given = p.lowered_ir({1024, 768});
    EXPECT_EQ(given.find("vectorized"), std::string::npos);
    EXPECT_EQ(blur_differences(b, p, 1024, 768, 8), 0);
}

TEST(AutoSchedule, ScheduleValuesBuiltWithoutFuncsEqualTheAppliedOnes) {
    // The first-call path builds the schedule as a value (touching no Func); auto_schedule()
    // applies the same calls to the Funcs. Both must give the same schedule.
    for (int trial = 0; trial < 3; trial++) {
        Blur b;
        RDom k(0, 8, "k");
        Func red("red"), out("out");
        red(b.x, b.y) = 0.0f;
        red(b.x, b.y) += b.by(b.x + k, b.y) * (k + 1);
        out(b.x, b.y) = red(b.x, b.y) + b.bx(b.x, b.y);
        std::vector<std::shared_ptr<internal::FunctionContents>> outs = {trial == 0 ? b.by.contents() : out.contents()};
        internal::Env env = internal::build_env(outs, true);
        internal::ShapeEstimates est;
        int W = trial == 2 ? 40 : 900, H = trial == 2 ? 30 : 700;
        est.outputs[env.outputs[0]] = {{0, W}, {0, H}};
        est.inputs[env.inputs[0].name] = {{-1, W + 12}, {-1, H + 2}};
        internal::PipelineInfo info = internal::analyze_pipeline(env, est);
        auto cands = internal::plan_schedules(info, Target::host(), internal::machine_params(Target::host(), 2), 8);
        ASSERT_FALSE(cands.empty());
        for (auto &c : cands) {
            internal::PipelineSchedule v = internal::schedule_with_directives(env.given, c.calls);
            internal::apply_directives_to(outs, c.calls, "test");
            EXPECT_EQ(Schedule(std::make_shared<internal::PipelineSchedule>(internal::schedule_of(outs))).to_string(),
                      Schedule(std::make_shared<internal::PipelineSchedule>(v)).to_string());
        }
    }
}

TEST(AutoSchedule, ReorderStorageIsBuiltAsAValueAsFuncMakesIt) {
    // (A plan with reorder_storage, a member vectorized along another dimension than its first,
    // was refused as a value, so a first call scheduled nothing: resize's did so.)
    ImageParam in(Float(32), 3, "in");
    Var x("x"), y("y"), c("c");
    Func f("f"), out("out");
    f(x, y, c) = in(x, y, c) * 2.0f;
    out(x, y, c) = f(x, y, c) + f(x, y + 1, c);
    std::vector<std::shared_ptr<internal::FunctionContents>> outs = {out.contents()};
    internal::Env env = internal::build_env(outs, true);
    auto dir = [](internal::Directive::Op op, std::vector<std::string> names) {
        internal::Directive d;
        d.op = op;
        d.func = "f";
        d.names = std::move(names);
        return d;
    };
    using D = internal::Directive;
    const std::vector<std::vector<D>> cases = {
        {dir(D::ComputeRoot, {}), dir(D::ReorderStorage, {"y", "x", "c"})},
        {dir(D::ComputeRoot, {}), dir(D::ReorderStorage, {"c", "x"})},  // a subset: their slots, in this order
        {dir(D::ComputeRoot, {}), dir(D::ReorderStorage, {"c", "x"}), dir(D::ReorderStorage, {"y", "c"})},
    };
    for (auto &calls : cases) {
        internal::PipelineSchedule v = internal::schedule_with_directives(env.given, calls);
        internal::apply_directives_to(outs, calls, "test");
        EXPECT_EQ(Schedule(std::make_shared<internal::PipelineSchedule>(internal::schedule_of(outs))).to_string(),
                  Schedule(std::make_shared<internal::PipelineSchedule>(v)).to_string());
    }
    for (auto bad : {std::vector<std::string>{"z"}, std::vector<std::string>{"x", "x"}})
        EXPECT_CONTAINS(error_of([&] { internal::schedule_with_directives(env.given, {dir(D::ReorderStorage, bad)}); }),
                        "reorder_storage()");
    // The GPU plan's serial update, on one GPU thread (also refused before, so a GPU first call
    // of a scan scheduled nothing).
    Func s("s"), so("so");
    RDom r(1, 9, "r");
    s(x) = in(x, 0, 0);
    s(r) = s(r - 1) + s(r);
    so(x) = s(x) * 2.0f;
    std::vector<std::shared_ptr<internal::FunctionContents>> souts = {so.contents()};
    internal::Env senv = internal::build_env(souts, true);
    D st = dir(D::SingleThread, {});
    st.func = "s";
    st.stage = 1;
    D root = dir(D::ComputeRoot, {});
    root.func = "s";
    internal::PipelineSchedule v = internal::schedule_with_directives(senv.given, {root, st});
    internal::apply_directives_to(souts, {root, st}, "test");
    EXPECT_EQ(Schedule(std::make_shared<internal::PipelineSchedule>(internal::schedule_of(souts))).to_string(),
              Schedule(std::make_shared<internal::PipelineSchedule>(v)).to_string());
}

TEST(AutoSchedule, TwoOutputsOneReadingTheOther) {
    ImageParam in(Int(32), 2, "in");
    Var x("x"), y("y");
    Func a("a"), b("b"), c("c");
    a(x, y) = in(x, y) + in(x + 1, y) * 2;
    b(x, y) = a(x, y - 1) + a(x, y + 1);
    c(x, y) = b(x, y) * 3 + a(x, y);
    in.set_estimates({{0, 301}, {-1, 202}});
    Pipeline p({b, c});
    EXPECT_CONTAINS(error_of([&] { p.auto_schedule(); }), "\"b\"");
    b.set_estimates({{0, 300}, {0, 200}});
    c.set_estimates({{0, 300}, {0, 200}});
    p.auto_schedule();
    Buffer<int> ib(301, 202);
    ib.set_min({0, -1});
    fill(ib, 9, -100, 100);
    in.set(ib);
    Buffer<int> ob(300, 200), oc(300, 200), rb(300, 200), rc(300, 200);
    p.realize({ob, oc});
    internal::interpret_pipeline(p, {rb, rc});
    int64_t bad = 0;
    ob.for_each_offset([&](int64_t off) { bad += ob.data()[off] != rb.data()[off]; });
    oc.for_each_offset([&](int64_t off) { bad += oc.data()[off] != rc.data()[off]; });
    EXPECT_EQ(bad, 0);
}

TEST(AutoSchedule, AMemberIsVectorizedAlongTheDimensionItsLoadsAreDenseIn) {
    // g's first dimension is y, but along y it reads `in` at computed rows (a gather); along x
    // its loads are dense: it is vectorized along x, and x is made its innermost in storage.
    const int W = 256, H = 96;
    ImageParam in(Float(32), 2, "in");
    Var x("x"), y("y"), j("j");
    RDom r(0, 4, "r");
    Func k("k"), g("g"), out("out");
    k(y, j) = cast<float>(y % 7 + j) * 0.25f;
    g(y, x) = 0.0f;
    g(y, x) += k(y, r) * in(x, clamp(y * 5 / 3 + r, 0, H - 1));
    out(x, y) = g(y, x) * 2.0f + 1.0f;
    in.set_estimates({{0, W}, {0, H}});
    out.set_estimates({{0, W}, {0, H}});
    Pipeline p(out);
    AutoScheduleResult res = p.auto_schedule();
    EXPECT_CONTAINS(res.schedule_source, "g.reorder_storage(x, y)");
    Buffer<float> ib(W, H);
    fill(ib, 11, -4, 4);
    in.set(ib);
    Buffer<float> o(W, H);
    EXPECT_EQ(differences(p, o), 0);
    Buffer<float> o2(37, 21);  // other shapes than the estimates
    EXPECT_EQ(differences(p, o2), 0);
}

TEST(AutoSchedule, APyramidMatchesTheInterpreterWhicheverCandidateIsTaken) {
    // Down by 2 eight times, then up again, each level blending the one below (Halide's
    // interpolate, one channel): coarse levels are recomputed per strip, fine ones slide. Every
    // candidate of the planner (a sliding window eight levels deep among them) lowers and
    // matches the interpreter.
    const int W = 512, H = 384, L = 8;
    ImageParam in(Float(32), 2, "in");
    Var x("x"), y("y");
    Func clamped = BoundaryConditions::repeat_edge(in);
    std::vector<Func> down(L), up(L), dx(L), ux(L);
    down[0](x, y) = clamped(x, y);
    for (int l = 1; l < L; l++) {
        Func prev = down[l - 1];
        if (l == 4) prev = BoundaryConditions::repeat_edge(down[l - 1], {{0, W >> 3}, {0, H >> 3}});
        dx[l](x, y) = (prev(2 * x - 1, y) + 2.0f * prev(2 * x, y) + prev(2 * x + 1, y)) * 0.25f;
        down[l](x, y) = (dx[l](x, 2 * y - 1) + 2.0f * dx[l](x, 2 * y) + dx[l](x, 2 * y + 1)) * 0.25f;
    }
    up[L - 1](x, y) = down[L - 1](x, y);
    for (int l = L - 2; l >= 0; l--) {
        ux[l](x, y) = (up[l + 1](x / 2, y) + up[l + 1]((x + 1) / 2, y)) * 0.5f;
        Func u;
        u(x, y) = (ux[l](x, y / 2) + ux[l](x, (y + 1) / 2)) * 0.5f;
        up[l](x, y) = down[l](x, y) * 0.75f + u(x, y) * 0.25f;
    }
    Func out("out");
    out(x, y) = up[0](x, y) * 2.0f;
    in.set_estimates({{0, W}, {0, H}});
    out.set_estimates({{0, W}, {0, H}});
    Buffer<float> ib(W, H);
    fill(ib, 12, 0, 1);
    in.set(ib);
    for (int pick = 0; pick < 5; pick++) {
        Pipeline p = candidate(out, pick);
        Buffer<float> o(W, H);
        EXPECT_EQ(differences(p, o), 0) << "candidate " << pick << ":\n" << p.get_schedule().cpp_source();
    }
}

// A contraction whose vector operand comes through a copy (a wrapper Func) and is read a
// whole 4 KB row apart at every step of the reduction: its rows fall in few sets of L2, so the
// planner packs each column's panel once (the copy computed per column of blocks) and runs
// each column's rows inside it. The sums keep their order: equal to a plain loop.
TEST(AutoSchedule, AContractionPacksItsWrappedOperandPerColumnOfBlocks) {
    const int N = 1024, M = 128;
    ImageParam V(Float(32), 2, "V"), S(Float(32), 2, "S");
    Var x("x"), y("y");
    RDom k(0, N, "k");
    Func Vp("Vp"), prod("prod"), C("C");
    Vp(x, y) = V(x, y);
    prod(x, y) = 0.0f;
    prod(x, y) += Vp(x, k) * S(k, y);
    C(x, y) = prod(x, y);
    V.set_estimates({{0, N}, {0, N}});
    S.set_estimates({{0, N}, {0, M}});
    C.set_estimates({{0, N}, {0, M}});
    Pipeline p(C);
    AutoScheduleResult r = p.auto_schedule();
    EXPECT_CONTAINS(r.schedule_source, "Vp.compute_at(C, xo)");
    EXPECT_CONTAINS(r.schedule_source, "prod.compute_at(C, yo)");
    EXPECT_CONTAINS(r.schedule_source, "C.reorder(xv, xi, yi, yo, xo)");
    Buffer<float> v(N, N), s(N, M), out(N, M);
    fill(v, 6, -2, 2);
    fill(s, 7, -2, 2);
    V.set(v);
    S.set(s);
    p.realize(out);
    double maxdiff = 0;
    for (int j = 0; j < M; j++)
        for (int i = 0; i < N; i++) {
            float acc = 0;
            for (int kk = 0; kk < N; kk++) acc += v(i, kk) * s(kk, j);
            maxdiff = std::max(maxdiff, (double)std::fabs(out(i, j) - acc));
        }
    EXPECT_LE(maxdiff, 1e-3);
}

// A contraction that is its own output (no wrapper Func: mm(j, t) += a(k, t) * w(j, k)) is
// register-blocked in place: its update tiled with the block inside the reduction loop, the
// block held in a stack tile by lowering; the same bits as the interpreter. Read by a
// pointwise Func (bias + GELU) whose reader needs all of it, that Func is made a group's root
// of its own with the contraction blocked in its tiles, and the second contraction blocked too.
TEST(AutoSchedule, AContractionThatIsItsOwnOutputIsBlockedInPlace) {
    const int K = 128, N = 256, T = 24;
    ImageParam a(Float(32), 2, "a"), w(Float(32), 2, "w");
    Var j("j"), t("t");
    RDom k(0, K, "k");
    Func mm("mm");
    mm(j, t) = 0.0f;
    mm(j, t) += a(k, t) * w(j, k);
    a.set_estimates({{0, K}, {0, T}});
    w.set_estimates({{0, N}, {0, K}});
    mm.set_estimates({{0, N}, {0, T}});
    Pipeline p(mm);
    AutoScheduleResult r = p.auto_schedule();
    EXPECT_CONTAINS(r.schedule_source, "mm.update(0).reorder(");
    EXPECT_CONTAINS(r.schedule_source, "mm.update(0).unroll(");
    Buffer<float> A(K, T), W(N, K), got(N, T), ref(N, T);
    fill(A, 8, -1, 1);
    fill(W, 9, -1, 1);
    a.set(A);
    w.set(W);
    EXPECT_NE(p.lowered_ir({N, T}).find("allocate mm$acc"), std::string::npos) << "no tile of accumulators";
    p.realize(got);
    internal::interpret_pipeline(Pipeline(mm), {ref});
    EXPECT_EQ(std::memcmp(got.raw_data(), ref.raw_data(), (size_t)N * T * 4), 0);

    // mm -> bias + GELU -> a second contraction reading all of it.
    ImageParam w2(Float(32), 2, "w2"), b(Float(32), 1, "b");
    RDom k2(0, N, "k2");
    Func g("gelu"), mm2("mm2");
    Expr v = mm(j, t) + b(j);
    g(j, t) = 0.5f * v * (1.0f + tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
    mm2(j, t) = 0.0f;
    mm2(j, t) += g(k2, t) * w2(j, k2);
    w2.set_estimates({{0, K}, {0, N}});
    b.set_estimates({{0, N}});
    mm2.set_estimates({{0, K}, {0, T}});
    Pipeline p2(mm2);
    AutoScheduleResult r2 = p2.auto_schedule();
    EXPECT_CONTAINS(r2.schedule_source, "mm.compute_at(gelu, ");
    EXPECT_CONTAINS(r2.schedule_source, "mm2.update(0).unroll(");
    Buffer<float> W2(K, N), B(N), got2(K, T), ref2(K, T);
    fill(W2, 10, -1, 1);
    fill(B, 11, -1, 1);
    w2.set(W2);
    b.set(B);
    p2.realize(got2);
    internal::interpret_pipeline(Pipeline(mm2), {ref2});
    EXPECT_EQ(std::memcmp(got2.raw_data(), ref2.raw_data(), (size_t)K * T * 4), 0);
}

// A scan down the columns, transposed, scanned again and transposed back (an IIR blur): the
// transposes are not inlined into the scans that read them (each read would gather from a
// whole scan at root), each is a group's root looped over in strips and, in each strip,
// columns of one vector, and each scan is computed per strip of its transpose. Same bits as
// the interpreter.
TEST(AutoSchedule, ATransposeOfAScanIsTiledWithTheScanPerStrip) {
    // (Hostile shapes first: narrower than a vector, one row, one column, five channels.)
    for (auto [W, H, C] : {std::array<int, 3>{17, 5, 1}, {1, 300, 2}, {300, 1, 1}, {40, 33, 5}, {384, 640, 3}}) {
    SCOPED_TRACE(std::to_string(W) + "x" + std::to_string(H) + "x" + std::to_string(C));
    ImageParam in(Float(32), 3, "in");
    Var x("x"), y("y"), c("c");
    auto pass = [&](Func input, Expr height, const std::string &n) {
        Func blur("blur" + n), tr("tr" + n);
        blur(x, y, c) = undef<float>();
        blur(x, 0, c) = input(x, 0, c);
        RDom ry(1, height - 1, "ry");
        blur(x, ry, c) = 0.9f * blur(x, ry - 1, c) + 0.1f * input(x, ry, c);
        Expr up = height - ry - 1;
        blur(x, up, c) = 0.9f * blur(x, up + 1, c) + 0.1f * blur(x, up, c);
        tr(x, y, c) = blur(y, x, c);
        return tr;
    };
    Func src("src");
    src(x, y, c) = in(x, y, c);
    Func t1 = pass(src, in.height(), "1");
    Func t2 = pass(t1, in.width(), "2");
    in.set_estimates({{0, W}, {0, H}, {0, C}});
    t2.set_estimates({{0, W}, {0, H}, {0, C}});
    Pipeline p(t2);
    AutoScheduleResult r = p.auto_schedule();
    if (W == 384) {
        EXPECT_CONTAINS(r.schedule_source, "tr1.compute_root()");
        EXPECT_CONTAINS(r.schedule_source, "blur1.compute_at(tr1, ");
        EXPECT_CONTAINS(r.schedule_source, "blur2.compute_at(tr2, ");
    }
    Buffer<float> I(W, H, C), got(W, H, C), ref(W, H, C);
    fill(I, 12, 0, 1);
    in.set(I);
    p.realize(got);
    internal::interpret_pipeline(Pipeline(t2), {ref});
    EXPECT_EQ(std::memcmp(got.raw_data(), ref.raw_data(), (size_t)W * H * C * 4), 0);
    }
}

// Two outputs that read one input too large for L2 run in one pass (horizontal fusion: the
// second computed with the first at their outer loop), with the interpreter's results; one
// that reads the other is not fused.
TEST(AutoSchedule, SiblingsReadingOneLargeInputRunInOnePass) {
    const int W = 1024, H = 640;
    ImageParam in(Float(32), 2, "in");
    Var x("x"), y("y");
    Func a("a"), b("b");
    a(x, y) = in(x, y) * in(x, y) * 0.5f + 0.25f;
    b(x, y) = sqrt(abs(in(x, y))) - 0.1f;
    in.set_estimates({{0, W}, {0, H}});
    a.set_estimates({{0, W}, {0, H}});
    b.set_estimates({{0, W}, {0, H}});
    Pipeline p({a, b});
    AutoScheduleResult r = p.auto_schedule();
    EXPECT_CONTAINS(r.schedule_source, "b.compute_with(a, ");
    Buffer<float> I(W, H), A(W, H), B(W, H), RA(W, H), RB(W, H);
    fill(I, 12, -2, 2);
    in.set(I);
    p.realize({A, B});
    internal::interpret_pipeline(Pipeline({a, b}), {RA, RB});
    EXPECT_EQ(std::memcmp(A.raw_data(), RA.raw_data(), (size_t)W * H * 4), 0);
    EXPECT_EQ(std::memcmp(B.raw_data(), RB.raw_data(), (size_t)W * H * 4), 0);
    // At other sizes (the schedule is for the estimates; the fused loops cover both ranges).
    Buffer<float> I2(W / 2 + 3, 37), A2(W / 2 + 3, 37), B2(W / 2 + 3, 37), RA2(W / 2 + 3, 37), RB2(W / 2 + 3, 37);
    fill(I2, 13, -2, 2);
    in.set(I2);
    p.realize({A2, B2});
    internal::interpret_pipeline(Pipeline({a, b}), {RA2, RB2});
    EXPECT_EQ(std::memcmp(A2.raw_data(), RA2.raw_data(), A2.number_of_elements() * 4), 0);
    EXPECT_EQ(std::memcmp(B2.raw_data(), RB2.raw_data(), B2.number_of_elements() * 4), 0);

    // c reads a: not fused with it.
    Func a3("a3"), c("c");
    a3(x, y) = in(x, y) + 1.0f;
    c(x, y) = in(x, y) * a3(x, y);
    a3.set_estimates({{0, W}, {0, H}});
    c.set_estimates({{0, W}, {0, H}});
    AutoScheduleResult r3 = Pipeline({a3, c}).auto_schedule();
    EXPECT_EQ(r3.schedule_source.find("compute_with"), std::string::npos) << r3.schedule_source;
}

// Row reductions read by the row's other stages (a softmax): each row's members are computed
// inside the row, where the row stays in L1, and match the interpreter bit for bit.
TEST(AutoSchedule, RowReductionsAreComputedPerRow) {
    const int W = 1024, H = 64;
    ImageParam in(Float(32), 2, "in");
    Var x("x"), y("y");
    RDom r(0, W, "r");
    Func mx("mx"), e("e"), sum("sum"), out("out");
    mx(y) = Float(32).min();
    mx(y) = max(mx(y), in(r, y));
    e(x, y) = exp(in(x, y) - mx(y));
    sum(y) = 0.0f;
    sum(y) += e(r, y);
    out(x, y) = e(x, y) / sum(y);
    in.set_estimates({{0, W}, {0, H}});
    out.set_estimates({{0, W}, {0, H}});
    Pipeline p(out);
    AutoScheduleResult res = p.auto_schedule();
    EXPECT_CONTAINS(res.schedule_source, "e.compute_at(out, yi)");
    EXPECT_CONTAINS(res.schedule_source, "sum.compute_at(out, yi)");
    Buffer<float> b(W, H);
    fill(b, 8, -5, 5);
    in.set(b);
    EXPECT_EQ(differences(p, Buffer<float>(W, H)), 0);
}

// Partial sums in one vector per j: the 4 small j loops move inside the reduction loop,
// unrolled (four independent accumulators rather than one chain); each point's sum keeps its
// order, so the results are the interpreter's bit for bit.
TEST(AutoSchedule, SmallPureLoopsOfAReductionAreUnrolledInsideIt) {
    const int W = 1024, H = 32;
    ImageParam in(Float(32), 2, "in");
    Var l("l"), j("j"), y("y");
    RDom rc(0, W / 64, "rc");
    Func part("part"), out("out");
    part(l, j, y) = 0.0f;
    part(l, j, y) += in(rc * 64 + j * 16 + l, y);
    out(l, j, y) = part(l, j, y) * 2.0f;
    in.set_estimates({{0, W}, {0, H}});
    out.set_estimates({{0, 16}, {0, 4}, {0, H}});
    Pipeline p(out);
    AutoScheduleResult res = p.auto_schedule();
    EXPECT_CONTAINS(res.schedule_source, "part.update(0).unroll(j)");
    Buffer<float> b(W, H);
    fill(b, 9, -5, 5);
    in.set(b);
    Buffer<float> o(16, 4, H), ref(16, 4, H);
    p.realize(o);
    internal::interpret_pipeline(p, {ref});
    int64_t bad = 0;
    o.for_each_offset([&](int64_t off) { bad += !(o.data()[off] == ref.data()[off]); });
    EXPECT_EQ(bad, 0);
}

// How many accumulators those unrolled loops may make: half the vector registers. With AVX-512
// (32 registers) 2 vectors x 8 points of j are 16 chains (a depthwise convolution's channels x
// columns over its taps), unrolled, where 8 was the limit before. Results bit for bit the
// interpreter's (each point's order is kept), on AVX2 too.
TEST(AutoSchedule, UnrolledAccumulatorsAreHalfTheVectorRegisters) {
    if (!Target::host().has_feature("avx512f")) GTEST_SKIP() << "the host has no AVX-512";
    const int L = 32, J = 8, K = 32, H = 16, W = L * J * K;
    ImageParam in(Float(32), 2, "in");
    Var l("l"), j("j"), y("y");
    RDom rc(0, K, "rc");
    Func part("part"), out("out");
    part(l, j, y) = 0.0f;
    part(l, j, y) += in(rc * (L * J) + j * L + l, y);
    out(l, j, y) = part(l, j, y) + part(l, j, y + 1);  // (not pointwise: no register block of part)
    in.set_estimates({{0, W}, {0, H + 1}});
    out.set_estimates({{0, L}, {0, J}, {0, H}});
    Buffer<float> b(W, H + 1);
    fill(b, 10, -5, 5);
    in.set(b);
    for (bool avx512 : {true, false}) {
        Pipeline p(out);
        Target t = avx512 ? Target::host() : Target::host().without_feature("avx512f");
        AutoScheduleResult res = p.auto_schedule(t);
        if (avx512) EXPECT_CONTAINS(res.schedule_source, "part.update(0).unroll(j)");
        EXPECT_EQ(differences(p, Buffer<float>(L, J, H), t), 0) << (avx512 ? "AVX-512" : "AVX2") << ":\n" << res.schedule_source;
    }
}

// A wide image: the planner's candidates include sliding windows in columns (the window's
// rows stay short). Every one of the first candidates lowers and matches the interpreter, odd
// sizes included (columns and strips with tails).
TEST(AutoSchedule, SlidingWindowsInColumnsMatchTheInterpreter) {
    for (auto [W, H] : {std::pair<int, int>{2048, 96}, {2051, 97}}) {
        Blur b;
        Pipeline est = estimated(b, W, H);
        (void)est;
        int columns = 0;
        AutoScheduleOptions o;
        o.threads = 2;  // (the candidates' ranking depends on it; the same on every machine)
        for (int pick = 0; pick < 8; pick++) {
            Pipeline p = candidate(b.by, pick, o);
            std::string src = p.get_schedule().cpp_source();
            columns += src.find("blur_x.store_at(blur_y, xo)") != std::string::npos;
            EXPECT_EQ(blur_differences(b, p, W, H, 13), 0) << W << "x" << H << ", candidate " << pick << ":\n" << src;
        }
        EXPECT_GT(columns, 0) << W << "x" << H;
    }
}

// The cost model's factor for a vector loop's loads, as code generation makes them: dense, at a
// constant stride of 2 to 4 (dense loads and a shuffle: a pyramid's downsampling), upsampling
// (a load and a permute), and gathers for the rest.
TEST(AutoSchedule, StridedAndUpsamplingLoadsAreCostedAsCodeGenerationMakesThem) {
    using internal::load_vector_efficiency;
    using internal::stride_in;
    Var x("x"), y("y");
    Expr X = x, Y = y;
    EXPECT_EQ(*stride_in(X + 1, "x"), 1);
    EXPECT_EQ(*stride_in(X * 2 - 1, "x"), 2);
    EXPECT_EQ(*stride_in(3 - X, "x"), -1);
    EXPECT_EQ(*stride_in(Y + 4, "x"), 0);
    EXPECT_EQ(*stride_in((X + Y) * 3 - X, "x"), 2);
    EXPECT_FALSE(stride_in(X / 2, "x").has_value());
    EXPECT_FALSE(stride_in(X * X, "x").has_value());
    EXPECT_FALSE(stride_in(X * Y, "x").has_value());
    EXPECT_EQ(load_vector_efficiency(X + Y, "x"), 1.0);
    EXPECT_EQ(load_vector_efficiency(7 - X, "x"), 1.0);
    EXPECT_EQ(load_vector_efficiency(X * 2 + 1, "x"), 0.7);
    EXPECT_EQ(load_vector_efficiency(X * -4, "x"), 0.7);
    EXPECT_EQ(load_vector_efficiency((X + 1) / 2, "x"), 0.85);
    EXPECT_EQ(load_vector_efficiency(X / 4, "x"), 0.85);
    // Sums of divisions and remainders of x by constants up to 8 (a bilinear upsampling's
    // outer tap): a dense load and a permute per remainder.
    EXPECT_EQ(load_vector_efficiency(X / 2 - 1 + 2 * (X % 2) + Y, "x"), 0.8);
    EXPECT_EQ(load_vector_efficiency((X + 1) / 3 + X % 3, "x"), 0.8);
    EXPECT_EQ(load_vector_efficiency(X / 5, "x"), 0.8);
    for (Expr gather : {X * 5, X / 9, X % 9, X * X, (X * 2) / 2, (X * 2) % 3, Y, clamp(X, 0, 9) * 2})
        EXPECT_EQ(load_vector_efficiency(gather, "x"), 0.35) << to_string(gather);
    // Hostile: int32 edges in the coefficients stay exact (int64 arithmetic), and an index
    // that does not use x is a broadcast's caller's business: a gather here.
    EXPECT_EQ(*stride_in(X * 2147483647 - X * 2147483647, "x"), 0);
    EXPECT_EQ(load_vector_efficiency(Expr(0), "x"), 0.35);
}

namespace {
/** A pyramid in the shape of Halide's interpolate: a cheap premultiply `pre` of a 4-channel
    input, read at stride 2 by the first level's horizontal pass and pointwise by the output,
    which adds the levels back, upsampled. */
struct Pyramid {
    ImageParam in{Float(32), 3, "in"};
    Var x{"x"}, y{"y"}, c{"c"};
    Func pre{"pre"}, out{"out"};
    std::vector<Func> dx, d, up;
    explicit Pyramid(int levels) {
        Func clamped = BoundaryConditions::repeat_edge(in);
        pre(x, y, c) = select(c < 3, clamped(x, y, c) * clamped(x, y, 3), clamped(x, y, 3));
        Func prev = pre;
        for (int l = 1; l <= levels; l++) {
            Func fx("dx" + std::to_string(l)), fy("d" + std::to_string(l));
            fx(x, y, c) = (prev(2 * x - 1, y, c) + 2.0f * prev(2 * x, y, c) + prev(2 * x + 1, y, c)) * 0.25f;
            fy(x, y, c) = (fx(x, 2 * y - 1, c) + 2.0f * fx(x, 2 * y, c) + fx(x, 2 * y + 1, c)) * 0.25f;
            dx.push_back(fx);
            d.push_back(fy);
            prev = fy;
        }
        Func acc = prev;
        for (int l = levels - 1; l >= 0; l--) {
            Func u("up" + std::to_string(l));
            Func below = l == 0 ? pre : d[l - 1];
            u(x, y, c) = below(x, y, c) + 0.5f * (acc(x / 2, y / 2, c) + acc((x + 1) / 2, (y + 1) / 2, c));
            up.push_back(u);
            acc = u;
        }
        out(x, y, c) = acc(x, y, c) / (1.0f + acc(x, y, 3) * acc(x, y, 3));
    }
};
}  // namespace

TEST(AutoSchedule, ACheapFuncReadAtStrideTwoIsCopiedForThatReader) {
    // Halide's clone trick, found by the planner: a copy of pre computed in the first level's
    // loops (its loads dense), pre itself inlined into the output; no buffer of pre's size.
    const int W = 640, H = 480;
    Pyramid a(8);
    a.in.set_estimates({{0, W}, {0, H}, {0, 4}});
    a.out.set_estimates({{0, W}, {0, H}, {0, 3}});
    Pipeline p(a.out);
    AutoScheduleResult r = p.auto_schedule(Target::host());
    EXPECT_CONTAINS(r.schedule_source, "Func pre_in_dx1 = pre.in(dx1);");
    EXPECT_CONTAINS(r.schedule_source, "pre_in_dx1.compute_at(");
    EXPECT_EQ(r.schedule_source.find("pre.compute_root()"), std::string::npos) << r.schedule_source;
    // Scheduled again: the same schedule (the copy made last time is not taken for the user's).
    EXPECT_EQ(p.auto_schedule(Target::host()).schedule_source, r.schedule_source);
    Buffer<float> input(std::vector<int>{W, H, 4});
    fill(input, 3, 0.0f, 1.0f);
    a.in.set(input);
    Buffer<float> out(std::vector<int>{W, H, 3});
    EXPECT_EQ(differences(p, out), 0);
    // The schedule, copy included, read back on the algorithm alone gives the same bits.
    Pyramid b(8);
    b.in.set(input);
    Pipeline pb(b.out);
    pb.apply_schedule_source(r.schedule_source);
    EXPECT_TRUE(pb.get_schedule() == p.get_schedule()) << pb.get_schedule().cpp_source();
    Buffer<float> out_b(std::vector<int>{W, H, 3});
    pb.realize(out_b);
    int64_t bad = 0;
    out.for_each_offset([&](int64_t off) { bad += !(out.data()[off] == out_b.data()[off]); });
    EXPECT_EQ(bad, 0);
    // Hostile shapes: narrower than a vector, one row, an odd size; each scheduled anew, bit
    // for bit against the interpreter.
    for (auto [w, h] : {std::pair<int, int>{5, 9}, {300, 1}, {77, 33}}) {
        Pyramid c(3);
        c.in.set_estimates({{0, w}, {0, h}, {0, 4}});
        c.out.set_estimates({{0, w}, {0, h}, {0, 3}});
        Pipeline pc(c.out);
        pc.auto_schedule(Target::host());
        Buffer<float> in_c(std::vector<int>{w, h, 4});
        fill(in_c, 5, 0.0f, 1.0f);
        c.in.set(in_c);
        Buffer<float> out_c(std::vector<int>{w, h, 3});
        EXPECT_EQ(differences(pc, out_c), 0) << w << "x" << h;
    }
    // A later candidate with the copy (rank 1), and the last one, every Func at root without
    // it (rank 4, after the four best): the trial's copy is gone there, and the bits stay.
    for (int pick : {1, 4}) {
        Pyramid c(8);
        c.in.set_estimates({{0, W}, {0, H}, {0, 4}});
        c.out.set_estimates({{0, W}, {0, H}, {0, 3}});
        Pipeline pc(c.out);
        internal::g_autoschedule_pick = pick;
        std::string src = pc.auto_schedule(Target::host()).schedule_source;
        internal::g_autoschedule_pick = -1;
        c.in.set(input);
        Buffer<float> out_c(std::vector<int>{W, H, 3});
        pc.realize(out_c);  // (against the output checked with the interpreter above)
        int64_t differ = 0;
        out.for_each_offset([&](int64_t off) { differ += !(out.data()[off] == out_c.data()[off]); });
        EXPECT_EQ(differ, 0) << "candidate " << pick << ":\n" << src;
        EXPECT_EQ(src.find("Func pre_in_dx1 = pre.in(dx1);") != std::string::npos, pick == 1) << src;
    }
}

namespace {

// A measured search corrects the model by what it measured: after the model's first choice
// measures three times slower than predicted and a candidate of another family measures as
// predicted, the rest of the first family gives way to an untried family (whose correction is
// the mean over everything measured); without measurements the model's order stands. A family
// is the fusion decisions, not the tile sizes.
TEST(AutoSchedule, AMeasuredSearchCorrectsTheModelByFamily) {
    using internal::Directive;
    using internal::next_candidate_to_measure;
    using internal::plan_family;
    const double nan = std::nan("");
    std::vector<double> pred = {1.0, 1.05, 1.1, 1.12, 1.3, 1.4};
    std::vector<std::string> fam = {"A", "B", "A", "A", "C", "C"};
    std::vector<double> meas(6, nan);
    std::vector<bool> tried(6, false);
    EXPECT_EQ(next_candidate_to_measure(pred, fam, meas, tried), 0);
    tried[0] = true;
    meas[0] = 3.0;
    EXPECT_EQ(next_candidate_to_measure(pred, fam, meas, tried), 1) << "one family measured: every prediction scaled alike";
    tried[1] = true;
    meas[1] = 1.05;
    EXPECT_EQ(next_candidate_to_measure(pred, fam, meas, tried), 4) << "family A under-rated: C comes before A's others";
    tried[4] = true;
    meas[4] = 1.3;
    EXPECT_EQ(next_candidate_to_measure(pred, fam, meas, tried), 5);
    tried[5] = true;
    EXPECT_EQ(next_candidate_to_measure(pred, fam, meas, tried), 2);
    tried[2] = tried[3] = true;
    EXPECT_EQ(next_candidate_to_measure(pred, fam, meas, tried), -1);
    // A failed candidate (tried, nothing measured) and hostile predictions change no order.
    std::vector<double> odd = {0.5, nan, 0.0, -1.0, 2.0};
    std::vector<std::string> f5(5, "A");
    std::vector<double> m5(5, nan);
    std::vector<bool> t5(5, false);
    t5[0] = true;  // failed
    int next = next_candidate_to_measure(odd, f5, m5, t5);
    EXPECT_GE(next, 1);
    EXPECT_LT(next, 5);
    EXPECT_EQ(next_candidate_to_measure({}, {}, {}, {}), -1);
    // Families: tile sizes and loop types are left out, fusion decisions are not.
    auto call = [](Directive::Op op, const std::string &f, std::vector<std::string> names, std::vector<Expr> exprs) {
        Directive d;
        d.op = op;
        d.func = f;
        d.names = std::move(names);
        d.exprs = std::move(exprs);
        return d;
    };
    std::vector<Directive> a = {call(Directive::Split, "out", {"y", "yo", "yi"}, {Expr(8)}),
                                call(Directive::ComputeAt, "bx", {"out", "yo"}, {})};
    std::vector<Directive> b = {call(Directive::Split, "out", {"y", "yo", "yi"}, {Expr(32)}),
                                call(Directive::ComputeAt, "bx", {"out", "yo"}, {})};
    std::vector<Directive> c = {call(Directive::Split, "out", {"y", "yo", "yi"}, {Expr(8)}),
                                call(Directive::ComputeRoot, "bx", {}, {})};
    EXPECT_EQ(plan_family(a), plan_family(b));
    EXPECT_NE(plan_family(a), plan_family(c));
}

// The finalist a measured search keeps: the fastest, unless the model's first choice (candidate
// 0) is within the noise of its own readings (the median's distance from the fastest, at least
// 3%) of it.
TEST(AutoSchedule, AMeasuredSearchKeepsTheModelsChoiceWithinItsOwnNoise) {
    using internal::choose_finalist;
    double margin = 0;
    // Readings 1.0, 1.1 and 1.2: 10% noise. A challenger 7% faster does not displace it; one
    // 15% faster does.
    EXPECT_EQ(choose_finalist({{0, 1.0}, {3, 0.93}}, {1.2, 1.0, 1.1}, &margin), 0);
    EXPECT_NEAR(margin, 0.1, 1e-12);
    EXPECT_EQ(choose_finalist({{0, 1.0}, {3, 0.85}}, {1.2, 1.0, 1.1}), 3);
    // Two readings: the slower one is the median (20% here).
    EXPECT_EQ(choose_finalist({{0, 1.0}, {3, 0.79}, {5, 0.85}}, {1.2, 1.0}, &margin), 3);
    EXPECT_NEAR(margin, 0.2, 1e-12);
    EXPECT_EQ(choose_finalist({{0, 1.0}, {3, 0.87}}, {1.2, 1.0}), 0);
    // One slow moment among steady readings (twice the others) does not count: a challenger 7%
    // faster wins (camera_pipe's 60 s search, where the spread of all readings, 100%, kept the
    // first choice).
    EXPECT_EQ(choose_finalist({{0, 1.0}, {7, 0.93}}, {2.0, 1.0, 1.01, 1.02}, &margin), 7);
    EXPECT_NEAR(margin, 0.03, 1e-12);
    // Steady readings: at least 3% all the same.
    EXPECT_EQ(choose_finalist({{0, 1.0}, {2, 0.98}}, {1.0, 1.0}, &margin), 0);
    EXPECT_NEAR(margin, 0.03, 1e-12);
    EXPECT_EQ(choose_finalist({{0, 1.0}, {2, 0.95}}, {1.0, 1.0}), 2);
    // The first not among the finalists (it failed, or was not measured): the fastest.
    EXPECT_EQ(choose_finalist({{4, 2.0}, {2, 1.5}}, {}), 2);
    // Hostile readings: NaN, infinities, zero and negative times are left out.
    const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
    EXPECT_EQ(choose_finalist({{0, nan}, {1, 2.0}, {2, 0.0}, {3, -1.0}, {4, inf}}, {nan, -1.0, inf}), 1);
    EXPECT_EQ(choose_finalist({{0, 1.0}, {1, 0.5}}, {nan, 0.0, inf}, &margin), 1);
    EXPECT_NEAR(margin, 0.03, 1e-12);
    EXPECT_EQ(choose_finalist({{0, nan}, {1, nan}}, {1.0}), -1);
    EXPECT_EQ(choose_finalist({}, {}), -1);
}

}  // namespace

// A sum over a few taps (a resampling filter: 4 taps, a constant count) per point of a
// vectorized dimension, not register-blocked (read at two points by its consumer): the taps
// run innermost, unrolled, inside the vector loop, so each vector accumulates in a register
// (Halide's experts' unroll(r)); the sum keeps its order, so the results are the interpreter's
// bit for bit. A long reduction (64 steps) keeps its loop outside.
TEST(AutoSchedule, AFewTapsOfAReductionAreUnrolledInsideTheVectorLoop) {
    const int W = 512, H = 64, C = 3;
    for (int taps : {4, 64}) {
        ImageParam in(Float(32), 3, "in");
        Var x("x"), y("y"), c("c"), k("k");
        RDom r(0, taps, "r");
        Func w("w"), up("up"), out("out");
        // (A vertical resampling: the weights depend on the row, as resize's kernel_y.)
        w(y, k) = 1.0f / (1.0f + cast<float>(y % 4 + k));
        up(x, y, c) = 0.0f;
        up(x, y, c) += w(y, r) * in(x, y / 4 + r, c);
        // (Read at two points: not a contraction to register-block.)
        out(x, y, c) = clamp(up(x, y, c) + up(x + 1, y, c), -1.0f, 1.0f);
        in.set_estimates({{0, W + 1}, {0, H / 4 + taps}, {0, C}});
        out.set_estimates({{0, W}, {0, H}, {0, C}});
        Pipeline p(out);
        AutoScheduleResult res = p.auto_schedule();
        if (taps == 4) EXPECT_CONTAINS(res.schedule_source, "up.update(0).unroll(r_x)");
        else EXPECT_FALSE(weft_test::contains(res.schedule_source, "up.update(0).unroll(r_x)")) << res.schedule_source;
        for (int size : {W, 37}) {  // (37: tails of the vector loop)
            Buffer<float> b(size + 1, H / 4 + taps + 1, C);
            fill(b, 10 + taps, -5, 5);
            in.set(b);
            Buffer<float> o(size, H, C), ref(size, H, C);
            p.realize(o);
            internal::interpret_pipeline(p, {ref});
            int64_t bad = 0;
            o.for_each_offset([&](int64_t off) { bad += !(o.data()[off] == ref.data()[off]); });
            EXPECT_EQ(bad, 0) << taps << " taps, width " << size << "\n" << res.schedule_source;
        }
    }
}

// Such a reduction read pointwise by the output alone (resize's vertical pass: a sum() inlined
// into a clamp) is computed per vector of the output, inside its tile, the accumulators in
// registers (Halide's resized_y.compute_at(output, xi)), not stored per tile and read back; its
// producer, the horizontal pass, stays where it was. The Vars of the sum's Func come in
// another order (y first): a vector of the output still reads one vector of it. Every
// candidate matches the interpreter bit for bit, odd widths included.
TEST(AutoSchedule, ASmallReductionReadPointwiseIsComputedPerVector) {
    const int W = 512, H = 64, C = 3, taps = 4;
    ImageParam in(Float(32), 3, "in");
    Var x("x"), y("y"), c("c"), k("k");
    RDom r(0, taps, "r");
    Func w("w"), hx("hx"), out("out");
    w(y, k) = 1.0f / (1.0f + cast<float>(y % 4 + k));
    hx(x, y, c) = in(x, y, c) * 0.25f + in(x + 1, y, c) * 0.75f;
    out(x, y, c) = clamp(sum(w(y, r) * hx(x, y / 4 + r, c)), -1.0f, 1.0f);
    in.set_estimates({{0, W + 1}, {0, H / 4 + taps}, {0, C}});
    out.set_estimates({{0, W}, {0, H}, {0, C}});
    Pipeline p(out);
    AutoScheduleResult res = p.auto_schedule();
    // (The sum's Func is the one whose update is unrolled; it is computed at out's loop just
    // outside the vector loop.)
    std::string src = res.schedule_source;
    size_t u = src.find(".update(0).unroll(r_x)");
    ASSERT_NE(u, std::string::npos) << src;
    size_t line = src.rfind('\n', u) + 1;
    std::string sum_name = src.substr(line, src.find('.', line) - line);
    EXPECT_CONTAINS(src, sum_name + ".compute_at(out, xi)");
    EXPECT_CONTAINS(src, "out.split(xi, xi, ");
    for (int pick = 0; pick < 4; pick++) {
        Pipeline q = candidate(out, pick);
        std::string qs = q.get_schedule().cpp_source();
        for (int size : {W, 37}) {
            Buffer<float> b(size + 1, H / 4 + taps + 1, C);
            fill(b, 11 + pick, -5, 5);
            in.set(b);
            EXPECT_EQ(differences(q, Buffer<float>(size, H, C)), 0) << "candidate " << pick << ", width " << size << "\n" << qs;
        }
    }
}

// A member whose only reader is another member, read pointwise (a colour matrix reading the
// three channels of a demosaic, as camera_pipe's curved reads demosaiced): computed per vector
// of its reader, inside that one's loop over vectors, the channels unrolled there (Halide's
// expert demosaiced.compute_at(curved, x)), not stored per tile and read back; nothing of it
// is computed twice. camera_pipe: 6.45 -> 6.0 ms on one thread; nl_means' patch sums per
// vector of the weights: 304 -> 280 ms. Every candidate matches the interpreter bit for bit,
// odd widths included.
TEST(AutoSchedule, AMemberReadPointwiseByAnotherIsComputedPerVectorOfIt) {
    const int W = 512, H = 64;
    ImageParam in(UInt(16), 2, "in");
    Var x("x"), y("y"), c("c");
    Func den("den"), mid("mid"), cur("cur"), out("out");
    auto avg = [](Expr a, Expr b) { return cast(a.type(), (cast<int32_t>(a) + b + 1) / 2); };
    den(x, y) = min(max(in(x, y), in(x + 1, y)), max(in(x, y + 1), in(x + 1, y + 1)));
    Expr a = den(x, y), b = den(x + 1, y), d = den(x, y + 1);
    mid(x, y, c) = cast<int16_t>(mux(Expr(c), {avg(a, b), absd(a, d), avg(avg(a, d), b)}));
    Expr r = mid(x, y, 0), g = mid(x, y, 1), bl = mid(x, y, 2);
    Expr m = mux(Expr(c), {r + g * 2 + bl, r * 2 + g - bl, r - g * 3 + bl});
    cur(x, y, c) = cast<uint8_t>(clamp(m, 0, 255));
    out(x, y, c) = avg(avg(cur(x, y - 1, c), cur(x, y + 1, c)), cur(x, y, c));
    in.set_estimates({{0, W + 2}, {-1, H + 4}});
    out.set_estimates({{0, W}, {0, H}, {0, 3}});
    Pipeline p(out);
    AutoScheduleResult res = p.auto_schedule();
    EXPECT_CONTAINS(res.schedule_source, "mid.compute_at(cur, x);");
    EXPECT_CONTAINS(res.schedule_source, "cur.unroll(c);");
    EXPECT_CONTAINS(res.schedule_source, "mid.unroll(c);");
    for (int pick = 0; pick < 4; pick++) {
        Pipeline q = candidate(out, pick);
        std::string qs = q.get_schedule().cpp_source();
        for (int size : {W, 37}) {
            Buffer<uint16_t> b(size + 2, H + 4);
            b.set_min({0, -1});
            fill(b, 21 + pick, 0, 1000);
            in.set(b);
            EXPECT_EQ(differences(q, Buffer<uint8_t>(size, H, 3)), 0) << "candidate " << pick << ", width " << size << "\n" << qs;
        }
    }
    // Absurd estimates (narrower than a vector, one row, a million columns): whatever is
    // chosen is legal and exact on a real image.
    for (auto [ew, eh] : {std::pair<int, int>{1, 1}, {5, 3}, {1 << 20, 1}, {3, 1 << 16}}) {
        in.set_estimates({{0, ew + 2}, {-1, eh + 4}});
        out.set_estimates({{0, ew}, {0, eh}, {0, 3}});
        Pipeline q(out);
        AutoScheduleResult er = q.auto_schedule();
        Buffer<uint16_t> b(39, H + 4);
        b.set_min({0, -1});
        fill(b, 5, 0, 1000);
        in.set(b);
        EXPECT_EQ(differences(q, Buffer<uint8_t>(37, H, 3)), 0) << "estimates " << ew << " x " << eh << "\n" << er.schedule_source;
    }
}

// Upsampling by 4 in two passes, as resize: each tap's source coordinate is computed from the
// output's in floats (the same for every tap), the weights are tables, and the constants are
// written unfolded. The cost model counts what code generation computes: constants folded,
// what the vector loop does not vary taken out of it, and what the unrolled taps share
// computed once. Priced per tap, the horizontal pass looked twice its cost and was stored
// whole (at root) rather than recomputed a quarter more per tile of the vertical pass (resize:
// 118.7 -> 111.7 ms on one thread, 63.5 -> 57.2 on two). Every tile size matches the
// interpreter.
TEST(AutoSchedule, TapsOfAnUpsamplingAreCostedAsTheirLoopsComputeThem) {
    const int W = 384, H = 256, C = 3, S = 4, taps = 4;
    ImageParam in(Float(32), 3, "in");
    Var x("x"), y("y"), c("c"), k("k");
    RDom r(0, taps, "r");
    Func ukx("ukx"), uky("uky"), kx("kx"), ky("ky"), rx("rx"), out("out");
    auto cubic = [](Expr v) {
        Expr a = abs(v), a2 = a * a, a3 = a2 * a;
        return select(a < 1.0f, 1.5f * a3 - 2.5f * a2 + 1.0f, select(a < 2.0f, -0.5f * a3 + 2.5f * a2 - 4.0f * a + 2.0f, 0.0f));
    };
    auto source = [&](Expr v) { return (cast<float>(v) + 0.5f) * (Expr(1.0f) / S) - 0.5f; };
    auto begin = [&](Expr v, Expr extent) { return clamp(cast<int>(ceil(source(v) - 0.5f * taps)), 0, extent - taps); };
    Expr bx = begin(x, in.width()), by = begin(y, in.height());
    ukx(x, k) = cubic(k + bx - source(x));
    uky(y, k) = cubic(k + by - source(y));
    kx(x, k) = ukx(x, k) / sum(ukx(x, r));
    ky(y, k) = uky(y, k) / sum(uky(y, r));
    rx(x, y, c) = 0.0f;
    rx(x, y, c) += kx(x, r) * in(r + bx, y, c);
    out(x, y, c) = clamp(sum(ky(y, r) * rx(x, r + by, c)), 0.0f, 1.0f);
    in.set_estimates({{0, W}, {0, H}, {0, C}});
    out.set_estimates({{0, W * S}, {0, H * S}, {0, C}});
    Pipeline p(out);
    AutoScheduleOptions o;
    o.threads = 1;
    AutoScheduleResult res = p.auto_schedule(Target::host(), o);
    EXPECT_CONTAINS(res.schedule_source, "rx.compute_at(out, ");
    for (int pick = 0; pick < 3; pick++) {
        Pipeline q = candidate(out, pick, o);
        std::string qs = q.get_schedule().cpp_source();
        for (int w : {W / 4, 37}) {
            Buffer<float> b(w, 40, C);
            fill(b, 31 + pick, 0, 1);
            in.set(b);
            EXPECT_EQ(differences(q, Buffer<float>(w * S, 40 * S, C)), 0) << "candidate " << pick << ", width " << w << "\n" << qs;
        }
    }
}

// A deep chain of full-resolution stencils (stencil_chain): each stage computed as a sliding
// window per row of the output, in one strip per thread, so the rows each strip computes again
// at its top (the halos of the whole chain) are few; strips of at most 128 rows recomputed
// half as much again, and the model kept every stage at root (stencil_chain on one thread:
// 53.0 -> 47.4 ms). A table read at computed values (a tone curve) is computed once per strip,
// not slid along rows it does not have. Every candidate matches the interpreter.
TEST(AutoSchedule, ADeepChainOfStencilsSlidesInOneStripPerThread) {
    const int W = 1536, H = 2560, stages = 12;
    ImageParam in(UInt(16), 2, "in");
    Var x("x"), y("y");
    std::vector<Func> chain = {BoundaryConditions::repeat_edge(in)};
    for (int s = 0; s < stages; s++) {
        Func f("stage_" + std::to_string(s));
        Expr e = cast<uint16_t>(0);
        for (int i = -2; i <= 2; i++)
            for (int j = -2; j <= 2; j++) e += cast<uint16_t>((i + 3) * (j + 3)) * chain.back()(x + i, y + j);
        f(x, y) = e;
        chain.push_back(f);
    }
    Func curve("curve"), out("out");
    curve(x) = cast<uint16_t>(clamp(pow(cast<float>(x) / 1023.0f, 0.45f) * 1023.0f, 0.0f, 1023.0f));
    out(x, y) = curve(cast<int>(chain.back()(x, y) % 1024));
    in.set_estimates({{0, W}, {0, H}});
    out.set_estimates({{0, W}, {0, H}});
    for (int threads : {1, 2}) {
        Pipeline p(out);
        AutoScheduleOptions o;
        o.threads = threads;
        std::string src = p.auto_schedule(Target::host(), o).schedule_source;
        EXPECT_CONTAINS(src, "out.split(y, yo, yi, " + std::to_string(H / threads) + ");");
        EXPECT_CONTAINS(src, "stage_0.compute_at(out, yi);\nstage_0.store_at(out, yo);");
        EXPECT_CONTAINS(src, "curve.compute_at(out, yo);\n");
        EXPECT_FALSE(weft_test::contains(src, "curve.store_at")) << src;
        for (int pick = 0; pick < 2; pick++) {
            Pipeline q = candidate(out, pick, o);
            for (auto [w, h] : {std::make_pair(37, 150), std::make_pair(16, 5)}) {
                Buffer<uint16_t> b(w, h);
                fill(b, 41 + pick, 0, 1000);
                in.set(b);
                EXPECT_EQ(differences(q, Buffer<uint16_t>(w, h)), 0) << threads << " threads, candidate " << pick << ", " << w << "x" << h << "\n"
                                                                      << q.get_schedule().cpp_source();
            }
        }
    }
}

// Absurd but legal estimates for such a chain: a billion rows (one strip per thread of half a
// billion), a row of one point: planning finishes, and what it chose computes the right values
// at small sizes. Rows ending at INT_MAX: the stencils read past it, a weft::Error naming the
// Func, not a crash.
TEST(AutoSchedule, ADeepChainWithAbsurdEstimatesIsPlannedAndExact) {
    ImageParam in(Float(32), 2, "in");
    Var x("x"), y("y");
    std::vector<Func> chain = {BoundaryConditions::repeat_edge(in)};
    for (int s = 0; s < 6; s++) {
        Func f("stage_" + std::to_string(s));
        f(x, y) = chain.back()(x - 1, y) + chain.back()(x, y + 1) * 0.5f + chain.back()(x + 1, y - 1) * 0.25f;
        chain.push_back(f);
    }
    Func out("out");
    out(x, y) = chain.back()(x, y);
    using Est = std::vector<std::pair<Expr, Expr>>;
    int which = 0;
    for (const Est &e : {Est{{0, 64}, {0, 1 << 30}}, Est{{0, 1}, {0, 4096}}, Est{{0, 256}, {2147483647 - 5000, 5000}}}) {
        which++;
        in.set_estimates(e);
        out.set_estimates(e);
        for (int threads : {1, 2}) {
            Pipeline p(out);
            AutoScheduleOptions o;
            o.threads = threads;
            std::string src;
            try {
                src = p.auto_schedule(Target::host(), o).schedule_source;
            } catch (const Error &err) {
                // (Rows up to INT_MAX: the stencils' reads past it cannot be bounded in int32,
                // which is said, naming the Func and the region.)
                EXPECT_EQ(which, 3) << err.what();
                EXPECT_CONTAINS(std::string(err.what()), "stage_");
                EXPECT_CONTAINS(std::string(err.what()), "reaches the ends of int32");
                continue;
            }
            Buffer<float> b(23, 17);
            fill(b, 5, -3, 3);
            in.set(b);
            EXPECT_EQ(differences(p, Buffer<float>(23, 17)), 0) << threads << " threads\n" << src;
        }
    }
}

// A padded input read with a halo of rows by a convolution's tiles (depthwise then pointwise,
// register-blocked): recomputing it per tile is within the cap on recomputation, but the model
// keeps it at root. A candidate recomputes it per tile all the same, for a measured search to
// time (depthwise_separable_conv: 10-15% faster so), never the model's first choice; its rows
// are not unrolled there (a select comparing them with the image's edges folds nothing in a
// halo that moves with the tile). Every candidate matches the interpreter.
TEST(AutoSchedule, AMemberTheModelKeepsAtRootIsAlsoACandidatePerTile) {
    const int N = 112, CI = 32, CO = 16, B = 4;
    ImageParam in(Float(32), 4, "in"), k(Float(32), 3, "k"), wp(Float(32), 2, "wp");
    Var c("c"), x("x"), y("y"), b("b");
    Func pad("pad"), dw("dw"), pw("pw"), out("out");
    pad(c, x, y, b) = select(x >= 0 && x < in.dim(1).extent() && y >= 0 && y < in.dim(2).extent(),
                             in(c, clamp(x, 0, in.dim(1).extent() - 1), clamp(y, 0, in.dim(2).extent() - 1), b), 0.0f);
    RDom r(0, 3, 0, 3, "r");
    dw(c, x, y, b) += k(c, r.x, r.y) * pad(c, x + r.x - 1, y + r.y - 1, b);
    RDom rc(0, CI, "rc");
    pw(c, x, y, b) = 0.0f;
    pw(c, x, y, b) += wp(c, rc) * dw(rc, x, y, b);
    out(c, x, y, b) = max(pw(c, x, y, b), 0.0f);
    in.set_estimates({{0, CI}, {0, N}, {0, N}, {0, B}});
    k.set_estimates({{0, CI}, {0, 3}, {0, 3}});
    wp.set_estimates({{0, CO}, {0, CI}});
    out.set_estimates({{0, CO}, {0, N}, {0, N}, {0, B}});
    std::vector<std::shared_ptr<internal::FunctionContents>> outs = {out.contents()};
    internal::Env env = internal::build_env(outs, true);
    internal::ShapeEstimates est;
    est.outputs[env.outputs[0]] = {{0, CO}, {0, N}, {0, N}, {0, B}};
    for (auto &i : env.inputs) {
        if (i.name == in.name()) est.inputs[i.name] = {{0, CI}, {0, N}, {0, N}, {0, B}};
        if (i.name == k.name()) est.inputs[i.name] = {{0, CI}, {0, 3}, {0, 3}};
        if (i.name == wp.name()) est.inputs[i.name] = {{0, CO}, {0, CI}};
    }
    internal::PipelineInfo info = internal::analyze_pipeline(env, est);
    internal::MachineParams m = fixed_machine();
    auto cands = internal::plan_schedules(info, Target::host(), m, 8);
    ASSERT_GT(cands.size(), 2u);
    auto taken = [&](size_t i) { return group_line(cands[i].summary, "out"); };
    const std::string variant = "members recomputed per tile";
    EXPECT_EQ(taken(0).find(variant), std::string::npos) << cands[0].summary;
    EXPECT_CONTAINS(cands[0].summary, "pad: at root");
    int found = -1;
    for (size_t i = 1; i < cands.size() && found < 0; i++)
        if (taken(i).find(variant) != std::string::npos) found = (int)i;
    ASSERT_GE(found, 0) << cands[0].summary;
    internal::apply_directives_to(outs, cands[found].calls, "test");
    std::string src = Schedule(std::make_shared<internal::PipelineSchedule>(internal::schedule_of(outs))).cpp_source();
    EXPECT_CONTAINS(src, "pad.compute_at(out, ");
    EXPECT_EQ(src.find("pad.unroll(y)"), std::string::npos) << src;
    if (::testing::Test::HasFailure()) std::cerr << cands[found].summary;
    // A register block (16 channels x 8 columns) is a task of a few hundred nanoseconds: the
    // blocks of a row run serially in one task, rows and batches in parallel (448 tasks on two
    // threads, not 6272).
    internal::apply_directives_to(outs, cands[0].calls, "test");
    std::string first = Schedule(std::make_shared<internal::PipelineSchedule>(internal::schedule_of(outs))).cpp_source();
    EXPECT_CONTAINS(first, "out.fuse(y, b, y_b);");
    EXPECT_CONTAINS(first, "out.parallel(y_b);");
    EXPECT_CONTAINS(first, "dw.compute_at(out, xo);");
    // The planner's candidates for these estimates, each applied, against the interpreter (on a
    // small image, 13 x 9: tiles clipped at its edges).
    for (size_t i = 0; i < cands.size(); i++) {
        internal::apply_directives_to(outs, cands[i].calls, "test");
        Pipeline p(out);
        Buffer<float> bi(CI, 13, 9, 2), bk(CI, 3, 3), bw(CO, CI);
        fill(bi, 3, -4, 4);
        fill(bk, 4, -2, 2);
        fill(bw, 5, -2, 2);
        in.set(bi);
        k.set(bk);
        wp.set(bw);
        EXPECT_EQ(differences(p, Buffer<float>(CO, 13, 9, 2)), 0) << "candidate " << i << ":\n" << cands[i].summary;
    }
}

// A strip of many stages, each reading the first: each stage's part of a strip fits in L2, all
// of them together do not. The first stage's tile is read back by later stages after the ones
// between have been written, from L3 then: the cost model prices that reach, so the members
// slide (a few rows each) instead of being computed per strip (camera_pipe's 28 stages: 4.8 ->
// 3.9 ms on two threads).
TEST(AutoSchedule, StagesOfAStripThatOverflowL2AreSlidingWindows) {
    const int W = 1024, H = 2048, stages = 10;
    ImageParam in(Float(32), 2, "in");
    Var x("x"), y("y");
    std::vector<Func> s;
    Func prev = BoundaryConditions::repeat_edge(in);
    for (int i = 0; i < stages; i++) {
        Func f("stage" + std::to_string(i));
        Expr e = (prev(x, y - 1) + prev(x, y) + prev(x, y + 1) + prev(x - 1, y) + prev(x + 1, y)) * 0.2f;
        f(x, y) = i == 0 ? e : e + s[0](x, y) * 0.1f;  // every stage reads the first
        s.push_back(f);
        prev = f;
    }
    std::vector<std::shared_ptr<internal::FunctionContents>> outs = {prev.contents()};
    internal::Env env = internal::build_env(outs, true);
    internal::ShapeEstimates est;
    est.outputs[env.outputs[0]] = {{0, W}, {0, H}};
    est.inputs[env.inputs[0].name] = {{0, W}, {0, H}};
    internal::PipelineInfo info = internal::analyze_pipeline(env, est);
    internal::MachineParams m = fixed_machine();
    auto cands = internal::plan_schedules(info, Target::host(), m, 4);
    ASSERT_FALSE(cands.empty());
    std::string taken = group_line(cands[0].summary, prev.name());
    ASSERT_FALSE(taken.empty()) << cands[0].summary;
    EXPECT_CONTAINS(taken, "members a sliding window per row");
    // The schedule chosen, applied, matches the interpreter.
    in.set_estimates({{0, W}, {0, H}});
    prev.set_estimates({{0, W}, {0, H}});
    Pipeline p(prev);
    AutoScheduleOptions o;
    o.threads = 2;
    p.auto_schedule(Target::host(), o);
    Buffer<float> b(300, 97);
    fill(b, 5, -10, 10);
    in.set(b);
    EXPECT_EQ(differences(p, Buffer<float>(300, 97)), 0) << p.get_schedule().cpp_source();
}

/** p scheduled automatically for the host, as on two threads. */
static AutoScheduleResult auto_schedule_on_two_threads(Pipeline &p) {
    AutoScheduleOptions o;
    o.threads = 2;
    return p.auto_schedule(Target::host(), o);
}

// A member whose definition (through a Func inlined into it) selects on its channel against
// constants, a colour matrix's `mux(c, {r, g, b})`: its channel loop moves just outside the
// vector loop, unrolled, so each copy computes one branch (as Halide's experts write
// `reorder(c, x, y).unroll(c)`). With 8 channels it is left as it is.
TEST(AutoSchedule, AMemberSelectingOnItsFewChannelsUnrollsThem) {
    for (int C : {3, 8}) {
        const int W = 1024, H = 512;
        ImageParam in(Float(32), 3, "in");
        Var x("x"), y("y"), c("c");
        Func cm("cm"), g("g"), out("out");
        Expr r = in(x, y, 0) * 0.8f + in(x, y, 1) * 0.1f + in(x, y, 2) * 0.1f;
        Expr gr = in(x, y, 0) * 0.2f + in(x, y, 1) * 0.7f + in(x, y, 2) * 0.1f;
        Expr b = in(x, y, 0) * 0.1f + in(x, y, 1) * 0.2f + in(x, y, 2) * 0.7f;
        cm(x, y, c) = mux(c, {r, gr, b, in(x, y, 0)});  // (channels 3 and up: the first input's)
        g(x, y, c) = sqrt(abs(cm(x, y, c)) + 1.0f);     // cm is inlined into g (read once)
        out(x, y, c) = g(x, y - 1, c) + g(x, y, c) * 2.0f + g(x, y + 1, c);
        in.set_estimates({{0, W}, {-1, H + 2}, {0, 3}});
        out.set_estimates({{0, W}, {0, H}, {0, C}});
        Pipeline p(out);
        const std::string src = auto_schedule_on_two_threads(p).schedule_source;
        ASSERT_NE(src.find("g.compute_at(out"), std::string::npos) << src;  // (a member of out's group)
        if (C == 3) {
            EXPECT_CONTAINS(src, "g.unroll(c)");
        } else {
            EXPECT_EQ(src.find("g.unroll(c)"), std::string::npos) << src;
        }
        for (int width : {W, 37}) {
            Buffer<float> b_in(width, 70, 3);
            b_in.set_min({0, -1, 0});
            fill(b_in, 17 + C, -4, 4);
            in.set(b_in);
            EXPECT_EQ(differences(p, Buffer<float>(width, 68, C)), 0) << C << " channels, width " << width << "\n" << src;
        }
        // Realized with more channels than estimated: the unrolled loop's extent is not the
        // estimate's (4 where 3 were estimated).
        Buffer<float> b_in(64, 70, 3);
        b_in.set_min({0, -1, 0});
        fill(b_in, 3, -4, 4);
        in.set(b_in);
        EXPECT_EQ(differences(p, Buffer<float>(64, 68, C + 1)), 0) << src;
    }
}

// A root that divides each channel by an alpha channel computed the same way (interpolate's
// normalize: `f(x, y, c) / f(x, y, 3)`): with its channels unrolled just outside the vector loop
// the copies share f(x, y, 3), so f is read once per point and is inlined rather than stored,
// and the channel loop is unrolled. With 8 channels (no unrolling) f is stored as before.
TEST(AutoSchedule, ARootReadingAnAlphaChannelUnrollsItsChannelsAndSharesIt) {
    for (int C : {3, 8}) {
        const int W = 1024, H = 512;
        ImageParam in(Float(32), 3, "in");
        Var x("x"), y("y"), c("c");
        Func f("f"), out("out");
        // Expensive enough that reading it twice a point would keep it stored.
        f(x, y, c) = sqrt(abs(in(x, y, c) * in(x, y, C) + 1.0f)) * exp(in(x, y, c) * 0.01f) + in(x, y, C) * 0.5f;
        out(x, y, c) = f(x, y, c) / (f(x, y, C) + 2.0f);
        in.set_estimates({{0, W}, {0, H}, {0, C + 1}});
        out.set_estimates({{0, W}, {0, H}, {0, C}});
        Pipeline p(out);
        const std::string src = auto_schedule_on_two_threads(p).schedule_source;
        if (C == 3) {
            EXPECT_EQ(src.find("f.compute"), std::string::npos) << src;  // inlined
            EXPECT_NE(src.find("out.unroll(c)"), std::string::npos) << src;
        } else {
            EXPECT_NE(src.find("f.compute"), std::string::npos) << src;
            EXPECT_EQ(src.find("out.unroll(c)"), std::string::npos) << src;
        }
        for (int width : {W, 37}) {
            Buffer<float> b_in(width, 40, C + 1);
            fill(b_in, 5 + C, -4, 4);
            in.set(b_in);
            EXPECT_EQ(differences(p, Buffer<float>(width, 40, C)), 0) << C << " channels, width " << width << "\n" << src;
        }
        // Realized with other channel counts than estimated (the unrolled loop's extent is not
        // the estimate's), and an input with more channels than read.
        for (int channels : {1, C - 1, C}) {
            Buffer<float> b_in(50, 9, C + 2);
            fill(b_in, 11, -4, 4);
            in.set(b_in);
            EXPECT_EQ(differences(p, Buffer<float>(50, 9, channels)), 0) << channels << " of " << C << "\n" << src;
        }
    }
}

// Producers each read in one branch of a `mux` over three channels (camera_pipe's demosaic:
// `mux(c, {r(x, y), g(x, y), b(x, y)})`): the reader's channels are unrolled, each copy's select
// folds, so each producer is evaluated once per point, not three times, and is inlined rather
// than stored (camera_pipe: its three interleaving stages inlined into the demosaic's output).
// Realized with other channel counts than estimated.
TEST(AutoSchedule, ProducersReadInOneBranchOfAMuxOverChannelsAreReadOncePerPoint) {
    const int W = 1024, H = 512;
    ImageParam in(Float(32), 2, "in");
    Var x("x"), y("y"), c("c");
    Func r("r"), g("g"), b("b"), out("out");
    r(x, y) = (in(x, y) * 3.0f + in(x + 1, y)) / (abs(in(x, y + 1)) + 2.0f);
    g(x, y) = (in(x, y) * 5.0f - in(x, y + 1)) / (abs(in(x + 1, y)) + 3.0f);
    b(x, y) = (in(x + 1, y + 1) * 7.0f + in(x, y)) / (abs(in(x, y)) + 4.0f);
    out(x, y, c) = mux(c, {r(x, y), g(x, y), b(x, y)}) * 0.5f;
    in.set_estimates({{0, W + 1}, {0, H + 1}});
    out.set_estimates({{0, W}, {0, H}, {0, 3}});
    Pipeline p(out);
    const std::string src = auto_schedule_on_two_threads(p).schedule_source;
    for (const char *f : {"\nr.", "\ng.", "\nb."}) EXPECT_FALSE(weft_test::contains(src, f)) << f << " kept\n" << src;
    EXPECT_CONTAINS(src, "out.unroll(c)");
    for (int channels : {3, 2, 1}) {
        Buffer<float> b_in(70, 12);
        fill(b_in, 13, -4, 4);
        in.set(b_in);
        EXPECT_EQ(differences(p, Buffer<float>(69, 11, channels)), 0) << channels << " channels\n" << src;
    }
}

// A stencil read once per point, but at a stride of 2 (a Bayer deinterleave of a denoised raw
// image, camera_pipe's): inlined, each of its five loads would be strided (two loads and a
// shuffle each); it is kept, its loads dense, and read back strided once. The same stencil read
// once per point at stride 1 (columns of four rows) is inlined, and so is one a decimation reads
// at even points only (stored, its odd points would be computed for nothing).
TEST(AutoSchedule, AStencilReadAtAStrideKeepsItsOwnLoadsDense) {
    const int W = 1024, H = 768;
    for (int stride : {2, 1}) {
        ImageParam raw(UInt(16), 2, "raw");
        Var x("x"), y("y"), c("c");
        Func shifted("shifted"), den("den"), deint("deint"), out("out");
        shifted(x, y) = raw(x + 2, y + 2);
        den(x, y) = clamp(shifted(x, y), 0,
                          max(max(shifted(x - 2, y), shifted(x + 2, y)), max(shifted(x, y - 2), shifted(x, y + 2))));
        // Each point of den read once: 2x2 blocks, or (stride 1) columns of 4 rows.
        if (stride == 2)
            deint(x, y, c) = mux(c, {den(2 * x, 2 * y), den(2 * x + 1, 2 * y), den(2 * x, 2 * y + 1), den(2 * x + 1, 2 * y + 1)});
        else
            deint(x, y, c) = mux(c, {den(x, 4 * y), den(x, 4 * y + 1), den(x, 4 * y + 2), den(x, 4 * y + 3)});
        Expr g = (deint(x, y, 0) + deint(x, y, 3)) / 2;
        out(x, y, c) = mux(c, {deint(x, y, 1), g, deint(x, y, 2)});
        raw.set_estimates({{0, W + 4}, {0, H + 4}});
        const int ow = stride == 2 ? W / 2 : W, oh = stride == 2 ? H / 2 : H / 4;
        out.set_estimates({{0, ow}, {0, oh}, {0, 3}});
        Pipeline p(out);
        std::string src = p.auto_schedule(Target::host()).schedule_source;
        EXPECT_EQ(weft_test::contains(src, "\nden."), stride == 2) << "stride " << stride << "\n" << src;
        Buffer<uint16_t> b_raw(W + 4, H + 4);
        fill(b_raw, 7, 0, 1023);
        raw.set(b_raw);
        EXPECT_EQ(differences(p, Buffer<uint16_t>(ow - 3, oh - 1, 3)), 0) << src;
        // Odd, narrow shapes, scheduled anew for them.
        raw.set_estimates({{0, 37}, {0, 9}});
        out.set_estimates({{0, 15}, {0, 2}, {0, 3}});
        Pipeline q(out);
        src = q.auto_schedule(Target::host()).schedule_source;
        EXPECT_EQ(differences(q, Buffer<uint16_t>(15, 2, 3)), 0) << src;
    }
    ImageParam in(Float(32), 2, "in");
    Var x("x"), y("y");
    Func blur("blur"), down("down");
    blur(x, y) = (in(x - 1, y - 1) + in(x, y - 1) + in(x + 1, y - 1) + in(x - 1, y) + in(x, y) + in(x + 1, y) +
                  in(x - 1, y + 1) + in(x, y + 1) + in(x + 1, y + 1)) / 9.0f;
    down(x, y) = blur(2 * x + 1, 2 * y + 1);
    in.set_estimates({{0, W + 4}, {0, H + 4}});
    down.set_estimates({{0, W / 2}, {0, H / 2}});
    Pipeline p(down);
    const std::string src = p.auto_schedule(Target::host()).schedule_source;
    EXPECT_FALSE(weft_test::contains(src, "\nblur.")) << src;
    Buffer<float> b_in(W + 4, H + 4);
    fill(b_in, 9, -1, 1);
    in.set(b_in);
    EXPECT_EQ(differences(p, Buffer<float>(W / 2, H / 2)), 0) << src;
}

// The same for an update: a histogram that adds a value and a weight, `mux(c, {v, 1})`, at a
// computed bin (bilateral_grid's grid: its two channels unrolled just outside the vector
// loop, each input read once for both).
TEST(AutoSchedule, AnUpdateSelectingOnItsFewChannelsUnrollsThem) {
    const int W = 256, H = 192, Z = 8;
    ImageParam in(Float(32), 2, "in");
    Var x("x"), y("y"), z("z"), c("c");
    RDom r(0, 4, 0, 4, "r");
    Func h("h"), out("out");
    Expr v = in(x * 4 + r.x, y * 4 + r.y);
    Expr zi = cast<int>(clamp(v, 0.0f, 1.0f) * (Z - 1));
    h(x, y, z, c) = 0.0f;
    h(x, y, zi, c) += mux(c, {v, 1.0f});
    out(x, y, z, c) = h(x, y, z, c) + h(x + 1, y, z, c) * 0.5f;
    in.set_estimates({{0, 4 * W + 4}, {0, 4 * H}});
    out.set_estimates({{0, W}, {0, H}, {0, Z}, {0, 2}});
    Pipeline p(out);
    AutoScheduleOptions o;
    o.threads = 2;
    AutoScheduleResult res = p.auto_schedule(Target::host(), o);
    EXPECT_CONTAINS(res.schedule_source, "h.update(0).unroll(c)");
    for (int width : {W, 37}) {
        Buffer<float> b(4 * width + 4, 4 * 50);
        fill(b, 23, -1, 2);
        in.set(b);
        EXPECT_EQ(differences(p, Buffer<float>(std::vector<int>{width, 50, Z, 2})), 0) << "width " << width << "\n"
                                                                                        << res.schedule_source;
    }
}

// Hostile: a member reached through a thousand inlined Funcs, each selecting on the channel.
// The planner's walks through inlined Funcs (which channel a select compares) finish without
// exhausting the stack. (Planning time grows about linearly with such a chain: see
// weft_bench_compile's "auto" family. Inlining had rebound the reader's shared values after
// each Func it put in: 1,500 Funcs took 6 s, 3,000 31 s.)
TEST(AutoSchedule, AMemberThroughAThousandInlinedSelectingFuncsIsPlanned) {
    ImageParam in(Float(32), 3, "in");
    Var x("x"), y("y"), c("c");
    Func prev("f0");
    prev(x, y, c) = in(x, y, c);
    for (int i = 1; i < 1000; i++) {
        Func f("f" + std::to_string(i));
        f(x, y, c) = select(c == 1, prev(x, y, c) + 1.0f, prev(x, y, c) * 0.5f);
        prev = f;
    }
    Func out("out");
    out(x, y, c) = prev(x, y - 1, c) + prev(x, y + 1, c);  // prev is read twice: kept
    in.set_estimates({{0, 512}, {-1, 258}, {0, 3}});
    out.set_estimates({{0, 512}, {0, 256}, {0, 3}});
    Pipeline p(out);
    auto t0 = std::chrono::steady_clock::now();
    AutoScheduleResult res = p.auto_schedule();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_CONTAINS(res.schedule_source, prev.name() + ".compute_");  // (kept: read twice)
    EXPECT_LT(s, 60.0) << "planning took " << s << " s";  // (a hang guard, not a timing target)
}
