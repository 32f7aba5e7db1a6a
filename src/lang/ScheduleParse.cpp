// C++ schedule calls, as a user types them, read back into the calls of the public API that
// they make (see lang/Schedule.h). What schedule_cpp_source() prints is read back exactly.
//
// The language is the small part of C++ that schedules are written in:
//
//   using namespace weft;                       (ignored)
//   Var x("x"), xo("xo"), xi;                   (a declaration names a loop; xi is "xi")
//   RVar r_x("r.x");
//   Stage s = f.update(0).specialize(w > 64);   (later calls on s go to that specialization)
//   f.split(x, xo, xi, 8, TailStrategy::GuardWithIf).vectorize(xi).parallel(y);
//   g.compute_at(f, xo).store_root();
//   f.update(0).tile(x, y, xo, yo, xi, yi, 8, 8).vectorize(xi, 4);   // comments, /* too */
//
// Arguments are loop names, Funcs, Stages (g.update(0)), enum constants (TailStrategy::X,
// MemoryType::X, LoopAlignStrategy::X, weft:: allowed in front), brace lists, and Exprs of
// constants, Params and input shapes (in.extent(0), in.width()) with + - * / %, comparisons,
// && || !, min, max, select, clamp, abs, cast(Type, e), cast<T>(e), Expr(e) and C casts of
// constants ((int64_t)5). Constants combine as C++ combines them (4 * 2 is the int 8, 7 / 2
// is 3) before they become Exprs; with an Expr they combine as weft's Expr operators do.
//
// The parser keeps, for each stage (and specialization), the loops it has after the calls so
// far, as the calls themselves would leave them: that is how it knows which loops exist, which
// are RVars, and which names vectorize(x, n) and its kin invent (as src/lang/Func.cpp does).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <locale>
#include <set>
#include <sstream>
#include <tuple>
#include "lang/Schedule.h"

namespace weft {
namespace internal {

namespace {

constexpr size_t max_text_bytes = 1 << 20;
constexpr int max_depth = 200;  // nesting of parentheses, braces, calls and unary operators; Expr depth

[[noreturn]] void fail(int line, const std::string &what) {
    throw Error("weft: schedule line " + std::to_string(line) + ": " + what);
}

/** An Error's message without its "weft: " head, to be put after a line number. */
std::string bare(const Error &e) {
    std::string m = e.what();
    return m.rfind("weft: ", 0) == 0 ? m.substr(6) : m;
}

/** s, cut short if long (hostile text must not make messages of megabytes). */
std::string shorten(const std::string &s) { return s.size() <= 80 ? s : s.substr(0, 77) + "..."; }
std::string quoted(const std::string &s) { return "\"" + shorten(s) + "\""; }

std::string join(const std::vector<std::string> &v, const char *sep = ", ") {
    std::string r;
    for (auto &s : v) r += (r.empty() ? "" : sep) + s;
    return r;
}

// ---------------------------------------------------------------- tokens

struct Token {
    enum Kind { End, Ident, Int, Float, String, Punct } kind = End;
    std::string text;        // an identifier, a punctuator, a string's contents, a number as written
    uint64_t magnitude = 0;  // Int
    double value = 0;        // Float
    bool is_unsigned = false, is_long = false, is_float32 = false;
    int line = 1;
};

std::string describe(const Token &t) {
    switch (t.kind) {
    case Token::End: return "the end of the text";
    case Token::String: return "a string";
    case Token::Punct: return "'" + t.text + "'";
    default: return quoted(t.text);
    }
}

std::string describe_char(unsigned char c) {
    if (c >= 0x21 && c < 0x7f) return std::string("'") + (char)c + "'";
    static const char *hex = "0123456789abcdef";
    return std::string("the byte 0x") + hex[c >> 4] + hex[c & 15];
}

/** Splits the text into tokens, one at a time (so that hostile text costs no memory). */
class Lexer {
public:
    explicit Lexer(const std::string &s) : s_(s) {}

    Token next() {
        skip_space();
        Token t;
        t.line = line_;
        if (i_ >= s_.size()) return t;
        unsigned char c = s_[i_];
        if (std::isalpha(c) || c == '_') {
            size_t b = i_;
            // ('$' too, after the first character: a pipeline's second Func "f" is "f$2".)
            while (i_ < s_.size() && (std::isalnum((unsigned char)s_[i_]) || s_[i_] == '_' || s_[i_] == '$')) i_++;
            t.kind = Token::Ident;
            t.text = s_.substr(b, i_ - b);
            return t;
        }
        if (std::isdigit(c) || (c == '.' && i_ + 1 < s_.size() && std::isdigit((unsigned char)s_[i_ + 1])))
            return number(t);
        if (c == '"') return string(t);
        if (c == '#')
            fail(line_, "preprocessor lines (#...) are not read: give only the schedule's declarations and calls");
        if (c == '\'') fail(line_, "character literals are not part of a schedule");
        static const char *two[] = {"::", "&&", "||", "==", "!=", "<=", ">=", "<<", ">>"};
        for (const char *p : two)
            if (s_.compare(i_, 2, p) == 0) {
                t.kind = Token::Punct;
                t.text = p;
                i_ += 2;
                return t;
            }
        if (std::strchr("(){}[],;.=+-*/%<>!&|^~?:", c) && c) {
            t.kind = Token::Punct;
            t.text = std::string(1, (char)c);
            i_++;
            return t;
        }
        fail(line_, "unexpected " + describe_char(c));
    }

private:
    const std::string &s_;
    size_t i_ = 0;
    int line_ = 1;

    void skip_space() {
        while (i_ < s_.size()) {
            char c = s_[i_];
            if (c == '\n') {
                line_++;
                i_++;
            } else if (c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f') {
                i_++;
            } else if (s_.compare(i_, 2, "//") == 0) {
                while (i_ < s_.size() && s_[i_] != '\n') i_++;
            } else if (s_.compare(i_, 2, "/*") == 0) {
                int start = line_;
                size_t end = s_.find("*/", i_ + 2);
                if (end == std::string::npos) fail(start, "a /* comment is not closed");
                line_ += (int)std::count(s_.begin() + i_, s_.begin() + end, '\n');
                i_ = end + 2;
            } else {
                break;
            }
        }
    }

    Token &number(Token &t) {
        size_t b = i_;
        t.kind = Token::Int;
        bool hex = s_.compare(i_, 2, "0x") == 0 || s_.compare(i_, 2, "0X") == 0;
        if (hex) {
            i_ += 2;
            size_t d = i_;
            while (i_ < s_.size() && std::isxdigit((unsigned char)s_[i_])) {
                int v = std::isdigit((unsigned char)s_[i_]) ? s_[i_] - '0'
                                                            : (std::tolower((unsigned char)s_[i_]) - 'a' + 10);
                if (t.magnitude > (std::numeric_limits<uint64_t>::max() >> 4))
                    fail(line_, "the integer " + s_.substr(b, i_ + 1 - b) + "... is too large");
                t.magnitude = t.magnitude * 16 + (uint64_t)v;
                i_++;
            }
            if (i_ == d) fail(line_, "a hexadecimal number needs digits after 0x");
        } else {
            while (i_ < s_.size() && std::isdigit((unsigned char)s_[i_])) i_++;
            if (i_ < s_.size() && s_[i_] == '.') {
                t.kind = Token::Float;
                i_++;
                while (i_ < s_.size() && std::isdigit((unsigned char)s_[i_])) i_++;
            }
            if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
                size_t e = i_ + 1;
                if (e < s_.size() && (s_[e] == '+' || s_[e] == '-')) e++;
                if (e < s_.size() && std::isdigit((unsigned char)s_[e])) {
                    t.kind = Token::Float;
                    i_ = e;
                    while (i_ < s_.size() && std::isdigit((unsigned char)s_[i_])) i_++;
                }
            }
        }
        std::string digits = s_.substr(b, i_ - b);
        // Suffixes: u, l, ll, f (an integer with f is read as a float: the printer writes 2.0f as "2f").
        std::string suffix;
        while (i_ < s_.size() && std::strchr("uUlLfF", s_[i_]) && s_[i_]) suffix += s_[i_++];
        t.text = digits + suffix;
        if (i_ < s_.size() && (std::isalnum((unsigned char)s_[i_]) || s_[i_] == '_' || s_[i_] == '.'))
            fail(line_, "malformed number starting " + quoted(t.text + s_[i_]));
        for (char c : suffix) {
            char l = (char)std::tolower((unsigned char)c);
            if (l == 'u') t.is_unsigned = true;
            if (l == 'l') t.is_long = true;
            if (l == 'f') t.is_float32 = true;
        }
        if (t.is_float32 && (t.is_unsigned || hex)) fail(line_, "malformed number " + quoted(t.text));
        if (t.kind == Token::Float && (t.is_unsigned || t.is_long)) fail(line_, "malformed number " + quoted(t.text));
        if (t.is_float32) t.kind = Token::Float;
        if (t.kind == Token::Float) {
            std::istringstream is(digits);
            is.imbue(std::locale::classic());
            is >> t.value;
            if (is.fail() || !std::isfinite(t.value) || (t.is_float32 && !std::isfinite((float)t.value)))
                fail(line_, "the number " + shorten(t.text) + " is out of range");
            if (t.is_float32) t.value = (float)t.value;
        } else if (!hex) {
            for (char d : digits) {
                uint64_t v = (uint64_t)(d - '0');
                if (t.magnitude > (std::numeric_limits<uint64_t>::max() - v) / 10)
                    fail(line_, "the integer " + shorten(t.text) + " is too large");
                t.magnitude = t.magnitude * 10 + v;
            }
        }
        return t;
    }

