#!/usr/bin/env python3
"""run_lifecycle.py BUILD_DIR TEST - how a profiled process ends (signals, exec, _exit, crash +
`profagent recover`), the app's own fds, DB names shared by parent and child, a dlopen'ed agent,
config mistakes and `profagent run` on a static binary (qa2 defects 1, 2, 3, 9, 10, 12)."""
import glob, os, re, shutil, signal, sqlite3, subprocess, sys, tempfile, time

from spine_util import FAILS, check, preload as spine_preload, summary_stats_match_report

BUILD, TEST = sys.argv[1], sys.argv[2]
LIB = os.path.join(BUILD, "lib", "libprofagent.so")
CLI = os.path.join(BUILD, "bin", "profagent")
LIFE = os.path.join(BUILD, "tests", "spine", "spine_life")
WORK = tempfile.mkdtemp(prefix="spine_life_%s_" % TEST)


def preload():
    return spine_preload(LIB)


def env_for(agent=True, extra=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("PROFAGENT_")}
    e["PROFAGENT_OUTPUT"] = os.path.join(WORK, "out-%p.db")
    e["PROFAGENT_SUMMARY"] = "none"
    e["ASAN_OPTIONS"] = "detect_leaks=0"
    if agent:
        e["LD_PRELOAD"] = preload()
    e.update(extra or {})
    return e


def run(*args, agent=True, env=None, cwd=None, prog=LIFE):
    p = subprocess.run([prog] + list(args), env=env_for(agent, env), capture_output=True, timeout=60,
                       cwd=cwd or WORK)
    p.err = p.stderr.decode(errors="replace")
    sys.stderr.write(p.err[-2000:])
    return p


def files(pat):
    return sorted(glob.glob(os.path.join(WORK, pat)))


def clean():
    for f in os.listdir(WORK):
        os.unlink(os.path.join(WORK, f))


def names(db):
    c = sqlite3.connect(db)
    rows = c.execute("SELECT s.value FROM HGTX_RANGES r JOIN STRING_IDS s ON s.id = r.nameId").fetchall()
    return sorted(r[0] for r in rows)


def meta(db, key):
    r = sqlite3.connect(db).execute("SELECT value FROM META WHERE key = ?", (key,)).fetchone()
    return r[0] if r else None


def t_fds():
    """defect 1: after closefrom(3) the app's files get nothing of the agent's."""
    app, keep = os.path.join(WORK, "app.txt"), os.path.join(WORK, "keep.txt")
    p = run("closefrom", app, keep)
    check(p.returncode == 0, "closefrom: exit 0 (%d)" % p.returncode)
    check(open(app, "rb").read() == b"APPDATA\n", "app.txt holds exactly the app's 8 bytes (%d)" % os.path.getsize(app))
    check(open(keep, "rb").read() == b"KEEP\n", "keep.txt (open at exit) holds exactly the app's 5 bytes")
    dbs = files("out-*.db")
    check(len(dbs) == 1, "one DB")
    if dbs:
        c = sqlite3.connect(dbs[0])
        n = c.execute("SELECT count(*) FROM HGTX_RANGES").fetchone()[0]
        drops = c.execute("SELECT value FROM SESSION_COUNTERS WHERE name = 'drops'").fetchone()[0]
        check(0 < n <= 300000 and (n == 300000 or drops > 0), "ranges stored, any loss counted (%d, %d dropped)" % (n, drops))
    check(files("*.spool.zst") == [], "no spool left")


def t_signals():
    """defect 3a: default-disposition SIGTERM/INT/HUP/QUIT: DB written, same death by signal."""
    for mode, sig in (("sigterm", signal.SIGTERM), ("sigint", signal.SIGINT), ("sighup", signal.SIGHUP),
                      ("sigquit", signal.SIGQUIT)):
        clean()
        p = run(mode)
        check(p.returncode == -sig, "%s: killed by the signal (%d)" % (mode, p.returncode))
        dbs = files("out-*.db")
        check(len(dbs) == 1, "%s: a DB" % mode)
        if dbs:
            check(names(dbs[0]) == [mode] * 10, "%s: its 10 ranges" % mode)
            check(meta(dbs[0], "session_complete") == 0, "%s: session_complete = 0" % mode)
        check(files("*.spool.zst") == [], "%s: no spool left" % mode)
    clean()
    p = run("apphandler")  # the app's own SIGTERM handler wins (it _exits 42)
    check(p.returncode == 42, "apphandler: the app's handler ran (exit 42, got %d)" % p.returncode)
    dbs = files("out-*.db")
    check(len(dbs) == 1 and names(dbs[0]) == ["apphandler"] * 10, "apphandler: DB with its ranges")


