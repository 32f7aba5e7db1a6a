// The nodes behind LazyBuffer (weft/Lazy.h): a Buffer, or a deferred call of a Callable.
#pragma once
#include "pipeline/PipelineInternal.h"
#include "weft/Lazy.h"

namespace weft {
namespace internal {

struct LazyNode {
    /** Defined: a value with data (a leaf). */
    Buffer<void> leaf;
    /** Else a deferred call: the Callable, its arguments (in its declared order), and the
        type and extents of each output. */
    std::shared_ptr<CallableContents> call;
    std::vector<LazyArg> args;
    std::vector<Type> types;
    std::vector<std::vector<int>> sizes;
    /** The part's name in messages: "part \"out\"" after its output Funcs. */
    std::string part;
};

/** Computes `values` (none a leaf) into `outs` (types and extents checked by the caller) as one
    pipeline, compiled once per chain structure and shapes. */
void realize_chain(const std::vector<LazyBuffer> &values, const std::vector<Buffer<void>> &outs);

}  // namespace internal
}  // namespace weft
