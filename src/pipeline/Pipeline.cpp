// Pipeline, Callable, Func::realize: binding arguments, the shape-keyed lookup, JIT at first call.
#include "weft/Pipeline.h"
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>
#include <climits>
#include <cstdio>
#include <iostream>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <optional>
#include <set>
#include "cache/DiskCache.h"
#include "cache/KernelCache.h"
#include "cuda/CudaPipelineKernel.h"
#include "interp/InterpretedKernel.h"
#include "llvm/LLVMKernel.h"
#include "interp/Interpreter.h"
#include "ir/IRVisitor.h"
#include "ir/Stack.h"
#include "ir/Warnings.h"
#include "lower/Lower.h"
#include "lower/RealizationOrder.h"
#include "pipeline/ApplySchedule.h"
#include "pipeline/PipelineInternal.h"
#include "runtime/Runtime.h"
#include "weft_build_id.h"

namespace weft {
namespace internal {

CPUTargetInfo cpu_info_for(const Target &t);
const std::string &target_key(const Target &t);

static std::atomic<int> g_debug{-1};
static std::atomic<int> g_max_specializations{8};

static std::atomic<uint64_t> g_snapshot_ids{1};
static std::atomic<uint64_t> g_snapshot_builds{0};

/** A snapshot of the pipeline: current while none of the definitions and schedules it was
    built from changed (env.sources). */
struct Prepared {
    const uint64_t id = g_snapshot_ids.fetch_add(1);  // never reused
    Env env;
    std::string algo;
    /** No Func has a schedule directive: each compile schedules automatically for its shapes. */
    bool autoschedule = false;
    /** The schedule is the one Pipeline::auto_schedule applied: compiles print no warnings. */
    bool quiet = false;
};

/** The last kernel used: a call with the same snapshot, target and shapes reuses it directly. */
struct Memo {
    uint64_t snapshot = 0;
    uint64_t kernel_generation = 0;  // g_kernel_generation when made
    std::shared_ptr<const Target::Data> target;
    std::string target_key;
    std::vector<int32_t> shape;
    /** Not owned: a kernel the cache evicts (or clear_cache() drops) is freed, not kept alive
        by every Func and thread that last ran it. */
    std::weak_ptr<const CompiledKernel> kernel;
};

/** How a Callable's arguments map onto the pipeline's inputs. */
struct CallBinding {
    const std::vector<Argument> *decl;
    const CallArg *args;
};

static std::atomic<uint64_t> g_pipeline_ids{1};

/** Is a pipeline of this snapshot scheduled automatically when compiled for the host (no
    directive, WEFT_AUTOSCHEDULE not 0, a backend that runs vector code)? */
static bool schedules_itself(const Env &env) {
    return llvm_backend_available() && first_call_autoschedule_enabled() && has_no_directives(env);
}


struct PipelineContents {
    const uint64_t id = g_pipeline_ids.fetch_add(1);  // never reused (unlike an address)
    std::vector<std::shared_ptr<FunctionContents>> outputs;
    std::mutex m;
    std::shared_ptr<const Prepared> prepared;
    uint64_t checked_epoch = 0;  // the definition epoch at which `prepared` was last found current
    std::shared_ptr<const Memo> memo;

    /** The current snapshot: the last one if nothing it was built from changed since (an edit
        of a Func this pipeline does not use keeps it), else a new one. */
    std::shared_ptr<const Prepared> prepare(uint64_t epoch) {
        {
            std::lock_guard<std::mutex> l(m);
            if (prepared && (checked_epoch == epoch || prepared->env.sources.current())) {
                checked_epoch = epoch;
                return prepared;
            }
        }
        auto p = std::make_shared<Prepared>();
        g_snapshot_builds++;
        p->env = on_large_stack<Env>([&] { return build_env(outputs, false); });  // (recursion over deep Exprs)
        p->algo = p->env.canonical;
        p->autoschedule = schedules_itself(p->env);
        p->quiet = auto_scheduled(p->env.canonical);
        if (p->autoschedule) p->algo += "|scheduled automatically for " + std::to_string(weft_rt_num_threads()) + " threads";
        std::lock_guard<std::mutex> l(m);
        prepared = p;
        checked_epoch = epoch;
        return p;
    }

    /** run = false: compiles (or finds) the kernel and returns without running it. */
    int call(const Target &t, const CallBinding *cb, const BufferContents *const *outs, size_t nouts, bool run = true);

