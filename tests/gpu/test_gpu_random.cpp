// Random GPU schedules of the test pipelines (random sizes, tiles, threads per block, outputs
// per thread, vectorization, where the blur's first stage is computed and stored, steps of
// k, staging in shared memory or registers). Each trial either gives a result or is refused
// with a weft::Error before anything runs; it never crashes, and a refusal is never an
// internal error. GPUNvrtcRandom compiles each with NVRTC and checks the resources ptxas
// reports (label nvrtc); GPURunRandom runs each on the device (or the emulator, label
// gpu-emulated) against the interpreter.
//   WEFT_GPU_RANDOM_TRIALS (default 32) trials per suite, from seed WEFT_GPU_RANDOM_SEED (0).
#include <gtest/gtest.h>
#include <cstdlib>
#include <sstream>
#include "gpu/gpu_testing.h"
#include "property/random_util.h"

using namespace weft;
using namespace weft_gpu_test;
using weft_test::Rng;

namespace {

int env_int(const char *name, int fallback) {
    const char *e = std::getenv(name);
    return e && *e ? std::atoi(e) : fallback;
}

int pick(Rng &r, std::vector<int> v) { return r.pick(v); }

/** The 3x3 blur: blur_y in random tiles of threads, 1, 2 or 4 outputs per thread along x
    (vectorized or unrolled) and 1, 2 or 4 rows per thread; blur_x inlined, in its own kernel,
    staged per block (shared memory, or Register where that is possible) with its own
    threads, computed by each thread for itself, or on the host (a host stage: no GPU
    schedule; vectorized and parallel or not). */
GpuCase random_blur(Rng &r, std::ostream &d) {
    GpuCase c;
    c.name = "random_blur";
    int w = r.uniform(1, 100), h = r.uniform(1, 60);
    auto [bx, by] = blur_algorithm(c, w, h);
    Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi"), xt("xt"), xv("xv"), yr("yr"), yt("yt");
    int tx = pick(r, {1, 2, 4, 8, 16, 32}), ty = pick(r, {1, 2, 4, 8});
    int vec = pick(r, {1, 2, 4}), rows = pick(r, {1, 1, 2, 4});
    bool vectorize = r.chance(0.7);
    d << "blur " << w << "x" << h << "; blur_y: tiles of " << tx * vec << "x" << ty * rows << ", threads " << tx << "x"
      << ty;
    by.tile(x, y, xo, yo, xi, yi, tx * vec, ty * rows);
    Var thx = xi, thy = yi;
    if (vec > 1) {
        by.split(xi, xt, xv, vec);
        if (vectorize) by.vectorize(xv);
        else by.unroll(xv);
        thx = xt;
        d << ", " << vec << " along x " << (vectorize ? "vectorized" : "unrolled");
    }
    if (rows > 1) {
        by.split(yi, yr, yt, ty);
        if (vec > 1) by.reorder(xv, yr, xt, yt, xo, yo);
        else by.reorder(yr, xi, yt, xo, yo);
        by.unroll(yr);
        thy = yt;
        d << ", " << rows << " rows unrolled";
    }
    by.gpu_blocks(xo, yo).gpu_threads(thx, thy);
    switch (r.uniform(0, 4)) {
    case 0: d << "; blur_x inlined"; break;
    case 4: {
        bx.compute_root();
        d << "; blur_x on the host";
        if (r.chance(0.5)) {
            int v = pick(r, {4, 8, 16});
            bx.vectorize(x, v);
            d << ", vectorized by " << v;
        }
        if (r.chance(0.5)) {
            bx.parallel(y);
            d << ", rows in parallel";
        }
        break;
    }
    case 1: {
        int rx = pick(r, {4, 8, 16, 32, 64}), ry = pick(r, {1, 2, 4, 8});
        bx.compute_root().gpu_tile(x, y, xo, yo, xi, yi, rx, ry);
        d << "; blur_x root, tiles of " << rx << "x" << ry;
        break;
    }
    case 2: {
        bool shared = r.chance(0.75);
        bx.compute_at(by, xo).store_in(shared ? MemoryType::GPUShared : MemoryType::Register);
        d << "; blur_x per block in " << (shared ? "shared memory" : "Register (kept shared)");
        Var bthx = x, bthy = y;
        int bvec = pick(r, {1, 2, 4});
        if (bvec > 1) {
            bool v = r.chance(0.5);
            bx.split(x, xt, xv, bvec);
            if (v) bx.vectorize(xv);
            else bx.unroll(xv);
            bthx = xt;
            d << ", " << bvec << " along x " << (v ? "vectorized" : "unrolled");
        }
        if (rows > 1 && r.chance(0.5)) {
            bx.split(y, yr, yt, ty);
            if (bvec > 1) bx.reorder(xv, yr, xt, yt);
            else bx.reorder(yr, x, yt);
            bx.unroll(yr);
            bthy = yt;
            d << ", rows of " << ty << " threads unrolled";
        }
        bx.gpu_threads(bthx, bthy);
        break;
    }
    default: {
        bool reg = r.chance(0.5);
        bx.compute_at(by, thx);
        if (reg) bx.store_in(MemoryType::Register);
        d << "; blur_x per thread" << (reg ? " in registers" : "");
        break;
    }
    }
    return c;
}

/** Matrix products: register-blocked, staged in shared memory (random tiles, outputs per
    thread, steps of k), the 128x128 vector-staged one (steps of 4, 8 or 16, loads one step
    ahead, double-buffered, or neither) and the register-staged one, at random sizes (tails
    everywhere). */
GpuCase random_matmul(Rng &r, std::ostream &d) {
    switch (r.uniform(0, 3)) {
    case 0: {
        int n = r.uniform(1, 150), reg = pick(r, {1, 2, 4}), t = pick(r, {4, 8, 16});
        d << "matmul_regs(n=" << n << ", reg=" << reg << ", threads=" << t << "x" << t << ")";
        return matmul_regs(n, reg, t);
    }
    case 1: {
        int n = r.uniform(1, 150), tile = pick(r, {16, 32, 64}), reg = pick(r, {1, 2, 4}), kstep = pick(r, {1, 2, 4, 8, 16});
        if (tile / reg > 32) reg = tile / 32;
        d << "matmul_shared_staged(n=" << n << ", tile=" << tile << ", reg=" << reg << ", kstep=" << kstep << ")";
        return matmul_shared_staged(n, tile, reg, kstep);
    }
    case 2: {
        int n = r.uniform(1, 300), kstep = pick(r, {4, 8, 16});
        bool ahead = r.chance(0.5), twice = r.chance(0.5);
        d << "matmul_shared_vec(n=" << n << ", kstep=" << kstep << ", load_ahead=" << ahead << ", double_buffer=" << twice << ")";
        return matmul_shared_vec(n, kstep, ahead, twice);
    }
    default: {
        int n = r.uniform(1, 150);
        d << "matmul_vectorized(n=" << n << ")";
        return matmul_vectorized(n);
    }
    }
}

/** Pointwise, update stages, the vectorized elementwise chain, row sums reduced across the
    threads of a block, inline reductions, a scalar total, a gather, with random sizes and
    threads per block. */
GpuCase random_other(Rng &r, std::ostream &d) {
    switch (r.uniform(0, 9)) {
    case 0: {
        int w = r.uniform(1, 300), h = r.uniform(1, 50), tx = pick(r, {1, 8, 32, 64}), ty = pick(r, {1, 2, 8});
        d << "pointwise(" << w << "x" << h << ", threads " << tx << "x" << ty << ")";
        return pointwise(w, h, tx, ty);
    }
    case 1: {
        int n = r.uniform(1, 3000), t = pick(r, {32, 64, 128, 256, 1024});
        d << "update_stage(n=" << n << ", threads=" << t << ")";
        return update_stage(n, t);
    }
    case 2: {
        int w = r.uniform(1, 700), h = r.uniform(1, 20), rows = pick(r, {1, 2, 4}), t = pick(r, {32, 64, 128});
        d << "elementwise_chain(" << w << "x" << h << ", rows=" << rows << ", threads=" << t << ")";
        return elementwise_chain(w, h, rows, t);
    }
    case 3: {
        int w = r.uniform(1, 2000), h = r.uniform(1, 40), t = pick(r, {16, 32, 64, 100, 128, 256, 384});
        d << "row_sum_rfactor(" << w << "x" << h << ", threads=" << t << ")";
        return row_sum_rfactor(w, h, t);
    }
    case 4: {
        int w = r.uniform(1, 300), h = r.uniform(1, 50);
        d << "box_sum(" << w << "x" << h << ")";
        return box_sum(w, h);
    }
    case 5: {
        int w = r.uniform(1, 400), h = r.uniform(1, 100);
        d << "total_sum(" << w << "x" << h << ")";
        return total_sum(w, h);
    }
    case 6: {
        int w = r.uniform(1, 400), h = r.uniform(1, 80), bins = pick(r, {1, 7, 64, 300});
        int tx = pick(r, {1, 16, 32, 128}), ty = pick(r, {1, 4, 8});
        d << "histogram_atomic(" << w << "x" << h << ", bins=" << bins << ", tile " << tx << "x" << ty << ")";
        return histogram_atomic(w, h, bins, tx, ty);
    }
    case 7: {
        int w = r.uniform(1, 1024), h = r.uniform(1, 40), bins = pick(r, {1, 5, 16, 100});
        d << "scatter_max_atomic(" << w << "x" << h << ", bins=" << bins << ")";
        return scatter_max_atomic(w, h, bins);
    }
    case 8: {
        int w = r.uniform(1, 900), h = r.uniform(1, 30), bins = pick(r, {1, 8, 32, 100, 256});
        int t = pick(r, {32, 64, 128, 256});
        d << "row_histogram_shared(" << w << "x" << h << ", bins=" << bins << ", threads=" << t << ")";
        return row_histogram_shared(w, h, bins, t);
    }
    default: {
        int w = r.uniform(64, 300), h = r.uniform(1, 30);
        d << "lut_gather(" << w << "x" << h << ")";
        return lut_gather(w, h);
    }
    }
}

GpuCase random_case(uint32_t seed, std::string &desc) {
    Rng r(seed);
    std::ostringstream d;
    int kind = r.uniform(0, 2);
    GpuCase c = kind == 0 ? random_blur(r, d) : kind == 1 ? random_matmul(r, d) : random_other(r, d);
    desc = d.str();
    return c;
}

/** Runs `trial` on each random case; a weft::Error it throws is a refusal, which must not be
    an internal error; at most a third of the trials may be refused. */
void for_each_trial(uint32_t salt, const std::function<void(GpuCase &)> &trial) {
    int n = env_int("WEFT_GPU_RANDOM_TRIALS", 32);
    uint32_t first = (uint32_t)env_int("WEFT_GPU_RANDOM_SEED", 0);
    int refused = 0;
    for (int i = 0; i < n; i++) {
        uint32_t seed = salt + first + (uint32_t)i;
        std::string desc;
        GpuCase c = random_case(seed, desc);
        SCOPED_TRACE("seed " + std::to_string(seed) + ": " + desc);
        try {
            trial(c);
        } catch (const Error &e) {
            std::string what = e.what();
            refused++;
            std::printf("seed %u refused: %s\n  %s\n", seed, desc.c_str(), what.substr(0, 3000).c_str());
            EXPECT_EQ(what.find("internal error"), std::string::npos) << what;
            EXPECT_EQ(what.rfind("weft: ", 0), 0u) << what;
        }
    }
    EXPECT_LE(refused * 3, n) << "too many random schedules refused";
}

}  // namespace

