// compute_with (Halide's meaning and spelling): two stages' loop nests fused from the outermost
// loop down to a level, each stage running exactly its own iterations, lined up as asked.
#include "lang_test_util.h"

#include <cstdlib>
#include <regex>

#include "pipeline/PipelineInternal.h"

using namespace weft;
using weft_test::error_of;

namespace {

/** How many loops of the final lowered IR are named `name`. */
int loops_named(const std::string &full_ir, const std::string &name) {
    // (In the IR after the last pass.)
    std::string ir = full_ir.substr(full_ir.rfind("// ----"));
    int n = 0;
    for (size_t p = ir.find("for (" + name + ","); p != std::string::npos; p = ir.find("for (" + name + ",", p + 1)) n++;
    return n;
}

std::string ir_of(Func out, std::vector<int> sizes) {
    std::string ir = Pipeline(out).lowered_ir(sizes);
    if (std::getenv("WEFT_TEST_PRINT_IR")) std::fprintf(stderr, "%s\n", ir.c_str());
    return ir;
}

/** Compares every element of got with the interpreter's result for the same pipeline. */
void check_against_interpreter(Func out, const Buffer<int> &got) {
    Buffer<int> want(std::vector<int>{got.dim(0).extent(), got.dim(1).extent()}, "want");
    internal::interpret_pipeline(Pipeline(out), {want});
    int bad = 0;
    for (int j = 0; j < got.dim(1).extent(); j++)
        for (int i = 0; i < got.dim(0).extent(); i++)
            if (got(i, j) != want(i, j) && bad++ < 5) ADD_FAILURE() << "at (" << i << ", " << j << "): " << got(i, j) << " != " << want(i, j);
    EXPECT_EQ(bad, 0);
}

}  // namespace

// Two Funcs over one input, both at root, fused at their row loop: one loop over rows.
TEST(ComputeWith, RootFuncsFusedAtRows) {
    Buffer<int> in(std::vector<int>{40, 30}, "cw_in");
    for (int y = 0; y < 30; y++)
        for (int x = 0; x < 40; x++) in(x, y) = x * 3 + y * 7 - (x * y) % 5;
    Var x("x"), y("y");
    Func f("cw_f"), g("cw_g"), out("cw_out");
    f(x, y) = in(x, y) + in(x + 1, y);
    g(x, y) = in(x, y) * 2;
    out(x, y) = f(x, y) + g(x + 1, y);
    f.compute_root();
    g.compute_root().compute_with(f, y);
    std::string ir = ir_of(out, {30, 20});
    EXPECT_EQ(loops_named(ir, "cw_f.s0.y"), 1);
    EXPECT_EQ(loops_named(ir, "cw_g.s0.y"), 0) << ir;
    Buffer<int> o = out.realize({30, 20});
    check_against_interpreter(out, o);
}

namespace {

/** f and g read one input; g's region is shifted (rows +3) and half as tall (read at y / 2),
    so the fused loops have different ranges; out reads both. */
struct Pair {
    Buffer<int> in{std::vector<int>{64, 48}, "cwp_in"};
    Var x{"x"}, y{"y"}, xi{"xi"};
    Func f{"cwp_f"}, g{"cwp_g"}, out{"cwp_out"};
    Pair() {
        for (int j = 0; j < 48; j++)
            for (int i = 0; i < 64; i++) in(i, j) = (i * 13 + j * 29) % 101 - 50;
        f(x, y) = in(x, y) + in(x + 1, y + 1);
        g(x, y) = in(x + 2, y) * 3 - in(x, y + 2);
        out(x, y) = f(x, y) * 2 + g(x + 1, y / 2 + 3);
    }
};

}  // namespace

