#!/usr/bin/env python3
"""test_stats_conv.py - `profagent stats` follows nsys stats' habits, keeping the spec's CSV.

usage: test_stats_conv.py MKDB PROFAGENT WORKDIR
On the synthetic DB of synth.h: --output PREFIX file names, -o - (stdout), formats in any case and
as comma lists, tsv escaping of tabs/newlines, --timeunit conversions (exact decimal shifts of the
ns values), overwrite refusal, -r comma lists, case-insensitive names, the default set, the table
banner, --help-reports, and bad input (one message, the documented exit status)."""
import os, shutil, sqlite3, subprocess, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pa_itest import check, FAILS  # noqa: E402
from decimal import Decimal

MKDB, PA, WORK = sys.argv[1:4]


def run(*args):
    p = subprocess.run([PA, *args], capture_output=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
db = os.path.join(WORK, "s.db")
p = subprocess.run([MKDB, db, os.path.join(WORK, "s.spool")], capture_output=True, timeout=60)
check(p.returncode == 0, "mkdb: %r" % p.stderr)
# synth.h's loss counters zeroed: this test checks stderr byte for byte, the losses' warning is
# test_cli_stats.py's
con = sqlite3.connect(db)
con.execute("UPDATE SESSION_COUNTERS SET value = 0 WHERE name IN ('drops', 'late_records', 'unrecorded',"
            " 'hgtx_depth_overflow')")
con.commit()
con.close()

# ---- --output PREFIX: one file per report and format, nsys's PREFIX_<report>.<ext> ----
pre = os.path.join(WORK, "out", "run1")
os.makedirs(os.path.dirname(pre))
rc, out, err = run("stats", "-r", "hgtx_sum,osrt_sum", "--format", "csv,TSV,Table,json", "-o", pre, db)
want = sorted("run1_%s.%s" % (r, e) for r in ("hgtx_sum", "osrt_sum") for e in ("csv", "tsv", "txt", "json"))
check(rc == 0 and out == b"" and sorted(os.listdir(os.path.dirname(pre))) == want,
      "--output PREFIX files: rc=%d %s %r" % (rc, sorted(os.listdir(os.path.dirname(pre))), err))
rc, csv_stdout, err = run("stats", "-r", "hgtx_sum", db)
check(open(pre + "_hgtx_sum.csv", "rb").read() == csv_stdout, "PREFIX_hgtx_sum.csv = the stdout CSV")
rc, js, err = run("stats", "-r", "osrt_sum", "-f", "json", db)
check(open(pre + "_osrt_sum.json", "rb").read() == js, "PREFIX_osrt_sum.json = the stdout JSON")
check(open(pre + "_osrt_sum.txt", "rb").read().startswith(b" ** OS Runtime Summary (osrt_sum):\n\n"),
      "table file starts with its banner")

# ---- -o - is stdout; formats are case-insensitive ----
rc, out, err = run("stats", "-r", "hgtx_sum", "-o", "-", "--format", "CSV", db)
check(rc == 0 and out == csv_stdout, "-o - and --format CSV: the same bytes on stdout")

# ---- report names are case-insensitive; -r takes comma lists ----
rc, a, err = run("stats", "-r", "HGTX_Sum,OSRT_SUM", db)
rc2, b, err2 = run("stats", "-r", "hgtx_sum", "-r", "osrt_sum", db)
check(rc == 0 and rc2 == 0 and a == b and a.count(b"Row#,") == 2, "-r A,B (any case) = -r a -r b")
# a comma inside a regex option is not a list separator (what follows names no report)
rc, a, err = run("stats", "-r", "hgtx_pushpop_trace:range=^(Loop1|x,y)", db)
rc2, b, err2 = run("stats", "-r", "hgtx_pushpop_trace:range=^(Loop1|x)", db)
check(rc == 0 and a == b and a.count(b"\n") > 1, "regex with a comma kept whole: %r %r" % (a, err))

# ---- tsv: tabs/newlines/backslashes of names escaped, one line per row ----
rc, tsv, err = run("stats", "-r", "hgtx_sum", "-f", "tsv", db)
tl = tsv.split(b"\n")[:-1]
check(rc == 0 and tl[0].startswith(b"Row#\tTime (%)\tTotal Time (ns)\t") and not tl[0].endswith(b"\t"),
      "tsv header: %r" % tl[:1])
check(all(len(l.split(b"\t")) == len(tl[0].split(b"\t")) for l in tl), "tsv: every row has the header's fields")
weird = [l for l in tl if b'a"b,c' in l]
check(len(weird) == 1 and weird[0].endswith(b'a"b,c\\nd\\te\\\\f\xffg'), "tsv escaping: %r" % weird)
check(len(tl) == csv_stdout.count(b"\n") - 1, "tsv: as many rows as the CSV (%d)" % len(tl))


# ---- --timeunit: each time column = the ns value / 10^k exactly; other columns unchanged ----
def csv_rows(data):
    import csv, io
    return list(csv.reader(io.StringIO(data.decode("latin-1"))))


for rep in ("hgtx_sum", "hgtx_pushpop_trace", "osrt_sum"):
    rc, base, err = run("stats", "-r", rep, db)
    ns = csv_rows(base)
    for unit, k in (("us", 3), ("MS", 6), ("s", 9), ("ns", 0)):
        rc, conv, err = run("stats", "-r", rep, "--timeunit", unit, db)
        cv = csv_rows(conv)
        check(rc == 0 and len(cv) == len(ns), "%s --timeunit %s: rc %d %r" % (rep, unit, rc, err))
        ok = True
        for h_ns, h_cv in zip(ns[0], cv[0]):
            check(h_cv == h_ns.replace("(ns)", "(%s)" % unit.lower()), "%s title %r -> %r" % (rep, h_ns, h_cv))
        for r_ns, r_cv in zip(ns[1:], cv[1:]):
            for c, (v_ns, v_cv) in enumerate(zip(r_ns, r_cv)):
                if "(ns)" in ns[0][c] and v_ns not in ("-", ""):
                    ok &= Decimal(v_cv) == Decimal(v_ns) / (Decimal(10) ** k) and \
                        len(v_cv.split(".")[-1]) >= k if k else v_cv == v_ns
                else:
                    ok &= v_cv == v_ns
        check(ok, "%s --timeunit %s: values are the ns values shifted exactly" % (rep, unit))
rc, out, err = run("stats", "-r", "hgtx_sum", "--timeunit", "us", "-f", "json", db)
check(rc == 0 and b'"Total Time (us)": ' in out, "json keys say the unit")

# ---- an existing output file is refused unless --force-overwrite ----
before = open(pre + "_hgtx_sum.csv", "rb").read()
rc, out, err = run("stats", "-r", "hgtx_sum", "-r", "osrt_sum", "-o", pre, db)
check(rc == 1 and len(err.splitlines()) == 1 and b"exists; give --force-overwrite" in err and
      pre.encode() + b"_hgtx_sum.csv" in err, "overwrite refused: rc=%d %r" % (rc, err))
check(open(pre + "_hgtx_sum.csv", "rb").read() == before, "refused: file unchanged")
rc, out, err = run("stats", "-r", "hgtx_sum:rows=1", "-o", pre, "--force-overwrite", db)
check(rc == 0 and open(pre + "_hgtx_sum.csv", "rb").read().count(b"\n") == 2, "--force-overwrite replaces")
check(not [f for f in os.listdir(os.path.dirname(pre)) if f.endswith(".tmp")], "no temporary file left")
# a report asked twice gets its own file
rc, out, err = run("stats", "-r", "osrt_sum,osrt_sum:rows=1", "-o", pre + "x", db)
check(rc == 0 and os.path.exists(pre + "x_osrt_sum.csv") and os.path.exists(pre + "x_osrt_sum_2.csv"),
      "the same report twice: PREFIX_r.csv and PREFIX_r_2.csv")

# ---- the table form: a banner line before each report ----
rc, out, err = run("stats", "-r", "hgtx_sum,osrt_sum", "-f", "table", db)
check(rc == 0 and out.startswith(b" ** HGTX Range Summary (hgtx_sum):\n\nRow#") and
      b"\n\n ** OS Runtime Summary (osrt_sum):\n\nRow#" in out, "table banners: %r" % out[:80])

# ---- stats FILE.db without -r: the documented default set ----
DEFAULT = ["ze_api_sum", "kern_sum", "mem_time_sum", "mem_size_sum", "hgtx_sum", "osrt_sum"]
rc, out, err = run("stats", db)
rc2, exp, err2 = run("stats", *sum([["-r", r] for r in DEFAULT], []), db)
check(rc == 0 and out == exp and out.count(b"Row#,") == len(DEFAULT), "default set = -r %s" % ",".join(DEFAULT))
rc, hlp, e = run("stats", "--help")
check(b"default\n                      set ze_api_sum, kern_sum, mem_time_sum, mem_size_sum, hgtx_sum, osrt_sum"
      in hlp, "--help documents the default set")
# the synthetic DB has no Level Zero data: one note per empty report, exit 0, header printed
notes = err.splitlines()
check(rc == 0 and len(notes) == 4 and all(b"has no data for report" in n for n in notes) and
      b"report 'kern_sum' (Kernel Summary): header only" in err, "no-data notes: %r" % notes)

# ---- --help-reports: every report with its one-line description ----
rc, hr, err = run("stats", "--help-reports")
rc2, lst, err2 = run("stats", "--list")
names = [l.split()[0] for l in lst.splitlines() if l.strip()]
check(rc == 0 and len(names) >= 19 and all(any(l.startswith(n + b" ") and b" -- " in l for l in hr.splitlines())
                                           for n in names), "--help-reports lists every report with its title")
rc, h1, err = run("stats", "--help-reports=KERN_SUM")
rc2, h2, err2 = run("stats", "--help-report", "kern_sum")
check(rc == 0 and h1 == h2 and b"Kernel Summary" in h1, "--help-reports=NAME = --help-report NAME")


# ---- bad input: one clear message, the documented exit status, no output ----
def bad(args, status, needle, what):
    rc, out, err = run(*args)
    check(rc == status and needle in err and len(err.splitlines()) == 1 and out == b"",
          "%s: rc=%d err=%r out=%r" % (what, rc, err, out[:60]))


bad(["stats", "-r", "hgtx_sum", "--format", "xml", db], 2,
    b"--format 'xml' is not accepted; accepted: csv, tsv, table, json", "unknown format")
bad(["stats", "-r", "hgtx_sum", "--format", "csv,yaml", "-o", pre + "y", db], 2, b"--format 'yaml'", "unknown format in a list")
bad(["stats", "-r", "hgtx_sum", "--timeunit", "min", db], 2,
    b"--timeunit 'min' is not accepted; accepted: ns, us, ms, s", "unknown time unit")
bad(["stats", "-r", "hgtx_sum", "--format", "csv,json", db], 2, b"give --output PREFIX", "two formats to stdout")
bad(["stats", "-r", "hgtx_sum", "-o", os.path.join(WORK, "nodir", "p"), db], 1,
    b"cannot write '" + os.path.join(WORK, "nodir", "p_hgtx_sum.csv").encode() + b"': No such file or directory",
    "unwritable output")
notafile = os.path.join(WORK, "plain")
open(notafile, "w").close()
bad(["stats", "-r", "hgtx_sum", "-o", notafile + "/p", db], 1, b"Not a directory", "output under a file")
if os.path.exists("/dev/full"):
    p = subprocess.run("%s stats -r hgtx_sum %s > /dev/full" % (PA, db), shell=True, capture_output=True)
    check(p.returncode == 1 and b"writing the output failed" in p.stderr and len(p.stderr.splitlines()) == 1,
          "stdout write error (/dev/full): rc=%d %r" % (p.returncode, p.stderr))
rc, out, err = run("stats", "-r", "kern_sum", db)
check(rc == 0 and out.count(b"\n") == 1 and len(err.splitlines()) == 1 and
      err.startswith(b"profagent: stats: note: " + db.encode() + b" has no data for report 'kern_sum'"),
      "DB with no rows for a report: header, one note, exit 0: %r" % err)
rc, out, err = run("stats", "-r", "hgtx_sum:rows=0", db)
check(rc == 0 and err == b"", "rows=0 on a report with data: no note")

print("%d failed" % len(FAILS) if FAILS else "all stats convention checks passed")
sys.exit(1 if FAILS else 0)
