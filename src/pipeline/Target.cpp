// Target: the host CPU (through LLVM's view of it) or CUDA.
#include <dlfcn.h>
#include <cstdlib>
#include <sstream>
#include <set>
#include "ir/IR.h"
#include "weft/Func.h"
#include "llvm/CodeGen_LLVM.h"
#include "cuda/CudaDriver.h"
#include "pipeline/PipelineInternal.h"

namespace weft {

struct Target::Data {
    Arch arch = Arch::Host;
    std::string cpu;
    std::set<std::string> features;      // enabled LLVM feature names
    std::set<std::string> all_features;  // every feature LLVM knows for the host
    bool profile = false;                // the "profile" feature: kernels time each Func
    std::string suffix;                  // what else the kernels depend on (a CUDA device)
    std::string key;                     // arch, cpu and features, for comparisons and cache keys
};

/** d with its key: arch, cpu and features, then key_suffix (what else the kernels depend on). */
static std::shared_ptr<const Target::Data> finish(Target::Data d, const std::string &key_suffix = "") {
    std::ostringstream k;
    k << (int)d.arch << ":" << d.cpu << ":";
    for (auto &f : d.features) k << f << ",";
    if (d.profile) k << "|profile";
    d.suffix = key_suffix;
    d.key = k.str() + key_suffix;
    return std::make_shared<const Target::Data>(std::move(d));
}

/** The host's CPU with a CUDA device; key_suffix tells devices apart. */
static std::shared_ptr<const Target::Data> cuda_data(const std::string &key_suffix) {
    Target::Data d = *Target::host().data();
    d.arch = Target::Arch::CUDA;
    return finish(std::move(d), key_suffix);
}

Target Target::host() {
    static const Target t = [] {
        Data d;
        auto info = internal::host_cpu_info();
        d.cpu = info.cpu;
        std::stringstream ss(info.features);
        std::string item;
        while (std::getline(ss, item, ',')) {
            if (item.size() < 2) continue;
            d.all_features.insert(item.substr(1));
            if (item[0] == '+') d.features.insert(item.substr(1));
        }
        return Target(finish(std::move(d)));
    }();
    return t;
}

Target::Target() : d_(host().d_) {}

bool cuda_available() {
    if (internal::cuda_emulated()) return true;
    static const bool ok = [] {
        void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!h) return false;
        using InitFn = int (*)(unsigned);
        using CountFn = int (*)(int *);
        auto init = (InitFn)dlsym(h, "cuInit");
        auto count = (CountFn)dlsym(h, "cuDeviceGetCount");
        int n = 0;
        return init && count && init(0) == 0 && count(&n) == 0 && n > 0;
    }();
    return ok;
}

Target Target::cuda() {
    if (!cuda_available())
        throw Error("weft: Target::cuda(): no CUDA driver (libcuda.so.1) or no CUDA device on this machine");
    // Kernels depend on the device's compute capability and the NVRTC version too.
    return Target(cuda_data("|" + internal::cuda_device_key()));
}

Target Target::from_string(const std::string &s) {
    std::vector<std::string> parts;
    size_t start = 0;
    while (true) {
        size_t dash = s.find('-', start);
        parts.push_back(s.substr(start, dash == std::string::npos ? std::string::npos : dash - start));
        if (dash == std::string::npos) break;
        start = dash + 1;
    }
    size_t i = 0;
    bool gpu = false;
    if (parts[0] == "host") i = 1;
    else if (parts[0] != "cuda")
        throw Error("weft: Target::from_string(\"" + s + "\"): a target starts with \"host\" or \"cuda\" (e.g. \"host-cuda\")");
    if (i < parts.size() && parts[i] == "cuda") gpu = true, i++;
    Target t = gpu ? cuda() : host();
    for (; i < parts.size(); i++) {
        if (parts[i].empty())
            throw Error("weft: Target::from_string(\"" + s + "\"): an empty feature name");
        if (parts[i] == "cuda") throw Error("weft: Target::from_string(\"" + s + "\"): \"cuda\" comes right after \"host\"");
        t = t.with_feature(parts[i]);
    }
    return t;
}

