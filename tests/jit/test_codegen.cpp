// Tests of the LLVM backend and the runtime on hand-built lowered IR.
#include <gtest/gtest.h>
#include <cstdio>
#include <unistd.h>
#include <sstream>
#include <fstream>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

#include "weft/Func.h"
#include "weft/Pipeline.h"
#include "ir/IR.h"
#include "llvm/CodeGen_LLVM.h"
#include "lower/LoweredFunc.h"
#include "runtime/Runtime.h"

using namespace weft;
using namespace weft::internal;

namespace {

Expr i32(int64_t v) { return IntImm::make(Int(32), v); }
Expr f32(double v) { return FloatImm::make(Float(32), v); }
Expr var(const std::string &n, Type t = Int(32)) { return Variable::make(t, n); }
Expr ramp(Expr base, int lanes, int stride = 1) { return Ramp::make(base, i32(stride), lanes); }
Expr bc(Expr v, int lanes) { return Broadcast::make(v, lanes); }

template <typename T>
weft_buffer_t make_buf(std::vector<T> &v) {
    weft_buffer_t b;
    std::memset(&b, 0, sizeof(b));
    b.host = v.data();
    b.dims = 1;
    b.dim[0].min = 0;
    b.dim[0].extent = (int32_t)v.size();
    b.dim[0].stride = 1;
    return b;
}

LoweredArg buf_arg(const std::string &n, Type t) { return LoweredArg{n, LoweredArg::Buffer, t, 1}; }
LoweredArg scalar_arg(const std::string &n, Type t) { return LoweredArg{n, LoweredArg::Scalar, t, 0}; }

struct Compiled {
    std::shared_ptr<CompiledModule> m;
    weft_context_t ctx;
    int32_t operator()(std::vector<void *> args) {
        std::memset(&ctx, 0, sizeof(ctx));
        return m->fn(args.data(), &ctx);
    }
};

Compiled compile(const std::string &name, std::vector<LoweredArg> args, Stmt body, std::string *ir = nullptr) {
    LoweredFunc f{name, std::move(args), std::move(body)};
    Compiled c;
    c.m = compile_llvm(f, host_cpu_info(), ir);
    EXPECT_NE(c.m->fn, nullptr);
    return c;
}

// Reference floor division / modulo.
int32_t ref_div(int32_t a, int32_t b) {
    if (b == 0) return 0;
    if (b == -1) return (int32_t)(0u - (uint32_t)a);
    int32_t q = a / b, r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) q--;
    return q;
}
int32_t ref_mod(int32_t a, int32_t b) {
    if (b == 0 || b == -1) return 0;
    int32_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

}  // namespace

TEST(CodeGenLLVM, HostInfo) {
    CPUTargetInfo t = host_cpu_info();
    EXPECT_FALSE(t.cpu.empty());
    EXPECT_FALSE(t.features.empty());
}

TEST(CodeGenLLVM, Elementwise) {
    // for i in [0, out.extent.0): out[i] = in[i] * 2 + 1
    Expr i = var("i");
    Stmt s = Store::make("out", Add::make(Mul::make(Load::make(Int(32), "in", i), i32(2)), i32(1)), i);
    Stmt loop = For::make("i", i32(0), var("out.extent.0"), ForType::Serial, s);
    std::string ir;
    Compiled c = compile("elementwise", {buf_arg("in", Int(32)), buf_arg("out", Int(32))}, loop, &ir);
    EXPECT_NE(ir.find("define"), std::string::npos);
    std::vector<int32_t> in(1003), out(1003, 0);
    for (size_t k = 0; k < in.size(); k++) in[k] = (int32_t)k - 500;
    weft_buffer_t bi = make_buf(in), bo = make_buf(out);
    ASSERT_EQ(c({&bi, &bo}), 0);
    for (size_t k = 0; k < in.size(); k++) ASSERT_EQ(out[k], in[k] * 2 + 1) << k;
}

/** The first element of v at a 64-byte boundary (v holds at least 15 more than used). */
static float *aligned64(std::vector<float> &v) {
    float *p = v.data();
    while ((uintptr_t)p % 64) p++;
    return p;
}
/** A one-dimensional buffer of n floats at p. */
static weft_buffer_t buf_at(float *p, int n) {
    weft_buffer_t b;
    std::memset(&b, 0, sizeof(b));
    b.host = p;
    b.dims = 1;
    b.dim[0] = {0, n, 1, 0};
    return b;
}

TEST(CodeGenLLVM, NontemporalStores) {
    // for i in [0, out.extent.0 / 16): out[ramp(16 i + off, 16)] = in[...] + 1, streaming: the
    // base alignment of out is unknown, so the store checks it at run time; sfence at the end.
    for (int off : {0, 1, 5}) {
        Expr i = var("i");
        Expr idx = ramp(Add::make(Mul::make(i, i32(16)), i32(off)), 16);
        Stmt s = Store::make("out", Add::make(Load::make(Float(32), "in", idx), Broadcast::make(f32(1), 16)), idx, 0, true);
        Stmt loop = For::make("i", i32(0), i32(8), ForType::Serial, s);
        std::string ir;
        Compiled c = compile("nontemporal" + std::to_string(off), {buf_arg("in", Float(32)), buf_arg("out", Float(32))},
                             loop, &ir);
        EXPECT_NE(ir.find("!nontemporal"), std::string::npos) << ir;
        EXPECT_NE(ir.find("llvm.x86.sse.sfence"), std::string::npos) << ir;
        // 64-byte aligned storage, used from element 0 and from element 3 (unaligned stores).
        for (int shift : {0, 3}) {
            std::vector<float> in(160), store(200, -7.0f);
            for (size_t k = 0; k < in.size(); k++) in[k] = (float)k;
            float *base = aligned64(store);
            weft_buffer_t bi = make_buf(in), bo = buf_at(base + shift, 140);
            ASSERT_EQ(c({&bi, &bo}), 0);
            for (int k = -shift; k < 150; k++) {
                float want = k >= off && k < off + 128 ? (float)k + 1 : -7.0f;
                ASSERT_EQ(base[shift + k], want) << "off " << off << " shift " << shift << " k " << k;
            }
        }
    }
}

