// Func::load_ahead(): software pipelining of a Func computed at a serial loop. Its production
// for iteration v + 1 moves into iteration v, right after the last statement that reads it,
// the production for the first iteration goes before the loop, and its storage around the
// loop: on a GPU the next tile's loads are in flight while the current tile is used.
#pragma once
#include "ir/IR.h"
#include "lower/Env.h"

namespace weft {
namespace internal {
/** Applies load_ahead() of every Func that asks for it; weft::Error (naming the Func and what
    stops it) where the Func is not produced by one statement at a serial loop, or its
    production reads something written inside that loop. */
Stmt load_ahead(const Stmt &s, const Env &env);
}  // namespace internal
}  // namespace weft
