#!/usr/bin/env python3
"""test_pcs.py - PC (EU-stall) sampling on simdev: the agent's collection (PROFAGENT_PC_SAMPLING=1),
its DB tables, reports and exit summary, the PTI API in the same process, the sample-count model,
dropped data, unsupported devices, two devices, fork/exit, bad periods. usage: test_pcs.py BUILD_DIR"""
import csv, io, os, re, sqlite3, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pa_itest import check, FAILS as fails  # noqa: E402

B = sys.argv[1]
PROF = os.path.join(B, "bin", "profagent")
SIMDEV = os.path.join(B, "lib", "libze_simdev.so")
AGENT = os.path.join(B, "lib", "libprofagent.so")
SPV = os.path.join(B, "share", "eustall_hot.spv")
MULTI = os.path.join(B, "tests", "pcs", "pcs_multi")


def run(argv, env_extra=None, preload=True, timeout=120, want_rc=0):
    d = tempfile.mkdtemp(prefix="pa_pcs_")
    db = os.path.join(d, "t.db")
    env = dict(os.environ, ZE_ENABLE_ALT_DRIVERS=SIMDEV, PROFAGENT_OUTPUT=db)
    if preload:
        env["LD_PRELOAD"] = AGENT
    env.update(env_extra or {})
    t0 = time.monotonic()
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    dt = time.monotonic() - t0
    check(p.returncode == want_rc, f"{argv} exit {p.returncode} (want {want_rc}): {p.stderr[-800:]}")
    return db, p.stdout, p.stderr, dt


def report(db, spec):
    p = subprocess.run([PROF, "stats", "-r", spec, db], capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, f"stats {spec}: {p.stderr}")
    rows = [r[:-1] if r and r[-1] == "" else r for r in csv.reader(io.StringIO(p.stdout))]
    return rows[0] if rows else [], rows[1:]


def q(db, sql):
    return sqlite3.connect(db).execute(sql).fetchall()


REASONS = ["Active", "ControlStall", "PipeStall", "SendStall", "DistStall", "SbidStall", "SyncStall",
           "InstrFetchStall", "OtherStall"]

# ---- dominant instruction: the API (pc_sampling sample) and the agent in one process ----
db, out, err, _ = run([os.path.join(B, "bin", "pc_sampling"), SPV, "eustall_hot"],
                      {"PROFAGENT_PC_SAMPLING": "1", "PROFAGENT_SUMMARY": "stderr"})
api_k = [l.split() for l in out.splitlines() if l.startswith("kernel ")]
api_i = [l.split() for l in out.splitlines() if l.startswith("instr ")]
check(len(api_k) == 1 and api_k[0][2] == "eustall_hot", f"API kernels: {api_k}")
hdr, ksum = report(db, "pc_sampling_sum")
check(hdr[:3] == ["Row#", "Samples (%)", "Samples"] and hdr[3:12] == REASONS and hdr[12:] == ["Dominant", "Device", "Kernel"],
      f"pc_sampling_sum columns: {hdr}")
check(len(ksum) == 1 and ksum[0][14] == "eustall_hot" and ksum[0][12] == "SendStall", f"pc_sampling_sum: {ksum}")
hdr, ins = report(db, "pc_sampling_instr")
check(hdr[:6] == ["Row#", "Kernel", "IP", "Source", "Samples", "Kernel Samples (%)"] and hdr[6:15] == REASONS,
      f"pc_sampling_instr columns: {hdr}")