    /** Makes `kernel` the one a call with the current shapes reuses (this pipeline's and this
        thread's memo). */
    template <typename ThreadMemoT>
    void remember(uint64_t snapshot, const Target &t, const std::shared_ptr<const CompiledKernel> &kernel, ThreadMemoT &tm);
};


namespace {

struct Scratch {
    std::vector<const BufferContents *> bufs;
    std::vector<const void *> scalars;
    std::vector<int32_t> shape;
    std::vector<weft_buffer_t> wbufs;
    std::vector<void *> args;
};
thread_local Scratch scratch;

std::string join_arg_names(const std::vector<Argument> &decl) {
    std::string s;
    for (auto &a : decl) s += (s.empty() ? "" : ", ") + a.name();
    return s;
}

void check_buffer_against(const BufferContents *b, Type t, int dims, const std::string &what) {
    if (b->type != t)
        throw Error("weft: " + what + " has element type " + t.str() + " but was given a buffer of " + b->type.str());
    if (b->dims != dims)
        throw Error("weft: " + what + " has " + std::to_string(dims) + " dimensions but was given a buffer of " +
                    std::to_string(b->dims));
}

/** Binds every input, scalar and output of env into scratch. */
void bind(const Env &env, const CallBinding *cb, const BufferContents *const *outs, size_t nouts) {
    Scratch &s = scratch;
    size_t nin = env.inputs.size();
    s.bufs.resize(nin + nouts);
    s.scalars.resize(env.params.size());
    if (nouts != env.output_buffers.size())
        throw Error("weft: the pipeline has " + std::to_string(env.output_buffers.size()) + " output buffers (" +
                    std::to_string(env.outputs.size()) + " output Func" + (env.outputs.size() == 1 ? "" : "s") +
                    (env.output_buffers.size() > env.outputs.size() ? ", one buffer per value of a Tuple" : "") + ") but " +
                    std::to_string(nouts) + " were given");
    for (size_t i = 0; i < nin; i++) {
        const LInput &in = env.inputs[i];
        if (in.buffer) {
            s.bufs[i] = in.buffer.get();
            continue;
        }
        const BufferContents *b = nullptr;
        if (cb) {
            for (size_t k = 0; k < cb->decl->size(); k++)
                if ((*cb->decl)[k].image() == in.image) {
                    b = cb->args[k].buf;
                    break;
                }
            if (!b && !in.image->bound.defined())
                throw Error("weft: ImageParam \"" + in.image->name +
                            "\" is used by the pipeline but is not one of the Callable's arguments (" +
                            join_arg_names(*cb->decl) + ")");
        }
        if (!b) {
            if (!in.image->bound.defined())
                throw Error("weft: ImageParam \"" + in.image->name + "\" is not bound: call " + in.image->name +
                            ".set(buffer) before realize()");
            b = in.image->bound.contents().get();
        }
        s.bufs[i] = b;
    }
    for (size_t i = 0; i < env.params.size(); i++) {
        const void *v = &env.params[i].param->value;
        if (cb)
            for (size_t k = 0; k < cb->decl->size(); k++)
                if ((*cb->decl)[k].param() == env.params[i].param) v = cb->args[k].bytes;
        const ParamContents &pc = *env.params[i].param;
        if (pc.has_min || pc.has_max) {
            std::string err = param_range_error(pc, v);
            if (!err.empty()) throw Error(err);
        }
        s.scalars[i] = v;
    }
    for (size_t j = 0, o = 0; o < env.outputs.size(); o++) {
        const LFunc &f = env.funcs[env.index.at(env.outputs[o])];
        const size_t values = std::max<size_t>(1, f.types.size());
        for (size_t v = 0; v < values; v++, j++) {
            const BufferContents *b = outs[j];
            if (!b) throw Error("weft: output buffer " + std::to_string(j) + " is undefined");
            std::string what = "output Func \"" + f.contents->name + "\"" + (values > 1 ? " value " + std::to_string(v) : "");
            check_buffer_against(b, values > 1 ? f.types[v] : f.type, (int)f.args.size(), what);
            if (v > 0)  // (the values of a Tuple are computed over one region)
                for (int d = 0; d < b->dims; d++)
                    if (b->dim[d].min != outs[j - v]->dim[d].min || b->dim[d].extent != outs[j - v]->dim[d].extent)
                        throw Error("weft: the buffers of the values of output Func \"" + f.contents->name +
                                    "\" differ in dimension " + std::to_string(d) + " (value 0: min " +
                                    std::to_string(outs[j - v]->dim[d].min) + ", extent " +
                                    std::to_string(outs[j - v]->dim[d].extent) + "; value " + std::to_string(v) +
                                    ": min " + std::to_string(b->dim[d].min) + ", extent " +
                                    std::to_string(b->dim[d].extent) + "); they must cover one region");
            s.bufs[nin + j] = b;
        }
    }
    s.shape.clear();
    for (auto *b : s.bufs) {
        s.shape.push_back(b->dims);
        for (int d = 0; d < b->dims; d++) {
            s.shape.push_back(b->dim[d].min);
            s.shape.push_back(b->dim[d].extent);
            s.shape.push_back(b->dim[d].stride);
        }
    }
}

std::map<std::string, Expr> shape_consts(const Env &env) {
    std::map<std::string, Expr> m;
    size_t nin = env.inputs.size();
    for (size_t i = 0; i < scratch.bufs.size(); i++) {
        const std::string &name = i < nin ? env.inputs[i].name : env.output_buffers[i - nin];
        const BufferContents *b = scratch.bufs[i];
        for (int d = 0; d < b->dims; d++) {
            m[buffer_field(name, "min", d)] = Expr(b->dim[d].min);
            m[buffer_field(name, "extent", d)] = Expr(b->dim[d].extent);
            m[buffer_field(name, "stride", d)] = Expr(b->dim[d].stride);
        }
    }
    return m;
}

std::shared_ptr<CompiledKernel> compile_here(const Env &env, const std::map<std::string, Expr> &consts, const Target &t,
                                             bool generic, const std::string &key, bool warn);

/** Lowering for target t in this build (vectors on the host only with the LLVM backend), with
    per-Func timers while profiling is on. */
LowerOptions lower_options(const Target &t, std::string *log) {
    LowerOptions o;
    o.target = t;
    o.host_vectors = llvm_backend_available();
    if (profiling(t)) o.profile_id = profile_id;
    o.log = log;
    return o;
}

/** key: the kernel's cache key (that of its disk cache entry too). warn: print the compile's
    warnings (for the user's own schedules, not automatic ones). */
std::shared_ptr<CompiledKernel> compile(const Env &env, const std::map<std::string, Expr> &consts, const Target &t,
                                        bool generic, const std::string &key, bool warn = true) {
    warn = warn && !compiles_quiet();  // (read on this thread: the compile runs on a large stack's)
    return on_large_stack<std::shared_ptr<CompiledKernel>>([&] { return compile_here(env, consts, t, generic, key, warn); });
}

/** The schedules chosen automatically for the shapes and Param values bound now (see
    first_call_schedules()). */
std::vector<PipelineSchedule> schedules_for_bound_shapes(const Env &env,
                                                         const std::vector<std::shared_ptr<FunctionContents>> &outputs,
                                                         const Target &t) {
    std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> shapes;
    size_t nin = env.inputs.size();
    for (size_t i = 0; i < scratch.bufs.size(); i++)
        for (int d = 0; d < scratch.bufs[i]->dims; d++)
            shapes[i < nin ? env.inputs[i].name : env.output_buffers[i - nin]].push_back(
                {scratch.bufs[i]->dim[d].min, scratch.bufs[i]->dim[d].extent});
    std::map<std::string, const void *> params;
    for (size_t i = 0; i < env.params.size() && i < scratch.scalars.size(); i++) params[env.params[i].name] = scratch.scalars[i];
    return first_call_schedules(outputs, shapes, params, t);
}

/** compile(), for a pipeline with no schedule directive on a CPU target: scheduled
    automatically for the shapes bound now (the candidates best first; one lowering refuses is
    skipped), else as it is. */
std::shared_ptr<CompiledKernel> compile_scheduled(const Prepared &p, const std::vector<std::shared_ptr<FunctionContents>> &outputs,
                                                  const std::map<std::string, Expr> &consts, const Target &t, bool generic,
                                                  const std::string &key) {
    const Env &env = p.env;
    if (p.autoschedule && t.arch() == Target::Arch::Host) {
        auto t0 = std::chrono::steady_clock::now();
        auto scheds = schedules_for_bound_shapes(env, outputs, t);
        if (debug_enabled())
            std::cerr << "weft: automatic scheduling took "
                      << std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() << " ms\n";
        for (auto &s : scheds) {
            try {
                Env senv = on_large_stack<Env>([&] { return build_env(outputs, false, &s); });
                return compile(senv, consts, t, generic, key, false);
            } catch (Error &e) {
                if (debug_enabled()) std::cerr << "weft: an automatic schedule was refused: " << e.what() << "\n";
            }
        }
    }
    return compile(env, consts, t, generic, key, !p.quiet);
}

/** What wrote a disk cache entry: weft (its version and the fingerprint of its sources) and
    LLVM (NVRTC's version is in a CUDA target's key). */
const std::string &code_versions() {
    static const std::string v =
        std::string("weft ") + WEFT_VERSION + " (sources " + WEFT_BUILD_ID + "), LLVM " + llvm_version();
    return v;
}

/** The kernel for lf: its code compiled, or loaded from code's sections where it has them. */
std::shared_ptr<CompiledKernel> build_kernel(LoweredFunc lf, const Target &t, CodeSections *code,
                                             std::string *cuda_src, std::string *llvm_ir,
                                             std::shared_ptr<CudaModule> &gpu) {
    const CPUTargetInfo cpu = cpu_info_for(t);
    gpu.reset();
    if (t.arch() == Target::Arch::CUDA) gpu = compile_cuda(lf, cuda_src, &cpu, llvm_ir, code);
    std::shared_ptr<CompiledKernel> k;
    if (!gpu || gpu->program.kernels.empty()) {
        // For the CPU: LLVM's machine code, or the interpreter in a build without LLVM.
        auto m = compile_llvm(lf, cpu, llvm_ir, code);
        if (m) k = std::make_shared<LLVMKernel>(lf, std::move(m));
        else k = std::make_shared<InterpretedKernel>(lf);
    }
    if (gpu) k = std::make_shared<CudaPipelineKernel>(std::move(lf), gpu, std::move(k));
    return k;
}

bool warnings_enabled() {
    static const bool on = [] {
        const char *e = std::getenv("WEFT_WARNINGS");
        return !(e && std::string(e) == "0");
    }();
    return on;
}

std::shared_ptr<CompiledKernel> compile_here(const Env &env, const std::map<std::string, Expr> &consts, const Target &t,
                                             bool generic, const std::string &key, bool warn) {
    static std::atomic<int> counter{0};
    std::string name = "weft_pipeline_" + std::to_string(counter++);
    bool dbg = debug_enabled();
    bool cuda = t.arch() == Target::Arch::CUDA;
    std::string log;
    LoweredFunc lf;
    std::vector<std::string> warnings;  // lowering's, then code generation's (ir/Warnings.h)
    std::vector<std::string> *to_warnings = warn && warnings_enabled() ? &warnings : nullptr;
    auto t_lower = std::chrono::steady_clock::now();
    std::vector<std::pair<std::string, double>> pass_times;
    try {
        LowerOptions lo = lower_options(t, dbg ? &log : nullptr);
        lo.warnings = to_warnings;
        if (compile_times_enabled()) lo.pass_times = &pass_times;
        lf = lower(env, consts, name, lo);
    } catch (Error &) {
        if (dbg) std::fprintf(stderr, "// weft: lowering %s failed; IR so far:\n%s\n", name.c_str(), log.c_str());
        throw;
    }
    double lower_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_lower).count();
    last_llvm_compile_times() = LLVMCompileTimes();  // (a GPU kernel compiles none: not the last compile's)
    std::string cuda_src, llvm_ir;
    std::shared_ptr<CudaModule> gpu;
    std::shared_ptr<CompiledKernel> k;
    // The disk cache: code compiled by an earlier process for this key (not for a profiling
    // kernel: its timers' ids are this process's), loaded instead of compiled.
    bool disk = !profiling(t) && llvm_backend_available() && !key.empty();
    CodeSections code;
    bool loaded = false;
    if (disk && disk_cache_load("kernels", key, code_versions(), code, dbg)) {
        try {
            size_t parts = code.size();
            k = build_kernel(lf, t, &code, dbg ? &cuda_src : nullptr, nullptr, gpu);
            if (code.size() != parts) throw Error("it lacks part of the code (compiled instead)");
            cache_counters().disk_hits++;
            loaded = true;
        } catch (Error &e) {
            if (dbg) std::fprintf(stderr, "// weft: disk cache entry not used: %s\n", e.what());
            k.reset();
        }
    }
    if (!k) {
        code.clear();
        WarningsScope scope(to_warnings);
        k = build_kernel(lf, t, disk ? &code : nullptr, dbg ? &cuda_src : nullptr, dbg ? &llvm_ir : nullptr, gpu);
        cache_counters().compilations++;
        if (generic) cache_counters().generic_compilations++;
        if (disk) {
            if (disk_cache_store("kernels", key, code_versions(), code, dbg)) cache_counters().disk_writes++;
        }
    }
    k->generic = generic;
    cache_counters().compile_us.fetch_add(
        (uint64_t)std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t_lower).count());
    for (auto &w : warnings) std::fprintf(stderr, "weft: warning: %s\n", w.c_str());
    if (dbg && !warnings.empty()) {
        log += "// ---- warnings ----\n";
        for (auto &w : warnings) log += "// " + w + "\n";
    }
    if (dbg || compile_times_enabled()) {
        const LLVMCompileTimes &ct = last_llvm_compile_times();
        std::fprintf(stderr,
                     "// weft: %s %s for %s%s (lowering %.1f ms; LLVM: IR %.1f ms, optimisation %.1f ms, machine code %.1f "
                     "ms, loading %.1f ms%s)\n%s%s",
                     loaded ? "loaded from the disk cache" : "compiled", name.c_str(), t.str().c_str(),
                     generic ? " (shape-generic)" : "", lower_ms, ct.ir_ms, ct.optimise_ms, ct.machine_code_ms, ct.load_ms,
                     ct.parts > 1 ? ("; in " + std::to_string(ct.parts) + " parts on as many threads").c_str() : "",
                     log.c_str(), dbg ? "\n" : "");
        std::string passes;
        for (auto &[pass, ms] : pass_times)
            if (ms >= 0.5) passes += (passes.empty() ? "" : ", ") + pass + " " + std::to_string((int)(ms + 0.5)) + " ms";
        if (!passes.empty()) std::fprintf(stderr, "//   lowering passes of 0.5 ms or more: %s\n", passes.c_str());
    }
    if (dbg) {
        if (!cuda_src.empty()) std::fprintf(stderr, "// ---- CUDA source ----\n%s\n", cuda_src.c_str());
        if (gpu && !gpu->program.kernels.empty())
            std::fprintf(stderr, "// ---- host code (gpu_launch(k): kernel k; host_stage(i): host stage i, on the CPU) ----\n%s\n",
                         to_string(gpu->program.host).c_str());
        if (gpu)
            for (auto &[kn, u] : gpu->compiled.usage)  // ptxas' report (where NVRTC compiled the kernels)
                std::fprintf(stderr, "// %s: %d registers, %lld bytes shared, %lld/%lld bytes spilled%s\n", kn.c_str(),
                             u.registers, (long long)u.shared_bytes, (long long)u.spill_stores, (long long)u.spill_loads,
                             u.min_blocks > 1 ? ", registers capped for 2 blocks per multiprocessor" : "");
        if (!llvm_ir.empty()) std::fprintf(stderr, "// ---- LLVM IR ----\n%s\n", llvm_ir.c_str());
    }
    return k;
}

std::string shape_string(const std::vector<int32_t> &shape) {
    std::string s;
    s.reserve(shape.size() * 4);
    for (int32_t v : shape) s += std::to_string(v) + ",";
    return s;
}
std::string generic_signature(const std::vector<const BufferContents *> &bufs) {
    std::string s;
    for (auto *b : bufs) s += std::to_string(b->dims) + ";";
    return s;
}

void fill_args(const Env &env) {
    Scratch &s = scratch;
    size_t nb = s.bufs.size(), nin = env.inputs.size();
    s.wbufs.resize(nb);
    s.args.resize(nb + s.scalars.size());
    for (size_t i = 0; i < nb; i++) {
        const BufferContents *b = s.bufs[i];
        weft_buffer_t &w = s.wbufs[i];
        w.host = b->host;
        w.dims = b->dims;
        for (int d = 0; d < b->dims; d++) w.dim[d] = {b->dim[d].min, b->dim[d].extent, b->dim[d].stride, 0};
    }
    // Argument order: inputs, scalars, outputs (as in lower()).
    size_t k = 0;
    for (size_t i = 0; i < nin; i++) s.args[k++] = &s.wbufs[i];
    for (auto *v : s.scalars) s.args[k++] = const_cast<void *>(v);
    for (size_t i = nin; i < nb; i++) s.args[k++] = &s.wbufs[i];
}

bool any_empty_output(const Env &env) {
    for (size_t i = env.inputs.size(); i < scratch.bufs.size(); i++)
        if (scratch.bufs[i]->num_elements() == 0) return true;
    return false;
}

}  // namespace