// Different ranges: each alignment gives one fused loop over rows and the unfused results.
TEST(ComputeWith, RangesThatDifferEachAlignment) {
    for (LoopAlignStrategy a : {LoopAlignStrategy::Auto, LoopAlignStrategy::NoAlign, LoopAlignStrategy::AlignStart,
                                LoopAlignStrategy::AlignEnd}) {
        SCOPED_TRACE((int)a);
        Pair p;
        p.f.compute_root();
        p.g.compute_root().compute_with(p.f, p.y, a);
        std::string ir = ir_of(p.out, {40, 30});
        EXPECT_EQ(loops_named(ir, "cwp_g.s0.y"), 0) << ir;
        Buffer<int> o = p.out.realize({40, 30});
        check_against_interpreter(p.out, o);
    }
}

// Fused at both loops (y and x), each aligned its own way; vectorized inside the fused level.
TEST(ComputeWith, TwoLevelsAlignedPerLoop) {
    for (int variant = 0; variant < 4; variant++) {
        SCOPED_TRACE(variant);
        Pair p;
        Var xo("xo");
        p.f.compute_root().split(p.x, xo, p.xi, 8).vectorize(p.xi);
        p.g.compute_root().split(p.x, xo, p.xi, 8).vectorize(p.xi);
        LoopAlignStrategy ay = variant & 1 ? LoopAlignStrategy::AlignStart : LoopAlignStrategy::AlignEnd;
        LoopAlignStrategy ax = variant & 2 ? LoopAlignStrategy::NoAlign : LoopAlignStrategy::AlignStart;
        p.g.compute_with(p.f, xo, {{p.y, ay}, {xo, ax}});
        std::string ir = ir_of(p.out, {40, 30});
        EXPECT_EQ(loops_named(ir, "cwp_g.s0.xo"), 0) << ir;
        Buffer<int> o = p.out.realize({40, 30});
        check_against_interpreter(p.out, o);
    }
}

// Both computed at a loop of their consumer, stored outside it (sliding windows, folded
// storage), fused at their rows; and both in parallel loops at root.
TEST(ComputeWith, AtAConsumerLoopAndParallel) {
    {
        Pair p;
        Var yo("yo"), yi("yi");
        p.out.split(p.y, yo, yi, 8).vectorize(p.x, 8);
        p.f.store_at(p.out, yo).compute_at(p.out, yi).vectorize(p.x, 8);
        p.g.store_at(p.out, yo).compute_at(p.out, yi).vectorize(p.x, 8).compute_with(p.f, p.y, LoopAlignStrategy::AlignStart);
        Buffer<int> o = p.out.realize({40, 30});
        check_against_interpreter(p.out, o);
        std::string ir = ir_of(p.out, {40, 30});
        EXPECT_EQ(loops_named(ir, "cwp_g.s0.y"), 0) << ir;
    }
    {
        Pair p;
        p.out.parallel(p.y);
        p.f.compute_root().parallel(p.y);
        p.g.compute_root().parallel(p.y).compute_with(p.f, p.y);
        Buffer<int> o = p.out.realize({40, 30});
        check_against_interpreter(p.out, o);
    }
}

