// weft_histogram: the 256-bin histogram of a 2048x2048 8-bit image, in two levels: each strip
// of 32 rows gets its own histogram (on the CPU per thread, on a GPU per block in shared
// memory), and the strips' histograms are added into the result with atomic updates
// (Stage::atomic()). Checked against a plain C++ loop.
// Usage: weft_histogram [--target host|host-cuda] [--size n]
#include <weft/weft.h>

#include <cstdio>
#include <vector>

#include "app_util.h"

namespace weft_apps {

int run_histogram(const Options &o) {
    using namespace weft;
    const int W = o.size ? o.size : 2048, H = W, S = 32, strips = (H + S - 1) / S;
    Buffer<uint8_t> in(W, H);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) in(x, y) = (uint8_t)((x * x + 3 * y + (x ^ y)) % 251);

    Var b("b"), s("s");
    // The strips' histograms: part(b, s) counts the pixels of strip s (its last strip may be
    // shorter) that fall in bin b.
    RDom r(0, W, 0, S, "r");
    r.where(s * S + r.y < H);
    Func part("part"), hist("hist");
    part(b, s) = 0;
    part(cast<int>(in(r.x, min(s * S + r.y, H - 1))), s) += 1;
    // The histogram: the sum of the strips' ones.
    RDom rs(0, strips, "rs");
    hist(b) = 0;
    hist(b) += part(b, rs);

    hist.update().atomic().reorder(b, rs);  // the strips outermost (RVars start innermost)
    if (o.gpu()) {
        // One block per strip: its 256 threads clear the strip's histogram in shared memory,
        // add the strip's pixels to it (atomicAdd on shared memory, the threads over the
        // columns), then each thread adds one bin to the result (atomicAdd on global memory).
        Var bo("bo"), bi("bi");
        RVar rxo("rxo"), rxi("rxi");
        hist.gpu_tile(b, bo, bi, 256);
        hist.update().gpu_blocks(rs).gpu_threads(b);
        part.compute_at(hist, rs).store_in(MemoryType::GPUShared).gpu_threads(b);
        part.update().atomic().split(r.x, rxo, rxi, 256).reorder(rxi, rxo, r.y).gpu_threads(rxi);
    } else {
        // The strips in parallel, each counted into its own histogram on the stack.
        hist.update().parallel(rs);
        part.compute_at(hist, rs).vectorize(b, 16);
    }

    Buffer<int32_t> out(256);
    Timing t = o.gpu() ? time_calls([&] { hist.realize(out, o.target); }, 20, 10, [&] { out.device_sync(); })
                       : time_calls([&] { hist.realize(out); });

    std::vector<int> ref(256, 0);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) ref[in(x, y)]++;
    int bad = 0;
    for (int k = 0; k < 256; k++) bad += out(k) != ref[k];
    double gbs = (double)W * H / (t.median_ms * 1e-3) * 1e-9;  // the image read once
    std::printf("histogram of %dx%d uint8 on %s: first call %.1f ms (JIT included), median of 20 cached calls %.3f ms "
                "(%.1f GB/s)\n",
                W, H, o.gpu() ? "the GPU" : "the CPU", t.first_ms, t.median_ms, gbs);
    if (bad) {
        std::printf("histogram: MISMATCH (%d wrong bins)\n", bad);
        return 1;
    }
    std::printf("histogram: OK\n");
    return 0;
}

}  // namespace weft_apps

#ifdef WEFT_APP_MAIN
int main(int argc, char **argv) { return weft_apps::app_main("histogram", weft_apps::run_histogram, argc, argv); }
#endif
