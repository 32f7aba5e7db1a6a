// GPU-scheduled test pipelines, shared by the NVRTC tests (no device needed), the device
// tests and bench/gpu/gpu_check.cpp. Each builds fresh Funcs over its own input buffers.
#pragma once
#include <functional>
#include <utility>
#include <string>
#include <vector>
#include "weft/weft.h"

namespace weft_gpu_test {
using namespace weft;

struct GpuCase {
    std::string name;
    Func out;
    std::vector<int> sizes;
    std::vector<Buffer<float>> inputs;  // kept alive with the case
    int64_t expect_shared = -1;         // static shared bytes the kernel should use (-1: don't check)
    bool expect_barrier = false;
};

inline Buffer<float> ramp_buffer(int w, int h, float scale = 1.0f, const std::string &name = "in") {
    Buffer<float> b({w, h}, name);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) b(x, y) = scale * (float)((x * 7 + y * 13) % 97) / 97.0f - 0.25f;
    return b;
}

/** A case named `name` whose input is a w x h ramp_buffer. */
inline GpuCase case_with_ramp(const std::string &name, int w, int h, float scale = 1.0f) {
    GpuCase c;
    c.name = name;
    c.inputs.push_back(ramp_buffer(w, h, scale));
    return c;
}

/** out = in * 2 + 1 over a 2-D gpu_tile of tx x ty threads. */
inline GpuCase pointwise(int w = 256, int h = 128, int tx = 32, int ty = 8) {
    GpuCase c = case_with_ramp("pointwise", w, h);
    Buffer<float> in = c.inputs[0];
    Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
    Func f("pointwise");
    f(x, y) = in(x, y) * 2.0f + 1.0f;
    f.gpu_tile(x, y, xo, yo, xi, yi, tx, ty);
    c.out = f;
    c.sizes = {w, h};
    c.expect_shared = 0;
    return c;
}

/** CPU-only schedule hints on a GPU-scheduled Func: prefetch() and store_nontemporal() have
    no effect in a kernel, a parallel loop inside it runs serially in each thread. */
inline GpuCase cpu_hints(int w = 90, int h = 20) {
    GpuCase c = case_with_ramp("cpu_hints", w, h);
    Buffer<float> in = c.inputs[0];
    Var x("x"), y("y"), xo("xo"), xi("xi"), yo("yo"), yi("yi");
    Func f("cpu_hints");
    f(x, y) = in(x, y) * 3.0f - 1.0f;
    f.split(y, yo, yi, 4).split(x, xo, xi, 32).reorder(xi, yi, xo, yo).gpu_blocks(xo, yo).gpu_threads(xi).parallel(yi);
    f.prefetch(in, yi, 2).store_nontemporal();
    c.out = f;
    c.sizes = {w, h};
    c.expect_shared = 0;
    return c;
}

/** Every float math intrinsic, and fast_exp / fast_log (made from their operands' bits with
    reinterpret), vectorized by 4 inside 32x4-thread tiles. */
inline GpuCase math_intrinsics(int w = 100, int h = 30) {
    GpuCase c = case_with_ramp("math_intrinsics", w, h, 4.0f);
    Buffer<float> in = c.inputs[0];
    Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
    Func f("math_intrinsics");
    Expr v = in(x, y), a = abs(v) + 0.25f;
    f(x, y) = sqrt(a) + exp(v) + log(a) + pow(a, 1.5f) + sin(v) + cos(v) + tanh(v) + floor(v * 3.0f) + ceil(v * 3.0f) +
              round(v * 5.0f) + fast_exp(v) + fast_log(a) + cast<float>(cast<int>(v * 100.0f) / 7 % 5);
    f.gpu_tile(x, y, xo, yo, xi, yi, 128, 4).vectorize(xi, 4);
    c.out = f;
    c.sizes = {w, h};
    c.expect_shared = 0;
    return c;
}

/** Newton steps for 1/sqrt(a), 30 of them: each step uses the last three times, so the value is
    a graph of about 250 nodes whose tree has about 10^15 (its shared steps are bound to Lets when
    it is defined). */
inline GpuCase newton_steps(int w = 64, int h = 8) {
    GpuCase c = case_with_ramp("newton_steps", w, h);
    Buffer<float> in = c.inputs[0];
    Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
    Func f("newton_steps");
    Expr a = abs(in(x, y)) + 0.5f, r = 1.0f / (a + 1.0f);
    for (int i = 0; i < 30; i++) r = r * (1.5f - 0.5f * a * r * r);
    f(x, y) = r;
    f.gpu_tile(x, y, xo, yo, xi, yi, 32, 4);
    c.out = f;
    c.sizes = {w, h};
    c.expect_shared = 0;
    return c;
}

