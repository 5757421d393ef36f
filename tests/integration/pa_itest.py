"""pa_itest.py - what the `profagent export` and `profagent report` tests share: ok/FAIL
bookkeeping, the agent's LD_PRELOAD value, running a sample under the agent on the software
device, report CSVs, and the checks every CLI output command must pass (a FIFO or a device as -o
written in place, a write error reported, bad input: one message and the documented status)."""
import csv, io, os, stat, subprocess, sys

FAILS = []


def check(cond, what):
    """Records a failure (printed on stderr, kept in FAILS for the exit status); returns cond."""
    if not cond:
        FAILS.append(what)
        print("FAIL:", what, file=sys.stderr)
    return cond


def preload(lib):
    """LD_PRELOAD for `lib`: libasan first when lib was built with -fsanitize=address."""
    out = subprocess.run(["ldd", lib], capture_output=True, text=True).stdout
    return ":".join([l.split("=>")[1].split()[0] for l in out.splitlines() if "libasan" in l and "=>" in l] + [lib])


def agent_env(build, db, **extra):
    """The environment of a run under the agent on simdev: the caller's without any PROFAGENT_*
    variable (nor an ITT collector), the agent preloaded, its DB written to db, then `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFAGENT_") and k != "INTEL_LIBITTNOTIFY64"}
    env.update(ZE_ENABLE_ALT_DRIVERS=os.path.join(build, "lib", "libze_simdev.so"),
               LD_PRELOAD=preload(os.path.join(build, "lib", "libprofagent.so")), ASAN_OPTIONS="detect_leaks=0",
               PROFAGENT_OUTPUT=db)
    env.update(extra)
    return env


def on_one_cpu(argv):
    """argv run on one CPU (taskset), where the aggregator runs only when the recording thread
    yields: a small ring fills within the thread's time slice whatever the machine's speed."""
    if hasattr(os, "sched_getaffinity") and os.sched_getaffinity(0):
        return ["taskset", "-c", str(min(os.sched_getaffinity(0)))] + list(argv)
    return list(argv)


def run_sample(build, prog, args, db, timeout=120):
    """Runs build/bin/prog under the agent on simdev, its DB written to db (no summary)."""
    env = dict(os.environ, ZE_ENABLE_ALT_DRIVERS=os.path.join(build, "lib", "libze_simdev.so"),
               LD_PRELOAD=preload(os.path.join(build, "lib", "libprofagent.so")), ASAN_OPTIONS="detect_leaks=0",
               PROFAGENT_OUTPUT=db, PROFAGENT_SUMMARY="none")
    return subprocess.run([os.path.join(build, "bin", prog)] + list(args), env=env, capture_output=True,
                          timeout=timeout)


def stats_csv(pa, db, rep, timeout=120):
    """`profagent stats -r rep db` as a list of dicts; None when it failed."""
    p = subprocess.run([pa, "stats", "-r", rep, db], capture_output=True, timeout=timeout)
    if p.returncode:
        return None
    return list(csv.DictReader(io.StringIO(p.stdout.decode("utf-8", "replace"))))


def to_fifo(pa, work, args):
    """Runs `pa args --force-overwrite -o FIFO` with a reader on the FIFO. Returns the process,
    whether the FIFO is still a FIFO (not replaced through a temporary + rename) and the bytes read."""
    fifo = os.path.join(work, "out.fifo")
    if os.path.exists(fifo):
        os.unlink(fifo)
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", fifo], stdout=subprocess.PIPE)
    p = subprocess.run([pa, *args, "--force-overwrite", "-o", fifo], capture_output=True, timeout=60)
    if p.returncode != 0 or not stat.S_ISFIFO(os.stat(fifo).st_mode):
        reader.kill()  # nothing will open the FIFO for writing
    data = reader.communicate(timeout=60)[0]
    return p, stat.S_ISFIFO(os.stat(fifo).st_mode), data


def check_dev_full(pa, args):
    """`pa args -o /dev/full`: exit 1 with the write error."""
    p = subprocess.run([pa, *args, "-o", "/dev/full"], capture_output=True, timeout=60)
    check(p.returncode == 1 and b"No space left on device" in p.stderr,
          "%s -o /dev/full: write error, rc=%d %r" % (args[0], p.returncode, p.stderr))


def check_bad_input(pa, cases):
    """cases: (args, exit status, bytes the one stderr line must contain)."""
    for args, status, needle in cases:
        p = subprocess.run([pa, *args], capture_output=True, timeout=60)
        check(p.returncode == status and needle in p.stderr and len(p.stderr.splitlines()) == 1,
              "%s: rc=%d %r" % (" ".join(args), p.returncode, p.stderr))


def finisher_pid(db):
    """The pid of the finisher process completing db (session/handoff.c), holding the flock of
    "<db>.finishing"; -1 when it holds it before its pid is written; 0 when none runs."""
    import fcntl
    try:
        fd = os.open(db + ".finishing", os.O_RDONLY)
    except OSError:
        return 0
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return 0
    except OSError:
        txt = os.pread(fd, 32, 0).decode(errors="replace").strip()
        return int(txt) if txt.isdigit() else -1
    finally:
        os.close(fd)


def wait_finisher(db, timeout=120):
    """Waits until no finisher completes db (a run with PROFAGENT_EXIT_LOAD=auto|handoff may leave
    the end of its DB to one). Returns True when none runs (any more), False at the timeout."""
    import time
    end = time.monotonic() + timeout
    while finisher_pid(db):
        if time.monotonic() > end:
            return False
        time.sleep(0.01)
    return True
