#!/usr/bin/env python3
"""test_proj.py - HGTX ranges projected onto the device (issue 5) on simdev: runs proj_scen under the
agent and checks associations, reports and the exit summary against values computed by hand from
the kernels' own ZE_OPS rows (busy_ns kernels have exact durations). usage: test_proj.py BUILD_DIR"""
import csv, io, os, sqlite3, subprocess, sys, tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pa_itest import check, preload, FAILS as fails  # noqa: E402

B = sys.argv[1]
PROF = os.path.join(B, "bin", "profagent")


def run(scen):
    db = os.path.join(tempfile.mkdtemp(prefix="pa_proj_"), "t.db")
    env = dict(os.environ, ZE_ENABLE_ALT_DRIVERS=os.path.join(B, "lib", "libze_simdev.so"),
               LD_PRELOAD=preload(os.path.join(B, "lib", "libprofagent.so")), PROFAGENT_OUTPUT=db,
               PROFAGENT_SUMMARY="stderr")
    p = subprocess.run([os.path.join(B, "tests", "proj", "proj_scen"), scen], env=env,
                       capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"{scen}: exit {p.returncode}: {p.stderr[-500:]}")
    return db, p.stderr


def report(db, spec, rc=0):
    p = subprocess.run([PROF, "stats", "-r", spec, db], capture_output=True, text=True, timeout=60)
    check(p.returncode == rc, f"stats {spec}: exit {p.returncode} {p.stderr}")
    if rc:
        return p.stderr
    rows = list(csv.reader(io.StringIO(p.stdout)))
    return [r[1:-1] if r and r[-1] == "" else r[1:] for r in rows[1:]]  # drop Row# and trailing ''


def q(db, sql):
    return sqlite3.connect(db).execute(sql).fetchall()


# ---- nested: profile > Loop1 > DoProcess > k1 (1 ms); profile > Loop2 > DoProcess > k2 (2 ms); k3 outside
db, err = run("nested")
ks = q(db, "SELECT end - start FROM ZE_OPS WHERE kind = 1 ORDER BY start")
check([k for k in ks] == [(1000000,), (2000000,), (500000,)], f"nested kernels {ks}")
rows = report(db, "hgtx_kern_sum")
got = [(r[0], r[1], r[4], r[5], r[6], r[12]) for r in rows]
check(got == [("DoProcess", "PushPop", "2", "2", "3000000", "busy_ns"),
              ("Loop1", "PushPop", "1", "1", "1000000", "busy_ns"),
              ("Loop2", "PushPop", "1", "1", "2000000", "busy_ns"),
              ("profile", "PushPop", "1", "2", "3000000", "busy_ns")], f"nested hgtx_kern_sum {got}")
if rows:
    # population StdDev as in the spec example of 2.3.9: (2000000 - 1000000) / 2
    check(rows[0][6:12] == ["3000000", "1500000", "1500000", "1000000", "2000000", "500000"],
          f"DoProcess stats {rows[0][6:12]}")
sa = report(db, "hgtx_kern_sum:standalone")
check(len(sa) == 5 and sa[4][0] == "-" and sa[4][4] == "-" and sa[4][5] == "1" and sa[4][6] == "500000",
      f"standalone row {sa[-1:]}")
check(report(db, "hgtx_kern_sum:range=^Loop") == [r for r in rows if r[0].startswith("Loop")], "range=^Loop kern_sum")
check([r[0] for r in report(db, "hgtx_gpu_proj_sum:range=^Loop")] == ["Loop2", "Loop1"], "range=^Loop proj_sum")
e = report(db, "hgtx_kern_sum:range=(", rc=2)
check("invalid regular expression" in e and "offset" in e, f"range=( message: {e}")
tr = report(db, "hgtx_kern_trace")
check([r[0] for r in tr] == ["profile", "Loop1", "DoProcess", "profile", "Loop2", "DoProcess"], f"kern_trace order {tr}")
check(all(r[11] != "-" for r in tr), "kern_trace API start set for direct launches")
pt = report(db, "hgtx_gpu_proj_trace")
byname = {(r[0], r[10]): r for r in pt}
prof = byname.get(("profile", "0"))
(s1, e1), (s2, e2) = q(db, "SELECT start, end FROM ZE_OPS WHERE kind = 1 ORDER BY start")[:2]
check(prof is not None and prof[1:4] == [str(s1), str(e2 - s1), "3000000"] and prof[9] == "2" and prof[11] == "2",
      f"profile projection {prof}")
