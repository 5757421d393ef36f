#!/usr/bin/env python3
"""run_sigroute.py - a signal every application thread blocks stays pending under the agent, for
each of its thread kinds: aggregator + DB thread (defaults), device metric readers
(PROFAGENT_METRICS=ComputeBasic), PC-sampling readers (PROFAGENT_PC_SAMPLING=1); 3 runs each,
each bounded by a timeout (spine_sigroute.c says what the program checks).
usage: run_sigroute.py BUILD_DIR"""
import os, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spine_util import FAILS, check, preload

B = sys.argv[1]
APP = os.path.join(B, "tests", "spine", "spine_sigroute")
AGENT = os.path.join(B, "lib", "libprofagent.so")
SIMDEV = os.path.join(B, "lib", "libze_simdev.so")
CONFIGS = [("defaults", {}), ("metrics", {"PROFAGENT_METRICS": "ComputeBasic"}),
           ("pc-sampling", {"PROFAGENT_PC_SAMPLING": "1"})]
d = tempfile.mkdtemp(prefix="pa_sigroute_")
for name, extra in CONFIGS:
    for i in range(3):
        env = dict(os.environ, ZE_ENABLE_ALT_DRIVERS=SIMDEV, LD_PRELOAD=preload(AGENT),
                   PROFAGENT_OUTPUT=os.path.join(d, "%s-%d.db" % (name, i)), PROFAGENT_SUMMARY="none",
                   ASAN_OPTIONS="detect_leaks=0", **extra)
        try:
            p = subprocess.run([APP], env=env, capture_output=True, text=True, timeout=60)
            out, rc = p.stdout.strip(), p.returncode
        except subprocess.TimeoutExpired:
            out, rc = "timeout", None
        check(rc == 0 and out == "sigroute: OK", "%s run %d: %s (exit %s)" % (name, i, out, rc))
sys.exit(1 if FAILS else 0)
