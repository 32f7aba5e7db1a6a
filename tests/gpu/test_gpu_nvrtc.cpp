// GPU pipelines lowered for CUDA, turned into CUDA C and compiled by NVRTC for sm_90, with
// no GPU needed. Suites start with "GPUNvrtc" (CTest label nvrtc).
#include <gtest/gtest.h>
#include "cuda/CudaPipeline.h"
#include "gpu/gpu_testing.h"
#include "lang/atomic_cases.h"

using namespace weft;
using namespace weft::internal;
using namespace weft_gpu_test;

namespace {

bool have_nvrtc(std::string *why) { return nvrtc_available(why); }

#define REQUIRE_NVRTC()                                                             \
    do {                                                                            \
        std::string why;                                                            \
        if (!have_nvrtc(&why)) GTEST_SKIP() << "NVRTC is not available: " << why;   \
    } while (0)

void check_built(const GpuCase &c, const Built &b, size_t kernels) {
    SCOPED_TRACE(b.prog.source);
    ASSERT_EQ(b.prog.kernels.size(), kernels);
    EXPECT_FALSE(b.out.binary.empty());
    EXPECT_FALSE(b.out.is_ptx);
    int64_t shared = 0;
    for (auto &k : b.prog.kernels) {
        auto it = b.out.usage.find(k.name);
        ASSERT_NE(it, b.out.usage.end()) << "no ptxas report for " << k.name << "; log:\n" << b.out.log;
        const KernelUsage &u = it->second;
        EXPECT_GT(u.registers, 0) << k.name;
        EXPECT_EQ(u.spill_stores, 0) << k.name;
        EXPECT_EQ(u.spill_loads, 0) << k.name;
        EXPECT_EQ(u.shared_bytes, k.shared_bytes) << k.name;
        EXPECT_LE((int64_t)u.registers * k.block[0] * k.block[1] * k.block[2], 65536);
        shared += u.shared_bytes;
    }
    if (c.expect_shared >= 0) EXPECT_EQ(shared, c.expect_shared);
    bool barrier = b.prog.source.find("__syncthreads()") != std::string::npos;
    if (c.expect_barrier) EXPECT_TRUE(barrier);
    check_kernel_resources(b.prog, b.out);  // within sm_90's limits: no throw
}

/** c compiled once, checked as check_built() says, and handed back for the test's own checks. */
Built checked(const GpuCase &c, size_t kernels) {
    Built b = build(c);
    check_built(c, b, kernels);
    return b;
}
void check_case(const GpuCase &c, size_t kernels) { checked(c, kernels); }

std::string error_of(const std::function<void()> &f) {
    try {
        f();
    } catch (Error &e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(GPUNvrtc, Pointwise) {
    REQUIRE_NVRTC();
    GpuCase c = pointwise();
    Built b = checked(c, 1);
    EXPECT_EQ(b.prog.kernels[0].block[0], 32);
    EXPECT_EQ(b.prog.kernels[0].block[1], 8);
}

TEST(GPUNvrtc, BlurStagedInSharedMemoryHasBarrier) {
    REQUIRE_NVRTC();
    GpuCase c = blur_shared();
    Built b = checked(c, 1);
    EXPECT_NE(b.prog.source.find("__shared__"), std::string::npos);
    // The producer's thread nest (32x10) and the consumer's (32x8) share one block.
    EXPECT_EQ(b.prog.kernels[0].block[0], 32);
    EXPECT_EQ(b.prog.kernels[0].block[1], 10);
}

TEST(GPUNvrtc, BlurVectorizedStoresFloat4) {
    REQUIRE_NVRTC();
    GpuCase c = blur_vectorized();
    Built b = checked(c, 1);
    EXPECT_EQ(b.prog.kernels[0].block[0], 32);
    EXPECT_EQ(b.prog.kernels[0].block[1], 10);
    EXPECT_NE(b.prog.source.find("*reinterpret_cast<float4 *>(&w_blur_y["), std::string::npos) << b.prog.source;
}

TEST(GPUNvrtc, MatmulRegisterBlocked) {
    REQUIRE_NVRTC();
    GpuCase c = matmul_regs();
    Built b = checked(c, 1);
    EXPECT_EQ(b.prog.kernels[0].block[0] * b.prog.kernels[0].block[1], 256);
    EXPECT_EQ(b.prog.source.find("__syncthreads()"), std::string::npos);
}

TEST(GPUNvrtc, UpdateStageIsTwoKernels) {
    REQUIRE_NVRTC();
    check_case(update_stage(), 2);
}

TEST(GPUNvrtc, ElementwiseVectorized) {
    REQUIRE_NVRTC();
    GpuCase c = elementwise_chain();
    Built b = checked(c, 1);
    EXPECT_NE(b.prog.source.find("float4"), std::string::npos) << b.prog.source;
}

TEST(GPUNvrtc, MatmulOperandsStagedInRegistersWithVectorLoads) {
    REQUIRE_NVRTC();
    GpuCase c = matmul_vectorized();
    Built b = checked(c, 1);  // no spills: accumulators and staged operands fit in registers
    EXPECT_EQ(b.prog.kernels[0].block[0] * b.prog.kernels[0].block[1], 32);
    size_t vec_loads = 0;
    const std::string load = "reinterpret_cast<const float4 *>";
    for (size_t p = b.prog.source.find(load); p != std::string::npos; p = b.prog.source.find(load, p + 1)) vec_loads++;
    EXPECT_EQ(vec_loads, 8u * 2 + 8) << "per 8 steps of k: 2 x 8 loads of A, 8 of B";
}

// Tiles staged in shared memory inside a block-level loop: a barrier before each reload (the
// previous step's tiles are read until then) and one before the reads.
TEST(GPUNvrtc, MatmulStagedInSharedMemoryHasLoopBarriers) {
    REQUIRE_NVRTC();
    check_case(matmul_shared_staged(256, 128, 8, 8), 1);  // 8x8 accumulators: no spills either
    GpuCase c = matmul_shared_staged();
    Built b = checked(c, 1);
    const std::string &src = b.prog.source;
    size_t loop = src.find("for (i32 w_acc_s1_ko");
    ASSERT_NE(loop, std::string::npos) << src;
    size_t first = src.find("__syncthreads()", loop), load = src.find("w_A_in[", loop);
    EXPECT_LT(first, load) << "no barrier before the tiles are reloaded:\n" << src;
}

size_t count_of(const std::string &text, const std::string &what) {
    size_t n = 0;
    for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) n++;
    return n;
}

// Staged tiles laid out for 16-byte reads: each thread's 2x2 groups of 4x4 outputs 64 apart,
// A's tile transposed. Per step of k (unrolled 8 or 16 in a tile) a thread reads its 8 values
// of B and of A as 4 vectors from shared memory, none as scalars; the accumulator is 64
// registers (its elements numbered densely), outputs are stored as vectors, the tiles loaded
// as vectors. With load_ahead, the next tiles' loads (into registers) are issued inside the
// loop between its two barriers, before the multiply-adds, and the first ones before the loop.
TEST(GPUNvrtc, MatmulStagedTilesReadAsVectors) {
    REQUIRE_NVRTC();
    for (auto [kstep, ahead] : {std::pair{8, false}, {16, false}, {8, true}, {16, true}}) {
        GpuCase c = matmul_shared_vec(256, kstep, ahead);
        SCOPED_TRACE(c.name);
        Built b = checked(c, 1);
        const std::string &src = b.prog.source;
        EXPECT_EQ(b.prog.kernels[0].block[0] * b.prog.kernels[0].block[1], 256);
        EXPECT_NE(src.find("float w_acc[64];"), std::string::npos) << src;
        auto it = b.out.usage.find(b.prog.kernels[0].name);
        ASSERT_NE(it, b.out.usage.end());
        EXPECT_EQ(it->second.stack_bytes, 0) << "the accumulator went to local memory";
        EXPECT_EQ(count_of(src, "__syncthreads()"), 2u) << "one barrier before the reload, one before the reads:\n" << src;
        NvrtcOutput ptx = nvrtc_compile(src, "sm_90", true);
        ASSERT_TRUE(ptx.is_ptx);
        EXPECT_EQ(count_of(ptx.binary, "ld.shared.v4.f32"), 4u * kstep) << ptx.binary;
        EXPECT_EQ(count_of(ptx.binary, "ld.shared.f32"), 0u) << ptx.binary;
        EXPECT_EQ(count_of(ptx.binary, "fma.rn.f32"), 64u * kstep);
        EXPECT_EQ(count_of(ptx.binary, "st.global.v4.f32"), 16u);
        EXPECT_EQ(count_of(ptx.binary, "ld.global.nc.v4.f32"), (ahead ? 2u : 1u) * 2 * kstep / 8);
        if (!ahead) continue;
        const std::string load_a = "*reinterpret_cast<const float4 *>(&w_A[";
        size_t loop = src.find("for (i32 w_acc_s1_ko");
        ASSERT_NE(loop, std::string::npos) << src;
        size_t first = src.find(load_a), next = src.find(load_a, loop);
        size_t b1 = src.find("__syncthreads()", loop), b2 = src.find("__syncthreads()", b1 + 1);
        EXPECT_LT(first, loop) << src;
        EXPECT_LT(b1, next) << src;
        EXPECT_LT(next, b2) << src;
        EXPECT_EQ(src.find("__shared__ __align__(16) float w_A_in["), std::string::npos) << "A_in is per thread:\n" << src;
    }
}

// store_in(Register) at the block level: the accumulator is kept per thread (each thread only
// touches its own elements), with constant indices; where threads read each other's elements
// (blur_x read at y - 1 and y + 1) it stays in shared memory, behind a barrier.
TEST(GPUNvrtc, BlockLevelRegisterStorageIsPerThreadWhenPrivate) {
    REQUIRE_NVRTC();
    Built b = build(matmul_shared_staged());
    const std::string &src = b.prog.source;
    EXPECT_EQ(src.find("__shared__ __align__(16) float w_acc"), std::string::npos) << src;
    // Each thread's 4x4 elements (x + 64 y of the block's tile) numbered densely: 16 registers
    // with constant indices (x + 4 y).
    EXPECT_NE(src.find("float w_acc[16];"), std::string::npos) << src;
    EXPECT_NE(src.find("w_acc[5] = "), std::string::npos) << src;
    auto it = b.out.usage.find(b.prog.kernels[0].name);
    ASSERT_NE(it, b.out.usage.end());
    EXPECT_EQ(it->second.stack_bytes, 0) << "the accumulator went to local memory";

    // The blur asking for registers: blur_x is read by other threads, so shared memory.
    check_case(blur_shared(256, 128, MemoryType::Register), 1);  // shared bytes and the barrier
    // A table read at data-dependent places (a gather): which thread reads what is not known
    // when compiling, so shared memory too (the check evaluates no loaded value).
    check_case(lut_gather(), 1);
}

// Steps of k in unrolled pairs, each staging its tiles in its own shared buffers (the second
// copy's allocations are renamed when unrolling): twice the shared memory, one barrier per
// step instead of two.
TEST(GPUNvrtc, DoubleBufferedTilesHaveTheirOwnStorage) {
    REQUIRE_NVRTC();
    GpuCase c = matmul_shared_vec(256, 8, false, true);
    Built b = checked(c, 1);  // 2 x (A's and B's 128 x 8 tiles)
    EXPECT_NE(b.prog.source.find("w_A_in_u1["), std::string::npos) << b.prog.source;
    EXPECT_NE(b.prog.source.find("w_B_in_u1["), std::string::npos);
    Built single = build(matmul_shared_vec(256, 8));
    auto count = [](const std::string &s) {
        size_t n = 0;
        for (size_t p = s.find("__syncthreads()"); p != std::string::npos; p = s.find("__syncthreads()", p + 1)) n++;
        return n;
    };
    // One step: a barrier before the tiles are written (the previous step's reads), one
    // before they are read. A pair: one before each copy's tiles are read; writing a copy
    // waits for the reads of the same copy a step earlier, behind the other copy's barrier.
    EXPECT_EQ(count(single.prog.source), 2u);
    EXPECT_EQ(count(b.prog.source), 2u) << b.prog.source;
}

// Both: the next pair of steps' tiles loaded into registers (load_ahead at the pair's loop)
// while the pair's second step is computed, each step with its own shared copy. Each thread
// copies into either step's tile only what it loaded itself, so A's and B's registers are
// per thread (8 values each, constant indices; A's threads' first elements are not linear in
// the thread index: the copies are indexed from the first write's place), one barrier per step.
TEST(GPUNvrtc, LoadAheadWithDoubleBuffering) {
    REQUIRE_NVRTC();
    GpuCase c = matmul_shared_vec(256, 8, true, true);
    Built b = checked(c, 1);
    const std::string &src = b.prog.source;
    EXPECT_NE(src.find("float w_A_in[8];"), std::string::npos) << src;
    EXPECT_NE(src.find("float w_B_in[8];"), std::string::npos) << src;
    EXPECT_EQ(src.find("__shared__ __align__(16) float w_A_in["), std::string::npos) << src;
    EXPECT_EQ(count_of(src, "__syncthreads()"), 2u) << "one per step:\n" << src;
    auto it = b.out.usage.find(b.prog.kernels[0].name);
    ASSERT_NE(it, b.out.usage.end());
    EXPECT_EQ(it->second.stack_bytes, 0) << "a register array went to local memory";
    NvrtcOutput ptx = nvrtc_compile(src, "sm_90", true);
    EXPECT_EQ(count_of(ptx.binary, "ld.global.nc.v4.f32"), 8u);  // before the loop, and in it (2 steps x A and B)
    EXPECT_EQ(count_of(ptx.binary, "fma.rn.f32"), 64u * 16);
}

// Kernels whose registers keep a second block of their threads off a multiprocessor, by a
// little, are compiled again for two blocks (__launch_bounds__(threads, 2)) where that spills
// nothing; others keep the first compile (launch bounds of the block's threads alone).
TEST(GPUNvrtc, RegistersCappedForTwoBlocksWhereItFits) {
    REQUIRE_NVRTC();
    for (GpuCase c : {matmul_shared_vec(256, 16, true), matmul_shared_vec(256, 8, true, true), matmul_shared_vec(256)}) {
        SCOPED_TRACE(c.name);
        Built b = build(c);
        const CudaKernel &k = b.prog.kernels[0];
        int threads = k.block[0] * k.block[1] * k.block[2];
        ASSERT_EQ(threads, 256);
        EXPECT_NE(b.prog.source.find("__launch_bounds__(WEFT_LAUNCH_BOUNDS_" + k.name + ")"), std::string::npos);
        NvrtcOutput plain = nvrtc_compile(b.prog.source, "sm_90");
        int first = plain.usage[k.name].registers;
        const KernelUsage &u = b.out.usage[k.name];
        EXPECT_EQ(plain.usage[k.name].min_blocks, 1);
        if (first > 128 && first <= 160) {  // one block of 256 threads per multiprocessor: capped
            EXPECT_EQ(u.min_blocks, 2) << first << " registers";
            EXPECT_LE(u.registers, 128);
            EXPECT_EQ(u.spill_stores + u.spill_loads, 0);
        } else {
            EXPECT_EQ(u.min_blocks, 1) << first << " registers";
            EXPECT_EQ(u.registers, first);
        }
    }
    // Multiprocessors with fewer registers than sm_90's (which ptxas sizes the cap for): with
    // 32768 two blocks would leave 64 per thread, too far below what the kernel uses to try;
    // with 49152, 96: tried, but ptxas' cap (128) does not make two blocks fit: not kept.
    Built b = build(matmul_shared_vec(256));
    const std::string &name = b.prog.kernels[0].name;
    int first = b.out.usage[name].registers;
    for (int regs : {32768, 49152}) {
        SmLimits sm;
        sm.regs = regs;
        const KernelUsage u = compile_kernels(b.prog, "sm_90", sm).usage[name];
        EXPECT_EQ(u.min_blocks, 1) << regs;
        EXPECT_EQ(u.registers, first) << regs;
    }
}

// Register tiles where the image is smaller than a block's tile or not a multiple of a step
// of k: the threads' elements at the edge are cut off by guards (not shifted inwards, which
// would have two threads compute the same elements), each thread still owns its elements (no
// shared memory for them), and the register arrays are sized for the largest step. Where a
// thread's array changes shape at the last step (its row length is the step's), its indices
// are not constants: it may be in local memory (correct, slower).
TEST(GPUNvrtc, RegisterTilesAtTheImageEdge) {
    REQUIRE_NVRTC();
    struct Want {
        GpuCase c;
        int64_t shared;    // the staged operand tiles only: the accumulator is in registers
        bool local_ok;     // an array that changes shape at the last step
    };
    std::vector<Want> cases;
    cases.push_back({matmul_shared_staged(40), 2 * 40 * 16 * 4, false});       // one block, 40 of 64
    cases.push_back({matmul_shared_vec(123), 2 * 123 * 8 * 4, false});          // one block, 123 of 128
    cases.push_back({matmul_vectorized(39), 0, true});                         // steps of 8 of k, last 7
    cases.push_back({matmul_shared_vec(200, 16, true), 2 * 128 * 16 * 4, true});  // load_ahead, last step 8
    for (auto &w : cases) {
        SCOPED_TRACE(w.c.name + " n=" + std::to_string(w.c.sizes[0]));
        Built b = build(w.c);
        ASSERT_EQ(b.prog.kernels.size(), 1u);
        auto it = b.out.usage.find(b.prog.kernels[0].name);
        ASSERT_NE(it, b.out.usage.end());
        EXPECT_EQ(it->second.shared_bytes, w.shared) << b.prog.source;
        EXPECT_EQ(b.prog.source.find("__shared__ __align__(16) float w_acc"), std::string::npos);
        if (!w.local_ok) EXPECT_EQ(it->second.stack_bytes, 0) << "a register array went to local memory";
        EXPECT_EQ(it->second.spill_stores, 0);
    }
}

// sum() in a GPU-scheduled Func: the reduction is computed by each thread, in the kernel
// (not on the host: the Func of the inline reduction goes at the innermost thread loop).
TEST(GPUNvrtc, InlineReductionInsideKernel) {
    REQUIRE_NVRTC();
    GpuCase c = box_sum();
    check_case(c, 1);
}

// A scalar result on the device: its stages are kernels of one thread (gpu_single_thread),
// after the partial sums' kernels; with a GPU loop in the same stage it is refused.
TEST(GPUNvrtc, SingleThreadKernelsForAScalar) {
    REQUIRE_NVRTC();
    GpuCase c = total_sum();
    Built b = checked(c, 4);  // partial sums: initial values, update; the scalar: initial value, update
    EXPECT_EQ(b.prog.kernels[2].block[0] * b.prog.kernels[2].block[1] * b.prog.kernels[2].block[2], 1);
    EXPECT_EQ(b.prog.kernels[3].block[0] * b.prog.kernels[3].block[1] * b.prog.kernels[3].block[2], 1);
    GpuCase bad = pointwise(64, 8);
    bad.out.gpu_single_thread();
    std::string e = error_of([&] { lower_case(bad); });
    EXPECT_NE(e.find("gpu_single_thread()"), std::string::npos) << e;
    EXPECT_NE(e.find("pointwise"), std::string::npos) << e;
}

// The partial sums are added up as a tree by the block's threads (64, 32, ..., 1 of them, a
// barrier between steps), not by one thread's loop over all 128; with 100 threads the first
// step combines the 36 past 64.
TEST(GPUNvrtc, ReductionAcrossThreadsWithRfactor) {
    REQUIRE_NVRTC();
    GpuCase c = row_sum_rfactor();
    Built b = checked(c, 2);  // the initial value, then the update with its partial sums
    EXPECT_EQ(b.prog.kernels[1].block[0], 128);
    size_t barriers = 0;
    for (size_t at = 0; (at = b.prog.source.find("__syncthreads()", at)) != std::string::npos; at++) barriers++;
    EXPECT_GE(barriers, 8u) << b.prog.source;  // after the partial sums, and after each of the 7 steps
    EXPECT_EQ(b.prog.source.find("for (i32 w_row_sum_s1_ri"), std::string::npos) << b.prog.source;
    Built odd = build(row_sum_rfactor(1000, 37, 100));
    EXPECT_NE(odd.prog.source.find("< 36"), std::string::npos) << odd.prog.source;
    // 128 partial sums computed by 32 threads (4 each): a tree would need 64 threads, more
    // than the block has, so one thread adds them up (the block stays at 32 threads).
    Built few = build(row_sum_rfactor(1000, 37, 128, false, 4));
    EXPECT_EQ(few.prog.kernels[1].block[0], 32);
    EXPECT_NE(few.prog.source.find("for (i32 w_row_sum_s1_ri"), std::string::npos) << few.prog.source;
}

// atomic() updates over RVars on GPU blocks and threads: atomicAdd on global memory, a
// compare-and-swap loop for a float max, atomicAdd on shared memory between barriers.
TEST(GPUNvrtc, AtomicUpdates) {
    REQUIRE_NVRTC();
    GpuCase h = histogram_atomic();
    check_case(h, 2);
    EXPECT_NE(build(h).prog.source.find("atomicAdd((float *)&"), std::string::npos);
    GpuCase m = scatter_max_atomic();
    check_case(m, 2);
    EXPECT_NE(build(m).prog.source.find("weft_atomic_cas(&"), std::string::npos);
    GpuCase s = row_histogram_shared();
    check_case(s, 1);
    Built b = build(s);
    EXPECT_NE(b.prog.source.find("atomicAdd((float *)&"), std::string::npos);
    size_t barriers = 0;
    for (size_t at = 0; (at = b.prog.source.find("__syncthreads()", at)) != std::string::npos; at++) barriers++;
    EXPECT_EQ(barriers, 2u) << b.prog.source;  // cleared -> added to (no barrier between atomic adds) -> read
    size_t loop = b.prog.source.find("for (i32 w_row_hist_s1_ro"), first = b.prog.source.find("__syncthreads()");
    EXPECT_LT(first, loop) << b.prog.source;  // the one before the loop, not at each iteration
}

// Every atomic form of tests/lang/atomic_cases.h compiles (the 1- and 2-byte ones through a
// compare-and-swap on their 4-byte word).
TEST(GPUNvrtc, AtomicUpdatesOfEachType) {
    REQUIRE_NVRTC();
    Buffer<int32_t> in = weft_test::atomic_input(64, 16);
    auto s = [](Func &f, Stage u, const RDom &r) {
        Var xo("xo"), xi("xi");
        f.gpu_tile(Var("x"), xo, xi, 16);
        u.gpu_blocks(r.y).gpu_threads(r.x);
    };
    for (auto &a : weft_test::atomic_cases(in, s)) {
        SCOPED_TRACE(a.name);
        GpuCase c;
        c.name = a.name;
        c.out = a.f;
        c.sizes = {10};
        c.expect_shared = 0;
        std::string src = checked(c, 2).prog.source;
        bool narrow = a.f.type().bits() < 32, cas = a.name == "max_f32" || a.name == "product_u32" || a.name == "double_plus_one";
        EXPECT_EQ(src.find("weft_atomic_cas_narrow(&") != std::string::npos, narrow) << src;
        EXPECT_EQ(src.find("weft_atomic_cas(&") != std::string::npos, cas) << src;
        if (!narrow && !cas) EXPECT_NE(src.find("(void)atomic"), std::string::npos) << src;
    }
}

// Every float math intrinsic compiles, and fast_exp / fast_log, whose results are built from
// bits (reinterpret: a union in the kernel), vectorized by 4.
TEST(GPUNvrtc, MathIntrinsicsAndReinterpret) {
    REQUIRE_NVRTC();
    GpuCase c = math_intrinsics();
    Built b = checked(c, 1);
    EXPECT_NE(b.prog.source.find("weft_reinterpret<float, i32>("), std::string::npos) << b.prog.source;
    EXPECT_NE(b.prog.source.find("weft_reinterpret<i32, float>("), std::string::npos) << b.prog.source;
}

// prefetch() and store_nontemporal() are CPU hints: nothing of them in the kernel.
TEST(GPUNvrtc, CpuHintsHaveNoEffectInKernels) {
    REQUIRE_NVRTC();
    GpuCase c = cpu_hints();
    Built b = checked(c, 1);
    EXPECT_EQ(b.prog.source.find("prefetch"), std::string::npos) << b.prog.source;
}

// A value whose tree is exponentially larger than its graph: one line per step in the kernel.
TEST(GPUNvrtc, SharedSubexpressionsOnce) {
    REQUIRE_NVRTC();
    GpuCase c = newton_steps();
    Built b = checked(c, 1);
    EXPECT_LT(b.prog.source.size(), 20000u) << b.prog.source;
}

// Stages with no GPU schedule stay on the host (host stages, compiled for the CPU): the
// kernels neither compute nor write what they compute, and the host code runs them in order
// around the launches.
TEST(GPUNvrtc, HostStagesStayOnTheHost) {
    REQUIRE_NVRTC();
    GpuCase c = host_stages();
    Built b = checked(c, 2);
    ASSERT_EQ(b.prog.stages.size(), 2u);
    auto writes = [](const CudaHostStage &st) {
        std::set<std::string> w;
        for (size_t i = 0, bi = 0; i < st.fn.args.size(); i++)
            if (st.fn.args[i].kind == LoweredArg::Buffer && st.written[bi++]) w.insert(st.fn.args[i].name);
        return w;
    };
    EXPECT_EQ(writes(b.prog.stages[0]), std::set<std::string>{"hs_pre"});
    EXPECT_EQ(writes(b.prog.stages[1]), std::set<std::string>{"host_stages"});
    for (auto &k : b.prog.kernels)
        for (auto &p : k.params) EXPECT_FALSE(p.written && p.name == "hs_pre") << k.name;
    std::string host = to_string(b.prog.host);
    size_t s0 = host.find("host_stage<int32>(0)"), l0 = host.find("gpu_launch<int32>(0)"), l1 = host.find("gpu_launch<int32>(1)"),
           s1 = host.find("host_stage<int32>(1)");
    ASSERT_NE(s1, std::string::npos) << host;
    EXPECT_TRUE(s0 < l0 && l0 < l1 && l1 < s1) << host;

    // Computed at a host loop around a kernel: one stage per iteration, before the launch.
    Buffer<float> in = ramp_buffer(100, 37);
    Var x("x"), y("y"), xo("xo"), yo("yo"), yi("yi"), xi("xi"), yio("yio"), yii("yii");
    Func a("a"), out("out");
    a(x, y) = in(x, y) * 2.0f;
    out(x, y) = a(x, y) + 1.0f;
    out.split(y, yo, yi, 8).gpu_tile(x, yi, xo, yio, xi, yii, 16, 4);
    a.compute_at(out, yo);
    GpuCase at{"compute_at_host_loop", out, {100, 37}, {in}};
    Built ba = checked(at, 1);
    ASSERT_EQ(ba.prog.stages.size(), 1u);
    std::string h = to_string(ba.prog.host);
    size_t loop = h.find("out.s0.yo");
    EXPECT_TRUE(loop < h.find("host_stage<int32>(0)") && h.find("host_stage<int32>(0)") < h.find("gpu_launch<int32>(0)")) << h;
}

TEST(GPUNvrtc, CompileErrorCarriesLogAndLine) {
    REQUIRE_NVRTC();
    std::string e = error_of([] { nvrtc_compile("extern \"C\" __global__ void k() {\n  int x = undefined_name;\n}\n", "sm_90"); });
    EXPECT_NE(e.find("NVRTC"), std::string::npos) << e;
    EXPECT_NE(e.find("undefined_name"), std::string::npos) << e;
    EXPECT_NE(e.find("line 2"), std::string::npos) << e;
}

TEST(GPUNvrtc, PtxFallbackCompiles) {
    REQUIRE_NVRTC();
    GpuCase c = pointwise();
    LoweredFunc lf = lower_case(c);
    CudaProgram p = codegen_cuda(lf);
    NvrtcOutput o = nvrtc_compile(p.source, "sm_90", true);
    EXPECT_TRUE(o.is_ptx);
    EXPECT_NE(o.binary.find(".entry"), std::string::npos);
}

TEST(GPUNvrtc, ResourceCheckRejectsTooManyRegisters) {
    REQUIRE_NVRTC();
    Built b = build(pointwise());
    b.out.usage[b.prog.kernels[0].name].registers = 200;  // as if the kernel needed 200 per thread
    std::string e = error_of([&] { check_kernel_resources(b.prog, b.out, 32768); });
    EXPECT_NE(e.find("registers"), std::string::npos) << e;
}

// ---- illegal schedules: weft::Error before anything runs (no NVRTC needed) ----
TEST(GPUNvrtcErrors, ThreadLoopOutsideBlockLoop) {
    Buffer<float> in = ramp_buffer(64, 64);
    Var x("x"), y("y");
    Func f("lonely_threads");
    f(x, y) = in(x, y) + 1.0f;
    f.gpu_threads(x);
    GpuCase c{"t", f, {64, 64}, {in}};
    std::string e = error_of([&] { lower_case(c); });
    EXPECT_NE(e.find("gpu_threads"), std::string::npos) << e;
    EXPECT_NE(e.find("lonely_threads"), std::string::npos) << e;
    EXPECT_NE(e.find("gpu_blocks"), std::string::npos) << e;
}

TEST(GPUNvrtcErrors, TooManyThreadsPerBlock) {
    Buffer<float> in = ramp_buffer(256, 256);
    Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
    Func f("big_blocks");
    f(x, y) = in(x, y) + 1.0f;
    f.gpu_tile(x, y, xo, yo, xi, yi, 64, 32);
    GpuCase c{"t", f, {256, 256}, {in}};
    std::string e = error_of([&] { lower_case(c); });
    EXPECT_NE(e.find("2048 threads per block"), std::string::npos) << e;
    EXPECT_NE(e.find("big_blocks"), std::string::npos) << e;
}

TEST(GPUNvrtcErrors, TooMuchSharedMemory) {
    Buffer<float> in = ramp_buffer(512, 512);
    Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
    Func g("wide_stage"), f("reads_far");
    g(x, y) = in(x, y) * 2.0f;
    f(x, y) = g(x, y) + g(x + 100, y + 100);
    f.gpu_tile(x, y, xo, yo, xi, yi, 16, 16);
    g.compute_at(f, xo).store_in(MemoryType::GPUShared);
    GpuCase c{"t", f, {256, 256}, {in}};
    std::string e = error_of([&] { lower_case(c); });
    EXPECT_NE(e.find("shared memory"), std::string::npos) << e;
    EXPECT_NE(e.find("wide_stage"), std::string::npos) << e;
    EXPECT_NE(e.find("49152"), std::string::npos) << e;
}

// A known limit: a register copy loaded ahead whose shape changes at the last step of k (200 =
// 12 * 16 + 8) cannot be proven per thread (its layout differs between steps), so it stays in
// shared memory, too large for a block: a clear error before anything runs.
// load_ahead() where a block's tile is larger than the whole matrix (n = 123 < 128): the
// register copies' regions (fused and split over the block's threads) cannot be bounded per
// thread, so they stay in shared memory, past the block's limit: refused before anything runs.
// load_ahead where a block's 128x128 tile is larger than the whole matrix: the register
// copies' storage is sized by their largest step (over the loop's iterations, enumerated),
// not the whole matrix (which overflowed shared memory).
TEST(GPUNvrtc, LoadAheadWithTileLargerThanTheMatrix) {
    REQUIRE_NVRTC();
    for (auto [n, kstep] : {std::pair{123, 8}, {119, 16}}) {
        SCOPED_TRACE(n);
        Built b = build(matmul_shared_vec(n, kstep, true));
        ASSERT_EQ(b.prog.kernels.size(), 1u);
        EXPECT_LE(b.prog.kernels[0].shared_bytes, 4 * (2 * 128 * kstep) * 2);  // A and B slices, staged and copies
        check_kernel_resources(b.prog, b.out);
    }
}

// Shared memory is a block's: storage of a GPUShared Func outside every kernel (computed at
// root, on the host or in a kernel, or stored at root) is refused; on a CPU target the same
// schedule runs (GPU schedules are plain loops there).
TEST(GPUNvrtcErrors, SharedStorageOutsideKernels) {
    Buffer<float> in = ramp_buffer(64, 64);
    Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
    for (int placement = 0; placement < 3; placement++) {
        Func g("staged"), f("consumer");
        g(x, y) = in(x, y) * 2.0f;
        f(x, y) = g(x, y) + 1.0f;
        f.gpu_tile(x, y, xo, yo, xi, yi, 16, 16);
        if (placement == 0) g.compute_root().store_in(MemoryType::GPUShared);
        if (placement == 1) g.compute_root().store_in(MemoryType::GPUShared).gpu_tile(x, y, xo, yo, xi, yi, 16, 16);
        if (placement == 2) g.store_root().compute_at(f, xo).store_in(MemoryType::GPUShared).gpu_threads(x, y);
        GpuCase c{"t", f, {64, 64}, {in}};
        std::string e = error_of([&] { lower_case(c); });
        EXPECT_NE(e.find("\"staged\""), std::string::npos) << placement << ": " << e;
        EXPECT_NE(e.find("outside every GPU kernel"), std::string::npos) << placement << ": " << e;
        Buffer<float> out = f.realize({64, 64});  // Target::host()
        EXPECT_FLOAT_EQ(out(5, 7), in(5, 7) * 2.0f + 1.0f);
    }
}

TEST(GPUNvrtcErrors, GpuLoopsOnCpuTargetRunSerially) {
    GpuCase c = blur_shared(64, 32);
    Buffer<float> out = c.out.realize(c.sizes);  // Target::host(): GPU loops are plain loops
    Buffer<float> ref(c.sizes);
    weft::internal::interpret_pipeline(Pipeline(c.out), {ref});
    for (int y = 0; y < 32; y++)
        for (int x = 0; x < 64; x++) ASSERT_FLOAT_EQ(out(x, y), ref(x, y));
}

TEST(GPUNvrtcErrors, CudaTargetWithoutDriver) {
    if (cuda_available()) GTEST_SKIP() << "this machine has a CUDA device";
    std::string e = error_of([] { Target::cuda(); });
    EXPECT_NE(e.find("CUDA"), std::string::npos) << e;
    EXPECT_NE(e.find("libcuda.so.1"), std::string::npos) << e;
}
