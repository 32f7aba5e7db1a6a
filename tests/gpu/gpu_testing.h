// Internal helpers shared by the GPU tests and bench/gpu/gpu_check.cpp: lowering a GpuCase for
// CUDA as Pipeline's compile() does, compiling it with NVRTC, and comparing a device result
// with the interpreter's.
#pragma once
#include <cmath>
#include <map>
#include <string>
#include "cuda/CudaPipeline.h"
#include "gpu/gpu_pipelines.h"
#include "interp/Interpreter.h"
#include "pipeline/PipelineInternal.h"
#include "lower/Env.h"
#include "lower/Lower.h"

namespace weft_gpu_test {

/** The shape of b as the constants "<name>.min.<d>", ".extent.<d>", ".stride.<d>". */
inline void add_buffer_consts(std::map<std::string, Expr> &m, const std::string &name,
                              const internal::BufferContents &b) {
    for (int d = 0; d < b.dims; d++) {
        m[internal::buffer_field(name, "min", d)] = Expr(b.dim[d].min);
        m[internal::buffer_field(name, "extent", d)] = Expr(b.dim[d].extent);
        m[internal::buffer_field(name, "stride", d)] = Expr(b.dim[d].stride);
    }
}

/** Lowering options for a CUDA target (no device needed to lower). */
inline internal::LowerOptions cuda_lowering(std::string *log = nullptr) {
    internal::LowerOptions o;
    o.target = internal::cuda_target_without_device();
    o.log = log;
    return o;
}

/** Lowers a case for CUDA with its shapes (inputs', and an output of c.sizes) as constants. */
inline internal::LoweredFunc lower_case(const GpuCase &c, std::string *log = nullptr) {
    internal::Env env = internal::build_env({c.out.contents()}, false);
    std::map<std::string, Expr> consts;
    for (auto &in : env.inputs) {
        if (in.buffer) add_buffer_consts(consts, in.name, *in.buffer);
        else if (in.image && in.image->bound.defined()) add_buffer_consts(consts, in.name, *in.image->bound.contents());
    }
    Buffer<void> out(c.out.type(), c.sizes, "out");
    add_buffer_consts(consts, env.outputs[0], *out.contents());
    return internal::lower(env, consts, "weft_test_" + c.name, cuda_lowering(log));
}

/** A case lowered, turned into CUDA C and compiled by NVRTC for sm_90 (a cubin). */
struct Built {
    internal::LoweredFunc lf;
    internal::CudaProgram prog;
    internal::NvrtcOutput out;
};
inline Built build(const GpuCase &c) {
    Built b;
    b.lf = lower_case(c);
    b.prog = internal::codegen_cuda(b.lf);
    b.out = internal::compile_kernels(b.prog, "sm_90");  // as the runtime compiles them
    return b;
}

/** The largest difference between got and ref relative to max(1, |ref|) (1e30 for a NaN). */
inline double max_rel_diff(const Buffer<float> &got, const Buffer<float> &ref) {
    int64_t n = 1;
    for (int d = 0; d < ref.dimensions(); d++) n *= ref.dim(d).extent();
    const float *a = got.data(), *b = ref.data();
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = std::fabs((double)a[i] - (double)b[i]) / std::max(1.0, std::fabs((double)b[i]));
        if (!(d <= worst)) worst = std::isnan(d) ? 1e30 : d;
    }
    return worst;
}

/** Realizes c for target t and returns max_rel_diff from the unscheduled result: the
    interpreter's, or under the sanitizers the same unscheduled loops compiled by LLVM (the
    instrumented interpreter takes minutes on the 200^3 matmuls there; the compiled reference
    is itself checked against the interpreter by the CPU tests). */
inline double compare_with_interpreter(GpuCase &c, const Target &t) {
    Buffer<float> out = c.out.realize(c.sizes, t);
    Buffer<float> ref(c.sizes);
#if defined(__SANITIZE_ADDRESS__)
    internal::compiled_reference(Pipeline(c.out), {ref});
#else
    internal::interpret_pipeline(Pipeline(c.out), {ref});
#endif
    return max_rel_diff(out, ref);
}

}  // namespace weft_gpu_test
