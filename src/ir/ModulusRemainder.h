// What is known of an integer's value modulo a power of two (Halide's modulus-remainder
// analysis, kept to powers of two up to 1024): the alignment of vector accesses (AlignLoads) and
// the parity of coordinates (the simplifier folds `x % 2` where x's remainder is known through
// the mins, selects and lets of a tiled loop's clamped start).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include "ir/IR.h"

namespace weft {
namespace internal {

/** value = r modulo m, m a power of two up to kMaxModulus (m = 1: nothing is known). */
struct ModRem {
    int64_t m = 1, r = 0;
};
constexpr int64_t kMaxModulus = 1024;

/** (m, r) normalised: m a power of two dividing kMaxModulus (1 where m is 0 or negative... or
    shares no factor of two with it), r in [0, m). */
ModRem mod_rem(int64_t m, int64_t r);
/** What is known of a value that is one or the other. */
ModRem unify(const ModRem &a, const ModRem &b);
/** What is known of integer e: constants, + - *, division and remainder by constants, min, max,
    select, widening casts, likely / promise_clamped, Lets inside e; a variable is looked up in
    `lets` (not there: nothing known). Lets inside e are bound in `lets` while their bodies are
    looked at, then put back. */
ModRem modulus_remainder(const Expr &e, std::map<std::string, ModRem> &lets);

}  // namespace internal
}  // namespace weft
