// The benchmarking library's registry and measurement (see weft/bench.h).
#include "weft/bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>

#include "runtime/Runtime.h"
#include "weft/Float16.h"

namespace weft {
namespace bench {

// ---------------------------------------------------------------- sizes

Sizes::Sizes(std::initializer_list<std::pair<std::string, int>> l) {
    for (auto &p : l) set(p.first, p.second);
}

int Sizes::operator[](const std::string &name) const {
    for (auto &p : v_)
        if (p.first == name) return p.second;
    std::string known;
    for (auto &p : v_) known += (known.empty() ? "" : ", ") + p.first;
    throw Error("weft::bench: no size called \"" + name + "\" (sizes: " + (known.empty() ? "none" : known) + ")");
}

bool Sizes::has(const std::string &name) const {
    for (auto &p : v_)
        if (p.first == name) return true;
    return false;
}

void Sizes::set(const std::string &name, int value) {
    for (auto &p : v_)
        if (p.first == name) {
            p.second = value;
            return;
        }
    v_.emplace_back(name, value);
}

std::string Sizes::label() const {
    std::string r;
    for (auto &p : v_) r += (r.empty() ? "" : "x") + std::to_string(p.second);
    return r;
}

double Sizes::volume() const {
    double v = 1;
    for (auto &p : v_) v *= p.second;
    return v;
}

// ---------------------------------------------------------------- registry

namespace {

std::vector<Definition> &registry() {
    static auto *v = new std::vector<Definition>;
    return *v;
}

bool valid_name(const std::string &n) {
    if (n.empty() || n.size() > 200) return false;
    for (char c : n)
        if (!(std::isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.')) return false;
    return true;
}

}  // namespace

int register_benchmark(Definition d) {
    if (!valid_name(d.name))
        throw Error("weft::bench::register_benchmark: the name \"" + d.name +
                    "\" must be 1-200 letters, digits, '_', '-' or '.'");
    if (!d.build) throw Error("weft::bench::register_benchmark: \"" + d.name + "\" has no builder");
    if (find_benchmark(d.name)) throw Error("weft::bench::register_benchmark: \"" + d.name + "\" is registered twice");
    for (auto &p : d.sizes.items())
        if (p.second <= 0)
            throw Error("weft::bench::register_benchmark: \"" + d.name + "\": size " + p.first + " = " +
                        std::to_string(p.second) + " (sizes are positive)");
    registry().push_back(std::move(d));
    return (int)registry().size();
}

const std::vector<Definition> &benchmarks() { return registry(); }

const Definition *find_benchmark(const std::string &name) {
    for (auto &d : registry())
        if (d.name == name) return &d;
    return nullptr;
}

// ---------------------------------------------------------------- statistics

namespace {

/** The q-quantile of sorted values, linear between order statistics (numpy's default). */
double quantile(const std::vector<double> &s, double q) {
    if (s.empty()) return 0;
    double pos = q * (double)(s.size() - 1);
    size_t i = (size_t)std::floor(pos);
    if (i + 1 >= s.size()) return s.back();
    double f = pos - (double)i;
    return s[i] + f * (s[i + 1] - s[i]);
}

}  // namespace

Stats summarize(std::vector<double> samples) {
    Stats s;
    s.samples = samples;
    s.reps = (int)samples.size();
    if (samples.empty()) return s;
    std::sort(samples.begin(), samples.end());
    s.min = samples.front();
    s.max = samples.back();
    s.median = quantile(samples, 0.5);
    s.p10 = quantile(samples, 0.1);
    s.p90 = quantile(samples, 0.9);
    double sum = 0;
    for (double v : samples) sum += v;
    s.mean = sum / (double)samples.size();
    double ss = 0;
    for (double v : samples) ss += (v - s.mean) * (v - s.mean);
    s.stddev = samples.size() > 1 ? std::sqrt(ss / (double)(samples.size() - 1)) : 0.0;
    s.spread = s.median > 0 ? (s.p90 - s.p10) / s.median : 0.0;
    return s;
}

double mann_whitney_p(const std::vector<double> &a, const std::vector<double> &b) {
    size_t n1 = a.size(), n2 = b.size();
    if (n1 < 2 || n2 < 2) return 1.0;
    for (double v : a)
        if (std::isnan(v)) return 1.0;
    for (double v : b)
        if (std::isnan(v)) return 1.0;
    // Ranks of the pooled samples, ties given their average rank.
    std::vector<std::pair<double, int>> all;
    for (double v : a) all.push_back({v, 0});
    for (double v : b) all.push_back({v, 1});
    std::sort(all.begin(), all.end());
    double n = (double)all.size(), r1 = 0, tie_term = 0;
    for (size_t i = 0; i < all.size();) {
        size_t j = i;
        while (j < all.size() && all[j].first == all[i].first) j++;
        double rank = (double)(i + j + 1) / 2.0;  // ranks i+1 .. j, averaged
        double t = (double)(j - i);
        tie_term += t * t * t - t;
        for (size_t k = i; k < j; k++)
            if (all[k].second == 0) r1 += rank;
        i = j;
    }
    double u1 = r1 - (double)n1 * (double)(n1 + 1) / 2.0;
    double u2 = (double)n1 * (double)n2 - u1;
    double u = std::max(u1, u2);
    double mu = (double)n1 * (double)n2 / 2.0;
    double var = (double)n1 * (double)n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1)));
    if (var <= 0) return 1.0;  // every value equal
    double z = (u - mu - 0.5) / std::sqrt(var);
    double p = std::erfc(z / std::sqrt(2.0));  // two-sided: 2 * (1 - Phi(z))
    return std::min(1.0, std::max(0.0, p));
}

int threads() { return weft_rt_num_threads(); }  // the pool's size (started now if it was not)

// ---------------------------------------------------------------- measuring

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

std::string utc_now() {
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char b[32];
    std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return b;
}

/** An element of a buffer as a double, by its flat offset in elements. */
double element(const Buffer<void> &b, int64_t off) {
    const void *p = b.raw_data();
    Type t = b.type();
    if (t.is_bfloat()) return (double)(float)((const bfloat16_t *)p)[off];
    if (t.is_float()) {
        if (t.bits() == 16) return (double)(float)((const float16_t *)p)[off];
        if (t.bits() == 32) return ((const float *)p)[off];
        return ((const double *)p)[off];
    }
    if (t.is_bool()) return ((const bool *)p)[off] ? 1.0 : 0.0;
    bool u = t.is_uint();
    switch (t.bits()) {
    case 8: return u ? (double)((const uint8_t *)p)[off] : (double)((const int8_t *)p)[off];
    case 16: return u ? (double)((const uint16_t *)p)[off] : (double)((const int16_t *)p)[off];
    case 32: return u ? (double)((const uint32_t *)p)[off] : (double)((const int32_t *)p)[off];
    default: return u ? (double)((const uint64_t *)p)[off] : (double)((const int64_t *)p)[off];
    }
}

/** Calls f(offset, coordinates) for every element of b. */
template <typename F>
void for_each_offset(const Buffer<void> &b, F &&f) {
    int n = b.dimensions();
    std::vector<int> c(n);
    for (int d = 0; d < n; d++) {
        if (b.extent(d) <= 0) return;
        c[d] = b.min(d);
    }
    while (true) {
        int64_t off = 0;
        for (int d = 0; d < n; d++) off += (int64_t)(c[d] - b.min(d)) * b.stride(d);
        f(off, c);
        int d = 0;
        for (; d < n; d++) {
            if (++c[d] <= b.min(d) + b.extent(d) - 1) break;
            c[d] = b.min(d);
        }
        if (d == n) return;
    }
}

/** A fresh buffer of b's type and shape (mins included), zeroed. */
Buffer<void> like(const Buffer<void> &b) {
    Buffer<void> r = b.copy();
    std::memset(r.raw_data(), 0, r.contents()->size_in_bytes());
    return r;
}

Check check_outputs(const Instance &in, const std::vector<Buffer<void>> &expected) {
    Check c;
    int64_t bad = 0, total = 0;
    double worst = 0;
    std::string first;
    for (size_t k = 0; k < in.outputs.size(); k++) {
        const Buffer<void> &out = in.outputs[k], &ref = expected[k];
        for_each_offset(out, [&](int64_t off, const std::vector<int> &pos) {
            int64_t roff = 0;
            for (int d = 0; d < ref.dimensions(); d++) roff += (int64_t)(pos[d] - ref.min(d)) * ref.stride(d);
            double a = element(out, off), e = element(ref, roff), diff = std::fabs(a - e);
            total++;
            if (!(diff <= in.atol + in.rtol * std::fabs(e))) {
                if (bad++ == 0) {
                    first = "output " + std::to_string(k) + " at (";
                    for (size_t d = 0; d < pos.size(); d++) first += (d ? ", " : "") + std::to_string(pos[d]);
                    char b[96];
                    std::snprintf(b, sizeof b, "): %.9g, expected %.9g", a, e);
                    first += b;
                }
            }
            if (diff > worst || diff != diff) worst = diff;
        });
    }
    char b[160];
    if (bad) {
        c.status = Check::Status::Mismatch;
        std::snprintf(b, sizeof b, "%lld of %lld elements differ; first: ", (long long)bad, (long long)total);
        c.message = b + first;
    } else {
        c.status = Check::Status::Ok;
        std::snprintf(b, sizeof b, "%lld elements match; max |diff| %.3g", (long long)total, worst);
        c.message = b;
    }
    return c;
}

/** Writes a buffer twice the last-level cache (64 MiB at least), evicting the pipeline's data. */
void flush_caches() {
    static std::vector<char> junk = [] {
        size_t llc = 0;
        for (int i = 0; i < 8; i++) {
            std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/size");
            std::string s;
            if (!(f >> s)) continue;
            size_t v = std::strtoull(s.c_str(), nullptr, 10);
            if (!s.empty() && (s.back() == 'K')) v <<= 10;
            if (!s.empty() && (s.back() == 'M')) v <<= 20;
            llc = std::max(llc, v);
        }
        return std::vector<char>(std::max<size_t>(64u << 20, 2 * llc));
    }();
    static char v = 0;
    v++;
    for (size_t i = 0; i < junk.size(); i += 64) junk[i] = v;
}

/** Times `call` after a warm-up: repetitions until o.min_seconds is spent (between min_reps and
    max_reps). `tick(done, total_estimate)` reports progress. */
template <typename F, typename Tick>
Stats measure(F &&call, const Options &o, Tick &&tick) {
    auto w0 = Clock::now();
    int warm = 0;
    while (ms_since(w0) < o.warmup_seconds * 1000.0 || warm < 1) {
        call();
        warm++;
        if (warm >= o.max_reps) break;
    }
    std::vector<double> samples;
    auto t0 = Clock::now();
    int min_reps = std::max(1, o.min_reps), max_reps = std::max(min_reps, o.max_reps);
    while ((int)samples.size() < min_reps ||
           ((int)samples.size() < max_reps && ms_since(t0) < o.min_seconds * 1000.0)) {
        if (o.flush_cache) flush_caches();
        auto a = Clock::now();
        call();
        samples.push_back(ms_since(a));
        tick((double)samples.size(), ms_since(t0));
    }
    return summarize(std::move(samples));
}

/** measure() for a peer timed in its own process: warm-up calls there, then batches of about
    0.1 s until the budget is spent, each call's time as the peer measured it. */
template <typename Tick>
Stats measure_elsewhere(const std::function<std::vector<double>(int)> &time, const Options &o, Tick &&tick) {
    auto w0 = Clock::now();
    double per_call = 0;
    for (int warm = 0; ms_since(w0) < o.warmup_seconds * 1000.0 || warm < 1; warm++) {
        std::vector<double> t = time(1);
        if (t.size() != 1) throw Error("the peer answered " + std::to_string(t.size()) + " times for 1 call");
        per_call = t[0];
        if (warm + 1 >= o.max_reps) break;
    }
    std::vector<double> samples;
    int min_reps = std::max(1, o.min_reps), max_reps = std::max(min_reps, o.max_reps);
    double spent = 0;
    while ((int)samples.size() < min_reps ||
           ((int)samples.size() < max_reps && spent < o.min_seconds * 1000.0)) {
        int left = max_reps - (int)samples.size();
        int batch = per_call > 0 ? (int)std::min<double>(left, std::max(1.0, 100.0 / per_call)) : 1;
        batch = std::max(batch, std::min(left, min_reps - (int)samples.size()));
        std::vector<double> t = time(batch);
        if ((int)t.size() != batch)
            throw Error("the peer answered " + std::to_string(t.size()) + " times for " + std::to_string(batch) + " calls");
        for (double v : t) {
            samples.push_back(v);
            spent += v;
        }
        if (!t.empty()) per_call = spent / (double)samples.size();
        tick((double)samples.size(), spent);
    }
    return summarize(std::move(samples));
}

const char *variant_name(Options::Mode m) {
    switch (m) {
    case Options::Mode::Default: return "default";
    case Options::Mode::Custom: return "custom";
    case Options::Mode::Auto: return "auto";
    default: return "none";
    }
}

/** Sets an environment variable for a scope, restoring it after. */
struct ScopedEnv {
    std::string name, old;
    bool had = false;
    ScopedEnv(const char *n, const char *v) : name(n) {
        if (const char *o = std::getenv(n)) had = true, old = o;
        setenv(n, v, 1);
    }
    ~ScopedEnv() {
        if (had) setenv(name.c_str(), old.c_str(), 1);
        else unsetenv(name.c_str());
    }
};

}  // namespace

