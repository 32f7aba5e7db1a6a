// Estimates: the shapes and values automatic scheduling assumes (Func::set_estimate(s),
// ImageParam::set_estimates, Param::set_estimate). They are not part of any schedule or cache
// key: compiled code never depends on them.
#include <algorithm>
#include "lang/Function.h"

namespace weft {
using namespace internal;

namespace {
void check_estimate(const std::string &what, const Expr &min, const Expr &extent) {
    if (!min.defined() || !extent.defined())
        user_error("weft: " + what + ": an estimate needs both a min and an extent");
    if (!min.type().is_int_or_uint() || !extent.type().is_int_or_uint() || !min.type().is_scalar() ||
        !extent.type().is_scalar())
        user_error("weft: " + what + ": min and extent must be scalar integers (they are " + min.type().str() + " and " +
                   extent.type().str() + ")");
    int64_t e;
    if (is_const_int(extent, &e) && e < 0)
        user_error("weft: " + what + ": the extent " + std::to_string(e) + " is negative");
}
}  // namespace

Func &Func::set_estimate(const Var &v, Expr min, Expr extent) {
    check_func(c_);
    if (!c_->defined) user_error("weft: Func \"" + c_->name + "\".set_estimate(): the Func has no definition yet");
    auto it = std::find(c_->args.begin(), c_->args.end(), v.name());
    if (it == c_->args.end()) {
        std::string names;
        for (auto &a : c_->args) names += (names.empty() ? "" : ", ") + a;
        user_error("weft: Func \"" + c_->name + "\".set_estimate(): \"" + v.name() + "\" is not one of its Vars (" +
                   names + ")");
    }
    check_estimate("Func \"" + c_->name + "\".set_estimate(" + v.name() + ")", min, extent);
    c_->estimates.resize(c_->args.size());
    c_->estimates[it - c_->args.begin()] = {cast(Int(32), min), cast(Int(32), extent)};
    return *this;
}

Func &Func::set_estimates(const std::vector<std::pair<Expr, Expr>> &estimates) {
    check_func(c_);
    if (!c_->defined) user_error("weft: Func \"" + c_->name + "\".set_estimates(): the Func has no definition yet");
    if (estimates.size() != c_->args.size())
        user_error("weft: Func \"" + c_->name + "\".set_estimates(): the Func has " + std::to_string(c_->args.size()) +
                   " dimensions, but " + std::to_string(estimates.size()) + " estimates were given");
    for (size_t d = 0; d < estimates.size(); d++)
        check_estimate("Func \"" + c_->name + "\".set_estimates() dimension " + std::to_string(d), estimates[d].first,
                       estimates[d].second);
    c_->estimates.clear();
    for (auto &e : estimates) c_->estimates.push_back({cast(Int(32), e.first), cast(Int(32), e.second)});
    return *this;
}

ImageParam &ImageParam::set_estimates(const std::vector<std::pair<Expr, Expr>> &estimates) {
    if (!c_) user_error("weft: set_estimates() on an undefined ImageParam");
    if ((int)estimates.size() != c_->dims)
        user_error("weft: ImageParam \"" + c_->name + "\".set_estimates(): the input has " + std::to_string(c_->dims) +
                   " dimensions, but " + std::to_string(estimates.size()) + " estimates were given");
    for (size_t d = 0; d < estimates.size(); d++)
        check_estimate("ImageParam \"" + c_->name + "\".set_estimates() dimension " + std::to_string(d),
                       estimates[d].first, estimates[d].second);
    c_->estimates.clear();
    for (auto &e : estimates) c_->estimates.push_back({cast(Int(32), e.first), cast(Int(32), e.second)});
    return *this;
}

}  // namespace weft