// Two Funcs fused with one parent; an update stage fused with another Func's update.
TEST(ComputeWith, SeveralChildrenAndUpdates) {
    Buffer<int> in(std::vector<int>{32, 16}, "cw3_in");
    for (int j = 0; j < 16; j++)
        for (int i = 0; i < 32; i++) in(i, j) = i - 2 * j;
    Var x("x"), y("y");
    {
        Func a("cw3_a"), b("cw3_b"), c("cw3_c"), out("cw3_out");
        a(x, y) = in(x, y) + 1;
        b(x, y) = in(x, y) * 2;
        c(x, y) = in(31 - x, y) - 3;
        out(x, y) = a(x, y) + b(x, y) * 3 + c(x, y) * 5;
        a.compute_root();
        b.compute_root().compute_with(a, y);
        c.compute_root().compute_with(a, y, LoopAlignStrategy::AlignEnd);
        std::string ir = ir_of(out, {32, 16});
        EXPECT_EQ(loops_named(ir, "cw3_a.s0.y"), 1) << ir;
        EXPECT_EQ(loops_named(ir, "cw3_b.s0.y") + loops_named(ir, "cw3_c.s0.y"), 0) << ir;
        Buffer<int> o = out.realize({32, 16});
        check_against_interpreter(out, o);
    }
    {
        Func b("cw4_b"), c("cw4_c"), out("cw4_out");
        b(x, y) = in(x, y) * 2;
        b(x, y) += in(x, 15 - y);
        c(x, y) = in(31 - x, y) - 3;
        c(x, y) += b(x, y) * 7;  // (c's update reads b: fused with b's update it would not be)
        c(x, y) += 7;
        out(x, y) = b(x, y) * 3 + c(x, y) * 5;
        b.compute_root();
        c.compute_root();
        c.update(1).compute_with(b.update(0), x);
        std::string m = error_of([&] { out.realize({32, 16}); });
        EXPECT_CONTAINS(m, "cw4_c");
        EXPECT_CONTAINS(m, "reads");
    }
    {
        Func b("cw5_b"), c("cw5_c"), out("cw5_out");
        b(x, y) = in(x, y) * 2;
        b(x, y) += in(x, 15 - y);
        c(x, y) = in(31 - x, y) - 3;
        c(x, y) += 7 * x;
        out(x, y) = b(x, y) * 3 + c(x, y) * 5;
        b.compute_root();
        c.compute_root();
        c.update(0).compute_with(b.update(0), x);
        Buffer<int> o = out.realize({32, 16});
        check_against_interpreter(out, o);
    }
}

// What cannot be fused is a clear error naming both stages; nothing is computed wrong.
TEST(ComputeWith, Errors) {
    {
        Pair p;  // g reads f
        Func h("cwe_h");
        h(p.x, p.y) = p.f(p.x, p.y) + 1;
        Func o2("cwe_o2");
        o2(p.x, p.y) = h(p.x, p.y) + p.f(p.x, p.y);
        p.f.compute_root();
        h.compute_root().compute_with(p.f, p.y);
        std::string m = error_of([&] { o2.realize({8, 8}); });
        EXPECT_CONTAINS(m, "cwe_h");
        EXPECT_CONTAINS(m, "reads");
    }
    {
        Pair p;  // different levels
        p.f.compute_root();
        p.g.compute_at(p.out, p.y).compute_with(p.f, p.y);
        std::string m = error_of([&] { p.out.realize({8, 8}); });
        EXPECT_CONTAINS(m, "same level");
        EXPECT_CONTAINS(m, "compute_at(cwp_out, y)");
    }
    {
        Pair p;  // no such loop
        p.f.compute_root();
        p.g.compute_root().compute_with(p.f, Var("zz"));
        std::string m = error_of([&] { p.out.realize({8, 8}); });
        EXPECT_CONTAINS(m, "no loop named \"zz\"");
    }
    {
        Pair p;  // the loops differ
        p.f.compute_root();
        p.g.compute_root().reorder(p.y, p.x).compute_with(p.f, p.y);
        std::string m = error_of([&] { p.out.realize({8, 8}); });
        EXPECT_CONTAINS(m, "same names");
    }
    {
        Pair p;  // a vectorized fused loop
        Var xo("xo");
        p.f.compute_root().split(p.x, xo, p.xi, 4).vectorize(p.xi);
        p.g.compute_root().split(p.x, xo, p.xi, 4).vectorize(p.xi).compute_with(p.f, p.xi);
        std::string m = error_of([&] { p.out.realize({8, 8}); });
        EXPECT_CONTAINS(m, "vectorized");
    }
    {
        Pair p;  // the parent is inlined
        p.g.compute_root().compute_with(p.f, p.y);
        std::string m = error_of([&] { p.out.realize({8, 8}); });
        EXPECT_CONTAINS(m, "inlined");
    }
    {
        Pair p;  // loop types differ
        p.f.compute_root().parallel(p.y);
        p.g.compute_root().compute_with(p.f, p.y);
        std::string m = error_of([&] { p.out.realize({8, 8}); });
        EXPECT_CONTAINS(m, "loop type");
    }
    {
        Pair p;  // specializations
        Param<int> k("cwe_k", 1);
        p.f.compute_root();
        p.g.compute_root().compute_with(p.f, p.y);
        p.g.specialize(k > 0).vectorize(p.x, 4);
        std::string m = error_of([&] { p.out.realize({8, 8}); });
        EXPECT_CONTAINS(m, "specializations");
    }
    {
        Pair p;  // a chain
        Func h("cwe_chain");
        h(p.x, p.y) = p.in(p.x, p.y) - 1;
        Func o3("cwe_o3");
        o3(p.x, p.y) = p.f(p.x, p.y) + p.g(p.x, p.y) + h(p.x, p.y);
        p.f.compute_root();
        p.g.compute_root().compute_with(p.f, p.y);
        h.compute_root().compute_with(p.g, p.y);
        std::string m = error_of([&] { o3.realize({8, 8}); });
        EXPECT_CONTAINS(m, "itself computed with");
    }
    {
        Pair p;  // at call time: one Func's own stages, an undefined Func
        EXPECT_CONTAINS(error_of([&] { p.f.update(0); }), "cwp_f");
        Func u("cwe_undefined");
        EXPECT_CONTAINS(error_of([&] { p.g.compute_with(u, p.y); }), "cwe_undefined");
        EXPECT_CONTAINS(error_of([&] { p.g.compute_with(p.g, p.y); }), "both stages");
        EXPECT_CONTAINS(error_of([&] { p.g.compute_with(p.f, p.y, {{p.y, LoopAlignStrategy::AlignStart}, {p.y, LoopAlignStrategy::AlignEnd}}); }),
                        "aligned twice");
        Func o4("cwe_o4");
        o4(p.x, p.y) = p.g(p.x, p.y);
        p.g.compute_root().compute_with(o4, p.y);  // a Func of another pipeline... here the consumer
        EXPECT_CONTAINS(error_of([&] { o4.realize({4, 4}); }), "reads");
    }
}

