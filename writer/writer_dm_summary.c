/* writer_dm_summary.c - the unit/path mapping (docs/utilization.md) and the exit summary's
 * utilization section: TPU-viewer style lines with a text bar per unit and DMA path, per device,
 * and the busiest ranges by compute utilization. */
#include <stdlib.h>
#include <string.h>

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

/* Sums of one (range name, device) over the intervals its ops overlap, each interval once. */
typedef struct racc { const int *col; int64_t nint; double v[6]; } racc_t;

static void racc_add(void *arg, const pa_dm_series_t *s, size_t i)
{
    racc_t *r = arg;
    const double *v = s->v + i * s->nmetrics;
    r->nint++;
    for (int k = 0; k < 6; k++)
        if ((uint32_t)r->col[k] < s->nmetrics)
            r->v[k] += v[r->col[k]];
}

void pa_dm_summary_ranges(sqlite3 *db, FILE *out)
{
    int col[6]; /* GpuCoreClocks, CONTROL, ALU0, ALU1, SEND, XMX */
    const char *m[6] = {"GpuCoreClocks", "XVE_INST_EXECUTED_CONTROL_ALL", "XVE_INST_EXECUTED_ALU0_ALL",
                        "XVE_INST_EXECUTED_ALU1_ALL", "XVE_INST_EXECUTED_SEND_ALL", "XVE_INST_EXECUTED_XMX_ALL"};
    for (int i = 0; i < 6; i++)
        if ((col[i] = metric_col(db, m[i])) < 0)
            return;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT s.value, z.deviceId, z.start, z.end, (SELECT xveCount FROM METRIC_DEVICES d"
                           " WHERE d.deviceId = z.deviceId), r.nameId FROM HGTX_RANGES r JOIN HGTX_OP_ASSOC a ON a.rangeId = r.id"
                           " JOIN ZE_OPS z ON z.rowid = a.opId AND z.kind != 4 JOIN STRING_IDS s ON s.id = r.nameId"
                           " ORDER BY r.nameId, z.deviceId", -1, &st, NULL) != SQLITE_OK)
        return; /* no HGTX/ZE tables in this session: no section */
    /* the ranges' device work first (name, device, op), then only the chunks it overlaps */
    typedef struct rop { int64_t name, dev; uint64_t s, e; double xve; char text[64]; } rop_t;
    rop_t *ops = NULL;
    size_t nops = 0, ocap = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (nops == ocap) {
            rop_t *no = realloc(ops, (ocap = ocap ? ocap * 2 : 256) * sizeof *ops);
            if (!no)
                break;
            ops = no;
        }
        rop_t *o = &ops[nops++];
        const char *nm = (const char *)sqlite3_column_text(st, 0);
        snprintf(o->text, sizeof o->text, "%s", nm ? nm : "");
        o->dev = sqlite3_column_int64(st, 1);
        o->s = (uint64_t)sqlite3_column_int64(st, 2);
        o->e = (uint64_t)sqlite3_column_int64(st, 3);
        o->xve = sqlite3_column_double(st, 4);
        o->name = sqlite3_column_int64(st, 5);
    }
    sqlite3_finalize(st);
    long long slack = pa_dm_slack_ns(db);
    pa_dm_window_t *w = malloc((nops ? nops : 1) * sizeof *w);
    pa_dm_series_t *ser = NULL;
    size_t nser = 0, nw = nops;
    for (size_t i = 0; w && i < nops; i++)
        w[i] = (pa_dm_window_t){ops[i].dev, ops[i].s, ops[i].e};
    int loaded = w && nops && pa_dm_series_load_windows(db, "", w, &nw, slack, &ser, &nser, NULL) == 0 && nser;
    free(w);
    if (!loaded) {
        free(ops);
        pa_dm_series_free(ser, nser);
        return;
    }
    rrow_t *rows = NULL;
    size_t nr = 0, cap = 0;
    static const char *const uname[4] = {"Scalar Unit", "Vector ALU", "Vector Load/Store", "MXU"};
    static const double rate[4] = {1, 2, 1, 1};
    const char *cur = "";
    int64_t cdev = -1, cname = -1;
    double xve = 0;
    uint32_t stamp = 0;
    racc_t acc = {col, 0, {0}};
    for (size_t oi = 0; oi <= nops; oi++) {
        int more = oi < nops;
        int64_t dev = more ? ops[oi].dev : -1, name = more ? ops[oi].name : -1;
        if (!more || dev != cdev || name != cname) {
            /* one (name, device) group is complete */
            double clocks = acc.v[0];
            if (stamp && clocks > 0 && xve > 0 && acc.nint) {
                if (nr == cap) {
                    rrow_t *nrw = realloc(rows, (cap = cap ? cap * 2 : 16) * sizeof *rows);
                    if (!nrw)
                        break;
                    rows = nrw;
                }
                rrow_t *r = &rows[nr++];
                memset(r, 0, sizeof *r);
                snprintf(r->name, sizeof r->name, "%s", cur);
                r->dev = cdev;
                r->nint = acc.nint;
                double a4[4] = {acc.v[1], acc.v[2] + acc.v[3], acc.v[4], acc.v[5]};
                for (int u = 0; u < 4; u++) {
                    r->util[u] = 100.0 * a4[u] / (rate[u] * xve * clocks);
                    if (r->util[u] > r->busiest || u == 0) {
                        r->busiest = r->util[u];
                        r->unit = u;
                    }
                }
            }
            if (!more)
                break;
            cur = ops[oi].text;
            cdev = dev;
            cname = name;
            xve = ops[oi].xve;
            stamp++;
            memset(&acc, 0, sizeof acc);
            acc.col = col;
        }
        pa_dm_series_t *se = pa_dm_series_find(ser, nser, dev);
        if (se)
            pa_dm_series_mark(se, ops[oi].s, ops[oi].e, slack, stamp, racc_add, &acc);
    }
    free(ops);
    pa_dm_series_free(ser, nser);
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