def t_exec():
    """defect 3c: exec finalizes the session first; a failed exec leaves collection off."""
    p = run("exec", env={"PROFAGENT_SUMMARY": "stderr", "PROFAGENT_LOG": "info"})
    check(p.returncode == 16, "exec: the new image's status (16, got %d)" % p.returncode)
    dbs = files("out-*.db")
    # the new image (sh -c 'exit 16') is a session of its own; it records nothing, so it writes
    # no DB, only its one line
    check(len(dbs) == 1, "exec: one DB (before the exec; the exec'd sh recorded nothing): %s" % dbs)
    check(any(names(d) == ["exec"] * 10 for d in dbs), "exec: the first image's 10 ranges")
    check(re.search(r"^profagent: sh -c exit 16 \(pid \d+\): nothing recorded, no database written$",
                    p.err, re.M) is not None, "exec: the exec'd image's session says it recorded nothing")
    check(files("*.spool.zst") == [], "exec: no spool (empty or not) left")
    clean()
    p = run("execfail")
    check(p.returncode == 17, "execfail: exit 17 (%d)" % p.returncode)
    dbs = files("out-*.db")
    check(len(dbs) == 1 and names(dbs[0]) == ["after-failed-exec"] * 10 + ["execfail"] * 10,
          "execfail: an exec of a missing file does not end the session: the ranges before and after it")
    clean()
    # an exec that fails although the file is there (not executable: EACCES) has ended the
    # session: the later ranges are not recorded, and a warning says so
    p = run("execnoperm", env={"PROFAGENT_LOG": "warn"})
    check(p.returncode == 18, "execnoperm: exit 18 (%d)" % p.returncode)
    dbs = files("out-*.db")
    check(len(dbs) == 1 and names(dbs[0]) == ["execnoperm"] * 10,
          "execnoperm: DB with the ranges before the exec only")
    check(re.search(r"exec failed \(Permission denied\) after the session was ended for it: this "
                    r"process's later calls are not recorded", p.err) is not None,
          "execnoperm: the failed exec's warning")


def t_execfail():
    """Failed exec calls (missing file, missing command on PATH, E2BIG) leave the session on: the
    Level Zero calls and HGTX ranges after them are recorded, the application sees the errno the
    kernel gave, one summary is printed at the real exit."""
    env = {"PROFAGENT_SUMMARY": "stderr", "PROFAGENT_LOG": "warn",
           "ZE_ENABLE_ALT_DRIVERS": os.path.join(BUILD, "lib", "libze_simdev.so")}
    p = run(prog=os.path.join(BUILD, "tests", "spine", "spine_execfail"), env=env)
    check(p.returncode == 0, "execfail: exit 0 (%d)" % p.returncode)
    out = dict(l.split(None, 1) for l in p.stdout.decode().splitlines())
    for k, err in (("execv_missing", "ENOENT"), ("execvp_missing", "ENOENT"), ("execv_big", "E2BIG")):
        check(out.get(k) == "-1 " + err, "%s: -1 with errno %s (%s)" % (k, err, out.get(k)))
    dbs = files("out-*.db")
    check(len(dbs) == 1, "execfail: one DB (%s)" % dbs)
    if not dbs:
        return
    want = ["after"] * int(out.get("after", -1)) + ["before"] * int(out.get("before", -1))
    check(names(dbs[0]) == want and len(want) == 14, "execfail: the ranges before and after (%d)" % len(want))
    c = sqlite3.connect(dbs[0])
    api = dict(c.execute("SELECT s.value, count(*) FROM ZE_API a JOIN STRING_IDS s ON s.id = a.nameId GROUP BY 1"))
    check(api == {"zeInit": 1, "zeDriverGet": int(out.get("ze_driver_get", -1))},
          "execfail: the Level Zero calls after the failed execs (%s)" % api)
    check(meta(dbs[0], "session_complete") == 1, "execfail: session_complete = 1")
    check(p.err.count("==== profagent summary ====") == 1, "execfail: the summary printed once")
    check("exec failed" not in p.err, "execfail: no warning (no exec ended the session)")


