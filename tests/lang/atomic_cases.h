// Atomic updates (Stage::atomic()) of each element type and operation, shared by the CPU tests
// (parallel over the RDom) and the GPU tests (GPU blocks and threads over it): each case is a
// histogram-like scatter into `bins` elements, checked exactly against a plain C++ loop.
#pragma once
#include <weft/weft.h>

#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace weft_test {

struct AtomicCase {
    std::string name;
    weft::Func f;
    /** Realizes f for target t; "" when every element matches the C++ reference. */
    std::function<std::string(const weft::Target &)> check;
};

/** Values in [-10, 40). */
inline weft::Buffer<int32_t> atomic_input(int w, int h) {
    weft::Buffer<int32_t> in(w, h);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) in(x, y) = (x * 7 + y * 13 + x * y) % 50 - 10;
    return in;
}

/** f(x) = init; f(bin(in(r))) = update(f(bin), in(r), r.x, r.y), made atomic and scheduled by
    `schedule` (pure definition, update); ref does the same on one element in C++. */
template <typename T>
AtomicCase atomic_case(const std::string &name, const weft::Buffer<int32_t> &in, int bins, T init,
                       const std::function<weft::Expr(weft::Expr, weft::Expr, weft::Expr, weft::Expr)> &update,
                       const std::function<T(T, int32_t, int, int)> &ref, bool override_assoc,
                       const std::function<void(weft::Func &, weft::Stage, const weft::RDom &)> &schedule) {
    using namespace weft;
    const int w = in.dim(0).extent(), h = in.dim(1).extent();
    Var x("x");
    RDom r(0, w, 0, h, "r");
    Func f(name);
    f(x) = cast(type_of<T>(), std::is_floating_point_v<T> ? Expr((double)init) : Expr((int)init));
    Expr b = (in(r.x, r.y) + 10) % bins;
    f(b) = update(f(b), in(r.x, r.y), r.x, r.y);
    Stage u = f.update();
    u.atomic(override_assoc);
    schedule(f, u, r);
    AtomicCase c;
    c.name = name;
    c.f = f;
    c.check = [f, in, bins, init, ref, name](const Target &t) mutable -> std::string {
        Buffer<T> got = f.realize({bins}, t);
        std::vector<T> want(bins, init);
        for (int y = 0; y < in.dim(1).extent(); y++)
            for (int xx = 0; xx < in.dim(0).extent(); xx++) {
                int v = in(xx, y), k = (v + 10) % bins;
                want[k] = ref(want[k], v, xx, y);
            }
        std::ostringstream os;
        for (int k = 0; k < bins; k++)
            if (!(got(k) == want[k])) os << name << "[" << k << "] = " << +got(k) << ", expected " << +want[k] << "; ";
        return os.str();
    };
    return c;
}

/** Every atomic form the backends treat differently: one atomic instruction (integer and float
    add, subtract, integer min and max, 64-bit), a compare-and-swap loop (float max, multiply,
    a non-associative update with atomic(true)), and 1- and 2-byte elements. */
inline std::vector<AtomicCase> atomic_cases(const weft::Buffer<int32_t> &in,
                                            const std::function<void(weft::Func &, weft::Stage, const weft::RDom &)> &s) {
    using namespace weft;
    const int bins = 10;
    using E = Expr;
    std::vector<AtomicCase> cs;
    cs.push_back(atomic_case<int32_t>(
        "count_i32", in, bins, 0, [](E o, E, E, E) { return o + 1; }, [](int32_t o, int32_t, int, int) { return o + 1; },
        false, s));
    cs.push_back(atomic_case<uint8_t>(  // about 330 per bin: wraps around
        "count_u8", in, bins, 0, [](E o, E, E, E) { return o + cast<uint8_t>(1); },
        [](uint8_t o, int32_t, int, int) { return (uint8_t)(o + 1); }, false, s));
    cs.push_back(atomic_case<int16_t>(
        "sub_i16", in, bins, 7, [](E o, E v, E, E) { return o - cast<int16_t>(v); },
        [](int16_t o, int32_t v, int, int) { return (int16_t)(o - (int16_t)v); }, false, s));
    cs.push_back(atomic_case<int64_t>(
        "sum_i64", in, bins, 0, [](E o, E v, E, E) { return o + cast<int64_t>(v) * cast<int64_t>(1000000007); },
        [](int64_t o, int32_t v, int, int) { return o + (int64_t)v * 1000000007; }, false, s));
    cs.push_back(atomic_case<double>(  // halves of small integers: exact in any order
        "sum_f64", in, bins, 0.0, [](E o, E v, E, E) { return cast<double>(v) * 0.5 + o; },
        [](double o, int32_t v, int, int) { return o + v * 0.5; }, false, s));
    cs.push_back(atomic_case<float>(
        "sub_f32", in, bins, 0.0f, [](E o, E v, E, E) { return o - cast<float>(v); },
        [](float o, int32_t v, int, int) { return o - (float)v; }, false, s));
    cs.push_back(atomic_case<int32_t>(
        "min_i32", in, bins, 1000, [](E o, E v, E rx, E) { return min(o, v * (rx % 5)); },
        [](int32_t o, int32_t v, int rx, int) { return std::min(o, v * (rx % 5)); }, false, s));
    cs.push_back(atomic_case<uint32_t>(
        "max_u32", in, bins, 3u, [](E o, E v, E, E ry) { return max(cast<uint32_t>(v + 10) * cast<uint32_t>(ry), o); },
        [](uint32_t o, int32_t v, int, int ry) { return std::max(o, (uint32_t)(v + 10) * (uint32_t)ry); }, false, s));
    cs.push_back(atomic_case<float>(
        "max_f32", in, bins, -1e30f, [](E o, E v, E rx, E) { return max(o, cast<float>(v) * cast<float>(rx % 3)); },
        [](float o, int32_t v, int rx, int) { return std::max(o, (float)v * (float)(rx % 3)); }, false, s));
    cs.push_back(atomic_case<uint32_t>(  // wraps: unsigned products commute
        "product_u32", in, bins, 1u, [](E o, E v, E, E) { return o * cast<uint32_t>(v % 3 + 3); },
        [](uint32_t o, int32_t v, int, int) { return o * (uint32_t)(v % 3 + 3); }, false, s));
    cs.push_back(atomic_case<uint32_t>(  // the same function at every step: any order gives 2^n - 1
        "double_plus_one", in, bins, 0u, [](E o, E, E, E) { return o * cast<uint32_t>(2) + cast<uint32_t>(1); },
        [](uint32_t o, int32_t, int, int) { return o * 2u + 1u; }, true, s));
    return cs;
}

}  // namespace weft_test
