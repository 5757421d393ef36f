#!/usr/bin/env python3
"""exit_queued.py AGENT PROG DBDIR - qa3 defect 8: an app exiting with 5 s of device work queued.
Asserts the agent's exit does not wait for that work (the process ends well before 2.5 s, the
old wait of PROFAGENT_EXIT_TIMEOUT_MS/2) and that the summary never blames the loss on 'no ring:
out of memory'; the DB is written."""
import os, subprocess, sys, time

agent, prog, dbdir = sys.argv[1:4]
db = os.path.join(dbdir, "exit_queued.db")
if os.path.exists(db):
    os.unlink(db)
env = dict(os.environ, LD_PRELOAD=agent, PROFAGENT_OUTPUT=db)
t0 = time.monotonic()
p = subprocess.run([prog], env=env, capture_output=True, text=True, timeout=60)
dt = time.monotonic() - t0
out = p.stdout + p.stderr
fails = []
if p.returncode != 0:
    fails.append("rc %d" % p.returncode)
if dt >= 2.0:
    fails.append("exit took %.2f s (bounded detach wait is 0.2 s)" % dt)
if "no ring: out of memory" in out:
    fails.append("misleading 'no ring: out of memory' cause in the summary")
if not os.path.exists(db):
    fails.append("no DB written")
if fails:
    print(out)
    print("FAIL: " + "; ".join(fails))
    sys.exit(1)
print("PASS (%.2f s)" % dt)
