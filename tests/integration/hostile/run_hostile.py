#!/usr/bin/env python3
"""run_hostile.py BUILD_DIR TEST - a hostile user against the agent: processes racing for one
DB name, chdir() with relative output, output paths that are devices, directories, too long or
unwritable, file size limits below the DB's size."""
import glob, os, re, sqlite3, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "spine"))
from spine_util import FAILS, check, preload  # noqa: E402

BUILD, TEST = sys.argv[1], sys.argv[2]
LIB = os.path.join(BUILD, "lib", "libprofagent.so")
CLI = os.path.join(BUILD, "bin", "profagent")
APP = os.path.join(BUILD, "tests", "hostile", "hostile_app")
WORK = tempfile.mkdtemp(prefix="hostile_%s_" % TEST)
HOST = os.uname().nodename


def env_for(extra=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("PROFAGENT_")}
    e["PROFAGENT_SUMMARY"] = "none"
    e["ASAN_OPTIONS"] = "detect_leaks=0"
    e["LD_PRELOAD"] = preload(LIB)
    e.update(extra or {})
    return e


def run(args, extra=None, cwd=None, prog=APP, timeout=60):
    p = subprocess.run([prog] + list(args), env=env_for(extra), capture_output=True, timeout=timeout,
                       cwd=cwd or WORK)
    p.err = p.stderr.decode(errors="replace")
    sys.stderr.write(p.err[-3000:])
    return p


def range_names(db):
    c = sqlite3.connect(db)
    rows = c.execute("SELECT s.value FROM HGTX_RANGES r JOIN STRING_IDS s ON s.id = r.nameId").fetchall()
    c.close()
    return sorted(r[0] for r in rows)


def warnings(err, var):
    return [l for l in err.splitlines() if l.startswith("profagent:") and var in l]


def t_samename():
    """Eight processes started together, one output name without %p: every DB is written, under
    its own name, holding its own ranges."""
    rounds, procs = 10, 8
    for r in range(rounds):
        d = os.path.join(WORK, "r%d" % r)
        os.mkdir(d)
        at = time.time_ns() + 600_000_000  # all eight reach exit() at the same instant
        ps = [subprocess.Popen([APP, "ranges", "200", "p%d" % i, str(at)], cwd=d, stderr=subprocess.PIPE,
                               env=env_for({"PROFAGENT_OUTPUT": "same.db"})) for i in range(procs)]
        errs = [p.communicate(timeout=60)[1].decode(errors="replace") for p in ps]
        rcs = [p.returncode for p in ps]
        dbs = sorted(glob.glob(os.path.join(d, "same*.db")))
        ok = len(dbs) == procs and all(rc == 0 for rc in rcs)
        got = sorted(set(n for db in dbs for n in set(range_names(db)))) if dbs else []
        per_db = [len(range_names(db)) for db in dbs]
        ok = ok and got == sorted("p%d" % i for i in range(procs)) and per_db == [200] * procs
        spools = glob.glob(os.path.join(d, "*.spool.zst"))
        check(ok and not spools, "round %d: %d DBs (want %d), ranges per DB %s, names %s, rc %s, spools left %d"
              % (r, len(dbs), procs, per_db, got, rcs, len(spools)))
        for e in errs:
            if "profagent:" in e:
                check(False, "round %d: no agent message expected, got: %s" % (r, e.strip()[:300]))


def t_chdir():
    """A relative output name and a chdir() in the middle: the DB lands where the process
    started, with every trace row (before and after the chdir)."""
    start, other = os.path.join(WORK, "start"), os.path.join(WORK, "other")
    os.mkdir(start)
    os.mkdir(other)
    for out in ("rel-%p.db", "./sub/rel-%p.db"):
        if out.startswith("./sub"):
            os.makedirs(os.path.join(start, "sub"), exist_ok=True)
        p = run(["chdir", other], {"PROFAGENT_OUTPUT": out}, cwd=start)
        check(p.returncode == 0, "%s: exit 0 (%d)" % (out, p.returncode))
        where = os.path.join(start, os.path.dirname(out))
        dbs = glob.glob(os.path.join(where, "rel-*.db"))
        check(len(dbs) == 1, "%s: one DB in the start directory %s (%s)" % (out, where, dbs))
        check(glob.glob(os.path.join(other, "*")) == [], "%s: nothing in the chdir target (%s)"
              % (out, os.listdir(other)))
        if dbs:
            n = range_names(dbs[0])
            check(n == ["after"] * 10 + ["before"] * 10, "%s: the 20 trace rows (got %d: %s)"
                  % (out, len(n), sorted(set(n))))
            os.unlink(dbs[0])
        check(glob.glob(os.path.join(where, "*.spool.zst")) == [], "%s: no spool left" % out)


