// Schedules as values (weft/Schedule.h): read from a pipeline, written as text and read back,
// printed as C++, applied to another copy of the algorithm; the cache key follows every
// directive; editing one Func rebuilds only the pipelines that use it.
#include "lang_test_util.h"

#include <functional>
#include <thread>
#include "cache/KernelCache.h"
#include "lang/Schedule.h"
#include "pipeline/PipelineInternal.h"

using namespace weft;
using weft_test::error_of;

namespace {

using Algo = weft_test::ScheduleTestAlgo;

using weft_test::expect_same;

/** Schedules the algorithm with most directives (all legal together, all run on the CPU). */
void schedule_all(Algo &a) {
    Var xo("xo"), xi("xi"), yo("yo"), yi("yi"), t("t");
    RVar ro("ro"), ri("ri");
    a.out.specialize(a.k > 2).fuse(a.x, a.y, t).parallel(t);
    a.out.split(a.x, xo, xi, 16, TailStrategy::GuardWithIf).split(a.y, yo, yi, 4).reorder(xi, yi, xo, yo).vectorize(xi, 8)
        .parallel(yo);
    a.out.update().split(a.x, xo, xi, 8).vectorize(xi).unroll(a.r);
    a.blur.compute_root().vectorize(a.x, 8).bound(a.x, 0, 80);
    a.blur.reorder_storage(a.y, a.x);
    a.out.prefetch(a.in, yo, 1);
    (void)ro;
    (void)ri;
}

}  // namespace

TEST(ScheduleValue, TextRoundTripIsExact) {
    Algo a;
    schedule_all(a);
    Pipeline p(a.out);
    Schedule s = p.get_schedule();
    std::string text = s.to_string();
    Schedule back = Schedule::from_string(text);
    EXPECT_TRUE(back == s) << text << "\n---- read back as ----\n" << back.to_string();
    EXPECT_EQ(back.to_string(), text);
    // The value holds what was given: a few of the lines.
    EXPECT_NE(text.find("split \"x\" \"xo\" \"xi\" (i i32 16) guard"), std::string::npos) << text;
    EXPECT_NE(text.find("compute root"), std::string::npos) << text;

    EXPECT_NE(text.find("specialize (> (v i32 \"k\") (i i32 2))"), std::string::npos) << text;
    EXPECT_NE(text.find("prefetch \"in\" \"yo\""), std::string::npos) << text;
    EXPECT_NE(text.find("storage_order \"y\" \"x\""), std::string::npos) << text;
    // Floats keep their exact bits.
    internal::PipelineSchedule v = s.value();
    internal::PipelineSchedule w = v;
    w.funcs[0].schedule.bounds.push_back({"y", Expr(0.1f) > Expr(0.2f), Expr(1e-30)});
    internal::PipelineSchedule w2 = internal::parse_schedule(internal::serialize_schedule(w));
    EXPECT_TRUE(w2 == w);
    EXPECT_FALSE(w2 == v);
}

TEST(ScheduleValue, ApplyToAnotherCopyOfTheAlgorithm) {
    Algo a, b;
    schedule_all(a);
    Buffer<float> want = Algo().run();
    expect_same(a.run(), want, "the schedule itself");
    Schedule s = Pipeline(a.out).get_schedule();
    Pipeline pb(b.out);
    EXPECT_FALSE(pb.get_schedule() == s);
    pb.apply_schedule(s);
    EXPECT_TRUE(pb.get_schedule() == s) << s.to_string() << "\n---- applied ----\n" << pb.get_schedule().to_string();
    EXPECT_EQ(internal::algorithm_key(pb), internal::algorithm_key(Pipeline(a.out)));
    // The same kernel: found in the cache, nothing compiled.
    uint64_t before = cache_stats().compilations;
    Buffer<float> got = b.run();
    EXPECT_EQ(cache_stats().compilations, before) << "the applied schedule should share the first one's kernel";
    expect_same(got, want, "applied schedule");
    // Applying a schedule's text (the tuning database's form) gives the same.
    Algo c;
    Pipeline(c.out).apply_schedule(Schedule::from_string(s.to_string()));
    expect_same(c.run(), want, "schedule read from text");
    // And back to the default schedule (every Func inlined but the output).
    Algo d;
    Schedule plain = Pipeline(d.out).get_schedule();
    pb.apply_schedule(plain);
    EXPECT_TRUE(pb.get_schedule() == plain);
    expect_same(b.run(), want, "default schedule");
}

