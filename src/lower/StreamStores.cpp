#include "lower/StreamStores.h"

#include <map>
#include <set>

#include "ir/IRVisitor.h"

namespace weft {
namespace internal {
namespace {

constexpr int64_t kLineBytes = 64;

/** Whether a store writes one whole cache line: a dense vector of 64 bytes at an index proven a
    multiple of 64 bytes (align_loads), so that only the buffer's base can put it across two
    lines (the pipeline's own buffers are aligned; a caller's is checked at run time). Narrower
    stores that fill a line between them are left alone: with a loop body between them, the line
    can leave the write-combining buffer half written, which costs a read of the line after all;
    so are stores whose offset in the line varies (a row of odd length): half of them would
    stream, behind a branch. */
bool writes_whole_line(const Store *op) {
    const Ramp *r = op->index.as<Ramp>();
    int64_t stride = 0;
    const int64_t elem = op->value.type().element_of().bytes();
    return r && r->base.type().lanes() == 1 && is_const_int(r->stride, &stride) && stride == 1 &&
           (int64_t)op->value.type().lanes() * elem == kLineBytes && op->alignment > 0 &&
           ((int64_t)op->alignment * elem) % kLineBytes == 0;
}

/** One nest: the bytes it stores to each buffer (a lower bound) and the buffers it loads. */
class Survey : public IRVisitor {
public:
    std::map<std::string, int64_t> stored;
    std::set<std::string> loaded;

protected:
    int64_t trips = 1;  // iterations of the loops around, those of constant extent
    void visit(const For *op) override {
        int64_t n = 1, saved = trips;
        if (is_const_int(op->extent, &n) && n > 1) trips = (trips > INT64_MAX / n) ? INT64_MAX : trips * n;
        IRVisitor::visit(op);
        trips = saved;
    }
    void visit(const Store *op) override {
        const int64_t bytes = (int64_t)op->value.type().lanes() * op->value.type().element_of().bytes();
        int64_t &b = stored[op->name];
        b = (trips > (INT64_MAX - b) / bytes) ? INT64_MAX : b + trips * bytes;
        IRVisitor::visit(op);
    }
    void visit(const Load *op) override {
        loaded.insert(op->name);
        IRVisitor::visit(op);
    }
    void visit(const Call *op) override {
        // An intrinsic that names a buffer (an address taken, a prefetch): read, as far as we know.
        for (auto &a : op->args)
            if (auto *sv = a.as<StringImm>()) loaded.insert(sv->value);
        IRVisitor::visit(op);
    }
};

/** Marks the stores of one nest to the buffers in streamed. */
class Mark : public IRMutator {
public:
    explicit Mark(const std::set<std::string> &s) : streamed(s) {}

protected:
    const std::set<std::string> &streamed;
    Stmt visit(const Store *op, const Stmt &s) override {
        if (op->nontemporal || op->atomic || op->value.type().is_bool() || !streamed.count(op->name) ||
            !writes_whole_line(op))
            return s;
        return Store::make(op->name, op->value, op->index, op->alignment, true, false);
    }
};

/** Finds the nests: each loop outside every loop. */
class Nests : public IRMutator {
public:
    explicit Nests(int64_t m) : min_bytes(m) {}

protected:
    int64_t min_bytes;
    Stmt visit(const For *op, const Stmt &s) override {
        Survey survey;
        survey.include(s);
        std::set<std::string> streamed;
        for (auto &kv : survey.stored)
            if (kv.second >= min_bytes && !survey.loaded.count(kv.first)) streamed.insert(kv.first);
        if (streamed.empty()) return s;
        return Mark(streamed).mutate(s);
    }
};

}  // namespace

Stmt stream_large_stores(const Stmt &s, int64_t min_bytes) { return Nests(min_bytes).mutate(s); }

}  // namespace internal
}  // namespace weft