if ksum and ins and api_k:
    total = int(ksum[0][2])
    # per-kernel totals = sum over its instructions, per reason too
    check(sum(int(r[4]) for r in ins) == total, "kernel total != sum over instructions")
    for j in range(9):
        check(sum(int(r[6 + j]) for r in ins) == int(ksum[0][3 + j]), f"reason {REASONS[j]}: sum over instructions")
    top = ins[0]
    share = int(top[4]) / total
    # simdev's model: the global load of line 9 takes ~55% of the samples, SendStall first
    check(top[3].endswith("eustall_hot.cl:9"), f"hottest instruction's source: {top[3]}")
    check(0.45 <= share <= 0.65, f"hottest instruction share {share:.3f} not in 0.45..0.65")
    check(max(range(9), key=lambda j: int(top[6 + j])) == REASONS.index("SendStall"), f"top instr reasons {top}")
    # the API's numbers equal the DB's (same run): kernel totals, per reason, per instruction
    k = api_k[0]
    check(int(k[6]) == total and [int(x) for x in k[10:19]] == [int(x) for x in ksum[0][3:12]],
          f"API kernel {k} != pc_sampling_sum {ksum[0]}")
    api_top = max(api_i, key=lambda r: sum(int(x) for x in r[4:]))
    check(api_top[2] == top[2] and api_top[3] == top[3], f"API hottest {api_top[2:4]} != report {top[2:4]}")
    db_instr = {int(o): int(s) for o, s in q(db, "SELECT offset, samples FROM PCS_INSTR")}
    api_instr = {int(r[2], 16): sum(int(x) for x in r[4:]) for r in api_i}
    check(db_instr == api_instr, f"per-instruction samples: DB {len(db_instr)} rows vs API {len(api_instr)}")
    # the exit summary shows the same top kernel and hottest instruction
    check(re.search(r"\b%d\b.*SendStall.*eustall_hot" % total, err) is not None, "summary lacks the top kernel row")
    check("eustall_hot.cl:9" in err, "summary lacks the hottest instruction's file:line")
    # options: kernel=, device=, rows=, mangled
    check(report(db, "pc_sampling_instr:rows=3")[1] == ins[:3], "rows=3")
    check(report(db, "pc_sampling_sum:kernel=^nomatch")[1] == [], "kernel=^nomatch keeps rows")
    check(report(db, "pc_sampling_sum:kernel=hot$")[1] == ksum, "kernel=hot$")
    check(report(db, "pc_sampling_sum:device=1")[1] == [], "device=1 keeps device 0 rows")
    check(report(db, "pc_sampling_sum:device=0:mangled")[1] == ksum, "device=0:mangled")
# source file/line per instruction in the DB
rows = q(db, "SELECT count(*), sum(line > 0) FROM PCS_INSTR")
# (a few instructions of the -g kernel carry no OpLine: line 0, Source '-')
check(rows[0][0] > 10 and rows[0][1] >= 0.75 * rows[0][0], f"PCS_INSTR lines: {rows}")
p = subprocess.run([PROF, "stats", "--help-report", "pc_sampling_instr"], capture_output=True, text=True)
check(p.returncode == 0 and "SendStall" in p.stdout and "kernel" in p.stdout, "help-report pc_sampling_instr")

# ---- the API under the agent without PROFAGENT_PC_SAMPLING: its samples land in the DB too ----
db, out, err, _ = run([os.path.join(B, "bin", "pc_sampling")], {"PROFAGENT_SUMMARY": "none"})
api_k = [l.split() for l in out.splitlines() if l.startswith("kernel ")]
rows = q(db, "SELECT samples FROM PCS_KERNELS k JOIN STRING_IDS s ON s.id = k.nameId WHERE s.value = 'busy_ns'")
check(len(api_k) == 1 and rows and int(api_k[0][6]) == rows[0][0] and 200 <= rows[0][0] <= 240,
      f"API-only collection under the agent: API {api_k} DB {rows}")

# ---- the sample-count model: busy_ns of D ns, one thread, period P -> N*D/P samples (+-1 per launch) ----
N, D = 10, 20000000
db, out, err, _ = run([os.path.join(B, "bin", "ze_busy"), "--count", str(N), "--ns", str(D)],
                      {"PROFAGENT_PC_SAMPLING": "1", "PROFAGENT_SUMMARY": "none"})
per = q(db, "SELECT periodNs FROM PCS_DEVICES WHERE deviceId = 0")
got = q(db, "SELECT samples FROM PCS_KERNELS k JOIN STRING_IDS s ON s.id = k.nameId WHERE s.value = 'busy_ns'")
if per and got:
    want = N * D / per[0][0]
    check(per[0][0] == 91364, f"granted period {per[0][0]} (simdev rounds 100000 to 91364)")
    check(abs(got[0][0] - want) <= N, f"busy_ns samples {got[0][0]} vs model {want:.1f} +- {N}")
    print(f"sample model: {got[0][0]} samples, expected {want:.1f} +- {N}")
