#include <llvm/Support/CommandLine.h>
// The CPU backend: lowered IR -> LLVM IR -> O3 -> object code -> ORC JIT (LLVM 19).
#include "llvm/CodeGen_LLVM.h"
#include "llvm/Bf16Check.h"
#include <cmath>
#include <cstddef>

#include <math.h>
#include <string.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <numeric>
#include <set>
#include <sstream>
#include <sched.h>
#include <thread>
#include <unordered_set>
#include <unistd.h>

#include "ir/IRVisitor.h"
#include "ir/Interval.h"
#include "ir/Names.h"
#include "ir/Simplify.h"
#include "ir/Stack.h"
#include "ir/Warnings.h"
#include "weft/Func.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/Analysis/VectorUtils.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <chrono>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Object/SymbolSize.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

namespace weft {
namespace internal {

namespace {

[[noreturn]] void fail(const std::string &msg) { throw weft::Error("internal: " + msg); }

// ------------------------------------------------------------------ the JIT

struct JITState {
    std::unique_ptr<llvm::orc::LLJIT> jit;
    std::mutex mu;
};

std::string llvm_err(llvm::Error e) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << e;
    return os.str();
}

JITState &jit_state() {
    // Leaked on purpose: CompiledModules may be released during static destruction.
    static JITState *state = [] {
        llvm::InitializeNativeTarget();
        llvm::InitializeNativeTargetAsmPrinter();
        llvm::InitializeNativeTargetAsmParser();
        auto j = llvm::orc::LLJITBuilder().create();
        if (!j) fail("cannot create the LLVM JIT: " + llvm_err(j.takeError()));
        auto *s = new JITState;
        s->jit = std::move(*j);
        auto &jd = s->jit->getMainJITDylib();
        llvm::orc::SymbolMap syms;
        auto add = [&](const char *name, const void *p) {
            syms[s->jit->mangleAndIntern(name)] = llvm::orc::ExecutorSymbolDef(
                llvm::orc::ExecutorAddr::fromPtr(p), llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable);
        };
        add("weft_rt_parallel_for", (const void *)&weft_rt_parallel_for);
        add("weft_rt_malloc", (const void *)&weft_rt_malloc);
        add("weft_rt_free", (const void *)&weft_rt_free);
        add("weft_rt_assert_fail", (const void *)&weft_rt_assert_fail);
        add("weft_rt_num_threads", (const void *)&weft_rt_num_threads);
        add("weft_rt_profile", (const void *)&weft_rt_profile);
        add("weft_rt_device_call", (const void *)&weft_rt_device_call);
        add("weft_rt_print_i64", (const void *)&weft_rt_print_i64);
        add("weft_rt_print_u64", (const void *)&weft_rt_print_u64);
        add("weft_rt_print_f64", (const void *)&weft_rt_print_f64);
        add("weft_rt_print_str", (const void *)&weft_rt_print_str);
        add("weft_rt_print_end", (const void *)&weft_rt_print_end);
        add("weft_rt_print_glued", (const void *)&weft_rt_print_glued);
using F1 = float (*)(float);
        using F2 = float (*)(float, float);
        using D1 = double (*)(double);
        using D2 = double (*)(double, double);
#define WEFT_LIBM(f, T) add(#f, (const void *)static_cast<T>(&::f))
        WEFT_LIBM(expf, F1); WEFT_LIBM(exp, D1); WEFT_LIBM(logf, F1); WEFT_LIBM(log, D1);
        WEFT_LIBM(powf, F2); WEFT_LIBM(pow, D2); WEFT_LIBM(sinf, F1); WEFT_LIBM(sin, D1);
        WEFT_LIBM(cosf, F1); WEFT_LIBM(cos, D1); WEFT_LIBM(tanhf, F1); WEFT_LIBM(tanh, D1);
        WEFT_LIBM(sqrtf, F1); WEFT_LIBM(sqrt, D1); WEFT_LIBM(floorf, F1); WEFT_LIBM(floor, D1);
        WEFT_LIBM(ceilf, F1); WEFT_LIBM(ceil, D1); WEFT_LIBM(fmodf, F2); WEFT_LIBM(fmod, D2);
        WEFT_LIBM(exp2f, F1); WEFT_LIBM(exp2, D1); WEFT_LIBM(log2f, F1); WEFT_LIBM(log2, D1);
        WEFT_LIBM(log10f, F1); WEFT_LIBM(log10, D1); WEFT_LIBM(rintf, F1); WEFT_LIBM(rint, D1);
        WEFT_LIBM(nearbyintf, F1); WEFT_LIBM(nearbyint, D1);
        WEFT_LIBM(tanf, F1); WEFT_LIBM(tan, D1); WEFT_LIBM(atanf, F1); WEFT_LIBM(atan, D1);
        WEFT_LIBM(asinf, F1); WEFT_LIBM(asin, D1); WEFT_LIBM(acosf, F1); WEFT_LIBM(acos, D1);
        WEFT_LIBM(sinhf, F1); WEFT_LIBM(sinh, D1); WEFT_LIBM(coshf, F1); WEFT_LIBM(cosh, D1);
        WEFT_LIBM(asinhf, F1); WEFT_LIBM(asinh, D1); WEFT_LIBM(acoshf, F1); WEFT_LIBM(acosh, D1);
        WEFT_LIBM(atanhf, F1); WEFT_LIBM(atanh, D1); WEFT_LIBM(atan2f, F2); WEFT_LIBM(atan2, D2);
        WEFT_LIBM(hypotf, F2); WEFT_LIBM(hypot, D2);
#undef WEFT_LIBM
        add("memcpy", (const void *)&::memcpy);
        add("memset", (const void *)&::memset);
        add("memmove", (const void *)&::memmove);
        if (auto e = jd.define(llvm::orc::absoluteSymbols(std::move(syms))))
            fail("cannot define runtime symbols: " + llvm_err(std::move(e)));
        auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
            s->jit->getDataLayout().getGlobalPrefix());
        if (gen) jd.addGenerator(std::move(*gen));
        else llvm::consumeError(gen.takeError());
        return s;
    }();
    return *state;
}

/** A module's code lives in a JITDylib of its own (linked against the main one, which has the
    runtime's symbols): entry points of objects compiled by other processes (the disk cache)
    may have the same names as this process's. */
class LLVMModule : public CompiledModule {
public:
    llvm::orc::JITDylib *jd = nullptr;
    ~LLVMModule() override {
        if (!jd) return;
        JITState &s = jit_state();
        std::lock_guard<std::mutex> lk(s.mu);
        if (auto e = s.jit->getExecutionSession().removeJITDylib(*jd)) llvm::consumeError(std::move(e));
    }
};

std::atomic<uint64_t> dylib_counter{0};

/** WEFT_PERF_MAP=1: each function of the code linked into the JIT (the pipeline and the
    bodies of its parallel loops) is written to /tmp/perf-<pid>.map, so that `perf report` and
    `perf annotate` name JIT code instead of showing bare addresses. An object is one text
    section loaded as one block: each function's address is the anchor's (a function of the
    object whose address the JIT gives: `anchor` returns it for a name, 0 for none), moved by
    the difference of their offsets in that section. */
void write_perf_map(const std::string &obj, const std::function<uint64_t(const std::string &)> &anchor) {
    // Read at each compile (a compile takes milliseconds): a program may set it for some
    // pipelines only.
    const char *e = std::getenv("WEFT_PERF_MAP");
    if (!e || !*e || std::string(e) == "0") return;
    auto of = llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(obj, "weft object"));
    if (!of) {
        llvm::consumeError(of.takeError());
        return;
    }
    std::vector<std::pair<llvm::object::SymbolRef, uint64_t>> sized = llvm::object::computeSymbolSizes(**of);
    // A symbol's name, section and offset, or `otherwise` where the object does not say.
    auto get = [](auto expected, auto otherwise) -> decltype(otherwise) {
        if (!expected) {
            llvm::consumeError(expected.takeError());
            return otherwise;
        }
        return *expected;
    };
    const llvm::object::section_iterator none = (*of)->section_end();
    auto name_of = [&](const llvm::object::SymbolRef &sym) { return get(sym.getName(), llvm::StringRef()).str(); };
    auto section_of = [&](const llvm::object::SymbolRef &sym) { return get(sym.getSection(), none); };
    auto offset_of = [&](const llvm::object::SymbolRef &sym) { return (int64_t)get(sym.getValue(), ~uint64_t(0)); };
    int64_t entry_off = -1;
    uint64_t entry_addr = 0;
    llvm::object::section_iterator text = none;
    for (auto &[sym, size] : sized) {
        if (get(sym.getType(), llvm::object::SymbolRef::ST_Unknown) != llvm::object::SymbolRef::ST_Function || size == 0 ||
            section_of(sym) == none || !(get(sym.getFlags(), 0u) & llvm::object::SymbolRef::SF_Global))
            continue;
        entry_addr = anchor(name_of(sym));
        if (!entry_addr) continue;
        entry_off = offset_of(sym);
        text = section_of(sym);
        break;
    }
    if (entry_off < 0 || text == none) return;
    std::string lines;
    char buf[64];
    for (auto &[sym, size] : sized) {
        if (get(sym.getType(), llvm::object::SymbolRef::ST_Unknown) != llvm::object::SymbolRef::ST_Function || size == 0 ||
            section_of(sym) != text)
            continue;
        int64_t off = offset_of(sym);
        if (off < 0) continue;
        std::snprintf(buf, sizeof buf, "%llx %llx ", (unsigned long long)(entry_addr + off - entry_off), (unsigned long long)size);
        lines += buf + name_of(sym) + "\n";
    }
    static std::mutex mu;
    std::lock_guard<std::mutex> lk(mu);
    std::string path = "/tmp/perf-" + std::to_string((long long)getpid()) + ".map";
    if (FILE *f = std::fopen(path.c_str(), "a")) {
        std::fputs(lines.c_str(), f);
        std::fclose(f);
    }
}

/** Links object files (the parts of one module) into the JIT, in a JITDylib of their own;
    fname is the entry point. */
std::shared_ptr<CompiledModule> load_objects(const std::vector<std::string> &objs, const std::string &fname) {
    JITState &js = jit_state();
    auto result = std::make_shared<LLVMModule>();
    std::lock_guard<std::mutex> lk(js.mu);
    auto jd = js.jit->createJITDylib("weft_module_" + std::to_string(dylib_counter.fetch_add(1)));
    if (!jd) fail("cannot create a JITDylib: " + llvm_err(jd.takeError()));
    jd->addToLinkOrder(js.jit->getMainJITDylib());
    result->jd = &*jd;
    auto drop = [&] {
        llvm::consumeError(js.jit->getExecutionSession().removeJITDylib(*result->jd));
        result->jd = nullptr;
    };
    for (size_t i = 0; i < objs.size(); i++) {
        auto buf = llvm::MemoryBuffer::getMemBufferCopy(objs[i], fname + (i ? "." + std::to_string(i) : std::string()));
        if (auto e = js.jit->addObjectFile(*jd, std::move(buf))) {
            std::string m = llvm_err(std::move(e));
            drop();
            fail("JIT cannot add object: " + m);
        }
    }
    auto sym = js.jit->lookup(*jd, fname);
    if (!sym) {
        std::string m = llvm_err(sym.takeError());
        drop();
        fail("JIT lookup of " + fname + " failed: " + m);
    }
    result->fn = sym->toPtr<weft_pipeline_fn>();
    for (auto &obj : objs)
        write_perf_map(obj, [&](const std::string &name) -> uint64_t {
            if (name == fname) return sym->getValue();
            auto a = js.jit->lookup(*jd, name);
            if (!a) {
                llvm::consumeError(a.takeError());
                return 0;
            }
            return a->getValue();
        });
    return result;
}

// One TargetMachine per thread and target (a TargetMachine is not for concurrent use).
llvm::TargetMachine *target_machine(const CPUTargetInfo &t) {
    thread_local std::map<std::string, std::unique_ptr<llvm::TargetMachine>> cache;
    std::string key = t.cpu + "|" + t.features;
    auto it = cache.find(key);
    if (it != cache.end()) return it->second.get();
    jit_state();  // initializes the native target
    std::string triple = llvm::sys::getProcessTriple();
    std::string err;
    const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, err);
    if (!target) fail("no LLVM target for " + triple + ": " + err);
    llvm::TargetOptions opts;
    opts.AllowFPOpFusion = llvm::FPOpFusion::Standard;  // (fuses only llvm.fmuladd, which weft never emits)
    std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
        triple, t.cpu, t.features, opts, llvm::Reloc::PIC_, llvm::CodeModel::Small, llvm::CodeGenOptLevel::Aggressive));
    if (!tm) fail("cannot create a TargetMachine for " + triple);
    return (cache[key] = std::move(tm)).get();
}

// ------------------------------------------------------------------ free variables

class CollectNames : public IRVisitor {
public:
    std::set<std::string> names;
    using IRVisitor::visit;

protected:
    void visit(const Variable *op) override { names.insert(op->name); }
    void visit(const Load *op) override {
        names.insert(op->name);
        IRVisitor::visit(op);
    }
    void visit(const Store *op) override {
        names.insert(op->name);
        IRVisitor::visit(op);
    }
};

/** Whether a statement reads or writes, at a fixed place, one of `buffers` that it also writes:
    a fixed place is an index that varies with no loop of the statement but those of at most 16
    steps (LLVM unrolls them; the index is then the same in every run of the statement, and a
    small buffer so used, accumulators say, may live in registers). A buffer the statement only
    reads lives in memory anyway. */
class FixedAccess : public IRVisitor {
public:
    const std::vector<std::string> *buffers = nullptr;

    /** A loop of the statement (the statement's own, before include()). */
    void loop(const For *op) {
        int64_t e = -1;
        if (!is_const_int(op->extent, &e) || e > 16) moving.insert(op->name);
    }
    bool found() const {
        for (const std::string &b : fixed)
            if (stored.count(b)) return true;
        return false;
    }

protected:
    std::set<std::string> moving;  // loops that LLVM does not unroll, and lets of them
    std::set<std::string> fixed;   // of `buffers`, those accessed at a fixed place
    std::set<std::string> stored;  // of `buffers`, those written

    bool mine(const std::string &buffer) { return std::find(buffers->begin(), buffers->end(), buffer) != buffers->end(); }
    bool moves(const Expr &e) { return expr_uses_any_var(e, moving); }
    void check(const std::string &buffer, const Expr &index) {
        if (mine(buffer) && !fixed.count(buffer) && !moves(index)) fixed.insert(buffer);
    }
    void visit(const For *op) override {
        loop(op);
        IRVisitor::visit(op);
    }
    void visit(const LetStmt *op) override {
        if (moves(op->value)) moving.insert(op->name);
        IRVisitor::visit(op);
    }
    void visit(const Let *op) override {
        if (moves(op->value)) moving.insert(op->name);
        IRVisitor::visit(op);
    }
    void visit(const Load *op) override {
        check(op->name, op->index);
        IRVisitor::visit(op);
    }
    void visit(const Store *op) override {
        check(op->name, op->index);
        if (mine(op->name)) stored.insert(op->name);
        IRVisitor::visit(op);
    }
};

/** Marks the functions that partition_functions may put in different parts: the bodies of
    parallel loops and the loop nests made functions of their own (called, not inlined). */
const char *const kPartAttr = "weft-part";

/** The size of each loop in IR nodes (about LLVM's instructions: a node of a vector wider
    than 512 bits counts once per 512 bits; the loops LLVM unrolls whole, once per step),
    parallel loops inside it apart (their bodies
    are functions of their own); total: the whole statement's, the same way. */
class LoopSizes : public IRVisitor {
public:
    std::unordered_map<const For *, size_t> size;
    std::unordered_set<const For *> outer;  // the loops with a loop inside
    std::unordered_map<const For *, int> loops_inside;  // (not counting itself)
    size_t total = 0;
    int loops = 0;  // the loops met (a loop in two places counts twice)

protected:
    void add(const Type &t) { total += std::max<size_t>(1, (size_t)t.bits() * (size_t)t.lanes() / 512); }
    void visit(const For *op) override {
        int loops_before = loops++;
        size_t before = total;
        IRVisitor::visit(op);
        if (loops > loops_before + 1) outer.insert(op);
        loops_inside[op] = loops - loops_before - 1;
        // (a short loop of constant extent LLVM unrolls whole: its size times its extent)
        int64_t e = 0;
        size_t n = total - before;
        if (op->for_type == ForType::Serial && is_const_int(op->extent, &e) && e > 1 && n * (size_t)e <= 800)
            total = before + n * (size_t)e;
        size[op] = total - before;
        if (op->for_type == ForType::Parallel) total = before + 1;
    }
    void visit(const Load *op) override {
        add(op->type);
        IRVisitor::visit(op);
    }
    void visit(const Store *op) override {
        total++;
        IRVisitor::visit(op);
    }
    void visit(const Call *op) override {
        add(op->type);
        IRVisitor::visit(op);
    }
#define WEFT_SIZE_OF(T)                 \
    void visit(const T *op) override {  \
        add(op->type);                  \
        IRVisitor::visit(op);           \
    }
    WEFT_SIZE_OF(Add) WEFT_SIZE_OF(Sub) WEFT_SIZE_OF(Mul) WEFT_SIZE_OF(Div) WEFT_SIZE_OF(Mod) WEFT_SIZE_OF(Min)
    WEFT_SIZE_OF(Max) WEFT_SIZE_OF(Select) WEFT_SIZE_OF(Cast) WEFT_SIZE_OF(EQ) WEFT_SIZE_OF(NE) WEFT_SIZE_OF(LT)
    WEFT_SIZE_OF(LE) WEFT_SIZE_OF(GT) WEFT_SIZE_OF(GE) WEFT_SIZE_OF(VectorReduce)
#undef WEFT_SIZE_OF
};

// ------------------------------------------------------------------ the code generator

struct Sym {
    llvm::Value *value = nullptr;
    int align = 0;  // known alignment in bytes of a pointer (0: element alignment only)
    /** A buffer's type-based alias tag: each allocation of the pipeline's own has one of its
        own (its memory overlaps no other buffer's), the buffers passed in share one. */
    llvm::MDNode *tbaa = nullptr;
    int64_t known_elems = -1;  // elements of an allocation of constant size, else -1
};

std::atomic<uint64_t> nests_from_big_nests{0};  // see nests_outlined_from_large_nests()

struct FnState {
    llvm::Function *fn = nullptr;
    llvm::BasicBlock *alloca_bb = nullptr;
    llvm::Value *ctx = nullptr;
    /** Live heap allocations, innermost last: each one's slot (an entry-block alloca holding
        the pointer, null once free_buffer() has given it back early). */
    std::vector<llvm::AllocaInst *> heap;
    std::map<std::string, std::vector<llvm::AllocaInst *>> heap_slots;  // by buffer name
    /** Every heap slot of the function (null until allocated, null again once freed), and the
        one block that frees them all and returns the failure's code (its phi): a failure with
        allocations live branches there. Each failure freeing what is live in place of its own
        would make code (and LLVM's time) grow with failures x allocations: a pipeline of N
        stages at root, N^2. */
    std::vector<llvm::AllocaInst *> slots;
    llvm::BasicBlock *fail_bb = nullptr;
    llvm::PHINode *fail_code = nullptr;
    bool nontemporal = false;         // emitted streaming stores: fence them before returning
};

class CodeGen {
public:
    CodeGen(llvm::LLVMContext &c, llvm::Module &m, const CPUTargetInfo &t)
        : ctx(c), mod(m), b(c), target(t) {
        // No contraction: a multiply-add is fused only where the front end made it an fma()
        // (where it was written), so results do not depend on the schedule.
        i1 = b.getInt1Ty();
        i8 = b.getInt8Ty();
        i32 = b.getInt32Ty();
        i64 = b.getInt64Ty();
        ptr = b.getPtrTy();
    }

    void compile(const LoweredFunc &f, const std::string &fname) {
        auto *fty = llvm::FunctionType::get(i32, {ptr, ptr}, false);
        llvm::Function *fn = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, fname, mod);
        FnState st;
        begin_function(st, fn, fn->getArg(1));
        llvm::Value *args = fn->getArg(0);
        for (size_t i = 0; i < f.args.size(); i++) {
            const LoweredArg &a = f.args[i];
            llvm::Value *slot = b.CreateLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, args, i), a.name + ".arg");
            if (a.kind == LoweredArg::Buffer) {
                llvm::Value *host = b.CreateLoad(ptr, slot, a.name);
                push(a.name, {host, 0, external_tbaa()});
                // weft_dim_t dim[8] starts at byte 16; each dim is 4 x i32.
                for (int d = 0; d < 8; d++) {
                    static const char *fields[3] = {"min", "extent", "stride"};
                    for (int k = 0; k < 3; k++) {
                        std::string n = buffer_field(a.name, fields[k], d);
                        llvm::Value *p = b.CreateConstInBoundsGEP1_64(i8, slot, 16 + d * 16 + k * 4);
                        push(n, {b.CreateLoad(i32, p, n), 0});
                    }
                }
            } else {
                llvm::Value *v;
                if (a.type.is_bool()) v = b.CreateICmpNE(b.CreateLoad(i8, slot), b.getInt8(0));
                else v = b.CreateLoad(llvm_type(a.type), slot);
                v->setName(a.name);
                push(a.name, {v, 0});
            }
        }
        LoopSizes sizes;
        sizes.include(f.body);
        outline_loops = sizes.loops > kOutlineLoops;
        loop_size = std::move(sizes.size);
        outer_loops = std::move(sizes.outer);
        loops_inside = std::move(sizes.loops_inside);
        mark_part(fn, choose_split_loops(f.body, sizes.total));
        codegen(f.body);
        end_function(st);
        outline_loops = false;
    }

