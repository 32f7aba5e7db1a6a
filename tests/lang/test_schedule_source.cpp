// Schedules read from C++ text (Pipeline::apply_schedule_source): what Schedule::cpp_source()
// prints reads back to the same schedule; Halide-style calls typed by hand give what the same
// calls made in C++ give; every error names its line and leaves the schedule as it was; hostile
// text is a weft::Error, never a crash or a hang.
#include "lang_test_util.h"

#include <functional>
#include <random>

using namespace weft;
using weft_test::error_of;

namespace {

using Blur = weft_test::ScheduleTestAlgo;

/** A chain a -> b -> out, two Funcs f and g read side by side (for compute_with), an update
    over a 2-D RDom, a Param. */
struct Chain {
    Buffer<int> input{std::vector<int>{80, 60}, "ch_in"};
    Param<int> w{"w", 5};
    Var x{"x"}, y{"y"};
    Func a{"ch_a"}, b{"ch_b"}, f{"ch_f"}, g{"ch_g"}, out{"ch_out"};
    RDom r{0, 4, 0, 2, "ch_r"};
    Chain() {
        for (int j = 0; j < 60; j++)
            for (int i = 0; i < 80; i++) input(i, j) = (i * 13 + j * 29) % 101 - 50;
        a(x, y) = input(x, y) * 3 + w;
        b(x, y) = a(x, y) + a(x + 1, y + 1);
        f(x, y) = input(x, y) + input(x + 1, y);
        g(x, y) = input(x, y) * 2;
        out(x, y) = b(x, y) + f(x, y) - g(x + 1, y);
        out(x, y) += b(x + r.x, y + r.y);
    }
    Buffer<int> run() { return out.realize({64, 48}); }
};

using weft_test::expect_same;

/** Most directives on Blur, all legal together and all run on the CPU. */
void schedule_blur(Blur &a) {
    Var xo("xo"), xi("xi"), yo("yo"), yi("yi"), t("t");
    a.out.specialize(a.k > 2).fuse(a.x, a.y, t).parallel(t);
    a.out.specialize(a.in.width() >= 1000).vectorize(a.x, 4);
    a.out.split(a.x, xo, xi, 16, TailStrategy::GuardWithIf)
        .split(a.y, yo, yi, 4)
        .reorder(xi, yi, xo, yo)
        .vectorize(xi, 8)
        .parallel(yo);
    a.out.update().split(a.x, xo, xi, 8, TailStrategy::RoundUp).vectorize(xi).unroll(a.r);
    a.blur.compute_root().vectorize(a.x, 8).bound(a.x, 0, 80);
    a.blur.reorder_storage(a.y, a.x).align_storage(a.x, 16);
    a.out.prefetch(a.in, yo, 2);
}

/** Levels, tiles, fuse, memory types, compute_with, RVar splits and an update's
    specialization on Chain. */
void schedule_chain(Chain &c) {
    Var xo("xo"), yo("yo"), xi("xi"), yi("yi"), t("t");
    RVar rxo("rxo"), rxi("rxi");
    c.out.bound(c.x, 0, 64);
    c.out.tile(c.x, c.y, xo, yo, xi, yi, 16, 8, TailStrategy::GuardWithIf).fuse(xo, yo, t).parallel(t).vectorize(xi, 4);
    c.b.compute_root().vectorize(c.x, 4);
    c.a.store_root().compute_at(c.b, c.y).store_in(MemoryType::Heap);
    c.f.store_in(MemoryType::Stack).align_storage(c.x, 8);
    c.f.compute_root().parallel(c.y, 4);
    c.g.compute_root().parallel(c.y, 4).compute_with(c.f, c.y, LoopAlignStrategy::AlignStart);
    c.out.update().specialize(c.w > 3).split(c.r.x, rxo, rxi, 2).unroll(rxi);
    c.out.update().tile(c.x, c.y, xo, yo, xi, yi, 8, 2).vectorize(xi).unroll(c.r.y, 2);
}

std::string source_of(Func out) { return Pipeline(out).get_schedule().cpp_source(); }

}  // namespace

// ---------------------------------------------------------------- (a) round trips

TEST(ScheduleSource, PrintedScheduleReadsBackExactlyBlur) {
    Blur a;
    schedule_blur(a);
    Schedule s = Pipeline(a.out).get_schedule();
    std::string src = s.cpp_source();
    Blur b;
    Pipeline pb(b.out);
    pb.apply_schedule_source(src);
    EXPECT_TRUE(pb.get_schedule() == s) << src << "\n---- read back as ----\n" << pb.get_schedule().cpp_source();
    Buffer<float> want = Blur().run();
    expect_same(a.run(), want, "the schedule made in C++");
    expect_same(b.run(), want, "the schedule read back");
    // The text is the whole schedule: reading it again on the scheduled pipeline changes nothing.
    pb.apply_schedule_source(src);
    EXPECT_TRUE(pb.get_schedule() == s);
}