def t_paths():
    """Output paths that are directories, devices, too long, or where nothing can be created."""
    d = os.path.join(WORK, "d")
    os.mkdir(d)
    cwd = os.path.join(WORK, "cwd")
    os.mkdir(cwd)

    def one(value, want_dir, warn, extra=None, name=r"profagent-%s-\d+\.db" % re.escape(HOST)):
        before = set(os.listdir(want_dir))
        e = {"PROFAGENT_OUTPUT": value}
        e.update(extra or {})
        p = run(["ranges", "3", "x"], e, cwd=cwd)
        new = sorted(set(os.listdir(want_dir)) - before)
        pid_db = [f for f in new if re.fullmatch(name, f)]
        check(p.returncode == 0, "%r: exit 0 (%d)" % (value, p.returncode))
        check(len(new) == 1 and len(pid_db) == 1, "%r: the DB %s in %s (new files: %s)"
              % (value, name, want_dir, new))
        if pid_db:
            check(range_names(os.path.join(want_dir, pid_db[0])) == ["x"] * 3, "%r: its 3 ranges" % value)
            os.unlink(os.path.join(want_dir, pid_db[0]))
        w = warnings(p.err, "PROFAGENT_OUTPUT")
        check(len(w) == (1 if warn else 0), "%r: %s warning naming PROFAGENT_OUTPUT (%s)"
              % (value, "one" if warn else "no", w))
        return p

    one(d, d, False)                 # an existing directory
    one(d + "/", d, False)           # dir/
    one(".", cwd, False)
    one("./", cwd, False)
    one("/dev/null", cwd, True)      # a device: refused, default name here
    one("/dev/zero", cwd, True)
    fifo = os.path.join(WORK, "fifo")
    os.mkfifo(fifo)
    one(fifo, cwd, True)             # a FIFO
    one("/sys/kernel/hostile.db", cwd, True, name="hostile.db")  # nothing can be created there (even as root)
    one(os.path.join(d, "n" * 256 + ".db"), d, True)  # over NAME_MAX: default name, same dir
    for stray in ("/dev/null-1", "/dev/zero-1", "/-1", fifo + "-1", os.path.join(cwd, ".-1"),
                  os.path.join(cwd, "-1"), os.path.join(WORK, "d-1")):
        check(not os.path.exists(stray), "no stray file %s" % stray)

    # PROFAGENT_SPOOL_DIR that cannot be used: named in the one warning, DB still complete
    p = run(["ranges", "3", "s"], {"PROFAGENT_OUTPUT": os.path.join(d, "s.db"),
                                   "PROFAGENT_SPOOL_DIR": os.path.join(WORK, "missing")}, cwd=cwd)
    w = warnings(p.err, "PROFAGENT_SPOOL_DIR")
    check(p.returncode == 0 and len(w) == 1, "bad spool dir: one warning naming PROFAGENT_SPOOL_DIR (%s)" % w)
    check(os.path.exists(os.path.join(d, "s.db")) and range_names(os.path.join(d, "s.db")) == ["s"] * 3,
          "bad spool dir: the DB holds its 3 ranges")

    # the summary to a file that cannot take it: one warning, the summary on stderr instead
    p = run(["ranges", "3", "f"], {"PROFAGENT_OUTPUT": os.path.join(d, "f.db"),
                                   "PROFAGENT_SUMMARY": "file:/dev/full"}, cwd=cwd)
    w = warnings(p.err, "PROFAGENT_SUMMARY")
    check(p.returncode == 0 and len(w) == 1 and "/dev/full" in w[0] and "No space left" in w[0],
          "summary file:/dev/full: one warning naming PROFAGENT_SUMMARY and the error (%s)" % w)
    check("profagent summary" in p.err, "summary file:/dev/full: the summary is printed on stderr")


def t_groups():
    """A bad PROFAGENT_CALLSTACK_GROUPS rule: the message names the variable."""
    e = {"PROFAGENT_OUTPUT": os.path.join(WORK, "g.db"), "PROFAGENT_SUMMARY": "stderr",
         "PROFAGENT_CALLSTACK_GROUPS": "nameonly;ok=libfoo",
         "ZE_ENABLE_ALT_DRIVERS": os.path.join(BUILD, "lib", "libze_simdev.so")}
    p = run([], e, prog=os.path.join(BUILD, "bin", "leaks"))
    bad = [l for l in p.err.splitlines() if "nameonly" in l]
    check(p.returncode == 0, "leaks: exit 0 (%d)" % p.returncode)
    check(len(bad) == 1 and "PROFAGENT_CALLSTACK_GROUPS" in bad[0],
          "the rejected rule's message names PROFAGENT_CALLSTACK_GROUPS (%s)" % bad)


def t_fsize():
    """RLIMIT_FSIZE below the DB's size: the application keeps its exit status (no SIGXFSZ),
    the failure is reported, the spool is kept, no partial DB is left; a small session's DB
    fits a 1 MiB limit."""
    d = os.path.join(WORK, "fs")
    os.mkdir(d)
    out = os.path.join(d, "fs.db")
    p = run(["fsize", str(1 << 20), "20"], {"PROFAGENT_OUTPUT": out})
    check(p.returncode == 21, "20 ranges under a 1 MiB limit: exit 21 (%d)" % p.returncode)
    check(os.path.exists(out) and range_names(out) == ["fsize"] * 20, "20 ranges: the DB is written, below 1 MiB (%d bytes)"
          % (os.path.getsize(out) if os.path.exists(out) else -1))
    check(glob.glob(os.path.join(d, "*.spool.zst")) == [], "20 ranges: no spool left")
    os.unlink(out) if os.path.exists(out) else None
    for i in range(20):
        p = run(["fsize", "200000", "60000"], {"PROFAGENT_OUTPUT": out}, timeout=30)
        check(p.returncode == 21, "run %d, 60 k ranges under a 200 kB limit: exit 21, not killed by SIGXFSZ (%d)"
              % (i, p.returncode))
        spools = glob.glob(os.path.join(d, "*.spool.zst"))
        check(len(spools) == 1, "run %d: the spool is kept (%s)" % (i, spools))
        check(not os.path.exists(out), "run %d: no partial DB left" % i)
        msg = [l for l in p.err.splitlines() if "could not be written" in l and "spool kept" in l]
        check(len(msg) == 1, "run %d: one message says the DB could not be written and the spool is kept" % i)
        every = [l for l in p.err.splitlines() if l.startswith("profagent:")]
        check(len(every) == 1, "run %d: that is the only agent message (%d: %s)" % (i, len(every), every[:4]))
        check(len(msg) == 1 and "file size limit RLIMIT_FSIZE = 200000 bytes" in msg[0],
              "run %d: the message names the cause (file size limit)" % i)
        for s in spools:
            os.unlink(s)


