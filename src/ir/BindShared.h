// Binding the subexpressions an expression shares to Lets.
#pragma once
#include "ir/IR.h"

namespace weft {
namespace internal {

/** An Expr is a graph: an Expr variable used twice is one node with two parents, and a loop that
    builds each value from the last several times over (Newton steps, e = (e + e) * 0.5f) makes a
    graph of a few nodes whose tree (what every pass and the generated code would walk) has
    exponentially many. Where e's tree is much larger than its graph (kMinTreeSize nodes or more,
    and kMinTreeRatio times its graph's), each shared subexpression of kMinBoundSize nodes or more
    is bound to a Let at the top of e and used by name: the result's tree is about as large as e's
    graph. Other expressions come back unchanged. A subexpression using a name that a Let inside e binds (free in
    it: not bound within it) stays where it is; where two Lets inside e bind the same name, e
    comes back unchanged. */
Expr bind_shared_subexpressions(const Expr &e);

constexpr uint64_t kMinTreeSize = 4096;
constexpr uint64_t kMinTreeRatio = 8;
constexpr uint64_t kMinBoundSize = 4;

}  // namespace internal
}  // namespace weft
