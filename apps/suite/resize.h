// resize (Halide's apps/resize, interpolation_type=cubic, upsample=true, float32): upsamples a
// 3-channel float image by 4 (the factor of Halide's upsampling tests) with a separable
// bicubic (a = -0.5) kernel, normalised per output pixel; resampled in x first, then in y
// (Halide's order when upsampling); taps clamped inside the image; result clamped to [0, 1].
#pragma once
#include "suite.h"

namespace suite {
namespace resize {

constexpr float kScale = 4.0f;  // Halide's scale_factor input, a constant here
constexpr bool kUpsample = true;
constexpr int kCubicTaps = 4;

inline AppInfo info() {
    return {"resize", "bicubic upsampling by 4, float 3-channel input (output 4x wider and taller)", 1536, 64,
            1e-5, 1e-5, "input width (height = 5/3 width, 3 channels; output 4x in each)", 256};
}

inline Problem make(int size) {
    const int W = size, H = size * 5 / 3;
    Problem p;
    p.inputs.emplace_back(Elem::F32, std::vector<int>{W, H, 3});
    Array &in = p.inputs[0];
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) in.at<float>(x, y, c) = (float)photo_value(2, x, y, c, W, H);
    p.output = Array(Elem::F32, {(int)(W * kScale), (int)(H * kScale), 3});
    return p;
}

/** Halide's kernel_cubic, operation for operation. */
inline float kernel_cubic(float x) {
    float xx = std::fabs(x), xx2 = xx * xx, xx3 = xx2 * xx;
    const float a = -0.5f;
    if (xx < 1.0f) return (a + 2.0f) * xx3 - (a + 3.0f) * xx2 + 1.0f;
    if (xx < 2.0f) return a * xx3 - 5 * a * xx2 + 8 * a * xx - 4.0f * a;
    return 0.0f;
}

/** The normalised kernel weights and first tap of each output coordinate along one axis. */
inline void kernel_weights(int out_n, int in_n, std::vector<int> &begin, std::vector<float> &w) {
    const float inverse_scale = 1.0f / kScale;
    const float kernel_scaling = kUpsample ? 1.0f : kScale;
    const float inverse_kernel_scaling = kUpsample ? 1.0f : inverse_scale;
    const float radius = 0.5f * kCubicTaps * inverse_kernel_scaling;
    const int taps = (int)std::ceil(kCubicTaps * inverse_kernel_scaling);
    begin.assign(out_n, 0);
    w.assign((size_t)out_n * taps, 0.0f);
    for (int x = 0; x < out_n; x++) {
        float source = ((float)x + 0.5f) * inverse_scale - 0.5f;
        int b = (int)std::ceil(source - radius);
        b = std::min(std::max(b, 0), in_n - taps);
        begin[x] = b;
        float s = 0.0f;
        for (int k = 0; k < taps; k++) s += kernel_cubic(((float)(k + b) - source) * kernel_scaling);
        for (int k = 0; k < taps; k++) w[(size_t)x * taps + k] = kernel_cubic(((float)(k + b) - source) * kernel_scaling) / s;
    }
}

/** resized_x over every input row, then resized_y, then the clamp. */
inline void reference(const Problem &p, Array &out) {
    const Array &in = p.inputs[0];
    const int W = in.extents[0], H = in.extents[1], C = in.extents[2];
    const int OW = out.extents[0], OH = out.extents[1], T = kCubicTaps;
    std::vector<int> bx, by;
    std::vector<float> kx, ky;
    kernel_weights(OW, W, bx, kx);
    kernel_weights(OH, H, by, ky);
    std::vector<float> rx((size_t)OW * H);
    for (int c = 0; c < C; c++) {
        const float *src = in.data<float>() + (size_t)c * W * H;
        for (int y = 0; y < H; y++)
            for (int x = 0; x < OW; x++) {
                float s = 0.0f;
                for (int r = 0; r < T; r++) s += kx[(size_t)x * T + r] * src[(size_t)y * W + r + bx[x]];
                rx[(size_t)y * OW + x] = s;
            }
        for (int y = 0; y < OH; y++)
            for (int x = 0; x < OW; x++) {
                float s = 0.0f;
                for (int r = 0; r < T; r++) s += ky[(size_t)y * T + r] * rx[(size_t)(r + by[y]) * OW + x];
                out.at<float>(x, y, c) = std::min(std::max(s, 0.0f), 1.0f);
            }
    }
}

}  // namespace resize
}  // namespace suite
