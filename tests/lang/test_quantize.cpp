// Quantisation helpers (weft/Quantize.h): calibration, quantize / dequantize, requantize, and
// int8 matmul and 3x3 convolution pipelines with the requantisation fused in: bit for bit against
// the same integer arithmetic in C++, and within the stated error of the float computation.
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <limits>

#include "lang/lang_test_util.h"

using namespace weft;
using weft_test::error_of;

namespace {

void expect_has(const std::string &m, const std::vector<std::string> &parts) {
    for (auto &p : parts) EXPECT_NE(m.find(p), std::string::npos) << "\"" << p << "\" not in: " << m;
}

float value(uint32_t i, uint32_t seed, float lo, float hi) {
    uint32_t s = i * 2654435761u + seed * 40503u;
    s ^= s >> 13;
    s *= 0x5bd1e995u;
    s ^= s >> 15;
    return lo + (hi - lo) * (float)(s & 0xffffff) / (float)0x1000000;
}

/** What requantize() computes, in C++: float32 product, round half to even, add, clamp. */
int32_t requantize_ref(int32_t acc, float multiplier, int32_t zp, int32_t qmin, int32_t qmax) {
    volatile float prod = (float)acc * multiplier;  // (one float32 rounding, as the pipeline)
    float v = std::nearbyint((float)prod) + (float)zp;
    return (int32_t)std::min<float>(std::max<float>(v, (float)qmin), (float)qmax);
}

TEST(Quantize, CalibrationPerTensorAndPerChannel) {
    Buffer<float> d(64, 3);
    for (int c = 0; c < 3; c++)
        for (int i = 0; i < 64; i++) d(i, c) = value(i + 64 * c, 1, -1.0f, 3.0f) * (float)(c + 1);
    d(0, 0) = -1.0f;
    d(1, 0) = 3.0f;
    QuantParams t = calibrate(d, UInt(8));
    float lo = 0, hi = 0;
    d.for_each_value([&](float v) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
    });
    ASSERT_EQ(t.scale.size(), 1u);
    EXPECT_FLOAT_EQ(t.scale[0], (hi - lo) / 255.0f);
    EXPECT_EQ(t.zero_point[0], (int)std::nearbyint(-lo / t.scale[0]));
    // Per channel, symmetric int8: max |v| / 127, zero point 0.
    CalibrationOptions o;
    o.axis = 1;
    o.symmetric = true;
    QuantParams pc = calibrate(d, Int(8), o);
    ASSERT_EQ(pc.scale.size(), 3u);
    for (int c = 0; c < 3; c++) {
        float a = 0;
        for (int i = 0; i < 64; i++) a = std::max(a, std::fabs(d(i, c)));
        EXPECT_FLOAT_EQ(pc.scale_of(c), a / 127.0f);
        EXPECT_EQ(pc.zero_point_of(c), 0);
    }
    // A percentile leaves outliers out of the range.
    Buffer<float> w(1000);
    for (int i = 0; i < 1000; i++) w(i) = value(i, 2, 0.0f, 1.0f);
    w(17) = 1000.0f;
    CalibrationOptions p99;
    p99.percentile = 99;
    EXPECT_LT(calibrate(w, UInt(8), p99).scale[0], 1.0f / 255.0f * 1.01f);
    EXPECT_GT(calibrate(w, UInt(8)).scale[0], 3.9f);
    // All zeros: scale 1.
    Buffer<float> z(5);
    z.fill(0.0f);
    EXPECT_EQ(calibrate(z, Int(8)).scale[0], 1.0f);
}

