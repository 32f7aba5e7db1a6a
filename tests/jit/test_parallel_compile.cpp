// Parallel compilation: a module's functions (the pipeline, the bodies of its parallel loops,
// and loop nests split off as functions of their own) are compiled by LLVM in parts on several
// threads. The code is the same whatever the number of threads: only who compiles it differs.
// Results are checked against plain C++, bit for bit, with the parts on one thread and on
// several, from many threads at once, and through the disk cache.
#include <gtest/gtest.h>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <cstring>

#include "ir/IR.h"
#include "llvm/CodeGen_LLVM.h"
#include "lower/LoweredFunc.h"
#include "runtime/Runtime.h"
#include "weft/weft.h"

using namespace weft;

namespace {

/** The compile threads set for a test's duration; the default (the cores less one) after. */
struct CompileThreads {
    explicit CompileThreads(int n) { internal::set_compile_threads(n); }
    ~CompileThreads() {
        int cores = (int)std::thread::hardware_concurrency();
        internal::set_compile_threads(std::max(0, std::min(cores - 1, 7)));
    }
};

Buffer<float> input(int w, int h, int seed) {
    Buffer<float> in(w, h);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) in(x, y) = (float)(((x * 7 + y * 13 + seed) % 29) - 14) * 0.25f;
    return in;
}

/** Three stages computed per strip of 16 rows of a fourth, each a 5-tap stencil with its own
    weights (sized so that each stage's loop nest is split off), next to a second parallel
    stage at root: a module of several functions. `k` varies the weights (another pipeline). */
struct Chain {
    Func a, b, c, out, side;
    Buffer<float> in;
    int w, h, k;
    Chain(int w_, int h_, int k_) : in(input(w_ + 8, h_ + 8, k_)), w(w_), h(h_), k(k_) {
        Var x("x"), y("y"), yo("yo"), yi("yi");
        a = Func("pc_a");
        b = Func("pc_b");
        c = Func("pc_c");
        out = Func("pc_out");
        side = Func("pc_side");
        Expr sa = 0.0f, sb = 0.0f, sc = 0.0f, so = 0.0f;
        for (int t = 0; t < 5; t++) sa = sa + in(x + t, y) * (float)(t + k + 1);
        a(x, y) = sa;
        for (int t = 0; t < 5; t++) sb = sb + a(x, y + t) * (float)(2 * t - k);
        b(x, y) = sb;
        for (int t = 0; t < 5; t++) sc = sc + max(b(x + t % 2, y), b(x, y)) * (float)(t + 1);
        c(x, y) = sc;
        side(x, y) = in(x, y) * (float)k - in(x + 1, y + 1);
        for (int t = 0; t < 3; t++) so = so + c(x, y) * (float)(t + k) + side(x + t, y);
        out(x, y) = so;
        out.split(y, yo, yi, 16).parallel(yo).vectorize(x, 16);
        a.compute_at(out, yo).vectorize(x, 16);
        b.compute_at(out, yo).vectorize(x, 16);
        c.compute_at(out, yo).vectorize(x, 16);
        side.compute_root().parallel(y).vectorize(x, 16);
    }
    /** The same, in plain C++ (each sum in the order written). */
    float at(int x, int y) const {
        auto A = [&](int i, int j) {
            float s = 0.0f;
            for (int t = 0; t < 5; t++) s = s + in(i + t, j) * (float)(t + k + 1);
            return s;
        };
        auto B = [&](int i, int j) {
            float s = 0.0f;
            for (int t = 0; t < 5; t++) s = s + A(i, j + t) * (float)(2 * t - k);
            return s;
        };
        auto C = [&](int i, int j) {
            float s = 0.0f;
            for (int t = 0; t < 5; t++) s = s + std::max(B(i + t % 2, j), B(i, j)) * (float)(t + 1);
            return s;
        };
        auto S = [&](int i, int j) { return in(i, j) * (float)k - in(i + 1, j + 1); };
        float s = 0.0f;
        float cv = C(x, y);
        for (int t = 0; t < 3; t++) s = s + cv * (float)(t + k) + S(x + t, y);
        return s;
    }
};

