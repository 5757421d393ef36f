#!/usr/bin/env python3
"""test_cli_stats.py - builds the synthetic DB of synth.h and checks `profagent stats` byte for byte.

usage: test_cli_stats.py MKDB PROFAGENT WORKDIR
Every expected row is hand-computed from synth.h (Time (%) of the listed rows' total,
one decimal; Avg/Med/StdDev rounded to ns; StdDev is the population one, as in the spec's examples)."""
import csv, io, json, os, shutil, sqlite3, subprocess, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pa_itest import check, FAILS  # noqa: E402

MKDB, PA, WORK = sys.argv[1:4]
WEIRD = b'"a""b,c\nd\te\\f\xffg"'


def run(*args, env=None):
    p = subprocess.run([PA, *args], capture_output=True, env=env, timeout=60)
    return p.returncode, p.stdout, p.stderr


def loss_line(path):
    """The one warning of a DB whose session lost records: synth.h's SESSION_COUNTERS."""
    c = sqlite3.connect(path)
    v = dict(c.execute("SELECT name, value FROM SESSION_COUNTERS"))
    c.close()
    return (b"profagent: stats: warning: %s: the session lost data while recording: %d records dropped"
            b" (full rings), %d late records (after the exit drain began, not stored), %d events not recorded"
            b" (no ring memory, or inside a signal handler), %d HGTX pushes beyond the maximum nesting depth"
            b" not recorded; counts and totals in the reports are low\n"
            % (path.encode(), v["drops"], v["late_records"], v["unrecorded"], v["hgtx_depth_overflow"]))


def lines(*rows):
    return b"".join(r + b"\n" for r in rows)


shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
db = os.path.join(WORK, "s.db")
p = subprocess.run([MKDB, db, os.path.join(WORK, "s.spool")], capture_output=True, timeout=60)
check(p.returncode == 0, "mkdb exit status %d: %s" % (p.returncode, p.stderr))
summary = p.stdout

# ---- the writer refuses to overwrite ----
p2 = subprocess.run([MKDB, db, os.path.join(WORK, "s2.spool")], capture_output=True, timeout=60)
check(p2.returncode != 0 and b"never overwritten" in p2.stderr, "existing DB must not be overwritten")

# ---- DB contents: exact bytes, META, THREADS, recomputed median ----
c = sqlite3.connect(db)
c.text_factory = bytes
q = lambda sql: c.execute(sql).fetchall()
check(q("SELECT value FROM STRING_IDS WHERE id = 7") == [(b'a"b,c\nd\te\\f\xffg',)], "weird name byte-exact")
check(q("SELECT value FROM STRING_IDS WHERE id = 9") == [(b"",)], "empty string kept")
big = q("SELECT value FROM STRING_IDS WHERE id = 10")[0][0]
check(len(big) == 102400 and big.endswith(b"xEND"), "100 KB string kept (len %d)" % len(big))
meta = dict(q("SELECT key, value FROM META"))
check(meta.get(b"schema_version") == 2 and meta.get(b"session_complete") == 1, "META version/complete")
check(meta.get(b"pid") == 4242 and meta.get(b"hostname") == b"testhost", "META pid/hostname")
check(meta.get(b"command_line") == b"./synthetic --flag", "META command line")
check(meta.get(b"drops") == 3 and meta.get(b"late_records") == 1, "META counters")
check(q("SELECT drops, records FROM THREADS WHERE globalTid = %d" % ((4242 << 32) | 100)) == [(3, 50)],
      "THREADS drops of tid 100")
check(q("SELECT count(*) FROM HGTX_RANGES") == [(10,)], "10 ranges")
check(q("SELECT endGlobalTid & 4294967295 FROM HGTX_RANGES WHERE id = 20") == [(101,)], "end thread kept")
check(q("SELECT s.median, s.medianExact FROM SUMMARY_STATS s JOIN STRING_IDS k ON k.id = s.nameId"
        " WHERE k.value = 'nanosleep'") == [(200.0, 1)], "inexact median recomputed from rows")
