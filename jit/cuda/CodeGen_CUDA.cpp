#include "cuda/CodeGen_CUDA.h"
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include "ir/IRVisitor.h"
#include "ir/Stack.h"
#include "ir/Simplify.h"

namespace weft {
namespace internal {
namespace {

/** What the CUDA C needs from CUDA, for a host C++ compiler: the CPU emulation of a device
    (see codegen_cuda's emulate). Blocks run one after another; each thread of a block is a
    fiber that runs until it reaches __syncthreads() or ends, thread 0 first (in every other
    block the last thread first): so a thread that reads shared memory written by other threads
    without a barrier in between reads it before they have written it, and a wrong or missing
    barrier shows in the results. Shared memory is filled with all-ones bytes (NaN for floats)
    at the start of each block, so that a read of what the block has not written shows too. */
const char *kEmulationHeader = R"(// CPU emulation of the CUDA features weft's kernels use
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static thread_local
struct weft_emu_trap_error : std::runtime_error {
    weft_emu_trap_error() : std::runtime_error("__trap() (a failed assertion) in an emulated kernel") {}
};
static inline void __trap() { throw weft_emu_trap_error(); }
struct weft_emu_dim3 { unsigned x, y, z; };
static thread_local weft_emu_dim3 threadIdx, blockIdx;
struct weft_emu_fiber {
    ucontext_t ctx;
    weft_emu_dim3 idx;
    bool done;
};
static thread_local ucontext_t weft_emu_sched;
static thread_local weft_emu_fiber *weft_emu_cur;
static thread_local void (*weft_emu_body)(void **);
static thread_local void **weft_emu_params;
static thread_local std::string weft_emu_failure;
static inline void __syncthreads() { swapcontext(&weft_emu_cur->ctx, &weft_emu_sched); }
static void weft_emu_entry() {
    try {
        weft_emu_body(weft_emu_params);
    } catch (std::exception &e) {
        if (weft_emu_failure.empty()) weft_emu_failure = e.what();
    }
    weft_emu_cur->done = true;  // returns to uc_link, the scheduler
}
static void weft_emu_run_grid(void (*body)(void **), void (*poison)(), void **p, unsigned gx, unsigned gy,
                              unsigned gz, unsigned bx, unsigned by, unsigned bz) {
    const size_t kStack = 64 * 1024, n = (size_t)bx * by * bz;
    std::vector<weft_emu_fiber> f(n);
    std::unique_ptr<char[]> stacks(new char[n * kStack]);
    weft_emu_body = body;
    weft_emu_params = p;
    weft_emu_failure.clear();
    for (unsigned z = 0; z < gz && weft_emu_failure.empty(); z++)
        for (unsigned y = 0; y < gy && weft_emu_failure.empty(); y++)
            for (unsigned x = 0; x < gx && weft_emu_failure.empty(); x++) {
                blockIdx.x = x; blockIdx.y = y; blockIdx.z = z;
                poison();  // a read of shared memory this block did not write gives NaN (or all ones)
                // Every other block runs its threads last first: a read of what another thread
                // writes before the next barrier then sees the old value whichever thread wrote it.
                const bool reverse = (x + y + z) % 2 == 1;
                for (size_t t = 0; t < n; t++) {
                    f[t].idx.x = (unsigned)(t % bx);
                    f[t].idx.y = (unsigned)(t / bx % by);
                    f[t].idx.z = (unsigned)(t / ((size_t)bx * by));
                    f[t].done = false;
                    getcontext(&f[t].ctx);
                    f[t].ctx.uc_stack.ss_sp = stacks.get() + t * kStack;
                    f[t].ctx.uc_stack.ss_size = kStack;
                    f[t].ctx.uc_link = &weft_emu_sched;
                    makecontext(&f[t].ctx, weft_emu_entry, 0);
                }
                size_t alive = n;
                while (alive && weft_emu_failure.empty()) {
                    size_t waiting = 0, ended = 0;
                    for (size_t i = 0; i < n && weft_emu_failure.empty(); i++) {
                        size_t t = reverse ? n - 1 - i : i;
                        if (f[t].done) continue;
                        weft_emu_cur = &f[t];
                        threadIdx = f[t].idx;
                        swapcontext(&weft_emu_sched, &f[t].ctx);
                        if (f[t].done) alive--, ended++;
                        else waiting++;
                    }
                    if (waiting && ended && weft_emu_failure.empty())
                        weft_emu_failure = "__syncthreads() that not every thread of the block reaches";
                }
            }
    if (!weft_emu_failure.empty()) throw std::runtime_error(weft_emu_failure);
}
template <typename T> static inline T weft_emu_bits(const void *p) { T v; memcpy(&v, p, sizeof v); return v; }
// Shared memory is thread_local storage here; its address goes through this so that the host
// compiler cannot fold a constant index (a wrapped one, in a branch not taken) into the TLS
// relocation, whose 32 bits it can overflow.
template <typename T> static inline T *weft_emu_opaque(T *p) { asm volatile("" : "+r"(p)); return p; }
// Per-thread arrays start as all-ones bytes (NaN) too: reading an element not written shows.
#define WEFT_POISON_LOCAL(a) memset(a, 0xff, sizeof a)
static inline float __int_as_float(unsigned u) { return weft_emu_bits<float>(&u); }
// Atomics: a block's threads are fibers of one host thread, switching only at __syncthreads(),
// and blocks run one after another, so a plain read-modify-write is atomic here.
template <typename T> static inline T atomicAdd(T *p, T v) { T o = *p; *p = (T)(o + v); return o; }
template <typename T> static inline T atomicMin(T *p, T v) { T o = *p; *p = v < o ? v : o; return o; }
template <typename T> static inline T atomicMax(T *p, T v) { T o = *p; *p = v > o ? v : o; return o; }
template <typename T> static inline T atomicCAS(T *p, T c, T v) { T o = *p; if (o == c) *p = v; return o; }
static inline double __longlong_as_double(long long u) { return weft_emu_bits<double>(&u); }
// Saturating conversions toward zero, NaN -> 0 (as the cvt.rzi.sat instructions).
template <typename I, typename F> static inline I weft_emu_sat(F x, double lo, double hi) {
    if (x != x) return 0;
    if ((double)x <= lo) return (I)lo;
    if ((double)x >= hi) return (I)hi;
    return (I)x;
}
// 64-bit bounds are not exact in float or double: compare with 2^63 and 2^64 themselves.
template <typename F> static inline long long weft_emu_ll(F x) {
    if (x != x) return 0;
    if (x >= (F)9.2233720368547758e18) return INT64_MAX;
    if (x <= (F)-9.2233720368547758e18) return INT64_MIN;
    return (long long)x;
}
template <typename F> static inline unsigned long long weft_emu_ull(F x) {
    if (x != x || x <= 0) return 0;
    if (x >= (F)1.8446744073709552e19) return UINT64_MAX;
    return (unsigned long long)x;
}
static inline int __float2int_rz(float x) { return weft_emu_sat<int>(x, -2147483648.0, 2147483647.0); }
static inline unsigned __float2uint_rz(float x) { return weft_emu_sat<unsigned>(x, 0.0, 4294967295.0); }
static inline long long __float2ll_rz(float x) { return weft_emu_ll(x); }
static inline unsigned long long __float2ull_rz(float x) { return weft_emu_ull(x); }
static inline int __double2int_rz(double x) { return weft_emu_sat<int>(x, -2147483648.0, 2147483647.0); }
static inline unsigned __double2uint_rz(double x) { return weft_emu_sat<unsigned>(x, 0.0, 4294967295.0); }
static inline long long __double2ll_rz(double x) { return weft_emu_ll(x); }
static inline unsigned long long __double2ull_rz(double x) { return weft_emu_ull(x); }
#define WEFT_EMU_VEC(T, N2, N4)                                                             \
    struct alignas(2 * sizeof(T)) N2 { T x, y; };                                           \
    struct alignas(4 * sizeof(T)) N4 { T x, y, z, w; };                                     \
    static inline N2 make_##N2(T a, T b) { return N2{a, b}; }                               \
    static inline N4 make_##N4(T a, T b, T c, T d) { return N4{a, b, c, d}; }
WEFT_EMU_VEC(float, float2, float4)
WEFT_EMU_VEC(int, int2, int4)
WEFT_EMU_VEC(unsigned, uint2, uint4)
)";

const char *kPrelude = R"(// generated by weft (CUDA backend)
#ifndef WEFT_POISON_LOCAL
#define WEFT_POISON_LOCAL(a)  // (the emulation fills per-thread arrays with all-ones bytes)
#endif
typedef signed char i8;
typedef short i16;
typedef int i32;
typedef long long i64;
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

// IR semantics: floor division / modulo, zero divisor gives 0.
template <typename T> __device__ __forceinline__ T weft_div(T a, T b) {
    if (b == 0) return 0;
    if (T(-1) < T(0) && b == T(-1)) return (T)(0 - a);
    T q = a / b, r = a % b;
    if (T(-1) < T(0) && r != 0 && ((r < 0) != (b < 0))) q -= 1;
    return q;
}
template <typename T> __device__ __forceinline__ T weft_mod(T a, T b) {
    if (b == 0) return 0;
    if (T(-1) < T(0) && b == T(-1)) return 0;
    T r = a % b;
    if (T(-1) < T(0) && r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}
__device__ __forceinline__ float weft_fmod(float a, float b) { return a - b * floorf(a / b); }
__device__ __forceinline__ double weft_fmod(double a, double b) { return a - b * floor(a / b); }
template <typename T> __device__ __forceinline__ T weft_min(T a, T b) { return a < b ? a : b; }
template <typename T> __device__ __forceinline__ T weft_max(T a, T b) { return a > b ? a : b; }
template <typename T> __device__ __forceinline__ T weft_abs(T a) { return a < 0 ? (T)(0 - a) : a; }
// The bits of x as a To of the same width (reinterpret: fast_exp / fast_log build floats from their bits).
template <typename To, typename From> __device__ __forceinline__ To weft_reinterpret(From x) {
    union { From f; To t; } u;
    u.f = x;
    return u.t;
}
// Saturating float -> int (NaN gives 0): the cvt instructions saturate.
__device__ __forceinline__ i32 weft_f2i32(double x) { return __double2int_rz(x); }
__device__ __forceinline__ u32 weft_f2u32(double x) { return __double2uint_rz(x); }
__device__ __forceinline__ i64 weft_f2i64(double x) { return __double2ll_rz(x); }
__device__ __forceinline__ u64 weft_f2u64(double x) { return __double2ull_rz(x); }
__device__ __forceinline__ i32 weft_f2i32(float x) { return __float2int_rz(x); }
__device__ __forceinline__ u32 weft_f2u32(float x) { return __float2uint_rz(x); }
__device__ __forceinline__ i64 weft_f2i64(float x) { return __float2ll_rz(x); }
__device__ __forceinline__ u64 weft_f2u64(float x) { return __float2ull_rz(x); }
template <typename F> __device__ __forceinline__ i8 weft_f2i8(F x) { return (i8)weft_max(-128, weft_min(127, weft_f2i32(x))); }
template <typename F> __device__ __forceinline__ i16 weft_f2i16(F x) { return (i16)weft_max(-32768, weft_min(32767, weft_f2i32(x))); }
template <typename F> __device__ __forceinline__ u8 weft_f2u8(F x) { return (u8)weft_min(255u, weft_f2u32(x)); }
template <typename F> __device__ __forceinline__ u16 weft_f2u16(F x) { return (u16)weft_min(65535u, weft_f2u32(x)); }
// Atomic read-modify-write by compare-and-swap: *p = f(*p) as one step (atomic() updates).
template <int N> struct weft_uint_of;
template <> struct weft_uint_of<1> { typedef unsigned char type; };
template <> struct weft_uint_of<2> { typedef unsigned short type; };
template <> struct weft_uint_of<4> { typedef unsigned int type; };
template <> struct weft_uint_of<8> { typedef unsigned long long type; };
template <typename T, typename F> __device__ __forceinline__ void weft_atomic_cas(T *p, F f) {  // 4 or 8 bytes
    typedef typename weft_uint_of<sizeof(T)>::type U;
    union { T t; U u; } cur, nv;
    cur.t = *(volatile T *)p;
    while (true) {
        nv.t = f(cur.t);
        U seen = atomicCAS((U *)p, cur.u, nv.u);
        if (seen == cur.u) return;
        cur.u = seen;
    }
}
template <typename T, typename F> __device__ __forceinline__ void weft_atomic_cas_narrow(T *p, F f) {  // 1 or 2 bytes
    typedef typename weft_uint_of<sizeof(T)>::type U;
    unsigned int *w = (unsigned int *)((u64)p & ~(u64)3);
    const unsigned int shift = (unsigned int)((u64)p & 3) * 8u, mask = (unsigned int)(U)~(U)0 << shift;
    unsigned int cur = *(volatile unsigned int *)w;
    while (true) {
        union { T t; U u; } o, n;
        o.u = (U)((cur & mask) >> shift);
        n.t = f(o.t);
        unsigned int next = (cur & ~mask) | ((unsigned int)n.u << shift);
        unsigned int seen = atomicCAS(w, cur, next);
        if (seen == cur) return;
        cur = seen;
    }
}

)";

std::string ctype(Type t) {
    if (t.is_vector()) throw Error("weft internal error: CUDA codegen: vector type " + t.str() + " in scalar code");
    if (t.is_bool()) return "bool";
    if (t.is_float()) {
        if (t.bits() == 32) return "float";
        if (t.bits() == 64) return "double";
        throw Error("weft: the CUDA backend does not support " + t.str());
    }
    if (t.is_handle()) return "void *";
    std::string p = t.is_int() ? "i" : "u";
    return p + std::to_string(t.bits());
}
/** How a value of type t is stored in memory (Bool as a byte). */
std::string storage_type(Type t) { return t.is_bool() ? "u8" : ctype(t.element_of()); }

std::string float_literal(double v, int bits) {
    char buf[64];
    if (std::isnan(v)) return bits == 32 ? "__int_as_float(0x7fc00000)" : "__longlong_as_double(0x7ff8000000000000ll)";
    if (std::isinf(v)) {
        if (bits == 32) return v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
        return v > 0 ? "__longlong_as_double(0x7ff0000000000000ll)" : "__longlong_as_double(0xfff0000000000000ll)";
    }
    std::snprintf(buf, sizeof buf, bits == 32 ? "%.9g" : "%.17g", v);
    std::string s = buf;
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    if (bits == 32) s += "f";
    return s;
}

/** The free variables and buffers of a kernel. */
class KernelUses : public IRVisitor {
public:
    std::vector<std::pair<std::string, Type>> vars;  // first-use order
    std::set<std::string> var_seen;
    std::vector<std::string> buffers;
    std::map<std::string, Type> buffer_type;
    std::set<std::string> written;
    std::vector<std::set<std::string>> scopes{{}};
    std::set<std::string> allocated;

