// weft_bench_overhead: what the JIT costs.
//   1. the first call of a two-stage 3x3 blur in a fresh process (JIT and LLVM start-up included);
//      this must be the first weft call in the process, so nothing else runs before it;
//   2. the first call of a second, different pipeline in the same process (its compile time);
//   3. the per-call overhead of a cached call of a trivial pipeline writing a preallocated
//      16x16 output (100k calls, median over batches), and the variant that allocates its output.
// Prints a table with Halide 14's figures for reference and writes overhead.json
// (bench/overhead.json in the source tree, or the path given as the first argument).
#include <weft/weft.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
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

}  // namespace

int main(int argc, char **argv) {
    using namespace weft;
    std::string json_path = argc > 1 ? argv[1] : WEFT_BENCH_JSON;

    // 1. The very first weft call in this process: a two-stage 3x3 blur.
    double first_ms;
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
        first_ms = now_ms() - t0;
    }

    // 2. A second, different pipeline in the same process.
    double second_ms;
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
        second_ms = now_ms() - t0;
    }

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
    std::printf("\nkernel cache: %llu compilations, %llu hits, %llu misses, %llu entries\n",
                (unsigned long long)s.compilations, (unsigned long long)s.hits, (unsigned long long)s.misses,
                (unsigned long long)s.entries);

    std::ofstream js(json_path);
    if (js) {
        char buf[1024];
        std::snprintf(buf, sizeof buf,
                      "{\n"
                      "  \"target\": \"%s\",\n"
                      "  \"first_call_ms\": %.3f,\n"
                      "  \"second_pipeline_compile_ms\": %.3f,\n"
                      "  \"cached_call_preallocated_us\": %.4f,\n"
                      "  \"cached_call_allocating_us\": %.4f,\n"
                      "  \"cached_call_callable_us\": %.4f,\n"
                      "  \"calls_measured\": %d,\n"
                      "  \"halide14_reference\": {\"first_call_ms\": [400, 650], \"later_compile_ms\": [62, 90], "
                      "\"cached_call_preallocated_us\": 0.16, \"cached_call_allocating_us\": 0.36}\n"
                      "}\n",
                      Target::host().str().c_str(), first_ms, second_ms, prealloc_us, alloc_us, callable_us,
                      batches * per_batch);
        js << buf;
        std::printf("wrote %s\n", json_path.c_str());
    } else {
        std::printf("could not write %s\n", json_path.c_str());
    }
    return 0;
}
