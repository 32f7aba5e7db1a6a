// OpenBLAS peer: SGEMM through cblas_sgemm (row- and column-major). Threads: OPENBLAS_NUM_THREADS.
// bench/run starts it with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (they force older kernels).
#include <cblas.h>

#include "bench_common.h"

namespace {

struct Sgemm : bench::Kernel {
    int n;
    bool row_major;
    bench::AlignedBuf A, B, C;
    Sgemm(int n_, bool rm)
        : n(n_), row_major(rm), A(bench::make_aligned_input((size_t)n_ * n_, 1)),
          B(bench::make_aligned_input((size_t)n_ * n_, 2)), C((size_t)n_ * n_) {}
    void run() override {
        cblas_sgemm(row_major ? CblasRowMajor : CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, A.data(), n,
                    B.data(), n, 0.0f, C.data(), n);
    }
    const float *out() const override { return C.data(); }
    size_t out_size() const override { return C.size(); }
};

}  // namespace

int main() {
    bench::protect_stdout();
    return bench::serve([](const std::string &k, const std::string &, int size) -> std::unique_ptr<bench::Kernel> {
        if (k == "sgemm_rm") return std::make_unique<Sgemm>(size, true);
        if (k == "sgemm_cm") return std::make_unique<Sgemm>(size, false);
        return nullptr;
    });
}
