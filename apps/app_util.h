// Shared helpers for the example apps: timing and result reporting.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

namespace weft_apps {

inline double now_ms() {
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

struct Timing {
    double first_ms = 0;   // the first call, JIT compilation included
    double median_ms = 0;  // median of the cached calls
};

/** Times fn once (the first call) and then `reps` more times; reports the median of the latter. */
inline Timing time_calls(const std::function<void()> &fn, int reps = 20) {
    Timing t;
    double t0 = now_ms();
    fn();
    t.first_ms = now_ms() - t0;
    std::vector<double> v;
    for (int i = 0; i < reps; i++) {
        double a = now_ms();
        fn();
        v.push_back(now_ms() - a);
    }
    std::sort(v.begin(), v.end());
    t.median_ms = v[v.size() / 2];
    return t;
}

/** Each app: returns 0 when its result matches the plain C++ reference. */
int run_blur();
int run_matmul();

}  // namespace weft_apps
