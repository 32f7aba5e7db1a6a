#include "lower/gpu/InjectGPU.h"
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include "ir/Evaluate.h"
#include "ir/Names.h"
#include "ir/IRVisitor.h"
#include "ir/Interval.h"
#include "ir/Simplify.h"
#include "lower/gpu/Common.h"
#include "lower/gpu/ThreadLayout.h"
#include "lower/gpu/TreeReductions.h"

namespace weft {
namespace internal {
using namespace gpu;
namespace {

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
        Stmt inner = block_level(tree_reductions(body));
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
        std::string f = func_of_loop(loop);
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

    /** op with its body rewritten by f, its let in scope (lets) meanwhile. */
    template <typename F>
    Stmt under_let(const LetStmt *op, F &&f) {
        lets.push_back({op->name, op->value});
        Stmt b = f(op->body);
        lets.pop_back();
        return LetStmt::make(op->name, op->value, b);
    }

    Stmt single_thread(const Stmt &s) {
        return leaf(For::make(thread_var(0), 0, 1, ForType::GPUThread, s), s);
    }

    Stmt block_level(const Stmt &s) {
        if (!s.defined()) return s;
        if (auto op = s.as<LetStmt>()) return under_let(op, [&](const Stmt &b) { return block_level(b); });
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
            int64_t n = constant_size(op, "in GPU shared memory inside the kernel of", "constant tile sizes");
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

    /** The constant upper bound of an allocation's size inside the kernel; an Error (saying
        where it is stored and what to use instead) where there is none. */
    int64_t constant_size(const Allocate *op, const char *where, const char *instead) {
        Expr ext = resolve(op->extent);
        int64_t n;
        if (!constant_upper_bound(ext, thread_scope, &n))
            user_error("weft: Func \"" + func_user_name(op->name) + "\" is stored " + where + " " + describe(kernel_name) +
                       ", but its size (" + to_string(ext) + " elements) is not a constant; use " + instead +
                       " or bound() it");
        return n;
    }

    Stmt in_thread(const Stmt &s) {
        if (!s.defined()) return s;
        if (auto op = s.as<LetStmt>()) return under_let(op, [&](const Stmt &b) { return in_thread(b); });
        if (auto op = s.as<Block>()) return Block::make(in_thread(op->first), in_thread(op->rest));
        if (auto op = s.as<IfThenElse>()) return IfThenElse::make(op->condition, in_thread(op->then_case), in_thread(op->else_case));
        if (auto op = s.as<Allocate>()) {
            int64_t n = constant_size(op, "per GPU thread (registers) inside", "constant split factors");
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
                user_error("weft: " + describe(op->name) + ": gpu_threads dimension " + std::string(1, dim_letter(d)) + " has " +
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
            std::string f = func_of_loop(op->name);
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

