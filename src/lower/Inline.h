// Inlining: which Funcs are inlined, and their values substituted into their callers.
#pragma once
#include <set>
#include "lower/Env.h"

namespace weft {
namespace internal {

/** Decides where the Funcs left at the default schedule go: outputs at root; pure-only Funcs
    inlined (returned); a Func with updates at the innermost non-vector loop of its one
    consumer stage (inside a GPU kernel, its innermost thread loop), else at root. A Func given
    compute_at but no store level is stored where it is computed. reference: the interpreter's
    view (nothing placed inside a consumer). */
std::set<std::string> choose_inlined(std::vector<LFunc> &funcs, bool reference);

/** Substitutes each inlined Func's value into the Funcs that are computed. order: the
    realization order (producers first); index: name -> funcs index. */
void inline_funcs(std::vector<LFunc> &funcs, const std::map<std::string, int> &index,
                  const std::vector<std::string> &order, const std::set<std::string> &inlined);

}  // namespace internal
}  // namespace weft
