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
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace weft_bench {

using namespace weft;

struct Def {
    Func out;
    std::vector<ImageParam> inputs;
};

/** The threads the pipelines will run on (WEFT_NUM_THREADS, else the hardware's). */
inline int bench_threads() {
    const char *e = std::getenv("WEFT_NUM_THREADS");
    int n = e ? std::atoi(e) : 0;
    return n >= 1 ? n : std::max(1, (int)std::thread::hardware_concurrency());
}

/** Alternative schedules while tuning: WEFT_BENCH_SCHED_<KERNEL> (e.g. WEFT_BENCH_SCHED_SGEMM=1),
    else WEFT_BENCH_SCHED, else 0 (the default schedule). */
inline int sched_choice(const std::string &kernel) {
    std::string var = "WEFT_BENCH_SCHED_" + kernel;
    for (char &c : var) c = (char)std::toupper((unsigned char)c);
    const char *e = std::getenv(var.c_str());
    if (!e) e = std::getenv("WEFT_BENCH_SCHED");
    return e ? std::atoi(e) : 0;
}

/** exp(x) for x <= 0 with plain arithmetic only (so it vectorizes today): exp(x) =
    p(x/256)^256, p the degree-7 Taylor polynomial, then 8 squarings; relative error about
    1e-5. An experiment to show what a vector exp is worth (WEFT_BENCH_SCHED_SOFTMAX=1), not the
    default: a real fast_exp reduces the range with 2^n instead. */
inline Expr exp_nonpositive_by_squaring(Expr x) {
    Expr t = max(x, -88.0f) * (1.0f / 256);
    Expr p = 1.0f / 5040;
    const float c[] = {1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f, 1.0f, 1.0f};
    for (float k : c) p = p * t + k;
    for (int i = 0; i < 8; i++) p = p * p;
    return p;
}

/** The exp used by softmax. LATER: weft::fast_exp once it lands (today exp is scalarized
    into libm calls inside vectorized loops). */
// weft::fast_exp (relative error below 1e-6) vectorizes; exp() would call libm lane by lane.
inline Expr softmax_exp(Expr e) { return sched_choice("softmax") == 2 ? exp(e) : sched_choice("softmax") == 1 ? exp_nonpositive_by_squaring(e) : fast_exp(e); }

// ============================================================================================ SGEMM
// C = A·B, n×n, fp32. Row-major C(x, y) = Σ_k A(k, y)·B(x, k) (x contiguous); column-major
// C(x, y) = Σ_k A(x, k)·B(k, y) (x = row index, contiguous). Both are
//     out(x, y) = Σ_k V(x, k)·S(k, y)
// with V the operand read as vectors along x and S the operand broadcast: row-major V = B,
// S = A; column-major V = A, S = B. bench/weft_kernels.cpp binds the buffers accordingly, so one
// algorithm and one schedule serve both layouts (as in OpenBLAS, which maps one onto the other).
inline Def sgemm(int n) {
    ImageParam V(Float(32), 2, "V"), S(Float(32), 2, "S");
    Var x("x"), y("y");
    RDom k(0, n, "k");
    // Vp: a wrapper Func that packs a panel of V (LATER: V.in()).
    Func Vp("Vp"), prod("prod"), C("C");
    Vp(x, y) = V(x, y);
    prod(x, y) = 0.0f;
    prod(x, y) += Vp(x, k) * S(k, y);
    C(x, y) = prod(x, y);

    // Register blocking: an accumulator tile of tx × ty (tx / 16 vectors × ty rows = 24
    // accumulators) computed at the innermost tile loop of C, its loops vectorized and
    // unrolled so it lives in registers; the reduction loop k runs outside the unrolled block
    // (no k blocking: the packed panel, tx × n floats, stays in L2 up to n = 2048).
    // WEFT_BENCH_TILE=<tx>x<ty> overrides the block while tuning.
    const int vec = 16;
    int tx = 3 * vec, ty = 8;
    if (const char *t = std::getenv("WEFT_BENCH_TILE")) std::sscanf(t, "%dx%d", &tx, &ty);
    Var xo("xo"), yo("yo"), xi("xi"), yi("yi"), yoo("yoo");
    if (sched_choice("sgemm") == 1) {
        // Halide's structure: blocks of rows in parallel, each packing a panel of V per column
        // tile (the panel is packed n / rows_per_task times in all).
        int rows_per_task = std::max(ty, std::min(256, n / 4));
        rows_per_task = (rows_per_task / ty) * ty;
        C.tile(x, y, xo, yo, xi, yi, tx, ty)
            .split(yo, yoo, yo, rows_per_task / ty)
            .reorder(xi, yi, yo, xo, yoo)
            .vectorize(xi, vec)
            .unroll(xi)
            .unroll(yi)
            .parallel(yoo);
    } else {
        // Column panels in parallel: each task packs its tx × n panel of V once and sweeps all
        // rows (S streams from L3). The fastest here on one thread at n = 2048.
        C.tile(x, y, xo, yo, xi, yi, tx, ty).reorder(xi, yi, yo, xo).vectorize(xi, vec).unroll(xi).unroll(yi).parallel(xo);
    }
    prod.compute_at(C, yo).vectorize(x, vec).unroll(x).unroll(y);
    prod.update().reorder(x, y, k).vectorize(x, vec).unroll(x).unroll(y);
    Vp.compute_at(C, xo).vectorize(x, vec);
    return {C, {V, S}};
}

// ================================================================= int8 and bf16 GEMM (packed B)
// The schedule of gemm_u8s8 and gemm_bf16: C(x, y) = prod(x, y), prod a reduction over kq whose
// operand Bp(per_lane x + t, kq) holds, for each output column x, the per_lane values of k one
// 32-bit lane sums. As SGEMM's: a 64 x 6 accumulator tile in registers (24 zmm; for u8s8 48 x 8
// and 80 x 5 were within noise of it, 96 x 4 and 32 x 12 slower; for bf16 32 x 12 and 48 x 8
// slower at n = 2048), columns of tiles in parallel. The panel of Bp a column of tiles reads is
// copied contiguous per task (a wrapper Func): in Bp its rows of 64 x per_lane values are
// n x per_lane elements apart, and from 8 KB apart they fall on so few cache sets that the
// panel leaves L2 between row tiles. One thread, best of 7 calls: u8s8 n = 2048 20.8-20.9 ->
// 18.9 ms, n = 1024 unchanged (2.34-2.37 ms); bf16 n = 2048 48.8-49.0 -> 37.8-37.9 ms, n = 1024
// 4.79-4.89 -> 4.68-4.71 ms. WEFT_BENCH_SCHED_GEMM_U8S8=1 / _BF16=1: not copied;
// WEFT_BENCH_TILE_U8S8 / _BF16=<tx>x<ty>: the tile. Tried for bf16: k blocked, the
// accumulators of a column panel in memory (prod at xo), each block of 64-256 pairs of k swept
// over every row tile while its slice of Bp stays in L1: 60-61 ms at n = 2048 against 49-53 ms
// unblocked (both without the copy).
inline void packed_gemm_schedule(Func C, Func prod, ImageParam Bp, RVar kq, int per_lane, const std::string &kernel) {
    Var x = C.args()[0], y = C.args()[1];
    const int vec = 16;
    int tx = 4 * vec, ty = 6;
    std::string tile_var = "WEFT_BENCH_TILE_" + kernel.substr(5);  // U8S8 / BF16
    for (char &c : tile_var) c = (char)std::toupper((unsigned char)c);
    if (const char *t = std::getenv(tile_var.c_str())) std::sscanf(t, "%dx%d", &tx, &ty);
    Var xo("xo"), yo("yo"), xi("xi"), yi("yi");
    C.tile(x, y, xo, yo, xi, yi, tx, ty).reorder(xi, yi, yo, xo).vectorize(xi, vec).unroll(xi).unroll(yi).parallel(xo);
    Var px = prod.args()[0], py = prod.args()[1];
    prod.compute_at(C, yo).vectorize(px, vec).unroll(px).unroll(py);
    prod.update().reorder(px, py, kq).vectorize(px, vec).unroll(px).unroll(py);
    if (sched_choice(kernel) != 1) {
        Func Bw = Bp.in();
        Bw.compute_at(C, xo).vectorize(Bw.args()[0], per_lane * vec);
    }
}

// C(x, y) = Σ_k A(k, y)·B(x, k), A uint8, B int8, C int32 (as oneDNN's u8 x s8 -> s32 matmul).
// B comes packed, as inference weights are (once, outside the call): Bp(4 x + t, kq) = B(x, 4 kq + t),
// the four bytes of k that one 32-bit lane sums next to each other. Each four products of a lane
// are one vpdpbusd where the target has AVX-512 VNNI (code generation finds the four-term sum of
// widened u8 x s8 products); elsewhere the same code, product by product.
inline Def gemm_u8s8(int n) {
    ImageParam A(UInt(8), 2, "A"), Bp(Int(8), 2, "Bp");
    Var x("x"), y("y");
    RDom kq(0, n / 4, "kq");
    Func prod("prod"), C("C");
    prod(x, y) = 0;
    Expr sum = 0;
    for (int t = 0; t < 4; t++) sum = sum + cast<int>(A(4 * kq + t, y)) * cast<int>(Bp(4 * x + t, kq));
    prod(x, y) += sum;
    C(x, y) = prod(x, y);
    packed_gemm_schedule(C, prod, Bp, kq.x, 4, "gemm_u8s8");
    return {C, {A, Bp}};
}

// C(x, y) = Σ_k A(k, y)·B(x, k) in float32, A and B bfloat16 (as oneDNN's bf16 x bf16 -> f32
// matmul). B comes packed, as weights are (once, outside the call): Bp(2 x + t, kq) = B(x, 2 kq + t),
// the two values of k that one float lane sums next to each other. Each pair is added to the
// accumulator one product after the other, the odd k first: that is the order in which
// vdpbf16ps adds, so where the target has AVX-512 BF16 each pair is one instruction (code
// generation finds the two products added in turn), with the result of the written order.
inline Def gemm_bf16(int n) {
    ImageParam A(BFloat(16), 2, "A"), Bp(BFloat(16), 2, "Bp");
    Var x("x"), y("y");
    RDom kq(0, n / 2, "kq");
    Func prod("prod"), C("C");
    prod(x, y) = 0.0f;
    auto p = [&](int t) { return cast<float>(A(2 * kq + t, y)) * cast<float>(Bp(2 * x + t, kq)); };
    prod(x, y) = prod(x, y) + p(1) + p(0);
    C(x, y) = prod(x, y);
    packed_gemm_schedule(C, prod, Bp, kq.x, 2, "gemm_bf16");
    return {C, {A, Bp}};
}

// ============================================================================================= blur
// 3×3 box blur as two passes over a 4096² image with a one-pixel border (input mins -1).
inline Def blur() {
    ImageParam in(Float(32), 2, "in");
    Var x("x"), y("y"), xi("xi"), yi("yi");
    Func bx("blur_x"), by("blur_y");
    bx(x, y) = (in(x - 1, y) + in(x, y) + in(x + 1, y)) * (1.0f / 3.0f);
    by(x, y) = (bx(x, y - 1) + bx(x, y) + bx(x, y + 1)) * (1.0f / 3.0f);
    switch (sched_choice("blur")) {
    case 1:  // strips of 32 rows, blur_x a sliding window of rows inside each strip
        by.split(y, y, yi, 32).parallel(y).vectorize(x, 16);
        bx.store_at(by, y).compute_at(by, yi).vectorize(x, 16);
        break;
    case 2:  // strips of 64 rows in 1024-wide columns, sliding window per column
        by.split(y, y, yi, 64).split(x, x, xi, 1024).reorder(xi, yi, x, y).vectorize(xi, 16).parallel(y);
        bx.store_at(by, x).compute_at(by, yi).vectorize(x, 16);
        break;
    case 3:  // strips of 128 rows, sliding window
        by.split(y, y, yi, 128).parallel(y).vectorize(x, 16);
        bx.store_at(by, y).compute_at(by, yi).vectorize(x, 16);
        break;
    case 4:  // 512×32 tiles
        by.tile(x, y, xi, yi, 512, 32).vectorize(xi, 16).parallel(y);
        bx.compute_at(by, x).vectorize(x, 16);
        break;
    case 5:  // 1024×16 tiles
        by.tile(x, y, xi, yi, 1024, 16).vectorize(xi, 16).parallel(y);
        bx.compute_at(by, x).vectorize(x, 16);
        break;
    case 6:  // 256×32 tiles, blur_x per tile (34 rows for 32: 6% computed twice)
        by.tile(x, y, xi, yi, 256, 32).vectorize(xi, 16).parallel(y);
        bx.compute_at(by, x).vectorize(x, 16);
        break;
    default:  // strips of 32 rows in 512-wide columns, blur_x a sliding window of rows per
              // column (3 rows of 2 KB, folded): nothing computed twice, and each column's
              // input rows are read once. The fastest of those tried here on 1 and 2 threads
              // (strips of 8-256 rows × 256-4096 columns, tiles 256-1024 × 16-32).
        by.split(y, y, yi, 32).split(x, x, xi, 512).reorder(xi, yi, x, y).vectorize(xi, 16).parallel(y);
        bx.store_at(by, x).compute_at(by, yi).vectorize(x, 16);
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
    switch (sched_choice("unsharp")) {
    case 2:  // as the default, with the boundary condition materialized once per row
        o.split(y, y, yi, 32).parallel(y).vectorize(x, 16);
        bx.store_at(o, y).compute_at(o, yi).vectorize(x, 16);
        e.store_at(o, y).compute_at(o, yi).vectorize(e.args()[0], 16);
        break;
    case 3:  // 256×32 tiles, the boundary condition computed by scalar code
        o.tile(x, y, xi, yi, 256, 32).vectorize(xi, 16).parallel(y);
        bx.compute_at(o, x).vectorize(x, 16);
        e.compute_at(o, x);
        break;
    case 4:  // 512×64 tiles; the boundary condition and bx computed per tile
        o.tile(x, y, xi, yi, 512, 64).vectorize(xi, 16).parallel(y);
        bx.compute_at(o, x).vectorize(x, 16);
        e.compute_at(o, x).vectorize(e.args()[0], 16);
        break;
    default:  // strips of 32 rows, bx a sliding window over rows (stored as a folded ring of
              // rows); loop partitioning keeps the boundary clamps out of the steady state.
        o.split(y, y, yi, 32).parallel(y).vectorize(x, 16);
        bx.store_at(o, y).compute_at(o, yi).vectorize(x, 16);
        break;
    }
    return {o, {in}};
}

// ============================================================================ softmax and layer-norm
// Rows of 1024 (x contiguous). The row reductions are vectorized by hand: partial results in
// J = 4 vectors of 16 lanes, p(l, j, y) over chunks of 64 (l vectorized, j unrolled: four
// independent chains of vector ops, no dependency through one register), then the 64 partial
// results are combined by a tree of vector operations (4 vectors -> 1, then halves: 16 -> 8 ->
// 4 lanes, then 4 scalars), which costs a few dozen cycles a row where a serial loop over 64
// scalars costs about 200 (a third of the row's time when the data is in cache).
// (Spelled with two pure dimensions l, j rather than vectorize(l, 16).unroll(l) on one of 64:
// that form turns the loads into gathers today, the lane let is not folded into a dense ramp.)

/** The reduction by `op` of p(l, j, y) over l < 16, j < 4, as a tree of vector operations,
    computed at `consumer`'s loop `at`. */
template <typename Op>
Func tree_reduce(Func p, const std::string &name, Op op, Func consumer, Var at) {
    Var l("l"), y("y");
    Func h16(name + "_h16"), h8(name + "_h8"), h4(name + "_h4"), r(name);
    h16(l, y) = op(op(p(l, 0, y), p(l, 1, y)), op(p(l, 2, y), p(l, 3, y)));
    h8(l, y) = op(h16(l, y), h16(l + 8, y));
    h4(l, y) = op(h8(l, y), h8(l + 4, y));
    r(y) = op(op(h4(0, y), h4(1, y)), op(h4(2, y), h4(3, y)));
    h16.compute_at(consumer, at).bound(l, 0, 16).vectorize(l, 16);
    h8.compute_at(consumer, at).bound(l, 0, 8).vectorize(l, 8);
    h4.compute_at(consumer, at).bound(l, 0, 4).vectorize(l, 4);
    r.compute_at(consumer, at);
    return r;
}
inline Expr add_op(Expr a, Expr b) { return a + b; }
inline Expr max_op(Expr a, Expr b) { return max(a, b); }

inline Def softmax(int cols) {
    ImageParam in(Float(32), 2, "in");
    const int L = 16, J = 4, C = L * J;
    Var x("x"), y("y"), l("l"), j("j"), yo("yo"), yi("yi");
    RDom rc(0, cols / C, "rc");
    Func pmax("sm_pmax"), ex("sm_exp"), psum("sm_psum"), out("softmax");
    pmax(l, j, y) = Float(32).min();
    pmax(l, j, y) = max(pmax(l, j, y), in(rc * C + j * L + l, y));
    Func mx = tree_reduce(pmax, "sm_max", max_op, out, yi);
    ex(x, y) = softmax_exp(in(x, y) - mx(y));
    psum(l, j, y) = 0.0f;
    psum(l, j, y) += ex(rc * C + j * L + l, y);
    Func sm = tree_reduce(psum, "sm_sum", add_op, out, yi);
    out(x, y) = ex(x, y) * (1.0f / sm(y));

    out.split(y, yo, yi, 8).parallel(yo).vectorize(x, 16);
    // On one core the 16 MB output streams to memory (no read of each line before it is
    // written: layer-norm 0.66 -> 0.53 ms, softmax 1.2 -> 0.92); on two, one call's output is
    // still in the caches at the next and plain stores are faster (0.23 vs 0.245 ms).
    if (bench_threads() == 1) out.store_nontemporal();
    ex.compute_at(out, yi).vectorize(x, 16);
    pmax.compute_at(out, yi).vectorize(l).unroll(j);
    pmax.update().reorder(l, j, rc).vectorize(l).unroll(j);
    psum.compute_at(out, yi).vectorize(l).unroll(j);
    psum.update().reorder(l, j, rc).vectorize(l).unroll(j);
    return {out, {in}};
}

inline Def layernorm(int cols, float eps) {
    ImageParam in(Float(32), 2, "in"), gamma(Float(32), 1, "gamma"), beta(Float(32), 1, "beta");
    const int L = 16, J = 4, C = L * J;
    Var x("x"), y("y"), l("l"), j("j"), yo("yo"), yi("yi");
    RDom rc(0, cols / C, "rc");
    Func psum("ln_psum"), mean("ln_mean"), psq("ln_psq"), inv("ln_inv"), out("layernorm");
    psum(l, j, y) = 0.0f;
    psum(l, j, y) += in(rc * C + j * L + l, y);
    Func total = tree_reduce(psum, "ln_total", add_op, out, yi);
    mean(y) = total(y) * (1.0f / cols);
    Expr d = in(rc * C + j * L + l, y) - mean(y);
    psq(l, j, y) = 0.0f;
    psq(l, j, y) += d * d;
    Func sq = tree_reduce(psq, "ln_sq", add_op, out, yi);
    inv(y) = 1.0f / sqrt(sq(y) * (1.0f / cols) + eps);
    out(x, y) = (in(x, y) - mean(y)) * (inv(y) * gamma(x)) + beta(x);

    out.split(y, yo, yi, 8).parallel(yo).vectorize(x, 16);
    // On one core the 16 MB output streams to memory (no read of each line before it is
    // written: layer-norm 0.66 -> 0.53 ms, softmax 1.2 -> 0.92); on two, one call's output is
    // still in the caches at the next and plain stores are faster (0.23 vs 0.245 ms).
    if (bench_threads() == 1) out.store_nontemporal();
    mean.compute_at(out, yi);
    psum.compute_at(out, yi).vectorize(l).unroll(j);
    psum.update().reorder(l, j, rc).vectorize(l).unroll(j);
    inv.compute_at(out, yi);
    psq.compute_at(out, yi).vectorize(l).unroll(j);
    psq.update().reorder(l, j, rc).vectorize(l).unroll(j);
    return {out, {in, gamma, beta}};
}

// ============================================================================ conv + bias + ReLU
/** The convolutions' register blocks: out(c, x, y, n) in tiles of tile_c channels (vectors of
    16) x tile_x pixels of a row, rows of all images in parallel; cv (the reduction over r, its
    update reading the input at x + r.y, y + r.z) computed per tile, the tile's loops vectorized
    and unrolled inside the reduction loops, so its accumulators stay in registers. */
inline void conv_schedule(Func out, Func cv, RDom r, int tile_c, int tile_x) {
    std::vector<Var> a = out.args(), ca = cv.args();
    Var c = a[0], x = a[1], y = a[2], n = a[3];
    const int vec = 16;
    Var co("co"), ci("ci"), xo("xo"), xi("xi"), yn("yn");
    out.split(c, co, ci, tile_c)
        .split(x, xo, xi, tile_x)
        .reorder(ci, xi, xo, y, n, co)
        .vectorize(ci, vec)
        .unroll(ci)
        .unroll(xi)
        .fuse(y, n, yn)
        .parallel(yn);
    cv.compute_at(out, xo).vectorize(ca[0], vec).unroll(ca[0]).unroll(ca[1]).unroll(ca[2]);
    cv.update()
        .reorder(ca[0], ca[1], ca[2], r.x, r.y, r.z, ca[3])
        .vectorize(ca[0], vec)
        .unroll(ca[0])
        .unroll(ca[1])
        .unroll(ca[2]);
}

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

    // Register-blocked: 2 vectors of output channels × 8 pixels = 16 accumulators (56 = 7·8, no
    // tail), the reduction over input channels outside the unrolled block. The fastest of those
    // tried here (channels × pixels 4×4, 4×5, 4×6, 4×7, 3×7, 2×4, 2×6, 2×7, 2×8, 2×14, 1×14;
    // r.x unrolled 1, 2, 4): 3.45 ms on one thread, 1.79 on two (4×5: 3.7 / 1.9).
    conv_schedule(relu, cv, r, 2 * 16, 8);
    cv.update().unroll(r.x, 2);
    return {relu, {input, filter, bias}};
}

// ====================================================================================== int8 conv
// The conv shape with uint8 input, int8 weights and int32 output (as oneDNN's u8 x s8 -> s32
// convolution; no bias or ReLU). The weights come packed, as inference weights are (once, outside
// the call): Wp(t, co, kx, ky, ciq) = W(co, kx, ky, 4 ciq + t), the four input channels one 32-bit
// lane sums next to each other; the input's four channels are adjacent already (NHWC). Each four
// products are one vpdpbusd on AVX-512 VNNI (code generation finds the four-term sum).
inline Def conv_u8s8(int C) {
    ImageParam input(UInt(8), 4, "input"), filter(Int(8), 5, "filter");
    Var c("c"), x("x"), y("y"), n("n");
    RDom r(0, C / 4, 0, 3, 0, 3, "r");
    Func cv("conv_u8s8");
    cv(c, x, y, n) = 0;
    Expr sum = 0;
    for (int t = 0; t < 4; t++)
        sum = sum + cast<int>(input(4 * r.x + t, x + r.y, y + r.z, n)) * cast<int>(filter(t, c, r.y, r.z, r.x));
    cv(c, x, y, n) += sum;
    Func out("conv_u8s8_out");
    out(c, x, y, n) = cv(c, x, y, n);
    // Register-blocked as the float conv: 4 vectors of output channels x 4 pixels of a row = 16
    // accumulators (56 = 14·4, no tail), the reduction outside the unrolled block. On one thread
    // (best of 30 calls): 64 x 4 0.97 ms; 32 x 7, 32 x 8, 32 x 14 0.99; 64 x 5, 64 x 6 1.05-1.06;
    // 64 x 7 1.49 (28 accumulators, 4 weight vectors and a broadcast: spills); r.x unrolled by
    // 2 within noise.
    // WEFT_BENCH_TILE_CONV_U8S8=<channels>x<pixels> overrides it.
    int tile_c = 4 * 16, tile_x = 4;
    if (const char *t = std::getenv("WEFT_BENCH_TILE_CONV_U8S8")) std::sscanf(t, "%dx%d", &tile_c, &tile_x);
    conv_schedule(out, cv, r, tile_c, tile_x);
    return {out, {input, filter}};
}

}  // namespace weft_bench
