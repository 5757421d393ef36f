#!/usr/bin/env python3
"""test_ze.py - Level Zero collection on simdev: ze_busy / hello_ze under the agent, checks the
DB and the reports against hand-computed values. usage: test_ze.py BUILD_DIR"""
import csv, io, os, re, sqlite3, subprocess, sys, tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pa_itest import check, FAILS as fails  # noqa: E402

B = sys.argv[1]
PROF = os.path.join(B, "bin", "profagent")


def run(prog, args, env_extra=None, preload=True):
    d = tempfile.mkdtemp(prefix="pa_ze_")
    db = os.path.join(d, "t.db")
    env = dict(os.environ, ZE_ENABLE_ALT_DRIVERS=os.path.join(B, "lib", "libze_simdev.so"),
               LD_PRELOAD=os.path.join(B, "lib", "libprofagent.so"), PROFAGENT_OUTPUT=db)
    env.update(env_extra or {})
    exe = prog if "/" in prog else os.path.join(B, "bin", prog)
    p = subprocess.run([exe] + args, env=env, capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"{prog} {args} exit {p.returncode}: {p.stderr[-500:]}")
    return db, p.stderr


def report(db, name):
    p = subprocess.run([PROF, "stats", "-r", name, db], capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, f"stats {name}: {p.stderr}")
    rows = list(csv.reader(io.StringIO(p.stdout)))
    return [r[:-1] if r and r[-1] == "" else r for r in rows[1:]]


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
# (ze_busy --wrap warms the engine up with a 1 us kernel first: that row is not the one checked)
r = q(db, "SELECT end - start FROM ZE_OPS WHERE kind = 1 AND end - start > 1000000")
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
# (hello_ze copies from and to malloc memory: Pageable, as gpu_trace's SrcMemKd/DstMemKd say)
check(ms.get("[memcpy Pageable-to-Device]", [0, 0, 0])[1:3] == ["8192", "2"] and ms.get("[memcpy Device-to-Pageable]", [0, 0, 0])[1:3] == ["4096", "1"],
      f"hello_ze mem_size_sum: {ms}")
