#!/usr/bin/env python3
"""test_export.py - `profagent export` of every sample's DB, as JSON and as Perfetto protobuf.

usage: test_export.py BUILD_DIR WORKDIR [MKDB]
Each sample runs under the agent on the software device; its DB is exported both ways. The JSON
must parse, the protobuf must decode with pftrace.py (an independent decoder written from
Perfetto's documented field numbers). Both must hold, against the DB and the reports:
kernels per device = kern_sum:device=N instances; slices on one track never overlap partially
(thread tracks nest, device tracks never overlap at all); every flow starts at a Level Zero API
slice and ends at a device slice, one flow per device operation; HGTX push/pop nesting (depth,
parent) = hgtx_pushpop_trace's Lvl and ParentId; times relative to the session start with the
META anchor. The synthetic DB of the CLI tests (MKDB) adds domains, start/end ranges and marks."""
import re, csv, io, json, os, shutil, sqlite3, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pftrace  # noqa: E402
from pa_itest import FAILS, check, run_sample, to_fifo, check_dev_full, check_bad_input  # noqa: E402

B, WORK = sys.argv[1], sys.argv[2]
MKDB = sys.argv[3] if len(sys.argv) > 3 else None
PA = os.path.join(B, "bin", "profagent")
DEV_PID = 1000000000


def report(db, spec):
    p = subprocess.run([PA, "stats", "-r", spec, db], capture_output=True, timeout=60)
    check(p.returncode == 0, "stats %s: %r" % (spec, p.stderr))
    return list(csv.DictReader(io.StringIO(p.stdout.decode("utf-8", "replace"))))


def export(db, out, *fmt):
    p = subprocess.run([PA, "export", *fmt, db, "-o", out], capture_output=True, timeout=120)
    check(p.returncode == 0, "export %s %s: %r" % (fmt, db, p.stderr))
    return p


def nesting_ok(sl, strict):
    """sl: [(t0, t1, payload)] of one track. strict: no two may overlap at all; else any two
    either nest or are disjoint. Returns (ok, [(payload, depth, parent payload)])."""
    sl = sorted(sl, key=lambda s: (s[0], -s[1]))
    st, out, ok = [], [], True
    for t0, t1, pl in sl:
        while st and st[-1][1] <= t0:
            st.pop()
        if st and (strict or st[-1][1] < t1):
            ok = False
        out.append((pl, len(st), st[-1][2] if st else None))
        st.append((t0, t1, pl))
    return ok, out


def pushpop(db):
    rows = report(db, "hgtx_pushpop_trace")
    return {int(r["RangeId"]): (int(r["Lvl"]), None if r["ParentId"] == "-" else int(r["ParentId"])) for r in rows}


def check_json(name, db, path, meta, nops, kern_per_dev, ranges):
    d = json.load(open(path))
    ev = d["traceEvents"]
    od = d["otherData"]
    check(od["origin_mono_ns"] == meta["start_mono_ns"] and od["session_start_wall_ns"] == meta["start_wall_ns"],
          "%s json: anchor = META start (%r)" % (name, od))
    xs = [e for e in ev if e["ph"] == "X"]
    check(xs and min(e["ts"] for e in xs) >= 0, "%s json: times relative to the session start" % name)
    tracks = {}
    for e in xs:
        tracks.setdefault((e["pid"], e["tid"]), []).append(e)
    pnames = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
    tnames = {(e["pid"], e["tid"]) for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    check(all(k in tnames for k in tracks) and all(k[0] in pnames for k in tracks),
          "%s json: every track and process is named" % name)
    kern = {}
    for (pid, tid), sl in tracks.items():
        dev = pid >= DEV_PID
        ok, nest = nesting_ok([(round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000), e) for e in sl], dev)
        check(ok, "%s json: track %s/%s: slices %s" % (name, pid, tid, "overlap" if dev else "cross"))
        check(all((e["cat"] in ("kernel", "copy", "fill")) == dev for e in sl),
              "%s json: device slices only on device tracks" % name)
        for e in sl:
            if e["cat"] == "kernel":
                kern[pid - DEV_PID] = kern.get(pid - DEV_PID, 0) + 1
        if not dev and any(e["cat"] == "hgtx" for e in sl):
            for e, depth, parent in nest:
                rid = e["args"]["id"]
                check(ranges.get(rid) == (depth, parent["args"]["id"] if parent else None),
                      "%s json: range %d nesting %r vs pushpop %r" % (name, rid, (depth, parent and parent["args"]["id"]),
                                                                      ranges.get(rid)))
    check(kern == kern_per_dev, "%s json: kernels per device %r = kern_sum %r" % (name, kern, kern_per_dev))
    nr = sum(1 for e in xs if e["cat"] == "hgtx")
    check(nr == len(ranges), "%s json: %d push/pop slices = %d pushpop rows" % (name, nr, len(ranges)))
    # flows: "s" inside an API slice on its thread, "f" at the start of a device slice
    s_ev = {e["id"]: e for e in ev if e["ph"] == "s"}
    f_ev = {e["id"]: e for e in ev if e["ph"] == "f"}
    check(len(s_ev) == len(f_ev) == nops, "%s json: %d/%d flows for %d device operations" % (name, len(s_ev), len(f_ev), nops))
    for fid, s in s_ev.items():
        f = f_ev.get(fid)
        src = [e for e in tracks.get((s["pid"], s["tid"]), []) if e["cat"] == "ze" and e["ts"] <= s["ts"] <= e["ts"] + e["dur"]]
        dst = [e for e in tracks.get((f["pid"], f["tid"]), []) if f and e["cat"] in ("kernel", "copy", "fill") and e["ts"] == f["ts"]]
        if not check(src and dst and f.get("bp") == "e", "%s json: flow %d connects an API slice to a device slice" % (name, fid)):
            break
        check(src[0]["args"]["corrId"] == dst[0]["args"]["corrId"], "%s json: flow %d joins one corrId" % (name, fid))
    return len(ev)


