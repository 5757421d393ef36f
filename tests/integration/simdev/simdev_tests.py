#!/usr/bin/env python3
"""simdev_tests.py - integration tests of the software Level Zero device through the samples.

usage: simdev_tests.py --bin DIR CASE [ARGS...]
  sample NAME plain|tracing|validation   run a sample, check exit 0 and its result lines
  no_driver                             zeInit fails cleanly when the driver path does not exist
  ts_busy | ts_wrap | ts_overlap | ts_101 | ts_reuse | ts_regular   device timestamp checks
  spirv                                 the samples' SPIR-V passes spirv-val (skipped without it)
ZE_ENABLE_ALT_DRIVERS must name the simdev driver (ctest sets it). Exit 0 pass, 1 fail, 77 skip.
"""
import os
import re
import glob
import subprocess
import sys
import tempfile

TOL = 0.10                      # device-time tolerance: +-10 % of the requested busy time
SKIP = 77

# name -> (argv, regexes every one of which must match stdout)
SAMPLES = {
    "vector_add": (["65536"], [r"^vector_add: 65536 elements OK"]),
    "gemm": (["5", "48"], [r"^gemm: 5 iterations of 48x48x51 OK"]),
    "multithread": (["6", "10", "2048"], [r"^multithread: 6 threads x 10 saxpy launches on 2 device\(s\) OK"]),
    "regular_list": (["5", "capture"], [r"^regular_list: 3 kernels x 5 executions OK \(capture\)"]),
    "leaks": ([], [r"^leaks: zeMemFree\(unknown pointer\) -> ZE_RESULT_ERROR_",
                   r"^leaks: zeMemAllocDevice\(\d+ bytes, 2x device memory\) -> ZE_RESULT_ERROR_",
                   r"^leaks: leaked libfoo LaunchKernel 3145728 bytes in 3 allocations",
                   r"^leaks: leaked libbar bar_make_buffer 524288 bytes in 2 allocations",
                   r"^leaks: leaked total 3670016 bytes in 5 allocations"]),
    "allreduce": (["4", "4096", "sleep", "3000"], [r"^allreduce: 4 iterations x 4096 floats on 2 devices OK"]),
    "allreduce_busy": (["4", "4096", "busy", "3000"], [r"^allreduce: 4 iterations x 4096 floats on 2 devices OK .*busy"]),
    "hello_ze": ([], [r"^hello_ze: vector_add of 1024 elements PASSED"]),
    "ze_busy": (["--count", "3", "--ns", "100000"], [r"^ze_busy: 3 kernel launches done"]),
}

# libraries the loader must have dlopen()ed in each mode (proves the layer really ran)
MODE_LIBS = {"plain": ["libze_simdev"], "tracing": ["libze_simdev", "libze_tracing_layer"],
             "validation": ["libze_simdev", "libze_validation_layer"]}

MODES = {
    "plain": {},
    "tracing": {"ZE_ENABLE_TRACING_LAYER": "1"},
    "validation": {"ZE_ENABLE_VALIDATION_LAYER": "1", "ZE_ENABLE_PARAMETER_VALIDATION": "1",
                   "ZE_ENABLE_HANDLE_LIFETIME": "1", "ZE_ENABLE_THREADING_VALIDATION": "1",
                   "ZEL_ENABLE_LOADER_LOGGING": "1"},
}

BIN = None


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(prog, args, env_extra=None, timeout=120):
    env = dict(os.environ)
    env.update(env_extra or {})
    cmd = [os.path.join(BIN, prog)] + list(args)
    print("+ " + " ".join("%s=%s" % kv for kv in (env_extra or {}).items()) + " " + " ".join(cmd))
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout, universal_newlines=True, errors="replace")
    sys.stdout.write(p.stdout)
    sys.stdout.write(p.stderr)
    return p


def foreign_error_lines(p, prog):
    """Lines on stdout/stderr that the sample did not print itself and that look like errors
    or validation-layer reports."""
    own = re.compile(r"^(%s: |sample: |device |kernel |wrap: )" % re.escape(prog))
    bad = re.compile(r"(?i)error|invalid|violation|lifetime|leak|validation|warning")
    return [l for l in (p.stdout + p.stderr).splitlines() if bad.search(l) and not own.match(l)]