TEST(ScheduleSource, PrintedScheduleReadsBackExactlyChain) {
    Chain a;
    schedule_chain(a);
    Schedule s = Pipeline(a.out).get_schedule();
    std::string src = s.cpp_source();
    EXPECT_NE(src.find("compute_with("), std::string::npos) << src;
    EXPECT_NE(src.find("store_in(MemoryType::Stack)"), std::string::npos) << src;
    EXPECT_NE(src.find("Stage ch_out_s1_0 = ch_out.update(0).specialize("), std::string::npos) << src;
    Chain b;
    Pipeline pb(b.out);
    pb.apply_schedule_source(src);
    EXPECT_TRUE(pb.get_schedule() == s) << src << "\n---- read back as ----\n" << pb.get_schedule().cpp_source();
    Buffer<int> want = Chain().run();
    expect_same(a.run(), want, "the schedule made in C++");
    expect_same(b.run(), want, "the schedule read back");
}

TEST(ScheduleSource, PrintedScheduleReadsBackForEachDirective) {
    struct Case {
        const char *name;
        std::function<void(Blur &)> apply;
        bool runs = true;  // (GPU loops and hints: the schedule only)
    };
    Var xo("xo"), xi("xi"), yo("yo"), yi("yi"), t("t");
    RVar ro("ro"), ri("ri");
    const std::vector<Case> cases = {
        {"split", [&](Blur &a) { a.out.split(a.x, xo, xi, 8); }},
        {"split shift", [&](Blur &a) { a.out.split(a.x, xo, xi, 8, TailStrategy::ShiftInwards); }},
        {"split by a Param", [&](Blur &a) { a.out.split(a.x, xo, xi, a.k); }},
        {"split by an Expr", [&](Blur &a) { a.out.split(a.x, xo, xi, max(a.k * 2, 4) % 5 + 1); }},
        {"fuse", [&](Blur &a) { a.out.fuse(a.x, a.y, t); }},
        {"reorder", [&](Blur &a) { a.out.reorder(a.y, a.x); }},
        {"tile", [&](Blur &a) { a.out.tile(a.x, a.y, xo, yo, xi, yi, 8, 4); }},
        {"tile in place", [&](Blur &a) { a.out.tile(a.x, a.y, xi, yi, 8, 4, TailStrategy::GuardWithIf); }},
        {"vectorize", [&](Blur &a) { a.out.vectorize(a.x, 8); }},
        {"unroll", [&](Blur &a) { a.out.unroll(a.x, 2); }},
        {"parallel", [&](Blur &a) { a.out.parallel(a.y, 4); }},
        {"serial", [&](Blur &a) { a.out.parallel(a.y).serial(a.y); }},
        {"update rvar split", [&](Blur &a) { a.out.update().split(a.r, ro, ri, 2).unroll(ri); }},
        {"update atomic", [&](Blur &a) { a.out.update().atomic().parallel(a.r); }},
        {"update atomic(true)", [&](Blur &a) { a.out.update().atomic(true); }},
        {"specialize twice", [&](Blur &a) {
             a.out.specialize(a.k > 2 && a.k < 100).vectorize(a.x, 4);
             a.out.specialize(a.k == -2147483647 - 1 || !(a.k != 1)).parallel(a.y);
         }},
        {"specialize on a float",
         [&](Blur &a) { a.out.specialize(cast<float>(a.k) * 0.5f > 1.25f).vectorize(a.x, 4); }},
        {"specialize on doubles",
         [&](Blur &a) { a.out.specialize(select(a.k > 1, 2.0, 3.0) > cast<double>(a.k) * 0.5).vectorize(a.x, 4); }},
        {"specialize on a shape", [&](Blur &a) { a.out.specialize(a.in.dim(1).extent() % 8 == 0).vectorize(a.x, 8); }},
        {"compute_at", [&](Blur &a) { a.blur.compute_at(a.out, a.y); }},
        {"store_root", [&](Blur &a) { a.blur.compute_at(a.out, a.y).store_root(); }},
        {"store_at", [&](Blur &a) {
             a.out.split(a.y, yo, yi, 4);
             a.blur.compute_at(a.out, yi).store_at(a.out, yo);
         }},
        {"compute_inline", [&](Blur &a) { a.blur.compute_root().compute_inline(); }},
        {"bound", [&](Blur &a) { a.blur.compute_root().bound(a.x, 0, 80); }},
        {"bound by a shape", [&](Blur &a) { a.blur.compute_root().bound(a.y, 0, a.in.height()); }},
        {"store_in heap", [&](Blur &a) { a.blur.compute_at(a.out, a.y).store_in(MemoryType::Heap); }},
        {"reorder_storage", [&](Blur &a) { a.blur.compute_root().reorder_storage(a.y, a.x); }},
        {"align_storage", [&](Blur &a) { a.blur.compute_root().align_storage(a.x, 16); }},
        {"align_bounds", [&](Blur &a) { a.blur.compute_root().align_bounds(a.y, 4); }},
        {"align_bounds remainder", [&](Blur &a) { a.blur.compute_root().align_bounds(a.y, 4, 1); }, false},
        {"fold_storage", [&](Blur &a) { a.blur.store_root().compute_at(a.out, a.y).fold_storage(a.y, 4); }, false},
        {"store_nontemporal", [&](Blur &a) { a.out.store_nontemporal(); }},
        {"prefetch", [&](Blur &a) { a.out.prefetch(a.in, a.y, 1); }},
        {"prefetch a Func", [&](Blur &a) {
             a.blur.compute_root();
             a.out.prefetch(a.blur, a.y, 2);
         }},
        {"load_ahead", [&](Blur &a) { a.blur.compute_at(a.out, a.y).load_ahead(); }, false},
        {"gpu_blocks", [&](Blur &a) { a.out.gpu_blocks(a.y); }, false},
        {"gpu_tile", [&](Blur &a) { a.out.gpu_tile(a.x, a.y, xo, yo, xi, yi, 8, 8); }, false},
        {"gpu_single_thread", [&](Blur &a) { a.out.update().gpu_single_thread(); }, false},
        {"store_in gpu_shared", [&](Blur &a) { a.blur.compute_at(a.out, a.y).store_in(MemoryType::GPUShared); }, false},
    };
    Buffer<float> want = Blur().run();
    for (auto &c : cases) {
        SCOPED_TRACE(c.name);
        Blur a;
        c.apply(a);
        Schedule s = Pipeline(a.out).get_schedule();
        std::string src = s.cpp_source();
        Blur b;
        Pipeline pb(b.out);
        try {
            pb.apply_schedule_source(src);
        } catch (const Error &e) {
            ADD_FAILURE() << c.name << ": " << e.what() << "\n" << src;
            continue;
        }
        EXPECT_TRUE(pb.get_schedule() == s) << src << "\n---- read back as ----\n" << pb.get_schedule().cpp_source();
        if (!c.runs) continue;
        try {
            expect_same(b.run(), want, c.name);
        } catch (const Error &e) {
            ADD_FAILURE() << c.name << ": " << e.what() << "\n" << src;
        }
    }
}

