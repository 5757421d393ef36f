#!/usr/bin/env python3
"""test_pccl_factors.py - pccl_op_sum's Trans Size per collective type against a hand computation
of the bus-bandwidth convention (docs/collectives.md; the spec's "PCCL operator summary" example:
AllReduce c:83886080 d:9 w:4, 461 communications on 4 devices = 464057794560 bytes, i.e.
251658240 bytes per participating instance), and the point-to-point rules (Trans Time = every
instance's time, Instances = instances). One run of samples/allreduce (2 devices); its operator
range names are then rewritten in copies of the DB to each type, with and without w:.
usage: test_pccl_factors.py BUILD_DIR"""
import csv, io, os, re, shutil, sqlite3, subprocess, sys, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pa_itest import FAILS, check, run_sample  # noqa: E402

B = sys.argv[1]
PA = os.path.join(B, "bin", "profagent")
WORK = tempfile.mkdtemp(prefix="pa_pccl_factors_")
ITERS = 4


def op_rows(db):
    p = subprocess.run([PA, "stats", "-r", "pccl_op_sum", db], capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, "pccl_op_sum %s: %s" % (db, p.stderr[-300:]))
    return list(csv.DictReader(io.StringIO(p.stdout)))


def rename(src, dst, typ, fields):
    """Copy of src whose AllReduce operator range names become `typ, <fields>, h:.., b:..` (the
    communicator and buffers kept)."""
    shutil.copy(src, dst)
    c = sqlite3.connect(dst)
    for sid, v in c.execute("SELECT id, value FROM STRING_IDS WHERE CAST(value AS TEXT) LIKE 'AllReduce, %'").fetchall():
        v = v.decode() if isinstance(v, bytes) else v
        keep = ", ".join(kv for kv in v.split(", ")[1:] if kv[:2] in ("h:", "b:"))
        c.execute("UPDATE STRING_IDS SET value = ? WHERE id = ?", ("%s, %s, %s" % (typ, fields, keep), sid))
    c.commit()
    c.close()


def instances(db):
    """(operator instances, per-instance kernel time in ns): ranges with allreduce kernels."""
    c = sqlite3.connect(db)
    per = {}
    for rid, s, e in c.execute("SELECT DISTINCT x.rangeId, o.start, o.end FROM HGTX_OP_ASSOC x JOIN ZE_OPS o ON"
                               " o.rowid = x.opId JOIN STRING_IDS k ON k.id = o.nameId JOIN HGTX_RANGES r ON"
                               " r.id = x.rangeId JOIN STRING_IDS n ON n.id = r.nameId WHERE o.kind = 1 AND"
                               " r.unterminated = 0 AND k.value LIKE 'allreduce_%' AND n.value LIKE 'AllReduce, %'"):
        per[rid] = per.get(rid, 0) + (e - s)
    c.close()
    return per


db = os.path.join(WORK, "ar.db")
p = run_sample(B, "allreduce", [str(ITERS), "1024", "sleep", "2000"], db)
if not check(p.returncode == 0 and os.path.exists(db), "allreduce ran: %r" % p.stderr[-300:]):
    sys.exit(1)
inst = instances(db)
n = len(inst)
check(n == 2 * ITERS, "%d operator instances = 2 devices x %d iterations" % (n, ITERS))
base = op_rows(db)
check(len(base) == 1 and int(base[0]["Instances"]) == ITERS, "AllReduce as run: one group, %d communications (%r)"
      % (ITERS, base))
trans_coll = int(base[0]["Trans Time (ns)"]) if base else 0

S = 1000 * 4  # c:1000 of d:7 (float32)
# per-instance bytes written out by hand for w = 4 and for w absent (= the 2 devices of the communication)
CASES = [("AllReduce", "w:4", 2 * 3 / 4 * S), ("AllGather", "w:4", 3 * S), ("ReduceScatter", "w:4", 3 * S),
         ("AllToAll", "w:4", 3 / 4 * S), ("Broadcast", "w:4", S), ("Reduce", "w:4", S), ("Send", "w:4", S),
         ("Recv", "w:4", S), ("AllReduce", "", 2 * 1 / 2 * S), ("AllGather", "", 1 * S), ("ReduceScatter", "", 1 * S),
         ("AllToAll", "", 1 / 2 * S)]
for typ, w, per in CASES:
    out = os.path.join(WORK, "%s%s.db" % (typ, w.replace(":", "")))
    rename(db, out, typ, "p:0, c:1000, d:7, r:0" + (", " + w if w else "") + ", t:1")
    rows = op_rows(out)
    if not check(len(rows) == 1, "%s %s: one group (%d rows)" % (typ, w or "no w", len(rows))):
        continue
    r = rows[0]
    size, trans = int(r["Trans Size (bytes)"]), int(r["Trans Time (ns)"])
    check(size == int(n * per), "%s %s: Trans Size %d = %d instances x %g bytes" % (typ, w or "no w", size, n, per))
    check(int(r["Trans Bandwidth (B/s)"]) == int(size * 1e9 / trans) if trans else False,
          "%s %s: Trans Bandwidth %s = Trans Size / Trans Time" % (typ, w or "no w", r["Trans Bandwidth (B/s)"]))
    if typ in ("Send", "Recv"):  # point-to-point: every instance counts, with its own time
        check(int(r["Instances"]) == n and trans == sum(inst.values()),
              "%s: Instances %s = %d, Trans Time %d = the instances' times %d" % (typ, r["Instances"], n, trans,
                                                                               sum(inst.values())))
    else:
        check(int(r["Instances"]) == ITERS and trans == trans_coll,
              "%s %s: Instances %s = %d communications, Trans Time %d = AllReduce's %d" % (typ, w or "no w",
                                                                                          r["Instances"], ITERS, trans,
                                                                                          trans_coll))
# the spec's example row: 464057794560 bytes over 461 communications of 4 devices
out = os.path.join(WORK, "spec.db")
rename(db, out, "AllReduce", "p:0, c:83886080, d:9, r:1, w:4, t:1")
rows = op_rows(out)
per = 464057794560 // (461 * 4)
check(per == 251658240 and rows and int(rows[0]["Trans Size (bytes)"]) == n * per,
      "spec example: %d bytes per instance x %d = %r" % (per, n, rows and rows[0]["Trans Size (bytes)"]))
print("%d failed" % len(FAILS) if FAILS else "all pccl factor checks passed")
sys.exit(1 if FAILS else 0)