# the exit's load of a large tail on a loaded machine (a sanitizer build) must not be cut by the
# default 5 s budget: these tests are about the file size limit, not the exit's bound
SLOW_MS = "60000"


def agent_lines(err):
    return [l for l in err.splitlines() if l.startswith("profagent:")]


def db_check(path, wal=True):
    """(integrity_check, HGTX_RANGES count, META db_complete) of a copy of the DB `path` (with its
    -wal when `wal`, else its main file alone), read where no limit applies; the copy keeps the
    original as it was left (a reader checkpoints the WAL at its close)."""
    import shutil
    d = tempfile.mkdtemp(dir=WORK)
    cp = os.path.join(d, "copy.db")
    shutil.copyfile(path, cp)
    if wal and os.path.exists(path + "-wal"):
        shutil.copyfile(path + "-wal", cp + "-wal")
    try:
        c = sqlite3.connect(cp)
        ok = c.execute("PRAGMA integrity_check").fetchone()[0]
        n = c.execute("SELECT count(*) FROM HGTX_RANGES").fetchone()[0]
        done = c.execute("SELECT count(*) FROM META WHERE key = 'db_complete' AND value = 1").fetchone()[0]
        c.close()
        return ok, n, done
    except sqlite3.DatabaseError as e:
        return str(e), -1, 0


def recover_no_limit(spool, out):
    return subprocess.run([CLI, "recover", spool, "-o", out], capture_output=True, timeout=120, cwd=WORK,
                          env={k: v for k, v in os.environ.items() if not k.startswith("PROFAGENT_")})


def run_fsize(limit, mode, out, d, tag=""):
    """hostile_app under RLIMIT_FSIZE `limit` bytes writing 600 k ranges into `out` with exit load
    `mode` and a long exit budget (a cut load is not what the fsize tests check): the application's
    status must stay 21 (never SIGXFSZ from the agent)."""
    p = run(["fsize", str(limit), "600000"], {"PROFAGENT_OUTPUT": out, "PROFAGENT_EXIT_LOAD": mode,
                                              "PROFAGENT_EXIT_TIMEOUT_MS": SLOW_MS}, cwd=d)
    check(p.returncode == 21, "%sexit 21, not killed by SIGXFSZ (%d)" % (tag, p.returncode))
    return p


def t_fsizespool():
    """RLIMIT_FSIZE 400 kB, below the spool's ~1 MB for 600 k ranges (and the DB's): the spool stops
    at the limit; one message names the limit, the spool and how many records it kept; the
    application's status is unchanged; `profagent recover` (without the limit) builds a DB of
    exactly those records: the first ranges, without a hole."""
    d = os.path.join(WORK, "fsp")
    os.mkdir(d)
    out = os.path.join(d, "fsp.db")
    for mode in ("inline", "handoff"):
        p = run_fsize(400000, mode, out, d, mode + ": ")
        msgs = agent_lines(p.err)
        check(len(msgs) == 1, "%s: exactly one agent message (%d: %s)" % (mode, len(msgs), msgs[:4]))
        spools = glob.glob(os.path.join(d, "*.spool.zst"))
        check(len(spools) == 1 and not os.path.exists(out), "%s: the spool kept, no DB (%s)" % (mode, os.listdir(d)))
        m = re.search(r"RLIMIT_FSIZE = 400000 bytes.* stopped the spool (\S+) after its first (\d+) records",
                      msgs[0] if msgs else "")
        check(m is not None and spools and m.group(1) == spools[0],
              "%s: the message names the limit, the spool and the records kept (%s)" % (mode, msgs[:1]))
        if m and spools:
            rec = os.path.join(d, "rec-%s.db" % mode)
            r = recover_no_limit(spools[0], rec)
            check(r.returncode == 0 and os.path.exists(rec), "%s: recover builds a DB (rc %d)" % (mode, r.returncode))
            if os.path.exists(rec):
                c = sqlite3.connect(rec)
                loaded = c.execute("SELECT value FROM META WHERE key = 'spool_records_loaded'").fetchone()
                n, lo, hi = c.execute("SELECT count(*), min(id), max(id) FROM HGTX_RANGES").fetchone()
                c.close()
                check(loaded is not None and int(loaded[0]) == int(m.group(2)),
                      "%s: the recovered DB holds the %s records the message names (%s)" % (mode, m.group(2), loaded))
                check(0 < n < 600000 and lo == 1 and hi == n, "%s: the first %d ranges, ids 1..%s without a hole"
                      % (mode, n, hi))
        for f in glob.glob(os.path.join(d, "*")):
            os.unlink(f)