Result run(const Definition &d, const Sizes &given, const Options &o, const ProgressFn &progress) {
    Result r;
    r.benchmark = d.name;
    r.threads = threads();
    // "host" for this CPU as it is (the machine's description names its features), else in full.
    r.target = o.target == Target::host() ? std::string("host") : o.target.str();
    r.variant = variant_name(o.mode);
    r.started = utc_now();
    Sizes sizes = d.sizes;
    auto t_start = Clock::now();
    // Rough shares of the whole run for the progress fraction: building and the first call,
    // then warm-up and timing of the pipeline, then each peer, then the profile.
    const double n_parts = 1.0 + (o.run_peers ? (double)d.peer_names.size() : 0.0) + (o.profile ? 0.1 : 0.0);
    auto report = [&](const std::string &phase, double fraction, const std::string &msg) {
        if (!progress) return;
        Progress p;
        p.benchmark = d.name;
        p.phase = phase;
        p.message = msg;
        p.fraction = std::min(1.0, std::max(0.0, fraction));
        double spent = ms_since(t_start) / 1000.0;
        p.eta_s = p.fraction > 0.02 ? spent * (1 - p.fraction) / p.fraction : 0.0;
        progress(p);
    };
    try {
        for (auto &p : given.items()) {
            if (!sizes.has(p.first)) (void)d.sizes[p.first];  // an Error naming the known sizes
            if (p.second <= 0 || p.second > (1 << 30))
                throw Error("weft::bench: size " + p.first + " = " + std::to_string(p.second) +
                            " (sizes are from 1 to 2^30)");
            sizes.set(p.first, p.second);
        }
        r.sizes = sizes;
        report("building", 0.0, "building " + d.name + " " + sizes.label());
        Instance in = d.build(sizes);
        if (in.outputs.empty()) throw Error("weft::bench: \"" + d.name + "\" built an instance with no output buffer");
        for (auto &b : in.outputs)
            if (!b.defined()) throw Error("weft::bench: \"" + d.name + "\" built an undefined output buffer");
        r.work = in.work;

        std::unique_ptr<ScopedEnv> no_auto;
        switch (o.mode) {
        case Options::Mode::Default:
            if (in.schedule) in.schedule();
            break;
        case Options::Mode::Custom: in.pipeline.apply_schedule_source(o.schedule); break;
        case Options::Mode::Auto: {
            std::vector<Func> outs = in.pipeline.outputs();
            for (size_t k = 0; k < outs.size() && k < in.outputs.size(); k++) {
                std::vector<std::pair<Expr, Expr>> est;
                for (int i = 0; i < in.outputs[k].dimensions(); i++)
                    est.push_back({in.outputs[k].min(i), in.outputs[k].extent(i)});
                outs[k].set_estimates(est);
            }
            AutoScheduleOptions ao;
            ao.budget_seconds = o.auto_budget_seconds;
            report("compiling", 0.02, "automatic scheduling");
            in.pipeline.auto_schedule(o.target, ao);
            break;
        }
        case Options::Mode::None: no_auto = std::make_unique<ScopedEnv>("WEFT_AUTOSCHEDULE", "0"); break;
        }
        r.schedule = in.pipeline.get_schedule().cpp_source();

        const bool gpu = o.target.arch() == Target::Arch::CUDA;
        auto call = [&] {
            in.pipeline.realize(RealizationArg(in.outputs), o.target);
            if (gpu)
                for (auto &b : in.outputs) b.device_sync();
        };
        report("compiling", 0.03, "first call (compiling)");
        auto f0 = Clock::now();
        call();
        r.first_call_ms = ms_since(f0);
        if (gpu)
            for (auto &b : in.outputs) b.copy_to_host();

        if (in.reference) {
            report("checking", 0.05, "checking the output against the reference");
            std::vector<Buffer<void>> expected;
            for (auto &b : in.outputs) expected.push_back(like(b));
            in.reference(expected);
            r.check = check_outputs(in, expected);
        } else {
            r.check.message = "no reference";
        }

        const double per_part = 0.9 / n_parts;
        auto timing = [&](const std::string &who, double base) {
            return [&, who, base](double reps, double ms) {
                double f = std::min(1.0, ms / std::max(1.0, o.min_seconds * 1000.0));
                report(who == d.name ? "timing" : "peers", 0.05 + base + per_part * f,
                       "timing " + who + ": " + std::to_string((int)reps) + " reps");
            };
        };
        report("warmup", 0.05, "warming up " + d.name);
        r.time = measure(call, o, timing(d.name, 0.0));
        r.unstable = r.time.spread > kUnstableSpread;
        if (r.unstable) {
            char b[200];
            std::snprintf(b, sizeof b, "unstable: p10-p90 spread is %.0f%% of the median (above %.0f%%)",
                          100 * r.time.spread, 100 * kUnstableSpread);
            r.warnings.push_back(b);
        }
        if (r.time.median > 0) {
            double s = r.time.median / 1000.0;
            r.gflops = in.work.flops / s / 1e9;
            r.gbs = in.work.bytes / s / 1e9;
        }
        r.intensity = in.work.bytes > 0 ? in.work.flops / in.work.bytes : 0.0;

        if (o.run_peers) {
            double base = per_part;
            for (auto &p : in.peers) {
                PeerResult pr;
                pr.name = p.name;
                try {
                    report("peers", 0.05 + base, "warming up " + p.name);
                    if (p.time) pr.time = measure_elsewhere(p.time, o, timing(p.name, base));
                    else if (p.run) pr.time = measure(p.run, o, timing(p.name, base));
                    else throw Error("the peer has neither run nor time");
                    pr.speedup = r.time.median > 0 ? pr.time.median / r.time.median : 0.0;
                } catch (const std::exception &e) {
                    pr.error = e.what();
                }
                r.peers.push_back(pr);
                base += per_part;
            }
        }
        if (o.lowered_ir) {
            std::vector<int> shape;
            for (int i = 0; i < in.outputs[0].dimensions(); i++) shape.push_back(in.outputs[0].extent(i));
            try {
                r.loop_nest = in.pipeline.loop_nest(shape, o.target);
                r.lowered_ir = in.pipeline.lowered_ir(shape, o.target);
                const size_t cap = 512 << 10;
                if (r.lowered_ir.size() > cap)
                    r.lowered_ir = r.lowered_ir.substr(0, cap) + "\n... (" +
                                   std::to_string(r.lowered_ir.size() - cap) + " more bytes)\n";
            } catch (const std::exception &e) {
                r.warnings.push_back(std::string("lowered IR: ") + e.what());
            }
        }
        if (o.profile) {
            report("profile", 0.96, "one profiled call per Func");
            bool was = profile_enabled();
            set_profile(true);
            reset_profile();
            try {
                call();  // compiles the instrumented kernel
                reset_profile();
                call();
                r.profile = profile_report();
            } catch (const std::exception &e) {
                r.warnings.push_back(std::string("profile: ") + e.what());
            }
            set_profile(was);
        }
        report("done", 1.0, "done");
    } catch (const std::exception &e) {
        r.error = e.what();
        if (r.sizes.empty()) r.sizes = sizes;
    }
    return r;
}

