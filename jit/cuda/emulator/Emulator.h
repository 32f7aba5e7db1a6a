// The CPU emulation of a CUDA device (WEFT_CUDA_EMULATOR=1): a stand-in for the Driver API, for
// tests and development on machines without a GPU.
#pragma once
#include "cuda/CudaDriver.h"

namespace weft {
namespace internal {

/** Fills d with the emulation: every function the driver runtime calls (modules, launches,
    memory, events, errors) and an sm_90 device's limits. A module's image (cuModuleLoadData)
    is the C++ source codegen_cuda(f, true) makes, compiled by the host compiler
    ($WEFT_EMULATOR_CXX, else c++); its functions are the kernels' launchers. Blocks run one
    after another, each thread a fiber switching at __syncthreads(), so that a missing barrier
    shows in the results; shared memory starts as all-ones bytes (NaN). */
void install_emulated_driver(CudaDriver &d);

}  // namespace internal
}  // namespace weft
