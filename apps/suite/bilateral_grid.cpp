// bilateral_grid in weft: Halide's algorithm and its CPU schedule (apps/bilateral_grid),
// directive for directive. See bilateral_grid.h.
#include "bilateral_grid.h"

#include "weft_suite.h"

namespace suite {
namespace bilateral_grid {

WeftDef build(int, bool scheduled) {
    using namespace weft;
    ImageParam input(Float(32), 2, "input");
    const int s_sigma = kSSigma;
    const float r_sigma = kRSigma;
    Var x("x"), y("y"), z("z"), c("c");

    Func clamped = BoundaryConditions::repeat_edge(input);

    // The bilateral grid: (sum of values, count) per cell and intensity level.
    RDom r(0, s_sigma, 0, s_sigma, "r");
    Expr val = clamped(x * s_sigma + r.x - s_sigma / 2, y * s_sigma + r.y - s_sigma / 2);
    val = clamp(val, 0.0f, 1.0f);
    Expr zi = cast<int>(val * (1.0f / r_sigma) + 0.5f);

    Func histogram("histogram");
    histogram(x, y, z, c) = 0.0f;
    histogram(x, y, zi, c) += mux(c, {val, 1.0f});

    // Five-tap blurs of the grid along z, x and y.
    Func blurx("blurx"), blury("blury"), blurz("blurz");
    blurz(x, y, z, c) = (histogram(x, y, z - 2, c) + histogram(x, y, z - 1, c) * 4 + histogram(x, y, z, c) * 6 +
                         histogram(x, y, z + 1, c) * 4 + histogram(x, y, z + 2, c));
    blurx(x, y, z, c) = (blurz(x - 2, y, z, c) + blurz(x - 1, y, z, c) * 4 + blurz(x, y, z, c) * 6 +
                         blurz(x + 1, y, z, c) * 4 + blurz(x + 2, y, z, c));
    blury(x, y, z, c) = (blurx(x, y - 2, z, c) + blurx(x, y - 1, z, c) * 4 + blurx(x, y, z, c) * 6 +
                         blurx(x, y + 1, z, c) * 4 + blurx(x, y + 2, z, c));

    // Trilinear samples of the grid.
    val = clamp(input(x, y), 0.0f, 1.0f);
    Expr zv = val * (1.0f / r_sigma);
    zi = cast<int>(zv);
    Expr zf = zv - zi;
    Expr xf = cast<float>(x % s_sigma) / s_sigma;
    Expr yf = cast<float>(y % s_sigma) / s_sigma;
    Expr xi = x / s_sigma;
    Expr yi = y / s_sigma;
    Func interpolated("interpolated");
    interpolated(x, y, c) = lerp(lerp(lerp(blury(xi, yi, zi, c), blury(xi + 1, yi, zi, c), xf),
                                        lerp(blury(xi, yi + 1, zi, c), blury(xi + 1, yi + 1, zi, c), xf), yf),
                                  lerp(lerp(blury(xi, yi, zi + 1, c), blury(xi + 1, yi, zi + 1, c), xf),
                                        lerp(blury(xi, yi + 1, zi + 1, c), blury(xi + 1, yi + 1, zi + 1, c), xf), yf),
                                  zf);

    // Normalize.
    Func bilateral_grid("bilateral_grid");
    bilateral_grid(x, y) = interpolated(x, y, 0) / interpolated(x, y, 1);

    if (scheduled) {
        blurz.compute_at(blurx, y).reorder(c, z, x, y).vectorize(x, 8).unroll(c);
        histogram.compute_at(blurz, y);
        histogram.update().reorder(c, r.x, r.y, x, y).unroll(c);
        blurx.compute_root().reorder(c, x, z, y).parallel(y).vectorize(x, 8).unroll(c);
        blury.compute_at(bilateral_grid, y)
            .store_in(MemoryType::Stack)
            .reorder(c, x, y, z)
            .reorder_storage(c, z, x, y)
            .vectorize(x, 8)
            .unroll(c);
        bilateral_grid.compute_root().parallel(y, 8).vectorize(x, 8);
    }
    return {bilateral_grid, {input}};
}

}  // namespace bilateral_grid
}  // namespace suite

WEFT_SUITE_APP(bilateral_grid)
