// The compiler's table of contents: from a pipeline snapshot to a flat LoweredFunc.
#pragma once
#include <functional>
#include "lower/Env.h"
#include "lower/LoweredFunc.h"

namespace weft {
namespace internal {

/** What lowering is for, beyond the pipeline itself. */
struct LowerOptions {
    /** The target: for CUDA, GPU loops become kernels (see lower/gpu/InjectGPU.h). */
    Target target;
    /** false: loops on the CPU are not vectorized (serial; for a backend that runs scalar code
        only, the interpreter of a build without LLVM); GPU kernels still are. */
    bool host_vectors = true;
    /** Profiling: the id of each Func's timer (weft_rt_profile around its computation); empty:
        no timers. */
    std::function<int(const std::string &)> profile_id;
    /** Where the IR after each pass goes; null: nowhere. It starts with the loop nest. */
    std::string *log = nullptr;
    /** Where the loop nest summary goes (lower/LoopNest.h); null: nowhere. */
    std::string *loop_nest = nullptr;
    /** Where lowering's warnings go (each once, ir/Warnings.h): a storage class not honoured, a
        directive without effect. Null: nowhere. */
    std::vector<std::string> *warnings = nullptr;
    /** Where each pass's time goes (name, milliseconds; WEFT_DEBUG=times); null: nowhere. */
    std::vector<std::pair<std::string, double>> *pass_times = nullptr;
    bool cuda() const { return target.arch() == Target::Arch::CUDA; }
};

/** Lowers env. shape_consts gives constants for buffer fields ("in.extent.0", "out.stride.1",
    ...): a shape-specialised kernel; an empty map gives a shape-generic one. Throws weft::Error
    for impossible schedules. */
LoweredFunc lower(Env env, const std::map<std::string, Expr> &shape_consts, const std::string &fn_name,
                  const LowerOptions &options = {});

}  // namespace internal
}  // namespace weft