    Token &string(Token &t) {
        int start = line_;
        t.kind = Token::String;
        i_++;
        for (;;) {
            if (i_ >= s_.size() || s_[i_] == '\n') fail(start, "a string is not closed on its line");
            char c = s_[i_++];
            if (c == '"') break;
            if (c == '\\') {
                if (i_ >= s_.size()) fail(start, "a string is not closed on its line");
                char e = s_[i_++];
                switch (e) {
                case '"':
                case '\\':
                case '\'': t.text += e; break;
                case 'n': t.text += '\n'; break;
                case 't': t.text += '\t'; break;
                default: fail(start, std::string("unknown escape \\") + (e ? std::string(1, e) : "0") + " in a string");
                }
            } else {
                t.text += c;
            }
        }
        return t;
    }
};

// ---------------------------------------------------------------- constants, as C++ computes them

/** A constant of a C++ type: what a literal is before it meets an Expr. */
struct Num {
    enum Kind { I32, U32, I64, U64, F32, F64, Bool } kind = I32;
    int64_t i = 0;   // I32, I64, Bool (0 or 1)
    uint64_t u = 0;  // U32, U64
    double f = 0;    // F32, F64
};

bool is_float_kind(Num::Kind k) { return k == Num::F32 || k == Num::F64; }
bool is_unsigned_kind(Num::Kind k) { return k == Num::U32 || k == Num::U64; }

double as_double(const Num &n) {
    return is_float_kind(n.kind) ? n.f : is_unsigned_kind(n.kind) ? (double)n.u : (double)n.i;
}
bool truth(const Num &n) { return is_float_kind(n.kind) ? n.f != 0 : is_unsigned_kind(n.kind) ? n.u != 0 : n.i != 0; }

const char *kind_name(Num::Kind k) {
    static const char *n[] = {"int", "unsigned", "int64_t", "uint64_t", "float", "double", "bool"};
    return n[(int)k];
}

/** n converted to kind k as a C++ conversion does (integers wrap; a float out of an integer's
    range, undefined in C++, is an error). */
Num convert(const Num &n, Num::Kind k, int line) {
    Num r;
    r.kind = k;
    if (is_float_kind(k)) {
        r.f = as_double(n);
        if (k == Num::F32) r.f = (float)r.f;
    } else if (k == Num::Bool) {
        r.i = truth(n);
    } else if (is_float_kind(n.kind)) {
        double lo = is_unsigned_kind(k) ? 0.0 : k == Num::I32 ? -2147483648.0 : -9223372036854775808.0;
        double hi = k == Num::I32   ? 2147483648.0
                    : k == Num::U32 ? 4294967296.0
                    : k == Num::I64 ? 9223372036854775808.0
                                    : 18446744073709551616.0;
        if (!(n.f > lo - 1 && n.f < hi))
            fail(line, "the constant " + std::to_string(n.f) + " does not fit in " + kind_name(k));
        if (is_unsigned_kind(k)) r.u = (uint64_t)n.f;
        else r.i = (int64_t)n.f;
    } else {
        uint64_t bits = is_unsigned_kind(n.kind) ? n.u : (uint64_t)n.i;
        if (k == Num::U32) r.u = bits & 0xffffffffu;
        else if (k == Num::U64) r.u = bits;
        else if (k == Num::I32) r.i = (int32_t)(uint32_t)bits;
        else r.i = (int64_t)bits;
    }
    return r;
}

/** The type two integer constants are combined in (C++'s usual arithmetic conversions). */
Num::Kind common_kind(Num::Kind a, Num::Kind b) {
    if (is_float_kind(a) || is_float_kind(b)) return (a == Num::F64 || b == Num::F64) ? Num::F64 : Num::F32;
    if (a == Num::U64 || b == Num::U64) return Num::U64;
    if (a == Num::I64 || b == Num::I64) return Num::I64;
    if (a == Num::U32 || b == Num::U32) return Num::U32;
    return Num::I32;
}

Num make_bool_num(bool b) {
    Num r;
    r.kind = Num::Bool;
    r.i = b;
    return r;
}

/** a op b for two constants, as C++ computes it; overflow of a signed type and division by
    zero (undefined in C++) are errors. */
Num fold(const std::string &op, const Num &a, const Num &b, int line) {
    if (op == "&&") return make_bool_num(truth(a) && truth(b));
    if (op == "||") return make_bool_num(truth(a) || truth(b));
    Num::Kind k = common_kind(a.kind, b.kind);
    Num x = convert(a, k, line), y = convert(b, k, line);
    auto compare = [&](int c) {  // c: -1, 0, 1 for x < y, ==, >
        if (op == "<") return make_bool_num(c < 0);
        if (op == "<=") return make_bool_num(c <= 0);
        if (op == ">") return make_bool_num(c > 0);
        if (op == ">=") return make_bool_num(c >= 0);
        if (op == "==") return make_bool_num(c == 0);
        return make_bool_num(c != 0);
    };
    bool cmp = op == "<" || op == "<=" || op == ">" || op == ">=" || op == "==" || op == "!=";
    if (is_float_kind(k)) {
        if (cmp) return compare(x.f < y.f ? -1 : x.f > y.f ? 1 : 0);
        Num r;
        r.kind = k;
        if (op == "+") r.f = x.f + y.f;
        else if (op == "-") r.f = x.f - y.f;
        else if (op == "*") r.f = x.f * y.f;
        else if (op == "/") r.f = x.f / y.f;
        else fail(line, "% of floating-point constants is not C++");
        if (k == Num::F32) r.f = (float)r.f;
        return r;
    }
    if (is_unsigned_kind(k)) {
        if (cmp) return compare(x.u < y.u ? -1 : x.u > y.u ? 1 : 0);
        Num r;
        r.kind = k;
        if ((op == "/" || op == "%") && y.u == 0) fail(line, "division of constants by zero");
        r.u = op == "+" ? x.u + y.u : op == "-" ? x.u - y.u : op == "*" ? x.u * y.u : op == "/" ? x.u / y.u : x.u % y.u;
        if (k == Num::U32) r.u &= 0xffffffffu;
        return r;
    }
    if (cmp) return compare(x.i < y.i ? -1 : x.i > y.i ? 1 : 0);
    const int64_t lo = k == Num::I32 ? INT32_MIN : INT64_MIN, hi = k == Num::I32 ? INT32_MAX : INT64_MAX;
    bool over = false;
    int64_t v = 0;
    if (op == "+") {
        over = (y.i > 0 && x.i > hi - y.i) || (y.i < 0 && x.i < lo - y.i);
        if (!over) v = x.i + y.i;
    } else if (op == "-") {
        over = (y.i < 0 && x.i > hi + y.i) || (y.i > 0 && x.i < lo + y.i);
        if (!over) v = x.i - y.i;
    } else if (op == "*") {
        if (x.i != 0 && y.i != 0) {
            // |x * y| <= max checked by division, in the wider type
            bool neg = (x.i < 0) != (y.i < 0);
            uint64_t ax = x.i < 0 ? 0 - (uint64_t)x.i : (uint64_t)x.i, ay = y.i < 0 ? 0 - (uint64_t)y.i : (uint64_t)y.i;
            uint64_t limit = neg ? (uint64_t)hi + 1 : (uint64_t)hi;
            over = ax > limit / ay;
            if (!over) v = neg ? (int64_t)(0 - ax * ay) : (int64_t)(ax * ay);
        }
    } else {
        if (y.i == 0) fail(line, "division of constants by zero");
        over = x.i == lo && y.i == -1;
        if (!over) v = op == "/" ? x.i / y.i : x.i % y.i;  // C++: toward zero
    }
    if (over || v < lo || v > hi)
        fail(line, "integer overflow in a constant (" + op + " of " + kind_name(k) + " values)");
    Num r;
    r.kind = k;
    r.i = v;
    return r;
}

Expr num_expr(const Num &n) {
    switch (n.kind) {
    case Num::I32: return Expr((int)n.i);
    case Num::I64: return IntImm::make(Int(64), n.i);
    case Num::U32: return UIntImm::make(UInt(32), n.u);
    case Num::U64: return UIntImm::make(UInt(64), n.u);
    case Num::F32: return Expr((float)n.f);
    case Num::F64: return Expr(n.f);
    case Num::Bool: return make_bool(n.i != 0);
    }
    return Expr();
}

/** C++ spellings of scalar types: for C casts of constants and cast<T>(). */
struct CType {
    const char *name;
    Type type;
    Num::Kind kind;
    bool c_cast;  // (name)constant is read
};
const std::vector<CType> &c_types() {
    static const std::vector<CType> t = {
        {"int", Int(32), Num::I32, true},          {"int32_t", Int(32), Num::I32, true},
        {"int64_t", Int(64), Num::I64, true},      {"long", Int(64), Num::I64, true},
        {"unsigned", UInt(32), Num::U32, true},    {"uint32_t", UInt(32), Num::U32, true},
        {"uint64_t", UInt(64), Num::U64, true},    {"float", Float(32), Num::F32, true},
        {"double", Float(64), Num::F64, true},     {"bool", Bool(), Num::Bool, true},
        {"int8_t", Int(8), Num::I32, false},       {"int16_t", Int(16), Num::I32, false},
        {"uint8_t", UInt(8), Num::I32, false},     {"uint16_t", UInt(16), Num::I32, false},
        {"float16_t", Float(16), Num::F32, false}, {"bfloat16_t", BFloat(16), Num::F32, false}};
    return t;
}
const CType *c_type(const std::string &n) {
    for (auto &t : c_types())
        if (n == t.name) return &t;
    return nullptr;
}

// ---------------------------------------------------------------- values of arguments

struct StageRef {
    std::string func;
    int stage = 0;         // 0: the pure definition, k: update(k - 1)
    int spec = -1;         // a specialization of the stage, or -1
    bool is_func = false;  // the Func itself (Func-level calls and update() allowed)
    bool input = false;    // an input (func: its name): only in() is called on it
};

/** What an argument (or a part of one) is. */
struct Value {
    enum Kind { Number, ExprValue, Name, FuncValue, StageValue, Input, Enum, TypeValue, List } kind = Number;
    int line = 1;
    std::string ident;  // for a lone identifier: the identifier as written
    Num num;
    bool literal = false;  // a literal as written (for -2147483648)
    Expr expr;
    int depth = 0;          // of expr
    std::string name;       // Name: the loop name; FuncValue/StageValue: the Func; Input: the input
    bool declared = false;  // Name: declared with Var or RVar
    StageRef stage;         // StageValue
    enum EnumKind { Tail, Memory, Align } enum_kind = Tail;
    int enum_value = 0;
    Type type;
    std::vector<Value> items;  // List
};

std::string describe(const Value &v) {
    switch (v.kind) {
    case Value::Number: return "the constant " + (v.ident.empty() ? std::string(kind_name(v.num.kind)) : v.ident);
    case Value::ExprValue: return "an Expr";
    case Value::Name: return quoted(v.ident.empty() ? v.name : v.ident);
    case Value::FuncValue: return "Func " + quoted(v.name);
    case Value::StageValue: return "a Stage of Func " + quoted(v.stage.func);
    case Value::Input: return "input " + quoted(v.name);
    case Value::Enum: return "an enum constant";
    case Value::TypeValue: return "the type " + v.type.str();
    case Value::List: return "a brace list";
    }
    return "?";
}

const std::vector<ScheduleWord> &enum_words(Value::EnumKind k) {
    return k == Value::Tail ? tail_words() : k == Value::Memory ? memory_words() : align_words();
}
/** "TailStrategy::Auto, ...": the C++ spellings, for messages. */
std::string cpp_words(const std::vector<ScheduleWord> &words) {
    std::vector<std::string> v;
    for (auto &w : words) v.push_back(w.cpp);
    return join(v);
}
const char *enum_type_name(Value::EnumKind k) {
    return k == Value::Tail ? "TailStrategy" : k == Value::Memory ? "MemoryType" : "LoopAlignStrategy";
}

/** The calls the parser knows, for messages: a Stage's, then the Func's own. */
const std::vector<std::string> &stage_calls() {
    static const std::vector<std::string> c = {"split",      "fuse",        "reorder",    "tile",
                                               "vectorize",  "unroll",      "parallel",   "serial",
                                               "gpu_blocks", "gpu_threads", "gpu_tile",   "gpu_single_thread", "gpu_mma",
                                               "atomic",     "prefetch",    "specialize", "compute_with"};
    return c;
}
const std::vector<std::string> &func_calls() {
    static const std::vector<std::string> c = {
        "update",       "compute_root", "compute_inline",    "compute_at",      "store_root",
        "store_at",     "bound",        "store_in",          "reorder_storage", "align_storage",
        "fold_storage", "align_bounds", "store_nontemporal", "load_ahead", "hoist_storage", "hoist_storage_root"};
    return c;
}

size_t edit_distance(const std::string &a, const std::string &b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); j++) row[j] = j;
    for (size_t i = 1; i <= a.size(); i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); j++) {
            size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diag = up;
        }
    }
    return row[b.size()];
}

