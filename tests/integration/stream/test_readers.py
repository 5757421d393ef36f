#!/usr/bin/env python3
"""test_readers.py - readers of a fresh DB (medians left to the first reader): several `profagent stats`
started at once all succeed (no "database is locked") and exactly one prepares the DB; while one is
in the middle of its preparation (stopped there with SIGSTOP: no timing), a sqlite3 reader and a second
`profagent stats` read beside it (the DB as before the preparation) and the second prints the same
report, without waiting for it (no "database is locked"); with
another program holding a read transaction, stats waits once (bounded ~2 s), says in one line that the
preparation was skipped, and prints the same report as on a prepared DB; a DB a live process is still
streaming is named so (its pid), one killed while writing as died.
usage: test_readers.py BUILD_DIR"""
import fcntl, os, shutil, signal, sqlite3, subprocess, sys, tempfile, time

B = sys.argv[1]
CLI = os.path.join(B, "bin", "profagent")
AGENT = os.path.join(B, "lib", "libprofagent.so")
APP = os.path.join(B, "tests", "stream", "stream_app")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pa_itest import FAILS as fails, check, preload  # noqa: E402


def pending(db):
    c = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    v = c.execute("SELECT value FROM META WHERE key = 'medians_pending'").fetchone()
    c.close()
    return v[0] if v else None


d = tempfile.mkdtemp(prefix="pa_readers_")
pend = os.path.join(d, "pend.db")
env = dict(os.environ, PROFAGENT_OUTPUT=pend, PROFAGENT_MEDIAN_BUDGET="1K", PROFAGENT_RING_SIZE="64M",
           PROFAGENT_SUMMARY="none", LD_PRELOAD=preload(AGENT), ASAN_OPTIONS="detect_leaks=0")
p = subprocess.run([APP, "progress", "100000", "2000000"], env=env, capture_output=True, text=True, timeout=240)
check(p.returncode == 0 and pending(pend) == 1, "stream_app: rc %d, medians_pending %s: %s"
      % (p.returncode, pending(pend), p.stderr[-500:]))

# the report on a prepared copy: what every reader must print
ref_db = os.path.join(d, "ref.db")
shutil.copy(pend, ref_db)
ref = subprocess.run([CLI, "stats", "-r", "hgtx_sum", ref_db], capture_output=True, text=True, timeout=120)
check(ref.returncode == 0 and ref.stdout.count("\n") > 1 and pending(ref_db) == 0,
      "reference report: rc %d, medians_pending %s, %r" % (ref.returncode, pending(ref_db), ref.stderr))

# ---- 8 readers started at once on a fresh copy, 3 rounds: every one succeeds ----
bad = []
for rnd in range(3):
    r = os.path.join(d, "r.db")
    shutil.copy(pend, r)
    procs = [subprocess.Popen([CLI, "stats", "-r", "hgtx_sum", r], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(8)]
    for q in procs:
        out, err = q.communicate(timeout=120)
        if q.returncode != 0 or err or out != ref.stdout:
            bad.append((rnd, q.returncode, err.strip()[:200]))
    check(pending(r) == 0, "round %d: medians_pending %s after 8 readers" % (rnd, pending(r)))
check(not bad, "concurrent readers: %d of 24 failed: %s" % (len(bad), bad[:3]))

# ---- a reader in the middle of its preparation (stopped there): others read beside it ----
def prep_locked(path):
    """True while a process holds the preparers' lock (flock on the DB file)."""
    with open(path, "rb") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
        return False


def header_wal(path):
    with open(path, "rb") as f:
        h = f.read(20)
    return h[18] == 2 and h[19] == 2


def readable(path):
    try:
        c = sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=0)
        c.execute("SELECT count(*) FROM META").fetchone()
        c.close()
        return True
    except sqlite3.Error:
        return False


def probe(path):
    """(rows, medians_pending) read at once by a sqlite3 reader, or (None, error)."""
    try:
        c = sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=0)
        n = c.execute("SELECT count(*) FROM HGTX_RANGES").fetchone()[0]
        mp = c.execute("SELECT value FROM META WHERE key = 'medians_pending'").fetchone()[0]
        c.close()
        return n, mp
    except sqlite3.Error as e:
        return None, str(e)


