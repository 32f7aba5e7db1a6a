#include "lower/InjectGPU.h"
#include <sstream>
#include <algorithm>
#include <functional>
#include <set>
#include "ir/IRVisitor.h"
#include "ir/Interval.h"
#include "ir/Simplify.h"
#include "ir/Evaluate.h"
#include <map>
#include <optional>

namespace weft {
namespace internal {
namespace {

const char *kDim = "xyz";

std::string block_var(int d) { return std::string("blockIdx.") + kDim[d]; }
/** 0, 1, 2 for blockIdx.x, .y, .z; -1 for another name. */
int block_dim_of(const std::string &n) {
    for (int d = 0; d < 3; d++)
        if (n == block_var(d)) return d;
    return -1;
}
std::string thread_var(int d) { return std::string("threadIdx.") + kDim[d]; }

/** "<func>.s<k>.<var>" -> "<func>" */
std::string loop_func(const std::string &loop) {
    for (size_t p = loop.find(".s"); p != std::string::npos; p = loop.find(".s", p + 1))
        if (p + 2 < loop.size() && isdigit((unsigned char)loop[p + 2])) return loop.substr(0, p);
    return loop;
}

class FindLoops : public IRVisitor {
public:
    bool block = false, thread = false, store = false;

protected:
    void visit(const For *op) override {
        block |= op->for_type == ForType::GPUBlock;
        thread |= op->for_type == ForType::GPUThread;
        IRVisitor::visit(op);
    }
    void visit(const Store *op) override {
        store = true;
        IRVisitor::visit(op);
    }
};
FindLoops find_loops(const Stmt &s) {
    FindLoops f;
    f.include(s);
    return f;
}

/** Buffers read and written by a statement, minus those it allocates itself. */
struct Accesses : public LoadsStores {
    std::set<std::string> allocs;
    // Buffers written only inside the loops of their pure definition (stage s0): such a
    // definition's loops write each point once, so writes of it from different threads never
    // overlap (write after write needs no barrier between them).
    std::set<std::string> pure_writes, other_writes;
    // Buffers accessed only by atomic updates (Store::atomic, and their reads of the element
    // they update): such updates from different threads commute (no barrier between them).
    std::set<std::string> atomic_only, not_atomic;
    std::vector<std::string> loops;
    const Store *in_atomic = nullptr;
    void visit(const For *op) override {
        loops.push_back(op->name);
        IRVisitor::visit(op);
        loops.pop_back();
    }
    void visit(const Load *op) override {
        if (!in_atomic || in_atomic->name != op->name) not_atomic.insert(op->name);
        LoadsStores::visit(op);
    }
    void visit(const Store *op) override {
        bool pure = false;
        for (auto &l : loops) pure = pure || l.rfind(op->name + ".s0.", 0) == 0;
        (pure ? pure_writes : other_writes).insert(op->name);
        (op->atomic ? atomic_only : not_atomic).insert(op->name);
        const Store *outer = in_atomic;
        if (op->atomic) in_atomic = op;
        LoadsStores::visit(op);
        in_atomic = outer;
    }
    void visit(const Allocate *op) override {
        allocs.insert(op->name);
        IRVisitor::visit(op);
    }
    void finish() {
        for (auto &a : allocs) {
            reads.erase(a);
            writes.erase(a);
        }
        for (auto &w : other_writes) pure_writes.erase(w);
        for (auto it = pure_writes.begin(); it != pure_writes.end();) it = writes.count(*it) ? std::next(it) : pure_writes.erase(it);
        for (auto &n : not_atomic) atomic_only.erase(n);
        for (auto it = atomic_only.begin(); it != atomic_only.end();) it = writes.count(*it) ? std::next(it) : atomic_only.erase(it);
    }
};

/** The maximum number of nested GPUThread loops on any path. */
class ThreadDepth : public IRVisitor {
public:
    int depth = 0, max_depth = 0;

protected:
    void visit(const For *op) override {
        bool t = op->for_type == ForType::GPUThread;
        depth += t;
        max_depth = std::max(max_depth, depth);
        IRVisitor::visit(op);
        depth -= t;
    }
};

bool intersects(const std::set<std::string> &a, const std::set<std::string> &b) {
    for (auto &x : a)
        if (b.count(x)) return true;
    return false;
}


/** A constant upper bound of e (an integer), knowing the ranges in scope; block indices
    are >= 0. */
bool constant_upper_bound(Expr e, const Scope &scope, int64_t *out) {
    Scope sc = scope;
    for (int d = 0; d < 3; d++) sc[block_var(d)] = Interval(Expr(0), Expr());
    return constant_upper_bound_in_scope(e, sc, out);
}

Stmt barrier() { return Evaluate::make(Call::make_intrinsic(Int(32), "gpu_thread_barrier", {})); }
int count_barriers(const Stmt &s) {
    class Count : public IRVisitor {
    public:
        int n = 0;

    protected:
        void visit(const Call *op) override {
            n += op->is_intrinsic("gpu_thread_barrier");
            IRVisitor::visit(op);
        }
    } c;
    c.include(s);
    return c.n;
}

/** The last step of a reduction across a block's threads, done as a tree. An rfactor's
    partial results, one per thread in shared memory, are added up (or multiplied, or their
    min or max taken) by a serial loop at the block level, which one thread runs:
        for (v, min, T) { out[I] = out[I] op S[v + c] }
    Where that loop is the last to read S, it becomes log2(T) steps in which the block's
    threads combine pairs of elements of S in place, then out[I] = out[I] op S[min + c] (the
    barriers between the steps are put in like any others). The order of the operations
    changes: rfactor already asks for an associative op. */
class TreeReductions : public IRMutator {
public:
    /** Ready for a kernel's body: the block's thread count (the tree uses no more threads). */
    explicit TreeReductions(const Stmt &kernel_body) {
        class Threads : public IRVisitor {
        public:
            int64_t product = 1, most = 1;
            bool known = true;

        protected:
            void visit(const For *op) override {
                if (op->for_type != ForType::GPUThread) return IRVisitor::visit(op);
                int64_t e = 0;
                if (!is_const_int(unwrap_extent(op->extent), &e)) known = false;
                int64_t saved = product;
                product *= std::max<int64_t>(e, 1);
                most = std::max(most, product);
                IRVisitor::visit(op);
                product = saved;
            }
        } th;
        th.include(kernel_body);
        block_threads = th.known ? th.most : 0;
    }

protected:
    int counter = 0;
    int64_t block_threads = 0;
    Stmt visit(const For *op, const Stmt &s) override {
        return op->for_type == ForType::GPUThread ? s : IRMutator::visit(op, s);  // the block level only
    }
    Stmt visit(const Allocate *op, const Stmt &s) override {
        Stmt body = mutate(op->body);
        // At the block level, storage other than registers is the block's shared memory.
        if (op->memory_type == MemoryType::Register) return Allocate::make(op->name, op->type, op->extent, op->memory_type, body);
        std::vector<Stmt> items;
        flatten(body, items);
        for (size_t i = items.size(); i-- > 0;) {
            LoadsStores rw;
            rw.include(items[i]);
            if (!rw.reads.count(op->name)) continue;
            if (Stmt t = tree(items[i], op->name, op->type); t.defined()) {
                items[i] = t;
                body = Block::make(items);
            }
            break;
        }
        return Allocate::make(op->name, op->type, op->extent, op->memory_type, body);
    }
    Stmt tree(const Stmt &s, const std::string &S, Type t) {
        auto loop = s.as<For>();
        int64_t T = 0;
        if (!loop || loop->for_type != ForType::Serial || !is_const_int(unwrap_extent(loop->extent), &T) || T < 2 || T > 2048)
            return Stmt();
        auto st = loop->body.as<Store>();
        if (!st || st->atomic || st->name == S || st->value.type() != t || t.is_vector() || t.is_bool() ||
            stmt_uses_var(Evaluate::make(st->index), loop->name))
            return Stmt();
        IRNodeType nt = st->value.get()->node_type;
        if (nt != IRNodeType::Add && nt != IRNodeType::Mul && nt != IRNodeType::Min && nt != IRNodeType::Max) return Stmt();
        auto bin = static_cast<const BinaryExprNode *>(st->value.get());
        auto self = [&](const Expr &e) {
            auto l = e.as<Load>();
            return l && l->name == st->name && equal(l->index, st->index);
        };
        const Load *part = nullptr;
        if (self(bin->a)) part = bin->b.as<Load>();
        else if (self(bin->b)) part = bin->a.as<Load>();
        if (!part || part->name != S) return Stmt();
        Expr v = Variable::make(Int(32), loop->name);
        Expr c = simplify(part->index - v);  // S[v + c]
        if (expr_uses_var(c, loop->name)) return Stmt();
        Expr base = simplify(loop->min + c);
        auto combine = [&](Expr a, Expr b) -> Expr {
            switch (nt) {
            case IRNodeType::Add: return a + b;
            case IRNodeType::Mul: return a * b;
            case IRNodeType::Min: return min(a, b);
            default: return max(a, b);
            }
        };
        std::vector<Stmt> steps;
        int64_t len = T, half = 1;
        while (half * 2 < T) half *= 2;
        if (half > block_threads) return Stmt();  // more threads than the block has: it stays serial
        for (; half >= 1; half /= 2) {  // elements [0, len) of S combined into [0, half)
            std::string name = S + ".tree" + std::to_string(counter++);
            Expr tid = Variable::make(Int(32), name);
            Stmt step = Store::make(S, combine(Load::make(t, S, base + tid), Load::make(t, S, base + tid + (int)half)), base + tid);
            if (len < 2 * half) step = IfThenElse::make(tid < (int)(len - half), step);
            steps.push_back(For::make(name, 0, (int)half, ForType::GPUThread, step));
            len = half;
        }
        steps.push_back(Store::make(st->name, combine(Load::make(t, st->name, st->index), Load::make(t, S, base)), st->index,
                                    st->alignment, st->nontemporal));
        return simplify(Block::make(steps));
    }
};

/** Every Load and Store of one buffer inside a statement, with what encloses it there: the
    loops (outermost first) and the lets (substituted into the index, innermost first). */
class BufferAccesses : public IRVisitor {
public:
    explicit BufferAccesses(std::string n) : name(std::move(n)) {}
    struct Loop {
        std::string name;
        Expr min, extent;
        bool thread;
    };
    struct Access {
        Expr index;
        std::vector<Loop> loops;
        int nest_depth;            // the deepest thread nesting of the thread nest it is in
        std::vector<Expr> guards;  // the conditions of the branches it is in (a tile's edge)
        bool write;
    };
    std::string name;
    std::vector<Access> accesses;
    bool unsupported = false;  // an access in a let's value we cannot place, a vector index that is not a ramp

protected:
    std::vector<Loop> loops;
    LetStack lets;
    Expr with_lets(const Expr &e) const { return substitute_lets(e, lets); }
    void record(const Expr &index, bool write) {
        Access a{simplify(with_lets(index)), {}, nest_depth, {}, write};  // (terms of outer loops cancel)
        if (a.index.type().lanes() > 1 && !a.index.as<Ramp>()) unsupported = true;
        for (auto &l : loops) a.loops.push_back({l.name, with_lets(l.min), with_lets(l.extent), l.thread});
        for (auto &c : conds) a.guards.push_back(simplify(with_lets(c)));
        accesses.push_back(a);
    }
    void visit(const Load *op) override {
        if (op->name == name) record(op->index, false);
        IRVisitor::visit(op);
    }
    void visit(const Store *op) override {
        if (op->name == name) record(op->index, true);
        IRVisitor::visit(op);
    }
    template <typename L>
    void in_let_scope(const L *op) {
        include(op->value);
        lets.push_back({op->name, op->value});
        include(op->body);
        lets.pop_back();
    }
    void visit(const LetStmt *op) override { in_let_scope(op); }
    void visit(const Let *op) override { in_let_scope(op); }
    std::vector<Expr> conds;
    void visit(const IfThenElse *op) override {
        include(op->condition);
        conds.push_back(op->condition);
        include(op->then_case);
        conds.back() = Not::make(op->condition);
        include(op->else_case);
        conds.pop_back();
    }
    int nest_depth = 0;
    void visit(const For *op) override {
        include(op->min);
        include(op->extent);
        bool thread = op->for_type == ForType::GPUThread;
        bool outermost = thread && std::none_of(loops.begin(), loops.end(), [](const Loop &l) { return l.thread; });
        int saved = nest_depth;
        if (outermost) {
            ThreadDepth td;
            td.include(Stmt(std::shared_ptr<const StmtNode>(op, [](const StmtNode *) {})));
            nest_depth = td.max_depth;
        }
        loops.push_back({op->name, op->min, unwrap_extent(op->extent), thread});
        include(op->body);
        loops.pop_back();
        nest_depth = saved;
    }
};

using Digits = std::vector<std::pair<int64_t, int64_t>>;  // (place, count), lowest place first

/** rel (an offset made of the digits) -> its dense number: sum of d_j * (product of lower
    counts), the digits taken off from the highest place down. T: int64_t or Expr (rel >= 0). */
template <typename T>
T compact_offset(const Digits &digits, T rel) {
    auto c = [](int64_t v) { return T((int)v); };
    T out = c(0);
    std::vector<int64_t> radices;
    int64_t radix = 1;
    for (auto &d : digits) radices.push_back(radix), radix *= d.second;
    for (size_t j = digits.size(); j-- > 0;) {
        T d = rel / c(digits[j].first);
        out = out + d * c(radices[j]);
        if (j) rel = rel - d * c(digits[j].first);
    }
    return out;
}

/** Where the offsets S (from a thread's first element) are exactly
    { sum of d_j * place_j : 0 <= d_j < count_j } with each place above every offset made of
    the lower ones: the digits (place, count). Empty otherwise (or when S is dense already). */
Digits offset_digits(const std::set<int64_t> &S) {
    if (S.empty()) return {};
    if ((int64_t)S.size() == *S.rbegin() + 1) return {};  // dense already
    Digits digits;
    std::set<int64_t> gen = {0};
    while (gen.size() < S.size()) {
        int64_t a = -1;
        for (int64_t e : S)
            if (!gen.count(e)) {
                a = e;
                break;
            }
        if (a <= *gen.rbegin()) return {};
        int64_t n = 1;
        for (bool all = true; all; ) {
            for (int64_t g : gen)
                if (!S.count(g + n * a)) all = false;
            if (all) n++;
        }
        if (n < 2) return {};  // a is not a place of every offset so far: no digit structure
        std::set<int64_t> next;
        for (int64_t m = 0; m < n; m++)
            for (int64_t g : gen) next.insert(g + m * a);
        gen.swap(next);
        digits.push_back({a, n});
    }
    if (gen != S) return {};
    return digits;
}

/** Subtracts each thread's base offset from the indices of one buffer: index - (b0 + sum of
    c[d] * (thread loop d's variable - its min)), the thread loops counted from the innermost
    (dimension x). */
class RebaseIndices : public IRMutator {
public:
    std::string name;
    int64_t b0 = 0, c[3] = {0, 0, 0};
    /** Where defined, the base instead of b0 + c . t: an Expr of the threads' coordinates
        (the variables thread_coordinate(d)) and the block indices. */
    Expr base;
    static std::string thread_coordinate(int d) { return std::string("weft.thread_coordinate.") + kDim[d]; }

protected:
    std::vector<std::pair<std::string, Expr>> threads;  // (loop variable, min), outermost first
    Expr offset() const {
        Expr o = base.defined() ? base : Expr((int)b0);
        int n = (int)threads.size();
        for (int i = 0; i < n; i++) {
            int d = n - 1 - i;
            Expr t = Variable::make(Int(32), threads[i].first) - threads[i].second;
            if (base.defined()) o = substitute(thread_coordinate(d), t, o);
            else o = o + Expr((int)c[d]) * t;
        }
        return o;
    }
    LetStack lets;
    /** The index relative to the thread's first element, with the lets in scope substituted so
        that the thread's own terms cancel: unrolled accesses get constant indices (which the
        CUDA compiler keeps in registers). */
    Expr rebase(const Expr &index) {
        Expr e = substitute_lets(index, lets);
        Expr o = offset();
        if (auto r = e.as<Ramp>()) return Ramp::make(compact(simplify(r->base - o)), r->stride, r->lanes);
        return compact(simplify(e - o));
    }
    /** An offset from the thread's first element -> its position among the thread's elements. */
    Expr compact(const Expr &rel) const { return digits.empty() ? rel : simplify(compact_offset<Expr>(digits, rel)); }

public:
    /** The digits of the threads' offsets (offset_digits): indices become the offsets' dense
        numbers. Empty: indexed by the offset itself. */
    Digits digits;
    /** The lets in scope around the buffer's allocation (outermost first): substituted too,
        so that what is constant in the kernel folds (a tile cut at the image's edge). */
    void set_outer_lets(const LetStack &outer) { lets = outer; }

protected:
    template <typename L>
    auto in_let_scope(const L *op) {
        Expr v = mutate(op->value);
        lets.push_back({op->name, v});
        auto b = mutate(op->body);
        lets.pop_back();
        return L::make(op->name, v, b);
    }
    Stmt visit(const LetStmt *op, const Stmt &) override { return in_let_scope(op); }
    Expr visit(const Let *op, const Expr &) override { return in_let_scope(op); }
    Stmt visit(const For *op, const Stmt &s) override {
        bool t = op->for_type == ForType::GPUThread;
        if (t) threads.push_back({op->name, op->min});
        Stmt r = IRMutator::visit(op, s);
        if (t) threads.pop_back();
        return r;
    }
    Expr visit(const Load *op, const Expr &e) override {
        Expr i = mutate(op->index);
        if (op->name != name) return i.same_as(op->index) ? e : Load::make(op->type, op->name, i, op->alignment);
        return Load::make(op->type, op->name, rebase(i), 0);
    }
    Stmt visit(const Store *op, const Stmt &s) override {
        Expr v = mutate(op->value), i = mutate(op->index);
        if (op->name != name) return Store::make(op->name, v, i, op->alignment, op->nontemporal, op->atomic);
        return Store::make(op->name, v, rebase(i), 0, op->nontemporal, op->atomic);
    }
};

/** The free variables of an Expr. */
class FreeVars : public IRVisitor {
public:
    std::set<std::string> names;

protected:
    void visit(const Variable *op) override { names.insert(op->name); }
};

class KernelBuilder {
public:
    KernelBuilder(const Env &e, const GPULimits &l) : env(e), lim(l) {}