void expect_chain(const Chain &p, const Buffer<float> &o) {
    for (int y = 0; y < p.h; y++)
        for (int x = 0; x < p.w; x++) ASSERT_EQ(o(x, y), p.at(x, y)) << "at " << x << "," << y << " (k " << p.k << ")";
}

}  // namespace

// One thread compiles the module whole; three compile it in parts. Same results, bit for bit,
// both equal to plain C++.
TEST(ParallelCompile, PartsOnSeveralThreadsGiveTheSameResults) {
    Buffer<float> whole, parts;
    {
        CompileThreads t(0);
        clear_cache();
        Chain p(64, 48, 1);
        uint64_t split = internal::modules_compiled_in_parts();
        whole = p.out.realize({64, 48});
        EXPECT_EQ(internal::modules_compiled_in_parts(), split) << "split with no compile thread";
        expect_chain(p, whole);
    }
    {
        CompileThreads t(3);
        clear_cache();
        Chain p(64, 48, 1);
        uint64_t split = internal::modules_compiled_in_parts();
        parts = p.out.realize({64, 48});
        EXPECT_EQ(internal::modules_compiled_in_parts(), split + 1) << "the module was not split";
        expect_chain(p, parts);
    }
    for (int y = 0; y < 48; y++)
        for (int x = 0; x < 64; x++) ASSERT_EQ(whole(x, y), parts(x, y));
}

// Many user threads compile different pipelines at once, each split in parts that the same
// compile threads take: every result right, nothing lost or mixed up.
TEST(ParallelCompile, ConcurrentCompilesShareTheCompileThreads) {
    CompileThreads t(2);
    clear_cache();
    const int kThreads = 6;
    std::vector<std::thread> threads;
    std::vector<std::string> failures(kThreads);
    for (int i = 0; i < kThreads; i++)
        threads.emplace_back([&, i] {
            try {
                Chain p(32 + 16 * (i % 3), 32, i + 2);
                Buffer<float> o = p.out.realize({p.w, p.h});
                for (int y = 0; y < p.h; y++)
                    for (int x = 0; x < p.w; x++)
                        if (o(x, y) != p.at(x, y)) {
                            failures[i] = "wrong at " + std::to_string(x) + "," + std::to_string(y);
                            return;
                        }
            } catch (const std::exception &e) {
                failures[i] = e.what();
            }
        });
    for (auto &th : threads) th.join();
    for (int i = 0; i < kThreads; i++) EXPECT_EQ(failures[i], "") << "thread " << i;
}

// The parts' objects go to the disk cache together and come back together: a new process (an
// emptied in-memory cache) loads them and gets the same results.
TEST(ParallelCompile, PartsRoundTripThroughTheDiskCache) {
    namespace fs = std::filesystem;
    char tmpl[] = "/tmp/weft-parallel-compile-XXXXXX";
    std::string dir = mkdtemp(tmpl);
    setenv("WEFT_CACHE_DIR", dir.c_str(), 1);
    CompileThreads t(3);
    clear_cache();
    Buffer<float> first, second;
    {
        Chain p(48, 40, 5);
        uint64_t split = internal::modules_compiled_in_parts();
        first = p.out.realize({48, 40});
        EXPECT_EQ(internal::modules_compiled_in_parts(), split + 1) << "the module was not split";
        expect_chain(p, first);
    }
    clear_cache();
    {
        Chain p(48, 40, 5);
        second = p.out.realize({48, 40});
        EXPECT_EQ(cache_stats().disk_hits, 1u);
        EXPECT_EQ(cache_stats().compilations, 0u);
        expect_chain(p, second);
    }
    setenv("WEFT_CACHE_DIR", "off", 1);
    std::error_code ec;
    fs::remove_all(dir, ec);
}