TEST(GPUNvrtcRandom, SchedulesCompileWithinLimits) {
    std::string why;
    if (!internal::nvrtc_available(&why)) GTEST_SKIP() << "NVRTC is not available: " << why;
    for_each_trial(7000u, [](GpuCase &c) {
        Built b = build(c);
        ASSERT_FALSE(b.prog.kernels.empty());
        ASSERT_FALSE(b.out.binary.empty());
        for (auto &k : b.prog.kernels) {
            auto it = b.out.usage.find(k.name);
            ASSERT_NE(it, b.out.usage.end()) << "no ptxas report for " << k.name;
            // weft rounds each shared buffer up to 16 bytes; ptxas only aligns their starts.
            EXPECT_LE(it->second.shared_bytes, k.shared_bytes) << k.name;
            EXPECT_GT(it->second.shared_bytes + 16 * 8, k.shared_bytes) << k.name;
            EXPECT_LE(k.block[0] * k.block[1] * k.block[2], 1024) << k.name;
        }
        internal::check_kernel_resources(b.prog, b.out);  // throws Error past sm_90's limits
    });
}

TEST(GPURunRandom, SchedulesMatchInterpreter) {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device (libcuda.so.1 and a GPU are needed)";
    Target t = Target::cuda();
    for_each_trial(7000u, [&](GpuCase &c) { EXPECT_LE(compare_with_interpreter(c, t), 1e-5); });
}
