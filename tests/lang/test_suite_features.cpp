// Features the ports of Halide's apps (apps/suite) needed, each general: sliding windows down a
// chain of stages, fold_storage, updates of a Func with no pure definition, inline reductions in
// vectorized consumers, and a reduction in a Func whose every loop is vectorized.
#include "lang_test_util.h"

#include <functional>
#include <regex>

#include "pipeline/PipelineInternal.h"

using namespace weft;
using weft_test::error_of;

namespace {

/** The sizes (elements) of the `allocate <name>[...]` lines of f's lowered IR. */
std::map<std::string, long> allocations(Func f, std::vector<int> sizes) {
    std::string ir = Pipeline(f).lowered_ir(sizes);
    std::map<std::string, long> r;
    std::regex re("allocate ([A-Za-z0-9_$.]+)\\[[a-z0-9]+ \\* \\(int64\\)([0-9]+)\\]");
    for (auto it = std::sregex_iterator(ir.begin(), ir.end(), re); it != std::sregex_iterator(); ++it)
        r[(*it)[1]] = std::stol((*it)[2]);
    return r;
}

/** f realized at w x h equals the interpreter's result, element for element. */
void expect_same_as_interpreter(Func f, int w, int h) {
    Buffer<float> got(std::vector<int>{w, h}, "got"), want(std::vector<int>{w, h}, "want");
    f.realize(got);
    internal::interpret_pipeline(Pipeline(f), {want});
    for (int j = 0; j < h; j++)
        for (int i = 0; i < w; i++) ASSERT_EQ(got(i, j), want(i, j)) << i << "," << j;
}

/** A chain of n vertical 5-tap stencils over a uint16 image, each stored at the output's tile
    loop and computed at its row loop (Halide's stencil_chain schedule). */
struct Chain {
    Buffer<uint16_t> in;
    Var x{"x"}, y{"y"}, xo{"xo"}, yo{"yo"}, xi{"xi"}, yi{"yi"}, t{"t"};
    std::vector<Func> st;
    Func out{"chain_out"};
    Chain(int w, int h, int n) : in(std::vector<int>{w, h}, "chain_in") {
        for (int j = 0; j < h; j++)
            for (int i = 0; i < w; i++) in(i, j) = (uint16_t)(i * 31 + j * 17 + (i * j) % 7);
        st.push_back(BoundaryConditions::repeat_edge(in));
        for (int s = 0; s < n; s++) {
            Func f("chain_" + std::to_string(s));
            Expr e = cast<uint16_t>(0);
            for (int j = -2; j <= 2; j++) e += cast<uint16_t>(j + 3) * st.back()(x + (j & 1), y + j);
            f(x, y) = e;
            st.push_back(f);
        }
        out(x, y) = st.back()(x, y);
    }
    void schedule(int tile) {
        out.tile(x, y, xo, yo, xi, yi, tile, tile).fuse(xo, yo, t).parallel(t).vectorize(xi, 8);
        for (size_t i = 1; i < st.size(); i++) st[i].store_at(out, t).compute_at(out, yi).vectorize(x, 8);
    }
};

}  // namespace

TEST(SlidingWindow, SlidesDownAChainOfStages) {
    for (int n : {2, 4}) {
        for (auto wh : {std::pair<int, int>{64, 64}, {70, 45}}) {
            Chain c(wh.first, wh.second, n);
            c.schedule(32);
            Buffer<uint16_t> got(std::vector<int>{wh.first, wh.second}, "got"), want(std::vector<int>{wh.first, wh.second}, "want");
            c.out.realize(got);
            internal::interpret_pipeline(Pipeline(c.out), {want});
            for (int j = 0; j < wh.second; j++)
                for (int i = 0; i < wh.first; i++) ASSERT_EQ(got(i, j), want(i, j)) << n << " stages at " << i << "," << j;
            // Every stage slides (one new row per iteration), so each is a ring of a few rows, not
            // the tile's height plus the halos of the stages after it.
            auto a = allocations(c.out, {wh.first, wh.second});
            for (int s = 1; s <= n; s++) {
                std::string name = "chain_" + std::to_string(s - 1);
                ASSERT_TRUE(a.count(name)) << name;
                EXPECT_LE(a[name], 16L * (32 + 2 * n)) << name << " is not folded to a ring of rows";
            }
        }
    }
}