    Stmt make_kernel(const For *outer) {
        // The perfect nest of block loops, with the lets between them.
        struct Item {
            const For *loop = nullptr;
            std::string let;
            Expr value;
        };
        std::vector<Item> items;
        std::vector<const For *> loops;
        Stmt cur = Stmt(std::shared_ptr<const StmtNode>(outer, [](const StmtNode *) {}));
        Stmt body;
        while (true) {
            std::vector<Item> tmp;
            Stmt s = cur;
            while (auto l = s.as<LetStmt>()) {
                tmp.push_back({nullptr, l->name, l->value});
                s = l->body;
            }
            auto f = s.as<For>();
            if (f && f->for_type == ForType::GPUBlock) {
                items.insert(items.end(), tmp.begin(), tmp.end());
                items.push_back({f, "", Expr()});
                loops.push_back(f);
                cur = f->body;
                continue;
            }
            body = cur;
            break;
        }
        kernel_name = loops[0]->name;
        int n = (int)loops.size();
        if (n > 3)
            user_error("weft: " + describe(loops[3]->name) + ": a kernel has at most 3 gpu_blocks dimensions; this one has " +
                       std::to_string(n));
        std::vector<Expr> ext(3);
        std::map<std::string, Expr> before;  // lets before a loop (already substituted)
        std::set<std::string> block_vars;
        for (auto &it : items) {
            if (!it.loop) {
                before[it.let] = substitute(before, it.value);
                continue;
            }
            int d = n - 1 - (int)(std::find(loops.begin(), loops.end(), it.loop) - loops.begin());
            Expr e = simplify(substitute(before, unwrap_extent(it.loop->extent)));
            for (auto &v : block_vars)
                if (expr_uses_var(e, v))
                    user_error("weft: " + describe(it.loop->name) + ": the extent of a gpu_blocks loop (" + to_string(e) +
                               ") depends on the outer gpu_blocks loop " + v + "; the grid must be rectangular");
            ext[d] = e;
            block_vars.insert(it.loop->name);
            before[it.loop->name] = Variable::make(Int(32), it.loop->name);  // opaque inside
        }
        // A block loop's variable: its min plus the block index (0 where the grid has one block
        // along it: what depends on it folds to constants, e.g. a thread's register indices).
        auto block_value = [&](const For *loop, int d) {
            return simplify(loop->min + (is_const_one(ext[d]) ? Expr(0) : Variable::make(Int(32), block_var(d))));
        };
        for (auto &it : items) {
            if (it.loop) {
                int d = n - 1 - (int)(std::find(loops.begin(), loops.end(), it.loop) - loops.begin());
                lets.push_back({it.loop->name, block_value(it.loop, d)});
            } else {
                lets.push_back({it.let, it.value});
            }
        }
        for (int d = 0; d < 3; d++) grid_ext[d] = ext[d];
        Stmt inner = block_level(TreeReductions(body).mutate(body));
        int64_t threads = (int64_t)max_c[0] * max_c[1] * max_c[2];
        if (threads > lim.max_threads_per_block)
            user_error("weft: the GPU kernel of " + describe(kernel_name) + " uses " + std::to_string(max_c[0]) + "x" +
                       std::to_string(max_c[1]) + "x" + std::to_string(max_c[2]) + " = " + std::to_string(threads) +
                       " threads per block, more than the limit of " + std::to_string(lim.max_threads_per_block) +
                       "; use smaller gpu_threads / gpu_tile factors");
        if (shared_bytes > lim.max_shared_bytes)
            user_error("weft: the GPU kernel of " + describe(kernel_name) + " uses " + std::to_string(shared_bytes) +
                       " bytes of shared memory (" + shared_list + "), more than the limit of " +
                       std::to_string(lim.max_shared_bytes) + " bytes; use smaller tiles or compute less at the gpu_blocks level");
        for (auto it = items.rbegin(); it != items.rend(); ++it) {
            if (it->loop) {
                int d = n - 1 - (int)(std::find(loops.begin(), loops.end(), it->loop) - loops.begin());
                inner = LetStmt::make(it->loop->name, block_value(it->loop, d), inner);
            } else {
                inner = LetStmt::make(it->let, it->value, inner);
            }
        }
        for (int d = 0; d < n; d++) inner = For::make(block_var(d), 0, ext[d], ForType::GPUBlock, inner);
        return inner;
    }

private:
    const Env &env;
    const GPULimits &lim;
    LetStack lets;  // in scope inside the kernel, outermost first
    int max_c[3] = {1, 1, 1};
    Expr grid_ext[3];  // the kernel's gpu_blocks extents (undefined past its dimensions)
    int64_t shared_bytes = 0;
    std::string shared_list;
    /** What the block's threads have accessed since the last barrier (or the start of a loop's
        iteration), by buffer. */
    struct Pending {
        std::set<std::string> r, w;
        std::set<std::string> pure;    // of w: written by a pure definition only
        std::set<std::string> atomic;  // of w: accessed by atomic updates only
        bool has(const std::string &n) const { return r.count(n) || w.count(n); }
        bool has_any() const { return !r.empty() || !w.empty(); }
        /** Pending after either a or b (a branch taken or not, a loop's iteration or what was
            before it): pure where pure in each that left it pending, atomic likewise. */
        static Pending either(const Pending &a, const Pending &b) {
            Pending m;
            m.r = a.r;
            m.r.insert(b.r.begin(), b.r.end());
            m.w = a.w;
            m.w.insert(b.w.begin(), b.w.end());
            for (auto &n : m.w) {
                if ((!a.w.count(n) || a.pure.count(n)) && (!b.w.count(n) || b.pure.count(n))) m.pure.insert(n);
                if ((!a.has(n) || a.atomic.count(n)) && (!b.has(n) || b.atomic.count(n))) m.atomic.insert(n);
            }
            return m;
        }
        bool operator==(const Pending &o) const { return r == o.r && w == o.w && pure == o.pure && atomic == o.atomic; }
    };
    Pending pending;
    std::string kernel_name;
    Scope thread_scope;

