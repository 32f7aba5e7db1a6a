// A GPU pass: the last step of a reduction across a block's threads done as a tree
// (rfactor's partial results, one per thread in shared memory, combined in log2(threads)
// steps instead of by one thread).
#pragma once
#include "ir/IR.h"

namespace weft {
namespace internal {
namespace gpu {

/** kernel_body (a kernel's body inside its block loops) with each serial block-level loop
    that combines a shared buffer's elements into one value, and is the last to read that
    buffer, made a tree over the block's threads. See TreeReductions.cpp. */
Stmt tree_reductions(const Stmt &kernel_body);

}  // namespace gpu
}  // namespace internal
}  // namespace weft
