#!/usr/bin/env python3
"""test_ze_ctx_destroy.py - an application that destroys a context after running kernels without
events of its own (the agent's event pools and harvest lists live in that context), then works in
a second context. simdev refuses zeContextDestroy while children of the context are alive, as a
validating driver does: the application's destroys must return exactly what they return without
the agent, the run must exit 0, and the DB must hold every kernel of both contexts with its
device time (busy_ns kernels: exactly their argument). Both interception paths; sync (host syncs
before the destroys), nosync (none: the lists' destroys wait for the work) and leak (context
destroyed first with a list alive: refused with and without the agent, then destroyed).
usage: test_ze_ctx_destroy.py BUILD_DIR"""
import os, sqlite3, subprocess, sys, tempfile

B = sys.argv[1]
APP = os.path.join(B, "tests", "ze", "ze_ctx_destroy")
WORK = tempfile.mkdtemp(prefix="pa_ctxd_")
FAILS = []
WANT = {"kA": (3, 20000), "kA2": (4, 30000), "kB": (4, 50000)}


def check(cond, msg):
    print(("ok: " if cond else "FAIL: ") + msg)
    if not cond:
        FAILS.append(msg)


def run(mode, agent, path="auto"):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFAGENT_")}
    env.update(ZE_ENABLE_ALT_DRIVERS=os.path.join(B, "lib", "libze_simdev.so"), ASAN_OPTIONS="detect_leaks=0")
    db = os.path.join(WORK, "%s-%s.db" % (mode, path))
    if agent:
        env.update(LD_PRELOAD=os.path.join(B, "lib", "libprofagent.so"), PROFAGENT_OUTPUT=db,
                   PROFAGENT_SUMMARY="none", PROFAGENT_ZE_INTERCEPT=path)
    try:
        p = subprocess.run([APP, mode], env=env, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return None, "timeout", db
    return p.returncode, p.stdout.strip(), db


def counter(db, name):
    r = sqlite3.connect(db).execute("SELECT value FROM SESSION_COUNTERS WHERE name = ?", (name,)).fetchall()
    return r[0][0] if r else None


want_out = {"sync": "destroy A: 0x0\ndestroy B: 0x0", "nosync": "destroy A: 0x0\ndestroy B: 0x0",
            "leak": "destroy A: 0x78000006\ndestroy A again: 0x0\ndestroy B: 0x0"}
for mode in ("sync", "nosync", "leak"):
    rc, out, _ = run(mode, False)
    check(rc == 0 and out == want_out[mode], "%s without the agent: exit %s, %r" % (mode, rc, out))
    for path in ("entry", "tracer"):
        rc, out, db = run(mode, True, path)
        check(rc == 0 and out == want_out[mode], "%s (%s) under the agent: exit %s, %r" % (mode, path, rc, out))
        if rc != 0:
            continue
        c = sqlite3.connect(db)
        rows = c.execute("SELECT s.value, count(*), min(o.end - o.start), max(o.end - o.start) FROM ZE_OPS o"
                         " JOIN STRING_IDS s ON s.id = o.nameId WHERE o.kind = 1 GROUP BY s.value").fetchall()
        got = {n: (k, lo, hi) for n, k, lo, hi in rows}
        for name, (n, ns) in WANT.items():
            k, lo, hi = got.get(name, (0, 0, 0))
            check(k == n and abs(lo - ns) <= 1 and abs(hi - ns) <= 1,
                  "%s (%s): %s: %d kernels of %d..%d ns, want %d of %d" % (mode, path, name, k, lo, hi, n, ns))
        check(set(got) == set(WANT), "%s (%s): kernel names %s" % (mode, path, sorted(got)))
        # every kernel finished before its context went: nothing uncollected or lost
        unc, lost = counter(db, "ze_uncollected_ops"), counter(db, "ze_context_destroyed_ops")
        check(unc == 0 and lost == 0, "%s (%s): uncollected %s, lost at context destroy %s" % (mode, path, unc, lost))
sys.exit(1 if FAILS else 0)
