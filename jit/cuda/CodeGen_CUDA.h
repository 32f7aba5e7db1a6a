// The CUDA backend's code generator: the kernels split_host_device() found -> CUDA C source
// (one extern "C" __global__ function per kernel), or host C++ for the CPU emulation of a device.
#pragma once
#include <string>
#include "cuda/SplitHostDevice.h"

namespace weft {
namespace internal {

/** The source of p's kernels (and sets each kernel's shared_bytes). Throws weft::Error for IR
    the backend cannot express. With emulate, it is host C++ for the CPU emulation of a device
    (cuda/emulator/Emulator.h): the same kernels, each thread nest run as loops over threadIdx,
    plus for each kernel an extern "C" void weft_emu_<kernel>(void **args, unsigned gx,
    unsigned gy, unsigned gz) that runs the grid. */
std::string cuda_source(CudaProgram &p, bool emulate = false);

/** split_host_device(f) with its source. */
CudaProgram codegen_cuda(const LoweredFunc &f, bool emulate = false);

}  // namespace internal
}  // namespace weft
