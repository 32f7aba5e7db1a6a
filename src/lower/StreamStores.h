// Streaming (non-temporal) stores for loop nests that write much more than the caches hold and
// do not read back what they write: the stores skip the read of each line before its write
// and leave the caches to what is read. Func::store_nontemporal() asks for it on one Func;
// this pass decides it for every nest of the CPU code.
#pragma once
#include <cstdint>

#include "ir/IR.h"

namespace weft {
namespace internal {

/** Bytes a nest writes to one buffer before its stores stream: more than the last-level cache
    of one core complex on the machines weft targets (32 MiB on AMD Zen 4 and Zen 5), so that
    what the nest wrote first is gone from the caches when a later nest reads it anyway. */
constexpr int64_t kStreamStoreBytes = int64_t(32) << 20;

/** Marks nontemporal the dense vector stores of a whole cache line (64 bytes) in a loop nest (a
    loop outside every loop, with what it contains) to a buffer that the nest does not read, when
    the nest writes at least min_bytes of it (counting loops of constant extent; others as one
    iteration). Code generation streams those whose address is aligned to 64 bytes (checked at
    run time where not known) and fences before returning. */
Stmt stream_large_stores(const Stmt &s, int64_t min_bytes = kStreamStoreBytes);

}  // namespace internal
}  // namespace weft