TEST(ScheduleValue, CppSourceReproducesTheSchedule) {
    Algo a;
    schedule_all(a);
    std::string src = Pipeline(a.out).get_schedule().cpp_source();
    // What the printer writes for these calls (then checked by running the same calls).
    EXPECT_NE(src.find("Var "), std::string::npos) << src;
    EXPECT_NE(src.find("out.split(x, xo, xi, 16, TailStrategy::GuardWithIf);"), std::string::npos) << src;
    EXPECT_NE(src.find("out.reorder(xi_vi, xi, yi, xo, yo);"), std::string::npos) << src;
    EXPECT_NE(src.find("out.parallel(yo);"), std::string::npos) << src;
    EXPECT_NE(src.find("blur.compute_root();"), std::string::npos) << src;

    EXPECT_NE(src.find("Stage out_s0_0 = out.specialize((k > 2));"), std::string::npos) << src;
    EXPECT_NE(src.find("out_s0_0.fuse(x, y, t);"), std::string::npos) << src;
    EXPECT_NE(src.find("RVar r_x(\"r.x\");"), std::string::npos) << src;
    EXPECT_NE(src.find("out.update(0).unroll(r_x);"), std::string::npos) << src;
    EXPECT_NE(src.find("out.prefetch(in, yo, 1);"), std::string::npos) << src;
    // The same calls, written out here as the source says, give the same schedule.
    Algo b;
    {
        Func out = b.out, blur = b.blur;
        ImageParam in = b.in;
        Param<int> k = b.k;
        Var t("t"), x("x"), x_vi("x_vi"), xi("xi"), xi_vi("xi_vi"), xo("xo"), y("y"), yi("yi"), yo("yo");
        RVar r_x("r.x");
        blur.compute_root();

        blur.bound(x, 0, 80);
        blur.reorder_storage(y, x);
        blur.split(x, x, x_vi, 8);
        blur.vectorize(x_vi);
        Stage out_s0_0 = out.specialize((k > 2));
        out_s0_0.fuse(x, y, t);
        out_s0_0.parallel(t);
        out.split(x, xo, xi, 16, TailStrategy::GuardWithIf);
        out.split(y, yo, yi, 4);
        out.split(xi, xi, xi_vi, 8);
        out.reorder(xi_vi, xi, yi, xo, yo);
        out.parallel(yo);
        out.vectorize(xi_vi);
        out.prefetch(in, yo, 1);
        out.update(0).split(x, xo, xi, 8);
        out.update(0).vectorize(xi);
        out.update(0).unroll(r_x);
    }
    EXPECT_TRUE(Pipeline(b.out).get_schedule() == Pipeline(a.out).get_schedule())
        << src << "\n---- by hand ----\n" << Pipeline(b.out).get_schedule().cpp_source();
}