namespace {
using namespace weft::internal;
Expr ci(int64_t v) { return IntImm::make(Int(32), v); }
Expr cf(double v) { return FloatImm::make(Float(32), v); }
Expr iv(const std::string &n) { return Variable::make(Int(32), n); }
/** in[i] * 1.5 + in[i + 1] * 2.5 + ... (k terms): a loop body of some size. */
Expr taps(Expr i, int k) {
    Expr s = cf(0);
    for (int t = 0; t < k; t++) s = Add::make(s, Mul::make(Load::make(Float(32), "in", Add::make(i, ci(t))), cf(t + 1.5)));
    return s;
}

/** Runs a compiled LoweredFunc of two float buffers, in and out. */
void run_in_out(const std::shared_ptr<internal::CompiledModule> &m, std::vector<float> &in, std::vector<float> &out) {
    auto buf = [](std::vector<float> &v) {
        weft_buffer_t b;
        std::memset(&b, 0, sizeof(b));
        b.host = v.data();
        b.dims = 1;
        b.dim[0].extent = (int32_t)v.size();
        b.dim[0].stride = 1;
        return b;
    };
    weft_buffer_t bi = buf(in), bo = buf(out);
    void *args[2] = {&bi, &bo};
    weft_context_t ctx;
    std::memset(&ctx, 0, sizeof(ctx));
    ASSERT_EQ(m->fn(args, &ctx), 0);
}
std::vector<float> test_input(size_t n) {
    std::vector<float> in(n);
    for (size_t i = 0; i < n; i++) in[i] = (float)((i * 5) % 11) - 5.0f;
    return in;
}
float want_taps(const std::vector<float> &in, int i, int k) {
    float s = 0;
    for (int t = 0; t < k; t++) s = s + in[i + t] * (float)(t + 1.5);
    return s;
}
}  // namespace

// Which loop nests become functions of their own: a large one that uses no small stack buffer
// does; one that adds into a small stack buffer at fixed places (accumulators LLVM may keep in
// registers) stays in its function. Both compute what they should.
TEST(ParallelCompile, ANestAddingIntoASmallBufferAtFixedPlacesStays) {
    CompileThreads t(0);
    const int n = 64;
    // acc[k] += in[4r + k] for r in [0, 16), k in [0, 4); out[n + k] = acc[k].
    Stmt acc_init = For::make("acc_z", ci(0), ci(4), ForType::Serial, Store::make("acc", cf(0), iv("acc_z")));
    Expr rk = Add::make(Mul::make(iv("acc_r"), ci(4)), iv("acc_k"));
    Stmt acc_loop = For::make(
        "acc_r", ci(0), ci(16), ForType::Serial,
        For::make("acc_k", ci(0), ci(4), ForType::Serial,
                  Store::make("acc", Add::make(Load::make(Float(32), "acc", iv("acc_k")), taps(rk, 12)), iv("acc_k"))));
    Stmt acc_out = For::make("acc_o", ci(0), ci(4), ForType::Serial,
                             Store::make("out", Load::make(Float(32), "acc", iv("acc_o")), Add::make(iv("acc_o"), ci(n))));
    Stmt acc = Allocate::make("acc", Float(32), ci(4), MemoryType::Stack, Block::make({acc_init, acc_loop, acc_out}));
    // out[i] = taps(i), 40 of them, for i in [0, n).
    Stmt big = For::make("big_i", ci(0), ci(n), ForType::Serial, Store::make("out", taps(iv("big_i"), 40), iv("big_i")));
    LoweredFunc f{"nests", {LoweredArg{"in", LoweredArg::Buffer, Float(32), 1}, LoweredArg{"out", LoweredArg::Buffer, Float(32), 1}},
                  Block::make({acc, big})};
    std::string ir;
    auto m = compile_llvm(f, host_cpu_info(), &ir);
    ASSERT_NE(m, nullptr);
    EXPECT_NE(ir.find(".nest.") , std::string::npos) << "no nest split off";
    EXPECT_NE(ir.find(".big_i"), std::string::npos) << ir.substr(0, 3000);
    EXPECT_EQ(ir.find(".acc_"), std::string::npos) << ir.substr(0, 3000);

    std::vector<float> in = test_input(n + 100), out(n + 4);
    run_in_out(m, in, out);
    for (int i = 0; i < n; i++) ASSERT_EQ(out[i], want_taps(in, i, 40)) << i;
    for (int k = 0; k < 4; k++) {
        float a = 0;
        for (int r = 0; r < 16; r++) a = a + want_taps(in, 4 * r + k, 12);
        ASSERT_EQ(out[n + k], a) << k;
    }
}

