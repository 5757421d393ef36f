#!/usr/bin/env python3
"""run_user.py BUILD_DIR TEST - fresh-user findings, run under libprofagent.so:
hgtx_dlopen / hgtx_ctypes: HGTX calls through dlopen+dlsym (C) and Python ctypes on libhgtx.so
reach the agent (ranges with their names, levels and parents in the DB) and stay no-ops without
it; empty: a process that recorded nothing writes no DB and prints one line; closed_pipe: the
summary to a pipe closed early changes neither the exit status nor leaves a spool."""
import glob, os, sqlite3, subprocess, sys, tempfile

from spine_util import FAILS, check, preload as spine_preload

BUILD, TEST = sys.argv[1], sys.argv[2]
LIB = os.path.join(BUILD, "lib", "libprofagent.so")
HGTX = os.path.join(BUILD, "lib", "libhgtx.so")
PROG = os.path.join(BUILD, "tests", "spine", "spine_hgtx_dl")
WORK = tempfile.mkdtemp(prefix="user_%s_" % TEST)


def preload():
    return spine_preload(LIB)


def env(agent=True, **kw):
    e = {k: v for k, v in os.environ.items() if not k.startswith("PROFAGENT_")}
    e.update(PROFAGENT_OUTPUT=os.path.join(WORK, "out.db"), ASAN_OPTIONS="detect_leaks=0")
    if agent:
        e["LD_PRELOAD"] = preload()
    e.update(kw)
    return e


def run(cmd, agent=True, **kw):
    p = subprocess.run(cmd, env=env(agent, **kw), capture_output=True, text=True, timeout=90)
    sys.stderr.write(p.stderr[-1500:])
    check(p.returncode == 0, "%s: exit status 0 (got %d)" % (os.path.basename(cmd[0]), p.returncode))
    return p


def ranges():
    """(name, level, parent name, style) of every range in the one DB written, and the marks."""
    dbs = glob.glob(os.path.join(WORK, "*.db"))
    check(len(dbs) == 1, "one DB written (%s)" % dbs)
    if not dbs:
        return [], []
    c = sqlite3.connect(dbs[0])
    r = c.execute("SELECT r.name, r.level, p.name, r.style FROM HGTX_RANGES_NAMED r LEFT JOIN"
                  " HGTX_RANGES_NAMED p ON p.id = r.parentId ORDER BY r.start").fetchall()
    m = c.execute("SELECT s.value FROM HGTX_MARKS k JOIN STRING_IDS s ON s.id = k.nameId").fetchall()
    return r, [x[0] for x in m]


def check_ranges(pfx):
    r, marks = ranges()
    names = {x[0]: x for x in r}
    check(len(r) == 4, "%s: 4 ranges recorded (got %s)" % (pfx, r))
    check(names.get(pfx + "_outer", ())[1:3] == (0, None), "%s_outer: level 0, no parent" % pfx)
    check(names.get(pfx + "_inner", ())[1:3] == (1, pfx + "_outer"), "%s_inner: level 1 under outer" % pfx)
    check(pfx + "_startend" in names, "%s_startend: start/end range recorded" % pfx)
    check(any(n.endswith(pfx + "_dpush") and n.startswith(pfx + "_dom") for n in names),
          "%s_dom:%s_dpush: domain range recorded (%s)" % (pfx, pfx, list(names)))
    check(marks == [pfx + "_mark"], "%s_mark: one mark (got %s)" % (pfx, marks))


PY = """import ctypes, sys
h = ctypes.CDLL(sys.argv[1])
h.hgtxDomainCreateA.restype = ctypes.c_void_p
h.hgtxDomainRangePushA.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
h.hgtxDomainRangePop.argtypes = [ctypes.c_void_p]
h.hgtxDomainDestroy.argtypes = [ctypes.c_void_p]
h.hgtxRangeStartA.restype = ctypes.c_uint64
h.hgtxRangeEnd.argtypes = [ctypes.c_uint64]
a = h.hgtxRangePushA(b"py_outer"); b = h.hgtxRangePushA(b"py_inner"); h.hgtxMarkA(b"py_mark")
c = h.hgtxRangePop(); d = h.hgtxRangePop()
h.hgtxRangeEnd(h.hgtxRangeStartA(b"py_startend"))
dom = h.hgtxDomainCreateA(b"py_dom"); h.hgtxDomainRangePushA(dom, b"py_dpush")
h.hgtxDomainRangePop(dom); h.hgtxDomainDestroy(dom)
print("push %d %d pop %d %d" % (a, b, c, d))
"""

