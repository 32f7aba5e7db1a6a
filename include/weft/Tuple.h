// Tuple: several values computed at each point of one Func (Halide's Tuple).
#pragma once
#include <initializer_list>
#include <utility>
#include <vector>
#include "weft/Expr.h"

namespace weft {

class FuncRef;

/** A Func defined with a Tuple has several values at each point, of types of their own,
    computed together: `f(x, y) = Tuple(x + y, sin(x * y));` (or `f(x, y) = {x + y, sin(x *
    y)};`). `f(x, y)[i]` is its i-th value; an update gives a Tuple of as many values, each
    computed from the values the point had before the update (`argmin`, complex numbers).
    realize() gives one buffer per value (a Realization). */
class Tuple {
public:
    template <typename... Rest>
    Tuple(const Expr &a, const Expr &b, Rest &&...rest) : exprs_{a, b, Expr(std::forward<Rest>(rest))...} {}
    /** A Tuple of the values given (at least one). */
    explicit Tuple(const std::vector<Expr> &values);
    /** The values of a call to a Func defined with a Tuple (weft::Error for a Func of one value). */
    explicit Tuple(const FuncRef &f);
    size_t size() const { return exprs_.size(); }
    /** The i-th value (weft::Error past the end). */
    Expr &operator[](size_t i);
    const Expr &operator[](size_t i) const;
    const std::vector<Expr> &as_vector() const { return exprs_; }

private:
    std::vector<Expr> exprs_;
};

/** Value by value: select(cond, t[i], f[i]); the Tuples have one size. */
Tuple select(Expr condition, const Tuple &true_value, const Tuple &false_value);
/** Value by value with a condition each: select(cond[i], t[i], f[i]). */
Tuple select(const Tuple &condition, const Tuple &true_value, const Tuple &false_value);
/** mux over the values of a Tuple (as mux over a list of Exprs). */
Expr mux(Expr id, const Tuple &values);
Expr mux(Expr id, std::initializer_list<Expr> values);
/** Value by value: the id-th Tuple (the last one past the end); the Tuples have one size. */
Tuple mux(Expr id, const std::vector<Tuple> &values);

}  // namespace weft
