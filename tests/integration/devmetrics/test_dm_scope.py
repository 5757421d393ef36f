#!/usr/bin/env python3
"""test_dm_scope.py - PROFAGENT_METRICS starts a metric stream only in a process whose application
uses Level Zero (no loader mapped, no zeInit, no stream in sh/sleep/grep wrappers), and it leaves the
Level Zero interception path what it is without metrics (loader entry points, no tracing layer).
usage: test_dm_scope.py BUILD_DIR"""
import glob, os, sqlite3, subprocess, sys, tempfile

B = sys.argv[1]
SIMDEV = os.path.join(B, "lib", "libze_simdev.so")
AGENT = os.path.join(B, "lib", "libprofagent.so")
GEMM = os.path.join(B, "bin", "gemm")
fails = []


def preload(lib):
    """LD_PRELOAD for the agent: the ASan runtime first when it is a sanitizer build."""
    out = subprocess.run(["ldd", lib], capture_output=True, text=True).stdout
    asan = [l.split("=>")[1].split()[0] for l in out.splitlines() if "libasan" in l and "=>" in l]
    return ":".join(asan + [lib])


def check(cond, msg):
    if not cond:
        fails.append(msg)
        print("FAIL:", msg)


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

print("FAIL" if fails else "PASS", len(fails))
sys.exit(1 if fails else 0)