else:
    check(False, f"no busy_ns samples: period {per} samples {got}")
# another period: 50000 -> granted 39156 (3 units of 13052)
db, out, err, _ = run([os.path.join(B, "bin", "ze_busy"), "--count", "5", "--ns", str(D)],
                      {"PROFAGENT_PC_SAMPLING": "1", "PROFAGENT_PC_SAMPLING_PERIOD_NS": "50000", "PROFAGENT_SUMMARY": "none"})
per = q(db, "SELECT periodNs FROM PCS_DEVICES WHERE deviceId = 0")
got = q(db, "SELECT sum(samples) FROM PCS_KERNELS")
check(per and per[0][0] == 39156, f"period 50000 granted {per}")
if per and got and got[0][0] is not None:
    check(abs(got[0][0] - 5 * D / per[0][0]) <= 5, f"period 50000: {got[0][0]} vs {5 * D / per[0][0]:.1f}")

# ---- dropped data: a tiny device buffer and a busy device -> reported, no crash, no hang ----
db, out, err, dt = run([os.path.join(B, "bin", "pc_sampling"), SPV, "eustall_hot", "20"],
                       {"PROFAGENT_PC_SAMPLING": "1", "SIMDEV_EUSTALL_BUFFER_KB": "16", "PROFAGENT_SUMMARY": "stderr"},
                       timeout=120)
dev = [l.split() for l in out.splitlines() if l.startswith("device ")]
check(dev and dev[0][-1] == "1", f"API _samples_dropped: {dev}")
rows = q(db, "SELECT droppedReads FROM PCS_DEVICES WHERE deviceId = 0")
check(rows and rows[0][0] > 0, f"PCS_DEVICES.droppedReads: {rows}")
check("reads with dropped data (WARNING" in err, "summary lacks the dropped-data warning")

# ---- unsupported: at once from the API; one warning per device from the agent, the rest profiled ----
db, out, err, dt = run([os.path.join(B, "bin", "pc_sampling")], {"SIMDEV_EUSTALL": "0"}, preload=False, want_rc=3)
check("PTI_ERROR_PC_SAMPLING_UNSUPPORTED" in err and dt < 5, f"API unsupported: {dt:.2f} s, {err[-200:]}")
db, out, err, dt = run([os.path.join(B, "bin", "ze_busy"), "--count", "3"], {"SIMDEV_EUSTALL": "0", "PROFAGENT_PC_SAMPLING": "1",
                                                                               "PROFAGENT_SUMMARY": "none"})
warn = [l for l in err.splitlines() if "offers no EU-stall sampling" in l]
check(len(warn) == 2 and all("device %d" % i in warn[i] for i in range(2)), f"unsupported warnings: {warn}")
check(q(db, "SELECT count(*) FROM ZE_OPS WHERE kind = 1") == [(3,)], "unsupported: kernels not profiled as usual")
check(q(db, "SELECT count(*) FROM PCS_DEVICES") == [(0,)], "unsupported: PCS_DEVICES rows")

# ---- two devices at once: agent and API ----
db, out, err, _ = run([MULTI, "two", "api"], {"PROFAGENT_PC_SAMPLING": "1", "PROFAGENT_SUMMARY": "none"})
s = dict(q(db, "SELECT deviceId, samples FROM PCS_DEVICES"))
check(len(s) == 2 and s.get(0, 0) > 0 and s.get(1, 0) > 0, f"two devices in the DB: {s}")
api = {int(l.split()[1]): int(l.split()[3]) for l in out.splitlines() if l.startswith("device ")}
check(api == s, f"two devices: API {api} != DB {s}")
check("profiled 2" in out, f"two devices: profiled {out}")
if s.get(0) and s.get(1):  # 10 ms vs 30 ms of busy_ns: 1 : 3
    check(2.5 <= s[1] / s[0] <= 3.5, f"device samples ratio {s[1] / s[0]:.2f}, want ~3")
db, out, err, _ = run([MULTI, "two", "api"], preload=False)
api = {int(l.split()[1]): int(l.split()[3]) for l in out.splitlines() if l.startswith("device ")}
check(len(api) == 2 and all(v > 0 for v in api.values()), f"two devices, API alone: {api}")