// The schedule value keeps compute_with: text, C++ source, applying it, the cache key.
TEST(ComputeWith, InScheduleValues) {
    Pair a;
    Var xo("xo");
    a.f.compute_root().split(a.x, xo, a.xi, 8);
    a.g.compute_root().split(a.x, xo, a.xi, 8).compute_with(a.f, xo, {{a.y, LoopAlignStrategy::AlignStart}});
    Schedule s = Pipeline(a.out).get_schedule();
    std::string text = s.to_string();
    EXPECT_CONTAINS(text, "compute_with \"cwp_f\" 0 \"xo\" \"y\" start");
    EXPECT_TRUE(Schedule::from_string(text) == s) << text;
    std::string src = s.cpp_source();
    EXPECT_CONTAINS(src, "cwp_g.compute_with(cwp_f, xo, {{y, LoopAlignStrategy::AlignStart}});");
    Pair b;
    Pipeline pb(b.out);
    pb.apply_schedule(s);
    EXPECT_TRUE(pb.get_schedule() == s) << pb.get_schedule().to_string();
    Buffer<int> o = b.out.realize({40, 30});
    check_against_interpreter(b.out, o);
    // The key follows the fusion and its alignment.
    Pair c, d;
    c.f.compute_root().split(c.x, xo, c.xi, 8);
    c.g.compute_root().split(c.x, xo, c.xi, 8).compute_with(c.f, xo, {{c.y, LoopAlignStrategy::AlignEnd}});
    d.f.compute_root().split(d.x, xo, d.xi, 8);
    d.g.compute_root().split(d.x, xo, d.xi, 8);
    std::string kb = internal::algorithm_key(Pipeline(b.out)), kc = internal::algorithm_key(Pipeline(c.out)),
                kd = internal::algorithm_key(Pipeline(d.out));
    EXPECT_NE(kb, kc);
    EXPECT_NE(kb, kd);
    EXPECT_NE(kc, kd);
    // Bad text.
    std::string bad = text;
    bad.replace(bad.find("\" start"), 7, "\" sideways");
    EXPECT_CONTAINS(error_of([&] { Schedule::from_string(bad); }), "loop alignment");
}