    std::string describe(const std::string &loop) const {
        std::string f = loop_func(loop);
        auto it = env.index.find(f);
        std::string user = it != env.index.end() ? env.funcs[it->second].contents->name : f;
        return "Func \"" + user + "\" (loop " + loop + ")";
    }
    std::string func_user_name(const std::string &uname) const {
        auto it = env.index.find(uname);
        return it != env.index.end() ? env.funcs[it->second].contents->name : uname;
    }

    /** A serial loop's range in thread_scope while it is in scope: it bounds the sizes of what
        is allocated inside it. */
    struct LoopRange {
        KernelBuilder &k;
        std::string name;
        bool scoped;
        LoopRange(KernelBuilder &kb, const For *op) : k(kb), name(op->name), scoped(!kb.thread_scope.count(op->name)) {
            if (scoped) k.thread_scope[name] = Interval(k.resolve(op->min), k.resolve(op->min + op->extent - 1));
        }
        ~LoopRange() {
            if (scoped) k.thread_scope.erase(name);
        }
    };

    /** e with the kernel's lets substituted, simplified. */
    Expr resolve(const Expr &e) const { return simplify(substitute_lets(e, lets)); }

    std::set<std::string> private_bufs;  // block-level allocations promoted to per-thread storage
    void drop_private(Accesses &a) const {
        for (auto &n : private_bufs) {
            a.reads.erase(n);
            a.writes.erase(n);
        }
    }