// Absurd but legal: 48 stages, each a parallel loop at root (48 functions, at most three parts a
// thread), compiled with the thread count set out of range (negative: none; huge: capped at 64).
// Every result right.
TEST(ParallelCompile, ManyFunctionsAndThreadCountsOutOfRange) {
    for (int threads : {-5, 1000}) {
        CompileThreads t(threads);
        clear_cache();
        const int W = 40, H = 12, N = 48;
        Buffer<int> in = Buffer<int>(W, H);
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) in(x, y) = (x * 3 + y * 5) % 7;
        Var x("x"), y("y");
        std::vector<Func> fs;
        Func prev("mf_0");
        prev(x, y) = in(x, y);
        prev.compute_root().parallel(y);
        fs.push_back(prev);
        for (int i = 1; i < N; i++) {
            Func f("mf_" + std::to_string(i));
            f(x, y) = (fs.back()(x, y) * 3 + (i % 5) + x) / 4;  // (stays small: no overflow)
            if (i + 1 < N) f.compute_root().parallel(y).vectorize(x, 8);
            fs.push_back(f);
        }
        fs.back().parallel(y);
        Buffer<int> o = fs.back().realize({W, H});
        for (int yy = 0; yy < H; yy++)
            for (int xx = 0; xx < W; xx++) {
                int v = in(xx, yy);
                for (int i = 1; i < N; i++) v = (v * 3 + (i % 5) + xx) / 4;
                ASSERT_EQ(o(xx, yy), v) << xx << "," << yy << " (threads " << threads << ")";
            }
    }
}


// A small stack buffer that a large nest only reads, at a fixed place, lives in memory anyway
// (it is written elsewhere at moving places): the nest is split off (it was not, before). Results
// right.
TEST(ParallelCompile, ANestOnlyReadingASmallBufferAtAFixedPlaceIsSplitOff) {
    CompileThreads t(0);
    const int n = 64;
    // tab[z] = in[z] * 2 for z in [0, 4); out[i] = taps(i, 40) + tab[2] for i in [0, n).
    Stmt fill = For::make("tab_z", ci(0), ci(4), ForType::Serial,
                          Store::make("tab", Mul::make(Load::make(Float(32), "in", iv("tab_z")), cf(2)), iv("tab_z")));
    Stmt big = For::make("rd_i", ci(0), ci(n), ForType::Serial,
                         Store::make("out", Add::make(taps(iv("rd_i"), 40), Load::make(Float(32), "tab", ci(2))), iv("rd_i")));
    // and out[n + j] = taps(j + 1, 40) for j in [0, n) (so that the nest is not most of the function).
    Stmt other = For::make("rd_j", ci(0), ci(n), ForType::Serial,
                           Store::make("out", taps(Add::make(iv("rd_j"), ci(1)), 40), Add::make(iv("rd_j"), ci(n))));
    Stmt s = Block::make({Allocate::make("tab", Float(32), ci(4), MemoryType::Stack, Block::make({fill, big})), other});
    LoweredFunc f{"reads", {LoweredArg{"in", LoweredArg::Buffer, Float(32), 1}, LoweredArg{"out", LoweredArg::Buffer, Float(32), 1}}, s};
    std::string ir;
    auto m = compile_llvm(f, host_cpu_info(), &ir);
    ASSERT_NE(m, nullptr);
    EXPECT_NE(ir.find(".nest."), std::string::npos) << ir.substr(0, 3000);
    EXPECT_NE(ir.find(".rd_i"), std::string::npos) << ir.substr(0, 3000);
    std::vector<float> in = test_input(n + 100), out(2 * n);
    run_in_out(m, in, out);
    for (int i = 0; i < n; i++) {
        ASSERT_EQ(out[i], want_taps(in, i, 40) + in[2] * 2.0f) << i;
        ASSERT_EQ(out[n + i], want_taps(in, i + 1, 40)) << i;
    }
}