# ---- the application's environment: PC sampling leaves ZE_ENABLE_TRACING_LAYER as it was (for the
# process and its children) and still maps every sample to the kernel (ze source's hooks) ----
for tl, want in ((None, "unset"), ("0", "0"), ("1", "1")):
    extra = {"PROFAGENT_PC_SAMPLING": "1", "PROFAGENT_SUMMARY": "none"}
    if tl is not None:
        extra["ZE_ENABLE_TRACING_LAYER"] = tl
    db, out, err, _ = run([MULTI, "env"], extra)
    lines = [l for l in out.splitlines() if l.startswith(("env ", "child "))]
    check(lines == ["env " + want, "child " + want], f"ZE_ENABLE_TRACING_LAYER={tl}: app/child saw {lines}")
    rows = q(db, "SELECT s.value, k.samples FROM PCS_KERNELS k JOIN STRING_IDS s ON s.id = k.nameId WHERE k.samples > 0")
    tot = q(db, "SELECT sum(samples) FROM PCS_DEVICES")
    # busy_ns 10 ms at the granted 91364 ns: 109 samples (+-1), all of them in busy_ns
    check(len(rows) == 1 and rows[0][0] == "busy_ns" and 108 <= rows[0][1] <= 110 and tot == [(rows[0][1],)],
          f"ZE_ENABLE_TRACING_LAYER={tl}: kernels {rows}, device total {tot}")

# ---- an event pool destroyed without its events (as many applications do) while sampling: what its
# event signalled is collected at zeEventPoolDestroy, and no call uses its event afterwards (simdev
# validates handle lifetimes as a validation layer would, and says so on stderr) ----
db, out, err, _ = run([MULTI, "pooldestroy"], {"PROFAGENT_PC_SAMPLING": "1", "PROFAGENT_SUMMARY": "none"})
check("simdev: validation" not in err, f"pooldestroy: a destroyed pool's event was used: {err[-400:]}")
ops = q(db, "SELECT count(*), sum(end > start) FROM ZE_OPS WHERE kind = 1")
unc = q(db, "SELECT value FROM SESSION_COUNTERS WHERE name = 'ze_uncollected_ops'")
check(ops == [(2, 2)] and unc in ([], [(0,)]), f"pooldestroy: kernels {ops} (want 2 with times), uncollected {unc}")
# two busy_ns of 5 ms at the granted 91364 ns: 109.4 samples (+-1 per launch), all in busy_ns
smp = q(db, "SELECT sum(samples) FROM PCS_KERNELS")
check(smp and smp[0][0] is not None and 107 <= smp[0][0] <= 112, f"pooldestroy: samples {smp}")

# ---- the same with the work still running at the destroy (no host sync before it): zeEventPoolDestroy
# (pool A, its event not destroyed) and zeEventDestroy wait for what signals them (at most 100 ms) and
# collect it; nothing touches a destroyed event. simdev gives busy_ns exactly its argument as device time.
# Both interception paths. ----
for path in ("entry", "tracer"):
    db, out, err, _ = run([MULTI, "poolrunning"], {"PROFAGENT_PC_SAMPLING": "1", "PROFAGENT_SUMMARY": "none",
                                                   "PROFAGENT_ZE_INTERCEPT": path})
    val = [l for l in err.splitlines() if "simdev: validation" in l]
    check(val == [], f"poolrunning ({path}): {len(val)} uses of destroyed events: {val[:2]}")
    durs = [d for (d,) in q(db, "SELECT o.end - o.start FROM ZE_OPS o JOIN STRING_IDS s ON s.id = o.nameId"
                                " WHERE o.kind = 1 AND s.value = 'busy_ns' ORDER BY o.start")]
    unc = q(db, "SELECT value FROM SESSION_COUNTERS WHERE name = 'ze_uncollected_ops'")
    check(durs == [5000000, 7000000, 6000000, 8000000, 9000000], f"poolrunning ({path}): kernel device times {durs}")
    check(unc == [(0,)], f"poolrunning ({path}): uncollected {unc} (want 0)")
    check("still ran after" not in err, f"poolrunning ({path}): a loss reported: {err[-300:]}")
    # 35 ms of busy_ns at the granted 91364 ns: 383.1 samples (+-1 per launch)
    smp = q(db, "SELECT sum(samples) FROM PCS_KERNELS")
    check(smp and smp[0][0] is not None and 378 <= smp[0][0] <= 388, f"poolrunning ({path}): samples {smp}")