TEST(ScheduleSource, FuncsOfOneNameAreNamedByTheirIdentifiers) {
    Var x("x");
    Func f1("dup"), f2("dup"), out("dup_out");
    f1(x) = x * 3;
    f2(x) = x + 7;
    out(x) = f1(x) + f2(x + 1);
    f1.compute_root().vectorize(x, 4);
    f2.compute_at(out, x);
    Schedule s = Pipeline(out).get_schedule();
    std::string src = s.cpp_source();
    EXPECT_NE(src.find("dup_2."), std::string::npos) << src;
    Func g1("dup"), g2("dup"), out2("dup_out");
    g1(x) = x * 3;
    g2(x) = x + 7;
    out2(x) = g1(x) + g2(x + 1);
    Pipeline p(out2);
    p.apply_schedule_source(src);
    EXPECT_TRUE(p.get_schedule() == s) << src << "\n---- read back as ----\n" << p.get_schedule().cpp_source();
    // The pipeline's own names read too ('$' and all).
    std::string named = src;
    for (size_t at = named.find("dup_2"); at != std::string::npos; at = named.find("dup_2", at))
        named.replace(at, 5, "dup$2");
    p.apply_schedule_source("");
    p.apply_schedule_source(named);
    EXPECT_TRUE(p.get_schedule() == s) << named;
    Buffer<int> r = out2.realize({16});
    for (int i = 0; i < 16; i++) EXPECT_EQ(r(i), i * 3 + i + 8);
}

// ---------------------------------------------------------------- (b) by hand, Halide's style

TEST(ScheduleSource, HalideStyleTextMatchesTheSameCallsInCpp) {
    const std::string text = R"(// The blur, scheduled by hand: no declarations.
using namespace weft;

out.tile(x, y, xo, yo, xi, yi, 16, 4, weft::TailStrategy::GuardWithIf)
   .vectorize(xi, 8)
   .parallel(yo);
Stage wide = out.specialize(in.width() >= 64 && k > 2);   // a fast path
wide.unroll(yi, 2);
out.update(0).tile(x, y, xi, yi, 4, 2)
   .unroll(r.x)
   .parallel(y, 2);
/* the producer,
   per tile */
blur.compute_at(out, xo)
    .vectorize(x, 4);
blur.store_in(MemoryType::Stack);
)";
    Blur a;
    Pipeline pa(a.out);
    pa.apply_schedule_source(text);
    Blur b;
    {
        Var xo("xo"), yo("yo"), xi("xi"), yi("yi");
        b.out.tile(b.x, b.y, xo, yo, xi, yi, 16, 4, TailStrategy::GuardWithIf).vectorize(xi, 8).parallel(yo);
        Stage wide = b.out.specialize(b.in.width() >= 64 && b.k > 2);
        wide.unroll(yi, 2);
        b.out.update(0).tile(b.x, b.y, xi, yi, 4, 2).unroll(b.r.x).parallel(b.y, 2);
        b.blur.compute_at(b.out, xo).vectorize(b.x, 4);
        b.blur.store_in(MemoryType::Stack);
    }
    Schedule want = Pipeline(b.out).get_schedule();
    EXPECT_TRUE(pa.get_schedule() == want) << "read:\n"
                                           << pa.get_schedule().cpp_source() << "\n---- made in C++ ----\n"
                                           << want.cpp_source();
    Buffer<float> ref = Blur().run();
    expect_same(a.run(), ref, "the schedule read from text");
    expect_same(b.run(), ref, "the same calls in C++");
}