TEST(SlidingWindow, FoldsAWindowThatVariesWithTheRow) {
    // Upsampling: row y of `up` reads rows y / 2 and (y + 1) / 2 of `half` (one or two rows,
    // by the parity of y). Stored per strip and computed per row, `half` slides; its ring holds
    // the widest window (2 rows), not the strip.
    for (auto wh : {std::pair<int, int>{64, 64}, {37, 45}}) {
        Buffer<float> in(std::vector<int>{wh.first, wh.second}, "fin");
        for (int j = 0; j < wh.second; j++)
            for (int i = 0; i < wh.first; i++) in(i, j) = (float)((i * 7 + j * 13) % 29);
        Var x("x"), y("y"), yo("yo"), yi("yi");
        Func clamped = BoundaryConditions::repeat_edge(in);
        Func half("half"), up("up");
        half(x, y) = clamped(x, 2 * y) + clamped(x, 2 * y + 1);
        up(x, y) = half(x, y / 2) + 2.0f * half(x, (y + 1) / 2);
        up.split(y, yo, yi, 16).parallel(yo).vectorize(x, 8);
        half.store_at(up, yo).compute_at(up, yi).vectorize(x, 8);
        expect_same_as_interpreter(up, wh.first, wh.second);
        auto a = allocations(up, {wh.first, wh.second});
        ASSERT_TRUE(a.count("half"));
        EXPECT_LE(a["half"], 2L * ((wh.first + 7) / 8 * 8)) << "half is not folded to a ring of 2 rows";
    }
}

TEST(SlidingWindow, FoldsWindowsClampedAtTheImageEdge) {
    // Each stage reads its producer through a clamp of the row (a boundary condition, as when
    // separately built parts are chained): near the edges the window narrows, in the middle it
    // is three rows. The stages slide and fold to rings of a few rows (windows of 3 and 5), not
    // the strip's height, including one whose window is the union of a clamped read and a
    // direct one.
    for (auto wh : {std::pair<int, int>{128, 96}, {45, 37}}) {
        const int w = wh.first, h = wh.second;
        Buffer<float> in(std::vector<int>{w, h}, "fin");
        for (int j = 0; j < h; j++)
            for (int i = 0; i < w; i++) in(i, j) = (float)((i * 7 + j * 13) % 29);
        Var x("x"), y("y"), yo("yo"), yi("yi");
        std::vector<Func> st{BoundaryConditions::repeat_edge(in)};
        for (int s = 0; s < 2; s++) {
            Func f("clamped_" + std::to_string(s));
            Func prev = st.back();
            auto at = [&](Expr yy) { return prev(x, clamp(yy, 0, h - 1)); };
            f(x, y) = at(y - 1) + 2.0f * at(y) + at(y + 1) + (s > 0 ? prev(x, y) : Expr(0.0f));
            st.push_back(f);
        }
        Func out("clamped_out");
        out(x, y) = st.back()(x, clamp(y - 1, 0, h - 1)) + st.back()(x, clamp(y + 1, 0, h - 1));
        out.split(y, yo, yi, 32).parallel(yo).vectorize(x, 8);
        for (size_t s = 1; s < st.size(); s++) st[s].store_at(out, yo).compute_at(out, yi).vectorize(x, 8);
        expect_same_as_interpreter(out, w, h);
        auto a = allocations(out, {w, h});
        const long row = (w + 7) / 8 * 8;
        for (int s = 0; s < 2; s++) {
            std::string name = "clamped_" + std::to_string(s);
            ASSERT_TRUE(a.count(name)) << name;
            EXPECT_LE(a[name], 8L * row) << name << " is not folded to a ring of rows";
        }
    }
}

