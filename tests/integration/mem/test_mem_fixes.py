#!/usr/bin/env python3
"""test_mem_fixes.py - regression tests of the device-memory defects found by QA (qa6): each
check names its defect; expectations are hand-computed from the programs in this folder."""
import argparse, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pa_itest import check, FAILS  # noqa: E402
import csv
import io
import os
import re
import sqlite3
import subprocess
import sys


def run_agent(a, argv, db, env_extra=None):
    if os.path.exists(db):
        os.unlink(db)
    env = dict(os.environ, LD_PRELOAD=a.agent, ZE_ENABLE_ALT_DRIVERS=a.driver, PROFAGENT_OUTPUT=db,
               ASAN_OPTIONS="detect_leaks=0")
    env.pop("PROFAGENT_CALLSTACK_GROUPS", None)
    env.update(env_extra or {})
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL)
    if p.returncode != 0 or not os.path.exists(db):
        print(p.stdout, p.stderr)
        sys.exit("agent run of %s failed (rc %d)" % (argv, p.returncode))
    return p.stderr


def report(a, db, spec, rules=()):
    cmd = [a.cli, "stats", "-r", spec]
    for r in rules:
        cmd += ["--callstack-group-config", r]
    p = subprocess.run(cmd + [db], capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, "stats %s exit %d: %s" % (spec, p.returncode, p.stderr))
    rows = list(csv.reader(io.StringIO(p.stdout)))
    return [r[1:-1] if r and r[-1] == "" else r[1:] for r in rows[1:]], p.stderr


def pid_of(db):
    return str(sqlite3.connect(db, timeout=60).execute("SELECT value FROM META WHERE key='pid'").fetchone()[0])


def chain_frames(db, where="op = 0"):
    """(module, function) of the first allocation's call chain, innermost first."""
    c = sqlite3.connect(db, timeout=60)
    return c.execute("SELECT m.value, f.value FROM CALLCHAINS cc JOIN STRING_IDS m ON m.id = cc.module"
                     " JOIN STRING_IDS f ON f.id = cc.function WHERE cc.id = (SELECT callchainId FROM"
                     " DEVICE_MEMORY WHERE %s ORDER BY eventId LIMIT 1) ORDER BY cc.stackDepth" % where).fetchall()


def test_dlclose(a):
    """defect 1: 2 x 4096 from libmem_dlq1 (dlclose'd before libmem_dlq2 loads), 100 from dlq2."""
    rules = [r"q1=libmem_dlq1\.so", "q2=libmem_dlq2", "inner=dl_alloc_inner"]
    for close2 in ([], ["close2"]):
        db = os.path.join(a.workdir, "dl%d.db" % len(close2))
        run_agent(a, [os.path.join(a.bindir, "mem_dl_main"), a.libdir] + close2, db)
        pid = pid_of(db)
        got, _ = report(a, db, "device_memory_usage_summary", rules)
        want = [[pid, "0", "q1/inner", "8192"], [pid, "0", "q2", "100"]]
        check(got == want, "defect 1 (dlclose%s): got %s want %s" % (" both" if close2 else "", got, want))
        fr = chain_frames(db)
        check(len(fr) > 2 and fr[1][1] == "dl_alloc_inner" and fr[1][0].endswith("/libmem_dlq1.so") and
              fr[2][1] == "dl_alloc", "defect 1: first chain = qa_alloc <- dl_alloc_inner <- dl_alloc in"
              " libmem_dlq1.so (full path): %s" % fr[:3])


