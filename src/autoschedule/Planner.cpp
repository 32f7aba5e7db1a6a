// Automatic scheduling by rules and an analytic cost model (see Planner.h).
//
// 1. Inlining: a Func with no update is inlined where that computes nothing twice (each of its
//    points is read once: pointwise and single-use producers), where it is cheap (a cast, a
//    boundary condition: one load at clamped coordinates), or where it is read at most 1.5
//    times per point for a few operations (a pyramid's one-dimensional pass): XLA's and
//    Inductor's rule, never duplicate expensive producers.
// 2. Groups: every other Func whose only consumer is in a group joins that group; outputs and
//    Funcs read by several consumers start their own (computed at root).
// 3. For each group, the root's loop nest is tiled (strips of rows, or 2-D tiles; dimensions of
//    at most 4 points, colour channels, inside or outside them), and each member is computed
//    per tile (or per row of a strip, storing the strip: a sliding window), unless its tile
//    does not fit in L2, it is a reduction that would be computed more than once, or it would
//    compute more than twice its points; up to 8 times (Adams2019's cap) where the model finds
//    that cheaper than root, and any number of times where that adds under 2% to the group's
//    work (a coarse pyramid level: then per strip or tile, never per row). A reduction read
//    pointwise by the root may instead be register-blocked inside the root's tiles (the GEMM
//    and convolution form). Each choice is costed: operations over vector width, bytes moved
//    at the bandwidth of the level they fit in, parallel efficiency of the tasks, and the
//    overhead of each realization.
// 4. Loop nests: a member vectorized at the target's natural width along the dimension its
//    loads are dense in (dimension 0 unless another is strictly better; that one is then made
//    innermost in storage too; loads at a constant stride of 2 to 4 and upsampling loads are
//    costed as the dense loads and shuffles code generation makes of them, not as gathers), outer loops fused into one parallel loop with enough tasks,
//    update stages' pure loops moved inside their reduction loops where that is legal (the
//    reduction order, hence the floating-point result, is unchanged); a reduction of a few
//    steps (RVars of constant extents, at most 8 steps per point) instead runs innermost,
//    unrolled inside the vector loop, each vector accumulating in a register (resize's 4-tap
//    sums, nl_means' 7-tap patch sums); where only a tiled root reads such a member, pointwise,
//    it is computed per vector of the root, inside its tile, nothing of it stored (resize's
//    vertical pass: Halide's resized_y.compute_at(output, xi)). Likewise a member whose only
//    reader is another member computed per tile, read pointwise, nothing computed twice: per
//    vector of that reader (camera_pipe's demosaiced.compute_at(curved, x)).
// 5. Transposes: a Func that reads a scan (or a reduction over many points) transposed is not
//    inlined but made a group's root: the scan is then computed per strip of it (a strip of
//    the transpose's rows is a strip of the scan's columns), and a root that reads anything
//    transposed may loop over each strip in columns of one vector, so that a gather's cache
//    lines are read again from L1 by the next row. Such strips may also keep colour channels
//    outside them (each strip's scan for one channel). Costed: gathered lines at the rate of
//    the level they come from unless a row's lines stay in L1; a page walk per row where a
//    tall, narrow footprint touches more pages than the TLBs hold; a scan's tile at the rate
//    of the level that holds everything its iteration moves (its stages sweep all of it);
//    a scan over a footprint narrower than a vector unvectorized.
// 6. Copies (Halide's clone trick): a cheap Func computed at root that one reader reads at a
//    constant stride of 2 to 4 along its first dimension and others read otherwise is offered
//    as a copy (copy_opportunities; Pipeline::auto_schedule makes f.in(reader), plans again with
//    PlanHints: the copy kept, computed in the loops of what reads it, f inlined elsewhere, and
//    compares the predictions).
#include "autoschedule/Planner.h"
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>
#include <unordered_map>
#include "ir/IRVisitor.h"
#include "ir/Simplify.h"
#include "lower/LoweredFunc.h"

namespace weft {
namespace internal {

namespace {

int64_t read_cache_size(int index, int *level, int *ways) {
    std::string base = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    std::ifstream ls(base + "level"), ss(base + "size"), ts(base + "type"), ws(base + "ways_of_associativity");
    std::string size, type;
    if (!(ls >> *level) || !(ss >> size) || !(ts >> type) || type == "Instruction") return 0;
    if (!(ws >> *ways)) *ways = 0;
    int64_t v = std::atoll(size.c_str());
    char unit = size.empty() ? 0 : size.back();
    if (unit == 'K') v <<= 10;
    else if (unit == 'M') v <<= 20;
    return v;
}

/** Operations to compute one point of an Expr, inlined Funcs counted at their own cost. */
class OpCount : public IRVisitor {
public:
    const std::map<std::string, double> *inlined = nullptr;
    double ops = 0;

protected:
    /** Arithmetic on coordinates counts a quarter: loop partitioning and the simplifier take
        most of it out of the inner loops (a boundary condition's clamps). */
    int index_depth = 0;
    void include_args(const std::vector<Expr> &args) {
        double before = ops;
        index_depth++;
        for (auto &a : args) include(a);
        index_depth--;
        if (index_depth == 0) ops = before + (ops - before) * 0.25;
    }
    void visit(const Cast *op) override { ops += 0.5, IRVisitor::visit(op); }
    void visit(const Add *op) override { ops += 1, IRVisitor::visit(op); }
    void visit(const Sub *op) override { ops += 1, IRVisitor::visit(op); }
    void visit(const Mul *op) override { ops += 1, IRVisitor::visit(op); }
    void visit(const Div *op) override { ops += op->type.is_float() ? 4 : 6, IRVisitor::visit(op); }
    void visit(const Mod *op) override { ops += 6, IRVisitor::visit(op); }
    void visit(const Min *op) override { ops += 1, IRVisitor::visit(op); }
    void visit(const Max *op) override { ops += 1, IRVisitor::visit(op); }
    void visit(const EQ *op) override { ops += 1, IRVisitor::visit(op); }
    void visit(const NE *op) override { ops += 1, IRVisitor::visit(op); }
    void visit(const LT *op) override { ops += 1, IRVisitor::visit(op); }
    void visit(const LE *op) override { ops += 1, IRVisitor::visit(op); }
    void visit(const GT *op) override { ops += 1, IRVisitor::visit(op); }
    void visit(const GE *op) override { ops += 1, IRVisitor::visit(op); }
    void visit(const And *op) override { ops += 1, IRVisitor::visit(op); }
    void visit(const Or *op) override { ops += 1, IRVisitor::visit(op); }
    void visit(const Not *op) override { ops += 1, IRVisitor::visit(op); }
    void visit(const Select *op) override { ops += 1, IRVisitor::visit(op); }
    void visit(const Call *op) override {
        if (op->call_type == Call::Intrinsic) IRVisitor::visit(op);
        else include_args(op->args);
        if (op->call_type == Call::Intrinsic) {
            static const std::set<std::string> costly = {"exp", "log", "pow", "sin", "cos"};
            // pow(x, 2) is a multiply (LLVM rewrites it exactly).
            auto square = op->name == "pow" && op->args.size() == 2 ? op->args[1].as<FloatImm>() : nullptr;
            if (square && square->value == 2.0) ops += 1;
            else ops += costly.count(op->name) || is_libm_call(op->name) ? 20 : op->name == "sqrt" ? 4 : 1;
            return;
        }
        auto it = inlined->find(op->name);
        ops += it != inlined->end() ? it->second : 1;  // inlined: its work; else one load
    }
};

/** Splits the operations OpCount counts in a stage's body by where code generation computes
    them: `constant` those of subexpressions with no variable and no load (folded before code
    generation: `1.0f / 4.0f`), `invariant` those of the largest subexpressions that use none of
    `vars` (nor a name a Let binds inside the body) but do use a variable or a load: taken out of
    the loops over `vars` (LLVM hoists them, or the unrolled copies of a reduction share them).
    Inside a call's arguments both count a quarter, as OpCount counts them. */
class LoopInvariantOps : public IRMutator {
public:
    LoopInvariantOps(const std::map<std::string, double> *inlined, std::set<std::string> vars)
        : inlined(inlined), vars(std::move(vars)) {}
    double invariant = 0, constant = 0;
    using IRMutator::mutate;
    /** Counts the operations of body (the Let names inside it among `vars`). */
    void count(const Stmt &body) {
        struct Lets : IRVisitor {
            std::set<std::string> *out;
            void visit(const Let *op) override { out->insert(op->name), IRVisitor::visit(op); }
            void visit(const LetStmt *op) override { out->insert(op->name), IRVisitor::visit(op); }
        } l;
        l.out = &vars;
        l.include(body);
        // Which subexpressions use `vars`, found bottom-up once (asking at each node as the walk
        // descends would be quadratic in the depth of the expression).
        Varies v(vars, varies);
        v.mutate(body);
        mutate(body);
    }
    Expr mutate(const Expr &e) override {
        if (!e.defined()) return e;
        auto known = varies.find(e.get());
        if (known != varies.end() && !known->second) {
            OpCount c;
            c.inlined = inlined;
            c.include(e);
            (reads_anything(e) ? invariant : constant) += c.ops * (in_args > 0 ? 0.25 : 1);
            return e;
        }
        if (auto call = e.as<Call>(); call && call->call_type != Call::Intrinsic) {
            in_args++;
            for (auto &a : call->args) mutate(a);
            in_args--;
            return e;
        }
        return IRMutator::mutate(e);
    }

private:
    const std::map<std::string, double> *inlined;
    std::set<std::string> vars;
    int in_args = 0;
    /** Per node of the body: does it use one of `vars`? */
    std::unordered_map<const ExprNode *, bool> varies;
    class Varies : public IRMutator {
    public:
        Varies(const std::set<std::string> &vars, std::unordered_map<const ExprNode *, bool> &memo)
            : vars(vars), memo(memo) {}
        using IRMutator::mutate;
        Expr mutate(const Expr &e) override {
            if (!e.defined()) return e;
            auto it = memo.find(e.get());
            if (it != memo.end()) {
                found = found || it->second;
                return e;
            }
            bool outer = found;
            found = false;
            if (auto v = e.as<Variable>()) found = vars.count(v->name) > 0;
            else IRMutator::mutate(e);
            memo[e.get()] = found;
            found = outer || found;
            return e;
        }

    private:
        const std::set<std::string> &vars;
        std::unordered_map<const ExprNode *, bool> &memo;
        bool found = false;
    };
    static bool reads_anything(const Expr &e) {
        struct Any : IRVisitor {
            bool found = false;
            void visit(const Variable *) override { found = true; }
            void visit(const Load *) override { found = true; }
            void visit(const Call *op) override {
                if (op->call_type != Call::Intrinsic) found = true;
                else IRVisitor::visit(op);
            }
        } a;
        a.include(e);
        return a.found;
    }
};

/** Are the args those of a pointwise read (each exactly the reader's own Var of the same
    position)? */
bool pointwise_args(const std::vector<Expr> &args, const std::vector<std::string> &vars) {
    if (args.size() != vars.size()) return false;
    for (size_t d = 0; d < args.size(); d++) {
        auto v = args[d].as<Variable>();
        if (!v || v->name != vars[d]) return false;
    }
    return true;
}

/** How well the innermost loop over `x` vectorizes the calls in a stage: 1 dense, lower for
    strided loads and gathers. Code generation makes loads at a constant stride of 2 to 4 (either
    way) dense loads and a shuffle, and upsampling loads, (x + k) / c for c from 2 to 4, one load
    and a permute (jit/llvm/CodeGen_LLVM.cpp, tests/jit/test_strided_loads.cpp): costed as such,
    not as gathers. */
double vector_efficiency(const StageInfo &s, const std::string &x, const std::string &self) {
    double eff = 1.0;
    for (auto &[callee, args] : s.calls) {
        // (An update's reads of its own Func follow its storage, whose innermost dimension is
        // the vectorized one.)
        if (args.empty() || callee == self) continue;
        bool uses = false;
        for (size_t d = 0; d < args.size(); d++) uses = uses || expr_uses_var(args[d], x);
        if (!uses) continue;  // a broadcast
        eff = std::min(eff, load_vector_efficiency(args[0], x));
    }
    return eff;
}

/** A new loop name for `base` + `suffix`, not among `taken`. */
std::string fresh(const std::string &base, const std::string &suffix, std::set<std::string> &taken) {
    std::string n = base + suffix;
    for (int k = 2; taken.count(n); k++) n = base + suffix + std::to_string(k);
    taken.insert(n);
    return n;
}

/** The largest power of two at most v and at most cap (1 at least): a GPU block's side. */
int64_t pow2_at_most(int64_t v, int cap) {
    int64_t p = 1;
    while (p * 2 <= v && p * 2 <= cap) p *= 2;
    return p;
}

struct Emitter {
    std::vector<Directive> calls;
    Directive base(Directive::Op op, const std::string &f, int stage) {
        Directive d;
        d.op = op;
        d.func = f;
        d.stage = stage;
        return d;
    }
    void compute_root(const std::string &f) { calls.push_back(base(Directive::ComputeRoot, f, 0)); }
    void compute_at(const std::string &f, const std::string &g, const std::string &v) {
        Directive d = base(Directive::ComputeAt, f, 0);
        d.names = {g, v};
        calls.push_back(d);
    }
    void store_at(const std::string &f, const std::string &g, const std::string &v) {
        Directive d = base(Directive::StoreAt, f, 0);
        d.names = {g, v};
        calls.push_back(d);
    }
    void split(const std::string &f, int stage, const std::string &old, const std::string &outer,
               const std::string &inner, int64_t factor) {
        Directive d = base(Directive::Split, f, stage);
        d.names = {old, outer, inner};
        d.rvars = {false, false, false};
        d.exprs = {IntImm::make(Int(32), factor)};
        calls.push_back(d);
    }
    void fuse(const std::string &f, int stage, const std::string &inner, const std::string &outer,
              const std::string &fused) {
        Directive d = base(Directive::Fuse, f, stage);
        d.names = {inner, outer, fused};
        d.rvars = {false, false, false};
        calls.push_back(d);
    }
    void reorder(const std::string &f, int stage, const std::vector<std::string> &order, const std::set<std::string> &rvars) {
        Directive d = base(Directive::Reorder, f, stage);
        d.names = order;
        for (auto &n : order) d.rvars.push_back(rvars.count(n) > 0);
        calls.push_back(d);
    }
    /** f's pure stage computed with g's pure stage, their loops fused down to v. */
    void compute_with(const std::string &f, const std::string &g, const std::string &v) {
        Directive d = base(Directive::ComputeWith, f, 0);
        d.names = {g, v};
        d.rvars = {false, false};
        d.exprs = {IntImm::make(Int(32), 0)};
        calls.push_back(d);
    }
    void reorder_storage(const std::string &f, const std::vector<std::string> &dims) {
        Directive d = base(Directive::ReorderStorage, f, 0);
        d.names = dims;
        calls.push_back(d);
    }
    void loop(const std::string &f, int stage, const std::string &v, ForType t) {
        Directive d = base(Directive::Loop, f, stage);
        d.names = {v};
        d.rvars = {false};
        d.for_type = t;
        calls.push_back(d);
    }
};

/** Where a group member is computed. */
struct Placement {
    // Vector: computed per vector of the root, inside its tile (a reduction of a few steps that
    // only the root reads, pointwise: Halide's `compute_at(output, xi)` of a small sum), its
    // accumulators in registers; nothing stored per tile. Or per vector of another member,
    // its only reader (`in_member`), where each of its points is computed once there (camera
    // pipe's demosaiced computed at curved's x: Halide's expert schedule).
    enum Kind { Root, At, Slide, Vector } kind = Root;
    std::string in_member;  // Vector: the member whose vector loop computes it (empty: the root's)
    std::string why;  // for WEFT_DEBUG: why at root
    // Per iteration of its compute loop (At), or of its store loop (Slide); Vector: the tile's
    // (what its producers are computed for).
    ConstRegion footprint;
    double redundancy = 1;
    bool capped = false;  // Root: recomputed per tile it would be within the cap (8x), but not worth it by the model
};

struct GroupConfig {
    enum Kind { AllRoot, Strip, Slide, Rows, Tile, Block } kind = AllRoot;
    int64_t f0 = 0, f1 = 0;  // tile factors: Strip/Slide/Rows rows; Tile/Block dims 0 and 1
    bool strips() const { return kind == Strip || kind == Slide || kind == Rows; }
    std::string blocked;     // Block: the reduction register-blocked in the root's tiles
    bool small_inside = false;  // Tile: dimensions 2, 3, ... of at most 4 points looped inside each tile
    bool small_outside = false;  // Strip: those dimensions looped outside the strips instead
    // Block: columns of blocks outside, their rows inside (each column's panel of the operand
    // read along dimension 0 is reused by every row), rather than rows of blocks outside.
    bool panel = false;
    std::string pack;  // Block: an inlined copy of an operand computed per column panel instead
    std::map<std::string, Placement> where;
    ConstRegion tile;  // the root's region per iteration of its compute loop (a strip: all its rows)
    double iterations = -1;  // of that loop (as place() was given; -1: placed by hand)
    // Members the model keeps at root though recomputing them per tile is within the cap
    // (Placement::capped) recomputed per tile instead: a candidate for the measured search only.
    bool recompute = false;
    double cost_ns = 0;
    std::string describe() const { return describe_kind() + (recompute ? ", members recomputed per tile" : ""); }
    std::string describe_kind() const {
        switch (kind) {
        case AllRoot: return "every member at root";
        case Strip:
            return "strips of " + std::to_string(f1) + " rows" + (f0 > 0 ? " in columns of " + std::to_string(f0) : "") +
                   (small_outside ? " (small outer dimensions outside)" : "") + ", members per strip";
        case Slide:
            return "strips of " + std::to_string(f1) + " rows" + (f0 > 0 ? " in columns of " + std::to_string(f0) : "") +
                   ", members a sliding window per row";
        case Rows: return "strips of " + std::to_string(f1) + " rows, members per row";
        case Tile:
            return std::to_string(f0) + "x" + std::to_string(f1) + " tiles" + (small_inside ? " (small outer dimensions inside)" : "") +
                   ", members per tile";
        case Block:
            return "register blocks of " + std::to_string(f0) + "x" + std::to_string(f1) + " for \"" + blocked + "\"" +
                   (panel ? ", columns outside" : ", rows outside") + (pack.empty() ? "" : ", \"" + pack + "\" packed per column");
        }
        return "";
    }
};

struct Group {
    std::string root;
    std::vector<std::string> members;  // realization order
    std::vector<GroupConfig> configs;  // cheapest first
};

class Planner {
public:
    Planner(const PipelineInfo &info, const Target &t, const MachineParams &m) : info(info), target(t), m(m) {}

