// The simplifier: constant folding, canonical linear forms, min/max and comparison rules.
#pragma once
#include "ir/IR.h"
#include "ir/Interval.h"

namespace weft {
namespace internal {

/** Returns an equivalent, usually smaller Expr. Integer expressions are put in a canonical
    linear form (sum of coefficient * term + constant) so that, e.g., (x + 8) - (x - 1)
    simplifies to 9 and min(x + 3, x) to x. Never changes the value (wrapping semantics of
    IR.h are respected: only rewrites that are exact for 32/64-bit Int are applied; UInt and
    narrow ints get constant folding only). */
Expr simplify(const Expr &e);
/** Same, with known ranges of variables (e.g. loop variables) to fold comparisons, min/max,
    div/mod. */
Expr simplify(const Expr &e, const Scope &bounds);
/** simplify(op(a, b)) for operands that are already simplified (each returned by simplify(),
    or a constant or a variable): only the rules for the new node run, a and b are not walked
    again (the interval arithmetic of bounds inference builds its bounds this way, node by
    node). op: Add, Sub, Mul, Div, Min or Max. */
Expr simplify_binary(IRNodeType op, const Expr &a, const Expr &b);
/** Simplifies every Expr in a statement; drops loops of extent 0 (or proven <= 0), branches
    whose condition is constant, lets that are unused; substitutes lets whose value is a
    constant or a variable; uses loop bounds (For min/extent) as known ranges for the loop
    variable while simplifying its body. */
Stmt simplify(const Stmt &s);
/** A constant upper (upper = true) or lower bound of a signed integer e from its structure
    alone (constants, min/max, select, + and -, * by a constant), whatever its variables are:
    min(max(v, 0), 7) + 1 is at most 8. False where there is none. */
bool structural_bound(const Expr &e, bool upper, int64_t *out);
/** True if e (a Bool) simplifies to constant true. */
bool can_prove(const Expr &e, const Scope &bounds = Scope());

}  // namespace internal
}  // namespace weft
