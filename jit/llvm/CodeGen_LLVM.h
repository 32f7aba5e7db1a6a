// The CPU backend: lowered IR -> LLVM IR -> machine code through LLVM 19's ORC JIT.
// No LLVM header appears here: the rest of weft includes only this file.
#pragma once
#include <memory>
#include <string>
#include "cache/DiskCache.h"
#include "lower/LoweredFunc.h"
#include "runtime/Runtime.h"

namespace weft {
namespace internal {

/** Compiled code; releasing the last reference frees its JIT memory. */
class CompiledModule {
public:
    virtual ~CompiledModule() = default;
    weft_pipeline_fn fn = nullptr;
};

struct CPUTargetInfo {
    std::string cpu;                 // e.g. "znver5"
    std::string features;            // LLVM feature string, e.g. "+avx2,+avx512f,..."
};

/** False in a build without LLVM (WEFT_WITH_LLVM=OFF): CPU code then runs in the interpreter,
    which runs scalar code only (lower() with host_vectors false). */
bool llvm_backend_available();

/** The host CPU as LLVM sees it (name and feature string). */
CPUTargetInfo host_cpu_info();

/** Compiles f for the CPU. If llvm_ir is non-null it receives the optimised LLVM IR as text.
    With code: where code holds sections `<tag>.o` and `<tag>.sym` (an object file and its
    entry point, from the disk cache), loads those instead of compiling (llvm_ir then stays
    empty); else compiles and adds them. Throws weft::Error on failure. Thread-safe. */
std::shared_ptr<CompiledModule> compile_llvm(const LoweredFunc &f, const CPUTargetInfo &target,
                                             std::string *llvm_ir = nullptr, CodeSections *code = nullptr,
                                             const std::string &tag = "cpu");
/** How long the last compile_llvm() on this thread spent in each part, in milliseconds (all
    zero where it loaded code from the disk cache); WEFT_DEBUG prints them. */
struct LLVMCompileTimes {
    double ir_ms = 0, optimise_ms = 0, machine_code_ms = 0, load_ms = 0;
    int parts = 1;  // the module's parts compiled in parallel (optimise_ms is part 0's; machine_code_ms to the last part's end)
};
LLVMCompileTimes &last_llvm_compile_times();
/** How many threads besides the caller compile parts of a module in parallel (0: the caller
    compiles it whole). Default: one fewer than the cores the process may run on, at most 7. */
void set_compile_threads(int n);
/** How many modules this process has compiled in more than one part (for tests). */
uint64_t modules_compiled_in_parts();
/** How many modules (or parts) this process has compiled to machine code with long basic blocks
    split and without LLVM's x86 machine combiner (for tests). */
uint64_t modules_compiled_without_machine_combiner();
/** How many loop nests this process has made functions of their own from inside a loop kept
    whole for holding very many loops (a tile loop around a hundred stages; for tests). */
uint64_t nests_outlined_from_large_nests();
/** LLVM's version, for the disk cache's entries ("none" without LLVM). */
std::string llvm_version();

}  // namespace internal
}  // namespace weft
