#!/usr/bin/env python3
"""test_sym_system.py - PROFAGENT_SYMBOLS_SYSTEM_DEBUGINFO: by default frames of libraries under
/lib, /lib64, /usr/lib keep their function names (symbol table) but get no source line (their
separate DWARF is not decompressed at exit); the application's frames keep file:line. With =1,
libc frames get a source line too when libc6-dbg is installed. usage: test_sym_system.py BUILD_DIR"""
import os, sqlite3, subprocess, sys, tempfile

B = sys.argv[1]
fails = []


def chains(extra):
    db = os.path.join(tempfile.mkdtemp(prefix="pa_symsys_"), "t.db")
    env = dict(os.environ, ZE_ENABLE_ALT_DRIVERS=os.path.join(B, "lib", "libze_simdev.so"),
               LD_PRELOAD=os.path.join(B, "lib", "libprofagent.so"), PROFAGENT_OUTPUT=db,
               PROFAGENT_SUMMARY="none", **extra)
    p = subprocess.run([os.path.join(B, "bin", "multithread"), "1", "1", "64"], env=env,
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        fails.append(f"multithread {extra}: exit {p.returncode} {p.stderr[-300:]}")
        return {}
    c = sqlite3.connect(db)
    rows = c.execute("SELECT f.value, m.value, s.value FROM CALLCHAINS c JOIN STRING_IDS f ON f.id = c.function "
                     "JOIN STRING_IDS m ON m.id = c.module JOIN STRING_IDS s ON s.id = c.stack "
                     "WHERE c.id = 1 ORDER BY c.stackDepth").fetchall()
    return {fn: (mod, st) for fn, mod, st in rows}


# the first allocation of multithread: sample_alloc_shared <- worker_main <- start_thread <- __clone3
d = chains({})
for fn, src in (("sample_alloc_shared", "common.c:"), ("worker_main", "multithread.c:41")):
    if fn not in d or src not in d[fn][1]:
        fails.append(f"default: app frame {fn} lost its source {src}: {d.get(fn)}")
have_dbg = subprocess.run(["dpkg", "-s", "libc6-dbg"], capture_output=True).returncode == 0
# libc internals: their names exist only in libc6-dbg's .symtab (scripts/install-deps installs it;
# without it the frames are shown as libc.so.6+0xOFFSET, which is checked instead)
for fn in ("start_thread", "__clone3") if have_dbg else ():
    if fn not in d:
        fails.append(f"default: libc frame {fn} has no name: {sorted(d)}")
    elif not d[fn][0].startswith(("/lib/", "/lib64/", "/usr/lib/")) or d[fn][1] != f"{fn} (libc.so.6)":
        fails.append(f"default: libc frame {fn}: {d[fn]} (want no source line)")
if not have_dbg and not any(k.startswith("libc.so.6+0x") for k in d):
    fails.append(f"default without libc6-dbg: no libc.so.6+0x... frame: {sorted(d)}")
if have_dbg:
    d = chains({"PROFAGENT_SYMBOLS_SYSTEM_DEBUGINFO": "1"})
    if "start_thread" not in d or "pthread_create.c:" not in d["start_thread"][1]:
        fails.append(f"=1: start_thread without its source line: {d.get('start_thread')}")
for f in fails:
    print("FAIL:", f)
print("ok" if not fails else f"{len(fails)} failures", "(libc6-dbg checked)" if have_dbg else "")
sys.exit(1 if fails else 0)