    std::vector<PlanCandidate> run(int max) {
        decide_inlining();
        for (auto &w : hints.copies) {
            if (!info.is_func(w) || inlined.count(w)) continue;
            for (auto &c : real_consumers(w))
                if (!info.func(c).output && own_group.insert(c).second)
                    log << "regroup: " << c << " reads the copy " << w << ": it becomes a group's root\n";
        }
        bool settled = false;
        for (int round = 0;; round++) {
            groups.clear();
            group_of.clear();
            form_groups();
            for (auto &g : groups)
                for (auto &mb : g.members) {
                    int v = choose_vector_dim(info.func(mb));
                    if (v != 0 && !vdim.count(mb)) {
                        vdim[mb] = v;
                        log << "vectorize " << mb << " along " << info.func(mb).f->args[v] << " (its loads are dense there)\n";
                    }
                }
            for (auto &g : groups) cost_group(g);
            // A member left at root by its group's best choice that could be register-blocked
            // (a contraction itself, or the pointwise reader of one that only it reads), or an
            // operand of a contraction with members of its own, is made the root of a group of
            // its own, and the groups are formed and costed again.
            if (settled) break;
            // (The reader first: a contraction it may block stays its member.)
            size_t before = own_group.size();
            std::set<std::string> blocked_by_reader;
            for (int pass = 0; pass < 2; pass++)
                for (auto &g : groups) {
                    if (g.configs.empty()) continue;
                    for (auto &[mb, p] : g.configs[0].where) {
                        if (p.kind != Placement::Root || own_group.count(mb)) continue;
                        bool regroup = false;
                        std::string why = "may be register-blocked in place";
                        if (pass == 0) {
                            Group alone;
                            alone.root = mb;
                            for (auto &other : g.members) {
                                auto cons = real_consumers(other);
                                if (other != mb && cons.size() == 1 && *cons.begin() == mb) alone.members.push_back(other);
                            }
                            std::string b = blockable(alone);
                            if (!b.empty() && !is_contraction(info.func(b))) b.clear();
                            if (!b.empty()) blocked_by_reader.insert(b);
                            // (or an operand of a contraction, kept at root for it, with members
                            // of its own: a layer norm's reductions, then computed per row of it
                            // rather than all at root)
                            bool operand = false;
                            for (auto &cn : real_consumers(mb)) operand = operand || is_contraction(info.func(cn));
                            regroup = !b.empty() || (operand && !alone.members.empty() && info.func(mb).f->args.size() >= 2 &&
                                                     !info.func(mb).has_updates());
                            why = !b.empty() ? "may block the contraction " + b + " it reads"
                                             : "may compute its own members per row or tile";
                        } else {
                            regroup = !blocked_by_reader.count(mb) && self_blockable(info.func(mb));
                        }
                        if (regroup) {
                            own_group.insert(mb);
                            log << "regroup: " << mb << " is left at root by group " << g.root << " and " << why
                                << ": it becomes a group's root\n";
                        }
                    }
                }
            if (own_group.size() > before && round < 3) continue;
            // Kept only where the new group's best choice is a register block, or (for a root
            // of members) computes them per tile, strip or row (else the groups are formed as
            // before for it).
            size_t kept = own_group.size();
            for (auto it = own_group.begin(); it != own_group.end();) {
                const Group &g = groups[group_of.at(*it)];
                bool keep = !g.configs.empty() && (g.configs[0].kind == GroupConfig::Block ||
                                                   (g.configs[0].kind != GroupConfig::AllRoot && !self_blockable(info.func(*it))));
                if (!keep) {
                    log << "regroup undone: " << *it << "'s group blocks no contraction and tiles nothing\n";
                    it = own_group.erase(it);
                } else {
                    ++it;
                }
            }
            if (own_group.size() == kept) break;
            settled = true;
        }
        std::vector<std::vector<int>> choices;
        std::vector<int> best(groups.size(), 0);
        choices.push_back(best);
        // Variants: one group's second, third, ... choice.
        size_t most = 0;
        for (auto &g : groups) most = std::max(most, g.configs.size());
        for (int rank = 1; rank < (int)most && (int)choices.size() < max; rank++)
            for (size_t gi = 0; gi < groups.size() && (int)choices.size() < max; gi++)
                if (rank < (int)groups[gi].configs.size()) {
                    auto c = best;
                    c[gi] = rank;
                    choices.push_back(c);
                }
        std::vector<PlanCandidate> out;
        for (auto &c : choices) out.push_back(emit(c));
        // (Every group's first choice stays first: see cost_group's columns.)
        std::stable_sort(out.begin() + 1, out.end(),
                         [](const PlanCandidate &a, const PlanCandidate &b) { return a.predicted_ms < b.predicted_ms; });
        // Last, the safe one: every Func that is not inlined at root, each loop nest vectorized
        // and parallel (what is left if lowering refuses every other).
        std::vector<int> safe;
        for (auto &g : groups) {
            int k = 0;
            for (size_t i = 0; i < g.configs.size(); i++)
                if (g.configs[i].kind == GroupConfig::AllRoot) k = (int)i;
            safe.push_back(k);
        }
        if (safe != best) out.push_back(emit(safe, false));
        return out;
    }

    /** GPU: every Func that is not inlined at root, each stage a grid of tx x ty thread blocks
        over its pure dimensions (the update stages whose pure loops may run in parallel; the
        others run on the host between the kernels), or staged in shared memory per block of
        its one reader (see staged_producers), one candidate per block shape; each shape where
        something is staged also without staging, next. */
    std::vector<PlanCandidate> run_gpu(int max) {
        decide_inlining();
        std::vector<std::pair<int, int>> shapes = {{32, 8}, {16, 16}, {64, 4}, {128, 1}, {8, 8}};
        std::vector<PlanCandidate> out;
        for (auto [tx, ty] : shapes) {
            std::map<std::string, std::pair<std::string, ConstRegion>> staged = staged_producers(tx, ty);
            for (bool stage : {true, false}) {
                if ((int)out.size() >= max) break;
                if (!stage && staged.empty()) continue;
                Emitter e;
                std::ostringstream sum;
                sum << log.str() << "GPU blocks of " << tx << "x" << ty << " threads\n";
                double ops = 0, kernels = 0;
                std::map<std::string, std::string> block_loop;  // a kernel's Func -> its innermost block loop
                for (auto &f : info.funcs) {
                    if (inlined.count(f.name)) continue;
                    for (size_t k = 0; k < f.stages.size(); k++) ops += f.stages[k].iterations * stage_ops[f.name][k];
                    if (stage && staged.count(f.name)) continue;
                    if (!f.output) e.compute_root(f.name);
                    for (size_t k = 0; k < f.stages.size(); k++) {
                        std::vector<std::string> blocks = gpu_nest(e, f, (int)k, tx, ty, sum);
                        if (k == 0 && !blocks.empty()) block_loop[f.name] = blocks[0];
                        kernels++;
                    }
                }
                if (stage)
                    for (auto &[name, at] : staged) {
                        const FuncInfo &f = info.func(name);
                        const ConstRegion &fp = at.second;
                        const std::string &c = at.first;
                        if (!block_loop.count(c)) {
                            // (Not expected: staged_producers asked for a reader of 2-D blocks.)
                            e.compute_root(name);
                            gpu_nest(e, f, 0, tx, ty, sum);
                            kernels++;
                            continue;
                        }
                        e.compute_at(name, c, block_loop.at(c));
                        Directive d = e.base(Directive::StoreIn, name, 0);
                        d.memory = MemoryType::GPUShared;
                        e.calls.push_back(d);
                        const auto &args = f.f->args;
                        if (args.size() > 2) {
                            // Its outer dimensions looped inside each thread.
                            std::vector<std::string> order(args.begin() + 2, args.end());
                            order.push_back(args[0]);
                            order.push_back(args[1]);
                            e.reorder(name, 0, order, {});
                        }
                        e.loop(name, 0, args[0], ForType::GPUThread);
                        e.loop(name, 0, args[1], ForType::GPUThread);
                        ops += (region_points(fp) * block_count(info.func(c), tx, ty) - f.points()) * stage_ops[name][0];
                        sum << "  " << name << ": in shared memory per block of " << c << " (" << fp[0].extent << "x"
                            << fp[1].extent << " threads, " << (int64_t)(region_points(fp) * f.f->type.bytes()) << " bytes)\n";
                    }
                PlanCandidate pc;
                pc.calls = e.calls;
                // About 30 TFLOP/s of scalar work and a launch each: a rough guide only (a
                // producer staged per block saves its launch and its round trip through memory).
                pc.predicted_ms = ops / 3e10 * 1e3 + 0.005 * kernels;
                pc.summary = sum.str();
                out.push_back(pc);
            }
            if ((int)out.size() >= max) break;
        }
        return out;
    }

    /** A block's sides over c's two first dimensions in a grid of tx x ty threads (gpu_nest's
        2-D blocks). */
    static std::pair<int64_t, int64_t> block_sides(const FuncInfo &c, int tx, int ty) {
        return {pow2_at_most(c.region[0].extent, tx), pow2_at_most(c.region[1].extent, ty)};
    }

    /** The points of the grid of tx x ty blocks over c's two first dimensions (its outer ones
        a block dimension each point), as gpu_nest makes it. */
    static double block_count(const FuncInfo &c, int tx, int ty) {
        auto [fx, fy] = block_sides(c, tx, ty);
        double n = (double)((c.region[0].extent + fx - 1) / fx) * (double)((c.region[1].extent + fy - 1) / fy);
        for (size_t d = 2; d < c.region.size(); d++) n *= (double)c.region[d].extent;
        return n;
    }

    /** Producers staged in shared memory per block of their reader, as experts schedule a
        stencil's first pass on a GPU (Halide's `blur_x.compute_at(blur_y, xo).store_in(
        MemoryType::GPUShared).gpu_threads(x, y)`): a Func without updates, not an output, read
        by one materialized Func (through inlined ones) that is a kernel of 2-D blocks of its
        own (a pure stage, its first two dimensions parallel), or is staged itself (then in the
        same kernel: a chain of stencils in one); its own first two dimensions parallel. What one
        block reads of it, a constant region, is computed there by a thread per point of its
        first two dimensions: at most 1024 threads, 24 KiB in all per kernel (a quarter of the
        shared memory, so that several blocks fit), and at most 2x its points computed over all
        blocks (the halos). Barriers between it and its reader are inserted by lowering.
        Producer -> (the kernel it is staged in, the region one block computes). */
    std::map<std::string, std::pair<std::string, ConstRegion>> staged_producers(int tx, int ty) {
        std::map<std::string, std::pair<std::string, ConstRegion>> out;
        auto kernel_2d = [&](const FuncInfo &f) {
            if (f.f->args.size() < 2 || f.has_updates()) return false;
            const StageInfo &s = f.stages[0];
            return s.pure_parallel.size() >= 2 && s.pure_parallel[0] && s.pure_parallel[1] && s.loops_over[0] && s.loops_over[1];
        };
        // Readers before producers: a reader that is staged itself passes on the kernel it is
        // staged in, and what one block computes of it.
        std::map<std::string, double> shared_bytes;  // per kernel, of what is staged in it
        for (int i = (int)info.funcs.size() - 1; i >= 0; i--) {
            const FuncInfo &f = info.funcs[i];
            if (inlined.count(f.name) || f.output || !kernel_2d(f)) continue;
            auto cons = real_consumers(f.name);
            if (cons.size() != 1) continue;
            const FuncInfo &c = info.func(*cons.begin());
            std::string kernel = c.name;
            ConstRegion tile;
            auto in = out.find(c.name);
            if (in != out.end()) {
                kernel = in->second.first;
                tile = in->second.second;
            } else {
                if (!kernel_2d(c)) continue;
                // A block in the middle of the reader's region (away from clamped edges).
                tile = c.region;
                auto [fx, fy] = block_sides(c, tx, ty);
                tile[0] = {c.region[0].min + (c.region[0].extent / 2 / fx) * fx, fx};
                tile[1] = {c.region[1].min + (c.region[1].extent / 2 / fy) * fy, fy};
                for (size_t d = 2; d < tile.size(); d++) tile[d] = {c.region[d].min + c.region[d].extent / 2, 1};
            }
            ConstRegion fp;
            if (!read_through(c.name, tile, f.name, &fp) || fp.size() != f.f->args.size()) continue;
            bool bounded = true;
            for (auto &sp : fp) bounded = bounded && sp.extent > 0;
            if (!bounded) continue;
            const double points = region_points(fp), bytes = points * f.f->type.bytes();
            if (fp[0].extent * fp[1].extent > 1024 || shared_bytes[kernel] + bytes > 24 * 1024 ||
                points * block_count(info.func(kernel), tx, ty) > 2 * std::max(1.0, f.points()))
                continue;
            shared_bytes[kernel] += bytes;
            out[f.name] = {kernel, fp};
        }
        return out;
    }

    PlanHints hints;

    /** After run(): the copies worth costing (see CopyOpportunity), producers first. */
    std::vector<CopyOpportunity> copy_opportunities() const {
        std::vector<CopyOpportunity> out;
        for (auto &g : groups) {
            std::vector<std::string> all = g.members;
            all.push_back(g.root);
            for (auto &n : all) {
                const FuncInfo &f = info.func(n);
                if (f.output || f.has_updates() || !f.f->contents || !f.f->contents->wrappers.empty() || own_group.count(n))
                    continue;
                if (n != g.root) {
                    if (g.configs.empty()) continue;
                    auto w = g.configs[0].where.find(n);
                    if (w == g.configs[0].where.end() || w->second.kind != Placement::Root) continue;
                }
                auto ops = stage_ops.find(n);
                if (ops == stage_ops.end() || ops->second.empty() || ops->second[0] > 20) continue;
                CopyOpportunity c;
                c.func = n;
                bool others = false;
                for (auto &cn : f.consumers) {
                    const FuncInfo &cf = info.func(cn);
                    if (reads_at_stride(cf, n) && !cf.has_updates()) c.consumers.push_back(cn);
                    else others = true;
                }
                if (!c.consumers.empty() && others) out.push_back(c);
            }
        }
        return out;
    }

private:
    const PipelineInfo &info;
    Target target;
    MachineParams m;
    std::map<std::string, double> inline_cost;  // inlined Func -> ops per point
    std::map<std::string, std::vector<double>> stage_ops;  // materialized Func -> ops per iteration of each stage
    std::set<std::string> inlined;
    std::vector<Group> groups;
    std::map<std::string, int> group_of;
    std::map<std::string, int> vdim;  // materialized Func -> the dimension its loops vectorize
    std::set<std::string> own_group;  // Funcs that join no consumer's group (see run)
    /** Per group root emitted at root with its pure stage's outermost loop recorded: that
        loop's name and what shapes the loops outside the members' (see horizontal). */
    std::map<std::string, std::pair<std::string, std::string>> outer_loop;
    std::map<std::pair<std::string, size_t>, std::set<std::string>> operands_memo;  // operands_of()
    std::map<std::string, std::set<std::string>> transposed_memo;  // transposed_reads()
    std::ostringstream log;

    int vd(const FuncInfo &f) const {
        auto it = vdim.find(f.name);
        return it == vdim.end() ? 0 : it->second;
    }

    /** The dimension to vectorize f along: the one whose loads are densest (dense in the
        callee's innermost dimension), dimension 0 unless another is strictly better. Outputs
        (their layout is the caller's) and roots tiled with members keep dimension 0; another
        dimension is made f's innermost in storage too (reorder_storage), so its stores and its
        consumers' reads along it stay dense. */
    int choose_vector_dim(const FuncInfo &f) const {
        size_t nd = f.f->args.size();
        if (f.output || nd < 2 || f.f->args.size() != f.region.size()) return 0;
        auto eff = [&](size_t d) {
            if (f.region[d].extent < lanes(f)) return -1.0;
            double e = 1;
            for (size_t k = 0; k < f.stages.size(); k++) {
                const StageInfo &s = f.stages[k];
                if (k > 0 && !(s.loops_over[d] && s.pure_parallel[d])) return -1.0;
                e = std::min(e, vector_efficiency(s, f.f->args[d], f.name));
            }
            return e;
        };
        double e0 = eff(0);
        int best = 0;
        double be = e0;
        for (size_t d = 1; d < nd; d++) {
            double e = eff(d);
            if (e >= 1.0 && e > be + 0.1) best = (int)d, be = e;
        }
        return best;
    }

    /** f's dimension v made innermost in storage and in its pure stage's loops (the others in
        their order after it). Its updates order their loops in update_nest. */
    void vector_dim_innermost(Emitter &e, const FuncInfo &f, int v) {
        if (v == 0) return;
        std::vector<std::string> order = {f.f->args[v]};
        for (size_t d = 0; d < f.f->args.size(); d++)
            if ((int)d != v) order.push_back(f.f->args[d]);
        e.reorder_storage(f.name, order);
        e.reorder(f.name, 0, order, {});
    }

    int lanes(const FuncInfo &f) const { return std::max(1, m.vector_bytes / std::max(1, f.f->type.bytes())); }
    double bytes_of(const FuncInfo &f) const { return f.f->type.bytes(); }

    double stage_cost_ops(const FuncInfo &f, size_t k) {
        OpCount c;
        c.inlined = &inline_cost;
        c.include(f.stages[k].body);
        return std::max(1.0, c.ops);
    }

    /** The operations per iteration of stage k that its vectorized loop computes (the time
        model's count; stage_cost_ops, the inlining rules'): constants folded; what uses
        neither the vectorized Var nor an RVar taken out of the vector loop (a quarter counted:
        a row's coordinates, a weight per row); in a reduction unrolled inside the vector loop
        (unrolled_reduction), what uses no RVar computed once for all its steps (the copies
        share it: the source coordinate of a resampling tap). */
    double stage_time_ops(const FuncInfo &f, size_t k) {
        auto key = std::make_tuple(f.name, k, vd(f));
        auto it = time_ops_memo.find(key);
        if (it != time_ops_memo.end()) return it->second;
        double total = stage_ops[f.name][k];
        const StageInfo &s = f.stages[k];
        if (f.f->args.empty() || (size_t)vd(f) >= f.f->args.size()) return time_ops_memo[key] = total;
        std::set<std::string> rvars(s.rvars.begin(), s.rvars.end());
        std::set<std::string> vars = rvars;
        vars.insert(f.f->args[vd(f)]);
        LoopInvariantOps hoisted(&inline_cost, vars);  // uses neither
        hoisted.count(s.body);
        double a = hoisted.invariant, b = a, steps = 1;
        if (unrolled_reduction(f, k)) {
            LoopInvariantOps shared(&inline_cost, rvars);  // uses no RVar
            shared.count(s.body);
            b = std::max(a, shared.invariant);
            for (auto &sp : s.rdom) steps *= std::max<double>(1, (double)sp.extent);
        }
        double ops = total - hoisted.constant - b + (b - a) / steps + 0.25 * a / steps;
        return time_ops_memo[key] = std::clamp(ops, std::min(1.0, total), total);
    }
    std::map<std::tuple<std::string, size_t, int>, double> time_ops_memo;

