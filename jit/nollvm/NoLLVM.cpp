// Built instead of jit/llvm when WEFT_WITH_LLVM=OFF: no CPU code generator. compile_llvm()
// returns null, so every CPU pipeline (and the host part of a GPU pipeline) runs in the
// reference interpreter.
#include <fstream>
#include <string>
#include "llvm/CodeGen_LLVM.h"

namespace weft {
namespace internal {

bool llvm_backend_available() { return false; }

CPUTargetInfo host_cpu_info() {
    CPUTargetInfo info;
    info.cpu = "generic";
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line)) {
        if (line.compare(0, 10, "model name") != 0) continue;
        auto p = line.find(':');
        if (p == std::string::npos) break;
        std::string n = line.substr(p + 1);
        std::string clean;
        for (char c : n) {
            if (std::isalnum((unsigned char)c)) clean += (char)std::tolower((unsigned char)c);
            else if (!clean.empty() && clean.back() != '_') clean += '_';
        }
        while (!clean.empty() && clean.back() == '_') clean.pop_back();
        if (!clean.empty()) info.cpu = clean;
        break;
    }
    return info;  // no features: the interpreter needs none
}

std::string llvm_version() { return "none"; }
LLVMCompileTimes &last_llvm_compile_times() {
    static thread_local LLVMCompileTimes t;
    return t;
}
void set_compile_threads(int) {}
uint64_t modules_compiled_in_parts() { return 0; }
uint64_t modules_compiled_without_machine_combiner() { return 0; }
uint64_t nests_outlined_from_large_nests() { return 0; }
std::shared_ptr<CompiledModule> compile_llvm(const LoweredFunc &, const CPUTargetInfo &, std::string *llvm_ir,
                                             CodeSections *, const std::string &) {
    last_llvm_compile_times() = LLVMCompileTimes();
    if (llvm_ir) *llvm_ir = "; (no LLVM in this build: the interpreter runs this pipeline)\n";
    return nullptr;
}

}  // namespace internal
}  // namespace weft
