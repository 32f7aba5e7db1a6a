// weft public API: a library for benchmarking apps (link weft::bench).
//
// Register pipelines, each a function that builds the algorithm for given sizes with its
// default schedule, an optional reference and optional peers (other implementations of the
// same computation), then get a complete app from one main:
//
//     #include <weft/bench.h>
//     using namespace weft;
//
//     static const int blur = bench::register_benchmark({
//         "blur", "3x3 box blur of a float image", {{"width", 2048}, {"height", 2048}},
//         {{{"width", 512}, {"height", 512}}, {{"width", 4096}, {"height", 4096}}},  // sweep
//         {"C++ loop"},                                                               // peers
//         [](const bench::Sizes &s) {
//             bench::Instance in;
//             ...  // Buffers, Funcs, the output Func
//             in.pipeline = Pipeline(out);
//             in.outputs = {Buffer<float>(s["width"], s["height"])};
//             in.schedule = [=]() mutable { out.split(y, yo, yi, 32).parallel(yo).vectorize(x, 16); };
//             in.reference = [=](std::vector<Buffer<void>> &expected) { ... };
//             in.work = {9.0 * w * h, 8.0 * w * h};  // flops, bytes per call
//             return in;
//         }});
//     WEFT_BENCH_MAIN()
//
// The app (see `--help`): `list`, `run` (a table on the terminal, with a live progress line on
// a TTY; JSON in Google Benchmark's format and CSV), `compare a.json b.json` (a significance
// test per benchmark), `serve` (a local page, 127.0.0.1 only: pick a pipeline, edit its
// schedule as C++ calls, run it, plots), `report run.json -o out.html` (the same plots in one
// self-contained HTML file).
#pragma once
#include <weft/weft.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace weft {
namespace bench {

/** Named integer sizes of one instance ("width" -> 2048), in the order they were given. */
class Sizes {
public:
    Sizes() = default;
    Sizes(std::initializer_list<std::pair<std::string, int>> l);
    /** The size called `name`; a weft::Error naming the known ones when there is none. */
    int operator[](const std::string &name) const;
    bool has(const std::string &name) const;
    /** Sets `name` (appended when new). */
    void set(const std::string &name, int value);
    const std::vector<std::pair<std::string, int>> &items() const { return v_; }
    bool empty() const { return v_.empty(); }
    /** "2048x2048": the values joined by x. */
    std::string label() const;
    /** The product of the values (the number of elements, for a plot against size). */
    double volume() const;
    bool operator==(const Sizes &o) const { return v_ == o.v_; }

private:
    std::vector<std::pair<std::string, int>> v_;
};

/** The work of one call, for GFLOP/s, GB/s and the roofline; 0 where not stated. */
struct Work {
    double flops = 0;  // floating-point (or integer arithmetic) operations
    double bytes = 0;  // bytes that must move to and from memory at least
};

/** Another implementation of the same computation (a library, a hand-written loop), timed
    exactly as the pipeline is: warm-up calls, then repetitions to the time budget. */
struct Peer {
    std::string name;
    std::function<void()> run;
    /** For a peer that runs in a process of its own (one that cannot share weft's, as Halide 14
        with its LLVM 14): makes `reps` calls there and returns each one's time in ms (a
        weft::Error where the peer fails). When set, `run` is not used. */
    std::function<std::vector<double>(int reps)> time;
};

/** A benchmark at given sizes, made by its builder: the algorithm with its inputs bound, the
    buffers it fills, and what it is compared with. */
struct Instance {
    /** The algorithm: its output Funcs, inputs bound (Buffers, or ImageParam::set). */
    Pipeline pipeline;
    /** The buffers realize() fills, one per output of the pipeline. */
    std::vector<Buffer<void>> outputs;
    /** Gives the Funcs the benchmark's default schedule (the calls a user writes); empty for a
        pipeline whose default is no schedule at all (then weft schedules it at the first call). */
    std::function<void()> schedule;
    /** Writes the right result into `expected` (buffers shaped and typed as `outputs`); the
        pipeline's output is checked against it before anything is timed. Optional. */
    std::function<void(std::vector<Buffer<void>> &expected)> reference;
    /** An element matches when |out - expected| <= atol + rtol * |expected| (NaN never does). */
    double atol = 1e-4, rtol = 1e-4;
    std::vector<Peer> peers;
    Work work;
};

/** A registered benchmark. */
struct Definition {
    std::string name;
    std::string description;
    /** The default sizes. */
    Sizes sizes;
    /** Sizes for a plot of time against size (may be empty). */
    std::vector<Sizes> sweep;
    /** The names of the peers the builder adds (listed before anything is built). */
    std::vector<std::string> peer_names;
    /** Builds an instance for the sizes (the defaults with any the user changed). */
    std::function<Instance(const Sizes &)> build;
};

/** Registers a benchmark; returns how many are registered. A weft::Error for an empty or a
    duplicate name, a name with characters other than letters, digits, '_', '-' and '.', or no
    builder. Call it from a static initializer (as above) or from main before bench::main. */
int register_benchmark(Definition d);
/** The registered benchmarks, in the order of registration. */
const std::vector<Definition> &benchmarks();
/** The benchmark called `name`, or null. */
const Definition *find_benchmark(const std::string &name);

// ---------------------------------------------------------------- measuring

/** How one run is made. */
struct Options {
    /** Which schedule: the instance's default, `schedule` (C++ schedule calls, read with
        Pipeline::apply_schedule_source), the automatic scheduler's for the instance's shapes,
        or none (every Func inlined, as weft's default with WEFT_AUTOSCHEDULE=0). */
    enum class Mode { Default, Custom, Auto, None };
    Mode mode = Mode::Default;
    std::string schedule;
    /** Measured search time for Mode::Auto (0: the cost model alone). */
    double auto_budget_seconds = 0;
    Target target = Target::host();
    /** Calls before timing, for at least this long (after the first call, which compiles). */
    double warmup_seconds = 0.25;
    /** Repetitions until this much time is spent, between min_reps and max_reps. */
    double min_seconds = 1.0;
    int min_reps = 10, max_reps = 100000;
    /** Writes a buffer larger than the last-level cache between repetitions (not timed). */
    bool flush_cache = false;
    bool run_peers = true;
    /** After timing: one profiled call (time per Func), the loop nest and the lowered IR. */
    bool profile = true;
    bool lowered_ir = true;
};

/** Times in milliseconds. spread = (p90 - p10) / median. */
struct Stats {
    int reps = 0;
    double median = 0, p10 = 0, p90 = 0, mean = 0, stddev = 0, min = 0, max = 0, spread = 0;
    std::vector<double> samples;
};
/** The statistics of `samples_ms` (percentiles interpolated linearly between order statistics,
    as numpy's default); all zero for none. */
Stats summarize(std::vector<double> samples_ms);
/** Spread above which a result is reported as unstable. */
constexpr double kUnstableSpread = 0.10;

/** The two-sided p-value of the Mann-Whitney U test that samples a and b come from one
    distribution (normal approximation with tie and continuity corrections, as scipy's
    mannwhitneyu(..., method="asymptotic")); 1 when either has fewer than 2 samples. */
double mann_whitney_p(const std::vector<double> &a, const std::vector<double> &b);

struct PeerResult {
    std::string name;
    Stats time;
    /** The peer's median over the pipeline's (above 1: weft is faster). */
    double speedup = 0;
    std::string error;
};

struct Check {
    enum class Status { Ok, Mismatch, None };
    Status status = Status::None;
    std::string message;
};

/** One run of one benchmark. */
struct Result {
    std::string id;  // given by the app ("r1", ...)
    std::string benchmark;
    Sizes sizes;
    int threads = 1;
    std::string target;
    std::string variant;   // "default", "custom", "auto" or "none"
    std::string schedule;  // the schedule that ran, as C++ calls
    double first_call_ms = 0;  // the first call: compiling, then running once
    Check check;
    Stats time;
    bool unstable = false;
    std::vector<std::string> warnings;
    Work work;
    double gflops = 0, gbs = 0, intensity = 0;
    std::vector<PeerResult> peers;
    std::string profile, loop_nest, lowered_ir;
    std::string started;  // UTC, ISO 8601
    std::string error;    // not empty: the run failed (a weft::Error's message)
};

/** What a run is doing, for a progress line: phase is "building", "compiling", "checking",
    "warmup", "timing", "peers" or "profile"; fraction of the whole run in [0, 1]; eta_s the
    time left, estimated. */
struct Progress {
    std::string benchmark, phase, message;
    double fraction = 0, eta_s = 0;
};
using ProgressFn = std::function<void(const Progress &)>;

/** Builds the benchmark at `sizes` (its defaults where a size is not given; an unknown size
    name is an Error), applies the schedule that `o` asks for, calls it once (timed apart:
    first_call_ms), checks its output against the reference, warms up, times it, then its
    peers. A failure (a bad schedule, a mismatch is not one) is a Result with `error` set. */
Result run(const Definition &d, const Sizes &sizes, const Options &o = {}, const ProgressFn &progress = {});

/** The threads parallel loops run on in this process: the thread pool's size (WEFT_NUM_THREADS, else
    the hardware's), fixed when the pool starts (at the first parallel loop, or here). */
int threads();

/** The machine, for the roofline: peak GFLOP/s of float multiply-adds and memory bandwidth
    (GB/s of a copy), both measured with weft pipelines on all threads (about a second). */
struct Machine {
    std::string cpu;       // weft's target string
    std::string cpu_name;  // /proc/cpuinfo's model name
    int threads = 1;
    double peak_gflops = 0, bandwidth_gbs = 0;
};
Machine describe_machine(bool measure);

// ---------------------------------------------------------------- files

/** Google Benchmark's JSON format (a "context" and one "benchmarks" entry per repetition,
    plus median/mean/stddev/cv aggregates, times in ms; its compare.py reads it), with weft's
    full records under "weft_runs". */
std::string to_json(const std::vector<Result> &runs, const Machine &m);
/** One line per run: id, benchmark, sizes, threads, variant, median/p10/p90 ms, ... */
std::string to_csv(const std::vector<Result> &runs);
/** Reads to_json()'s file back (its "weft_runs"); a weft::Error for anything else. */
std::vector<Result> from_json(const std::string &text, Machine *m = nullptr);

/** The comparison of two runs of one benchmark: new median / old median, and the U test. */
struct Comparison {
    std::string benchmark, size_label, variant;
    int threads = 1;
    double old_ms = 0, new_ms = 0, ratio = 0, p_value = 1;
    bool significant = false;  // p < 0.05
};
/** Pairs runs of `before` and `after` by benchmark, sizes, threads and variant. */
std::vector<Comparison> compare(const std::vector<Result> &before, const std::vector<Result> &after);

/** The app: `list`, `run`, `compare`, `serve`, `report` (see --help). Returns the exit status. */
int main(int argc, char **argv);

}  // namespace bench
}  // namespace weft

/** Defines main() as the benchmarking app of the registered benchmarks. */
#define WEFT_BENCH_MAIN() \
    int main(int argc, char **argv) { return ::weft::bench::main(argc, argv); }
