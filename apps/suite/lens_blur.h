// lens_blur (Halide's apps/lens_blur): synthetic depth of field from a stereo pair. A cost
// volume over 32 disparities (slices) is blurred by an 8-level push-pull pyramid weighted by
// its confidence, the cheapest slice is the depth, and each output pixel averages 32 random
// samples of the left image within a bokeh whose radius grows with |depth - focus_depth|.
//
// Inputs: two uint8 3-channel images. The right one is a textured photo-like image; the left
// one is the right one warped by a known piecewise-constant disparity (background 0, a
// rectangle at 13, a disc at 24), so every pixel has an exact zero-cost slice and the cheapest
// slice wins by a wide margin: the depth map (an argmin over float values that each
// implementation rounds its own way) is then the same everywhere, and the output, exact sums
// of integers given the depth, too.
//
// Halide draws the sample positions with random_float(), whose values depend on a counter of
// the process (Halide's Random.cpp: the call's id and the Func's tag): not reproducible. Here
// they come from the same hash (Halide's rng32 chained over (seed, x, y, z)) with a fixed seed.
#pragma once
#include "suite.h"

namespace suite {
namespace lens_blur {

constexpr int kSlices = 32;            // the number of displacements to consider
constexpr int kFocusDepth = 13;        // the depth to focus on
constexpr float kBlurRadiusScale = 0.5f;  // the increase in blur radius with misfocus depth
constexpr int kApertureSamples = 32;   // the number of samples of the aperture to use
// cast<int>(max(slices - focus_depth, focus_depth) * blur_radius_scale)
constexpr int kMaxBlurRadius = (int)((kSlices - kFocusDepth > kFocusDepth ? kSlices - kFocusDepth : kFocusDepth) *
                                     kBlurRadiusScale);
constexpr int kSeedU = 0, kSeedV = 1;  // the random_float seeds of the two sample coordinates

inline AppInfo info() {
    return {"lens_blur",
            "stereo depth (32 slices, push-pull pyramid) then a 32-sample bokeh blur, uint8 3-channel pair",
            1536, 256, 1e-4, 1e-5, "image width (height = 5/3 width, 3 channels, two images)",
            0};  // unscheduled: not run (the 8-level pyramid inlined is exponential, in Halide too)
}

// Halide's rng32 (src/Random.cpp): a permutation polynomial modulo 2^32.
constexpr uint32_t kRngC0 = 576942909u, kRngC1 = 1121052041u, kRngC2 = 1040796640u;
inline uint32_t rng32(uint32_t x) { return (kRngC2 * x + kRngC1) * x + kRngC0; }

/** Halide's random_float over (seed, x, y, z): 23 random mantissa bits, a float in [0, 1). */
inline float random_float_at(int seed, int x, int y, int z) {
    uint32_t r = rng32((uint32_t)seed);
    r = rng32(r + (uint32_t)x);
    r = rng32(r + (uint32_t)y);
    r = rng32(r + (uint32_t)z);
    uint32_t bits = (127u << 23) | (r >> 9);
    float f;
    std::memcpy(&f, &bits, 4);
    return std::min(std::max(f - 1.0f, 0.0f), 1.0f);
}

/** The disparity of left pixel (x, y): the left image there shows the right one at x + 2·d. */
inline int disparity(int x, int y, int W, int H) {
    if (x >= W / 8 && x < W * 2 / 5 && y >= H / 8 && y < H / 2) return 13;
    long dx = x - W * 3 / 5, dy = y - H * 7 / 10, r = W / 6;
    if (dx * dx + dy * dy < r * r) return 24;
    return 0;
}

/** The scene: half a photo-like image, half uniform texture (random dots, so that matching is
    unambiguous: the estimated depth is right at 99.9% of the pixels). */
inline double scene(int x, int y, int c, int W, int H) {
    return 0.5 * photo_value(1, x, y, c, W, H) + 0.5 * unit_value(2, ((uint64_t)y * W + x) * 3 + c);
}

inline Problem make(int size) {
    const int W = size, H = size * 5 / 3;
    Problem p;
    p.inputs.emplace_back(Elem::U8, std::vector<int>{W, H, 3});  // left_im
    p.inputs.emplace_back(Elem::U8, std::vector<int>{W, H, 3});  // right_im
    auto u8 = [](double v) { return (uint8_t)std::lround(255.0 * v); };
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                int xs = std::min(x + 2 * disparity(x, y, W, H), W - 1);
                p.inputs[0].at<uint8_t>(x, y, c) = u8(scene(xs, y, c, W, H));
                p.inputs[1].at<uint8_t>(x, y, c) = u8(scene(x, y, c, W, H));
            }
    p.output = Array(Elem::F32, {W, H, 3});
    return p;
}

namespace detail {
inline int fdiv(int a, int b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
inline int fmod2(int a) { return a - 2 * fdiv(a, 2); }

/** A float plane over [x0, x0 + w) × [y0, y0 + h). */
struct Plane {
    int x0 = 0, y0 = 0, w = 0, h = 0;
    std::vector<float> v;
    Plane() = default;
    Plane(int x0_, int y0_, int w_, int h_) : x0(x0_), y0(y0_), w(w_), h(h_), v((size_t)w_ * h_) {}
    float &at(int x, int y) { return v[(size_t)(y - y0) * w + (x - x0)]; }
    float at(int x, int y) const { return v[(size_t)(y - y0) * w + (x - x0)]; }
    float clamped(int x, int y) const {  // repeat_edge over the plane
        return at(std::min(std::max(x, x0), x0 + w - 1), std::min(std::max(y, y0), y0 + h - 1));
    }
};

/** downsample with a 1 3 3 1 filter, read through get(x, y). */
template <typename F>
float down(const F &get, int x, int y) {
    auto dx = [&](int yy) {
        return (get(2 * x - 1, yy) + 3.0f * (get(2 * x, yy) + get(2 * x + 1, yy)) + get(2 * x + 2, yy)) / 8.0f;
    };
    return (dx(2 * y - 1) + 3.0f * (dx(2 * y) + dx(2 * y + 1)) + dx(2 * y + 2)) / 8.0f;
}

/** bilinear upsample of a plane (read inside its domain). */
inline float up(const Plane &f, int x, int y) {
    auto ux = [&](int yy) { return 0.25f * f.at(fdiv(x, 2) - 1 + 2 * fmod2(x), yy) + 0.75f * f.at(fdiv(x, 2), yy); };
    return 0.25f * ux(fdiv(y, 2) - 1 + 2 * fmod2(y)) + 0.75f * ux(fdiv(y, 2));
}

/** The push-pull pyramid of one channel: push0 over domain e (unclamped, as computed); the
    result is pull0 over e. */
inline Plane push_pull(const Plane &push0, int W, int H) {
    std::vector<Plane> push(8);
    int w = W, h = H;
    for (int i = 1; i < 8; i++) {
        w /= 2;
        h /= 2;
        push[i] = Plane(0, 0, w, h);
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                push[i].at(x, y) = i == 1 ? down([&](int a, int b) { return push0.at(a, b); }, x, y)
                                          : down([&](int a, int b) { return push[i - 1].clamped(a, b); }, x, y);
    }
    // The domains of the pull levels: what the upsample from level i reads of level i + 1.
    int lox[8], hix[8], loy[8], hiy[8];
    lox[0] = push0.x0, hix[0] = push0.x0 + push0.w - 1, loy[0] = push0.y0, hiy[0] = push0.y0 + push0.h - 1;
    for (int i = 1; i < 8; i++) {
        lox[i] = fdiv(lox[i - 1], 2) - 1, hix[i] = fdiv(hix[i - 1], 2) + 1;
        loy[i] = fdiv(loy[i - 1], 2) - 1, hiy[i] = fdiv(hiy[i - 1], 2) + 1;
    }
    Plane pull(lox[7], loy[7], hix[7] - lox[7] + 1, hiy[7] - loy[7] + 1);
    for (int y = loy[7]; y <= hiy[7]; y++)
        for (int x = lox[7]; x <= hix[7]; x++) pull.at(x, y) = push[7].clamped(x, y);
    for (int i = 6; i >= 0; i--) {
        Plane next(lox[i], loy[i], hix[i] - lox[i] + 1, hiy[i] - loy[i] + 1);
        for (int y = loy[i]; y <= hiy[i]; y++)
            for (int x = lox[i]; x <= hix[i]; x++) {
                float u = up(pull, x, y), p = i == 0 ? push0.at(x, y) : push[i].clamped(x, y);
                next.at(x, y) = u + (p - u) * 0.5f;  // lerp(u, p, 0.5f)
            }
        pull = std::move(next);
    }
    return pull;
}
}  // namespace detail

inline void reference(const Problem &p, Array &out) {
    using namespace detail;
    const Array &L = p.inputs[0], &R = p.inputs[1];
    const int W = L.extents[0], H = L.extents[1], M = kMaxBlurRadius;
    const uint8_t *lp = L.data<uint8_t>(), *rp = R.data<uint8_t>();
    auto at = [&](const uint8_t *im, int x, int y, int c) {  // repeat_edge
        return (int)im[((size_t)c * H + std::min(std::max(y, 0), H - 1)) * W + std::min(std::max(x, 0), W - 1)];
    };
    auto left = [&](int x, int y, int c) { return at(lp, x, y, c); };
    auto right = [&](int x, int y, int c) { return at(rp, x, y, c); };
    auto absd = [](int a, int b) { return a > b ? a - b : b - a; };
    auto cost = [&](int x, int y, int z) {
        float s[3];
        for (int c = 0; c < 3; c++) {
            int l = left(x, y, c);
            float d = (float)std::min(absd(l, right(x + 2 * z, y, c)), absd(l, right(x + 2 * z + 1, y, c)));
            s[c] = d * d;
        }
        return s[0] + s[1] + s[2];
    };
    // Everything below is over the domain e = [-M, W + M) × [-M, H + M): depth is read there.
    const int ex = -M, ey = -M, ew = W + 2 * M, eh = H + 2 * M;
    Plane conf(ex, ey, ew, eh);
    for (int y = ey; y < ey + eh; y++)
        for (int x = ex; x < ex + ew; x++) {
            float a = 0, b = 0;
            for (int r = 0; r < kSlices; r++) {
                float c = cost(x, y, r);
                a += c * c;
                b += c / (float)kSlices;
            }
            conf.at(x, y) = a / (float)kSlices - b * b;
        }
    Plane den = push_pull(conf, W, H);
    Plane best(ex, ey, ew, eh);
    std::vector<int> depth((size_t)ew * eh, 0);
    std::fill(best.v.begin(), best.v.end(), INFINITY);
    Plane push0(ex, ey, ew, eh);
    for (int z = 0; z < kSlices; z++) {
        for (int y = ey; y < ey + eh; y++)
            for (int x = ex; x < ex + ew; x++) push0.at(x, y) = cost(x, y, z) * conf.at(x, y);
        Plane num = push_pull(push0, W, H);
        for (size_t i = 0; i < num.v.size(); i++) {
            float fc = num.v[i] / den.v[i];
            if (fc < best.v[i]) best.v[i] = fc, depth[i] = z;  // argmin: the first minimum
        }
    }
    auto D = [&](int x, int y) { return depth[(size_t)(y - ey) * ew + (x - ex)]; };
    auto bokeh = [&](int x, int y) { return (float)std::abs(D(x, y) - kFocusDepth) * kBlurRadiusScale; };
    // worst-case bokeh radius: a max filter of radius M, vertical then horizontal
    Plane wy(ex, 0, ew, H), worst(0, 0, W, H);
    for (int y = 0; y < H; y++)
        for (int x = ex; x < ex + ew; x++) {
            float m = -INFINITY;
            for (int r = -M; r <= M; r++) m = std::max(m, bokeh(x, y + r));
            wy.at(x, y) = m;
        }
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            float m = -INFINITY;
            for (int r = -M; r <= M; r++) m = std::max(m, wy.at(x + r, y));
            worst.at(x, y) = m;
        }
    auto alpha_in = [&](int x, int y, int c) { return c < 3 ? (float)left(x, y, c) : 255.0f; };
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            float acc[4];
            for (int c = 0; c < 4; c++) acc[c] = alpha_in(x, y, c);
            float br2 = bokeh(x, y) * bokeh(x, y);
            for (int s = 0; s < kApertureSamples; s++) {
                float wr = worst.at(x, y);
                int su = (int)((random_float_at(kSeedU, x, y, s) - 0.5f) * 2 * wr);
                int sv = (int)((random_float_at(kSeedV, x, y, s) - 0.5f) * 2 * wr);
                su = std::min(std::max(su, -M), M);
                sv = std::min(std::max(sv, -M), M);
                int sx = x + su, sy = y + sv, r2 = su * su + sv * sv;
                float sb = bokeh(sx, sy);
                bool within = (float)r2 < br2, this_within = (float)r2 < sb * sb, front = D(sx, sy) < D(x, y);
                float wgt = ((within || front) && this_within) ? 1.0f : 0.0f;
                for (int c = 0; c < 4; c++) acc[c] += wgt * alpha_in(sx, sy, c);
            }
            for (int c = 0; c < 3; c++) out.at<float>(x, y, c) = acc[c] / acc[3];
        }
}

}  // namespace lens_blur
}  // namespace suite
