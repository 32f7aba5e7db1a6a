// The host code of a CUDA pipeline as a CPU function: split_host_device's host Stmt with each
// kernel launch, host stage, internal buffer and read of a buffer made a call to the CUDA
// runtime (device_call, weft_rt_device_call), compiled by the LLVM backend like any CPU code (or
// run by the interpreter in a build without LLVM). Its loops, lets, conditions and assertions are
// machine code: nothing of it is interpreted per call.
#pragma once
#include <string>
#include <vector>
#include "cuda/SplitHostDevice.h"

namespace weft {
namespace internal {

/** What a device_call asks of the CUDA runtime (CudaPipeline.cpp); args are Int(64) each. */
enum class CudaHostOp : int32_t {
    Launch = 1,     // index: kernel; args: grid x, y, z, then the kernel's scalar parameters' bits
    HostStage = 2,  // index: host stage; args: its scalar arguments' bits
    Alloc = 3,      // index: internal buffer; args: its element count (copies made where used)
    Free = 4,       // index: internal buffer
    Load = 5,       // index: buffer; args: element index; returns the element's bits (host copy)
};

struct CudaHostCode {
    /** f's arguments, then kDeviceArg (a Handle: the weft_device_t of the call). */
    LoweredFunc fn;
    struct Buffer {
        std::string name;
        Type type;     // element type
        int arg = -1;  // the pipeline's buffer: its index among f's buffer arguments; -1 internal
    };
    std::vector<Buffer> buffers;  // the pipeline's buffers first, in f's order
    /** Per kernel, per parameter: the buffer it is (index into buffers), -1 for a scalar. */
    std::vector<std::vector<int>> kernel_buffers;
    /** Per host stage, per argument of its fn: the buffer it is, -1 for a scalar. */
    std::vector<std::vector<int>> stage_buffers;
};
constexpr const char *kDeviceArg = "__weft_device";

/** The host code of p (split from f) as a CPU function. */
CudaHostCode make_host_code(const LoweredFunc &f, const CudaProgram &p);

}  // namespace internal
}  // namespace weft
