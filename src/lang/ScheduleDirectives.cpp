// A schedule value as the sequence of public API calls that gives it (see lang/Schedule.h).
#include <algorithm>
#include "lang/Schedule.h"

namespace weft {
namespace internal {

namespace {

/** The loops a nest has after its splits and fuses, in the order split() and fuse() leave them. */
std::vector<Dim> after_splits(std::vector<Dim> dims, const std::vector<Split> &splits) {
    auto find = [&](const std::string &v) {
        for (size_t i = 0; i < dims.size(); i++)
            if (dims[i].var == v) return (int)i;
        return -1;
    };
    for (auto &sp : splits) {
        if (sp.kind == Split::SplitVar) {
            int i = find(sp.old_var);
            if (i < 0) return {};  // (not a schedule the API would make: the replay reports it)
            Dim in = dims[i], out = dims[i];
            in.var = sp.inner;
            out.var = sp.outer;
            dims[i] = in;
            dims.insert(dims.begin() + i + 1, out);
        } else {
            int ii = find(sp.inner), io = find(sp.outer);
            if (ii < 0 || io < 0) return {};
            dims[ii] = Dim{sp.old_var, ForType::Serial, dims[ii].is_rvar || dims[io].is_rvar};
            dims.erase(dims.begin() + io);
        }
    }
    return dims;
}

void nest_directives(std::vector<Directive> &out, const std::string &func, int stage, int spec,
                     const std::vector<Dim> &initial, const StageSchedule &s) {
    auto make = [&](Directive::Op op) {
        Directive d;
        d.op = op;
        d.func = func;
        d.stage = stage;
        d.spec = spec;
        return d;
    };
    auto is_rvar = [&](const std::string &v, const std::vector<Dim> &dims) {
        for (auto &d : dims)
            if (d.var == v) return d.is_rvar;
        return false;
    };
    std::vector<Dim> dims = initial;
    for (auto &sp : s.splits) {
        Directive d = make(sp.kind == Split::SplitVar ? Directive::Split : Directive::Fuse);
        if (sp.kind == Split::SplitVar) {
            bool rv = is_rvar(sp.old_var, dims);
            d.names = {sp.old_var, sp.outer, sp.inner};
            d.rvars = {rv, rv, rv};
            d.exprs = {sp.factor};
            d.tail = sp.tail;
        } else {
            bool rv = is_rvar(sp.inner, dims) || is_rvar(sp.outer, dims);
            d.names = {sp.inner, sp.outer, sp.old_var};
            d.rvars = {rv, rv, rv};
        }
        out.push_back(d);
        dims = after_splits(dims, {sp});
    }
    if (s.atomic) {
        Directive d = make(Directive::Atomic);
        d.flag = s.atomic_override;
        out.push_back(d);
    }
    bool same_order = dims.size() == s.dims.size();
    for (size_t i = 0; same_order && i < dims.size(); i++) same_order = dims[i].var == s.dims[i].var;
    if (!same_order) {
        Directive d = make(Directive::Reorder);
        for (auto &x : s.dims) {
            d.names.push_back(x.var);
            d.rvars.push_back(x.is_rvar);
        }
        out.push_back(d);
    }
    // Outermost first, as people write them (gpu_blocks before gpu_threads).
    for (auto it = s.dims.rbegin(); it != s.dims.rend(); ++it) {
        if (it->for_type == ForType::Serial) continue;
        Directive d = make(Directive::Loop);
        d.names = {it->var};
        d.rvars = {it->is_rvar};
        d.for_type = it->for_type;
        out.push_back(d);
    }
    for (auto &p : s.prefetches) {
        Directive d = make(Directive::Prefetch);
        d.names = {p.src_name, p.var};
        d.rvars = {false, is_rvar(p.var, s.dims)};
        d.exprs = {p.offset};
        out.push_back(d);
    }
    if (s.single_thread) out.push_back(make(Directive::SingleThread));
    if (!s.mma.empty()) {
        Directive d = make(Directive::Mma);
        d.names = s.mma;
        for (auto &n : s.mma) d.rvars.push_back(is_rvar(n, s.dims));
        out.push_back(d);
    }
}

}  // namespace

std::vector<Directive> schedule_directives(const PipelineSchedule &s) {
    std::vector<Directive> out;
    for (auto &w : s.wrappers) {
        Directive d;
        d.op = Directive::Wrap;
        d.func = w.of;
        d.names = {w.wrapper};
        d.names.insert(d.names.end(), w.consumers.begin(), w.consumers.end());
        d.flag = w.clone;
        out.push_back(d);
    }
    for (auto &f : s.funcs) {
        auto make = [&](Directive::Op op) {
            Directive d;
            d.op = op;
            d.func = f.func;
            return d;
        };
        const FuncSchedule &fs = f.schedule;
        auto level = [&](const LoopLevelSpec &l, Directive::Op root, Directive::Op inl, Directive::Op at) {
            Directive d = make(l.kind == LoopLevelSpec::Root ? root : l.kind == LoopLevelSpec::Inline ? inl : at);
            if (l.kind == LoopLevelSpec::At) d.names = {l.func_name, l.var};
            return d;
        };
        if (fs.compute.kind != LoopLevelSpec::Inline)
            out.push_back(level(fs.compute, Directive::ComputeRoot, Directive::ComputeInline, Directive::ComputeAt));
        if (fs.store_set) {
            if (fs.store.kind == LoopLevelSpec::Inline)
                user_error("weft: schedule of Func \"" + f.func + "\": its storage cannot be inline");
            out.push_back(level(fs.store, Directive::StoreRoot, Directive::StoreRoot, Directive::StoreAt));
        }
        if (fs.hoist.kind != LoopLevelSpec::Inline)
            out.push_back(level(fs.hoist, Directive::HoistStorageRoot, Directive::HoistStorageRoot, Directive::HoistStorage));
        for (auto &b : fs.bounds) {
            Directive d = make(Directive::Bound);
            d.names = {b.var};
            d.exprs = {b.min, b.extent};
            out.push_back(d);
        }
        if (fs.memory != MemoryType::Auto) {
            Directive d = make(Directive::StoreIn);
            d.memory = fs.memory;
            out.push_back(d);
        }
        if (!fs.storage_order.empty()) {
            Directive d = make(Directive::ReorderStorage);
            d.names = fs.storage_order;
            out.push_back(d);
        }
        for (auto &a : fs.storage_align) {
            Directive d = make(Directive::AlignStorage);
            d.names = {a.var};
            d.exprs = {Expr((int)a.alignment)};
            out.push_back(d);
        }
        for (auto &a : fs.storage_fold) {
            Directive d = make(Directive::FoldStorage);
            d.names = {a.var};
            d.exprs = {Expr((int)a.factor)};
            out.push_back(d);
        }
        for (auto &a : fs.bound_align) {
            Directive d = make(Directive::AlignBounds);
            d.names = {a.var};
            d.exprs = {Expr((int)a.modulus), Expr((int)a.remainder)};
            out.push_back(d);
        }
        if (fs.nontemporal) out.push_back(make(Directive::StoreNontemporal));
        if (fs.load_ahead) out.push_back(make(Directive::LoadAhead));
        for (size_t k = 0; k < f.stages.size(); k++) {
            static const std::vector<Dim> none;
            const std::vector<Dim> &initial = k < f.initial_loops.size() ? f.initial_loops[k] : none;
            const DefinitionSchedule &ds = f.stages[k];
            for (size_t j = 0; j < ds.specializations.size(); j++) {
                Directive d = make(Directive::Specialize);
                d.stage = (int)k;
                d.spec = (int)j;  // (the specialization it makes)
                d.exprs = {ds.specializations[j].condition};
                out.push_back(d);
                nest_directives(out, f.func, (int)k, (int)j, initial, ds.specializations[j].schedule);
            }
            nest_directives(out, f.func, (int)k, -1, initial, ds.schedule);
            if (ds.fuse.fused()) {
                Directive d = make(Directive::ComputeWith);
                d.stage = (int)k;
                auto rv = [&](const std::string &v) {
                    for (auto &dim : ds.schedule.dims)
                        if (dim.var == v) return dim.is_rvar;
                    return false;
                };
                d.names = {ds.fuse.func_name, ds.fuse.var};
                d.rvars = {false, rv(ds.fuse.var)};
                d.exprs = {Expr(ds.fuse.stage)};
                for (auto &a : ds.fuse.align) {
                    d.names.push_back(a.first);
                    d.rvars.push_back(rv(a.first));
                    d.exprs.push_back(Expr((int)a.second));
                }
                out.push_back(d);
            }
        }
    }
    return out;
}

}  // namespace internal
}  // namespace weft

