#!/usr/bin/env python3
"""test_ze_clock.py - device times on the session's clock when a device's first clock
synchronization is slow (SIMDEV_FAULT_CLOCK_SYNC_US: the first zeDeviceGetGlobalTimestamps of
each device returns 20 ms after it read the clocks, as when its caller is preempted inside it).
samples/multithread (4 threads, 2 devices, their first operations collected at about the same
time), 20 runs, each bounded by a timeout: every operation starts after its API call started,
ends before the end of the zeCommandQueueSynchronize that waited for it (+1 ms), and lies inside
the session. Before: the threads that found another's first synchronization under way converted
with no reference (raw device times, ~9 h before the session), and the slow pair itself shifted
every operation 10 ms late. Then the HTML report of a DB holding an operation outside the session
(an older agent's): the device-busy bins sum to the device's busy time (the bins were cut at the
session: that operation's time was in the total and in no bin, 452,289 of 529,268 ns once in CI).
usage: test_ze_clock.py BUILD_DIR"""
import json, os, re, sqlite3, subprocess, sys, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pa_itest import check, FAILS, run_sample  # noqa: E402

B = sys.argv[1]
PA = os.path.join(B, "bin", "profagent")
WORK = tempfile.mkdtemp(prefix="pa_zeclock_")
TICKS_NS = 2 * 1000000000 // 19200000 + 2000  # two device ticks (simdev's 19.2 MHz) + the TSC's ~1 us
# A conversion's error is half the window of its clock pair (up to 8 tries kept narrowest, at once
# when within 10 us: collector/ze_attach.c); the largest bound used is SESSION_COUNTERS
# ze_clock_pair_err_ns, and an operation may appear that much before its API call or after its
# sync. The faults this test catches are 10 ms (the slow pair itself kept) and hours (no reference)
# off: the bound must stay below the first.


def bad_ops(db):
    """Operations off the session's clock: (count, first offender) in db."""
    c = sqlite3.connect(db)
    m = dict(c.execute("SELECT key, value FROM META WHERE key IN ('start_mono_ns', 'end_mono_ns')"))
    sql = ("SELECT o.deviceId, o.start, o.end, o.apiStart, (SELECT min(a.end) FROM ZE_API a JOIN STRING_IDS s ON"
           " s.id = a.nameId WHERE s.value = 'zeCommandQueueSynchronize' AND a.tid = o.tid AND a.start >= o.apiEnd)"
           " AS sync_end FROM ZE_OPS o WHERE o.kind = 1")
    rows = c.execute(sql).fetchall()
    err = c.execute("SELECT value FROM SESSION_COUNTERS WHERE name = 'ze_clock_pair_err_ns'").fetchone()
    c.close()
    if err is None or not 0 < err[0] < 10000000:
        return len(rows), [("ze_clock_pair_err_ns", err)]
    slack = err[0] + TICKS_NS
    bad = [r for r in rows if r[1] < r[3] - slack or r[1] < m["start_mono_ns"] or r[2] > m["end_mono_ns"]
           or r[4] is None or r[2] > r[4] + slack]
    return len(rows), bad


def clock_runs():
    os.environ["SIMDEV_FAULT_CLOCK_SYNC_US"] = "20000"
    fails, last = [], None
    try:
        for i in range(20):
            db = os.path.join(WORK, "mt%d.db" % i)
            try:
                p = run_sample(B, "multithread", ["4", "3"], db, timeout=60)
            except subprocess.TimeoutExpired:
                fails.append("run %d: hung (killed after 60 s)" % i)
                continue
            if p.returncode != 0 or not os.path.exists(db):
                fails.append("run %d: exit %d %s" % (i, p.returncode, p.stderr[-300:]))
                continue
            n, bad = bad_ops(db)
            if n != 12 or bad:
                fails.append("run %d: %d kernels (want 12), %d off the clock, e.g. (device, start, end, apiStart,"
                             " sync end) %r" % (i, n, len(bad), bad[:1]))
            last = db
    finally:
        del os.environ["SIMDEV_FAULT_CLOCK_SYNC_US"]
    check(not fails, "multithread, slow first clock sync: %d/20 runs on the session's clock%s"
          % (20 - len(fails), ("; " + "; ".join(fails[:3])) if fails else ""))
    return last


def union(c, dev):
    tot, cs, ce = 0, None, None
    for s, e in c.execute("SELECT start, end FROM ZE_OPS WHERE deviceId = ? AND end > start AND kind IN (1, 2, 3)"
                          " ORDER BY start", (dev,)):
        if cs is None or s > ce:
            tot += (ce - cs) if cs is not None else 0
            cs, ce = s, e
        else:
            ce = max(ce, e)
    return tot + (ce - cs if cs is not None else 0)


def html_outside(src):
    """The report's busy overview of a DB with one operation 5 s before the session."""
    db = os.path.join(WORK, "outside.db")
    with open(src, "rb") as f, open(db, "wb") as g:
        g.write(f.read())
    c = sqlite3.connect(db)
    c.execute("UPDATE ZE_OPS SET start = start - 5000000000, end = end - 5000000000 WHERE rowid ="
              " (SELECT min(rowid) FROM ZE_OPS WHERE deviceId = 1 AND kind = 1)")
    c.commit()
    html = os.path.join(WORK, "outside.html")
    p = subprocess.run([PA, "report", db, "-o", html], capture_output=True, timeout=120)
    if not check(p.returncode == 0, "report of a DB with an operation before the session: %r" % p.stderr[-300:]):
        return
    m = re.search(rb'<script type="application/json" id="pa-data">(.*?)</script>', open(html, "rb").read(), re.S)
    busy = json.loads(m.group(1))["busy"]
    start = dict(c.execute("SELECT key, value FROM META WHERE key = 'start_mono_ns'"))["start_mono_ns"]
    lo = c.execute("SELECT min(start) FROM ZE_OPS WHERE kind IN (1, 2, 3)").fetchone()[0]
    check(busy["t0"] == lo - start, "overview starts at the early operation: t0 %d = %d" % (busy["t0"], lo - start))
    for d in busy["devices"]:
        want = union(c, d["id"])
        check(d["busy_ns"] == want and abs(sum(d["bins"]) - want) <= PA_BINS_ROUNDING,
              "device %d: busy %d = union %d, bins sum %d" % (d["id"], d["busy_ns"], want, sum(d["bins"])))


PA_BINS_ROUNDING = 240  # each bin printed rounded to 1 ns
src = clock_runs()
if src:
    html_outside(src)
sys.exit(1 if FAILS else 0)