private:
    llvm::LLVMContext &ctx;
    llvm::Module &mod;
    llvm::IRBuilder<> b;
    const CPUTargetInfo &target;
    llvm::Type *i1, *i8, *i32, *i64;
    llvm::PointerType *ptr;
    std::map<std::string, std::vector<Sym>> syms;
    FnState *fs = nullptr;
    int num_bodies = 0;
    int loop_depth = 0;          // loops around the code being generated, in this function
    bool outline_loops = false;  // a function with very many loops: see codegen_outlined
    static constexpr int kOutlineLoops = 64;
    static constexpr int kNestedOutlineLoops = 128;
    bool in_big_nest = false;  // inside a loop kept here for its many loops (codegen_for)
    std::unordered_map<const For *, size_t> loop_size;  // see LoopSizes
    std::set<const For *> split_loops;                  // see choose_split_loops
    bool in_split_loop = false;
    std::unordered_set<const For *> outer_loops;  // loops with a loop inside (LoopSizes)
    std::unordered_map<const For *, int> loops_inside;  // (LoopSizes)

    /** The loop nests of a function's body (of `total` IR nodes) made functions of their own,
        so that the module's parts compile in parallel (partition_functions): the largest
        loops under it that hold from a sixteenth to 70% of it, looking inside any loop that
        holds more (a function that is one loop around several stages splits at the stages).
        Called once per loop nest, so the code is the same on any machine; a call per loop
        nest run costs nothing next to the loop (it holds a sixteenth of a large function or
        more), and none is split off that uses a small buffer in registers (FixedAccess). */
    size_t choose_split_loops(const Stmt &body, size_t total) {
        const size_t kMinFunction = 100, kMinLoop = 20;
        static constexpr int64_t kPromotableBytes = 4096;  // (twice the vector registers)
        if (total < kMinFunction) return total;
        class Choose : public IRVisitor {
        public:
            CodeGen *cg;
            size_t total;
            size_t min_loop;
            size_t split = 0;  // the size of the loops split off

        protected:
            std::vector<std::string> small;  // small buffers on the stack around here

            void visit(const Allocate *op) override {
                int64_t n = 0;
                Type et = op->type.element_of();
                bool s = is_const_int(op->extent, &n) && n >= 0 && n * std::max(1, et.bytes()) <= kPromotableBytes &&
                         op->memory_type != MemoryType::Heap;
                if (s) small.push_back(op->name);
                IRVisitor::visit(op);
                if (s) small.pop_back();
            }
            void visit(const For *op) override {
                if (op->for_type == ForType::Parallel) return;  // (decided when its body is made)
                auto it = cg->loop_size.find(op);
                size_t n = it == cg->loop_size.end() ? 0 : it->second;
                auto inside = [&] { IRVisitor::visit(op); };
                if (n * 10 > total * 7) return inside();
                if (n * 16 < total || n < min_loop || op->for_type != ForType::Serial) return;
                // Not a loop that uses a small buffer of this function's stack at fixed places
                // (LLVM may keep such a buffer in registers, accumulators say, which it cannot
                // once a call takes its address), but maybe loops inside it.
                if (!small.empty()) {
                    FixedAccess fa;
                    fa.buffers = &small;
                    fa.loop(op);
                    fa.include(op->body);
                    if (fa.found()) return inside();
                }
                cg->split_loops.insert(op);
                split += n;
            }
            // (statements only: loops are not in expressions)
            void visit(const Let *) override {}
            void visit(const Call *) override {}
            void visit(const Load *) override {}
        } choose;
        choose.cg = this;
        choose.total = total;
        choose.min_loop = kMinLoop;
        choose.include(body);
        return total - std::min(total, choose.split);
    }
    /** Gives a function its size (IR nodes, for partition_functions) and marks it as one
        that may go to a part of its own. */
    static void mark_part(llvm::Function *fn, size_t size) { fn->addFnAttr(kPartAttr, std::to_string(size)); }

    // ---- type-based alias analysis: the buffers this kernel allocates overlap nothing else, so
    // LLVM may keep their values in registers across accesses to other buffers (it would
    // otherwise have to prove it, and gives up past a number of uses of a stack array).
    llvm::MDNode *tbaa_root = nullptr, *tbaa_external = nullptr;
    int tbaa_count = 0;
    llvm::MDNode *tbaa_tag(const std::string &name) {
        llvm::MDBuilder md(ctx);
        if (!tbaa_root) tbaa_root = md.createTBAARoot("weft");
        llvm::MDNode *type = md.createTBAAScalarTypeNode(name, tbaa_root);
        return md.createTBAAStructTagNode(type, type, 0);
    }
    llvm::MDNode *external_tbaa() {
        if (!tbaa_external) tbaa_external = tbaa_tag("weft.external");
        return tbaa_external;
    }
    llvm::MDNode *new_allocation_tbaa(const std::string &name) { return tbaa_tag(name + "#" + std::to_string(tbaa_count++)); }
    template <typename V>
    V *tag(V *v, const Sym &s) {
        if (s.tbaa)
            if (auto *i = llvm::dyn_cast<llvm::Instruction>(v)) i->setMetadata(llvm::LLVMContext::MD_tbaa, s.tbaa);
        return v;
    }

    // ---- symbols
    void push(const std::string &n, Sym s) { syms[n].push_back(s); }
    void pop(const std::string &n) {
        auto it = syms.find(n);
        it->second.pop_back();
        if (it->second.empty()) syms.erase(it);
    }
    const Sym &lookup(const std::string &n) {
        auto it = syms.find(n);
        if (it == syms.end()) fail("symbol not found in codegen: " + n);
        return it->second.back();
    }

    // ---- functions
    void begin_function(FnState &st, llvm::Function *fn, llvm::Value *ctxv) {
        fn->addFnAttr(llvm::Attribute::NoUnwind);
        if (!target.cpu.empty()) fn->addFnAttr("target-cpu", target.cpu);
        if (!target.features.empty()) fn->addFnAttr("target-features", target.features);
        st.fn = fn;
        st.ctx = ctxv;
        st.alloca_bb = llvm::BasicBlock::Create(ctx, "entry", fn);
        llvm::BasicBlock *body = llvm::BasicBlock::Create(ctx, "body", fn);
        b.SetInsertPoint(body);
        fs = &st;
    }
    void end_function(FnState &st) {
        // Streaming stores are weakly ordered: make them visible before the caller (or the
        // thread that waits for this parallel task) reads the output.
        if (st.nontemporal) b.CreateCall(llvm::Intrinsic::getDeclaration(&mod, llvm::Intrinsic::x86_sse_sfence));
        b.CreateRet(b.getInt32(0));
        if (st.fail_bb) {
            // Volatile loads: the slots stay in memory (promoted to registers, each would be a
            // phi of every failure's value of it).
            b.SetInsertPoint(st.fail_bb);
            for (auto it = st.slots.rbegin(); it != st.slots.rend(); ++it)
                b.CreateCall(rt("weft_rt_free"), {st.ctx, b.CreateLoad(ptr, *it, /*isVolatile=*/true)});
            b.CreateRet(st.fail_code);
        }
        b.SetInsertPoint(st.alloca_bb);
        b.CreateBr(&*std::next(st.fn->begin()));
    }
    llvm::AllocaInst *entry_alloca(llvm::Type *t, llvm::Value *n, unsigned align, const std::string &name) {
        llvm::IRBuilder<> eb(fs->alloca_bb, fs->alloca_bb->end());
        llvm::AllocaInst *a = eb.CreateAlloca(t, n, name);
        a->setAlignment(llvm::Align(align));
        return a;
    }
    // Frees every live heap allocation of this function and returns code: through the
    // function's one failure block where any is live (see FnState::slots).
    void emit_fail_return(llvm::Value *code) {
        if (fs->heap.empty()) {
            b.CreateRet(code);
            return;
        }
        if (!fs->fail_bb) {
            fs->fail_bb = llvm::BasicBlock::Create(ctx, "fail_cleanup", fs->fn);
            llvm::IRBuilder<> fb(fs->fail_bb);
            fs->fail_code = fb.CreatePHI(i32, 4, "fail_code");
        }
        fs->fail_code->addIncoming(code, b.GetInsertBlock());
        b.CreateBr(fs->fail_bb);
    }

    // ---- runtime
    llvm::FunctionCallee rt(const char *name) {
        llvm::FunctionType *t;
        if (!strcmp(name, "weft_rt_parallel_for")) t = llvm::FunctionType::get(i32, {ptr, ptr, ptr, i32, i32}, false);
        else if (!strcmp(name, "weft_rt_malloc")) t = llvm::FunctionType::get(ptr, {ptr, i64}, false);
        else if (!strcmp(name, "weft_rt_free")) t = llvm::FunctionType::get(b.getVoidTy(), {ptr, ptr}, false);
        else t = llvm::FunctionType::get(i32, {ptr, ptr, ptr, i32}, false);  // assert_fail
        llvm::FunctionCallee c = mod.getOrInsertFunction(name, t);
        if (auto *f = llvm::dyn_cast<llvm::Function>(c.getCallee())) f->addFnAttr(llvm::Attribute::NoUnwind);
        return c;
    }
    void call_rt_free(llvm::Value *p) { b.CreateCall(rt("weft_rt_free"), {fs->ctx, p}); }

    // ---- types
    llvm::Type *scalar_type(Type t) {
        switch (t.code()) {
        case TypeCode::Int:
        case TypeCode::UInt: return llvm::IntegerType::get(ctx, t.bits());
        case TypeCode::Bool: return i1;
        case TypeCode::Handle: return ptr;
        case TypeCode::BFloat: return b.getInt16Ty();  // (its conversions: bf16_to_f32, f32_to_bf16)
        case TypeCode::Float:
            if (t.bits() == 16) return b.getHalfTy();
            if (t.bits() == 32) return b.getFloatTy();
            if (t.bits() == 64) return b.getDoubleTy();
            break;
        }
        fail("unsupported type " + t.str());
    }
    llvm::Type *llvm_type(Type t) {
        llvm::Type *s = scalar_type(t.element_of());
        return t.lanes() == 1 ? s : llvm::FixedVectorType::get(s, t.lanes());
    }
    // In memory, Bool takes one byte.
    llvm::Type *mem_type(Type t) {
        if (t.is_bool()) return t.lanes() == 1 ? (llvm::Type *)i8 : llvm::FixedVectorType::get(i8, t.lanes());
        return llvm_type(t);
    }

    // ---- vector helpers
    llvm::Value *splat(int lanes, llvm::Value *v) {
        if (lanes == 1) return v;
        if (auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(v->getType())) {
            int k = vt->getNumElements();
            std::vector<int> mask;
            for (int i = 0; i < lanes; i++)
                for (int j = 0; j < k; j++) mask.push_back(j);
            return b.CreateShuffleVector(v, mask);
        }
        return b.CreateVectorSplat(lanes, v);
    }
    llvm::Value *const_like(llvm::Type *t, double v) {
        llvm::Type *s = t->getScalarType();
        llvm::Constant *c = s->isFloatingPointTy() ? llvm::ConstantFP::get(s, v)
                                                   : llvm::ConstantInt::get(s, (uint64_t)(int64_t)v, true);
        if (auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(t))
            return llvm::ConstantVector::getSplat(vt->getElementCount(), c);
        return c;
    }
    llvm::Value *intrinsic(llvm::Intrinsic::ID id, llvm::ArrayRef<llvm::Type *> tys, llvm::ArrayRef<llvm::Value *> args) {
        return b.CreateIntrinsic(id, tys, args);
    }

    // ================================================================== Exprs
    llvm::Value *codegen(const Expr &e) {
        if (!e.defined()) fail("undefined Expr in codegen");
        if (stack_low()) return on_large_stack<llvm::Value *>([&] { return codegen(e); });
        const ExprNode *n = e.get();
        Type t = e.type();
        switch (n->node_type) {
        case IRNodeType::IntImm: {
            auto *op = static_cast<const IntImm *>(n);
            return const_int(t, (uint64_t)op->value);
        }
        case IRNodeType::UIntImm: {
            auto *op = static_cast<const UIntImm *>(n);
            return const_int(t, op->value);
        }
        case IRNodeType::FloatImm: {
            auto *op = static_cast<const FloatImm *>(n);
            llvm::Value *c = t.is_bfloat() ? (llvm::Value *)llvm::ConstantInt::get(b.getInt16Ty(), bfloat16_t(op->value).bits)
                                           : llvm::ConstantFP::get(scalar_type(t.element_of()), op->value);
            return t.lanes() > 1 ? splat(t.lanes(), c) : c;
        }
        case IRNodeType::StringImm: {
            auto *op = static_cast<const StringImm *>(n);
            return b.CreateGlobalString(op->value, "str");
        }
        case IRNodeType::Variable: {
            auto *op = static_cast<const Variable *>(n);
            llvm::Value *v = lookup(op->name).value;
            llvm::Type *want = llvm_type(t);
            if (v->getType() != want) {
                if (v->getType()->isPointerTy() && want->isPointerTy()) return v;
                fail("variable " + op->name + " used with type " + t.str() + " that does not match its value");
            }
            return v;
        }
        case IRNodeType::Cast: return codegen_cast(t, static_cast<const Cast *>(n)->value);
        case IRNodeType::Add: {
            auto *op = static_cast<const Add *>(n);
            llvm::Value *a = codegen(op->a), *c = codegen(op->b);
            return t.is_float() ? b.CreateFAdd(a, c) : b.CreateAdd(a, c, "", false, index_nsw(t));
        }
        case IRNodeType::Sub: {
            auto *op = static_cast<const Sub *>(n);
            llvm::Value *a = codegen(op->a), *c = codegen(op->b);
            return t.is_float() ? b.CreateFSub(a, c) : b.CreateSub(a, c, "", false, index_nsw(t));
        }
        case IRNodeType::Mul: {
            auto *op = static_cast<const Mul *>(n);
            llvm::Value *a = codegen(op->a), *c = codegen(op->b);
            if (t.is_float()) return b.CreateFMul(a, c);
            if (t.is_bool()) return b.CreateAnd(a, c);
            return b.CreateMul(a, c, "", false, index_nsw(t));
        }
        case IRNodeType::Div: {
            auto *op = static_cast<const Div *>(n);
            return codegen_divmod(t, op->a, op->b, false);
        }
        case IRNodeType::Mod: {
            auto *op = static_cast<const Mod *>(n);
            return codegen_divmod(t, op->a, op->b, true);
        }
        case IRNodeType::Min:
        case IRNodeType::Max: {
            bool is_min = n->node_type == IRNodeType::Min;
            const Expr &ea = is_min ? static_cast<const Min *>(n)->a : static_cast<const Max *>(n)->a;
            const Expr &eb = is_min ? static_cast<const Min *>(n)->b : static_cast<const Max *>(n)->b;
            llvm::Value *a = codegen(ea), *c = codegen(eb);
            return minmax(t, a, c, is_min);
        }
        case IRNodeType::EQ: return cmp(n, static_cast<const EQ *>(n)->a, static_cast<const EQ *>(n)->b);
        case IRNodeType::NE: return cmp(n, static_cast<const NE *>(n)->a, static_cast<const NE *>(n)->b);
        case IRNodeType::LT: return cmp(n, static_cast<const LT *>(n)->a, static_cast<const LT *>(n)->b);
        case IRNodeType::LE: return cmp(n, static_cast<const LE *>(n)->a, static_cast<const LE *>(n)->b);
        case IRNodeType::GT: return cmp(n, static_cast<const GT *>(n)->a, static_cast<const GT *>(n)->b);
        case IRNodeType::GE: return cmp(n, static_cast<const GE *>(n)->a, static_cast<const GE *>(n)->b);
        case IRNodeType::And: {
            auto *op = static_cast<const And *>(n);
            llvm::Value *a = codegen(op->a), *c = codegen(op->b);
            return b.CreateAnd(a, c);
        }
        case IRNodeType::Or: {
            auto *op = static_cast<const Or *>(n);
            llvm::Value *a = codegen(op->a), *c = codegen(op->b);
            return b.CreateOr(a, c);
        }
        case IRNodeType::Not: return b.CreateNot(codegen(static_cast<const Not *>(n)->a));
        case IRNodeType::Select: {
            auto *op = static_cast<const Select *>(n);
            llvm::Value *c = codegen(op->condition);
            llvm::Value *tv = codegen(op->true_value), *fv = codegen(op->false_value);
            return b.CreateSelect(c, tv, fv);
        }
        case IRNodeType::Load: return codegen_load(static_cast<const Load *>(n));
        case IRNodeType::Ramp: {
            auto *op = static_cast<const Ramp *>(n);
            llvm::Value *base = codegen(op->base), *stride = codegen(op->stride);
            return ramp(base, stride, op->lanes);
        }
        case IRNodeType::Broadcast: {
            auto *op = static_cast<const Broadcast *>(n);
            return splat(op->lanes, codegen(op->value));
        }
        case IRNodeType::Let: {
            auto *op = static_cast<const Let *>(n);
            llvm::Value *v = codegen(op->value);
            if (!v->hasName() && !llvm::isa<llvm::Constant>(v)) v->setName(op->name);
            push(op->name, {v, 0});
            llvm::Value *r = codegen(op->body);
            pop(op->name);
            return r;
        }
        case IRNodeType::Call: return codegen_call(static_cast<const Call *>(n));
        case IRNodeType::VectorReduce: return codegen_reduce(static_cast<const VectorReduce *>(n));
        default: break;
        }
        fail("unexpected Expr node in codegen");
    }

    llvm::Value *const_int(Type t, uint64_t v) {
        llvm::Type *s = scalar_type(t.element_of());
        if (!s->isIntegerTy()) fail("integer constant of type " + t.str());
        llvm::Value *c = llvm::ConstantInt::get(s, v, false);
        return t.lanes() > 1 ? splat(t.lanes(), c) : c;
    }

    // base + i*stride for i in [0, lanes); a vector base of k lanes gives k*lanes lanes.
    llvm::Value *ramp(llvm::Value *base, llvm::Value *stride, int lanes) {
        int k = 1;
        if (auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(base->getType())) k = vt->getNumElements();
        int total = k * lanes;
        llvm::Value *vb = splat(lanes, base);
        llvm::Value *vs = splat(lanes, stride);
        llvm::Type *es = base->getType()->getScalarType();
        std::vector<llvm::Constant *> idx;
        for (int i = 0; i < lanes; i++)
            for (int j = 0; j < k; j++)
                idx.push_back(es->isFloatingPointTy() ? llvm::ConstantFP::get(es, (double)i)
                                                      : llvm::ConstantInt::get(es, (uint64_t)i));
        llvm::Value *iv = llvm::ConstantVector::get(idx);
        (void)total;
        if (es->isFloatingPointTy()) return b.CreateFAdd(vb, b.CreateFMul(vs, iv));
        return b.CreateAdd(vb, b.CreateMul(vs, iv));
    }

    llvm::Value *minmax(Type t, llvm::Value *a, llvm::Value *c, bool is_min) {
        llvm::Value *cond;
        if (t.is_float()) cond = is_min ? b.CreateFCmpOLT(a, c) : b.CreateFCmpOGT(a, c);
        else if (t.is_int()) cond = is_min ? b.CreateICmpSLT(a, c) : b.CreateICmpSGT(a, c);
        else cond = is_min ? b.CreateICmpULT(a, c) : b.CreateICmpUGT(a, c);  // uint, bool
        return b.CreateSelect(cond, a, c);
    }

    llvm::Value *cmp(const ExprNode *n, const Expr &ea, const Expr &eb) {
        Type t = ea.type();
        llvm::Value *a = codegen(ea), *c = codegen(eb);
        if (t.is_float()) {
            switch (n->node_type) {
            case IRNodeType::EQ: return b.CreateFCmpOEQ(a, c);
            case IRNodeType::NE: return b.CreateFCmpUNE(a, c);
            case IRNodeType::LT: return b.CreateFCmpOLT(a, c);
            case IRNodeType::LE: return b.CreateFCmpOLE(a, c);
            case IRNodeType::GT: return b.CreateFCmpOGT(a, c);
            default: return b.CreateFCmpOGE(a, c);
            }
        }
        if (t.is_handle()) {
            a = b.CreatePtrToInt(a, i64);
            c = b.CreatePtrToInt(c, i64);
        }
        bool s = t.is_int();
        switch (n->node_type) {
        case IRNodeType::EQ: return b.CreateICmpEQ(a, c);
        case IRNodeType::NE: return b.CreateICmpNE(a, c);
        case IRNodeType::LT: return s ? b.CreateICmpSLT(a, c) : b.CreateICmpULT(a, c);
        case IRNodeType::LE: return s ? b.CreateICmpSLE(a, c) : b.CreateICmpULE(a, c);
        case IRNodeType::GT: return s ? b.CreateICmpSGT(a, c) : b.CreateICmpUGT(a, c);
        default: return s ? b.CreateICmpSGE(a, c) : b.CreateICmpUGE(a, c);
        }
    }

    /** a << amt or a >> amt with weft's meaning (IROperator.cpp): the amount may have another
        integer type; a negative amount shifts the other way; the width or more shifts every
        bit out. No poison: LLVM's shifts only ever see amounts below the width. */
    llvm::Value *codegen_shift(const Call *op, llvm::Value *a, llvm::Value *amt) {
        Type t = op->type, tb = op->args.at(1).type();
        bool left = op->name == "shift_left";
        llvm::Type *ta = a->getType(), *tamt = amt->getType();
        const int bits = t.bits();
        llvm::Value *zero_b = llvm::Constant::getNullValue(tamt);
        llvm::Value *neg = tb.is_int() ? b.CreateICmpSLT(amt, zero_b) : nullptr;
        llvm::Value *mag = neg ? b.CreateSelect(neg, b.CreateSub(zero_b, amt), amt) : amt;  // unsigned magnitude
        llvm::Value *in_range = b.CreateICmpULT(mag, llvm::ConstantInt::get(tamt, (uint64_t)bits));
        llvm::Value *m = b.CreateZExtOrTrunc(mag, ta);
        llvm::Value *za = llvm::Constant::getNullValue(ta);
        m = b.CreateSelect(in_range, m, za);
        llvm::Value *shl = b.CreateSelect(in_range, b.CreateShl(a, m), za);
        llvm::Value *out_right = t.is_int() ? b.CreateAShr(a, llvm::ConstantInt::get(ta, (uint64_t)(bits - 1))) : za;
        llvm::Value *shr = b.CreateSelect(in_range, t.is_int() ? b.CreateAShr(a, m) : b.CreateLShr(a, m), out_right);
        if (!neg) return left ? shl : shr;
        return left ? b.CreateSelect(neg, shr, shl) : b.CreateSelect(neg, shl, shr);
    }

    llvm::Value *codegen_divmod(Type t, const Expr &ea, const Expr &eb, bool is_mod) {
        llvm::Value *a = codegen(ea);
        if (t.is_float()) {
            llvm::Value *c = codegen(eb);
            llvm::Value *q = b.CreateFDiv(a, c);
            if (!is_mod) return q;
            llvm::Value *f = intrinsic(llvm::Intrinsic::floor, {q->getType()}, {q});
            return b.CreateFSub(a, b.CreateFMul(c, f));
        }
        if (t.is_bool()) {
            // a / b: b must be true (else 0) -> a & b; a % b: always 0.
            llvm::Value *c = codegen(eb);
            return is_mod ? (llvm::Value *)llvm::Constant::getNullValue(a->getType()) : b.CreateAnd(a, c);
        }
        llvm::Type *ty = a->getType();
        llvm::Value *zero = llvm::Constant::getNullValue(ty);
        int64_t k = 0;
        bool is_k = is_const_int(eb, &k);
        if (is_k) {
            // Interpret k at the type's width.
            int bits = t.bits();
            if (bits < 64) {
                uint64_t mask = (uint64_t(1) << bits) - 1;
                uint64_t u = (uint64_t)k & mask;
                if (t.is_int() && (u >> (bits - 1))) k = (int64_t)(u | ~mask);
                else k = (int64_t)u;
            }
            if (k == 0) return zero;
        }
        llvm::Value *c = codegen(eb);
        if (t.is_uint()) {
            if (is_k) return is_mod ? b.CreateURem(a, c) : b.CreateUDiv(a, c);
            llvm::Value *cz = b.CreateICmpEQ(c, zero);
            llvm::Value *safe = b.CreateSelect(cz, const_like(ty, 1), c);
            llvm::Value *r = is_mod ? b.CreateURem(a, safe) : b.CreateUDiv(a, safe);
            return b.CreateSelect(cz, zero, r);
        }
        // Signed, rounding toward negative infinity.
        if (is_k && k > 0 && (k & (k - 1)) == 0) {
            // A power of two: floor division is an arithmetic shift, the modulo the low bits.
            int sh = 0;
            while ((int64_t(1) << sh) < k) sh++;
            return is_mod ? b.CreateAnd(a, llvm::ConstantInt::get(ty, (uint64_t)(k - 1))) : b.CreateAShr(a, llvm::ConstantInt::get(ty, (uint64_t)sh));
        }
        if (is_k && k > 0) {
            if (is_mod) {
                // r = a % k (trunc); r < 0 ? r + k : r
                llvm::Value *r = b.CreateSRem(a, c);
                return b.CreateSelect(b.CreateICmpSLT(r, zero), b.CreateAdd(r, c), r);
            }
            // floor(a / k) = ((a ^ s) / k) ^ s, s = a >> (bits-1)
            llvm::Value *s = b.CreateAShr(a, const_like(ty, t.bits() - 1));
            return b.CreateXor(b.CreateSDiv(b.CreateXor(a, s), c), s);
        }
        if (is_k && k == -1) return is_mod ? zero : b.CreateSub(zero, a);
        llvm::Value *safe = c, *cz = nullptr, *cm1 = nullptr;
        if (!is_k) {
            // Zero and -1 divisors are replaced by 1 (avoids division traps incl. INT_MIN / -1).
            cz = b.CreateICmpEQ(c, zero);
            cm1 = b.CreateICmpEQ(c, llvm::Constant::getAllOnesValue(ty));
            safe = b.CreateSelect(b.CreateOr(cz, cm1), const_like(ty, 1), c);
        }
        llvm::Value *q = b.CreateSDiv(a, safe);
        llvm::Value *r = b.CreateSRem(a, safe);
        // Adjust when the remainder is nonzero and its sign differs from the divisor's.
        llvm::Value *adj = b.CreateAnd(b.CreateICmpNE(r, zero), b.CreateICmpSLT(b.CreateXor(r, safe), zero));
        llvm::Value *res;
        if (is_mod) res = b.CreateSelect(adj, b.CreateAdd(r, safe), r);
        else res = b.CreateSub(q, b.CreateZExt(adj, ty));
        if (!is_k) {
            llvm::Value *m1 = is_mod ? zero : b.CreateSub(zero, a);
            res = b.CreateSelect(cm1, m1, res);
            res = b.CreateSelect(cz, zero, res);
        }
        return res;
    }

    // bfloat16 is an i16 in LLVM: its conversions are integer code (exact round to nearest even,
    // subnormals kept: the AVX-512 BF16 conversion instruction flushes them).
    llvm::Value *bf16_to_f32(llvm::Value *v, int lanes) {
        llvm::Type *i32t = llvm_type(Int(32, lanes));
        return b.CreateBitCast(b.CreateShl(b.CreateZExt(v, i32t), 16), llvm_type(Float(32, lanes)));
    }
    llvm::Value *f32_to_bf16(llvm::Value *v, int lanes) {
        llvm::Type *i32t = llvm_type(UInt(32, lanes));
        auto k = [&](uint32_t c) { return llvm::ConstantInt::get(i32t, c); };
        llvm::Value *u = b.CreateBitCast(v, i32t);
        llvm::Value *lsb = b.CreateAnd(b.CreateLShr(u, k(16)), k(1));
        llvm::Value *rounded = b.CreateLShr(b.CreateAdd(b.CreateAdd(u, k(0x7fff)), lsb), k(16));
        llvm::Value *isnan = b.CreateICmpUGT(b.CreateAnd(u, k(0x7fffffff)), k(0x7f800000));
        llvm::Value *qnan = b.CreateOr(b.CreateLShr(u, k(16)), k(0x40));
        return b.CreateTrunc(b.CreateSelect(isnan, qnan, rounded), llvm_type(UInt(16, lanes)));
    }
    llvm::Value *codegen_cast(Type to, const Expr &ev) { return cast_value(ev.type(), to, codegen(ev)); }
    llvm::Value *cast_value(Type from, Type to, llvm::Value *v) {
        if (from == to) return v;
        llvm::Type *dt = llvm_type(to);
        if (from.is_bfloat() || to.is_bfloat()) {
            // Lowering (lower/NarrowArithmetic.h) leaves conversions to and from float32 only;
            // others go through float32, which is exact from a bfloat16.
            int l = to.lanes();
            if (to.is_bfloat()) {
                if (from.element_of() != Float(32))
                    fail("conversion from " + from.str() + " to bfloat16 not through float32");
                return f32_to_bf16(v, l);
            }
            return cast_value(Float(32, l), to, bf16_to_f32(v, l));
        }
        if (to.is_bool()) {
            if (from.is_float()) return b.CreateFCmpUNE(v, llvm::Constant::getNullValue(v->getType()));
            if (from.is_handle()) v = b.CreatePtrToInt(v, i64);
            return b.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
        }
        if (from.is_bool()) {
            if (to.is_float()) return b.CreateUIToFP(v, dt);
            if (to.is_handle()) return b.CreateIntToPtr(b.CreateZExt(v, i64), dt);
            return b.CreateZExt(v, dt);
        }
        if (from.is_handle() || to.is_handle()) {
            if (from.is_handle() && to.is_handle()) return v;
            if (from.is_handle()) return b.CreateZExtOrTrunc(b.CreatePtrToInt(v, i64), dt);
            if (to.is_handle() && from.is_int_or_uint())
                return b.CreateIntToPtr(from.is_int() ? b.CreateSExtOrTrunc(v, i64) : b.CreateZExtOrTrunc(v, i64), dt);
            fail("unsupported cast from " + from.str() + " to " + to.str());
        }
        if (from.is_float() && to.is_float()) return b.CreateFPCast(v, dt);
        if (from.is_float()) {
            // Saturating float -> int (NaN -> 0) from plain vector instructions: clamp to the
            // largest source-float values inside the integer's range, convert, zero the NaNs.
            // (llvm.fptosi.sat on vectors is scalarized by the x86 backend: several times slower.)
            int bits = to.bits();
            double lo = to.is_int() ? -std::ldexp(1.0, bits - 1) : 0.0;
            double hi = to.is_int() ? std::ldexp(1.0, bits - 1) - 1 : std::ldexp(1.0, bits) - 1;
            if (from.bits() == 32) {
                float f = (float)hi;
                if ((double)f > hi) f = std::nextafter(f, 0.0f);
                hi = f;
            } else if (from.bits() == 64) {
                double d = hi;
                if (d >= std::ldexp(1.0, bits - (to.is_int() ? 1 : 0))) d = std::nextafter(d, 0.0);
                hi = d;
            }
            if (from.bits() != 32 && from.bits() != 64) {
                auto id = to.is_int() ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat;
                return intrinsic(id, {dt, v->getType()}, {v});
            }
            llvm::Type *ft = v->getType();
            llvm::Value *clo = llvm::ConstantFP::get(ft, lo), *chi = llvm::ConstantFP::get(ft, hi);
            llvm::Value *c = b.CreateSelect(b.CreateFCmpOLT(v, clo), clo, v);
            llvm::Value *over = b.CreateFCmpOGT(c, chi);
            c = b.CreateSelect(over, chi, c);
            llvm::Value *r = to.is_int() ? b.CreateFPToSI(c, dt) : b.CreateFPToUI(c, dt);
            // Above the largest representable value: the integer's maximum exactly.
            llvm::APInt imax = to.is_int() ? llvm::APInt::getSignedMaxValue(bits) : llvm::APInt::getMaxValue(bits);
            llvm::Value *maxv = llvm::ConstantInt::get(dt, imax);
            r = b.CreateSelect(over, maxv, r);
            llvm::Value *isnan = b.CreateFCmpUNO(v, v);
            return b.CreateSelect(isnan, llvm::Constant::getNullValue(dt), r);
        }
        if (to.is_float()) return from.is_int() ? b.CreateSIToFP(v, dt) : b.CreateUIToFP(v, dt);
        // int -> int
        if (to.bits() < from.bits()) return b.CreateTrunc(v, dt);
        if (to.bits() > from.bits()) return from.is_int() ? b.CreateSExt(v, dt) : b.CreateZExt(v, dt);
        return v;  // same width, signedness change only
    }

    // ---- memory
    llvm::Value *index64(llvm::Value *idx) {
        llvm::Type *t = idx->getType();
        llvm::Type *want = i64;
        if (auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(t)) want = llvm::FixedVectorType::get(i64, vt->getNumElements());
        if (t == want) return idx;
        return b.CreateSExt(idx, want);
    }
    // Alignment of an access to elements of type t (scalar) at an index known to be a multiple of `al` elements.
    llvm::Align access_align(const Sym &s, Type et, int al) {
        int eb = et.is_bool() ? 1 : et.bytes();
        uint64_t a = (uint64_t)eb;
        if (s.align > 0 && al > 0) {
            uint64_t x = (uint64_t)al * eb;
            x &= -x;  // largest power of two dividing al*eb
            x = std::min<uint64_t>(x, (uint64_t)s.align);
            if (x > a) a = x;
        }
        if (a & (a - 1)) a = 1;  // odd element sizes
        return llvm::Align(a);
    }
    // Returns the element pointer for a dense access (non-null), else the vector of pointers.
    bool dense_ramp(const Expr &index) {
        const Ramp *r = index.as<Ramp>();
        int64_t s = 0;
        return r && r->base.type().lanes() == 1 && is_const_int(r->stride, &s) && s == 1;
    }

    // Index arithmetic of loads and stores is built by lowering from in-bounds coordinates and
    // strides (buffers hold fewer than 2^31 elements): it is marked nsw, so that LLVM can fold
    // it into 64-bit addressing. Everything else keeps the IR's wrapping semantics.
    int index_depth = 0;
    bool index_nsw(Type t) const { return index_depth > 0 && t.is_int(); }
    llvm::Value *codegen_index(const Expr &e) {
        if (e.type() == Int(32)) return codegen_index64(e);  // scalar: computed in 64 bits
        index_depth++;
        llvm::Value *v = codegen(e);
        index_depth--;
        return v;
    }
    /** A scalar Int(32) index computed in 64-bit arithmetic: + - * of its leaves, each leaf
        sign-extended once, so no 32-bit wrap-around has to be preserved before addressing. */
    llvm::Value *codegen_index64(const Expr &e) {
        if (auto imm = e.as<IntImm>()) return b.getInt64(imm->value);
        IRNodeType nt = e.get()->node_type;
        if (nt == IRNodeType::Add || nt == IRNodeType::Sub || nt == IRNodeType::Mul) {
            auto *op = static_cast<const BinaryExprNode *>(e.get());
            llvm::Value *x = codegen_index64(op->a), *y = codegen_index64(op->b);
            if (nt == IRNodeType::Add) return b.CreateAdd(x, y, "", false, true);
            if (nt == IRNodeType::Sub) return b.CreateSub(x, y, "", false, true);
            return b.CreateMul(x, y, "", false, true);
        }
        return b.CreateSExt(codegen(e), i64);
    }

    /** The constant stride of a ramp index that strided_load() reads densely (2 to 4 either
        way, or -1: a reversed vector), else 0. */
    int64_t small_stride(const Expr &index, Type t) {
        const Ramp *r = index.as<Ramp>();
        int64_t st = 0;
        if (!r || r->base.type().lanes() != 1 || !is_const_int(r->stride, &st) || t.is_bool()) return 0;
        int64_t a = st < 0 ? -st : st;
        return (st == -1 || (a >= 2 && a <= 4)) && t.lanes() >= 2 && t.lanes() <= 64 ? st : 0;
    }
    /** A load at ramp(base, stride, n) as dense loads of the elements from the lowest address
        to the highest and one shuffle, instead of a gather: the last vector loaded is shifted
        to end at the highest element, so nothing outside the accessed range is read. */
    llvm::Value *strided_load(const Load *op, const Sym &s, int64_t stride) {
        const Ramp *r = op->index.as<Ramp>();
        Type t = op->type;
        int n = t.lanes();
        int64_t a = stride < 0 ? -stride : stride;
        int64_t span = a * (n - 1) + 1;  // elements from the lowest to the highest accessed
        int k = (int)((span + n - 1) / n);  // vectors of n loaded
        Expr lowest = stride > 0 ? r->base : Add::make(r->base, make_const(Int(32), stride * (n - 1)));
        llvm::Value *lo = index64(codegen_index(lowest));
        llvm::Type *elem = mem_type(t.element_of()), *vt = mem_type(t);
        llvm::Align al = access_align(s, t.element_of(), 0);
        std::vector<llvm::Value *> parts;
        for (int j = 0; j < k; j++) {
            int64_t at = j + 1 < k ? (int64_t)j * n : span - n;
            llvm::Value *p = b.CreateInBoundsGEP(elem, s.value, b.CreateAdd(lo, b.getInt64(at), "", false, true));
            parts.push_back(tag(b.CreateAlignedLoad(vt, p, al), s));
        }
        llvm::Value *all = parts.size() == 1 ? parts[0] : llvm::concatenateVectors(b, parts);
        std::vector<int> mask;
        for (int i = 0; i < n; i++) {
            int64_t o = a * (stride > 0 ? i : n - 1 - i);  // offset from the lowest element
            mask.push_back((int)(o < (int64_t)(k - 1) * n ? o : (int64_t)(k - 1) * n + (o - (span - n))));
        }
        return b.CreateShuffleVector(all, mask);
    }

    /** A vector index whose lanes i are, for base = C * q + r, a * q + offset + off[r][i]: a
        sum of broadcasts, divisions and remainders by constants c (C their lcm, at most 8) of
        ramps of stride 1 whose bases differ from base by constants, and constant multiples of
        those: an upsampling's x / 2 (nearest), its columns x / 2 - 1 + 2 * (x % 2) with x / 2
        (bilinear), (x + 1) / 3, and the like. off[r] is what the lanes read for base's remainder
        r. */
    struct LanePattern {
        Expr base, offset;
        int64_t C = 1, a = 0;
        std::vector<std::vector<int64_t>> off;
    };
    bool lane_pattern_index(const Expr &index, Type t, LanePattern &p) {
        if (t.is_bool() || t.lanes() < 2 || t.lanes() > 256) return false;
        const int n = t.lanes();
        struct Term {
            bool mod;        // a remainder (else a division)
            int64_t c, k, m;  // by c, of ramp(base + k, 1, n), times m
        };
        std::vector<Term> terms;
        std::vector<int64_t> lanes_const(n, 0);
        auto fdiv = [](int64_t a, int64_t c) { return a >= 0 ? a / c : -((-a + c - 1) / c); };
        Expr offset;
        auto scalar_diff = [&](const Expr &b, int64_t *k) {
            if (!p.base.defined()) {
                p.base = b;
                *k = 0;
                return true;
            }
            return is_const_int(simplify(Sub::make(b, p.base)), k);
        };
        std::function<bool(const Expr &, int64_t)> walk = [&](const Expr &e, int64_t m) -> bool {
            if (terms.size() > 8) return false;
            if (auto x = e.as<Add>()) return walk(x->a, m) && walk(x->b, m);
            if (auto x = e.as<Sub>()) return walk(x->a, m) && walk(x->b, -m);
            int64_t k = 0;
            if (auto x = e.as<Mul>()) {
                auto cb = x->b.as<Broadcast>();
                auto ca = x->a.as<Broadcast>();
                bool by_b = cb && is_const_int(cb->value, &k);
                if (!by_b && !(ca && is_const_int(ca->value, &k))) return false;
                if (k < -(1 << 20) || k > (1 << 20) || std::abs(m * k) > ((int64_t)1 << 30)) return false;
                return walk(by_b ? x->a : x->b, m * k);
            }
            if (auto bc = e.as<Broadcast>()) {
                if (bc->value.type().lanes() != 1) return false;
                Expr v = m == 1 ? bc->value : Mul::make(bc->value, make_const(bc->value.type(), m));
                offset = offset.defined() ? Add::make(offset, v) : v;
                return true;
            }
            const Expr *num = nullptr, *den = nullptr;
            bool mod = false;
            if (auto x = e.as<Div>()) num = &x->a, den = &x->b;
            else if (auto x = e.as<Mod>()) num = &x->a, den = &x->b, mod = true;
            else return false;
            auto r = num->as<Ramp>();
            auto cb = den->as<Broadcast>();
            int64_t one = 0, c = 0, b0 = 0, st = 0;
            if (!r || !cb || r->lanes != n || r->base.type().lanes() != 1 || !is_const_int(cb->value, &c) || c < 1) return false;
            if (is_const_int(r->base, &b0) && is_const_int(r->stride, &st) && std::abs(b0) < (1 << 20) && std::abs(st) < (1 << 20)) {
                // Lanes known here (the simplifier's ramp(0, 1, n) % 2 where the base was even).
                for (int i = 0; i < n; i++) {
                    int64_t v = b0 + st * i;
                    lanes_const[i] += m * (mod ? v - fdiv(v, c) * c : fdiv(v, c));
                }
                return true;
            }
            if (!is_const_int(r->stride, &one) || one != 1 || c < 2 || c > 8 || !scalar_diff(r->base, &k) || k < -64 || k > 64)
                return false;
            terms.push_back({mod, c, k, m});
            return true;
        };
        if (!walk(index, 1) || terms.empty()) return false;
        int64_t C = 1;
        for (auto &tm : terms) C = std::lcm(C, tm.c);
        if (C > 8) return false;
        p.C = C;
        p.a = 0;
        for (auto &tm : terms)
            if (!tm.mod) p.a += tm.m * (C / tm.c);
        p.offset = offset.defined() ? offset : make_zero(p.base.type());
        p.off.assign((size_t)C, lanes_const);
        for (int64_t r = 0; r < C; r++)
            for (int i = 0; i < n; i++)
                for (auto &tm : terms) {
                    int64_t v = r + tm.k + i;
                    p.off[r][i] += tm.m * (tm.mod ? v - fdiv(v, tm.c) * tm.c : fdiv(v, tm.c));
                }
        return true;
    }
    /** A load at a LanePattern index without a gather, where every remainder reads a common
        dense range [A, B] and at most two elements besides: that range loaded as a vector, the
        others alone (at offsets chosen by the remainder), then the shuffle for the remainder.
        Nothing outside the elements accessed is read. Null where the pattern is not of that
        kind. */
    llvm::Value *lane_pattern_load(Type t, const Sym &s, const LanePattern &p) {
        const int n = t.lanes();
        int64_t A = INT64_MIN, B = INT64_MAX;
        for (auto &o : p.off) {
            A = std::max(A, *std::min_element(o.begin(), o.end()));
            B = std::min(B, *std::max_element(o.begin(), o.end()));
        }
        if (A > B || B - A + 1 > 2 * n) return nullptr;
        std::vector<std::vector<int64_t>> extra(p.off.size());
        for (size_t r = 0; r < p.off.size(); r++) {
            std::set<int64_t> seen(p.off[r].begin(), p.off[r].end());
            for (int64_t v = A; v <= B; v++)
                if (!seen.count(v)) return nullptr;  // the common range is not read whole
            for (int64_t v : seen)
                if (v < A || v > B) extra[r].push_back(v);
            if (extra[r].size() > 2) return nullptr;
        }
        size_t m = 0;
        for (auto &e : extra) m = std::max(m, e.size());
        const int L = (int)(B - A + 1);
        Type it = p.base.type();
        Expr C = make_const(it, p.C);
        Expr start = Add::make(Mul::make(Div::make(p.base, C), make_const(it, p.a)), p.offset);
        llvm::Value *lo = index64(codegen_index(Add::make(start, make_const(it, A))));
        llvm::Value *st = index64(codegen_index(start));
        llvm::Value *rem = codegen(Mod::make(p.base, C));
        llvm::Type *elem = mem_type(t.element_of());
        llvm::Align al = access_align(s, t.element_of(), 0);
        llvm::Value *dense = tag(b.CreateAlignedLoad(llvm::FixedVectorType::get(elem, L), b.CreateInBoundsGEP(elem, s.value, lo), al), s);
        int P = 1;
        while (P < L + (int)m) P *= 2;
        std::vector<int> widen;
        for (int i = 0; i < P; i++) widen.push_back(i < L ? i : L);  // lanes from L on: poison, then the extras
        llvm::Value *all = b.CreateShuffleVector(dense, llvm::PoisonValue::get(dense->getType()), widen);
        for (size_t j = 0; j < m; j++) {
            // The j-th extra element of the remainder taken (or A, read anyway, where it has none).
            llvm::Value *o = nullptr;
            for (int64_t r = (int64_t)p.C - 1; r >= 0; r--) {
                int64_t v = j < extra[r].size() ? extra[r][j] : A;
                llvm::Value *c = b.getInt64(v);
                o = o ? b.CreateSelect(b.CreateICmpEQ(rem, llvm::ConstantInt::get(rem->getType(), r)), c, o) : c;
            }
            llvm::Value *e = tag(b.CreateAlignedLoad(elem, b.CreateInBoundsGEP(elem, s.value, b.CreateAdd(st, o)), al), s);
            all = b.CreateInsertElement(all, e, (uint64_t)(L + j));
        }
        llvm::Value *result = nullptr;
        for (int64_t r = (int64_t)p.C - 1; r >= 0; r--) {
            std::vector<int> mask;
            for (int i = 0; i < n; i++) {
                int64_t v = p.off[r][i];
                if (v >= A && v <= B) mask.push_back((int)(v - A));
                else mask.push_back(L + (int)(std::find(extra[r].begin(), extra[r].end(), v) - extra[r].begin()));
            }
            llvm::Value *v = b.CreateShuffleVector(all, mask);
            result = result ? b.CreateSelect(b.CreateICmpEQ(rem, llvm::ConstantInt::get(rem->getType(), r)), v, result) : v;
        }
        return result;
    }

    /** A vector index clamp(ramp(base, 1, lanes), lo, hi) + offset (a boundary condition such
        as repeat_edge in a vector loop; either order of min and max), the rest broadcasts. */
    struct ClampedRamp {
        Expr base, lo, hi, offset;
        int lanes = 0;
    };
    /** e = Outer(Inner(inner, broadcast(ib)), broadcast(ob)). */
    template <typename Outer, typename Inner>
    static bool clamp_form(const Expr &e, Expr &inner, Expr &ob, Expr &ib) {
        auto o = e.as<Outer>();
        auto i = o ? o->a.template as<Inner>() : nullptr;
        auto bo = o ? o->b.template as<Broadcast>() : nullptr;
        auto bi = i ? i->b.template as<Broadcast>() : nullptr;
        if (!bo || !bi) return false;
        inner = i->a;
        ob = bo->value;
        ib = bi->value;
        return true;
    }
    /** max(r, broadcast(lo)) or min(r, broadcast(hi)) (either operand order): a clamp on one
        side (the first or last vectors of a row under a boundary condition, once loop
        partitioning has removed the other side); the missing bound is the type's extreme. */
    static bool one_sided_clamp(const Expr &e, Expr &inner, Expr &lo, Expr &hi) {
        auto pick = [&](const Expr &a, const Expr &b, bool is_max) {
            auto bc = b.as<Broadcast>();
            if (!bc || !a.as<Ramp>() || !a.type().element_of().is_int()) return false;
            Type t = a.type().element_of();
            inner = a;
            (is_max ? lo : hi) = bc->value;
            (is_max ? hi : lo) = is_max ? t.max() : t.min();
            return true;
        };
        if (auto m = e.as<Max>()) return pick(m->a, m->b, true) || pick(m->b, m->a, true);
        if (auto m = e.as<Min>()) return pick(m->a, m->b, false) || pick(m->b, m->a, false);
        return false;
    }
    bool clamped_ramp_index(const Expr &index, ClampedRamp &c) {
        std::vector<Expr> terms;
        std::function<bool(const Expr &)> walk = [&](const Expr &e) {
            if (auto a = e.as<Add>()) return walk(a->a) && walk(a->b);
            terms.push_back(e);
            return terms.size() <= 8;
        };
        if (!index.type().is_vector() || !walk(index)) return false;
        Expr offset;
        const Ramp *ramp = nullptr;
        Expr lo, hi;
        for (const Expr &e : terms) {
            if (auto bc = e.as<Broadcast>()) {
                if (bc->value.type().lanes() != 1) return false;
                offset = offset.defined() ? Add::make(offset, bc->value) : bc->value;
                continue;
            }
            if (ramp) return false;
            // max(min(r, hi), lo) or min(max(r, lo), hi)
            Expr inner, l, h;
            if (!clamp_form<Max, Min>(e, inner, l, h) && !clamp_form<Min, Max>(e, inner, h, l) &&
                !one_sided_clamp(e, inner, l, h))
                return false;
            auto r = inner.as<Ramp>();
            int64_t one = 0;
            if (!r || r->base.type().lanes() != 1 || !is_const_int(r->stride, &one) || one != 1 ||
                l.type().lanes() != 1 || h.type().lanes() != 1)
                return false;
            ramp = r;
            lo = l;
            hi = h;
        }
        if (!ramp) return false;
        c.base = ramp->base;
        c.lo = lo;
        c.hi = hi;
        c.lanes = ramp->lanes;
        c.offset = offset.defined() ? offset : make_zero(ramp->base.type());
        return true;
    }

    /** Does the target's LLVM feature string ("+avx2,-amx-tile,...") enable each of fs? */
    bool has_features(std::initializer_list<const char *> fs) const {
        std::string all = "," + target.features + ",";
        for (const char *f : fs)
            if (all.find(std::string(",+") + f + ",") == std::string::npos) return false;
        return true;
    }

    /** A gather of bytes from a table of the pipeline's own of constant size (a tone curve, a
        histogram's map), where the index is known to stay in at most 1024 of its elements and
        the target has AVX-512 VBMI: the elements the index can reach are loaded as vectors of 64
        bytes (masked to that range, nothing else read) and each 64 lanes are looked up with one
        vpermi2b per 128 bytes and a blend by the index's high bits, instead of a load per lane
        (about 24 instructions for 64 lanes instead of about 190). Null where not so. */
    llvm::Value *table_lookup(const Load *op, const Sym &s) {
        Type t = op->type;
        int n = t.lanes();
        if (t.bits() != 8 || t.is_bool() || s.known_elems <= 0 || !(n == 16 || n == 32 || n % 64 == 0) ||
            op->index.type().bits() != 32 || !has_features({"avx512bw", "avx512vbmi"}))
            return nullptr;
        Interval I = bounds_of_expr_in_scope(op->index, Scope());
        int64_t lo = 0, hi = 0;
        if (!I.min.defined() || !I.max.defined() || !is_const_int(simplify(I.min), &lo) ||
            !is_const_int(simplify(I.max), &hi) || lo < 0 || hi >= s.known_elems || lo > hi)
            return nullptr;
        int64_t base = lo & ~int64_t(127);
        int64_t groups = (hi - base) / 128 + 1;
        if (groups > 8) return nullptr;
        auto *v64 = llvm::FixedVectorType::get(i8, 64);
        llvm::Value *zero = llvm::Constant::getNullValue(v64);
        std::vector<llvm::Value *> chunk;
        for (int64_t j = 0; j < 2 * groups; j++) {
            int64_t start = base + 64 * j;
            if (start > hi || start + 63 < lo) {
                chunk.push_back(zero);
                continue;
            }
            llvm::Value *p = b.CreateInBoundsGEP(i8, s.value, b.getInt64(start));
            if (start >= lo && start + 63 <= hi) {
                chunk.push_back(tag(b.CreateAlignedLoad(v64, p, llvm::Align(start % 64 == 0 && s.align >= 64 ? 64 : 1)), s));
                continue;
            }
            std::vector<llvm::Constant *> m;
            for (int64_t i = 0; i < 64; i++) m.push_back(b.getInt1(start + i >= lo && start + i <= hi));
            chunk.push_back(tag(b.CreateMaskedLoad(v64, p, llvm::Align(1), llvm::ConstantVector::get(m), zero), s));
        }
        llvm::Function *perm = llvm::Intrinsic::getDeclaration(&mod, llvm::Intrinsic::x86_avx512_vpermi2var_qi_512);
        llvm::Value *idx = b.CreateSub(codegen(op->index), splat(n, b.getInt32((uint32_t)base)));
        std::vector<llvm::Value *> blocks;
        for (int k = 0; k < std::max(1, n / 64); k++) {
            std::vector<int> lanes;
            for (int i = 0; i < 64; i++) lanes.push_back(n >= 64 ? 64 * k + i : (i < n ? i : 0));
            llvm::Value *blk = b.CreateShuffleVector(idx, lanes);
            llvm::Value *idx8 = b.CreateTrunc(blk, v64);
            llvm::Value *grp8 = b.CreateTrunc(b.CreateLShr(blk, splat(64, b.getInt32(7))), v64);
            llvm::Value *r = b.CreateCall(perm, {chunk[0], idx8, chunk[1]});
            for (int64_t g = 1; g < groups; g++) {
                llvm::Value *rg = b.CreateCall(perm, {chunk[2 * g], idx8, chunk[2 * g + 1]});
                r = b.CreateSelect(b.CreateICmpEQ(grp8, splat(64, b.getInt8((uint8_t)g))), rg, r);
            }
            blocks.push_back(r);
        }
        llvm::Value *r = blocks.size() == 1 ? blocks[0] : llvm::concatenateVectors(b, blocks);
        if (n < 64) {
            std::vector<int> first;
            for (int i = 0; i < n; i++) first.push_back(i);
            r = b.CreateShuffleVector(r, first);
        }
        return r;
    }

    /** A vector load lane by lane (each lane's index computed). */
    llvm::Value *gather(const Load *op, const Sym &s) {
        Type t = op->type;
        llvm::Value *ptrs = b.CreateInBoundsGEP(mem_type(t.element_of()), s.value, index64(codegen_index(op->index)));
        llvm::Value *mask = llvm::ConstantInt::getTrue(llvm::FixedVectorType::get(i1, t.lanes()));
        return tag(b.CreateMaskedGather(mem_type(t), ptrs, access_align(s, t.element_of(), 0), mask), s);
    }

    llvm::Value *codegen_load(const Load *op) {
        Type t = op->type;
        Sym s = lookup(op->name);
        llvm::Value *base = s.value;
        llvm::Type *elem = mem_type(t.element_of());
        llvm::Value *result;
        if (t.lanes() == 1) {
            llvm::Value *p = b.CreateInBoundsGEP(elem, base, index64(codegen_index(op->index)));
            result = tag(b.CreateAlignedLoad(elem, p, access_align(s, t.element_of(), op->alignment)), s);
        } else if (dense_ramp(op->index)) {
            const Ramp *r = op->index.as<Ramp>();
            llvm::Value *p = b.CreateInBoundsGEP(elem, base, index64(codegen_index(r->base)));
            result = tag(b.CreateAlignedLoad(mem_type(t), p, access_align(s, t.element_of(), op->alignment)), s);
        } else if (int64_t stride = small_stride(op->index, t)) {
            result = strided_load(op, s, stride);
        } else if (LanePattern lp; lane_pattern_index(op->index, t, lp) && (result = lane_pattern_load(t, s, lp))) {
        } else if (ClampedRamp c; clamped_ramp_index(op->index, c)) {
            // Where the whole vector is inside [lo, hi] (all but the vectors at the edges), the
            // clamp does nothing: one dense load, checked at run time; else the gather.
            llvm::Value *vb = codegen(c.base), *vlo = codegen(c.lo), *vhi = codegen(c.hi);
            llvm::Value *last = b.CreateAdd(vb, llvm::ConstantInt::get(vb->getType(), (uint64_t)(c.lanes - 1)));
            llvm::Value *inside = b.CreateAnd(b.CreateICmpSGE(vb, vlo), b.CreateICmpSLE(last, vhi));
            auto *in_bb = llvm::BasicBlock::Create(ctx, "clamp.inside", fs->fn);
            auto *edge_bb = llvm::BasicBlock::Create(ctx, "clamp.edge", fs->fn);
            auto *done_bb = llvm::BasicBlock::Create(ctx, "clamp.done", fs->fn);
            b.CreateCondBr(inside, in_bb, edge_bb, llvm::MDBuilder(ctx).createBranchWeights(1000, 1));
            b.SetInsertPoint(in_bb);
            llvm::Value *p = b.CreateInBoundsGEP(elem, base, index64(codegen_index(Add::make(c.base, c.offset))));
            llvm::Value *dense = tag(b.CreateAlignedLoad(mem_type(t), p, access_align(s, t.element_of(), 0)), s);
            llvm::BasicBlock *in_end = b.GetInsertBlock();
            b.CreateBr(done_bb);
            b.SetInsertPoint(edge_bb);
            llvm::Value *gathered = gather(op, s);
            llvm::BasicBlock *edge_end = b.GetInsertBlock();
            b.CreateBr(done_bb);
            b.SetInsertPoint(done_bb);
            llvm::PHINode *phi = b.CreatePHI(mem_type(t), 2);
            phi->addIncoming(dense, in_end);
            phi->addIncoming(gathered, edge_end);
            result = phi;
        } else if ((result = table_lookup(op, s))) {
        } else {
            warn_lanes(true, op->name);
            result = gather(op, s);
        }
        if (t.is_bool()) result = b.CreateICmpNE(result, llvm::Constant::getNullValue(result->getType()));
        return result;
    }

    /** A streaming store of a whole vector: x86 streams only aligned vectors of 16-64 bytes (an
        unaligned one would be split into scalar streaming stores), so where the alignment is not
        known here the address is checked at run time, the unaligned case storing plainly. */
    static bool streamable(uint64_t bytes) {
        static const bool x86 = llvm::Triple(llvm::sys::getProcessTriple()).isX86();
        return x86 && bytes >= 16 && bytes <= 64 && !(bytes & (bytes - 1));
    }
    void store_nontemporal(llvm::Value *v, llvm::Value *p, llvm::Align known, uint64_t bytes, const Sym &s) {
        if (!streamable(bytes)) {
            tag(b.CreateAlignedStore(v, p, known), s);
            return;
        }
        fs->nontemporal = true;
        auto stream = [&] {
            llvm::StoreInst *st = tag(b.CreateAlignedStore(v, p, llvm::Align(bytes)), s);
            st->setMetadata(llvm::LLVMContext::MD_nontemporal,
                            llvm::MDNode::get(ctx, {llvm::ConstantAsMetadata::get(b.getInt32(1))}));
        };
        if (known.value() >= bytes) return stream();
        llvm::Value *aligned = b.CreateICmpEQ(b.CreateAnd(b.CreatePtrToInt(p, i64), b.getInt64(bytes - 1)), b.getInt64(0));
        auto *nt_bb = llvm::BasicBlock::Create(ctx, "nt.store", fs->fn);
        auto *plain_bb = llvm::BasicBlock::Create(ctx, "plain.store", fs->fn);
        auto *done_bb = llvm::BasicBlock::Create(ctx, "store.done", fs->fn);
        b.CreateCondBr(aligned, nt_bb, plain_bb, llvm::MDBuilder(ctx).createBranchWeights(1000, 1));
        b.SetInsertPoint(nt_bb);
        stream();
        b.CreateBr(done_bb);
        b.SetInsertPoint(plain_bb);
        tag(b.CreateAlignedStore(v, p, known), s);
        b.CreateBr(done_bb);
        b.SetInsertPoint(done_bb);
    }

    /** Streaming stores of vectors vs at ps, all of whose addresses are congruent modulo
        `bytes` (a block's rows, at multiples of the vector's bytes from one another): one check
        of the first address, then all streamed or all stored plainly (store_nontemporal's
        branch per store made LLVM's optimisation of a transposed block's 16 rows 7 ms longer). */
    void store_nontemporal_rows(const std::vector<llvm::Value *> &vs, const std::vector<llvm::Value *> &ps, llvm::Align known,
                                uint64_t bytes, const Sym &s) {
        if (!streamable(bytes) || known.value() >= bytes || vs.size() < 2) {
            for (size_t j = 0; j < vs.size(); j++) store_nontemporal(vs[j], ps[j], known, bytes, s);
            return;
        }
        fs->nontemporal = true;
        llvm::Value *aligned = b.CreateICmpEQ(b.CreateAnd(b.CreatePtrToInt(ps[0], i64), b.getInt64(bytes - 1)), b.getInt64(0));
        auto *nt_bb = llvm::BasicBlock::Create(ctx, "nt.rows", fs->fn);
        auto *plain_bb = llvm::BasicBlock::Create(ctx, "plain.rows", fs->fn);
        auto *done_bb = llvm::BasicBlock::Create(ctx, "rows.done", fs->fn);
        b.CreateCondBr(aligned, nt_bb, plain_bb, llvm::MDBuilder(ctx).createBranchWeights(1000, 1));
        b.SetInsertPoint(nt_bb);
        for (size_t j = 0; j < vs.size(); j++) store_nontemporal(vs[j], ps[j], llvm::Align(bytes), bytes, s);
        b.CreateBr(done_bb);
        b.SetInsertPoint(plain_bb);
        for (size_t j = 0; j < vs.size(); j++) tag(b.CreateAlignedStore(vs[j], ps[j], known), s);
        b.CreateBr(done_bb);
        b.SetInsertPoint(done_bb);
    }

    /** An atomic read-modify-write: one atomicrmw where LLVM has the operation (integer add,
        sub, min, max; float add, sub), else a compare-and-swap loop on the element's bits. */
    void codegen_atomic_store(const Store *op) {
        Type t = op->value.type();
        if (t.is_vector() || t.is_bool()) fail("atomic store of " + t.str() + " to " + op->name);
        Sym s = lookup(op->name);
        llvm::Type *elem = mem_type(t);
        llvm::Value *p = b.CreateInBoundsGEP(elem, s.value, index64(codegen_index(op->index)));
        llvm::Align al = access_align(s, t, op->alignment);
        const std::string old = op->name + ".atomic_old";
        AtomicUpdate u = atomic_update(op, old);
        const auto mono = llvm::AtomicOrdering::Monotonic;
        if (u.op == AtomicUpdate::Plain) {
            llvm::StoreInst *st = b.CreateAlignedStore(codegen(u.value), p, al);
            st->setAtomic(mono);
            return;
        }
        using RMW = llvm::AtomicRMWInst;
        RMW::BinOp rmw = RMW::BAD_BINOP;
        if (t.is_float()) {
            if (u.op == AtomicUpdate::Add) rmw = RMW::FAdd;
            else if (u.op == AtomicUpdate::Sub) rmw = RMW::FSub;
        } else {
            bool sg = t.is_int();
            if (u.op == AtomicUpdate::Add) rmw = RMW::Add;
            else if (u.op == AtomicUpdate::Sub) rmw = RMW::Sub;
            else if (u.op == AtomicUpdate::Min) rmw = sg ? RMW::Min : RMW::UMin;
            else if (u.op == AtomicUpdate::Max) rmw = sg ? RMW::Max : RMW::UMax;
        }
        if (rmw != RMW::BAD_BINOP) {
            b.CreateAtomicRMW(rmw, p, codegen(u.operand), al, mono);
            return;
        }
        llvm::Type *bits = b.getIntNTy(t.bits());
        llvm::LoadInst *init = b.CreateAlignedLoad(elem, p, al, old + ".init");
        init->setAtomic(mono);
        llvm::BasicBlock *pre = b.GetInsertBlock();
        llvm::BasicBlock *loop = llvm::BasicBlock::Create(ctx, "atomic.loop", fs->fn);
        llvm::BasicBlock *done = llvm::BasicBlock::Create(ctx, "atomic.done", fs->fn);
        b.CreateBr(loop);
        b.SetInsertPoint(loop);
        llvm::PHINode *cur = b.CreatePHI(elem, 2, old);
        cur->addIncoming(init, pre);
        push(old, {cur, 0});
        llvm::Value *nv = codegen(u.value);
        pop(old);
        llvm::Value *pair = b.CreateAtomicCmpXchg(p, b.CreateBitCast(cur, bits), b.CreateBitCast(nv, bits), al, mono, mono);
        llvm::Value *seen = b.CreateBitCast(b.CreateExtractValue(pair, 0), elem);
        cur->addIncoming(seen, b.GetInsertBlock());
        b.CreateCondBr(b.CreateExtractValue(pair, 1), done, loop);
        b.SetInsertPoint(done);
    }

    /** The loops around the code being generated, and the buffer being stored: for warnings. */
    std::vector<std::string> loop_names;
    std::string storing;
    /** A warning (ir/Warnings.h) for a vector access lane by lane: a gather or a scatter. */
    void warn_lanes(bool load, const std::string &buf) {
        std::string where = loop_names.empty() ? "" : " inside loop \"" + loop_names.back() + "\"";
        // The Func: a Tuple's value k > 0 is stored as "f.v<k>"; a load in a let before the store
        // is in the Func's loop ("f.s1.x").
        std::string func = func_of_buffer(storing);
        for (size_t i = loop_names.size(); func.empty() && i-- > 0;)
            if (func_of_loop(loop_names[i]) != loop_names[i]) func = func_of_loop(loop_names[i]);
        if (load)
            compile_warning("Func \"" + (func.empty() ? std::string("?") : func) + "\": a vectorized loop" + where +
                            " reads \"" + buf + "\" with a gather (a load per lane, at computed addresses): vectorize "
                            "a dimension its index moves along densely, or reorder so that the vectorized Var is "
                            "innermost in the index");
        else
            compile_warning("Func \"" + func_of_buffer(buf) + "\": a vectorized loop" + where +
                            " writes it with a scatter (a store per lane): vectorize the dimension it is stored along "
                            "(the innermost of its storage)");
    }
    /** Stores list[i] .. list[k - 1] (to one X[I]) done at once: `sum` stored to X[I] with the
        last store's alignment and non-temporal flag. Returns how many stores that was. */
    size_t store_fused_sum(const std::vector<Stmt> &list, size_t i, size_t k, llvm::Value *sum) {
        auto s0 = list[i].as<Store>();
        auto last = list[k - 1].as<Store>();
        const std::string tmp = "dot_products.sum";
        push(tmp, {sum, 0});
        codegen_store(static_cast<const Store *>(
            Store::make(s0->name, Variable::make(s0->value.type(), tmp), s0->index, last->alignment, last->nontemporal).get()));
        pop(tmp);
        return k - i;
    }
    // ---- dot products of bytes (AVX-512 VNNI / AVX-VNNI vpdpbusd)

    /** An int32 vector of n lanes that is an 8-bit integer widened: the 8-bit value (a vector
        of n lanes, or a scalar broadcast to them). */
    struct ByteOperand {
        Expr v;
        bool broadcast = false, is_signed = false;
    };
    static bool byte_operand(const Expr &e, int n, ByteOperand *out) {
        Expr v;
        bool bc = false;
        if (auto c = e.as<Cast>()) v = c->value;
        else if (auto b = e.as<Broadcast>()) {
            auto c = b->value.as<Cast>();
            if (!c) return false;
            v = c->value;
            bc = true;
        } else return false;
        Type t = v.type();
        if (t.bits() != 8 || !t.is_int_or_uint() || t.lanes() != (bc ? 1 : n)) return false;
        *out = {v, bc, t.is_int()};
        return true;
    }
    /** e's terms, through nested +. */
    static void add_terms(const Expr &e, std::vector<Expr> &out) {
        if (auto a = e.as<Add>()) {
            add_terms(a->a, out);
            add_terms(a->b, out);
        } else out.push_back(e);
    }
    static bool loads_from(const Expr &e, const std::string &name) {
        LoadsStores ls;
        ls.include(e);
        return ls.reads.count(name) > 0;
    }
    /** The four 8-bit operands a0..a3 interleaved into one vector of 4n bytes: byte 4j + t is
        lane j of a_t, as vpdpbusd reads them. Four loads at consecutive stride-4 ramps are one
        dense load; four broadcasts, one broadcast 32-bit word. */
    llvm::Value *interleaved_bytes(const std::vector<ByteOperand> &ops, int n) {
        llvm::Type *i8t = llvm::Type::getInt8Ty(ctx);
        auto l0 = ops[0].v.as<Load>();
        bool dense = l0 && !ops[0].broadcast;
        for (int t = 0; dense && t < 4; t++) {
            auto l = ops[t].v.as<Load>();
            auto r = l ? l->index.as<Ramp>() : nullptr;
            int64_t stride = 0, off = -1;
            dense = r && l->name == l0->name && is_const_int(r->stride, &stride) && stride == 4 &&
                    is_const_int(simplify(r->base - l0->index.as<Ramp>()->base), &off) && off == t;
        }
        if (dense)
            return codegen(Load::make(l0->type.element_of(), l0->name, Ramp::make(l0->index.as<Ramp>()->base, 1, 4 * n)));
        if (ops[0].broadcast && ops[1].broadcast && ops[2].broadcast && ops[3].broadcast) {
            // Four adjacent bytes of one buffer: one 32-bit load.
            auto b0 = ops[0].v.as<Load>();
            bool adjacent = b0 && b0->type.bytes() == 1;
            for (int t = 1; adjacent && t < 4; t++) {
                auto l = ops[t].v.as<Load>();
                int64_t off = -1;
                adjacent = l && l->name == b0->name && is_const_int(simplify(l->index - b0->index), &off) && off == t;
            }
            if (adjacent) {
                Sym s = lookup(b0->name);
                llvm::Value *p = b.CreateInBoundsGEP(i8t, s.value, index64(codegen_index(b0->index)));
                llvm::Value *word = tag(b.CreateAlignedLoad(i32, p, llvm::Align(1)), s);
                return b.CreateBitCast(b.CreateVectorSplat(n, word), llvm::FixedVectorType::get(i8t, 4 * n));
            }
            llvm::Value *word = nullptr;
            for (int t = 0; t < 4; t++) {
                llvm::Value *byte = b.CreateZExt(codegen(ops[t].v), i32);
                if (t) byte = b.CreateShl(byte, (uint64_t)(8 * t));
                word = word ? b.CreateOr(word, byte) : byte;
            }
            return b.CreateBitCast(b.CreateVectorSplat(n, word), llvm::FixedVectorType::get(i8t, 4 * n));
        }
        std::vector<llvm::Value *> v;
        for (auto &o : ops) v.push_back(o.broadcast ? b.CreateVectorSplat(n, codegen(o.v)) : codegen(o.v));
        std::vector<int> two(2 * n), four(4 * n), mix(4 * n);
        for (int k = 0; k < 2 * n; k++) two[k] = k;
        for (int k = 0; k < 4 * n; k++) four[k] = k;
        for (int j = 0; j < n; j++)
            for (int t = 0; t < 4; t++) mix[4 * j + t] = t * n + j;
        llvm::Value *all = b.CreateShuffleVector(b.CreateShuffleVector(v[0], v[1], two), b.CreateShuffleVector(v[2], v[3], two), four);
        return b.CreateShuffleVector(all, mix);
    }
    /** Stores list[i], list[i + 1], ... that each add to one int32 vector X[I] (X[I] = X[I] + e,
        with e not reading X): where their terms hold widened u8 * i8 products (in either order),
        each four of them are one vpdpbusd (the sum of four byte products per 32-bit lane) on
        targets with VNNI, the other terms added as they are, and X[I] stored once. Exact: the
        adds of 32-bit integers wrap, in any order. Returns how many stores it did (0: none). */
    size_t dot_products(const std::vector<Stmt> &list, size_t i) {
        auto s0 = list[i].as<Store>();
        if (!s0 || s0->atomic) return 0;
        Type t = s0->value.type();
        const int n = t.lanes();
        if (t.element_of() != Int(32) || (n != 4 && n != 8 && n != 16)) return 0;
        if (n == 16 ? !has_features({"avx512vnni", "avx512bw"})
                    : !has_features({"avx512vnni", "avx512vl"}) && !has_features({"avxvnni"}))
            return 0;
        if (loads_from(s0->index, s0->name)) return 0;
        std::vector<Expr> terms;
        Expr acc;  // X[I], as the first store reads it
        size_t k = i;
        for (; k < list.size(); k++) {
            auto s = list[k].as<Store>();
            if (!s || s->atomic || s->name != s0->name || !equal(s->index, s0->index)) break;
            // Its value's terms: X[I] once, and terms that do not read X.
            std::vector<Expr> mine;
            add_terms(s->value, mine);
            Expr x;
            bool ok = mine.size() > 1;
            for (auto &e : mine) {
                auto l = e.as<Load>();
                if (l && !x.defined() && l->name == s0->name && equal(l->index, s0->index)) x = e;
                else if (loads_from(e, s0->name)) ok = false;
            }
            if (!ok || !x.defined()) break;
            if (!acc.defined()) acc = x;
            for (auto &e : mine)
                if (!e.same_as(x)) terms.push_back(e);
        }
        struct Product {
            ByteOperand u8, s8;
            Expr term;
        };
        std::vector<Product> products;
        std::vector<Expr> rest;
        for (auto &e : terms) {
            auto m = e.as<Mul>();
            ByteOperand x, y;
            if (m && byte_operand(m->a, n, &x) && byte_operand(m->b, n, &y) && x.is_signed != y.is_signed)
                products.push_back(x.is_signed ? Product{y, x, e} : Product{x, y, e});
            else rest.push_back(e);
        }
        if (products.size() < 4) return 0;
        llvm::Intrinsic::ID id = n == 16 ? llvm::Intrinsic::x86_avx512_vpdpbusd_512
                                 : n == 8 ? llvm::Intrinsic::x86_avx512_vpdpbusd_256
                                          : llvm::Intrinsic::x86_avx512_vpdpbusd_128;
        llvm::Type *vt = llvm::FixedVectorType::get(i32, n);
        llvm::Value *sum = codegen(acc);
        size_t groups = products.size() / 4;
        for (size_t g = 0; g < groups; g++) {
            std::vector<ByteOperand> us, ss;
            for (size_t q = 0; q < 4; q++) {
                us.push_back(products[4 * g + q].u8);
                ss.push_back(products[4 * g + q].s8);
            }
            llvm::Value *ua = b.CreateBitCast(interleaved_bytes(us, n), vt), *sb = b.CreateBitCast(interleaved_bytes(ss, n), vt);
            sum = b.CreateCall(llvm::Intrinsic::getDeclaration(&mod, id), {sum, ua, sb});
        }
        for (size_t q = 4 * groups; q < products.size(); q++) rest.push_back(products[q].term);
        for (auto &e : rest) sum = b.CreateAdd(sum, codegen(e));
        return store_fused_sum(list, i, k, sum);
    }

    // ---- dot products of bfloat16 pairs (AVX-512 BF16 vdpbf16ps)

    /** A float32 vector of n lanes that is a bfloat16 widened: the bfloat16 value (a vector of
        n lanes, or a scalar broadcast to them). */
    static bool bf16_operand(const Expr &e, int n, ByteOperand *out) {
        bool bc = false;
        Expr v = e;
        if (auto b = v.as<Broadcast>()) {
            bc = true;
            v = b->value;
        }
        auto c = v.as<Cast>();
        if (!c) return false;
        v = c->value;
        if (auto b = v.as<Broadcast>()) {
            if (bc) return false;
            bc = true;
            v = b->value;
        }
        Type t = v.type();
        if (!t.is_bfloat() || t.bits() != 16 || t.lanes() != (bc ? 1 : n)) return false;
        *out = {v, bc, false};
        return true;
    }
    /** The two bfloat16 operands a0, a1 interleaved into one vector of 2n: element 2j is lane j
        of a0, element 2j + 1 lane j of a1. Two loads at stride-2 ramps one element apart are
        one dense load (its 32-bit lanes rotated by 16 bits where a1 is the one below); two
        adjacent scalars broadcast, one broadcast 32-bit word (rotated likewise). */
    llvm::Value *interleaved_pairs(const std::vector<ByteOperand> &ops, int n) {
        llvm::Type *i16t = llvm::Type::getInt16Ty(ctx);
        llvm::Type *pairs = llvm::FixedVectorType::get(i16t, 2 * n);
        auto rotate = [&](llvm::Value *w) {  // swaps the two halves of each 32-bit lane
            return intrinsic(llvm::Intrinsic::fshl, {w->getType()}, {w, w, llvm::ConstantInt::get(w->getType(), 16)});
        };
        auto l0 = ops[0].v.as<Load>(), l1 = ops[1].v.as<Load>();
        if (l0 && l1 && l0->name == l1->name && !ops[0].broadcast && !ops[1].broadcast) {
            auto r0 = l0->index.as<Ramp>(), r1 = l1->index.as<Ramp>();
            int64_t s0 = 0, s1 = 0, off = 0;
            if (r0 && r1 && is_const_int(r0->stride, &s0) && s0 == 2 && is_const_int(r1->stride, &s1) && s1 == 2 &&
                is_const_int(simplify(r1->base - r0->base), &off) && (off == 1 || off == -1)) {
                llvm::Value *v = codegen(Load::make(l0->type.element_of(), l0->name, Ramp::make(off == 1 ? r0->base : r1->base, 1, 2 * n)));
                if (off == 1) return v;
                return b.CreateBitCast(rotate(b.CreateBitCast(v, llvm::FixedVectorType::get(i32, n))), pairs);
            }
        }
        if (ops[0].broadcast && ops[1].broadcast) {
            int64_t off = 0;
            llvm::Value *word = nullptr;
            if (l0 && l1 && l0->name == l1->name && is_const_int(simplify(l1->index - l0->index), &off) &&
                (off == 1 || off == -1)) {
                Sym s = lookup(l0->name);
                llvm::Value *p = b.CreateInBoundsGEP(i16t, s.value, index64(codegen_index(off == 1 ? l0->index : l1->index)));
                word = tag(b.CreateAlignedLoad(i32, p, llvm::Align(2)), s);
                if (off == -1) word = rotate(word);
            } else {
                llvm::Value *lo = b.CreateZExt(codegen(ops[0].v), i32), *hi = b.CreateZExt(codegen(ops[1].v), i32);
                word = b.CreateOr(lo, b.CreateShl(hi, (uint64_t)16));
            }
            return b.CreateBitCast(b.CreateVectorSplat(n, word), pairs);
        }
        llvm::Value *v0 = ops[0].broadcast ? b.CreateVectorSplat(n, codegen(ops[0].v)) : codegen(ops[0].v);
        llvm::Value *v1 = ops[1].broadcast ? b.CreateVectorSplat(n, codegen(ops[1].v)) : codegen(ops[1].v);
        std::vector<int> mix(2 * n);
        for (int j = 0; j < n; j++) {
            mix[2 * j] = j;
            mix[2 * j + 1] = n + j;
        }
        return b.CreateShuffleVector(v0, v1, mix);
    }
    /** Stores list[i], list[i + 1], ... that each add to one float32 vector X[I], in a written
        order: X[I] + p0 + p1 + ..., each step a product of two widened bfloat16 (an fma(), or an
        add of the product) or another term not reading X. Each two products added one after the
        other are one vdpbf16ps on targets with AVX-512 BF16 (where the host's instruction passes
        host_dpbf16ps_is_sequential()), which adds the product of the odd
        bfloat16 elements first and then that of the even ones, each rounded to float32 to
        nearest even: the same result as the written order (a product of two bfloat16 is exact
        in float32), but for the instruction's flushing of subnormal inputs and results to zero
        and its products beyond float's range (README.md, "Floating-point results"). X[I] is
        stored once. Returns how many stores it did (0: none). */
    size_t bf16_dot_products(const std::vector<Stmt> &list, size_t i) {
        auto s0 = list[i].as<Store>();
        if (!s0 || s0->atomic) return 0;
        Type t = s0->value.type();
        const int n = t.lanes();
        if (t.element_of() != Float(32) || (n != 4 && n != 8 && n != 16)) return 0;
        if (!has_features({"avx512bf16", "avx512bw"}) || (n != 16 && !has_features({"avx512vl"}))) return 0;
        // Only where the host's instruction was checked to add as assumed (the JIT's code runs
        // on the host).
        if (!host_dpbf16ps_is_sequential()) return 0;
        if (loads_from(s0->index, s0->name)) return 0;
        // One step of the chain: acc -> acc + a * b (fma when `fused`), or acc -> acc + term.
        struct Step {
            bool product = false, fused = false;
            ByteOperand a, b;
            Expr term, ea, eb;
        };
        std::vector<Step> steps;
        Expr acc;
        auto is_x = [&](const Expr &e) {
            auto l = e.as<Load>();
            return l && l->name == s0->name && equal(l->index, s0->index);
        };
        // Steps of e, in the order they are added, ending at X[I]; false where e is not so. (At
        // most 64 steps per store: each step looks through what is left, so a longer chain would
        // cost time quadratic in its length.)
        std::function<bool(const Expr &, std::vector<Step> &, int)> chain = [&](const Expr &e, std::vector<Step> &out, int depth) {
            if (depth > 64) return false;
            if (is_x(e)) {
                if (!acc.defined()) acc = e;
                return true;
            }
            Step st;
            Expr rest;
            if (auto c = e.as<Call>(); c && c->is_intrinsic("fma") && c->args.size() == 3) {
                rest = c->args[2];
                st.fused = true;
                st.ea = c->args[0];
                st.eb = c->args[1];
                st.product = bf16_operand(c->args[0], n, &st.a) && bf16_operand(c->args[1], n, &st.b);
                if (loads_from(c->args[0], s0->name) || loads_from(c->args[1], s0->name)) return false;
            } else if (auto a = e.as<Add>()) {
                // acc + term, in either order (a float add is commutative, exactly).
                bool left = loads_from(a->a, s0->name), right = loads_from(a->b, s0->name);
                if (left == right) return false;
                rest = left ? a->a : a->b;
                st.term = left ? a->b : a->a;
                if (auto m = st.term.as<Mul>()) {
                    st.ea = m->a;
                    st.eb = m->b;
                    st.product = bf16_operand(m->a, n, &st.a) && bf16_operand(m->b, n, &st.b);
                }
            } else return false;
            if (!chain(rest, out, depth + 1)) return false;
            out.push_back(st);
            return true;
        };
        size_t k = i;
        for (; k < list.size(); k++) {
            auto s = list[k].as<Store>();
            if (!s || s->atomic || s->name != s0->name || !equal(s->index, s0->index)) break;
            std::vector<Step> mine;
            Expr before = acc;
            if (!chain(s->value, mine, 0) || mine.empty()) {
                acc = before;
                break;
            }
            steps.insert(steps.end(), mine.begin(), mine.end());
        }
        size_t pairs = 0;
        for (size_t q = 0; q + 1 < steps.size(); q++)
            if (steps[q].product && steps[q + 1].product) {
                pairs++;
                q++;
            }
        if (!pairs) return 0;
        llvm::Type *ft = llvm::FixedVectorType::get(llvm::Type::getFloatTy(ctx), n);
        llvm::Type *bt = llvm::FixedVectorType::get(llvm::Type::getBFloatTy(ctx), 2 * n);
        llvm::Intrinsic::ID id = n == 16 ? llvm::Intrinsic::x86_avx512bf16_dpbf16ps_512
                                 : n == 8 ? llvm::Intrinsic::x86_avx512bf16_dpbf16ps_256
                                          : llvm::Intrinsic::x86_avx512bf16_dpbf16ps_128;
        llvm::Value *sum = codegen(acc);
        for (size_t q = 0; q < steps.size(); q++) {
            const Step &st = steps[q];
            if (st.product && q + 1 < steps.size() && steps[q + 1].product) {
                // The instruction adds the odd elements' product first: this step's operands go there.
                const Step &nx = steps[q + 1];
                llvm::Value *pa = b.CreateBitCast(interleaved_pairs({nx.a, st.a}, n), bt);
                llvm::Value *pb = b.CreateBitCast(interleaved_pairs({nx.b, st.b}, n), bt);
                sum = b.CreateCall(llvm::Intrinsic::getDeclaration(&mod, id), {sum, pa, pb});
                q++;
                continue;
            }
            if (st.fused) sum = intrinsic(llvm::Intrinsic::fma, {ft}, {codegen(st.ea), codegen(st.eb), sum});
            else sum = b.CreateFAdd(sum, codegen(st.term));
        }
        return store_fused_sum(list, i, k, sum);
    }

    void codegen_store(const Store *op) {
        if (op->atomic) return codegen_atomic_store(op);
        Type t = op->value.type();
        Sym s = lookup(op->name);
        std::string saved_storing = storing;
        storing = op->name;
        llvm::Value *v = codegen(op->value);
        storing = saved_storing;
        if (t.is_bool()) v = b.CreateZExt(v, mem_type(t));
        llvm::Type *elem = mem_type(t.element_of());
        if (t.lanes() == 1) {
            llvm::Value *p = b.CreateInBoundsGEP(elem, s.value, index64(codegen_index(op->index)));
            tag(b.CreateAlignedStore(v, p, access_align(s, t.element_of(), op->alignment)), s);
        } else if (dense_ramp(op->index)) {
            const Ramp *r = op->index.as<Ramp>();
            llvm::Value *p = b.CreateInBoundsGEP(elem, s.value, index64(codegen_index(r->base)));
            llvm::Align al = access_align(s, t.element_of(), op->alignment);
            if (op->nontemporal && !t.is_bool()) store_nontemporal(v, p, al, (uint64_t)t.lanes() * t.element_of().bytes(), s);
            else tag(b.CreateAlignedStore(v, p, al), s);
        } else {
            warn_lanes(false, op->name);
            llvm::Value *ptrs = b.CreateInBoundsGEP(elem, s.value, index64(codegen_index(op->index)));
            llvm::Value *mask = llvm::ConstantInt::getTrue(llvm::FixedVectorType::get(i1, t.lanes()));
            tag(b.CreateMaskedScatter(v, ptrs, access_align(s, t.element_of(), 0), mask), s);
        }
    }

    // ---- calls
    llvm::Value *codegen_call(const Call *op) {
        if (op->call_type != Call::Intrinsic) fail("call to " + op->name + " reached the LLVM backend");
        Type t = op->type;
        const std::string &nm = op->name;
        if (nm == "likely") return codegen(op->args.at(0));
        if (nm == "reinterpret") return b.CreateBitCast(codegen(op->args.at(0)), llvm_type(t));
        if (nm == "prefetch") {
            // prefetch(Load): a read hint for the address of that load (never faults).
            const Load *l = op->args.at(0).as<Load>();
            if (!l) fail("prefetch of a non-load");
            Sym s = lookup(l->name);
            Expr idx = l->index;
            if (auto r = idx.as<Ramp>()) idx = r->base;
            if (idx.type().lanes() != 1) return b.getInt32(0);
            llvm::Value *p = b.CreateGEP(mem_type(l->type.element_of()), s.value, index64(codegen(idx)));
            intrinsic(llvm::Intrinsic::prefetch, {p->getType()}, {p, b.getInt32(0), b.getInt32(3), b.getInt32(1)});
            return b.getInt32(0);
        }
        if (nm == "device_call") return codegen_device_call(op);
        if (nm == "weft_rt_profile") {
            // profile(id, begin): per-Func timing (WEFT_PROFILE).
            llvm::FunctionCallee f = mod.getOrInsertFunction(
                "weft_rt_profile", llvm::FunctionType::get(i32, {ptr, i32, i32}, false));
            return b.CreateCall(f, {fs->ctx, codegen(op->args.at(0)), codegen(op->args.at(1))});
        }
        if (nm == "print" || nm == "print_when" || nm == "trace") return codegen_print(op);
        std::vector<llvm::Value *> args;
        for (const Expr &a : op->args) args.push_back(codegen(a));
        if (args.empty()) fail("intrinsic " + nm + " without arguments");
        llvm::Type *ty = args[0]->getType();
        if (nm == "bitwise_and") return b.CreateAnd(args.at(0), args.at(1));
        if (nm == "bitwise_or") return b.CreateOr(args.at(0), args.at(1));
        if (nm == "bitwise_xor") return b.CreateXor(args.at(0), args.at(1));
        if (nm == "shift_left" || nm == "shift_right") return codegen_shift(op, args.at(0), args.at(1));
        if (nm == "saturating_add" || nm == "saturating_sub") {  // (vpaddsb, vpaddusw, ... where they exist)
            bool add = nm == "saturating_add", sgn = t.is_int();
            auto id = add ? (sgn ? llvm::Intrinsic::sadd_sat : llvm::Intrinsic::uadd_sat)
                          : (sgn ? llvm::Intrinsic::ssub_sat : llvm::Intrinsic::usub_sat);
            return intrinsic(id, {ty}, {args.at(0), args.at(1)});
        }
        if (nm == "abs") {
            if (t.is_float()) return intrinsic(llvm::Intrinsic::fabs, {ty}, {args[0]});
            Type at = op->args[0].type();
            if (!at.is_int()) return args[0];
            llvm::Value *z = llvm::Constant::getNullValue(ty);
            llvm::Value *r = b.CreateSelect(b.CreateICmpSLT(args[0], z), b.CreateSub(z, args[0]), args[0]);
            return r;
        }
        static const std::map<std::string, llvm::Intrinsic::ID> unary = {
            {"sqrt", llvm::Intrinsic::sqrt},   {"exp", llvm::Intrinsic::exp},     {"log", llvm::Intrinsic::log},
            {"sin", llvm::Intrinsic::sin},     {"cos", llvm::Intrinsic::cos},     {"floor", llvm::Intrinsic::floor},
            {"ceil", llvm::Intrinsic::ceil},   {"round", llvm::Intrinsic::roundeven},
        };
        auto it = unary.find(nm);
        if (it != unary.end()) {
            if (!t.is_float()) fail("intrinsic " + nm + " of non-float type " + t.str());
            return intrinsic(it->second, {ty}, {args[0]});
        }
        if (nm == "pow") {
            if (args.size() != 2) fail("pow needs 2 arguments");
            return intrinsic(llvm::Intrinsic::pow, {ty}, {args[0], args[1]});
        }
        if (nm == "fma") {  // the one place a multiply-add is fused (lower/FuseMultiplyAdds.h)
            if (args.size() != 3 || !t.is_float()) fail("fma needs 3 float arguments");
            return intrinsic(llvm::Intrinsic::fma, {ty}, {args[0], args[1], args[2]});
        }
        if (nm == "is_nan" || nm == "is_inf" || nm == "is_finite") {
            if (!op->args[0].type().is_float()) fail(nm + " of type " + op->args[0].type().str());
            if (nm == "is_nan") return b.CreateFCmpUNO(args[0], args[0]);
            llvm::Value *a = intrinsic(llvm::Intrinsic::fabs, {ty}, {args[0]});
            llvm::Value *inf = llvm::ConstantFP::getInfinity(ty);
            return nm == "is_inf" ? b.CreateFCmpOEQ(a, inf) : b.CreateFCmpOLT(a, inf);
        }
        if (is_libm_call(nm)) {
            // The C library's function, lane by lane (LLVM 19 has no vector forms of these).
            if (!t.is_float() || (t.bits() != 32 && t.bits() != 64)) fail(nm + " of type " + t.str());
            llvm::Type *st = scalar_type(t.element_of());
            std::vector<llvm::Type *> params(args.size(), st);
            llvm::FunctionCallee f = mod.getOrInsertFunction(t.bits() == 32 ? nm + "f" : nm,
                                                              llvm::FunctionType::get(st, params, false));
            if (auto *fn = llvm::dyn_cast<llvm::Function>(f.getCallee())) {
                fn->addFnAttr(llvm::Attribute::NoUnwind);
                fn->setOnlyAccessesInaccessibleMemory();
                fn->setWillReturn();
            }
            if (t.lanes() == 1) return b.CreateCall(f, args);
            llvm::Value *r = llvm::PoisonValue::get(ty);
            for (int i = 0; i < t.lanes(); i++) {
                std::vector<llvm::Value *> lane;
                for (llvm::Value *a : args) lane.push_back(b.CreateExtractElement(a, (uint64_t)i));
                r = b.CreateInsertElement(r, b.CreateCall(f, lane), (uint64_t)i);
            }
            return r;
        }
        fail("unknown intrinsic " + nm);
    }

    /** print(value, pieces...) / print_when(cond, value, pieces...): the pieces of each lane
        (where cond holds) to the runtime's line, then the line out; the value. trace(value,
        pieces...): the pieces after the value, joined without spaces. */
    llvm::Value *codegen_print(const Call *op) {
        const size_t first = op->name == "print_when" ? 1 : 0;
        const bool glued = op->name == "trace";
        llvm::Value *cond = first ? codegen(op->args[0]) : nullptr;
        std::vector<llvm::Value *> vals(op->args.size(), nullptr);
        for (size_t i = first; i < op->args.size(); i++)
            if (!op->args[i].as<StringImm>()) vals[i] = codegen(op->args[i]);
        auto fn = [&](const char *name, std::vector<llvm::Type *> params) {
            return mod.getOrInsertFunction(name, llvm::FunctionType::get(b.getInt32Ty(), params, false));
        };
        const int lanes = op->type.lanes();
        for (int l = 0; l < lanes; l++) {
            llvm::BasicBlock *after = nullptr;
            if (cond) {
                llvm::Value *c = cond->getType()->isVectorTy() ? b.CreateExtractElement(cond, (uint64_t)l) : cond;
                auto *then_bb = llvm::BasicBlock::Create(ctx, "print", fs->fn);
                after = llvm::BasicBlock::Create(ctx, "print.after", fs->fn);
                b.CreateCondBr(c, then_bb, after);
                b.SetInsertPoint(then_bb);
            }
            if (glued) b.CreateCall(fn("weft_rt_print_glued", {}), {});
            for (size_t i = first + glued; i < op->args.size(); i++) {
                if (auto str = op->args[i].as<StringImm>()) {
                    b.CreateCall(fn("weft_rt_print_str", {b.getPtrTy()}), {b.CreateGlobalString(str->value, "print.str")});
                    continue;
                }
                llvm::Value *v = vals[i];
                if (v->getType()->isVectorTy()) v = b.CreateExtractElement(v, (uint64_t)l);
                Type et = op->args[i].type().element_of();
                if (et.is_float()) {
                    b.CreateCall(fn("weft_rt_print_f64", {b.getDoubleTy(), b.getInt32Ty()}),
                                 {cast_value(et, Float(64), v), b.getInt32(et.is_bfloat() ? -16 : et.bits())});
                } else if (et.is_int()) {
                    b.CreateCall(fn("weft_rt_print_i64", {b.getInt64Ty()}), {b.CreateSExtOrTrunc(v, b.getInt64Ty())});
                } else {
                    b.CreateCall(fn("weft_rt_print_u64", {b.getInt64Ty()}), {b.CreateZExtOrTrunc(v, b.getInt64Ty())});
                }
            }
            b.CreateCall(fn("weft_rt_print_end", {}), {});
            if (after) {
                b.CreateBr(after);
                b.SetInsertPoint(after);
            }
        }
        return vals[first];
    }

    llvm::Value *reduce_op(VectorReduce::Op o, Type t, llvm::Value *a, llvm::Value *c) {
        switch (o) {
        case VectorReduce::Add:
            if (t.is_float()) return b.CreateFAdd(a, c);
            if (t.is_bool()) return b.CreateOr(a, c);
            return b.CreateAdd(a, c);
        case VectorReduce::Mul:
            if (t.is_float()) return b.CreateFMul(a, c);
            if (t.is_bool()) return b.CreateAnd(a, c);
            return b.CreateMul(a, c, "", false, index_nsw(t));
        case VectorReduce::Min: return minmax(t, a, c, true);
        case VectorReduce::Max: return minmax(t, a, c, false);
        }
        return nullptr;
    }

    llvm::Value *codegen_reduce(const VectorReduce *op) {
        Type t = op->type;
        Type in = op->value.type();
        llvm::Value *v = codegen(op->value);
        int n = in.lanes(), m = t.lanes();
        if (m == n) return v;
        if (m <= 0 || n % m) fail("bad VectorReduce lanes");
        if (m == 1 && !t.is_bool()) {
            if (t.is_float()) {
                llvm::IRBuilderBase::FastMathFlagGuard guard(b);
                llvm::FastMathFlags fmf;
                fmf.setAllowReassoc(true);
                b.setFastMathFlags(fmf);
                switch (op->op) {
                case VectorReduce::Add: return b.CreateFAddReduce(llvm::ConstantFP::getNegativeZero(v->getType()->getScalarType()), v);
                case VectorReduce::Mul: return b.CreateFMulReduce(llvm::ConstantFP::get(v->getType()->getScalarType(), 1.0), v);
                default: break;  // min/max below: keep select-based semantics
                }
            } else {
                bool s = t.is_int();
                switch (op->op) {
                case VectorReduce::Add: return b.CreateAddReduce(v);
                case VectorReduce::Mul: return b.CreateMulReduce(v);
                case VectorReduce::Min: return b.CreateIntMinReduce(v, s);
                case VectorReduce::Max: return b.CreateIntMaxReduce(v, s);
                }
            }
        }
        // Group-wise: combine the f = n/m slices, slice j = lanes {i*f + j}.
        int f = n / m;
        llvm::Value *acc = nullptr;
        for (int j = 0; j < f; j++) {
            std::vector<int> mask;
            for (int i = 0; i < m; i++) mask.push_back(i * f + j);
            llvm::Value *slice = b.CreateShuffleVector(v, mask);
            if (m == 1) slice = b.CreateExtractElement(slice, (uint64_t)0);
            acc = acc ? reduce_op(op->op, t, acc, slice) : slice;
        }
        return acc;
    }

    // ================================================================== Stmts
    void codegen(const Stmt &s) {
        if (!s.defined()) return;
        if (stack_low()) return on_large_stack_void([&] { codegen(s); });
        const StmtNode *n = s.get();
        switch (n->node_type) {
        case IRNodeType::LetStmt: {
            auto *op = static_cast<const LetStmt *>(n);
            llvm::Value *v = codegen(op->value);
            if (!v->hasName() && !llvm::isa<llvm::Constant>(v)) v->setName(op->name);
            push(op->name, {v, 0});
            codegen(op->body);
            pop(op->name);
            return;
        }
        case IRNodeType::AssertStmt: return codegen_assert(static_cast<const AssertStmt *>(n));
        case IRNodeType::For: return codegen_for(static_cast<const For *>(n));
        case IRNodeType::Store:
            if (dot_products({s}, 0) || bf16_dot_products({s}, 0)) return;
            return codegen_store(static_cast<const Store *>(n));
        case IRNodeType::Allocate: return codegen_allocate(static_cast<const Allocate *>(n));
        case IRNodeType::Block: {
            std::vector<Stmt> list;
            flatten(s, list);
            for (size_t i = 0; i < list.size();) {
                size_t fused = dot_products(list, i);
                if (!fused) fused = bf16_dot_products(list, i);
                if (fused) {
                    i += fused;
                    continue;
                }
                codegen(list[i++]);
            }
            return;
        }
        case IRNodeType::IfThenElse: {
            auto *op = static_cast<const IfThenElse *>(n);
            llvm::Value *c = codegen(op->condition);
            llvm::Function *fn = fs->fn;
            auto *then_bb = llvm::BasicBlock::Create(ctx, "then", fn);
            auto *after_bb = llvm::BasicBlock::Create(ctx, "after", fn);
            auto *else_bb = op->else_case.defined() ? llvm::BasicBlock::Create(ctx, "else", fn) : after_bb;
            b.CreateCondBr(c, then_bb, else_bb);
            b.SetInsertPoint(then_bb);
            codegen(op->then_case);
            b.CreateBr(after_bb);
            if (op->else_case.defined()) {
                b.SetInsertPoint(else_bb);
                codegen(op->else_case);
                b.CreateBr(after_bb);
            }
            b.SetInsertPoint(after_bb);
            return;
        }
        case IRNodeType::Evaluate: {
            auto *op = static_cast<const Evaluate *>(n);
            if (op->value.as<IntImm>() || op->value.as<UIntImm>()) return;
            if (auto c = op->value.as<Call>(); c && c->is_intrinsic("free_buffer")) {
                // A heap buffer given back after its last use (memory planning): its slot is
                // then null, so the end of its scope and the failure paths free nothing.
                auto name = c->args.at(0).as<StringImm>();
                auto it = name ? fs->heap_slots.find(name->value) : fs->heap_slots.end();
                if (it == fs->heap_slots.end() || it->second.empty()) fail("free_buffer of a buffer that is not on the heap here");
                llvm::AllocaInst *slot = it->second.back();
                call_rt_free(b.CreateLoad(ptr, slot));
                b.CreateStore(llvm::ConstantPointerNull::get(ptr), slot);
                return;
            }
            codegen(op->value);
            return;
        }
        case IRNodeType::Provide: fail("Provide reached the LLVM backend");
        case IRNodeType::Realize: fail("Realize reached the LLVM backend");
        default: break;
        }
        fail("unexpected Stmt node in codegen");
    }

    void codegen_assert(const AssertStmt *op) {
        llvm::Value *c = codegen(op->condition);
        if (auto *ci = llvm::dyn_cast<llvm::ConstantInt>(c))
            if (ci->isOne()) return;
        llvm::Function *fn = fs->fn;
        auto *fail_bb = llvm::BasicBlock::Create(ctx, "assert_fail", fn);
        auto *ok_bb = llvm::BasicBlock::Create(ctx, "assert_ok", fn);
        llvm::MDBuilder md(ctx);
        b.CreateCondBr(c, ok_bb, fail_bb, md.createBranchWeights(1u << 20, 1));
        b.SetInsertPoint(fail_bb);
        int n = (int)op->args.size();
        llvm::Value *arr = llvm::ConstantPointerNull::get(ptr);
        if (n > 0) {
            arr = entry_alloca(llvm::ArrayType::get(i64, n), nullptr, 8, "assert_args");
            for (int i = 0; i < n; i++) {
                llvm::Value *v = codegen(op->args[i]);
                Type at = op->args[i].type();
                if (at.is_float()) v = intrinsic(llvm::Intrinsic::fptosi_sat, {i64, v->getType()}, {v});
                else if (at.is_handle()) v = b.CreatePtrToInt(v, i64);
                else if (at.is_int()) v = b.CreateSExtOrTrunc(v, i64);
                else v = b.CreateZExtOrTrunc(v, i64);
                b.CreateStore(v, b.CreateConstInBoundsGEP1_64(i64, arr, i));
            }
        }
        llvm::Value *msg = b.CreateGlobalString(op->message, "assert_msg");
        llvm::Value *r = b.CreateCall(rt("weft_rt_assert_fail"), {fs->ctx, msg, arr, b.getInt32(n)});
        emit_fail_return(r);
        b.SetInsertPoint(ok_bb);
    }

    /** device_call(device, op, index, args...): weft_rt_device_call with the args (Int(64)
        each) in an array; where it records a failure in the context, the function returns
        its code (after freeing what it allocated). */
    llvm::Value *codegen_device_call(const Call *op) {
        if (op->args.size() < 3) fail("device_call without its device, op and index");
        llvm::Value *dev = codegen(op->args[0]);
        llvm::Value *code = codegen(op->args[1]), *index = codegen(op->args[2]);
        int n = (int)op->args.size() - 3;
        llvm::Value *arr = llvm::ConstantPointerNull::get(ptr);
        if (n > 0) {
            arr = entry_alloca(llvm::ArrayType::get(i64, n), nullptr, 8, "device_args");
            for (int i = 0; i < n; i++) {
                if (op->args[3 + i].type() != Int(64)) fail("device_call argument not an Int(64)");
                b.CreateStore(codegen(op->args[3 + i]), b.CreateConstInBoundsGEP1_64(i64, arr, i));
            }
        }
        llvm::FunctionCallee f = mod.getOrInsertFunction(
            "weft_rt_device_call", llvm::FunctionType::get(i64, {ptr, ptr, i32, i32, ptr, i32}, false));
        if (auto *fn = llvm::dyn_cast<llvm::Function>(f.getCallee())) fn->addFnAttr(llvm::Attribute::NoUnwind);
        llvm::Value *r = b.CreateCall(f, {fs->ctx, dev, code, index, arr, b.getInt32(n)});
        llvm::Value *err = b.CreateLoad(i32, b.CreateConstInBoundsGEP1_64(i8, fs->ctx, offsetof(weft_context_t, error_code)));
        auto *fail_bb = llvm::BasicBlock::Create(ctx, "device_fail", fs->fn);
        auto *ok_bb = llvm::BasicBlock::Create(ctx, "device_ok", fs->fn);
        llvm::MDBuilder md(ctx);
        b.CreateCondBr(b.CreateICmpEQ(err, b.getInt32(0)), ok_bb, fail_bb, md.createBranchWeights(1u << 20, 1));
        b.SetInsertPoint(fail_bb);
        emit_fail_return(err);
        b.SetInsertPoint(ok_bb);
        return r;
    }

    void codegen_for(const For *op) {
        loop_names.push_back(op->name);
        struct Pop {
            std::vector<std::string> &v;
            ~Pop() { v.pop_back(); }
        } pop_loop{loop_names};
        // In a function with very many loops, each serial loop nest at its top is made a
        // function of its own (codegen_outlined); but a nest of more than kNestedOutlineLoops
        // loops is generated here, and its serial loops looked at in turn (a tile loop around a
        // hundred stages: each stage's nest apart).
        bool big_nest = false;
        if (outline_loops && op->for_type == ForType::Serial && (loop_depth == 0 || in_big_nest)) {
            auto li = loops_inside.find(op);
            if (li == loops_inside.end() || li->second <= kNestedOutlineLoops) {
                if (in_big_nest) nests_from_big_nests++;
                return codegen_outlined(op);
            }
            big_nest = true;
        }
        struct BigNest {
            bool &flag, saved;
            ~BigNest() { flag = saved; }
        } restore_big{in_big_nest, in_big_nest};
        in_big_nest = big_nest;
        if (!in_split_loop && split_loops.count(op)) return codegen_outlined(op);
        llvm::Value *mn = codegen(op->min);
        llvm::Value *ext = codegen(op->extent);
        if (op->for_type == ForType::Parallel) return codegen_parallel(op, mn, ext);
        if (op->for_type == ForType::Serial && transposed_loop(op, mn)) return;
        llvm::Function *fn = fs->fn;
        llvm::BasicBlock *pre = b.GetInsertBlock();
        auto *loop_bb = llvm::BasicBlock::Create(ctx, op->name + ".loop", fn);
        auto *after_bb = llvm::BasicBlock::Create(ctx, op->name + ".end", fn);
        llvm::Value *end = b.CreateAdd(mn, ext, op->name + ".max");
        b.CreateCondBr(b.CreateICmpSGT(ext, llvm::ConstantInt::get(ext->getType(), 0)), loop_bb, after_bb);
        b.SetInsertPoint(loop_bb);
        llvm::PHINode *phi = b.CreatePHI(mn->getType(), 2, op->name);
        phi->addIncoming(mn, pre);
        push(op->name, {phi, 0});
        loop_depth++;
        codegen(op->body);
        loop_depth--;
        pop(op->name);
        llvm::Value *next = b.CreateAdd(phi, llvm::ConstantInt::get(mn->getType(), 1), "", false, true);  // a loop counter never wraps
        phi->addIncoming(next, b.GetInsertBlock());
        llvm::BranchInst *back = b.CreateCondBr(b.CreateICmpNE(next, end), loop_bb, after_bb);
        // Loops LLVM is told not to unroll (and, the huge ones, not to vectorize):
        // - a short loop around loops (small_outer_loop): LLVM unrolls it whole once it has
        //   unrolled the loops inside it: stages computed per tile (a loop over 4 channels around
        //   rows and columns of a few steps each) multiply into thousands of instructions, and
        //   LLVM's loop passes take time superlinear in them (seconds for a pyramid's levels
        //   computed per tile, for no faster code). The schedule's unroll() says what to unroll.
        // - a huge body: LLVM's loop vectorizer and unroller take time superlinear in a loop's
        //   size (a 16,000-instruction body: 40% of the compile, for nothing).
        // - a loop kept here for its many loops (big_nest), nor hoisted out of either: values
        //   hoisted out of it live across every call in it to its stages' nests, and register
        //   allocation's liveness grows with stages x blocks.
        bool small_outer = small_outer_loop(op);
        if (small_outer || big_nest || huge_body(loop_bb, after_bb)) {
            std::vector<llvm::Metadata *> hints{nullptr};
            if (big_nest) hints.push_back(llvm::MDNode::get(ctx, {llvm::MDString::get(ctx, "llvm.licm.disable")}));
            if (!small_outer)
                hints.push_back(llvm::MDNode::get(ctx, {llvm::MDString::get(ctx, "llvm.loop.vectorize.enable"),
                                                        llvm::ConstantAsMetadata::get(llvm::ConstantInt::getFalse(ctx))}));
            hints.push_back(llvm::MDNode::get(ctx, {llvm::MDString::get(ctx, "llvm.loop.unroll.disable")}));
            llvm::MDNode *id = llvm::MDNode::getDistinct(ctx, hints);
            id->replaceOperandWith(0, id);
            back->setMetadata(llvm::LLVMContext::MD_loop, id);
        }
        b.SetInsertPoint(after_bb);
    }

    /** A serial loop over y whose body stores a dense vector of V lanes computed from one read at
        a constant stride S, where the read moves by one element with y: `out[d(y) + i] =
        g(in[b + y + S*i], ...)` for lanes i (a transpose: each iteration's vector is a column of
        the source, g any expression of it and of other values). Its iterations in blocks of V
        are V dense loads (the elements the block reads, no other), a V x V transpose in
        registers (log2(V) rounds of two-vector interleaves), then for each row g and a dense
        store, instead of a gather of V lanes per iteration. The loop's extent must be a constant
        multiple of V (4, 8 or 16); g reads nothing of the destination, so the block's loads may
        all come before its stores. False (nothing emitted) otherwise. */
    bool transposed_loop(const For *op, llvm::Value *mn) {
        const Store *st = op->body.as<Store>();
        int64_t extent = 0;
        if (!st || st->atomic || !is_const_int(op->extent, &extent) || !dense_ramp(st->index)) return false;
        Type t = st->value.type();
        const int V = t.lanes();
        if (t.is_bool() || !(V == 4 || V == 8 || V == 16) || extent < V || extent % V) return false;
        // The value's loads: one transposable read (possibly used more than once), none of the
        // destination.
        class Reads : public IRVisitor {
        public:
            std::vector<const Load *> loads;

        protected:
            void visit(const Load *l) override {
                loads.push_back(l);
                IRVisitor::visit(l);
            }
        } reads;
        reads.include(st->value);
        Expr y = Variable::make(Int(32), op->name);
        const Load *ld = nullptr;
        int64_t S = 0;
        for (const Load *l : reads.loads) {
            if (l->name == st->name) return false;
            const Ramp *r = l->index.as<Ramp>();
            int64_t stride = 0, step = 0;
            if (ld || l->type.lanes() != V || l->type.is_bool() || !r || r->base.type().lanes() != 1 ||
                !is_const_int(r->stride, &stride) || (stride >= -V && stride <= V))
                continue;
            if (!is_const_int(simplify(substitute(op->name, y + 1, r->base) - r->base), &step) || step != 1) continue;
            ld = l;
            S = stride;
        }
        if (!ld) return false;
        const Ramp *lr = ld->index.as<Ramp>();
        // g, the read replaced by the transposed row.
        const std::string row = op->name + ".transposed_row";
        class Replace : public IRMutator {
        public:
            const Load *target;
            Expr with;

        protected:
            Expr visit(const Load *l, const Expr &e) override {
                if (l == target || (l->name == target->name && equal(l->index, target->index))) return with;
                return IRMutator::visit(l, e);
            }
        } replace;
        replace.target = ld;
        replace.with = Variable::make(ld->type, row);
        const Expr g = replace.mutate(st->value);
        const Ramp *sr = st->index.as<Ramp>();
        Sym src = lookup(ld->name), dst = lookup(st->name);
        Type lt = ld->type;
        llvm::Type *elem = mem_type(lt.element_of()), *vt = mem_type(lt);
        llvm::Type *out_elem = mem_type(t.element_of());
        llvm::Function *fn = fs->fn;
        llvm::BasicBlock *pre = b.GetInsertBlock();
        auto *loop_bb = llvm::BasicBlock::Create(ctx, op->name + ".block", fn);
        auto *after_bb = llvm::BasicBlock::Create(ctx, op->name + ".end", fn);
        b.CreateBr(loop_bb);
        b.SetInsertPoint(loop_bb);
        llvm::PHINode *blk = b.CreatePHI(mn->getType(), 2, op->name + ".blk");
        blk->addIncoming(llvm::ConstantInt::get(mn->getType(), 0), pre);
        llvm::Value *y0 = b.CreateAdd(mn, b.CreateMul(blk, llvm::ConstantInt::get(mn->getType(), V)), "", false, true);
        std::vector<llvm::Value *> v(V);
        push(op->name, {y0, 0});
        for (int i = 0; i < V; i++) {
            Expr at = simplify(lr->base + make_const(lr->base.type(), S * i));
            llvm::Value *p = b.CreateInBoundsGEP(elem, src.value, index64(codegen_index(at)));
            v[i] = tag(b.CreateAlignedLoad(vt, p, access_align(src, lt.element_of(), 0)), src);
        }
        pop(op->name);
        // Out-shuffles: after log2(V) rounds, v[j] holds lane j of every row.
        int h = V / 2;
        std::vector<int> lo, hi;
        for (int p = 0; p < h; p++) {
            lo.push_back(p);
            lo.push_back(p + V);
            hi.push_back(p + h);
            hi.push_back(p + h + V);
        }
        for (int round = 1; round < V; round *= 2) {
            std::vector<llvm::Value *> n(V);
            for (int k = 0; k < h; k++) {
                n[2 * k] = b.CreateShuffleVector(v[k], v[k + h], lo);
                n[2 * k + 1] = b.CreateShuffleVector(v[k], v[k + h], hi);
            }
            v = n;
        }
        std::vector<llvm::Value *> vals(V), ptrs(V);
        for (int j = 0; j < V; j++) {
            llvm::Value *yj = b.CreateAdd(y0, llvm::ConstantInt::get(mn->getType(), j), "", false, true);
            push(op->name, {yj, 0});
            push(row, {v[j], 0});
            std::string saved_storing = storing;
            storing = st->name;
            vals[j] = codegen(g);
            storing = saved_storing;
            pop(row);
            ptrs[j] = b.CreateInBoundsGEP(out_elem, dst.value, index64(codegen_index(sr->base)));
            pop(op->name);
        }
        llvm::Align al = access_align(dst, t.element_of(), st->alignment);
        const uint64_t bytes = (uint64_t)V * t.element_of().bytes();
        if (st->nontemporal && (uint64_t)st->alignment * t.element_of().bytes() >= bytes) {
            // Every row's address is its buffer's base plus a multiple of the vector's bytes:
            // aligned all together or not at all, one check for the block's stores.
            store_nontemporal_rows(vals, ptrs, al, bytes, dst);
        } else {
            for (int j = 0; j < V; j++) {
                if (st->nontemporal) store_nontemporal(vals[j], ptrs[j], al, bytes, dst);
                else tag(b.CreateAlignedStore(vals[j], ptrs[j], al), dst);
            }
        }
        llvm::Value *next = b.CreateAdd(blk, llvm::ConstantInt::get(mn->getType(), 1), "", false, true);
        blk->addIncoming(next, b.GetInsertBlock());
        b.CreateCondBr(b.CreateICmpNE(next, llvm::ConstantInt::get(mn->getType(), extent / V)), loop_bb, after_bb);
        b.SetInsertPoint(after_bb);
        return true;
    }

    /** A loop of a constant 3 to 16 steps with a loop inside it (which LLVM's full unroller
        would unroll whole, after the loops inside; of 1 or 2 steps, that at most doubles it). */
    bool small_outer_loop(const For *op) const {
        int64_t e = -1;
        return is_const_int(op->extent, &e) && e >= 3 && e <= 16 && outer_loops.count(op);
    }

    /** Whether a loop just generated holds more instructions than LLVM's loop passes are worth
        running on: its first block, and the blocks made for its body (after its exit block,
        which was made before the body). */
    bool huge_body(llvm::BasicBlock *loop_bb, llvm::BasicBlock *after_bb) {
        size_t n = loop_bb->size();
        for (auto it = std::next(after_bb->getIterator()); it != fs->fn->end() && n <= 2000; ++it) n += it->size();
        return n > 2000;
    }

    /** A new internal function of type fty (its argument ctx_arg the context, closure_arg a
        closure) whose body `gen` generates, with the values bound here of the names it uses
        (those in `uses`, except `skip`) passed in the closure; constants are made again there.
        Returns the function; *closure receives the closure to pass it. */
    llvm::Function *outline(const std::set<std::string> &uses, const std::string &skip, llvm::FunctionType *fty,
                            const std::string &fname, unsigned ctx_arg, unsigned closure_arg,
                            const std::function<void(llvm::Function *)> &gen, llvm::Value **closure) {
        std::vector<std::pair<std::string, Sym>> captured, constants;
        for (const std::string &n : uses) {
            if (n == skip) continue;
            auto it = syms.find(n);
            if (it == syms.end()) continue;
            const Sym &s = it->second.back();
            if (llvm::isa<llvm::Constant>(s.value)) constants.push_back({n, s});
            else captured.push_back({n, s});
        }
        std::vector<llvm::Type *> fields;
        for (auto &c : captured) fields.push_back(c.second.value->getType());
        llvm::StructType *cty = llvm::StructType::get(ctx, fields);
        *closure = llvm::ConstantPointerNull::get(ptr);
        if (!captured.empty()) {
            *closure = entry_alloca(cty, nullptr, 16, "closure");
            for (size_t i = 0; i < captured.size(); i++)
                b.CreateStore(captured[i].second.value, b.CreateStructGEP(cty, *closure, (unsigned)i));
        }
        llvm::Function *fn = llvm::Function::Create(fty, llvm::Function::InternalLinkage, fname, mod);
        llvm::IRBuilderBase::InsertPoint saved_ip = b.saveIP();
        FnState *saved_fs = fs;
        std::map<std::string, std::vector<Sym>> saved_syms;
        saved_syms.swap(syms);
        FnState st;
        begin_function(st, fn, fn->getArg(ctx_arg));
        llvm::Value *cl = fn->getArg(closure_arg);
        for (size_t i = 0; i < captured.size(); i++) {
            llvm::Value *v = b.CreateLoad(fields[i], b.CreateStructGEP(cty, cl, (unsigned)i), captured[i].first);
            push(captured[i].first, {v, captured[i].second.align, captured[i].second.tbaa, captured[i].second.known_elems});
        }
        for (auto &c : constants) push(c.first, c.second);
        gen(fn);
        end_function(st);
        syms.swap(saved_syms);
        fs = saved_fs;
        b.restoreIP(saved_ip);
        return fn;
    }
    /** Returns from this function with r's code where r is nonzero. */
    void return_on_failure(llvm::Value *r, const char *what) {
        auto *fail_bb = llvm::BasicBlock::Create(ctx, std::string(what) + "_fail", fs->fn);
        auto *ok_bb = llvm::BasicBlock::Create(ctx, std::string(what) + "_ok", fs->fn);
        llvm::MDBuilder md(ctx);
        b.CreateCondBr(b.CreateICmpEQ(r, b.getInt32(0)), ok_bb, fail_bb, md.createBranchWeights(1u << 20, 1));
        b.SetInsertPoint(fail_bb);
        emit_fail_return(r);
        b.SetInsertPoint(ok_bb);
    }

    void codegen_parallel(const For *op, llvm::Value *mn, llvm::Value *ext) {
        CollectNames cn;
        cn.include(op->body);
        llvm::Value *closure;
        size_t own = 0;
        std::string bname = fs->fn->getName().str() + ".par." + std::to_string(num_bodies++) + "." + op->name;
        llvm::Function *bfn = outline(cn.names, op->name, llvm::FunctionType::get(i32, {ptr, i32, ptr}, false), bname, 0, 2,
                                      [&](llvm::Function *f) {
                                          llvm::Value *idx = f->getArg(1);
                                          idx->setName(op->name);
                                          if (mn->getType() != i32) idx = b.CreateSExtOrTrunc(idx, mn->getType());
                                          push(op->name, {idx, 0});
                                          int saved = loop_depth;
                                          loop_depth = 1;
                                          auto it = loop_size.find(op);
                                          if (it != loop_size.end())
                                              own = in_split_loop ? it->second : choose_split_loops(op->body, it->second);
                                          codegen(op->body);
                                          loop_depth = saved;
                                      },
                                      &closure);
        mark_part(bfn, own);
        llvm::Value *r = b.CreateCall(rt("weft_rt_parallel_for"),
                                      {fs->ctx, bfn, closure, b.CreateSExtOrTrunc(mn, i32), b.CreateSExtOrTrunc(ext, i32)});
        return_on_failure(r, "par");
    }

    /** A serial loop nest made a function of its own, called here once: in a function with very
        many loops (hundreds of update stages, say), LLVM's loop analyses walk from each loop up
        through all the loops before it, and compile time grows with the square of their
        number; each loop nest apart, it grows linearly. */
    void codegen_outlined(const For *op) {
        CollectNames cn;
        cn.include(op->min);
        cn.include(op->extent);
        cn.include(op->body);
        llvm::Value *closure;
        std::string fname = fs->fn->getName().str() + ".nest." + std::to_string(num_bodies++) + "." + op->name;
        llvm::Function *nfn = outline(cn.names, "", llvm::FunctionType::get(i32, {ptr, ptr}, false), fname, 0, 1,
                                      [&](llvm::Function *) {
                                          int saved = loop_depth;
                                          bool saved_outline = outline_loops, saved_split = in_split_loop;
                                          loop_depth = 0;
                                          outline_loops = false;
                                          // (a nest outlined for outline_loops keeps the loops
                                          // choose_split_loops chose inside it)
                                          in_split_loop = saved_split || split_loops.count(op);
                                          codegen_for(op);
                                          outline_loops = saved_outline;
                                          in_split_loop = saved_split;
                                          loop_depth = saved;
                                      },
                                      &closure);
        nfn->addFnAttr(llvm::Attribute::NoInline);  // (called once: the inliner would put it back)
        auto it = loop_size.find(op);
        mark_part(nfn, it == loop_size.end() ? 0 : it->second);
        return_on_failure(b.CreateCall(nfn, {fs->ctx, closure}), "nest");
    }

    void codegen_allocate(const Allocate *op) {
        Type et = op->type.element_of();
        llvm::Type *elem = mem_type(et);
        int64_t eb = et.is_bool() ? 1 : et.bytes();
        int64_t n = 0;
        bool is_k = is_const_int(op->extent, &n);
        bool stack = false;
        if (is_k && n >= 0) {
            int64_t bytes = n * eb;
            if (op->memory_type == MemoryType::Stack || op->memory_type == MemoryType::Register)
                stack = bytes <= kMaxStackAllocationBytes;
            else if (op->memory_type == MemoryType::Auto)
                stack = bytes <= (int64_t(1) << 14);
        }
        if (stack) {
            llvm::Value *p = entry_alloca(elem, b.getInt64(std::max<int64_t>(n, 1)), 64, op->name);
            push(op->name, {p, 64, new_allocation_tbaa(op->name), n});
            codegen(op->body);
            pop(op->name);
            return;
        }
        llvm::Value *ext = codegen(op->extent);
        ext = b.CreateSExtOrTrunc(ext, i64);
        llvm::Value *bytes = b.CreateMul(ext, b.getInt64(eb));
        // Negative or overflowing sizes are rejected by the runtime.
        bytes = b.CreateSelect(b.CreateICmpSLT(ext, b.getInt64(0)), b.getInt64(-1), bytes);
        if (eb > 1)
            bytes = b.CreateSelect(b.CreateICmpSGT(ext, b.getInt64(((int64_t(1) << 62) / eb))), b.getInt64(-1), bytes);
        llvm::Value *p = b.CreateCall(rt("weft_rt_malloc"), {fs->ctx, bytes}, op->name);
        llvm::Function *fn = fs->fn;
        auto *fail_bb = llvm::BasicBlock::Create(ctx, "malloc_fail", fn);
        auto *ok_bb = llvm::BasicBlock::Create(ctx, "malloc_ok", fn);
        llvm::MDBuilder md(ctx);
        b.CreateCondBr(b.CreateIsNull(p), fail_bb, ok_bb, md.createBranchWeights(1, 1u << 20));
        b.SetInsertPoint(fail_bb);
        emit_fail_return(b.getInt32(-1));
        b.SetInsertPoint(ok_bb);
        llvm::AllocaInst *slot = entry_alloca(ptr, nullptr, 8, op->name + ".slot");
        {
            // Null from the function's start (the failure block frees every slot).
            llvm::IRBuilder<> eb(fs->alloca_bb, fs->alloca_bb->end());
            eb.CreateStore(llvm::ConstantPointerNull::get(ptr), slot);
        }
        fs->slots.push_back(slot);
        b.CreateStore(p, slot);
        fs->heap.push_back(slot);
        fs->heap_slots[op->name].push_back(slot);
        push(op->name, {p, 64, new_allocation_tbaa(op->name), is_k && n >= 0 ? n : -1});
        codegen(op->body);
        pop(op->name);
        fs->heap_slots[op->name].pop_back();
        fs->heap.pop_back();
        call_rt_free(b.CreateLoad(ptr, slot));
        b.CreateStore(llvm::ConstantPointerNull::get(ptr), slot);
    }
};

