// Whether this CPU's vdpbf16ps (AVX-512 BF16) computes what weft's code generation assumes of it.
#pragma once

namespace weft {
namespace internal {

/** True where the host has AVX-512 BF16 and its vdpbf16ps, on a fixed set of operands of normal
    magnitudes (no subnormals, no products beyond float's range), gives for each lane the float
    sum acc + p_odd + p_even rounded to nearest even after each add: Intel's definition of the
    instruction, measured on AMD Zen 5. Checked once per process (a few thousand lanes, well under
    a millisecond). Code generation uses the instruction only where this holds, so a CPU that
    computes the dot product otherwise (one rounding, another order) gets the written sums. */
bool host_dpbf16ps_is_sequential();

}  // namespace internal
}  // namespace weft
