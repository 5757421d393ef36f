#!/usr/bin/env python3
"""test_ze_summary.py - the Level Zero part of the exit summary against the DB: device busy time
equals the union of each device's ZE_OPS intervals (several threads and engines, ops arriving out
of start order), column names as in kern_sum / ze_api_sum / mem_time_sum / mem_size_sum, and one
run length (the header's Duration in ns is the utilization's denominator).
usage: test_ze_summary.py BUILD_DIR"""
import os, re, sqlite3, subprocess, sys, tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pa_itest import check, FAILS as fails  # noqa: E402

B = sys.argv[1]


def run(prog, args):
    """Runs samples' prog under the agent; returns (db, summary text)."""
    db = os.path.join(tempfile.mkdtemp(prefix="pa_zesum_"), "t.db")
    env = dict(os.environ, ZE_ENABLE_ALT_DRIVERS=os.path.join(B, "lib", "libze_simdev.so"),
               LD_PRELOAD=os.path.join(B, "lib", "libprofagent.so"), PROFAGENT_OUTPUT=db,
               PROFAGENT_SUMMARY="stderr")
    p = subprocess.run([os.path.join(B, "bin", prog)] + args, env=env, capture_output=True, text=True,
                       timeout=120)
    check(p.returncode == 0, f"{prog} {args}: exit {p.returncode}: {p.stderr[-300:]}")
    return db, p.stderr


def union_per_device(db):
    """Busy ns per device as a user computes it: merge the sorted [start, end) intervals."""
    busy, last = {}, {}
    for dev, s, e in sqlite3.connect(db).execute(
            "SELECT deviceId, start, end FROM ZE_OPS WHERE end > start ORDER BY start"):
        le = last.get(dev, 0)
        if e > le:
            busy[dev] = busy.get(dev, 0) + e - max(s, le)
            last[dev] = e
    return busy


def header_of(text, heading):
    """The column-title line of the summary table after `heading`."""
    lines = text.splitlines()
    for i, l in enumerate(lines):
        if l.startswith(heading) and i + 1 < len(lines):
            return re.split(r"\s{2,}", lines[i + 1].strip())
    return None


# 1: four threads on two devices: ops of both devices from several threads interleave
for args in (["4", "50"], []):
    db, text = run("multithread", args)
    want = union_per_device(db)
    got = {int(d): int(b) for d, b in re.findall(r"^  device (\d+): (\d+) ns busy", text, re.M)}
    check(len(want) == 2, f"multithread {args}: want ops on 2 devices, DB has {sorted(want)}")
    check(got == want, f"multithread {args}: summary busy {got} != union of ZE_OPS {want}")
    # 14: the header's duration in ns is the run length the utilization divides by
    dur = re.search(r"^Duration: [0-9.]+ s \((\d+) ns, ", text, re.M)
    util = re.search(r"^Device utilization .* duration (\d+) ns\):", text, re.M)
    check(dur and util and dur.group(1) == util.group(1),
          f"multithread {args}: one run length: {dur and dur.group(0)!r} vs {util and util.group(0)!r}")
    check("run time" not in text, f"multithread {args}: a second run length ('run time') is printed")
    for d, b in got.items():
        pct = re.search(rf"^  device {d}: {b} ns busy, ([0-9.]+) %", text, re.M)
        check(pct and abs(float(pct.group(1)) - 100.0 * b / int(dur.group(1))) < 0.051,
              f"multithread {args}: device {d} percentage {pct and pct.group(1)}")
    # 12: column names as the reports name them
    k = header_of(text, "Level Zero kernels")
    check(k and k[3] == "Instances" and k[-1] == "Name", f"kernel columns {k}")
    a = header_of(text, "Level Zero API calls")
    check(a and a[3] == "Num Calls" and a[-1] == "Name", f"API columns {a}")

# 12: copies and fills: "Count" and "Operation" as mem_time_sum / mem_size_sum
db, text = run("vector_add", [])
t = header_of(text, "Level Zero copies and fills by direction (device time)")
s = header_of(text, "Level Zero copies and fills by direction (bytes)")
check(t and t[3] == "Count" and t[-1] == "Operation", f"copy time columns {t}")
check(s and s[1] == "Total (bytes)" and s[2] == "Count" and s[-1] == "Operation", f"copy size columns {s}")
got = {int(d): int(b) for d, b in re.findall(r"^  device (\d+): (\d+) ns busy", text, re.M)}
check(got and got == union_per_device(db), f"vector_add: busy {got} != {union_per_device(db)}")

print("FAILED: %d" % len(fails) if fails else "OK")
sys.exit(1 if fails else 0)
