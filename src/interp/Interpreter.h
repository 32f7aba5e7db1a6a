// The reference interpreter: runs lowered IR directly. With the pipeline lowered without its
// schedule it is the oracle that every schedule's result is compared against.
#pragma once
#include <map>
#include "ir/Evaluate.h"
#include "lower/LoweredFunc.h"
#include "runtime/Runtime.h"

namespace weft {
namespace internal {


/** Runs a LoweredFunc with the ABI of compiled code (weft_pipeline_fn). Scalar code only:
    lower it without vectorization (the reference lowering never vectorizes). */
int32_t interpret_lowered(const LoweredFunc &f, void **args, weft_context_t *ctx);

}  // namespace internal
}  // namespace weft
