// Dot products of bfloat16 pairs: float32 accumulations of widened bfloat16 products, two added
// one after the other, are vdpbf16ps on AVX-512 BF16. The instruction adds the odd elements'
// product first, then the even ones', each rounded to float32: code generation places the
// first-written product in the odd element, so the result is the written order's, bit for bit
// (subnormals and products beyond float's range aside: the instruction flushes the first and
// keeps the second until the add). Target::without_feature("avx512bf16") leaves them as written.
#include <gtest/gtest.h>
#include <weft/weft.h>

#include "llvm/Bf16Check.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

using namespace weft;

namespace {

/** Does code generation use vdpbf16ps here: the host has it (with the 256- and 128-bit forms)
    and it passed the check of how it adds (internal::host_dpbf16ps_is_sequential)? */
bool host_has_bf16() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && internal::host_dpbf16ps_is_sequential();
#else
    return false;
#endif
}

/** The LLVM IR compiled for f (WEFT_DEBUG's output; compiled here, not read from the disk cache). */
std::string llvm_ir_of(Func f, Buffer<float> *out, const Target &t = Target::host()) {
    clear_cache();
    set_debug(true);
    testing::internal::CaptureStderr();
    f.realize(*out, t);
    std::string err = testing::internal::GetCapturedStderr();
    set_debug(false);
    size_t at = err.find("---- LLVM IR ----");
    return at == std::string::npos ? "" : err.substr(at);
}

uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

/** C(j, i) = Σ_k A(k, i) * B(j, k) in float32, A and B bfloat16, added in the order k = 0, 1, ...
    (each step one fma: a product of two bfloat16 is exact in float32). */
struct Gemm {
    int M, N, K;
    Buffer<bfloat16_t> A, B;
    Gemm(int m, int n, int k, uint32_t seed) : M(m), N(n), K(k), A(k, m), B(n, k) {
        uint32_t s = seed;
        auto next = [&] { return s = s * 1664525u + 1013904223u, s >> 8; };
        // Magnitudes spread over 2^-8 .. 2^8 with both signs: the sums cancel and round, so an
        // order other than the written one shows in the low bits.
        auto value = [&] {
            uint32_t r = next();
            float mant = 1.0f + (float)(r & 127) / 128.0f;
            int e = (int)((r >> 7) % 17) - 8;
            return bfloat16_t(std::ldexp((r >> 12) & 1 ? -mant : mant, e));
        };
        for (int i = 0; i < M; i++)
            for (int kk = 0; kk < K; kk++) A(kk, i) = value();
        for (int kk = 0; kk < K; kk++)
            for (int j = 0; j < N; j++) B(j, kk) = value();
    }
    float ref(int j, int i, bool odd_first = false) const {
        float s = 0.0f;
        auto p = [&](int kk) { return (float)A(kk, i) * (float)B(j, kk); };
        for (int kk = 0; kk < K; kk++) {
            int k2 = odd_first ? (kk ^ 1) : kk;
            s = std::fma((float)A(k2, i), (float)B(j, k2), s);
            (void)p;
        }
        return s;
    }
    void check(const Buffer<float> &c, const std::string &what, bool odd_first = false) const {
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++)
                ASSERT_EQ(bits(c(j, i)), bits(ref(j, i, odd_first))) << what << " at " << j << "," << i << ": " << c(j, i)
                                                                      << " vs " << ref(j, i, odd_first);
    }
};

TEST(Bf16DotProducts, UnrolledProductPairsAreVdpbf16psInTheWrittenOrder) {
    const bool bf16 = host_has_bf16();
    struct Case {
        const char *what;
        int lanes, unroll;
        bool swapped;  // f32(B) * f32(A)
        bool expect;
    };
    for (const Case &c : std::vector<Case>{{"16 lanes", 16, 2, false, true},
                                           {"8 lanes", 8, 2, false, true},
                                           {"4 lanes", 4, 2, false, true},
                                           {"operands swapped", 16, 2, true, true},
                                           {"two pairs", 16, 4, false, true},
                                           {"a pair and one more", 16, 3, false, true},
                                           {"one product", 16, 1, false, false}}) {
        Gemm g(5, 48, 96, 7);
        Var j("j"), i("i"), jo("jo"), ji("ji");
        RDom k(0, g.K, "k");
        RVar ko("ko"), ki("ki");
        Func C(std::string("bdot_") + std::to_string(c.lanes) + "_" + std::to_string(c.unroll));
        C(j, i) = 0.0f;
        Expr a = cast<float>(g.A(k, i)), b = cast<float>(g.B(j, k));
        C(j, i) += c.swapped ? b * a : a * b;
        C.update().split(j, jo, ji, c.lanes).split(k, ko, ki, c.unroll).reorder(ji, ki, jo, ko, i).vectorize(ji).unroll(ki);
        Buffer<float> out(g.N, g.M);
        std::string ir = llvm_ir_of(C, &out);
        g.check(out, c.what);
        if (bf16) EXPECT_EQ(ir.find("dpbf16ps") != std::string::npos, c.expect) << c.what;
    }
}