// Two reductions over one input in one pass (updates fused at their shared RDom's loops), and
// two outputs of one pipeline fused at their rows.
TEST(ComputeWith, ReductionsInOnePassAndOutputs) {
    Buffer<int> in(std::vector<int>{29, 17}, "cwr_in");
    for (int j = 0; j < 17; j++)
        for (int i = 0; i < 29; i++) in(i, j) = (i * 5 + j * 3) % 23 - 7;
    Var x("x"), y("y");
    RDom r(0, 29, 0, 17, "cwr_r");
    Func lo("cwr_lo"), hi("cwr_hi"), out("cwr_out");
    lo(x) = 0;
    lo(clamp(in(r.x, r.y) / 4, 0, 7)) += 1;
    hi(x) = 0;
    hi(x) += select(in(r.x, r.y) > x, 1, 0);
    out(x) = lo(x) * 100 + hi(x);
    lo.compute_root();
    hi.compute_root();
    hi.update(0).reorder(x, r.x, r.y).compute_with(lo.update(0), r.y);
    std::string ir = Pipeline(out).lowered_ir({8});
    EXPECT_EQ(loops_named(ir, "cwr_hi.s1.cwr_r.y"), 0) << ir;
    Buffer<int> o = out.realize({8});
    for (int b = 0; b < 8; b++) {
        int l = 0, h = 0;
        for (int j = 0; j < 17; j++)
            for (int i = 0; i < 29; i++) {
                l += std::min(std::max(in(i, j) / 4 - (in(i, j) % 4 < 0 ? 1 : 0), 0), 7) == b;
                h += in(i, j) > b;
            }
        EXPECT_EQ(o(b), l * 100 + h) << b;
    }
    // Two outputs.
    Func a("cwo_a"), c("cwo_c");
    a(x, y) = in(x, y) * 2;
    c(x, y) = in(x, y) + y;
    c.compute_with(a, y);
    Pipeline p({a, c});
    Buffer<int> oa(std::vector<int>{29, 17}, "oa"), oc(std::vector<int>{29, 17}, "oc");
    p.realize({oa, oc});
    for (int j = 0; j < 17; j++)
        for (int i = 0; i < 29; i++) {
            ASSERT_EQ(oa(i, j), in(i, j) * 2);
            ASSERT_EQ(oc(i, j), in(i, j) + j);
        }
    // A parent that is not part of the pipeline.
    Func lone("cwo_lone"), d("cwo_d");
    lone(x, y) = x;
    d(x, y) = in(x, y) - 1;
    d.compute_with(lone, y);
    EXPECT_CONTAINS(error_of([&] { d.realize({4, 4}); }), "not part of this pipeline");
}