std::atomic<uint64_t> module_counter{0};
std::atomic<uint64_t> split_modules{0};  // see modules_compiled_in_parts()
std::atomic<uint64_t> uncombined_modules{0};  // see modules_compiled_without_machine_combiner()

/** Milliseconds since t0. */
double since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/** Basic blocks longer than kLongBlock instructions (after LLVM's optimisation) are split into
    blocks of kBlockPart: instruction selection works a block at a time, and some of its
    combines scan all uses of a constant in the block (an fma's), so its time grows with the
    square of a block's length. Such a module is also compiled without the x86 machine combiner,
    which follows traces across blocks and recomputes them after each rewrite it makes (a chain
    of integer adds reassociated): quadratic too. So the first call's time stays about linear in
    the length of a program (one expression of 8000 nested terms: 4.2 -> 1.5 s). A kernel's blocks
    are far shorter (the app suite's and the bench kernels' longest: about 400 instructions), and
    are compiled as LLVM compiles them by default. */
constexpr size_t kLongBlock = 2000, kBlockPart = 1000;

/** Splits mod's long blocks (see kLongBlock); returns how many blocks it added. Each part is
    branched to unconditionally and has its address taken (a private constant holds it), so
    that code generation does not merge it back into the block before it. */
size_t split_long_blocks(llvm::Module &mod) {
    size_t added = 0;
    for (llvm::Function &f : mod) {
        if (f.isDeclaration()) continue;
        std::vector<llvm::BasicBlock *> long_blocks;
        for (llvm::BasicBlock &bb : f)
            if (bb.size() > kLongBlock) long_blocks.push_back(&bb);
        for (llvm::BasicBlock *bb : long_blocks) {
            // The places to split at, found in one pass; split from the last, so that each split
            // moves one part (linear in the block's length).
            std::vector<llvm::Instruction *> at;
            size_t n = 0;
            for (auto it = bb->getFirstNonPHIIt(); it != bb->end() && !it->isTerminator(); ++it)
                if (++n % kBlockPart == 0 && !it->isEHPad()) at.push_back(&*it);
            for (auto i = at.rbegin(); i != at.rend(); ++i) {
                llvm::BasicBlock *part = bb->splitBasicBlock(*i, bb->getName() + ".part");
                new llvm::GlobalVariable(mod, llvm::PointerType::getUnqual(mod.getContext()), true,
                                         llvm::GlobalValue::PrivateLinkage, llvm::BlockAddress::get(&f, part),
                                         "weft.block.part");
                added++;
            }
        }
    }
    return added;
}

