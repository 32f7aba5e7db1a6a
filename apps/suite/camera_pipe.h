// camera_pipe (Halide's apps/camera_pipe): a raw-to-RGB camera pipeline on a uint16 Bayer
// image (GRBG: G at even x even y, R at odd x even y, B at even x odd y, G at odd/odd):
// hot-pixel suppression, deinterleaving into 4 half-resolution planes, edge-aware demosaic
// (FCam's), colour correction with a Q8.8 matrix interpolated between the Nokia N900's 3200 K
// and 7000 K matrices, a gamma/contrast tone-curve LUT and an unsharp mask, to uint8 RGB.
// The output's pixel (x, y) comes from raw pixel (x + 16, y + 12), as in Halide's app.
#pragma once
#include "suite.h"

namespace suite {
namespace camera_pipe {

// The app's defaults (Halide's process.cpp and the generator's estimates).
constexpr float kColorTemp = 3700.0f;
constexpr float kGamma = 2.0f;
constexpr float kContrast = 50.0f;
constexpr float kSharpen = 1.0f;
constexpr int kBlackLevel = 25;
constexpr int kWhiteLevel = 1023;

// Colour matrices of the Nokia N900's sensor (from FCam), rows = output channel, columns =
// r, g, b, offset. As buffers they are 4 wide and 3 high: m(j, i) = kMatrix[i][j].
constexpr float kMatrix3200[3][4] = {{1.6697f, -0.2693f, -0.4004f, -42.4346f},
                                     {-0.3576f, 1.0615f, 1.5949f, -37.1158f},
                                     {-0.2175f, -1.8751f, 6.9640f, -26.6970f}};
constexpr float kMatrix7000[3][4] = {{2.2997f, -0.4478f, 0.1706f, -39.0923f},
                                     {-0.3826f, 1.5906f, -0.2080f, -25.4311f},
                                     {-0.0888f, -0.7344f, 2.2832f, -20.0826f}};

/** The output's height for output width `size`: 3/4 of it, down to a multiple of 32 (the
    schedule's strip size). */
inline int out_height(int size) { return (size * 3 / 4) / 32 * 32; }

inline AppInfo info() {
    return {"camera_pipe",
            "raw uint16 Bayer (photo-like, hot pixels) -> denoise, demosaic, colour matrix (3700 K), "
            "gamma/contrast LUT, sharpen -> uint8 RGB",
            2560, 256, 0.0, 0.0,
            "output width, a multiple of 64 (output height = 3/4 width down to a multiple of 32, "
            "3 channels; raw input (width + 32) x (height + 48): 2592x1968 at 2560)"};
}

inline Problem make(int size) {
    const int W = size, H = out_height(size), IW = W + 32, IH = H + 48;
    Problem p;
    p.inputs.emplace_back(Elem::U16, std::vector<int>{IW, IH});
    Array &raw = p.inputs[0];
    for (int y = 0; y < IH; y++)
        for (int x = 0; x < IW; x++) {
            int ch = (x % 2 == 1 && y % 2 == 0) ? 0 : (x % 2 == 0 && y % 2 == 1) ? 2 : 1;  // R, G or B site
            double v = photo_value(3, x, y, ch, IW, IH);
            if (unit_value(11, (uint64_t)y * IW + x) < 0.002) v = 1.0;  // a hot pixel
            raw.at<uint16_t>(x, y) = (uint16_t)std::lround(kBlackLevel + (kWhiteLevel - kBlackLevel) * v);
        }
    p.inputs.emplace_back(Elem::F32, std::vector<int>{4, 3});
    p.inputs.emplace_back(Elem::F32, std::vector<int>{4, 3});
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) {
            p.inputs[1].at<float>(j, i) = kMatrix3200[i][j];
            p.inputs[2].at<float>(j, i) = kMatrix7000[i][j];
        }
    p.output = Array(Elem::U8, {W, H, 3});
    return p;
}

namespace detail {

inline int fdiv(int a, int b) { return (a - (((a % b) + b) % b)) / b; }  // floor division, b > 0
inline int fmod(int a, int b) { return ((a % b) + b) % b; }

/** A plane of ints over [x0, x0 + w) x [y0, y0 + h), bounds-checked. */
struct Plane {
    int x0 = 0, y0 = 0, w = 0, h = 0;
    std::vector<int> v;
    Plane(int x0_, int y0_, int x1, int y1) : x0(x0_), y0(y0_), w(x1 - x0_), h(y1 - y0_), v((size_t)w * h) {}
    int &operator()(int x, int y) {
        if (x < x0 || x >= x0 + w || y < y0 || y >= y0 + h) throw std::runtime_error("camera_pipe reference: out of range");
        return v[(size_t)(y - y0) * w + (x - x0)];
    }
};

inline int avg(int a, int b) { return (a + b + 1) / 2; }  // of nonnegative values
inline int absd(int a, int b) { return a > b ? a - b : b - a; }
inline int wrap_i16(int v) { return (int16_t)(uint16_t)(v & 0xffff); }  // uint16 arithmetic read as int16

}  // namespace detail

/** Plain C++, stage by stage over the regions each stage needs. */
inline void reference(const Problem &p, Array &out) {
    using namespace detail;
    const Array &raw = p.inputs[0];
    const int W = out.extents[0], H = out.extents[1], W2 = W / 2, H2 = H / 2;
    auto shifted = [&](int x, int y) { return (int)raw.at<uint16_t>(x + 16, y + 12); };

    // Hot-pixel suppression: clamp to the maximum of the 4 same-colour neighbours.
    Plane denoised(-8, -8, W + 8, H + 8);
    for (int y = -8; y < H + 8; y++)
        for (int x = -8; x < W + 8; x++) {
            int a = std::max(std::max(shifted(x - 2, y), shifted(x + 2, y)), std::max(shifted(x, y - 2), shifted(x, y + 2)));
            denoised(x, y) = std::min(std::max(shifted(x, y), 0), a);
        }

    // Deinterleave into g_gr, r_r, b_b, g_gb (half resolution).
    Plane g_gr(-4, -4, W2 + 4, H2 + 4), r_r = g_gr, b_b = g_gr, g_gb = g_gr;
    for (int y = -4; y < H2 + 4; y++)
        for (int x = -4; x < W2 + 4; x++) {
            g_gr(x, y) = denoised(2 * x, 2 * y);
            r_r(x, y) = denoised(2 * x + 1, 2 * y);
            b_b(x, y) = denoised(2 * x, 2 * y + 1);
            g_gb(x, y) = denoised(2 * x + 1, 2 * y + 1);
        }

    // Green at red and blue sites: interpolate in the direction of the smaller difference.
    Plane g_r(-3, -3, W2 + 3, H2 + 3), g_b = g_r;
    for (int y = -3; y < H2 + 3; y++)
        for (int x = -3; x < W2 + 3; x++) {
            int gv = avg(g_gb(x, y - 1), g_gb(x, y)), gvd = absd(g_gb(x, y - 1), g_gb(x, y));
            int gh = avg(g_gr(x + 1, y), g_gr(x, y)), ghd = absd(g_gr(x + 1, y), g_gr(x, y));
            g_r(x, y) = ghd < gvd ? gh : gv;
            gv = avg(g_gr(x, y + 1), g_gr(x, y)), gvd = absd(g_gr(x, y + 1), g_gr(x, y));
            gh = avg(g_gb(x - 1, y), g_gb(x, y)), ghd = absd(g_gb(x - 1, y), g_gb(x, y));
            g_b(x, y) = ghd < gvd ? gh : gv;
        }

    // Red and blue at green sites, and diagonally at blue and red sites, corrected by green's
    // second derivative. Values are uint16 in Halide (wrapping), read as int16 at the end.
    Plane r_gr(-2, -2, W2 + 2, H2 + 2), b_gr = r_gr, r_gb = r_gr, b_gb = r_gr, r_b = r_gr, b_r = r_gr;
    for (int y = -2; y < H2 + 2; y++)
        for (int x = -2; x < W2 + 2; x++) {
            r_gr(x, y) = g_gr(x, y) - avg(g_r(x, y), g_r(x - 1, y)) + avg(r_r(x - 1, y), r_r(x, y));
            b_gr(x, y) = g_gr(x, y) - avg(g_b(x, y), g_b(x, y - 1)) + avg(b_b(x, y), b_b(x, y - 1));
            r_gb(x, y) = g_gb(x, y) - avg(g_r(x, y), g_r(x, y + 1)) + avg(r_r(x, y), r_r(x, y + 1));
            b_gb(x, y) = g_gb(x, y) - avg(g_b(x, y), g_b(x + 1, y)) + avg(b_b(x, y), b_b(x + 1, y));

            int rp = g_b(x, y) - avg(g_r(x, y), g_r(x - 1, y + 1)) + avg(r_r(x, y), r_r(x - 1, y + 1));
            int rpd = absd(r_r(x, y), r_r(x - 1, y + 1));
            int rn = g_b(x, y) - avg(g_r(x - 1, y), g_r(x, y + 1)) + avg(r_r(x - 1, y), r_r(x, y + 1));
            int rnd = absd(r_r(x - 1, y), r_r(x, y + 1));
            r_b(x, y) = rpd < rnd ? rp : rn;

            int bp = g_r(x, y) - avg(g_b(x, y), g_b(x + 1, y - 1)) + avg(b_b(x, y), b_b(x + 1, y - 1));
            int bpd = absd(b_b(x, y), b_b(x + 1, y - 1));
            int bn = g_r(x, y) - avg(g_b(x + 1, y), g_b(x, y - 1)) + avg(b_b(x + 1, y), b_b(x, y - 1));
            int bnd = absd(b_b(x + 1, y), b_b(x, y - 1));
            b_r(x, y) = bpd < bnd ? bp : bn;
        }

    // The colour matrix in Q8.8, interpolated in inverse kelvin.
    float alpha = (1.0f / kColorTemp - 1.0f / 3200) / (1.0f / 7000 - 1.0f / 3200);
    int matrix[4][3];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) {
            float m32 = p.inputs[1].at<float>(j, i), m70 = p.inputs[2].at<float>(j, i);
            float a = m32 * alpha, b = m70 * (1.0f - alpha);
            float val = a + b;
            matrix[j][i] = (int16_t)(val * 256.0f);
        }

