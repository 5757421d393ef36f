#!/usr/bin/env python3
"""bench_export.py - `profagent export` throughput: events/s and output bytes/event, JSON and
Perfetto protobuf, on a DB of N events made from a real samples/multithread session (mkbig.py).

usage: bench_export.py [--build build] [--events N] [--runs R]
Events = trace rows of the DB (API calls, device operations, OS calls, ranges, memory calls), the
same count for both formats; rates are per CPU second of the export process (user + sys: the
machine is shared) and per wall second."""
import argparse, os, resource, subprocess, sys, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("--build", default="build")
ap.add_argument("--events", type=int, default=1000000)
ap.add_argument("--runs", type=int, default=3)
a = ap.parse_args()
B = os.path.abspath(a.build)
PA = os.path.join(B, "bin", "profagent")
MKBIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration", "export", "mkbig.py")
tmp = tempfile.mkdtemp(prefix="bench_export_")
src = os.path.join(tmp, "mt.db")
env = dict(os.environ, ZE_ENABLE_ALT_DRIVERS=os.path.join(B, "lib", "libze_simdev.so"),
           LD_PRELOAD=os.path.join(B, "lib", "libprofagent.so"), PROFAGENT_OUTPUT=src, PROFAGENT_SUMMARY="none")
subprocess.run([os.path.join(B, "bin", "multithread"), "4", "20"], env=env, check=True, capture_output=True)
big = os.path.join(tmp, "big.db")
nev = int(subprocess.run([sys.executable, MKBIG, src, big, str(a.events)], check=True, capture_output=True,
                         text=True).stdout)
print("export benchmark: %d events (DB %.1f MB)" % (nev, os.path.getsize(big) / 1e6))
for fmt, ext in (("perfetto", "json"), ("perfetto-proto", "pftrace")):
    cpu, wall = [], []
    out = os.path.join(tmp, "t." + ext)
    for _ in range(a.runs):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        subprocess.run([PA, "export", "--format", fmt, big, "-o", out, "--force-overwrite"], check=True,
                       capture_output=True)
        wall.append(time.monotonic() - t0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    size = os.path.getsize(out)
    print("  %-8s %9.0f events/s per CPU s (best of %d: %.2f s CPU), %9.0f events/s wall (%.2f s), %.1f bytes/event, %.1f MB"
          % (ext, nev / min(cpu), a.runs, min(cpu), nev / min(wall), min(wall), size / nev, size / 1e6))
for f in os.listdir(tmp):
    os.unlink(os.path.join(tmp, f))
os.rmdir(tmp)
