// iir_blur in weft: Halide's algorithm and its CPU schedule (apps/iir_blur), directive for
// directive. See iir_blur.h.
#include "iir_blur.h"

#include "weft_suite.h"

namespace suite {
namespace iir_blur {

namespace {
using namespace weft;

// Blurs the columns of input with the IIR filter (down, then up), then transposes.
Func blur_cols_transpose(Func input, Expr height, Expr alpha, bool scheduled, const Var &x, const Var &y,
                         const Var &c) {
    Func blur("blur");
    const int vec = Target::host().natural_vector_size<float>();

    // Pure definition: nothing.
    blur(x, y, c) = undef<float>();
    // Update 0: the top row is the input's.
    blur(x, 0, c) = input(x, 0, c);
    // Update 1: the filter down the columns.
    RDom ry(1, height - 1, "ry");
    blur(x, ry, c) = (1 - alpha) * blur(x, ry - 1, c) + alpha * input(x, ry, c);
    // Update 2: the filter up the columns.
    Expr flip_ry = height - ry - 1;
    blur(x, flip_ry, c) = (1 - alpha) * blur(x, flip_ry + 1, c) + alpha * blur(x, flip_ry, c);

    Func transpose("transpose");
    transpose(x, y, c) = blur(y, x, c);

    if (scheduled) {
        // Tiles of rows of the transpose; parallel over channels and strips.
        Var xo("xo"), yo("yo");
        transpose.compute_root().tile(x, y, xo, yo, x, y, vec, vec * 4).vectorize(x).parallel(yo).parallel(c);
        // The filter on each strip of columns of the input.
        blur.compute_at(transpose, yo);
        blur.update(1).reorder(x, ry).vectorize(x);
        blur.update(2).reorder(x, ry).vectorize(x);
    }
    return transpose;
}
}  // namespace

WeftDef build(int, bool scheduled) {
    ImageParam input(Float(32), 3, "input");
    const float alpha = kAlpha;
    Var x("x"), y("y"), c("c");
    Func in("in");  // the input as a Func (Halide converts an ImageParam implicitly)
    in(x, y, c) = input(x, y, c);

    // The columns, then the columns of the transpose (the rows of the original).
    Func blury_T = blur_cols_transpose(in, input.extent(1), alpha, scheduled, x, y, c);
    Func output = blur_cols_transpose(blury_T, input.extent(0), alpha, scheduled, x, y, c);
    return {output, {input}};
}

}  // namespace iir_blur
}  // namespace suite

WEFT_SUITE_APP(iir_blur)
