// A pipeline's schedule as text and back (see lang/Schedule.h). The same serializer writes
// the schedule part of the cache key.
//
//   weft-schedule 1
//   wrapper "f" "f_in_g" for "g"    (f.in(g): the wrapper's name, then its consumers, none for
//                                    f.in(); "clone" after the name for clone_in)
//   func "f" args "x" "y"
//     compute at "g" "y"            (root | inline | at "consumer" "loop")
//     store root                    (only where store_root()/store_at() was given)
//     bound "x" EXPR EXPR
//     memory heap                   (auto | heap | stack | register | gpu_shared)
//     storage_order "y" "x"
//     nontemporal
//     load_ahead
//     stage 0 "x" "y"               (then the stage's loops before any directive, innermost first,
//                                    an RVar's after "rvar")
//       split "x" "xo" "xi" EXPR guard   (auto | guard | roundup | shift)
//       fuse "xy" "y" "x"                (fused, outer, inner)
//       dim "xi" vectorized              (innermost first; "rvar" after an RVar's)
//       prefetch "in" "y" EXPR
//       single_thread
//       atomic [override]
//     specialize EXPR               (then its own split/fuse/dim/... lines)
//   end
//
// Exprs are typed prefix forms: (i i32 -3), (u u8 7), (f f32 0x3ff0000000000000) (the bits
// of the double), (v i32 "name"), (cast f32 E), (+ A B) ... (|| A B), (! A), (select C A B),
// (call i32 intrinsic "abs" A), (let "n" V B).
#include <cerrno>
#include <cstring>
#include <sstream>
#include "ir/IRVisitor.h"
#include "lang/Schedule.h"

