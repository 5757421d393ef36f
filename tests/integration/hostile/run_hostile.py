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
    for i in range(3):
        p = run(["fsize", "200000", "100000"], {"PROFAGENT_OUTPUT": out})
        check(p.returncode == 21, "run %d, 100 k ranges under a 200 kB limit: exit 21, not killed by SIGXFSZ (%d)"
              % (i, p.returncode))
        spools = glob.glob(os.path.join(d, "*.spool.zst"))
        check(len(spools) == 1, "run %d: the spool is kept (%s)" % (i, spools))
        check(not os.path.exists(out), "run %d: no partial DB left" % i)
        msg = [l for l in p.err.splitlines() if "could not be written" in l and "spool kept" in l]
        check(len(msg) == 1, "run %d: one message says the DB could not be written and the spool is kept" % i)
        check(len(msg) == 1 and "file size limit RLIMIT_FSIZE = 200000 bytes" in msg[0],
              "run %d: the message names the cause (file size limit)" % i)
        for s in spools:
            os.unlink(s)


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


TESTS = {k[2:]: v for k, v in globals().items() if k.startswith("t_")}
TESTS[TEST]()
print("%s: %s" % (TEST, "FAIL (%d)" % len(FAILS) if FAILS else "ok"))
sys.exit(1 if FAILS else 0)
