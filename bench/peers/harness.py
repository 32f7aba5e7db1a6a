#!/usr/bin/env python3
"""The driver behind bench/run: starts one server process per (implementation, thread count),
checks every weft output against every peer's before timing anything, alternates weft and the
peers over rounds of repetitions, and prints a table and JSON of medians and ratios.

Protocol of the servers: see bench_common.h. Invoked by bench/run; run `bench/run --help`.
"""
import argparse
import json
import math
import os
import re
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

PEAK_GFLOPS_PER_CORE = 225.0  # fp32 FMA peak per core (BENCH.md)
TRIAD_N = 1 << 26

# Peers: label -> (executable family, variant)
PEERS = {
    "openblas": ("openblas", "-"),
    "eigen": ("eigen", "-"),
    "halide": ("halide", "manual"),
    "halide_mullapudi": ("halide", "mullapudi"),
    "onednn": ("onednn", "-"),
    # The app suite (apps/suite): Halide 14 with the app's expert schedule, and unscheduled.
    "halide_app": ("halide_apps", "manual"),
    "halide_unscheduled": ("halide_apps", "none"),
    # weft's own expert schedule, in a second weft process: the peer of weft's automatic
    # schedules (--auto).
    "weft_expert": ("weft_expert", "manual"),
}


def suite_apps(weft_exe):
    """The apps weft_bench_kernels serves (weft_bench_kernels --apps: one JSON object per line)."""
    try:
        out = subprocess.run([weft_exe, "--apps"], capture_output=True, text=True, timeout=60).stdout
        return [json.loads(l) for l in out.splitlines() if l.strip().startswith("{")]
    except (OSError, ValueError, subprocess.SubprocessError) as e:
        log("cannot list the app suite: %s" % e)
        return []


def sgemm_targets(size, threads, peer):
    if peer == "openblas":
        if size >= 1024:
            return 1.0
        if size >= 512:
            return 0.9
    if peer == "halide" and threads == 2 and size >= 1024:
        return 1.0
    return None


