// oneDNN 2.6 peer (libdnnl-dev; OpenMP runtime, threads: OMP_NUM_THREADS): 3×3 convolution +
// bias + ReLU (a post-op) for inference ("conv"), and the same with a residual tensor added
// after the ReLU (a second, binary post-op: "conv_add"). Source and destination stay in the benchmark's NHWC
// layout (oneDNN has AVX-512 kernels for it); the weights are given in their own layout and
// reordered once, outside the timed call, into the format oneDNN prefers (as an inference
// engine would).
#include <oneapi/dnnl/dnnl.hpp>

#include <unordered_map>

#include "bench_common.h"

namespace {

using namespace dnnl;

/** The weights in the format the primitive wants: reordered once (outside the timed calls),
    as an inference engine does, or the user's memory where it is that format already. */
memory weights_as(const memory::desc &want, memory user, engine &eng, stream &strm) {
    if (want == user.get_desc()) return user;
    memory m(want, eng);
    reorder(user, m).execute(strm, user, m);
    strm.wait();
    return m;
}

struct Conv : bench::Kernel {
    engine eng{engine::kind::cpu, 0};
    stream strm{eng};
    bench::AlignedBuf src, wts, bias, dst, res;
    memory src_m, wts_m, bias_m, dst_m, res_m;
    convolution_forward prim;
    bool residual;
    /** residual: "conv_add", a residual tensor added after the ReLU (a binary post-op, read
        from its own buffer: relu(conv + bias) + res). */
    explicit Conv(int S, bool add_residual = false) : residual(add_residual) {
        const int N = bench::kConvN, C = bench::kConvC, P = S + 2;
        src = bench::make_aligned_input((size_t)N * P * P * C, 1);
        wts = bench::make_aligned_input((size_t)C * 9 * C, 2);
        bias = bench::make_aligned_input((size_t)C, 3);
        dst = bench::AlignedBuf((size_t)N * S * S * C);
        using dt = memory::data_type;
        using tag = memory::format_tag;
        memory::desc src_md({N, C, P, P}, dt::f32, tag::nhwc);
        memory::desc dst_md({N, C, S, S}, dt::f32, tag::nhwc);
        memory::desc bias_md({C}, dt::f32, tag::x);
        // W(co, kx, ky, ci) with co innermost: dims {O, I, KH, KW}, strides o 1, i 9C, kh 3C, kw C.
        memory::desc user_wts_md({C, C, 3, 3}, dt::f32, memory::dims{1, 9 * C, 3 * C, C});
        memory::desc any_wts_md({C, C, 3, 3}, dt::f32, tag::any);
        convolution_forward::desc d(prop_kind::forward_inference, algorithm::convolution_direct, src_md, any_wts_md,
                                    bias_md, dst_md, {1, 1}, {0, 0}, {0, 0});
        post_ops ops;
        ops.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
        if (residual) {
            res = bench::make_aligned_input((size_t)N * S * S * C, 4);
            res_m = memory(dst_md, eng, res.data());
            ops.append_binary(algorithm::binary_add, dst_md);
        }
        primitive_attr attr;
        attr.set_post_ops(ops);
        convolution_forward::primitive_desc pd(d, attr, eng);
        std::fprintf(stderr, "onednn conv: %s\n", pd.impl_info_str());
        src_m = memory(src_md, eng, src.data());
        dst_m = memory(dst_md, eng, dst.data());
        bias_m = memory(bias_md, eng, bias.data());
        wts_m = weights_as(pd.weights_desc(), memory(user_wts_md, eng, wts.data()), eng, strm);
        prim = convolution_forward(pd);
    }
    void run() override {
        std::unordered_map<int, memory> args{
            {DNNL_ARG_SRC, src_m}, {DNNL_ARG_WEIGHTS, wts_m}, {DNNL_ARG_BIAS, bias_m}, {DNNL_ARG_DST, dst_m}};
        if (residual) args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1] = res_m;
        prim.execute(strm, args);
        strm.wait();
    }
    const float *out() const override { return dst.data(); }
    size_t out_size() const override { return dst.size(); }
};

/** A matmul C = A·W of n×n row-major matrices: source and destination in their own memory, the
    weights reordered once, outside the timed call, into the format oneDNN prefers. */
struct Matmul : bench::Kernel {
    engine eng{engine::kind::cpu, 0};
    stream strm{eng};
    memory a_m, w_m, c_m;
    matmul prim;
    void build(int n, memory::data_type a_t, memory::data_type w_t, memory::data_type c_t, void *a, void *w, void *c,
               const char *what) {
        using tag = memory::format_tag;
        memory::desc a_md({n, n}, a_t, tag::ab), c_md({n, n}, c_t, tag::ab);
        memory::desc user_w_md({n, n}, w_t, tag::ab), any_w_md({n, n}, w_t, tag::any);
        matmul::desc d(a_md, any_w_md, c_md);
        matmul::primitive_desc pd(d, eng);
        std::fprintf(stderr, "onednn %s: %s\n", what, pd.impl_info_str());
        a_m = memory(a_md, eng, a);
        c_m = memory(c_md, eng, c);
        w_m = weights_as(pd.weights_desc(), memory(user_w_md, eng, w), eng, strm);
        prim = matmul(pd);
    }
    void run() override {
        prim.execute(strm, {{DNNL_ARG_SRC, a_m}, {DNNL_ARG_WEIGHTS, w_m}, {DNNL_ARG_DST, c_m}});
        strm.wait();
    }
};