TEST(Quantize, QuantizeAndDequantizeRoundTrip) {
    Buffer<float> d(200, 4);
    for (int c = 0; c < 4; c++)
        for (int i = 0; i < 200; i++) d(i, c) = value(i + 200 * c, 3, -2.0f, 5.0f) * (1.0f + c);
    d(5, 0) = std::numeric_limits<float>::quiet_NaN();
    d(6, 0) = std::numeric_limits<float>::infinity();
    d(7, 0) = -std::numeric_limits<float>::infinity();
    d(8, 1) = 1e9f;  // beyond the range: clamped
    for (int per_channel = 0; per_channel < 2; per_channel++) {
        Buffer<float> clean = d.copy();
        for (int i = 5; i <= 8; i++) clean(i, i == 8 ? 1 : 0) = 0.0f;
        CalibrationOptions o;
        o.axis = per_channel ? 1 : -1;
        QuantParams p = calibrate(clean, UInt(8), o);
        Var x("x"), c("c");
        Func real("qt_real");
        real(x, c) = d(x, c);
        Func q = quantize(real, p);
        Func back = dequantize(q, p);
        q.compute_root().vectorize(x, 16);
        Buffer<uint8_t> qb = q.realize({200, 4});
        Buffer<float> bb = back.realize({200, 4});
        for (int cc = 0; cc < 4; cc++)
            for (int i = 0; i < 200; i++) {
                float s = p.scale_of(cc);
                int zp = p.zero_point_of(cc);
                float v = d(i, cc);
                if (std::isnan(v)) {
                    EXPECT_EQ(qb(i, cc), zp);
                    continue;
                }
                int want = (int)std::min(255.0, std::max(0.0, (double)std::nearbyint(v / s) + zp));
                if (std::isinf(v)) want = v > 0 ? 255 : 0;
                ASSERT_EQ((int)qb(i, cc), want) << i << "," << cc << " per channel " << per_channel;
                // Half a step inside the range; a step at its ends (the zero point is rounded).
                if (std::isfinite(v) && std::fabs(v) < 1e8f) ASSERT_LE(std::fabs(bb(i, cc) - v), s * 1.0001f) << i << "," << cc;
            }
    }
}

/** int8 matmul out(j, i) = sum_k A(k, i) W(j, k): A quantised per tensor to uint8, W per output
    channel (symmetric int8), the int32 accumulator corrected for A's zero point and requantised
    to uint8 in the same Func that reads it. */
TEST(Quantize, Int8MatmulWithRequantisationFused) {
    const int M = 9, N = 40, K = 96;
    Buffer<float> A(K, M), W(K, N);  // W(k, j): output channel j in dimension 1
    for (int i = 0; i < M; i++)
        for (int k = 0; k < K; k++) A(k, i) = value(k + K * i, 5, -0.5f, 2.0f);
    for (int j = 0; j < N; j++)
        for (int k = 0; k < K; k++) W(k, j) = value(k + K * j, 6, -1.0f, 1.0f) * (0.2f + 0.05f * (float)j);
    Buffer<float> ref(N, M);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++) s += (double)A(k, i) * W(k, j);
            ref(j, i) = (float)s;
        }
    QuantParams pa = calibrate(A, UInt(8));
    CalibrationOptions per_out;
    per_out.axis = 1;
    per_out.symmetric = true;
    QuantParams pw = calibrate(W, Int(8), per_out);
    QuantParams po = calibrate(ref, UInt(8));
    // The quantised operands (as an inference engine holds them).
    Var x("x"), y("y");
    Func fa("qm_a"), fw("qm_w");
    fa(x, y) = A(x, y);
    fw(x, y) = W(x, y);
    Buffer<uint8_t> Aq = quantize(fa, pa).realize({K, M});
    Buffer<int8_t> Wq = quantize(fw, pw).realize({K, N});
    // Per output channel: the multiplier and the column sums (for A's zero point).
    Buffer<float> mult(N);
    Buffer<int32_t> colsum(N);
    for (int j = 0; j < N; j++) {
        mult(j) = pa.scale[0] * pw.scale_of(j) / po.scale[0];
        int s = 0;
        for (int k = 0; k < K; k++) s += Wq(k, j);
        colsum(j) = s;
    }
    Var j("j"), i("i"), jo("jo"), ji("ji");
    RDom r(0, K, "r");
    RVar ro("ro"), ri("ri");
    Func acc("qm_acc"), out("qm_out");
    acc(j, i) = 0;
    acc(j, i) += cast<int>(Aq(r, i)) * cast<int>(Wq(r, j));
    out(j, i) = requantize(acc(j, i) - pa.zero_point[0] * colsum(j), mult(j), po.zero_point[0], UInt(8));
    out.split(j, jo, ji, 16).vectorize(ji);
    acc.compute_at(out, jo).vectorize(j, 16);
    acc.update().split(r, ro, ri, 4).reorder(j, ri, ro, i).vectorize(j, 16).unroll(ri);
    Buffer<uint8_t> got = out.realize({N, M});
    double worst = 0, total = 0;
    for (int ii = 0; ii < M; ii++)
        for (int jj = 0; jj < N; jj++) {
            int32_t a = 0;
            for (int k = 0; k < K; k++) a += (int32_t)Aq(k, ii) * (int32_t)Wq(k, jj);
            ASSERT_EQ((int)got(jj, ii), requantize_ref(a - pa.zero_point[0] * colsum(jj), mult(jj), po.zero_point[0], 0, 255))
                << jj << "," << ii;
            // Against the float matmul: each product's operands are off by half a step at most.
            float sa = pa.scale[0], sw = pw.scale_of(jj), so = po.scale[0];
            double amax = 0, wmax = 0;
            for (int k = 0; k < K; k++) {
                amax = std::max(amax, (double)std::fabs(A(k, ii)));
                wmax = std::max(wmax, (double)std::fabs(W(k, jj)));
            }
            double bound = 0.5 * so + K * (0.5 * sa * wmax + 0.5 * sw * amax + 0.25 * sa * sw) + 1e-5;
            double err = std::fabs(so * ((int)got(jj, ii) - po.zero_point[0]) - ref(jj, ii));
            ASSERT_LE(err, bound) << jj << "," << ii;
            worst = std::max(worst, err / so);
            total += err / so;
        }
    // Measured: well inside the bound; stated in docs/reference.md.
    std::printf("int8 matmul: mean error %.3f output steps, worst %.3f\n", total / (M * N), worst);
    EXPECT_LT(total / (M * N), 1.0) << "mean error in output steps";
    EXPECT_LT(worst, 3.0) << "worst error in output steps";
}

