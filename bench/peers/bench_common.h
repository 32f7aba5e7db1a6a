// Shared by every benchmark executable of bench/run (weft's and the peers'): the kernels'
// shapes, deterministic inputs, timing, and the line protocol bench/peers/harness.py speaks.
//
// Protocol (one command per line on stdin, one JSON line per command on stdout):
//   setup <kernel> <variant> <size> <outfile>
//       builds the kernel (JIT included), runs it twice, writes its output buffer to <outfile>
//       (raw float32, the layout of the kernel's definition below), answers
//       {"ok":true,"setup_ms":..,"call_ms":..,"compile_ms":..} or {"ok":false,"error":".."}
//       (setup_ms: building and the first call; first_ms: the same without making the data, or
//       negative; compile_ms: the compilation ahead of the first
//       call where there is one (Halide's compile_jit), else negative)
//   time <reps>      runs the current kernel reps times (steady state, no warm-up needed: setup
//                    already ran it), answers {"ok":true,"ms":[..],"minflt":..} (minor page
//                    faults per call, averaged)
//   release          frees the current kernel's buffers
//   quit
// Anything printed by a library must go to stderr: stdout carries the protocol only.
//
// Kernels and their data (row-major means the last index is contiguous):
//   sgemm_rm n   A, B, C are n×n row-major, C = A·B           (inputs seed 1, 2)
//   sgemm_cm n   A, B, C are n×n column-major, C = A·B        (same raw arrays as sgemm_rm)
//   blur W       in: (W+2)×(W+2) row-major, pixel (x, y) for x, y in [-1, W] at
//                [(y+1)*(W+2) + x+1]; out: W×W, out(x,y) = mean of the 3×3 box, computed as
//                bx(x,y) = (in(x-1,y)+in(x,y)+in(x+1,y))/3, out = (bx(x,y-1)+bx(x,y)+bx(x,y+1))/3
//   unsharp W    in: W×W row-major; e = repeat_edge(in); bx = Σ_i w_i e(x+i, y),
//                by = Σ_i w_i bx(x, y+i) for i in -2..2, w = {1,4,6,4,1}/16;
//                out = e + 1.5·(e - by)   (W×W)
//   softmax R    in: R×1024 row-major (row y = [y*1024, ...)); out row = softmax(in row)
//   layernorm R  in: R×1024 row-major, gamma[1024], beta[1024] (seeds 2, 3):
//                out = (x - mean)/sqrt(var + 1e-5)·gamma + beta, mean/var over the row
//   conv S       N=4, C_in=C_out=64, out S×S: in NHWC 4×(S+2)×(S+2)×64 (c innermost),
//                weights W(co, kx, ky, ci) with co innermost: [((ci*3+ky)*3+kx)*64+co],
//                bias[64] (seeds 2, 3); out NHWC 4×S×S×64:
//                out(co,x,y,n) = relu(bias(co) + Σ_{ci,kx,ky} W(co,kx,ky,ci)·in(ci,x+kx,y+ky,n))
//   conv_u8s8 S  as conv, input uint8, weights int8, out int32 (as floats), no bias or ReLU
//   gemm_u8s8 n  C = A·B, A n×n uint8 row-major, B n×n int8 row-major, C int32 (as floats)
//   gemm_bf16 n  C = A·B, A, B n×n bfloat16 row-major (gemm_bf16_a/_b), C float32
//   triad N      a[i] = b[i] + 3·c[i] over N floats (bandwidth reference, no output check)
#pragma once
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace bench {

constexpr int kSoftmaxCols = 1024;
constexpr int kConvN = 4, kConvC = 64;
constexpr float kLayerNormEps = 1e-5f;

/** The int8 GEMM's inputs (gemm_u8s8: C(x, y) = sum_k A(k, y) B(x, k), u8 x s8 -> s32), the
    same bytes on every side: A row y, column k; B row k, column x. */
inline uint8_t gemm_u8(int y, int k) { return (uint8_t)((y * 131 + k * 7 + (y * k) % 13) & 255); }
inline int8_t gemm_s8(int x, int k) { return (int8_t)(((x * 29 + k * 113 + (x ^ k) % 11) & 255) - 128); }

/** The bfloat16 GEMM's inputs (gemm_bf16: C(x, y) = sum_k A(k, y) B(x, k) in float32, A and B
    bfloat16), as bfloat16 bits, the same on every side: A row y, column k; B row k, column x.
    Values k/16-spaced in [-1, 1), each exact in bfloat16. */
inline uint16_t gemm_bf16_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
inline uint16_t gemm_bf16_a(int y, int k) {
    return gemm_bf16_bits((float)((y * 37 + k * 11 + (y * k) % 7) % 32 - 16) / 16.0f);
}
inline uint16_t gemm_bf16_b(int x, int k) {
    return gemm_bf16_bits((float)((x * 13 + k * 29 + (x ^ k) % 5) % 32 - 16) / 16.0f);
}

/** The int8 convolution's data (conv_u8s8: the conv shape, input uint8, weights int8, output
    int32, no bias or ReLU): element i of the input (NHWC, with its border) and of the weights
    (the float conv's layout, [((ci*3+ky)*3+kx)*64+co]). */
inline uint8_t conv_u8(size_t i) { return (uint8_t)((i * 131 + (i >> 7) * 7 + (i % 13)) & 255); }
inline int8_t conv_s8(size_t i) { return (int8_t)(((i * 29 + (i >> 5) * 113 + (i % 11)) & 255) - 128); }

/** A deterministic value in [-1, 1) for element i of the input with this seed. */
inline float input_value(uint64_t seed, uint64_t i) {
    uint64_t z = i + 0x9E3779B97F4A7C15ull * (seed + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)((double)(z >> 40) / (double)(1ull << 24)) * 2.0f - 1.0f;
}

inline void fill(float *p, size_t n, uint64_t seed) {
    for (size_t i = 0; i < n; i++) p[i] = input_value(seed, i);
}

inline std::vector<float> make_input(size_t n, uint64_t seed) {
    std::vector<float> v(n);
    fill(v.data(), n, seed);
    return v;
}

/** 64-byte aligned float storage that is touched (faulted in) at allocation. */
struct AlignedBuf {
    float *p = nullptr;
    size_t n = 0;
    AlignedBuf() = default;
    explicit AlignedBuf(size_t count) : n(count) {
        size_t bytes = ((count * sizeof(float) + 63) / 64) * 64;
        p = (float *)std::aligned_alloc(64, bytes ? bytes : 64);
        if (!p) throw std::bad_alloc();
        std::memset(p, 0, count * sizeof(float));
    }
    AlignedBuf(const AlignedBuf &) = delete;
    AlignedBuf &operator=(const AlignedBuf &) = delete;
    AlignedBuf(AlignedBuf &&o) noexcept : p(o.p), n(o.n) { o.p = nullptr; o.n = 0; }
    AlignedBuf &operator=(AlignedBuf &&o) noexcept {
        std::swap(p, o.p);
        std::swap(n, o.n);
        return *this;
    }
    ~AlignedBuf() { std::free(p); }
    float *data() const { return p; }
    size_t size() const { return n; }
};

inline AlignedBuf make_aligned_input(size_t n, uint64_t seed) {
    AlignedBuf b(n);
    fill(b.data(), n, seed);
    return b;
}

inline double now_ms() {
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

inline long minor_faults() {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

/** One prepared kernel: run() computes into the output; out()/out_size() expose it. */
struct Kernel {
    virtual ~Kernel() = default;
    virtual void run() = 0;
    virtual const float *out() const = 0;
    virtual size_t out_size() const = 0;
    /** Where the implementation compiles ahead of the first call (Halide's compile_jit): how
        long that took, reported as compile_ms; negative where compilation is in the first call. */
    virtual double compile_ms() const { return -1; }
    /** Building the computation and its first call (JIT compilation included), without making
        the problem's data, where the kernel times them apart (after its first run()), reported as
        first_ms; negative where it does not (setup_ms then stands for it). */
    virtual double first_call_ms() const { return -1; }
    /** The part of the first call spent compiling, where the kernel knows it (weft's
        cache_stats().compile_ms), reported as jit_ms; negative where it does not. */
    virtual double jit_ms() const { return -1; }
};

/** Makes a kernel, or returns null when this executable does not implement it. */
using Factory = std::function<std::unique_ptr<Kernel>(const std::string &kernel, const std::string &variant, int size)>;

inline std::string json_escape(const std::string &s) {
    std::string r;
    for (char c : s) {
        if (c == '"' || c == '\\') {
            r += '\\';
            r += c;
        } else if ((unsigned char)c < 0x20) {
            r += ' ';
        } else {
            r += c;
        }
    }
    return r;
}

/** Where protocol replies go (stdout unless protect_stdout() moved them). */
inline FILE *&proto_out() {
    static FILE *f = stdout;
    return f;
}

inline void reply(const std::string &json) {
    std::fputs(json.c_str(), proto_out());
    std::fputc('\n', proto_out());
    std::fflush(proto_out());
}

inline void reply_error(const std::string &msg) { reply("{\"ok\":false,\"error\":\"" + json_escape(msg) + "\"}"); }

inline bool write_output(const std::string &path, const float *p, size_t n) {
    FILE *f = std::fopen(path.c_str(), "wb");
    if (!f) return false;
    size_t w = std::fwrite(p, sizeof(float), n, f);
    std::fclose(f);
    return w == n;
}

/** The server loop: see the protocol at the top of this file. */
inline int serve(const Factory &make) {
    std::unique_ptr<Kernel> k;
    std::string line;
    while (std::getline(std::cin, line)) {
        std::istringstream is(line);
        std::string cmd;
        is >> cmd;
        try {
            if (cmd == "setup") {
                std::string kernel, variant, outfile;
                int size = 0;
                is >> kernel >> variant >> size >> outfile;
                k.reset();
                double t0 = now_ms();
                k = make(kernel, variant, size);
                if (!k) {
                    reply_error("kernel " + kernel + "/" + variant + " not implemented here");
                    continue;
                }
                k->run();
                double t1 = now_ms();
                k->run();
                double t2 = now_ms();
                if (outfile != "-" && !write_output(outfile, k->out(), k->out_size())) {
                    reply_error("cannot write " + outfile);
                    continue;
                }
                char buf[320];
                std::snprintf(buf, sizeof buf,
                              "{\"ok\":true,\"setup_ms\":%.3f,\"call_ms\":%.4f,\"n\":%zu,\"compile_ms\":%.3f,\"first_ms\":%.3f,"
                              "\"jit_ms\":%.3f}",
                              t1 - t0, t2 - t1, k->out_size(), k->compile_ms(), k->first_call_ms(), k->jit_ms());
                reply(buf);
            } else if (cmd == "time") {
                int reps = 1;
                is >> reps;
                if (!k) {
                    reply_error("no kernel set up");
                    continue;
                }
                std::vector<double> ms;
                long f0 = minor_faults();
                for (int r = 0; r < reps; r++) {
                    double t0 = now_ms();
                    k->run();
                    ms.push_back(now_ms() - t0);
                }
                long f1 = minor_faults();
                std::string s = "{\"ok\":true,\"ms\":[";
                for (size_t i = 0; i < ms.size(); i++) {
                    char b[32];
                    std::snprintf(b, sizeof b, "%s%.5f", i ? "," : "", ms[i]);
                    s += b;
                }
                char b[64];
                std::snprintf(b, sizeof b, "],\"minflt\":%.2f}", reps ? (double)(f1 - f0) / reps : 0.0);
                reply(s + b);
            } else if (cmd == "release") {
                k.reset();
                reply("{\"ok\":true}");
            } else if (cmd == "quit" || cmd.empty()) {
                if (cmd == "quit") break;
            } else {
                reply_error("unknown command " + cmd);
            }
        } catch (const std::exception &e) {
            k.reset();
            reply_error(std::string("exception: ") + e.what());
        }
    }
    return 0;
}

/** Keeps the protocol on a private copy of stdout and points file descriptor 1 at stderr, so
    that whatever a library prints cannot corrupt the protocol. Call first thing in main. */
inline void protect_stdout() {
    std::fflush(stdout);
    int fd = dup(1);
    if (fd < 0) return;
    FILE *f = fdopen(fd, "w");
    if (!f) return;
    dup2(2, 1);
    proto_out() = f;
}

}  // namespace bench
