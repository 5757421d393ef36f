#!/usr/bin/env python3
"""test_ops.py - ppu_op_sum and moe_op_sum on the sample operator library (samples/ops, simdev busy_ns
kernels with exact device times at SIMDEV_TIMER_HZ=1e9), against a computation done here from the
schedule the sample prints: merged groups with and without each no-merge-* option, op= (others,
PCCL, a type), device=, range=, no-graph-mapping, statistics, utilization from docs/operators.md,
and the headers of the spec's CSV examples. usage: test_ops.py BUILD_DIR [SPEC_FILE]"""
import csv, io, math, os, re, sqlite3, subprocess, sys, tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pa_itest import preload, check, FAILS as fails  # noqa: E402

B = sys.argv[1]
SPEC = sys.argv[2] if len(sys.argv) > 2 else None
PROF = os.path.join(B, "bin", "profagent")


# simdev devices (simdev/README.md): 2*8*16 XVEs, SIMD 8, 1600 MHz core; memory 1600 MHz x 256 bit
PEAK_FLOPS = 256 * 8 * 2 * 1600e6
PEAK_BYTES = 1600e6 * 256 / 8


def run(instrument=True):
    db = os.path.join(tempfile.mkdtemp(prefix="pa_ops_"), "t.db")
    env = dict(os.environ, ZE_ENABLE_ALT_DRIVERS=os.path.join(B, "lib", "libze_simdev.so"), SIMDEV_TIMER_HZ="1000000000",
               LD_PRELOAD=preload(os.path.join(B, "lib", "libprofagent.so")), PROFAGENT_OUTPUT=db, PROFAGENT_SUMMARY="none")
    env.pop("OPLIB_PERF_INSTRUMENT", None)
    if instrument:
        env["OPLIB_PERF_INSTRUMENT"] = "1"
    p = subprocess.run([os.path.join(B, "bin", "ops"), "2"], env=env, capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"ops exit {p.returncode}: {p.stderr[-400:]}")
    return db, p.stdout


def report(db, spec, raw=False):
    p = subprocess.run([PROF, "stats", "-r", spec, db], capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, f"stats {spec}: exit {p.returncode} {p.stderr}")
    if raw:
        return p.stdout
    rows = list(csv.reader(io.StringIO(p.stdout)))
    return [r[1:-1] if r and r[-1] == "" else r[1:] for r in rows[1:]]


# ---- the schedule, as the sample printed it ----
db, out = run()
sched = []  # (name or None, [(kernel, ns)])
for line in out.splitlines():
    if line.startswith("op ") or line.startswith("kernel\t"):
        head, ks = line.split("\t")
        name = head[3:] if head.startswith("op ") else None
        sched.append((name, [(k.split("=")[0], int(k.split("=")[1])) for k in ks.split(",")]))
check(len(sched) == 2 * 10 + 1, f"schedule lines {len(sched)}")
got_k = [d for (d,) in sqlite3.connect(db).execute("SELECT end - start FROM ZE_OPS WHERE kind = 1 ORDER BY start")]
check(got_k == [ns for _, ks in sched for _, ns in ks], "kernel device times equal the schedule (exact)")


# ---- workloads (docs/operators.md), written independently of the agent's parser ----
def kv(name):
    body = name.split(":", 1)[1]
    parts, depth, cur = [], 0, ""
    for ch in body:
        if ch == "[": depth += 1
        if ch == "]": depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip()); cur = ""
        else:
            cur += ch
    parts.append(cur.strip())
    return parts, {p.split(":", 1)[0]: p.split(":", 1)[1] for p in parts if ":" in p}


