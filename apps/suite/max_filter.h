// max_filter (Halide's apps/max_filter): the maximum over a disc of radius 26 around each
// pixel of a 3-channel float image, edges repeated. Vertical maxima over power-of-two heights
// are built as a log-stack (vert_log), two overlapping samples of it give any height (vert),
// then a horizontal maximum over the disc's columns.
#pragma once
#include "suite.h"

namespace suite {
namespace max_filter {

constexpr int kRadius = 26;

inline AppInfo info() {
    return {"max_filter", "maximum over a disc of radius 26, float 3-channel image, edges repeated",
            1536, 256, 0.0, 0.0, "image width (height = 5/3 width, 3 channels)", 64};
}

inline Problem make(int size) {
    const int W = size, H = size * 5 / 3;
    Problem p;
    p.inputs.emplace_back(Elem::F32, std::vector<int>{W, H, 3});
    fill_uniform(p.inputs[0], 1, 0.0, 1.0);
    p.output = Array(Elem::F32, {W, H, 3});
    return p;
}

/** The height of the disc's column dx: the number of dy in [0, radius] inside it. */
inline int filter_height(int dx) {
    int n = 0;
    for (int dy = 0; dy <= kRadius; dy++)
        if ((float)(dx * dx + dy * dy) < (kRadius + 0.25f) * (kRadius + 0.25f)) n++;
    return n;
}

/** out(x, y, c) = max over dx in [-R, R] and dy in [-h, h] of in(x + dx, y + dy, c), with
    h = min(filter_height(dx), R + 1) and coordinates clamped to the image. */
inline void reference(const Problem &p, Array &out) {
    const Array &in = p.inputs[0];
    const int W = in.extents[0], H = in.extents[1], C = in.extents[2], R = kRadius;
    std::vector<float> colmax((size_t)W);
    std::vector<int> h(2 * R + 1);
    for (int dx = -R; dx <= R; dx++) h[dx + R] = std::min(filter_height(dx), R + 1);
    for (int c = 0; c < C; c++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                float m = -INFINITY;
                for (int dx = -R; dx <= R; dx++) {
                    int xx = std::min(std::max(x + dx, 0), W - 1), t = h[dx + R];
                    for (int dy = -t; dy <= t; dy++) {
                        int yy = std::min(std::max(y + dy, 0), H - 1);
                        m = std::max(m, in.at<float>(xx, yy, c));
                    }
                }
                out.at<float>(x, y, c) = m;
            }
}

}  // namespace max_filter
}  // namespace suite
