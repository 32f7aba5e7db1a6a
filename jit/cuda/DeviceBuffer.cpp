// Host/device copies of a Buffer. This build has no CUDA runtime yet: a buffer never gets a
// device copy, so copy_to_host is a no-op and copy_to_device reports that no device exists.
#include "weft/Buffer.h"
#include "weft/Pipeline.h"

namespace weft {
namespace internal {

void buffer_copy_to_device(BufferContents &b) {
    if (!cuda_available())
        throw Error("weft: copy_to_device() of Buffer \"" + b.name + "\": no CUDA driver or device on this machine");
    throw Error("weft: copy_to_device(): the CUDA runtime is not part of this build yet");
}

void buffer_copy_to_host(BufferContents &b) {
    // Only a device copy newer than the host's needs work; without a device there is none.
    b.device_dirty = false;
}

}  // namespace internal
}  // namespace weft
