#!/usr/bin/env python3
"""test_ze_harvest_stress.py - the agent's harvest lists (captures of re-executed regular lists)
under load: samples/multithread and ze_harvest_stress (lists destroyed while their harvest list
may still be queued), run 30+ times in turn. A harvest list used to be destroyed after its capture
events fired but before its device-side event resets ran (crash in the engine thread about once
in 30 runs). Every run must exit 0 with every kernel a row: hand-computed counts, nothing
uncollected. usage: test_ze_harvest_stress.py BUILD_DIR [LD_PRELOAD prefix, e.g. libasan]"""
import os, sqlite3, subprocess, sys, tempfile, time

B = sys.argv[1]
PRE = sys.argv[2] + ":" if len(sys.argv) > 2 else ""
AGENT = os.path.join(B, "lib", "libprofagent.so")
# (argv, kernel rows): multithread T ITER N = T*ITER saxpy rows; stress T K E R = T*K*E busy rows
# third: device barriers (each execution of a stress list ends with a barrier signalling the
# application's event, T*E of them), or None where the program's ops must all be collected
PROGS = [([os.path.join(B, "bin", "multithread"), "4", "30", "256"], 4 * 30, None),
         ([os.path.join(B, "tests", "ze", "ze_harvest_stress"), "4", "4", "20", "3"], 4 * 4 * 20, 4 * 20)]
MIN_RUNS, MAX_RUNS, BUDGET_S = 30, 60, 20.0
fails = []
tmp = tempfile.mkdtemp(prefix="pa_harvest_")
t0, n = time.monotonic(), 0
while n < MIN_RUNS or (n < MAX_RUNS and time.monotonic() - t0 < BUDGET_S):
    argv, want, barriers = PROGS[n % len(PROGS)]
    db = os.path.join(tmp, f"r{n}.db")
    env = dict(os.environ, ZE_ENABLE_ALT_DRIVERS=os.path.join(B, "lib", "libze_simdev.so"),
               LD_PRELOAD=PRE + AGENT, PROFAGENT_OUTPUT=db, PROFAGENT_SUMMARY="none")
    try:
        p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        fails.append(f"run {n} {argv[0]}: hung")
        break
    name = f"run {n} {os.path.basename(argv[0])}"
    if p.returncode != 0:
        fails.append(f"{name}: exit {p.returncode}: {p.stderr[-600:]}")
    else:
        c = sqlite3.connect(db)
        # per queue (one in-order engine each): distinct starts; engines run side by side and may
        # start two kernels in the same 52 ns tick
        rows = c.execute("SELECT count(*), (SELECT count(*) FROM (SELECT DISTINCT queueId, deviceId, start "
                         "FROM ZE_OPS WHERE kind = 1)) FROM ZE_OPS WHERE kind = 1").fetchone()
        unc = c.execute("SELECT value FROM SESSION_COUNTERS WHERE name = 'ze_uncollected_ops'").fetchone()
        nbar = c.execute("SELECT count(*) FROM ZE_OPS WHERE kind = 4").fetchone()[0]
        c.close()
        unc = unc[0] if unc else 0
        # the barrier signals the application's event, which the application host-resets as soon
        # as it sees it: the agent gives the barrier its own event and signals the application's
        # from a barrier after it, so every barrier's timestamps are kept (before: a reset could
        # precede the device-side copy in a re-executed list and the barrier was uncollected)
        if rows[0] != want or unc != 0 or (barriers is not None and nbar != barriers):
            fails.append(f"{name}: {rows[0]} kernel rows (want {want}), {nbar} barriers (want {barriers}),"
                         f" {unc} uncollected (want 0)")
        if rows[1] != rows[0]:
            fails.append(f"{name}: {rows[0]} rows but {rows[1]} distinct (queue, start) (duplicated timestamps)")
    os.path.exists(db) and os.unlink(db)
    n += 1
    if len(fails) > 5:
        break
for f in fails:
    print("FAIL:", f)
print(f"{n} runs in {time.monotonic() - t0:.1f} s, {len(fails)} failures")
sys.exit(1 if fails else 0)