TEST(CodeGenLLVM, StreamingStoresOfATransposedBlockCheckAlignmentOnce) {
    // for y in [0, 32): out[ramp(16 y, 1, 16)] = in[ramp(y, 64, 16)] * 2, streaming, the store's
    // index a multiple of 16 elements: the loop runs in blocks of 16 rows transposed in
    // registers, and a block's 16 rows are aligned together or not at all, so one check of the
    // address per block (not one per row). Exact with out's base aligned to 64 bytes and not.
    Expr y = var("y");
    Expr in_idx = Ramp::make(y, i32(64), 16);
    Expr out_idx = ramp(Mul::make(y, i32(16)), 16);
    Stmt st = Store::make("out", Mul::make(Load::make(Float(32), "in", in_idx), Broadcast::make(f32(2), 16)), out_idx, 16, true);
    Stmt loop = For::make("y", i32(0), i32(32), ForType::Serial, st);
    std::string ir;
    Compiled c = compile("nt_transposed", {buf_arg("in", Float(32)), buf_arg("out", Float(32))}, loop, &ir);
    EXPECT_NE(ir.find("!nontemporal"), std::string::npos) << ir;
    EXPECT_EQ(ir.find("masked.gather"), std::string::npos) << ir;
    size_t checks = 0;
    for (size_t at = ir.find("and i64"); at != std::string::npos; at = ir.find("and i64", at + 1))
        checks += ir.compare(ir.find(',', at) + 2, 2, "63") == 0;
    EXPECT_TRUE(checks >= 1 && checks <= 2) << checks << " checks (one per block of 16 rows; LLVM may unroll the two blocks)\n" << ir;
    for (int shift : {0, 3}) {
        std::vector<float> in(16 * 64 + 32), store(32 * 16 + 32, -7.0f);
        for (size_t k = 0; k < in.size(); k++) in[k] = (float)k;
        float *base = aligned64(store);
        weft_buffer_t bi = make_buf(in), bo = buf_at(base + shift, 32 * 16);
        ASSERT_EQ(c({&bi, &bo}), 0);
        for (int yy = 0; yy < 32; yy++)
            for (int i = 0; i < 16; i++) ASSERT_EQ(base[shift + yy * 16 + i], 2.0f * in[yy + 64 * i]) << shift << " " << yy << " " << i;
        EXPECT_EQ(base[shift + 32 * 16], -7.0f);
    }
}

TEST(CodeGenLLVM, ScalarArgsAndMinMax) {
    // out[0] = min(a, b); out[1] = max(a, b); out[2] = cast<int>(f * 2.5f); out[3] = select(flag, 7, 9)
    Expr a = var("a"), b = var("b");
    Stmt s = Block::make({Store::make("out", Min::make(a, b), i32(0)), Store::make("out", Max::make(a, b), i32(1)),
                          Store::make("out", Cast::make(Int(32), Mul::make(var("f", Float(32)), f32(2.5))), i32(2)),
                          Store::make("out", Select::make(var("flag", Bool()), i32(7), i32(9)), i32(3))});
    Compiled c = compile("scalars", {scalar_arg("a", Int(32)), scalar_arg("b", Int(32)), scalar_arg("f", Float(32)),
                                     scalar_arg("flag", Bool()), buf_arg("out", Int(32))},
                         s);
    std::vector<int32_t> out(4);
    weft_buffer_t bo = make_buf(out);
    int32_t av = -5, bv = 3;
    float fv = 3.0f;
    bool flag = false;
    ASSERT_EQ(c({&av, &bv, &fv, &flag, &bo}), 0);
    EXPECT_EQ(out[0], -5);
    EXPECT_EQ(out[1], 3);
    EXPECT_EQ(out[2], 7);
    EXPECT_EQ(out[3], 9);
    flag = true;
    ASSERT_EQ(c({&av, &bv, &fv, &flag, &bo}), 0);
    EXPECT_EQ(out[3], 7);
}

TEST(CodeGenLLVM, DivModScalar) {
    Expr a = var("a"), b = var("b");
    std::vector<Stmt> st;
    st.push_back(Store::make("out", Div::make(a, b), i32(0)));
    st.push_back(Store::make("out", Mod::make(a, b), i32(1)));
    st.push_back(Store::make("out", Div::make(a, i32(7)), i32(2)));
    st.push_back(Store::make("out", Mod::make(a, i32(7)), i32(3)));
    st.push_back(Store::make("out", Div::make(a, i32(-3)), i32(4)));
    st.push_back(Store::make("out", Mod::make(a, i32(-3)), i32(5)));
    st.push_back(Store::make("out", Div::make(a, i32(0)), i32(6)));
    st.push_back(Store::make("out", Mod::make(a, i32(0)), i32(7)));
    st.push_back(Store::make("out", Div::make(a, i32(-1)), i32(8)));
    st.push_back(Store::make("out", Mod::make(a, i32(-1)), i32(9)));
    // unsigned
    Expr ua = Cast::make(UInt(32), a), ub = Cast::make(UInt(32), b);
    st.push_back(Store::make("out", Cast::make(Int(32), Div::make(ua, ub)), i32(10)));
    st.push_back(Store::make("out", Cast::make(Int(32), Mod::make(ua, ub)), i32(11)));
    Compiled c = compile("divmod", {scalar_arg("a", Int(32)), scalar_arg("b", Int(32)), buf_arg("out", Int(32))},
                         Block::make(st));
    const int32_t IMIN = std::numeric_limits<int32_t>::min(), IMAX = std::numeric_limits<int32_t>::max();
    std::vector<int32_t> vals = {0, 1, -1, 2, -2, 3, -3, 7, -7, 8, -8, 13, -13, 100, -100, IMIN, IMAX, IMIN + 1};
    for (int32_t av : vals)
        for (int32_t bv : vals) {
            std::vector<int32_t> out(12, 12345);
            weft_buffer_t bo = make_buf(out);
            ASSERT_EQ(c({&av, &bv, &bo}), 0);
            EXPECT_EQ(out[0], ref_div(av, bv)) << av << " / " << bv;
            EXPECT_EQ(out[1], ref_mod(av, bv)) << av << " % " << bv;
            EXPECT_EQ(out[2], ref_div(av, 7)) << av;
            EXPECT_EQ(out[3], ref_mod(av, 7)) << av;
            EXPECT_EQ(out[4], ref_div(av, -3)) << av;
            EXPECT_EQ(out[5], ref_mod(av, -3)) << av;
            EXPECT_EQ(out[6], 0);
            EXPECT_EQ(out[7], 0);
            EXPECT_EQ(out[8], ref_div(av, -1));
            EXPECT_EQ(out[9], 0);
            uint32_t ua_ = (uint32_t)av, ub_ = (uint32_t)bv;
            EXPECT_EQ((uint32_t)out[10], ub_ ? ua_ / ub_ : 0u);
            EXPECT_EQ((uint32_t)out[11], ub_ ? ua_ % ub_ : 0u);
        }
}

