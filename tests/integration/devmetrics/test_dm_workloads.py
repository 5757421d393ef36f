#!/usr/bin/env python3
"""test_dm_workloads.py - device utilization on workloads of known mix and bytes (samples/utilization:
an ALU-only kernel, a load/store kernel, a matrix (XMX) kernel, a copy train on the copy engine, one
HGTX range each). Achieved counts are computed here by hand from each kernel's device code (the
native binary the sample prints, simdev README "ISA model" / "Activity accounting"), peaks from the
device properties (README "Peaks"); the test prints the hand computation beside the report and
asserts they are equal: per range (the metric intervals overlapping the range's device ops, each
once), whole session, and the exit summary (the aggregator's online sums). Sysman engine activity
agrees with the stream's engine busy within a stated tolerance.
usage: test_dm_workloads.py BUILD_DIR"""
import csv, io, os, re, sqlite3, subprocess, sys, tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pa_itest import preload, check, FAILS as fails  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dmpack  # noqa: E402  (METRIC_CHUNKS decoded in Python into METRIC_INTERVALS / METRIC_SAMPLES)

B = sys.argv[1]
PROF = os.path.join(B, "bin", "profagent")
SIMDEV = os.path.join(B, "lib", "libze_simdev.so")
AGENT = os.path.join(B, "lib", "libprofagent.so")
APP = os.path.join(B, "bin", "utilization")
SPV = os.path.join(B, "share")


N_XVE, CLOCK_MHZ, TRIPS, SIMD = 256, 1600, 16, 8      # simdev README "Peaks", "ISA model"
MEM_BPS, PCIE_BPS = 1600e6 * 2 * 256 / 8, 31.5e9       # 102.4e9 B/s, PCIe 4.0 x16 per direction
SEND_CLASSES = (3, 4, 5, 6, 7, 8)                      # LOAD STORE SLM_LOAD SLM_STORE ATOMIC BARRIER


def stats(db, spec):
    p = subprocess.run([PROF, "stats", "-r", spec, db], capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, f"stats {spec}: rc {p.returncode} {p.stderr}")
    rows = [r[:-1] if r and r[-1] == "" else r for r in csv.reader(io.StringIO(p.stdout))]
    return {(r[1], r[2]): r for r in rows[1:]}


def q(db, sql, args=()):
    return dmpack.connect(db).execute(sql, args).fetchall()


d = tempfile.mkdtemp(prefix="pa_dmw_")
db = os.path.join(d, "w.db")
env = dict(os.environ, ZE_ENABLE_ALT_DRIVERS=SIMDEV, PROFAGENT_OUTPUT=db, LD_PRELOAD=preload(AGENT), ASAN_OPTIONS="detect_leaks=0",
           PROFAGENT_METRICS="ComputeBasic", PROFAGENT_SUMMARY="stderr")
p = subprocess.run([APP, SPV], env=env, capture_output=True, text=True, timeout=300)
check(p.returncode == 0 and "utilization: OK" in p.stdout, f"utilization rc {p.returncode}: {p.stderr[-1500:]}")
out, summary = p.stdout, p.stderr

# ---- the hand computation: per-work-item mix from the device code, x SIMD threads x runs ----
isa, kernels, copies = {}, {}, []
for line in out.splitlines():
    f = line.split()
    if f[0] == "isa":
        isa.setdefault(f[1], []).append(tuple(int(x) for x in f[3:6]))
    elif f[0] == "kernel":
        kernels[f[1]] = dict(name=f[2], items=int(f[4]), group=int(f[6]), runs=int(f[8]))
    elif f[0] == "copy":
        copies.append((f[1], f[2], int(f[3]), int(f[5])))


def hand_kernel(k):
    """pipes and bytes of all runs of kernel phase k: instruction executions = TRIPS^depth per item"""
    w = k["items"] // k["group"] * -(-k["group"] // SIMD)            # groups x ceil(group / 8)
    per = dict(alu0=0, alu1=0, xmx=0, send=0, control=0, rd=0, wr=0)
    for cls, depth, nbytes in isa[k["name"]]:
        e = TRIPS ** depth
        key = {0: "alu0", 1: "alu1", 2: "xmx", 9: "control"}.get(cls, "send" if cls in SEND_CLASSES else None)
        if key:
            per[key] += e
        if cls in (3, 7):
            per["rd"] += e * nbytes
        if cls in (4, 7):
            per["wr"] += e * nbytes
    r = k["runs"]
    return dict(ALU=(per["alu0"] + per["alu1"]) * w * r, XMX=per["xmx"] * w * r, SEND=per["send"] * w * r,
                CONTROL=per["control"] * w * r, ALU0=per["alu0"] * w * r, ALU1=per["alu1"] * w * r,
                L3R=per["rd"] * k["items"] * r, L3W=per["wr"] * k["items"] * r, W=w, per=per)


