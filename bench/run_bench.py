#!/usr/bin/env python3
"""run_bench.py - measures every figure of issue 7 against its baseline in the same invocation.

Called by scripts/bench (which builds first). Each cost is a difference or ratio between the
agent run and its baseline run, the two interleaved run by run, and each figure is the median
over the runs. Prints one table, then machine-readable lines `name value unit`.
"""
import argparse
import glob
import os
import random
import resource
import re
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

# Full and smoke sizes: smoke only checks that every figure is produced (tests/integration/bench_smoke).
SIZES = {
    "full": dict(runs=5, ze_calls=1000000, ze_whole_calls=1000000, hgtx_pairs=500000, osrt_calls=20000, mem_allocs=2000,
                 mem_live=(1000, 1000000), drain_rounds=25, write_events=1000000, exit_pairs=500000,
                 kill_rate=250000, kill_at=(3.0, 10.0),
                 rss_pairs=(500000, 5000000, 15000000), rss_runs=1, gemm=(300, 128), mt=(4, 2000, 65536), pcs_entries=20000000,
                 churn=(2000, 20000)),
    "smoke": dict(runs=1, ze_calls=20000, ze_whole_calls=20000, hgtx_pairs=20000, osrt_calls=200, mem_allocs=50,
                  mem_live=(10, 1000), drain_rounds=2, write_events=30000, exit_pairs=5000,
                  kill_rate=250000, kill_at=(1.0, 1.5),
                  rss_pairs=(5000, 50000, 150000), rss_runs=1, gemm=(5, 16), mt=(2, 5, 256), pcs_entries=100000,
                  churn=(200, 1000)),
}


# The goal table (issue "Overhead: the whole run, not just the call"): figure, what it is, the
# value before, the comparison and the goal, the unit shown. Each gets a "met" / "missed by" line.
GOALS = [
    ("slowdown_ze_calls_1M", "whole-process slowdown, 1 M ze calls, every event kept", "78.8x", "<=", 20.0, "x"),
    ("slowdown_ze_calls_1M_cpu", "the same in CPU time", "-", "<=", 20.0, "x"),
    ("exit_time_per_1M_events", "exit time after 1 M recorded events (unpaced)", "0.49 s", "<=", 0.050, "s"),
    ("exit_ze_calls_1M_gone_auto", "1 M ze calls: main's return -> process gone (default: finisher)", "0.25-0.31 s",
     "<=", 0.050, "s"),
    ("exit_time_paced_1M_events", "exit time after 1 M events the DB kept up with", "0.14 s", "<=", 0.050, "s"),
    ("ze_call_agent_callbacks_ns", "our ze callback cost (agent - empty tracer)", "74 ns", "<=", 35.0, "ns"),
    ("ze_call_added_ns", "ze call added over a loader without any tracer", "172 ns", "<=", 50.0, "ns"),
    ("hgtx_pushpop_added_ns", "HGTX push+pop added", "92 ns", "<=", 50.0, "ns"),
    ("agg_drain_rate", "aggregator drain incl. spool/DB work, one core", "21.3 M/s", ">=", 40e6, "events/s"),
    ("db_write_rate", "DB rows/s", "1.44 M/s", ">=", 3e6, "rows/s"),
    ("kill_db_lag_s", "kill -9 at 250 k ranges/s: DB behind the program", "1.4-2 s", "<=", 1.0, "s"),
    ("rss_growth_30x_events", "peak RSS growth, 30 M vs 1 M events", "+85 MiB", "<=", 10.0, "MiB"),
    ("slowdown_multithread", "slowdown of samples/multithread (wall)", "1.17", "<=", 1.03, "x"),
    ("slowdown_multithread_cpu", "slowdown of samples/multithread (CPU time)", "1.22", "<=", 1.03, "x"),
    ("slowdown_gemm", "slowdown of samples/gemm (wall)", "0.99", "<=", 1.02, "x"),
    ("slowdown_gemm_cpu", "slowdown of samples/gemm (CPU time)", "-", "<=", 1.02, "x"),
]


def goal_lines(values):
    """One line per goal: figure, value, goal, verdict ('met' or 'missed by X')."""
    out = []
    for name, what, before, op, goal, unit in GOALS:
        if name not in values:
            out.append("%-28s %-52s %14s  goal %s %-10g %s" % (name, what, "-", op, goal, "not measured"))
            continue
        v = values[name]
        met = v <= goal if op == "<=" else v >= goal
        gap = v - goal if op == "<=" else goal - v
        verdict = "met" if met else "missed by %s" % fmt_unit(gap, unit)
        out.append("%-28s %-52s %14s  goal %s %-10s (before %s): %s" % (name, what, fmt_unit(v, unit), op,
                                                                      fmt_unit(goal, unit), before, verdict))
    return out