/** The separable 3x3 blur over x and y of a w x h output: its input (one-pixel border) becomes
    c's input, by its output; returns {blur_x, blur_y}, to be scheduled. */
inline std::pair<Func, Func> blur_algorithm(GpuCase &c, int w, int h) {
    c.inputs.push_back(ramp_buffer(w + 2, h + 2));
    Buffer<float> in = c.inputs[0];
    in.set_min({-1, -1});
    Var x("x"), y("y");
    Func bx("blur_x"), by("blur_y");
    bx(x, y) = (in(x - 1, y) + in(x, y) + in(x + 1, y)) * (1.0f / 3.0f);
    by(x, y) = (bx(x, y - 1) + bx(x, y) + bx(x, y + 1)) * (1.0f / 3.0f);
    c.out = by;
    c.sizes = {w, h};
    return {bx, by};
}

/** C = A * B over x and y of an n x n output (A and B become c's inputs); returns the Funcs
    acc and out, to be scheduled, and the RDom k of the reduction. */
struct Matmul {
    Func acc, out;
    RDom k;
};
inline Matmul matmul_algorithm(GpuCase &c, int n) {
    c.inputs.push_back(ramp_buffer(n, n, 1.0f, "A"));
    c.inputs.push_back(ramp_buffer(n, n, 0.5f, "B"));
    Buffer<float> A = c.inputs[0], B = c.inputs[1];
    Var x("x"), y("y");
    RDom k(0, n, "k");
    Func acc("acc"), out("matmul");
    acc(x, y) = 0.0f;
    acc(x, y) += A(k, y) * B(x, k);
    out(x, y) = acc(x, y);
    c.out = out;
    c.sizes = {n, n};
    return {acc, out, k};
}

/** The blur with its horizontal pass staged in shared memory per block (asked for in memory
    `m`: with Register, each thread reads other threads' values, so it stays shared). */
inline GpuCase blur_shared(int w = 256, int h = 128, MemoryType m = MemoryType::GPUShared) {
    GpuCase c;
    c.name = "blur_shared";
    auto [bx, by] = blur_algorithm(c, w, h);
    Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
    by.gpu_tile(x, y, xo, yo, xi, yi, 32, 8);
    bx.compute_at(by, xo).store_in(m).gpu_threads(x, y);
    c.expect_shared = 32 * 10 * 4;
    c.expect_barrier = true;
    return c;
}

/** The same blur with 4 consecutive outputs per thread (16-byte stores; blur_x's 4 values of a
    thread also computed as one vector): 128x8 outputs per block of 32x10 threads. */
inline GpuCase blur_vectorized(int w = 256, int h = 128, int tile_h = 8) {
    GpuCase c;
    c.name = "blur_vectorized" + (tile_h == 8 ? std::string() : "_" + std::to_string(tile_h));
    auto [bx, by] = blur_algorithm(c, w, h);
    Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi"), xt("xt"), xv("xv"), yr("yr"), yt("yt");
    by.tile(x, y, xo, yo, xi, yi, 128, tile_h).split(xi, xt, xv, 4).vectorize(xv).gpu_blocks(xo, yo);
    bx.compute_at(by, xo).store_in(MemoryType::GPUShared).split(x, xt, xv, 4).vectorize(xv);
    if (tile_h == 8) {
        by.gpu_threads(xt, yi);
        bx.gpu_threads(xt, y);
    } else {
        // Taller tiles (fewer halo rows re-read): 32x8 threads, each thread every 8th row.
        by.split(yi, yr, yt, 8).reorder(xv, yr, xt, yt, xo, yo).unroll(yr).gpu_threads(xt, yt);
        bx.split(y, yr, yt, 8).reorder(xv, yr, xt, yt).unroll(yr).gpu_threads(xt, yt);
    }
    c.expect_shared = 128 * (tile_h + 2) * 4;
    c.expect_barrier = true;
    return c;
}

/** C = A * B with an r x r register-blocked accumulator per thread (t x t threads). */
inline GpuCase matmul_regs(int n = 128, int r = 4, int t = 16) {
    GpuCase c;
    c.name = "matmul_regs";
    auto [acc, out, k] = matmul_algorithm(c, n);
    Var x("x"), y("y"), xo("xo"), yo("yo"), xr("xr"), yr("yr"), bx("bx"), by("by"), tx("tx"), ty("ty");
    out.split(x, xo, xr, r).split(y, yo, yr, r).reorder(xr, yr, xo, yo);
    out.gpu_tile(xo, yo, bx, by, tx, ty, t, t);
    out.unroll(xr).unroll(yr);
    acc.compute_at(out, tx).store_in(MemoryType::Register);
    acc.unroll(x).unroll(y);
    acc.update().reorder(x, y, k).unroll(x).unroll(y);
    c.expect_shared = 0;
    return c;
}