def check_pb(name, path, nops, kern_per_dev, ranges, meta):
    data = open(path, "rb").read()
    try:
        pk = pftrace.decode(data)
    except ValueError as e:
        check(False, "%s pftrace: does not decode: %s" % (name, e))
        return 0
    tracks, sl, inst, ctr, bad = pftrace.slices(pk)
    check(not bad, "%s pftrace: %s" % (name, bad[:3]))
    check(all(p.get("seq") == 1 for p in pk) and pk[0].get("flags") == 1, "%s pftrace: one sequence, state cleared first" % name)
    clocks = {c["id"]: c["ts"] for c in pk[0].get("clock", {}).get("clocks", [])}
    check(clocks.get(1, 0) - clocks.get(6, 0) == meta["start_wall_ns"], "%s pftrace: REALTIME anchor %r" % (name, clocks))
    procs = {t["uuid"]: t["process"] for t in tracks.values() if "process" in t}
    threads = {t["uuid"] for t in tracks.values() if "thread" in t}

    def dev_of(uuid):
        t = tracks[uuid]
        p = procs.get(t.get("parent"))
        return p["pid"] - DEV_PID if p and p["pid"] >= DEV_PID else None

    kern, by_track = {}, {}
    for s in sl:
        by_track.setdefault(s["track"], []).append(s)
        if s["cat"] == ["kernel"]:
            d = dev_of(s["track"])
            kern[d] = kern.get(d, 0) + 1
    check(kern == kern_per_dev, "%s pftrace: kernels per device %r = kern_sum %r" % (name, kern, kern_per_dev))
    for tr, ss in by_track.items():
        dev = dev_of(tr) is not None
        ok, _ = nesting_ok([(s["t0"], s["t1"], s) for s in ss], dev)
        check(ok and (not dev or max(s["depth"] for s in ss) == 0), "%s pftrace: track %d overlap" % (name, tr))
        check(all(tracks[tr].get("name") or tr in threads for _ in [0]), "%s pftrace: track %d named" % (name, tr))
    hg = [s for s in sl if s["cat"] == ["hgtx"]]
    check(len(hg) == len(ranges), "%s pftrace: %d ranges = %d pushpop rows" % (name, len(hg), len(ranges)))
    for s in hg:
        got = (s["depth"], s["parent"]["annots"]["id"] if s["parent"] else None)
        check(ranges.get(s["annots"]["id"]) == got, "%s pftrace: range %s nesting %r vs %r" % (name, s["annots"]["id"], got,
                                                                                            ranges.get(s["annots"]["id"])))
    src = {}
    for s in sl:
        for f in s["flows"]:
            src.setdefault(f, []).append(s)
    dst = {}
    for s in sl:
        for f in s["term_flows"]:
            dst.setdefault(f, []).append(s)
    check(len(src) == len(dst) == nops and set(src) == set(dst), "%s pftrace: %d/%d flows for %d ops" % (name, len(src), len(dst), nops))
    for f in src:
        a, o = src[f], dst.get(f, [])
        if not check(len(a) == 1 and len(o) == 1 and a[0]["cat"] == ["ze"] and o[0]["cat"][0] in ("kernel", "copy", "fill")
                     and a[0]["annots"]["corrId"] == o[0]["annots"]["corrId"],
                     "%s pftrace: flow %d from one API slice to one device slice" % (name, f)):
            break
    ctr_tracks = [t for t in tracks.values() if "counter" in t and "memory in use" in t.get("name", "")]
    check(all(t["counter"].get("unit") == 3 for t in ctr_tracks), "%s pftrace: memory counters in bytes" % name)
    check_pb.last = (tracks, ctr)
    return len(pk)


