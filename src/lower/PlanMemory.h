// Memory planning: heap buffers of the pipeline's top level given back after their last use.
#pragma once
#include <string>
#include "ir/IR.h"

namespace weft {
namespace internal {

/** The heap Allocates of the pipeline's top level (outside every loop) are scoped: each lives
    until the end of its body, so a chain of N root stages keeps N buffers alive to the end.
    This pass puts free_buffer(name) right after the last top-level statement that uses each
    one, so that a buffer freed early gives its block back to the runtime's pool, where the
    next buffer of its size class takes it: a chain of same-size stages then holds two or three
    buffers at once, and none is allocated anew in steady state. With `log` set, the plan
    (buffers, sizes, lifetimes, the blocks they reuse, the peak) is appended to it. For CPU
    code (the LLVM backend and the interpreter give back a freed buffer's slot). */
Stmt plan_memory(const Stmt &s, std::string *log);

}  // namespace internal
}  // namespace weft