TEST(ScheduleValue, EachDirectiveChangesTheKeyNotTheResult) {
    Algo base;
    std::string base_key = internal::algorithm_key(Pipeline(base.out));
    Buffer<float> want = base.run();
    struct Case {
        const char *name;
        std::function<void(Algo &)> apply;
        bool runs = true;  // (GPU loops and hints checked by their key only)
    };
    Var xo("xo"), xi("xi"), yo("yo"), yi("yi"), t("t");
    RVar ro("ro"), ri("ri");
    std::vector<Case> cases = {
        {"split", [&](Algo &a) { a.out.split(a.x, xo, xi, 8); }},
        {"split factor", [&](Algo &a) { a.out.split(a.x, xo, xi, 4); }},
        {"split tail", [&](Algo &a) { a.out.split(a.x, xo, xi, 8, TailStrategy::GuardWithIf); }},
        {"split by a Param", [&](Algo &a) { a.out.split(a.x, xo, xi, a.k); }},
        {"fuse", [&](Algo &a) { a.out.fuse(a.x, a.y, t); }},
        {"reorder", [&](Algo &a) { a.out.reorder(a.y, a.x); }},
        {"vectorize", [&](Algo &a) { a.out.vectorize(a.x, 8); }},
        {"unroll", [&](Algo &a) { a.out.unroll(a.x, 2); }},
        {"parallel", [&](Algo &a) { a.out.parallel(a.y); }},
        {"update split", [&](Algo &a) { a.out.update().split(a.x, xo, xi, 8); }},
        {"update vectorize", [&](Algo &a) { a.out.update().vectorize(a.x, 4); }},
        {"update rvar split", [&](Algo &a) { a.out.update().split(a.r, ro, ri, 2); }},
        {"update atomic", [&](Algo &a) { a.out.update().atomic(); }},
        {"update atomic(true)", [&](Algo &a) { a.out.update().atomic(true); }},
        {"specialize", [&](Algo &a) { a.out.specialize(a.k > 2).vectorize(a.x, 4); }},
        {"specialize other condition", [&](Algo &a) { a.out.specialize(a.k > 1).vectorize(a.x, 4); }},
        {"compute_root", [&](Algo &a) { a.blur.compute_root(); }},
        {"compute_at", [&](Algo &a) { a.blur.compute_at(a.out, a.y); }},
        {"store_root", [&](Algo &a) { a.blur.compute_at(a.out, a.y).store_root(); }},
        {"store_at", [&](Algo &a) {
             a.out.split(a.y, yo, yi, 4);
             a.blur.compute_at(a.out, yi).store_at(a.out, yo);
         }},
        {"bound", [&](Algo &a) { a.blur.compute_root().bound(a.x, 0, 80); }},
        {"store_in stack", [&](Algo &a) { a.blur.compute_at(a.out, a.y).store_in(MemoryType::Stack); }},
        {"store_in heap", [&](Algo &a) { a.blur.compute_at(a.out, a.y).store_in(MemoryType::Heap); }},
        {"reorder_storage", [&](Algo &a) { a.blur.compute_root().reorder_storage(a.y, a.x); }},
        {"align_storage", [&](Algo &a) { a.blur.compute_root().align_storage(a.x, 16); }},
        {"align_storage other", [&](Algo &a) { a.blur.compute_root().align_storage(a.x, 8); }},
        {"align_bounds", [&](Algo &a) { a.blur.compute_root().align_bounds(a.y, 4); }},
        {"align_bounds x", [&](Algo &a) { a.blur.compute_root().align_bounds(a.x, 16); }},
        {"store_nontemporal", [&](Algo &a) { a.out.store_nontemporal(); }},
        {"prefetch", [&](Algo &a) { a.out.prefetch(a.in, a.y, 1); }},
        {"prefetch offset", [&](Algo &a) { a.out.prefetch(a.in, a.y, 2); }},
        {"load_ahead", [&](Algo &a) { a.blur.compute_at(a.out, a.y).load_ahead(); }, false},
        {"gpu_blocks", [&](Algo &a) { a.out.gpu_blocks(a.y); }, false},
        {"gpu_threads", [&](Algo &a) { a.out.gpu_threads(a.x); }, false},
        {"gpu_single_thread", [&](Algo &a) { a.out.update().gpu_single_thread(); }, false},
        {"store_in gpu_shared", [&](Algo &a) { a.blur.compute_at(a.out, a.y).store_in(MemoryType::GPUShared); }, false},
        {"in()", [&](Algo &a) { a.in.in().compute_root(); }},
        {"rfactor", [&](Algo &a) { a.out.update().rfactor(a.r, Var("u")); }, false},
    };
    std::map<std::string, std::string> seen;  // key -> case
    seen[base_key] = "no directive";
    for (auto &c : cases) {
        SCOPED_TRACE(c.name);
        Algo a;
        c.apply(a);
        std::string key = internal::algorithm_key(Pipeline(a.out));
        EXPECT_NE(key, base_key) << c.name << " did not change the cache key";
        auto [it, fresh] = seen.emplace(key, c.name);
        EXPECT_TRUE(fresh) << c.name << " has the same key as " << it->second;
        if (c.runs) expect_same(a.run(), want, c.name);
        // And the schedule value survives text.
        Schedule s = Pipeline(a.out).get_schedule();
        EXPECT_TRUE(Schedule::from_string(s.to_string()) == s) << s.to_string();
    }
}