TEST(CodeGenLLVM, DivModVector) {
    const int L = 8;
    // for x in [0, n/L): q[ramp] = a[ramp] / b[ramp]; r[ramp] = a[ramp] % b[ramp]; q3 = a / 3 (broadcast)
    Expr x = var("x");
    Expr idx = ramp(Mul::make(x, i32(L)), L);
    Expr av = Load::make(Int(32, L), "a", idx), bv = Load::make(Int(32, L), "b", idx);
    Stmt body = Block::make({Store::make("q", Div::make(av, bv), idx), Store::make("r", Mod::make(av, bv), idx),
                             Store::make("q3", Div::make(av, bc(i32(3), L)), idx),
                             Store::make("r3", Mod::make(av, bc(i32(3), L)), idx)});
    Stmt loop = For::make("x", i32(0), Div::make(var("a.extent.0"), i32(L)), ForType::Serial, body);
    Compiled c = compile("divmod_vec",
                         {buf_arg("a", Int(32)), buf_arg("b", Int(32)), buf_arg("q", Int(32)), buf_arg("r", Int(32)),
                          buf_arg("q3", Int(32)), buf_arg("r3", Int(32))},
                         loop);
    std::vector<int32_t> a, b;
    for (int i = -20; i <= 20; i++)
        for (int j = -5; j <= 5; j++) {
            a.push_back(i);
            b.push_back(j);
        }
    while (a.size() % L) {
        a.push_back(std::numeric_limits<int32_t>::min());
        b.push_back(-1);
    }
    size_t n = a.size();
    std::vector<int32_t> q(n), r(n), q3(n), r3(n);
    weft_buffer_t ba = make_buf(a), bb = make_buf(b), bq = make_buf(q), br = make_buf(r), bq3 = make_buf(q3),
                  br3 = make_buf(r3);
    ASSERT_EQ(c({&ba, &bb, &bq, &br, &bq3, &br3}), 0);
    for (size_t k = 0; k < n; k++) {
        ASSERT_EQ(q[k], ref_div(a[k], b[k])) << a[k] << " / " << b[k];
        ASSERT_EQ(r[k], ref_mod(a[k], b[k])) << a[k] << " % " << b[k];
        ASSERT_EQ(q3[k], ref_div(a[k], 3)) << a[k];
        ASSERT_EQ(r3[k], ref_mod(a[k], 3)) << a[k];
    }
}

TEST(CodeGenLLVM, VectorFloat16Lanes) {
    const int L = 16;
    // dense: out[ramp(16x)] = in[ramp(16x)] * 2 + 1; gather: ev[ramp(8x, 2)] ... strided
    Expr x = var("x");
    Expr idx = ramp(Mul::make(x, i32(L)), L);
    Expr v = Load::make(Float(32, L), "in", idx);
    Stmt s1 = Store::make("out", Add::make(Mul::make(v, bc(f32(2), L)), bc(f32(1), L)), idx);
    // strided gather: odd[16x + i] = in[2*(16x+i) + 1] for the first half
    Expr gidx = Ramp::make(Add::make(Mul::make(x, i32(2 * L)), i32(1)), i32(2), L);
    Stmt s2 = IfThenElse::make(LT::make(Mul::make(x, i32(2 * L)), var("in.extent.0")),
                               Store::make("odd", Load::make(Float(32, L), "in", gidx), idx));
    // scatter: rev[n-1-(16x+i)] = in[16x+i]
    Expr sidx = Ramp::make(Sub::make(Sub::make(var("in.extent.0"), i32(1)), Mul::make(x, i32(L))), i32(-1), L);
    Stmt s3 = Store::make("rev", v, sidx);
    Stmt loop = For::make("x", i32(0), Div::make(var("in.extent.0"), i32(L)), ForType::Serial, Block::make({s1, s2, s3}));
    std::string ir;
    Compiled c = compile("vec16",
                         {buf_arg("in", Float(32)), buf_arg("out", Float(32)), buf_arg("odd", Float(32)),
                          buf_arg("rev", Float(32))},
                         loop, &ir);
    const int n = 256;
    std::vector<float> in(n), out(n), odd(n, -1), rev(n);
    for (int k = 0; k < n; k++) in[k] = 0.5f * k - 3;
    weft_buffer_t bi = make_buf(in), bo = make_buf(out), bd = make_buf(odd), br = make_buf(rev);
    ASSERT_EQ(c({&bi, &bo, &bd, &br}), 0);
    for (int k = 0; k < n; k++) {
        ASSERT_FLOAT_EQ(out[k], in[k] * 2 + 1);
        ASSERT_FLOAT_EQ(rev[n - 1 - k], in[k]);
        if (k < n / 2) ASSERT_FLOAT_EQ(odd[k], in[2 * k + 1]) << k;
        else ASSERT_EQ(odd[k], -1);
    }
    EXPECT_NE(ir.find("<16 x float>"), std::string::npos);
}

TEST(CodeGenLLVM, VectorSelectAndReduce) {
    const int L = 8;
    Expr idx = ramp(i32(0), L);
    Expr v = Load::make(Int(32, L), "in", idx);
    // out[0..7] = select(v > 0, v, -v)
    Stmt s1 = Store::make("out", Select::make(GT::make(v, bc(i32(0), L)), v, Sub::make(bc(i32(0), L), v)), idx);
    // sums[0] = sum(v); sums[1..2] = pairwise groups of 4; sums[3] = max(v); fsum[0] = sum(float v)
    Stmt s2 = Store::make("sums", VectorReduce::make(VectorReduce::Add, v, 1), i32(0));
    Stmt s3 = Store::make("sums", VectorReduce::make(VectorReduce::Add, v, 2), ramp(i32(1), 2));
    Stmt s4 = Store::make("sums", VectorReduce::make(VectorReduce::Max, v, 1), i32(3));
    Stmt s5 = Store::make("sums", VectorReduce::make(VectorReduce::Min, v, 1), i32(4));
    Expr fv = Cast::make(Float(32, L), v);
    Stmt s6 = Store::make("fsum", VectorReduce::make(VectorReduce::Add, fv, 1), i32(0));
    Stmt s7 = Store::make("fsum", VectorReduce::make(VectorReduce::Max, fv, 1), i32(1));
    Compiled c = compile("selred", {buf_arg("in", Int(32)), buf_arg("out", Int(32)), buf_arg("sums", Int(32)),
                                    buf_arg("fsum", Float(32))},
                         Block::make({s1, s2, s3, s4, s5, s6, s7}));
    std::vector<int32_t> in = {3, -1, 4, -1, 5, -9, 2, 6}, out(8), sums(5);
    std::vector<float> fsum(2);
    weft_buffer_t bi = make_buf(in), bo = make_buf(out), bs = make_buf(sums), bf = make_buf(fsum);
    ASSERT_EQ(c({&bi, &bo, &bs, &bf}), 0);
    for (int k = 0; k < 8; k++) EXPECT_EQ(out[k], std::abs(in[k]));
    EXPECT_EQ(sums[0], 9);
    EXPECT_EQ(sums[1], 3 - 1 + 4 - 1);
    EXPECT_EQ(sums[2], 5 - 9 + 2 + 6);
    EXPECT_EQ(sums[3], 6);
    EXPECT_EQ(sums[4], -9);
    EXPECT_FLOAT_EQ(fsum[0], 9.0f);
    EXPECT_FLOAT_EQ(fsum[1], 6.0f);
}