check(q("PRAGMA integrity_check") == [(b"ok",)], "integrity_check")
c.close()

# ---- summary: exact drops, recomputed median, misuse ----
check(b"3 dropped" in summary and b"DROPPED" in summary, "summary prints the drops")
check(b"2 pop on an empty stack, 1 end of an unknown" in summary, "summary prints misuse")
# every loss counter is printed when non-zero and stored (qa2 #4)
check(b"4 bad domain handle" in summary and b"5 HGTX pushes beyond the maximum nesting depth" in summary
      and b"6 events were NOT recorded" in summary and b"spool write errors" not in summary,
      "summary prints bad-domain misuse, depth overflow, unrecorded; not a zero spool_errors")
with sqlite3.connect(db) as c2:
    cnt = dict((k.encode(), v) for k, v in c2.execute("SELECT name, value FROM SESSION_COUNTERS"))
check(cnt.get(b"hgtx_misuse_bad_domain") == 4 and cnt.get(b"hgtx_depth_overflow") == 5 and
      cnt.get(b"unrecorded") == 6 and cnt.get(b"spool_errors") == 0, "loss counters in SESSION_COUNTERS")
check(meta.get(b"hgtx_depth_overflow") == 5 and meta.get(b"unrecorded") == 6, "loss counters in META")
osrt_line = [l for l in summary.splitlines() if l.rstrip().endswith(b"nanosleep")]
check(len(osrt_line) == 1 and osrt_line[0].split()[:8] == [b"2", b"13.0", b"600", b"3", b"200", b"200", b"100", b"300"],
      "summary nanosleep row equals osrt_sum: %r" % osrt_line)

# ---- hgtx_sum ----
HDR = b"Row#,Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Style,Range,"
rc, out, err = run("stats", "-r", "hgtx_sum", db)
exp = lines(HDR,
            b'1,29.8,10000,2,5000,5000,3000,7000,2000,"PushPop","Loop1",',
            b'2,29.8,10000,1,10000,10000,10000,10000,0,"PushPop","profile",',
            b'3,20.9,7000,2,3500,3500,1000,6000,2500,"StartEnd","io:read",',
            b'4,17.9,6000,3,2000,2000,1000,3000,816,"PushPop","DoProcess",',
            b'5,1.5,500,1,500,500,500,500,0,"PushPop","Step",',
            b'6,0.0,10,1,10,10,10,10,0,"PushPop",' + WEIRD + b',')
check(rc == 0 and out == exp, "hgtx_sum:\n%s" % out.decode("latin-1"))
rows = list(csv.reader(io.StringIO(out.decode("latin-1"), newline="")))
check(len(rows) == 7 and all(len(r) == 12 for r in rows), "hgtx_sum CSV has a constant column count")
check(rows[6][10] == 'a"b,c\nd\te\\f\xffg', "CSV round-trips the weird name")

rc, out, err = run("stats", "-r", "hgtx_sum:thread=100", db)
check(out == lines(HDR, b'1,58.8,10000,1,10000,10000,10000,10000,0,"PushPop","profile",',
                   b'2,41.2,7000,2,3500,3500,1000,6000,2500,"StartEnd","io:read",',
                   b'3,0.1,10,1,10,10,10,10,0,"PushPop",' + WEIRD + b','), "hgtx_sum thread=100: %r" % out)
rc, out, err = run("stats", "-r", "hgtx_sum:rows=2:process=4242", db)
check(out == lines(HDR, b'1,29.8,10000,2,5000,5000,3000,7000,2000,"PushPop","Loop1",',
                   b'2,29.8,10000,1,10000,10000,10000,10000,0,"PushPop","profile",'), "hgtx_sum rows=2: %r" % out)
rc, out, err = run("stats", "-r", "hgtx_sum:process=999", db)
check(rc == 0 and out == lines(HDR), "hgtx_sum process=999 is empty")