def t_fsizefin():
    """PROFAGENT_EXIT_LOAD=handoff and a 3 MB file size limit below the DB's ~28 MB: a finisher
    (its stderr is /dev/null) would fail unheard; the exit completes the DB itself and the user
    gets one message naming the limit and the kept spool; no DB, journal or lock file is left;
    `profagent recover` of the spool (without the limit) builds the DB of all 600 k ranges."""
    d = os.path.join(WORK, "ffin")
    os.mkdir(d)
    out = os.path.join(d, "ffin.db")
    p = run_fsize(3000000, "handoff", out, d)
    time.sleep(1)  # a finisher, if one was started, ends meanwhile
    msgs = agent_lines(p.err)
    check(len(msgs) == 1 and "RLIMIT_FSIZE = 3000000 bytes" in msgs[0] and "spool kept" in msgs[0],
          "one message naming the limit and the kept spool (%d: %s)" % (len(msgs), msgs[:4]))
    spools = glob.glob(os.path.join(d, "*.spool.zst"))
    left = sorted(f for f in os.listdir(d) if not f.endswith(".spool.zst"))
    check(len(spools) == 1 and left == [], "the spool kept, nothing else left (%s)" % sorted(os.listdir(d)))
    if spools and msgs:
        check(spools[0] in msgs[0], "the message names the spool %s" % spools[0])
        rec = os.path.join(d, "rec.db")
        r = recover_no_limit(spools[0], rec)
        ok, n, done = db_check(rec) if r.returncode == 0 and os.path.exists(rec) else ("no DB", -1, 0)
        check(ok == "ok" and n == 600000, "recover builds a valid DB of the 600000 ranges (%s, %d; %s)"
              % (ok, n, r.stdout.decode(errors="replace").strip() + r.stderr.decode(errors="replace").strip()))
    for f in glob.glob(os.path.join(d, "*")):
        os.unlink(f)
    # a projection that was wrong (PA_TEST_FINISH_NO_FIT=1: the finisher starts and fails): its
    # message is in <spool>.why; `profagent stats` on the missing DB and `profagent recover` say
    # it, recover then removes it; `profagent run`, which waits for the finisher, says it at once
    for how in ("preload", "run"):
        e = {"PROFAGENT_OUTPUT": out, "PROFAGENT_EXIT_LOAD": "handoff", "PA_TEST_FINISH_NO_FIT": "1",
             "PROFAGENT_EXIT_TIMEOUT_MS": SLOW_MS}
        if how == "run":  # profagent run preloads the agent itself
            env = env_for(e)
            del env["LD_PRELOAD"]
            p = subprocess.run([CLI, "run", "--", APP, "fsize", "3000000", "600000"], env=env, capture_output=True,
                               timeout=120, cwd=d)
            p.err = p.stderr.decode(errors="replace")
            sys.stderr.write(p.err[-3000:])
        else:
            p = run(["fsize", "3000000", "600000"], e, cwd=d)
        check(p.returncode == 21, "%s, finisher: exit 21 (%d)" % (how, p.returncode))
        for _ in range(100):  # the finisher's end (PREFIX.finishing gone)
            if not glob.glob(os.path.join(d, "*.finishing")):
                break
            time.sleep(0.1)
        spools = glob.glob(os.path.join(d, "*.spool.zst"))
        left = sorted(f for f in os.listdir(d) if not f.endswith((".spool.zst", ".why")))
        msgs = agent_lines(p.err)
        want = "RLIMIT_FSIZE = 3000000 bytes"
        handed = len(spools) == 1 and os.path.exists(spools[0] + ".why")
        if not handed:
            # the DB thread reached the limit while the program ran (a slow build): no finisher
            # is started, the exit says it itself: the inline outcome, checked as such
            print("figure: %s: the DB failed before the exit, no finisher started" % how)
            check(len(spools) == 1 and left == [] and len(msgs) == 1 and want in msgs[0] and "spool kept" in msgs[0],
                  "%s, no finisher: the spool and one message naming the limit (%s, %s)"
                  % (how, sorted(os.listdir(d)), msgs[:3]))
            for f in glob.glob(os.path.join(d, "*")):
                os.unlink(f)
            continue
        check(left == [], "%s, finisher: the spool and its .why, nothing else (%s)" % (how, sorted(os.listdir(d))))
        if how == "run":
            check(len(msgs) == 1 and want in msgs[0] and "finisher" in msgs[0],
                  "run, finisher: profagent run says the finisher's message once (%d: %s)" % (len(msgs), msgs[:3]))
        else:
            check(msgs == [], "preload, finisher: the application's stderr gets nothing from it (%s)" % msgs[:3])
        if len(spools) != 1:
            continue
        st = cli(["stats", "-r", "hgtx_sum", out])
        lines = [l for l in st.err.splitlines() if l.startswith("profagent:")]
        check(st.returncode == 1 and len(lines) == 1 and want in lines[0] and "finisher" in lines[0],
              "%s, finisher: profagent stats on the missing DB says why, once (%s)" % (how, lines))
        rec = os.path.join(d, "rec.db")
        r = recover_no_limit(spools[0], rec)
        rerr = r.stderr.decode(errors="replace")
        check(r.returncode == 0 and rerr.count(want) == 1, "%s, finisher: recover says it once and builds a DB"
              " (rc %d, %s)" % (how, r.returncode, rerr.strip()[-300:]))
        ok, n, done = db_check(rec) if os.path.exists(rec) else ("no DB", -1, 0)
        check(ok == "ok" and n == 600000, "%s, finisher: the recovered DB holds the 600000 ranges (%s, %d)"
              % (how, ok, n))
        check(not os.path.exists(spools[0] + ".why"), "%s, finisher: recover removed the .why" % how)
        for f in glob.glob(os.path.join(d, "*")):
            os.unlink(f)


