#!/usr/bin/env python3
"""test_mem.py - device memory under the agent on simdev: exact group rows for every usage mode,
match-first-group, cross-thread/unknown/failed handling, Python frames, exit summary == report,
malformed rules. Expectations are hand-computed from the programs (see the comments)."""
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


def run_agent(a, argv, db, rules, extra_env=None):
    if os.path.exists(db):
        os.unlink(db)
    env = dict(os.environ, LD_PRELOAD=a.agent, ZE_ENABLE_ALT_DRIVERS=a.driver, PROFAGENT_OUTPUT=db,
               PROFAGENT_CALLSTACK_GROUPS=rules, ASAN_OPTIONS="detect_leaks=0")
    env.update(extra_env or {})
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    if p.returncode != 0 or not os.path.exists(db):
        print(p.stdout, p.stderr)
        sys.exit("agent run of %s failed (rc %d)" % (argv, p.returncode))
    return p.stderr


def report(a, db, spec, rules=(), extra=()):
    cmd = [a.cli, "stats", "-r", spec] + list(extra)
    for r in rules:
        cmd += ["--callstack-group-config", r]
    p = subprocess.run(cmd + [db], capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, "stats %s exit %d: %s" % (spec, p.returncode, p.stderr))
    rows = list(csv.reader(io.StringIO(p.stdout)))
    return [r[1:-1] if r and r[-1] == "" else r[1:] for r in rows[1:]], p.stderr


def exit_rows(stderr):
    """(pid, device, groups, usage) rows of the exit summary's memory section."""
    out, on = [], False
    for line in stderr.splitlines():
        if line.startswith("Unreleased device memory by group"):
            on = True
            continue
        if on and "Group List" in line:
            continue  # the column header
        if on:
            m = re.match(r"\s+(\d+)\s+(\S+)\s+(\S+)\s+(\d+)$", line)
            if not m:
                break
            out.append([m.group(1), m.group(2), m.group(3), m.group(4)])  # the report's column order
    return out


