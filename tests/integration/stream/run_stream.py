#!/usr/bin/env python3
"""run_stream.py BUILD_DIR TEST [SCALE] - the DB written while the program runs (writer/stream.c).

same   a deterministic program written at exit only (PROFAGENT_DB_COMMIT_MS=0) and streamed with
       1 ms commits gives the same DB and the same reports, times and thread ids aside; the
       streamed DB's summary statistics equal the ones computed from its own trace rows
live   another process opens the DB while the program runs: readable, integrity_check ok,
       session_complete = 0, row counts and META spool_records_loaded never go back; `profagent
       stats` reads it; at the end every range is there and session_complete = 1 (the program
       keeps running after its ranges until the reads are done: load delays them, never fails them)
kill   kill -9 at a random moment of a 10 M-event run: the DB passes integrity_check and holds
       every range the program reported done 1 s before the kill (plus the time the agent's threads
       waited for a CPU on a loaded machine, from schedstat); recover still builds the whole
reader  the first `profagent stats` of a finished DB creates the readers' indexes and the median the
       exit left pending (a key past the sample budget)
exitcut a backlog at exit (the DB loads slower than the program made records) is cut at
       PROFAGENT_EXIT_TIMEOUT_MS: main's return -> the process's end stays below the limit + a margin
       (+ the run-queue waits of the exiting thread and of this test, from schedstat), the DB passes
       integrity_check with session_complete = 0 and fewer ranges than made, `profagent stats` names
       the in-place recover command, which completes the DB to every range; a SIGINT during the
       exit's DB load (its DB appeared) ends the process promptly the same way
SCALE divides the event counts (the sanitizer build runs smaller sessions)."""
import csv, glob, io, os, random, signal, sqlite3, subprocess, sys, tempfile, threading, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "spine"))
from spine_util import FAILS, check, preload  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pa_itest import finisher_pid, wait_finisher  # noqa: E402

BUILD, TEST = sys.argv[1], sys.argv[2]
SCALE = int(sys.argv[3]) if len(sys.argv) > 3 else 1
LIB = os.path.join(BUILD, "lib", "libprofagent.so")
CLI = os.path.join(BUILD, "bin", "profagent")
APP = os.path.join(BUILD, "tests", "stream", "stream_app")
WORK = tempfile.mkdtemp(prefix="stream_%s_" % TEST)


def env_for(db, extra=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("PROFAGENT_")}
    e.update({"PROFAGENT_OUTPUT": db, "PROFAGENT_SUMMARY": "none", "ASAN_OPTIONS": "detect_leaks=0",
              "LD_PRELOAD": preload(LIB),
              "ZE_ENABLE_ALT_DRIVERS": os.path.join(BUILD, "lib", "libze_simdev.so")})
    e.update(extra or {})
    return e


def run(args, db, extra=None, timeout=300):
    p = subprocess.run(args, env=env_for(db, extra), capture_output=True, timeout=timeout)
    sys.stderr.write(p.stderr.decode(errors="replace")[-2000:])
    return p


def ro(db):
    return sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=10)


RING = {"PROFAGENT_RING_SIZE": "64M"}  # seconds of events: no drop when the aggregator is descheduled
TIME_COLS = {"pid", "start", "end", "firstNs", "lastNs", "globalTid", "endGlobalTid", "tid", "apiStart", "apiEnd",
             "startNs", "durationNs", "total", "min", "max", "avg", "median", "stddev", "corrId",
             "appendCorrId", "contextId", "queueId"}
# META and SESSION_COUNTERS entries that are times, sizes of the compressed spool or of this run
RUN_KEYS = {"pid", "db_commits", "spool_path", "command_line", "start_wall_ns", "start_mono_ns", "end_mono_ns", "first_ns", "last_ns",
            "spool_bytes_raw", "spool_bytes_compressed", "hostname", "finisher_cpu_ms"}


def table_rows(c, table):
    cols = [r[1] for r in c.execute("PRAGMA table_info(%s)" % table)]
    keep = [x for x in cols if x not in TIME_COLS]
    if not keep:
        return cols, []
    rows = c.execute("SELECT %s FROM %s" % (",".join('"%s"' % k for k in keep), table)).fetchall()
    if table in ("META", "SESSION_COUNTERS"):
        rows = [r for r in rows if r[0] not in RUN_KEYS and not str(r[0]).endswith("_ns")]  # times
    return keep, sorted(rows, key=repr)


def db_view(db):
    """Everything of a DB but times, thread ids and run-specific META values."""
    c = ro(db)
    schema = sorted(c.execute("SELECT type, name, sql FROM sqlite_master").fetchall(), key=repr)
    tables = [r[1] for r in schema if r[0] == "table"]
    view = {"schema": schema}
    for t in tables:
        view[t] = table_rows(c, t)
    c.close()
    return view


def report_view(db, report):
    """The report's CSV with the time/percentage/thread columns dropped, rows as lists."""
    p = subprocess.run([CLI, "stats", "-r", report, "-f", "csv", db], capture_output=True, text=True)
    if p.returncode != 0:
        return ("rc", p.returncode, p.stderr.strip())
    rows = list(csv.reader(io.StringIO(p.stdout)))
    if not rows:
        return []
    head = rows[0]
    drop = {i for i, h in enumerate(head)
            if "(ns)" in h or "(%)" in h or "Time" in h or h in ("Row#", "TID", "PID", "Tid", "Pid", "Start", "End")
            or "Med" in h or "Avg" in h or "Min" in h or "Max" in h or "StdDev" in h}
    body = [[x for i, x in enumerate(r) if i not in drop] for r in rows]
    return [body[0]] + sorted(body[1:])


