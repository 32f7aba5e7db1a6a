// depthwise_separable_conv (Halide's apps/depthwise_separable_conv): a 3x3 depthwise convolution
// (channel multiplier 1, zero padding) followed by a 1x1 pointwise convolution, bias and ReLU,
// float, channels innermost: the second layer of MobileNet v2 (N = 4, CI = 32, CO = 16).
#pragma once
#include "suite.h"

namespace suite {
namespace depthwise_separable_conv {

constexpr int kN = 4, kCI = 32, kCO = 16, kCM = 1, kFW = 3, kFH = 3;

inline AppInfo info() {
    return {"depthwise_separable_conv",
            "3x3 depthwise conv (zero padded) then 1x1 pointwise conv, bias, ReLU; float, N=4, CI=32, CO=16",
            112, 20, 1e-4, 1e-5,
            "image width = height (input [32, size, size, 4], output [16, size, size, 4], channels innermost)", 112};
}

/** Inputs: input [CI, W, H, N], depthwise_filter [CM, CI, FW, FH], pointwise_filter [CO, CI*CM],
    bias [CO]; output [CO, W, H, N]. */
inline Problem make(int size) {
    const int W = size, H = size;
    Problem p;
    p.inputs.emplace_back(Elem::F32, std::vector<int>{kCI, W, H, kN});
    p.inputs.emplace_back(Elem::F32, std::vector<int>{kCM, kCI, kFW, kFH});
    p.inputs.emplace_back(Elem::F32, std::vector<int>{kCO, kCI * kCM});
    p.inputs.emplace_back(Elem::F32, std::vector<int>{kCO});
    for (int i = 0; i < 4; i++) fill_uniform(p.inputs[i], i + 1, -1.0, 1.0);
    p.output = Array(Elem::F32, {kCO, W, H, kN});
    return p;
}

/** dw(d, x, y, b) = sum over ry, rx, rd (rd innermost) of
        depthwise_filter(rd, d, rx, ry) * input(d / CM, x + rx - FW/2, y + ry - FH/2, b)
    (input 0 outside the image), d in [0, CI*CM) (as Halide's app writes it; with CM = 1);
    out(d, x, y, b) = max(bias(d) + sum over rc of pointwise_filter(d, rc) * dw(rc, x, y, b), 0). */
inline void reference(const Problem &p, Array &out) {
    const Array &in = p.inputs[0], &dwf = p.inputs[1], &pwf = p.inputs[2], &bias = p.inputs[3];
    const int CI = in.extents[0], W = in.extents[1], H = in.extents[2], N = in.extents[3];
    const int CM = dwf.extents[0], FW = dwf.extents[2], FH = dwf.extents[3];
    const int CO = pwf.extents[0], IC = pwf.extents[1];
    std::vector<float> dw((size_t)IC);
    for (int b = 0; b < N; b++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                for (int d = 0; d < IC; d++) {
                    float acc = 0.0f;
                    for (int ry = 0; ry < FH; ry++)
                        for (int rx = 0; rx < FW; rx++)
                            for (int rd = 0; rd < CM; rd++) {
                                int xx = x + rx - FW / 2, yy = y + ry - FH / 2;
                                float v = (xx >= 0 && xx < W && yy >= 0 && yy < H) ? in.at<float>(d / CM, xx, yy, b) : 0.0f;
                                acc += dwf.at<float>(rd, d, rx, ry) * v;
                            }
                    dw[d] = acc;
                }
                (void)CI;
                for (int d = 0; d < CO; d++) {
                    float acc = bias.at<float>(d);
                    for (int rc = 0; rc < IC; rc++) acc += pwf.at<float>(d, rc) * dw[rc];
                    out.at<float>(d, x, y, b) = std::max(acc, 0.0f);
                }
            }
}

}  // namespace depthwise_separable_conv
}  // namespace suite