namespace weft {
namespace internal {

namespace {

std::string quote(const std::string &s) {
    std::string r = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') r += '\\', r += c;
        else if (c == '\n') r += "\\n";
        else r += c;
    }
    return r + "\"";
}

std::string type_token(Type t) {
    if (t.is_vector()) user_error("weft: a schedule's Exprs are scalars (got a " + t.str() + ")");
    if (t.is_bool()) return "b1";
    switch (t.code()) {
    case TypeCode::Int: return "i" + std::to_string(t.bits());
    case TypeCode::UInt: return "u" + std::to_string(t.bits());
    case TypeCode::Float: return "f" + std::to_string(t.bits());
    case TypeCode::BFloat: return "bf" + std::to_string(t.bits());
    default: user_error("weft: a schedule's Expr has type " + t.str() + ", which has no text form");
    }
}

const char *binary_op(IRNodeType t) {
    switch (t) {
    case IRNodeType::Add: return "+";
    case IRNodeType::Sub: return "-";
    case IRNodeType::Mul: return "*";
    case IRNodeType::Div: return "/";
    case IRNodeType::Mod: return "%";
    case IRNodeType::Min: return "min";
    case IRNodeType::Max: return "max";
    case IRNodeType::EQ: return "==";
    case IRNodeType::NE: return "!=";
    case IRNodeType::LT: return "<";
    case IRNodeType::LE: return "<=";
    case IRNodeType::GT: return ">";
    case IRNodeType::GE: return ">=";
    case IRNodeType::And: return "&&";
    case IRNodeType::Or: return "||";
    default: return nullptr;
    }
}

class ExprWriter : public IRVisitor {
public:
    std::ostringstream os;

protected:
    void visit(const IntImm *op) override { os << "(i " << type_token(op->type) << " " << op->value << ")"; }
    void visit(const UIntImm *op) override { os << "(u " << type_token(op->type) << " " << op->value << ")"; }
    void visit(const FloatImm *op) override {
        uint64_t bits;
        std::memcpy(&bits, &op->value, 8);
        char buf[32];
        std::snprintf(buf, sizeof buf, "0x%016llx", (unsigned long long)bits);
        os << "(f " << type_token(op->type) << " " << buf << ")";
    }
    void visit(const StringImm *op) override { os << "(s " << quote(op->value) << ")"; }
    void visit(const Variable *op) override { os << "(v " << type_token(op->type) << " " << quote(op->name) << ")"; }
    void visit(const Cast *op) override {
        os << "(cast " << type_token(op->type) << " ";
        include(op->value);
        os << ")";
    }
    void bin(const BinaryExprNode *op) {
        os << "(" << binary_op(op->node_type) << " ";
        include(op->a);
        os << " ";
        include(op->b);
        os << ")";
    }
    void visit(const Add *op) override { bin(op); }
    void visit(const Sub *op) override { bin(op); }
    void visit(const Mul *op) override { bin(op); }
    void visit(const Div *op) override { bin(op); }
    void visit(const Mod *op) override { bin(op); }
    void visit(const Min *op) override { bin(op); }
    void visit(const Max *op) override { bin(op); }
    void visit(const EQ *op) override { bin(op); }
    void visit(const NE *op) override { bin(op); }
    void visit(const LT *op) override { bin(op); }
    void visit(const LE *op) override { bin(op); }
    void visit(const GT *op) override { bin(op); }
    void visit(const GE *op) override { bin(op); }
    void visit(const And *op) override { bin(op); }
    void visit(const Or *op) override { bin(op); }
    void visit(const Not *op) override {
        os << "(! ";
        include(op->a);
        os << ")";
    }
    void visit(const Select *op) override {
        os << "(select ";
        include(op->condition);
        os << " ";
        include(op->true_value);
        os << " ";
        include(op->false_value);
        os << ")";
    }
    void visit(const Let *op) override {
        os << "(let " << quote(op->name) << " ";
        include(op->value);
        os << " ";
        include(op->body);
        os << ")";
    }
    void visit(const Call *op) override {
        static const char *kinds[] = {"func", "image", "intrinsic"};
        os << "(call " << type_token(op->type) << " " << kinds[(int)op->call_type] << " " << quote(op->name);
        for (auto &a : op->args) {
            os << " ";
            include(a);
        }
        os << ")";
    }
    void visit(const Load *) override { internal_error("a Load in a schedule's Expr", __FILE__, __LINE__); }
    void visit(const Ramp *) override { internal_error("a Ramp in a schedule's Expr", __FILE__, __LINE__); }
    void visit(const Broadcast *) override { internal_error("a Broadcast in a schedule's Expr", __FILE__, __LINE__); }
    void visit(const VectorReduce *) override { internal_error("a VectorReduce in a schedule's Expr", __FILE__, __LINE__); }
};

std::string level_text(const LoopLevelSpec &l) {
    if (l.kind == LoopLevelSpec::Root) return "root";
    if (l.kind == LoopLevelSpec::Inline) return "inline";
    return "at " + quote(l.func_name) + " " + quote(l.var);
}

void write_stage(std::ostream &os, const StageSchedule &s, const char *pad) {
    for (auto &sp : s.splits) {
        if (sp.kind == Split::SplitVar)
            os << pad << "split " << quote(sp.old_var) << " " << quote(sp.outer) << " " << quote(sp.inner) << " "
               << serialize_expr(sp.factor) << " " << word_of(tail_words(), (int)sp.tail).text << "\n";
        else
            os << pad << "fuse " << quote(sp.old_var) << " " << quote(sp.outer) << " " << quote(sp.inner) << "\n";
    }
    for (auto &d : s.dims) os << pad << "dim " << quote(d.var) << " " << word_of(loop_words(), (int)d.for_type).text << (d.is_rvar ? " rvar" : "") << "\n";
    for (auto &p : s.prefetches)
        os << pad << "prefetch " << quote(p.src_name) << " " << quote(p.var) << " " << serialize_expr(p.offset) << "\n";
    if (s.single_thread) os << pad << "single_thread\n";
    if (!s.mma.empty()) os << pad << "mma " << quote(s.mma[0]) << " " << quote(s.mma[1]) << " " << quote(s.mma[2]) << "\n";
    if (s.atomic) os << pad << "atomic" << (s.atomic_override ? " override" : "") << "\n";
}

// ---------------- reading ----------------

struct Token {
    enum Kind { Word, String, Paren } kind;
    std::string text;  // the word, the unquoted string, or the whole parenthesized form
};

[[noreturn]] void bad(int line, const std::string &what) {
    user_error("weft: schedule text, line " + std::to_string(line) + ": " + what);
}

/** Reads a quoted string starting at s[i] == '"'; leaves i after the closing quote. */
std::string read_string(const std::string &s, size_t &i, int line) {
    std::string r;
    for (i++; i < s.size(); i++) {
        char c = s[i];
        if (c == '"') {
            i++;
            return r;
        }
        if (c == '\\') {
            if (++i >= s.size()) break;
            r += s[i] == 'n' ? '\n' : s[i];
        } else r += c;
    }
    bad(line, "a string is not closed");
}

std::vector<Token> tokenize(const std::string &s, int line) {
    std::vector<Token> out;
    size_t i = 0;
    while (i < s.size()) {
        char c = s[i];
        if (c == ' ' || c == '\t' || c == '\r') {
            i++;
        } else if (c == '"') {
            out.push_back({Token::String, read_string(s, i, line)});
        } else if (c == '(') {
            size_t start = i;
            int depth = 0;
            for (; i < s.size(); i++) {
                if (s[i] == '"') {
                    read_string(s, i, line);
                    i--;
                    continue;
                }
                if (s[i] == '(') depth++;
                if (s[i] == ')' && --depth == 0) break;
            }
            if (depth != 0) bad(line, "unbalanced parentheses");
            out.push_back({Token::Paren, s.substr(start, ++i - start)});
        } else {
            size_t start = i;
            while (i < s.size() && s[i] != ' ' && s[i] != '\t' && s[i] != '"' && s[i] != '(' && s[i] != '\r') i++;
            out.push_back({Token::Word, s.substr(start, i - start)});
        }
    }
    return out;
}

Type parse_type(const std::string &t, int line) {
    if (t == "b1") return Bool();
    if (t == "bf16") return BFloat(16);
    if (t.size() < 2) bad(line, "unknown type \"" + t + "\"");
    int bits = 0;
    for (size_t k = 1; k < t.size(); k++) {
        if (t[k] < '0' || t[k] > '9' || bits > 1000) bad(line, "unknown type \"" + t + "\"");
        bits = bits * 10 + (t[k] - '0');
    }
    Type r;
    if (t[0] == 'i' && (bits == 8 || bits == 16 || bits == 32 || bits == 64)) r = Int(bits);
    else if (t[0] == 'u' && (bits == 8 || bits == 16 || bits == 32 || bits == 64)) r = UInt(bits);
    else if (t[0] == 'f' && (bits == 16 || bits == 32 || bits == 64)) r = Float(bits);
    else bad(line, "unknown type \"" + t + "\"");
    return r;
}

class ExprReader {
public:
    ExprReader(const std::string &s, int line) : s_(s), line_(line) {}
    Expr read() {
        Expr e = form();
        skip();
        if (i_ != s_.size()) bad(line_, "unexpected text after an Expr: \"" + s_.substr(i_) + "\"");
        return e;
    }

private:
    const std::string &s_;
    int line_;
    size_t i_ = 0;
    int depth_ = 0;