    /** Materialized consumers of f, looking through inlined ones. */
    std::set<std::string> real_consumers(const std::string &f) const {
        std::set<std::string> out;
        for (auto &c : info.func(f).consumers) {
            if (inlined.count(c)) {
                auto more = real_consumers(c);
                out.insert(more.begin(), more.end());
            } else {
                out.insert(c);
            }
        }
        return out;
    }

    /** Is f's value one load of an input or of a Func not inlined (through casts)? */
    bool is_one_load(const FuncInfo &f) const {
        if (f.f->stages.empty()) return false;
        Expr v = f.f->stages[0].value;
        while (v.defined() && v.as<Cast>()) v = v.as<Cast>()->value;
        auto c = v.defined() ? v.as<Call>() : nullptr;
        return c && (c->call_type == Call::Image || (c->call_type == Call::Func && !inlined.count(c->name)));
    }

    static bool same_args(const std::vector<Expr> &a, const std::vector<Expr> &b) {
        if (a.size() != b.size()) return false;
        for (size_t i = 0; i < a.size(); i++)
            if (!equal(a[i], b[i])) return false;
        return true;
    }

    /** e as an argument of a call in f: f's pure Var of a small dimension (2 to 4 points, not
        its vector dimension), which f unrolls where its unrolling pays (select_dims): its extent,
        the copies; else 1. */
    int64_t small_dim_copies(const FuncInfo &f, const Expr &e) const {
        const Variable *var = e.as<Variable>();
        if (!var || f.f->args.empty()) return 1;
        auto d = std::find(f.f->args.begin(), f.f->args.end(), var->name) - f.f->args.begin();
        if (d >= (long)f.f->args.size() || d == vd(f) || (size_t)d >= f.region.size()) return 1;
        int64_t ext = f.region[d].extent;
        return ext >= 2 && ext <= 4 ? ext : 1;
    }

    /** The share of f's points (stage 0) at which each call to `callee` is evaluated, by its
        arguments: a call in a branch of selects that compare f's small dimensions (2 to 4
        points, unrolled so that each copy's selects fold: select_dims) with constants is
        evaluated only at the points of the values that branch leaves (`mux(c, {r, g, b})`
        evaluates r at one channel in three); 1 elsewhere. Calls at the same arguments add up
        (to at most 1). `saved`: the operations per point that the unrolled copies leave out so,
        over all of f's calls (an inlined Func's at its cost, a load 1). A null callee: only
        `saved`. */
    std::vector<std::pair<std::vector<Expr>, double>> select_shares(const FuncInfo &f, const std::string *callee, double *saved) {
        struct Walk : IRVisitor {
            const std::string *callee = nullptr;
            std::map<std::string, std::pair<int64_t, int64_t>> small;  // Var -> (min, extent)
            std::map<std::string, std::set<int64_t>> allowed;          // Var -> values left
            std::vector<std::pair<std::vector<Expr>, double>> out;
            double share() const {
                double s = 1;
                for (auto &[v, vals] : allowed) s *= (double)vals.size() / (double)small.at(v).second;
                return s;
            }
            // The Var and constant of `v == k` (either way round) for a small Var v.
            bool compares(const Expr &c, std::string *v, int64_t *k) const {
                auto *eq = c.as<EQ>();
                if (!eq) return false;
                for (auto [a, b] : {std::make_pair(eq->a, eq->b), std::make_pair(eq->b, eq->a)}) {
                    auto *var = a.as<Variable>();
                    if (var && small.count(var->name) && is_const_int(b, k)) return *v = var->name, true;
                }
                return false;
            }
            void visit(const Select *op) override {
                include(op->condition);
                std::string v;
                int64_t k = 0;
                if (!compares(op->condition, &v, &k)) return IRVisitor::visit(op);
                std::set<int64_t> before = allowed[v];
                allowed[v] = before.count(k) ? std::set<int64_t>{k} : std::set<int64_t>{};
                include(op->true_value);
                allowed[v] = before;
                allowed[v].erase(k);
                include(op->false_value);
                allowed[v] = before;
            }
            const std::map<std::string, double> *costs;
            double saved = 0;  // operations per point the folded selects leave out
            void visit(const Call *op) override {
                if (op->call_type != Call::Intrinsic) {
                    auto c = costs->find(op->name);
                    saved += (1 - share()) * (c == costs->end() ? 1.0 : c->second);
                }
                if (op->call_type != Call::Intrinsic && callee && op->name == *callee) {
                    auto it = std::find_if(out.begin(), out.end(), [&](auto &e) { return same_args(e.first, op->args); });
                    if (it == out.end()) out.push_back({op->args, share()});
                    else it->second = std::min(1.0, it->second + share());
                }
                IRVisitor::visit(op);
            }
        } w;
        w.callee = callee;
        w.costs = &inline_cost;
        if (f.stages.empty()) return {};
        for (size_t d : select_dims(f, 0)) {
            if ((int)d == vd(f) || d >= f.region.size() || d >= f.f->args.size()) continue;
            int64_t mn = f.region[d].min, ext = f.region[d].extent;
            if (ext < 2 || ext > 4) continue;
            w.small[f.f->args[d]] = {mn, ext};
            for (int64_t i = 0; i < ext; i++) w.allowed[f.f->args[d]].insert(mn + i);
        }
        w.include(f.stages[0].body);
        if (saved) *saved = w.saved;
        return w.out;
    }

    std::vector<std::pair<std::vector<Expr>, double>> evaluated_shares(const FuncInfo &f, const std::string &callee) {
        return select_shares(f, &callee, nullptr);
    }
    /** The operations per point that unrolling f's small dimensions leaves out of its selects'
        branches (select_shares). */
    double select_fold_savings(const FuncInfo &f) {
        double saved = 0;
        select_shares(f, nullptr, &saved);
        return saved;
    }

    /** A Func f reads the same callee at `args` and, among `calls` (the argument lists of its
        calls to that callee), at its own small dimension where `args` has a constant
        (`g(x, y, c) / g(x, y, 3)`): f unrolls that dimension just outside its vector loop, and
        the copies share the constant read. The number of copies sharing it (1: not shared). */
    int64_t shared_by_unrolled_copies(const FuncInfo &f, const std::vector<Expr> &args,
                                      const std::vector<const std::vector<Expr> *> &calls) const {
        int64_t copies = 1;
        for (size_t j = 0; j < args.size(); j++) {
            if (!is_const(args[j])) continue;
            for (auto *other : calls)
                if (j < other->size()) copies = std::max(copies, small_dim_copies(f, (*other)[j]));
        }
        return copies;
    }

    /** Some stage of `reader` reads `callee` at a constant stride of 2 to 4 along the reader's
        first dimension (a downsampling, a deinterleave). */
    static bool reads_at_stride(const FuncInfo &reader, const std::string &callee) {
        if (reader.f->args.empty()) return false;
        for (auto &s : reader.stages)
            for (auto &[name, args] : s.calls) {
                if (name != callee || args.empty()) continue;
                auto k = stride_in(args[0], reader.f->args[0]);
                if (k && std::abs(*k) >= 2 && std::abs(*k) <= 4) return true;
            }
        return false;
    }

    /** Where a reader of f reads it at a constant stride of 2 to 4 along that reader's first
        dimension: the number of distinct dense loads (stride 1 along f's first dimension) f's
        pure definition makes, which inlined would each become strided; 0 otherwise. */
    int dense_loads_read_strided(const FuncInfo &f) const {
        if (f.stages.empty() || f.f->args.empty() ||
            std::none_of(f.consumers.begin(), f.consumers.end(), [&](const std::string &cn) { return reads_at_stride(info.func(cn), f.name); }))
            return 0;
        std::vector<const std::pair<std::string, std::vector<Expr>> *> dense;
        for (auto &call : f.stages[0].calls) {
            if (call.second.empty() || call.first == f.name) continue;
            auto k = stride_in(call.second[0], f.f->args[0]);
            if (!k || std::abs(*k) != 1) continue;
            if (std::none_of(dense.begin(), dense.end(), [&](auto *d) { return d->first == call.first && same_args(d->second, call.second); }))
                dense.push_back(&call);
        }
        return (int)dense.size();
    }

    void decide_inlining() {
        for (auto &f : info.funcs) {
            std::vector<double> ops;
            for (size_t k = 0; k < f.stages.size(); k++) ops.push_back(stage_cost_ops(f, k));
            bool can = !f.output && !f.has_updates() && f.f->contents &&
                       (f.f->contents->wrappers.empty() || hints.inline_funcs.count(f.name));
            if (can && hints.inline_funcs.count(f.name)) {
                inlined.insert(f.name);
                inline_cost[f.name] = ops[0];
                log << "inline " << f.name << " (a copy of it is made for its downsampling readers)\n";
                continue;
            }
            if (hints.copies.count(f.name) && !f.output && !f.has_updates()) {
                log << "keep " << f.name << " (a copy, computed in the loops of what reads it, its loads dense)\n";
                stage_ops[f.name] = ops;
                continue;
            }
            // A transpose of a scan (or of a reduction over many points) is kept, as the root of
            // a group of its own: computed in tiles, each gather's cache lines are read again
            // from L1, and the scan may be computed per strip of it. Inlined, its reader would
            // gather from the whole scan, computed at root.
            std::string scan;
            if (can)
                for (auto &g : transposed_reads(f))
                    if (info.is_func(g) && info.func(g).has_updates() && large_domain(info.func(g))) scan = g;
            if (!scan.empty()) {
                own_group.insert(f.name);
                log << "keep " << f.name << " (reads the scan " << scan << " transposed: tiled as a group's root)\n";
                can = false;
            }
            if (can) {
                // Reads of f per point of f, over all its consumers' iterations.
                double reads = 0;
                for (auto &cn : f.consumers) {
                    const FuncInfo &c = info.func(cn);
                    for (size_t k = 0; k < c.stages.size(); k++) {
                        const StageInfo &s = c.stages[k];
                        // (Calls at the same point, v + k v (1 - v), are one read: the value is
                        // computed once either way.)
                        std::vector<const std::vector<Expr> *> at;
                        for (auto &call : s.calls)
                            if (call.first == f.name &&
                                std::none_of(at.begin(), at.end(), [&](const std::vector<Expr> *a) { return same_args(*a, call.second); }))
                                at.push_back(&call.second);
                        std::vector<std::pair<std::vector<Expr>, double>> shares;
                        if (k == 0) shares = evaluated_shares(c, f.name);
                        for (auto *a : at) {
                            double share = 1;
                            for (auto &[args, sh] : shares)
                                if (same_args(args, *a)) share = sh;
                            reads += s.iterations * share / (k == 0 ? (double)shared_by_unrolled_copies(c, *a, at) : 1.0);
                        }
                    }
                }
                double ratio = reads / std::max(1.0, f.points());
                bool no_recompute = ratio <= 1.01;
                // Cheap: a few operations, or one load at computed coordinates (a boundary
                // condition: its index arithmetic mostly leaves the inner loops).
                bool cheap = ops[0] <= 3 || (is_one_load(f) && ops[0] <= 6);
                // Read at most 1.5 times per point, for less extra work than storing it and
                // loading it back (a pyramid's one-dimensional passes, a normalization).
                bool little_extra = ratio <= 1.51 && (ratio - 1) * ops[0] <= 8;
                // Read at a constant stride of 2 to 4 along a reader's first dimension (a
                // deinterleave: raw(2x, 2y), raw(2x + 1, 2y)), each of f's own dense loads would
                // become a strided one inlined (|k| loads and a shuffle): with three or more, f is
                // stored, its loads dense, and read back with one strided load per read. (Where
                // the readers skip points, a decimation's blur(2x, 2y), stored it would be computed
                // where nothing reads it: inlined.)
                bool keep_dense = !cheap && ratio >= 0.99 && dense_loads_read_strided(f) >= 3;
                if (keep_dense && (no_recompute || little_extra)) {
                    log << "keep " << f.name << " (read at a stride, its own loads dense)\n";
                    stage_ops[f.name] = ops;
                    continue;
                }
                if (no_recompute || cheap || little_extra) {
                    inlined.insert(f.name);
                    inline_cost[f.name] = ops[0];
                    log << "inline " << f.name << " ("
                        << (no_recompute ? std::string("each point read once")
                                         : cheap ? "cheap: " + std::to_string(ops[0]) + " ops"
                                                 : "read " + std::to_string(ratio) + "x per point, " + std::to_string(ops[0]) + " ops")
                        << ")\n";
                    continue;
                }
                log << "keep " << f.name << " (read " << ratio << "x per point, " << ops[0] << " ops)\n";
            }
            stage_ops[f.name] = ops;
        }
        // (Asked while the Funcs were being decided: found again with all of them known.)
        select_dims_memo.clear();
        unroll_savings_memo.clear();
    }

    void form_groups() {
        // Consumers first: a Func joins the group of its only (materialized) consumer.
        for (int i = (int)info.funcs.size() - 1; i >= 0; i--) {
            const FuncInfo &f = info.funcs[i];
            if (inlined.count(f.name)) continue;
            // Every consumer in one group: join it (Funcs read by several groups, at root).
            auto cons = real_consumers(f.name);
            int joined = -1;
            for (auto &cn : cons) {
                int g = group_of.count(cn) ? group_of[cn] : -2;
                joined = joined == -1 ? g : joined == g ? g : -2;
            }
            if (!f.output && joined >= 0 && !own_group.count(f.name)) {
                int g = joined;
                groups[g].members.insert(groups[g].members.begin(), f.name);
                group_of[f.name] = g;
                continue;
            }
            Group g;
            g.root = f.name;
            group_of[f.name] = (int)groups.size();
            groups.push_back(g);
        }
        // Producers first in the emitted order: reverse (the last group made is the first produced).
        std::reverse(groups.begin(), groups.end());
        for (size_t i = 0; i < groups.size(); i++) {
            group_of[groups[i].root] = (int)i;
            for (auto &mb : groups[i].members) group_of[mb] = (int)i;
        }
    }

    /** Is update k of f a small reduction (every RVar of a constant extent, at most 8 steps in
        all per point) over a vectorized pure dimension? Its reduction loops then run innermost,
        unrolled, inside the vector loop: each vector of points accumulates in a register (as
        Halide's experts write `unroll(r)` for a few taps) instead of a load and a store of
        the accumulators per step. */
    bool unrolled_reduction(const FuncInfo &f, size_t k) const {
        // (Asked for every costing of every configuration: decided once per stage and
        // vectorized dimension.)
        auto key = std::make_tuple(f.name, k, vd(f));
        auto it = unrolled_memo.find(key);
        if (it != unrolled_memo.end()) return it->second;
        return unrolled_memo[key] = decide_unrolled_reduction(f, k);
    }
    mutable std::map<std::tuple<std::string, size_t, int>, bool> unrolled_memo;
    bool decide_unrolled_reduction(const FuncInfo &f, size_t k) const {
        if (k == 0 || k >= f.stages.size() || k >= f.f->stages.size()) return false;
        const StageInfo &s = f.stages[k];
        int v = vd(f);
        if (s.rvars.empty() || f.f->args.empty() || (size_t)v >= s.loops_over.size() || !s.loops_over[v] ||
            !s.pure_parallel[v] || f.region[v].extent < lanes(f))
            return false;
        int64_t steps = 1;
        for (auto &rv : f.f->stages[k].rvars) {
            int64_t e = 0;
            if (!rv.extent.defined() || !is_const_int(simplify(rv.extent), &e) || e < 1) return false;
            steps *= e;
            // (16 steps of one accumulator are a chain of dependent adds: longer reductions keep
            // their loop outside, with several vectors of accumulators.)
            if (steps > 8) return false;
        }
        return true;
    }

    /** Time of one Func computed over `points_scale` × its region, alone at root. */
    double compute_ns(const FuncInfo &f, double scale, bool vectorized) {
        double t = 0;
        int v = vd(f);
        for (size_t k = 0; k < f.stages.size(); k++) {
            const StageInfo &s = f.stages[k];
            double speed = 1;
            bool vec = vectorized && !f.f->args.empty() && f.region[v].extent >= lanes(f) &&
                       (k == 0 || (s.pure_parallel[v] && s.loops_over[v]));
            if (vec) {
                speed = lanes(f) * vector_efficiency(s, f.f->args[v], f.name);
                // An update whose accumulators stay in memory: a load and a store per step.
                // (A register-blocked one is costed by blocked_ns.)
                if (k > 0 && !s.rvars.empty() && !unrolled_reduction(f, k)) speed *= 0.5;
            }
            t += s.iterations * scale * (vec ? stage_time_ops(f, k) : stage_ops[f.name][k]) / (m.ops_per_ns * std::max(1.0, speed));
        }
        return t;
    }

    /** A member computed per tile over its footprint. A scan's (an update over many points)
        is not vectorized where the footprint spans several points but fewer than a vector
        along its vectorized dimension (a strip of columns narrower than a vector: emit_group
        leaves that loop scalar, and every step of the scan waits for the one before). (One
        point there, a row's own reduction computed per row, keeps the vectorized cost: those
        ran faster than the alternatives, vectorized across rows with gathers.) */
    double member_ns(const FuncInfo &f, const Placement &p) {
        int v = vd(f);
        bool vec = !(f.has_updates() && large_domain(f)) || (int)p.footprint.size() <= v ||
                   p.footprint[v].extent >= lanes(f) || p.footprint[v].extent <= 1;
        double t = compute_ns(f, p.redundancy, vec);
        // Its small dimensions unrolled inside the footprint (unroll_select_dims): what the
        // copies share is computed once.
        auto &ops = stage_ops[f.name];
        if (vec && !ops.empty() && ops[0] > 0 && !f.has_updates() && (int)p.footprint.size() > v &&
            p.footprint[v].extent >= lanes(f) && !select_vars(f, 0, p.footprint).empty())
            t *= std::max(0.25, 1 - unroll_savings(f) / ops[0]);
        return t;
    }

    /** Operations per point of f's definition that its unrolled small dimensions (select_dims)
        share: a call at a constant along such a dimension (`in(x, y, 3)` beside `in(x, y, c)`)
        is computed once for the copies rather than once per copy; through the Funcs inlined
        into f. */
    double unroll_savings(const FuncInfo &f) {
        auto it = unroll_savings_memo.find(f.name);
        if (it != unroll_savings_memo.end()) return it->second;
        unroll_savings_memo[f.name] = 0;  // (a guard, as in select_dims)
        struct Find : IRVisitor {
            std::vector<const Call *> calls;
            void visit(const Call *op) override {
                if (op->call_type != Call::Intrinsic) calls.push_back(op);
                IRVisitor::visit(op);
            }
        } find;
        if (!f.stages.empty()) find.include(f.stages[0].body);
        std::map<std::string, std::vector<const std::vector<Expr> *>> args_of;  // per callee
        for (const Call *op : find.calls) args_of[op->name].push_back(&op->args);
        double saved = 0;
        std::set<std::string> seen;  // (one saving per distinct call)
        for (const Call *op : find.calls) {
            bool inl = op->call_type == Call::Func && inlined.count(op->name) && info.is_func(op->name);
            double cost = inl && inline_cost.count(op->name) ? inline_cost[op->name] : 1;
            if (inl) {
                // Its own sharing, where this call passes f's Vars along its unrolled dimensions.
                bool passes = false;
                for (size_t j : select_dims(info.func(op->name)))
                    if (j < op->args.size() && op->args[j].as<Variable>()) passes = true;
                if (passes && seen.insert(op->name + "/inner").second) saved += unroll_savings(info.func(op->name));
            }
            int64_t copies = shared_by_unrolled_copies(f, op->args, args_of[op->name]);
            std::ostringstream key;
            key << op->name;
            for (auto &a : op->args) key << "," << a;
            if (copies > 1 && seen.insert(key.str()).second) saved += cost * (double)(copies - 1) / (double)copies;
        }
        // And the branches of selects on those dimensions that each copy leaves out.
        return unroll_savings_memo[f.name] = saved + select_fold_savings(f);
    }
    std::map<std::string, double> unroll_savings_memo;