    bool defined(const std::string &n) const {
        for (auto &s : scopes)
            if (s.count(n)) return true;
        return n.compare(0, 9, "blockIdx.") == 0 || n.compare(0, 10, "threadIdx.") == 0;
    }

protected:
    void visit(const Variable *op) override {
        if (!defined(op->name) && !var_seen.count(op->name)) {
            var_seen.insert(op->name);
            vars.push_back({op->name, op->type});
        }
    }
    void visit(const Let *op) override {
        include(op->value);
        scopes.push_back({op->name});
        include(op->body);
        scopes.pop_back();
    }
    void visit(const LetStmt *op) override {
        include(op->value);
        scopes.push_back({op->name});
        include(op->body);
        scopes.pop_back();
    }
    void visit(const For *op) override {
        include(op->min);
        include(op->extent);
        scopes.push_back({op->name});
        include(op->body);
        scopes.pop_back();
    }
    void buffer(const std::string &n, Type t) {
        if (allocated.count(n)) return;
        if (!buffer_type.count(n)) {
            buffers.push_back(n);
            buffer_type[n] = t.element_of();
        }
    }
    void visit(const Load *op) override {
        buffer(op->name, op->type);
        IRVisitor::visit(op);
    }
    void visit(const Store *op) override {
        buffer(op->name, op->value.type());
        if (!allocated.count(op->name)) written.insert(op->name);
        IRVisitor::visit(op);
    }
    void visit(const Allocate *op) override {
        include(op->extent);
        bool had = allocated.count(op->name);
        allocated.insert(op->name);
        include(op->body);
        if (!had) allocated.erase(op->name);
    }
};

/** Which threadIdx dimensions a thread nest uses. */
class ThreadDims : public IRVisitor {
public:
    bool used[3] = {false, false, false};

protected:
    void visit(const For *op) override {
        if (op->for_type == ForType::GPUThread && op->name.size() == 11) used[op->name[10] - 'x'] = true;
        IRVisitor::visit(op);
    }
};

class SharedAllocs : public IRVisitor {
public:
    std::vector<std::string> order;
    std::map<std::string, std::pair<Type, int64_t>> allocs;

protected:
    void visit(const Allocate *op) override {
        if (op->memory_type == MemoryType::GPUShared) {
            int64_t n = 0;
            is_const_int(op->extent, &n);
            auto it = allocs.find(op->name);
            if (it == allocs.end()) {
                order.push_back(op->name);
                allocs[op->name] = {op->type, n};
            } else {
                it->second.second = std::max(it->second.second, n);
            }
        }
        IRVisitor::visit(op);
    }
};

Expr lane_of(const Expr &e, int i, const std::map<const ExprNode *, std::string> &vec_loads);

class Emitter {
public:
    std::ostringstream os;
    int indent = 1;
    std::map<std::string, std::string> idents;  // IR name -> C identifier
    std::set<std::string> used_idents;
    std::set<std::string> register_bufs, bool_bufs_unused;
    std::vector<std::pair<std::string, Expr>> let_scope;
    int block[3] = {1, 1, 1};
    int thread_depth = 0;
    int tmp_counter = 0;

