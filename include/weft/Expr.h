// weft public API: types, expressions, errors.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>
#include "weft/Float16.h"

namespace weft {

/** Every user error is reported with this exception. */
class Error : public std::runtime_error {
public:
    explicit Error(const std::string &msg) : std::runtime_error(msg) {}
};

class Expr;

/** How a split handles an extent that is not a multiple of the factor (see Func::split). */
enum class TailStrategy { Auto, GuardWithIf, RoundUp, ShiftInwards };
/** compute_with: where the fused loops of two stages start and end differently, how the
    iterations line up (Halide's meaning): AlignStart puts both first iterations together,
    AlignEnd both last ones, NoAlign (= Auto) runs the union of the ranges with the same loop
    values for both stages. Each stage still runs exactly its own iterations. */
enum class LoopAlignStrategy { AlignStart, AlignEnd, NoAlign, Auto };
/** Where a Func's storage lives (see Func::store_in). */
enum class MemoryType { Auto, Heap, Stack, Register, GPUShared };

namespace internal {
/** A new name, unique in this process, starting with prefix (weft's generated names). */
std::string unique_name(char prefix);
/** Counts the changes to a definition, schedule or input's wrappers: a pipeline's snapshot
    keeps the counts it was built from and is rebuilt only when one of them moved. A copy
    starts at the value copied. */
struct ChangeCount {
    std::atomic<uint64_t> n{0};
    ChangeCount() = default;
    ChangeCount(const ChangeCount &o) : n(o.get()) {}
    ChangeCount &operator=(const ChangeCount &o) {
        n.store(o.get(), std::memory_order_relaxed);
        return *this;
    }
    uint64_t get() const { return n.load(std::memory_order_relaxed); }
    void bump() { n.fetch_add(1, std::memory_order_relaxed); }
};
}  // namespace internal

/** BFloat is bfloat16 (float32's exponent, 8 bits of precision); it counts as a float (is_float()). */
enum class TypeCode : uint8_t { Int, UInt, Float, Bool, Handle, BFloat };

/** A scalar or vector element type. */
class Type {
public:
    constexpr Type() = default;
    constexpr Type(TypeCode c, int bits, int lanes = 1)
        : code_(c), bits_((uint8_t)bits), lanes_((uint16_t)lanes) {}
    TypeCode code() const { return code_; }
    int bits() const { return bits_; }
    int lanes() const { return lanes_; }
    int bytes() const { return (bits_ + 7) / 8; }
    bool is_int() const { return code_ == TypeCode::Int; }
    bool is_uint() const { return code_ == TypeCode::UInt; }
    bool is_float() const { return code_ == TypeCode::Float || code_ == TypeCode::BFloat; }
    bool is_bfloat() const { return code_ == TypeCode::BFloat; }
    /** float16 or bfloat16: stored in 16 bits, computed in float32 and rounded back. */
    bool is_16bit_float() const { return is_float() && bits_ == 16; }
    bool is_bool() const { return code_ == TypeCode::Bool; }
    bool is_handle() const { return code_ == TypeCode::Handle; }
    bool is_int_or_uint() const { return is_int() || is_uint(); }
    bool is_vector() const { return lanes_ != 1; }
    bool is_scalar() const { return lanes_ == 1; }
    Type with_lanes(int l) const { return Type(code_, bits_, l); }
    Type element_of() const { return with_lanes(1); }
    Type with_bits(int b) const { return Type(code_, b, lanes_); }
    /** Largest and smallest values of the type, as Exprs. */
    Expr max() const;
    Expr min() const;
    /** Can this (integer) type hold the value exactly? */
    bool can_represent(int64_t v) const;
    bool operator==(const Type &o) const { return code_ == o.code_ && bits_ == o.bits_ && lanes_ == o.lanes_; }
    bool operator!=(const Type &o) const { return !(*this == o); }
    /** e.g. "int32", "float32x16", "bool". */
    std::string str() const;

private:
    TypeCode code_ = TypeCode::Int;
    uint8_t bits_ = 32;
    uint16_t lanes_ = 1;
};

inline Type Int(int bits, int lanes = 1) { return Type(TypeCode::Int, bits, lanes); }
inline Type UInt(int bits, int lanes = 1) { return Type(TypeCode::UInt, bits, lanes); }
inline Type Float(int bits, int lanes = 1) { return Type(TypeCode::Float, bits, lanes); }
inline Type BFloat(int bits, int lanes = 1) { return Type(TypeCode::BFloat, bits, lanes); }
inline Type Bool(int lanes = 1) { return Type(TypeCode::Bool, 1, lanes); }
inline Type Handle() { return Type(TypeCode::Handle, 64, 1); }

template <typename T>
Type type_of() {
    if constexpr (std::is_same_v<T, bool>) return Bool();
    else if constexpr (std::is_same_v<T, float16_t>) return Float(16);
    else if constexpr (std::is_same_v<T, bfloat16_t>) return BFloat(16);
    else if constexpr (std::is_floating_point_v<T>) return Float(sizeof(T) * 8);
    else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) return Int(sizeof(T) * 8);
    else if constexpr (std::is_integral_v<T>) return UInt(sizeof(T) * 8);
    else if constexpr (std::is_pointer_v<T>) return Handle();
    else static_assert(sizeof(T) == 0, "weft: unsupported element type");
}