/** C = A * B as Halide's expert CUDA matmul schedules it: 64x16 outputs per block, a 4x8
    register tile per thread (32 threads), and at each step of k the thread's operands loaded
    into registers first (8 steps of k at a time): B's 4 consecutive values as one 16-byte load,
    A's 8 values of k for each of the 8 rows as two. */
inline GpuCase matmul_vectorized(int n = 128) {
    GpuCase c;
    c.name = "matmul_vectorized";
    auto [acc, out, k] = matmul_algorithm(c, n);
    Buffer<float> A = c.inputs[0], B = c.inputs[1];
    Var x("x"), y("y"), xi("xi"), yi("yi"), xii("xii"), yii("yii");
    out.tile(x, y, xi, yi, 64, 16).tile(xi, yi, xii, yii, 4, 8).gpu_blocks(x, y).gpu_threads(xi, yi).unroll(xii).unroll(yii);
    acc.compute_at(out, xi).store_in(MemoryType::Register).vectorize(x).unroll(y);
    acc.update().reorder(x, y, k).vectorize(x).unroll(y).unroll(k, 8);
    Func Bk = B.in(), Ak = A.in();
    Bk.compute_at(acc, k).vectorize(Bk.args()[0]).unroll(Bk.args()[1]);
    Ak.compute_at(acc, k).vectorize(Ak.args()[0], 4).unroll(Ak.args()[0]).unroll(Ak.args()[1]);
    c.expect_shared = 0;
    return c;
}

/** C = A * B with tiles of A and B staged in shared memory at each step of 16 of k, loaded
    cooperatively by the block's 16x16 threads (B's as 16-byte vectors), each thread then
    accumulating its 4x4 outputs: barriers before each reload and before the reads. The
    accumulator is computed at the block level but stored in registers: each thread only
    touches its own 4x4 elements, so each keeps them in its own registers across the steps. */
inline GpuCase matmul_shared_staged(int n = 128, int tile = 64, int reg = 4, int kstep = 16) {
    GpuCase c;
    c.name = "matmul_shared_staged" + (tile == 64 ? std::string() : "_" + std::to_string(tile));
    auto [acc, out, k] = matmul_algorithm(c, n);
    Buffer<float> A = c.inputs[0], B = c.inputs[1];
    Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi"), tx("tx"), ty("ty"), xr("xr"), yr("yr");
    RVar ko("ko"), ki("ki");
    out.tile(x, y, xo, yo, xi, yi, tile, tile)
        .split(xi, tx, xr, reg)
        .split(yi, ty, yr, reg)
        .reorder(xr, yr, tx, ty, xo, yo)
        .gpu_blocks(xo, yo)
        .gpu_threads(tx, ty)
        .unroll(xr)
        .unroll(yr);
    acc.compute_at(out, xo)
        .store_in(MemoryType::Register)
        .split(x, tx, xr, reg)
        .split(y, ty, yr, reg)
        .reorder(xr, yr, tx, ty)
        .gpu_threads(tx, ty)
        .unroll(xr)
        .unroll(yr);
    acc.update()
        .split(k, ko, ki, kstep)
        .split(x, tx, xr, reg)
        .split(y, ty, yr, reg)
        .reorder(xr, yr, ki, tx, ty, ko)
        .gpu_threads(tx, ty)
        .unroll(xr)
        .unroll(yr);
    // The tiles are loaded by threads laid out as the block's (tile / reg on a side), each
    // loading tile * kstep / that many elements; B's as 16-byte vectors.
    const int side = tile / reg, per = tile / side;
    Func Bs = B.in(), As = A.in();
    Var bt("bt"), bv("bv"), bvo("bvo"), bvi("bvi"), at("at"), av("av");
    Bs.compute_at(acc, ko).store_in(MemoryType::GPUShared).split(Bs.args()[0], bt, bv, per);
    if (per > 4) Bs.split(bv, bvo, bvi, 4).vectorize(bvi).unroll(bvo);
    else Bs.vectorize(bv);
    Bs.gpu_threads(bt, Bs.args()[1]);
    As.compute_at(acc, ko).store_in(MemoryType::GPUShared).split(As.args()[1], at, av, per).unroll(av).gpu_threads(As.args()[0], at);
    c.expect_shared = 2 * tile * kstep * 4;  // the accumulator is in registers
    c.expect_barrier = true;
    return c;
}

