#!/usr/bin/env python3
"""run_agentthreads.py BUILD CASE - the agent's own threads in a running profiled program.
  stacks  every agent thread's stack mapping is at most 1 MiB (the bound of common/pa_thread.h),
          not the default 8 MiB: found through the stack pointer of each thread's current system
          call (/proc/PID/task/TID/syscall) and the mapping holding it (/proc/PID/maps).
  unshare the agent starts no thread before the first record: unshare(CLONE_NEWUSER) first thing
          in main (the kernel refuses it, EINVAL, to a multi-threaded caller) gets what it gets
          without the agent, the process has 1 thread then, and the Level Zero work after it is
          in a complete DB.
  fork    a child forked before the agent's threads started runs (collection is off in a fork
          child, so it writes no DB) and exits with its status; the parent's DB has its rows."""
import os, sqlite3, subprocess, sys, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pa_itest import FAILS, agent_env, check

BUILD = os.path.abspath(sys.argv[1])
CASE = sys.argv[2]
APP = os.path.join(BUILD, "tests", "agentthreads", "agentthreads_app")
STACK_BOUND = 1 << 20  # PA_THREAD_STACK_WORKER
PAGE = os.sysconf("SC_PAGE_SIZE")


def maps(pid):
    """[(start, end)] of /proc/pid/maps."""
    out = []
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            lo, hi = line.split()[0].split("-")
            out.append((int(lo, 16), int(hi, 16)))
    return out


def thread_sp(pid, tid):
    """The stack pointer of thread tid blocked in a system call, None when it is not in one."""
    try:
        with open("/proc/%d/task/%d/syscall" % (pid, tid)) as f:
            fields = f.read().split()
    except OSError:
        return None
    return int(fields[-2], 16) if len(fields) >= 3 else None  # "nr args... sp pc"


def t_stacks():
    """The app creates no thread of its own and loads no driver (HGTX only): every thread besides
    the main one is the agent's (aggregator, spool, DB thread, finisher)."""
    with tempfile.TemporaryDirectory() as work:
        env = agent_env(BUILD, os.path.join(work, "s.db"), PROFAGENT_SUMMARY="none")
        p = subprocess.Popen([APP, "wait"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            ready = p.stdout.readline()
            check(ready == b"ready\n", "stacks: the app got going (%r)" % ready)
            sizes = {}
            for _ in range(200):  # a thread between two waits has no system call to show: look again
                m = maps(p.pid)
                for tid in sorted(int(t) for t in os.listdir("/proc/%d/task" % p.pid)):
                    sp = thread_sp(p.pid, tid)
                    if tid == p.pid or tid in sizes or sp is None:
                        continue
                    sizes[tid] = next((hi - lo for lo, hi in m if lo <= sp < hi), None)
                if len(sizes) == len(os.listdir("/proc/%d/task" % p.pid)) - 1:
                    break
            print("agent thread stacks (KiB):", {t: s // 1024 for t, s in sizes.items() if s})
            check(len(sizes) >= 3, "stacks: the aggregator, spool and DB threads at least (%d found)" % len(sizes))
            for tid, size in sizes.items():
                check(size is not None and size <= STACK_BOUND + PAGE,
                      "stacks: thread %d's stack mapping is %s bytes, the bound %d" % (tid, size, STACK_BOUND))
        finally:
            p.stdin.close()
            check(p.wait(timeout=60) == 0, "stacks: the app exits 0")


def t_unshare():
    plain_env = {k: v for k, v in agent_env(BUILD, "unused.db").items() if k != "LD_PRELOAD"}
    plain = subprocess.run([APP, "unshare"], env=plain_env, capture_output=True, timeout=60)
    check(plain.returncode == 0, "unshare: the plain run exits 0 (%d: %r)" % (plain.returncode, plain.stderr[-300:]))
    want = plain.stdout.split(b"\n")[0].split()
    check(want[:2] == [b"threads", b"1"], "unshare: the plain run is single-threaded (%r)" % want)
    with tempfile.TemporaryDirectory() as work:
        db = os.path.join(work, "u.db")
        p = subprocess.run([APP, "unshare"], env=agent_env(BUILD, db, PROFAGENT_SUMMARY="none"),
                           capture_output=True, timeout=120)
        check(p.returncode == 0, "unshare: exits 0 under the agent (%d: %r)" % (p.returncode, p.stderr[-300:]))
        got = p.stdout.split(b"\n")[0].split()
        print("plain:", want, "agent:", got)
        check(got == want, "unshare: threads and unshare's result as without the agent (%r, plain %r)" % (got, want))
        check(os.path.exists(db), "unshare: the DB is written")
        if os.path.exists(db):
            c = sqlite3.connect(db)
            meta = dict(c.execute("SELECT key, value FROM META").fetchall())
            names = [r[0] for r in c.execute("SELECT s.value FROM HGTX_RANGES r JOIN STRING_IDS s ON s.id = r.nameId")]
            calls = dict(c.execute("SELECT s.value, count(*) FROM ZE_API z JOIN STRING_IDS s ON s.id = z.nameId"
                                   " GROUP BY s.value").fetchall())
            c.close()
            check(str(meta.get("session_complete")) == "1", "unshare: session_complete=1 (%r)" % meta.get("session_complete"))
            check(names == ["after_unshare"], "unshare: the range after unshare is in the DB (%r)" % names)
            check(calls.get("zeMemFree") == 1 and calls.get("zeMemAllocHost") == 1,
                  "unshare: the Level Zero calls after unshare are in the DB (%r)" % calls)


def t_fork():
    with tempfile.TemporaryDirectory() as work:
        db = os.path.join(work, "f.db")
        p = subprocess.run([APP, "fork"], env=agent_env(BUILD, db, PROFAGENT_SUMMARY="none"), capture_output=True,
                           timeout=120)
        check(p.returncode == 0, "fork: exits 0 (%d: %r)" % (p.returncode, p.stderr[-300:]))
        check(p.stdout.split(b"\n")[0] == b"child %d" % (3 << 8), "fork: the child exited 3 (%r)" % p.stdout[:40])
        dbs = sorted(f for f in os.listdir(work) if f.endswith(".db"))
        check(dbs == ["f.db"], "fork: one DB, the parent's (%r)" % dbs)
        if os.path.exists(db):
            c = sqlite3.connect(db)
            names = [r[0] for r in c.execute("SELECT s.value FROM HGTX_RANGES r JOIN STRING_IDS s ON s.id = r.nameId")]
            meta = dict(c.execute("SELECT key, value FROM META").fetchall())
            c.close()
            check(names == ["parent"], "fork: the parent's range only (%r)" % names)
            check(str(meta.get("session_complete")) == "1", "fork: session_complete=1")


CASES = {"stacks": t_stacks, "unshare": t_unshare, "fork": t_fork}
if CASE not in CASES:
    sys.exit("run_agentthreads.py: unknown case %r (accepted: %s)" % (CASE, ", ".join(CASES)))
CASES[CASE]()
print("%d passed, %d failed" % (0 if FAILS else 1, 1 if FAILS else 0))
sys.exit(1 if FAILS else 0)
