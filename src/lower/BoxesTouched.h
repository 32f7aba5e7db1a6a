// Bounds inference: the region of a Func or input that a statement reads or writes.
#pragma once
#include "ir/Interval.h"

namespace weft {
namespace internal {

/** One interval per dimension; empty vector = not touched at all. */
using Box = std::vector<Interval>;

/** Region of `name` read by calls in s (Func or input calls, before flattening), with every
    loop and let inside s ranging over its values; variables defined outside s stay symbolic. */
Box box_required(const Stmt &s, const std::string &name, const Scope &outer = Scope());
/** Region of Func `name` written by Provides in s. */
Box box_provided(const Stmt &s, const std::string &name, const Scope &outer = Scope());
/** Does s call or provide `name`? */
bool touches(const Stmt &s, const std::string &name);
/** WEFT_DEBUG_BOUNDS=1: bounds inference traces what it finds on stderr. */
bool debug_bounds();
/** Union, dimension by dimension. */
Box box_union(const Box &a, const Box &b);

}  // namespace internal
}  // namespace weft
