// What automatic scheduling knows of a pipeline at the estimated shapes: each Func's region,
// its stages' iteration counts and calls, which loops may run in any order, and the region
// one stage reads from another over a given part of its domain.
#pragma once
#include <map>
#include "lower/Env.h"

namespace weft {
namespace internal {

/** [min, min + extent) of one dimension, constants. */
struct Span {
    int64_t min = 0, extent = 0;
};
using ConstRegion = std::vector<Span>;
double region_points(const ConstRegion &r);

/** The shapes to schedule for, by the pipeline's unique names. */
struct ShapeEstimates {
    std::map<std::string, ConstRegion> outputs;  // output Funcs
    std::map<std::string, ConstRegion> inputs;   // ImageParams and Buffers
    std::map<std::string, Expr> scalars;    // Params (by unique name) -> a constant
};

struct StageInfo {
    /** args, value, where() of the definition as one Stmt, Params and input shapes replaced by
        constants (what region_read() walks). */
    Stmt body;
    std::vector<std::string> rvars;
    std::vector<Span> rdom;  // each RVar's constant range
    /** Per pure Var: the stage writes at that Var itself and reads its own Func only there, so
        its iterations along it are independent (may be reordered, vectorized, run in parallel). */
    std::vector<bool> pure_parallel;
    /** Per pure Var: the stage loops over it (the update writes at it). */
    std::vector<bool> loops_over;
    double iterations = 0;  // over the Func's estimated region
    /** The Funcs and inputs it calls, by unique name, with each call's args. */
    std::vector<std::pair<std::string, std::vector<Expr>>> calls;
};

struct FuncInfo {
    std::string name;  // unique
    const LFunc *f = nullptr;
    bool output = false;
    ConstRegion region;  // what the pipeline needs of it at the estimated shapes
    std::vector<StageInfo> stages;
    std::vector<std::string> consumers;  // Funcs calling it (not itself), unique names, realization order
    double points() const { return region_points(region); }
    bool has_updates() const { return stages.size() > 1; }
};

struct PipelineInfo {
    std::vector<FuncInfo> funcs;  // realization order, producers first
    std::map<std::string, int> index;
    std::map<std::string, ConstRegion> inputs;  // region of each input the pipeline reads
    std::map<std::string, Type> input_types;
    std::map<std::string, Expr> consts;    // Params and input shape fields -> constants
    const FuncInfo &func(const std::string &n) const { return funcs[index.at(n)]; }
    bool is_func(const std::string &n) const { return index.count(n) > 0; }
};

/** Builds the picture from a reference snapshot (build_env(outputs, true)). Throws Error where
    a region cannot be bounded from the estimates, naming the Func or input and dimension. */
PipelineInfo analyze_pipeline(const Env &env, const ShapeEstimates &est);

/** The region of `callee` that stage `stage` of f reads while f's pure Vars range over `r`
    (its RVars over their whole domains). False where it is not called, or not bounded. */
bool region_read(const FuncInfo &f, int stage, const ConstRegion &r, const std::string &callee, ConstRegion *out);

}  // namespace internal
}  // namespace weft
