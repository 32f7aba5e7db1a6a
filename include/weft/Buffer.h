// weft public API: Buffer<T>.
#pragma once
#include <array>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <map>
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
