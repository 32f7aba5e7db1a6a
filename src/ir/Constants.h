// Constants of the IR as 128-bit integers: reading them, making them, wrapping them to a
// type. Shared by the simplifier and the interval arithmetic (in their own namespaces, so that
// the short names stay local to those files).
#pragma once
#include "ir/IR.h"

namespace weft {
namespace internal {
namespace ir_constants {

using i128 = __int128;
using u128 = unsigned __int128;

/** v wrapped to a signed integer of `bits` bits. */
inline i128 swrap(int bits, i128 v) {
    u128 m = bits >= 64 ? (u128)UINT64_MAX : (((u128)1 << bits) - 1);
    u128 u = (u128)v & m;
    if ((u >> (bits - 1)) & 1) return (i128)u - ((i128)1 << bits);
    return (i128)u;
}
/** Smallest and largest values of integer (or bool) type t. */
inline i128 tmin(Type t) {
    if (t.is_int()) return -((i128)1 << (t.bits() - 1));
    return 0;
}
inline i128 tmax(Type t) {
    if (t.is_int()) return ((i128)1 << (t.bits() - 1)) - 1;
    if (t.is_bool()) return 1;
    return ((i128)1 << t.bits()) - 1;
}
/** v wrapped to t's width (two's complement; bool: v != 0). */
inline i128 wrapv(Type t, i128 v) {
    if (t.is_bool()) return v != 0;
    if (t.is_uint()) {
        u128 m = t.bits() >= 64 ? (u128)UINT64_MAX : (((u128)1 << t.bits()) - 1);
        return (i128)((u128)v & m);
    }
    return swrap(t.bits(), v);
}
inline bool representable(Type t, i128 v) { return v >= tmin(t) && v <= tmax(t); }

/** Is e an integer (or bool) constant, or a broadcast of one? Its value in *v. */
inline bool cint(const Expr &e, i128 *v = nullptr) {
    if (!e.defined()) return false;
    if (auto *p = e.as<IntImm>()) {
        if (v) *v = p->value;
        return true;
    }
    if (auto *p = e.as<UIntImm>()) {
        if (v) *v = (i128)p->value;
        return true;
    }
    if (auto *p = e.as<Broadcast>()) return cint(p->value, v);
    return false;
}
/** Is e a float constant, or a broadcast of one? */
inline bool cflt(const Expr &e, double *v = nullptr) {
    if (!e.defined()) return false;
    if (auto *p = e.as<FloatImm>()) {
        if (v) *v = p->value;
        return true;
    }
    if (auto *p = e.as<Broadcast>()) return cflt(p->value, v);
    return false;
}

/** The constant v of type t (wrapped to its width; a broadcast for a vector type). */
inline Expr mkc(Type t, i128 v) {
    Type s = t.element_of();
    Expr r;
    if (s.is_bool()) r = UIntImm::make(s, v != 0);
    else if (s.is_int()) r = IntImm::make(s, (int64_t)wrapv(s, v));
    else if (s.is_uint()) r = UIntImm::make(s, (uint64_t)wrapv(s, v));
    else if (s.is_float()) r = FloatImm::make(s, (double)v);
    else internal_error("a constant of type " + t.str(), __FILE__, __LINE__);
    return t.lanes() > 1 ? Broadcast::make(r, t.lanes()) : r;
}

}  // namespace ir_constants
}  // namespace internal
}  // namespace weft
