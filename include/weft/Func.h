// weft public API: Var, RDom, Param, ImageParam, Func, Stage, Target.
#pragma once
#include <map>
#include <set>
#include <utility>
#include "weft/Buffer.h"
#include "weft/Tuple.h"

namespace weft {

namespace internal {
struct FunctionContents;
struct ReductionDomainContents;
struct ParamContents;
}  // namespace internal

/** A pure variable of a Func definition. */
class Var {
public:
    Var();
    explicit Var(const std::string &name) : name_(name) {}
    const std::string &name() const { return name_; }
    operator Expr() const;

private:
    std::string name_;
};

/** Halide's implicit Var: in a call's or a definition's arguments, `_` stands for as many
    implicit Vars `_0`, `_1`, ... as the Func, Buffer or ImageParam called has dimensions left
    (`f(x, _) = in(x, _) * 2` with a 3-D `in` defines f(x, _0, _1)); on the left of a pure
    definition, for the implicit Vars its value uses. At most one `_` per argument list. */
extern const Var _;
/** The implicit Vars `_` stands for, by name, for schedules (`f.vectorize(_0, 8)`). */
extern const Var _0, _1, _2, _3, _4, _5, _6, _7, _8, _9;

/** One dimension of a reduction domain (or a named reduction variable for splitting). */
class RVar {
public:
    /** A new reduction variable with a unique name (for splitting reduction loops). */
    RVar();
    explicit RVar(const std::string &name) : name_(name) {}
    RVar(std::shared_ptr<internal::ReductionDomainContents> d, int index);
    const std::string &name() const { return name_; }
    Expr min() const;
    Expr extent() const;
    operator Expr() const;
    const std::shared_ptr<internal::ReductionDomainContents> &domain() const { return dom_; }

private:
    std::string name_;
    std::shared_ptr<internal::ReductionDomainContents> dom_;
    int index_ = -1;
};

class ImageParam;

/** A multi-dimensional reduction domain. */
class RDom {
public:
    RDom() = default;
    RDom(const std::vector<std::pair<Expr, Expr>> &ranges, const std::string &name = "");
    RDom(Expr min0, Expr extent0, const std::string &name = "");
    RDom(Expr min0, Expr extent0, Expr min1, Expr extent1, const std::string &name = "");
    RDom(Expr min0, Expr extent0, Expr min1, Expr extent1, Expr min2, Expr extent2, const std::string &name = "");
    RDom(Expr min0, Expr extent0, Expr min1, Expr extent1, Expr min2, Expr extent2, Expr min3, Expr extent3,
         const std::string &name = "");
    /** Over a buffer's (or an ImageParam's) domain. */
    explicit RDom(const Buffer<void> &b);
    explicit RDom(const ImageParam &p);
    int dimensions() const;
    RVar operator[](int i) const;
    operator RVar() const;
    operator Expr() const;
    /** Restricts the domain to points where cond holds. Returns *this. */
    RDom where(Expr cond);
    bool defined() const { return (bool)dom_; }
    const std::shared_ptr<internal::ReductionDomainContents> &domain() const { return dom_; }
    RVar x, y, z, w;

private:
    void init();
    std::shared_ptr<internal::ReductionDomainContents> dom_;
};

/** A Var or an RVar: the name of a loop. */
class VarOrRVar {
public:
    VarOrRVar(const Var &v) : name_(v.name()), is_rvar_(false) {}
    VarOrRVar(const RVar &v) : name_(v.name()), is_rvar_(true) {}
    VarOrRVar(const RDom &r) : VarOrRVar(RVar(r)) {}
    const std::string &name() const { return name_; }
    bool is_rvar() const { return is_rvar_; }

private:
    std::string name_;
    bool is_rvar_;
};


/** A scalar input. */
template <typename T>
class Param;

namespace internal {
struct ParamContents {
    std::string name;
    Type type;
    union {
        int64_t i;
        uint64_t u;
        double f;
        unsigned char bytes[8];
    } value{};
    bool has_value = false;
    /** set_estimate(): the value automatic scheduling assumes (not part of any cache key). */
    union {
        unsigned char bytes[8];
    } estimate{};
    bool has_estimate = false;
    /** set_range(): the values a call may give it (an Error at the call where it is outside). */
    union {
        unsigned char bytes[8];
    } range_min{}, range_max{};
    bool has_min = false, has_max = false;
};
/** "" where the value (bytes of p's type) is inside p's range, else the message. */
std::string param_range_error(const ParamContents &p, const void *bytes);
Expr param_expr(const std::shared_ptr<ParamContents> &p);
}  // namespace internal

template <typename T>
class Param {
public:
    Param() : Param(internal::unique_name('p')) {}
    explicit Param(const std::string &name) : c_(std::make_shared<internal::ParamContents>()) {
        c_->name = name;
        c_->type = type_of<T>();
    }
    Param(const std::string &name, T def) : Param(name) { set(def); }
    /** With the range of values it may take (Halide's Param(name, default, min, max)): a call
        with a value outside [min, max] is a weft::Error naming the Param, before anything runs. */
    Param(const std::string &name, T def, T min, T max) : Param(name, def) { set_range(min, max); }
    void set_range(T min, T max) {
        set_min_value(min);
        set_max_value(max);
    }
    void set_min_value(T v) {
        std::memset(c_->range_min.bytes, 0, 8);
        std::memcpy(c_->range_min.bytes, &v, sizeof(T));
        c_->has_min = true;
    }
    void set_max_value(T v) {
        std::memset(c_->range_max.bytes, 0, 8);
        std::memcpy(c_->range_max.bytes, &v, sizeof(T));
        c_->has_max = true;
    }
    void set(T v) {
        std::memset(c_->value.bytes, 0, 8);
        std::memcpy(c_->value.bytes, &v, sizeof(T));
        c_->has_value = true;
    }
    T get() const {
        T v;
        std::memcpy(&v, c_->value.bytes, sizeof(T));
        return v;
    }
    /** The value automatic scheduling assumes (Pipeline::auto_schedule). */
    void set_estimate(T v) {
        std::memset(c_->estimate.bytes, 0, 8);
        std::memcpy(c_->estimate.bytes, &v, sizeof(T));
        c_->has_estimate = true;
    }
    const std::string &name() const { return c_->name; }
    Type type() const { return c_->type; }
    operator Expr() const { return internal::param_expr(c_); }
    const std::shared_ptr<internal::ParamContents> &contents() const { return c_; }

private:
    std::shared_ptr<internal::ParamContents> c_;
};

namespace internal {
struct ImageParamContents {
    std::string name;
    Type type;
    int dims;
    Buffer<void> bound;
    /** Wrapper Funcs made by in(): key null = for every consumer, else for that consumer. */
    std::map<const FunctionContents *, std::shared_ptr<FunctionContents>> wrappers;
    ChangeCount wrapper_changes;  // bumped when in() adds a wrapper
    /** set_estimates(): (min, extent) per dimension for automatic scheduling; undefined = none. */
    std::vector<std::pair<Expr, Expr>> estimates;
};
}  // namespace internal

/** One dimension of an ImageParam, as Exprs of the buffer bound at each call (Halide's
    ImageParam::dim(i)). */
class ParamDimension {
public:
    ParamDimension(Expr min, Expr extent, Expr stride)
        : min_(std::move(min)), extent_(std::move(extent)), stride_(std::move(stride)) {}
    Expr min() const { return min_; }
    Expr extent() const { return extent_; }
    Expr stride() const { return stride_; }
    /** min + extent - 1 */
    Expr max() const;

private:
    Expr min_, extent_, stride_;
};

/** A buffer input bound at each call. */
class ImageParam {
public:
    ImageParam() = default;
    ImageParam(Type t, int dims, const std::string &name = "");
    explicit ImageParam(std::shared_ptr<internal::ImageParamContents> c) : c_(std::move(c)) {}
    Expr operator()(const std::vector<Expr> &args) const;
    template <typename... Es>
    Expr operator()(Es... args) const { return (*this)(std::vector<Expr>{Expr(args)...}); }
    void set(const Buffer<void> &b);
    Buffer<void> get() const { return c_->bound; }
    const std::string &name() const { return c_->name; }
    Type type() const { return c_->type; }
    int dimensions() const { return c_->dims; }
    /** The bound buffer's min / extent / stride of dimension d, as Exprs. */
    Expr min(int d) const;
    Expr extent(int d) const;
    Expr stride(int d) const;
    /** Dimension d (an Error where there is none), and extent(0) / extent(1) / extent(2). */
    ParamDimension dim(int d) const;
    Expr width() const { return dim(0).extent(); }
    Expr height() const { return dim(1).extent(); }
    Expr channels() const { return dim(2).extent(); }
    /** min(0), min(1), the last x and y: the bound buffer's edges (Halide's spellings). */
    Expr left() const { return dim(0).min(); }
    Expr right() const { return dim(0).max(); }
    Expr top() const { return dim(1).min(); }
    Expr bottom() const { return dim(1).max(); }
    const std::shared_ptr<internal::ImageParamContents> &contents() const { return c_; }
    /** A wrapper Func that every consumer reads instead of this input (or only `consumer`):
        schedule it to copy a tile into a local buffer. */
    class Func in() const;
    class Func in(const class Func &consumer) const;
    /** The shape automatic scheduling assumes for this input: {min, extent} per dimension
        (integer constants, or Exprs of Params that have estimates). */
    ImageParam &set_estimates(const std::vector<std::pair<Expr, Expr>> &estimates);

private:
    std::shared_ptr<internal::ImageParamContents> c_;
};

/** What to compile for. Cheap to copy (shares immutable contents). */
class Target;
namespace internal {
/** Not for users: a CUDA target that needs no device, for lowering and compiling kernels with
    NVRTC only (its kernels cannot run; Target::cuda() is the one that runs them). */
Target cuda_target_without_device();
}

class Target {
public:
    enum class Arch { Host, CUDA };
    /** The CPU this process runs on: the same as Target::host(). */
    Target();
    /** The CPU this process runs on (the default). */
    static Target host();
    /** The CUDA GPU (throws Error where no CUDA driver and device exist). */
    static Target cuda();
    /** "host", "host-cuda" (or "cuda"), and either followed by "-<feature>" for each CPU
        feature to add (e.g. "host-cuda-avx512f"), or "-profile"; throws Error for anything else.
        The "profile" feature (Halide's Target::Profile): pipelines compiled for the target time
        each Func, as set_profile(true) does for every target; profile_report() gives the table,
        which is also printed on stderr at exit. */
    static Target from_string(const std::string &s);
    Arch arch() const;
    const std::string &cpu() const;
    bool has_feature(const std::string &f) const;
    Target without_feature(const std::string &f) const;
    Target with_feature(const std::string &f) const;
    /** Vector width in lanes for a type. */
    int natural_vector_size(Type t) const;
    template <typename T>
    int natural_vector_size() const { return natural_vector_size(type_of<T>()); }
    /** CPU name and features, e.g. "x86-64-znver5-avx-avx2-avx512-fma". */
    std::string str() const;
    bool operator==(const Target &o) const;
    bool operator!=(const Target &o) const { return !(*this == o); }
    /** LLVM's feature names that are enabled. */
    const std::set<std::string> &features() const;
    struct Data;
    const std::shared_ptr<const Data> &data() const { return d_; }

private:
    explicit Target(std::shared_ptr<const Data> d) : d_(std::move(d)) {}
    friend Target internal::cuda_target_without_device();
    std::shared_ptr<const Data> d_;
};

/** The host target (Halide's get_host_target). */
Target get_host_target();
/** The target WEFT_JIT_TARGET names (a Target::from_string text, e.g. "host-profile" or
    "host-cuda"), else the host (Halide's get_jit_target_from_environment, which reads
    HL_JIT_TARGET). A text from_string refuses is a weft::Error naming the variable. */
Target get_jit_target_from_environment();
/** The same for WEFT_TARGET (Halide's get_target_from_environment, HL_TARGET). */
Target get_target_from_environment();

class Func;
class Realization;
class Argument;
/** compile_to_lowered_stmt: plain text, or a page for a browser. Unscoped, as Halide's, so
    that weft::HTML (or HTML after using namespace weft) names it too. */
enum StmtOutputFormat { Text, HTML };

/** f(args): a call inside a definition, or the left side of one. */
class FuncRef {
public:
    FuncRef(std::shared_ptr<internal::FunctionContents> f, std::vector<Expr> args)
        : f_(std::move(f)), args_(std::move(args)) {}
    FuncRef &operator=(Expr e);
    FuncRef &operator=(const FuncRef &e);
    /** A definition with several values (see Tuple): the pure one, or an update giving as many
        values as the pure one, each of its type. */
    FuncRef &operator=(const Tuple &values);
    FuncRef &operator+=(Expr e);
    FuncRef &operator-=(Expr e);
    FuncRef &operator*=(Expr e);
    FuncRef &operator/=(Expr e);
    /** The call's value (weft::Error for a Func defined with a Tuple: use [i]). */
    operator Expr() const;
    /** Value i of a Func defined with a Tuple (0 is the value of a Func of one value). */
    Expr operator[](int i) const;
    /** How many values the Func has at each point (1 unless it is defined with a Tuple). */
    size_t size() const;

private:
    std::shared_ptr<internal::FunctionContents> f_;
    std::vector<Expr> args_;
};

/** A schedulable stage of a Func: its pure definition or one update. */
class Stage {
public:
    Stage(std::shared_ptr<internal::FunctionContents> f, int stage, int spec = -1)
        : f_(std::move(f)), stage_(stage), spec_(spec) {}
    Stage &split(const VarOrRVar &old, const VarOrRVar &outer, const VarOrRVar &inner, Expr factor,
                 TailStrategy tail = TailStrategy::Auto);
    Stage &fuse(const VarOrRVar &inner, const VarOrRVar &outer, const VarOrRVar &fused);
    Stage &reorder(const std::vector<VarOrRVar> &vars);
    template <typename... Vs>
    Stage &reorder(const VarOrRVar &v0, const VarOrRVar &v1, Vs... rest) {
        return reorder(std::vector<VarOrRVar>{v0, v1, VarOrRVar(rest)...});
    }
    Stage &tile(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &xo, const VarOrRVar &yo,
                const VarOrRVar &xi, const VarOrRVar &yi, Expr fx, Expr fy, TailStrategy tail = TailStrategy::Auto);
    Stage &tile(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &xi, const VarOrRVar &yi, Expr fx, Expr fy,
                TailStrategy tail = TailStrategy::Auto);
    Stage &vectorize(const VarOrRVar &v);
    Stage &vectorize(const VarOrRVar &v, Expr factor, TailStrategy tail = TailStrategy::Auto);
    Stage &unroll(const VarOrRVar &v);
    Stage &unroll(const VarOrRVar &v, Expr factor, TailStrategy tail = TailStrategy::Auto);
    Stage &parallel(const VarOrRVar &v);
    Stage &parallel(const VarOrRVar &v, Expr task_size, TailStrategy tail = TailStrategy::Auto);
    Stage &serial(const VarOrRVar &v);
    /** Splits an associative reduction (+, *, min, max): the RVars listed become pure Vars of
        a new intermediate Func (returned, to be scheduled: parallel, vectorized), which this
        stage then reduces over. */
    class Func rfactor(const std::vector<std::pair<RVar, Var>> &preserved);
    class Func rfactor(const RVar &r, const Var &v);
    /** GPU schedules: loops that become a kernel's blocks and threads (x innermost). */
    Stage &gpu_blocks(const VarOrRVar &x);
    Stage &gpu_blocks(const VarOrRVar &x, const VarOrRVar &y);
    Stage &gpu_blocks(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &z);
    Stage &gpu_threads(const VarOrRVar &x);
    Stage &gpu_threads(const VarOrRVar &x, const VarOrRVar &y);
    Stage &gpu_threads(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &z);
    Stage &gpu_tile(const VarOrRVar &x, const VarOrRVar &xo, const VarOrRVar &xi, Expr f,
                    TailStrategy tail = TailStrategy::Auto);
    Stage &gpu_tile(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &xo, const VarOrRVar &yo,
                    const VarOrRVar &xi, const VarOrRVar &yi, Expr fx, Expr fy, TailStrategy tail = TailStrategy::Auto);
    /** GPU: the whole stage runs as a kernel of one block of one thread (a final, small step
        on data that is on the device, e.g. adding up partial sums into a scalar). */
    Stage &gpu_single_thread();
    /** GPU tensor cores: this update, f(..) += float(a) * float(b) with a and b float16 (or
        both bfloat16) values read from memory, has its innermost loops i and j (2 iterations
        each) and k (an RVar's loop of 16) computed by one warp-wide mma.sync.m16n8k16 per
        warp: the 32 threads of a warp and their i x j iterations must be the 16 x 8 tile of
        the instruction's accumulator layout (lane l holds rows l/4 and l/4 + 8, columns
        2(l%4) and 2(l%4) + 1: the lowering finds which of i, j is the row half and checks the
        layout, the operands and that every thread of the block takes part). Products are
        exact and summed in float32 in the tensor core's order (not the loop's). No effect on
        the CPU; on the device emulation the same sums are computed in the loop's order. */
    Stage &gpu_mma(const VarOrRVar &i, const VarOrRVar &j, const VarOrRVar &k);
    /** Makes this update's read-modify-write of the Func atomic, so that its reduction loops
        (RVars) may be parallel or GPU blocks and threads: a histogram, a scatter-add. The update
        must read the Func only at the element it writes; unless override_associativity_test,
        it must be f(..) = f(..) op e with op one of +, -, *, min, max (then the result does not
        depend on the order; floating-point sums still round differently from run to run).
        Loops of an atomic update are not vectorized (its stores are one element each). */
    Stage &atomic(bool override_associativity_test = false);
    /** Prefetches the data of `src` that iteration at + offset of loop `at` will read (into the
        CPU's caches; no effect in GPU kernels). */
    Stage &prefetch(const class Func &src, const VarOrRVar &at, Expr offset = 1);
    Stage &prefetch(const ImageParam &src, const VarOrRVar &at, Expr offset = 1);
    Stage &prefetch(const Buffer<void> &src, const VarOrRVar &at, Expr offset = 1);
    /** A runtime branch: where cond holds (cond may use Params and buffer shapes), this stage
        runs with the schedule set on the returned Stage, which starts as a copy of this one. */
    Stage specialize(Expr cond);
    /** Halide's compute_with: this stage's loops from the outermost down to `var` are fused
        with the loops of the same names of stage s (another Func's, computed at the same
        level): one pass over both loop nests, s's body first in each iteration (horizontal
        fusion, e.g. two Funcs that read the same input rows). Where their ranges differ, the
        fused loops run over both, each stage only over its own iterations, lined up as `align`
        says (per loop; AlignStart, AlignEnd, or NoAlign = Auto). Lowering checks the rest and
        gives a weft::Error where the two cannot be fused (neither may read the other). */
    Stage &compute_with(const Stage &s, const VarOrRVar &var, LoopAlignStrategy align = LoopAlignStrategy::Auto);
    Stage &compute_with(const Stage &s, const VarOrRVar &var,
                        const std::vector<std::pair<VarOrRVar, LoopAlignStrategy>> &align);
    Stage &compute_with(const class Func &f, const VarOrRVar &var, LoopAlignStrategy align = LoopAlignStrategy::Auto);
    Stage &compute_with(const class Func &f, const VarOrRVar &var,
                        const std::vector<std::pair<VarOrRVar, LoopAlignStrategy>> &align);
    std::string name() const;

protected:
    std::shared_ptr<internal::FunctionContents> f_;
    int stage_;
    int spec_;  // -1: the stage's own schedule; else a specialization's
};

/** A function over an integer domain, defined by a pure definition and update definitions. */
class Func {
public:
    Func();
    explicit Func(const std::string &name);
    explicit Func(std::shared_ptr<internal::FunctionContents> c) : c_(std::move(c)) {}