# stopped at a random point of its work: a point inside the preparation proper (WAL mode, the lock held,
# nothing committed yet: the reader still sees medians_pending 1) is kept; one in its last instants
# (committed, or switching the journal mode back) is let go and tried again on a fresh copy
caught, tries = False, []
for attempt in range(8):
    r = os.path.join(d, "mid%d.db" % attempt)
    shutil.copy(pend, r)
    prep = subprocess.Popen([CLI, "stats", "-r", "hgtx_sum", r], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    n, mp = None, "not caught"
    for _ in range(4000):  # the preparer takes the lock, then puts the DB in WAL mode and writes
        if prep.poll() is not None:
            break
        if prep_locked(r) and header_wal(r) and readable(r):  # past the switch to WAL (its brief exclusive lock)
            prep.send_signal(signal.SIGSTOP)
            if prep_locked(r) and header_wal(r):
                n, mp = probe(r)
            break
        time.sleep(0.005)
    caught = bool(n) and mp == 1
    tries.append((n, mp))
    if caught:
        t0 = time.monotonic()
        try:
            s = subprocess.run([CLI, "stats", "-r", "hgtx_sum", r], capture_output=True, text=True, timeout=60)
            took = time.monotonic() - t0
            check(s.returncode == 0 and s.stdout == ref.stdout and s.stderr == "",
                  "mid: a second stats prints the same report beside the preparation: rc %d, %r"
                  % (s.returncode, s.stderr))
            # it never waits for the preparation (stopped for good here) to end
            check(prep_locked(r), "mid: the preparation still held its lock when the second stats ended (%.1f s)"
                  % took)
        except subprocess.TimeoutExpired:
            check(False, "mid: a second stats waited > 60 s for the stopped preparation")
    if prep.poll() is None:
        prep.send_signal(signal.SIGCONT)
    out, err = prep.communicate(timeout=120)
    check(prep.returncode == 0 and out == ref.stdout and err == "", "mid: the preparer's own report: rc %d, %r"
          % (prep.returncode, err))
    check(pending(r) == 0, "mid: the preparation stored the medians (pending %s)" % pending(r))
    check(not header_wal(r) and not os.path.exists(r + "-wal"), "mid: the prepared DB is one plain file again")
    if caught:
        break
check(caught, "mid: a sqlite3 reader read at once beside a preparation stopped inside its work: %s" % tries)

# ---- another program holds a read transaction: one bounded wait, one note, the same report ----
r = os.path.join(d, "held.db")
shutil.copy(pend, r)
hold = sqlite3.connect(r, isolation_level=None)
hold.execute("BEGIN")
hold.execute("SELECT count(*) FROM META").fetchone()
t0 = time.monotonic()
s = subprocess.run([CLI, "stats", "-r", "hgtx_sum", r], capture_output=True, text=True, timeout=120)
took = time.monotonic() - t0
hold.execute("COMMIT")
hold.close()
lines = s.stderr.splitlines()
check(s.returncode == 0 and s.stdout == ref.stdout, "held: rc %d, report differs: %r vs %r"
      % (s.returncode, s.stdout[:300], ref.stdout[:300]))
check(len(lines) == 1 and "skipped" in lines[0] and "held.db" in lines[0],
      "held: want one note saying the preparation was skipped, got %r" % lines)
check(took < 6.0, "held: stats took %.1f s (want one bounded wait of ~2 s)" % took)
check(pending(r) == 1, "held: medians_pending %s (the skipped preparation stores nothing)" % pending(r))
# released: the next reader prepares it
s = subprocess.run([CLI, "stats", "-r", "hgtx_sum", r], capture_output=True, text=True, timeout=120)
check(s.returncode == 0 and s.stderr == "" and pending(r) == 0, "after release: rc %d, pending %s, %r"
      % (s.returncode, pending(r), s.stderr))

# ---- a DB still being streamed by a live process: named so, not "the process died" ----
live = os.path.join(d, "live.db")
envl = dict(env, PROFAGENT_OUTPUT=live)
envl.pop("PROFAGENT_MEDIAN_BUDGET")
app = subprocess.Popen([APP, "progress", "100000000", "100000"], env=envl, stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
try:
    app.stdout.readline()
    seen = None
    for _ in range(200):
        try:
            c = sqlite3.connect("file:%s?mode=ro" % live, uri=True)
            seen = c.execute("SELECT value FROM META WHERE key = 'pid'").fetchone()
            c.close()
        except sqlite3.Error:
            seen = None
        if seen:
            break
        time.sleep(0.05)
    s = subprocess.run([CLI, "stats", "-r", "hgtx_sum", live], capture_output=True, text=True, timeout=120)
    want = "still being written by pid %d" % app.pid
    check(s.returncode == 0 and want in s.stderr and "died" not in s.stderr,
          "live DB (META pid %s): want %r, got %r" % (seen, want, s.stderr))
finally:
    app.kill()
    app.wait()
s = subprocess.run([CLI, "stats", "-r", "hgtx_sum", live], capture_output=True, text=True, timeout=120)
check(s.returncode == 0 and "died while writing" in s.stderr, "killed: %r" % s.stderr)

print("FAIL" if fails else "PASS", len(fails))
sys.exit(1 if fails else 0)
