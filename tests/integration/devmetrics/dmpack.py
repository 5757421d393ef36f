"""dmpack.py - an independent (Python) reader of METRIC_CHUNKS.data (a zstd frame, through the zstd
command, of the pack whose format is in common/pa_devmetrics.h,
docs/utilization.md "METRIC_CHUNKS"): connect(db) gives a connection with TEMP tables METRIC_INTERVALS
(deviceId, startNs, durationNs, v0..v<n-1>) and METRIC_SAMPLES (deviceId, startNs, durationNs,
metricId, value) decoded from the chunks, so the tests check the C writer against a second decoder."""
import sqlite3
import struct
import subprocess


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
    out, i, prev_end, prev_dur = [], 0, base, 0
    prev, step, flt = [0] * nm, [0] * nm, [None] * nm  # flt[k]: last non-integral value, else None
    while len(out) < n:
        t, i = _var(data, i)
        if t & 1:  # a run of repeats of the last interval
            if not out or not t >> 1:
                raise ValueError("bad run of repeats")
            for _ in range(t >> 1):
                vals = []
                for k in range(nm):
                    if flt[k] is None:
                        prev[k] += step[k]
                        vals.append(float(prev[k]))
                    else:
                        vals.append(flt[k])
                out.append((prev_end, prev_dur, vals))
                prev_end += prev_dur
            continue
        b, i = _var(data, i)
        start = prev_end + _unzz(t >> 1)
        dur = prev_dur + _unzz(b)
        prev_end, prev_dur = start + dur, dur
        vals = []
        for k in range(nm):
            h, i = _var(data, i)
            if not h & 1:
                iv = prev[k] + _unzz(h >> 1)
                step[k] = 0 if flt[k] is not None else iv - prev[k]
                prev[k], flt[k] = iv, None
                vals.append(float(iv))
                continue
            if h == 1:
                x = struct.unpack_from("<f", data, i)[0]
                i += 4
            elif h == 3:
                x = struct.unpack_from("<d", data, i)[0]
                i += 8
            else:
                raise ValueError("bad value header %d" % h)
            flt[k] = x
            vals.append(x)
        out.append((start, dur, vals))
    if len(out) != n or i != len(data):
        raise ValueError("chunk of %d intervals / %d bytes: %d intervals, %d bytes decoded" % (n, len(data), len(out), i))
    return out


def intervals(c):
    """[(deviceId, start, dur, values)] of every chunk, by device and start."""
    rows = []
    for dev, base, n, nm, data in c.execute("SELECT deviceId, startNs, intervals, nmetrics, data FROM METRIC_CHUNKS"
                                            " ORDER BY deviceId, startNs"):
        raw = subprocess.run(["zstd", "-dcq"], input=bytes(data), capture_output=True, check=True).stdout
        for s, d, v in decode(base, n, nm, raw):
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
    c.commit()  # no transaction left open: it would hold a read lock on the DB (profagent stats
    return c    # creates the readers' indexes on a first open and would wait for it)
