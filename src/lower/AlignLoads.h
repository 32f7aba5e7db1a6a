// Alignment of dense vector loads and stores, where the index provably is a multiple of a
// power of two (the backend then emits aligned accesses to internal allocations).
#pragma once
#include "ir/IR.h"

namespace weft {
namespace internal {
Stmt align_loads(const Stmt &s);
}  // namespace internal
}  // namespace weft
