// Dense vector access where Halide has it. Vector loads at a constant stride (2 to 4 either way,
// or reversed) are dense loads and a shuffle, not gathers (jit/llvm/CodeGen_LLVM.cpp,
// strided_load): they must read nothing outside the elements accessed (the input here ends, or
// starts, at a page that cannot be read). So are upsampling loads, in((x + s) / c) for c from 2 to
// 4. A vectorized loop variable bound in a let (a serial
// loop inside the vectorized one) stays a ramp at its uses (dense loads and stores, no gathers
// or scatters). Buffer accesses carry type-based alias tags (an allocation of the pipeline's own
// has one of its own).
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cstdint>
#include <functional>
#include <string>
#include "weft/weft.h"

using namespace weft;

namespace {

/** n elements of T whose last (or, with at_end false, first) element touches a page that
    cannot be read. */
template <typename T>
struct Guarded {
    size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes;
    char *base = nullptr;
    T *data = nullptr;
    Guarded(size_t n, bool at_end) {
        size_t need = (n * sizeof(T) + page - 1) / page * page;
        bytes = need + 2 * page;
        base = (char *)mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        mprotect(base, page, PROT_NONE);
        mprotect(base + page + need, page, PROT_NONE);
        data = at_end ? (T *)(base + page + need) - n : (T *)(base + page);
    }
    ~Guarded() { munmap(base, bytes); }
};

template <typename T>
void check_strides(const char *tname) {
    for (int stride : {2, 3, 4, -1, -2, -3, -4})
        for (int lanes : {4, 8, 16})
            for (int w : {64, 61}) {  // 61: a scalar tail after the vectors
                SCOPED_TRACE(std::string(tname) + " stride " + std::to_string(stride) + " lanes " +
                             std::to_string(lanes) + " width " + std::to_string(w));
                int a = stride < 0 ? -stride : stride;
                size_t n = (size_t)a * (w - 1) + 1;  // exactly the elements read
                Guarded<T> g(n, stride > 0);
                for (size_t i = 0; i < n; i++) g.data[i] = (T)(i * 7 + 3);
                Buffer<T> in(g.data, {(int)n}, "strided_in");
                Var x("x");
                Func f("strided");
                Expr at = stride > 0 ? stride * x : Expr((int)n - 1) + stride * x;
                f(x) = in(at);
                f.vectorize(x, lanes);
                Buffer<T> out = f.realize({w});
                for (int i = 0; i < w; i++) {
                    size_t k = stride > 0 ? (size_t)(stride * i) : n - 1 - (size_t)(a * i);
                    ASSERT_EQ(out(i), g.data[k]) << "at " << i;
                }
            }
}

TEST(StridedLoads, ReadOnlyTheElementsAccessed) {
    check_strides<float>("float");
    check_strides<uint8_t>("uint8");
    check_strides<int16_t>("int16");
    check_strides<double>("double");
}

/** The LLVM IR compiled for f's pipeline (WEFT_DEBUG's output). */
std::string llvm_ir_of(Func f, std::vector<int> sizes) {
    set_debug(true);
    testing::internal::CaptureStderr();
    f.realize(sizes);
    std::string err = testing::internal::GetCapturedStderr();
    set_debug(false);
    size_t at = err.find("---- LLVM IR ----");
    return at == std::string::npos ? "" : err.substr(at);
}

TEST(StridedLoads, AreNotGathers) {
    Buffer<float> in(std::vector<int>{1024}, "strided_src");
    in.fill(1.0f);
    Var x("x");
    Func f("downsample");
    f(x) = in(2 * x) + in(2 * x + 1) + in(1023 - x);
    f.vectorize(x, 16);
    std::string ir = llvm_ir_of(f, {500});
    ASSERT_FALSE(ir.empty());
    EXPECT_EQ(ir.find("masked.gather"), std::string::npos) << ir;
    EXPECT_NE(ir.find("shufflevector"), std::string::npos);
}

TEST(UpsamplingLoads, ReadOnlyTheElementsAccessedAndAreNotGathers) {
    // f(x) = in((x + s) / c): dense loads and a shuffle chosen by the vector's first index mod c.
    for (int c : {2, 3, 4})
        for (int s = 0; s < c; s++)
            for (int lanes : {4, 8, 16})
                for (int w : {64, 61})
                    for (bool at_end : {true, false}) {
                        SCOPED_TRACE("c " + std::to_string(c) + " shift " + std::to_string(s) + " lanes " +
                                     std::to_string(lanes) + " width " + std::to_string(w) + (at_end ? " end" : " start"));
                        size_t n = (size_t)((w - 1 + s) / c) + 1;  // elements 0 .. (w - 1 + s) / c
                        Guarded<float> g(n, at_end);
                        for (size_t i = 0; i < n; i++) g.data[i] = (float)(i * 7 + 3);
                        Buffer<float> in(g.data, {(int)n}, "up_in");
                        Var x("x");
                        Func f("upsampled");
                        f(x) = in((x + s) / c);
                        f.vectorize(x, lanes);
                        Buffer<float> out = f.realize({w});
                        for (int i = 0; i < w; i++) ASSERT_EQ(out(i), g.data[(i + s) / c]) << "at " << i;
                    }
    // Bytes in wide vectors (64 and 128 lanes), the vector's first index odd at the tail.
    for (int c : {2, 3})
        for (int lanes : {64, 128})
            for (int w : {512, 509}) {
                SCOPED_TRACE("uint8 c " + std::to_string(c) + " lanes " + std::to_string(lanes) + " width " + std::to_string(w));
                size_t n = (size_t)((w - 1 + 1) / c) + 1;
                Guarded<uint8_t> g(n, true);
                for (size_t i = 0; i < n; i++) g.data[i] = (uint8_t)(i * 7 + 3);
                Buffer<uint8_t> in(g.data, {(int)n}, "up_in8");
                Var x("x");
                Func f("upsampled8");
                f(x) = in((x + 1) / c);
                f.vectorize(x, lanes);
                Buffer<uint8_t> out = f.realize({w});
                for (int i = 0; i < w; i++) ASSERT_EQ(out(i), g.data[(i + 1) / c]) << "at " << i;
            }
    Buffer<float> in(std::vector<int>{600}, "up_src");
    in.fill(1.0f);
    Var x("x"), y("y");
    Func f("upsample2d");
    f(x, y) = in(x / 2 + y) + in((x + 1) / 2 + y);
    f.vectorize(x, 16);
    std::string ir = llvm_ir_of(f, {512, 4});
    ASSERT_FALSE(ir.empty());
    EXPECT_EQ(ir.find("masked.gather"), std::string::npos) << ir;
    Buffer<uint8_t> in8(std::vector<int>{600}, "up_src8");
    in8.fill(1);
    Func f8("upsample128");
    f8(x) = in8(x / 2);
    f8.vectorize(x, 128);
    ir = llvm_ir_of(f8, {1024});
    ASSERT_FALSE(ir.empty());
    EXPECT_EQ(ir.find("masked.gather"), std::string::npos) << ir;
}

TEST(UpsamplingLoads, BilinearTapsAndMixedRemaindersAreDenseLoads) {
    // Lanes that are sums of divisions and remainders of x by constants: a bilinear upsampling's
    // outer tap x / 2 - 1 + 2 * (x % 2) (local Laplacian's), (x + 1) / 3 + x % 3, and x / 4 * 2 +
    // x % 2. Each vector reads a dense range common to every remainder of its first index, and
    // at most two elements besides, alone: exact, nothing read outside the elements accessed
    // (the input ends, or starts, at a page that cannot be read), and no gather.
    // (bound: the last element bounds inference asks the input to hold for x in [0, w), its
    // terms bounded apart; the buffer ends there.)
    struct Pattern {
        const char *name;
        std::function<Expr(Expr)> at;
        std::function<int(int)> at_int, bound;
    };
    std::vector<Pattern> patterns = {
        {"x / 2 - 1 + 2 * (x % 2) + 1", [](Expr x) { return x / 2 - 1 + 2 * (x % 2) + 1; },
         [](int x) { return x / 2 - 1 + 2 * (x % 2) + 1; }, [](int w) { return (w - 1) / 2 + 2; }},
        {"(x + 1) / 3 + x % 3", [](Expr x) { return (x + 1) / 3 + x % 3; }, [](int x) { return (x + 1) / 3 + x % 3; },
         [](int w) { return w / 3 + 2; }},
        {"x / 4 * 2 + x % 2", [](Expr x) { return x / 4 * 2 + x % 2; }, [](int x) { return x / 4 * 2 + x % 2; },
         [](int w) { return (w - 1) / 4 * 2 + 1; }},
    };
    for (auto &pt : patterns)
        for (int lanes : {4, 8, 16})
            for (int w : {64, 61})
                for (bool at_end : {true, false}) {
                    SCOPED_TRACE(std::string(pt.name) + " lanes " + std::to_string(lanes) + " width " + std::to_string(w) +
                                 (at_end ? " end" : " start"));
                    int hi = pt.bound(w);
                    for (int i = 0; i < w; i++) hi = std::max(hi, pt.at_int(i));
                    size_t n = (size_t)hi + 1;
                    Guarded<float> g(n, at_end);
                    for (size_t i = 0; i < n; i++) g.data[i] = (float)(i * 7 + 3);
                    Buffer<float> in(g.data, {(int)n}, "bilinear_in");
                    Var x("x");
                    Func f("bilinear_taps");
                    f(x) = in(pt.at(x));
                    f.vectorize(x, lanes);
                    Buffer<float> out = f.realize({w});
                    for (int i = 0; i < w; i++) ASSERT_EQ(out(i), g.data[pt.at_int(i)]) << "at " << i;
                }
    Buffer<float> in(std::vector<int>{600}, "bilinear_src");
    in.fill(1.0f);
    Var x("x"), y("y");
    Func f("bilinear2d");
    f(x, y) = 0.25f * in(x / 2 - 1 + 2 * (x % 2) + y + 1) + 0.75f * in(x / 2 + y);
    f.vectorize(x, 16);
    std::string ir = llvm_ir_of(f, {512, 4});
    ASSERT_FALSE(ir.empty());
    EXPECT_EQ(ir.find("masked.gather"), std::string::npos) << ir;
}

TEST(DenseVectorAccess, AVectorLoopVariableBoundInALetStaysARamp) {
    // Halide's idiom: reorder(c, x).vectorize(x).unroll(c): x's vector is bound in a let and the
    // loop over c runs inside it.
    const int W = 67, C = 3;
    Buffer<float> in(W, C);
    for (int c = 0; c < C; c++)
        for (int i = 0; i < W; i++) in(i, c) = (float)(i * 10 + c);
    Var x("x"), c("c");
    Func g("interleaved");
    g(x, c) = in(x, c) * 2.0f + 1.0f;
    g.reorder(c, x).vectorize(x, 8).unroll(c);
    std::string lowered = Pipeline(g).lowered_ir({W, C});
    std::string last = lowered.substr(lowered.rfind("// ----"));
    EXPECT_EQ(last.find("= ramp("), std::string::npos) << "a ramp still bound in a let:\n" << last;
    std::string ir = llvm_ir_of(g, {W, C});
    ASSERT_FALSE(ir.empty());
    EXPECT_EQ(ir.find("masked.gather"), std::string::npos) << ir;
    EXPECT_EQ(ir.find("masked.scatter"), std::string::npos) << ir;
    Buffer<float> out = g.realize({W, C});
    for (int cc = 0; cc < C; cc++)
        for (int i = 0; i < W; i++) ASSERT_EQ(out(i, cc), in(i, cc) * 2.0f + 1.0f) << i << "," << cc;
}

}  // namespace

