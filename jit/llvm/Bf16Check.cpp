// The check of vdpbf16ps on the host (Bf16Check.h).
#include "llvm/Bf16Check.h"

#include "weft/Float16.h"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define WEFT_BF16_CHECK 1
#endif

namespace weft {
namespace internal {

#ifdef WEFT_BF16_CHECK
namespace {

float bf16_to_float(uint16_t h) { return (float)bfloat16_t::from_bits(h); }

uint32_t float_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

__attribute__((target("avx512f,avx512bw,avx512bf16"))) bool check_lanes() {
    uint32_t s = 0x2545F491u;
    auto next = [&] { return s = s * 1664525u + 1013904223u, s >> 8; };
    // Values 2^-12 .. 2^12 of both signs: products and sums stay normal, and the sums cancel and
    // round, so another order or a single rounding shows in the low bits.
    auto value = [&] {
        uint32_t r = next();
        uint32_t exponent = 127 - 12 + (r % 25), sign = (r >> 5) & 1, mantissa = (r >> 6) & 127;
        return (uint16_t)((sign << 15) | (exponent << 7) | mantissa);
    };
    for (int it = 0; it < 512; it++) {
        alignas(64) uint16_t a[32], b[32];
        alignas(64) float c[16], r[16];
        for (int i = 0; i < 32; i++) {
            a[i] = value();
            b[i] = value();
        }
        for (int i = 0; i < 16; i++) c[i] = bf16_to_float(value()) * bf16_to_float(value());
        __m512 out = _mm512_dpbf16_ps(_mm512_load_ps(c), (__m512bh)_mm512_load_si512(a), (__m512bh)_mm512_load_si512(b));
        _mm512_store_ps(r, out);
        for (int j = 0; j < 16; j++) {
            // Each product is exact in float; the adds round one at a time, the odd pair first.
            volatile float p_odd = bf16_to_float(a[2 * j + 1]) * bf16_to_float(b[2 * j + 1]);
            volatile float p_even = bf16_to_float(a[2 * j]) * bf16_to_float(b[2 * j]);
            volatile float t = c[j] + p_odd;
            volatile float want = t + p_even;
            if (float_bits(r[j]) != float_bits(want)) return false;
        }
    }
    return true;
}

}  // namespace
#endif

bool host_dpbf16ps_is_sequential() {
#ifdef WEFT_BF16_CHECK
    static const bool ok = [] {
        __builtin_cpu_init();
        if (!__builtin_cpu_supports("avx512bf16") || !__builtin_cpu_supports("avx512bw")) return false;
        return check_lanes();
    }();
    return ok;
#else
    return false;
#endif
}

}  // namespace internal
}  // namespace weft
