#!/usr/bin/env python3
"""test_report_html.py - `profagent report` pages checked in real headless Chromium (DevTools protocol).

usage: test_report_html.py BUILD_DIR WORKDIR MKDB
For the DBs of several samples and the synthetic CLI DB: the page loads with no console error,
no exception and no network request; a section exists exactly for each report that has rows
(`profagent stats` CSV); each pie's slices sum to the chart's total and to the column's total
over all the report's rows (from the CSV); In-Use bars equal the CSV; the device-busy bins sum to
the union of ZE_OPS intervals computed here; a table sorts when its header is clicked. A
screenshot of every section is saved under WORKDIR/screens (the test's artifacts). A DB of
1 M events (mkbig.py) must render within RENDER_LIMIT_MS. Exit 77 (ctest: skipped) only when
Chromium is not installed or cannot start."""
import base64, json, os, shutil, sqlite3, subprocess, sys, tempfile, time

B, WORK, MKDB = sys.argv[1], sys.argv[2], sys.argv[3]
PA = os.path.join(B, "bin", "profagent")
HERE = os.path.dirname(os.path.abspath(__file__))
MKBIG = os.path.join(HERE, "..", "export", "mkbig.py")
sys.path.insert(0, os.path.join(HERE, ".."))
from pa_itest import FAILS, check, run_sample, stats_csv as stats_rows, to_fifo, check_dev_full, check_bad_input  # noqa: E402
RENDER_LIMIT_MS = 10000  # the 1 M-event DB's page: parse + render, generous for a loaded machine
SKIP = 77


