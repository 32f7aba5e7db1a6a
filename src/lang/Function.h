// The contents behind Func, RDom, ImageParam: definitions and schedules.
#pragma once
#include <atomic>
#include "ir/IR.h"
#include "weft/Func.h"

namespace weft {
namespace internal {

struct ReductionVariable {
    std::string var;
    Expr min, extent;
};

struct ReductionDomainContents {
    std::string name;
    std::vector<ReductionVariable> domain;
    Expr predicate;  // conjunction of where() conditions; undefined = none
};

struct Split {
    enum Kind { SplitVar, FuseVars } kind;
    std::string old_var, outer, inner;  // for FuseVars: inner, outer -> old_var (the fused name)
    Expr factor;
    TailStrategy tail;
};

struct Dim {
    std::string var;
    ForType for_type = ForType::Serial;
    bool is_rvar = false;
};

struct PrefetchSpec {
    const void *src;  // FunctionContents, ImageParamContents or BufferContents
    std::string src_name, var;
    Expr offset;
};

struct StageSchedule {
    std::vector<Split> splits;
    std::vector<Dim> dims;  // innermost first
    std::vector<PrefetchSpec> prefetches;
    bool single_thread = false;  // gpu_single_thread(): the whole stage is one GPU thread's kernel
    bool atomic = false;         // atomic(): the update's read-modify-write is atomic; RVars may be parallel
};

struct Specialization {
    Expr condition;
    StageSchedule schedule;
};

struct Definition {
    std::vector<Expr> args;
    Expr value;
    std::shared_ptr<ReductionDomainContents> rdom;  // null for pure definitions
    StageSchedule schedule;
    std::vector<Specialization> specializations;  // tried in order before `schedule`
};

struct LoopLevelSpec {
    enum Kind { Inline, Root, At } kind = Inline;
    std::weak_ptr<FunctionContents> func;
    std::string func_name, var;
};

struct BoundSpec {
    std::string var;
    Expr min, extent;
};

struct FuncSchedule {
    LoopLevelSpec compute, store;
    bool store_set = false;
    std::vector<BoundSpec> bounds;
    MemoryType memory = MemoryType::Auto;
    std::vector<std::string> storage_order;  // innermost first; empty = the argument order
    bool nontemporal = false;                 // stores bypass the caches (see Func::store_nontemporal)
    bool load_ahead = false;                  // computed one iteration ahead (see Func::load_ahead)
};

struct FunctionContents {
    std::string name;
    std::vector<std::string> args;
    Type type;
    bool defined = false;
    Definition init;
    std::vector<Definition> updates;
    FuncSchedule schedule;
    std::shared_ptr<void> runner;  // Func::realize's own pipeline state (see src/pipeline)
    /** Wrapper Funcs made by in(): key null = for every consumer, else for that consumer. */
    std::map<const FunctionContents *, std::shared_ptr<FunctionContents>> wrappers;
};

/** The Func that `consumer` reads when it calls a Func, input or buffer with these wrappers. */
std::shared_ptr<FunctionContents> wrapper_for(
    const std::map<const FunctionContents *, std::shared_ptr<FunctionContents>> &wrappers,
    const FunctionContents *consumer);

/** Bumped by every change to any definition or schedule: the cached-call fast path compares it. */
extern std::atomic<uint64_t> g_definition_epoch;
inline void bump_epoch() { g_definition_epoch.fetch_add(1, std::memory_order_relaxed); }

/** The stage's name for messages: "f" or "f.update(0)". */
std::string stage_name(const FunctionContents &f, int stage);
Definition &stage_definition(FunctionContents &f, int stage);

/** Type coercion for binary operators, per API.md. */
void match_types(Expr &a, Expr &b, const char *op);

/** Throws Error unless t (its element type) is one weft computes with: Bool, 8/16/32/64-bit
    integers, 32/64-bit floats. `what` names where it was given. */
void check_supported_type(Type t, const std::string &what);

}  // namespace internal
}  // namespace weft