TEST(Bf16DotProducts, PackedPairsAreDenseLoadsInEitherOrder) {
    const bool bf16 = host_has_bf16();
    Gemm g(3, 32, 64, 11);
    // B packed as Bp(t, j, kq) = B(j, 2 kq + t): the two values of each lane adjacent.
    Buffer<bfloat16_t> Bp(2, g.N, g.K / 2);
    for (int kq = 0; kq < g.K / 2; kq++)
        for (int jj = 0; jj < g.N; jj++)
            for (int t = 0; t < 2; t++) Bp(t, jj, kq) = g.B(jj, 2 * kq + t);
    for (bool odd_first : {true, false}) {
        Var j("j"), i("i"), jo("jo"), ji("ji");
        RDom r(0, g.K / 2, "r");
        Func C(odd_first ? "bdot_odd_first" : "bdot_even_first");
        C(j, i) = 0.0f;
        auto p = [&](int t) { return cast<float>(g.A(2 * r + t, i)) * cast<float>(Bp(t, j, r)); };
        // Written out: C + p(first) + p(second), one rounding after each add.
        C(j, i) = odd_first ? C(j, i) + p(1) + p(0) : C(j, i) + p(0) + p(1);
        C.update().split(j, jo, ji, 16).vectorize(ji);
        Buffer<float> out(g.N, g.M);
        std::string ir = llvm_ir_of(C, &out);
        g.check(out, odd_first ? "odd first" : "even first", odd_first);
        if (bf16) {
            EXPECT_NE(ir.find("dpbf16ps"), std::string::npos);
            // Both operands are loads of whole pairs: nothing shuffled; in the order the
            // instruction adds (odd first) nothing rotated either.
            EXPECT_EQ(ir.find("shufflevector <16 x i16>"), std::string::npos) << ir;
            EXPECT_EQ(ir.find("llvm.fshl") != std::string::npos, !odd_first);
        }
    }
}

TEST(Bf16DotProducts, OtherSumsAreLeftAsTheyAre) {
    // A sum of the pair first (C + (p0 + p1)), a float16 product, and a target without AVX-512
    // BF16: no vdpbf16ps, results as written.
    Gemm g(2, 32, 8, 5);
    Var j("j"), i("i"), jo("jo"), ji("ji");
    RDom r(0, g.K / 2, "r");
    auto p = [&](int t) { return cast<float>(g.A(2 * r + t, i)) * cast<float>(g.B(j, 2 * r + t)); };
    Func C("bdot_pair_first");
    C(j, i) = 0.0f;
    C(j, i) += p(0) + p(1);
    C.update().split(j, jo, ji, 16).vectorize(ji);
    Buffer<float> out(g.N, g.M);
    std::string ir = llvm_ir_of(C, &out);
    EXPECT_EQ(ir.find("dpbf16ps"), std::string::npos);
    for (int i2 = 0; i2 < g.M; i2++)
        for (int j2 = 0; j2 < g.N; j2++) {
            float s = 0.0f;
            for (int q = 0; q < g.K / 2; q++)
                s = s + std::fma((float)g.A(2 * q, i2), (float)g.B(j2, 2 * q),
                                 (float)g.A(2 * q + 1, i2) * (float)g.B(j2, 2 * q + 1));
            ASSERT_EQ(bits(out(j2, i2)), bits(s)) << j2 << "," << i2;
        }

    // Subnormals: the instruction would flush them; without the feature they are kept.
    Buffer<bfloat16_t> a(2), b(16, 2);
    a(0) = bfloat16_t::from_bits(0x0001);  // the least subnormal
    a(1) = bfloat16_t(0.0f);
    for (int q = 0; q < 16; q++) {
        b(q, 0) = bfloat16_t(1.0f);
        b(q, 1) = bfloat16_t(1.0f);
    }
    Var x("x");
    Func D("bdot_subnormal");
    D(x) = 0.0f;
    D(x) = D(x) + cast<float>(a(Expr(1))) * cast<float>(b(x, 1)) + cast<float>(a(Expr(0))) * cast<float>(b(x, 0));
    D.update().vectorize(x, 16);
    Buffer<float> o1(16), o2(16);
    std::string ir1 = llvm_ir_of(D, &o1);
    Target plain = Target::host();
    if (plain.has_feature("avx512bf16")) plain = plain.without_feature("avx512bf16");
    std::string ir2 = llvm_ir_of(D, &o2, plain);
    EXPECT_EQ(ir2.find("dpbf16ps"), std::string::npos);
    const float least = (float)bfloat16_t::from_bits(0x0001);
    for (int q = 0; q < 16; q++) {
        EXPECT_EQ(o2(q), least) << q;
        if (host_has_bf16()) EXPECT_EQ(o1(q), 0.0f) << "flushed by vdpbf16ps, " << q;
        else EXPECT_EQ(o1(q), least) << q;
    }
    if (host_has_bf16()) EXPECT_NE(ir1.find("dpbf16ps"), std::string::npos);
}

}  // namespace

