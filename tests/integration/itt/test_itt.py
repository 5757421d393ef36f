#!/usr/bin/env python3
"""test_itt.py - the agent as an ITT (ittnotify) collector. (1) itt_prog, a hand-written ITT program
through a stand-in static part: every mapped entry point, nested tasks, tasks on and across threads,
unknown calls and bad input, checked row by row in the DB; (2) Debian's oneDNN (a real third-party
producer): hgtx_sum lists its primitive tasks with instance counts equal to the executions, output
and exit status unchanged, and unchanged without the agent. usage: test_itt.py BUILD_DIR"""
import csv, io, os, sqlite3, subprocess, sys, tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pa_itest import preload, check, FAILS as fails  # noqa: E402

B = sys.argv[1]
PROF = os.path.join(B, "bin", "profagent")
AGENT = os.path.join(B, "lib", "libprofagent.so")


T = os.path.join(B, "tests", "itt")


def clean_env(**kw):
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "INTEL_LIBITTNOTIFY64")
           and not k.startswith("PROFAGENT_")}
    env.update(kw)
    return env


def run(argv, agent=True, **kw):
    db = os.path.join(tempfile.mkdtemp(prefix="pa_itt_"), "t.db")
    env = clean_env(**kw)
    if agent:
        env.update(LD_PRELOAD=preload(AGENT), PROFAGENT_OUTPUT=db, PROFAGENT_SUMMARY="none")
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    return p, db


def report(db, spec):
    p = subprocess.run([PROF, "stats", "-r", spec, db], capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, f"stats {spec}: exit {p.returncode} {p.stderr}")
    rows = list(csv.reader(io.StringIO(p.stdout)))
    return [r[1:-1] if r and r[-1] == "" else r[1:] for r in rows[1:]]


def q(db, sql):
    return sqlite3.connect(db).execute(sql).fetchall()


# ---- (1) the hand-written ITT program ----
prog = os.path.join(T, "itt_prog")
p0, _ = run([prog], agent=False)
check(p0.returncode == 0 and "collector absent" in p0.stdout and "ok" in p0.stdout, f"without agent: {p0.stdout} {p0.stderr}")
p, db = run([prog])
check(p.returncode == 0 and "collector attached" in p.stdout and "itt_prog: ok" in p.stdout,
      f"under agent: {p.returncode} {p.stdout} {p.stderr}")
rows = {(r[9], r[8]): r for r in report(db, "hgtx_sum")}
want_counts = {
    ("test.domain:outer", "PushPop"): 2, ("test.domain:inner", "PushPop"): 2,
    ("pre.domain:pre_task", "PushPop"): 1, ("test.domain:itt_prog_work", "PushPop"): 2,
    ("test.domain:ex_clock", "PushPop"): 1, ("test.domain:ex_null", "PushPop"): 1,
    ("test.domain:ovl", "StartEnd"): 3, ("test.domain:region", "StartEnd"): 1,
    ("test.domain:frame", "StartEnd"): 2, ("evt", "PushPop"): 1,
    ("test.domain:cross_thread", "StartEnd"): 1, ("test.domain:worker", "PushPop"): 30,
    ("test.domain:spans_pause", "PushPop"): 1, ("null_domain", "PushPop"): 1, ("test.domain:", "PushPop"): 1,
}
got_counts = {k: int(r[2]) for k, r in rows.items()}
check(got_counts == want_counts, f"hgtx_sum rows {sorted(got_counts.items())} != {sorted(want_counts.items())}")
# exact durations from the timestamps the program passed (_ex forms, frame_submit)
check(rows.get(("test.domain:ex_clock", "PushPop"), [0] * 11)[1] == "7000", "ex_clock: 12000 - 5000 ticks of 1 ns")
check(rows.get(("test.domain:ex_null", "PushPop"), [0] * 11)[1] == "3000", "ex_null: t+3000 - t")
durs = sorted(d for (d,) in q(db, "SELECT end - start FROM HGTX_RANGES_NAMED WHERE name = 'test.domain:frame'"))
check(len(durs) == 2 and durs[1] == 4000, f"frame_submit_v3 duration {durs}")
ovl = sorted(d for (d,) in q(db, "SELECT end - start FROM HGTX_RANGES_NAMED WHERE name = 'test.domain:ovl'"))
check(6000 in ovl, f"task_*_overlapped_ex duration 16000 - 10000 {ovl}")
fnd = sorted(d for (d,) in q(db, "SELECT end - start FROM HGTX_RANGES_NAMED WHERE name = 'test.domain:itt_prog_work'"))
check(500 in fnd, f"task_begin_fn_ex: 4500 - 4000 {fnd}")
# nesting: inner is level 1 with outer as parent, on the same thread
nest = q(db, "SELECT i.level, o.level, i.globalTid = o.globalTid FROM HGTX_RANGES_NAMED i JOIN HGTX_RANGES_NAMED o"
             " ON o.id = i.parentId WHERE i.name = 'test.domain:inner'")