check([(r[0], r[10], r[14]) for r in pt if r[0] == "DoProcess"][0][2].count(":") == 3, "RangeStack depth 3")
kn = report(db, "kern_sum:hgtx-name")
check(sorted((r[8], r[2]) for r in kn) == [("DoProcess/busy_ns", "2"), ("busy_ns", "1")], f"kern_sum hgtx-name {kn}")
check(any(r[-1] == "DoProcess/busy_ns" for r in report(db, "gpu_trace:hgtx-name")), "gpu_trace hgtx-name")
check(any(r[-1] == "DoProcess/busy_ns" for r in report(db, "kern_gb_sum:hgtx-name")), "kern_gb_sum hgtx-name")
check(report(db, "hgtx_ppu_proj_sum") == report(db, "hgtx_gpu_proj_sum"), "alias hgtx_ppu_proj_sum")


def summary_matches(db, err, tag):
    """every hgtx_gpu_proj_sum row appears in the exit summary with the same numbers"""
    for r in report(db, "hgtx_gpu_proj_sum"):
        # the summary's table: Row#, then hgtx_gpu_proj_sum's columns Range, Style, In-Use (%),
        # Proj Active Time (ns), Total Proj Time (ns), Range Instances, Total PPU Ops (fresh #12)
        line = [l.split() for l in err.splitlines() if len(l.split()) == 8 and l.split()[1] == r[0]]
        want = [r[0], r[1], r[2], r[3], r[4], r[6], r[12]]
        check(any(l[1:] == want for l in line), f"{tag}: summary lacks {want} for {r[0]}: {line}")
    hdr = [l for l in err.splitlines() if l.lstrip().startswith("Row#") and "Range Instances" in l]
    check(len(hdr) == 1 and hdr[0].split() == ["Row#", "Range", "Style", "In-Use", "(%)", "Proj", "Active",
          "Time", "(ns)", "Total", "Proj", "Time", "(ns)", "Range", "Instances", "Total", "PPU", "Ops"],
          f"{tag}: projection summary header: {hdr}")


summary_matches(db, err, "nested")

# ---- overlap: k0 before "ovl"; kA, kB on two engines inside, overlapping
db, err = run("overlap")
ops = q(db, "SELECT start, end FROM ZE_OPS WHERE kind = 1 ORDER BY start")
check(len(ops) == 3, f"overlap ops {ops}")
if len(ops) == 3:
    # identify k0 (1 ms) and kA/kB (20 ms each) by duration: under load the engines may start
    # them in any order, so start order says nothing about which kernel is which
    (p0, p1), = [o for o in ops if o[1] - o[0] < 10000000]
    (a0, a1), (b0, b1) = sorted(o for o in ops if o[1] - o[0] >= 10000000)
    check(b0 < a1, "kA and kB overlap on the device")
    union = max(a1, b1) - a0
    plain = (a1 - a0) + (b1 - b0)
    r = report(db, "hgtx_gpu_proj_sum")
    check(len(r) == 1 and r[0][0] == "ovl" and r[0][3] == str(union) and r[0][12] == "2",
          f"ovl active {r} != union {union}")
    check(union != plain and r and r[0][3] != str(plain), "a plain sum would differ")
    span = max(p1, a1, b1) - min(p0, a0)
    check(r and abs(float(r[0][2]) - round(union * 100 / span, 1)) < 0.051 and float(r[0][2]) <= 100,
          f"In-Use {r[0][2] if r else None} vs {union * 100 / span}")
    full = report(db, "hgtx_gpu_proj_sum:range-mode=full")
    check(full and float(full[0][2]) <= float(r[0][2]), f"range-mode=full {full}")
summary_matches(db, err, "overlap")