namespace internal {
struct ExprNode;
enum class IRNodeType : uint8_t;
IRNodeType node_type_of(const ExprNode *n);
Type type_of_node(const ExprNode *n);
/** Destroys the last reference to an IR node without recursing: the nodes only it holds are
    destroyed in turn by a loop on this thread (a chain of a million operations would overflow the
    stack as a recursion). */
void release_last(std::shared_ptr<const void> p) noexcept;
}  // namespace internal

/** An expression: a handle to an immutable IR node. */
class Expr {
public:
    Expr() = default;
    Expr(int v);
    /** UInt(32), as Halide: `u8 | 1u` (a constant takes the other operand's type where it fits). */
    Expr(unsigned int v);
    /** Int(64) and UInt(64): explicit, as Halide (`Expr(int64_t(1) << 40)`). */
    explicit Expr(int64_t v);
    explicit Expr(uint64_t v);
    Expr(float v);
    Expr(double v);
    Expr(float16_t v);
    Expr(bfloat16_t v);
    explicit Expr(std::shared_ptr<const internal::ExprNode> p) : ptr(std::move(p)) {}
    Expr(const Expr &) = default;
    Expr(Expr &&) noexcept = default;
    Expr &operator=(const Expr &o) {
        if (this != &o) {
            std::shared_ptr<const internal::ExprNode> old = std::move(ptr);
            ptr = o.ptr;  // (o may be part of old's node: copied before old goes)
            drop(old);
        }
        return *this;
    }
    Expr &operator=(Expr &&o) noexcept {
        if (this != &o) {
            std::shared_ptr<const internal::ExprNode> old = std::move(ptr);
            ptr = std::move(o.ptr);
            drop(old);
        }
        return *this;
    }
    ~Expr() { drop(ptr); }
    bool defined() const { return (bool)ptr; }
    Type type() const { return internal::type_of_node(ptr.get()); }
    const internal::ExprNode *get() const { return ptr.get(); }
    /** Internal: downcast to a node type (see src/ir/IR.h). */
    template <typename T>
    const T *as() const {
        if (ptr && internal::node_type_of(ptr.get()) == T::_node_type)
            return static_cast<const T *>(ptr.get());
        return nullptr;
    }
    bool same_as(const Expr &o) const { return ptr == o.ptr; }

    std::shared_ptr<const internal::ExprNode> ptr;

private:
    static void drop(std::shared_ptr<const internal::ExprNode> &p) {
        if (p && p.use_count() == 1) internal::release_last(std::move(p));
    }
};

// Arithmetic. Integer / and % round toward negative infinity; division by zero gives 0.
Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);
Expr operator%(Expr a, Expr b);
Expr operator-(Expr a);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr operator==(Expr a, Expr b);
Expr operator!=(Expr a, Expr b);
Expr operator&&(Expr a, Expr b);
Expr operator||(Expr a, Expr b);
Expr operator!(Expr a);
Expr &operator+=(Expr &a, Expr b);
Expr &operator-=(Expr &a, Expr b);
Expr &operator*=(Expr &a, Expr b);
Expr &operator/=(Expr &a, Expr b);
// Bitwise operators on integers (Halide's meaning). &, |, ^ take both operands to one type
// (as arithmetic does) and also apply to bools; ~ flips every bit. a << b and a >> b have a's
// type: b may be any integer type, a negative b shifts the other way, and a shift by the type's
// width or more gives what shifting one bit at a time would (0, or -1 for a negative signed a
// shifted right). >> is arithmetic for signed types, logical for unsigned ones.
Expr operator&(Expr a, Expr b);
Expr operator|(Expr a, Expr b);
Expr operator^(Expr a, Expr b);
Expr operator~(Expr a);
Expr operator<<(Expr a, Expr b);
Expr operator>>(Expr a, Expr b);

