// weft_bench_overhead: what the JIT costs.
//   1. the first call of a two-stage 3x3 blur in a fresh process (JIT and LLVM start-up included);
//      this must be the first weft call in the process, so nothing else runs before it;
//   2. the first call of a second, different pipeline in the same process (its compile time);
//   3. the per-call overhead of a cached call of a trivial pipeline writing a preallocated
//      16x16 output (100k calls, median over batches), and the variant that allocates its output;
//   4. the disk cache (WEFT_CACHE_DIR, a fresh folder): the blur's first call in a fresh process
//      that finds it on disk, against one that compiles it; and in one process, a small
//      pipeline loaded from disk against compiled (1. and 2. run with the disk cache off).
// Prints a table with Halide 14's figures for reference and writes overhead.json
// (bench/overhead.json in the source tree, or the path given as the first argument).
#include <weft/weft.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <fstream>
#include <string>
#include <vector>

namespace {

double now_ms() {
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

/** Median per-call time in microseconds over `batches` batches of `per_batch` calls. */
template <typename F>
double median_call_us(F &&fn, int batches, int per_batch) {
    std::vector<double> v;
    for (int b = 0; b < batches; b++) {
        double t0 = now_ms();
        for (int i = 0; i < per_batch; i++) fn();
        v.push_back((now_ms() - t0) * 1000.0 / per_batch);
    }
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

/** The first call of a two-stage 3x3 blur (the first weft call of its process), in ms. */
double blur_first_call_ms() {
    using namespace weft;
    {
        const int W = 256, H = 256;
        Buffer<float> in(W + 2, H + 2);
        in.set_min(-1, -1);
        for (int y = -1; y <= H; y++)
            for (int x = -1; x <= W; x++) in(x, y) = (float)((x + y) % 7);
        Var x("x"), y("y"), yi("yi");
        Func bx("bench_blur_x"), by("bench_blur_y");
        bx(x, y) = (in(x - 1, y) + in(x, y) + in(x + 1, y)) / 3.0f;
        by(x, y) = (bx(x, y - 1) + bx(x, y) + bx(x, y + 1)) / 3.0f;
        by.split(y, y, yi, 32).parallel(y).vectorize(x, 8);
        bx.compute_at(by, yi).vectorize(x, 8);
        Buffer<float> out(W, H);
        double t0 = now_ms();
        by.realize(out);
        return now_ms() - t0;
    }
}

/** The first call of a small matrix product pipeline (defined afresh), in ms. */
double small_pipeline_ms() {
    using namespace weft;
    {
        const int N = 64;
        Buffer<float> A(N, N), B(N, N);
        A.fill(1.0f);
        B.fill(2.0f);
        Var i("i"), j("j");
        RDom k(0, N);
        Func mm("bench_mm"), outf("bench_mm_out");
        mm(i, j) = 0.0f;
        mm(i, j) += A(k, j) * B(i, k);
        outf(i, j) = mm(i, j) * 0.5f + 1.0f;
        mm.compute_root().update(0).vectorize(i, 8);
        outf.vectorize(i, 8);
        Buffer<float> out(N, N);
        double t0 = now_ms();
        outf.realize(out);
        return now_ms() - t0;
    }
}

/** The blur's first call in a fresh process (this program run with --first-call) whose disk
    cache is dir, in ms; negative if it failed. */
double fresh_process_ms(const std::string &dir) {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return -1;
    self[n] = 0;
    std::string cmd = "WEFT_CACHE_DIR='" + dir + "' '" + self + "' --first-call";
    FILE *p = popen(cmd.c_str(), "r");
    if (!p) return -1;
    double ms = -1;
    if (std::fscanf(p, "%lf", &ms) != 1) ms = -1;
    return pclose(p) == 0 ? ms : -1;
}

}  // namespace

int main(int argc, char **argv) {
    using namespace weft;
    if (argc > 1 && std::string(argv[1]) == "--first-call") {  // a fresh process for 4.
        std::printf("%.4f\n", blur_first_call_ms());
        return 0;
    }
    // One optional argument, the JSON's path; an option (--help) or a second argument is
    // answered with the usage, not taken for a file name.
    if (argc > 2 || (argc > 1 && (argv[1][0] == '-' || argv[1][0] == 0))) {
        std::fprintf(stderr, "usage: %s [out.json]   (default %s)\n", argv[0], WEFT_BENCH_JSON);
        return argc == 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") ? 0 : 2;
    }
    std::string json_path = argc > 1 ? argv[1] : WEFT_BENCH_JSON;
    setenv("WEFT_CACHE_DIR", "off", 1);  // 1. and 2. measure compiles

    // 1. The very first weft call in this process: a two-stage 3x3 blur.
    double first_ms = blur_first_call_ms();

    // 2. A second, different pipeline in the same process.
    double second_ms = small_pipeline_ms();

    // 3. Cached calls of a trivial pipeline.
    const int batches = 100, per_batch = 1000;  // 100k calls
    Var x("x"), y("y");
    Func triv("bench_trivial");
    triv(x, y) = x + y;
    Buffer<int> pre(16, 16);
    triv.realize(pre);  // compile once
    double prealloc_us = median_call_us([&] { triv.realize(pre); }, batches, per_batch);
    double alloc_us = median_call_us(
        [&] {
            Buffer<int> o = triv.realize({16, 16});
            (void)o;
        },
        batches, per_batch);
    Callable fn = Pipeline(triv).compile_to_callable({});
    fn(pre);
    double callable_us = median_call_us([&] { fn(pre); }, batches, per_batch);

    // 4. The disk cache, in a fresh folder.
    char tmpl[] = "/tmp/weft-bench-cache-XXXXXX";
    std::string dir = mkdtemp(tmpl) ? tmpl : "";
    double fresh_compile_ms = fresh_process_ms(dir);  // compiles, and writes the entry
    double fresh_load_ms = fresh_process_ms(dir);     // loads it
    setenv("WEFT_CACHE_DIR", dir.c_str(), 1);
    clear_cache();
    double small_compile_ms = small_pipeline_ms();  // compiles, and writes the entry
    uint64_t disk_writes = cache_stats().disk_writes;
    clear_cache();
    double small_load_ms = small_pipeline_ms();  // loads it
    uint64_t disk_hits = cache_stats().disk_hits;
    std::string rm = "rm -rf '" + dir + "'";
    if (!dir.empty() && std::system(rm.c_str()) != 0) std::printf("could not remove %s\n", dir.c_str());

    CacheStats s = cache_stats();
    std::printf("weft JIT overhead (target %s)\n\n", Target::host().str().c_str());
    std::printf("%-58s %14s %18s\n", "measurement", "weft", "Halide 14 (ref.)");
    std::printf("%-58s %11.1f ms %18s\n", "first call in a fresh process, 3x3 blur (JIT included)", first_ms,
                "400-650 ms");
    std::printf("%-58s %11.1f ms %18s\n", "first call of a second, different pipeline", second_ms, "62-90 ms");
    std::printf("%-58s %11.3f us %18s\n", "cached call, preallocated 16x16 output (realize(buf))", prealloc_us,
                "0.16 us");
    std::printf("%-58s %11.3f us %18s\n", "cached call, allocating 16x16 output (realize({16,16}))", alloc_us,
                "0.36 us");
    std::printf("%-58s %11.3f us %18s\n", "cached call through a Callable, preallocated 16x16", callable_us, "-");
    std::printf("%-58s %11.1f ms %18s\n", "first call in a fresh process, 3x3 blur, compiled and written",
                fresh_compile_ms, "(no disk cache)");
    std::printf("%-58s %11.1f ms %18s\n", "first call in a fresh process, 3x3 blur, loaded from disk", fresh_load_ms,
                "(no disk cache)");
    std::printf("%-58s %11.1f ms %18s\n", "small pipeline compiled (then written to disk)", small_compile_ms, "62-90 ms");
    std::printf("%-58s %11.1f ms %18s\n", "small pipeline loaded from disk", small_load_ms, "(no disk cache)");
    std::printf("%-58s %11.2f    %18s\n", "  loaded / compiled (must be <= 0.33)", small_load_ms / small_compile_ms, "");
    std::printf("(disk cache in this process: %llu written, then %llu loaded)\n", (unsigned long long)disk_writes,
                (unsigned long long)disk_hits);
    std::printf("\nkernel cache: %llu compilations, %llu hits, %llu misses, %llu entries\n",
                (unsigned long long)s.compilations, (unsigned long long)s.hits, (unsigned long long)s.misses,
                (unsigned long long)s.entries);

    std::ofstream js(json_path);
    if (js) {
        char buf[2048];
        std::snprintf(buf, sizeof buf,
                      "{\n"
                      "  \"target\": \"%s\",\n"
                      "  \"first_call_ms\": %.3f,\n"
                      "  \"second_pipeline_compile_ms\": %.3f,\n"
                      "  \"cached_call_preallocated_us\": %.4f,\n"
                      "  \"cached_call_allocating_us\": %.4f,\n"
                      "  \"cached_call_callable_us\": %.4f,\n"
                      "  \"calls_measured\": %d,\n"
                      "  \"fresh_process_blur_compiled_ms\": %.3f,\n"
                      "  \"fresh_process_blur_from_disk_ms\": %.3f,\n"
                      "  \"small_pipeline_compiled_ms\": %.3f,\n"
                      "  \"small_pipeline_from_disk_ms\": %.3f,\n"
                      "  \"disk_load_over_compile\": %.4f,\n"
                      "  \"halide14_reference\": {\"first_call_ms\": [400, 650], \"later_compile_ms\": [62, 90], "
                      "\"cached_call_preallocated_us\": 0.16, \"cached_call_allocating_us\": 0.36}\n"
                      "}\n",
                      Target::host().str().c_str(), first_ms, second_ms, prealloc_us, alloc_us, callable_us,
                      batches * per_batch, fresh_compile_ms, fresh_load_ms, small_compile_ms, small_load_ms,
                      small_load_ms / small_compile_ms);
        js << buf;
        std::printf("wrote %s\n", json_path.c_str());
    } else {
        std::printf("could not write %s\n", json_path.c_str());
    }
    return 0;
}