/** Adds the passes that emit machine code to pm: the target's pipeline, without the x86 machine
    combiner where without_combiner (see kLongBlock). That is a process-wide LLVM option, read
    while the pipeline is built: set and restored under a lock (other threads may build theirs
    at the same time). */
bool add_machine_code_passes(llvm::TargetMachine *tm, llvm::legacy::PassManager &pm, llvm::raw_pwrite_stream &os,
                             bool without_combiner) {
    static std::mutex mu;
    std::lock_guard<std::mutex> lk(mu);
    llvm::cl::opt<bool> *combiner = nullptr;
    if (without_combiner) {
        auto &opts = llvm::cl::getRegisteredOptions();
        auto it = opts.find("x86-machine-combiner");
        if (it != opts.end()) combiner = static_cast<llvm::cl::opt<bool> *>(it->second);
    }
    bool was = combiner ? (bool)*combiner : false;
    if (combiner) combiner->setValue(false), uncombined_modules++;
    bool failed = tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile);
    if (combiner) combiner->setValue(was);
    return failed;
}

/** LLVM's optimisation (the new pass manager's O3 pipeline, with the target's cost model),
    then machine code: the object file. Adds to times' optimise_ms and machine_code_ms; with
    ir, the optimised IR as text. */
std::string optimise_and_emit(llvm::Module &mod, llvm::TargetMachine *tm, std::string *ir, LLVMCompileTimes *times) {
    using clock = std::chrono::steady_clock;
    auto t0 = clock::now();
    {
        llvm::LoopAnalysisManager lam;
        llvm::FunctionAnalysisManager fam;
        llvm::CGSCCAnalysisManager cgam;
        llvm::ModuleAnalysisManager mam;
        llvm::PipelineTuningOptions pto;
        pto.LoopVectorization = true;
        pto.SLPVectorization = true;
        pto.LoopUnrolling = true;
        llvm::PassBuilder pb(tm, pto);
        pb.registerModuleAnalyses(mam);
        pb.registerCGSCCAnalyses(cgam);
        pb.registerFunctionAnalyses(fam);
        pb.registerLoopAnalyses(lam);
        pb.crossRegisterProxies(lam, fam, cgam, mam);
        llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
        mpm.run(mod, mam);
    }
    if (times) times->optimise_ms += since(t0);
    bool split = split_long_blocks(mod) > 0;
    if (ir) {
        llvm::raw_string_ostream os(*ir);
        mod.print(os, nullptr);
        os.flush();
    }
    t0 = clock::now();
    llvm::SmallVector<char, 0> obj;
    {
        llvm::raw_svector_ostream os(obj);
        llvm::legacy::PassManager pm;
        if (add_machine_code_passes(tm, pm, os, split)) fail("the target cannot emit object files");
        pm.run(mod);
    }
    if (times) times->machine_code_ms += since(t0);
    return std::string(obj.data(), obj.size());
}