def t_exitpaths():
    """defect 3: _exit from a signal handler still writes the DB (mark recorded in the handler)."""
    p = run("sigexit")
    check(p.returncode == 42, "sigexit: exit 42 (%d)" % p.returncode)
    dbs = files("out-*.db")
    check(len(dbs) == 1, "sigexit: a DB")
    if dbs:
        check(names(dbs[0]) == ["sigexit"] * 10, "sigexit: its 10 ranges")
        n = sqlite3.connect(dbs[0]).execute("SELECT count(*) FROM HGTX_MARKS m JOIN STRING_IDS s"
                                            " ON s.id = m.nameId WHERE s.value = 'in-handler'").fetchone()[0]
        check(n == 1, "sigexit: the mark made in the handler")
        check(meta(dbs[0], "session_complete") == 1, "sigexit: session_complete = 1")


def t_recover():
    """defect 3b: SIGKILL/abort leave a spool; stats names `profagent recover`; recover builds a DB."""
    for mode, sig in (("sigkill", signal.SIGKILL), ("abort", signal.SIGABRT)):
        clean()
        p = run(mode)
        check(p.returncode == -sig, "%s: died by the signal (%d)" % (mode, p.returncode))
        # a session that lived long enough has its DB streamed: what it committed, incomplete
        at_death = files("out-*.db")
        check(at_death == [] or (len(at_death) == 1 and meta(at_death[0], "session_complete") == 0
                                 and set(names(at_death[0])) <= {mode}),
              "%s: no DB at death, or the streamed one with session_complete = 0 (%s)" % (mode, at_death))
        sp = files("*.spool.zst")
        check(len(sp) == 1, "%s: one spool" % mode)
        if not sp:
            continue
        s = subprocess.run([CLI, "stats", "-r", "hgtx_sum", sp[0]], capture_output=True, text=True)
        check(s.returncode != 0 and "profagent recover " + sp[0] in s.stderr,
              "%s: stats on the spool names the recover command" % mode)
        r = subprocess.run([CLI, "recover", sp[0]], capture_output=True, text=True, cwd=WORK)
        check(r.returncode == 0, "%s: recover exits 0 (%s)" % (mode, r.stderr.strip()))
        dbs = files("out-*.db")
        check(len(dbs) == 1 and sp[0].startswith(dbs[0] + "."), "%s: recovered DB under the session's name" % mode)
        if not dbs:
            continue
        db = dbs[0]
        check(names(db) == [mode] * 10, "%s: its 10 ranges recovered" % mode)
        check(meta(db, "session_complete") == 0, "%s: session_complete = 0" % mode)
        c = sqlite3.connect(db)
        row = c.execute("SELECT count, total, min, max FROM SUMMARY_STATS WHERE category = 1").fetchone()
        want = c.execute("SELECT count(*), sum(end - start), min(end - start), max(end - start)"
                         " FROM HGTX_RANGES").fetchone()
        check(row == want, "%s: SUMMARY_STATS equals the trace rows (%s vs %s)" % (mode, row, want))
        bad, n = summary_stats_match_report(CLI, db)
        check(n >= 1 and not bad, "%s: recovered SUMMARY_STATS avg/median/stddev = hgtx_sum's: %d rows, %r"
              % (mode, n, bad[:3]))
        check(c.execute("SELECT count(*) FROM THREADS").fetchone()[0] == 1, "%s: THREADS from the rows" % mode)