def make_configs(args):
    """Each config: one kernel, size and thread count, with its peers and how to check it."""
    cfgs = []
    sizes = [512, 1024] if args.quick else [256, 512, 1024, 2048]
    if args.sizes:
        sizes = [int(s) for s in args.sizes.split(",")]
    for kernel in ("sgemm_rm", "sgemm_cm"):
        for n in sizes:
            for t in args.threads:
                cfgs.append(dict(kernel=kernel, size=n, threads=t, peers=["openblas", "eigen", "halide"],
                                 atol=1e-3, rtol=1e-3, flops=2.0 * n ** 3, bytes=None,
                                 target=lambda p, n=n, t=t: sgemm_targets(n, t, p)))
    W = 4096
    for kernel in ("blur", "unsharp"):
        for t in args.threads:
            nbytes = ((W + 2) * (W + 2) + W * W) * 4 if kernel == "blur" else 2 * W * W * 4
            cfgs.append(dict(kernel=kernel, size=W, threads=t, peers=["halide", "halide_mullapudi"], atol=1e-5,
                             rtol=1e-5, flops=None, bytes=nbytes, target=lambda p: 1.0))
    R = 4096
    for kernel in ("softmax", "layernorm"):
        for t in args.threads:
            cfgs.append(dict(kernel=kernel, size=R, threads=t, peers=["eigen"], atol=1e-6 if kernel == "softmax" else 1e-4,
                             rtol=1e-4, flops=None, bytes=2 * R * 1024 * 4, target=lambda p: 1.5,
                             triad_target=0.8))
    S = 56
    for t in args.threads:
        cfgs.append(dict(kernel="conv", size=S, threads=t, peers=["onednn", "halide"], atol=1e-3, rtol=1e-3,
                         flops=2.0 * 4 * S * S * 64 * 64 * 9, bytes=None, target=lambda p: 0.95))
        # The same, then a residual add from a separately built part (chained with defer()),
        # against oneDNN's post-ops (ReLU, then a binary add).
        cfgs.append(dict(kernel="conv_add", size=S, threads=t, peers=["onednn"], atol=1e-3, rtol=1e-3,
                         flops=2.0 * 4 * S * S * 64 * 64 * 9, bytes=None, target=lambda p: 1.0))
    # int8 GEMM (u8 x s8 -> s32) against oneDNN's matmul; exact (both sides' int32s as floats).
    for n in ([1024] if args.quick else [1024, 2048]):
        for t in args.threads:
            cfgs.append(dict(kernel="gemm_u8s8", size=n, threads=t, peers=["onednn"], atol=0, rtol=0,
                             flops=2.0 * n ** 3, bytes=None, target=lambda p: 1.0))
    # int8 convolution (u8 x s8 -> s32, the conv shape) against oneDNN's; exact.
    for t in args.threads:
        cfgs.append(dict(kernel="conv_u8s8", size=56, threads=t, peers=["onednn"], atol=0, rtol=0,
                         flops=2.0 * 4 * 56 * 56 * 64 * 64 * 9, bytes=None, target=lambda p: 1.0))
    # bfloat16 GEMM (bf16 x bf16 -> f32) against oneDNN's matmul; exact: the inputs are multiples
    # of 1/16, so every partial sum is exact in float32 whatever the order.
    for n in ([1024] if args.quick else [1024, 2048]):
        for t in args.threads:
            cfgs.append(dict(kernel="gemm_bf16", size=n, threads=t, peers=["onednn"], atol=0, rtol=0,
                             flops=2.0 * n ** 3, bytes=None, target=lambda p: 1.0))
    # The app suite: each app with Halide's expert schedule against Halide's own, and each app
    # unscheduled against Halide unscheduled (at the app's smaller unscheduled size; not run where
    # inlining everything is exponential). Target 1.0; first-call time recorded on both sides.
    if not args.no_apps:
        for app in suite_apps(args.weft_exe):
            for variant, peer, size in (("manual", "halide_app", app["default_size"]),
                                        ("none", "halide_unscheduled", app["unscheduled_size"])):
                if not size:
                    continue
                for t in args.threads:
                    cfgs.append(dict(kernel="app_" + app["name"], size=size, threads=t, peers=[peer],
                                     weft_variant=variant,
                                     name="app_%s%s_%d" % (app["name"], "" if variant == "manual" else "_unscheduled", size),
                                     atol=app["atol"], rtol=app["rtol"], flops=None, bytes=None,
                                     target=lambda p: 1.0, first_call_target=1.0 / 3))
    # Automatic scheduling (--auto): weft's auto_schedule (the cost model alone, or a measured
    # search of --auto-budget seconds) against weft's expert schedule of the same algorithm
    # (target: within 1.1x), Halide's expert schedule, and Halide's Mullapudi2016 autoscheduler
    # where bench_halide has it. The entry's weft first call includes auto_schedule's time.
    if args.auto:
        variant = "auto" if not args.auto_budget else "auto:%g" % args.auto_budget
        suffix = "_auto" if not args.auto_budget else "_auto%g" % args.auto_budget
        kernels = [("blur", 4096, ["weft_expert", "halide", "halide_mullapudi"], 1e-5, 1e-5),
                   ("unsharp", 4096, ["weft_expert", "halide", "halide_mullapudi"], 1e-5, 1e-5),
                   ("conv", 56, ["weft_expert", "halide", "halide_mullapudi"], 1e-3, 1e-3),
                   ("sgemm_rm", 1024, ["weft_expert", "halide"], 1e-3, 1e-3),
                   ("softmax", 4096, ["weft_expert"], 1e-6, 1e-4),
                   ("layernorm", 4096, ["weft_expert"], 1e-4, 1e-4)]
        for kernel, size, peers, atol, rtol in kernels:
            for t in args.threads:
                cfgs.append(dict(kernel=kernel, size=size, threads=t, peers=peers, weft_variant=variant,
                                 name="%s%s_%d" % (kernel, suffix, size), atol=atol, rtol=rtol, flops=None, bytes=None,
                                 target=lambda p: 1 / 1.1 if p == "weft_expert" else 1.0))
        if not args.no_apps:
            for app in suite_apps(args.weft_exe):
                for t in args.threads:
                    cfgs.append(dict(kernel="app_" + app["name"], size=app["default_size"], threads=t,
                                     peers=["weft_expert", "halide_app"], weft_variant=variant,
                                     name="app_%s%s_%d" % (app["name"], suffix, app["default_size"]),
                                     atol=app["atol"], rtol=app["rtol"], flops=None, bytes=None,
                                     target=lambda p: 1 / 1.1 if p == "weft_expert" else 1.0))
    if args.only:
        rx = re.compile(args.only)
        cfgs = [c for c in cfgs if rx.search("%s_t%d" % (c.get("name") or "%s_%d" % (c["kernel"], c["size"]), c["threads"]))]
    return cfgs