/** C = A * B in 128x128 tiles per block of 16x16 threads, 8x8 outputs per thread, with the
    operand tiles staged in shared memory at each step of `kstep` of k laid out so that every
    read of them is a 16-byte vector without bank conflicts (as hand-written SGEMMs do):
    - each thread owns 2x2 groups of 4x4 outputs, 64 apart (x = xo*128 + xh*64 + tx*4 + xl):
      a quarter-warp's 16-byte reads of a row of B's tile are 128 consecutive bytes;
    - A's tile is stored transposed (reorder_storage: y innermost), so a thread's 4 rows of
      A at one k are 16 consecutive bytes too;
    - both tiles are loaded by all 256 threads with 16-byte global loads (B's stored as
      vectors, A's transposed on the way);
    - the k steps inside a tile are unrolled, and the outputs are written as 16-byte vectors.
    With prefetch, each thread loads its part of the next step's tiles into registers
    (load_ahead) while the current step's are read. With double_buffer, the steps go in
    unrolled pairs, each with its own copy of the tiles in shared memory: one barrier per step
    instead of two; with both, the registers hold a pair of steps' tiles (loaded while the
    second step of the pair is computed). */
inline GpuCase matmul_shared_vec(int n = 256, int kstep = 8, bool prefetch = false, bool double_buffer = false) {
    GpuCase c;
    c.name = "matmul_shared_vec" + (kstep == 8 ? std::string() : "_k" + std::to_string(kstep)) + (prefetch ? "_prefetch" : "") +
             (double_buffer ? "_double" : "");
    auto [acc, out, k] = matmul_algorithm(c, n);
    Buffer<float> A = c.inputs[0], B = c.inputs[1];
    Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi"), xh("xh"), yh("yh"), xr("xr"), yr("yr");
    Var tx("tx"), ty("ty"), xl("xl"), yl("yl");
    RVar ko("ko"), ki("ki"), koo("koo"), koi("koi");
    // x = xh*64 + tx*4 + xl within a tile, y likewise.
    auto thread_split = [&](auto &s, const auto &vx, const auto &vy) -> decltype(s) & {
        return s.split(vx, xh, xr, 64).split(xr, tx, xl, 4).split(vy, yh, yr, 64).split(yr, ty, yl, 4);
    };
    out.tile(x, y, xo, yo, xi, yi, 128, 128);
    thread_split(out, xi, yi)
        .reorder(xl, yl, xh, yh, tx, ty, xo, yo)
        .gpu_blocks(xo, yo)
        .gpu_threads(tx, ty)
        .vectorize(xl)
        .unroll(yl)
        .unroll(xh)
        .unroll(yh);
    acc.compute_at(out, xo).store_in(MemoryType::Register);
    thread_split(acc, x, y).reorder(xl, yl, xh, yh, tx, ty).gpu_threads(tx, ty).unroll(xl).unroll(yl).unroll(xh).unroll(yh);
    Stage upd = acc.update();
    upd.split(k, ko, ki, kstep);
    thread_split(upd, x, y)
        .reorder(xl, yl, xh, yh, ki, tx, ty, ko)
        .gpu_threads(tx, ty)
        .unroll(xl)
        .unroll(yl)
        .unroll(xh)
        .unroll(yh)
        .unroll(ki);
    RVar at = ko, ahead = ko;  // the loops the tiles (and their next values in registers) are computed at
    if (double_buffer) {
        upd.split(ko, koo, koi, 2).unroll(koi);
        at = koi;
        ahead = koo;
    }
    // The tiles' loads: 4 consecutive values (16 bytes) per item, items spread over the 256
    // threads (the fastest-varying one along x for B, along k for A: coalesced reads).
    Var v("v"), q("q"), t("t"), tq("tq"), tr("tr"), lx("lx"), ly("ly"), kq("kq"), kr("kr");
    auto load_split = [&](Func &f, bool split_k = false) -> Func & {
        // split_k (A's registers for two steps): the steps' halves outermost, each thread
        // holding the items it copies into the shared tile at either step.
        if (split_k) f.split(f.args()[0], kq, kr, kstep).unroll(kq);
        return f.split(split_k ? kr : f.args()[0], q, v, 4)
            .vectorize(v)
            .fuse(q, f.args()[1], t)
            .split(t, tq, tr, 256)
            .split(tr, ly, lx, 16)
            .unroll(tq)
            .gpu_threads(lx, ly);
    };
    Func Bs, As;
    if (prefetch) {
        // Each thread loads its part of the next step's tiles into registers (Ar, Br) while
        // the current step's tiles are read: the global loads' latency is hidden by the
        // multiply-adds.
        Func Ar = A.in(), Br = B.in();
        As = Ar.in();
        Bs = Br.in();
        load_split(Ar.compute_at(acc, ahead).store_in(MemoryType::Register), double_buffer).load_ahead();
        load_split(Br.compute_at(acc, ahead).store_in(MemoryType::Register)).load_ahead();
    } else {
        As = A.in();
        Bs = B.in();
    }
    load_split(Bs.compute_at(acc, at).store_in(MemoryType::GPUShared));
    load_split(As.compute_at(acc, at).store_in(MemoryType::GPUShared).reorder_storage(As.args()[1], As.args()[0]));
    c.expect_shared = 2 * 128 * kstep * 4 * (at.name() == ko.name() ? 1 : 2);  // double-buffered: twice
    c.expect_barrier = true;
    return c;
}

