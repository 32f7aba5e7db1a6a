// Func, Stage, Var, RDom, ImageParam, Param, Buffer: turning user code into definitions and schedules.
#include <sstream>
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <set>
#include "ir/BindShared.h"
#include "ir/IRVisitor.h"
#include "ir/Simplify.h"
#include "lang/Function.h"

namespace weft {
using namespace internal;

namespace internal {
std::atomic<uint64_t> g_definition_epoch{1};
std::atomic<uint64_t> g_kernel_generation{0};

std::string stage_name(const FunctionContents &f, int stage) {
    return stage == 0 ? "Func \"" + f.name + "\"" : "Func \"" + f.name + "\".update(" + std::to_string(stage - 1) + ")";
}
Definition &stage_definition(FunctionContents &f, int stage) {
    if (stage == 0) return f.init;
    return f.updates.at(stage - 1);
}

// ---- buffers ----
size_t BufferContents::size_in_bytes() const { return (size_t)num_elements() * type.bytes(); }
int64_t BufferContents::num_elements() const {
    int64_t n = 1;
    for (int i = 0; i < dims; i++) n *= dim[i].extent;
    return n;
}
void buffer_error(const std::string &msg) { throw Error("weft: " + msg); }

void check_supported_type(Type t, const std::string &what) {
    Type e = t.element_of();
    if (e.is_bool() || e.is_handle()) return;
    int b = e.bits();
    if (e.is_bfloat() ? b != 16 : e.is_float() ? (b != 16 && b != 32 && b != 64) : (b != 8 && b != 16 && b != 32 && b != 64))
        user_error("weft: " + what + ": " + e.str() + " is not a supported type (integers have 8, 16, 32 or 64 bits, "
                   "floats 16, 32 or 64, bfloats 16)");
}

std::shared_ptr<BufferContents> make_buffer(Type t, const std::vector<int> &extents, void *data, const std::string &name) {
    if (extents.size() > (size_t)kMaxDims)
        buffer_error("Buffer \"" + name + "\": " + std::to_string(extents.size()) + " dimensions; at most " +
                     std::to_string(kMaxDims) + " are supported");
    if (t.is_handle() || t.is_vector()) buffer_error("Buffer \"" + name + "\": bad element type " + t.str());
    auto b = std::make_shared<BufferContents>();
    b->type = t;
    b->dims = (int)extents.size();
    b->name = name.empty() ? unique_name('b') : name;
    check_supported_type(t, "Buffer \"" + b->name + "\"");
    int64_t stride = 1;
    for (size_t i = 0; i < extents.size(); i++) {
        if (extents[i] < 0)
            buffer_error("Buffer \"" + b->name + "\" dimension " + std::to_string(i) + ": negative extent " +
                         std::to_string(extents[i]));
        b->dim[i].min = 0;
        b->dim[i].extent = extents[i];
        b->dim[i].stride = (int32_t)stride;
        stride *= std::max(extents[i], 1);
        if (stride > INT32_MAX) buffer_error("Buffer \"" + b->name + "\" is too large (more than 2^31 elements)");
    }
    if (data) {
        b->host = data;
    } else {
        size_t bytes = (size_t)stride * t.bytes();
        void *p = std::aligned_alloc(64, ((bytes + 63) / 64) * 64 + 64);
        if (!p) buffer_error("Buffer \"" + b->name + "\": out of memory");
        std::memset(p, 0, ((bytes + 63) / 64) * 64 + 64);
        b->storage = std::shared_ptr<void>(p, [](void *q) { std::free(q); });
        b->host = p;
    }
    return b;
}

std::shared_ptr<BufferContents> buffer_view(BufferContents &b, int d, int min, int extent, bool slice) {
    const char *what = slice ? "sliced" : "cropped";
    if (d < 0 || d >= b.dims)
        buffer_error("Buffer \"" + b.name + "\" has " + std::to_string(b.dims) + " dimensions; " + what + "(" +
                     std::to_string(d) + ", ...) names a dimension it does not have");
    const auto &dd = b.dim[d];
    if (extent < 0 || min < dd.min || (int64_t)min + extent > (int64_t)dd.min + dd.extent)
        buffer_error("Buffer \"" + b.name + "\" dimension " + std::to_string(d) + " holds [" + std::to_string(dd.min) +
                     ", " + std::to_string((int64_t)dd.min + dd.extent - 1) + "]; " + what + " to " +
                     (slice ? "position " + std::to_string(min)
                            : "[" + std::to_string(min) + ", " + std::to_string((int64_t)min + extent - 1) + "]") +
                     " is outside it");
    if (b.device_dirty) buffer_copy_to_host(b);
    if (b.device) b.host_dirty = true;  // the view may be written through
    auto v = std::make_shared<BufferContents>();
    v->type = b.type;
    v->name = b.name + "_" + (slice ? "slice" : "crop") + unique_name('v');
    v->storage = b.storage;
    v->host = b.host ? (char *)b.host + ((int64_t)min - dd.min) * dd.stride * b.type.bytes() : nullptr;
    v->dims = 0;
    for (int i = 0; i < b.dims; i++) {
        if (i == d && slice) continue;
        v->dim[v->dims] = b.dim[i];
        if (i == d) v->dim[v->dims].min = min, v->dim[v->dims].extent = extent;
        v->dims++;
    }
    return v;
}
void buffer_view_in_place(BufferContents &b, int d, int min, int extent, bool slice) {
    std::shared_ptr<BufferContents> v = buffer_view(b, d, min, extent, slice);
    b.dims = v->dims;
    for (int i = 0; i < kMaxDims; i++) b.dim[i] = v->dim[i];
    b.host = v->host;
    b.device = 0;  // (the device copy's layout is the old one's)
    b.device_storage.reset();
    b.host_dirty = b.device_dirty = false;
}
std::shared_ptr<BufferContents> buffer_copy(BufferContents &b) {
    if (b.device_dirty) buffer_copy_to_host(b);
    std::vector<int> ext;
    for (int i = 0; i < b.dims; i++) ext.push_back(b.dim[i].extent);
    auto c = make_buffer(b.type, ext, nullptr, b.name + "_copy" + unique_name('v'));
    for (int i = 0; i < b.dims; i++) c->dim[i].min = b.dim[i].min;
    const int bytes = b.type.bytes();
    for_each_position(b, [&](const int *pos) {
        int64_t from = 0, to = 0;
        for (int i = 0; i < b.dims; i++) {
            from += (int64_t)(pos[i] - b.dim[i].min) * b.dim[i].stride;
            to += (int64_t)(pos[i] - c->dim[i].min) * c->dim[i].stride;
        }
        std::memcpy((char *)c->host + to * bytes, (const char *)b.host + from * bytes, bytes);
    });
    return c;
}

static bool is_implicit_placeholder(const Expr &e) {
    auto v = e.as<Variable>();
    return v && v->name == "_" && !v->rdom && !v->param;
}

/** args with the placeholder `_` replaced by the implicit Vars _0, _1, ... that make them dims
    arguments (unchanged without a placeholder). who: "Func \"f\"" and the like, for errors. */
static std::vector<Expr> expand_implicit(const std::vector<Expr> &args, int dims, const std::string &who) {
    int at = -1;
    for (size_t i = 0; i < args.size(); i++)
        if (is_implicit_placeholder(args[i])) {
            if (at >= 0) user_error("weft: " + who + ": at most one _ (the implicit Vars) in an argument list");
            at = (int)i;
        }
    if (at < 0) return args;
    int n = dims - (int)(args.size() - 1);
    if (n < 0)
        user_error("weft: " + who + " has " + std::to_string(dims) + " dimensions but is called with " +
                   std::to_string(args.size() - 1) + " arguments besides _");
    std::vector<Expr> r(args.begin(), args.begin() + at);
    for (int i = 0; i < n; i++) r.push_back(Var("_" + std::to_string(i)));
    r.insert(r.end(), args.begin() + at + 1, args.end());
    return r;
}

/** How many implicit Vars (_0, _1, ...) e uses: one more than the largest index. */
static int implicit_vars_used(const Expr &e) {
    class Find : public IRVisitor {
    public:
        int n = 0;

    protected:
        void visit(const Variable *op) override {
            const std::string &s = op->name;
            if (op->rdom || op->param || s.size() < 2 || s.size() > 4 || s[0] != '_' ||
                s.find_first_not_of("0123456789", 1) != std::string::npos)
                return;
            n = std::max(n, std::stoi(s.substr(1)) + 1);
        }
    } f;
    f.include(e);
    return f.n;
}

Expr buffer_call(const std::shared_ptr<BufferContents> &b, std::vector<Expr> args) {
    if (!b) user_error("weft: use of an undefined Buffer in a definition");
    args = expand_implicit(args, b->dims, "Buffer \"" + b->name + "\"");
    if ((int)args.size() != b->dims)
        user_error("weft: Buffer \"" + b->name + "\" has " + std::to_string(b->dims) + " dimensions but is called with " +
                   std::to_string(args.size()) + " arguments");
    for (auto &a : args) {
        if (!a.defined()) user_error("weft: Buffer \"" + b->name + "\" called with an undefined argument");
        if (!a.type().is_int_or_uint() || a.type().is_vector())
            user_error("weft: Buffer \"" + b->name + "\" coordinates must be integers, got " + a.type().str() + " (" +
                       to_string(a) + ")");
        if (a.type() != Int(32)) a = Cast::make(Int(32), a);
    }
    auto c = std::make_shared<Call>(b->type, b->name, std::move(args), Call::Image);
    c->buffer = b;
    return Expr(c);
}

Expr param_expr(const std::shared_ptr<ParamContents> &p) {
    auto v = std::make_shared<Variable>(p->type, p->name);
    v->param = p;
    return Expr(v);
}
}  // namespace internal

// ---------------- Var / RVar / RDom ----------------
Var::Var() : name_(unique_name('v')) {}
const Var _("_"), _0("_0"), _1("_1"), _2("_2"), _3("_3"), _4("_4"), _5("_5"), _6("_6"), _7("_7"), _8("_8"), _9("_9");
RVar::RVar() : name_(unique_name('k')) {}
Var::operator Expr() const { return Variable::make(Int(32), name_); }

RVar::RVar(std::shared_ptr<ReductionDomainContents> d, int index) : dom_(std::move(d)), index_(index) {
    name_ = dom_->domain.at(index).var;
}
Expr RVar::min() const {
    if (!dom_) user_error("weft: RVar \"" + name_ + "\" is not part of an RDom");
    return dom_->domain[index_].min;
}
Expr RVar::extent() const {
    if (!dom_) user_error("weft: RVar \"" + name_ + "\" is not part of an RDom");
    return dom_->domain[index_].extent;
}
RVar::operator Expr() const {
    if (!dom_) user_error("weft: RVar \"" + name_ + "\" names a loop for scheduling only; it cannot be used in an Expr");
    auto v = std::make_shared<Variable>(Int(32), name_);
    v->rdom = dom_;
    return Expr(v);
}

RDom::RDom(const std::vector<std::pair<Expr, Expr>> &ranges, const std::string &name) {
    if (ranges.empty() || ranges.size() > 4) user_error("weft: an RDom has 1 to 4 dimensions");
    dom_ = std::make_shared<ReductionDomainContents>();
    dom_->name = name.empty() ? unique_name('r') : name;
    static const char *suffix[] = {".x", ".y", ".z", ".w"};
    for (size_t i = 0; i < ranges.size(); i++) {
        Expr mi = ranges[i].first, ex = ranges[i].second;
        if (!mi.defined() || !ex.defined()) user_error("weft: RDom \"" + dom_->name + "\": undefined bound");
        if (!mi.type().is_int_or_uint() || !ex.type().is_int_or_uint())
            user_error("weft: RDom \"" + dom_->name + "\" bounds must be integers, got " + mi.type().str() + " and " +
                       ex.type().str());
        mi = cast(Int(32), mi);
        ex = cast(Int(32), ex);
        int64_t e, m;
        if (is_const_int(ex, &e) && e < 0)
            user_error("weft: RDom \"" + dom_->name + "\" dimension " + std::to_string(i) + " has negative extent " +
                       std::to_string(e));
        if (is_const_int(ex, &e) && is_const_int(mi, &m) && m + e > INT32_MAX)  // 32-bit coordinates, and loop ends
            user_error("weft: RDom \"" + dom_->name + "\" dimension " + std::to_string(i) + ": min + extent = " +
                       std::to_string(m + e) + " is past the largest 32-bit integer");
        dom_->domain.push_back({dom_->name + suffix[i], mi, ex});
    }
    init();
}
RDom::RDom(Expr m0, Expr e0, const std::string &n) : RDom(std::vector<std::pair<Expr, Expr>>{{m0, e0}}, n) {}
RDom::RDom(Expr m0, Expr e0, Expr m1, Expr e1, const std::string &n)
    : RDom(std::vector<std::pair<Expr, Expr>>{{m0, e0}, {m1, e1}}, n) {}
RDom::RDom(Expr m0, Expr e0, Expr m1, Expr e1, Expr m2, Expr e2, const std::string &n)
    : RDom(std::vector<std::pair<Expr, Expr>>{{m0, e0}, {m1, e1}, {m2, e2}}, n) {}
RDom::RDom(Expr m0, Expr e0, Expr m1, Expr e1, Expr m2, Expr e2, Expr m3, Expr e3, const std::string &n)
    : RDom(std::vector<std::pair<Expr, Expr>>{{m0, e0}, {m1, e1}, {m2, e2}, {m3, e3}}, n) {}
static std::vector<std::pair<Expr, Expr>> buffer_ranges(const Buffer<void> &b) {
    if (!b.defined()) user_error("weft: RDom over an undefined Buffer");
    std::vector<std::pair<Expr, Expr>> r;
    for (int i = 0; i < b.dimensions(); i++) r.push_back({b.dim(i).min(), b.dim(i).extent()});
    return r;
}
RDom::RDom(const Buffer<void> &b) : RDom(buffer_ranges(b)) {}
static std::vector<std::pair<Expr, Expr>> param_ranges(const ImageParam &p) {
    std::vector<std::pair<Expr, Expr>> r;
    for (int i = 0; i < p.dimensions(); i++) r.push_back({p.min(i), p.extent(i)});
    return r;
}
RDom::RDom(const ImageParam &p) : RDom(param_ranges(p)) {}
void RDom::init() {
    RVar *slots[] = {&x, &y, &z, &w};
    for (size_t i = 0; i < dom_->domain.size(); i++) *slots[i] = RVar(dom_, (int)i);
}
int RDom::dimensions() const { return dom_ ? (int)dom_->domain.size() : 0; }
RVar RDom::operator[](int i) const {
    if (i < 0 || i >= dimensions())
        user_error("weft: RDom \"" + (dom_ ? dom_->name : std::string("?")) + "\" has no dimension " + std::to_string(i));
    return RVar(dom_, i);
}
RDom::operator RVar() const {
    if (dimensions() != 1)
        user_error("weft: only a one-dimensional RDom converts to an RVar (this one has " + std::to_string(dimensions()) +
                   ")");
    return RVar(dom_, 0);
}
RDom::operator Expr() const { return Expr(RVar(*this)); }
RDom RDom::where(Expr cond) {
    if (!dom_) user_error("weft: where() on an undefined RDom");
    if (!cond.defined() || !cond.type().is_bool())
        user_error("weft: RDom \"" + dom_->name + "\".where() needs a bool condition");
    // The domain's own RVars are referred to by name inside its predicate (no ownership cycle).
    class Strip : public IRMutator {
    public:
        const ReductionDomainContents *d;

    protected:
        Expr visit(const Variable *op, const Expr &e) override {
            return op->rdom.get() == d ? Variable::make(op->type, op->name) : e;
        }
    } strip;
    strip.d = dom_.get();
    cond = strip.mutate(bind_shared_subexpressions(cond));
    dom_->predicate = dom_->predicate.defined() ? (dom_->predicate && cond) : cond;
    changed(dom_->changes);
    return *this;
}

// ---------------- ImageParam ----------------
ImageParam::ImageParam(Type t, int dims, const std::string &name) : c_(std::make_shared<ImageParamContents>()) {
    if (dims < 0 || dims > kMaxDims) user_error("weft: ImageParam \"" + name + "\": bad dimension count " + std::to_string(dims));
    check_supported_type(t, "ImageParam \"" + name + "\"");
    c_->name = name.empty() ? unique_name('i') : name;
    c_->type = t;
    c_->dims = dims;
}
static void check_image(const std::shared_ptr<ImageParamContents> &c) {
    if (!c) user_error("weft: use of an undefined ImageParam");
}
Expr ImageParam::operator()(const std::vector<Expr> &args_in) const {
    check_image(c_);
    std::vector<Expr> args = expand_implicit(args_in, c_->dims, "ImageParam \"" + c_->name + "\"");
    if ((int)args.size() != c_->dims)
        user_error("weft: ImageParam \"" + c_->name + "\" has " + std::to_string(c_->dims) +
                   " dimensions but is called with " + std::to_string(args.size()) + " arguments");
    std::vector<Expr> a = args;
    for (auto &e : a) {
        if (!e.defined()) user_error("weft: ImageParam \"" + c_->name + "\" called with an undefined argument");
        if (!e.type().is_int_or_uint() || e.type().is_vector())
            user_error("weft: ImageParam \"" + c_->name + "\" coordinates must be integers, got " + e.type().str());
        if (e.type() != Int(32)) e = Cast::make(Int(32), e);
    }
    auto call = std::make_shared<Call>(c_->type, c_->name, std::move(a), Call::Image);
    call->image = c_;
    return Expr(call);
}
void ImageParam::set(const Buffer<void> &b) {
    check_image(c_);
    if (!b.defined()) user_error("weft: ImageParam \"" + c_->name + "\".set() given an undefined Buffer");
    if (b.type() != c_->type)
        user_error("weft: ImageParam \"" + c_->name + "\" has type " + c_->type.str() + " but was given a buffer of " +
                   b.type().str());
    if (b.dimensions() != c_->dims)
        user_error("weft: ImageParam \"" + c_->name + "\" has " + std::to_string(c_->dims) +
                   " dimensions but was given a buffer of " + std::to_string(b.dimensions()));
    c_->bound = b;
}
static Expr field(const std::shared_ptr<ImageParamContents> &c, const char *f, int d) {
    check_image(c);
    if (d < 0 || d >= c->dims)
        user_error("weft: ImageParam \"" + c->name + "\" has no dimension " + std::to_string(d));
    return Variable::make(Int(32), buffer_field(c->name, f, d));
}
Expr ImageParam::min(int d) const { return field(c_, "min", d); }
Expr ImageParam::extent(int d) const { return field(c_, "extent", d); }
Expr ImageParam::stride(int d) const { return field(c_, "stride", d); }
ParamDimension ImageParam::dim(int d) const {
    return ParamDimension(field(c_, "min", d), field(c_, "extent", d), field(c_, "stride", d));
}
Expr ParamDimension::max() const { return min_ + extent_ - 1; }

std::string internal::param_range_error(const ParamContents &p, const void *bytes) {
    if (!p.has_min && !p.has_max) return "";
    Type t = p.type;
    auto num = [&](const void *b) -> long double {
        if (t.is_float()) return float_from_bytes(t, b);
        if (t.is_bool()) return *(const unsigned char *)b != 0;
        uint64_t u = 0;
        std::memcpy(&u, b, t.bytes());
        if (t.is_uint()) return (long double)u;
        int sh = 64 - t.bits();
        return (long double)(sh ? ((int64_t)(u << sh) >> sh) : (int64_t)u);
    };
    auto show = [&](const void *b) {
        long double v = num(b);
        std::ostringstream o;
        if (t.is_float()) o.precision(9);
        o << (t.is_float() ? (double)v : v);
        return o.str();
    };
    long double v = num(bytes);
    bool bad = v != v || (p.has_min && v < num(p.range_min.bytes)) || (p.has_max && v > num(p.range_max.bytes));
    if (!bad) return "";
    return "weft: Param \"" + p.name + "\" is " + show(bytes) + ", outside its range [" +
           (p.has_min ? show(p.range_min.bytes) : std::string("-inf")) + ", " +
           (p.has_max ? show(p.range_max.bytes) : std::string("inf")) + "]";
}

// ---------------- FuncRef ----------------
void internal::check_func(const std::shared_ptr<FunctionContents> &f) {
    if (!f) user_error("weft: use of a null Func");
}
namespace {

/** Marks calls to f inside its own definition (self references are by name, to avoid cycles). */
class StripSelf : public IRMutator {
public:
    explicit StripSelf(const FunctionContents *f) : f(f) {}
    const FunctionContents *f;

protected:
    Expr visit(const Call *op, const Expr &e) override {
        Expr r = IRMutator::visit(op, e);
        auto c = r.as<Call>();
        if (c && c->call_type == Call::Func && c->func.get() == f) {
            auto n = std::make_shared<Call>(*c);
            n->func = nullptr;
            return Expr(n);
        }
        return r;
    }
};

class CollectDefVars : public IRVisitor {
public:
    std::set<std::string> pure;
    std::shared_ptr<ReductionDomainContents> rdom;
    std::string fname;
    std::set<std::string> lets;

protected:
    void visit(const Variable *op) override {
        if (op->rdom) {
            if (rdom && rdom != op->rdom)
                user_error("weft: definition of Func \"" + fname + "\" uses two RDoms (" + rdom->name + " and " +
                           op->rdom->name + "); use one RDom per definition");
            if (rdom == op->rdom) return;
            rdom = op->rdom;
            for (auto &rv : op->rdom->domain) lets.insert(rv.var);  // named plainly in the predicate
            include(op->rdom->predicate);
            for (auto &rv : op->rdom->domain) {
                include(rv.min);
                include(rv.extent);
            }
            return;
        }
        if (op->param || op->type.is_handle() || lets.count(op->name)) return;
        if (op->name.find('.') != std::string::npos) return;  // buffer fields (in.min.0)
        pure.insert(op->name);
    }
    void visit(const Let *op) override {
        include(op->value);
        lets.insert(op->name);
        include(op->body);
        lets.erase(op->name);
    }
};

std::string join_names(const std::vector<std::string> &v) {
    std::string s;
    for (auto &n : v) s += (s.empty() ? "" : ", ") + n;
    return s;
}
}  // namespace

FuncRef::operator Expr() const {
    check_func(f_);
    if (f_->defined && !f_->types.empty())
        user_error("weft: Func \"" + f_->name + "\" has a Tuple of " + std::to_string(f_->types.size()) +
                   " values at each point: call one of them, " + f_->name + "(...)[i], or take them all, Tuple(" +
                   f_->name + "(...))");
    return (*this)[0];
}

size_t FuncRef::size() const {
    check_func(f_);
    return f_->types.empty() ? 1 : f_->types.size();
}

Expr FuncRef::operator[](int index) const {
    check_func(f_);
    if (!f_->defined)
        user_error("weft: Func \"" + f_->name + "\" is called before it has a definition");
    if (index < 0 || (size_t)index >= size())
        user_error("weft: Func \"" + f_->name + "\"(...)[" + std::to_string(index) + "]: it has " + std::to_string(size()) +
                   (size() == 1 ? " value" : " values") + " at each point");
    std::vector<Expr> a = expand_implicit(args_, (int)f_->args.size(), "Func \"" + f_->name + "\"");
    if (a.size() != f_->args.size())
        user_error("weft: Func \"" + f_->name + "\" has " + std::to_string(f_->args.size()) +
                   " dimensions but is called with " + std::to_string(a.size()) + " arguments");
    for (size_t i = 0; i < a.size(); i++) {
        if (!a[i].defined()) user_error("weft: Func \"" + f_->name + "\" called with an undefined argument");
        if (!a[i].type().is_int_or_uint() || a[i].type().is_vector())
            user_error("weft: Func \"" + f_->name + "\" argument " + std::to_string(i) + " must be an integer, got " +
                       a[i].type().str() + " (" + to_string(a[i]) + ")");
        if (a[i].type() != Int(32)) a[i] = Cast::make(Int(32), a[i]);
    }
    auto c = std::make_shared<Call>(f_->types.empty() ? f_->type : f_->types[(size_t)index], f_->name, std::move(a), Call::Func);
    c->func = f_;
    c->value_index = index;
    return Expr(c);
}

FuncRef &FuncRef::operator=(const FuncRef &e) {
    if (e.size() > 1) return *this = Tuple(e);
    return *this = Expr(e);
}

void internal::check_one_value(const FunctionContents &f, const std::string &what) {
    if (!f.types.empty())
        user_error("weft: Func \"" + f.name + "\"." + what + ": not available for a Func defined with a Tuple (it has " +
                   std::to_string(f.types.size()) + " values at each point)");
}

FuncRef &FuncRef::operator=(const Tuple &t) {
    check_func(f_);
    FunctionContents &f = *f_;
    if (t.size() == 1) return *this = t[0];
    std::vector<Expr> values = t.as_vector();
    for (size_t i = 0; i < values.size(); i++) {
        Expr &v = values[i];
        if (!v.defined()) user_error("weft: Func \"" + f.name + "\" defined with a Tuple whose value " + std::to_string(i) + " is undefined");
        if (v.type().is_vector() || v.type().is_handle())
            user_error("weft: Func \"" + f.name + "\": value " + std::to_string(i) + " of its Tuple must be a scalar, got " + v.type().str());
    }
    if (f.defined) {
        if (f.types.size() != values.size())
            user_error("weft: update of Func \"" + f.name + "\" gives a Tuple of " + std::to_string(values.size()) +
                       " values, but its pure definition gives " +
                       (f.types.empty() ? std::string("one value") : std::to_string(f.types.size()) + " values"));
        for (size_t i = 0; i < values.size(); i++) {
            if (values[i].type() == f.types[i]) continue;
            Expr v = values[i], like = make_zero(f.types[i]);
            try {
                match_types(like, v, "=");
            } catch (const Error &) {
                v = Expr();  // (said below, naming the value)
            }
            if (!v.defined() || v.type() != f.types[i])
                user_error("weft: update of Func \"" + f.name + "\": value " + std::to_string(i) + " has type " +
                           values[i].type().str() + " but the Func's value " + std::to_string(i) + " has type " +
                           f.types[i].str() + "; use cast<>()");
            values[i] = v;
        }
    }
    return *this = Call::make_intrinsic(values[0].type(), "tuple", values);
}

/** The placeholder _ on the left of a definition: as many implicit Vars as the Func has
    dimensions left (an update), or as the value uses (a pure definition). */
static void expand_implicit_lhs(const internal::FunctionContents &f, std::vector<Expr> &args, const Expr &value) {
    if (std::none_of(args.begin(), args.end(), is_implicit_placeholder)) return;
    const std::string who = "Func \"" + f.name + "\"";
    if (f.defined) args = expand_implicit(args, (int)f.args.size(), who);
    else if (value.defined()) args = expand_implicit(args, (int)args.size() - 1 + implicit_vars_used(value), who);
}

FuncRef &FuncRef::operator=(Expr value) {
    check_func(f_);
    FunctionContents &f = *f_;
    if (!value.defined()) user_error("weft: Func \"" + f.name + "\" defined with an undefined Expr");
    const bool tuple = tuple_call(value) != nullptr;
    if (f.defined && !f.types.empty() && !tuple)
        user_error("weft: update of Func \"" + f.name + "\" gives one value, but its pure definition gives a Tuple of " +
                   std::to_string(f.types.size()) + "; give a Tuple of as many");
    if (f.defined && f.types.empty() && tuple)
        user_error("weft: update of Func \"" + f.name + "\" gives a Tuple of " + std::to_string(value.as<Call>()->args.size()) +
                   " values, but its pure definition gives one value");
    expand_implicit_lhs(f, args_, value);
    if (value.type().is_vector() || value.type().is_handle())
        user_error("weft: Func \"" + f.name + "\" must have a scalar value, got " + value.type().str());
    for (auto &a : args_)
        if (!a.defined()) user_error("weft: Func \"" + f.name + "\" defined with an undefined argument");
    value = bind_shared_subexpressions(value);  // (a graph with an exponentially larger tree)
    {
        // undef() is a pure definition's whole value, or nothing. (Looked for once shared
        // subexpressions are bound: the value may be a graph with an exponentially larger tree.)
        bool whole = is_undef(value);
        class FindUndef : public IRVisitor {
        public:
            bool found = false;

        protected:
            void visit(const Call *op) override {
                found |= op->is_intrinsic("undef");
                IRVisitor::visit(op);
            }
        } fu;
        if (!whole) fu.include(value);
        for (auto &a : args_) fu.include(bind_shared_subexpressions(a));
        if (fu.found || (whole && f.defined))
            user_error("weft: Func \"" + f.name + "\": undef() can only be the whole value of a pure definition "
                       "(\"no initial value\"); not inside an expression, an argument or an update");
    }
    CollectDefVars cv;
    cv.fname = f.name;
    if (!f.defined) {
        // Pure definition: distinct Vars as arguments.
        std::vector<std::string> names;
        for (size_t i = 0; i < args_.size(); i++) {
            auto v = args_[i].as<Variable>();
            if (!v || v->rdom || v->param || v->name.find('.') != std::string::npos)
                user_error("weft: the first definition of Func \"" + f.name + "\" must be pure: argument " +
                           std::to_string(i) + " (" + to_string(args_[i]) + ") is not a Var");
            if (std::find(names.begin(), names.end(), v->name) != names.end())
                user_error("weft: Func \"" + f.name + "\": Var \"" + v->name +
                           "\" appears twice in the arguments of its pure definition");
            names.push_back(v->name);
        }
        cv.include(value);
        if (cv.rdom)
            user_error("weft: the pure definition of Func \"" + f.name + "\" uses RDom \"" + cv.rdom->name +
                       "\"; use an update definition or sum()/maximum()/minimum()");
        for (auto &p : cv.pure)
            if (std::find(names.begin(), names.end(), p) == names.end())
                user_error("weft: the definition of Func \"" + f.name + "\" uses Var \"" + p +
                           "\", which is not one of its arguments (" + join_names(names) + ")");
        f.args = names;
        f.type = value.type();
        f.types.clear();
        if (tuple)
            for (auto &v : value.as<Call>()->args) f.types.push_back(v.type());
        f.init.args = args_;
        f.init.value = value;
        f.stage_schedules.assign(1, DefinitionSchedule{default_stage_schedule(names, args_, {}, false), {}});
        f.defined = true;
        changed(f);
        return *this;
    }
    // Update definition.
    if (args_.size() != f.args.size())
        user_error("weft: Func \"" + f.name + "\" has " + std::to_string(f.args.size()) +
                   " dimensions but an update gives " + std::to_string(args_.size()) + " arguments");
    if (value.type() != f.type) {
        Expr v = value, like = make_zero(f.type);
        match_types(like, v, "=");
        if (v.type() != f.type)
            user_error("weft: update of Func \"" + f.name + "\" has type " + value.type().str() + " but the Func has type " +
                       f.type.str() + "; use cast<>()");
        value = v;
    }
    std::vector<Expr> args = args_;
    for (size_t i = 0; i < args.size(); i++) {
        if (!args[i].type().is_int_or_uint() || args[i].type().is_vector())
            user_error("weft: update of Func \"" + f.name + "\": argument " + std::to_string(i) + " must be an integer");
        if (args[i].type() != Int(32)) args[i] = Cast::make(Int(32), args[i]);
    }
    std::set<std::string> lhs_pure;
    for (size_t i = 0; i < args.size(); i++) {
        auto v = args[i].as<Variable>();
        if (v && !v->rdom && !v->param && v->name.find('.') == std::string::npos) {
            if (v->name != f.args[i])
                user_error("weft: update of Func \"" + f.name + "\": pure Var \"" + v->name + "\" must appear in position " +
                           "of the pure definition's Var (argument " + std::to_string(i) + " is \"" + f.args[i] + "\")");
            lhs_pure.insert(v->name);
        }
    }
    for (auto &a : args) cv.include(a);
    cv.include(value);
    for (auto &p : cv.pure)
        if (!lhs_pure.count(p))
            user_error("weft: update of Func \"" + f.name + "\" uses Var \"" + p +
                       "\", which is not a pure argument of its left-hand side");
    Definition d;
    StripSelf strip(&f);
    for (auto &a : args) d.args.push_back(strip.mutate(a));
    d.value = strip.mutate(value);
    d.rdom = cv.rdom;
    std::vector<std::string> rvar_names;
    if (cv.rdom) for (auto &rv : cv.rdom->domain) rvar_names.push_back(rv.var);
    DefinitionSchedule ds{default_stage_schedule(f.args, d.args, rvar_names, true), {}};
    f.updates.push_back(std::move(d));
    f.stage_schedules.push_back(std::move(ds));
    changed(f);
    return *this;
}
/** Halide's meaning of f(args) += e (-=, *=, /=) on a Func with no definition yet: f first gets
    the pure definition f(vars) = identity (0 for + and -, 1 for * and /) of e's type, its Vars
    those of the update where it has a pure Var in that position, new ones elsewhere; so the pure
    stage can be scheduled with the update's Vars. */
static void define_identity(const std::shared_ptr<FunctionContents> &f, const std::vector<Expr> &args, const Expr &e,
                            int identity) {
    if (f->defined) return;
    if (!e.defined()) user_error("weft: Func \"" + f->name + "\" updated with an undefined Expr");
    std::vector<Expr> pure;
    std::set<std::string> used;
    for (const Expr &a : args) {
        auto v = a.defined() ? a.as<Variable>() : nullptr;
        if (v && !v->rdom && !v->param && v->name.find('.') == std::string::npos && used.insert(v->name).second)
            pure.push_back(a);
        else
            pure.push_back(Var(unique_name('v')));
    }
    Type t = e.type().element_of();
    FuncRef(f, pure) = t.is_float() ? make_const(t, (double)identity) : make_const(t, (int64_t)identity);
}
FuncRef &FuncRef::operator+=(Expr e) {
    check_func(f_);
    expand_implicit_lhs(*f_, args_, e);
    define_identity(f_, args_, e, 0);
    return *this = Expr(*this) + e;
}
FuncRef &FuncRef::operator-=(Expr e) {
    check_func(f_);
    expand_implicit_lhs(*f_, args_, e);
    define_identity(f_, args_, e, 0);
    return *this = Expr(*this) - e;
}
FuncRef &FuncRef::operator*=(Expr e) {
    check_func(f_);
    expand_implicit_lhs(*f_, args_, e);
    define_identity(f_, args_, e, 1);
    return *this = Expr(*this) * e;
}
FuncRef &FuncRef::operator/=(Expr e) {
    check_func(f_);
    expand_implicit_lhs(*f_, args_, e);
    define_identity(f_, args_, e, 1);
    return *this = Expr(*this) / e;
}

// ---------------- Stage scheduling ----------------
namespace {
StageSchedule &sched_of(const std::shared_ptr<FunctionContents> &f, int stage, int spec = -1) {
    check_func(f);
    if (!f->defined) user_error("weft: cannot schedule Func \"" + f->name + "\" before it has a definition");
    DefinitionSchedule &d = f->stage_schedules.at(stage);
    return spec < 0 ? d.schedule : d.specializations.at(spec).schedule;
}
std::string dims_list(const StageSchedule &s) {
    std::string r;
    for (auto it = s.dims.rbegin(); it != s.dims.rend(); ++it) r += (r.empty() ? "" : ", ") + it->var;
    return r;
}
int find_dim(const FunctionContents &f, int stage, const StageSchedule &s, const std::string &v, const char *prim) {
    for (size_t i = 0; i < s.dims.size(); i++)
        if (s.dims[i].var == v) return (int)i;
    user_error("weft: " + stage_name(f, stage) + "." + prim + "(): no loop named \"" + v + "\"; the loops are (outermost first): " +
               dims_list(s));
}
void check_new_name(const FunctionContents &f, int stage, const StageSchedule &s, const std::string &n,
                    const std::string &except, const char *prim) {
    if (n == except) return;
    for (auto &d : s.dims)
        if (d.var == n)
            user_error("weft: " + stage_name(f, stage) + "." + prim + "(): the name \"" + n + "\" is already a loop");
}
void check_factor(const FunctionContents &f, int stage, const Expr &factor, const char *prim) {
    if (!factor.defined() || !factor.type().is_int_or_uint() || factor.type().is_vector())
        user_error("weft: " + stage_name(f, stage) + "." + prim + "(): the factor must be an integer Expr");
    int64_t v;
    if (is_const_int(factor, &v) && v <= 0)
        user_error("weft: " + stage_name(f, stage) + "." + prim + "(): the factor must be positive, got " + std::to_string(v));
}
}  // namespace

std::string Stage::name() const { return stage_name(*f_, stage_); }

static Stage &add_prefetch(Stage &st, const std::shared_ptr<FunctionContents> &f, int stage, int spec, const void *src,
                           const std::string &src_name, const VarOrRVar &at, Expr offset) {
    StageSchedule &s = sched_of(f, stage, spec);
    find_dim(*f, stage, s, at.name(), "prefetch");
    if (!offset.defined() || !offset.type().is_int_or_uint())
        user_error("weft: " + stage_name(*f, stage) + ".prefetch(" + src_name + "): the offset must be an integer");
    s.prefetches.push_back({src, src_name, at.name(), cast(Int(32), offset)});
    changed(*f);
    return st;
}
Stage &Stage::prefetch(const Func &src, const VarOrRVar &at, Expr offset) {
    check_func(src.contents());
    return add_prefetch(*this, f_, stage_, spec_, src.contents().get(), src.name(), at, offset);
}
Stage &Stage::prefetch(const ImageParam &src, const VarOrRVar &at, Expr offset) {
    check_image(src.contents());
    return add_prefetch(*this, f_, stage_, spec_, src.contents().get(), src.name(), at, offset);
}
Stage &Stage::prefetch(const Buffer<void> &src, const VarOrRVar &at, Expr offset) {
    if (!src.defined()) user_error("weft: prefetch of an undefined Buffer");
    return add_prefetch(*this, f_, stage_, spec_, src.contents().get(), src.name(), at, offset);
}

Stage Stage::specialize(Expr cond) {
    StageSchedule &cur = sched_of(f_, stage_, spec_);
    if (!cond.defined() || !cond.type().is_bool() || cond.type().is_vector())
        user_error("weft: " + name() + ".specialize(): the condition must be a scalar bool Expr");
    cond = bind_shared_subexpressions(cond);
    CollectDefVars cv;
    cv.fname = f_->name;
    cv.include(cond);
    if (!cv.pure.empty() || cv.rdom)
        user_error("weft: " + name() + ".specialize(" + to_string(cond) +
                   "): the condition may use Params and buffer shapes, not Vars or RVars");
    DefinitionSchedule &d = f_->stage_schedules.at(stage_);
    d.specializations.push_back({cond, cur});
    changed(*f_);
    return Stage(f_, stage_, (int)d.specializations.size() - 1);
}

Stage &Stage::compute_with(const Stage &s, const VarOrRVar &var, LoopAlignStrategy align) {
    return compute_with(s, var, std::vector<std::pair<VarOrRVar, LoopAlignStrategy>>{{var, align}});
}
Stage &Stage::compute_with(const Stage &s, const VarOrRVar &var,
                           const std::vector<std::pair<VarOrRVar, LoopAlignStrategy>> &align) {
    sched_of(f_, stage_);
    check_func(s.f_);
    const std::string what = "weft: " + name() + ".compute_with(";
    if (spec_ >= 0)
        user_error(what + "...): a specialization runs with its stage's fusion; call compute_with on the stage itself");
    if (s.spec_ >= 0) user_error(what + "...): the parent must be a stage, not a specialization of one");
    if (!s.f_->defined) user_error(what + s.f_->name + ", ...): Func \"" + s.f_->name + "\" has no definition");
    if (s.stage_ < 0 || s.stage_ > (int)s.f_->updates.size())
        user_error(what + s.f_->name + ", ...): Func \"" + s.f_->name + "\" has no stage " + std::to_string(s.stage_));
    if (s.f_ == f_) user_error(what + s.name() + ", ...): both stages belong to Func \"" + f_->name + "\"; fuse stages of two Funcs");
    if (var.name().empty()) user_error(what + s.name() + ", ...): the loop has no name");
    FuseLevel fl;
    fl.func = s.f_;
    fl.func_name = s.f_->name;
    fl.stage = s.stage_;
    fl.var = var.name();
    for (auto &a : align) {
        for (auto &b : fl.align)
            if (b.first == a.first.name())
                user_error(what + s.name() + ", " + var.name() + "): loop \"" + a.first.name() + "\" is aligned twice");
        if (a.second != LoopAlignStrategy::Auto) fl.align.push_back({a.first.name(), a.second});
    }
    f_->stage_schedules.at(stage_).fuse = fl;
    changed(*f_);
    return *this;
}
Stage &Stage::compute_with(const Func &f, const VarOrRVar &var, LoopAlignStrategy align) {
    check_func(f.contents());
    return compute_with(Stage(f.contents(), 0), var, align);
}
Stage &Stage::compute_with(const Func &f, const VarOrRVar &var,
                           const std::vector<std::pair<VarOrRVar, LoopAlignStrategy>> &align) {
    check_func(f.contents());
    return compute_with(Stage(f.contents(), 0), var, align);
}

Stage &Stage::split(const VarOrRVar &old, const VarOrRVar &outer, const VarOrRVar &inner, Expr factor, TailStrategy tail) {
    StageSchedule &s = sched_of(f_, stage_, spec_);
    int i = find_dim(*f_, stage_, s, old.name(), "split");
    check_factor(*f_, stage_, factor, "split");
    if (outer.name() == inner.name())
        user_error("weft: " + name() + ".split(): outer and inner names are both \"" + outer.name() + "\"");
    check_new_name(*f_, stage_, s, outer.name(), old.name(), "split");
    check_new_name(*f_, stage_, s, inner.name(), old.name(), "split");
    Dim d = s.dims[i];
    s.splits.push_back({Split::SplitVar, old.name(), outer.name(), inner.name(), cast(Int(32), factor), tail});
    Dim din = d, dout = d;
    din.var = inner.name();
    dout.var = outer.name();
    din.for_type = ForType::Serial;
    s.dims[i] = din;
    s.dims.insert(s.dims.begin() + i + 1, dout);
    changed(*f_);
    return *this;
}
Stage &Stage::fuse(const VarOrRVar &inner, const VarOrRVar &outer, const VarOrRVar &fused) {
    StageSchedule &s = sched_of(f_, stage_, spec_);
    int ii = find_dim(*f_, stage_, s, inner.name(), "fuse");
    int io = find_dim(*f_, stage_, s, outer.name(), "fuse");
    if (ii == io) user_error("weft: " + name() + ".fuse(): inner and outer are the same loop \"" + inner.name() + "\"");
    if (fused.name() != inner.name() && fused.name() != outer.name())
        check_new_name(*f_, stage_, s, fused.name(), "", "fuse");
    bool rv = s.dims[ii].is_rvar || s.dims[io].is_rvar;
    if (s.dims[ii].is_rvar != s.dims[io].is_rvar)
        user_error("weft: " + name() + ".fuse(): cannot fuse a pure Var with an RVar (\"" + inner.name() + "\", \"" +
                   outer.name() + "\")");
    s.splits.push_back({Split::FuseVars, fused.name(), outer.name(), inner.name(), Expr(), TailStrategy::Auto});
    s.dims[ii] = Dim{fused.name(), ForType::Serial, rv};
    s.dims.erase(s.dims.begin() + io);
    changed(*f_);
    return *this;
}
Stage &Stage::reorder(const std::vector<VarOrRVar> &vars) {
    StageSchedule &s = sched_of(f_, stage_, spec_);
    std::vector<int> idx;
    for (auto &v : vars) {
        int i = find_dim(*f_, stage_, s, v.name(), "reorder");
        if (std::find(idx.begin(), idx.end(), i) != idx.end())
            user_error("weft: " + name() + ".reorder(): \"" + v.name() + "\" is listed twice");
        idx.push_back(i);
    }
    std::vector<int> slots = idx;
    std::sort(slots.begin(), slots.end());
    std::vector<Dim> nd = s.dims;
    for (size_t k = 0; k < idx.size(); k++) nd[slots[k]] = s.dims[idx[k]];
    // RVars keep their relative order: reordering them may change the meaning of the algorithm.
    std::vector<std::string> before, after;
    for (auto &d : s.dims)
        if (d.is_rvar) before.push_back(d.var);
    for (auto &d : nd)
        if (d.is_rvar) after.push_back(d.var);
    if (before != after && !s.atomic)  // an atomic update's iterations may run in any order
        user_error("weft: " + name() + ".reorder(): cannot change the order of reduction loops (" + join_names(before) +
                   " would become " + join_names(after) + "): it may change the result (unless the update is atomic())");
    s.dims = nd;
    changed(*f_);
    return *this;
}
Stage &Stage::tile(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &xo, const VarOrRVar &yo, const VarOrRVar &xi,
                   const VarOrRVar &yi, Expr fx, Expr fy, TailStrategy tail) {
    check_factor(*f_, stage_, fx, "tile");
    check_factor(*f_, stage_, fy, "tile");
    split(x, xo, xi, fx, tail);
    split(y, yo, yi, fy, tail);
    return reorder({xi, yi, xo, yo});
}
Stage &Stage::tile(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &xi, const VarOrRVar &yi, Expr fx, Expr fy,
                   TailStrategy tail) {
    check_factor(*f_, stage_, fx, "tile");
    check_factor(*f_, stage_, fy, "tile");
    split(x, x, xi, fx, tail);
    split(y, y, yi, fy, tail);
    return reorder({xi, yi, x, y});
}
static Stage &mark(Stage &st, const std::shared_ptr<FunctionContents> &f, int stage, int spec, const VarOrRVar &v,
                   ForType t, const char *prim) {
    StageSchedule &s = sched_of(f, stage, spec);
    int i = find_dim(*f, stage, s, v.name(), prim);
    if (t == ForType::Vectorized && s.dims[i].is_rvar)
        user_error("weft: " + stage_name(*f, stage) + "." + prim + "(" + v.name() +
                   "): a reduction loop cannot run as vector lanes: its iterations may depend on each other");
    if ((t == ForType::Parallel || t == ForType::GPUBlock || t == ForType::GPUThread) && s.dims[i].is_rvar && !s.atomic)
        user_error("weft: " + stage_name(*f, stage) + "." + prim + "(" + v.name() +
                   "): a reduction loop cannot run in parallel: its iterations may depend on each other (an update "
                   "f(..) = f(..) op e can be made atomic() first; then its iterations may run in any order at once)");
    s.dims[i].for_type = t;
    changed(*f);
    return st;
}
Stage &Stage::vectorize(const VarOrRVar &v) { return mark(*this, f_, stage_, spec_, v, ForType::Vectorized, "vectorize"); }
Stage &Stage::unroll(const VarOrRVar &v) { return mark(*this, f_, stage_, spec_, v, ForType::Unrolled, "unroll"); }
Stage &Stage::parallel(const VarOrRVar &v) { return mark(*this, f_, stage_, spec_, v, ForType::Parallel, "parallel"); }
Stage &Stage::serial(const VarOrRVar &v) { return mark(*this, f_, stage_, spec_, v, ForType::Serial, "serial"); }
Stage &Stage::gpu_blocks(const VarOrRVar &x) { return mark(*this, f_, stage_, spec_, x, ForType::GPUBlock, "gpu_blocks"); }
Stage &Stage::gpu_blocks(const VarOrRVar &x, const VarOrRVar &y) {
    gpu_blocks(x);
    return gpu_blocks(y);
}
Stage &Stage::gpu_blocks(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &z) {
    gpu_blocks(x, y);
    return gpu_blocks(z);
}
SelfReads internal::self_reads(const FunctionContents &f, const std::vector<Expr> &args, const Expr &e) {
    class Count : public IRVisitor {
    public:
        const FunctionContents *f = nullptr;
        const std::vector<Expr> *args = nullptr;
        SelfReads r;

    protected:
        void visit(const Call *c) override {
            if (c->call_type == Call::Func && !c->func && c->name == f->name) {
                bool same = c->args.size() == args->size();
                for (size_t i = 0; same && i < c->args.size(); i++) same = equal(c->args[i], (*args)[i]);
                (same ? r.at_lhs : r.elsewhere)++;
            }
            IRVisitor::visit(c);
        }
    } c;
    c.f = &f;
    c.args = &args;
    c.include(e);
    return c.r;
}

Stage &Stage::atomic(bool override_associativity_test) {
    StageSchedule &s = sched_of(f_, stage_, spec_);
    const std::string what = "weft: " + stage_name(*f_, stage_) + ".atomic()";
    if (stage_ == 0)
        user_error(what + ": only an update can be atomic (the pure definition writes each element once)");
    if (f_->type.is_bool()) user_error(what + ": a Func of bool values cannot be updated atomically");
    check_one_value(*f_, "atomic()");
    const Definition &d = stage_definition(*f_, stage_);
    // Every read of the Func itself must be of the element being written: that read, the
    // computation and the write are then done as one atomic operation.
    auto reads = [&](const Expr &e) { return self_reads(*f_, d.args, e); };
    SelfReads all = reads(d.value);
    for (auto &a : d.args) {
        if (reads(a).total())
            user_error(what + ": the place written depends on the Func's own values (" + to_string(a) + ")");
    }
    if (all.elsewhere)
        user_error(what + ": the update reads the Func at another place than the one it writes (" + to_string(d.value) +
                   "); an atomic update may read only the element it writes");
    if (!override_associativity_test) {
        // f = f op e (or e op f) for op in +, *, min, max, or f = f - e, with e not reading f:
        // the result does not depend on the order in which the iterations run.
        IRNodeType nt = d.value.get()->node_type;
        bool ok = false;
        if (nt == IRNodeType::Add || nt == IRNodeType::Mul || nt == IRNodeType::Min || nt == IRNodeType::Max ||
            nt == IRNodeType::Sub) {
            auto b = static_cast<const BinaryExprNode *>(d.value.get());
            SelfReads ra = reads(b->a), rb = reads(b->b);
            ok = (ra.at_lhs == 1 && ra.total() == 1 && b->a.as<Call>() && rb.at_lhs == 0) ||
                 (nt != IRNodeType::Sub && rb.at_lhs == 1 && b->b.as<Call>() && ra.at_lhs == 0);
        }
        if (!ok)
            user_error(what + ": the update is not f(..) = f(..) op e with op one of +, -, *, min, max and e not reading f (" +
                       to_string(d.value) + "), so its result would depend on the order of its iterations; "
                       "atomic(true) makes it atomic anyway");
    }
    s.atomic = true;
    s.atomic_override = s.atomic_override || override_associativity_test;
    changed(*f_);
    return *this;
}
Stage &Stage::gpu_single_thread() {
    sched_of(f_, stage_, spec_).single_thread = true;
    changed(*f_);
    return *this;
}
Stage &Stage::gpu_mma(const VarOrRVar &i, const VarOrRVar &j, const VarOrRVar &k) {
    StageSchedule &s = sched_of(f_, stage_, spec_);
    const std::string what = "weft: " + stage_name(*f_, stage_) + ".gpu_mma()";
    if (stage_ == 0) user_error(what + ": only an update (a sum over an RDom) can run on tensor cores");
    if (f_->type != Float(32))
        user_error(what + ": the Func's values must be float32 (the tensor cores' sums), not " + f_->type.str());
    int di = find_dim(*f_, stage_, s, i.name(), "gpu_mma"), dj = find_dim(*f_, stage_, s, j.name(), "gpu_mma"),
        dk = find_dim(*f_, stage_, s, k.name(), "gpu_mma");
    if (di == dj || di == dk || dj == dk) user_error(what + ": the three loops must be different loops");
    if (s.dims[di].is_rvar || s.dims[dj].is_rvar)
        user_error(what + ": i and j must be loops of the Func's own Vars (the tile written), not of an RDom");
    if (!s.dims[dk].is_rvar) user_error(what + ": k must be a loop of the RDom summed over, not of a Var");
    // f(args) = f(args) + float(a) * float(b), a and b of one 16-bit float type.
    const Definition &d = stage_definition(*f_, stage_);
    auto reads = [&](const Expr &e) { return self_reads(*f_, d.args, e); };
    bool ok = false;
    if (const Add *add = d.value.as<Add>()) {
        for (int side = 0; side < 2 && !ok; side++) {
            const Expr &acc = side ? add->b : add->a, &prod = side ? add->a : add->b;
            SelfReads ra = reads(acc), rp = reads(prod);
            const Mul *m = prod.as<Mul>();
            if (!(ra.at_lhs == 1 && ra.total() == 1 && acc.as<Call>() && rp.total() == 0 && m)) continue;
            const Cast *ca = m->a.as<Cast>(), *cb = m->b.as<Cast>();
            ok = ca && cb && ca->type == Float(32) && cb->type == Float(32) && ca->value.type() == cb->value.type() &&
                 ca->value.type().is_float() && ca->value.type().bits() == 16;
        }
    }
    if (!ok)
        user_error(what + ": the update must be f(..) = f(..) + float(a) * float(b) with a and b both float16 or both "
                   "bfloat16 (the tensor cores' inputs); it is " + to_string(d.value));
    s.mma = {i.name(), j.name(), k.name()};
    changed(*f_);
    return *this;
}
Stage &Stage::gpu_threads(const VarOrRVar &x) { return mark(*this, f_, stage_, spec_, x, ForType::GPUThread, "gpu_threads"); }
Stage &Stage::gpu_threads(const VarOrRVar &x, const VarOrRVar &y) {
    gpu_threads(x);
    return gpu_threads(y);
}
Stage &Stage::gpu_threads(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &z) {
    gpu_threads(x, y);
    return gpu_threads(z);
}
Stage &Stage::gpu_tile(const VarOrRVar &x, const VarOrRVar &xo, const VarOrRVar &xi, Expr f, TailStrategy tail) {
    check_factor(*f_, stage_, f, "gpu_tile");
    split(x, xo, xi, f, tail);
    gpu_blocks(xo);
    return gpu_threads(xi);
}
Stage &Stage::gpu_tile(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &xo, const VarOrRVar &yo,
                       const VarOrRVar &xi, const VarOrRVar &yi, Expr fx, Expr fy, TailStrategy tail) {
    check_factor(*f_, stage_, fx, "gpu_tile");
    check_factor(*f_, stage_, fy, "gpu_tile");
    tile(x, y, xo, yo, xi, yi, fx, fy, tail);
    gpu_blocks(xo, yo);
    return gpu_threads(xi, yi);
}
static std::string fresh_inner(const StageSchedule &s, const std::string &base) {
    std::string n = base;
    for (int k = 1;; k++) {
        bool clash = false;
        for (auto &d : s.dims) clash |= d.var == n;
        if (!clash) return n;
        n = base + std::to_string(k);
    }
}
Stage &Stage::vectorize(const VarOrRVar &v, Expr factor, TailStrategy tail) {
    std::string in = fresh_inner(sched_of(f_, stage_, spec_), v.name() + "_vi");
    if (v.is_rvar()) mark(*this, f_, stage_, spec_, v, ForType::Vectorized, "vectorize");  // raises the error
    check_factor(*f_, stage_, factor, "vectorize");
    split(v, v, Var(in), factor, tail);
    return vectorize(Var(in));
}
Stage &Stage::unroll(const VarOrRVar &v, Expr factor, TailStrategy tail) {
    std::string in = fresh_inner(sched_of(f_, stage_, spec_), v.name() + "_ui");
    check_factor(*f_, stage_, factor, "unroll");
    if (v.is_rvar()) {
        split(v, v, RVar(in), factor, tail);
        return unroll(RVar(in));
    }
    split(v, v, Var(in), factor, tail);
    return unroll(Var(in));
}
Stage &Stage::parallel(const VarOrRVar &v, Expr task_size, TailStrategy tail) {
    std::string in = fresh_inner(sched_of(f_, stage_, spec_), v.name() + "_pi");
    if (v.is_rvar()) mark(*this, f_, stage_, spec_, v, ForType::Parallel, "parallel");
    check_factor(*f_, stage_, task_size, "parallel");
    split(v, v, Var(in), task_size, tail);
    return parallel(v);
}

// ---------------- Func ----------------
Func::Func() : Func(unique_name('f')) {}
Func::Func(const std::string &name) : c_(std::make_shared<FunctionContents>()) { c_->name = name; }
FuncRef Func::operator()(const std::vector<Expr> &args) const {
    check_func(c_);
    return FuncRef(c_, args);
}
FuncRef Func::operator()(const std::vector<Var> &args) const {
    std::vector<Expr> e(args.begin(), args.end());
    return (*this)(e);
}
const std::string &Func::name() const {
    check_func(c_);
    return c_->name;
}
bool Func::defined() const { return c_ && c_->defined; }
std::vector<Var> Func::args() const {
    check_func(c_);
    std::vector<Var> r;
    for (auto &n : c_->args) r.emplace_back(n);
    return r;
}
int Func::dimensions() const { return (int)c_->args.size(); }
Type Func::type() const {
    check_func(c_);
    if (!c_->defined) user_error("weft: Func \"" + c_->name + "\" has no definition, so no type");
    if (!c_->types.empty())
        user_error("weft: Func \"" + c_->name + "\" has a Tuple of " + std::to_string(c_->types.size()) +
                   " values, so no one type: use output_types()");
    return c_->type;
}
std::vector<Type> Func::output_types() const {
    check_func(c_);
    if (!c_->defined) user_error("weft: Func \"" + c_->name + "\" has no definition, so no type");
    return c_->types.empty() ? std::vector<Type>{c_->type} : c_->types;
}
int Func::outputs() const {
    check_func(c_);
    return c_->types.empty() ? 1 : (int)c_->types.size();
}
int Func::num_update_definitions() const { return (int)c_->updates.size(); }
Stage Func::update(int i) {
    check_func(c_);
    if (i < 0 || i >= (int)c_->updates.size())
        user_error("weft: Func \"" + c_->name + "\" has " + std::to_string(c_->updates.size()) +
                   " update definitions; update(" + std::to_string(i) + ") does not exist");
    return Stage(c_, i + 1);
}

#define FORWARD(DECL, CALL) \
    Func &Func::DECL {      \
        stage0().CALL;      \
        return *this;       \
    }
FORWARD(split(const VarOrRVar &o, const VarOrRVar &a, const VarOrRVar &b, Expr f, TailStrategy t), split(o, a, b, f, t))
FORWARD(fuse(const VarOrRVar &a, const VarOrRVar &b, const VarOrRVar &c), fuse(a, b, c))
FORWARD(reorder(const std::vector<VarOrRVar> &v), reorder(v))
FORWARD(tile(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &xo, const VarOrRVar &yo, const VarOrRVar &xi,
             const VarOrRVar &yi, Expr fx, Expr fy, TailStrategy t),
        tile(x, y, xo, yo, xi, yi, fx, fy, t))
FORWARD(tile(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &xi, const VarOrRVar &yi, Expr fx, Expr fy,
             TailStrategy t),
        tile(x, y, xi, yi, fx, fy, t))
FORWARD(vectorize(const VarOrRVar &v), vectorize(v))
FORWARD(vectorize(const VarOrRVar &v, Expr f, TailStrategy t), vectorize(v, f, t))
FORWARD(unroll(const VarOrRVar &v), unroll(v))
FORWARD(unroll(const VarOrRVar &v, Expr f, TailStrategy t), unroll(v, f, t))
FORWARD(parallel(const VarOrRVar &v), parallel(v))
FORWARD(parallel(const VarOrRVar &v, Expr f, TailStrategy t), parallel(v, f, t))
FORWARD(serial(const VarOrRVar &v), serial(v))
FORWARD(gpu_single_thread(), gpu_single_thread())
FORWARD(gpu_mma(const VarOrRVar &i, const VarOrRVar &j, const VarOrRVar &k), gpu_mma(i, j, k))
FORWARD(gpu_blocks(const VarOrRVar &x), gpu_blocks(x))
FORWARD(gpu_blocks(const VarOrRVar &x, const VarOrRVar &y), gpu_blocks(x, y))
FORWARD(gpu_blocks(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &z), gpu_blocks(x, y, z))
FORWARD(gpu_threads(const VarOrRVar &x), gpu_threads(x))
FORWARD(gpu_threads(const VarOrRVar &x, const VarOrRVar &y), gpu_threads(x, y))
FORWARD(gpu_threads(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &z), gpu_threads(x, y, z))
FORWARD(gpu_tile(const VarOrRVar &x, const VarOrRVar &xo, const VarOrRVar &xi, Expr f, TailStrategy t),
        gpu_tile(x, xo, xi, f, t))
FORWARD(gpu_tile(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &xo, const VarOrRVar &yo, const VarOrRVar &xi,
                 const VarOrRVar &yi, Expr fx, Expr fy, TailStrategy t),
        gpu_tile(x, y, xo, yo, xi, yi, fx, fy, t))
#undef FORWARD

Stage Func::specialize(Expr cond) { return stage0().specialize(cond); }
Func &Func::prefetch(const Func &src, const VarOrRVar &at, Expr offset) {
    stage0().prefetch(src, at, offset);
    return *this;
}
Func &Func::prefetch(const ImageParam &src, const VarOrRVar &at, Expr offset) {
    stage0().prefetch(src, at, offset);
    return *this;
}
Func &Func::prefetch(const Buffer<void> &src, const VarOrRVar &at, Expr offset) {
    stage0().prefetch(src, at, offset);
    return *this;
}

Func &Func::bound(const Var &v, Expr min, Expr extent) {
    check_func(c_);
    if (!c_->defined) user_error("weft: Func \"" + c_->name + "\".bound(): the Func has no definition yet");
    if (std::find(c_->args.begin(), c_->args.end(), v.name()) == c_->args.end())
        user_error("weft: Func \"" + c_->name + "\".bound(): \"" + v.name() + "\" is not one of its Vars (" +
                   join_names(c_->args) + ")");
    if (!min.defined() || !extent.defined() || !min.type().is_int_or_uint() || !extent.type().is_int_or_uint())
        user_error("weft: Func \"" + c_->name + "\".bound(): min and extent must be integers");
    int64_t e;
    if (is_const_int(extent, &e) && e < 0)
        user_error("weft: Func \"" + c_->name + "\".bound(): negative extent " + std::to_string(e));
    c_->schedule.bounds.push_back({v.name(), cast(Int(32), min), cast(Int(32), extent)});
    changed(*c_);
    return *this;
}
Func &Func::compute_with(const Stage &s, const VarOrRVar &var, LoopAlignStrategy align) {
    stage0().compute_with(s, var, align);
    return *this;
}
Func &Func::compute_with(const Stage &s, const VarOrRVar &var,
                         const std::vector<std::pair<VarOrRVar, LoopAlignStrategy>> &align) {
    stage0().compute_with(s, var, align);
    return *this;
}
Func &Func::compute_with(const Func &f, const VarOrRVar &var, LoopAlignStrategy align) {
    stage0().compute_with(f, var, align);
    return *this;
}
Func &Func::compute_with(const Func &f, const VarOrRVar &var,
                         const std::vector<std::pair<VarOrRVar, LoopAlignStrategy>> &align) {
    stage0().compute_with(f, var, align);
    return *this;
}

Func &Func::compute_root() {
    check_func(c_);
    c_->schedule.compute = LoopLevelSpec{LoopLevelSpec::Root, {}, "", ""};
    if (!c_->schedule.store_set) c_->schedule.store = c_->schedule.compute;
    changed(*c_);
    return *this;
}
Func &Func::compute_at(const Func &consumer, const VarOrRVar &loop) {
    check_func(c_);
    check_func(consumer.c_);
    if (consumer.c_ == c_) user_error("weft: Func \"" + c_->name + "\".compute_at(): a Func cannot be computed inside itself");
    c_->schedule.compute = LoopLevelSpec{LoopLevelSpec::At, consumer.c_, consumer.c_->name, loop.name()};
    if (!c_->schedule.store_set) c_->schedule.store = c_->schedule.compute;
    changed(*c_);
    return *this;
}
Func &Func::compute_inline() {
    check_func(c_);
    c_->schedule.compute = LoopLevelSpec{};
    c_->schedule.store = LoopLevelSpec{};
    c_->schedule.store_set = false;
    c_->schedule.hoist = LoopLevelSpec{};
    changed(*c_);
    return *this;
}
Func &Func::store_root() {
    check_func(c_);
    c_->schedule.store = LoopLevelSpec{LoopLevelSpec::Root, {}, "", ""};
    c_->schedule.store_set = true;
    changed(*c_);
    return *this;
}
Func &Func::store_at(const Func &consumer, const VarOrRVar &loop) {
    check_func(c_);
    check_func(consumer.c_);
    if (consumer.c_ == c_) user_error("weft: Func \"" + c_->name + "\".store_at(): a Func cannot be stored inside itself");
    c_->schedule.store = LoopLevelSpec{LoopLevelSpec::At, consumer.c_, consumer.c_->name, loop.name()};
    c_->schedule.store_set = true;
    changed(*c_);
    return *this;
}
Func &Func::hoist_storage(const Func &consumer, const VarOrRVar &loop) {
    check_func(c_);
    check_func(consumer.c_);
    if (consumer.c_ == c_)
        user_error("weft: Func \"" + c_->name + "\".hoist_storage(): a Func's storage cannot be allocated inside itself");
    c_->schedule.hoist = LoopLevelSpec{LoopLevelSpec::At, consumer.c_, consumer.c_->name, loop.name()};
    changed(*c_);
    return *this;
}
Func &Func::hoist_storage_root() {
    check_func(c_);
    c_->schedule.hoist = LoopLevelSpec{LoopLevelSpec::Root, {}, "", ""};
    changed(*c_);
    return *this;
}
Func &Func::store_in(MemoryType t) {
    check_func(c_);
    c_->schedule.memory = t;
    changed(*c_);
    return *this;
}
static void set_trace(const std::shared_ptr<FunctionContents> &c, bool FunctionContents::*flag) {
    check_func(c);
    (*c).*flag = true;
    changed(*c);
}
Func &Func::trace_stores() {
    set_trace(c_, &FunctionContents::trace_stores);
    return *this;
}
Func &Func::trace_loads() {
    set_trace(c_, &FunctionContents::trace_loads);
    return *this;
}
Func &Func::trace_realizations() {
    set_trace(c_, &FunctionContents::trace_realizations);
    return *this;
}
Func &Func::store_nontemporal(bool on) {
    check_func(c_);
    c_->schedule.nontemporal = on;
    changed(*c_);
    return *this;
}

Func &Func::load_ahead(bool on) {
    check_func(c_);
    if (on) check_one_value(*c_, "load_ahead()");
    c_->schedule.load_ahead = on;
    changed(*c_);
    return *this;
}

// ---------------- wrappers: in() ----------------
namespace internal {
std::shared_ptr<FunctionContents> wrapper_for(
    const std::map<const FunctionContents *, std::shared_ptr<FunctionContents>> &wrappers,
    const FunctionContents *consumer) {
    if (wrappers.empty()) return nullptr;
    for (auto &kv : wrappers)
        if (kv.second.get() == consumer) return nullptr;  // a wrapper reads the original
    auto it = wrappers.find(consumer);
    if (it != wrappers.end()) return it->second;
    it = wrappers.find(nullptr);
    return it != wrappers.end() ? it->second : nullptr;
}
}  // namespace internal

namespace {
using WrapperMap = std::map<const FunctionContents *, std::shared_ptr<FunctionContents>>;
Func get_wrapper(WrapperMap &w, ChangeCount &owner, const FunctionContents *consumer, const std::string &name,
                 const std::vector<std::string> &arg_names, const std::function<Expr(const std::vector<Expr> &)> &call) {
    auto it = w.find(consumer);
    if (it != w.end()) return Func(it->second);
    Func f(name);
    std::vector<Var> vars;
    std::vector<Expr> args;
    for (auto &n : arg_names) {
        vars.emplace_back(n);
        args.push_back(Var(n));
    }
    f(vars) = call(args);
    w[consumer] = f.contents();
    changed(owner);
    return f;
}
std::vector<std::string> implicit_names(int dims) {
    std::vector<std::string> r;
    for (int i = 0; i < dims; i++) r.push_back("_" + std::to_string(i));
    return r;
}
}  // namespace

Func Func::in() {
    check_func(c_);
    if (!c_->defined) user_error("weft: in() of Func \"" + c_->name + "\", which has no definition");
    check_one_value(*c_, "in()");
    Func self(c_);
    return get_wrapper(c_->wrappers, c_->changes, nullptr, c_->name + "_in", c_->args,
                       [self](const std::vector<Expr> &a) { return Expr(self(a)); });
}
Func Func::in(const Func &consumer) {
    check_func(c_);
    check_func(consumer.c_);
    if (!c_->defined) user_error("weft: in() of Func \"" + c_->name + "\", which has no definition");
    check_one_value(*c_, "in()");
    if (consumer.c_ == c_) user_error("weft: Func \"" + c_->name + "\".in(): a Func cannot wrap itself for itself");
    Func self(c_);
    return get_wrapper(c_->wrappers, c_->changes, consumer.c_.get(), c_->name + "_in_" + consumer.c_->name, c_->args,
                       [self](const std::vector<Expr> &a) { return Expr(self(a)); });
}
namespace {
/** Calls of `from` made calls of `to` (a clone's updates read the clone, not the original). */
class RetargetCalls : public GraphMutator {
public:
    RetargetCalls(const FunctionContents *from, std::shared_ptr<FunctionContents> to) : from(from), to(std::move(to)) {}
    const FunctionContents *from;
    std::shared_ptr<FunctionContents> to;

protected:
    using IRMutator::visit;
    Expr visit(const Call *op, const Expr &e) override {
        Expr r = IRMutator::visit(op, e);
        auto c = r.as<Call>();
        if (c && c->call_type == Call::Func && c->func.get() == from) {
            auto n = std::make_shared<Call>(c->type, to->name, c->args, Call::Func);
            n->func = to;
            n->value_index = c->value_index;
            return Expr(n);
        }
        return r;
    }
};
}  // namespace

Func Func::clone_in(const std::vector<Func> &consumers) {
    check_func(c_);
    if (!c_->defined) user_error("weft: clone_in() of Func \"" + c_->name + "\", which has no definition");
    check_one_value(*c_, "clone_in()");
    if (consumers.empty()) user_error("weft: Func \"" + c_->name + "\".clone_in(): no consumer given");
    std::string name = c_->name + "_clone_in";
    for (auto &g : consumers) {
        check_func(g.c_);
        if (g.c_ == c_) user_error("weft: Func \"" + c_->name + "\".clone_in(): a Func cannot be cloned for itself");
        if (c_->wrappers.count(g.c_.get()))
            user_error("weft: Func \"" + c_->name + "\".clone_in(" + g.name() + "): \"" + g.name() +
                       "\" already reads a wrapper or clone of it (in() or clone_in())");
        name += "_" + g.c_->name;
    }
    // A copy of the definition (pure and updates), reading what the Func reads; its updates
    // read the clone.
    Func clone(name);
    std::vector<Var> vars;
    for (auto &n : c_->args) vars.emplace_back(n);
    RetargetCalls retarget(c_.get(), clone.contents());
    clone(vars) = c_->init.value;
    for (const Definition &u : c_->updates) {
        std::vector<Expr> args;
        for (auto &a : u.args) args.push_back(retarget.mutate(a));
        clone(args) = retarget.mutate(u.value);
    }
    for (auto &g : consumers) c_->wrappers[g.c_.get()] = clone.contents();
    changed(*c_);
    return clone;
}
Func Func::clone_in(const Func &consumer) { return clone_in(std::vector<Func>{consumer}); }
Func Func::in(const std::vector<Func> &consumers) {
    if (consumers.empty()) return in();
    Func w = in(consumers[0]);
    for (size_t i = 1; i < consumers.size(); i++) {
        check_func(consumers[i].c_);
        c_->wrappers[consumers[i].c_.get()] = w.contents();
    }
    changed(*c_);
    return w;
}
namespace {
/** Checks that v is one of the Func's pure Vars (for Func-level storage directives). */
void check_own_var(const FunctionContents &c, const std::string &what, const Var &v) {
    if (!c.defined) user_error(what + ": the Func has no definition yet");
    if (std::find(c.args.begin(), c.args.end(), v.name()) == c.args.end())
        user_error(what + ": \"" + v.name() + "\" is not one of its Vars (" + join_names(c.args) + ")");
}
/** e's value, which must be an integer constant from lo to hi. */
int64_t constant_in(const Expr &e, int64_t lo, int64_t hi, const std::string &what, const std::string &which) {
    int64_t v = 0;
    if (!e.defined() || !e.type().is_int_or_uint() || !is_const_int(simplify(e), &v))
        user_error(what + ": the " + which + (e.defined() ? " " + to_string(e) : std::string()) +
                   " is not an integer constant (its arguments are integer constants, known when it is scheduled)");
    if (v < lo || v > hi)
        user_error(what + ": " + which + " " + std::to_string(v) + " is not between " + std::to_string(lo) + " and " +
                   std::to_string(hi));
    return v;
}
/** The entry for var in a per-Var list of a schedule, made at its end if there is none. */
template <typename T>
T &entry_for(std::vector<T> &list, const std::string &var) {
    for (auto &e : list)
        if (e.var == var) return e;
    list.push_back(T{});
    list.back().var = var;
    return list.back();
}
}  // namespace

Func &Func::align_storage(const Var &dim, const Expr &alignment) {
    check_func(c_);
    const std::string what = "weft: Func \"" + c_->name + "\".align_storage()";
    check_own_var(*c_, what, dim);
    entry_for(c_->schedule.storage_align, dim.name()).alignment = constant_in(alignment, 1, 1 << 16, what, "alignment");
    changed(*c_);
    return *this;
}
Func &Func::fold_storage(const Var &dim, const Expr &extent, bool fold_forward) {
    check_func(c_);
    const std::string what = "weft: Func \"" + c_->name + "\".fold_storage()";
    check_own_var(*c_, what, dim);
    if (!fold_forward)
        user_error(what + ": only forward folds (the window moving to larger coordinates) are supported; "
                   "fold_forward = false is not");
    entry_for(c_->schedule.storage_fold, dim.name()).factor = constant_in(extent, 1, 1 << 20, what, "extent");
    changed(*c_);
    return *this;
}
Func &Func::align_bounds(const Var &var, Expr modulus, Expr remainder) {
    check_func(c_);
    const std::string what = "weft: Func \"" + c_->name + "\".align_bounds()";
    check_own_var(*c_, what, var);
    int64_t m = constant_in(modulus, 1, 1 << 16, what, "modulus");
    int64_t r = constant_in(remainder, INT32_MIN, INT32_MAX, what, "remainder");
    BoundAlign &b = entry_for(c_->schedule.bound_align, var.name());
    b.modulus = m;
    b.remainder = ((r % m) + m) % m;
    changed(*c_);
    return *this;
}
Func &Func::reorder_storage(const std::vector<Var> &dims) {
    check_func(c_);
    if (!c_->defined) user_error("weft: reorder_storage() of Func \"" + c_->name + "\", which has no definition");
    std::vector<std::string> order = c_->schedule.storage_order.empty() ? c_->args : c_->schedule.storage_order;
    std::vector<size_t> idx;
    for (auto &v : dims) {
        auto it = std::find(order.begin(), order.end(), v.name());
        if (it == order.end())
            user_error("weft: Func \"" + c_->name + "\".reorder_storage(): \"" + v.name() + "\" is not one of its Vars (" +
                       join_names(c_->args) + ")");
        size_t i = it - order.begin();
        if (std::find(idx.begin(), idx.end(), i) != idx.end())
            user_error("weft: Func \"" + c_->name + "\".reorder_storage(): \"" + v.name() + "\" is listed twice");
        idx.push_back(i);
    }
    std::vector<size_t> slots = idx;
    std::sort(slots.begin(), slots.end());
    std::vector<std::string> no = order;
    for (size_t k = 0; k < idx.size(); k++) no[slots[k]] = order[idx[k]];
    c_->schedule.storage_order = no;
    changed(*c_);
    return *this;
}

Func ImageParam::in() const {
    check_image(c_);
    ImageParam self = *this;
    return get_wrapper(c_->wrappers, c_->wrapper_changes, nullptr, c_->name + "_in", implicit_names(c_->dims),
                       [self](const std::vector<Expr> &a) { return self(a); });
}
Func ImageParam::in(const Func &consumer) const {
    check_image(c_);
    check_func(consumer.contents());
    ImageParam self = *this;
    return get_wrapper(c_->wrappers, c_->wrapper_changes, consumer.contents().get(), c_->name + "_in_" + consumer.name(),
                       implicit_names(c_->dims), [self](const std::vector<Expr> &a) { return self(a); });
}
Func Buffer<void>::in() const {
    if (!contents_) user_error("weft: in() of an undefined Buffer");
    auto c = contents_;
    return get_wrapper(contents_->wrappers, contents_->wrapper_changes, nullptr, contents_->name + "_in", implicit_names(contents_->dims),
                       [c](const std::vector<Expr> &a) { return buffer_call(c, a); });
}
Func Buffer<void>::in(const Func &consumer) const {
    if (!contents_) user_error("weft: in() of an undefined Buffer");
    check_func(consumer.contents());
    auto c = contents_;
    return get_wrapper(contents_->wrappers, contents_->wrapper_changes, consumer.contents().get(), contents_->name + "_in_" + consumer.name(),
                       implicit_names(contents_->dims), [c](const std::vector<Expr> &a) { return buffer_call(c, a); });
}

// ---------------- LoopLevel, lambda ----------------
Func LoopLevel::func() const {
    if (kind_ != Kind::Loop)
        user_error(std::string("weft: LoopLevel::func() of the ") + (is_root() ? "root" : "inlined") + " level");
    return func_;
}
VarOrRVar LoopLevel::var() const {
    if (kind_ != Kind::Loop)
        user_error(std::string("weft: LoopLevel::var() of the ") + (is_root() ? "root" : "inlined") + " level");
    return rvar_ ? VarOrRVar(RVar(var_)) : VarOrRVar(Var(var_));
}
Func &Func::compute_at(const LoopLevel &l) {
    if (l.is_root()) return compute_root();
    if (l.is_inlined()) return compute_inline();
    return compute_at(l.func(), l.var());
}
Func &Func::store_at(const LoopLevel &l) {
    if (l.is_root()) return store_root();
    if (l.is_inlined()) user_error("weft: Func \"" + name() + "\".store_at(LoopLevel::inlined()): storage must be at the "
                                   "root or at a loop");
    return store_at(l.func(), l.var());
}
Func &Func::hoist_storage(const LoopLevel &l) {
    if (l.is_root()) return hoist_storage_root();
    if (l.is_inlined())
        user_error("weft: Func \"" + name() + "\".hoist_storage(LoopLevel::inlined()): the allocation must be at the "
                   "root or at a loop");
    return hoist_storage(l.func(), l.var());
}
Func lambda(const std::vector<Var> &vars, Expr e) {
    if (!e.defined()) user_error("weft: lambda of an undefined Expr");
    Func f(unique_name('l').insert(0, "lambda_"));
    f(vars) = e;
    return f;
}

// ---------------- boundary conditions ----------------
namespace {
struct Src {
    std::function<Expr(const std::vector<Expr> &)> call;
    std::vector<Expr> mins, extents;
    int dims;
    std::string name;
};
Src src_of(const Buffer<void> &b) {
    if (!b.defined()) user_error("weft: boundary condition of an undefined Buffer");
    Src s;
    auto c = b.contents();
    s.call = [c](const std::vector<Expr> &a) { return buffer_call(c, a); };
    for (int i = 0; i < b.dimensions(); i++) {
        s.mins.push_back(b.dim(i).min());
        s.extents.push_back(b.dim(i).extent());
    }
    s.dims = b.dimensions();
    s.name = b.name();
    return s;
}
Src src_of(const ImageParam &p) {
    Src s;
    ImageParam q = p;
    s.call = [q](const std::vector<Expr> &a) { return q(a); };
    for (int i = 0; i < p.dimensions(); i++) {
        s.mins.push_back(p.min(i));
        s.extents.push_back(p.extent(i));
    }
    s.dims = p.dimensions();
    s.name = p.name();
    return s;
}
Src src_of(const Func &f) {
    check_func(f.contents());
    if (!f.defined()) user_error("weft: boundary condition of Func \"" + f.name() + "\", which has no definition");
    Src s;
    Func g = f;
    s.call = [g](const std::vector<Expr> &a) { return Expr(g(a)); };
    s.dims = f.dimensions();
    s.mins.resize(s.dims);
    s.extents.resize(s.dims);
    s.name = f.name();
    return s;
}
/** s with the given bounds ({min, extent} per dimension, from dimension 0; an undefined min
    or extent, or a dimension past the list, is not bounded). */
Src with_bounds(Src s, const weft::Region &bounds, const char *kind) {
    if (bounds.size() > (size_t)s.dims)
        user_error(std::string("weft: BoundaryConditions::") + kind + " of \"" + s.name + "\", which has " +
                   std::to_string(s.dims) + " dimensions, given bounds for " + std::to_string(bounds.size()));
    for (int i = 0; i < s.dims; i++) {
        s.mins[i] = Expr();
        s.extents[i] = Expr();
        if (i >= (int)bounds.size() || !bounds[i].first.defined() || !bounds[i].second.defined()) continue;
        for (const Expr &e : {bounds[i].first, bounds[i].second})
            if (!e.type().is_int_or_uint() || e.type().is_vector())
                user_error(std::string("weft: BoundaryConditions::") + kind + " of \"" + s.name + "\": dimension " +
                           std::to_string(i) + "'s bounds must be integers, got " + e.type().str() + " (" +
                           to_string(e) + ")");
        s.mins[i] = cast(Int(32), bounds[i].first);
        s.extents[i] = cast(Int(32), bounds[i].second);
    }
    return s;
}
Func make_bc(const Src &s, const char *kind, Expr value) {
    Func f(s.name + "_" + kind);
    std::vector<Var> vars;
    std::vector<Expr> coords;
    Expr inside;
    const std::string k = kind;
    bool any = false;
    for (int i = 0; i < s.dims; i++) {
        Var v("_" + std::to_string(i));
        vars.push_back(v);
        if (!s.mins[i].defined() || !s.extents[i].defined()) {  // not bounded in this dimension
            coords.push_back(v);
            continue;
        }
        any = true;
        Expr lo = s.mins[i], ext = s.extents[i], hi = lo + ext - 1;
        Expr c = Expr(v) - lo;
        if (k == "mirror_image") {
            // Reflect with the edge pixel repeated: ... 2 1 0 | 0 1 2 ... n-1 | n-1 n-2 ...
            Expr m = c % (2 * ext);
            coords.push_back(clamp(select(m < ext, m, 2 * ext - 1 - m) + lo, lo, hi));
        } else if (k == "mirror_interior") {
            // Reflect about the edge pixel: ... 2 1 | 0 1 2 ... n-1 | n-2 n-3 ...
            Expr period = 2 * ext - 2;
            Expr m = c % period;  // (0 where ext is 1: division by zero gives 0)
            coords.push_back(clamp(select(m < ext, m, period - m) + lo, lo, hi));
        } else if (k == "repeat_image") {
            coords.push_back(clamp(c % ext + lo, lo, hi));  // (% never negative for a positive ext)
        } else {
            coords.push_back(clamp(Expr(v), lo, hi));
        }
        if (k == "constant_exterior") {
            Expr in = Expr(v) >= lo && Expr(v) <= hi;
            inside = inside.defined() ? (inside && in) : in;
        }
    }
    if (!any && s.dims > 0)
        user_error("weft: BoundaryConditions::" + k + " of \"" + s.name + "\" bounds no dimension: give {min, extent} "
                   "for at least one");
    Expr body = s.call(coords);
    if (value.defined()) {
        if (value.type() != body.type()) value = cast(body.type(), value);
        body = inside.defined() ? select(inside, body, value) : body;
    }
    f(vars) = body;
    return f;
}
Expr checked_value(const Expr &value) {
    if (!value.defined()) user_error("weft: constant_exterior needs a defined value");
    return value;
}
}  // namespace

namespace BoundaryConditions {
#define WEFT_BC(NAME)                                                                                              \
    Func NAME(const Buffer<void> &src) { return make_bc(src_of(src), #NAME, Expr()); }                             \
    Func NAME(const ImageParam &src) { return make_bc(src_of(src), #NAME, Expr()); }                               \
    Func NAME(const Buffer<void> &src, const weft::Region &b) { return make_bc(with_bounds(src_of(src), b, #NAME), #NAME, Expr()); } \
    Func NAME(const ImageParam &src, const weft::Region &b) { return make_bc(with_bounds(src_of(src), b, #NAME), #NAME, Expr()); }   \
    Func NAME(const Func &src, const weft::Region &b) { return make_bc(with_bounds(src_of(src), b, #NAME), #NAME, Expr()); }
WEFT_BC(repeat_edge)
WEFT_BC(mirror_image)
WEFT_BC(mirror_interior)
WEFT_BC(repeat_image)
#undef WEFT_BC
Func constant_exterior(const Buffer<void> &src, Expr value) {
    return make_bc(src_of(src), "constant_exterior", checked_value(value));
}
Func constant_exterior(const ImageParam &src, Expr value) {
    return make_bc(src_of(src), "constant_exterior", checked_value(value));
}
Func constant_exterior(const Buffer<void> &src, Expr value, const weft::Region &b) {
    return make_bc(with_bounds(src_of(src), b, "constant_exterior"), "constant_exterior", checked_value(value));
}
Func constant_exterior(const ImageParam &src, Expr value, const weft::Region &b) {
    return make_bc(with_bounds(src_of(src), b, "constant_exterior"), "constant_exterior", checked_value(value));
}
Func constant_exterior(const Func &src, Expr value, const weft::Region &b) {
    return make_bc(with_bounds(src_of(src), b, "constant_exterior"), "constant_exterior", checked_value(value));
}
}  // namespace BoundaryConditions

}  // namespace weft

// ---------------- Tuple ----------------
namespace weft {
using namespace internal;

Tuple::Tuple(const std::vector<Expr> &values) : exprs_(values) {
    if (exprs_.empty()) user_error("weft: a Tuple needs at least one value");
}
Tuple::Tuple(const FuncRef &f) {
    if (f.size() < 2)
        user_error("weft: Tuple(f(...)) of a Func that has one value at each point (not defined with a Tuple)");
    for (size_t i = 0; i < f.size(); i++) exprs_.push_back(f[(int)i]);
}
Expr &Tuple::operator[](size_t i) {
    if (i >= exprs_.size())
        user_error("weft: Tuple[" + std::to_string(i) + "] of a Tuple of " + std::to_string(exprs_.size()) + " values");
    return exprs_[i];
}
const Expr &Tuple::operator[](size_t i) const { return const_cast<Tuple &>(*this)[i]; }

static void check_same_size(const Tuple &a, const Tuple &b, const char *what) {
    if (a.size() != b.size())
        user_error(std::string("weft: ") + what + " of Tuples of " + std::to_string(a.size()) + " and " +
                   std::to_string(b.size()) + " values: they must have one size");
}
Tuple select(Expr condition, const Tuple &t, const Tuple &f) {
    check_same_size(t, f, "select");
    std::vector<Expr> r;
    for (size_t i = 0; i < t.size(); i++) r.push_back(select(condition, t[i], f[i]));
    return Tuple(r);
}
Tuple select(const Tuple &condition, const Tuple &t, const Tuple &f) {
    check_same_size(t, f, "select");
    check_same_size(condition, t, "select");
    std::vector<Expr> r;
    for (size_t i = 0; i < t.size(); i++) r.push_back(select(condition[i], t[i], f[i]));
    return Tuple(r);
}
Expr mux(Expr id, const Tuple &values) { return mux(std::move(id), values.as_vector()); }
Expr mux(Expr id, std::initializer_list<Expr> values) { return mux(std::move(id), std::vector<Expr>(values)); }
Tuple mux(Expr id, const std::vector<Tuple> &values) {
    if (values.empty()) user_error("weft: mux needs at least one value");
    std::vector<Expr> r;
    for (size_t i = 0; i < values[0].size(); i++) {
        std::vector<Expr> column;
        for (auto &t : values) {
            check_same_size(values[0], t, "mux");
            column.push_back(t[i]);
        }
        r.push_back(mux(id, column));
    }
    return Tuple(r);
}

namespace {
/** argmax / argmin: f(free Vars) = (the RDom's minimum point, e's type's lowest / highest value),
    then an update that takes a point whose value is strictly better (so the first of ties). */
Tuple arg_reduction(const RDom *named, Expr e, bool is_max) {
    const char *kind = is_max ? "argmax" : "argmin";
    InlineReduction ir = inline_reduction_of(e, kind);
    const std::shared_ptr<ReductionDomainContents> &rdom = ir.rdom;
    if (named && named->defined() && named->domain() != rdom)
        user_error(std::string("weft: ") + kind + "(r, e): e uses RDom \"" + rdom->name + "\", not \"" +
                   named->domain()->name + "\"");
    e = ir.e;
    Func f = ir.f;
    const std::vector<Expr> &args = ir.args;
    Type t = e.type();
    std::vector<Expr> init, point;
    for (auto &rv : rdom->domain) {
        init.push_back(rv.min);
        auto v = std::make_shared<Variable>(Int(32), rv.var);
        v->rdom = rdom;
        point.push_back(Expr(v));
    }
    init.push_back(is_max ? t.min() : t.max());
    f(ir.vars) = Tuple(init);
    FuncRef old = f(args);
    Expr best = old[(int)rdom->domain.size()];
    Expr better = is_max ? e > best : e < best;
    std::vector<Expr> now, before;
    for (size_t i = 0; i < point.size(); i++) before.push_back(old[(int)i]);
    before.push_back(best);
    now = point;
    now.push_back(e);
    f(args) = select(better, Tuple(now), Tuple(before));
    return Tuple(f(args));
}
}  // namespace

Tuple argmax(Expr e) { return arg_reduction(nullptr, std::move(e), true); }
Tuple argmin(Expr e) { return arg_reduction(nullptr, std::move(e), false); }
Tuple argmax(const RDom &r, Expr e) { return arg_reduction(&r, std::move(e), true); }
Tuple argmin(const RDom &r, Expr e) { return arg_reduction(&r, std::move(e), false); }

}  // namespace weft
