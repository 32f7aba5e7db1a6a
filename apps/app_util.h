// Shared helpers for the example apps: timing and result reporting.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <cstdlib>
#include <string>
#include <vector>

#include <weft/weft.h>

namespace weft_apps {

inline double now_ms() {
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

struct Timing {
    double first_ms = 0;   // the first call, JIT compilation included
    double median_ms = 0;  // median of the cached calls
};

/** Times fn once (the first call) and then `reps` more times; reports the median of the
    latter. With batch > 1 each timed sample is `batch` calls followed by `finish` (on a GPU:
    kernels queued back to back, then one wait), divided by batch. */
inline Timing time_calls(const std::function<void()> &fn, int reps = 20, int batch = 1,
                         const std::function<void()> &finish = [] {}) {
    Timing t;
    double t0 = now_ms();
    fn();
    finish();
    t.first_ms = now_ms() - t0;
    std::vector<double> v;
    for (int i = 0; i < reps; i++) {
        double a = now_ms();
        for (int b = 0; b < batch; b++) fn();
        finish();
        v.push_back((now_ms() - a) / batch);
    }
    std::sort(v.begin(), v.end());
    t.median_ms = v[v.size() / 2];
    return t;
}

/** The apps' command line: --target <host | host-cuda | cuda> (the CPU by default; a GPU
    target runs the app's GPU schedule) and --size <n> (the problem's side). */
struct Options {
    weft::Target target = weft::Target::host();
    int size = 0;  // 0: the app's default
    bool gpu() const { return target.arch() == weft::Target::Arch::CUDA; }
};

/** Parses argv[first...]; throws weft::Error naming what is wrong. */
inline Options parse_options(int argc, char **argv, int first = 1) {
    Options o;
    for (int i = first; i < argc; i++) {
        std::string a = argv[i];
        if ((a == "--target" || a == "--size") && i + 1 >= argc) throw weft::Error(a + " needs a value");
        if (a == "--target") {
            o.target = weft::Target::from_string(argv[++i]);
        } else if (a == "--size") {
            std::string v = argv[++i];
            char *end = nullptr;
            long n = std::strtol(v.c_str(), &end, 10);
            if (v.empty() || *end || n < 16 || n > 16384)
                throw weft::Error("--size " + v + ": give a whole number from 16 to 16384");
            o.size = (int)n;
        } else {
            throw weft::Error("unknown argument \"" + a + "\" (usage: [--target host|host-cuda] [--size n])");
        }
    }
    return o;
}

/** Each app: returns 0 when its result matches the plain C++ reference. */
int run_blur(const Options &o);
int run_matmul(const Options &o);
int run_histogram(const Options &o);

/** main() of a single app: options, run, errors as messages (exit code 2). */
inline int app_main(const char *name, int (*run)(const Options &), int argc, char **argv) {
    try {
        return run(parse_options(argc, argv));
    } catch (const std::exception &e) {
        std::printf("%s: error: %s\n", name, e.what());
        return 2;
    }
}

}  // namespace weft_apps
