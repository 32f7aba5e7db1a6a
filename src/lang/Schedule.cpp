// Schedules as values: equality and the default loop nests (see lang/Schedule.h).
#include "lang/Schedule.h"
#include "ir/IRVisitor.h"

namespace weft {
namespace internal {

namespace {
bool same(const Expr &a, const Expr &b) {
    if (a.defined() != b.defined()) return false;
    return !a.defined() || equal(a, b);
}
}  // namespace

bool operator==(const Split &a, const Split &b) {
    return a.kind == b.kind && a.old_var == b.old_var && a.outer == b.outer && a.inner == b.inner &&
           same(a.factor, b.factor) && a.tail == b.tail;
}
bool operator==(const Dim &a, const Dim &b) { return a.var == b.var && a.for_type == b.for_type && a.is_rvar == b.is_rvar; }
bool operator==(const PrefetchSpec &a, const PrefetchSpec &b) {
    return a.src_name == b.src_name && a.var == b.var && same(a.offset, b.offset);
}
bool operator==(const StageSchedule &a, const StageSchedule &b) {
    return a.splits == b.splits && a.dims == b.dims && a.prefetches == b.prefetches && a.single_thread == b.single_thread &&
           a.atomic == b.atomic && a.atomic_override == b.atomic_override && a.mma == b.mma;
}
bool operator==(const Specialization &a, const Specialization &b) {
    return same(a.condition, b.condition) && a.schedule == b.schedule;
}
bool operator==(const FuseLevel &a, const FuseLevel &b) {
    if (a.fused() != b.fused()) return false;
    return !a.fused() || (a.func_name == b.func_name && a.stage == b.stage && a.var == b.var && a.align == b.align);
}
bool operator==(const DefinitionSchedule &a, const DefinitionSchedule &b) {
    return a.schedule == b.schedule && a.specializations == b.specializations && a.fuse == b.fuse;
}
bool operator==(const LoopLevelSpec &a, const LoopLevelSpec &b) {
    if (a.kind != b.kind) return false;
    return a.kind != LoopLevelSpec::At || (a.func_name == b.func_name && a.var == b.var);
}
bool operator==(const BoundSpec &a, const BoundSpec &b) {
    return a.var == b.var && same(a.min, b.min) && same(a.extent, b.extent);
}
bool operator==(const StorageAlign &a, const StorageAlign &b) { return a.var == b.var && a.alignment == b.alignment; }
bool operator==(const StorageFold &a, const StorageFold &b) { return a.var == b.var && a.factor == b.factor; }
bool operator==(const BoundAlign &a, const BoundAlign &b) {
    return a.var == b.var && a.modulus == b.modulus && a.remainder == b.remainder;
}
bool operator==(const FuncSchedule &a, const FuncSchedule &b) {
    return a.compute == b.compute && a.store_set == b.store_set && (!a.store_set || a.store == b.store) && a.hoist == b.hoist &&
           a.bounds == b.bounds && a.memory == b.memory && a.storage_order == b.storage_order &&
           a.storage_align == b.storage_align && a.bound_align == b.bound_align && a.storage_fold == b.storage_fold &&
           a.nontemporal == b.nontemporal && a.load_ahead == b.load_ahead;
}
bool operator==(const FuncScheduleValue &a, const FuncScheduleValue &b) {
    return a.func == b.func && a.args == b.args && a.schedule == b.schedule && a.stages == b.stages &&
           a.initial_loops == b.initial_loops;
}
bool operator==(const WrapperValue &a, const WrapperValue &b) {
    return a.of == b.of && a.wrapper == b.wrapper && a.consumers == b.consumers && a.clone == b.clone;
}
bool operator==(const PipelineSchedule &a, const PipelineSchedule &b) { return a.wrappers == b.wrappers && a.funcs == b.funcs; }

const FuncScheduleValue *PipelineSchedule::find(const std::string &func) const {
    for (auto &f : funcs)
        if (f.func == func) return &f;
    return nullptr;
}

const std::vector<ScheduleWord> &tail_words() {
    static const std::vector<ScheduleWord> w = {
        {(int)TailStrategy::Auto, "auto", "TailStrategy::Auto"},
        {(int)TailStrategy::GuardWithIf, "guard", "TailStrategy::GuardWithIf"},
        {(int)TailStrategy::RoundUp, "roundup", "TailStrategy::RoundUp"},
        {(int)TailStrategy::ShiftInwards, "shift", "TailStrategy::ShiftInwards"}};
    return w;
}
const std::vector<ScheduleWord> &loop_words() {
    static const std::vector<ScheduleWord> w = {{(int)ForType::Serial, "serial", "serial"},
                                                {(int)ForType::Parallel, "parallel", "parallel"},
                                                {(int)ForType::Vectorized, "vectorized", "vectorize"},
                                                {(int)ForType::Unrolled, "unrolled", "unroll"},
                                                {(int)ForType::GPUBlock, "gpu_block", "gpu_blocks"},
                                                {(int)ForType::GPUThread, "gpu_thread", "gpu_threads"}};
    return w;
}
const std::vector<ScheduleWord> &align_words() {
    static const std::vector<ScheduleWord> w = {
        {(int)LoopAlignStrategy::Auto, "auto", "LoopAlignStrategy::Auto"},
        {(int)LoopAlignStrategy::AlignStart, "start", "LoopAlignStrategy::AlignStart"},
        {(int)LoopAlignStrategy::AlignEnd, "end", "LoopAlignStrategy::AlignEnd"},
        {(int)LoopAlignStrategy::NoAlign, "none", "LoopAlignStrategy::NoAlign"}};
    return w;
}
const std::vector<ScheduleWord> &memory_words() {
    static const std::vector<ScheduleWord> w = {{(int)MemoryType::Auto, "auto", "MemoryType::Auto"},
                                                {(int)MemoryType::Heap, "heap", "MemoryType::Heap"},
                                                {(int)MemoryType::Stack, "stack", "MemoryType::Stack"},
                                                {(int)MemoryType::Register, "register", "MemoryType::Register"},
                                                {(int)MemoryType::GPUShared, "gpu_shared", "MemoryType::GPUShared"}};
    return w;
}
const ScheduleWord &word_of(const std::vector<ScheduleWord> &words, int value) {
    for (auto &w : words)
        if (w.value == value) return w;
    internal_error("a schedule enum value with no word", __FILE__, __LINE__);
}
const ScheduleWord *word_named(const std::vector<ScheduleWord> &words, const std::string &text) {
    for (auto &w : words)
        if (text == w.text) return &w;
    return nullptr;
}
std::string word_list(const std::vector<ScheduleWord> &words) {
    std::string r;
    for (size_t i = 0; i < words.size(); i++)
        r += std::string(i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i].text;
    return r;
}

PipelineSchedule rename_schedule(const PipelineSchedule &s, const std::function<std::string(const std::string &)> &name,
                                 const std::function<Expr(const Expr &)> &expr) {
    auto ex = [&](Expr &e) {
        if (e.defined()) e = expr(e);
    };
    auto level = [&](LoopLevelSpec &l) {
        if (l.kind != LoopLevelSpec::At) return;
        l.func_name = name(l.func_name);
        l.var = name(l.var);
    };
    auto nest = [&](StageSchedule &n) {
        for (auto &sp : n.splits) {
            sp.old_var = name(sp.old_var);
            sp.outer = name(sp.outer);
            sp.inner = name(sp.inner);
            ex(sp.factor);
        }
        for (auto &d : n.dims) d.var = name(d.var);
        for (auto &p : n.prefetches) {
            p.src_name = name(p.src_name);
            p.var = name(p.var);
            ex(p.offset);
        }
    };
    PipelineSchedule r = s;
    for (auto &w : r.wrappers) {
        w.of = name(w.of);
        w.wrapper = name(w.wrapper);
        for (auto &c : w.consumers) c = name(c);
    }
    for (auto &f : r.funcs) {
        f.func = name(f.func);
        for (auto &a : f.args) a = name(a);
        level(f.schedule.compute);
        level(f.schedule.store);
        level(f.schedule.hoist);
        for (auto &b : f.schedule.bounds) {
            b.var = name(b.var);
            ex(b.min);
            ex(b.extent);
        }
        for (auto &v : f.schedule.storage_order) v = name(v);
        for (auto &a : f.schedule.storage_align) a.var = name(a.var);
        for (auto &a : f.schedule.storage_fold) a.var = name(a.var);
        for (auto &a : f.schedule.bound_align) a.var = name(a.var);
        for (auto &st : f.stages) {
            nest(st.schedule);
            if (st.fuse.fused()) {
                st.fuse.func_name = name(st.fuse.func_name);
                st.fuse.var = name(st.fuse.var);
                for (auto &a : st.fuse.align) a.first = name(a.first);
            }
            for (auto &sp : st.specializations) {
                ex(sp.condition);
                nest(sp.schedule);
            }
        }
        for (auto &loops : f.initial_loops)
            for (auto &d : loops) d.var = name(d.var);
    }
    return r;
}

StageSchedule default_stage_schedule(const std::vector<std::string> &pure_args, const std::vector<Expr> &stage_args,
                                     const std::vector<std::string> &rvars, bool is_update) {
    StageSchedule s;
    if (!is_update) {
        for (auto &a : pure_args) s.dims.push_back({a, ForType::Serial, false});
        return s;
    }
    for (auto &r : rvars) s.dims.push_back({r, ForType::Serial, true});
    for (size_t i = 0; i < stage_args.size() && i < pure_args.size(); i++) {
        auto v = stage_args[i].as<Variable>();
        if (v && !v->rdom && !v->param && v->name == pure_args[i]) s.dims.push_back({v->name, ForType::Serial, false});
    }
    return s;
}

}  // namespace internal
}  // namespace weft