def single_thread_cpu():
    """The CPU the one-thread runs are pinned to: the first this process may use (None where
    affinity is not supported)."""
    try:
        return min(os.sched_getaffinity(0))
    except (AttributeError, OSError, ValueError):
        return None


class Server:
    """One benchmark executable speaking the line protocol, started on first use."""

    def __init__(self, name, argv, env, log, cpus=None):
        self.name, self.argv, self.env, self.log = name, argv, env, log
        self.cpus = cpus  # the CPUs the process may run on (None: any)
        self.proc = None

    def start(self):
        cpus = self.cpus
        pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     env=self.env, text=True, bufsize=1, preexec_fn=pin)

    def request(self, line, timeout):
        if self.proc is None or self.proc.poll() is not None:
            try:
                self.start()
            except OSError as e:
                self.proc = None
                return {"ok": False, "error": "%s: cannot start %s: %s" % (self.name, self.argv[0], e)}
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            self.kill()
            return {"ok": False, "error": "%s: %s" % (self.name, e)}
        deadline = time.time() + timeout
        while True:
            left = deadline - time.time()
            if left <= 0:
                self.kill()
                return {"ok": False, "error": "%s: no answer to '%s' within %d s" % (self.name, line, timeout)}
            r, _, _ = select.select([self.proc.stdout], [], [], left)
            if r:
                out = self.proc.stdout.readline()
                if not out:
                    rc = self.proc.wait()
                    self.proc = None
                    return {"ok": False, "error": "%s exited (status %s) during '%s'; see %s" %
                            (self.name, rc, line, self.log.name)}
                try:
                    return json.loads(out)
                except ValueError:
                    continue  # not a protocol line

    def kill(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=10)
            except Exception:
                self.kill()
        self.proc = None