# ---- hgtx_pushpop_trace (spec 2.3.25 shape: profile / Loop1 / DoProcess) ----
PHDR = (b"Row#,Start (ns),End (ns),Duration (ns),DurChild (ns),DurNonChild (ns),Name,PID,TID,Lvl,"
        b"NumChild,RangeId,ParentId,RangeStack,NameTree,")
P = [b'1000,11000,10000,0,10000,"profile",4242,100,0,0,6,"-",":6","profile",',
     b'2000,9000,7000,5000,2000,"Loop1",4242,101,0,2,7,"-",":7","Loop1",',
     b'3000,5000,2000,500,1500,"DoProcess",4242,101,1,1,13,7,":7:13","-DoProcess",',
     b'3500,4000,500,0,500,"Step",4242,101,2,0,16,13,":7:13:16","--Step",',
     b'5500,8500,3000,0,3000,"DoProcess",4242,101,1,0,14,7,":7:14","-DoProcess",',
     b'9500,12500,3000,1000,2000,"Loop1",4242,101,0,1,9,"-",":9","Loop1",',
     b'10000,11000,1000,0,1000,"DoProcess",4242,101,1,0,15,9,":9:15","-DoProcess",',
     b'20000,20010,10,0,10,' + WEIRD + b',4242,100,0,0,30,"-",":30",' + WEIRD + b',']
rc, out, err = run("stats", "-r", "hgtx_pushpop_trace", db)
check(rc == 0 and out == lines(PHDR, *[b"%d," % (i + 1) + r for i, r in enumerate(P)]),
      "hgtx_pushpop_trace:\n%s" % out.decode("latin-1"))
rc, out, err = run("stats", "-r", "hgtx_pushpop_trace:range=^Loop", db)
check(out == lines(PHDR, b"1," + P[1], b"2," + P[5]), "pushpop range=^Loop: %r" % out)
rc, out, err = run("stats", "-r", "hgtx_pushpop_trace:range=(?:Do|St):?", db)
check(out == lines(PHDR, *[b"%d," % (i + 1) + P[k] for i, k in enumerate([2, 3, 4, 6])]),
      "pushpop range with ':' in the regex: %r" % out)

# ---- a push/pop range still open at exit (fresh #9): listed in the trace with End, Duration,
# DurNonChild '-'; its ended child's time still counts as DurChild; hgtx_sum leaves it out ----
udb = os.path.join(WORK, "open.db")
shutil.copy(db, udb)
con = sqlite3.connect(udb)
gt = (4242 << 32) | 100
con.execute("INSERT INTO HGTX_RANGES VALUES (40, 30000, 40000, ?, ?, 2, 0, 0, 0, 0, 1)", (gt, gt))
con.execute("INSERT INTO HGTX_RANGES VALUES (41, 31000, 32000, ?, ?, 3, 0, 0, 1, 40, 0)", (gt, gt))
con.commit()
con.close()
rc, out, err = run("stats", "-r", "hgtx_pushpop_trace:range=^Loop", udb)
check(rc == 0 and out == lines(PHDR, b"1," + P[1], b"2," + P[5],
      b'3,30000,"-","-",1000,"-","Loop1",4242,100,0,1,40,"-",":40","Loop1",'),
      "pushpop lists the open range flagged: %r" % out)
rc, out, err = run("stats", "-r", "hgtx_pushpop_trace:range=^DoP:rows=9", udb)
check(rc == 0 and out.splitlines()[-1] == b'4,31000,32000,1000,0,1000,"DoProcess",4242,100,1,0,41,40,":40:41","-DoProcess",',
      "its ended child is a normal row: %r" % out)
rc, out, err = run("stats", "-r", "hgtx_sum", udb)
check(rc == 0 and b'29.0,10000,2,5000,5000,3000,7000,2000,"PushPop","Loop1",' in out
      and b',7000,4,1750,' in out, "hgtx_sum leaves the open range out: %r" % out)