namespace {
/** This thread's last pipeline (by unique id) and its state: a repeated call takes no lock and
    touches no reference count. */
struct ThreadMemo {
    uint64_t id = 0, epoch = 0;
    std::shared_ptr<const Prepared> prepared;
    std::shared_ptr<const Memo> memo;
};
thread_local ThreadMemo tls_memo;
}  // namespace

template <typename ThreadMemoT>
void PipelineContents::remember(uint64_t snapshot, const Target &t, const std::shared_ptr<const CompiledKernel> &kernel,
                                ThreadMemoT &tm) {
    auto nm = std::make_shared<Memo>();
    nm->snapshot = snapshot;
    nm->kernel_generation = g_kernel_generation.load(std::memory_order_relaxed);
    nm->target = t.data();
    nm->target_key = target_key(t);
    nm->shape = scratch.shape;
    nm->kernel = kernel;
    {
        std::lock_guard<std::mutex> l(m);
        this->memo = nm;
    }
    tm.memo = nm;
}

int PipelineContents::call(const Target &t, const CallBinding *cb, const BufferContents *const *outs, size_t nouts,
                           bool run) {
    uint64_t epoch = g_definition_epoch.load(std::memory_order_relaxed);
    ThreadMemo &tm = tls_memo;
    if (tm.id != id || tm.epoch != epoch || !tm.prepared) {
        // Something changed somewhere (or another pipeline ran last on this thread): the
        // miss path finds this pipeline's current snapshot and last kernel.
        tm.prepared = prepare(epoch);
        {
            std::lock_guard<std::mutex> l(m);
            tm.memo = this->memo;
        }
        if (tm.memo && tm.memo->kernel_generation != g_kernel_generation.load(std::memory_order_relaxed))
            tm.memo.reset();  // (clear_cache(), set_profile())
        tm.id = id;
        tm.epoch = epoch;
    }
    const Prepared *p = tm.prepared.get();
    const Memo *memo = tm.memo.get();
    const Env &env = p->env;
    bind(env, cb, outs, nouts);
    if (any_empty_output(env)) return 0;
    if (t.arch() != Target::Arch::CUDA)  // CPU code reads and writes the host copies
        for (auto *b : scratch.bufs)
            if (b->device_dirty) buffer_copy_to_host(*const_cast<BufferContents *>(b));
    const CompiledKernel *kernel_ptr = nullptr;
    std::shared_ptr<const CompiledKernel> kernel;
    if (memo && memo->snapshot == p->id && (memo->target == t.data() || memo->target_key == target_key(t)) &&
        memo->shape == scratch.shape && (kernel = memo->kernel.lock())) {
        kernel_ptr = kernel.get();  // alive until this call returns, even if evicted meanwhile
        cache_counters().hits.fetch_add(1, std::memory_order_relaxed);
    } else {
        std::string base = p->algo + "|" + target_key(t) + (profile_enabled() ? "|profile" : "");
        std::string shape = shape_string(scratch.shape);
        size_t max_specs = (size_t)std::max(0, g_max_specializations.load());
        bool specialize = cache_note_shape(base, shape, max_specs) <= max_specs;
        if (!specialize) {
            try {
                std::string generic_key = base + "|generic|" + generic_signature(scratch.bufs);
                kernel = cache_get(generic_key,
                                   [&] { return compile_scheduled(*p, outputs, {}, t, true, generic_key); });
            } catch (Error &) {
                specialize = true;  // this pipeline cannot be lowered without its shapes
            }
        }
        if (specialize) {
            auto consts = shape_consts(env);
            std::string key = base + "|" + shape;
            kernel = cache_get(key, [&] { return compile_scheduled(*p, outputs, consts, t, false, key); });
        }
        remember(p->id, t, kernel, tm);
        kernel_ptr = kernel.get();
    }
    if (!run) return 0;
    fill_args(env);
    weft_context_t ctx;
    ctx.error[0] = 0;
    ctx.error_code = 0;
    int32_t rc = kernel_ptr->call(scratch.args.data(), scratch.bufs.data(), &ctx);
    if (rc != 0 && kernel_ptr->generic) {
        // A shape-generic kernel's bounds are conservative: before reporting an error, check
        // with a kernel specialised to these shapes (its checks are exact).
        std::string key = p->algo + "|" + target_key(t) + (profile_enabled() ? "|profile" : "") + "|" +
                          shape_string(scratch.shape);
        auto consts = shape_consts(env);
        kernel = cache_get(key, [&] { return compile_scheduled(*p, outputs, consts, t, false, key); });
        remember(p->id, t, kernel, tm);
        ctx.error[0] = 0;
        ctx.error_code = 0;
        rc = kernel->call(scratch.args.data(), scratch.bufs.data(), &ctx);
    }
    if (rc != 0) throw Error(std::string("weft: ") + (ctx.error[0] ? ctx.error : "pipeline failed"));
    if (t.arch() != Target::Arch::CUDA)  // outputs written on the host: a device copy is now stale
        for (size_t j = env.inputs.size(); j < scratch.bufs.size(); j++)
            if (scratch.bufs[j]->device) const_cast<BufferContents *>(scratch.bufs[j])->host_dirty = true;
    return 0;
}