    double bandwidth_for(double bytes) const {
        if (bytes <= m.l1_bytes) return 2 * m.cache_bytes_per_ns;
        if (bytes <= m.l2_bytes) return m.cache_bytes_per_ns;
        if (bytes <= m.l3_bytes) return m.l3_bytes_per_ns;
        return m.dram_bytes_per_ns;
    }

    /** Tasks of a parallel loop over `tasks` iterations: the effective number of cores. */
    double cores_for(double tasks) const {
        if (m.threads <= 1 || tasks <= 1) return 1;
        double rounds = std::ceil(tasks / m.threads);
        return tasks / rounds;
    }

    /** f computed alone at root, in parallel over its outer dimensions. */
    double root_ns(const FuncInfo &f) {
        double work = compute_ns(f, 1, true);
        double bytes = f.points() * bytes_of(f);
        double readers = std::max<size_t>(1, real_consumers(f.name).size());
        double mem = bytes * (1 + readers) / bandwidth_for(bytes);
        double tasks = 1;
        for (size_t d = 1; d < f.region.size(); d++) tasks *= f.region[d].extent;
        double cores = (work + mem) > 20000 ? cores_for(tasks) : 1;
        return (work + mem) / cores + (cores > 1 ? std::min(tasks, 64.0 * m.threads) * m.task_overhead_ns / m.threads : 0);
    }

    /** May member f be computed per vector of g's root (Placement::Vector)? Its updates are
        all reductions of a few steps, unrolled inside the vector loop (unrolled_reduction); the
        root alone reads it, pointwise, and is vectorized along dimension 0 at f's width; the
        configuration tiles the root (strips or 2-D tiles: their vector loop is there). */
    bool per_vector(const Group &g, const GroupConfig &c, const FuncInfo &f) {
        if (c.kind == GroupConfig::AllRoot || c.kind == GroupConfig::Block || !f.has_updates()) return false;
        // (Asked for every configuration of the group: the rest does not depend on it.)
        auto key = std::make_pair(g.root, f.name);
        auto it = per_vector_memo.find(key);
        if (it != per_vector_memo.end()) return it->second;
        return per_vector_memo[key] = reads_pointwise_per_vector(g, f);
    }
    std::map<std::pair<std::string, std::string>, bool> per_vector_memo;
    bool reads_pointwise_per_vector(const Group &g, const FuncInfo &f) {
        const FuncInfo &root = info.func(g.root);
        if (root.has_updates() || root.f->args.empty() || f.f->args.size() != root.f->args.size() ||
            lanes(f) != lanes(root) || root.region[0].extent < lanes(root))
            return false;
        for (size_t k = 1; k < f.stages.size(); k++)
            if (!unrolled_reduction(f, (int)k)) return false;
        auto cons = real_consumers(f.name);
        if (cons.size() != 1 || *cons.begin() != g.root) return false;
        // Pointwise, through the inlined Funcs between them: a point of the root reads one
        // point of f, and a vector of the root (along its dimension 0) one vector of f along
        // the dimension f is vectorized in (its Vars may be in another order).
        ConstRegion point = root.region, vec, part;
        for (auto &sp : point) sp = {sp.min + sp.extent / 2, 1};
        if (!read_through(g.root, point, f.name, &part) || part.size() != f.f->args.size()) return false;
        for (auto &sp : part)
            if (sp.extent != 1) return false;
        vec = point;
        vec[0] = {root.region[0].min, lanes(root)};
        if (!read_through(g.root, vec, f.name, &part) || part.size() != f.f->args.size()) return false;
        int v = vd(f);
        for (size_t d = 0; d < part.size(); d++)
            if (part[d].extent != ((int)d == v ? lanes(f) : 1)) return false;
        return true;
    }

    /** Is member `name` computed per row of the root's strips: a sliding window, or per vector
        of a member that is one? */
    static bool slides(const GroupConfig &c, const std::string &name) {
        auto it = c.where.find(name);
        if (it == c.where.end()) return false;
        const Placement &p = it->second;
        if (p.kind == Placement::Vector && !p.in_member.empty()) return slides(c, p.in_member);
        return p.kind == Placement::Slide;
    }

    /** May member f be computed per vector of its only reader, a member computed per tile
        (Placement::Vector, in_member)? That reader is pure and vectorized along its dimension v
        (the loop just outside its vector loop holds the vector and its unrolled small
        dimensions, select_vars), its footprint at least a vector wide; a vector of it reads
        at least one vector of f along f's vectorized dimension, and f's points read by all its
        vectors come to at most 5% more than what it reads of f (reads_per_vector_once):
        nothing is computed again, only the tile's store and load are saved. Its updates, if
        any, are reductions of a few steps. The reader's name in `*reader`. */
    bool per_member_vector(const Group &g, const GroupConfig &c, const FuncInfo &f, std::string *reader) {
        if (c.kind == GroupConfig::AllRoot || c.kind == GroupConfig::Block || f.f->args.empty()) return false;
        for (size_t k = 1; k < f.stages.size(); k++)
            if (!unrolled_reduction(f, k)) return false;
        auto cons = real_consumers(f.name);
        if (cons.size() != 1) return false;
        const std::string cn = *cons.begin();
        auto it = c.where.find(cn);
        if (cn == g.root || it == c.where.end() || (it->second.kind != Placement::At && it->second.kind != Placement::Slide))
            return false;
        const FuncInfo &C = info.func(cn);
        const ConstRegion &Fc = it->second.footprint;
        int v = vd(C), W = lanes(C);
        if (C.has_updates() || (int)Fc.size() <= v || Fc[v].extent < W || W % lanes(f) != 0) return false;
        // (Decided once for the pair, over the reader's whole region: the rest does not
        // depend on the configuration.)
        auto key = std::make_pair(cn, f.name);
        auto memo = per_member_vector_memo.find(key);
        bool pointwise = memo != per_member_vector_memo.end() ? memo->second
                                                               : (per_member_vector_memo[key] = reads_per_vector_once(C, f));
        if (pointwise) *reader = cn;
        return pointwise;
    }
    std::map<std::pair<std::string, std::string>, bool> per_member_vector_memo;
    /** Does a vector of C (along its vectorized dimension, with the small dimensions it
        unrolls inside that loop) read at least a vector of f, and all C's vectors together
        read what C reads of f at most 5% over? */
    bool reads_per_vector_once(const FuncInfo &C, const FuncInfo &f) {
        const ConstRegion &R = C.region;
        int v = vd(C), W = lanes(C);
        if ((int)R.size() <= v || R.size() != C.f->args.size() || R[v].extent < W) return false;
        std::vector<std::string> small = select_vars(C, 0, R);
        ConstRegion vec = R, part, all;
        for (size_t d = 0; d < R.size(); d++) {
            if ((int)d == v) vec[d] = {R[d].min, W};
            else if (std::find(small.begin(), small.end(), C.f->args[d]) == small.end())
                vec[d] = {R[d].min + R[d].extent / 2, 1};
        }
        if (!read_through(C.name, vec, f.name, &part) || !read_through(C.name, R, f.name, &all) ||
            part.size() != f.f->args.size() || all.size() != part.size())
            return false;
        if (part[vd(f)].extent < lanes(f)) return false;
        double vectors = region_points(R) / region_points(vec);
        return region_points(part) * vectors <= 1.05 * region_points(all);
    }

    /** Places the members of g for the root's per-iteration region `tile` (at the compute
        loop), `iterations` of it; Slide places pure members per row of a strip. `group_ns`: the
        group's work computed once (what small members' recomputation is weighed against). */
    void place(const Group &g, GroupConfig &c, const ConstRegion &tile, double iterations, double group_ns) {
        std::map<std::string, ConstRegion> fp;
        fp[g.root] = c.tile = tile;
        c.iterations = iterations;
        for (int i = (int)g.members.size() - 1; i >= 0; i--) {
            const FuncInfo &f = info.func(g.members[i]);
            Placement p;
            ConstRegion r;
            bool ok = true;
            bool first = true;
            for (auto &cn : real_consumers(f.name)) {
                if (!fp.count(cn)) {
                    ok = false;  // a consumer is not computed per tile
                    p.why = "its consumer \"" + cn + "\" is not computed per tile";
                    break;
                }
                // What the consumer reads of f, through the inlined Funcs between them.
                ConstRegion part;
                if (!read_through(cn, fp.at(cn), f.name, &part)) {
                    ok = false;
                    p.why = "what \"" + cn + "\" reads of it per tile is not bounded";
                    break;
                }
                r = first ? part : merge(r, part);
                first = false;
            }
            ok = ok && !first;
            if (ok) {
                p.footprint = r;
                // Work per iteration: each stage loops over the footprint along the Vars it
                // loops over, and over its whole reduction domain (an update writing through
                // its RVars, like a scan, computes its whole extent wherever it is computed).
                p.redundancy = 0;
                for (auto &s : f.stages) {
                    double work = 1;
                    for (size_t d = 0; d < r.size() && d < s.loops_over.size(); d++)
                        if (s.loops_over[d]) work *= (double)r[d].extent;
                    for (auto &sp : s.rdom) work *= (double)sp.extent;
                    p.redundancy = std::max(p.redundancy, iterations * work / std::max(1.0, s.iterations));
                }
                double tile_bytes = region_points(r) * bytes_of(f);
                // What stays in the caches: a sliding window keeps only the few rows an
                // iteration needs (its storage is folded), not the strip's whole footprint.
                double window_bytes =
                    r.size() > 1 ? tile_bytes / (double)std::max<int64_t>(1, r[1].extent) * std::min<double>((double)r[1].extent, 4) : tile_bytes;
                if (c.kind == GroupConfig::Block && f.name == c.blocked) p.kind = Placement::At;
                else if (f.has_updates() && large_domain(f)) p.kind = p.redundancy <= 1.01 ? Placement::At : Placement::Root;
                else if (p.redundancy > 2.0 &&
                         !(p.redundancy <= 8.0 && (c.recompute || recomputing_pays(f, p.redundancy, tile_bytes, iterations)))) {
                    // Recomputed too often: at root, unless that is negligible; then per strip or
                    // tile, never per row (a row's share of a coarse level costs a realization for
                    // next to no work).
                    p.kind = negligible(f, p.redundancy, tile_bytes, iterations, group_ns) ? Placement::At : Placement::Root;
                    p.capped = p.kind == Placement::Root && p.redundancy <= 8.0;
                }
                // (A Func with updates is computed per strip, not as a sliding window: lowering
                // slides pure definitions only.)
                else p.kind = c.kind == GroupConfig::Slide && !f.has_updates() ? Placement::Slide : Placement::At;
                // In a tall strip (one of many rows, see cost_group), a member that advances
                // less than a row per two of the root's (a coarser level, a table read at
                // constants) slides by next to nothing per row: computed once per strip where
                // that fits in L2.
                if (p.kind == Placement::Slide && c.f1 > kTallStrip && (r.size() < 2 || 2 * r[1].extent < c.f1) &&
                    tile_bytes <= m.l2_bytes)
                    p.kind = Placement::At;
                if (p.kind == Placement::Root)
                    p.why = "per tile it would compute " + std::to_string(p.redundancy) + "x its points";
                // A sliding window is computed per row: every reader must be inside that loop
                // too (the root, or another sliding member).
                if (p.kind == Placement::Slide)
                    for (auto &cn : real_consumers(f.name))
                        if (cn != g.root && c.where.count(cn) && !slides(c, cn)) p.kind = Placement::At;
                if (p.kind != Placement::Root && (p.kind == Placement::Slide ? window_bytes : tile_bytes) > m.l2_bytes) {
                    p.kind = Placement::Root;
                    p.why = "its tile does not fit in L2";
                }
                if ((p.kind == Placement::At || p.kind == Placement::Slide) && per_vector(g, c, f)) p.kind = Placement::Vector;
                std::string in;
                if ((p.kind == Placement::At || p.kind == Placement::Slide) && per_member_vector(g, c, f, &in)) {
                    p.kind = Placement::Vector;
                    p.in_member = in;
                }
            }
            if (!ok) p.kind = Placement::Root;
            if (p.kind != Placement::Root) fp[f.name] = p.footprint;
            c.where[f.name] = p;
        }
    }

    /** One realization of a member's tile of `bytes`: a small one of constant size is on the
        stack (loop set-up only), a larger one comes from the allocator. */
    double realize_ns(double bytes) const {
        return bytes <= (double)kSmallStackAllocationBytes ? m.stack_realize_overhead_ns : m.realize_overhead_ns;
    }

    /** A member's tiles written and read back, `iterations` of `tile_bytes`, at the bandwidth
        of the level where every thread's `live` bytes fit. */
    double tile_traffic_ns(double iterations, double tile_bytes, double live) const {
        // L1 and L2 are each core's own; only L3 is shared by the threads.
        double bw = live <= m.l2_bytes ? bandwidth_for(live) : bandwidth_for(std::max(live * m.threads, m.l2_bytes + 1));
        return iterations * tile_bytes * 2 / bw;
    }

    /** A member that a tile computes more than twice over (at most 8 times: Adams2019's cap):
        is that cheaper than computing it once at root, writing it out and reading it back? */
    bool recomputing_pays(const FuncInfo &f, double redundancy, double tile_bytes, double iterations) {
        double at = compute_ns(f, redundancy, true) + tile_traffic_ns(iterations, tile_bytes, tile_bytes);
        return at / cores_for(iterations) < root_ns(f);
    }

    /** A small member (a coarse level of a pyramid) whose recomputation, however many times
        over its own points, adds under 2% to its group's work. */
    bool negligible(const FuncInfo &f, double redundancy, double tile_bytes, double iterations, double group_ns) {
        double extra = compute_ns(f, redundancy - 1, true) + tile_traffic_ns(iterations, tile_bytes, tile_bytes) +
                       iterations * realize_ns(tile_bytes);
        return extra < 0.02 * group_ns;
    }

    /** Does an update of f reduce over more than a few points (a scan, a histogram, a
        contraction)? Those are computed exactly once; a small inline reduction (a sum over a
        few taps) may be recomputed at tile edges like any cheap producer. */
    static bool large_domain(const FuncInfo &f) {
        for (auto &s : f.stages) {
            double n = 1;
            for (auto &sp : s.rdom) n *= (double)sp.extent;
            if (n > 16) return true;
        }
        return false;
    }

    /** What stage 0 of f reads transposed: the Funcs and inputs it calls at args whose first
        does not move with f's first Var while another does (a loop vectorized along that Var
        gathers a cache line per lane). */
    const std::set<std::string> &transposed_reads(const FuncInfo &f) {
        auto it = transposed_memo.find(f.name);
        if (it != transposed_memo.end()) return it->second;
        std::set<std::string> &out = transposed_memo[f.name];
        if (f.f->args.empty() || f.stages.empty()) return out;
        const std::string &x = f.f->args[0];
        for (auto &[callee, args] : f.stages[0].calls) {
            if (callee == f.name || args.size() < 2 || expr_uses_var(args[0], x)) continue;
            for (size_t d = 1; d < args.size(); d++)
                if (expr_uses_var(args[d], x)) {
                    out.insert(callee);
                    break;
                }
        }
        return out;
    }

    /** The region of `callee` read by Func `consumer` (a materialized Func) over `r`,
        following inlined Funcs between them. */
    bool read_through(const std::string &consumer, const ConstRegion &r, const std::string &callee, ConstRegion *out) {
        // The regions of the inlined Funcs in between, each visited once, consumers before
        // producers (realization order backwards), so that a chain of Funcs each calling the
        // one before several times costs its length, not a power of it.
        std::map<std::string, ConstRegion> reached;
        reached[consumer] = r;
        ConstRegion acc;
        bool any = false;
        for (int i = info.index.at(consumer); i >= 0; i--) {
            const FuncInfo &c = info.funcs[i];
            auto it = reached.find(c.name);
            if (it == reached.end()) continue;
            const ConstRegion cr = it->second;
            for (size_t k = 0; k < c.stages.size(); k++) {
                std::set<std::string> seen;  // (region_read covers every call of a callee)
                for (auto &call : c.stages[k].calls) {
                    const std::string &n = call.first;
                    bool through = n != callee && n != c.name && inlined.count(n) && info.is_func(n);
                    if ((n != callee && !through) || !seen.insert(n).second) continue;
                    ConstRegion got;
                    if (!region_read(c, (int)k, cr, n, &got)) continue;
                    if (!through) {
                        acc = any ? merge(acc, got) : got;
                        any = true;
                    } else {
                        auto jt = reached.find(n);
                        reached[n] = jt == reached.end() ? got : merge(jt->second, got);
                    }
                }
            }
        }
        if (!any) return false;
        *out = acc;
        return true;
    }
    static ConstRegion merge(const ConstRegion &a, const ConstRegion &b) {
        ConstRegion r = a;
        for (size_t d = 0; d < r.size() && d < b.size(); d++) {
            int64_t lo = std::min(a[d].min, b[d].min), hi = std::max(a[d].min + a[d].extent, b[d].min + b[d].extent);
            r[d] = {lo, hi - lo};
        }
        return r;
    }

    /** The reduction (if any) that the root reads pointwise and that can be register-blocked. */
    std::string blockable(const Group &g) {
        const FuncInfo &root = info.func(g.root);
        if (root.f->args.size() < 2 || root.has_updates()) return "";
        for (auto &mb : g.members) {
            const FuncInfo &f = info.func(mb);
            if (!f.has_updates() || f.f->args.size() != root.f->args.size() || vd(f) != 0) continue;
            auto cons = real_consumers(mb);
            if (cons.size() != 1 || *cons.begin() != g.root) continue;
            bool pointwise = true, called = false;
            for (auto &call : root.stages[0].calls)
                if (call.first == mb) {
                    called = true;
                    pointwise = pointwise && pointwise_args(call.second, root.f->args);
                }
            if (!called || !pointwise) continue;
            bool ok = true;
            for (size_t k = 1; k < f.stages.size(); k++) {
                const StageInfo &s = f.stages[k];
                ok = ok && !s.rvars.empty() && s.pure_parallel[0] && s.pure_parallel[1] && s.loops_over[0] && s.loops_over[1];
            }
            if (ok) return mb;
        }
        return "";
    }