def test_script(a):
    """mem_script: path a allocs 100, 200, 300 (100 freed, 300 freed on another thread);
    path b: device 400, shared 500, host 50 (none freed); a 2^50 B alloc fails; a free of an
    allocation made through the driver directly (unseen) and of a bogus pointer."""
    db = os.path.join(a.workdir, "script.db")
    rules = "pa=alloc_path_a; pb=alloc_path_b\n=x;name=;bad=(unclosed"
    err = run_agent(a, [a.script], db, rules)
    for bad, why in (("=x", "empty group name"), ("name=", "no frame regex"), ("bad=(unclosed", "invalid regex")):
        check('rule "%s" ignored: %s' % (bad, why) in err, "malformed rule message for %s" % bad)
    check("7 allocation calls (6 succeeded, 1 failed: not counted as usage), 4 frees (2 of unknown addresses), 4 unreleased = 1150 bytes" in err,
          "exit counts line")
    pid = str(sqlite3.connect(db).execute("SELECT value FROM META WHERE key='pid'").fetchone()[0])
    R = ["pa=alloc_path_a", "pb=alloc_path_b"]
    want = {
        "alloc-count": [[pid, "0", "pa", "3"], [pid, "0", "pb", "2"], [pid, "-", "pb", "1"]],
        "alloc-size": [[pid, "0", "pb", "900"], [pid, "0", "pa", "600"], [pid, "-", "pb", "50"]],
        # equal usage: device order, host memory ('-') last
        "unreleased-count": [[pid, "0", "pb", "2"], [pid, "0", "pa", "1"], [pid, "-", "pb", "1"]],
        "unreleased-size": [[pid, "0", "pb", "900"], [pid, "0", "pa", "200"], [pid, "-", "pb", "50"]],
    }
    for mode, rows in want.items():
        got, _ = report(a, db, "device_memory_usage_summary:usage-mode=" + mode, R)
        check(got == rows, "script %s: got %s want %s" % (mode, got, rows))
    got, _ = report(a, db, "device_memory_usage_summary", R)
    check(got == want["unreleased-size"], "default mode is unreleased-size")
    check(exit_rows(err) == want["unreleased-size"], "exit summary rows %s == report" % exit_rows(err))
    got, _ = report(a, db, "device_memory_usage_summary:usage-mode=alloc-count", R, ["--filter-time", "0:1"])
    check(got == [], "--filter-time 0:1 (before any allocation) gives no row: %s" % got)
    det, _ = report(a, db, "device_memory_usage_detail", R)
    check([r[7] for r in det] == ["200", "400", "500", "50"], "detail unreleased sizes %s" % [r[7] for r in det])
    check([r[2] for r in det] == ["pa", "pb", "pb", "pb"], "detail groups")
    det, _ = report(a, db, "device_memory_usage_detail:usage-mode=all", R)
    flags = [r[8] for r in det]
    check(len(det) == 11, "detail all: 7 allocs + 4 frees, got %d" % len(det))
    # both frees of addresses never allocated under the agent are "free (unknown)", also the one
    # the driver failed (fresh #11; docs/memory.md, the summary's "2 of unknown addresses")
    check(flags.count("device (failed)") == 1 and flags.count("free (unknown)") == 2 and
          flags.count("free (failed)") == 0 and flags.count("shared") == 1 and flags.count("host") == 1,
          "detail access flags %s" % flags)
    ids = [int(r[9]) for r in det]
    check(ids == list(range(1, 12)), "detail all: Event IDs are 1..11 in time order: %s" % ids)
    check([int(r[3]) for r in det] == sorted(int(r[3]) for r in det), "detail sorted by time")
    check([r[5] for r in det] == ["1"] * 11,
          "Context ID is the small id 1 (one context, as the ze reports), never a pointer: %s" % [r[5] for r in det])
    xfree = [r for r in det if r[8] == "free" and r[7] == "300"]
    check(len(xfree) == 1 and xfree[0][4] != pid, "free of a3 on another thread matched (size 300, other tid)")
    c = sqlite3.connect(db)
    # CALLCHAINS: depth 0 is the allocation call site, frames resolve to functions and lines
    top = c.execute("SELECT f.value, s.value FROM CALLCHAINS cc JOIN STRING_IDS f ON f.id = cc.function"
                    " JOIN STRING_IDS s ON s.id = cc.stack WHERE cc.stackDepth = 0 ORDER BY cc.id").fetchall()
    check(any(t[0] == "alloc_path_a" and "mem_script.c:" in t[1] for t in top), "depth-0 frame alloc_path_a with file:line")
    # symbol versions are not part of a frame's function (fresh #15): "__libc_start_main", never
    # "__libc_start_main@@GLIBC_2.34", in the DB and in the exit summary's leak stacks
    fnames = [f for (f,) in c.execute("SELECT DISTINCT s.value FROM CALLCHAINS cc JOIN STRING_IDS s"
                                        " ON s.id = cc.function")]
    check("__libc_start_main" in fnames and not any("@" in f for f in fnames),
          "frames without symbol versions: %s" % [f for f in fnames if "libc_start" in f or "@" in f])
    check("@GLIBC" not in err and "@@" not in err, "exit summary stacks without symbol versions")
    # 7 distinct native stacks: a1..a3 and b1, b2, h1 are six different return addresses in
    # main, plus the failed huge allocation
    n = c.execute("SELECT count(DISTINCT id) FROM CALLCHAINS").fetchone()[0]
    check(n == 7, "7 distinct stacks, got %d" % n)


