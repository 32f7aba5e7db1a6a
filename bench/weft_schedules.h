// Every weft algorithm and schedule that bench/run measures, in one place, so that schedules
// can be improved without touching the harness (bench/weft_kernels.cpp feeds data and times).
//
// Written with the schedule vocabulary that exists today: split, tile, reorder, vectorize,
// unroll, parallel, compute_at, store_at, fuse, bound. Places marked "LATER:" say which of
// the features under way (Func::in(), reorder_storage, rfactor, specialize, prefetch, fast_exp)
// would replace a workaround.
//
// The data layouts are those of bench/peers/bench_common.h. Each builder returns the output
// Func and the ImageParams in the order the Callable takes them.
#pragma once
#include <weft/weft.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace weft_bench {

using namespace weft;

struct Def {
    Func out;
    std::vector<ImageParam> inputs;
};

/** The exp used by softmax. LATER: weft::fast_exp once it lands (today exp is scalarized
    into libm calls inside vectorized loops). */
inline Expr softmax_exp(Expr e) { return exp(e); }

/** Reads WEFT_BENCH_SCHED (an integer, default 0) to try alternative schedules while tuning. */
inline int sched_choice() {
    const char *e = std::getenv("WEFT_BENCH_SCHED");
    return e ? std::atoi(e) : 0;
}

// ============================================================================================ SGEMM
// C = A·B, n×n, fp32. Row-major C(x, y) = Σ_k A(k, y)·B(x, k) (x contiguous); column-major
// C(x, y) = Σ_k A(x, k)·B(k, y) (x = row index, contiguous). Both are
//     out(x, y) = Σ_k V(x, k)·S(k, y)
// with V the operand read as vectors along x and S the operand broadcast: row-major V = B,
// S = A; column-major V = A, S = B. bench/weft_kernels.cpp binds the buffers accordingly, so one
// algorithm and one schedule serve both layouts (as in OpenBLAS, which maps one onto the other).
/** SGEMM accumulating straight into the output: C's update is tiled, vectorized and unrolled,
    and LLVM keeps the tile in registers across the k loop if it can (choice 5). */
inline Def sgemm_in_place(int n) {
    ImageParam V(Float(32), 2, "V"), S(Float(32), 2, "S");
    Var x("x"), y("y");
    RDom k(0, n, "k");
    Func Vp("Vp"), C("C");
    Vp(x, y) = V(x, y);
    C(x, y) = 0.0f;
    C(x, y) += Vp(x, k) * S(k, y);
    const int vec = 16;
    int tx = 2 * vec, ty = 8;
    if (const char *t = std::getenv("WEFT_BENCH_TILE")) std::sscanf(t, "%dx%d", &tx, &ty);
    Var xo("xo"), yo("yo"), xi("xi"), yi("yi");
    C.vectorize(x, vec);
    C.update()
        .tile(x, y, xo, yo, xi, yi, tx, ty)
        .reorder(xi, yi, k, yo, xo)
        .vectorize(xi, vec)
        .unroll(xi)
        .unroll(yi)
        .parallel(xo);
    Vp.compute_at(C, xo).vectorize(x, vec);
    return {C, {V, S}};
}

/** The accumulator indexed by (x, row within the tile, tile): its tile dimensions have
    constant bounds, so it can live on the stack (choice 6). */
inline Def sgemm_reshaped(int n) {
    ImageParam V(Float(32), 2, "V"), S(Float(32), 2, "S");
    const int vec = 16;
    int tx = 3 * vec, ty = 8;
    if (const char *t = std::getenv("WEFT_BENCH_TILE")) std::sscanf(t, "%dx%d", &tx, &ty);
    Var x("x"), y("y"), yi("yi"), yt("yt");
    RDom k(0, n, "k");
    Func Vp("Vp"), prod("prod"), C("C");
    Vp(x, y) = V(x, y);
    prod(x, yi, yt) = 0.0f;
    prod(x, yi, yt) += Vp(x, k) * S(k, yt * ty + yi);
    C(x, y) = prod(x, y % ty, y / ty);
    Var xo("xo"), yo("yo"), xi("xi"), yii("yii"), yoo("yoo");
    int rows_per_task = std::max(ty, std::min(256, n / 4));
    rows_per_task = (rows_per_task / ty) * ty;
    C.tile(x, y, xo, yo, xi, yii, tx, ty)
        .split(yo, yoo, yo, rows_per_task / ty)
        .reorder(xi, yii, yo, xo, yoo)
        .vectorize(xi, vec)
        .unroll(xi)
        .unroll(yii)
        .parallel(yoo);
    prod.bound(yi, 0, ty);
    prod.compute_at(C, yo).vectorize(x, vec).unroll(x).unroll(yi);
    prod.update().reorder(x, yi, k, yt).vectorize(x, vec).unroll(x).unroll(yi);
    Vp.compute_at(C, xo).vectorize(x, vec);
    return {C, {V, S}};
}

