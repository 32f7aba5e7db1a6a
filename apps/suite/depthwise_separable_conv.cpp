// depthwise_separable_conv in weft: Halide's algorithm and its CPU schedule
// (apps/depthwise_separable_conv), directive for directive. See depthwise_separable_conv.h.
#include "depthwise_separable_conv.h"

#include "weft_suite.h"

namespace suite {
namespace depthwise_separable_conv {

WeftDef build(int, bool scheduled) {
    using namespace weft;
    ImageParam input(Float(32), 4, "input");                        // [in_channels, width, height, batch]
    ImageParam depthwise_filter(Float(32), 4, "depthwise_filter");  // [channel_multiplier, in_channels, fw, fh]
    ImageParam pointwise_filter(Float(32), 2, "pointwise_filter");  // [out_channels, cm * in_channels]
    ImageParam bias(Float(32), 1, "bias");                          // [out_channels]
    Var x("x"), y("y"), d("d"), b("b");

    // Pad x and y with 0.
    Func input_bounded("input_bounded");
    Expr in_bounds = (x >= 0 && x < input.extent(1) && y >= 0 && y < input.extent(2));
    Expr clamped_x = clamp(x, 0, input.min(1) + input.extent(1) - 1);
    Expr clamped_y = clamp(y, 0, input.min(2) + input.extent(2) - 1);
    input_bounded(d, x, y, b) = select(in_bounds, input(d, clamped_x, clamped_y, b), 0.0f);

    Expr channel_multiplier = depthwise_filter.extent(0);

    // Depthwise: channel_multiplier intermediate channels per input channel.
    Func depthwise_convolved("depthwise_convolved");
    Expr pad_width = depthwise_filter.extent(2) / 2;
    Expr pad_height = depthwise_filter.extent(3) / 2;
    RDom depthwise_filter_dom(0, depthwise_filter.extent(0), 0, depthwise_filter.extent(2), 0,
                              depthwise_filter.extent(3), "dom");
    RVar rd = depthwise_filter_dom[0];
    RVar rx = depthwise_filter_dom[1];
    RVar ry = depthwise_filter_dom[2];
    depthwise_convolved(d, x, y, b) +=
        depthwise_filter(rd, d, rx, ry) * input_bounded(d / channel_multiplier, x + rx - pad_width, y + ry - pad_height, b);

    // Pointwise: a reduction over the depthwise output's channels.
    Func pointwise_convolved("pointwise_convolved");
    RDom rc(0, pointwise_filter.extent(1), "rc");
    pointwise_convolved(d, x, y, b) = bias(d);
    pointwise_convolved(d, x, y, b) += pointwise_filter(d, rc) * depthwise_convolved(rc, x, y, b);

    // ReLU
    Func output("output");
    output(d, x, y, b) = max(pointwise_convolved(d, x, y, b), 0.f);

    if (scheduled) {
        // CPU schedule
        Target target = Target::host();
        int tile_w = 1, tile_h = 1, tile_d = 1;
        const int vec = target.natural_vector_size(Float(32));
        int num_regs = 16;
        if (target.has_feature("avx512f")) num_regs = 32;  // Halide: AVX512_Skylake or 64-bit ARM
        // A tile that fits into the register file.
        if (num_regs == 32 && vec == 16) {
            tile_d = 1, tile_w = 6, tile_h = 4;
        } else if (num_regs == 32 && vec == 4) {
            tile_d = 4, tile_w = 3, tile_h = 2;
        } else if (num_regs == 16 && vec == 8) {
            tile_d = 2, tile_w = 3, tile_h = 2;
        } else {
            tile_d = 4, tile_w = 2, tile_h = 1;
        }
        tile_d *= vec;  // vectors to elements

        // The depthwise conv is computed within slices of the pointwise conv's channel reduction.
        Var di("di"), xi("xi"), yi("yi");
        RVar ro("ro"), ri("ri");

        // Halide: output.tile({d, x, y}, {di, xi, yi}, {tile_d, tile_w, tile_h})
        output.split(d, d, di, tile_d)
            .split(x, x, xi, tile_w)
            .split(y, y, yi, tile_h)
            .reorder(di, xi, yi, d, x, y)
            .vectorize(di)
            .unroll(xi)
            .unroll(yi)
            .fuse(y, b, b)
            .parallel(b);

        pointwise_convolved.compute_at(output, d)
            .vectorize(d)
            .unroll(x)
            .unroll(y)
            .update()
            .reorder(d, x, y, rc, b)
            .vectorize(d)
            .unroll(x)
            .unroll(y)
            .split(rc, ro, ri, tile_d);

        depthwise_convolved.store_in(MemoryType::Stack)
            // MISSING in weft: bound_extent(d, tile_d)
            .compute_at(pointwise_convolved, ro)
            .vectorize(d)
            .reorder(x, y, d)
            .unroll(x)
            .unroll(y)
            .update()
            .vectorize(d)
            .reorder(x, y, d, rd, rx, ry, b)
            .unroll(x)
            .unroll(y);

        input_bounded.store_in(MemoryType::Stack)
            .compute_at(pointwise_convolved, ro)
            .tile(d, x, di, xi, vec, 4, TailStrategy::RoundUp)
            .vectorize(di)
            .unroll(xi);

        // Specialized for channel_multiplier = 1 (depthwise_filter dense across dimension 1),
        // a multiple-of-32 number of intermediate channels and a 3x3 filter.
        // MISSING in weft: depthwise_filter.dim(1).set_stride(channel_multiplier)
        Expr intermediate_channels = pointwise_filter.extent(1);
        output.specialize(channel_multiplier == 1 && intermediate_channels == (intermediate_channels / 32) * 32 &&
                          depthwise_filter.extent(2) == 3 && depthwise_filter.extent(3) == 3);
    }
    return {output, {input, depthwise_filter, pointwise_filter, bias}};
}

}  // namespace depthwise_separable_conv
}  // namespace suite

WEFT_SUITE_APP(depthwise_separable_conv)