    void skip() {
        while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) i_++;
    }
    std::string word() {
        skip();
        size_t start = i_;
        while (i_ < s_.size() && s_[i_] != ' ' && s_[i_] != '\t' && s_[i_] != '(' && s_[i_] != ')' && s_[i_] != '"') i_++;
        if (start == i_) bad(line_, "a word is missing in an Expr");
        return s_.substr(start, i_ - start);
    }
    std::string str() {
        skip();
        if (i_ >= s_.size() || s_[i_] != '"') bad(line_, "a quoted name is missing in an Expr");
        return read_string(s_, i_, line_);
    }
    void close() {
        skip();
        if (i_ >= s_.size() || s_[i_] != ')') bad(line_, "an Expr has too many operands or no closing parenthesis");
        i_++;
    }
    bool at_close() {
        skip();
        return i_ < s_.size() && s_[i_] == ')';
    }
    int64_t integer(const std::string &w) {
        errno = 0;
        char *end = nullptr;
        long long v = std::strtoll(w.c_str(), &end, 0);
        if (errno || *end) bad(line_, "\"" + w + "\" is not an integer");
        return v;
    }
    uint64_t uinteger(const std::string &w) {
        errno = 0;
        char *end = nullptr;
        if (!w.empty() && w[0] == '-') bad(line_, "\"" + w + "\" is not an unsigned integer");
        unsigned long long v = std::strtoull(w.c_str(), &end, 0);
        if (errno || *end) bad(line_, "\"" + w + "\" is not an unsigned integer");
        return v;
    }
    template <typename Make>
    Expr checked(Make &&make) {
        try {
            return make();
        } catch (Error &e) {
            bad(line_, e.what());
        }
    }
    Expr form() {
        skip();
        if (i_ >= s_.size() || s_[i_] != '(') bad(line_, "an Expr must start with '('");
        if (++depth_ > 1000) bad(line_, "an Expr nested too deeply (over 1000 levels)");
        i_++;
        std::string op = word();
        Expr r;
        if (op == "i" || op == "u" || op == "f") {
            Type t = parse_type(word(), line_);
            std::string v = word();
            if (op == "i") {
                if (!t.is_int()) bad(line_, "(i ...) needs a signed integer type");
                r = IntImm::make(t, integer(v));
            } else if (op == "u") {
                if (!t.is_uint() && !t.is_bool()) bad(line_, "(u ...) needs an unsigned integer or bool type");
                r = UIntImm::make(t, uinteger(v));
            } else {
                if (!t.is_float()) bad(line_, "(f ...) needs a float type");
                uint64_t bits = uinteger(v);
                double d;
                std::memcpy(&d, &bits, 8);
                r = FloatImm::make(t, d);
            }
        } else if (op == "s") {
            r = StringImm::make(str());
        } else if (op == "v") {
            Type t = parse_type(word(), line_);
            r = Variable::make(t, str());
        } else if (op == "cast") {
            Type t = parse_type(word(), line_);
            Expr v = form();
            r = checked([&] { return Cast::make(t, v); });
        } else if (op == "!") {
            Expr a = form();
            if (!a.type().is_bool()) bad(line_, "(! ...) needs a bool operand");
            r = Not::make(a);
        } else if (op == "select") {
            Expr c = form(), a = form(), b = form();
            if (!c.type().is_bool() || a.type() != b.type()) bad(line_, "(select C A B) needs a bool C and A, B of one type");
            r = Select::make(c, a, b);
        } else if (op == "let") {
            std::string n = str();
            Expr v = form(), b = form();
            r = Let::make(n, v, b);
        } else if (op == "call") {
            Type t = parse_type(word(), line_);
            std::string kind = word();
            std::string n = str();
            std::vector<Expr> args;
            while (!at_close()) args.push_back(form());
            Call::CallType ct = kind == "func" ? Call::Func : kind == "image" ? Call::Image : Call::Intrinsic;
            if (kind != "func" && kind != "image" && kind != "intrinsic") bad(line_, "unknown call kind \"" + kind + "\"");
            r = Call::make(t, n, args, ct);
        } else {
            Expr a = form(), b = form();
            if (a.type() != b.type()) bad(line_, "(" + op + " A B) needs A and B of one type");
            bool logical = op == "&&" || op == "||";
            if (logical && !a.type().is_bool()) bad(line_, "(" + op + " A B) needs bool operands");
            if (op == "+") r = Add::make(a, b);
            else if (op == "-") r = Sub::make(a, b);
            else if (op == "*") r = Mul::make(a, b);
            else if (op == "/") r = Div::make(a, b);
            else if (op == "%") r = Mod::make(a, b);
            else if (op == "min") r = Min::make(a, b);
            else if (op == "max") r = Max::make(a, b);
            else if (op == "==") r = EQ::make(a, b);
            else if (op == "!=") r = NE::make(a, b);
            else if (op == "<") r = LT::make(a, b);
            else if (op == "<=") r = LE::make(a, b);
            else if (op == ">") r = GT::make(a, b);
            else if (op == ">=") r = GE::make(a, b);
            else if (op == "&&") r = And::make(a, b);
            else if (op == "||") r = Or::make(a, b);
            else bad(line_, "unknown Expr form \"" + op + "\"");
        }
        close();
        depth_--;
        return r;
    }
};

/** The value of word w in `words`; else an Error naming the line, `what`, and the words. */
int parse_word(const std::vector<ScheduleWord> &words, const std::string &w, const char *what, int line) {
    if (const ScheduleWord *k = word_named(words, w)) return k->value;
    bad(line, std::string("unknown ") + what + " \"" + w + "\" (" + word_list(words) + ")");
}

}  // namespace

