#!/usr/bin/env python3
"""test_devmetrics.py - device metric streams on simdev: PROFAGENT_METRICS=ComputeBasic collects one
interval series per device into METRIC_SAMPLES; ppu_metric_trace columns/order/sort/filters; the
intervals tile each device's stream; the achieved counts of samples/gemm equal the hand computation
from simdev's ISA model; bad configuration gives one warning and the app runs unchanged.
usage: test_devmetrics.py BUILD_DIR"""
import csv, io, os, re, sqlite3, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dmpack  # noqa: E402  (METRIC_CHUNKS decoded in Python into METRIC_INTERVALS / METRIC_SAMPLES)

B = sys.argv[1]
PROF = os.path.join(B, "bin", "profagent")
SIMDEV = os.path.join(B, "lib", "libze_simdev.so")
AGENT = os.path.join(B, "lib", "libprofagent.so")
GEMM = os.path.join(B, "bin", "gemm")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pa_itest import FAILS as fails, check, preload  # noqa: E402


def run(argv, env_extra=None, want_rc=0):
    d = tempfile.mkdtemp(prefix="pa_dm_")
    db = os.path.join(d, "t.db")
    env = dict(os.environ, ZE_ENABLE_ALT_DRIVERS=SIMDEV, PROFAGENT_OUTPUT=db, LD_PRELOAD=preload(AGENT), ASAN_OPTIONS="detect_leaks=0",
               PROFAGENT_SUMMARY="none")
    env.update(env_extra or {})
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    check(p.returncode == want_rc, f"{argv} {env_extra} exit {p.returncode} (want {want_rc}): {p.stderr[-800:]}")
    return db, p.stdout, p.stderr


def stats(db, spec, want_rc=0):
    p = subprocess.run([PROF, "stats", "-r", spec, db], capture_output=True, text=True, timeout=60)
    check(p.returncode == want_rc, f"stats {spec}: rc {p.returncode} {p.stderr}")
    rows = [r[:-1] if r and r[-1] == "" else r for r in csv.reader(io.StringIO(p.stdout))]
    return (rows[0] if rows else []), rows[1:], p.stderr


def q(db, sql):
    return dmpack.connect(db).execute(sql).fetchall()


# ---- collection on the gemm sample (2 devices, kernels on device 0) ----
db, out, err = run([GEMM], {"PROFAGENT_METRICS": "ComputeBasic"})
check("gemm: 10 iterations" in out, f"gemm output: {out}")
check("metrics" not in err or "WARN" not in err, f"unexpected metrics warning: {err}")
devs = q(db, "SELECT deviceId, groupName, state, periodNs, intervals FROM METRIC_DEVICES ORDER BY 1")
check([d[:4] for d in devs] == [(0, "ComputeBasic", 1, 53333), (1, "ComputeBasic", 1, 53333)],
      f"METRIC_DEVICES: {devs}")  # 100 us -> 1024 ticks at 19.2 MHz = 53333 ns
check(all(d[4] > 10 for d in devs), f"intervals per device: {devs}")
names = [r[0] for r in q(db, "SELECT name FROM METRIC_NAMES WHERE deviceId = 0 ORDER BY metricId")]
check(len(names) == 26 and names[:3] == ["QueryBeginTime", "GpuTime", "GpuCoreClocks"], f"metric names: {names}")
nsamp = q(db, "SELECT count(*) FROM METRIC_SAMPLES")[0][0]
nint = q(db, "SELECT count(*) FROM METRIC_INTERVALS")[0][0]
check(nint == sum(d[4] for d in devs), f"METRIC_INTERVALS rows {nint} != intervals {devs}")
check(nsamp == 26 * sum(d[4] for d in devs), f"rows {nsamp} != 26 x intervals {devs}")

