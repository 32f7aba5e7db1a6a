// What lowering hands to a backend: a flat statement and its arguments.
#pragma once
#include "ir/IR.h"

namespace weft {
namespace internal {

struct LoweredArg {
    std::string name;
    enum Kind { Buffer, Scalar } kind;
    Type type;  // element type for buffers, value type for scalars
    int dims = 0;
};

/** The body refers to:
    - buffer arguments by name in Load/Store (base pointer = weft_buffer_t::host), and
      Variables "<name>.min.<d>", "<name>.extent.<d>", "<name>.stride.<d>" (Int(32)) read from
      the weft_buffer_t (only generic kernels use them; specialised ones have constants);
    - scalar arguments as Variables named by the argument's name, of its type;
    - Allocate nodes for internal storage.
    The compiled function has the signature weft_pipeline_fn (src/runtime/Runtime.h). */
struct LoweredFunc {
    std::string name;
    std::vector<LoweredArg> args;
    Stmt body;
};

/** The most bytes an Allocate in MemoryType::Stack may take (the CPU backend's alloca). */
constexpr int64_t kMaxStackAllocationBytes = int64_t(1) << 20;
/** Storage of a constant size up to this many bytes goes on the stack unless asked otherwise. */
constexpr int64_t kSmallStackAllocationBytes = int64_t(64) << 10;

}  // namespace internal
}  // namespace weft
