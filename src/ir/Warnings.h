// Warnings of a compile (lowering and code generation) for the user: what a schedule asked for
// and did not get. Collected on the compiling thread while a WarningsScope is alive; the
// compile prints them once (src/pipeline/Pipeline.cpp).
#pragma once
#include <string>
#include <vector>

namespace weft {
namespace internal {

/** Adds text to the innermost live WarningsScope of this thread (dropped where there is
    none); a text already there is kept once. */
void compile_warning(const std::string &text);

/** While alive, compile_warning()s of this thread go to *w (null: nowhere). Scopes nest. */
class WarningsScope {
public:
    explicit WarningsScope(std::vector<std::string> *w);
    ~WarningsScope();
    WarningsScope(const WarningsScope &) = delete;
    WarningsScope &operator=(const WarningsScope &) = delete;

private:
    std::vector<std::string> *saved_;
};

}  // namespace internal
}  // namespace weft
