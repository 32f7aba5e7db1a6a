#!/usr/bin/env python3
"""weft-bench's page end to end: test_page_e2e.py <path to weft-bench>.

Starts `weft-bench serve --port 0 --no-machine`, opens its page in headless Chromium and drives
it over the Chrome DevTools Protocol as a person would: picks blur at 128x96 on one thread,
presses Run, waits for the run, checks what the page shows (the results row: median, check
"ok"; the three plots drawn; the loop nest), then checks a bad schedule (the error names line 2
and the gutter marks it). Any console error or uncaught exception in the page is a failure.

Needs Debian's chromium (/usr/bin/chromium) and python3-websocket (run it with /usr/bin/python3);
without them it prints "SKIPPED: ..." and exits 77. WEFT_E2E_SCREENSHOT=<file.png> keeps a
screenshot of the page at the end. Every wait is bounded; the whole test stops after 4 minutes."""
import base64
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

CHROMIUM = "/usr/bin/chromium"
TOTAL_S = 235.0  # the whole test, start to end
RUN_WAIT_S = 180.0  # the run itself
START = time.monotonic()
FAILURES = []


def check(cond, what):
    if cond:
        print("ok:  ", what, flush=True)
    else:
        FAILURES.append(what)
        print("FAIL:", what, flush=True)
    return cond


def left():
    return TOTAL_S - (time.monotonic() - START)


class Timeout(Exception):
    pass


def bounded(limit):
    """A wait of at most `limit` seconds, and never past the test's total."""
    return time.monotonic() + max(0.0, min(limit, left()))


# ------------------------------------------------------------------ a minimal CDP client


class CDP:
    def __init__(self, ws_url):
        import websocket  # noqa: the caller has checked it is there

        self.ws = websocket.create_connection(ws_url, timeout=30, suppress_origin=True)
        self.timeout_error = websocket.WebSocketTimeoutException
        self.next_id = 0
        self.events = []

    def close(self):
        try:
            self.ws.close()
        except Exception:
            pass

    def call(self, method, params=None, timeout=30.0):
        self.next_id += 1
        mid = self.next_id
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params or {}}))
        end = bounded(timeout)
        while True:
            rest = end - time.monotonic()
            if rest <= 0:
                raise Timeout("no answer to %s within %.0f s" % (method, timeout))
            self.ws.settimeout(max(0.05, rest))
            try:
                raw = self.ws.recv()
            except self.timeout_error:
                raise Timeout("no answer to %s within %.0f s" % (method, timeout))
            msg = json.loads(raw)
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError("%s: %s" % (method, json.dumps(msg["error"])))
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def eval(self, expr, timeout=30.0):
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True}, timeout)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            text = (d.get("exception") or {}).get("description") or d.get("text")
            raise RuntimeError("evaluating %s: %s" % (expr[:120], text))
        return r.get("result", {}).get("value")

    def wait_for(self, expr, limit, what, fail_expr=None):
        """Polls expr until it is truthy; fail_expr (truthy: give up now, with its value)."""
        end = bounded(limit)
        while True:
            v = self.eval(expr)
            if v:
                return v
            if fail_expr:
                f = self.eval(fail_expr)
                if f:
                    raise RuntimeError("while waiting for %s: %s" % (what, f))
            if time.monotonic() >= end:
                raise Timeout("waited %.0f s for %s" % (limit, what))
            time.sleep(0.2)

    def problems(self):
        out = []
        for e in self.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append("uncaught exception: %s" % ((d.get("exception") or {}).get("description") or d.get("text")))
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                args = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
                out.append("console.%s: %s" % (p.get("type"), args))
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                en = p["entry"]
                out.append("log error: %s %s" % (en.get("text"), en.get("url", "")))
        return out


# ------------------------------------------------------------------ processes