TEST(CodeGenLLVM, SaturatingCasts) {
    const int L = 8;
    Expr idx = ramp(i32(0), L);
    Expr v = Load::make(Float(32, L), "in", idx);
    Stmt s = Block::make({Store::make("i32", Cast::make(Int(32, L), v), idx),
                          Store::make("u8", Cast::make(UInt(8, L), v), idx),
                          Store::make("i8", Cast::make(Int(8, L), v), idx),
                          Store::make("b", Cast::make(Bool(L), v), idx)});
    // scalar path too
    Stmt s2 = For::make("k", i32(0), i32(L), ForType::Serial,
                        Store::make("i32s", Cast::make(Int(32), Load::make(Float(32), "in", var("k"))), var("k")));
    Compiled c = compile("casts", {buf_arg("in", Float(32)), buf_arg("i32", Int(32)), buf_arg("u8", UInt(8)),
                                   buf_arg("i8", Int(8)), buf_arg("b", Bool()), buf_arg("i32s", Int(32))},
                         Block::make(s, s2));
    float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    std::vector<float> in = {nan, inf, -inf, 3e9f, -3e9f, 2.7f, -2.7f, 0.0f};
    std::vector<int32_t> o32(L), o32s(L);
    std::vector<uint8_t> ou8(L), ob(L);
    std::vector<int8_t> oi8(L);
    weft_buffer_t b0 = make_buf(in), b1 = make_buf(o32), b2 = make_buf(ou8), b3 = make_buf(oi8), b4 = make_buf(ob),
                  b5 = make_buf(o32s);
    ASSERT_EQ(c({&b0, &b1, &b2, &b3, &b4, &b5}), 0);
    const int32_t IMAX = std::numeric_limits<int32_t>::max(), IMIN = std::numeric_limits<int32_t>::min();
    std::vector<int32_t> e32 = {0, IMAX, IMIN, IMAX, IMIN, 2, -2, 0};
    std::vector<int> eu8 = {0, 255, 0, 255, 0, 2, 0, 0};
    std::vector<int> ei8 = {0, 127, -128, 127, -128, 2, -2, 0};
    std::vector<int> eb = {1, 1, 1, 1, 1, 1, 1, 0};
    for (int k = 0; k < L; k++) {
        EXPECT_EQ(o32[k], e32[k]) << k;
        EXPECT_EQ(o32s[k], e32[k]) << k;
        EXPECT_EQ((int)ou8[k], eu8[k]) << k;
        EXPECT_EQ((int)oi8[k], ei8[k]) << k;
        EXPECT_EQ((int)ob[k], eb[k]) << k;
    }
}

TEST(CodeGenLLVM, IntCastsAndBoolBuffers) {
    // out[i] = cast<int32>(cast<uint8>(in[i])) + cast<int32>(cast<int8>(in[i])); flags[i] = in[i] > 0 && !flags_in[i]
    Expr i = var("i");
    Expr x = Load::make(Int(32), "in", i);
    Stmt s1 = Store::make("out", Add::make(Cast::make(Int(32), Cast::make(UInt(8), x)), Cast::make(Int(32), Cast::make(Int(8), x))), i);
    Stmt s2 = Store::make("flags", And::make(GT::make(x, i32(0)), Not::make(Load::make(Bool(), "flags_in", i))), i);
    Compiled c = compile("intcasts", {buf_arg("in", Int(32)), buf_arg("flags_in", Bool()), buf_arg("out", Int(32)),
                                      buf_arg("flags", Bool())},
                         For::make("i", i32(0), var("in.extent.0"), ForType::Serial, Block::make(s1, s2)));
    std::vector<int32_t> in = {-1, 0, 1, 255, 256, 300, -129, 127}, out(8);
    std::vector<uint8_t> fin = {0, 1, 0, 1, 0, 1, 0, 0}, fout(8, 77);
    weft_buffer_t b0 = make_buf(in), b1 = make_buf(fin), b2 = make_buf(out), b3 = make_buf(fout);
    ASSERT_EQ(c({&b0, &b1, &b2, &b3}), 0);
    for (int k = 0; k < 8; k++) {
        EXPECT_EQ(out[k], (int32_t)(uint8_t)in[k] + (int32_t)(int8_t)in[k]) << k;
        EXPECT_EQ((int)fout[k], (in[k] > 0 && !fin[k]) ? 1 : 0) << k;
    }
}

TEST(CodeGenLLVM, ParallelFor) {
    // parallel i in [0, n): out[i] = i + offset; nested parallel j in [0, 4): grid[i*4 + j] = i - j
    Expr i = var("i"), j = var("j");
    Stmt inner = For::make("j", i32(0), i32(4), ForType::Parallel,
                           Store::make("grid", Sub::make(i, j), Add::make(Mul::make(i, i32(4)), j)));
    Stmt body = Block::make(Store::make("out", Add::make(i, var("offset")), i), inner);
    Stmt loop = For::make("i", i32(0), var("out.extent.0"), ForType::Parallel, body);
    Compiled c = compile("par", {scalar_arg("offset", Int(32)), buf_arg("out", Int(32)), buf_arg("grid", Int(32))},
                         LetStmt::make("unused", i32(3), loop));
    const int n = 1000;
    std::vector<int32_t> out(n, -1), grid(4 * n, -1);
    weft_buffer_t bo = make_buf(out), bg = make_buf(grid);
    int32_t offset = 0;
    for (int rep = 0; rep < 3; rep++) {
        offset = rep * 10;
        ASSERT_EQ(c({&offset, &bo, &bg}), 0);
        for (int k = 0; k < n; k++) ASSERT_EQ(out[k], k + offset);
        for (int k = 0; k < 4 * n; k++) ASSERT_EQ(grid[k], k / 4 - k % 4);
    }
    EXPECT_GE(weft_rt_num_threads(), 1);
}