def test_drops(a):
    """defect 2: 8 x 20000 churned + 8 leaked (8028 bytes) under a small ring (64K) that fills."""
    db = os.path.join(a.workdir, "thr.db")
    err = run_agent(a, [os.path.join(a.bindir, "mem_thr")], db, {"PROFAGENT_RING_SIZE": "64K"})
    pid = pid_of(db)
    c = sqlite3.connect(db, timeout=60)
    dropped = c.execute("SELECT value FROM SESSION_COUNTERS WHERE name = 'mem_records_dropped'").fetchone()
    check(dropped is not None and dropped[0] == 0, "defect 2: mem_records_dropped stored and 0: %s" % (dropped,))
    n = c.execute("SELECT count(*), sum(op = 1) FROM DEVICE_MEMORY").fetchone()
    check(n == (320008, 160000), "defect 2: all 160008 allocs + 160000 frees recorded: %s" % (n,))
    got, _ = report(a, db, "device_memory_usage_summary", ["churn=churn_site", "leak=leak_site"])
    check(got == [[pid, "0", "leak", "8028"]], "defect 2: 8028 unreleased bytes all in leak: %s" % got)
    check("8 unreleased = 8028 bytes" in err, "defect 2: exit summary 8 unreleased = 8028 bytes")
    # the caveat: a DB that says records were lost makes the reports warn once on stderr
    c.execute("UPDATE SESSION_COUNTERS SET value = 5 WHERE name = 'mem_records_dropped'")
    c.commit()
    _, e = report(a, db, "device_memory_usage_summary", ["leak=leak_site"])
    check(e.count("5 device-memory records were lost") == 1, "defect 2: report caveat on stderr: %r" % e)


def test_trace_mem_alone(a):
    """defect 4: PROFAGENT_TRACE=mem alone records the allocation (and no ze API rows)."""
    db = os.path.join(a.workdir, "memonly.db")
    run_agent(a, [os.path.join(a.bindir, "mem_deep")], db, {"PROFAGENT_TRACE": "mem"})
    c = sqlite3.connect(db, timeout=60)
    n = c.execute("SELECT count(*), sum(size) FROM DEVICE_MEMORY WHERE op = 0").fetchone()
    check(n == (1, 777), "defect 4: TRACE=mem records the 777-byte allocation: %s" % (n,))
    has_api = c.execute("SELECT count(*) FROM sqlite_master WHERE name = 'ZE_API'").fetchone()[0]
    napi = c.execute("SELECT count(*) FROM ZE_API").fetchone()[0] if has_api else 0
    check(napi == 0, "defect 4: no ze API rows with TRACE=mem: %d" % napi)


def test_depth(a):
    """defects 5 and 10: depth N keeps N application frames, then a truncation marker."""
    db = os.path.join(a.workdir, "deep3.db")
    run_agent(a, [os.path.join(a.bindir, "mem_deep")], db, {"PROFAGENT_CALLSTACK_DEPTH": "3"})
    fns = [f for _, f in chain_frames(db)]
    # qa_alloc (mem_qa.h, not inlined: -fno-inline) is the allocation's call site
    check(fns[:3] == ["qa_alloc", "deep_leaf", "deep_1"], "defect 5: depth 3 = qa_alloc, deep_leaf, deep_1: %s" % fns)
    check(len(fns) == 4 and re.match(r"\[\.\.\. (\d+ frames|more frames) omitted\]$", fns[3] or ""),
          "defect 10: 3 frames + one truncation marker: %s" % fns)
    db = os.path.join(a.workdir, "deep1.db")
    run_agent(a, [os.path.join(a.bindir, "mem_deep")], db, {"PROFAGENT_CALLSTACK_DEPTH": "1"})
    fns = [f for _, f in chain_frames(db)]
    check(fns[:1] == ["qa_alloc"], "defect 5: depth 1 keeps qa_alloc: %s" % fns)
    db = os.path.join(a.workdir, "deep32.db")
    run_agent(a, [os.path.join(a.bindir, "mem_deep")], db)
    fns = [f for _, f in chain_frames(db)]
    check(fns[:13] == ["qa_alloc", "deep_leaf"] + ["deep_%d" % i for i in range(1, 11)] + ["main"] and
          not any("omitted" in f for f in fns), "defects 5/10: full stack under depth 32, no marker: %s" % fns)


