#!/usr/bin/env python3
"""run_stdio.py BUILD_DIR TEST - the agent's summary and messages never hang the caller, never
leak into the application's own files and never change its output: a daemon child and a caller
capturing the output, a full stderr pipe read only after the wait, stderr closed at start or
replaced by the application's log, `| head -1`, buffered stdout discarded by _exit, an exec at
Linux's argument limit. Each case is compared with the same program run without the agent."""
import os, signal, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "spine"))
from spine_util import FAILS, check, preload  # noqa: E402

BUILD, TEST = sys.argv[1], sys.argv[2]
LIB = os.path.join(BUILD, "lib", "libprofagent.so")
APP = os.path.join(BUILD, "tests", "hostile", "hostile_stdio")
WORK = tempfile.mkdtemp(prefix="hostile_stdio_%s_" % TEST)
SUMMARY = b"==== profagent summary"


def env_for(agent, extra=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("PROFAGENT_") and k != "LD_PRELOAD"}
    e["ASAN_OPTIONS"] = "detect_leaks=0"
    e["PROFAGENT_OUTPUT"] = os.path.join(WORK, "%p.db")
    if agent:
        e["LD_PRELOAD"] = preload(LIB)
    e.update(extra or {})
    return e


def run(args, agent, extra=None, timeout=60, **kw):
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    return subprocess.run([APP] + list(args), env=env_for(agent, extra), timeout=timeout, cwd=WORK, **kw)


