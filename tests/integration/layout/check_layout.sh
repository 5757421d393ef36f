#!/bin/sh
# check_layout.sh - the folders' dependencies point one way (DESIGN "Layout"): no source folder
# (collector/, sampling/, hwcounters/) includes an agg/ or writer/ header, agg/ includes no
# source's header, and only session/ includes both sources and agg/writer.
# Usage: check_layout.sh REPO_ROOT. Prints each offending include; exit 1 if any.
root=${1:?repo root}
cd "$root" || exit 2
bad=0
report() { echo "layout: $1"; bad=1; }
for d in collector sampling hwcounters; do
    [ -d "$d" ] || continue
    grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"([.][.]/)*(agg|writer|session)/' -r "$d" --include='*.c' --include='*.h' |
        grep . && report "$d/ includes agg/, writer/ or session/ headers (above)"
done
grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"([.][.]/)*(collector|sampling|hwcounters|session)/' -r agg --include='*.c' --include='*.h' |
    grep . && report "agg/ includes a source's or the session's header (above)"
grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"([.][.]/)*(collector|sampling|hwcounters|session)/' -r writer --include='*.c' --include='*.h' |
    grep . && report "writer/ includes a source's or the session's header (above)"
# the source table names every descriptor it lists, once
n=$(grep -cE '^[[:space:]]*PA_SOURCE\([a-z0-9_]+\)' session/sources.c)
[ "$n" -ge 4 ] || report "session/sources.c lists $n sources (expected hgtx, osrt, ze, mem at least)"
for s in $(sed -nE 's/^[[:space:]]*PA_SOURCE\(([a-z0-9_]+)\).*/\1/p' session/sources.c); do
    c=$(grep -rlE "const pa_source_t pa_source_$s[[:space:]]*=" collector sampling hwcounters 2>/dev/null | wc -l)
    [ "$c" -eq 1 ] || report "source $s: $c definitions of pa_source_$s in the source folders (want 1)"
done
[ $bad -eq 0 ] && echo "layout: ok ($n sources)"
exit $bad
