// The order Funcs are realized in: producers before their consumers.
#pragma once
#include "lower/Env.h"

namespace weft {
namespace internal {

/** The Funcs a stage calls, by name (with repeats). */
std::vector<std::string> funcs_called(const LStage &s);

/** Every Func reached from the outputs, producers first (a depth-first walk from each output;
    a Func's calls to itself, in its updates, are not an order). index: name -> funcs index. */
std::vector<std::string> realization_order(const std::vector<LFunc> &funcs, const std::map<std::string, int> &index,
                                           const std::vector<std::string> &outputs);

}  // namespace internal
}  // namespace weft