TEST(ScheduleSource, DeclarationsConstantsAndStagesReadAsCppWouldMakeThem) {
    // Declared names (a Var whose name is not its identifier), C++ constant arithmetic, a
    // Stage variable for an update, a specialization in a chain, split outputs left undeclared.
    const std::string text = "Var inner(\"xi\"), y_outer{\"yo\"};\n"
                             "weft::RVar rx(\"r.x\");\n"
                             "Stage u = out.update();\n"
                             "u.split(rx, rxo, rxi, 4 / 2 + (7 % 4 - 2)).unroll(rxi);\n"
                             "out.split(x, xo, inner, 2 * 4, TailStrategy::RoundUp).split(y, y_outer, yi, 2 + 1)\n"
                             "   .specialize(k >= 3).vectorize(inner);\n"
                             "out.vectorize(inner).fuse(yi, y_outer, yy);\n"
                             "blur.compute_at(out, xo).bound(x, -(-1) - 1, 100 - 20).align_bounds(y, 2);;\n";
    Blur a;
    Pipeline pa(a.out);
    pa.apply_schedule_source(text);
    Blur b;
    {
        Var xi("xi"), xo("xo"), yo("yo"), yi("yi"), yy("yy");
        RVar rx("r.x"), rxo("rxo"), rxi("rxi");
        Stage u = b.out.update();
        u.split(rx, rxo, rxi, 3).unroll(rxi);
        b.out.split(b.x, xo, xi, 8, TailStrategy::RoundUp).split(b.y, yo, yi, 3).specialize(b.k >= 3).vectorize(xi);
        b.out.vectorize(xi).fuse(yi, yo, yy);
        b.blur.compute_at(b.out, xo).bound(b.x, 0, 80).align_bounds(b.y, 2);
    }
    Schedule want = Pipeline(b.out).get_schedule();
    EXPECT_TRUE(pa.get_schedule() == want) << "read:\n"
                                           << pa.get_schedule().cpp_source() << "\n---- made in C++ ----\n"
                                           << want.cpp_source();
    expect_same(a.run(), Blur().run(), "the schedule read from text");
}

TEST(ScheduleSource, EmptyTextIsTheDefaultSchedule) {
    Blur a;
    Schedule plain = Pipeline(a.out).get_schedule();
    schedule_blur(a);
    Pipeline p(a.out);
    EXPECT_FALSE(p.get_schedule() == plain);
    p.apply_schedule_source("");
    EXPECT_TRUE(p.get_schedule() == plain) << p.get_schedule().cpp_source();
    schedule_blur(a);
    p.apply_schedule_source("  // nothing but comments\n/* and */ ; using namespace weft;\n\n");
    EXPECT_TRUE(p.get_schedule() == plain);
    // A Func the text does not name gets the default schedule.
    schedule_blur(a);
    p.apply_schedule_source("blur.compute_root();");
    Blur c;
    c.blur.compute_root();
    EXPECT_TRUE(p.get_schedule() == Pipeline(c.out).get_schedule()) << p.get_schedule().cpp_source();
    expect_same(a.run(), Blur().run(), "after reading schedules");
}

// ---------------------------------------------------------------- (c) errors