    /** A root whose own update stages are a contraction (each reduces over RVars at every
        point of its two first dimensions, which may run in parallel, vectorized along the first):
        register-blocked in place, its block of accumulators held across the reduction loop. */
    bool self_blockable(const FuncInfo &f) {
        if (f.f->args.size() < 2 || !f.has_updates() || vd(f) != 0) return false;
        for (size_t k = 1; k < f.stages.size(); k++) {
            const StageInfo &s = f.stages[k];
            if (s.rvars.empty()) return false;
            for (size_t d = 0; d < f.f->args.size(); d++)
                if (!s.pure_parallel[d] || !s.loops_over[d]) return false;  // (a reduction at every point)
        }
        return is_contraction(f);
    }

    /** Does each update of f read an operand that does not depend on its first Var (a value
        reused across a block's columns) and one that does not depend on its second (reused
        across its rows), as a matmul or a convolution does? Only then do register blocks save
        loads: a reduction such as a minimum over a window reuses nothing across a block. */
    static bool is_contraction(const FuncInfo &f) {
        if (f.f->args.size() < 2 || !f.has_updates()) return false;
        for (size_t k = 1; k < f.stages.size(); k++) {
            bool across_x = false, across_y = false;
            for (auto &[callee, args] : f.stages[k].calls) {
                if (callee == f.name) continue;
                bool ux = false, uy = false;
                for (auto &a : args) {
                    ux = ux || expr_uses_var(a, f.f->args[0]);
                    uy = uy || expr_uses_var(a, f.f->args[1]);
                }
                across_x = across_x || !ux;
                across_y = across_y || !uy;
            }
            if (!across_x || !across_y) return false;
        }
        return true;
    }

    /** Columns of register blocks outside: are there enough of them to run in parallel (else
        each column's rows do)? */
    bool panel_columns_parallel(const ConstRegion &R, const GroupConfig &c) const {
        return std::ceil((double)R[0].extent / c.f0) >= 4 * m.threads;
    }

    /** What f's value copies, through casts: an input or Func read at f's own Vars in order;
        empty where f is anything else. */
    std::string copy_source(const FuncInfo &f) const {
        if (f.has_updates() || f.f->stages.empty()) return "";
        Expr v = f.f->stages[0].value;
        while (v.defined() && v.as<Cast>()) v = v.as<Cast>()->value;
        auto c = v.defined() ? v.as<Call>() : nullptr;
        if (!c || (c->call_type != Call::Image && c->call_type != Call::Func) || !pointwise_args(c->args, f.f->args)) return "";
        return c->name;
    }

    /** An inlined copy of an operand (a wrapper Func) that only the blocked reduction `b`
        reads, along b's dimension 0 and a reduction variable: the operand read in vectors. A
        column's panel of it may be computed densely once per column of blocks (packing, as
        BLAS libraries do): each row of blocks then reads it contiguously from L2. */
    std::string packable(const std::string &b) const {
        const FuncInfo &f = info.func(b);
        for (size_t k = 1; k < f.stages.size(); k++)
            for (auto &[callee, args] : f.stages[k].calls) {
                if (!inlined.count(callee) || !info.is_func(callee) || args.empty()) continue;
                const FuncInfo &w = info.func(callee);
                if (w.consumers.size() != 1 || w.consumers[0] != b || copy_source(w).empty()) continue;
                if (!expr_uses_var(args[0], f.f->args[0])) continue;
                for (size_t d = 1; d < args.size(); d++)
                    for (auto &rv : f.stages[k].rvars)
                        if (expr_uses_var(args[d], rv)) return callee;
            }
        return "";
    }

    /** The inputs and materialized Funcs the update stages of f read, through inlined Funcs. */
    std::set<std::string> operands_of(const FuncInfo &f, size_t first_stage = 1) {
        auto key = std::make_pair(f.name, first_stage);
        auto memo = operands_memo.find(key);
        if (memo != operands_memo.end()) return memo->second;
        std::set<std::string> out;
        for (size_t k = first_stage; k < f.stages.size(); k++)
            for (auto &call : f.stages[k].calls) {
                if (call.first == f.name) continue;
                if (inlined.count(call.first) && info.is_func(call.first)) {
                    auto more = operands_of(info.func(call.first), 0);
                    out.insert(more.begin(), more.end());
                } else {
                    out.insert(call.first);
                }
            }
        operands_memo[key] = out;
        return out;
    }

    /** The whole region and element size of an input or Func. */
    bool whole_region(const std::string &n, ConstRegion *r, double *bytes) const {
        if (info.is_func(n)) {
            *r = info.func(n).region;
            *bytes = bytes_of(info.func(n));
            return true;
        }
        auto it = info.inputs.find(n);
        auto t = info.input_types.find(n);
        if (it == info.inputs.end() || t == info.input_types.end()) return false;
        *r = it->second;
        *bytes = t->second.bytes();
        return true;
    }

    /** Cache lines (in bytes) touched reading `fp` of a dense array over `whole`: each row
        (dimension 0) of the footprint is its own run of lines unless it spans whole rows. */
    static double touched_bytes(const ConstRegion &fp, const ConstRegion &whole, double eb) {
        if (fp.empty() || whole.empty()) return region_points(fp) * eb;
        double row = (double)fp[0].extent * eb, full = (double)whole[0].extent * eb;
        double rows = region_points(fp) / std::max<double>(1, (double)fp[0].extent);
        if (fp[0].extent >= whole[0].extent) return std::ceil(row * rows / 64) * 64;
        double lines = std::ceil(row / 64) + (std::fmod(row, 64) != 0 || std::fmod(full, 64) != 0 ? 1 : 0);
        return rows * lines * 64;
    }

    /** Does `fp` of a dense array over `whole` stay in L2 while it is reread? Its rows, a row
        of `whole` apart, map to few sets of the cache where that stride is a multiple of a
        large power of two: only those sets' ways hold them (the aliasing that packing avoids). */
    bool stays_in_l2(const ConstRegion &fp, const ConstRegion &whole, double eb) const {
        double bytes = touched_bytes(fp, whole, eb);
        if (bytes > m.l2_bytes / 2) return false;
        if (fp.empty() || whole.empty() || fp[0].extent >= whole[0].extent) return true;
        double full = (double)whole[0].extent * eb;
        int64_t sets = std::max<int64_t>(1, (int64_t)(m.l2_bytes / 64 / std::max(1, m.l2_ways)));
        if (std::fmod(full, 64) != 0) return true;  // rows start at every offset: spread over the sets
        int64_t stride = (int64_t)(full / 64) % sets;
        int64_t starts = stride == 0 ? 1 : sets / std::gcd(stride, sets);
        double rows = region_points(fp) / std::max<double>(1, (double)fp[0].extent);
        double lines = std::ceil((double)fp[0].extent * eb / 64) + 1;
        double used = std::min<double>((double)sets, std::min<double>(rows, (double)starts) * lines);
        return bytes <= used * m.l2_ways * 64;
    }

    /** One register block of a Func over region R: f0 x f1 points at its start. */
    static ConstRegion block_region(const ConstRegion &R, const GroupConfig &c) {
        ConstRegion b = R;
        b[0].extent = c.f0;
        b[1].extent = c.f1;
        for (size_t d = 2; d < b.size(); d++) b[d].extent = 1;
        return b;
    }

    /** The register-blocked reduction's arithmetic: each step of the reduction loop is
        f0/W x f1 vector multiply-adds (two a cycle, a dependent chain every 4 cycles), one
        load per vector of each operand (broadcasts for those not read along dimension 0), and
        the bytes of operands whose block does not stay in L1 brought from L2. */
    double blocked_ns(const FuncInfo &f, const GroupConfig &c) {
        double t = 0;
        int W = lanes(f);
        double nx = std::max<double>(1, (double)c.f0 / W), ty = std::max<double>(1, (double)c.f1);
        const ConstRegion &R = f.region;
        double blocks = std::ceil((double)R[0].extent / c.f0) * std::ceil((double)R[1].extent / c.f1);
        for (size_t d = 2; d < R.size(); d++) blocks *= (double)R[d].extent;
        auto &ops = stage_ops[f.name];
        const ConstRegion block = block_region(R, c);
        for (size_t k = 0; k < f.stages.size(); k++) {
            const StageInfo &s = f.stages[k];
            if (k == 0 || s.rvars.empty()) {
                t += s.iterations * ops[k] / (m.ops_per_ns * W);
                continue;
            }
            double steps = 1, loads = 0, calls = 0, from_l2 = 0;
            for (auto &sp : s.rdom) steps *= (double)sp.extent;
            steps = std::max(1.0, steps);  // (an empty reduction: no step, but no 0/0 either)
            for (auto &[callee, args] : s.calls) {
                if (callee == f.name) continue;
                // An operand whose block (over the whole reduction) does not stay in L1 is
                // reloaded from L2 at every step.
                ConstRegion fp, whole;
                double eb = 4;
                if (whole_region(callee, &whole, &eb) && region_read(f, (int)k, block, callee, &fp) &&
                    region_points(fp) * eb > m.l1_bytes)
                    from_l2 += region_points(fp) * eb / steps;
                bool ux = false, uy = false;
                for (auto &a : args) {
                    ux = ux || expr_uses_var(a, f.f->args[0]);
                    uy = uy || expr_uses_var(a, f.f->args[1]);
                }
                loads += ux && uy ? nx * ty : ux ? nx : uy ? ty : 1;
                auto it = inline_cost.find(callee);
                calls += it != inline_cost.end() && copy_source(info.func(callee)).empty() ? 0 : 1;
            }
            // Arithmetic per point (the loads and the accumulator's own read aside), a
            // multiply and an add fused.
            double arith = std::max(1.0, (ops[k] - calls - 1) / 2);
            double cycles = std::max({nx * ty * arith / 2, loads / 2, 4 * arith, from_l2 * m.ops_per_ns / m.cache_bytes_per_ns});
            t += blocks * steps * cycles / m.ops_per_ns;
        }
        return t;
    }

    /** Memory traffic of the operands of a register-blocked reduction: for each, the panel
        an outer iteration reads (a column of blocks, or a row) is fetched once from where the
        whole operand lives if it stays in L2 while the inner loop rereads it, else every
        block's reads come from there; a packed operand is read once per column, written
        densely and reread from L2. */
    double contraction_traffic_ns(const FuncInfo &f, const GroupConfig &c) {
        const ConstRegion &R = f.region;
        double n0 = std::ceil((double)R[0].extent / c.f0), n1 = std::ceil((double)R[1].extent / c.f1);
        double rest = 1;
        for (size_t d = 2; d < R.size(); d++) rest *= (double)R[d].extent;
        // A column: every row of blocks (all of dimensions 1, 2, ...); a row: all columns.
        double n_out = c.panel ? n0 : n1 * rest, n_in = c.panel ? n1 * rest : n0;
        ConstRegion block = block_region(R, c), panel = R;
        if (c.panel) {
            panel[0].extent = c.f0;
        } else {
            panel[1].extent = c.f1;
            for (size_t d = 2; d < R.size(); d++) panel[d].extent = 1;
        }
        std::string packed = c.pack.empty() ? "" : copy_source(info.func(c.pack));
        double ns = 0;
        for (auto &op : operands_of(f)) {
            ConstRegion whole, bfp, pfp;
            double eb = 4;
            if (!whole_region(op, &whole, &eb) || !read_through(f.name, block, op, &bfp) || !read_through(f.name, panel, op, &pfp))
                continue;
            double home = region_points(whole) * eb;
            double bw = bandwidth_for(home);
            double panel_bytes = touched_bytes(pfp, whole, eb);
            if (op == packed) {
                double dense = region_points(pfp) * eb;
                ns += n_out * (panel_bytes / bw + dense / bandwidth_for(dense) +
                               region_points(pfp) / (m.ops_per_ns * lanes(info.func(c.pack))) + m.realize_overhead_ns);
                if (dense > m.l2_bytes / 2) ns += n_out * n_in * region_points(bfp) * eb / bandwidth_for(dense);
            } else if (stays_in_l2(pfp, whole, eb)) {
                ns += n_out * panel_bytes / bw;
            } else {
                ns += n_out * n_in * touched_bytes(bfp, whole, eb) / bw;
            }
        }
        return ns;
    }

    /** Dimensions 2, 3, ... of a root of at most 4 points (colour channels) are looped over
        inside its strips (and their rows), and optionally inside 2-D tiles (both tile variants
        are costed), so that a strip or tile holds all of them: the index of the first dimension
        looped over outside. (Never inside register blocks.) */
    static size_t outer_from(const ConstRegion &r, const GroupConfig &c) {
        size_t d = 2;
        if ((!c.strips() && !(c.kind == GroupConfig::Tile && c.small_inside)) || c.small_outside)
            return d;
        while (d < r.size() && r[d].extent <= 4) d++;
        return d;
    }

    double tasks_outside(const ConstRegion &r, size_t from, double split_tasks) const {
        double t = split_tasks;
        for (size_t d = from; d < r.size(); d++) t *= r[d].extent;
        return t;
    }

    void cost_group(Group &g) {
        const FuncInfo &root = info.func(g.root);
        const ConstRegion &R = root.region;
        size_t nd = R.size();
        int W = lanes(root);
        std::vector<GroupConfig> cs;
        double group_ns = compute_ns(root, 1, true);
        for (auto &mb : g.members) group_ns += compute_ns(info.func(mb), 1, true);
        {
            GroupConfig c;
            c.kind = GroupConfig::AllRoot;
            for (auto &mb : g.members) c.where[mb] = Placement();
            cs.push_back(c);
        }
        // (A root with updates computes its members before its first stage: at root.)
        if (!g.members.empty() && nd >= 2 && !root.has_updates()) {
            int64_t e0 = R[0].extent, e1 = R[1].extent;
            bool small_outer = nd > 2 && R[2].extent <= 4;
            // A root that reads transposed loops over each strip in columns of one vector: a
            // gather's lines are read again by the next row while they are in L1.
            bool gathers = !transposed_reads(root).empty() && e0 > 2 * W;
            // Sliding windows also in tall strips: a window's rows are all it keeps, however
            // tall its strip, and the rows each strip computes again at its top (its members'
            // halos, summed over a deep chain) are then a small part of it. The tallest: one
            // strip per thread.
            std::vector<int64_t> heights = {4, 8, 16, 32, 64, 128, 512};
            const int64_t per_thread = (e1 + m.threads - 1) / std::max(1, m.threads);
            if (per_thread > kTallStrip) heights.push_back(per_thread);
            for (int64_t S : heights) {
                if (S > kTallStrip && S >= per_thread && S != per_thread) continue;
                if (S >= e1 && S != per_thread) break;
                for (auto kind : {GroupConfig::Strip, GroupConfig::Slide, GroupConfig::Rows})
                for (int variant = 0; variant < 4; variant++) {
                    if (S > kTallStrip && kind != GroupConfig::Slide) continue;
                    // (Rows: each row of a strip computes what it needs, nothing kept between rows.
                    // Strips may also have their small outer dimensions outside them, each
                    // strip's members then computed for one of those points.)
                    bool outside = variant & 1, cols = variant & 2;
                    if ((outside && (kind != GroupConfig::Strip || !small_outer)) || (cols && (kind != GroupConfig::Strip || !gathers)))
                        continue;
                    GroupConfig c;
                    c.kind = kind;
                    c.f1 = S;
                    c.small_outside = outside;
                    if (cols) c.f0 = W;
                    int64_t rows = kind == GroupConfig::Rows ? 1 : S;
                    ConstRegion tile = R;
                    tile[1] = {R[1].min + (e1 / 2 / S) * S, rows};
                    size_t from = outer_from(R, c);
                    for (size_t d = from; d < nd; d++) tile[d] = {R[d].min + R[d].extent / 2, 1};
                    place(g, c, tile, tasks_outside(R, from, std::ceil((double)e1 / rows)), group_ns);
                    cs.push_back(c);
                    // Sliding windows in columns: each window's rows stay short (in L1).
                    for (int64_t col : {256, 512, 1024}) {
                        if (kind != GroupConfig::Slide || S > kTallStrip || col * 2 > e0 || col % W) continue;
                        GroupConfig cc = c;
                        cc.f0 = col;
                        cc.where.clear();
                        tile[0] = {R[0].min + (e0 / 2 / col) * col, col};
                        place(g, cc, tile, tasks_outside(R, from, std::ceil((double)e1 / S) * std::ceil((double)e0 / col)), group_ns);
                        cs.push_back(cc);
                    }
                }
            }
            for (int64_t tx : {64, 128, 256, 512}) {
                if (tx >= e0 || tx % W) continue;
                for (int64_t ty : {8, 16, 32, 64})
                for (bool inside : {false, true}) {
                    if (ty >= e1 || (inside && !small_outer)) continue;
                    GroupConfig c;
                    c.kind = GroupConfig::Tile;
                    c.f0 = tx;
                    c.f1 = ty;
                    c.small_inside = inside;
                    ConstRegion tile = R;
                    tile[0] = {R[0].min + (e0 / 2 / tx) * tx, tx};
                    tile[1] = {R[1].min + (e1 / 2 / ty) * ty, ty};
                    size_t from = outer_from(R, c);
                    for (size_t d = from; d < nd; d++) tile[d] = {R[d].min + R[d].extent / 2, 1};
                    place(g, c, tile, tasks_outside(R, from, std::ceil((double)e0 / tx) * std::ceil((double)e1 / ty)), group_ns);
                    cs.push_back(c);
                }
            }
            std::string b = blockable(g);
            if (!b.empty()) {
                int Wb = lanes(info.func(b));
                std::string pk = packable(b);
                for (int nx : {1, 2, 3, 4})
                    for (int ty : {1, 2, 4, 6, 8})
                    for (int order = 0; order < 3; order++) {
                        // 0: rows of blocks outside; 1: columns outside; 2: columns outside, packed.
                        if (nx * ty > 24 || nx * ty < 4 || (int64_t)nx * Wb > e0 || ty > e1) continue;
                        if (order == 2 && pk.empty()) continue;
                        GroupConfig c;
                        c.kind = GroupConfig::Block;
                        c.f0 = nx * Wb;
                        c.f1 = ty;
                        c.blocked = b;
                        c.panel = order > 0;
                        if (order == 2) c.pack = pk;
                        ConstRegion tile = R;
                        tile[0] = {R[0].min, c.f0};
                        tile[1] = {R[1].min, c.f1};
                        for (size_t d = 2; d < nd; d++) tile[d] = {R[d].min, 1};
                        place(g, c, tile,
                              tasks_outside(R, 2, std::ceil((double)e0 / c.f0) * std::ceil((double)e1 / c.f1)), group_ns);
                        cs.push_back(c);
                    }
            }
        }
        if (nd >= 2 && self_blockable(root)) {
            // The root's own reduction in register blocks (its members at root, as a root with
            // updates computes them before its first stage).
            for (int nx : {1, 2, 3, 4})
                for (int ty : {1, 2, 4, 6, 8})
                    for (bool panel : {false, true}) {
                        if (nx * ty > 24 || nx * ty < 4 || (int64_t)nx * W > R[0].extent || ty > R[1].extent) continue;
                        GroupConfig c;
                        c.kind = GroupConfig::Block;
                        c.f0 = nx * W;
                        c.f1 = ty;
                        c.blocked = g.root;
                        c.panel = panel;
                        c.tile = block_region(R, c);
                        for (auto &mb : g.members) c.where[mb] = Placement();
                        cs.push_back(c);
                    }
        }
        // Each configuration that keeps a member at root only because the model finds
        // recomputing it per tile slower (within the cap on recomputation): the same with the
        // member recomputed per tile, for a measured search to time. The model's balance of
        // recomputation against a pass through memory is rough (a padded copy of a convolution's
        // input at root cost depthwise_separable_conv 10-15% against recomputing it per tile), so
        // such a variant is never its first choice.
        for (size_t i = 0, n = cs.size(); i < n; i++) {
            bool capped = false;
            for (auto &[name, p] : cs[i].where) capped = capped || p.capped;
            if (!capped || cs[i].iterations < 0) continue;
            GroupConfig v = cs[i];
            v.recompute = true;
            v.where.clear();
            place(g, v, cs[i].tile, cs[i].iterations, group_ns);
            cs.push_back(v);
        }
        for (auto &c : cs) c.cost_ns = config_cost(g, c);
        std::stable_sort(cs.begin(), cs.end(), [](const GroupConfig &a, const GroupConfig &b) { return a.cost_ns < b.cost_ns; });
        // Sliding windows in columns are the model's least calibrated family: it ranks them
        // above full-width choices that ran faster (camera_pipe 0.71x -> 0.51x of the expert,
        // resize and interpolate slower too, the 3x3 blur no faster). So they are never the
        // model's first choice, only candidates that a measured search times (which finds them
        // where they pay: the 3x3 blur). Nor are the variants that recompute members (above).
        auto columns = [](const GroupConfig &c) { return c.kind == GroupConfig::Slide && c.f0 > 0; };
        auto first = std::find_if(cs.begin(), cs.end(), [&](const GroupConfig &c) { return !columns(c) && !c.recompute; });
        if (first != cs.end()) std::rotate(cs.begin(), first, first + 1);
        g.configs = cs;
        // The ranking (WEFT_DEBUG): the few cheapest configurations of the group.
        log << "group " << g.root << ", configurations ranked:\n";
        for (size_t i = 0; i < cs.size() && i < 12; i++) {
            int at = 0;
            for (auto &[name, p] : cs[i].where) at += p.kind != Placement::Root;
            log << "  " << cs[i].describe() << ": " << cs[i].cost_ns / 1e6 << " ms, " << at << " of "
                << cs[i].where.size() << " members per tile\n";
        }
    }