/** Threads that compile parts of a module while the calling thread compiles another (see
    partition_functions). Started when first needed, at most one fewer than the cores this
    process may run on (and at most 7), or as set_compile_threads() says; never joined: they
    wait for work until the process ends. A job finds the compile's own state through a
    shared pointer, so one that starts after its compile is over does nothing harmful. */
class CompileThreads {
public:
    static CompileThreads &get() {
        static CompileThreads *t = new CompileThreads;  // (leaked: threads may outlive statics)
        return *t;
    }
    int size() {
        std::lock_guard<std::mutex> lk(mu_);
        return limit_;
    }
    void set_size(int n) {
        std::lock_guard<std::mutex> lk(mu_);
        limit_ = std::max(0, std::min(n, 64));
    }
    void submit(std::function<void()> job) {
        std::lock_guard<std::mutex> lk(mu_);
        if (limit_ == 0) return;  // (the caller compiles the parts nobody starts)
        jobs_.push_back(std::move(job));
        if (idle_ == 0 && started_ < limit_) {
            started_++;
            std::thread([this] { work(); }).detach();
        } else {
            cv_.notify_one();
        }
    }

private:
    CompileThreads() {
        int cores = (int)std::thread::hardware_concurrency();
        cpu_set_t set;
        if (sched_getaffinity(0, sizeof set, &set) == 0) cores = CPU_COUNT(&set);
        limit_ = std::max(0, std::min(cores - 1, 7));
        if (const char *e = std::getenv("WEFT_COMPILE_THREADS"); e && *e) {
            char *end = nullptr;
            long n = std::strtol(e, &end, 10);
            if (end && !*end && n >= 0) limit_ = (int)std::min(n, 64L);
        }
    }
    void work() {
        std::unique_lock<std::mutex> lk(mu_);
        for (;;) {
            idle_++;
            cv_.wait(lk, [&] { return !jobs_.empty(); });
            idle_--;
            std::function<void()> job = std::move(jobs_.front());
            jobs_.pop_front();
            lk.unlock();
            job();
            lk.lock();
        }
    }
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> jobs_;
    int limit_ = 0, started_ = 0, idle_ = 0;
};