// ---------------------------------------------------------------- the parser

class Parser {
public:
    Parser(const std::string &text, const PipelineSchedule &current, const std::map<std::string, Expr> &params)
        : text_(text), lex_(text), cur_(current) {
        // Funcs by their unique names, then by their C++ identifiers where that is not a name.
        for (auto &f : cur_.funcs) func_ids_[f.func] = f.func;
        for (auto &f : cur_.funcs) {
            std::string id = cpp_identifier(f.func);
            if (id == f.func || cur_.find(id)) continue;
            auto [it, fresh] = func_ids_.emplace(id, f.func);
            if (!fresh && it->second != f.func) it->second.clear();  // two Funcs: ambiguous
        }
        // Params, and inputs' shape fields ("in.extent.0").
        for (auto &[key, e] : params) {
            size_t d2 = key.rfind('.');
            size_t d1 = d2 == std::string::npos || d2 == 0 ? std::string::npos : key.rfind('.', d2 - 1);
            std::string field = d1 == std::string::npos ? "" : key.substr(d1 + 1, d2 - d1 - 1);
            std::string dim = d2 == std::string::npos ? "" : key.substr(d2 + 1);
            bool is_field = (field == "min" || field == "extent" || field == "stride") && !dim.empty() &&
                            dim.size() < 4 &&
                            std::all_of(dim.begin(), dim.end(), [](char c) { return std::isdigit((unsigned char)c); });
            if (is_field) {
                std::string in = key.substr(0, d1);
                inputs_[in] = in;
                fields_[std::make_tuple(in, field, std::stoi(dim))] = e;
            } else {
                param_ids_[key] = key;
                param_exprs_[key] = e;
            }
        }
        auto add_ids = [](std::map<std::string, std::string> &m) {
            std::vector<std::pair<std::string, std::string>> ids;
            for (auto &[n, v] : m) ids.push_back({cpp_identifier(n), v});
            for (auto &[id, v] : ids) {
                auto [it, fresh] = m.emplace(id, v);
                if (!fresh && it->second != v && it->first != it->second) it->second.clear();
            }
        };
        add_ids(param_ids_);
        add_ids(inputs_);
    }

    std::vector<Directive> run(std::vector<int> *lines) {
        if (text_.size() > max_text_bytes)
            fail(1, "the text has " + std::to_string(text_.size()) + " bytes; a schedule may have at most " +
                        std::to_string(max_text_bytes));
        while (peek().kind != Token::End) statement();
        resolve_levels();
        if (lines) *lines = lines_;
        return out_;
    }

private:
    const std::string &text_;
    Lexer lex_;
    std::deque<Token> ahead_;
    int prev_line_ = 1;  // the line of the last token taken
    int depth_ = 0;
    const PipelineSchedule &cur_;

    std::map<std::string, std::string> func_ids_;   // name or identifier -> unique name ("": ambiguous)
    std::map<std::string, std::string> param_ids_;  // name or identifier -> Param name ("": ambiguous)
    std::map<std::string, Expr> param_exprs_;       // Param name -> its Expr
    std::map<std::string, std::string> inputs_;     // name or identifier -> input name ("": ambiguous)
    std::map<std::tuple<std::string, std::string, int>, Expr> fields_;  // (input, field, dim) -> Expr

    struct Decl {
        std::string name;
        bool rvar;
    };
    std::map<std::string, Decl> vars_;                                     // declared Vars and RVars, by identifier
    std::map<std::string, StageRef> stage_vars_;                           // declared Stages, by identifier
    std::deque<FuncScheduleValue> wrappers_;  // wrapper Funcs the text makes (in(), clone_in()), as they start
    size_t wraps_ = 0;                        // in() and clone_in() calls read so far
    std::map<std::pair<std::string, int>, int> specs_;                     // (Func, stage) -> specializations made
    std::map<std::tuple<std::string, int, int>, std::vector<Dim>> loops_;  // each stage's loops so far

    std::vector<Directive> out_;
    std::vector<int> lines_;
    /** compute_at / store_at: the loop is looked up in the consumer's loops at the end (a
        consumer's splits may come after the call, as in C++, where levels are read later). */
    struct Level {
        size_t call;
        std::string ident;  // as written, when not declared
        int line;
    };
    std::vector<Level> levels_;
    std::vector<std::pair<size_t, int>> fusions_;  // compute_with calls (index, line): loops checked at the end

    // ---- tokens
    const Token &peek(size_t k = 0) {
        while (ahead_.size() <= k) ahead_.push_back(lex_.next());
        return ahead_[k];
    }
    Token take() {
        peek();
        Token t = std::move(ahead_.front());
        ahead_.pop_front();
        if (t.kind != Token::End) prev_line_ = t.line;
        return t;
    }
    bool is(const Token &t, const char *p) const { return t.kind == Token::Punct && t.text == p; }
    bool accept(const char *p) {
        if (!is(peek(), p)) return false;
        take();
        return true;
    }
    void expect(const char *p, const std::string &after) {
        if (accept(p)) return;
        // (The line of what came before: where a ')' or ';' was left out.)
        fail(prev_line_, std::string("expected '") + p + "' " + after + ", got " + describe(peek()));
    }
    std::string identifier(const std::string &what) {
        if (peek().kind != Token::Ident) fail(peek().line, "expected " + what + ", got " + describe(peek()));
        return take().text;
    }
    /** weft:: (or Halide::) in front of a name: skipped. */
    size_t namespace_tokens(size_t k) {
        while (peek(k).kind == Token::Ident && (peek(k).text == "weft" || peek(k).text == "Halide") &&
               is(peek(k + 1), "::"))
            k += 2;
        return k;
    }
    void skip_namespace() {
        for (size_t n = namespace_tokens(0); n > 0; n--) take();
    }

    struct Nest {
        Parser &p;
        Nest(Parser &p, int line) : p(p) {
            if (++p.depth_ > max_depth) fail(line, "nested too deeply (over " + std::to_string(max_depth) + " levels)");
        }
        ~Nest() { p.depth_--; }
    };

    // ---- names
    std::string funcs_list() const {
        std::vector<std::string> v;
        for (auto &f : cur_.funcs) {
            std::string id = cpp_identifier(f.func);
            v.push_back(id == f.func ? f.func : f.func + " (" + id + ")");
        }
        return v.empty() ? "none" : join(v);
    }
    std::string params_list() const {
        std::vector<std::string> v;
        for (auto &[n, e] : param_exprs_) v.push_back(n);
        return v.empty() ? "none" : join(v);
    }
    const FuncScheduleValue &func_value(const std::string &unique) const {
        if (auto f = cur_.find(unique)) return *f;
        for (auto &w : wrappers_)
            if (w.func == unique) return w;
        fail(prev_line_, "unknown Func " + quoted(unique));
    }
    /** The Func an identifier names, or "" (an error where two Funcs have that identifier). */
    std::string func_named(const std::string &id, int line) const {
        auto it = func_ids_.find(id);
        if (it == func_ids_.end()) return "";
        if (it->second.empty()) fail(line, quoted(id) + " could name more than one Func; use the Func's own name");
        return it->second;
    }
    [[noreturn]] void unknown_func(const std::string &id, int line) const {
        fail(line, "unknown Func " + quoted(id) + " (the pipeline's Funcs: " + funcs_list() + ")");
    }

    /** A lone identifier in an argument. */
    Value resolve(const std::string &id, int line) {
        Value v;
        v.line = line;
        v.ident = id;
        auto var = vars_.find(id);
        if (var != vars_.end()) {
            v.kind = Value::Name;
            v.name = var->second.name;
            v.declared = true;
            return v;
        }
        auto st = stage_vars_.find(id);
        if (st != stage_vars_.end()) {
            v.kind = Value::StageValue;
            v.stage = st->second;
            return v;
        }
        auto pm = param_ids_.find(id);
        if (pm != param_ids_.end()) {
            if (pm->second.empty())
                fail(line, quoted(id) + " could name more than one Param; use the Param's own name");
            v.kind = Value::ExprValue;
            v.expr = param_exprs_.at(pm->second);
            v.depth = 1;
            return v;
        }
        std::string f = func_named(id, line);
        if (!f.empty()) {
            v.kind = Value::FuncValue;
            v.name = f;
            return v;
        }
        auto in = inputs_.find(id);
        if (in != inputs_.end()) {
            if (in->second.empty())
                fail(line, quoted(id) + " could name more than one input; use the input's own name");
            v.kind = Value::Input;
            v.name = in->second;
            return v;
        }
        v.kind = Value::Name;
        v.name = id;
        return v;
    }

    // ---- statements
    void statement() {
        if (accept(";")) return;
        const Token &t = peek();
        int line = t.line;
        if (t.kind != Token::Ident)
            fail(line, "expected a declaration (Var x(\"x\");) or a schedule call (f.split(...);), got " + describe(t));
        if (t.text == "using") {
            take();
            if (identifier("'namespace' after 'using'") != "namespace")
                fail(prev_line_, "only 'using namespace weft;' is read, not other using declarations");
            identifier("a namespace after 'using namespace'");
            while (accept("::")) identifier("a namespace name after '::'");
            expect(";", "after 'using namespace ...'");
            return;
        }
        size_t k = namespace_tokens(0);
        const Token &w = peek(k);
        if (w.kind == Token::Ident && peek(k + 1).kind == Token::Ident) {
            if (w.text == "Var" || w.text == "RVar") {
                skip_namespace();
                declare_vars(take().text == "RVar");
                return;
            }
            if (w.text == "Stage" || w.text == "auto") {
                skip_namespace();
                take();
                declare_stage();
                return;
            }
            if (w.text == "Func") {
                skip_namespace();
                take();
                declare_func();
                return;
            }
            if (!func_ids_.count(w.text) && !stage_vars_.count(w.text))
                fail(w.line, "only Var, RVar, Stage and Func (a wrapper: Func w = f.in(g);) declarations and schedule calls are read; " +
                                 quoted(w.text + " " + peek(k + 1).text) + " is neither");
        }
        skip_namespace();
        chain();
        expect(";", "after the schedule call");
    }

