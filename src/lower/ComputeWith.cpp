// compute_with: a child stage's loops from the outermost down to the fused level share the
// parent stage's loops. schedule_functions() builds and places each stage's loop nest on its
// own (where it is computed, with the regions bounds inference gave it); this pass then moves
// the nest that runs first to where the other one is and puts both under one set of loops:
//
//   for p.y: for p.x: P(...)             for p.y (union of both ranges):
//   ...                          ==>       let c.y = p.y + shift: for p.x: let c.x = ...
//   for c.y: for c.x: C(...)                 if (p.y, p.x in P's range) P(...)
//                                            if (c.y, c.x in C's range) C(...)
//
// Each stage runs exactly its own iterations (guards where the ranges differ, written on the
// child's own loop values so that bounds inference narrows them), so the results are those
// of the unfused schedule as long as nothing that runs between the two places uses what is
// moved: that, and that neither stage reads the other's Func, is checked.
#include "lower/ComputeWith.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include "ir/IRVisitor.h"
#include "ir/Simplify.h"
#include "lower/RealizationOrder.h"

namespace weft {
namespace internal {
namespace {

/** Where a Func is computed (an output: at root, around everything). */
LoopLevelSpec::Kind level_kind(const LFunc &f) { return f.output_index >= 0 ? LoopLevelSpec::Root : f.sched.compute.kind; }

std::string level_text(const Env &env, const LFunc &f) {
    if (f.output_index >= 0) return "an output (computed at root)";
    if (f.sched.compute.kind == LoopLevelSpec::Root) return "compute_root()";
    if (f.sched.compute.kind == LoopLevelSpec::Inline) return "inlined";
    const LFunc &c = env.funcs[env.index.at(f.compute_func)];
    return "compute_at(" + c.contents->name + ", " + f.sched.compute.var + ")";
}

bool same_level(const LFunc &a, const LFunc &b) {
    if (level_kind(a) != level_kind(b)) return false;
    if (level_kind(a) != LoopLevelSpec::At) return true;
    return a.compute_func == b.compute_func && a.sched.compute.var == b.sched.compute.var;
}

/** Does Func `from` read Func `to`, directly or through other Funcs? */
bool reads(Env &env, const std::string &from, const std::string &to) {
    std::set<std::string> seen;
    std::vector<std::string> work{from};
    while (!work.empty()) {
        std::string n = work.back();
        work.pop_back();
        if (!seen.insert(n).second || !env.index.count(n)) continue;
        std::set<std::string> called;
        for (auto &st : env.func(n).stages)
            for (auto &c : funcs_called(st)) called.insert(c);
        for (auto &c : called) {
            if (c == to) return true;
            work.push_back(c);
        }
    }
    return false;
}

/** Where the group's outermost loops are: how often, in which enclosing loops and branches,
    and in which order. */
class FindSites : public IRVisitor {
public:
    std::vector<std::string> names;
    std::vector<const For *> loop;
    std::vector<int> count, order;
    std::vector<std::vector<std::pair<const StmtNode *, int>>> scope;
    explicit FindSites(std::vector<std::string> n)
        : names(std::move(n)), loop(names.size(), nullptr), count(names.size(), 0), order(names.size(), -1),
          scope(names.size()) {}

protected:
    int counter = 0;
    std::vector<std::pair<const StmtNode *, int>> stack;
    void visit(const For *op) override {
        for (size_t i = 0; i < names.size(); i++)
            if (op->name == names[i]) {
                count[i]++;
                loop[i] = op;
                scope[i] = stack;
                order[i] = counter++;
                return;
            }
        stack.push_back({op, 0});
        IRVisitor::visit(op);
        stack.pop_back();
    }
    void visit(const IfThenElse *op) override {
        include(op->condition);
        stack.push_back({op, 0});
        include(op->then_case);
        stack.back().second = 1;
        include(op->else_case);
        stack.pop_back();
    }
};

/** The Funcs and inputs a statement reads, and the Funcs it writes. */
class Uses : public IRVisitor {
public:
    std::set<std::string> reads, writes;

protected:
    void visit(const Call *op) override {
        if (op->call_type == Call::Func || op->call_type == Call::Image) reads.insert(op->name);
        IRVisitor::visit(op);
    }
    void visit(const Provide *op) override {
        writes.insert(op->name);
        IRVisitor::visit(op);
    }
};

/** What runs after the loop nest `first` and before the loop nest `last` (all in the same
    loops and branches, so no loop that runs between them contains `last`), apart from the
    group's other nests (they move too). */
class Between : public IRVisitor {
public:
    const For *first = nullptr, *last = nullptr;
    std::set<const For *> members;
    std::set<std::string> reads, writes;

protected:
    int state = 0;  // 0 before first, 1 between, 2 after last
    void visit(const For *op) override {
        if (op == first) state = 1;
        else if (op == last) state = 2;
        if (members.count(op)) return;
        IRVisitor::visit(op);
    }
    void visit(const Provide *op) override {
        if (state == 1) writes.insert(op->name);
        IRVisitor::visit(op);
    }
    void visit(const Call *op) override {
        if (state == 1 && (op->call_type == Call::Func || op->call_type == Call::Image)) reads.insert(op->name);
        IRVisitor::visit(op);
    }
};

/** One stage of a fused group: the parent (first) or a child fused with it. */
struct Member {
    std::string what;                       // "Func "f".update(0)", for messages
    std::string func;                       // unique name
    int stage = 0;
    std::vector<std::string> dims;          // the fused loops, outermost first (a child's)
    std::vector<LoopAlignStrategy> align;   // per fused loop (a child's)
    const For *loop = nullptr;              // its outermost loop in the statement
};

/** The group's loops at `level` (and inside) as one loop nest. at[i] is member i's loop at this
    level, for the parent (0) and each child fused at least this deep; guards[i] what member i's
    body needs (checked at the innermost level it takes part in). */
Stmt merge(const std::vector<Member> &m, size_t level, std::vector<const For *> at, std::vector<std::vector<Expr>> guards) {
    const For *p = at[0];
    Expr v = Variable::make(Int(32), p->name);
    Expr mp = p->min, ep = p->extent, pmax = simplify(mp + ep - 1);
    // Each member's range in the fused loop's values, and the loop value it sees.
    std::vector<Expr> lo(m.size()), hi(m.size()), val(m.size());
    lo[0] = mp;
    hi[0] = pmax;
    std::vector<bool> shifted(m.size(), false);
    for (size_t i = 1; i < m.size(); i++) {
        if (!at[i]) continue;
        Expr mc = at[i]->min, ec = at[i]->extent;
        LoopAlignStrategy a = m[i].align[level];
        if (can_prove(simplify(mp == mc)) && can_prove(simplify(ep == ec))) {
            lo[i] = mp;
            hi[i] = pmax;
            val[i] = v;
        } else if (a == LoopAlignStrategy::AlignStart) {
            lo[i] = mp;
            hi[i] = simplify(mp + ec - 1);
            val[i] = simplify(v - mp + mc);
            shifted[i] = true;
        } else if (a == LoopAlignStrategy::AlignEnd) {
            lo[i] = simplify(pmax - ec + 1);
            hi[i] = pmax;
            val[i] = simplify(v - pmax + (mc + ec - 1));
            shifted[i] = true;
        } else {
            lo[i] = mc;
            hi[i] = simplify(mc + ec - 1);
            val[i] = v;
        }
    }
    // The union of the ranges (the one that provably holds the others where there is one).
    auto extreme = [&](const std::vector<Expr> &es, bool is_min) {
        for (size_t i = 0; i < m.size(); i++) {
            if (!at[i]) continue;
            bool all = true;
            for (size_t j = 0; j < m.size() && all; j++)
                if (at[j] && j != i) all = can_prove(simplify(is_min ? es[i] <= es[j] : es[i] >= es[j]));
            if (all) return es[i];
        }
        Expr r;
        for (size_t i = 0; i < m.size(); i++)
            if (at[i]) r = !r.defined() ? es[i] : is_min ? Min::make(r, es[i]) : Max::make(r, es[i]);
        return simplify(r);
    };
    Expr umin = extreme(lo, true), umax = extreme(hi, false);
    // Guards: on the parent's loop value, and on each child's own (its range, both ends where it
    // is shifted: bounds inference does not see that its value moves with the fused one).
    if (!can_prove(simplify(umin >= mp))) guards[0].push_back(LE::make(mp, v));
    if (!can_prove(simplify(umax <= pmax))) guards[0].push_back(LE::make(v, pmax));
    for (size_t i = 1; i < m.size(); i++) {
        if (!at[i]) continue;
        Expr cv = Variable::make(Int(32), at[i]->name), mc = at[i]->min, cmax = simplify(at[i]->min + at[i]->extent - 1);
        if (shifted[i] || !can_prove(simplify(umin >= lo[i]))) guards[i].push_back(LE::make(mc, cv));
        if (shifted[i] || !can_prove(simplify(umax <= hi[i]))) guards[i].push_back(LE::make(cv, cmax));
    }
    auto guarded = [](const std::vector<Expr> &g, const Stmt &s) {
        if (g.empty()) return s;
        Expr c = g[0];
        for (size_t i = 1; i < g.size(); i++) c = And::make(c, g[i]);
        return IfThenElse::make(Call::make_intrinsic(Bool(), "likely", {c}), s);
    };
    // Inside: the parent's and the deeper children's next loops, merged; then the bodies of the
    // children whose fusion ends here.
    std::vector<const For *> next(m.size(), nullptr);
    bool deeper = false;
    for (size_t i = 1; i < m.size(); i++) deeper |= at[i] && m[i].dims.size() > level + 1;
    Stmt inner;
    if (deeper) {
        for (size_t i = 0; i < m.size(); i++) {
            if (!at[i] || (i > 0 && m[i].dims.size() <= level + 1)) continue;
            next[i] = at[i]->body.as<For>();
            if (!next[i])
                user_error("weft: compute_with: something is computed at the loop " + at[i]->name + " of " + m[i].what +
                           ", inside the loops it is fused at; compute it at the innermost fused loop or inside it, "
                           "or outside the fused loops");
        }
        inner = merge(m, level + 1, next, guards);
    } else {
        inner = guarded(guards[0], p->body);
    }
    std::vector<Stmt> body{inner};
    for (size_t i = 1; i < m.size(); i++)
        if (at[i] && m[i].dims.size() == level + 1) body.push_back(guarded(guards[i], at[i]->body));
    Stmt b = Block::make(body);
    for (size_t i = m.size(); i-- > 1;)
        if (at[i]) b = LetStmt::make(at[i]->name, val[i], b);
    return For::make(p->name, umin, simplify(umax - umin + 1), p->for_type, b);
}

class Replace : public IRMutator {
public:
    std::set<const For *> remove;
    const For *at = nullptr;
    Stmt merged;

protected:
    Stmt visit(const For *op, const Stmt &s) override {
        if (remove.count(op)) return Evaluate::make(Expr(0));
        if (op == at) return merged;
        return IRMutator::visit(op, s);
    }
};

/** The groups: each parent stage with the stages fused with it, in the order met (parents). */
struct Groups {
    std::vector<std::pair<std::string, int>> parents;
    std::map<std::pair<std::string, int>, std::vector<Member>> groups;
};

Groups collect_groups(Env &env) {
    Groups g;
    auto &parents = g.parents;
    auto &groups = g.groups;
    for (auto &c : env.funcs) {
        for (size_t k = 0; k < c.stages.size(); k++) {
            const LStage &cst = c.stages[k];
            if (!cst.fuse.fused()) continue;
            const std::string cwhat = stage_name(*c.contents, (int)k);
            const std::string head = "weft: " + cwhat + ".compute_with(" + cst.fuse.func_name + ", " + cst.fuse.var + "): ";
            if (!env.index.count(cst.fuse_func))
                user_error(head + "Func \"" + cst.fuse.func_name + "\" is inlined (it has no loops of its own); "
                           "compute it at root or at a loop, where " + c.contents->name + " is computed");
            LFunc &p = env.func(cst.fuse_func);
            const int pk = cst.fuse.stage;
            if (pk < 0 || pk >= (int)p.stages.size())
                user_error(head + "Func \"" + p.contents->name + "\" has no stage " + std::to_string(pk));
            const LStage &pst = p.stages[pk];
            const std::string pwhat = stage_name(*p.contents, pk);
            if (pst.fuse.fused())
                user_error(head + pwhat + " is itself computed with " + pst.fuse.func_name +
                           "; fuse every stage of the group with the same parent instead");
            if (&p == &c) user_error(head + "the two stages belong to one Func");
            if (level_kind(c) == LoopLevelSpec::Inline)
                user_error(head + c.contents->name + " is inlined (it has no loops of its own); compute it where " +
                           p.contents->name + " is computed");
            if (!same_level(c, p))
                user_error(head + "both must be computed at the same level; " + c.contents->name + " is " +
                           level_text(env, c) + ", " + p.contents->name + " is " + level_text(env, p));
            if (!cst.specs.empty() || !pst.specs.empty())
                user_error(head + (cst.specs.empty() ? pwhat : cwhat) + " has specializations; a fused stage runs one loop nest");
            if (cst.sched.single_thread || pst.sched.single_thread)
                user_error(head + "a gpu_single_thread() stage cannot be fused");
            // The fused loops: the parent's from the outermost down to var; the child's outermost
            // loops must be the same ones (by name and loop type).
            std::vector<Dim> pd(pst.sched.dims.rbegin(), pst.sched.dims.rend()), cd(cst.sched.dims.rbegin(), cst.sched.dims.rend());
            auto list = [](const std::vector<Dim> &d) {
                std::string r;
                for (auto &x : d) r += (r.empty() ? "" : ", ") + x.var;
                return r;
            };
            size_t depth = 0;
            while (depth < pd.size() && pd[depth].var != cst.fuse.var) depth++;
            if (depth == pd.size())
                user_error(head + pwhat + " has no loop named \"" + cst.fuse.var + "\"; its loops are (outermost first): " + list(pd));
            depth++;
            Member mb;
            mb.what = cwhat;
            mb.func = c.name;
            mb.stage = (int)k;
            for (size_t i = 0; i < depth; i++) {
                if (i >= cd.size() || cd[i].var != pd[i].var)
                    user_error(head + "the fused loops must be the outermost loops of both stages, with the same names: " +
                               pwhat + " has (outermost first) " + list(pd) + ", " + cwhat + " has " + list(cd));
                if (cd[i].for_type != pd[i].for_type)
                    user_error(head + "the fused loop " + pd[i].var + " must have the same loop type in both stages (" +
                               word_of(loop_words(), (int)pd[i].for_type).text + " in " + pwhat + ", " +
                               word_of(loop_words(), (int)cd[i].for_type).text + " in " + cwhat + ")");
                ForType t = pd[i].for_type;
                if (t != ForType::Serial && t != ForType::Parallel && t != ForType::Unrolled)
                    user_error(head + "the fused loop " + pd[i].var + " is " + word_of(loop_words(), (int)t).text +
                               "; fused loops can be serial, parallel or unrolled (vectorize loops inside the fused level)");
                mb.dims.push_back(pd[i].var);
                mb.align.push_back(LoopAlignStrategy::NoAlign);
            }
            for (auto &a : cst.fuse.align) {
                auto it = std::find(mb.dims.begin(), mb.dims.end(), a.first);
                if (it == mb.dims.end()) {
                    std::string fused;
                    for (auto &d : mb.dims) fused += (fused.empty() ? "" : ", ") + d;
                    user_error(head + "an alignment is given for \"" + a.first + "\", which is not one of the fused loops (" +
                               fused + ")");
                }
                mb.align[it - mb.dims.begin()] = a.second == LoopAlignStrategy::Auto ? LoopAlignStrategy::NoAlign : a.second;
            }
            auto key = std::make_pair(p.name, pk);
            if (!groups.count(key)) {
                parents.push_back(key);
                Member pm;
                pm.what = pwhat;
                pm.func = p.name;
                pm.stage = pk;
                groups[key].push_back(pm);
            }
            groups[key].push_back(mb);
        }
    }
    return g;
}

/** The group's nests in s (each once, in the same loops and branches) under one set of loops. */
Stmt fuse_group(Env &env, Stmt s, std::vector<Member> &m) {
    const std::string head = "weft: compute_with: the stages fused with " + m[0].what + " (";
    std::string names;
    for (size_t i = 1; i < m.size(); i++) names += (i > 1 ? ", " : "") + m[i].what;
    const std::string group = head + names + "): ";
    // Every two of them independent: neither reads the other's Func, directly or not.
    for (size_t i = 0; i < m.size(); i++)
        for (size_t j = 0; j < m.size(); j++) {
            if (i == j) continue;
            if (m[i].func == m[j].func)
                user_error(group + "two stages of one Func (" + m[i].what + ", " + m[j].what + ") cannot be in one fused group");
            if (reads(env, m[i].func, m[j].func))
                user_error("weft: " + m[i == 0 ? j : i].what + ".compute_with(" + m[0].what + "): " +
                           env.func(m[i].func).contents->name + " reads " + env.func(m[j].func).contents->name +
                           " (directly or through other Funcs); compute_with fuses stages that do not depend on "
                           "each other (compute one at a loop of the other instead)");
        }
    // Their nests in the statement: each once, in the same loops and branches.
    std::vector<std::string> loop_names;
    for (size_t i = 0; i < m.size(); i++) loop_names.push_back(m[i].func + ".s" + std::to_string(m[i].stage) + "." + m[1].dims[0]);
    FindSites fs(loop_names);
    fs.include(s);
    for (size_t i = 0; i < m.size(); i++) {
        if (fs.count[i] != 1)
            user_error(group + m[i].what + " is computed in " + std::to_string(fs.count[i]) +
                       " places (a consumer's specializations or stages each compute it); compute_with needs each "
                       "stage computed once where they are fused");
        if (fs.scope[i] != fs.scope[0]) user_error(group + "they are not computed in the same loop and branch");
        m[i].loop = fs.loop[i];
    }
    // All move to the last one's place: what runs between must neither use what a moved
    // one writes, nor write what it reads.
    size_t last = 0;
    for (size_t i = 0; i < m.size(); i++)
        if (fs.order[i] > fs.order[last]) last = i;
    std::set<const For *> all;
    for (auto &x : m) all.insert(x.loop);
    for (size_t i = 0; i < m.size(); i++) {
        if (i == last) continue;
        Between bt;
        bt.first = m[i].loop;
        bt.last = m[last].loop;
        bt.members = all;
        bt.include(s);
        Uses moved;
        moved.include(Stmt(std::make_shared<For>(*m[i].loop)));
        for (auto &w : moved.writes)
            if (bt.reads.count(w) || bt.writes.count(w))
                user_error(group + "\"" + w + "\", which " + m[i].what + " computes, is used by a computation that "
                           "runs between the fused stages; they cannot be fused there");
        for (auto &r : moved.reads)
            if (bt.writes.count(r))
                user_error(group + "\"" + r + "\", which " + m[i].what +
                           " reads, is computed between the fused stages; they cannot be fused there");
    }
    Replace rp;
    for (size_t i = 0; i < m.size(); i++)
        if (i != last) rp.remove.insert(m[i].loop);
    rp.at = m[last].loop;
    std::vector<const For *> at;
    for (auto &x : m) at.push_back(x.loop);
    rp.merged = merge(m, 0, at, std::vector<std::vector<Expr>>(m.size()));
    s = rp.mutate(s);
    return s;
}

/** The stage's key: "func.s<stage>". */
std::string key_text(const std::pair<std::string, int> &k) { return k.first + ".s" + std::to_string(k.second); }

}  // namespace

Stmt fuse_compute_with(Env &env, const Stmt &s_in, const std::set<std::string> &fused) {
    Groups g = collect_groups(env);
    Stmt s = s_in;
    for (auto &key : g.parents)
        if (!fused.count(key_text(key))) s = fuse_group(env, s, g.groups[key]);
    return s;
}

bool fuse_group_computing(Env &env, Stmt &s, const std::string &reader, const std::string &var, const std::string &read,
                          std::set<std::string> &fused, std::string *loop_func) {
    Groups g = collect_groups(env);
    for (auto &key : g.parents) {
        std::vector<Member> &m = g.groups[key];
        // Do members i and j run in one loop `var` once fused (the parent's loops are all fused
        // loops; a child's, those down to its level)?
        auto fused_var = [&](size_t i) { return std::find(m[i].dims.begin(), m[i].dims.end(), var) != m[i].dims.end(); };
        auto share = [&](size_t i, size_t j) { return (i == 0 || fused_var(i)) && (j == 0 || fused_var(j)); };
        size_t at = m.size();
        for (size_t i = 0; i < m.size(); i++)
            for (size_t j = 0; j < m.size(); j++)
                if (i != j && m[i].func == reader && share(i, j)) at = i;
        if (at == m.size()) continue;
        if (fused.count(key_text(key))) {
            *loop_func = m[0].func;
            return true;
        }
        // Read by another member that runs in that loop too (with it, after fusion)?
        std::vector<std::string> loop_names;
        for (auto &x : m) loop_names.push_back(x.func + ".s" + std::to_string(x.stage) + "." + m[1].dims[0]);
        FindSites fs(loop_names);
        fs.include(s);
        for (size_t i = 0; i < m.size(); i++)
            if (fs.count[i] != 1) return false;  // (not all placed yet: fused at the end, or refused there)
        // A loop outside a member's innermost fused one: fusing afterwards could not move what
        // is computed there (it would sit between two fused loops).
        bool other = false;
        for (size_t j = 1; j < m.size(); j++) other = other || (share(at, j) && m[j].dims.back() != var);
        for (size_t i = 0; i < m.size(); i++) {
            if (i == at) continue;
            Uses u;
            u.include(Stmt(std::make_shared<For>(*fs.loop[i])));
            other = other || (u.reads.count(read) && share(i, at));
        }
        if (!other) return false;
        s = fuse_group(env, s, m);
        fused.insert(key_text(key));
        *loop_func = m[0].func;
        return true;
    }
    return false;
}

}  // namespace internal
}  // namespace weft
