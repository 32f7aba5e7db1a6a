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