inline Def sgemm(int n) {
    if (sched_choice() == 5) return sgemm_in_place(n);
    if (sched_choice() == 6) return sgemm_reshaped(n);
    ImageParam V(Float(32), 2, "V"), S(Float(32), 2, "S");
    Var x("x"), y("y");
    RDom k(0, n, "k");
    // Vp: a wrapper Func that packs a panel of V (LATER: V.in()).
    Func Vp("Vp"), prod("prod"), C("C");
    Vp(x, y) = V(x, y);
    prod(x, y) = 0.0f;
    prod(x, y) += Vp(x, k) * S(k, y);
    C(x, y) = prod(x, y);

    // Register blocking: an accumulator tile of tx × ty (tx / 16 vectors × ty rows) computed at
    // the innermost tile loop of C, its loops vectorized and unrolled so it lives in registers;
    // the reduction loop k runs outside the unrolled block. Rows are split into blocks of
    // rows_per_task run in parallel; each block packs a tx × n panel of V per column tile.
    const int vec = 16;
    int tx = 3 * vec, ty = 8;
    int choice = sched_choice();
    if (choice == 1) tx = 2 * vec, ty = 12;
    if (choice == 2) tx = 4 * vec, ty = 6;
    int rows_per_task = std::max(ty, std::min(256, n / 4));
    rows_per_task = (rows_per_task / ty) * ty;
    Var xo("xo"), yo("yo"), xi("xi"), yi("yi"), yoo("yoo");
    if (choice == 4) {
        C.tile(x, y, xo, yo, xi, yi, tx, ty).reorder(xi, yi, yo, xo).vectorize(xi, vec).unroll(xi).unroll(yi).parallel(xo);
    } else {
    C.tile(x, y, xo, yo, xi, yi, tx, ty)
        .split(yo, yoo, yo, rows_per_task / ty)
        .reorder(xi, yi, yo, xo, yoo)
        .vectorize(xi, vec)
        .unroll(xi)
        .unroll(yi)
        .parallel(yoo);
    }
    prod.compute_at(C, yo).vectorize(x, vec).unroll(x).unroll(y);
    prod.update().reorder(x, y, k).vectorize(x, vec).unroll(x).unroll(y);
    if (choice == 3) {
        Vp.compute_inline();  // no packing, for comparison
    } else {
        Vp.compute_at(C, xo).vectorize(x, vec);
    }
    return {C, {V, S}};
}

// ============================================================================================= blur
// 3×3 box blur as two passes over a 4096² image with a one-pixel border (input mins -1).
inline Def blur() {
    ImageParam in(Float(32), 2, "in");
    Var x("x"), y("y"), xi("xi"), yi("yi");
    Func bx("blur_x"), by("blur_y");
    bx(x, y) = (in(x - 1, y) + in(x, y) + in(x + 1, y)) * (1.0f / 3.0f);
    by(x, y) = (bx(x, y - 1) + bx(x, y) + bx(x, y + 1)) * (1.0f / 3.0f);
    switch (sched_choice()) {
    case 1:  // 256×32 tiles, blur_x per tile
        by.tile(x, y, xi, yi, 256, 32).vectorize(xi, 16).parallel(y);
        bx.compute_at(by, x).vectorize(x, 16);
        break;
    case 2:  // strips of 64 rows in 1024-wide columns, sliding window per column
        by.split(y, y, yi, 64).split(x, x, xi, 1024).reorder(xi, yi, x, y).vectorize(xi, 16).parallel(y);
        bx.store_at(by, x).compute_at(by, yi).vectorize(x, 16);
        break;
    default:  // strips of 32 rows, blur_x stored per strip and computed per row. Meant as a
              // sliding window; today weft recomputes the 3 rows each output row needs (the
              // window's bounds are let-bound, so slide_window does not see them move), yet
              // this is still the fastest of the three here.
        by.split(y, y, yi, 32).parallel(y).vectorize(x, 16);
        bx.store_at(by, y).compute_at(by, yi).vectorize(x, 16);
        break;
    }
    return {by, {in}};
}

