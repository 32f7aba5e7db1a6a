// nl_means (Halide's apps/nl_means): non-local means denoising of a float 3-channel image,
// edges repeated. Each output pixel is the average of the pixels of a 7×7 search area, each
// weighted by exp(-(sum of squared differences of the two 7×7 patches around them over the 3
// channels) / (sigma² · patch_size²)), sigma 0.12; the result is clamped to [0, 1].
#pragma once
#include "suite.h"

namespace suite {
namespace nl_means {

constexpr int kPatchSize = 7;
constexpr int kSearchArea = 7;
constexpr float kSigma = 0.12f;
// Halide: -1.0f / (sigma * sigma * patch_size * patch_size), in float
inline float inv_sigma_sq() { return -1.0f / (kSigma * kSigma * (float)kPatchSize * (float)kPatchSize); }

inline AppInfo info() {
    return {"nl_means", "non-local means, 7x7 patches over a 7x7 search area, sigma 0.12, float 3-channel photo-like image",
            1536, 256, 2e-5, 0.0, "image width (height = 5/3 width, 3 channels)", 128};
}

inline Problem make(int size) {
    const int W = size, H = size * 5 / 3;
    Problem p;
    p.inputs.emplace_back(Elem::F32, std::vector<int>{W, H, 3});
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) p.inputs[0].at<float>(x, y, c) = (float)photo_value(3, x, y, c, W, H);
    p.output = Array(Elem::F32, {W, H, 3});
    return p;
}

/** out(x, y, c) = clamp(sum_s w_s · in(x + s, c) / sum_s w_s, 0, 1) over the search offsets s,
    with w_s = exp(inv_sigma_sq · sum over the patch offsets p and channels k of
    (in(x + p, k) - in(x + p + s, k))²), coordinates clamped to the image. Computed per offset s:
    the difference image d, its vertical then horizontal box sums, in Halide's order. */
inline void reference(const Problem &p, Array &out) {
    const Array &in = p.inputs[0];
    const int W = in.extents[0], H = in.extents[1], P = kPatchSize / 2, S = kSearchArea / 2;
    const float k = inv_sigma_sq();
    const float *ip = in.data<float>();
    auto at = [&](int x, int y, int c) {  // repeat_edge
        return ip[((size_t)c * H + std::min(std::max(y, 0), H - 1)) * W + std::min(std::max(x, 0), W - 1)];
    };
    // d over [-P, W + P) × [-P, H + P), blur_d_y over [-P, W + P) × [0, H)
    const int dw = W + 2 * P, dh = H + 2 * P;
    std::vector<float> d((size_t)dw * dh), by((size_t)dw * H), acc((size_t)W * H * 4, 0.0f);
    for (int sy = -S; sy <= S; sy++)
        for (int sx = -S; sx <= S; sx++) {
            for (int y = -P; y < H + P; y++)
                for (int x = -P; x < W + P; x++) {
                    float s = 0;
                    for (int c = 0; c < 3; c++) {
                        float t = at(x, y, c) - at(x + sx, y + sy, c);
                        s += t * t;
                    }
                    d[(size_t)(y + P) * dw + (x + P)] = s;
                }
            for (int y = 0; y < H; y++)
                for (int x = -P; x < W + P; x++) {
                    float s = 0;
                    for (int r = -P; r <= P; r++) s += d[(size_t)(y + r + P) * dw + (x + P)];
                    by[(size_t)y * dw + (x + P)] = s;
                }
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++) {
                    float s = 0;
                    for (int r = -P; r <= P; r++) s += by[(size_t)y * dw + (x + r + P)];
                    float w = std::exp(s * k);
                    for (int c = 0; c < 4; c++)
                        acc[((size_t)y * W + x) * 4 + c] += w * (c < 3 ? at(x + sx, y + sy, c) : 1.0f);
                }
        }
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                const float *a = &acc[((size_t)y * W + x) * 4];
                out.at<float>(x, y, c) = std::min(std::max(a[c] / a[3], 0.0f), 1.0f);
            }
}

}  // namespace nl_means
}  // namespace suite
