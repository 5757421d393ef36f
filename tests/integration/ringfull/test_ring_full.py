#!/usr/bin/env python3
"""test_ring_full.py - PROFAGENT_RING_FULL for one source besides Level Zero (hgtx, osrt, itt): a
burst of its records into a 4 KiB ring (64 slots) on one CPU, where the aggregator runs only when
the recording thread yields. wait (the default): every event a row, no drop, the waits counted
under the source in SESSION_COUNTERS and told in the summary with the DB's numbers; drop: the
records that found the ring full are dropped and counted, nothing waits, no such line.
usage: test_ring_full.py BUILD_DIR hgtx|osrt|itt"""
import os, re, sqlite3, subprocess, sys, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pa_itest import FAILS as fails, agent_env, check, on_one_cpu  # noqa: E402

B, SRC = sys.argv[1], sys.argv[2]
N = 50000
LABEL = {"hgtx": "HGTX", "osrt": "OSRT", "itt": "ITT"}[SRC]


def run(mode):
    """The source's burst of N events under the agent with PROFAGENT_RING_FULL=mode (None: unset);
    returns (SESSION_COUNTERS, rows of the N events, stderr)."""
    db = os.path.join(tempfile.mkdtemp(prefix="pa_ringfull_"), "t.db")
    env = agent_env(B, db, PROFAGENT_RING_SIZE="4K", PROFAGENT_TRACE=SRC)
    if mode is not None:
        env["PROFAGENT_RING_FULL"] = mode
    if SRC == "osrt":
        env["PROFAGENT_OSRT_THRESHOLD_NS"] = "0"  # every poll(, 0, 0) is a record
        argv = [os.path.join(B, "bin", "ringfull_osrt"), str(N)]
    else:
        argv = [os.path.join(B, "bin", "bench_" + SRC), str(N), "1000", "0"]
    p = subprocess.run(on_one_cpu(argv), env=env, capture_output=True, text=True, timeout=300)
    check(p.returncode == 0, f"{mode}: exit {p.returncode}: {p.stderr[-400:]}")
    con = sqlite3.connect(db)
    c = dict(con.execute("SELECT name, value FROM SESSION_COUNTERS"))
    if SRC == "osrt":
        rows = con.execute("SELECT count(*) FROM OSRT_API a JOIN STRING_IDS s ON s.id = a.nameId"
                           " WHERE s.value = 'poll'").fetchone()[0]
    else:  # a push/pop pair (HGTX) or a task begin/end pair (ITT) is one range
        rows = con.execute("SELECT count(*) FROM HGTX_RANGES WHERE style = 0").fetchone()[0]
    return c, rows, p.stderr


LINE = re.compile(r"^Ring full: the application's threads were held (\d+) times, ([0-9.]+) ms in all, to keep"
                  r" every record \((.*?); PROFAGENT_RING_FULL=drop drops instead\)(?:; (\d+) waits given up"
                  r" \(the aggregator made no progress for 100 ms\), those records dropped \((.*?)\))?$", re.M)
KEYS = [SRC + "_ring_full_" + k for k in ("waits", "wait_ns", "waits_given_up")]
OTHERS = [s + "_ring_full_waits" for s in ("hgtx", "osrt", "itt") if s != SRC]

# wait (the default)
c, rows, err = run(None)
waits, ns, given_up = (c.get(k) for k in KEYS)
# a wait is given up only when the aggregator got no slice for 100 ms (a loaded machine): then the
# records of the next second that find the ring full are dropped, counted; never otherwise
if not given_up:
    check(c.get("drops") == 0 and rows == N, f"wait: drops {c.get('drops')}, rows {rows} (want 0, {N})")
else:
    check(rows < N and c.get("drops", 0) >= N - rows, f"wait, {given_up} given up: rows {rows}, drops {c.get('drops')}")
check(waits is not None and waits > 0 and ns > 0, f"wait: {waits} waits, {ns} ns (want > 0, > 0)")
check(all(c.get(k) == 0 for k in OTHERS), f"wait: other sources' waits {[(k, c.get(k)) for k in OTHERS]} (want 0)")
m = LINE.findall(err)
check(len(m) == 1, f"wait: {len(m)} 'Ring full' summary lines (want 1): {err[-600:]}")
if m and waits is not None:
    check(int(m[0][0]) == waits and m[0][1] == "%.1f" % (ns / 1e6) and m[0][2] == f"{LABEL} {waits}"
          and int(m[0][3] or 0) == given_up,
          f"wait: summary says {m[0]}, the DB {waits} waits, {ns} ns, {given_up} given up")

# drop: the burst overflows the ring; the records that found it full are counted
c, rows, err = run("drop")
drops = c.get("drops")
check(drops is not None and drops > 0 and rows < N, f"drop: {drops} drops, {rows} rows (want > 0, < {N})")
if SRC == "osrt":
    # one record per call; at most the thread's name record besides
    check(N <= rows + (drops or 0) <= N + 1, f"drop: {rows} rows + {drops} drops (want {N}..{N + 1})")
else:
    # a range is lost when its start was dropped (its end always has room kept); the end of a lost
    # range may be dropped as well: N - rows <= drops <= 2 (N - rows) (+1: the thread's name record)
    check(N - rows <= (drops or 0) <= 2 * (N - rows) + 1, f"drop: {rows} ranges, {drops} drops of {N} pairs")
check(c.get(KEYS[0]) == 0 and c.get(KEYS[1]) == 0, f"drop: {c.get(KEYS[0])} waits, {c.get(KEYS[1])} ns (want 0, 0)")
check("Ring full:" not in err, "drop: a 'Ring full' summary line")

print(f"ring_full_{SRC}:", "FAIL" if fails else "ok")
sys.exit(1 if fails else 0)
