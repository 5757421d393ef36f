"""spine_util.py - what every spine test driver shares: the ok/FAIL bookkeeping and the
LD_PRELOAD value for the agent (behind the ASan runtime when the agent is a sanitizer build)."""
import os, subprocess, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pa_itest import preload  # noqa: E402,F401  (re-exported: the spine drivers import it from here)

FAILS = []


def check(cond, what):
    """Prints one ok/FAIL line; a failure is remembered in FAILS (the driver's exit status)."""
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)



def summary_stats_match_report(cli, db):
    """SUMMARY_STATS' avg, median, stddev of the HGTX (category 1) and OSRT (2) rows against the
    Avg/Med/StdDev that hgtx_sum and osrt_sum print for the same name: equal (both truncated).
    Returns a list of mismatches (empty: consistent) and the number of rows compared."""
    import csv, io, sqlite3
    c = sqlite3.connect(db)
    stored = {}
    for cat, name, tag, avg, med, sd in c.execute(
            "SELECT s.category, k.value, s.tag, s.avg, s.median, s.stddev FROM SUMMARY_STATS s"
            " JOIN STRING_IDS k ON k.id = s.nameId WHERE s.category IN (1, 2)"):
        stored[(cat, name if isinstance(name, str) else name.decode(errors="replace"))] = (avg, med, sd)
    c.close()
    bad, n = [], 0
    for cat, rep, key in ((1, "hgtx_sum", "Range"), (2, "osrt_sum", "Name")):
        out = subprocess.run([cli, "stats", "-r", rep, db], capture_output=True, text=True).stdout
        for r in csv.DictReader(io.StringIO(out)):
            s = stored.get((cat, r.get(key)))
            if s is None:
                continue
            n += 1
            got = tuple(int(r[k]) for k in ("Avg (ns)", "Med (ns)", "StdDev (ns)"))
            if tuple(s) != got:
                bad.append((rep, r.get(key), s, got))
    return bad, n


# The agent's times against the app's CLOCK_MONOTONIC readings: the agent reads a TSC converted to
# CLOCK_MONOTONIC (README: "to ~2 us"); 100 us leaves room for the conversion and no more, against
# range durations of >= 10 ms
BRACKET_TOL_NS = 100000


def brackets(stdout):
    """The 'bracket NAME push0 push1 pop0 pop1' lines a program printed (spine_clock.h), in order:
    a list of (name bytes, push0, push1, pop0, pop1), ns on CLOCK_MONOTONIC."""
    out = []
    for l in stdout.splitlines():
        f = l.split()
        if len(f) == 6 and f[0] == b"bracket":
            out.append((f[1],) + tuple(int(x) for x in f[2:]))
    return out


def bracket_miss(start, end, br, tol=BRACKET_TOL_NS):
    """How far (ns) a recorded range [start, end] lies outside the app's bracket br: its start must
    be within the push call [push0, push1], its end within the pop call [pop0, pop1]; 0 = inside.
    A loaded machine only stretches the bracket, so this holds whatever the scheduling delay."""
    _, push0, push1, pop0, pop1 = br
    miss = max(push0 - start, start - push1, pop0 - end, end - pop1, 0)
    return 0 if miss <= tol else miss