rc, out, err = run("stats", "--help-report", "hgtx_pushpop_trace")
check(b"still open at exit" in out, "pushpop help says how open ranges are shown")

# ---- osrt_sum ----
rc, out, err = run("stats", "-r", "osrt_sum", db)
check(rc == 0 and out == lines(
    b"Row#,Time (%),Total Time (ns),Num Calls,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name,",
    b'1,87.0,4000,2,2000,2000,1000,3000,1000,"poll",',
    b'2,13.0,600,3,200,200,100,300,81,"nanosleep",'), "osrt_sum: %r" % out)  # sqrt(20000/3) = 81.6, truncated

# ---- formats, output file, several reports ----
rc, out, err = run("stats", "-r", "hgtx_pushpop_trace", "--format", "json", db)
js = json.loads(out.decode("utf-8"))
# one JSON shape whatever the number of -r (qa2 #11): an object keyed by report name
check(list(js) == ["hgtx_pushpop_trace"], "json: one report is an object keyed by its name")
js = js["hgtx_pushpop_trace"]
check(len(js) == 8 and js[7]["Name"] == 'a"b,c\nd\te\\f\u00ffg' and js[0]["ParentId"] is None
      and js[2]["ParentId"] == 7, "json output")
rc, out, err = run("stats", "-r", "osrt_sum", "-r", "hgtx_sum", "--format=json", db)
js = json.loads(out.decode("utf-8"))
check(sorted(js) == ["hgtx_sum", "osrt_sum"] and js["osrt_sum"][0]["Name"] == "poll", "two json reports")
rc, out, err = run("stats", "-r", "osrt_sum", "-r", "osrt_sum:rows=1", "--format=json", db)
js = json.loads(out.decode("utf-8")) if rc == 0 else {}
check(list(js) == ["osrt_sum", "osrt_sum#2"], "json: a report given twice gets name#2")
# an incomplete session's DB: one warning line on stderr, the report still runs (qa2 #8)
inc = os.path.join(WORK, "incomplete.db")
shutil.copy(db, inc)
con = sqlite3.connect(inc)
con.execute("UPDATE META SET value = 0 WHERE key = 'session_complete'")
con.commit()
con.close()
rc, out, err = run("stats", "-r", "osrt_sum", inc)
err = err.replace(loss_line(inc), b"")
check(rc == 0 and b"poll" in out and err.count(b"\n") == 1 and
      err.startswith(b"profagent: stats: warning: " + inc.encode() + b" is from an incomplete session (session_complete=0")
      and b"reports may miss data" in err, "incomplete session: one warning, report still printed")
con = sqlite3.connect(inc)
con.execute("DELETE FROM META WHERE key = 'db_complete'")
con.commit()
con.close()
rc, out, err = run("stats", "-r", "osrt_sum", inc)
check(rc == 0 and b"the DB was not finished" in err, "DB without db_complete: warning")
rc, out, err = run("stats", "-r", "osrt_sum", db)
check(rc == 0 and err == loss_line(db), "complete DB: only the losses' warning (%r)" % err)
# the losses' line names SESSION_COUNTERS' values (synth.h), and nothing when none was lost
nl = os.path.join(WORK, "noloss.db")
shutil.copy(db, nl)
con = sqlite3.connect(nl)
con.execute("UPDATE SESSION_COUNTERS SET value = 0 WHERE name IN ('drops', 'late_records', 'unrecorded',"
            " 'hgtx_depth_overflow')")
con.commit()
con.close()
rc, out, err = run("stats", "-r", "osrt_sum", nl)
check(rc == 0 and err == b"", "complete DB without losses: no warning (%r)" % err)
# damaged rows: one warning naming each table's first bad rowid and the rule it breaks, the reports still
# printed from every row (a negative time where a row ends before its start)
def damage_line(path, what, s0, e0, n):
    return (b"profagent: stats: warning: %s is damaged: %d trace row%s impossible time%s (%s; session %d..%d ns,"
            b" META start_mono_ns..end_mono_ns): the reports include %s, the times from %s are wrong"
            b" (sqlite3 %s 'PRAGMA integrity_check' tells more)\n"
            % (path.encode(), n, b" has an" if n == 1 else b"s have", b"" if n == 1 else b"s", what, s0, e0,
               b"it as it is" if n == 1 else b"them as they are", b"it" if n == 1 else b"them", path.encode()))