hand = {rng: hand_kernel(k) for rng, k in kernels.items()}
check(set(hand) == {"alu", "loadstore", "xmx"}, f"kernel phases: {list(hand)}")
for rng, h in hand.items():
    print(f"hand: {rng} ({kernels[rng]['name']}): per work item {h['per']}, W = {h['W']} SIMD threads,"
          f" runs {kernels[rng]['runs']} -> ALU0+ALU1 {h['ALU']} XMX {h['XMX']} SEND {h['SEND']} CONTROL {h['CONTROL']}")
# each workload is what it claims to be
a, ls, x = hand.get("alu"), hand.get("loadstore"), hand.get("xmx")
check(a and a["ALU"] > 0 and a["XMX"] == 0 and a["L3R"] == 0 and
      a["per"]["alu0"] + a["per"]["alu1"] > 4 * (a["per"]["send"] + a["per"]["control"]), f"alu_only is ALU work: {a}")
check(ls and ls["L3R"] > 0 and ls["L3W"] > 0 and ls["per"]["rd"] >= 16 * 64, f"loadstore moves bytes: {ls}")
check(x and x["XMX"] == kernels["xmx"]["runs"] * x["W"] * TRIPS, f"xmx_mad: one XMX per trip: {x}")

# ---- the projected device intervals of each range, counted once; peaks by hand over them ----
PAIR_ERR = q(db, "SELECT value FROM SESSION_COUNTERS WHERE name = 'ze_clock_pair_err_ns'")
check(PAIR_ERR and 0 < PAIR_ERR[0][0] < 5000000, f"ze_clock_pair_err_ns recorded: {PAIR_ERR}")
# overlap slack: two device ticks + the ze source's clock-pair error bound + the reader's 5 us
# (docs/utilization.md)
SL = 2000000000 // 19200000 + (PAIR_ERR[0][0] if PAIR_ERR else 0) + 5000
iv = q(db, "SELECT startNs, durationNs, v2 FROM METRIC_INTERVALS WHERE deviceId = 0 ORDER BY startNs")
names = [r[0] for r in q(db, "SELECT name FROM METRIC_NAMES WHERE deviceId = 0 ORDER BY metricId")]
check(names[1:3] == ["GpuTime", "GpuCoreClocks"], f"names {names[:3]}")
col = {n: i for i, n in enumerate(names)}
allv = q(db, "SELECT * FROM METRIC_INTERVALS WHERE deviceId = 0 ORDER BY startNs")


def range_ops(name):
    return q(db, "SELECT DISTINCT o.start, o.end, o.kind, o.engine >> 16 FROM HGTX_OP_ASSOC x JOIN HGTX_RANGES r"
                 " ON r.id = x.rangeId JOIN STRING_IDS s ON s.id = r.nameId JOIN ZE_OPS o ON o.rowid = x.opId"
                 " WHERE s.value = ? AND o.kind != 4 AND o.deviceId = 0", (name,))


def selected(ops):
    return [r for r in allv if any(s < r[1] + r[2] + SL and e + SL > r[1] for s, e, _, _ in ops)]


def msum(rows, metric):
    return sum(r[3 + col[metric]] for r in rows)