TEST(FoldStorage, SetsTheRingAndChecksItHoldsAWindow) {
    Chain c(64, 40, 1);
    c.schedule(32);
    c.st[1].fold_storage(c.y, 5);
    Buffer<uint16_t> got(std::vector<int>{64, 40}, "got"), want(std::vector<int>{64, 40}, "want");
    c.out.realize(got);
    internal::interpret_pipeline(Pipeline(c.out), {want});
    for (int j = 0; j < 40; j++)
        for (int i = 0; i < 64; i++) ASSERT_EQ(got(i, j), want(i, j)) << i << "," << j;
    // chain_0 is read over 5 rows by each row of chain_1: a ring of 4 would lose one.
    Chain small(64, 40, 2);
    small.schedule(32);
    small.st[1].fold_storage(small.y, 4);
    try {
        small.out.realize({64, 40});
        ADD_FAILURE() << "a fold of 4 for a window of 5 rows was accepted";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("reads 5 slots of y"), std::string::npos) << e.what();
    }
    // Nothing to fold: computed at root.
    Chain root(64, 40, 1);
    root.st[1].compute_root().fold_storage(root.y, 8);
    EXPECT_THROW(root.out.realize({64, 40}), Error);
    // Only forward folds; and the Var must be the Func's own.
    EXPECT_THROW(c.st[1].fold_storage(c.y, 8, false), Error);
    EXPECT_THROW(c.st[1].fold_storage(c.xo, 8), Error);
    EXPECT_THROW(c.st[1].fold_storage(c.y, 0), Error);
    // A schedule value keeps it: text and C++ source.
    Schedule s = Pipeline(c.out).get_schedule();
    EXPECT_NE(s.cpp_source().find(".fold_storage(y, 5)"), std::string::npos) << s.cpp_source();
    EXPECT_EQ(Schedule::from_string(s.to_string()), s);
    EXPECT_NE(s.to_string().find("fold_storage \"y\""), std::string::npos);
}

// A full-height producer read two rows at a time by a half-height stage, which an output reads at
// rows y / 2 and (y + 1) / 2 (camera_pipe's denoised rows, deinterleaved, then interleaved back),
// all computed per row of strips of 128 rows: one iteration needs a few rows of the producer
// however tall the strip, so the producer is folded into a ring of them by itself (it kept the
// whole strip when the loop had more steps than the bound's enumeration tries), and a
// fold_storage of 8 rows is accepted.
TEST(FoldStorage, RowsReadThroughHalvedCoordinatesFoldInTallStrips) {
    const int w = 64, h = 512;
    Buffer<float> in(std::vector<int>{w, h + 2}, "hin");
    for (int j = 0; j < h + 2; j++)
        for (int i = 0; i < w; i++) in(i, j) = (float)((i * 7 + j * 13) % 29);
    Var x("x"), y("y"), yo("yo"), yi("yi");
    auto build = [&](bool fold) {
        Func full("full"), half("half"), out("halved_out");
        full(x, y) = in(x, y) * 2.0f + 1.0f;
        half(x, y) = full(x, 2 * y) - full(x, 2 * y + 1);
        out(x, y) = select(y % 2 == 0, half(x, y / 2), half(x, (y + 1) / 2) * 0.5f);
        out.split(y, yo, yi, 128).vectorize(x, 8);
        half.store_at(out, yo).compute_at(out, yi).vectorize(x, 8);
        full.store_at(out, yo).compute_at(out, yi).vectorize(x, 8);
        if (fold) full.fold_storage(y, 8);
        return out;
    };
    for (bool fold : {false, true}) {
        Func out = build(fold);
        expect_same_as_interpreter(out, w, h);
        auto a = allocations(out, {w, h});
        ASSERT_TRUE(a.count("full"));
        EXPECT_LE(a["full"], 8L * w) << "full keeps " << a["full"] / w << " rows of a 128-row strip";
    }
}

