#!/usr/bin/env python3
"""check_bench_smoke.py - runs bench/run_bench.py --smoke and checks that every figure of
issue 7 is printed as a `name value unit` line with a finite number (values are not judged:
benchmarks are not timed tests). usage: check_bench_smoke.py BUILD_DIR SOURCE_DIR"""
import math
import subprocess
import sys

EXPECTED = [
    ("ze_call_added_ns", "ns"), ("ze_call_tracing_layer_ns", "ns"), ("ze_call_agent_callbacks_ns", "ns"),
    ("ze_call_tracer_path_added_ns", "ns"), ("slowdown_ze_calls_1M", "ratio"), ("slowdown_ze_calls_1M_cpu", "ratio"), ("tsc_read_ns", "ns"),
    ("clock_gettime_ns", "ns"),
    ("hgtx_pushpop_added_ns", "ns"), ("hgtx_hostctr_added_ns", "ns"), ("itt_task_added_ns", "ns"),
    ("osrt_call_added_ns", "ns"),
    ("mem_alloc_added_ns_live10", "ns"), ("mem_alloc_added_ns_live1k", "ns"),
    ("agg_drain_rate", "events/s"), ("agg_drain_rate_ze", "events/s"), ("mem_sym_ns_per_unique_stack", "ns"), ("db_write_rate", "rows/s"), ("db_write_cpu_rate", "rows/s"),
    ("db_sqlite_ceiling_cpu_rate", "rows/s"), ("db_sqlite_ceiling_wal_cpu_rate", "rows/s"), ("db_write_vs_ceiling", "ratio"),
    ("kill_db_lag_s", "s"),
    ("spool_bytes_per_event", "bytes"),
    ("spool_compress_rate", "MB/s"), ("spool_compress_event_rate", "events/s"),
    ("exit_time_per_1M_events", "s"), ("exit_time_paced_1M_events", "s"), ("rss_growth_vs_none", "MiB"), ("rss_growth_10x_events", "MiB"), ("rss_growth_30x_events", "MiB"),
    ("slowdown_gemm", "ratio"), ("slowdown_multithread", "ratio"), ("slowdown_gemm_cpu", "ratio"),
    ("slowdown_multithread_cpu", "ratio"),
    ("slowdown_gemm_pc_sampling", "ratio"), ("slowdown_gemm_metrics", "ratio"), ("metric_db_bytes_per_sample", "bytes"),
    ("pcs_agg_ns_per_entry", "ns"), ("pcs_agg_samples_per_s", "samples/s"),
    ("thread_heap_bytes_all", "bytes"), ("thread_rss_bytes_all", "bytes"), ("thread_heap_bytes_hgtx", "bytes"),
    ("thread_rss_bytes_hgtx", "bytes"),
    ("exit_ze_calls_1M_gone_inline", "s"), ("exit_ze_calls_1M_db_complete_inline", "s"),
    ("exit_ze_calls_1M_gone_auto", "s"), ("exit_ze_calls_1M_db_complete_auto", "s"),
    ("exit_ze_calls_1M_cpu_inline", "s"), ("exit_ze_calls_1M_cpu_auto", "s"),
    ("slowdown_ze_calls_1M_cpu_with_finisher", "ratio"),
]

# every figure of the overhead goal table gets a verdict line
GOAL_FIGURES = ["slowdown_ze_calls_1M", "slowdown_ze_calls_1M_cpu", "exit_time_per_1M_events", "exit_time_paced_1M_events", "ze_call_agent_callbacks_ns", "ze_call_added_ns",
                "hgtx_pushpop_added_ns", "agg_drain_rate", "db_write_rate", "kill_db_lag_s", "rss_growth_30x_events",
                "slowdown_multithread", "slowdown_multithread_cpu", "slowdown_gemm", "slowdown_gemm_cpu",
                "exit_ze_calls_1M_gone_auto"]


def main():
    build, src = sys.argv[1], sys.argv[2]
    p = subprocess.run([sys.executable, src + "/bench/run_bench.py", "--build", build, "--smoke"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    if p.returncode != 0:
        sys.exit("run_bench.py --smoke failed (%d):\n%s\n%s" % (p.returncode, p.stdout, p.stderr))
    # the goal table: one verdict line per goal figure
    goals = p.stdout.split("# goals:")[-1].split("# machine-readable")[0].splitlines()[1:]
    verdicts = {l.split()[0]: l for l in goals if l.strip()}
    lines = p.stdout.split("# machine-readable")[-1].splitlines()[1:]
    got = {}
    for line in lines:
        f = line.split()
        if len(f) == 3:
            got[f[0]] = (f[1], f[2])
    bad = []
    for name, unit in EXPECTED:
        if name not in got:
            bad.append("missing figure %s" % name)
            continue
        value, u = got[name]
        try:
            ok = math.isfinite(float(value))
        except ValueError:
            ok = False
        if not ok or u != unit:
            bad.append("%s: value %r unit %r (want a number in %s)" % (name, value, u, unit))
    for name in GOAL_FIGURES:
        line = verdicts.get(name, "")
        if not (line.endswith(": met") or ": missed by " in line):
            bad.append("goal %s: no 'met' / 'missed by' verdict line (%r)" % (name, line))
    if len(got) != len(EXPECTED):
        bad.append("%d figure lines, expected %d: %s" % (len(got), len(EXPECTED), sorted(got)))
    if bad:
        sys.exit("bench smoke:\n  " + "\n  ".join(bad) + "\n--- output:\n" + p.stdout)
    print("bench smoke: %d figures printed" % len(got))


if __name__ == "__main__":
    main()