TEST(ScheduleSource, ErrorsNameTheLineAndKeepTheSchedule) {
    Blur a;
    a.out.vectorize(a.x, 8);
    a.blur.compute_root();
    Pipeline p(a.out);
    Schedule before = p.get_schedule();
    struct Bad {
        std::string text;
        int line;
        std::vector<std::string> says;
    };
    const std::vector<Bad> bad = {
        // Names.
        {"out.vectorize(x);\nblurr.compute_root();", 2, {"unknown Func \"blurr\"", "blur", "out"}},
        {"\n\nout.vectorise(x);", 3,
         {"unknown call \"vectorise\" on Func \"out\"", "did you mean vectorize", "known: split"}},
        {"out.update(0).compute_root();", 1, {"compute_root() is a call of a Func", "Stage"}},
        {"out.update(1).vectorize(x);", 1, {"has 1 update definition", "update(1) does not exist"}},
        {"out.vectorize(q);", 1, {"Func \"out\".vectorize(): no loop \"q\"", "y, x"}},
        {"Var xo(\"xo\");\nout.split(x, xo, xi, 8);\nout.vectorize(x);", 3, {"no loop \"x\"", "xo, xi"}},
        {"out.update(0).split(z, a, b, 2);", 1, {"Func \"out\".update(0).split(): no loop \"z\"", "r.x"}},
        {"blur.compute_root();\nblur.compute_at(out, nowhere);", 2, {"has no loop \"nowhere\""}},
        {"out.specialize(w > 2).vectorize(x);", 1, {"unknown name \"w\"", "Params: k"}},
        {"out.split(x, xo, xi, y);", 1, {"\"y\" is a loop", "not a value"}},
        {"out.store_in(MemoryType::Shared);", 1, {"unknown MemoryType \"Shared\"", "GPUShared"}},
        {"out.split(x, xo, xi, 8, TailStrategy::Sideways);", 1, {"unknown TailStrategy \"Sideways\""}},
        {"out.split(x, xo, xi, 8, 4);", 1, {"must be a TailStrategy"}},
        {"out.rfactor(r, u);", 1, {"rfactor() makes a new Func"}},
        {"Func g = out;", 1, {"a Func declaration takes a wrapper made there by in() or clone_in()"}},
        {"Image g = out;", 1, {"only Var, RVar, Stage and Func (a wrapper"}},
        {"out.prefetch(nothing, y);", 1, {"must be a Func or an input", "inputs: in"}},
        {"Stage s = out.specialize(k > 1);\ns.specialize(k > 2);", 2, {"specialize() of a specialization"}},
        // Argument counts.
        {"out.split(x, xo, xi);", 1, {"split() takes 4 or 5 arguments", "got 3"}},
        {"out.compute_root(1);", 1, {"compute_root() takes 0 arguments, got 1"}},
        {"out.tile(x, y, xi, yi, 8);", 1, {"tile() takes", "got 5"}},
        {"out.vectorize();", 1, {"vectorize() takes 1 to 3 arguments"}},
        {"out.specialize(min(k));", 1, {"min() takes two or more arguments"}},
        // Syntax.
        {"out.vectorize(x;", 1, {"expected ')' after the arguments of vectorize()"}},
        {"out.vectorize(x)\nout.parallel(y);", 1, {"expected ';' after the schedule call", "\"out\""}},
        {"out.vectorize(x));", 1, {"expected ';'", "')'"}},
        {"out.vectorize(x); )", 1, {"expected a declaration", "')'"}},
        {"out..vectorize(x);", 1, {"expected a call after '.'"}},
        {"out.vectorize x;", 1, {"expected '(' after vectorize"}},
        {"out.vectorize(x);\n/* open\n\n", 2, {"/* comment is not closed"}},
        {"Var x(\"x);\n", 1, {"string is not closed"}},
        {"out.split(x, xo, xi, 8 @ 2);", 1, {"unexpected '@'"}},
        {"out.split(x, xo, xi, 0x);", 1, {"needs digits after 0x"}},
        {"out.split(x, xo, xi, 99999999999999999999999);", 1, {"too large"}},
        {"#include <weft.h>\n", 1, {"preprocessor"}},
        {"out.split(x, xo, xi, 8 / (2 - 2));", 1, {"division of constants by zero"}},
        {"out.split(x, xo, xi, 2147483647 + 1);", 1, {"integer overflow"}},
        {"out.specialize(k > \"two\");", 1, {"a string may only name"}},
        {"out.split(x, xo, xi, (int64_t)k);", 1, {"C cast", "constants only"}},
        // Calls the API refuses when they are made: the call's own message, with the line.
        {"out.vectorize(x);\nout.split(x, xo, xi, 0);", 2, {"Func \"out\".split", "must be positive"}},
        {"\nout.update(0).vectorize(r.x);", 2, {"reduction loop cannot run as vector lanes"}},
        {"out.update(0).parallel(r_x, 2);", 1, {"reduction loop cannot run in parallel"}},
        {"out.specialize(k);", 1, {"condition must be a scalar bool"}},
        {"blur.compute_at(blur, x);", 1, {"cannot be computed inside itself"}},
        {"out.split(x, xo, xo, 8);", 1, {"outer and inner names are both \"xo\""}},
        {"out.split(x, y, xi, 8);", 1, {"the name \"y\" is already a loop"}},
        {"out.fuse(x, x, t);", 1, {"the same loop"}},
        {"out.reorder(x, y, x);", 1, {"listed twice"}},
        {"out.update(0).fuse(r.x, x, t);", 1, {"cannot fuse a pure Var with an RVar"}},
        {"out.update(0).split(r.x, ro, ri, 2).reorder(ro, ri);", 1, {"cannot change the order of reduction loops"}},
        {"out.atomic();", 1, {"only an update can be atomic"}},
        {"blur.bound(q, 0, 8);", 1, {"\"q\" is not one of its Vars"}},
        {"blur.align_storage(x, 0);", 1, {"align_storage"}},
        {"blur.fold_storage(x, 4, false);", 1, {"only forward folds"}},
        {"blur.compute_root();\n\nout.compute_with(out.update(0), y);", 3, {"compute_with", "both stages"}},
        {"blur.compute_root();\nout.compute_with(blur, q);", 2, {"Func \"out\".compute_with(blur, q): no loop \"q\""}},
        {"out.specialize(in.dim(5).extent() > 8);", 1, {"input \"in\" has no dimension 5"}},
        {"out.specialize(in.depth() > 8);", 1, {"unknown shape \"depth\""}},
        // Levels that lowering would refuse: said here, with the line.
        {"blur.compute_root();\nout.compute_at(blur, x);", 2, {"Func \"blur\" does not use \"out\""}},
    };
    for (auto &b : bad) {
        SCOPED_TRACE(b.text);
        std::string e = error_of([&] { p.apply_schedule_source(b.text); });
        EXPECT_CONTAINS(e, "apply_schedule_source(): schedule line " + std::to_string(b.line) + ": ");
        for (auto &s : b.says) EXPECT_CONTAINS(e, s);
        EXPECT_TRUE(p.get_schedule() == before) << "a failed apply_schedule_source() must leave the schedule as it was";
    }
    // Through other Funcs is fine; at an inlined Func is not.
    Chain c;
    Pipeline pc(c.out);
    Schedule cb = pc.get_schedule();
    std::string e = error_of([&] { pc.apply_schedule_source("ch_a.compute_at(ch_b, x);"); });
    EXPECT_CONTAINS(e, "schedule line 1: Func \"ch_a\".compute_at(ch_b, x): Func \"ch_b\" is inlined");
    EXPECT_TRUE(pc.get_schedule() == cb);
    e = error_of([&] { pc.apply_schedule_source("ch_b.compute_root();\nch_out.compute_at(ch_f, x);"); });
    EXPECT_CONTAINS(e, "schedule line 2: ");
    EXPECT_CONTAINS(e, "does not use");
    // Only the level that stands at the end counts.
    pc.apply_schedule_source("ch_a.compute_at(ch_f, x);\nch_a.compute_root();");
    pc.apply_schedule_source("ch_a.compute_at(ch_out, y);");  // ch_out reads ch_a through ch_b (inlined)
    expect_same(c.run(), Chain().run(), "compute_at through an inlined Func");
    // And the pipeline still runs with the schedule it kept.
    expect_same(a.run(), Blur().run(), "after failed reads");
}