def t_samename():
    """defect 2: parent and exec'd child with the same name template: both DBs, none lost."""
    p = run("samename", env={"PROFAGENT_OUTPUT": os.path.join(WORK, "same.db")})
    check(p.returncode == 3, "samename: exit 3 (%d)" % p.returncode)
    dbs = files("same*.db")
    check([os.path.basename(d) for d in dbs] == ["same-1.db", "same.db"], "samename: same.db and same-1.db: %s" % dbs)
    parent = [d for d in dbs if "samename" in names(d)]
    check(len(parent) == 1 and names(parent[0]) == ["parent-after"] * 10 + ["samename"] * 10,
          "samename: the parent's DB kept all its ranges")
    check("cannot create" not in p.err, "samename: no 'cannot create' error")


def t_dlopen():
    """defect 9: the agent dlopen()ed instead of preloaded writes its DB promptly."""
    t0 = time.monotonic()
    p = run("dlopen", LIB, agent=False)
    dt = time.monotonic() - t0
    check(p.returncode == 6, "dlopen: exit 6 (%d)" % p.returncode)
    check(dt < 3, "dlopen: no 5 s aggregator timeout (%.2f s)" % dt)
    check("did not finish" not in p.err, "dlopen: the aggregator finished")
    dbs = files("out-*.db")
    check(len(dbs) == 1 and names(dbs[0]) == ["dl"] * 5, "dlopen: DB with the 5 ranges")
    check(files("*.spool.zst") == [], "dlopen: no spool left")


def t_config():
    """defect 10: empty values, partial lists, missing dir, %q{}: one clear message, nothing lost."""
    p = run("cfg", env={"PROFAGENT_OUTPUT": ""})
    check("PROFAGENT_OUTPUT is set but empty" in p.err, "empty PROFAGENT_OUTPUT: warned")
    check(len(glob.glob(os.path.join(WORK, "profagent-*.db"))) == 1, "empty PROFAGENT_OUTPUT: default name used")
    check(glob.glob(os.path.join(WORK, ".*spool*")) == [], "empty PROFAGENT_OUTPUT: no hidden spool")
    clean()
    p = run("cfg", env={"PROFAGENT_TRACE": ""})
    check("PROFAGENT_TRACE is set but empty" in p.err, "empty PROFAGENT_TRACE: warned")
    dbs = files("out-*.db")
    check(len(dbs) == 1 and names(dbs[0]) == ["cfg"] * 10, "empty PROFAGENT_TRACE: default (all) records")
    clean()
    p = run("cfg", env={"PROFAGENT_TRACE": "hgtx,bogus"})
    check('"bogus" ignored' in p.err and "all|none" in p.err, "hgtx,bogus: warns about bogus only")
    dbs = files("out-*.db")
    check(len(dbs) == 1 and names(dbs[0]) == ["cfg"] * 10, "hgtx,bogus: hgtx still recorded")
    clean()
    p = run("cfg", env={"PROFAGENT_OUTPUT": "/nonexistent-dir-qa2/x.db"})
    lines = [l for l in p.err.splitlines() if l.strip()]
    check(len(lines) == 1 and "PROFAGENT_OUTPUT" in lines[0] and "/nonexistent-dir-qa2" in lines[0]
          and os.path.join(WORK, "x.db") in lines[0],
          "missing dir: one message naming the variable, the dir and the new place (absolute)")
    check(os.path.exists(os.path.join(WORK, "x.db")), "missing dir: DB written in the current directory")
    clean()
    p = run("cfg", env={"PROFAGENT_OUTPUT": os.path.join(WORK, "q%q{}.db")})
    check("%q{} names no environment variable" in p.err, "%q{}: clear message")


BOOL_ACC = "(accepted: 1, true, yes, on to turn it on; 0, false, no, off to turn it off; any case)"


