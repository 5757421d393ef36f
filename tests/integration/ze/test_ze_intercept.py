#!/usr/bin/env python3
"""test_ze_intercept.py - the two ways the agent intercepts Level Zero calls see the same calls:
the loader's entry points (default when provably equivalent) and the loader's tracing layer
(PROFAGENT_ZE_INTERCEPT=tracer, or ZE_ENABLE_TRACING_LAYER=1 set by the user). Checked: exact API
counts and results against the program's own counts; the validation layer still answers an
invalid call; an application's own zelTracer still sees every call (both paths); a loader the
application dlopen()s; the summary line and SESSION_COUNTERS name the active path and why.
usage: test_ze_intercept.py BUILD_DIR"""
import os, sqlite3, subprocess, sys, tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pa_itest import preload, check, FAILS as fails  # noqa: E402

B = sys.argv[1]
ZT = os.path.join(B, "tests", "ze")
N = 2000


def run(prog, args, extra, agent=True):
    """Runs prog (under the agent unless agent=False); returns (db, stdout values, stderr)."""
    db = os.path.join(tempfile.mkdtemp(prefix="pa_zeint_"), "t.db")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PROFAGENT_") and not k.startswith("ZE_ENABLE") and k != "LD_PRELOAD"}
    env["ZE_ENABLE_ALT_DRIVERS"] = os.path.join(B, "lib", "libze_simdev.so")
    if agent:
        env.update(LD_PRELOAD=preload(os.path.join(B, "lib", "libprofagent.so")), PROFAGENT_OUTPUT=db,
                   PROFAGENT_SUMMARY="stderr")
    env.update(extra)
    p = subprocess.run([prog] + [str(a) for a in args], env=env, capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"{os.path.basename(prog)} {extra}: exit {p.returncode}: {p.stderr[-500:]}")
    vals = dict(l.split(None, 1) for l in p.stdout.splitlines() if " " in l)
    return db, vals, p.stderr


def api_counts(db):
    c = sqlite3.connect(db)
    return dict(c.execute("SELECT s.value, count(*) FROM ZE_API a JOIN STRING_IDS s ON s.id = a.nameId GROUP BY 1"))


def api_results(db, name):
    c = sqlite3.connect(db)
    return sorted(r for (r,) in c.execute("SELECT a.result FROM ZE_API a JOIN STRING_IDS s ON s.id = a.nameId"
                                          " WHERE s.value = ?", (name,)))


def path_of(db):
    c = sqlite3.connect(db)
    d = dict(c.execute("SELECT name, value FROM SESSION_COUNTERS WHERE name LIKE 'ze_intercept%'"))
    return d.get("ze_intercept_path"), d.get("ze_intercept_reason")


ENTRY_LINE = "Level Zero interception: loader entry points (no tracing layer)"
prog = os.path.join(ZT, "ze_intercept")

# 1. default: the entry path; exact counts; the tracing-layer path (forced) gives the same rows
db_e, v_e, err_e = run(prog, [N], {})
db_t, v_t, err_t = run(prog, [N], {"PROFAGENT_ZE_INTERCEPT": "tracer"})
check(path_of(db_e) == (1, 0), f"default path {path_of(db_e)}, want entry (1, 0)")
check(ENTRY_LINE in err_e, f"default summary lacks '{ENTRY_LINE}': {err_e[-1500:]}")
check(path_of(db_t) == (2, 1), f"forced tracer path {path_of(db_t)}, want (2, 1)")
check("Level Zero interception: tracing layer (PROFAGENT_ZE_INTERCEPT=tracer)" in err_t,
      f"forced tracer summary line missing: {err_t[-1500:]}")
ce, ct = api_counts(db_e), api_counts(db_t)
check(ce.get("zeKernelSetArgumentValue") == N + 1, f"entry: zeKernelSetArgumentValue {ce.get('zeKernelSetArgumentValue')} != {N + 1}")
check(ce.get("zeKernelSetGroupSize") == 8, f"entry: zeKernelSetGroupSize {ce.get('zeKernelSetGroupSize')} != 8")
check(ce == ct, f"entry and tracer paths recorded different API counts: {ce} vs {ct}")
check(api_results(db_e, "zeKernelSetArgumentValue") == api_results(db_t, "zeKernelSetArgumentValue"),
      "entry and tracer paths recorded different results")