# ---- graph: kernels of 0.2 ms and 0.3 ms recorded in "capture", list executed 4x, the 4th inside "runner".
# Graph mapping is additive: by default every execution's kernels belong to "capture" (ranges open at the
# append) AND the 4th execution's also to "runner" (open around zeCommandQueueExecuteCommandLists).
db, err = run("graph")
gk = q(db, "SELECT end - start FROM ZE_OPS WHERE kind = 1 ORDER BY start")
check(gk == [(200000,), (300000,)] * 4, f"graph kernels {gk}")
d = report(db, "hgtx_kern_sum")
# capture: 1 instance, 4 executions x 2 kernels = 8, total 4 x (200000 + 300000) = 2000000,
#   avg 2000000 / 8 = 250000, median of 4x200000 + 4x300000 = (200000 + 300000) / 2 = 250000,
#   population StdDev = every sample 50000 from the mean = 50000
# runner: 1 instance, the 4th execution's 2 kernels, 200000 + 300000 = 500000, avg = median = 250000,
#   StdDev 50000
check([r[:2] + r[4:] for r in d] ==
      [["capture", "PushPop", "1", "8", "2000000", "250000", "250000", "200000", "300000", "50000", "busy_ns"],
       ["runner", "PushPop", "1", "2", "500000", "250000", "250000", "200000", "300000", "50000", "busy_ns"]],
      f"graph mapping (additive) {d}")
check(report(db, "hgtx_kern_sum:standalone") == d, "graph: every kernel associated by default (no standalone row)")
n = report(db, "hgtx_kern_sum:no-graph-mapping")
check([(r[0], r[4], r[5], r[6]) for r in n] == [("runner", "1", "2", "500000")], f"no-graph-mapping {n}")
ns = report(db, "hgtx_kern_sum:no-graph-mapping:standalone")
# standalone: executions 1-3, 3 x 2 = 6 kernels, 3 x 500000 = 1500000
check(len(ns) == 2 and ns[1][0] == "-" and ns[1][4] == "-" and ns[1][5:7] == ["6", "1500000"],
      f"no-graph-mapping standalone {ns}")
gt = report(db, "hgtx_kern_trace")
# 8 capture rows (through the graph: API start/duration '-') + 2 runner rows (the execute call's API times);
# by kernel start, then range start: capture (started first) before runner for the 4th execution's kernels
check([r[0] for r in gt] == ["capture"] * 6 + ["capture", "runner"] * 2, f"graph kern_trace ranges {[r[0] for r in gt]}")
check(all(r[11] == "-" and r[12] == "-" for r in gt if r[0] == "capture"), "graph rows: API start/duration '-'")
ex = q(db, "SELECT o.apiStart, o.apiEnd - o.apiStart FROM ZE_OPS o WHERE kind = 1 ORDER BY start")[6:]
check([(r[11], r[12]) for r in gt if r[0] == "runner"] == [(str(a), str(b)) for a, b in ex] and
      all(a > 0 for a, _ in ex), f"runner rows: execute call's API start/duration {ex}")
check([(r[0], r[11]) for r in report(db, "hgtx_kern_trace:no-graph-mapping")] == [(r[0], r[11]) for r in gt if r[0] == "runner"],
      "kern_trace no-graph-mapping: only runner")
ops = q(db, "SELECT start, end FROM ZE_OPS WHERE kind = 1 ORDER BY start")
pt = {r[0]: r for r in report(db, "hgtx_gpu_proj_trace")}
# capture projects from the 1st execution's first kernel to the 4th's last end, 8 ops; runner over the
# 4th execution only, 2 ops
check(pt.get("capture", [None] * 10)[1:3] + pt.get("capture", [None] * 10)[9:10] ==
      [str(ops[0][0]), str(ops[7][1] - ops[0][0]), "8"], f"capture projection {pt.get('capture')}")
check(pt.get("runner", [None] * 10)[1:3] + pt.get("runner", [None] * 10)[9:10] ==
      [str(ops[6][0]), str(ops[7][1] - ops[6][0]), "2"], f"runner projection {pt.get('runner')}")
check([r[0] for r in report(db, "hgtx_gpu_proj_trace:no-graph-mapping")] == ["runner"], "proj_trace no-graph-mapping")
check(sorted((r[8], r[2]) for r in report(db, "kern_sum:hgtx-name")) == [("capture/busy_ns", "8")],
      "graph kern_sum hgtx-name: the innermost range open at the append")
summary_matches(db, err, "graph")

# ---- recstep: "all" > "rec" records kernels of 0.4 ms and 0.1 ms; "all" > "step" executes the list, twice
db, err = run("recstep")
rk = q(db, "SELECT end - start FROM ZE_OPS WHERE kind = 1 ORDER BY start")
check(rk == [(400000,), (100000,)] * 2, f"recstep kernels {rk}")
# raw associations: how 1 (at the append) rec 4 + all 4; how 2 (around the execute) step 4 + all 4
hw = q(db, "SELECT r.name, x.how, count(*) FROM HGTX_OP_ASSOC x JOIN HGTX_RANGES_NAMED r ON r.id = x.rangeId"
           " GROUP BY 1, 2 ORDER BY 1, 2")