# tiling: per device, each interval begins where the previous ended (no gaps, no overlaps)
for dev in (0, 1):
    iv = q(db, f"SELECT startNs, durationNs FROM METRIC_SAMPLES WHERE deviceId = {dev} AND metricId = 1 ORDER BY startNs")
    bad = [(a, b) for a, b in zip(iv, iv[1:]) if a[0] + a[1] != b[0]]
    check(len(iv) > 10 and not bad, f"device {dev}: {len(bad)} gaps/overlaps of {len(iv)}: {bad[:3]}")
    check(all(d == 53333 for _, d in iv), f"device {dev}: durations {set(d for _, d in iv)}")
    # every metric of an interval shares its start and duration
    n = q(db, f"SELECT count(*) FROM (SELECT startNs, count(*) c, count(DISTINCT durationNs) u FROM METRIC_SAMPLES"
              f" WHERE deviceId = {dev} GROUP BY startNs HAVING c != 26 OR u != 1)")[0][0]
    check(n == 0, f"device {dev}: {n} intervals without 26 metrics of one duration")

# the session's kernels lie inside device 0's stream
k = q(db, "SELECT min(start), max(end) FROM ZE_OPS WHERE kind = 1 AND deviceId = 0")[0]
s = q(db, "SELECT min(startNs), max(startNs + durationNs) FROM METRIC_SAMPLES WHERE deviceId = 0")[0]
check(s[0] <= k[0] and k[1] <= s[1], f"kernels {k} outside the stream {s}")

# achieved counts = hand computation (simdev README "ISA model", "Activity accounting"):
# gemm_f32 64x64, K = 67, group 8x8 -> 64 groups x ceil(64/8) = 512 SIMD threads, 4096 items, 10 runs.
# per work item: ALU0 2 + 4K, SEND (2 loads per trip + 1 store) 2K + 1, CONTROL K + 1, no ALU1/XMX;
# L3 read 2K x 4 B, write 4 B; copies: A 64x67 and B 67x64 floats in (H2D), C 64x64 out (D2H).
K, W, ITEMS, RUNS = 67, 512, 4096, 10
want = {
    "XVE_INST_EXECUTED_ALU0_ALL": (2 + 4 * K) * W * RUNS,
    "XVE_INST_EXECUTED_ALU1_ALL": 0,
    "XVE_INST_EXECUTED_XMX_ALL": 0,
    "XVE_INST_EXECUTED_SEND_ALL": (2 * K + 1) * W * RUNS,
    "XVE_INST_EXECUTED_CONTROL_ALL": (K + 1) * W * RUNS,
    "L3_BYTE_READ": 2 * K * 4 * ITEMS * RUNS,
    "L3_BYTE_WRITE": 4 * ITEMS * RUNS,
    "COPY_BYTE_H2D": 2 * 64 * 67 * 4 * RUNS,
    "COPY_BYTE_D2H": 64 * 64 * 4 * RUNS,
}
got = dict(q(db, "SELECT n.name, sum(s.value) FROM METRIC_SAMPLES s JOIN METRIC_NAMES n USING (deviceId, metricId)"
                 " WHERE s.deviceId = 0 GROUP BY n.name"))
for name, v in want.items():
    check(got.get(name) == v, f"{name}: stream sum {got.get(name)} != hand {v}")
    print(f"hand: {name} = {v}, report sum = {got.get(name)}")
dev1 = q(db, "SELECT sum(s.value) FROM METRIC_SAMPLES s JOIN METRIC_NAMES n USING (deviceId, metricId)"
             " WHERE s.deviceId = 1 AND n.name LIKE 'XVE_INST%'")[0][0]
check(dev1 == 0, f"device 1 ran no kernel, instructions {dev1}")

# ---- ppu_metric_trace: columns, order, sort, filters ----
hdr, rows, _ = stats(db, "ppu_metric_trace")
check(hdr == ["Row#", "Device ID", "Start (ns)", "Duration (ns)", "Name", "Value", "Unit"], f"columns: {hdr}")
check(len(rows) == nsamp, f"trace rows {len(rows)} != {nsamp}")
starts = [int(r[2]) for r in rows]
check(starts == sorted(starts), "rows not sorted by start ascending")
check([r[0] for r in rows[:3]] == ["1", "2", "3"], f"Row#: {rows[:3]}")
check(rows[0][4] == "QueryBeginTime" and rows[1][4] == "GpuTime" and rows[1][6] == "ns", f"first rows: {rows[:2]}")
hdr2, rows2, _ = stats(db, "metric_trace:device=1:metrics=^XVE_INST_EXECUTED_(ALU0|XMX)")
check(rows2 and all(r[1] == "1" and r[4] in ("XVE_INST_EXECUTED_ALU0_ALL", "XVE_INST_EXECUTED_XMX_ALL") for r in rows2)
      and len(rows2) == 2 * devs[1][4], f"filtered trace: {len(rows2)} rows, {rows2[:2]}")
