// Stage::gpu_mma: a warp's 16 x 8 x 16 multiply-add on tensor cores (see Mma.h).
#include "lower/gpu/Mma.h"
#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <set>
#include "ir/Evaluate.h"
#include "ir/IRVisitor.h"
#include "lower/gpu/Common.h"
#include "lower/gpu/InjectGPU.h"

namespace weft {
namespace internal {

namespace {

struct MmaSpec {
    std::string user, prefix;
    std::array<std::string, 3> loops;  // i, j, k as the directive names them
    bool found = false;
    std::string call() const { return "Func \"" + user + "\".gpu_mma(" + loops[0] + ", " + loops[1] + ", " + loops[2] + ")"; }
};

/** The GPUThread loops in s that are not inside another GPUThread loop of s. */
class TopThreadLoops : public IRVisitor {
public:
    std::vector<const For *> loops;

protected:
    void visit(const For *op) override {
        if (op->for_type == ForType::GPUThread) loops.push_back(op);
        else IRVisitor::visit(op);
    }
};

std::vector<const For *> top_thread_loops(const Stmt &s) {
    TopThreadLoops t;
    t.include(s);
    return t.loops;
}

/** The thread loop op's dimension: the GPUThread loops nested in it on the deepest path
    (innermost x, as inject_gpu maps them). */
void record_block_dims(const For *op, int64_t dims[3]) {
    gpu::ThreadDepth inside;
    inside.include(op->body);
    int d = inside.max_depth;
    int64_t e = 0;
    if (d <= 2 && is_const_int(unwrap_extent(op->extent), &e)) dims[d] = std::max(dims[d], e);
    for (auto *c : top_thread_loops(op->body)) record_block_dims(c, dims);
}

class LowerMma : public IRMutator {
public:
    explicit LowerMma(std::vector<MmaSpec> &specs) : specs(specs) {}

protected:
    std::vector<MmaSpec> &specs;
    const For *kernel = nullptr;
    int64_t block[3] = {1, 1, 1};
    std::vector<const For *> threads;                         // enclosing GPUThread loops, outermost first
    std::vector<std::pair<std::string, Expr>> kernel_lets;    // enclosing lets inside the kernel
    int conditions = 0;                                       // enclosing ifs inside the kernel

    Stmt visit(const For *op, const Stmt &s) override {
        if (op->for_type == ForType::GPUBlock && !kernel) {
            kernel = op;
            block[0] = block[1] = block[2] = 1;
            for (auto *t : top_thread_loops(op->body)) record_block_dims(t, block);
            Stmt r = IRMutator::visit(op, s);
            kernel = nullptr;
            return r;
        }
        if (op->for_type == ForType::GPUThread) {
            threads.push_back(op);
            Stmt r = IRMutator::visit(op, s);
            threads.pop_back();
            return r;
        }
        for (auto &sp : specs)
            for (auto &l : sp.loops)
                if (op->name == sp.prefix + l) return replace(sp, s);
        return IRMutator::visit(op, s);
    }
    Stmt visit(const LetStmt *op, const Stmt &s) override {
        if (!kernel) return IRMutator::visit(op, s);
        kernel_lets.push_back({op->name, op->value});
        Stmt r = IRMutator::visit(op, s);
        kernel_lets.pop_back();
        return r;
    }
    Stmt visit(const IfThenElse *op, const Stmt &s) override {
        conditions += kernel != nullptr;
        Stmt r = IRMutator::visit(op, s);
        conditions -= kernel != nullptr;
        return r;
    }

