// The GPU device check: runs the GPU test pipelines on the device against the interpreter,
// then benchmarks SGEMM (vs cuBLAS, default math mode, loaded with dlopen), a 3x3 blur and
// an elementwise chain (vs the device-to-device copy bandwidth measured here). Prints a table
// last. Without a CUDA device it says so and exits 0.
#include <dlfcn.h>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <tuple>
#include <type_traits>
#include "cuda/CudaPipeline.h"
#include "gpu/gpu_testing.h"

using namespace weft;
using namespace weft::internal;
using namespace weft_gpu_test;

namespace {

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/** Median-free simple timer: warm-up, then the mean of `iters` calls, measured with events
    around the whole calls (host overhead included). */
template <typename F>
double time_ms(F &&f, int iters) {
    CudaDriver &d = cuda_driver();
    f();
    cuda_check(d.cuCtxSynchronize(), "sync");
    void *e0 = nullptr, *e1 = nullptr;
    cuda_check(d.cuEventCreate(&e0, 0), "cuEventCreate");
    cuda_check(d.cuEventCreate(&e1, 0), "cuEventCreate");
    cuda_check(d.cuEventRecord(e0, nullptr), "cuEventRecord");
    for (int i = 0; i < iters; i++) f();
    cuda_check(d.cuEventRecord(e1, nullptr), "cuEventRecord");
    cuda_check(d.cuEventSynchronize(e1), "cuEventSynchronize");
    float ms = 0;
    cuda_check(d.cuEventElapsedTime(&ms, e0, e1), "cuEventElapsedTime");
    d.cuEventDestroy(e0);
    d.cuEventDestroy(e1);
    return ms / iters;
}

struct Row {
    std::string what, weft, peer, ratio, target;
};
std::vector<Row> rows;
/** Every schedule timed: (benchmark, schedule, ms), for --json. */
std::vector<std::tuple<std::string, std::string, double>> timings;
std::string current_benchmark;

/** A JSON string literal of s. */
std::string json_str(const std::string &s) {
    std::string r = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') r += '\\';
        if ((unsigned char)c >= 32) r += c;
    }
    return r + "\"";
}

/** The table and every schedule's time as JSON (--json FILE). */
void write_json(const std::string &path, const std::string &device, double copy_gbs) {
    FILE *f = std::fopen(path.c_str(), "w");
    if (!f) {
        std::printf("[gpu-check] cannot write %s\n", path.c_str());
        return;
    }
    std::fprintf(f, "{\"machine\": %s, \"device_copy_gbps\": %.0f,\n \"table\": [", json_str(device).c_str(), copy_gbs);
    for (size_t i = 0; i < rows.size(); i++)
        std::fprintf(f, "%s\n  {\"benchmark\": %s, \"weft\": %s, \"peer\": %s, \"ratio\": %s, \"target\": %s}", i ? "," : "",
                     json_str(rows[i].what).c_str(), json_str(rows[i].weft).c_str(), json_str(rows[i].peer).c_str(),
                     json_str(rows[i].ratio).c_str(), json_str(rows[i].target).c_str());
    std::fprintf(f, "],\n \"schedules_ms\": [");
    for (size_t i = 0; i < timings.size(); i++)
        std::fprintf(f, "%s\n  {\"benchmark\": %s, \"schedule\": %s, \"ms\": %.4f}", i ? "," : "",
                     json_str(std::get<0>(timings[i])).c_str(), json_str(std::get<1>(timings[i])).c_str(), std::get<2>(timings[i]));
    std::fprintf(f, "]}\n");
    std::fclose(f);
    std::printf("[gpu-check] wrote %s\n", path.c_str());
}

char buf[256];
std::string fmt(const char *f, double v) {
    std::snprintf(buf, sizeof buf, f, v);
    return buf;
}

