// The app suite's common part: arrays, problems and the description of an app. It depends on
// neither weft nor Halide, so that weft's side (apps/suite/<app>.cpp) and Halide's side
// (bench/peers/halide_apps/<app>.cpp) build exactly the same inputs from <app>.h.
//
// Each app <app> has three files:
//   apps/suite/<app>.h                    info(), make(size) (deterministic inputs and the
//                                         output's shape) and reference() (plain C++)
//   apps/suite/<app>.cpp                  weft's algorithm and schedule (Halide's expert
//                                         schedule translated directive for directive)
//   bench/peers/halide_apps/<app>.cpp     the same algorithm and schedule in Halide 14
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace suite {

enum class Elem { F32, U16, U8, I32 };

inline size_t elem_size(Elem e) { return e == Elem::F32 || e == Elem::I32 ? 4 : e == Elem::U16 ? 2 : 1; }
inline const char *elem_name(Elem e) {
    return e == Elem::F32 ? "float32" : e == Elem::U16 ? "uint16" : e == Elem::U8 ? "uint8" : "int32";
}
template <typename T>
constexpr Elem elem_of();
template <>
constexpr Elem elem_of<float>() { return Elem::F32; }
template <>
constexpr Elem elem_of<uint16_t>() { return Elem::U16; }
template <>
constexpr Elem elem_of<uint8_t>() { return Elem::U8; }
template <>
constexpr Elem elem_of<int32_t>() { return Elem::I32; }

/** A dense array, dimension 0 innermost, with per-dimension mins (0 unless given), in
    64-byte aligned memory that is zeroed (touched) at creation. Copies share the memory. */
struct Array {
    Elem elem = Elem::F32;
    std::vector<int> extents, mins;
    std::shared_ptr<uint8_t> mem;
    size_t count = 0;

    Array() = default;
    Array(Elem e, std::vector<int> ext, std::vector<int> mn = {}) : elem(e), extents(std::move(ext)), mins(std::move(mn)) {
        if (mins.empty()) mins.assign(extents.size(), 0);
        if (mins.size() != extents.size()) throw std::runtime_error("suite::Array: mins and extents differ in length");
        count = 1;
        for (int x : extents) {
            if (x <= 0) throw std::runtime_error("suite::Array: extents must be positive");
            count *= (size_t)x;
        }
        size_t bytes = ((count * elem_size(e) + 63) / 64) * 64;
        uint8_t *p = (uint8_t *)std::aligned_alloc(64, bytes);
        if (!p) throw std::bad_alloc();
        std::memset(p, 0, bytes);
        mem.reset(p, [](uint8_t *q) { std::free(q); });
    }
    int dims() const { return (int)extents.size(); }
    void *raw() const { return mem.get(); }
    template <typename T>
    T *data() const {
        if (elem_of<T>() != elem) throw std::runtime_error(std::string("suite::Array: holds ") + elem_name(elem));
        return (T *)mem.get();
    }
    /** The flat index of a coordinate (mins respected). */
    size_t index(std::initializer_list<int> c) const {
        size_t i = 0, stride = 1;
        int d = 0;
        for (int v : c) {
            i += (size_t)(v - mins[d]) * stride;
            stride *= (size_t)extents[d];
            d++;
        }
        return i;
    }
    template <typename T, typename... Ints>
    T &at(Ints... c) const {
        return data<T>()[index({(int)c...})];
    }
    double get(size_t i) const {
        switch (elem) {
        case Elem::F32: return ((const float *)raw())[i];
        case Elem::U16: return ((const uint16_t *)raw())[i];
        case Elem::U8: return ((const uint8_t *)raw())[i];
        default: return ((const int32_t *)raw())[i];
        }
    }
    void to_float(std::vector<float> &out) const {
        out.resize(count);
        for (size_t i = 0; i < count; i++) out[i] = (float)get(i);
    }
};

/** A deterministic value in [0, 1) for element i of the input with this seed. */
inline double unit_value(uint64_t seed, uint64_t i) {
    uint64_t z = i + 0x9E3779B97F4A7C15ull * (seed + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 40) / (double)(1ull << 24);
}

/** Fills a with deterministic values uniformly in [lo, hi] (rounded for integer arrays). */
inline void fill_uniform(Array &a, uint64_t seed, double lo, double hi) {
    for (size_t i = 0; i < a.count; i++) {
        double v = lo + (hi - lo) * unit_value(seed, i);
        switch (a.elem) {
        case Elem::F32: ((float *)a.raw())[i] = (float)v; break;
        case Elem::U16: ((uint16_t *)a.raw())[i] = (uint16_t)std::lround(v); break;
        case Elem::U8: ((uint8_t *)a.raw())[i] = (uint8_t)std::lround(v); break;
        default: ((int32_t *)a.raw())[i] = (int32_t)std::lround(v); break;
        }
    }
}

/** A smooth image with detail (edges and noise), like a photograph, values in [0, 1]:
    pixel (x, y, c) of a width×height(×channels) image. Used where an app's behaviour depends
    on the image's content (bilateral filters, denoisers, demosaicking). */
inline double photo_value(uint64_t seed, int x, int y, int c, int width, int height) {
    double u = (double)x / width, v = (double)y / height;
    double s = 0.5 + 0.25 * std::sin(6.0 * u + 2.0 * c + seed) * std::cos(4.0 * v - c);
    s += ((x / 97 + y / 61 + c) % 3 == 0) ? 0.15 : 0.0;  // blocks with sharp edges
    s += 0.08 * (unit_value(seed, (uint64_t)y * width * 4 + (uint64_t)x * 4 + c) - 0.5);  // noise
    return std::min(1.0, std::max(0.0, s));
}

/** The inputs of one run of an app and its output array (shape and type; contents written
    by the implementation). Inputs are in the order weft's and Halide's definitions take them. */
struct Problem {
    std::vector<Array> inputs;
    Array output;
};

struct AppInfo {
    std::string name;
    std::string description;  // one line: the algorithm and the data
    int default_size;         // Halide's default size or larger (what bench/run races)
    int test_size;            // small, for the tests
    double atol, rtol;        // |a - b| <= atol + rtol·|b| between implementations
    std::string size_meaning; // what `size` is, e.g. "image width (height = 5/3 width)"
    // The size at which the unscheduled version (every Func inlined) is run by the tests and
    // raced by bench/run; 0 where it is not run: with everything inlined, a deep pyramid or a
    // long chain of stencils is a computation exponential in the depth (Halide's too).
    int unscheduled_size = 0;
};

/** Calls run `reps` times; returns the median time in ms (0 for none). */
template <typename F, typename Clock>
double median_ms(F &&run, int reps, Clock now_ms) {
    std::vector<double> ms;
    for (int i = 0; i < reps; i++) {
        double a = now_ms();
        run();
        ms.push_back(now_ms() - a);
    }
    std::sort(ms.begin(), ms.end());
    return ms.empty() ? 0.0 : ms[ms.size() / 2];
}

/** Compares out with ref elementwise; returns the number of mismatches and the largest
    absolute difference. */
inline size_t compare(const Array &out, const Array &ref, double atol, double rtol, double *max_abs) {
    if (out.count != ref.count) throw std::runtime_error("suite::compare: arrays of different sizes");
    size_t bad = 0;
    double m = 0;
    for (size_t i = 0; i < out.count; i++) {
        double a = out.get(i), b = ref.get(i), d = std::fabs(a - b);
        if (!(d <= atol + rtol * std::fabs(b))) bad++;  // NaN counts as a mismatch
        if (d > m || d != d) m = d;
    }
    if (max_abs) *max_abs = m;
    return bad;
}

/** Checks an implementation's output against the app's reference; returns the number of
    mismatches and sets the largest difference. */
template <typename App>
size_t check_against_reference(const App &app, const Problem &p, const AppInfo &info, double *max_abs) {
    Array ref(p.output.elem, p.output.extents, p.output.mins);
    app.reference(p, ref);
    return compare(p.output, ref, info.atol, info.rtol, max_abs);
}

}  // namespace suite
