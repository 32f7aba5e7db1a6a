// nl_means in weft: Halide's algorithm and its CPU schedule (apps/nl_means, the schedule of
// Halide 14's time), directive for directive. See nl_means.h. Where weft lacks Halide's feature:
//   mux(c, {...}): nested selects;
//   non_local_means.dim(2).set_bounds(0, 3) on the output: bound(c, 0, 3);
//   an update (+=) as a Func's first definition: the pure definition = 0 written out.
#include "nl_means.h"

#include "weft_suite.h"

namespace suite {
namespace nl_means {

WeftDef build(int, bool scheduled) {
    using namespace weft;
    ImageParam input(Float(32), 3, "input");
    const int patch_size = kPatchSize, search_area = kSearchArea;
    Var x("x"), y("y"), c("c");

    Expr inv_sigma_sq = nl_means::inv_sigma_sq();

    // Add a boundary condition
    Func clamped = BoundaryConditions::repeat_edge(input);

    // Define the difference images
    Var dx("dx"), dy("dy");
    Func dc("dc");
    dc(x, y, dx, dy, c) = pow(clamped(x, y, c) - clamped(x + dx, y + dy, c), 2);

    // Sum across color channels
    RDom channels(0, 3);
    Func d("d");
    d(x, y, dx, dy) = sum(dc(x, y, dx, dy, channels));

    // Find the patch differences by blurring the difference images
    RDom patch_dom(-(patch_size / 2), patch_size);
    Func blur_d_y("blur_d_y");
    blur_d_y(x, y, dx, dy) = sum(d(x, y + patch_dom, dx, dy));

    Func blur_d("blur_d");
    blur_d(x, y, dx, dy) = sum(blur_d_y(x + patch_dom, y, dx, dy));

    // Compute the weights from the patch differences
    Func w("w");
    w(x, y, dx, dy) = fast_exp(blur_d(x, y, dx, dy) * inv_sigma_sq);

    // Add an alpha channel
    Func clamped_with_alpha("clamped_with_alpha");
    clamped_with_alpha(x, y, c) =
        select(c == 0, clamped(x, y, 0), select(c == 1, clamped(x, y, 1), select(c == 2, clamped(x, y, 2), 1.0f)));

    // Define a reduction domain for the search area
    RDom s_dom(-(search_area / 2), search_area, -(search_area / 2), search_area);

    // Compute the sum of the pixels in the search area
    Func non_local_means_sum("non_local_means_sum");
    non_local_means_sum(x, y, c) += w(x, y, s_dom.x, s_dom.y) * clamped_with_alpha(x + s_dom.x, y + s_dom.y, c);

    Func non_local_means("non_local_means");
    non_local_means(x, y, c) = clamp(non_local_means_sum(x, y, c) / non_local_means_sum(x, y, 3), 0.0f, 1.0f);

    // Require 3 channels for output (Halide: non_local_means.dim(2).set_bounds(0, 3))
    non_local_means.bound(c, 0, 3);

    if (scheduled) {
        Var tx("tx"), ty("ty");
        const int vec = Target::host().natural_vector_size<float>();
        non_local_means.compute_root().reorder(c, x, y).tile(x, y, tx, ty, x, y, 16, 8).parallel(ty).vectorize(x, vec);
        blur_d_y.compute_at(non_local_means, tx).reorder(y, x).vectorize(x, vec);
        d.compute_at(non_local_means, tx).vectorize(x, vec);
        non_local_means_sum.compute_at(non_local_means, x).reorder(c, x, y).bound(c, 0, 4).unroll(c).vectorize(x, vec);
        non_local_means_sum.update(0).reorder(c, x, y, s_dom.x, s_dom.y).unroll(c).vectorize(x, vec);
        blur_d.compute_at(non_local_means_sum, x).vectorize(x, vec);
    }
    return {non_local_means, {input}};
}

}  // namespace nl_means
}  // namespace suite

WEFT_SUITE_APP(nl_means)