class Harness:
    def __init__(self, args):
        self.args = args
        self.servers = {}
        self.tmp = tempfile.mkdtemp(prefix="weft-bench-")
        self.log = open(os.path.join(args.log_dir, "bench-servers.log"), "w")

    def server(self, family, threads):
        key = (family, threads)
        if key not in self.servers:
            a = self.args
            env = dict(os.environ)
            t = str(threads)
            # Every runtime gets the same thread count, whatever the process.
            env.update(WEFT_NUM_THREADS=t, OMP_NUM_THREADS=t, OPENBLAS_NUM_THREADS=t, HL_NUM_THREADS=t,
                       MKL_NUM_THREADS=t)
            if family in ("weft", "weft_expert"):
                env["WEFT_CACHE_DIR"] = "off"  # first calls compile, as Halide's do (no disk cache)
            if family == "openblas":
                # They force slower kernels on this machine (BENCH.md); unset for this process only.
                env.pop("OPENBLAS_CORETYPE", None)
                env.pop("OPENBLAS_L2_SIZE", None)
            exe = a.weft_exe if family in ("weft", "weft_expert") else os.path.join(a.peers_dir, "bench_" + family)
            # One thread: every program on the same CPU. The machine's CPUs differ (a shared host:
            # one ran a memory-bound app 37 % slower than the other, the same binary, all day),
            # and a process left to the scheduler lands on either: the ratio would compare CPUs.
            cpu = single_thread_cpu() if threads == 1 else None
            cpus = {cpu} if cpu is not None else None
            self.servers[key] = Server("%s(t=%d)" % (family, threads), [exe], env, self.log, cpus)
        return self.servers[key]

    def close(self):
        for s in self.servers.values():
            s.close()
        shutil.rmtree(self.tmp, ignore_errors=True)
        self.log.close()

    def compare(self, a, b, atol, rtol):
        p = subprocess.run([os.path.join(self.args.peers_dir, "bench_compare"), a, b, str(atol), str(rtol)],
                           capture_output=True, text=True)
        try:
            return json.loads(p.stdout)
        except ValueError:
            return {"ok": False, "error": "bench_compare failed: " + p.stderr.strip()}

    def time_impls(self, impls, rounds, target_ms, max_reps, settle_s=0.0):
        """impls: list of (label, server, call_ms). Alternates them over rounds; returns
        {label: (samples, minflt_per_call or None, error or None)}. settle_s: a pause before each
        batch, so that the threads the previous implementation leaves spinning (OpenBLAS spins
        for about 0.1 s after its last call) have gone to sleep before the next is timed."""
        samples = {lab: [] for lab, _, _ in impls}
        faults = {lab: [] for lab, _, _ in impls}
        errors = {}
        for r in range(rounds):
            order = impls[r % len(impls):] + impls[:r % len(impls)]  # rotate who goes first
            for lab, srv, call_ms in order:
                if lab in errors:
                    continue
                reps = max(1, min(max_reps, int(round(target_ms / max(call_ms, 1e-3)))))
                if settle_s > 0:
                    time.sleep(settle_s)
                res = srv.request("time %d" % reps, timeout=max(120, 5 * reps * call_ms / 1000.0))
                if not res.get("ok"):
                    errors[lab] = res.get("error", "?")
                    continue
                samples[lab].extend(res["ms"])
                faults[lab].append(res.get("minflt", 0.0))
        return {lab: (samples[lab], statistics.mean(faults[lab]) if faults[lab] else None, errors.get(lab))
                for lab, _, _ in impls}

    def triad(self, threads):
        srv = self.server("stream", threads)
        res = srv.request("setup triad - %d -" % TRIAD_N, timeout=300)
        if not res.get("ok"):
            return None, res.get("error")
        rounds = max(3, self.args.rounds)
        t = self.time_impls([("triad", srv, res["call_ms"])], rounds, 3 * res["call_ms"], 3)["triad"]
        srv.request("release", timeout=60)
        if not t[0]:
            return None, t[2]
        ms = statistics.median(t[0])
        return 3.0 * TRIAD_N * 4 / (ms * 1e-3) / 1e9, None

    def run_config(self, c, triad_gbps):
        a = self.args
        kernel, size, threads = c["kernel"], c["size"], c["threads"]
        name = c.get("name") or "%s_%d" % (kernel, size)
        impls = [("weft", "weft", c.get("weft_variant", "-"))] + [(p, PEERS[p][0], PEERS[p][1]) for p in c["peers"]]
        setups, files = {}, {}
        for lab, fam, var in impls:
            f = os.path.join(self.tmp, "%s.%s.t%d.bin" % (name, lab, threads))
            res = self.server(fam, threads).request("setup %s %s %d %s" % (kernel, var, size, f), timeout=600)
            setups[lab] = res
            if res.get("ok"):
                files[lab] = f
            else:
                log("  %s: %s: setup failed: %s" % (name, lab, res.get("error")))
        # Check weft against every peer before timing anything.
        checks = {}
        for lab in c["peers"]:
            if "weft" not in files:
                checks[lab] = {"ok": False, "error": "weft: " + setups["weft"].get("error", "?")}
            elif lab not in files:
                checks[lab] = {"ok": False, "error": lab + ": " + setups[lab].get("error", "?")}
            else:
                checks[lab] = self.compare(files["weft"], files[lab], c["atol"], c["rtol"])
                if not checks[lab].get("ok"):
                    log("  %s t=%d: weft != %s: %s" % (name, threads, lab, json.dumps(checks[lab])))
        for f in files.values():
            try:
                os.unlink(f)
            except OSError:
                pass
        # Time weft (if it matched some peer) and every peer that set up, alternating.
        timed = []
        if "weft" in files and any(ch.get("ok") for ch in checks.values()):
            timed.append(("weft", self.server("weft", threads), setups["weft"]["call_ms"]))
        for lab, fam, var in impls[1:]:
            if lab in files:
                timed.append((lab, self.server(fam, threads), setups[lab]["call_ms"]))
        # With several threads an implementation shares the 2 cores with whatever the previous
        # one left spinning: let that settle first.
        settle = a.settle_ms / 1000.0 if threads > 1 else 0.0
        res = self.time_impls(timed, a.rounds, a.target_ms, a.max_reps, settle) if timed else {}
        for lab, fam, var in impls:
            if lab in files:
                self.server(fam, threads).request("release", timeout=60)

        def med(lab):
            if lab in res and res[lab][0]:
                return statistics.median(res[lab][0])
            return None

        weft_ms = med("weft")
        entries = []
        for lab in c["peers"]:
            peer_ms = med(lab)
            ch = checks[lab]
            status = "ok" if ch.get("ok") else "FAILED"
            err = ch.get("error") or (None if ch.get("ok") else "mismatch: %s" % json.dumps(ch))
            if status == "ok" and (weft_ms is None or peer_ms is None):
                status = "FAILED"
                err = (res.get("weft", (0, 0, None))[2] or res.get(lab, (0, 0, None))[2] or "not timed")
            ratio = peer_ms / weft_ms if (status == "ok" and weft_ms and peer_ms) else None
            e = {"name": name, "threads": threads, "weft_ms": round(weft_ms, 5) if weft_ms else None,
                 "peer": lab, "peer_ms": round(peer_ms, 5) if peer_ms else None,
                 "ratio": round(ratio, 4) if ratio else None, "status": status, "kernel": kernel, "size": size}
            # The fastest call of each: less sensitive to a neighbour taking the core for a while.
            for who, lab2 in (("weft", "weft"), ("peer", lab)):
                if lab2 in res and res[lab2][0] and e[who + "_ms"] is not None:
                    e[who + "_min_ms"] = round(min(res[lab2][0]), 5)
            if err:
                e["error"] = err
            if ch.get("ok"):
                e["max_abs_err"] = ch.get("max_abs")
            if c["flops"]:
                for who, ms in (("weft", weft_ms), ("peer", peer_ms)):
                    if ms:
                        e[who + "_gflops"] = round(c["flops"] / (ms * 1e-3) / 1e9, 2)
                if weft_ms:
                    e["weft_peak_frac"] = round(e["weft_gflops"] / (PEAK_GFLOPS_PER_CORE * threads), 4)
                if peer_ms:
                    e["peer_peak_frac"] = round(e["peer_gflops"] / (PEAK_GFLOPS_PER_CORE * threads), 4)
            if c["bytes"]:
                for who, ms in (("weft", weft_ms), ("peer", peer_ms)):
                    if ms:
                        e[who + "_GBps"] = round(c["bytes"] / (ms * 1e-3) / 1e9, 2)
                if triad_gbps:
                    e["triad_GBps"] = round(triad_gbps, 2)
                    if weft_ms:
                        e["weft_triad_frac"] = round(e["weft_GBps"] / triad_gbps, 4)
            if "weft" in res and res["weft"][1] is not None:
                e["weft_minflt_per_call"] = round(res["weft"][1], 2)
            if c.get("first_call_target") is not None:
                # weft's first call (JIT compilation included) against the peer's compile time
                # (Halide's compile_jit, its runtime already built), else its first call.
                # (weft's: building the pipeline and its first call, where it times them apart from
                # making the problem's data.)
                wf = setups.get("weft", {}).get("first_ms")
                if wf is None or wf < 0:
                    wf = setups.get("weft", {}).get("setup_ms")
                pf = setups.get(lab, {}).get("compile_ms")
                if pf is None or pf < 0:
                    pf = setups.get(lab, {}).get("setup_ms")
                e["weft_first_ms"] = round(wf, 1) if wf is not None else None
                e["peer_first_ms"] = round(pf, 1) if pf is not None else None
                e["first_call_target"] = round(c["first_call_target"], 4)
                e["meets_first_call_target"] = bool(wf is not None and pf is not None and wf <= c["first_call_target"] * pf)
                # weft's compilation alone (lowering and LLVM, as cache_stats().compile_ms counts
                # it), measured the way Halide's compile_jit is: without the first run, whose
                # page faults on fresh intermediates are part of the first call.
                wj = setups.get("weft", {}).get("jit_ms")
                if wj is not None and wj >= 0:
                    e["weft_compile_ms"] = round(wj, 1)
                    e["meets_compile_target"] = bool(pf is not None and wj <= c["first_call_target"] * pf)
            tgt = c["target"](lab)
            if tgt is not None:
                e["target"] = tgt
                meets = ratio is not None and ratio >= tgt
                if c.get("triad_target") is not None:
                    e["triad_target"] = c["triad_target"]
                    meets = meets and e.get("weft_triad_frac", 0) >= c["triad_target"]
                e["meets_target"] = bool(meets)
            entries.append(e)
        return entries