const std::vector<std::shared_ptr<FunctionContents>> &pipeline_outputs(const PipelineContents &p) { return p.outputs; }

PartInfo part_info(PipelineContents &p) {
    auto prep = p.prepare(g_definition_epoch.load(std::memory_order_relaxed));
    PartInfo i;
    i.snapshot = prep->id;
    i.scheduled = !has_no_directives(prep->env);
    i.outputs = p.outputs;
    return i;
}

}  // namespace internal

using namespace internal;

// ---------------- Pipeline ----------------
Pipeline::Pipeline(const Func &output) : Pipeline(std::vector<Func>{output}) {}
Pipeline::Pipeline(const std::vector<Func> &outputs) : c_(std::make_shared<PipelineContents>()) {
    if (outputs.empty()) throw Error("weft: a Pipeline needs at least one output Func");
    for (auto &f : outputs) {
        if (!f.contents()) throw Error("weft: a Pipeline output is a null Func");
        for (auto &g : c_->outputs)
            if (g == f.contents()) throw Error("weft: Func \"" + f.name() + "\" is listed twice as a Pipeline output");
        c_->outputs.push_back(f.contents());
    }
}
std::vector<Func> Pipeline::outputs() const {
    std::vector<Func> r;
    for (auto &f : c_->outputs) r.emplace_back(f);
    return r;
}
static void check_pipeline(const std::shared_ptr<PipelineContents> &c) {
    if (!c) throw Error("weft: use of an empty Pipeline");
}
/** A new output buffer of sizes (mins 0) for Func f, after checking the sizes fit it. */
/** The buffers of an output: one, or one per value of a Tuple. */
static void new_outputs(const FunctionContents &f, const std::vector<int> &sizes, std::vector<Buffer<void>> &outs) {
    if (!f.defined) throw Error("weft: realize() of Func \"" + f.name + "\", which has no definition");
    if (sizes.size() != f.args.size())
        throw Error("weft: realize(): Func \"" + f.name + "\" has " + std::to_string(f.args.size()) +
                    " dimensions but " + std::to_string(sizes.size()) + " sizes were given");
    for (size_t i = 0; i < sizes.size(); i++)
        if (sizes[i] < 0)
            throw Error("weft: realize(): negative size " + std::to_string(sizes[i]) + " for dimension " +
                        std::to_string(i) + " of Func \"" + f.name + "\"");
    if (f.types.empty()) outs.push_back(Buffer<void>(f.type, sizes, f.name));
    for (size_t i = 0; i < f.types.size(); i++) outs.push_back(Buffer<void>(f.types[i], sizes, f.name + "." + std::to_string(i)));
}