def t_config_values():
    """Yes/no and word variables: the same spellings everywhere, anything else one message naming the
    variable, the value and what is accepted, the default applies and the run still writes its DB; each
    message once per process: a wrapper process says it too, an exec in the same process does not."""
    cases = [  # (variable, bad value, accepted as printed, default)
        ("PROFAGENT_ENABLE", "bogus", BOOL_ACC, "1"), ("PROFAGENT_ENABLE", "2", BOOL_ACC, "1"),
        ("PROFAGENT_ENABLE", "y", BOOL_ACC, "1"), ("PROFAGENT_OVERWRITE", "maybe", BOOL_ACC, "0"),
        ("PROFAGENT_PC_SAMPLING", "enable", BOOL_ACC, "0"), ("PROFAGENT_SYMBOLS_SYSTEM_DEBUGINFO", " 1", BOOL_ACC, "0"),
        ("PROFAGENT_ZE_INTERCEPT", "fast", "(accepted: auto|entry|tracer)", "auto"),
        ("PROFAGENT_LOG", "loud", "(accepted: silent|error|warn|info|debug)", "warn"),
    ]
    for var, val, acc, dflt in cases:
        p = run("cfg", env={var: val})
        want = 'profagent: config: %s="%s" is not accepted %s; using the default "%s"\n' % (var, val, acc, dflt)
        check(p.err == want, "%s=%r: want exactly %r, got %r" % (var, val, want, p.err))
        dbs = files("out-*.db")
        check(p.returncode == 0 and len(dbs) == 1 and names(dbs[0]) == ["cfg"] * 10,
              "%s=%r: the run still writes its DB with the 10 ranges (rc %d, %s)" % (var, val, p.returncode, dbs))
        clean()
    # every spelling of yes and no, any case: no message; off turns the agent off (no DB)
    for val, on in (("1", 1), ("TRUE", 1), ("yes", 1), ("On", 1), ("0", 0), ("false", 0), ("NO", 0), ("off", 0)):
        p = run("cfg", env={"PROFAGENT_ENABLE": val})
        check(p.err == "" and len(files("out-*.db")) == on, "PROFAGENT_ENABLE=%s: no message, %d DB (%r, %s)"
              % (val, on, p.err, files("*")))
        clean()
    msg = 'profagent: config: PROFAGENT_ENABLE="bogus" is not accepted %s; using the default "1"\n' % BOOL_ACC
    # `profagent run` then the app: one process with the agent, one message
    p = subprocess.run([CLI, "run", "--", LIFE, "cfg"], env=env_for(False, {"PROFAGENT_ENABLE": "bogus"}),
                       capture_output=True, text=True, timeout=60, cwd=WORK)
    check(p.stderr == msg and len(files("out-*.db")) == 1, "profagent run: one message, one DB (%r)" % p.stderr)
    clean()
    # a shell that runs the app as its child: two processes read the variable, each says it once
    p = subprocess.run([CLI, "run", "--", "sh", "-c", LIFE + " cfg; true"], capture_output=True, text=True,
                       env=env_for(False, {"PROFAGENT_ENABLE": "bogus"}), timeout=60, cwd=WORK)
    check(p.stderr == msg * 2 and len(files("out-*.db")) == 1, "sh then child: one message per process (%r)"
          % p.stderr)
    clean()
    # a shell that execs the app: one process, one message; a variable the exec adds is said then
    p = subprocess.run([CLI, "run", "--", "sh", "-c", "exec " + LIFE + " cfg"], capture_output=True, text=True,
                       env=env_for(False, {"PROFAGENT_ENABLE": "bogus"}), timeout=60, cwd=WORK)
    check(p.stderr == msg and len(files("out-*.db")) == 1, "sh exec app: one message in one process (%r)"
          % p.stderr)
    clean()
    p = subprocess.run(["sh", "-c", "PROFAGENT_OVERWRITE=maybe exec sh -c 'exec %s cfg'" % LIFE], capture_output=True,
                       text=True, env=env_for(True, {"PROFAGENT_ENABLE": "bogus"}), timeout=60, cwd=WORK)
    want = msg + 'profagent: config: PROFAGENT_OVERWRITE="maybe" is not accepted %s; using the default "0"\n' % BOOL_ACC
    check(p.stderr == want and len(files("out-*.db")) == 1, "exec with a new bad value: only the new message (%r)"
          % p.stderr)
    clean()
    # the agent's note to the exec'd image is not left in the application's environment
    p = subprocess.run(["sh", "-c", "exec env"], capture_output=True, text=True, timeout=60, cwd=WORK,
                       env=env_for(True, {"PROFAGENT_ENABLE": "bogus"}))
    check(p.stderr == msg and "PROFAGENT_ENABLE=bogus" in p.stdout and "PROFAGENT_CONFIG_SAID" not in p.stdout,
          "exec env: one message, the note not in the environment (%r)" % p.stderr)


