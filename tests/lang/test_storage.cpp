// Where a Func's storage lives: a tile clipped at the image's edge is allocated at its constant
// bound (on the stack, not malloc'd at every tile); store_in(MemoryType::Stack) is honoured or
// refused with a clear error, never silently put on the heap.
#include "lang_test_util.h"

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

}  // namespace
