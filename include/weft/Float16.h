// 16-bit floating-point element types for Buffers and Params: weft::float16_t (IEEE 754 binary16:
// 1 sign, 5 exponent, 10 mantissa bits) and weft::bfloat16_t (the top half of a float32: 1 sign,
// 8 exponent, 7 mantissa bits). Conversions from float and double round to nearest even,
// keep subnormals, infinities and the sign of zero, and give a quiet NaN for a NaN; a value
// past the largest finite one rounds to infinity. Conversions to float are exact.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace weft {

namespace internal {
/** d rounded to nearest even to a binary float of `mant` mantissa bits and `exp_bits` exponent
    bits, as its bit pattern (sign at bit mant + exp_bits). One rounding, straight from double. */
inline uint32_t round_double_to_small_float(double d, int exp_bits, int mant) {
    uint64_t b;
    std::memcpy(&b, &d, 8);
    const uint32_t sign = (uint32_t)(b >> 63) << (exp_bits + mant);
    const uint32_t exp_all = (1u << exp_bits) - 1;
    const int bias = (1 << (exp_bits - 1)) - 1;
    if (std::isnan(d)) return sign | (exp_all << mant) | (1u << (mant - 1));  // quiet NaN
    double a = std::fabs(d);
    if (std::isinf(a)) return sign | (exp_all << mant);
    if (a == 0) return sign;
    int e;
    (void)std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1): the unbiased exponent is e - 1
    int unbiased = e - 1;
    // The value's ulp at the target: 2^(unbiased - mant) for normals, 2^(1 - bias - mant) below.
    int ulp_exp = (unbiased < 1 - bias ? 1 - bias : unbiased) - mant;
    double q = std::ldexp(a, -ulp_exp);  // exact: a scaled by a power of two (q < 2^(mant+1))
    double lo = std::floor(q), diff = q - lo;  // exact
    double r = diff > 0.5 ? lo + 1 : diff < 0.5 ? lo : (std::fmod(lo, 2.0) == 0 ? lo : lo + 1);
    // r * 2^ulp_exp; the bits are the integer r with the exponent field added (a carry into the
    // exponent, or from subnormal to normal, is the right result of adding).
    uint64_t bits;
    if (unbiased < 1 - bias) {
        bits = (uint64_t)r;  // subnormal (or the smallest normal after a carry)
    } else {
        uint64_t ri = (uint64_t)r;  // in [2^mant, 2^(mant+1)]
        bits = ((uint64_t)(unbiased + bias) << mant) + (ri - (1ull << mant));
    }
    if (bits >= ((uint64_t)exp_all << mant)) bits = (uint64_t)exp_all << mant;  // overflow: infinity
    return sign | (uint32_t)bits;
}
/** The value of a small float's bit pattern, exactly. */
inline double small_float_to_double(uint32_t bits, int exp_bits, int mant) {
    const uint32_t exp_all = (1u << exp_bits) - 1;
    const int bias = (1 << (exp_bits - 1)) - 1;
    bool neg = (bits >> (exp_bits + mant)) & 1;
    uint32_t ex = (bits >> mant) & exp_all, m = bits & ((1u << mant) - 1);
    double v;
    if (ex == exp_all) v = m ? std::nan("") : INFINITY;
    else if (ex == 0) v = std::ldexp((double)m, 1 - bias - mant);
    else v = std::ldexp((double)(m | (1u << mant)), (int)ex - bias - mant);
    return neg ? -v : v;
}
}  // namespace internal

namespace internal {
/** A binary float of E exponent and M mantissa bits in 16 bits: what float16_t and bfloat16_t share. */
template <typename Self, int E, int M>
struct SmallFloat {
    uint16_t bits = 0;
    SmallFloat() = default;
    explicit SmallFloat(double d) : bits((uint16_t)round_double_to_small_float(d, E, M)) {}
    explicit SmallFloat(float f) : SmallFloat((double)f) {}
    explicit SmallFloat(int v) : SmallFloat((double)v) {}
    static Self from_bits(uint16_t b) {
        Self r;
        r.bits = b;
        return r;
    }
    explicit operator double() const { return small_float_to_double(bits, E, M); }
    explicit operator float() const { return (float)small_float_to_double(bits, E, M); }
    float to_float() const { return (float)*this; }
    bool is_nan() const {
        const uint16_t exp_mask = (uint16_t)(((1u << E) - 1) << M);
        return (bits & exp_mask) == exp_mask && (bits & ((1u << M) - 1));
    }
    /** Equal as numbers (NaN is unequal to everything, -0 equals +0). */
    bool operator==(const Self &o) const { return (double)*this == (double)o; }
    bool operator!=(const Self &o) const { return !(*this == o); }
};
}  // namespace internal

/** IEEE half precision (Float(16)). */
struct float16_t : internal::SmallFloat<float16_t, 5, 10> {
    using SmallFloat::SmallFloat;
};

/** bfloat16 (BFloat(16)): float32's exponent range with 8 bits of precision. */
struct bfloat16_t : internal::SmallFloat<bfloat16_t, 8, 7> {
    using SmallFloat::SmallFloat;
};

}  // namespace weft
