// weft_demo: runs the example apps on built-in data and reports whether each matches its
// plain C++ reference.
#include <weft/weft.h>

#include <cstdio>
#include <exception>

#include "app_util.h"

int main() {
    std::printf("weft demo: target %s\n", weft::Target::host().str().c_str());
    int failures = 0;
    auto run = [&](const char *name, int (*fn)()) {
        try {
            if (fn() != 0) failures++;
        } catch (const std::exception &e) {
            std::printf("%s: error: %s\n", name, e.what());
            failures++;
        }
    };
    run("blur", weft_apps::run_blur);
    run("matmul", weft_apps::run_matmul);
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