    FuncRef operator()(const std::vector<Expr> &args) const;
    FuncRef operator()(const std::vector<Var> &args) const;
    template <typename... Args>
    FuncRef operator()(Args... args) const {
        return (*this)(std::vector<Expr>{Expr(args)...});
    }

    const std::string &name() const;
    bool defined() const;
    std::vector<Var> args() const;
    int dimensions() const;
    /** The type of its value (weft::Error for a Func defined with a Tuple: see output_types). */
    Type type() const;
    /** The type of each of its values (one, unless it is defined with a Tuple). */
    std::vector<Type> output_types() const;
    /** How many values it has at each point. */
    int outputs() const;
    int num_update_definitions() const;
    /** The Stage of update i, for scheduling. */
    Stage update(int i = 0);

    // Schedule of the pure definition (see Stage).
    Func &split(const VarOrRVar &old, const VarOrRVar &outer, const VarOrRVar &inner, Expr factor,
                TailStrategy tail = TailStrategy::Auto);
    Func &fuse(const VarOrRVar &inner, const VarOrRVar &outer, const VarOrRVar &fused);
    Func &reorder(const std::vector<VarOrRVar> &vars);
    template <typename... Vs>
    Func &reorder(const VarOrRVar &v0, const VarOrRVar &v1, Vs... rest) {
        return reorder(std::vector<VarOrRVar>{v0, v1, VarOrRVar(rest)...});
    }
    Func &tile(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &xo, const VarOrRVar &yo, const VarOrRVar &xi,
               const VarOrRVar &yi, Expr fx, Expr fy, TailStrategy tail = TailStrategy::Auto);
    Func &tile(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &xi, const VarOrRVar &yi, Expr fx, Expr fy,
               TailStrategy tail = TailStrategy::Auto);
    Func &vectorize(const VarOrRVar &v);
    Func &vectorize(const VarOrRVar &v, Expr factor, TailStrategy tail = TailStrategy::Auto);
    Func &unroll(const VarOrRVar &v);
    Func &unroll(const VarOrRVar &v, Expr factor, TailStrategy tail = TailStrategy::Auto);
    Func &parallel(const VarOrRVar &v);
    Func &parallel(const VarOrRVar &v, Expr task_size, TailStrategy tail = TailStrategy::Auto);
    Func &serial(const VarOrRVar &v);
    Func &gpu_blocks(const VarOrRVar &x);
    Func &gpu_blocks(const VarOrRVar &x, const VarOrRVar &y);
    Func &gpu_blocks(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &z);
    Func &gpu_threads(const VarOrRVar &x);
    Func &gpu_threads(const VarOrRVar &x, const VarOrRVar &y);
    Func &gpu_threads(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &z);
    Func &gpu_tile(const VarOrRVar &x, const VarOrRVar &xo, const VarOrRVar &xi, Expr f,
                   TailStrategy tail = TailStrategy::Auto);
    Func &gpu_tile(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &xo, const VarOrRVar &yo,
                   const VarOrRVar &xi, const VarOrRVar &yi, Expr fx, Expr fy, TailStrategy tail = TailStrategy::Auto);
    Func &gpu_single_thread();
    /** (Stage::gpu_mma: an update's; on the pure definition it is an Error.) */
    Func &gpu_mma(const VarOrRVar &i, const VarOrRVar &j, const VarOrRVar &k);
    Func &bound(const Var &v, Expr min, Expr extent);
    Func &prefetch(const Func &src, const VarOrRVar &at, Expr offset = 1);
    Func &prefetch(const ImageParam &src, const VarOrRVar &at, Expr offset = 1);
    Func &prefetch(const Buffer<void> &src, const VarOrRVar &at, Expr offset = 1);
    /** See Stage::specialize (for the pure definition). */
    Stage specialize(Expr cond);
    /** See Stage::compute_with (for the pure definition). */
    Func &compute_with(const Stage &s, const VarOrRVar &var, LoopAlignStrategy align = LoopAlignStrategy::Auto);
    Func &compute_with(const Stage &s, const VarOrRVar &var,
                       const std::vector<std::pair<VarOrRVar, LoopAlignStrategy>> &align);
    Func &compute_with(const Func &f, const VarOrRVar &var, LoopAlignStrategy align = LoopAlignStrategy::Auto);
    Func &compute_with(const Func &f, const VarOrRVar &var,
                       const std::vector<std::pair<VarOrRVar, LoopAlignStrategy>> &align);

