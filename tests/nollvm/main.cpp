// Run by tests/nollvm/check.sh against a build without LLVM: CPU pipelines run in the
// interpreter (vectorized and parallel schedules included: their loops run serially), and, with
// a device (or its CPU emulation), a CUDA pipeline's kernels and host stages. Exit status 0
// when every result matches plain C++.
#include <weft/weft.h>
#include <cmath>
#include <cstdio>
#include <string>

using namespace weft;

namespace {
int failures = 0;
void check(bool ok, const std::string &what) {
    std::printf("%s: %s\n", ok ? "ok" : "FAILED", what.c_str());
    if (!ok) failures++;
}
}  // namespace

int main() {
    const int w = 67, h = 23;
    Buffer<float> in(w + 1, h);
    for (int y = 0; y < h; y++)
        for (int x = 0; x <= w; x++) in(x, y) = (float)((x * 7 + y * 3) % 13) - 4.0f;
    auto expect = [&](int x, int y) { return (in(x, y) * 2.0f + 1.0f) + (in(x + 1, y) * 2.0f + 1.0f) * 0.5f; };
    Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
    try {
        // On the CPU: vectorized, parallel and split loops, in the interpreter.
        Func pre("pre"), out("out");
        pre(x, y) = in(x, y) * 2.0f + 1.0f;
        out(x, y) = pre(x, y) + pre(x + 1, y) * 0.5f;
        pre.compute_root().vectorize(x, 8).parallel(y);
        out.split(x, xo, xi, 16).vectorize(xi, 4).parallel(y);
        Buffer<float> o = out.realize({w, h});
        bool ok = true;
        for (int j = 0; j < h; j++)
            for (int i = 0; i < w; i++) ok &= o(i, j) == expect(i, j);
        check(ok, "CPU pipeline with vectorized and parallel loops (interpreted)");
    } catch (Error &e) {
        check(false, std::string("CPU pipeline: ") + e.what());
    }
    if (!cuda_available()) {
        std::string msg;
        try {
            Target::cuda();
        } catch (Error &e) {
            msg = e.what();
        }
        check(msg.find("CUDA") != std::string::npos, "Target::cuda() without a device: " + msg);
        return failures != 0;
    }
    try {
        // On a device: `pre` a host stage (vectorized: serial here), `out` a kernel, and out's
        // update (a scan along x) a host stage after it.
        Func pre("pre"), out("out");
        pre(x, y) = in(x, y) * 2.0f + 1.0f;
        out(x, y) = pre(x, y) + pre(x + 1, y) * 0.5f;
        RDom r(1, w - 1, "r");
        out(r, y) = out(r, y) + out(r - 1, y);
        pre.compute_root().vectorize(x, 8);
        out.gpu_tile(x, y, xo, yo, xi, yi, 16, 4);
        Buffer<float> o = out.realize({w, h}, Target::cuda());
        bool ok = true;
        for (int j = 0; j < h; j++) {
            float acc = 0;
            for (int i = 0; i < w; i++) {
                acc = expect(i, j) + (i ? acc : 0.0f);
                ok &= std::fabs(o(i, j) - acc) <= 1e-5f * std::max(1.0f, std::fabs(acc));
            }
        }
        check(ok, "CUDA pipeline with host stages before and after its kernel");
    } catch (Error &e) {
        check(false, std::string("CUDA pipeline: ") + e.what());
    }
    return failures != 0;
}
