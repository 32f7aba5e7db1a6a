// weft's side of the app suite: each apps/suite/<app>.cpp registers one WeftApp with
// WEFT_SUITE_APP(<app>), defined below; run_suite.cpp runs them, bench/weft_kernels.cpp races
// them against Halide (bench/run).
#pragma once
#include <weft/weft.h>

#include <chrono>
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
    /** Manual: Halide's expert schedule translated; None: no schedule (everything inlined);
        Auto: no schedule, then Pipeline::auto_schedule for the problem's shapes (with
        `budget` seconds of measured search; 0: the cost model alone); Source: no schedule,
        then `source` (schedule calls as schedule_source prints them) applied with
        Pipeline::apply_schedule_source. */
    enum class Variant { Manual, None, Auto, Source };
    Problem p;
    WeftDef def;
    weft::Callable fn;
    std::vector<weft::Buffer<void>> bufs;  // inputs, then the output
    std::vector<weft::internal::CallArg> call_args;  // bufs as the call's arguments (made once)
    weft::AutoScheduleResult autos;  // Variant::Auto: what auto_schedule said
    double auto_ms = 0;              // Variant::Auto: the time auto_schedule took
    double build_ms = 0;             // building the pipeline (auto_schedule included), not the data
    WeftRunner(const WeftApp &app, int size, bool scheduled)
        : WeftRunner(app, size, scheduled ? Variant::Manual : Variant::None) {}
    WeftRunner(const WeftApp &app, int size, Variant v, double budget = 0, const std::string &source = "") {
        p = app.make(size);
        auto b0 = std::chrono::steady_clock::now();
        def = app.build(size, v == Variant::Manual);
        if (def.inputs.size() != p.inputs.size())
            throw weft::Error(app.info().name + ": the pipeline takes " + std::to_string(def.inputs.size()) +
                              " inputs, the problem has " + std::to_string(p.inputs.size()));
        for (size_t i = 0; i < p.inputs.size(); i++) bufs.push_back(weft_buffer(p.inputs[i], def.inputs[i].name()));
        bufs.push_back(weft_buffer(p.output, "output"));
        if (v == Variant::Auto) {
            auto region = [](const weft::Buffer<void> &b) {
                std::vector<std::pair<weft::Expr, weft::Expr>> r;
                for (int d = 0; d < b.dimensions(); d++) r.push_back({b.dim(d).min(), b.dim(d).extent()});
                return r;
            };
            for (size_t i = 0; i < def.inputs.size(); i++) def.inputs[i].set_estimates(region(bufs[i]));
            def.out.set_estimates(region(bufs.back()));
            weft::AutoScheduleOptions o;
            o.budget_seconds = budget;
            auto t0 = std::chrono::steady_clock::now();
            autos = weft::Pipeline(def.out).auto_schedule(weft::Target::host(), o);
            auto_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        }
        if (v == Variant::Source) weft::Pipeline(def.out).apply_schedule_source(source);
        std::vector<weft::Argument> args(def.inputs.begin(), def.inputs.end());
        fn = weft::Pipeline(def.out).compile_to_callable(args);
        for (auto &b : bufs) call_args.push_back(weft::internal::make_call_arg(b));
        build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - b0).count();
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
