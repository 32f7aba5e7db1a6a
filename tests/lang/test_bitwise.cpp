// Bitwise operators (& | ^ ~ << >>) with Halide's meaning: on every integer type, scalar and
// vectorized, compiled and interpreted, against plain C++; shift amounts of other types,
// negative and past the width; bounds inference through them; errors for floats.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <random>

#include "pipeline/PipelineInternal.h"
#include "weft/weft.h"

using namespace weft;

namespace {

const int N = 600;

template <typename T>
T edge_or_random(int i, std::mt19937 &rng) {
    const T edges[] = {0, 1, (T)-1, std::numeric_limits<T>::min(), std::numeric_limits<T>::max(), (T)2, (T)(std::numeric_limits<T>::max() / 2)};
    if (i < 7) return edges[i];
    return (T)rng();
}

/** The meaning of a << b / a >> b (left selects the direction), in plain C++. */
template <typename T, typename A>
T ref_shift(T a, A b, bool left) {
    using U = typename std::make_unsigned<T>::type;
    const int bits = sizeof(T) * 8;
    long long amt = (long long)b;
    unsigned long long m;
    if (std::is_signed<A>::value && amt < 0) {
        left = !left;
        m = 0ull - (unsigned long long)amt;
    } else {
        m = (unsigned long long)b;
    }
    if (m >= (unsigned long long)bits) return left ? (T)0 : (std::is_signed<T>::value && a < 0 ? (T)-1 : (T)0);
    if (left) return (T)((U)a << m);
    if (std::is_signed<T>::value) return (T)((long long)a >> m);
    return (T)((U)a >> m);
}

template <typename T, typename A>
void check_type(bool vectorize) {
    std::mt19937 rng(sizeof(T) * 7 + sizeof(A) + vectorize);
    Buffer<T> a(std::vector<int>{N}, "a");
    Buffer<T> b(std::vector<int>{N}, "b");
    Buffer<A> s(std::vector<int>{N}, "s");
    for (int i = 0; i < N; i++) {
        a(i) = edge_or_random<T>(i, rng);
        b(i) = edge_or_random<T>((i * 5) % N, rng);
        // Amounts from -70 to 70 where the type holds them (the width, past it, negative).
        int v = (int)(rng() % 141) - 70;
        if (!std::is_signed<A>::value) v = std::abs(v);
        if (v > (int)std::numeric_limits<A>::max()) v = (int)std::numeric_limits<A>::max();
        s(i) = (A)v;
    }
    Var x("x");
    std::vector<std::pair<std::string, std::function<T(int)>>> ops;
    std::vector<Func> fs;
    auto add = [&](const std::string &name, Expr e, std::function<T(int)> ref) {
        Func f(name);
        f(x) = e;
        if (vectorize) f.vectorize(x, 16);
        fs.push_back(f);
        ops.push_back({name, ref});
    };
    add("and", a(x) & b(x), [&](int i) { return (T)(a(i) & b(i)); });
    add("or", a(x) | b(x), [&](int i) { return (T)(a(i) | b(i)); });
    add("xor", a(x) ^ b(x), [&](int i) { return (T)(a(i) ^ b(i)); });
    add("not", ~a(x), [&](int i) { return (T)~a(i); });
    add("and_mask", a(x) & cast<T>(0x3f), [&](int i) { return (T)(a(i) & 0x3f); });
    add("and_odd_mask", a(x) & cast<T>(0x5a), [&](int i) { return (T)(a(i) & 0x5a); });
    add("shl", a(x) << s(x), [&](int i) { return ref_shift<T, A>(a(i), s(i), true); });
    add("shr", a(x) >> s(x), [&](int i) { return ref_shift<T, A>(a(i), s(i), false); });
    for (int k : {-9, -1, 0, 1, 3, 7, (int)sizeof(T) * 8 - 1, (int)sizeof(T) * 8, 40, 100}) {
        add("shl_" + std::to_string(k), a(x) << k, [&, k](int i) { return ref_shift<T, int>(a(i), k, true); });
        add("shr_" + std::to_string(k), a(x) >> k, [&, k](int i) { return ref_shift<T, int>(a(i), k, false); });
    }
    for (size_t j = 0; j < fs.size(); j++) {
        Buffer<T> out(std::vector<int>{N}, "out");
        fs[j].realize(out);
        Buffer<T> interp(std::vector<int>{N}, "interp");
        internal::interpret_pipeline(Pipeline(fs[j]), {interp});
        int bad = 0;
        for (int i = 0; i < N; i++) {
            T e = ops[j].second(i);
            if (out(i) != e && bad++ < 3)
                ADD_FAILURE() << ops[j].first << " at " << i << ": a=" << (long long)a(i) << " b=" << (long long)b(i)
                              << " s=" << (long long)s(i) << " got " << (long long)out(i) << " want " << (long long)e;
            if (interp(i) != e && bad++ < 3) ADD_FAILURE() << ops[j].first << " interpreted at " << i;
        }
    }
}

}  // namespace

