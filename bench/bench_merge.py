#!/usr/bin/env python3
"""bench_merge.py - `profagent merge` of two DBs of N rows each: rows/s and peak RSS.

The two inputs are two real samples/multithread sessions (two processes, so pids, strings and
devices are remapped as in a real job), each grown to N trace rows by tests/integration/export/mkbig.py.
Rows = every row of every table of the two inputs; rates per wall second and per CPU second (user +
sys of the merge process; the machine is shared), peak RSS from wait4 of the merge process alone.

usage: bench_merge.py [--build build] [--rows N] [--runs R]   prints `name value unit` lines"""
import argparse, os, sqlite3, statistics, subprocess, sys, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("--build", default="build")
ap.add_argument("--rows", type=int, default=1000000)
ap.add_argument("--runs", type=int, default=3)
a = ap.parse_args()
B = os.path.abspath(a.build)
PA = os.path.join(B, "bin", "profagent")
MKBIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration", "export", "mkbig.py")
tmp = tempfile.mkdtemp(prefix="bench_merge_")
inputs = []
for i in range(2):
    src = os.path.join(tmp, "mt%d.db" % i)
    env = dict(os.environ, ZE_ENABLE_ALT_DRIVERS=os.path.join(B, "lib", "libze_simdev.so"),
               LD_PRELOAD=os.path.join(B, "lib", "libprofagent.so"), PROFAGENT_OUTPUT=src, PROFAGENT_SUMMARY="none",
               PROFAGENT_RANK=str(i))
    subprocess.run([os.path.join(B, "bin", "multithread"), "4", "20"], env=env, check=True, capture_output=True)
    big = os.path.join(tmp, "big%d.db" % i)
    subprocess.run([sys.executable, MKBIG, src, big, str(a.rows)], check=True, capture_output=True)
    inputs.append(big)


def rows(db):
    c = sqlite3.connect(db)
    t = [r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    n = sum(c.execute('SELECT count(*) FROM "%s"' % x).fetchone()[0] for x in t)
    c.close()
    return n


nrows = sum(rows(d) for d in inputs)
mb = sum(os.path.getsize(d) for d in inputs) / 1e6
print("merge benchmark: 2 inputs, %d rows (%.1f MB)" % (nrows, mb))
wall, cpu, rss = [], [], []
out = os.path.join(tmp, "all.db")
for r in range(a.runs):
    if os.path.exists(out):
        os.unlink(out)
    t0 = time.monotonic()
    p = subprocess.Popen([PA, "merge", "-o", out] + inputs)
    _, status, ru = os.wait4(p.pid, 0)
    wall.append(time.monotonic() - t0)
    if status != 0:
        sys.exit("merge failed: status %d" % status)
    cpu.append(ru.ru_utime + ru.ru_stime)
    rss.append(ru.ru_maxrss / 1024.0)
merged = rows(out)
print("merge_rows %d rows (merged DB: %d rows, %.1f MB)" % (nrows, merged, os.path.getsize(out) / 1e6))
print("merge_rows_per_s %.0f rows/s (wall, median of %d)" % (nrows / statistics.median(wall), a.runs))
print("merge_rows_per_cpu_s %.0f rows/s (user+sys)" % (nrows / statistics.median(cpu)))
print("merge_wall %.2f s" % statistics.median(wall))
print("merge_peak_rss %.1f MiB" % max(rss))
for f in os.listdir(tmp):
    os.unlink(os.path.join(tmp, f))
os.rmdir(tmp)
