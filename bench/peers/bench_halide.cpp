// Halide 14 peer (Debian's libhalide14-0-dev, JIT, host target with AVX-512; threads:
// HL_NUM_THREADS). Links LLVM 14, so it lives in its own process, never in weft's.
// Variants:
//   manual      an expert's hand schedule (below; HALIDE_SCHED=<n> picks an alternative for tuning)
//   mullapudi   Halide's Mullapudi2016 autoscheduler (plugin loaded at first use)
// Kernels as defined in bench_common.h: sgemm_rm, sgemm_cm, blur, unsharp, conv.
#include <malloc.h>

#include <Halide.h>

#include "bench_common.h"

using namespace Halide;

namespace {

const char *kPluginDir = "/usr/lib/x86_64-linux-gnu/halide14/";

int num_threads() {
    const char *e = std::getenv("HL_NUM_THREADS");
    int n = e ? std::atoi(e) : 0;
    return n > 0 ? n : 2;
}

int sched_choice() {
    const char *e = std::getenv("HALIDE_SCHED");
    return e ? std::atoi(e) : 0;
}

void autoschedule(Pipeline &p, const Target &t) {
    static bool loaded = false;
    if (!loaded) {
        load_plugin(std::string(kPluginDir) + "libautoschedule_mullapudi2016.so");
        loaded = true;
    }
    // Parallelism = this process's threads, last-level cache 32 MiB, the default balance.
    p.auto_schedule("Mullapudi2016", t, MachineParams(num_threads(), 32 * 1024 * 1024, 40));
}

/** A compiled pipeline with its input buffers bound to ImageParams and its output buffer. */
struct HalideKernel : bench::Kernel {
    Pipeline p;
    std::vector<std::pair<ImageParam, Buffer<float>>> inputs;
    Buffer<float> output;
    bench::AlignedBuf out_storage;
    void compile(const Target &t) {
        for (auto &in : inputs) in.first.set(in.second);
        p.compile_jit(t);
    }
    void run() override { p.realize(output); }
    const float *out() const override { return out_storage.data(); }
    size_t out_size() const override { return out_storage.size(); }
};

Buffer<float> wrap(float *p, std::vector<int> extents) { return Buffer<float>(p, extents); }

// ---------------------------------------------------------------------------------------- SGEMM
// Row-major C = A·B is out(x, y) = Σ_k V(x, k)·S(k, y) with V = B, S = A (x contiguous);
// column-major is the same with V = A, S = B. V is the vector operand, S is broadcast.
struct Sgemm : HalideKernel {
    bench::AlignedBuf a, b;
    Sgemm(int n, bool row_major, const std::string &variant) : a(bench::make_aligned_input((size_t)n * n, 1)),
                                                                b(bench::make_aligned_input((size_t)n * n, 2)) {
        out_storage = bench::AlignedBuf((size_t)n * n);
        ImageParam V(Float(32), 2, "V"), S(Float(32), 2, "S");
        Var x("x"), y("y");
        RDom k(0, n, "k");
        Func prod("prod"), C("C");
        prod(x, y) += V(x, k) * S(k, y);
        C(x, y) = prod(x, y);
        Target t = get_jit_target_from_environment();
        if (variant == "manual") {
            // 48×8 register block (3 vectors of 16 × 8 rows = 24 accumulators), the V panel
            // (48 × n) packed once per column panel and row block, row blocks in parallel.
            const int vec = 16, tx = 3 * vec, ty = 8;
            int rows_per_task = std::max(ty, std::min(256, n / 4));
            if (sched_choice() == 1) rows_per_task = std::max(ty, std::min(128, n / 4));
            if (sched_choice() == 2) rows_per_task = std::max(ty, n / 2);
            Var xo("xo"), yo("yo"), xi("xi"), yi("yi"), yoo("yoo");
            C.tile(x, y, xo, yo, xi, yi, tx, ty)
                .split(yo, yoo, yo, rows_per_task / ty)
                .reorder(xi, yi, yo, xo, yoo)
                .vectorize(xi, vec)
                .unroll(xi)
                .unroll(yi)
                .parallel(yoo);
            prod.compute_at(C, yo).vectorize(x, vec).unroll(x).unroll(y);
            prod.update().reorder(x, y, k).vectorize(x, vec).unroll(x).unroll(y);
            Func Vp = V.in();
            Vp.compute_at(C, xo).vectorize(_0, vec);
            if (sched_choice() == 3) prod.update().unroll(k, 2);
        } else {
            throw std::runtime_error("sgemm: variant " + variant + " not implemented");
        }
        p = Pipeline(C);
        inputs = {{V, wrap(row_major ? b.data() : a.data(), {n, n})}, {S, wrap(row_major ? a.data() : b.data(), {n, n})}};
        output = wrap(out_storage.data(), {n, n});
        compile(t);
    }
};

// ----------------------------------------------------------------------------------------- blur
struct Blur : HalideKernel {
    bench::AlignedBuf src;
    Blur(int W, const std::string &variant) : src(bench::make_aligned_input((size_t)(W + 2) * (W + 2), 1)) {
        const int H = W;
        out_storage = bench::AlignedBuf((size_t)W * H);
        ImageParam in(Float(32), 2, "in");
        Var x("x"), y("y"), xi("xi"), yi("yi");
        Func bx("blur_x"), by("blur_y");
        bx(x, y) = (in(x - 1, y) + in(x, y) + in(x + 1, y)) * (1.0f / 3.0f);
        by(x, y) = (bx(x, y - 1) + bx(x, y) + bx(x, y + 1)) * (1.0f / 3.0f);
        Target t = get_jit_target_from_environment();
        p = Pipeline(by);
        if (variant == "manual") {
            switch (sched_choice()) {
            case 1:  // strips of 32 rows, sliding window over rows
                by.split(y, y, yi, 32).parallel(y).vectorize(x, 16);
                bx.store_at(by, y).compute_at(by, yi).vectorize(x, 16);
                break;
            case 2:  // strips of 64 rows split into 1024-wide columns, sliding window per column
                by.split(y, y, yi, 64).split(x, x, xi, 1024).reorder(xi, yi, x, y).vectorize(xi, 16).parallel(y);
                bx.store_at(by, x).compute_at(by, yi).vectorize(x, 16);
                break;
            case 3:  // 256×32 tiles, blur_x per tile (34 rows for 32)
                by.tile(x, y, xi, yi, 256, 32).vectorize(xi, 16).parallel(y);
                bx.compute_at(by, x).vectorize(x, 16);
                break;
            case 4:  // strips of 32 rows split into 512-wide columns, sliding window per column
                by.split(y, y, yi, 32).split(x, x, xi, 512).reorder(xi, yi, x, y).vectorize(xi, 16).parallel(y);
                bx.store_at(by, x).compute_at(by, yi).vectorize(x, 16);
                break;
            default:
                // The fastest of those tried here for each thread count (tiles 256×{16,32,64},
                // 512×{16,32}, 1024×32; sliding windows in strips of 32/64 rows × 512/1024/all
                // columns): 256×32 tiles on one thread (6.9 ms; the sliding window 7.1), the
                // sliding window over 32×512 on two (3.65 ms; the tiles 3.9).
                if (num_threads() == 1) {
                    by.tile(x, y, xi, yi, 256, 32).vectorize(xi, 16).parallel(y);
                    bx.compute_at(by, x).vectorize(x, 16);
                } else {
                    by.split(y, y, yi, 32).split(x, x, xi, 512).reorder(xi, yi, x, y).vectorize(xi, 16).parallel(y);
                    bx.store_at(by, x).compute_at(by, yi).vectorize(x, 16);
                }
                break;
            }
        } else if (variant == "mullapudi") {
            in.set_estimates({{-1, W + 2}, {-1, H + 2}});
            by.set_estimates({{0, W}, {0, H}});
            autoschedule(p, t);
        } else {
            throw std::runtime_error("blur: variant " + variant + " not implemented");
        }
        Buffer<float> ib = wrap(src.data(), {W + 2, H + 2});
        ib.set_min(-1, -1);
        inputs = {{in, ib}};
        output = wrap(out_storage.data(), {W, H});
        compile(t);
    }
};

// -------------------------------------------------------------------------------------- unsharp
struct Unsharp : HalideKernel {
    bench::AlignedBuf src;
    Unsharp(int W, const std::string &variant) : src(bench::make_aligned_input((size_t)W * W, 1)) {
        const int H = W;
        out_storage = bench::AlignedBuf((size_t)W * H);
        ImageParam in(Float(32), 2, "in");
        Var x("x"), y("y"), xi("xi"), yi("yi");
        Func e = BoundaryConditions::repeat_edge(in);
        Func bx("bx"), by("by"), o("unsharp");
        const float w0 = 1.0f / 16, w1 = 4.0f / 16, w2 = 6.0f / 16;
        bx(x, y) = w0 * e(x - 2, y) + w1 * e(x - 1, y) + w2 * e(x, y) + w1 * e(x + 1, y) + w0 * e(x + 2, y);
        by(x, y) = w0 * bx(x, y - 2) + w1 * bx(x, y - 1) + w2 * bx(x, y) + w1 * bx(x, y + 1) + w0 * bx(x, y + 2);
        o(x, y) = e(x, y) + 1.5f * (e(x, y) - by(x, y));
        Target t = get_jit_target_from_environment();
        p = Pipeline(o);
        if (variant == "manual") {
            switch (sched_choice()) {
            case 1:  // 256×32 tiles, bx per tile
                o.tile(x, y, xi, yi, 256, 32).vectorize(xi, 16).parallel(y);
                bx.compute_at(o, x).vectorize(x, 16);
                break;
            case 2:
                o.split(y, y, yi, 64).split(x, x, xi, 1024).reorder(xi, yi, x, y).vectorize(xi, 16).parallel(y);
                bx.store_at(o, x).compute_at(o, yi).vectorize(x, 16);
                break;
            default:  // strips of 32 rows, bx a sliding window of rows (the fastest here)
                o.split(y, y, yi, 32).parallel(y).vectorize(x, 16);
                bx.store_at(o, y).compute_at(o, yi).vectorize(x, 16);
                break;
            }
        } else if (variant == "mullapudi") {
            in.set_estimates({{0, W}, {0, H}});
            o.set_estimates({{0, W}, {0, H}});
            autoschedule(p, t);
        } else {
            throw std::runtime_error("unsharp: variant " + variant + " not implemented");
        }
        inputs = {{in, wrap(src.data(), {W, H})}};
        output = wrap(out_storage.data(), {W, H});
        compile(t);
    }
};

// ----------------------------------------------------------------------------------------- conv
struct Conv : HalideKernel {
    bench::AlignedBuf src, wts, bias_;
    Conv(int S, const std::string &variant) {
        const int N = bench::kConvN, C = bench::kConvC, P = S + 2;
        src = bench::make_aligned_input((size_t)N * P * P * C, 1);
        wts = bench::make_aligned_input((size_t)C * 9 * C, 2);
        bias_ = bench::make_aligned_input((size_t)C, 3);
        out_storage = bench::AlignedBuf((size_t)N * S * S * C);
        ImageParam input(Float(32), 4, "input"), filter(Float(32), 4, "filter"), bias(Float(32), 1, "bias");
        Var c("c"), x("x"), y("y"), n("n");
        RDom r(0, C, 0, 3, 0, 3, "r");
        Func conv("conv"), relu("relu");
        conv(c, x, y, n) = bias(c);
        conv(c, x, y, n) += filter(c, r.y, r.z, r.x) * input(r.x, x + r.y, y + r.z, n);
        relu(c, x, y, n) = max(0.0f, conv(c, x, y, n));
        Target t = get_jit_target_from_environment();
        p = Pipeline(relu);
        if (variant == "manual") {
            // Halide's own conv_layer CPU schedule for AVX-512 (filter and input tiles staged
            // with in()), with the register block tuned here: 2 vectors of channels × 7 pixels
            // = 14 accumulators, the fastest of 4×5 (Halide's, 3.73 / 1.95 ms on 1 / 2
            // threads), 2×7 (3.47 / 1.78), 2×8 (3.60 / 1.83), 2×14 (6.6 / 3.2).
            const int vec = 16, tile_w = 2, tile_h = 7;
            Var co("co"), ci("ci"), xo("xo"), xi("xi");
            relu.split(c, co, ci, vec * tile_w)
                .split(x, xo, xi, tile_h)
                .reorder(ci, xi, xo, y, n, co)
                .vectorize(ci, vec)
                .unroll(ci)
                .unroll(xi)
                .parallel(y)
                .parallel(n)
                .parallel(co);
            conv.compute_at(relu, xo)
                .vectorize(c, vec)
                .unroll(c)
                .unroll(x)
                .unroll(y)
                .update()
                .reorder(c, x, y, r.x, r.y, r.z, n)
                .vectorize(c, vec)
                .unroll(c)
                .unroll(x)
                .unroll(y)
                .unroll(r.x, 2);
            filter.in().compute_at(conv, r.x).vectorize(_0, vec).unroll(_0).unroll(_3);
            input.in().compute_at(conv, x).unroll(_0);
        } else if (variant == "mullapudi") {
            input.set_estimates({{0, C}, {0, P}, {0, P}, {0, N}});
            filter.set_estimates({{0, C}, {0, 3}, {0, 3}, {0, C}});
            bias.set_estimates({{0, C}});
            relu.set_estimates({{0, C}, {0, S}, {0, S}, {0, N}});
            autoschedule(p, t);
        } else {
            throw std::runtime_error("conv: variant " + variant + " not implemented");
        }
        inputs = {{input, wrap(src.data(), {C, P, P, N})},
                  {filter, wrap(wts.data(), {C, 3, 3, C})},
                  {bias, wrap(bias_.data(), {C})}};
        output = wrap(out_storage.data(), {C, S, S, N});
        compile(t);
    }
};

}  // namespace

int main() {
    bench::protect_stdout();
    // Freed blocks stay in the process (page faults are slow on these machines, BENCH.md):
    // what an expert does for Halide's per-call allocations here.
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    return bench::serve([](const std::string &k, const std::string &v, int size) -> std::unique_ptr<bench::Kernel> {
        if (k == "sgemm_rm") return std::make_unique<Sgemm>(size, true, v);
        if (k == "sgemm_cm") return std::make_unique<Sgemm>(size, false, v);
        if (k == "blur") return std::make_unique<Blur>(size, v);
        if (k == "unsharp") return std::make_unique<Unsharp>(size, v);
        if (k == "conv") return std::make_unique<Conv>(size, v);
        return nullptr;
    });
}
