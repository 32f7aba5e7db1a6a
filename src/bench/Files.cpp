// The benchmarking library's files: Google Benchmark's JSON (with weft's records), CSV, and the
// comparison of two runs (see weft/bench.h).
#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bench/Json.h"
#include "weft/bench.h"

namespace weft {
namespace bench {

using json = nlohmann::ordered_json;  // objects keep their order (sizes: width before height)

namespace {

json stats_json(const Stats &s, bool samples) {
    json j = {{"median", s.median}, {"p10", s.p10},       {"p90", s.p90}, {"mean", s.mean},    {"stddev", s.stddev},
              {"min", s.min},       {"max", s.max},       {"spread", s.spread}, {"reps", s.reps}};
    if (samples) j["samples"] = s.samples;
    return j;
}

Stats stats_from(const json &j) {
    Stats s;
    s.median = j.value("median", 0.0);
    s.p10 = j.value("p10", 0.0);
    s.p90 = j.value("p90", 0.0);
    s.mean = j.value("mean", 0.0);
    s.stddev = j.value("stddev", 0.0);
    s.min = j.value("min", 0.0);
    s.max = j.value("max", 0.0);
    s.spread = j.value("spread", 0.0);
    s.reps = j.value("reps", 0);
    if (j.contains("samples")) s.samples = j.at("samples").get<std::vector<double>>();
    return s;
}

const char *check_word(Check::Status s) {
    return s == Check::Status::Ok ? "ok" : s == Check::Status::Mismatch ? "mismatch" : "none";
}

}  // namespace

json result_json(const Result &r) {
    json sizes = json::object();
    for (auto &p : r.sizes.items()) sizes[p.first] = p.second;
    json order = json::array();
    for (auto &p : r.sizes.items()) order.push_back(p.first);
    json peers = json::array();
    for (auto &p : r.peers) {
        json pj = {{"name", p.name}, {"time_ms", stats_json(p.time, true)}, {"speedup", p.speedup}};
        if (!p.error.empty()) pj["error"] = p.error;
        peers.push_back(pj);
    }
    json j = {{"id", r.id},
              {"benchmark", r.benchmark},
              {"sizes", sizes},
              {"size_order", order},
              {"size_label", r.sizes.label()},
              {"volume", r.sizes.volume()},
              {"threads", r.threads},
              {"target", r.target},
              {"variant", r.variant},
              {"schedule", r.schedule},
              {"first_call_ms", r.first_call_ms},
              {"check", {{"status", check_word(r.check.status)}, {"message", r.check.message}}},
              {"time_ms", stats_json(r.time, true)},
              {"unstable", r.unstable},
              {"warnings", r.warnings},
              {"work", {{"flops", r.work.flops}, {"bytes", r.work.bytes}}},
              {"gflops", r.gflops},
              {"gbs", r.gbs},
              {"intensity", r.intensity},
              {"peers", peers},
              {"profile", r.profile},
              {"loop_nest", r.loop_nest},
              {"lowered_ir", r.lowered_ir},
              {"started", r.started}};
    j["error"] = r.error.empty() ? json(nullptr) : json(r.error);
    return j;
}

Result result_from_json(const json &j) {
    Result r;
    r.id = j.value("id", "");
    r.benchmark = j.at("benchmark").get<std::string>();
    const json &sizes = j.at("sizes");
    if (j.contains("size_order")) {
        for (auto &n : j.at("size_order")) r.sizes.set(n.get<std::string>(), sizes.at(n.get<std::string>()).get<int>());
    } else {
        for (auto it = sizes.begin(); it != sizes.end(); ++it) r.sizes.set(it.key(), it.value().get<int>());
    }
    r.threads = j.value("threads", 1);
    r.target = j.value("target", "");
    r.variant = j.value("variant", "default");
    r.schedule = j.value("schedule", "");
    r.first_call_ms = j.value("first_call_ms", 0.0);
    if (j.contains("check")) {
        std::string s = j.at("check").value("status", "none");
        r.check.status = s == "ok" ? Check::Status::Ok : s == "mismatch" ? Check::Status::Mismatch : Check::Status::None;
        r.check.message = j.at("check").value("message", "");
    }
    if (j.contains("time_ms")) r.time = stats_from(j.at("time_ms"));
    r.unstable = j.value("unstable", false);
    if (j.contains("warnings")) r.warnings = j.at("warnings").get<std::vector<std::string>>();
    if (j.contains("work")) {
        r.work.flops = j.at("work").value("flops", 0.0);
        r.work.bytes = j.at("work").value("bytes", 0.0);
    }
    r.gflops = j.value("gflops", 0.0);
    r.gbs = j.value("gbs", 0.0);
    r.intensity = j.value("intensity", 0.0);
    if (j.contains("peers"))
        for (auto &pj : j.at("peers")) {
            PeerResult p;
            p.name = pj.at("name").get<std::string>();
            if (pj.contains("time_ms")) p.time = stats_from(pj.at("time_ms"));
            p.speedup = pj.value("speedup", 0.0);
            if (pj.contains("error") && pj.at("error").is_string()) p.error = pj.at("error").get<std::string>();
            r.peers.push_back(p);
        }
    r.profile = j.value("profile", "");
    r.loop_nest = j.value("loop_nest", "");
    r.lowered_ir = j.value("lowered_ir", "");
    r.started = j.value("started", "");
    if (j.contains("error") && j.at("error").is_string()) r.error = j.at("error").get<std::string>();
    return r;
}

json machine_json(const Machine &m) {
    return {{"cpu", m.cpu},
            {"cpu_name", m.cpu_name},
            {"threads_max", m.threads},
            {"peak_gflops", m.peak_gflops},
            {"bandwidth_gbs", m.bandwidth_gbs}};
}

Machine machine_from_json(const json &j) {
    Machine m;
    m.cpu = j.value("cpu", "");
    m.cpu_name = j.value("cpu_name", "");
    m.threads = j.value("threads_max", 1);
    m.peak_gflops = j.value("peak_gflops", 0.0);
    m.bandwidth_gbs = j.value("bandwidth_gbs", 0.0);
    return m;
}

std::string run_name(const Result &r) {
    return r.benchmark + "/" + r.sizes.label() + "/" + r.variant + "/threads:" + std::to_string(r.threads);
}

std::string to_json(const std::vector<Result> &runs, const Machine &m) {
    json benches = json::array();
    for (const Result &r : runs) {
        if (!r.error.empty()) continue;
        std::string name = run_name(r);
        auto entry = [&](const std::string &n, const char *type, int index, double t) {
            json e = {{"name", n},           {"family_index", 0}, {"per_family_instance_index", 0},
                      {"run_name", name},    {"run_type", type},  {"repetitions", r.time.reps},
                      {"threads", r.threads}, {"iterations", 1},  {"real_time", t},
                      {"cpu_time", t},       {"time_unit", "ms"}};
            if (index >= 0) e["repetition_index"] = index;
            if (r.gflops > 0) e["GFLOPS"] = r.work.flops / (t / 1000.0) / 1e9;
            if (r.gbs > 0) e["GBps"] = r.work.bytes / (t / 1000.0) / 1e9;
            return e;
        };
        for (size_t i = 0; i < r.time.samples.size(); i++)
            benches.push_back(entry(name, "iteration", (int)i, r.time.samples[i]));
        auto agg = [&](const char *what, double v) {
            json e = entry(name + "_" + what, "aggregate", -1, v);
            e["aggregate_name"] = what;
            if (std::string(what) == "cv") {
                e["aggregate_unit"] = "percentage";
                e.erase("GFLOPS");
                e.erase("GBps");
            }
            return e;
        };
        benches.push_back(agg("mean", r.time.mean));
        benches.push_back(agg("median", r.time.median));
        benches.push_back(agg("stddev", r.time.stddev));
        benches.push_back(agg("cv", r.time.mean > 0 ? r.time.stddev / r.time.mean : 0.0));
    }
    json runs_j = json::array();
    for (const Result &r : runs) runs_j.push_back(result_json(r));
    json ctx = {{"date", runs.empty() ? std::string() : runs.front().started},
                {"host_name", ""},
                {"executable", "weft-bench"},
                {"num_cpus", m.threads},
                {"mhz_per_cpu", 0},
                {"cpu_scaling_enabled", false},
                {"caches", json::array()},
                {"library_build_type", "release"},
                {"weft_machine", machine_json(m)}};
    json doc = {{"context", ctx}, {"benchmarks", benches}, {"weft_runs", runs_j}};
    return doc.dump(2) + "\n";
}

namespace {
std::string csv_field(const std::string &s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string r = "\"";
    for (char c : s) r += c == '"' ? std::string("\"\"") : std::string(1, c);
    return r + "\"";
}
std::string num(double v) {
    std::ostringstream os;
    os.precision(6);
    os << v;
    return os.str();
}
}  // namespace

std::string to_csv(const std::vector<Result> &runs) {
    std::ostringstream os;
    os << "id,benchmark,sizes,threads,target,variant,median_ms,p10_ms,p90_ms,mean_ms,stddev_ms,spread,reps,unstable,"
          "first_call_ms,gflops,gbs,check,peers,error\n";
    for (const Result &r : runs) {
        std::string peers;
        for (auto &p : r.peers)
            peers += (peers.empty() ? "" : ";") + p.name + "=" + (p.error.empty() ? num(p.time.median) + "ms/" + num(p.speedup) + "x" : "error");
        os << csv_field(r.id) << "," << csv_field(r.benchmark) << "," << csv_field(r.sizes.label()) << "," << r.threads
           << "," << csv_field(r.target) << "," << csv_field(r.variant) << "," << num(r.time.median) << ","
           << num(r.time.p10) << "," << num(r.time.p90) << "," << num(r.time.mean) << "," << num(r.time.stddev) << ","
           << num(r.time.spread) << "," << r.time.reps << "," << (r.unstable ? 1 : 0) << "," << num(r.first_call_ms)
           << "," << num(r.gflops) << "," << num(r.gbs) << "," << check_word(r.check.status) << ","
           << csv_field(peers) << "," << csv_field(r.error) << "\n";
    }
    return os.str();
}

std::vector<Result> from_json(const std::string &text, Machine *m) {
    json doc;
    try {
        doc = json::parse(text);
    } catch (const std::exception &e) {
        throw Error(std::string("weft::bench: not JSON: ") + e.what());
    }
    if (!doc.is_object() || !doc.contains("weft_runs") || !doc.at("weft_runs").is_array())
        throw Error("weft::bench: not a weft-bench file (no \"weft_runs\" list; a Google Benchmark file from "
                    "another program has no weft records)");
    std::vector<Result> out;
    try {
        for (auto &j : doc.at("weft_runs")) out.push_back(result_from_json(j));
        if (m && doc.contains("context") && doc.at("context").contains("weft_machine"))
            *m = machine_from_json(doc.at("context").at("weft_machine"));
    } catch (const Error &) {
        throw;
    } catch (const std::exception &e) {
        throw Error(std::string("weft::bench: a damaged run record: ") + e.what());
    }
    return out;
}

std::vector<Comparison> compare(const std::vector<Result> &before, const std::vector<Result> &after) {
    std::vector<Comparison> out;
    for (const Result &b : after) {
        if (!b.error.empty()) continue;
        for (const Result &a : before) {
            if (!a.error.empty() || a.benchmark != b.benchmark || !(a.sizes == b.sizes) || a.threads != b.threads ||
                a.variant != b.variant)
                continue;
            Comparison c;
            c.benchmark = b.benchmark;
            c.size_label = b.sizes.label();
            c.variant = b.variant;
            c.threads = b.threads;
            c.old_ms = a.time.median;
            c.new_ms = b.time.median;
            c.ratio = a.time.median > 0 ? b.time.median / a.time.median : 0.0;
            c.p_value = mann_whitney_p(a.time.samples, b.time.samples);
            c.significant = c.p_value < 0.05;
            out.push_back(c);
            break;
        }
    }
    return out;
}

}  // namespace bench
}  // namespace weft
