// weft_bench_kernels: weft's side of bench/run. Speaks the line protocol of
// bench/peers/bench_common.h; the algorithms and schedules are in bench/weft_schedules.h.
// Threads: WEFT_NUM_THREADS (the pool is created once per process). Each kernel is compiled
// into a Callable once; run() calls it on preallocated buffers, so only steady-state calls are
// timed.
#include <weft/weft.h>

#include <chrono>
#include <cstdlib>

#include "peers/bench_common.h"
#include "weft_schedules.h"
#include "weft_suite.h"

namespace {

/** The variant being set up: below 0 the expert schedule; else auto_schedule with this budget. */
double g_auto_budget = -1;

using weft::Buffer;
using weft::Callable;
using weft::Pipeline;

struct WeftKernel : bench::Kernel {
    std::vector<bench::AlignedBuf> data;  // inputs, then the output (last)
    std::vector<Buffer<float>> bufs;      // wrappers of data, same order
    Callable fn;
    const float *out() const override { return data.back().data(); }
    size_t out_size() const override { return data.back().size(); }
    Buffer<float> &add(bench::AlignedBuf b, const std::vector<int> &extents) {
        data.push_back(std::move(b));
        bufs.emplace_back(data.back().data(), extents);
        return bufs.back();
    }
    void compile(const weft_bench::Def &d) {
        std::vector<weft::Argument> args(d.inputs.begin(), d.inputs.end());
        if (g_auto_budget >= 0) {
            // Variant "auto" ("auto:<seconds>"): the expert schedule replaced by auto_schedule's,
            // for the shapes of the buffers this kernel runs on.
            auto region = [](const weft::Buffer<void> &b) {
                std::vector<std::pair<weft::Expr, weft::Expr>> r;
                for (int i = 0; i < b.dimensions(); i++) r.push_back({b.dim(i).min(), b.dim(i).extent()});
                return r;
            };
            for (size_t i = 0; i < d.inputs.size(); i++) weft::ImageParam(d.inputs[i]).set_estimates(region(bufs[i]));
            weft::Func(d.out).set_estimates(region(bufs.back()));
            weft::AutoScheduleOptions o;
            o.budget_seconds = g_auto_budget;
            weft::Pipeline p(d.out);
            auto r = p.auto_schedule(weft::Target::host(), o);
            std::fprintf(stderr, "auto_schedule: predicted %.3f ms, measured %.3f ms, %d candidates\n%s", r.predicted_ms,
                         r.measured_ms, r.candidates_measured, r.schedule_source.c_str());
        }
        fn = Pipeline(d.out).compile_to_callable(args);
    }
    void check(int rc) {
        if (rc != 0) throw std::runtime_error("weft call returned " + std::to_string(rc));
    }
};

struct Sgemm : WeftKernel {
    Sgemm(int n, bool row_major) {
        auto a = bench::make_aligned_input((size_t)n * n, 1), b = bench::make_aligned_input((size_t)n * n, 2);
        // See weft_schedules.h: V is the vector operand (B row-major, A column-major).
        if (row_major) std::swap(a, b);
        add(std::move(a), {n, n});
        add(std::move(b), {n, n});
        add(bench::AlignedBuf((size_t)n * n), {n, n});
        compile(weft_bench::sgemm(n));
    }
    void run() override { check(fn(bufs[0], bufs[1], bufs[2])); }
};

/** u8 x s8 -> s32 GEMM: B packed once outside the call (weft_schedules.h); the output exposed as
    floats for the harness's check (each side converts its int32s the same way). */
struct GemmU8S8 : bench::Kernel {
    Buffer<uint8_t> A;
    Buffer<int8_t> Bp;
    Buffer<int32_t> C;
    mutable std::vector<float> as_float;
    Callable fn;
    explicit GemmU8S8(int n) : A(n, n), Bp(4 * n, n / 4), C(n, n) {
        for (int y = 0; y < n; y++)
            for (int k = 0; k < n; k++) A(k, y) = bench::gemm_u8(y, k);
        for (int kq = 0; kq < n / 4; kq++)
            for (int x = 0; x < n; x++)
                for (int t = 0; t < 4; t++) Bp(4 * x + t, kq) = bench::gemm_s8(x, 4 * kq + t);
        weft_bench::Def d = weft_bench::gemm_u8s8(n);
        fn = Pipeline(d.out).compile_to_callable({d.inputs[0], d.inputs[1]});
    }
    void run() override {
        if (fn(A, Bp, C) != 0) throw std::runtime_error("weft call failed");
    }
    const float *out() const override {
        as_float.resize((size_t)C.width() * C.height());
        for (int y = 0; y < C.height(); y++)
            for (int x = 0; x < C.width(); x++) as_float[(size_t)y * C.width() + x] = (float)C(x, y);
        return as_float.data();
    }
    size_t out_size() const override { return (size_t)C.width() * C.height(); }
};

/** The int8 convolution: the weights packed once outside the call (weft_schedules.h); the
    output exposed as floats for the harness's check. */
struct ConvU8S8 : bench::Kernel {
    Buffer<uint8_t> in;
    Buffer<int8_t> Wp;
    Buffer<int32_t> out_;
    mutable std::vector<float> as_float;
    Callable fn;
    explicit ConvU8S8(int S)
        : in(bench::kConvC, S + 2, S + 2, bench::kConvN), Wp(4, bench::kConvC, 3, 3, bench::kConvC / 4),
          out_(bench::kConvC, S, S, bench::kConvN) {
        const int N = bench::kConvN, C = bench::kConvC, P = S + 2;
        for (int n = 0; n < N; n++)
            for (int y = 0; y < P; y++)
                for (int x = 0; x < P; x++)
                    for (int c = 0; c < C; c++) in(c, x, y, n) = bench::conv_u8((((size_t)n * P + y) * P + x) * C + c);
        for (int ci = 0; ci < C; ci++)
            for (int ky = 0; ky < 3; ky++)
                for (int kx = 0; kx < 3; kx++)
                    for (int co = 0; co < C; co++)
                        Wp(ci % 4, co, kx, ky, ci / 4) = bench::conv_s8((((size_t)ci * 3 + ky) * 3 + kx) * C + co);
        weft_bench::Def d = weft_bench::conv_u8s8(C);
        fn = Pipeline(d.out).compile_to_callable({d.inputs[0], d.inputs[1]});
    }
    void run() override {
        if (fn(in, Wp, out_) != 0) throw std::runtime_error("weft call failed");
    }
    const float *out() const override {
        const int C = out_.dim(0).extent(), S = out_.dim(1).extent(), N = out_.dim(3).extent();
        as_float.resize((size_t)N * S * S * C);
        size_t i = 0;
        for (int n = 0; n < N; n++)
            for (int y = 0; y < S; y++)
                for (int x = 0; x < S; x++)
                    for (int c = 0; c < C; c++) as_float[i++] = (float)out_(c, x, y, n);
        return as_float.data();
    }
    size_t out_size() const override {
        size_t n = 1;
        for (int d = 0; d < 4; d++) n *= (size_t)out_.dim(d).extent();
        return n;
    }
};

/** bf16 x bf16 -> f32 GEMM: B packed once outside the call (weft_schedules.h). */
struct GemmBF16 : bench::Kernel {
    Buffer<weft::bfloat16_t> A, Bp;
    Buffer<float> C;
    Callable fn;
    explicit GemmBF16(int n) : A(n, n), Bp(2 * n, n / 2), C(n, n) {
        for (int y = 0; y < n; y++)
            for (int k = 0; k < n; k++) A(k, y) = weft::bfloat16_t::from_bits(bench::gemm_bf16_a(y, k));
        for (int kq = 0; kq < n / 2; kq++)
            for (int x = 0; x < n; x++)
                for (int t = 0; t < 2; t++) Bp(2 * x + t, kq) = weft::bfloat16_t::from_bits(bench::gemm_bf16_b(x, 2 * kq + t));
        weft_bench::Def d = weft_bench::gemm_bf16(n);
        fn = Pipeline(d.out).compile_to_callable({d.inputs[0], d.inputs[1]});
    }
    void run() override {
        if (fn(A, Bp, C) != 0) throw std::runtime_error("weft call failed");
    }
    const float *out() const override { return C.data(); }
    size_t out_size() const override { return (size_t)C.width() * C.height(); }
};

struct Blur : WeftKernel {
    explicit Blur(int W) {
        bufs.reserve(2);
        data.reserve(2);
        add(bench::make_aligned_input((size_t)(W + 2) * (W + 2), 1), {W + 2, W + 2}).set_min(-1, -1);
        add(bench::AlignedBuf((size_t)W * W), {W, W});
        compile(weft_bench::blur());
    }
    void run() override { check(fn(bufs[0], bufs[1])); }
};

struct Unsharp : WeftKernel {
    explicit Unsharp(int W) {
        bufs.reserve(2);
        data.reserve(2);
        add(bench::make_aligned_input((size_t)W * W, 1), {W, W});
        add(bench::AlignedBuf((size_t)W * W), {W, W});
        compile(weft_bench::unsharp());
    }
    void run() override { check(fn(bufs[0], bufs[1])); }
};

struct Softmax : WeftKernel {
    explicit Softmax(int rows) {
        const int C = bench::kSoftmaxCols;
        bufs.reserve(2);
        data.reserve(2);
        add(bench::make_aligned_input((size_t)rows * C, 1), {C, rows});
        add(bench::AlignedBuf((size_t)rows * C), {C, rows});
        compile(weft_bench::softmax(C));
    }
    void run() override { check(fn(bufs[0], bufs[1])); }
};

struct LayerNorm : WeftKernel {
    explicit LayerNorm(int rows) {
        const int C = bench::kSoftmaxCols;
        bufs.reserve(4);
        data.reserve(4);
        add(bench::make_aligned_input((size_t)rows * C, 1), {C, rows});
        add(bench::make_aligned_input(C, 2), {C});
        add(bench::make_aligned_input(C, 3), {C});
        add(bench::AlignedBuf((size_t)rows * C), {C, rows});
        compile(weft_bench::layernorm(C, bench::kLayerNormEps));
    }
    void run() override { check(fn(bufs[0], bufs[1], bufs[2], bufs[3])); }
};

struct Conv : WeftKernel {
    explicit Conv(int S) {
        add_conv_buffers(S, false);
        compile(weft_bench::conv(bench::kConvC));
    }
    /** The convolution's input (with its border), filter and bias, [a residual,] the output. */
    void add_conv_buffers(int S, bool residual) {
        const int N = bench::kConvN, C = bench::kConvC, P = S + 2;
        bufs.reserve(5);
        data.reserve(5);
        add(bench::make_aligned_input((size_t)N * P * P * C, 1), {C, P, P, N});
        add(bench::make_aligned_input((size_t)C * 9 * C, 2), {C, 3, 3, C});
        add(bench::make_aligned_input(C, 3), {C});
        if (residual) add(bench::make_aligned_input((size_t)N * S * S * C, 4), {C, S, S, N});
        add(bench::AlignedBuf((size_t)N * S * S * C), {C, S, S, N});
    }
    void run() override { check(fn(bufs[0], bufs[1], bufs[2], bufs[3])); }

protected:
    Conv() = default;
};

/** conv + bias + ReLU, then a residual add, as an inference library ships them: the
    convolution a Callable with its expert schedule, the add a Callable of its own without one,
    chained with defer(): the add runs in the convolution's loops (an epilogue), against
    oneDNN's convolution with ReLU and a binary-add post-op. */
struct ConvAdd : Conv {
    Callable add_fn;
    std::vector<int> shape;
    explicit ConvAdd(int S) {
        add_conv_buffers(S, true);
        const int N = bench::kConvN, C = bench::kConvC;
        shape = {C, S, S, N};
        compile(weft_bench::conv(C));
        weft::ImageParam a(weft::Float(32), 4, "a"), res(weft::Float(32), 4, "res");
        weft::Var c("c"), x("x"), y("y"), n("n");
        weft::Func s("residual_add");
        s(c, x, y, n) = a(c, x, y, n) + res(c, x, y, n);
        add_fn = Pipeline(s).compile_to_callable({a, res});
    }
    void run() override { add_fn.defer(shape, fn.defer(shape, bufs[0], bufs[1], bufs[2]), bufs[3]).realize(bufs[4]); }
};

/** An app of the suite (apps/suite): variant "manual" (Halide's expert schedule translated) or
    "none" (no schedule). */
struct App : bench::Kernel {
    suite::WeftRunner r;
    mutable std::vector<float> out_f;
    App(const suite::WeftApp &app, int size, bool scheduled) : r(app, size, scheduled) {}
    App(const suite::WeftApp &app, int size, double budget) : r(app, size, suite::WeftRunner::Variant::Auto, budget) {}
    double first_run_ms = -1, first_jit_ms = -1;
    void run() override {
        if (first_run_ms >= 0) return r.run();
        double c0 = weft::cache_stats().compile_ms;
        auto t0 = std::chrono::steady_clock::now();
        r.run();
        first_run_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        first_jit_ms = weft::cache_stats().compile_ms - c0;
    }
    double first_call_ms() const override { return first_run_ms < 0 ? -1 : r.build_ms + first_run_ms; }
    double jit_ms() const override { return first_jit_ms; }
    const float *out() const override {
        r.p.output.to_float(out_f);
        return out_f.data();
    }
    size_t out_size() const override { return r.p.output.count; }
};

}  // namespace