if TEST in ("hgtx_dlopen", "hgtx_ctypes"):
    if TEST == "hgtx_dlopen":
        cmd, pfx = [PROG, HGTX], "dl"
    else:
        script = os.path.join(WORK, "p.py")
        open(script, "w").write(PY)
        cmd, pfx = [sys.executable, script, HGTX], "py"
    p = run(cmd)
    check(p.stdout.strip() == "push 0 1 pop 1 0", "push/pop levels under the agent: %r" % p.stdout)
    check_ranges(pfx)
    # without the agent: the stub's no-ops, same return values, nothing written
    for f in glob.glob(os.path.join(WORK, "*.db")):
        os.unlink(f)
    p = run(cmd, agent=False)
    check(p.stdout.strip() == "push 0 1 pop 1 0", "push/pop levels without the agent: %r" % p.stdout)
    check(not glob.glob(os.path.join(WORK, "*.db*")), "no agent: no DB or spool")
elif TEST == "empty":
    # nothing recorded: no DB, no spool, one line at the summary destination (here stderr)
    # at the default log level (warn) an empty session prints nothing at all (quiet launches
    # through shims); at info or above it says so in one line
    p = run(["/bin/sh", "-c", "exit 0"], PROFAGENT_SUMMARY="stderr")
    check(p.stderr == "" and not glob.glob(os.path.join(WORK, "*")), "empty, default log level: silent (%r)" % p.stderr)
    p = run(["/bin/sh", "-c", "exit 0"], PROFAGENT_SUMMARY="stderr", PROFAGENT_LOG="info")
    check(not glob.glob(os.path.join(WORK, "*")), "empty: no DB or spool (%s)" % os.listdir(WORK))
    lines = [l for l in p.stderr.splitlines() if l.startswith("profagent") and "profagent: agent:" not in l]
    check(len(lines) == 1 and lines[0].startswith("profagent: /bin/sh -c exit 0 (pid ") and
          lines[0].endswith("): nothing recorded, no database written"), "empty: one line (%s)" % lines)
    # the same to a summary file; and nothing at all with PROFAGENT_SUMMARY=none
    sf = os.path.join(WORK, "s.txt")
    p = run(["/bin/sh", "-c", "exit 0"], PROFAGENT_SUMMARY="file:" + sf, PROFAGENT_LOG="info")
    text = open(sf).read() if os.path.exists(sf) else ""
    check(text.count("\n") == 1 and "nothing recorded, no database written" in text,
          "empty: the line in the summary file (%r)" % text)
    check(sorted(os.listdir(WORK)) == ["s.txt"], "empty: only the summary file (%s)" % os.listdir(WORK))
    os.unlink(sf)
    p = run(["/bin/sh", "-c", "exit 0"], PROFAGENT_SUMMARY="none")
    check(p.stderr == "" and not os.listdir(WORK), "empty, summary none: silent, no files")
    # one record is enough for a DB
    p = run([PROG, HGTX], PROFAGENT_SUMMARY="none")
    check(len(glob.glob(os.path.join(WORK, "*.db"))) == 1, "a session with records writes its DB")
elif TEST == "closed_pipe":
    # the summary goes to a pipe whose reader is gone (closed at once, or after one line as
    # `| head -1`): the exit status is the program's, the DB complete, no spool left
    for i in range(20):
        for f in os.listdir(WORK):
            os.unlink(os.path.join(WORK, f))
        r, w = os.pipe()
        p = subprocess.Popen([PROG, HGTX], env=env(PROFAGENT_SUMMARY="stderr"), stdout=subprocess.DEVNULL,
                             stderr=w)
        os.close(w)
        if i % 2:
            os.read(r, 1)  # reads the start of the summary, then goes away
        os.close(r)
        rc = p.wait(timeout=60)
        check(rc == 0, "closed_pipe run %d: exit status 0 (got %d)" % (i, rc))
        check(not glob.glob(os.path.join(WORK, "*.spool.zst")), "closed_pipe run %d: no spool left" % i)
        dbs = glob.glob(os.path.join(WORK, "*.db"))
        check(len(dbs) == 1 and sqlite3.connect(dbs[0]).execute(
            "SELECT value FROM META WHERE key = 'session_complete'").fetchone() == (1,),
            "closed_pipe run %d: one complete DB" % i)
else:
    check(False, "unknown test " + TEST)

print("FAILED: %d" % len(FAILS) if FAILS else "OK")
sys.exit(1 if FAILS else 0)