def t_same():
    iters = max(2000, 20000 // SCALE)
    views, reports = [], []
    for mode, extra in (("exit", {"PROFAGENT_DB_COMMIT_MS": "0"}), ("stream", {"PROFAGENT_DB_COMMIT_MS": "1"})):
        db = os.path.join(WORK, "det-%s.db" % mode)
        p = run([APP, "det", str(iters)], db, dict(extra, **RING))
        check(p.returncode == 0 and os.path.exists(db), "det %s: exit 0 and a DB (%d)" % (mode, p.returncode))
        if not os.path.exists(db):
            return
        c = ro(db)
        check(c.execute("PRAGMA integrity_check").fetchone()[0] == "ok", "det %s: integrity_check ok" % mode)
        check(c.execute("PRAGMA journal_mode").fetchone()[0] == "delete", "det %s: a plain file at the end" % mode)
        n = c.execute("SELECT count(*) FROM HGTX_RANGES").fetchone()[0]
        check(n == iters * 5, "det %s: %d ranges (%d)" % (mode, iters * 5, n))
        m = c.execute("SELECT count(*) FROM HGTX_MARKS").fetchone()[0]
        check(m == iters * 2, "det %s: %d marks (%d)" % (mode, iters * 2, m))
        loaded = c.execute("SELECT value FROM META WHERE key = 'spool_records_loaded'").fetchone()[0]
        spooled = c.execute("SELECT value FROM SESSION_COUNTERS WHERE name = 'spool_records'").fetchone()[0]
        check(loaded == spooled, "det %s: every spooled record loaded (%s of %s)" % (mode, loaded, spooled))
        commits = c.execute("SELECT value FROM META WHERE key = 'db_commits'").fetchone()[0]
        check(commits == 0 if mode == "exit" else commits >= 3,
              "det %s: %d commits while the program ran" % (mode, commits))
        # the aggregator's statistics against the same DB's trace rows (count, total, min, max, median)
        agg = c.execute("SELECT s.value, t.tag, t.count, t.total, t.min, t.max, t.median FROM SUMMARY_STATS t"
                        " JOIN STRING_IDS s ON s.id = t.nameId WHERE t.category = 1 ORDER BY 1, 2").fetchall()
        rows = c.execute("SELECT name, style, end - start FROM HGTX_RANGES_NAMED WHERE unterminated = 0").fetchall()
        c.close()
        by = {}
        for name, style, d in rows:
            by.setdefault((name, style), []).append(d)
        raw = []
        for (name, style) in sorted(by):
            v = sorted(by[(name, style)])
            k = len(v)
            # SUMMARY_STATS keeps the median as printed: truncated toward zero (pa_stat_trunc)
            med = v[k // 2] if k % 2 else (v[k // 2 - 1] + v[k // 2]) // 2
            raw.append((name, style, k, sum(v), v[0], v[-1], float(med)))
        check(agg == raw, "det %s: SUMMARY_STATS of every range = count/total/min/max/median of its rows (%d keys)"
              % (mode, len(raw)))
        views.append(db_view(db))
        reports.append({r: report_view(db, r) for r in ("hgtx_sum", "hgtx_pushpop_trace")})
    check(views[0]["schema"] == views[1]["schema"], "same tables, indexes and views")
    for t in views[0]:
        check(views[0][t] == views[1].get(t), "table %s: same rows (times and thread ids aside)" % t)
    for r in reports[0]:
        check(reports[0][r] == reports[1][r] and len(reports[0][r]) > 1,
              "report %s: same output (times aside, %d rows)" % (r, len(reports[0][r]) - 1))
    # a Level Zero program: the ze tables and reports too
    gemm = os.path.join(BUILD, "bin", "gemm")
    zviews, zreports = [], []
    for mode, extra in (("exit", {"PROFAGENT_DB_COMMIT_MS": "0"}), ("stream", {"PROFAGENT_DB_COMMIT_MS": "1"})):
        db = os.path.join(WORK, "gemm-%s.db" % mode)
        # with device metric intervals: a source that keeps a statement across records (writer_dm.c);
        # long enough (~1 s) for several 25 ms spool frames, hence commits, while it runs on a loaded
        # host (the packed intervals no longer fill frames by size)
        p = run([gemm, "150", "128"], db, dict(extra, PROFAGENT_TRACE="ze,hgtx", PROFAGENT_METRICS="ComputeBasic"))
        check(p.returncode == 0 and os.path.exists(db), "gemm %s: exit 0 and a DB" % mode)
        if not os.path.exists(db):
            return
        c = ro(db)
        commits = c.execute("SELECT value FROM META WHERE key = 'db_commits'").fetchone()[0]
        nint = c.execute("SELECT coalesce(sum(intervals), 0) FROM METRIC_CHUNKS").fetchone()[0]
        c.close()
        # >= 1 commit before the exit's own transaction: the kept statements crossed a commit (the
        # DB thread runs at a lowered priority, and a 0.6 s run on a loaded machine may give it
        # only one turn; the det runs above prove several commits)
        check(nint > 0 and (commits == 0 if mode == "exit" else commits >= 1),
              "gemm %s: %d metric intervals, %d commits while it ran" % (mode, nint, commits))
        v = db_view(db)
        zviews.append({t: v[t] for t in v if t.startswith("ZE_") or t == "schema" or t == "METRIC_NAMES"})
        zreports.append({r: report_view(db, r) for r in ("ze_api_sum", "kern_sum", "mem_size_sum")})
    for t in zviews[0]:
        check(zviews[0][t] == zviews[1].get(t), "gemm %s: same (times, ids and handles aside)" % t)
    for r in zreports[0]:
        check(zreports[0][r] == zreports[1][r] and len(zreports[0][r]) > 1,
              "gemm report %s: same output (times aside, %d rows)" % (r, len(zreports[0][r]) - 1))


def read_progress(lines):
    out = []
    for l in lines:
        f = l.split()
        if len(f) == 3 and f[0] in ("progress", "done"):
            out.append((int(f[1]), int(f[2])))
    return out


def t_live():
    ranges, rate = 480000 // SCALE, 60000 // SCALE  # ~8 s
    db = os.path.join(WORK, "live.db")
    # "hold": the program keeps running after its ranges until its stdin is closed, which is done
    # once the reads below saw what they must see while it runs (or at the deadline): a loaded
    # machine that gives the DB thread little time delays the rows, not the verdict
    p = subprocess.Popen([APP, "progress", str(ranges), str(rate), "hold"], env=env_for(db, RING),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen, last, last_loaded, bad, stats_ok, live_recover = 0, -1, -1, [], 0, None
    held = threading.Event()
    # main has returned once "done" is printed: the exit part (session_complete = 1) may then
    # commit while the process still lives, so a read after "done" is not a read "while running"
    main_done, out_lines = threading.Event(), []

    def pump():
        for l in p.stdout:
            out_lines.append(l.decode(errors="replace"))
            if l.startswith(b"held "):
                held.set()
            if l.startswith(b"done "):
                main_done.set()
    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    deadline = time.monotonic() + 120

    def release():
        if not p.stdin.closed:
            p.stdin.close()
    while p.poll() is None and time.monotonic() < deadline + 60:
        time.sleep(0.15)
        # released once every range is done and 2 reads saw rows and stats ran, or at the deadline
        if (held.is_set() and seen >= 2 and stats_ok != 0) or time.monotonic() >= deadline:
            release()
        if not os.path.exists(db) or p.poll() is not None:
            continue
        try:
            c = ro(db)
            if c.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0:
                c.close()
                continue  # claimed, its first transaction (every table at once) not committed yet
            ic = c.execute("PRAGMA integrity_check").fetchone()[0]
            n = c.execute("SELECT count(*) FROM HGTX_RANGES").fetchone()[0]
            loaded = c.execute("SELECT value FROM META WHERE key = 'spool_records_loaded'").fetchone()
            done = c.execute("SELECT value FROM META WHERE key = 'session_complete'").fetchone()
            c.close()
        except sqlite3.Error as e:
            if p.poll() is None:
                bad.append("read error while running: %s" % e)
            continue
        if p.poll() is not None:
            continue  # the exit part may have run meanwhile
        if ic != "ok":
            bad.append("integrity_check: %s" % ic)
        if n < last or (loaded and loaded[0] < last_loaded):
            bad.append("went back: ranges %d after %d, loaded %s after %d" % (n, last, loaded, last_loaded))
        if done is not None and done[0] == 1 and main_done.wait(5):
            continue  # committed by the exit part after main returned
        if done is None or done[0] != 0:
            bad.append("session_complete %s while running" % (done,))
        last, last_loaded = n, loaded[0] if loaded else last_loaded
        if n > 0:
            seen += 1
            if stats_ok == 0:
                s = subprocess.run([CLI, "stats", "-r", "hgtx_sum", db], capture_output=True, text=True)
                stats_ok = 1 if s.returncode == 0 and '"p"' in s.stdout else -1
            if live_recover is None:
                live_recover = recover_live(p.pid)
    release()
    err = p.stderr.read()
    p.wait(timeout=120)
    reader.join(10)
    sys.stderr.write(err.decode(errors="replace")[-2000:])
    check(p.returncode == 0, "live: exit 0 (%s)" % p.returncode)
    check(not bad, "live: every read while running consistent (%s)" % bad[:3])
    check(seen >= 2, "live: the DB had rows in %d reads while the program ran (>= 2)" % seen)
    check(stats_ok == 1, "live: profagent stats read the DB while the program ran")
    check(live_recover is not None and not live_recover, "live: recover of the live spool: %s" % live_recover)
    c = ro(db)
    n = c.execute("SELECT count(*) FROM HGTX_RANGES").fetchone()[0]
    kept = c.execute("SELECT count FROM SUMMARY_STATS WHERE category = 1").fetchone()[0]
    drops = c.execute("SELECT value FROM META WHERE key = 'drops'").fetchone()[0]
    check(n == kept and n >= last and (drops > 0 or n == ranges),
          "live: at the end every range the aggregator kept: %d (of %d, %d records dropped; last read %d)"
          % (n, ranges, drops, last))
    check(c.execute("SELECT value FROM META WHERE key = 'session_complete'").fetchone()[0] == 1,
          "live: session_complete = 1 at the end")
    check(c.execute("PRAGMA integrity_check").fetchone()[0] == "ok", "live: integrity_check ok at the end")


def recover_live(pid):
    """`profagent recover` given the spool of the running session: refused (one line naming the pid, nothing
    written, the live DB untouched) without --force and with --force but no -o; with --force -o a snapshot DB.
    Returns the list of failures (empty: all held), None when the spool was not found."""
    spools = glob.glob(os.path.join(WORK, "live.db.%d.*.spool.zst" % pid))
    if len(spools) != 1:
        return None
    bad, snap = [], os.path.join(WORK, "live-snapshot.db")
    for args in ([spools[0]], [spools[0], "--force"], [spools[0], "-o", snap]):
        r = subprocess.run([CLI, "recover"] + args, capture_output=True, text=True, timeout=120)
        lines = r.stderr.strip().splitlines()
        made = [x for x in os.listdir(WORK) if "recover" in x or x.startswith("live-")]
        if r.returncode != 1 or len(lines) != 1 or ("still being written by pid %d" % pid) not in lines[0] or made:
            bad.append("recover %s: rc %d %r, made %s" % (" ".join(args[1:]), r.returncode, r.stderr, made))
    r = subprocess.run([CLI, "recover", spools[0], "--force", "-o", snap], capture_output=True, text=True,
                       timeout=120)
    n = -1
    if r.returncode == 0 and os.path.exists(snap):
        c = sqlite3.connect(snap)
        n = c.execute("SELECT count(*) FROM HGTX_RANGES").fetchone()[0]
        c.close()
        os.unlink(snap)
    if r.returncode != 0 or "snapshot of a live session" not in r.stdout or n <= 0:
        bad.append("recover --force -o: rc %d, %d ranges, %r %r" % (r.returncode, n, r.stdout, r.stderr))
    return bad


def helpers_wait_ns(pid):
    """ns the process's threads but its main one (the agent's aggregator and DB threads) spent
    runnable but not running, since they started (/proc/PID/task/TID/schedstat, 2nd field)."""
    total = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        if int(tid) == pid:
            continue
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                total += int(f.read().split()[1])
        except (OSError, IndexError, ValueError):
            pass  # the thread ended meanwhile
    return total


def t_kill():
    # 10 M events (push + pop) planned, at a rate the DB thread keeps up with on a 2-core machine
    # shared with a parallel test run (a DB cannot hold 1 s after what it is given faster than it
    # writes rows: ~0.5 M rows/s of one core here, a tenth of a core when 20 threads share two);
    # killed at a random moment of its first 12 s
    ranges, rate = 5000000 // SCALE, 20000 // SCALE
    for it in range(3):
        db = os.path.join(WORK, "kill%d.db" % it)
        p = subprocess.Popen([APP, "progress", str(ranges), str(rate)], env=env_for(db, RING), stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL)
        at = random.uniform(1.5, 12.0)
        start = time.monotonic()
        time.sleep(at)
        waited = helpers_wait_ns(p.pid)
        killed_ns = time.monotonic_ns()
        p.send_signal(signal.SIGKILL)
        out, _ = p.communicate(timeout=60)
        prog = read_progress(out.decode().splitlines())
        if p.returncode != -signal.SIGKILL or (prog and prog[-1][0] == ranges):
            print("note: run %d ended before the kill at %.2f s (rc %s): not counted" % (it, at, p.returncode))
            continue
        # 1 s of lag, plus every ns the agent's threads waited for a CPU (a loaded machine): the
        # DB cannot hold what its threads were not given the time to write
        due = max([n for n, t in prog if t <= killed_ns - 1000000000 - waited] or [0])
        check(os.path.exists(db), "kill %d at %.2f s: the DB exists" % (it, time.monotonic() - start))
        if not os.path.exists(db):
            continue
        c = sqlite3.connect(db)
        ic = c.execute("PRAGMA integrity_check").fetchone()[0]
        n = c.execute("SELECT count(*) FROM HGTX_RANGES").fetchone()[0]
        complete = c.execute("SELECT value FROM META WHERE key = 'session_complete'").fetchone()[0]
        c.close()
        check(ic == "ok", "kill %d: integrity_check ok (%s)" % (it, ic))
        check(complete == 0, "kill %d: session_complete = 0" % it)
        check(n >= due, "kill %d at %.2f s: the DB holds %d ranges >= the %d done 1 s + %.3f s (the agent's"
              " threads' run-queue wait) before the kill (%d reported done at the kill)"
              % (it, at, n, due, waited / 1e9, prog[-1][0] if prog else 0))
        s = subprocess.run([CLI, "stats", "-r", "hgtx_sum", db], capture_output=True, text=True)
        check(s.returncode == 0 and '"p"' in s.stdout, "kill %d: profagent stats reads it" % it)
        spools = glob.glob(os.path.join(WORK, "kill%d.*.spool.zst" % it))
        check(len(spools) == 1, "kill %d: the spool is kept for the tail" % it)
        # the incomplete-session warning names that spool and the exact command that rebuilds a DB from it
        fresh = os.path.join(WORK, "kill%d-recovered.db" % it)
        cmd = "profagent recover %s -o %s" % (spools[0] if spools else "?", fresh)
        warn = [l for l in s.stderr.splitlines() if "incomplete session" in l]
        check(len(warn) == 1 and ("the spool %s beside it holds records that are not in the DB" % spools[0]
                                  if spools else "?") in warn[0] and warn[0].endswith(": " + cmd),
              "kill %d: the warning names the spool and '%s' (%r)" % (it, cmd, s.stderr))
        if it == 1 and spools and warn:
            r = subprocess.run([CLI] + warn[0].rsplit(": profagent ", 1)[1].split(), capture_output=True, text=True)
            c = sqlite3.connect(fresh) if r.returncode == 0 else None
            m = c.execute("SELECT count(*) FROM HGTX_RANGES").fetchone()[0] if c else -1
            if c:
                c.close()
            check(r.returncode == 0 and m >= n, "kill 1: the named command builds %s with %d >= %d ranges (%s)"
                  % (fresh, m, n, r.stderr.strip()))
        if it == 0 and spools:
            r = subprocess.run([CLI, "recover", spools[0]], capture_output=True, text=True, cwd=WORK)
            check(r.returncode == 0, "kill 0: recover exits 0 (%s)" % r.stderr.strip())
            dbs = glob.glob(os.path.join(WORK, "kill0*.db"))
            check(dbs == [db] and "completed with the spool's tail" in r.stdout,
                  "kill 0: recover completed the streamed DB in place (%s)" % dbs)
            c = sqlite3.connect(db)
            m = c.execute("SELECT count(*) FROM HGTX_RANGES").fetchone()[0]
            rc = c.execute("SELECT value FROM META WHERE key = 'recovered_from'").fetchone()
            c.close()
            check(m >= n and rc is not None, "kill 0: the recovered DB holds the tail too (%d >= %d)" % (m, n))
            check(not glob.glob(db + "-wal"), "kill 0: no WAL of the replaced DB left")
        for f in glob.glob(os.path.join(WORK, "kill%d*" % it)):
            os.unlink(f)


def t_reader():
    """What the exit leaves to the first reader: the trace tables' indexes and the median of a key
    past the sample budget with more rows than the exit sorts (PA_MEDIAN_EXIT_ROWS = 65536)."""
    ranges = 100000 if SCALE == 1 else 70000
    db = os.path.join(WORK, "reader.db")
    p = run([APP, "progress", str(ranges), "2000000"], db, dict(RING, PROFAGENT_MEDIAN_BUDGET="1K",
                                                               PROFAGENT_SUMMARY="file:" + db + ".txt"))
    check(p.returncode == 0 and os.path.exists(db), "reader: exit 0 and a DB")
    if not os.path.exists(db):
        return
    summary = open(db + ".txt").read()
    row = [l.split() for l in summary.splitlines() if l.rstrip().endswith(" p")]
    check(len(row) == 1 and row[0][3] == str(ranges) and row[0][5] == "-" and "PROFAGENT_MEDIAN_BUDGET" in summary,
          "reader: the exit summary prints no median for the key past the budget: %r" % row)
    c = ro(db)
    idx = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    st = c.execute("SELECT median, medianExact, count FROM SUMMARY_STATS WHERE category = 1").fetchall()
    pend = c.execute("SELECT value FROM META WHERE key = 'medians_pending'").fetchone()
    d = sorted(r[0] for r in c.execute("SELECT end - start FROM HGTX_RANGES"))
    c.close()
    check("HGTX_RANGES_start" not in idx and "ZE_API_start" not in idx and "ZE_OPS_start" in idx,
          "reader: the run built no reader index (%s)" % sorted(idx))
    check(st == [(None, 0, ranges)] and pend == (1,) and len(d) == ranges,
          "reader: median pending at exit (%s, META %s, %d rows)" % (st, pend, len(d)))
    k = len(d)
    med = d[k // 2] if k % 2 else (d[k // 2 - 1] + d[k // 2]) // 2
    s = subprocess.run([CLI, "stats", "-r", "hgtx_sum", "-f", "csv", db], capture_output=True, text=True)
    rows = list(csv.reader(io.StringIO(s.stdout)))
    check(s.returncode == 0 and len(rows) == 2 and rows[1][5] == str(med),
          "reader: hgtx_sum median %s = the rows' %d (%s)" % (rows[1][5] if len(rows) > 1 else None, med,
                                                             s.stderr.strip()))
    c = ro(db)
    idx = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    st = c.execute("SELECT median, medianExact FROM SUMMARY_STATS WHERE category = 1").fetchall()
    pend = c.execute("SELECT value FROM META WHERE key = 'medians_pending'").fetchone()
    ic = c.execute("PRAGMA integrity_check").fetchone()[0]
    c.close()
    check({"HGTX_RANGES_start", "HGTX_RANGES_parent", "OSRT_API_start", "ZE_API_start", "ZE_API_corrId"} <= idx
          and st == [(float(med), 1)] and pend == (0,) and ic == "ok",
          "reader: the first reader created the indexes and stored the median (%s, %s, %s)" % (st, pend, ic))
    # a second reader finds it done: nothing is written again
    before = os.stat(db).st_mtime_ns
    s = subprocess.run([CLI, "stats", "-r", "hgtx_sum", "-f", "csv", db], capture_output=True, text=True)
    check(s.returncode == 0 and os.stat(db).st_mtime_ns == before, "reader: a second reader writes nothing")


def run_wait_ns(pid, tid):
    """ns thread tid of pid spent runnable but not running (schedstat field 2); 0 when gone."""
    try:
        with open("/proc/%d/task/%d/schedstat" % (pid, tid)) as f:
            return int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return 0


EXIT_LIMIT_MS = 500  # the drain gets half: a loaded machine's aggregator still empties the rings
# what the exit does besides the bounded drain and load: the last commit of what was loaded, the
# rings' and spool's release, the process's teardown (~20 ms on an idle machine; 10x that)
EXIT_MARGIN_MS = 300


def cut_checks(name, db, ranges, lines):
    """The DB a cut exit left: valid, incomplete, named by stats; recover completes it in place."""
    check(os.path.exists(db), "%s: the DB exists" % name)
    if not os.path.exists(db):
        return
    c = sqlite3.connect(db)
    ic = c.execute("PRAGMA integrity_check").fetchone()[0]
    n = c.execute("SELECT count(*) FROM HGTX_RANGES").fetchone()[0]
    meta = dict(c.execute("SELECT key, value FROM META").fetchall())
    c.close()
    check(ic == "ok", "%s: integrity_check ok (%s)" % (name, ic))
    check(meta.get("session_complete") == 0 and "db_complete" not in meta and "exit_load_cut" in meta,
          "%s: session_complete = 0, no db_complete, exit_load_cut %s" % (name, meta.get("exit_load_cut")))
    check(n < ranges, "%s: the DB lacks the tail: %d < %d ranges" % (name, n, ranges))
    spools = glob.glob(db + ".*.spool.zst")
    check(len(spools) == 1, "%s: the spool is kept (%s)" % (name, spools))
    if len(spools) != 1:
        return
    said = [l for l in lines if "the DB load at exit stopped" in l]
    check(len(said) == 1 and said[0].endswith("profagent recover " + spools[0]),
          "%s: the exit names the recover command (%r)" % (name, said))
    s = subprocess.run([CLI, "stats", "-r", "hgtx_sum", db], capture_output=True, text=True)
    warn = [l for l in s.stderr.splitlines() if "incomplete session" in l]
    check(s.returncode == 0 and len(warn) == 1 and warn[0].endswith("in place with: profagent recover " + spools[0]),
          "%s: stats reads it and names the in-place recover command (%r)" % (name, s.stderr))
    r = subprocess.run([CLI, "recover", spools[0]], capture_output=True, text=True)
    check(r.returncode == 0 and "completed with the spool's tail" in r.stdout, "%s: recover completed the DB in"
          " place (%s%s)" % (name, r.stdout.strip(), r.stderr.strip()))
    c = sqlite3.connect(db)
    m = c.execute("SELECT count(*) FROM HGTX_RANGES").fetchone()[0]
    st = c.execute("SELECT count FROM SUMMARY_STATS WHERE category = 1").fetchall()
    ic = c.execute("PRAGMA integrity_check").fetchone()[0]
    c.close()
    check(m == ranges and st == [(ranges,)] and ic == "ok",
          "%s: the completed DB holds every range: %d, SUMMARY_STATS %s, of %d (%s)" % (name, m, st, ranges, ic))


def t_exitcut():
    ranges, rate = 2000000 // SCALE, str(700000 // SCALE)
    # 1.4 M rows/s, well below what the aggregator takes (at full rate a starved aggregator's exit
    # drain left records late); the DB is written at exit only (DB_COMMIT_MS=0): the whole spool is
    # the backlog, seconds of SQLite at any machine's speed; 256M rings: no drop
    for mode, extra in (("atexit", {"PROFAGENT_DB_COMMIT_MS": "0"}),):
        db = os.path.join(WORK, "cut-%s.db" % mode)
        env = env_for(db, dict(PROFAGENT_RING_SIZE="256M", PROFAGENT_EXIT_TIMEOUT_MS=str(EXIT_LIMIT_MS), PROFAGENT_SUMMARY="stderr",
                                **extra))
        p = subprocess.Popen([APP, "progress", str(ranges), rate], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        done_ns, my_tid = None, threading.get_native_id()
        for line in p.stdout:
            w = line.decode().split()
            if w and w[0] == "done":
                done_ns = int(w[2])
                break
        waits0 = run_wait_ns(p.pid, p.pid) + run_wait_ns(os.getpid(), my_tid)
        # the child's end, unreaped: its exiting thread's schedstat is still there
        os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
        end_ns = time.monotonic_ns()
        waits = run_wait_ns(p.pid, p.pid) + run_wait_ns(os.getpid(), my_tid) - waits0
        out, err = p.communicate(timeout=60)
        lines = err.decode(errors="replace").splitlines()
        sys.stderr.write("\n".join(l for l in lines if "profagent" in l) + "\n")
        check(p.returncode == 0 and done_ns is not None, "%s: exit 0 after 'done' (rc %s)" % (mode, p.returncode))
        if done_ns is None:
            continue
        tail_ms = (end_ns - done_ns) / 1e6
        bound_ms = EXIT_LIMIT_MS + EXIT_MARGIN_MS + waits / 1e6
        print("%s: main's return -> the end %.0f ms (limit %d ms + margin %d ms + %.0f ms of run-queue waits)"
              % (mode, tail_ms, EXIT_LIMIT_MS, EXIT_MARGIN_MS, waits / 1e6))
        check(tail_ms < bound_ms, "%s: the exit took %.0f ms < %.0f ms" % (mode, tail_ms, bound_ms))
        summ = [l for l in lines if l.startswith("Database: ")]
        check(len(summ) == 1 and "INCOMPLETE" in summ[0] and "profagent recover" in summ[0],
              "%s: the summary says the DB is incomplete and why (%r)" % (mode, summ))
        check(any(l.split()[-1:] == ["p"] and str(ranges) in l.split() for l in lines),
              "%s: the summary still counts every range (from the aggregates)" % mode)
        cut_checks(mode, db, ranges, lines)
    # SIGINT while the exit loads the DB (written at exit only: it appears when the load begins);
    # no time limit to speak of, only the signal cuts the load
    db = os.path.join(WORK, "cut-sig.db")
    env = env_for(db, dict(PROFAGENT_RING_SIZE="256M", PROFAGENT_EXIT_TIMEOUT_MS="600000", PROFAGENT_DB_COMMIT_MS="0"))
    p = subprocess.Popen([APP, "progress", str(ranges), rate], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    for line in p.stdout:
        if line.startswith(b"done"):
            break
    while not os.path.exists(db) and p.poll() is None:
        time.sleep(0.001)  # polls for the DB's creation: the exit's load has begun
    waits0 = run_wait_ns(p.pid, p.pid) + run_wait_ns(os.getpid(), threading.get_native_id())
    sent_ns = time.monotonic_ns()
    p.send_signal(signal.SIGINT)
    os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
    end_ns = time.monotonic_ns()
    waits = run_wait_ns(p.pid, p.pid) + run_wait_ns(os.getpid(), threading.get_native_id()) - waits0
    out, err = p.communicate(timeout=60)
    lines = err.decode(errors="replace").splitlines()
    sys.stderr.write("\n".join(l for l in lines if "profagent" in l) + "\n")
    took_ms = (end_ns - sent_ns) / 1e6
    print("sigint: the signal -> the end %.0f ms (margin %d ms + %.0f ms of run-queue waits)"
          % (took_ms, EXIT_MARGIN_MS, waits / 1e6))
    check(p.returncode == -signal.SIGINT, "sigint: ended by SIGINT (rc %s)" % p.returncode)
    check(took_ms < EXIT_MARGIN_MS + waits / 1e6, "sigint: ended %.0f ms after the signal" % took_ms)
    check(any("signal 2 arrived during the exit" in l for l in lines), "sigint: the exit says the signal cut the DB")
    cut_checks("sigint", db, ranges, lines)


BUDGET_MS = 300  # PROFAGENT_EXIT_TIMEOUT_MS of t_exitbudget
# the exit past its budget: the commit of what the load took (the load stops 30 ms early for it)
# and the process's teardown (the 128 MiB ring's pages), besides the time the exiting thread and
# this one waited for a core (added to the bound): measured 357-438 ms in all at a load of 19-24 on
# 2 cores (5 runs) with 197-233 ms of such waits, i.e. less than 300 ms + the waits; the 100 ms
# are for a teardown slower than those
BUDGET_SLACK_MS = 100


def t_exitbudget():
    """A heavy backlog (the whole DB written at exit: 2 M ranges) and PROFAGENT_EXIT_TIMEOUT_MS=300:
    main's return -> the process gone within 300 ms + BUDGET_SLACK_MS (+ the exiting thread's
    run-queue waits), one deadline shared by every stage; the summary is printed, says INCOMPLETE
    and names the recover command, still counts every range; the DB is valid, session_complete=0;
    recover completes it."""
    ranges, rate = 2000000 // SCALE, str(700000 // SCALE)
    db = os.path.join(WORK, "budget.db")
    env = env_for(db, dict(PROFAGENT_RING_SIZE="128M", PROFAGENT_EXIT_TIMEOUT_MS=str(BUDGET_MS),
                           PROFAGENT_SUMMARY="stderr", PROFAGENT_DB_COMMIT_MS="0"))
    p = subprocess.Popen([APP, "progress", str(ranges), rate], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    done_ns = None
    for line in p.stdout:
        w = line.decode().split()
        if w and w[0] == "done":
            done_ns = int(w[2])
            break
    my_tid = threading.get_native_id()  # this thread too must get a core to see the end
    waits0 = run_wait_ns(p.pid, p.pid) + run_wait_ns(os.getpid(), my_tid)
    os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)  # gone, unreaped: its schedstat is still there
    end_ns = time.monotonic_ns()
    waits = run_wait_ns(p.pid, p.pid) + run_wait_ns(os.getpid(), my_tid) - waits0
    out, err = p.communicate(timeout=60)
    lines = err.decode(errors="replace").splitlines()
    sys.stderr.write("\n".join(l for l in lines if "profagent" in l) + "\n")
    check(p.returncode == 0 and done_ns is not None, "budget: exit 0 after 'done' (rc %s)" % p.returncode)
    if done_ns is None:
        return
    took_ms = (end_ns - done_ns) / 1e6
    bound_ms = BUDGET_MS + BUDGET_SLACK_MS + waits / 1e6
    print("budget: main's return -> the process gone %.0f ms (budget %d ms + slack %d ms + %.0f ms of run-queue"
          " waits)" % (took_ms, BUDGET_MS, BUDGET_SLACK_MS, waits / 1e6))
    check(took_ms < bound_ms, "budget: the exit took %.0f ms < %.0f ms" % (took_ms, bound_ms))
    summ = [l for l in lines if l.startswith("Database: ")]
    check(len(summ) == 1 and "INCOMPLETE" in summ[0] and "PROFAGENT_EXIT_TIMEOUT_MS=%d ran out" % BUDGET_MS in summ[0]
          and "profagent recover " in summ[0], "budget: the summary says the DB is incomplete and why (%r)" % summ)
    check(any(l.split()[-1:] == ["p"] and str(ranges) in l.split() for l in lines),
          "budget: the summary still counts every range (from the aggregates)")
    cut_checks("budget", db, ranges, lines)


# ---- PROFAGENT_EXIT_LOAD=handoff: a finisher process completes the DB (session/handoff.c) ----

HOLD_ENV = "PA_TEST_FINISH_HOLD"  # the finisher waits until this file exists before it loads
# the DB thread creates the DB 50 commit intervals after the first frame (at most 0.5 s): a hand-off
# needs it to exist, and the sanitizer build's smaller session may end before 0.5 s
HANDOFF = dict(RING, PROFAGENT_DB_COMMIT_MS="1")


def handoff_run(name, iters, mode, hold=None):
    """det ITER under PROFAGENT_EXIT_LOAD=mode (summary on stderr); returns (process, db)."""
    db = os.path.join(WORK, "%s.db" % name)
    extra = dict(HANDOFF, PROFAGENT_EXIT_LOAD=mode, PROFAGENT_SUMMARY="stderr")
    if hold:
        extra[HOLD_ENV] = hold
    return run([APP, "det", str(iters)], db, extra), db


def det_counts(db, iters, what):
    """The det workload's rows are all there and the DB is finished (db_complete, session_complete)."""
    c = ro(db)
    n = c.execute("SELECT count(*) FROM HGTX_RANGES").fetchone()[0]
    m = c.execute("SELECT count(*) FROM HGTX_MARKS").fetchone()[0]
    meta = dict(c.execute("SELECT key, value FROM META WHERE key IN ('db_complete', 'session_complete',"
                          " 'spool_records_loaded')").fetchall())
    spooled = c.execute("SELECT value FROM SESSION_COUNTERS WHERE name = 'spool_records'").fetchone()
    ic = c.execute("PRAGMA integrity_check").fetchone()[0]
    c.close()
    check(n == iters * 5 and m == iters * 2, "%s: %d ranges, %d marks (%d, %d)" % (what, iters * 5, iters * 2, n, m))
    check(ic == "ok", "%s: integrity_check ok" % what)
    return meta, spooled[0] if spooled else None


def t_handoff_same():
    iters = max(2000, 20000 // SCALE)
    views, reports = [], []
    for mode in ("inline", "handoff"):
        p, db = handoff_run("same-" + mode, iters, mode)
        err = p.stderr.decode(errors="replace")
        dbline = [l for l in err.splitlines() if l.startswith("Database: ")]
        check(p.returncode == 0 and len(dbline) == 1, "%s: exit 0, one Database line (%r)" % (mode, dbline))
        named = dbline and "being completed by the finisher process" in dbline[0]
        check(named if mode == "handoff" else not named, "%s: the summary %s the finisher (%r)"
              % (mode, "names" if mode == "handoff" else "does not name", dbline))
        check(wait_finisher(db), "%s: the finisher ended" % mode)
        check(not os.path.exists(db + ".finishing"), "%s: no lock file left" % mode)
        check(not glob.glob(db + ".*.spool.zst"), "%s: the spool removed once the DB holds it" % mode)
        meta, spooled = det_counts(db, iters, mode)
        check(meta.get("db_complete") == 1 and meta.get("session_complete") == 1 and
              meta.get("spool_records_loaded") == spooled, "%s: complete, every spooled record loaded (%r, %s)"
              % (mode, meta, spooled))
        views.append(db_view(db))
        reports.append({r: report_view(db, r) for r in ("hgtx_sum", "hgtx_pushpop_trace", "hgtx_startend_sum")})
    check(views[0]["schema"] == views[1]["schema"], "inline vs handoff: same tables, indexes and views")
    for t in views[0]:
        check(views[0][t] == views[1].get(t), "inline vs handoff: table %s, same rows (times aside)" % t)
    for r in reports[0]:
        check(reports[0][r] == reports[1][r] and len(reports[0][r]) > 1,
              "inline vs handoff: report %s, same output (%d rows)" % (r, len(reports[0][r]) - 1))
    # the finisher cannot start (fork fails with EAGAIN): one warning, the exit loads the rest itself
    db = os.path.join(WORK, "nofork.db")
    p = run([APP, "det", str(iters)], db, dict(HANDOFF, PROFAGENT_EXIT_LOAD="handoff", PROFAGENT_SUMMARY="stderr",
                                               PA_TEST_FINISH_FAIL="1"))
    err = p.stderr.decode(errors="replace")
    warn = [l for l in err.splitlines() if "finisher" in l]
    check(p.returncode == 0 and len(warn) == 1 and "cannot start the DB's finisher process" in warn[0] and
          "Resource temporarily unavailable" in warn[0], "no finisher (EAGAIN): one warning (%r)" % warn)
    check(not os.path.exists(db + ".finishing"), "no finisher: no lock file")
    meta, spooled = det_counts(db, iters, "no finisher")
    check(meta.get("db_complete") == 1 and meta.get("spool_records_loaded") == spooled,
          "no finisher: the DB is complete when the process is gone (%r)" % meta)
    # a bad value: one message naming the accepted ones, then the default (inline)
    p, db = handoff_run("bad", 100, "sometimes")
    err = p.stderr.decode(errors="replace")
    msgs = [l for l in err.splitlines() if "PROFAGENT_EXIT_LOAD" in l]
    check(p.returncode == 0 and len(msgs) == 1 and "auto|inline|handoff" in msgs[0] and "sometimes" in msgs[0],
          "a bad PROFAGENT_EXIT_LOAD: one message naming the value and auto|inline|handoff (%r)" % msgs)
    check("finisher" not in err and det_counts(db, 100, "bad value, small run")[0].get("db_complete") == 1,
          "a bad value behaves as the default: the DB is completed inline")


def held_finisher(name, iters):
    """A handoff run whose finisher is held (HOLD_ENV) before it loads: (db, hold file, finisher pid)."""
    hold = os.path.join(WORK, name + ".go")
    p, db = handoff_run(name, iters, "handoff", hold)
    pid = finisher_pid(db)
    check(p.returncode == 0 and pid > 0, "%s: the program ended, its finisher %d still holds the DB" % (name, pid))
    return db, hold, pid


def t_handoff_wait():
    iters = max(2000, 20000 // SCALE)
    db, hold, pid = held_finisher("wait", iters)
    if pid <= 0:
        return
    # a reader started now waits for the finisher: its one message first, then the complete report
    st = subprocess.Popen([CLI, "stats", "-r", "hgtx_sum", "-f", "csv", db], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    first = st.stderr.readline()
    check("is being completed by its finisher process (pid %d)" % pid in first,
          "stats waits for the finisher, saying so (%r)" % first)
    alive = finisher_pid(db) == pid
    open(hold, "w").close()  # the finisher may go on now
    out, rest = st.communicate(timeout=300)
    check(alive and st.returncode == 0, "stats: the finisher was still running when stats waited; stats rc %d (%r)"
          % (st.returncode, rest[-500:]))
    check(wait_finisher(db), "the finisher ended")
    meta, spooled = det_counts(db, iters, "after the wait")
    check(meta.get("db_complete") == 1 and meta.get("session_complete") == 1, "the DB is complete (%r)" % meta)
    rows = list(csv.DictReader(io.StringIO(out)))
    got = {r["Range"]: int(r["Instances"]) for r in rows if "Range" in r and "Instances" in r}
    check(got.get("outer") == iters and got.get("se-a", 0) + got.get("se-b", 0) == iters,
          "stats read the complete DB: outer x%d, se-a + se-b x%d (%r)" % (iters, iters, got))
    check("incomplete" not in rest.lower(), "stats: no incomplete-DB warning (%r)" % rest[-300:])


def t_handoff_kill():
    iters = max(2000, 20000 // SCALE)
    db, hold, pid = held_finisher("kill", iters)
    if pid <= 0:
        return
    spool = glob.glob(db + ".*.spool.zst")
    check(len(spool) == 1, "the spool stays while the finisher runs (%r)" % spool)
    if len(spool) != 1:
        return
    # the held finisher holds SQLite's lock: another program's SQLite gets "database is locked"
    try:
        c = sqlite3.connect(db, timeout=0.2)
        got = c.execute("SELECT count(*) FROM HGTX_RANGES").fetchone()
        c.close()
    except sqlite3.OperationalError as e:
        got = str(e)
    check(got == "database is locked", "a reader of the held finisher's DB: locked, no rows (%r)" % (got,))
    # recover while the finisher runs: it waits for it (one message), it does not rebuild under it
    r = subprocess.Popen([CLI, "recover", spool[0]], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = r.stderr.readline()
    check("is being completed by its finisher process (pid %d)" % pid in first,
          "recover waits for the live finisher, saying so (%r)" % first)
    os.kill(pid, signal.SIGKILL)  # killed with the DB's tail not loaded: recover completes it
    out, err = r.communicate(timeout=300)
    check(r.returncode == 0 and ("Database: %s " % db) in out and "completed with the spool's tail" in out,
          "after the kill, recover completes the DB in place (rc %d, %r %r)" % (r.returncode, out, err))
    det_counts(db, iters, "recovered")
    check(not os.path.exists(db + ".finishing"), "recover removed the killed finisher's lock file")


def t_handoff_subst():
    iters = max(2000, 20000 // SCALE)
    db = os.path.join(WORK, "subst.db")
    hold = os.path.join(WORK, "subst.go")
    env = env_for(db, dict(HANDOFF, PROFAGENT_EXIT_LOAD="handoff", PROFAGENT_SUMMARY="stdout", **{HOLD_ENV: hold}))
    # the finisher is held until `hold` exists, which only this test creates, after the shell ended:
    # the command substitution returning proves it did not wait for the finisher
    p = subprocess.run(["bash", "-c", 'x=$("$@"); echo "got ${#x} bytes"; grep -c "^Database: " <<< "$x"', "sh", APP,
                        "det", str(iters)], env=env, capture_output=True, text=True, timeout=300)
    pid = finisher_pid(db)
    check(p.returncode == 0 and p.stdout.split("\n")[1:2] == ["1"] and pid > 0,
          "x=$(app) returned (its summary captured) while the finisher %d still runs (%r)" % (pid, p.stdout))
    open(hold, "w").close()
    check(wait_finisher(db), "the finisher ended once released")
    meta = det_counts(db, iters, "subst")[0]
    check(meta.get("db_complete") == 1, "subst: the finisher completed the DB (%r)" % meta)


def third_party_read(db):
    """What a script reading db with Python's sqlite3 (default timeout, 5 s) gets: (ranges, marks,
    db_complete) or the error's text."""
    try:
        c = sqlite3.connect(db)
        n = c.execute("SELECT count(*) FROM HGTX_RANGES").fetchone()[0]
        m = c.execute("SELECT count(*) FROM HGTX_MARKS").fetchone()[0]
        done = c.execute("SELECT count(*) FROM META WHERE key = 'db_complete' AND value = 1").fetchone()[0]
        c.close()
        return n, m, done
    except sqlite3.OperationalError as e:
        return str(e)


def t_handoff_readers():
    """Another program's SQLite while the finisher completes the DB: the complete DB, or a lock
    wait / "database is locked", never a part."""
    iters = max(2000, 20000 // SCALE)
    whole = (iters * 5, iters * 2, 1)
    db, hold, pid = held_finisher("readers", iters)
    if pid <= 0:
        return
    t0 = time.monotonic()
    got = third_party_read(db)  # Python's default: waits 5 s for the lock, then gives up
    waited = time.monotonic() - t0
    check(got == "database is locked" and waited >= 4.5, "python sqlite3 (default timeout) on the held finisher's"
          " DB: waited %.1f s, then %r (no rows)" % (waited, got))
    # the sqlite3 shell as called without options: no busy handler, the lock at once
    cli = subprocess.run(["sqlite3", db, "SELECT count(*) FROM HGTX_RANGES"], capture_output=True, text=True,
                         timeout=60)
    check(cli.returncode != 0 and "database is locked" in cli.stderr and cli.stdout == "",
          "sqlite3 shell: 'database is locked', no count (rc %d, %r %r)" % (cli.returncode, cli.stdout, cli.stderr))
    # the shell with a timeout, and Python, started now, wait and read the complete DB once released
    waiter = subprocess.Popen(["sqlite3", "-cmd", ".timeout 120000", db,
                               "SELECT count(*) FROM HGTX_RANGES; SELECT value FROM META WHERE key = 'db_complete'"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    res = {}
    th = threading.Thread(target=lambda: res.update(py=third_party_read(db)))
    th.start()
    time.sleep(0.3)
    check(waiter.poll() is None and th.is_alive(), "sqlite3 -cmd '.timeout ...' and python wait for the lock")
    open(hold, "w").close()
    out, err = waiter.communicate(timeout=300)
    th.join(300)
    check(out.split() == [str(iters * 5), "1"] and waiter.returncode == 0,
          "sqlite3 with .timeout read the complete DB (%r %r)" % (out, err))
    check(res.get("py") == whole, "python read the complete DB: %r (%r)" % (res.get("py"), whole))
    check(wait_finisher(db), "the finisher ended")
    check(not os.path.exists(db + "-journal") and not os.path.exists(db + "-wal"),
          "the complete DB is one file (no journal, no WAL)")
    # a poller that reads from the program's start to the end: each read, while the program runs or
    # once it is gone, is either committed rows before the end or the complete DB; after the
    # process is gone never a part
    db2 = os.path.join(WORK, "poll.db")
    for f in glob.glob(db2 + "*"):
        os.unlink(f)
    p = subprocess.Popen([APP, "det", str(iters)], env=env_for(db2, dict(HANDOFF, PROFAGENT_EXIT_LOAD="handoff")),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after, gone_at = [], None
    while True:
        ended = p.poll() is not None
        if ended and gone_at is None:
            gone_at = time.monotonic()
        if os.path.exists(db2):
            r = third_party_read(db2)
            if ended:
                after.append(r)
        if ended and not finisher_pid(db2) and gone_at and time.monotonic() - gone_at > 0.2:
            break
        time.sleep(0.002)
    part = [r for r in after if r != whole and r != "database is locked"]
    check(p.returncode == 0 and after and not part, "after the program's end: %d reads, complete or locked;"
          " parts %r" % (len(after), part[:3]))
    check(after and after[-1] == whole, "the last read: the complete DB (%r)" % (after[-1:],))


def summary_instances(lines, name):
    """The Instances of range `name` in the exit summary's HGTX table (what the aggregator counted:
    an unpaced producer may outrun the rings, so the count can be below what it made)."""
    for l in lines:
        f = l.split()
        if len(f) >= 10 and f[-1] == name and f[0].isdigit():
            return int(f[3])
    return None


def t_handoff_midkill():
    """A finisher killed in the middle of its load: the DB is the last commit (a rollback journal it
    left is rolled back by the next connection), valid, incomplete; recover completes it."""
    ranges = 2000000 // SCALE
    db = os.path.join(WORK, "midkill.db")
    p = run([APP, "progress", str(ranges), "100000000"], db, dict(RING, PROFAGENT_EXIT_LOAD="handoff",
                                                        PROFAGENT_SUMMARY="stderr", PA_TEST_FINISH_KILL_AT="60000"))
    made = summary_instances(p.stderr.decode(errors="replace").splitlines(), "p")
    check(p.returncode == 0 and made, "the program ended (rc %d), the summary counts %s ranges" % (p.returncode, made))
    check(wait_finisher(db), "the finisher is gone")
    hot = os.path.exists(db + "-journal") and open(db + "-journal", "rb").read(1) not in (b"", b"\0")
    print("the killed finisher left %s" % ("a hot journal" if hot else "no hot journal"))
    c = sqlite3.connect(db)
    ic = c.execute("PRAGMA integrity_check").fetchone()[0]
    n = c.execute("SELECT count(*) FROM HGTX_RANGES").fetchone()[0]
    meta = dict(c.execute("SELECT key, value FROM META").fetchall())
    c.close()
    check(ic == "ok" and "db_complete" not in meta and meta.get("session_complete") == 0 and made and n < made,
          "killed mid-load: integrity ok, no db_complete, %d < %s ranges (%s)" % (n, made, ic))
    check(not (os.path.exists(db + "-journal") and open(db + "-journal", "rb").read(1) not in (b"", b"\0")),
          "the first connection rolled the killed transaction back (no hot journal left)")
    spools = glob.glob(db + ".*.spool.zst")
    check(len(spools) == 1, "the spool is kept (%r)" % spools)
    if len(spools) == 1:
        r = subprocess.run([CLI, "recover", spools[0]], capture_output=True, text=True)
        check(r.returncode == 0 and "completed with the spool's tail" in r.stdout, "recover completed it (%s%s)"
              % (r.stdout.strip(), r.stderr.strip()))
        c = sqlite3.connect(db)
        m = c.execute("SELECT count(*) FROM HGTX_RANGES").fetchone()[0]
        c.close()
        check(m == made, "the recovered DB holds every range the summary counted (%d of %s)" % (m, made))


def t_handoff_run():
    """`profagent run` returns with the DB complete (its program's exit waits for the finisher), and
    a plain preloaded run of the same program leaves the large tail to a finisher (auto, the
    default) and ends before it."""
    ranges = 2000000 // SCALE
    for how in ("run", "preload"):
        db = os.path.join(WORK, "run-%s.db" % how)
        env = env_for(db, dict(RING, PROFAGENT_SUMMARY="stderr"))
        if how == "run":
            del env["LD_PRELOAD"]
            argv = [CLI, "run", "--", APP, "progress", str(ranges), "100000000"]
        else:
            argv = [APP, "progress", str(ranges), "100000000"]
        p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
        running = finisher_pid(db)
        r = third_party_read(db) if how == "run" else None
        dbline = [l for l in p.stderr.splitlines() if l.startswith("Database: ")]
        made = summary_instances(p.stderr.splitlines(), "p")
        handed = dbline and "being completed by the finisher process" in dbline[0]
        if how == "run":
            c = ro(db)
            n = c.execute("SELECT count(*) FROM HGTX_RANGES").fetchone()[0]
            meta = dict(c.execute("SELECT key, value FROM META").fetchall())
            c.close()
            check(p.returncode == 0 and not running and handed and "profagent run waits for it" in dbline[0] and
                  made and n == made and meta.get("db_complete") == 1 and meta.get("session_complete") == 1,
                  "profagent run returned with the DB complete: %d of %s ranges, its finisher ended (%r, %r)"
                  % (n, made, dbline, r))
            check(r == (made, 0, 1), "python sqlite3 at once after profagent run: the complete DB (%r)" % (r,))
        else:
            check(p.returncode == 0 and handed, "preloaded, default auto: a finisher completes the DB (%r)" % dbline)
            check(wait_finisher(db), "the finisher ended")
            c = ro(db)
            n = c.execute("SELECT count(*) FROM HGTX_RANGES").fetchone()[0]
            cpu = c.execute("SELECT value FROM META WHERE key = 'finisher_cpu_ms'").fetchone()
            c.close()
            check(made and n == made and cpu and cpu[0] > 0, "the finisher's DB: %d of %s ranges, finisher_cpu_ms %r"
                  % (n, made, cpu))


{"same": t_same, "live": t_live, "kill": t_kill, "reader": t_reader, "exitcut": t_exitcut,
 "exitbudget": t_exitbudget, "handoff_same": t_handoff_same, "handoff_wait": t_handoff_wait,
 "handoff_kill": t_handoff_kill, "handoff_subst": t_handoff_subst, "handoff_readers": t_handoff_readers,
 "handoff_midkill": t_handoff_midkill, "handoff_run": t_handoff_run}[TEST]()
print("%d failure(s)" % len(FAILS))
sys.exit(1 if FAILS else 0)
