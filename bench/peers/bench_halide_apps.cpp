// Halide 14 peer of the app suite (apps/suite): Halide's apps with their expert CPU schedules
// (variant "manual") or none (variant "none"), JIT-compiled for the host. Speaks the protocol of
// bench_common.h, kernel names app_<name>, size as in the app's info. Also:
//   bench_halide_apps --check [APP...] [--size N | --test] [--unscheduled]
// runs the apps and compares them with the plain C++ references (exit status 1 on a mismatch).
// Built by bench/run: g++ bench_halide_apps.cpp halide_apps/*.cpp -I../../apps/suite -lHalide14.
#include <malloc.h>

#include <chrono>

#include "bench_common.h"
#include "halide_apps/halide_suite.h"

namespace {

/** The host target, without the features Halide 14 wrongly finds on AMD Zen 4: it reports
    avx512_sapphirerapids there and then emits AVX512-FP16 instructions Zen 4 lacks (SIGILL).
    HL_JIT_TARGET, where set, is used as given. */
Halide::Target jit_target() {
    Halide::Target t = Halide::get_jit_target_from_environment();
    if (!std::getenv("HL_JIT_TARGET")) t = t.without_feature(Halide::Target::AVX512_SapphireRapids);
    return t;
}

/** Halide builds its runtime with the first pipeline of a process (about 350 ms): done once at
    start, so that each app's setup time is the compilation of that app alone. */
void warm_up_runtime() {
    Halide::Func f("warm_up");
    Halide::Var x("x");
    f(x) = x * 2;
    f.compile_jit(jit_target());
    Halide::Buffer<int> b(16);
    f.realize(b);
}

double now_ms() {
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

struct AppKernel : bench::Kernel {
    suite::Problem p;
    Halide::Pipeline pipe;
    std::vector<Halide::Buffer<>> bufs;
    Halide::Buffer<> output;
    mutable std::vector<float> out_f;
    AppKernel(const suite::HalideApp &app, int size, bool scheduled) {
        p = app.make(size);
        suite::HalideDef d = app.build(size, scheduled);
        if (d.inputs.size() != p.inputs.size()) throw std::runtime_error(app.info().name + ": input count differs");
        for (size_t i = 0; i < p.inputs.size(); i++) {
            bufs.push_back(suite::halide_buffer(p.inputs[i]));
            d.inputs[i].set(bufs.back());
        }
        output = suite::halide_buffer(p.output);
        pipe = Halide::Pipeline(d.out);
        double t0 = now_ms();
        pipe.compile_jit(jit_target());
        compile_time = now_ms() - t0;
    }
    double compile_time = 0;
    double compile_ms() const override { return compile_time; }
    void run() override { pipe.realize(output); }
    const float *out() const override {
        p.output.to_float(out_f);
        return out_f.data();
    }
    size_t out_size() const override { return p.output.count; }
};


int check(int argc, char **argv) {
    std::vector<std::string> names;
    int size = 0;
    bool test = false, scheduled = true;
    for (int i = 2; i < argc; i++) {
        std::string a = argv[i];
        if (a == "--size" && i + 1 < argc) size = std::atoi(argv[++i]);
        else if (a == "--test") test = true;
        else if (a == "--unscheduled") scheduled = false;
        else if (suite::find_halide_app(a)) names.push_back(a);
        else {
            std::fprintf(stderr, "bench_halide_apps: unknown argument or app %s\n", a.c_str());
            return 2;
        }
    }
    if (names.empty())
        for (auto &a : suite::halide_apps()) names.push_back(a.info().name);
    warm_up_runtime();
    int rc = 0;
    for (auto &n : names) {
        const suite::HalideApp &app = *suite::find_halide_app(n);
        suite::AppInfo info = app.info();
        int s = size ? size : !scheduled ? info.unscheduled_size : test ? info.test_size : info.default_size;
        if (s == 0) {
            std::printf("halide %-22s unscheduled: not run (exponential when everything is inlined)\n", n.c_str());
            continue;
        }
        try {
            double t0 = now_ms();
            AppKernel k(app, s, scheduled);
            double t1 = now_ms();
            k.run();
            double t2 = now_ms();
            double median = suite::median_ms([&] { k.run(); }, 5, now_ms);
            double max_abs = 0;
            size_t bad = suite::check_against_reference(app, k.p, info, &max_abs);
            std::printf("halide %-22s %-11s size %5d: compile %7.1f ms, first call %8.1f ms, median %9.3f ms: %s "
                        "(max |halide - reference| %g, %zu bad)\n",
                        n.c_str(), scheduled ? "scheduled" : "unscheduled", s, t1 - t0, t2 - t1, median,
                        bad ? "MISMATCH" : "OK", max_abs, bad);
            if (bad) rc = std::max(rc, 1);
        } catch (const std::exception &e) {
            std::printf("halide %-22s error: %s\n", n.c_str(), e.what());
            rc = 2;
        }
    }
    return rc;
}

}  // namespace

int main(int argc, char **argv) {
    // Freed blocks stay in the process (page faults are slow on these machines): what an
    // expert does for Halide's per-call allocations here (as bench_halide does).
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    if (argc > 1 && std::string(argv[1]) == "--check") return check(argc, argv);
    bench::protect_stdout();
    warm_up_runtime();
    return bench::serve([](const std::string &k, const std::string &v, int size) -> std::unique_ptr<bench::Kernel> {
        if (k.rfind("app_", 0) != 0) return nullptr;
        const suite::HalideApp *app = suite::find_halide_app(k.substr(4));
        if (!app) return nullptr;
        if (v != "manual" && v != "none") throw std::runtime_error("variant " + v + ": manual or none");
        return std::make_unique<AppKernel>(*app, size, v == "manual");
    });
}