    /** How a block-level register Func is kept per thread: its indices' rebasing, its size. */
    struct Promotion {
        RebaseIndices rebase;
        int64_t span = 0;
    };
    // Analysed once per kernel (loops are gone over more than once); the Stmt keeps its node,
    // so that no other node gets its address.
    std::map<const Allocate *, std::pair<Stmt, std::optional<Promotion>>> promotions;

    /** A Func stored in registers (store_in(MemoryType::Register)) but computed at the block
        level: every thread reads and writes only its own elements (checked by evaluating every
        access for every thread, in every block where the accesses depend on the block), so
        each thread keeps its part in a per-thread array indexed relative to its first element,
        no shared memory and no barriers for it. Null where that cannot be shown (the storage
        then stays in shared memory). */
    Stmt promote_to_registers(const Stmt &s, const Allocate *op) {
        auto it = promotions.find(op);
        if (it == promotions.end()) it = promotions.emplace(op, std::make_pair(s, analyse_promotion(op))).first;
        if (!it->second.second) return Stmt();
        Promotion pr = *it->second.second;  // (a copy: the mutator keeps state)
        private_bufs.insert(op->name);
        Stmt body = block_level(pr.rebase.mutate(op->body));
        return Allocate::make(op->name, op->type, Expr((int)pr.span), MemoryType::Register, body);
    }

