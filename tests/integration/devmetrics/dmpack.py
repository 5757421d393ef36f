"""dmpack.py - an independent (Python) reader of METRIC_CHUNKS.data (format: common/pa_devmetrics.h,
docs/utilization.md "METRIC_CHUNKS"): connect(db) gives a connection with TEMP tables METRIC_INTERVALS
(deviceId, startNs, durationNs, v0..v<n-1>) and METRIC_SAMPLES (deviceId, startNs, durationNs,
metricId, value) decoded from the chunks, so the tests check the C writer against a second decoder."""
import sqlite3
import struct


def _var(b, i):
    x, s = 0, 0
    while True:
        c = b[i]
        i += 1
        x |= (c & 0x7F) << s
        s += 7
        if not c & 0x80:
            return x, i


def _unzz(u):
    return (u >> 1) ^ -(u & 1)


def decode(base, n, nm, data):
    """The n intervals of one chunk: [(start, dur, [values])]."""
    out, i, prev_end, prev_dur, prev = [], 0, base, 0, [0] * nm
    for _ in range(n):
        a, i = _var(data, i)
        b, i = _var(data, i)
        start = prev_end + _unzz(a)
        dur = prev_dur + _unzz(b)
        prev_end, prev_dur = start + dur, dur
        vals = []
        for k in range(nm):
            h, i = _var(data, i)
            if not h & 1:
                prev[k] += _unzz(h >> 1)
                vals.append(float(prev[k]))
            elif h == 1:
                vals.append(struct.unpack_from("<f", data, i)[0])
                i += 4
            elif h == 3:
                vals.append(struct.unpack_from("<d", data, i)[0])
                i += 8
            else:
                raise ValueError("bad value header %d" % h)
        out.append((start, dur, vals))
    if i != len(data):
        raise ValueError("chunk has %d bytes, %d decoded" % (len(data), i))
    return out


def intervals(c):
    """[(deviceId, start, dur, values)] of every chunk, by device and start."""
    rows = []
    for dev, base, n, nm, data in c.execute("SELECT deviceId, startNs, intervals, nmetrics, data FROM METRIC_CHUNKS"
                                            " ORDER BY deviceId, startNs"):
        for s, d, v in decode(base, n, nm, bytes(data)):
            rows.append((dev, s, d, v))
    return rows


_cache = {}


def connect(db, uri=False):
    """A connection with the decoded TEMP tables; one per DB file state (the tests only read)."""
    import os
    st = os.stat(db) if not uri else None
    key = (db, st.st_mtime_ns, st.st_size) if st else None
    if key in _cache:
        return _cache[key]
    c = sqlite3.connect(db, uri=uri)
    if key:
        _cache[key] = c
    has = c.execute("SELECT count(*) FROM sqlite_master WHERE name = 'METRIC_CHUNKS'").fetchone()[0]
    if not has:
        return c
    rows = intervals(c)
    nm = max((len(r[3]) for r in rows), default=0)
    cols = "".join(", v%d REAL" % k for k in range(nm))
    c.execute("CREATE TEMP TABLE METRIC_INTERVALS(deviceId INTEGER, startNs INTEGER, durationNs INTEGER%s)" % cols)
    c.execute("CREATE TEMP TABLE METRIC_SAMPLES(deviceId INTEGER, startNs INTEGER, durationNs INTEGER, metricId INTEGER,"
              " value REAL)")
    ph = ",".join("?" * (3 + nm))
    c.executemany("INSERT INTO temp.METRIC_INTERVALS VALUES(%s)" % ph,
                  [(d, s, u) + tuple(v) + (None,) * (nm - len(v)) for d, s, u, v in rows])
    c.executemany("INSERT INTO temp.METRIC_SAMPLES VALUES(?,?,?,?,?)",
                  [(d, s, u, k, x) for d, s, u, v in rows for k, x in enumerate(v)])
    return c
