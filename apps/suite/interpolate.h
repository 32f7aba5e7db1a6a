// interpolate (Halide's apps/interpolate): fills the transparent parts of an RGBA float image
// from a 10-level pyramid. Colours are premultiplied by alpha, downsampled with a [1 2 1] / 4
// filter in x then y (edges repeated; the level 3 image is clamped where level 4 reads it),
// then upsampled back level by level, each level composited over the upsampled coarser one
// (interpolated = downsampled + (1 - alpha) * upsampled); the result is divided by its alpha.
// Output: 3 channels (RGB).
#pragma once
#include "suite.h"

namespace suite {
namespace interpolate {

constexpr int kLevels = 10;

inline AppInfo info() {
    return {"interpolate", "10-level pyramid interpolation of holes, float RGBA 4-channel input, RGB output",
            1536, 128, 1e-5, 1e-4, "image width (height = 5/3 width, 4 channels in, 3 out)"};
}

inline Problem make(int size) {
    const int W = size, H = size * 5 / 3;
    Problem p;
    p.inputs.emplace_back(Elem::F32, std::vector<int>{W, H, 4});
    Array &in = p.inputs[0];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            for (int c = 0; c < 3; c++) in.at<float>(x, y, c) = (float)photo_value(1, x, y, c, W, H);
            // A quarter of the pixels are (partly) opaque, alpha in [0.5, 1); the rest are holes.
            double u = unit_value(5, (uint64_t)y * W + x);
            in.at<float>(x, y, 3) = u < 0.25 ? (float)(0.5 + 2.0 * u) : 0.0f;
        }
    p.output = Array(Elem::F32, {W, H, 3});
    return p;
}

/** A 4-channel float plane over [x0, x1] x [y0, y1] (inclusive). */
struct Plane {
    int x0 = 0, x1 = -1, y0 = 0, y1 = -1;
    std::vector<float> v;
    void init(int ax0, int ax1, int ay0, int ay1) {
        x0 = ax0, x1 = ax1, y0 = ay0, y1 = ay1;
        v.assign((size_t)(x1 - x0 + 1) * (y1 - y0 + 1) * 4, 0.0f);
    }
    float &at(int x, int y, int c) {
        if (x < x0 || x > x1 || y < y0 || y > y1) throw std::runtime_error("interpolate reference: out of range");
        return v[(((size_t)(y - y0) * (x1 - x0 + 1)) + (x - x0)) * 4 + c];
    }
};

struct Range {
    int lo, hi;
};
inline Range hull(Range a, Range b) { return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)}; }

/** The pipeline evaluated level by level over the regions that the output needs. */
inline void reference(const Problem &p, Array &out) {
    const Array &in = p.inputs[0];
    const int W = in.extents[0], H = in.extents[1], L = kLevels;
    auto clamped = [&](int x, int y, int c) {
        return in.at<float>(std::min(std::max(x, 0), W - 1), std::min(std::max(y, 0), H - 1), c);
    };
    auto ds0 = [&](int x, int y, int c) { return c < 3 ? clamped(x, y, c) * clamped(x, y, 3) : clamped(x, y, 3); };

    // Regions: interpolated[l] over [0, e_l]; downsampled[l] also where level l + 1 reads it.
    std::vector<Range> ix(L), iy(L), nx(L), ny(L);
    ix[0] = {0, W - 1}, iy[0] = {0, H - 1};
    for (int l = 1; l < L; l++) ix[l] = {0, (ix[l - 1].hi + 1) / 2}, iy[l] = {0, (iy[l - 1].hi + 1) / 2};
    const int w3 = W / 8, h3 = H / 8;  // the clamp before level 4
    nx[L - 1] = ix[L - 1], ny[L - 1] = iy[L - 1];
    for (int l = L - 2; l >= 1; l--) {
        Range rx = {2 * nx[l + 1].lo - 1, 2 * nx[l + 1].hi + 1}, ry = {2 * ny[l + 1].lo - 1, 2 * ny[l + 1].hi + 1};
        if (l + 1 == 4) {
            rx = {std::min(std::max(rx.lo, 0), w3), std::min(std::max(rx.hi, 0), w3)};
            ry = {std::min(std::max(ry.lo, 0), h3), std::min(std::max(ry.hi, 0), h3)};
        }
        nx[l] = hull(ix[l], rx), ny[l] = hull(iy[l], ry);
    }

    std::vector<Plane> ds(L);
    for (int l = 1; l < L; l++) {
        auto prev = [&](int x, int y, int c) {
            if (l == 4) x = std::min(std::max(x, 0), w3), y = std::min(std::max(y, 0), h3);
            return l == 1 ? ds0(x, y, c) : ds[l - 1].at(x, y, c);
        };
        Plane dx;
        dx.init(nx[l].lo, nx[l].hi, 2 * ny[l].lo - 1, 2 * ny[l].hi + 1);
        for (int y = dx.y0; y <= dx.y1; y++)
            for (int x = dx.x0; x <= dx.x1; x++)
                for (int c = 0; c < 4; c++)
                    dx.at(x, y, c) = (prev(x * 2 - 1, y, c) + 2.0f * prev(x * 2, y, c) + prev(x * 2 + 1, y, c)) * 0.25f;
        ds[l].init(nx[l].lo, nx[l].hi, ny[l].lo, ny[l].hi);
        for (int y = ny[l].lo; y <= ny[l].hi; y++)
            for (int x = nx[l].lo; x <= nx[l].hi; x++)
                for (int c = 0; c < 4; c++)
                    ds[l].at(x, y, c) = (dx.at(x, y * 2 - 1, c) + 2.0f * dx.at(x, y * 2, c) + dx.at(x, y * 2 + 1, c)) * 0.25f;
    }

    std::vector<Plane> ip(L);
    ip[L - 1].init(ix[L - 1].lo, ix[L - 1].hi, iy[L - 1].lo, iy[L - 1].hi);
    for (int y = iy[L - 1].lo; y <= iy[L - 1].hi; y++)
        for (int x = ix[L - 1].lo; x <= ix[L - 1].hi; x++)
            for (int c = 0; c < 4; c++) ip[L - 1].at(x, y, c) = ds[L - 1].at(x, y, c);
    for (int l = L - 2; l >= 0; l--) {
        Plane &next = ip[l + 1];
        Plane upx;
        upx.init(ix[l].lo, ix[l].hi, next.y0, next.y1);
        for (int y = upx.y0; y <= upx.y1; y++)
            for (int x = upx.x0; x <= upx.x1; x++)
                for (int c = 0; c < 4; c++) upx.at(x, y, c) = (next.at(x / 2, y, c) + next.at((x + 1) / 2, y, c)) / 2.0f;
        ip[l].init(ix[l].lo, ix[l].hi, iy[l].lo, iy[l].hi);
        for (int y = iy[l].lo; y <= iy[l].hi; y++)
            for (int x = ix[l].lo; x <= ix[l].hi; x++) {
                float a = 1.0f - (l == 0 ? ds0(x, y, 3) : ds[l].at(x, y, 3));
                for (int c = 0; c < 4; c++) {
                    float up = (upx.at(x, y / 2, c) + upx.at(x, (y + 1) / 2, c)) / 2.0f;
                    float d = l == 0 ? ds0(x, y, c) : ds[l].at(x, y, c);
                    ip[l].at(x, y, c) = d + a * up;
                }
            }
        if (l + 1 < L) next.v.clear();
    }
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) out.at<float>(x, y, c) = ip[0].at(x, y, c) / ip[0].at(x, y, 3);
}

}  // namespace interpolate
}  // namespace suite
