// bench_compare A B ATOL RTOL: compares two raw float32 files element by element; an element
// is bad when |a - b| > ATOL + RTOL·|b| or either is not finite. Prints one JSON line.
// Exit status 0 when the files match, 1 when they differ, 2 on an error.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

static bool read_all(const char *path, std::vector<float> &v) {
    FILE *f = std::fopen(path, "rb");
    if (!f) return false;
    std::fseek(f, 0, SEEK_END);
    long bytes = std::ftell(f);
    std::fseek(f, 0, SEEK_SET);
    v.resize(bytes / sizeof(float));
    size_t r = std::fread(v.data(), sizeof(float), v.size(), f);
    std::fclose(f);
    return r == v.size();
}

int main(int argc, char **argv) {
    if (argc != 5) {
        std::printf("{\"ok\":false,\"error\":\"usage: bench_compare A B ATOL RTOL\"}\n");
        return 2;
    }
    std::vector<float> a, b;
    if (!read_all(argv[1], a) || !read_all(argv[2], b)) {
        std::printf("{\"ok\":false,\"error\":\"cannot read the outputs\"}\n");
        return 2;
    }
    if (a.size() != b.size()) {
        std::printf("{\"ok\":false,\"error\":\"sizes differ: %zu vs %zu\"}\n", a.size(), b.size());
        return 1;
    }
    double atol = std::atof(argv[3]), rtol = std::atof(argv[4]);
    double max_abs = 0, max_rel = 0;
    size_t bad = 0, first_bad = 0;
    for (size_t i = 0; i < a.size(); i++) {
        double x = a[i], y = b[i];
        double d = std::fabs(x - y);
        bool ok = std::isfinite(x) && std::isfinite(y) && d <= atol + rtol * std::fabs(y);
        if (!ok) {
            if (!bad) first_bad = i;
            bad++;
        }
        if (std::isfinite(d)) {
            if (d > max_abs) max_abs = d;
            double rel = d / std::max(std::fabs(y), 1e-30);
            if (rel > max_rel && std::fabs(y) > atol) max_rel = rel;
        }
    }
    std::printf("{\"ok\":%s,\"n\":%zu,\"bad\":%zu,\"max_abs\":%.3g,\"max_rel\":%.3g", bad ? "false" : "true", a.size(),
                bad, max_abs, max_rel);
    if (bad)
        std::printf(",\"first_bad\":%zu,\"a\":%.8g,\"b\":%.8g", first_bad, (double)a[first_bad], (double)b[first_bad]);
    std::printf("}\n");
    return bad ? 1 : 0;
}