// A function of very many loops makes each top-level loop nest a function of its own; the loop
// nests chosen inside such a nest (here two large stages in a strip loop) become functions of
// their own too, instead of one function holding the strip's every stage. Results right.
TEST(ParallelCompile, LoopsChosenInsideANestOutlinedForItsManyLoopsAreSplitOff) {
    CompileThreads t(0);
    const int n = 32, strips = 4;
    std::vector<Stmt> top;
    for (int z = 0; z < 70; z++)  // (out[z % 8] = 0, 70 small loops: more than the 64 that outline)
        top.push_back(For::make("zero_" + std::to_string(z), ci(0), ci(1), ForType::Serial,
                                Store::make("out", cf(0), Add::make(iv("zero_" + std::to_string(z)), ci(z % 8)))));
    // for s in [0, strips): out[s * n + i] = taps(s * n + i, 30) for i in [0, n); then
    //                       out[strips * n + s * n + j] = taps(s * n + j + 1, 30) for j in [0, n).
    Expr base = Mul::make(iv("strip_s"), ci(n));
    Stmt a = For::make("stage_a", ci(0), ci(n), ForType::Serial,
                       Store::make("out", taps(Add::make(base, iv("stage_a")), 30), Add::make(base, iv("stage_a"))));
    Expr bi = Add::make(base, iv("stage_b"));
    Stmt b = For::make("stage_b", ci(0), ci(n), ForType::Serial,
                       Store::make("out", taps(Add::make(bi, ci(1)), 30), Add::make(bi, ci(strips * n))));
    top.push_back(For::make("strip_s", ci(0), ci(strips), ForType::Serial, Block::make({a, b})));
    LoweredFunc f{"many", {LoweredArg{"in", LoweredArg::Buffer, Float(32), 1}, LoweredArg{"out", LoweredArg::Buffer, Float(32), 1}},
                  Block::make(top)};
    std::string ir;
    auto m = compile_llvm(f, host_cpu_info(), &ir);
    ASSERT_NE(m, nullptr);
    for (const char *stage : {"stage_a", "stage_b"})
        EXPECT_TRUE(std::regex_search(ir, std::regex(std::string("define internal [^@]*@\"?[^ (]*\\.strip_s\\.nest\\.[0-9]+\\.") + stage)))
            << stage << " not split off inside the strip's nest";
    std::vector<float> in = test_input(2 * strips * n + 64), out(2 * strips * n);
    run_in_out(m, in, out);
    for (int s = 0; s < strips; s++)
        for (int i = 0; i < n; i++) {
            ASSERT_EQ(out[s * n + i], want_taps(in, s * n + i, 30)) << s << "," << i;
            ASSERT_EQ(out[strips * n + s * n + i], want_taps(in, s * n + i + 1, 30)) << s << "," << i;
        }
}

