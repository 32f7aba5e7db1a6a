// Affine quantisation helpers (weft/Quantize.h).
#include "weft/Quantize.h"

#include <algorithm>
#include <cmath>

#include "ir/IR.h"

namespace weft {
using internal::user_error;

namespace {

struct Range {
    int64_t qmin, qmax;
};

Range range_of(Type t, const char *who) {
    if (t == UInt(8)) return {0, 255};
    if (t == Int(8)) return {-128, 127};
    if (t == UInt(16)) return {0, 65535};
    if (t == Int(16)) return {-32768, 32767};
    user_error(std::string("weft: ") + who + ": quantised values are uint8, int8, uint16 or int16, not " + t.str());
}

/** The value at fraction q (in [0, 1]) of sorted order (nearest rank). */
float quantile(std::vector<float> &v, double q) {
    size_t k = (size_t)std::llround(q * (double)(v.size() - 1));
    std::nth_element(v.begin(), v.begin() + (long)k, v.end());
    return v[k];
}

void check_params(const QuantParams &p, const char *who) {
    Range r = range_of(p.type, who);
    if (p.scale.empty() || p.scale.size() != p.zero_point.size())
        user_error(std::string("weft: ") + who + ": QuantParams needs as many zero points as scales (at least one)");
    if (p.axis < 0 && p.scale.size() != 1)
        user_error(std::string("weft: ") + who + ": per-tensor QuantParams (axis -1) have one scale, not " +
                   std::to_string(p.scale.size()));
    for (size_t c = 0; c < p.scale.size(); c++) {
        if (!(p.scale[c] > 0) || !std::isfinite(p.scale[c]))
            user_error(std::string("weft: ") + who + ": scale " + std::to_string(c) + " is " + std::to_string(p.scale[c]) +
                       "; scales are positive and finite");
        if (p.zero_point[c] < r.qmin || p.zero_point[c] > r.qmax)
            user_error(std::string("weft: ") + who + ": zero point " + std::to_string(c) + " (" +
                       std::to_string(p.zero_point[c]) + ") is outside " + p.type.str() + "'s range");
    }
}

/** The scale and zero point of the point `args` as Exprs: constants per tensor, else read from
    buffers of one element per channel along the axis (a channel it does not have is the
    pipeline's clear error about reading past an input). */
std::pair<Expr, Expr> params_at(const QuantParams &p, const std::vector<Var> &args, const std::string &name) {
    if (p.axis < 0) return {Expr(p.scale[0]), Expr(p.zero_point[0])};
    if (p.axis >= (int)args.size())
        user_error("weft: " + name + ": per-channel axis " + std::to_string(p.axis) + ", but the Func has " +
                   std::to_string(args.size()) + " dimensions");
    const int n = (int)p.scale.size();
    Buffer<float> s(std::vector<int>{n}, name + "_scales");
    Buffer<int32_t> z(std::vector<int>{n}, name + "_zero_points");
    s.set_min(p.axis_min);
    z.set_min(p.axis_min);
    for (int c = 0; c < n; c++) {
        s(p.axis_min + c) = p.scale[(size_t)c];
        z(p.axis_min + c) = p.zero_point[(size_t)c];
    }
    Expr c = args[(size_t)p.axis];
    return {s(c), z(c)};
}

}  // namespace

float QuantParams::scale_of(int c) const {
    size_t i = axis < 0 ? 0 : (size_t)(c - axis_min);
    if (i >= scale.size()) user_error("weft: QuantParams::scale_of(" + std::to_string(c) + "): no such channel");
    return scale[i];
}
int32_t QuantParams::zero_point_of(int c) const {
    size_t i = axis < 0 ? 0 : (size_t)(c - axis_min);
    if (i >= zero_point.size()) user_error("weft: QuantParams::zero_point_of(" + std::to_string(c) + "): no such channel");
    return zero_point[i];
}

QuantParams calibrate(const Buffer<float> &data, Type type, const CalibrationOptions &o) {
    const char *who = "calibrate()";
    Range r = range_of(type, who);
    if (!data.defined()) user_error("weft: calibrate(): an undefined Buffer");
    const int dims = data.dimensions();
    if (o.axis < -1 || o.axis >= std::max(dims, 0) || (o.axis >= 0 && dims == 0))
        user_error("weft: calibrate(): axis " + std::to_string(o.axis) + " of a Buffer of " + std::to_string(dims) +
                   " dimensions (-1: per tensor)");
    if (!(o.percentile > 50 && o.percentile <= 100))
        user_error("weft: calibrate(): percentile " + std::to_string(o.percentile) + " is outside (50, 100]");
    if (o.symmetric && r.qmin == 0)
        user_error("weft: calibrate(): symmetric quantisation needs a signed type, not " + type.str());
    const int channels = o.axis < 0 ? 1 : data.dim(o.axis).extent();
    std::vector<std::vector<float>> values((size_t)std::max(channels, 0));
    int64_t count = 0;
    const float *base = data.data();
    data.for_each_element([&](const int *pos) {
        int64_t off = 0;
        for (int d = 0; d < dims; d++) off += (int64_t)(pos[d] - data.dim(d).min()) * data.dim(d).stride();
        float v = base[off];
        if (!std::isfinite(v))
            user_error("weft: calibrate(): the data holds " + std::string(std::isnan(v) ? "NaN" : "an infinite value") +
                       "; calibrate on finite values");
        values[o.axis < 0 ? 0 : (size_t)(pos[o.axis] - data.dim(o.axis).min())].push_back(v);
        count++;
    });
    if (count == 0) user_error("weft: calibrate(): the Buffer holds no elements");
    QuantParams p;
    p.type = type;
    p.axis = o.axis;
    p.axis_min = o.axis < 0 ? 0 : data.dim(o.axis).min();
    const double q = o.percentile / 100.0;
    for (auto &v : values) {
        float lo = quantile(v, 1.0 - q), hi = quantile(v, q);
        lo = std::min(lo, 0.0f);  // (0 is then exact)
        hi = std::max(hi, 0.0f);
        float scale;
        int32_t zp;
        if (o.symmetric) {
            float a = std::max(-lo, hi);
            scale = a > 0 ? a / (float)r.qmax : 1.0f;
            zp = 0;
        } else {
            scale = hi > lo ? (hi - lo) / (float)(r.qmax - r.qmin) : 1.0f;
            double z = std::nearbyint((double)r.qmin - (double)lo / scale);
            zp = (int32_t)std::min<double>(std::max<double>(z, (double)r.qmin), (double)r.qmax);
        }
        p.scale.push_back(scale);
        p.zero_point.push_back(zp);
    }
    return p;
}

Func quantize(const Func &real, const QuantParams &p) {
    check_params(p, "quantize()");
    if (!real.defined()) user_error("weft: quantize() of a Func with no definition");
    if (real.output_types() != std::vector<Type>{Float(32)})
        user_error("weft: quantize(): Func \"" + real.name() + "\" must have one float32 value");
    std::vector<Var> args = real.args();
    Func q(real.name() + "_quantized");
    auto [scale, zp] = params_at(p, args, q.name());
    std::vector<Expr> a(args.begin(), args.end());
    Expr v = Expr(real(a)) / scale;
    v = select(is_nan(v), 0.0f, v);
    q(args) = saturating_cast(p.type, round(v) + cast<float>(zp));
    return q;
}

Func dequantize(const Func &q, const QuantParams &p) {
    check_params(p, "dequantize()");
    if (!q.defined()) user_error("weft: dequantize() of a Func with no definition");
    if (q.output_types() != std::vector<Type>{p.type})
        user_error("weft: dequantize(): Func \"" + q.name() + "\" must have one value of " + p.type.str());
    std::vector<Var> args = q.args();
    Func r(q.name() + "_dequantized");
    auto [scale, zp] = params_at(p, args, r.name());
    std::vector<Expr> a(args.begin(), args.end());
    r(args) = scale * (cast<float>(q(a)) - cast<float>(zp));
    return r;
}

Expr requantize(Expr acc, Expr multiplier, Expr zero_point, Type type) {
    range_of(type, "requantize()");
    if (!acc.defined() || !multiplier.defined() || !zero_point.defined())
        user_error("weft: requantize() of an undefined Expr");
    if (acc.type().element_of() != Int(32))
        user_error("weft: requantize(): the accumulator is an int32, not " + acc.type().str());
    if (!multiplier.type().is_float()) user_error("weft: requantize(): the multiplier is a float, not " + multiplier.type().str());
    if (!zero_point.type().is_int_or_uint()) user_error("weft: requantize(): the zero point is an integer");
    Expr v = round(cast<float>(acc) * cast<float>(multiplier)) + cast<float>(zero_point);
    return saturating_cast(type, v);
}

}  // namespace weft
