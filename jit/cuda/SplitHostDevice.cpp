#include "cuda/SplitHostDevice.h"
#include <map>
#include <set>
#include "ir/IRVisitor.h"
#include "ir/Stack.h"

namespace weft {
namespace internal {
namespace {

/** The free variables and buffers of a kernel. */
class KernelUses : public IRVisitor {
public:
    std::vector<std::pair<std::string, Type>> vars;  // first-use order
    std::set<std::string> var_seen;
    std::vector<std::string> buffers;
    std::map<std::string, Type> buffer_type;
    std::set<std::string> written;
    std::vector<std::set<std::string>> scopes{{}};
    std::set<std::string> allocated;

    bool defined(const std::string &n) const {
        for (auto &s : scopes)
            if (s.count(n)) return true;
        return n.compare(0, 9, "blockIdx.") == 0 || n.compare(0, 10, "threadIdx.") == 0;
    }

protected:
    void visit(const Variable *op) override {
        if (!defined(op->name) && !var_seen.count(op->name)) {
            var_seen.insert(op->name);
            vars.push_back({op->name, op->type});
        }
    }
    void visit(const Let *op) override {
        include(op->value);
        scopes.push_back({op->name});
        include(op->body);
        scopes.pop_back();
    }
    void visit(const LetStmt *op) override {
        include(op->value);
        scopes.push_back({op->name});
        include(op->body);
        scopes.pop_back();
    }
    void visit(const For *op) override {
        include(op->min);
        include(op->extent);
        scopes.push_back({op->name});
        include(op->body);
        scopes.pop_back();
    }
    void buffer(const std::string &n, Type t) {
        if (allocated.count(n)) return;
        if (!buffer_type.count(n)) {
            buffers.push_back(n);
            buffer_type[n] = t.element_of();
        }
    }
    void visit(const Load *op) override {
        buffer(op->name, op->type);
        IRVisitor::visit(op);
    }
    void visit(const Store *op) override {
        buffer(op->name, op->value.type());
        if (!allocated.count(op->name)) written.insert(op->name);
        IRVisitor::visit(op);
    }
    void visit(const Allocate *op) override {
        include(op->extent);
        bool had = allocated.count(op->name);
        allocated.insert(op->name);
        include(op->body);
        if (!had) allocated.erase(op->name);
    }
};

/** Replaces each kernel (an outermost gpu_blocks loop) by Evaluate(gpu_launch(index)). */
class ExtractKernels : public IRMutator {
public:
    CudaProgram *prog;
    std::string prefix;

protected:
    Stmt visit(const For *op, const Stmt &s) override {
        if (op->for_type != ForType::GPUBlock) return IRMutator::visit(op, s);
        CudaKernel k;
        k.name = prefix + "_k" + std::to_string(prog->kernels.size());
        k.loop = op->name;
        for (int d = 0; d < 3; d++) k.grid[d] = Expr(1);
        // The grid, and the block size (the max thread-loop extent per dimension).
        Stmt cur = s;
        while (auto f = cur.as<For>()) {
            if (f->for_type != ForType::GPUBlock) break;
            int d = f->name.back() - 'x';
            k.grid[d] = f->extent;
            cur = f->body;
        }
        class Block : public IRVisitor {
        public:
            int b[3] = {1, 1, 1};

        protected:
            void visit(const For *op) override {
                if (op->for_type == ForType::GPUThread) {
                    int64_t c = 1;
                    is_const_int(op->extent, &c);
                    int d = op->name.back() - 'x';
                    b[d] = std::max<int>(b[d], (int)c);
                }
                IRVisitor::visit(op);
            }
        } bl;
        bl.include(cur);
        for (int d = 0; d < 3; d++) k.block[d] = bl.b[d];
        KernelUses uses;
        uses.include(cur);
        for (auto &b : uses.buffers) k.params.push_back({b, true, uses.buffer_type[b], uses.written.count(b) > 0});
        for (auto &v : uses.vars) {
            if (v.second.is_handle()) throw Error("weft internal error: CUDA codegen: handle parameter " + v.first);
            k.params.push_back({v.first, false, v.second, false});
        }
        k.body = cur;
        int idx = (int)prog->kernels.size();
        prog->kernels.push_back(std::move(k));
        return Evaluate::make(Call::make_intrinsic(Int(32), "gpu_launch", {Expr(idx)}));
    }
};

/** Splits the host code (kernels already replaced by gpu_launch) into what drives the kernels
    and host stages: each largest run of statements that stores something and launches
    nothing becomes a CPU pipeline of its own (CudaHostStage), called by host_stage(index). */
class SplitHostStages {
public:
    SplitHostStages(const LoweredFunc &f, CudaProgram &p) : prog(p) {
        for (auto &a : f.args)
            if (a.kind == LoweredArg::Buffer) pipeline_buffers[a.name] = a.dims;
    }

