#!/usr/bin/env python3
"""test_ze_medians.py - medians of the Level Zero statistics past PROFAGENT_MEDIAN_BUDGET (1K
samples), against the medians of the DB's rows computed here. ze_ops_check many N: N H2D copies
(4 KiB, every 4th 64 KiB) and N kernels (2 us, every 4th 20 us): means far from the medians.
- 600 rounds (a small DB): the exit recomputes every inexact median from the rows: SUMMARY_STATS
  holds them exact for the API calls, kernels and copies (time and bytes), and the exit summary
  prints them (before: kernels and copies kept the mean with medianExact 0, and the summary printed
  '-' for an API median the writer had recomputed).
- 20000 rounds (more rows than the exit sorts): kernel and copy medians are left pending (NULL,
  medianExact 0, META medians_pending) and the first `profagent stats` stores them exact (before:
  the mean stayed, medianExact 0, while the reports printed the right median).
usage: test_ze_medians.py BUILD_DIR"""
import os, sqlite3, subprocess, sys, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pa_itest import check, FAILS, preload  # noqa: E402

B = sys.argv[1]
PA = os.path.join(B, "bin", "profagent")
EXE = os.path.join(B, "tests", "ze", "ze_ops_check")
WORK = tempfile.mkdtemp(prefix="pa_zemed_")
KERNEL, MEMOP, API = 4, 5, 3
H2D = "[memcpy Host-to-Device]"


def run(rounds, db):
    env = dict(os.environ, ZE_ENABLE_ALT_DRIVERS=os.path.join(B, "lib", "libze_simdev.so"),
               LD_PRELOAD=preload(os.path.join(B, "lib", "libprofagent.so")), ASAN_OPTIONS="detect_leaks=0",
               PROFAGENT_OUTPUT=db, PROFAGENT_MEDIAN_BUDGET="1K", PROFAGENT_SUMMARY="file:" + db + ".txt")
    p = subprocess.run([EXE, "many", str(rounds)], env=env, capture_output=True, timeout=240)
    ok = check(p.returncode == 0 and os.path.exists(db), "many %d: exit 0 and a DB (%r)" % (rounds, p.stderr[-300:]))
    return ok


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else int((v[n // 2 - 1] + v[n // 2]) / 2)


def want(db):
    """(category, key, tag) -> median of the rows, as the aggregator keys its statistics."""
    c = sqlite3.connect(db)
    w = {}
    d = [r[0] for r in c.execute("SELECT max(o.end - o.start, 0) FROM ZE_OPS o JOIN STRING_IDS s ON s.id = o.nameId"
                                 " WHERE o.kind = 1 AND s.value = 'busy_many'")]
    w[(KERNEL, "busy_many", 0)] = (len(d), median(d))
    rows = c.execute("SELECT max(end - start, 0), bytes FROM ZE_OPS WHERE kind = 2").fetchall()
    w[(MEMOP, H2D, 0)] = (len(rows), median([r[0] for r in rows]))
    w[(MEMOP, H2D, 1)] = (len(rows), median([r[1] for r in rows]))
    for name in ("zeCommandListAppendLaunchKernel", "zeCommandListAppendMemoryCopy", "zeKernelSetArgumentValue"):
        d = [r[0] for r in c.execute("SELECT max(a.end - a.start, 0) FROM ZE_API a JOIN STRING_IDS s ON s.id = a.nameId"
                                     " WHERE s.value = ?", (name,))]
        w[(API, name, 0)] = (len(d), median(d))
    c.close()
    return w


def stored(db):
    c = sqlite3.connect(db)
    got = {(cat, k, tag if cat == MEMOP else 0): (n, med, ex) for cat, k, tag, n, med, ex in c.execute(
        "SELECT s.category, k.value, s.tag, s.count, s.median, s.medianExact FROM SUMMARY_STATS s JOIN STRING_IDS k"
        " ON k.id = s.nameId WHERE s.category IN (3, 4, 5)")}
    pend = c.execute("SELECT value FROM META WHERE key = 'medians_pending'").fetchone()
    c.close()
    return got, pend[0] if pend else None


def summary_med(text, name, col):
    """The Med cell (column `col`, Row# first) of the summary rows named `name` (one per section)."""
    return [l.split()[col] for l in text.splitlines() if l.rstrip().endswith(" " + name)]


def small():
    db = os.path.join(WORK, "small.db")
    if not run(600, db):
        return
    w = want(db)
    got, pend = stored(db)
    for key, (n, med) in sorted(w.items()):
        g = got.get(key)
        # one zeKernelSetArgumentValue more: the kernel's first argument, before the rounds
        check(n == 600 + (key[1] == "zeKernelSetArgumentValue") and g == (n, med, 1), "600 rounds: %s stored %r, rows: %d samples, median %d" % (key, g, n, med))
    check(pend == 0, "600 rounds: no median left pending (%r)" % pend)
    text = open(db + ".txt").read()
    check(summary_med(text, "busy_many", 5) == [str(w[(KERNEL, "busy_many", 0)][1])],
          "summary: kernel median %r = %d" % (summary_med(text, "busy_many", 5), w[(KERNEL, "busy_many", 0)][1]))
    check(summary_med(text, H2D.split()[1], 5)[:1] == [str(w[(MEMOP, H2D, 0)][1])]
          and summary_med(text, H2D.split()[1], 4)[1:] == [str(w[(MEMOP, H2D, 1)][1])],
          "summary: copy median time/bytes %r = %d / %d" % (summary_med(text, H2D.split()[1], 5),
                                                           w[(MEMOP, H2D, 0)][1], w[(MEMOP, H2D, 1)][1]))
    for name in ("zeCommandListAppendLaunchKernel", "zeCommandListAppendMemoryCopy"):
        check(summary_med(text, name, 5) == [str(w[(API, name, 0)][1])],
              "summary: %s median %r = %d (recomputed by the writer)" % (name, summary_med(text, name, 5),
                                                                        w[(API, name, 0)][1]))
    check("PROFAGENT_MEDIAN_BUDGET" not in text, "summary: no '-' median note when every median was recomputed")


def large():
    db = os.path.join(WORK, "large.db")
    n = 20000
    if not run(n, db):
        return
    got, pend = stored(db)
    for key in ((KERNEL, "busy_many", 0), (MEMOP, H2D, 0), (MEMOP, H2D, 1)):
        g = got.get(key)
        check(g == (n, None, 0), "%d rounds: %s left to the first reader %r" % (n, key, g))
    check(pend is not None and pend >= 3, "%d rounds: META medians_pending %r" % (n, pend))
    p = subprocess.run([PA, "stats", "-r", "kern_sum", db], capture_output=True, timeout=240)
    check(p.returncode == 0, "first reader: %r" % p.stderr[-300:])
    w = want(db)
    got, pend = stored(db)
    for key, (cnt, med) in sorted(w.items()):
        check(got.get(key) == (cnt, med, 1), "first reader: %s stored %r, rows: %d samples, median %d"
              % (key, got.get(key), cnt, med))
    check(pend == 0, "first reader: medians_pending %r" % pend)


small()
large()
sys.exit(1 if FAILS else 0)