check(hw == [("all", 1, 4), ("all", 2, 4), ("rec", 1, 4), ("step", 2, 4)], f"recstep HGTX_OP_ASSOC {hw}")
# each range holds the 4 kernel executions once: total 2 x (400000 + 100000) = 1000000, avg 250000,
# median (100000 + 400000) / 2 = 250000, population StdDev 150000; "all" is both at the append and at the
# executes and still counts each kernel once; "step" has 2 instances
st = ["4", "1000000", "250000", "250000", "100000", "400000", "150000", "busy_ns"]
rs = report(db, "hgtx_kern_sum")
check([[r[0], r[4]] + r[5:] for r in rs] == [["all", "1"] + st, ["rec", "1"] + st, ["step", "2"] + st],
      f"recstep hgtx_kern_sum {rs}")
rn = report(db, "hgtx_kern_sum:no-graph-mapping")
check([[r[0], r[4]] + r[5:] for r in rn] == [["all", "1"] + st, ["step", "2"] + st], f"recstep no-graph-mapping {rn}")
rt = report(db, "hgtx_kern_trace")
# 4 kernels x (all, rec, step) = 12 rows; "all" once per kernel, with the execute's API times
check(sorted((r[0], r[11] == "-") for r in rt) ==
      [("all", False)] * 4 + [("rec", True)] * 4 + [("step", False)] * 4, f"recstep kern_trace {rt}")
check(len(report(db, "hgtx_kern_trace:no-graph-mapping")) == 8, "recstep kern_trace no-graph-mapping: all + step")
ps = {r[0]: r for r in report(db, "hgtx_gpu_proj_sum")}
check({k: (v[6], v[12]) for k, v in ps.items()} == {"all": ("1", "4"), "rec": ("1", "4"), "step": ("2", "4")},
      f"recstep proj_sum instances / device ops {ps}")
check(sorted(r[0] for r in report(db, "hgtx_gpu_proj_sum:no-graph-mapping")) == ["all", "step"],
      "recstep proj_sum no-graph-mapping")
check(sorted((r[8], r[2]) for r in report(db, "kern_sum:hgtx-name")) == [("rec/busy_ns", "4")],
      "recstep kern_sum hgtx-name: the innermost range at the append")
summary_matches(db, err, "recstep")

# ---- xthread: start/end "xr" begun on main, ended on B after B launched a 1 ms kernel in it
db, err = run("xthread")
x = report(db, "hgtx_kern_sum")
check([(r[0], r[1], r[5], r[6]) for r in x] == [("xr", "StartEnd", "1", "1000000")], f"xthread {x}")
# TID of the (range, kernel) rows = the kernel's launching thread B (spec 2.3.9: rows per thread, range
# and kernel), not main, which started the range (and whose tid is the pid)
(ktid,), = q(db, "SELECT tid & 0xffffffff FROM ZE_OPS WHERE kind = 1")
(rtid,), = q(db, "SELECT globalTid & 0xffffffff FROM HGTX_RANGES_NAMED WHERE name = 'xr'")
check(ktid != rtid and x and x[0][3] == str(ktid), f"xthread kern_sum TID {x[0][3] if x else None}: kernel {ktid}, range {rtid}")
xt = report(db, "hgtx_kern_trace")
check(len(xt) == 1 and xt[0][3] == str(ktid), f"xthread kern_trace TID {xt}")
check([r[8] for r in report(db, "hgtx_gpu_proj_trace")] == [str(rtid)], "proj_trace TID: the range's starting thread")
summary_matches(db, err, "xthread")

# ---- manyexec: "rec" (1 us + 2 us kernels recorded), "loop" around 10000 executions, list destroyed:
# the aggregator releases each execute's snapshot once its 2 ops arrived and the append snapshots at
# the destroy, so almost nothing is held at the end (before the fix: 10000 execute snapshots + 2 + 2)
db, err = run("manyexec")
(nops, first, last), = q(db, "SELECT count(*), min(start), max(end) FROM ZE_OPS WHERE kind = 1")
check(nops == 20000, f"manyexec kernels {nops}")
live = q(db, "SELECT s.total FROM SUMMARY_STATS s JOIN STRING_IDS i ON i.id = s.nameId"
             " WHERE s.category = 6 AND s.tag = 10 AND i.value = 'live at finish'")
