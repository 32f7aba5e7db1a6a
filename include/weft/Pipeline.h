// weft public API: Pipeline, Callable, the kernel cache.
#pragma once
#include "weft/AutoSchedule.h"
#include "weft/Func.h"
#include "weft/Schedule.h"

namespace weft {

class LazyBuffer;
namespace internal {
struct LazyArg;
struct PipelineContents;
struct CallableContents;
/** One argument of a Callable call, type-erased. */
struct CallArg {
    bool is_buffer = false;
    const BufferContents *buf = nullptr;  // for buffers (null: an undefined Buffer)
    Type type;                            // for scalars
    unsigned char bytes[8] = {};
};
template <typename T>
CallArg make_call_arg(T &&v) {
    using D = std::decay_t<T>;
    CallArg a;
    if constexpr (std::is_base_of_v<Buffer<void>, D>) {
        a.is_buffer = true;
        a.buf = v.contents().get();
    } else {
        static_assert(std::is_arithmetic_v<D>, "weft::Callable: arguments are Buffers or scalars");
        a.type = type_of<D>();
        std::memcpy(a.bytes, &v, sizeof(D));
    }
    return a;
}
}  // namespace internal

/** An argument of a Callable: an ImageParam or a Param. */
class Argument {
public:
    Argument(const ImageParam &p) : image_(p.contents()) {}
    template <typename T>
    Argument(const Param<T> &p) : param_(p.contents()) {}
    /** A Param known by its contents (any element type). */
    explicit Argument(std::shared_ptr<internal::ParamContents> p) : param_(std::move(p)) {}
    const std::shared_ptr<internal::ImageParamContents> &image() const { return image_; }
    const std::shared_ptr<internal::ParamContents> &param() const { return param_; }
    std::string name() const { return image_ ? image_->name : param_ ? param_->name : std::string("(undefined)"); }

private:
    std::shared_ptr<internal::ImageParamContents> image_;
    std::shared_ptr<internal::ParamContents> param_;
};

/** A compiled-on-first-call function: takes the listed arguments, then the output buffers. */
class Callable {
public:
    Callable() = default;
    explicit Callable(std::shared_ptr<internal::CallableContents> c) : c_(std::move(c)) {}
    template <typename... Args>
    int operator()(Args &&...args) const {
        internal::CallArg a[] = {internal::CallArg(), internal::make_call_arg(std::forward<Args>(args))...};
        return call(a + 1, sizeof...(Args));
    }
    int call(const internal::CallArg *args, size_t n) const;
    bool defined() const { return (bool)c_; }
    /** A call that does not run yet (weft/Lazy.h): the arguments as for a call (LazyBuffers,
        Buffers and scalars in the listed order), without the output buffer; `sizes` gives the
        output's extents (its mins are 0). Types, counts and shapes are checked here; nothing
        is compiled or run until a result is realized. */
    template <typename... Args>
    LazyBuffer defer(const std::vector<int> &sizes, Args &&...args) const;
    /** defer() for a pipeline with several outputs: the extents of each, one value each. */
    template <typename... Args>
    std::vector<LazyBuffer> defer_outputs(const std::vector<std::vector<int>> &sizes, Args &&...args) const;
    std::vector<LazyBuffer> defer_call(const std::vector<std::vector<int>> &sizes, std::vector<internal::LazyArg> args) const;
    const std::shared_ptr<internal::CallableContents> &contents() const { return c_; }

private:
    std::shared_ptr<internal::CallableContents> c_;
};

/** The output buffers of a realize: one Buffer, or a list of them. */
class RealizationArg {
public:
    RealizationArg(const Buffer<void> &b) : bufs{b} {}
    RealizationArg(std::initializer_list<Buffer<void>> l) : bufs(l) {}
    RealizationArg(const std::vector<Buffer<void>> &v) : bufs(v) {}
    std::vector<Buffer<void>> bufs;
};

/** One or more output Funcs computed in one call. */
class Pipeline {
public:
    Pipeline() = default;
    Pipeline(const Func &output);
    Pipeline(const std::vector<Func> &outputs);
    std::vector<Func> outputs() const;
    Realization realize(const std::vector<int> &sizes, const Target &t = Target::host());
    /** Fills existing buffers, one per output (their mins are respected). */
    void realize(const RealizationArg &outs, const Target &t = Target::host());
    /** Creates a callable; compiles nothing until its first call. */
    Callable compile_to_callable(const std::vector<Argument> &args, const Target &t = Target::host());
    /** The lowered IR (after every pass) for these output shapes and this target, as text.
        It starts with the loop nest (see loop_nest). */
    std::string lowered_ir(const std::vector<int> &sizes, const Target &t = Target::host());
    /** Compiles now what realize(sizes, t) (or realize(outs, t)) would run, with the inputs
        bound now (ImageParam::set; Params' values are not part of the kernel), so that the call
        itself compiles nothing: Halide's compile_jit, for kernels that are keyed on shapes.
        Nothing runs and no output is written. */
    void compile_jit(const std::vector<int> &sizes, const Target &t = Target::host());
    void compile_jit(const RealizationArg &outs, const Target &t = Target::host());
    /** The loop nest as text (Halide's print_loop_nest): each loop with its kind and range, each
        allocation with its size and memory, which Funcs each loop body computes, the branches.
        With sizes, what a call with those output sizes runs (its automatic schedule, where the
        pipeline has no schedule directive), ranges as numbers; without, the pipeline's own
        schedule lowered for any shape, ranges as expressions of the buffers' fields. */
    std::string loop_nest(const std::vector<int> &sizes = {}, const Target &t = Target::host());
    /** Prints loop_nest(sizes, t) on stdout. */
    void print_loop_nest(const std::vector<int> &sizes = {}, const Target &t = Target::host());
    /** Writes the lowered IR after every pass (loop nest first) to filename, as text or as a
        self-contained HTML page (Halide's compile_to_lowered_stmt). args lists the pipeline's
        ImageParams and Params, as for compile_to_callable: one the pipeline uses and args lacks
        is a weft::Error. Lowered for any shape unless sizes are given (then as lowered_ir). An
        Error where the file cannot be written. */
    void compile_to_lowered_stmt(const std::string &filename, const std::vector<Argument> &args,
                                 StmtOutputFormat fmt = StmtOutputFormat::Text, const Target &t = Target::host(),
                                 const std::vector<int> &sizes = {});
    /** The schedule every Func of the pipeline has now (the inlined ones too), as a value. */
    Schedule get_schedule() const;
    /** Gives the pipeline's Funcs schedule s, in place of the ones they have: the same as
        making, on Funcs with the default schedule, the calls s.cpp_source() prints, each
        checked as when a user makes it. s must name the pipeline's Funcs (as get_schedule()
        does) and their loops; a Func that s does not name keeps its schedule. On an error
        (a weft::Error naming the Func and the call) every Func keeps the schedule it had. */
    void apply_schedule(const Schedule &s);
    /** Reads C++ schedule calls, as Schedule::cpp_source() prints them or as people write them
        in Halide's style, and gives the pipeline exactly the schedule they make: the text is the
        whole schedule. Every Func of the pipeline starts from the default schedule (a Func the
        text does not name gets it; an empty text gives it to every Func), then the calls are
        made in order through the public API, each checked as when a user makes it.

        The text is statements of C++: `Var xo("xo"), xi;` and `RVar r_x("r.x");` declarations
        (optional: an undeclared name is the loop of that name); `Stage s = f.update(0).
        specialize(w > 64);` (later calls on s go to that specialization); and calls on a Func
        (by its name in the pipeline, or that name made a C++ identifier: "f$2" or f_2) or a
        Stage, chained or not: f.split(x, xo, xi, 8, TailStrategy::GuardWithIf), fuse, reorder,
        tile(x, y, xo, yo, xi, yi, 8, 8) and tile(x, y, xi, yi, 8, 8), vectorize(x) and
        vectorize(x, 8) (also unroll, parallel), serial, gpu_blocks, gpu_threads, gpu_tile,
        gpu_single_thread, atomic, prefetch, specialize, compute_with, update(k), compute_root,
        compute_inline, compute_at(g, y), store_root, store_at, bound, store_in(MemoryType::X),
        reorder_storage, align_storage, fold_storage, align_bounds, store_nontemporal,
        load_ahead. The conveniences make the calls weft's Func makes for them (vectorize(x, 8)
        splits x into x and x_vi). Arguments that are values are constants (combined as C++
        combines them), the pipeline's Params by name, input shapes (in.extent(0),
        in.width()), + - * / %, comparisons, && || !, min, max, select, clamp, abs and casts.
        Comments, blank lines, `using namespace weft;` and weft:: are allowed.

        On any error — text that does not read as such C++, an unknown Func, call, loop or
        name, a wrong number of arguments, a compute_at / store_at at a Func that does not use
        this one (directly or through others) or at a loop it never has, a call the API refuses
        — every Func keeps the schedule it had, and the weft::Error says "schedule line N:" and
        what is wrong there. Text of more than 1 MiB is refused. What only lowering checks
        (e.g. a compute_with the loops cannot fuse) is reported when the pipeline is compiled,
        as for calls made in C++. */
    void apply_schedule_source(const std::string &cpp);
    /** Chooses a schedule for the estimated shapes (Func::set_estimates on the outputs,
        ImageParam::set_estimates, Param::set_estimate) and gives it to the pipeline's Funcs, in
        place of the ones they have. A missing estimate is a weft::Error naming the Func or input
        and the dimension. Never changes results (no float reassociation). */
    AutoScheduleResult auto_schedule(const Target &t = Target::host(), const AutoScheduleOptions &o = {});
    const std::shared_ptr<internal::PipelineContents> &contents() const { return c_; }

private:
    std::shared_ptr<internal::PipelineContents> c_;
};

struct CacheStats {
    uint64_t hits = 0, misses = 0, compilations = 0, entries = 0;
    /** Compilations of shape-generic kernels (after too many distinct shapes of one pipeline). */
    uint64_t generic_compilations = 0;
    /** Entries dropped by the LRU bound. */
    uint64_t evictions = 0;
    /** Kernels loaded from the disk cache (WEFT_CACHE_DIR) instead of compiled, and written to it. */
    uint64_t disk_hits = 0, disk_writes = 0;
    /** Milliseconds spent making kernels in this process (lowering, then LLVM's or NVRTC's
        compilation or a disk cache load), summed over threads; automatic scheduling is not in it. */
    double compile_ms = 0;
};
CacheStats cache_stats();
/** The memory of pipelines' own buffers (intermediate stages; not the Buffers a user makes),
    from the runtime's pool: bytes held by running pipelines now, the most held at once since
    reset_peak_memory(), bytes of freed blocks kept for reuse, and how many blocks were taken
    from the system (none in steady state: later calls reuse the pool's). */
struct MemoryStats {
    uint64_t in_use = 0, peak = 0, pooled = 0, allocations = 0;
};
MemoryStats memory_stats();
/** Starts a new peak: memory_stats().peak becomes what is held now. */
void reset_peak_memory();
void clear_cache();
/** Most entries kept in the kernel cache (LRU); default 256. */
void set_cache_capacity(size_t n);
/** Distinct shapes of one pipeline after which a shape-generic kernel is used; default 8. */
void set_max_specializations(int n);
/** Prints lowered IR and LLVM IR of each compile (also WEFT_DEBUG=1). */
void set_debug(bool on);
bool debug_enabled();

/** Profiling (also WEFT_PROFILE=1, which prints the report at exit): pipelines compiled while
    it is on time each Func's computation (exclusive of producers computed inside it, summed
    over threads). */
void set_profile(bool on);
bool profile_enabled();
/** A table of time per Func since the last reset. */
std::string profile_report();
void reset_profile();

/** Is a CUDA driver and device present? */
bool cuda_available();

}  // namespace weft