check(nest == [(1, 0, 1), (1, 0, 1)], f"inner nested in outer {nest}")
# threads: 10 tasks on each of 3 workers, named through __itt_thr_name_set; the main thread by thread_set_name
per = q(db, "SELECT s.value, count(*) FROM HGTX_RANGES_NAMED r JOIN THREADS t ON t.globalTid = r.globalTid"
            " JOIN STRING_IDS s ON s.id = t.nameId WHERE r.name = 'test.domain:worker' GROUP BY 1 ORDER BY 1")
check(per == [("itt-worker-0", 10), ("itt-worker-1", 10), ("itt-worker-2", 10)], f"worker tasks per thread {per}")
main_name = q(db, "SELECT s.value FROM HGTX_RANGES_NAMED r JOIN THREADS t ON t.globalTid = r.globalTid JOIN STRING_IDS s"
                  " ON s.id = t.nameId WHERE r.name = 'test.domain:outer' LIMIT 1")
check(main_name == [("itt-main",)], f"main thread name {main_name}")
x = q(db, "SELECT globalTid != endGlobalTid FROM HGTX_RANGES_NAMED WHERE name = 'test.domain:cross_thread'")
check(x == [(1,)], f"overlapped task ended on another thread {x}")
marks = sorted(q(db, "SELECT CASE WHEN m.domainId != 0 THEN d.value || ':' ELSE '' END || s.value FROM HGTX_MARKS m"
                     " JOIN STRING_IDS s ON s.id = m.nameId LEFT JOIN STRING_IDS d ON d.id = m.domainId"))
check(marks == sorted([("test.domain:marker",)] * 3 + [("legacy:p1",), ("legacy",), ("test.domain:",)]), f"marks {marks}")
check(not q(db, "SELECT 1 FROM HGTX_RANGES_NAMED WHERE name LIKE '%while_paused' OR name LIKE '%after_detach'"),
      "tasks begun while paused or after detach are not recorded")
cnt = dict(q(db, "SELECT name, value FROM SESSION_COUNTERS WHERE name LIKE 'itt%'"
                 " AND name NOT LIKE 'itt_ring_full_%'"))  # the ring's waits: tests/integration/ringfull
want = {"itt_libraries": 1, "itt_misuse_null_domain": 2, "itt_misuse_null_name": 2, "itt_misuse_end_without_begin": 1,
        "itt_paused_calls": 2, "itt_unmapped:__itt_sync_create": 2, "itt_unmapped:__itt_sync_prepare": 3,
        "itt_unmapped:__itt_counter_create": 1, "itt_unmapped:__itt_counter_inc": 1, "itt_unmapped:__itt_metadata_add": 1}
check(cnt == want, f"ITT counters {cnt}")
misuse = dict(q(db, "SELECT name, value FROM SESSION_COUNTERS WHERE name LIKE 'hgtx_misuse%' OR name = 'hgtx_unterminated'"))
check(all(v == 0 for v in misuse.values()), f"no HGTX misuse from ITT data {misuse}")
# PROFAGENT_TRACE without itt: the library is not told about us, nothing recorded from ITT
p2, db2 = run([prog], PROFAGENT_TRACE="hgtx,osrt,ze,mem")
check(p2.returncode == 0 and "collector absent" in p2.stdout, f"trace without itt: {p2.stdout}")
# the user's INTEL_LIBITTNOTIFY64 wins (here: a library that is no collector)
p3, _ = run([prog], INTEL_LIBITTNOTIFY64="/nonexistent/libittnotify.so")
check(p3.returncode == 0 and "collector absent" in p3.stdout, f"user's INTEL_LIBITTNOTIFY64 kept: {p3.stdout}")