Expr select(Expr cond, Expr t, Expr f);
/** select(c0, v0, c1, v1, ..., otherwise): the first value whose condition holds (Halide's form). */
template <typename... Rest>
Expr select(Expr c0, Expr v0, Expr c1, Expr v1, Expr otherwise, Rest... rest) {
    return select(std::move(c0), std::move(v0), select(std::move(c1), std::move(v1), std::move(otherwise), rest...));
}
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
Expr clamp(Expr x, Expr lo, Expr hi);
Expr abs(Expr a);
Expr sqrt(Expr a);
Expr exp(Expr a);
Expr log(Expr a);
Expr pow(Expr a, Expr b);
Expr sin(Expr a);
Expr cos(Expr a);
Expr tanh(Expr a);
Expr floor(Expr a);
Expr ceil(Expr a);
Expr round(Expr a);
Expr cast(Type t, Expr e);
/** min / max of three or more values (Halide's variadic forms). */
template <typename A, typename B, typename C, typename... Rest>
Expr min(A a, B b, C c, Rest... rest) {
    return min(min(Expr(a), Expr(b)), Expr(c), rest...);
}
template <typename A, typename B, typename C, typename... Rest>
Expr max(A a, B b, C c, Rest... rest) {
    return max(max(Expr(a), Expr(b)), Expr(c), rest...);
}
/** |a - b| without overflow: for integers, the unsigned type of a's width (Halide's absd). */
Expr absd(Expr a, Expr b);
/** values[id], and the last value where id is out of range (Halide's mux). */
Expr mux(Expr id, const std::vector<Expr> &values);
/** e converted to t, clamped first to the values t holds (Halide's saturating_cast). */
Expr saturating_cast(Type t, Expr e);
template <typename T>
Expr saturating_cast(Expr e) { return saturating_cast(type_of<T>(), std::move(e)); }

/** Fixed-point arithmetic (Halide's names and meaning). The results are exact: as if computed
    with unbounded integers, then as stated. a and b take one type as arithmetic does (a constant
    takes the other's type); integers of 8 to 64 bits, except where a wider type is needed (the
    widening forms and mul_shift_right take 8 to 32 bits).
    - saturating_add / saturating_sub: a + b, a - b clamped to the type.
    - widening_add / widening_mul: a + b, a * b in the integer type of twice the bits (signed
      where a is signed). widening_sub: a - b in the signed type of twice the bits.
      widening_mul also takes a signed and an unsigned operand of one width (signed result).
    - halving_add: floor((a + b) / 2); rounding_halving_add: floor((a + b + 1) / 2);
      halving_sub: floor((a - b) / 2) wrapped to the type. The type of a.
    - rounding_shift_right(a, n): for n > 0, floor((a + 2^(n-1)) / 2^n) (to nearest, ties up);
      for n <= 0, a << -n (as <<). rounding_shift_left(a, n) = rounding_shift_right(a, -n).
      n is any integer type.
    - mul_shift_right(a, b, q): saturating_cast of (a * b) >> q to a's type, the product exact;
      rounding_mul_shift_right(a, b, q): the same with rounding_shift_right. q >= 0 (a constant
      below 0 is an Error, a run-time one shifts left).
    - widening_shift_left(a, n) / widening_shift_right(a, n): a in the type of twice the bits,
      then shifted. */
Expr saturating_add(Expr a, Expr b);
Expr saturating_sub(Expr a, Expr b);
Expr widening_add(Expr a, Expr b);
Expr widening_sub(Expr a, Expr b);
Expr widening_mul(Expr a, Expr b);
Expr widening_shift_left(Expr a, Expr n);
Expr widening_shift_right(Expr a, Expr n);
Expr halving_add(Expr a, Expr b);
Expr rounding_halving_add(Expr a, Expr b);
Expr halving_sub(Expr a, Expr b);
Expr rounding_shift_right(Expr a, Expr n);
Expr rounding_shift_left(Expr a, Expr n);
Expr mul_shift_right(Expr a, Expr b, Expr q);
Expr rounding_mul_shift_right(Expr a, Expr b, Expr q);
/** Linear interpolation from zero_val (weight 0) to one_val (weight 1), Halide's lerp: for
    floats zero_val * (1 - w) + one_val * w; for 8- and 16-bit unsigned values the weight (a
    float in [0, 1], or an unsigned integer of the values' width, where its maximum means 1) is
    scaled to the type and the result rounded to nearest. */
Expr lerp(Expr zero_val, Expr one_val, Expr weight);
template <typename T>
Expr cast(Expr e) { return cast(type_of<T>(), std::move(e)); }
/** Halide's undef: as the whole value of a Func's pure definition, "no initial value" (the
    Func's storage is not written by that stage, only by its updates, which must write every
    element before it is read). Anywhere else it is a weft::Error. */