    void declare_vars(bool rvar) {
        const char *kind = rvar ? "RVar" : "Var";
        do {
            int line = peek().line;
            std::string id = identifier(std::string("a name to declare after ") + kind);
            std::string name = id;
            for (auto [open, close] : {std::make_pair("(", ")"), std::make_pair("{", "}")}) {
                if (!accept(open)) continue;
                if (peek().kind != Token::String)
                    fail(peek().line,
                         std::string("expected the ") + kind + "'s name as a string, got " + describe(peek()));
                name = take().text;
                expect(close, std::string("after the ") + kind + "'s name");
                break;
            }
            if (name.empty()) fail(line, std::string("the ") + kind + " " + id + " has an empty name");
            if (stage_vars_.count(id)) fail(line, quoted(id) + " is already declared as a Stage");
            auto [it, fresh] = vars_.emplace(id, Decl{name, rvar});
            if (!fresh && it->second.name != name)
                fail(line, quoted(id) + " is already declared, as the loop " + quoted(it->second.name));
            it->second.rvar = rvar;
        } while (accept(","));
        expect(";", std::string("after the ") + kind + " declaration");
    }

    void declare_stage() {
        int line = peek().line;
        std::string id = identifier("the Stage's name");
        if (vars_.count(id) || stage_vars_.count(id) || func_ids_.count(id))
            fail(line, quoted(id) + " is already declared");
        expect("=", "after the Stage's name");
        skip_namespace();
        StageRef r = chain();
        r.is_func = false;
        stage_vars_[id] = r;
        expect(";", "after the Stage declaration");
    }

    /** Func w = f.in(g) (or any chain of calls giving a Func): w names that Func from here on. */
    void declare_func() {
        int line = peek().line;
        std::string id = identifier("the Func's name");
        if (vars_.count(id) || stage_vars_.count(id)) fail(line, quoted(id) + " is already declared");
        expect("=", "after the Func's name");
        skip_namespace();
        size_t wraps = wraps_;
        StageRef r = chain();
        if (!r.is_func || r.input || wraps_ == wraps)
            fail(line, "a Func declaration takes a wrapper made there by in() or clone_in() (Func " + id +
                           " = f.in(g);); other Funcs are named as they are");
        auto it = func_ids_.find(id);
        if (it != func_ids_.end() && it->second != r.func)
            fail(line, quoted(id) + " already names the Func " + quoted(it->second));
        func_ids_[id] = r.func;
        expect(";", "after the Func declaration");
    }

    /** The name a wrapper gets (Func.cpp's get_wrapper and clone_in): from the names the
        Funcs were given (a unique name "f$2" is Func "f"). */
    static std::string given_name(const std::string &unique) {
        size_t d = unique.find('$');
        return d == std::string::npos ? unique : unique.substr(0, d);
    }

    /** f.in(), f.in(g), f.in({g, h}), f.clone_in(g), f.clone_in({g, h}), input.in(...): the
        Wrap call, and the wrapper as a Func that later calls schedule. */
    StageRef wrap(const StageRef &r, const std::string &name, const std::vector<Value> &a, int line) {
        bool clone = name == "clone_in";
        if (!r.input) need_func(r, name, line);
        arg_count(name, a, 0, 1, "(a consumer Func, or {its consumers})", line);
        std::vector<std::string> cons;
        if (!a.empty()) {
            std::vector<Value> items = a[0].kind == Value::List ? a[0].items : std::vector<Value>{a[0]};
            for (auto &v : items) {
                if (v.kind != Value::FuncValue) fail(line, name + "() takes consumer Funcs, not " + describe(v));
                if (v.name == r.func) fail(line, name + "(): a Func cannot be wrapped for itself");
                cons.push_back(v.name);
            }
        }
        if (clone && cons.empty()) fail(line, "clone_in() needs the consumers it clones the Func for");
        if (clone && r.input) fail(line, "clone_in() of the input " + quoted(r.func) + ": inputs have in(), not clone_in()");
        std::string w = given_name(r.func) + (clone ? "_clone_in" : "_in");
        if (clone)
            for (auto &c : cons) w += "_" + given_name(c);
        else if (!cons.empty())
            w += "_" + given_name(cons[0]);
        wraps_++;
        Directive &d = emit(Directive::Wrap, StageRef{r.func, 0, -1, false, false}, line);
        d.names = {w};
        d.names.insert(d.names.end(), cons.begin(), cons.end());
        d.flag = clone;
        if (!cur_.find(w) && std::none_of(wrappers_.begin(), wrappers_.end(), [&](const FuncScheduleValue &v) { return v.func == w; })) {
            FuncScheduleValue v;
            v.func = w;
            if (r.input) {
                int dims = 0;
                for (auto &[k, e] : fields_)
                    if (std::get<0>(k) == r.func) dims = std::max(dims, std::get<2>(k) + 1);
                for (int i = 0; i < dims; i++) v.args.push_back("_" + std::to_string(i));
            } else {
                v.args = func_value(r.func).args;
            }
            std::vector<Expr> args;
            for (auto &n : v.args) args.push_back(Variable::make(Int(32), n));
            v.initial_loops = {default_stage_schedule(v.args, args, {}, false).dims};
            v.stages.resize(1);
            v.stages[0].schedule.dims = v.initial_loops[0];
            wrappers_.push_back(v);
            func_ids_.emplace(w, w);
            func_ids_.emplace(cpp_identifier(w), w);
        }
        StageRef out;
        out.func = w;
        out.is_func = true;
        return out;
    }

    /** f[.call(args)]*: the calls made, in order; the Func or Stage the last one returns. */
    StageRef chain() {
        int line = peek().line;
        std::string id = identifier("a Func or a Stage");
        StageRef r;
        auto st = stage_vars_.find(id);
        auto in = inputs_.find(id);
        if (st != stage_vars_.end()) {
            r = st->second;
        } else if (func_named(id, line).empty() && in != inputs_.end() && !in->second.empty()) {
            r.func = in->second;
            r.input = true;
        } else {
            std::string f = func_named(id, line);
            if (f.empty()) {
                if (vars_.count(id))
                    fail(line, quoted(id) + " is a " + (vars_[id].rvar ? "RVar" : "Var") +
                                   "; a schedule call is made on a Func or a Stage");
                unknown_func(id, line);
            }
            r.func = f;
            r.is_func = true;
        }
        while (accept(".")) {
            int cline = peek().line;
            std::string name = identifier("a call after '.'");
            expect("(", "after " + name);
            std::vector<Value> args;
            {
                Nest n(*this, cline);
                if (!accept(")")) {
                    do args.push_back(expression());
                    while (accept(","));
                    expect(")", "after the arguments of " + name + "()");
                }
            }
            r = call(r, name, args, cline);
        }
        return r;
    }

    // ---- Exprs
    Value expression() {
        Nest n(*this, peek().line);
        return binary(1);
    }

    static int precedence(const Token &t) {
        if (t.kind != Token::Punct) return 0;
        const std::string &o = t.text;
        if (o == "||") return 1;
        if (o == "&&") return 2;
        if (o == "==" || o == "!=") return 3;
        if (o == "<" || o == "<=" || o == ">" || o == ">=") return 4;
        if (o == "+" || o == "-") return 5;
        if (o == "*" || o == "/" || o == "%") return 6;
        return 0;
    }

    Value binary(int min_prec) {
        Value lhs = unary();
        for (;;) {
            int p = precedence(peek());
            if (p == 0 || p < min_prec) return lhs;
            Token op = take();
            Value rhs = binary(p + 1);
            lhs = combine(op.text, lhs, rhs, op.line);
        }
    }

    Value unary() {
        const Token &t = peek();
        int line = t.line;
        if (is(t, "-") || is(t, "+") || is(t, "!")) {
            std::string op = take().text;
            Nest n(*this, line);
            Value v = unary();
            if (v.kind == Value::Number) {
                Value r = v;
                r.ident.clear();
                r.literal = false;
                if (op == "!") {
                    r.num = make_bool_num(!truth(v.num));
                } else {
                    Num::Kind k = v.num.kind == Num::Bool ? Num::I32 : v.num.kind;  // (integer promotion)
                    r.num = convert(v.num, k, line);
                    if (op == "-") {
                        // -2147483648 is written as the negation of a literal too large for an int.
                        if (v.literal && v.num.kind == Num::I64 && v.num.i == 2147483648LL) {
                            r.num.kind = Num::I32;
                            r.num.i = INT32_MIN;
                        } else if (is_float_kind(k)) {
                            r.num.f = -r.num.f;  // (-0.0 stays negative)
                        } else {
                            Num zero = convert(Num(), k, line);
                            r.num = fold("-", zero, r.num, line);
                        }
                    }
                }
                return r;
            }
            Expr e = as_expr(v, "the operand of " + op);
            Value r = expr_value(guard(line, [&] { return op == "-" ? -e : op == "!" ? !e : e; }), v.depth + 1, line);
            return r;
        }
        // A C cast of a constant: (int64_t)5.
        if (is(t, "(") && peek(1).kind == Token::Ident && is(peek(2), ")") && c_type(peek(1).text)) {
            const CType *ct = c_type(peek(1).text);
            take();
            take();
            take();
            if (!ct->c_cast)
                fail(line, std::string("a C cast to ") + ct->name + " is not read; use cast<" + ct->name + ">(e)");
            Nest n(*this, line);
            Value v = unary();
            if (v.kind != Value::Number)
                fail(line, std::string("a C cast (") + ct->name +
                               ") applies to constants only; use cast(Type, e) for an Expr");
            Value r = v;
            r.ident.clear();
            r.literal = false;
            r.num = convert(v.num, ct->kind, line);
            return r;
        }
        return primary();
    }

    /** f(), with an Error of weft's Expr operators (a type mismatch, ...) given the line. */
    template <typename F>
    Expr guard(int line, F &&f) {
        try {
            return f();
        } catch (const Error &e) {
            if (std::string(e.what()).rfind("weft: schedule line ", 0) == 0) throw;
            fail(line, bare(e));
        }
    }

    Value expr_value(const Expr &e, int depth, int line) {
        if (depth > max_depth) fail(line, "an Expr nested too deeply (over " + std::to_string(max_depth) + " levels)");
        Value v;
        v.kind = Value::ExprValue;
        v.expr = e;
        v.depth = depth;
        v.line = line;
        return v;
    }