TEST(CodeGenLLVM, ParallelFromManyThreads) {
    Expr i = var("i");
    Stmt loop = For::make("i", i32(0), var("out.extent.0"), ForType::Parallel,
                          Store::make("out", Mul::make(i, i32(3)), i));
    Compiled c = compile("par_mt", {buf_arg("out", Int(32))}, loop);
    std::vector<std::thread> ts;
    std::atomic<int> bad{0};
    for (int t = 0; t < 4; t++)
        ts.emplace_back([&] {
            for (int rep = 0; rep < 20; rep++) {
                std::vector<int32_t> out(500, -1);
                weft_buffer_t bo = make_buf(out);
                weft_context_t ctx;
                std::memset(&ctx, 0, sizeof(ctx));
                void *args[1] = {&bo};
                if (c.m->fn(args, &ctx) != 0) bad++;
                for (int k = 0; k < 500; k++)
                    if (out[k] != 3 * k) bad++;
            }
        });
    for (auto &t : ts) t.join();
    EXPECT_EQ(bad.load(), 0);
}

TEST(CodeGenLLVM, HeapAndStackAllocate) {
    // tmp (heap, n elems): tmp[i] = in[i] + 1; st (stack, 4): st[k] = k*10;  out[i] = tmp[n-1-i] + st[i % 4]
    Expr i = var("i"), n = var("in.extent.0");
    Stmt fill = For::make("i", i32(0), n, ForType::Serial, Store::make("tmp", Add::make(Load::make(Int(32), "in", i), i32(1)), i));
    Stmt fills = For::make("k", i32(0), i32(4), ForType::Serial, Store::make("st", Mul::make(var("k"), i32(10)), var("k")));
    Stmt use = For::make("i", i32(0), n, ForType::Parallel,
                         Store::make("out", Add::make(Load::make(Int(32), "tmp", Sub::make(Sub::make(n, i32(1)), i)),
                                                      Load::make(Int(32), "st", Mod::make(i, i32(4)))),
                                     i));
    Stmt body = Allocate::make("tmp", Int(32), Cast::make(Int(64), n), MemoryType::Heap,
                               Allocate::make("st", Int(32), IntImm::make(Int(64), 4), MemoryType::Stack,
                                              Block::make({fill, fills, use})));
    Compiled c = compile("alloc", {buf_arg("in", Int(32)), buf_arg("out", Int(32))}, body);
    for (int n_ : {1, 7, 100, 5000}) {
        std::vector<int32_t> in(n_), out(n_);
        for (int k = 0; k < n_; k++) in[k] = k * k;
        weft_buffer_t bi = make_buf(in), bo = make_buf(out);
        ASSERT_EQ(c({&bi, &bo}), 0);
        for (int k = 0; k < n_; k++) ASSERT_EQ(out[k], in[n_ - 1 - k] + 1 + (k % 4) * 10);
    }
}

TEST(CodeGenLLVM, AssertFails) {
    Expr n = var("in.extent.0");
    Stmt st = Store::make("in", i32(42), i32(0));
    Stmt a = AssertStmt::make(GE::make(n, i32(10)), "extent % too small, need % (%)", {n, i32(10)});
    // A failing assertion inside a heap allocation and inside a parallel loop body.
    Stmt inner = Allocate::make("tmp", Float(32), IntImm::make(Int(64), 1000), MemoryType::Heap,
                                Block::make(Store::make("tmp", f32(1), i32(0)),
                                            For::make("p", i32(0), i32(100), ForType::Parallel,
                                                      AssertStmt::make(NE::make(var("p"), var("bad")),
                                                                       "bad index %", {var("p")}))));
    Compiled c = compile("asserts", {scalar_arg("bad", Int(32)), buf_arg("in", Int(32))}, Block::make({a, st, inner}));
    std::vector<int32_t> small(5), big(20);
    weft_buffer_t bs = make_buf(small), bb = make_buf(big);
    int32_t bad = -1;
    EXPECT_EQ(c({&bad, &bs}), -1);
    EXPECT_EQ(c.ctx.error_code, -1);
    EXPECT_STREQ(c.ctx.error, "extent 5 too small, need 10 (%)");
    EXPECT_EQ(small[0], 0);  // the store after the assertion did not run
    EXPECT_EQ(c({&bad, &bb}), 0);
    EXPECT_EQ(big[0], 42);
    bad = 37;
    EXPECT_EQ(c({&bad, &bb}), -1);
    EXPECT_STREQ(c.ctx.error, "bad index 37");
}

// A failure frees every allocation live where it happens, and nothing else: through one block
// per function that frees every heap slot (null until allocated, null again once freed), so the
// code grows with failures plus allocations, not their product (a pipeline of N stages at root
// freed up to N buffers at each of N failure sites). 60 nested allocations with a failure site at
// each depth, then 40 allocations one after another each followed by one: a failure at any of
// them, or none, leaves the memory in use as it was (no leak, no double free), and the module
// frees each slot about twice (its scope's end and the failure block), not once per site.
TEST(CodeGenLLVM, AFailureFreesWhatIsLiveThroughOneBlock) {
    const int kNested = 60, kSequential = 40;
    Stmt inner = AssertStmt::make(NE::make(var("bad"), i32(kNested)), "failed at %", {var("bad")});
    for (int i = kNested - 1; i >= 0; i--) {
        std::string n = "nest" + std::to_string(i);
        inner = Allocate::make(n, Float(32), IntImm::make(Int(64), 4096 + i), MemoryType::Heap,
                               Block::make({Store::make(n, f32(i), i32(0)),
                                            AssertStmt::make(NE::make(var("bad"), i32(i)), "failed at %", {var("bad")}),
                                            inner}));
    }
    std::vector<Stmt> seq = {inner};
    for (int i = 0; i < kSequential; i++) {
        std::string n = "seq" + std::to_string(i);
        int site = kNested + 1 + i;
        seq.push_back(Allocate::make(n, Float(32), IntImm::make(Int(64), 2048 + i), MemoryType::Heap,
                                     Store::make(n, f32(i), i32(0))));
        seq.push_back(AssertStmt::make(NE::make(var("bad"), i32(site)), "failed at %", {var("bad")}));
    }
    std::string ir;
    Compiled c = compile("fail_frees", {scalar_arg("bad", Int(32))}, Block::make(seq), &ir);
    size_t frees = 0;
    for (size_t at = ir.find("@weft_rt_free("); at != std::string::npos; at = ir.find("@weft_rt_free(", at + 1)) frees++;
    EXPECT_LE(frees, (size_t)(3 * (kNested + kSequential))) << "frees emitted per failure site";
    int64_t in_use0, peak0, pooled0, allocs0;
    weft_rt_memory_stats(&in_use0, &peak0, &pooled0, &allocs0);
    for (int32_t bad : {-1, 0, 1, 17, kNested - 1, kNested, kNested + 1, kNested + 20, kNested + kSequential}) {
        int32_t rc = c({&bad});
        if (bad < 0) EXPECT_EQ(rc, 0);
        else EXPECT_EQ(rc, -1) << bad;
        if (bad >= 0) EXPECT_EQ(std::string(c.ctx.error), "failed at " + std::to_string(bad));
        int64_t in_use, peak, pooled, allocs;
        weft_rt_memory_stats(&in_use, &peak, &pooled, &allocs);
        EXPECT_EQ(in_use, in_use0) << "after a failure at " << bad;
    }
}