TEST(Bitwise, EveryIntegerTypeScalarAndVector) {
    for (bool v : {false, true}) {
        check_type<int8_t, int8_t>(v);
        check_type<uint8_t, uint8_t>(v);
        check_type<int16_t, uint8_t>(v);
        check_type<uint16_t, int16_t>(v);
        check_type<int32_t, int32_t>(v);
        check_type<uint32_t, int32_t>(v);
        check_type<int32_t, uint16_t>(v);
        check_type<int64_t, int32_t>(v);
        check_type<uint64_t, uint8_t>(v);
    }
}

TEST(Bitwise, ConstantsFold) {
    Var x("x");
    Func f("f");
    f(x) = (Expr(5) ^ Expr(3)) + (Expr(1) << 31) + (Expr(-1) >> 40) + (Expr(12) & Expr(10)) + (Expr(12) | Expr(3)) +
           (Expr(-16) >> Expr(2)) + (Expr(1) << Expr(4));
    Buffer<int32_t> out = f.realize({1});
    EXPECT_EQ(out(0), (int32_t)(6u + 0x80000000u - 1u + 8u + 15u - 4u + 16u));
}

TEST(Bitwise, BoundsInferenceFollowsMasksAndShifts) {
    // hist(in & 15) and hist(in >> 28) write only bins 0..15: the buffers need no more.
    Buffer<uint32_t> in(std::vector<int>{1000}, "in");
    for (int i = 0; i < 1000; i++) in(i) = (uint32_t)i * 2654435761u;
    RDom r(0, 1000, "r");
    Func h1("h1"), h2("h2");
    Var x("x");
    h1(x) = 0;
    h1(cast<int>(in(r) & 15)) += 1;
    h2(x) = 0;
    h2(cast<int>(in(r) >> 28)) += 1;
    Buffer<int32_t> o1(std::vector<int>{16}, "o1"), o2(std::vector<int>{16}, "o2");
    h1.realize(o1);
    h2.realize(o2);
    int c1[16] = {0}, c2[16] = {0};
    for (int i = 0; i < 1000; i++) {
        c1[in(i) & 15]++;
        c2[in(i) >> 28]++;
    }
    for (int i = 0; i < 16; i++) {
        EXPECT_EQ(o1(i), c1[i]);
        EXPECT_EQ(o2(i), c2[i]);
    }
}

TEST(Bitwise, ClearErrors) {
    Var x("x");
    Expr f = cast<float>(x);
    EXPECT_THROW(f & 1, Error);
    EXPECT_THROW(f << 1, Error);
    EXPECT_THROW(Expr(1) << f, Error);
    EXPECT_THROW(~f, Error);
    EXPECT_THROW(Expr() & 1, Error);
    // Bools: & | ^ ~ are the logical operators.
    Func g("g");
    g(x) = select((x > 2) & (x < 5) | (x == 7) ^ (x == 7) | ~(x != 9), 1, 0);
    Buffer<int32_t> out = g.realize({10});
    for (int i = 0; i < 10; i++) EXPECT_EQ(out(i), (i > 2 && i < 5) || i == 9 ? 1 : 0) << i;
}

