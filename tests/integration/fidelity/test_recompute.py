#!/usr/bin/env python3
"""test_recompute.py - every cell of every report, and the exit summary, recomputed from the raw
trace tables with the definitions of spec/asys-stats-reports.txt (and the README/--help-report
where the spec leaves a choice), never from the report SQL, on the mixed workload fidelity_mix
(nested and cross-thread ranges, domains, a regular list recorded in one range and executed in
another, two devices, every copy direction and memory kind, fills, barriers, static/dynamic shared
local memory, ranges open at exit).

Definitions used here (spec section in brackets):
  * integer statistics truncated [2.3.2 example: 13487638 / 1495 = 9021.83 printed 9021]:
    Avg = total // n; Med = middle value, or (a + b) // 2 for an even count; StdDev = population,
    floor(sqrt(n*sum(x^2) - sum(x)^2) / n) computed exactly with integers; Time (%) = total * 100 /
    sum of the whole report's totals, one digit [2.3.13 note];
  * a kernel/copy/fill is associated with a range if the API call launching it is made by the same
    thread inside the range [2.3.9, 2.3.11]: push/pop ranges of that thread open around the call,
    start/end ranges started or ended by that thread whose [start, end] holds the call's start
    (README); a regular list's op is launched by zeCommandQueueExecuteCommandLists, and (graph
    mapping, the default) also by the append that recorded it [2.3.9 graph node mapping];
  * a projection spans from the earliest associated op start to the latest end; active time =
    union of the op intervals [2.3.11, 2.3.12]; ranges open at exit have no end and no projection;
  * kern_exec_trace Total Dur = kernel end - API start [2.3.4];
  * barriers are device operations in ZE_OPS (kind 4) but not kernels, copies or fills: no report
    row [2.3.8 "Kernel / Memcpy / Memset"], no association.
usage: test_recompute.py BUILD_DIR [DB]   (with DB: recompute an existing DB, no run)"""
import csv, io, math, os, re, sqlite3, subprocess, sys, tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pa_itest import preload, check, FAILS as fails  # noqa: E402

B = sys.argv[1]
PROF = os.path.join(B, "bin", "profagent")
GROUPS = "dev=sample_alloc_device;host=sample_alloc_host;appl=fidelity_mix"


ncells = [0]


if len(sys.argv) > 2:
    DB, SUMMARY = sys.argv[2], None
else:
    DB = os.path.join(tempfile.mkdtemp(prefix="pa_fid_"), "mix.db")
    env = dict(os.environ, ZE_ENABLE_ALT_DRIVERS=os.path.join(B, "lib", "libze_simdev.so"),
               LD_PRELOAD=preload(os.path.join(B, "lib", "libprofagent.so")), PROFAGENT_OUTPUT=DB,
               PROFAGENT_SUMMARY="stderr", PROFAGENT_CALLSTACK_GROUPS=GROUPS)
    p = subprocess.run([os.path.join(B, "tests", "fidelity", "fidelity_mix")], env=env, capture_output=True,
                       text=True, timeout=120)
    check(p.returncode == 0 and "fidelity_mix: OK" in p.stdout, f"workload: exit {p.returncode} {p.stderr[-800:]}")
    SUMMARY = p.stderr

con = sqlite3.connect(DB)
con.text_factory = bytes


def q(sql, *a):
    return con.execute(sql, a).fetchall()


def txt(b):
    return b.decode() if isinstance(b, bytes) else b


S = {i: txt(v) for i, v in q("SELECT id, value FROM STRING_IDS")}
META = {txt(k): (txt(v) if isinstance(v, bytes) else v) for k, v in q("SELECT key, value FROM META")}
PID = int(META["pid"])
MASK = 0xffffffff


def report(spec):
    p = subprocess.run([PROF, "stats", "-r", spec, DB], capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, f"stats {spec}: exit {p.returncode} {p.stderr}")
    rows = list(csv.reader(io.StringIO(p.stdout)))
    out = []
    for i, r in enumerate(rows[1:]):
        r = r[:-1] if r and r[-1] == "" else r
        check(r[:1] == [str(i + 1)], f"{spec}: Row# of row {i + 1}: {r[:1]}")
        out.append(r[1:])
    return out


def cells(row):
    return ["-" if v is None else str(v) for v in row]


