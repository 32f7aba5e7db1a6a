// Interval arithmetic over symbolic Exprs: the basis of bounds inference.
#pragma once
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include "ir/IR.h"

namespace weft {
namespace internal {

/** A closed range [min, max] of Exprs; an undefined bound means unbounded on that side. */
struct Interval {
    Expr min, max;
    Interval() = default;
    Interval(Expr mi, Expr ma) : min(std::move(mi)), max(std::move(ma)) {}
    static Interval single_point(const Expr &e) { return Interval(e, e); }
    static Interval everything() { return Interval(); }
    bool is_bounded() const { return min.defined() && max.defined(); }
    bool has_lower_bound() const { return min.defined(); }
    bool has_upper_bound() const { return max.defined(); }
    bool is_single_point() const;  // min and max are the same node, or equal
};

/** Known ranges of variables by name. */
using Scope = std::map<std::string, Interval>;

/** While one is alive on a thread, bounds inference on that thread remembers, across queries,
    the simplified form of each scope end it simplifies (by node, the node held): a lowering asks
    about the same loops' ranges many times. Nests; forgotten when it ends. */
class RememberScopeEnds {
public:
    RememberScopeEnds();
    ~RememberScopeEnds();
    RememberScopeEnds(const RememberScopeEnds &) = delete;
    RememberScopeEnds &operator=(const RememberScopeEnds &) = delete;

    /** The simplified form of an end, remembered (computed at the first asking). */
    const Expr &simplified(const Expr &end);

private:
    RememberScopeEnds *outer_;
    std::unordered_map<const ExprNode *, std::pair<Expr, Expr>> memo_;  // node -> (node, simplified)
};

/** The range of e's value when each variable named in `scope` ranges over its interval
    (variables not in scope are treated as fixed symbols: interval [v, v]). Results are
    simplified. Calls to Funcs / inputs and Loads are bounded by their type's range for
    8- and 16-bit integers and Bool, unbounded otherwise. Let exprs are handled. Vector
    exprs (Ramp, Broadcast) give the range over all lanes. Works for ints and floats. */
Interval bounds_of_expr_in_scope(const Expr &e, const Scope &scope);
/** A constant upper bound of the integer e, knowing the ranges in scope, tighter than
    bounds_of_expr_in_scope's where e is a difference of mins and maxes of the same linear
    terms (a region's extent: (min(a, b) - c) is taken as min(a - c, b - c), so that the
    linear parts cancel). False where there is none. */
bool constant_upper_bound_in_scope(Expr e, const Scope &scope, int64_t *out);
/** A constant upper bound of a - b (32-bit integers), by cases on the mins, maxes and selects
    of either side: min(x, c) - min(y, c) <= max(x - y, 0) (likewise max), so that the window
    of a stencil clamped at an image's edge has the width of the unclamped one. False where a
    case has no bound (or the work passes a fixed budget). */
bool upper_bound_of_difference(const Expr &a, const Expr &b, const Scope &scope, int64_t *out);
/** The largest value of e over every combination of its variables' values, where each is in
    scope with a constant range and there are at most `limit` combinations: exact where
    interval arithmetic loses that two terms move together. False where e has a variable
    without such a range, a load or a call, or more combinations. */
bool enumerated_max(const Expr &e, const Scope &scope, int64_t limit, int64_t *out);

/** Smallest interval containing both (unbounded if either side is). */
Interval interval_union(const Interval &a, const Interval &b);
Interval interval_intersection(const Interval &a, const Interval &b);

}  // namespace internal
}  // namespace weft