    Func &compute_root();
    Func &compute_at(const Func &consumer, const VarOrRVar &loop);
    /** compute_at / store_at a LoopLevel: root, inlined, or a loop of a consumer (Halide's
        LoopLevel forms; the level is read when the call is made). */
    Func &compute_at(const class LoopLevel &level);
    Func &store_at(const class LoopLevel &level);
    Func &compute_inline();
    Func &store_root();
    Func &store_at(const Func &consumer, const VarOrRVar &loop);
    /** Halide's hoist_storage: the allocation of this Func's storage moves out to a loop of a
        consumer at or outside its store_at level (or to the root, outside every loop), made once
        there at the largest size any iteration needs, instead of at every iteration of the loops
        between. Nothing else changes: where the values are computed and kept (store_at's
        sliding window and folding) stays as it is. Lowering says why where it cannot be done
        (weft::Error): a loop that does not contain the storage, a parallel, vectorized or GPU
        loop between (their iterations would share one buffer), a size with no bound at that
        level, an output. */
    Func &hoist_storage(const Func &consumer, const VarOrRVar &loop);
    Func &hoist_storage(const class LoopLevel &level);
    Func &hoist_storage_root();
    Func &store_in(MemoryType t);
    /** Writes of this Func's aligned vector stores bypass the caches (non-temporal, streaming
        stores on x86): for an output written once and not read again soon, so that writing
        does not first read each line into the cache, nor evict data that will be reused.
        Slower than plain stores when the output is read again while still in the cache.
        Stores whose alignment is not known at compile time check it at run time (a 64-byte
        vector store streams when its address is a multiple of 64). No effect on GPU code. */
    Func &store_nontemporal(bool on = true);
    /** Halide's tracing, for debugging: each value stored to this Func (every stage) prints a
        line "Store f.0(x, y) = v", each value read from it (by any Func or stage) "Load f.0(x,
        y) = v", and each realization of it (an intermediate Func's storage) "Begin realization
        f.0(min, extent, ...)" and "End realization f.0(...)". Lines as print()'s: on stderr,
        each whole; from CUDA kernels, on stdout. The traced pipeline is compiled apart. */
    Func &trace_stores();
    Func &trace_loads();
    Func &trace_realizations();
    /** Software pipelining of a Func computed at a serial loop (compute_at(g, v)) that only
        reads inputs and Funcs not written inside that loop (typically a per-thread copy of the
        next tile of an input, store_in(MemoryType::Register)): its values for iteration v + 1
        are computed during iteration v, right after their last read, and those for the first
        iteration before the loop. On a GPU the next tile's loads are then in flight while the
        current one is used. The results are the same; the Func's storage lives across the
        loop. Lowering says why where it cannot be done (weft::Error). */
    Func &load_ahead(bool on = true);

