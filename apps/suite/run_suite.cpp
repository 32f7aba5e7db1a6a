// weft_app_suite: runs the ported Halide apps (apps/suite), each checked against its plain C++
// reference, and prints the first call's time (JIT included) and the median of later calls.
//   weft_app_suite [APP...] [--size N | --test] [--unscheduled | --both | --auto [--budget S] | --schedule FILE]
//                  [--reps N] [--list]
// Sizes: the app's default (what bench/run races), --test (small), or --size; the unscheduled
// version runs at the app's unscheduled_size unless --size is given.
// --auto schedules the algorithm with Pipeline::auto_schedule instead of Halide's schedule (the
// cost model alone, or a measured search of S seconds with --budget) and prints the schedule.
// --schedule FILE applies the schedule calls in FILE (as --auto prints them, or written by hand;
// Pipeline::apply_schedule_source) to the algorithm instead of Halide's schedule.
// --ir prints the lowered IR instead of running. With no APP, every app. Exit status: 0 all matched, 1 a mismatch, 2 an error.
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "weft_suite.h"

namespace {

double now_ms() {
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

int usage(const char *msg) {
    std::fprintf(stderr,
                 "weft_app_suite: %s\nusage: weft_app_suite [APP...] [--size N | --test] [--unscheduled | --both] "
                 "[--auto [--budget S] | --schedule FILE] [--reps N] [--list] [--ir]\n",
                 msg);
    return 2;
}

/** Runs one app once with or without its schedule; returns 0 (matched), 1 (mismatch). */
int run_one(const suite::WeftApp &app, int size, bool scheduled, int reps, bool autos, double budget,
            const std::string *source) {
    suite::AppInfo info = app.info();
    using V = suite::WeftRunner::Variant;
    V v = source ? V::Source : autos ? V::Auto : scheduled ? V::Manual : V::None;
    suite::WeftRunner r(app, size, v, budget, source ? *source : std::string());
    if (autos)
        std::printf("%-24s auto_schedule: %.1f ms, predicted %.3f ms%s; the schedule:\n%s", info.name.c_str(), r.auto_ms,
                    r.autos.predicted_ms, r.autos.candidates_measured ? (", " + std::to_string(r.autos.candidates_measured) +
                                                                          " candidates measured").c_str() : "",
                    r.autos.schedule_source.c_str());
    double c0 = weft::cache_stats().compile_ms, t0 = now_ms();
    r.run();
    double first = now_ms() - t0, compiled = weft::cache_stats().compile_ms - c0;
    double median = suite::median_ms([&] { r.run(); }, reps, now_ms);
    double max_abs = 0;
    size_t bad = suite::check_against_reference(app, r.p, info, &max_abs);
    std::printf("%-24s %-11s size %5d: first call %8.1f ms (JIT included: compilation %.1f ms), median of %d calls %9.3f ms: "
                "%s (max |weft - reference| %g)\n",
                info.name.c_str(), source ? "from file" : autos ? "auto" : scheduled ? "scheduled" : "unscheduled", size, first,
                compiled, reps, median, bad ? "MISMATCH" : "OK", max_abs);
    if (bad)
        std::printf("  %zu of %zu values differ beyond %g + %g * |reference|\n", bad, r.p.output.count, info.atol, info.rtol);
    std::fflush(stdout);
    return bad ? 1 : 0;
}

}  // namespace

int main(int argc, char **argv) {
    std::vector<std::string> names;
    int size = 0, reps = 5;
    bool test = false, sched = true, unsched = false, ir = false, autos = false;
    double budget = 0;
    bool have_source = false;
    std::string source;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        if (a == "--size" || a == "--reps") {
            if (i + 1 >= argc) return usage((a + " needs a value").c_str());
            char *end = nullptr;
            long v = std::strtol(argv[++i], &end, 10);
            if (*end || v < (a == "--size" ? 8 : 0) || v > 100000) return usage(("bad value for " + a).c_str());
            (a == "--size" ? size : reps) = (int)v;
        } else if (a == "--auto") {
            autos = true;
        } else if (a == "--budget") {
            if (i + 1 >= argc) return usage("--budget needs a value");
            char *end = nullptr;
            budget = std::strtod(argv[++i], &end);
            if (*end || !(budget >= 0) || budget > 3600) return usage("bad value for --budget");
        } else if (a == "--schedule") {
            if (i + 1 >= argc) return usage("--schedule needs a file");
            std::FILE *f = std::fopen(argv[++i], "rb");
            if (!f) return usage((std::string("cannot read ") + argv[i] + ": " + std::strerror(errno)).c_str());
            char buf[4096];
            size_t n;
            while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) source.append(buf, n);
            std::fclose(f);
            have_source = true;
        } else if (a == "--ir") {
            ir = true;
        } else if (a == "--test") {
            test = true;
        } else if (a == "--unscheduled") {
            sched = false;
            unsched = true;
        } else if (a == "--both") {
            sched = unsched = true;
        } else if (a == "--list") {
            for (const auto &app : suite::weft_apps()) {
                suite::AppInfo in = app.info();
                std::printf("%-24s default size %5d (%s): %s\n", in.name.c_str(), in.default_size, in.size_meaning.c_str(),
                            in.description.c_str());
            }
            return 0;
        } else if (a == "--help" || a == "-h") {
            std::printf("usage: weft_app_suite [APP...] [--size N | --test] [--unscheduled | --both] "
                        "[--auto [--budget S] | --schedule FILE] [--reps N] [--list] [--ir]\n"
                        "Runs each APP (all without one; --list lists them) with its expert schedule, checks it "
                        "against its C++ reference and times it.\n");
            return 0;
        } else if (!a.empty() && a[0] == '-') {
            return usage(("unknown option " + a).c_str());
        } else {
            if (!suite::find_weft_app(a)) return usage(("no app named " + a + " (--list lists them)").c_str());
            names.push_back(a);
        }
    }
    if (have_source && autos) return usage("--schedule and --auto: choose one");
    if (have_source && !sched) return usage("--schedule and --unscheduled: choose one (--both runs the file's schedule and none)");
    if (names.empty())
        for (const auto &app : suite::weft_apps()) names.push_back(app.info().name);
    int rc = 0;
    for (const std::string &n : names) {
        const suite::WeftApp &app = *suite::find_weft_app(n);
        suite::AppInfo info = app.info();
        for (int pass = 0; pass < 2; pass++) {
            bool scheduled = pass == 0;
            if (scheduled ? !sched : !unsched) continue;
            int s = size ? size : !scheduled ? info.unscheduled_size : test ? info.test_size : info.default_size;
            if (s == 0) {
                std::printf("%-24s unscheduled: not run (everything inlined is exponential in this pipeline's "
                            "depth; --size runs it anyway)\n",
                            n.c_str());
                continue;
            }
            try {
                if (ir) {
                    using V = suite::WeftRunner::Variant;
                    bool from_file = have_source && scheduled;
                    suite::WeftRunner r(app, s, from_file ? V::Source : scheduled ? V::Manual : V::None, 0, source);
                    for (size_t i = 0; i < r.p.inputs.size(); i++) r.def.inputs[i].set(r.bufs[i]);
                    std::printf("%s\n", weft::Pipeline(r.def.out).lowered_ir(r.p.output.extents).c_str());
                    continue;
                }
                rc = std::max(rc, run_one(app, s, scheduled, reps, autos && scheduled, budget,
                                             have_source && scheduled ? &source : nullptr));
            } catch (const std::exception &e) {
                std::printf("%-24s %-11s size %5d: error: %s\n", n.c_str(),
                            have_source && scheduled ? "from file" : scheduled ? "scheduled" : "unscheduled", s, e.what());
                rc = 2;
            }
        }
    }
    return rc;
}