    Stmt split(const Stmt &s) {
        if (!s.defined()) return s;
        if (stack_low()) return on_large_stack<Stmt>([&] { return split(s); });
        Scan sc = scan(s);
        if (!sc.store) return s;
        if (!sc.launch) return stage(s);
        if (s.as<Block>()) {
            std::vector<Stmt> items, out, run;
            flatten(s, items);
            bool run_stores = false;
            auto flush = [&] {
                if (run.empty()) return;
                Stmt r = Block::make(run);
                out.push_back(run_stores ? stage(r) : r);
                run.clear();
                run_stores = false;
            };
            for (auto &it : items) {
                Scan c = scan(it);
                if (c.launch) {
                    flush();
                    out.push_back(split(it));
                } else {
                    run.push_back(it);
                    run_stores |= c.store;
                }
            }
            flush();
            return Block::make(out);
        }
        if (auto op = s.as<For>()) return For::make(op->name, op->min, op->extent, op->for_type, split(op->body));
        if (auto op = s.as<LetStmt>()) return LetStmt::make(op->name, op->value, split(op->body));
        if (auto op = s.as<IfThenElse>()) return IfThenElse::make(op->condition, split(op->then_case), split(op->else_case));
        if (auto op = s.as<Allocate>()) return Allocate::make(op->name, op->type, op->extent, op->memory_type, split(op->body));
        throw Error("weft internal error: CUDA codegen: host statement with stores and kernels cannot be split");
    }

private:
    CudaProgram &prog;
    std::map<std::string, int> pipeline_buffers;

    struct Scan {
        bool store = false, launch = false;
    };
    static Scan scan(const Stmt &s) {
        class V : public IRVisitor {
        public:
            Scan r;

        protected:
            void visit(const Store *op) override { r.store = true; }
            void visit(const Call *op) override {
                if (op->is_intrinsic("gpu_launch")) r.launch = true;
                IRVisitor::visit(op);
            }
        } v;
        v.include(s);
        return v.r;
    }
    Stmt stage(const Stmt &body) {
        KernelUses uses;
        uses.include(body);
        CudaHostStage st;
        int idx = (int)prog.stages.size();
        st.fn.name = "host_stage_" + std::to_string(idx);
        st.fn.body = body;
        std::set<std::string> from_buffers;  // fields of the pipeline's buffers: read from their weft_buffer_t
        for (auto &b : uses.buffers) {
            auto it = pipeline_buffers.find(b);
            int dims = it == pipeline_buffers.end() ? 0 : it->second;
            st.fn.args.push_back({b, LoweredArg::Buffer, uses.buffer_type[b], dims});
            st.written.push_back(uses.written.count(b) > 0);
            for (int d = 0; d < dims; d++)
                for (const char *fld : {"min", "extent", "stride"}) from_buffers.insert(buffer_field(b, fld, d));
        }
        for (auto &v : uses.vars) {
            if (from_buffers.count(v.first)) continue;
            if (v.second.is_handle() || v.second.is_vector())
                throw Error("weft internal error: CUDA codegen: host stage uses " + v.first + " of an unsupported type");
            st.fn.args.push_back({v.first, LoweredArg::Scalar, v.second, 0});
        }
        prog.stages.push_back(std::move(st));
        return Evaluate::make(Call::make_intrinsic(Int(32), "host_stage", {Expr(idx)}));
    }
};

}  // namespace

CudaProgram split_host_device(const LoweredFunc &f) {
    CudaProgram prog;
    ExtractKernels ex;
    ex.prog = &prog;
    ex.prefix = f.name;
    prog.host = ex.mutate(f.body);
    if (!prog.kernels.empty()) prog.host = SplitHostStages(f, prog).split(prog.host);
    return prog;
}

}  // namespace internal
}  // namespace weft