int check_correctness() {
    int failures = 0;
    Target t = Target::cuda();
    for (auto &make : all_cases()) {
        GpuCase c = make();
        double t0 = now_s();
        std::string status;
        try {
            double worst = compare_with_interpreter(c, t);
            status = worst <= 1e-5 ? "PASS" : "FAIL";
            status += fmt(" (max rel err %.2e)", worst);
            if (worst > 1e-5) failures++;
        } catch (Error &e) {
            status = std::string("FAIL: ") + e.what();
            failures++;
        }
        std::printf("[gpu-check] %-18s %s  %.2fs\n", c.name.c_str(), status.c_str(), now_s() - t0);
        std::fflush(stdout);
    }
    return failures;
}

double copy_bandwidth_gbs(size_t bytes) {
    CudaDriver &d = cuda_driver();
    CUdeviceptr_t a = 0, b = 0;
    cuda_check(d.cuMemAlloc(&a, bytes), "cuMemAlloc");
    cuda_check(d.cuMemAlloc(&b, bytes), "cuMemAlloc");
    cuda_check(d.cuMemsetD32(a, 0x3f800000u, bytes / 4), "cuMemsetD32");
    double ms = time_ms([&] { cuda_check(d.cuMemcpyDtoD(b, a, bytes), "cuMemcpyDtoD"); }, 20);
    d.cuMemFree(a);
    d.cuMemFree(b);
    return 2.0 * bytes / (ms * 1e-3) / 1e9;
}

// ---- cuBLAS through dlopen ----
struct Cublas {
    void *h = nullptr;
    int (*create)(void **) = nullptr;
    int (*destroy)(void *) = nullptr;
    int (*sgemm)(void *, int, int, int, int, int, const float *, const float *, int, const float *, int, const float *,
                 float *, int) = nullptr;
    bool load() {
        const char *names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so", "/usr/local/cuda/lib64/libcublas.so.13",
                               "/usr/local/cuda/lib64/libcublas.so"};
        for (auto n : names)
            if ((h = dlopen(n, RTLD_NOW | RTLD_LOCAL))) break;
        if (!h) return false;
        create = (decltype(create))dlsym(h, "cublasCreate_v2");
        destroy = (decltype(destroy))dlsym(h, "cublasDestroy_v2");
        sgemm = (decltype(sgemm))dlsym(h, "cublasSgemm_v2");
        return create && destroy && sgemm;
    }
};

/** Spot-checks weft's n x n output against cuBLAS's C (on the device) and gives the table's
    peer and ratio columns from the two times. */
void against_cublas(const std::string &what, CUdeviceptr_t C, int n, Buffer<float> &out, double flops, double weft_ms,
                    double cublas_ms, std::string &peer, std::string &ratio) {
    std::vector<float> cc((size_t)n * n);
    cuda_check(cuda_driver().cuMemcpyDtoH(cc.data(), C, cc.size() * 4), "cuMemcpyDtoH");
    double worst = 0;
    for (int i = 0; i < 256; i++) {
        int x = (i * 977) % n, y = (i * 613) % n;
        double ref = cc[(size_t)y * n + x];
        worst = std::max(worst, std::fabs(out(x, y) - ref) / std::max(1.0, std::fabs(ref)));
    }
    double tf = flops / (cublas_ms * 1e-3) / 1e12;
    peer = fmt("%.1f TFLOP/s", tf);
    ratio = fmt("%.2fx", flops / (weft_ms * 1e-3) / 1e12 / tf);
    std::printf("[gpu-check] %s weft %.3f ms, cuBLAS %.3f ms, max rel diff vs cuBLAS %.2e\n", what.c_str(), weft_ms, cublas_ms, worst);
}

/** Times each schedule of one pipeline into out (all are printed, with TFLOP/s given flops);
    returns the index of the fastest and its time in ms. */
std::pair<size_t, double> fastest(std::vector<GpuCase> &cases, Buffer<float> &out, int iters, double flops = 0) {
    Target t = Target::cuda();
    size_t best = 0;
    double best_ms = 1e30;
    for (size_t i = 0; i < cases.size(); i++) {
        double ms = time_ms([&] { cases[i].out.realize(out, t); }, iters);
        timings.emplace_back(current_benchmark, cases[i].name, ms);
        if (flops > 0) std::printf("[gpu-check]   %s: %.3f ms (%.1f TFLOP/s)\n", cases[i].name.c_str(), ms, flops / (ms * 1e-3) / 1e12);
        else std::printf("[gpu-check]   %s: %.3f ms\n", cases[i].name.c_str(), ms);
        if (ms < best_ms) best_ms = ms, best = i;
    }
    return {best, best_ms};
}

