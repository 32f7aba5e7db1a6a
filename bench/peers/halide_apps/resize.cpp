// resize in Halide 14: apps/resize's algorithm and CPU schedule (cubic, upsample=true, float32
// input). See apps/suite/resize.h.
#include "resize.h"

#include "halide_suite.h"

namespace suite {
namespace resize {

static Halide::Expr cubic(Halide::Expr x) {
    using namespace Halide;
    Expr xx = abs(x);
    Expr xx2 = xx * xx;
    Expr xx3 = xx2 * xx;
    float a = -0.5f;
    return select(xx < 1.0f, (a + 2.0f) * xx3 - (a + 3.0f) * xx2 + 1,
                  select(xx < 2.0f, a * xx3 - 5 * a * xx2 + 8 * a * xx - 4.0f * a, 0.0f));
}

HalideDef build(int, bool scheduled) {
    using namespace Halide;
    ImageParam input(Float(32), 3, "input");
    Var x("x"), y("y"), c("c"), k("k");
    Func as_float("as_float"), resized_x("resized_x"), resized_y("resized_y"),
        unnormalized_kernel_x("unnormalized_kernel_x"), unnormalized_kernel_y("unnormalized_kernel_y"),
        kernel_x("kernel_x"), kernel_y("kernel_y"), kernel_sum_x("kernel_sum_x"), kernel_sum_y("kernel_sum_y"),
        output("output");

    as_float(x, y, c) = cast<float>(input(x, y, c));

    // scale_factor is a constant (Halide: an Input<float>).
    const float scale_factor = kScale;
    Expr inverse_scale_factor = strict_float(Expr(1.0f) / scale_factor);
    Expr kernel_scaling = kUpsample ? Expr(1.0f) : Expr(scale_factor);
    Expr inverse_kernel_scaling = kUpsample ? Expr(1.0f) : inverse_scale_factor;
    Expr kernel_radius = 0.5f * kCubicTaps * inverse_kernel_scaling;
    Expr kernel_taps = cast<int>(ceil(kCubicTaps * inverse_kernel_scaling));

    Expr sourcex = (x + 0.5f) * inverse_scale_factor - 0.5f;
    Expr sourcey = (y + 0.5f) * inverse_scale_factor - 0.5f;

    Expr beginx = cast<int>(strict_float(ceil(sourcex - kernel_radius)));
    Expr beginy = cast<int>(strict_float(ceil(sourcey - kernel_radius)));
    beginx = clamp(beginx, input.dim(0).min(), input.dim(0).max() + 1 - kernel_taps);
    beginy = clamp(beginy, input.dim(1).min(), input.dim(1).max() + 1 - kernel_taps);

    RDom r(0, kernel_taps, "r");

    unnormalized_kernel_x(x, k) = cubic((k + beginx - sourcex) * kernel_scaling);
    unnormalized_kernel_y(y, k) = cubic((k + beginy - sourcey) * kernel_scaling);

    kernel_sum_x(x) = sum(unnormalized_kernel_x(x, r), "kernel_sum_x_sum");
    kernel_sum_y(y) = sum(unnormalized_kernel_y(y, r), "kernel_sum_y_sum");

    kernel_x(x, k) = unnormalized_kernel_x(x, k) / kernel_sum_x(x);
    kernel_y(y, k) = unnormalized_kernel_y(y, k) / kernel_sum_y(y);

    // Upsampling: resize in x first, then in y.
    resized_x(x, y, c) = sum(kernel_x(x, r) * as_float(r + beginx, y, c), "resized_x_sum");
    resized_y(x, y, c) = sum(kernel_y(y, r) * resized_x(x, r + beginy, c), "resized_y_sum");

    output(x, y, c) = clamp(resized_y(x, y, c), 0.0f, 1.0f);

    if (scheduled) {
        const int vec = get_jit_target_from_environment().natural_vector_size<float>();
        Var xi("xi"), yi("yi");
        unnormalized_kernel_x.compute_at(kernel_x, x).vectorize(x);
        kernel_sum_x.compute_at(kernel_x, x).vectorize(x);
        kernel_x.compute_root().reorder(k, x).vectorize(x, vec);

        unnormalized_kernel_y.compute_at(kernel_y, y).vectorize(y, vec);
        kernel_sum_y.compute_at(kernel_y, y).vectorize(y);
        kernel_y.compute_at(output, y).reorder(k, y).vectorize(y, vec);

        // upsample == true
        output.tile(x, y, xi, yi, 16, 64).parallel(y).vectorize(xi);
        resized_x.compute_at(output, x).store_in(MemoryType::Stack).vectorize(x);
        resized_y.compute_at(output, xi).unroll(c);

        // Halide's app also frees the innermost strides (set_stride(Expr())) and specializes
        // for planar, packed RGB and packed RGBA layouts; the suite's buffers are planar and
        // dense (Halide's default stride constraint), the case of output.specialize(planar),
        // which adds no directive.
    }
    return {output, {input}};
}

}  // namespace resize
}  // namespace suite

HALIDE_SUITE_APP(resize)