    static constexpr int64_t kTallStrip = 128;  // taller strips are for sliding windows only

    double config_cost(const Group &g, const GroupConfig &c) {
        const FuncInfo &root = info.func(g.root);
        const ConstRegion &R = root.region;
        double iterations = 1, tasks = 1;
        size_t nd = R.size();
        if (c.kind == GroupConfig::AllRoot) {
            for (size_t d = 1; d < nd; d++) tasks *= R[d].extent;
        } else if (c.strips()) {
            tasks = iterations = tasks_outside(R, outer_from(R, c), std::ceil((double)R[1].extent / c.f1));
            if (c.f0 > 0 && c.kind == GroupConfig::Slide) iterations *= std::ceil((double)R[0].extent / c.f0);
            if (c.kind == GroupConfig::Rows) iterations = tasks_outside(R, outer_from(R, c), (double)R[1].extent);
        } else {
            size_t from = outer_from(R, c);
            iterations = tasks_outside(R, from, std::ceil((double)R[0].extent / c.f0) * std::ceil((double)R[1].extent / c.f1));
            tasks = !c.panel ? tasks_outside(R, from, std::ceil((double)R[1].extent / c.f1))
                    : panel_columns_parallel(R, c) ? std::ceil((double)R[0].extent / c.f0)
                                                   : tasks_outside(R, 2, std::ceil((double)R[1].extent / c.f1));
        }
        double work = compute_ns(root, 1, true), mem = 0, alone = 0, overhead = 0;
        double out_bytes = root.points() * bytes_of(root);
        mem += out_bytes / bandwidth_for(out_bytes) * (1 + real_consumers(root.name).size());
        // Padding of partial tiles: the root computes whole tiles (ShiftInwards keeps it exact,
        // but small regions waste the tail).
        if (c.kind == GroupConfig::Tile || c.kind == GroupConfig::Block) {
            double pad = std::ceil((double)R[0].extent / c.f0) * c.f0 / std::max<int64_t>(1, R[0].extent);
            work *= pad;
        }
        if (c.kind == GroupConfig::Block && c.blocked == g.root) {
            // Blocked in place: its first stage writes the whole output, each block reads its
            // part back before its reduction and writes it after.
            work = blocked_ns(root, c) + contraction_traffic_ns(root, c);
            mem += 2 * out_bytes / bandwidth_for(out_bytes);
        }
        // What one iteration keeps live at once: the root's part (a row of a strip computed
        // per row, else its tile) and every member's (a sliding window: only the rows one row
        // of the root needs). Each member's tile moves at the bandwidth of the cache that holds
        // all of it.
        double group_live = 0;
        ConstRegion root_part = c.tile;
        if (c.kind == GroupConfig::Slide && root_part.size() > 1) root_part[1].extent = 1;
        if (c.kind != GroupConfig::AllRoot) group_live = region_points(root_part) * bytes_of(root);
        const double root_live = group_live;
        std::map<std::string, double> member_live, operand_live, operand_readers, whole_bytes, whole_readers;
        double page_walks = 0;
        // (And what it reads from outside the group: inputs, Funcs computed elsewhere; per
        // iteration where it is computed per tile, else all it reads.)
        auto reads_outside = [&](const std::string &name, const ConstRegion &r, bool per_tile) {
            for (auto &op : operands_of(info.func(name), 0)) {
                ConstRegion whole, fp;
                double eb = 4;
                if (c.where.count(op) || op == g.root || !whole_region(op, &whole, &eb) || !read_through(name, r, op, &fp)) continue;
                if (per_tile) {
                    operand_live[op] = std::max(operand_live[op], touched_bytes(fp, whole, eb));
                    operand_readers[op] += 1;
                    // A tall, narrow footprint (a scan's strip of columns) reads a page per row:
                    // where one iteration's pages outnumber the TLBs', each row's costs a page
                    // walk again in the next iteration.
                    double rows = region_points(fp) / std::max<double>(1, (double)fp[0].extent);
                    if (!whole.empty() && (double)whole[0].extent * eb >= 4096 && (double)fp[0].extent * eb < 4096 && rows > m.tlb_pages)
                        page_walks += iterations * rows;
                } else {
                    whole_bytes[op] = std::max(whole_bytes[op], touched_bytes(fp, whole, eb));
                    whole_readers[op] += 1;
                }
            }
        };
        if (c.kind == GroupConfig::AllRoot) reads_outside(g.root, R, false);
        else if (c.kind != GroupConfig::Block) reads_outside(g.root, root_part, true);
        for (auto &[name, p] : c.where) {
            if (c.kind != GroupConfig::Block) {
                // (A sliding window reads, per row of the root, what one new row of it needs.)
                ConstRegion r = p.kind == Placement::Root ? info.func(name).region : p.footprint;
                if (slides(c, name) && r.size() > 1) r[1].extent = 1;
                reads_outside(name, r, p.kind != Placement::Root);
            }
            if (p.kind == Placement::Root || p.kind == Placement::Vector) continue;
            double tile_bytes = region_points(p.footprint) * bytes_of(info.func(name));
            double live = tile_bytes;
            if (p.kind == Placement::Slide && p.footprint.size() > 1) {
                // The rows of it one row of the strip reads: its rows beyond the strip's, plus one.
                double rows = (double)std::max<int64_t>(1, p.footprint[1].extent);
                double window = std::clamp(rows - (double)c.f1 + 1, 1.0, rows);
                live = tile_bytes / rows * window;
            }
            member_live[name] = live;
            group_live += live;
        }
        for (auto &[op, bytes] : operand_live) group_live += bytes;
        // How far apart a member's tile is written and last read: what the iteration writes
        // from the member's realization until its last reader in the group is computed (the
        // root last). A tile that fits a cache alone is fetched from the next level where
        // that much is written in between (a strip of many stages, each read by later ones).
        std::map<std::string, double> reach;
        if (c.kind != GroupConfig::AllRoot && c.kind != GroupConfig::Block) {
            const size_t n = g.members.size();
            std::map<std::string, size_t> pos;
            std::vector<double> before(n + 1, 0);  // what members 0 .. i-1 keep live
            for (size_t i = 0; i < n; i++) {
                pos[g.members[i]] = i;
                auto it = member_live.find(g.members[i]);
                before[i + 1] = before[i] + (it == member_live.end() ? 0 : it->second);
            }
            for (size_t i = 0; i < n; i++) {
                if (!member_live.count(g.members[i])) continue;
                size_t last = i;
                for (auto &cn : real_consumers(g.members[i]))
                    last = std::max(last, cn == g.root ? n : pos.count(cn) ? pos[cn] : i);
                reach[g.members[i]] = before[std::min(last + 1, n)] - before[i] + (last == n ? root_live : 0);
            }
        }
        // An operand read by several of the group's Funcs: fetched once, read again from the
        // cache that holds the iteration's working set where they are computed per tile, and
        // all over again by each of those computed alone.
        for (auto &[op, bytes] : operand_live)
            if (operand_readers[op] > 1) mem += iterations * bytes * (operand_readers[op] - 1) / bandwidth_for(group_live);
        for (auto &[op, bytes] : whole_bytes) {
            double again = whole_readers[op] - (operand_readers.count(op) ? 0 : 1);
            if (again > 0) mem += again * bytes / bandwidth_for(bytes);
        }
        for (auto &[name, p] : c.where) {
            const FuncInfo &f = info.func(name);
            if (p.kind == Placement::Root) {
                alone += root_ns(f);
                continue;
            }
            bool blocked = c.kind == GroupConfig::Block && name == c.blocked;
            work += blocked ? blocked_ns(f, c) + contraction_traffic_ns(f, c) : member_ns(f, p);
            if (p.kind == Placement::Vector) continue;  // in registers: no tile written and read back
            double tile_bytes = region_points(p.footprint) * bytes_of(f);
            // (A tile that fits in L1 alone moves at L2's rate where the whole iteration's does
            // not; larger ones at the rate of the level they fit in themselves, except a scan's:
            // each of its stages sweeps all of it, so everything else the iteration moves
            // passes through the caches between its sweeps.)
            double live = member_live[name];
            if (live <= m.l1_bytes && group_live > m.l1_bytes) live = std::min(group_live, m.l2_bytes);
            if (reach.count(name) && reach[name] > m.l2_bytes) live = std::max(live, reach[name]);
            if (f.has_updates() && large_domain(f) && p.kind != Placement::Slide) live = std::max(live, group_live);
            mem += tile_traffic_ns(iterations, tile_bytes, live);
            overhead += iterations * realize_ns(tile_bytes) * (p.kind == Placement::Slide ? 2 : 1);
        }
        // The root's transposed reads: a cache line per lane, read again by the root's next row
        // only while a row's lines stay in L1 (columns of a strip, tiles), else fetched again by
        // each lane from where the operand lies.
        for (auto &op : transposed_reads(root)) {
            ConstRegion whole;
            double eb = 4;
            if (!whole_region(op, &whole, &eb)) continue;
            bool narrow = c.kind == GroupConfig::Tile || c.kind == GroupConfig::Block || (c.kind == GroupConfig::Strip && c.f0 > 0);
            double span = narrow ? (double)c.f0 : (double)R[0].extent;
            double lanes_read = root.stages[0].iterations;
            double lines = span * 64 <= m.l1_bytes / 2 ? lanes_read * eb / 64 : lanes_read;
            bool near = c.where.count(op) && c.where.at(op).kind != Placement::Root;
            mem += lines * 64 / (near ? m.cache_bytes_per_ns : bandwidth_for(region_points(whole) * eb));
        }
        mem += page_walks * m.page_walk_ns;
        double cores = (work + mem) > 20000 ? cores_for(tasks) : 1;
        double total = (work + mem + overhead) / cores + alone;
        if (cores > 1) total += std::min(tasks, 64.0 * m.threads) * m.task_overhead_ns / m.threads;
        return total;
    }

    // ------------------------------------------------------------------ emitting the calls

    std::set<std::string> loop_names(const FuncInfo &f, size_t k) {
        std::set<std::string> s(f.f->args.begin(), f.f->args.end());
        for (auto &rv : f.stages[k].rvars) s.insert(rv);
        return s;
    }

    /** Vectorizes loop `x` of a stage (splitting off `lanes` as a new inner loop). */
    std::string vectorize(Emitter &e, const std::string &f, int k, const std::string &x, int64_t lanes,
                          std::set<std::string> &taken) {
        std::string xv = fresh(x, "v", taken);
        e.split(f, k, x, x, xv, lanes);
        e.loop(f, k, xv, ForType::Vectorized);
        return xv;
    }

    /** The pure dimensions of f's definition (through the Funcs inlined into it) whose unrolling
        pays: those a select compares with a constant (`mux(c, {r, g, b})` over colour channels:
        each unrolled copy's selects fold), and those along which f reads a Func or input both at
        its own Var and at a constant (`in(x, y, c) * in(x, y, 3)`, an alpha channel: the copies
        share the constant one, computed or loaded once per point). */
    const std::set<size_t> &select_dims(const FuncInfo &f, size_t k = 0) {
        const auto key = std::make_pair(f.name, k);
        auto it = select_dims_memo.find(key);
        if (it != select_dims_memo.end()) return it->second;
        select_dims_memo[key] = {};  // (no Func calls itself through inlined ones; a guard all the same)
        struct Find : IRVisitor {
            Planner *p;
            const FuncInfo *f;
            std::set<size_t> dims;
            int arg_index(const Expr &e) const {
                const Variable *v = e.as<Variable>();
                auto a = v ? std::find(f->f->args.begin(), f->f->args.end(), v->name) : f->f->args.end();
                return a == f->f->args.end() ? -1 : (int)(a - f->f->args.begin());
            }
            void condition(const Expr &c) {
                auto compares = [&](auto *op) {
                    if (!op) return false;
                    for (auto [a, b] : {std::make_pair(op->a, op->b), std::make_pair(op->b, op->a)})
                        if (is_const(b) && arg_index(a) >= 0) dims.insert((size_t)arg_index(a));
                    return true;
                };
                if (compares(c.as<EQ>()) || compares(c.as<NE>()) || compares(c.as<LT>()) || compares(c.as<LE>()) ||
                    compares(c.as<GT>()) || compares(c.as<GE>()))
                    return;
                if (auto a = c.as<And>()) condition(a->a), condition(a->b);
                else if (auto o = c.as<Or>()) condition(o->a), condition(o->b);
                else if (auto n = c.as<Not>()) condition(n->a);
            }
            void visit(const Select *op) override {
                condition(op->condition);
                IRVisitor::visit(op);
            }
            // Per callee and argument position: f's dimensions passed there, and whether a
            // constant is.
            std::map<std::pair<std::string, size_t>, std::pair<std::set<size_t>, bool>> passed;
            void visit(const Call *op) override {
                // A Func inlined here: its dimensions whose unrolling pays, where this call
                // passes one of f's pure Vars.
                if (op->call_type == Call::Func && p->inlined.count(op->name) && p->info.is_func(op->name))
                    for (size_t j : p->select_dims(p->info.func(op->name)))
                        if (j < op->args.size() && arg_index(op->args[j]) >= 0) dims.insert((size_t)arg_index(op->args[j]));
                if (op->call_type != Call::Intrinsic)
                    for (size_t j = 0; j < op->args.size(); j++) {
                        auto &at = passed[{op->name, j}];
                        if (is_const(op->args[j])) at.second = true;
                        else if (arg_index(op->args[j]) >= 0) at.first.insert((size_t)arg_index(op->args[j]));
                    }
                IRVisitor::visit(op);
            }
        } find;
        find.p = this;
        find.f = &f;
        if (k < f.stages.size()) find.include(f.stages[k].body);
        for (auto &[where, at] : find.passed)
            if (at.second) find.dims.insert(at.first.begin(), at.first.end());
        return select_dims_memo[key] = find.dims;
    }
    std::map<std::pair<std::string, size_t>, std::set<size_t>> select_dims_memo;

    /** The pure Vars of f's stage k that unroll_select_dims unrolls: dimensions of 2 to 4
        points (in `extents`, covering f's whole region there) other than the vectorized one
        that a select compares with a constant (for an update: ones it loops over
        independently). */
    std::vector<std::string> select_vars(const FuncInfo &f, size_t k, const ConstRegion &extents) {
        int v = vd(f);
        std::vector<std::string> small;
        for (size_t d : select_dims(f, k)) {
            if ((int)d == v || d >= extents.size() || d >= f.f->args.size()) continue;
            if (k > 0 && (!f.stages[k].loops_over[d] || !f.stages[k].pure_parallel[d])) continue;
            int64_t ext = extents[d].extent;
            // (Only a dimension covered whole, the same points in every tile: a tile's rows, or
            // a member's halo of rows, are at other coordinates in each, and their copies' selects
            // fold nothing. Unrolled inside the rows' loop, a 3-row halo of a padded input cost
            // depthwise_separable_conv 10-15%.)
            bool whole = d >= f.region.size() || (extents[d].min == f.region[d].min && ext == f.region[d].extent);
            if (ext >= 2 && ext <= 4 && whole) small.push_back(f.f->args[d]);
        }
        return small;
    }

    /** Loop order (innermost first): the vector loop xv, then `small`, then the rest of the
        vectorized dimension x. */
    static std::vector<std::string> just_outside(const std::string &xv, const std::vector<std::string> &small,
                                                 const std::string &x) {
        std::vector<std::string> order = {xv};
        order.insert(order.end(), small.begin(), small.end());
        order.push_back(x);
        return order;
    }

    /** A pure stage vectorized by `xv`: each dimension of 2 to 4 points (in `extents`) that a
        select compares with a constant moves just outside the vector loop, unrolled, so that
        each copy's selects fold (Halide's experts write `reorder(c, x, y).unroll(c)`; else every
        branch is computed for every point). */
    void unroll_select_dims(Emitter &e, const FuncInfo &f, const ConstRegion &extents, const std::string &xv) {
        int v = vd(f);
        std::vector<std::string> small = select_vars(f, 0, extents);
        if (small.empty() || xv.empty()) return;
        std::vector<std::string> order = just_outside(xv, small, f.f->args[v]);
        for (size_t d = 0; d < f.f->args.size(); d++)
            if ((int)d != v && std::find(small.begin(), small.end(), f.f->args[d]) == small.end()) order.push_back(f.f->args[d]);
        e.reorder(f.name, 0, order, {});
        for (auto &n : small) e.loop(f.name, 0, n, ForType::Unrolled);
    }

