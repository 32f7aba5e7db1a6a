// What src/pipeline offers the tests and tools beyond the public API.
#pragma once
#include <atomic>
#include "weft/Pipeline.h"
#include "lower/Env.h"

namespace weft {
namespace internal {

struct CallableContents {
    std::shared_ptr<PipelineContents> pipeline;
    std::vector<Argument> args;
    Target target;
};

/** What a chain of deferred calls needs to know of one part (a Pipeline): the id of its current
    snapshot (a new one after any edit of what it uses), whether any of its Funcs has a schedule
    directive (else it is scheduled automatically when called alone), and its outputs. */
struct PartInfo {
    uint64_t snapshot = 0;
    bool scheduled = false;
    std::vector<std::shared_ptr<FunctionContents>> outputs;
};
PartInfo part_info(PipelineContents &p);
const std::vector<std::shared_ptr<FunctionContents>> &pipeline_outputs(const PipelineContents &p);

/** While alive, compiles on this thread print no warnings: a schedule weft changed itself (a
    chain's trial of vertical fusion) is not the user's to be warned about. Scopes nest. */
class QuietCompiles {
public:
    QuietCompiles();
    ~QuietCompiles();
    QuietCompiles(const QuietCompiles &) = delete;
    QuietCompiles &operator=(const QuietCompiles &) = delete;
};
bool compiles_quiet();

/** Pipeline::auto_schedule's schedule applied to Funcs whose definitions and schedules print
    as `canonical` (an Env's): compiles of exactly that print no warnings, as a first call's
    automatic schedule does not (a change to any Func's schedule or definition warns again). */
void note_auto_scheduled(const std::string &canonical);
bool auto_scheduled(const std::string &canonical);

/** Computes p's outputs with no schedule (every Func at root, loops in definition order),
    by the interpreter. ImageParams and Params must be bound. */
void interpret_pipeline(const Pipeline &p, const std::vector<Buffer<void>> &outs);

/** The same unscheduled computation as interpret_pipeline(), compiled for the host by LLVM
    where this build has it (else interpreted). Much faster than the interpreter; for checks
    that run many large references (for example under the sanitizers, where the interpreter
    is instrumented and LLVM's generated code is not). */
void compiled_reference(const Pipeline &p, const std::vector<Buffer<void>> &outs);

/** Lowers the pipeline with its current schedules for these shapes ((min, extent) per
    dimension of each input and output, by the snapshot's unique names; dense strides),
    generating no code: throws the weft::Error that compiling would. */
void check_lowers(const std::vector<std::shared_ptr<FunctionContents>> &outputs,
                  const std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> &shapes, const Target &t);

/** For tests: where >= 0, auto_schedule() with no budget takes the planner's candidate of this
    rank (modulo their number) instead of the predicted best, so that property tests reach
    every kind of choice at small sizes. */
extern std::atomic<int> g_autoschedule_pick;

/** Does no Func of the snapshot have any schedule directive (nor a wrapper from in())? Such a
    pipeline is scheduled automatically at its first call (unless WEFT_AUTOSCHEDULE=0). */
bool has_no_directives(const Env &env);
/** Is automatic scheduling at first calls on (WEFT_AUTOSCHEDULE is not "0")? */
bool first_call_autoschedule_enabled();
/** Schedules for the shapes of a call ((min, extent) per dimension of each input and output,
    by unique names; Params' values by unique names), best first, the last the safe one; empty
    where the planner cannot (an unbounded region): the caller compiles the pipeline as it is. */
std::vector<PipelineSchedule> first_call_schedules(const std::vector<std::shared_ptr<FunctionContents>> &outputs,
                                                   const std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> &shapes,
                                                   const std::map<std::string, const void *> &param_values,
                                                   const Target &t);

/** The algorithm-and-schedule part of p's cache key (names canonicalised). */
std::string algorithm_key(const Pipeline &p);

/** The id of a profiled Func's timer (by name; Profile.cpp). */
int profile_id(const std::string &name);
/** Prints profile_report() on stderr at exit (once; for targets with the "profile" feature). */
void profile_report_at_exit();
/** Are kernels compiled for t instrumented (set_profile / WEFT_PROFILE, or t's "profile")? */
inline bool profiling(const Target &t) { return profile_enabled() || t.has_feature("profile"); }

/** How many pipeline snapshots have been built in this process (each edit of a Func makes
    the pipelines that use it build a new one at their next call). */
uint64_t snapshot_builds();

/** WEFT_DEBUG=times (or any debug output): each compile prints one line of its times. */
bool compile_times_enabled();

}  // namespace internal
}  // namespace weft
