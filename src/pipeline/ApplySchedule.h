// A pipeline's schedule read as a value, and a value applied to a pipeline's Funcs.
#pragma once
#include <functional>
#include "lang/Function.h"
#include "lower/Env.h"

namespace weft {
namespace internal {

/** The schedule every Func reached from `outputs` has now, by the pipeline's unique names. */
PipelineSchedule schedule_of(const std::vector<std::shared_ptr<FunctionContents>> &outputs);

/** Gives the Funcs reached from `outputs` the schedule s, by making the calls of
    schedule_directives(s) through the public API on Funcs reset to the default schedule.
    On an error every Func keeps the schedule it had, and the Error names the call. */
void apply_schedule_to(const std::vector<std::shared_ptr<FunctionContents>> &outputs, const PipelineSchedule &s);

/** Resets every Func reached from `outputs` to the default schedule, then makes `calls`
    through the public API (names are the pipeline's unique names). On an error every Func
    keeps the schedule it had, and the Error (prefixed by `who`) names the call; `failed`, if
    given, gets the index of that call in `calls` (calls.size() for an error before any). */
void apply_directives_to(const std::vector<std::shared_ptr<FunctionContents>> &outputs,
                         const std::vector<Directive> &calls, const char *who, size_t *failed = nullptr);
/** The same with the outputs' reference snapshot already made (build_env(outputs, true)). */
void apply_directives_to(const Env &env, const std::vector<Directive> &calls, const char *who,
                         size_t *failed = nullptr);
/** A function that puts back the wrappers (in(), clone_in()) that every Func and input reached
    from `outputs` has now, taking away any made since (automatic scheduling's trials). */
std::function<void()> wrappers_restorer(const std::vector<std::shared_ptr<FunctionContents>> &outputs);
/** Takes away the wrappers marked auto_copy (what an earlier auto_schedule made). */
void drop_auto_copies(const std::vector<std::shared_ptr<FunctionContents>> &outputs);

}  // namespace internal
}  // namespace weft
