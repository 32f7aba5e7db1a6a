// API.md "Running": the kernel cache (compile at first call, keyed on shapes; stats; threads).
#include "lang_test_util.h"

#include <atomic>
#include <thread>

using namespace weft;

namespace {

struct Delta {
    CacheStats b = cache_stats();
    uint64_t compilations() const { return cache_stats().compilations - b.compilations; }
    uint64_t hits() const { return cache_stats().hits - b.hits; }
    uint64_t misses() const { return cache_stats().misses - b.misses; }
    double compile_ms() const { return cache_stats().compile_ms - b.compile_ms; }
};

TEST(Cache, NothingCompiledBeforeFirstCallThenHits) {
    ImageParam in(Float(32), 1, "in");
    Param<float> k("k");
    Var x("x");
    Func f("cache_first");
    f(x) = in(x) * k + 1234.5f;  // a constant no other test uses: a fresh key
    Delta d;
    Callable fn = Pipeline(f).compile_to_callable({in, k});
    EXPECT_EQ(d.compilations(), 0u) << "creating a Callable compiles nothing";
    EXPECT_EQ(d.misses(), 0u);
    Buffer<float> ib(16), ob(16);
    ib.fill(2.0f);
    fn(ib, 2.0f, ob);
    EXPECT_EQ(ob(3), 1238.5f);
    EXPECT_EQ(d.compilations(), 1u);
    EXPECT_EQ(d.misses(), 1u);
    EXPECT_GT(d.compile_ms(), 0.0) << "the compilation's time is counted";
    Delta d2;
    fn(ib, 3.0f, ob);  // same key: Param values are not in it
    EXPECT_EQ(ob(3), 1240.5f);
    EXPECT_EQ(d2.compilations(), 0u);
    EXPECT_EQ(d2.misses(), 0u);
    EXPECT_EQ(d2.compile_ms(), 0.0) << "a hit compiles nothing";
    EXPECT_GE(d2.hits(), 1u);
    // Another shape is another key.
    Buffer<float> ib2(20), ob2(20);
    ib2.fill(1.0f);
    fn(ib2, 1.0f, ob2);
    EXPECT_EQ(ob2(19), 1235.5f);
    EXPECT_EQ(d2.compilations(), 1u);
    // Back to the first shape: cached.
    Delta d3;
    fn(ib, 1.0f, ob);
    EXPECT_EQ(d3.compilations(), 0u);
    EXPECT_EQ(ob(0), 1236.5f);
}

TEST(Cache, RealizeTwiceCompilesOnce) {
    Var x("x"), y("y");
    Func f("cache_realize_twice");
    f(x, y) = x * 31 + y * 7 + 4321;
    Delta d;
    Buffer<int> a = f.realize({10, 10});
    EXPECT_EQ(d.compilations(), 1u);
    Buffer<int> b = f.realize({10, 10});
    EXPECT_EQ(d.compilations(), 1u);
    EXPECT_GE(d.hits(), 1u);
    EXPECT_EQ(b(9, 9), 9 * 31 + 9 * 7 + 4321);
    EXPECT_GE(cache_stats().entries, 1u);
}

TEST(Cache, ScheduleChangeAfterCallRecompiles) {
    Var x("x"), y("y"), xo("xo"), xi("xi");
    Func p("cache_sched_p"), f("cache_sched_f");
    p(x, y) = x + y * 2 + 555;
    f(x, y) = p(x - 1, y) + p(x + 1, y);
    auto check = [&](const Buffer<int> &o) {
        for (int j = 0; j < 6; j++)
            for (int i = 0; i < 11; i++) EXPECT_EQ(o(i, j), (i - 1 + j * 2 + 555) + (i + 1 + j * 2 + 555));
    };
    Delta d;
    Buffer<int> o(11, 6);
    f.realize(o);
    check(o);
    EXPECT_EQ(d.compilations(), 1u);
    f.vectorize(x, 4);
    o.fill(0);
    f.realize(o);
    check(o);
    EXPECT_EQ(d.compilations(), 2u) << "a changed schedule must not reuse stale code";
    p.compute_root();
    o.fill(0);
    f.realize(o);
    check(o);
    EXPECT_EQ(d.compilations(), 3u);
    // Unchanged now: cached.
    o.fill(0);
    f.realize(o);
    check(o);
    EXPECT_EQ(d.compilations(), 3u);
}

TEST(Cache, DefinitionChangeAfterCallRecompiles) {
    Var x("x");
    Func f("cache_def_change");
    f(x) = x + 9876;
    Buffer<int> a = f.realize({4});
    EXPECT_EQ(a(1), 9877);
    f(x) += 1;  // a new update definition after a call
    Buffer<int> b = f.realize({4});
    EXPECT_EQ(b(1), 9878);
}

Func build_twin() {
    Var x("x");
    Func a("twin_a"), b("twin_b");
    a(x) = x * 7 + 2468;
    b(x) = a(x) + a(x + 1);
    a.compute_root();
    b.vectorize(x, 4);
    return b;
}

TEST(Cache, IdenticalPipelinesShareOneEntry) {
    Func b1 = build_twin();
    Func b2 = build_twin();
    Delta d;
    uint64_t entries0 = cache_stats().entries;
    Buffer<int> o1 = b1.realize({12});
    EXPECT_EQ(d.compilations(), 1u);
    uint64_t entries1 = cache_stats().entries;
    EXPECT_EQ(entries1, entries0 + 1);
    Buffer<int> o2 = b2.realize({12});
    EXPECT_EQ(d.compilations(), 1u) << "a separately built identical pipeline shares the entry";
    EXPECT_EQ(cache_stats().entries, entries1);
    for (int i = 0; i < 12; i++) {
        EXPECT_EQ(o1(i), (i * 7 + 2468) + ((i + 1) * 7 + 2468));
        EXPECT_EQ(o2(i), o1(i));
    }
}

void spin_barrier(std::atomic<int> &arrived, int n) {
    arrived.fetch_add(1);
    while (arrived.load() < n) std::this_thread::yield();
}

TEST(Cache, ConcurrentFirstCallsCompileOnce) {
    ImageParam in(Int(32), 2, "in");
    Param<int> k("k");
    Var x("x"), y("y");
    Func f("cache_concurrent");
    f(x, y) = in(x, y) * k + 13579;
    f.vectorize(x, 8).parallel(y);
    Callable fn = Pipeline(f).compile_to_callable({in, k});
    const int T = 8, W = 33, H = 9;
    Buffer<int> ib(W, H);
    weft_test::fill_pattern(ib, 99, -100, 100);
    std::vector<Buffer<int>> outs;
    for (int t = 0; t < T; t++) outs.emplace_back(std::vector<int>{W, H});
    Delta d;
    std::atomic<int> arrived{0};
    std::atomic<int> errors{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < T; t++)
        threads.emplace_back([&, t] {
            Callable mine = fn;  // copies share one cache
            spin_barrier(arrived, T);
            try {
                mine(ib, t, outs[t]);
            } catch (...) {
                errors++;
            }
        });
    for (auto &th : threads) th.join();
    EXPECT_EQ(errors.load(), 0);
    EXPECT_EQ(d.compilations(), 1u) << "8 concurrent first calls with one key compile once";
    for (int t = 0; t < T; t++)
        for (int j = 0; j < H; j++)
            for (int i = 0; i < W; i++) ASSERT_EQ(outs[t](i, j), ib(i, j) * t + 13579) << t;
}

TEST(Cache, ConcurrentIdenticalPipelinesCompileOnce) {
    const int T = 8;
    std::vector<Func> fs;
    for (int t = 0; t < T; t++) {
        Var x("x");
        Func f("cache_conc_twin");
        f(x) = x * 3 + 24680;
        f.vectorize(x, 4);
        fs.push_back(f);
    }
    std::vector<Buffer<int>> outs;
    for (int t = 0; t < T; t++) outs.emplace_back(std::vector<int>{50});
    Delta d;
    std::atomic<int> arrived{0};
    std::atomic<int> errors{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < T; t++)
        threads.emplace_back([&, t] {
            spin_barrier(arrived, T);
            try {
                fs[t].realize(outs[t]);
            } catch (...) {
                errors++;
            }
        });
    for (auto &th : threads) th.join();
    EXPECT_EQ(errors.load(), 0);
    EXPECT_EQ(d.compilations(), 1u);
    for (int t = 0; t < T; t++)
        for (int i = 0; i < 50; i++) ASSERT_EQ(outs[t](i), i * 3 + 24680);
}

TEST(Cache, ClearCache) {
    Var x("x");
    Func f("cache_clear");
    f(x) = x - 112233;
    Buffer<int> o = f.realize({5});
    EXPECT_GE(cache_stats().entries, 1u);
    clear_cache();
    EXPECT_EQ(cache_stats().entries, 0u);
    Delta d;
    Buffer<int> o2 = f.realize({5});
    EXPECT_EQ(d.compilations(), 1u) << "after clear_cache the next call compiles again";
    EXPECT_EQ(cache_stats().entries, 1u);
    EXPECT_EQ(o2(4), 4 - 112233);
}

TEST(Cache, OutputShapeIsInTheKey) {
    Var x("x"), y("y");
    Func f("cache_shape");
    f(x, y) = x * 2 + y + 97531;
    Delta d;
    Buffer<int> a(8, 4), b(8, 4), c(8, 4);
    f.realize(a);
    f.realize(b);
    EXPECT_EQ(d.compilations(), 1u);
    c.set_min(1, 0);  // other mins: another key, and correct values
    f.realize(c);
    EXPECT_EQ(c(8, 3), 8 * 2 + 3 + 97531);
    EXPECT_LE(d.compilations(), 2u);
}

}  // namespace

namespace {

// WEFT_DEBUG's output starts each compile with a line of where the time went: lowering, then
// LLVM's parts (IR, optimisation, machine code, loading).
TEST(Cache, DebugOutputTimesEachCompile) {
    ImageParam in(Float(32), 1, "in");
    Var x("x");
    Func f("cache_timed");
    f(x) = in(x) * 2.0f + 4321.5f;
    Buffer<float> ib(8), ob(8);
    ib.fill(1.0f);
    in.set(ib);
    clear_cache();
    set_debug(true);
    testing::internal::CaptureStderr();
    f.realize(ob);
    std::string err = testing::internal::GetCapturedStderr();
    set_debug(false);
    EXPECT_EQ(ob(2), 4323.5f);
    EXPECT_NE(err.find(" ms; LLVM: IR "), std::string::npos) << err.substr(0, 400);
    EXPECT_NE(err.find("(lowering "), std::string::npos) << err.substr(0, 400);
}

}  // namespace
