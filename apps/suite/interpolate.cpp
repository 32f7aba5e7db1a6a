// interpolate in weft: Halide's algorithm and its CPU schedule (apps/interpolate), directive for
// directive. See interpolate.h.
#include "interpolate.h"

#include "weft_suite.h"

namespace suite {
namespace interpolate {

static std::vector<weft::Func> func_vector(const std::string &name, int n) {
    std::vector<weft::Func> v;
    for (int i = 0; i < n; i++) v.emplace_back(name + "_" + std::to_string(i));
    return v;
}

WeftDef build(int, bool scheduled) {
    using namespace weft;
    const int levels = kLevels;
    ImageParam input(Float(32), 3, "input");
    Var x("x"), y("y"), c("c");

    // Input must have four colour channels: RGBA.
    // MISSING in weft: input.dim(2).set_bounds(0, 4)

    auto downsampled = func_vector("downsampled", levels);
    auto downx = func_vector("downx", levels);
    auto interpolated = func_vector("interpolated", levels);
    auto upsampled = func_vector("upsampled", levels);
    auto upsampledx = func_vector("upsampledx", levels);

    Func clamped = BoundaryConditions::repeat_edge(input);

    downsampled[0](x, y, c) = select(c < 3, clamped(x, y, c) * clamped(x, y, 3), clamped(x, y, 3));

    for (int l = 1; l < levels; ++l) {
        Func prev = downsampled[l - 1];
        if (l == 4) {
            // A boundary condition at a middle level keeps the footprint near the image.
            Expr w = input.extent(0) / (1 << (l - 1));
            Expr h = input.extent(1) / (1 << (l - 1));
            Func clamped_prev("clamped_prev");
            clamped_prev(x, y, c) = prev(clamp(x, 0, w), clamp(y, 0, h), c);
            prev = clamped_prev;
        }
        downx[l](x, y, c) = (prev(x * 2 - 1, y, c) + 2.0f * prev(x * 2, y, c) + prev(x * 2 + 1, y, c)) * 0.25f;
        downsampled[l](x, y, c) =
            (downx[l](x, y * 2 - 1, c) + 2.0f * downx[l](x, y * 2, c) + downx[l](x, y * 2 + 1, c)) * 0.25f;
    }
    interpolated[levels - 1](x, y, c) = downsampled[levels - 1](x, y, c);
    for (int l = levels - 2; l >= 0; --l) {
        upsampledx[l](x, y, c) = (interpolated[l + 1](x / 2, y, c) + interpolated[l + 1]((x + 1) / 2, y, c)) / 2.0f;
        upsampled[l](x, y, c) = (upsampledx[l](x, y / 2, c) + upsampledx[l](x, (y + 1) / 2, c)) / 2.0f;
        Expr alpha = 1.0f - downsampled[l](x, y, 3);
        interpolated[l](x, y, c) = downsampled[l](x, y, c) + alpha * upsampled[l](x, y, c);
    }

    Func normalize("normalize");
    normalize(x, y, c) = interpolated[0](x, y, c) / interpolated[0](x, y, 3);

    if (scheduled) {
        Var xo("xo"), xi("xi"), yo("yo"), yi("yi");
        const int vec = Target::host().natural_vector_size<float>();
        for (int l = 1; l < levels - 1; ++l) {
            downsampled[l]
                .compute_root()
                // MISSING in weft: never_partition(x)
                .reorder(x, c, y)
                .split(y, yo, yi, 8)
                .parallel(yo)
                .vectorize(x, vec);
        }
        // MISSING in weft: clone_in(downx[1]); in(downx[1]) is the same thing here, since
        // downsampled[0] itself stays inline (the wrapper is a clone that downx[1] reads).
        downsampled[0]
            .in(downx[1])
            .store_at(downsampled[1], yo)
            .compute_at(downsampled[1], yi)
            .reorder(c, x, y)
            .unroll(c)
            .vectorize(x, vec);
        // MISSING in weft: never_partition(y)
        normalize.bound(x, 0, input.extent(0))
            .bound(y, 0, input.extent(1))
            .bound(c, 0, 3)
            // MISSING in weft: never_partition(y)
            .split(x, xo, xi, vec)
            .split(y, yo, yi, 32)
            .reorder(xi, c, xo, yi, yo)
            .unroll(c)
            .vectorize(xi)
            .parallel(yo);
        for (int l = 1; l < levels; l++) {
            interpolated[l].store_at(normalize, yo).compute_at(normalize, yi).vectorize(x, vec);
            // MISSING in weft: never_partition_all()
        }
    }
    return {normalize, {input}};
}

}  // namespace interpolate
}  // namespace suite

WEFT_SUITE_APP(interpolate)