    /** v as an Expr argument of `what`. */
    Expr as_expr(const Value &v, const std::string &what) {
        switch (v.kind) {
        case Value::Number: return num_expr(v.num);
        case Value::ExprValue: return v.expr;
        case Value::Name:
            if (v.declared || is_loop_anywhere(v.ident))
                fail(v.line, quoted(v.ident) + " is a loop (a Var or RVar), not a value: " + what +
                                 " may use constants, Params and input shapes (Params: " + params_list() + ")");
            fail(v.line, "unknown name " + quoted(v.ident) + " in " + what + " (Params: " + params_list() + ")");
        default: fail(v.line, what + " must be an Expr, not " + describe(v));
        }
    }

    Value combine(const std::string &op, const Value &a, const Value &b, int line) {
        if (a.kind == Value::Number && b.kind == Value::Number) {
            Value r;
            r.kind = Value::Number;
            r.line = line;
            Num x = a.num, y = b.num;
            if (op != "&&" && op != "||") {  // (bools are promoted to int)
                if (x.kind == Num::Bool) x = convert(x, Num::I32, line);
                if (y.kind == Num::Bool) y = convert(y, Num::I32, line);
            }
            r.num = fold(op, x, y, line);
            return r;
        }
        std::string what = "an operand of " + op;
        Expr x = as_expr(a, what), y = as_expr(b, what);
        Expr e = guard(line, [&]() -> Expr {
            if (op == "+") return x + y;
            if (op == "-") return x - y;
            if (op == "*") return x * y;
            if (op == "/") return x / y;
            if (op == "%") return x % y;
            if (op == "<") return x < y;
            if (op == "<=") return x <= y;
            if (op == ">") return x > y;
            if (op == ">=") return x >= y;
            if (op == "==") return x == y;
            if (op == "!=") return x != y;
            if (op == "&&") return x && y;
            return x || y;
        });
        return expr_value(e, std::max(a.depth, b.depth) + 1, line);
    }

    std::vector<Value> call_args(const std::string &name) {
        std::vector<Value> args;
        expect("(", "after " + name);
        if (accept(")")) return args;
        do args.push_back(expression());
        while (accept(","));
        expect(")", "after the arguments of " + name + "()");
        return args;
    }

    int64_t int_arg(const Value &v, const std::string &what) {
        if (v.kind != Value::Number || is_float_kind(v.num.kind))
            fail(v.line, what + " must be an integer constant, not " + describe(v));
        Num n = convert(v.num, Num::I64, v.line);
        return n.i;
    }

    Value primary() {
        const Token &t = peek();
        int line = t.line;
        Value v;
        v.line = line;
        switch (t.kind) {
        case Token::Int: {
            Token n = take();
            v.kind = Value::Number;
            v.literal = true;
            v.ident = n.text;
            Num &x = v.num;
            uint64_t m = n.magnitude;
            if (n.is_unsigned) {
                x.kind = !n.is_long && m <= UINT32_MAX ? Num::U32 : Num::U64;
                x.u = m;
            } else if (m <= (uint64_t)INT32_MAX && !n.is_long) {
                x.kind = Num::I32;
                x.i = (int64_t)m;
            } else if (m <= (uint64_t)INT64_MAX) {
                x.kind = Num::I64;
                x.i = (int64_t)m;
            } else {
                x.kind = Num::U64;
                x.u = m;
            }
            return v;
        }
        case Token::Float: {
            Token n = take();
            v.kind = Value::Number;
            v.literal = true;
            v.ident = n.text;
            v.num.kind = n.is_float32 ? Num::F32 : Num::F64;
            v.num.f = n.value;
            return v;
        }
        case Token::String: fail(line, "a string may only name a Var or RVar in its declaration");
        case Token::End: fail(prev_line_, "expected an argument, got the end of the text");
        case Token::Punct: {
            if (is(t, "(")) {
                take();
                Nest n(*this, line);
                Value r = binary(1);
                expect(")", "to close the '(' on line " + std::to_string(line));
                return r;
            }
            if (is(t, "{")) {
                take();
                Nest n(*this, line);
                v.kind = Value::List;
                if (!accept("}")) {
                    do {
                        if (is(peek(), "}")) break;  // (a trailing comma)
                        v.items.push_back(binary(1));
                    } while (accept(","));
                    expect("}", "to close the '{' on line " + std::to_string(line));
                }
                return v;
            }
            fail(line, "expected an argument, got " + describe(t));
        }
        case Token::Ident: break;
        }
        // A name: perhaps weft::-qualified, an enum constant, a function, a Func's update(k) or
        // an input's shape.
        skip_namespace();
        std::string id = take().text;
        if (accept("::")) {
            std::string member = identifier("a name after " + quoted(id + "::"));
            for (Value::EnumKind k : {Value::Tail, Value::Memory, Value::Align}) {
                if (id != enum_type_name(k)) continue;
                std::vector<std::string> known;
                for (auto &w : enum_words(k)) {
                    std::string spelled = w.cpp;
                    spelled = spelled.substr(spelled.find("::") + 2);
                    known.push_back(spelled);
                    if (spelled == member) {
                        v.kind = Value::Enum;
                        v.enum_kind = k;
                        v.enum_value = w.value;
                        v.ident = id + "::" + member;
                        return v;
                    }
                }
                fail(line, "unknown " + id + " " + quoted(member) + " (known: " + join(known) + ")");
            }
            fail(line, "unknown name " + quoted(id + "::" + member));
        }
        if (id == "true" || id == "false") {
            v.kind = Value::Number;
            v.num = make_bool_num(id == "true");
            v.ident = id;
            return v;
        }
        if (id == "cast" && is(peek(), "<")) {
            take();
            skip_namespace();
            int tl = peek().line;
            std::string tn = identifier("a type in cast<...>");
            const CType *ct = c_type(tn);
            if (!ct) fail(tl, "unknown type " + quoted(tn) + " in cast<...>");
            expect(">", "after the type in cast<...>");
            std::vector<Value> a = call_args("cast<" + tn + ">");
            if (a.size() != 1) fail(line, "cast<" + tn + ">() takes one argument, got " + std::to_string(a.size()));
            Expr e = as_expr(a[0], "cast<" + tn + ">()");
            return expr_value(guard(line, [&] { return cast(ct->type, e); }), a[0].depth + 1, line);
        }
        if (is(peek(), "(")) return function(id, line);
        v = resolve(id, line);
        if (v.kind == Value::Name && !v.declared && is(peek(), ".") && peek(1).kind == Token::Ident &&
            !is(peek(2), "(")) {
            // r.x: an RDom's RVar as Halide code names it, the loop "r.x".
            take();
            v.ident = id + "." + take().text;
            v.name = v.ident;
            return v;
        }
        if (is(peek(), ".") && v.kind == Value::FuncValue && peek(1).kind == Token::Ident && peek(1).text == "update") {
            take();
            take();
            std::vector<Value> a = call_args("update");
            StageRef r;
            r.func = v.name;
            r.is_func = true;
            Value s;
            s.kind = Value::StageValue;
            s.line = line;
            s.stage = update(r, a, line);
            return s;
        }
        if (is(peek(), ".") && v.kind == Value::Input) return input_field(v.name, line);
        return v;
    }

    /** in.min(k), in.extent(k), in.stride(k), in.width(), in.height(), in.channels(),
        in.dim(k).min() (and .extent(), .stride(), .max()). */
    Value input_field(const std::string &in, int line) {
        take();  // '.'
        std::string m = identifier("a shape of input " + quoted(in) + " (min, extent, stride, width, ...)");
        std::vector<Value> a = call_args(m);
        std::string field;
        int64_t dim = 0;
        bool max = false;
        auto one_int = [&](const std::string &call) {
            if (a.size() != 1)
                fail(line, call + "() takes one argument (a dimension), got " + std::to_string(a.size()));
            return int_arg(a[0], "the dimension of " + call + "()");
        };
        if (m == "min" || m == "extent" || m == "stride") {
            field = m;
            dim = one_int(m);
        } else if (m == "width" || m == "height" || m == "channels") {
            if (!a.empty()) fail(line, m + "() takes no arguments");
            field = "extent";
            dim = m == "width" ? 0 : m == "height" ? 1 : 2;
        } else if (m == "dim") {
            dim = one_int("dim");
            expect(".", "after dim(" + std::to_string(dim) + ")");
            field = identifier("min, extent, stride or max after dim(k).");
            if (field != "min" && field != "extent" && field != "stride" && field != "max")
                fail(prev_line_, "unknown field " + quoted(field) + " of dim(k) (known: min, extent, stride, max)");
            if (!call_args(field).empty()) fail(line, field + "() takes no arguments");
            if (field == "max") {
                max = true;
                field = "min";
            }
        } else {
            fail(line, "unknown shape " + quoted(m) + " of input " + quoted(in) +
                           " (known: min(k), extent(k), stride(k), width(), height(), channels(), dim(k).min() ...)");
        }
        auto get = [&](const std::string &f) {
            auto it = fields_.find(std::make_tuple(in, f, (int)std::clamp<int64_t>(dim, -1, 1000)));
            if (dim < 0 || it == fields_.end())
                fail(line, "input " + quoted(in) + " has no dimension " + std::to_string(dim));
            return it->second;
        };
        Expr e = get(field);
        if (max) e = guard(line, [&] { return e + get("extent") - 1; });
        return expr_value(e, max ? 3 : 1, line);
    }