check(v_e.get("bad_result") == v_t.get("bad_result"), f"bad call result differs: {v_e} vs {v_t}")
check(v_e.get("tracer") == "0", f"entry path: the app's own tracer must fail as without the agent: {v_e}")
_, v_n, _ = run(prog, [N], {}, agent=False)
check(v_n.get("tracer") == "0" and v_n.get("bad_result") == v_e.get("bad_result"),
      f"entry path changed what the app sees: agent {v_e} vs none {v_n}")

# 2. the validation layer under the entry path: it still answers the NULL handle, and the agent
#    records that answer
val = {"ZE_ENABLE_VALIDATION_LAYER": "1", "ZE_ENABLE_PARAMETER_VALIDATION": "1"}
_, v_vn, _ = run(prog, [N], val, agent=False)
db_v, v_v, err_v = run(prog, [N], val)
check(path_of(db_v) == (1, 0), f"validation: path {path_of(db_v)}, want entry")
# the device accepts undefined event-pool flag bits, the validation layer answers INVALID_ENUMERATION
check(v_n.get("badpool_result") == "0x0", f"without validation the device should accept the pool: {v_n}")
check(v_vn.get("badpool_result") == "0x7800000c", f"validation layer without agent: {v_vn}")
check(v_v.get("badpool_result") == "0x7800000c", f"validation layer under the agent answered {v_v}")
check(api_results(db_v, "zeEventPoolCreate") == [0x7800000c], f"validation: recorded zeEventPoolCreate results"
      f" {api_results(db_v, 'zeEventPoolCreate')}")
check(api_results(db_e, "zeEventPoolCreate").count(0) >= 1, "entry path without validation: the pool was created")
rv = api_results(db_v, "zeKernelSetArgumentValue")
check(len(rv) == N + 1 and rv.count(0x78000005) == 1 and rv.count(0) == N,
      f"validation: recorded results {sorted(set(rv))} x{len(rv)}")

# 3. the application's own tracer (the user enabled the tracing layer): auto keeps the tracing
#    layer; entry forced puts us above it; in both the app's tracer and the agent see every call
tl = {"ZE_ENABLE_TRACING_LAYER": "1"}
for extra, want_path in ((tl, (2, 2)), (dict(tl, PROFAGENT_ZE_INTERCEPT="entry"), (1, 0))):
    db, v, err = run(prog, [N], extra)
    check(path_of(db) == want_path, f"{extra}: path {path_of(db)}, want {want_path}")
    check(v.get("tracer") == "1", f"{extra}: the app's tracer could not be enabled: {v}")
    check(v.get("pro_setarg") == str(N + 1) and v.get("epi_setarg") == str(N + 1),
          f"{extra}: the app's tracer saw {v} (want {N + 1} setarg)")
    check(v.get("pro_groupsize") == "8", f"{extra}: the app's tracer saw groupsize {v.get('pro_groupsize')}")
    c = api_counts(db)
    check(c.get("zeKernelSetArgumentValue") == N + 1 and c.get("zeKernelSetGroupSize") == 8,
          f"{extra}: agent recorded {c.get('zeKernelSetArgumentValue')} setarg, {c.get('zeKernelSetGroupSize')} groupsize")
    if want_path[0] == 2:
        check("Level Zero interception: tracing layer (ZE_ENABLE_TRACING_LAYER=1 is set in the environment)" in err,
              f"{extra}: summary line missing: {err[-1500:]}")

# 4. a loader the application dlopen()s and calls through dlsym: the entry path, exact counts
for extra, want_path in (({}, (1, 0)), ({"PROFAGENT_ZE_INTERCEPT": "tracer"}, (2, 1))):
    db, _, _ = run(os.path.join(ZT, "ze_dlopen"), [], extra)
    check(path_of(db) == want_path, f"dlopen {extra}: path {path_of(db)}, want {want_path}")
    c = api_counts(db)
    check(c.get("zeKernelSetArgumentValue") == 4 and c.get("zeInit") == 1 and
          c.get("zeCommandListAppendLaunchKernel") == 1, f"dlopen {extra}: counts {c}")

# 5. a bad value of the switch: one message naming it and the accepted values, default kept
db, _, err = run(prog, [10], {"PROFAGENT_ZE_INTERCEPT": "fast"})
check("PROFAGENT_ZE_INTERCEPT" in err and "auto|entry|tracer" in err, f"bad switch value not reported: {err[:600]}")
check(path_of(db) == (1, 0), f"bad switch value: path {path_of(db)}")

print("FAILED" if fails else "OK", len(fails))
sys.exit(1 if fails else 0)
