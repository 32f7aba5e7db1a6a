// Schedules as values: how each Func and each of its stages is computed, apart from what
// it computes (its definitions, in lang/Function.h).
//
// Every struct here is plain data: copyable, comparable with ==, and (for a whole pipeline,
// PipelineSchedule) serialized to text and read back exactly (ScheduleText.cpp), printed as
// the C++ schedule calls that reproduce it (ScheduleSource.cpp), and applied to a pipeline
// (src/pipeline/ApplySchedule.cpp). The cache key is made from the same serializer.
//
// Funcs, inputs and loops are named by their names. Inside a FunctionContents (what the
// front end writes) a level or a prefetch also keeps a pointer to the Func or input it names,
// so that two Funcs with one name stay apart; those pointers are not part of the value
// (== and the serializer ignore them). In a PipelineSchedule, names are the pipeline's
// unique names (a second Func "f" is "f$2"), and the pointers are unset.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>
#include "ir/IR.h"

namespace weft {
namespace internal {

struct FunctionContents;

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
    const void *src = nullptr;  // FunctionContents, ImageParamContents or BufferContents (not part of the value)
    std::string src_name, var;
    Expr offset;
};

/** One loop nest: the schedule of a stage, or of one of its specializations. */
struct StageSchedule {
    std::vector<Split> splits;
    std::vector<Dim> dims;  // innermost first
    std::vector<PrefetchSpec> prefetches;
    bool single_thread = false;    // gpu_single_thread(): the whole stage is one GPU thread's kernel
    bool atomic = false;           // atomic(): the update's read-modify-write is atomic; RVars may be parallel
    bool atomic_override = false;  // atomic(true): without the check that the update is order-independent
    std::vector<std::string> mma;  // gpu_mma(i, j, k): the three loops a warp's tensor-core step computes
};

struct Specialization {
    Expr condition;
    StageSchedule schedule;
};

/** compute_with(parent stage, var, align): this stage's loops from the outermost down to var
    are fused with the parent stage's loops of the same names; in each iteration of the fused
    loops the parent's part runs first. */
struct FuseLevel {
    std::weak_ptr<FunctionContents> func;  // the parent Func (not part of the value)
    std::string func_name;                 // empty: not fused
    int stage = 0;                         // the parent's stage: 0 pure definition, k update(k - 1)
    std::string var;
    std::vector<std::pair<std::string, LoopAlignStrategy>> align;  // per fused loop; others Auto
    bool fused() const { return !func_name.empty(); }
};

/** A stage's schedule: its loop nest, its specializations (tried in order before it) and
    the stage it is computed with, if any. */
struct DefinitionSchedule {
    StageSchedule schedule;
    std::vector<Specialization> specializations;
    FuseLevel fuse;
};

struct LoopLevelSpec {
    enum Kind { Inline, Root, At } kind = Inline;
    std::weak_ptr<FunctionContents> func;  // (not part of the value)
    std::string func_name, var;
};

struct BoundSpec {
    std::string var;
    Expr min, extent;
};
/** align_storage(var, alignment): var's storage extent padded up to a multiple of alignment. */
struct StorageAlign {
    std::string var;
    int64_t alignment = 1;
};
/** fold_storage(var, factor): var's storage is a ring of `factor` slots (coordinate mod factor). */
struct StorageFold {
    std::string var;
    int64_t factor = 1;
};
/** align_bounds(var, modulus, remainder): the region computed along var widened to start at
    remainder mod modulus and span a multiple of modulus. */
struct BoundAlign {
    std::string var;
    int64_t modulus = 1, remainder = 0;
};

/** The Func-level schedule: where it is computed and stored, and how its storage looks. */
struct FuncSchedule {
    LoopLevelSpec compute, store;
    bool store_set = false;
    /** hoist_storage: where the allocation is made (Root or At); Inline = where it is stored. */
    LoopLevelSpec hoist;
    std::vector<BoundSpec> bounds;
    MemoryType memory = MemoryType::Auto;
    std::vector<std::string> storage_order;  // innermost first; empty = the argument order
    std::vector<StorageAlign> storage_align;  // one per Var at most, in the order given
    std::vector<BoundAlign> bound_align;      // one per Var at most, in the order given
    std::vector<StorageFold> storage_fold;    // one per Var at most, in the order given
    bool nontemporal = false;                 // stores bypass the caches (see Func::store_nontemporal)
    bool load_ahead = false;                  // computed one iteration ahead (see Func::load_ahead)
};

/** One Func's whole schedule, by the Func's name (unique within a pipeline). */
struct FuncScheduleValue {
    std::string func;
    std::vector<std::string> args;  // the Func's pure Vars
    FuncSchedule schedule;
    std::vector<DefinitionSchedule> stages;  // the pure definition, then each update
    /** Each stage's loops before any directive (default_stage_schedule's dims), from the
        definitions: what the directives of `stages` start from. */
    std::vector<std::vector<Dim>> initial_loops;
};

/** A wrapper Func made by a schedule (Func::in, Func::clone_in, ImageParam::in, Buffer::in):
    what it wraps, its name and the consumers that read it instead, by unique names. */
struct WrapperValue {
    std::string of;       // the wrapped Func or input
    std::string wrapper;  // the wrapper Func
    std::vector<std::string> consumers;  // empty: every consumer (in() with no argument)
    bool clone = false;   // clone_in(): a copy of the definition, not a call of it
};
bool operator==(const WrapperValue &a, const WrapperValue &b);

/** The schedule of every Func of a pipeline, producers first. */
struct PipelineSchedule {
    /** The wrappers, each after those it wraps or is read by (so that they can be made in
        this order); their Funcs' schedules are among `funcs`. */
    std::vector<WrapperValue> wrappers;
    std::vector<FuncScheduleValue> funcs;
    const FuncScheduleValue *find(const std::string &func) const;
};

bool operator==(const Split &a, const Split &b);
bool operator==(const Dim &a, const Dim &b);
bool operator==(const PrefetchSpec &a, const PrefetchSpec &b);
bool operator==(const StageSchedule &a, const StageSchedule &b);
bool operator==(const Specialization &a, const Specialization &b);
bool operator==(const FuseLevel &a, const FuseLevel &b);
bool operator==(const DefinitionSchedule &a, const DefinitionSchedule &b);
bool operator==(const LoopLevelSpec &a, const LoopLevelSpec &b);
bool operator==(const BoundSpec &a, const BoundSpec &b);
bool operator==(const StorageAlign &a, const StorageAlign &b);
bool operator==(const StorageFold &a, const StorageFold &b);
bool operator==(const BoundAlign &a, const BoundAlign &b);
bool operator==(const FuncSchedule &a, const FuncSchedule &b);
bool operator==(const FuncScheduleValue &a, const FuncScheduleValue &b);
bool operator==(const PipelineSchedule &a, const PipelineSchedule &b);
inline bool operator!=(const StageSchedule &a, const StageSchedule &b) { return !(a == b); }
inline bool operator!=(const FuncSchedule &a, const FuncSchedule &b) { return !(a == b); }
inline bool operator!=(const PipelineSchedule &a, const PipelineSchedule &b) { return !(a == b); }

/** s with every name passed through `name` and every Expr through `expr` (the cache key
    canonicalises names this way). */
PipelineSchedule rename_schedule(const PipelineSchedule &s, const std::function<std::string(const std::string &)> &name,
                                 const std::function<Expr(const Expr &)> &expr);

/** The default loop nest of a stage: the pure Vars (innermost first) for the pure definition;
    the RVars, then the pure Vars the update writes at, for an update. */
StageSchedule default_stage_schedule(const std::vector<std::string> &pure_args, const std::vector<Expr> &stage_args,
                                     const std::vector<std::string> &rvars, bool is_update);

/** The words for each value of a schedule's enums: in the text form, and in C++ (for a loop
    type, the call that sets it). One table per enum, read by the text, the C++ printer and
    apply_schedule(). */
struct ScheduleWord {
    int value;
    const char *text, *cpp;
};
const std::vector<ScheduleWord> &tail_words();    // TailStrategy
const std::vector<ScheduleWord> &loop_words();    // ForType
const std::vector<ScheduleWord> &memory_words();  // MemoryType
const std::vector<ScheduleWord> &align_words();   // LoopAlignStrategy
const ScheduleWord &word_of(const std::vector<ScheduleWord> &words, int value);
/** The entry whose text is w, or null. */
const ScheduleWord *word_named(const std::vector<ScheduleWord> &words, const std::string &w);
/** "a, b or c": the texts, for messages. */
std::string word_list(const std::vector<ScheduleWord> &words);

// ---------------- text (ScheduleText.cpp) ----------------
/** The schedule as text: one directive a line, names quoted, Exprs as typed prefix forms
    (floats by their bits), so parse_schedule() gives back an equal value. */
std::string serialize_schedule(const PipelineSchedule &s);
/** Reads serialize_schedule()'s text; throws Error naming the line for anything else. */
PipelineSchedule parse_schedule(const std::string &text);
/** One Expr in the serializer's form, and back. */
std::string serialize_expr(const Expr &e);
Expr parse_expr(const std::string &text);

// ---------------- as directives (ScheduleDirectives.cpp) ----------------
/** One call of the public scheduling API. A schedule value is applied by making these calls
    from the default schedule (so each is checked as when a user makes it), and printed as C++
    by printing them. */
struct Directive {
    enum Op {
        ComputeRoot, ComputeInline, ComputeAt, StoreRoot, StoreAt, Bound, StoreIn, ReorderStorage, StoreNontemporal,
        LoadAhead, AlignStorage, AlignBounds, FoldStorage, HoistStorageRoot, HoistStorage,  // Func-level
        Specialize, Split, Fuse, Atomic, Reorder, Loop, Prefetch, SingleThread, Mma,  // stage-level
        ComputeWith,  // stage-level: names = parent Func, var, then each aligned loop; exprs = parent
                      // stage, then each loop's LoopAlignStrategy
        Wrap  // func = the wrapped Func or input; names = the wrapper's name, then its consumers
              // (none: all); flag = clone_in
    } op;
    std::string func;
    int stage = 0;                 // 0: the pure definition, k: update(k - 1)
    int spec = -1;                 // the specialization the call is made on (-1: the stage itself)
    std::vector<std::string> names;   // Vars, loops, Funcs, in the call's order
    std::vector<bool> rvars;          // for Reorder and Split/Fuse/Loop: which names are RVars
    std::vector<Expr> exprs;          // factors, bounds, conditions, offsets
    TailStrategy tail = TailStrategy::Auto;
    ForType for_type = ForType::Serial;
    MemoryType memory = MemoryType::Auto;
    bool flag = false;  // atomic(true)
};
/** The calls that give exactly schedule s starting from the default schedule: for each Func
    (in s's order), its Func-level calls, then for each stage, each specialization's calls
    (specialize() first: it copies the stage's schedule as it is then), then the stage's own. */
std::vector<Directive> schedule_directives(const PipelineSchedule &s);
/** The schedule that `calls` give from the default one, as a value, touching no Func:
    `initial` names the Funcs and their initial loops (a snapshot's `given`). The calls are
    those automatic scheduling makes (compute and store levels, split, fuse, reorder, loop
    types); they are checked when the schedule is lowered, not here. */
PipelineSchedule schedule_with_directives(const PipelineSchedule &initial, const std::vector<Directive> &calls);

// ---------------- C++ (ScheduleSource.cpp) ----------------
/** C++ statements with the public schedule calls that give exactly this schedule when run
    after the algorithm: Vars and RVars that splits introduce are declared first. Funcs are
    named by C++ identifiers made from their names. */
std::string schedule_cpp_source(const PipelineSchedule &s);
/** The C++ identifier for a weft name ("f$2" -> "f_2"). */
std::string cpp_identifier(const std::string &name);

// ---------------- C++ read back (ScheduleParse.cpp) ----------------
/** Reads C++ schedule calls typed by a user: what schedule_cpp_source() prints, and the
    Halide-style calls people write by hand (tile, vectorize(x, 8), chained calls, calls on
    Stage variables, comments, Var/RVar declarations or none). Gives the calls of the public
    API they make, in order, as apply_directives_to() takes them (from the default schedule):
    the conveniences (tile, vectorize(x, n), gpu_tile, ...) are expanded into the calls weft's
    Func makes for them, with the same invented names.

    `current` names the pipeline's Funcs (unique names, or their cpp_identifier forms in the
    text), their Vars and each stage's initial loops. `params` maps the names the text may use
    in Exprs to the Exprs of the schedule value: each Param's unique name to its Variable, and
    each input's shape fields ("in.extent.0", read as in.extent(0)) to theirs; the inputs named
    there are also what prefetch() may name. `lines`, if given, gets the line of the text each
    call comes from. Anything else is a weft::Error "schedule line N: ..." naming what is
    wrong; nothing is applied here, so the call's own checks come when the calls are made. */
std::vector<Directive> parse_schedule_source(const std::string &text, const PipelineSchedule &current,
                                             const std::map<std::string, Expr> &params,
                                             std::vector<int> *lines = nullptr);

}  // namespace internal
}  // namespace weft
