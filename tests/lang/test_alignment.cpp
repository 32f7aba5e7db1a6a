// Vector loads and stores of internal allocations are marked aligned where the index provably
// is a multiple of the vector width (and results are unchanged).
#include <gtest/gtest.h>
#include <weft/weft.h>

using namespace weft;

namespace {

TEST(Alignment, DenseAccessesOfAStageAreAligned) {
    Var x("x"), y("y"), xi("xi");
    Buffer<float> in(66, 10);
    in.set_min(-1, 0);
    for (int j = 0; j < 10; j++)
        for (int i = -1; i < 65; i++) in(i, j) = (float)(i * 3 + j);
    Func a("align_a"), b("align_b");
    a(x, y) = in(x - 1, y) + in(x + 1, y);
    b(x, y) = a(x, y) * 2.0f;
    b.vectorize(x, 16);
    a.compute_at(b, y).vectorize(x, 16);
    std::string ir = Pipeline(b).lowered_ir({64, 10});
    std::string last = ir.substr(ir.find("after align_loads"));
    // a's store and b's load of a are at multiples of 16 elements.
    EXPECT_NE(last.find("]@16 = "), std::string::npos) << last;
    EXPECT_NE(last.find("]@16"), std::string::npos) << last;
    Buffer<float> out = b.realize({64, 10});
    for (int j = 0; j < 10; j++)
        for (int i = 0; i < 64; i++) EXPECT_EQ(out(i, j), (in(i - 1, j) + in(i + 1, j)) * 2.0f);
}

// store_nontemporal: the same values whatever the vector width (4 to 64 bytes; 12 bytes is not
// streamed), the buffer's alignment (checked at run time) and the threads; nothing outside the
// output is written; the lowered IR marks the stores.
TEST(Alignment, NontemporalStoresSameResults) {
    const int W = 37, H = 6;
    for (int vec : {3, 4, 8, 16}) {
        for (int shift : {0, 1, 16}) {
            for (bool par : {false, true}) {
                std::vector<float> mem(W * H + 64 + 32, -5.0f);
                float *base = mem.data();
                while ((uintptr_t)base % 64) base++;
                Buffer<float> out(base + shift, {W, H});
                Var x("x"), y("y");
                Func f("nt_f");
                f(x, y) = cast<float>(x) * 2.0f + cast<float>(y);
                f.vectorize(x, vec).store_nontemporal();
                if (par) f.parallel(y);
                f.realize(out);
                for (int k = 0; k < (int)mem.size(); k++) {
                    float *p = mem.data() + k;
                    long rel = (long)(p - (base + shift));
                    float want = rel >= 0 && rel < W * H ? (float)(rel % W) * 2.0f + (float)(rel / W) : -5.0f;
                    ASSERT_EQ(*p, want) << "vec " << vec << " shift " << shift << " parallel " << par << " at " << rel;
                }
            }
        }
    }
    Var x("x"), y("y");
    Func g("nt_g");
    g(x, y) = x + y;
    g.vectorize(x, 16).store_nontemporal();
    std::string ir = Pipeline(g).lowered_ir({64, 4});
    EXPECT_NE(ir.substr(ir.find("after align_loads")).find("(nontemporal)"), std::string::npos) << ir;
    g.store_nontemporal(false);
    ir = Pipeline(g).lowered_ir({64, 4});
    EXPECT_EQ(ir.substr(ir.find("after align_loads")).find("(nontemporal)"), std::string::npos) << ir;
}


// A loop nest that writes more than the caches hold (32 MiB) to a buffer it does not read
// streams its whole-line stores (lowering decides it, with no directive): the stage feeding a
// transpose through registers, and the output (a caller's buffer, its alignment checked at run
// time). A nest that reads back what it writes, a small one, and stores of less than a line keep
// plain stores. The values are the same either way.
std::string streamed_part(const std::string &ir) {
    size_t at = ir.find("after stream_large_stores");
    return at == std::string::npos ? "" : ir.substr(at);
}
// The stores to name in the IR: how many are streamed, and how many in all.
std::pair<int, int> stores_to(const std::string &ir, const std::string &name) {
    int streamed = 0, all = 0;
    size_t at = 0;
    while ((at = ir.find("\n", at)) != std::string::npos) {
        size_t eol = ir.find('\n', at + 1);
        std::string line = ir.substr(at + 1, (eol == std::string::npos ? ir.size() : eol) - at - 1);
        at = eol;
        size_t first = line.find_first_not_of(' '), eq = line.find(" = ");
        if (first == std::string::npos || eq == std::string::npos || line.compare(first, name.size() + 1, name + "[") != 0)
            continue;
        all++;
        streamed += line.substr(0, eq).find("(nontemporal)") != std::string::npos;
    }
    return {streamed, all};
}

TEST(Alignment, LargeNestsStreamTheirStores) {
    const int N = 3072;  // 36 MiB of float32 per stage
    Buffer<float> in(N, N);
    for (int j = 0; j < N; j++)
        for (int i = 0; i < N; i++) in(i, j) = (float)((i * 7 + j * 3) % 1000);
    Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
    Func f("stream_f"), t("stream_t");
    f(x, y) = in(x, y) * 2.0f + 1.0f;
    t(x, y) = f(y, x) - 3.0f;
    f.compute_root().vectorize(x, 16).parallel(y);
    t.tile(x, y, xo, yo, xi, yi, 16, 64).vectorize(xi).parallel(yo);
    std::string ir = streamed_part(Pipeline(t).lowered_ir({N, N}));
    ASSERT_FALSE(ir.empty());
    EXPECT_GT(stores_to(ir, "stream_f").first, 0) << ir;
    EXPECT_GT(stores_to(ir, "stream_t").first, 0) << ir;
    // The output at an aligned base and one element past it (the stores then stay plain).
    std::vector<float> mem((size_t)N * N + 32, -5.0f);
    float *base = mem.data();
    while ((uintptr_t)base % 64) base++;
    for (int shift : {0, 1}) {
        std::fill(mem.begin(), mem.end(), -5.0f);
        Buffer<float> out(base + shift, {N, N});
        t.realize(out);
        for (int j = 0; j < N; j += 1)
            for (int i = 0; i < N; i += (j % 97 == 0 ? 1 : 61))
                ASSERT_EQ(out(i, j), in(j, i) * 2.0f + 1.0f - 3.0f) << "shift " << shift << " at " << i << "," << j;
        for (float *p = mem.data(); p < base + shift; p++) ASSERT_EQ(*p, -5.0f);
        for (float *p = base + shift + (size_t)N * N; p < mem.data() + mem.size(); p++) ASSERT_EQ(*p, -5.0f);
    }

    // The transpose read straight from the input: its stores are the rows of the blocks
    // transposed in registers, streamed too.
    Func t2("stream_t2");
    t2(x, y) = in(y, x) * 2.0f;
    t2.tile(x, y, xo, yo, xi, yi, 16, 64).vectorize(xi);
    set_debug(true);
    testing::internal::CaptureStderr();
    Buffer<float> o2 = t2.realize({N, N});
    std::string dbg = testing::internal::GetCapturedStderr();
    set_debug(false);
    std::string llvm = dbg.substr(std::min(dbg.size(), dbg.find("---- LLVM IR ----")));
    EXPECT_NE(llvm.find("!nontemporal"), std::string::npos) << llvm;
    EXPECT_NE(llvm.find("shufflevector"), std::string::npos);
    for (int j = 0; j < N; j++)
        for (int i = 0; i < N; i += (j % 89 == 0 ? 1 : 53)) ASSERT_EQ(o2(i, j), in(j, i) * 2.0f) << i << "," << j;

    // Read back in the same nest (an update computed in each row of its consumer, stored for
    // the whole image), too small, less than a line. (A root stage's update is a nest of its
    // own, which reads what the first nest wrote from memory like any consumer.)
    Func h("stream_h"), o("stream_o");
    RDom r(0, N, "r");
    h(x, y) = in(x, y) + 1.0f;
    h(r, y) = h(r, y) * 0.5f + h(max(r - 1, 0), y);
    o(x, y) = h(x, y) * 3.0f;
    h.store_root().compute_at(o, y).vectorize(x, 16);
    o.vectorize(x, 16);
    ir = streamed_part(Pipeline(o).lowered_ir({N, N}));
    EXPECT_EQ(stores_to(ir, "stream_h").first, 0) << ir;
    EXPECT_GT(stores_to(ir, "stream_h").second, 0) << ir;
    EXPECT_GT(stores_to(ir, "stream_o").first, 0) << ir;
    Func small("stream_small"), narrow("stream_narrow");
    small(x, y) = in(x, y) * 2.0f;
    small.vectorize(x, 16);
    EXPECT_EQ(Pipeline(small).lowered_ir({1024, 1024}).find("(nontemporal)"), std::string::npos);
    narrow(x, y) = in(x, y) * 2.0f;
    narrow.vectorize(x, 8);
    EXPECT_EQ(Pipeline(narrow).lowered_ir({N, N}).find("(nontemporal)"), std::string::npos);
}

}  // namespace