def t_static():
    """defect 12: `profagent run` on a static binary warns and still runs it."""
    prog = os.path.join(BUILD, "tests", "spine", "spine_static")
    p = subprocess.run([CLI, "run", "--", prog], capture_output=True, text=True, cwd=WORK,
                       env={k: v for k, v in os.environ.items() if not k.startswith("PROFAGENT_")})
    check(p.returncode == 7, "static: the program ran (exit 7, got %d)" % p.returncode)
    check("statically linked" in p.stderr and "LD_PRELOAD" in p.stderr, "static: clear warning")
    p = subprocess.run([CLI, "run", "--summary", "none", "--", LIFE, "dyn"], capture_output=True, text=True,
                       cwd=WORK)
    check("statically linked" not in p.stderr, "dynamic: no warning")


SIG = os.path.join(BUILD, "tests", "spine", "spine_sig")


def t_sigview():
    """qa6: queries, sets, re-queries and restores of dispositions print the same with the agent."""
    want = run("view", agent=False, prog=SIG)
    got = run("view", prog=SIG)
    check(want.returncode == 0 and got.returncode == 0, "view: exit 0 (%d, %d)" % (want.returncode, got.returncode))
    a, b = want.stdout.decode().splitlines(), got.stdout.decode().splitlines()
    check(len(a) > 150, "view: the walk printed (%d lines)" % len(a))
    diff = [(x, y) for x, y in zip(a, b) if x != y]
    check(a == b, "view: identical with and without the agent (%d vs %d lines, first difference %s)"
          % (len(a), len(b), diff[:1]))
    # hand-checked anchors: the default as the kernel holds it, the app's handler, errors
    check("15 initial                    DFL   flags=0 mask=0 restorer=0" in a, "view: SIGTERM starts as SIG_DFL")
    check("2 sigaction h1               DFL   flags=0 mask=0 restorer=0" in a, "view: old SIGINT action is SIG_DFL")
    check(any(l.startswith("15 signal DFL") and "old=h1" in l for l in a), "view: signal() returns the app's h1")
    check("sigaction(SIGKILL) r=-1 errno=22" in a and "sigaction(65) r=-1 errno=22" in a, "view: EINVAL kept")
    check(sum("errno=1234" in l for l in a if " r=0 " in l) >= 50, "view: errno untouched by successful calls")
    p = run("dlopen", LIB, agent=False, prog=SIG)
    out = p.stdout.decode().splitlines()
    check(p.returncode == 0 and [l.split()[3] for l in out if "flags=" in l] == ["DFL", "DFL"],
          "dlopen: a late-loaded agent leaves SIGTERM/SIGINT at SIG_DFL (%s)" % out)


def t_sigrestore():
    """qa6: the app takes SIGTERM then restores SIG_DFL (4 ways): killed by SIGTERM, DB still written."""
    for how in ("sigaction", "signal", "sysv", "sigset"):
        clean()
        mode = "restore-" + how
        p = run(mode, prog=SIG)
        check(p.returncode == -signal.SIGTERM, "%s: killed by SIGTERM (%d)" % (mode, p.returncode))
        out = p.stdout.decode()
        seen = [l.split()[2] for l in out.splitlines() if l.startswith("15 restored ") and "flags=" in l]
        check(seen == ["DFL"], "%s: the app sees SIG_DFL after restoring (%s)" % (mode, seen))
        dbs = files("out-*.db")
        check(len(dbs) == 1, "%s: a DB" % mode)
        if dbs:
            check(names(dbs[0]) == [mode] * 10, "%s: its 10 ranges" % mode)
            check(meta(dbs[0], "session_complete") == 0, "%s: session_complete = 0" % mode)
        check(files("*.spool.zst") == [], "%s: no spool left" % mode)


