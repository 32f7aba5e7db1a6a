// Multi-dimensional Realize / Provide / Call -> flat Allocate / Store / Load.
#pragma once
#include "lower/Env.h"

namespace weft {
namespace internal {

/** Inputs and outputs are addressed through the Variables "<name>.min.<d>" and
    "<name>.stride.<d>"; internal Funcs get an Allocate with dense strides. */
Stmt storage_flattening(const Stmt &s, const Env &env);

}  // namespace internal
}  // namespace weft