UNITS = (("Scalar Unit", "CONTROL", 1), ("Vector ALU", "ALU", 2), ("Vector Load/Store", "SEND", 1), ("MXU", "XMX", 1))
for rng, h in hand.items():
    ops = range_ops(rng)
    check(len(ops) == kernels[rng]["runs"], f"range {rng}: {len(ops)} device ops, want {kernels[rng]['runs']}")
    sel = selected(ops)
    clocks = msum(sel, "GpuCoreClocks")
    rep = stats(db, f"unit_util_sum:device=0:range=^{rng}$")
    for unit, key, rate in UNITS:
        row = rep.get(("0", unit))
        peak = int(rate * N_XVE * clocks)
        want_u = 100 * h[key] / peak if peak else 0
        print(f"hand: range {rng} {unit}: achieved {h[key]} / peak {rate} x {N_XVE} XVEs x {clocks} clocks"
              f" ({len(sel)} intervals) = {peak} -> {want_u:.3f} %; report: {row[4:] if row else None}")
        check(row and int(row[4]) == h[key] and int(row[5]) == peak and abs(float(row[7]) - want_u) < 0.0006,
              f"range {rng} {unit}: report {row} != hand {h[key]} / {peak}")
    dm = stats(db, f"dma_util_sum:device=0:range=^{rng}$")
    gt = msum(sel, "GpuTime")
    mpeak = int(MEM_BPS * gt / 1e9)
    rd = dm.get(("0", "HBM read (HBM->VMem)"))
    print(f"hand: range {rng} HBM read: {h['L3R']} B / (102.4e9 B/s x {gt} ns = {mpeak} B); report {rd[4:] if rd else None}")
    check(rd and int(rd[4]) == h["L3R"] and int(rd[5]) == mpeak, f"range {rng} HBM read {rd} != {h['L3R']} / {mpeak}")
    wr = dm.get(("0", "HBM write (VMem->HBM)"))
    check(wr and int(wr[4]) == h["L3W"], f"range {rng} HBM write {wr} != {h['L3W']}")
    if rng == "loadstore":  # memory-bound: its intervals' device memory bus is mostly busy
        check(rd and float(rd[6]) + float(wr[6]) > 50, f"loadstore HBM read + write Util % {rd} {wr}")

# the copy train: bytes by path, on the copy engine; PCIe peaks per direction
ops = range_ops("copies")
check(len(ops) == len(copies) and all(k == 2 and o == 1 for _, _, k, o in ops), f"copy ops {ops} vs {copies}")
sel = selected(ops)
gt = msum(sel, "GpuTime")
dm = stats(db, "dma_util_sum:device=0:range=^copies$")
by = {pth: sum(b for _, p2, b, _ in copies if p2 == pth) for pth in ("h2d", "d2h", "d2d")}
for path, key, bps in (("HIB->HBM (host to device)", "h2d", PCIE_BPS), ("HBM->HIB (device to host)", "d2h", PCIE_BPS),
                       ("HBM->HBM (device to device)", "d2d", MEM_BPS)):
    row = dm.get(("0", path))
    peak = int(bps * gt / 1e9)
    print(f"hand: copies {path}: {by[key]} B / ({bps:.4g} B/s x {gt} ns = {peak} B) -> {100 * by[key] / peak:.3f} %;"
          f" report {row[4:] if row else None}")
    check(row and int(row[4]) == by[key] and int(row[5]) == peak and abs(float(row[6]) - 100 * by[key] / peak) < 0.0006,
          f"copies {path}: {row} != {by[key]} / {peak}")
rd = dm.get(("0", "HBM read (HBM->VMem)"))
check(rd and int(rd[4]) == by["d2h"] + by["d2d"], f"copies read device memory: {rd} != {by['d2h'] + by['d2d']}")
cb = [r[3 + col["COMMAND_PARSER_COPY_ENGINE_BUSY"]] for r in sel]
kb = [r[3 + col["COMMAND_PARSER_COMPUTE_ENGINE_BUSY"]] for r in sel]
check(max(cb) > 0 and max(kb) == 0, f"copies ran on the copy engine: copy busy {max(cb)}, compute busy {max(kb)}")

# ---- whole session: the sums of the phases; the exit summary (online sums) equals them ----
tot = {k: sum(h[k] for h in hand.values()) for k in ("ALU", "XMX", "SEND", "CONTROL")}
rep = stats(db, "unit_util_sum:device=0")
clk_all = msum(allv, "GpuCoreClocks")
for unit, key, rate in UNITS:
    row = rep.get(("0", unit))
    check(row and int(row[4]) == tot[key] and int(row[5]) == int(rate * N_XVE * clk_all), f"session {unit}: {row} vs {tot[key]}")
    m = re.search(r"\n  " + re.escape(unit) + r"\s+(\d+) / (\d+)\s+instructions\s+([\d.]+) % \[[#:.]{20}\]", summary)
    print(f"hand: session {unit} {tot[key]} / {int(rate * N_XVE * clk_all)}; summary {m.groups() if m else None}")
    check(m and int(m.group(1)) == tot[key] and int(m.group(2)) == int(rate * N_XVE * clk_all),
          f"summary {unit} line: {m and m.groups()} vs {tot[key]}")
