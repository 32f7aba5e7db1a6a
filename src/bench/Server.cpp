// The benchmarking app's server (`weft-bench serve`, cpp-httplib, 127.0.0.1 only) and its HTML
// report. Every run, schedule check and description is made by a child process of this same
// program (`child-run`, `check`, `describe`, `machine`): each gets the thread count asked for
// (the thread pool's size is fixed per process), and a crash or a hang in one (killed after
// a time limit) is an error on the page, not the end of the server.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include <httplib.h>

#include "bench/App.h"
#include "bench/Json.h"
#include "bench_page_html.h"
#include "bench_report_html.h"

namespace weft {
namespace bench {

using json = nlohmann::ordered_json;  // objects keep their order (sizes: width before height)

std::string chart_js() {
    const char *env = std::getenv("WEFT_CHART_JS");
    std::string path = env && *env ? env : "/usr/share/javascript/chart.js/chart.min.js";
    std::ifstream f(path, std::ios::binary);
    if (!f)
        throw Error("weft-bench: Chart.js not found at " + path +
                    " (Debian's package libjs-chart.js, which the README's set-up installs; or set WEFT_CHART_JS)");
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

namespace {

/** JSON safe inside a <script> element: "</" cannot close it. */
std::string script_json(const json &j) {
    std::string s = j.dump(), out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size(); i++) {
        if (s[i] == '<' && i + 1 < s.size() && s[i + 1] == '/') out += "<\\/", i++;
        else out += s[i];
    }
    return out;
}

std::string replace_line(std::string text, const std::string &marker, const std::string &with) {
    auto p = text.find(marker);
    if (p == std::string::npos) throw Error("weft-bench: the report template lacks " + marker);
    return text.replace(p, marker.size(), with);
}

// ---------------------------------------------------------------- child processes

struct ChildResult {
    int status = -1;  // exit status; -1 when killed or not started
    bool timed_out = false;
    std::string out, err;
};

/** Runs this program with args; stderr lines go to on_line as they come. Killed after limit_s. */
ChildResult run_child(const std::vector<std::string> &args, const std::function<void(const std::string &)> &on_line,
                      double limit_s) {
    ChildResult r;
    int po[2], pe[2];
    if (pipe2(po, O_CLOEXEC) != 0) throw Error("weft-bench: pipe() failed");
    if (pipe2(pe, O_CLOEXEC) != 0) {
        close(po[0]), close(po[1]);
        throw Error("weft-bench: pipe() failed");
    }
    std::vector<std::string> argv_s = {"/proc/self/exe"};
    for (auto &a : args) argv_s.push_back(a);
    std::vector<char *> argv;
    for (auto &a : argv_s) argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    pid_t pid = fork();
    if (pid < 0) {
        close(po[0]), close(po[1]), close(pe[0]), close(pe[1]);
        throw Error("weft-bench: fork() failed");
    }
    if (pid == 0) {
        dup2(po[1], 1);
        dup2(pe[1], 2);
        setpgid(0, 0);
        // Sizes typed into the page can ask for more memory than the machine has: with the
        // address space capped at 80% of it, such a run fails with an error (std::bad_alloc)
        // instead of waking the out-of-memory killer.
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        if (pages > 0 && page > 0) {
            rlim_t cap = (rlim_t)((double)pages * (double)page * 0.8);
            rlimit rl{cap, cap};
            setrlimit(RLIMIT_AS, &rl);
        }
        execv("/proc/self/exe", argv.data());
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    auto start = std::chrono::steady_clock::now();
    std::string line_buf;
    bool out_open = true, err_open = true;
    char buf[65536];
    while (out_open || err_open) {
        double left = limit_s - std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (left <= 0) {
            r.timed_out = true;
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            break;
        }
        pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
        int n = poll(fds, 2, (int)std::min(left * 1000.0, 500.0));
        if (n < 0 && errno != EINTR) break;
        for (int k = 0; k < 2; k++) {
            if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            ssize_t got = read(fds[k].fd, buf, sizeof buf);
            if (got <= 0) {
                (k == 0 ? out_open : err_open) = false;
                continue;
            }
            if (k == 0) {
                r.out.append(buf, (size_t)got);
                if (r.out.size() > (256u << 20)) r.out.clear();  // a runaway child: its JSON is lost, not our memory
            } else {
                line_buf.append(buf, (size_t)got);
                size_t nl;
                while ((nl = line_buf.find('\n')) != std::string::npos) {
                    std::string line = line_buf.substr(0, nl);
                    line_buf.erase(0, nl + 1);
                    if (r.err.size() < (1u << 20)) r.err += line + "\n";
                    if (on_line) on_line(line);
                }
            }
        }
        if (!(fds[0].revents | fds[1].revents) && n == 0) continue;
        if (!out_open && !err_open) break;
        if (fds[0].revents & POLLNVAL) out_open = false;
        if (fds[1].revents & POLLNVAL) err_open = false;
    }
    close(po[0]);
    close(pe[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    if (!r.timed_out && WIFEXITED(st)) r.status = WEXITSTATUS(st);
    if (!line_buf.empty() && on_line) on_line(line_buf);
    return r;
}

/** The last line of the child's stdout that is JSON, or a weft::Error with what it printed. */
json child_json(const ChildResult &c, const std::string &what) {
    if (c.timed_out) throw Error("weft-bench: " + what + " took too long and was stopped");
    std::string s = c.out;
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    auto nl = s.rfind('\n');
    std::string last = nl == std::string::npos ? s : s.substr(nl + 1);
    try {
        if (!last.empty()) return json::parse(last);
    } catch (const std::exception &) {
    }
    std::string err = c.err;
    if (err.size() > 4000) err = "..." + err.substr(err.size() - 4000);
    throw Error("weft-bench: " + what + " failed (exit status " + std::to_string(c.status) + ")" +
                (err.empty() ? std::string() : ":\n" + err));
}

/** Text in a temporary file (a schedule for a child), removed with this object. */
struct TempFile {
    std::string path;
    explicit TempFile(const std::string &text) {
        char tmpl[] = "/tmp/weft-bench-schedule-XXXXXX";
        int fd = mkstemp(tmpl);
        if (fd < 0) throw Error("weft-bench: cannot write a temporary file");
        path = tmpl;
        bool ok = ::write(fd, text.data(), text.size()) == (ssize_t)text.size();
        close(fd);
        if (!ok) {
            unlink(tmpl);
            throw Error("weft-bench: cannot write a temporary file");
        }
    }
    ~TempFile() { unlink(path.c_str()); }
    TempFile(const TempFile &) = delete;
    TempFile &operator=(const TempFile &) = delete;
};

/** A request's sizes as the child's --size arguments. */
void add_size_args(std::vector<std::string> &args, const json &sizes) {
    for (auto it = sizes.begin(); it != sizes.end(); ++it)
        args.push_back("--size"), args.push_back(it.key() + "=" + std::to_string(it.value().get<int>()));
}

// ---------------------------------------------------------------- the server's state

struct Job {
    std::string id;
    json request;
    std::string state = "queued";  // queued, running, done, failed
    json progress = json::object();
    json result;  // null until done
    std::string error;
    std::vector<std::string> warnings;
};

class State {
public:
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::shared_ptr<Job>> queue;
    std::map<std::string, std::shared_ptr<Job>> jobs;
    std::vector<json> runs;
    json machine;
    json benchmarks;  // null until described
    std::string describe_error;
    int next_job = 1, next_run = 1;
    bool measure_machine = true;
    std::atomic<bool> stop{false};

    json job_json(const Job &j) {
        return {{"id", j.id},
                {"state", j.state},
                {"progress", j.progress},
                {"result", j.result},
                {"error", j.error.empty() ? json(nullptr) : json(j.error)}};
    }

    /** The benchmark descriptions (the first call runs `describe` in a child). */
    json describe() {
        {
            std::lock_guard<std::mutex> l(mu);
            if (!benchmarks.is_null()) return benchmarks;
        }
        std::lock_guard<std::mutex> once(describe_mu_);
        {
            std::lock_guard<std::mutex> l(mu);
            if (!benchmarks.is_null()) return benchmarks;
        }
        json d = child_json(run_child({"describe"}, nullptr, 600), "describing the benchmarks");
        std::lock_guard<std::mutex> l(mu);
        benchmarks = d;
        return d;
    }

    void worker() {
        if (measure_machine) {
            try {
                json m = child_json(run_child({"machine"}, nullptr, 300), "measuring the machine");
                std::lock_guard<std::mutex> l(mu);
                machine = m;
            } catch (const std::exception &e) {
                std::fprintf(stderr, "weft-bench: %s\n", e.what());
            }
        }
        while (!stop) {
            std::shared_ptr<Job> job;
            {
                std::unique_lock<std::mutex> l(mu);
                cv.wait(l, [&] { return stop || !queue.empty(); });
                if (stop) return;
                job = queue.front();
                queue.pop_front();
                job->state = "running";
            }
            execute(*job);
        }
    }

private:
    std::mutex describe_mu_;

    void execute(Job &job) {
        const json &q = job.request;
        try {
            std::vector<std::string> args = {"child-run", q.at("benchmark").get<std::string>(), "--threads",
                                             std::to_string(q.value("threads", 1)), "--target",
                                             q.value("target", std::string("host")), "--mode",
                                             q.value("schedule_mode", std::string("default")), "--min-time",
                                             std::to_string(q.value("min_seconds", 1.0))};
            add_size_args(args, q.at("sizes"));
            if (!q.value("peers", true)) args.push_back("--no-peers");
            if (q.value("flush_cache", false)) args.push_back("--flush");
            std::unique_ptr<TempFile> schedule;
            if (q.value("schedule_mode", std::string("default")) == "custom") {
                schedule = std::make_unique<TempFile>(q.value("schedule", std::string()));
                args.push_back("--schedule-file"), args.push_back(schedule->path);
            }
            ChildResult c = run_child(
                args,
                [&](const std::string &line) {
                    std::lock_guard<std::mutex> l(mu);
                    if (line.rfind("@progress ", 0) == 0) {
                        try {
                            job.progress = json::parse(line.substr(10));
                        } catch (const std::exception &) {
                        }
                    } else if (!line.empty() && job.warnings.size() < 100) {
                        job.warnings.push_back(line);
                    }
                },
                1800);
            json r = child_json(c, "the run");
            std::lock_guard<std::mutex> l(mu);
            if (r.contains("warnings") && r["warnings"].is_array())
                for (auto &w : job.warnings) r["warnings"].push_back(w);
            if (r.contains("error") && r["error"].is_string()) {
                job.error = r["error"].get<std::string>();
                job.state = "failed";
                job.result = nullptr;
            } else {
                r["id"] = "r" + std::to_string(next_run++);
                job.result = r;
                job.state = "done";
                runs.push_back(r);
            }
        } catch (const std::exception &e) {
            std::lock_guard<std::mutex> l(mu);
            job.error = e.what();
            job.state = "failed";
        }
    }
};

void send_json(httplib::Response &res, const json &j, int status = 200) {
    res.status = status;
    res.set_content(j.dump(), "application/json");
}

void send_error(httplib::Response &res, int status, const std::string &msg) { send_json(res, {{"error", msg}}, status); }

/** A run request checked against the described benchmarks; throws Error naming what is wrong. */
void check_request(const json &q, const json &benchmarks, int threads_max) {
    if (!q.is_object()) throw Error("the request is not a JSON object");
    std::string name = q.value("benchmark", std::string());
    const json *b = nullptr;
    for (auto &d : benchmarks)
        if (d.value("name", std::string()) == name) b = &d;
    if (!b) throw Error("no benchmark called \"" + name + "\"");
    if (!q.contains("sizes") || !q.at("sizes").is_object()) throw Error("\"sizes\" must be an object of integers");
    for (auto it = q.at("sizes").begin(); it != q.at("sizes").end(); ++it) {
        if (!b->at("sizes").contains(it.key())) throw Error("\"" + name + "\" has no size called \"" + it.key() + "\"");
        if (!it.value().is_number_integer() || it.value().get<int64_t>() < 1 || it.value().get<int64_t>() > (1 << 30))
            throw Error("size " + it.key() + " must be an integer from 1 to 2^30");
    }
    if (q.contains("threads") && (!q.at("threads").is_number_integer() || q.at("threads").get<int64_t>() < 1 ||
                                  q.at("threads").get<int64_t>() > std::max(1, threads_max) * 4))
        throw Error("threads must be an integer from 1 to " + std::to_string(std::max(1, threads_max) * 4));
    std::string mode = q.value("schedule_mode", std::string("default"));
    (void)parse_mode(mode);
    if (mode == "custom" && (!q.contains("schedule") || !q.at("schedule").is_string()))
        throw Error("a custom schedule needs \"schedule\": the C++ schedule calls");
    if (q.contains("schedule") && q.at("schedule").is_string() && q.at("schedule").get<std::string>().size() > (1u << 20))
        throw Error("the schedule text is over 1 MiB");
    if (q.contains("min_seconds") &&
        (!q.at("min_seconds").is_number() || q.at("min_seconds").get<double>() < 0 || q.at("min_seconds").get<double>() > 600))
        throw Error("min_seconds must be a number from 0 to 600");
    (void)Target::from_string(q.value("target", std::string("host")));
}

}  // namespace

int serve(int port, bool measure_machine) {
    std::string chart = chart_js();  // an Error now, not a broken page later
    auto st = std::make_shared<State>();
    st->measure_machine = measure_machine;
    {
        Machine m = describe_machine(false);
        st->machine = machine_json(m);
    }
    std::thread worker([st] { st->worker(); });
    worker.detach();

    httplib::Server srv;
    srv.set_payload_max_length(4u << 20);
    srv.Get("/", [](const httplib::Request &, httplib::Response &res) { res.set_content(kBenchPageHtml, "text/html"); });
    srv.Get("/chart.js", [chart](const httplib::Request &, httplib::Response &res) {
        res.set_content(chart, "application/javascript");
    });
    srv.Get("/api/machine", [st](const httplib::Request &, httplib::Response &res) {
        std::lock_guard<std::mutex> l(st->mu);
        json m = st->machine;
        m["targets"] = cuda_available() ? json::array({"host", "host-cuda"}) : json::array({"host"});
        send_json(res, m);
    });
    srv.Get("/api/benchmarks", [st](const httplib::Request &, httplib::Response &res) {
        try {
            send_json(res, st->describe());
        } catch (const std::exception &e) {
            send_error(res, 500, e.what());
        }
    });
    srv.Post("/api/schedule", [st](const httplib::Request &req, httplib::Response &res) {
        try {
            json q = json::parse(req.body);
            std::string name = q.value("benchmark", std::string()), text = q.value("schedule", std::string());
            if (text.size() > (1u << 20)) throw Error("the schedule text is over 1 MiB");
            json benches = st->describe();
            json probe = {{"benchmark", name}, {"sizes", q.value("sizes", json::object())}};
            check_request(probe, benches, 1 << 20);
            TempFile file(text);
            std::vector<std::string> args = {"check", name, "--schedule-file", file.path};
            add_size_args(args, probe["sizes"]);
            send_json(res, child_json(run_child(args, nullptr, 120), "checking the schedule"));
        } catch (const std::exception &e) {
            send_json(res, {{"ok", false}, {"error", e.what()}, {"line", 0}}, 400);
        }
    });
    srv.Post("/api/run", [st](const httplib::Request &req, httplib::Response &res) {
        try {
            json q = json::parse(req.body);
            int tmax;
            {
                std::lock_guard<std::mutex> l(st->mu);
                tmax = st->machine.value("threads_max", 1);
            }
            check_request(q, st->describe(), tmax);
            std::lock_guard<std::mutex> l(st->mu);
            if (st->queue.size() >= 100) throw Error("100 runs are queued already");
            auto job = std::make_shared<Job>();
            job->id = "j" + std::to_string(st->next_job++);
            job->request = q;
            st->jobs[job->id] = job;
            st->queue.push_back(job);
            st->cv.notify_all();
            send_json(res, {{"job", job->id}});
        } catch (const std::exception &e) {
            send_error(res, 400, e.what());
        }
    });
    srv.Get(R"(/api/jobs/([A-Za-z0-9]+))", [st](const httplib::Request &req, httplib::Response &res) {
        std::lock_guard<std::mutex> l(st->mu);
        auto it = st->jobs.find(req.matches[1]);
        if (it == st->jobs.end()) return send_error(res, 404, "no job " + std::string(req.matches[1]));
        send_json(res, st->job_json(*it->second));
    });
    srv.Get("/api/runs", [st](const httplib::Request &, httplib::Response &res) {
        std::lock_guard<std::mutex> l(st->mu);
        send_json(res, st->runs);
    });
    srv.Get("/api/export", [st](const httplib::Request &req, httplib::Response &res) {
        std::vector<Result> runs;
        Machine m;
        {
            std::lock_guard<std::mutex> l(st->mu);
            for (auto &r : st->runs) runs.push_back(result_from_json(r));
            m = machine_from_json(st->machine);
        }
        std::string format = req.has_param("format") ? req.get_param_value("format") : "json";
        if (format == "csv") {
            res.set_header("Content-Disposition", "attachment; filename=\"weft-bench-runs.csv\"");
            res.set_content(to_csv(runs), "text/csv");
        } else if (format == "json") {
            res.set_header("Content-Disposition", "attachment; filename=\"weft-bench-runs.json\"");
            res.set_content(to_json(runs, m), "application/json");
        } else {
            send_error(res, 400, "format is json or csv");
        }
    });
    int bound = port;
    if (port == 0) bound = srv.bind_to_any_port("127.0.0.1");
    else if (!srv.bind_to_port("127.0.0.1", port)) bound = -1;
    if (bound < 0) throw Error("weft-bench: cannot listen on 127.0.0.1:" + std::to_string(port) + " (in use?)");
    std::printf("weft-bench: serving http://127.0.0.1:%d/ (Ctrl-C to stop)\n", bound);
    std::fflush(stdout);
    srv.listen_after_bind();
    st->stop = true;
    st->cv.notify_all();
    return 0;
}

int write_report(const std::string &runs_path, const std::string &html_out) {
    Machine m;
    std::vector<Result> runs = from_json(read_file(runs_path), &m);
    json arr = json::array();
    for (auto &r : runs) arr.push_back(result_json(r));
    std::string html = kBenchReportHtml;
    html = replace_line(html, "/*WEFT_CHART_JS*/", chart_js());
    html = replace_line(html, "/*WEFT_RUNS_JSON*/",
                        "const WEFT_RUNS = " + script_json(arr) + ";\nconst WEFT_MACHINE = " + script_json(machine_json(m)) + ";");
    write_file(html_out, html);
    std::printf("weft-bench: wrote %s (%zu runs)\n", html_out.c_str(), runs.size());
    return 0;
}

}  // namespace bench
}  // namespace weft
