// Property tests for the CPU-speed schedules: random legal schedules that use in() wrappers,
// reorder_storage, rfactor, specialize, prefetch and store_nontemporal never change results.
//
// (a) matmul C(i, j) += A(k, j) * B(i, k), out = C * 2 + 1: the schedule may wrap A and/or B with
//     in() (for every consumer or for the one that reads it), computed at root, at a loop of the
//     reading Func or at a loop of the output, with random reorder_storage / vectorize / split;
//     and may rfactor k after a random split (the inner or the outer part becomes a new Var) and
//     schedule the intermediate (root or at a loop of the output; vectorized / parallel).
// (b) a 2-D stencil whose output (and producer) get random specialize() branches on a Param and
//     on the input's shape, each scheduled differently, random prefetches and streaming stores; every trial runs
//     with several values of the Param.
// (c) a per-channel histogram hist(c, bin(in(r.x, r.y, c))) += w, factored at its computed index
//     (rfactor of r.x, r.y or a part of a split of either into u; sometimes two RVars), with the
//     intermediate and the merge at root or at the output's channel loop, random splits, and
//     vectorize / parallel over u, c or the bin.
// Every output element is compared with the reference interpreter's result for the same algorithm
// without a schedule (ints exactly; floats to 1e-4 relative, rfactor reassociates sums).
// Seeds are fixed; a failure prints the seed, the sizes and every scheduling call.
// WEFT_PROPERTY_VERBOSE=1 prints each trial before running it; WEFT_CPU_FEATURES_TRIALS=<n>
// changes the number of trials per pipeline (defaults: 80 matmul, half int and half float;
// 60 stencil).
#include "property/random_util.h"
#include <gtest/gtest.h>
#include <weft/weft.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "interp/Interpreter.h"
#include "pipeline/PipelineInternal.h"
#include "lang/Function.h"

using namespace weft;

namespace {

int trials(int def) {
    const char *e = std::getenv("WEFT_CPU_FEATURES_TRIALS");
    return e && std::atoi(e) > 0 ? std::atoi(e) : def;
}
bool verbose() { return std::getenv("WEFT_PROPERTY_VERBOSE") != nullptr; }

using weft_test::Rng;

/** A loop of a stage as the generator tracks it (lists are innermost first). */
struct Loop {
    std::string name;
    bool rvar = false;
    bool locked = false;  // vectorized / unrolled: no more ops on it, nothing computed at it
    bool par = false;
};
using Loops = std::vector<Loop>;

VarOrRVar vr(const Loop &l) { return l.rvar ? VarOrRVar(RVar(l.name)) : VarOrRVar(Var(l.name)); }

Loops loops_of(const std::vector<internal::Dim> &dims) {
    Loops r;
    for (auto &d : dims) r.push_back({d.var, d.is_rvar});
    return r;
}

/** Draws random loop schedules (split, tile, reorder, vectorize, unroll, parallel) and records
    them as C++ in `log`. S is Func or Stage (the same scheduling calls on both). */
class LoopGen {
public:
    LoopGen(Rng &r, std::string &log) : r_(r), log_(log) {}

    std::string fresh(const std::string &base) {
        std::string b = base.substr(0, base.find_first_of("$._"));
        if (b.empty()) b = "t";  // wrapper Vars are _0, _1: never reuse that form
        return b + "_" + std::to_string(counter_++);
    }

    std::vector<int> free_loops(const Loops &ls, bool pure_only) {
        std::vector<int> c;
        for (size_t k = 0; k < ls.size(); k++)
            if (!ls[k].locked && !ls[k].par && (!pure_only || !ls[k].rvar)) c.push_back((int)k);
        return c;
    }

