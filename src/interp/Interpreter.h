// The reference interpreter: runs lowered IR directly. With the pipeline lowered without its
// schedule it is the oracle that every schedule's result is compared against.
#pragma once
#include <map>
#include "lower/LoweredFunc.h"
#include "runtime/Runtime.h"

namespace weft {
namespace internal {

/** Evaluates a scalar integer (or bool) Expr with the given variable values (IR.h semantics). */
int64_t interpret_scalar_int(const Expr &e, const std::map<std::string, int64_t> &vars);
/** Evaluates a scalar float Expr. */
double interpret_scalar_float(const Expr &e, const std::map<std::string, int64_t> &vars);

/** Runs a LoweredFunc with the ABI of compiled code (weft_pipeline_fn). Scalar code only:
    lower it without vectorization (the reference lowering never vectorizes). */
int32_t interpret_lowered(const LoweredFunc &f, void **args, weft_context_t *ctx);

}  // namespace internal
}  // namespace weft