// Type-based alias tags (jit/llvm/CodeGen_LLVM.cpp): every access to a buffer the pipeline
// allocates carries a tag of that allocation's own, the buffers passed in share one, so LLVM
// may keep an accumulator tile in registers while it reads the inputs. The results stay exact.
TEST(AliasTags, AllocationsHaveTagsOfTheirOwn) {
    const int W = 64, K = 9;
    Buffer<float> in(std::vector<int>{W + K, 4}, "tbaa_in"), w(std::vector<int>{K, 4}, "tbaa_w");
    for (int j = 0; j < 4; j++) {
        for (int i = 0; i < W + K; i++) in(i, j) = (float)((i * 7 + j) % 13) - 6.0f;
        for (int k = 0; k < K; k++) w(k, j) = 0.25f * (float)(k - 4) + (float)j;
    }
    Var x("x"), y("y"), xo("xo"), xi("xi");
    RDom r(0, K, "r");
    Func acc("tbaa_acc"), out("tbaa_out");
    acc(x, y) = 0.0f;
    acc(x, y) += w(r, y) * in(x + r, y);
    out(x, y) = acc(x, y) * 2.0f;
    out.split(x, xo, xi, 32).vectorize(xi, 8);
    acc.compute_root().vectorize(x, 8);  // (an array LLVM cannot turn into registers: its tags stay)
    acc.update(0).reorder(x, r).vectorize(x, 8).unroll(x);
    std::string ir = llvm_ir_of(out, {W, 4});
    ASSERT_FALSE(ir.empty());
    EXPECT_NE(ir.find("!\"weft.external\""), std::string::npos) << ir;
    EXPECT_NE(ir.find("!\"tbaa_acc#"), std::string::npos) << ir;
    Buffer<float> o = out.realize({W, 4});
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < W; i++) {
            float s = 0.0f;
            for (int k = 0; k < K; k++) s += w(k, j) * in(i + k, j);
            ASSERT_FLOAT_EQ(o(i, j), s * 2.0f) << i << ", " << j;
        }
}