    std::string ind() const { return std::string(indent * 4, ' '); }

    std::string id(const std::string &n) {
        if (n.compare(0, 9, "blockIdx.") == 0 || n.compare(0, 10, "threadIdx.") == 0 || n.compare(0, 6, "_wtmp_") == 0)
            return n;
        auto it = idents.find(n);
        if (it != idents.end()) return it->second;
        std::string s;
        for (char c : n) s += std::isalnum((unsigned char)c) ? c : '_';
        if (s.empty() || std::isdigit((unsigned char)s[0])) s = "v_" + s;
        s = "w_" + s;  // never a CUDA or C++ name
        std::string u = s;
        for (int k = 1; used_idents.count(u); k++) u = s + "_" + std::to_string(k);
        used_idents.insert(u);
        idents[n] = u;
        return u;
    }

    std::string bin(const char *op, const BinaryExprNode *b) {
        return "(" + expr(b->a) + " " + op + " " + expr(b->b) + ")";
    }
    std::string wrap_arith(const char *op, const BinaryExprNode *b) {
        Type t = b->type;
        if (t.is_float()) return bin(op, b);
        std::string u = t.bits() > 32 ? "u64" : "u32";
        std::string r = "((" + u + ")" + expr(b->a) + " " + op + " (" + u + ")" + expr(b->b) + ")";
        if (t == UInt(32) || t == UInt(64)) return r;
        return "((" + ctype(t) + ")" + r + ")";
    }