def work(name):
    """(flops, load, store) of the whole operator, (gemm1, gemm2) for MoE; None = unknown"""
    if name.startswith("ACBLAS:"):
        f = name[7:].split(",")
        m, n, k = int(f[3]), int(f[4]), int(f[5])
        return (2 * m * n * k, (m * k + k * n) * 2, m * n * 2), None
    if name.startswith("MoE:"):
        g = dict(re.findall(r"(M|E|H|In|topk|unique)_(\d+)", name))
        m, h, i, k = (int(g[x]) for x in ("M", "H", "In", "topk"))
        u = int(g["unique"]) if "unique" in g else None
        g1 = (2 * m * k * h * i, (m * h + u * h * i) * 2 if u is not None else None, m * i * 2)
        g2 = (2 * m * k * (i // 2) * h, (m * i // 2 + u * (i // 2) * h) * 2 if u is not None else None, m * h * 2)
        tot = (g1[0] + g2[0], g1[1] + g2[1] if u is not None else None, g1[2] + g2[2])
        return tot, (g1, g2)
    if name.startswith("FMHA:"):
        _, d = kv(name)
        cu = [int(x) for x in d["cu_seqlens_q"].strip("[]").split(",")]
        ks = [int(x) for x in d["seqlens_k"].strip("[]").split(",")]
        qs = [b - a for a, b in zip(cu, cu[1:])]
        nh, nhk, hd = int(d["num_heads"]), int(d["num_heads_k"]), int(d["head_dim"])
        pairs = sum(q * k - q * (q - 1) / 2 for q, k in zip(qs, ks))
        return (2 * nh * pairs * 2 * hd, 2 * (sum(qs) * nh * hd + sum(ks) * nhk * 2 * hd), 2 * sum(qs) * nh * hd), None
    return (None, None, None), None


def key(name, o):
    if name.startswith("MoE:") and not o.get("moe"):
        return re.sub(r"topkids\[[^\]]*\]", "topkids[*]", name)
    if name.startswith("FMHA:") and not o.get("fmha"):
        return re.sub(r"(num_blocks|cu_seqlens_q|seqlens_k):(\[[^\]]*\]|[^,]*)", r"\1:*", name)
    if name.startswith("AllReduce") and not o.get("pccl"):
        return re.sub(r"b:[^,]*$", "b:*", name)
    return name


def is_decode(name):
    _, d = kv(name)
    cu = [int(x) for x in d["cu_seqlens_q"].strip("[]").split(",")]
    return all(b - a == 1 for a, b in zip(cu, cu[1:]))


def expected(o, ops=None):
    """rows of ppu_op_sum for merge options o (moe, fmha, pccl, pd) and op filter"""
    inst = []  # [type, key, name, ns, work]
    for name, ks in sched:
        if name is None:
            continue
        typ = name.split(":")[0] if ":" in name.split(",")[0] else name.split(",")[0]
        w, _ = work(name)
        inst.append([typ, key(name, o), name, sum(ns for _, ns in ks), list(w)])
    if not o.get("pd"):  # a decode FMHA right after a prefill FMHA merges into it
        merged, i = [], 0
        while i < len(inst):
            a = inst[i]
            nxt = next((j for j in range(i + 1, len(inst)) if inst[j][0] == "FMHA"), None) if a[0] == "FMHA" else None
            if a[0] == "FMHA" and not is_decode(a[2]) and nxt is not None and is_decode(inst[nxt][2]):
                b = inst.pop(nxt)
                a = [a[0], a[1] + " + " + b[1][5:], None, a[3] + b[3], [x + y for x, y in zip(a[4], b[4])]]
            merged.append(a)
            i += 1
        inst = merged
    groups = {}
    for typ, k, name, ns, w in inst:
        if ops and not any(x.lower() == typ.lower() or (x == "PCCL" and typ == "AllReduce") for x in ops):
            continue
        groups.setdefault((typ, k), []).append((ns, w, name))
    rows = []
    for (typ, k), v in groups.items():
        d = sorted(ns for ns, _, _ in v)
        n, tot = len(d), sum(d)
        mean = tot / n
        med = d[n // 2] if n % 2 else (d[n // 2 - 1] + d[n // 2]) / 2
        sd = math.sqrt(sum((x - mean) ** 2 for x in d) / n)
        util = []
        for c, peak in ((0, PEAK_FLOPS), (1, PEAK_BYTES), (2, PEAK_BYTES)):
            if any(w[c] is None for _, w, _ in v):
                util.append("-")
            else:
                util.append("%.1f" % (100 * sum(w[c] for _, w, _ in v) / (peak * tot * 1e-9)))
        names = {nm for _, _, nm in v}
        shown = v[0][2] if len(names) == 1 and None not in names else k
        rows.append([typ, str(tot), tot, str(n), "%.0f" % mean, "%.0f" % med, str(d[0]), str(d[-1]), "%.0f" % sd] + util + [shown])
    if ops and "others" in ops:
        oth = {}
        for name, ks in sched:
            if name is None:
                for kn, ns in ks:
                    oth.setdefault(kn, []).append(ns)
        for kn, d in oth.items():
            n, tot = len(d), sum(d)
            mean = tot / n
            sd = math.sqrt(sum((x - mean) ** 2 for x in d) / n)
            med = sorted(d)[n // 2] if n % 2 else (sorted(d)[n // 2 - 1] + sorted(d)[n // 2]) / 2
            rows.append(["Kernel", str(tot), tot, str(n), "%.0f" % mean, "%.0f" % med, str(min(d)), str(max(d)),
                         "%.0f" % sd, "-", "-", "-", kn])
    total = sum(r[2] for r in rows)
    rows.sort(key=lambda r: -r[2])
    return [r[:2] + ["%.1f" % (100 * r[2] / total)] + r[3:] for r in rows]


def cmp(spec, o, ops=None):
    got = report(db, spec)
    want = expected(o, ops)
    check(sorted(got) == sorted(want) and [r[1] for r in got] == [r[1] for r in want],
          f"{spec}:\n got  {got}\n want {want}")
    return got


base = cmp("ppu_op_sum", {})
check(len(base) == 5, f"default groups: 5 ({[r[0] for r in base]})")
cmp("ppu_op_sum:no-merge-moe-parameter", {"moe": 1})
cmp("ppu_op_sum:no-merge-pccl-parameter", {"pccl": 1})
cmp("ppu_op_sum:no-merge-fmha-parameter", {"fmha": 1})
cmp("ppu_op_sum:no-merge-fmha-prefill-decode-operator", {"pd": 1})
cmp("ppu_op_sum:no-merge-fmha-prefill-decode-operator:no-merge-fmha-parameter", {"pd": 1, "fmha": 1})
every = cmp("ppu_op_sum:no-merge-moe-parameter:no-merge-pccl-parameter:no-merge-fmha-parameter:no-merge-fmha-prefill-decode-operator",
            {"moe": 1, "pccl": 1, "fmha": 1, "pd": 1})
check(len(every) > len(base), "every no-merge-* gives more groups")
cmp("ppu_op_sum:op=others", {}, ["others"])
cmp("ppu_op_sum:op=MoE/others", {}, ["MoE", "others"])
cmp("ppu_op_sum:op=PCCL", {}, ["PCCL"])
cmp("ppu_op_sum:op=fmha/acblas", {}, ["FMHA", "ACBLAS"])
check(report(db, "ppu_op_sum:device=0") == base, "device=0 = all")
check(report(db, "ppu_op_sum:device=1") == [], "device=1: no kernels there")
check(report(db, "ppu_op_sum:no-graph-mapping") == base, "immediate lists: graph mapping changes nothing")
check([r[0] for r in report(db, "ppu_op_sum:range=^MoE")] == ["MoE", "MoE"], "range=^MoE keeps the MoE operators' kernels")
check(report(db, "ppu_op_sum:range=^nothing") == [], "range matching nothing")
check(report(db, "gpu_op_sum") == base, "alias gpu_op_sum")

# moe_op_sum: GEMM1/GEMM2 = the first and second kernel named *gemm* of each instance
def moe_expected(no_merge):
    groups = {}
    for name, ks in sched:
        if name and name.startswith("MoE:"):
            g = [ns for kn, ns in ks if "gemm" in kn]
            groups.setdefault(key(name, {"moe": no_merge}), []).append((name, sum(ns for _, ns in ks), g[0], g[1]))
    rows, total = [], 0
    for k, v in groups.items():
        _, gw = work(v[0][0])
        d = sorted(x[1] for x in v)
        n, tot = len(d), sum(d)
        total += tot
        mean = tot / n
        med = d[n // 2] if n % 2 else (d[n // 2 - 1] + d[n // 2]) / 2
        sd = math.sqrt(sum((x - mean) ** 2 for x in d) / n)
        t1, t2 = sum(x[2] for x in v), sum(x[3] for x in v)
        def u(gi, c, t):
            w = gw[gi][c]
            if w is None:
                return "-"
            return "%.1f" % (100 * w * n / ((PEAK_FLOPS if c == 0 else PEAK_BYTES) * t * 1e-9))
        shown = v[0][0] if len({x[0] for x in v}) == 1 else k
        rows.append([str(tot), tot, str(t1), str(t2), str(n), "%.0f" % mean, "%.0f" % med, str(d[0]), str(d[-1]),
                     "%.0f" % sd, u(0, 0, t1), u(1, 0, t2), u(0, 1, t1), u(0, 2, t1), u(1, 1, t2), u(1, 2, t2), shown])
    rows.sort(key=lambda r: -r[1])
    return [[r[0], "%.1f" % (100 * r[1] / total)] + r[2:] for r in rows]


for spec, nm in (("moe_op_sum", 0), ("moe_op_sum:no-merge-moe-parameter", 1)):
    got, want = report(db, spec), moe_expected(nm)
    check(got == want, f"{spec}:\n got  {got}\n want {want}")

# headers: the spec's CSV examples (asys-stats-reports.txt 2.3.21 / 2.3.22), also read from the spec when given
SPEC_HDR = {
    "ppu_op_sum": "Row#,OP type,Total Time (ns),Percent (%),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),"
                  "Compute Util (%),HBM Load Util (%),HBM Store Util (%),OP Name,",
    "moe_op_sum": "Row#,Total Time (ns),Percent (%),GEMM1 Total Time (ns),GEMM2 Total Time (ns),Instances,Avg (ns),"
                  "Med (ns),Min (ns),Max (ns),StdDev (ns),GEMM1 Compute Util (%),GEMM2 Compute Util (%),"
                  "GEMM1 HBM Load Util (%),GEMM1 HBM Store Util (%),GEMM2 HBM Load Util (%),GEMM2 HBM Store Util (%),OP Name,",
}
if SPEC and os.path.exists(SPEC):
    text = open(SPEC, encoding="utf-8").read()
    for rep in SPEC_HDR:
        m = re.search(r"(Row#,(?:OP type|Total Time \(ns\),Percent)[^\n]*)\n", text[text.index("asys stats -r " + rep):])
        check(m and m.group(1) == SPEC_HDR[rep], f"spec header of {rep}: {m.group(1) if m else None!r}")
for rep, want in SPEC_HDR.items():
    hdr = report(db, rep, raw=True).splitlines()[0]
    check(hdr == want, f"{rep} header {hdr!r} != spec {want!r}")

# without the library's variable: no operator ranges; op=others lists every kernel by name
db2, _ = run(instrument=False)
check(report(db2, "ppu_op_sum") == [], "no OPLIB_PERF_INSTRUMENT: no operators")
oth = report(db2, "ppu_op_sum:op=others")
check(sum(int(r[3]) for r in oth) == sum(len(ks) for _, ks in sched) and all(r[0] == "Kernel" for r in oth),
      f"others without operators: all kernels {oth}")
check(report(db2, "moe_op_sum") == [], "moe_op_sum empty without operators")

print("FAILED: %d" % len(fails) if fails else "test_ops: all checks passed")
sys.exit(1 if fails else 0)
