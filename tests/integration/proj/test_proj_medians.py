#!/usr/bin/env python3
"""test_proj_medians.py - medians of the HGTX projection statistics past PROFAGENT_MEDIAN_BUDGET (1K
samples), against medians computed here from the DB's rows. proj_scen manymed N: N instances of range
"it", each around one 2 us kernel, every 4th around two 20 us kernels (means far from the medians):
- 600 instances (a small DB): the exit stores the projected duration's and the ops per instance's
  exact medians in SUMMARY_STATS (category 6, tags 0 and 2);
- 20000 instances (more rows than the exit sorts): they are left pending (NULL, medianExact 0) and the
  first `profagent stats` stores them exact.
Before: both kept the mean with medianExact 0. usage: test_proj_medians.py BUILD_DIR"""
import os, sqlite3, subprocess, sys, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pa_itest import check, FAILS, preload  # noqa: E402

B = sys.argv[1]
PA = os.path.join(B, "bin", "profagent")
EXE = os.path.join(B, "tests", "proj", "proj_scen")
WORK = tempfile.mkdtemp(prefix="pa_projmed_")
PROJ, DUR, OPS = 6, 0, 2


def run(n, db):
    env = dict(os.environ, ZE_ENABLE_ALT_DRIVERS=os.path.join(B, "lib", "libze_simdev.so"),
               LD_PRELOAD=preload(os.path.join(B, "lib", "libprofagent.so")), ASAN_OPTIONS="detect_leaks=0",
               PROFAGENT_OUTPUT=db, PROFAGENT_MEDIAN_BUDGET="1K", PROFAGENT_SUMMARY="none")
    p = subprocess.run([EXE, "manymed", str(n)], env=env, capture_output=True, timeout=240)
    return check(p.returncode == 0 and os.path.exists(db), "manymed %d: exit 0 and a DB (%r)" % (n, p.stderr[-300:]))


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else int((v[n // 2 - 1] + v[n // 2]) / 2)


def want(db):
    """tag -> (instances, median), each instance rebuilt here from its associated ops."""
    c = sqlite3.connect(db)
    inst = {}
    for rid, op in c.execute("SELECT DISTINCT x.rangeId, x.opId FROM HGTX_OP_ASSOC x JOIN HGTX_RANGES r ON"
                               " r.id = x.rangeId JOIN STRING_IDS n ON n.id = r.nameId WHERE n.value = 'it'"
                               " AND r.unterminated = 0"):
        inst.setdefault(rid, set()).add(op)
    ops = {r: (st, en) for r, st, en in c.execute("SELECT rowid, start, end FROM ZE_OPS")}
    c.close()
    durs = [max(ops[o][1] for o in v) - min(ops[o][0] for o in v) for v in inst.values()]
    nops = [len(v) for v in inst.values()]
    return {DUR: (len(durs), median(durs)), OPS: (len(nops), median(nops))}


def stored(db):
    c = sqlite3.connect(db)
    got = {tag: (n, med, ex) for tag, n, med, ex in c.execute(
        "SELECT s.tag, s.count, s.median, s.medianExact FROM SUMMARY_STATS s JOIN STRING_IDS k ON k.id = s.nameId"
        " WHERE s.category = 6 AND k.value = 'it' AND s.tag IN (0, 2)")}
    pend = c.execute("SELECT value FROM META WHERE key = 'medians_pending'").fetchone()
    c.close()
    return got, pend[0] if pend else None


def small():
    db = os.path.join(WORK, "small.db")
    if not run(600, db):
        return
    w = want(db)
    got, pend = stored(db)
    check(w[OPS] == (600, 1), "600: the rows give 600 instances of median 1 op (%r)" % (w[OPS],))
    for tag, (n, med) in sorted(w.items()):
        check(got.get(tag) == (n, med, 1), "600: tag %d stored %r, rows: %d instances, median %d"
              % (tag, got.get(tag), n, med))
    check(pend == 0, "600: no median left pending (%r)" % pend)


def large():
    db = os.path.join(WORK, "large.db")
    n = 20000
    if not run(n, db):
        return
    got, pend = stored(db)
    for tag in (DUR, OPS):
        check(got.get(tag, ())[1:] == (None, 0), "%d: tag %d left to the first reader %r" % (n, tag, got.get(tag)))
    check(pend is not None and pend >= 2, "%d: META medians_pending %r" % (n, pend))
    p = subprocess.run([PA, "stats", "-r", "hgtx_sum", db], capture_output=True, timeout=240)
    check(p.returncode == 0, "first reader: %r" % p.stderr[-300:])
    w = want(db)
    got, pend = stored(db)
    for tag, (cnt, med) in sorted(w.items()):
        check(got.get(tag) == (cnt, med, 1), "first reader: tag %d stored %r, rows: %d instances, median %d"
              % (tag, got.get(tag), cnt, med))
    check(pend == 0, "first reader: medians_pending %r" % pend)


small()
large()
sys.exit(1 if FAILS else 0)