def compare(name, got, want):
    want = [cells(r) for r in want]
    check(len(got) == len(want), f"{name}: {len(got)} rows, recomputed {len(want)}")
    for i, (g, w) in enumerate(zip(got, want)):
        ncells[0] += len(w)
        if g != w:
            diff = [(j, a, b) for j, (a, b) in enumerate(zip(g, w)) if a != b]
            check(False, f"{name} row {i + 1}: (col, report, recomputed) {diff[:6]} len {len(g)}/{len(w)}")


# ---- statistics, from the definitions ----
def stats(xs):
    """total, n, Avg, Med, Min, Max, StdDev of integers, truncated as the spec's examples"""
    xs = sorted(xs)
    n, tot = len(xs), sum(xs)
    med = xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) // 2
    sd = math.isqrt(n * sum(x * x for x in xs) - tot * tot) // n
    return [tot, n, tot // n, med, xs[0], xs[-1], sd]


def pct(total, grand):
    return "%.1f" % (float(total) * 100.0 / float(grand) if grand else 0.0)


def stat_rows(groups, order_key, with_pct=True):
    """groups: {key: (values, tail cells)} -> rows sorted by total desc then order_key(key)"""
    rows = [(stats(v), k, tail) for k, (v, tail) in groups.items()]
    rows.sort(key=lambda r: (-r[0][0], order_key(r[1])))
    grand = sum(r[0][0] for r in rows)
    return [([pct(s[0], grand)] if with_pct else []) + s + tail for s, k, tail in rows]


# ---- raw tables ----
R = {}  # ranges by id
for (rid, st, en, g, eg, nid, did, style, lvl, par, unt) in q(
        "SELECT id, start, end, globalTid, endGlobalTid, nameId, domainId, style, level, parentId, unterminated"
        " FROM HGTX_RANGES"):
    name = S.get(nid, "")
    if did:
        name = S[did] + ":" + name
    R[rid] = dict(id=rid, start=st, end=en, g=g, eg=eg, name=name, style=style, level=lvl, parent=par,
                  open=bool(unt))
API = {}
for (st, en, tid, nid, corr, res) in q("SELECT start, end, tid, nameId, corrId, result FROM ZE_API"):
    API[corr] = dict(start=st, end=en, g=tid, name=S[nid], res=res)
OPCOLS = {txt(c[1]) for c in q("PRAGMA table_info(ZE_OPS)")}


def col(c):  # a column an older DB lacks reads as NULL (its cells then differ: a failure, not a crash)
    return c if c in OPCOLS else "NULL"


def gtid(t):
    """globalTid; a plain TID (older DBs) is widened so the other cells still compare"""
    return t if t >> 32 else (PID << 32) | t


OPS = []
for row in q("SELECT rowid, start, end, tid, kind, corrId, apiStart, apiEnd, apiNameId, deviceId, contextId,"
             " queueId, graphId, nodeId, nameId, gridX, gridY, gridZ, blockX, blockY, blockZ, bytes, srcKind,"
             f" dstKind, {col('staticSlm')}, {col('dynamicSlm')}, {col('appendCorrId')} FROM ZE_OPS"):
    k = ("rowid start end g kind corr api_start api_end api_name dev ctx queue graph node name gx gy gz"
         " bx by bz bytes src dst sslm dslm acorr").split()
    o = dict(zip(k, row))
    o["name"] = S.get(o["name"]) if o["name"] is not None else None
    o["api_name"] = S.get(o["api_name"])
    o["raw_tid"], o["g"] = o["g"], gtid(o["g"])
    OPS.append(o)
DEVS = {r[0]: r for r in q("SELECT deviceId, name, pciBusId, uuid, ccMajor, ccMinor, ceCount, cuCount, totalMem,"
                           " cuClockHz, memClockHz FROM ZE_DEVICES")}
KOPS = [o for o in OPS if o["kind"] == 1]
DEVOPS = [o for o in OPS if o["kind"] in (1, 2, 3)]

# the workload's shape, so the comparisons below cover what they must
check(len(DEVS) == 2 and {o["dev"] for o in KOPS} == {0, 1}, f"two devices with kernels: {set(DEVS)}")
check(sum(o["kind"] == 4 for o in OPS) >= 10, "barriers recorded in ZE_OPS (kind 4)")
check({(o["src"], o["dst"]) for o in OPS if o["kind"] == 2} >= {(a, b) for a in (1, 2, 3, 4) for b in (1, 2, 3, 4)},
      "copies between every pair of memory kinds (Host, Device, Shared, Pageable)")
check(any(r["open"] and r["style"] == 0 for r in R.values()) and any(r["open"] and r["style"] == 1 for r in R.values()),
      "push/pop and start/end ranges open at exit")
check(any(r["style"] == 1 and r["eg"] != r["g"] and not r["open"] for r in R.values()), "a cross-thread start/end range")
check(any(o["graph"] for o in KOPS), "kernels of a regular list")


def gxyz(o, p):
    return " ".join("-" if o[p + c] is None else str(o[p + c]) for c in "xyz")


def dev_name(d):
    return "%s (%d)" % (txt(DEVS[d][1]) if d in DEVS else "device", d)


# ---- hgtx_sum [2.3.13] ----
def closed_ranges():
    return [r for r in R.values() if not r["open"]]


g = {}
for r in closed_ranges():
    k = (r["name"], r["style"])
    g.setdefault(k, ([], ["StartEnd" if r["style"] else "PushPop", r["name"]]))[0].append(r["end"] - r["start"])
HGTX_SUM = stat_rows(g, lambda k: (k[0].encode(), k[1]))
compare("hgtx_sum", report("hgtx_sum"), HGTX_SUM)

# ---- hgtx_pushpop_trace [2.3.25] ----
pp = {i: r for i, r in R.items() if r["style"] == 0}


def stack(r):
    ids = [r["id"]]
    while ids[0] in pp and pp[ids[0]]["parent"] in pp:
        ids.insert(0, pp[ids[0]]["parent"])
    return ":" + ":".join(map(str, ids))


rows = []
for r in sorted(pp.values(), key=lambda r: (r["start"], r["id"])):
    kids = [c for c in pp.values() if c["parent"] == r["id"]]
    dchild = sum(c["end"] - c["start"] for c in kids if not c["open"])
    dur = r["end"] - r["start"]
    lvl = stack(r).count(":") - 1
    rows.append([r["start"], None if r["open"] else r["end"], None if r["open"] else dur, dchild,
                 None if r["open"] else dur - dchild, r["name"], r["g"] >> 32, r["g"] & MASK, lvl, len(kids), r["id"],
                 r["parent"] or None, stack(r), "-" * lvl + r["name"]])
compare("hgtx_pushpop_trace", report("hgtx_pushpop_trace"), rows)

# ---- osrt_sum [2.3.14] ----
g = {}
for st, en, nid in q("SELECT start, end, nameId FROM OSRT_API"):
    g.setdefault(S[nid], ([], [S[nid]]))[0].append(en - st)
OSRT_SUM = stat_rows(g, lambda k: k.encode())
compare("osrt_sum", report("osrt_sum"), OSRT_SUM)

# ---- kern_sum [2.3.7], kern_gb_sum [2.3.5], kern_gb_trace [2.3.6] ----
g = {}
for o in KOPS:
    g.setdefault(o["name"], ([], [o["name"]]))[0].append(o["end"] - o["start"])
KERN_SUM = stat_rows(g, lambda k: k.encode())
compare("kern_sum", report("kern_sum"), KERN_SUM)
g = {}
for o in KOPS:
    k = (o["name"], gxyz(o, "g"), gxyz(o, "b"))
    g.setdefault(k, ([], [k[1], k[2], k[0]]))[0].append(o["end"] - o["start"])
compare("kern_gb_sum", report("kern_gb_sum"), stat_rows(g, lambda k: (k[0].encode(), k[1], k[2])))
compare("kern_gb_trace", report("kern_gb_trace"),
        [[o["start"], o["end"] - o["start"], PID, o["dev"], o["ctx"], o["queue"], gxyz(o, "g"), gxyz(o, "b"), o["name"]]
         for o in sorted(KOPS, key=lambda o: (o["start"], o["corr"]))])
for d in (0, 1):
    compare(f"kern_sum:device={d}", report(f"kern_sum:device={d}"),
            stat_rows({n: ([o["end"] - o["start"] for o in KOPS if o["name"] == n and o["dev"] == d], [n])
                       for n in {o["name"] for o in KOPS if o["dev"] == d}}, lambda k: k.encode()))

# ---- kern_exec_trace [2.3.4] ----
rows = []
for o in sorted(KOPS, key=lambda o: (o["api_start"], -1 if o["node"] is None else o["node"], o["start"])):
    queued = o["start"] > o["api_end"]
    rows.append([o["api_start"], o["api_end"] - o["api_start"], o["api_end"] if queued else None,
                 o["start"] - o["api_end"] if queued else None, o["start"], o["end"] - o["start"],
                 o["end"] - o["api_start"], PID, o["g"] & MASK, o["dev"], o["api_name"], gxyz(o, "g"), gxyz(o, "b"),
                 o["name"]])
compare("kern_exec_trace", report("kern_exec_trace"), rows)

# ---- gpu_trace [2.3.8] ----
KIND = {0: "Unknown", 1: "Host", 2: "Device", 3: "Shared", 4: "Pageable"}
LETTER = {0: "D", 1: "H", 2: "D", 3: "S", 4: "H"}
rows = []
for o in sorted(DEVOPS, key=lambda o: (o["start"], o["corr"])):
    k = o["kind"] == 1
    dur = o["end"] - o["start"]
    name = o["name"] if k else "Memset" if o["kind"] == 3 else "Memcpy %sto%s" % (LETTER[o["src"]], LETTER[o["dst"]])
    rows.append([o["start"], dur, o["corr"]] + [o[p] if k else None for p in ("gx", "gy", "gz", "bx", "by", "bz")] +
                [None, o["sslm"] if k else None, o["dslm"] if k else None, None if k else o["bytes"],
                 None if k or dur <= 0 else o["bytes"] * 1000000000 // dur, None if k else KIND[o["src"]],
                 KIND[o["dst"]] if o["kind"] == 2 else None, dev_name(o["dev"]), o["ctx"], o["queue"], name])
compare("gpu_trace", report("gpu_trace"), rows)
check(any(o["sslm"] == 2048 and o["dslm"] == 4096 for o in KOPS) and any(o["dslm"] == 1024 for o in KOPS),
      "tile kernels: StcSMem 2048 (localMemSize), DymSMem 4096 then 1024 (NULL-valued local argument)")

# ---- mem_time_sum [2.3.17] / mem_size_sum [2.3.16] ----
def memop(o):
    return "[memset]" if o["kind"] == 3 else "[memcpy %s-to-%s]" % (KIND[o["src"]], KIND[o["dst"]])


g, gs = {}, {}
for o in OPS:
    if o["kind"] in (2, 3):
        g.setdefault(memop(o), ([], [memop(o)]))[0].append(o["end"] - o["start"])
        gs.setdefault(memop(o), ([], [memop(o)]))[0].append(o["bytes"])
MEM_TIME = stat_rows(g, lambda k: k.encode())
MEM_SIZE = stat_rows(gs, lambda k: k.encode(), with_pct=False)
compare("mem_time_sum", report("mem_time_sum"), MEM_TIME)
compare("mem_size_sum", report("mem_size_sum"), MEM_SIZE)
check(any("Pageable-to-" in r[-1] for r in MEM_TIME) and any("Host-to-" in r[-1] for r in MEM_TIME),
      "pageable and USM host copies are separate operations")

# ---- device_attribute [2.3.20]: simdev's documented device (simdev/README.md) ----
compare("device_attribute", report("device_attribute"),
        [[d, "SimDev GPU %d" % d, "0000:%02x:00.0" % (0x10 + d) if txt(DEVS[d][2]) != "-" else "-",
          META.get("hostname"), txt(DEVS[d][3]), 1, 4, 4, 2 * 8 * 16, 8192 << 20, 1600000000, 1600000000]
         for d in sorted(DEVS)])

# ---- ze_api_sum [2.3.2] / ze_api_trace [2.3.3] ----
g = {}
for a in API.values():
    g.setdefault(a["name"], ([], [a["name"]]))[0].append(a["end"] - a["start"])
API_SUM = stat_rows(g, lambda k: k.encode())
compare("ze_api_sum", report("ze_api_sum"), API_SUM)
TNAME = {t & MASK: S.get(n, "") for t, n in q("SELECT globalTid, nameId FROM THREADS")}
check(all(a["g"] >> 32 == PID for a in API.values()) and all(o["raw_tid"] >> 32 == PID for o in OPS),
      "ZE_API.tid and ZE_OPS.tid are globalTid = pid << 32 | tid")
for a in API.values():
    a["g"] = gtid(a["g"])
compare("ze_api_trace", report("ze_api_trace"),
        [[a["start"], a["end"] - a["start"], a["name"], c, PID, a["g"] & MASK, TNAME.get(a["g"] & MASK, "")]
         for c, a in sorted(API.items(), key=lambda x: (x[1]["end"] - x[1]["start"], x[1]["start"]))])


# ---- associations [2.3.9-2.3.12] ----
def open_around(g_tid, t0, t1):
    """ranges a launch call made by thread g_tid over [t0, t1] belongs to"""
    out = set()
    for r in R.values():
        if r["style"] == 0:
            if r["g"] == g_tid and r["start"] <= t0 and t1 <= r["end"]:
                out.add(r["id"])
        elif g_tid in (r["g"], r["eg"]) and r["start"] <= t0 <= r["end"]:
            out.add(r["id"])
    return out


ASSOC = {}  # op rowid -> {range id: 'direct' | 'graph'}
for o in DEVOPS:
    a = {rid: "direct" for rid in open_around(o["g"], o["api_start"], o["api_end"])}
    if o["graph"] and o["acorr"] in API:
        ap = API[o["acorr"]]
        for rid in open_around(ap["g"], ap["start"], ap["end"]):
            a.setdefault(rid, "graph")
    ASSOC[o["rowid"]] = a
xa = [r for r in R.values() if r["name"] == "xa"]
check(len(xa) == 1 and len({o["g"] for o in KOPS if xa[0]["id"] in ASSOC[o["rowid"]]}) == 2,
      "the cross-thread range holds kernels of both threads")

# hgtx_kern_sum: rows per (range name, style, thread, kernel name)
g = {}
for o in KOPS:
    for rid, how in ASSOC[o["rowid"]].items():
        r = R[rid]
        gt = o["g"] if how == "direct" else r["g"]
        e = g.setdefault((r["name"], r["style"], gt, o["name"]), [set(), {}])
        e[0].add(rid)
        e[1][o["rowid"]] = o["end"] - o["start"]
rows = []
for (name, style, gt, kn), (rids, durs) in g.items():
    s = stats(list(durs.values()))
    rows.append([name, "StartEnd" if style else "PushPop", gt >> 32, gt & MASK, len(rids), s[1]] + [s[0]] + s[2:] + [kn])
rows.sort(key=lambda r: (r[0].encode(), (r[2] << 32) | r[3], -r[6], r[12].encode()))
compare("hgtx_kern_sum", report("hgtx_kern_sum"), rows)

# hgtx_kern_trace: one row per (kernel, range), by kernel start then range start
rows = []
for o in sorted(KOPS, key=lambda o: (o["start"], o["rowid"])):
    for rid in sorted(ASSOC[o["rowid"]], key=lambda i: (R[i]["start"], i)):
        r, via = R[rid], ASSOC[o["rowid"]][rid] == "graph"
        gt = r["g"] if via else o["g"]
        xyz = lambda p: None if None in (o[p + "x"], o[p + "y"], o[p + "z"]) else gxyz(o, p)
        rows.append([r["name"], "StartEnd" if r["style"] else "PushPop", gt >> 32, gt & MASK, o["dev"], o["ctx"],
                     o["queue"], rid, o["rowid"], o["start"], o["end"] - o["start"], None if via else o["api_start"],
                     None if via else o["api_end"] - o["api_start"], xyz("g"), xyz("b"), o["corr"], o["graph"],
                     o["node"], o["name"], o["name"]])
compare("hgtx_kern_trace", report("hgtx_kern_trace"), rows)


# projections: instances with >= 1 op, ranges open at exit left out
def union(iv):
    tot, cover = 0, None
    for a, b in sorted(iv):
        if cover is None or a > cover:
            tot += b - a
            cover = b
        elif b > cover:
            tot += b - cover
            cover = b
    return tot


INST = []
nchild = {}
for r in R.values():
    if r["parent"]:
        nchild[r["parent"]] = nchild.get(r["parent"], 0) + 1
for r in R.values():
    if r["open"]:
        continue
    ops = [o for o in DEVOPS if r["id"] in ASSOC[o["rowid"]]]
    if not ops:
        continue
    iv = [(o["start"], max(o["end"], o["start"])) for o in ops]
    INST.append(dict(r=r, ps=min(a for a, _ in iv), pe=max(b for _, b in iv), active=union(iv), nops=len(ops)))
INST.sort(key=lambda i: (i["ps"], i["r"]["id"]))
rows = []
for i in INST:
    r = i["r"]
    rows.append([r["name"], i["ps"], i["pe"] - i["ps"], i["active"], r["start"], r["end"] - r["start"],
                 "StartEnd" if r["style"] else "PushPop", r["g"] >> 32, r["g"] & MASK, i["nops"],
                 None if r["style"] else stack(r).count(":") - 1, nchild.get(r["id"], 0), r["id"], r["parent"] or None,
                 None if r["style"] else stack(r)])
compare("hgtx_gpu_proj_trace", report("hgtx_gpu_proj_trace"), rows)

span = max(o["end"] for o in DEVOPS) - min(o["start"] for o in DEVOPS)
g = {}
for i in INST:
    g.setdefault((i["r"]["name"], i["r"]["style"]), []).append(i)
PROJ = []
for (name, style), ii in g.items():
    active = union([(i["ps"], i["pe"]) for i in ii])
    u = float(active) * 100.0 / float(span)
    d = stats([i["pe"] - i["ps"] for i in ii])
    n = len(ii)
    ops = sum(i["nops"] for i in ii)
    PROJ.append([name, "StartEnd" if style else "PushPop", "%.1f" % min(u, 100.0), active, d[0],
                 sum(i["r"]["end"] - i["r"]["start"] for i in ii), n, d[2], d[3], d[4], d[5], d[6], ops,
                 "%.1f" % (ops / n), None if style else "%.1f" % (sum(stack(i["r"]).count(":") - 1 for i in ii) / n),
                 "%.1f" % (sum(nchild.get(i["r"]["id"], 0) for i in ii) / n), min(u, 100.0)])
PROJ.sort(key=lambda r: (-r[-1], r[0].encode(), r[1] == "StartEnd"))
PROJ = [r[:-1] for r in PROJ]
compare("hgtx_gpu_proj_sum", report("hgtx_gpu_proj_sum"), PROJ)
check(all(not R[i]["open"] for i in {i["r"]["id"] for i in INST}) and
      not any(r[0] in ("left-open", "open-se") for r in PROJ), "ranges open at exit have no projection")

# ---- device memory [2.3.1]: groups of PROFAGENT_CALLSTACK_GROUPS (every rule one frame regex) ----
rules = [(n, re.compile(x)) for n, x in (r.split("=", 1) for r in GROUPS.split(";"))]
frames = {}
for cid, mod, fn in q("SELECT id, module, function FROM CALLCHAINS ORDER BY id, stackDepth"):
    frames.setdefault(cid, []).append((S.get(mod, "") or "", S.get(fn, "") or ""))


def group_of(cid):
    gs = [n for n, rx in rules if any(rx.search(m) or rx.search(f) for m, f in frames.get(cid, []))]
    return "/".join(gs) if gs else "others"


MEM = q("SELECT eventId, op, start, globalTid, contextId, memory, size, memKind, result, deviceId, callchainId,"
        " allocEventId, freeEventId FROM DEVICE_MEMORY ORDER BY start, eventId")
seq = {m[0]: i + 1 for i, m in enumerate(MEM)}
allocs = [m for m in MEM if m[1] == 0 and m[8] == 0]
for mode in ("alloc-count", "alloc-size", "unreleased-count", "unreleased-size"):
    g = {}
    for m in allocs:
        if mode.startswith("unreleased") and m[12] is not None:
            continue
        k = (m[3] >> 32, -1 if m[9] is None else m[9], group_of(m[10]))
        g[k] = g.get(k, 0) + (1 if mode.endswith("count") else m[6])
    rows = sorted(g.items(), key=lambda x: (-x[1], x[0][0], x[0][1] & 0xffffffffffffffff, x[0][2].encode()))
    compare(f"device_memory_usage_summary:{mode}", report(f"device_memory_usage_summary:usage-mode={mode}"),
            [[p, None if d < 0 else d, gr, v] for (p, d, gr), v in rows])
AF = {0: "unknown", 1: "host", 2: "device", 3: "shared"}
for mode in ("all", "unreleased"):
    rows = []
    for m in MEM:
        if mode == "unreleased" and not (m[1] == 0 and m[8] == 0 and m[12] is None):
            continue
        flag = ("free" if m[1] else AF.get(m[7], "unknown")) + (" (unknown)" if m[1] and m[11] is None else
                                                                " (failed)" if m[8] else "")
        rows.append([m[3] >> 32, m[9], group_of(m[10]), m[2], m[3] & MASK, m[4] if m[4] and m[4] > 0 else None,
                     "0x%x" % m[5], m[6], flag, seq[m[0]]])
    compare(f"device_memory_usage_detail:{mode}", report(f"device_memory_usage_detail:usage-mode={mode}"), rows)
check({group_of(m[10]) for m in allocs} >= {"dev/appl", "host/appl"}, "allocations in several groups")


# ---- the exit summary (from the aggregates) equals the recomputation ----
def summary_table(title):
    """rows of the summary table under the heading starting with `title`"""
    lines = SUMMARY.splitlines()
    for i, l in enumerate(lines):
        if l.startswith(title):
            rows = []
            for l2 in lines[i + 3:]:
                if not re.match(r"\s*\d+  ", l2):  # a table row starts with its Row#
                    break
                rows.append(re.split(r"\s{2,}", l2.strip())[1:])
            return rows
    check(False, f"summary: no section '{title}'")
    return []


if SUMMARY is not None:
    for title, want in (("HGTX ranges (top", HGTX_SUM), ("OS runtime calls", OSRT_SUM),
                        ("Level Zero kernels", KERN_SUM), ("Level Zero API calls", API_SUM),
                        ("Level Zero copies and fills by direction (device time)", MEM_TIME),
                        ("Level Zero copies and fills by direction (bytes)", MEM_SIZE)):
        compare("summary " + title, summary_table(title), want[:10])
    compare("summary projection", summary_table("HGTX ranges projected onto the device"),
            [[r[0], r[1], r[2], r[3], r[4], r[6], r[12]] for r in PROJ[:10]])
    run = int(re.search(r"over the session duration (\d+) ns", SUMMARY).group(1))
    for d in sorted({o["dev"] for o in DEVOPS}):
        busy = union([(o["start"], o["end"]) for o in DEVOPS if o["dev"] == d and o["end"] > o["start"]])
        want = "  device %d: %d ns busy, %.1f %%" % (d, busy, 100.0 * busy / run)
        check(want in SUMMARY.splitlines(), f"summary utilization: {want!r} not in the summary")
    opened = sorted((r["start"], r["g"] & MASK, r["name"]) for r in R.values() if r["open"])
    check(("HGTX ranges still open at exit (left out of the statistics): %d" % len(opened)) in SUMMARY,
          "summary: count of ranges open at exit")
    for st, tid, nm in opened:
        check(f'  started at {st} ns on thread {tid}: "{nm}"' in SUMMARY, f"summary lists open range {nm}")
    nfree = sum(1 for m in MEM if m[1] == 1)
    unk = sum(1 for m in MEM if m[1] == 1 and m[11] is None)
    unrel = [m for m in allocs if m[12] is None]
    want = "Device memory: %d allocation calls (%d succeeded, %d failed: not counted as usage), %d frees (%d of" \
           " unknown addresses), %d unreleased = %d bytes" % (
               sum(m[1] == 0 for m in MEM), len(allocs), sum(m[1] == 0 and m[8] != 0 for m in MEM), nfree, unk,
               len(unrel), sum(m[6] for m in unrel))
    check(want in SUMMARY, f"summary memory line: {want!r}")
    (failed_allocs, unknown_frees), = q("SELECT failedAllocs, unknownFrees FROM DEVICE_MEMORY_INFO")
    check((failed_allocs, unknown_frees) == (sum(m[1] == 0 and m[8] != 0 for m in MEM), unk),
          f"DEVICE_MEMORY_INFO {failed_allocs, unknown_frees} agrees with DEVICE_MEMORY")

print(f"recompute: {ncells[0]} cells compared")
print("recompute tests:", "FAILED %d" % len(fails) if fails else "OK")
sys.exit(1 if fails else 0)