def test_rules_in_db(a):
    """defect 6: the agent's PROFAGENT_CALLSTACK_GROUPS are the report's default rules."""
    db = os.path.join(a.workdir, "rules.db")
    err = run_agent(a, [os.path.join(a.bindir, "mem_deep")], db, {"PROFAGENT_CALLSTACK_GROUPS": "dd=deep_5"})
    pid = pid_of(db)
    c = sqlite3.connect(db, timeout=60)
    meta = c.execute("SELECT value FROM META WHERE key = 'callstack_groups'").fetchone()
    check(meta is not None and meta[0] == "dd=deep_5", "defect 6: META callstack_groups: %s" % (meta,))
    got, _ = report(a, db, "device_memory_usage_summary")
    check(got == [[pid, "0", "dd", "777"]], "defect 6: report without CLI rules uses the agent's: %s" % got)
    got, _ = report(a, db, "device_memory_usage_summary", ["x=deep_leaf"])
    check(got == [[pid, "0", "x", "777"]], "defect 6: CLI rules replace the agent's: %s" % got)
    check("PROFAGENT_CALLSTACK_GROUPS rules" in err, "defect 6: exit summary names the agent's rules")


def test_stripped(a):
    """defect 11: a stripped PIE's frames print as module+offset."""
    db = os.path.join(a.workdir, "stripped.db")
    run_agent(a, [os.path.join(a.bindir, "mem_deep_stripped")], db)
    fns = [f for _, f in chain_frames(db)]
    check(len(fns) > 0 and re.match(r"^mem_deep_stripped\+0x[0-9a-f]+$", fns[0]),
          "defect 11: stripped frame as mem_deep_stripped+0x...: %s" % fns[:3])


def test_no_fd_kept(a):
    """The agent keeps no fd in the application's fd space once stacks were walked: open() gets
    3 as without the agent, and with fds 0/1 closed at start they stay closed (EBADF = 9)."""
    prog = os.path.join(a.bindir, "mem_fds")
    # no streaming: the DB thread's batch opens the DB now and then (transient fds)
    env = {"PROFAGENT_DB_COMMIT_MS": "0"}
    for closed, want in ((False, "write=1/0 read=0/0 open=3"), (True, "write=-1/9 read=-1/9 open=0")):
        res = os.path.join(a.workdir, "fds%d.txt" % closed)
        db = os.path.join(a.workdir, "fds%d.db" % closed)
        argv = ["sh", "-c", 'exec "$0" "$1" <&- >&-', prog, res] if closed else [prog, res]
        if os.path.exists(res):
            os.unlink(res)
        run_agent(a, argv, db, env)
        got = open(res).read().strip() if os.path.exists(res) else None
        check(got == want, "no fd kept (%s): got %s want %s" % ("0/1 closed" if closed else "open fds", got, want))


def test_failed_free_known(a):
    """defect 9: a failed zeMemFreeExt of a live 555 B allocation is not an unknown address."""
    db = os.path.join(a.workdir, "freeext.db")
    err = run_agent(a, [os.path.join(a.bindir, "mem_deep"), "freeext"], db)
    check("2 allocation calls (2 succeeded, 0 failed: not counted as usage), 1 frees (0 of unknown addresses, 1 failed: allocation kept),"
          " 2 unreleased = 1332 bytes" in err, "defect 9: exit counts line")
    det, _ = report(a, db, "device_memory_usage_detail:usage-mode=all", ["d=deep_leaf", "q=qa_alloc"])
    fr = [r for r in det if r[8].startswith("free")]
    check(len(fr) == 1 and fr[0][8] == "free (failed)" and fr[0][1] == "0" and fr[0][7] == "555" and
          fr[0][2] == "q", "defect 9: failed free row shows device 0, 555 B, group q: %s" % fr)


def main():
    ap = argparse.ArgumentParser()
    for o in ("agent", "cli", "driver", "bindir", "libdir", "python", "workdir"):
        ap.add_argument("--" + o, required=True)
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    only = os.environ.get("MEM_FIXES_ONLY", "")
    for name, fn in sorted(globals().items()):
        if name.startswith("test_") and (not only or only in name):
            fn(a)
    if FAILS:
        print("%d check(s) failed" % len(FAILS))
        return 1
    print("mem fixes: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
