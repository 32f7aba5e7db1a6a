// weft's side of the app suite: each apps/suite/<app>.cpp registers one WeftApp with
// WEFT_SUITE_APP(<app>), defined below; run_suite.cpp runs them, bench/weft_kernels.cpp races
// them against Halide (bench/run).
#pragma once
#include <weft/weft.h>

#include <functional>

#include "suite.h"

namespace suite {

/** An app's weft pipeline: the output Func and the ImageParams in the order of
    Problem::inputs. */
struct WeftDef {
    weft::Func out;
    std::vector<weft::ImageParam> inputs;
};

struct WeftApp {
    AppInfo (*info)();
    Problem (*make)(int size);
    void (*reference)(const Problem &, Array &out);
    /** The algorithm, with Halide's expert schedule when `scheduled`, else none at all (every
        Func inlined: weft's default). `size` is the one make() was given. */
    WeftDef (*build)(int size, bool scheduled);
};

inline std::vector<WeftApp> &weft_apps() {
    static std::vector<WeftApp> v;
    return v;
}

struct RegisterWeftApp {
    explicit RegisterWeftApp(const WeftApp &a) { weft_apps().push_back(a); }
};

inline const WeftApp *find_weft_app(const std::string &name) {
    for (const WeftApp &a : weft_apps())
        if (a.info().name == name) return &a;
    return nullptr;
}

/** A weft Buffer over an Array's memory (mins included). */
inline weft::Buffer<void> weft_buffer(const Array &a, const std::string &name) {
    weft::Buffer<void> b;
    switch (a.elem) {
    case Elem::F32: b = weft::Buffer<float>((float *)a.raw(), a.extents, name); break;
    case Elem::U16: b = weft::Buffer<uint16_t>((uint16_t *)a.raw(), a.extents, name); break;
    case Elem::U8: b = weft::Buffer<uint8_t>((uint8_t *)a.raw(), a.extents, name); break;
    case Elem::I32: b = weft::Buffer<int32_t>((int32_t *)a.raw(), a.extents, name); break;
    }
    b.set_min(a.mins);
    return b;
}

/** A compiled app bound to a problem's arrays: run() computes p.output. Nothing is compiled
    before the first run(). */
struct WeftRunner {
    Problem p;
    WeftDef def;
    weft::Callable fn;
    std::vector<weft::Buffer<void>> bufs;  // inputs, then the output
    std::vector<weft::internal::CallArg> call_args;  // bufs as the call's arguments (made once)
    WeftRunner(const WeftApp &app, int size, bool scheduled) {
        p = app.make(size);
        def = app.build(size, scheduled);
        if (def.inputs.size() != p.inputs.size())
            throw weft::Error(app.info().name + ": the pipeline takes " + std::to_string(def.inputs.size()) +
                              " inputs, the problem has " + std::to_string(p.inputs.size()));
        std::vector<weft::Argument> args(def.inputs.begin(), def.inputs.end());
        fn = weft::Pipeline(def.out).compile_to_callable(args);
        for (size_t i = 0; i < p.inputs.size(); i++) bufs.push_back(weft_buffer(p.inputs[i], def.inputs[i].name()));
        bufs.push_back(weft_buffer(p.output, "output"));
        for (auto &b : bufs) call_args.push_back(weft::internal::make_call_arg(b));
    }
    void run() {
        int rc = fn.call(call_args.data(), call_args.size());
        if (rc != 0) throw weft::Error("the pipeline returned " + std::to_string(rc));
    }
};

}  // namespace suite

/** Registers app `name` (a namespace suite::name with info, make, reference and build). */
#define WEFT_SUITE_APP(name)                                                                                        \
    namespace {                                                                                                     \
    const suite::RegisterWeftApp register_##name(suite::WeftApp{&suite::name::info, &suite::name::make,            \
                                                                &suite::name::reference, &suite::name::build});   \
    }
