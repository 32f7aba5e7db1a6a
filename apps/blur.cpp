// weft_blur: a two-stage 3x3 box blur of a 2048x2048 float image with a good CPU schedule,
// checked against a plain C++ reference.
#include <weft/weft.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "app_util.h"

namespace weft_apps {

int run_blur() {
    using namespace weft;
    const int W = 2048, H = 2048;
    // The input carries a one-pixel border so that the blur of every output pixel is defined.
    Buffer<float> in(W + 2, H + 2);
    in.set_min(-1, -1);
    for (int y = -1; y <= H; y++)
        for (int x = -1; x <= W; x++) in(x, y) = (float)((x * 7 + y * 13) % 256) / 255.0f;

    Var x("x"), y("y"), xi("xi"), yi("yi");
    Func blur_x("blur_x"), blur_y("blur_y");
    blur_x(x, y) = (in(x - 1, y) + in(x, y) + in(x + 1, y)) * (1.0f / 3.0f);
    blur_y(x, y) = (blur_x(x, y - 1) + blur_x(x, y) + blur_x(x, y + 1)) * (1.0f / 3.0f);

    // Strips of 32 rows run in parallel; inside a strip, blur_x is computed per row as needed
    // (a sliding window over the strip), and both stages are vectorized by 16.
    blur_y.split(y, y, yi, 32).parallel(y).vectorize(x, 16);
    blur_x.store_at(blur_y, y).compute_at(blur_y, yi).vectorize(x, 16);

    Buffer<float> out(W, H);
    Timing t = time_calls([&] { blur_y.realize(out); });

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
    std::printf("blur 3x3 %dx%d float: first call %.1f ms (JIT included), median of 20 cached calls %.3f ms\n", W, H,
                t.first_ms, t.median_ms);
    if (bad) {
        std::printf("blur: MISMATCH (%d wrong values, max error %g)\n", bad, max_err);
        return 1;
    }
    std::printf("blur: OK (max error %g)\n", max_err);
    return 0;
}

}  // namespace weft_apps

#ifdef WEFT_APP_MAIN
int main() {
    try {
        return weft_apps::run_blur();
    } catch (const std::exception &e) {
        std::printf("blur: error: %s\n", e.what());
        return 2;
    }
}
#endif
