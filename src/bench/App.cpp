// The benchmarking app: its command line (CLI11), its terminal output, and the child processes
// that run benchmarks for the server (see weft/bench.h; the server is in Server.cpp).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>

#include <CLI/CLI.hpp>

#include "bench/App.h"
#include "bench/Json.h"
#include "weft/bench.h"

namespace weft {
namespace bench {

using json = nlohmann::ordered_json;  // objects keep their order (sizes: width before height)

std::string read_file(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw Error("weft-bench: cannot read \"" + path + "\"");
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

void write_file(const std::string &path, const std::string &text) {
    if (path == "-") {
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
        return;
    }
    std::ofstream f(path, std::ios::binary);
    if (!f || !(f << text) || !(f.flush()))
        throw Error("weft-bench: cannot write \"" + path + "\"");
}

Options::Mode parse_mode(const std::string &m) {
    if (m == "default") return Options::Mode::Default;
    if (m == "custom") return Options::Mode::Custom;
    if (m == "auto") return Options::Mode::Auto;
    if (m == "none") return Options::Mode::None;
    throw Error("weft-bench: the schedule mode is default, custom, auto or none (got \"" + m + "\")");
}

Sizes parse_sizes(const std::vector<std::string> &items) {
    Sizes s;
    for (const std::string &it : items) {
        auto eq = it.find('=');
        if (eq == std::string::npos || eq == 0)
            throw Error("weft-bench: --size takes name=value (got \"" + it + "\")");
        std::string name = it.substr(0, eq), v = it.substr(eq + 1);
        char *end = nullptr;
        errno = 0;
        long long n = std::strtoll(v.c_str(), &end, 10);
        if (v.empty() || *end || errno || n <= 0 || n > (1 << 30))
            throw Error("weft-bench: size " + name + " = \"" + v + "\" is not an integer from 1 to 2^30");
        s.set(name, (int)n);
    }
    return s;
}

/** The line number in a "schedule line N: ..." message, else 0. */
int schedule_error_line(const std::string &msg) {
    std::smatch m;
    static const std::regex re("schedule line ([0-9]+)");
    if (std::regex_search(msg, m, re)) return std::atoi(m[1].str().c_str());
    return 0;
}

// ---------------------------------------------------------------- terminal

namespace {

std::string fmt(const char *f, double v) {
    char b[64];
    std::snprintf(b, sizeof b, f, v);
    return b;
}

std::string ms_text(double ms) {
    if (ms <= 0) return "-";
    if (ms < 0.01) return fmt("%.2f us", ms * 1000);
    if (ms < 10) return fmt("%.3f ms", ms);
    if (ms < 10000) return fmt("%.1f ms", ms);
    return fmt("%.2f s", ms / 1000);
}

/** A live line on a TTY (rewritten in place), or one plain line per phase otherwise. */
class Terminal {
public:
    explicit Terminal(bool tty) : tty_(tty) {}
    void progress(int index, int count, const Progress &p) {
        std::string head = "[" + std::to_string(index) + "/" + std::to_string(count) + "] " + p.benchmark;
        if (tty_) {
            int pct = (int)(100 * p.fraction + 0.5);
            std::string bar(20, ' ');
            for (int i = 0; i < 20 && i < pct / 5; i++) bar[i] = '#';
            std::string line = head + " [" + bar + "] " + std::to_string(pct) + "% " + p.message;
            if (p.eta_s > 0.05) line += fmt(", %.1f s left", p.eta_s);
            if (line.size() > 110) line = line.substr(0, 107) + "...";
            std::fprintf(stderr, "\r\033[K%s", line.c_str());
            std::fflush(stderr);
            dirty_ = true;
        } else if (p.phase != last_phase_) {
            std::fprintf(stderr, "%s: %s\n", head.c_str(), p.message.c_str());
        }
        last_phase_ = p.phase;
    }
    void clear() {
        if (tty_ && dirty_) std::fprintf(stderr, "\r\033[K");
        dirty_ = false;
        last_phase_.clear();
    }

private:
    bool tty_;
    bool dirty_ = false;
    std::string last_phase_;
};

void pad(std::string &s, size_t n) {
    if (s.size() < n) s += std::string(n - s.size(), ' ');
}

}  // namespace

std::string results_table(const std::vector<Result> &runs) {
    std::vector<std::vector<std::string>> rows;
    rows.push_back({"benchmark", "sizes", "thr", "variant", "median", "p10-p90", "spread", "first call", "GFLOP/s",
                    "GB/s", "check", "peers (speedup)"});
    for (const Result &r : runs) {
        if (!r.error.empty()) {
            rows.push_back({r.benchmark, r.sizes.label(), std::to_string(r.threads), r.variant, "error", "", "", "", "",
                            "", "", r.error.substr(0, r.error.find('\n'))});
            continue;
        }
        std::string peers;
        for (auto &p : r.peers)
            peers += (peers.empty() ? "" : "  ") + p.name + " " + (p.error.empty() ? fmt("%.2fx", p.speedup) : "error");
        rows.push_back({r.benchmark, r.sizes.label(), std::to_string(r.threads), r.variant, ms_text(r.time.median),
                        ms_text(r.time.p10) + " - " + ms_text(r.time.p90),
                        fmt("%.1f%%", 100 * r.time.spread) + (r.unstable ? " (unstable)" : ""),
                        ms_text(r.first_call_ms), r.gflops > 0 ? fmt("%.1f", r.gflops) : "-",
                        r.gbs > 0 ? fmt("%.1f", r.gbs) : "-",
                        r.check.status == Check::Status::Ok         ? "ok"
                        : r.check.status == Check::Status::Mismatch ? "MISMATCH"
                                                                    : "-",
                        peers});
    }
    std::vector<size_t> w(rows[0].size(), 0);
    for (auto &row : rows)
        for (size_t i = 0; i < row.size(); i++) w[i] = std::max(w[i], row[i].size());
    std::string out;
    for (size_t k = 0; k < rows.size(); k++) {
        std::string line;
        for (size_t i = 0; i < rows[k].size(); i++) {
            std::string c = rows[k][i];
            if (i + 1 < rows[k].size()) pad(c, w[i] + 2);
            line += c;
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out += line + "\n";
        if (k == 0) out += std::string(line.size(), '-') + "\n";
    }
    for (const Result &r : runs) {
        for (auto &wn : r.warnings) out += "warning: " + r.benchmark + " " + r.sizes.label() + ": " + wn + "\n";
        if (r.check.status == Check::Status::Mismatch)
            out += "MISMATCH: " + r.benchmark + " " + r.sizes.label() + ": " + r.check.message + "\n";
    }
    return out;
}

std::string comparison_table(const std::vector<Comparison> &cs) {
    std::string out = "benchmark                       sizes         thr  variant   old          new          "
                      "new/old   p-value\n";
    for (auto &c : cs) {
        char b[400];
        std::snprintf(b, sizeof b, "%-31s %-13s %-4d %-9s %-12s %-12s %-9s %.4g%s\n", c.benchmark.c_str(),
                      c.size_label.c_str(), c.threads, c.variant.c_str(), ms_text(c.old_ms).c_str(),
                      ms_text(c.new_ms).c_str(), fmt("%.3f", c.ratio).c_str(), c.p_value,
                      c.significant ? (c.ratio < 1 ? "  faster" : "  slower") : "  (no significant change)");
        out += b;
    }
    if (cs.empty()) out += "(no benchmark, size, thread count and variant is in both files)\n";
    return out;
}

// ---------------------------------------------------------------- commands

namespace {

struct RunArgs {
    std::vector<std::string> names, sizes;
    std::string filter, target = "host", mode = "default", schedule_file, json_out, csv_out;
    int threads = 0;
    double auto_budget = 0, min_time = 1.0, warmup = 0.25;
    int min_reps = 10, max_reps = 100000;
    bool flush = false, no_peers = false, no_profile = false, quiet = false, machine = false;
};

std::vector<const Definition *> select(const std::vector<std::string> &names, const std::string &filter) {
    std::vector<const Definition *> out;
    for (auto &n : names) {
        const Definition *d = find_benchmark(n);
        if (!d) {
            std::string known;
            for (auto &b : benchmarks()) known += (known.empty() ? "" : ", ") + b.name;
            throw Error("weft-bench: no benchmark called \"" + n + "\" (known: " + known + ")");
        }
        out.push_back(d);
    }
    if (names.empty()) {
        std::regex re;
        try {
            re = std::regex(filter.empty() ? ".*" : filter);
        } catch (const std::regex_error &e) {
            throw Error("weft-bench: --filter \"" + filter + "\" is not a regular expression: " + e.what());
        }
        for (auto &b : benchmarks())
            if (std::regex_search(b.name, re)) out.push_back(&b);
        if (out.empty()) throw Error("weft-bench: no benchmark matches --filter \"" + filter + "\"");
    }
    return out;
}

int cmd_run(const RunArgs &a) {
    if (a.threads > 0) setenv("WEFT_NUM_THREADS", std::to_string(a.threads).c_str(), 1);  // before the pool starts
    auto list = select(a.names, a.filter);
    Options o;
    o.mode = parse_mode(a.mode);
    if (!a.schedule_file.empty()) {
        o.mode = Options::Mode::Custom;
        o.schedule = read_file(a.schedule_file);
    } else if (o.mode == Options::Mode::Custom) {
        throw Error("weft-bench: --mode custom needs --schedule-file (C++ schedule calls)");
    }
    o.target = Target::from_string(a.target);
    o.auto_budget_seconds = a.auto_budget;
    o.min_seconds = a.min_time;
    o.warmup_seconds = a.warmup;
    o.min_reps = a.min_reps;
    o.max_reps = a.max_reps;
    o.flush_cache = a.flush;
    o.run_peers = !a.no_peers;
    o.profile = !a.no_profile;
    o.lowered_ir = a.machine || !a.json_out.empty();
    Sizes given = parse_sizes(a.sizes);
    Terminal term(!a.quiet && !a.machine && isatty(2));
    std::vector<Result> runs;
    int index = 0;
    for (const Definition *d : list) {
        index++;
        Sizes s;
        for (auto &p : given.items())
            if (d->sizes.has(p.first) || list.size() == 1) s.set(p.first, p.second);
        Result r = run(*d, s, o, [&](const Progress &p) {
            if (a.machine) {
                json j = {{"phase", p.phase}, {"fraction", p.fraction}, {"eta_s", p.eta_s}, {"message", p.message}};
                std::fprintf(stderr, "@progress %s\n", j.dump().c_str());
                std::fflush(stderr);
            } else if (!a.quiet) {
                term.progress(index, (int)list.size(), p);
            }
        });
        r.id = "r" + std::to_string(index);
        term.clear();
        runs.push_back(r);
    }
    Machine m = describe_machine(false);
    if (a.machine) {
        json j = result_json(runs.at(0));
        std::printf("%s\n", j.dump().c_str());
        std::fflush(stdout);
    } else {
        std::printf("weft-bench: %s (%s), %d threads\n", m.cpu_name.c_str(), m.cpu.c_str(), threads());
        std::printf("%s", results_table(runs).c_str());
    }
    if (!a.json_out.empty()) write_file(a.json_out, to_json(runs, m));
    if (!a.csv_out.empty()) write_file(a.csv_out, to_csv(runs));
    int bad = 0;
    for (auto &r : runs)
        if (!r.error.empty() || r.check.status == Check::Status::Mismatch) bad++;
    return bad ? 1 : 0;
}

/** `describe`: each benchmark with its default schedule as C++ calls, as JSON (for the server). */
int cmd_describe() {
    json out = json::array();
    for (auto &d : benchmarks()) {
        json sizes = json::object(), order = json::array(), sweep = json::array();
        for (auto &p : d.sizes.items()) sizes[p.first] = p.second, order.push_back(p.first);
        for (auto &s : d.sweep) {
            json sj = json::object();
            for (auto &p : s.items()) sj[p.first] = p.second;
            sweep.push_back(sj);
        }
        json j = {{"name", d.name},          {"description", d.description}, {"sizes", sizes},
                  {"size_order", order},     {"sweep", sweep},              {"peers", d.peer_names},
                  {"default_schedule", ""},  {"has_reference", false},      {"has_work", false}};
        try {
            // The smallest sweep size (else the defaults): building allocates the inputs.
            Sizes s = d.sizes;
            double best = s.volume();
            for (auto &sw : d.sweep) {
                Sizes t = d.sizes;
                for (auto &p : sw.items())
                    if (t.has(p.first)) t.set(p.first, p.second);
                if (t.volume() < best) best = t.volume(), s = t;
            }
            Instance in = d.build(s);
            if (in.schedule) in.schedule();
            j["default_schedule"] = in.pipeline.get_schedule().cpp_source();
            j["has_reference"] = (bool)in.reference;
            j["has_work"] = in.work.flops > 0 || in.work.bytes > 0;
        } catch (const std::exception &e) {
            j["error"] = e.what();
        }
        out.push_back(j);
    }
    std::printf("%s\n", out.dump().c_str());
    return 0;
}

/** `check`: applies schedule text to a benchmark's pipeline; JSON {ok, schedule | error, line}. */
int cmd_check(const std::string &name, const std::vector<std::string> &sizes, const std::string &file) {
    json j;
    try {
        const Definition *d = find_benchmark(name);
        if (!d) throw Error("weft-bench: no benchmark called \"" + name + "\"");
        Sizes s = d->sizes, given = parse_sizes(sizes);
        for (auto &p : given.items()) {
            (void)d->sizes[p.first];
            s.set(p.first, p.second);
        }
        Instance in = d->build(s);
        in.pipeline.apply_schedule_source(read_file(file));
        j = {{"ok", true}, {"schedule", in.pipeline.get_schedule().cpp_source()}};
    } catch (const std::exception &e) {
        j = {{"ok", false}, {"error", e.what()}, {"line", schedule_error_line(e.what())}};
    }
    std::printf("%s\n", j.dump().c_str());
    return 0;
}

int cmd_list() {
    for (auto &d : benchmarks()) {
        std::string peers;
        for (auto &p : d.peer_names) peers += (peers.empty() ? "" : ", ") + p;
        std::string sizes;
        for (auto &p : d.sizes.items()) sizes += (sizes.empty() ? "" : " ") + p.first + "=" + std::to_string(p.second);
        std::printf("%-28s %s\n%-28s sizes: %s%s\n", d.name.c_str(), d.description.c_str(), "", sizes.c_str(),
                    peers.empty() ? "" : ("; peers: " + peers).c_str());
    }
    return 0;
}

int cmd_compare(const std::string &a, const std::string &b) {
    auto before = from_json(read_file(a)), after = from_json(read_file(b));
    std::printf("%s", comparison_table(compare(before, after)).c_str());
    return 0;
}

int cmd_machine() {
    std::printf("%s\n", machine_json(describe_machine(true)).dump().c_str());
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    CLI::App app{"weft-bench: time weft pipelines against their peers, on the terminal or in a browser"};
    app.require_subcommand(0, 1);
    RunArgs ra;
    auto add_run_options = [&](CLI::App *c) {
        c->add_option("names", ra.names, "benchmarks to run (default: every one matching --filter)");
        c->add_option("--filter", ra.filter, "a regular expression over benchmark names");
        c->add_option("--size", ra.sizes, "name=value, e.g. --size width=1024 (repeatable)");
        c->add_option("--threads", ra.threads, "threads of parallel loops (WEFT_NUM_THREADS)")->check(CLI::Range(1, 1024));
        c->add_option("--target", ra.target, "host, host-cuda, ... (Target::from_string)");
        c->add_option("--mode", ra.mode, "schedule: default, custom (with --schedule-file), auto or none");
        c->add_option("--schedule-file", ra.schedule_file, "a file of C++ schedule calls (implies --mode custom)");
        c->add_option("--auto-budget", ra.auto_budget, "seconds of measured search for --mode auto")->check(CLI::Range(0.0, 3600.0));
        c->add_option("--min-time", ra.min_time, "seconds of timed repetitions")->check(CLI::Range(0.0, 3600.0));
        c->add_option("--warmup", ra.warmup, "seconds of warm-up calls")->check(CLI::Range(0.0, 3600.0));
        c->add_option("--min-reps", ra.min_reps, "at least this many repetitions")->check(CLI::Range(1, 1000000));
        c->add_option("--max-reps", ra.max_reps, "at most this many repetitions")->check(CLI::Range(1, 10000000));
        c->add_flag("--flush", ra.flush, "flush the caches between repetitions");
        c->add_flag("--no-peers", ra.no_peers, "do not time the peers");
        c->add_flag("--no-profile", ra.no_profile, "no profiled call");
        c->add_option("--json", ra.json_out, "write Google Benchmark JSON (with weft's records) to a file, - for stdout");
        c->add_option("--csv", ra.csv_out, "write CSV to a file, - for stdout");
        c->add_flag("--quiet", ra.quiet, "no progress output");
    };
    CLI::App *run_c = app.add_subcommand("run", "run benchmarks and print a table");
    add_run_options(run_c);
    CLI::App *child_c = app.add_subcommand("child-run", "(for the server) one run, progress and JSON out");
    child_c->group("");
    add_run_options(child_c);
    CLI::App *list_c = app.add_subcommand("list", "list the benchmarks");
    std::string cmp_a, cmp_b;
    CLI::App *cmp_c = app.add_subcommand("compare", "compare two JSON files of runs (Mann-Whitney U test)");
    cmp_c->add_option("old", cmp_a, "the earlier run's JSON")->required();
    cmp_c->add_option("new", cmp_b, "the later run's JSON")->required();
    int port = 8080;
    bool open_any = false;
    CLI::App *serve_c = app.add_subcommand("serve", "serve the interactive page on 127.0.0.1");
    serve_c->add_option("--port", port, "the port (0: any free one, printed)")->check(CLI::Range(0, 65535));
    serve_c->add_flag("--no-machine", open_any, "do not measure the machine's peak and bandwidth at start");
    std::string rep_in, rep_out = "weft-bench-report.html";
    CLI::App *rep_c = app.add_subcommand("report", "write a self-contained HTML report of a JSON file of runs");
    rep_c->add_option("runs", rep_in, "a JSON file written by run --json or the page's export")->required();
    rep_c->add_option("-o,--output", rep_out, "the HTML file to write");
    CLI::App *desc_c = app.add_subcommand("describe", "(for the server) the benchmarks and default schedules as JSON");
    desc_c->group("");
    std::string chk_name, chk_file;
    std::vector<std::string> chk_sizes;
    CLI::App *chk_c = app.add_subcommand("check", "(for the server) check schedule text against a benchmark");
    chk_c->group("");
    chk_c->add_option("name", chk_name)->required();
    chk_c->add_option("--schedule-file", chk_file)->required();
    chk_c->add_option("--size", chk_sizes);
    CLI::App *mach_c = app.add_subcommand("machine", "measure the machine's peak GFLOP/s and bandwidth");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError &e) {
        return app.exit(e);
    }
    try {
        if (*list_c) return cmd_list();
        if (*cmp_c) return cmd_compare(cmp_a, cmp_b);
        if (*serve_c) return serve(port, !open_any);
        if (*rep_c) return write_report(rep_in, rep_out);
        if (*desc_c) return cmd_describe();
        if (*chk_c) return cmd_check(chk_name, chk_sizes, chk_file);
        if (*mach_c) return cmd_machine();
        if (*child_c) {
            ra.machine = true;
            return cmd_run(ra);
        }
        if (!*run_c) {
            // No command: the default run, a short one of every benchmark at its default sizes.
            ra.min_time = 0.3;
            ra.warmup = 0.05;
            ra.min_reps = 3;
            ra.no_profile = true;
        }
        return cmd_run(ra);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "weft-bench: error: %s\n", e.what());
        return 2;
    }
}

}  // namespace bench
}  // namespace weft