def t_fsizewal():
    """A 20 MB file size limit below the DB's ~28 MB, above its WAL's share: the DB is complete
    only with its -wal (its WAL cannot be copied back); the main file is never left half
    checkpointed (alone it is a valid, older DB); one message says the -wal must be kept; the
    status is unchanged; inline and with the default exit load (a finisher would fail unheard)."""
    d = os.path.join(WORK, "fwal")
    os.mkdir(d)
    out = os.path.join(d, "fwal.db")
    for mode in ("inline", "auto"):
        p = run_fsize(20000000, mode, out, d, mode + ": ")
        time.sleep(1)
        msgs = agent_lines(p.err)
        check(len(msgs) == 1 and "RLIMIT_FSIZE = 20000000 bytes" in msgs[0] and out + "-wal" in msgs[0],
              "%s: one message naming the limit and the -wal to keep (%d: %s)" % (mode, len(msgs), msgs[:4]))
        check(os.path.exists(out) and os.path.exists(out + "-wal"), "%s: the DB and its -wal (%s)"
              % (mode, sorted(os.listdir(d))))
        check(glob.glob(os.path.join(d, "*.spool.zst")) == [], "%s: no spool left (the DB holds it all)" % mode)
        if os.path.exists(out):
            ok, n, done = db_check(out)
            check(ok == "ok" and n == 600000 and done == 1, "%s: with its -wal the DB is valid, complete, with the"
                  " 600000 ranges (%s, %d, db_complete %d)" % (mode, ok, n, done))
            ok, n, done = db_check(out, wal=False)
            check(ok == "ok" and 0 < n <= 600000, "%s: its main file alone is a valid DB too (%s, %d ranges)"
                  % (mode, ok, n))
            check(os.path.getsize(out) <= 20000000, "%s: the main file stayed within the limit (%d)"
                  % (mode, os.path.getsize(out)))
        for f in glob.glob(os.path.join(d, "*")):
            os.unlink(f)


def t_xfsz():
    """stderr a file already past the file size limit (1 MiB): the agent's warning (an unknown
    PROFAGENT_* variable, on the main thread at start) and its summary there fail with EFBIG and
    do not kill the application by SIGXFSZ; status, output and SIGXFSZ count as without the
    agent, whether it keeps SIGXFSZ's default action or counts it in a handler, writes to that
    stderr itself or not; the DB (below the limit) is written unless the application's own write
    killed it."""
    import resource
    lim = 1 << 20

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (lim, lim))
    for handle, write in ((0, 0), (1, 0), (1, 1), (0, 1)):
        got = []
        for agent in (False, True):
            log = os.path.join(WORK, "xfsz-%d%d%d.log" % (handle, write, agent))
            with open(log, "wb") as f:
                f.write(b"x" * (lim + 1))
            out = os.path.join(WORK, "xfsz-%d%d.db" % (handle, write))
            e = env_for({"PROFAGENT_OUTPUT": out, "PROFAGENT_SUMMARY": "stderr", "PROFAGENT_BOGUS": "1"})
            if not agent:
                del e["LD_PRELOAD"]
            with open(log, "ab") as f:
                p = subprocess.run([APP, "xfsz", str(handle), str(write)], env=e, stdout=subprocess.PIPE,
                                   stderr=f, timeout=60, cwd=WORK, preexec_fn=limit)
            got.append((p.returncode, p.stdout))
            check(os.path.getsize(log) == lim + 1, "handle %d write %d agent %d: stderr file unchanged (%d)"
                  % (handle, write, agent, os.path.getsize(log)))
            if agent and not (write and not handle):  # else the application's own write kills it
                check(os.path.exists(out) and range_names(out) == ["xfsz"] * 3,
                      "handle %d write %d: the DB holds the 3 ranges" % (handle, write))
        want = -25 if (write and not handle) else 0
        check(got[0][0] == want, "handle %d write %d: without the agent: status %d (%d)"
              % (handle, write, want, got[0][0]))
        check(got[1] == got[0], "handle %d write %d: under the agent: status and output as without it (%s vs %s)"
              % (handle, write, got[1], got[0]))