# a kernel running longer than the destroy waits (400 ms): counted uncollected and said once, never
# polled after the destroy; the next kernel (pool B) is collected as usual
for path in ("entry", "tracer"):
    db, out, err, _ = run([MULTI, "poollong"], {"PROFAGENT_SUMMARY": "none", "PROFAGENT_ZE_INTERCEPT": path})
    val = [l for l in err.splitlines() if "simdev: validation" in l]
    check(val == [], f"poollong ({path}): {len(val)} uses of destroyed events: {val[:2]}")
    durs = [d for (d,) in q(db, "SELECT end - start FROM ZE_OPS WHERE kind = 1 ORDER BY start")]
    unc = q(db, "SELECT value FROM SESSION_COUNTERS WHERE name = 'ze_uncollected_ops'")
    check(durs == [7000000] and unc == [(1,)], f"poollong ({path}): kernel times {durs} (want [7000000]),"
          f" uncollected {unc} (want 1)")
    said = [l for l in err.splitlines() if "still ran after 100 ms" in l]
    check(len(said) == 1 and "zeEventPoolDestroy while 1 device operation" in said[0],
          f"poollong ({path}): the loss said {said}")

# ---- the library dlclose()d while it collects (dlopen'd, not linked): the collection ends with it
# (streamers closed: a new copy collects on the same devices), nothing of it runs unmapped ----
DLOPEN = os.path.join(B, "tests", "pcs", "pti_dlopen")
PTI_LIB = os.path.join(B, "lib", "libprofagent_pti.so")
for pre in (False, True):
    db, out, err, _ = run([DLOPEN, "dlclose", PTI_LIB], {"ZET_ENABLE_METRICS": "1", "PROFAGENT_SUMMARY": "none"},
                          preload=pre)
    kv = dict(l.split(None, 1) for l in out.splitlines() if " " in l)
    # unmapped by its dlclose: its destructor ran and nothing pins it
    check(kv.get("mapped_after_dlclose") == "0", f"dlclose (agent {pre}): {out!r}")
    check(kv.get("second_start") == "0", f"dlclose (agent {pre}): second collection's start {kv.get('second_start')}"
          f" (want 0, PTI_SUCCESS): {err[-300:]}")
    # busy_ns 100 ms at the granted 91364 ns: 1094.5 samples (+-1)
    n = int(kv.get("second_samples", "-1"))
    check(1093 <= n <= 1096, f"dlclose (agent {pre}): second collection's samples {n}, want 1093..1096")
    if pre:
        # the library dlopen()ed after the agent started (its kernel created before): both
        # collections reach the agent's DB as with the library linked, every sample in busy_ns:
        # 20 ms + 100 ms at 91364 ns = 218.9 + 1094.5 samples (+-1 per collection)
        check("writer" not in err and "could not be written" not in err, f"dlclose (agent): DB errors {err[-400:]}")
        dev = q(db, "SELECT samples, unmapped FROM PCS_DEVICES WHERE deviceId = 0")
        ks = q(db, "SELECT s.value, k.samples FROM PCS_KERNELS k JOIN STRING_IDS s ON s.id = k.nameId")
        ins = q(db, "SELECT sum(samples) FROM PCS_INSTR")
        check(dev and 1311 <= dev[0][0] <= 1315 and dev[0][1] == 0,
              f"dlclose (agent): PCS_DEVICES device 0 {dev}, want 1311..1315 samples, 0 unmapped")
        check(dev and ks == [("busy_ns", dev[0][0])] and ins == [(dev[0][0],)],
              f"dlclose (agent): kernels {ks}, instructions {ins} vs device {dev}")
        # the second collection's own count, as the API returned it, is part of the DB's
        check(dev and 0 <= dev[0][0] - n <= 220, f"dlclose (agent): DB {dev} vs second collection's API {n}")