TEST(ScheduleValue, BadTextIsAClearError) {
    const std::vector<std::pair<std::string, std::string>> bad = {
        {"", "empty"},
        {"weft-schedule 2\nend\n", "line 1"},
        {"weft-schedule 1\n", "without \"end\""},
        {"weft-schedule 1\nsplit \"x\" \"a\" \"b\" (i i32 4) auto\nend\n", "line 2"},
        {"weft-schedule 1\nfunc \"f\" args \"x\"\n  stage 0 \"x\"\n    split \"x\" \"a\" \"b\" (i i32 4) sideways\nend\n",
         "tail strategy"},
        {"weft-schedule 1\nfunc \"f\" args \"x\"\n  stage 0 \"x\"\n    split \"x\" \"a\" \"b\" (i i32 4\nend\n", "parentheses"},
        {"weft-schedule 1\nfunc \"f\" args \"x\"\n  stage 0 \"x\"\n    split \"x\" \"a\" \"b\" (+ (i i32 4) (f f32 0x0)) auto\nend\n",
         "one type"},
        {"weft-schedule 1\nfunc \"f\" args \"x\"\n  stage 0 \"x\"\n    dim \"x\" sideways\nend\n", "loop type"},
        {"weft-schedule 1\nfunc \"f\" args \"x\"\n  stage 1 \"x\"\nend\n", "stage 0 expected"},
        {"weft-schedule 1\nfunc \"f\" args \"x\n", "not closed"},
        {"weft-schedule 1\nfunc \"f\" args \"x\"\n  memory nowhere\nend\n", "memory type"},
        {"weft-schedule 1\nfunc \"f\" args \"x\"\nfunc \"f\" args \"x\"\nend\n", "twice"},
        {"weft-schedule 1\nfunc \"f\" args \"x\"\n  compute at \"g\"\nend\n", "compute root"},
        {"weft-schedule 1\nfunc \"f\" args \"x\"\n  stage 0 \"x\"\n    split \"x\" \"a\" \"b\" (i i999 4) auto\nend\n",
         "unknown type"},
        {"weft-schedule 1\nfunc \"f\" args \"x\"\n  stage 0 \"x\"\n    split \"x\" \"a\" \"b\" (i i32 99999999999999999999) auto\nend\n",
         "not an integer"},
        {"weft-schedule 1\nend\nfunc \"f\" args\n", "after \"end\""},
        {"weft-schedule 1\nbogus\nend\n", "unknown directive"},
        {"weft-schedule 1\nfunc \"f\" args \"x\"\n  align_storage \"x\" (i i32 0)\nend\n", "positive integer"},
        {"weft-schedule 1\nfunc \"f\" args \"x\"\n  align_bounds \"x\" (i i32 0) (i i32 0)\nend\n", "positive integer"},
    };
    for (auto &[text, what] : bad) {
        std::string e = error_of([&] { Schedule::from_string(text); });
        EXPECT_NE(e.find("schedule text"), std::string::npos) << text << " -> " << e;
        EXPECT_NE(e.find(what), std::string::npos) << text << " -> " << e;
    }
    // Deep nesting is an error, not a stack overflow.
    std::string deep = "weft-schedule 1\nfunc \"f\" args \"x\"\n  stage 0 \"x\"\n    split \"x\" \"a\" \"b\" ";
    for (int i = 0; i < 2000; i++) deep += "(+ ";
    deep += "(i i32 1)";
    for (int i = 0; i < 2000; i++) deep += " (i i32 1))";
    deep += " auto\nend\n";
    EXPECT_NE(error_of([&] { Schedule::from_string(deep); }).find("nested too deeply"), std::string::npos);
}