_, _, e = stats(db, "ppu_metric_trace:metrics=(unclosed", want_rc=2)
check("metrics" in e and "regular expression" in e, f"bad regex message: {e}")
p = subprocess.run([PROF, "stats", "--help-report", "ppu_metric_trace"], capture_output=True, text=True)
check(p.returncode == 0 and "metrics=" in p.stdout and "Duration (ns)" in p.stdout, f"--help-report: {p.stdout} {p.stderr}")

# ---- unit_util_sum / dma_util_sum: achieved = hand, peak and Util % by hand ----
N_EU, MEM_BPS = 2 * 8 * 16, 1600e6 * 2 * 256 / 8   # simdev README "Peaks": 256 XVEs, 102.4e9 B/s
iv0 = q(db, "SELECT s.startNs, s.durationNs, s.value FROM METRIC_SAMPLES s JOIN METRIC_NAMES n USING (deviceId, metricId)"
            " WHERE s.deviceId = 0 AND n.name = 'GpuCoreClocks' ORDER BY 1")


def util_rows(spec):
    hdr, rows, _ = stats(db, spec)
    return hdr, {(r[1], r[2]): r for r in rows}


def check_units(spec, keep, label):
    """keep(start, dur) -> interval selected; peaks from the selected intervals' clocks, by hand"""
    clocks = sum(c for a, d, c in iv0 if keep(a, d))
    hdr, r = util_rows(spec)
    check(hdr == ["Row#", "Device ID", "Unit", "Counter", "Achieved", "Peak", "Count Unit", "Util (%)"], f"unit cols {hdr}")
    for unit, ach, rate in (("Scalar Unit", want["XVE_INST_EXECUTED_CONTROL_ALL"], 1),
                            ("Vector ALU", want["XVE_INST_EXECUTED_ALU0_ALL"], 2),
                            ("Vector Load/Store", want["XVE_INST_EXECUTED_SEND_ALL"], 1),
                            ("MXU", 0, 1)):
        row = r.get(("0", unit))
        peak = int(rate * N_EU * clocks)
        ok = row and int(row[4]) == ach and int(row[5]) == peak and abs(float(row[7]) - 100 * ach / peak) < 0.0006
        check(ok, f"{label} {unit}: {row} want achieved {ach} peak {peak} util {100 * ach / peak:.4f}")
        print(f"hand ({label}): {unit} achieved {ach} / peak {rate}x{N_EU}x{int(clocks)} = {peak} -> "
              f"{100 * ach / peak:.3f} %; report {row[4:] if row else None}")
    for unit in ("XU", "RPU"):
        row = r.get(("0", unit))
        check(row and row[3] == "-" and row[4] == "-" and "no Intel counterpart" in row[6], f"{unit}: {row}")


check_units("unit_util_sum", lambda a, d: True, "session")
kern = q(db, "SELECT start, end FROM ZE_OPS WHERE kind = 1 AND deviceId = 0")
PAIR_ERR = q(db, "SELECT value FROM SESSION_COUNTERS WHERE name = 'ze_clock_pair_err_ns'")
check(PAIR_ERR and 0 < PAIR_ERR[0][0] < 5000000, f"ze_clock_pair_err_ns recorded: {PAIR_ERR}")
# overlap slack: two device ticks + the ze source's clock-pair error bound + the reader's 5 us
# (docs/utilization.md)
SL = 2000000000 // 19200000 + (PAIR_ERR[0][0] if PAIR_ERR else 0) + 5000
check_units("unit_util_sum:kernel=^gemm_f32$", lambda a, d: any(s < a + d + SL and e + SL > a for s, e in kern), "kernel")
# a range's projected device intervals: its ops (HGTX_OP_ASSOC), barriers aside; overlap counted once
rops = q(db, "SELECT DISTINCT o.start, o.end FROM HGTX_OP_ASSOC x JOIN HGTX_RANGES r ON r.id = x.rangeId JOIN STRING_IDS"
             " s ON s.id = r.nameId JOIN ZE_OPS o ON o.rowid = x.opId WHERE s.value = 'iteration' AND o.kind != 4"
             " AND o.deviceId = 0")