    std::optional<Promotion> analyse_promotion(const Allocate *op) {
        BufferAccesses ba(op->name);
        ba.include(op->body);
        if (ba.unsupported || ba.accesses.empty()) return std::nullopt;
        size_t nthreads = 0;
        for (auto &a : ba.accesses) {
            size_t n = 0;
            for (auto &l : a.loops) n += l.thread;
            // Thread loops map to threadIdx from the innermost (x) when the access is as deep as
            // its nest (as in_thread maps them); anything else is left alone.
            if (n == 0 || n > 3 || (nthreads && n != nthreads) || (int)n != a.nest_depth) return std::nullopt;
            nthreads = n;
        }
        // The accesses with the kernel's lets substituted: in terms of their loops and the
        // block indices only.
        struct Resolved {
            Expr index;
            std::vector<Expr> mins, exts, guards;
            std::vector<bool> needed;  // loops that the index or an inner loop's bounds use
            bool duplicate = false;    // the same as an earlier one (unrolled copies): not evaluated again
        };
        std::set<std::string> seen;
        std::vector<Resolved> rs;
        bool block_used[3] = {false, false, false};  // by an index or a loop's bounds
        bool guard_block[3] = {false, false, false};  // by a guard only
        for (auto &a : ba.accesses) {
            Resolved r;
            r.index = resolve(a.index);
            for (auto &l : a.loops) {
                r.mins.push_back(resolve(l.min));
                r.exts.push_back(resolve(l.extent));
            }
            std::set<std::string> loop_names;
            for (auto &l : a.loops) loop_names.insert(l.name);
            // Are e's variables its loops' and the block indices (dims: those it uses), and does
            // it load nothing?
            auto bound_only = [&](const Expr &e, bool *dims) {
                LoadsStores ls;  // a loaded value (a gather's index) cannot be evaluated here
                ls.include(e);
                if (!ls.reads.empty()) return false;
                FreeVars fv;
                fv.include(e);
                bool uses[3] = {false, false, false};
                for (auto &n : fv.names) {
                    if (loop_names.count(n)) continue;
                    int d = block_dim_of(n);
                    if (d < 0 || !is_const_int(grid_ext[d])) return false;
                    uses[d] = true;
                }
                for (int d = 0; d < 3; d++) dims[d] = dims[d] || uses[d];
                return true;
            };
            for (auto &g : a.guards) r.guards.push_back(resolve(g));
            if (!bound_only(r.index, block_used)) return std::nullopt;
            for (size_t i = 0; i < a.loops.size(); i++)
                if (!bound_only(r.mins[i], block_used) || !bound_only(r.exts[i], block_used)) return std::nullopt;
            // Loops whose variable neither the index nor an inner loop's bounds use need one
            // iteration only (e.g. the reduction loops around an accumulator's update).
            r.needed.assign(a.loops.size(), false);
            for (size_t i = 0; i < a.loops.size(); i++) {
                const std::string &v = a.loops[i].name;
                bool used = a.loops[i].thread || expr_uses_var(r.index, v);
                for (size_t j = i + 1; j < a.loops.size() && !used; j++)
                    used = expr_uses_var(r.mins[j], v) || expr_uses_var(r.exts[j], v);
                r.needed[i] = used;
            }
            // Guards on those loops and the block indices only (a tile's edge) leave accesses
            // out; another (a reduction's last step, a Param) is dropped: every access is then
            // counted, as if run.
            std::vector<Expr> guards;
            for (auto &g : r.guards) {
                bool keep = bound_only(g, guard_block);
                for (size_t i = 0; i < a.loops.size(); i++)
                    if (!r.needed[i] && expr_uses_var(g, a.loops[i].name)) keep = false;
                if (keep) guards.push_back(g);
            }
            r.guards.swap(guards);
            std::ostringstream key;
            key << r.index;
            for (size_t i = 0; i < a.loops.size(); i++)
                key << "|" << a.loops[i].name << ":" << a.loops[i].thread << ":" << r.mins[i] << ":" << r.exts[i] << ":" << r.needed[i];
            for (auto &g : r.guards) key << "|if " << g;
            r.duplicate = !seen.insert(key.str()).second;
            rs.push_back(std::move(r));
        }
        // The blocks to evaluate: every one, where the accesses depend on the block (a tile
        // cut at the edge of the image); one otherwise. Guards that depend on the block are
        // evaluated where the grid is small, dropped (every access counted) where it is not.
        auto blocks_of = [&](const bool *dims) {
            int64_t n = 1;
            for (int d = 0; d < 3; d++)
                if (dims[d]) n *= std::max<int64_t>(*as_const_int(grid_ext[d]), 1);
            return n;
        };
        if (blocks_of(block_used) > 64) return std::nullopt;
        bool with_guards[3];
        for (int d = 0; d < 3; d++) with_guards[d] = block_used[d] || guard_block[d];
        if (blocks_of(with_guards) <= 64) {
            std::copy(with_guards, with_guards + 3, block_used);
        } else {
            for (auto &r : rs) {
                std::vector<Expr> kept;
                for (auto &g : r.guards) {
                    bool other = false;
                    for (int d = 0; d < 3; d++) other = other || (!block_used[d] && expr_uses_var(g, block_var(d)));
                    if (!other) kept.push_back(g);
                }
                r.guards.swap(kept);
            }
        }
        std::vector<std::map<std::string, int64_t>> blocks = {{}};
        for (int d = 0; d < 3; d++) {
            if (!block_used[d]) continue;
            int64_t ext = *as_const_int(grid_ext[d]);
            if (ext < 1) return std::nullopt;
            std::vector<std::map<std::string, int64_t>> more;
            for (auto &b : blocks)
                for (int64_t v = 0; v < ext; v++) {
                    more.push_back(b);
                    more.back()[block_var(d)] = v;
                }
            blocks.swap(more);
        }
        // Each (block, thread)'s elements: thread ids are x + 1024 (y + 1024 z).
        std::map<std::pair<size_t, int64_t>, std::set<int64_t>> elements;
        std::vector<size_t> block_size(blocks.size(), 0);
        struct VectorAccess {
            size_t block;
            int64_t thread, first_lane;
            int lanes;
        };
        std::vector<VectorAccess> ramps;
        bool dense_ramps = true;  // all vector accesses have stride 1
        int64_t budget = 1 << 20;
        bool ok = true;
        for (size_t bi = 0; bi < blocks.size() && ok; bi++) {
            std::map<int64_t, int64_t> owner;  // element -> thread
            for (size_t ai = 0; ai < ba.accesses.size() && ok; ai++) {
                auto &a = ba.accesses[ai];
                const Resolved &r = rs[ai];
                if (r.duplicate) continue;
                std::map<std::string, int64_t> vars = blocks[bi];
                std::function<void(size_t)> walk = [&](size_t i) {
                    if (!ok) return;
                    if (i == a.loops.size()) {
                        if (--budget < 0) {
                            ok = false;
                            return;
                        }
                        for (auto &g : r.guards)
                            if (!evaluate_int(g, vars)) return;  // outside the tile: not run
                        int64_t t[3] = {0, 0, 0};
                        int k = 0;
                        for (size_t j = a.loops.size(); j-- > 0;)
                            if (a.loops[j].thread) t[k++] = vars[a.loops[j].name] - evaluate_int(r.mins[j], vars);
                        int64_t tid = t[0] + 1024 * (t[1] + 1024 * t[2]);
                        int lanes = r.index.type().lanes();
                        int64_t base = 0, stride = 0;
                        if (auto ramp = r.index.as<Ramp>()) {
                            base = evaluate_int(ramp->base, vars);
                            stride = evaluate_int(ramp->stride, vars);
                            dense_ramps = dense_ramps && stride == 1;
                            ramps.push_back({bi, tid, base, ramp->lanes});
                        } else {
                            base = evaluate_int(r.index, vars);
                        }
                        for (int l = 0; l < lanes; l++) {
                            int64_t e = base + stride * l;
                            auto it = owner.find(e);
                            if (it != owner.end() && it->second != tid) {
                                ok = false;  // two threads share an element
                                return;
                            }
                            owner[e] = tid;
                            if (elements[{bi, tid}].insert(e).second) block_size[bi]++;
                        }
                        return;
                    }
                    int64_t mn = evaluate_int(r.mins[i], vars), ex = evaluate_int(r.exts[i], vars);
                    if (ex > 1 << 20) {
                        ok = false;
                        return;
                    }
                    if (!r.needed[i] && ex > 0) ex = 1;
                    for (int64_t v = mn; v < mn + ex && ok; v++) {
                        vars[a.loops[i].name] = v;
                        walk(i + 1);
                    }
                    vars.erase(a.loops[i].name);
                };
                try {
                    walk(0);
                } catch (const Error &) {
                    ok = false;  // something it cannot evaluate: shared memory, which is always right
                }
            }
        }
        if (!ok) return std::nullopt;
        // Each thread's elements are offsets from its base. Two choices of base: linear,
        // b0 + c.x * x + c.y * y + c.z * z read off the block with the most elements (a whole
        // tile: its threads' first elements); or where the threads' first elements are not
        // linear in their coordinates (a tile's rows of 2 items each spread over the threads),
        // the first write's index with its other loops at their minimums. The one with the
        // smaller arrays is kept.
        size_t ref = std::max_element(block_size.begin(), block_size.end()) - block_size.begin();
        auto first = [&](int64_t x, int64_t y, int64_t z, int64_t *f) {
            auto it = elements.find({ref, x + 1024 * (y + 1024 * z)});
            if (it == elements.end()) return false;
            *f = *it->second.begin();
            return true;
        };
        // The offsets used, over every thread of every block, with base_of(block, thread): a
        // thread's array has a place for each (a thread at the edge of the image uses some of
        // them); their digits; the arrays' size. Null where an element lies below its base.
        auto layout = [&](const std::function<int64_t(size_t, int64_t)> &base_of) -> std::optional<std::pair<Digits, int64_t>> {
            std::set<int64_t> offsets;
            for (auto &[key, es] : elements) {
                int64_t b = base_of(key.first, key.second);
                if (*es.begin() < b) return std::nullopt;
                for (int64_t e : es) offsets.insert(e - b);
            }
            int64_t span = *offsets.rbegin() + 1;
            // Number the offsets densely where they have a digit structure (e.g. 2x2 groups of
            // 4x4, 64 apart): the array then has as many elements as a thread uses.
            Digits digits;
            if (dense_ramps) digits = offset_digits(offsets);
            for (auto &r : ramps) {
                // A vector access stays a dense vector only if its lanes are consecutive elements.
                int64_t rel = r.first_lane - base_of(r.block, r.thread);
                for (int l = 0; l < r.lanes && !digits.empty(); l++)
                    if (compact_offset<int64_t>(digits, rel + l) != compact_offset<int64_t>(digits, rel) + l) digits.clear();
            }
            if (!digits.empty()) {
                span = 1;
                for (auto &d : digits) span *= d.second;
            }
            if (span <= 0 || span > 4096) return std::nullopt;
            return std::make_pair(digits, span);
        };
        RebaseIndices rb;
        rb.name = op->name;
        rb.set_outer_lets(lets);
        std::optional<std::pair<Digits, int64_t>> best;
        if (first(0, 0, 0, &rb.b0)) {
            for (int d = 0; d < 3; d++) {
                int64_t unit[3] = {0, 0, 0}, f = 0;
                unit[d] = 1;
                rb.c[d] = first(unit[0], unit[1], unit[2], &f) ? f - rb.b0 : 0;
            }
            best = layout([&](size_t, int64_t tid) {
                return rb.b0 + rb.c[0] * (tid % 1024) + rb.c[1] * (tid / 1024 % 1024) + rb.c[2] * (tid / (1024 * 1024));
            });
        }
        // The first write's index, its thread loops' variables as the thread coordinates, its
        // other loops' at their minimums.
        Expr base;
        for (size_t ai = 0; ai < ba.accesses.size() && !base.defined(); ai++) {
            auto &a = ba.accesses[ai];
            if (!a.write) continue;
            base = rs[ai].index;
            if (auto ramp = base.as<Ramp>()) base = ramp->base;
            int d = 0;
            for (size_t j = a.loops.size(); j-- > 0;) {  // innermost first: a min may use an outer loop's variable
                Expr v = rs[ai].mins[j];
                if (a.loops[j].thread) v = Variable::make(Int(32), RebaseIndices::thread_coordinate(d++)) + v;
                base = substitute(a.loops[j].name, v, base);
            }
            base = simplify(base);
        }
        if (base.defined()) {
            auto base_of = [&](size_t bi, int64_t tid) {
                std::map<std::string, int64_t> vars = blocks[bi];
                for (int d = 0; d < 3; d++) vars[RebaseIndices::thread_coordinate(d)] = d == 2 ? tid / (1024 * 1024) : tid / (d ? 1024 : 1) % 1024;
                return evaluate_int(base, vars);
            };
            std::optional<std::pair<Digits, int64_t>> other;
            try {
                other = layout(base_of);
            } catch (const Error &) {
            }
            if (other && (!best || other->second < best->second)) {
                best = other;
                rb.base = base;
            }
        }
        if (!best) return std::nullopt;
        rb.digits = best->first;
        int64_t span = best->second;
        return Promotion{rb, span};
    }