    std::string expr(const Expr &e) {
        if (stack_low()) return on_large_stack<std::string>([&] { return expr(e); });
        const ExprNode *n = e.get();
        if (n->type.is_vector())
            throw Error("weft internal error: CUDA codegen: vector expression outside a vector store: " + to_string(e));
        Type t = n->type;
        switch (n->node_type) {
        case IRNodeType::IntImm: {
            int64_t v = static_cast<const IntImm *>(n)->value;
            if (t.bits() == 64) {
                if (v == INT64_MIN) return "((i64)(-9223372036854775807ll - 1))";
                return "((i64)" + std::to_string(v) + "ll)";
            }
            std::string s = v == INT32_MIN ? "(-2147483647 - 1)" : (v < 0 ? "(" + std::to_string(v) + ")" : std::to_string(v));
            if (t.bits() == 32) return s;
            return "((" + ctype(t) + ")" + s + ")";
        }
        case IRNodeType::UIntImm: {
            uint64_t v = static_cast<const UIntImm *>(n)->value;
            if (t.is_bool()) return v ? "true" : "false";
            if (t.bits() == 64) return std::to_string(v) + "ull";
            if (t.bits() == 32) return std::to_string(v) + "u";
            return "((" + ctype(t) + ")" + std::to_string(v) + "u)";
        }
        case IRNodeType::FloatImm: return float_literal(static_cast<const FloatImm *>(n)->value, t.bits());
        case IRNodeType::StringImm: throw Error("weft internal error: CUDA codegen: string in kernel");
        case IRNodeType::Variable: return id(static_cast<const Variable *>(n)->name);
        case IRNodeType::Cast: return cast(t, static_cast<const Cast *>(n)->value);
        case IRNodeType::Add: return wrap_arith("+", static_cast<const BinaryExprNode *>(n));
        case IRNodeType::Sub: return wrap_arith("-", static_cast<const BinaryExprNode *>(n));
        case IRNodeType::Mul: return wrap_arith("*", static_cast<const BinaryExprNode *>(n));
        case IRNodeType::Div: {
            auto b = static_cast<const BinaryExprNode *>(n);
            if (t.is_float()) return bin("/", b);
            return "weft_div<" + ctype(t) + ">(" + expr(b->a) + ", " + expr(b->b) + ")";
        }
        case IRNodeType::Mod: {
            auto b = static_cast<const BinaryExprNode *>(n);
            if (t.is_float()) return "weft_fmod(" + expr(b->a) + ", " + expr(b->b) + ")";
            return "weft_mod<" + ctype(t) + ">(" + expr(b->a) + ", " + expr(b->b) + ")";
        }
        case IRNodeType::Min: {
            auto b = static_cast<const BinaryExprNode *>(n);
            return "weft_min<" + ctype(t) + ">(" + expr(b->a) + ", " + expr(b->b) + ")";
        }
        case IRNodeType::Max: {
            auto b = static_cast<const BinaryExprNode *>(n);
            return "weft_max<" + ctype(t) + ">(" + expr(b->a) + ", " + expr(b->b) + ")";
        }
        case IRNodeType::EQ: return bin("==", static_cast<const BinaryExprNode *>(n));
        case IRNodeType::NE: return bin("!=", static_cast<const BinaryExprNode *>(n));
        case IRNodeType::LT: return bin("<", static_cast<const BinaryExprNode *>(n));
        case IRNodeType::LE: return bin("<=", static_cast<const BinaryExprNode *>(n));
        case IRNodeType::GT: return bin(">", static_cast<const BinaryExprNode *>(n));
        case IRNodeType::GE: return bin(">=", static_cast<const BinaryExprNode *>(n));
        case IRNodeType::And: return bin("&&", static_cast<const BinaryExprNode *>(n));
        case IRNodeType::Or: return bin("||", static_cast<const BinaryExprNode *>(n));
        case IRNodeType::Not: return "(!" + expr(static_cast<const Not *>(n)->a) + ")";
        case IRNodeType::Select: {
            auto op = static_cast<const Select *>(n);
            return "(" + expr(op->condition) + " ? " + expr(op->true_value) + " : " + expr(op->false_value) + ")";
        }
        case IRNodeType::Load: {
            auto op = static_cast<const Load *>(n);
            std::string s = id(op->name) + "[" + expr(op->index) + "]";
            if (t.is_bool()) return "(" + s + " != 0)";
            return s;
        }
        case IRNodeType::Let: {
            auto op = static_cast<const Let *>(n);
            return "([&]() -> " + ctype(t) + " { const " + ctype(op->value.type()) + " " + id(op->name) + " = " +
                   expr(op->value) + "; return " + expr(op->body) + "; }())";
        }
        case IRNodeType::Call: return call(static_cast<const Call *>(n));
        default: throw Error("weft internal error: CUDA codegen: unsupported expression " + to_string(e));
        }
    }

    std::string cast(Type t, const Expr &v) {
        Type f = v.type();
        std::string x = expr(v);
        if (t == f) return x;
        if (t.is_bool()) return "(" + x + " != 0)";
        if (t.is_float()) return "((" + ctype(t) + ")" + x + ")";
        if (f.is_float()) {
            std::string fn = std::string("weft_f2") + (t.is_int() ? "i" : "u") + std::to_string(t.bits());
            return fn + "(" + x + ")";
        }
        return "((" + ctype(t) + ")" + x + ")";
    }

    std::string call(const Call *op) {
        if (op->call_type != Call::Intrinsic)
            throw Error("weft internal error: CUDA codegen: unlowered call to " + op->name);
        const std::string &n = op->name;
        if (n == "likely" || n == "gpu_loop_extent" || n == "promise_clamped") return expr(op->args[0]);
        Type t = op->type;
        if (n == "abs") {
            if (t.is_float()) return (t.bits() == 32 ? "fabsf(" : "fabs(") + expr(op->args[0]) + ")";
            if (t.is_uint()) return expr(op->args[0]);
            return "weft_abs<" + ctype(t) + ">(" + expr(op->args[0]) + ")";
        }
        if (n == "reinterpret")
            return "weft_reinterpret<" + ctype(t) + ", " + ctype(op->args[0].type()) + ">(" + expr(op->args[0]) + ")";
        static const std::map<std::string, std::string> f1 = {
            {"sqrt", "sqrt"}, {"exp", "exp"}, {"log", "log"}, {"sin", "sin"}, {"cos", "cos"}, {"tanh", "tanh"},
            {"floor", "floor"}, {"ceil", "ceil"}, {"round", "rint"}, {"pow", "pow"}};
        auto it = f1.find(n);
        if (it == f1.end() || !t.is_float())
            throw Error("weft: the CUDA backend does not support the intrinsic \"" + n + "\" on " + t.str());
        std::string fn = it->second + (t.bits() == 32 ? "f" : "");
        std::string s = fn + "(";
        for (size_t i = 0; i < op->args.size(); i++) s += (i ? ", " : "") + expr(op->args[i]);
        return s + ")";
    }