def fmt_unit(v, unit):
    if unit in ("events/s", "rows/s"):
        return "%.2f M/s" % (v / 1e6)
    if unit == "x":
        return "%.3fx" % v
    if unit == "s":
        return "%.3f s" % v
    return "%.1f %s" % (v, unit)


# Cost runs: batches of BATCH calls timed, with an untimed pause of PAUSE_US after each so the
# aggregator (1 ms poll) keeps up: the figure is the cost of a recorded event with the default
# 1 MiB ring, not of the cheaper drop path. Drops are shown in the table.
BATCH, PAUSE_US = 1000, 1000


class Bench:
    def __init__(self, build, tmp):
        self.bin = os.path.join(build, "bin")
        self.lib = os.path.join(build, "lib")
        self.agent = os.path.join(self.lib, "libprofagent.so")
        self.simdev = os.path.abspath(os.path.join(self.lib, "libze_simdev.so"))
        self.tmp = tmp
        self.seq = 0
        self.last_cpu = 0.0  # user + system seconds of the last run() (its threads included)

    def env(self, agent, ze=False, tracing=False, extra=None):
        """Environment of one run: the agent (DB and summary into tmp) or none at all."""
        e = {k: v for k, v in os.environ.items()
             if not k.startswith("PROFAGENT_") and k not in ("LD_PRELOAD", "ZE_ENABLE_TRACING_LAYER", "INTEL_LIBITTNOTIFY64")}
        if ze:
            e["ZE_ENABLE_ALT_DRIVERS"] = self.simdev  # absolute, never empty
        if tracing:
            e["ZE_ENABLE_TRACING_LAYER"] = "1"
        if agent:
            self.seq += 1
            e["LD_PRELOAD"] = self.agent
            e["PROFAGENT_OUTPUT"] = os.path.join(self.tmp, "run%d.db" % self.seq)
            e["PROFAGENT_SUMMARY"] = "file:" + os.path.join(self.tmp, "run%d.txt" % self.seq)
        e.update(extra or {})
        return e

    def run(self, argv, env, inspect=None):
        """Runs argv; returns (stdout key->float, wall s, exit s after main_end_ns, maxrss KiB, summary).
        inspect(db_path) is called before the run's files are removed (its result in vals["inspect"])."""
        argv = [os.path.join(self.bin, argv[0])] + [str(a) for a in argv[1:]]
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic_ns()
        p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = p.communicate()
        t1 = time.monotonic_ns()
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)  # runs are sequential: the delta is this one's
        self.last_cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
        _, status, ru = os.wait4(p.pid, 0) if p.returncode is None else (0, 0, None)
        if p.returncode != 0:
            sys.exit("bench: %s failed (status %s):\n%s" % (" ".join(argv), p.returncode, err.decode()[-2000:]))
        vals = {}
        for line in out.decode().splitlines():
            f = line.split()
            if len(f) >= 2:
                try:
                    vals[f[0]] = float(f[1])
                except ValueError:
                    pass
        exit_s = (t1 - vals["main_end_ns"]) / 1e9 if "main_end_ns" in vals else None
        summary = ""
        path = env.get("PROFAGENT_SUMMARY", "")
        if path.startswith("file:") and os.path.exists(path[5:]):
            with open(path[5:]) as f:
                summary = f.read()
        if inspect:
            vals["inspect"] = inspect(env.get("PROFAGENT_OUTPUT", ""))
        # a finisher (PROFAGENT_EXIT_LOAD=auto, the default) may still complete the DB: the next run
        # must not overlap it (its CPU would slow that run) nor have its files removed under it
        db = env.get("PROFAGENT_OUTPUT", "")
        deadline = time.monotonic() + 60
        while db and os.path.exists(db + ".finishing") and time.monotonic() < deadline:
            time.sleep(0.002)
        for f in glob.glob(os.path.join(self.tmp, "run*")):
            try:
                os.unlink(f)
            except FileNotFoundError:
                pass  # a file the finisher removed itself (the -shm/-journal at its close)
        return vals, (t1 - t0) / 1e9, exit_s, summary

    def run_rss(self, argv, env):
        """Peak RSS in KiB of argv (through bench_rss: python's own RSS must not count); the share
        of records dropped goes to self.last_drop (0 without the agent)."""
        vals, _, _, summary = self.run(["bench_rss", os.path.join(self.bin, argv[0])] + argv[1:], env)
        rec, drop = recorded(summary)
        self.last_drop = drop / max(rec + drop, 1)
        return vals["maxrss_kib"]


