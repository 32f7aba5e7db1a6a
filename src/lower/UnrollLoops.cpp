#include "lower/UnrollLoops.h"
#include <map>
#include <optional>
#include "ir/IRVisitor.h"
#include "ir/Interval.h"
#include "ir/Simplify.h"

namespace weft {
namespace internal {
namespace {
/** Renames the buffers allocated in s (and their loads and stores) with a suffix. */
class RenameAllocations : public IRMutator {
public:
    RenameAllocations(std::string suffix, const std::set<std::string> &keep) : suffix(std::move(suffix)), keep(keep) {}

protected:
    std::string suffix;
    const std::set<std::string> &keep;
    std::map<std::string, std::string> renamed;  // in scope
    Stmt visit(const Allocate *op, const Stmt &s) override {
        if (keep.count(op->name)) return IRMutator::visit(op, s);
        std::string n = op->name + suffix;
        auto saved = renamed.count(op->name) ? std::optional<std::string>(renamed[op->name]) : std::nullopt;
        renamed[op->name] = n;
        Stmt b = mutate(op->body);
        if (saved) renamed[op->name] = *saved;
        else renamed.erase(op->name);
        return Allocate::make(n, op->type, mutate(op->extent), op->memory_type, b);
    }
    Expr visit(const Load *op, const Expr &e) override {
        Expr i = mutate(op->index);
        auto it = renamed.find(op->name);
        if (it == renamed.end()) return i.same_as(op->index) ? e : Load::make(op->type, op->name, i, op->alignment);
        return Load::make(op->type, it->second, i, op->alignment);
    }
    Stmt visit(const Store *op, const Stmt &s) override {
        Expr v = mutate(op->value), i = mutate(op->index);
        auto it = renamed.find(op->name);
        return Store::make(it == renamed.end() ? op->name : it->second, v, i, op->alignment, op->nontemporal, op->atomic);
    }
};

class Unroll : public IRMutator {
public:
    Unroll(bool own, const std::set<std::string> &k) : own_storage(own), keep(k) {}

protected:
    bool own_storage;
    const std::set<std::string> &keep;
    /** Copy i of an unrolled loop's body (its allocations renamed, with own_storage). */
    Stmt copy(const For *op, const Stmt &body, int64_t i) {
        Stmt c = substitute(op->name, simplify(op->min + (int)i), body);
        if (own_storage && i > 0) c = RenameAllocations(".u" + std::to_string(i), keep).mutate(c);
        return c;
    }

    LetStack lets;  // in scope, outermost first
    struct Enclosing {
        const For *loop;
        size_t lets_in_scope;  // of `lets`, around it
    };
    std::vector<Enclosing> enclosing;  // the loops around, outermost first

    /** The enclosing loops' ranges, their bounds with the lets around them substituted (built
        only for an unrolled loop whose extent is not a constant). */
    Scope enclosing_ranges() const {
        Scope sc;
        for (auto &e : enclosing) {
            LetStack around(lets.begin(), lets.begin() + e.lets_in_scope);
            sc[e.loop->name] = Interval(simplify(substitute_lets(e.loop->min, around)),
                                        simplify(substitute_lets(e.loop->min + e.loop->extent - 1, around)));
        }
        return sc;
    }

    Stmt visit(const LetStmt *op, const Stmt &s) override {
        lets.push_back({op->name, op->value});
        Stmt b = mutate(op->body);
        lets.pop_back();
        return b.same_as(op->body) ? s : LetStmt::make(op->name, op->value, b);
    }
    Stmt visit(const For *op, const Stmt &s) override {
        enclosing.push_back({op, lets.size()});
        Stmt body = mutate(op->body);
        enclosing.pop_back();
        if (op->for_type != ForType::Unrolled)
            return body.same_as(op->body) ? s : For::make(op->name, op->min, op->extent, op->for_type, body);
        // A constant extent, or one that varies (a last, shorter step of a split) but has a
        // constant bound: that many copies, each run where its iteration exists.
        int64_t n;
        Expr ext = simplify(op->extent);
        if (!is_const_int(ext, &n) && !constant_upper_bound_in_scope(substitute_lets(ext, lets), enclosing_ranges(), &n))
            n = -1;
        if (n < 0 || n > 1024) return For::make(op->name, op->min, op->extent, ForType::Serial, body);
        std::vector<Stmt> copies;
        for (int64_t i = 0; i < n; i++) {
            Stmt c = copy(op, body, i);
            Expr runs = simplify(Expr((int)i) < ext);
            if (is_false(runs)) continue;
            copies.push_back(is_true(runs) ? c : IfThenElse::make(Call::make_intrinsic(Bool(), "likely", {runs}), c));
        }
        return copies.empty() ? Evaluate::make(Expr(0)) : Block::make(copies);
    }
};
}  // namespace
Stmt unroll_loops(const Stmt &s, bool own_storage, const std::set<std::string> &keep) {
    return Unroll(own_storage, keep).mutate(s);
}
}  // namespace internal
}  // namespace weft