    // ---- statements ----
    void stmt(const Stmt &s) {
        if (!s.defined()) return;
        if (stack_low()) return on_large_stack_void([&] { stmt(s); });
        const StmtNode *n = s.get();
        switch (n->node_type) {
        case IRNodeType::LetStmt: {
            auto op = static_cast<const LetStmt *>(n);
            if (op->value.type().is_vector()) {  // vector code is emitted lane by lane: substitute
                stmt(substitute(op->name, op->value, op->body));
                return;
            }
            os << ind() << "const " << ctype(op->value.type()) << " " << id(op->name) << " = " << expr(op->value) << ";\n";
            let_scope.push_back({op->name, op->value});
            stmt(op->body);
            let_scope.pop_back();
            return;
        }
        case IRNodeType::AssertStmt: {
            auto op = static_cast<const AssertStmt *>(n);
            os << ind() << "if (!" << expr(op->condition) << ") __trap();  // " << op->message << "\n";
            return;
        }
        case IRNodeType::For: {
            auto op = static_cast<const For *>(n);
            if (op->for_type == ForType::GPUBlock) {  // the kernel's grid: blockIdx is the loop variable
                stmt(op->body);
                return;
            }
            if (op->for_type == ForType::GPUThread) {
                int d = op->name.size() == 11 ? op->name[10] - 'x' : -1;
                if (d < 0 || d > 2) throw Error("weft internal error: CUDA codegen: thread loop " + op->name);
                std::vector<std::string> conds;
                if (thread_depth == 0) {
                    ThreadDims td;
                    td.include(s);
                    for (int k = 0; k < 3; k++)
                        if (!td.used[k] && block[k] > 1) conds.push_back(std::string("threadIdx.") + "xyz"[k] + " == 0");
                }
                int64_t c = 0;
                is_const_int(op->extent, &c);
                if (c < block[d]) conds.push_back(op->name + " < " + std::to_string(c));
                thread_depth++;
                if (conds.empty()) {
                    os << ind() << "{  // " << op->name << " in [0, " << c << ")\n";
                } else {
                    std::string cs;
                    for (auto &x : conds) cs += (cs.empty() ? "" : " && ") + x;
                    os << ind() << "if (" << cs << ") {\n";
                }
                indent++;
                stmt(op->body);
                indent--;
                os << ind() << "}\n";
                thread_depth--;
                return;
            }
            std::string v = id(op->name);
            std::string end = id(op->name + ".end");
            if (op->for_type == ForType::Unrolled) os << ind() << "#pragma unroll\n";
            os << ind() << "for (i32 " << v << " = " << expr(op->min) << ", " << end << " = " << v << " + "
               << expr(op->extent) << "; " << v << " < " << end << "; " << v << "++) {\n";
            indent++;
            stmt(op->body);
            indent--;
            os << ind() << "}\n";
            return;
        }
        case IRNodeType::Store: {
            auto op = static_cast<const Store *>(n);
            if (op->atomic) return atomic_store(op);
            if (op->value.type().is_vector()) return vector_store(op);
            std::string v = expr(op->value);
            if (op->value.type().is_bool()) v = "(u8)" + v;
            os << ind() << id(op->name) << "[" << expr(op->index) << "] = " << v << ";\n";
            return;
        }
        case IRNodeType::Allocate: {
            auto op = static_cast<const Allocate *>(n);
            if (op->memory_type == MemoryType::GPUShared) {  // declared at the kernel's top
                stmt(op->body);
                return;
            }
            int64_t c = 0;
            if (!is_const_int(op->extent, &c))
                throw Error("weft internal error: CUDA codegen: allocation " + op->name + " of non-constant size");
            os << ind() << "{\n";
            indent++;
            os << ind() << storage_type(op->type) << " " << id(op->name) << "[" << std::max<int64_t>(c, 1)
               << "];  // per thread\n";
            os << ind() << "WEFT_POISON_LOCAL(" << id(op->name) << ");\n";
            register_bufs.insert(op->name);
            stmt(op->body);
            indent--;
            os << ind() << "}\n";
            return;
        }
        case IRNodeType::Block: {
            auto op = static_cast<const Block *>(n);
            bool scoped = declares(op->first);
            if (scoped) {
                os << ind() << "{\n";
                indent++;
            }
            stmt(op->first);
            if (scoped) {
                indent--;
                os << ind() << "}\n";
            }
            stmt(op->rest);
            return;
        }
        case IRNodeType::IfThenElse: {
            auto op = static_cast<const IfThenElse *>(n);
            os << ind() << "if (" << expr(op->condition) << ") {\n";
            indent++;
            stmt(op->then_case);
            indent--;
            if (op->else_case.defined()) {
                os << ind() << "} else {\n";
                indent++;
                stmt(op->else_case);
                indent--;
            }
            os << ind() << "}\n";
            return;
        }
        case IRNodeType::Evaluate: {
            auto op = static_cast<const Evaluate *>(n);
            if (auto c = op->value.as<Call>())
                if (c->is_intrinsic("gpu_thread_barrier")) {
                    os << ind() << "__syncthreads();\n";
                    return;
                }
            if (auto c = op->value.as<Call>())
                if (c->is_intrinsic("prefetch")) return;  // a CPU cache hint (Func::prefetch): nothing on a GPU
            if (is_const(op->value)) return;
            os << ind() << "(void)" << expr(op->value) << ";\n";
            return;
        }
        default: throw Error("weft internal error: CUDA codegen: unsupported statement");
        }
    }

