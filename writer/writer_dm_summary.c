/* writer_dm_summary.c - the unit/path mapping (docs/utilization.md) and the exit summary's
 * utilization section: TPU-viewer style lines with a text bar per unit and DMA path, per device,
 * and the busiest ranges by compute utilization. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "../common/pa_devmetrics.h"
#include "writer_dm.h"
#include "writer_internal.h"
#include "../common/pa_stddev.h"

/* Rates: instructions per cycle per XVE the peak assumes (simdev README "Peaks"; Intel pipes issue
 * one per cycle; the vector ALU is two pipes). */
const pa_dm_unit_t pa_dm_units[] = {
    {"Scalar Unit", "XVE_INST_EXECUTED_CONTROL_ALL", NULL, "XVE_INST_EXECUTED_CONTROL_ALL", 1},
    {"Vector ALU", "XVE_INST_EXECUTED_ALU0_ALL", "XVE_INST_EXECUTED_ALU1_ALL", "XVE_INST_EXECUTED_ALU0_ALL+ALU1_ALL", 2},
    {"Vector Load/Store", "XVE_INST_EXECUTED_SEND_ALL", NULL, "XVE_INST_EXECUTED_SEND_ALL", 1},
    {"MXU", "XVE_INST_EXECUTED_XMX_ALL", NULL, "XVE_INST_EXECUTED_XMX_ALL", 1},
    {"XU", NULL, NULL, NULL, 0},
    {"RPU", NULL, NULL, NULL, 0},
};
const size_t pa_dm_nunits = sizeof pa_dm_units / sizeof pa_dm_units[0];

const pa_dm_path_t pa_dm_paths[] = {
    {"HBM read (HBM->VMem)", "GPU_MEMORY_BYTE_READ", PA_DM_PEAK_MEM},
    {"HBM write (VMem->HBM)", "GPU_MEMORY_BYTE_WRITE", PA_DM_PEAK_MEM},
    {"HIB->HBM (host to device)", "COPY_BYTE_H2D", PA_DM_PEAK_PCIE},
    {"HBM->HIB (device to host)", "COPY_BYTE_D2H", PA_DM_PEAK_PCIE},
    {"HBM->HBM (device to device)", "COPY_BYTE_D2D", PA_DM_PEAK_MEM},
    {"ICI (peer device)", "COPY_BYTE_PEER", PA_DM_PEAK_NONE},
    {"Fill", "FILL_BYTE", PA_DM_PEAK_MEM},
};
const size_t pa_dm_npaths = sizeof pa_dm_paths / sizeof pa_dm_paths[0];

double pa_dm_sum(const char *const *names, const double *sums, uint32_t n, const char *name, int *have)
{
    for (uint32_t i = 0; name && names && i < n; i++)
        if (names[i] && strcmp(names[i], name) == 0) {
            *have = 1;
            return sums[i];
        }
    *have = 0;
    return 0;
}

double pa_dm_path_bps(const pa_dm_path_t *p, const pa_dm_peaks_t *pk)
{
    return p->peak == PA_DM_PEAK_MEM ? (double)pk->mem_peak_bps : p->peak == PA_DM_PEAK_PCIE ? (double)pk->pcie_peak_bps : 0;
}

#define BAR 20
static void bar(FILE *out, double pct)
{
    char b[BAR + 1];
    int full = pct <= 0 ? 0 : pct >= 100 ? BAR : (int)(pct * BAR / 100.0);
    for (int i = 0; i < BAR; i++)
        b[i] = i < full ? '#' : i == full && pct > 0 && full < BAR ? ':' : '.';
    b[BAR] = '\0';
    fprintf(out, "[%s]", b);
}

static void line(FILE *out, const char *what, double achieved, double peak, const char *unit)
{
    /* integers truncated, the reports' rule (pa_stat_trunc): the same figures as unit_util_sum and
     * dma_util_sum print */
    fprintf(out, "  %-28s %16lld / ", what, (long long)pa_stat_trunc(achieved));
    if (peak > 0) {
        fprintf(out, "%-16lld %-12s %8.3f %% ", (long long)pa_stat_trunc(peak), unit, 100.0 * achieved / peak);
        bar(out, 100.0 * achieved / peak);
    } else {
        fprintf(out, "%-16s %-12s %8s   (no peak known)", "-", unit, "-");
    }
    fputc('\n', out);
}

