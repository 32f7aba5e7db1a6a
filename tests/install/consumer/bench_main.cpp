// An app of one's own pipeline made with weft/bench.h, built against the installed package
// (the example of docs/benchmarking.md).
#include <weft/bench.h>
using namespace weft;

static const int registered = bench::register_benchmark({
    "brighten", "x * 1.5 + 0.1 over a width x height image",
    {{"width", 4096}, {"height", 4096}},
    {{{"width", 1024}, {"height", 1024}}, {{"width", 4096}, {"height", 4096}}},
    {"C++ loop"},
    [](const bench::Sizes &s) {
        int w = s["width"], h = s["height"];
        Buffer<float> in(w, h), out(w, h);
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) in(x, y) = (float)((x * 7 + y * 3) % 11);
        Var x("x"), y("y");
        Func f("brighten");
        f(x, y) = in(x, y) * 1.5f + 0.1f;
        bench::Instance i;
        i.pipeline = Pipeline(f);
        i.outputs = {out};
        i.schedule = [f, x, y]() mutable { f.vectorize(x, 16).parallel(y); };
        i.reference = [in, w, h](std::vector<Buffer<void>> &expected) {
            Buffer<float> e(expected[0]);
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++) e(x, y) = in(x, y) * 1.5f + 0.1f;
        };
        i.peers.push_back({"C++ loop", [in, out, w, h]() {
                               for (int y = 0; y < h; y++)
                                   for (int x = 0; x < w; x++) out(x, y) = in(x, y) * 1.5f + 0.1f;
                           }});
        i.work = {2.0 * w * h, 8.0 * w * h};
        return i;
    }});

WEFT_BENCH_MAIN()