def check_db(name, db):
    c = sqlite3.connect(db)
    meta = dict(c.execute("SELECT key, value FROM META"))
    tabs = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    # kernels, copies, fills (barriers, kind 4, are in ZE_OPS but not on the timeline, as in gpu_trace)
    nops = c.execute("SELECT count(*) FROM ZE_OPS WHERE kind IN (1, 2, 3)").fetchone()[0] if "ZE_OPS" in tabs else 0
    devs = [r[0] for r in c.execute("SELECT DISTINCT deviceId FROM ZE_OPS WHERE kind = 1")] if nops else []
    # memory in use per device at the end = unreleased bytes (the counter's last value)
    unrel = dict(c.execute("SELECT coalesce(deviceId, -1), sum(size) FROM DEVICE_MEMORY WHERE op = 0 AND result = 0"
                           " AND freeTime IS NULL GROUP BY 1")) if "DEVICE_MEMORY" in tabs else {}
    c.close()
    kern_per_dev = {}
    for d in devs:
        n = sum(int(r["Instances"]) for r in report(db, "kern_sum:device=%d" % d))
        if n:
            kern_per_dev[d] = n
    ranges = pushpop(db)
    js, pb = os.path.join(WORK, name + ".json"), os.path.join(WORK, name + ".pftrace")
    pj = export(db, js)
    pp = export(db, pb, "--format", "perfetto-proto")
    # one summary line per export: the timeline's counts agree between the formats, and with the
    # JSON file's content; the format's own unit comes after them
    rx = re.compile(rb"export: .*: (\d+) slices, (\d+) instants, (\d+) counter samples, (\d+) flows on (\d+)"
                    rb" tracks \((\d+) (JSON trace events|TrackEvents)\)")
    mj, mp = rx.search(pj.stderr), rx.search(pp.stderr)
    check(mj and mp and mj.groups()[:5] == mp.groups()[:5],
          "%s: export counts agree between JSON and proto: %r vs %r" % (name, pj.stderr, pp.stderr))
    if mj:
        ev = json.load(open(js))["traceEvents"]
        per = {ph: sum(1 for e in ev if e["ph"] == ph) for ph in ("X", "i", "C", "s")}
        got = tuple(int(x) for x in mj.groups()[:4])
        check(got == (per["X"], per["i"], per["C"], per["s"]), "%s: export counts %r = JSON file %r" % (name, got, per))
        check(int(mj.group(6)) == per["X"] + per["i"] + per["C"] + 2 * per["s"], "%s: JSON trace events count" % name)
    if mp:
        sl, ins = int(mp.group(1)), int(mp.group(2))
        check(int(mp.group(6)) == 2 * sl + ins + int(mp.group(3)), "%s: TrackEvents = 2 per slice + instants + counters" % name)
    nj = check_json(name, db, js, meta, nops, kern_per_dev, ranges)
    npk = check_pb(name, pb, nops, kern_per_dev, ranges, meta)
    # last memory counter values equal the unreleased bytes per device
    d = json.load(open(js))
    last = {}
    for e in d["traceEvents"]:
        if e["ph"] == "C":
            dev = e["pid"] - DEV_PID if e["pid"] >= DEV_PID else -1
            last[dev] = e["args"]["bytes"]
    check({k: v for k, v in last.items() if v} == {k: v for k, v in unrel.items() if v},
          "%s: memory in use at the end %r = unreleased %r" % (name, last, unrel))
    print("%s: %d JSON events, %d packets, %d ops, kernels %r, %d ranges" % (name, nj, npk, nops, kern_per_dev, len(ranges)))


shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
SAMPLES = [("vector_add", []), ("gemm", ["3"]), ("multithread", ["4", "3"]), ("regular_list", ["4", "capture"]),
           ("leaks", []), ("allreduce", ["3"]), ("hello_ze", [])]
