// Mixed precision (issue 20): a separable 3x3 box blur stored in float16 against the same blur stored in
// float32 (both compute in float32, the same schedule), on 1 and 2 threads. The float16 one moves
// half the bytes; on a memory-bound size its speedup shows what the conversions cost. Each result
// is checked bit for bit (float16 output == the float32 output rounded to float16) before
// timing; times are medians of alternating rounds.
// Usage: weft_bench_mixed_precision [--quick] [out.json]   (default bench/mixed_precision.json)
#include <weft/weft.h>
#include "per_thread_runs.h"
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

using namespace weft;

namespace {

double now_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}
/** The separable 3x3 box blur (Halide's expert blur schedule: rows of blur_x slide along y within
    a strip, vectorized), in float32 arithmetic, stored as T. */
template <typename T>
Func blur_of(Buffer<T> &in, bool separable) {
    Var x("x"), y("y"), yo("yo"), yi("yi");
    if (!separable) {  // one stage, nine taps
        Func b(std::string("blur_") + type_of<T>().str());
        Expr s = 0.0f;
        for (int dy = 0; dy < 3; dy++)
            for (int dx = 0; dx < 3; dx++) s = s + cast<float>(in(x + dx, y + dy));
        b(x, y) = cast<T>(s * (1.0f / 9.0f));
        b.vectorize(x, 32).split(y, yo, yi, 16).parallel(yo);
        return b;
    }
    Func bx(std::string("blur_x_") + type_of<T>().str()), b(std::string("blur_y_") + type_of<T>().str());
    bx(x, y) = cast<float>(in(x, y)) + cast<float>(in(x + 1, y)) + cast<float>(in(x + 2, y));
    b(x, y) = cast<T>((bx(x, y) + bx(x, y + 1) + bx(x, y + 2)) * (1.0f / 9.0f));
    b.split(y, yo, yi, 32).parallel(yo).vectorize(x, 32);  // (the same for both types)
    bx.store_at(b, yo).compute_at(b, yi).vectorize(x, 32);
    return b;
}

/** One thread count (this process's pool): {f32 ms, f16 ms, same bits}. */
std::string run_child(int threads, bool quick, bool separable) {
    const int W = quick ? 2048 : 4096, H = W;
    Buffer<float> in32(W + 2, H + 2);
    Buffer<float16_t> in16(W + 2, H + 2);
    for (int y = 0; y < H + 2; y++)
        for (int x = 0; x < W + 2; x++) {
            float v = (float)((x * 7 + y * 13) % 1024) / 64.0f;  // exact in float16
            in32(x, y) = v;
            in16(x, y) = float16_t(v);
        }
    Buffer<float> out32(W, H);
    Buffer<float16_t> out16(W, H);
    Func b32 = blur_of(in32, separable), b16 = blur_of(in16, separable);
    Pipeline p32(b32), p16(b16);
    p32.realize(out32);
    p16.realize(out16);
    bool same = true;
    for (int y = 0; y < H && same; y++)
        for (int x = 0; x < W; x++)
            if (out16(x, y).bits != float16_t(out32(x, y)).bits) {  // (both sum in the same order)
                same = false;
                break;
            }
    const int rounds = quick ? 5 : 11, reps = quick ? 3 : 6;
    std::vector<double> t32, t16;
    for (int r = 0; r < rounds; r++) {
        double t = now_ms();
        for (int i = 0; i < reps; i++) p32.realize(out32);
        t32.push_back((now_ms() - t) / reps);
        t = now_ms();
        for (int i = 0; i < reps; i++) p16.realize(out16);
        t16.push_back((now_ms() - t) / reps);
    }
    double m32 = median(t32), m16 = median(t16);
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "{\"name\": \"blur3x3_%s_%dx%d\", \"threads\": %d, \"float32_ms\": %.3f, \"float16_ms\": %.3f, "
                  "\"speedup\": %.3f, \"float32_gbps\": %.2f, \"float16_gbps\": %.2f, \"same_bits\": %s}",
                  separable ? "separable" : "direct", W, H, threads, m32, m16, m32 / m16, 8.0 * W * H / m32 / 1e6, 4.0 * W * H / m16 / 1e6,
                  same ? "true" : "false");
    return buf;
}

}  // namespace

int main(int argc, char **argv) {
    weft_bench::RunArgs args = weft_bench::parse_run_args(argc, argv, WEFT_BENCH_MIXED_JSON);
    try {
        if (args.child) {
            std::printf("%s\n", run_child(args.child, args.quick, false).c_str());
            std::printf("%s\n", run_child(args.child, args.quick, true).c_str());
            return 0;
        }
        auto lines = weft_bench::run_per_thread_count("weft_bench_mixed_precision", args.quick,
                                                      [](int, const std::string &l) { std::printf("%s\n", l.c_str()); });
        weft_bench::write_entries(args.out, lines);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "weft_bench_mixed_precision: %s\n", e.what());
        return 1;
    }
    return 0;
}