    Stmt replace(MmaSpec &sp, const Stmt &s) {
        auto fail = [&](const std::string &why) { user_error("weft: " + sp.call() + ": " + why); };
        if (!kernel || threads.empty())
            fail("the loops are not inside a GPU kernel's gpu_threads loops (tensor cores are a warp's: schedule "
                 "gpu_blocks and gpu_threads around them)");
        if (conditions)
            fail("the loops are inside a condition (a tail's guard or a specialization in the kernel): every thread "
                 "of a warp must take part; choose tiles that divide the extents");
        // The three loops, directly nested, then the update.
        std::vector<std::pair<std::string, Expr>> lets;
        std::map<std::string, const For *> loop_of;  // "i", "j", "k" -> loop
        Stmt cur = s;
        for (int n = 0; n < 3; n++) {
            while (auto l = cur.as<LetStmt>()) {
                lets.push_back({l->name, l->value});
                cur = l->body;
            }
            auto f = cur.as<For>();
            int which = -1;
            for (int q = 0; q < 3 && f; q++)
                if (f->name == sp.prefix + sp.loops[q]) which = q;
            if (which < 0 || loop_of.count(sp.loops[which]))
                fail("the three loops must be the stage's innermost loops, directly nested (reorder them innermost; "
                     "other loops of the stage go outside them)");
            loop_of[sp.loops[which]] = f;
            cur = f->body;
        }
        while (auto l = cur.as<LetStmt>()) {
            lets.push_back({l->name, l->value});
            cur = l->body;
        }
        const Store *st = cur.as<Store>();
        if (!st || st->value.type() != Float(32))
            fail("the innermost loop's body is not the update's store alone: a tail's guard (choose tiles that divide the "
                 "extents), a vectorized loop among the three, or a traced store?");
        const For *li = loop_of[sp.loops[0]], *lj = loop_of[sp.loops[1]], *lk = loop_of[sp.loops[2]];
        int64_t ei = 0, ej = 0, ek = 0;
        if (!is_const_int(unwrap_extent(li->extent), &ei) || !is_const_int(unwrap_extent(lj->extent), &ej) ||
            !is_const_int(unwrap_extent(lk->extent), &ek) || ei != 2 || ej != 2 || ek != 16)
            fail("i and j must have 2 iterations and k 16 (the m16n8k16 instruction: a warp's 32 threads times i x j "
                 "make the 16 x 8 tile); they have " + to_string(unwrap_extent(li->extent)) + ", " +
                 to_string(unwrap_extent(lj->extent)) + " and " + to_string(unwrap_extent(lk->extent)));
        sp.found = true;

        // Everything in terms of the loops' variables: the lets inside the kernel inlined.
        auto inline_lets = [&](Expr e) {
            for (auto it = lets.rbegin(); it != lets.rend(); ++it) e = substitute(it->first, it->second, e);
            for (auto it = kernel_lets.rbegin(); it != kernel_lets.rend(); ++it) e = substitute(it->first, it->second, e);
            return e;
        };
        Expr value = inline_lets(st->value), index = inline_lets(st->index);
        auto is_acc = [&](const Expr &e) {
            auto l = e.as<Load>();
            return l && l->name == st->name && l->type == Float(32) && equal(l->index, index);
        };
        auto operand = [](const Expr &e) -> Expr {
            auto c = e.as<Cast>();
            if (!c || c->type != Float(32)) return Expr();
            auto l = c->value.as<Load>();
            return l && l->type.is_16bit_float() && l->type.is_scalar() ? c->value : Expr();
        };
        Expr pa_e, pb_e;
        if (auto c = value.as<Call>()) {
            if (c->is_intrinsic("fma") && c->args.size() == 3 && is_acc(c->args[2]))
                pa_e = operand(c->args[0]), pb_e = operand(c->args[1]);
        } else if (auto a = value.as<Add>()) {
            for (int side = 0; side < 2; side++) {
                const Expr &acc = side ? a->b : a->a, &prod = side ? a->a : a->b;
                auto m = prod.as<Mul>();
                if (is_acc(acc) && m) pa_e = operand(m->a), pb_e = operand(m->b);
            }
        }
        const Load *pa = pa_e.as<Load>(), *pb = pb_e.as<Load>();
        if (!pa || !pb || pa->type != pb->type)
            fail("after lowering, the update is not acc = acc + float(a) * float(b) with a and b loads of one 16-bit "
                 "float type (an operand computed inline, or of another type?): " + to_string(value));

        // Thread dimensions: the stage's thread loops must be the block's, all of it.
        const int nt = (int)threads.size();
        if (nt > 3) fail("more than three gpu_threads loops");
        std::string tv[3];
        Expr tmin[3];
        int64_t te[3] = {1, 1, 1};
        for (int d = 0; d < nt; d++) {
            const For *t = threads[nt - 1 - d];
            tv[d] = t->name;
            tmin[d] = t->min;
            if (!is_const_int(unwrap_extent(t->extent), &te[d])) fail("a gpu_threads loop's extent is not a constant");
        }
        for (int d = 0; d < 3; d++)
            if (te[d] != block[d])
                fail("every thread of the block must take part, but the stage's gpu_threads loops have extents (" +
                     std::to_string(te[0]) + ", " + std::to_string(te[1]) + ", " + std::to_string(te[2]) +
                     ") and the kernel's block (" + std::to_string(block[0]) + ", " + std::to_string(block[1]) + ", " +
                     std::to_string(block[2]) + ")");
        const int64_t nthreads = block[0] * block[1] * block[2];
        if (nthreads % 32) fail("the block has " + std::to_string(nthreads) + " threads, not whole warps of 32");

        // Evaluate the indices at every lane and iteration of a few warps, the other variables
        // given arbitrary values (twice, with other values, for the first warp).
        const std::string iv = li->name, jv = lj->name, kv = lk->name;
        std::set<std::string> bound = {iv, jv, kv};
        for (int d = 0; d < nt; d++) bound.insert(tv[d]);
        gpu::FreeVars vn;
        for (const Expr &e : {index, pa->index, pb->index, li->min, lj->min, lk->min}) vn.include(e);
        for (int d = 0; d < nt; d++) vn.include(tmin[d]);
        auto env_for = [&](uint64_t seed) {
            std::map<std::string, int64_t> env;
            for (auto &n : vn.names)
                if (!bound.count(n)) env[n] = 7 + (int64_t)((std::hash<std::string>()(n) * seed) % 997);
            return env;
        };
        struct Sample {
            int64_t acc, a, b;
        };
        // samples[L][s][kk]: s = i's iteration * 2 + j's.
        using Warp = std::vector<std::array<std::array<Sample, 16>, 4>>;
        auto sample_warp = [&](int64_t w, uint64_t seed) {
            Warp out(32);
            std::map<std::string, int64_t> env = env_for(seed);
            int64_t imin = evaluate_int(li->min, env), jmin = evaluate_int(lj->min, env), kmin = evaluate_int(lk->min, env);
            int64_t tm[3] = {0, 0, 0};
            for (int d = 0; d < nt; d++) tm[d] = evaluate_int(tmin[d], env);
            for (int L = 0; L < 32; L++) {
                int64_t lin = w * 32 + L, tid[3] = {lin % block[0], lin / block[0] % block[1], lin / (block[0] * block[1])};
                for (int d = 0; d < nt; d++) env[tv[d]] = tm[d] + tid[d];
                for (int s = 0; s < 4; s++) {
                    env[iv] = imin + s / 2;
                    env[jv] = jmin + s % 2;
                    for (int kk = 0; kk < 16; kk++) {
                        env[kv] = kmin + kk;
                        out[L][s][kk] = {evaluate_int(index, env), evaluate_int(pa->index, env), evaluate_int(pb->index, env)};
                    }
                }
            }
            return out;
        };
        // Does (perm: s -> accumulator register, a_is_rows) describe the warp?
        auto fits = [&](const Warp &W, const std::array<int, 4> &perm, bool a_rows) {
            std::map<std::pair<int, int>, int64_t> rows, cols;
            std::set<int64_t> elems;
            for (int L = 0; L < 32; L++)
                for (int s = 0; s < 4; s++) {
                    int r = perm[s], row = L / 4 + 8 * (r / 2), col = 2 * (L % 4) + r % 2;
                    if (!elems.insert(W[L][s][0].acc).second) return false;
                    for (int kk = 0; kk < 16; kk++) {
                        const Sample &x = W[L][s][kk];
                        if (x.acc != W[L][s][0].acc) return false;
                        int64_t ra = a_rows ? x.a : x.b, cb = a_rows ? x.b : x.a;
                        auto ir = rows.emplace(std::make_pair(row, kk), ra);
                        if (!ir.second && ir.first->second != ra) return false;
                        auto ic = cols.emplace(std::make_pair(col, kk), cb);
                        if (!ic.second && ic.first->second != cb) return false;
                    }
                }
            return true;
        };
        std::array<int, 4> perm = {0, 1, 2, 3};
        bool a_rows = true, found = false;
        const int64_t warps = nthreads / 32;
        try {
            Warp w0 = sample_warp(0, 1);
            std::array<int, 4> p = {0, 1, 2, 3};
            do {
                for (int ar = 1; ar >= 0 && !found; ar--)
                    if (fits(w0, p, ar)) perm = p, a_rows = ar, found = true;
            } while (!found && std::next_permutation(p.begin(), p.end()));
            if (found) {
                found = fits(sample_warp(0, 2), perm, a_rows);
                for (int64_t w : {(int64_t)1, warps - 2, warps - 1})
                    if (found && w > 0 && w < warps) found = fits(sample_warp(w, 1), perm, a_rows);
            }
        } catch (const Error &e) {
            fail(std::string("an index could not be evaluated for the layout check (") + e.what() + ")");
        }
        if (!found)
            fail("the threads of a warp and their i x j iterations are not the 16 x 8 tile of mma.sync's accumulator "
                 "layout, or an operand depends on more than its row (or column) and k. In the layout, lane l (the "
                 "thread's index in the block, mod 32) holds rows l/4 and l/4 + 8 and columns 2(l%4) and 2(l%4) + 1: "
                 "e.g. split the columns x into xl (4 threads) and xv (2: j), the rows y into yh (2: i) and yl (8 "
                 "threads), gpu_threads(xl, yl), and k innermost");

        // The fragments: lane l = lin % 32 with g = l / 4 and t = l % 4 holds
        //   a[e + 2h + 4f] = A(row g + 8h, k 2t + e + 8f), b[e + 2f] = B(k 2t + e + 8f, column g),
        //   c[e + 2h] = C(row g + 8h, column 2t + e).
        int inv[4];
        for (int s = 0; s < 4; s++) inv[perm[s]] = s;
        Expr tid[3];
        for (int d = 0; d < 3; d++) tid[d] = d < nt ? Variable::make(Int(32), tv[d]) - tmin[d] : Expr(0);
        Expr lin = tid[0] + (int)block[0] * (tid[1] + (int)block[1] * tid[2]);
        Expr lane = lin % 32, g = lane / 4, t = lane % 4;
        // A thread holding column g: lane 4g + g/2 (its columns are 2(g/2) + {0, 1}), at the
        // accumulator register g % 2 (the column's parity).
        Expr lin_b = lin - lane + (g * 4 + g / 2);
        std::map<std::string, Expr> threads_b;
        for (int d = 0; d < nt; d++) {
            int64_t below = d == 0 ? 1 : d == 1 ? block[0] : block[0] * block[1];
            threads_b[tv[d]] = tmin[d] + (lin_b / (int)below) % (int)block[d];
        }
        auto at = [&](std::map<std::string, Expr> m, Expr i_it, Expr j_it, Expr kk) {
            m[iv] = li->min + i_it;
            m[jv] = lj->min + j_it;
            m[kv] = lk->min + kk;
            return m;
        };
        Expr a_op = a_rows ? pa_e : pb_e, b_op = a_rows ? pb_e : pa_e;
        std::vector<Expr> c(4), af(8), bf(4);
        for (int r = 0; r < 4; r++)
            c[r] = Load::make(Float(32), st->name, substitute(at({}, inv[r] / 2, inv[r] % 2, 0), index));
        for (int f = 0; f < 2; f++)
            for (int h = 0; h < 2; h++)
                for (int e = 0; e < 2; e++) {
                    int s = inv[2 * h];
                    af[e + 2 * h + 4 * f] = substitute(at({}, s / 2, s % 2, t * 2 + (e + 8 * f)), a_op);
                }
        Expr even = g % 2 == 0;
        Expr b_i = select(even, inv[0] / 2, inv[1] / 2), b_j = select(even, inv[0] % 2, inv[1] % 2);
        for (int f = 0; f < 2; f++)
            for (int e = 0; e < 2; e++) bf[e + 2 * f] = substitute(at(threads_b, b_i, b_j, t * 2 + (e + 8 * f)), b_op);
        std::vector<Expr> args = c;
        args.insert(args.end(), af.begin(), af.end());
        args.insert(args.end(), bf.begin(), bf.end());
        args.push_back(lin);
        return Evaluate::make(Call::make_intrinsic(Int(32), "gpu_mma_m16n8k16", args));
    }
};

class HasLoopWithPrefix : public IRVisitor {
public:
    explicit HasLoopWithPrefix(const std::string &p) : prefix(p) {}
    bool found = false;

protected:
    std::string prefix;
    void visit(const For *op) override {
        found |= op->name.compare(0, prefix.size(), prefix) == 0;
        IRVisitor::visit(op);
    }
};

}  // namespace

Stmt lower_gpu_mma(const Stmt &s, const Env &env) {
    std::vector<MmaSpec> specs;
    for (auto &f : env.funcs)
        for (size_t k = 1; k < f.stages.size(); k++) {
            std::vector<const StageSchedule *> scheds = {&f.stages[k].sched};
            for (auto &sp : f.stages[k].specs) scheds.push_back(&sp.second);
            for (auto *sc : scheds)
                if (sc->mma.size() == 3) {
                    MmaSpec m;
                    m.user = f.contents ? f.contents->name : f.name;
                    m.prefix = f.name + ".s" + std::to_string(k) + ".";
                    m.loops = {sc->mma[0], sc->mma[1], sc->mma[2]};
                    specs.push_back(m);
                    break;  // (a specialization's loops have the same names)
                }
        }
    if (specs.empty()) return s;
    Stmt r = LowerMma(specs).mutate(s);
    for (auto &sp : specs) {
        HasLoopWithPrefix h(sp.prefix);
        h.include(r);
        if (!sp.found && h.found)
            user_error("weft: " + sp.call() + ": the loops were not found in the stage's loop nest (renamed by a later "
                       "split or fuse?)");
    }
    return r;
}

}  // namespace internal
}  // namespace weft