    /** A group's root vectorized by `xv`, its small dimensions 2 .. from - 1 inside each row of
        its strips or tiles (`order`, innermost first, without xv): where the copies share at
        least 2 operations a point (unroll_savings: more than one load of a stored channel, an
        inlined alpha channel), its dimensions whose unrolling pays (select_dims) move just
        outside the vector loop, unrolled, as for members. (Sharing a load alone did not pay:
        lens_blur's output, its colour planes then written in turns, ran 2-4% slower.) Whether
        any did. */
    bool unroll_small_inside(Emitter &e, const FuncInfo &root, const ConstRegion &R, size_t from, const std::string &xv,
                             std::vector<std::string> &order) {
        if (xv.empty() || root.has_updates() || unroll_savings(root) < 2) return false;
        std::vector<std::string> small;
        for (auto &n : select_vars(root, 0, R)) {
            auto d = std::find(root.f->args.begin(), root.f->args.end(), n) - root.f->args.begin();
            if (d >= 2 && (size_t)d < from) small.push_back(n);
        }
        if (small.empty()) return false;
        std::vector<std::string> rest;
        for (auto &o : order)
            if (std::find(small.begin(), small.end(), o) == small.end()) rest.push_back(o);
        order = {xv};
        order.insert(order.end(), small.begin(), small.end());
        order.insert(order.end(), rest.begin(), rest.end());
        for (auto &n : small) e.loop(root.name, 0, n, ForType::Unrolled);
        return true;
    }

    /** Fuses the pure loops `outer` (innermost first, not empty) into one; returns its name. */
    std::string fuse_all(Emitter &e, const std::string &f, int k, const std::vector<std::string> &outer,
                         std::set<std::string> &taken) {
        std::string v = outer[0];
        for (size_t i = 1; i < outer.size(); i++) {
            std::string fused = fresh(outer[0], "_" + outer[i], taken);
            e.fuse(f, k, v, outer[i], fused);
            v = fused;
        }
        return v;
    }

    /** Fuses the pure loops `outer` (innermost first) into one and runs it in parallel. */
    std::string parallel_over(Emitter &e, const std::string &f, int k, const std::vector<std::string> &outer,
                              std::set<std::string> &taken) {
        if (outer.empty()) return "";
        std::string v = fuse_all(e, f, k, outer, taken);
        e.loop(f, k, v, ForType::Parallel);
        return v;
    }

    /** A register block is a task of a few hundred nanoseconds: where the outer loops of
        blocks (`outer`, innermost first, with their extents) would give many such tasks, only
        the outermost ones run in parallel, fused, once they give kBlockTasksPerThread tasks per
        thread; the loops inside them run serially in each task. Returns the loops to run in
        parallel (a suffix of `outer`). (depthwise_separable_conv: 6272 tasks of one block of
        16 x 8 each on two threads ran 10-15% slower than 448 of a row of blocks each.) */
    std::vector<std::string> coarse_block_tasks(const std::vector<std::string> &outer, const std::vector<double> &extents) const {
        static constexpr double kBlockTasksPerThread = 16;
        double tasks = 1;
        size_t i = outer.size();
        while (i > 0 && tasks < kBlockTasksPerThread * m.threads) tasks *= extents[--i];
        return std::vector<std::string>(outer.begin() + i, outer.end());
    }

    /** The loop nest of a Func at root (or an output not tiled with members). */
    void root_nest(Emitter &e, const FuncInfo &f, bool parallel, bool updates = true) {
        const std::string &n = f.name;
        const ConstRegion &R = f.region;
        size_t nd = R.size();
        int W = lanes(f);
        double work = compute_ns(f, 1, true);
        parallel = parallel && m.threads > 1 && work > 20000;
        // Pure stage.
        {
            auto taken = loop_names(f, 0);
            int v = vd(f);
            vector_dim_innermost(e, f, v);
            std::string xv;
            if (nd >= 1 && R[v].extent >= W) xv = vectorize(e, n, 0, f.f->args[v], W, taken);
            // Small dimensions whose copies share work, unrolled just outside the vector loop (as
            // in a group's strips: unroll_small_inside).
            std::vector<std::string> small;
            if (!xv.empty() && !f.has_updates() && unroll_savings(f) >= 2) small = select_vars(f, 0, R);
            auto is_small = [&](int d) { return std::find(small.begin(), small.end(), f.f->args[d]) != small.end(); };
            if (!small.empty()) {
                std::vector<std::string> order = just_outside(xv, small, f.f->args[v]);
                for (size_t d = 0; d < nd; d++)
                    if ((int)d != v && !is_small((int)d)) order.push_back(f.f->args[d]);
                e.reorder(n, 0, order, {});
                for (auto &s : small) e.loop(n, 0, s, ForType::Unrolled);
            }
            if (parallel) {
                std::vector<std::string> outer;
                double tasks = 1;
                for (int d = (int)nd - 1; d >= 0; d--) {
                    if (d == v || is_small(d)) continue;
                    outer.insert(outer.begin(), f.f->args[d]);
                    tasks *= R[d].extent;
                    if (tasks >= 8 * m.threads) break;
                }
                if (!outer.empty() && tasks >= m.threads) {
                    std::string par = parallel_over(e, n, 0, outer, taken);
                    outer_loop[n] = {par, "root, parallel over " + std::to_string(outer.size())};
                }
            }
            if (!outer_loop.count(n) && nd >= 1) {
                std::string o = f.f->args[0];
                for (int d = (int)nd - 1; d >= 0; d--)
                    if (nd == 1 || (d != v && !is_small(d))) {
                        o = f.f->args[d];
                        break;
                    }
                outer_loop[n] = {o, "root, serial"};
            }
        }
        if (updates)
            for (size_t k = 1; k < f.stages.size(); k++) update_nest(e, f, (int)k, parallel, 0, 0, f.region);
    }

    /** A root's own reduction stages in register blocks of c.f0 x c.f1 (see self_blockable):
        each block's pure loops vectorized and unrolled inside the reduction loops, the blocks'
        loops outside (columns outermost with c.panel), in parallel. */
    void blocked_root_nest(Emitter &e, const FuncInfo &f, const GroupConfig &c) {
        const std::string &n = f.name;
        const ConstRegion &R = f.region;
        int W = lanes(f);
        root_nest(e, f, true, false);
        for (size_t k = 1; k < f.stages.size(); k++) {
            const StageInfo &s = f.stages[k];
            auto taken = loop_names(f, (int)k);
            std::string x = f.f->args[0], y = f.f->args[1];
            std::string xo = fresh(x, "o", taken), xi = fresh(x, "i", taken), yo = fresh(y, "o", taken),
                        yi = fresh(y, "i", taken), xv = fresh(x, "v", taken);
            e.split(n, (int)k, x, xo, xi, c.f0);
            e.split(n, (int)k, y, yo, yi, c.f1);
            std::vector<std::string> order = {xi, yi}, rest;
            for (auto &r : s.rvars) order.push_back(r);
            for (size_t d = 2; d < f.f->args.size(); d++)
                if (s.loops_over[d]) rest.push_back(f.f->args[d]);
            if (!c.panel) order.push_back(xo);
            order.push_back(yo);
            order.insert(order.end(), rest.begin(), rest.end());
            if (c.panel) order.push_back(xo);
            e.reorder(n, (int)k, order, std::set<std::string>(s.rvars.begin(), s.rvars.end()));
            e.split(n, (int)k, xi, xi, xv, W);
            e.loop(n, (int)k, xv, ForType::Vectorized);
            if (c.f0 > W) e.loop(n, (int)k, xi, ForType::Unrolled);
            if (c.f1 > 1) e.loop(n, (int)k, yi, ForType::Unrolled);
            if (m.threads <= 1) continue;
            std::vector<std::string> rows = {yo};
            std::vector<double> row_extents = {std::ceil((double)R[1].extent / c.f1)};
            rows.insert(rows.end(), rest.begin(), rest.end());
            for (size_t d = 2; d < f.f->args.size(); d++)
                if (s.loops_over[d]) row_extents.push_back((double)R[d].extent);
            if (c.panel && panel_columns_parallel(R, c)) e.loop(n, (int)k, xo, ForType::Parallel);
            else parallel_over(e, n, (int)k, coarse_block_tasks(rows, row_extents), taken);
        }
    }

    /** The extent of f's dimension d in `extents` (its region where that is shorter). */
    static int64_t dim_extent(const ConstRegion &extents, const FuncInfo &f, size_t d) {
        return d < extents.size() ? extents[d].extent : d < f.region.size() ? f.region[d].extent : 0;
    }

    /** An update's loop nest: pure loops that may move are moved inside the reduction loops
        (the innermost one vectorized; with `bx` × `by` > 0, a register block of them). */
    void update_nest(Emitter &e, const FuncInfo &f, int k, bool parallel, int64_t bx, int64_t by, const ConstRegion &extents) {
        const StageInfo &s = f.stages[k];
        const std::string &n = f.name;
        int W = lanes(f);
        size_t nd = f.f->args.size();
        int v = vd(f);
        if (nd == 0 || !s.loops_over[v] || !s.pure_parallel[v]) return;
        auto taken = loop_names(f, k);
        std::set<std::string> rv(s.rvars.begin(), s.rvars.end());
        // Small dimensions its selects compare with constants (a histogram's value and weight
        // channels): just outside the vector loop, unrolled, as for pure stages.
        std::vector<std::string> sel = bx > 0 && by > 0 ? std::vector<std::string>() : select_vars(f, k, extents);
        auto is_sel = [&](const std::string &n) { return std::find(sel.begin(), sel.end(), n) != sel.end(); };
        // Current order (innermost first): the RVars, then the pure Vars it loops over (the
        // vectorized one first, then those just chosen).
        std::vector<std::string> pure = {f.f->args[v]};
        pure.insert(pure.end(), sel.begin(), sel.end());
        for (size_t d = 0; d < nd; d++)
            if (s.loops_over[d] && (int)d != v && !is_sel(f.f->args[d])) pure.push_back(f.f->args[d]);
        bool block = v == 0 && bx > 0 && by > 0 && nd >= 2 && s.loops_over[1] && s.pure_parallel[1] && !s.rvars.empty();
        std::vector<std::string> order;
        if (block) {
            order = {f.f->args[0], f.f->args[1]};
            for (auto &r : s.rvars) order.push_back(r);
            for (size_t i = 2; i < pure.size(); i++) order.push_back(pure[i]);
        } else if (unrolled_reduction(f, k)) {
            // A few steps of reduction per point: innermost and unrolled, inside the vector loop.
            for (auto &r : s.rvars) order.push_back(r);
            for (auto &r : s.rvars) e.loop(n, k, r, ForType::Unrolled);
            for (auto &p : pure) order.push_back(p);
        } else {
            // Where the vectorized loop holds fewer than 4 vectors, the next few small pure
            // loops move inside the reduction loops too, unrolled: independent accumulators
            // (up to half the vector registers: 16 with AVX-512, whose 32 registers leave room
            // for the operands; 8 with AVX2) instead of one chain of dependent operations (each
            // point still reduces in the same order). A depthwise convolution's 2 vectors of
            // channels x 8 columns: 16 chains over its taps, not 2.
            order = {f.f->args[v]};
            order.insert(order.end(), sel.begin(), sel.end());
            double acc = std::ceil((double)std::max<int64_t>(1, dim_extent(extents, f, v)) / W);
            const double max_acc = std::max(8, m.vector_registers / 2);
            size_t i = 1 + sel.size();
            for (; i < pure.size() && !s.rvars.empty() && acc < 4; i++) {
                size_t d = std::find(f.f->args.begin(), f.f->args.end(), pure[i]) - f.f->args.begin();
                int64_t ext = dim_extent(extents, f, d);
                if (!s.pure_parallel[d] || ext < 2 || acc * (double)ext > max_acc) break;
                order.push_back(pure[i]);
                acc *= (double)ext;
            }
            for (size_t j = 1 + sel.size(); j < i; j++) e.loop(n, k, pure[j], ForType::Unrolled);
            for (auto &r : s.rvars) order.push_back(r);
            for (; i < pure.size(); i++) order.push_back(pure[i]);
        }
        if (!s.rvars.empty() || v != 0 || !sel.empty()) e.reorder(n, k, order, rv);
        if (block) {
            std::string x = f.f->args[0], y = f.f->args[1];
            std::string xv = fresh(x, "v", taken);
            e.split(n, k, x, x, xv, W);
            e.loop(n, k, xv, ForType::Vectorized);
            if (bx > W) e.loop(n, k, x, ForType::Unrolled);
            if (by > 1) e.loop(n, k, y, ForType::Unrolled);
            return;
        }
        if (f.region[v].extent >= W) {
            std::string xv = vectorize(e, n, k, f.f->args[v], W, taken);
            if (!sel.empty()) e.reorder(n, k, just_outside(xv, sel, f.f->args[v]), rv);
        }
        for (auto &nm : sel) e.loop(n, k, nm, ForType::Unrolled);
        if (parallel) {
            // The pure loops outside the reduction loops that may run in parallel, from the
            // outermost in, fused into one parallel loop.
            std::vector<std::string> outer;  // innermost first
            double tasks = 1;
            for (int i = (int)order.size() - 1; i >= 1; i--) {
                auto it = std::find(f.f->args.begin(), f.f->args.end(), order[i]);
                if (it == f.f->args.end() || !s.pure_parallel[it - f.f->args.begin()] || is_sel(order[i])) break;
                outer.insert(outer.begin(), order[i]);
                tasks *= (double)f.region[it - f.f->args.begin()].extent;
                if (tasks >= 8 * m.threads) break;
            }
            if (!outer.empty() && tasks >= m.threads) parallel_over(e, n, k, outer, taken);
        }
    }

    void emit_group(Emitter &e, const Group &g, const GroupConfig &c, std::ostringstream &sum) {
        const FuncInfo &root = info.func(g.root);
        const std::string &n = root.name;
        const ConstRegion &R = root.region;
        size_t nd = R.size();
        int W = lanes(root);
        sum << "group " << n;
        if (!g.members.empty()) {
            sum << " (members";
            for (auto &mb : g.members) sum << " " << mb;
            sum << "): " << c.describe();
        }
        sum << ", predicted " << c.cost_ns / 1e6 << " ms\n";
        if (!root.output) e.compute_root(n);
        std::string compute_var, store_var;
        std::string vector_outer;  // the root's loop just outside its vector loop (Placement::Vector)
        if (c.kind == GroupConfig::AllRoot) {
            root_nest(e, root, true);
        } else if (c.kind == GroupConfig::Block && c.blocked == n) {
            blocked_root_nest(e, root, c);
        } else {
            auto taken = loop_names(root, 0);
            std::string x = root.f->args[0], y = root.f->args[1];
            std::string yo = fresh(y, "o", taken), yi = fresh(y, "i", taken);
            std::vector<std::string> outer;
            if (c.strips()) {
                e.split(n, 0, y, yo, yi, c.f1);
                // Slide in columns: each strip is swept column by column.
                std::string xo = c.f0 > 0 ? fresh(x, "o", taken) : "", xi = c.f0 > 0 ? fresh(x, "i", taken) : x;
                if (c.f0 > 0) e.split(n, 0, x, xo, xi, c.f0);
                std::string xv;
                if (R[0].extent >= W) {
                    xv = vectorize(e, n, 0, xi, W, taken);
                    vector_outer = xi;
                }
                size_t from = outer_from(R, c);
                if (from > 2 || c.f0 > 0) {
                    // The small dimensions inside each row of the strip.
                    // (Strips in columns: the small dimensions outside the columns, each
                    // column's rows reading one of them.)
                    bool cols = c.f0 > 0 && c.kind == GroupConfig::Strip;
                    std::vector<std::string> order = {xi};
                    if (!cols)
                        for (size_t d = 2; d < from; d++) order.push_back(root.f->args[d]);
                    order.push_back(yi);
                    if (c.f0 > 0) order.push_back(xo);
                    if (cols)
                        for (size_t d = 2; d < from; d++) order.push_back(root.f->args[d]);
                    order.push_back(yo);
                    if (!cols) unroll_small_inside(e, root, R, from, xv, order);
                    e.reorder(n, 0, order, {});
                }
                outer.push_back(yo);
                for (size_t d = from; d < nd; d++) outer.push_back(root.f->args[d]);
                std::string par = m.threads > 1 ? parallel_over(e, n, 0, outer, taken) : "";
                std::string strip = par.empty() ? yo : par;
                if (par.empty() && outer.size() > 1) {
                    // One loop over strips (and the outer dimensions) all the same.
                    strip = fuse_all(e, n, 0, outer, taken);
                }
                compute_var = c.kind == GroupConfig::Strip ? strip : yi;
                store_var = c.kind == GroupConfig::Rows ? yi : c.f0 > 0 && c.kind == GroupConfig::Slide ? xo : strip;
                if (c.f0 == 0) outer_loop[n] = {strip, "strips of " + std::to_string(c.f1) + (par.empty() ? "" : ", parallel")};
            } else {
                std::string xo = fresh(x, "o", taken), xi = fresh(x, "i", taken);
                e.split(n, 0, x, xo, xi, c.f0);
                e.split(n, 0, y, yo, yi, c.f1);
                size_t from = outer_from(R, c);
                std::vector<std::string> order = {xi, yi};
                for (size_t d = 2; d < from; d++) order.push_back(root.f->args[d]);  // inside each tile
                // (Columns of blocks outside everything: each column's rows inside.)
                order.push_back(c.panel ? yo : xo);
                if (!c.panel) order.push_back(yo);
                for (size_t d = from; d < nd; d++) order.push_back(root.f->args[d]);
                if (c.panel) order.push_back(xo);
                e.reorder(n, 0, order, {});
                std::string xv = fresh(x, "v", taken);
                e.split(n, 0, xi, xi, xv, W);
                e.loop(n, 0, xv, ForType::Vectorized);
                vector_outer = xi;
                if (c.kind != GroupConfig::Block && unroll_small_inside(e, root, R, from, xv, order)) e.reorder(n, 0, order, {});
                if (c.kind == GroupConfig::Block) {
                    if (c.f0 > W) e.loop(n, 0, xi, ForType::Unrolled);
                    if (c.f1 > 1) e.loop(n, 0, yi, ForType::Unrolled);
                }
                // The loops over rows of tiles and the outer dimensions (innermost first), and
                // those of them that run in parallel (for register blocks, only as far out as
                // gives enough tasks).
                std::vector<std::string> rows = {yo};
                std::vector<double> row_extents = {std::ceil((double)R[1].extent / c.f1)};
                for (size_t d = from; d < nd; d++) rows.push_back(root.f->args[d]), row_extents.push_back((double)R[d].extent);
                std::vector<std::string> par = c.kind == GroupConfig::Block ? coarse_block_tasks(rows, row_extents) : rows;
                if (c.panel) {
                    // The columns in parallel where there are enough of them, else the rows of
                    // each column (and the outer dimensions).
                    compute_var = yo;
                    if (m.threads > 1 && panel_columns_parallel(R, c)) {
                        e.loop(n, 0, xo, ForType::Parallel);
                    } else if (m.threads > 1) {
                        std::string v = parallel_over(e, n, 0, par, taken);
                        if (par.size() == rows.size()) compute_var = v;
                    }
                } else {
                    if (m.threads > 1) parallel_over(e, n, 0, par, taken);
                    else if (rows.size() > 1) fuse_all(e, n, 0, rows, taken);
                    compute_var = xo;
                }
                store_var = compute_var;
                if (!c.pack.empty()) {
                    // The operand's panel, packed once per column of blocks (packing comes
                    // with columns outermost: the loop over columns is xo).
                    const FuncInfo &pf = info.func(c.pack);
                    e.compute_at(c.pack, n, xo);
                    auto ptaken = loop_names(pf, 0);
                    int Wp = lanes(pf);
                    if (c.f0 % Wp == 0) vectorize(e, c.pack, 0, pf.f->args[0], Wp, ptaken);
                    sum << "  " << c.pack << ": computed at " << n << "." << xo << " (a packed panel)\n";
                }
            }
        }
        // Members, consumers first in the calls (any order is fine: levels are checked when lowering).
        for (auto &mb : g.members) {
            const FuncInfo &f = info.func(mb);
            const Placement &p = c.where.at(mb);
            if (p.kind == Placement::Root) {
                sum << "  " << mb << ": at root" << (p.why.empty() ? "" : " (" + p.why + ")") << "\n";
                e.compute_root(mb);
                root_nest(e, f, true);
                continue;
            }
            if (p.kind == Placement::Vector && !p.in_member.empty()) {
                // Per vector of its reader, a member: at the loop just outside that one's vector loop.
                const FuncInfo &C = info.func(p.in_member);
                const std::string &at = C.f->args[vd(C)];
                e.compute_at(mb, p.in_member, at);
                sum << "  " << mb << ": computed per vector of " << p.in_member << " (at " << p.in_member << "." << at
                    << "), " << p.redundancy << "x its points\n";
            } else if (p.kind == Placement::Vector && !vector_outer.empty()) {
                // Per vector of the root: its loops one vector wide, the reduction unrolled
                // inside the vector loop (update_nest), the accumulators in registers.
                e.compute_at(mb, n, vector_outer);
                sum << "  " << mb << ": computed per vector of " << n << " (at " << n << "." << vector_outer
                    << "), in registers\n";
            } else if (p.kind == Placement::Slide) {
                e.store_at(mb, n, store_var);
                e.compute_at(mb, n, compute_var);
                sum << "  " << mb << ": stored per strip, computed per row (sliding window), " << p.redundancy
                    << "x its points\n";
            } else {
                std::string at = c.strips() ? store_var : compute_var;
                e.compute_at(mb, n, at);
                sum << "  " << mb << ": computed at " << n << "." << at << ", " << p.redundancy << "x its points\n";
            }
            int Wf = lanes(f);
            bool blocked = c.kind == GroupConfig::Block && mb == c.blocked;
            auto taken = loop_names(f, 0);
            if (blocked) {
                std::string x = f.f->args[0], y = f.f->args[1];
                std::string xv = fresh(x, "v", taken);
                e.split(mb, 0, x, x, xv, Wf);
                e.loop(mb, 0, xv, ForType::Vectorized);
                if (c.f0 > Wf) e.loop(mb, 0, x, ForType::Unrolled);
                if (c.f1 > 1) e.loop(mb, 0, y, ForType::Unrolled);
                for (size_t k = 1; k < f.stages.size(); k++) update_nest(e, f, (int)k, false, c.f0, c.f1, p.footprint);
            } else {
                int v = vd(f);
                vector_dim_innermost(e, f, v);
                if ((int)p.footprint.size() > v && p.footprint[v].extent >= Wf)
                    unroll_select_dims(e, f, p.footprint, vectorize(e, mb, 0, f.f->args[v], Wf, taken));
                for (size_t k = 1; k < f.stages.size(); k++) update_nest(e, f, (int)k, false, 0, 0, p.footprint);
            }
        }
    }