def start_server(exe, logf):
    p = subprocess.Popen([exe, "serve", "--port", "0", "--no-machine"], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=logf, start_new_session=True)
    end = bounded(60)
    line = b""
    while not line.endswith(b"\n"):
        rest = end - time.monotonic()
        if rest <= 0 or p.poll() is not None:
            raise RuntimeError("weft-bench serve printed no address (exit status %s): %r" % (p.poll(), line))
        r, _, _ = select.select([p.stdout], [], [], min(rest, 0.5))
        if r:
            b = os.read(p.stdout.fileno(), 1)
            if not b:
                continue
            line += b
    text = line.decode(errors="replace").strip()
    print("server:", text, flush=True)
    marker = "serving http://127.0.0.1:"
    if marker not in text:
        raise RuntimeError("unexpected first line from weft-bench serve: " + text)
    port = int(text.split(marker, 1)[1].split("/", 1)[0])
    return p, port


def start_chromium(profile, logf):
    args = [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--remote-debugging-port=0", "--user-data-dir=" + profile, "--no-first-run",
            "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
            "--window-size=1400,1800", "about:blank"]
    p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=logf, stderr=logf, start_new_session=True)
    port_file = os.path.join(profile, "DevToolsActivePort")
    end = bounded(60)
    port = None
    while port is None:
        if p.poll() is not None:
            raise RuntimeError("chromium exited with status %s before listening (see its log)" % p.returncode)
        if time.monotonic() >= end:
            raise Timeout("chromium wrote no DevToolsActivePort within 60 s")
        try:
            lines = open(port_file).read().split("\n")
            if lines and lines[0].strip().isdigit() and len(lines) >= 2 and lines[1].strip():
                port = int(lines[0])
        except OSError:
            pass
        time.sleep(0.1)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    while True:
        try:
            targets = json.load(opener.open("http://127.0.0.1:%d/json/list" % port, timeout=5))
            pages = [t for t in targets if t.get("type") == "page" and t.get("webSocketDebuggerUrl")]
            if pages:
                return p, pages[0]["webSocketDebuggerUrl"]
        except OSError:
            pass
        if time.monotonic() >= end:
            raise Timeout("chromium lists no page to drive")
        time.sleep(0.2)


def stop(p, name):
    if p is None or p.poll() is not None:
        return
    try:
        os.killpg(p.pid, signal.SIGTERM)  # its own session: the process and what it started
    except OSError:
        pass
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            print("warning: %s (pid %d) did not stop" % (name, p.pid), flush=True)


def api(port, path):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    return json.load(opener.open("http://127.0.0.1:%d%s" % (port, path), timeout=30))


# ------------------------------------------------------------------ the page, as a person uses it

VISIBLE_ERROR = "(() => { const e = document.getElementById('error'); return e && !e.hidden ? e.textContent.trim() : ''; })()"


def js_str(s):
    return json.dumps(s)


def set_value(c, elem_id, value):
    """Types a value into a control: sets it and sends the events a person's edit sends."""
    ok = c.eval("(() => { const e = document.getElementById(%s); if (!e) return false; e.focus(); e.value = %s;"
                " e.dispatchEvent(new Event('input', {bubbles: true})); e.dispatchEvent(new Event('change', {bubbles: true}));"
                " return e.value === %s; })()" % (js_str(elem_id), js_str(str(value)), js_str(str(value))))
    return check(ok, "#%s set to %r" % (elem_id, str(value)))


def canvas_drawn(c, cid):
    """Chart.js drew on the canvas: a chart is attached and some pixels are painted."""
    return c.eval("""(() => {
      const cv = document.getElementById(%s);
      if (!cv || typeof Chart === 'undefined' || !Chart.getChart(cv)) return false;
      if (!cv.width || !cv.height) return false;
      const d = cv.getContext('2d').getImageData(0, 0, cv.width, cv.height).data;
      let n = 0;
      for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
      return n > 200;
    })()""" % js_str(cid))


def chart_points(c, cid):
    """Per dataset: its label and its finite values (y of points, or the bar heights)."""
    return c.eval("""(() => {
      const ch = Chart.getChart(document.getElementById(%s));
      if (!ch) return null;
      return ch.data.datasets.map(ds => ({
        label: String(ds.label || ''),
        values: (ds.data || []).map(p => (p !== null && typeof p === 'object') ? p.y : p)
                               .filter(v => typeof v === 'number' && isFinite(v))
      }));
    })()""" % js_str(cid))


