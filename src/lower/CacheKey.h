// The algorithm-and-schedule part of a pipeline's cache key.
#pragma once
#include "lower/Env.h"

namespace weft {
namespace internal {

/** env's definitions as computed (inlined Funcs substituted) and its schedule as computed
    (serialize_schedule() of env.effective), every name canonicalised (by first use): two
    pipelines that differ only in names have the same key. */
std::string cache_key(const Env &env);

}  // namespace internal
}  // namespace weft
