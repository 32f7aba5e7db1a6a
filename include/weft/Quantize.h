// Affine quantisation helpers: parameters calibrated from data, quantize / dequantize Funcs,
// requantisation of 32-bit accumulators (for int8 matmul and convolution pipelines).
#pragma once
#include <vector>
#include "weft/Func.h"

namespace weft {

/** real = scale * (q - zero_point), q an integer of `type` (UInt(8), Int(8), UInt(16) or
    Int(16)). Per tensor (axis = -1: one scale and zero point) or per channel (one of each per
    index of dimension `axis`, from that dimension's min). */
struct QuantParams {
    Type type = UInt(8);
    int axis = -1;
    int axis_min = 0;                 // the first index of dimension `axis` (per channel)
    std::vector<float> scale;         // > 0, finite
    std::vector<int32_t> zero_point;  // in type's range
    /** The scale and zero point of channel c (per tensor: the one pair). */
    float scale_of(int c = 0) const;
    int32_t zero_point_of(int c = 0) const;
};

/** How the range [lo, hi] to quantise is found from the data: its min and max, or the
    percentiles `percentile` and 100 - `percentile` of it (values beyond are clamped when
    quantised; outliers then cost less resolution). */
struct CalibrationOptions {
    int axis = -1;            // -1: per tensor; else per channel along that dimension
    bool symmetric = false;   // zero point 0 and range [-a, a] (signed types only)
    double percentile = 100;  // in (50, 100]; 100 is min / max
};

/** Parameters for quantising `data` to `type`: the range always holds 0 (so that 0 is exact),
    asymmetric scale = (hi - lo) / (qmax - qmin), zero point = round(qmin - lo / scale); symmetric
    scale = max(|lo|, |hi|) / qmax with qmax = 127 (or 32767) and zero point 0. A range of all
    zeros has scale 1. weft::Error for an empty buffer, NaN or infinite values, an axis out of
    range, another type, a percentile outside (50, 100], symmetric with an unsigned type. */
QuantParams calibrate(const Buffer<float> &data, Type type, const CalibrationOptions &options = {});

/** q(args) = saturating_cast(type, round(real(args) / scale) + zero_point), round half to even;
    real must be a float32 Func (per channel: with dimension `axis`). NaN quantises to the zero
    point, +-inf to the type's ends. */
Func quantize(const Func &real, const QuantParams &p);
/** real(args) = scale * (float(q(args)) - zero_point); q must be a Func of p.type. */
Func dequantize(const Func &q, const QuantParams &p);
/** A 32-bit accumulator brought to `type`: saturating_cast(type, round(float(acc) * multiplier)
    + zero_point), multiplier a float32 Expr (typically scale_in * scale_weights / scale_out),
    zero_point an int32 Expr. Exact for |acc * multiplier| below 2^24. */
Expr requantize(Expr acc, Expr multiplier, Expr zero_point, Type type);

}  // namespace weft