    /** min(a, b, ...), max, select, clamp, abs, cast(Type, e), Expr(e), and the types Int(n),
        UInt(n), Float(n), BFloat(n), Bool(). */
    Value function(const std::string &id, int line) {
        static const std::vector<std::string> known = {"min",  "max", "select", "clamp", "abs",    "cast",
                                                       "Expr", "Int", "UInt",   "Float", "BFloat", "Bool"};
        if (std::find(known.begin(), known.end(), id) == known.end()) {
            if (func_ids_.count(id))
                fail(line, "a call of Func " + quoted(id) + " cannot be part of a schedule's Expr");
            fail(line, "unknown function " + quoted(id) + " (known: " + join(known) + ")");
        }
        std::vector<Value> a;
        {
            Nest n(*this, line);
            a = call_args(id);
        }
        auto count = [&](size_t lo, size_t hi, const char *sig) {
            if (a.size() < lo || a.size() > hi)
                fail(line, id + "() takes " + sig + ", got " + std::to_string(a.size()) + " argument" +
                               (a.size() == 1 ? "" : "s"));
        };
        if (id == "Int" || id == "UInt" || id == "Float" || id == "BFloat" || id == "Bool") {
            Value v;
            v.kind = Value::TypeValue;
            v.line = line;
            if (id == "Bool") {
                count(0, 1, "at most one argument (lanes)");
                v.type = Bool();
            } else {
                count(1, 2, "the bits (and lanes)");
                int64_t bits = int_arg(a[0], id + "()'s bits");
                bool ok = id == "Float"    ? (bits == 16 || bits == 32 || bits == 64)
                          : id == "BFloat" ? bits == 16
                                           : (bits == 8 || bits == 16 || bits == 32 || bits == 64);
                if (!ok) fail(line, id + "(" + std::to_string(bits) + ") is not a type weft has");
                v.type = id == "Int"     ? Int((int)bits)
                         : id == "UInt"  ? UInt((int)bits)
                         : id == "Float" ? Float((int)bits)
                                         : BFloat(16);
            }
            size_t lanes_at = id == "Bool" ? 0 : 1;
            if (a.size() > lanes_at && int_arg(a[lanes_at], id + "()'s lanes") != 1)
                fail(line, "a schedule's Exprs are scalars (lanes must be 1)");
            return v;
        }
        int depth = 0;
        std::vector<Expr> e;
        size_t first = id == "cast" ? 1 : 0;
        for (size_t i = first; i < a.size(); i++) {
            e.push_back(as_expr(a[i], id + "()'s argument " + std::to_string(i + 1)));
            depth = std::max(depth, a[i].depth);
        }
        if (id == "Expr") {
            count(1, 1, "one argument");
            return expr_value(e[0], std::max(depth, 1), line);
        }
        Expr r = guard(line, [&]() -> Expr {
            if (id == "min" || id == "max") {
                count(2, 64, "two or more arguments");
                Expr m = e[0];
                for (size_t i = 1; i < e.size(); i++) m = id == "min" ? min(m, e[i]) : max(m, e[i]);
                return m;
            }
            if (id == "select") {
                if (a.size() < 3 || a.size() % 2 == 0)
                    fail(line,
                         "select() takes (condition, value, ..., otherwise): an odd number of 3 or more arguments, "
                         "got " +
                             std::to_string(a.size()));
                Expr s = e.back();
                for (size_t i = e.size() - 1; i >= 2; i -= 2) s = select(e[i - 2], e[i - 1], s);
                return s;
            }
            if (id == "clamp") {
                count(3, 3, "three arguments (x, lo, hi)");
                return clamp(e[0], e[1], e[2]);
            }
            if (id == "abs") {
                count(1, 1, "one argument");
                return abs(e[0]);
            }
            count(2, 2, "two arguments (a type, an Expr)");  // cast
            if (a[0].kind != Value::TypeValue) fail(line, "cast()'s first argument must be a type such as Int(32)");
            return cast(a[0].type, e[0]);
        });
        return expr_value(r, depth + 1 + (int)e.size() / 2, line);
    }

    // ---- loops
    /** Is `id` the name (or C++ identifier) of a loop of some stage? (For messages.) */
    bool is_loop_anywhere(const std::string &id) const {
        auto has = [&](const std::vector<Dim> &ds) {
            for (auto &d : ds)
                if (d.var == id || cpp_identifier(d.var) == id) return true;
            return false;
        };
        for (auto &f : cur_.funcs)
            for (auto &l : f.initial_loops)
                if (has(l)) return true;
        for (auto &[k, ds] : loops_)
            if (has(ds)) return true;
        return false;
    }
    std::vector<Dim> &loops(const StageRef &r) {
        auto key = std::make_tuple(r.func, r.stage, r.spec);
        auto it = loops_.find(key);
        if (it == loops_.end()) {
            const FuncScheduleValue &f = func_value(r.func);
            std::vector<Dim> d =
                (size_t)r.stage < f.initial_loops.size() ? f.initial_loops[r.stage] : std::vector<Dim>();
            it = loops_.emplace(key, d).first;
        }
        return it->second;
    }
    static std::string loops_list(const std::vector<Dim> &ds) {
        std::vector<std::string> v;
        for (auto it = ds.rbegin(); it != ds.rend(); ++it) v.push_back(it->var);
        return v.empty() ? "none" : join(v);
    }
    static std::string where(const StageRef &r) {
        std::string w = "Func " + quoted(r.func);
        if (r.stage > 0) w += ".update(" + std::to_string(r.stage - 1) + ")";
        if (r.spec >= 0) w += " (specialization " + std::to_string(r.spec) + ")";
        return w;
    }
    /** The loop name an argument gives: a declared Var's or RVar's name; else the identifier,
        or the stage's loop whose C++ identifier it is (r_x for "r.x"). */
    static std::string loop_name(const Value &v, const std::vector<Dim> &ds, const std::string &what) {
        if (v.kind == Value::Name && v.declared) return v.name;
        if (v.ident.empty() || v.kind == Value::Number || v.kind == Value::Enum)
            fail(v.line, what + " must be a loop name (a Var or RVar), not " + describe(v));
        for (auto &d : ds)
            if (d.var == v.ident) return v.ident;
        std::string match;
        int n = 0;
        for (auto &d : ds)
            if (cpp_identifier(d.var) == v.ident) {
                match = d.var;
                n++;
            }
        return n == 1 ? match : v.ident;
    }
    /** The index of an existing loop (innermost first). */
    int existing(const StageRef &r, const Value &v, const std::string &call) {
        std::vector<Dim> &ds = loops(r);
        std::string n = loop_name(v, ds, call + "()'s loop");
        for (size_t i = 0; i < ds.size(); i++)
            if (ds[i].var == n) return (int)i;
        fail(v.line, where(r) + "." + call + "(): no loop " + quoted(n) +
                         "; the loops are (outermost first): " + loops_list(ds));
    }
    void check_new(const StageRef &r, const std::string &n, const std::string &except, const std::string &call,
                   int line) {
        if (n == except) return;
        for (auto &d : loops(r))
            if (d.var == n) fail(line, where(r) + "." + call + "(): the name " + quoted(n) + " is already a loop");
    }

    // ---- emitting calls
    Directive &emit(Directive::Op op, const StageRef &r, int line) {
        Directive d;
        d.op = op;
        d.func = r.func;
        d.stage = r.stage;
        d.spec = r.spec;
        out_.push_back(d);
        lines_.push_back(line);
        return out_.back();
    }
    void emit_split(const StageRef &r, const Value &old, const Value &outer, const Value &inner, const Expr &factor,
                    TailStrategy tail, const std::string &call, int line) {
        int i = existing(r, old, call);
        std::vector<Dim> &ds = loops(r);
        std::string on = loop_name(outer, ds, call + "()'s outer loop"),
                    in = loop_name(inner, ds, call + "()'s inner loop");
        split_names(r, i, on, in, factor, tail, call, line);
    }
    /** split of loop i into on (outer) and in (inner): the checks of Stage::split, then the call. */
    void split_names(const StageRef &r, int i, const std::string &on, const std::string &in, const Expr &factor,
                     TailStrategy tail, const std::string &call, int line) {
        std::vector<Dim> &ds = loops(r);
        std::string old = ds[i].var;
        if (on == in) fail(line, where(r) + "." + call + "(): outer and inner names are both " + quoted(on));
        check_new(r, on, old, call, line);
        check_new(r, in, old, call, line);
        bool rv = ds[i].is_rvar;
        Directive &d = emit(Directive::Split, r, line);
        d.names = {old, on, in};
        d.rvars = {rv, rv, rv};
        d.exprs = {factor};
        d.tail = tail;
        Dim din = ds[i], dout = ds[i];
        din.var = in;
        din.for_type = ForType::Serial;
        dout.var = on;
        ds[i] = din;
        ds.insert(ds.begin() + i + 1, dout);
    }
    void emit_loop(const StageRef &r, const std::string &n, ForType t, int line) {
        std::vector<Dim> &ds = loops(r);
        for (auto &dim : ds) {
            if (dim.var != n) continue;
            Directive &d = emit(Directive::Loop, r, line);
            d.names = {n};
            d.rvars = {dim.is_rvar};
            d.for_type = t;
            dim.for_type = t;
            return;
        }
        fail(line, where(r) + "." + word_of(loop_words(), (int)t).cpp + "(): no loop " + quoted(n) +
                       "; the loops are (outermost first): " + loops_list(ds));
    }
    void emit_reorder(const StageRef &r, const std::vector<std::string> &names, int line) {
        std::vector<Dim> &ds = loops(r);
        std::vector<int> idx;
        Directive d;
        for (auto &n : names) {
            int i = -1;
            for (size_t k = 0; k < ds.size(); k++)
                if (ds[k].var == n) i = (int)k;
            if (i < 0)
                fail(line, where(r) + ".reorder(): no loop " + quoted(n) +
                               "; the loops are (outermost first): " + loops_list(ds));
            if (std::find(idx.begin(), idx.end(), i) != idx.end())
                fail(line, where(r) + ".reorder(): " + quoted(n) + " is listed twice");
            idx.push_back(i);
            d.rvars.push_back(ds[i].is_rvar);
        }
        Directive &e = emit(Directive::Reorder, r, line);
        e.names = names;
        e.rvars = d.rvars;
        std::vector<int> slots = idx;
        std::sort(slots.begin(), slots.end());
        std::vector<Dim> nd = ds;
        for (size_t k = 0; k < idx.size(); k++) nd[slots[k]] = ds[idx[k]];
        ds = nd;
    }

    // ---- the calls
    [[noreturn]] void unknown_call(const StageRef &r, const std::string &name, int line) {
        if (name == "rfactor" || name == "in" || name == "clone_in")
            fail(line, name + "() makes a new Func, which changes the algorithm; a schedule's text cannot call it");
        if (name == "set_estimate" || name == "set_estimates")
            fail(line, name + "() gives estimates for automatic scheduling, which are not part of a schedule");
        std::vector<std::string> known = stage_calls();
        if (r.is_func) known.insert(known.end(), func_calls().begin(), func_calls().end());
        std::string near;
        for (auto &k : known)
            if (name.size() < 40 && edit_distance(name, k) <= 2 && near.empty()) near = k;
        fail(line, "unknown call " + quoted(name) + " on " + where(r) +
                       (near.empty() ? "" : " (did you mean " + near + "?)") + " (known: " + join(known) + ")");
    }

    static void arg_count(const std::string &call, const std::vector<Value> &a, size_t lo, size_t hi, const char *sig,
                          int line) {
        if (a.size() >= lo && a.size() <= hi) return;
        std::string n = lo == hi       ? std::to_string(lo)
                        : hi == lo + 1 ? std::to_string(lo) + " or " + std::to_string(hi)
                                       : std::to_string(lo) + " to " + std::to_string(hi);
        fail(line, call + "() takes " + n + " argument" + (hi == 1 ? "" : "s") + (*sig ? " " : "") + sig + ", got " +
                       std::to_string(a.size()));
    }