// A Laplacian pyramid's output levels, each the bilinear upsampling of the coarser one plus a
// term of its own (rows y / 2 - 1 + 2 * (y % 2) and y / 2), computed per row of the output's
// strips of 64 rows and folded into rings of 8 (local Laplacian's expert schedule). Where the
// height is not a multiple of 64 the last strip starts at min(yo * 64, h - 64): each level's
// window is then a function of that start plus the row, monotone only over its period (two
// rows, four, ...), and the fold was refused ("cannot be folded along y").
TEST(FoldStorage, UpsampledLevelsSlideInStripsTheHeightDoesNotDivide) {
    for (auto wh : {std::pair<int, int>{96, 853}, {40, 100}, {64, 128}}) {
        const int w = wh.first, h = wh.second;
        Buffer<float> in(std::vector<int>{w, h}, "pin");
        for (int j = 0; j < h; j++)
            for (int i = 0; i < w; i++) in(i, j) = (float)((i * 7 + j * 13) % 29);
        Var x("x"), y("y"), yo("yo");
        Func src = BoundaryConditions::repeat_edge(in);
        auto upsample = [&](Func f) {
            Func upx, upy;
            upx(x, y) = 0.25f * f((x / 2) - 1 + 2 * (x % 2), y) + 0.75f * f(x / 2, y);
            upy(x, y) = 0.25f * upx(x, (y / 2) - 1 + 2 * (y % 2)) + 0.75f * upx(x, y / 2);
            return upy;
        };
        std::vector<Func> level(4);
        level[3](x, y) = src(8 * x, 8 * y);
        level[3].compute_root();
        for (int j = 2; j >= 0; j--) {
            level[j] = Func("level_" + std::to_string(j));
            level[j](x, y) = upsample(level[j + 1])(x, y) + src((1 << j) * x, (1 << j) * y) * 0.125f;
        }
        Func out("pyramid_out");
        out(x, y) = level[0](x, y) * 0.5f;
        out.split(y, yo, y, 64).parallel(yo).vectorize(x, 8);
        for (int j = 1; j < 3; j++) level[j].store_at(out, yo).compute_at(out, y).fold_storage(y, 8).vectorize(x, 8);
        level[0].compute_at(out, y).vectorize(x, 8);
        expect_same_as_interpreter(out, w, h);
        auto a = allocations(out, {w, h});
        for (int j = 1; j < 3; j++) {
            std::string name = "level_" + std::to_string(j);
            ASSERT_TRUE(a.count(name)) << name;
            EXPECT_LE(a[name], 8L * (w + 16)) << name << " is not a ring of 8 rows (" << w << "x" << h << ")";
        }
    }
}

TEST(UpdateWithoutPureDefinition, StartsAtTheIdentityWithTheUpdatesVars) {
    Buffer<float> in(std::vector<int>{16, 8}, "uin");
    for (int j = 0; j < 8; j++)
        for (int i = 0; i < 16; i++) in(i, j) = (float)(i + 2 * j);
    Var x("x"), y("y");
    RDom r(0, 8, "r");
    Func s("colsum"), p("colprod");
    s(x) += in(x, r);    // starts at 0
    p(x) *= in(x, r) + 1.0f;  // starts at 1
    // The pure stage is scheduled with the update's Var.
    s.vectorize(x, 8);
    s.update().vectorize(x, 8);
    Buffer<float> os = s.realize({16}), op = p.realize({16});
    for (int i = 0; i < 16; i++) {
        float sum = 0, prod = 1;
        for (int j = 0; j < 8; j++) {
            sum += in(i, j);
            prod *= in(i, j) + 1.0f;
        }
        EXPECT_FLOAT_EQ(os(i), sum);
        EXPECT_FLOAT_EQ(op(i), prod);
    }
    // An update with no pure Var: the pure definition gets a Var of its own.
    Func h("hist");
    h(cast<int>(in(r, 0)) % 4) += 1;
    Buffer<int32_t> oh = h.realize({4});
    EXPECT_EQ(oh(0) + oh(1) + oh(2) + oh(3), 8);
}

TEST(InlineReductions, AreVectorizedWithTheirConsumer) {
    Buffer<float> in(std::vector<int>{100, 10}, "rin");
    for (int j = 0; j < 10; j++)
        for (int i = 0; i < 100; i++) in(i, j) = (float)((i * 7 + j * 3) % 23);
    Var x("x"), y("y");
    RDom r(-3, 7, "r");
    Func g("rg"), f("rf");
    g(x, y) = in(clamp(x, 0, 99), y);
    f(x, y) = maximum(g(x + r, y)) + sum(g(x + r, y));
    f.vectorize(x, 8);
    std::string ir = Pipeline(f).lowered_ir({100, 10});
    EXPECT_NE(ir.find("vectorized (maximum"), std::string::npos) << ir.substr(0, 3000);
    expect_same_as_interpreter(f, 100, 10);
}