m = re.search(r"\n  HIB->HBM \(host to device\)\s+(\d+) / (\d+)\s+bytes", summary)
h2d_peak = PCIE_BPS * msum(allv, "GpuTime") / 1e9
check(m and int(m.group(1)) == by["h2d"] and abs(int(m.group(2)) - h2d_peak) <= 1,
      f"summary H2D line: {m and m.groups()} vs {by['h2d']} / {h2d_peak}")
# busiest ranges: every kernel range is listed with the utilization unit_util_sum:range= gives,
# sorted by its busiest unit, which the line names
sec = summary[summary.find("Busiest HGTX ranges"):]
order = []
for rng in ("alu", "loadstore", "xmx"):
    m = re.search(r"\n  " + rng + r"\s+0\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)  (Scalar Unit|Vector ALU|Vector Load/Store|MXU) \[", sec)
    check(m, f"busiest ranges: no line for {rng}: {sec[:800]}")
    if m:
        rep = stats(db, f"unit_util_sum:device=0:range=^{rng}$")
        for i, (un, _, _) in enumerate(UNITS):
            check(abs(float(m.group(2 + i)) - float(rep[("0", un)][7])) < 0.0011, f"busiest {rng} {un}: {m.groups()}")
        u = [float(m.group(2 + i)) for i in range(4)]
        check(m.group(6) == UNITS[u.index(max(u))][0], f"busiest unit of {rng}: {m.group(6)} of {u}")
        order.append((sec.find("\n  " + rng + " "), max(u)))
check([b for _, b in sorted(order)] == sorted((b for _, b in order), reverse=True), f"busiest order: {order}")
print(sec[:700])

# ---- sysman engine activity vs the stream's engine busy, same run ----
# both read simdev's one activity timeline; the sysman window [first, last reading] is not aligned
# to the intervals: an interval cut by an edge is weighted by its overlap (its busy spread evenly),
# so the difference is bounded by the busy inside the two edge intervals (<= 2 periods) plus the
# microsecond rounding of activeTime/timestamp (2 us). Tolerance: 2 x 53333 ns + 2000 ns.
sm = q(db, "SELECT engineTimestampUs, computeActiveUs, copyActiveUs, memReadBytes, memWriteBytes, pciRxBytes, pciTxBytes"
           " FROM METRIC_SYSMAN WHERE deviceId = 0 ORDER BY hostNs")
check(len(sm) >= 2, f"sysman readings: {sm}")
if len(sm) >= 2:
    t0, t1 = sm[0][0] * 1000, sm[-1][0] * 1000
    TOL = 2 * 53333 + 2000
    for k, metric in ((1, "COMMAND_PARSER_COMPUTE_ENGINE_BUSY"), (2, "COMMAND_PARSER_COPY_ENGINE_BUSY")):
        sys_busy = (sm[-1][k] - sm[0][k]) * 1000
        st_busy = 0.0
        for r in allv:
            s, du = r[1], r[2]
            ov = min(s + du, t1) - max(s, t0)
            if ov > 0:
                st_busy += r[3 + col[metric]] / 100 * du * ov / du
        print(f"sysman vs stream: {metric}: sysman {sys_busy} ns busy over [{t0}, {t1}], stream {st_busy:.0f} ns,"
              f" difference {abs(sys_busy - st_busy):.0f} ns (tolerance {TOL} ns)")
        check(sys_busy > 0 and abs(sys_busy - st_busy) <= TOL, f"{metric}: sysman {sys_busy} vs stream {st_busy}")
    # memory and PCIe counters of sysman move by the bytes of the run
    check(sm[-1][5] - sm[0][5] == by["h2d"] and sm[-1][6] - sm[0][6] == by["d2h"],
          f"sysman PCI rx/tx {sm[-1][5] - sm[0][5]}/{sm[-1][6] - sm[0][6]} vs copies {by}")
    gm = sum(h["L3R"] for h in hand.values()) + by["d2h"] + by["d2d"]
    check(sm[-1][3] - sm[0][3] == gm, f"sysman memory read {sm[-1][3] - sm[0][3]} vs {gm}")

print("FAILED" if fails else "OK", len(fails))
sys.exit(1 if fails else 0)