namespace {

/** Does the host have AVX-512 VBMI (vpermi2b)? */
bool host_has_vbmi() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512bw");
#else
    return false;
#endif
}

}  // namespace

TEST(TableLookups, ByteTablesAreLookedUpInRegisters) {
    // A byte table of the pipeline's own read at a clamped index (a tone curve): on AVX-512 VBMI
    // each 64 lanes are vpermi2b lookups, not a load per lane; everywhere the values are exact,
    // for tables that start and end inside a 64-byte vector (masked loads) and signed bytes.
    struct Case {
        int size, lo, hi, lanes;
        bool is_signed;
    };
    std::vector<Case> cases = {{1024, 0, 1023, 64}, {1024, 0, 1023, 16}, {1024, 0, 1023, 32},
                               {200, 37, 199, 64}, {300, 130, 131, 32},
                               {256, 0, 255, 64}, {96, 5, 90, 16}};
    for (const Case &k : cases)
        for (bool is_signed : {false, true}) {
            SCOPED_TRACE("table " + std::to_string(k.size) + " [" + std::to_string(k.lo) + ", " +
                         std::to_string(k.hi) + "] lanes " + std::to_string(k.lanes) + (is_signed ? " int8" : " uint8"));
            const int W = 1000;
            Buffer<uint16_t> in(std::vector<int>{W}, "lut_in");
            for (int i = 0; i < W; i++) in(i) = (uint16_t)((i * 7919 + 13) % 1400);
            Var x("x");
            Func table("table"), out("looked_up");
            Type et = is_signed ? Int(8) : UInt(8);
            // From an input, so that the table is loaded at run time (not folded by LLVM).
            Buffer<int16_t> values(std::vector<int>{k.size}, "lut_values");
            for (int i = 0; i < k.size; i++) values(i) = (int16_t)((i * 37 + 11) % 251 - (is_signed ? 125 : 0));
            table(x) = cast(et, values(x));
            table.compute_root().bound(x, 0, k.size);
            out(x) = table(clamp(cast<int>(in(x)), k.lo, k.hi));
            out.vectorize(x, k.lanes);
            std::string ir = llvm_ir_of(out, {W});
            ASSERT_FALSE(ir.empty());
            if (host_has_vbmi()) {
                EXPECT_NE(ir.find("vpermi2var.qi.512"), std::string::npos) << ir;
                EXPECT_EQ(ir.find("masked.gather"), std::string::npos) << ir;
            }
            auto check = [&](auto got) {
                for (int i = 0; i < W; i++) {
                    int j = std::min(std::max((int)in(i), k.lo), k.hi);
                    int want = (j * 37 + 11) % 251 - (is_signed ? 125 : 0);
                    ASSERT_EQ((int)got(i), (int)(is_signed ? (int8_t)want : (uint8_t)want)) << "at " << i;
                }
            };
            if (is_signed) check(Buffer<int8_t>(out.realize({W})));
            else check(Buffer<uint8_t>(out.realize({W})));
        }
    // A uint8 index reaches the whole of a 256-byte table: looked up as well. A table of 4096
    // bytes is more than the registers hold: a gather, as before. Both exact.
    for (int size : {256, 4096}) {
        Buffer<uint16_t> idx(std::vector<int>{512}, "lut_idx");
        for (int i = 0; i < 512; i++) idx(i) = (uint16_t)((i * 977) % size);
        Var x("x");
        Func table("table_big"), out("by_index");
        table(x) = cast<uint8_t>(x ^ 0x5a);
        table.compute_root().bound(x, 0, size);
        Expr at = size == 256 ? cast<int>(cast<uint8_t>(idx(x))) : clamp(cast<int>(idx(x)), 0, size - 1);
        out(x) = table(at);
        out.vectorize(x, 64);
        std::string ir = llvm_ir_of(out, {512});
        if (host_has_vbmi()) EXPECT_EQ(ir.find("vpermi2var.qi.512") != std::string::npos, size == 256) << ir;
        Buffer<uint8_t> r = out.realize({512});
        for (int i = 0; i < 512; i++) ASSERT_EQ(r(i), (uint8_t)(((i * 977) % size) ^ 0x5a)) << i;
    }
}