std::string serialize_expr(const Expr &e) {
    if (!e.defined()) return "(none)";
    ExprWriter w;
    w.include(e);
    return w.os.str();
}

Expr parse_expr(const std::string &text) {
    if (text == "(none)") return Expr();
    return ExprReader(text, 0).read();
}

std::string serialize_schedule(const PipelineSchedule &s) {
    std::ostringstream os;
    os << "weft-schedule 1\n";
    for (auto &w : s.wrappers) {
        os << "wrapper " << quote(w.of) << " " << quote(w.wrapper) << (w.clone ? " clone" : "") << " for";
        for (auto &c : w.consumers) os << " " << quote(c);
        os << "\n";
    }
    for (auto &f : s.funcs) {
        os << "func " << quote(f.func) << " args";
        for (auto &a : f.args) os << " " << quote(a);
        os << "\n";
        const FuncSchedule &fs = f.schedule;
        os << "  compute " << level_text(fs.compute) << "\n";
        if (fs.store_set) os << "  store " << level_text(fs.store) << "\n";
        if (fs.hoist.kind != LoopLevelSpec::Inline) os << "  hoist " << level_text(fs.hoist) << "\n";
        for (auto &b : fs.bounds)
            os << "  bound " << quote(b.var) << " " << serialize_expr(b.min) << " " << serialize_expr(b.extent) << "\n";
        if (fs.memory != MemoryType::Auto) os << "  memory " << word_of(memory_words(), (int)fs.memory).text << "\n";
        if (!fs.storage_order.empty()) {
            os << "  storage_order";
            for (auto &v : fs.storage_order) os << " " << quote(v);
            os << "\n";
        }
        for (auto &a : fs.storage_align)
            os << "  align_storage " << quote(a.var) << " " << serialize_expr(Expr((int)a.alignment)) << "\n";
        for (auto &a : fs.storage_fold)
            os << "  fold_storage " << quote(a.var) << " " << serialize_expr(Expr((int)a.factor)) << "\n";
        for (auto &a : fs.bound_align)
            os << "  align_bounds " << quote(a.var) << " " << serialize_expr(Expr((int)a.modulus)) << " "
               << serialize_expr(Expr((int)a.remainder)) << "\n";
        if (fs.nontemporal) os << "  nontemporal\n";
        if (fs.load_ahead) os << "  load_ahead\n";
        for (size_t k = 0; k < f.stages.size(); k++) {
            os << "  stage " << k;
            if (k < f.initial_loops.size())
                for (auto &d : f.initial_loops[k]) os << (d.is_rvar ? " rvar " : " ") << quote(d.var);
            os << "\n";
            write_stage(os, f.stages[k].schedule, "    ");
            const FuseLevel &fl = f.stages[k].fuse;
            if (fl.fused()) {
                os << "    compute_with " << quote(fl.func_name) << " " << fl.stage << " " << quote(fl.var);
                for (auto &a : fl.align) os << " " << quote(a.first) << " " << word_of(align_words(), (int)a.second).text;
                os << "\n";
            }
            for (auto &sp : f.stages[k].specializations) {
                os << "  specialize " << serialize_expr(sp.condition) << "\n";
                write_stage(os, sp.schedule, "    ");
            }
        }
    }
    os << "end\n";
    return os.str();
}