TEST(InlineReductions, InAFuncWhoseEveryLoopIsVectorized) {
    // s(x) = sum(g(x, r)), g and s computed at f's loop x, s vectorized: the sum is computed
    // where s is (Halide accepts this schedule; weft used to put the sum at root, away from g).
    Var x("x"), k("k");
    Func g("vg"), s("vs"), f("vf");
    RDom r(0, 4, "r");
    g(x, k) = cast<float>(x + k);
    s(x) = sum(g(x, r));
    f(x, k) = g(x, k) / s(x);
    f.reorder(k, x).vectorize(x, 8);
    g.compute_at(f, x);
    s.compute_at(f, x).vectorize(x);
    Buffer<float> out = f.realize({64, 4});
    for (int i = 0; i < 64; i++)
        for (int j = 0; j < 4; j++) EXPECT_FLOAT_EQ(out(i, j), (float)(i + j) / (float)(4 * i + 6)) << i << "," << j;
}

TEST(InlineReductions, OfAWholeDimensionVectorized) {
    // f.vectorize(x) with no split (a 16-wide region, Halide's resize: resized_x computed at the
    // output's tile): the sum is vectorized along with it, not a scalar loop over the 16 points.
    Buffer<float> in(std::vector<int>{64, 40}, "win");
    for (int j = 0; j < 40; j++)
        for (int i = 0; i < 64; i++) in(i, j) = (float)((i * 5 + j * 11) % 17);
    Var x("x"), y("y"), xo("xo"), xi("xi");
    RDom r(0, 4, "r");
    Func f("wf"), out("wout");
    f(x, y) = sum(in(x, clamp(y + r, 0, 39)) * cast<float>(r + 1));
    out(x, y) = f(x, y) * 0.5f;
    out.split(x, xo, xi, 16).vectorize(xi);
    f.compute_at(out, xo).vectorize(x);
    std::string ir = Pipeline(out).lowered_ir({64, 40});
    std::string last = ir.substr(ir.rfind("after align_loads"));
    // No serial loop over the sum's x, no scalar store to it.
    EXPECT_FALSE(std::regex_search(last, std::regex("for \\(sum_r[0-9]+\\.s[01]\\.x,"))) << last;
    EXPECT_FALSE(std::regex_search(last, std::regex("sum_r[0-9]+\\[\\("))) << last;
    EXPECT_NE(last.find("x16(0f)"), std::string::npos) << last;
    expect_same_as_interpreter(out, 64, 40);
}

TEST(Vectorize, AProducerComputedInsideTheVectorLoopHasACopyPerLane) {
    // h computed at g's vectorized loop (its storage allocated in it): each lane gets a copy
    // of h's storage and the loop stays vectorized (Halide vectorizes it the same way): one
    // point per lane, a range per lane, and a range too large for the stack (on the heap).
    Buffer<float> in(std::vector<int>{200, 12}, "vin");
    for (int j = 0; j < 12; j++)
        for (int i = 0; i < 200; i++) in(i, j) = (float)((i * 13 + j * 7) % 29) - 10.0f;
    Var x("x"), y("y"), xo("xo"), xi("xi"), k("k");
    for (int variant = 0; variant < 4; variant++) {
        SCOPED_TRACE("variant " + std::to_string(variant));
        // 3000 x 8 lanes x 4 bytes: over 64 KiB. Variant 3: h vectorized itself, as wide as g's
        // vector loop (h's lanes are not g's: no access may be taken for one lane per g lane).
        const int K = variant == 2 ? 3000 : variant == 1 ? 6 : variant == 3 ? 16 : 1;
        Func h("vh"), g("vg");
        h(x, y, k) = in(clamp(x + k, 0, 199), y);
        h(x, y, k) = h(x, y, k) * 0.5f + 1.0f;
        g(x, y) = h(x, y, 0) + h(x, y, K - 1) * 2.0f;
        g.split(x, xo, xi, 8).vectorize(xi);
        h.compute_at(g, xi);
        if (variant == 3) h.vectorize(k, 8).update().vectorize(k, 8);
        std::string ir = Pipeline(g).lowered_ir({128, 12});
        std::string last = ir.substr(ir.rfind("after align_loads"));
        if (variant != 3) EXPECT_EQ(last.find("for (vg.s0.xi"), std::string::npos) << last;
        if (variant == 2) EXPECT_NE(last.find("in heap"), std::string::npos) << last;
        expect_same_as_interpreter(g, 128, 12);
    }
}