Realization Pipeline::realize(const std::vector<int> &sizes, const Target &t) {
    check_pipeline(c_);
    std::vector<Buffer<void>> outs;
    for (auto &f : c_->outputs) new_outputs(*f, sizes, outs);
    realize(RealizationArg(outs), t);
    return Realization(outs);
}
/** Runs pc into the buffers given (no allocation for up to 16 of them). */
static void realize_into_buffers(PipelineContents &pc, const RealizationArg &arg, const Target &t) {
    const std::vector<Buffer<void>> &outs = arg.bufs;
    const BufferContents *ptrs[16];
    std::vector<const BufferContents *> many;
    const BufferContents **p = ptrs;
    if (outs.size() > 16) {
        many.resize(outs.size());
        p = many.data();
    }
    for (size_t i = 0; i < outs.size(); i++) {
        if (!outs[i].defined()) throw Error("weft: realize(): output buffer " + std::to_string(i) + " is undefined");
        p[i] = outs[i].contents().get();
    }
    pc.call(t, nullptr, p, outs.size());
}
void Pipeline::realize(const RealizationArg &arg, const Target &t) {
    check_pipeline(c_);
    realize_into_buffers(*c_, arg, t);
}
/** Every argument is a defined ImageParam or Param (who: the call, for the message). */
static void check_arguments_defined(const std::vector<Argument> &args, const char *who) {
    for (size_t i = 0; i < args.size(); i++)
        if (!args[i].image() && !args[i].param())
            throw Error(std::string("weft: ") + who + "(): argument " + std::to_string(i) +
                        " is an undefined (default-constructed) ImageParam or Param");
}
Callable Pipeline::compile_to_callable(const std::vector<Argument> &args, const Target &t) {
    check_pipeline(c_);
    auto c = std::make_shared<CallableContents>();
    c->pipeline = c_;
    c->args = args;
    c->target = t;
    check_arguments_defined(args, "compile_to_callable");
    for (size_t i = 0; i < args.size(); i++)
        for (size_t j = 0; j < i; j++)
            if ((args[i].image() && args[i].image() == args[j].image()) ||
                (args[i].param() && args[i].param() == args[j].param()))
                throw Error("weft: compile_to_callable(): argument \"" + args[i].name() + "\" is listed twice");
    return Callable(c);
}
namespace {
/** Lowers p for viewing: for output sizes (what a call runs, its automatic schedule where it
    schedules itself), or with no sizes for any shape (its own schedule). Fills log (every pass,
    loop nest first) and nest (the loop nest) where given. */
void lower_for_view(const std::shared_ptr<PipelineContents> &c, const std::vector<int> *sizes, const Target &t,
                    std::string *log, std::string *nest) {
    LowerOptions o = lower_options(t, log);
    o.loop_nest = nest;
    if (!sizes) {
        Env env = build_env(c->outputs, false);
        try {
            lower(env, {}, "weft_lowered", o);
        } catch (const Error &e) {
            throw Error(std::string(e.what()) + " (lowered for any shape; give the output sizes to lower it for them)");
        }
        return;
    }
    std::vector<Buffer<void>> outs;
    std::vector<const BufferContents *> ptrs;
    for (auto &f : c->outputs) new_outputs(*f, *sizes, outs);
    for (auto &o : outs) ptrs.push_back(o.contents().get());
    Env env = build_env(c->outputs, false);
    bind(env, nullptr, ptrs.data(), ptrs.size());
    if (t.arch() == Target::Arch::Host && schedules_itself(env)) {
        // What a call would run: the schedule chosen automatically for these shapes.
        auto consts = shape_consts(env);
        for (auto &s : schedules_for_bound_shapes(env, c->outputs, t)) {
            try {
                Env senv = on_large_stack<Env>([&] { return build_env(c->outputs, false, &s); });
                lower(senv, consts, "weft_lowered", o);
                return;
            } catch (Error &) {
                if (log) log->clear();
            }
        }
    }
    lower(env, shape_consts(env), "weft_lowered", o);
}

std::string html_escape(const std::string &s) {
    std::string r;
    r.reserve(s.size() + s.size() / 8);
    for (char ch : s) {
        switch (ch) {
        case '&': r += "&amp;"; break;
        case '<': r += "&lt;"; break;
        case '>': r += "&gt;"; break;
        case '"': r += "&quot;"; break;
        default: r += ch;
        }
    }
    return r;
}

/** The log as a page: one collapsible section per pass (the loop nest and the last pass open). */
std::string lowered_html(const std::string &title, const std::string &log) {
    std::vector<std::pair<std::string, std::string>> parts;
    const std::string mark = "// ---- ";
    size_t pos = 0;
    while (pos < log.size()) {
        size_t next = log.find("\n" + mark, pos);
        std::string chunk = log.substr(pos, next == std::string::npos ? std::string::npos : next + 1 - pos);
        std::string head = "IR";
        if (chunk.compare(0, mark.size(), mark) == 0) {
            size_t eol = chunk.find('\n');
            head = chunk.substr(mark.size(), eol == std::string::npos ? std::string::npos : eol - mark.size());
            if (head.size() >= 5 && head.compare(head.size() - 5, 5, " ----") == 0) head.resize(head.size() - 5);
            chunk = eol == std::string::npos ? "" : chunk.substr(eol + 1);
        }
        parts.emplace_back(head, chunk);
        if (next == std::string::npos) break;
        pos = next + 1;
    }
    std::ostringstream os;
    os << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" << html_escape(title) << "</title>\n"
       << "<style>body{font-family:sans-serif;margin:1.5em}pre{background:#f6f8fa;padding:.8em;overflow-x:auto;"
          "font-size:13px;line-height:1.35}summary{cursor:pointer;font-weight:bold;margin:.4em 0}"
          "h1{font-size:1.3em}</style></head><body>\n<h1>"
       << html_escape(title) << "</h1>\n";
    for (size_t i = 0; i < parts.size(); i++) {
        bool open = i == 0 || i + 1 == parts.size();
        os << "<details" << (open ? " open" : "") << "><summary>" << html_escape(parts[i].first) << "</summary><pre>"
           << html_escape(parts[i].second) << "</pre></details>\n";
    }
    os << "</body></html>\n";
    return os.str();
}
/** The sizes to lower for: none (any shape) where none are given and an output has dimensions. */
const std::vector<int> *sizes_or_any_shape(const PipelineContents &c, const std::vector<int> &sizes) {
    if (!sizes.empty()) return &sizes;
    for (auto &f : c.outputs)
        if (!f->args.empty()) return nullptr;
    return &sizes;  // (zero-dimensional outputs: their one shape)
}
}  // namespace