    /** The region automatic scheduling assumes an output is computed over (Pipeline::
        auto_schedule): set_estimate for one Var, set_estimates for every dimension in order,
        each {min, extent}. Integer constants, or Exprs of Params that have estimates. Not part
        of the schedule: the compiled code never depends on them. */
    Func &set_estimate(const Var &v, Expr min, Expr extent);
    Func &set_estimates(const std::vector<std::pair<Expr, Expr>> &estimates);

    /** A wrapper Func that all consumers read instead of this one (in(g): only g), to be
        scheduled like any Func, e.g. to pack a tile into a local buffer. */
    Func in();
    Func in(const Func &consumer);
    Func in(const std::vector<Func> &consumers);
    /** Halide's clone_in: a copy of this Func (its pure definition and its updates, reading
        what this one reads) that the given consumers read instead of this one; scheduled on its
        own (e.g. inlined into one consumer, computed at root for the others). The copy is of
        the definition as it is now. */
    Func clone_in(const Func &consumer);
    Func clone_in(const std::vector<Func> &consumers);
    /** Storage layout of the Func's realization, innermost dimension first. */
    Func &reorder_storage(const std::vector<Var> &dims);
    /** Pads the storage extent of dimension dim up to a multiple of alignment (a positive
        integer constant, in elements), so that the strides of the dimensions stored outside
        it are multiples of it (rows that start aligned). Halide's align_storage. */
    Func &align_storage(const Var &dim, const Expr &alignment);
    /** Halide's fold_storage: the storage of dim is a ring of `extent` slots (coordinate mod
        extent), for a Func stored outside the loop it is computed in whose window slides along
        dim (store_at / compute_at). weft folds such storage by itself (to a power of two); this
        sets the ring's size. Lowering checks it holds what one iteration reads: a smaller one is
        a weft::Error naming what is needed, never a wrong result; so is a Func whose storage
        cannot fold along dim. Only forward folds (fold_forward = true) exist here. */
    Func &fold_storage(const Var &dim, const Expr &extent, bool fold_forward = true);
    /** Widens the region computed along var so that it starts at remainder modulo modulus and
        spans a multiple of modulus (integer constants; modulus positive): for vector or
        unrolled loops without tails. Not for outputs, whose region is their buffer's.
        Halide's align_bounds. */
    Func &align_bounds(const Var &var, Expr modulus, Expr remainder = 0);
    template <typename... Vs>
    Func &reorder_storage(const Var &v0, const Var &v1, Vs... rest) {
        return reorder_storage(std::vector<Var>{v0, v1, Var(rest)...});
    }