// ---------------------------------------------------------------- (d) hostile text

TEST(ScheduleSource, HostileTextIsAnErrorNeverACrash) {
    Blur a;
    a.out.vectorize(a.x, 8);
    Pipeline p(a.out);
    Schedule before = p.get_schedule();
    auto refused = [&](const std::string &text, const std::string &says) {
        std::string e = error_of([&] { p.apply_schedule_source(text); });
        EXPECT_CONTAINS(e, "schedule line ");
        EXPECT_CONTAINS(e, says);
        EXPECT_TRUE(p.get_schedule() == before);
    };
    const int n = 100000;
    refused("out.split(x, xo, xi, " + std::string(n, '(') + "8" + std::string(n, ')') + ");", "nested too deeply");
    refused("out.reorder(" + std::string(n, '{') + "x" + std::string(n, '}') + ");", "nested too deeply");
    refused("out.split(x, xo, xi, " + std::string(n, '-') + "8);", "nested too deeply");
    {
        std::string calls;
        for (int i = 0; i < 1000; i++) calls += "max(";
        refused("out.split(x, xo, xi, min(" + calls + "k", "nested too deeply");
    }
    {
        std::string chain;
        for (int i = 0; i < n; i++) chain += "k + ";
        refused("out.specialize(" + chain + "k > 0);", "nested too deeply");
    }
    {
        // A long sum of constants folds to one constant, as in C++: no depth at all.
        std::string sum = "1";
        for (int i = 0; i < n; i++) sum += " + 0";
        p.apply_schedule_source("out.split(x, xo, xi, " + sum + ");");
        EXPECT_NE(p.get_schedule().cpp_source().find("out.split(x, xo, xi, 1);"), std::string::npos);
        p.apply_schedule(before);
    }
    // A megabyte of garbage, and more than a megabyte of anything.
    std::mt19937 rng(20240611);
    std::string garbage(1 << 20, ' ');
    for (auto &ch : garbage) ch = (char)(0x20 + rng() % 95);
    error_of([&] { p.apply_schedule_source(garbage); });
    EXPECT_TRUE(p.get_schedule() == before);
    refused(std::string((1 << 20) + 1, ' '), "at most 1048576");
    {
        // Long names and numbers are cut short in messages.
        std::string e = error_of([&] { p.apply_schedule_source("out." + std::string(500000, 'v') + "(x);"); });
        EXPECT_CONTAINS(e, "unknown call \"vvvv");
        EXPECT_LT(e.size(), 2000u);
        e = error_of([&] { p.apply_schedule_source("out.split(x, xo, xi, " + std::string(500000, '7') + ");"); });
        EXPECT_CONTAINS(e, "too large");
        EXPECT_LT(e.size(), 2000u);
    }
    refused("out.vectorize(x);" + std::string(1 << 20, '\n'), "at most");
    // Random text: bytes, and token soups close enough to the language to reach deep into the
    // parser. Each must be read or refused with a weft::Error.
    const std::vector<std::string> words = {
        "out", "blur", "update", "(", ")", "(", ")", ".", ".", ",", ",", ";", "x", "y", "xo", "xi", "r.x", "r_x",
        "k", "in", "8", "0", "-1", "2.5f", "1e9", "\"s\"", "Var", "RVar", "Stage", "s", "=", "{", "}", "+", "*", "/",
        "%", "<", "&&",
        "!", "split", "tile", "vectorize", "parallel", "unroll", "fuse", "reorder", "compute_at", "compute_root",
        "store_at", "bound", "specialize", "compute_with", "prefetch", "atomic", "store_in", "TailStrategy::RoundUp",
        "MemoryType::Stack", "LoopAlignStrategy::AlignEnd", "weft::", "cast", "Int(32)", "min", "select", "true",
        "//", "/*", "*/", "\n", "in.width()", "in.dim(0).extent()", "(int64_t)", "using namespace weft;"};
    int read = 0;
    for (int i = 0; i < 200; i++) {
        std::string text;
        size_t len = rng() % 200;
        if (i % 3 == 0) {
            for (size_t j = 0; j < len; j++) text += (char)(rng() % 256);
        } else {
            for (size_t j = 0; j < len / 4; j++) text += words[rng() % words.size()] + (rng() % 3 ? " " : "");
        }
        Schedule was = p.get_schedule();
        try {
            p.apply_schedule_source(text);
            read++;
        } catch (const Error &e) {
            EXPECT_TRUE(p.get_schedule() == was) << text;
        } catch (...) {
            ADD_FAILURE() << "not a weft::Error for:\n" << text;
        }
    }
    // Well-formed statements, shuffled: some read, some refused by the calls; never a crash.
    const std::vector<std::string> statements = {
        "out.split(x, xo, xi, 8);", "out.vectorize(xi);", "out.parallel(y);", "out.reorder(y, x);",
        "out.tile(x, y, xo, yo, xi, yi, 4, 4);", "out.fuse(x, y, t);", "blur.compute_at(out, y);",
        "blur.compute_root();", "blur.store_root();", "out.update(0).unroll(r.x);", "out.update(0).vectorize(x, 4);",
        "Stage s = out.specialize(k > 1);", "s.vectorize(x, 4);", "blur.vectorize(x, 8);", "out.prefetch(in, y);",
        "blur.compute_at(out, xo);", "out.unroll(xi, 2);", "out.update(0).atomic();", "out.update(0).parallel(r.x);"};
    for (int i = 0; i < 200; i++) {
        std::string text;
        size_t len = rng() % 8;
        for (size_t j = 0; j < len; j++) text += statements[rng() % statements.size()] + "\n";
        Schedule was = p.get_schedule();
        try {
            p.apply_schedule_source(text);
            read++;
            if (rng() % 8 == 0) {
                try {
                    expect_same(a.run(), Blur().run(), text);
                } catch (const Error &) {
                    // (a schedule only lowering refuses: not this test's matter)
                }
            }
        } catch (const Error &e) {
            EXPECT_TRUE(p.get_schedule() == was) << text;
            EXPECT_CONTAINS(std::string(e.what()), "schedule line ");
        }
    }
    EXPECT_GT(read, 0);
}

