// weft_bench_fusion: separately built pipelines, called one by one (eager: each intermediate a
// Buffer written to memory and read back) against the same parts chained with Callable::defer
// (lazy: one pipeline, fused and scheduled across the parts), on 1 and 2 threads.
//   image_chain_N: denoise (3x3 box) -> colour curve (quadratic) -> sharpen (separable unsharp mask)
//   -> tone curve, N x N float32, the parts written without schedules (as a library would ship
//   them; each is scheduled automatically at its first call, the chain as a whole);
//   image_chain_scheduled_N: the same parts with hand-written schedules (each kept; results
//   of calls at root, their memory planned);
//   mlp_block_TxD: layer norm -> linear (D to 4D) -> bias + GELU -> linear (4D to D) ->
//   residual add over T tokens, each layer a Callable without a schedule (as an inference
//   library would ship them), the two linears one Callable each;
//   conv_bias_relu_add_S: a 3x3 convolution + bias + ReLU over 4 x 64 channels x S x S (NHWC,
//   bench/run's expert schedule: a Callable) then a residual add (a Callable without a
//   schedule): deferred, the add runs in the convolution's loops (an epilogue); bench/run
//   races the same chain against oneDNN's post-ops (conv_add);
//   two_readers_N: colour and tone (no schedules) reading one N x N input, both asked for:
//   deferred, one pipeline whose two outputs run in one pass over the input (horizontal fusion);
//   linear_bias_relu_TxIxO: a linear layer (I to O over T tokens) scheduled by hand in register
//   blocks on its own update (no wrapper Func), then bias + ReLU without a schedule: deferred,
//   the activation runs in the matmul's blocks (an epilogue of a reduction).
// Each result is checked bit for bit against eager before timing. Times are medians of rounds
// that alternate eager and lazy; peak memory is what the process holds for intermediates: the
// Buffers eager's caller allocates plus the runtime pool's peak (memory_stats()).
// Usage: weft_bench_fusion [--quick] [--only S] [out.json]   (default bench/fusion.json; --only S:
// the entries whose names contain S, written to a JSON file only where one is named)
#include <weft/weft.h>
#include "per_thread_runs.h"
#include "weft_schedules.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace weft;