# profagent run points INTEL_LIBITTNOTIFY64 at the agent as well (through the preloaded constructor)
if preload(AGENT) == AGENT:  # (a sanitizer build of the agent needs libasan preloaded first: not run's job)
    rdb = os.path.join(tempfile.mkdtemp(prefix="pa_itt_"), "r.db")
    pr = subprocess.run([PROF, "run", "--output", rdb, "--", prog], env=clean_env(PROFAGENT_SUMMARY="none"),
                        capture_output=True, text=True, timeout=120)
    check(pr.returncode == 0 and "collector attached" in pr.stdout, f"profagent run: {pr.stdout} {pr.stderr}")
    check(os.path.exists(rdb) and q(rdb, "SELECT count(*) FROM HGTX_RANGES_NAMED WHERE name = 'test.domain:worker'")
          == [(30,)], "profagent run: worker tasks recorded")

# ---- (1b) ITT tasks around device work: the HGTX projection and ppu_op_sum work on them unchanged ----
pd, ddb = run([os.path.join(T, "itt_dev")], ZE_ENABLE_ALT_DRIVERS=os.path.join(B, "lib", "libze_simdev.so"),
              SIMDEV_TIMER_HZ="1000000000")
check(pd.returncode == 0 and "itt_dev: ok" in pd.stdout, f"itt_dev: {pd.returncode} {pd.stderr[-300:]}")
ks = {(r[0], r[12]): (r[4], r[5], r[6]) for r in report(ddb, "hgtx_kern_sum")}
check(ks == {("dnnl::primitive::execute:matmul", "gemm_kernel"): ("6", "6", "60000"),
             ("dnnl::primitive::execute:eltwise", "relu_kernel"): ("4", "4", "16000"),
             ("app:step", "gemm_kernel"): ("2", "6", "60000"), ("app:step", "relu_kernel"): ("2", "4", "16000")},
      f"hgtx_kern_sum on ITT tasks {ks}")
pj = {r[0]: r[6] for r in report(ddb, "hgtx_gpu_proj_sum")}
check(pj == {"dnnl::primitive::execute:matmul": "6", "dnnl::primitive::execute:eltwise": "4", "app:step": "2"},
      f"hgtx_gpu_proj_sum instances on ITT tasks {pj}")
ops = [(r[0], r[1], r[3], r[4], r[9], r[12]) for r in report(ddb, "ppu_op_sum")]
check(ops == [("matmul", "60000", "6", "10000", "-", "matmul"), ("eltwise", "16000", "4", "4000", "-", "eltwise")],
      f"ppu_op_sum on oneDNN-style ITT tasks {ops}")

# ---- (2) Debian's oneDNN ----
dnnl = os.path.join(T, "onednn_prims")
if not os.path.exists(dnnl):
    print("SKIP: oneDNN test (libdnnl-dev not installed)")
else:
    counts = {"matmul": 3, "convolution": 2, "eltwise": 5, "reorder": 4}
    args = [dnnl] + [str(counts[k]) for k in ("matmul", "convolution", "eltwise", "reorder")]
    base, _ = run(args, agent=False, OMP_NUM_THREADS="1")
    check(base.returncode == 0 and base.stdout.count(", 0 wrong") == 4, f"oneDNN without agent: {base.stdout}")
    for tag, extra in (("1 thread, default task level", {"OMP_NUM_THREADS": "1"}),
                       ("2 threads, ONEDNN_ITT_TASK_LEVEL=1", {"OMP_NUM_THREADS": "2", "ONEDNN_ITT_TASK_LEVEL": "1"})):
        p, db = run(args, **extra)
        check(p.returncode == base.returncode and p.stdout == base.stdout, f"oneDNN {tag}: output/exit changed: {p.stdout}")
        got = {r[9]: int(r[2]) for r in report(db, "hgtx_sum")}
        want = {"dnnl::primitive::execute:" + k: v for k, v in counts.items()}
        check(got == want, f"oneDNN {tag}: hgtx_sum {got} != {want}")
    # default level 2 with 2 threads: every worker thread running a primitive adds its task
    p, db = run(args, OMP_NUM_THREADS="2")
    got = {r[9]: int(r[2]) for r in report(db, "hgtx_sum")}
    check(p.returncode == 0 and all(got.get("dnnl::primitive::execute:" + k, 0) >= v for k, v in counts.items()),
          f"oneDNN level 2: at least one task per execution {got}")

print("FAILED: %d" % len(fails) if fails else "test_itt: all checks passed")
sys.exit(1 if fails else 0)
