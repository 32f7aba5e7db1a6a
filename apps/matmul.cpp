// weft_matmul: a 512x512 float matrix product with a tiled CPU schedule (or, with --target
// host-cuda, a GPU schedule), checked against a plain C++ reference.
// Usage: weft_matmul [--target host|host-cuda] [--size n]
#include <weft/weft.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "app_util.h"

namespace weft_apps {

int run_matmul(const Options &o) {
    using namespace weft;
    const int N = o.size ? o.size : 512;
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

    if (o.gpu()) {
        // GPU: one block per 64x64 tile of C, 16x16 threads each accumulating a 4x4 block of
        // it in registers; at each step of 16 along k the block's threads first copy the
        // 64x16 slices of A and B it needs into shared memory (barriers are put around them).
        Var tx("tx"), ty("ty"), ir("ir"), jr("jr");
        C.tile(i, j, io, jo, ii, ji, 64, 64).split(ii, tx, ir, 4).split(ji, ty, jr, 4).reorder(ir, jr, tx, ty, io, jo);
        C.gpu_blocks(io, jo).gpu_threads(tx, ty).unroll(ir).unroll(jr);
        prod.compute_at(C, io).store_in(MemoryType::Register);
        prod.split(i, tx, ir, 4).split(j, ty, jr, 4).reorder(ir, jr, tx, ty).gpu_threads(tx, ty).unroll(ir).unroll(jr);
        prod.update(0).split(k, ko, ki, 16).split(i, tx, ir, 4).split(j, ty, jr, 4).reorder(ir, jr, ki, tx, ty, ko);
        prod.update(0).gpu_threads(tx, ty).unroll(ir).unroll(jr);
        Func As = A.in(), Bs = B.in();
        Var bt("bt"), bv("bv"), at("at"), av("av");
        Bs.compute_at(prod, ko).store_in(MemoryType::GPUShared).split(Bs.args()[0], bt, bv, 4).vectorize(bv);
        Bs.gpu_threads(bt, Bs.args()[1]);
        As.compute_at(prod, ko).store_in(MemoryType::GPUShared).split(As.args()[1], at, av, 4).unroll(av);
        As.gpu_threads(As.args()[0], at);
    } else {
        // 64x16 output tiles, in parallel over rows of tiles; each tile accumulates in a local
        // buffer with the i loop vectorized innermost and the reduction loop outside it.
        C.tile(i, j, io, jo, ii, ji, 64, 16).vectorize(ii, 16).parallel(jo);
        prod.compute_at(C, io).vectorize(i, 16);
        prod.update(0).reorder(i, j, k).vectorize(i, 16).unroll(j, 2);
    }

    Buffer<float> out(N, N);
    // On a GPU, calls return while their kernels run: 10 calls are queued, then waited for.
    Timing t = o.gpu() ? time_calls([&] { C.realize(out, o.target); }, 20, 10, [&] { out.device_sync(); })
                       : time_calls([&] { C.realize(out); });

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
    std::printf("matmul %dx%d float on %s: first call %.1f ms (JIT included), median of 20 cached calls %.3f ms "
                "(%.1f GFLOP/s)\n",
                N, N, o.gpu() ? "the GPU" : "the CPU", t.first_ms, t.median_ms, gflops);
    if (bad) {
        std::printf("matmul: MISMATCH (%d wrong values, max error %g)\n", bad, max_err);
        return 1;
    }
    std::printf("matmul: OK (max error %g)\n", max_err);
    return 0;
}

}  // namespace weft_apps

#ifdef WEFT_APP_MAIN
int main(int argc, char **argv) { return weft_apps::app_main("matmul", weft_apps::run_matmul, argc, argv); }
#endif
