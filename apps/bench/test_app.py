#!/usr/bin/env python3
"""weft-bench used as a person would: test_app.py cli|terminal|server|gbench <path to weft-bench>.

cli:      run (table, JSON in Google Benchmark's format, CSV), a custom schedule, a bad one,
          compare, report, list, and bad arguments (clear errors, exit status 2).
terminal: the live progress line under a pseudo-terminal; plain lines without one.
server:   `serve --port 0` on 127.0.0.1, then its API as the page uses it.
gbench:   Google Benchmark's compare.py reads the JSON; its U test agrees with `compare`.
Only the Python standard library."""
import json
import os
import pty
import re
import select
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

EXE = None
FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what, flush=True)


def run(args, timeout=300):
    p = subprocess.run([EXE] + args, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


QUICK = ["--min-time", "0.05", "--warmup", "0", "--min-reps", "5"]


def test_cli(tmp):
    rc, out, err = run(["list"])
    check(rc == 0 and "sgemm" in out and "app_" in out and "blur" in out, "list names the benchmarks: " + out[:300])

    js, csv = os.path.join(tmp, "a.json"), os.path.join(tmp, "a.csv")
    rc, out, err = run(["run", "blur", "--size", "width=128", "--size", "height=96", "--json", js, "--csv", csv] + QUICK)
    check(rc == 0, "run blur exits 0: %d %s %s" % (rc, out, err))
    check("benchmark" in out and "blur" in out and "128x96" in out and re.search(r"\bok\b", out), "the table: " + out)
    check("\x1b" not in err, "no terminal codes without a terminal")
    doc = json.load(open(js))
    iters = [b for b in doc["benchmarks"] if b["run_type"] == "iteration"]
    aggs = {b["aggregate_name"] for b in doc["benchmarks"] if b["run_type"] == "aggregate"}
    check(len(iters) >= 5 and {"median", "mean", "stddev", "cv"} <= aggs, "Google Benchmark's entries: %s" % aggs)
    check(all(b["time_unit"] == "ms" and b["real_time"] > 0 for b in iters), "times in ms")
    r = doc["weft_runs"][0]
    check(r["check"]["status"] == "ok" and r["sizes"] == {"width": 128, "height": 96}, "the record: %s" % r["check"])
    check(r["gflops"] > 0 and r["intensity"] > 0, "work stated: GFLOP/s and intensity")
    check(r["loop_nest"] != "" and "blur_y" in r["lowered_ir"], "the loop nest and the lowered IR are kept")
    lines = open(csv).read().splitlines()
    check(lines[0].startswith("id,benchmark,sizes,threads") and lines[1].startswith("r1,blur,128x96,"), "CSV: %s" % lines[:2])

    js3 = os.path.join(tmp, "auto.json")
    rc, out, err = run(["run", "blur", "--size", "width=96", "--size", "height=64", "--mode", "auto", "--flush", "--json", js3] + QUICK)
    r3 = json.load(open(js3))["weft_runs"][0] if rc == 0 else {}
    check(rc == 0 and r3.get("variant") == "auto" and r3.get("check", {}).get("status") == "ok" and r3.get("schedule"),
          "the automatic scheduler's schedule, caches flushed: " + out + err)

    rc, out, err = run(["run", "sgemm", "--size", "n=64"] + QUICK)
    check(rc == 0 and re.search(r"Eigen \d+\.\d+x", out) is not None, "sgemm against Eigen: " + out + err)

    # A peer in a process of its own, as bench/run builds them (here a stand-in that speaks the
    # protocol of bench/peers/bench_common.h and says each call took 1 ms), and a broken one.
    peers = os.path.join(tmp, "peers")
    os.mkdir(peers)
    fake = os.path.join(peers, "bench_halide")
    open(fake, "w").write("#!" + sys.executable + "\n" + """import json, sys
for line in sys.stdin:
    w = line.split()
    if w and w[0] == "setup":
        print(json.dumps({"ok": w[1] == "sgemm_rm" and w[2] == "manual", "error": "not " + w[1], "call_ms": 1}), flush=True)
    elif w and w[0] == "time":
        print(json.dumps({"ok": True, "ms": [1.0] * int(w[1])}), flush=True)
    elif w and w[0] == "quit":
        break
""")
    os.chmod(fake, 0o755)
    broken = os.path.join(peers, "bench_onednn")
    open(broken, "w").write("#!/bin/sh\nexit 3\n")
    os.chmod(broken, 0o755)
    env = dict(os.environ, WEFT_BENCH_PEERS=peers)
    p = subprocess.run([EXE, "run", "sgemm", "--size", "n=64"] + QUICK, capture_output=True, text=True, env=env, timeout=300)
    check(p.returncode == 0 and re.search(r"Halide 14 \d+\.\d+x", p.stdout) is not None, "a peer in its own process: " + p.stdout + p.stderr)
    p = subprocess.run([EXE, "run", "conv", "--size", "size=8", "--json", os.path.join(tmp, "c.json")] + QUICK,
                       capture_output=True, text=True, env=env, timeout=300)
    check(p.returncode == 0 and "oneDNN error" in p.stdout and "Halide 14 error" in p.stdout, "broken peers are errors: " + p.stdout + p.stderr)
    cj = json.load(open(os.path.join(tmp, "c.json")))["weft_runs"][0]
    errs = {q["name"]: q.get("error", "") for q in cj["peers"]}
    check("stopped" in errs.get("oneDNN", "") and "not conv" in errs.get("Halide 14", ""), "the peers' errors say why: %s" % errs)
    p = subprocess.run([EXE, "list"], capture_output=True, text=True, env=env)
    check("peers: oneDNN, Halide 14" in p.stdout, "listed peers include the built programs: " + p.stdout[:600])

    sched = os.path.join(tmp, "s.txt")
    open(sched, "w").write("// strips of 8 rows\nblur_y.split(y, yo, yi, 8).parallel(yo).vectorize(x, 8);\n")
    js2 = os.path.join(tmp, "b.json")
    rc, out, err = run(["run", "blur", "--size", "width=128", "--size", "height=96", "--schedule-file", sched, "--json", js2] + QUICK)
    check(rc == 0 and "custom" in out, "a custom schedule runs: " + out + err)
    r2 = json.load(open(js2))["weft_runs"][0]
    check("split(y, yo, yi, 8)" in r2["schedule"] and r2["variant"] == "custom", "the schedule run is recorded: " + r2["schedule"])

    open(sched, "w").write("blur_y.split(y, yo, yi, 8);\nblur_y.vectorise(x);\n")
    rc, out, err = run(["run", "blur", "--size", "width=64", "--size", "height=64", "--schedule-file", sched] + QUICK)
    check(rc == 1 and "error" in out and "line 2" in out, "a bad schedule is an error naming the line: " + out + err)

    rc, out, err = run(["compare", js, js2])
    check(rc == 0 and "(no benchmark" in out, "runs of different variants are not paired: " + out + err)
    rc, out, err = run(["compare", js, js])
    check(rc == 0 and "blur" in out and "no significant change" in out, "compare a file with itself: " + out + err)

    html = os.path.join(tmp, "r.html")
    rc, out, err = run(["report", js, "-o", html])
    page = open(html).read() if os.path.exists(html) else ""
    check(rc == 0 and "WEFT_RUNS" in page and "/*WEFT_RUNS_JSON*/" not in page and "Chart" in page, "report: " + out + err)
    check("https://" not in page.split("WEFT_RUNS")[0][-2000:], "the report loads nothing from the network")

    # Bad input: clear errors, exit status 2 (CLI11's own for malformed options).
    rc, out, err = run(["run", "no_such_benchmark"])
    check(rc == 2 and "no benchmark called" in err, "unknown benchmark: %d %s" % (rc, err))
    rc, out, err = run(["run", "blur", "--size", "width=abc"])
    check(rc == 2 and "not an integer" in err, "bad size: %d %s" % (rc, err))
    rc, out, err = run(["run", "blur", "--size", "depth=3"] + QUICK)
    check(rc == 1 and "no size called" in out, "unknown size name: %d %s" % (rc, out))
    rc, out, err = run(["run", "--filter", "(("])
    check(rc == 2 and "not a regular expression" in err, "bad filter: %d %s" % (rc, err))
    rc, out, err = run(["run", "blur", "--threads", "0"])
    check(rc != 0 and rc != 1 and "threads" in (out + err), "threads 0: %d %s" % (rc, err))
    rc, out, err = run(["compare", os.path.join(tmp, "missing.json"), js])
    check(rc == 2 and "cannot read" in err, "missing file: %d %s" % (rc, err))
    open(sched, "w").write("{not json")
    rc, out, err = run(["report", sched, "-o", html])
    check(rc == 2 and "not JSON" in err, "report of a bad file: %d %s" % (rc, err))
    rc, out, err = run(["run", "blur", "--mode", "fast"])
    check(rc == 2 and "default, custom, auto or none" in err, "bad mode: %d %s" % (rc, err))


def test_terminal(tmp):
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(EXE, [EXE, "run", "blur", "--size", "width=512", "--size", "height=512", "--min-time", "0.5"])
    data = b""
    deadline = time.time() + 300
    while time.time() < deadline:
        r, _, _ = select.select([fd], [], [], 1.0)
        if r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
    _, status = os.waitpid(pid, 0)
    text = data.decode("utf-8", "replace")
    check(os.WEXITSTATUS(status) == 0, "run under a terminal exits 0")
    check("\r\x1b[K" in text, "the progress line is rewritten in place on a terminal")
    check(re.search(r"\[1/1\] blur \[[# ]{20}\] \d+% ", text) is not None, "the progress line shows a bar and a percentage")
    check("s left" in text, "the progress line says the time left")
    check(re.search(r"benchmark +sizes[^\n]*\r?\n-+\r?\nblur ", text) is not None, "the table follows: " + text[-600:])
    # Without a terminal: plain lines, one per phase.
    p = subprocess.run([EXE, "run", "blur", "--size", "width=64", "--size", "height=64"] + QUICK, capture_output=True, text=True)
    check("\x1b" not in p.stderr and "[1/1] blur: timing" in p.stderr.replace("warming up", "timing"),
          "plain progress lines without a terminal: " + p.stderr)


def test_gbench(tmp):
    """Google Benchmark's own compare.py (Debian's libbenchmark-tools, with scipy) reads the JSON
    files, and its U test's p-value is weft-bench compare's."""
    compare_py = "/usr/share/benchmark/compare.py"
    probe = subprocess.run(["/usr/bin/python3", "-c", "import scipy.stats"], capture_output=True)
    if not os.path.exists(compare_py) or probe.returncode != 0:
        print("SKIPPED: needs %s and python3-scipy (Debian: libbenchmark-tools, python3-scipy)" % compare_py)
        sys.exit(77)
    files = []
    for k in range(2):
        f = os.path.join(tmp, "g%d.json" % k)
        rc, out, err = run(["run", "blur", "--size", "width=64", "--size", "height=64", "--min-time", "0",
                            "--min-reps", "40", "--max-reps", "40", "--warmup", "0", "--no-peers", "--json", f])
        check(rc == 0, "run for compare.py: " + out + err)
        files.append(f)
    p = subprocess.run(["/usr/bin/python3", compare_py, "--no-color", "benchmarks", files[0], files[1]],
                       capture_output=True, text=True, timeout=120)
    m = re.search(r"blur/64x64/default/threads:\d+_pvalue\s+([0-9.]+)\s+([0-9.]+)\s+U Test, Repetitions: 40 vs 40", p.stdout)
    check(p.returncode == 0 and m is not None, "compare.py reads the files and runs its U test: " + p.stdout[-1500:] + p.stderr[-1500:])
    rc, out, err = run(["compare", files[0], files[1]])
    mine = re.search(r"blur +64x64 .* ([0-9.eE+-]+)  ", out + "  ")
    ref = subprocess.run(["/usr/bin/python3", "-c", """import json, sys
from scipy.stats import mannwhitneyu
s = [[b["real_time"] for b in json.load(open(f))["benchmarks"] if b["run_type"] == "iteration"] for f in sys.argv[1:]]
print(mannwhitneyu(s[0], s[1], alternative="two-sided", method="asymptotic").pvalue)""", files[0], files[1]],
                         capture_output=True, text=True)
    check(rc == 0 and mine is not None and ref.returncode == 0, "compare and scipy ran: " + out + err + ref.stderr)
    if mine and ref.returncode == 0:
        a, b = float(mine.group(1)), float(ref.stdout)
        check(abs(a - b) <= 1e-4 + 1e-3 * b, "weft-bench compare's p-value %g is scipy's %g" % (a, b))


def http(port, path, body=None, expect=200):
    url = "http://127.0.0.1:%d%s" % (port, path)
    req = urllib.request.Request(url, data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            status, data = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, data = e.code, e.read()
    check(status == expect, "%s: status %d, expected %d: %s" % (path, status, expect, data[:300]))
    return data


def wait_job(port, job):
    seen_progress = False
    for _ in range(2400):
        j = json.loads(http(port, "/api/jobs/" + job))
        if j["state"] == "running" and j["progress"].get("phase"):
            seen_progress = True
        if j["state"] in ("done", "failed"):
            return j, seen_progress
        time.sleep(0.05)
    check(False, "job %s did not finish" % job)
    return None, seen_progress


def test_server(tmp):
    srv = subprocess.Popen([EXE, "serve", "--port", "0", "--no-machine"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = srv.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        check(m is not None, "serve prints its address: " + line)
        port = int(m.group(1))
        page = http(port, "/").decode()
        check("<html" in page.lower() and 'id="schedule"' in page and "/chart.js" in page, "the page")
        check(len(http(port, "/chart.js")) > 10000, "Chart.js is served")
        mach = json.loads(http(port, "/api/machine"))
        check(mach["threads_max"] >= 1 and "host" in mach["targets"], "machine: %s" % mach)
        benches = json.loads(http(port, "/api/benchmarks"))
        blur = [b for b in benches if b["name"] == "blur"]
        check(len(blur) == 1 and "blur_y" in blur[0]["default_schedule"] and blur[0]["has_reference"], "blur described")
        check(all("error" not in b for b in benches), "every benchmark builds: %s" % [b.get("error") for b in benches if "error" in b])
        sizes = {"width": 96, "height": 64}
        bad = json.loads(http(port, "/api/schedule", {"benchmark": "blur", "sizes": sizes, "schedule": "blur_y.split(y, yo, yi, 8);\nblur_y.bogus();\n"}))
        check(bad["ok"] is False and bad["line"] == 2 and "bogus" in bad["error"], "a bad schedule: %s" % bad)
        good = json.loads(http(port, "/api/schedule", {"benchmark": "blur", "sizes": sizes, "schedule": "blur_y.parallel(y);"}))
        check(good["ok"] is True and "parallel(y)" in good["schedule"], "a good schedule: %s" % good)
        http(port, "/api/run", {"benchmark": "nope", "sizes": {}}, expect=400)
        http(port, "/api/run", {"benchmark": "blur", "sizes": {"width": -1}}, expect=400)
        http(port, "/api/run", {"benchmark": "blur", "sizes": {"depth": 3}}, expect=400)
        http(port, "/api/run", {"benchmark": "blur", "sizes": {}, "threads": 0}, expect=400)
        http(port, "/api/jobs/j999", expect=404)
        req = {"benchmark": "blur", "sizes": {"width": 256, "height": 256}, "threads": 1, "target": "host",
               "schedule_mode": "default", "peers": True, "min_seconds": 0.3}
        job = json.loads(http(port, "/api/run", req))["job"]
        j, seen = wait_job(port, job)
        check(j and j["state"] == "done" and j["result"]["check"]["status"] == "ok", "the run: %s" % (j and j.get("error")))
        check(j and j["result"]["threads"] == 1 and j["result"]["id"] == "r1", "threads and id")
        req2 = dict(req, schedule_mode="custom", schedule="blur_y.vectorise(x);")
        j2, _ = wait_job(port, json.loads(http(port, "/api/run", req2))["job"])
        check(j2 and j2["state"] == "failed" and "line 1" in (j2["error"] or ""), "a failed run: %s" % (j2 and j2["error"]))
        runs = json.loads(http(port, "/api/runs"))
        check(len(runs) == 1, "the session's runs")
        csv = http(port, "/api/export?format=csv").decode()
        check(csv.startswith("id,benchmark") and "\nr1,blur,256x256," in csv, "CSV export: " + csv[:200])
        exp = json.loads(http(port, "/api/export?format=json"))
        check(len(exp["weft_runs"]) == 1 and exp["benchmarks"], "JSON export")
        http(port, "/api/export?format=xml", expect=400)
    finally:
        srv.terminate()
        try:
            srv.wait(10)
        except subprocess.TimeoutExpired:
            srv.kill()


def main():
    global EXE
    mode, EXE = sys.argv[1], os.path.abspath(sys.argv[2])
    with tempfile.TemporaryDirectory() as tmp:
        {"cli": test_cli, "terminal": test_terminal, "server": test_server, "gbench": test_gbench}[mode](tmp)
    if FAILURES:
        print("%d checks failed" % len(FAILURES))
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
