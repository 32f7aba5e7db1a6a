// Host/device copies of a Buffer through the CUDA driver (loaded with dlopen). A buffer's
// device copy has the host copy's layout; host_dirty / device_dirty say which one is newer.
#include "cuda/CudaRuntime.h"
#include "weft/Buffer.h"
#include "weft/Pipeline.h"

namespace weft {
namespace internal {

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
    int64_t n = 1;
    for (int i = 0; i < b.dims; i++) {
        if (b.dim[i].extent <= 0) {
            n = 0;
            break;
        }
        n += (int64_t)(b.dim[i].extent - 1) * std::abs((int64_t)b.dim[i].stride);
    }
    size_t bytes = (size_t)n * b.type.bytes();
    if (bytes && b.host)
        cuda_check(d.cuMemcpyDtoH(b.host, b.device, bytes),
                   "cuMemcpyDtoH(buffer \"" + b.name + "\"; kernels run asynchronously, so this may be the error of a kernel "
                   "that wrote it: WEFT_CUDA_SYNC=1 reports such errors at the call that launched it)");
    b.device_dirty = false;
}

void buffer_device_sync(BufferContents &b) {
    if (!b.device) return;
    cuda_check(cuda_driver().cuCtxSynchronize(),
               "device_sync() of buffer \"" + b.name + "\" (the error of a kernel launched earlier: WEFT_CUDA_SYNC=1 "
               "reports it at the call that launched it)");
}

}  // namespace internal
}  // namespace weft