    Stmt leaf(const Stmt &transformed, const Stmt &original) {
        Accesses a;
        a.include(original);
        a.finish();
        drop_private(a);
        // Atomic updates of a buffer that only atomic updates have accessed since the barrier
        // need none; anything else after an atomic update does, as after a plain access.
        bool conflict = false;
        for (auto &w : a.writes) {
            if (a.atomic_only.count(w)) conflict = conflict || (pending.has(w) && !pending.atomic.count(w));
            else conflict = conflict || pending.r.count(w) || (pending.w.count(w) && !(pending.pure.count(w) && a.pure_writes.count(w)));
        }
        for (auto &n : a.reads)
            if (!a.atomic_only.count(n)) conflict = conflict || pending.w.count(n);
        Stmt r = transformed;
        if (conflict) {
            r = Block::make(barrier(), r);
            pending = Pending();
        }
        for (auto &w : a.writes) {
            bool pure = a.pure_writes.count(w) && (!pending.w.count(w) || pending.pure.count(w));
            if (pure) pending.pure.insert(w);
            else pending.pure.erase(w);
        }
        for (auto &n : a.reads)
            if (!a.atomic_only.count(n)) pending.atomic.erase(n);
        for (auto &w : a.writes) {
            if (a.atomic_only.count(w)) pending.atomic.insert(w);  // a plain pending access would have conflicted
            else pending.atomic.erase(w);
        }
        pending.r.insert(a.reads.begin(), a.reads.end());
        pending.w.insert(a.writes.begin(), a.writes.end());
        return r;
    }

