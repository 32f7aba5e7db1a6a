// A schedule value printed as the C++ calls of the public API that give it (see lang/Schedule.h).
#include <iomanip>
#include <sstream>
#include "ir/IRVisitor.h"
#include "lang/Schedule.h"

namespace weft {
namespace internal {

std::string cpp_identifier(const std::string &name) {
    std::string r;
    for (char c : name) r += (std::isalnum((unsigned char)c) || c == '_') ? c : '_';
    if (r.empty() || std::isdigit((unsigned char)r[0])) r = "_" + r;
    return r;
}

namespace {

std::string cpp_string(const std::string &s) {
    std::string r = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') r += '\\';
        r += c;
    }
    return r + "\"";
}

std::string type_expr(Type t) {
    if (t.is_bool()) return "Bool()";
    const char *k = t.is_bfloat() ? "BFloat" : t.is_float() ? "Float" : t.is_uint() ? "UInt" : "Int";
    return std::string(k) + "(" + std::to_string(t.bits()) + ")";
}

/** An Expr in C++: Params and buffer fields by the names of their objects. */
class CppExpr : public IRVisitor {
public:
    std::ostringstream os;
    std::map<std::string, Expr> lets;  // inlined where used

protected:
    void visit(const IntImm *op) override {
        if (op->type == Int(32)) os << op->value;
        else os << "cast(" << type_expr(op->type) << ", Expr((int64_t)" << op->value << "))";
    }
    void visit(const UIntImm *op) override {
        if (op->type.is_bool()) os << "(Expr(" << op->value << ") != 0)";
        else os << "cast(" << type_expr(op->type) << ", Expr((uint64_t)" << op->value << "u))";
    }
    void visit(const FloatImm *op) override {
        if (op->type.bits() == 16) os << "cast(" << type_expr(op->type) << ", ";
        std::ostringstream v;
        v << std::setprecision(17) << op->value;
        std::string text = v.str();
        if (text.find_first_of(".en") == std::string::npos) text += ".0";  // (2.0 is not the int 2; 'n': inf, nan)
        os << text;
        if (op->type.bits() <= 32) os << "f";
        if (op->type.bits() == 16) os << ")";
    }
    void visit(const Variable *op) override {
        auto it = lets.find(op->name);
        if (it != lets.end()) {
            include(it->second);
            return;
        }
        // Buffer fields: "in.extent.0" -> in.extent(0)
        auto d1 = op->name.find('.');
        auto d2 = op->name.rfind('.');
        if (d1 != std::string::npos && d2 > d1)
            os << cpp_identifier(op->name.substr(0, d1)) << "." << op->name.substr(d1 + 1, d2 - d1 - 1) << "("
               << op->name.substr(d2 + 1) << ")";
        else os << cpp_identifier(op->name);
    }
    void visit(const Cast *op) override {
        os << "cast(" << type_expr(op->type) << ", ";
        include(op->value);
        os << ")";
    }
    void bin(const Expr &a, const Expr &b, const char *o) {
        os << "(";
        include(a);
        os << " " << o << " ";
        include(b);
        os << ")";
    }
    void fn(const Expr &a, const Expr &b, const char *o) {
        os << o << "(";
        include(a);
        os << ", ";
        include(b);
        os << ")";
    }
    void visit(const Add *op) override { bin(op->a, op->b, "+"); }
    void visit(const Sub *op) override { bin(op->a, op->b, "-"); }
    void visit(const Mul *op) override { bin(op->a, op->b, "*"); }
    void visit(const Div *op) override { bin(op->a, op->b, "/"); }
    void visit(const Mod *op) override { bin(op->a, op->b, "%"); }
    void visit(const Min *op) override { fn(op->a, op->b, "min"); }
    void visit(const Max *op) override { fn(op->a, op->b, "max"); }
    void visit(const EQ *op) override { bin(op->a, op->b, "=="); }
    void visit(const NE *op) override { bin(op->a, op->b, "!="); }
    void visit(const LT *op) override { bin(op->a, op->b, "<"); }
    void visit(const LE *op) override { bin(op->a, op->b, "<="); }
    void visit(const GT *op) override { bin(op->a, op->b, ">"); }
    void visit(const GE *op) override { bin(op->a, op->b, ">="); }
    void visit(const And *op) override { bin(op->a, op->b, "&&"); }
    void visit(const Or *op) override { bin(op->a, op->b, "||"); }
    void visit(const Not *op) override {
        os << "!(";
        include(op->a);
        os << ")";
    }
    void visit(const Select *op) override {
        os << "select(";
        include(op->condition);
        os << ", ";
        include(op->true_value);
        os << ", ";
        include(op->false_value);
        os << ")";
    }
    void visit(const Let *op) override {
        lets[op->name] = op->value;
        include(op->body);
        lets.erase(op->name);
    }
    void visit(const Call *op) override {
        os << (op->call_type == Call::Intrinsic ? op->name : cpp_identifier(op->name)) << "(";
        for (size_t i = 0; i < op->args.size(); i++) {
            if (i) os << ", ";
            include(op->args[i]);
        }
        os << ")";
    }
};

std::string cpp(const Expr &e) {
    CppExpr p;
    p.include(e);
    return p.os.str();
}

}  // namespace

std::string schedule_cpp_source(const PipelineSchedule &s) {
    std::vector<Directive> ds = schedule_directives(s);
    // Every loop name the calls use, declared first as a Var or an RVar.
    std::map<std::string, bool> loops;  // name -> is an RVar
    for (auto &d : ds) {
        switch (d.op) {
        case Directive::ComputeAt:
        case Directive::StoreAt:
        case Directive::HoistStorage: loops.emplace(d.names[1], false); break;
        case Directive::Bound:
        case Directive::AlignStorage:
        case Directive::AlignBounds:
        case Directive::FoldStorage:
        case Directive::ReorderStorage:
            for (auto &n : d.names) loops.emplace(n, false);
            break;
        case Directive::Prefetch: loops.emplace(d.names[1], d.rvars[1]); break;
        case Directive::ComputeWith:
            for (size_t i = 1; i < d.names.size(); i++) loops[d.names[i]] = loops[d.names[i]] || d.rvars[i];
            break;
        case Directive::Split:
        case Directive::Fuse:
        case Directive::Reorder:
        case Directive::Loop:
        case Directive::Mma:
            for (size_t i = 0; i < d.names.size(); i++) loops[d.names[i]] = loops[d.names[i]] || d.rvars[i];
            break;
        default: break;
        }
    }
    std::ostringstream os;
    std::string vars, rvars;
    for (auto &[n, rv] : loops) {
        std::string decl = cpp_identifier(n) + "(" + cpp_string(n) + ")";
        (rv ? rvars : vars) += (rv ? rvars : vars).empty() ? decl : ", " + decl;
    }
    if (!vars.empty()) os << "Var " << vars << ";\n";
    if (!rvars.empty()) os << "RVar " << rvars << ";\n";
    auto stage = [&](const Directive &d) {
        std::string f = cpp_identifier(d.func);
        if (d.spec >= 0) return f + "_s" + std::to_string(d.stage) + "_" + std::to_string(d.spec);
        return d.stage == 0 ? f : f + ".update(" + std::to_string(d.stage - 1) + ")";
    };
    auto list = [&](const std::vector<std::string> &names) {
        std::string r;
        for (auto &n : names) r += (r.empty() ? "" : ", ") + cpp_identifier(n);
        return r;
    };
    for (auto &d : ds) {
        std::string f = cpp_identifier(d.func);
        switch (d.op) {
        case Directive::Wrap: {
            std::vector<std::string> cons(d.names.begin() + 1, d.names.end());
            os << "Func " << cpp_identifier(d.names[0]) << " = " << f << (d.flag ? ".clone_in(" : ".in(")
               << (cons.size() > 1 ? "{" + list(cons) + "}" : list(cons)) << ");\n";
            break;
        }
        case Directive::ComputeRoot: os << f << ".compute_root();\n"; break;
        case Directive::ComputeInline: os << f << ".compute_inline();\n"; break;
        case Directive::ComputeAt:
            os << f << ".compute_at(" << cpp_identifier(d.names[0]) << ", " << cpp_identifier(d.names[1]) << ");\n";
            break;
        case Directive::StoreRoot: os << f << ".store_root();\n"; break;
        case Directive::HoistStorageRoot: os << f << ".hoist_storage_root();\n"; break;
        case Directive::HoistStorage:
            os << f << ".hoist_storage(" << cpp_identifier(d.names[0]) << ", " << cpp_identifier(d.names[1]) << ");\n";
            break;
        case Directive::StoreAt:
            os << f << ".store_at(" << cpp_identifier(d.names[0]) << ", " << cpp_identifier(d.names[1]) << ");\n";
            break;
        case Directive::Bound:
            os << f << ".bound(" << cpp_identifier(d.names[0]) << ", " << cpp(d.exprs[0]) << ", " << cpp(d.exprs[1])
               << ");\n";
            break;
        case Directive::StoreIn: os << f << ".store_in(" << word_of(memory_words(), (int)d.memory).cpp << ");\n"; break;
        case Directive::ReorderStorage: os << f << ".reorder_storage(" << list(d.names) << ");\n"; break;
        case Directive::AlignStorage:
            os << f << ".align_storage(" << cpp_identifier(d.names[0]) << ", " << cpp(d.exprs[0]) << ");\n";
            break;
        case Directive::FoldStorage:
            os << f << ".fold_storage(" << cpp_identifier(d.names[0]) << ", " << cpp(d.exprs[0]) << ");\n";
            break;
        case Directive::AlignBounds:
            os << f << ".align_bounds(" << cpp_identifier(d.names[0]) << ", " << cpp(d.exprs[0]) << ", " << cpp(d.exprs[1])
               << ");\n";
            break;
        case Directive::StoreNontemporal: os << f << ".store_nontemporal();\n"; break;
        case Directive::LoadAhead: os << f << ".load_ahead();\n"; break;
        case Directive::Specialize:
            os << "Stage " << stage(d) << " = "
               << (d.stage == 0 ? f : f + ".update(" + std::to_string(d.stage - 1) + ")") << ".specialize("
               << cpp(d.exprs[0]) << ");\n";
            break;
        case Directive::Split:
            os << stage(d) << ".split(" << list(d.names) << ", " << cpp(d.exprs[0])
               << (d.tail == TailStrategy::Auto ? std::string() : std::string(", ") + word_of(tail_words(), (int)d.tail).cpp) << ");\n";
            break;
        case Directive::Fuse: os << stage(d) << ".fuse(" << list(d.names) << ");\n"; break;
        case Directive::Atomic: os << stage(d) << ".atomic(" << (d.flag ? "true" : "") << ");\n"; break;
        case Directive::Reorder: os << stage(d) << ".reorder(" << list(d.names) << ");\n"; break;
        case Directive::Loop:
            os << stage(d) << "." << word_of(loop_words(), (int)d.for_type).cpp << "(" << cpp_identifier(d.names[0]) << ");\n";
            break;
        case Directive::Prefetch:
            os << stage(d) << ".prefetch(" << cpp_identifier(d.names[0]) << ", " << cpp_identifier(d.names[1]) << ", "
               << cpp(d.exprs[0]) << ");\n";
            break;
        case Directive::SingleThread: os << stage(d) << ".gpu_single_thread();\n"; break;
        case Directive::Mma: os << stage(d) << ".gpu_mma(" << list(d.names) << ");\n"; break;
        case Directive::ComputeWith: {
            int64_t ps = 0;
            is_const_int(d.exprs[0], &ps);
            std::string parent = cpp_identifier(d.names[0]);
            if (ps > 0) parent += ".update(" + std::to_string(ps - 1) + ")";
            os << stage(d) << ".compute_with(" << parent << ", " << cpp_identifier(d.names[1]);
            if (d.names.size() > 2) {
                os << ", {";
                for (size_t i = 2; i < d.names.size(); i++) {
                    int64_t a = 0;
                    is_const_int(d.exprs[i - 1], &a);
                    os << (i > 2 ? ", " : "") << "{" << cpp_identifier(d.names[i]) << ", " << word_of(align_words(), (int)a).cpp << "}";
                }
                os << "}";
            }
            os << ");\n";
            break;
        }
        }
    }
    return os.str();
}

}  // namespace internal
}  // namespace weft