def t_limits():
    """The DB cannot even be created (RLIMIT_NOFILE 4: SQLite cannot open it; RLIMIT_FSIZE 8192:
    its first page write fails): the application's output and status are those without the
    agent, the agent says so in exactly one line naming the limit, its value and the kept spool
    (not one line per failed table), and `profagent recover` on that spool (without the limit)
    builds a valid DB holding every range."""
    cases = [("nofile", ["nofile", "4", "50"], 22, b"nofile done\n",
              "open files limit RLIMIT_NOFILE = 4; raise it with ulimit -n"),
             ("fsize", ["fsize", "8192", "50"], 21, b"", "file size limit RLIMIT_FSIZE = 8192 bytes")]
    for name, args, status, stdout, cause in cases:
        d = os.path.join(WORK, "lim_" + name)
        os.mkdir(d)
        plain = subprocess.run([APP] + args, capture_output=True, timeout=60, cwd=d)
        check(plain.returncode == status and plain.stdout == stdout, "%s without the agent: exit %d (%d)"
              % (name, status, plain.returncode))
        p = run(args, {"PROFAGENT_OUTPUT": os.path.join(d, "lim.db")}, cwd=d)
        check(p.returncode == plain.returncode and p.stdout == plain.stdout,
              "%s under the agent: same status and output (%d %r)" % (name, p.returncode, p.stdout))
        msgs = [l for l in p.err.splitlines() if l.startswith("profagent:")]
        check(len(msgs) == 1, "%s: exactly one agent message (%d: %s)" % (name, len(msgs), msgs[:4]))
        check(len(msgs) == 1 and cause in msgs[0] and "spool kept" in msgs[0],
              "%s: the message names the cause '%s' and the kept spool (%s)" % (name, cause, msgs[:1]))
        check(not os.path.exists(os.path.join(d, "lim.db")), "%s: no partial DB left" % name)
        spools = glob.glob(os.path.join(d, "*.spool.zst"))
        check(len(spools) == 1, "%s: the spool is kept (%s)" % (name, spools))
        if len(spools) != 1:
            continue
        rec = os.path.join(d, "rec.db")
        r = subprocess.run([CLI, "recover", spools[0], "-o", rec], capture_output=True, timeout=60, cwd=d,
                           env={k: v for k, v in os.environ.items() if not k.startswith("PROFAGENT_")})
        check(r.returncode == 0 and os.path.exists(rec), "%s: recover builds a DB (rc %d, %s)"
              % (name, r.returncode, r.stderr.decode(errors="replace").strip()[-300:]))
        if os.path.exists(rec):
            c = sqlite3.connect(rec)
            ok = c.execute("PRAGMA integrity_check").fetchone()[0]
            c.close()
            check(ok == "ok", "%s: the recovered DB is valid (%s)" % (name, ok))
            check(range_names(rec) == [name] * 50, "%s: the recovered DB holds the 50 ranges (%d)"
                  % (name, len(range_names(rec))))


def t_oldcond():
    """A program bound to pthread_cond_*@GLIBC_2.2.5 (old and static initialisation): runs as
    without the agent, 20 times, and its waits are recorded under their names."""
    prog = os.path.join(BUILD, "tests", "hostile", "hostile_oldcond")
    plain = subprocess.run([prog], capture_output=True, timeout=60)
    check(plain.returncode == 0 and plain.stdout == b"handoffs 8000\n", "without the agent: 8000 hand-offs")
    for i in range(20):
        out = os.path.join(WORK, "oc%d.db" % i)
        try:
            p = run([], {"PROFAGENT_OUTPUT": out, "PROFAGENT_OSRT_THRESHOLD_NS": "0"}, prog=prog, timeout=30)
        except subprocess.TimeoutExpired:
            check(False, "run %d: hangs (30 s)" % i)
            continue
        check(p.returncode == 0 and p.stdout == b"handoffs 8000\n", "run %d: exit 0 with 8000 hand-offs (rc %d, %r)"
              % (i, p.returncode, p.stdout[:40]))
        if i == 0 and os.path.exists(out):
            c = sqlite3.connect(out)
            rows = dict(c.execute("SELECT s.value, count(*) FROM OSRT_API o JOIN STRING_IDS s ON s.id = o.nameId"
                                  " GROUP BY s.value").fetchall())
            check(rows.get("pthread_cond_wait", 0) > 0 and rows.get("pthread_cond_timedwait", 0) > 0,
                  "the old-ABI waits are recorded as pthread_cond_wait / pthread_cond_timedwait (%s)" % rows)
            bad = c.execute("SELECT count(*) FROM OSRT_API o JOIN STRING_IDS s ON s.id = o.nameId"
                            " WHERE s.value LIKE 'pthread_cond%' AND o.ret NOT IN (0, 110)").fetchone()[0]
            check(bad == 0, "every recorded wait returned 0 or ETIMEDOUT (%d others)" % bad)


def deep_db(depth):
    db = os.path.join(WORK, "deep%d.db" % depth)
    # a sanitizer build on a loaded machine needs more than the default 5 s to write 200 k ranges
    p = run(["deep", str(depth)], {"PROFAGENT_OUTPUT": db, "PROFAGENT_RING_SIZE": "256M",
                                   "PROFAGENT_EXIT_TIMEOUT_MS": "120000"}, timeout=300)
    check(p.returncode == 0 and os.path.exists(db), "deep %d: DB written" % depth)
    return db


def expected_pushpop(db):
    """hgtx_pushpop_trace's CSV computed here from HGTX_RANGES: stacks by walking parentId in
    Python, children totals by counting, rows ordered by (start, id)."""
    c = sqlite3.connect(db)
    rows = c.execute("SELECT r.id, r.parentId, r.start, r.end, r.globalTid, s.value, r.unterminated FROM HGTX_RANGES r"
                     " JOIN STRING_IDS s ON s.id = r.nameId WHERE r.style = 0").fetchall()
    c.close()
    parent = {r[0]: r[1] for r in rows}
    dchild, nchild = {}, {}
    for r in rows:
        if r[1] in parent:
            nchild[r[1]] = nchild.get(r[1], 0) + 1
            dchild[r[1]] = dchild.get(r[1], 0) + (0 if r[6] else r[3] - r[2])
    yield "Row#,Start (ns),End (ns),Duration (ns),DurChild (ns),DurNonChild (ns),Name,PID,TID,Lvl,NumChild," \
          "RangeId,ParentId,RangeStack,NameTree,\n"
    # stacks built incrementally along the parent chain (memoised prefix of the parent)
    memo = {}
    for n, (rid, par, start, end, gtid, name, unterm) in enumerate(sorted(rows, key=lambda r: (r[2], r[0])), 1):
        chain = []
        x = rid
        while x in parent and x not in memo:
            chain.append(x)
            x = parent[x] if parent[x] in parent else None
        base = memo.get(x, ("", -1)) if x is not None else ("", -1)
        for y in reversed(chain):
            base = (base[0] + ":%d" % y, base[1] + 1)
            memo[y] = base
        stack, lvl = memo[rid]
        dc = dchild.get(rid, 0)
        yield '%d,%d,%d,%d,%d,%d,"%s",%d,%d,%d,%d,%d,%s,"%s","%s",\n' % (
            n, start, end, end - start, dc, end - start - dc, name, gtid >> 32, gtid & 0xffffffff, lvl,
            nchild.get(rid, 0), rid, str(par) if par in parent else '"-"', stack, "-" * lvl + name)


