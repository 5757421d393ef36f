#!/usr/bin/env python3
"""run_spine.py BUILD_DIR TEST - runs one spine test program under libprofagent.so and checks
the DB (tables of writer/schema.c), the exit summary and `profagent stats` output."""
import csv, glob, io, os, shutil, sqlite3, subprocess, sys, tempfile, time

from spine_util import BRACKET_TOL_NS, FAILS, bracket_miss, brackets, check, preload as spine_preload

BUILD, TEST = sys.argv[1], sys.argv[2]
LIB = os.path.join(BUILD, "lib", "libprofagent.so")
CLI = os.path.join(BUILD, "bin", "profagent")
BIN = os.path.join(BUILD, "tests", "spine")
WORK = tempfile.mkdtemp(prefix="spine_%s_" % TEST)


def preload():
    return spine_preload(LIB)


def run(prog, *args, agent=True, env=None, timeout=60):
    e = {k: v for k, v in os.environ.items() if not k.startswith("PROFAGENT_")}
    e["PROFAGENT_OUTPUT"] = os.path.join(WORK, "out-%p.db")
    e["ASAN_OPTIONS"] = "detect_leaks=0"
    if agent:
        e["LD_PRELOAD"] = preload()
    e.update(env or {})
    t0 = time.monotonic()
    p = subprocess.run([os.path.join(BIN, prog)] + list(args), env=e, capture_output=True, timeout=timeout)
    p.elapsed = time.monotonic() - t0
    dbs = sorted(glob.glob(os.path.join(WORK, "*.db")))
    p.db = dbs[-1] if dbs else None
    sys.stderr.write(p.stderr.decode(errors="replace")[-3000:])
    return p


def db_of(p):
    check(p.db is not None, "a DB was written")
    if p.db is None:
        finish()
    c = sqlite3.connect(p.db)
    c.text_factory = bytes
    check(c.execute("PRAGMA integrity_check").fetchone()[0] == b"ok", "PRAGMA integrity_check")
    return c


def ranges(c, style=None):
    sql = ("SELECT s.value, r.level, r.\"end\" - r.start, r.id, r.parentId, r.globalTid, r.endGlobalTid,"
           " r.unterminated FROM HGTX_RANGES r JOIN STRING_IDS s ON s.id = r.nameId")
    if style is not None:
        sql += " WHERE r.style = %d" % style
    return c.execute(sql + " ORDER BY r.start").fetchall()


def counter(c, name):
    row = c.execute("SELECT value FROM SESSION_COUNTERS WHERE name = ?", (name,)).fetchone()
    return row[0] if row else None


def stats_csv(db, report):
    p = subprocess.run([CLI, "stats", "-r", report, "--format", "csv", db], capture_output=True, timeout=60)
    check(p.returncode == 0, "profagent stats -r %s exits 0 (%s)" % (report, p.stderr.decode(errors="replace")[:200]))
    rows = list(csv.reader(io.StringIO(p.stdout.decode("utf-8", errors="surrogateescape"), newline="")))
    return [r for r in rows if r]


def finish():
    if FAILS:
        print("%d check(s) failed; work dir kept: %s" % (len(FAILS), WORK))
        sys.exit(1)
    shutil.rmtree(WORK, ignore_errors=True)
    sys.exit(0)


