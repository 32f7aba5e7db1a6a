// weft public API: Buffer<T>.
#pragma once
#include <array>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <map>
#include <tuple>
#include <utility>
#include "weft/Expr.h"

namespace weft {

constexpr int kMaxDims = 8;

class Func;
namespace internal {
struct FunctionContents;
/** The type-erased state behind every Buffer: shared by copies of a Buffer. */
struct BufferContents {
    Type type;
    int dims = 0;
    struct Dim {
        int32_t min = 0, extent = 0, stride = 0;
    } dim[kMaxDims];
    void *host = nullptr;
    std::shared_ptr<void> storage;  // owned memory, if any
    std::string name;
    // The device copy (GPU targets): which copy is current. Managed by the CUDA runtime.
    uint64_t device = 0;                   // device pointer, 0 if none
    std::shared_ptr<void> device_storage;  // frees the device allocation
    bool host_dirty = false;               // host copy newer than the device copy
    bool device_dirty = false;             // device copy newer than the host copy
    /** Wrapper Funcs made by in(): key null = for every consumer. */
    std::map<const FunctionContents *, std::shared_ptr<FunctionContents>> wrappers;
    ChangeCount wrapper_changes;  // bumped when in() adds a wrapper
    size_t size_in_bytes() const;
    /** Largest and smallest byte offsets touched, from host. */
    int64_t num_elements() const;
};
std::shared_ptr<BufferContents> make_buffer(Type t, const std::vector<int> &extents, void *data,
                                            const std::string &name);
Expr buffer_call(const std::shared_ptr<BufferContents> &b, std::vector<Expr> args);
[[noreturn]] void buffer_error(const std::string &msg);
/** A view of b's memory: dimension d restricted to [min, min + extent) (crop), or fixed at
    position min and removed (slice). Shares (and keeps alive) b's storage. */
std::shared_ptr<BufferContents> buffer_view(BufferContents &b, int d, int min, int extent, bool slice);
/** The same, made in b itself (every handle to b sees it); b's device copy is dropped. */
void buffer_view_in_place(BufferContents &b, int d, int min, int extent, bool slice);
/** A dense copy of b's elements (same mins and extents). */
std::shared_ptr<BufferContents> buffer_copy(BufferContents &b);
/** Calls f with the coordinates of every element of b in turn (dimension 0 fastest). */
template <typename F>
void for_each_position(const BufferContents &b, F &&f) {
    int pos[kMaxDims] = {};
    for (int d = 0; d < b.dims; d++) {
        if (b.dim[d].extent <= 0) return;
        pos[d] = b.dim[d].min;
    }
    while (true) {
        f((const int *)pos);
        int d = 0;
        for (; d < b.dims; d++) {
            if (++pos[d] < b.dim[d].min + b.dim[d].extent) break;
            pos[d] = b.dim[d].min;
        }
        if (d == b.dims) return;
    }
}
template <typename F, size_t... I>
constexpr bool invocable_with_ints(std::index_sequence<I...>) {
    return std::is_invocable_v<F, decltype((void)I, int())...>;
}
template <typename F, size_t... I>
void call_with_ints(F &f, const int *pos, std::index_sequence<I...>) {
    f(pos[I]...);
}
/** f's arity as a function of ints (0 where it takes none of 1..8 ints). */
template <typename F, size_t N = 1>
constexpr size_t int_arity() {
    if constexpr (N > (size_t)kMaxDims) return 0;
    else if constexpr (invocable_with_ints<F>(std::make_index_sequence<N>())) return N;
    else return int_arity<F, N + 1>();
}
/** Copies between host and device (GPU builds); throw Error where no CUDA device exists. */
void buffer_copy_to_device(BufferContents &b);
void buffer_copy_to_host(BufferContents &b);
void buffer_device_sync(BufferContents &b);
}  // namespace internal

template <typename T = void>
class Buffer;

/** One dimension of a buffer. */
class Dimension {
public:
    explicit Dimension(const internal::BufferContents::Dim &d) : d_(d) {}
    int min() const { return d_.min; }
    int extent() const { return d_.extent; }
    int stride() const { return d_.stride; }
    int max() const { return d_.min + d_.extent - 1; }

private:
    internal::BufferContents::Dim d_;
};

/** An untyped buffer; Buffer<T> adds typed element access. */
template <>
class Buffer<void> {
public:
    Buffer() = default;
    Buffer(Type t, const std::vector<int> &extents, const std::string &name = "")
        : contents_(internal::make_buffer(t, extents, nullptr, name)) {}
    explicit Buffer(std::shared_ptr<internal::BufferContents> c) : contents_(std::move(c)) {}
    bool defined() const { return (bool)contents_; }
    Type type() const { return get().type; }
    int dimensions() const { return get().dims; }
    Dimension dim(int i) const {
        if (i < 0 || i >= get().dims)
            internal::buffer_error("Buffer \"" + get().name + "\" has " + std::to_string(get().dims) +
                                   " dimensions; dimension " + std::to_string(i) + " does not exist");
        return Dimension(get().dim[i]);
    }
    /** dim(i).min() / extent() / stride() (Halide's Runtime::Buffer spellings). */
    int min(int i) const { return dim(i).min(); }
    int extent(int i) const { return dim(i).extent(); }
    int stride(int i) const { return dim(i).stride(); }
    /** The first and last coordinates of dimensions 0 and 1. */
    int left() const { return dim(0).min(); }
    int right() const { return dim(0).max(); }
    int top() const { return dim(1).min(); }
    int bottom() const { return dim(1).max(); }
    /** The number of elements (the product of the extents). */
    int64_t number_of_elements() const { return get().num_elements(); }
    /** Does the buffer hold this coordinate in every dimension? */
    bool contains(const std::vector<int> &pos) const {
        if ((int)pos.size() != dimensions()) return false;
        for (int d = 0; d < dimensions(); d++)
            if (pos[d] < min(d) || pos[d] > dim(d).max()) return false;
        return true;
    }
    /** A view of the same memory restricted to [min, min + extent) in dimension d: writes
        through either are seen by both (Halide's cropped). An Error where the range is not
        inside the buffer. The view is of the host copy (a newer device copy is copied back
        first); it has no device copy of its own. */
    Buffer<void> cropped(int d, int min, int extent) const {
        return Buffer<void>(internal::buffer_view(get(), d, min, extent, false));
    }
    /** The view of the elements whose coordinate in dimension d is pos, without dimension d
        (Halide's sliced). */
    Buffer<void> sliced(int d, int pos) const { return Buffer<void>(internal::buffer_view(get(), d, pos, 1, true)); }
    /** In place: this buffer (seen by every copy of this handle, as in Halide) becomes the
        cropped / sliced view. A device copy is copied back first, then dropped. */
    void crop(int d, int min, int extent) { internal::buffer_view_in_place(get(), d, min, extent, false); }
    void slice(int d, int pos) { internal::buffer_view_in_place(get(), d, pos, 1, true); }
    /** A new dense buffer with the same mins, extents and elements. */
    Buffer<void> copy() const { return Buffer<void>(internal::buffer_copy(get())); }
    /** Calls f for every element's coordinates (dimension 0 fastest): f(x, y, ...) with one
        int per dimension, or f(const int *pos). An Error where f takes another number of ints. */
    template <typename F>
    void for_each_element(F &&f) const {
        using Fn = std::remove_reference_t<F>;
        if constexpr (std::is_invocable_v<Fn &, const int *>) {
            internal::for_each_position(get(), f);
        } else {
            constexpr size_t n = internal::int_arity<Fn &>();
            static_assert(n > 0, "weft: for_each_element takes f(const int *) or f(int, ...) with one int per dimension");
            if ((int)n != dimensions())
                internal::buffer_error("Buffer \"" + name() + "\" has " + std::to_string(dimensions()) +
                                       " dimensions; for_each_element was given a function of " + std::to_string(n) +
                                       " coordinates");
            internal::for_each_position(get(), [&](const int *pos) {
                internal::call_with_ints(f, pos, std::make_index_sequence<n>());
            });
        }
    }
    int width() const { return dimensions() > 0 ? dim(0).extent() : 1; }
    int height() const { return dimensions() > 1 ? dim(1).extent() : 1; }
    int channels() const { return dimensions() > 2 ? dim(2).extent() : 1; }
    void *raw_data() const { return get().host; }
    const std::string &name() const { return get().name; }
    const std::shared_ptr<internal::BufferContents> &contents() const { return contents_; }
    /** A wrapper Func that consumers read instead of this buffer (in(g): only g). */
    Func in() const;
    Func in(const Func &consumer) const;
    /** GPU: makes the device copy current (allocating it if needed). */
    void copy_to_device() { internal::buffer_copy_to_device(get()); }
    /** GPU: makes the host copy current. */
    void copy_to_host() { internal::buffer_copy_to_host(get()); }
    /** GPU: waits until the kernels launched so far have finished (CUDA calls return while
        their kernels run), without copying; a kernel's failure is thrown here as an Error.
        Nothing to do for a buffer that has no device copy. */
    void device_sync() { internal::buffer_device_sync(get()); }
    /** Marks the host copy as modified (after writing through data()). */
    void set_host_dirty(bool d = true) { get().host_dirty = d; }
    bool host_dirty() const { return get().host_dirty; }
    bool device_dirty() const { return get().device_dirty; }
    bool has_device_allocation() const { return get().device != 0; }
    void set_min(const std::vector<int> &mins) {
        if ((int)mins.size() > dimensions())
            internal::buffer_error("Buffer \"" + name() + "\": set_min given " + std::to_string(mins.size()) +
                                   " values for " + std::to_string(dimensions()) + " dimensions");
        for (size_t i = 0; i < mins.size(); i++)  // coordinates are 32-bit, and so is the end of a loop over them
            if ((int64_t)mins[i] + get().dim[i].extent > INT32_MAX)
                internal::buffer_error("Buffer \"" + name() + "\": set_min(" + std::to_string(mins[i]) + ") in dimension " +
                                       std::to_string(i) + ": min + extent = " +
                                       std::to_string((int64_t)mins[i] + get().dim[i].extent) +
                                       " is past the largest 32-bit integer");
        for (size_t i = 0; i < mins.size(); i++) get().dim[i].min = mins[i];
    }

protected:
    std::shared_ptr<internal::BufferContents> contents_;
    /** The contents; an Error for an undefined (default-constructed) Buffer. */
    internal::BufferContents &get() const {
        if (!contents_)
            internal::buffer_error("this Buffer is undefined (default-constructed): construct it with extents, or assign "
                                   "one, before using it");
        return *contents_;
    }
};

/** A buffer of elements of type T. Dimension 0 is innermost. */
template <typename T>
class Buffer : public Buffer<void> {
public:
    Buffer() = default;
    /** Owns new zero-filled memory of the given extents. */
    explicit Buffer(const std::vector<int> &extents, const std::string &name = "")
        : Buffer<void>(type_of<T>(), extents, name) {}
    template <typename... Ints, typename = std::enable_if_t<(std::is_integral_v<Ints> && ...)>>
    explicit Buffer(int e0, Ints... rest) : Buffer(std::vector<int>{e0, (int)rest...}) {}
    /** Owns new zero-filled memory, named: Buffer<uint8_t> b(w, h, "input") (Halide's form). */
    Buffer(int e0, const std::string &name) : Buffer(std::vector<int>{e0}, name) {}
    Buffer(int e0, int e1, const std::string &name) : Buffer(std::vector<int>{e0, e1}, name) {}
    Buffer(int e0, int e1, int e2, const std::string &name) : Buffer(std::vector<int>{e0, e1, e2}, name) {}
    Buffer(int e0, int e1, int e2, int e3, const std::string &name) : Buffer(std::vector<int>{e0, e1, e2, e3}, name) {}
    /** Owns new zero-filled memory: Buffer<float> b({w, h}) (as Buffer<float> b(w, h)). */
    Buffer(std::initializer_list<int> extents, const std::string &name = "")
        : Buffer(std::vector<int>(extents), name) {}
    /** Wraps memory it does not own: Buffer<float> b(data, w, h) (Halide's spelling). */
    template <typename... Ints, typename = std::enable_if_t<(std::is_integral_v<Ints> && ...)>>
    Buffer(T *data, int e0, Ints... rest) : Buffer(data, std::vector<int>{e0, (int)rest...}) {}
    /** Wraps memory it does not own (dense, dimension 0 innermost); data must not be null. */
    Buffer(T *data, const std::vector<int> &extents, const std::string &name = "")
        : Buffer<void>(internal::make_buffer(type_of<T>(), extents, checked(data, name), name)) {}
    /** data, or an Error where it is null (make_buffer would allocate instead: not what was asked). */
    static T *checked(T *data, const std::string &name) {
        if (!data) internal::buffer_error("Buffer" + (name.empty() ? std::string() : " \"" + name + "\"") +
                                          "(data, extents): data is a null pointer");
        return data;
    }
    /** From an untyped buffer: throws Error if the element type differs. */
    Buffer(const Buffer<void> &b) : Buffer<void>(b.contents()) {
        if (contents_ && contents_->type != type_of<T>())
            internal::buffer_error("cannot view a buffer of " + get().type.str() + " as Buffer<" +
                                   type_of<T>().str() + ">");
    }

