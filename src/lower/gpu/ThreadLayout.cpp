#include "lower/gpu/ThreadLayout.h"

namespace weft {
namespace internal {
namespace gpu {

/** Where the offsets S (from a thread's first element) are exactly
    { sum of d_j * place_j : 0 <= d_j < count_j } with each place above every offset made of
    the lower ones: the digits (place, count). Empty otherwise (or when S is dense already). */
Digits offset_digits(const std::set<int64_t> &S) {
    if (S.empty()) return {};
    if ((int64_t)S.size() == *S.rbegin() + 1) return {};  // dense already
    Digits digits;
    std::set<int64_t> gen = {0};
    while (gen.size() < S.size()) {
        int64_t a = -1;
        for (int64_t e : S)
            if (!gen.count(e)) {
                a = e;
                break;
            }
        if (a <= *gen.rbegin()) return {};
        int64_t n = 1;
        for (bool all = true; all; ) {
            for (int64_t g : gen)
                if (!S.count(g + n * a)) all = false;
            if (all) n++;
        }
        if (n < 2) return {};  // a is not a place of every offset so far: no digit structure
        std::set<int64_t> next;
        for (int64_t m = 0; m < n; m++)
            for (int64_t g : gen) next.insert(g + m * a);
        gen.swap(next);
        digits.push_back({a, n});
    }
    if (gen != S) return {};
    return digits;
}

}  // namespace gpu
}  // namespace internal
}  // namespace weft
