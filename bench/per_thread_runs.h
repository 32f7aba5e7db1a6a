// Shared by the benchmarks that time one thread count per process (weft's thread pool takes
// its size at first use): the command line, the re-runs of this executable with
// WEFT_NUM_THREADS, and the JSON file of their entries.
#pragma once
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace weft_bench {

struct RunArgs {
    bool quick = false;
    std::string out;  // the JSON file
    int child = 0;    // > 0: this process is the run on that many threads
    std::string only;  // --only S: the entries whose names contain S (the JSON file is then
                       // written only where named)
    bool out_given = false;
};

/** [--quick] [--only S] [--child N] [out.json] */
inline RunArgs parse_run_args(int argc, char **argv, const std::string &default_out) {
    RunArgs r;
    r.out = default_out;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        if (a == "--quick") r.quick = true;
        else if (a == "--child" && i + 1 < argc) r.child = std::atoi(argv[++i]);
        else if (a == "--only" && i + 1 < argc && std::string(argv[i + 1]).find('\'') == std::string::npos) r.only = argv[++i];
        else if (a.empty() || a[0] == '-' || r.out != default_out) {
            // An unknown option (e.g. --help) or a second path: usage, not a file of that name.
            std::fprintf(stderr, "usage: %s [--quick] [--only S] [out.json]   (default %s)\n", argv[0], default_out.c_str());
            std::exit(a == "--help" || a == "-h" ? 0 : 2);
        } else {
            r.out = a;
            r.out_given = true;
        }
    }
    return r;
}

inline std::string cpu_name() {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
    return "unknown";
}

/** Runs this executable again with --child T for T = 1 and 2 threads (disk cache off) and hands
    each JSON line it prints to `each`; returns the lines. A failed run is reported on stderr. */
inline std::vector<std::string> run_per_thread_count(const std::string &tool, bool quick,
                                                     const std::function<void(int, const std::string &)> &each,
                                                     const std::string &only = "") {
    std::vector<std::string> lines;
    for (int threads : {1, 2}) {
        std::string cmd = "WEFT_NUM_THREADS=" + std::to_string(threads) + " WEFT_CACHE_DIR=off /proc/" +
                          std::to_string(getpid()) + "/exe --child " + std::to_string(threads) + (quick ? " --quick" : "") +
                          (only.empty() ? "" : " --only '" + only + "'");
        FILE *p = popen(cmd.c_str(), "r");
        if (!p) {
            std::fprintf(stderr, "%s: cannot run %s\n", tool.c_str(), cmd.c_str());
            continue;
        }
        char buf[4096];
        while (std::fgets(buf, sizeof(buf), p)) {
            std::string l(buf);
            while (!l.empty() && (l.back() == '\n' || l.back() == '\r')) l.pop_back();
            if (l.empty() || l[0] != '{') continue;
            lines.push_back(l);
            each(threads, l);
        }
        if (pclose(p) != 0) std::fprintf(stderr, "%s: the %d-thread run failed\n", tool.c_str(), threads);
    }
    return lines;
}

/** {"machine": ..., "entries": [lines]} */
inline void write_entries(const std::string &path, const std::vector<std::string> &lines) {
    std::ofstream f(path);
    f << "{\"machine\": \"" << cpu_name() << "\", \"entries\": [\n";
    for (size_t i = 0; i < lines.size(); i++) f << "  " << lines[i] << (i + 1 < lines.size() ? ",\n" : "\n");
    f << "]}\n";
}

}  // namespace weft_bench
