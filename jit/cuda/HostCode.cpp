#include "cuda/HostCode.h"
#include <map>
#include "ir/IRVisitor.h"

namespace weft {
namespace internal {
namespace {

/** A value as the 64 bits of an argument slot (little-endian: narrower types in the low bytes). */
Expr to_bits(const Expr &v) {
    Type t = v.type();
    if (t.is_float() && t.bits() < 64) return Cast::make(Int(64), Call::make_intrinsic(UInt(t.bits()), "reinterpret", {v}));
    if (t.is_float()) return Call::make_intrinsic(Int(64), "reinterpret", {v});
    if (t.is_handle()) throw Error("weft internal error: CUDA host code: a handle (" + to_string(v) + ") passed to the device");
    return t == Int(64) ? v : Cast::make(Int(64), v);
}
/** The value of type t whose bits an Int(64) holds (to_bits' inverse). */
Expr from_bits(const Expr &bits, Type t) {
    if (t.is_float() && t.bits() < 64) return Call::make_intrinsic(t, "reinterpret", {Cast::make(UInt(t.bits()), bits)});
    if (t.is_float()) return Call::make_intrinsic(t, "reinterpret", {bits});
    if (t.is_bool()) return NE::make(bits, make_const(Int(64), (int64_t)0));
    return t == Int(64) ? bits : Cast::make(t, bits);
}

class MakeHostCode : public IRMutator {
public:
    MakeHostCode(const LoweredFunc &f, const CudaProgram &p, CudaHostCode &h) : prog(p), host(h) {
        device = Variable::make(Handle(), kDeviceArg);
        int bi = 0;
        for (auto &a : f.args)
            if (a.kind == LoweredArg::Buffer) {
                scope[a.name].push_back((int)host.buffers.size());
                host.buffers.push_back({a.name, a.type, bi++});
            }
        host.kernel_buffers.resize(p.kernels.size());
        host.stage_buffers.resize(p.stages.size());
    }

private:
    const CudaProgram &prog;
    CudaHostCode &host;
    Expr device;
    std::map<std::string, std::vector<int>> scope;  // buffer name -> its buffers, innermost last

    Expr call(CudaHostOp op, int index, std::vector<Expr> args) {
        args.insert(args.begin(), {device, Expr((int32_t)op), Expr((int32_t)index)});
        return Call::make_intrinsic(Int(64), "device_call", std::move(args));
    }
    Stmt run(CudaHostOp op, int index, std::vector<Expr> args) { return Evaluate::make(call(op, index, std::move(args))); }
    int buffer(const std::string &name) {
        auto it = scope.find(name);
        if (it == scope.end() || it->second.empty()) throw Error("weft internal error: CUDA host code: no buffer " + name);
        return it->second.back();
    }
    Expr scalar(const std::string &name, Type t) { return to_bits(Variable::make(t, name)); }

protected:
    Stmt visit(const Allocate *op, const Stmt &) override {
        int idx = (int)host.buffers.size();
        host.buffers.push_back({op->name, op->type, -1});
        Expr extent = mutate(op->extent);
        scope[op->name].push_back(idx);
        Stmt body = mutate(op->body);
        scope[op->name].pop_back();
        return Block::make({run(CudaHostOp::Alloc, idx, {to_bits(extent)}), body, run(CudaHostOp::Free, idx, {})});
    }
    Expr visit(const Load *op, const Expr &) override {
        if (op->type.is_vector()) throw Error("weft internal error: CUDA host code: a vector load of " + op->name);
        return from_bits(call(CudaHostOp::Load, buffer(op->name), {to_bits(mutate(op->index))}), op->type);
    }
    Stmt visit(const Store *op, const Stmt &) override {
        throw Error("weft internal error: CUDA host code: a store to " + op->name + " outside the host stages");
    }
    Stmt visit(const For *op, const Stmt &) override {
        // Serial: the calls to the device runtime of one pipeline call run one after another.
        return For::make(op->name, mutate(op->min), mutate(op->extent), ForType::Serial, mutate(op->body));
    }
    Stmt visit(const Evaluate *op, const Stmt &s) override {
        const Call *c = op->value.as<Call>();
        if (c && c->is_intrinsic("gpu_launch")) {
            int k = (int)*as_const_int(c->args[0]);
            const CudaKernel &K = prog.kernels[k];
            std::vector<Expr> args;
            for (auto &g : K.grid) args.push_back(to_bits(mutate(g)));
            for (auto &p : K.params) {
                host.kernel_buffers[k].push_back(p.is_buffer ? buffer(p.name) : -1);
                if (!p.is_buffer) args.push_back(scalar(p.name, p.type));
            }
            return run(CudaHostOp::Launch, k, std::move(args));
        }
        if (c && c->is_intrinsic("host_stage")) {
            int k = (int)*as_const_int(c->args[0]);
            std::vector<Expr> args;
            for (auto &a : prog.stages[k].fn.args) {
                bool buf = a.kind == LoweredArg::Buffer;
                host.stage_buffers[k].push_back(buf ? buffer(a.name) : -1);
                if (!buf) args.push_back(scalar(a.name, a.type));
            }
            return run(CudaHostOp::HostStage, k, std::move(args));
        }
        return IRMutator::visit(op, s);
    }
};

}  // namespace

CudaHostCode make_host_code(const LoweredFunc &f, const CudaProgram &p) {
    CudaHostCode h;
    h.fn.name = f.name + "_host";
    h.fn.args = f.args;
    h.fn.args.push_back({kDeviceArg, LoweredArg::Scalar, Handle(), 0});
    h.fn.body = MakeHostCode(f, p, h).mutate(p.host);
    return h;
}

}  // namespace internal
}  // namespace weft