    /** An atomic read-modify-write (Stage::atomic()): CUDA's atomicAdd (also for a subtraction) / atomicMin /
        atomicMax where one exists for the type and operation, else a compare-and-swap loop
        (on the enclosing 4-byte word for 1- and 2-byte types). A per-thread (register) array
        is private to its thread: a plain read-modify-write. */
    void atomic_store(const Store *op) {
        Type t = op->value.type();
        if (t.is_vector() || t.is_bool())
            throw Error("weft internal error: CUDA codegen: atomic store of " + t.str() + " to " + op->name);
        const std::string old = "_wtmp_old" + std::to_string(tmp_counter++);
        AtomicUpdate u = atomic_update(op, old);
        std::string ct = ctype(t);
        std::string addr = "&" + id(op->name) + "[" + expr(op->index) + "]";
        if (u.op == AtomicUpdate::Plain || register_bufs.count(op->name)) {
            std::string p = "_wtmp_p" + std::to_string(tmp_counter++);
            os << ind() << "{\n";
            os << ind() << "    " << ct << " *" << p << " = " << addr << ";\n";
            os << ind() << "    const " << ct << " " << old << " = *" << p << ";\n";
            os << ind() << "    *" << p << " = " << expr(u.value) << ";\n";
            os << ind() << "}\n";
            return;
        }
        bool wide = t.bits() == 32 || t.bits() == 64;
        if (wide && u.op != AtomicUpdate::Other && !(t.is_float() && (u.op == AtomicUpdate::Min || u.op == AtomicUpdate::Max))) {
            // The types CUDA's atomic functions take: float, double, int, unsigned, long long
            // (min and max) and unsigned long long (add; two's complement makes it right for i64).
            std::string at = t.is_float() ? ct
                             : t.bits() == 32 ? (t.is_int() ? "int" : "unsigned int")
                             : (t.is_int() && u.op != AtomicUpdate::Add && u.op != AtomicUpdate::Sub) ? "long long"
                                                                                                      : "unsigned long long";
            std::string e = "(" + at + ")(" + expr(u.operand) + ")";
            std::string fn = u.op == AtomicUpdate::Add ? "atomicAdd" : u.op == AtomicUpdate::Min ? "atomicMin"
                             : u.op == AtomicUpdate::Max ? "atomicMax" : "atomicAdd";
            if (u.op == AtomicUpdate::Sub) e = t.is_float() ? "-" + e : "(" + at + ")0 - " + e;
            os << ind() << "(void)" << fn << "((" << at << " *)" << addr << ", " << e << ");\n";
            return;
        }
        os << ind() << (wide ? "weft_atomic_cas" : "weft_atomic_cas_narrow") << "(" << addr << ", [&](" << ct << " "
           << old << ") -> " << ct << " { return " << expr(u.value) << "; });\n";
    }

    /** Would s declare a C name in the enclosing scope? */
    static bool declares(const Stmt &s) {
        if (s.as<LetStmt>()) return true;
        if (auto b = s.as<Block>()) return declares(b->first) || declares(b->rest);
        return false;
    }

    /** Is base a multiple of k (with the lets in scope substituted)? */
    bool aligned(Expr base, int k) {
        for (int iter = 0; iter < 8; iter++) {
            bool changed = false;
            for (auto it = let_scope.rbegin(); it != let_scope.rend(); ++it)
                if (expr_uses_var(base, it->first)) {
                    base = substitute(it->first, it->second, base);
                    changed = true;
                }
            if (!changed) break;
        }
        return can_prove(simplify(base % k == 0));
    }

    static const char *vec_name(Type t, int lanes) {
        if (t == Float(32)) return lanes == 4 ? "float4" : "float2";
        if (t == Int(32)) return lanes == 4 ? "int4" : "int2";
        if (t == UInt(32)) return lanes == 4 ? "uint4" : "uint2";
        return nullptr;
    }

    /** A dense Load or Store index that can be one 8- or 16-byte access. */
    const Ramp *dense(const std::string &buf, const Expr &index, Type elem) {
        auto r = index.as<Ramp>();
        if (!r || !is_const_one(r->stride) || register_bufs.count(buf)) return nullptr;
        if (!vec_name(elem, r->lanes) || (r->lanes != 2 && r->lanes != 4)) return nullptr;
        if (!aligned(r->base, r->lanes)) return nullptr;
        return r;
    }

