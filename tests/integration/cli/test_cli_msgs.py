"""test_cli_msgs.py - bad input to the CLI and the agent gets one message naming what was wrong and
what is accepted, with a non-zero status where the command cannot do what was asked; and the exit
summary survives an application that closes its stderr. Each case was a defect: an option's value
taken from '--', an empty --format element accepted silently or misnamed, a directory as -o, a bad
--callstack-group-config rule ignored with status 0, no recover hint for an empty DB whose spool is
beside it, one message per unknown %-placeholder, a live DB called "ended abnormally" by merge, the
summary lost when the application closed stderr."""
import os, shutil, subprocess, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pa_itest import check, FAILS  # noqa: E402

MKDB, PA, BUILD, WORK = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
LIB = os.path.join(BUILD, "lib", "libprofagent.so")


def run(*args, cwd=None, env=None):
    p = subprocess.run([PA, *args], capture_output=True, timeout=120, cwd=cwd, env=env)
    return p.returncode, p.stdout, p.stderr


def one_line(rc, err, status, *needles):
    return rc == status and err.count(b"\n") == 1 and all(n in err for n in needles)


shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
db = os.path.join(WORK, "s.db")
subprocess.run([MKDB, db, os.path.join(WORK, "spool")], check=True, capture_output=True)

# ---- run: a missing option value is not taken from '--' or the next option ----
rc, out, err = run("run", "--output", "--", "/bin/true", cwd=WORK)
check(one_line(rc, err, 2, b"--output needs a value", b"'--', which ends the options", b"DB path template")
      and not os.path.exists(os.path.join(WORK, "--")), "run --output -- CMD: rc %d %r" % (rc, err))
rc, out, err = run("run", "--trace", "--summary", "none", "--", "/bin/true", cwd=WORK)
check(one_line(rc, err, 2, b"--trace needs a value (got '--summary', an option)", b"comma list of sources"),
      "run --trace --summary: rc %d %r" % (rc, err))

# ---- stats --format with an empty element ----
for f in ("csv,", ",json", "csv,,json"):
    rc, out, err = run("stats", "--format", f, db)
    check(one_line(rc, err, 2, b"has an empty format in its list", b"accepted: csv, tsv, table, json"),
          "--format %r: rc %d %r" % (f, rc, err))

# ---- report -o DIR ----
d = os.path.join(WORK, "outdir")
os.makedirs(d)
for extra in ([], ["--force-overwrite"]):
    rc, out, err = run("report", db, "-o", d, *extra)
    check(one_line(rc, err, 2, b"is a directory", b"-o %s/s.html" % d.encode()) and os.listdir(WORK).count("outdir.tmp") == 0,
          "report -o DIR %s: rc %d %r" % (extra, rc, err))

# ---- --callstack-group-config with a bad rule: refused ----
for rule, why in (("nogroup", b"missing '='"), ("g=(", b"invalid regex")):
    rc, out, err = run("stats", "-r", "device_memory_usage_summary", "--callstack-group-config", rule, db)
    check(one_line(rc, err, 2, b"--callstack-group-config '%s' is not accepted" % rule.encode(), why, b"accepted:")
          and out == b"", "bad rule %r: rc %d %r" % (rule, rc, err))
rc, out, err = run("stats", "-r", "device_memory_usage_summary", "--callstack-group-config", "g=alloc", db)
check(rc == 0, "a good rule still runs: rc %d %r" % (rc, err))

# ---- an empty DB with its spool beside it: the recover hint ----
e = os.path.join(WORK, "e.db")
open(e, "w").close()
rc, out, err = run("stats", e)
check(one_line(rc, err, 1, b"is empty, not a profagent database") and b"profagent recover" not in err,
      "empty DB, no spool: %r" % err)
spool = e + ".4242.abcdef.spool.zst"
shutil.copy(os.path.join(WORK, "spool"), spool)
for cmd in (["stats", e], ["report", e, "-o", os.path.join(WORK, "e.html")], ["export", e, "-o", os.path.join(WORK, "e.json")]):
    rc, out, err = run(*cmd)
    check(one_line(rc, err, 1, b"is empty", b"build the DB with: profagent recover %s" % spool.encode()),
          "%s of an empty DB with its spool: rc %d %r" % (cmd[0], rc, err))