// A loop of a few constant steps around other loops (stages computed per tile: channels around
// rows and columns) stays a loop: LLVM is told not to unroll it whole (its time on such code
// grew to seconds), while the loop inside, short and innermost, may still be. Results right.
TEST(ParallelCompile, ASmallLoopAroundLoopsIsNotUnrolledByLLVM) {
    CompileThreads t(0);
    // out[c * 8 + x] = taps(c * 8 + x, 20) for c in [0, 4), x in [0, 3).
    Expr i = Add::make(Mul::make(iv("su_c"), ci(8)), iv("su_x"));
    Stmt s = For::make("su_c", ci(0), ci(4), ForType::Serial,
                       For::make("su_x", ci(0), ci(3), ForType::Serial, Store::make("out", taps(i, 20), i)));
    LoweredFunc f{"small_outer", {LoweredArg{"in", LoweredArg::Buffer, Float(32), 1}, LoweredArg{"out", LoweredArg::Buffer, Float(32), 1}},
                  s};
    std::string ir;
    auto m = compile_llvm(f, host_cpu_info(), &ir);
    ASSERT_NE(m, nullptr);
    EXPECT_NE(ir.find("llvm.loop.unroll.disable"), std::string::npos) << ir;
    EXPECT_TRUE(std::regex_search(ir, std::regex("\\bsu_c[^ ]*:"))) << "the channel loop was unrolled\n" << ir;
    std::vector<float> in = test_input(64), out(32, -1.0f);
    run_in_out(m, in, out);
    for (int c = 0; c < 4; c++)
        for (int x = 0; x < 8; x++) ASSERT_EQ(out[c * 8 + x], x < 3 ? want_taps(in, c * 8 + x, 20) : -1.0f) << c << "," << x;
}

// A basic block too long for LLVM's code generation (parts of which take time growing with the
// square of a block's length) is split into parts and compiled without the x86 machine
// combiner; shorter ones as LLVM compiles them by default. The combiner's option is
// process-wide, set and restored while a pipeline of passes is built: several threads compile
// long and short blocks at once, and every result is exact.
TEST(ParallelCompile, ConcurrentCompilesOfLongAndShortBlocksAreExact) {
    CompileThreads t(2);
    clear_cache();
    const int kThreads = 4, kTerms = 1500, kWidth = 64;
#if defined(__SANITIZE_THREAD__)
    // Under ThreadSanitizer a 1500-term expression's compile holds 12 GB (against 0.1 GB), and
    // what this checks of it happens in LLVM, which is not instrumented: short blocks only there.
    const bool long_blocks = false;
#else
    const bool long_blocks = true;
#endif
    uint64_t before = internal::modules_compiled_without_machine_combiner();
    std::vector<std::thread> threads;
    std::vector<std::string> failures(kThreads);
    for (int i = 0; i < kThreads; i++)
        threads.emplace_back([&, i] {
            try {
                if (i % 2 || !long_blocks) {
                    Chain p(32, 32, i + 7);
                    Buffer<float> o = p.out.realize({p.w, p.h});
                    for (int y = 0; y < p.h; y++)
                        for (int x = 0; x < p.w; x++)
                            if (o(x, y) != p.at(x, y)) {
                                failures[i] = "short: wrong at " + std::to_string(x) + "," + std::to_string(y);
                                return;
                            }
                    return;
                }
                // One expression of kTerms nested terms, e * in((x + k) % 8) + c, in uint32
                // (wrapping; a product of loads, which the simplifier cannot collect into a
                // short sum as it would products of constants): one long block.
                Buffer<uint32_t> in(std::vector<int>{8});
                for (int j = 0; j < 8; j++) in(j) = 1000u * j + 17u * i + 3u;
                Var x("x");
                Func f("long_block_" + std::to_string(i));
                Expr e = cast<uint32_t>(x);
                for (int k = 0; k < kTerms; k++) e = e * in((x + k) % 8) + (k + i) % 5;
                f(x) = e;
                f.vectorize(x, 16);
                Buffer<uint32_t> o = f.realize({kWidth});
                for (int xv = 0; xv < kWidth; xv++) {
                    uint32_t v = (uint32_t)xv;
                    for (int k = 0; k < kTerms; k++) v = v * in((xv + k) % 8) + (uint32_t)((k + i) % 5);
                    if (o(xv) != v) {
                        failures[i] = "long: wrong at " + std::to_string(xv);
                        return;
                    }
                }
            } catch (const std::exception &e) {
                failures[i] = e.what();
            }
        });
    for (auto &th : threads) th.join();
    for (int i = 0; i < kThreads; i++) EXPECT_EQ(failures[i], "") << "thread " << i;
    if (long_blocks)
        EXPECT_GE(internal::modules_compiled_without_machine_combiner(), before + 2)
            << "the long blocks were compiled with the machine combiner";
}

