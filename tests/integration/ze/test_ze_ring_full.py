#!/usr/bin/env python3
"""test_ze_ring_full.py - PROFAGENT_RING_FULL: a burst of Level Zero calls into a 4 KiB ring (64
slots). wait (the default): every call a row, no drop, the waits counted in SESSION_COUNTERS and
told in the summary with the DB's numbers; drop: the calls that found the ring full are dropped
and counted, nothing waits, no such line; a bad value: one message, the default used.
usage: test_ze_ring_full.py BUILD_DIR"""
import os, re, sqlite3, subprocess, sys, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pa_itest import FAILS as fails, agent_env, check, on_one_cpu  # noqa: E402

B = sys.argv[1]
BENCH = os.path.join(B, "bin", "bench_ze_calls")
CALLS = 50000


def run(mode):
    """bench_ze_calls CALLS under the agent with PROFAGENT_RING_FULL=mode (None: unset)."""
    db = os.path.join(tempfile.mkdtemp(prefix="pa_ringfull_"), "t.db")
    env = agent_env(B, db, PROFAGENT_RING_SIZE="4K", PROFAGENT_TRACE="ze")
    if mode is not None:
        env["PROFAGENT_RING_FULL"] = mode
    p = subprocess.run(on_one_cpu([BENCH, str(CALLS), "1000", "0"]), env=env, capture_output=True, text=True, timeout=300)
    check(p.returncode == 0, f"{mode}: exit {p.returncode}: {p.stderr[-400:]}")
    con = sqlite3.connect(db)
    c = dict(con.execute("SELECT name, value FROM SESSION_COUNTERS"))
    rows = con.execute("SELECT count(*) FROM ZE_API").fetchone()[0]
    setarg = con.execute("SELECT count(*) FROM ZE_API a JOIN STRING_IDS s ON s.id = a.nameId"
                         " WHERE s.value = 'zeKernelSetArgumentValue'").fetchone()[0]
    return c, rows, setarg, p.stderr


LINE = re.compile(r"^Ring full: the application's threads were held (\d+) times, ([0-9.]+) ms in all, to keep"
                  r" every record \(Level Zero \d+; PROFAGENT_RING_FULL=drop drops instead\)(?:; (\d+) waits given up"
                  r" \(the aggregator made no progress for 100 ms\), those records dropped \(Level Zero \d+\))?$", re.M)

# wait (the default)
c, rows, setarg, err = run(None)
waits, ns, given_up = (c.get(k) for k in ("ze_ring_full_waits", "ze_ring_full_wait_ns", "ze_ring_full_waits_given_up"))
# a wait is given up only when the aggregator got no slice for 100 ms (a loaded machine): then the
# calls of the next second that find the ring full are dropped, counted; never otherwise
check(c.get("drops") == 0 if not given_up else setarg + c.get("drops") == CALLS,
      f"wait: drops {c.get('drops')}, zeKernelSetArgumentValue rows {setarg}, given up {given_up} (want 0, {CALLS}, 0)")
check(setarg == CALLS or given_up, f"wait: {setarg} rows of {CALLS} calls, no wait given up")
check(waits is not None and waits > 0 and ns > 0, f"wait: {waits} waits, {ns} ns (want > 0, > 0)")
m = LINE.findall(err)
check(len(m) == 1, f"wait: {len(m)} 'Ring full' summary lines (want 1): {err[-600:]}")
if m and waits is not None:
    check(int(m[0][0]) == waits and m[0][1] == "%.1f" % (ns / 1e6) and int(m[0][2] or 0) == given_up,
          f"wait: summary says {m[0]}, the DB {waits} waits, {ns} ns")
wait_rows = rows

# drop: the burst overflows the ring; each call is a row or a drop
c, rows, setarg, err = run("drop")
drops = c.get("drops")
check(drops is not None and drops > 0, f"drop: {drops} drops (want > 0)")
# the drop counter also counts a full ring's non-API records (the thread's clock and counts
# records): up to 2 more than the wait run's rows, never fewer
check(wait_rows <= rows + (drops or 0) <= wait_rows + 2 and setarg < CALLS,
      f"drop: {rows} rows + {drops} drops (want {wait_rows} to {wait_rows + 2}: the wait run's rows);"
      f" zeKernelSetArgumentValue rows {setarg}")
check(c.get("ze_ring_full_waits") == 0 and c.get("ze_ring_full_wait_ns") == 0,
      f"drop: {c.get('ze_ring_full_waits')} waits, {c.get('ze_ring_full_wait_ns')} ns (want 0, 0)")
check("Ring full:" not in err, "drop: a 'Ring full' summary line")

# a bad value: one message naming the variable, the value and the accepted words; waits as the default
c, rows, setarg, err = run("block")
msgs = [l for l in err.splitlines() if "PROFAGENT_RING_FULL" in l and "Ring full:" not in l]
check(len(msgs) == 1 and "block" in msgs[0] and "wait|drop" in msgs[0], f"bad value: messages {msgs}")
# behaves as the default: nothing dropped (whether it had to wait depends on the aggregator's slices)
check(c.get("drops") == 0 or c.get("ze_ring_full_waits_given_up"),
      f"bad value: drops {c.get('drops')}, rows {setarg}, waits {c.get('ze_ring_full_waits')} (want the default's)")

print("ze_ring_full:", "FAIL" if fails else "ok")
sys.exit(1 if fails else 0)