check(len(rops) >= 10, f"ops of range 'iteration': {len(rops)}")
check_units("unit_util_sum:range=^iteration$", lambda a, d: any(s < a + d + SL and e + SL > a for s, e in rops), "range")
gtime = sum(d for a, d, c in iv0)
hdr, r = util_rows("dma_util_sum:device=0")
check(hdr == ["Row#", "Device ID", "Path", "Counter", "Bytes", "Peak Bytes", "Util (%)"], f"dma cols {hdr}")
h2d = r.get(("0", "HIB->HBM (host to device)"))
PCIE_BPS = 31.5e9  # simdev README "Peaks": zesDevicePciGetProperties maxSpeed.maxBandwidth
pk = q(db, "SELECT xveCount, threadsPerXve, coreClockMHz, memPeakBps, pciePeakBps FROM METRIC_DEVICES ORDER BY deviceId")
check(pk == [(256, 8, 1600, 102400000000, 31500000000)] * 2, f"METRIC_DEVICES peaks: {pk}")
h2d_peak = int(PCIE_BPS * gtime / 1e9)
check(h2d and int(h2d[4]) == want["COPY_BYTE_H2D"] and int(h2d[5]) == h2d_peak and
      abs(float(h2d[6]) - 100 * want["COPY_BYTE_H2D"] / h2d_peak) < 0.0006, f"H2D: {h2d} want peak {h2d_peak}")
print(f"hand: H2D {want['COPY_BYTE_H2D']} B / (31.5e9 B/s x {gtime} ns = {h2d_peak} B); report {h2d[4:] if h2d else None}")
peer = r.get(("0", "ICI (peer device)"))
check(peer and peer[5] == "-" and peer[6] == "-", f"peer path has no peak: {peer}")
rd = r.get(("0", "HBM read (HBM->VMem)"))
gm_read = want["L3_BYTE_READ"] + want["COPY_BYTE_D2H"]  # kernels' loads + the copies out read device memory
peak = int(MEM_BPS * gtime / 1e9)
check(rd and int(rd[4]) == gm_read and int(rd[5]) == peak and abs(float(rd[6]) - 100 * gm_read / peak) < 0.0006,
      f"HBM read: {rd} want {gm_read} / {peak}")
print(f"hand: HBM read {gm_read} B / (102.4e9 B/s x {gtime} ns = {peak} B) = {100 * gm_read / peak:.3f} %")

# ---- exit summary: the utilization section per device, one line per unit and path ----
_, _, es = run([GEMM], {"PROFAGENT_METRICS": "ComputeBasic", "PROFAGENT_SUMMARY": "stderr"})
sec = es[es.find("== Device utilization (achieved / peak"):]
m = re.search(r"device 0: ComputeBasic, (\d+) intervals of 53333 ns .*, 256 XVEs, 1600 MHz, (\d+) GpuCoreClocks", sec)
check(m, f"summary device line: {sec[:600]}")
if m:
    clk = int(m.group(2))
    va = re.search(r"\n  Vector ALU\s+1382400 / (\d+)\s+instructions\s+([\d.]+) % \[[#:.]{20}\]", sec)
    check(va and int(va.group(1)) == 2 * 256 * clk and abs(float(va.group(2)) - 100 * 1382400 / (2 * 256 * clk)) < 0.0006,
          f"summary Vector ALU line vs 2 x 256 x {clk}: {sec[:900]}")
    h2 = re.search(r"\n  HIB->HBM \(host to device\)\s+343040 / (\d+)\s+bytes", sec)
    check(h2 and int(h2.group(1)) > 0, f"summary H2D line with a PCIe peak: {sec[:1500]}")
check("  XU                           n/a (no Intel counterpart)" in sec and "ICI (peer device)" in sec, f"summary: {sec[:1500]}")
check(re.search(r"Busiest HGTX ranges by compute utilization.*\n.*Range.*\n  (gemm_loop|iteration)\s+0\s+\d+", sec),
      f"busiest ranges: {sec[-800:]}")

