#!/usr/bin/env python3
"""test_ze_barrier_oom.py - the agent appends a barrier of its own after an application's barrier
to signal the application's event; when the driver refuses it (out of host memory, injected with
simdev's SIMDEV_FAULT_LIST_APPENDS) the application's event is still signalled, never left for the
application to wait on for ever. Lists immediate and regular, both interception paths; the
refused case (every append after the application's fails: the agent's barrier and its signal
command) 20 times per list kind, each run bounded; 2 appends allowed (the agent's barrier taken:
no fallback, no warning), only barriers refused (the agent's signal command taken, no warning) and
the run without the agent once each.
usage: test_ze_barrier_oom.py BUILD_DIR"""
import os, subprocess, sys, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "spine"))
from spine_util import FAILS, check, preload  # noqa: E402

B = sys.argv[1]
APP = os.path.join(B, "tests", "ze", "ze_barrier_oom")
AGENT = os.path.join(B, "lib", "libprofagent.so")
SIMDEV = os.path.join(B, "lib", "libze_simdev.so")
WORK = tempfile.mkdtemp(prefix="pa_barrier_oom_")
WARN = "the application's event was signalled from the host"


def run(mode, appends, agent=True, path="auto", fault="SIMDEV_FAULT_LIST_APPENDS"):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFAGENT_")}
    env.update(ZE_ENABLE_ALT_DRIVERS=SIMDEV, ASAN_OPTIONS="detect_leaks=0")
    env[fault] = str(appends)
    if agent:
        env.update(LD_PRELOAD=preload(AGENT), PROFAGENT_OUTPUT=os.path.join(WORK, "b-%p.db"),
                   PROFAGENT_SUMMARY="none", PROFAGENT_ZE_INTERCEPT=path)
    try:
        p = subprocess.run([APP, mode], env=env, capture_output=True, text=True, timeout=30)
        return p.returncode, p.stdout.strip(), p.stderr
    except subprocess.TimeoutExpired:
        return None, "timeout", ""


for mode in ("immediate", "regular"):
    rc, out, err = run(mode, 1, agent=False)
    check(rc == 0 and out == "barrier event: 0x0", "%s, no agent, 1 append allowed: %s (exit %s)" % (mode, out, rc))
    bad = []
    for i in range(20):
        path = ("entry", "tracer")[i % 2]
        rc, out, err = run(mode, 1, path=path)
        warns = [l for l in err.splitlines() if WARN in l]
        if rc != 0 or out != "barrier event: 0x0" or len(warns) != 1:
            bad.append("run %d (%s): %s, exit %s, %d warnings %s" % (i + 1, path, out, rc, len(warns), err[-200:]))
    check(not bad, "%s, every append after the application's refused: event signalled, one warning, 20 runs%s"
          % (mode, ("; " + "; ".join(bad[:3])) if bad else ""))
    for path in ("entry", "tracer"):
        rc, out, err = run(mode, 2, path=path)
        check(rc == 0 and out == "barrier event: 0x0" and WARN not in err,
              "%s (%s), 2 appends allowed: the agent's barrier signals the event, no warning: %s, exit %s %s"
              % (mode, path, out, rc, err[-200:]))
        # only the agent's barrier refused: its signal command is taken instead (no host signal)
        rc, out, err = run(mode, 1, path=path, fault="SIMDEV_FAULT_LIST_BARRIERS")
        check(rc == 0 and out == "barrier event: 0x0" and WARN not in err,
              "%s (%s), only the agent's barrier refused: a signal command signals the event, no warning: %s,"
              " exit %s %s" % (mode, path, out, rc, err[-200:]))
sys.exit(1 if FAILS else 0)
