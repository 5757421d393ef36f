#!/usr/bin/env python3
"""mkbig.py - a large profagent DB from a real one: its trace rows repeated K times, each copy
shifted by the session's span (times, correlation ids, range and memory event ids), until the DB
holds at least N events (ZE_API + ZE_OPS + OSRT_API + HGTX_RANGES + DEVICE_MEMORY rows). Used by
the export benchmark and the HTML report's large-DB check.

usage: mkbig.py SRC.db OUT.db N     prints the number of events written"""
import os, shutil, sqlite3, sys

src, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
if os.path.exists(out):
    os.unlink(out)
shutil.copy(src, out)
c = sqlite3.connect(out)
tabs = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
T = [t for t in ("ZE_API", "ZE_OPS", "OSRT_API", "HGTX_RANGES", "DEVICE_MEMORY") if t in tabs]
per = sum(c.execute("SELECT count(*) FROM %s" % t).fetchone()[0] for t in T)
k = max(1, -(-n // max(per, 1)))
lo, hi = c.execute("SELECT min(s), max(e) FROM (" + " UNION ALL ".join(
    "SELECT min(start) s, max(end) e FROM %s" % t for t in T) + ")").fetchone()
span = hi - lo + 1000
mcorr = max(c.execute("SELECT max(corrId) FROM ZE_API").fetchone()[0] or 0, 1) if "ZE_API" in tabs else 1
mrid = (c.execute("SELECT max(id) FROM HGTX_RANGES").fetchone()[0] or 0) + 1 if "HGTX_RANGES" in tabs else 1
mev = (c.execute("SELECT max(eventId) FROM DEVICE_MEMORY").fetchone()[0] or 0) + 1 if "DEVICE_MEMORY" in tabs else 1
cte = "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < %d) " % (k - 1)
S = "k.i * %d" % span
if k > 1:
    if "ZE_API" in tabs:
        c.execute(cte + "INSERT INTO ZE_API SELECT start + %s, end + %s, tid, nameId, corrId + k.i * %d, result"
                  " FROM ZE_API, k WHERE ZE_API.rowid <= (SELECT count(*) FROM ZE_API)" % (S, S, mcorr))
    if "ZE_OPS" in tabs:
        cols = [r[1] for r in c.execute("PRAGMA table_info(ZE_OPS)")]
        sel = [("%s + %s" % (x, S)) if x in ("start", "end", "apiStart", "apiEnd") else
               ("corrId + k.i * %d" % mcorr) if x == "corrId" else x for x in cols]
        c.execute(cte + "INSERT INTO ZE_OPS(%s) SELECT %s FROM ZE_OPS, k" % (",".join(cols), ",".join(sel)))
    if "OSRT_API" in tabs:
        c.execute(cte + "INSERT INTO OSRT_API SELECT start + %s, end + %s, globalTid, nameId, ret, errno"
                  " FROM OSRT_API, k" % (S, S))
    if "HGTX_RANGES" in tabs:
        cols = [r[1] for r in c.execute("PRAGMA table_info(HGTX_RANGES)")]
        sel = [("%s + %s" % (x, S)) if x in ("start", "end") else ("id + k.i * %d" % mrid) if x == "id" else
               ("CASE WHEN parentId = 0 THEN 0 ELSE parentId + k.i * %d END" % mrid) if x == "parentId" else x
               for x in cols]
        c.execute(cte + "INSERT INTO HGTX_RANGES(%s) SELECT %s FROM HGTX_RANGES, k" % (",".join(cols), ",".join(sel)))
    if "DEVICE_MEMORY" in tabs:
        cols = [r[1] for r in c.execute("PRAGMA table_info(DEVICE_MEMORY)")]
        sel = [("%s + %s" % (x, S)) if x in ("start", "end", "freeTime") else
               ("%s + k.i * %d" % (x, mev)) if x in ("eventId", "allocEventId", "freeEventId") else x for x in cols]
        c.execute(cte + "INSERT INTO DEVICE_MEMORY(%s) SELECT %s FROM DEVICE_MEMORY, k" % (",".join(cols), ",".join(sel)))
    c.execute("UPDATE META SET value = value + %d WHERE key = 'end_mono_ns'" % ((k - 1) * span))
c.commit()
print(sum(c.execute("SELECT count(*) FROM %s" % t).fetchone()[0] for t in T))
c.close()