neg = os.path.join(WORK, "negative.db")
shutil.copy(nl, neg)
con = sqlite3.connect(neg)
con.execute("UPDATE HGTX_RANGES SET \"end\" = start - 500 WHERE id = 6")
osrt1 = con.execute("SELECT min(rowid) FROM OSRT_API").fetchone()[0]
con.execute("UPDATE OSRT_API SET \"end\" = start - 1 WHERE rowid = ?", (osrt1,))
con.commit()
con.close()
rc, out, err = run("stats", "-r", "hgtx_pushpop_trace", "-r", "hgtx_sum", neg)
want = damage_line(neg, b"OSRT_API rowid %d ends before its start, HGTX_RANGES rowid 6 ends before its start" % osrt1,
                   1000, 20010, 2)
check(rc == 0 and b",-500," in out and err == want, "end < start rows: one warning naming them (%r, want %r)"
      % (err, want))
# wrong but positive times: the same DB moved 10^13 ns later (META too: sound, no warning), then one OSRT
# call starting an hour before the session and one range an hour after it (positive durations)
D, H = 10 ** 13, 3600 * 10 ** 9
span = os.path.join(WORK, "span.db")
shutil.copy(nl, span)
con = sqlite3.connect(span)
for t in ("HGTX_RANGES", "OSRT_API", "ZE_API", "ZE_OPS"):
    if con.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (t,)).fetchone():
        con.execute("UPDATE %s SET start = start + ?, \"end\" = \"end\" + ?" % t, (D, D))
if con.execute("SELECT 1 FROM sqlite_master WHERE name = 'HGTX_MARKS'").fetchone():
    con.execute("UPDATE HGTX_MARKS SET start = start + ?", (D,))
con.execute("UPDATE META SET value = value + ? WHERE key IN ('start_mono_ns', 'end_mono_ns')", (D,))
con.commit()
rc, out0, err = run("stats", "-r", "osrt_sum", "-r", "hgtx_sum", span)
check(rc == 0 and err == b"", "the sound DB moved later: no warning (%r)" % err)
osrt2 = con.execute("SELECT rowid FROM OSRT_API ORDER BY rowid LIMIT 1 OFFSET 1").fetchone()[0]
con.execute("UPDATE OSRT_API SET start = start - ? WHERE rowid = ?", (H, osrt2))
con.execute("UPDATE HGTX_RANGES SET start = start + ?, \"end\" = \"end\" + ? WHERE id = 7", (H, H))
con.commit()
bad = con.execute("SELECT count(*) FROM OSRT_API WHERE start < 0 OR \"end\" < start").fetchone()[0]
con.close()
rc, out, err = run("stats", "-r", "osrt_sum", "-r", "hgtx_sum", span)
want = damage_line(span, b"OSRT_API rowid %d starts before the session start, HGTX_RANGES rowid 7 ends after the"
                   b" session end" % osrt2, D + 1000, D + 20010, 2)
check(bad == 0 and rc == 0 and err == want, "positive but impossible times: one warning naming table, rowid and"
      " rule (%r, want %r)" % (err, want))
check(b"poll" in out and b"3600000" in out and out != out0, "the reports still print, from every row: %r" % out)
rc, out, err = run("stats", "-r", "hgtx_pushpop_trace", nl)
check(rc == 0 and err == b"" and b",-" not in out, "the sound DB: no negative time, no damage warning (%r)" % err)
rc, out, err = run("stats", "-r", "osrt_sum", "--format", "table", db)
check(rc == 0 and out.splitlines()[0] == b" ** OS Runtime Summary (osrt_sum):" and
      out.splitlines()[2].split()[:3] == [b"Row#", b"Time", b"(%)"] and b"nanosleep" in out,
      "table output: banner, then the table")