std::string Pipeline::lowered_ir(const std::vector<int> &sizes, const Target &t) {
    check_pipeline(c_);
    std::string log;
    lower_for_view(c_, &sizes, t, &log, nullptr);
    return log;
}
std::string Pipeline::loop_nest(const std::vector<int> &sizes, const Target &t) {
    check_pipeline(c_);
    std::string nest;
    lower_for_view(c_, sizes_or_any_shape(*c_, sizes), t, nullptr, &nest);
    return nest;
}
void Pipeline::print_loop_nest(const std::vector<int> &sizes, const Target &t) {
    std::string s = loop_nest(sizes, t);
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
}
void Pipeline::compile_jit(const std::vector<int> &sizes, const Target &t) {
    check_pipeline(c_);
    std::vector<Buffer<void>> outs;
    for (auto &f : c_->outputs) new_outputs(*f, sizes, outs);
    compile_jit(RealizationArg(outs), t);
}
void Pipeline::compile_jit(const RealizationArg &arg, const Target &t) {
    check_pipeline(c_);
    std::vector<const BufferContents *> p;
    for (size_t i = 0; i < arg.bufs.size(); i++) {
        if (!arg.bufs[i].defined()) throw Error("weft: compile_jit(): output buffer " + std::to_string(i) + " is undefined");
        p.push_back(arg.bufs[i].contents().get());
    }
    c_->call(t, nullptr, p.data(), p.size(), /*run=*/false);
}
void Pipeline::compile_to_lowered_stmt(const std::string &filename, const std::vector<Argument> &args,
                                       StmtOutputFormat fmt, const Target &t, const std::vector<int> &sizes) {
    check_pipeline(c_);
    check_arguments_defined(args, "compile_to_lowered_stmt");
    {
        Env env = build_env(c_->outputs, false);
        auto listed = [&](const void *p) {
            for (auto &a : args)
                if (a.image().get() == p || a.param().get() == p) return true;
            return false;
        };
        for (auto &in : env.inputs)
            if (in.image && !listed(in.image.get()))
                throw Error("weft: compile_to_lowered_stmt(\"" + filename + "\"): the pipeline reads ImageParam \"" +
                            in.image->name + "\", which is not in the argument list (" + join_arg_names(args) + ")");
        for (auto &pm : env.params)
            if (!listed(pm.param.get()))
                throw Error("weft: compile_to_lowered_stmt(\"" + filename + "\"): the pipeline uses Param \"" +
                            pm.param->name + "\", which is not in the argument list (" + join_arg_names(args) + ")");
    }
    std::string log;
    const std::vector<int> *view_sizes = sizes_or_any_shape(*c_, sizes);
    lower_for_view(c_, view_sizes, t, &log, nullptr);
    std::string names;
    for (auto &f : c_->outputs) names += (names.empty() ? "" : ", ") + f->name;
    std::string title = "weft: " + names + " lowered for " + t.str() +
                        (view_sizes ? std::string("") : std::string(" (any shape)"));
    std::string text = fmt == StmtOutputFormat::HTML ? lowered_html(title, log) : "// " + title + "\n" + log;
    FILE *fp = std::fopen(filename.c_str(), "wb");
    if (!fp) throw Error("weft: compile_to_lowered_stmt(): cannot write \"" + filename + "\": " + std::strerror(errno));
    size_t w = std::fwrite(text.data(), 1, text.size(), fp);
    bool ok = std::fclose(fp) == 0 && w == text.size();
    if (!ok) throw Error("weft: compile_to_lowered_stmt(): writing \"" + filename + "\" failed: " + std::strerror(errno));
}
void Func::compile_jit(const std::vector<int> &sizes, const Target &t) { Pipeline(*this).compile_jit(sizes, t); }
void Func::print_loop_nest(const std::vector<int> &sizes, const Target &t) { Pipeline(*this).print_loop_nest(sizes, t); }
void Func::compile_to_lowered_stmt(const std::string &filename, const std::vector<Argument> &args, StmtOutputFormat fmt,
                                   const Target &t, const std::vector<int> &sizes) {
    Pipeline(*this).compile_to_lowered_stmt(filename, args, fmt, t, sizes);
}
Schedule Pipeline::get_schedule() const {
    check_pipeline(c_);
    return Schedule(std::make_shared<const PipelineSchedule>(schedule_of(c_->outputs)));
}
void Pipeline::apply_schedule(const Schedule &s) {
    check_pipeline(c_);
    apply_schedule_to(c_->outputs, s.value());
}

/** compute_at(g, v) / store_at(g, v) from schedule text: g must use the Func, directly or
    through other Funcs, and g must have loops (not be inlined), else lowering would refuse
    the schedule; said here, with the line. Only the levels that stand at the end count (a
    later call replaces an earlier one). (`env` is a reference snapshot: every Func in it.) */
