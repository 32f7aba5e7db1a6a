// weft_blur: a two-stage 3x3 box blur of a 2048x2048 float image with a good CPU schedule (or,
// with --target host-cuda, a GPU schedule), checked against a plain C++ reference.
// Usage: weft_blur [--target host|host-cuda] [--size n]
#include <weft/weft.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "app_util.h"

namespace weft_apps {

int run_blur(const Options &o) {
    using namespace weft;
    const int W = o.size ? o.size : 2048, H = W;
    // The input carries a one-pixel border so that the blur of every output pixel is defined.
    Buffer<float> in(W + 2, H + 2);
    in.set_min(-1, -1);
    for (int y = -1; y <= H; y++)
        for (int x = -1; x <= W; x++) in(x, y) = (float)((x * 7 + y * 13) % 256) / 255.0f;

    Var x("x"), y("y"), xi("xi"), yi("yi");
    Func blur_x("blur_x"), blur_y("blur_y");
    blur_x(x, y) = (in(x - 1, y) + in(x, y) + in(x + 1, y)) * (1.0f / 3.0f);
    blur_y(x, y) = (blur_x(x, y - 1) + blur_x(x, y) + blur_x(x, y + 1)) * (1.0f / 3.0f);

    if (o.gpu()) {
        // GPU: one block per 128x8 tile, 32x8 threads each writing 4 adjacent outputs as one
        // 16-byte store; the tile's blur_x rows (10 of them, with the halo) are computed by
        // the block's threads into shared memory first (a barrier is put in between).
        Var xo("xo"), yo("yo"), xt("xt"), xv("xv");
        blur_y.tile(x, y, xo, yo, xi, yi, 128, 8).split(xi, xt, xv, 4).vectorize(xv).gpu_blocks(xo, yo).gpu_threads(xt, yi);
        blur_x.compute_at(blur_y, xo).store_in(MemoryType::GPUShared).split(x, xt, xv, 4).vectorize(xv).gpu_threads(xt, y);
    } else {
        // Strips of 32 rows run in parallel; inside a strip, blur_x is computed per row as
        // needed (a sliding window over the strip), and both stages are vectorized by 16.
        blur_y.split(y, y, yi, 32).parallel(y).vectorize(x, 16);
        blur_x.store_at(blur_y, y).compute_at(blur_y, yi).vectorize(x, 16);
    }

    Buffer<float> out(W, H);
    // On a GPU, calls return while their kernels run: 10 calls are queued, then waited for.
    Timing t = o.gpu() ? time_calls([&] { blur_y.realize(out, o.target); }, 20, 10, [&] { out.device_sync(); })
                       : time_calls([&] { blur_y.realize(out); });

    // Plain C++ reference.
    std::vector<float> bx((size_t)W * (H + 2));
    for (int yy = -1; yy <= H; yy++)
        for (int xx = 0; xx < W; xx++)
            bx[(size_t)(yy + 1) * W + xx] = (in(xx - 1, yy) + in(xx, yy) + in(xx + 1, yy)) * (1.0f / 3.0f);
    int bad = 0;
    double max_err = 0;
    for (int yy = 0; yy < H; yy++)
        for (int xx = 0; xx < W; xx++) {
            float e = (bx[(size_t)yy * W + xx] + bx[(size_t)(yy + 1) * W + xx] + bx[(size_t)(yy + 2) * W + xx]) *
                      (1.0f / 3.0f);
            double err = std::fabs((double)out(xx, yy) - e);
            max_err = std::max(max_err, err);
            if (err > 1e-5 * std::max(1.0, std::fabs((double)e))) bad++;
        }
    double gbs = 2.0 * W * H * sizeof(float) / (t.median_ms * 1e-3) * 1e-9;  // the image read once, written once
    std::printf("blur 3x3 %dx%d float on %s: first call %.1f ms (JIT included), median of 20 cached calls %.3f ms "
                "(%.1f GB/s)\n",
                W, H, o.gpu() ? "the GPU" : "the CPU", t.first_ms, t.median_ms, gbs);
    if (bad) {
        std::printf("blur: MISMATCH (%d wrong values, max error %g)\n", bad, max_err);
        return 1;
    }
    std::printf("blur: OK (max error %g)\n", max_err);
    return 0;
}

}  // namespace weft_apps

#ifdef WEFT_APP_MAIN
int main(int argc, char **argv) { return weft_apps::app_main("blur", weft_apps::run_blur, argc, argv); }
#endif