of = os.path.join(WORK, "o")
rc, out, err = run("stats", "-r", "osrt_sum", "--output", of, db)
check(rc == 0 and out == b"" and open(of + "_osrt_sum.csv", "rb").read().startswith(b"Row#,Time (%)"),
      "--output PREFIX: PREFIX_osrt_sum.csv")
rc, out, err = run("stats", "--help-report", "hgtx_sum")
check(rc == 0 and b"rows=<limit>" in out and b"StdDev (ns)" in out, "--help-report")
rc, out, err = run("stats", "--list")
check(rc == 0 and all(n in out for n in (b"hgtx_sum", b"hgtx_pushpop_trace", b"osrt_sum")), "--list")

# ---- rows=<limit> is taken by every report, applied after the report's sorting (fresh #10) ----
rc, out, err = run("stats", "-r", "hgtx_pushpop_trace:rows=2", db)
check(rc == 0 and out == lines(PHDR, b"1," + P[0], b"2," + P[1]), "pushpop rows=2: %r %r" % (out, err))
rc, out, err = run("stats", "-r", "hgtx_pushpop_trace:range=^Loop:rows=1", db)
check(rc == 0 and out == lines(PHDR, b"1," + P[1]), "pushpop range=^Loop:rows=1 (filter, then limit): %r" % out)
rc, lst, err = run("stats", "--list")
names = [l.split()[0].decode() for l in lst.splitlines() if l.strip()]
check(len(names) >= 19, "--list names: %r" % names)
for n in names:
    rc, out, err = run("stats", "-r", n + ":rows=0", db)
    check(rc != 2 and b"unknown option" not in err, "%s:rows=0 accepted: rc=%d %r" % (n, rc, err))
    if rc == 0:
        check(len(out.splitlines()) == 1, "%s:rows=0 prints only the header: %r" % (n, out))
    rc, hlp, err = run("stats", "--help-report", n)
    # flags are shown bare, options with a value as name=<arg>; never a trailing '=' (fresh #5)
    opts = hlp.split(b"Options:")[1].split(b"Output:")[0].splitlines()
    check(rc == 0 and not any(l.rstrip().endswith(b"=") for l in opts), "%s help: no 'flag=': %r" % (n, opts))
    check(any(l.strip() == b"rows=<limit>" for l in opts), "%s help lists rows=<limit>" % n)
rc, hlp, err = run("stats", "--help-report", "kern_sum")
check(b"        base\n" in hlp and b"        mangled\n" in hlp, "kern_sum help: flags base, mangled bare")

# ---- bad inputs: exit != 0 and exactly one clear line on stderr ----
def bad(args, status, needle, what):
    rc, out, err = run(*args)
    check(rc == status and needle in err and len(err.splitlines()) == 1 and out == b"",
          "%s: rc=%d err=%r" % (what, rc, err))

bad(["stats", "-r", "nosuch", db], 2, b"unknown report 'nosuch'; valid reports: hgtx_sum", "unknown report")
for lst in ("hgtx_sum,,osrt_sum", ",hgtx_sum", "hgtx_sum,", "hgtx_sum,,,osrt_sum", ""):
    bad(["stats", "-r", lst, db], 2, b"stats: -r '%s': empty report name in the list" % lst.encode(),
        "empty element in -r %r" % lst)
# --help / --version take nothing after them: one line naming what was extra, exit 2
for o in ("--help", "--version"):
    bad([o, "extra"], 2, b"profagent: %s takes no arguments (got 'extra')" % o.encode(), "%s extra" % o)
# several DBs: an input that cannot be opened is named by the subcommand the user ran (stats)
rc, out, err = run("stats", "-r", "hgtx_sum", db, os.path.join(WORK, "missing.db"))
check(rc != 0 and err.startswith(b"profagent: stats: ") and b"missing.db" in err and b"merge:" not in err,
      "stats with a missing second DB: rc=%d %r" % (rc, err))