    TailStrategy tail_arg(const std::vector<Value> &a, size_t i, const std::string &call) {
        if (i >= a.size()) return TailStrategy::Auto;
        if (a[i].kind != Value::Enum || a[i].enum_kind != Value::Tail)
            fail(a[i].line, call + "()'s argument " + std::to_string(i + 1) + " must be a TailStrategy (" +
                                cpp_words(tail_words()) + "), not " + describe(a[i]));
        return (TailStrategy)a[i].enum_value;
    }
    bool bool_arg(const std::vector<Value> &a, size_t i, const std::string &call, bool dflt) {
        if (i >= a.size()) return dflt;
        if (a[i].kind != Value::Number)
            fail(a[i].line, call + "()'s argument must be true or false, not " + describe(a[i]));
        return truth(a[i].num);
    }
    std::string func_arg(const Value &v, const std::string &what) {
        if (v.kind == Value::FuncValue) return v.name;
        if (v.kind == Value::Name && !v.declared) unknown_func(v.ident, v.line);
        fail(v.line, what + " must be a Func, not " + describe(v));
    }
    /** A pure Var of the Func (bound, storage calls): declared, or the identifier of one. */
    std::string func_var(const StageRef &r, const Value &v, const std::string &call) {
        std::vector<Dim> args;
        for (auto &a : func_value(r.func).args) args.push_back(Dim{a});
        return loop_name(v, args, call + "()'s Var");
    }
    void need_func(const StageRef &r, const std::string &call, int line) {
        if (!r.is_func)
            fail(line, call + "() is a call of a Func, and " + where(r) + (r.stage > 0 || r.spec >= 0 ? "" : " here") +
                           " is a Stage; call it on the Func");
    }

    StageRef update(const StageRef &r, const std::vector<Value> &a, int line) {
        need_func(r, "update", line);
        arg_count("update", a, 0, 1, "(the update's index)", line);
        int64_t k = a.empty() ? 0 : int_arg(a[0], "update()'s index");
        size_t n = func_value(r.func).stages.size() - 1;
        if (k < 0 || (uint64_t)k >= n)
            fail(line, "Func " + quoted(r.func) + " has " +
                           (n == 0 ? std::string("no update definitions")
                                   : std::to_string(n) + " update definition" + (n == 1 ? "" : "s") + " (update(0)" +
                                         (n > 1 ? " to update(" + std::to_string(n - 1) + ")" : "") + ")") +
                           "; update(" + std::to_string(k) + ") does not exist");
        StageRef s;
        s.func = r.func;
        s.stage = (int)k + 1;
        return s;
    }

    StageRef call(const StageRef &r, const std::string &name, const std::vector<Value> &a, int line) {
        if (name == "in" || name == "clone_in") return wrap(r, name, a, line);
        if (r.input) fail(line, "input " + quoted(r.func) + ": in() is the only schedule call on an input, not " + name + "()");
        // Func-level calls.
        if (std::find(func_calls().begin(), func_calls().end(), name) != func_calls().end()) {
            if (name == "update") return update(r, a, line);
            need_func(r, name, line);
            func_call(r, name, a, line);
            return r;
        }
        if (name == "specialize") {
            arg_count(name, a, 1, 1, "(a condition)", line);
            if (r.spec >= 0)
                fail(line,
                     "specialize() of a specialization is not read; specialize the stage itself (its conditions are "
                     "tried in order)");
            Expr cond = as_expr(a[0], "specialize()'s condition");
            StageRef base = r;
            base.is_func = false;
            StageRef s = base;
            s.spec = specs_[{r.func, r.stage}]++;
            Directive &d = emit(Directive::Specialize, s, line);
            d.exprs = {cond};
            loops_[std::make_tuple(s.func, s.stage, s.spec)] = loops(base);  // a copy of the stage's as it is now
            return s;
        }
        stage_call(r, name, a, line);
        return r;
    }

    void func_call(const StageRef &r, const std::string &name, const std::vector<Value> &a, int line) {
        auto simple = [&](Directive::Op op) {
            arg_count(name, a, 0, 0, "", line);
            emit(op, r, line);
        };
        if (name == "compute_root") return simple(Directive::ComputeRoot);
        if (name == "compute_inline") return simple(Directive::ComputeInline);
        if (name == "store_root") return simple(Directive::StoreRoot);
        if (name == "hoist_storage_root") return simple(Directive::HoistStorageRoot);
        if (name == "compute_at" || name == "store_at" || name == "hoist_storage") {
            arg_count(name, a, 2, 2, "(a consumer Func, one of its loops)", line);
            std::string g = func_arg(a[0], name + "()'s first argument");
            Directive &d = emit(name == "compute_at"   ? Directive::ComputeAt
                                : name == "store_at" ? Directive::StoreAt
                                                     : Directive::HoistStorage,
                                r, line);
            const Value &v = a[1];
            if (!(v.kind == Value::Name && v.declared) && v.ident.empty())
                fail(v.line,
                     name + "()'s second argument must be a loop of Func " + quoted(g) + ", not " + describe(v));
            d.names = {g, v.kind == Value::Name && v.declared ? v.name : ""};
            levels_.push_back({out_.size() - 1, v.kind == Value::Name && v.declared ? "" : v.ident, v.line});
            return;
        }
        if (name == "bound") {
            arg_count(name, a, 3, 3, "(a Var, min, extent)", line);
            std::string v = func_var(r, a[0], name);
            Expr mn = as_expr(a[1], "bound()'s min"), ex = as_expr(a[2], "bound()'s extent");
            Directive &d = emit(Directive::Bound, r, line);
            d.names = {v};
            d.exprs = {mn, ex};
            return;
        }
        if (name == "store_in") {
            arg_count(name, a, 1, 1, "(a MemoryType)", line);
            if (a[0].kind != Value::Enum || a[0].enum_kind != Value::Memory)
                fail(a[0].line, "store_in()'s argument must be a MemoryType (" + cpp_words(memory_words()) + "), not " +
                                    describe(a[0]));
            emit(Directive::StoreIn, r, line).memory = (MemoryType)a[0].enum_value;
            return;
        }
        if (name == "reorder_storage") {
            std::vector<Value> vs = a.size() == 1 && a[0].kind == Value::List ? a[0].items : a;
            if (vs.empty()) fail(line, "reorder_storage() takes the Func's Vars, innermost first; got none");
            std::vector<std::string> names;
            for (auto &v : vs) names.push_back(func_var(r, v, name));
            emit(Directive::ReorderStorage, r, line).names = names;
            return;
        }
        if (name == "align_storage" || name == "fold_storage" || name == "align_bounds") {
            if (name == "align_storage") arg_count(name, a, 2, 2, "(a Var, an alignment)", line);
            if (name == "fold_storage") arg_count(name, a, 2, 3, "(a Var, an extent[, fold_forward])", line);
            if (name == "align_bounds") arg_count(name, a, 2, 3, "(a Var, a modulus[, a remainder])", line);
            std::string v = func_var(r, a[0], name);
            if (name == "fold_storage" && !bool_arg(a, 2, name, true))
                fail(line,
                     "fold_storage(): only forward folds (the window moving to larger coordinates) are supported; "
                     "fold_forward = false is not");
            std::vector<Expr> e = {as_expr(a[1], name + "()'s argument 2")};
            if (name == "align_bounds")
                e.push_back(a.size() > 2 ? as_expr(a[2], "align_bounds()'s remainder") : Expr(0));
            Directive &d = emit(name == "align_storage"  ? Directive::AlignStorage
                                : name == "fold_storage" ? Directive::FoldStorage
                                                         : Directive::AlignBounds,
                                r, line);
            d.names = {v};
            d.exprs = e;
            return;
        }
        // store_nontemporal([on]), load_ahead([on]): off undoes the calls before (each Func starts without).
        arg_count(name, a, 0, 1, "([on])", line);
        Directive::Op op = name == "store_nontemporal" ? Directive::StoreNontemporal : Directive::LoadAhead;
        if (bool_arg(a, 0, name, true)) {
            emit(op, r, line);
            return;
        }
        for (size_t i = out_.size(); i-- > 0;)
            if (out_[i].op == op && out_[i].func == r.func) {
                out_.erase(out_.begin() + (long)i);
                lines_.erase(lines_.begin() + (long)i);
                for (auto &l : levels_)
                    if (l.call > i) l.call--;
            }
    }

