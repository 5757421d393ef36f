#!/usr/bin/env python3
"""test_ze_init_order.py - the agent never initializes Level Zero for the application. Each
initialization order of ze_init_order runs without the agent (the independent path: the loader's
own answers) and under it (both interception paths, and with the sources that use Level Zero
themselves: device metrics, with and without the ze source, PC sampling); every result code and count must be the same, and the
concrete loader answers are checked too: zeDriverGet before zeInit is ZE_RESULT_ERROR_UNINITIALIZED
(0x78000001); zeInit(ZE_INIT_FLAG_VPU_ONLY) with only a GPU driver is 0x78000001 and leaves Level
Zero uninitialized. Under the agent, a process that never initialized Level Zero records nothing
of it; one that initialized it for GPU has exactly its own calls after that zeInit in the DB.
usage: test_ze_init_order.py BUILD_DIR"""
import os, sqlite3, subprocess, sys, tempfile

B = sys.argv[1]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pa_itest import FAILS as fails, check, preload  # noqa: E402

PROG = os.path.join(B, "tests", "zeinit", "ze_init_order")
UNINIT = "0x78000001"


def run(mode, extra=None, agent=True):
    """Runs one mode; returns (values printed, DB path or None, stderr)."""
    d = tempfile.mkdtemp(prefix="pa_zeinit_")
    db = os.path.join(d, "t.db")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PROFAGENT_", "ZE_ENABLE", "ZET_", "ZES_")) and k != "LD_PRELOAD"}
    env["ZE_ENABLE_ALT_DRIVERS"] = os.path.join(B, "lib", "libze_simdev.so")
    if agent:
        env.update(LD_PRELOAD=preload(os.path.join(B, "lib", "libprofagent.so")), PROFAGENT_OUTPUT=db,
                   PROFAGENT_SUMMARY="stderr", ASAN_OPTIONS="detect_leaks=0")
    env.update(extra or {})
    p = subprocess.run([PROG, mode], env=env, capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"{mode} {extra} agent={agent}: exit {p.returncode}: {p.stderr[-800:]}")
    vals = dict(l.split(None, 1) for l in p.stdout.splitlines() if " " in l)
    return vals, (db if os.path.exists(db) else None), p.stderr


def rows(db, sql):
    if not db:
        return []
    c = sqlite3.connect(db)
    have = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    table = sql.split(" FROM ")[1].split()[0]
    return c.execute(sql).fetchall() if table in have else []


def api_counts(db):
    return {(n, r): c for n, r, c in rows(db, "SELECT s.value, a.result, count(*) FROM ZE_API a JOIN STRING_IDS s"
                                              " ON s.id = a.nameId GROUP BY 1, 2")}


# ---- the independent path: the loader and simdev without the agent, concrete answers ----
ref = {m: run(m, agent=False)[0] for m in ("pre", "vpu", "gpu", "hidden")}
check(ref["pre"] == {"pre_get_result": UNINIT, "pre_get_count": "0"}, f"without agent, pre: {ref['pre']}")
check(ref["vpu"].get("vpu_init") == UNINIT and ref["vpu"].get("vpu_get_result") == UNINIT and
      ref["vpu"].get("vpu_get_count") == "0", f"without agent, VPU_ONLY with a GPU driver only: {ref['vpu']}")
check(ref["vpu"].get("gpu_get_result") == UNINIT, f"without agent, the GPU init after the failed VPU_ONLY "
      f"one leaves Level Zero uninitialized (the loader keeps the driver's failure): {ref['vpu']}")
g = ref["gpu"]
check(g.get("pre_get_result") == UNINIT and g.get("gpu_init") == "0x0" and g.get("gpu_get_result") == "0x0" and
      g.get("gpu_get_count") == "1" and int(g.get("devices", "0")) >= 1 and g.get("fills_ok") == "3" and
      g.get("filled_bytes") == "4096", f"without agent, gpu: {g}")
NDEV = int(g.get("devices", "0"))
check(ref["hidden"] == dict({k: v for k, v in g.items() if k not in ("pre_get_result", "pre_get_count", "gpu_init")},
                            hidden_init="0x0"), f"without agent, hidden: {ref['hidden']} (gpu: {g})")

# every call the program makes after its zeInit(GPU_ONLY), each once unless said: the DB's rows
GPU_CALLS = {("zeInit", 0): 1, ("zeDriverGet", 0): 2, ("zeDeviceGet", 0): 2, ("zeContextCreate", 0): 1,
             ("zeCommandListCreateImmediate", 0): 1, ("zeMemAllocHost", 0): 1,
             ("zeCommandListAppendMemoryFill", 0): 3, ("zeMemFree", 0): 1,
             ("zeCommandListDestroy", 0): 1, ("zeContextDestroy", 0): 1}