TEST(ScheduleValue, ApplyErrorsKeepTheScheduleThatWasThere) {
    Algo a;
    a.out.vectorize(a.x, 8);
    Pipeline p(a.out);
    Schedule before = p.get_schedule();
    // A split of a loop the Func does not have: refused by the split itself, named.
    std::string text = before.to_string();
    auto pos = text.find("    dim \"x_vi\"");
    ASSERT_NE(pos, std::string::npos) << text;
    std::string broken = text;
    broken.insert(pos, "    split \"nowhere\" \"a\" \"b\" (i i32 4) auto\n");
    std::string e = error_of([&] { p.apply_schedule(Schedule::from_string(broken)); });
    EXPECT_NE(e.find("apply_schedule()"), std::string::npos) << e;
    EXPECT_NE(e.find("Func \"out\".split"), std::string::npos) << e;
    EXPECT_NE(e.find("nowhere"), std::string::npos) << e;
    EXPECT_TRUE(p.get_schedule() == before) << "a failed apply_schedule() must leave the schedule as it was";
    // Another algorithm's schedule.
    Func other("other");
    Var x("x");
    other(x) = x;
    e = error_of([&] { p.apply_schedule(Pipeline(other).get_schedule()); });
    EXPECT_NE(e.find("\"other\", which is not part of this pipeline"), std::string::npos) << e;
    // A schedule from a pipeline whose Func has other Vars.
    Func out2("out");
    Var u("u"), v("v");
    out2(u, v) = u + v;
    e = error_of([&] { p.apply_schedule(Pipeline(out2).get_schedule()); });
    EXPECT_NE(e.find("has the Vars"), std::string::npos) << e;
    // A vectorized RVar, named as such.
    std::string rv = text;
    auto rd = rv.find(" serial rvar\n");
    ASSERT_NE(rd, std::string::npos) << rv;
    rv.replace(rd, std::string(" serial rvar").size(), " vectorized rvar");
    e = error_of([&] { p.apply_schedule(Schedule::from_string(rv)); });
    EXPECT_NE(e.find("Func \"out\".update(0).vectorize("), std::string::npos) << e;
    EXPECT_NE(e.find("reduction loop cannot run as vector lanes"), std::string::npos) << e;
    EXPECT_TRUE(p.get_schedule() == before);
    // Hostile values that read as text but no schedule call accepts: each refused by name,
    // the schedule kept.
    auto replaced = [&](const std::string &from, const std::string &to) {
        std::string r = text;
        auto at = r.find(from);
        EXPECT_NE(at, std::string::npos) << from << " in\n" << r;
        if (at != std::string::npos) r.replace(at, from.size(), to);
        return r;
    };
    const std::vector<std::pair<std::string, std::string>> hostile = {
        {replaced("(i i32 8)", "(i i32 0)"), "must be positive"},
        {replaced("(i i32 8)", "(i i32 -2147483648)"), "must be positive"},
        {replaced("(i i32 8)", "(f f32 0x4020000000000000)"), "must be an integer"},
        {replaced("(i i32 8)", "(call i32 func \"out\" (i i32 0) (i i32 0))"), "only Params"},
        {replaced("compute inline", "compute at \"nowhere\" \"x\""), "\"nowhere\" is not part of this pipeline"},
        {replaced("  stage 1", "  specialize (i i32 1)\n  stage 1"), "bool"},
    };
    for (auto &[bad, want] : hostile) {
        std::string applied = error_of([&] { p.apply_schedule(Schedule::from_string(bad)); });
        EXPECT_NE(applied.find("apply_schedule()"), std::string::npos) << bad << " -> " << applied;
        EXPECT_NE(applied.find(want), std::string::npos) << bad << " -> " << applied;
        EXPECT_TRUE(p.get_schedule() == before) << bad;
    }
    // The pipeline still runs with its schedule.
    Algo ref;
    expect_same(a.run(), ref.run(), "after failed applies");
}