def test_page(c, port, shot):
    c.call("Runtime.enable")
    c.call("Log.enable")
    c.call("Page.enable")
    c.call("Page.navigate", {"url": "http://127.0.0.1:%d/" % port})
    c.wait_for("document.readyState === 'complete' && location.port === %s" % js_str(str(port)), 30, "the page to load")
    check(c.eval("typeof Chart !== 'undefined' && typeof Chart.getChart === 'function'"), "Chart.js is loaded from /chart.js")

    # The benchmark list (the server's first `describe` may take a while).
    c.wait_for("document.querySelectorAll('#benchmark option').length > 0 && !document.getElementById('benchmark').disabled",
               90, "the benchmark list", fail_expr=VISIBLE_ERROR)
    names = c.eval("Array.from(document.querySelectorAll('#benchmark option')).map(o => o.value)")
    if not check("blur" in names, "the benchmark list has blur: %s" % names):
        return
    check(c.eval("!document.getElementById('machine').textContent.startsWith('Loading')"), "the machine line is filled in")
    check(c.eval("document.getElementById('results-body').rows.length") == 0, "no runs at the start")

    # blur, 128x96, one thread, 0.2 s of timing, the default schedule.
    set_value(c, "benchmark", "blur")
    c.wait_for("!!document.getElementById('size-width') && !!document.getElementById('size-height')", 5, "blur's size inputs")
    check("blur_" in c.eval("document.getElementById('schedule').value"), "blur's default schedule is in the editor")
    set_value(c, "size-width", 128)
    set_value(c, "size-height", 96)
    set_value(c, "threads", 1)
    if c.eval("!!document.getElementById('min-seconds')"):
        set_value(c, "min-seconds", "0.2")
    check(c.eval("document.getElementById('mode').value") == "default", "schedule mode is default")

    t0 = time.monotonic()
    c.eval("document.getElementById('run').click()")
    check(c.eval("!document.getElementById('progress-box').hidden || document.getElementById('results-body').rows.length > 0"),
          "pressing Run shows the progress")
    c.wait_for("document.getElementById('results-body').rows.length >= 1 && document.getElementById('progress-box').hidden",
               RUN_WAIT_S, "the run to finish (a row in #results-body)", fail_expr=VISIBLE_ERROR)
    print("the run took %.1f s in the page" % (time.monotonic() - t0), flush=True)
    check(c.eval(VISIBLE_ERROR) == "", "no error shown after the run")

    row = c.eval("""(() => {
      const tr = document.getElementById('results-body').rows[0];
      const cells = Array.from(tr.cells).map(td => td.textContent.trim());
      const badge = tr.querySelector('.badge.check');
      return { id: tr.getAttribute('data-run-id'), cells: cells,
               median: (tr.querySelector('td.median') || {}).textContent,
               check: badge ? badge.textContent.trim() : null, checkClass: badge ? badge.className : '' };
    })()""")
    print("row:", row["cells"], flush=True)
    cells = row["cells"]
    check(len(cells) >= 15, "the row has all its columns")
    check(cells[2] == "blur" and cells[3] == "128x96" and cells[4] == "1" and cells[6] == "default",
          "the row names blur 128x96, 1 thread, default schedule: %s" % cells[2:7])
    try:
        median_shown = float(row["median"].replace(",", ""))
    except (TypeError, ValueError):
        median_shown = None
    check(median_shown is not None and median_shown > 0, "the row shows a median time: %r" % row["median"])
    check(row["check"] == "ok" and "ok" in row["checkClass"].split(), "the check against the reference is ok: %r" % row["check"])
    check(c.eval("document.getElementById('results-empty').hidden || getComputedStyle(document.getElementById('results-empty')).display === 'none'"),
          "'No runs yet' is gone")
    check(c.eval("document.getElementById('progress-text').textContent").startswith("Done: run " + str(row["id"])),
          "the progress line says the run is done")

    # What the page shows agrees with what the server recorded.
    runs = api(port, "/api/runs")
    check(len(runs) == 1 and str(runs[0].get("id")) == str(row["id"]), "the server has the one run the page shows")
    rec = runs[0] if runs else {}
    med = (rec.get("time_ms") or {}).get("median")
    check(isinstance(med, (int, float)) and median_shown is not None and abs(median_shown - med) <= 0.01 * med + 1e-9,
          "the shown median %r is the server's %r ms" % (median_shown, med))
    check(rec.get("sizes") == {"width": 128, "height": 96} and rec.get("threads") == 1, "the server ran what the page asked")

    # The plots.
    for cid in ("plot-speedup", "plot-size", "plot-roofline"):
        try:
            c.wait_for("(() => { const cv = document.getElementById(%s); return !!(cv && typeof Chart !== 'undefined' && Chart.getChart(cv)); })()"
                       % js_str(cid), 10, "a chart on #" + cid)
            end = bounded(10)
            drawn = canvas_drawn(c, cid)
            while not drawn and time.monotonic() < end:
                time.sleep(0.3)
                drawn = canvas_drawn(c, cid)
            check(drawn, "#%s is drawn (a chart and painted pixels)" % cid)
        except Timeout as e:
            check(False, str(e))
    size_pts = chart_points(c, "plot-size") or []
    check(any(abs(v - med) <= 1e-6 * med for d in size_pts for v in d["values"]) if med else False,
          "the size plot has the run's median: %s" % size_pts)
    roof = chart_points(c, "plot-roofline") or []
    gflops = rec.get("gflops")
    if isinstance(gflops, (int, float)) and gflops > 0:
        check(any(abs(v - gflops) <= 1e-3 * gflops for d in roof if not d["label"].startswith("roof") for v in d["values"]),
              "the roofline has the run's point at %.3g GFLOP/s: %s" % (gflops, roof))
    else:
        check(False, "the server's record states GFLOP/s for blur: %r" % gflops)
    peers = [p for p in rec.get("peers") or [] if isinstance(p, dict)]
    sp = chart_points(c, "plot-speedup") or []
    if peers:
        check(any(d["values"] for d in sp), "the speedup plot has bars for %s: %s" % ([p.get("name") for p in peers], sp))
        check(c.eval("document.getElementById('results-body').rows[0].cells[14].textContent").count("\u00d7") == len(peers),
              "the row shows the speedup over each peer")
    else:
        check(c.eval("document.getElementById('speedup-note').textContent.trim() !== ''"), "no peers: the speedup plot says why")

    loop_nest = c.eval("document.getElementById('loop-nest').textContent")
    check(bool(loop_nest.strip()) and "blur_y" in loop_nest, "#loop-nest shows the loop nest: %r" % loop_nest[:200])
    check(c.eval("document.getElementById('run-schedule').textContent.trim() !== ''"), "#run-schedule shows the schedule used")

    # The page's significance test is the library's (weft::bench::mann_whitney_p): scipy's
    # mannwhitneyu([1..5], [6..10], method="asymptotic") gives p = 0.012186.
    p = c.eval("WeftUI.mannWhitneyP([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])")
    check(p is not None and abs(p - 0.012186) < 2e-6, "the page's Mann-Whitney p-value: %r" % p)
    check(c.eval("WeftUI.mannWhitneyP([1], [2, 3])") is None, "no p-value from one sample")

    # A bad schedule: the error names line 2 and the gutter marks it.
    set_value(c, "schedule", "blur_y.split(y, yo, yi, 8);\nblur_y.bogus();")
    check(c.eval("document.getElementById('mode').value") == "custom", "editing the schedule switches to custom")
    c.eval("document.getElementById('check').click()")
    try:
        c.wait_for("!document.getElementById('error').hidden && !document.getElementById('check').disabled", 90,
                   "the check of the bad schedule",
                   fail_expr="document.getElementById('schedule-status').className === 'ok' ? 'the page says the bad schedule is valid' : ''")
        err = c.eval("document.getElementById('error-text').textContent")
        print("error shown:", repr(err), flush=True)
        check("line 2" in err, "#error names line 2")
        check("bogus" in err, "#error names the bad call 'bogus'")
        check(c.eval("document.getElementById('schedule-status').className") == "bad" and
              "line 2" in c.eval("document.getElementById('schedule-status').textContent"), "#schedule-status says line 2")
        marked = c.eval("Array.from(document.querySelectorAll('#schedule-gutter span.err')).map(s => s.textContent)")
        check(marked == ["2"], "the gutter marks line 2: %s" % marked)
        check(c.eval("document.getElementById('schedule').classList.contains('has-error')"), "the editor shows it has an error")
    except (Timeout, RuntimeError) as e:
        check(False, str(e))
    check(len(api(port, "/api/runs")) == 1, "checking a schedule adds no run")

    if shot:
        try:
            r = c.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, timeout=30)
            with open(shot, "wb") as f:
                f.write(base64.b64decode(r["data"]))
            print("screenshot:", shot, flush=True)
        except Exception as e:
            print("warning: no screenshot: %s" % e, flush=True)

    time.sleep(0.3)
    c.eval("1")  # collect the last events
    probs = c.problems()
    check(not probs, "no console errors or uncaught exceptions in the page" + ("".join("\n    " + p for p in probs)))


