// Where a Func's storage lives: a tile clipped at the image's edge is allocated at its constant
// bound (on the stack, not malloc'd at every tile); store_in(MemoryType::Stack) is honoured or
// refused with a clear error, never silently put on the heap.
#include "lang_test_util.h"

#include <array>

using namespace weft;

namespace {

/** The last `allocate` line of f's lowered IR at the given sizes. */
std::string allocation_of(Func f, std::vector<int> sizes) {
    std::string ir = Pipeline(f).lowered_ir(sizes);
    size_t at = ir.rfind("allocate ");
    return at == std::string::npos ? "" : ir.substr(at, ir.find('\n', at) - at);
}

struct Tiles {
    Buffer<float> in;
    Var x{"x"}, y{"y"}, xo{"xo"}, yo{"yo"}, xi{"xi"}, yi{"yi"};
    Func p{"tile_p"}, c{"tile_c"};
    explicit Tiles(int w = 210, int h = 110) : in(std::vector<int>{w, h}, "tile_in") {
        for (int j = 0; j < h; j++)
            for (int i = 0; i < w; i++) in(i, j) = (float)(i * 3 + j * 5 % 17);
        p(x, y) = in(x, y) * 2.0f;
        c(x, y) = p(x, y) + p(x + 1, y + 1);
    }
    void check(const Buffer<float> &out) {
        for (int j = 0; j < out.height(); j++)
            for (int i = 0; i < out.width(); i++)
                ASSERT_EQ(out(i, j), in(i, j) * 2.0f + in(i + 1, j + 1) * 2.0f) << i << "," << j;
    }
};

TEST(Storage, ATileClippedAtTheEdgeIsAllocatedAtItsConstantBound) {
    for (auto m : {MemoryType::Auto, MemoryType::Stack}) {
        Tiles t;
        t.c.tile(t.x, t.y, t.xo, t.yo, t.xi, t.yi, 16, 8, TailStrategy::GuardWithIf);
        t.p.compute_at(t.c, t.xo).store_in(m);
        std::string a = allocation_of(t.c, {201, 100});  // 201 = 12 * 16 + 9: the last tiles are clipped
        EXPECT_NE(a.find("(int64)153] in stack"), std::string::npos) << "(16 + 1) x (8 + 1), on the stack: " << a;
        Buffer<float> out(201, 100);
        t.c.realize(out);
        t.check(out);
    }
}

// A region whose extent has a constant bound too large for the stack (a tile's rows of an
// upsampled input, bounded only by the input's height): on the heap it takes what the region
// needs when it runs, not the bound.
TEST(Storage, ABoundTooLargeForTheStackIsNotWhatTheHeapAllocates) {
    Buffer<float> in(std::vector<int>{64, 4000}, "bound_in");
    for (int j = 0; j < 4000; j++)
        for (int i = 0; i < 64; i++) in(i, j) = (float)(i + 7 * j % 23);
    Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
    Func p("bound_p"), c("bound_c");
    p(x, y) = in(x, clamp(y, 0, 3999)) * 2.0f;
    // Rows chosen through a clamp of a float computation: bounded by the clamp alone.
    Expr row = clamp(cast<int>(floor((y + 0.5f) * 0.25f)), 0, 3998);
    c(x, y) = p(x, row) + p(x, row + 1);
    c.tile(x, y, xo, yo, xi, yi, 16, 16);
    p.compute_at(c, xo);
    std::string a = allocation_of(c, {64, 16000});
    EXPECT_NE(a.find("in heap"), std::string::npos) << a;
    EXPECT_NE(a.find("extent.1"), std::string::npos) << "the region's extent when run, not 16 x 4000: " << a;
    Buffer<float> out(64, 16000);
    c.realize(out);
    for (int j = 0; j < 16000; j += 37)
        for (int i = 0; i < 64; i++) {
            int r = std::min(std::max((int)std::floor((j + 0.5f) * 0.25f), 0), 3998);
            ASSERT_EQ(out(i, j), in(i, r) * 2.0f + in(i, r + 1) * 2.0f) << i << "," << j;
        }
}

TEST(Storage, StackWithoutAConstantSizeIsAClearError) {
    Tiles t;
    Param<int> rows("rows");
    Func q("param_rows");
    q(t.x, t.y) = t.p(t.x, t.y) * 3.0f;
    Func r("param_out");
    RDom k(0, rows);
    r(t.x) = 0.0f;
    r(t.x) += q(t.x, k);
    q.compute_root().store_in(MemoryType::Stack);
    rows.set(5);
    try {
        r.realize({8});
        FAIL() << "a stack allocation of a size known only when run was accepted";
    } catch (Error &e) {
        std::string m = e.what();
        EXPECT_NE(m.find("\"param_rows\""), std::string::npos) << m;
        EXPECT_NE(m.find("stack"), std::string::npos) << m;
        EXPECT_NE(m.find("not a constant"), std::string::npos) << m;
    }
    q.store_in(MemoryType::Auto);  // the same, let weft choose: runs
    Buffer<float> o = r.realize({8});
    EXPECT_EQ(o(2), (t.in(2, 0) + t.in(2, 1) + t.in(2, 2) + t.in(2, 3) + t.in(2, 4)) * 6.0f);
}

TEST(Storage, StackLargerThanAStackAllocationMayBeIsAClearError) {
    Var x("x"), y("y");
    Func big("big_on_stack"), out("big_out");
    big(x, y) = x + y;
    out(x, y) = big(x, y) + big(x + 1, y);
    big.compute_root().store_in(MemoryType::Stack);
    try {
        out.realize({1024, 1024});
        FAIL() << "4 MB on the stack was accepted";
    } catch (Error &e) {
        std::string m = e.what();
        EXPECT_NE(m.find("\"big_on_stack\""), std::string::npos) << m;
        EXPECT_NE(m.find("1 MiB"), std::string::npos) << m;
    }
    big.store_in(MemoryType::Heap);
    Buffer<int> o = out.realize({1024, 1024});
    EXPECT_EQ(o(5, 7), 5 + 7 + 6 + 7);
}

TEST(Storage, AlignStoragePadsTheStridesOfTheOuterDimensions) {
    Tiles t;
    t.p.compute_root().align_storage(t.x, 16);
    std::string ir = Pipeline(t.c).lowered_ir({13, 5});  // p is 14 x 6: rows of 14, padded to 16
    std::string last = ir.substr(ir.rfind("// ----"));
    EXPECT_NE(last.find("allocate tile_p[float32 * (int64)96]"), std::string::npos) << last;  // 16 x 6
    EXPECT_NE(last.find("(tile_p.s0.y * 16)"), std::string::npos) << last;
    Buffer<float> out = t.c.realize({13, 5});
    t.check(out);
    // Stored in another order, the padded dimension is y (innermost there).
    Tiles u;
    u.p.compute_root().reorder_storage(u.y, u.x).align_storage(u.y, 4).align_storage(u.y, 8);  // the last one holds
    ir = Pipeline(u.c).lowered_ir({13, 5});
    last = ir.substr(ir.rfind("// ----"));
    EXPECT_NE(last.find("allocate tile_p[float32 * (int64)112]"), std::string::npos) << last;  // 8 x 14
    EXPECT_NE(last.find("(tile_p.s0.x * 8)"), std::string::npos) << last;
    out = u.c.realize({13, 5});
    u.check(out);
    // Refused clearly.
    Param<int> k("k");
    auto msg = [](const std::function<void()> &f) {
        try {
            f();
        } catch (Error &e) {
            return std::string(e.what());
        }
        return std::string("(no error)");
    };
    EXPECT_NE(msg([&] { u.p.align_storage(u.x, k); }).find("integer constant"), std::string::npos);
    EXPECT_NE(msg([&] { u.p.align_storage(u.x, 0); }).find("between 1 and 65536"), std::string::npos);
    EXPECT_NE(msg([&] { u.p.align_storage(Var("z"), 4); }).find("not one of its Vars"), std::string::npos);
    EXPECT_NE(msg([&] { Func none("undefined_f"); none.align_storage(u.x, 4); }).find("no definition"), std::string::npos);
}

TEST(Storage, AlignBoundsWidensTheRegionComputed) {
    // c reads p over x in [9, 22] (c's region [9, 21], p(x) and p(x + 1)): aligned to 8 from 0,
    // p computes [8, 23]; from 3 (remainder 3), [3, 26].
    for (auto [mod, rem, lo, hi] : std::vector<std::array<int, 4>>{{8, 0, 8, 23}, {8, 3, 3, 26}, {1, 0, 9, 22}}) {
        SCOPED_TRACE("modulus " + std::to_string(mod) + " remainder " + std::to_string(rem));
        Tiles t;
        t.p.compute_root().align_bounds(t.x, mod, rem);
        Func shifted("shifted");
        shifted(t.x, t.y) = t.c(t.x + 9, t.y + 2);  // (c inlined)
        std::string ir = Pipeline(shifted).lowered_ir({13, 5});
        std::string last = ir.substr(ir.rfind("// ----"));
        std::string loop = "for (tile_p.s0.x, " + std::to_string(lo) + ", " + std::to_string(hi - lo + 1) + ")";
        EXPECT_NE(last.find(loop), std::string::npos) << loop << "\n" << last;
        Buffer<float> out = shifted.realize({13, 5});
        for (int j = 0; j < 5; j++)
            for (int i = 0; i < 13; i++)
                ASSERT_EQ(out(i, j), t.in(i + 9, j + 2) * 2.0f + t.in(i + 10, j + 3) * 2.0f) << i << "," << j;
    }
    Tiles t;
    t.c.align_bounds(t.x, 4);
    try {
        t.c.realize({8, 8});
        FAIL() << "align_bounds of an output was accepted";
    } catch (Error &e) {
        EXPECT_NE(std::string(e.what()).find("not outputs"), std::string::npos) << e.what();
    }
    Param<int> k("k");
    try {
        t.p.align_bounds(t.x, k);
        FAIL() << "a Param modulus was accepted";
    } catch (Error &e) {
        EXPECT_NE(std::string(e.what()).find("integer constants"), std::string::npos) << e.what();
    }
}

TEST(Storage, SlidingWindowUnderAnUpsamplingConsumer) {
    // up reads p at rows y / 2 and (y + 1) / 2: stored per strip of 16 rows and computed at
    // each row, p computes each of its rows once (the window slides: the rows the last
    // iteration computed are not computed again) into a strip on the stack.
    Buffer<float> in(std::vector<int>{300, 300}, "slide_in");
    for (int j = 0; j < 300; j++)
        for (int i = 0; i < 300; i++) in(i, j) = (float)(i * 7 + j * 3);
    Var x("x"), y("y"), yo("yo"), yi("yi");
    Func p("slide_p"), up("slide_up");
    p(x, y) = in(x, y) * 2.0f;
    up(x, y) = p(x, y / 2) + p(x, (y + 1) / 2);
    up.split(y, yo, yi, 16);
    p.store_at(up, yo).compute_at(up, yi);
    std::string ir = Pipeline(up).lowered_ir({256, 256});
    std::string last = ir.substr(ir.rfind("// ----"));
    EXPECT_NE(last.find("let slide_p.r0.min.1 = select("), std::string::npos) << "no sliding window:\n" << last;
    EXPECT_NE(last.find("in stack"), std::string::npos) << last;
    Buffer<float> out = up.realize({256, 256});
    for (int j = 0; j < 256; j++)
        for (int i = 0; i < 256; i++) ASSERT_EQ(out(i, j), in(i, j / 2) * 2.0f + in(i, (j + 1) / 2) * 2.0f) << i << "," << j;
}

// A Func stored at root and computed at a fused x*y loop of its consumer: its region moves in
// both dimensions with that loop, so it must not slide along one of them (rows computed by
// earlier iterations hold other columns). Found by the random-schedule tests.
TEST(Storage, NoSlidingAlongAFusedLoop) {
    Buffer<int> in(13, 15);
    for (int j = 0; j < 15; j++)
        for (int i = 0; i < 13; i++) in(i, j) = (i * 37 + j * 101) % 997 - 500;
    Var x("x"), y("y"), f("f"), g("g"), gi("gi");
    Func s1("s1"), s2("s2");
    s1(x, y) = in(clamp(x, 0, 12), clamp(y, 0, 14)) * 3 + in(clamp(x + 1, 0, 12), clamp(y + 1, 0, 14));
    s2(x, y) = s1(x, y - 1) - s1(x + 1, y) * 2 + s1(x, y + 1);
    s2.fuse(x, y, f);
    s1.store_root().compute_at(s2, f);
    s1.fuse(x, y, g).split(g, g, gi, 16).vectorize(gi);
    Buffer<int> out(4, 3);
    out.set_min(4, 6);
    s2.realize(out);
    for (int j = 6; j < 9; j++)
        for (int i = 4; i < 8; i++) {
            auto v = [&](int a, int b) {
                auto c = [&](int p, int hi) { return std::min(std::max(p, 0), hi); };
                return in(c(a, 12), c(b, 14)) * 3 + in(c(a + 1, 12), c(b + 1, 14));
            };
            ASSERT_EQ(out(i, j), v(i, j - 1) - v(i + 1, j) * 2 + v(i, j + 1)) << i << "," << j;
        }
}

// hoist_storage: the allocation moves out of the loops between the store level and the hoist
// level, once at the largest size an iteration needs; the values stay those of store_at.
size_t count_of(const std::string &text, const std::string &what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) n++;
    return n;
}

