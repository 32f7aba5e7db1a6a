// resize in weft: Halide's algorithm and its CPU schedule (apps/resize, cubic, upsample=true,
// float32 input), directive for directive. See resize.h.
#include "resize.h"

#include "weft_suite.h"

namespace suite {
namespace resize {

static weft::Expr cubic(weft::Expr x) {
    using namespace weft;
    Expr xx = abs(x);
    Expr xx2 = xx * xx;
    Expr xx3 = xx2 * xx;
    float a = -0.5f;
    return select(xx < 1.0f, (a + 2.0f) * xx3 - (a + 3.0f) * xx2 + 1,
                  select(xx < 2.0f, a * xx3 - 5 * a * xx2 + 8 * a * xx - 4.0f * a, 0.0f));
}

WeftDef build(int, bool scheduled) {
    using namespace weft;
    ImageParam input(Float(32), 3, "input");
    Var x("x"), y("y"), c("c"), k("k");
    Func as_float("as_float"), resized_x("resized_x"), resized_y("resized_y"),
        unnormalized_kernel_x("unnormalized_kernel_x"), unnormalized_kernel_y("unnormalized_kernel_y"),
        kernel_x("kernel_x"), kernel_y("kernel_y"), kernel_sum_x("kernel_sum_x"), kernel_sum_y("kernel_sum_y"),
        output("output");

    as_float(x, y, c) = cast<float>(input(x, y, c));

    // scale_factor is a constant (Halide: an Input<float>).
    const float scale_factor = kScale;
    // MISSING in weft: strict_float(...) (here and on the ceil below; weft does not relax floats).
    Expr inverse_scale_factor = Expr(1.0f) / scale_factor;
    Expr kernel_scaling = kUpsample ? Expr(1.0f) : Expr(scale_factor);
    Expr inverse_kernel_scaling = kUpsample ? Expr(1.0f) : inverse_scale_factor;
    Expr kernel_radius = 0.5f * kCubicTaps * inverse_kernel_scaling;
    Expr kernel_taps = cast<int>(ceil(kCubicTaps * inverse_kernel_scaling));

    Expr sourcex = (x + 0.5f) * inverse_scale_factor - 0.5f;
    Expr sourcey = (y + 0.5f) * inverse_scale_factor - 0.5f;

    Expr beginx = cast<int>(ceil(sourcex - kernel_radius));
    Expr beginy = cast<int>(ceil(sourcey - kernel_radius));
    beginx = clamp(beginx, input.min(0), input.min(0) + input.extent(0) - kernel_taps);
    beginy = clamp(beginy, input.min(1), input.min(1) + input.extent(1) - kernel_taps);

    RDom r(0, kernel_taps, "r");

    unnormalized_kernel_x(x, k) = cubic((k + beginx - sourcex) * kernel_scaling);
    unnormalized_kernel_y(y, k) = cubic((k + beginy - sourcey) * kernel_scaling);

    kernel_sum_x(x) = sum(unnormalized_kernel_x(x, r));
    kernel_sum_y(y) = sum(unnormalized_kernel_y(y, r));

    kernel_x(x, k) = unnormalized_kernel_x(x, k) / kernel_sum_x(x);
    kernel_y(y, k) = unnormalized_kernel_y(y, k) / kernel_sum_y(y);

    // Upsampling: resize in x first, then in y.
    resized_x(x, y, c) = sum(kernel_x(x, r) * as_float(r + beginx, y, c));
    resized_y(x, y, c) = sum(kernel_y(y, r) * resized_x(x, r + beginy, c));

    output(x, y, c) = clamp(resized_y(x, y, c), 0.0f, 1.0f);

    if (scheduled) {
        const int vec = Target::host().natural_vector_size<float>();
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
        // dense, the case of output.specialize(planar), which adds no directive.
    }
    return {output, {input}};
}

}  // namespace resize
}  // namespace suite

WEFT_SUITE_APP(resize)