def test_leaks(a):
    """samples/leaks: libfoo LaunchKernel 4 x 1 MiB (first freed), libbar 3 x 256 KiB (last
    freed), 64 KiB from main freed on another thread, a failed huge alloc, a bogus free."""
    db = os.path.join(a.workdir, "leaks.db")
    rules = ["acompute=(libfoo|libbar)", "launch_kernel=libfoo/LaunchKernel", "loss=loss.py"]
    err = run_agent(a, [a.leaks], db, ";".join(rules))
    pid = str(sqlite3.connect(db).execute("SELECT value FROM META WHERE key='pid'").fetchone()[0])
    want = [[pid, "0", "acompute/launch_kernel", "3145728"], [pid, "0", "acompute", "524288"]]
    got, _ = report(a, db, "device_memory_usage_summary:usage-mode=unreleased-size", rules)
    check(got == want, "leaks unreleased-size %s" % got)
    check(exit_rows(err) == want, "leaks exit summary == report: %s" % exit_rows(err))
    got, _ = report(a, db, "device_memory_usage_summary:usage-mode=unreleased-size:match-first-group", rules)
    check(got == [[pid, "0", "acompute", "3670016"]], "leaks match-first-group %s" % got)
    got, _ = report(a, db, "device_memory_usage_summary:usage-mode=alloc-count", rules)
    check(got == [[pid, "0", "acompute/launch_kernel", "4"], [pid, "0", "acompute", "3"], [pid, "0", "others", "1"]],
          "leaks alloc-count %s" % got)
    c = sqlite3.connect(db)
    n = c.execute("SELECT count(DISTINCT callchainId) FROM DEVICE_MEMORY WHERE op = 0 AND size = 1048576").fetchone()[0]
    check(n == 1, "the 4 LaunchKernel allocations made in one loop share one call chain, got %d" % n)
    check("Leak #1: 3145728 bytes in 3 allocations" in err and "LaunchKernel (libfoo.so)" in err,
          "top leak stack printed")
    # a malformed CLI rule is refused (status 2, one message naming it), not the report grouped
    # otherwise than asked
    p = subprocess.run([a.cli, "stats", "-r", "device_memory_usage_summary"] +
                       [x for r in rules + ["=x"] for x in ("--callstack-group-config", r)] + [db],
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == 2 and p.stdout == "" and p.stderr.count("\n") == 1 and
          "--callstack-group-config '=x' is not accepted: empty group name" in p.stderr,
          "CLI malformed rule refused: rc %d %r" % (p.returncode, p.stderr))


def test_python(a):
    """loss.py: compute_loss() allocates 3 x 4096 (leaked) and 8192 (freed) via ctypes."""
    db = os.path.join(a.workdir, "loss.db")
    # the real interpreter, not a wrapper script (pyenv shims would run under the agent too)
    py = subprocess.run([a.python, "-c", "import sys; print(sys.executable)"], capture_output=True,
                        text=True).stdout.strip() or a.python
    loader_dir = os.path.dirname(a.driver)
    err = run_agent(a, [py, os.path.join(os.path.dirname(__file__), "loss.py")], db, "loss=loss.py",
                    {"LD_LIBRARY_PATH": os.environ.get("LD_LIBRARY_PATH", "") + ":" + loader_dir})
    pid = str(sqlite3.connect(db).execute("SELECT value FROM META WHERE key='pid'").fetchone()[0])
    got, _ = report(a, db, "device_memory_usage_summary", ["loss=loss.py"])
    check(got == [[pid, "0", "loss", "12288"]], "python loss group %s" % got)
    c = sqlite3.connect(db)
    fr = [r[0] for r in c.execute("SELECT s.value FROM CALLCHAINS cc JOIN STRING_IDS s ON s.id = cc.stack"
                                  " WHERE cc.id = (SELECT callchainId FROM DEVICE_MEMORY WHERE op = 0 LIMIT 1)"
                                  " ORDER BY cc.stackDepth")]
    names = [f.split(" ")[0] for f in fr]
    check("compute_loss" in names and "main" in names, "python frames in the stack: %s" % names)
    if "compute_loss" in names:
        i = names.index("compute_loss")
        check(any(n.startswith("_PyEval_EvalFrameDefault") for n in names[i:]),
              "python frames sit inside (before) _PyEval_EvalFrameDefault")
        check(re.search(r"loss\.py:\d+$", fr[i]) is not None, "python frame has file:line: %s" % fr[i])
    check(exit_rows(err) == [[pid, "0", "loss", "12288"]], "python exit rows %s" % exit_rows(err))


def main():
    ap = argparse.ArgumentParser()
    for o in ("agent", "cli", "driver", "leaks", "script", "python", "workdir"):
        ap.add_argument("--" + o, required=True)
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    test_script(a)
    test_leaks(a)
    test_python(a)
    if FAILS:
        print("%d check(s) failed" % len(FAILS))
        return 1
    print("mem integration: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