def pyrun(code, timeout=60, agent=True):
    p = subprocess.run([sys.executable, "-c", code], env=env_for(agent), capture_output=True, timeout=timeout,
                       cwd=WORK)
    p.err = p.stderr.decode(errors="replace")
    sys.stderr.write(p.err[-2000:])
    return p


def t_pysignals():
    """qa6: CPython sees default dispositions: KeyboardInterrupt handler installed, getsignal SIG_DFL."""
    code = ("import signal as s\n"
            "print([repr(s.getsignal(x)) for x in (s.SIGINT, s.SIGTERM, s.SIGHUP, s.SIGQUIT)])\n")
    want = pyrun(code, agent=False).stdout.decode()
    got = pyrun(code).stdout.decode()
    check(want == "['<built-in function default_int_handler>', '<Handlers.SIG_DFL: 0>', '<Handlers.SIG_DFL: 0>', "
          "'<Handlers.SIG_DFL: 0>']\n", "python: expected dispositions without the agent (%r)" % want)
    check(got == want, "python: the same under the agent (%r)" % got)
    clean()
    ki = ("import os, signal, time\n"
          "try:\n    os.kill(os.getpid(), signal.SIGINT); time.sleep(5); print('no interrupt')\n"
          "except KeyboardInterrupt:\n    print('KeyboardInterrupt')\n"
          # one mark, so that the session has a record (a session with none writes no DB)
          "import ctypes\nctypes.CDLL(%r).hgtxMarkA(b'ki')\n" % os.path.abspath(os.path.join(BUILD, "lib", "libhgtx.so")))
    p = pyrun(ki)
    check(p.returncode == 0 and p.stdout == b"KeyboardInterrupt\n", "python: SIGINT raises KeyboardInterrupt (%r)" % p.stdout)
    check(len(files("out-*.db")) == 1, "python: the interrupted program's DB at its normal exit")
    clean()
    p = pyrun("import os, signal, time\nos.kill(os.getpid(), signal.SIGTERM)\ntime.sleep(5)\n")
    check(p.returncode == -signal.SIGTERM, "python: default SIGTERM kills (%d)" % p.returncode)
    dbs = files("out-*.db")
    check(len(dbs) == 1 and meta(dbs[0], "session_complete") == 0, "python: SIGTERM still writes the DB")


def t_pyforkserver():
    """qa6: multiprocessing forkserver under the agent runs cleanly (no TypeError/BrokenPipeError)."""
    code = ("import multiprocessing as mp, os\n"
            "def f(n):\n    return n * n\n"
            "if __name__ == '__main__':\n"
            "    mp.set_start_method('forkserver')\n"
            "    with mp.Pool(2) as p:\n        print(p.map(f, [1, 2, 3, 4]))\n")
    script = os.path.join(WORK, "fs.py")
    with open(script, "w") as f:
        f.write(code)
    p = subprocess.run([sys.executable, script], env=env_for(True), capture_output=True, timeout=90, cwd=WORK)
    err = p.stderr.decode(errors="replace")
    sys.stderr.write(err[-3000:])
    check(p.returncode == 0, "forkserver: exit 0 (%d)" % p.returncode)
    check(p.stdout == b"[1, 4, 9, 16]\n", "forkserver: the pool's results (%r)" % p.stdout)
    check("Error" not in err and "Traceback" not in err, "forkserver: no traceback on stderr")
    check(len(files("out-*.db")) >= 1, "forkserver: the parent's DB")


{"fds": t_fds, "signals": t_signals, "exec": t_exec, "execfail": t_execfail, "exitpaths": t_exitpaths, "recover": t_recover,
 "samename": t_samename, "dlopen": t_dlopen, "config": t_config, "config_values": t_config_values, "static": t_static, "sigview": t_sigview,
 "sigrestore": t_sigrestore, "pysignals": t_pysignals, "pyforkserver": t_pyforkserver}[TEST]()
if FAILS:
    print("%d check(s) failed; work dir kept: %s" % (len(FAILS), WORK))
    sys.exit(1)
shutil.rmtree(WORK, ignore_errors=True)