    /** One stage as GPU blocks and threads: dimension 0 (and 1) tiled by tx (x ty) threads,
        the dimensions outside fused into a third block dimension. */
    std::vector<std::string> gpu_nest(Emitter &e, const FuncInfo &f, int k, int tx, int ty, std::ostringstream &sum) {
        const StageInfo &s = f.stages[k];
        const std::string &n = f.name;
        size_t nd = f.f->args.size();
        if (nd == 0) {
            if (k == 0) {
                Directive d = e.base(Directive::SingleThread, n, 0);
                e.calls.push_back(d);
            }
            return {};
        }
        // The pure dimensions this stage may spread over threads, from the innermost.
        std::vector<size_t> dims;
        for (size_t d = 0; d < nd; d++)
            if (s.loops_over[d] && s.pure_parallel[d]) dims.push_back(d);
            else if (k > 0 && s.loops_over[d]) break;  // a serial dependence along it: stop there
        if (dims.empty() || dims[0] != 0) {
            sum << "  " << stage_name_of(f, k) << ": on the host (no loop that may run in parallel)\n";
            return {};
        }
        auto taken = loop_names(f, k);
        std::string x = f.f->args[0];
        int64_t fx = pow2_at_most(f.region[0].extent, dims.size() > 1 ? tx : tx * ty);
        std::string xo = fresh(x, "o", taken), xi = fresh(x, "i", taken);
        e.split(n, k, x, xo, xi, fx);
        std::vector<std::string> blocks = {xo}, threads = {xi};
        if (dims.size() > 1 && dims[1] == 1) {
            std::string y = f.f->args[1];
            int64_t fy = pow2_at_most(f.region[1].extent, ty);
            std::string yo = fresh(y, "o", taken), yi = fresh(y, "i", taken);
            e.split(n, k, y, yo, yi, fy);
            std::set<std::string> rv(s.rvars.begin(), s.rvars.end());
            e.reorder(n, k, {xi, yi, xo, yo}, rv);
            threads.push_back(yi);
            blocks.push_back(yo);
            // Outer pure dimensions that may run in parallel: one more block dimension.
            std::vector<std::string> outer;
            for (size_t i = 2; i < dims.size() && dims[i] == i; i++) outer.push_back(f.f->args[i]);
            if (!outer.empty()) blocks.push_back(fuse_all(e, n, k, outer, taken));
        }
        for (auto &t : threads) e.loop(n, k, t, ForType::GPUThread);
        for (auto &b : blocks) e.loop(n, k, b, ForType::GPUBlock);
        sum << "  " << stage_name_of(f, k) << ": blocks over";
        for (auto &b : blocks) sum << " " << b;
        sum << ", threads over";
        for (auto &t : threads) sum << " " << t;
        sum << "\n";
        return blocks;
    }
    static std::string stage_name_of(const FuncInfo &f, int k) {
        return k == 0 ? f.name : f.name + ".update(" + std::to_string(k - 1) + ")";
    }

    /** The inputs and Funcs the group reads from outside it. */
    std::set<std::string> group_reads(const Group &g) {
        std::set<std::string> inside(g.members.begin(), g.members.end()), out;
        inside.insert(g.root);
        for (auto &n : inside)
            for (auto &op : operands_of(info.func(n), 0))
                if (!inside.count(op)) out.insert(op);
        return out;
    }

    /** The Funcs `from` feeds (through consumers), itself included. */
    std::set<std::string> downstream(const std::string &from) const {
        std::set<std::string> seen;
        std::vector<std::string> work{from};
        while (!work.empty()) {
            std::string n = work.back();
            work.pop_back();
            if (!seen.insert(n).second || !info.index.count(n)) continue;
            for (auto &c : info.func(n).consumers) work.push_back(c);
        }
        return seen;
    }

    /** Horizontal fusion: two groups one after the other whose roots are at root with the
        same Vars, region and outer loops (every member at root, or strips of the same height),
        that do not feed each other and read a common operand too large to stay in L2 between
        the two passes, run in one pass: the second's outer loop fused with the first's
        (compute_with), so each block of rows of the operand is read from memory once. Returns
        the time saved (the second read). */
    double horizontal(Emitter &e, std::ostringstream &sum) {
        double saved = 0;
        for (size_t gi = 1; gi < groups.size(); gi++) {
            const Group &a = groups[gi - 1], &b = groups[gi];
            auto ia = outer_loop.find(a.root), ib = outer_loop.find(b.root);
            // (the same loop names and shapes: compute_with fuses loops of the same names)
            if (ia == outer_loop.end() || ib == outer_loop.end() || ia->second != ib->second) continue;
            const FuncInfo &fa = info.func(a.root), &fb = info.func(b.root);
            if (fa.has_updates() || fb.has_updates() || fa.f->args != fb.f->args || fa.region.size() != fb.region.size())
                continue;
            bool same = true;
            for (size_t d = 0; d < fa.region.size(); d++)
                same = same && fa.region[d].min == fb.region[d].min && fa.region[d].extent == fb.region[d].extent;
            if (!same || vd(fa) != vd(fb) || lanes(fa) != lanes(fb)) continue;
            bool dependent = false;
            std::set<std::string> fed = downstream(a.root);
            dependent = fed.count(b.root) > 0;
            for (auto &n : b.members) dependent = dependent || fed.count(n);
            std::set<std::string> ra = group_reads(a), rb = group_reads(b);
            for (auto &n : a.members) dependent = dependent || rb.count(n);
            if (dependent) continue;
            double bytes = 0;
            std::string common;
            for (auto &op : ra) {
                ConstRegion whole;
                double eb = 4;
                if (!rb.count(op) || !whole_region(op, &whole, &eb)) continue;
                double by = region_points(whole) * eb;
                if (by > bytes) {
                    bytes = by;
                    common = op;
                }
            }
            if (bytes <= m.l2_bytes) continue;
            e.compute_with(b.root, a.root, ia->second.first);
            saved += bytes / bandwidth_for(bytes);
            sum << "horizontal: " << b.root << " computed with " << a.root << " at " << ia->second.first << " ("
                << ia->second.second << "): both read " << common << ", " << bytes / 1048576 << " MiB, once\n";
            outer_loop.erase(b.root);  // (one partner each)
        }
        return saved;
    }

    PlanCandidate emit(const std::vector<int> &choice, bool fuse_horizontally = true) {
        Emitter e;
        std::ostringstream sum;
        sum << log.str();
        double total = 0;
        outer_loop.clear();
        for (size_t gi = 0; gi < groups.size(); gi++) {
            const GroupConfig &c = groups[gi].configs[choice[gi]];
            total += c.cost_ns;
            emit_group(e, groups[gi], c, sum);
        }
        if (fuse_horizontally) total -= horizontal(e, sum);
        PlanCandidate pc;
        pc.calls = e.calls;
        pc.predicted_ms = total / 1e6;
        pc.summary = sum.str();
        return pc;
    }
};

}  // namespace

/** The coefficient of x in e where e is x times a constant plus terms without x (x + 1, 2x - 1,
    3 - x); 0 where e does not use x; nullopt for anything else (x / 2, x * x, a load). */
std::optional<int64_t> stride_in(const Expr &e, const std::string &x) {
    if (!expr_uses_var(e, x)) return 0;
    if (auto v = e.as<Variable>()) return v->name == x ? std::optional<int64_t>(1) : std::nullopt;
    if (auto a = e.as<Add>()) {
        auto l = stride_in(a->a, x), r = stride_in(a->b, x);
        if (l && r) return *l + *r;
        return std::nullopt;
    }
    if (auto a = e.as<Sub>()) {
        auto l = stride_in(a->a, x), r = stride_in(a->b, x);
        if (l && r) return *l - *r;
        return std::nullopt;
    }
    if (auto m = e.as<Mul>()) {
        int64_t c;
        if (is_const_int(m->b, &c)) {
            auto l = stride_in(m->a, x);
            if (l) return *l * c;
        }
        if (is_const_int(m->a, &c)) {
            auto r = stride_in(m->b, x);
            if (r) return *r * c;
        }
    }
    if (auto c = e.as<Cast>()) return stride_in(c->value, x);
    return std::nullopt;
}

namespace {
/** Is e a sum of terms without x and constant multiples of divisions and remainders of x + k by
    constants from 2 to 8 (counted in *n): a bilinear upsampling's x / 2 - 1 + 2 * (x % 2)? */
bool divisions_of_x(const Expr &e, const std::string &x, int *n) {
    if (!expr_uses_var(e, x)) return true;
    if (auto a = e.as<Add>()) return divisions_of_x(a->a, x, n) && divisions_of_x(a->b, x, n);
    if (auto a = e.as<Sub>()) return divisions_of_x(a->a, x, n) && divisions_of_x(a->b, x, n);
    int64_t c = 0;
    if (auto m = e.as<Mul>()) {
        if (is_const_int(m->b, &c)) return divisions_of_x(m->a, x, n);
        if (is_const_int(m->a, &c)) return divisions_of_x(m->b, x, n);
        return false;
    }
    const Expr *num = nullptr, *den = nullptr;
    if (auto d = e.as<Div>()) num = &d->a, den = &d->b;
    if (auto d = e.as<Mod>()) num = &d->a, den = &d->b;
    if (!num || !is_const_int(*den, &c) || c < 2 || c > 8) return false;
    auto k = stride_in(*num, x);
    if (!k || *k != 1) return false;
    (*n)++;
    return true;
}
}  // namespace

double load_vector_efficiency(const Expr &index0, const std::string &x) {
    if (!expr_uses_var(index0, x)) return 0.35;  // x moves another dimension: a gather
    auto k = stride_in(index0, x);
    if (k && (*k == 1 || *k == -1)) return 1.0;                      // dense (reversed: and a permute)
    if (k && std::abs(*k) >= 2 && std::abs(*k) <= 4) return 0.7;     // |k| dense loads and a shuffle
    if (auto dv = index0.as<Div>()) {
        int64_t c = 0;
        auto kn = stride_in(dv->a, x);
        if (kn && *kn == 1 && is_const_int(dv->b, &c) && c >= 2 && c <= 4) return 0.85;  // a load and a permute
    }
    // Sums of divisions and remainders of x by constants: a dense load of the range every
    // remainder of the vector's first index reads (a few elements alone) and a permute per
    // remainder, chosen by a select.
    int n = 0;
    if (divisions_of_x(index0, x, &n) && n > 0) return 0.8;
    return 0.35;  // a gather
}

MachineParams machine_params(const Target &t, int threads) {
    MachineParams m;
    m.threads = std::max(1, threads);
    m.vector_bytes = t.natural_vector_size(UInt(8));
    m.vector_registers = t.has_feature("avx512f") ? 32 : 16;
    for (int i = 0; i < 8; i++) {
        int level = 0, ways = 0;
        int64_t size = read_cache_size(i, &level, &ways);
        if (size <= 0) continue;
        if (level == 1) m.l1_bytes = (double)size;
        if (level == 2) m.l2_bytes = (double)size;
        if (level == 2 && ways > 0) m.l2_ways = ways;
        if (level == 3) m.l3_bytes = (double)size;
    }
    return m;
}

std::vector<PlanCandidate> plan_schedules(const PipelineInfo &info, const Target &t, const MachineParams &m, int max,
                                          const PlanHints &hints, std::vector<CopyOpportunity> *copies) {
    Planner p(info, t, m);
    if (t.arch() == Target::Arch::CUDA) return p.run_gpu(std::max(1, max));
    p.hints = hints;
    std::vector<PlanCandidate> out = p.run(std::max(1, max));
    if (copies) *copies = p.copy_opportunities();
    return out;
}

std::string plan_family(const std::vector<Directive> &calls) {
    std::string key;
    for (const Directive &d : calls) {
        const char *op = nullptr;
        switch (d.op) {
        case Directive::ComputeRoot: op = "root"; break;
        case Directive::ComputeInline: op = "inline"; break;
        case Directive::ComputeAt: op = "at"; break;
        case Directive::StoreRoot: op = "store_root"; break;
        case Directive::StoreAt: op = "store_at"; break;
        case Directive::Wrap: op = "wrap"; break;
        default: break;
        }
        if (!op) continue;
        key += std::string(op) + " " + d.func;
        // (The level's Func; its loop's name depends on the tiles, so it is left out.)
        if ((d.op == Directive::ComputeAt || d.op == Directive::StoreAt) && !d.names.empty()) key += " " + d.names[0];
        if (d.op == Directive::Wrap)
            for (auto &n : d.names) key += " " + n;
        key += ";";
    }
    return key;
}

int choose_finalist(const std::map<int, double> &again, const std::vector<double> &first_readings, double *margin) {
    auto ok = [](double ms) { return std::isfinite(ms) && ms > 0; };
    int fastest = -1;
    for (auto &[i, ms] : again)
        if (ok(ms) && (fastest < 0 || ms < again.at(fastest))) fastest = i;
    // The noise: how far the median reading of the first choice is above its fastest (a median,
    // so that one slow moment of a shared machine, a reading twice the others, does not decide).
    std::vector<double> v;
    for (double ms : first_readings)
        if (ok(ms)) v.push_back(ms);
    std::sort(v.begin(), v.end());
    const double noise = std::max(0.03, v.empty() ? 0.0 : v[v.size() / 2] / v[0] - 1);
    if (margin) *margin = noise;
    auto first = again.find(0);
    if (fastest >= 0 && first != again.end() && ok(first->second) && first->second <= (1 + noise) * again.at(fastest))
        return 0;
    return fastest;
}

int next_candidate_to_measure(const std::vector<double> &predicted_ms, const std::vector<std::string> &family,
                              const std::vector<double> &measured_ms, const std::vector<bool> &tried) {
    const size_t n = predicted_ms.size();
    if (n == 0) return -1;
    if (!tried[0]) return 0;
    // log(measured / predicted), summed by family and over all.
    std::map<std::string, std::pair<double, int>> by_family;
    double all = 0;
    int count = 0;
    for (size_t i = 0; i < n; i++) {
        double m = measured_ms[i], p = predicted_ms[i];
        if (!(m > 0) || !(p > 0) || !std::isfinite(m) || !std::isfinite(p)) continue;
        double r = std::log(m / p);
        auto &f = by_family[family[i]];
        f.first += r;
        f.second++;
        all += r;
        count++;
    }
    const double global = count ? all / count : 0;
    int best = -1;
    double best_ms = 0;
    for (size_t i = 0; i < n; i++) {
        if (tried[i]) continue;
        auto it = by_family.find(family[i]);
        double corr = it != by_family.end() ? it->second.first / it->second.second : global;
        double c = predicted_ms[i] * std::exp(corr);
        if (!std::isfinite(c)) c = INFINITY;  // (no prediction: after those that have one)
        if (best < 0 || c < best_ms) {  // (ties: the earlier, as the model ranked them)
            best = (int)i;
            best_ms = c;
        }
    }
    return best;
}

}  // namespace internal
}  // namespace weft