    void vector_store(const Store *op) {
        int lanes = op->value.type().lanes();
        Type et = op->value.type().element_of();
        // Dense aligned vector loads become one wide load each.
        std::map<const ExprNode *, std::string> vec_loads;
        class FindLoads : public IRVisitor {
        public:
            std::vector<const Load *> loads;

        protected:
            void visit(const Load *op) override {
                if (op->type.is_vector()) loads.push_back(op);
                IRVisitor::visit(op);
            }
        } fl;
        fl.include(op->value);
        std::vector<std::pair<const Load *, std::string>> done;  // structurally equal loads share one
        for (auto *l : fl.loads) {
            if (vec_loads.count(l)) continue;
            bool dup = false;
            for (auto &p : done)
                if (p.first->name == l->name && p.first->type == l->type && equal(p.first->index, l->index)) {
                    vec_loads[l] = p.second;
                    dup = true;
                    break;
                }
            if (dup) continue;
            if (const Ramp *r = dense(l->name, l->index, l->type.element_of())) {
                std::string t = "_wtmp_" + std::to_string(tmp_counter++);
                const char *vn = vec_name(l->type.element_of(), r->lanes);
                os << ind() << "const " << vn << " " << t << " = *reinterpret_cast<const " << vn << " *>(&" << id(l->name)
                   << "[" << expr(r->base) << "]);\n";
                vec_loads[l] = t;
                done.push_back({l, t});
            }
        }
        std::vector<std::string> vals;
        for (int i = 0; i < lanes; i++) {
            std::string t = "_wtmp_" + std::to_string(tmp_counter++);
            os << ind() << "const " << ctype(et) << " " << t << " = " << expr(simplify(lane_of(op->value, i, vec_loads)))
               << ";\n";
            vals.push_back(t);
        }
        if (const Ramp *r = dense(op->name, op->index, et)) {
            const char *vn = vec_name(et, lanes);
            std::string mk = std::string("make_") + vn + "(";
            for (int i = 0; i < lanes; i++) mk += (i ? ", " : "") + vals[i];
            os << ind() << "*reinterpret_cast<" << vn << " *>(&" << id(op->name) << "[" << expr(r->base) << "]) = " << mk
               << ");\n";
            return;
        }
        for (int i = 0; i < lanes; i++) {
            std::string v = vals[i];
            if (et.is_bool()) v = "(u8)" + v;
            os << ind() << id(op->name) << "[" << expr(simplify(lane_of(op->index, i, {}))) << "] = " << v << ";\n";
        }
    }
};

/** Lane i of a vector expression, as a scalar expression. */
Expr lane_of(const Expr &e, int i, const std::map<const ExprNode *, std::string> &vec_loads) {
    Type t = e.type();
    if (t.is_scalar()) return e;
    if (stack_low()) return on_large_stack<Expr>([&] { return lane_of(e, i, vec_loads); });
    const ExprNode *n = e.get();
    switch (n->node_type) {
    case IRNodeType::Ramp: {
        auto op = static_cast<const Ramp *>(n);
        return op->base + op->stride * make_const(op->stride.type(), (int64_t)i);
    }
    case IRNodeType::Broadcast: return static_cast<const Broadcast *>(n)->value;
    case IRNodeType::Cast: return Cast::make(t.element_of(), lane_of(static_cast<const Cast *>(n)->value, i, vec_loads));
    case IRNodeType::Add: case IRNodeType::Sub: case IRNodeType::Mul: case IRNodeType::Div: case IRNodeType::Mod:
    case IRNodeType::Min: case IRNodeType::Max: case IRNodeType::EQ: case IRNodeType::NE: case IRNodeType::LT:
    case IRNodeType::LE: case IRNodeType::GT: case IRNodeType::GE: case IRNodeType::And: case IRNodeType::Or: {
        auto b = static_cast<const BinaryExprNode *>(n);
        return rebuild_binary(n->node_type, lane_of(b->a, i, vec_loads), lane_of(b->b, i, vec_loads));
    }
    case IRNodeType::Not: return Not::make(lane_of(static_cast<const Not *>(n)->a, i, vec_loads));
    case IRNodeType::Select: {
        auto op = static_cast<const Select *>(n);
        return Select::make(lane_of(op->condition, i, vec_loads), lane_of(op->true_value, i, vec_loads),
                            lane_of(op->false_value, i, vec_loads));
    }
    case IRNodeType::Load: {
        auto op = static_cast<const Load *>(n);
        auto it = vec_loads.find(n);
        if (it != vec_loads.end()) return Variable::make(t.element_of(), it->second + "." + "xyzw"[i]);
        return Load::make(t.element_of(), op->name, lane_of(op->index, i, vec_loads));
    }
    case IRNodeType::Let: {
        auto op = static_cast<const Let *>(n);
        return lane_of(substitute(op->name, op->value, op->body), i, vec_loads);
    }
    case IRNodeType::Call: {
        auto op = static_cast<const Call *>(n);
        std::vector<Expr> args;
        for (auto &a : op->args) args.push_back(lane_of(a, i, vec_loads));
        return Call::make(t.element_of(), op->name, args, op->call_type);
    }
    case IRNodeType::VectorReduce: {
        auto op = static_cast<const VectorReduce *>(n);
        int k = op->value.type().lanes() / t.lanes();
        Expr r;
        for (int j = 0; j < k; j++) {
            Expr x = lane_of(op->value, i * k + j, vec_loads);
            if (!r.defined()) r = x;
            else if (op->op == VectorReduce::Add) r = Add::make(r, x);
            else if (op->op == VectorReduce::Mul) r = Mul::make(r, x);
            else if (op->op == VectorReduce::Min) r = Min::make(r, x);
            else r = Max::make(r, x);
        }
        return r;
    }
    default: throw Error("weft internal error: CUDA codegen: cannot take a lane of " + to_string(e));
    }
}

class ExtractKernels : public IRMutator {
public:
    CudaProgram *prog;
    std::string prefix;
    bool emulate = false;
    std::ostringstream src;

protected:
    Stmt visit(const For *op, const Stmt &s) override {
        if (op->for_type != ForType::GPUBlock) return IRMutator::visit(op, s);
        CudaKernel k;
        k.name = prefix + "_k" + std::to_string(prog->kernels.size());
        k.loop = op->name;
        for (int d = 0; d < 3; d++) k.grid[d] = Expr(1);
        // The grid, and the block size (the max thread-loop extent per dimension).
        Stmt cur = s;
        while (auto f = cur.as<For>()) {
            if (f->for_type != ForType::GPUBlock) break;
            int d = f->name.back() - 'x';
            k.grid[d] = f->extent;
            cur = f->body;
        }
        class Block : public IRVisitor {
        public:
            int b[3] = {1, 1, 1};

        protected:
            void visit(const For *op) override {
                if (op->for_type == ForType::GPUThread) {
                    int64_t c = 1;
                    is_const_int(op->extent, &c);
                    int d = op->name.back() - 'x';
                    b[d] = std::max<int>(b[d], (int)c);
                }
                IRVisitor::visit(op);
            }
        } bl;
        bl.include(cur);
        for (int d = 0; d < 3; d++) k.block[d] = bl.b[d];
        KernelUses uses;
        uses.include(cur);
        SharedAllocs sh;
        sh.include(cur);

        Emitter em;
        for (int d = 0; d < 3; d++) em.block[d] = k.block[d];
        std::string sig;
        for (auto &b : uses.buffers) {
            CudaKernelParam p{b, true, uses.buffer_type[b], uses.written.count(b) > 0};
            k.params.push_back(p);
            std::string t = storage_type(p.type);
            sig += std::string(sig.empty() ? "" : ",\n    ") + (p.written ? "" : "const ") + t + " *__restrict__ " + em.id(b);
        }
        for (auto &v : uses.vars) {
            if (v.second.is_handle()) throw Error("weft internal error: CUDA codegen: handle parameter " + v.first);
            k.params.push_back({v.first, false, v.second, false});
            sig += std::string(sig.empty() ? "" : ",\n    ") + "const " + ctype(v.second) + " " + em.id(v.first);
        }
        int threads = k.block[0] * k.block[1] * k.block[2];
        std::string poison;  // emulation: fills the kernel's shared memory with NaN / all-ones bytes
        if (emulate)
            for (auto &n : sh.order) {
                auto &a = sh.allocs[n];
                std::string g = "weft_emu_sh_" + k.name + "_" + em.id(n);
                src << "static thread_local __attribute__((aligned(16))) " << storage_type(a.first) << " " << g << "["
                    << std::max<int64_t>(a.second, 1) << "];\n";
                poison += "    memset(" + g + ", 0xff, sizeof " + g + ");\n";
            }
        src << "// kernel for loop " << op->name << ": block " << k.block[0] << "x" << k.block[1] << "x" << k.block[2] << "\n";
        // The launch bounds: the block's threads, and the blocks per multiprocessor where
        // compile_kernels asks ptxas for more than one (a second argument of 1 is not the same
        // as none to ptxas: it is left out).
        std::string bounds = "WEFT_LAUNCH_BOUNDS_" + k.name;
        src << "#ifndef " << bounds << "\n#define " << bounds << " " << threads << "\n#endif\n";
        src << "extern \"C\" __global__ void __launch_bounds__(" << bounds << ") " << k.name << "(\n    " << sig << ") {\n";
        for (auto &n : sh.order) {
            auto &a = sh.allocs[n];
            int64_t bytes = std::max<int64_t>(a.second, 1) * a.first.bytes();
            k.shared_bytes += (bytes + 15) / 16 * 16;
            if (emulate)  // see weft_emu_opaque
                src << "    " << storage_type(a.first) << " *const " << em.id(n) << " = weft_emu_opaque(weft_emu_sh_"
                    << k.name << "_" << em.id(n) << ");\n";
            else
                src << "    __shared__ __align__(16) " << storage_type(a.first) << " " << em.id(n) << "["
                    << std::max<int64_t>(a.second, 1) << "];\n";
        }
        em.stmt(cur);
        src << em.os.str() << "}\n\n";
        if (emulate) {
            // The launcher the emulated driver calls: the kernel's parameters from the launch's
            // argument slots (device pointers are host pointers here), the grid run by the
            // header's scheduler, each thread a fiber.
            src << "static void weft_emu_body_" << k.name << "(void **p) {\n    " << k.name << "(";
            for (size_t i = 0; i < k.params.size(); i++) {
                const CudaKernelParam &q = k.params[i];
                if (i) src << ", ";
                if (q.is_buffer)
                    src << "(" << (q.written ? "" : "const ") << storage_type(q.type) << " *)(uintptr_t)*(const u64 *)p[" << i << "]";
                else
                    src << "*(const " << ctype(q.type) << " *)p[" << i << "]";
            }
            src << ");\n}\n";
            src << "static void weft_emu_poison_" << k.name << "() {\n" << poison << "}\n";
            src << "extern \"C\" void weft_emu_" << k.name << "(void **p, unsigned gx, unsigned gy, unsigned gz) {\n"
                << "    weft_emu_run_grid(weft_emu_body_" << k.name << ", weft_emu_poison_" << k.name << ", p, gx, gy, gz, "
                << k.block[0] << ", " << k.block[1] << ", " << k.block[2] << ");\n}\n\n";
        }
        int idx = (int)prog->kernels.size();
        prog->kernels.push_back(std::move(k));
        return Evaluate::make(Call::make_intrinsic(Int(32), "gpu_launch", {Expr(idx)}));
    }
};

/** Splits the host code (kernels already replaced by gpu_launch) into what drives the kernels
    and host stages: each largest run of statements that stores something and launches
    nothing becomes a CPU pipeline of its own (CudaHostStage), called by host_stage(index). */
class SplitHostStages {
public:
    SplitHostStages(const LoweredFunc &f, CudaProgram &p) : prog(p) {
        for (auto &a : f.args)
            if (a.kind == LoweredArg::Buffer) pipeline_buffers[a.name] = a.dims;
    }

