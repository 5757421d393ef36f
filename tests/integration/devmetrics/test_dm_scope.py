#!/usr/bin/env python3
"""test_dm_scope.py - PROFAGENT_METRICS starts a metric stream only in a process whose application
uses Level Zero (no loader mapped, no zeInit, no stream in sh/sleep/grep wrappers), and it leaves the
Level Zero interception path what it is without metrics (loader entry points, no tracing layer).
usage: test_dm_scope.py BUILD_DIR"""
import csv, glob, io, os, re, sqlite3, subprocess, sys, tempfile

B = sys.argv[1]
SIMDEV = os.path.join(B, "lib", "libze_simdev.so")
AGENT = os.path.join(B, "lib", "libprofagent.so")
GEMM = os.path.join(B, "bin", "gemm")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pa_itest import FAILS as fails, check, preload  # noqa: E402


def env_for(d, extra):
    env = dict(os.environ, ZE_ENABLE_ALT_DRIVERS=SIMDEV, PROFAGENT_OUTPUT=os.path.join(d, "t-%p.db"),
               LD_PRELOAD=preload(AGENT), ASAN_OPTIONS="detect_leaks=0")
    env.pop("ZE_ENABLE_TRACING_LAYER", None)
    env.update(extra)
    return env


# ---- a shell, sleep and grep (no Level Zero) under PROFAGENT_METRICS: no loader mapped, no stream ----
for metrics in ("", "ComputeBasic"):
    d = tempfile.mkdtemp(prefix="pa_dmscope_")
    extra = {"PROFAGENT_METRICS": metrics} if metrics else {}
    p = subprocess.run(["sh", "-c", "sleep 0.2; grep -c libze_loader /proc/self/maps; true"],
                       env=env_for(d, extra), capture_output=True, text=True, timeout=60)
    check(p.stdout.strip() == "0", f"METRICS={metrics!r}: grep saw the loader mapped {p.stdout.strip()!r} times"
          f" (want 0): {p.stderr[-600:]}")
    dbs = glob.glob(os.path.join(d, "t-*.db"))
    check(len(dbs) >= 1, f"METRICS={metrics!r}: DBs {dbs}")
    for db in dbs:
        c = sqlite3.connect(db)
        have = [r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE name = 'METRIC_DEVICES'")]
        n = c.execute("SELECT count(*) FROM METRIC_DEVICES").fetchone()[0] if have else 0
        check(n == 0, f"METRICS={metrics!r}: {os.path.basename(db)} streamed metrics on {n} device(s)")

# ---- a Level Zero application: metrics collected, interception path unchanged by metrics ----
for metrics in ("", "ComputeBasic"):
    d = tempfile.mkdtemp(prefix="pa_dmscope_")
    extra = {"PROFAGENT_SUMMARY": "stderr", "PROFAGENT_OUTPUT": os.path.join(d, "g.db")}
    if metrics:
        extra["PROFAGENT_METRICS"] = metrics
    p = subprocess.run([GEMM], env=env_for(d, extra), capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"gemm METRICS={metrics!r}: exit {p.returncode}: {p.stderr[-800:]}")
    check("Level Zero interception: loader entry points (no tracing layer)" in p.stderr,
          f"gemm METRICS={metrics!r}: interception path: "
          f"{[l for l in p.stderr.splitlines() if 'interception' in l]}")
    check("ZE_ENABLE_TRACING_LAYER" not in p.stderr, f"gemm METRICS={metrics!r}: tracing layer named: "
          f"{[l for l in p.stderr.splitlines() if 'TRACING' in l]}")
    if metrics:
        c = sqlite3.connect(os.path.join(d, "g.db"))
        devs = c.execute("SELECT deviceId, state, intervals FROM METRIC_DEVICES ORDER BY 1").fetchall()
        check(len(devs) == 2 and all(s == 1 and n > 10 for _, s, n in devs), f"gemm METRIC_DEVICES: {devs}")
        # the exit summary's achieved / peak figures are the reports' (one rule: truncated, pa_stat_trunc)
        rep = {}
        for r in ("dma_util_sum", "unit_util_sum"):
            q = subprocess.run([os.path.join(B, "bin", "profagent"), "stats", "-f", "csv", "-r", r,
                                os.path.join(d, "g.db")], capture_output=True, text=True, timeout=60)
            for row in csv.reader(io.StringIO(q.stdout)):
                if len(row) > 6 and row[0].isdigit() and row[4].isdigit():
                    rep[(int(row[1]), row[2])] = (int(row[4]), row[5])
        summ, dev = {}, None
        for l in p.stderr.splitlines():
            m = re.match(r"device (\d+): ComputeBasic", l)
            if m:
                dev = int(m.group(1))
            m = re.match(r"  (\S.*?)\s+(\d+) / (\d+|-)\s", l)
            if m and dev is not None:
                summ[(dev, m.group(1))] = (int(m.group(2)), m.group(3))
        check(len(rep) >= 20 and summ == rep, f"gemm summary vs reports: "
              f"{sorted((k, summ.get(k), rep.get(k)) for k in set(summ) | set(rep) if summ.get(k) != rep.get(k))[:4]}"
              f" ({len(summ)} / {len(rep)} lines)")

# ---- a group that exists but cannot be streamed as intervals: said so, in the one warning ----
d = tempfile.mkdtemp(prefix="pa_dmscope_")
p = subprocess.run([GEMM], env=env_for(d, {"PROFAGENT_METRICS": "EuStallSampling", "PROFAGENT_SUMMARY": "none",
                                          "PROFAGENT_OUTPUT": os.path.join(d, "e.db")}),
                   capture_output=True, text=True, timeout=120)
w = [l for l in p.stderr.splitlines() if "PROFAGENT_METRICS=EuStallSampling" in l]
# (time-based on real drivers too, notes/eu-stall.md, but raw IP samples: no interval metric)
check(p.returncode == 0 and len(w) == 1 and "it exists but has no interval begin/duration metric" in w[0]
      and "PROFAGENT_PC_SAMPLING=1" in w[0], "EuStallSampling: %r" % w)

# ---- a session shorter than the sampling period: the summary says no interval completed ----
d = tempfile.mkdtemp(prefix="pa_dmscope_")
p = subprocess.run([GEMM], env=env_for(d, {"PROFAGENT_METRICS": "ComputeBasic", "PROFAGENT_METRICS_PERIOD_US": "1000000",
                                          "PROFAGENT_SUMMARY": "stderr", "PROFAGENT_OUTPUT": os.path.join(d, "p.db")}),
                   capture_output=True, text=True, timeout=120)
n0 = sqlite3.connect(os.path.join(d, "p.db")).execute("SELECT min(intervals) FROM METRIC_DEVICES").fetchone()[0]
if n0 == 0:
    check("no metric interval completed" in p.stderr and "(no peak known)" not in p.stderr.split("== Device util")[-1]
          .split("\n\n")[0], "period 1 s: %r" % [l for l in p.stderr.splitlines() if "interval" in l])
else:
    print("note: period 1 s: %d intervals completed (a loaded host: gemm ran longer); not checked" % n0)

print("FAIL" if fails else "PASS", len(fails))
sys.exit(1 if fails else 0)
