#include "lower/VectorizeLoops.h"
#include <algorithm>
#include "ir/IRVisitor.h"
#include "ir/Names.h"
#include "ir/Simplify.h"
#include "ir/Warnings.h"
#include "lower/LoweredFunc.h"


namespace weft {
namespace internal {
namespace {

struct CannotVectorize {
    const char *why = "its body has a form the vectorizer does not handle";
};
const CannotVectorize kNested{"a loop inside it is vectorized too (vectorize one loop of a nest)"};

/** Rewrites a loop body with the loop variable replaced by a Ramp. */
class Widen : public IRMutator {
public:
    Widen(const std::string &v, Expr r, int l) : var(v), ramp(std::move(r)), lanes(l) {}
    std::string var;
    Expr ramp;
    int lanes;
    std::map<std::string, Type> vec_vars;

    static Expr widen(const Expr &e, int l) {
        if (e.type().lanes() == l) return e;
        if (e.type().is_scalar()) return Broadcast::make(e, l);
        throw kNested;
    }

protected:
    Expr visit(const Variable *op, const Expr &e) override {
        if (op->name == var) return ramp;
        auto it = vec_vars.find(op->name);
        if (it != vec_vars.end()) return Variable::make(it->second, op->name);
        return e;
    }
#define BIN(T)                                                                      \
    Expr visit(const T *op, const Expr &e) override {                               \
        Expr a = mutate(op->a), b = mutate(op->b);                                  \
        if (a.same_as(op->a) && b.same_as(op->b)) return e;                         \
        int l = std::max(a.type().lanes(), b.type().lanes());                       \
        return T::make(widen(a, l), widen(b, l));                                   \
    }
    BIN(Add) BIN(Sub) BIN(Mul) BIN(Div) BIN(Mod) BIN(Min) BIN(Max) BIN(EQ) BIN(NE) BIN(LT) BIN(LE) BIN(GT) BIN(GE)
    BIN(And) BIN(Or)
#undef BIN
    Expr visit(const Cast *op, const Expr &e) override {
        Expr v = mutate(op->value);
        if (v.same_as(op->value)) return e;
        return Cast::make(op->type.with_lanes(v.type().lanes()), v);
    }
    Expr visit(const Select *op, const Expr &e) override {
        Expr c = mutate(op->condition), t = mutate(op->true_value), f = mutate(op->false_value);
        if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) return e;
        int l = std::max({c.type().lanes(), t.type().lanes(), f.type().lanes()});
        if (c.type().is_scalar()) return Select::make(c, widen(t, l), widen(f, l));
        return Select::make(widen(c, l), widen(t, l), widen(f, l));
    }
    /** The storage allocated inside the loop: each lane has a copy of its own (Halide's
        vectorization of a producer computed inside the vectorized loop of its consumer), element
        k of lane l at k * lanes + l. */
    std::map<std::string, int> private_storage;  // name -> depth of shadowing
    bool is_private(const std::string &name) const {
        auto it = private_storage.find(name);
        return it != private_storage.end() && it->second > 0;
    }
    /** A private buffer's index for every lane: i (scalar, or one per lane) interleaved. */
    Expr private_index(const Expr &i) const {
        if (i.type().is_vector() && i.type().lanes() != lanes) throw kNested;
        return widen(i, lanes) * Broadcast::make(make_const(i.type().element_of(), (int64_t)lanes), lanes) +
               Ramp::make(make_const(i.type().element_of(), (int64_t)0), make_const(i.type().element_of(), (int64_t)1), lanes);
    }
    Expr visit(const Load *op, const Expr &e) override {
        Expr i = mutate(op->index);
        if (is_private(op->name)) {
            // (an access already vectorized by a loop inside: its lanes are not this loop's)
            if (op->index.type().is_vector()) throw kNested;
            return Load::make(op->type.element_of(), op->name, private_index(i), 0);
        }
        if (i.same_as(op->index)) return e;
        return Load::make(op->type.element_of(), op->name, i, op->alignment);
    }
    Expr visit(const Ramp *op, const Expr &e) override {
        Expr b = mutate(op->base), s = mutate(op->stride);
        if (b.same_as(op->base) && s.same_as(op->stride)) return e;
        throw kNested;
    }
    Expr visit(const Broadcast *op, const Expr &e) override {
        Expr v = mutate(op->value);
        if (v.same_as(op->value)) return e;
        throw kNested;
    }
    Expr visit(const VectorReduce *op, const Expr &e) override {
        Expr v = mutate(op->value);
        if (v.same_as(op->value)) return e;
        throw kNested;
    }
    Expr visit(const Let *op, const Expr &e) override {
        Expr v = mutate(op->value);
        if (v.type().is_vector()) vec_vars[op->name] = v.type();
        Expr b = mutate(op->body);
        vec_vars.erase(op->name);
        return Let::make(op->name, v, b);
    }
    Expr visit(const Call *op, const Expr &e) override {
        std::vector<Expr> args;
        int l = 1;
        bool changed = false;
        for (auto &a : op->args) {
            args.push_back(mutate(a));
            l = std::max(l, args.back().type().lanes());
            changed |= !args.back().same_as(a);
        }
        if (!changed) return e;
        if (op->call_type != Call::Intrinsic) throw CannotVectorize{"it calls something that is not an operation on values"};
        if (op->name == "prefetch") return Call::make_intrinsic(op->type, op->name, args);  // stays scalar
        for (auto &a : args)
            if (!a.as<StringImm>()) a = widen(a, l);  // (print's strings stay what they are)
        return Call::make_intrinsic(op->type.with_lanes(l), op->name, args);
    }
    Stmt visit(const LetStmt *op, const Stmt &s) override {
        Expr v = mutate(op->value);
        if (v.type().is_vector()) vec_vars[op->name] = v.type();
        Stmt b = mutate(op->body);
        vec_vars.erase(op->name);
        return LetStmt::make(op->name, v, b);
    }
    Stmt visit(const Store *op, const Stmt &s) override {
        Expr v = mutate(op->value), i = mutate(op->index);
        if (is_private(op->name)) {
            if (op->atomic) throw CannotVectorize{"an atomic() update is scalar"};
            if (op->index.type().is_vector()) throw kNested;
            return Store::make(op->name, widen(v, lanes), private_index(i), 0, op->nontemporal);
        }
        if (v.same_as(op->value) && i.same_as(op->index)) return s;
        if (i.type().is_scalar()) throw CannotVectorize{"every lane would store to one place (a reduction into one point: vectorize a pure dimension of it, or rfactor())"};
        if (op->atomic) throw CannotVectorize{"an atomic() update is scalar"};  // (unrolled for CUDA)
        return Store::make(op->name, widen(v, i.type().lanes()), i, op->alignment, op->nontemporal);
    }
    Stmt visit(const For *op, const Stmt &s) override {
        Expr mi = mutate(op->min), ex = mutate(op->extent);
        if (mi.type().is_vector() || ex.type().is_vector()) throw CannotVectorize{"a loop inside it has bounds that differ from lane to lane"};
        Stmt b = mutate(op->body);
        return For::make(op->name, mi, ex, op->for_type == ForType::Parallel ? ForType::Serial : op->for_type, b);
    }
    Stmt visit(const IfThenElse *op, const Stmt &s) override {
        Expr c = mutate(op->condition);
        if (c.type().is_vector()) throw CannotVectorize{"an if inside it has a condition that differs from lane to lane"};
        return IRMutator::visit(op, s);
    }
    Stmt visit(const Allocate *op, const Stmt &s) override {
        Expr ex = mutate(op->extent);
        if (ex.type().is_vector() || op->memory_type == MemoryType::GPUShared ||
            op->memory_type == MemoryType::Register)
            throw CannotVectorize{"it holds storage of a size that differs from lane to lane, or in registers or GPU shared memory"};
        // A copy per lane: on the stack while that stays small, else on the heap.
        MemoryType m = op->memory_type;
        int64_t n = 0;
        if (m == MemoryType::Stack &&
            (!is_const_int(simplify(ex), &n) || n > kSmallStackAllocationBytes / std::max(1, op->type.bytes() * lanes)))
            m = MemoryType::Heap;
        private_storage[op->name]++;
        Stmt b = mutate(op->body);
        private_storage[op->name]--;
        Expr total = Cast::make(Int(64), ex) * make_const(Int(64), (int64_t)lanes);
        return Allocate::make(op->name, op->type, total, m, b);
    }
    Stmt visit(const AssertStmt *op, const Stmt &s) override {
        Expr c = mutate(op->condition);
        if (c.type().is_vector()) throw CannotVectorize{"a check inside it has a condition that differs from lane to lane"};
        return IRMutator::visit(op, s);
    }
};

/** Is e built from var only through +, -, * by var-free terms, comparisons, && and likely()? */
bool linear_in(const Expr &e, const std::string &var) {
    if (!expr_uses_var(e, var)) return true;
    if (e.as<Variable>()) return true;
    if (auto a = e.as<Add>()) return linear_in(a->a, var) && linear_in(a->b, var);
    if (auto a = e.as<Sub>()) return linear_in(a->a, var) && linear_in(a->b, var);
    if (auto a = e.as<Mul>())
        return (!expr_uses_var(a->a, var) && linear_in(a->b, var)) || (!expr_uses_var(a->b, var) && linear_in(a->a, var));
    if (auto a = e.as<LT>()) return linear_in(a->a, var) && linear_in(a->b, var);
    if (auto a = e.as<LE>()) return linear_in(a->a, var) && linear_in(a->b, var);
    if (auto a = e.as<GT>()) return linear_in(a->a, var) && linear_in(a->b, var);
    if (auto a = e.as<GE>()) return linear_in(a->a, var) && linear_in(a->b, var);
    if (auto a = e.as<And>()) return linear_in(a->a, var) && linear_in(a->b, var);
    if (auto c = e.as<Call>()) return c->is_intrinsic("likely") && linear_in(c->args[0], var);
    return false;
}

bool is_likely(const Expr &e) {
    auto c = e.as<Call>();
    return c && c->is_intrinsic("likely");
}

bool loads_what_is_stored(const Expr &value, const Stmt &body) {
    LoadsStores v, b;
    v.include(value);
    if (v.reads.empty()) return false;
    b.include(body);
    for (auto &n : v.reads)
        if (b.writes.count(n)) return true;
    return false;
}

class Vectorize : public IRMutator {
public:
    Vectorize(bool u, bool hv) : unrolled_fallback(u), host_vectors(hv) {}

private:
    bool unrolled_fallback, host_vectors;
    int in_kernel = 0;
    const char *why = nullptr;  // why the last loop tried stayed serial
    /** Tells the user that a loop asked to be vectorized runs serially, and why. */
    static void warn_serial(const std::string &loop, const char *reason) {
        compile_warning("Func \"" + func_of_loop(loop) + "\": the loop \"" + loop + "\" is vectorized but runs as a serial loop: " +
                        reason);
    }
    Stmt vectorize(const std::string &name, const Expr &min, int n, const Stmt &body_in, const Stmt &serial) {
        // Lets that depend on the loop variable are inlined so that tail guards are seen; not
        // one that loads from a buffer its body stores to (a Tuple's values, all computed
        // before any is stored): inlined, it would read what a store before it wrote.
        Stmt body = body_in;
        while (auto let = body.as<LetStmt>()) {
            if (loads_what_is_stored(let->value, let->body)) break;
            body = substitute(let->name, let->value, let->body);
        }
        auto ite = body.as<IfThenElse>();
        if (ite && !ite->else_case.defined() && is_likely(ite->condition) && expr_uses_var(ite->condition, name) &&
            linear_in(ite->condition, name)) {
            // All lanes pass a tail check that is linear in the loop variable iff both ends do.
            Expr c0 = simplify(substitute(name, min, ite->condition));
            Expr c1 = simplify(substitute(name, simplify(min + (n - 1)), ite->condition));
            Stmt v = vectorize(name, min, n, ite->then_case, serial);
            if (!v.defined()) return serial;
            return IfThenElse::make(c0 && c1, v, serial);
        }
        try {
            Widen w(name, Ramp::make(min, 1, n), n);
            return w.mutate(body);
        } catch (CannotVectorize &c) {
            why = c.why;
            return serial;
        }
    }

protected:
    Stmt visit(const For *op, const Stmt &s) override {
        bool block = op->for_type == ForType::GPUBlock;
        in_kernel += block;
        Stmt body = mutate(op->body);
        in_kernel -= block;
        if (op->for_type == ForType::Vectorized && !host_vectors && !in_kernel)
            return For::make(op->name, op->min, op->extent, ForType::Serial, body);
        if (op->for_type != ForType::Vectorized)
            return body.same_as(op->body) ? s : For::make(op->name, op->min, op->extent, op->for_type, body);
        Stmt serial = For::make(op->name, op->min, op->extent, ForType::Serial, body);
        int64_t n = 0;
        const bool constant = is_const_int(simplify(op->extent), &n);
        if (!constant || n > 64 || n < 1) {
            if (!unrolled_fallback && (!constant || n > 64))
                warn_serial(op->name, constant ? "its extent is above 64 lanes (split it: vectorize(x, 16))"
                                               : "its extent is not a constant (split it by a constant: vectorize(x, 16))");
            return serial;
        }
        if (unrolled_fallback) {
            std::vector<Stmt> copies;
            for (int64_t i = 0; i < n; i++) copies.push_back(substitute(op->name, simplify(op->min + (int)i), body));
            serial = Block::make(copies);
        }
        if (n == 1) return LetStmt::make(op->name, op->min, body);
        // The loop's min is evaluated once, outside the vector body.
        std::string mn = op->name + ".vmin";
        Expr minv = Variable::make(Int(32), mn);
        why = nullptr;
        Stmt v = vectorize(op->name, minv, (int)n, body, serial);
        if (v.same_as(serial) && why && !unrolled_fallback) warn_serial(op->name, why);
        return LetStmt::make(mn, op->min, v);
    }
};

}  // namespace

Stmt vectorize_loops(const Stmt &s, bool unrolled_fallback, bool host_vectors) {
    return Vectorize(unrolled_fallback, host_vectors).mutate(s);
}

}  // namespace internal
}  // namespace weft
