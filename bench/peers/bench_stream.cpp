// STREAM-style triad a[i] = b[i] + 3·c[i]: the bandwidth every memory-bound kernel is compared
// with. OpenMP static schedule (threads: OMP_NUM_THREADS), arrays first touched in parallel.
#include <omp.h>

#include "bench_common.h"

namespace {

struct Triad : bench::Kernel {
    size_t n;
    float *a, *b, *c;
    explicit Triad(size_t n_) : n(n_) {
        a = (float *)std::aligned_alloc(64, n * sizeof(float));
        b = (float *)std::aligned_alloc(64, n * sizeof(float));
        c = (float *)std::aligned_alloc(64, n * sizeof(float));
        if (!a || !b || !c) throw std::bad_alloc();
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) {
            a[i] = 0.0f;
            b[i] = 1.0f;
            c[i] = 2.0f;
        }
    }
    ~Triad() override {
        std::free(a);
        std::free(b);
        std::free(c);
    }
    void run() override {
        float *__restrict pa = a;
        const float *__restrict pb = b;
        const float *__restrict pc = c;
        const size_t m = n;
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < m; i++) pa[i] = pb[i] + 3.0f * pc[i];
    }
    const float *out() const override { return a; }
    size_t out_size() const override { return 16; }  // nothing to check
};

}  // namespace

int main() {
    bench::protect_stdout();
    return bench::serve([](const std::string &k, const std::string &, int size) -> std::unique_ptr<bench::Kernel> {
        if (k == "triad") return std::make_unique<Triad>((size_t)size);
        return nullptr;
    });
}
