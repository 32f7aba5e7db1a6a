// lens_blur in Halide 14: apps/lens_blur's algorithm and CPU schedule. See apps/suite/lens_blur.h.
// Deviations from Halide's code: random_float() is replaced by random_float_at (Halide's hash
// with a fixed seed, reproducible); absd and lerp are local helpers written as in the weft file.
#include "lens_blur.h"

#include "halide_suite.h"

namespace suite {
namespace lens_blur {

namespace {
using namespace Halide;

Expr absd_(Expr a, Expr b) { return select(a > b, a - b, b - a); }
Expr lerp_(Expr a, Expr b, Expr w) { return a + (b - a) * w; }

// Halide's rng32 and random_float (src/Random.cpp) over (seed, x, y, z).
Expr rng32_(Expr x) { return (((int)kRngC2 * x) + (int)kRngC1) * x + (int)kRngC0; }
Expr random_float_at_(int seed, Expr x, Expr y, Expr z) {
    Expr r = rng32_(cast<uint32_t>(seed));
    r = rng32_(r + cast<uint32_t>(x));
    r = rng32_(r + cast<uint32_t>(y));
    r = rng32_(r + cast<uint32_t>(z));
    Expr bits = (127 << 23) | (r >> 9);
    return clamp(reinterpret(Float(32), bits) - 1.0f, 0.0f, 1.0f);
}
}  // namespace

HalideDef build(int, bool scheduled) {
    using namespace Halide;
    ImageParam left_im(UInt(8), 3, "left_im"), right_im(UInt(8), 3, "right_im");
    Var x("x"), y("y"), z("z"), c("c");
    const int slices = kSlices, focus_depth = kFocusDepth, aperture_samples = kApertureSamples;
    const float blur_radius_scale = kBlurRadiusScale;
    const int maximum_blur_radius = kMaxBlurRadius;

    // Downsample with a 1 3 3 1 filter
    auto downsample = [&](Func f) {
        using Halide::_;
        Func downx, downy;
        downx(x, y, _) = (f(2 * x - 1, y, _) + 3.0f * (f(2 * x, y, _) + f(2 * x + 1, y, _)) + f(2 * x + 2, y, _)) / 8.0f;
        downy(x, y, _) = (downx(x, 2 * y - 1, _) + 3.0f * (downx(x, 2 * y, _) + downx(x, 2 * y + 1, _)) + downx(x, 2 * y + 2, _)) / 8.0f;
        return downy;
    };
    // Upsample using bilinear interpolation
    auto upsample = [&](Func f) {
        using Halide::_;
        Func upx, upy;
        upx(x, y, _) = 0.25f * f((x / 2) - 1 + 2 * (x % 2), y, _) + 0.75f * f(x / 2, y, _);
        upy(x, y, _) = 0.25f * upx(x, (y / 2) - 1 + 2 * (y % 2), _) + 0.75f * upx(x, y / 2, _);
        return upy;
    };

    Func left = BoundaryConditions::repeat_edge(left_im);
    Func right = BoundaryConditions::repeat_edge(right_im);

    Func diff;
    diff(x, y, z, c) = min(absd_(left(x, y, c), right(x + 2 * z, y, c)), absd_(left(x, y, c), right(x + 2 * z + 1, y, c)));

    Func cost;
    cost(x, y, z) = (pow(cast<float>(diff(x, y, z, 0)), 2) + pow(cast<float>(diff(x, y, z, 1)), 2) +
                     pow(cast<float>(diff(x, y, z, 2)), 2));

    // Confidence of the cost estimate at each pixel: the variance across the stack.
    Func cost_confidence;
    {
        RDom r(0, slices);
        Expr a = sum(pow(cost(x, y, r), 2)) / slices;
        Expr b = pow(sum(cost(x, y, r) / slices), 2);
        cost_confidence(x, y) = a - b;
    }

    // Push-pull blur of the cost volume, weighted by the confidence.
    Func cost_pyramid_push[8];
    cost_pyramid_push[0](x, y, z, c) = select(c == 0, cost(x, y, z) * cost_confidence(x, y), cost_confidence(x, y));

    Expr w = left_im.dim(0).extent(), h = left_im.dim(1).extent();
    for (int i = 1; i < 8; i++) {
        cost_pyramid_push[i](x, y, z, c) = downsample(cost_pyramid_push[i - 1])(x, y, z, c);
        w /= 2;
        h /= 2;
        cost_pyramid_push[i] = BoundaryConditions::repeat_edge(cost_pyramid_push[i], {{0, w}, {0, h}});
    }

    Func cost_pyramid_pull[8];
    cost_pyramid_pull[7](x, y, z, c) = cost_pyramid_push[7](x, y, z, c);
    for (int i = 6; i >= 0; i--) {
        cost_pyramid_pull[i](x, y, z, c) =
            lerp_(upsample(cost_pyramid_pull[i + 1])(x, y, z, c), cost_pyramid_push[i](x, y, z, c), 0.5f);
    }

    Func filtered_cost;
    filtered_cost(x, y, z) = (cost_pyramid_pull[0](x, y, z, 0) / cost_pyramid_pull[0](x, y, z, 1));

    // Assume the minimum cost slice is the correct depth.
    Func depth;
    {
        RDom r(0, slices);
        depth(x, y) = argmin(filtered_cost(x, y, r))[0];
    }

    Func bokeh_radius;
    bokeh_radius(x, y) = abs(depth(x, y) - focus_depth) * blur_radius_scale;

    Func bokeh_radius_squared;
    bokeh_radius_squared(x, y) = pow(bokeh_radius(x, y), 2);

    // A max filter of the bokeh radius: the worst case to consider at each pixel.
    Func worst_case_bokeh_radius_y;
    Func worst_case_bokeh_radius;
    {
        RDom r(-maximum_blur_radius, 2 * maximum_blur_radius + 1);
        worst_case_bokeh_radius_y(x, y) = maximum(bokeh_radius(x, y + r));
        worst_case_bokeh_radius(x, y) = maximum(worst_case_bokeh_radius_y(x + r, y));
    }

    Func input_with_alpha;
    input_with_alpha(x, y, c) = select(c == 0, cast<float>(left(x, y, 0)), c == 1, cast<float>(left(x, y, 1)),
                                       c == 2, cast<float>(left(x, y, 2)), 255.0f);

    // Render a blurred image
    Func output;
    output(x, y, c) = input_with_alpha(x, y, c);

    // The sample locations: a random function of x, y and the sample number (not c).
    Expr worst_radius = worst_case_bokeh_radius(x, y);
    Expr sample_u = (random_float_at_(kSeedU, x, y, z) - 0.5f) * 2 * worst_radius;
    Expr sample_v = (random_float_at_(kSeedV, x, y, z) - 0.5f) * 2 * worst_radius;
    sample_u = clamp(cast<int>(sample_u), -maximum_blur_radius, maximum_blur_radius);
    sample_v = clamp(cast<int>(sample_v), -maximum_blur_radius, maximum_blur_radius);
    Func sample_locations;
    sample_locations(x, y, z) = {sample_u, sample_v};

    RDom s(0, aperture_samples);
    sample_u = sample_locations(x, y, z)[0];
    sample_v = sample_locations(x, y, z)[1];
    Expr sample_x = x + sample_u, sample_y = y + sample_v;
    Expr r_squared = sample_u * sample_u + sample_v * sample_v;

    // Whether a sample counts: a crude approximation of occlusion.
    Expr sample_is_within_bokeh_of_this_pixel = r_squared < bokeh_radius_squared(x, y);
    Expr this_pixel_is_within_bokeh_of_sample = r_squared < bokeh_radius_squared(sample_x, sample_y);
    Expr sample_is_in_front_of_this_pixel = depth(sample_x, sample_y) < depth(x, y);

    Func sample_weight;
    sample_weight(x, y, z) =
        select((sample_is_within_bokeh_of_this_pixel || sample_is_in_front_of_this_pixel) &&
                   this_pixel_is_within_bokeh_of_sample,
               1.0f, 0.0f);

    sample_x = x + sample_locations(x, y, s)[0];
    sample_y = y + sample_locations(x, y, s)[1];
    output(x, y, c) += sample_weight(x, y, s) * input_with_alpha(sample_x, sample_y, c);

    // Normalize
    Func final("final");
    final(x, y, c) = output(x, y, c) / output(x, y, 3);

    if (scheduled) {
        // Manual CPU schedule
        cost_pyramid_push[0].compute_root().reorder(c, z, x, y).bound(c, 0, 2).unroll(c).vectorize(x, 16).parallel(y, 4);
        cost.compute_at(cost_pyramid_push[0], x).vectorize(x);
        cost_confidence.compute_at(cost_pyramid_push[0], x).vectorize(x);

        Var xi, yi, t;
        for (int i = 1; i < 8; i++) {
            cost_pyramid_push[i].compute_at(cost_pyramid_pull[1], t).vectorize(x, 8);
            if (i > 1) {
                cost_pyramid_pull[i].compute_at(cost_pyramid_pull[1], t).tile(x, y, xi, yi, 8, 2).vectorize(xi).unroll(yi);
            }
        }

        cost_pyramid_pull[1].compute_root().fuse(z, c, t).parallel(t).tile(x, y, xi, yi, 8, 2).vectorize(xi).unroll(yi);
        depth.compute_root().tile(x, y, xi, yi, 8, 2).vectorize(xi).unroll(yi).parallel(y, 8);
        input_with_alpha.compute_root().reorder(c, x, y).unroll(c).vectorize(x, 8).parallel(y, 8);
        worst_case_bokeh_radius_y.compute_at(final, y).vectorize(x, 8);
        final.compute_root().reorder(c, x, y).bound(c, 0, 3).unroll(c).vectorize(x, 8).parallel(y);
        worst_case_bokeh_radius.compute_at(final, y).vectorize(x, 8);
        output.compute_at(final, x).vectorize(x);
        output.update().reorder(c, x, s).vectorize(x).unroll(c);
        sample_weight.compute_at(output, x).unroll(x);
        sample_locations.compute_at(output, x).vectorize(x);
    }
    return {final, {left_im, right_im}};
}

}  // namespace lens_blur
}  // namespace suite

HALIDE_SUITE_APP(lens_blur)
