// weft_demo: runs the example apps on built-in data and reports whether each matches its
// plain C++ reference. Usage: weft_demo [--target host|host-cuda] [--size n] (the apps' GPU
// schedules with host-cuda; the size of both problems).
#include <weft/weft.h>

#include <cstdio>
#include <exception>

#include "app_util.h"

int main(int argc, char **argv) {
    weft_apps::Options o;
    try {
        o = weft_apps::parse_options(argc, argv);
    } catch (const std::exception &e) {
        std::printf("weft demo: error: %s\n", e.what());
        return 2;
    }
    std::printf("weft demo: target %s%s\n", o.target.str().c_str(), o.gpu() ? " (GPU schedules)" : "");
    int failures = 0;
    auto run = [&](const char *name, int (*fn)(const weft_apps::Options &)) {
        try {
            if (fn(o) != 0) failures++;
        } catch (const std::exception &e) {
            std::printf("%s: error: %s\n", name, e.what());
            failures++;
        }
    };
    run("blur", weft_apps::run_blur);
    run("matmul", weft_apps::run_matmul);
    run("histogram", weft_apps::run_histogram);
    weft::CacheStats s = weft::cache_stats();
    std::printf("kernel cache: %llu compilations, %llu hits, %llu misses, %llu entries\n",
                (unsigned long long)s.compilations, (unsigned long long)s.hits, (unsigned long long)s.misses,
                (unsigned long long)s.entries);
    if (failures)
        std::printf("weft demo: %d FAILED\n", failures);
    else
        std::printf("weft demo: all OK\n");
    return failures ? 1 : 0;
}
