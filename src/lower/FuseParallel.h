// Perfectly nested parallel loops become one parallel loop over their product, so that every
// thread finds work: parallel(c) over 3 channels around parallel(yo) over strips runs as 3 tasks
// otherwise (the runtime runs a parallel loop inside a task serially), which on 2 threads is
// 2 rounds for 3 tasks.
#pragma once
#include "ir/IR.h"

namespace weft {
namespace internal {
/** parallel (o, a, n) { lets; parallel (i, b, m) { body } } -> parallel (f, 0, n * m) { let o =
    a + f / m; let i = b + f % m; lets; body }, where n and m are constants (n * m < 2^31) and the
    inner loop's bounds use neither o nor the lets. Nests of more than two fuse in turn. */
Stmt fuse_parallel_nests(const Stmt &s);
}  // namespace internal
}  // namespace weft