namespace {

double now_ms() {
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

struct Part {
    ImageParam in;
    Param<float> k;
    Func out;
    Callable fn;
};

Part denoise(bool scheduled) {
    Part p{ImageParam(Float(32), 2, "in"), Param<float>("strength"), Func("denoise"), {}};
    Var x("x"), y("y");
    Func c = BoundaryConditions::repeat_edge(p.in);
    Func bx("bx"), b("box");
    bx(x, y) = c(x - 1, y) + c(x, y) + c(x + 1, y);
    b(x, y) = (bx(x, y - 1) + bx(x, y) + bx(x, y + 1)) * (1.0f / 9);
    p.out(x, y) = p.in(x, y) + p.k * (b(x, y) - p.in(x, y));
    if (scheduled) {
        Var yo("yo"), yi("yi");
        p.out.split(y, yo, yi, 32).parallel(yo).vectorize(x, 16);
        bx.store_at(p.out, yo).compute_at(p.out, yi).vectorize(x, 16);
    }
    p.fn = Pipeline(p.out).compile_to_callable({p.in, p.k});
    return p;
}
Part colour(bool scheduled) {
    Part p{ImageParam(Float(32), 2, "in"), Param<float>("gain"), Func("colour"), {}};
    Var x("x"), y("y");
    Expr v = p.in(x, y);
    p.out(x, y) = v + p.k * v * (1.0f - v);  // a contrast curve (memory-bound, as the others)
    if (scheduled) p.out.vectorize(x, 16).parallel(y, 16);
    p.fn = Pipeline(p.out).compile_to_callable({p.in, p.k});
    return p;
}
Part sharpen(bool scheduled) {
    Part p{ImageParam(Float(32), 2, "in"), Param<float>("amount"), Func("sharpen"), {}};
    Var x("x"), y("y");
    Func c = BoundaryConditions::repeat_edge(p.in);
    Func h("h"), v("v");
    h(x, y) = 0.25f * c(x - 1, y) + 0.5f * c(x, y) + 0.25f * c(x + 1, y);
    v(x, y) = 0.25f * h(x, y - 1) + 0.5f * h(x, y) + 0.25f * h(x, y + 1);
    p.out(x, y) = p.in(x, y) + p.k * (p.in(x, y) - v(x, y));
    if (scheduled) {
        Var yo("yo"), yi("yi");
        p.out.split(y, yo, yi, 32).parallel(yo).vectorize(x, 16);
        h.store_at(p.out, yo).compute_at(p.out, yi).vectorize(x, 16);
    }
    p.fn = Pipeline(p.out).compile_to_callable({p.in, p.k});
    return p;
}
Part tone(bool scheduled) {
    Part p{ImageParam(Float(32), 2, "in"), Param<float>("lift"), Func("tone"), {}};
    Var x("x"), y("y");
    Expr t = clamp(p.in(x, y) + p.k, 0.0f, 1.0f);
    p.out(x, y) = t * t * (3.0f - 2.0f * t);
    if (scheduled) p.out.vectorize(x, 16).parallel(y, 16);
    p.fn = Pipeline(p.out).compile_to_callable({p.in, p.k});
    return p;
}

// An MLP block, as an inference library would ship its layers: each a Callable of its own,
// without a schedule. Activations are (feature, token), feature contiguous.
struct Layer {
    Callable fn;
};

/** Layer norm over the features of each token, with gain and bias. */
Callable layer_norm(int d) {
    ImageParam x(Float(32), 2, "x"), g(Float(32), 1, "g"), b(Float(32), 1, "b");
    Var i("i"), t("t");
    RDom r(0, d, "r");
    Func mean("mean"), var("var"), ln("layer_norm");
    mean(t) = sum(x(r, t)) * (1.0f / d);
    var(t) = sum((x(r, t) - mean(t)) * (x(r, t) - mean(t))) * (1.0f / d);
    ln(i, t) = (x(i, t) - mean(t)) / sqrt(var(t) + 1e-5f) * g(i) + b(i);
    return Pipeline(ln).compile_to_callable({x, g, b});
}
/** y(j, t) = sum_k a(k, t) w(j, k). */
Callable linear(int k_in) {
    ImageParam a(Float(32), 2, "a"), w(Float(32), 2, "w");
    Var j("j"), t("t");
    RDom k(0, k_in, "k");
    Func mm("linear");
    mm(j, t) = 0.0f;
    mm(j, t) += a(k, t) * w(j, k);
    return Pipeline(mm).compile_to_callable({a, w});
}
/** gelu(h + bias), the tanh form, with fast_tanh (relative error below 1e-6, vectorized), as
    inference libraries approximate it; libm's tanh is one call per lane. */
Callable bias_gelu() {
    ImageParam h(Float(32), 2, "h"), bias(Float(32), 1, "bias");
    Var j("j"), t("t");
    Func g("bias_gelu");
    Expr v = h(j, t) + bias(j);
    g(j, t) = 0.5f * v * (1.0f + fast_tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
    return Pipeline(g).compile_to_callable({h, bias});
}
/** a + b. */
Callable residual() {
    ImageParam a(Float(32), 2, "a"), b(Float(32), 2, "b");
    Var j("j"), t("t");
    Func s("residual_add");
    s(j, t) = a(j, t) + b(j, t);
    return Pipeline(s).compile_to_callable({a, b});
}

struct Entry {
    std::string name;
    int threads = 0;
    double eager_ms = 0, lazy_ms = 0, eager_peak_mb = 0, lazy_peak_mb = 0, lazy_first_ms = 0, target = 0;
    bool same_bits = false;
};

double mb(uint64_t b) { return b / 1048576.0; }

/** Times eager (run_eager) against lazy (run_lazy), alternating, and fills e. */
template <typename Eager, typename Lazy>
void race(Entry &e, int rounds, uint64_t eager_held_bytes, Eager run_eager, Lazy run_lazy) {
    reset_peak_memory();
    uint64_t base = memory_stats().in_use;
    run_eager();
    e.eager_peak_mb = mb(eager_held_bytes + (memory_stats().peak - base));
    reset_peak_memory();
    base = memory_stats().in_use;
    run_lazy();
    e.lazy_peak_mb = mb(memory_stats().peak - base);
    std::vector<double> te, tl;
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < 2; k++) {
            bool lazy_first = (r + k) % 2 == 0;
            double s = now_ms();
            if (lazy_first) run_lazy();
            else run_eager();
            (lazy_first ? tl : te).push_back(now_ms() - s);
        }
    }
    std::sort(te.begin(), te.end());
    std::sort(tl.begin(), tl.end());
    e.eager_ms = te[te.size() / 2];
    e.lazy_ms = tl[tl.size() / 2];
}

/** The first deferred call's time (compiles included), whether deferred gives eager's bits
    (`same`, after both ran), and the race (see race()). */
template <typename Eager, typename Lazy, typename Same>
void measure(Entry &e, int rounds, uint64_t eager_held_bytes, Eager run_eager, Lazy run_lazy, Same same) {
    run_eager();
    double t0 = now_ms();
    run_lazy();
    e.lazy_first_ms = now_ms() - t0;
    e.same_bits = same();
    race(e, rounds, eager_held_bytes, run_eager, run_lazy);
}


Entry image_chain(int n, bool scheduled, int rounds, double target) {
    Part a = denoise(scheduled), b = colour(scheduled), c = sharpen(scheduled), d = tone(scheduled);
    Buffer<float> in(n, n);
    for (int y = 0; y < n; y++)
        for (int x = 0; x < n; x++)
            in(x, y) = 0.5f + 0.4f * std::sin(0.01f * x) * std::cos(0.013f * y) + 0.05f * ((x * 7 + y * 13) % 5);
    Buffer<float> t0(n, n), t1(n, n), t2(n, n), eager(n, n), lazy(n, n);
    auto run_eager = [&] {
        a.fn(in, 0.7f, t0);
        b.fn(t0, 1.3f, t1);
        c.fn(t1, 0.8f, t2);
        d.fn(t2, -0.05f, eager);
    };
    auto run_lazy = [&] {
        LazyBuffer v = a.fn.defer({n, n}, in, 0.7f);
        v = b.fn.defer({n, n}, v, 1.3f);
        v = c.fn.defer({n, n}, v, 0.8f);
        d.fn.defer({n, n}, v, -0.05f).realize(lazy);
    };
    Entry e;
    e.name = std::string("image_chain_") + (scheduled ? "scheduled_" : "") + std::to_string(n);
    e.target = target;
    // Peak memory of intermediates: eager's three Buffers plus the pool's peak during a call.
    measure(e, rounds, 3ull * n * n * 4, run_eager, run_lazy,
            [&] { return std::memcmp(eager.raw_data(), lazy.raw_data(), (size_t)n * n * 4) == 0; });
    return e;
}

/** layer norm -> linear (d to 4d) -> bias + GELU -> linear (4d to d) -> residual add, over
    tokens x d. */
Entry mlp_block(int tokens, int d, int rounds, double target) {
    const int hdim = 4 * d;
    Callable ln = layer_norm(d), up = linear(d), act = bias_gelu(), down = linear(hdim), add = residual();
    auto fill = [](Buffer<float> &b, int seed, float scale) {
        float *p = (float *)b.raw_data();
        size_t n = 1;
        for (int k = 0; k < b.dimensions(); k++) n *= b.dim(k).extent();
        for (size_t i = 0; i < n; i++) p[i] = scale * (float)(((i * 2654435761u + seed * 97) >> 7) % 2001 - 1000) / 1000.0f;
    };
    Buffer<float> x(d, tokens), g(d), b(d), w1(hdim, d), b1(hdim), w2(d, hdim);
    fill(x, 1, 1.0f);
    fill(g, 2, 1.0f);
    fill(b, 3, 0.1f);
    fill(w1, 4, 1.0f / std::sqrt((float)d));
    fill(b1, 5, 0.1f);
    fill(w2, 6, 1.0f / std::sqrt((float)hdim));
    Buffer<float> t0(d, tokens), t1(hdim, tokens), t2(hdim, tokens), t3(d, tokens), eager(d, tokens), lazy(d, tokens);
    auto run_eager = [&] {
        ln(x, g, b, t0);
        up(t0, w1, t1);
        act(t1, b1, t2);
        down(t2, w2, t3);
        add(t3, x, eager);
    };
    auto run_lazy = [&] {
        LazyBuffer v = ln.defer({d, tokens}, x, g, b);
        v = up.defer({hdim, tokens}, v, w1);
        v = act.defer({hdim, tokens}, v, b1);
        v = down.defer({d, tokens}, v, w2);
        add.defer({d, tokens}, v, x).realize(lazy);
    };
    Entry e;
    e.name = "mlp_block_" + std::to_string(tokens) + "x" + std::to_string(d);
    e.target = target;
    measure(e, rounds, 4ull * (2ull * d * tokens + 2ull * hdim * tokens), run_eager, run_lazy,
            [&] { return std::memcmp(eager.raw_data(), lazy.raw_data(), (size_t)d * tokens * 4) == 0; });
    return e;
}

/** conv + bias + ReLU (scheduled) -> residual add (unscheduled), N x C x S x S. */
Entry conv_add(int S, int rounds, double target) {
    const int N = 4, C = 64, P = S + 2;
    weft_bench::Def d = weft_bench::conv(C);
    std::vector<Argument> cargs(d.inputs.begin(), d.inputs.end());
    Callable conv = Pipeline(d.out).compile_to_callable(cargs);
    ImageParam a(Float(32), 4, "a"), res(Float(32), 4, "res");
    Var c("c"), x("x"), y("y"), n("n");
    Func sum("residual_add");
    sum(c, x, y, n) = a(c, x, y, n) + res(c, x, y, n);
    Callable add = Pipeline(sum).compile_to_callable({a, res});
    auto fill = [](Buffer<float> &b, int seed) {
        float *p = (float *)b.raw_data();
        size_t cnt = 1;
        for (int k = 0; k < b.dimensions(); k++) cnt *= b.dim(k).extent();
        for (size_t i = 0; i < cnt; i++) p[i] = (float)(((i * 2654435761u + seed * 97) >> 7) % 2001 - 1000) / 1000.0f;
    };
    Buffer<float> in(C, P, P, N), w(C, 3, 3, C), bias(C), r(C, S, S, N), t(C, S, S, N), eager(C, S, S, N), lazy(C, S, S, N);
    fill(in, 1);
    fill(w, 2);
    fill(bias, 3);
    fill(r, 4);
    const std::vector<int> shape{C, S, S, N};
    auto run_eager = [&] {
        conv(in, w, bias, t);
        add(t, r, eager);
    };
    auto run_lazy = [&] { add.defer(shape, conv.defer(shape, in, w, bias), r).realize(lazy); };
    Entry e;
    e.name = "conv_bias_relu_add_" + std::to_string(S);
    e.target = target;
    measure(e, rounds, 4ull * N * S * S * C, run_eager, run_lazy,
            [&] { return std::memcmp(eager.raw_data(), lazy.raw_data(), (size_t)N * S * S * C * 4) == 0; });
    return e;
}

/** Two parts without schedules reading one input, both results asked for: deferred, one pipeline
    whose two outputs run in one pass over the input (horizontal fusion). */
Entry two_readers(int n, int rounds, double target) {
    Part c = colour(false), t = tone(false);
    Buffer<float> in(n, n), e1(n, n), e2(n, n), l1(n, n), l2(n, n);
    float *p = (float *)in.raw_data();
    for (size_t i = 0; i < (size_t)n * n; i++) p[i] = (float)((i * 2654435761u) >> 20 & 1023) / 1023.0f;
    auto run_eager = [&] {
        c.fn(in, 1.3f, e1);
        t.fn(in, -0.05f, e2);
    };
    auto run_lazy = [&] { weft::realize({c.fn.defer({n, n}, in, 1.3f), t.fn.defer({n, n}, in, -0.05f)}, {l1, l2}); };
    Entry e;
    e.name = "two_readers_" + std::to_string(n);
    e.target = target;
    measure(e, rounds, 0, run_eager, run_lazy,
            [&] { return std::memcmp(e1.raw_data(), l1.raw_data(), (size_t)n * n * 4) == 0 &&
                             std::memcmp(e2.raw_data(), l2.raw_data(), (size_t)n * n * 4) == 0; });
    return e;
}

/** A linear layer scheduled by hand in register blocks on its own update (no wrapper Func), then
    bias + ReLU without a schedule: deferred, the activation runs in the matmul's blocks (an
    epilogue of a reduction), tokens x d_in -> d_out. */
Entry linear_bias_relu(int tokens, int d_in, int d_out, int rounds, double target) {
    ImageParam a(Float(32), 2, "a"), w(Float(32), 2, "w");
    Var j("j"), t("t"), jo("jo"), to("to"), ji("ji"), ti("ti");
    RDom k(0, d_in, "k");
    Func mm("linear");
    mm(j, t) = 0.0f;
    mm(j, t) += a(k, t) * w(j, k);
    mm.vectorize(j, 16).parallel(t, 8);
    mm.update().tile(j, t, jo, to, ji, ti, 64, 6).reorder(ji, ti, k, jo, to).vectorize(ji, 16).unroll(ji).unroll(ti).parallel(to);
    Callable lin = Pipeline(mm).compile_to_callable({a, w});
    ImageParam h(Float(32), 2, "h"), bias(Float(32), 1, "bias");
    Func act("bias_relu");
    act(j, t) = max(h(j, t) + bias(j), 0.0f);
    Callable relu = Pipeline(act).compile_to_callable({h, bias});
    Buffer<float> x(d_in, tokens), wt(d_out, d_in), b(d_out), mid(d_out, tokens), eager(d_out, tokens), lazy(d_out, tokens);
    for (auto *buf : {&x, &wt, &b}) {
        float *p = (float *)buf->raw_data();
        size_t n = 1;
        for (int q = 0; q < buf->dimensions(); q++) n *= buf->dim(q).extent();
        for (size_t i = 0; i < n; i++) p[i] = (float)(((i * 2654435761u + 7) >> 7) % 2001 - 1000) / 1000.0f / 16;
    }
    auto run_eager = [&] {
        lin(x, wt, mid);
        relu(mid, b, eager);
    };
    auto run_lazy = [&] { relu.defer({d_out, tokens}, lin.defer({d_out, tokens}, x, wt), b).realize(lazy); };
    Entry e;
    e.name = "linear_bias_relu_" + std::to_string(tokens) + "x" + std::to_string(d_in) + "x" + std::to_string(d_out);
    e.target = target;
    measure(e, rounds, 4ull * d_out * tokens, run_eager, run_lazy,
            [&] { return std::memcmp(eager.raw_data(), lazy.raw_data(), (size_t)d_out * tokens * 4) == 0; });
    return e;
}

std::string entry_json(const Entry &e) {
    std::ostringstream os;
    double speedup = e.eager_ms / e.lazy_ms;
    os << "{\"name\": \"" << e.name << "\", \"threads\": " << e.threads << ", \"eager_ms\": " << e.eager_ms
       << ", \"lazy_ms\": " << e.lazy_ms << ", \"speedup\": " << speedup << ", \"target\": " << e.target
       << ", \"meets_target\": " << (speedup >= e.target ? "true" : "false") << ", \"lazy_first_call_ms\": " << e.lazy_first_ms
       << ", \"eager_peak_mb\": " << e.eager_peak_mb << ", \"lazy_peak_mb\": " << e.lazy_peak_mb
       << ", \"same_bits\": " << (e.same_bits ? "true" : "false") << "}";
    return os.str();
}

}  // namespace