# ---- the agent: unknown %-placeholders in PROFAGENT_OUTPUT: one message naming them ----
env = dict(os.environ, LD_PRELOAD=LIB, PROFAGENT_OUTPUT=os.path.join(WORK, "x%z%.db"), PROFAGENT_SUMMARY="none")
p = subprocess.run([os.path.join(BUILD, "bin", "bench_hgtx"), "20"], capture_output=True, env=env, timeout=60)
msgs = [l for l in p.stderr.splitlines() if l.startswith(b"profagent")]
check(p.returncode == 0 and len(msgs) == 1 and b"'%z', '%.' are not placeholders, kept as is" in msgs[0]
      and b"%% a literal %" in msgs[0] and os.path.exists(os.path.join(WORK, "x%z%.db")),
      "%%z%% in PROFAGENT_OUTPUT: %r" % p.stderr)

# ---- the summary reaches the session's stderr when the application closes its own ----
app = ("import ctypes, os, stat\n"
       "lib = ctypes.CDLL(None)\n"
       "for i in range(5):\n"
       "    lib.hgtxRangePushA(b'closing'); lib.hgtxRangePop()\n"
       "me = os.readlink('/proc/self/fd/2')\n"
       "import fcntl\n"
       "def link(f):\n"
       "    try: return os.readlink('/proc/self/fd/' + f)\n"
       "    except OSError: return None\n"  # the listing's own fd is gone
       "dups = [int(f) for f in os.listdir('/proc/self/fd') if f != '2' and link(f) == me]\n"
       "print('dups', [(f, bool(fcntl.fcntl(f, fcntl.F_GETFD) & fcntl.FD_CLOEXEC)) for f in dups], flush=True)\n"
       "os.close(2)\n")
env = dict(os.environ, LD_PRELOAD=LIB, PROFAGENT_OUTPUT=os.path.join(WORK, "closed.db"))
p = subprocess.run([sys.executable, "-c", app], capture_output=True, env=env, timeout=60)
dups = eval(p.stdout.decode().split("dups", 1)[1]) if b"dups" in p.stdout else None
check(p.returncode == 0 and b"==== profagent summary ====" in p.stderr and b"closing" in p.stderr,
      "summary after the app closed stderr: rc %d %r" % (p.returncode, p.stderr[-300:]))
# numbered high but below 64: a number past the kernel's first fd table (64) grows it, and then
# select() on an fd beyond the old size says EBADF instead of ignoring it (spine_osrt_parity)
check(dups is not None and len(dups) == 1 and 10 <= dups[0][0] < 64 and dups[0][1],
      "the kept copy of stderr: one fd, in 10..63, close-on-exec: %r" % dups)

# ---- merge: a DB still being written is named so ----
live = os.path.join(WORK, "live.db")
env = dict(os.environ, LD_PRELOAD=LIB, PROFAGENT_OUTPUT=live, PROFAGENT_SUMMARY="none", PROFAGENT_DB_COMMIT_MS="50")
w = subprocess.Popen([os.path.join(BUILD, "bin", "bench_hgtx"), "100000000", "1000", "2000"], env=env,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    for _ in range(200):
        time.sleep(0.1)
        if os.path.exists(live) and os.path.getsize(live) > 0:
            break
    time.sleep(0.5)
    rc, out, err = run("merge", live, db, "-o", os.path.join(WORK, "m.db"))
    check(rc == 0 and b"'%s' is still being written by pid %d (a live session)" % (live.encode(), w.pid) in err
          and b"ended abnormally" not in err, "merge of a live DB: rc %d %r" % (rc, err))
finally:
    w.kill()
    w.wait()
# ---- run of a program that records nothing: one line, from that program only ----
env = dict(os.environ)
env.pop("PROFAGENT_LOG", None)
for cmd, what in ((["/bin/true"], "the program itself"), (["sh", "-c", "exec /bin/true"], "a shell that execs it"),
                  (["sh", "-c", "/bin/true; /bin/true"], "a shell running two children")):
    rc, out, err = run("run", "--output", os.path.join(WORK, "none-%p.db"), "--", *cmd, env=env, cwd=WORK)
    lines = [l for l in err.splitlines() if l.startswith(b"profagent")]
    check(rc == 0 and len(lines) == 1 and lines[0].endswith(b"nothing recorded, no database written")
          and not [f for f in os.listdir(WORK) if f.startswith("none-")],
          "run -- %s (%s): one line: rc %d %r" % (" ".join(cmd), what, rc, err))
rc, out, err = run("run", "--output", os.path.join(WORK, "none-%p.db"), "--", os.path.join(BUILD, "bin", "bench_hgtx"),
                  "3", env=env, cwd=WORK)
check(rc == 0 and b"==== profagent summary ====" in err and b"unknown variable" not in err,
      "run's mark is no unknown variable for the agent: %r" % err[-300:])

if FAILS:
    print("%d check(s) failed" % len(FAILS), file=sys.stderr)
    sys.exit(1)
print("ok")