check(len(live) == 1 and live[0][0] <= 2, f"manyexec projection state held at finish {live} (want <= 2)")
mp = {r[0]: (r[3], r[4], r[6], r[12]) for r in report(db, "hgtx_gpu_proj_sum")}
span = str(last - first)  # one instance each, mapping every kernel: active = projected span
check(mp == {"loop": (span, span, "1", "20000"), "rec": (span, span, "1", "20000")}, f"manyexec proj_sum {mp}")
summary_matches(db, err, "manyexec")

# ---- relist: "run" around 3 executions of a list recorded in "rec1" (1 us), its reset, a recording in
# "rec2" (2 us), 2 executions, the destroy: the reset retires rec1's appends, nothing is held at the end
db, err = run("relist")
rk = q(db, "SELECT end - start FROM ZE_OPS WHERE kind = 1 ORDER BY start")
# (device-tick rounding: about 1 us and 2 us)
check([d < 1500 for d, in rk] == [True] * 3 + [False] * 2, f"relist kernels {rk}")
rp = {r[0]: (r[6], r[12]) for r in report(db, "hgtx_gpu_proj_sum")}
check(rp == {"rec1": ("1", "3"), "rec2": ("1", "2"), "run": ("1", "5")}, f"relist proj_sum {rp}")
live = q(db, "SELECT s.total FROM SUMMARY_STATS s JOIN STRING_IDS i ON i.id = s.nameId"
             " WHERE s.category = 6 AND s.tag = 10 AND i.value = 'live at finish'")
check(live == [(0,)], f"relist projection state held at finish {live}")
summary_matches(db, err, "relist")

# ---- one column-name convention: the spec's headers verbatim (its example header lines; 2.3.11 from
# its column list), PPU = the device; stated in every --help-report
SPEC_HDR = {
    "hgtx_kern_sum": "HGTX Range,Style,PID,TID,HGTX Inst,Kern Inst,Total Time (ns),Avg (ns),Med (ns),Min (ns),"
                     "Max (ns),StdDev (ns),Kernel Name",
    "hgtx_kern_trace": "Range Name,Style,PID,TID,Device ID,Context ID,Stream ID,HGTX Range ID,Kernel Exec ID,"
                       "Kernel Start (ns),Kernel Duration (ns),API Start (ns),API Duration (ns),GridXYZ,BlockXYZ,"
                       "Correlation ID,Graph ID,Graph Node ID,Kernel Name,Mangled Name",
    "hgtx_gpu_proj_sum": "Range,Style,In-Use (%),Proj Active Time (ns),Total Proj Time (ns),Total Range Time (ns),"
                         "Range Instances,Proj Avg (ns),Proj Med (ns),Proj Min (ns),Proj Max (ns),Proj StdDev (ns),"
                         "Total PPU Ops,Avg PPU Ops,Avg Range Lvl,Avg Num Child",
    "hgtx_gpu_proj_trace": "Name,Projected Start (ns),Projected Duration (ns),PPU Active Time (ns),Orig Start (ns),"
                           "Orig Duration (ns),Style,PID,TID,NumPPUOps,Lvl,NumChild,RangeId,ParentId,RangeStack",
    "gpu_trace": "Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,StcSMem (bytes),"
                 "DymSMem (bytes),Bytes (bytes),Throughput (B/s),SrcMemKd,DstMemKd,Device,Ctx,Strm,Name",
    "kern_gb_trace": "Start (ns),Duration (ns),PID,Device ID,Context ID,Stream ID,GridXYZ,BlockXYZ,Name",
}
for rep, hdr in SPEC_HDR.items():
    p = subprocess.run([PROF, "stats", "-r", rep, db], capture_output=True, text=True, timeout=60)
    got = next(csv.reader(io.StringIO(p.stdout)), [])
    got = got[1:-1] if got and got[-1] == "" else got[1:]
    check(got == hdr.split(","), f"{rep} header {got} != spec {hdr}")
    h = subprocess.run([PROF, "stats", "--help-report", rep], capture_output=True, text=True, timeout=60).stdout
    check("Column names are the spec's verbatim (PPU = the Level Zero device" in h, f"{rep} help states the convention")

print("proj tests:", "FAILED %d" % len(fails) if fails else "OK")
sys.exit(1 if fails else 0)
