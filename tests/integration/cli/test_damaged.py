"""test_damaged.py - a damaged DB's rows are still reported and the damage is named: a kernel (or
API call, OS runtime call) whose name id has no STRING_IDS entry is listed as '<unknown name id N>'
(it vanished from kern_sum before) and the warning names the table, rowid and the missing ids;
NULL, text and real times (which comparisons let pass or misnamed) are flagged as not integers."""
import os, shutil, sqlite3, subprocess, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pa_itest import check, FAILS  # noqa: E402

MKDB, PA, WORK = sys.argv[1], sys.argv[2], sys.argv[3]


def run(*args):
    p = subprocess.run([PA, *args], capture_output=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
db = os.path.join(WORK, "k.db")
subprocess.run([MKDB, db, os.path.join(WORK, "spool")], check=True, capture_output=True)
con = sqlite3.connect(db)
con.execute("INSERT INTO STRING_IDS(id, value) VALUES (9101, 'kA'), (9102, 'zeCommandListAppendLaunchKernel')")
# ZE_OPS(start, end, tid, kind, ..., nameId (15th), ...): two kA, one kernel named by a missing id
cols = [r[1] for r in con.execute("PRAGMA table_info(ZE_OPS)")]


def op(start, end, name_id):
    row = dict.fromkeys(cols)
    row.update(start=start, end=end, tid=(4242 << 32) | 100, kind=1, corrId=start, apiStart=start - 10,
               apiEnd=start - 5, apiNameId=9102, deviceId=0, contextId=1, queueId=2, nameId=name_id,
               gridX=1, gridY=1, gridZ=1, blockX=8, blockY=1, blockZ=1)
    con.execute("INSERT INTO ZE_OPS(%s) VALUES (%s)" % (",".join(cols), ",".join("?" * len(cols))),
                [row[c] for c in cols])
    return con.execute("SELECT max(rowid) FROM ZE_OPS").fetchone()[0]


op(2000, 2100, 9101)
op(3000, 3300, 9101)
lost = op(4000, 4050, 9199)
con.execute("INSERT INTO ZE_API(start, \"end\", tid, nameId, corrId) VALUES (5000, 5020, ?, 9198, 1)",
            ((4242 << 32) | 100,))
api = con.execute("SELECT max(rowid) FROM ZE_API").fetchone()[0]
con.commit()
con.close()

rc, out, err = run("stats", "-r", "kern_sum", db)
lines = out.splitlines()
check(rc == 0 and any(l.endswith(b',400,2,200,200,100,300,100,"kA",') for l in lines)
      and any(l.endswith(b',50,1,50,50,50,50,0,"<unknown name id 9199>",') for l in lines),
      "kern_sum lists the kernel with no name string: %r" % out)
rc, out, err = run("stats", "-r", "ze_api_sum", db)
check(rc == 0 and b'"<unknown name id 9198>"' in out, "ze_api_sum lists the call with no name: %r" % out)
rc, out, err = run("stats", "-r", "gpu_trace", db)
check(rc == 0 and out.count(b"\n") == 4, "gpu_trace: every kernel row: %r" % out)
want = (b"profagent: stats: warning: %s is damaged: 2 trace rows have no name (ZE_API rowid %d has a name id missing"
        b" from STRING_IDS: 9198, ZE_OPS rowid %d has a name id missing from STRING_IDS: 9199): the reports list them"
        b" under '<unknown name id N>' (sqlite3 %s 'PRAGMA integrity_check' tells more)\n"
        % (db.encode(), api, lost, db.encode()))
check(err.endswith(want) and err.count(b"\n") == 2, "the damage warning names the missing ids: %r" % err)

# times that are not integers: NULL (every comparison with it is NULL: it passed the checks), a
# real inside the session (passes every comparison), a text (was called "ends after the session end")
t = os.path.join(WORK, "t.db")
shutil.copy(db, t)
con = sqlite3.connect(t)
con.execute("DELETE FROM ZE_API")
con.execute("DELETE FROM ZE_OPS WHERE nameId = 9199")
con.execute("UPDATE HGTX_RANGES SET \"end\" = NULL WHERE id = 6")
con.execute("UPDATE HGTX_RANGES SET start = 'soon' WHERE id = 7")
o1 = con.execute("SELECT min(rowid) FROM OSRT_API").fetchone()[0]
con.execute("UPDATE OSRT_API SET start = start + 0.5 WHERE rowid = ?", (o1,))
con.execute("DELETE FROM SESSION_COUNTERS")
for k in ("drops", "late_records", "unrecorded", "hgtx_depth_overflow"):
    con.execute("UPDATE META SET value = 0 WHERE key = ?", (k,))
con.commit()
con.close()
rc, out, err = run("stats", "-r", "osrt_sum", t)
want = (b"profagent: stats: warning: %s is damaged: 3 trace rows have impossible times (OSRT_API rowid %d has a"
        b" time that is not an integer (NULL, text or real), HGTX_RANGES rowid 6 and 1 more have a time that is not"
        b" an integer (NULL, text or real); session 1000..20010 ns, META start_mono_ns..end_mono_ns): the reports"
        b" include them as they are, the times from them are wrong (sqlite3 %s 'PRAGMA integrity_check' tells"
        b" more)\n" % (t.encode(), o1, t.encode()))
check(rc == 0 and err == want, "non-integer times flagged: %r\nwant %r" % (err, want))
rc, out, err = run("stats", "-r", "kern_sum", os.path.join(WORK, "k.db"))
rc2, out2, err2 = run("stats", "-r", "kern_sum", t)
check(rc2 == 0 and b"unknown name" not in out2 and b"no name" not in err2, "a sound name: no warning (%r)" % err2)

if FAILS:
    print("%d check(s) failed" % len(FAILS), file=sys.stderr)
    sys.exit(1)
print("ok")