TEST(CodeGenLLVM, MathIntrinsics) {
    const int L = 8;
    Expr idx = ramp(i32(0), L);
    Expr v = Load::make(Float(32, L), "in", idx);
    auto call = [&](const char *nm, std::vector<Expr> a) { return Call::make_intrinsic(a[0].type(), nm, a); };
    Stmt s = Block::make({
        Store::make("o_tanh", call("tanh", {v}), idx),
        Store::make("o_exp", call("exp", {v}), idx),
        Store::make("o_round", call("round", {v}), idx),
        Store::make("o_floor", call("floor", {v}), idx),
        Store::make("o_pow", call("pow", {call("abs", {v}), bc(f32(1.5), L)}), idx),
        Store::make("o_mod", Mod::make(v, bc(f32(1.5), L)), idx),
        // scalar versions
        For::make("k", i32(0), i32(L), ForType::Serial,
                  Block::make(Store::make("s_tanh", call("tanh", {Load::make(Float(32), "in", var("k"))}), var("k")),
                              Store::make("s_misc",
                                          Add::make(call("sqrt", {call("abs", {Load::make(Float(32), "in", var("k"))})}),
                                                    Add::make(call("sin", {Load::make(Float(32), "in", var("k"))}),
                                                              call("likely", {call("log", {f32(2)})}))),
                                          var("k")))),
    });
    Compiled c = compile("math", {buf_arg("in", Float(32)), buf_arg("o_tanh", Float(32)), buf_arg("o_exp", Float(32)),
                                  buf_arg("o_round", Float(32)), buf_arg("o_floor", Float(32)),
                                  buf_arg("o_pow", Float(32)), buf_arg("o_mod", Float(32)),
                                  buf_arg("s_tanh", Float(32)), buf_arg("s_misc", Float(32))},
                         s);
    std::vector<float> in = {-2.5f, -1.5f, -0.5f, 0.0f, 0.5f, 1.5f, 2.5f, 3.7f};
    std::vector<std::vector<float>> o(8, std::vector<float>(L));
    std::vector<weft_buffer_t> bufs;
    bufs.push_back(make_buf(in));
    for (auto &x : o) bufs.push_back(make_buf(x));
    std::vector<void *> args;
    for (auto &bb : bufs) args.push_back(&bb);
    ASSERT_EQ(c(args), 0);
    for (int k = 0; k < L; k++) {
        float x = in[k];
        EXPECT_NEAR(o[0][k], std::tanh(x), 1e-6f);
        EXPECT_NEAR(o[1][k], std::exp(x), 1e-5f * std::exp(x));
        EXPECT_EQ(o[2][k], std::nearbyint(x));  // half to even
        EXPECT_EQ(o[3][k], std::floor(x));
        EXPECT_NEAR(o[4][k], std::pow(std::fabs(x), 1.5f), 1e-5f);
        EXPECT_NEAR(o[5][k], x - 1.5f * std::floor(x / 1.5f), 1e-6f);
        EXPECT_NEAR(o[6][k], std::tanh(x), 1e-6f);
        EXPECT_NEAR(o[7][k], std::sqrt(std::fabs(x)) + std::sin(x) + std::log(2.0f), 1e-5f);
    }
}

TEST(CodeGenLLVM, RuntimeMallocAndErrors) {
    weft_context_t ctx;
    std::memset(&ctx, 0, sizeof(ctx));
    void *p = weft_rt_malloc(&ctx, 100);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ((uintptr_t)p % 64, 0u);
    std::memset(p, 1, 100);
    weft_rt_free(&ctx, p);
    void *q = weft_rt_malloc(&ctx, 120);  // same size class: reused
    EXPECT_EQ(p, q);
    weft_rt_free(&ctx, q);
    void *z = weft_rt_malloc(&ctx, 0);
    EXPECT_NE(z, nullptr);
    weft_rt_free(&ctx, z);
    EXPECT_EQ(ctx.error_code, 0);
    EXPECT_EQ(weft_rt_malloc(&ctx, -5), nullptr);
    EXPECT_EQ(ctx.error_code, -1);
    EXPECT_EQ(weft_rt_malloc(&ctx, (int64_t(1) << 41)), nullptr);
    // Only the first error is kept.
    std::string first = ctx.error;
    int64_t args[2] = {1, 2};
    EXPECT_EQ(weft_rt_assert_fail(&ctx, "x % y %", args, 2), -1);
    EXPECT_EQ(first, ctx.error);
    std::memset(&ctx, 0, sizeof(ctx));
    std::string longmsg(5000, 'a');
    EXPECT_EQ(weft_rt_assert_fail(&ctx, longmsg.c_str(), nullptr, 0), -1);
    EXPECT_EQ(std::strlen(ctx.error), sizeof(ctx.error) - 1);
}

/** Thread t allocates `reps` blocks of varied sizes one after another, fills each with its own
    byte, yields, checks the bytes and frees it: the number of bytes found wrong (or failed
    allocations). */
static int churn_blocks(weft_context_t *ctx, int t, int reps, int salt) {
    int bad = 0;
    for (int rep = 0; rep < reps; rep++) {
        int64_t bytes = 64 + ((rep * 7 + t * 13 + salt) % 9) * 500;
        unsigned char *p = (unsigned char *)weft_rt_malloc(ctx, bytes);
        if (!p) {
            bad++;
            continue;
        }
        std::memset(p, t + 1, (size_t)bytes);
        std::this_thread::yield();
        for (int64_t i = 0; i < bytes; i += 61)
            if (p[i] != t + 1) bad++;
        weft_rt_free(ctx, p);
    }
    return bad;
}