// ========================================================================================== unsharp
// 5-tap separable Gaussian (1 4 6 4 1)/16 over repeat_edge(in), out = e + 1.5·(e - blur).
inline Def unsharp() {
    ImageParam in(Float(32), 2, "in");
    Var x("x"), y("y"), xi("xi"), yi("yi");
    Func e = BoundaryConditions::repeat_edge(in);
    Func bx("us_bx"), by("us_by"), o("unsharp");
    const float w0 = 1.0f / 16, w1 = 4.0f / 16, w2 = 6.0f / 16;
    bx(x, y) = w0 * e(x - 2, y) + w1 * e(x - 1, y) + w2 * e(x, y) + w1 * e(x + 1, y) + w0 * e(x + 2, y);
    by(x, y) = w0 * bx(x, y - 2) + w1 * bx(x, y - 1) + w2 * bx(x, y) + w1 * bx(x, y + 1) + w0 * bx(x, y + 2);
    o(x, y) = e(x, y) + 1.5f * (e(x, y) - by(x, y));
    switch (sched_choice()) {
    case 1:  // strips of 32 rows, bx a sliding window over rows
        o.split(y, y, yi, 32).parallel(y).vectorize(x, 16);
        bx.store_at(o, y).compute_at(o, yi).vectorize(x, 16);
        break;
    case 2:  // as 1, with the boundary condition materialized once per row
        o.split(y, y, yi, 32).parallel(y).vectorize(x, 16);
        bx.store_at(o, y).compute_at(o, yi).vectorize(x, 16);
        e.store_at(o, y).compute_at(o, yi).vectorize(e.args()[0], 16);
        break;
    case 3:  // 256×32 tiles, the boundary condition computed by scalar code
        o.tile(x, y, xi, yi, 256, 32).vectorize(xi, 16).parallel(y);
        bx.compute_at(o, x).vectorize(x, 16);
        e.compute_at(o, x);
        break;
    case 4:  // 256×32 tiles
        o.tile(x, y, xi, yi, 256, 32).vectorize(xi, 16).parallel(y);
        bx.compute_at(o, x).vectorize(x, 16);
        e.compute_at(o, x).vectorize(e.args()[0], 16);
        break;
    default:  // 512×64 tiles; the boundary condition and bx computed per tile (6% of the rows
              // twice), so every later read is a dense vector load. The clamped reads of e are
              // vector gathers (vgatherdps), about 3/4 of the time on this CPU: weft has no loop
              // partitioning (Halide's steady state has plain loads). LATER: specialize / a
              // dense-load fast path for clamp(ramp) proven in range.
        o.tile(x, y, xi, yi, 512, 64).vectorize(xi, 16).parallel(y);
        bx.compute_at(o, x).vectorize(x, 16);
        e.compute_at(o, x).vectorize(e.args()[0], 16);
        break;
    }
    return {o, {in}};
}

// ============================================================================ softmax and layer-norm
// Rows of 1024 (x contiguous). The row reductions are vectorized by hand: a 16-lane partial
// reduction over chunks of 16 (a pure lane dimension l, vectorized), then a 16-wide horizontal
// one. LATER: rfactor does this split from a plain maximum()/sum().
inline Def softmax(int cols) {
    ImageParam in(Float(32), 2, "in");
    const int L = 16;
    Var x("x"), y("y"), l("l"), yo("yo"), yi("yi");
    RDom rc(0, cols / L, "rc"), rl(0, L, "rl");
    Func pmax("sm_pmax"), mx("sm_max"), ex("sm_exp"), psum("sm_psum"), sm("sm_sum"), out("softmax");
    pmax(l, y) = Float(32).min();
    pmax(l, y) = max(pmax(l, y), in(rc * L + l, y));
    mx(y) = Float(32).min();
    mx(y) = max(mx(y), pmax(rl, y));
    ex(x, y) = softmax_exp(in(x, y) - mx(y));
    psum(l, y) = 0.0f;
    psum(l, y) += ex(rc * L + l, y);
    sm(y) = 0.0f;
    sm(y) += psum(rl, y);
    out(x, y) = ex(x, y) * (1.0f / sm(y));

    out.split(y, yo, yi, 8).parallel(yo).vectorize(x, 16);
    ex.compute_at(out, yi).vectorize(x, 16);
    mx.compute_at(out, yi);
    pmax.compute_at(out, yi).vectorize(l);
    pmax.update().vectorize(l);
    sm.compute_at(out, yi);
    psum.compute_at(out, yi).vectorize(l);
    psum.update().vectorize(l);
    return {out, {in}};
}

