// A Func at root that reads an output of the same pipeline is computed after that output
// (it used to be computed first, reading an output not written yet).
#include <gtest/gtest.h>
#include <weft/weft.h>

using namespace weft;

TEST(RootAfterOutputs, InternalRootReadingAnOutputComesAfterIt) {
    Var x("x"), y("y");
    ImageParam in(Float(32), 2, "in");
    Func a("a"), b("b"), c("c"), m("m");
    a(x, y) = in(x, y) + 1.0f;
    b(x, y) = a(x, y) * 2.0f;
    c(x, y) = a(x, y) * 3.0f;  // not an output; reads the output a
    m(x, y) = b(x, y) + c(x, y);
    a.compute_root();
    b.compute_root();
    c.compute_root();
    Buffer<float> img(40, 12);
    for (int yy = 0; yy < 12; yy++)
        for (int xx = 0; xx < 40; xx++) img(xx, yy) = (float)(xx + 3 * yy);
    in.set(img);
    for (int through = 0; through < 2; through++) {
        Func top("top");
        Func mid("mid");
        if (through) {  // and through a root Func between: top reads mid reads c reads a
            mid(x, y) = c(x, y) - 1.0f;
            mid.compute_root();
            top(x, y) = b(x, y) + mid(x, y) + 1.0f;
        } else {
            top(x, y) = m(x, y);
        }
        Realization r = Pipeline({top, b, a}).realize({40, 12});
        Buffer<float> rt(r[0]), rb(r[1]), ra(r[2]);
        for (int yy = 0; yy < 12; yy++)
            for (int xx = 0; xx < 40; xx++) {
                float av = img(xx, yy) + 1.0f;
                ASSERT_EQ(ra(xx, yy), av);
                ASSERT_EQ(rb(xx, yy), av * 2.0f);
                ASSERT_EQ(rt(xx, yy), av * 2.0f + av * 3.0f) << xx << ", " << yy << " through " << through;
            }
    }
}

TEST(GuardedTileBounds, InputReadByAGuardedMemberOfTilesIsNotOverEstimated) {
    // d reads the input at its own coordinates; it is computed per tile over the clamped
    // window its consumer needs, vectorized with a guarded tail. The input's region must come
    // out as [0, w - 1] (it once came out as [-1, w - 1] and the call was refused).
    const int w = 2048, h = 128;
    Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
    ImageParam in(Float(32), 2, "in");
    Func d("d"), e("e"), out("out");
    d(x, y) = in(x, y) * 2.0f;
    e(x, y) = d(clamp(x - 1, 0, w - 1), y) + d(clamp(x + 1, 0, w - 1), y) + d(x, y);
    out(x, y) = e(x, y) + 1.0f;
    out.tile(x, y, xo, yo, xi, yi, 64, 64).vectorize(xi, 16).parallel(yo);
    e.compute_at(out, xo).vectorize(x, 16, TailStrategy::GuardWithIf);
    d.compute_at(out, xo).vectorize(x, 16, TailStrategy::GuardWithIf);
    Buffer<float> img(w, h);
    for (int yy = 0; yy < h; yy++)
        for (int xx = 0; xx < w; xx++) img(xx, yy) = (float)((xx * 5 + yy) % 23);
    in.set(img);
    Buffer<float> r = out.realize({w, h});
    for (int yy = 0; yy < h; yy += 7)
        for (int xx = 0; xx < w; xx++) {
            float v = 2 * img(std::max(xx - 1, 0), yy) + 2 * img(std::min(xx + 1, w - 1), yy) + 2 * img(xx, yy) + 1.0f;
            ASSERT_EQ(r(xx, yy), v) << xx << ", " << yy;
        }
}