void bench_sgemm(int n) {
    current_benchmark = "SGEMM " + std::to_string(n);
    std::printf("[gpu-check] SGEMM %dx%dx%d ...\n", n, n, n);
    std::fflush(stdout);
    // Twelve schedules: 8x8 accumulators per thread in 16x16-thread blocks; Halide's expert CUDA
    // matmul schedule (4x8 per thread, operands staged in registers with vector loads); tiles of
    // A and B staged in shared memory with the accumulators in registers (64x64 tiles, 16 steps
    // of k, 4x4 per thread; 128x128, 8 steps, 8x8); 128x128 tiles laid out for conflict-free
    // 16-byte reads (A transposed, 8x8 per thread as 2x2 groups of 4x4; 8 or 16 steps of k),
    // also with the next step's tiles loaded into registers while the current ones are used,
    // or with the steps in pairs, each with its own copy of the tiles (double buffering), or
    // both (the registers then hold a pair of steps' tiles).
    // The fastest is compared with cuBLAS.
    Target t = Target::cuda();
    Buffer<float> out(n, n);
    double flops = 2.0 * n * n * (double)n;
    std::vector<GpuCase> cases = {matmul_regs(n, 8), matmul_vectorized(n), matmul_shared_staged(n),
                                  matmul_shared_staged(n, 128, 8, 8), matmul_shared_vec(n), matmul_shared_vec(n, 16),
                                  matmul_shared_vec(n, 8, true), matmul_shared_vec(n, 16, true),
                                  matmul_shared_vec(n, 8, false, true), matmul_shared_vec(n, 16, false, true),
                                  matmul_shared_vec(n, 8, true, true), matmul_shared_vec(n, 16, true, true)};
    auto [best, weft_ms] = fastest(cases, out, 5, flops);
    GpuCase &c = cases[best];
    c.out.realize(out, t);  // the output compared with cuBLAS below comes from the fastest
    double weft_tf = flops / (weft_ms * 1e-3) / 1e12;
    Cublas cb;
    std::string peer = "n/a", ratio = "n/a";
    if (cb.load()) {
        CudaDriver &d = cuda_driver();
        void *handle = nullptr;
        if (cb.create(&handle) == 0) {
            c.inputs[0].copy_to_device();
            c.inputs[1].copy_to_device();
            CUdeviceptr_t C = 0;
            cuda_check(d.cuMemAlloc(&C, (size_t)n * n * 4), "cuMemAlloc");
            const float *A = (const float *)(uintptr_t)c.inputs[0].contents()->device;
            const float *B = (const float *)(uintptr_t)c.inputs[1].contents()->device;
            float alpha = 1.0f, beta = 0.0f;
            // Row-major C = A * B is column-major C^T = B^T * A^T.
            int st = 0;
            double ms = time_ms([&] { st |= cb.sgemm(handle, 0, 0, n, n, n, &alpha, B, n, A, n, &beta, (float *)(uintptr_t)C, n); }, 10);
            if (st == 0) against_cublas("SGEMM", C, n, out, flops, weft_ms, ms, peer, ratio);
            d.cuMemFree(C);
            cb.destroy(handle);
        }
    } else {
        std::printf("[gpu-check] cuBLAS could not be loaded: no SGEMM comparison\n");
    }
    rows.push_back({"SGEMM fp32 " + std::to_string(n), fmt("%.1f TFLOP/s", weft_tf), peer, ratio, ">= 0.90x"});
}

/** Half-precision GEMM on tensor cores (Stage::gpu_mma: mma.sync.m16n8k16, float32 sums):
    float16 A and B, float32 C, against cuBLAS's cublasGemmEx with the same types (which may use
    Hopper's wgmma). Each schedule's time is printed; the fastest goes in the table. */