// ---------------------------------------------------------------- (e) wrappers (in, clone_in)

namespace {
/** A cheap Func p read by a stencil a and by the output (Halide's clone trick: a copy of p
    computed per row of a, p itself elsewhere), a Func q cloned for a, an input wrapped for out. */
struct Wrapped {
    Buffer<int> input{std::vector<int>{70, 50}, "wr_in"};
    Var x{"x"}, y{"y"};
    Func p{"wr_p"}, q{"wr_q"}, a{"wr_a"}, out{"wr_out"};
    Wrapped() {
        for (int j = 0; j < 50; j++)
            for (int i = 0; i < 70; i++) input(i, j) = (i * 7 + j * 31) % 53 - 20;
        Func c = BoundaryConditions::repeat_edge(input);
        p(x, y) = c(x, y) * 3 + 1;
        q(x, y) = c(x, y) - 2;
        a(x, y) = p(x - 1, y) + p(x + 1, y) + q(x, y) + q(x, y + 1);
        out(x, y) = a(x, y) + p(x, y) * q(x, y) + input(clamp(x, 0, 69), clamp(y, 0, 49));
    }
    void schedule() {
        Var yo("yo"), yi("yi");
        a.compute_root().split(y, yo, yi, 8);
        p.in(a).store_at(a, yo).compute_at(a, yi).vectorize(x, 8);
        p.in().compute_root();
        q.clone_in(a).compute_at(a, yo);
        input.in(out).compute_root();
    }
    Buffer<int> run() { return out.realize({64, 48}); }
};
}  // namespace

TEST(ScheduleSource, WrappersAreMadeAgainFromTheValueTheTextAndTheString) {
    Wrapped w;
    Buffer<int> want = Wrapped().run();  // (unscheduled: no wrappers)
    w.schedule();
    Schedule s = Pipeline(w.out).get_schedule();
    auto wrapper_lines = [](const Schedule &v) {
        std::string t = v.to_string();
        int n = 0;
        for (size_t at = t.find("\nwrapper "); at != std::string::npos; at = t.find("\nwrapper ", at + 1)) n++;
        return n;
    };
    ASSERT_EQ(wrapper_lines(s), 4) << s.to_string();
    std::string src = s.cpp_source();
    for (const char *t : {"Func wr_p_in_wr_a = wr_p.in(wr_a);", "Func wr_p_in = wr_p.in();",
                          "Func wr_q_clone_in_wr_a = wr_q.clone_in(wr_a);", "Func wr_in_in_wr_out = wr_in.in(wr_out);",
                          "wr_p_in_wr_a.compute_at(wr_a, yi);", "wr_q_clone_in_wr_a.compute_at(wr_a, yo);"})
        EXPECT_NE(src.find(t), std::string::npos) << t << " in:\n" << src;
    expect_same(w.run(), want, "the schedule made in C++");

    // Pasted on the algorithm alone: the same schedule, wrappers included, and the same values.
    Wrapped b;
    Pipeline pb(b.out);
    pb.apply_schedule_source(src);
    EXPECT_TRUE(pb.get_schedule() == s) << src << "\n---- read back as ----\n" << pb.get_schedule().cpp_source();
    expect_same(b.run(), want, "the schedule read back from C++");
    pb.apply_schedule_source(src);  // (again: the wrappers there are the ones it names)
    EXPECT_TRUE(pb.get_schedule() == s) << pb.get_schedule().cpp_source();

    // The text form, and a value applied to the algorithm alone.
    Schedule back = Schedule::from_string(s.to_string());
    EXPECT_TRUE(back == s) << s.to_string() << "\n----\n" << back.to_string();
    Wrapped c;
    Pipeline pc(c.out);
    pc.apply_schedule(back);
    EXPECT_TRUE(pc.get_schedule() == s) << pc.get_schedule().cpp_source();
    expect_same(c.run(), want, "the value applied");

    // A value without wrappers takes them away (a value is the whole schedule).
    Schedule plain = Pipeline(Wrapped().out).get_schedule();
    pc.apply_schedule(plain);
    EXPECT_TRUE(pc.get_schedule() == plain) << pc.get_schedule().to_string();
    EXPECT_EQ(wrapper_lines(pc.get_schedule()), 0);
    expect_same(c.run(), want, "the wrappers taken away");

    // Halide's chained form, typed by hand, gives the same as the calls made in C++.
    Wrapped d;
    Pipeline pd(d.out);
    pd.apply_schedule_source("Var yo(\"yo\"), yi(\"yi\");\n"
                             "wr_a.compute_root().split(y, yo, yi, 8);\n"
                             "wr_p.in(wr_a).store_at(wr_a, yo).compute_at(wr_a, yi).vectorize(x, 8);\n"
                             "Func all = wr_p.in();\nall.compute_root();\n"
                             "wr_q.clone_in({wr_a}).compute_at(wr_a, yo);\n"
                             "wr_in.in(wr_out).compute_root();\n");
    EXPECT_TRUE(pd.get_schedule() == s) << pd.get_schedule().cpp_source();
    expect_same(d.run(), want, "the chained form");
}