def t_nested():
    p = run("spine_nested")
    check(p.returncode == 0 and b"levels ok" in p.stdout, "HGTX returns the right levels")
    c = db_of(p)
    rs = ranges(c, 0)
    outer = [r for r in rs if r[0] == b"outer"]
    inner = [r for r in rs if r[0] == b"inner"]
    check(len(outer) == 10 and len(inner) == 10, "10 outer and 10 inner ranges (%d, %d)" % (len(outer), len(inner)))
    # a sleep never ends early (hard lower bounds); each range lies within the app's own
    # CLOCK_MONOTONIC readings around its push and its pop, however late a loaded machine ran it
    check(all(r[1] == 0 and r[2] >= 40e6 for r in outer), "outer: Lvl 0, >= 40 ms")
    check(all(r[1] == 1 and r[2] >= 10e6 for r in inner), "inner: Lvl 1, >= 10 ms")
    br = brackets(p.stdout)
    se = c.execute("SELECT s.value, r.start, r.\"end\" FROM HGTX_RANGES r JOIN STRING_IDS s ON s.id = r.nameId"
                   " WHERE r.style = 0 ORDER BY r.start, r.level").fetchall()
    check(len(br) == 20 and len(se) == 20 and [b[0] for b in br] == [x[0] for x in se],
          "20 brackets printed, in the order of the ranges' starts (%d, %d)" % (len(br), len(se)))
    miss = [bracket_miss(x[1], x[2], b) for x, b in zip(se, br)]
    check(len(miss) == 20 and not any(miss), "every range starts within its push call and ends within its pop"
          " call (+-%d us; outside by %r ns)" % (BRACKET_TOL_NS // 1000, [m for m in miss if m]))
    ids = {r[3] for r in outer}
    check(all(r[4] in ids for r in inner) and all(r[4] in (0, None) for r in outer), "inner ranges' parent is an outer")
    check(counter(c, "hgtx_misuse_pop_empty") == 1, "pop on empty stack counted once")
    rows = stats_csv(p.db, "hgtx_sum")
    hdr = rows[0]
    col = {h.strip(): i for i, h in enumerate(hdr)}
    by = {r[col["Range"]]: r for r in rows[1:]}
    for name, rr in (("outer", outer), ("inner", inner)):
        r = by.get(name)
        check(r is not None, "hgtx_sum has a row for %s" % name)
        if r:
            check(int(r[col["Instances"]]) == 10, "hgtx_sum %s Instances 10" % name)
            check(int(r[col["Total Time (ns)"]]) == sum(x[2] for x in rr), "hgtx_sum %s total == sum of DB rows" % name)
            d = sorted(x[2] for x in rr)
            # mean of the two middle values, truncated as the spec prints integer statistics
            # (2.3.9: 4018480.5 -> 4018480; 2.3.2: 13487638 / 1495 = 9021.83 -> 9021)
            check(int(r[col["Med (ns)"]]) == (d[4] + d[5]) // 2, "hgtx_sum %s median == mean of the 2 middle rows" % name)
            check(int(r[col["Min (ns)"]]) == d[0] and int(r[col["Max (ns)"]]) == d[-1], "hgtx_sum %s min/max" % name)


def t_xthread():
    p = run("spine_xthread")
    check(p.returncode == 0 and b"distinct" in p.stdout, "start ids distinct")
    c = db_of(p)
    rs = ranges(c, 1)
    check(len(rs) == 1000, "1000 start/end ranges (%d)" % len(rs))
    check(all(r[5] != r[6] for r in rs), "ended on another thread than started")
    check(all(r[7] == 0 for r in rs), "none unterminated")
    # upper bound only rejects garbage end times: the last of 1000 ranges spans the whole ending
    # loop, and a loaded machine can stall it for seconds
    check(all(200000 <= r[2] <= 60e9 for r in rs), "durations >= the 200 us the ender waits")
    check(all(r[1] == -1 for r in rs), "Lvl -1 for start/end")


def threads_totals(c):
    return c.execute("SELECT SUM(records), SUM(drops) FROM THREADS").fetchone()


def t_stress():
    p = run("spine_stress", "50000", "100", timeout=120)
    check(p.returncode == 0, "exit 0")
    c = db_of(p)
    n = c.execute("SELECT COUNT(*) FROM HGTX_RANGES r JOIN STRING_IDS s ON s.id = r.nameId"
                  " WHERE s.value = 'stress'").fetchone()[0]
    check(n == 16 * 50000, "recorded ranges == generated (%d)" % n)
    rec, drops = threads_totals(c)
    check(drops == 0, "no drops at default ring size (%s)" % drops)


def t_tiny_ring():
    pairs = 20000
    p = run("spine_stress", str(pairs), "0", env={"PROFAGENT_RING_SIZE": "4K", "PROFAGENT_RING_FULL": "drop", "PROFAGENT_TRACE": "hgtx"}, timeout=120)
    check(p.returncode == 0, "exit 0")
    c = db_of(p)
    rec, drops = threads_totals(c)
    attempts = 16 * (2 * pairs + 2)  # per thread: name, pushes, pops, exit
    check(drops > 0, "a 4K ring drops (%s)" % drops)
    check(rec + drops == attempts, "records %s + drops %s == generated %d" % (rec, drops, attempts))
    check(str(drops).encode() in p.stderr, "the summary prints the exact drop count %s" % drops)
    # profagent stats on that DB: one warning line naming SESSION_COUNTERS' drops, the rows unchanged
    sc = c.execute("SELECT value FROM SESSION_COUNTERS WHERE name = 'drops'").fetchone()[0]
    s = subprocess.run([CLI, "stats", "-r", "hgtx_sum", "--format", "csv", p.db], capture_output=True, timeout=60)
    warn = [l for l in s.stderr.splitlines() if b"lost data while recording" in l]
    check(s.returncode == 0 and len(warn) == 1 and (b": %d records dropped (full rings)" % sc) in warn[0],
          "stats warns once of the %d drops of SESSION_COUNTERS (%r)" % (sc, s.stderr))
    check(sc == drops, "SESSION_COUNTERS drops %s == THREADS drops %s" % (sc, drops))
    rows = list(csv.reader(io.StringIO(s.stdout.decode(errors="replace"))))
    n = c.execute("SELECT COUNT(*) FROM HGTX_RANGES r JOIN STRING_IDS s ON s.id = r.nameId"
                  " WHERE s.value = 'stress'").fetchone()[0]
    check([int(r[3]) for r in rows[1:] if r and r[-2] == "stress"] == [n],
          "hgtx_sum's Instances stay the DB's %d rows" % n)


def counter_of(c, name):
    r = c.execute("SELECT value FROM SESSION_COUNTERS WHERE name = ?", (name,)).fetchone()
    return r[0] if r else None


def t_startend(mode):
    """Start/end ranges into 4 KiB rings (spine_startend.c): a full ring drops starts and ends
    (counted), and the ranges that cost are reported as cut by drops, never as the program's
    misuse nor as left open: complete ranges + ends whose start was dropped + ranges whose end was
    dropped = ranges issued; the misuse mode's two genuine misuses are counted exactly."""
    p = run("spine_startend", mode, "20000", env={"PROFAGENT_RING_SIZE": "4K", "PROFAGENT_RING_FULL": "drop", "PROFAGENT_SUMMARY": "stderr"},
            timeout=120)
    check(p.returncode == 0, "exit 0")
    out = dict(l.split() for l in p.stdout.decode().splitlines())
    issued, misuse = int(out["issued"]), int(out.get("misuse", 0))
    c = db_of(p)
    drops = counter_of(c, "drops")
    no_start, no_end = counter_of(c, "hgtx_drop_end_no_start"), counter_of(c, "hgtx_drop_start_no_end")
    bad, open_ = counter_of(c, "hgtx_misuse_bad_end"), counter_of(c, "hgtx_unterminated")
    done, stored_open = c.execute("SELECT sum(unterminated = 0), sum(unterminated) FROM HGTX_RANGES r"
                                  " JOIN STRING_IDS s ON s.id = r.nameId WHERE s.value = 'r'").fetchone()
    done, stored_open = done or 0, stored_open or 0
    print("%s: issued %d drops %s complete %d end-without-start %s start-without-end %s misuse %s open %s"
          % (mode, issued, drops, done, no_start, no_end, bad, open_))
    check(drops and drops > 0, "a 4K ring drops (%s)" % drops)
    check(no_start is not None and no_start > 0, "ends whose start was dropped counted (%s)" % no_start)
    check(done + no_start + no_end == issued, "complete %d + end without start %s + start without end %s =="
          " issued %d" % (done, no_start, no_end, issued))
    check(stored_open == no_end, "the ranges whose end was dropped are the stored open ones (%d, %s)"
          % (stored_open, no_end))
    check(bad == misuse, "misuse counted: %s (the program's own: %d)" % (bad, misuse))
    check(open_ == 0, "no range reported as left open by the program (%s)" % open_)
    meta = dict(c.execute("SELECT key, value FROM META WHERE key LIKE 'hgtx_%'").fetchall())
    check(meta.get(b"hgtx_drop_end_no_start") == no_start and meta.get(b"hgtx_drop_start_no_end") == no_end,
          "META holds the same counts (%r)" % meta)
    err = p.stderr
    want = (b"HGTX ranges cut by dropped records (not misuse): %d ends whose start was dropped, %d ranges"
            b" whose end was dropped (not counted as open at exit)" % (no_start, no_end))
    check(want in err, "the summary names the drops' consequences: %r" % want)
    if misuse:
        check(b"HGTX misuse: 0 pop on an empty stack, %d end of an unknown or already-ended id" % misuse in err,
              "the summary's misuse line counts the program's %d" % misuse)
    else:
        check(b"HGTX misuse" not in err, "no misuse line for a correct program")
        check(b"still open at exit" not in err, "no open-at-exit line for a correct program")


def t_osrt_parity():
    a = run("spine_osrt", agent=False)
    b = run("spine_osrt")
    check(a.returncode == 0 and b.returncode == 0, "both runs exit 0")
    check(a.stdout == b.stdout, "same return values and errno with and without the agent")
    if a.stdout != b.stdout:
        print(a.stdout.decode(), "---\n", b.stdout.decode())
    c = db_of(b)
    rows = c.execute("SELECT s.value, o.ret, o.errno, o.globalTid, o.\"end\" - o.start FROM OSRT_API o"
                     " JOIN STRING_IDS s ON s.id = o.nameId").fetchall()
    names = [r[0] for r in rows]
    for fn, ret, err in ((b"nanosleep", -1, 4), (b"pthread_cond_timedwait", 110, None),
                         (b"sem_timedwait", -1, 110), (b"usleep", 0, 0)):
        got = [r for r in rows if r[0] == fn]
        check(len(got) == 1, "one %s row (%d)" % (fn.decode(), len(got)))
        if got:
            check(got[0][1] == ret and (err is None or got[0][2] == err), "%s ret/errno recorded" % fn.decode())
    pid = b.db and int(os.path.basename(b.db)[4:].split(".")[0].split("-")[0])
    check(all(r[3] & 0xffffffff == pid for r in rows), "only the app's (single) thread: the aggregator is not recorded")
    check(all(r[4] >= 1000 for r in rows), "every row >= threshold")
    check(b"mutex" not in b"".join(names), "uncontended mutex locks are not recorded")
    rows = stats_csv(b.db, "osrt_sum")
    check(len(rows) == 1 + len(set(names)), "osrt_sum: one row per function")


NAMES = [b'quote"in', b"comma,in", b"new\nline", b"tab\tin", b"back\\slash", b"ff\xffbyte", b""]


def t_names():
    p = run("spine_names")
    check(p.returncode == 0, "exit 0")
    c = db_of(p)
    vals = set(bytes(v[0]) for v in c.execute("SELECT CAST(value AS BLOB) FROM STRING_IDS"))
    for n in NAMES:
        check(n in vals, "STRING_IDS holds %r byte-exact" % n)
    big = bytes((ord("a") + i % 26) for i in range(100 * 1024))
    check(big in vals, "100 KB name intact (copied at the call)")
    rs = ranges(c, 0)
    check(len(rs) == 9, "9 ranges (%d)" % len(rs))
    for rep in ("hgtx_sum", "hgtx_pushpop_trace"):
        rows = stats_csv(p.db, rep)
        check(len(rows) >= 2 and len({len(r) for r in rows}) == 1, "%s CSV: constant column count" % rep)


def t_exit(mode, status, must):
    p = run("spine_exit", mode, timeout=30)
    check(p.returncode == status, "exit status %d preserved (%d)" % (status, p.returncode))
    check(p.elapsed < 15, "exits promptly (%.1f s)" % p.elapsed)
    c = db_of(p)
    names = [r[0] for r in ranges(c)]
    for n in must:
        check(n in names, "range %s recorded" % n.decode())
    return c


def t_exit_worker():
    c = t_exit("worker_exit", 5, [b"worker", b"main_loop"])
    w = [r for r in ranges(c) if r[0] == b"worker"]
    check(w and w[0][7] == 1, "worker's open range reported unterminated")


def t_exit_detached():
    c = t_exit("detached", 3, [b"detached"])
    tids = {r[5] for r in ranges(c) if r[0] == b"detached"}
    check(len(tids) == 4, "each of the 4 detached threads has ranges (main returns once each ended one): %d"
          % len(tids))


def t_tls_dtor():
    c = t_exit("tls_dtor", 0, [b"thread_body", b"late_dtor"])
    n = [r[0] for r in ranges(c)].count(b"late_dtor")
    check(n == 8, "events of TLS destructors after the ring retired are recorded (%d of 8)" % n)


def t_fork():
    p = run("spine_exit", "fork")
    check(p.returncode == 0, "child ran normally (levels counted) and parent exit 0")
    check(len(glob.glob(os.path.join(WORK, "*.db"))) == 1, "one DB: the child writes none")
    c = db_of(p)
    check(b"parent" in [r[0] for r in ranges(c)], "parent's range recorded")


def t_disabled():
    p = run("spine_nested", env={"PROFAGENT_ENABLE": "0"})
    check(p.returncode == 0 and b"levels ok" in p.stdout, "app runs normally, levels still counted")
    check(not os.listdir(WORK), "no DB and no spool")


TESTS = {
    "nested": t_nested, "xthread": t_xthread, "stress": t_stress, "tiny_ring": t_tiny_ring,
    "osrt_parity": t_osrt_parity, "names": t_names,
    "exit_detached": t_exit_detached,
    "exit_worker": t_exit_worker,
    "exit_atexit": lambda: t_exit("atexit", 7, [b"main_body", b"atexit_before"]),
    "tls_dtor": t_tls_dtor,
    "fork": t_fork, "disabled": t_disabled,
    "startend_self": lambda: t_startend("self"), "startend_cross": lambda: t_startend("cross"),
    "startend_misuse": lambda: t_startend("misuse"),
}
TESTS[TEST]()
finish()
