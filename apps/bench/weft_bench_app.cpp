// weft-bench: the built-in benchmarking app (weft/bench.h). It registers the pipelines of
// bench/run (SGEMM, blur, unsharp, conv, softmax, layer norm, with the expert schedules of
// bench/weft_schedules.h) and Halide's app suite (apps/suite, Halide's expert schedules
// translated), each with a reference. Peers: Eigen (and OpenBLAS where libopenblas-dev is
// installed) in this process; in processes of their own, the programs of bench/peers, built
// into build/bench-peers where their libraries are installed (OpenBLAS, oneDNN, and Halide 14
// with its expert schedules: see peer_process.h).
#include <weft/bench.h>

#include <Eigen/Dense>
#include <cmath>
#include <cstring>
#include <memory>

#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef WEFT_BENCH_OPENBLAS
#include <cblas.h>
#endif

#include "peer_process.h"
#include "weft_schedules.h"
#include "weft_suite.h"

namespace {

using namespace weft;
using bench::Instance;
using bench::Sizes;
using weft_bench_app::add_process_peer;
using weft_bench_app::peer_built;

/** Deterministic values in [-1, 1). */
Buffer<float> input(std::vector<int> extents, uint64_t seed) {
    Buffer<float> b(extents);
    float *p = b.data();
    for (int64_t i = 0; i < b.number_of_elements(); i++) p[i] = (float)(2.0 * suite::unit_value(seed, (uint64_t)i) - 1.0);
    return b;
}

/** Binds a builder's ImageParams to buffers, with the buffers' shapes as their estimates (for
    the automatic scheduler); the Funcs' schedule is kept as the instance's default schedule
    and the Funcs reset to none, so that a custom or automatic schedule starts from nothing. */
void bind_instance(Instance &in, const weft_bench::Def &d, const std::vector<Buffer<void>> &inputs, Buffer<void> output) {
    for (size_t i = 0; i < d.inputs.size(); i++) {
        ImageParam p = d.inputs[i];
        p.set(inputs[i]);
        std::vector<std::pair<Expr, Expr>> est;
        for (int k = 0; k < inputs[i].dimensions(); k++) est.push_back({inputs[i].min(k), inputs[i].extent(k)});
        p.set_estimates(est);
    }
    in.pipeline = Pipeline(d.out);
    in.outputs = {output};
    Schedule expert = in.pipeline.get_schedule();
    in.pipeline.apply_schedule_source("");
    Pipeline p = in.pipeline;
    std::vector<Buffer<void>> keep = inputs;  // the closures keep the inputs alive
    in.schedule = [p, expert, keep]() mutable { p.apply_schedule(expert); };
}

void set_eigen_threads() {
#ifdef _OPENMP
    omp_set_num_threads(bench::threads());
#endif
    Eigen::setNbThreads(bench::threads());
}

// ------------------------------------------------------------------ SGEMM (row-major)

Instance sgemm(const Sizes &s) {
    const int n = s["n"];
    Instance in;
    Buffer<float> A = input({n, n}, 1), B = input({n, n}, 2), C(n, n);
    // weft_schedules.h: out(x, y) = sum_k V(x, k) S(k, y); row-major C = A B has V = B, S = A.
    bind_instance(in, weft_bench::sgemm(n), {B, A}, C);
    using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    auto ec = std::make_shared<Mat>(n, n);
    set_eigen_threads();
    in.peers.push_back({"Eigen", [A, B, ec, n] {
                            Eigen::Map<const Mat> a(A.data(), n, n), b(B.data(), n, n);
                            ec->noalias() = a * b;
                        }});
#ifdef WEFT_BENCH_OPENBLAS
    auto oc = std::make_shared<std::vector<float>>((size_t)n * n);
    openblas_set_num_threads(bench::threads());
    in.peers.push_back({"OpenBLAS", [A, B, oc, n] {
                            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, A.data(), n, B.data(),
                                        n, 0.0f, oc->data(), n);
                        }});
#else
    add_process_peer(in, "OpenBLAS", "bench_openblas", "sgemm_rm", "-", n);
#endif
    add_process_peer(in, "Halide 14", "bench_halide", "sgemm_rm", "manual", n);
    in.reference = [A, B, n](std::vector<Buffer<void>> &e) {
        Eigen::Map<const Mat> a(A.data(), n, n), b(B.data(), n, n);
        Eigen::Map<Mat> c(Buffer<float>(e[0]).data(), n, n);
        c.noalias() = a * b;
    };
    in.atol = 1e-3 * std::sqrt((double)n);
    in.rtol = 1e-4;
    in.work = {2.0 * n * n * (double)n, 3.0 * 4 * n * (double)n};
    return in;
}

