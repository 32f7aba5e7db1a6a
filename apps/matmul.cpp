// weft_matmul: a 512x512 float matrix product with a tiled schedule, checked against a plain
// C++ reference.
#include <weft/weft.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "app_util.h"

namespace weft_apps {

int run_matmul() {
    using namespace weft;
    const int N = 512;
    // A(k, j) is row j, column k of matrix A (dimension 0 innermost); C = A * B.
    Buffer<float> A(N, N), B(N, N);
    for (int j = 0; j < N; j++)
        for (int i = 0; i < N; i++) {
            A(i, j) = (float)((i * 3 + j * 5) % 17) / 17.0f - 0.5f;
            B(i, j) = (float)((i * 7 + j * 11) % 19) / 19.0f - 0.5f;
        }

    Var i("i"), j("j"), io("io"), jo("jo"), ii("ii"), ji("ji");
    RDom k(0, N, "k");
    RVar ko("ko"), ki("ki");
    Func prod("prod"), C("C");
    prod(i, j) = 0.0f;
    prod(i, j) += A(k, j) * B(i, k);
    C(i, j) = prod(i, j);

    // 64x16 output tiles, in parallel over rows of tiles; each tile accumulates in a local
    // buffer with the i loop vectorized innermost and the reduction loop outside it.
    C.tile(i, j, io, jo, ii, ji, 64, 16).vectorize(ii, 16).parallel(jo);
    prod.compute_at(C, io).vectorize(i, 16);
    prod.update(0).reorder(i, j, k).vectorize(i, 16).unroll(j, 2);

    Buffer<float> out(N, N);
    Timing t = time_calls([&] { C.realize(out); });

    // Plain C++ reference (i innermost for speed).
    std::vector<float> ref((size_t)N * N, 0.0f);
    for (int jj = 0; jj < N; jj++)
        for (int kk = 0; kk < N; kk++) {
            float a = A(kk, jj);
            const float *brow = &B(0, kk);
            float *crow = &ref[(size_t)jj * N];
            for (int x = 0; x < N; x++) crow[x] += a * brow[x];
        }
    int bad = 0;
    double max_err = 0;
    for (int jj = 0; jj < N; jj++)
        for (int x = 0; x < N; x++) {
            double e = ref[(size_t)jj * N + x];
            double err = std::fabs((double)out(x, jj) - e);
            max_err = std::max(max_err, err);
            if (err > 1e-3 * std::max(1.0, std::fabs(e))) bad++;
        }
    double gflops = 2.0 * N * N * N / (t.median_ms * 1e-3) * 1e-9;
    std::printf("matmul %dx%d float: first call %.1f ms (JIT included), median of 20 cached calls %.3f ms (%.1f GFLOP/s)\n",
                N, N, t.first_ms, t.median_ms, gflops);
    if (bad) {
        std::printf("matmul: MISMATCH (%d wrong values, max error %g)\n", bad, max_err);
        return 1;
    }
    std::printf("matmul: OK (max error %g)\n", max_err);
    return 0;
}

}  // namespace weft_apps

#ifdef WEFT_APP_MAIN
int main() {
    try {
        return weft_apps::run_matmul();
    } catch (const std::exception &e) {
        std::printf("matmul: error: %s\n", e.what());
        return 2;
    }
}
#endif
