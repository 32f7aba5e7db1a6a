// 16-bit floats and fixed-point intrinsics in the terms every backend has.
//
// float16 and bfloat16 are storage types: each operation on them is the operation in float32
// with the result rounded back to the type (round to nearest even), which is what the API
// promises. After this pass the only operations on 16-bit floats are loads, stores, selects,
// lets and conversions to and from float32; a conversion from float64 or a wide integer that
// float32 cannot hold exactly rounds once (through float32 rounded to odd).
//
// The fixed-point intrinsics (ir/IR.h) become integer arithmetic with the same exact results,
// except saturating_add and saturating_sub on the CPU, which the code generator and the
// interpreter implement directly (LLVM's saturating intrinsics: vpaddsb and its kin).
#pragma once
#include "ir/IR.h"

namespace weft {
namespace internal {
Stmt lower_narrow_arithmetic(const Stmt &s, bool cuda);
/** x (float64, or an integer wider than float32's precision) as float32 rounded to odd: a
    second rounding to a type of 16 bits or fewer then gives the correctly rounded result. */
Expr cast_to_f32_round_to_odd(const Expr &x);
}  // namespace internal
}  // namespace weft
