#!/usr/bin/env python3
"""bench_percall_ir.py - instructions the agent adds per ze call and per HGTX push+pop pair
(callgrind: counts do not move with the machine's load, unlike the ns figures).

usage: python3 bench/bench_percall_ir.py --build BUILD [--calls N]

BUILD should be configured with -DCMAKE_C_FLAGS=-DPA_TSC_PAIR_NS=1000000ull: under valgrind a
(tsc, clock_gettime) pair takes longer than the default 2 us window, so the TSC clock would never
calibrate and every read would be clock_gettime. Prints, per figure, the inclusive instructions
per call of the entry function (the application's view: zeKernelSetArgumentValue, or
hgtxRangePushA + hgtxRangePop) in the agent run and in its baseline, and their difference:

  ze_entry_ir_added      agent on the loader entry points vs the plain loader
  ze_tracer_cb_ir_added  agent on the tracing-layer path vs the layer with an empty tracer
  hgtx_pair_ir_added     agent vs the libhgtx stub, per push+pop pair
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile


def inclusive(out_file, func, obj):
    """Inclusive Ir of function `func` in object `obj` (substring) from a callgrind output (run
    from /: in the source tree callgrind_annotate reports a different, partial figure)."""
    txt = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", out_file],
                         capture_output=True, text=True, check=True, cwd="/").stdout
    best = 0
    for line in txt.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\([^)]*\)\s+(\S+)\s+\[(.*)\]\s*$", line)
        if not m:
            continue
        name = m.group(2).split(":")[-1]
        if name == func and obj in m.group(3):
            best = max(best, int(m.group(1).replace(",", "")))
    return best


def run(build, tmp, tag, argv, env_extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFAGENT_")
           and k not in ("LD_PRELOAD", "ZE_ENABLE_TRACING_LAYER")}
    env["ZE_ENABLE_ALT_DRIVERS"] = os.path.abspath(os.path.join(build, "lib", "libze_simdev.so"))
    env.update(env_extra)
    if env.get("LD_PRELOAD"):
        env["PROFAGENT_OUTPUT"] = os.path.join(tmp, tag + ".db")
        env["PROFAGENT_SUMMARY"] = "file:" + os.path.join(tmp, tag + ".txt")
    out = os.path.join(tmp, tag + ".cg")
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
           os.path.join(build, "bin", argv[0])] + [str(a) for a in argv[1:]]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("bench_percall_ir: %s failed:\n%s" % (" ".join(cmd), p.stderr[-2000:]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--calls", type=int, default=100000)
    a = ap.parse_args()
    agent = os.path.abspath(os.path.join(a.build, "lib", "libprofagent.so"))
    n = a.calls
    # batches of 1000 with 1 ms pauses: the aggregator keeps up, every call is recorded
    ze = ["bench_ze_calls", n, 1000, 1000]
    hg = ["bench_hgtx", n, 1000, 1000]
    with tempfile.TemporaryDirectory(prefix="profagent-ir-") as tmp:
        f = "zeKernelSetArgumentValue"
        base = inclusive(run(a.build, tmp, "ze_base", ze, {}), f, "libze_loader") / n
        ent = inclusive(run(a.build, tmp, "ze_agent", ze, {"LD_PRELOAD": agent}), f, "libprofagent") / n
        empty = inclusive(run(a.build, tmp, "ze_empty", ze, {"ZE_ENABLE_TRACING_LAYER": "1",
                                                              "BENCH_ZE_EMPTY_TRACER": "1"}), f, "libze_loader") / n
        trc = inclusive(run(a.build, tmp, "ze_tracer", ze, {"LD_PRELOAD": agent,
                                                             "PROFAGENT_ZE_INTERCEPT": "tracer"}), f, "libze_loader") / n
        hb_out = run(a.build, tmp, "hgtx_base", hg, {})
        ha_out = run(a.build, tmp, "hgtx_agent", hg, {"LD_PRELOAD": agent})
        hb = (inclusive(hb_out, "hgtxRangePushA", "libhgtx") + inclusive(hb_out, "hgtxRangePop", "libhgtx")) / n
        ha = (inclusive(ha_out, "hgtxRangePushA", "libprofagent") + inclusive(ha_out, "hgtxRangePop", "libprofagent")) / n
    print("%-24s %8.1f  (agent %.1f, plain loader %.1f)" % ("ze_entry_ir_added", ent - base, ent, base))
    print("%-24s %8.1f  (agent %.1f, empty tracer %.1f)" % ("ze_tracer_cb_ir_added", trc - empty, trc, empty))
    print("%-24s %8.1f  (agent %.1f, stub %.1f)" % ("hgtx_pair_ir_added", ha - hb, ha, hb))


if __name__ == "__main__":
    main()