/** An output with an update stage: each stage is its own kernel (blocks of `threads`). */
inline GpuCase update_stage(int n = 1000, int threads = 128) {
    GpuCase c;
    c.name = "update_stage";
    c.inputs.push_back(ramp_buffer(n, 1));
    Buffer<float> in = c.inputs[0];
    Var x("x"), xo("xo"), xi("xi");
    Func f("with_update");
    f(x) = in(x, 0) * 3.0f;
    f(x) = f(x) + 1.0f;
    f.gpu_tile(x, xo, xi, threads);
    f.update().gpu_tile(x, xo, xi, threads);
    c.out = f;
    c.sizes = {n};
    c.expect_shared = 0;
    return c;
}

/** A chain of elementwise operations (vectorized by 4 inside each thread; with rows > 1 each
    thread does that many rows, its loads all in flight at once); blocks of `threads` along x. */
inline GpuCase elementwise_chain(int w = 1024, int h = 64, int rows = 1, int threads = 128) {
    GpuCase c;
    c.name = "elementwise_chain" + (rows == 1 ? std::string() : "_rows" + std::to_string(rows));
    c.inputs.push_back(ramp_buffer(w, h));
    Buffer<float> in = c.inputs[0];
    Var x("x"), y("y"), xa("xa"), xo("xo"), xi("xi"), xv("xv");
    Func f("elementwise");
    Expr v = in(x, y);
    f(x, y) = sqrt(v * v + 1.0f) * 0.5f - min(v, 0.25f) + max(v * 3.0f, -1.0f);
    if (rows == 1) {
        f.split(x, xa, xv, 4).vectorize(xv).gpu_tile(xa, xo, xi, threads).gpu_blocks(y);
    } else {
        Var yo("yo"), yi("yi");
        f.split(x, xa, xv, 4)
            .vectorize(xv)
            .split(xa, xo, xi, threads)
            .split(y, yo, yi, rows)
            .reorder(xv, yi, xi, xo, yo)
            .unroll(yi)
            .gpu_threads(xi)
            .gpu_blocks(xo, yo);
    }
    c.out = f;
    c.sizes = {w, h};
    c.expect_shared = 0;
    return c;
}

/** Row sums reduced across the threads of a block: rfactor splits the reduction into
    `threads` partial sums, one per thread, staged in shared memory; one thread adds them after
    the barrier. One block per row. */
inline GpuCase row_sum_rfactor(int w = 1000, int h = 37, int threads = 128, bool max_op = false, int per_thread = 1) {
    GpuCase c;
    c.name = max_op ? "row_max_rfactor" : "row_sum_rfactor";
    c.inputs.push_back(ramp_buffer(w, h));
    Buffer<float> in = c.inputs[0];
    Var y("y"), u("u");
    RDom r(0, w, "r");
    RVar ro("ro"), ri("ri");
    Func out(max_op ? "row_max" : "row_sum");
    if (max_op) {
        out(y) = -1e30f;
        out(y) = max(out(y), in(r, y) * cast<float>(1 + (r + y) % 7));
    } else {
        out(y) = 0.0f;
        out(y) += in(r, y);
    }
    out.gpu_blocks(y);
    Func partial = out.update().split(r, ro, ri, threads).rfactor(ri, u);
    out.update().gpu_blocks(y);
    if (per_thread > 1) {  // each thread computes per_thread of the partial results
        Var uo("uo"), ui("ui");
        partial.compute_at(out, y).split(u, uo, ui, per_thread).gpu_threads(uo);
        partial.update().split(u, uo, ui, per_thread).gpu_threads(uo);
    } else {
        partial.compute_at(out, y).gpu_threads(u);
        partial.update().gpu_threads(u);
    }
    c.out = out;
    c.sizes = {h};
    c.expect_shared = threads * 4;
    c.expect_barrier = true;
    return c;
}