    Stmt single_thread(const Stmt &s) {
        return leaf(For::make(thread_var(0), 0, 1, ForType::GPUThread, s), s);
    }

    Stmt block_level(const Stmt &s) {
        if (!s.defined()) return s;
        if (auto op = s.as<LetStmt>()) {
            lets.push_back({op->name, op->value});
            Stmt b = block_level(op->body);
            lets.pop_back();
            return LetStmt::make(op->name, op->value, b);
        }
        if (auto op = s.as<Block>()) {
            Stmt a = block_level(op->first);
            Stmt b = block_level(op->rest);
            return Block::make(a, b);
        }
        if (auto op = s.as<IfThenElse>()) {
            const Pending before = pending;
            Stmt t = block_level(op->then_case);
            const Pending after_then = pending;
            pending = before;
            Stmt e = block_level(op->else_case);
            pending = Pending::either(after_then, pending);
            return IfThenElse::make(op->condition, t, e);
        }
        if (auto op = s.as<Allocate>()) {
            if (op->memory_type == MemoryType::Register)
                if (Stmt p = promote_to_registers(s, op); p.defined()) return p;
            Expr ext = resolve(op->extent);
            int64_t n;
            if (!constant_upper_bound(ext, thread_scope, &n))
                user_error("weft: Func \"" + func_user_name(op->name) + "\" is stored in GPU shared memory inside the kernel of " +
                           describe(kernel_name) + ", but its size (" + to_string(ext) +
                           " elements) is not a constant; use constant tile sizes or bound() it");
            int64_t bytes = std::max<int64_t>(n, 1) * op->type.bytes();
            bytes = (bytes + 15) / 16 * 16;
            shared_bytes += bytes;
            shared_list += (shared_list.empty() ? "" : ", ") + func_user_name(op->name) +
                           (op->memory_type == MemoryType::Register
                                ? " (store_in(Register), kept in shared memory: not every element is one thread's own)"
                                : "") +
                           ": " + std::to_string(bytes);
            Stmt b = block_level(op->body);
            return Allocate::make(op->name, op->type, Expr((int)n), MemoryType::GPUShared, b);
        }
        if (auto op = s.as<For>()) {
            if (op->for_type == ForType::GPUBlock)
                user_error("weft: " + describe(op->name) + " is a gpu_blocks loop inside the kernel of " + describe(kernel_name) +
                           " but not directly nested in its gpu_blocks loops (a Func computed at an outer gpu_blocks loop?); "
                           "compute producers at the innermost gpu_blocks loop or inside the gpu_threads loops");
            if (op->for_type == ForType::GPUThread) return leaf(thread_nest(op), s);
            FindLoops fl = find_loops(op->body);
            if (!fl.thread) return fl.store ? single_thread(s) : s;
            // A block-level loop around thread loops: every thread runs it. What one iteration
            // leaves pending (after its last barrier) conflicts with the next iteration's
            // accesses, also those of the shared buffers allocated inside it: their storage is
            // the kernel's, the same at every iteration (reloading a staged tile must wait
            // until every thread has read the previous one). An iteration starts with what was
            // pending before the loop and what an iteration leaves pending: found by going over
            // the body (its result dropped) until that no longer grows; where it does not
            // settle, everything the body accesses is taken as pending.
            // The loop's range bounds the sizes of what is allocated inside it (a last, smaller
            // step of a tile: the shared buffer gets the largest size).
            // Where what was pending before the loop makes the body wait at a barrier that
            // the iterations themselves would not need (the bins of a histogram cleared, then
            // added to atomically at each iteration), one barrier before the loop does instead.
            LoopRange range(*this, op);
            // The body gone over from `start`, its result and the totals it adds to dropped:
            // what it leaves pending and how many barriers it has.
            auto dry_run = [&](const Pending &start, int *barriers) {
                int64_t saved_bytes = shared_bytes;
                std::string saved_list = shared_list;
                std::set<std::string> saved_private = private_bufs;
                int saved_c[3] = {max_c[0], max_c[1], max_c[2]};
                pending = start;
                Stmt b = block_level(op->body);
                if (barriers) *barriers = count_barriers(b);
                shared_bytes = saved_bytes;
                shared_list = saved_list;
                private_bufs = saved_private;
                std::copy(saved_c, saved_c + 3, max_c);
                return pending;
            };
            auto settle = [&](const Pending &before) {
                Pending start = before;  // what an iteration starts with
                for (int pass = 0; pass < 4; pass++) {
                    Pending end = dry_run(start, nullptr);
                    Pending next = Pending::either(before, end);
                    for (auto &w : end.w) next.pure.erase(w);  // an iteration's writes are not the same pure ones
                    if (next == start) return start;
                    start = next;
                }
                Accesses a;
                a.include(op->body);
                drop_private(a);
                start.r.insert(a.reads.begin(), a.reads.end());
                start.w.insert(a.writes.begin(), a.writes.end());
                for (auto &w : a.writes) start.pure.erase(w);
                for (auto *set : {&a.reads, &a.writes})
                    for (auto &n : *set) start.atomic.erase(n);
                return start;
            };
            const Pending pre = pending;  // (dry runs change pending)
            Pending start = settle(pre);
            bool barrier_before = false;
            if (pre.has_any()) {
                Pending start0 = settle(Pending());
                if (!(start0 == start)) {
                    int inside = 0, inside0 = 0;
                    dry_run(start, &inside);
                    dry_run(start0, &inside0);
                    barrier_before = inside0 < inside;
                    if (barrier_before) start = start0;
                }
            }
            pending = start;
            Stmt b = block_level(op->body);
            // After the loop (also where it runs no iteration): what an iteration starts with
            // bounds what is pending.
            Pending after = start;
            for (auto &w : start.pure)
                if (!pending.pure.count(w)) after.pure.erase(w);
            for (auto &n : start.atomic)
                if (pending.has(n) && !pending.atomic.count(n)) after.atomic.erase(n);
            pending = after;
            ForType ft = op->for_type == ForType::Unrolled ? ForType::Unrolled : ForType::Serial;
            Stmt loop = For::make(op->name, op->min, op->extent, ft, b);
            return barrier_before ? Block::make(barrier(), loop) : loop;
        }
        if (auto op = s.as<Store>()) {
            (void)op;
            return single_thread(s);
        }
        return s;  // AssertStmt, Evaluate
    }

