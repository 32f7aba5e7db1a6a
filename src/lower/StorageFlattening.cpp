#include "lower/StorageFlattening.h"
#include "ir/Warnings.h"
#include "ir/IRVisitor.h"
#include "ir/Interval.h"
#include "ir/Simplify.h"
#include "lower/LoweredFunc.h"
#include <algorithm>
#include <climits>

namespace weft {
namespace internal {
namespace {

Expr field(const std::string &name, const char *f, size_t d) {
    return Variable::make(Int(32), buffer_field(name, f, (int)d));
}

class Flatten : public IRMutator {
public:
    Flatten(const Env &e, bool c) : env(e), cuda(c) {
        for (auto &f : e.funcs)
            for (size_t i = 1; i < f.types.size(); i++) values[tuple_buffer_name(f.name, (int)i)] = {&f, (int)i};
    }
    const Env &env;
    /** The storage of the values past the first of Funcs defined with a Tuple: its Func and value. */
    std::map<std::string, std::pair<const LFunc *, int>> values;
    int tuple_lets = 0;

    /** The Func whose storage `name` is (itself, or a value of a Tuple), and whose buffer
        fields index it: a Tuple's values are stored alike (the output buffers of an output's
        values have fields of their own). */
    std::string func_of(const std::string &name) const {
        auto v = values.find(name);
        return v == values.end() ? name : v->second.first->name;
    }
    std::string fields_of(const std::string &name) const {
        auto v = values.find(name);
        return v == values.end() || v->second.first->output_index >= 0 ? name : v->second.first->name;
    }
    bool cuda;
    int in_kernel = 0;  // inside a gpu_blocks loop
    std::set<std::string> unfolded;  // folds no smaller than the region itself: left unfolded

    /** The (dimension, ring size) name's storage is folded along, or null. */
    const std::pair<int, int64_t> *fold_of(const std::string &name) const {
        auto f = env.folds.find(name);
        return f == env.folds.end() || unfolded.count(name) ? nullptr : &f->second;
    }

    Expr flat_index(const std::string &storage, const std::vector<Expr> &args) const {
        Expr idx;
        auto fold = fold_of(func_of(storage));
        const std::string name = fields_of(storage);
        for (size_t d = 0; d < args.size(); d++) {
            Expr pos = args[d] - field(name, "min", d);
            if (fold && fold->first == (int)d)
                pos = args[d] % Expr((int)fold->second);  // a folded dimension: a ring of rows
            Expr term = pos * field(name, "stride", d);
            idx = idx.defined() ? idx + term : term;
        }
        return idx.defined() ? idx : Expr(0);
    }

protected:
    Expr visit(const Call *op, const Expr &e) override {
        if (op->call_type == Call::Intrinsic) return IRMutator::visit(op, e);
        std::vector<Expr> args;
        for (auto &a : op->args) args.push_back(mutate(a));
        std::string storage = op->call_type == Call::Func ? tuple_buffer_name(op->name, op->value_index) : op->name;
        return Load::make(op->type, storage, flat_index(storage, args));
    }
    Stmt visit(const Provide *op, const Stmt &s) override {
        std::vector<Expr> args;
        for (auto &a : op->args) args.push_back(mutate(a));
        auto f = env.index.find(op->name);
        bool nt = f != env.index.end() && env.funcs[f->second].sched.nontemporal;
        const Call *tuple = tuple_call(op->value);
        if (!tuple)
            return Store::make(op->name, mutate(op->value), flat_index(op->name, args), 0, nt, op->atomic);
        // A Tuple: every value computed (from what the point held before), then each stored.
        std::vector<std::pair<std::string, Expr>> lets;
        std::vector<Stmt> stores;
        for (size_t i = 0; i < tuple->args.size(); i++) {
            std::string n = op->name + ".value" + std::to_string(i) + "." + std::to_string(tuple_lets++);
            lets.push_back({n, mutate(tuple->args[i])});
            std::string storage = tuple_buffer_name(op->name, (int)i);
            stores.push_back(Store::make(storage, Variable::make(tuple->args[i].type(), n), flat_index(storage, args), 0, nt));
        }
        Stmt r = Block::make(stores);
        for (auto it = lets.rbegin(); it != lets.rend(); ++it) r = LetStmt::make(it->first, it->second, r);
        return r;
    }
    Stmt visit(const For *op, const Stmt &s) override {
        bool block = op->for_type == ForType::GPUBlock;
        in_kernel += block;
        loops.push_back(op);
        Stmt r = IRMutator::visit(op, s);
        loops.pop_back();
        in_kernel -= block;
        return r;
    }
    Stmt visit(const LetStmt *op, const Stmt &s) override {
        outer_lets.push_back({op->name, op->value});
        Stmt r = IRMutator::visit(op, s);
        outer_lets.pop_back();
        return r;
    }