/** A 5-wide horizontal box sum written with the inline reduction sum(): each thread of the
    gpu_tile computes its own sum (the reduction runs inside the kernel, per thread). */
inline GpuCase box_sum(int w = 200, int h = 50) {
    GpuCase c;
    c.name = "box_sum";
    c.inputs.push_back(ramp_buffer(w + 4, h));
    Buffer<float> in = c.inputs[0];
    Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
    RDom r(0, 5, "r");
    Func f("box_sum");
    f(x, y) = sum(in(x + r, y));
    f.gpu_tile(x, y, xo, yo, xi, yi, 32, 4);
    c.out = f;
    c.sizes = {w, h};
    c.expect_shared = 0;
    return c;
}

/** The sum of a whole image into a scalar: rfactor over 16x8 tiles gives 16x8 partial sums
    (each a thread of one block, adding up its elements of every tile), then one thread adds
    those up (gpu_single_thread: the scalar's stages run on the device, not on the host). */
inline GpuCase total_sum(int w = 300, int h = 70) {
    GpuCase c;
    c.name = "total_sum";
    c.inputs.push_back(ramp_buffer(w, h));
    Buffer<float> in = c.inputs[0];
    Var u("u"), v("v");
    RDom r(0, w, 0, h, "r");
    RVar rxo("rxo"), rxi("rxi"), ryo("ryo"), ryi("ryi");
    Func tot("total_sum");
    tot() = 0.0f;
    tot() += in(r.x, r.y);
    Func part = tot.update().split(r.x, rxo, rxi, 16).split(r.y, ryo, ryi, 8).rfactor({{rxi, u}, {ryi, v}});
    Var vo("vo"), vi("vi");
    part.compute_root().split(v, vo, vi, 8).gpu_threads(u, vi).gpu_blocks(vo);
    part.update().split(v, vo, vi, 8).gpu_threads(u, vi).gpu_blocks(vo);
    tot.gpu_single_thread();
    tot.update().gpu_single_thread();
    c.out = tot;
    c.sizes = {};
    c.expect_shared = 0;
    return c;
}

/** A table computed per block (asked for in registers) and read at data-dependent places (a
    gather through an index image): threads read each other's elements, so it stays in shared
    memory, behind a barrier. */
inline GpuCase lut_gather(int w = 256, int h = 64) {
    GpuCase c;
    c.name = "lut_gather";
    c.inputs.push_back(ramp_buffer(w, h));
    Buffer<float> idx({w, h}, "idx");
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) idx(x, y) = (float)((x * 37 + y * 11) % 64);
    c.inputs.push_back(idx);
    Buffer<float> in = c.inputs[0];
    Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
    Func lut("lut"), out("gathered");
    lut(x, y) = in(x, y) * 2.0f;
    out(x, y) = lut(clamp(cast<int>(idx(x, y)), 0, 63), y);
    out.gpu_tile(x, y, xo, yo, xi, yi, 64, 4);
    lut.compute_at(out, xo).store_in(MemoryType::Register).gpu_threads(x, y);
    c.out = out;
    c.sizes = {w, h};
    c.expect_shared = 64 * 4 * 4;
    c.expect_barrier = true;
    return c;
}

/** The bin of a ramp_buffer value (in [-0.25, 0.75)) among `bins`. */
inline Expr bin_of(Expr v, int bins) { return clamp(cast<int>((v + 0.25f) * (float)bins), 0, bins - 1); }

/** A histogram of an image: the update runs over the image (the RDom) on GPU blocks and
    threads, made atomic(): each thread adds its 1 with atomicAdd to global memory. */
inline GpuCase histogram_atomic(int w = 300, int h = 70, int bins = 64, int tx = 32, int ty = 8) {
    GpuCase c = case_with_ramp("histogram_atomic", w, h);
    Buffer<float> in = c.inputs[0];
    Var x("x"), xo("xo"), xi("xi");
    RDom r(0, w, 0, h, "r");
    RVar rxo("rxo"), ryo("ryo"), rxi("rxi"), ryi("ryi");
    Func hist("histogram");
    hist(x) = 0.0f;
    hist(bin_of(in(r.x, r.y), bins)) += 1.0f;
    hist.gpu_tile(x, xo, xi, 32);
    hist.update().atomic().gpu_tile(r.x, r.y, rxo, ryo, rxi, ryi, tx, ty);
    c.out = hist;
    c.sizes = {bins};
    c.expect_shared = 0;
    return c;
}