    /** Computes the Func over [0, sizes) (mins 0) into a new buffer (no sizes: zero-dimensional). */
    Realization realize(const std::vector<int> &sizes = {}, const Target &t = Target::host());
    /** realize({w, h, ...}) spelled realize(w, h, ...) (Halide's older form). */
    template <typename... Ints, typename = std::enable_if_t<(std::is_integral_v<Ints> && ...)>>
    Realization realize(int e0, Ints... rest);
    /** Fills an existing buffer over its domain (its mins respected). */
    template <typename T>
    void realize(const Buffer<T> &out, const Target &t = Target::host()) {
        realize_into(out, t);
    }
    void realize_into(const Buffer<void> &out, const Target &t = Target::host());
    /** Fills existing buffers: one per value of a Func defined with a Tuple (in order, each of
        its value's type, all over one region). */
    void realize(const class RealizationArg &outs, const Target &t = Target::host());

    /** See Pipeline::compile_jit, print_loop_nest, compile_to_lowered_stmt (a Pipeline of this
        Func alone). */
    void compile_jit(const std::vector<int> &sizes, const Target &t = Target::host());
    void print_loop_nest(const std::vector<int> &sizes = {}, const Target &t = Target::host());
    void compile_to_lowered_stmt(const std::string &filename, const std::vector<class Argument> &args,
                                 StmtOutputFormat fmt = StmtOutputFormat::Text, const Target &t = Target::host(),
                                 const std::vector<int> &sizes = {});

