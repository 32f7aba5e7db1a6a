// Evaluating scalar Exprs to values, with the IR's semantics (IR.h): the reference
// interpreter builds on it (adding memory and statements), and lowering uses it to evaluate
// index expressions at given loop values.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>
#include "ir/IR.h"

namespace weft {
namespace internal {

/** A scalar of any type the IR computes with: t says which member holds it. */
struct Val {
    Type t;
    union {
        int64_t i;
        uint64_t u;
        double f;
    };
    Val() : t(Int(32)), i(0) {}
};

/** v's bits as a value of integer or bool type t (wrapped to its width). */
Val make_int(Type t, uint64_t bits);
/** The bitwise intrinsics ("bitwise_and", "bitwise_or", "bitwise_xor", "shift_left",
    "shift_right") on integer values, result of type t (IROperator.cpp gives their meaning);
    false if n is none of them. */
bool eval_bitwise(const std::string &n, Type t, const Val &a, const Val &b, Val *r);
/** The fixed-point intrinsics (ir/IR.h: "saturating_add" ... "rounding_mul_shift_right") of
    integer values, exactly; c is mul_shift_right's q. */
Val fixed_point(const std::string &n, Type t, const Val &a, const Val &b, const Val &c);
/** d as a value of float type t (rounded to nearest even to t's precision). */
Val make_float(Type t, double d);
double as_double(const Val &v);
/** The cast of v to t (float to int saturates, NaN gives 0). */
Val do_cast(Type t, const Val &v);

/** Evaluates scalar Exprs over named values (vars, innermost last). Loads and calls of
    anything but the math intrinsics are a subclass's: by default an internal error. */
class ExprEvaluator {
public:
    virtual ~ExprEvaluator() = default;
    std::vector<std::pair<std::string, Val>> vars;
    Val eval(const Expr &e);

protected:
    const Val &lookup(const std::string &n);
    /** A Variable's value: by default its name's in vars. */
    virtual Val variable(const Variable *op) { return lookup(op->name); }
    virtual Val load(const Load *op);
    /** Intrinsics: sqrt ... pow, abs, likely, reinterpret, prefetch (a no-op). */
    virtual Val call(const Call *op);
    static Val arith(IRNodeType op, Type t, const Val &a, const Val &b);
    static Val compare(IRNodeType op, const Val &a, const Val &b);
};

/** e (a scalar integer or bool Expr) with each variable in vars replaced by its value
    (taking the type it is used with). */
int64_t evaluate_int(const Expr &e, const std::map<std::string, int64_t> &vars);
/** A scalar float Expr's value; vars are Int(64) values. */
double evaluate_float(const Expr &e, const std::map<std::string, int64_t> &vars);

}  // namespace internal
}  // namespace weft
