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

/** IEEE half precision (Float(16)). */
struct float16_t {
    uint16_t bits = 0;
    float16_t() = default;
    explicit float16_t(double d) : bits((uint16_t)internal::round_double_to_small_float(d, 5, 10)) {}
    explicit float16_t(float f) : float16_t((double)f) {}
    explicit float16_t(int v) : float16_t((double)v) {}
    static float16_t from_bits(uint16_t b) {
        float16_t r;
        r.bits = b;
        return r;
    }
    explicit operator float() const { return (float)internal::small_float_to_double(bits, 5, 10); }
    explicit operator double() const { return internal::small_float_to_double(bits, 5, 10); }
    float to_float() const { return (float)*this; }
    bool is_nan() const { return (bits & 0x7c00) == 0x7c00 && (bits & 0x3ff); }
    /** Equal as numbers (NaN is unequal to everything, -0 equals +0). */
    bool operator==(float16_t o) const { return (double)*this == (double)o; }
    bool operator!=(float16_t o) const { return !(*this == o); }
};

/** bfloat16 (BFloat(16)): float32's exponent range with 8 bits of precision. */
struct bfloat16_t {
    uint16_t bits = 0;
    bfloat16_t() = default;
    explicit bfloat16_t(double d) : bits((uint16_t)internal::round_double_to_small_float(d, 8, 7)) {}
    explicit bfloat16_t(float f) : bfloat16_t((double)f) {}
    explicit bfloat16_t(int v) : bfloat16_t((double)v) {}
    static bfloat16_t from_bits(uint16_t b) {
        bfloat16_t r;
        r.bits = b;
        return r;
    }
    explicit operator float() const {
        uint32_t u = (uint32_t)bits << 16;
        float f;
        std::memcpy(&f, &u, 4);
        return f;
    }
    explicit operator double() const { return (double)(float)*this; }
    float to_float() const { return (float)*this; }
    bool is_nan() const { return (bits & 0x7f80) == 0x7f80 && (bits & 0x7f); }
    bool operator==(bfloat16_t o) const { return (float)*this == (float)o; }
    bool operator!=(bfloat16_t o) const { return !(*this == o); }
};

}  // namespace weft
