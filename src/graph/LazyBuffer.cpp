// LazyBuffer and Callable::defer (weft/Lazy.h): deferred calls, checked when made.
#include "graph/Lazy.h"
#include "lang/Function.h"

namespace weft {
namespace internal {

std::shared_ptr<LazyNode> leaf_node(const Buffer<void> &b) {
    if (!b.defined()) throw Error("weft: a LazyBuffer made from an undefined (default-constructed) Buffer");
    auto n = std::make_shared<LazyNode>();
    n->leaf = b;
    return n;
}

namespace {

std::string part_name(const PipelineContents &p) {
    std::string s;
    for (auto &f : pipeline_outputs(p)) s += (s.empty() ? "" : ", ") + f->name;
    return "part \"" + s + "\"";
}

std::string shape_text(Type t, const std::vector<int> &sizes) {
    std::string s = t.str() + " of ";
    for (size_t d = 0; d < sizes.size(); d++) s += (d ? "x" : "") + std::to_string(sizes[d]);
    if (sizes.empty()) s += "0 dimensions";
    return s;
}

const LazyNode &node_of(const LazyBuffer &v, const char *what) {
    if (!v.defined()) throw Error(std::string("weft: ") + what + " of an undefined (default-constructed) LazyBuffer");
    return *v.node();
}

/** The value's source for messages: "the output of part \"blur\"" or "a Buffer". */
std::string source_of(const LazyArg &a) {
    if (a.node->leaf.defined()) return "Buffer \"" + a.node->leaf.name() + "\"";
    return "the output of " + a.node->part + (a.node->types.size() > 1 ? " #" + std::to_string(a.index) : "");
}

}  // namespace
}  // namespace internal

using namespace internal;

Type LazyBuffer::type() const {
    const LazyNode &n = node_of(*this, "type()");
    return n.leaf.defined() ? n.leaf.type() : n.types.at(index_);
}
int LazyBuffer::dimensions() const {
    const LazyNode &n = node_of(*this, "dimensions()");
    return n.leaf.defined() ? n.leaf.dimensions() : (int)n.sizes.at(index_).size();
}
std::vector<int> LazyBuffer::sizes() const {
    const LazyNode &n = node_of(*this, "sizes()");
    if (!n.leaf.defined()) return n.sizes.at(index_);
    std::vector<int> s;
    for (int d = 0; d < n.leaf.dimensions(); d++) s.push_back(n.leaf.dim(d).extent());
    return s;
}
bool LazyBuffer::is_buffer() const { return node_of(*this, "is_buffer()").leaf.defined(); }

Realization LazyBuffer::realize() const { return weft::realize(std::vector<LazyBuffer>{*this}); }
void LazyBuffer::realize(const Buffer<void> &out) const { weft::realize(std::vector<LazyBuffer>{*this}, RealizationArg(out)); }

Realization realize(const std::vector<LazyBuffer> &values) {
    std::vector<Buffer<void>> outs;
    for (auto &v : values) {
        const LazyNode &n = node_of(v, "realize()");
        outs.push_back(n.leaf.defined() ? n.leaf : Buffer<void>(v.type(), v.sizes(), pipeline_outputs(*n.call->pipeline).at(v.index())->name));
    }
    std::vector<LazyBuffer> deferred;
    std::vector<Buffer<void>> into;
    for (size_t i = 0; i < values.size(); i++)
        if (!values[i].is_buffer()) {
            deferred.push_back(values[i]);
            into.push_back(outs[i]);
        }
    if (!deferred.empty()) realize_chain(deferred, into);
    return Realization(outs);
}

void realize(const std::vector<LazyBuffer> &values, const RealizationArg &arg) {
    const auto &outs = arg.bufs;
    if (outs.size() != values.size())
        throw Error("weft: realize(): " + std::to_string(values.size()) + " values but " + std::to_string(outs.size()) +
                    " output buffers");
    std::vector<LazyBuffer> deferred;
    std::vector<Buffer<void>> into;
    for (size_t i = 0; i < values.size(); i++) {
        node_of(values[i], "realize()");
        if (!outs[i].defined()) throw Error("weft: realize(): output buffer " + std::to_string(i) + " is undefined");
        Type t = values[i].type();
        std::vector<int> sz = values[i].sizes();
        bool fits = outs[i].type() == t && outs[i].dimensions() == (int)sz.size();
        for (int d = 0; fits && d < (int)sz.size(); d++) fits = outs[i].dim(d).extent() == sz[d] && outs[i].dim(d).min() == 0;
        if (!fits) {
            std::vector<int> got;
            for (int d = 0; d < outs[i].dimensions(); d++) got.push_back(outs[i].dim(d).extent());
            throw Error("weft: realize(): value " + std::to_string(i) + " is " + shape_text(t, sz) +
                        " (mins 0), but output buffer \"" + outs[i].name() + "\" is " + shape_text(outs[i].type(), got) +
                        " (mins as they are)");
        }
        if (values[i].is_buffer()) {
            // Already computed: copied.
            const Buffer<void> &src = values[i].node()->leaf;
            if (src.contents() == outs[i].contents()) continue;
            std::vector<Var> vs(sz.size());
            std::vector<Expr> es(vs.begin(), vs.end());
            Func copy("copy_of_" + src.name());
            copy(vs) = buffer_call(src.contents(), es);
            copy.realize(outs[i]);
            continue;
        }
        deferred.push_back(values[i]);
        into.push_back(outs[i]);
    }
    if (!deferred.empty()) realize_chain(deferred, into);
}

std::vector<LazyBuffer> Callable::defer_call(const std::vector<std::vector<int>> &sizes, std::vector<LazyArg> args) const {
    if (!c_) throw Error("weft: defer() of an empty Callable");
    const auto &decl = c_->args;
    const auto &fouts = pipeline_outputs(*c_->pipeline);
    auto n = std::make_shared<LazyNode>();
    n->part = part_name(*c_->pipeline);
    if (args.size() != decl.size()) {
        std::string names;
        for (auto &a : decl) names += (names.empty() ? "" : ", ") + a.name();
        throw Error("weft: defer() of " + n->part + ": it takes " + std::to_string(decl.size()) + " arguments (" + names +
                    "), without the output buffers; " + std::to_string(args.size()) + " were given");
    }
    if (sizes.size() != fouts.size())
        throw Error("weft: defer() of " + n->part + ": it has " + std::to_string(fouts.size()) + " outputs, but sizes for " +
                    std::to_string(sizes.size()) + " were given");
    for (size_t j = 0; j < fouts.size(); j++) {
        const FunctionContents &f = *fouts[j];
        if (!f.defined) throw Error("weft: defer() of " + n->part + ": Func \"" + f.name + "\" has no definition");
        if (!f.types.empty())
            throw Error("weft: defer() of " + n->part + ": Func \"" + f.name + "\" is defined with a Tuple; deferred calls "
                        "take outputs of one value (call it eagerly, or make an output Func per value)");
        if (sizes[j].size() != f.args.size())
            throw Error("weft: defer() of " + n->part + ": Func \"" + f.name + "\" has " + std::to_string(f.args.size()) +
                        " dimensions but " + std::to_string(sizes[j].size()) + " sizes were given");
        for (size_t d = 0; d < sizes[j].size(); d++)
            if (sizes[j][d] < 0)
                throw Error("weft: defer() of " + n->part + ": negative size " + std::to_string(sizes[j][d]) +
                            " for dimension " + std::to_string(d) + " of Func \"" + f.name + "\"");
        n->types.push_back(f.type);
    }
    for (size_t k = 0; k < decl.size(); k++) {
        const LazyArg &a = args[k];
        const std::string where = "defer() of " + n->part + ": argument " + std::to_string(k) + " (\"" + decl[k].name() + "\")";
        if (decl[k].image()) {
            const ImageParamContents &img = *decl[k].image();
            if (a.scalar)
                throw Error("weft: " + where + " must be a LazyBuffer or Buffer for ImageParam \"" + img.name +
                            "\", got a scalar of type " + a.type.str());
            if (!a.node) throw Error("weft: " + where + " is an undefined (default-constructed) LazyBuffer");
            LazyBuffer v(a.node, a.index);
            if (v.type() != img.type || v.dimensions() != img.dims)
                throw Error("weft: " + where + ": ImageParam \"" + img.name + "\" of " + n->part + " is " + img.type.str() +
                            " with " + std::to_string(img.dims) + " dimensions, but it is given " + source_of(a) + ", " +
                            shape_text(v.type(), v.sizes()));
        } else {
            const ParamContents &p = *decl[k].param();
            if (!a.scalar) throw Error("weft: " + where + " must be a scalar of type " + p.type.str() + ", got a buffer");
            if (a.type != p.type)
                throw Error("weft: " + where + ": Param \"" + p.name + "\" is " + p.type.str() + ", got " + a.type.str());
        }
    }
    n->call = c_;
    n->args = std::move(args);
    n->sizes = sizes;
    std::vector<LazyBuffer> r;
    for (size_t j = 0; j < fouts.size(); j++) r.emplace_back(n, (int)j);
    return r;
}

}  // namespace weft
