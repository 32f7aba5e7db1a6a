// The IR: immutable, shared expression and statement nodes.
// Semantics every consumer (simplifier, interpreter, backends) must follow:
//  - Integer arithmetic wraps at the type's width (two's complement).
//  - Div / Mod on integers round toward negative infinity (Mod result has the sign of the
//    divisor, so never negative for a positive divisor); a zero divisor gives 0 for both.
//  - Float Div / Mod: IEEE division; Mod is a - b*floor(a/b).
//  - Cast float->int saturates (NaN gives 0); int->int truncates/extends; to Bool is != 0.
//  - Vector nodes: every operand has the node's lane count (use Broadcast for scalars).
#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>
#include "weft/Expr.h"

namespace weft {
namespace internal {

enum class IRNodeType : uint8_t {
    // Exprs
    IntImm, UIntImm, FloatImm, StringImm, Variable, Cast, Add, Sub, Mul, Div, Mod, Min, Max,
    EQ, NE, LT, LE, GT, GE, And, Or, Not, Select, Load, Ramp, Broadcast, Let, Call, VectorReduce,
    // Stmts
    LetStmt, AssertStmt, For, Store, Provide, Allocate, Realize, Block, IfThenElse, Evaluate,
};

struct ExprNode {
    IRNodeType node_type;
    Type type;
    ExprNode(IRNodeType n, Type t) : node_type(n), type(t) {}
    virtual ~ExprNode() = default;
};

struct StmtNode {
    IRNodeType node_type;
    explicit StmtNode(IRNodeType n) : node_type(n) {}
    StmtNode(const StmtNode &o) : node_type(o.node_type) {}  // (a copy's names are its own)
    StmtNode &operator=(const StmtNode &) = delete;
    virtual ~StmtNode() = default;
    /** A summary of the names in the statement (ir/IRVisitor.h, may_name), built the first
        time it is asked for and kept: the node is immutable. */
    mutable std::atomic<uint64_t> names[4] = {};
    mutable std::atomic<bool> names_known{false};
};

class Stmt {
public:
    Stmt() = default;
    explicit Stmt(std::shared_ptr<const StmtNode> p) : ptr(std::move(p)) {}
    Stmt(const Stmt &) = default;
    Stmt(Stmt &&) noexcept = default;
    Stmt &operator=(const Stmt &o) {
        if (this != &o) {
            std::shared_ptr<const StmtNode> old = std::move(ptr);
            ptr = o.ptr;
            drop(old);
        }
        return *this;
    }
    Stmt &operator=(Stmt &&o) noexcept {
        if (this != &o) {
            std::shared_ptr<const StmtNode> old = std::move(ptr);
            ptr = std::move(o.ptr);
            drop(old);
        }
        return *this;
    }
    ~Stmt() { drop(ptr); }  // (as Expr: a long Block chain is released by a loop)
    bool defined() const { return (bool)ptr; }
    const StmtNode *get() const { return ptr.get(); }
    template <typename T>
    const T *as() const {
        if (ptr && ptr->node_type == T::_node_type) return static_cast<const T *>(ptr.get());
        return nullptr;
    }
    bool same_as(const Stmt &o) const { return ptr == o.ptr; }
    std::shared_ptr<const StmtNode> ptr;

private:
    static void drop(std::shared_ptr<const StmtNode> &p) {
        if (p && p.use_count() == 1) release_last(std::move(p));
    }
};

struct FunctionContents;
struct ReductionDomainContents;
struct ParamContents;
struct BufferContents;
struct ImageParamContents;

// ---------------- Expr nodes ----------------
struct IntImm : ExprNode {
    static constexpr IRNodeType _node_type = IRNodeType::IntImm;
    int64_t value;
    IntImm(Type t, int64_t v) : ExprNode(_node_type, t), value(v) {}
    static Expr make(Type t, int64_t v);  // wraps v to t's width
};
struct UIntImm : ExprNode {
    static constexpr IRNodeType _node_type = IRNodeType::UIntImm;
    uint64_t value;
    UIntImm(Type t, uint64_t v) : ExprNode(_node_type, t), value(v) {}
    static Expr make(Type t, uint64_t v);  // also used for Bool (0/1)
};
struct FloatImm : ExprNode {
    static constexpr IRNodeType _node_type = IRNodeType::FloatImm;
    double value;
    FloatImm(Type t, double v) : ExprNode(_node_type, t), value(v) {}
    static Expr make(Type t, double v);  // rounds to float32 when t is Float(32)
};
struct StringImm : ExprNode {
    static constexpr IRNodeType _node_type = IRNodeType::StringImm;
    std::string value;
    explicit StringImm(std::string v) : ExprNode(_node_type, Handle()), value(std::move(v)) {}
    static Expr make(const std::string &v);
};

/** A named value: a loop variable, a let, a pure Var, an RVar, a Param, a buffer field
    ("in.min.0", "in.extent.1", "in.stride.0"), or a buffer's base pointer (Handle type). */
struct Variable : ExprNode {
    static constexpr IRNodeType _node_type = IRNodeType::Variable;
    std::string name;
    std::shared_ptr<ParamContents> param;             // set for Param<T>
    std::shared_ptr<ReductionDomainContents> rdom;    // set for RVars
    Variable(Type t, std::string n) : ExprNode(_node_type, t), name(std::move(n)) {}
    static Expr make(Type t, const std::string &n);
};

struct Cast : ExprNode {
    static constexpr IRNodeType _node_type = IRNodeType::Cast;
    Expr value;
    Cast(Type t, Expr v) : ExprNode(_node_type, t), value(std::move(v)) {}
    static Expr make(Type t, Expr v);
};

/** The common layout of every binary node (Add ... Or): safe to static_cast to. */
struct BinaryExprNode : ExprNode {
    Expr a, b;
    BinaryExprNode(IRNodeType n, Type t, Expr a_, Expr b_) : ExprNode(n, t), a(std::move(a_)), b(std::move(b_)) {}
};

template <IRNodeType NT>
struct BinaryNode : BinaryExprNode {
    static constexpr IRNodeType _node_type = NT;
    BinaryNode(Type t, Expr a_, Expr b_) : BinaryExprNode(NT, t, std::move(a_), std::move(b_)) {}
    /** a and b must have the same type (comparisons give Bool of the same lanes). */
    static Expr make(Expr a, Expr b);
};
using Add = BinaryNode<IRNodeType::Add>;
using Sub = BinaryNode<IRNodeType::Sub>;
using Mul = BinaryNode<IRNodeType::Mul>;
using Div = BinaryNode<IRNodeType::Div>;
using Mod = BinaryNode<IRNodeType::Mod>;
using Min = BinaryNode<IRNodeType::Min>;
using Max = BinaryNode<IRNodeType::Max>;
using EQ = BinaryNode<IRNodeType::EQ>;
using NE = BinaryNode<IRNodeType::NE>;
using LT = BinaryNode<IRNodeType::LT>;
using LE = BinaryNode<IRNodeType::LE>;
using GT = BinaryNode<IRNodeType::GT>;
using GE = BinaryNode<IRNodeType::GE>;
using And = BinaryNode<IRNodeType::And>;
using Or = BinaryNode<IRNodeType::Or>;

struct Not : ExprNode {
    static constexpr IRNodeType _node_type = IRNodeType::Not;
    Expr a;
    Not(Type t, Expr a_) : ExprNode(_node_type, t), a(std::move(a_)) {}
    static Expr make(Expr a);
};

struct Select : ExprNode {
    static constexpr IRNodeType _node_type = IRNodeType::Select;
    Expr condition, true_value, false_value;
    Select(Type t, Expr c, Expr tv, Expr fv)
        : ExprNode(_node_type, t), condition(std::move(c)), true_value(std::move(tv)), false_value(std::move(fv)) {}
    /** condition is scalar Bool or Bool with the values' lanes. */
    static Expr make(Expr c, Expr t, Expr f);
};

/** Load of element `index` (Int(32), or a vector of them) from the flat buffer `name`.
    The result has index's lanes. `alignment`: known alignment of the first lane's index
    (in elements), 0 if unknown. */
struct Load : ExprNode {
    static constexpr IRNodeType _node_type = IRNodeType::Load;
    std::string name;
    Expr index;
    int alignment = 0;
    Load(Type t, std::string n, Expr i) : ExprNode(_node_type, t), name(std::move(n)), index(std::move(i)) {}
    static Expr make(Type t, const std::string &name, Expr index, int alignment = 0);
};

/** base, base + stride, ..., base + (lanes-1)*stride. */
struct Ramp : ExprNode {
    static constexpr IRNodeType _node_type = IRNodeType::Ramp;
    Expr base, stride;
    int lanes;
    Ramp(Type t, Expr b, Expr s, int l) : ExprNode(_node_type, t), base(std::move(b)), stride(std::move(s)), lanes(l) {}
    static Expr make(Expr base, Expr stride, int lanes);
};

struct Broadcast : ExprNode {
    static constexpr IRNodeType _node_type = IRNodeType::Broadcast;
    Expr value;
    int lanes;
    Broadcast(Type t, Expr v, int l) : ExprNode(_node_type, t), value(std::move(v)), lanes(l) {}
    static Expr make(Expr value, int lanes);
};

struct Let : ExprNode {
    static constexpr IRNodeType _node_type = IRNodeType::Let;
    std::string name;
    Expr value, body;
    Let(Type t, std::string n, Expr v, Expr b)
        : ExprNode(_node_type, t), name(std::move(n)), value(std::move(v)), body(std::move(b)) {}
    static Expr make(const std::string &name, Expr value, Expr body);
};

/** Reduces the lanes of a vector to `lanes` lanes (groups of adjacent lanes). */
struct VectorReduce : ExprNode {
    static constexpr IRNodeType _node_type = IRNodeType::VectorReduce;
    enum Op { Add, Mul, Min, Max } op;
    Expr value;
    VectorReduce(Type t, Op o, Expr v) : ExprNode(_node_type, t), op(o), value(std::move(v)) {}
    static Expr make(Op op, Expr value, int lanes);
};

struct Call : ExprNode {
    static constexpr IRNodeType _node_type = IRNodeType::Call;
    enum CallType {
        Func,       // a call to a Func (before lowering flattens it): func is set
        Image,      // a call to an input: image (ImageParam) or buffer (Buffer) is set
        Intrinsic,  // math and internal helpers, by name (see the list below)
    };
    std::string name;
    std::vector<Expr> args;
    CallType call_type;
    std::shared_ptr<FunctionContents> func;
    std::shared_ptr<ImageParamContents> image;
    std::shared_ptr<BufferContents> buffer;
    /** A call to a Func whose value is a Tuple: which of its values (0 for other Funcs). */
    int value_index = 0;
    Call(Type t, std::string n, std::vector<Expr> a, CallType ct)
        : ExprNode(_node_type, t), name(std::move(n)), args(std::move(a)), call_type(ct) {}
    static Expr make(Type t, const std::string &name, std::vector<Expr> args, CallType ct);
    static Expr make_intrinsic(Type t, const std::string &name, std::vector<Expr> args) {
        return make(t, name, std::move(args), Intrinsic);
    }
    bool is_intrinsic(const char *n) const { return call_type == Intrinsic && name == n; }
};
// Intrinsics (all elementwise over lanes; float ones take and give the same float type):
//   "sqrt" "exp" "log" "pow" "sin" "cos" "tanh" "floor" "ceil" "round" (half to even)
//   "tan" "atan" "asin" "acos" "sinh" "cosh" "asinh" "acosh" "atanh" "atan2"(y, x) "hypot"(x, y)
//     (with "tanh": the C library's functions of those names, called lane by lane; is_libm_call)
//   "is_nan" "is_inf" "is_finite": float -> bool
//   "abs"  (any numeric type; for signed ints gives the same type, wrapping INT_MIN)
//   "likely"(x) -> x (a hint)
//   "tuple"(v0, v1, ...): the value of a Func's definition that gives a Tuple (the type is v0's;
//     only there: storage flattening makes one store per value)
//   Fixed point (integers; Expr.h gives the exact meaning; the other fixed-point functions are
//   built from these and casts):
//   "saturating_add"(a, b) "saturating_sub"(a, b): a's type, a and b one type
//   "rounding_shift_right"(a, n): a's type, n any integer type
//   "mul_shift_right"(a, b, q) "rounding_mul_shift_right"(a, b, q): a and b one type (8 to 32
//     bits), q an unsigned type; the result a's type

/** The "tuple" intrinsic a definition's value (or a Provide's) is, or null for one value. */
const Call *tuple_call(const Expr &value);
/** Value i of a definition's value: the "tuple" intrinsic's argument i; else (one value) the
    value itself. */
Expr tuple_value(const Expr &value, int i);

/** Is an intrinsic of this name the C library's function of the name ("tanh", "atan2", ...;
    float32: the name with "f")? */
bool is_libm_call(const std::string &name);

/** v rounded (to nearest even) to float type t; float64 keeps it. */
double round_to_float_type(Type t, double v);
/** The largest finite value of float type t. */
double largest_finite_float(Type t);
/** A float of type t (16, 32 or 64 bits) read from / written to memory. */
double float_from_bytes(Type t, const void *p);
void float_to_bytes(Type t, double v, void *p);

// ---------------- Stmt nodes ----------------
struct LetStmt : StmtNode {
    static constexpr IRNodeType _node_type = IRNodeType::LetStmt;
    std::string name;
    Expr value;
    Stmt body;
    LetStmt(std::string n, Expr v, Stmt b) : StmtNode(_node_type), name(std::move(n)), value(std::move(v)), body(std::move(b)) {}
    static Stmt make(const std::string &name, Expr value, Stmt body);
};

/** If condition is false, the pipeline stops and reports error `message` with `args`
    formatted into it: each "%" in message is replaced by the next arg's value. */
struct AssertStmt : StmtNode {
    static constexpr IRNodeType _node_type = IRNodeType::AssertStmt;
    Expr condition;
    std::string message;
    std::vector<Expr> args;  // scalar integers
    AssertStmt(Expr c, std::string m, std::vector<Expr> a)
        : StmtNode(_node_type), condition(std::move(c)), message(std::move(m)), args(std::move(a)) {}
    static Stmt make(Expr cond, const std::string &message, std::vector<Expr> args);
};

/** GPUBlock / GPUThread loops (x, y, z by nesting order, innermost first) become a kernel's
    grid and block dimensions; lowering for CUDA extracts them. */
enum class ForType : uint8_t { Serial, Parallel, Vectorized, Unrolled, GPUBlock, GPUThread };

/** for (name = min; name < min + extent; name++) body. min/extent are Int(32). */
struct For : StmtNode {
    static constexpr IRNodeType _node_type = IRNodeType::For;
    std::string name;
    Expr min, extent;
    ForType for_type;
    Stmt body;
    For(std::string n, Expr mi, Expr ex, ForType ft, Stmt b)
        : StmtNode(_node_type), name(std::move(n)), min(std::move(mi)), extent(std::move(ex)), for_type(ft), body(std::move(b)) {}
    static Stmt make(const std::string &name, Expr min, Expr extent, ForType ft, Stmt body);
};

/** name[index] = value (flat). index lanes == value lanes. */
struct Store : StmtNode {
    static constexpr IRNodeType _node_type = IRNodeType::Store;
    std::string name;
    Expr value, index;
    int alignment = 0;
    bool nontemporal = false;  // a streaming store (a hint: the value stored is the same)
    /** An atomic read-modify-write (Stage::atomic()): every Load of `name` in `value` reads the
        element being written, and the read, the computation and the write happen as one. */
    bool atomic = false;
    Store(std::string n, Expr v, Expr i) : StmtNode(_node_type), name(std::move(n)), value(std::move(v)), index(std::move(i)) {}
    static Stmt make(const std::string &name, Expr value, Expr index, int alignment = 0, bool nontemporal = false,
                     bool atomic = false);
};

/** Multi-dimensional store into a Func's realization (before storage flattening). */
struct Provide : StmtNode {
    static constexpr IRNodeType _node_type = IRNodeType::Provide;
    std::string name;
    Expr value;
    std::vector<Expr> args;
    bool atomic = false;  // becomes an atomic Store (see Store::atomic)
    Provide(std::string n, Expr v, std::vector<Expr> a) : StmtNode(_node_type), name(std::move(n)), value(std::move(v)), args(std::move(a)) {}
    static Stmt make(const std::string &name, Expr value, std::vector<Expr> args, bool atomic = false);
};

struct Range {
    Expr min, extent;
};
using Region = std::vector<Range>;

/** A Func's storage over `bounds` (before flattening). */
struct Realize : StmtNode {
    static constexpr IRNodeType _node_type = IRNodeType::Realize;
    std::string name;
    Type type;
    Region bounds;
    MemoryType memory_type;
    Stmt body;
    Realize(std::string n, Type t, Region b, MemoryType m, Stmt bd)
        : StmtNode(_node_type), name(std::move(n)), type(t), bounds(std::move(b)), memory_type(m), body(std::move(bd)) {}
    static Stmt make(const std::string &name, Type t, Region bounds, MemoryType m, Stmt body);
};

/** A flat allocation of `extent` elements (Int(64)) named `name`, live in body.
    memory_type: Stack (constant extent, small) or Heap (from the runtime's reused pool). */
struct Allocate : StmtNode {
    static constexpr IRNodeType _node_type = IRNodeType::Allocate;
    std::string name;
    Type type;
    Expr extent;
    MemoryType memory_type;
    Stmt body;
    Allocate(std::string n, Type t, Expr e, MemoryType m, Stmt b)
        : StmtNode(_node_type), name(std::move(n)), type(t), extent(std::move(e)), memory_type(m), body(std::move(b)) {}
    static Stmt make(const std::string &name, Type t, Expr extent, MemoryType m, Stmt body);
};

struct Block : StmtNode {
    static constexpr IRNodeType _node_type = IRNodeType::Block;
    Stmt first, rest;
    Block(Stmt f, Stmt r) : StmtNode(_node_type), first(std::move(f)), rest(std::move(r)) {}
    /** Drops undefined parts; returns the other if one is undefined. */
    static Stmt make(Stmt first, Stmt rest);
    static Stmt make(const std::vector<Stmt> &stmts);
};

struct IfThenElse : StmtNode {
    static constexpr IRNodeType _node_type = IRNodeType::IfThenElse;
    Expr condition;
    Stmt then_case, else_case;  // else_case may be undefined
    IfThenElse(Expr c, Stmt t, Stmt e) : StmtNode(_node_type), condition(std::move(c)), then_case(std::move(t)), else_case(std::move(e)) {}
    static Stmt make(Expr c, Stmt t, Stmt e = Stmt());
};

struct Evaluate : StmtNode {
    static constexpr IRNodeType _node_type = IRNodeType::Evaluate;
    Expr value;
    explicit Evaluate(Expr v) : StmtNode(_node_type), value(std::move(v)) {}
    static Stmt make(Expr v);
};

// ---------------- helpers ----------------
Expr make_const(Type t, int64_t v);
Expr make_const(Type t, double v);
Expr make_zero(Type t);
Expr make_one(Type t);
Expr make_bool(bool b, int lanes = 1);
/** If e is an integer constant (IntImm/UIntImm, or a Broadcast of one), sets *v. */
bool is_const_int(const Expr &e, int64_t *v = nullptr);
bool is_const(const Expr &e);
bool is_const_zero(const Expr &e);
bool is_const_one(const Expr &e);
bool is_true(const Expr &e);   // constant true
bool is_false(const Expr &e);  // constant false
const int64_t *as_const_int(const Expr &e);

std::ostream &operator<<(std::ostream &os, const Expr &e);
std::ostream &operator<<(std::ostream &os, const Stmt &s);
std::string to_string(const Stmt &s);

/** The name of a buffer's shape field, a variable of Int(32): "in.min.0" (field "min",
    "extent" or "stride"). Every place that makes or reads these names uses this. */
std::string buffer_field(const std::string &buffer, const char *field, int dim);

[[noreturn]] void user_error(const std::string &msg);
[[noreturn]] void internal_error(const std::string &msg, const char *file, int line);
#define WEFT_ASSERT(c, msg)                                                     \
    do {                                                                        \
        if (!(c)) ::weft::internal::internal_error(std::string(msg), __FILE__, __LINE__); \
    } while (0)

}  // namespace internal
}  // namespace weft