TEST(Vectorize, ALoopThatStaysSerialSaysWhy) {
    // A loop asked to be vectorized that cannot be: a warning names it and says why; the values
    // are right either way.
    Var x("x"), y("y"), xo("xo"), xi("xi");
    auto warnings_of = [](const std::function<void()> &fn) {
        testing::internal::CaptureStderr();
        fn();
        return testing::internal::GetCapturedStderr();
    };
    Func wide("serial_wide");
    wide(x, y) = x * 2 + y;
    wide.split(x, xo, xi, 100).vectorize(xi);
    Buffer<int> o1(200, 3);
    std::string w = warnings_of([&] { wide.realize(o1); });
    EXPECT_NE(w.find("Func \"serial_wide\": the loop \"serial_wide.s0.xi"), std::string::npos) << w;
    EXPECT_NE(w.find("above 64 lanes"), std::string::npos) << w;
    for (int j = 0; j < 3; j++)
        for (int i = 0; i < 200; i++) ASSERT_EQ(o1(i, j), i * 2 + j);
    // A vectorized loop that vectorizes: nothing said.
    Func fine("serial_fine");
    fine(x) = x * 3;
    fine.vectorize(x, 16);
    EXPECT_EQ(warnings_of([&] { fine.realize({64}); }).find("serial loop"), std::string::npos);
}

TEST(BoundaryConditions, ClampedVectorLoadsAtEveryOffset) {
    // repeat_edge in a vector loop: vectors wholly inside the image are loaded densely (checked
    // at run time), the ones at the edges are clamped lane by lane. Every width and offset.
    for (int w : {5, 16, 37, 64}) {
        Buffer<float> in(std::vector<int>{w, 3}, "bc_in");
        for (int j = 0; j < 3; j++)
            for (int i = 0; i < w; i++) in(i, j) = (float)(i * 10 + j);
        for (int lanes : {4, 8, 16}) {
            Var x("x"), y("y");
            Func e = BoundaryConditions::repeat_edge(in);
            Func f("bc_f");
            f(x, y) = e(x - 7, y) + e(x + 3, y + 1) * 2.0f;
            f.vectorize(x, lanes);
            Buffer<float> got(std::vector<int>{w + 11, 3}, "got");
            got.set_min(-2, 0);
            f.realize(got);
            for (int j = 0; j < 3; j++)
                for (int i = -2; i < w + 9; i++) {
                    auto at = [&](int a, int b) { return in(std::min(std::max(a, 0), w - 1), std::min(std::max(b, 0), 2)); };
                    ASSERT_EQ(got(i, j), at(i - 7, j) + at(i + 3, j + 1) * 2.0f) << w << " " << lanes << " " << i << "," << j;
                }
        }
    }
}

