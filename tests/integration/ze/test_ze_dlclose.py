#!/usr/bin/env python3
"""test_ze_dlclose.py - an application that dlclose()s the loader it dlopen'd runs as without the
agent: "reload 3" (open, zeInit, zeDriverGet, close, three times) and "unload" (10 fills on an
immediate list, the loader closed before main returns) give the same output and exit status with
and without the agent (before: SIGSEGV every run, the agent jumping into the unmapped loader at the
next zeInit or at exit), and every call and fill is in the DB (each round's zeInit and zeDriverGet,
10 fills with device times). usage: test_ze_dlclose.py BUILD_DIR"""
import os, sqlite3, subprocess, sys, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pa_itest import check, FAILS, preload  # noqa: E402

B = sys.argv[1]
APP = os.path.join(B, "tests", "ze", "ze_dlclose")
WORK = tempfile.mkdtemp(prefix="pa_zedlclose_")
BASE = dict(os.environ, ZE_ENABLE_ALT_DRIVERS=os.path.join(B, "lib", "libze_simdev.so"), ASAN_OPTIONS="detect_leaks=0")


def run(args, db=None):
    env = dict(BASE)
    if db:
        env.update(LD_PRELOAD=preload(os.path.join(B, "lib", "libprofagent.so")), PROFAGENT_OUTPUT=db,
                   PROFAGENT_SUMMARY="none")
    return subprocess.run([APP] + args, env=env, capture_output=True, text=True, timeout=120)


def counts(db, sql):
    c = sqlite3.connect(db)
    r = dict(c.execute(sql).fetchall())
    c.close()
    return r


for args, want_api, want_fills in ((["reload", "3"], {"zeInit": 3, "zeDriverGet": 3}, 0),
                                   (["unload"], {"zeInit": 1, "zeCommandListAppendMemoryFill": 10}, 10)):
    name = "_".join(args)
    plain = run(args)
    check(plain.returncode == 0, "%s without the agent: rc %d %s" % (name, plain.returncode, plain.stderr[-300:]))
    for i in range(3):
        db = os.path.join(WORK, "%s%d.db" % (name, i))
        p = run(args, db)
        check(p.returncode == plain.returncode and p.stdout == plain.stdout,
              "%s run %d under the agent: rc %d (plain %d), same output %s; %s"
              % (name, i, p.returncode, plain.returncode, p.stdout == plain.stdout, p.stderr[-300:]))
        if not os.path.exists(db):
            check(False, "%s run %d: no DB" % (name, i))
            continue
        api = counts(db, "SELECT s.value, count(*) FROM ZE_API a JOIN STRING_IDS s ON s.id = a.nameId GROUP BY 1")
        check(all(api.get(k) == v for k, v in want_api.items()), "%s run %d: calls %s include %s" % (name, i, api, want_api))
        fills = counts(db, "SELECT kind, count(*) FROM ZE_OPS WHERE end > start GROUP BY 1").get(3, 0)
        check(fills == want_fills, "%s run %d: %d fills with device times (want %d)" % (name, i, fills, want_fills))
print("%d failed" % len(FAILS) if FAILS else "all dlclose checks passed")
sys.exit(1 if FAILS else 0)