def case_sample(name, mode):
    if name not in SAMPLES or mode not in MODES:
        fail("unknown sample %r or mode %r (samples: %s; modes: %s)"
             % (name, mode, ", ".join(SAMPLES), ", ".join(MODES)))
    args, expects = SAMPLES[name]
    prog = "allreduce" if name == "allreduce_busy" else name
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(MODES[mode], LD_DEBUG="files", LD_DEBUG_OUTPUT=os.path.join(tmp, "ld"))
        p = run(prog, args, env)
        loaded = "".join(open(f, errors="replace").read() for f in glob.glob(os.path.join(tmp, "ld*")))
    for lib in MODE_LIBS[mode]:
        if not re.search(r"opening file=\S*%s\S*\.so" % lib, loaded):
            fail("%s in %s mode: the loader did not load %s" % (prog, mode, lib))
    if p.returncode != 0:
        fail("%s exited with %d" % (prog, p.returncode))
    for e in expects:
        if not re.search(e, p.stdout, re.M):
            fail("%s: no output line matching %r" % (prog, e))
    extra = foreign_error_lines(p, prog)
    if extra:
        fail("%s in %s mode printed error/validation lines: %r" % (prog, mode, extra[:5]))


def case_no_driver():
    missing = {"ZE_ENABLE_ALT_DRIVERS": "/nonexistent/profagent/libze_simdev.so"}
    p = run("hello_ze", [], missing, timeout=60)
    if p.returncode != 1 or not re.search(r"zeInit\(0\) failed with 0x[0-9a-f]+", p.stderr):
        fail("hello_ze without a driver: want exit 1 and 'zeInit(0) failed', got %d" % p.returncode)
    p = run("vector_add", ["16"], missing, timeout=60)
    if p.returncode != 1 or not re.search(r"zeInit\(ZE_INIT_FLAG_GPU_ONLY\) failed: ZE_RESULT_ERROR_\w+",
                                          p.stderr):
        fail("vector_add without a driver: want exit 1 and a zeInit error, got %d" % p.returncode)


KLINE = re.compile(r"^kernel (\d+) exec=(\d+) engine=(\d+) start=(\d+) end=(\d+) ns=(\d+) wrapped=([01])$", re.M)
DLINE = re.compile(r"^device .* timer_hz=(\d+) kernel_valid_bits=(\d+) timestamp_valid_bits=(\d+)", re.M)


def busy(args, env_extra=None, want=None):
    """Runs ze_busy, returns (device (hz, bits), list of kernel dicts); checks exit 0 and count."""
    p = run("ze_busy", args, env_extra)
    if p.returncode != 0:
        fail("ze_busy exited with %d" % p.returncode)
    d = DLINE.search(p.stdout)
    if not d:
        fail("ze_busy printed no device line")
    ks = [dict(i=int(m[0]), exec=int(m[1]), engine=int(m[2]), start=int(m[3]), end=int(m[4]),
               ns=int(m[5]), wrapped=m[6] == "1") for m in KLINE.findall(p.stdout)]
    if want is not None and len(ks) != want:
        fail("ze_busy printed %d kernel lines, want %d" % (len(ks), want))
    return (int(d.group(1)), int(d.group(2))), ks


def check_durations(ks, ns):
    for k in ks:
        if abs(k["ns"] - ns) > TOL * ns:
            fail("kernel %d lasted %d ns, want %d ns +-%d%%" % (k["i"], k["ns"], ns, TOL * 100))


def unwrap(ks, bits):
    """Start/end ticks on one increasing axis: add 2^bits after each backwards step."""
    out, base, last = [], 0, None
    for k in ks:
        s = k["start"] + base
        if last is not None and s < last:
            base += 1 << bits
            s += 1 << bits
        e = k["end"] + base + ((1 << bits) if k["end"] < k["start"] else 0)
        out.append((s, e))
        last = s
    return out


def check_sequential(ks, bits, what):
    iv = unwrap(ks, bits)
    for a, b in zip(iv, iv[1:]):
        if not (b[0] > a[0] and b[0] >= a[1]):
            fail("%s: kernel intervals not distinct and in order: %r then %r" % (what, a, b))


