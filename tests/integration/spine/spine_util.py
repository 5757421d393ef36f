"""spine_util.py - what every spine test driver shares: the ok/FAIL bookkeeping and the
LD_PRELOAD value for the agent (behind the ASan runtime when the agent is a sanitizer build)."""
import subprocess

FAILS = []


def check(cond, what):
    """Prints one ok/FAIL line; a failure is remembered in FAILS (the driver's exit status)."""
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


def preload(lib):
    """LD_PRELOAD for `lib`: libasan first when lib was built with -fsanitize=address."""
    out = subprocess.run(["ldd", lib], capture_output=True, text=True).stdout
    asan = [l.split("=>")[1].split()[0] for l in out.splitlines() if "libasan" in l and "=>" in l]
    return ":".join(asan + [lib])
