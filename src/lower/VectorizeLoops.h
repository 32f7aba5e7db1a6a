// Vectorized loops of constant extent become vector IR (Ramp, Broadcast, vector Load/Store).
#pragma once
#include "ir/IR.h"

namespace weft {
namespace internal {
/** A loop whose body cannot be expressed as vector code (an inner allocation, a condition
    that varies across lanes, a store to one location from all lanes) stays a serial loop. A
    loop guarded by a split's tail check runs as vectors where every lane passes the check
    and as a serial loop elsewhere. With `unrolled_fallback` (CUDA), those serial loops are
    unrolled copies instead (a thread's register arrays keep constant indices). Without
    host_vectors, vectorized loops outside GPU kernels become serial loops. */
Stmt vectorize_loops(const Stmt &s, bool unrolled_fallback = false, bool host_vectors = true);
}  // namespace internal
}  // namespace weft