/** The parts of one module compiled on several threads. Part i >= 1 is read from the whole
    module's bitcode, its other functions left unread (declarations), and leaves as an object
    file (or an error). Whoever claims a part first (a compile thread or the caller, once its
    own part is done) compiles it. */
struct SplitCompile {
    CPUTargetInfo target;
    bool want_ir = false;
    std::string bitcode;
    std::vector<std::set<std::string>> functions;  // each part's functions, by name
    std::vector<std::string> objects, irs, errors;
    std::unique_ptr<std::atomic<bool>[]> claimed;
    std::mutex mu;
    std::condition_variable cv;
    int remaining = 0;

    void run(size_t i) {
        if (claimed[i].exchange(true)) return;
        try {
            llvm::LLVMContext ctx;
            auto m = llvm::getLazyBitcodeModule(llvm::MemoryBufferRef(bitcode, "weft module"), ctx);
            if (!m) fail("cannot read back a part of the module: " + llvm_err(m.takeError()));
            llvm::Module &mod = **m;
            for (llvm::Function &fn : mod)
                if (!fn.isDeclaration() && !fn.hasLocalLinkage() && !functions[i].count(fn.getName().str())) fn.deleteBody();
            for (llvm::GlobalVariable &g : mod.globals())
                if (!g.hasLocalLinkage() && !g.isDeclaration()) g.setInitializer(nullptr);  // (defined in part 0)
            if (auto e = mod.materializeAll()) fail("cannot read back a part of the module: " + llvm_err(std::move(e)));
            objects[i] = optimise_and_emit(mod, target_machine(target), want_ir ? &irs[i] : nullptr, nullptr);
        } catch (const std::exception &e) {
            errors[i] = e.what();
            if (errors[i].empty()) errors[i] = "a part of the module failed to compile";
        } catch (...) {
            errors[i] = "a part of the module failed to compile";
        }
        std::lock_guard<std::mutex> lk(mu);
        remaining--;
        cv.notify_all();
    }
};

