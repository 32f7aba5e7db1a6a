// weft public API: deferred calls. Separately built pipelines chained lazily and compiled as one.
#pragma once
#include <cstring>
#include <type_traits>
#include "weft/Pipeline.h"

namespace weft {

namespace internal {
struct LazyNode;
/** One argument of a deferred call: a value (computed or not yet) or a scalar. */
struct LazyArg {
    std::shared_ptr<LazyNode> node;  // a value: a Buffer's leaf node, or a deferred call
    int index = 0;                   // which output of a deferred call
    bool scalar = false;
    Type type;
    unsigned char bytes[8] = {};
};
std::shared_ptr<LazyNode> leaf_node(const Buffer<void> &b);
}  // namespace internal

/** A value whose element type and shape are known but whose data may not be computed yet:
    the result of Callable::defer(), or a Buffer. Nothing runs until realize() asks for a
    result; then every deferred call it depends on becomes part of one pipeline (each
    consumer's ImageParam replaced by its producer's Func over the producer's output shape),
    fused, compiled once per chain structure and shapes, and cached. The result is the same,
    bit for bit, as making the calls one by one. A LazyBuffer is a value: copies share it, it
    never changes, and realizing it twice computes it twice (Buffers it reads are read at
    each realize). */
class LazyBuffer {
public:
    LazyBuffer() = default;
    /** A value with data: the buffer itself (kept alive by the value). */
    LazyBuffer(const Buffer<void> &b) : node_(internal::leaf_node(b)) {}
    LazyBuffer(std::shared_ptr<internal::LazyNode> n, int index) : node_(std::move(n)), index_(index) {}
    bool defined() const { return (bool)node_; }
    Type type() const;
    int dimensions() const;
    /** Extents per dimension (the mins of a deferred call's result are 0). */
    std::vector<int> sizes() const;
    /** Is this a Buffer (data present) rather than the result of a deferred call? */
    bool is_buffer() const;
    /** Computes the value: the whole chain behind it as one pipeline. A value that wraps a
        Buffer gives that Buffer. */
    Realization realize() const;
    /** Computes the value into `out`, which must have its type, its extents and mins 0. */
    void realize(const Buffer<void> &out) const;
    const std::shared_ptr<internal::LazyNode> &node() const { return node_; }
    int index() const { return index_; }

private:
    std::shared_ptr<internal::LazyNode> node_;
    int index_ = 0;
};

/** Computes several values in one pipeline: shared producers are computed once, and values
    that read the same inputs may share their passes over them. */
Realization realize(const std::vector<LazyBuffer> &values);
/** The same into existing buffers, one per value (types and extents as the values', mins 0). */
void realize(const std::vector<LazyBuffer> &values, const RealizationArg &outs);

namespace internal {
template <typename T>
LazyArg make_lazy_arg(T &&v) {
    using D = std::decay_t<T>;
    LazyArg a;
    if constexpr (std::is_same_v<D, LazyBuffer>) {
        a.node = v.node();
        a.index = v.index();
    } else if constexpr (std::is_base_of_v<Buffer<void>, D>) {
        a.node = leaf_node(v);
    } else {
        static_assert(std::is_arithmetic_v<D>, "weft::Callable::defer: arguments are LazyBuffers, Buffers or scalars");
        a.scalar = true;
        a.type = type_of<D>();
        std::memcpy(a.bytes, &v, sizeof(D));
    }
    return a;
}
}  // namespace internal

template <typename... Args>
LazyBuffer Callable::defer(const std::vector<int> &sizes, Args &&...args) const {
    std::vector<internal::LazyArg> a{internal::make_lazy_arg(std::forward<Args>(args))...};
    return defer_call({sizes}, std::move(a)).at(0);
}
template <typename... Args>
std::vector<LazyBuffer> Callable::defer_outputs(const std::vector<std::vector<int>> &sizes, Args &&...args) const {
    std::vector<internal::LazyArg> a{internal::make_lazy_arg(std::forward<Args>(args))...};
    return defer_call(sizes, std::move(a));
}

}  // namespace weft