/** u8 x s8 -> s32 matmul (the int8 GEMM of inference). */
struct GemmU8S8 : Matmul {
    std::vector<uint8_t> a;
    std::vector<int8_t> w;
    std::vector<int32_t> c;
    mutable std::vector<float> as_float;
    explicit GemmU8S8(int n) : a((size_t)n * n), w((size_t)n * n), c((size_t)n * n) {
        for (int y = 0; y < n; y++)
            for (int k = 0; k < n; k++) a[(size_t)y * n + k] = bench::gemm_u8(y, k);
        for (int k = 0; k < n; k++)
            for (int x = 0; x < n; x++) w[(size_t)k * n + x] = bench::gemm_s8(x, k);
        using dt = memory::data_type;
        build(n, dt::u8, dt::s8, dt::s32, a.data(), w.data(), c.data(), "gemm_u8s8");
    }
    const float *out() const override {
        as_float.assign(c.begin(), c.end());
        return as_float.data();
    }
    size_t out_size() const override { return c.size(); }
};

/** bf16 x bf16 -> f32 matmul. */
struct GemmBF16 : Matmul {
    std::vector<uint16_t> a, w;
    std::vector<float> c;
    explicit GemmBF16(int n) : a((size_t)n * n), w((size_t)n * n), c((size_t)n * n) {
        for (int y = 0; y < n; y++)
            for (int k = 0; k < n; k++) a[(size_t)y * n + k] = bench::gemm_bf16_a(y, k);
        for (int k = 0; k < n; k++)
            for (int x = 0; x < n; x++) w[(size_t)k * n + x] = bench::gemm_bf16_b(x, k);
        using dt = memory::data_type;
        build(n, dt::bf16, dt::bf16, dt::f32, a.data(), w.data(), c.data(), "gemm_bf16");
    }
    const float *out() const override { return c.data(); }
    size_t out_size() const override { return c.size(); }
};

/** The int8 convolution: u8 source x s8 weights -> s32, NHWC, no bias or post-ops; the weights
    reordered once, outside the timed call, into the format oneDNN prefers. */
struct ConvU8S8 : bench::Kernel {
    engine eng{engine::kind::cpu, 0};
    stream strm{eng};
    std::vector<uint8_t> src;
    std::vector<int8_t> wts;
    std::vector<int32_t> dst;
    mutable std::vector<float> as_float;
    memory src_m, wts_m, dst_m;
    convolution_forward prim;
    explicit ConvU8S8(int S) {
        const int N = bench::kConvN, C = bench::kConvC, P = S + 2;
        src.resize((size_t)N * P * P * C);
        wts.resize((size_t)C * 9 * C);
        dst.resize((size_t)N * S * S * C);
        for (size_t i = 0; i < src.size(); i++) src[i] = bench::conv_u8(i);
        for (size_t i = 0; i < wts.size(); i++) wts[i] = bench::conv_s8(i);
        using dt = memory::data_type;
        using tag = memory::format_tag;
        memory::desc src_md({N, C, P, P}, dt::u8, tag::nhwc);
        memory::desc dst_md({N, C, S, S}, dt::s32, tag::nhwc);
        memory::desc user_wts_md({C, C, 3, 3}, dt::s8, memory::dims{1, 9 * C, 3 * C, C});
        memory::desc any_wts_md({C, C, 3, 3}, dt::s8, tag::any);
        convolution_forward::desc d(prop_kind::forward_inference, algorithm::convolution_direct, src_md, any_wts_md,
                                    dst_md, {1, 1}, {0, 0}, {0, 0});
        convolution_forward::primitive_desc pd(d, eng);
        std::fprintf(stderr, "onednn conv_u8s8: %s\n", pd.impl_info_str());
        src_m = memory(src_md, eng, src.data());
        dst_m = memory(dst_md, eng, dst.data());
        wts_m = weights_as(pd.weights_desc(), memory(user_wts_md, eng, wts.data()), eng, strm);
        prim = convolution_forward(pd);
    }
    void run() override {
        prim.execute(strm, {{DNNL_ARG_SRC, src_m}, {DNNL_ARG_WEIGHTS, wts_m}, {DNNL_ARG_DST, dst_m}});
        strm.wait();
    }
    const float *out() const override {
        as_float.assign(dst.begin(), dst.end());
        return as_float.data();
    }
    size_t out_size() const override { return dst.size(); }
};

}  // namespace

int main() {
    bench::protect_stdout();
    return bench::serve([](const std::string &k, const std::string &, int size) -> std::unique_ptr<bench::Kernel> {
        if (k == "conv") return std::make_unique<Conv>(size);
        if (k == "conv_add") return std::make_unique<Conv>(size, true);
        if (k == "gemm_u8s8") return std::make_unique<GemmU8S8>(size);
        if (k == "gemm_bf16") return std::make_unique<GemmBF16>(size);
        if (k == "conv_u8s8") return std::make_unique<ConvU8S8>(size);
        return nullptr;
    });
}
