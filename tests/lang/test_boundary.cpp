// API.md "Algorithms": BoundaryConditions on Buffer and ImageParam.
#include "lang_test_util.h"

using namespace weft;

namespace {

int clampi(int v, int lo, int hi) { return std::min(std::max(v, lo), hi); }
int mirror(int v, int min, int extent) {
    // Halide's mirror_image: copies of the image abut, mirrored so that edges repeat.
    int c = v - min;
    int m = weft_test::floor_mod(c, 2 * extent);
    if (m >= extent) m = 2 * extent - 1 - m;
    return min + m;
}

struct BCCase {
    int in_w, in_h, in_min_x, in_min_y;
};

void check_bc(bool use_image_param, const BCCase &c) {
    SCOPED_TRACE(std::string(use_image_param ? "ImageParam" : "Buffer") + " " + std::to_string(c.in_w) + "x" +
                 std::to_string(c.in_h) + " min " + std::to_string(c.in_min_x) + "," + std::to_string(c.in_min_y));
    Buffer<int> in(c.in_w, c.in_h);
    weft_test::fill_pattern(in, 21, 0, 1000);
    in.set_min(c.in_min_x, c.in_min_y);
    ImageParam ip(Int(32), 2, "bc_in");
    ip.set(in);

    Func rep, cext, mir;
    if (use_image_param) {
        rep = BoundaryConditions::repeat_edge(ip);
        cext = BoundaryConditions::constant_exterior(ip, -5);
        mir = BoundaryConditions::mirror_image(ip);
    } else {
        rep = BoundaryConditions::repeat_edge(in);
        cext = BoundaryConditions::constant_exterior(in, -5);
        mir = BoundaryConditions::mirror_image(in);
    }
    Var x("x"), y("y");
    Func out("bc_out");
    out(x, y) = rep(x, y) + 10000 * cext(x, y) + 100000000 * (mir(x, y) % 10);

    // An output region reaching well past the input on every side.
    const int ox = c.in_min_x - 2 * c.in_w - 3, oy = c.in_min_y - c.in_h - 2;
    const int ow = 5 * c.in_w + 6, oh = 3 * c.in_h + 4;
    Buffer<int> o(ow, oh);
    o.set_min(ox, oy);
    out.realize(o);
    const int x0 = c.in_min_x, x1 = c.in_min_x + c.in_w - 1, y0 = c.in_min_y, y1 = c.in_min_y + c.in_h - 1;
    int bad = 0;
    for (int j = oy; j < oy + oh; j++)
        for (int i = ox; i < ox + ow; i++) {
            int r = in(clampi(i, x0, x1), clampi(j, y0, y1));
            int ce = (i >= x0 && i <= x1 && j >= y0 && j <= y1) ? in(i, j) : -5;
            int mi = in(mirror(i, x0, c.in_w), mirror(j, y0, c.in_h));
            int e = r + 10000 * ce + 100000000 * (mi % 10);
            if (o(i, j) != e && bad++ < 10)
                ADD_FAILURE() << "at (" << i << ", " << j << "): got " << o(i, j) << ", expected " << e
                              << " (repeat " << r << ", constant " << ce << ", mirror " << mi << ")";
        }
    EXPECT_EQ(bad, 0);
}

TEST(BoundaryConditions, OnBuffer) {
    check_bc(false, {5, 4, 0, 0});
    check_bc(false, {1, 1, 0, 0});
    check_bc(false, {7, 3, 2, -3});
}

TEST(BoundaryConditions, OnImageParam) {
    check_bc(true, {5, 4, 0, 0});
    check_bc(true, {3, 6, -4, 1});
    check_bc(true, {1, 2, 0, 0});
}

TEST(BoundaryConditions, ImageParamRebinding) {
    ImageParam ip(Float(32), 1, "bc_rebind");
    Func rep = BoundaryConditions::repeat_edge(ip);
    Var x("x");
    Func out("bc_rebind_out");
    out(x) = rep(x - 2) + rep(x + 2);
    out.vectorize(x, 8);
    for (int n : {4, 19}) {
        Buffer<float> in(n);
        for (int i = 0; i < n; i++) in(i) = (float)(i * i) * 0.5f;
        ip.set(in);
        Buffer<float> o = out.realize({n});
        for (int i = 0; i < n; i++)
            EXPECT_FLOAT_EQ(o(i), in(clampi(i - 2, 0, n - 1)) + in(clampi(i + 2, 0, n - 1))) << "n " << n << " i " << i;
    }
}

TEST(BoundaryConditions, ScheduledBlurWithRepeatEdge) {
    const int W = 13, H = 9;
    Buffer<float> in(W, H);
    weft_test::fill_pattern(in, 2, 0, 50);
    Func clamped = BoundaryConditions::repeat_edge(in);
    Var x("x"), y("y"), xi("xi"), yi("yi");
    Func bx("bc_bx"), by("bc_by");
    bx(x, y) = clamped(x - 1, y) + clamped(x, y) + clamped(x + 1, y);
    by(x, y) = bx(x, y - 1) + bx(x, y) + bx(x, y + 1);
    by.tile(x, y, xi, yi, 4, 4).vectorize(xi);
    bx.compute_at(by, x).vectorize(x, 4);
    clamped.compute_root();
    Buffer<float> o = by.realize({W, H});
    for (int j = 0; j < H; j++)
        for (int i = 0; i < W; i++) {
            float e = 0;
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++) e += in(clampi(i + dx, 0, W - 1), clampi(j + dy, 0, H - 1));
            EXPECT_FLOAT_EQ(o(i, j), e) << i << "," << j;
        }
}

}  // namespace