def t_daemon():
    """A daemon child (setsid, 0-2 on /dev/null, lives 30 s) and a caller capturing the output
    like `x=$(app 2>&1)`: EOF comes when the parent exits (the agent's copy of stderr does not
    live on in the child). A hang check: the bound is far above the exit's time."""
    for agent in (False, True):
        t = time.time()
        p = subprocess.Popen([APP, "daemon", "30"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             env=env_for(agent), cwd=WORK)
        try:
            out, _ = p.communicate(timeout=20)
            dt = time.time() - t
        except subprocess.TimeoutExpired:
            p.kill()
            out, dt = p.communicate()[0], None
        pids = [int(l.split()[1]) for l in out.decode(errors="replace").splitlines() if l.startswith("daemon ")]
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        check(dt is not None and p.returncode == 0 and len(pids) == 1,
              "%s: the capture ends while the daemon lives (%s, rc %s)"
              % ("agent" if agent else "no agent", "%.2f s" % dt if dt is not None else "still open after 20 s",
                 p.returncode))


def t_pipefull():
    """65000 bytes to a stderr pipe read only after the wait (Popen(stderr=PIPE).wait()): the
    process ends (the summary's write gives up at the exit's deadline instead of waiting for the
    reader) and the parent reads the application's bytes intact."""
    for agent in (False, True):
        p = subprocess.Popen([APP, "pipefull"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             env=env_for(agent), cwd=WORK)
        try:
            rc = p.wait(timeout=40)  # PROFAGENT_EXIT_TIMEOUT_MS (5 s) + a hang check's slack
        except subprocess.TimeoutExpired:
            rc = None
            p.kill()
            p.wait()
        err = p.stderr.read()
        p.stderr.close()
        who = "agent" if agent else "no agent"
        check(rc == 0, "%s: exits 0 while nobody reads its stderr (rc %s)" % (who, rc))
        check(err[:65000] == b"x" * 65000, "%s: the application's 65000 bytes intact (%d bytes read)"
              % (who, len(err)))


def closed_stderr(args, agent):
    """args run with fd 2 closed at start."""
    return subprocess.run(["sh", "-c", 'exec "$@" 2>&-', "sh", APP] + list(args), env=env_for(agent),
                          stdout=subprocess.PIPE, timeout=60, cwd=WORK)


def t_ownlog():
    """Started with `2>&-`, the application's log gets fd 2: it holds the application's line,
    byte for byte as without the agent (no summary, no message)."""
    logs = []
    for agent in (False, True):
        log = os.path.join(WORK, "own-%d.log" % agent)
        p = closed_stderr(["ownlog", log], agent)
        logs.append(open(log, "rb").read())
        check(p.returncode == 0, "%s: exit 0 (%d)" % ("agent" if agent else "no agent", p.returncode))
    check(logs[0] == b"app log line (fd 2)\n", "no agent: the log is the application's line (%r)" % logs[0][:200])
    check(logs[1] == logs[0], "agent: the log equals the run without the agent (%r)" % logs[1][:300])


def t_warnlog():
    """The application closes stderr mid-run, its log gets fd 2, then the agent warns (an exec
    failing with EACCES after the session was ended for it): the warning is not in the log; it
    goes to the stderr the process started with."""
    logs = []
    for agent in (False, True):
        log = os.path.join(WORK, "warn-%d.log" % agent)
        p = run(["warnlog", log, os.path.join(WORK, "noexec-%d.sh" % agent)], agent)
        logs.append(open(log, "rb").read())
        if agent:
            check(b"exec failed (Permission denied)" in p.stderr,
                  "agent: the warning went to the original stderr (%r)" % p.stderr[-300:])
    check(logs[0] == b"app log (fd 2)\nexec: Permission denied\n", "no agent: the application's two lines (%r)"
          % logs[0])
    check(logs[1] == logs[0], "agent: the log equals the run without the agent (%r)" % logs[1][:300])


def t_head():
    """`app 2>&1 | head -1`: the application's buffered stdout goes before the summary, as it
    would without the agent: head reads the application's line and the exit status stays 0 (not
    141, SIGPIPE in the application's own flush) in 20 runs of 20."""
    for agent in (False, True):
        rcs, firsts = [], set()
        for _ in range(20):
            p1 = subprocess.Popen([APP, "lines"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  env=env_for(agent), cwd=WORK)
            p2 = subprocess.Popen(["head", "-1"], stdin=p1.stdout, stdout=subprocess.PIPE)
            p1.stdout.close()
            firsts.add(p2.communicate(timeout=60)[0])
            rcs.append(p1.wait(timeout=60))
        who = "agent" if agent else "no agent"
        check(rcs == [0] * 20, "%s: exit status 0 in 20 runs (%s)" % (who, sorted(set(rcs))))
        check(firsts == {b"app line 0\n"}, "%s: head's line is the application's first (%s)" % (who, firsts))


def t_noflush():
    """PROFAGENT_SUMMARY=stdout, buffered stdout text, then _exit(3) or a default-fatal SIGTERM:
    stdio discards the text without the agent, and so it stays discarded with it (the summary is
    written to fd 1 directly, not through the application's stdout stream)."""
    for mode, want in (("0", 3), ("1", -signal.SIGTERM)):
        base = run(["noflush", mode], False)
        p = run(["noflush", mode], True, {"PROFAGENT_SUMMARY": "stdout"})
        check(base.returncode == want and p.returncode == want,
              "noflush %s: status %d as without the agent (%d)" % (mode, want, p.returncode))
        check(base.stdout == b"", "noflush %s: no agent: nothing on stdout (%r)" % (mode, base.stdout[:100]))
        rest = p.stdout.split(SUMMARY)[0] if SUMMARY in p.stdout else None
        check(rest == b"" and b"BUFFERED" not in p.stdout,
              "noflush %s: agent: stdout is the summary alone, the discarded text is not there (%r)"
              % (mode, p.stdout[:200]))


def t_fifo():
    """PROFAGENT_SUMMARY=file:FIFO with no reader: one warning naming it, the summary goes to
    stderr (not lost, no wait for a reader)."""
    fifo = os.path.join(WORK, "summary.fifo")
    os.mkfifo(fifo)
    p = run(["lines"], True, {"PROFAGENT_SUMMARY": "file:" + fifo})
    warn = [l for l in p.stderr.decode(errors="replace").splitlines() if l.startswith("profagent:") and fifo in l]
    check(p.returncode == 0 and p.stdout == b"app line 0\napp line 1\napp line 2\n", "exit 0, stdout unchanged")
    check(len(warn) == 1 and "no reader" in warn[0], "one warning naming the FIFO (%s)" % warn)
    check(SUMMARY in p.stderr, "the summary is on stderr")


def exec_ok(size, agent, extra=None):
    p = run(["e2big", str(size)], agent, extra)
    return p.returncode == 0 and p.stdout == b""


def t_e2big():
    """An exec whose environment is just below Linux's limit (the largest size that works
    without the agent, bisected) works under the agent too, also when the agent printed a
    configuration message (its note would grow the new image's environment past the limit)."""
    lo, hi = 1 << 20, 8 << 20
    if exec_ok(hi, False):
        check(False, "an exec of %d bytes of environment fails without the agent (stack limit unlimited?)" % hi)
        return
    check(exec_ok(lo, False), "an exec of %d bytes works without the agent" % lo)
    while hi - lo > 8:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if exec_ok(mid, False) else (lo, mid)
    print("figure: largest environment that execs without the agent: %d bytes" % lo)
    check(exec_ok(lo, True), "%d bytes: the exec works under the agent" % lo)
    bogus = {"PROFAGENT_TRACE": "bogus"}
    p = run(["e2big", str(lo)], True, bogus)
    check(p.returncode == 0 and p.stdout == b"", "%d bytes, after a configuration message: the exec works (%r)"
          % (lo, p.stdout[:100]))
    check(b"PROFAGENT_TRACE" in p.stderr, "the configuration message was printed")
    check(not exec_ok(hi, True, bogus), "%d bytes: still E2BIG under the agent" % hi)


def t_dropped():
    """The agent's messages lost to a full, non-blocking stderr pipe (two unknown PROFAGENT_*
    variables, one warning each): the summary, sent to a file, and the DB's SESSION_COUNTERS
    say how many (the count of the agent's lines the same run prints to a stderr that is read);
    a run that lost none has no such line nor row."""
    import fcntl, sqlite3
    bogus = {"PROFAGENT_BOGUS_A": "1", "PROFAGENT_BOGUS_B": "1"}
    p = run(["lines"], True, bogus)
    want = len([l for l in p.stderr.decode(errors="replace").splitlines() if l.startswith("profagent:")
                and "PROFAGENT_BOGUS_" in l])
    check(want == 2, "stderr read: two warnings, one per unknown variable (%d)" % want)
    for full in (True, False):
        summ = os.path.join(WORK, "summary-%d.txt" % full)
        db = os.path.join(WORK, "dropped-%d.db" % full)
        extra = dict(bogus if full else {}, PROFAGENT_SUMMARY="file:" + summ, PROFAGENT_OUTPUT=db)
        r, w = os.pipe()
        fl = fcntl.fcntl(w, fcntl.F_GETFL)
        fcntl.fcntl(w, fcntl.F_SETFL, fl | os.O_NONBLOCK)
        filled = 0
        try:
            while True:
                filled += os.write(w, b"y" * 4096)
        except BlockingIOError:
            pass
        if not full:
            os.read(r, filled)
        p = run(["lines"], True, extra, stderr=w)
        os.close(w)
        os.close(r)
        text = open(summ).read() if os.path.exists(summ) else ""
        line = [l for l in text.splitlines() if "agent's messages were not written" in l]
        c = sqlite3.connect(db)
        rows = c.execute("SELECT value FROM SESSION_COUNTERS WHERE name = 'agent_messages_dropped'").fetchall()
        c.close()
        if full:
            check(p.returncode == 0 and filled >= 4096, "full pipe (%d bytes): exit 0 (%d)" % (filled, p.returncode))
            check(len(line) == 1 and line[0].startswith("WARNING: %d of the agent's messages" % want),
                  "full pipe: the summary says %d messages were not written (%s)" % (want, line))
            check(rows == [(want,)], "full pipe: SESSION_COUNTERS agent_messages_dropped = %d (%s)" % (want, rows))
        else:
            check(p.returncode == 0 and "profagent summary" in text, "read pipe: exit 0, the summary in the file")
            check(line == [] and rows == [], "read pipe: no line, no row (%s, %s)" % (line, rows))


TESTS = {k[2:]: v for k, v in globals().items() if k.startswith("t_")}
TESTS[TEST]()
print("%s: %s" % (TEST, "FAIL (%d)" % len(FAILS) if FAILS else "ok"))
sys.exit(1 if FAILS else 0)