TEST(ScheduleSource, BadWrappersAreErrorsThatLeaveTheScheduleAsItWas) {
    Wrapped w;
    w.schedule();
    Pipeline p(w.out);
    Schedule before = p.get_schedule();
    struct Bad {
        std::string text;
        std::vector<std::string> says;
    };
    const std::vector<Bad> bad = {
        {"wr_p.in(nosuch);", {"schedule line 1", "in() takes consumer Funcs, not \"nosuch\""}},
        {"wr_p.in(wr_p);", {"schedule line 1", "cannot be wrapped for itself"}},
        {"wr_q.clone_in();", {"schedule line 1", "clone_in() needs the consumers"}},
        {"wr_in.clone_in(wr_out);", {"schedule line 1", "inputs have in(), not clone_in()"}},
        {"wr_in.compute_root();", {"schedule line 1", "in() is the only schedule call on an input"}},
        {"wr_p.in(3);", {"schedule line 1", "takes consumer Funcs"}},
        {"Func v = wr_p.in(wr_a);\nFunc v2 = wr_p;", {"schedule line 2", "takes a wrapper"}},
        {"Func k = wr_p.in(wr_a);\nk.compute_at(wr_a, nowhere);", {"schedule line 2", "nowhere"}},
        {"Func k = wr_p.in(wr_a);\nk.split(x, xo, xi, 0);", {"schedule line 2", "factor must be positive"}},
    };
    for (auto &b : bad) {
        std::string e = error_of([&] { p.apply_schedule_source(b.text); });
        for (auto &s : b.says) EXPECT_NE(e.find(s), std::string::npos) << b.text << "\nsays: " << e << "\nnot: " << s;
        EXPECT_TRUE(p.get_schedule() == before) << b.text << "\nleft:\n" << p.get_schedule().cpp_source();
    }
    // Text forms that do not read.
    for (const char *t : {"weft-schedule 1\nwrapper \"f\"\nend\n", "weft-schedule 1\nwrapper \"f\" \"g\" clone for\nend\n",
                          "weft-schedule 1\nfunc \"f\" args \"x\"\nwrapper \"f\" \"g\" for\nend\n",
                          "weft-schedule 1\nwrapper \"f\" \"g\" for\nwrapper \"h\" \"g\" for\nend\n",
                          "weft-schedule 1\nwrapper \"f\" \"g\" copy for\nend\n"})
        EXPECT_NE(error_of([&] { Schedule::from_string(t); }), "") << t;
    // A value without the wrappers whose calls fail after they were taken away: put back.
    std::string plain = Pipeline(Wrapped().out).get_schedule().to_string();
    size_t at = plain.find("func \"wr_out\"");
    ASSERT_NE(at, std::string::npos) << plain;
    at = plain.find("stage 0", at);
    at = plain.find('\n', at) + 1;
    plain.insert(at, "    split \"x\" \"xo\" \"xi\" (i i32 0) auto\n");
    std::string e0 = error_of([&] { p.apply_schedule(Schedule::from_string(plain)); });
    EXPECT_NE(e0.find("factor"), std::string::npos) << e0;
    EXPECT_TRUE(p.get_schedule() == before) << p.get_schedule().to_string();
    // A value that wraps a Func this pipeline does not have.
    Schedule s = Schedule::from_string("weft-schedule 1\nwrapper \"nosuch\" \"nosuch_in\" for\nend\n");
    std::string e = error_of([&] { p.apply_schedule(s); });
    EXPECT_NE(e.find("\"nosuch\""), std::string::npos) << e;
    EXPECT_TRUE(p.get_schedule() == before);
    expect_same(w.run(), Wrapped().run(), "after the errors");
}