TEST(Cache, EditingOneFuncRebuildsOnlyThePipelinesThatUseIt) {
    Var x("x");
    Func f("edit_f"), g("edit_g"), h("edit_h");
    f(x) = x * 3 + 77001;
    g(x) = x * 5 + 77002;
    h(x) = g(x) + 1;
    Pipeline pf(f), ph(h);
    Buffer<int> of(16), oh(16);
    pf.realize(of);
    ph.realize(oh);
    pf.realize(of);
    uint64_t builds = internal::snapshot_builds();
    g.vectorize(x, 4);  // h uses g; f uses neither
    pf.realize(of);
    EXPECT_EQ(internal::snapshot_builds(), builds) << "editing Func \"edit_g\" rebuilt the snapshot of a pipeline that does not use it";
    ph.realize(oh);
    EXPECT_EQ(internal::snapshot_builds(), builds + 1) << "the pipeline that uses the edited Func must see the edit";
    for (int i = 0; i < 16; i++) EXPECT_EQ(oh(i), i * 5 + 77003);
    // An input's wrapper counts as an edit of the pipelines that read it.
    ImageParam in(Int(32), 1, "edit_in");
    Func a("edit_a");
    a(x) = in(x) * 2;
    Buffer<int> ib(16), oa(16);
    for (int i = 0; i < 16; i++) ib(i) = i;
    in.set(ib);
    Pipeline pa(a);
    pa.realize(oa);
    builds = internal::snapshot_builds();
    in.in().compute_root();
    pa.realize(oa);
    EXPECT_EQ(internal::snapshot_builds(), builds + 1);
    for (int i = 0; i < 16; i++) EXPECT_EQ(oa(i), 2 * i);
    // An RDom's where() after the definition too.
    RDom r(0, 8, "edit_r");
    Func s("edit_s");
    s(x) = 0;
    s(x) += r;
    Buffer<int> os(1);
    Pipeline ps(s);
    ps.realize(os);
    EXPECT_EQ(os(0), 28);
    r.where(r < 4);
    ps.realize(os);
    EXPECT_EQ(os(0), 6) << "where() after the definition must reach the pipeline";
}

TEST(Cache, ShapeTablesStayBounded) {
    clear_cache();
    // One algo's shapes: only the first `keep` are remembered; the others rank keep + 1.
    for (int i = 0; i < 2000; i++) {
        size_t rank = internal::cache_note_shape("bounded-algo", std::to_string(i), 8);
        EXPECT_EQ(rank, i < 8 ? (size_t)i + 1 : 9u);
    }
    EXPECT_EQ(internal::cache_note_shape("bounded-algo", "3", 8), 4u) << "a remembered shape keeps its rank";
    // Many algos: the table of tables is bounded too.
    for (int i = 0; i < 5000; i++) internal::cache_note_shape("algo-" + std::to_string(i), "s", 8);
    EXPECT_LE(internal::cache_shape_tables(), std::max<size_t>(64, 4 * 256));
    // Through real calls with many shapes: still correct, the table bounded.
    Var x("x");
    Func f("many_shapes");
    f(x) = x + 1;
    for (int n = 1; n <= 40; n++) {
        Buffer<int> o = f.realize({n});
        EXPECT_EQ(o(n - 1), n);
    }
    clear_cache();
}

TEST(Func, ConcurrentFirstRealizeOfOneFunc) {
    // Several threads realizing the same fresh Func raced on its lazily made pipeline.
    Var x("x");
    for (int round = 0; round < 50; round++) {
        Func f;
        f(x) = x * 2 + round;
        std::vector<std::thread> ts;
        std::atomic<int> wrong{0};
        for (int t = 0; t < 8; t++)
            ts.emplace_back([&] {
                Buffer<int> o = f.realize({8});
                for (int i = 0; i < 8; i++)
                    if (o(i) != i * 2 + round) wrong++;
            });
        for (auto &t : ts) t.join();
        EXPECT_EQ(wrong.load(), 0);
    }
}
