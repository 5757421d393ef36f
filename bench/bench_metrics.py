#!/usr/bin/env python3
"""bench_metrics.py - cost of device metrics (PROFAGENT_METRICS=ComputeBasic at the default period)
on samples/gemm: whole-process wall and CPU time, metrics on vs the agent without them, the two run
alternately (A B B A A B ...), each figure the median of the per-pair ratios; what the DB spends per
metric sample (one value of one metric in one interval); and the CPU of the exit summary's
busiest-ranges pass on the last run's DB (bench_dm_exit).

    python3 bench/bench_metrics.py [--build build] [--runs 9] [ITER SIZE]   (default gemm 300 128)
"""
import argparse
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time


def run(build, argv, tmp, metrics, seq):
    """(wall s, cpu s, peak RSS KiB, DB path) of one whole process."""
    db = os.path.join(tmp, "run%d.db" % seq)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFAGENT_") and k != "LD_PRELOAD"}
    env.update(ZE_ENABLE_ALT_DRIVERS=os.path.abspath(os.path.join(build, "lib", "libze_simdev.so")),
               LD_PRELOAD=os.path.abspath(os.path.join(build, "lib", "libprofagent.so")), PROFAGENT_OUTPUT=db,
               PROFAGENT_SUMMARY="file:" + os.path.join(tmp, "run%d.txt" % seq))
    if metrics:
        env["PROFAGENT_METRICS"] = "ComputeBasic"
    t0 = time.monotonic()
    p = subprocess.Popen([os.path.join(build, "bin", argv[0])] + argv[1:], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    if status != 0:
        sys.exit("bench_metrics: %s failed (status %d): %s" % (" ".join(argv), status, err[-2000:]))
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss, db


def db_figures(db):
    """(file bytes, metric samples, packed data bytes, intervals, chunks)."""
    c = sqlite3.connect(db)
    try:
        samples, data, nint, chunks = c.execute(
            "SELECT coalesce(sum(intervals * nmetrics), 0), coalesce(sum(length(data)), 0),"
            " coalesce(sum(intervals), 0), count(*) FROM METRIC_CHUNKS").fetchone()
    except sqlite3.Error:
        samples = data = nint = chunks = 0
    c.close()
    return os.path.getsize(db), samples, data, nint, chunks


def dm_exit_pass(build, db):
    """bench_dm_exit's lines on a metrics DB: the exit summary's busiest-ranges pass alone (CPU ms)."""
    prog = os.path.join(build, "bin", "bench_dm_exit")
    if not os.path.exists(prog):
        return []
    r = subprocess.run([prog, db, "5"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return [l for l in r.stdout.splitlines() if l.startswith("dm_exit_")]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("gemm", nargs="*", default=["300", "128"], help="ITER SIZE of samples/gemm")
    a = ap.parse_args()
    argv = ["gemm"] + a.gemm
    wr, cr, per, dper, rss_on, rss_off, nints, nchunks = [], [], [], [], [], [], [], []
    exit_pass = []
    with tempfile.TemporaryDirectory(prefix="profagent-bench-dm-") as tmp:
        run(a.build, argv, tmp, True, 0)  # warm-up (page cache, loader)
        for i in range(a.runs):
            if i % 2 == 0:  # which one runs first alternates too (A B B A ...): no order bias
                w0, c0, r0, db0 = run(a.build, argv, tmp, False, 2 * i + 1)
                w1, c1, r1, db1 = run(a.build, argv, tmp, True, 2 * i + 2)
            else:
                w1, c1, r1, db1 = run(a.build, argv, tmp, True, 2 * i + 2)
                w0, c0, r0, db0 = run(a.build, argv, tmp, False, 2 * i + 1)
            size0 = os.path.getsize(db0)
            size1, samples, data, nint, chunks = db_figures(db1)
            wr.append(w1 / w0)
            cr.append(c1 / c0)
            rss_off.append(r0)
            rss_on.append(r1)
            nints.append(nint)
            nchunks.append(chunks)
            if samples:
                per.append((size1 - size0) / samples)
                dper.append(data / samples)
            print("  run %d: wall %.3f / %.3f s = %.3f, cpu %.3f / %.3f s = %.3f, %d intervals in %d chunks"
                  % (i + 1, w1, w0, w1 / w0, c1, c0, c1 / c0, nint, chunks), file=sys.stderr, flush=True)
            if i == a.runs - 1:
                exit_pass = dm_exit_pass(a.build, db1)
            for f in os.listdir(tmp):
                os.unlink(os.path.join(tmp, f))
    med = statistics.median
    print("gemm %s, %d alternating pairs (metrics on / off, the agent in both), medians of per-pair ratios:"
          % (" ".join(a.gemm), a.runs))
    print("slowdown_gemm_metrics_wall %.3f ratio (min %.3f max %.3f; target <= 1.03)" % (med(wr), min(wr), max(wr)))
    print("slowdown_gemm_metrics_cpu %.3f ratio (min %.3f max %.3f)" % (med(cr), min(cr), max(cr)))
    print("metric_intervals %d (chunks %d)" % (med(nints), med(nchunks)))
    print("metric_db_bytes_per_sample %.3f bytes (DB file growth / (intervals x metrics))" % (med(per) if per else 0))
    print("metric_data_bytes_per_sample %.3f bytes (METRIC_CHUNKS.data / (intervals x metrics))"
          % (med(dper) if dper else 0))
    print("peak_rss_metrics_kib %d (without %d)" % (med(rss_on), med(rss_off)))
    for l in exit_pass:
        print(l)


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    main()