for row in report(db, "gpu_trace"):
    if row[13] != "-":  # copies/fills: throughput = bytes / duration
        check(int(row[14]) == int(row[13]) * 1000000000 // int(row[2]), f"gpu_trace throughput: {row}")
dev = report(db, "device_attribute")
check(len(dev) == 2 and dev[1][1] == "1", f"device_attribute: {dev}")
check(len(report(db, "kern_sum:device=1")) == 0, "device=1 filter should drop device 0 kernels")

ZT = os.path.join(B, "tests", "ze")


def counters(db):
    return dict(q(db, "SELECT name, value FROM SESSION_COUNTERS WHERE name LIKE 'ze%'"))


# two devices x two engines, 200 ms kernels all overlapping (all wait for one gate event the
# host signals after the appends): both devices reported with their ids; device=1 filters
db, _ = run(os.path.join(ZT, "ze_ops_check"), ["devices"], {"PROFAGENT_SUMMARY": "none"})
r = q(db, "SELECT deviceId, engine, start, end FROM ZE_OPS WHERE kind = 1 ORDER BY deviceId, engine")
check([(d, e) for d, e, _, _ in r] == [(0, 0), (0, 1), (1, 0), (1, 1)], f"devices/engines: {r}")
check(len(r) == 4 and max(x[2] for x in r) < min(x[3] for x in r), f"4 kernels should overlap: {r}")
check(all(x[3] - x[2] == 200000000 for x in r), f"device kernels 200 ms: {r}")
ks = report(db, "kern_sum:device=1")
check([(x[3], x[9]) for x in ks] == [("2", "busy_d1")], f"kern_sum:device=1: {ks}")
ks = report(db, "kern_sum")
check(sorted((x[3], x[9]) for x in ks) == [("2", "busy_d0"), ("2", "busy_d1")], f"kern_sum devices: {ks}")
gt = report(db, "gpu_trace:device=1")
check(len(gt) == 2 and all(x[17] == "SimDev GPU 1 (1)" for x in gt), f"gpu_trace:device=1: {gt}")
check([x[0] for x in report(db, "kern_gb_trace:device=0")] != [] and
      {x[4] for x in report(db, "kern_gb_trace")} == {"0", "1"}, "kern_gb_trace device ids")
dev = report(db, "device_attribute")
check([(x[1], x[3]) for x in dev] == [("0", "0000:10:00.0"), ("1", "0000:11:00.0")], f"PCI bus ids: {dev}")

# copies and fills of known sizes: mem_size_sum exact, gpu_trace bytes/throughput/kinds
db, _ = run(os.path.join(ZT, "ze_ops_check"), ["copies"], {"PROFAGENT_SUMMARY": "none"})
ms = {x[8]: x[1:7] for x in report(db, "mem_size_sum")}
want = {"[memcpy Host-to-Device]": ["4096", "1", "4096", "4096", "4096", "4096"],  # USM host
        "[memcpy Pageable-to-Device]": ["1000", "1", "1000", "1000", "1000", "1000"],  # malloc
        "[memcpy Device-to-Host]": ["8192", "1", "8192", "8192", "8192", "8192"],
        "[memcpy Device-to-Device]": ["3128", "2", "1564", "1564", "128", "3000"],
        "[memcpy Shared-to-Device]": ["256", "1", "256", "256", "256", "256"],
        "[memset]": ["2560", "2", "1280", "1280", "512", "2048"]}
check(ms == want, f"mem_size_sum: {ms}")
mt = {x[9]: x[3] for x in report(db, "mem_time_sum")}
check(mt == {k: v[1] for k, v in want.items()}, f"mem_time_sum counts: {mt}")
gt = [x for x in report(db, "gpu_trace") if x[13] != "-"]
got = sorted((int(x[13]), x[15], x[16], x[20]) for x in gt)
check(got == [(128, "Device", "Device", "Memcpy DtoD"), (256, "Shared", "Device", "Memcpy StoD"),
              (512, "Device", "-", "Memset"), (1000, "Pageable", "Device", "Memcpy HtoD"),
              (2048, "Device", "-", "Memset"), (3000, "Device", "Device", "Memcpy DtoD"),
              (4096, "Host", "Device", "Memcpy HtoD"), (8192, "Device", "Host", "Memcpy DtoH")],
      f"gpu_trace copies: {got}")
for x in gt:
    check(int(x[14]) == int(x[13]) * 1000000000 // int(x[2]) and x[4] == "-" and x[20] != "",
          f"gpu_trace copy row: {x}")

# a regular list executed 5 times back-to-back, one sync: 15 rows, 5 per node, distinct times
db, _ = run(os.path.join(ZT, "ze_ops_check"), ["reexec"], {"PROFAGENT_SUMMARY": "none"})
r = q(db, "SELECT start, end, nodeId, corrId FROM ZE_OPS WHERE kind = 1 ORDER BY start")
check(len(r) == 15 and len({x[0] for x in r}) == 15, f"reexec rows/distinct starts: {r}")
check(all(r[i][1] <= r[i + 1][0] for i in range(len(r) - 1)), f"reexec: same engine, no overlap: {r}")
check([x[2] for x in r] == [0, 1, 2] * 5 and len({x[3] for x in r}) == 5, f"reexec node/corr order: {r}")
check(all(x[1] - x[0] == 200000 for x in r), f"reexec durations: {r}")
check(counters(db).get("ze_uncollected_ops") == 0, f"reexec counters: {counters(db)}")
ks = report(db, "kern_sum")
check(len(ks) == 1 and ks[0][3] == "15", f"reexec kern_sum: {ks}")

# IPC event pool: the agent must not add KERNEL_TIMESTAMP (the spec forbids it, simdev rejects it);
# the kernel signalling an IPC event has no device times: counted uncollected, the other one a row.
# The barrier of drain() on the pool's second event signals an agent event instead (a barrier
# after it signals the IPC event), so it is a row too
db, _ = run(os.path.join(ZT, "ze_ops_check"), ["ipc"], {"PROFAGENT_SUMMARY": "none"})
r = q(db, "SELECT end - start FROM ZE_OPS WHERE kind = 1") if db else None
check(r == [(100000,)], f"ipc: one kernel row of 100 us: {r}")
check(db and counters(db).get("ze_uncollected_ops") == 1, f"ipc counters: {counters(db) if db else None}")
check(db and q(db, "SELECT count(*) FROM ZE_OPS WHERE kind = 4") == [(1,)], "ipc: the barrier is a row")

# app event reset on the device while its kernel runs: both kernels, right durations
db, _ = run(os.path.join(ZT, "ze_ops_check"), ["devreset"], {"PROFAGENT_SUMMARY": "none"})
r = q(db, "SELECT end - start, s.value FROM ZE_OPS o JOIN STRING_IDS s ON s.id = o.nameId"
          " WHERE kind = 1 ORDER BY start")
check(r == [(2000000, "busy_2ms"), (100000, "busy_100us")], f"device reset: {r}")
check(counters(db).get("ze_uncollected_ops") == 0, f"devreset counters: {counters(db)}")

# exit summary kernel rows == kern_sum rows (numbers parsed from both), names demangled
db, err = run(os.path.join(ZT, "ze_ops_check"), ["names"], {"PROFAGENT_SUMMARY": "stderr"})
ks = report(db, "kern_sum")
lines = err.split("\n")
start = next((i for i, l in enumerate(lines) if l.startswith("Level Zero kernels")), None)
summ = []
if start is not None:
    for l in lines[start + 3:]:
        if not l.strip():
            break
        summ.append(re.split(r"\s{2,}", l.strip()))
check(summ == ks and len(ks) == 2, f"summary kernels {summ} != kern_sum {ks}")
check(sorted(x[9] for x in ks) == ["ns::busy(unsigned long)",
                                   "vector_add(float const*, float const*, float*, unsigned int)"],
      f"demangled names: {ks}")
check(sorted(x[9] for x in report(db, "kern_sum:base")) == ["busy", "vector_add"], "kern_sum:base")
check(sorted(x[9] for x in report(db, "kern_sum:mangled")) == ["_Z10vector_addPKfS0_Pfj", "_ZN2ns4busyEm"],
      "kern_sum:mangled")

# an application that dlopen()s the loader: traced, its kernel in kern_sum
db, _ = run(os.path.join(ZT, "ze_dlopen"), [], {"PROFAGENT_SUMMARY": "none"})
ks = report(db, "kern_sum")
check([(x[3], x[9]) for x in ks] == [("1", "vector_add")], f"dlopen kern_sum: {ks}")
api = {x[9]: x[3] for x in report(db, "ze_api_sum")}
check(api.get("zeInit") == "1" and api.get("zeCommandListAppendLaunchKernel") == "1", f"dlopen ze_api_sum: {api}")

# an HGTX-only program (no Level Zero): no ZE_API rows, no Level Zero summary section or message
db, err = run(os.path.join(B, "tests", "spine", "spine_nested"), [], {"PROFAGENT_SUMMARY": "stderr"})
check(q(db, "SELECT count(*) FROM ZE_API")[0][0] == 0 and q(db, "SELECT count(*) FROM ZE_OPS")[0][0] == 0,
      "HGTX-only program has ze rows")
check("Level Zero" not in err and "[profagent ze]" not in err and "ze:" not in err,
      f"HGTX-only summary mentions Level Zero: {err[-800:]}")

print("FAILED" if fails else "OK", len(fails))
sys.exit(1 if fails else 0)