def t_deep():
    """hgtx_pushpop_trace on 2000- and 8000-deep nesting: byte-exact against a computation from
    the DB in Python; then rows=5 on a 200000-deep thread must cost only its rows: it finishes
    in seconds under a 64 MiB file size limit (no temp store growing with depth^2)."""
    for depth in (2000, 8000):
        db = deep_db(depth)
        out = os.path.join(WORK, "deep%d.csv" % depth)
        t0 = time.monotonic()
        with open(out, "wb") as f:
            p = subprocess.run([CLI, "stats", "-r", "hgtx_pushpop_trace", db], stdout=f, stderr=subprocess.PIPE,
                               timeout=300)
        dt = time.monotonic() - t0
        check(p.returncode == 0, "deep %d: report exit 0 (%d, %s)" % (depth, p.returncode, p.stderr[-300:]))
        nbytes = os.path.getsize(out)
        want_bytes, first_bad, nlines = 0, None, 0
        with open(out, "r") as f:
            for i, want in enumerate(expected_pushpop(db)):
                got = f.readline()
                want_bytes += len(want)
                nlines += 1
                if got != want and first_bad is None:
                    first_bad = (i, got[:200], want[:200])
            extra = f.read(1)
        check(first_bad is None and not extra, "deep %d: %d lines equal the independent computation (first"
              " difference: %s)" % (depth, nlines, first_bad))
        check(nbytes == want_bytes, "deep %d: %d bytes, as computed (%d)" % (depth, nbytes, want_bytes))
        print("figure: deep %d: %d rows, %d bytes of CSV in %.2f s" % (depth, nlines - 1, nbytes, dt))
        os.unlink(out)
    db = deep_db(200000)
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 20, 64 << 20))
    t0 = time.monotonic()
    try:
        p = subprocess.run([CLI, "stats", "-r", "hgtx_pushpop_trace:rows=5", db], capture_output=True, timeout=60,
                           preexec_fn=limit)
    except subprocess.TimeoutExpired:
        check(False, "deep 200000, rows=5: finishes within 60 s")
        return
    dt = time.monotonic() - t0
    lines = p.stdout.decode().splitlines()
    check(p.returncode == 0 and len(lines) == 6, "deep 200000, rows=5: exit 0 with 5 rows (rc %d, %d lines, %s)"
          % (p.returncode, len(lines), p.stderr[-300:]))
    gen = expected_pushpop_first(db, 5)
    check(lines[1:] == gen, "deep 200000, rows=5: the 5 rows as computed (%s vs %s)" % (lines[1:2], gen[:1]))
    check(dt < 30, "deep 200000, rows=5: %.2f s (under 30)" % dt)
    print("figure: deep 200000, rows=5: %.2f s" % dt)


def expected_pushpop_first(db, n):
    """The first n rows of hgtx_pushpop_trace for a single nesting chain d1 > d2 > ... (the
    outermost ranges start first)."""
    c = sqlite3.connect(db)
    rows = c.execute("SELECT r.id, r.parentId, r.start, r.end, r.globalTid, s.value, r.level FROM HGTX_RANGES r"
                     " JOIN STRING_IDS s ON s.id = r.nameId WHERE r.style = 0 ORDER BY r.start, r.id LIMIT ?",
                     (n + 1,)).fetchall()
    out, stack = [], ""
    for i, (rid, par, start, end, gtid, name, lvl) in enumerate(rows[:n], 1):
        stack += ":%d" % rid
        child = rows[i]  # the next one is the only child
        dc = child[3] - child[2]
        out.append('%d,%d,%d,%d,%d,%d,"%s",%d,%d,%d,%d,%d,%s,"%s","%s",' % (
            i, start, end, end - start, dc, end - start - dc, name, gtid >> 32, gtid & 0xffffffff, i - 1, 1, rid,
            str(par) if par else '"-"', stack, "-" * (i - 1) + name))
    return out


def cli(args, stdout=subprocess.PIPE):
    p = subprocess.run([CLI] + args, stdout=stdout, stderr=subprocess.PIPE, timeout=60)
    p.err = p.stderr.decode(errors="replace")
    return p


