// Func::hoist_storage: a Func's allocation moved out to an outer loop (or the root).
#pragma once
#include "ir/IR.h"
#include "lower/Env.h"

namespace weft {
namespace internal {

/** For each Func scheduled with hoist_storage: its Allocate (made by storage flattening at its
    store level) moves to the body of the hoist loop (every instance of it), or to the top for
    hoist_storage_root(), at the largest size any iteration of the loops between needs: a
    constant where one bounds it (then on the stack where small enough), else an expression of
    what is defined at that level. The lets that describe each iteration's region stay where
    they were, so indexing is unchanged. weft::Error for an output, a level that does not
    contain the storage, a parallel, vectorized or GPU loop between, and a size with no bound
    there. Runs after storage flattening, before simplification (which removes the loops of one
    iteration, and so the names a level gives). */
Stmt hoist_storage(const Stmt &s, const Env &env);

}  // namespace internal
}  // namespace weft