    const std::shared_ptr<internal::FunctionContents> &contents() const { return c_; }

private:
    Stage stage0() const { return Stage(c_, 0); }
    std::shared_ptr<internal::FunctionContents> c_;
};

/** A place in a loop nest, for compute_at / store_at (Halide's LoopLevel): the root (outside
    every loop), inlined (no storage: computed where used), or loop `var` of Func `f`. A
    default-constructed LoopLevel is inlined. Unlike Halide's (a shared handle that may be set
    after it was used), a LoopLevel is a value: compute_at(level) reads it when it is called,
    and a later level.set(...) changes only that variable. */
class LoopLevel {
public:
    LoopLevel() = default;
    LoopLevel(const Func &f, const VarOrRVar &var) : kind_(Kind::Loop), func_(f), var_(var.name()), rvar_(var.is_rvar()) {}
    static LoopLevel root() {
        LoopLevel l;
        l.kind_ = Kind::Root;
        return l;
    }
    static LoopLevel inlined() { return LoopLevel(); }
    bool is_root() const { return kind_ == Kind::Root; }
    bool is_inlined() const { return kind_ == Kind::Inlined; }
    /** The Func and the loop (an Error for root and inlined). */
    Func func() const;
    VarOrRVar var() const;
    /** Makes this the level l is. */
    void set(const LoopLevel &l) { *this = l; }
    bool operator==(const LoopLevel &o) const {
        return kind_ == o.kind_ &&
               (kind_ != Kind::Loop || (func_.contents() == o.func_.contents() && var_ == o.var_ && rvar_ == o.rvar_));
    }
    bool operator!=(const LoopLevel &o) const { return !(*this == o); }

private:
    enum class Kind { Inlined, Root, Loop } kind_ = Kind::Inlined;
    Func func_;
    std::string var_;
    bool rvar_ = false;
};

/** Inline reductions giving where e is largest (smallest) over the RDom it uses, and that
    value: Tuple(the RDom's coordinates..., e there); the first such point in the RDom's order
    where several tie. The RDom may be named (it must be the one e uses). */
Tuple argmax(Expr e);
Tuple argmin(Expr e);
Tuple argmax(const RDom &r, Expr e);
Tuple argmin(const RDom &r, Expr e);

/** A Func of the given Vars defined as e (Halide's lambda): lambda(x, y, x + y). */
Func lambda(const std::vector<Var> &vars, Expr e);
inline Func lambda(const Var &x, Expr e) { return lambda(std::vector<Var>{x}, std::move(e)); }
inline Func lambda(const Var &x, const Var &y, Expr e) { return lambda(std::vector<Var>{x, y}, std::move(e)); }
inline Func lambda(const Var &x, const Var &y, const Var &z, Expr e) {
    return lambda(std::vector<Var>{x, y, z}, std::move(e));
}
inline Func lambda(const Var &x, const Var &y, const Var &z, const Var &w, Expr e) {
    return lambda(std::vector<Var>{x, y, z, w}, std::move(e));
}
inline Func lambda(const Var &x, const Var &y, const Var &z, const Var &w, const Var &v, Expr e) {
    return lambda(std::vector<Var>{x, y, z, w, v}, std::move(e));
}

/** The outputs of a realize: converts to Buffer<T> (throwing Error on a wrong element type). */
class Realization {
public:
    Realization() = default;
    explicit Realization(std::vector<Buffer<void>> bufs) : bufs_(std::move(bufs)) {}
    size_t size() const { return bufs_.size(); }
    const Buffer<void> &operator[](size_t i) const {
        if (i >= bufs_.size())
            internal::buffer_error("Realization[" + std::to_string(i) + "]: it holds " + std::to_string(bufs_.size()) +
                                   " buffer" + (bufs_.size() == 1 ? "" : "s"));
        return bufs_[i];
    }
    template <typename T>
    operator Buffer<T>() const {
        if (bufs_.size() != 1) internal::buffer_error("a Realization of " + std::to_string(bufs_.size()) +
                                                      " buffers cannot convert to one Buffer");
        return Buffer<T>(bufs_[0]);
    }

private:
    std::vector<Buffer<void>> bufs_;
};

template <typename... Ints, typename>
Realization Func::realize(int e0, Ints... rest) {
    return realize(std::vector<int>{e0, (int)rest...});
}

/** {min, extent} per dimension (Halide's Region). */
using Region = std::vector<std::pair<Expr, Expr>>;

/** Boundary conditions: each gives a Func defined everywhere, reading src only inside its
    bounds: a Buffer's or an ImageParam's own domain, or the Region given ({min, extent} per
    dimension from dimension 0; a dimension past the list, or with an undefined min or extent,
    is passed through unbounded). A Func source needs the Region. Halide's five:
    - repeat_edge: the nearest edge element;
    - constant_exterior: value outside the bounds;
    - mirror_image: reflected with the edge element repeated (... 1 0 | 0 1 ... n-1 | n-1 n-2 ...);
    - mirror_interior: reflected about the edge element (... 2 1 | 0 1 ... n-1 | n-2 n-3 ...);
    - repeat_image: the bounded region tiled over the plane. */
namespace BoundaryConditions {
Func repeat_edge(const Buffer<void> &src);
Func repeat_edge(const ImageParam &src);
Func repeat_edge(const Buffer<void> &src, const Region &bounds);
Func repeat_edge(const ImageParam &src, const Region &bounds);
Func repeat_edge(const Func &src, const Region &bounds);
Func constant_exterior(const Buffer<void> &src, Expr value);
Func constant_exterior(const ImageParam &src, Expr value);
Func constant_exterior(const Buffer<void> &src, Expr value, const Region &bounds);
Func constant_exterior(const ImageParam &src, Expr value, const Region &bounds);
Func constant_exterior(const Func &src, Expr value, const Region &bounds);
Func mirror_image(const Buffer<void> &src);
Func mirror_image(const ImageParam &src);
Func mirror_image(const Buffer<void> &src, const Region &bounds);
Func mirror_image(const ImageParam &src, const Region &bounds);
Func mirror_image(const Func &src, const Region &bounds);
Func mirror_interior(const Buffer<void> &src);
Func mirror_interior(const ImageParam &src);
Func mirror_interior(const Buffer<void> &src, const Region &bounds);
Func mirror_interior(const ImageParam &src, const Region &bounds);
Func mirror_interior(const Func &src, const Region &bounds);
Func repeat_image(const Buffer<void> &src);
Func repeat_image(const ImageParam &src);
Func repeat_image(const Buffer<void> &src, const Region &bounds);
Func repeat_image(const ImageParam &src, const Region &bounds);
Func repeat_image(const Func &src, const Region &bounds);
}  // namespace BoundaryConditions

}  // namespace weft
