"""test_readers.py - the DB readers (stats, export, report, merge, recover): exact medians past
median()'s memory budget (the spilled path, checked against Python's), the damaged-DB check run
once per content (a DB found sound is marked; a later write brings the check back), a killed
WAL-mode writer's DB merged from its WAL (it was called truncated), one wording for a truncated DB
in every command, hgtx_sum naming a range whose name id is missing, no OUT.html.tmp left by a
report killed with SIGTERM, recover of a spool cut inside its first frame named so."""
import csv, io, os, shutil, signal, sqlite3, statistics, struct, subprocess, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pa_itest import check, FAILS  # noqa: E402

MKDB, PA, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
BUDGET = 512 * 1024  # PA_MEDIAN_BUDGET_VALUES (writer/writer_internal.h)


def run(*args, env=None):
    p = subprocess.run([PA, *args], capture_output=True, timeout=300, env=env)
    return p.returncode, p.stdout, p.stderr


def mkdb(name):
    path = os.path.join(WORK, name)
    subprocess.run([MKDB, path, os.path.join(WORK, name + ".spool")], check=True, capture_output=True)
    con = sqlite3.connect(path)
    con.execute("DELETE FROM SESSION_COUNTERS")  # no loss warning: stderr holds what is checked
    con.commit()
    con.close()
    return path


def counter(path):
    with open(path, "rb") as f:
        return struct.unpack(">I", f.read(28)[24:28])[0]


shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)

# ---- median() past its budget: exact, odd and even counts, ties ----
big = mkdb("big.db")
con = sqlite3.connect(big)
con.execute("INSERT INTO STRING_IDS(id, value) VALUES (9301, 'zeOdd'), (9302, 'zeEvenTies')")
s0 = con.execute("SELECT value FROM META WHERE key = 'start_mono_ns'").fetchone()[0]
tid = (4242 << 32) | 100
x = 12345
vals = {9301: [], 9302: []}
rows = []
for i in range(2 * BUDGET + 3):
    x = (x * 1103515245 + 12345) % 2147483648
    name = 9301 if i % 2 else 9302
    d = x % 100000 if name == 9301 else x % 97  # 9302: ~5400 of each value
    vals[name].append(d)
    rows.append((s0 + 100, s0 + 100 + d, tid, name, i + 1))
con.executemany("INSERT INTO ZE_API(start, \"end\", tid, nameId, corrId) VALUES (?, ?, ?, ?, ?)", rows)
con.commit()
con.close()
check(len(vals[9301]) == BUDGET + 1 and len(vals[9302]) % 2 == 0 and len(vals[9302]) > BUDGET, "the groups")
rc, out, err = run("stats", "-r", "ze_api_sum", big)
got = {r[9]: r for r in csv.reader(io.StringIO(out.decode())) if len(r) > 9 and r[0] != "Row#"}
for nid, name in ((9301, "zeOdd"), (9302, "zeEvenTies")):
    want = statistics.median(vals[nid])  # even: the mean of the two middle values
    check(rc == 0 and name in got and got[name][5] == str(int(want)) and got[name][3] == str(len(vals[nid])),
          "ze_api_sum %s: median %s of %d values (Python), got %r (%r)" % (name, want, len(vals[nid]),
                                                                          got.get(name), err))
# the medians went through the temporary file: one that cannot be created is the error
rc, out, err = run("stats", "-r", "ze_api_sum", big, env=dict(os.environ, TMPDIR=os.path.join(WORK, "nodir")))
check(rc != 0 and b"median(): the temporary file for its" in err and os.path.join(WORK, "nodir").encode() in err,
      "past the budget the values go to a temporary file in TMPDIR: rc %d %r" % (rc, err))

# ---- the damaged-DB check: once per content ----
k = mkdb("k.db")
rc, out, err = run("stats", "-r", "kern_sum", k)
con = sqlite3.connect(k)
mark = con.execute("SELECT value FROM META WHERE key = 'rows_checked_change'").fetchone()
con.close()
check(rc == 0 and mark == (counter(k),), "a sound DB is marked at its change counter: %r vs %d" % (mark, counter(k)))
rc, out, err = run("stats", "-r", "kern_sum", k)
check(rc == 0 and counter(k) == mark[0], "a marked DB is not written again: %d" % counter(k))
con = sqlite3.connect(k)
con.execute("UPDATE HGTX_RANGES SET \"end\" = start - 5 WHERE id = 6")  # a foreign write after the mark
con.commit()
con.close()
rc, out, err = run("stats", "-r", "kern_sum", k)
check(rc == 0 and b"is damaged: 1 trace row has an impossible time (HGTX_RANGES rowid 6 ends before its start"
      in err, "a write after the mark brings the check back: %r" % err)

