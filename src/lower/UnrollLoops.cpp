#include "lower/UnrollLoops.h"
#include "ir/IRVisitor.h"
#include "ir/Simplify.h"

namespace weft {
namespace internal {
namespace {
class Unroll : public IRMutator {
protected:
    Stmt visit(const For *op, const Stmt &s) override {
        Stmt body = mutate(op->body);
        if (op->for_type != ForType::Unrolled)
            return body.same_as(op->body) ? s : For::make(op->name, op->min, op->extent, op->for_type, body);
        int64_t n;
        Expr ext = simplify(op->extent);
        if (!is_const_int(ext, &n) || n > 1024)
            return For::make(op->name, op->min, op->extent, ForType::Serial, body);
        std::vector<Stmt> copies;
        for (int64_t i = 0; i < n; i++) copies.push_back(substitute(op->name, simplify(op->min + (int)i), body));
        return Block::make(copies);
    }
};
}  // namespace
Stmt unroll_loops(const Stmt &s) { return Unroll().mutate(s); }
}  // namespace internal
}  // namespace weft