static void check_levels(const Env &env, const std::vector<Directive> &calls, const std::vector<int> &lines) {
    std::map<std::string, std::set<std::string>> callees;
    for (auto &f : env.funcs)
        for (auto &s : f.stages)
            for (auto &c : funcs_called(s)) callees[f.name].insert(c);
    // Wrappers the text makes: read by their consumers (in() alone: by every reader of what
    // they wrap), and reading what they wrap.
    for (auto &d : calls) {
        if (d.op != Directive::Wrap) continue;
        const std::string &w = d.names[0];
        if (d.names.size() > 1) {
            for (size_t i = 1; i < d.names.size(); i++) callees[d.names[i]].insert(w);
        } else {
            for (auto &[n, cs] : callees)
                if (n != w && cs.count(d.func)) cs.insert(w);
        }
        callees[w].insert(d.func);
    }
    auto uses = [&](const std::string &g, const std::string &f) {
        std::set<std::string> seen{g};
        std::vector<std::string> todo{g};
        while (!todo.empty()) {
            std::string n = todo.back();
            todo.pop_back();
            for (auto &c : callees[n]) {
                if (c == f) return true;
                if (seen.insert(c).second) todo.push_back(c);
            }
        }
        return false;
    };
    // Each Func's last compute-level and store-level call (compute_inline resets both).
    std::map<std::string, size_t> compute, store, hoist;
    for (size_t i = 0; i < calls.size(); i++) {
        Directive::Op op = calls[i].op;
        if (op == Directive::ComputeRoot || op == Directive::ComputeInline || op == Directive::ComputeAt)
            compute[calls[i].func] = i;
        if (op == Directive::StoreRoot || op == Directive::StoreAt || op == Directive::ComputeInline)
            store[calls[i].func] = i;
        if (op == Directive::HoistStorage || op == Directive::HoistStorageRoot || op == Directive::ComputeInline)
            hoist[calls[i].func] = i;
    }
    std::vector<size_t> levels;
    for (auto *m : {&compute, &store, &hoist})
        for (auto &[f, i] : *m)
            if (calls[i].op == Directive::ComputeAt || calls[i].op == Directive::StoreAt ||
                calls[i].op == Directive::HoistStorage)
                levels.push_back(i);
    std::sort(levels.begin(), levels.end());  // (the first line first)
    for (size_t i : levels) {
        const Directive &d = calls[i];
        const std::string &g = d.names[0];
        if (g == d.func) continue;  // (the call itself refuses it)
        std::string head = "weft: schedule line " + std::to_string(lines[i]) + ": Func \"" + d.func + "\"." +
                           (d.op == Directive::ComputeAt ? "compute_at(" : d.op == Directive::StoreAt ? "store_at(" : "hoist_storage(") +
                           g + ", " + d.names[1] + "): ";
        if (!uses(g, d.func))
            throw Error(head + "Func \"" + g + "\" does not use \"" + d.func +
                        "\" (directly or through other Funcs), so \"" + d.func +
                        "\" cannot be computed or stored inside its loops; use one of its consumers");
        const FuncScheduleValue *gv = env.given.find(g);
        bool output = std::find(env.outputs.begin(), env.outputs.end(), g) != env.outputs.end();
        auto c = compute.find(g);
        bool inlined = c == compute.end() || calls[c->second].op == Directive::ComputeInline;
        if (gv && gv->stages.size() == 1 && inlined && !output)
            throw Error(head + "Func \"" + g + "\" is inlined (it has no loops); schedule it with compute_root() or "
                        "compute_at() first");
    }
}

void Pipeline::apply_schedule_source(const std::string &cpp) {
    check_pipeline(c_);
    static const std::string head = "weft: apply_schedule_source(): ";
    // The Funcs (all of them: a reference snapshot), Params and inputs, by the pipeline's unique names.
    Env env = on_large_stack<Env>([&] { return build_env(c_->outputs, true); });
    std::map<std::string, Expr> names;
    for (auto &p : env.params) names[p.name] = Variable::make(p.param->type, p.name);
    for (auto &in : env.inputs)
        for (int k = 0; k < in.dims; k++)
            for (const char *f : {"min", "extent", "stride"}) {
                std::string n = buffer_field(in.name, f, k);
                names[n] = Variable::make(Int(32), n);
            }
    std::vector<int> lines;
    std::vector<Directive> calls;
    try {
        calls = parse_schedule_source(cpp, env.given, names, &lines);
        check_levels(env, calls, lines);
    } catch (const Error &e) {
        std::string m = e.what();
        throw Error(head + (m.rfind("weft: ", 0) == 0 ? m.substr(6) : m));
    }
    size_t failed = calls.size();
    try {
        apply_directives_to(env, calls, "apply_schedule_source()", &failed);  // (the snapshot read above)
    } catch (const Error &e) {
        if (failed >= lines.size()) throw;
        std::string m = e.what();
        if (m.rfind(head, 0) == 0) m = m.substr(head.size());
        throw Error(head + "schedule line " + std::to_string(lines[failed]) + ": " + m);
    }
}

// ---------------- Callable ----------------
int Callable::call(const CallArg *args, size_t n) const {
    if (!c_) throw Error("weft: call of an empty Callable");
    const auto &decl = c_->args;
    size_t nouts = 0;
    for (auto &f : c_->pipeline->outputs) nouts += std::max<size_t>(1, f->types.size());
    if (n != decl.size() + nouts)
        throw Error("weft: the Callable takes " + std::to_string(decl.size() + nouts) + " arguments (" +
                    join_arg_names(decl) + (decl.empty() ? "" : ", then ") + std::to_string(nouts) +
                    " output buffer" + (nouts == 1 ? "" : "s") + "); " + std::to_string(n) + " were given");
    for (size_t k = 0; k < decl.size(); k++) {
        const Argument &a = decl[k];
        if (a.image()) {
            if (!args[k].is_buffer)
                throw Error("weft: Callable argument " + std::to_string(k) + " (\"" + a.name() +
                            "\") must be a Buffer for ImageParam \"" + a.name() + "\", got a scalar of type " +
                            args[k].type.str());
            if (!args[k].buf)
                throw Error("weft: Callable argument " + std::to_string(k) + " (ImageParam \"" + a.name() +
                            "\") is an undefined (default-constructed) Buffer");
            check_buffer_against(args[k].buf, a.image()->type, a.image()->dims,
                                 "Callable argument " + std::to_string(k) + " (ImageParam \"" + a.name() + "\")");
        } else {
            if (args[k].is_buffer)
                throw Error("weft: Callable argument " + std::to_string(k) + " (\"" + a.name() +
                            "\") must be a scalar of type " + a.param()->type.str() + ", got a Buffer");
            if (args[k].type != a.param()->type)
                throw Error("weft: Callable argument " + std::to_string(k) + " (Param \"" + a.name() + "\") must be " +
                            a.param()->type.str() + ", got " + args[k].type.str());
        }
    }
    const BufferContents *outs[16];
    if (nouts > 16) throw Error("weft: a Callable supports at most 16 outputs");
    for (size_t j = 0; j < nouts; j++) {
        if (!args[decl.size() + j].is_buffer)
            throw Error("weft: Callable argument " + std::to_string(decl.size() + j) + " must be an output Buffer");
        if (!args[decl.size() + j].buf)
            throw Error("weft: Callable argument " + std::to_string(decl.size() + j) +
                        " (an output) is an undefined (default-constructed) Buffer");
        outs[j] = args[decl.size() + j].buf;
    }
    CallBinding cb{&decl, args};
    return c_->pipeline->call(c_->target, &cb, outs, nouts);
}