// A Func computed at a fused loop is computed once there for every stage of the group that
// reads it (Halide's meaning: input.compute_at(f, y) with g.compute_with(f, y)), over the
// region all of them read; at the child's loop too, and at a loop outside the innermost fused
// one.
TEST(ComputeWith, AFuncComputedAtAFusedLoopServesTheGroup) {
    Var x("x"), y("y");
    auto check = [](Func a, Func f, Func g, int w, int h) {
        std::string ir = Pipeline({f, g}).lowered_ir({w, h});
        Buffer<int> fo(std::vector<int>{w, h}), go(std::vector<int>{w, h});
        Pipeline({f, g}).realize({fo, go});
        Buffer<int> fw(std::vector<int>{w, h}), gw(std::vector<int>{w, h});
        internal::interpret_pipeline(Pipeline({f, g}), {fw, gw});
        int bad = 0;
        for (int j = 0; j < h; j++)
            for (int i = 0; i < w; i++) bad += fo(i, j) != fw(i, j) || go(i, j) != gw(i, j);
        EXPECT_EQ(bad, 0) << ir;
        return ir;
    };
    {
        // At the parent's row loop: one loop over rows, the input computed in it.
        Func a("cwg_a"), f("cwg_f"), g("cwg_g");
        a(x, y) = x + y + 1;
        f(x, y) = 100 - a(x, y);
        g(x, y) = x + a(x, y + 1);  // the next row too: the region covers both readers
        a.compute_at(f, y);
        g.compute_with(f, y);
        std::string ir = check(a, f, g, 23, 17);
        EXPECT_EQ(loops_named(ir, "cwg_f.s0.y"), 1) << ir;
        EXPECT_EQ(loops_named(ir, "cwg_g.s0.y"), 0) << ir;
        EXPECT_EQ(loops_named(ir, "cwg_a.s0.y"), 1) << ir;
    }
    {
        // At the child's loop, both parallel and vectorized inside.
        Func a("cwh_a"), f("cwh_f"), g("cwh_g");
        a(x, y) = x * 3 - y;
        f(x, y) = a(x - 1, y) + a(x + 1, y);
        g(x, y) = a(x, y) * 2;
        a.compute_at(g, y).vectorize(x, 8);
        f.vectorize(x, 8).parallel(y);
        g.vectorize(x, 8).parallel(y).compute_with(f, y);
        check(a, f, g, 37, 9);
    }
    {
        // Fused at rows and columns; the shared Func at the rows (outside the innermost fused
        // loop): was refused ("computed at the loop ... inside the loops it is fused at").
        Func a("cwk_a"), f("cwk_f"), g("cwk_g");
        Var xo("xo"), xi("xi");
        a(x, y) = x - 2 * y;
        f(x, y) = a(x, y) + 1;
        g(x, y) = a(x + 3, y) - 1;
        f.split(x, xo, xi, 4);
        g.split(x, xo, xi, 4).compute_with(f, xo);
        a.compute_at(f, y);
        check(a, f, g, 16, 5);
        // Read by the parent alone, at that loop: computed there too.
        Func a2("cwk_a2"), f2("cwk_f2"), g2("cwk_g2");
        a2(x, y) = x * y;
        f2(x, y) = a2(x, y) + 1;
        g2(x, y) = x - y;
        f2.split(x, xo, xi, 4);
        g2.split(x, xo, xi, 4).compute_with(f2, xo);
        a2.compute_at(f2, y);
        check(a2, f2, g2, 16, 5);
    }
    {
        // Different row ranges lined up at their starts: each reader's rows, once each.
        Func a("cwm_a"), f("cwm_f"), g("cwm_g"), out("cwm_out");
        a(x, y) = x + 5 * y;
        f(x, y) = a(x, y) * 2;
        g(x, y) = a(x, y) - 7;
        out(x, y) = f(x, y) + g(x, y + 3) + g(x, y - 2);
        f.compute_root();
        g.compute_root().compute_with(f, y, {{y, LoopAlignStrategy::AlignStart}});
        a.compute_at(f, y);
        Buffer<int> o = out.realize({19, 11});
        check_against_interpreter(out, o);
    }
    {
        // Still refused: a loop one of its readers is not fused at (g is fused at the rows only).
        Func a("cwn_a"), f("cwn_f"), g("cwn_g");
        Var xo("xo"), xi("xi");
        a(x, y) = x + y;
        f(x, y) = a(x, y) + 1;
        g(x, y) = a(x, y) * 2;
        f.split(x, xo, xi, 4);
        g.split(x, xo, xi, 4).compute_with(f, y);
        a.compute_at(f, xo);
        Buffer<int> fo(std::vector<int>{16, 8}), go(std::vector<int>{16, 8});
        std::string m = error_of([&] { Pipeline({f, g}).realize({fo, go}); });
        EXPECT_CONTAINS(m, "cwn_a");
        EXPECT_CONTAINS(m, "also used outside that loop");
    }
}