for prog, args in SAMPLES:
    db = os.path.join(WORK, prog + ".db")
    p = run_sample(B, prog, args, db)
    if check(p.returncode == 0 and os.path.exists(db), "%s ran and wrote its DB: %r" % (prog, p.stderr[-300:])):
        check_db(prog, db)
if MKDB:
    db = os.path.join(WORK, "synth.db")
    p = subprocess.run([MKDB, db, os.path.join(WORK, "synth.spool")], capture_output=True, timeout=60)
    if check(p.returncode == 0, "mkdb"):
        check_db("synth", db)
        d = json.load(open(os.path.join(WORK, "synth.json")))
        names = {e["args"]["name"] for e in d["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
        check(any(n.startswith("HGTX io") for n in names), "synth: a track for the io domain: %r" % names)
        se = [e for e in d["traceEvents"] if e.get("cat") == "hgtx_startend"]
        check(len(se) == 2 and {e["name"] for e in se} == {"read"},
              "synth: the 2 start/end ranges of the io domain exported (%r)" % se)

# metric samples of a table another source adds (the documented convention: *_METRICS with
# deviceId, start, nameId, value) become one counter track per device and metric
gdb = os.path.join(WORK, "gemm.db")
if os.path.exists(gdb):
    mdb = os.path.join(WORK, "metrics.db")
    shutil.copy(gdb, mdb)
    c = sqlite3.connect(mdb)
    t0 = c.execute("SELECT value FROM META WHERE key = 'start_mono_ns'").fetchone()[0]
    c.execute("INSERT INTO STRING_IDS VALUES (900001, 'GPU_BUSY'), (900002, 'XVE_ACTIVE')")
    c.execute("CREATE TABLE PPU_METRICS(deviceId INTEGER, start INTEGER, nameId INTEGER, value REAL)")
    rows = [(0, t0 + 1000 * i, 900001 + (i % 2), 12.5 * i) for i in range(8)]
    c.executemany("INSERT INTO PPU_METRICS VALUES (?, ?, ?, ?)", rows)
    c.commit()
    c.close()
    js, pb = os.path.join(WORK, "metrics.json"), os.path.join(WORK, "metrics.pftrace")
    export(mdb, js)
    export(mdb, pb, "--format", "pftrace")
    ev = json.load(open(js))["traceEvents"]
    got = sorted((e["name"], round(e["ts"] * 1000), e["args"]["value"]) for e in ev if e["ph"] == "C" and "value" in e["args"])
    want = sorted(("device 0 " + ("GPU_BUSY", "XVE_ACTIVE")[i % 2], 1000 * i, 12.5 * i) for i in range(8))
    check(got == want, "metrics json: counter samples %r = table %r" % (got[:3], want[:3]))
    tracks, sl, inst, ctr, bad = pftrace.slices(pftrace.decode(open(pb, "rb").read()))
    mt = {t["uuid"]: t["name"] for t in tracks.values() if "counter" in t and t.get("name", "").startswith("device 0 ")
          and "memory" not in t["name"]}
    got = sorted((mt[u], ts, v) for u, vals in ctr.items() if u in mt for ts, v in vals)
    check(got == want and not bad, "metrics pftrace: double counters %r = table" % got[:3])


# a device or FIFO as the output is written in place: never replaced by a regular file through
# the temporary + rename (as root that removed /dev/full's node), and a write error is reported
p, still, data = to_fifo(PA, WORK, ["export", os.path.join(WORK, "gemm.db")])
check(p.returncode == 0 and still and data == open(os.path.join(WORK, "gemm.json"), "rb").read(),
      "export -o FIFO: rc=%d, still a FIFO %s, %d bytes read %r" % (p.returncode, still, len(data), p.stderr))
check_dev_full(PA, ["export", os.path.join(WORK, "gemm.db")])

# bad input: one message, exit status
check_bad_input(PA, ((["export", "--format", "svg", "x.db"], 2, b"--format 'svg' is not accepted"),
                     (["export", os.path.join(WORK, "missing.db")], 1, b"No such file"),
                     (["export", os.path.join(WORK, "gemm.db"), "-o", os.path.join(WORK, "gemm.json")], 1,
                      b"exists; give --force-overwrite"),
                     (["export", os.path.join(WORK, "gemm.db"), "-o", os.path.join(WORK, "no", "t.json")], 1,
                      b"cannot write")))
print("%d failed" % len(FAILS) if FAILS else "all export checks passed")
sys.exit(1 if FAILS else 0)