# ---- a minimal websocket client (RFC 6455; stdlib only, so any python3 runs the test) ----
class WebSocket:
    def __init__(self, url, timeout):
        import socket
        assert url.startswith("ws://")
        hostport, _, path = url[5:].partition("/")
        host, _, port = hostport.partition(":")
        self.s = socket.create_connection((host, int(port)), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall(("GET /%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (path, hostport, key)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.s.recv(4096)
            if not chunk:
                raise RuntimeError("websocket handshake: connection closed")
            head += chunk
        head, self.buf = head.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise RuntimeError("websocket handshake refused: %r" % head[:80])

    def settimeout(self, t):
        self.s.settimeout(t)

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.s.recv(max(65536, n - len(self.buf)))
            if not chunk:
                raise RuntimeError("websocket closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _frame(self, op, data):
        hdr = bytes([0x80 | op])
        n = len(data)
        hdr += bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + n.to_bytes(2, "big") if n < 65536 \
            else bytes([0x80 | 127]) + n.to_bytes(8, "big")
        mask = os.urandom(4)
        self.s.sendall(hdr + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def send(self, text):
        self._frame(1, text.encode())

    def recv(self):
        msg = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7f
            if n == 126:
                n = int.from_bytes(self._read(2), "big")
            elif n == 127:
                n = int.from_bytes(self._read(8), "big")
            mask = self._read(4) if b1 & 0x80 else None
            data = self._read(n)
            if mask:
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
            op = b0 & 0x0f
            if op == 8:
                raise RuntimeError("websocket closed by the browser")
            if op == 9:
                self._frame(10, data)
                continue
            if op in (0, 1, 2):
                msg += data
                if b0 & 0x80:
                    return msg.decode()

    def close(self):
        self.s.close()


# ---- a minimal DevTools client over the browser's websocket ----
class Chrome:
    def __init__(self, exe):
        self.prof = tempfile.mkdtemp(prefix="pa_chromium_")
        self.p = subprocess.Popen([exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                   "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
                                   "--disable-component-update", "--disable-sync", "--metrics-recording-only",
                                   "--remote-debugging-port=0", "--remote-allow-origins=*",
                                   "--user-data-dir=" + self.prof, "--window-size=1280,900", "about:blank"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        url, t0 = None, time.monotonic()
        while time.monotonic() - t0 < 60:
            line = self.p.stderr.readline().decode(errors="replace")
            if not line and self.p.poll() is not None:
                break
            if "DevTools listening on " in line:
                url = line.split("DevTools listening on ", 1)[1].strip()
                break
        if not url:
            self.close()
            raise RuntimeError("chromium printed no DevTools endpoint (exit %r)" % self.p.poll())
        self.ws = WebSocket(url, 60)
        self.id, self.events = 0, []
        tgt = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.sid = self.call("Target.attachToTarget", targetId=tgt, flatten=True)["sessionId"]
        for dom in ("Page", "Runtime", "Log", "Network"):
            self.call(dom + ".enable", session=True)

    def call(self, method, session=False, **params):
        self.id += 1
        msg = {"id": self.id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.sid
        self.ws.send(json.dumps(msg))
        while True:
            m = json.loads(self.ws.recv())
            if m.get("id") == self.id:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, name, timeout=60):
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            for i, e in enumerate(self.events):
                if e.get("method") == name:
                    return self.events.pop(i)
            self.ws.settimeout(max(0.1, timeout - (time.monotonic() - t0)))
            self.events.append(json.loads(self.ws.recv()))
        raise RuntimeError("no %s within %d s" % (name, timeout))

    def eval(self, expr):
        r = self.call("Runtime.evaluate", session=True, expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError("evaluate: %s" % r["exceptionDetails"])
        return r["result"].get("value")

    def load(self, path):
        self.events = []
        url = "file://" + os.path.abspath(path)
        t0 = time.monotonic()
        self.call("Page.navigate", session=True, url=url)
        self.wait_event("Page.loadEventFired", 120)
        load_ms = (time.monotonic() - t0) * 1000
        time.sleep(0.2)
        self.eval("1")  # drain events that arrived with the load
        errors = [e for e in self.events if e.get("method") == "Runtime.exceptionThrown" or
                  (e.get("method") == "Runtime.consoleAPICalled" and e["params"]["type"] in ("error", "assert")) or
                  (e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error")]
        reqs = [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]
        return url, load_ms, errors, [r for r in reqs if r != url]

    def screenshot(self, sel, path):
        r = self.eval("(function(){var e=document.querySelector(%s); if(!e) return null; var b=e.getBoundingClientRect();"
                      " return [b.left+window.scrollX, b.top+window.scrollY, b.width, b.height];})()" % json.dumps(sel))
        if not r:
            return False
        shot = self.call("Page.captureScreenshot", session=True, format="png", captureBeyondViewport=True,
                         clip={"x": r[0], "y": r[1], "width": max(r[2], 1), "height": min(max(r[3], 1), 4000), "scale": 1})
        open(path, "wb").write(base64.b64decode(shot["data"]))
        return True

    def close(self):
        try:
            self.ws.close()
        except Exception:
            pass
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        shutil.rmtree(self.prof, ignore_errors=True)


def stats_csv(db, rep):
    return stats_rows(PA, db, rep)


CANDIDATES = ["ze_api_sum", "kern_sum", "kern_gb_sum", "mem_time_sum", "mem_size_sum", "hgtx_sum", "osrt_sum",
              "hgtx_kern_sum", "hgtx_gpu_proj_sum", "device_memory_usage_summary", "gpu_trace", "ze_api_trace",
              "hgtx_pushpop_trace", "hgtx_gpu_proj_trace", "device_memory_usage_detail"]
PIE = {"ze_api_sum": "Total Time (ns)", "kern_sum": "Total Time (ns)", "kern_gb_sum": "Total Time (ns)",
       "mem_time_sum": "Total Time (ns)", "mem_size_sum": "Total (bytes)", "hgtx_sum": "Total Time (ns)",
       "osrt_sum": "Total Time (ns)", "hgtx_kern_sum": "Total Time (ns)", "hgtx_gpu_proj_sum": "Proj Active Time (ns)",
       "device_memory_usage_summary": "Memory Usage"}

PAGE_JS = """(function(){
  var out = {rendered: window.PA_RENDERED || null, sections: {}, busy: {}};
  document.querySelectorAll('section').forEach(function(s){
    var pie = s.querySelector('svg.piechart'), sl = s.querySelectorAll('.slice'), sum = 0;
    sl.forEach(function(e){ sum += Number(e.getAttribute('data-value')); });
    var cap = s.querySelector('.pie-total');
    out.sections[s.id] = {pie_total: pie ? Number(pie.getAttribute('data-total')) : null, slice_sum: sum,
      nslices: sl.length, caption_total: cap ? Number(cap.getAttribute('data-total')) : null,
      bars: Array.prototype.map.call(s.querySelectorAll('.bar'), function(b){ return Number(b.getAttribute('data-value')); }),
      rows: s.querySelectorAll('table.rep tbody tr').length,
      cols: Array.prototype.map.call(s.querySelectorAll('table.rep th'), function(h){ return h.textContent; })};
  });
  document.querySelectorAll('svg.busy').forEach(function(g){
    var sum = 0; g.querySelectorAll('rect.bin').forEach(function(r){ sum += Number(r.getAttribute('data-ns')); });
    out.busy[g.getAttribute('data-device')] = {bins: sum, busy: Number(g.getAttribute('data-busy'))};
  });
  return out; })()"""


def union_busy(db):
    c = sqlite3.connect(db)
    tabs = {r[0] for r in c.execute("SELECT name FROM sqlite_master")}
    if "ZE_OPS" not in tabs:
        return {}
    res, cur = {}, {}
    for d, s, e in c.execute("SELECT deviceId, start, end FROM ZE_OPS WHERE deviceId IS NOT NULL AND end > start AND kind IN (1, 2, 3)"
                             " ORDER BY deviceId, start"):
        cs, ce, tot = cur.get(d, (None, None, 0))
        if cs is None or s > ce:
            tot += (ce - cs) if cs is not None else 0
            cs, ce = s, e
        else:
            ce = max(ce, e)
        cur[d] = (cs, ce, tot)
    for d, (cs, ce, tot) in cur.items():
        res[str(d)] = tot + ce - cs
    return res


ALL = [l.split()[0] for l in subprocess.run([PA, "stats", "--list"], capture_output=True, text=True).stdout.splitlines()
       if l.strip()]


def check_page(ch, name, db, html, shots):
    url, load_ms, errors, reqs = ch.load(html)
    check(not errors, "%s: console errors/exceptions: %r" % (name, errors[:3]))
    check(not reqs, "%s: network requests: %r" % (name, reqs[:3]))
    pg = ch.eval(PAGE_JS)
    check(pg["rendered"] is not None, "%s: the page rendered (PA_RENDERED set)" % name)
    secs = pg["sections"]
    check("sec-session" in secs and "sec-busy" in secs, "%s: session and busy sections" % name)
    for rep in CANDIDATES + [n for n in ALL if n not in CANDIDATES]:
        rows = stats_csv(db, rep)
        has = bool(rows)
        sid = "sec-" + rep
        check((sid in secs) == has, "%s: section %s present iff the report has rows (%d rows)" % (name, rep, len(rows or [])))
        if not has or sid not in secs:
            continue
        s = secs[sid]
        check(s["rows"] == min(50, len(rows)), "%s %s: %d table rows shown of %d" % (name, rep, s["rows"], len(rows)))
        col = PIE.get(rep, "Total Time (ns)" if rep not in CANDIDATES and rows and "Total Time (ns)" in rows[0]
                      and "Name" in rows[0] else None)
        if col:
            want = sum(int(float(r[col])) for r in rows)
            check(s["slice_sum"] == s["pie_total"] == s["caption_total"] == want,
                  "%s %s: pie slices %r = total %r = caption %r = CSV column sum %r" %
                  (name, rep, s["slice_sum"], s["pie_total"], s["caption_total"], want))
        if rep == "hgtx_gpu_proj_sum":
            check(s["bars"] == [float(r["In-Use (%)"]) for r in rows[:50]], "%s: In-Use bars = CSV %r" % (name, s["bars"]))
    ub = union_busy(db)
    check({k: v["busy"] for k, v in pg["busy"].items()} == ub, "%s: busy per device %r = union %r" % (name, pg["busy"], ub))
    for k, v in pg["busy"].items():
        check(abs(v["bins"] - v["busy"]) <= 2 * 240, "%s: device %s bins sum %r = busy %r (rounding per bin)" % (name, k, v["bins"], v["busy"]))
    for sid in secs:
        if check(ch.screenshot("#" + sid, os.path.join(shots, "%s_%s.png" % (name, sid[4:]))), "%s: screenshot %s" % (name, sid)):
            pass
    return pg


SESSION_JS = """(function(){ var out = {}; document.querySelectorAll('#sec-session table.kv tr').forEach(function(tr){
  out[tr.children[0].textContent] = tr.children[1].textContent; }); return out; })()"""


def meta_of(db, key):
    c = sqlite3.connect(db)
    r = c.execute("SELECT value FROM META WHERE key = ?", (key,)).fetchone()
    c.close()
    return r[0] if r else None


def check_session_processes(ch, dbs):
    """The session table names the process: its pid (and rank) for one DB; every input's pid for
    a merged DB (which has no single pid: the page said 'Process 0')."""
    gemm, leaks = dict(dbs).get("gemm"), dict(dbs).get("leaks")
    if not (gemm and leaks):
        return
    html = os.path.join(WORK, "gemm.html")
    ch.load(html)
    rows = ch.eval(SESSION_JS)
    check(rows.get("Process") == str(meta_of(gemm, "pid")), "session: Process %r = META pid %r" % (rows.get("Process"),
                                                                                              meta_of(gemm, "pid")))
    merged = os.path.join(WORK, "merged.db")
    p = subprocess.run([PA, "merge", "-o", merged, gemm, leaks], capture_output=True, timeout=120)
    if not check(p.returncode == 0, "merge gemm + leaks: %r" % p.stderr):
        return
    html = os.path.join(WORK, "merged.html")
    p = subprocess.run([PA, "report", merged, "-o", html], capture_output=True, timeout=120)
    if not check(p.returncode == 0, "merged: report: %r" % p.stderr):
        return
    ch.load(html)
    rows = ch.eval(SESSION_JS)
    want = "%d, %d" % (meta_of(gemm, "pid"), meta_of(leaks, "pid"))
    check(rows.get("Processes") == want and "Process" not in rows,
          "merged session: Processes %r = the inputs' pids %r (rows %r)" % (rows.get("Processes"), want, sorted(rows)))


def check_sort(ch):
    """ze_api_sum of the loaded page: clicking 'Num Calls' sorts descending, again ascending."""
    js = """(function(){ var s = document.getElementById('sec-ze_api_sum'); if (!s) return null;
      var ths = s.querySelectorAll('table.rep th'), ci = -1;
      ths.forEach(function(h, i){ if (h.textContent === 'Num Calls') ci = i; });
      function col(){ return Array.prototype.map.call(s.querySelectorAll('tbody tr'), function(tr){ return Number(tr.children[ci].textContent); }); }
      ths[ci].click(); var d = col(); ths[ci].click(); var a = col(); return [d, a]; })()"""
    r = ch.eval(js)
    if check(r is not None, "sort: ze_api_sum section"):
        d, a = r
        check(d == sorted(d, reverse=True) and a == sorted(a) and sorted(d) == sorted(a) and len(set(d)) > 1,
              "sort: descending then ascending on a click: %r / %r" % (d[:6], a[:6]))

def main():
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        print("SKIP: chromium is not installed (scripts/install-deps installs it)")
        return SKIP
    shutil.rmtree(WORK, ignore_errors=True)
    shots = os.path.join(WORK, "screens")
    os.makedirs(shots)
    try:
        ch = Chrome(exe)
    except Exception as e:
        print("SKIP: chromium cannot start: %s" % e)
        return SKIP
    try:
        dbs = []
        for prog, args in (("gemm", ["3"]), ("leaks", []), ("vector_add", []), ("multithread", ["4", "3"]),
                           ("regular_list", ["3", "capture"])):
            db = os.path.join(WORK, prog + ".db")
            p = run_sample(B, prog, args, db)
            if check(p.returncode == 0 and os.path.exists(db), "%s ran" % prog):
                dbs.append((prog, db))
        sdb = os.path.join(WORK, "synth.db")
        if check(subprocess.run([MKDB, sdb, os.path.join(WORK, "s.spool")], capture_output=True).returncode == 0, "mkdb"):
            dbs.append(("synth", sdb))
        for name, db in dbs:
            html = os.path.join(WORK, name + ".html")
            p = subprocess.run([PA, "report", db, "-o", html], capture_output=True, timeout=120)
            if not check(p.returncode == 0 and os.path.exists(html), "%s: report: %r" % (name, p.stderr)):
                continue
            data = open(html, "rb").read()
            check(b"http://" not in data.replace(b"http://www.w3.org/2000/svg", b"") and b"https://" not in data,
                  "%s: the page names no network address" % name)
            check_page(ch, name, db, html, shots)
            if name == "gemm":
                check_sort(ch)
        check_session_processes(ch, dbs)
        # a 1 M-event DB: the report is written, and its page renders within the limit
        src = dict(dbs).get("multithread")
        if src:
            big = os.path.join(WORK, "big.db")
            nev = int(subprocess.run([sys.executable, MKBIG, src, big, "1000000"], capture_output=True, text=True,
                                     timeout=600).stdout)
            html = os.path.join(WORK, "big.html")
            t0 = time.monotonic()
            p = subprocess.run([PA, "report", big, "-o", html], capture_output=True, timeout=600)
            gen = time.monotonic() - t0
            if check(p.returncode == 0, "big: report: %r" % p.stderr):
                url, load_ms, errors, reqs = ch.load(html)
                pg = ch.eval(PAGE_JS)
                ms = pg["rendered"]["ms"] if pg["rendered"] else 1e9
                check(not errors and not reqs and ms < RENDER_LIMIT_MS,
                      "big: %d events render in %.0f ms (limit %d), errors %r" % (nev, ms, RENDER_LIMIT_MS, errors[:2]))
                print("1 M-event DB (%d events): report written in %.1f s (%d bytes), page rendered in %.0f ms"
                      " (load event after %.0f ms)" % (nev, gen, os.path.getsize(html), ms, load_ms))
                ch.screenshot("#sec-busy", os.path.join(shots, "big_busy.png"))
    finally:
        ch.close()
    # a FIFO or a device as -o is written in place; a write error is reported
    p, still, data = to_fifo(PA, WORK, ["report", os.path.join(WORK, "gemm.db")])
    check(p.returncode == 0 and still and data.startswith(b"<!DOCTYPE html>") and data.rstrip().endswith(b"</html>"),
          "report -o FIFO: rc=%d, still a FIFO %s, %d bytes read %r" % (p.returncode, still, len(data), p.stderr))
    check_dev_full(PA, ["report", os.path.join(WORK, "gemm.db")])
    # bad input: one message, exit status
    check_bad_input(PA, ((["report", os.path.join(WORK, "missing.db")], 1, b"No such file"),
                         (["report", os.path.join(WORK, "gemm.db"), "-o", os.path.join(WORK, "gemm.html")], 1,
                          b"exists; give --force-overwrite"),
                         (["report", os.path.join(WORK, "gemm.db"), "-o", os.path.join(WORK, "no", "r.html")], 1,
                          b"cannot write"),
                         (["report", "--rows", "0", "x.db"], 2, b"--rows '0' is not accepted")))
    print("screenshots: %s (%d files)" % (shots, len(os.listdir(shots))))
    print("%d failed" % len(FAILS) if FAILS else "all HTML report checks passed")
    return 1 if FAILS else 0


sys.exit(main())
