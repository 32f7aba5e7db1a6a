#include "ir/ModulusRemainder.h"
#include <algorithm>
#include <optional>
#include "ir/Constants.h"
#include "ir/IRVisitor.h"

namespace weft {
namespace internal {

namespace {
int64_t gcd64(int64_t a, int64_t b) {
    a = a < 0 ? -a : a;
    b = b < 0 ? -b : b;
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}
}  // namespace

ModRem mod_rem(int64_t m, int64_t r) {
    m = gcd64(m, kMaxModulus);
    if (m <= 0) m = 1;
    r %= m;
    if (r < 0) r += m;
    return {m, r};
}

ModRem unify(const ModRem &a, const ModRem &b) { return mod_rem(gcd64(gcd64(a.m, b.m), a.r - b.r), a.r); }

namespace {
// (Deeper than this, nothing is claimed: a bound on the recursion, whatever the expression.)
constexpr int kMaxDepth = 64;
ModRem known_(const Expr &e, std::map<std::string, ModRem> &lets, int depth);
}  // namespace

ModRem modulus_remainder(const Expr &e, std::map<std::string, ModRem> &lets) { return known_(e, lets, 0); }

namespace {
ModRem known_raw(const Expr &e, std::map<std::string, ModRem> &lets, int depth);
// A value of a narrow type wraps modulo 2^bits: only its remainder modulo that is known (what
// a widening cast of it passes on).
ModRem known_(const Expr &e, std::map<std::string, ModRem> &lets, int depth) {
    ModRem k = known_raw(e, lets, depth);
    int bits = e.defined() ? e.type().bits() : 64;
    return bits < 11 ? mod_rem(std::min<int64_t>(k.m, (int64_t)1 << bits), k.r) : k;
}
ModRem known_raw(const Expr &e, std::map<std::string, ModRem> &lets, int depth) {
    if (!e.defined() || !e.type().is_int_or_uint() || depth > kMaxDepth) return {};
    auto known = [&](const Expr &x) { return known_(x, lets, depth + 1); };
    int64_t c;
    if (is_const_int(e, &c)) return mod_rem(kMaxModulus, c);
    if (auto v = e.as<Variable>()) {
        auto it = lets.find(v->name);
        return it != lets.end() ? it->second : ModRem();
    }
    // (Moduli are powers of two up to 1024 and remainders below them: the products below stay
    // far from overflowing.)
    if (auto a = e.as<Add>()) {
        ModRem x = known(a->a), y = known(a->b);
        return mod_rem(gcd64(x.m, y.m), x.r + y.r);
    }
    if (auto a = e.as<Sub>()) {
        ModRem x = known(a->a), y = known(a->b);
        return mod_rem(gcd64(x.m, y.m), x.r - y.r);
    }
    if (auto a = e.as<Mul>()) {
        // (m1 i + r1)(m2 j + r2) = m1 m2 ij + m1 r2 i + m2 r1 j + r1 r2
        ModRem x = known(a->a), y = known(a->b);
        int64_t m = gcd64(gcd64(x.m * y.m, x.m * y.r), y.m * x.r);
        return mod_rem(m, x.r * y.r);
    }
    if (auto d = e.as<Div>()) {
        // (m i + r) / c = (m / c) i + r / c where c divides m and r (floor division).
        ModRem x = known(d->a);
        if (is_const_int(d->b, &c) && c > 0 && x.m % c == 0 && x.r % c == 0) return mod_rem(x.m / c, x.r / c);
        return {};
    }
    if (auto d = e.as<Mod>()) {
        ModRem x = known(d->a);
        if (is_const_int(d->b, &c) && c > 0 && x.m % c == 0) return mod_rem(c, x.r);
        return {};
    }
    if (auto a = e.as<Min>()) return unify(known(a->a), known(a->b));
    if (auto a = e.as<Max>()) return unify(known(a->a), known(a->b));
    if (auto a = e.as<Select>()) return unify(known(a->true_value), known(a->false_value));
    if (auto a = e.as<Cast>()) {
        // Widening keeps the value; anything else may wrap.
        Type from = a->value.type();
        if (from.is_int_or_uint() && a->type.bits() > from.bits()) return known(a->value);
        return {};
    }
    if (auto l = e.as<Let>()) {
        ModRem m = known(l->value);
        auto it = lets.find(l->name);
        std::optional<ModRem> saved = it != lets.end() ? std::optional<ModRem>(it->second) : std::nullopt;
        lets[l->name] = m;
        ModRem r = known(l->body);
        if (saved) lets[l->name] = *saved;
        else lets.erase(l->name);
        return r;
    }
    if (auto call = e.as<Call>())
        if (call->is_intrinsic("likely") || call->is_intrinsic("promise_clamped")) return known(call->args[0]);
    return {};
}
}  // namespace

}  // namespace internal
}  // namespace weft
