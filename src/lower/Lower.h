// The compiler's table of contents: from a pipeline snapshot to a flat LoweredFunc.
#pragma once
#include "lower/Env.h"
#include "lower/LoweredFunc.h"

namespace weft {
namespace internal {

/** Lowers env. shape_consts gives constants for buffer fields ("in.extent.0", "out.stride.1",
    ...): a shape-specialised kernel; an empty map gives a shape-generic one. If log is non-null
    it receives the IR after each pass. Throws weft::Error for impossible schedules.
    cuda: lower for a CUDA target (GPU loops become kernels: see lower/InjectGPU.h).
    host_vectors false: loops on the CPU are not vectorized (serial; for a backend that runs
    scalar code only, the interpreter of a build without LLVM); GPU kernels still are. */
LoweredFunc lower(Env env, const std::map<std::string, Expr> &shape_consts, const std::string &fn_name,
                  std::string *log = nullptr, bool cuda = false, bool host_vectors = true);

}  // namespace internal
}  // namespace weft