int main(int argc, char **argv) {
    weft_bench::RunArgs args = weft_bench::parse_run_args(argc, argv, WEFT_BENCH_FUSION_JSON);
    const bool quick = args.quick;
    const int child = args.child;
    const std::string out = args.out;
    const int n = quick ? 1024 : 2048, rounds = quick ? 7 : 15;
    if (child) {
        // One thread count per process (the pool's size is fixed at its first use).
        // An entry that fails is reported as failed (with weft's message), not left out.
        auto run = [&](const std::string &name, auto fn) {
            if (name.find(args.only) == std::string::npos) return;
            try {
                Entry e = fn();
                e.threads = child;
                std::printf("%s\n", entry_json(e).c_str());
            } catch (const Error &err) {
                std::string m = err.what();
                for (char &c : m)
                    if (c == '"' || c == '\\' || c == '\n') c = '\'';
                std::printf("{\"name\": \"%s\", \"threads\": %d, \"error\": \"%s\"}\n", name.c_str(), child, m.c_str());
            }
            std::fflush(stdout);
        };
        const std::string ns = std::to_string(n);
        run("image_chain_" + ns, [&] { return image_chain(n, false, rounds, 1.8); });
        run("image_chain_scheduled_" + ns, [&] { return image_chain(n, true, rounds, 1.8); });
        const int tokens = quick ? 128 : 256, d = quick ? 256 : 512;
        run("mlp_block_" + std::to_string(tokens) + "x" + std::to_string(d), [&] { return mlp_block(tokens, d, rounds, 1.2); });
        run("conv_bias_relu_add_56", [&] { return conv_add(56, rounds, 1.0); });
        run("two_readers_" + std::to_string(quick ? 2048 : 4096), [&] { return two_readers(quick ? 2048 : 4096, rounds, 1.0); });
        run("linear_bias_relu_" + std::to_string(quick ? 192 : 384) + "x512x2048", [&] { return linear_bias_relu(quick ? 192 : 384, 512, 2048, rounds, 1.0); });
        return 0;
    }
    std::printf("%-28s %7s %10s %10s %8s %8s %12s %12s %s\n", "entry", "threads", "eager ms", "lazy ms", "speedup",
                "target", "eager MiB", "lazy MiB", "bits");
    auto lines = weft_bench::run_per_thread_count("weft_bench_fusion", quick, [](int threads, const std::string &l) {
        auto num = [&](const char *k) {
            auto i = l.find(std::string("\"") + k + "\": ");
            return i == std::string::npos ? 0.0 : std::atof(l.c_str() + i + std::strlen(k) + 4);
        };
        auto str = [&](const char *k) {
            auto i = l.find(std::string("\"") + k + "\": \"");
            if (i == std::string::npos) return std::string();
            i += std::strlen(k) + 5;
            return l.substr(i, l.find('"', i) - i);
        };
        if (l.find("\"error\": ") != std::string::npos) {
            std::printf("%-28s %7d FAILED: %s\n", str("name").c_str(), threads, str("error").c_str());
            return;
        }
        std::printf("%-28s %7d %10.2f %10.2f %7.2fx %7.1fx %12.1f %12.1f %s\n", str("name").c_str(), threads,
                    num("eager_ms"), num("lazy_ms"), num("speedup"), num("target"), num("eager_peak_mb"),
                    num("lazy_peak_mb"), l.find("\"same_bits\": true") != std::string::npos ? "same" : "DIFFER");
    }, args.only);
    if (args.only.empty() || args.out_given) {
        weft_bench::write_entries(out, lines);
        std::printf("wrote %s\n", out.c_str());
    }
    return 0;
}
