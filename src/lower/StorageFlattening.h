// Multi-dimensional Realize / Provide / Call -> flat Allocate / Store / Load.
#pragma once
#include "lower/Env.h"

namespace weft {
namespace internal {

/** Inputs and outputs are addressed through the Variables "<name>.min.<d>" and
    "<name>.stride.<d>"; internal Funcs get an Allocate with dense strides. For CUDA (`cuda`),
    store_in(Register) stays Register whatever the size: inject_gpu decides what it becomes
    (a thread's registers, or shared memory), knowing the kernel's loops. */
Stmt storage_flattening(const Stmt &s, const Env &env, bool cuda = false);

}  // namespace internal
}  // namespace weft