def flag_suspects(entries):
    """Marks entries where weft or the peer ran slower on several threads than on one: a
    neighbour took a core (OpenMP peers suffer most), so that ratio says little."""
    one = {(e["name"], e["peer"]): e for e in entries if e["threads"] == 1}
    for e in entries:
        base = one.get((e["name"], e["peer"]))
        if e["threads"] == 1 or base is None:
            continue
        why = []
        for who in ("weft", "peer"):
            a, b = e.get(who + "_ms"), base.get(who + "_ms")
            if a and b and a > 1.2 * b:
                why.append("%s %.2fx slower on %d threads than on 1" % (who, a / b, e["threads"]))
        if why:
            e["suspect"] = "; ".join(why)


def suite_geomeans(entries):
    """{(variant, threads): (geometric mean of the ratios, number of apps)} over the app suite."""
    acc = {}
    for e in entries:
        if not e["name"].startswith("app_") or e.get("ratio") is None:
            continue
        if e["peer"] == "halide_unscheduled":
            v = "unscheduled"
        elif "_auto" in e["name"]:
            v = "automatic schedules against " + e["peer"]
        else:
            v = "scheduled"
        acc.setdefault((v, e["threads"]), []).append(e["ratio"])
    return {k: (math.exp(sum(math.log(r) for r in rs) / len(rs)), len(rs)) for k, rs in acc.items()}