def main():
    if len(sys.argv) != 2:
        print("usage: test_page_e2e.py <path to weft-bench>", file=sys.stderr)
        return 2
    exe = os.path.abspath(sys.argv[1])
    if not os.access(exe, os.X_OK):
        print("error: %s is not an executable" % exe, file=sys.stderr)
        return 2
    if not os.access(CHROMIUM, os.X_OK):
        print("SKIPPED: %s is missing (Debian's package chromium)" % CHROMIUM, flush=True)
        return 77
    try:
        import websocket  # noqa: F401

        websocket.create_connection  # noqa: B018
    except (ImportError, AttributeError):
        print("SKIPPED: the Python module websocket is missing (Debian's package python3-websocket; "
              "run this with /usr/bin/python3)", flush=True)
        return 77
    for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        os.environ.pop(k, None)

    tmp = tempfile.mkdtemp(prefix="weft-e2e-")
    server = browser = cdp = None
    server_log = open(os.path.join(tmp, "server.log"), "wb")
    chrome_log = open(os.path.join(tmp, "chromium.log"), "wb")
    try:
        server, port = start_server(exe, server_log)
        browser, ws_url = start_chromium(os.path.join(tmp, "profile"), chrome_log)
        cdp = CDP(ws_url)
        test_page(cdp, port, os.environ.get("WEFT_E2E_SCREENSHOT"))
    except Exception as e:
        check(False, "%s: %s" % (type(e).__name__, e))
        if cdp is not None:
            try:
                cdp.eval("1", timeout=5)
                for p in cdp.problems():
                    print("    page:", p, flush=True)
                print("    page error box:", repr(cdp.eval(VISIBLE_ERROR, timeout=5)), flush=True)
                print("    page progress:", repr(cdp.eval("document.getElementById('progress-text').textContent", timeout=5)), flush=True)
            except Exception:
                pass
    finally:
        if cdp is not None:
            cdp.close()
        stop(browser, "chromium")
        stop(server, "weft-bench serve")
        server_log.close()
        chrome_log.close()
        if FAILURES:
            for name in ("server.log",):
                try:
                    text = open(os.path.join(tmp, name), errors="replace").read()
                    if text.strip():
                        print("---- %s (last 3000 characters)\n%s" % (name, text[-3000:]), flush=True)
                except OSError:
                    pass
        shutil.rmtree(tmp, ignore_errors=True)

    print("took %.1f s" % (time.monotonic() - START), flush=True)
    if FAILURES:
        print("%d check(s) failed:" % len(FAILURES))
        for f in FAILURES:
            print("  -", f.split("\n")[0])
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