    /** The loops and lets around the statement being flattened (innermost last). */
    std::vector<const For *> loops;
    LetStack outer_lets;

    /** e with the values of the lets around it substituted (innermost first, so that what an
        inner let's value names of an outer one is substituted in turn). */
    Expr without_lets(const Expr &e) const { return simplify(substitute_lets(e, outer_lets)); }
    /** A constant upper bound of a storage extent that varies with the loops around it (a
        tile clipped at the edge of the image), knowing those loops' ranges: the storage then
        has a constant size. False where there is none. */
    bool constant_extent_bound(const Expr &extent, int64_t *out) const {
        Scope scope;
        for (const For *l : loops) {
            Expr mn = without_lets(l->min), mx = without_lets(l->min + l->extent - 1);
            scope[l->name] = Interval(mn, mx);
        }
        return constant_upper_bound_in_scope(without_lets(extent), scope, out) && *out >= 0;
    }
    Stmt visit(const Realize *op, const Stmt &s) override {
        if (cuda && op->memory_type == MemoryType::GPUShared && !in_kernel) {
            auto f = env.index.find(op->name);
            std::string user = f != env.index.end() ? env.funcs[f->second].contents->name : op->name;
            user_error("weft: Func \"" + user + "\" is stored in GPU shared memory (store_in(GPUShared)) but its storage is "
                       "outside every GPU kernel; shared memory belongs to one block: compute it (and store it) at a "
                       "gpu_blocks loop of its consumer, or store it elsewhere");
        }
        // A ring no smaller than the region it would hold (a window bounded loosely) saves
        // nothing: the region is stored as it is.
        int64_t whole = 0;
        if (auto f = fold_of(op->name))
            if (constant_extent_bound(op->bounds[f->first].extent, &whole) && whole <= f->second) unfolded.insert(op->name);
        Stmt body = mutate(op->body);
        // The number of elements, in 64 bits (flat indices are 32-bit: more than 2^31 - 1
        // elements is an error, at compile time where the extents are constants, else when
        // run, before anything is allocated or written).
        Expr size = make_const(Int(64), (int64_t)1);
        auto fold = fold_of(op->name);
        Region bounds = op->bounds;
        if (fold) bounds[fold->first].extent = Expr((int)fold->second);
        const int64_t cap = (int64_t)1 << 62;  // (the constant product saturates there)
        int64_t n = 1;
        bool constant = true;
        // Where an extent varies (a tile clipped at the image's edge) but has a constant upper
        // bound, the storage is allocated at that bound: a constant size (for the stack).
        MemoryType m = op->memory_type;
        bool want_stack = m == MemoryType::Stack || m == MemoryType::Auto || m == MemoryType::Register;
        bool exact = true;  // every extent a constant (not a bound)
        auto fit = env.index.find(op->name);
        // align_storage: a dimension's extent in storage padded up to a multiple.
        std::vector<int64_t> align(bounds.size(), 1);
        if (fit != env.index.end()) {
            const LFunc &lf = env.funcs[fit->second];
            for (auto &sa : lf.sched.storage_align) {
                size_t i = std::find(lf.args.begin(), lf.args.end(), sa.var) - lf.args.begin();
                if (i < bounds.size()) align[i] = sa.alignment;
            }
        }
        auto padded = [&](size_t d) {
            Expr e = field(op->name, "extent", d);
            int a = (int)align[d];
            return a > 1 ? ((e + (a - 1)) / a) * a : e;
        };
        Expr varying;  // the first extent that is not a constant
        for (size_t d = 0; d < bounds.size(); d++) {
            size = size * Cast::make(Int(64), padded(d));
            int64_t e = 0;
            Expr ext = simplify(bounds[d].extent);
            if (!is_const_int(ext, &e)) {
                if (!varying.defined()) varying = ext;
                if (want_stack && constant_extent_bound(bounds[d].extent, &e)) exact = false;
                else constant = false;
            }
            if (e > 0 && align[d] > 1) e = (e + align[d] - 1) / align[d] * align[d];
            if (constant) n = (int64_t)std::min<__int128>((__int128)n * std::max<int64_t>(e, 0), cap);
        }
        if (constant && !exact && (__int128)n * op->type.bytes() > kMaxStackAllocationBytes)
            constant = false;  // (bounds: for the stack only)
        const std::string user = fit != env.index.end() ? env.funcs[fit->second].contents->name : op->name;
        const std::string too_large = "Func \"" + user + "\" needs storage for % elements, more than the 2147483647 that "
                                      "32-bit indices address; compute it in smaller pieces (compute_at an inner loop)";
        if (constant && n > INT32_MAX) {
            std::string msg = too_large;
            msg.replace(msg.find('%'), 1, n == cap ? "2^62 or more" : std::to_string(n));
            user_error("weft: " + msg);
        }
        const Expr runtime_size = size;
        if (constant) size = make_const(Int(64), n);
        bool small = constant && n * op->type.bytes() <= kSmallStackAllocationBytes;
        if (m == MemoryType::Stack && !cuda) {
            // Asked for: on the stack, or a clear error (never silently on the heap).
            if (!constant)
                user_error("weft: Func \"" + user + "\" is stored on the stack (store_in(MemoryType::Stack)), but the size "
                           "of its storage is not a constant and has no constant bound (an extent is " +
                           to_string(varying) + "); bound() its region, compute it at a loop of constant extent, or "
                           "store it in MemoryType::Heap or MemoryType::Auto");
            if (n * op->type.bytes() > kMaxStackAllocationBytes)
                user_error("weft: Func \"" + user + "\" is stored on the stack (store_in(MemoryType::Stack)), but its "
                           "storage takes " + std::to_string(n * op->type.bytes()) + " bytes, more than the 1 MiB a "
                           "stack allocation may take; compute it at an inner loop, or store it in MemoryType::Heap");
        } else if (m == MemoryType::Register) {
            m = small || cuda ? MemoryType::Register : MemoryType::Heap;  // CPU: as Stack
            if (m == MemoryType::Heap)
                compile_warning("Func \"" + user + "\" is stored in MemoryType::Register, but its storage (" +
                                 (constant ? std::to_string(n * op->type.bytes()) + " bytes" : std::string("of a size known only at run time")) +
                                 ") is too large for registers or the stack: it is on the heap");
        } else if (m == MemoryType::Auto || m == MemoryType::Stack) {
            m = small ? MemoryType::Stack : MemoryType::Heap;
        }
        if (m == MemoryType::GPUShared) m = MemoryType::Heap;
        if (m == MemoryType::Heap && constant && !exact && !cuda) {
            // The constant bound was for the stack: on the heap, the storage takes what this
            // region needs when it runs (a tile's few rows of a column whose rows are bounded
            // only by the whole image's), not the bound. (Inside a GPU kernel every array has a
            // constant size.)
            size = runtime_size;
            constant = false;
        }
        if (fit != env.index.end())  // the other values of a Tuple: stored alike
            for (size_t i = env.funcs[fit->second].types.size(); i-- > 1;) {
                Type t = env.funcs[fit->second].types[i];
                MemoryType mi = m;
                if (mi == MemoryType::Stack && constant && n * t.bytes() > kSmallStackAllocationBytes && op->memory_type != MemoryType::Stack)
                    mi = MemoryType::Heap;
                if (mi == MemoryType::Stack && n * t.bytes() > kMaxStackAllocationBytes)
                    user_error("weft: Func \"" + user + "\" is stored on the stack (store_in(MemoryType::Stack)), but "
                               "the storage of its value " + std::to_string(i) + " takes " + std::to_string(n * t.bytes()) +
                               " bytes, more than the 1 MiB a stack allocation may take; compute it at an inner loop, "
                               "or store it in MemoryType::Heap");
                body = Allocate::make(tuple_buffer_name(op->name, (int)i), t, size, mi, body);
            }
        Stmt a = Allocate::make(op->name, op->type, size, m, body);
        if (!constant) a = Block::make(AssertStmt::make(size <= make_const(Int(64), (int64_t)INT32_MAX), too_large, {size}), a);
        // Bind extents, mins and dense strides (innermost first).
        std::vector<std::pair<std::string, Expr>> lets;
        // Dense strides in storage order (reorder_storage; innermost first).
        std::vector<size_t> order;
        if (fit != env.index.end()) {
            const LFunc &f = env.funcs[fit->second];
            for (auto &n : f.sched.storage_order) {
                size_t i = std::find(f.args.begin(), f.args.end(), n) - f.args.begin();
                if (i < bounds.size()) order.push_back(i);
            }
        }
        if (order.size() != bounds.size()) {
            order.clear();
            for (size_t d = 0; d < bounds.size(); d++) order.push_back(d);
        }
        for (size_t d = 0; d < bounds.size(); d++) {
            lets.push_back({buffer_field(op->name, "min", (int)d), bounds[d].min});
            lets.push_back({buffer_field(op->name, "extent", (int)d), bounds[d].extent});
        }
        for (size_t k = 0; k < order.size(); k++) {
            size_t d = order[k], p = k ? order[k - 1] : 0;
            lets.push_back({buffer_field(op->name, "stride", (int)d),
                            k == 0 ? Expr(1) : field(op->name, "stride", p) * padded(p)});
        }
        for (auto it = lets.rbegin(); it != lets.rend(); ++it) a = LetStmt::make(it->first, it->second, a);
        return a;
    }
};
}  // namespace

Stmt storage_flattening(const Stmt &s, const Env &env, bool cuda) { return Flatten(env, cuda).mutate(s); }

}  // namespace internal
}  // namespace weft