    // Structural ops: split (RVars too), tile, reorder keeping RVars in order.
    template <typename S>
    void structure(S &st, const std::string &sn, Loops &ls, int max_ops) {
        int ops = r_.uniform(0, max_ops);
        for (int o = 0; o < ops; o++) {
            int op = r_.uniform(0, 2);
            bool any_locked = std::any_of(ls.begin(), ls.end(), [](const Loop &l) { return l.locked || l.par; });
            if (op == 0) {
                auto cand = free_loops(ls, r_.chance(0.6));
                if (cand.empty()) continue;
                int k = r_.pick(cand);
                Loop l = ls[(size_t)k];
                int f = r_.uniform(1, 8);
                TailStrategy t = r_.chance(0.7) ? TailStrategy::Auto : TailStrategy::GuardWithIf;
                std::string outer = r_.chance(0.3) ? l.name : fresh(l.name), inner = fresh(l.name);
                log_ += sn + ".split(" + l.name + ", " + outer + ", " + inner + ", " + std::to_string(f) + ", " +
                        (t == TailStrategy::Auto ? "Auto" : "GuardWithIf") + ");\n";
                if (l.rvar)
                    st.split(RVar(l.name), RVar(outer), RVar(inner), f, t);
                else
                    st.split(Var(l.name), Var(outer), Var(inner), f, t);
                Loop lo = l, li = l;
                lo.name = outer;
                li.name = inner;
                ls[(size_t)k] = li;
                ls.insert(ls.begin() + k + 1, lo);
            } else if (op == 1) {
                if (ls.size() < 2 || any_locked) continue;
                Loops perm = ls;
                std::shuffle(perm.begin(), perm.end(), r_.g);
                Loops rv;
                for (auto &l : ls)
                    if (l.rvar) rv.push_back(l);
                size_t ri = 0;
                for (auto &l : perm)
                    if (l.rvar) l = rv[ri++];
                std::vector<VarOrRVar> args;
                std::string d;
                for (auto &l : perm) {
                    args.push_back(vr(l));
                    d += (d.empty() ? "" : ", ") + l.name;
                }
                log_ += sn + ".reorder(" + d + ");\n";
                st.reorder(args);
                ls = perm;
            } else {
                auto cand = free_loops(ls, true);
                if (cand.size() < 2 || any_locked) continue;
                int a = r_.pick(cand), b = a;
                while (b == a) b = r_.pick(cand);
                if (a > b) std::swap(a, b);  // a inner, b outer
                Loop la = ls[(size_t)a], lb = ls[(size_t)b];
                int fx = r_.uniform(1, 8), fy = r_.uniform(1, 8);
                std::string ao = fresh(la.name), bo = fresh(lb.name), ai = fresh(la.name), bi = fresh(lb.name);
                log_ += sn + ".tile(" + la.name + ", " + lb.name + ", " + ao + ", " + bo + ", " + ai + ", " + bi + ", " +
                        std::to_string(fx) + ", " + std::to_string(fy) + ");\n";
                st.tile(Var(la.name), Var(lb.name), Var(ao), Var(bo), Var(ai), Var(bi), fx, fy);
                // weft's tile: split a, split b, then (ai, bi, ao, bo) into their slots.
                Loop lai = la, lao = la, lbi = lb, lbo = lb;
                lai.name = ai;
                lao.name = ao;
                lbi.name = bi;
                lbo.name = bo;
                ls[(size_t)a] = lai;
                ls.insert(ls.begin() + a + 1, lao);
                int bpos = 0;
                for (size_t k = 0; k < ls.size(); k++)
                    if (ls[k].name == lb.name) bpos = (int)k;
                ls[(size_t)bpos] = lbi;
                ls.insert(ls.begin() + bpos + 1, lbo);
                std::vector<int> slots;
                for (size_t k = 0; k < ls.size(); k++)
                    if (ls[k].name == ai || ls[k].name == ao || ls[k].name == bi || ls[k].name == bo) slots.push_back((int)k);
                Loops order = {lai, lbi, lao, lbo};
                for (size_t k = 0; k < slots.size() && k < 4; k++) ls[(size_t)slots[k]] = order[k];
            }
        }
    }

    // Vectorize (split + vectorize) a pure loop: the innermost, or `want` if given.
    template <typename S>
    bool vectorize(S &st, const std::string &sn, Loops &ls, const std::string &want = "") {
        int k = -1;
        if (want.empty()) {
            if (!ls.empty() && !ls[0].rvar && !ls[0].locked && !ls[0].par) k = 0;
        } else {
            for (size_t q = 0; q < ls.size(); q++)
                if (ls[q].name == want && !ls[q].locked && !ls[q].par) k = (int)q;
        }
        if (k < 0) return false;
        Loop l = ls[(size_t)k];
        int f = r_.pick(std::vector<int>{4, 8, 16});
        TailStrategy t = r_.chance(0.7) ? TailStrategy::Auto : TailStrategy::GuardWithIf;
        std::string inner = fresh(l.name);
        log_ += sn + ".split(" + l.name + ", " + l.name + ", " + inner + ", " + std::to_string(f) + ", " +
                (t == TailStrategy::Auto ? "Auto" : "GuardWithIf") + ").vectorize(" + inner + ");\n";
        st.split(Var(l.name), Var(l.name), Var(inner), f, t).vectorize(Var(inner));
        Loop li = l;
        li.name = inner;
        li.locked = true;
        ls.insert(ls.begin() + k, li);
        return true;
    }

    template <typename S>
    void unroll(S &st, const std::string &sn, Loops &ls) {
        auto cand = free_loops(ls, true);
        if (cand.empty()) return;
        int k = r_.pick(cand);
        Loop l = ls[(size_t)k];
        int f = r_.uniform(2, 3);
        std::string inner = fresh(l.name);
        log_ += sn + ".split(" + l.name + ", " + l.name + ", " + inner + ", " + std::to_string(f) + ").unroll(" + inner +
                ");\n";
        st.split(Var(l.name), Var(l.name), Var(inner), f).unroll(Var(inner));
        Loop li = l;
        li.name = inner;
        li.locked = true;
        ls.insert(ls.begin() + k, li);
    }