template <typename T>
void bench_mma(int n) {
    const bool bf = std::is_same<T, bfloat16_t>::value;
    const char *tn = bf ? "bf16" : "fp16";
    std::printf("[gpu-check] %s GEMM on tensor cores %dx%dx%d ...\n", tn, n, n, n);
    std::fflush(stdout);
    Buffer<T> A(n, n, "A"), B(n, n, "B");
    for (int y = 0; y < n; y++)
        for (int x = 0; x < n; x++) {
            A(x, y) = T((float)((x * 7 + y * 13) % 17) / 8.0f - 1.0f);
            B(x, y) = T((float)((x * 5 + y * 3) % 11) / 4.0f - 1.25f);
        }
    struct S { const char *name; bool staged; int xt, yt, wx, wy; };
    std::vector<S> scheds = {{"global_2x2_warps_2x2", false, 2, 2, 2, 2}, {"staged_4x4_warps_4x2", true, 4, 4, 4, 2},
                             {"staged_2x4_warps_4x2", true, 2, 4, 4, 2}, {"staged_4x2_warps_2x4", true, 4, 2, 2, 4}};
    Target t = Target::cuda();
    Buffer<float> out(n, n);
    double flops = 2.0 * n * n * (double)n, best_ms = 1e30;
    for (auto &s : scheds) {
        Func f = matmul_mma(A, B, n, s.staged, s.xt, s.yt, s.wx, s.wy);
        try {
            double ms = time_ms([&] { f.realize(out, t); }, 5);
            timings.emplace_back(std::string(tn) + " GEMM " + std::to_string(n), std::string("mma_") + s.name, ms);
            std::printf("[gpu-check]   mma_%s: %.3f ms (%.1f TFLOP/s)\n", s.name, ms, flops / (ms * 1e-3) / 1e12);
            best_ms = std::min(best_ms, ms);
        } catch (Error &e) {
            std::printf("[gpu-check]   mma_%s: FAILED: %s\n", s.name, e.what());
        }
    }
    out.copy_to_host();  // (the last schedule's result)
    double weft_tf = flops / (best_ms * 1e-3) / 1e12;
    std::string peer = "n/a", ratio = "n/a";
    void *h = nullptr;
    const char *names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
    for (auto nm : names)
        if ((h = dlopen(nm, RTLD_NOW | RTLD_LOCAL))) break;
    typedef int (*GemmEx)(void *, int, int, int, int, int, const void *, const void *, int, int, const void *, int, int,
                          const void *, void *, int, int, int, int);
    auto create = h ? (int (*)(void **))dlsym(h, "cublasCreate_v2") : nullptr;
    auto gemm = h ? (GemmEx)dlsym(h, "cublasGemmEx") : nullptr;
    if (create && gemm) {
        CudaDriver &d = cuda_driver();
        void *handle = nullptr;
        if (create(&handle) == 0) {
            A.copy_to_device();
            B.copy_to_device();
            CUdeviceptr_t C = 0;
            cuda_check(d.cuMemAlloc(&C, (size_t)n * n * 4), "cuMemAlloc");
            const void *Ad = (const void *)(uintptr_t)A.contents()->device, *Bd = (const void *)(uintptr_t)B.contents()->device;
            float alpha = 1.0f, beta = 0.0f;
            const int in_type = bf ? 14 : 2, f32 = 0, compute_32f = 68, algo_default = -1;
            int st = 0;
            double ms = time_ms([&] { st |= gemm(handle, 0, 0, n, n, n, &alpha, Bd, in_type, n, Ad, in_type, n, &beta,
                                                 (void *)(uintptr_t)C, f32, n, compute_32f, algo_default); }, 10);
            if (st == 0) {
                against_cublas(std::string(tn) + " GEMM", C, n, out, flops, best_ms, ms, peer, ratio);
            } else {
                std::printf("[gpu-check] cublasGemmEx failed (status %d)\n", st);
            }
            d.cuMemFree(C);
        }
    } else {
        std::printf("[gpu-check] cuBLAS (cublasGemmEx) could not be loaded: no comparison\n");
    }
    rows.push_back({std::string(tn) + " GEMM (mma) " + std::to_string(n), fmt("%.1f TFLOP/s", weft_tf), peer, ratio, "(timed)"});
}

