// Halide 14's side of the app suite (apps/suite): each bench/peers/halide_apps/<app>.cpp
// registers one HalideApp with HALIDE_SUITE_APP(<app>); bench_halide_apps.cpp serves them to
// bench/run and checks them against the C++ references.
#pragma once
#include <Halide.h>

#include "suite.h"

namespace suite {

/** An app's Halide pipeline: the output Func and the ImageParams in the order of
    Problem::inputs. */
struct HalideDef {
    Halide::Func out;
    std::vector<Halide::ImageParam> inputs;
};

struct HalideApp {
    AppInfo (*info)();
    Problem (*make)(int size);
    void (*reference)(const Problem &, Array &out);
    /** The algorithm with Halide's expert CPU schedule when `scheduled`, else no schedule. */
    HalideDef (*build)(int size, bool scheduled);
};

inline std::vector<HalideApp> &halide_apps() {
    static std::vector<HalideApp> v;
    return v;
}

struct RegisterHalideApp {
    explicit RegisterHalideApp(const HalideApp &a) { halide_apps().push_back(a); }
};

inline const HalideApp *find_halide_app(const std::string &name) {
    for (const HalideApp &a : halide_apps())
        if (a.info().name == name) return &a;
    return nullptr;
}

inline Halide::Type halide_type(Elem e) {
    switch (e) {
    case Elem::F32: return Halide::Float(32);
    case Elem::U16: return Halide::UInt(16);
    case Elem::U8: return Halide::UInt(8);
    default: return Halide::Int(32);
    }
}

/** A Halide buffer over an Array's memory (mins included). */
inline Halide::Buffer<> halide_buffer(const Array &a) {
    std::vector<halide_dimension_t> shape(a.extents.size());
    int stride = 1;
    for (size_t d = 0; d < a.extents.size(); d++) {
        shape[d] = halide_dimension_t(a.mins[d], a.extents[d], stride);
        stride *= a.extents[d];
    }
    return Halide::Buffer<>(halide_type(a.elem), a.raw(), (int)shape.size(), shape.data());
}

}  // namespace suite

#define HALIDE_SUITE_APP(name)                                                                                      \
    namespace {                                                                                                     \
    const suite::RegisterHalideApp register_##name(suite::HalideApp{&suite::name::info, &suite::name::make,        \
                                                                    &suite::name::reference, &suite::name::build}); \
    }
