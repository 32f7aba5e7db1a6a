// API.md "Inputs and buffers": Buffer<T>, ImageParam, Param.
#include "lang_test_util.h"

using namespace weft;

namespace {

TEST(Buffers, OwningLayout) {
    Buffer<int> b(3, 4, 2);
    EXPECT_EQ(b.dimensions(), 3);
    EXPECT_EQ(b.width(), 3);
    EXPECT_EQ(b.height(), 4);
    EXPECT_EQ(b.channels(), 2);
    EXPECT_EQ(b.dim(0).min(), 0);
    EXPECT_EQ(b.dim(0).extent(), 3);
    EXPECT_EQ(b.dim(0).stride(), 1);
    EXPECT_EQ(b.dim(1).stride(), 3);
    EXPECT_EQ(b.dim(2).stride(), 12);
    EXPECT_EQ(b.type(), Int(32));
    ASSERT_NE(b.data(), nullptr);
    for (int c = 0; c < 2; c++)
        for (int j = 0; j < 4; j++)
            for (int i = 0; i < 3; i++) EXPECT_EQ(b(i, j, c), 0) << "owned memory starts zeroed";
    b(2, 1, 1) = 17;
    EXPECT_EQ(b.data()[2 + 1 * 3 + 1 * 12], 17);
    Buffer<int> alias = b;  // copies share memory
    alias(0, 0, 0) = 5;
    EXPECT_EQ(b(0, 0, 0), 5);
    Buffer<float> v({4, 5}, "named");
    EXPECT_EQ(v.name(), "named");
    EXPECT_EQ(v.width(), 4);
    EXPECT_EQ(v.height(), 5);
    EXPECT_EQ(v.channels(), 1);
}

TEST(Buffers, Wrapping) {
    std::vector<float> mem(4 * 3, 0.0f);
    Buffer<float> b(mem.data(), {4, 3});
    EXPECT_EQ(b.data(), mem.data());
    EXPECT_EQ(b.dim(1).stride(), 4);
    b(1, 2) = 5.0f;
    EXPECT_EQ(mem[2 * 4 + 1], 5.0f);
    mem[3] = 2.5f;
    EXPECT_EQ(b(3, 0), 2.5f);

    // Realizing into a wrapped buffer writes the wrapped memory.
    Var x("x"), y("y");
    Func f("wrap_out");
    f(x, y) = cast<float>(x * 10 + y);
    f.realize(b);
    for (int j = 0; j < 3; j++)
        for (int i = 0; i < 4; i++) EXPECT_EQ(mem[j * 4 + i], (float)(i * 10 + j));
}

TEST(Buffers, WrappedInputIsRead) {
    std::vector<int> mem = {1, 2, 3, 4, 5, 6};
    Buffer<int> in(mem.data(), {3, 2});
    Var x("x"), y("y");
    Func f("wrap_in");
    f(x, y) = in(x, y) * 2;
    Buffer<int> out = f.realize({3, 2});
    for (int j = 0; j < 2; j++)
        for (int i = 0; i < 3; i++) EXPECT_EQ(out(i, j), mem[j * 3 + i] * 2);
}

TEST(Buffers, SetMinAndElementAccess) {
    Buffer<int> b(5, 4);
    b.set_min(-2, 3);
    EXPECT_EQ(b.dim(0).min(), -2);
    EXPECT_EQ(b.dim(1).min(), 3);
    EXPECT_EQ(b.dim(0).max(), 2);
    EXPECT_EQ(b.dim(1).max(), 6);
    b(-2, 3) = 9;
    EXPECT_EQ(b.data()[0], 9);
    b(2, 6) = 11;
    EXPECT_EQ(b.data()[4 + 3 * 5], 11);
    EXPECT_THROW(b(3, 3), Error);
    EXPECT_THROW(b(0, 0), Error);
    EXPECT_THROW(b(0), Error);
    b.set_min(std::vector<int>{1, 1});
    EXPECT_EQ(b(1, 1), 9);
}

TEST(Buffers, RealizeRespectsNonZeroMins) {
    Var x("x"), y("y");
    Func f("mins_out");
    f(x, y) = x * 100 + y;
    Buffer<int> out(5, 4);
    out.set_min(-2, 3);
    f.realize(out);
    for (int j = 3; j < 7; j++)
        for (int i = -2; i < 3; i++) EXPECT_EQ(out(i, j), i * 100 + j);
}

TEST(Buffers, InputWithNonZeroMins) {
    Buffer<int> in(4, 3);
    in.set_min(10, -5);
    for (int j = -5; j < -2; j++)
        for (int i = 10; i < 14; i++) in(i, j) = i * 7 + j;
    Var x("x"), y("y");
    Func f("mins_in");
    f(x, y) = in(x + 10, y - 5) + 1;
    Buffer<int> out = f.realize({4, 3});
    for (int j = 0; j < 3; j++)
        for (int i = 0; i < 4; i++) EXPECT_EQ(out(i, j), (i + 10) * 7 + (j - 5) + 1);
}

TEST(Buffers, ConstBufferRead) {
    Buffer<uint16_t> b(3);
    b(0) = 1;
    b(1) = 2;
    b(2) = 65535;
    const Buffer<uint16_t> &cb = b;
    EXPECT_EQ(cb(2), 65535);
    int total = 0;
    for (int i = 0; i < 3; i++) total += cb(i);
    EXPECT_EQ(total, 65538);
}

TEST(Buffers, UntypedBuffer) {
    Buffer<void> v(Float(64), {3, 2}, "untyped");
    EXPECT_EQ(v.type(), Float(64));
    EXPECT_EQ(v.dimensions(), 2);
    Buffer<double> d = v;
    d(2, 1) = 1.5;
    EXPECT_EQ(static_cast<double *>(v.raw_data())[5], 1.5);
    EXPECT_THROW(Buffer<float> bad = v, Error);
}

TEST(Inputs, ImageParamBinding) {
    ImageParam in(Int(16), 2, "ip_in");
    EXPECT_EQ(in.name(), "ip_in");
    EXPECT_EQ(in.type(), Int(16));
    EXPECT_EQ(in.dimensions(), 2);
    Var x("x"), y("y");
    Func f("ip_f");
    f(x, y) = cast<int>(in(x, y)) * 3 + cast<int>(in(x + 1, y));
    for (int n : {5, 12}) {
        Buffer<int16_t> b(n + 1, 3);
        weft_test::fill_pattern(b, n, -1000, 1000);
        in.set(b);
        Buffer<int> out = f.realize({n, 3});
        for (int j = 0; j < 3; j++)
            for (int i = 0; i < n; i++) EXPECT_EQ(out(i, j), b(i, j) * 3 + b(i + 1, j)) << n;
    }
}

TEST(Inputs, ImageParamExtentExprs) {
    ImageParam in(Float(32), 1, "ip_ext");
    Var x("x");
    Func f("ip_ext_f");
    f(x) = in(in.extent(0) - 1 - x) + cast<float>(in.min(0));
    Buffer<float> b(6);
    for (int i = 0; i < 6; i++) b(i) = (float)i;
    in.set(b);
    Buffer<float> out = f.realize({6});
    for (int i = 0; i < 6; i++) EXPECT_EQ(out(i), (float)(5 - i));
    RDom r(in);
    Func s("ip_sum");
    s() = sum(in(r));
    Buffer<float> so = s.realize(std::vector<int>{});
    EXPECT_EQ(so(), 15.0f);
}

TEST(Inputs, ParamBinding) {
    Param<float> alpha("alpha", 1.5f);
    Param<int> offset("offset");
    Param<uint8_t> small("small");
    offset.set(10);
    small.set(200);
    EXPECT_EQ(alpha.get(), 1.5f);
    EXPECT_EQ(alpha.name(), "alpha");
    EXPECT_EQ(alpha.type(), Float(32));
    EXPECT_EQ(small.type(), UInt(8));
    Var x("x");
    Func f("param_f");
    f(x) = alpha * cast<float>(x) + cast<float>(offset) + cast<float>(small);
    Buffer<float> o1 = f.realize({4});
    for (int i = 0; i < 4; i++) EXPECT_FLOAT_EQ(o1(i), 1.5f * i + 10 + 200);
    CacheStats before = cache_stats();
    alpha.set(-2.0f);
    offset.set(-3);
    small.set(1);
    Buffer<float> o2 = f.realize({4});
    for (int i = 0; i < 4; i++) EXPECT_FLOAT_EQ(o2(i), -2.0f * i - 3 + 1);
    EXPECT_EQ(cache_stats().compilations, before.compilations) << "Param values are not in the cache key";
}

TEST(Inputs, ParamInt64AndDouble) {
    Param<int64_t> big("big");
    Param<double> d("d");
    big.set((int64_t)1 << 40);
    d.set(0.25);
    Var x("x");
    Func f("param64");
    f(x) = big + cast<int64_t>(x);
    Func g("paramd");
    g(x) = d * cast<double>(x);
    Buffer<int64_t> fo = f.realize({3});
    Buffer<double> go = g.realize({3});
    for (int i = 0; i < 3; i++) {
        EXPECT_EQ(fo(i), ((int64_t)1 << 40) + i);
        EXPECT_EQ(go(i), 0.25 * i);
    }
}

}  // namespace
