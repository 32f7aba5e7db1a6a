#include "interp/Interpreter.h"
#include <cmath>
#include <cstring>
#include <optional>
#include <vector>
#include <limits>
#include "ir/Evaluate.h"
#include "ir/IRVisitor.h"
#include "ir/Stack.h"

namespace weft {
namespace internal {
namespace {

class Interp : public ExprEvaluator {
public:
    std::map<std::string, std::pair<void *, Type>> buffers;
    weft_context_t *ctx = nullptr;

    struct Fail {
        int32_t code;
    };

    static Val load_element(void *base, Type t, int64_t idx) {
        Val v;
        v.t = t;
        char *p = (char *)base;
        if (t.is_bool()) v.u = ((uint8_t *)p)[idx] != 0;
        else if (t.is_float()) v.f = float_from_bytes(t, p + idx * t.bytes());
        else if (t.is_int()) {
            switch (t.bits()) {
            case 8: v.i = ((int8_t *)p)[idx]; break;
            case 16: v.i = ((int16_t *)p)[idx]; break;
            case 32: v.i = ((int32_t *)p)[idx]; break;
            default: v.i = ((int64_t *)p)[idx];
            }
        } else {
            switch (t.bits()) {
            case 8: v.u = ((uint8_t *)p)[idx]; break;
            case 16: v.u = ((uint16_t *)p)[idx]; break;
            case 32: v.u = ((uint32_t *)p)[idx]; break;
            default: v.u = ((uint64_t *)p)[idx];
            }
        }
        return v;
    }
    static void store(void *base, Type t, int64_t idx, const Val &v) {
        char *p = (char *)base;
        if (t.is_bool()) ((uint8_t *)p)[idx] = v.u ? 1 : 0;
        else if (t.is_float()) {
            float_to_bytes(t, v.f, p + idx * t.bytes());
        } else {
            switch (t.bits()) {
            case 8: ((uint8_t *)p)[idx] = (uint8_t)v.u; break;
            case 16: ((uint16_t *)p)[idx] = (uint16_t)v.u; break;
            case 32: ((uint32_t *)p)[idx] = (uint32_t)v.u; break;
            default: ((uint64_t *)p)[idx] = v.u;
            }
        }
    }

    Val load(const Load *op) override {
        auto it = buffers.find(op->name);
        if (it == buffers.end()) throw Error("weft internal error: interpreter: unknown buffer " + op->name);
        return load_element(it->second.first, op->type, eval(op->index).i);
    }
    Val call(const Call *op) override {
        if (op->call_type == Call::Intrinsic && op->name == "weft_rt_profile") {
            weft_rt_profile(ctx, (int32_t)eval(op->args[0]).i, (int32_t)eval(op->args[1]).i);
            return make_int(Int(32), 0);
        }
        if (op->call_type == Call::Intrinsic && op->name == "device_call") {
            // device_call(device, op, index, args...): see weft_rt_device_call.
            std::vector<int64_t> args;
            for (size_t i = 3; i < op->args.size(); i++) args.push_back(eval(op->args[i]).i);
            int64_t r = weft_rt_device_call(ctx, (weft_device_t *)(uintptr_t)eval(op->args[0]).u,
                                            (int32_t)eval(op->args[1]).i, (int32_t)eval(op->args[2]).i, args.data(),
                                            (int32_t)args.size());
            if (ctx->error_code != 0) throw Fail{ctx->error_code};
            return make_int(Int(64), (uint64_t)r);
        }
        return ExprEvaluator::call(op);
    }

