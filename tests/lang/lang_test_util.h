// Small helpers shared by the tests in tests/lang.
#pragma once
#include <gtest/gtest.h>
#include <weft/weft.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace weft_test {

/** Runs fn; returns the message of the weft::Error it throws (a test failure if it throws
    nothing or something else). */
inline std::string error_of(const std::function<void()> &fn) {
    try {
        fn();
    } catch (const weft::Error &e) {
        return e.what();
    } catch (const std::exception &e) {
        ADD_FAILURE() << "expected weft::Error, got another exception: " << e.what();
        return "<wrong exception>";
    } catch (...) {
        ADD_FAILURE() << "expected weft::Error, got a non-std exception";
        return "<wrong exception>";
    }
    ADD_FAILURE() << "expected weft::Error, nothing was thrown";
    return "<no exception>";
}

/** The lines of s, sorted (lines printed by threads come in any order). */
inline std::vector<std::string> sorted_lines(const std::string &s) {
    std::vector<std::string> r;
    size_t pos = 0;
    while (pos < s.size()) {
        size_t nl = s.find('\n', pos);
        if (nl == std::string::npos) nl = s.size();
        r.push_back(s.substr(pos, nl - pos));
        pos = nl + 1;
    }
    std::sort(r.begin(), r.end());
    return r;
}

inline bool contains(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

#define EXPECT_CONTAINS(str, part) \
    EXPECT_TRUE(::weft_test::contains((str), (part))) << "message: \"" << (str) << "\"\n  lacks: \"" << (part) << "\""

/** Floor division / modulo as API.md defines them (0 for a zero divisor). */
template <typename T>
T floor_div(T a, T b) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
        int64_t q = (int64_t)a / (int64_t)b, r = (int64_t)a % (int64_t)b;
        if (r != 0 && ((r < 0) != (b < 0))) q--;
        return (T)q;
    } else {
        return (T)(a / b);
    }
}
template <typename T>
T floor_mod(T a, T b) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
        int64_t r = (int64_t)a % (int64_t)b;
        if (r != 0 && ((r < 0) != (b < 0))) r += b;
        return (T)r;
    } else {
        return (T)(a % b);
    }
}

/** Deterministic pseudo-random fill. */
template <typename T>
void fill_pattern(weft::Buffer<T> &b, uint32_t seed, int lo = 0, int hi = 100) {
    uint32_t s = seed * 2654435761u + 12345u;
    b.for_each_offset([&](int64_t off) {
        s = s * 1664525u + 1013904223u;
        b.data()[off] = (T)(lo + (int)((s >> 8) % (uint32_t)(hi - lo + 1)));
    });
}

/** Two 2-D buffers equal element for element (the first three differences reported). */
template <typename T>
void expect_same(const weft::Buffer<T> &a, const weft::Buffer<T> &b, const std::string &what) {
    ASSERT_EQ(a.width(), b.width());
    ASSERT_EQ(a.height(), b.height());
    int bad = 0;
    for (int j = 0; j < a.height(); j++)
        for (int i = 0; i < a.width(); i++)
            if (a(i, j) != b(i, j) && bad++ < 3) ADD_FAILURE() << what << ": differs at (" << i << ", " << j << ")";
}

/** A small algorithm for schedule tests: a producer, an output with an update over an RDom, a
    Param and an input; built anew each time (so each test gets Funcs of its own). */
struct ScheduleTestAlgo {
    weft::ImageParam in{weft::Float(32), 2, "in"};
    weft::Param<int> k{"k", 3};
    weft::Var x{"x"}, y{"y"};
    weft::Func blur{"blur"}, out{"out"};
    weft::RDom r{0, 3, "r"};
    weft::Buffer<float> input{90, 40};
    ScheduleTestAlgo() {
        blur(x, y) = (in(x, y) + in(x + 1, y) + in(x + 2, y)) * 0.25f;
        out(x, y) = blur(x, y) * 2.0f + weft::cast<float>(k);
        out(x, y) += in(x, weft::clamp(y + r, 0, 37)) * 0.5f;
        for (int j = 0; j < 40; j++)
            for (int i = 0; i < 90; i++) input(i, j) = (float)((i * 7 + j * 13) % 17) - 3.5f;
        in.set(input);
    }
    weft::Buffer<float> run() { return out.realize({64, 36}); }
};

}  // namespace weft_test
