// stencil_chain (Halide's apps/stencil_chain): 32 stages of a 5x5 stencil with weights
// (i + 3) * (j + 3), i, j in [-2, 2], on a uint16 image (edges repeated), all arithmetic in
// uint16 (wrapping).
#pragma once
#include "suite.h"

namespace suite {
namespace stencil_chain {

constexpr int kStencils = 32;  // the generator's default `stencils`

inline AppInfo info() {
    return {"stencil_chain", "32 chained 5x5 weighted stencils, uint16 image (wrapping arithmetic), edges repeated",
            1536, 384, 0.0, 0.0, "image width (height = 5/3 width)"};
}

inline Problem make(int size) {
    const int W = size, H = size * 5 / 3;
    Problem p;
    p.inputs.emplace_back(Elem::U16, std::vector<int>{W, H});
    fill_uniform(p.inputs[0], 1, 0.0, 65535.0);
    p.output = Array(Elem::U16, {W, H});
    return p;
}

/** Stage s (1..kStencils) over the output grown by 2 * (kStencils - s) on each side; stage 0
    is the input with coordinates clamped to the image. */
inline void reference(const Problem &p, Array &out) {
    const Array &in = p.inputs[0];
    const int W = in.extents[0], H = in.extents[1];
    const uint16_t *src = in.data<uint16_t>();
    int m = 2 * kStencils;  // margin of stage 0
    int pw = W + 2 * m, ph = H + 2 * m;
    std::vector<uint16_t> prev((size_t)pw * ph), next;
    for (int y = 0; y < ph; y++)
        for (int x = 0; x < pw; x++) {
            int xx = std::min(std::max(x - m, 0), W - 1), yy = std::min(std::max(y - m, 0), H - 1);
            prev[(size_t)y * pw + x] = src[(size_t)yy * W + xx];
        }
    for (int s = 1; s <= kStencils; s++) {
        int nm = m - 2, nw = W + 2 * nm, nh = H + 2 * nm;  // stage s's margin and size
        next.assign((size_t)nw * nh, 0);
        for (int y = 0; y < nh; y++)
            for (int x = 0; x < nw; x++) {
                uint16_t e = 0;
                for (int i = -2; i <= 2; i++)
                    for (int j = -2; j <= 2; j++)
                        e = (uint16_t)(e + (uint16_t)((i + 3) * (j + 3)) * prev[(size_t)(y + 2 + j) * pw + (x + 2 + i)]);
                next[(size_t)y * nw + x] = e;
            }
        prev.swap(next);
        m = nm, pw = nw, ph = nh;
    }
    uint16_t *o = out.data<uint16_t>();
    for (size_t i = 0; i < (size_t)W * H; i++) o[i] = prev[i];
}

}  // namespace stencil_chain
}  // namespace suite