// ------------------------------------------------------------------ softmax and layer norm

Instance rows(const Sizes &s, bool layernorm) {
    const int R = s["rows"], C = 1024;
    Instance in;
    Buffer<float> x = input({C, R}, 1), g = input({C}, 2), b = input({C}, 3), out(C, R);
    if (layernorm) bind_instance(in, weft_bench::layernorm(C, 1e-5f), {x, g, b}, out);
    else bind_instance(in, weft_bench::softmax(C), {x}, out);
    auto z = std::make_shared<std::vector<float>>((size_t)R * C);
    auto row = [x, g, b, C, layernorm](float *dst, int y) {
        Eigen::Map<const Eigen::ArrayXf> v(x.data() + (size_t)y * C, C);
        Eigen::Map<Eigen::ArrayXf> o(dst + (size_t)y * C, C);
        if (!layernorm) {
            float m = v.maxCoeff();
            o = (v - m).exp();
            o *= 1.0f / o.sum();
        } else {
            Eigen::Map<const Eigen::ArrayXf> gm(g.data(), C), bt(b.data(), C);
            float mean = v.mean(), var = (v - mean).square().mean();
            o = (v - mean) * ((1.0f / std::sqrt(var + 1e-5f)) * gm) + bt;
        }
    };
    set_eigen_threads();
    in.peers.push_back({"Eigen", [z, row, R] {
                            float *d = z->data();
#pragma omp parallel for schedule(static)
                            for (int y = 0; y < R; y++) row(d, y);
                        }});
    in.reference = [row, R](std::vector<Buffer<void>> &e) {
        float *d = Buffer<float>(e[0]).data();
        for (int y = 0; y < R; y++) row(d, y);
    };
    in.atol = 1e-5;
    in.rtol = 1e-3;
    in.work = {(layernorm ? 8.0 : 6.0) * R * C, 8.0 * R * C};
    return in;
}

// ------------------------------------------------------------------ blur, unsharp, conv

Instance blur(const Sizes &s) {
    const int W = s["width"], H = s["height"];
    Instance in;
    Buffer<float> src = input({W + 2, H + 2}, 1), out(W, H);
    src.set_min(-1, -1);
    bind_instance(in, weft_bench::blur(), {src}, out);
    if (W == H) add_process_peer(in, "Halide 14", "bench_halide", "blur", "manual", W);  // square images only
    in.reference = [src, W, H](std::vector<Buffer<void>> &e) {
        Buffer<float> o(e[0]);
        std::vector<float> bx((size_t)W * (H + 2));
        for (int y = -1; y <= H; y++)
            for (int x = 0; x < W; x++)
                bx[(size_t)(y + 1) * W + x] = (src(x - 1, y) + src(x, y) + src(x + 1, y)) * (1.0f / 3.0f);
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++)
                o(x, y) = (bx[(size_t)y * W + x] + bx[(size_t)(y + 1) * W + x] + bx[(size_t)(y + 2) * W + x]) *
                          (1.0f / 3.0f);
    };
    in.atol = 1e-5;
    in.work = {6.0 * W * H, 8.0 * W * H};
    return in;
}

Instance unsharp(const Sizes &s) {
    const int W = s["width"];
    Instance in;
    Buffer<float> src = input({W, W}, 1), out(W, W);
    bind_instance(in, weft_bench::unsharp(), {src}, out);
    add_process_peer(in, "Halide 14", "bench_halide", "unsharp", "manual", W);
    in.work = {0, 8.0 * W * W};
    return in;
}

Instance conv(const Sizes &s) {
    const int S = s["size"], N = 4, C = 64, P = S + 2;
    Instance in;
    Buffer<float> x = input({C, P, P, N}, 1), w = input({C, 3, 3, C}, 2), b = input({C}, 3), out(C, S, S, N);
    bind_instance(in, weft_bench::conv(C), {x, w, b}, out);
    add_process_peer(in, "oneDNN", "bench_onednn", "conv", "-", S);
    add_process_peer(in, "Halide 14", "bench_halide", "conv", "manual", S);
    in.work = {2.0 * N * S * S * C * C * 9, 4.0 * ((double)C * P * P * N + 9.0 * C * C + (double)C * S * S * N)};
    return in;
}

// ------------------------------------------------------------------ the app suite