Target get_host_target() { return Target::host(); }
/** The target environment variable var names, else the host; a bad text names var. */
static Target target_from_environment(const char *var) {
    const char *e = std::getenv(var);
    if (!e || !*e) return Target::host();
    try {
        return Target::from_string(e);
    } catch (const Error &err) {
        throw Error(std::string("weft: ") + var + "=\"" + e + "\": " + (err.what() + 6));
    }
}
Target get_target_from_environment() { return target_from_environment("WEFT_TARGET"); }
Target get_jit_target_from_environment() { return target_from_environment("WEFT_JIT_TARGET"); }

Target::Arch Target::arch() const { return d_->arch; }
const std::string &Target::cpu() const { return d_->cpu; }
const std::set<std::string> &Target::features() const { return d_->features; }

static bool matches(const std::string &feature, const std::string &name) {
    // "avx512" names the whole AVX-512 family; other names are LLVM's.
    if (name == "avx512") return feature.compare(0, 6, "avx512") == 0 || feature == "evex512";
    return feature == name;
}

bool Target::has_feature(const std::string &f) const {
    if (f == "avx512") return d_->features.count("avx512f") > 0;
    if (f == "profile") return d_->profile;
    if (f == "cuda") return d_->arch == Arch::CUDA;
    return d_->features.count(f) > 0;
}
Target Target::without_feature(const std::string &f) const {
    Data d = *d_;
    if (f == "profile") {
        d.profile = false;
        return Target(finish(std::move(d), d_->suffix));
    }
    bool known = false;
    for (auto it = d.features.begin(); it != d.features.end();) {
        if (matches(*it, f)) {
            it = d.features.erase(it);
            known = true;
        } else ++it;
    }
    for (auto &a : d.all_features) known |= matches(a, f);
    if (!known && f != "cuda") throw Error("weft: Target::without_feature(\"" + f + "\"): unknown feature");
    if (f == "cuda") d.arch = Arch::Host;
    return Target(finish(std::move(d)));
}
Target Target::with_feature(const std::string &f) const {
    if (f == "cuda") return cuda();
    Data d = *d_;
    if (f == "profile") {
        d.profile = true;
        internal::profile_report_at_exit();
        return Target(finish(std::move(d), d_->suffix));
    }
    if (!d.all_features.count(f)) throw Error("weft: Target::with_feature(\"" + f + "\"): this CPU does not have it");
    d.features.insert(f);
    return Target(finish(std::move(d)));
}
int Target::natural_vector_size(Type t) const {
    int bytes = has_feature("avx512f") ? 64 : (has_feature("avx") ? 32 : 16);
    return std::max(1, bytes / std::max(1, t.bytes()));
}
std::string Target::str() const {
    std::string s = d_->arch == Arch::CUDA ? "host-cuda-" : "";
    s += "x86-64-" + d_->cpu;
    static const char *shown[] = {"sse4.1", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512dq", "avx512vl",
                                  "avx512vnni", "avx512bf16", "avx512fp16"};
    for (auto *f : shown)
        if (d_->features.count(f)) s += std::string("-") + f;
    if (d_->profile) s += "-profile";
    return s;
}
bool Target::operator==(const Target &o) const { return d_ == o.d_ || d_->key == o.d_->key; }

namespace internal {
Target cuda_target_without_device() { return Target(cuda_data("|no device")); }

/** The LLVM feature string for a target: every known host feature, on or off. */
CPUTargetInfo cpu_info_for(const Target &t) {
    CPUTargetInfo info;
    info.cpu = t.cpu();
    std::string f;
    for (auto &a : t.data()->all_features) {
        if (!f.empty()) f += ",";
        f += (t.features().count(a) ? "+" : "-") + a;
    }
    info.features = f;
    return info;
}
const std::string &target_key(const Target &t) { return t.data()->key; }
}  // namespace internal

}  // namespace weft