    void stage_call(const StageRef &r, const std::string &name, const std::vector<Value> &a, int line) {
        if (name == "split") {
            arg_count(name, a, 4, 5, "(old, outer, inner, factor[, tail])", line);
            emit_split(r, a[0], a[1], a[2], as_expr(a[3], "split()'s factor"), tail_arg(a, 4, name), name, line);
            return;
        }
        if (name == "fuse") {
            arg_count(name, a, 3, 3, "(inner, outer, fused)", line);
            int ii = existing(r, a[0], name), io = existing(r, a[1], name);
            std::vector<Dim> &ds = loops(r);
            std::string inner = ds[ii].var, outer = ds[io].var;
            if (ii == io) fail(line, where(r) + ".fuse(): inner and outer are the same loop " + quoted(inner));
            std::string fused = loop_name(a[2], ds, "fuse()'s fused loop");
            if (fused != inner && fused != outer) check_new(r, fused, "", name, line);
            if (ds[ii].is_rvar != ds[io].is_rvar)
                fail(line, where(r) + ".fuse(): cannot fuse a pure Var with an RVar (" + quoted(inner) + ", " +
                               quoted(outer) + ")");
            bool rv = ds[ii].is_rvar;
            Directive &d = emit(Directive::Fuse, r, line);
            d.names = {inner, outer, fused};
            d.rvars = {rv, rv, rv};
            ds[ii] = Dim{fused, ForType::Serial, rv};
            ds.erase(ds.begin() + io);
            return;
        }
        if (name == "reorder") {
            std::vector<Value> vs = a.size() == 1 && a[0].kind == Value::List ? a[0].items : a;
            if (vs.empty()) fail(line, "reorder() takes loops, innermost first; got none");
            std::vector<std::string> names;
            for (auto &v : vs) names.push_back(loop_name(v, loops(r), "reorder()'s loop"));
            emit_reorder(r, names, line);
            return;
        }
        if (name == "tile" || name == "gpu_tile") {
            // tile(x, y, xo, yo, xi, yi, fx, fy[, tail]) or tile(x, y, xi, yi, fx, fy[, tail]): split, split,
            // reorder(xi, yi, xo, yo), as Stage::tile. gpu_tile: also gpu_blocks(xo, yo), gpu_threads(xi, yi);
            // gpu_tile(x, xo, xi, f[, tail]): split, gpu_blocks(xo), gpu_threads(xi).
            bool gpu = name == "gpu_tile";
            bool tail_last = !a.empty() && a.back().kind == Value::Enum;
            size_t n = a.size() - (tail_last ? 1 : 0);
            if (gpu && n == 4) {
                int i = existing(r, a[0], name);
                std::vector<Dim> &ds = loops(r);
                std::string xo = loop_name(a[1], ds, name + "()'s outer loop"),
                            xi = loop_name(a[2], ds, name + "()'s inner loop");
                split_names(r, i, xo, xi, as_expr(a[3], name + "()'s factor"), tail_arg(a, 4, name), name, line);
                emit_loop(r, xo, ForType::GPUBlock, line);
                emit_loop(r, xi, ForType::GPUThread, line);
                return;
            }
            if (n != 8 && (gpu || n != 6))
                fail(line,
                     name + "() takes " +
                         (gpu ? std::string("(x, xo, xi, factor[, tail]) or (x, y, xo, yo, xi, yi, fx, fy[, tail])")
                              : std::string(
                                    "(x, y, xo, yo, xi, yi, fx, fy[, tail]) or (x, y, xi, yi, fx, fy[, tail])")) +
                         ", got " + std::to_string(a.size()) + " arguments");
            bool six = n == 8;
            TailStrategy tail = tail_arg(a, n, name);
            int ix = existing(r, a[0], name);
            std::vector<Dim> &ds = loops(r);
            std::string x = ds[ix].var, y = ds[existing(r, a[1], name)].var;
            std::string xo = six ? loop_name(a[2], ds, name + "()'s loop") : x,
                        yo = six ? loop_name(a[3], ds, name + "()'s loop") : y;
            std::string xi = loop_name(a[six ? 4 : 2], ds, name + "()'s loop"),
                        yi = loop_name(a[six ? 5 : 3], ds, name + "()'s loop");
            Expr fx = as_expr(a[six ? 6 : 4], name + "()'s factor"), fy = as_expr(a[six ? 7 : 5], name + "()'s factor");
            split_names(r, ix, xo, xi, fx, tail, name, line);
            int iy2 = -1;
            for (size_t k = 0; k < loops(r).size(); k++)
                if (loops(r)[k].var == y) iy2 = (int)k;
            if (iy2 < 0)  // (x's split took y's name)
                fail(line, where(r) + "." + name + "(): no loop " + quoted(y) + " after splitting " + quoted(x));
            split_names(r, iy2, yo, yi, fy, tail, name, line);
            emit_reorder(r, {xi, yi, xo, yo}, line);
            if (gpu) {
                emit_loop(r, xo, ForType::GPUBlock, line);
                emit_loop(r, yo, ForType::GPUBlock, line);
                emit_loop(r, xi, ForType::GPUThread, line);
                emit_loop(r, yi, ForType::GPUThread, line);
            }
            return;
        }
        for (auto &w : loop_words()) {
            if (name != w.cpp) continue;
            ForType t = (ForType)w.value;
            bool gpu = t == ForType::GPUBlock || t == ForType::GPUThread;
            bool factored = t == ForType::Vectorized || t == ForType::Unrolled || t == ForType::Parallel;
            if (gpu) arg_count(name, a, 1, 3, "(loops, innermost first)", line);
            else if (factored) arg_count(name, a, 1, 3, "(a loop[, factor[, tail]])", line);
            else arg_count(name, a, 1, 1, "(a loop)", line);
            if (gpu || a.size() == 1) {
                for (auto &v : a) emit_loop(r, loops(r)[existing(r, v, name)].var, t, line);
                return;
            }
            // vectorize(v, n), unroll(v, n), parallel(v, n): as src/lang/Func.cpp makes them.
            int i = existing(r, a[0], name);
            std::string v = loops(r)[i].var;
            bool rv = loops(r)[i].is_rvar;
            const char *suffix = t == ForType::Vectorized ? "_vi" : t == ForType::Unrolled ? "_ui" : "_pi";
            std::string in = fresh_inner(loops(r), v + suffix);
            Expr factor = as_expr(a[1], name + "()'s factor");
            TailStrategy tail = tail_arg(a, 2, name);
            if (rv && t != ForType::Unrolled) emit_loop(r, v, t, line);  // (the call refuses it unless it may)
            split_names(r, existing(r, a[0], name), v, in, factor, tail, name, line);
            emit_loop(r, t == ForType::Parallel ? v : in, t, line);
            return;
        }
        if (name == "gpu_mma") {
            arg_count(name, a, 3, 3, "(i, j, k)", line);
            Directive &d = emit(Directive::Mma, r, line);
            for (int i = 0; i < 3; i++) {
                const Dim &dm = loops(r)[existing(r, a[i], name)];
                d.names.push_back(dm.var);
                d.rvars.push_back(dm.is_rvar);
            }
            return;
        }
        if (name == "gpu_single_thread") {
            arg_count(name, a, 0, 0, "", line);
            emit(Directive::SingleThread, r, line);
            return;
        }
        if (name == "atomic") {
            arg_count(name, a, 0, 1, "([override_associativity_test])", line);
            emit(Directive::Atomic, r, line).flag = bool_arg(a, 0, name, false);
            return;
        }
        if (name == "prefetch") {
            arg_count(name, a, 2, 3, "(a Func or input, a loop[, offset])", line);
            std::string src;
            if (a[0].kind == Value::FuncValue || a[0].kind == Value::Input) src = a[0].name;
            else {
                std::vector<std::string> ins;
                for (auto &[n, in] : inputs_)
                    if (n == in) ins.push_back(n);  // (not the identifiers)
                fail(a[0].line, "prefetch()'s first argument must be a Func or an input of the pipeline (inputs: " +
                                    (ins.empty() ? std::string("none") : join(ins)) + "), not " + describe(a[0]));
            }
            int i = existing(r, a[1], name);
            Expr off = a.size() > 2 ? as_expr(a[2], "prefetch()'s offset") : Expr(1);
            bool rv = loops(r)[i].is_rvar;
            Directive &d = emit(Directive::Prefetch, r, line);
            d.names = {src, loops(r)[i].var};
            d.rvars = {false, rv};
            d.exprs = {off};
            return;
        }
        if (name == "compute_with") {
            arg_count(name, a, 2, 3, "(a Func or Stage, a loop[, a LoopAlignStrategy or {{loop, strategy}, ...}])",
                      line);
            StageRef parent;
            if (a[0].kind == Value::StageValue) parent = a[0].stage;
            else parent.func = func_arg(a[0], "compute_with()'s first argument");
            if (parent.spec >= 0) fail(line, "compute_with(): the parent must be a stage, not a specialization of one");
            std::vector<Dim> &ds = loops(r);
            auto rvar = [&](const std::string &n) {
                for (auto &d : ds)
                    if (d.var == n) return d.is_rvar;
                return false;
            };
            std::string v = loop_name(a[1], ds, "compute_with()'s loop");
            std::vector<std::pair<std::string, int>> align;
            if (a.size() > 2) {
                auto strategy = [&](const Value &s) {
                    if (s.kind != Value::Enum || s.enum_kind != Value::Align)
                        fail(s.line, "compute_with()'s alignment must be a LoopAlignStrategy (" +
                                         cpp_words(align_words()) + "), not " + describe(s));
                    return s.enum_value;
                };
                if (a[2].kind == Value::List) {
                    for (auto &p : a[2].items) {
                        if (p.kind != Value::List || p.items.size() != 2)
                            fail(p.line, "compute_with()'s alignments are {loop, LoopAlignStrategy::X} pairs");
                        align.push_back(
                            {loop_name(p.items[0], ds, "compute_with()'s aligned loop"), strategy(p.items[1])});
                    }
                } else {
                    align.push_back({v, strategy(a[2])});
                }
            }
            Directive &d = emit(Directive::ComputeWith, r, line);
            fusions_.push_back({out_.size() - 1, line});
            d.names = {parent.func, v};
            d.rvars = {false, rvar(v)};
            d.exprs = {Expr(parent.stage)};
            for (auto &[n, s] : align) {
                d.names.push_back(n);
                d.rvars.push_back(rvar(n));
                d.exprs.push_back(Expr(s));
            }
            return;
        }
        unknown_call(r, name, line);
    }

    static std::string fresh_inner(const std::vector<Dim> &ds, const std::string &base) {
        // As Func.cpp's: base, then base1, base2, ... until no loop has the name.
        std::string n = base;
        for (int k = 1;; k++) {
            bool clash = false;
            for (auto &d : ds) clash |= d.var == n;
            if (!clash) return n;
            n = base + std::to_string(k);
        }
    }

    /** compute_at / store_at: the loop, among every loop the consumer's stages have at the end;
        compute_with: the loops, among those the stage has at the end. */
    void resolve_levels() {
        for (auto &[i, line] : fusions_) {
            const Directive &d = out_[i];
            StageRef r;
            r.func = d.func;
            r.stage = d.stage;
            const std::vector<Dim> &ds = loops(r);
            for (size_t k = 1; k < d.names.size(); k++) {
                bool found = false;
                for (auto &dim : ds) found |= dim.var == d.names[k];
                if (!found)
                    fail(line, where(r) + ".compute_with(" + d.names[0] + ", " + d.names[1] + "): no loop " +
                                   quoted(d.names[k]) + "; the loops are (outermost first): " + loops_list(ds));
            }
        }
        for (auto &l : levels_) {
            Directive &d = out_[l.call];
            const std::string &g = d.names[0];
            std::vector<Dim> all;
            const FuncScheduleValue &gv = func_value(g);
            for (size_t k = 0; k < gv.stages.size(); k++) {
                StageRef s;
                s.func = g;
                s.stage = (int)k;
                for (auto &dim : loops(s)) all.push_back(dim);
                int n = specs_.count({g, (int)k}) ? specs_[{g, (int)k}] : 0;
                for (s.spec = 0; s.spec < n; s.spec++)
                    for (auto &dim : loops(s)) all.push_back(dim);
            }
            std::string call = d.op == Directive::ComputeAt ? "compute_at"
                               : d.op == Directive::StoreAt ? "store_at"
                                                            : "hoist_storage";
            std::string n = d.names[1];
            if (n.empty()) {
                Value v;
                v.kind = Value::Name;
                v.ident = l.ident;
                v.line = l.line;
                n = loop_name(v, all, call + "()'s loop");
            }
            bool found = false;
            for (auto &dim : all) found |= dim.var == n;
            std::vector<std::string> names;
            for (auto &dim : all)
                if (std::find(names.begin(), names.end(), dim.var) == names.end()) names.push_back(dim.var);
            if (!found)
                fail(l.line, "Func " + quoted(d.func) + "." + call + "(" + g + ", " + n + "): Func " + quoted(g) +
                                 " has no loop " + quoted(n) +
                                 " (its loops: " + (names.empty() ? "none" : join(names)) + ")");
            d.names[1] = n;
        }
    }
};

}  // namespace

std::vector<Directive> parse_schedule_source(const std::string &text, const PipelineSchedule &current,
                                             const std::map<std::string, Expr> &params, std::vector<int> *lines) {
    Parser p(text, current, params);
    return p.run(lines);
}

}  // namespace internal
}  // namespace weft