# ---- ptiPcSamplingEnable before the application's zeInit: Level Zero initialized for GPU drivers only,
# as PTI does; the application's own zeInit then answers as without PTI and its flags are its own ----
EARLY = os.path.join(B, "tests", "pcs", "pti_lifecycle")
# the application's flags -> its zeInit's answer without PTI (simdev is a GPU: VPU-only finds nothing)
for flags, want_init in (("1", "0x0"), ("0", "0x0"), ("2", "0x78000001")):
    for pre in (False, True):
        log = os.path.join(tempfile.mkdtemp(prefix="pa_pcs_init_"), "init.log")
        db, out, err, _ = run([EARLY, "early", flags], {"SIMDEV_INIT_LOG": log, "PROFAGENT_SUMMARY": "none"}, preload=pre)
        kv = dict(l.split(None, 1) for l in out.splitlines() if " " in l)
        inits = open(log).read().split("\n")[:-1] if os.path.exists(log) else []
        check(kv.get("enable") == "PTI_SUCCESS" and kv.get("init") == want_init,
              f"early enable, app flags {flags} (agent {pre}): {kv}")
        # the driver saw PTI's GPU-only zeInit first, then the application's own flags
        check(inits[:1] == ["zeInit 0x1"] and "zeInit 0x%x" % int(flags) in inits[1:],
              f"early enable, app flags {flags} (agent {pre}): driver's zeInit calls {inits}")
        if want_init == "0x0":
            check(kv.get("drivers") == "1" and kv.get("samples", "").split()[:1] in (["108"], ["109"], ["110"])
                  and kv.get("samples", "").endswith("kernels 1"),
                  f"early enable, app flags {flags} (agent {pre}): {kv}")

# ---- fork and exit paths ----
for i in range(5):
    db, out, err, dt = run([MULTI, "fork"], {"PROFAGENT_PC_SAMPLING": "1", "PROFAGENT_SUMMARY": "none"}, timeout=60)
    rows = q(db, "SELECT samples FROM PCS_KERNELS")
    # the parent's two 10 ms launches: ~2 * 109 samples; the child records nothing
    check(rows and 200 <= rows[0][0] <= 240, f"fork: parent samples {rows}")
for i in range(5):
    db, out, err, dt = run([MULTI, "exit-running"], {"PROFAGENT_PC_SAMPLING": "1", "PROFAGENT_SUMMARY": "stderr"},
                           timeout=60)
    check(dt < 20, f"exit with a kernel running took {dt:.1f} s")
    check(q(db, "SELECT count(*) FROM PCS_DEVICES") != [(0,)], "exit-running: no PCS_DEVICES")
    # the driver's engine thread starts the kernel as main exits: its first events come after the
    # exit path began (no new rings then). Late, like records after a ring's cut-off; not a loss
    # (no "NOT recorded" warning, no second message)
    cnt = dict(q(db, "SELECT name, value FROM SESSION_COUNTERS WHERE name IN ('unrecorded', 'late_no_ring', 'late_records')"))
    check(cnt.get("unrecorded") == 0 and "NOT recorded" not in err and "had no ring" not in err,
          f"exit-running: events after the exit began counted as losses: {cnt} {err[-300:]}")
    check(cnt.get("late_records", -1) >= cnt.get("late_no_ring", 0) >= 0, f"exit-running: late counts {cnt}")
# the API alone in a process that forks and exits with a kernel running
for sc in ("fork", "exit-running"):
    run([MULTI, sc], preload=False, timeout=60)

# ---- PROFAGENT_PC_SAMPLING_PERIOD_NS: one warning naming the variable and the range ----
for bad in ["0", "-5", "abc", "99999999999999999999", "2000000000"]:
    _, _, err, _ = run(["/bin/true"], {"PROFAGENT_PC_SAMPLING_PERIOD_NS": bad, "PROFAGENT_SUMMARY": "none"})
    lines = [l for l in err.splitlines() if "PROFAGENT_PC_SAMPLING_PERIOD_NS" in l]
    check(len(lines) == 1 and "1000..1000000000" in lines[0], f"period {bad!r}: {lines}")

print(f"{len(fails)} failures")
sys.exit(1 if fails else 0)