    // ---- thread nests ----
    int nest_depth = 0, cur_depth = 0;

    Stmt thread_nest(const For *op) {
        ThreadDepth td;
        td.include(Stmt(std::shared_ptr<const StmtNode>(op, [](const StmtNode *) {})));
        nest_depth = td.max_depth;
        if (nest_depth > 3)
            user_error("weft: " + describe(op->name) + ": a kernel has at most 3 gpu_threads dimensions; this nest has " +
                       std::to_string(nest_depth));
        cur_depth = 0;
        size_t saved = lets.size();
        Stmt r = in_thread(Stmt(std::shared_ptr<const StmtNode>(op, [](const StmtNode *) {})));
        lets.resize(saved);
        return r;
    }

    Stmt in_thread(const Stmt &s) {
        if (!s.defined()) return s;
        if (auto op = s.as<LetStmt>()) {
            lets.push_back({op->name, op->value});
            Stmt b = in_thread(op->body);
            lets.pop_back();
            return LetStmt::make(op->name, op->value, b);
        }
        if (auto op = s.as<Block>()) return Block::make(in_thread(op->first), in_thread(op->rest));
        if (auto op = s.as<IfThenElse>()) return IfThenElse::make(op->condition, in_thread(op->then_case), in_thread(op->else_case));
        if (auto op = s.as<Allocate>()) {
            Expr ext = resolve(op->extent);
            int64_t n;
            if (!constant_upper_bound(ext, thread_scope, &n))
                user_error("weft: Func \"" + func_user_name(op->name) + "\" is stored per GPU thread (registers) inside " +
                           describe(kernel_name) + ", but its size (" + to_string(ext) +
                           " elements) is not a constant; use constant split factors or bound() it");
            return Allocate::make(op->name, op->type, Expr((int)std::max<int64_t>(n, 1)), MemoryType::Register,
                                  in_thread(op->body));
        }
        if (auto op = s.as<For>()) {
            if (op->for_type == ForType::GPUBlock)
                user_error("weft: " + describe(op->name) + " is a gpu_blocks loop inside a gpu_threads loop of " +
                           describe(kernel_name) + "; block loops must be outside thread loops");
            if (op->for_type != ForType::GPUThread) {
                // Its range bounds the sizes of what is allocated inside it (a last, shorter
                // step of k: a thread's registers get the largest step's size).
                LoopRange range(*this, op);
                Stmt b = in_thread(op->body);
                ForType ft = op->for_type == ForType::Parallel ? ForType::Serial : op->for_type;
                return For::make(op->name, op->min, op->extent, ft, b);
            }
            int d = nest_depth - 1 - cur_depth;
            Expr ext = unwrap_extent(op->extent);
            Expr r = resolve(ext);
            int64_t c = 0;
            bool exact = is_const_int(r, &c);
            if (!exact) {
                if (!constant_upper_bound(r, thread_scope, &c))
                    user_error("weft: " + describe(op->name) + ": the extent of a gpu_threads loop (" + to_string(r) +
                               ") is not a constant and has no constant upper bound; block dimensions must be known "
                               "when compiling: use constant split factors (gpu_tile) or bound()");
            }
            if (c < 1) {
                c = 1;
                exact = false;
            }
            if (c > lim.max_block_dim[d])
                user_error("weft: " + describe(op->name) + ": gpu_threads dimension " + std::string(1, kDim[d]) + " has " +
                           std::to_string(c) + " threads, more than the limit of " + std::to_string(lim.max_block_dim[d]) +
                           " (and " + std::to_string(lim.max_threads_per_block) + " per block)");
            max_c[d] = std::max<int>(max_c[d], (int)c);
            Expr tv = Variable::make(Int(32), thread_var(d));
            thread_scope[thread_var(d)] = Interval(Expr(0), Expr((int)c - 1));
            lets.push_back({op->name, simplify(op->min + tv)});
            cur_depth++;
            Stmt b = in_thread(op->body);
            cur_depth--;
            lets.pop_back();
            thread_scope.erase(thread_var(d));
            if (!exact) b = IfThenElse::make(tv < ext, b);
            b = LetStmt::make(op->name, simplify(op->min + tv), b);
            return For::make(thread_var(d), 0, Expr((int)c), ForType::GPUThread, b);
        }
        return s;
    }
};

class Inject : public IRMutator {
public:
    Inject(const Env &e, const GPULimits &l) : env(e), lim(l) {}
    const Env &env;
    const GPULimits &lim;

protected:
    Stmt visit(const For *op, const Stmt &s) override {
        if (op->for_type == ForType::GPUBlock) {
            KernelBuilder kb(env, lim);
            return kb.make_kernel(op);
        }
        if (op->for_type == ForType::GPUThread) {
            std::string f = loop_func(op->name);
            auto it = env.index.find(f);
            std::string user = it != env.index.end() ? env.funcs[it->second].contents->name : f;
            user_error("weft: Func \"" + user + "\": loop " + op->name +
                       " is scheduled gpu_threads but is not inside a gpu_blocks loop; every gpu_threads loop must be "
                       "nested in a gpu_blocks loop of the same kernel (use gpu_tile, or gpu_blocks on an outer loop)");
        }
        return IRMutator::visit(op, s);
    }
};

class Protect : public IRMutator {
protected:
    Stmt visit(const For *op, const Stmt &s) override {
        Stmt b = mutate(op->body);
        if (op->for_type != ForType::GPUBlock && op->for_type != ForType::GPUThread)
            return b.same_as(op->body) ? s : For::make(op->name, op->min, op->extent, op->for_type, b);
        return For::make(op->name, op->min, Call::make_intrinsic(Int(32), "gpu_loop_extent", {op->extent}), op->for_type, b);
    }
};

}  // namespace

Expr unwrap_extent(const Expr &e) {
    if (auto c = e.as<Call>())
        if (c->is_intrinsic("gpu_loop_extent")) return c->args[0];
    return e;
}

Stmt protect_gpu_loops(const Stmt &s) { return Protect().mutate(s); }

bool has_gpu_kernels(const Stmt &s) { return find_loops(s).block; }

Stmt inject_gpu(const Stmt &s, const Env &env, const GPULimits &limits) {
    // What stays outside the kernels runs on the host: loops that launch them, and host
    // stages (Funcs or stages with no GPU schedule), which the CUDA backend runs on the CPU.
    return Inject(env, limits).mutate(s);
}

}  // namespace internal
}  // namespace weft