PipelineSchedule parse_schedule(const std::string &text) {
    PipelineSchedule r;
    std::istringstream is(text);
    std::string raw;
    int line = 0;
    bool header = false, ended = false;
    FuncScheduleValue *f = nullptr;
    StageSchedule *cur = nullptr;  // the loop nest the stage-level lines go to
    auto expr = [&](const Token &t) {
        if (t.kind != Token::Paren) bad(line, "an Expr in parentheses is expected, got \"" + t.text + "\"");
        if (t.text == "(none)") return Expr();
        return ExprReader(t.text, line).read();
    };
    while (std::getline(is, raw)) {
        line++;
        std::vector<Token> t = tokenize(raw, line);
        if (t.empty() || (t[0].kind == Token::Word && !t[0].text.empty() && t[0].text[0] == '#')) continue;
        if (ended) bad(line, "text after \"end\"");
        if (t[0].kind != Token::Word) bad(line, "a line must start with a directive");
        const std::string &w = t[0].text;
        auto need = [&](size_t n) {
            if (t.size() != n)
                bad(line, "\"" + w + "\" takes " + std::to_string(n - 1) + " operands, got " + std::to_string(t.size() - 1));
        };
        auto name = [&](size_t i) -> const std::string & {
            if (t[i].kind != Token::String) bad(line, "a quoted name is expected, got \"" + t[i].text + "\"");
            return t[i].text;
        };
        auto in_func = [&] {
            if (!f) bad(line, "\"" + w + "\" before any \"func\" line");
        };
        auto in_stage = [&] {
            if (!cur) bad(line, "\"" + w + "\" outside a stage (after \"stage N\" or \"specialize\")");
        };
        if (!header) {
            if (w != "weft-schedule" || t.size() != 2 || t[1].text != "1")
                bad(line, "the text must start with \"weft-schedule 1\"");
            header = true;
            continue;
        }
        if (w == "end") {
            need(1);
            ended = true;
        } else if (w == "wrapper") {
            if (f) bad(line, "\"wrapper\" lines come before the first \"func\" line");
            WrapperValue v;
            size_t i = 3;
            if (t.size() < 4) bad(line, "wrapper \"of\" \"name\" [clone] for [\"consumer\" ...]");
            v.of = name(1);
            v.wrapper = name(2);
            if (t[i].kind == Token::Word && t[i].text == "clone") v.clone = true, i++;
            if (i >= t.size() || t[i].kind != Token::Word || t[i].text != "for")
                bad(line, "wrapper \"of\" \"name\" [clone] for [\"consumer\" ...]");
            for (i++; i < t.size(); i++) v.consumers.push_back(name(i));
            if (v.clone && v.consumers.empty()) bad(line, "a clone (clone_in) is made for named consumers");
            for (auto &o : r.wrappers)
                if (o.wrapper == v.wrapper) bad(line, "the wrapper \"" + v.wrapper + "\" appears twice");
            r.wrappers.push_back(v);
        } else if (w == "func") {
            if (t.size() < 3 || t[2].kind != Token::Word || t[2].text != "args") bad(line, "func \"name\" args \"x\" ...");
            FuncScheduleValue v;
            v.func = name(1);
            for (size_t i = 3; i < t.size(); i++) v.args.push_back(name(i));
            if (r.find(v.func)) bad(line, "Func \"" + v.func + "\" appears twice");
            r.funcs.push_back(v);
            f = &r.funcs.back();
            cur = nullptr;
        } else if (w == "compute" || w == "store" || w == "hoist") {
            in_func();
            if (t.size() < 2) bad(line, w + " root | inline | at \"func\" \"loop\"");
            LoopLevelSpec l;
            if (t[1].text == "root" && t.size() == 2) l.kind = LoopLevelSpec::Root;
            else if (t[1].text == "inline" && t.size() == 2) l.kind = LoopLevelSpec::Inline;
            else if (t[1].text == "at" && t.size() == 4) {
                l.kind = LoopLevelSpec::At;
                l.func_name = name(2);
                l.var = name(3);
            } else bad(line, w + " root | inline | at \"func\" \"loop\"");
            if (w == "compute") f->schedule.compute = l;
            else if (w == "hoist") {
                if (l.kind == LoopLevelSpec::Inline) bad(line, "hoist root | at \"func\" \"loop\"");
                f->schedule.hoist = l;
            } else {
                f->schedule.store = l;
                f->schedule.store_set = true;
            }
        } else if (w == "bound") {
            in_func();
            need(4);
            f->schedule.bounds.push_back({name(1), expr(t[2]), expr(t[3])});
        } else if (w == "memory") {
            in_func();
            need(2);
            f->schedule.memory = (MemoryType)parse_word(memory_words(), t[1].text, "memory type", line);
        } else if (w == "storage_order") {
            in_func();
            for (size_t i = 1; i < t.size(); i++) f->schedule.storage_order.push_back(name(i));
        } else if (w == "align_storage") {
            in_func();
            need(3);
            int64_t a = 0;
            if (!is_const_int(expr(t[2]), &a) || a < 1)
                throw Error("weft: schedule text line " + std::to_string(line) + ": align_storage needs a positive integer");
            f->schedule.storage_align.push_back({name(1), a});
        } else if (w == "fold_storage") {
            in_func();
            need(3);
            int64_t a = 0;
            if (!is_const_int(expr(t[2]), &a) || a < 1)
                throw Error("weft: schedule text line " + std::to_string(line) + ": fold_storage needs a positive integer");
            f->schedule.storage_fold.push_back({name(1), a});
        } else if (w == "align_bounds") {
            in_func();
            need(4);
            int64_t m = 0, r = 0;
            if (!is_const_int(expr(t[2]), &m) || m < 1 || !is_const_int(expr(t[3]), &r))
                throw Error("weft: schedule text line " + std::to_string(line) +
                            ": align_bounds needs a positive integer modulus and an integer remainder");
            f->schedule.bound_align.push_back({name(1), m, r});
        } else if (w == "nontemporal") {
            in_func();
            need(1);
            f->schedule.nontemporal = true;
        } else if (w == "load_ahead") {
            in_func();
            need(1);
            f->schedule.load_ahead = true;
        } else if (w == "stage") {
            in_func();
            if (t.size() < 2 || t[1].text != std::to_string(f->stages.size()))
                bad(line, "stage " + std::to_string(f->stages.size()) + " expected");
            std::vector<Dim> loops;
            for (size_t i = 2; i < t.size(); i++) {
                bool rv = t[i].kind == Token::Word && t[i].text == "rvar";
                if (rv && ++i >= t.size()) bad(line, "a quoted name is expected after rvar");
                loops.push_back({name(i), ForType::Serial, rv});
            }
            f->initial_loops.push_back(loops);
            f->stages.emplace_back();
            cur = &f->stages.back().schedule;
        } else if (w == "specialize") {
            in_func();
            need(2);
            if (f->stages.empty()) bad(line, "\"specialize\" before any \"stage\"");
            f->stages.back().specializations.push_back({expr(t[1]), {}});
            cur = &f->stages.back().specializations.back().schedule;
        } else if (w == "split") {
            in_stage();
            need(6);
            cur->splits.push_back({Split::SplitVar, name(1), name(2), name(3), expr(t[4]),
                                   (TailStrategy)parse_word(tail_words(), t[5].text, "tail strategy", line)});
        } else if (w == "fuse") {
            in_stage();
            need(4);
            cur->splits.push_back({Split::FuseVars, name(1), name(2), name(3), Expr(), TailStrategy::Auto});
        } else if (w == "dim") {
            in_stage();
            if (t.size() != 3 && !(t.size() == 4 && t[3].text == "rvar")) bad(line, "dim \"loop\" TYPE [rvar]");
            cur->dims.push_back({name(1), (ForType)parse_word(loop_words(), t[2].text, "loop type", line), t.size() == 4});
        } else if (w == "prefetch") {
            in_stage();
            need(4);
            PrefetchSpec p;
            p.src_name = name(1);
            p.var = name(2);
            p.offset = expr(t[3]);
            cur->prefetches.push_back(p);
        } else if (w == "compute_with") {
            in_stage();
            if (f->stages.empty() || cur != &f->stages.back().schedule)
                bad(line, "\"compute_with\" belongs to a stage, not to a specialization");
            if (t.size() < 4 || t.size() % 2 != 0 || t[2].kind != Token::Word)
                bad(line, "compute_with \"func\" STAGE \"loop\" [\"loop\" ALIGN]...");
            FuseLevel fl;
            fl.func_name = name(1);
            if (t[2].text.empty() || t[2].text.size() > 6 || t[2].text.find_first_not_of("0123456789") != std::string::npos)
                bad(line, "compute_with: the parent's stage must be a small non-negative integer, got \"" + t[2].text + "\"");
            fl.stage = std::stoi(t[2].text);
            fl.var = name(3);
            for (size_t i = 4; i + 1 < t.size(); i += 2)
                fl.align.push_back({name(i), (LoopAlignStrategy)parse_word(align_words(), t[i + 1].text, "loop alignment", line)});
            f->stages.back().fuse = fl;
        } else if (w == "mma") {
            in_stage();
            need(4);
            cur->mma = {name(1), name(2), name(3)};
        } else if (w == "single_thread") {
            in_stage();
            need(1);
            cur->single_thread = true;
        } else if (w == "atomic") {
            in_stage();
            if (t.size() > 2 || (t.size() == 2 && t[1].text != "override")) bad(line, "atomic [override]");
            cur->atomic = true;
            cur->atomic_override = t.size() == 2;
        } else {
            bad(line, "unknown directive \"" + w + "\"");
        }
    }
    if (!header) bad(line, "the text is empty (it must start with \"weft-schedule 1\")");
    if (!ended) bad(line, "the text ends without \"end\"");
    return r;
}

}  // namespace internal
}  // namespace weft