    // Tone curve LUT over [0, 1023].
    uint8_t curve[1024];
    {
        const int minRaw = kBlackLevel, maxRaw = kWhiteLevel;
        float invRange = 1.0f / (float)(maxRaw - minRaw);
        float b = 2.0f - std::pow(2.0f, kContrast / 100.0f);
        float a = 2.0f - 2.0f * b;
        for (int x = 0; x < 1024; x++) {
            float xf = std::min(std::max((float)(x - minRaw) * invRange, 0.0f), 1.0f);
            float g = std::pow(xf, 1.0f / kGamma);
            float z = g > 0.5f ? 1.0f - (a * (1.0f - g) * (1.0f - g) + b * (1.0f - g)) : a * g * g + b * g;
            uint8_t val = (uint8_t)std::min(std::max(z * 255.0f + 0.5f, 0.0f), 255.0f);
            curve[x] = x <= minRaw ? 0 : x > maxRaw ? 255 : val;
        }
    }

    // Demosaiced (interleaved back), colour-corrected and curved, over [-1, W] x [-1, H].
    Plane curved[3] = {Plane(-1, -1, W + 1, H + 1), Plane(-1, -1, W + 1, H + 1), Plane(-1, -1, W + 1, H + 1)};
    for (int y = -1; y <= H; y++)
        for (int x = -1; x <= W; x++) {
            int hx = fdiv(x, 2), hy = fdiv(y, 2), ex = fmod(x, 2) == 0, ey = fmod(y, 2) == 0;
            int r = ey ? (ex ? r_gr(hx, hy) : r_r(hx, hy)) : (ex ? r_b(hx, hy) : r_gb(hx, hy));
            int g = ey ? (ex ? g_gr(hx, hy) : g_r(hx, hy)) : (ex ? g_b(hx, hy) : g_gb(hx, hy));
            int b = ey ? (ex ? b_gr(hx, hy) : b_r(hx, hy)) : (ex ? b_b(hx, hy) : b_gb(hx, hy));
            int rgb[3] = {wrap_i16(r), wrap_i16(g), wrap_i16(b)};
            for (int c = 0; c < 3; c++) {
                int v = matrix[3][c] + matrix[0][c] * rgb[0] + matrix[1][c] * rgb[1] + matrix[2][c] * rgb[2];
                int corrected = (int16_t)fdiv(v, 256);
                curved[c](x, y) = curve[std::min(std::max(corrected, 0), 1023)];
            }
        }

    // Unsharp mask with strength 1.0 (32 in 2.5 fixed point).
    const int strength_x32 = (int)std::min(std::max(kSharpen * 32, 0.0f), 255.0f);
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                Plane &cv = curved[c];
                auto uy = [&](int xx) { return avg(avg(cv(xx, y - 1), cv(xx, y + 1)), cv(xx, y)); };
                int unsharp = avg(avg(uy(x - 1), uy(x + 1)), uy(x));
                int mask = cv(x, y) - unsharp;
                int s = cv(x, y) + fdiv(mask * strength_x32, 32);
                out.at<uint8_t>(x, y, c) = (uint8_t)std::min(std::max(s, 0), 255);
            }
}

}  // namespace camera_pipe
}  // namespace suite