def case_ts(name):
    if name == "ts_busy":
        (hz, bits), ks = busy(["--count", "5", "--ns", "2000000"], want=5)
        check_durations(ks, 2000000)
    elif name == "ts_wrap":
        # 300 ms of device time before the wrap; ze_busy appends a 160 ms train of 20 ms kernels
        # behind a gate event it signals 30 ms before the wrap, so one kernel spans the wrap
        # unless it falls in a gap between two kernels, the host oversleeps by > 30 ms or the
        # appends outlast the 300 ms: then run again. (60 kernels of 2 ms launched one by one: the
        # host's appends, and with the gate the engine thread's first wake-ups, left 2-14 ms gaps
        # on a loaded machine, as long as the kernels: no kernel spanned the wrap in 6 runs.)
        env = {"SIMDEV_TIMESTAMP_BITS": "32", "SIMDEV_TIMER_HZ": "1000000000", "SIMDEV_CLOCK_OFFSET_NS": "0",
               "SIMDEV_CLOCK_START_TICKS": str((1 << 32) - 300000000)}
        for attempt in range(6):  # a loaded host leaves ms gaps between launches: more tries
            (hz, bits), ks = busy(["--wrap", "--count", "8", "--ns", "20000000"], env, want=8)
            if hz != 1000000000 or bits != 32:
                fail("device reports timer_hz=%d kernel_valid_bits=%d, want 1000000000 and 32" % (hz, bits))
            if any(k["start"] >= 1 << 32 or k["end"] >= 1 << 32 for k in ks):
                fail("timestamps exceed 32 valid bits")
            check_durations(ks, 20000000)
            check_sequential(ks, bits, "kernel train across the wrap")
            spanning = [k for k in ks if k["wrapped"]]
            if len(spanning) > 1:
                fail("%d kernels claim to span one wrap" % len(spanning))
            if spanning:
                print("kernel %d spans the wrap: start %d end %d, %d ns"
                      % (spanning[0]["i"], spanning[0]["start"], spanning[0]["end"], spanning[0]["ns"]))
                break
            print("attempt %d: no kernel spans the wrap (host scheduling); again" % (attempt + 1))
        else:
            fail("in 6 runs no kernel spanned the wrap")
    elif name == "ts_overlap":
        (hz, bits), ks = busy(["--count", "2", "--engines", "2", "--ns", "20000000"], want=2)
        check_durations(ks, 20000000)
        if {k["engine"] for k in ks} != {0, 1}:
            fail("kernels did not run on engines 0 and 1")
        iv = unwrap(sorted(ks, key=lambda k: k["start"]), bits)
        if not iv[1][0] < iv[0][1]:
            fail("kernels on two engines did not overlap: %r" % iv)
    elif name == "ts_101":
        (hz, bits), ks = busy(["--count", "101", "--ns", "20000"], want=101)
        if len({k["start"] for k in ks}) != 101 or len({k["end"] for k in ks}) != 101:
            fail("101 appends did not give 101 distinct timestamps")
        check_sequential(ks, bits, "101 appends")
    elif name == "ts_reuse":
        (hz, bits), ks = busy(["--count", "10", "--events", "reuse", "--ns", "1000000"], want=10)
        check_durations(ks, 1000000)
        check_sequential(ks, bits, "reset+reused event")      # stale times would repeat
    elif name == "ts_regular":
        (hz, bits), ks = busy(["--list", "regular", "--count", "3", "--exec", "4", "--ns", "500000"], want=12)
        check_durations(ks, 500000)
        if [k["exec"] for k in ks] != [x for x in range(4) for _ in range(3)]:
            fail("regular list executions not reported 0,0,0,1,1,1,...")
        check_sequential(ks, bits, "regular list executed 4 times")
    else:
        fail("unknown case %r" % name)


def case_spirv():
    val = "/usr/bin/spirv-val"
    if not os.path.exists(val):
        print("SKIP: spirv-val not installed (Debian package spirv-tools)")
        sys.exit(SKIP)
    for prog, args in (("hello_ze", ["--dump-spirv"]), ("spirv_dump", [])):
        blob = subprocess.run([os.path.join(BIN, prog)] + args, stdout=subprocess.PIPE, check=True).stdout
        if len(blob) < 20 or len(blob) % 4:
            fail("%s wrote %d bytes, not a SPIR-V module" % (prog, len(blob)))
        p = subprocess.run([val, "--target-env", "opencl1.2", "-"], input=blob,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if p.returncode != 0:
            fail("spirv-val rejects the module of %s: %s" % (prog, p.stdout.decode(errors="replace")))


def main(argv):
    global BIN
    if len(argv) < 4 or argv[1] != "--bin":
        print(__doc__)
        return 2
    BIN = argv[2]
    case, rest = argv[3], argv[4:]
    if case != "spirv" and not os.environ.get("ZE_ENABLE_ALT_DRIVERS"):
        fail("ZE_ENABLE_ALT_DRIVERS is not set (it must name libze_simdev.so)")
    if case == "sample" and len(rest) == 2:
        case_sample(*rest)
    elif case == "no_driver":
        case_no_driver()
    elif case.startswith("ts_"):
        case_ts(case)
    elif case == "spirv":
        case_spirv()
    else:
        fail("unknown case %r" % " ".join(argv[3:]))
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