namespace {

template <typename T>
void check_transposes(const char *tname) {
    for (int V : {4, 8, 16})
        for (bool flip : {false, true})
            for (int W : {48, 37}) {  // 37: the transpose's tiles do not divide the rows
                SCOPED_TRACE(std::string(tname) + " lanes " + std::to_string(V) + (flip ? " flipped" : "") +
                             " width " + std::to_string(W));
                const int H = 64;
                size_t n = (size_t)W * H;  // the source ends at a page that cannot be read
                Guarded<T> g(n, true);
                for (size_t i = 0; i < n; i++) g.data[i] = (T)(i * 7 + 3);
                Buffer<T> in(g.data, {W, H}, "tr_in");
                Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
                Func f("transposed");
                f(x, y) = flip ? in(y, H - 1 - x) : in(y, x);
                f.tile(x, y, xo, yo, xi, yi, V, 2 * V).vectorize(xi);
                std::string ir = llvm_ir_of(f, {H, W});
                if (W % (2 * V) == 0) {
                    EXPECT_EQ(ir.find("masked.gather"), std::string::npos) << ir;
                    EXPECT_NE(ir.find("shufflevector"), std::string::npos) << ir;
                }
                Buffer<T> out = f.realize({H, W});
                for (int j = 0; j < W; j++)
                    for (int i = 0; i < H; i++)
                        ASSERT_EQ(out(i, j), in(j, flip ? H - 1 - i : i)) << "at " << i << "," << j;
            }
}

}  // namespace