// Halide's helpers: absd, mux, saturating_cast, lerp, variadic min / max, and the lossless mixing
// of a narrower unsigned integer with a signed one.
TEST(HalideOperators, AbsdMuxSaturatingCastLerp) {
    Var x("x");
    Buffer<int16_t> a(std::vector<int>{8}, "a");
    Buffer<uint8_t> u(std::vector<int>{8}, "u");
    const int16_t av[8] = {-32768, 32767, -5, 0, 7, 300, -300, 1};
    for (int i = 0; i < 8; i++) {
        a(i) = av[i];
        u(i) = (uint8_t)(i * 37);
    }
    Func d("d"), m("m"), s("s"), l("l"), mx("mx"), mix("mix");
    d(x) = absd(a(x), a(7 - x));
    m(x) = mux(x, {Expr(10), Expr(20), Expr(30)});
    s(x) = saturating_cast<uint8_t>(a(x));
    l(x) = lerp(cast<uint8_t>(0), cast<uint8_t>(255), u(x));
    mx(x) = max(a(x), a(7 - x), cast<int16_t>(5)) + cast<int16_t>(min(x, 3, 5 - x, 9));
    mix(x) = a(x) * u(x);  // uint8 fits in int16: no cast needed
    for (Func *f : {&d, &m, &s, &l, &mx, &mix}) f->vectorize(x, 8);
    Buffer<uint16_t> od = d.realize({8});
    Buffer<int32_t> om = m.realize({8});
    Buffer<uint8_t> os = s.realize({8});
    Buffer<uint8_t> ol = l.realize({8});
    Buffer<int16_t> omx = mx.realize({8});
    Buffer<int16_t> omix = mix.realize({8});
    for (int i = 0; i < 8; i++) {
        EXPECT_EQ(od(i), (uint16_t)std::abs((int)av[i] - (int)av[7 - i])) << i;
        EXPECT_EQ(om(i), i < 2 ? 10 * (i + 1) : 30) << i;
        EXPECT_EQ(os(i), (uint8_t)std::min(255, std::max(0, (int)av[i]))) << i;
        EXPECT_EQ(ol(i), u(i)) << i;  // from 0 to 255 with weight w / 255: w itself
        EXPECT_EQ(omx(i), (int16_t)(std::max({(int)av[i], (int)av[7 - i], 5}) + std::min({i, 3, 5 - i, 9}))) << i;
        EXPECT_EQ(omix(i), (int16_t)(av[i] * u(i))) << i;
    }
    // Floats: saturating_cast to int32 clamps (and never overflows the conversion), lerp blends.
    Func sf("sf"), lf("lf");
    sf(x) = saturating_cast<int32_t>(select(x == 0, 3e9f, x == 1, -3e9f, cast<float>(x) * 1.5f));
    lf(x) = lerp(1.0f, 3.0f, cast<float>(x) / 4.0f);
    Buffer<int32_t> osf = sf.realize({4});
    Buffer<float> olf = lf.realize({5});
    EXPECT_EQ(osf(0), 2147483520);  // the largest float32 below 2^31
    EXPECT_EQ(osf(1), INT32_MIN);
    EXPECT_EQ(osf(2), 3);
    for (int i = 0; i < 5; i++) EXPECT_FLOAT_EQ(olf(i), 1.0f * (1.0f - i / 4.0f) + 3.0f * (i / 4.0f));
    EXPECT_THROW(mux(x, {}), Error);
    EXPECT_THROW(lerp(x, x, 0.5f), Error);  // int32 values: not supported, clearly
    EXPECT_THROW(cast<int16_t>(x) * cast<uint16_t>(x), Error);  // same width: would lose information
}