// undef(): a pure definition with no initial value; the updates write every element.
TEST(Undef, PureDefinitionWithNoInitialValue) {
    const int W = 37, H = 23;
    Buffer<float> in(std::vector<int>{W, H}, "undef_in");
    for (int j = 0; j < H; j++)
        for (int i = 0; i < W; i++) in(i, j) = (float)((i * 7 + j * 3) % 11) - 5.0f;
    Var x("x"), y("y");
    RDom ry(1, H - 1, "ry");
    Func blur("undef_blur"), out("undef_out");
    blur(x, y) = undef<float>();
    blur(x, 0) = in(x, 0);
    blur(x, ry) = 0.5f * blur(x, ry - 1) + 0.5f * in(x, ry);
    out(x, y) = blur(x, y) * 2.0f;
    for (int scheduled = 0; scheduled < 2; scheduled++) {
        if (scheduled) {
            blur.compute_root().vectorize(x, 8);
            blur.update(1).vectorize(x, 8);
        }
        Buffer<float> o = out.realize({W, H});
        for (int i = 0; i < W; i++) {
            float v = in(i, 0);
            for (int j = 0; j < H; j++) {
                if (j > 0) v = 0.5f * v + 0.5f * in(i, j);
                ASSERT_EQ(o(i, j), v * 2.0f) << i << ", " << j;
            }
        }
        // No loop writes the pure definition.
        std::string ir = Pipeline(out).lowered_ir({W, H});
        EXPECT_EQ(ir.find("undef_blur.s0."), std::string::npos) << ir;
        EXPECT_EQ(ir.find("undef"), ir.find("undef_")) << "an undef() call reached the lowered IR";
    }
}

TEST(Undef, MisusesAreErrors) {
    Var x("x");
    Func f("undef_f");
    EXPECT_CONTAINS(error_of([&] { f(x) = undef<int>() + 1; }), "whole value");
    f(x) = x;
    EXPECT_CONTAINS(error_of([&] { f(x) = undef<int>(); }), "update");
    Func g("undef_g"), h("undef_h");
    g(x) = undef<float>();
    h(x) = g(x) + 1.0f;
    EXPECT_CONTAINS(error_of([&] { h.realize({4}); }), "no update definitions");
    EXPECT_CONTAINS(error_of([&] { undef(Float(32, 4)); }), "scalar");
}

TEST(TailStrategyAuto, AnUpdateReadingEarlierIterationsShiftsItsTailInwards) {
    // f(x, r) = h(f(x, r -/+ 1), ...): a point is recomputed from final values, so the vector
    // tail of x may be shifted inwards (no scalar tail); an update reading the point it writes,
    // or one the loop writes later, keeps the guard. Each against the interpreter.
    const int W = 37, H = 12;
    Buffer<float> in(std::vector<int>{W, H}, "tin");
    for (int j = 0; j < H; j++)
        for (int i = 0; i < W; i++) in(i, j) = (float)((i * 5 + j * 3) % 11) - 4.0f;
    Var x("x"), y("y");
    for (int kind = 0; kind < 5; kind++) {
        SCOPED_TRACE(kind);
        Func f("scan");
        RDom r(1, H - 1, "r");
        f(x, y) = in(x, y);
        bool shifts = true;
        switch (kind) {
        case 0: f(x, r) = f(x, r - 1) * 0.5f + in(x, r); break;                        // down
        case 1: f(x, H - 1 - r) = f(x, H - r) * 0.5f + in(x, 0); break;                 // up
        case 2: {
            RDom r2(2, H - 2, "r2");
            f(x, r2) = max(f(x, r2 - 1), f(x, r2 - 2)) + 1.0f;  // two reads
            break;
        }
        case 3: f(x, r) = f(x, r) * 0.5f + 1.0f; shifts = false; break;                 // in place
        case 4: f(x, r) = f(x, min(r + 1, H - 1)) + 1.0f; shifts = false; break;        // a later row
        }
        f.vectorize(x, 8);
        f.update().vectorize(x, 8);
        expect_same_as_interpreter(f, W, H);
        std::string ir = Pipeline(f).lowered_ir({W, H});
        std::string upd = ir.substr(ir.rfind("---- after fuse_parallel"));
        upd = upd.substr(upd.find("scan.s1"));
        EXPECT_EQ(upd.find("likely") == std::string::npos, shifts) << upd;
    }
    // Parallel: the guard stays (two threads would write what a third reads).
    Func g("pscan");
    RDom r(1, H - 1, "r");
    Var xo("xo"), xi("xi");
    g(x, y) = in(x, y);
    g(x, r) = g(x, r - 1) + in(x, r);
    g.update().split(x, xo, xi, 8).parallel(xo).vectorize(xi);
    std::string ir = Pipeline(g).lowered_ir({W, H});
    std::string upd = ir.substr(ir.rfind("---- after fuse_parallel"));
    EXPECT_NE(upd.find("likely"), std::string::npos) << upd;
}