/** The largest value per bin (a scatter-max): float max has no atomic instruction, so each
    thread's update is a compare-and-swap loop. */
inline GpuCase scatter_max_atomic(int w = 256, int h = 40, int bins = 16) {
    GpuCase c = case_with_ramp("scatter_max_atomic", w, h);
    Buffer<float> in = c.inputs[0];
    Var x("x"), xo("xo"), xi("xi");
    RDom r(0, w, 0, h, "r");
    Func m("scatter_max");
    m(x) = -1e30f;
    m((r.x * 5 + r.y) % bins) = max(m((r.x * 5 + r.y) % bins), in(r.x, r.y) * cast<float>(1 + r.y % 3));
    m.gpu_tile(x, xo, xi, 16);
    m.update().atomic().gpu_blocks(r.y).gpu_threads(r.x);
    c.out = m;
    c.sizes = {bins};
    c.expect_shared = 0;
    return c;
}

/** A histogram per row in shared memory: one block per row; its threads clear the bins, add
    the row's values with atomicAdd on shared memory (threads over the RVar), and copy the bins
    out, with barriers between the three. */
inline GpuCase row_histogram_shared(int w = 500, int h = 24, int bins = 32, int threads = 128) {
    GpuCase c = case_with_ramp("row_histogram_shared", w, h);
    Buffer<float> in = c.inputs[0];
    Var b("b"), y("y");
    RDom r(0, w, "r");
    RVar ro("ro"), ri("ri");
    Func hist("row_hist"), out("row_histogram");
    hist(b, y) = 0.0f;
    hist(bin_of(in(r, y), bins), y) += 1.0f;
    out(b, y) = hist(b, y);
    out.gpu_blocks(y).gpu_threads(b);
    hist.compute_at(out, y).store_in(MemoryType::GPUShared).gpu_threads(b);
    hist.update().atomic().split(r, ro, ri, threads).gpu_threads(ri);
    c.out = out;
    c.sizes = {bins, h};
    c.expect_shared = bins * 4;
    c.expect_barrier = true;
    return c;
}

/** Stages with no GPU schedule in a CUDA pipeline run on the host (host stages): `pre` on
    the CPU (rows in parallel, vectorized), `mid` on the device from it, the output's pure
    stage on the device from `mid` and its update (a scan along x, serial) on the CPU after
    it: copies host to device, then device to host, within one call. */
inline GpuCase host_stages(int w = 200, int h = 64) {
    GpuCase c = case_with_ramp("host_stages", w + 1, h);
    Buffer<float> in = c.inputs[0];
    Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
    Func pre("hs_pre"), mid("hs_mid"), out("host_stages");
    pre(x, y) = in(x, y) * 2.0f + 1.0f;
    mid(x, y) = pre(x, y) + pre(x + 1, y) * 0.5f;
    out(x, y) = mid(x, y) - 3.0f;
    RDom r(1, w - 1, "r");
    out(r, y) = out(r, y) + out(r - 1, y) * 0.5f;
    pre.compute_root().parallel(y).vectorize(x, 8);
    mid.compute_root().gpu_tile(x, y, xo, yo, xi, yi, 32, 4);
    out.gpu_tile(x, y, xo, yo, xi, yi, 32, 4);  // its update has no GPU schedule
    c.out = out;
    c.sizes = {w, h};
    c.expect_shared = 0;
    return c;
}

/** C(x, y) = sum over k of float(A(k, y)) * float(B(x, k)) on tensor cores (Stage::gpu_mma),
    A and B 16-bit floats (T: float16_t or bfloat16_t), n x n (a multiple of the tiles). Each
    block computes a (8 xt wx) x (16 yt wy) tile of C with wx * wy warps, each warp xt x yt
    tiles of 16 x 8 (8 columns, 16 rows): a thread (lane l) holds columns 2(l%4) + {0, 1} and
    rows l/4 + {0, 8} of each, the accumulators in registers. staged: steps of 32 of k, the
    A and B tiles of each step copied to shared memory by the block's threads first. */