Instance suite_app(const suite::WeftApp &app, const Sizes &s) {
    Instance in;
    suite::AppInfo info = app.info();
    auto p = std::make_shared<suite::Problem>(app.make(s["size"]));
    suite::WeftDef d = app.build(s["size"], true);
    std::vector<Buffer<void>> inputs;
    for (size_t i = 0; i < p->inputs.size(); i++) inputs.push_back(suite::weft_buffer(p->inputs[i], d.inputs[i].name()));
    weft_bench::Def def{d.out, d.inputs};
    bind_instance(in, def, inputs, suite::weft_buffer(p->output, "output"));
    const suite::WeftApp *a = &app;
    in.reference = [p, a](std::vector<Buffer<void>> &e) {
        suite::Array ref(p->output.elem, p->output.extents, p->output.mins);
        a->reference(*p, ref);
        std::memcpy(e[0].raw_data(), ref.raw(), ref.count * suite::elem_size(ref.elem));
    };
    in.atol = info.atol;
    in.rtol = info.rtol;
    add_process_peer(in, "Halide 14", "bench_halide_apps", "app_" + info.name, "manual", s["size"]);
    return in;
}

void register_all() {
    // The peers each builder adds, by name (those in processes of their own where built).
    auto peers = [](std::vector<std::string> in_process,
                    std::vector<std::pair<std::string, std::string>> programs) {
        for (auto &p : programs)
            if (peer_built(p.second)) in_process.push_back(p.first);
        return in_process;
    };
#ifdef WEFT_BENCH_OPENBLAS
    std::vector<std::string> sgemm_peers = peers({"Eigen", "OpenBLAS"}, {{"Halide 14", "bench_halide"}});
#else
    std::vector<std::string> sgemm_peers =
        peers({"Eigen"}, {{"OpenBLAS", "bench_openblas"}, {"Halide 14", "bench_halide"}});
#endif
    bench::register_benchmark({"sgemm", "C = A B, n x n float32 matrices, row-major", {{"n", 1024}},
                               {{{"n", 256}}, {{"n", 512}}, {{"n", 1024}}, {{"n", 2048}}}, sgemm_peers, sgemm});
    bench::register_benchmark({"softmax", "softmax of each row of rows x 1024 floats", {{"rows", 4096}},
                               {{{"rows", 256}}, {{"rows", 1024}}, {{"rows", 4096}}, {{"rows", 16384}}}, {"Eigen"},
                               [](const Sizes &s) { return rows(s, false); }});
    bench::register_benchmark({"layernorm", "layer norm of each row of rows x 1024 floats", {{"rows", 4096}},
                               {{{"rows", 256}}, {{"rows", 1024}}, {{"rows", 4096}}, {{"rows", 16384}}}, {"Eigen"},
                               [](const Sizes &s) { return rows(s, true); }});
    bench::register_benchmark({"blur", "3x3 box blur in two passes, float32", {{"width", 2048}, {"height", 2048}},
                               {{{"width", 512}, {"height", 512}},
                                {{"width", 1024}, {"height", 1024}},
                                {{"width", 2048}, {"height", 2048}},
                                {{"width", 4096}, {"height", 4096}}},
                               peers({}, {{"Halide 14", "bench_halide"}}),
                               blur});
    bench::register_benchmark({"unsharp", "unsharp mask (Gaussian blur, sharpen), float32, width x width",
                               {{"width", 2048}},
                               {{{"width", 512}}, {{"width", 1024}}, {{"width", 2048}}},
                               peers({}, {{"Halide 14", "bench_halide"}}),
                               unsharp});
    bench::register_benchmark({"conv", "3x3 convolution + bias + ReLU, 64 -> 64 channels, batch 4, size x size",
                               {{"size", 56}},
                               {{{"size", 14}}, {{"size", 28}}, {{"size", 56}}},
                               peers({}, {{"oneDNN", "bench_onednn"}, {"Halide 14", "bench_halide"}}),
                               conv});
    for (const suite::WeftApp &a : suite::weft_apps()) {
        suite::AppInfo info = a.info();
        std::vector<Sizes> sweep = {{{"size", info.test_size}}};
        if (info.default_size / 2 > info.test_size) sweep.push_back({{"size", info.default_size / 2}});
        sweep.push_back({{"size", info.default_size}});
        const suite::WeftApp *ap = &a;
        bench::register_benchmark({"app_" + info.name, info.description + " (size: " + info.size_meaning + ")",
                                   {{"size", info.default_size}},
                                   sweep,
                                   peers({}, {{"Halide 14", "bench_halide_apps"}}),
                                   [ap](const Sizes &s) { return suite_app(*ap, s); }});
    }
}

}  // namespace

int main(int argc, char **argv) {
    try {
        register_all();
    } catch (const std::exception &e) {
        std::fprintf(stderr, "weft-bench: %s\n", e.what());
        return 2;
    }
    return bench::main(argc, argv);
}