Expr undef(Type t);
template <typename T>
Expr undef() { return undef(type_of<T>()); }

/** More of libm, Halide's spellings (float32 or float64; an integer argument is converted to
    float32): results as the C library's. atan2(y, x) is the angle of (x, y) in [-pi, pi];
    hypot(x, y) is sqrt(x*x + y*y) without overflow or underflow on the way. */
Expr tan(Expr a);
Expr atan(Expr a);
Expr asin(Expr a);
Expr acos(Expr a);
Expr sinh(Expr a);
Expr cosh(Expr a);
Expr asinh(Expr a);
Expr acosh(Expr a);
Expr atanh(Expr a);
Expr atan2(Expr y, Expr x);
Expr hypot(Expr x, Expr y);
/** The fractional part of a, with a's sign: a - trunc(a), in (-1, 1) for finite a (Halide's
    fract; an integer a is converted to float32). */
Expr fract(Expr a);
/** Bool: a is NaN / a is +-infinity / a is neither (Halide's is_nan, is_inf, is_finite). For
    an integer a: false, false, true. Never folded away by weft's simplifier or LLVM. */
Expr is_nan(Expr a);
Expr is_inf(Expr a);
Expr is_finite(Expr a);
/** A hint that e (usually a condition) is true almost everywhere: the value of e. Loop
    partitioning treats a select or an if on it as it treats its own boundary conditions. */
Expr likely(Expr e);
/** 1 / a and 1 / sqrt(a) for floats. Halide's are approximations (about 12 bits on x86);
    weft's are exact to the rounding of a division and a square root, so code ported from
    Halide gets results at least as accurate. */
Expr fast_inverse(Expr a);
Expr fast_inverse_sqrt(Expr a);

/** An argument of print(): an Expr, a number, or a string. */
class PrintArg {
public:
    PrintArg(Expr e) : e_(std::move(e)) {}
    PrintArg(int v) : e_(v) {}
    PrintArg(float v) : e_(v) {}
    PrintArg(double v) : e_(v) {}
    PrintArg(const char *s) : s_(s ? s : ""), is_string_(true) {}
    PrintArg(const std::string &s) : s_(s), is_string_(true) {}
    bool is_string() const { return is_string_; }
    const Expr &expr() const { return e_; }
    const std::string &str() const { return s_; }

private:
    Expr e_;
    std::string s_;
    bool is_string_ = false;
};
/** Halide's print: the value of the first argument (an Expr); each time that value is
    computed, every argument is printed on one line on stderr, separated by spaces (one line
    per vector lane; lines of threads do not mix). Not in CUDA kernels (a weft::Error there). */
Expr print(const std::vector<PrintArg> &args);
template <typename... Args>
Expr print(Expr value, Args &&...rest) {
    return print(std::vector<PrintArg>{PrintArg(std::move(value)), PrintArg(std::forward<Args>(rest))...});
}
/** print(), only where cond (a bool) holds; the value of the first argument after cond. */
Expr print_when(Expr cond, const std::vector<PrintArg> &args);
template <typename... Args>
Expr print_when(Expr cond, Expr value, Args &&...rest) {
    return print_when(std::move(cond),
                      std::vector<PrintArg>{PrintArg(std::move(value)), PrintArg(std::forward<Args>(rest))...});
}

/** Inline reductions over the RDoms that appear in e. */
Expr sum(Expr e);
Expr maximum(Expr e);
Expr minimum(Expr e);
Expr product(Expr e);

/** Fast float32 approximations (vectorize well, no libm calls):
    fast_exp: relative error below 1e-6 for x in [-87, 88] (x is clamped to [-87.3, 88.7]).
    fast_log: absolute error below 1e-6 plus half an ulp of the result (so below 1e-6 where
    |log x| < 16, and within one ulp beyond) for normal x > 0; undefined for x <= 0, denormals,
    inf and NaN. Both are checked against libm in tests/lang/test_cpu_features.cpp.
    fast_tanh: relative error below 1e-6 for every float32 x (from fast_exp for |x| >= 0.3, a
    series below; x itself for tiny x, -0 for -0, +-1 for +-inf, NaN for NaN). */
Expr fast_exp(Expr x);
Expr fast_log(Expr x);
Expr fast_tanh(Expr x);
/** The bits of e as another type of the same width (e.g. float32 <-> int32). */
Expr reinterpret(Type t, Expr e);

/** Prints an Expr readably. */
std::string to_string(const Expr &e);

}  // namespace weft
