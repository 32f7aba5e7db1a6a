// The contents behind Func, RDom, ImageParam: definitions and schedules.
#pragma once
#include <atomic>
#include <mutex>
#include "lang/Schedule.h"
#include "weft/Func.h"

namespace weft {
namespace internal {

struct PipelineContents;  // src/pipeline

struct ReductionVariable {
    std::string var;
    Expr min, extent;
};

struct ReductionDomainContents {
    std::string name;
    std::vector<ReductionVariable> domain;
    Expr predicate;  // conjunction of where() conditions; undefined = none
    ChangeCount changes;
};

struct Definition {
    std::vector<Expr> args;
    Expr value;
    std::shared_ptr<ReductionDomainContents> rdom;  // null for pure definitions
};

/** Set on the output of a deferred call in a chain of them (src/graph/Chain.cpp): its consumers
    may read it only where the call computed it, [0, extent) per dimension; the names say who is
    who when they read past it. */
struct SeamInfo {
    std::vector<int> sizes;
    std::string producer;   // e.g. part "denoise"
    std::string consumers;  // e.g. part "sharpen"
};

struct FunctionContents {
    std::string name;
    std::vector<std::string> args;
    Type type;  // (a Tuple's: its first value's)
    /** Defined with a Tuple: each value's type (then every definition's value is the "tuple"
        intrinsic of the values); empty for a Func of one value. */
    std::vector<Type> types;
    bool defined = false;
    Definition init;
    std::vector<Definition> updates;
    /** The schedule, apart from the definitions: Func-level, then one per stage (init, updates). */
    FuncSchedule schedule;
    std::vector<DefinitionSchedule> stage_schedules;
    ChangeCount changes;  // bumped by every change of a definition or schedule (changed())
    /** Func::realize's own pipeline (see src/pipeline), made at the first realize(). */
    std::mutex runner_mutex;
    std::shared_ptr<PipelineContents> runner;
    /** Wrapper Funcs made by in(): key null = for every consumer, else for that consumer. */
    std::map<const FunctionContents *, std::shared_ptr<FunctionContents>> wrappers;
    /** set_estimate(s): (min, extent) per pure Var for automatic scheduling; undefined = none.
        Not part of the schedule or of any cache key. */
    std::vector<std::pair<Expr, Expr>> estimates;
    /** Func::trace_stores / trace_loads / trace_realizations (part of the cache key, with the
        Func's name, which the lines print). */
    bool trace_stores = false, trace_loads = false, trace_realizations = false;
    /** Non-null: the output of a deferred call, read by the next parts of a chain. */
    std::shared_ptr<const SeamInfo> seam;
    /** A wrapper that Pipeline::auto_schedule made (a copy): a later auto_schedule takes it
        away before it plans, as it is not the user's. */
    bool auto_copy = false;
};

/** The Func that `consumer` reads when it calls a Func, input or buffer with these wrappers. */
std::shared_ptr<FunctionContents> wrapper_for(
    const std::map<const FunctionContents *, std::shared_ptr<FunctionContents>> &wrappers,
    const FunctionContents *consumer);

/** Bumped by every change to any definition or schedule (and by clear_cache()): a cached call
    whose epoch is unchanged reuses its snapshot and kernel without looking further; after a
    change, a pipeline checks the change counts of what it uses (so editing one Func rebuilds
    only the pipelines that use it). */
extern std::atomic<uint64_t> g_definition_epoch;
/** Is e undef() (a pure definition with no initial value)? */
inline bool is_undef(const Expr &e) {
    auto c = e.as<Call>();
    return c && c->is_intrinsic("undef");
}
inline void bump_epoch() { g_definition_epoch.fetch_add(1, std::memory_order_relaxed); }
/** Bumped (with the epoch) to make every pipeline forget the kernel it used last: after
    clear_cache(), and when profiling is switched (instrumented and plain kernels differ). */
extern std::atomic<uint64_t> g_kernel_generation;
inline void forget_last_kernels() {
    g_kernel_generation.fetch_add(1, std::memory_order_relaxed);
    bump_epoch();
}
/** Records a change of f (its definitions, schedule or wrappers). */
inline void changed(FunctionContents &f) {
    f.changes.bump();
    bump_epoch();
}
inline void changed(ChangeCount &c) {
    c.bump();
    bump_epoch();
}

/** Throws Error for a null Func handle. */
void check_func(const std::shared_ptr<FunctionContents> &f);
/** Throws Error naming `what` (a directive not available there) for a Func defined with a Tuple. */
void check_one_value(const FunctionContents &f, const std::string &what);

/** How often e reads Func f (its own calls, in an update of f) at the place `args` (the
    update's left side) and elsewhere. */
struct SelfReads {
    int at_lhs = 0, elsewhere = 0;
    int total() const { return at_lhs + elsewhere; }
};
SelfReads self_reads(const FunctionContents &f, const std::vector<Expr> &args, const Expr &e);

/** The stage's name for messages: "f" or "f.update(0)". */
std::string stage_name(const FunctionContents &f, int stage);
Definition &stage_definition(FunctionContents &f, int stage);

/** An inline reduction of e (sum, argmax, ...): e with its shared parts bound, the RDom it uses
    (weft::Error naming `kind` where there is none, or two), and a new Func named kind_... of
    the free Vars e uses (vars), to be defined, with the call at them (args). */
struct InlineReduction {
    Expr e;
    std::shared_ptr<ReductionDomainContents> rdom;
    Func f;
    std::vector<Var> vars;
    std::vector<Expr> args;
};
InlineReduction inline_reduction_of(Expr e, const char *kind);

/** Type coercion for binary operators, per API.md. */
void match_types(Expr &a, Expr &b, const char *op);

/** Throws Error unless t (its element type) is one weft computes with: Bool, 8/16/32/64-bit
    integers, 32/64-bit floats. `what` names where it was given. */
void check_supported_type(Type t, const std::string &what);

}  // namespace internal
}  // namespace weft
