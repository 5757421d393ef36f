#!/usr/bin/env python3
"""test_thread_churn.py - the agent's memory is bounded by live threads, not by every thread that
ever existed: thread_churn creates and joins N short threads one after another (each one HGTX
range, zeDeviceGetProperties, zeEventPoolCreate/Destroy); the heap it reads after thread 1000 and
after thread N (malloc's bytes in use, every arena) may grow by at most BUDGET bytes per thread in
between plus a fixed slack (before the fix: ~6 KB per thread with every source, ~490 B with HGTX
alone). Heap, not RSS: RSS also counts the first touch of fixed-size buffers as they fill (the
8 MiB spool pipe); the DB is written at exit (PROFAGENT_DB_COMMIT_MS=0) so that SQLite's page
cache (bounded, 4 MiB) does not fill meanwhile. The DB still holds every thread's records: N
ranges, N calls of each kind, one THREADS row per tid, all named, the workers' records counted.
usage: test_thread_churn.py BUILD_DIR all|hgtx"""
import os, re, sqlite3, subprocess, sys, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pa_itest import FAILS as fails, agent_env, check  # noqa: E402

B, MODE = sys.argv[1], sys.argv[2]
N, MARK = 5000, 1000
BUDGET = 300           # bytes per thread that ever existed (after the fix: ~150 HGTX, ~280 all)
SLACK = 256 * 1024     # the medians' samples of a few keys, allocator granularity

db = os.path.join(tempfile.mkdtemp(prefix="pa_churn_"), "t.db")
env = agent_env(B, db, PROFAGENT_SUMMARY="none", PROFAGENT_DB_COMMIT_MS="0")
args = [os.path.join(B, "bin", "thread_churn"), str(N), str(MARK), str(N)]
if MODE == "hgtx":
    env["PROFAGENT_TRACE"] = "hgtx"
    args.append("noze")
p = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-400:]}")
rss = {int(k): int(v) for k, v in re.findall(r"^rss_kib (\d+) (\d+)$", p.stdout, re.M)}
heap = {int(k): int(v) for k, v in re.findall(r"^heap_b (\d+) (\d+)$", p.stdout, re.M)}
m = re.search(r"^distinct_tids (\d+)$", p.stdout, re.M)
check(set(rss) == set(heap) == {MARK, N} and m, f"output: {p.stdout[-300:]}")
if set(rss) == set(heap) == {MARK, N} and m:
    grown = heap[N] - heap[MARK]
    bound = BUDGET * (N - MARK) + SLACK
    print(f"{MODE}: from thread {MARK} to {N}: heap {grown / (N - MARK):.0f} B per thread, RSS "
          f"{(rss[N] - rss[MARK]) * 1024 / (N - MARK):.0f} B per thread")
    check(grown < bound, f"the heap grew {grown} B over {N - MARK} threads (want < {bound})")
    tids = int(m.group(1))
    con = sqlite3.connect(db)
    q = lambda sql: con.execute(sql).fetchone()
    ranges = "SELECT count(*), count(DISTINCT globalTid) FROM HGTX_RANGES"
    check(q(ranges) == (N, tids), f"ranges, their threads {q(ranges)} (want {N}, {tids})")
    # the workers' rows (the main thread records only with Level Zero on); a reused tid is one row
    workers = "SELECT globalTid FROM HGTX_RANGES"
    rows = q(f"SELECT count(*), sum(records), sum(drops), count(DISTINCT nameId) FROM THREADS WHERE globalTid IN ({workers})")
    name = q(f"SELECT s.value FROM THREADS t JOIN STRING_IDS s ON s.id = t.nameId WHERE t.globalTid IN ({workers}) LIMIT 1")
    # each worker: its name, push, pop, exit; with Level Zero also 3 calls
    per = 4 if MODE == "hgtx" else 7
    check(rows[0] == tids and rows[2] == 0 and rows[3] == 1 and name == ("thread_churn",),
          f"THREADS of the workers: {rows}, name {name} (want {tids} rows, 0 drops, one name 'thread_churn')")
    if MODE == "hgtx":
        check(rows[1] == per * N, f"the workers' records {rows[1]} (want {per * N})")
        check(q("SELECT count(*) FROM THREADS")[0] == tids, f"THREADS {q('SELECT count(*) FROM THREADS')} (want {tids})")
    else:
        calls = dict(con.execute("SELECT s.value, count(*) FROM ZE_API z JOIN STRING_IDS s ON s.id = z.nameId"
                                 f" WHERE z.tid IN ({workers}) GROUP BY 1"))
        want = {"zeDeviceGetProperties": N, "zeEventPoolCreate": N, "zeEventPoolDestroy": N}
        check(calls == want, f"the workers' ZE_API calls {calls} (want {want})")
        check(q("SELECT count(*) FROM THREADS")[0] == tids + 1, f"THREADS {q('SELECT count(*) FROM THREADS')} (want {tids + 1})")
        # records beyond the 7 per worker (OSRT waits) are the source's call; at least 7 each
        check(rows[1] >= per * N, f"the workers' records {rows[1]} (want >= {per * N})")
    c = dict(con.execute("SELECT name, value FROM SESSION_COUNTERS"))
    check(c.get("drops") == 0 and c.get("late_records") == 0, f"drops {c.get('drops')}, late {c.get('late_records')} (want 0, 0)")

print(f"thread_churn_{MODE}:", "FAIL" if fails else "ok")
sys.exit(1 if fails else 0)