    void exec(const Stmt &s) {
        const StmtNode *n = s.get();
        if (!n) return;
        if (stack_low()) return on_large_stack_void([&] { exec(s); });
        switch (n->node_type) {
        case IRNodeType::LetStmt: {
            auto op = static_cast<const LetStmt *>(n);
            vars.push_back({op->name, eval(op->value)});
            exec(op->body);
            vars.pop_back();
            return;
        }
        case IRNodeType::AssertStmt: {
            auto op = static_cast<const AssertStmt *>(n);
            if (eval(op->condition).u) return;
            std::vector<int64_t> args;
            for (auto &a : op->args) args.push_back(do_cast(Int(64), eval(a)).i);
            int32_t code = weft_rt_assert_fail(ctx, op->message.c_str(), args.data(), (int32_t)args.size());
            throw Fail{code};
        }
        case IRNodeType::For: {
            auto op = static_cast<const For *>(n);
            int64_t mn = eval(op->min).i, ex = eval(op->extent).i;
            vars.push_back({op->name, Val()});
            for (int64_t i = mn; i < mn + ex; i++) {
                vars.back().second = make_int(Int(32), (uint64_t)i);
                size_t depth = vars.size();
                exec(op->body);
                vars.resize(depth);
            }
            vars.pop_back();
            return;
        }
        case IRNodeType::Store: {
            auto op = static_cast<const Store *>(n);
            auto it = buffers.find(op->name);
            if (it == buffers.end()) throw Error("weft internal error: interpreter: unknown buffer " + op->name);
            Val v = eval(op->value);
            store(it->second.first, op->value.type(), eval(op->index).i, v);
            return;
        }
        case IRNodeType::Allocate: {
            auto op = static_cast<const Allocate *>(n);
            int64_t count = eval(op->extent).i;
            void *p = weft_rt_malloc(ctx, std::max<int64_t>(count, 1) * op->type.bytes());
            if (!p) throw Fail{-1};
            auto saved = buffers.count(op->name) ? std::optional<std::pair<void *, Type>>(buffers[op->name]) : std::nullopt;
            buffers[op->name] = {p, op->type};
            try {
                exec(op->body);
            } catch (...) {
                weft_rt_free(ctx, buffers[op->name].first);
                throw;
            }
            weft_rt_free(ctx, buffers[op->name].first);  // (null where free_buffer() gave it back)
            if (saved) buffers[op->name] = *saved;
            else buffers.erase(op->name);
            return;
        }
        case IRNodeType::Block: {
            auto op = static_cast<const Block *>(n);
            exec(op->first);
            exec(op->rest);
            return;
        }
        case IRNodeType::IfThenElse: {
            auto op = static_cast<const IfThenElse *>(n);
            if (eval(op->condition).u) exec(op->then_case);
            else exec(op->else_case);
            return;
        }
        case IRNodeType::Evaluate: {
            const Expr &v = static_cast<const Evaluate *>(n)->value;
            if (auto c = v.as<Call>(); c && c->is_intrinsic("free_buffer")) {
                // Memory planning gives a heap buffer back after its last use.
                auto &slot = buffers.at(c->args.at(0).as<StringImm>()->value);
                weft_rt_free(ctx, slot.first);
                slot.first = nullptr;
                return;
            }
            eval(v);
            return;
        }
        default: throw Error("weft internal error: interpreter: unsupported statement");
        }
    }
};

}  // namespace

int32_t interpret_lowered(const LoweredFunc &f, void **args, weft_context_t *ctx) {
    Interp in;
    in.ctx = ctx;
    for (size_t i = 0; i < f.args.size(); i++) {
        const LoweredArg &a = f.args[i];
        if (a.kind == LoweredArg::Buffer) {
            auto *b = (weft_buffer_t *)args[i];
            in.buffers[a.name] = {b->host, a.type};
            for (int d = 0; d < b->dims; d++) {
                in.vars.push_back({buffer_field(a.name, "min", d), make_int(Int(32), (uint64_t)(int64_t)b->dim[d].min)});
                in.vars.push_back({buffer_field(a.name, "extent", d), make_int(Int(32), (uint64_t)(int64_t)b->dim[d].extent)});
                in.vars.push_back({buffer_field(a.name, "stride", d), make_int(Int(32), (uint64_t)(int64_t)b->dim[d].stride)});
            }
        } else {
            Val v;
            v.t = a.type;
            uint64_t bits = 0;
            std::memcpy(&bits, args[i], a.type.bytes());
            if (a.type.is_float()) v.f = float_from_bytes(a.type, args[i]);
            else v = make_int(a.type, bits);
            in.vars.push_back({a.name, v});
        }
    }
    try {
        in.exec(f.body);
    } catch (Interp::Fail &fail) {
        return fail.code;
    }
    return 0;
}

}  // namespace internal
}  // namespace weft