void pa_dm_summary_units(FILE *out, const pa_dm_dev_res_t *dm, size_t n)
{
    size_t streaming = 0;
    for (size_t i = 0; i < n; i++)
        streaming += dm[i].state == PA_DM_STREAMING;
    if (!streaming)
        return;
    fprintf(out, "\n== Device utilization (achieved / peak over each device's metric intervals; all: profagent stats"
            " -r unit_util_sum, dma_util_sum; mapping: docs/utilization.md) ==\n");
    for (size_t i = 0; i < n; i++) {
        const pa_dm_dev_res_t *d = &dm[i];
        if (d->state != PA_DM_STREAMING)
            continue;
        const char *const *nm = (const char *const *)d->names;
        int h = 0;
        double clocks = pa_dm_sum(nm, d->sums, d->nmetrics, "GpuCoreClocks", &h);
        double gtime = pa_dm_sum(nm, d->sums, d->nmetrics, "GpuTime", &h);
        const pa_dm_peaks_t *pk = &d->peaks;
        fprintf(out, "device %u: %s, %llu intervals of %llu ns (%.3f ms), %u XVEs, %u MHz, %llu GpuCoreClocks%s\n",
                d->device, d->group, (unsigned long long)d->intervals, (unsigned long long)d->period_ns, gtime / 1e6,
                pk->xve_count, pk->core_mhz, (unsigned long long)clocks,
                d->dropped_reads ? " (reports were dropped: see METRIC_DEVICES.droppedReads)" : "");
        if (d->intervals == 0) { /* no achieved or peak figure exists: say why, not "0 / -" */
            fprintf(out, "  no metric interval completed (the session was shorter than the sampling period %llu ns:"
                    " PROFAGENT_METRICS_PERIOD_US)\n", (unsigned long long)d->period_ns);
            continue;
        }
        for (size_t u = 0; u < pa_dm_nunits; u++) {
            const pa_dm_unit_t *un = &pa_dm_units[u];
            int h1 = 0, h2 = 0;
            double a = un->m1 ? pa_dm_sum(nm, d->sums, d->nmetrics, un->m1, &h1) : 0;
            if (un->m2)
                a += pa_dm_sum(nm, d->sums, d->nmetrics, un->m2, &h2);
            if (!h1) {
                fprintf(out, "  %-28s %s\n", un->unit, un->m1 ? "n/a (counter not in group)" : "n/a (no Intel counterpart)");
                continue;
            }
            line(out, un->unit, a, un->rate * pk->xve_count * clocks, "instructions");
        }
        for (size_t p = 0; p < pa_dm_npaths; p++) {
            int hv = 0;
            double b = pa_dm_sum(nm, d->sums, d->nmetrics, pa_dm_paths[p].metric, &hv);
            if (!hv) {
                fprintf(out, "  %-28s n/a (counter not in group)\n", pa_dm_paths[p].path);
                continue;
            }
            line(out, pa_dm_paths[p].path, b, pa_dm_path_bps(&pa_dm_paths[p], pk) * gtime / 1e9, "bytes");
        }
    }
}

/* ---- busiest ranges: intervals overlapping each range name's device work (barriers aside),
 * each interval once per name; the unit columns from METRIC_NAMES (the same metricId on every
 * device, as one group gives; otherwise the section is left out) ---- */

#define TOP_RANGES 5

long long pa_dm_slack_ns(sqlite3 *db)
{
    sqlite3_stmt *st;
    long long ns = 2;
    if (sqlite3_prepare_v2(db, "SELECT min(timerHz) FROM ZE_DEVICES WHERE timerHz > 0", -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) > 0)
            ns = 2000000000ll / sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    /* the ze source's own bound (absent in DBs of older agents, or read before the exit wrote it) */
    if (sqlite3_prepare_v2(db, "SELECT value FROM SESSION_COUNTERS WHERE name = 'ze_clock_pair_err_ns'", -1, &st,
                           NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) > 0)
            ns += sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    return ns + PA_DM_PAIR_SLACK_NS;
}

