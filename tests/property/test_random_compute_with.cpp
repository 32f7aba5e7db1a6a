// Property test for compute_with: random fusions never change results.
//
// Two or three Funcs read one input (through repeat_edge) with random offsets; the output reads
// them at shifted, downsampled or upsampled coordinates, so their regions differ in start and
// length. The Funcs are computed at root or at a loop of the output (sometimes stored further
// out, so that they slide), given the same loop names with random split factors (vectorized or
// not), and fused with the first one at a random level with a random alignment per loop
// (sometimes parallel fused loops); sometimes they read a producer of their own, computed at a
// fused loop of one of them that all run in (Halide's meaning: once there, for every reader).
// Every output element is compared with the reference
// interpreter's result for the same algorithm. Seeds are fixed; a failure prints the seed, the
// sizes and every scheduling call. WEFT_PROPERTY_VERBOSE=1 prints each trial before running it;
// WEFT_COMPUTE_WITH_TRIALS=<n> changes the number of trials (default 60).
#include "property/random_util.h"
#include <gtest/gtest.h>
#include <weft/weft.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "pipeline/PipelineInternal.h"

using namespace weft;

namespace {

using weft_test::Rng;

int trials() {
    const char *e = std::getenv("WEFT_COMPUTE_WITH_TRIALS");
    return e && std::atoi(e) > 0 ? std::atoi(e) : 60;
}

const char *align_name(LoopAlignStrategy a) {
    switch (a) {
    case LoopAlignStrategy::AlignStart: return "AlignStart";
    case LoopAlignStrategy::AlignEnd: return "AlignEnd";
    case LoopAlignStrategy::NoAlign: return "NoAlign";
    default: return "Auto";
    }
}

void trial(uint32_t seed) {
    Rng r(seed);
    const int W = r.uniform(1, 40), H = r.uniform(1, 30);
    const int nf = r.chance(0.3) ? 3 : 2;
    std::string where = "compute_with seed " + std::to_string(seed) + " " + std::to_string(W) + "x" + std::to_string(H);
    Buffer<int> in(std::vector<int>{17, 13}, "rcw_in");
    for (int j = 0; j < 13; j++)
        for (int i = 0; i < 17; i++) in(i, j) = (i * 7 + j * 11 + (i * j) % 13) % 97 - 40;
    // Each Func's definition and how the output reads it.
    struct Part {
        int ax, ay, bx, by, mul;
        int rx, ry;  // read at x * rx[/2]..., see below
        int ox, oy;
    };
    std::vector<Part> parts;
    for (int i = 0; i < nf; i++)
        parts.push_back({r.uniform(-2, 2), r.uniform(-2, 2), r.uniform(-2, 2), r.uniform(-2, 2), r.uniform(1, 5),
                         r.uniform(0, 2), r.uniform(0, 2), r.uniform(-3, 3), r.uniform(-3, 3)});
    auto coord = [](Expr v, int mode, int off) {
        return mode == 0 ? v + off : mode == 1 ? v / 2 + off : v * 2 + off;  // same, down, up
    };
    // Sometimes the Funcs read one producer of their own instead of the input: computed at a
    // fused loop every one of them runs in (or inlined, or at root).
    const bool shared = r.chance(0.5);
    Func sh("rcw_shared");
    auto build = [&](std::vector<Func> &fs, Func &out, Var x, Var y) {
        Func e = BoundaryConditions::repeat_edge(in);
        if (shared) {
            sh(x, y) = e(x, y) * 3 + 1;
            e = sh;
        }
        Expr total = 0;
        for (int i = 0; i < nf; i++) {
            const Part &p = parts[(size_t)i];
            fs[(size_t)i](x, y) = e(x + p.ax, y + p.ay) * p.mul - e(x + p.bx, y + p.by);
            total = total + fs[(size_t)i](coord(x, p.rx, p.ox), coord(y, p.ry, p.oy)) * (i + 1);
        }
        out(x, y) = total;
    };
    Var x("x"), y("y");
    Buffer<int> ref(std::vector<int>{W, H}, "rcw_ref");
    {
        std::vector<Func> fs;
        for (int i = 0; i < nf; i++) fs.emplace_back("rcw_f" + std::to_string(i));
        Func out("rcw_out");
        build(fs, out, x, y);
        internal::interpret_pipeline(Pipeline(out), {ref});
        sh = Func("rcw_shared");
    }
    std::vector<Func> fs;
    for (int i = 0; i < nf; i++) fs.emplace_back("rcw_f" + std::to_string(i));
    Func out("rcw_out");
    build(fs, out, x, y);

    std::string log;
    try {
        // The output: rows split or not, vectorized or not.
        Var yo("yo"), yi("yi"), xo("xo"), xi("xi"), yy("yy"), yt("yt");
        bool split_out = r.chance(0.5);
        int fo = r.uniform(1, 6);
        if (split_out) {
            log += "out.split(y, yo, yi, " + std::to_string(fo) + ");\n";
            out.split(y, yo, yi, fo);
        }
        if (r.chance(0.4)) {
            log += "out.vectorize(x, 4);\n";
            out.vectorize(x, 4);
        }
        // Where the Funcs are computed: all at the same level.
        int level = r.uniform(0, split_out ? 3 : 1);  // 0 root, 1 at y (or yi), 2 at yi stored at yo, 3 at yo
        std::string lv = level == 0 ? "root" : level == 3 ? "yo" : split_out ? "yi" : "y";
        // The Funcs' loops: y (maybe split into yy, yt), x (maybe split into xo, xi; xi maybe vectorized).
        bool split_y = level == 0 && r.chance(0.4);
        bool split_x = r.chance(0.6), vec_x = split_x && r.chance(0.6);
        bool par = level == 0 && r.chance(0.3);
        for (int i = 0; i < nf; i++) {
            Func &f = fs[(size_t)i];
            std::string fn = "f" + std::to_string(i);
            if (level == 0) {
                log += fn + ".compute_root();\n";
                f.compute_root();
            } else {
                Var at = level == 3 ? yo : split_out ? yi : y;
                log += fn + ".compute_at(out, " + lv + ");\n";
                f.compute_at(out, at);
                if (level == 2) {
                    log += fn + ".store_at(out, yo);\n";
                    f.store_at(out, yo);
                }
            }
            if (split_y) {
                int F = r.uniform(1, 4);
                log += fn + ".split(y, yy, yt, " + std::to_string(F) + ");\n";
                f.split(y, yy, yt, F);
            }
            if (split_x) {
                int F = r.pick(std::vector<int>{2, 4, 8});
                TailStrategy t = r.chance(0.5) ? TailStrategy::Auto : TailStrategy::GuardWithIf;
                log += fn + ".split(x, xo, xi, " + std::to_string(F) + (t == TailStrategy::Auto ? ", Auto" : ", GuardWithIf") + ");\n";
                f.split(x, xo, xi, F, t);
                if (vec_x) {
                    log += fn + ".vectorize(xi);\n";
                    f.vectorize(xi);
                }
            }
            if (par) {
                Var p = split_y ? yy : y;
                log += fn + ".parallel(" + p.name() + ");\n";
                f.parallel(p);
            }
        }
        // The fused level and the alignments, for each child.
        std::vector<std::string> loops;  // outermost first, not vectorized
        loops.push_back(split_y ? "yy" : "y");
        if (split_y) loops.push_back("yt");
        if (split_x) {
            loops.push_back("xo");
            if (!vec_x) loops.push_back("xi");
        } else {
            loops.push_back("x");
        }
        size_t shared_depth = loops.size();  // the fused loops every child runs in
        for (int i = 1; i < nf; i++) {
            size_t depth = (size_t)r.uniform(1, (int)loops.size());
            shared_depth = std::min(shared_depth, depth);
            std::vector<std::pair<VarOrRVar, LoopAlignStrategy>> align;
            std::string al;
            for (size_t k = 0; k < depth; k++) {
                if (!r.chance(0.7)) continue;
                LoopAlignStrategy a = r.pick(std::vector<LoopAlignStrategy>{LoopAlignStrategy::AlignStart, LoopAlignStrategy::AlignEnd,
                                                                            LoopAlignStrategy::NoAlign, LoopAlignStrategy::Auto});
                align.push_back({Var(loops[k]), a});
                al += std::string(al.empty() ? "" : ", ") + "{" + loops[k] + ", " + align_name(a) + "}";
            }
            std::string fn = "f" + std::to_string(i);
            log += fn + ".compute_with(f0, " + loops[depth - 1] + ", {" + al + "});\n";
            fs[(size_t)i].compute_with(fs[0], Var(loops[depth - 1]), align);
        }
        if (shared) {
            int how = r.chance(0.6) ? 2 : r.uniform(0, 1);  // 0 inlined, 1 at root, 2 at a fused loop of a member
            if (how == 1) {
                log += "shared.compute_root();\n";
                sh.compute_root();
            } else if (how == 2) {
                int at = r.uniform(0, nf - 1);
                const std::string &l = loops[(size_t)r.uniform(0, (int)shared_depth - 1)];
                log += "shared.compute_at(f" + std::to_string(at) + ", " + l + ");\n";
                sh.compute_at(fs[(size_t)at], Var(l));
            }
        }
    } catch (const Error &e) {
        ADD_FAILURE() << where << ": a legal schedule was rejected: " << e.what() << "\nschedule:\n" << log;
        return;
    }
    if (std::getenv("WEFT_PROPERTY_VERBOSE")) {
        std::fprintf(stderr, "== %s\n%s", where.c_str(), log.c_str());
        std::fflush(stderr);
    }
    Buffer<int> o(std::vector<int>{W, H}, "rcw_o");
    try {
        out.realize(o);
    } catch (const Error &e) {
        ADD_FAILURE() << where << ": realize threw: " << e.what() << "\nschedule:\n" << log;
        return;
    }
    int bad = 0;
    for (int j = 0; j < H; j++)
        for (int i = 0; i < W; i++)
            if (o(i, j) != ref(i, j) && bad++ < 3)
                ADD_FAILURE() << where << ": at (" << i << ", " << j << ") got " << o(i, j) << ", expected " << ref(i, j);
    if (bad) ADD_FAILURE() << where << ": " << bad << " wrong values; schedule:\n" << log;
}

}  // namespace

TEST(RandomComputeWith, FusionsNeverChangeResults) {
    const int n = trials();
    for (int t = 0; t < n; t++) trial(41000u + (uint32_t)t);
}