    T *data() const {
        if (get().device_dirty) internal::buffer_copy_to_host(get());
        return static_cast<T *>(get().host);
    }
    void set_min(const std::vector<int> &mins) { Buffer<void>::set_min(mins); }
    template <typename... Ints>
    void set_min(int m0, Ints... rest) { Buffer<void>::set_min(std::vector<int>{m0, (int)rest...}); }

    /** Element access with integer coordinates (a reference). */
    template <typename... Ints, typename = std::enable_if_t<(std::is_integral_v<Ints> && ...)>>
    T &operator()(Ints... coords) const {
        int c[] = {0, (int)coords...};
        return at(c + 1, (int)sizeof...(Ints));
    }
    T &operator()(const std::vector<int> &c) const { return at(c.data(), (int)c.size()); }
    /** Element access with Exprs, inside definitions. */
    template <typename... Es, typename = std::enable_if_t<!(std::is_integral_v<Es> && ...)>, typename = void>
    Expr operator()(Es... coords) const {
        return internal::buffer_call(contents_, std::vector<Expr>{Expr(coords)...});
    }
    Expr operator()(const std::vector<Expr> &c) const { return internal::buffer_call(contents_, c); }

    Buffer<T> cropped(int d, int min, int extent) const { return Buffer<T>(Buffer<void>::cropped(d, min, extent)); }
    Buffer<T> sliced(int d, int pos) const { return Buffer<T>(Buffer<void>::sliced(d, pos)); }
    Buffer<T> copy() const { return Buffer<T>(Buffer<void>::copy()); }
    /** Calls f(T &value) for every element (dimension 0 fastest); with more buffers of the same
        shape, f(T &, U &, ...) with the elements at the same coordinates (an Error where their
        shapes differ). */
    template <typename F, typename... Others>
    void for_each_value(F &&f, const Others &...others) const {
        const Buffer<void> *list[] = {nullptr, static_cast<const Buffer<void> *>(&others)...};
        for (size_t k = 1; k < sizeof...(Others) + 1; k++) {
            const Buffer<void> *o = list[k];
            if (!o->defined() || o->dimensions() != dimensions())
                internal::buffer_error("for_each_value: Buffer \"" + name() + "\" and the other buffers must have the "
                                       "same dimensions");
            for (int d = 0; d < dimensions(); d++)
                if (o->min(d) != min(d) || o->extent(d) != extent(d))
                    internal::buffer_error("for_each_value: Buffer \"" + o->name() + "\" dimension " + std::to_string(d) +
                                           " is [" + std::to_string(o->min(d)) + ", " + std::to_string(o->dim(d).max()) +
                                           "], Buffer \"" + name() + "\"'s is [" + std::to_string(min(d)) + ", " +
                                           std::to_string(dim(d).max()) + "]");
        }
        T *base = data();
        auto bases = std::make_tuple(others.data()...);
        const auto &c = get();
        internal::for_each_position(c, [&](const int *pos) {
            std::apply([&](auto *...ob) { f(base[offset_of(c, pos)], ob[offset_of(*others.contents(), pos)]...); },
                       bases);
        });
    }
    /** Fills every element with v. */
    void fill(T v) {
        for_each_offset([&](int64_t off) { data()[off] = v; });
    }
    template <typename F>
    void for_each_offset(F &&f) const {
        const auto &c = get();
        int64_t n = c.num_elements();
        for (int64_t i = 0; i < n; i++) {
            int64_t rem = i, off = 0;
            for (int d = 0; d < c.dims; d++) {
                off += (rem % c.dim[d].extent) * (int64_t)c.dim[d].stride;
                rem /= c.dim[d].extent;
            }
            f(off);
        }
    }

private:
    static int64_t offset_of(const internal::BufferContents &b, const int *pos) {
        int64_t off = 0;
        for (int d = 0; d < b.dims; d++) off += (int64_t)(pos[d] - b.dim[d].min) * b.dim[d].stride;
        return off;
    }
    T &at(const int *c, int n) const {
        auto &b = get();
        if (b.device_dirty) internal::buffer_copy_to_host(b);
        if (b.device) b.host_dirty = true;  // the reference may be written through
        if (n != b.dims)
            internal::buffer_error("Buffer \"" + b.name + "\" has " + std::to_string(b.dims) +
                                   " dimensions, accessed with " + std::to_string(n) + " coordinates");
        int64_t off = 0;
        for (int i = 0; i < n; i++) {
            int v = c[i] - b.dim[i].min;
            if (v < 0 || v >= b.dim[i].extent)
                internal::buffer_error("Buffer \"" + b.name + "\" dimension " + std::to_string(i) + ": coordinate " +
                                       std::to_string(c[i]) + " is outside [" + std::to_string(b.dim[i].min) + ", " +
                                       std::to_string(b.dim[i].min + b.dim[i].extent - 1) + "]");
            off += (int64_t)v * b.dim[i].stride;
        }
        return static_cast<T *>(b.host)[off];
    }
};

}  // namespace weft