TEST(Storage, HoistStorageAllocatesOnceOutsideTheLoopsBetween) {
    for (bool root : {false, true}) {
        Tiles t;
        t.c.tile(t.x, t.y, t.xo, t.yo, t.xi, t.yi, 16, 8, TailStrategy::GuardWithIf);
        t.p.compute_at(t.c, t.xo).store_in(MemoryType::Heap);  // (allocated at every tile without the hoist)
        if (root) t.p.hoist_storage_root();
        else t.p.hoist_storage(t.c, t.yo);
        std::string ir = Pipeline(t.c).lowered_ir({201, 100});
        std::string last = ir.substr(ir.rfind("// ----"));
        EXPECT_EQ(count_of(last, "allocate tile_p["), 1u) << last;
        size_t alloc = last.find("allocate tile_p[float32 * (int64)153]");  // (16 + 1) x (8 + 1): the largest tile
        size_t loop = last.find(root ? "for (tile_c.s0.yo" : "for (tile_c.s0.xo");
        ASSERT_NE(alloc, std::string::npos) << last;
        ASSERT_NE(loop, std::string::npos) << last;
        EXPECT_LT(alloc, loop) << "the allocation is made outside the loop: " << last;
        Buffer<float> out(201, 100);
        t.c.realize(out);
        t.check(out);
        // The schedule reads back, as C++ and as text.
        Pipeline pl(t.c);
        std::string cpp = pl.get_schedule().cpp_source();
        EXPECT_NE(cpp.find(root ? "tile_p.hoist_storage_root();" : "tile_p.hoist_storage(tile_c, yo);"), std::string::npos) << cpp;
        Schedule back = Schedule::from_string(pl.get_schedule().to_string());
        EXPECT_TRUE(back == pl.get_schedule());
        Tiles u;
        u.c.tile(u.x, u.y, u.xo, u.yo, u.xi, u.yi, 16, 8, TailStrategy::GuardWithIf);
        Pipeline pu(u.c);
        pu.apply_schedule_source(cpp);
        EXPECT_TRUE(pu.get_schedule() == pl.get_schedule()) << pu.get_schedule().to_string();
        // compute_inline forgets it, as it forgets store_at.
        t.p.compute_inline();
        EXPECT_EQ(pl.get_schedule().to_string().find("hoist"), std::string::npos);
    }
}