def kill_lag(b, rate, at):
    """Seconds the DB of a `progress` run at `rate` ranges/s, killed -9 at a random moment in
    `at` (s), is behind the program: kill time - the time the program reported its DB's last range
    done. Exits when the DB fails integrity_check."""
    app = os.path.join(os.path.dirname(b.bin), "tests", "stream", "stream_app")
    env = b.env(True, extra={"PROFAGENT_RING_SIZE": "64M", "PROFAGENT_SUMMARY": "none"})
    db = env["PROFAGENT_OUTPUT"]
    p = subprocess.Popen([app, "progress", str(rate * 60), str(rate)], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    time.sleep(random.uniform(*at))
    killed = time.monotonic_ns()
    p.send_signal(signal.SIGKILL)
    out, _ = p.communicate()
    prog = [(int(f[1]), int(f[2])) for f in (l.split() for l in out.decode().splitlines()) if f[0] == "progress"]
    n, ic = 0, "no DB"
    if os.path.exists(db):
        c = sqlite3.connect(db)
        ic = c.execute("PRAGMA integrity_check").fetchone()[0]
        n = c.execute("SELECT count(*) FROM HGTX_RANGES").fetchone()[0]
        c.close()
    for f in glob.glob(os.path.join(b.tmp, "run*")):
        os.unlink(f)
    if ic != "ok":
        sys.exit("bench: the DB of a killed run fails integrity_check: %s" % ic)
    held = [t for done, t in prog if done <= n]
    return (killed - max(held)) / 1e9 if held else (killed - prog[0][1]) / 1e9 if prog else 0.0


def ze_path(summary):
    """The summary's 'Level Zero interception: ...' wording ('?' when absent)."""
    m = re.search(r"Level Zero interception: (.*)", summary)
    return m.group(1).strip() if m else "?"


def recorded(summary):
    """(recorded, dropped) from the agent's summary 'Records: N recorded, M dropped' line."""
    m = re.search(r"Records: (\d+) recorded, (\d+) dropped", summary)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def interleave(b, runs, base, agent, key):
    """Runs base and agent alternately `runs` times; returns (median base, median agent,
    median of per-run agent-base differences, last agent summary)."""
    bs, ag, diff, summ = [], [], [], ""
    for _ in range(runs):
        vb = b.run(*base)[0][key]
        va, _, _, summ = b.run(*agent)
        ag.append(va[key])
        bs.append(vb)
        diff.append(va[key] - vb)
    return statistics.median(bs), statistics.median(ag), statistics.median(diff), summ


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--build", default="build-bench")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, one run (checks figures appear)")
    ap.add_argument("--runs", type=int, default=0, help="runs per figure (default 5, smoke 1)")
    args = ap.parse_args()
    S = dict(SIZES["smoke" if args.smoke else "full"])
    if args.runs > 0:
        S["runs"] = args.runs
    R = S["runs"]
    rows = []  # (name, value, unit, baseline/target note)

    def fig(name, value, unit, note):
        rows.append((name, value, unit, note))
        print("  %-28s %14.3f %-9s %s" % (name, value, unit, note), file=sys.stderr, flush=True)

    t_start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="profagent-bench-") as tmp:
        b = Bench(args.build, tmp)
        # 1. ze call on the default path (the loader's entry points): baseline = the loader without
        #    any tracer or tracing layer, no agent.
        argv = ["bench_ze_calls", S["ze_calls"], BATCH, PAUSE_US]
        base_ns, ag_ns, d, summ = interleave(b, R, (argv, b.env(False, ze=True)), (argv, b.env(True, ze=True)), "call_ns")
        fig("ze_call_added_ns", d, "ns", "agent (%s) vs plain loader: base %.1f ns, agent %.1f ns, drops %d"
            % (ze_path(summ), base_ns, ag_ns, recorded(summ)[1]))
        # 1b. the tracing-layer path (PROFAGENT_ZE_INTERCEPT=tracer) split in two: the loader's tracing
        #     layer once any tracer is enabled (a tracer of the bench's own with empty callbacks) vs the
        #     layer alone, and the agent's callbacks on top of it (agent minus empty tracer).
        layer = b.env(False, ze=True, tracing=True)
        empty = b.env(False, ze=True, tracing=True, extra={"BENCH_ZE_EMPTY_TRACER": "1"})
        tracer = b.env(True, ze=True, extra={"PROFAGENT_ZE_INTERCEPT": "tracer"})
        bl, be, bt, dl, dt = [], [], [], [], []
        for _ in range(R):
            vl = b.run(argv, layer)[0]["call_ns"]
            ve = b.run(argv, empty)[0]["call_ns"]
            vt = b.run(argv, tracer)[0]["call_ns"]
            bl.append(vl), be.append(ve), bt.append(vt), dl.append(ve - vl), dt.append(vt - ve)
        med = statistics.median
        fig("ze_call_tracing_layer_ns", med(dl), "ns", "loader tracing layer with an empty tracer vs layer only"
            " (layer %.1f, empty tracer %.1f)" % (med(bl), med(be)))
        fig("ze_call_agent_callbacks_ns", med(dt), "ns", "tracing-layer path: agent minus empty tracer"
            " (agent %.1f ns)" % med(bt))
        fig("ze_call_tracer_path_added_ns", med(bt) - med(bl), "ns", "tracing-layer path vs layer only")
        # 1c. whole process: 1 M ze calls (no pauses), every event kept in the DB, vs the plain loader
        argv = ["bench_ze_calls", S["ze_whole_calls"], BATCH, 0]
        # (the default PROFAGENT_EXIT_LOAD=auto: the process ends before its finisher, which is detached:
        # no rusage counts it; it stores its CPU time in META finisher_cpu_ms, read once it ended)
        def finisher_cpu(db):
            while os.path.exists(db + ".finishing"):
                time.sleep(0.001)
            try:
                c = sqlite3.connect(db, timeout=60)
                r = c.execute("SELECT value FROM META WHERE key = 'finisher_cpu_ms'").fetchone()
                c.close()
            except sqlite3.Error:
                r = None
            return r[0] / 1e3 if r else 0.0
        ratios, cpu, cpu_all, drops = [], [], [], 0
        for _ in range(R):
            tb = b.run(argv, b.env(False, ze=True))[1]
            cb = b.last_cpu
            va, ta, _, summ = b.run(argv, b.env(True, ze=True), finisher_cpu)
            ratios.append(ta / tb)
            cpu.append(b.last_cpu / max(cb, 1e-3))  # the plain run's CPU is ~10 ms: 1 ms floor
            cpu_all.append((b.last_cpu + va["inspect"]) / max(cb, 1e-3))
            drops += recorded(summ)[1]
        fig("slowdown_ze_calls_1M", statistics.median(ratios), "ratio", "%d calls, whole process incl. exit, vs plain"
            " loader (wall, default PROFAGENT_EXIT_LOAD=auto: to the process's end); drops %d" % (S["ze_whole_calls"], drops))
        fig("slowdown_ze_calls_1M_cpu", statistics.median(cpu), "ratio", "the same, CPU time (user + system) of the"
            " program's process")
        fig("slowdown_ze_calls_1M_cpu_with_finisher", statistics.median(cpu_all), "ratio", "the same, CPU time of the"
            " process and of its finisher (META finisher_cpu_ms)")
        # 1d. the same run's exit, PROFAGENT_EXIT_LOAD inline vs auto (alternated): main's return ->
        # the process gone, and -> the DB complete (the finisher removes DB.finishing once it wrote
        # session_complete; inline, the DB is complete when the process is gone)
        def db_done(db):
            while os.path.exists(db + ".finishing"):
                time.sleep(0.001)
            return time.monotonic_ns()
        def db_done_cpu(db):
            t = db_done(db)
            return t, finisher_cpu(db)
        modes = ("inline", "auto")  # auto: the default (a finisher for this run's ~0.8 M rows left)
        gone, done, cpus = ({m: [] for m in modes} for _ in range(3))
        for _ in range(R):
            for mode in modes:
                vals, _, exit_s, _ = b.run(argv, b.env(True, ze=True, extra={"PROFAGENT_EXIT_LOAD": mode}), db_done_cpu)
                gone[mode].append(exit_s)
                done[mode].append((vals["inspect"][0] - vals["main_end_ns"]) / 1e9)
                cpus[mode].append(b.last_cpu + vals["inspect"][1])
        for mode in modes:
            fig("exit_ze_calls_1M_gone_" + mode, statistics.median(gone[mode]), "s", "PROFAGENT_EXIT_LOAD=%s: main's"
                " return -> process gone, %d calls" % (mode, S["ze_whole_calls"]))
            fig("exit_ze_calls_1M_db_complete_" + mode, statistics.median(done[mode]), "s", "PROFAGENT_EXIT_LOAD=%s:"
                " main's return -> DB complete (session_complete written)" % mode)
            fig("exit_ze_calls_1M_cpu_" + mode, statistics.median(cpus[mode]), "s", "PROFAGENT_EXIT_LOAD=%s: CPU"
                " time of the whole run, the process and its finisher (META finisher_cpu_ms)" % mode)
        # 2. HGTX push+pop: baseline = the libhgtx stub.
        argv = ["bench_hgtx", S["hgtx_pairs"], BATCH, PAUSE_US]
        bs, ag, diff, tsc, cg, summ = [], [], [], [], [], ""
        for _ in range(R):
            vb = b.run(argv, b.env(False))[0]
            va, _, _, summ = b.run(argv, b.env(True))
            bs.append(vb["pair_ns"]), ag.append(va["pair_ns"]), diff.append(va["pair_ns"] - vb["pair_ns"])
            tsc.append(vb["tsc_read_ns"]), cg.append(vb["clock_gettime_ns"])
        base_ns, ag_ns, d = statistics.median(bs), statistics.median(ag), statistics.median(diff)
        fig("hgtx_pushpop_added_ns", d, "ns", "stub %.1f ns, agent %.1f ns, drops %d (two TSC reads: %.1f ns)"
            % (base_ns, ag_ns, recorded(summ)[1], 2 * statistics.median(tsc)))
        fig("tsc_read_ns", statistics.median(tsc), "ns", "one rdtsc: each event's clock read (the floor)")
        fig("clock_gettime_ns", statistics.median(cg), "ns", "one vDSO clock_gettime(CLOCK_MONOTONIC), for comparison")
        # 2b. the same pair with two software host counters read at each push and pop (one read()
        # of the group each) vs the agent without host counters
        hc = {"PROFAGENT_HOST_COUNTERS": "task-clock,page-faults"}
        off_ns, on_ns, d, summ = interleave(b, R, (argv, b.env(True)), (argv, b.env(True, extra=hc)), "pair_ns")
        fig("hgtx_hostctr_added_ns", d, "ns", "2 software counters on vs off, per push+pop (2 group reads);"
            " off %.1f ns, on %.1f ns, drops %d" % (off_ns, on_ns, recorded(summ)[1]))
        # 2c. ITT task begin+end: baseline = an ittnotify static part without a collector.
        argv = ["bench_itt", S["hgtx_pairs"], BATCH, PAUSE_US]
        base_ns, ag_ns, d, summ = interleave(b, R, (argv, b.env(False)), (argv, b.env(True)), "pair_ns")
        fig("itt_task_added_ns", d, "ns", "ITT task begin+end, agent as collector vs no collector (%.1f ns);"
            " agent %.1f ns, drops %d" % (base_ns, ag_ns, recorded(summ)[1]))
        # 3. OSRT: 2 us nanosleep, above the 1000 ns threshold.
        argv = ["bench_osrt", S["osrt_calls"], 2000]
        base_ns, ag_ns, d, summ = interleave(b, R, (argv, b.env(False)), (argv, b.env(True)), "call_ns")
        fig("osrt_call_added_ns", d, "ns", "target <=150; nanosleep(2us) takes %.0f ns here" % base_ns)
        # 4. device allocation with a deep stack, 1k and 1M live allocations.
        for live in S["mem_live"]:
            argv = ["bench_mem", live, S["mem_allocs"], 40]
            # the 1M-live run spends ~30 s in the agent's exit (2M alloc/free rows): once only
            runs = R if live < 1000000 else 1
            base_ns, ag_ns, d, _ = interleave(b, runs, (argv, b.env(False, ze=True)),
                                              (argv, b.env(True, ze=True)), "alloc_ns")
            fig("mem_alloc_added_ns_live%s" % ("1M" if live >= 1000000 else "%dk" % (live // 1000) if live >= 1000
                                               else str(live)),
                d, "ns", "report; 32-frame stack; base %.0f ns" % base_ns)
        # 5. aggregator drain rate (bench_drain: CPU time of the drain, 4 rings, spool on).
        # the ze mix (one API record per call, one ring) alternated with it: the records of bench_ze_calls
        rates, bpe, zrates, zspool = [], [], [], []
        for _ in range(R):
            v = b.run(["bench_drain", S["drain_rounds"]], b.env(False))[0]
            rates.append(v["agg_drain_rate"])
            bpe.append(v["spool_bytes_per_event"])
            v = b.run(["bench_drain", S["drain_rounds"], 1, 65536, -1, "spool", "ze"], b.env(False))[0]
            zrates.append(v["agg_drain_rate"])
            zspool.append(v["spool_thread_cpu_per_event"])
        fig("agg_drain_rate", statistics.median(rates), "events/s", "goal >=40M, one core, spool included")
        fig("agg_drain_rate_ze", statistics.median(zrates), "events/s", "report; ze API records (the spool thread"
            " %.1f ns/event besides)" % statistics.median(zspool))
        # 5b. symbolization per unique stack (bench_mem_agg, the mem owner's bench).
        sym = [b.run(["bench_mem_agg"], b.env(False))[0]["mem_sym_ns_per_unique_stack"] for _ in range(R)]
        fig("mem_sym_ns_per_unique_stack", statistics.median(sym), "ns", "report; 32-frame stacks, at exit")
        # 6. DB write rate and the spool's compression (bench_write, in-process).
        # alternated with SQLite's own rate for the same two row shapes (bench_sqlite_ceiling): a row
        # per event cannot be written faster than that, whatever the writer around it does
        w, ceil = [], []
        for _ in range(R):
            w.append(b.run(["bench_write", S["write_events"]], b.env(False))[0])
            ceil.append(b.run(["bench_sqlite_ceiling", int(w[-1]["spool_records"])], b.env(False))[0])
        med = lambda k: statistics.median(x[k] for x in w)
        fig("db_write_rate", med("db_write_rate"), "rows/s", "goal >=3M; bench_write, wall time of the load")
        fig("db_write_cpu_rate", med("db_write_cpu_rate"), "rows/s", "report; the same on the writer's CPU time")
        fig("db_sqlite_ceiling_cpu_rate", statistics.median(x["sqlite_ceiling_cpu_rate"] for x in ceil), "rows/s",
            "report; SQLite alone, same rows, prepared 64-row inserts, one transaction (CPU)")
        fig("db_sqlite_ceiling_wal_cpu_rate", statistics.median(x["sqlite_ceiling_wal_cpu_rate"] for x in ceil),
            "rows/s", "report; the same in WAL, a commit + emptied WAL per 12.5 k rows (CPU)")
        fig("db_write_vs_ceiling", statistics.median(a["db_write_cpu_rate"] / c["sqlite_ceiling_cpu_rate"]
                                                     for a, c in zip(w, ceil)), "ratio",
            "report; db_write_cpu_rate / SQLite's ceiling, per run pair")
        fig("spool_bytes_per_event", med("spool_bytes_per_event"), "bytes", "report; zstd level -1 on the compact encoding, HGTX+OSRT mix")
        fig("spool_compress_rate", med("spool_compress_rate"), "MB/s", "report; raw bytes in, one core")
        fig("spool_compress_event_rate", med("spool_compress_event_rate"), "events/s", "report")
        # 7. exit time per 1M recorded events: end of main -> process gone (summary + DB).
        ex = []
        for _ in range(R):
            _, _, exit_s, summ = b.run(["bench_hgtx", S["exit_pairs"]], b.env(True))
            rec, _ = recorded(summ)
            ex.append(exit_s / max(rec, 1) * 1e6)
        fig("exit_time_per_1M_events", statistics.median(ex), "s", "goal <=0.05; unpaced: what the DB thread had"
            " not loaded yet when main returned is loaded at exit")
        # 7b. the same events paced (1000 pairs every 4 ms: 0.25 M pairs/s, what the DB thread keeps
        # up with): the DB is written while the program runs, so the exit is only the last frames,
        # the summary tables and META, whatever the run length
        ex = []
        for _ in range(R):
            _, _, exit_s, summ = b.run(["bench_hgtx", S["exit_pairs"], 1000, 4000], b.env(True))
            ex.append(exit_s)
        fig("exit_time_paced_1M_events", statistics.median(ex), "s",
            "target <=0.05; %d pairs, 1000 every 4 ms, DB streamed" % S["exit_pairs"])
        # 7c. kill -9 at a random moment of a run at 250 k ranges/s (the paced exit's rate): how far
        # the DB is behind what the program had done (its last committed range's progress time
        # to the kill). The DB thread must keep up and commit often enough: goal <= 1 s.
        lags = []
        for _ in range(R):
            lags.append(kill_lag(b, S["kill_rate"], S["kill_at"]))
        fig("kill_db_lag_s", statistics.median(lags), "s", "goal <=1; kill -9 after %.0f-%.0f s at %d ranges/s, "
            "DB passes integrity_check" % (S["kill_at"][0], S["kill_at"][1], S["kill_rate"]))
        # 8. peak RSS: no agent vs agent at N, 10N and 30N events. Growth is bounded by configuration
        # (rings, PROFAGENT_MEDIAN_BUDGET, the writer's 16 MiB page cache), so it must not follow N
        # once N is past the median budget (4M samples = 32 MiB by default).
        small, big, huge = S["rss_pairs"]
        # A run that drops records (a loaded machine: the aggregator gets too little CPU) keeps
        # fewer median samples and a smaller DB page cache, which lowers the small run's peak more
        # than the others': the drop shares are printed so such a figure is read as load, not length.
        rs = {"none": [], "small": [], "big": [], "huge": []}
        drops = {"small": [], "big": [], "huge": []}
        for _ in range(S["rss_runs"]):
            rs["none"].append(b.run_rss(["bench_hgtx", big], b.env(False)))
            for k, n in (("small", small), ("big", big), ("huge", huge)):
                rs[k].append(b.run_rss(["bench_hgtx", n], b.env(True)))
                drops[k].append(b.last_drop)
        m = {k: statistics.median(v) / 1024 for k, v in rs.items()}
        dropped = "records dropped %s" % " / ".join("%.0f%%" % (100 * statistics.median(drops[k]))
                                                     for k in ("small", "big", "huge"))
        fig("rss_growth_vs_none", m["big"] - m["none"], "MiB",
            "%d events; bounded by config (rings, spool, aggregates)" % (2 * big))
        fig("rss_growth_10x_events", m["big"] - m["small"], "MiB", "%d vs %d events; ~0 = independent of length"
            % (2 * big, 2 * small))
        fig("rss_growth_30x_events", m["huge"] - m["small"], "MiB", "%d vs %d events (peak %.0f / %.0f MiB; %s)"
            % (2 * huge, 2 * small, m["huge"], m["small"], dropped))
        # 9. whole-run slowdown of the gemm and multithread samples.
        for name, argv in (("gemm", ["gemm"] + list(S["gemm"])), ("multithread", ["multithread"] + list(S["mt"]))):
            ratios, cpu = [], []
            for _ in range(R):
                tb = b.run(argv, b.env(False, ze=True))[1]
                cb = b.last_cpu
                ta = b.run(argv, b.env(True, ze=True))[1]
                ratios.append(ta / tb)
                cpu.append(b.last_cpu / max(cb, 1e-3))
            fig("slowdown_%s" % name, statistics.median(ratios), "ratio", "wall time, agent vs none")
            # on a loaded 2-core host the wall ratio swings (0.7-1.8 over pairs): the CPU ratio of
            # the same pairs is the steadier figure of what the agent adds
            fig("slowdown_%s_cpu" % name, statistics.median(cpu), "ratio", "CPU time (user + system), same runs")
        # 10. PC sampling: gemm under the agent with EU-stall sampling at the default period vs off;
        #     the aggregator's cost per decoded entry / per sample (bench_pcs_agg, one core).
        argv = ["gemm"] + list(S["gemm"])
        ratios = []
        for _ in range(R):
            toff = b.run(argv, b.env(True, ze=True))[1]
            ton = b.run(argv, b.env(True, ze=True, extra={"PROFAGENT_PC_SAMPLING": "1"}))[1]
            ratios.append(ton / toff)
        fig("slowdown_gemm_pc_sampling", statistics.median(ratios), "ratio", "sampling on vs off, target <=1.03")
        # 11. device metrics: gemm with PROFAGENT_METRICS=ComputeBasic at the default period vs the
        #     agent without; DB bytes per metric sample (one value of one metric in one interval).
        def db_info(path):
            n = 0
            if os.path.exists(path):
                c = sqlite3.connect(path)
                try:
                    n = c.execute("SELECT coalesce(sum(intervals * (SELECT count(*) FROM METRIC_NAMES m"
                                  " WHERE m.deviceId = d.deviceId)), 0) FROM METRIC_DEVICES d").fetchone()[0]
                except sqlite3.Error:
                    n = 0
                c.close()
            return (os.path.getsize(path) if os.path.exists(path) else 0, n)
        ratios, per = [], []
        for _ in range(R):
            voff, toff = b.run(argv, b.env(True, ze=True), inspect=db_info)[:2]
            von, ton = b.run(argv, b.env(True, ze=True, extra={"PROFAGENT_METRICS": "ComputeBasic"}), inspect=db_info)[:2]
            ratios.append(ton / toff)
            if von["inspect"][1]:
                per.append((von["inspect"][0] - voff["inspect"][0]) / von["inspect"][1])
        fig("slowdown_gemm_metrics", statistics.median(ratios), "ratio", "ComputeBasic on vs off, target <=1.03")
        fig("metric_db_bytes_per_sample", statistics.median(per) if per else 0.0, "bytes",
            "DB growth / (intervals x metrics), METRIC_CHUNKS")
        v = [b.run(["bench_pcs_agg", S["pcs_entries"]], b.env(False))[0] for _ in range(R)]
        fig("pcs_agg_ns_per_entry", statistics.median(x["pcs_agg_ns_per_entry"] for x in v), "ns",
            "IP + 9 counts mapped and counted, one core")
        fig("pcs_agg_samples_per_s", statistics.median(x["pcs_agg_samples_per_s"] for x in v), "samples/s",
            "%.2f ns per sample" % statistics.median(x["pcs_agg_ns_per_sample"] for x in v))
        # 12. memory per thread that ever existed: thread_churn creates and joins short threads one
        #     after another (each one HGTX range and three ze calls); the growth of malloc's bytes in
        #     use (heap) and of VmRSS from thread MARK to thread N, per thread in between. Bounded
        #     state must not follow the thread history (goal <= 200 B; RSS also counts the first
        #     touch of fixed-size buffers, the 8 MiB spool pipe, as they fill). DB written at exit.
        mark, n = S["churn"]
        for label, trace, ze in (("all", None, "ze"), ("hgtx", "hgtx", "noze")):
            heap, rss = [], []
            for _ in range(R):
                extra = {"PROFAGENT_DB_COMMIT_MS": "0"}
                if trace:
                    extra["PROFAGENT_TRACE"] = trace
                vals = {}
                out = subprocess.run([os.path.join(b.bin, "thread_churn"), str(n), str(mark), str(n), ze],
                                     env=b.env(True, ze=True, extra=extra), capture_output=True, text=True).stdout
                for k, at, v in re.findall(r"^(heap_b|rss_kib) (\d+) (\d+)$", out, re.M):
                    vals[(k, int(at))] = int(v)
                if len(vals) == 4:
                    heap.append((vals[("heap_b", n)] - vals[("heap_b", mark)]) / (n - mark))
                    rss.append((vals[("rss_kib", n)] - vals[("rss_kib", mark)]) * 1024 / (n - mark))
                for f in glob.glob(os.path.join(b.tmp, "run*")):
                    os.unlink(f)
            fig("thread_heap_bytes_%s" % label, statistics.median(heap) if heap else -1.0, "bytes",
                "heap per thread ever created, threads %d-%d, %s; goal <=200 (before: %s)"
                % (mark, n, "every source" if not trace else "HGTX only", "6100" if not trace else "490"))
            fig("thread_rss_bytes_%s" % label, statistics.median(rss) if rss else -1.0, "bytes",
                "VmRSS per thread, same runs (before: %s)" % ("4100" if not trace else "550"))
    print("\n%-30s %16s  %-9s %s" % ("figure", "value", "unit", "baseline / target"))
    print("-" * 100)
    for name, v, unit, note in rows:
        print("%-30s %16.3f  %-9s %s" % (name, v, unit, note))
    print("\n# goals: figure, value, goal (before): verdict")
    vals = {name: v for name, v, _, _ in rows}
    for line in goal_lines(vals):
        print(line)
    if "tsc_read_ns" in vals:
        # the clock is read once per side: a ze call and an HGTX push+pop each pay two reads, a
        # floor under those two goals that no change of the agent removes
        print("(floor of ze_call_agent_callbacks_ns and hgtx_pushpop_added_ns: two TSC reads = %.1f ns here;"
              " one vDSO clock_gettime = %.1f ns)" % (2 * vals["tsc_read_ns"], vals.get("clock_gettime_ns", 0.0)))
    print("\n# machine-readable: name value unit (%d runs per figure, %.0f s)" % (R, time.monotonic() - t_start))
    for name, v, unit, _ in rows:
        print("%s %.3f %s" % (name, v, unit))


if __name__ == "__main__":
    main()