template <typename T>
Func matmul_mma(Buffer<T> A, Buffer<T> B, int n, bool staged, int xt = 4, int yt = 4, int wx = 4, int wy = 2) {
    Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi"), xw("xw"), xr("xr"), xti("xti"), xs("xs"), xq("xq"),
        xv("xv"), yw("yw"), yr("yr"), yti("yti"), ys("ys"), yh("yh"), yq("yq"), w("w");
    RDom k(0, n, "k");
    RVar ko("ko"), kr("kr"), kt("kt"), ki("ki");
    Func acc("mma_acc"), out("mma_out");
    acc(x, y) = 0.0f;
    acc(x, y) += cast<float>(A(k, y)) * cast<float>(B(x, k));
    out(x, y) = acc(x, y);
    const int TX = 8 * xt * wx, TY = 16 * yt * wy, nw = wx * wy, KS = staged ? 32 : 16;
    // x = xw 8xt + xti 8 + xq 2 + xv, y = yw 16yt + yti 16 + yh 8 + yq (within a block's tile);
    // the warp w = xw + wx yw.
    auto layout = [&](auto &s, const Var &X, const Var &Y) -> decltype(s) & {
        return s.split(X, xw, xr, 8 * xt).split(xr, xti, xs, 8).split(xs, xq, xv, 2)
            .split(Y, yw, yr, 16 * yt).split(yr, yti, ys, 16).split(ys, yh, yq, 8)
            .fuse(xw, yw, w);
    };
    out.tile(x, y, xo, yo, xi, yi, TX, TY).gpu_blocks(xo, yo);
    layout(out, xi, yi).reorder(xv, yh, xti, yti, xq, yq, w, xo, yo).gpu_threads(xq, yq, w).unroll(xv).unroll(yh).unroll(xti).unroll(yti);
    acc.compute_at(out, xo).store_in(MemoryType::Register);
    layout(acc, x, y).reorder(xv, yh, xti, yti, xq, yq, w).gpu_threads(xq, yq, w).unroll(xv).unroll(yh).unroll(xti).unroll(yti);
    Stage u = acc.update();
    layout(u, x, y).split(k, ko, kr, KS).split(kr, kt, ki, 16)
        .reorder(ki, xv, yh, xti, yti, kt, xq, yq, w, ko)
        .gpu_threads(xq, yq, w).unroll(xti).unroll(yti).unroll(kt)
        .gpu_mma(yh, xv, ki);
    if (staged) {
        // Each tile's elements spread over the block's threads laid out as the update's (4, 8, nw).
        Var t("t"), tq("tq"), tr("tr"), tw("tw"), tl("tl"), lx("lx"), ly("ly");
        auto spread = [&](Func f, const Var &inner, const Var &outer) {
            f.compute_at(acc, ko).store_in(MemoryType::GPUShared);
            f.fuse(inner, outer, t).split(t, tq, tr, 32 * nw).split(tr, tw, tl, 32).split(tl, ly, lx, 4)
                .reorder(lx, ly, tw, tq).gpu_threads(lx, ly, tw).unroll(tq);
        };
        Func As = A.in(acc), Bs = B.in(acc);
        spread(As, As.args()[0], As.args()[1]);
        spread(Bs, Bs.args()[0], Bs.args()[1]);
    }
    return out;
}


inline std::vector<std::function<GpuCase()>> all_cases() {
    return {[] { return pointwise(); },      [] { return blur_shared(); },       [] { return matmul_regs(); },
            [] { return update_stage(); },   [] { return elementwise_chain(); }, [] { return row_sum_rfactor(); },
            [] { return matmul_vectorized(); }, [] { return blur_vectorized(); },
            [] { return matmul_shared_staged(); },  [] { return matmul_shared_staged(256, 128, 8, 8); },
            [] { return matmul_shared_vec(); },     [] { return matmul_shared_vec(256, 16); },
            [] { return matmul_shared_vec(256, 8, true); }, [] { return matmul_shared_vec(256, 16, true); },
            [] { return elementwise_chain(1024, 64, 4); }, [] { return blur_vectorized(256, 128, 32); },
            [] { return box_sum(); },               [] { return total_sum(); },
            [] { return lut_gather(); },            [] { return matmul_shared_vec(256, 8, false, true); },
            [] { return histogram_atomic(); },      [] { return scatter_max_atomic(); },
            [] { return row_histogram_shared(); },  [] { return matmul_shared_vec(256, 8, true, true); },
            [] { return math_intrinsics(); },       [] { return cpu_hints(); },
            [] { return newton_steps(); },          [] { return host_stages(); }};
}

}  // namespace weft_gpu_test