inline Def layernorm(int cols, float eps) {
    ImageParam in(Float(32), 2, "in"), gamma(Float(32), 1, "gamma"), beta(Float(32), 1, "beta");
    const int L = 16;
    Var x("x"), y("y"), l("l"), yo("yo"), yi("yi");
    RDom rc(0, cols / L, "rc"), rl(0, L, "rl");
    Func psum("ln_psum"), mean("ln_mean"), psq("ln_psq"), inv("ln_inv"), out("layernorm");
    psum(l, y) = 0.0f;
    psum(l, y) += in(rc * L + l, y);
    Func total("ln_total"), sq("ln_sq");
    total(y) = 0.0f;
    total(y) += psum(rl, y);
    mean(y) = total(y) * (1.0f / cols);
    Expr d = in(rc * L + l, y) - mean(y);
    psq(l, y) = 0.0f;
    psq(l, y) += d * d;
    sq(y) = 0.0f;
    sq(y) += psq(rl, y);
    inv(y) = 1.0f / sqrt(sq(y) * (1.0f / cols) + eps);
    out(x, y) = (in(x, y) - mean(y)) * (inv(y) * gamma(x)) + beta(x);

    out.split(y, yo, yi, 8).parallel(yo).vectorize(x, 16);
    mean.compute_at(out, yi);
    total.compute_at(out, yi);
    psum.compute_at(out, yi).vectorize(l);
    psum.update().vectorize(l);
    inv.compute_at(out, yi);
    sq.compute_at(out, yi);
    psq.compute_at(out, yi).vectorize(l);
    psq.update().vectorize(l);
    return {out, {in, gamma, beta}};
}

// ============================================================================ conv + bias + ReLU
// input(ci, x, y, n) NHWC with a one-pixel border already in the data, filter(co, kx, ky, ci),
// bias(co); out(co, x, y, n) = max(0, bias + Σ filter·input).
inline Def conv(int C) {
    ImageParam input(Float(32), 4, "input"), filter(Float(32), 4, "filter"), bias(Float(32), 1, "bias");
    Var c("c"), x("x"), y("y"), n("n");
    RDom r(0, C, 0, 3, 0, 3, "r");
    Func cv("conv"), relu("relu");
    cv(c, x, y, n) = bias(c);
    cv(c, x, y, n) += filter(c, r.y, r.z, r.x) * input(r.x, x + r.y, y + r.z, n);
    relu(c, x, y, n) = max(0.0f, cv(c, x, y, n));

    // Halide's conv_layer schedule for AVX-512: 4 vectors of output channels × 5 pixels = 20
    // accumulators in registers, the reduction over input channels outside the unrolled block.
    // LATER: stage the filter and input tiles with in() as Halide's does.
    const int vec = 16, tile_c = 4 * vec, tile_x = 5;
    Var co("co"), ci("ci"), xo("xo"), xi("xi"), yn("yn");
    relu.split(c, co, ci, tile_c)
        .split(x, xo, xi, tile_x)
        .reorder(ci, xi, xo, y, n, co)
        .vectorize(ci, vec)
        .unroll(ci)
        .unroll(xi)
        .fuse(y, n, yn)
        .parallel(yn);
    cv.compute_at(relu, xo).vectorize(c, vec).unroll(c).unroll(x).unroll(y);
    cv.update().reorder(c, x, y, r.x, r.y, r.z, n).vectorize(c, vec).unroll(c).unroll(x).unroll(y).unroll(r.x, 2);
    return {relu, {input, filter, bias}};
}

}  // namespace weft_bench
