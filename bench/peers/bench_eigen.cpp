// Eigen 3.4 peer (-O3 -march=native -fopenmp; threads: OMP_NUM_THREADS): SGEMM row- and
// column-major through Eigen's GEMM, and row-wise softmax and layer-norm written as an Eigen
// user would (vectorized array expressions per row, rows split over OpenMP threads).
#include <Eigen/Dense>

#include "bench_common.h"

namespace {

template <int Order>
struct Sgemm : bench::Kernel {
    using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Order>;
    int n;
    bench::AlignedBuf A, B, C;
    explicit Sgemm(int n_)
        : n(n_), A(bench::make_aligned_input((size_t)n_ * n_, 1)), B(bench::make_aligned_input((size_t)n_ * n_, 2)),
          C((size_t)n_ * n_) {}
    void run() override {
        Eigen::Map<const Mat, Eigen::Aligned64> a(A.data(), n, n), b(B.data(), n, n);
        Eigen::Map<Mat, Eigen::Aligned64> c(C.data(), n, n);
        c.noalias() = a * b;
    }
    const float *out() const override { return C.data(); }
    size_t out_size() const override { return C.size(); }
};

struct RowKernel : bench::Kernel {
    int rows, cols = bench::kSoftmaxCols;
    bool layernorm;
    bench::AlignedBuf in, gamma, beta, o;
    RowKernel(int r, bool ln)
        : rows(r), layernorm(ln), in(bench::make_aligned_input((size_t)r * bench::kSoftmaxCols, 1)),
          gamma(bench::make_aligned_input(bench::kSoftmaxCols, 2)), beta(bench::make_aligned_input(bench::kSoftmaxCols, 3)),
          o((size_t)r * bench::kSoftmaxCols) {}
    void run() override {
        const int R = rows, Cn = cols;
        const float *pin = in.data();
        float *pout = o.data();
        if (!layernorm) {
#pragma omp parallel for schedule(static)
            for (int y = 0; y < R; y++) {
                Eigen::Map<const Eigen::ArrayXf, Eigen::Aligned64> x(pin + (size_t)y * Cn, Cn);
                Eigen::Map<Eigen::ArrayXf, Eigen::Aligned64> z(pout + (size_t)y * Cn, Cn);
                float m = x.maxCoeff();
                z = (x - m).exp();
                z *= 1.0f / z.sum();
            }
        } else {
            Eigen::Map<const Eigen::ArrayXf, Eigen::Aligned64> g(gamma.data(), Cn), bt(beta.data(), Cn);
#pragma omp parallel for schedule(static)
            for (int y = 0; y < R; y++) {
                Eigen::Map<const Eigen::ArrayXf, Eigen::Aligned64> x(pin + (size_t)y * Cn, Cn);
                Eigen::Map<Eigen::ArrayXf, Eigen::Aligned64> z(pout + (size_t)y * Cn, Cn);
                float mean = x.mean();
                float var = (x - mean).square().mean();
                float inv = 1.0f / std::sqrt(var + bench::kLayerNormEps);
                z = (x - mean) * (inv * g) + bt;
            }
        }
    }
    const float *out() const override { return o.data(); }
    size_t out_size() const override { return o.size(); }
};

}  // namespace

int main() {
    bench::protect_stdout();
    return bench::serve([](const std::string &k, const std::string &, int size) -> std::unique_ptr<bench::Kernel> {
        if (k == "sgemm_rm") return std::make_unique<Sgemm<Eigen::RowMajor>>(size);
        if (k == "sgemm_cm") return std::make_unique<Sgemm<Eigen::ColMajor>>(size);
        if (k == "softmax") return std::make_unique<RowKernel>(size, false);
        if (k == "layernorm") return std::make_unique<RowKernel>(size, true);
        return nullptr;
    });
}