namespace weft {
namespace internal {

namespace {
int dim_index(const StageSchedule &s, const std::string &v, const std::string &where) {
    for (size_t i = 0; i < s.dims.size(); i++)
        if (s.dims[i].var == v) return (int)i;
    user_error("weft: " + where + ": no loop \"" + v + "\"");
}
}  // namespace

PipelineSchedule schedule_with_directives(const PipelineSchedule &initial, const std::vector<Directive> &calls) {
    PipelineSchedule s = initial;
    // From the default schedule.
    for (auto &f : s.funcs) {
        f.schedule = FuncSchedule();
        for (size_t k = 0; k < f.stages.size(); k++) {
            f.stages[k] = DefinitionSchedule();
            if (k < f.initial_loops.size()) f.stages[k].schedule.dims = f.initial_loops[k];
        }
    }
    auto func = [&](const std::string &n) -> FuncScheduleValue & {
        for (auto &f : s.funcs)
            if (f.func == n) return f;
        user_error("weft: Func \"" + n + "\" is not part of this pipeline");
    };
    for (const Directive &d : calls) {
        if (d.op == Directive::Wrap)
            user_error("weft: a wrapper of \"" + d.func + "\" (in()) is not built as a value without its Funcs");
        FuncScheduleValue &f = func(d.func);
        std::string where = "Func \"" + d.func + "\" stage " + std::to_string(d.stage);
        if (d.stage < 0 || d.stage >= (int)f.stages.size() || d.spec >= 0) user_error("weft: " + where + ": no such stage");
        StageSchedule &st = f.stages[d.stage].schedule;
        FuncSchedule &fs = f.schedule;
        switch (d.op) {
        case Directive::ComputeRoot:
            fs.compute = LoopLevelSpec{LoopLevelSpec::Root, {}, "", ""};
            if (!fs.store_set) fs.store = fs.compute;
            break;
        case Directive::ComputeAt:
            fs.compute = LoopLevelSpec{LoopLevelSpec::At, {}, d.names.at(0), d.names.at(1)};
            if (!fs.store_set) fs.store = fs.compute;
            break;
        case Directive::StoreAt:
            fs.store = LoopLevelSpec{LoopLevelSpec::At, {}, d.names.at(0), d.names.at(1)};
            fs.store_set = true;
            break;
        case Directive::HoistStorageRoot: fs.hoist = LoopLevelSpec{LoopLevelSpec::Root, {}, "", ""}; break;
        case Directive::HoistStorage: fs.hoist = LoopLevelSpec{LoopLevelSpec::At, {}, d.names.at(0), d.names.at(1)}; break;
        case Directive::Split: {
            int i = dim_index(st, d.names.at(0), where);
            st.splits.push_back({Split::SplitVar, d.names[0], d.names.at(1), d.names.at(2), cast(Int(32), d.exprs.at(0)), d.tail});
            Dim din = st.dims[i], dout = st.dims[i];
            din.var = d.names[2];
            din.for_type = ForType::Serial;
            dout.var = d.names[1];
            st.dims[i] = din;
            st.dims.insert(st.dims.begin() + i + 1, dout);
            break;
        }
        case Directive::Fuse: {
            int ii = dim_index(st, d.names.at(0), where), io = dim_index(st, d.names.at(1), where);
            bool rv = st.dims[ii].is_rvar || st.dims[io].is_rvar;
            st.splits.push_back({Split::FuseVars, d.names.at(2), d.names[1], d.names[0], Expr(), TailStrategy::Auto});
            st.dims[ii] = Dim{d.names[2], ForType::Serial, rv};
            st.dims.erase(st.dims.begin() + io);
            break;
        }
        case Directive::Reorder: {
            std::vector<int> idx;
            for (auto &n : d.names) idx.push_back(dim_index(st, n, where));
            std::vector<int> slots = idx;
            std::sort(slots.begin(), slots.end());
            std::vector<Dim> nd = st.dims;
            for (size_t k = 0; k < idx.size(); k++) nd[slots[k]] = st.dims[idx[k]];
            st.dims = nd;
            break;
        }
        case Directive::Loop: st.dims[dim_index(st, d.names.at(0), where)].for_type = d.for_type; break;
        case Directive::SingleThread: st.single_thread = true; break;
        case Directive::ReorderStorage: {
            // As Func::reorder_storage: the named Vars take the slots they had, in the order given.
            std::vector<std::string> order = fs.storage_order.empty() ? f.args : fs.storage_order;
            std::vector<size_t> idx;
            for (auto &n : d.names) {
                auto it = std::find(order.begin(), order.end(), n);
                if (it == order.end() || std::count(idx.begin(), idx.end(), (size_t)(it - order.begin())))
                    user_error("weft: " + where + ": reorder_storage() of \"" + n + "\", not one of its Vars once");
                idx.push_back(it - order.begin());
            }
            std::vector<size_t> slots = idx;
            std::sort(slots.begin(), slots.end());
            std::vector<std::string> no = order;
            for (size_t k = 0; k < idx.size(); k++) no[slots[k]] = order[idx[k]];
            fs.storage_order = no;
            break;
        }
        case Directive::ComputeWith: {
            FuseLevel &fl = f.stages[d.stage].fuse;
            fl = FuseLevel();
            fl.func_name = d.names.at(0);
            fl.var = d.names.at(1);
            int64_t ps = 0;
            if (!d.exprs.empty()) is_const_int(d.exprs[0], &ps);
            fl.stage = (int)ps;
            for (size_t i = 2; i < d.names.size(); i++) {
                int64_t a = 0;
                if (i - 1 < d.exprs.size()) is_const_int(d.exprs[i - 1], &a);
                fl.align.push_back({d.names[i], (LoopAlignStrategy)a});
            }
            break;
        }
        default: user_error("weft: " + where + ": this directive is not built as a value here");
        }
    }
    return s;
}

}  // namespace internal
}  // namespace weft
