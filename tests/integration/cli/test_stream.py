"""test_stream.py - trace reports stream from SQLite: hgtx_pushpop_trace over nested ranges of
several threads (start ties where a child's id is below its parent's, parents that are start/end
ranges or missing) equals an independent computation from the DB's rows, with and without the
index on parentId (a DB still being written has none), with range= and rows=; and the peak RSS
of `stats` and `report` does not grow with the number of ranges (it grew ~600 bytes per range
when the whole trace was held in memory)."""
import csv, io, os, random, shutil, sqlite3, subprocess, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pa_itest import check, FAILS  # noqa: E402

MKDB, PA, WORK = sys.argv[1], sys.argv[2], sys.argv[3]


def run(*args):
    p = subprocess.run([PA, *args], capture_output=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def peak_rss_kib(*args):
    """Peak RSS (KiB) of `profagent args` (its own, from wait4), output discarded."""
    p = subprocess.Popen([PA, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    check(p.returncode == 0, "%s: rc %d" % (" ".join(args), p.returncode))
    return ru.ru_maxrss


shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
base = os.path.join(WORK, "base.db")
subprocess.run([MKDB, base, os.path.join(WORK, "spool")], check=True, capture_output=True)

NAMES = {9001: "alpha", 9002: "beta", 9003: "gamma", 9004: "delta"}


def synth(path, nthreads, per_thread, seed):
    """Adds nested push/pop ranges: per thread a random push/pop walk (depth <= 6), threads'
    times interleaved; ids a random permutation, so in (start, id) order a child sharing its
    parent's start may come first. Also a range whose parent is a start/end range, one whose
    parent is missing. Returns nothing; the DB is the input of both computations."""
    shutil.copy(base, path)
    rnd = random.Random(seed)
    con = sqlite3.connect(path)
    con.executemany("INSERT OR IGNORE INTO STRING_IDS(id, value) VALUES (?, ?)", NAMES.items())
    rows = []
    total = nthreads * per_thread
    ids = list(range(100000, 100000 + total))
    rnd.shuffle(ids)
    k = 0
    for th in range(nthreads):
        gt = (4242 << 32) | (500 + th)
        t = 1000000 + th * 7
        stack = []  # [id, start, level]
        made = 0
        while made < per_thread or stack:
            if made < per_thread and len(stack) < 6 and (not stack or rnd.random() < 0.55):
                rid = ids[k]
                k += 1
                made += 1
                # a child may share its parent's start (the start tie)
                start = t if stack and rnd.random() < 0.2 and stack[-1][1] == t else t + rnd.randint(1, 40)
                t = start
                parent = stack[-1][0] if stack else 0
                rows.append([rid, start, None, gt, gt, rnd.choice(list(NAMES)), 0, 0, len(stack), parent, 0])
                stack.append([rid, start, len(rows) - 1])
            else:
                rid, start, idx = stack.pop()
                t += rnd.randint(1, 40)
                rows[idx][2] = t
    # a still-open range (no duration, counts as a child) and odd parents
    rows[-1][10] = 1
    se = [900000000, 1000500, 1000900, (4242 << 32) | 500, (4242 << 32) | 500, 9001, 0, 1, -1, 0, 0]
    rows.append(se)
    rows.append([900000001, 1000600, 1000700, (4242 << 32) | 500, (4242 << 32) | 500, 9002, 0, 0, 0, 900000000, 0])
    rows.append([900000002, 1000610, 1000620, (4242 << 32) | 501, (4242 << 32) | 501, 9003, 0, 0, 0, 777777777, 0])
    con.executemany("INSERT INTO HGTX_RANGES VALUES (?,?,?,?,?,?,?,?,?,?,?)", rows)
    con.commit()
    con.close()


def expected(path, regex=None, rows=None):
    """hgtx_pushpop_trace's CSV computed here from the rows: stack by walking parent links,
    children by scanning every range (no streaming, no index)."""
    import re
    con = sqlite3.connect(path)
    con.text_factory = lambda b: b.decode("latin-1")  # the base DB has a name with byte 0xFF
    strings = dict(con.execute("SELECT id, value FROM STRING_IDS"))
    all_r = con.execute("SELECT id, start, end, globalTid, nameId, domainId, style, level, parentId, unterminated"
                        " FROM HGTX_RANGES").fetchall()
    con.close()
    pp = {r[0]: r for r in all_r if r[6] == 0}
    kids = {}
    for r in pp.values():
        if r[8] in pp:
            n, d = kids.get(r[8], (0, 0))
            kids[r[8]] = (n + 1, d + (0 if r[9] else r[2] - r[1]))
    out = io.StringIO()
    hdr = ("Row#,Start (ns),End (ns),Duration (ns),DurChild (ns),DurNonChild (ns),Name,PID,TID,Lvl,"
           "NumChild,RangeId,ParentId,RangeStack,NameTree,")
    lines = [hdr]
    n = 0
    for r in sorted(pp.values(), key=lambda r: (r[1], r[0])):
        name = strings[r[4]] if not r[5] else strings[r[5]] + ":" + strings[r[4]]
        qname = name.replace('"', '""')
        if regex is not None and not re.search(regex, name):
            continue
        if rows is not None and n == rows:
            break
        n += 1
        chain, x = [r[0]], r[8]
        while x in pp:
            chain.append(x)
            x = pp[x][8]
        stack = "".join(":%d" % i for i in reversed(chain))
        nc, dc = kids.get(r[0], (0, 0))
        if r[9]:
            times = '%d,"-","-",%d,"-"' % (r[1], dc)
        else:
            times = "%d,%d,%d,%d,%d" % (r[1], r[2], r[2] - r[1], dc, r[2] - r[1] - dc)
        lines.append('%d,%s,"%s",%d,%d,%d,%d,%d,%s,"%s","%s",' % (
            n, times, qname, r[3] >> 32, r[3] & 0xffffffff, r[7], nc, r[0],
            '"-"' if not r[8] else str(r[8]), stack, "-" * max(r[7], 0) + qname))
    return ("\n".join(lines) + "\n").encode("latin-1")


# ---- exact rows: nested ranges of 3 threads ----
db = os.path.join(WORK, "nested.db")
synth(db, 3, 4000, 7)
for spec, regex, rows in (("hgtx_pushpop_trace", None, None), ("hgtx_pushpop_trace:range=^(beta|gamma)", "^(beta|gamma)", None),
                          ("hgtx_pushpop_trace:rows=777", None, 777), ("hgtx_pushpop_trace:range=lta:rows=50", "lta", 50)):
    rc, out, err = run("stats", "-r", spec, "-f", "csv", db)
    exp = expected(db, regex, rows)
    check(rc == 0 and out == exp, "%s: %d rows vs %d expected, first difference at line %s" % (
        spec, out.count(b"\n"), exp.count(b"\n"),
        next((i for i, (a, b) in enumerate(zip(out.splitlines(), exp.splitlines())) if a != b), "-")))
check(expected(db).count(b"\n") > 12000, "the synthetic DB has its ranges")
# the odd parents: a start/end parent and a missing one start their own stacks
rc, out, err = run("stats", "-r", "hgtx_pushpop_trace:range=^(beta|gamma)$", "-f", "csv", db)
check(b',900000001,900000000,":900000001","beta",' in out and b',900000002,777777777,":900000002","gamma",' in out,
      "a range whose parent is no push/pop range starts its own stack: %r" % out[-300:])

# the same without the index on parentId (children totals from one grouped pass instead)
noidx = os.path.join(WORK, "noidx.db")
shutil.copy(db, noidx)
con = sqlite3.connect(noidx)
con.execute("DROP INDEX IF EXISTS HGTX_RANGES_parent")
con.commit()
con.close()
os.chmod(noidx, 0o444)  # read-only: the reader cannot create the index either
rc, out, err = run("stats", "-r", "hgtx_pushpop_trace", "-f", "csv", noidx)
check(rc == 0 and out == expected(db), "without the parentId index: the same rows (rc %d, %r)" % (rc, err))

# other formats stream the same rows (json, tsv; table measures its widths in a first pass)
rc, js, err = run("stats", "-r", "hgtx_pushpop_trace:rows=300", "-f", "json", db)
import json
got = json.loads(js)["hgtx_pushpop_trace"] if js.startswith(b"{") else json.loads(js)
exp = list(csv.DictReader(io.StringIO(expected(db, None, 300).decode("latin-1"))))
check(len(got) == 300 and [str(g["RangeStack"]) for g in got] == [e["RangeStack"] for e in exp],
      "json rows=300: %d rows" % len(got))
rc, tb, err = run("stats", "-r", "hgtx_pushpop_trace:rows=300", "-f", "table", db)
# the last column is not padded: every row's text before it has one width, the header's too
body = tb.splitlines()[-302:]
widths = {len(l.rsplit(b"  ", 1)[0]) for l in body[:1] + body[2:]}
check(rc == 0 and len(body[2:]) == 300 and body[2].lstrip().startswith(b"1  ") and len(widths) == 1,
      "table rows=300 aligned: widths %s" % sorted(widths)[:5])

# a parent cycle (corrupt DB) ends: each range's stack stops where the loop closes
cyc = os.path.join(WORK, "cycle.db")
shutil.copy(base, cyc)
con = sqlite3.connect(cyc)
gt = (4242 << 32) | 100
con.execute("INSERT INTO HGTX_RANGES VALUES (300, 50000, 50100, ?, ?, 2, 0, 0, 0, 301, 0)", (gt, gt))
con.execute("INSERT INTO HGTX_RANGES VALUES (301, 50010, 50090, ?, ?, 2, 0, 0, 1, 300, 0)", (gt, gt))
# a loop above the range (302 -> 303 -> 304 -> 303): cut at the first id met twice
con.execute("INSERT INTO HGTX_RANGES VALUES (302, 60000, 60100, ?, ?, 2, 0, 0, 2, 303, 0)", (gt, gt))
con.execute("INSERT INTO HGTX_RANGES VALUES (303, 60010, 60050, ?, ?, 2, 0, 0, 1, 304, 0)", (gt + 1, gt + 1))
con.execute("INSERT INTO HGTX_RANGES VALUES (304, 60020, 60030, ?, ?, 2, 0, 0, 0, 303, 0)", (gt + 2, gt + 2))
con.commit()
con.close()
p = subprocess.run([PA, "stats", "-r", "hgtx_pushpop_trace", cyc], capture_output=True, timeout=60)
check(p.returncode == 0 and b',300,301,":301:300",' in p.stdout and b',301,300,":300:301",' in p.stdout
      and b',302,303,":304:303:302",' in p.stdout,
      "parent cycle: rc %d %r" % (p.returncode, p.stdout[-400:]))

# ---- peak RSS does not grow with the ranges: 200 k vs 12 k ranges ----
big = os.path.join(WORK, "big.db")
synth(big, 2, 100000, 11)
for args in (["stats", "-r", "hgtx_pushpop_trace", "-f", "csv"], ["stats", "-r", "gpu_trace,ze_api_trace", "-f", "json"],
             ["report", "--force-overwrite", "-o", os.path.join(WORK, "r.html")]):
    small_kib = peak_rss_kib(*args, db)
    big_kib = peak_rss_kib(*args, big)
    # held whole, 190 k more ranges cost > 100 MiB; streamed, the medians of hgtx_sum (8 bytes a
    # range) and SQLite's page cache are what grows
    check(big_kib - small_kib < 12 * 1024, "%s: peak RSS %d KiB at 200 k ranges vs %d KiB at 12 k" % (
        " ".join(args[:3]), big_kib, small_kib))

if FAILS:
    print("%d check(s) failed" % len(FAILS), file=sys.stderr)
    sys.exit(1)
print("ok")