/** int8 3x3 convolution, NHWC-like (channel innermost), per-output-channel weights, requantised
    in the Func that reads the accumulator. */
TEST(Quantize, Int8ConvolutionWithRequantisationFused) {
    const int W = 12, H = 7, CI = 8, CO = 16;
    Buffer<float> in(CI, W + 2, H + 2), wt(CI, 3, 3, CO);  // wt(ci, dx, dy, co)
    in.for_each_element([&](int c, int x, int y) { in(c, x, y) = value(c + CI * (x + (W + 2) * y), 7, 0.0f, 1.5f); });
    wt.for_each_element([&](int c, int dx, int dy, int o) {
        wt(c, dx, dy, o) = value(c + CI * (dx + 3 * (dy + 3 * o)), 8, -0.6f, 0.6f);
    });
    Buffer<float> ref(CO, W, H);
    ref.for_each_element([&](int o, int x, int y) {
        double s = 0;
        for (int dy = 0; dy < 3; dy++)
            for (int dx = 0; dx < 3; dx++)
                for (int c = 0; c < CI; c++) s += (double)in(c, x + dx, y + dy) * wt(c, dx, dy, o);
        ref(o, x, y) = (float)std::max(0.0, s);  // ReLU, folded into the output range
    });
    QuantParams pi = calibrate(in, UInt(8));
    CalibrationOptions per_out;
    per_out.axis = 3;
    per_out.symmetric = true;
    QuantParams pw = calibrate(wt, Int(8), per_out);
    QuantParams po = calibrate(ref, UInt(8));
    Var c("c"), x("x"), y("y"), o("o"), dx("dx"), dy("dy");
    Func fi("qc_in"), fw("qc_w");
    fi(c, x, y) = in(c, x, y);
    fw(c, dx, dy, o) = wt(c, dx, dy, o);
    Buffer<uint8_t> inq = quantize(fi, pi).realize({CI, W + 2, H + 2});
    Buffer<int8_t> wq = quantize(fw, pw).realize({CI, 3, 3, CO});
    Buffer<float> mult(CO);
    Buffer<int32_t> wsum(CO);
    for (int q = 0; q < CO; q++) {
        mult(q) = pi.scale[0] * pw.scale_of(q) / po.scale[0];
        int s = 0;
        for (int dy_ = 0; dy_ < 3; dy_++)
            for (int dx_ = 0; dx_ < 3; dx_++)
                for (int cc = 0; cc < CI; cc++) s += wq(cc, dx_, dy_, q);
        wsum(q) = s;
    }
    RDom r(0, CI, 0, 3, 0, 3, "r");
    Func acc("qc_acc"), out("qc_out");
    acc(o, x, y) = 0;
    acc(o, x, y) += cast<int>(inq(r.x, x + r.y, y + r.z)) * cast<int>(wq(r.x, r.y, r.z, o));
    // ReLU is the clamp at the zero point (the output range starts at 0).
    out(o, x, y) = requantize(acc(o, x, y) - pi.zero_point[0] * wsum(o), mult(o), po.zero_point[0], UInt(8));
    out.vectorize(o, 16).parallel(y);
    acc.compute_at(out, x).vectorize(o, 16);
    RVar ro("ro"), ri("ri");
    acc.update().split(r.x, ro, ri, 4).reorder(o, ri, ro, r.y, r.z, x, y).vectorize(o, 16).unroll(ri);
    Buffer<uint8_t> got = out.realize({CO, W, H});
    double total = 0;
    got.for_each_element([&](int q, int xx, int yy) {
        int32_t a = 0;
        for (int dy_ = 0; dy_ < 3; dy_++)
            for (int dx_ = 0; dx_ < 3; dx_++)
                for (int cc = 0; cc < CI; cc++) a += (int32_t)inq(cc, xx + dx_, yy + dy_) * (int32_t)wq(cc, dx_, dy_, q);
        ASSERT_EQ((int)got(q, xx, yy), requantize_ref(a - pi.zero_point[0] * wsum(q), mult(q), po.zero_point[0], 0, 255));
        double so = po.scale[0], err = std::fabs(so * ((int)got(q, xx, yy) - po.zero_point[0]) - ref(q, xx, yy));
        double bound = 0.5 * so + 9 * CI * (0.5 * pi.scale[0] * 0.6 + 0.5 * pw.scale_of(q) * 1.5 + 0.25 * pi.scale[0] * pw.scale_of(q));
        ASSERT_LE(err, bound + 1e-5);
        total += err / so;
    });
    std::printf("int8 3x3 convolution: mean error %.3f output steps\n", total / (CO * W * H));
    EXPECT_LT(total / (CO * W * H), 1.0) << "mean error in output steps";
}

