// The contraction rule: a floating-point multiply-add is fused (one rounding) exactly where it is
// written in one definition, so a schedule never changes a result. Each definition's a * b + c,
// c + a * b, a * b - c and c - a * b becomes fma(...), before inlining: a product defined in one
// Func and added in another is never fused, whether the first is inlined or computed at root.
// The backends contract nothing else (LLVM without `contract`, NVRTC with --fmad=false), and the
// interpreter computes fma() with std::fma.
#pragma once
#include "ir/IR.h"

namespace weft {
namespace internal {

/** e with each floating-point multiply-add written in it made an fma() intrinsic. */
Expr fuse_multiply_adds(const Expr &e);

}  // namespace internal
}  // namespace weft