static int metric_col(sqlite3 *db, const char *name)
{
    sqlite3_stmt *st;
    int col = -1;
    if (sqlite3_prepare_v2(db, "SELECT min(metricId), count(DISTINCT metricId) FROM METRIC_NAMES WHERE name = ?", -1,
                           &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL && sqlite3_column_int(st, 1) == 1)
        col = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return col;
}

typedef struct rrow { char name[64]; int64_t dev, nint; double util[4], busiest; int unit; } rrow_t;

static int rrow_cmp(const void *a, const void *b)
{
    const rrow_t *x = a, *y = b;
    return x->busiest < y->busiest ? 1 : x->busiest > y->busiest ? -1 : strcmp(x->name, y->name);
}

/* One (range name, device): the intervals its ops overlap, each once; v = GpuCoreClocks, CONTROL,
 * ALU0, ALU1, SEND, XMX sums. */
typedef struct rgrp { char name[64]; int64_t dev; double xve; int64_t nint; uint64_t last; double v[6]; } rgrp_t;
/* An op's window widened by the slack: an interval [a, a + d) counts for group g when
 * a < hi and a + d > lo (pa_dm_series_mark's rule); a group's windows are merged where they
 * overlap, so a device's windows sorted by lo are swept once with the intervals. */
typedef struct rwin { int64_t dev; long long lo, hi; uint32_t g; } rwin_t;

static int rwin_cmp(const void *a, const void *b)
{
    const rwin_t *x = a, *y = b;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    if (x->g != y->g) /* the merge below takes one group's windows together */
        return x->g < y->g ? -1 : 1;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int rwin_cmp_lo(const void *a, const void *b)
{
    const rwin_t *x = a, *y = b;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Does a chunk [t0, t1) of dev overlap one of the device's windows w[0..n) (sorted by lo)?
 * maxhi[i] = max hi of w[0..i]. */
static int chunk_wanted(const rwin_t *w, const long long *maxhi, size_t n, long long t0, long long t1)
{
    size_t lo = 0, hi = n; /* windows with lo < t1: w[0..lo) */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (w[mid].lo < t1)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && maxhi[lo - 1] > t0;
}

/* The sweep of one device's intervals (in chunk order) over its windows. */
typedef struct rsweep {
    const rwin_t *w;
    size_t nw, next;       /* windows of the device; the first not activated yet */
    uint32_t *act;         /* active windows (lo below the interval's end, hi above its start) */
    size_t nact;
    long long last_a;
    uint64_t seq;          /* intervals seen: a group counts an interval once by its number */
} rsweep_t;

static void sweep_interval(rsweep_t *sw, rgrp_t *g, const int *col, long long a, long long b, const double *v)
{
    if (a < sw->last_a) { /* chunks out of order (a merged DB): start the sweep again */
        sw->next = 0;
        sw->nact = 0;
    }
    sw->last_a = a;
    sw->seq++;
    while (sw->next < sw->nw && sw->w[sw->next].lo < b)
        sw->act[sw->nact++] = (uint32_t)sw->next++;
    for (size_t i = 0; i < sw->nact;) {
        const rwin_t *w = &sw->w[sw->act[i]];
        if (w->hi <= a) { /* ended before this interval: before every later one too */
            sw->act[i] = sw->act[--sw->nact];
            continue;
        }
        i++;
        rgrp_t *r = &g[w->g];
        if (w->lo >= b || r->last == sw->seq)
            continue;
        r->last = sw->seq;
        r->nint++;
        for (int k = 0; k < 6; k++)
            r->v[k] += v[col[k]];
    }
}

/* The ranges' device work: groups (name, device) and their merged windows; returns the window
 * count (*pw, *pg malloc'd), 0 when there is none. */
static size_t ranges_windows(sqlite3 *db, long long slack, rgrp_t **pg, size_t *png, rwin_t **pw)
{
    sqlite3_stmt *st;
    *pg = NULL, *pw = NULL, *png = 0;
    if (sqlite3_prepare_v2(db, "SELECT s.value, z.deviceId, z.start, z.end, (SELECT xveCount FROM METRIC_DEVICES d"
                           " WHERE d.deviceId = z.deviceId), r.nameId FROM HGTX_RANGES r JOIN HGTX_OP_ASSOC a ON a.rangeId = r.id"
                           " JOIN ZE_OPS z ON z.rowid = a.opId AND z.kind != 4 JOIN STRING_IDS s ON s.id = r.nameId"
                           " ORDER BY r.nameId, z.deviceId", -1, &st, NULL) != SQLITE_OK)
        return 0; /* no HGTX/ZE tables in this session: no section */
    rgrp_t *g = NULL;
    rwin_t *w = NULL;
    size_t ng = 0, gcap = 0, nw = 0, wcap = 0;
    int64_t cname = -1, cdev = -1;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t dev = sqlite3_column_int64(st, 1), name = sqlite3_column_int64(st, 5);
        if (!ng || dev != cdev || name != cname) {
            if (ng == gcap) {
                rgrp_t *n = realloc(g, (gcap = gcap ? gcap * 2 : 16) * sizeof *g);
                if (!n)
                    break;
                g = n;
            }
            rgrp_t *r = &g[ng++];
            memset(r, 0, sizeof *r);
            const char *nm = (const char *)sqlite3_column_text(st, 0);
            snprintf(r->name, sizeof r->name, "%s", nm ? nm : "");
            r->dev = dev;
            r->xve = sqlite3_column_double(st, 4);
            cdev = dev;
            cname = name;
        }
        if (nw == wcap) {
            rwin_t *n = realloc(w, (wcap = wcap ? wcap * 2 : 256) * sizeof *w);
            if (!n)
                break;
            w = n;
        }
        w[nw++] = (rwin_t){dev, sqlite3_column_int64(st, 2) - slack, sqlite3_column_int64(st, 3) + slack,
                           (uint32_t)(ng - 1)};
    }
    sqlite3_finalize(st);
    if (!nw) {
        free(g), free(w);
        return 0;
    }
    /* a group's overlapping windows as one: an interval overlapping the union overlaps one of them */
    qsort(w, nw, sizeof *w, rwin_cmp);
    size_t k = 0;
    for (size_t i = 1; i < nw; i++) {
        if (w[i].g == w[k].g && w[i].lo < w[k].hi) {
            if (w[i].hi > w[k].hi)
                w[k].hi = w[i].hi;
        } else {
            w[++k] = w[i];
        }
    }
    nw = k + 1;
    qsort(w, nw, sizeof *w, rwin_cmp_lo);
    *pg = g, *png = ng, *pw = w;
    return nw;
}

/* Sweeps every chunk of the devices with windows (only those overlapping one) through the groups. */
static void ranges_scan(sqlite3 *db, const int *col, rgrp_t *g, const rwin_t *w, size_t nw)
{
    long long *maxhi = malloc(nw * sizeof *maxhi);
    uint32_t *act = malloc(nw * sizeof *act);
    sqlite3_stmt *st = NULL;
    if (!maxhi || !act || sqlite3_prepare_v2(db, "SELECT deviceId, startNs, endNs, intervals, nmetrics, data FROM"
                                             " METRIC_CHUNKS ORDER BY deviceId, startNs", -1, &st, NULL) != SQLITE_OK) {
        free(maxhi), free(act);
        return;
    }
    double v[1025];      /* v[nm] = 0 stands for a metric the group lacks */
    uint8_t keep[1024];
    pa_dm_mstate_t ms[1024];
    rsweep_t sw = {.act = act};
    int64_t sdev = INT64_MIN;
    size_t d0 = 0, dn = 0;  /* the current device's windows w[d0 .. d0 + dn) */
    int64_t nm_dev = 0;     /* the metric count of the device's first chunk used */
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t dev = sqlite3_column_int64(st, 0), nint = sqlite3_column_int64(st, 3), nm = sqlite3_column_int64(st, 4);
        if (nint <= 0 || nm <= 0 || nm > 1024 || nint > 100000000)
            continue;
        if (dev != sdev) {
            sdev = dev;
            for (d0 = 0; d0 < nw && w[d0].dev < dev; d0++)
                ;
            for (dn = 0; d0 + dn < nw && w[d0 + dn].dev == dev; dn++)
                maxhi[d0 + dn] = dn && maxhi[d0 + dn - 1] > w[d0 + dn].hi ? maxhi[d0 + dn - 1] : w[d0 + dn].hi;
            sw = (rsweep_t){.w = w + d0, .nw = dn, .act = act, .last_a = LLONG_MIN};
            nm_dev = 0;
        }
        long long t0 = sqlite3_column_int64(st, 1), t1 = sqlite3_column_int64(st, 2);
        if (!dn || !chunk_wanted(w + d0, maxhi + d0, dn, t0, t1))
            continue; /* the blob is not even read */
        if (nm_dev && nm != nm_dev)
            continue; /* one device, another metric count: not a stream of ours */
        if (!nm_dev) {
            nm_dev = nm;
            memset(keep, 0, (size_t)nm);
            for (int k = 0; k < 6; k++)
                if (col[k] < nm)
                    keep[col[k]] = 1;
        }
        int c[6];
        for (int k = 0; k < 6; k++) /* a metric the group does not have adds nothing */
            c[k] = col[k] < nm ? col[k] : (int)nm;
        v[nm] = 0;
        size_t got = 0;
        int oom;
        const uint8_t *raw = pa_dm_chunk_raw(sqlite3_column_blob(st, 5), (size_t)sqlite3_column_bytes(st, 5), &got, &oom);
        if (!raw)
            continue;
        pa_dm_unpack_t u;
        pa_dm_unpack_init(&u, raw, got, (uint64_t)t0, (uint32_t)nm, ms);
        pa_dm_unpack_keep(&u, keep);
        uint64_t a, d;
        for (int64_t i = 0; i < nint && pa_dm_unpack_next(&u, &a, &d, v) == 1; i++)
            sweep_interval(&sw, g, c, (long long)a, (long long)(a + d), v);
    }
    sqlite3_finalize(st);
    free(maxhi), free(act);
}

void pa_dm_summary_ranges(sqlite3 *db, FILE *out)
{
    int col[6]; /* GpuCoreClocks, CONTROL, ALU0, ALU1, SEND, XMX */
    const char *m[6] = {"GpuCoreClocks", "XVE_INST_EXECUTED_CONTROL_ALL", "XVE_INST_EXECUTED_ALU0_ALL",
                        "XVE_INST_EXECUTED_ALU1_ALL", "XVE_INST_EXECUTED_SEND_ALL", "XVE_INST_EXECUTED_XMX_ALL"};
    for (int i = 0; i < 6; i++)
        if ((col[i] = metric_col(db, m[i])) < 0)
            return;
    rgrp_t *g;
    rwin_t *w;
    size_t ng, nw = ranges_windows(db, pa_dm_slack_ns(db), &g, &ng, &w);
    if (!nw)
        return;
    ranges_scan(db, col, g, w, nw);
    free(w);
    rrow_t *rows = calloc(ng, sizeof *rows);
    size_t nr = 0;
    static const char *const uname[4] = {"Scalar Unit", "Vector ALU", "Vector Load/Store", "MXU"};
    static const double rate[4] = {1, 2, 1, 1};
    for (size_t i = 0; rows && i < ng; i++) {
        const rgrp_t *a = &g[i];
        double clocks = a->v[0], xve = a->xve;
        if (!(clocks > 0 && xve > 0 && a->nint))
            continue;
        rrow_t *r = &rows[nr++];
        snprintf(r->name, sizeof r->name, "%s", a->name);
        r->dev = a->dev;
        r->nint = a->nint;
        double a4[4] = {a->v[1], a->v[2] + a->v[3], a->v[4], a->v[5]};
        for (int u = 0; u < 4; u++) {
            r->util[u] = 100.0 * a4[u] / (rate[u] * xve * clocks);
            if (r->util[u] > r->busiest || u == 0) {
                r->busiest = r->util[u];
                r->unit = u;
            }
        }
    }
    free(g);
    if (nr) {
        qsort(rows, nr, sizeof *rows, rrow_cmp);
        fprintf(out, "\nBusiest HGTX ranges by compute utilization (top %d of %zu; the busiest unit over the metric"
                " intervals overlapping the range's device work, each interval once; profagent stats -r"
                " unit_util_sum:range=<name>):\n", nr < TOP_RANGES ? (int)nr : TOP_RANGES, nr);
        fprintf(out, "  %-24s %6s %9s %10s %10s %10s %10s  %s\n", "Range", "Device", "Intervals", "Scalar %",
                "VecALU %", "LdSt %", "MXU %", "Busiest unit");
        for (size_t i = 0; i < nr && i < TOP_RANGES; i++) {
            const rrow_t *r = &rows[i];
            fprintf(out, "  %-24.24s %6lld %9lld %10.3f %10.3f %10.3f %10.3f  %s ", r->name, (long long)r->dev,
                    (long long)r->nint, r->util[0], r->util[1], r->util[2], r->util[3], uname[r->unit]);
            bar(out, r->busiest);
            fputc('\n', out);
        }
    }
    free(rows);
}