// Many threads allocating and freeing at once (blocks allocated inside parallel loops): every
// block is whole and its own (no two threads get the same one), the byte counts return to where
// they were, and a block one thread frees is reused by another before the system is asked.
TEST(CodeGenLLVM, RuntimeMallocFromManyThreads) {
    int64_t in_use0, peak0, pooled0, allocs0;
    weft_rt_memory_stats(&in_use0, &peak0, &pooled0, &allocs0);
    std::atomic<int> bad{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < 8; t++)
        ts.emplace_back([&, t] {
            weft_context_t ctx;
            std::memset(&ctx, 0, sizeof(ctx));
            bad += churn_blocks(&ctx, t, 2000, 0);
        });
    for (auto &th : ts) th.join();
    EXPECT_EQ(bad.load(), 0);
    int64_t in_use, peak, pooled, allocs;
    weft_rt_memory_stats(&in_use, &peak, &pooled, &allocs);
    EXPECT_EQ(in_use, in_use0);
    EXPECT_LE(allocs - allocs0, 8 * 9) << "more blocks from the system than threads times sizes";
    // A block freed on another thread is taken here.
    weft_context_t ctx;
    std::memset(&ctx, 0, sizeof(ctx));
    void *q = nullptr;
    std::thread([&] { q = weft_rt_malloc(&ctx, 1 << 20); }).join();
    weft_rt_free(&ctx, q);  // into this thread's shard
    void *r = nullptr;
    std::thread([&] { r = weft_rt_malloc(&ctx, 1 << 20); }).join();
    EXPECT_EQ(r, q);
    weft_rt_free(&ctx, r);
}

// Inside a run (a pipeline's call, a thread's part of a parallel loop) a thread's freed block
// of each size class is kept for its next allocation of the class, counted in use, and handed
// back to the pool when the outermost run ends; runs on many threads at once, nested runs, and
// blocks freed outside any run (which go straight to the pool) leave the counts where they were.
TEST(CodeGenLLVM, RuntimeBlocksReusedWithinARunOnManyThreads) {
    weft_context_t ctx;
    std::memset(&ctx, 0, sizeof(ctx));
    int64_t in_use0, peak0, pooled0, allocs0;
    weft_rt_memory_stats(&in_use0, &peak0, &pooled0, &allocs0);
    weft_rt_enter_run();
    void *a = weft_rt_malloc(&ctx, 1000);
    weft_rt_free(&ctx, a);
    int64_t in_use, peak, pooled, allocs;
    weft_rt_memory_stats(&in_use, &peak, &pooled, &allocs);
    EXPECT_EQ(in_use, in_use0 + 1024) << "kept by the thread, counted in use";
    weft_rt_enter_run();  // nested: leaving it keeps the blocks
    void *b = weft_rt_malloc(&ctx, 900);  // the same class
    EXPECT_EQ(b, a);
    void *c = weft_rt_malloc(&ctx, 1000);  // the class's block is taken: another
    EXPECT_NE(c, b);
    weft_rt_free(&ctx, b);
    weft_rt_free(&ctx, c);  // (the class's slot is full: to the pool)
    weft_rt_leave_run();
    weft_rt_memory_stats(&in_use, &peak, &pooled, &allocs);
    EXPECT_EQ(in_use, in_use0 + 1024);
    weft_rt_leave_run();
    weft_rt_memory_stats(&in_use, &peak, &pooled, &allocs);
    EXPECT_EQ(in_use, in_use0);
    weft_rt_enter_run();  // a bad size inside a run: still the clear error, no kept block
    weft_context_t bad_ctx;
    std::memset(&bad_ctx, 0, sizeof(bad_ctx));
    EXPECT_EQ(weft_rt_malloc(&bad_ctx, -5), nullptr);
    EXPECT_NE(std::string(bad_ctx.error).find("out of range"), std::string::npos) << bad_ctx.error;
    weft_rt_leave_run();
    weft_rt_enter_run();  // a block of more than 1 MiB goes back to the pool at once
    void *big = weft_rt_malloc(&ctx, (1 << 20) + 1);
    weft_rt_free(&ctx, big);
    weft_rt_memory_stats(&in_use, &peak, &pooled, &allocs);
    EXPECT_EQ(in_use, in_use0);
    weft_rt_leave_run();
    void *d = weft_rt_malloc(&ctx, 1000);  // outside a run: from the pool
    weft_rt_free(&ctx, d);
    weft_rt_memory_stats(&in_use, &peak, &pooled, &allocs);
    EXPECT_EQ(in_use, in_use0);
    std::atomic<int> bad{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < 8; t++)
        ts.emplace_back([&, t] {
            weft_context_t tc;
            std::memset(&tc, 0, sizeof(tc));
            for (int run = 0; run < 50; run++) {
                weft_rt_enter_run();
                bad += churn_blocks(&tc, t, 40, run);
                weft_rt_leave_run();
            }
        });
    for (auto &th : ts) th.join();
    EXPECT_EQ(bad.load(), 0);
    weft_rt_memory_stats(&in_use, &peak, &pooled, &allocs);
    EXPECT_EQ(in_use, in_use0);
}

// Blocks of 4 MiB and more are 2 MiB aligned and offered huge pages (a hint): every byte is
// usable, the pool takes them back and hands them out again, and sizes past a power of two and
// past the largest size class still work.
TEST(CodeGenLLVM, RuntimeMallocLargeBlocks) {
    weft_context_t ctx;
    std::memset(&ctx, 0, sizeof(ctx));
    int64_t in_use0, peak0, pooled0, allocs0;
    weft_rt_memory_stats(&in_use0, &peak0, &pooled0, &allocs0);
    for (int64_t bytes : {int64_t(4) << 20, (int64_t(6) << 20) + 7, int64_t(3) << 20, (int64_t(1) << 30) + 4096}) {
        unsigned char *p = (unsigned char *)weft_rt_malloc(&ctx, bytes);
        ASSERT_NE(p, nullptr) << bytes;
        EXPECT_EQ((uintptr_t)p % 64, 0u);
        // Touch every page (every huge page of the largest), first and last bytes included.
        const int64_t step = bytes > (int64_t(64) << 20) ? int64_t(2) << 20 : 4096;
        for (int64_t i = 0; i < bytes; i += step) p[i] = (unsigned char)(i >> 12);
        p[bytes - 1] = 0xAB;
        bool same = p[bytes - 1] == 0xAB;
        for (int64_t i = 0; i < bytes && same; i += step) same = p[i] == (unsigned char)(i >> 12);
        EXPECT_TRUE(same) << bytes;
        weft_rt_free(&ctx, p);
        unsigned char *q = (unsigned char *)weft_rt_malloc(&ctx, bytes);
        if (bytes <= (int64_t(1) << 30)) EXPECT_EQ(q, p) << "a pooled block is reused: " << bytes;
        weft_rt_free(&ctx, q);
    }
    int64_t in_use, peak, pooled, allocs;
    weft_rt_memory_stats(&in_use, &peak, &pooled, &allocs);
    EXPECT_EQ(in_use, in_use0);
}