TEST(Storage, HoistStorageOfASizeKnownOnlyWhenRun) {
    // q's region along k is rows (a Param): hoisted to the root, its size is that expression.
    Tiles t;
    Param<int> rows("hoist_rows");
    Func q("hoist_q"), r("hoist_r");
    RDom k(0, rows);
    q(t.x, t.y) = t.p(t.x, t.y) * 3.0f;
    r(t.x) = 0.0f;
    r(t.x) += q(t.x, k);
    q.compute_at(r, t.x).hoist_storage_root();
    r.update(0).reorder(k.x, t.x);  // x outside k: q computed per x, over every k
    t.p.compute_root();
    for (int n : {3, 7}) {
        rows.set(n);
        Buffer<float> o = r.realize({8});
        for (int i = 0; i < 8; i++) {
            float want = 0.0f;
            for (int j = 0; j < n; j++) want += t.in(i, j) * 2.0f * 3.0f;
            ASSERT_EQ(o(i), want) << i << " rows " << n;
        }
    }
    std::string ir = Pipeline(r).lowered_ir({8});
    std::string last = ir.substr(ir.rfind("// ----"));
    EXPECT_EQ(count_of(last, "allocate hoist_q["), 1u) << last;
    EXPECT_NE(last.find("in heap"), std::string::npos) << last;
    // On the stack it would need a constant size.
    q.store_in(MemoryType::Stack);
    std::string m = weft_test::error_of([&] { r.realize({8}); });
    EXPECT_NE(m.find("\"hoist_q\""), std::string::npos) << m;
    EXPECT_NE(m.find("stack"), std::string::npos) << m;
}

