#!/usr/bin/env python3
"""test_ze.py - Level Zero collection on simdev: ze_busy / hello_ze under the agent, checks the
DB and the reports against hand-computed values. usage: test_ze.py BUILD_DIR"""
import csv, io, os, sqlite3, subprocess, sys, tempfile

B = sys.argv[1]
PROF = os.path.join(B, "bin", "profagent")
fails = []


def run(prog, args, env_extra=None):
    d = tempfile.mkdtemp(prefix="pa_ze_")
    db = os.path.join(d, "t.db")
    env = dict(os.environ, ZE_ENABLE_ALT_DRIVERS=os.path.join(B, "lib", "libze_simdev.so"),
               LD_PRELOAD=os.path.join(B, "lib", "libprofagent.so"), PROFAGENT_OUTPUT=db)
    env.update(env_extra or {})
    p = subprocess.run([os.path.join(B, "bin", prog)] + args, env=env, capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"{prog} {args} exit {p.returncode}: {p.stderr[-500:]}")
    return db, p.stderr


def report(db, name):
    p = subprocess.run([PROF, "stats", "-r", name, db], capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, f"stats {name}: {p.stderr}")
    rows = list(csv.reader(io.StringIO(p.stdout)))
    return [r[:-1] if r and r[-1] == "" else r for r in rows[1:]]


def check(cond, msg):
    if not cond:
        fails.append(msg)
        print("FAIL:", msg)


def q(db, sql):
    return sqlite3.connect(db).execute(sql).fetchall()


# 101 appends -> 101 kernel rows, distinct, non-overlapping, in order
db, _ = run("ze_busy", ["--count", "101", "--ns", "10000"], {"PROFAGENT_SUMMARY": "none"})
rows = q(db, "SELECT start, end FROM ZE_OPS WHERE kind = 1 ORDER BY corrId")
check(len(rows) == 101, f"101 appends: {len(rows)} kernel rows")
check(all(rows[i][1] <= rows[i + 1][0] for i in range(len(rows) - 1)), "101 appends: overlapping or out of order")
check(len({r[0] for r in rows}) == 101, "101 appends: start times not distinct")

# busy 2 ms x 20: kern_sum instances 20, avg/med within 10 % of 2 ms, min <= med <= max, % sums 100
db, err = run("ze_busy", ["--count", "20", "--ns", "2000000"], {"PROFAGENT_SUMMARY": "stderr"})
ks = report(db, "kern_sum")
check(len(ks) == 1 and ks[0][9] == "busy_ns" and ks[0][3] == "20", f"kern_sum busy: {ks}")
if ks:
    avg, med, mn, mx = (float(ks[0][i]) for i in (4, 5, 6, 7))
    check(abs(avg - 2e6) <= 2e5 and abs(med - 2e6) <= 2e5, f"avg/med {avg}/{med} not 2 ms +-10%")
    check(mn <= med <= mx, "min <= med <= max")
    check(abs(sum(float(r[1]) for r in ks) - 100) <= 0.5, "Time (%) sum")
    # exit summary kernel total == kern_sum total
    check(f" {ks[0][2]} " in err, f"summary lacks kern_sum total {ks[0][2]}")
check(report(db, "hggc_ppu_kern_sum") == ks, "alias hggc_ppu_kern_sum differs")

# regular list: 3 kernels x 5 executions -> 15 rows, graph/node ids
db, _ = run("ze_busy", ["--count", "3", "--list", "regular", "--exec", "5", "--ns", "100000"], {"PROFAGENT_SUMMARY": "none"})
r = q(db, "SELECT count(*), count(graphId), count(DISTINCT nodeId), count(DISTINCT corrId) FROM ZE_OPS WHERE kind = 1")
check(r[0] == (15, 15, 3, 5), f"regular list rows/graph/node/corr: {r}")

# app event reset and reused for every launch: none missing, none stale (distinct starts)
db, _ = run("ze_busy", ["--count", "10", "--events", "reuse", "--ns", "100000"], {"PROFAGENT_SUMMARY": "none"})
r = q(db, "SELECT count(*), count(DISTINCT start), min(end - start), max(end - start) FROM ZE_OPS WHERE kind = 1")
check(r[0][0] == 10 and r[0][1] == 10 and r[0][2] == 100000, f"event reuse: {r}")

# wrap: 32 valid bits, 1 GHz clock started near the wrap -> right positive duration
db, _ = run("ze_busy", ["--count", "1", "--ns", "2000000", "--wrap"],
            {"PROFAGENT_SUMMARY": "none", "SIMDEV_TIMER_HZ": "1000000000", "SIMDEV_TIMESTAMP_BITS": "32"})
r = q(db, "SELECT end - start FROM ZE_OPS WHERE kind = 1")
check(len(r) == 1 and abs(r[0][0] - 2000000) <= 1000, f"wrap duration: {r}")

# kern_exec_trace queue rule: Queue Dur = kernel start - API end when positive, else '-'
for row in report(db, "kern_exec_trace"):
    api_end = int(row[1]) + int(row[2])
    ks_ = int(row[5])
    check((row[4] == "-") if ks_ <= api_end else (int(row[4]) == ks_ - api_end), f"queue rule: {row}")

# hello_ze (plain Level Zero program): its kernel is in kern_sum, copies in mem_size_sum
db, _ = run("hello_ze", [], {"PROFAGENT_SUMMARY": "none"})
ks = report(db, "kern_sum")
check(any(r[9] == "vector_add" for r in ks), f"hello_ze kern_sum: {ks}")
ms = {r[8]: r for r in report(db, "mem_size_sum")}
check(ms.get("[memcpy Host-to-Device]", [0, 0, 0])[1:3] == ["8192", "2"] and ms.get("[memcpy Device-to-Host]", [0, 0, 0])[1:3] == ["4096", "1"],
      f"hello_ze mem_size_sum: {ms}")
for row in report(db, "gpu_trace"):
    if row[13] != "-":  # copies/fills: throughput = bytes / duration
        check(int(row[14]) == int(row[13]) * 1000000000 // int(row[2]), f"gpu_trace throughput: {row}")
dev = report(db, "device_attribute")
check(len(dev) == 2 and dev[1][1] == "1", f"device_attribute: {dev}")
check(len(report(db, "kern_sum:device=1")) == 0, "device=1 filter should drop device 0 kernels")

print("FAILED" if fails else "OK", len(fails))
sys.exit(1 if fails else 0)