    // Parallel: a pure loop (the outermost free one, or `want`).
    template <typename S>
    bool parallel(S &st, const std::string &sn, Loops &ls, const std::string &want = "") {
        int k = -1;
        for (size_t q = 0; q < ls.size(); q++)
            if (!ls[q].rvar && !ls[q].locked && !ls[q].par && (want.empty() || ls[q].name == want)) k = (int)q;
        if (k < 0) return false;
        log_ += sn + ".parallel(" + ls[(size_t)k].name + ");\n";
        st.parallel(Var(ls[(size_t)k].name));
        ls[(size_t)k].par = true;
        return true;
    }

    // A full random loop schedule.
    template <typename S>
    void all(S &st, const std::string &sn, Loops &ls, int max_ops = 2) {
        structure(st, sn, ls, max_ops);
        if (r_.chance(0.5)) vectorize(st, sn, ls);
        if (r_.chance(0.15)) unroll(st, sn, ls);
        if (r_.chance(0.35)) parallel(st, sn, ls);
    }

private:
    Rng &r_;
    std::string &log_;
    int counter_ = 0;
};

template <typename T>
void fill_random(Buffer<T> &b, Rng &r, int lo, int hi) {
    b.for_each_offset([&](int64_t off) {
        if constexpr (std::is_floating_point_v<T>)
            b.data()[off] = (T)(lo + (hi - lo) * std::uniform_real_distribution<double>(0, 1)(r.g));
        else
            b.data()[off] = (T)r.uniform(lo, hi);
    });
}

template <typename T>
int compare(const Buffer<T> &got, const Buffer<T> &ref, const std::string &where) {
    int bad = 0;
    for (int j = got.dim(1).min(); j <= got.dim(1).max(); j++)
        for (int i = got.dim(0).min(); i <= got.dim(0).max(); i++) {
            T g = got(i, j), e = ref(i, j);
            bool ok;
            if constexpr (std::is_floating_point_v<T>)
                ok = std::fabs((double)g - (double)e) <= 1e-4 * std::max(1.0, std::fabs((double)e));
            else
                ok = g == e;
            if (!ok && bad++ < 3) ADD_FAILURE() << where << ": at (" << i << ", " << j << ") got " << g << ", expected " << e;
        }
    return bad;
}

// Conservative bounds may refuse a legal schedule with a clear error (as in
// test_random_schedules.cpp): tolerated for a few trials, nothing written; anything else fails.
struct Refusals {
    int trials = 0, refused = 0;
};
bool is_conservative(const std::string &msg) {
    return msg.find("pipeline reads") != std::string::npos || msg.find("cannot bound") != std::string::npos;
}

// ============================================================================ (a) matmul

// Positions of loops relative to the output's loop list: index into out's loops (innermost
// first); kRoot for compute_root.
constexpr int kRoot = 1 << 20;

template <typename T>
void matmul_trial(uint32_t seed, int trial, Refusals &refusals) {
    Rng r(seed);
    const int M = trial == 0 ? 16 : r.chance(0.2) ? r.uniform(1, 4) : r.uniform(5, 40);
    const int N = trial == 0 ? 8 : r.chance(0.2) ? r.uniform(1, 4) : r.uniform(5, 24);
    const int K = trial == 0 ? 16 : trial == 1 ? 1 : r.uniform(1, 40);
    const bool use_ip = r.chance(0.5);
    std::string where = std::string(std::is_floating_point_v<T> ? "matmul float" : "matmul int") + " seed " +
                        std::to_string(seed) + " M " + std::to_string(M) + " N " + std::to_string(N) + " K " +
                        std::to_string(K) + (use_ip ? " (ImageParam inputs)" : " (Buffer inputs)");
    // Inputs are exactly as large as the algorithm reads: any over-read is refused with an error.
    Buffer<T> A(K, N), B(M, K), Aref(K, N), Bref(M, K);
    fill_random(A, r, -9, 9);
    fill_random(B, r, -9, 9);
    std::copy(A.data(), A.data() + (size_t)K * N, Aref.data());
    std::copy(B.data(), B.data() + (size_t)M * K, Bref.data());
    ImageParam Ai(type_of<T>(), 2, "A"), Bi(type_of<T>(), 2, "B");
    Ai.set(A);
    Bi.set(B);

    // The reference: the same algorithm, unscheduled, on copies of the inputs.
    Buffer<T> ref(M, N);
    {
        Var i("i"), j("j");
        RDom k(0, K, "k");
        Func C("C"), out("out");
        C(i, j) = cast<T>(0);
        C(i, j) += Aref(k, j) * Bref(i, k);
        out(i, j) = C(i, j) * cast<T>(2) + cast<T>(1);
        internal::interpret_pipeline(Pipeline(out), {ref});
    }

    std::string log;
    LoopGen gen(r, log);
    Var i("i"), j("j");
    RDom k(0, K, "k");
    Func C("C"), out("out");
    auto Aread = [&](Expr x, Expr y) { return use_ip ? Ai(x, y) : A(x, y); };
    auto Bread = [&](Expr x, Expr y) { return use_ip ? Bi(x, y) : B(x, y); };
    C(i, j) = cast<T>(0);
    C(i, j) += Aread(k, j) * Bread(i, k);
    out(i, j) = C(i, j) * cast<T>(2) + cast<T>(1);

    try {
        // The output.
        Loops ol = {{"i"}, {"j"}};
        gen.all(out, "out", ol, 2);
        auto out_slots = [&](int at_or_outside) {  // unlocked loops of out at or outside a position
            std::vector<int> c;
            for (size_t q = 0; q < ol.size(); q++)
                if (!ol[q].locked && (int)q >= at_or_outside) c.push_back((int)q);
            return c;
        };
        // C: root or at a loop of out.
        int c_level = kRoot;
        auto cs = out_slots(0);
        if (!cs.empty() && r.chance(0.7)) {
            c_level = r.pick(cs);
            log += "C.compute_at(out, " + ol[(size_t)c_level].name + ");\n";
            C.compute_at(out, vr(ol[(size_t)c_level]));
        } else {
            log += "C.compute_root();\n";
            C.compute_root();
        }
        Loops cl = {{"i"}, {"j"}};
        if (r.chance(0.5)) gen.vectorize(C, "C", cl, "i");

        // C's update, with or without rfactor.
        const bool rf = r.chance(0.5);
        Func reader = C;  // the Func whose update reads A and B
        std::string reader_name = "C";
        int reader_level = c_level;
        Loops reader_pure, reader_upd;
        Func intm;
        if (rf) {
            int F = r.uniform(1, 9);
            bool inner = r.chance(0.5);
            RVar ko("ko"), ki("ki");
            Var u("u");
            log += "C.update(0).split(k, ko, ki, " + std::to_string(F) + ");\n";
            C.update(0).split(k, ko, ki, F);
            RVar kept = inner ? ki : ko;
            if (r.chance(0.3)) {
                log += "Func intm = C.update(0).rfactor({{" + kept.name() + ", u}});\n";
                intm = C.update(0).rfactor({{kept, u}});
            } else {
                log += "Func intm = C.update(0).rfactor(" + kept.name() + ", u);\n";
                intm = C.update(0).rfactor(kept, u);
            }
            // C's update now reduces intm over the kept RVar.
            Loops cu = loops_of(C.contents()->stage_schedules[1].schedule.dims);
            if (r.chance(0.4)) {
                Stage cst = C.update(0);
                gen.vectorize(cst, "C.update(0)", cu, "i");
            }
            // The intermediate: root, at a loop of out (at or outside C's), or at C's kept loop.
            std::vector<int> at = c_level == kRoot ? std::vector<int>{} : out_slots(c_level);
            int choice = r.uniform(0, 2);
            int ilevel = kRoot;
            if (choice == 1 && !at.empty()) {
                ilevel = r.pick(at);
                log += "intm.compute_at(out, " + ol[(size_t)ilevel].name + ");\n";
                intm.compute_at(out, vr(ol[(size_t)ilevel]));
            } else if (choice == 2 && c_level != kRoot && !cu.empty() && cu[0].rvar && !cu[0].locked) {
                // cu is innermost first; the kept RVar is its first loop unless vectorize put i inside.
                ilevel = c_level;
                log += "intm.compute_at(C, " + kept.name() + ");\n";
                intm.compute_at(C, kept);
            } else {
                log += "intm.compute_root();\n";
                intm.compute_root();
            }
            Loops ip = loops_of(intm.contents()->stage_schedules[0].schedule.dims);
            Loops iu = loops_of(intm.contents()->stage_schedules[1].schedule.dims);
            if (r.chance(0.6)) gen.vectorize(intm, "intm", ip, r.chance(0.5) ? "u" : "i");
            if (r.chance(0.4)) gen.parallel(intm, "intm", ip, r.chance(0.5) ? "u" : "j");
            Stage ist = intm.update(0);
            if (r.chance(0.3)) gen.structure(ist, "intm.update(0)", iu, 1);
            if (r.chance(0.6)) gen.vectorize(ist, "intm.update(0)", iu, r.chance(0.5) ? "u" : "i");
            if (r.chance(0.4)) gen.parallel(ist, "intm.update(0)", iu, r.chance(0.5) ? "u" : "j");
            reader = intm;
            reader_name = "intm";
            reader_level = ilevel;
            reader_pure = ip;
            reader_upd = iu;
        } else {
            Loops cu = loops_of(C.contents()->stage_schedules[1].schedule.dims);
            Stage cst = C.update(0);
            gen.structure(cst, "C.update(0)", cu, 2);
            if (r.chance(0.5)) gen.vectorize(cst, "C.update(0)", cu, "i");
            if (r.chance(0.3)) gen.parallel(cst, "C.update(0)", cu, "j");
            reader_pure = cl;
            reader_upd = cu;
        }

        // Wrappers of A and/or B.
        for (int w = 0; w < 2; w++) {
            if (!r.chance(0.55)) continue;
            const char *src = w == 0 ? "A" : "B";
            bool for_reader = r.chance(0.4);
            Func wf;
            std::string wn = std::string("w") + src;
            if (for_reader) {
                log += "Func " + wn + " = " + src + ".in(" + reader_name + ");\n";
                wf = use_ip ? (w == 0 ? Ai.in(reader) : Bi.in(reader)) : (w == 0 ? A.in(reader) : B.in(reader));
            } else {
                log += "Func " + wn + " = " + src + ".in();\n";
                wf = use_ip ? (w == 0 ? Ai.in() : Bi.in()) : (w == 0 ? A.in() : B.in());
            }
            // Where: root; a loop of the reader's update that its pure stage lacks; a loop of out
            // at or outside the reader's.
            std::set<std::string> pure_names;
            for (auto &l : reader_pure) pure_names.insert(l.name);
            std::vector<int> rd;
            for (size_t q = 0; q < reader_upd.size(); q++)
                if (!reader_upd[q].locked && !pure_names.count(reader_upd[q].name)) rd.push_back((int)q);
            std::vector<int> ou = reader_level == kRoot ? std::vector<int>{} : out_slots(reader_level);
            int choice = r.uniform(0, 2);
            if (choice == 1 && !rd.empty()) {
                const Loop &l = reader_upd[(size_t)r.pick(rd)];
                log += wn + ".compute_at(" + reader_name + ", " + l.name + ");\n";
                wf.compute_at(reader, vr(l));
            } else if (choice == 2 && !ou.empty()) {
                const Loop &l = ol[(size_t)r.pick(ou)];
                log += wn + ".compute_at(out, " + l.name + ");\n";
                wf.compute_at(out, vr(l));
            } else {
                log += wn + ".compute_root();\n";
                wf.compute_root();
            }
            std::vector<Var> a = wf.args();
            if (a.size() != 2) {
                ADD_FAILURE() << where << ": " << wn << " has " << a.size() << " args";
                return;
            }
            if (r.chance(0.5)) {
                log += wn + ".reorder_storage(" + a[1].name() + ", " + a[0].name() + ");\n";
                wf.reorder_storage(a[1], a[0]);
            }
            Loops wl = {{a[0].name()}, {a[1].name()}};
            if (r.chance(0.4)) {
                int f = r.uniform(2, 5);
                std::string o = gen.fresh("w"), in = gen.fresh("w");
                log += wn + ".split(" + a[1].name() + ", " + o + ", " + in + ", " + std::to_string(f) + ");\n";
                wf.split(a[1], Var(o), Var(in), f);
                wl = {{a[0].name()}, {in}, {o}};
            }
            if (r.chance(0.6)) gen.vectorize(wf, wn, wl, a[0].name());
        }
    } catch (const Error &e) {
        ADD_FAILURE() << where << ": a legal schedule was rejected: " << e.what() << "\nschedule:\n" << log;
        return;
    }
    if (verbose()) {
        std::fprintf(stderr, "== %s\n%s", where.c_str(), log.c_str());
        std::fflush(stderr);
    }
    Buffer<T> o(M, N);
    o.fill((T)-12345);
    refusals.trials++;
    try {
        out.realize(o);
    } catch (const Error &e) {
        std::string msg = e.what();
        if (!is_conservative(msg)) {
            ADD_FAILURE() << where << ": realize threw: " << msg << "\nschedule:\n" << log;
            return;
        }
        refusals.refused++;
        std::fprintf(stderr, "note: %s: schedule refused by conservative bounds: %s\nschedule:\n%s", where.c_str(),
                     msg.c_str(), log.c_str());
        EXPECT_LE(refusals.refused, 1 + refusals.trials / 20) << where << ": too many refusals; last:\n" << log;
        return;
    }
    int bad = compare(o, ref, where);
    if (bad) ADD_FAILURE() << where << ": " << bad << " wrong values; schedule:\n" << log;
}

TEST(RandomCpuFeatures, MatmulInWrappersRfactor) {
    const int n = trials(80);
    Refusals ri, rf;
    for (int t = 0; t < n; t++) {
        if (t % 2 == 0)
            matmul_trial<int32_t>(11000u + (uint32_t)t, t / 2, ri);
        else
            matmul_trial<float>(12000u + (uint32_t)t, t / 2, rf);
    }
}

// ============================================================================ (b) stencil

struct Branch {
    std::string cond_str;
    Loops loops;
};

void stencil_trial(uint32_t seed, int trial, Refusals &refusals) {
    Rng r(seed);
    const int W = trial == 0 ? 16 : r.chance(0.2) ? r.uniform(1, 4) : r.uniform(5, 40);
    const int H = trial == 0 ? 8 : r.chance(0.2) ? r.uniform(1, 4) : r.uniform(5, 30);
    const int ox = trial < 2 ? 0 : r.uniform(-4, 4), oy = trial < 2 ? 0 : r.uniform(-4, 4);
    std::string where = "stencil seed " + std::to_string(seed) + " " + std::to_string(W) + "x" + std::to_string(H) +
                        " min " + std::to_string(ox) + "," + std::to_string(oy);
    // out reads bx over rows [oy - 1, oy + H], bx reads in over columns [ox - 1, ox + W].
    Buffer<int> inb(W + 2, H + 2);
    inb.set_min(ox - 1, oy - 1);
    fill_random(inb, r, -100, 100);
    ImageParam in(Int(32), 2, "in");
    in.set(inb);
    Param<int> p("p");

    auto define = [&](Func &bx, Func &out) {
        Var x("x"), y("y");
        bx(x, y) = in(x - 1, y) + in(x, y) * 2 + in(x + 1, y);
        out(x, y) = bx(x, y - 1) + bx(x, y) * p + bx(x, y + 1) - p;
    };

    std::string log;
    LoopGen gen(r, log);
    Func bx("bx"), out("out");
    define(bx, out);
    std::vector<int> pvals;
    try {
        // Conditions: on p and on the input's shape.
        auto random_cond = [&](std::string &s) -> Expr {
            int c = r.uniform(-3, 5);
            pvals.push_back(c);
            switch (r.uniform(0, 5)) {
            case 0: s = "p == " + std::to_string(c); return p == c;
            case 1: s = "p > " + std::to_string(c); return p > c;
            case 2: s = "p < " + std::to_string(c); return p < c;
            case 3: s = "p % 2 == 0"; return p % 2 == 0;
            case 4: s = "in.extent(0) % 8 == 0"; return in.extent(0) % 8 == 0;
            default: s = "p >= " + std::to_string(c) + " && in.extent(1) > 6"; return p >= c && in.extent(1) > 6;
            }
        };
        // The output: a base schedule, then 0..3 specializations that each add their own.
        Loops base = {{"x"}, {"y"}};
        gen.structure(out, "out", base, 2);
        std::vector<Branch> branches;
        int nspec = r.uniform(0, 3);
        for (int s = 0; s < nspec; s++) {
            Branch b;
            Expr cond = random_cond(b.cond_str);
            b.loops = base;
            std::string sn = "out.specialize(" + b.cond_str + ")";
            log += "Stage s" + std::to_string(s) + " = " + sn + ";\n";
            Stage st = out.specialize(cond);
            sn = "s" + std::to_string(s);
            gen.structure(st, sn, b.loops, 1);
            if (r.chance(0.6)) gen.vectorize(st, sn, b.loops);
            if (r.chance(0.2)) gen.unroll(st, sn, b.loops);
            if (r.chance(0.4)) gen.parallel(st, sn, b.loops);
            if (r.chance(0.4)) {
                const Loop &l = r.pick(b.loops);
                int off = r.uniform(0, 3);
                log += sn + ".prefetch(in, " + l.name + ", " + std::to_string(off) + ");\n";
                st.prefetch(in, vr(l), off);
            }
            branches.push_back(b);
        }
        // The base schedule may change after the specializations (they keep their copies).
        if (r.chance(0.5)) gen.vectorize(out, "out", base);
        if (r.chance(0.3)) gen.parallel(out, "out", base);
        branches.push_back({"(default)", base});

        // bx: inline, root, or at a loop that every branch has (and none vectorized).
        std::vector<std::string> common;
        for (auto &l : base) {
            bool ok = true;
            for (auto &b : branches) {
                bool found = false;
                for (auto &bl : b.loops) found |= bl.name == l.name && !bl.locked;
                ok &= found;
            }
            if (ok) common.push_back(l.name);
        }
        int place = r.uniform(0, 2);
        bool bx_root = false;
        if (place == 2 && !common.empty()) {
            std::string at = r.pick(common);
            log += "bx.compute_at(out, " + at + ");\n";
            bx.compute_at(out, Var(at));
        } else if (place >= 1) {
            log += "bx.compute_root();\n";
            bx.compute_root();
            bx_root = true;
        } else {
            log += "// bx inlined\n";
        }
        if (place != 0) {
            Loops bl = {{"x"}, {"y"}};
            gen.structure(bx, "bx", bl, 1);
            for (int s = 0, ns = r.uniform(0, 2); s < ns; s++) {
                std::string cs;
                Expr cond = random_cond(cs);
                log += "Stage b" + std::to_string(s) + " = bx.specialize(" + cs + ");\n";
                Stage st = bx.specialize(cond);
                Loops sl = bl;
                std::string sn = "b" + std::to_string(s);
                if (r.chance(0.7)) gen.vectorize(st, sn, sl);
                if (r.chance(0.3)) gen.parallel(st, sn, sl);
                if (r.chance(0.3)) {
                    const Loop &l = r.pick(sl);
                    log += sn + ".prefetch(in, " + l.name + ", 1);\n";
                    st.prefetch(in, vr(l), 1);
                }
            }
            if (r.chance(0.5)) gen.vectorize(bx, "bx", bl);
            if (r.chance(0.3)) {
                const Loop &l = r.pick(bl);
                log += "bx.prefetch(in, " + l.name + ", 2);\n";
                bx.prefetch(in, vr(l), 2);
            }
        }
        // Prefetches in the output's default schedule.
        if (r.chance(0.5)) {
            const Loop &l = r.pick(base);
            int off = r.uniform(1, 4);
            log += "out.prefetch(in, " + l.name + ", " + std::to_string(off) + ");\n";
            out.prefetch(in, vr(l), off);
        }
        if (bx_root && r.chance(0.5)) {
            const Loop &l = r.pick(base);
            log += "out.prefetch(bx, " + l.name + ", 1);\n";
            out.prefetch(bx, vr(l), 1);
        }
        // Streaming stores (only a hint: the values must not change).
        if (r.chance(0.3)) {
            log += "out.store_nontemporal();\n";
            out.store_nontemporal();
        }
        if (place != 0 && r.chance(0.3)) {
            log += "bx.store_nontemporal();\n";
            bx.store_nontemporal();
        }
    } catch (const Error &e) {
        ADD_FAILURE() << where << ": a legal schedule was rejected: " << e.what() << "\nschedule:\n" << log;
        return;
    }
    // Values of p: those the conditions name, their neighbours, and a few others.
    std::vector<int> ps = {0, 1};
    for (int c : pvals) {
        ps.push_back(c);
        ps.push_back(c + 1);
    }
    ps.push_back(r.uniform(-5, 7));
    std::sort(ps.begin(), ps.end());
    ps.erase(std::unique(ps.begin(), ps.end()), ps.end());
    if (verbose()) {
        std::fprintf(stderr, "== %s\n%s", where.c_str(), log.c_str());
        std::fflush(stderr);
    }
    refusals.trials++;
    for (int pv : ps) {
        p.set(pv);
        std::string w = where + " p = " + std::to_string(pv);
        Buffer<int> ref(W, H), o(W, H);
        ref.set_min(ox, oy);
        o.set_min(ox, oy);
        {
            Func rbx("bx"), rout("out");
            define(rbx, rout);
            internal::interpret_pipeline(Pipeline(rout), {ref});
        }
        o.fill(-123457);
        try {
            out.realize(o);
        } catch (const Error &e) {
            std::string msg = e.what();
            if (!is_conservative(msg)) {
                ADD_FAILURE() << w << ": realize threw: " << msg << "\nschedule:\n" << log;
                return;
            }
            refusals.refused++;
            std::fprintf(stderr, "note: %s: refused by conservative bounds: %s\nschedule:\n%s", w.c_str(), msg.c_str(),
                         log.c_str());
            EXPECT_LE(refusals.refused, 1 + refusals.trials / 20) << w << ": too many refusals; last:\n" << log;
            return;
        }
        int bad = compare(o, ref, w);
        if (bad) {
            ADD_FAILURE() << w << ": " << bad << " wrong values; schedule:\n" << log;
            return;
        }
    }
}

TEST(RandomCpuFeatures, StencilSpecializePrefetchNontemporal) {
    const int n = trials(60);
    Refusals rs;
    for (int t = 0; t < n; t++) stencil_trial(21000u + (uint32_t)t, t, rs);
}

// ============================================================================ (c) histogram

void histogram_trial(uint32_t seed, int trial, Refusals &refusals) {
    Rng r(seed);
    const int W = trial == 0 ? 16 : r.uniform(1, 30), H = trial == 0 ? 8 : r.uniform(1, 20);
    const int C = r.uniform(1, 3), B = r.pick(std::vector<int>{1, 5, 16});
    std::string where = "histogram seed " + std::to_string(seed) + " " + std::to_string(W) + "x" + std::to_string(H) +
                        "x" + std::to_string(C) + " bins " + std::to_string(B);
    Buffer<int> in(W, H, C);
    fill_random(in, r, -20, 120);
    auto algorithm = [&](Func &hist, Func &out, RDom &rd) {
        Var c("c"), b("b");
        hist(c, b) = 0;
        Expr v = in(rd.x, rd.y, c);
        hist(c, clamp(v / 7, 0, B - 1)) += v % 5 + 1;
        out(b, c) = hist(c, b) * 3 + b;
    };
    Buffer<int> ref(B, C);
    {
        RDom rd(0, W, 0, H, "r");
        Func hist("hist"), out("out");
        algorithm(hist, out, rd);
        internal::interpret_pipeline(Pipeline(out), {ref});
    }
    std::string log;
    LoopGen gen(r, log);
    RDom rd(0, W, 0, H, "r");
    Func hist("hist"), out("out");
    algorithm(hist, out, rd);
    try {
        Loops ol = {{"b"}, {"c"}};
        if (r.chance(0.4)) gen.vectorize(out, "out", ol, "b");
        bool at_c = r.chance(0.5) && !ol.back().locked;
        if (at_c) {
            log += "hist.compute_at(out, c);\n";
            hist.compute_at(out, Var("c"));
        } else {
            log += "hist.compute_root();\n";
            hist.compute_root();
        }
        // Split an RVar first, sometimes; then factor one or two of the RVars into Vars.
        std::vector<std::string> rvars = {rd.x.name(), rd.y.name()};
        if (r.chance(0.5)) {
            int k = r.uniform(0, 1);
            int f = r.uniform(1, 6);
            std::string o = rvars[(size_t)k] + "o", i = rvars[(size_t)k] + "i";
            log += "hist.update(0).split(" + rvars[(size_t)k] + ", " + o + ", " + i + ", " + std::to_string(f) + ");\n";
            hist.update(0).split(RVar(rvars[(size_t)k]), RVar(o), RVar(i), f);
            rvars.erase(rvars.begin() + k);
            rvars.insert(rvars.begin() + k, {i, o});
        }
        std::vector<std::pair<RVar, Var>> kept;
        std::vector<std::string> uvars;
        int nk = r.chance(0.2) ? 2 : 1;
        std::vector<std::string> pool = rvars;
        std::string kl;
        for (int q = 0; q < nk && !pool.empty(); q++) {
            size_t k = (size_t)r.uniform(0, (int)pool.size() - 1);
            std::string u = "u" + std::to_string(q);
            kept.push_back({RVar(pool[k]), Var(u)});
            uvars.push_back(u);
            kl += (kl.empty() ? "" : ", ") + std::string("{") + pool[k] + ", " + u + "}";
            pool.erase(pool.begin() + (long)k);
        }
        log += "Func intm = hist.update(0).rfactor({" + kl + "});\n";
        Func intm = hist.update(0).rfactor(kept);
        if (at_c && r.chance(0.5)) {
            log += "intm.compute_at(out, c);\n";
            intm.compute_at(out, Var("c"));
        } else {
            log += "intm.compute_root();\n";
            intm.compute_root();
        }
        Loops ip = loops_of(intm.contents()->stage_schedules[0].schedule.dims);
        Loops iu = loops_of(intm.contents()->stage_schedules[1].schedule.dims);
        if (r.chance(0.5)) gen.vectorize(intm, "intm", ip, r.chance(0.5) ? "b" : uvars[0]);
        if (r.chance(0.4)) gen.parallel(intm, "intm", ip, r.chance(0.5) ? "c" : uvars.back());
        Stage ist = intm.update(0);
        if (r.chance(0.3)) gen.structure(ist, "intm.update(0)", iu, 1);
        // Lanes or threads of the intermediate's update each write their own u (or channel).
        if (r.chance(0.4)) gen.vectorize(ist, "intm.update(0)", iu, uvars[0]);
        if (r.chance(0.5)) gen.parallel(ist, "intm.update(0)", iu, r.chance(0.7) ? uvars.back() : "c");
        Loops hu = loops_of(hist.contents()->stage_schedules[1].schedule.dims);
        Stage hst = hist.update(0);
        if (r.chance(0.4)) gen.vectorize(hst, "hist.update(0)", hu, "b");
        if (r.chance(0.3)) gen.parallel(hst, "hist.update(0)", hu, "c");
    } catch (const Error &e) {
        ADD_FAILURE() << where << ": a legal schedule was rejected: " << e.what() << "\nschedule:\n" << log;
        return;
    }
    if (verbose()) {
        std::fprintf(stderr, "== %s\n%s", where.c_str(), log.c_str());
        std::fflush(stderr);
    }
    Buffer<int> o(B, C);
    o.fill(-12345);
    refusals.trials++;
    try {
        out.realize(o);
    } catch (const Error &e) {
        ADD_FAILURE() << where << ": realize threw: " << e.what() << "\nschedule:\n" << log;
        return;
    }
    int bad = compare(o, ref, where);
    if (bad) ADD_FAILURE() << where << ": " << bad << " wrong values; schedule:\n" << log;
}

TEST(RandomCpuFeatures, HistogramRfactorAtComputedIndex) {
    const int n = trials(60);
    Refusals rh;
    for (int t = 0; t < n; t++) histogram_trial(31000u + (uint32_t)t, t, rh);
}

}  // namespace
