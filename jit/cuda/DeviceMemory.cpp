// Device memory: a Buffer's device copy (its host copy's layout; host_dirty / device_dirty say
// which copy is newer), and the pool of pipelines' internal device allocations.
#include <cstdlib>
#include <map>
#include <mutex>
#include "cuda/CudaDriver.h"
#include "weft/Pipeline.h"

namespace weft {
namespace internal {
int64_t span_elements(const BufferContents &b) {
    int64_t n = 1;
    for (int d = 0; d < b.dims; d++) {
        if (b.dim[d].extent <= 0) return 0;
        n += (int64_t)(b.dim[d].extent - 1) * std::abs((int64_t)b.dim[d].stride);
    }
    return n;
}

namespace {

size_t span_bytes(const BufferContents &b) { return (size_t)span_elements(b) * b.type.bytes(); }

const char *kAsyncNote = "; kernels run asynchronously, so this may be the error of a kernel that wrote it: "
                         "WEFT_CUDA_SYNC=1 reports such errors at the call that launched it";

}  // namespace

void ensure_device_copy(BufferContents &b, bool copy) {
    CudaDriver &d = cuda_driver();
    size_t bytes = span_bytes(b);
    if (!b.device) {
        CUdeviceptr_t p = 0;
        cuda_check(d.cuMemAlloc(&p, std::max<size_t>(bytes, 1)),
                   "cuMemAlloc(" + std::to_string(bytes) + " bytes for buffer \"" + b.name + "\")");
        b.device = p;
        b.device_storage = std::shared_ptr<void>((void *)(uintptr_t)p, [](void *q) {
            CudaDriver *dr = loaded_cuda_driver();
            if (!dr) return;
            dr->cuCtxSynchronize();  // a kernel still running may use it (launches are asynchronous)
            dr->cuMemFree((CUdeviceptr_t)(uintptr_t)q);
        });
        b.host_dirty = true;  // the new device copy holds nothing yet
    }
    if (copy && b.host_dirty && b.host && bytes)
        cuda_check(d.cuMemcpyHtoD(b.device, b.host, bytes), "cuMemcpyHtoD(buffer \"" + b.name + "\")");
    if (copy) b.host_dirty = false;
}

void buffer_copy_to_device(BufferContents &b) {
    if (!cuda_available())
        throw Error("weft: copy_to_device() of Buffer \"" + b.name + "\": no CUDA driver or device on this machine");
    if (b.device_dirty) return;  // the device copy is already the newest
    ensure_device_copy(b, true);
}

void buffer_copy_to_host(BufferContents &b) {
    if (!b.device_dirty || !b.device) {
        b.device_dirty = false;
        return;
    }
    CudaDriver &d = cuda_driver();
    size_t bytes = span_bytes(b);
    if (bytes && b.host)
        cuda_check(d.cuMemcpyDtoH(b.host, b.device, bytes), "cuMemcpyDtoH(buffer \"" + b.name + "\"" + kAsyncNote + ")");
    b.device_dirty = false;
}

void buffer_device_sync(BufferContents &b) {
    if (!b.device) return;
    cuda_check(cuda_driver().cuCtxSynchronize(),
               "device_sync() of buffer \"" + b.name + "\" (the error of a kernel launched earlier: WEFT_CUDA_SYNC=1 "
               "reports it at the call that launched it)");
}

// ---------------- the pool ----------------
namespace {

/** Sizes rounded up to one of 8 steps per power of two (at least 256 bytes), so that a block
    fits the next request of about the same size. */
size_t size_class(size_t bytes) {
    size_t n = std::max<size_t>(bytes, 256);
    int top = 63 - __builtin_clzll((unsigned long long)n);
    size_t step = (size_t)1 << (top >= 3 ? top - 3 : 0);
    return (n + step - 1) / step * step;
}

struct DevicePool {
    std::mutex mu;
    std::multimap<size_t, CUdeviceptr_t> free_blocks;  // by size class
    size_t free_bytes = 0;
    static constexpr size_t kMaxFreeBytes = size_t(1) << 30;

    /** Releases every free block to the driver (after the device has finished with them). */
    void trim_locked(CudaDriver &d) {
        if (free_blocks.empty()) return;
        d.cuCtxSynchronize();
        for (auto &fb : free_blocks) d.cuMemFree(fb.second);
        free_blocks.clear();
        free_bytes = 0;
    }
};
DevicePool &pool() {
    static DevicePool *p = new DevicePool;  // leaked: blocks may be given back during static destruction
    return *p;
}

}  // namespace

CUdeviceptr_t device_pool_alloc(size_t bytes, const std::string &what) {
    CudaDriver &d = cuda_driver();
    size_t cls = size_class(bytes);
    DevicePool &P = pool();
    std::lock_guard<std::mutex> lock(P.mu);
    auto it = P.free_blocks.find(cls);
    if (it != P.free_blocks.end()) {
        CUdeviceptr_t p = it->second;
        P.free_blocks.erase(it);
        P.free_bytes -= cls;
        return p;
    }
    CUdeviceptr_t p = 0;
    CUresult_t r = d.cuMemAlloc(&p, cls);
    if (r != 0 && !P.free_blocks.empty()) {
        P.trim_locked(d);
        r = d.cuMemAlloc(&p, cls);
    }
    cuda_check(r, "cuMemAlloc(" + std::to_string(bytes) + " bytes for " + what + ")");
    return p;
}

void device_pool_free(CUdeviceptr_t p, size_t bytes) {
    if (!p) return;
    CudaDriver *d = loaded_cuda_driver();
    if (!d) return;
    size_t cls = size_class(bytes);
    DevicePool &P = pool();
    std::lock_guard<std::mutex> lock(P.mu);
    P.free_blocks.emplace(cls, p);
    P.free_bytes += cls;
    if (P.free_bytes > DevicePool::kMaxFreeBytes) P.trim_locked(*d);
}

size_t device_pool_free_bytes() {
    DevicePool &P = pool();
    std::lock_guard<std::mutex> lock(P.mu);
    return P.free_bytes;
}

}  // namespace internal
}  // namespace weft