def t_cli():
    """profagent stats/recover given what a hostile user gives: a full device, not-a-spool files,
    malformed report options. Each is refused with one message and a non-zero status."""
    db = os.path.join(WORK, "c.db")
    p = run(["ranges", "5", "c"], {"PROFAGENT_OUTPUT": db})
    check(p.returncode == 0 and os.path.exists(db), "a DB to read")
    before = set(os.listdir("/dev"))
    p = cli(["stats", "-r", "hgtx_sum", "-o", "/dev/full", db])
    msgs = [l for l in p.err.splitlines() if l.startswith("profagent:")]
    check(p.returncode == 1 and len(msgs) == 1 and "/dev/full" in msgs[0] and "No space left" in msgs[0],
          "stats -o /dev/full: exit 1, one message naming it and the error (rc %d, %s)" % (p.returncode, msgs))
    check(set(os.listdir("/dev")) == before, "stats -o /dev/full: no file created in /dev (%s)"
          % sorted(set(os.listdir("/dev")) - before))
    for f in set(os.listdir("/dev")) - before:
        os.unlink(os.path.join("/dev", f))
    with open("/dev/full", "w") as full:
        p = cli(["stats", "-r", "hgtx_sum", db], stdout=full)
    check(p.returncode == 1 and "No space left" in p.err, "stats > /dev/full: exit 1 with the error (rc %d)" % p.returncode)
    p = cli(["stats", "-r", "hgtx_sum", "-o", "/dev/stdout", db])
    check(p.returncode == 0 and p.stdout.count(b'"c"') == 1, "stats -o /dev/stdout: the report (rc %d)" % p.returncode)

    for spec in ("hgtx_sum:rows= 5", "hgtx_sum:rows=5:rows=6", "hgtx_sum:rows=+5", "hgtx_pushpop_trace:range=a:range=b"):
        p = cli(["stats", "-r", spec, db])
        check(p.returncode == 2 and len(p.err.splitlines()) == 1 and p.stdout == b"",
              "stats -r '%s': usage error, one message (rc %d, %s)" % (spec, p.returncode, p.err.strip()))
    p = cli(["stats", "--list", "extra"])
    check(p.returncode == 2 and "extra" in p.err, "stats --list extra: usage error (rc %d)" % p.returncode)
    p = cli(["stats", "-r", "hgtx_sum:rows=0", db])
    check(p.returncode == 0 and len(p.stdout.splitlines()) == 1 and "no data" not in p.err,
          "stats rows=0: the header only, no 'no data' note (rc %d, %s)" % (p.returncode, p.err.strip()))

    rnd = os.path.join(WORK, "random.1234.abcdef.spool.zst")
    with open(rnd, "wb") as f:
        f.write(os.urandom(4096))
    zst = os.path.join(WORK, "other.1234.abcdef.spool.zst")
    subprocess.run(["zstd", "-q", "-o", zst, "-"], input=b"not ours\n" * 100, check=False)
    empty = os.path.join(WORK, "empty.1234.abcdef.spool.zst")
    open(empty, "w").close()
    cases = [(rnd, "not a profagent spool"), (db, "SQLite database"), (empty, "empty")]
    if os.path.exists(zst):
        cases.append((zst, "not a profagent spool"))
    for path, why in cases:
        size = os.path.getsize(path)
        for extra in ([], ["-o", os.path.join(WORK, "rec.db")]):
            before = set(os.listdir(WORK))
            p = cli(["recover", path] + extra)
            out = (p.stdout + p.stderr).decode(errors="replace")
            check(p.returncode == 1 and why in p.err and len(p.err.splitlines()) == 1,
                  "recover %s %s: refused, one message saying '%s' (rc %d, %s)"
                  % (os.path.basename(path), extra, why, p.returncode, p.err.strip()))
            check("remove" not in out and "delete" not in out, "recover %s: never suggests removing it"
                  % os.path.basename(path))
            check(set(os.listdir(WORK)) == before and os.path.getsize(path) == size,
                  "recover %s %s: no file created, input unchanged" % (os.path.basename(path), extra))


def t_reports():
    """Every report, every format, on valid DBs without the data of most reports (HGTX only; a
    Level Zero program on simdev): exit 0 and no sanitizer report (this test runs in the
    sanitizer build, where UBSan aborts on e.g. qsort(NULL, 0))."""
    names = [l.split()[0] for l in cli(["stats", "--list"]).stdout.decode().splitlines() if l.strip()]
    check(len(names) >= 19, "--list names the reports (%d)" % len(names))
    dbs = [os.path.join(WORK, "h.db"), os.path.join(WORK, "z.db")]
    run(["ranges", "5", "h"], {"PROFAGENT_OUTPUT": dbs[0]})
    run([], {"PROFAGENT_OUTPUT": dbs[1], "ZE_ENABLE_ALT_DRIVERS": os.path.join(BUILD, "lib", "libze_simdev.so")},
        prog=os.path.join(BUILD, "bin", "vector_add"))
    for db in dbs:
        check(os.path.exists(db), "%s written" % os.path.basename(db))
        for n in names:
            for fmt in ("csv", "table", "json"):
                p = cli(["stats", "-r", n, "-f", fmt, db])
                bad = [l for l in p.err.splitlines() if "runtime error" in l or "Sanitizer" in l]
                check(p.returncode == 0 and not bad, "%s %s %s: exit 0, no sanitizer report (rc %d, %s)"
                      % (os.path.basename(db), n, fmt, p.returncode, (bad or [p.err.strip()[-200:]])[0]))


TESTS = {k[2:]: v for k, v in globals().items() if k.startswith("t_")}
TESTS[TEST]()
print("%s: %s" % (TEST, "FAIL (%d)" % len(FAILS) if FAILS else "ok"))
sys.exit(1 if FAILS else 0)