    Stmt split(const Stmt &s) {
        if (!s.defined()) return s;
        if (stack_low()) return on_large_stack<Stmt>([&] { return split(s); });
        Scan sc = scan(s);
        if (!sc.store) return s;
        if (!sc.launch) return stage(s);
        if (s.as<Block>()) {
            std::vector<Stmt> items, out, run;
            flatten(s, items);
            bool run_stores = false;
            auto flush = [&] {
                if (run.empty()) return;
                Stmt r = Block::make(run);
                out.push_back(run_stores ? stage(r) : r);
                run.clear();
                run_stores = false;
            };
            for (auto &it : items) {
                Scan c = scan(it);
                if (c.launch) {
                    flush();
                    out.push_back(split(it));
                } else {
                    run.push_back(it);
                    run_stores |= c.store;
                }
            }
            flush();
            return Block::make(out);
        }
        if (auto op = s.as<For>()) return For::make(op->name, op->min, op->extent, op->for_type, split(op->body));
        if (auto op = s.as<LetStmt>()) return LetStmt::make(op->name, op->value, split(op->body));
        if (auto op = s.as<IfThenElse>()) return IfThenElse::make(op->condition, split(op->then_case), split(op->else_case));
        if (auto op = s.as<Allocate>()) return Allocate::make(op->name, op->type, op->extent, op->memory_type, split(op->body));
        throw Error("weft internal error: CUDA codegen: host statement with stores and kernels cannot be split");
    }

private:
    CudaProgram &prog;
    std::map<std::string, int> pipeline_buffers;

    struct Scan {
        bool store = false, launch = false;
    };
    static Scan scan(const Stmt &s) {
        class V : public IRVisitor {
        public:
            Scan r;

        protected:
            void visit(const Store *op) override { r.store = true; }
            void visit(const Call *op) override {
                if (op->is_intrinsic("gpu_launch")) r.launch = true;
                IRVisitor::visit(op);
            }
        } v;
        v.include(s);
        return v.r;
    }
    Stmt stage(const Stmt &body) {
        KernelUses uses;
        uses.include(body);
        CudaHostStage st;
        int idx = (int)prog.stages.size();
        st.fn.name = "host_stage_" + std::to_string(idx);
        st.fn.body = body;
        std::set<std::string> from_buffers;  // fields of the pipeline's buffers: read from their weft_buffer_t
        for (auto &b : uses.buffers) {
            auto it = pipeline_buffers.find(b);
            int dims = it == pipeline_buffers.end() ? 0 : it->second;
            st.fn.args.push_back({b, LoweredArg::Buffer, uses.buffer_type[b], dims});
            st.written.push_back(uses.written.count(b) > 0);
            for (int d = 0; d < dims; d++)
                for (const char *fld : {"min", "extent", "stride"}) from_buffers.insert(buffer_field(b, fld, d));
        }
        for (auto &v : uses.vars) {
            if (from_buffers.count(v.first)) continue;
            if (v.second.is_handle() || v.second.is_vector())
                throw Error("weft internal error: CUDA codegen: host stage uses " + v.first + " of an unsupported type");
            st.fn.args.push_back({v.first, LoweredArg::Scalar, v.second, 0});
        }
        prog.stages.push_back(std::move(st));
        return Evaluate::make(Call::make_intrinsic(Int(32), "host_stage", {Expr(idx)}));
    }
};

}  // namespace

CudaProgram codegen_cuda(const LoweredFunc &f, bool emulate) {
    CudaProgram prog;
    ExtractKernels ex;
    ex.prog = &prog;
    ex.prefix = f.name;
    ex.emulate = emulate;
    prog.host = ex.mutate(f.body);
    if (!prog.kernels.empty()) prog.host = SplitHostStages(f, prog).split(prog.host);
    prog.source = (emulate ? std::string(kEmulationHeader) : std::string()) + kPrelude + ex.src.str();
    return prog;
}

}  // namespace internal
}  // namespace weft
