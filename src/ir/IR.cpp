#include "ir/IR.h"
#include <set>
#include <atomic>
#include <cstring>
#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

namespace weft {
namespace internal {

const Call *tuple_call(const Expr &value) {
    auto c = value.as<Call>();
    return c && c->is_intrinsic("tuple") ? c : nullptr;
}
Expr tuple_value(const Expr &value, int i) {
    auto c = tuple_call(value);
    return c ? c->args.at((size_t)i) : value;
}

namespace {
/** The nodes waiting to be destroyed by the outermost release_last() running on this thread. */
thread_local std::vector<std::shared_ptr<const void>> *tl_pending = nullptr;
}  // namespace

// (declared in weft/Expr.h; here, with the IR, so that src/ir stands alone, as the fuzzer builds it)
std::string unique_name(char prefix) {
    static std::atomic<int> counter{0};
    return std::string(1, prefix) + std::to_string(counter++);
}

bool is_libm_call(const std::string &name) {
    static const std::set<std::string> names = {"tanh", "tan",   "atan",  "asin",  "acos", "sinh",
                                                "cosh", "asinh", "acosh", "atanh", "atan2", "hypot"};
    return names.count(name) > 0;
}

std::string buffer_field(const std::string &buffer, const char *field, int dim) {
    return buffer + "." + field + "." + std::to_string(dim);
}

void release_last(std::shared_ptr<const void> p) noexcept {
    if (tl_pending) {
        try {
            tl_pending->push_back(std::move(p));  // destroyed by the loop below, not by recursion
        } catch (...) {
            p.reset();  // (out of memory: destroyed here)
        }
        return;
    }
    std::vector<std::shared_ptr<const void>> pending;
    tl_pending = &pending;
    p.reset();  // the node's own Exprs and Stmts that held their last reference land in pending
    while (!pending.empty()) {
        std::shared_ptr<const void> q = std::move(pending.back());
        pending.pop_back();
        q.reset();
    }
    tl_pending = nullptr;
}

IRNodeType node_type_of(const ExprNode *n) { return n->node_type; }
Type type_of_node(const ExprNode *n) {
    if (!n) throw Error("weft: use of an undefined Expr");
    return n->type;
}

void user_error(const std::string &msg) { throw Error(msg); }
void internal_error(const std::string &msg, const char *file, int line) {
    throw Error("weft internal error at " + std::string(file) + ":" + std::to_string(line) + ": " + msg);
}

static int64_t wrap_int(Type t, int64_t v) {
    int b = t.bits();
    if (b >= 64) return v;
    uint64_t m = (uint64_t(1) << b) - 1;
    uint64_t u = uint64_t(v) & m;
    if (u >> (b - 1)) u |= ~m;  // sign extend
    return (int64_t)u;
}
static uint64_t wrap_uint(Type t, uint64_t v) {
    int b = t.bits();
    if (b >= 64) return v;
    return v & ((uint64_t(1) << b) - 1);
}

Expr IntImm::make(Type t, int64_t v) {
    WEFT_ASSERT(t.is_int() && t.is_scalar(), "IntImm of non-int type");
    return Expr(std::make_shared<IntImm>(t, wrap_int(t, v)));
}
Expr UIntImm::make(Type t, uint64_t v) {
    WEFT_ASSERT((t.is_uint() || t.is_bool()) && t.is_scalar(), "UIntImm of bad type");
    if (t.is_bool()) v = v ? 1 : 0;
    return Expr(std::make_shared<UIntImm>(t, wrap_uint(t, v)));
}
Expr FloatImm::make(Type t, double v) {
    WEFT_ASSERT(t.is_float() && t.is_scalar(), "FloatImm of non-float type");
    v = round_to_float_type(t, v);
    return Expr(std::make_shared<FloatImm>(t, v));
}
Expr StringImm::make(const std::string &v) { return Expr(std::make_shared<StringImm>(v)); }
Expr Variable::make(Type t, const std::string &n) { return Expr(std::make_shared<Variable>(t, n)); }
Expr Cast::make(Type t, Expr v) {
    WEFT_ASSERT(v.defined(), "Cast of undefined");
    WEFT_ASSERT(t.lanes() == v.type().lanes(), "Cast changes lanes");
    return Expr(std::make_shared<Cast>(t, std::move(v)));
}

template <IRNodeType NT>
Expr BinaryNode<NT>::make(Expr a, Expr b) {
    WEFT_ASSERT(a.defined() && b.defined(), "binary op of undefined Expr");
    WEFT_ASSERT(a.type() == b.type(), "binary op of mismatched types " + a.type().str() + " and " + b.type().str());
    Type t = a.type();
    if (NT == IRNodeType::EQ || NT == IRNodeType::NE || NT == IRNodeType::LT || NT == IRNodeType::LE ||
        NT == IRNodeType::GT || NT == IRNodeType::GE)
        t = Bool(t.lanes());
    if (NT == IRNodeType::And || NT == IRNodeType::Or) WEFT_ASSERT(t.is_bool(), "And/Or of non-bool");
    return Expr(std::make_shared<BinaryNode<NT>>(t, std::move(a), std::move(b)));
}
template struct BinaryNode<IRNodeType::Add>;
template struct BinaryNode<IRNodeType::Sub>;
template struct BinaryNode<IRNodeType::Mul>;
template struct BinaryNode<IRNodeType::Div>;
template struct BinaryNode<IRNodeType::Mod>;
template struct BinaryNode<IRNodeType::Min>;
template struct BinaryNode<IRNodeType::Max>;
template struct BinaryNode<IRNodeType::EQ>;
template struct BinaryNode<IRNodeType::NE>;
template struct BinaryNode<IRNodeType::LT>;
template struct BinaryNode<IRNodeType::LE>;
template struct BinaryNode<IRNodeType::GT>;
template struct BinaryNode<IRNodeType::GE>;
template struct BinaryNode<IRNodeType::And>;
template struct BinaryNode<IRNodeType::Or>;

Expr Not::make(Expr a) {
    WEFT_ASSERT(a.type().is_bool(), "Not of non-bool");
    Type t = a.type();
    return Expr(std::make_shared<Not>(t, std::move(a)));
}
Expr Select::make(Expr c, Expr t, Expr f) {
    WEFT_ASSERT(c.defined() && t.defined() && f.defined(), "Select of undefined");
    WEFT_ASSERT(c.type().is_bool(), "Select condition not bool");
    WEFT_ASSERT(t.type() == f.type(), "Select of mismatched types " + t.type().str() + " and " + f.type().str());
    WEFT_ASSERT(c.type().lanes() == 1 || c.type().lanes() == t.type().lanes(), "Select lanes mismatch");
    Type ty = t.type();
    return Expr(std::make_shared<Select>(ty, std::move(c), std::move(t), std::move(f)));
}
Expr Load::make(Type t, const std::string &name, Expr index, int alignment) {
    WEFT_ASSERT(index.type().element_of() == Int(32), "Load index not int32");
    auto n = std::make_shared<Load>(t.with_lanes(index.type().lanes()), name, std::move(index));
    n->alignment = alignment;
    return Expr(n);
}
Expr Ramp::make(Expr base, Expr stride, int lanes) {
    WEFT_ASSERT(base.type().is_scalar() && base.type() == stride.type(), "bad Ramp");
    WEFT_ASSERT(lanes > 1, "Ramp of < 2 lanes");
    Type t = base.type().with_lanes(lanes);
    return Expr(std::make_shared<Ramp>(t, std::move(base), std::move(stride), lanes));
}
Expr Broadcast::make(Expr value, int lanes) {
    WEFT_ASSERT(value.type().is_scalar(), "Broadcast of vector");
    if (lanes == 1) return value;
    Type t = value.type().with_lanes(lanes);
    return Expr(std::make_shared<Broadcast>(t, std::move(value), lanes));
}
Expr Let::make(const std::string &name, Expr value, Expr body) {
    WEFT_ASSERT(value.defined() && body.defined(), "Let of undefined");
    Type t = body.type();
    return Expr(std::make_shared<Let>(t, name, std::move(value), std::move(body)));
}
Expr VectorReduce::make(Op op, Expr value, int lanes) {
    WEFT_ASSERT(value.type().lanes() % lanes == 0, "VectorReduce lanes must divide");
    Type t = value.type().with_lanes(lanes);
    return Expr(std::make_shared<VectorReduce>(t, op, std::move(value)));
}
Expr Call::make(Type t, const std::string &name, std::vector<Expr> args, CallType ct) {
    for (auto &a : args) WEFT_ASSERT(a.defined(), "Call with undefined argument");
    return Expr(std::make_shared<Call>(t, name, std::move(args), ct));
}

Stmt LetStmt::make(const std::string &name, Expr value, Stmt body) {
    WEFT_ASSERT(value.defined() && body.defined(), "LetStmt of undefined");
    return Stmt(std::make_shared<LetStmt>(name, std::move(value), std::move(body)));
}
Stmt AssertStmt::make(Expr cond, const std::string &message, std::vector<Expr> args) {
    return Stmt(std::make_shared<AssertStmt>(std::move(cond), message, std::move(args)));
}
Stmt For::make(const std::string &name, Expr min, Expr extent, ForType ft, Stmt body) {
    WEFT_ASSERT(min.defined() && extent.defined() && body.defined(), "For of undefined");
    WEFT_ASSERT(min.type() == Int(32) && extent.type() == Int(32), "For bounds must be int32");
    return Stmt(std::make_shared<For>(name, std::move(min), std::move(extent), ft, std::move(body)));
}
Stmt Store::make(const std::string &name, Expr value, Expr index, int alignment, bool nontemporal, bool atomic) {
    WEFT_ASSERT(value.type().lanes() == index.type().lanes(), "Store lanes mismatch");
    auto n = std::make_shared<Store>(name, std::move(value), std::move(index));
    n->alignment = alignment;
    n->nontemporal = nontemporal;
    n->atomic = atomic;
    return Stmt(n);
}
Stmt Provide::make(const std::string &name, Expr value, std::vector<Expr> args, bool atomic) {
    auto n = std::make_shared<Provide>(name, std::move(value), std::move(args));
    n->atomic = atomic;
    return Stmt(n);
}
Stmt Realize::make(const std::string &name, Type t, Region bounds, MemoryType m, Stmt body) {
    return Stmt(std::make_shared<Realize>(name, t, std::move(bounds), m, std::move(body)));
}
Stmt Allocate::make(const std::string &name, Type t, Expr extent, MemoryType m, Stmt body) {
    return Stmt(std::make_shared<Allocate>(name, t, std::move(extent), m, std::move(body)));
}
Stmt Block::make(Stmt first, Stmt rest) {
    if (!first.defined()) return rest;
    if (!rest.defined()) return first;
    return Stmt(std::make_shared<Block>(std::move(first), std::move(rest)));
}
Stmt Block::make(const std::vector<Stmt> &stmts) {
    Stmt r;
    for (auto it = stmts.rbegin(); it != stmts.rend(); ++it) r = make(*it, r);
    return r;
}
Stmt IfThenElse::make(Expr c, Stmt t, Stmt e) {
    WEFT_ASSERT(c.defined() && t.defined(), "IfThenElse of undefined");
    return Stmt(std::make_shared<IfThenElse>(std::move(c), std::move(t), std::move(e)));
}
Stmt Evaluate::make(Expr v) { return Stmt(std::make_shared<Evaluate>(std::move(v))); }

Expr make_const(Type t, int64_t v) {
    if (t.is_vector()) return Broadcast::make(make_const(t.element_of(), v), t.lanes());
    if (t.is_int()) return IntImm::make(t, v);
    if (t.is_uint() || t.is_bool()) return UIntImm::make(t, (uint64_t)v);
    if (t.is_float()) return FloatImm::make(t, (double)v);
    internal_error("make_const of bad type " + t.str(), __FILE__, __LINE__);
}
Expr make_const(Type t, double v) {
    if (t.is_vector()) return Broadcast::make(make_const(t.element_of(), v), t.lanes());
    if (t.is_float()) return FloatImm::make(t, v);
    return make_const(t, (int64_t)v);
}
Expr make_zero(Type t) { return make_const(t, (int64_t)0); }
Expr make_one(Type t) { return make_const(t, (int64_t)1); }
Expr make_bool(bool b, int lanes) { return make_const(Bool(lanes), (int64_t)b); }

bool is_const_int(const Expr &e, int64_t *v) {
    if (!e.defined()) return false;
    if (auto b = e.as<Broadcast>()) return is_const_int(b->value, v);
    if (auto i = e.as<IntImm>()) {
        if (v) *v = i->value;
        return true;
    }
    if (auto u = e.as<UIntImm>()) {
        if (u->value > (uint64_t)INT64_MAX) return false;
        if (v) *v = (int64_t)u->value;
        return true;
    }
    return false;
}
const int64_t *as_const_int(const Expr &e) {
    if (auto i = e.as<IntImm>()) return &i->value;
    return nullptr;
}
bool is_const(const Expr &e) {
    if (!e.defined()) return false;
    if (auto b = e.as<Broadcast>()) return is_const(b->value);
    return e.as<IntImm>() || e.as<UIntImm>() || e.as<FloatImm>();
}
bool is_const_zero(const Expr &e) {
    if (auto f = e.as<FloatImm>()) return f->value == 0.0;
    if (auto b = e.as<Broadcast>()) return is_const_zero(b->value);
    int64_t v;
    return is_const_int(e, &v) && v == 0;
}
bool is_const_one(const Expr &e) {
    if (auto f = e.as<FloatImm>()) return f->value == 1.0;
    if (auto b = e.as<Broadcast>()) return is_const_one(b->value);
    int64_t v;
    return is_const_int(e, &v) && v == 1;
}
bool is_true(const Expr &e) { return e.defined() && e.type().is_bool() && is_const_one(e); }
bool is_false(const Expr &e) { return e.defined() && e.type().is_bool() && is_const_zero(e); }

}  // namespace internal

// ---- float types' values ----
namespace internal {
double round_to_float_type(Type t, double v) {
    switch (t.bits()) {
    case 16: return t.is_bfloat() ? (double)bfloat16_t(v) : (double)float16_t(v);
    case 32: return (double)(float)v;
    default: return v;
    }
}
double largest_finite_float(Type t) {
    if (t.bits() == 16) return t.is_bfloat() ? (double)bfloat16_t::from_bits(0x7f7f) : 65504.0;
    return t.bits() == 32 ? (double)std::numeric_limits<float>::max() : std::numeric_limits<double>::max();
}
double float_from_bytes(Type t, const void *p) {
    if (t.bits() == 16) {
        uint16_t b;
        std::memcpy(&b, p, 2);
        return t.is_bfloat() ? (double)bfloat16_t::from_bits(b) : (double)float16_t::from_bits(b);
    }
    if (t.bits() == 32) {
        float f;
        std::memcpy(&f, p, 4);
        return f;
    }
    double d;
    std::memcpy(&d, p, 8);
    return d;
}
void float_to_bytes(Type t, double v, void *p) {
    if (t.bits() == 16) {
        uint16_t b = t.is_bfloat() ? bfloat16_t(v).bits : float16_t(v).bits;
        std::memcpy(p, &b, 2);
    } else if (t.bits() == 32) {
        float f = (float)v;
        std::memcpy(p, &f, 4);
    } else {
        std::memcpy(p, &v, 8);
    }
}
}  // namespace internal

// ---- Type methods that need Expr ----
Expr Type::max() const {
    using namespace internal;
    Type t = element_of();
    Expr r;
    if (is_int()) r = IntImm::make(t, bits() == 64 ? INT64_MAX : (int64_t(1) << (bits() - 1)) - 1);
    else if (is_uint()) r = UIntImm::make(t, bits() == 64 ? UINT64_MAX : (uint64_t(1) << bits()) - 1);
    else if (is_bool()) r = UIntImm::make(t, 1);
    else if (is_float()) r = FloatImm::make(t, largest_finite_float(t));
    else user_error("Type::max of " + str());
    return lanes() > 1 ? Broadcast::make(r, lanes()) : r;
}
Expr Type::min() const {
    using namespace internal;
    Type t = element_of();
    Expr r;
    if (is_int()) r = IntImm::make(t, bits() == 64 ? INT64_MIN : -(int64_t(1) << (bits() - 1)));
    else if (is_uint() || is_bool()) r = make_zero(t);
    else if (is_float()) r = FloatImm::make(t, -largest_finite_float(t));
    else user_error("Type::min of " + str());
    return lanes() > 1 ? Broadcast::make(r, lanes()) : r;
}
bool Type::can_represent(int64_t v) const {
    if (is_int()) return bits() >= 64 || (v >= -(int64_t(1) << (bits() - 1)) && v < (int64_t(1) << (bits() - 1)));
    if (is_uint()) return v >= 0 && (bits() >= 64 || v < (int64_t(1) << bits()));
    if (is_bool()) return v == 0 || v == 1;
    if (is_float()) {
        double d = internal::round_to_float_type(*this, (double)v);
        return std::fabs(d) < 9.2e18 && (int64_t)d == v;
    }
    return false;
}
std::string Type::str() const {
    std::string s;
    switch (code_) {
    case TypeCode::Int: s = "int" + std::to_string(bits_); break;
    case TypeCode::UInt: s = "uint" + std::to_string(bits_); break;
    case TypeCode::Float: s = "float" + std::to_string(bits_); break;
    case TypeCode::Bool: s = "bool"; break;
    case TypeCode::Handle: s = "handle"; break;
    case TypeCode::BFloat: s = "bfloat" + std::to_string(bits_); break;
    }
    if (lanes_ != 1) s += "x" + std::to_string(lanes_);
    return s;
}

}  // namespace weft