TEST(Quantize, BadInputsAreClearErrors) {
    Buffer<float> d(8);
    d.fill(1.0f);
    CalibrationOptions axis5;
    axis5.axis = 5;
    expect_has(error_of([&] { calibrate(d, UInt(8), axis5); }), {"axis 5"});
    CalibrationOptions pct;
    pct.percentile = 40;
    expect_has(error_of([&] { calibrate(d, UInt(8), pct); }), {"percentile"});
    CalibrationOptions sym;
    sym.symmetric = true;
    expect_has(error_of([&] { calibrate(d, UInt(8), sym); }), {"signed"});
    expect_has(error_of([&] { calibrate(d, Float(32)); }), {"uint8, int8"});
    Buffer<float> n = d.copy();
    n(3) = std::numeric_limits<float>::quiet_NaN();
    expect_has(error_of([&] { calibrate(n, UInt(8)); }), {"NaN"});
    n(3) = std::numeric_limits<float>::infinity();
    expect_has(error_of([&] { calibrate(n, UInt(8)); }), {"infinite"});
    Buffer<float> empty(std::vector<int>{0});
    expect_has(error_of([&] { calibrate(empty, UInt(8)); }), {"no elements"});
    Var x("x");
    Func f("qe_f"), i("qe_i");
    f(x) = cast<float>(x);
    i(x) = x;
    QuantParams p = calibrate(d, UInt(8));
    expect_has(error_of([&] { quantize(i, p); }), {"float32"});
    expect_has(error_of([&] { dequantize(f, p); }), {"uint8"});
    QuantParams bad = p;
    bad.scale[0] = 0;
    expect_has(error_of([&] { quantize(f, bad); }), {"positive and finite"});
    bad = p;
    bad.zero_point[0] = 300;
    expect_has(error_of([&] { quantize(f, bad); }), {"zero point", "range"});
    bad = p;
    bad.scale.push_back(1.0f);
    expect_has(error_of([&] { quantize(f, bad); }), {"as many zero points"});
    bad = p;
    bad.axis = 3;
    expect_has(error_of([&] { quantize(f, bad); }), {"axis 3"});
    expect_has(error_of([&] { requantize(Expr(1.0f), 0.5f, 0, UInt(8)); }), {"int32"});
    CalibrationOptions each;
    each.axis = 0;
    QuantParams pc = calibrate(d, UInt(8), each);
    EXPECT_EQ(pc.scale.size(), 8u);
    expect_has(error_of([&] { pc.scale_of(8); }), {"no such channel"});
    // Realized over channels it has no parameters for: the pipeline's error, nothing computed.
    Buffer<uint8_t> nine(9);
    nine.fill(7);
    expect_has(error_of([&] { quantize(f, pc).realize(nine); }), {"[0, 8]", "[0, 7]"});
    EXPECT_EQ(nine(0), 7);
}

}  // namespace
