// bilateral_grid (Halide's apps/bilateral_grid): an edge-preserving blur of a float gray image.
// Pixels are splatted into a coarse 3-D grid (s_sigma × s_sigma cells in space, 1/r_sigma
// levels of intensity) of (sum of values, count), the grid is blurred with a 5-tap [1 4 6 4 1]
// filter along z, x and y, then sliced with trilinear interpolation and normalized.
#pragma once
#include "suite.h"

namespace suite {
namespace bilateral_grid {

constexpr int kSSigma = 8;       // GeneratorParam s_sigma
constexpr float kRSigma = 0.1f;  // Input<float> r_sigma (its estimate)

inline AppInfo info() {
    return {"bilateral_grid",
            "bilateral grid, s_sigma 8, r_sigma 0.1, float gray image (photo-like), edges repeated",
            1536,
            128,
            1e-5,
            1e-4,
            "image width (height = 5/3 width, 1 channel)", 256};
}

inline Problem make(int size) {
    const int W = size, H = size * 5 / 3;
    Problem p;
    p.inputs.emplace_back(Elem::F32, std::vector<int>{W, H});
    Array &in = p.inputs[0];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) in.at<float>(x, y) = (float)photo_value(3, x, y, 0, W, H);
    p.output = Array(Elem::F32, {W, H});
    return p;
}

/** Halide's lerp for floats, written the same way on every side. */
inline float lerp_f(float a, float b, float w) { return a + (b - a) * w; }

inline void reference(const Problem &p, Array &out) {
    const Array &in = p.inputs[0];
    const int W = in.extents[0], H = in.extents[1], s = kSSigma;
    const float inv_r = 1.0f / kRSigma;
    auto pixel = [&](int x, int y) {
        return in.at<float>(std::min(std::max(x, 0), W - 1), std::min(std::max(y, 0), H - 1));
    };
    // The grid over cells gx in [-2, GW + 2), gy in [-2, GH + 2), z in [-2, NZ - 2), c in {0, 1}.
    const int GW = (W - 1) / s + 2, GH = (H - 1) / s + 2;
    const int NZ = (int)(inv_r + 0.5f) + 1 + 6;  // zi in [0, 1/r_sigma], plus zi + 1, plus 2 each side
    const int NX = GW + 4, NY = GH + 4;
    auto idx = [&](int gx, int gy, int z, int c) {
        return (((size_t)c * NZ + (z + 2)) * NY + (gy + 2)) * NX + (gx + 2);
    };
    std::vector<float> hist((size_t)2 * NZ * NY * NX, 0.0f), bz(hist.size(), 0.0f), bx(hist.size(), 0.0f),
        by(hist.size(), 0.0f);
    for (int gy = -2; gy < GH + 2; gy++)
        for (int gx = -2; gx < GW + 2; gx++)
            for (int ry = 0; ry < s; ry++)
                for (int rx = 0; rx < s; rx++) {
                    float v = pixel(gx * s + rx - s / 2, gy * s + ry - s / 2);
                    v = std::min(std::max(v, 0.0f), 1.0f);
                    int zi = (int)(v * inv_r + 0.5f);
                    hist[idx(gx, gy, zi, 0)] += v;
                    hist[idx(gx, gy, zi, 1)] += 1.0f;
                }
    auto h = [&](const std::vector<float> &g, int gx, int gy, int z, int c) {
        return z < -2 || z >= NZ - 2 ? 0.0f : g[idx(gx, gy, z, c)];
    };
    for (int c = 0; c < 2; c++)
        for (int z = 0; z < NZ - 4; z++) {
            for (int gy = -2; gy < GH + 2; gy++)
                for (int gx = -2; gx < GW + 2; gx++)
                    bz[idx(gx, gy, z, c)] = h(hist, gx, gy, z - 2, c) + h(hist, gx, gy, z - 1, c) * 4 +
                                            h(hist, gx, gy, z, c) * 6 + h(hist, gx, gy, z + 1, c) * 4 +
                                            h(hist, gx, gy, z + 2, c);
            for (int gy = -2; gy < GH + 2; gy++)
                for (int gx = 0; gx < GW; gx++)
                    bx[idx(gx, gy, z, c)] = bz[idx(gx - 2, gy, z, c)] + bz[idx(gx - 1, gy, z, c)] * 4 +
                                            bz[idx(gx, gy, z, c)] * 6 + bz[idx(gx + 1, gy, z, c)] * 4 +
                                            bz[idx(gx + 2, gy, z, c)];
            for (int gy = 0; gy < GH; gy++)
                for (int gx = 0; gx < GW; gx++)
                    by[idx(gx, gy, z, c)] = bx[idx(gx, gy - 2, z, c)] + bx[idx(gx, gy - 1, z, c)] * 4 +
                                            bx[idx(gx, gy, z, c)] * 6 + bx[idx(gx, gy + 1, z, c)] * 4 +
                                            bx[idx(gx, gy + 2, z, c)];
        }
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            float v = std::min(std::max(in.at<float>(x, y), 0.0f), 1.0f);
            float zv = v * inv_r;
            int zi = (int)zv;
            float zf = zv - (float)zi;
            float xf = (float)(x % s) / s, yf = (float)(y % s) / s;
            int xi = x / s, yi = y / s;
            float r[2];
            for (int c = 0; c < 2; c++) {
                auto b = [&](int dx, int dy, int dz) { return by[idx(xi + dx, yi + dy, zi + dz, c)]; };
                r[c] = lerp_f(lerp_f(lerp_f(b(0, 0, 0), b(1, 0, 0), xf), lerp_f(b(0, 1, 0), b(1, 1, 0), xf), yf),
                              lerp_f(lerp_f(b(0, 0, 1), b(1, 0, 1), xf), lerp_f(b(0, 1, 1), b(1, 1, 1), xf), yf), zf);
            }
            out.at<float>(x, y) = r[0] / r[1];
        }
}

}  // namespace bilateral_grid
}  // namespace suite