// WEFT_PERF_MAP=1: the JIT's functions (the pipeline and the body of its parallel loop) are
// written to /tmp/perf-<pid>.map for perf, each as "address size name", the entry point among
// them. (Read once per process: skipped where an earlier test compiled first.)
TEST(CodeGenLLVM, PerfMapNamesTheJitFunctions) {
    setenv("WEFT_PERF_MAP", "1", 1);
    const std::string path = "/tmp/perf-" + std::to_string((long long)getpid()) + ".map";
    std::remove(path.c_str());
    Var x("x"), y("y");
    Func f("perf_mapped");
    f(x, y) = x * 3 + y;
    f.parallel(y);
    Buffer<int> out = f.realize({16, 8});
    unsetenv("WEFT_PERF_MAP");
    EXPECT_EQ(out(5, 2), 17);
    std::ifstream in(path);
    ASSERT_TRUE(in.good()) << path;
    std::string line;
    int entries = 0, parallel_bodies = 0;
    while (std::getline(in, line)) {
        std::istringstream is(line);
        std::string addr, size, name;
        is >> addr >> size >> name;
        EXPECT_GT(std::stoull(addr, nullptr, 16), 0u) << line;
        EXPECT_GT(std::stoull(size, nullptr, 16), 0u) << line;
        entries += name.find("perf_mapped") == std::string::npos ? 0 : 1;
        parallel_bodies += name.find(".par.") == std::string::npos ? 0 : 1;
    }
    EXPECT_GE(entries, 1);
    EXPECT_GE(parallel_bodies, 1);
    std::remove(path.c_str());
}

TEST(CodeGenLLVM, ParallelForFirstError) {
    weft_context_t ctx;
    std::memset(&ctx, 0, sizeof(ctx));
    std::atomic<int> count{0};
    auto body = [](weft_context_t *, int32_t i, void *cl) -> int32_t {
        ((std::atomic<int> *)cl)->fetch_add(1);
        return i == 50 ? 7 : 0;
    };
    EXPECT_EQ(weft_rt_parallel_for(&ctx, body, &count, 0, 100), 7);
    count = 0;
    auto ok = [](weft_context_t *, int32_t, void *cl) -> int32_t {
        ((std::atomic<int> *)cl)->fetch_add(1);
        return 0;
    };
    EXPECT_EQ(weft_rt_parallel_for(&ctx, ok, &count, -10, 1000), 0);
    EXPECT_EQ(count.load(), 1000);
}

// Each index runs exactly once, whatever the extent and however uneven the work (slow
// iterations make threads steal from each other's ranges), also with several callers at once.
TEST(CodeGenLLVM, ParallelForEachIndexOnceUnderStealing) {
    struct Closure {
        std::vector<std::atomic<int>> hits;
        int min;
        explicit Closure(int n, int m) : hits(n), min(m) {}
    };
    auto body = [](weft_context_t *, int32_t i, void *cl) -> int32_t {
        auto *c = (Closure *)cl;
        int k = i - c->min;
        if (k % 7 == 0 || (k > 40 && k < 60)) {  // uneven: some iterations are slow
            volatile double x = 0;
            for (int s = 0; s < 20000; s++) x = x + s * 1e-9;
        }
        c->hits[k].fetch_add(1);
        return 0;
    };
    for (int extent : {0, 1, 2, 3, 5, 17, 64, 100, 257, 1000}) {
        weft_context_t ctx;
        std::memset(&ctx, 0, sizeof(ctx));
        Closure c(std::max(extent, 1), -3);
        ASSERT_EQ(weft_rt_parallel_for(&ctx, body, &c, -3, extent), 0);
        for (int k = 0; k < extent; k++) ASSERT_EQ(c.hits[k].load(), 1) << "extent " << extent << " index " << k;
    }
    std::vector<std::thread> callers;
    std::atomic<int> bad{0};
    for (int t = 0; t < 4; t++)
        callers.emplace_back([&, t] {
            for (int rep = 0; rep < 20; rep++) {
                weft_context_t ctx;
                std::memset(&ctx, 0, sizeof(ctx));
                int extent = 50 + 37 * t + rep;
                Closure c(extent, 0);
                if (weft_rt_parallel_for(&ctx, body, &c, 0, extent) != 0) bad++;
                for (int k = 0; k < extent; k++)
                    if (c.hits[k].load() != 1) bad++;
            }
        });
    for (auto &th : callers) th.join();
    EXPECT_EQ(bad.load(), 0);
}

TEST(CodeGenLLVM, CompileTimeAndRelease) {
    Expr i = var("i");
    Stmt loop = For::make("i", i32(0), var("out.extent.0"), ForType::Serial,
                          Store::make("out", Add::make(Load::make(Float(32), "in", i), f32(1)), i));
    compile("warm", {buf_arg("in", Float(32)), buf_arg("out", Float(32))}, loop);
    double best = 1e9;
    for (int k = 0; k < 20; k++) {
        auto t0 = std::chrono::steady_clock::now();
        Compiled c = compile("timed", {buf_arg("in", Float(32)), buf_arg("out", Float(32))}, loop);
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        best = std::min(best, ms);
        std::vector<float> in(33, 1.0f), out(33);
        weft_buffer_t bi = make_buf(in), bo = make_buf(out);
        ASSERT_EQ(c({&bi, &bo}), 0);
        ASSERT_EQ(out[32], 2.0f);
    }
    std::printf("best compile time: %.2f ms\n", best);
    EXPECT_LT(best, 200.0);
}

TEST(CodeGenLLVM, ConcurrentCompiles) {
    std::vector<std::thread> ts;
    std::atomic<int> bad{0};
    for (int t = 0; t < 3; t++)
        ts.emplace_back([&, t] {
            for (int rep = 0; rep < 5; rep++) {
                Expr i = var("i");
                Stmt loop = For::make("i", i32(0), var("out.extent.0"), ForType::Serial,
                                      Store::make("out", Add::make(i, i32(t * 100 + rep)), i));
                LoweredFunc f{"cc", {buf_arg("out", Int(32))}, loop};
                auto m = compile_llvm(f, host_cpu_info());
                std::vector<int32_t> out(10);
                weft_buffer_t bo = make_buf(out);
                weft_context_t ctx;
                std::memset(&ctx, 0, sizeof(ctx));
                void *args[1] = {&bo};
                if (m->fn(args, &ctx) != 0) bad++;
                for (int k = 0; k < 10; k++)
                    if (out[k] != k + t * 100 + rep) bad++;
            }
        });
    for (auto &t : ts) t.join();
    EXPECT_EQ(bad.load(), 0);
}

TEST(CodeGenLLVM, RejectsProvide) {
    Stmt s = Provide::make("f", i32(1), {i32(0)});
    LoweredFunc f{"bad", {}, s};
    EXPECT_THROW(compile_llvm(f, host_cpu_info()), weft::Error);
}