namespace {

TEST(Bf16DotProducts, NaNAndInfinitiesGoThroughAsWritten) {
    // Per lane: NaN operands, an infinity times zero, infinities of both signs, an infinity
    // plus a finite product, and a finite lane: NaN where the written order gives NaN (whatever
    // its payload), the same infinity or value elsewhere.
    const float inf = INFINITY, nan = NAN;
    const float a1v[8] = {nan, inf, inf, inf, 2.0f, 1.5f, -inf, 3.0f};
    const float b1v[8] = {1.0f, 0.0f, 1.0f, 1.0f, 1.0f, 2.0f, 1.0f, -0.5f};
    const float a0v[8] = {1.0f, 1.0f, -inf, 1.0f, nan, 0.25f, -2.0f, 1.0f};
    const float b0v[8] = {1.0f, 1.0f, 1.0f, 2.0f, 0.0f, 4.0f, 1.0f, 0.125f};
    Buffer<bfloat16_t> a(2, 16), b(2, 16);
    for (int q = 0; q < 16; q++) {
        a(1, q) = bfloat16_t(a1v[q % 8]);
        b(1, q) = bfloat16_t(b1v[q % 8]);
        a(0, q) = bfloat16_t(a0v[q % 8]);
        b(0, q) = bfloat16_t(b0v[q % 8]);
    }
    Var x("x");
    Func D("bdot_special");
    D(x) = cast<float>(x % 3) - 1.0f;
    D(x) = D(x) + cast<float>(a(1, x)) * cast<float>(b(1, x)) + cast<float>(a(0, x)) * cast<float>(b(0, x));
    D.update().vectorize(x, 16);
    for (bool with_bf16 : {true, false}) {
        Target t = Target::host();
        if (!with_bf16 && t.has_feature("avx512bf16")) t = t.without_feature("avx512bf16");
        Buffer<float> o(16);
        std::string ir = llvm_ir_of(D, &o, t);
        if (with_bf16 && host_has_bf16()) EXPECT_NE(ir.find("dpbf16ps"), std::string::npos);
        for (int q = 0; q < 16; q++) {
            float acc = (float)(q % 3) - 1.0f;
            acc = std::fma(a1v[q % 8], b1v[q % 8], acc);
            acc = std::fma(a0v[q % 8], b0v[q % 8], acc);
            if (std::isnan(acc)) EXPECT_TRUE(std::isnan(o(q))) << q << " " << o(q);
            else EXPECT_EQ(bits(o(q)), bits(acc)) << q << ": " << o(q) << " vs " << acc;
        }
    }
}

}  // namespace

namespace {

TEST(Bf16DotProducts, ALongWrittenOutChainIsLeftAsWritten) {
    // 80 products added in turn in one definition: past the 64 steps code generation looks
    // through in one store, so the chain is compiled as written (no time quadratic in its
    // length), with the written order's result.
    Gemm g(1, 16, 80, 13);
    Var j("j"), i("i");
    Func C("bdot_long");
    C(j, i) = 0.0f;
    Expr e = C(j, i);
    for (int q = 0; q < g.K; q++) e = e + cast<float>(g.A(Expr(q), i)) * cast<float>(g.B(j, Expr(q)));
    C(j, i) = e;
    C.update().vectorize(j, 16);
    Buffer<float> out(g.N, g.M);
    std::string ir = llvm_ir_of(C, &out);
    EXPECT_EQ(ir.find("dpbf16ps"), std::string::npos);
    g.check(out, "long chain");
}

}  // namespace

namespace {

TEST(Bf16DotProducts, CodeGenerationFollowsTheHostCheck) {
    // The instruction is used exactly where the host has AVX-512 BF16 and its vdpbf16ps passed
    // the check of how it adds (on this project's Zen 5 machines it does); elsewhere the sums
    // are compiled as written. Without the feature the check is false.
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512bf16")) EXPECT_FALSE(internal::host_dpbf16ps_is_sequential());
    std::printf("vdpbf16ps adds as assumed on this CPU: %s\n", internal::host_dpbf16ps_is_sequential() ? "yes" : "no");
    Gemm g(2, 16, 8, 21);
    Var j("j"), i("i");
    RDom r(0, g.K / 2, "r");
    auto p = [&](int t) { return cast<float>(g.A(2 * r + t, i)) * cast<float>(g.B(j, 2 * r + t)); };
    Func C("bdot_follows_check");
    C(j, i) = 0.0f;
    C(j, i) = C(j, i) + p(0) + p(1);
    C.update().vectorize(j, 16);
    Buffer<float> out(g.N, g.M);
    std::string ir = llvm_ir_of(C, &out);
    EXPECT_EQ(ir.find("dpbf16ps") != std::string::npos, host_has_bf16());
    g.check(out, "follows the check");
}

}  // namespace