// A tile loop around 70 stages (140 loops in one nest): each stage's loop nest is made a function
// of its own (LLVM's loop analyses walk from each loop through all the loops before it in a
// function: a nest of hundreds of loops took seconds), with the same results, bit for bit, as
// the same stages computed at root.
TEST(ParallelCompile, ATileLoopAroundManyStagesIsSplitPerStage) {
    CompileThreads t(1);
    const int kStages = 70, W = 48, H = 40;
    Buffer<float> in = input(W, H, 3);
    auto build = [&](bool tiled) {
        Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
        std::vector<Func> fs = {Func("ts_0")};
        fs[0](x, y) = in(clamp(x, 0, W - 1), clamp(y, 0, H - 1));
        for (int i = 1; i < kStages; i++) {
            Func g("ts_" + std::to_string(i));
            Func &p = fs.back();
            g(x, y) = (p(x - 1, y) + p(x + 1, y)) * 0.5f + p(x, y - 1) * 0.25f;
            fs.push_back(g);
        }
        Func out("ts_out");
        out(x, y) = fs.back()(x, y);
        if (tiled) {
            out.tile(x, y, xo, yo, xi, yi, 16, 16).vectorize(xi, 8);
            for (auto &f : fs) f.compute_at(out, xo).vectorize(x, 8);
        } else {
            out.vectorize(x, 8);
            for (auto &f : fs) f.compute_root().vectorize(x, 8);
        }
        return out;
    };
    clear_cache();
    uint64_t before = internal::nests_outlined_from_large_nests();
    Buffer<float> tiled = build(true).realize({W, H});
    EXPECT_GE(internal::nests_outlined_from_large_nests(), before + kStages) << "the stages were not split off";
    Buffer<float> root = build(false).realize({W, H});
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) ASSERT_EQ(tiled(x, y), root(x, y)) << "at " << x << "," << y;
}

// 150 stages stored per strip of rows and computed per row (sliding windows in ring buffers),
// every tenth also reading the stage three before it (two consumers, windows of two depths):
// placed and bounded in time about linear in the stages (each Func's walks skip the stages that
// do not name it; the simplifier no longer rewrites the rest of the program for each stage's
// lets), with the same results, bit for bit, as the same stages at root.
TEST(ParallelCompile, ManyStagesSlidingPerRowMatchTheSameStagesAtRoot) {
    const int kStages = 150, W = 40, H = 36;
    Buffer<float> in = input(W, H, 5);
    auto build = [&](bool slide) {
        Var x("x"), y("y"), yo("yo"), yi("yi");
        std::vector<Func> fs = {Func("sl_0")};
        fs[0](x, y) = in(clamp(x, 0, W - 1), clamp(y, 0, H - 1));
        for (int i = 1; i < kStages; i++) {
            Func g("sl_" + std::to_string(i));
            Func &p = fs.back();
            Expr e = (p(x - 1, y) + p(x + 1, y)) * 0.5f + p(x, y - 1) * 0.25f;
            if (i % 10 == 0 && i >= 3) e = e - fs[i - 3](x, y + 1) * 0.125f;
            g(x, y) = e;
            fs.push_back(g);
        }
        Func out("sl_out");
        out(x, y) = fs.back()(x, y);
        if (slide) {
            out.split(y, yo, yi, 12).vectorize(x, 8);
            for (auto &f : fs) f.store_at(out, yo).compute_at(out, yi).vectorize(x, 8);
        } else {
            out.vectorize(x, 8);
            for (auto &f : fs) f.compute_root().vectorize(x, 8);
        }
        return out;
    };
    clear_cache();
    Buffer<float> slid = build(true).realize({W, H});
    Buffer<float> root = build(false).realize({W, H});
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) ASSERT_EQ(slid(x, y), root(x, y)) << "at " << x << "," << y;
}
