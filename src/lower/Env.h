// A snapshot of a pipeline's Funcs (names made unique, inline Funcs substituted), the
// inputs and Params it reads, its realization order, and its canonical cache key.
#pragma once
#include <map>
#include "ir/Names.h"
#include "lang/Function.h"

namespace weft {
namespace internal {

struct LStage {
    std::vector<Expr> args;
    Expr value;
    Expr predicate;  // RDom where(), undefined = none
    std::vector<ReductionVariable> rvars;
    StageSchedule sched;
    std::vector<std::pair<Expr, StageSchedule>> specs;  // specialize(): condition, schedule
    std::map<const void *, std::string> prefetch_names;  // prefetch sources -> unique names
    FuseLevel fuse;          // compute_with (fuse.func_name: the parent's name as the user gave it)
    std::string fuse_func;   // the parent's unique name
};

/** Calls fn on each Expr of a stage's definition (args, value, where(), RDom bounds). */
template <typename F>
void for_each_expr(LStage &s, F &&fn) {
    for (auto &a : s.args) fn(a);
    fn(s.value);
    if (s.predicate.defined()) fn(s.predicate);
    for (auto &rv : s.rvars) {
        fn(rv.min);
        fn(rv.extent);
    }
}

struct LFunc {
    std::string name;  // unique within the pipeline
    std::shared_ptr<FunctionContents> contents;
    std::vector<std::string> args;
    Type type;
    std::vector<Type> types;  // defined with a Tuple: each value's type (else empty)
    std::vector<LStage> stages;
    FuncSchedule sched;
    std::string compute_func, store_func;  // unique names of the consumers in compute_at / store_at
    std::string hoist_func;                // ... and in hoist_storage
    int output_index = -1;
};

struct LInput {
    std::string name;  // unique within the pipeline
    Type type;
    int dims;
    std::shared_ptr<ImageParamContents> image;  // one of these is set
    std::shared_ptr<BufferContents> buffer;
};

struct LParam {
    std::string name;
    std::shared_ptr<ParamContents> param;
};

/** What a snapshot was built from: each definition, schedule and input's wrappers it read,
    with its change count then. The snapshot is current while every count is unchanged. */
struct EnvSources {
    /** Each source (kept alive) and its change counter, and the count when it was read. */
    std::vector<std::pair<std::shared_ptr<const void>, const ChangeCount *>> items;
    std::vector<uint64_t> counts;
    void add(std::shared_ptr<const void> owner, const ChangeCount &c) {
        counts.push_back(c.get());  // (read before the source itself)
        items.emplace_back(std::move(owner), &c);
    }
    bool current() const {
        for (size_t i = 0; i < items.size(); i++)
            if (items[i].second->get() != counts[i]) return false;
        return true;
    }
};

struct Env {
    std::vector<LFunc> funcs;  // realization order: producers first; inlined Funcs removed
    std::map<std::string, int> index;
    std::vector<LInput> inputs;
    std::vector<LParam> params;
    std::vector<std::string> outputs;  // unique names, in the Pipeline's order
    /** The output buffers, in order: one per output, one per value of an output defined with a
        Tuple (tuple_buffer_name). */
    std::vector<std::string> output_buffers;
    /** The structure of algorithm and schedule with every name canonicalised: the
        definitions as computed (inlined Funcs substituted), then serialize_schedule() of the
        schedule as computed (`effective`, names canonicalised). */
    std::string canonical;
    /** The schedule each Func was given (every Func reached, the inlined ones too), by the
        unique names; Exprs use the unique names of Params and inputs. */
    PipelineSchedule given;
    /** The schedule the Funcs are computed with (given, with the defaults decided here). */
    PipelineSchedule effective;
    /** Every Func reached, by unique name (the inlined ones too). */
    std::map<std::string, std::shared_ptr<FunctionContents>> all_funcs;
    EnvSources sources;
    /** The outputs of deferred calls in a chain (Func unique name, seam): what their consumers
        may read of them (checked in lowering, whatever is inlined). */
    std::vector<std::pair<std::string, std::shared_ptr<const SeamInfo>>> seams;
    /** Storage folding chosen by scheduling: Func -> (dimension, power-of-two factor). */
    std::map<std::string, std::pair<int, int64_t>> folds;
    LFunc &func(const std::string &n) { return funcs[index.at(n)]; }
};

/** The wrapper (from in()) that `consumer` reads instead of the callee of c, or null. A
    wrapper that is wrapped in turn (f.in().in()) is read through its own wrapper: the consumer
    reads the outermost one, each wrapper the one inside it. */
std::shared_ptr<FunctionContents> wrapper_read_by(const Call *c, const FunctionContents *consumer);

/** Builds the snapshot. With reference = true every schedule is dropped (all Funcs are
    computed at root over their whole required region, loops in default order): the
    interpreter's view. shape_consts replaces buffer fields ("in.extent.0") by constants. */
/** override_schedule (by the unique names): the schedule to use in place of what the Funcs it
    names have (automatic scheduling at a first call, which changes no Func). */
Env build_env(const std::vector<std::shared_ptr<FunctionContents>> &outputs, bool reference,
              const PipelineSchedule *override_schedule = nullptr);

}  // namespace internal
}  // namespace weft