// ---------------------------------------------------------------- the machine

Machine describe_machine(bool measure_it) {
    Machine m;
    m.cpu = Target::host().str();
    m.threads = threads();
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("model name", 0) == 0) {
            auto c = line.find(':');
            if (c != std::string::npos) m.cpu_name = line.substr(c + 2);
            break;
        }
    if (!measure_it) return m;
    Options o;
    o.warmup_seconds = 0.05;
    o.min_seconds = 0.2;
    o.min_reps = 3;
    auto none = [](double, double) {};
    // Peak: chains of dependent multiply-adds, several vectors at a time (LLVM splits a vector
    // of k native widths into k interleaved operations), on every thread; the best of a few
    // shapes, as the best one differs between processors (on Zen 5, 16-long chains of 4 vectors
    // reach what a register-blocked SGEMM does; longer chains and 8 vectors ran slower).
    const int lanes = Target::host().natural_vector_size<float>();
    for (auto [chain, vectors] : {std::pair<int, int>{16, 4}, {16, 2}, {32, 4}}) {
        const int n = 1 << 20;
        Var x("x"), xo("xo"), xi("xi");
        Func p("peak");
        Expr v = cast<float>(x) * 1e-9f;
        for (int i = 0; i < chain; i++) v = v * 0.999f + 0.001f;
        p(x) = v;
        p.split(x, xo, xi, lanes * vectors).parallel(xo).vectorize(xi);
        Buffer<float> out(n);
        Pipeline pp(p);
        pp.realize(out);
        Stats s = measure([&] { pp.realize(out); }, o, none);
        if (s.min > 0) m.peak_gflops = std::max(m.peak_gflops, 2.0 * chain * n / (s.min / 1000.0) / 1e9);
    }
    {
        // Bandwidth: a copy of 256 MiB (read and write), on every thread: larger than the
        // last-level caches of these processors (sysfs may not say how large they are).
        const int n = 64 << 20;
        Buffer<float> in(n), out(n);
        std::memset(in.raw_data(), 0, (size_t)n * 4);
        Var x("x"), xo("xo"), xi("xi");
        Func c("copy");
        c(x) = in(x);
        c.split(x, xo, xi, 1 << 14).parallel(xo).vectorize(xi, Target::host().natural_vector_size<float>());
        Pipeline cp(c);
        cp.realize(out);
        Stats s = measure([&] { cp.realize(out); }, o, none);
        if (s.median > 0) m.bandwidth_gbs = 8.0 * n / (s.median / 1000.0) / 1e9;
    }
    return m;
}

}  // namespace bench
}  // namespace weft