/** How a module's functions split into parts compiled in parallel (LLVM's optimisation and
    machine code work on one function at a time, and take most of a compile): the entry point
    and the bodies of parallel loops (functions whose address is taken), in at most
    max_parts parts of about equal size (instructions), the largest first into the smallest
    part. Other functions (called directly) go to every part that calls them, and constants
    to every part that reads them, so that nothing inlined or folded before is lost. One
    part where a split would not pay: a small module, or one function most of it. The
    functions split are made external (the parts link to each other by name). */
std::vector<std::vector<llvm::Function *>> partition_functions(llvm::Module &m, int max_parts) {
    std::vector<std::pair<size_t, llvm::Function *>> fns;
    size_t total = 0;
    for (llvm::Function &fn : m) {
        if (fn.isDeclaration()) continue;
        if (fn.hasLocalLinkage() && !fn.hasFnAttribute(kPartAttr)) continue;  // a helper: copied where called
        size_t n = fn.getInstructionCount();
        if (fn.hasFnAttribute(kPartAttr)) {
            llvm::StringRef v = fn.getFnAttribute(kPartAttr).getValueAsString();
            unsigned long long k = 0;
            if (!v.getAsInteger(10, k)) n = (size_t)k;
        }
        fns.push_back({n, &fn});
        total += n;
    }
    // Below this, splitting and reading back costs more than the part compiled beside.
    const size_t kMinInstructions = 300;
    if (max_parts <= 1 || fns.size() <= 1 || total < kMinInstructions) return {};
    std::stable_sort(fns.begin(), fns.end(), [](auto &a, auto &b) { return a.first > b.first; });
    // More parts than threads: whoever is free takes the next part, so that an estimate off
    // by much (LLVM's time is not its instructions') leaves no thread idle for long.
    std::vector<std::vector<llvm::Function *>> parts(std::min<size_t>((size_t)max_parts * 3, fns.size()));
    std::vector<size_t> size(parts.size(), 0);
    for (auto &[n, fn] : fns) {
        size_t k = std::min_element(size.begin(), size.end()) - size.begin();
        parts[k].push_back(fn);
        size[k] += n;
    }
    // The entry point's part first (it stays in the caller's context).
    for (size_t k = 0; k < parts.size(); k++)
        if (std::any_of(parts[k].begin(), parts[k].end(), [](llvm::Function *fn) { return !fn->hasLocalLinkage(); })) {
            std::swap(parts[0], parts[k]);
            std::swap(size[0], size[k]);
            break;
        }
    // Parts of under a twentieth of the work are merged into the smallest other.
    for (;;) {
        size_t k = std::min_element(size.begin(), size.end()) - size.begin();
        if (parts.size() <= 1 || size[k] * 20 >= total) break;
        size_t into = k == 0 ? 1 : 0;
        for (size_t j = 0; j < parts.size(); j++)
            if (j != k && size[j] < size[into]) into = j;
        if (k == 0) std::swap(k, into);  // (keep the entry point's part at 0)
        parts[into].insert(parts[into].end(), parts[k].begin(), parts[k].end());
        size[into] += size[k];
        parts.erase(parts.begin() + k);
        size.erase(size.begin() + k);
    }
    // The others largest first: the threads take them in this order.
    {
        std::vector<size_t> order(parts.size() - 1);
        for (size_t k = 0; k < order.size(); k++) order[k] = k + 1;
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return size[a] > size[b]; });
        std::vector<std::vector<llvm::Function *>> sorted{parts[0]};
        std::vector<size_t> sorted_size{size[0]};
        for (size_t k : order) {
            sorted.push_back(parts[k]);
            sorted_size.push_back(size[k]);
        }
        parts.swap(sorted);
        size.swap(sorted_size);
    }
    if (parts.size() <= 1) return {};
    for (auto &[n, fn] : fns)
        if (fn->hasLocalLinkage()) {
            fn->setLinkage(llvm::GlobalValue::ExternalLinkage);
            fn->setVisibility(llvm::GlobalValue::DefaultVisibility);
        }
    // Globals that are not constants have one definition, in part 0.
    for (llvm::GlobalVariable &g : m.globals())
        if (g.hasLocalLinkage() && !g.isConstant()) {
            g.setName(m.getName() + "." + g.getName());
            g.setLinkage(llvm::GlobalValue::ExternalLinkage);
        }
    return parts;
}

