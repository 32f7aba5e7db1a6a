// Shared by the random-schedule property tests: a seeded random source.
#pragma once
#include <random>
#include <vector>

namespace weft_test {

/** Seeded, so that a failing trial reproduces from its printed seed. */
struct Rng {
    std::mt19937 g;
    explicit Rng(uint32_t seed) : g(seed) {}
    int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(g); }
    bool chance(double p) { return std::uniform_real_distribution<double>(0.0, 1.0)(g) < p; }
    template <typename T>
    const T &pick(const std::vector<T> &v) { return v[(size_t)uniform(0, (int)v.size() - 1)]; }
};

}  // namespace weft_test
