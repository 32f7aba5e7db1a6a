// max_filter in Halide 14: apps/max_filter's algorithm and CPU schedule. See apps/suite/max_filter.h.
#include "max_filter.h"

#include "halide_suite.h"

namespace suite {
namespace max_filter {

HalideDef build(int, bool scheduled) {
    using namespace Halide;
    ImageParam input_(Float(32), 3, "input");
    Var x("x"), y("y"), c("c"), t("t");
    Func input = BoundaryConditions::repeat_edge(input_);
    const int radius = kRadius;
    const int slices = (int)std::ceil(std::log((float)radius) / std::log(2.0f)) + 1;

    Func vert_log("vert_log");
    vert_log(x, y, c, t) = input(x, y, c);
    RDom r(-radius, input_.height() + radius, 1, slices - 1, "r");
    vert_log(x, r.x, c, r.y) =
        max(vert_log(x, r.x, c, r.y - 1), vert_log(x, r.x + clamp(1 << (r.y - 1), 0, radius * 2), c, r.y - 1));

    Func slice_for_radius("slice_for_radius");
    slice_for_radius(t) = cast<int>(floor(log(cast<float>(2 * t + 1)) / std::log(2.0f)));

    Func vert("vert");
    Expr slice = clamp(slice_for_radius(t), 0, slices);
    Expr first_sample = vert_log(x, y - t, c, slice);
    Expr second_sample = vert_log(x, y + t + 1 - clamp(1 << slice, 0, 2 * radius), c, slice);
    vert(x, y, c, t) = max(first_sample, second_sample);

    Func filter_height("filter_height");
    RDom dy(0, radius + 1, "dy");
    filter_height(x) = sum(select(cast<float>(x * x + dy * dy) < (radius + 0.25f) * (radius + 0.25f), 1, 0));

    Func output("output");
    RDom dx(-radius, 2 * radius + 1, "dx");
    output(x, y, c) = maximum(vert(x + dx, y, c, clamp(filter_height(dx), 0, radius + 1)));

    if (scheduled) {
        Var tx("tx");
        slice_for_radius.compute_root();
        filter_height.compute_root();
        output.compute_root().split(x, tx, x, 256).reorder(x, y, c, tx).fuse(c, tx, t).parallel(t).vectorize(x, 8);
        vert_log.compute_at(output, t);
        vert_log.vectorize(x, 8);
        vert_log.update().reorder(x, r.x, r.y, c).vectorize(x, 8);
        vert.compute_at(output, y).vectorize(x, 8);
    }
    return {output, {input_}};
}

}  // namespace max_filter
}  // namespace suite

HALIDE_SUITE_APP(max_filter)