# ---- hgtx_sum: a range whose name id has no STRING_IDS entry is named, not '-' ----
h = mkdb("h.db")
con = sqlite3.connect(h)
nid = con.execute("SELECT nameId FROM HGTX_RANGES WHERE id = 6").fetchone()[0]
n_with = con.execute("SELECT count(*) FROM HGTX_RANGES WHERE nameId = ? AND unterminated = 0", (nid,)).fetchone()[0]
con.execute("DELETE FROM STRING_IDS WHERE id = ?", (nid,))
con.commit()
con.close()
rc, out, err = run("stats", "-r", "hgtx_sum", h)
rows = [r for r in csv.reader(io.StringIO(out.decode("latin-1"))) if len(r) > 10]
named = [r for r in rows if r[10] == "<unknown name id %d>" % nid]
check(rc == 0 and len(named) == 1 and named[0][3] == str(n_with) and not [r for r in rows if r[10] in ("", "-")],
      "hgtx_sum names the range of missing name id %d: %r" % (nid, out))

# ---- a killed WAL-mode writer: the pages past the main file's end are in its WAL ----
w = mkdb("wal.db")
child = ("import os, sqlite3, sys\n"
         "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
         "c.execute('PRAGMA journal_mode=WAL'); c.execute('PRAGMA wal_autocheckpoint=0')\n"
         "c.execute('BEGIN')\n"
         "c.executemany('INSERT INTO ZE_API(start, \"end\", tid, nameId, corrId) VALUES (?, ?, ?, 9102, ?)',"
         " [(1500 + i %% 1000, 1600 + i %% 1000, %d, i) for i in range(20000)])\n"
         "c.execute(\"INSERT INTO STRING_IDS(id, value) VALUES (9102, 'zeWalCall')\")\n"
         "c.execute(\"UPDATE META SET value = 4343 WHERE key = 'pid'\")\n"  # another process than big.db's
         "c.execute('COMMIT')\n"
         "os._exit(0)\n" % tid)  # no close: no checkpoint, the WAL stays as a SIGKILL leaves it
subprocess.run([sys.executable, "-c", child, w], check=True)
walf = w + "-wal"
check(os.path.getsize(walf) > 0, "the WAL holds the commit")
# a checkpoint cut short: page 1 (the header with the new page count) copied, the rest not yet
data = open(walf, "rb").read()
psz = struct.unpack(">I", data[8:12])[0]
page1 = None
for off in range(32, len(data) - 24 - psz + 1, 24 + psz):
    if struct.unpack(">I", data[off:off + 4])[0] == 1:
        page1 = data[off + 24:off + 24 + psz]
with open(w, "r+b") as f:
    f.write(page1)
pages = struct.unpack(">I", page1[28:32])[0]
check(os.path.getsize(w) < pages * psz, "the main file is shorter than its header says (%d < %d)"
      % (os.path.getsize(w), pages * psz))
m = os.path.join(WORK, "m.db")
rc, out, err = run("merge", "-o", m, w, big)
n = sqlite3.connect(m).execute("SELECT count(*) FROM ZE_API a JOIN STRING_IDS s ON s.id = a.nameId"
                               " WHERE s.value = 'zeWalCall'").fetchone()[0] if rc == 0 else -1
check(rc == 0 and b"truncated" not in err and n == 20000, "merge reads the WAL's commits: rc %d, %d rows, %r"
      % (rc, n, err))

# ---- a truncated DB: one wording in every command ----
t = os.path.join(WORK, "trunc.db")
with open(k, "rb") as f:
    open(t, "wb").write(f.read(8192 + 100))
want = b"'%s' is truncated (8292 bytes; its header says " % t.encode()
for args in (["stats", "-r", "kern_sum", t], ["export", t, "-o", os.path.join(WORK, "x.json")],
             ["report", t, "-o", os.path.join(WORK, "x.html")], ["merge", "-o", os.path.join(WORK, "x.db"), t, k],
             ["stats", "-r", "kern_sum", t, k]):
    rc, out, err = run(*args)
    check(rc != 0 and err.count(b"\n") == 1 and want in err, "%s: %r" % (" ".join(args[:1]), err))

# ---- report killed while writing: its temporary page is removed ----
html = os.path.join(WORK, "big.html")
p = subprocess.Popen([PA, "report", big, "-o", html], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
for _ in range(3000):
    if os.path.exists(html + ".tmp") or p.poll() is not None:
        break
    time.sleep(0.01)
seen = os.path.exists(html + ".tmp")
p.send_signal(signal.SIGTERM)
p.wait(timeout=120)
if seen and p.returncode == -signal.SIGTERM:
    check(not os.path.exists(html + ".tmp") and not os.path.exists(html), "SIGTERM: no %s.tmp left" % html)
else:
    print("note: the report ended before it could be killed while writing (rc %s)" % p.returncode)

# ---- recover of a spool cut inside its first frame ----
sp = os.path.join(WORK, "k.db.spool")
cut = os.path.join(WORK, "cut.db.4242.0.spool.zst")
open(cut, "wb").write(open(sp, "rb").read()[:60])
rc, out, err = run("recover", cut, "-o", os.path.join(WORK, "cut.db"))
check(rc != 0 and b"is a spool cut short inside its first zstd frame" in err and b"nothing to recover" in err
      and not os.path.exists(os.path.join(WORK, "cut.db")), "recover of a cut first frame: %r" % err)

if FAILS:
    print("%d check(s) failed" % len(FAILS), file=sys.stderr)
    sys.exit(1)
print("ok")