int main(int argc, char **argv) {
    if (argc > 1 && std::string(argv[1]) == "--apps") {
        // The app suite for bench/peers/harness.py, one JSON object per line.
        for (const auto &a : suite::weft_apps()) {
            suite::AppInfo in = a.info();
            std::printf("{\"name\":\"%s\",\"default_size\":%d,\"unscheduled_size\":%d,\"atol\":%g,\"rtol\":%g}\n",
                        in.name.c_str(), in.default_size, in.unscheduled_size, in.atol, in.rtol);
        }
        return 0;
    }
    bench::protect_stdout();
    return bench::serve([](const std::string &k, const std::string &v, int size) -> std::unique_ptr<bench::Kernel> {
        // Variants: the expert schedule (any name but these), "auto" (auto_schedule, the cost
        // model alone), "auto:<seconds>" (a measured search), and for apps "none" (no schedule).
        g_auto_budget = -1;
        // "none" is Halide's default, everything inlined into serial loops: weft would otherwise
        // schedule a pipeline without directives automatically at its first call.
        static const char *user_setting = std::getenv("WEFT_AUTOSCHEDULE");
        if (v == "none") setenv("WEFT_AUTOSCHEDULE", "0", 1);
        else if (user_setting) setenv("WEFT_AUTOSCHEDULE", user_setting, 1);
        else unsetenv("WEFT_AUTOSCHEDULE");
        if (v == "auto") g_auto_budget = 0;
        else if (v.rfind("auto:", 0) == 0) g_auto_budget = std::max(0.0, std::atof(v.c_str() + 5));
        if (k.rfind("app_", 0) == 0) {
            const suite::WeftApp *app = suite::find_weft_app(k.substr(4));
            if (!app) return nullptr;
            if (g_auto_budget >= 0) return std::make_unique<App>(*app, size, g_auto_budget);
            if (v != "manual" && v != "none") throw std::runtime_error("variant " + v + ": manual, none, auto or auto:<seconds>");
            return std::make_unique<App>(*app, size, v == "manual");
        }
        if (k == "sgemm_rm") return std::make_unique<Sgemm>(size, true);
        if (k == "sgemm_cm") return std::make_unique<Sgemm>(size, false);
        if (k == "blur") return std::make_unique<Blur>(size);
        if (k == "unsharp") return std::make_unique<Unsharp>(size);
        if (k == "softmax") return std::make_unique<Softmax>(size);
        if (k == "layernorm") return std::make_unique<LayerNorm>(size);
        if (k == "conv") return std::make_unique<Conv>(size);
        if (k == "conv_add") return std::make_unique<ConvAdd>(size);
        if (k == "gemm_u8s8") return std::make_unique<GemmU8S8>(size);
        if (k == "gemm_bf16") return std::make_unique<GemmBF16>(size);
        if (k == "conv_u8s8") return std::make_unique<ConvU8S8>(size);
        return nullptr;
    });
}