# merge output: the mode of any new file (as an agent's DB), not mkstemp's 0600
db2 = os.path.join(WORK, "s2.db")
shutil.copy(db, db2)
c2 = sqlite3.connect(db2)
c2.execute("UPDATE META SET value = value + 1 WHERE key = 'pid'")  # another process's session
c2.commit()
c2.close()
mo = os.path.join(WORK, "merged_mode.db")
if os.path.exists(mo):
    os.unlink(mo)
um = os.umask(0o022)
os.umask(um)
rc, out, err = run("merge", "-o", mo, db, db2)
mode = os.stat(mo).st_mode & 0o777 if os.path.exists(mo) else None
check(rc == 0 and mode == 0o666 & ~um, "merge output mode %s (want %o): rc=%d %r" % (
      oct(mode) if mode is not None else None, 0o666 & ~um, rc, err))
# three names and more: each is its own report, as with two (the header of each in order)
rc, out, err = run("stats", "-r", "hgtx_sum,osrt_sum,kern_sum", db)
rc2, out2, err2 = run("stats", "-r", "hgtx_sum,osrt_sum", db)
rc3, out3, err3 = run("stats", "-r", "kern_sum", db)
check(rc == 0 and err == (err2 + err3).replace(loss_line(db), b"", 1) and out in (out2 + b"\n" + out3, out2 + out3),
      "-r with three names: rc=%d err=%r out=%r" % (rc, err, out[:300]))
rc, out, err = run("stats", "-r", "osrt_sum,hgtx_pushpop_trace:range=a,b", db)  # a regex's comma stays in it
check(rc == 0 and b"empty report name" not in err, "-r with a comma inside a regex option: rc=%d %r" % (rc, err))
bad(["stats", "-r", "hgtx_sum:bogus=1", db], 2, b"unknown option 'bogus=1'; accepted options: rows=<limit>", "bad option")
bad(["stats", "-r", "hgtx_sum:rows=abc", db], 2, b"rows='abc' is not a non-negative integer", "bad rows")
bad(["stats", "-r", "hgtx_sum:thread=1/x", db], 2, b"'x' is not a numeric id", "bad thread list")
bad(["stats", "-r", "hgtx_pushpop_trace:range=(", db], 2, b"invalid regular expression '(' at offset 1", "bad regex")
bad(["stats", "-r", "hgtx_sum", "--format", "xml", db], 2, b"accepted: csv, tsv, table, json", "bad format")
txt = os.path.join(WORK, "t.txt"); open(txt, "w").write("hello, not a database\n")
bad(["stats", "-r", "hgtx_sum", txt], 1, b"not a profagent database (not an SQLite file)", "text file")
empty = os.path.join(WORK, "e.db"); open(empty, "w").close()
bad(["stats", "-r", "hgtx_sum", empty], 1, b"is empty, not a profagent database", "empty file")
bad(["stats", "-r", "hgtx_sum", WORK], 1, b"cannot read '%s': Is a directory" % WORK.encode(), "directory")
othermeta = os.path.join(WORK, "m.db")
f = sqlite3.connect(othermeta); f.execute("CREATE TABLE META(k, v)"); f.commit(); f.close()
bad(["stats", "-r", "hgtx_sum", othermeta], 1, b"not a profagent database (its META table has no key/value columns)", "foreign META")
foreign = os.path.join(WORK, "f.db")
f = sqlite3.connect(foreign); f.execute("CREATE TABLE t(x)"); f.commit(); f.close()
bad(["stats", "-r", "hgtx_sum", foreign], 1, b"not a profagent database (no META table)", "foreign DB")
newer = os.path.join(WORK, "n.db"); shutil.copy(db, newer)
f = sqlite3.connect(newer); f.execute("UPDATE META SET value = 99 WHERE key = 'schema_version'"); f.commit(); f.close()
bad(["stats", "-r", "hgtx_sum", newer], 1, b"newer profagent (schema version 99", "newer schema")
bad(["stats", "-r", "hgtx_sum", os.path.join(WORK, "missing.db")], 1, b"No such file", "missing file")
bad(["stats", "-r", "hgtx_sum"], 2, b"no database file given", "no db")
bad(["frobnicate"], 2, b"unknown command 'frobnicate'", "unknown command")
# --filter-time with a report that does not apply it: a usage error naming those that do (fresh #8)
bad(["stats", "-r", "kern_sum", "--filter-time", "0:1", db], 2,
    b"profagent: stats: --filter-time does not apply to report 'kern_sum'; it is accepted by"
    b" device_memory_usage_summary and device_memory_usage_detail only", "--filter-time with kern_sum")
