// Dot products of bytes: int32 accumulations of widened u8 * i8 products, four at a time (an
// update's reduction unrolled by 4, or four terms written out), are vpdpbusd on AVX-512 VNNI /
// AVX-VNNI; the results are exact (32-bit wrapping) whatever the target.
#include <gtest/gtest.h>
#include <weft/weft.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace weft;

namespace {

bool host_has_vnni() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl");
#else
    return false;
#endif
}

/** The LLVM IR compiled for f (WEFT_DEBUG's output; compiled here, not read from the disk cache). */
std::string llvm_ir_of(Func f, const std::vector<int> &sizes, Buffer<int> *out) {
    clear_cache();
    set_debug(true);
    testing::internal::CaptureStderr();
    f.realize(*out);
    std::string err = testing::internal::GetCapturedStderr();
    set_debug(false);
    (void)sizes;
    size_t at = err.find("---- LLVM IR ----");
    return at == std::string::npos ? "" : err.substr(at);
}

struct Gemm {
    int M, N, K;
    Buffer<uint8_t> A;  // A(k, i)
    Buffer<int8_t> B;   // B(j, k)
    Gemm(int m, int n, int k, uint32_t seed) : M(m), N(n), K(k), A(k, m), B(n, k) {
        uint32_t s = seed;
        auto next = [&] { return s = s * 1664525u + 1013904223u, (int)(s >> 24); };
        for (int i = 0; i < M; i++)
            for (int kk = 0; kk < K; kk++) A(kk, i) = (uint8_t)next();
        for (int kk = 0; kk < K; kk++)
            for (int j = 0; j < N; j++) B(j, kk) = (int8_t)(next() - 128);
        A(0, 0) = 255;  // the extremes
        B(0, 0) = -128;
    }
    int32_t ref(int j, int i) const {
        uint32_t s = 0;  // (wrapping, as int32 arithmetic in weft)
        for (int kk = 0; kk < K; kk++) s += (uint32_t)((int32_t)A(kk, i) * (int32_t)B(j, kk));
        return (int32_t)s;
    }
    void check(const Buffer<int> &c, const std::string &what) const {
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) ASSERT_EQ(c(j, i), ref(j, i)) << what << " at " << j << "," << i;
    }
};

TEST(DotProducts, UnrolledByteProductsAreVpdpbusd) {
    const bool vnni = host_has_vnni();
    struct Case {
        const char *what;
        int lanes, unroll;
        bool swapped;  // int32(B) * int32(A)
        bool expect_vnni;
    };
    for (const Case &c : std::vector<Case>{{"16 lanes", 16, 4, false, true},
                                           {"8 lanes", 8, 4, false, true},
                                           {"4 lanes", 4, 4, false, true},
                                           {"operands swapped", 16, 4, true, true},
                                           {"two groups", 16, 8, false, true},
                                           {"a group and two more", 16, 6, false, true},
                                           {"three products", 16, 3, false, false}}) {
        Gemm g(5, 48, 96, 7);
        Var j("j"), i("i"), jo("jo"), ji("ji");
        RDom k(0, g.K, "k");
        RVar ko("ko"), ki("ki");
        Func C(std::string("dot_") + std::to_string(c.lanes) + "_" + std::to_string(c.unroll));
        C(j, i) = 0;
        Expr a = cast<int>(g.A(k, i)), b = cast<int>(g.B(j, k));
        C(j, i) += c.swapped ? b * a : a * b;
        C.update().split(j, jo, ji, c.lanes).split(k, ko, ki, c.unroll).reorder(ji, ki, jo, ko, i).vectorize(ji).unroll(ki);
        Buffer<int> out(g.N, g.M);
        std::string ir = llvm_ir_of(C, {g.N, g.M}, &out);
        g.check(out, c.what);
        if (vnni) {
            EXPECT_EQ(ir.find("vpdpbusd") != std::string::npos, c.expect_vnni) << c.what;
        }
    }
}

TEST(DotProducts, PackedOperandsAreDenseLoadsAndWrittenOutTermsMatch) {
    const bool vnni = host_has_vnni();
    Gemm g(3, 32, 64, 11);
    // B packed as Bp(t, j, kq) = B(j, 4 kq + t): the four bytes of each lane adjacent.
    Var j("j"), i("i"), jo("jo"), ji("ji");
    Buffer<int8_t> Bp(4, g.N, g.K / 4);
    for (int kq = 0; kq < g.K / 4; kq++)
        for (int jj = 0; jj < g.N; jj++)
            for (int t = 0; t < 4; t++) Bp(t, jj, kq) = g.B(jj, 4 * kq + t);
    RDom r(0, g.K / 4, "r");
    Func C("dot_written_out");
    C(j, i) = 0;
    Expr sum = 0;
    for (int q = 0; q < 4; q++) sum = sum + cast<int>(g.A(4 * r + q, i)) * cast<int>(Bp(q, j, r));
    C(j, i) += sum;
    C.update().split(j, jo, ji, 16).vectorize(ji);
    Buffer<int> out(g.N, g.M);
    std::string ir = llvm_ir_of(C, {g.N, g.M}, &out);
    g.check(out, "written out");
    if (vnni) {
        EXPECT_NE(ir.find("vpdpbusd"), std::string::npos);
        // The packed operand is one load of 64 bytes: no bytes shuffled.
        for (const char *v : {"shufflevector <16 x i8>", "shufflevector <32 x i8>", "shufflevector <64 x i8>"})
            EXPECT_EQ(ir.find(v), std::string::npos) << v << "\n" << ir;
    }
}

TEST(DotProducts, OtherTypesAreLeftAsTheyAre) {
    // u8 * u8 (vpdpbusd reads its second operand signed) and int16 accumulations: not matched,
    // and exact.
    Buffer<uint8_t> a(64), b(64);
    for (int q = 0; q < 64; q++) {
        a(q) = (uint8_t)(255 - q);
        b(q) = (uint8_t)(128 + q);
    }
    Var x("x"), xo("xo"), xi("xi");
    RDom k(0, 4, "k");
    Func f("dot_u8u8");
    f(x) = 0;
    f(x) += cast<int>(a(x * 0 + k)) * cast<int>(b(x + k));
    f.update().split(x, xo, xi, 16).reorder(xi, k, xo).vectorize(xi).unroll(k);
    Buffer<int> out(48);
    std::string ir = llvm_ir_of(f, {48}, &out);
    EXPECT_EQ(ir.find("vpdpbusd"), std::string::npos);
    for (int q = 0; q < 48; q++) {
        int s = 0;
        for (int kk = 0; kk < 4; kk++) s += a(kk) * b(q + kk);
        ASSERT_EQ(out(q), s) << q;
    }
}

TEST(DotProducts, SumsWrapAt32Bits) {
    // 255 * 127 * 70000 > 2^31: the accumulator wraps as int32 arithmetic does.
    Gemm g(1, 16, 70000, 3);
    for (int kk = 0; kk < g.K; kk++) {
        g.A(kk, 0) = 255;
        for (int j = 0; j < g.N; j++) g.B(j, kk) = (int8_t)(j % 2 ? 127 : -128);
    }
    Var j("j"), i("i");
    RDom k(0, g.K, "k");
    RVar ko("ko"), ki("ki");
    Func C("dot_wrap");
    C(j, i) = 0;
    C(j, i) += cast<int>(g.A(k, i)) * cast<int>(g.B(j, k));
    C.update().split(k, ko, ki, 4).reorder(j, ki, ko, i).vectorize(j).unroll(ki);
    Buffer<int> out(g.N, g.M);
    C.realize(out);
    g.check(out, "wrap");
}

}  // namespace
