// iir_blur (Halide's apps/iir_blur): a first-order IIR low-pass filter of a float 3-channel
// image, run down and then up each column, then (on the transpose) along each row both ways.
#pragma once
#include "suite.h"

namespace suite {
namespace iir_blur {

constexpr float kAlpha = 0.1f;  // Input<float> alpha (its estimate): the weight of the input

inline AppInfo info() {
    return {"iir_blur",
            "first-order IIR blur (alpha 0.1) down/up columns then rows, float 3-channel image",
            1536,
            128,
            1e-5,
            1e-4,
            "image width (height = 5/3 width, 3 channels)", 128};
}

inline Problem make(int size) {
    const int W = size, H = size * 5 / 3;
    Problem p;
    p.inputs.emplace_back(Elem::F32, std::vector<int>{W, H, 3});
    fill_uniform(p.inputs[0], 4, 0.0, 1.0);
    p.output = Array(Elem::F32, {W, H, 3});
    return p;
}

/** Filters n values v[0], v[s], ... in place: forward f[0] = v[0],
    f[i] = (1 - a) f[i-1] + a v[i], then backward b[n-1] = f[n-1], b[i] = (1 - a) b[i+1] + a f[i]. */
inline void iir_1d(float *v, int n, size_t s) {
    const float a = kAlpha;
    for (int i = 1; i < n; i++) v[i * s] = (1 - a) * v[(i - 1) * s] + a * v[i * s];
    for (int i = n - 2; i >= 0; i--) v[i * s] = (1 - a) * v[(i + 1) * s] + a * v[i * s];
}

inline void reference(const Problem &p, Array &out) {
    const Array &in = p.inputs[0];
    const int W = in.extents[0], H = in.extents[1], C = in.extents[2];
    float *o = out.data<float>();
    std::memcpy(o, in.data<float>(), in.count * sizeof(float));
    for (int c = 0; c < C; c++) {
        float *plane = o + (size_t)c * W * H;
        for (int x = 0; x < W; x++) iir_1d(plane + x, H, (size_t)W);      // columns
        for (int y = 0; y < H; y++) iir_1d(plane + (size_t)y * W, W, 1);  // then rows
    }
}

}  // namespace iir_blur
}  // namespace suite