# initialized where the agent cannot see it (as by zeInitDrivers): attached after the first call
# that shows it (the first successful zeDeviceGet), so the calls before and that one are not rows
HIDDEN_CALLS = dict(GPU_CALLS)
del HIDDEN_CALLS[("zeInit", 0)], HIDDEN_CALLS[("zeDriverGet", 0)]
HIDDEN_CALLS[("zeDeviceGet", 0)] = 1


def gpu_checks(mode, want, extra, name):
    """Initialized for GPU: the same answers, and exactly the calls made after it recorded."""
    v, db, err = run(mode, extra)
    check(v == ref[mode], f"{name}, {mode}: the agent changed the results: {v} vs without it {ref[mode]}")
    if name == "metrics without ze":  # the streams start after the application's initialization alone
        m = rows(db, "SELECT count(*) FROM METRIC_DEVICES WHERE state = 1")
        check(m == [(NDEV,)] and api_counts(db) == {}, f"{name}, {mode}: streaming devices {m}, want {NDEV};"
              f" ZE_API {api_counts(db)}")
        return
    got = api_counts(db)
    check(got == want, f"{name}, {mode}: ZE_API rows {sorted(got.items())}, want {sorted(want.items())}")
    fills = rows(db, "SELECT count(*), min(bytes), max(bytes) FROM ZE_OPS WHERE end > start")
    check(fills == [(3, 4096, 4096)], f"{name}, {mode}: ZE_OPS fills {fills}, want three of 4096 bytes")
    check(rows(db, "SELECT count(*) FROM ZE_DEVICES") == [(NDEV,)], f"{name}, {mode}: ZE_DEVICES "
          f"{rows(db, 'SELECT count(*) FROM ZE_DEVICES')}, want {NDEV}")
    # PC sampling takes kernels from the ze source's hooks: it forces no tracing layer
    want_path = "tracing layer" if name == "tracer" else "loader entry points"
    check(f"Level Zero interception: {want_path}" in err, f"{name}, {mode}: interception line: "
          f"{[l for l in err.splitlines() if 'interception' in l]}")
    if name == "metrics":
        m = rows(db, "SELECT count(*) FROM METRIC_DEVICES WHERE state = 1")
        check(m == [(NDEV,)], f"metrics, {mode}: streaming devices {m}, want {NDEV}")
    if name == "pc sampling":
        m = rows(db, "SELECT count(*) FROM PCS_DEVICES")
        check(m == [(NDEV,)], f"pc sampling, {mode}: sampled devices {m}, want {NDEV}")


CONFIGS = [({}, "entry"), ({"PROFAGENT_ZE_INTERCEPT": "tracer"}, "tracer"),
           ({"PROFAGENT_METRICS": "ComputeBasic"}, "metrics"), ({"PROFAGENT_PC_SAMPLING": "1"}, "pc sampling"),
           ({"PROFAGENT_METRICS": "ComputeBasic", "PROFAGENT_TRACE": "osrt"}, "metrics without ze")]
for extra, name in CONFIGS:
    # never initialized: the same answers, nothing of Level Zero recorded or said
    for mode in ("pre", "vpu"):
        v, db, err = run(mode, extra)
        check(v == ref[mode], f"{name}, {mode}: the agent changed the results: {v} vs without it {ref[mode]}")
        check(api_counts(db) == {}, f"{name}, {mode}: ZE_API rows without an initialized Level Zero: {api_counts(db)}")
        check(rows(db, "SELECT count(*) FROM ZE_DEVICES") in ([], [(0,)]), f"{name}, {mode}: devices recorded")
        check(rows(db, "SELECT count(*) FROM METRIC_DEVICES") in ([], [(0,)]) and
              rows(db, "SELECT count(*) FROM PCS_DEVICES") in ([], [(0,)]), f"{name}, {mode}: a device source ran")
        check("Level Zero interception" not in err, f"{name}, {mode}: summary names an interception path")
        said = [l for l in err.splitlines() if l.startswith("profagent:")]
        check(said == [], f"{name}, {mode}: the agent said {said}")
    for mode, want in (("gpu", GPU_CALLS), ("hidden", HIDDEN_CALLS)):
        gpu_checks(mode, want, extra, name)

print("FAIL" if fails else "PASS", len(fails))
sys.exit(1 if fails else 0)