/** Times each schedule of the same pipeline; the fastest goes in the table (all are printed). */
void bench_memory(const std::string &what, std::vector<GpuCase> cases, double bytes_moved, double copy_gbs) {
    current_benchmark = what;
    std::printf("[gpu-check] %s ...\n", what.c_str());
    std::fflush(stdout);
    Buffer<float> out(cases[0].sizes);
    double ms = fastest(cases, out, 10).second;
    double gbs = bytes_moved / (ms * 1e-3) / 1e9;
    rows.push_back({what, fmt("%.0f GB/s", gbs), fmt("%.0f GB/s (copy)", copy_gbs), fmt("%.0f%%", 100.0 * gbs / copy_gbs),
                    ">= 85%"});
}

}  // namespace

int main(int argc, char **argv) {
    if (argc > 1 && std::string(argv[1]) == "--version") {  // gpu-check.sh: does a prebuilt binary run here?
        std::printf("weft_gpu_check\n");
        return 0;
    }
    bool quick = false, bench_only = false;  // --bench-only: the benchmarks, not the check against the interpreter
    std::string json;                         // --json FILE: the table and every schedule's time
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        quick |= a == "--quick";
        bench_only |= a == "--bench-only";
        if (a == "--json" && i + 1 < argc) json = argv[++i];
    }
    if (!cuda_available()) {
        std::printf("[gpu-check] no CUDA device on this machine (libcuda.so.1 or a GPU missing): nothing to run\n");
        return 0;
    }
    std::string why;
    if (!nvrtc_available(&why)) {
        std::printf("[gpu-check] NVRTC is not available (%s): cannot compile kernels\n", why.c_str());
        return 1;
    }
    CudaDriver &d = cuda_driver();
    std::printf("[gpu-check] device: %s, sm_%d%d, %d SMs; NVRTC %s\n", d.name.c_str(), d.cc_major, d.cc_minor, d.sm_count,
                nvrtc_version().c_str());
    int failures = bench_only ? 0 : check_correctness();
    double copy = 0;
    try {
        size_t bytes = (size_t)1 << 30;
        copy = copy_bandwidth_gbs(bytes);
        std::printf("[gpu-check] device-to-device copy: %.0f GB/s (read + write)\n", copy);
        // On the CPU emulation (a dry run of this script) the sizes are small: its numbers mean
        // nothing, and it is slow.
        bool emulated = cuda_emulated();
        int W = emulated ? 1024 : quick ? 4096 : 16384, H = W;
        bench_memory("blur 3x3 " + std::to_string(W) + "x" + std::to_string(H), {blur_shared(W, H), blur_vectorized(W, H), blur_vectorized(W, H, 32)},
                     2.0 * W * H * 4, copy);
        bench_memory("elementwise " + std::to_string(W) + "x" + std::to_string(H),
                     {elementwise_chain(W, H), elementwise_chain(W, H, 4)}, 2.0 * W * H * 4, copy);
        bench_sgemm(emulated ? 256 : quick ? 1024 : 4096);
        bench_mma<float16_t>(emulated ? 256 : quick ? 1024 : 4096);
        bench_mma<bfloat16_t>(emulated ? 256 : quick ? 1024 : 4096);
    } catch (Error &e) {
        std::printf("[gpu-check] benchmark failed: %s\n", e.what());
        failures++;
    }
    std::printf("\n%-24s %-16s %-22s %-8s %s\n", "benchmark", "weft", "peer", "ratio", "target");
    for (auto &r : rows)
        std::printf("%-24s %-16s %-22s %-8s %s\n", r.what.c_str(), r.weft.c_str(), r.peer.c_str(), r.ratio.c_str(),
                    r.target.c_str());
    std::printf("correctness: %s\n", failures     ? "FAILURES (see above)"
                                      : bench_only ? "not checked here (--bench-only; the GPU tests check the same pipelines)"
                                                   : "all GPU pipelines match the interpreter");
    if (!json.empty())
        write_json(json, d.name + ", sm_" + std::to_string(d.cc_major) + std::to_string(d.cc_minor) + ", " +
                             std::to_string(d.sm_count) + " SMs; NVRTC " + nvrtc_version(),
                   copy);
    return failures ? 1 : 0;
}
