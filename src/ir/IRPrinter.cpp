// Prints IR as readable pseudo-code (used by WEFT_DEBUG, error messages and tests).
#include <iomanip>
#include <sstream>
#include "ir/IRVisitor.h"

namespace weft {
namespace internal {
namespace {

class Printer : public IRVisitor {
public:
    explicit Printer(std::ostream &o) : os(o) {}
    std::ostream &os;
    int indent = 0;
    void pad() {
        for (int i = 0; i < indent; i++) os << "  ";
    }
    void bin(const Expr &a, const Expr &b, const char *op) {
        os << "(";
        include(a);
        os << " " << op << " ";
        include(b);
        os << ")";
    }
    void fn(const char *name, const Expr &a, const Expr &b) {
        os << name << "(";
        include(a);
        os << ", ";
        include(b);
        os << ")";
    }

protected:
    void visit(const IntImm *op) override {
        if (op->type == Int(32)) os << op->value;
        else os << "(" << op->type.str() << ")" << op->value;
    }
    void visit(const UIntImm *op) override {
        if (op->type.is_bool()) os << (op->value ? "true" : "false");
        else os << "(" << op->type.str() << ")" << op->value;
    }
    void visit(const FloatImm *op) override {
        std::ostringstream s;
        s << std::setprecision(17) << op->value;
        os << s.str() << (op->type.bits() == 32 ? "f" : "");
    }
    void visit(const StringImm *op) override { os << '"' << op->value << '"'; }
    void visit(const Variable *op) override { os << op->name; }
    void visit(const Cast *op) override {
        os << op->type.str() << "(";
        include(op->value);
        os << ")";
    }
    void visit(const Add *op) override { bin(op->a, op->b, "+"); }
    void visit(const Sub *op) override { bin(op->a, op->b, "-"); }
    void visit(const Mul *op) override { bin(op->a, op->b, "*"); }
    void visit(const Div *op) override { bin(op->a, op->b, "/"); }
    void visit(const Mod *op) override { bin(op->a, op->b, "%"); }
    void visit(const Min *op) override { fn("min", op->a, op->b); }
    void visit(const Max *op) override { fn("max", op->a, op->b); }
    void visit(const EQ *op) override { bin(op->a, op->b, "=="); }
    void visit(const NE *op) override { bin(op->a, op->b, "!="); }
    void visit(const LT *op) override { bin(op->a, op->b, "<"); }
    void visit(const LE *op) override { bin(op->a, op->b, "<="); }
    void visit(const GT *op) override { bin(op->a, op->b, ">"); }
    void visit(const GE *op) override { bin(op->a, op->b, ">="); }
    void visit(const And *op) override { bin(op->a, op->b, "&&"); }
    void visit(const Or *op) override { bin(op->a, op->b, "||"); }
    void visit(const Not *op) override {
        os << "!";
        include(op->a);
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
    void visit(const Load *op) override {
        os << op->name << "[";
        include(op->index);
        os << "]";
        if (op->type.element_of() != Float(32)) os << ":" << op->type.element_of().str();
        if (op->alignment) os << "@" << op->alignment;
    }
    void visit(const Ramp *op) override {
        os << "ramp(";
        include(op->base);
        os << ", ";
        include(op->stride);
        os << ", " << op->lanes << ")";
    }
    void visit(const Broadcast *op) override {
        os << "x" << op->lanes << "(";
        include(op->value);
        os << ")";
    }
    void visit(const Let *op) override {
        os << "(let " << op->name << " = ";
        include(op->value);
        os << " in ";
        include(op->body);
        os << ")";
    }
    void visit(const Call *op) override {
        os << op->name;
        if (op->call_type == Call::Intrinsic && op->type != Float(32)) os << "<" << op->type.str() << ">";
        os << "(";
        for (size_t i = 0; i < op->args.size(); i++) {
            if (i) os << ", ";
            include(op->args[i]);
        }
        os << ")";
        if (op->value_index) os << "[" << op->value_index << "]";
    }
    void visit(const VectorReduce *op) override {
        static const char *names[] = {"add", "mul", "min", "max"};
        os << "vector_reduce_" << names[op->op] << "<" << op->type.lanes() << ">(";
        include(op->value);
        os << ")";
    }
    void visit(const LetStmt *op) override {
        pad();
        os << "let " << op->name << " = ";
        include(op->value);
        os << "\n";
        include(op->body);
    }
    void visit(const AssertStmt *op) override {
        pad();
        os << "assert(";
        include(op->condition);
        os << ", \"" << op->message << "\"";
        for (auto &a : op->args) {
            os << ", ";
            include(a);
        }
        os << ")\n";
    }
    void visit(const For *op) override {
        static const char *kinds[] = {"for", "parallel", "vectorized", "unrolled", "gpu_block", "gpu_thread"};
        pad();
        os << kinds[(int)op->for_type] << " (" << op->name << ", ";
        include(op->min);
        os << ", ";
        include(op->extent);
        os << ") {\n";
        indent++;
        include(op->body);
        indent--;
        pad();
        os << "}\n";
    }
    void visit(const Store *op) override {
        pad();
        os << op->name << "[";
        include(op->index);
        os << "]";
        if (op->alignment) os << "@" << op->alignment;
        if (op->nontemporal) os << " (nontemporal)";
        os << (op->atomic ? " = (atomic) " : " = ");
        include(op->value);
        os << "\n";
    }
    void visit(const Provide *op) override {
        pad();
        os << op->name << "(";
        for (size_t i = 0; i < op->args.size(); i++) {
            if (i) os << ", ";
            include(op->args[i]);
        }
        os << (op->atomic ? ") = (atomic) " : ") = ");
        include(op->value);
        os << "\n";
    }
    void visit(const Allocate *op) override {
        static const char *mem[] = {"auto", "heap", "stack", "register", "gpu_shared"};
        pad();
        os << "allocate " << op->name << "[" << op->type.str() << " * ";
        include(op->extent);
        os << "] in " << mem[(int)op->memory_type] << "\n";
        include(op->body);
        pad();
        os << "free " << op->name << "\n";
    }
    void visit(const Realize *op) override {
        pad();
        os << "realize " << op->name << "(";
        for (size_t i = 0; i < op->bounds.size(); i++) {
            if (i) os << ", ";
            os << "[";
            include(op->bounds[i].min);
            os << ", ";
            include(op->bounds[i].extent);
            os << "]";
        }
        os << ") {\n";
        indent++;
        include(op->body);
        indent--;
        pad();
        os << "}\n";
    }
    void visit(const Block *op) override {
        include(op->first);
        include(op->rest);
    }
    void visit(const IfThenElse *op) override {
        pad();
        os << "if (";
        include(op->condition);
        os << ") {\n";
        indent++;
        include(op->then_case);
        indent--;
        if (op->else_case.defined()) {
            pad();
            os << "} else {\n";
            indent++;
            include(op->else_case);
            indent--;
        }
        pad();
        os << "}\n";
    }
    void visit(const Evaluate *op) override {
        pad();
        include(op->value);
        os << "\n";
    }
};
}  // namespace

std::ostream &operator<<(std::ostream &os, const Expr &e) {
    if (!e.defined()) return os << "(undefined)";
    Printer p(os);
    p.include(e);
    return os;
}
std::ostream &operator<<(std::ostream &os, const Stmt &s) {
    if (!s.defined()) return os << "(no-op)\n";
    Printer p(os);
    p.include(s);
    return os;
}
std::string to_string(const Stmt &s) {
    std::ostringstream o;
    o << s;
    return o.str();
}
}  // namespace internal

std::string to_string(const Expr &e) {
    std::ostringstream o;
    internal::operator<<(o, e);
    return o.str();
}

}  // namespace weft
