// Per-Func profiling: ids for the runtime's counters, the switch, and the report.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <vector>
#include "runtime/Runtime.h"
#include "lang/Function.h"
#include "pipeline/PipelineInternal.h"
#include "weft/Pipeline.h"

namespace weft {
namespace internal {

namespace {
std::mutex g_mutex;
std::vector<std::string> &names() {
    static auto *v = new std::vector<std::string>;
    return *v;
}
std::atomic<int> g_profile{-1};

void print_at_exit() { std::fprintf(stderr, "%s", profile_report().c_str()); }
}  // namespace

void profile_report_at_exit() {
    static std::once_flag once;
    std::call_once(once, [] { std::atexit(print_at_exit); });
}

/** The counter id of a profiled item (a Func, by name). */
int profile_id(const std::string &name) {
    std::lock_guard<std::mutex> l(g_mutex);
    auto &v = names();
    auto it = std::find(v.begin(), v.end(), name);
    if (it != v.end()) return (int)(it - v.begin());
    v.push_back(name);
    return (int)v.size() - 1;
}

}  // namespace internal

void set_profile(bool on) {
    internal::g_profile = on ? 1 : 0;
    internal::forget_last_kernels();  // instrumented and plain kernels differ: no pipeline reuses its last one
}

bool profile_enabled() {
    int p = internal::g_profile.load();
    if (p < 0) {
        const char *e = std::getenv("WEFT_PROFILE");
        p = (e && *e && std::string(e) != "0") ? 1 : 0;
        int expected = -1;
        if (internal::g_profile.compare_exchange_strong(expected, p) && p) internal::profile_report_at_exit();
    }
    return p == 1;
}

std::string profile_report() {
    std::vector<std::string> v;
    {
        std::lock_guard<std::mutex> l(internal::g_mutex);
        v = internal::names();
    }
    struct Row {
        std::string name;
        uint64_t ns, count;
    };
    std::vector<Row> rows;
    uint64_t total = 0;
    for (size_t i = 0; i < v.size(); i++) {
        uint64_t ns, count;
        weft_rt_profile_read((int32_t)i, &ns, &count);
        if (count == 0) continue;
        rows.push_back({v[i], ns, count});
        total += ns;
    }
    std::sort(rows.begin(), rows.end(), [](const Row &a, const Row &b) { return a.ns > b.ns; });
    std::ostringstream os;
    os << "weft profile (time per Func, summed over threads, producers computed inside excluded)\n";
    char line[256];
    std::snprintf(line, sizeof line, "  %-32s %12s %7s %10s\n", "Func", "ms", "%", "runs");
    os << line;
    for (auto &r : rows) {
        std::snprintf(line, sizeof line, "  %-32s %12.3f %6.1f%% %10llu\n", r.name.c_str(), r.ns / 1e6,
                      total ? 100.0 * r.ns / total : 0.0, (unsigned long long)r.count);
        os << line;
    }
    if (rows.empty()) os << "  (nothing profiled: enable with WEFT_PROFILE=1 or weft::set_profile(true))\n";
    return os.str();
}

void reset_profile() { weft_rt_profile_reset(); }

}  // namespace weft