TEST(Storage, HoistStorageThatCannotBeDoneIsAClearError) {
    auto fresh = [] {
        auto t = std::make_unique<Tiles>();
        t->c.tile(t->x, t->y, t->xo, t->yo, t->xi, t->yi, 16, 8, TailStrategy::GuardWithIf);
        return t;
    };
    auto expect = [](const std::string &m, std::vector<std::string> parts) {
        for (auto &p : parts) EXPECT_NE(m.find(p), std::string::npos) << "\"" << p << "\" not in: " << m;
    };
    {  // across a parallel loop: the iterations would share one buffer
        auto t = fresh();
        t->c.parallel(t->yo);
        t->p.compute_at(t->c, t->xo).hoist_storage_root();
        Buffer<float> out(64, 32);
        out.fill(-1.0f);
        expect(weft_test::error_of([&] { t->c.realize(out); }), {"\"tile_p\".hoist_storage_root()", "parallel loop", "tile_c.s0.yo"});
        EXPECT_EQ(out(0, 0), -1.0f) << "nothing is written";
        t->c.serial(t->yo);  // the same, serial: runs
        t->c.realize(out);
        t->check(out);
    }
    {  // inside the store level: the storage is not below that loop
        auto t = fresh();
        t->p.store_root().compute_at(t->c, t->xo).hoist_storage(t->c, t->yo);
        expect(weft_test::error_of([&] { t->c.realize({64, 32}); }), {"hoist_storage(tile_c, yo)", "does not contain the storage"});
    }
    {  // a loop the consumer does not have
        auto t = fresh();
        t->p.compute_at(t->c, t->xo).hoist_storage(t->c, Var("zz"));
        expect(weft_test::error_of([&] { t->c.realize({64, 32}); }), {"no loop named \"zz\""});
    }
    {  // an output's storage is its buffer
        auto t = fresh();
        t->c.hoist_storage_root();
        expect(weft_test::error_of([&] { t->c.realize({64, 32}); }), {"\"tile_c\"", "output"});
    }
    {  // the calls themselves
        auto t = fresh();
        expect(weft_test::error_of([&] { t->p.hoist_storage(t->p, t->x); }), {"inside itself"});
        expect(weft_test::error_of([&] { t->p.hoist_storage(LoopLevel::inlined()); }), {"LoopLevel::inlined()"});
        Func other("hoist_other");
        other(t->x) = t->x;
        t->p.compute_at(t->c, t->xo).hoist_storage(other, t->x);
        expect(weft_test::error_of([&] { t->c.realize({64, 32}); }), {"hoist_other", "not part of this pipeline"});
    }
}

}  // namespace