bad(["stats", "-r", "device_memory_usage_summary", "-r", "hgtx_sum", "--filter-time", "0:1", db], 2,
    b"does not apply to report 'hgtx_sum'", "--filter-time with a mix of reports")
rc, out, err = run("stats", "--help")
check(b"device_memory_usage_summary/_detail only" in out, "stats --help says where --filter-time applies")
# conflicting kernel name options (fresh #17)
bad(["stats", "-r", "kern_sum:base:mangled", db], 2,
    b"report 'kern_sum': options 'base' and 'mangled' exclude each other; give one", "base with mangled")
# a missing spool is named as missing, not as badly named (fresh #16)
bad(["recover", os.path.join(WORK, "nonexist.spool.zst")], 1, b"cannot read '" + WORK.encode() +
    b"/nonexist.spool.zst': No such file or directory", "recover of a missing spool")
# a directory is named as one, not as an empty spool
bad(["recover", WORK], 1, b"recover: '" + WORK.encode() + b"' is refused: it is a directory, not a spool file",
    "recover of a directory")
bad(["recover", "/dev/null"], 1, b"recover: '/dev/null' is refused: it is not a regular file, not a spool file",
    "recover of a character device")
# stats of a DB that was never written, with the spool of the killed process next to it (fresh #16)
kdb = os.path.join(WORK, "k.db")
open(kdb + ".4711.main.spool.zst", "wb").close()
bad(["stats", "-r", "hgtx_sum", kdb], 1, b"the process left the spool '" + kdb.encode() +
    b".4711.main.spool.zst' (it died before writing its DB): build the DB with: profagent recover " +
    kdb.encode() + b".4711.main.spool.zst", "stats of a killed process's DB points to its spool")

# ---- run: environment and LD_PRELOAD, then exec ----
# (skipped in the sanitizer build: an ASan agent cannot be preloaded into /bin/sh)
lib = os.path.join(os.path.dirname(os.path.realpath(PA)), "..", "lib", "libprofagent.so")
asan = b"libasan" in subprocess.run(["ldd", PA], capture_output=True).stdout
env = dict(os.environ, PROFAGENT_ENABLE="0")
rc, out, err = run("run", "--bogus", "--", "true", env=env)
check(rc == 2 and b"unknown option '--bogus'; accepted: --output, --trace, --summary" in err, "run bad option")
if asan or not os.path.exists(lib):
    print("%d failure(s) (run exec checks skipped)" % len(FAILS))
    sys.exit(1 if FAILS else 0)
rc, out, err = run("run", "--output", "x-%p.db", "--summary", "none", "--",
                   "/bin/sh", "-c", 'echo "$PROFAGENT_OUTPUT|$PROFAGENT_SUMMARY|$LD_PRELOAD"', env=env)
check(rc == 0 and out.startswith(b"x-%p.db|none|/") and out.rstrip().endswith(b"/libprofagent.so"),
      "run sets the environment: %r %r" % (out, err))
rc, out, err = run("run", "--", "/nonexistent/prog", env=env)
check(rc == 127 and b"cannot execute '/nonexistent/prog'" in err, "run of a missing program")

print("%d failure(s)" % len(FAILS))
sys.exit(1 if FAILS else 0)
