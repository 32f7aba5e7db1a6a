// Automatic scheduling by rules and an analytic cost model: which Funcs to inline, which to
// compute inside a consumer's tiles (and at which loop, with which tile), each loop nest's
// vectorized, parallel and unrolled loops and register blocks; each choice ranked by the time
// the model predicts on this machine.
#pragma once
#include <map>
#include <optional>
#include <set>
#include "autoschedule/Analysis.h"
#include "lang/Schedule.h"

namespace weft {
namespace internal {

/** What the cost model knows of the machine. */
struct MachineParams {
    int threads = 1;
    int vector_bytes = 64;
    int vector_registers = 32;         // the vector register file (AVX-512: 32, AVX2: 16)
    double l1_bytes = 32 << 10, l2_bytes = 1 << 20, l3_bytes = 16 << 20;
    int l2_ways = 8;                   // L2's associativity (where rows at a large power-of-two stride collide)
    double ops_per_ns = 3.0;           // scalar operations per ns on one core
    double cache_bytes_per_ns = 60;    // L2 bandwidth of one core
    double l3_bytes_per_ns = 30;       // of one core
    double dram_bytes_per_ns = 12;     // of one core (all cores share about twice that)
    double task_overhead_ns = 1500;    // one parallel task
    double realize_overhead_ns = 60;   // one compute_at realization (allocation, loop set-up)
    double stack_realize_overhead_ns = 10;  // one whose storage is small and on the stack
    double tlb_pages = 2048;           // 4 KiB pages the data TLBs hold
    double page_walk_ns = 8;           // a read of a page the TLBs no longer hold
};
/** The host's caches (from sysfs), vector width (from the target) and `threads`. */
MachineParams machine_params(const Target &t, int threads);

/** One complete schedule, as the public calls that make it, and its predicted time. */
struct PlanCandidate {
    std::vector<Directive> calls;
    double predicted_ms = 0;
    std::string summary;  // the decisions, one per line (WEFT_DEBUG)
};

/** The coefficient of x in e where e is x times a constant plus terms without x (x + 1, 2x - 1,
    3 - x); 0 where e does not use x; nothing for anything else (x / 2, x * x, a load). */
std::optional<int64_t> stride_in(const Expr &e, const std::string &x);
/** How well a vector loop over x loads a Func or input whose first index is index0 (the cost
    model's factor on the arithmetic): 1 dense (or reversed), 0.7 at a constant stride of 2 to 4
    (dense loads and a shuffle), 0.85 upsampling, (x + k) / c for c from 2 to 4 (a load and a
    permute), 0.35 a gather (anything else, or x moving another dimension). Code generation
    makes these loads so: jit/llvm/CodeGen_LLVM.cpp, tests/jit/test_strided_loads.cpp. */
double load_vector_efficiency(const Expr &index0, const std::string &x);

/** A candidate's family for a measured search: its fusion decisions (which Funcs are inlined,
    computed or stored at root or at which loop, copies), without its tile sizes and loop
    types. Candidates of one family share what the model most often mispredicts. */
std::string plan_family(const std::vector<Directive> &calls);
/** The candidate a measured search times next, or -1 when every one was tried: the first (the
    model's choice) first, then the untried one whose predicted time, corrected by what was
    measured, is least. The correction is the geometric mean of measured / predicted over the
    measured candidates of its family, or of all measured ones for a family none was measured
    of: a family the model under-rates is put back, the others come forward. `measured_ms` is
    NaN where a candidate was not measured (a failed one is `tried` too). */
int next_candidate_to_measure(const std::vector<double> &predicted_ms, const std::vector<std::string> &family,
                              const std::vector<double> &measured_ms, const std::vector<bool> &tried);

/** The finalist a measured search keeps, given each finalist's best time when timed again
    (`again`: candidate -> ms) and every reading of the model's first choice, candidate 0
    (`first_readings`: the sweep's, then each round's): the fastest, unless the first is a
    finalist and the fastest beats it by no more than the noise seen in the first's own
    readings (median / min - 1, at least 3%: one outlier among three or more readings does not
    count). Readings that are not finite and
    positive are left out; -1 when no finalist has one. */
int choose_finalist(const std::map<int, double> &again, const std::vector<double> &first_readings,
                    double *margin = nullptr);

/** A copy worth costing (Halide's clone trick, as interpolate's expert schedule makes it): a
    cheap Func `func` computed at root that `consumers` read at a constant stride of 2 to 4 along
    their first dimension (a pyramid's downsampling) and other Funcs read otherwise. With a copy,
    func.in(consumers), computed in the loops of what reads the consumers, the Func itself can be
    inlined into the others: no buffer of its size, and the copy's loads stay dense. */
struct CopyOpportunity {
    std::string func;
    std::vector<std::string> consumers;
};

/** Decisions a plan is made with (a copy's trial): Funcs inlined whatever the rules say, and
    copies (wrappers) kept, each computed in the loops of what reads it (those readers then root
    groups of their own). */
struct PlanHints {
    std::set<std::string> inline_funcs;
    std::set<std::string> copies;
};

/** Candidates, the predicted best first: the best choice for every group of Funcs, then
    variants that change one group's choice (for a search that measures). At most `max`.
    For a CUDA target: every Func that is not inlined at root, each stage's pure loops that may
    run in parallel as blocks and threads, one candidate per block shape. `copies`, if given,
    gets the copies worth costing against the best plan (CPU only). */
std::vector<PlanCandidate> plan_schedules(const PipelineInfo &info, const Target &t, const MachineParams &m, int max,
                                          const PlanHints &hints = PlanHints(),
                                          std::vector<CopyOpportunity> *copies = nullptr);

}  // namespace internal
}  // namespace weft
