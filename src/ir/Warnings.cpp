#include "ir/Warnings.h"
#include <algorithm>

namespace weft {
namespace internal {
namespace {
thread_local std::vector<std::string> *t_warnings = nullptr;
}  // namespace

void compile_warning(const std::string &text) {
    if (!t_warnings) return;
    if (std::find(t_warnings->begin(), t_warnings->end(), text) == t_warnings->end()) t_warnings->push_back(text);
}
WarningsScope::WarningsScope(std::vector<std::string> *w) : saved_(t_warnings) { t_warnings = w; }
WarningsScope::~WarningsScope() { t_warnings = saved_; }

}  // namespace internal
}  // namespace weft