TEST(Transposes, AreDenseLoadsAndShufflesReadingOnlyTheElementsAccessed) {
    // f(x, y) = in(y, x) vectorized along x: each iteration of the loop over y reads a column of
    // in. A block of V iterations is V dense rows transposed in registers.
    check_transposes<float>("float");
    check_transposes<uint8_t>("uint8");
    check_transposes<int16_t>("int16");
    check_transposes<double>("double");
}

TEST(Transposes, OfAnExpressionAreShufflesToo) {
    // The transposed read inside an expression (a conversion, the same read twice, another
    // buffer read densely, the loop variables): the block is transposed, then the expression is
    // computed for each row. An update that reads its own output keeps its gathers.
    const int W = 48, H = 64;
    Guarded<uint8_t> g((size_t)W * H, true);
    for (int i = 0; i < W * H; i++) g.data[i] = (uint8_t)(i * 13 + 5);
    Buffer<uint8_t> in(g.data, {W, H}, "trx_in");
    Buffer<float> other(H, W);
    for (int j = 0; j < W; j++)
        for (int i = 0; i < H; i++) other(i, j) = (float)(i - 3 * j);
    Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
    Func f("transposed_expr");
    f(x, y) = cast<float>(in(y, x)) * 0.5f + cast<float>(in(y, x)) * cast<float>(y) + other(x, y) + cast<float>(x);
    f.tile(x, y, xo, yo, xi, yi, 16, 16).vectorize(xi);
    std::string ir = llvm_ir_of(f, {H, W});
    EXPECT_EQ(ir.find("masked.gather"), std::string::npos) << ir;
    EXPECT_NE(ir.find("shufflevector"), std::string::npos) << ir;
    Buffer<float> out = f.realize({H, W});
    for (int j = 0; j < W; j++)
        for (int i = 0; i < H; i++) {
            float v = (float)in(j, i);
            ASSERT_EQ(out(i, j), v * 0.5f + v * (float)j + other(i, j) + (float)i) << "at " << i << "," << j;
        }
    Func u("transposed_update");
    u(x, y) = cast<float>(x + y);
    u(x, y) = u(x, y) * 2.0f + cast<float>(in(y, x));
    u.update().tile(x, y, xo, yo, xi, yi, 16, 16).vectorize(xi);
    Buffer<float> uo = u.realize({H, W});
    for (int j = 0; j < W; j++)
        for (int i = 0; i < H; i++) ASSERT_EQ(uo(i, j), (float)(i + j) * 2.0f + (float)in(j, i)) << i << "," << j;
}