# ---- bad configuration: one warning each, the app's output and exit status unchanged ----
base_out = subprocess.run([GEMM], env=dict(os.environ, ZE_ENABLE_ALT_DRIVERS=SIMDEV), capture_output=True,
                          text=True).stdout
cases = [
    ({"PROFAGENT_METRICS": "NoSuchGroup"}, r"PROFAGENT_METRICS=NoSuchGroup.*groups that exist: .*ComputeBasic"),
    ({"PROFAGENT_METRICS": "ComputeBasic", "SIMDEV_COMPUTE_BASIC": "0"},
     r"PROFAGENT_METRICS=ComputeBasic.*groups that exist: device 0: EuStallSampling"),
    ({"PROFAGENT_METRICS": "ComputeBasic", "PROFAGENT_METRICS_PERIOD_US": "0"}, r"PROFAGENT_METRICS_PERIOD_US.*10\.\.1000000"),
    ({"PROFAGENT_METRICS": "ComputeBasic", "PROFAGENT_METRICS_PERIOD_US": "fast"}, r"PROFAGENT_METRICS_PERIOD_US.*10\.\.1000000"),
    ({"PROFAGENT_METRICS": "ComputeBasic", "PROFAGENT_METRICS_PERIOD_US": "99999999999"}, r"PROFAGENT_METRICS_PERIOD_US.*10\.\.1000000"),
    ({"PROFAGENT_METRICS": "ComputeBasic", "ZET_ENABLE_METRICS": "0"}, r"ZET_ENABLE_METRICS=0"),
]
for env, pat in cases:
    db2, o2, e2 = run([GEMM], env)
    warns = [l for l in e2.splitlines() if re.search(pat, l)]
    check(len(warns) == 1, f"{env}: want one warning /{pat}/, stderr: {e2[-1200:]}")
    check(o2 == base_out, f"{env}: app output changed: {o2!r} vs {base_out!r}")
    check(os.path.exists(db2), f"{env}: no DB")
# a period that is valid: the default is used after a bad one; a valid one is applied
db3, _, _ = run([GEMM], {"PROFAGENT_METRICS": "ComputeBasic", "PROFAGENT_METRICS_PERIOD_US": "1000"})
check(q(db3, "SELECT DISTINCT periodNs FROM METRIC_DEVICES") == [(853333,)], "1000 us -> 853333 ns")
# metrics together with PC sampling (different domains): both streams
db4, _, e4 = run([GEMM], {"PROFAGENT_METRICS": "ComputeBasic", "PROFAGENT_PC_SAMPLING": "1"})
check(q(db4, "SELECT count(*) FROM METRIC_DEVICES WHERE state = 1")[0][0] == 2 and
      q(db4, "SELECT count(*) FROM PCS_DEVICES WHERE state = 1")[0][0] == 2, f"both streams: {e4[-600:]}")

# merge carries the metric tables (fixed layout) and the view: the merged DB has every interval
mdb = os.path.join(tempfile.mkdtemp(prefix="pa_dm_m_"), "m.db")
p = subprocess.run([PROF, "merge", "-o", mdb, db, db3], capture_output=True, text=True, timeout=120)
check(p.returncode == 0, f"merge: {p.returncode} {p.stderr[-600:]}")
if p.returncode == 0:
    n_in = q(db, "SELECT count(*) FROM METRIC_SAMPLES")[0][0] + q(db3, "SELECT count(*) FROM METRIC_SAMPLES")[0][0]
    check(q(mdb, "SELECT count(*) FROM METRIC_SAMPLES")[0][0] == n_in and
          q(mdb, "SELECT count(DISTINCT deviceId) FROM METRIC_DEVICES")[0][0] == 4, f"merged metric samples != {n_in}")

# bytes per metric sample in the DB (figure, not an assert)
sz = os.path.getsize(db)
print(f"figure: DB {sz} B, {nsamp} metric samples, whole DB / samples = {sz / nsamp:.1f} B")

print("FAILED" if fails else "OK", len(fails))
sys.exit(1 if fails else 0)
