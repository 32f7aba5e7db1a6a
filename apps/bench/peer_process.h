// Peers in processes of their own: the programs of bench/peers, built into <build>/bench-peers/
// where their libraries are installed (bench_openblas, bench_onednn, bench_halide,
// bench_halide_apps; bench/run races them too), driven through their line
// protocol (bench/peers/bench_common.h: "setup <kernel> <variant> <size> -", then
// "time <reps>" answers each call's milliseconds). Halide 14 links LLVM 14 and weft LLVM 19,
// so Halide can only ever be timed this way. A peer whose program is not built is left out.
#pragma once
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <weft/bench.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace weft_bench_app {

/** Where the peers' programs are: $WEFT_BENCH_PEERS, else <build>/bench-peers beside this
    program's build folder (build/apps/bench/weft-bench -> build/bench-peers). */
inline std::string peers_dir() {
    if (const char *e = std::getenv("WEFT_BENCH_PEERS")) return e;
    char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return "";
    std::string exe(buf, (size_t)n);
    for (int i = 0; i < 3; i++) exe = exe.substr(0, exe.rfind('/'));
    return exe + "/bench-peers";
}

/** One peer program, started at its first use, stopped with its last handle. */
class PeerProcess {
public:
    PeerProcess(std::string exe, std::string setup) : exe_(std::move(exe)), setup_(std::move(setup)) {}
    ~PeerProcess() {
        if (pid_ > 0) {
            const char q[] = "quit\n";
            (void)!::write(in_, q, sizeof q - 1);
            close(in_);
            close(out_);
            int st;
            for (int i = 0; i < 50 && waitpid(pid_, &st, WNOHANG) == 0; i++) usleep(20000);
            if (waitpid(pid_, &st, WNOHANG) == 0) {
                kill(pid_, SIGKILL);
                waitpid(pid_, &st, 0);
            }
        }
    }
    PeerProcess(const PeerProcess &) = delete;
    PeerProcess &operator=(const PeerProcess &) = delete;

    std::vector<double> time(int reps) {
        if (pid_ <= 0) start();
        nlohmann::json r = request("time " + std::to_string(reps), 600);
        return r.at("ms").get<std::vector<double>>();
    }

private:
    std::string exe_, setup_, buffered_;
    pid_t pid_ = -1;
    int in_ = -1, out_ = -1;

    void start() {
        int pi[2], po[2];
        if (pipe2(pi, O_CLOEXEC) != 0) throw weft::Error("cannot start " + exe_ + ": pipe() failed");
        if (pipe2(po, O_CLOEXEC) != 0) {
            close(pi[0]), close(pi[1]);
            throw weft::Error("cannot start " + exe_ + ": pipe() failed");
        }
        std::string t = std::to_string(weft::bench::threads());
        pid_t pid = fork();
        if (pid < 0) {
            close(pi[0]), close(pi[1]), close(po[0]), close(po[1]);
            throw weft::Error("cannot start " + exe_ + ": fork() failed");
        }
        if (pid == 0) {
            dup2(pi[0], 0);
            dup2(po[1], 1);
            int devnull = open("/dev/null", O_WRONLY);
            if (devnull >= 0) dup2(devnull, 2);
            // The peer's libraries on as many threads as weft; OpenBLAS with its own kernel
            // choice (the machine's environment may force older kernels for other programs).
            for (const char *v : {"WEFT_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "HL_NUM_THREADS",
                                  "MKL_NUM_THREADS"})
                setenv(v, t.c_str(), 1);
            unsetenv("OPENBLAS_CORETYPE");
            unsetenv("OPENBLAS_L2_SIZE");
            execl(exe_.c_str(), exe_.c_str(), (char *)nullptr);
            _exit(127);
        }
        close(pi[0]);
        close(po[1]);
        pid_ = pid, in_ = pi[1], out_ = po[0];
        signal(SIGPIPE, SIG_IGN);  // a peer that died is an error from write(), not our end
        request("setup " + setup_ + " -", 600);
    }

    nlohmann::json request(const std::string &line, double limit_s) {
        std::string l = line + "\n";
        if (::write(in_, l.data(), l.size()) != (ssize_t)l.size())
            throw weft::Error(exe_ + " stopped (a crash?) before \"" + line + "\"");
        auto t0 = std::chrono::steady_clock::now();
        size_t nl;
        while ((nl = buffered_.find('\n')) == std::string::npos) {
            double left = limit_s - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            if (left <= 0) throw weft::Error(exe_ + " did not answer \"" + line + "\" in time");
            pollfd p = {out_, POLLIN, 0};
            if (poll(&p, 1, (int)std::min(left * 1000.0, 1000.0)) < 0 && errno != EINTR)
                throw weft::Error(exe_ + ": poll() failed");
            if (!(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
            char buf[65536];
            ssize_t n = read(out_, buf, sizeof buf);
            if (n <= 0) throw weft::Error(exe_ + " stopped (a crash?) while answering \"" + line + "\"");
            buffered_.append(buf, (size_t)n);
        }
        std::string reply = buffered_.substr(0, nl);
        buffered_.erase(0, nl + 1);
        nlohmann::json j;
        try {
            j = nlohmann::json::parse(reply);
        } catch (const std::exception &) {
            throw weft::Error(exe_ + " answered \"" + reply.substr(0, 200) + "\", not JSON");
        }
        if (!j.value("ok", false)) throw weft::Error(exe_ + ": " + j.value("error", std::string("failed")));
        return j;
    }
};

/** Adds the peer `name` run by program `program` of the peers' folder for "<kernel> <variant>
    <size>", where that program is built; returns whether it was. */
inline bool add_process_peer(weft::bench::Instance &in, const std::string &name, const std::string &program,
                             const std::string &kernel, const std::string &variant, int size) {
    std::string exe = peers_dir() + "/" + program;
    if (access(exe.c_str(), X_OK) != 0) return false;
    auto p = std::make_shared<PeerProcess>(exe, kernel + " " + variant + " " + std::to_string(size));
    weft::bench::Peer peer;
    peer.name = name;
    peer.time = [p](int reps) { return p->time(reps); };
    in.peers.push_back(peer);
    return true;
}

/** Whether program `program` is in the peers' folder (for the names listed before building). */
inline bool peer_built(const std::string &program) { return access((peers_dir() + "/" + program).c_str(), X_OK) == 0; }

}  // namespace weft_bench_app