// ---------------- Func::realize ----------------
static std::shared_ptr<PipelineContents> self_pipeline(const std::shared_ptr<FunctionContents> &f) {
    if (!f) throw Error("weft: realize() of a null Func");
    std::lock_guard<std::mutex> l(f->runner_mutex);  // (threads realizing one new Func at once)
    if (!f->runner) {
        auto p = std::make_shared<PipelineContents>();
        // Non-owning: the state lives inside the Func itself.
        p->outputs.push_back(std::shared_ptr<FunctionContents>(std::shared_ptr<void>(), f.get()));
        f->runner = p;
    }
    return f->runner;
}
Realization Func::realize(const std::vector<int> &sizes, const Target &t) {
    auto p = self_pipeline(c_);
    std::vector<Buffer<void>> outs;
    new_outputs(*c_, sizes, outs);
    realize_into_buffers(*p, RealizationArg(outs), t);
    return Realization(outs);
}
void Func::realize(const RealizationArg &outs, const Target &t) { realize_into_buffers(*self_pipeline(c_), outs, t); }
void Func::realize_into(const Buffer<void> &out, const Target &t) {
    auto p = self_pipeline(c_);
    if (!out.defined()) throw Error("weft: realize() into an undefined Buffer");
    const BufferContents *o = out.contents().get();
    p->call(t, nullptr, &o, 1);
}

// ---------------- cache and debug ----------------
MemoryStats memory_stats() {
    int64_t in_use = 0, peak = 0, pooled = 0, allocations = 0;
    weft_rt_memory_stats(&in_use, &peak, &pooled, &allocations);
    MemoryStats m;
    m.in_use = (uint64_t)std::max<int64_t>(in_use, 0);
    m.peak = (uint64_t)std::max<int64_t>(peak, 0);
    m.pooled = (uint64_t)std::max<int64_t>(pooled, 0);
    m.allocations = (uint64_t)allocations;
    return m;
}
void reset_peak_memory() { weft_rt_reset_peak_memory(); }

CacheStats cache_stats() {
    CacheStats s;
    auto &c = cache_counters();
    s.hits = c.hits;
    s.misses = c.misses;
    s.compilations = c.compilations;
    s.generic_compilations = c.generic_compilations;
    s.disk_hits = c.disk_hits;
    s.disk_writes = c.disk_writes;
    s.evictions = c.evictions;
    s.compile_ms = c.compile_us.load() / 1000.0;
    s.entries = cache_entries();
    return s;
}
void clear_cache() {
    cache_clear();
    forget_last_kernels();
}
void set_cache_capacity(size_t n) { cache_set_capacity(n); }
void set_max_specializations(int n) { g_max_specializations = std::max(0, n); }
void set_debug(bool on) { g_debug = on ? 1 : 0; }
bool debug_enabled() {
    int d = g_debug.load();
    if (d < 0) {
        const char *e = std::getenv("WEFT_DEBUG");
        d = (e && *e && std::string(e) != "0") ? (std::string(e) == "times" ? 2 : 1) : 0;
        g_debug = d;
    }
    return d == 1;
}

namespace internal {
bool compile_times_enabled() {
    debug_enabled();
    return g_debug.load() >= 1;
}
}  // namespace internal

// ---------------- the reference interpreter over a whole pipeline ----------------
namespace internal {
std::string algorithm_key(const Pipeline &p) {
    check_pipeline(p.contents());
    return on_large_stack<Env>([&] { return build_env(p.contents()->outputs, false); }).canonical;
}
uint64_t snapshot_builds() { return g_snapshot_builds.load(); }

void check_lowers(const std::vector<std::shared_ptr<FunctionContents>> &outputs,
                  const std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> &shapes, const Target &t) {
    Env env = on_large_stack<Env>([&] { return build_env(outputs, false); });
    std::map<std::string, Expr> consts;
    std::vector<std::string> names = env.outputs;
    for (auto &in : env.inputs) names.push_back(in.name);
    for (auto &n : names) {
        auto it = shapes.find(n);
        if (it == shapes.end()) continue;
        int64_t stride = 1;
        for (size_t d = 0; d < it->second.size(); d++) {
            consts[buffer_field(n, "min", (int)d)] = Expr((int)it->second[d].first);
            consts[buffer_field(n, "extent", (int)d)] = Expr((int)it->second[d].second);
            consts[buffer_field(n, "stride", (int)d)] = Expr((int)stride);
            stride = std::min<int64_t>(stride * std::max<int64_t>(1, std::min<int64_t>(it->second[d].second, INT32_MAX)),
                                       INT32_MAX);
        }
    }
    on_large_stack<int>([&] {
        lower(env, consts, "weft_check", lower_options(t, nullptr));
        return 0;
    });
}

namespace {
/** The unscheduled lowering of p, bound to outs, run by the interpreter or (compiled) by LLVM. */
void run_reference(const Pipeline &p, const std::vector<Buffer<void>> &outs, bool compiled, const char *who) {
    check_pipeline(p.contents());
    Env env = build_env(p.contents()->outputs, true);
    std::vector<const BufferContents *> ptrs;
    for (auto &o : outs) {
        if (!o.defined()) throw Error(std::string("weft: ") + who + "(): undefined output buffer");
        ptrs.push_back(o.contents().get());
    }
    bind(env, nullptr, ptrs.data(), ptrs.size());
    if (any_empty_output(env)) return;
    LoweredFunc lf = lower(env, shape_consts(env), "weft_reference");
    std::shared_ptr<CompiledKernel> k;
    if (compiled)
        if (auto m = on_large_stack<std::shared_ptr<CompiledModule>>(
                [&] { return compile_llvm(lf, cpu_info_for(Target::host()), nullptr); }))
            k = std::make_shared<LLVMKernel>(std::move(lf), std::move(m));
    if (!k) k = std::make_shared<InterpretedKernel>(std::move(lf));
    fill_args(env);
    weft_context_t ctx;
    ctx.error[0] = 0;
    ctx.error_code = 0;
    if (k->call(scratch.args.data(), scratch.bufs.data(), &ctx) != 0)
        throw Error(std::string("weft: ") + (ctx.error[0] ? ctx.error : "pipeline failed"));
}
}  // namespace

void interpret_pipeline(const Pipeline &p, const std::vector<Buffer<void>> &outs) {
    run_reference(p, outs, false, "interpret_pipeline");
}

void compiled_reference(const Pipeline &p, const std::vector<Buffer<void>> &outs) {
    run_reference(p, outs, true, "compiled_reference");
}
}  // namespace internal

}  // namespace weft

namespace weft {
namespace internal {
namespace {
thread_local int t_quiet_compiles = 0;
}
QuietCompiles::QuietCompiles() { t_quiet_compiles++; }
QuietCompiles::~QuietCompiles() { t_quiet_compiles--; }
bool compiles_quiet() { return t_quiet_compiles > 0; }

namespace {
std::mutex g_auto_scheduled_m;
std::set<size_t> g_auto_scheduled;  // hashes of the canonical forms (at most a few thousand kept)
}  // namespace
void note_auto_scheduled(const std::string &canonical) {
    std::lock_guard<std::mutex> l(g_auto_scheduled_m);
    if (g_auto_scheduled.size() >= 4096) g_auto_scheduled.clear();
    g_auto_scheduled.insert(std::hash<std::string>()(canonical));
}
bool auto_scheduled(const std::string &canonical) {
    std::lock_guard<std::mutex> l(g_auto_scheduled_m);
    return g_auto_scheduled.count(std::hash<std::string>()(canonical)) > 0;
}
}  // namespace internal
}  // namespace weft