std::string sanitize(const std::string &s) {
    std::string r;
    for (char c : s) r += (isalnum((unsigned char)c) || c == '_') ? c : '_';
    if (r.empty()) r = "pipeline";
    return r;
}

/** The code section of part i's object file: `<tag>.o`, then `<tag>.o.1`, `<tag>.o.2`, ... */
std::string object_section(const std::string &tag, size_t i) {
    return tag + ".o" + (i ? "." + std::to_string(i) : std::string());
}

/** Compiles mod in `parts` (partition_functions): parts 1.. on the compile threads, from the
    module's bitcode (each read back into a context of its own), part 0 here, in mod's context;
    then here the parts no thread has started. Their object files, part 0's first. */
std::vector<std::string> compile_in_parts(llvm::Module &mod, const std::vector<std::vector<llvm::Function *>> &parts,
                                          llvm::TargetMachine *tm, const CPUTargetInfo &target, std::string *llvm_ir,
                                          LLVMCompileTimes &times) {
    using clock = std::chrono::steady_clock;
    auto t0 = clock::now();
    size_t n = parts.size();
    auto job = std::make_shared<SplitCompile>();
    job->target = target;
    job->want_ir = llvm_ir != nullptr;
    job->functions.resize(n);
    job->objects.resize(n);
    job->irs.resize(n);
    job->errors.resize(n);
    job->claimed.reset(new std::atomic<bool>[n]);
    for (size_t i = 0; i < n; i++) job->claimed[i] = false;
    job->remaining = (int)n - 1;
    for (size_t i = 0; i < n; i++)
        for (llvm::Function *fn : parts[i]) job->functions[i].insert(fn->getName().str());
    {
        llvm::raw_string_ostream os(job->bitcode);
        llvm::WriteBitcodeToFile(mod, os);
        os.flush();
    }
    for (size_t i = 1; i < n; i++)
        for (llvm::Function *fn : parts[i]) fn->deleteBody();
    for (size_t i = 1; i < n; i++) CompileThreads::get().submit([job, i] { job->run(i); });
    times.ir_ms += since(t0);
    times.parts = (int)n;
    split_modules++;
    std::vector<std::string> objects(1);
    try {
        objects[0] = optimise_and_emit(mod, tm, llvm_ir, &times);
    } catch (...) {
        for (size_t i = 1; i < n; i++) job->claimed[i] = true;  // (no one starts them now)
        throw;
    }
    t0 = clock::now();
    for (size_t i = 1; i < n; i++) job->run(i);
    {
        std::unique_lock<std::mutex> lk(job->mu);
        job->cv.wait(lk, [&] { return job->remaining == 0; });
    }
    times.machine_code_ms += since(t0);
    for (size_t i = 1; i < n; i++) {
        if (!job->errors[i].empty()) fail(job->errors[i]);
        objects.push_back(std::move(job->objects[i]));
        if (llvm_ir) *llvm_ir += "\n; ---- part " + std::to_string(i) + " of the module ----\n" + job->irs[i];
    }
    return objects;
}

}  // namespace

bool llvm_backend_available() { return true; }

CPUTargetInfo host_cpu_info() {
    static const CPUTargetInfo info = [] {
        CPUTargetInfo t;
        t.cpu = llvm::sys::getHostCPUName().str();
        std::string f;
        auto feats = llvm::sys::getHostCPUFeatures();
        std::vector<std::string> v;
        for (auto &kv : feats) v.push_back((kv.getValue() ? "+" : "-") + kv.getKey().str());
        std::sort(v.begin(), v.end());
        for (auto &x : v) {
            if (!f.empty()) f += ",";
            f += x;
        }
        t.features = f;
        return t;
    }();
    return info;
}

std::string llvm_version() { return LLVM_VERSION_STRING; }

LLVMCompileTimes &last_llvm_compile_times() {
    static thread_local LLVMCompileTimes t;
    return t;
}

std::shared_ptr<CompiledModule> compile_llvm(const LoweredFunc &f, const CPUTargetInfo &target, std::string *llvm_ir,
                                             CodeSections *code, const std::string &tag) {
    LLVMCompileTimes &times = last_llvm_compile_times();
    times = LLVMCompileTimes();
    using clock = std::chrono::steady_clock;
    auto t0 = clock::now();
    if (code) {
        auto o = code->find(object_section(tag, 0)), sym = code->find(tag + ".sym");
        if (o != code->end() && sym != code->end()) {
            if (llvm_ir) llvm_ir->clear();
            std::vector<std::string> objs{o->second};
            for (auto more = code->find(object_section(tag, 1)); more != code->end();
                 more = code->find(object_section(tag, objs.size())))
                objs.push_back(more->second);
            return load_objects(objs, sym->second);
        }
    }
    llvm::TargetMachine *tm = target_machine(target);
    std::string fname = "weft_" + sanitize(f.name) + "_" + std::to_string(module_counter.fetch_add(1));

    llvm::LLVMContext lctx;
    auto mod = std::make_unique<llvm::Module>(fname, lctx);
    mod->setTargetTriple(tm->getTargetTriple().str());
    mod->setDataLayout(tm->createDataLayout());
    {
        CodeGen cg(lctx, *mod, target);
        cg.compile(f, fname);
    }
    {
        std::string err;
        llvm::raw_string_ostream os(err);
        if (llvm::verifyModule(*mod, &os)) {
            os.flush();
            fail("LLVM module verification failed: " + err);
        }
    }
    std::vector<std::vector<llvm::Function *>> parts = partition_functions(*mod, 1 + CompileThreads::get().size());
    std::vector<std::string> objects;
    times.ir_ms = since(t0);
    if (parts.size() <= 1) objects.push_back(optimise_and_emit(*mod, tm, llvm_ir, &times));
    else objects = compile_in_parts(*mod, parts, tm, target, llvm_ir, times);
    if (code) {
        for (size_t i = 0; i < objects.size(); i++) (*code)[object_section(tag, i)] = objects[i];
        (*code)[tag + ".sym"] = fname;
    }
    t0 = clock::now();
    auto loaded = load_objects(objects, fname);
    times.load_ms = since(t0);
    return loaded;
}

void set_compile_threads(int n) { CompileThreads::get().set_size(n); }
uint64_t modules_compiled_in_parts() { return split_modules.load(); }
uint64_t modules_compiled_without_machine_combiner() { return uncombined_modules.load(); }
uint64_t nests_outlined_from_large_nests() { return nests_from_big_nests.load(); }

}  // namespace internal
}  // namespace weft