def suite_summary(entries):
    return ["app suite, %s, %d thread%s: geometric mean ratio %.2fx over %d apps" % (v, t, "s" if t > 1 else "", g, n)
            for (v, t), (g, n) in sorted(suite_geomeans(entries).items())]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def fmt(v, f="%.3f"):
    return "-" if v is None else f % v


def print_table(entries, triad, out):
    hdr = "%-30s %3s %-18s %10s %10s %8s %17s %17s %8s %s" % (
        "kernel", "thr", "peer", "weft ms", "peer ms", "ratio", "weft", "peer", "target", "check")
    print(hdr, file=out)
    print("-" * len(hdr), file=out)
    for e in entries:
        if "weft_gflops" in e or "peer_gflops" in e:
            w = "%s GF %s" % (fmt(e.get("weft_gflops"), "%.0f"), fmt(e.get("weft_peak_frac") and 100 * e["weft_peak_frac"], "%.0f%%pk"))
            p = "%s GF %s" % (fmt(e.get("peer_gflops"), "%.0f"), fmt(e.get("peer_peak_frac") and 100 * e["peer_peak_frac"], "%.0f%%pk"))
        elif "weft_GBps" in e or "peer_GBps" in e:
            w = "%s GB/s %s" % (fmt(e.get("weft_GBps"), "%.1f"), fmt(e.get("weft_triad_frac") and 100 * e["weft_triad_frac"], "%.0f%%tr"))
            p = "%s GB/s" % fmt(e.get("peer_GBps"), "%.1f")
        else:
            w = p = "-"
        tgt = "-"
        if "target" in e:
            tgt = ("%.2fx" % e["target"]) + ("+" if e.get("meets_target") else "!")
        if "weft_first_ms" in e:
            w = "1st %s ms%s" % (fmt(e.get("weft_first_ms"), "%.0f"), "" if e.get("meets_first_call_target") else "!")
            if "weft_compile_ms" in e:
                w += " jit %s%s" % (fmt(e.get("weft_compile_ms"), "%.0f"), "" if e.get("meets_compile_target") else "!")
            p = "1st %s ms" % fmt(e.get("peer_first_ms"), "%.0f")
        chk = e["status"] if e["status"] == "ok" else "FAILED: " + str(e.get("error", ""))[:60]
        if e.get("suspect"):
            chk += " (suspect: %s)" % e["suspect"]
        print("%-30s %3d %-18s %10s %10s %8s %17s %17s %8s %s" % (
            e["name"], e["threads"], e["peer"], fmt(e["weft_ms"]), fmt(e["peer_ms"]), fmt(e["ratio"], "%.2fx"),
            w, p, tgt, chk), file=out)
    for t, (gbps, err) in sorted(triad.items()):
        print("triad (2^26 floats, %d thread%s): %s GB/s%s" % (t, "s" if t > 1 else "", fmt(gbps, "%.1f"),
                                                              "" if gbps else " (" + str(err) + ")"), file=out)
    for line in suite_summary(entries):
        print(line, file=out)
    print("ratio = peer_ms / weft_ms (> 1: weft faster); target: '+' met, '!' missed; "
          "1st = weft's first call (JIT included) and the peer's compile time ('!': weft's above a third of it), "
          "jit = weft's compilation alone; "
          "%%pk = fraction of %.0f GFLOP/s per thread; %%tr = fraction of the triad bandwidth" % PEAK_GFLOPS_PER_CORE,
          file=out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft-exe", required=True)
    ap.add_argument("--peers-dir", required=True)
    ap.add_argument("--results", required=True)
    ap.add_argument("--log-dir", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--sizes", default=None, help="SGEMM sizes, comma-separated")
    ap.add_argument("--only", default=None, help="regex over <kernel>_<size>_t<threads>")
    ap.add_argument("--target-ms", type=float, default=None, help="time per implementation per round")
    ap.add_argument("--max-reps", type=int, default=1000,
                    help="most calls per batch (a batch lasts about --target-ms: short kernels need many)")
    ap.add_argument("--settle-ms", type=float, default=200,
                    help="pause before each multi-threaded batch (other processes' spinning threads go to sleep)")
    ap.add_argument("--no-triad", action="store_true")
    ap.add_argument("--no-apps", action="store_true", help="leave out the app suite (apps/suite)")
    ap.add_argument("--auto", action="store_true", help="also race weft's automatic schedules (auto_schedule)")
    ap.add_argument("--auto-budget", type=float, default=0, help="with --auto: seconds of measured search (0: cost model)")
    a = ap.parse_args()
    a.threads = [int(t) for t in a.threads.split(",")]
    if a.rounds is None:
        a.rounds = 3 if a.quick else 9
    if a.target_ms is None:
        a.target_ms = 40.0 if a.quick else 150.0

    t_start = time.time()
    load0 = os.getloadavg()
    h = Harness(a)
    entries, triad = [], {}
    try:
        if not a.no_triad:
            for t in a.threads:
                triad[t] = h.triad(t)
                log("triad, %d thread(s): %s GB/s" % (t, fmt(triad[t][0], "%.1f")))
        cfgs = make_configs(a)
        for i, c in enumerate(cfgs):
            t0 = time.time()
            es = h.run_config(c, triad.get(c["threads"], (None, None))[0])
            entries.extend(es)
            log("[%d/%d] %s t=%d: %s (%.1f s)" % (
                i + 1, len(cfgs), c.get("name") or "%s_%d" % (c["kernel"], c["size"]), c["threads"],
                ", ".join("%s %s" % (e["peer"], fmt(e["ratio"], "%.2fx") if e["status"] == "ok" else "FAILED")
                          for e in es), time.time() - t0))
    finally:
        h.close()
    flag_suspects(entries)
    load1 = os.getloadavg()
    machine = {"load_avg_start": [round(x, 2) for x in load0], "load_avg_end": [round(x, 2) for x in load1],
               "cpus": os.cpu_count(), "wall_s": round(time.time() - t_start, 1), "rounds": a.rounds,
               "quick": a.quick, "single_thread_cpu": single_thread_cpu()}
    out = sys.stdout
    print("", file=out)
    print_table(entries, triad, out)
    if max(load0[0], load1[0]) > 1.5:
        print("note: load average %.1f -> %.1f on %d CPUs: the machine is shared, numbers are noisy" %
              (load0[0], load1[0], os.cpu_count()), file=out)
    summary = {"machine": machine,
               "app_suite_geomean": {"%s_t%d" % k: round(v[0], 4) for k, v in suite_geomeans(entries).items()},
               "triad_GBps": {str(t): (round(v[0], 2) if v[0] else None) for t, v in triad.items()},
               "entries": entries}
    print("", file=out)
    print("JSON:", file=out)
    print(json.dumps(summary, indent=1), file=out)
    with open(a.results, "w") as f:
        json.dump(entries, f, indent=1)
        f.write("\n")
    print("wrote %s (%d entries, %.0f s)" % (a.results, len(entries), time.time() - t_start), file=out)
    failed = [e for e in entries if e["status"] != "ok"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
