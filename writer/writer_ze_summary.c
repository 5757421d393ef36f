/* writer_ze_summary.c - the Level Zero section of the exit summary, from the aggregates. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "writer_internal.h"
#include "writer_ze.h"
#include "../common/pa_stddev.h"

#define PA_ZE_TOP 10

static int cmp_total(const void *a, const void *b)
{
    const pa_stat_row_t *x = *(const pa_stat_row_t *const *)a, *y = *(const pa_stat_row_t *const *)b;
    if (x->st.total != y->st.total)
        return x->st.total < y->st.total ? 1 : -1;
    size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
    int c = memcmp(x->key, y->key, n);
    return c ? c : (x->key_len > y->key_len) - (x->key_len < y->key_len);
}

/* Rows of (cat, tag) sorted by total descending; returns the count, *grand = sum of totals. */
static size_t pick(const pa_agg_results_t *res, int cat, uint32_t tag, const pa_stat_row_t ***out, double *grand)
{
    const pa_stat_row_t **v = malloc((res->nrows + 1) * sizeof *v);
    size_t n = 0;
    *grand = 0;
    for (size_t i = 0; v && i < res->nrows; i++)
        if (res->rows[i].cat == cat && res->rows[i].tag == tag && res->rows[i].st.count) {
            v[n++] = &res->rows[i];
            *grand += (double)res->rows[i].st.total;
        }
    if (v)
        pa_sort(v, n, sizeof *v, cmp_total);
    *out = v;
    return n;
}

/* The row's cells; returns 1 when its median is known (exact, or recomputed by the writer). */
static int stat_cells(pa_table_t *t, const pa_agg_results_t *res, const pa_stat_row_t *row, double grand, int pct)
{
    const pa_stat_t *s = &row->st;
    double med;
    int have = pa_summary_row_median(res, row, &med);
    if (pct)
        pa_table_add_double(t, grand > 0 ? (double)s->total * 100.0 / grand : 0.0, 1);
    pa_table_add_int(t, (int64_t)s->total);
    pa_table_add_int(t, (int64_t)s->count);
    pa_table_add_double(t, (double)s->total / (double)s->count, 0);
    if (have)
        pa_table_add_double(t, med, 0);
    else
        pa_table_add_str(t, "-", 1); /* past the sample budget: the reports compute it */
    pa_table_add_int(t, (int64_t)s->min);
    pa_table_add_int(t, (int64_t)s->max);
    pa_table_add_double(t, pa_stddev_pop(s->count, s->m2), 0);
    return have;
}

/* Column names as in the report the section abbreviates (kern_sum, ze_api_sum, mem_time_sum,
 * mem_size_sum): `count` names the count column, `what` the name column. */
static void section(FILE *out, const pa_agg_results_t *res, int cat, uint32_t tag, const char *heading,
                    const char *report, int demangle, int pct, const char *count, const char *what)
{
    const char *const tpct[] = { "Time (%)", "Total Time (ns)", count, "Avg (ns)", "Med (ns)",
                                 "Min (ns)", "Max (ns)", "StdDev (ns)", what };
    const char *const tbytes[] = { "Total (bytes)", count, "Avg (bytes)", "Med (bytes)",
                                   "Min (bytes)", "Max (bytes)", "StdDev (bytes)", what };
    const pa_stat_row_t **v;
    double grand;
    size_t n = pick(res, cat, tag, &v, &grand);
    if (n == 0) {
        free(v);
        return;
    }
    pa_table_t t;
    memset(&t, 0, sizeof t);
    t.ncols = pct ? 9 : 8;
    t.titles = pct ? tpct : tbytes;
    size_t nomed = 0;
    for (size_t i = 0; i < n && i < PA_ZE_TOP; i++) {
        nomed += !stat_cells(&t, res, v[i], grand, pct);
        char *d = demangle ? pa_ze_demangle(v[i]->key) : NULL;
        if (d)
            pa_table_add_str(&t, d, strlen(d));
        else
            pa_table_add_str(&t, v[i]->key, v[i]->key_len);
        free(d);
    }
    fprintf(out, "\n%s (top %zu of %zu by total; all: profagent stats -r %s):\n", heading,
            n < PA_ZE_TOP ? n : (size_t)PA_ZE_TOP, n, report);
    pa_table_write(&t, PA_FMT_TABLE, out);
    pa_table_free(&t);
    free(v);
    if (nomed)
        pa_summary_median_note(out, report);
}

/* Device busy time (ns) per device: the union of the [start, end) intervals of its ZE_OPS rows
 * (kernels, copies, fills), set by pa_ze_busy_compute() while the DB is written. */
#define PA_ZE_BUSY_DEVS 256
static struct { int64_t dev; uint64_t busy, last_end; } busy[PA_ZE_BUSY_DEVS];
static size_t nbusy;
static int busy_ready;

/* The device's slot, NULL when the table is full (more devices than any node has). */
static size_t busy_slot(int64_t dev)
{
    size_t i = 0;
    while (i < nbusy && busy[i].dev != dev)
        i++;
    if (i == nbusy && nbusy < PA_ZE_BUSY_DEVS) {
        busy[i].dev = dev;
        busy[i].busy = busy[i].last_end = 0;
        nbusy++;
    }
    return i;
}

int pa_ze_busy_compute(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    nbusy = 0;
    busy_ready = 0;
    /* in start order (ZE_OPS_start index) the union is one pass keeping the furthest end seen */
    if (sqlite3_prepare_v2(db, "SELECT deviceId, start, end FROM ZE_OPS WHERE kind IN (1, 2, 3) AND end > start AND deviceId"
                           " IS NOT NULL ORDER BY start", -1, &st, NULL) != SQLITE_OK)
        return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        size_t i = busy_slot(sqlite3_column_int64(st, 0));
        uint64_t t0 = (uint64_t)sqlite3_column_int64(st, 1), t1 = (uint64_t)sqlite3_column_int64(st, 2);
        if (i == PA_ZE_BUSY_DEVS || t1 <= busy[i].last_end)
            continue;
        busy[i].busy += t1 - (t0 > busy[i].last_end ? t0 : busy[i].last_end);
        busy[i].last_end = t1;
    }
    sqlite3_finalize(st);
    busy_ready = rc == SQLITE_DONE;
    return busy_ready ? 0 : -1;
}

static int cmp_busy(const void *a, const void *b)
{
    const __typeof__(busy[0]) *x = a, *y = b;
    if (x->busy != y->busy)
        return x->busy < y->busy ? 1 : -1;
    return (x->dev > y->dev) - (x->dev < y->dev);
}

/* Busy time per device over the session duration (the "Duration" of the summary header). */
static void utilization(FILE *out, const pa_session_meta_t *meta, const pa_agg_results_t *res)
{
    uint64_t run = meta && meta->end_mono_ns > meta->start_mono_ns ? meta->end_mono_ns - meta->start_mono_ns
                   : res->last_ns > res->first_ns ? res->last_ns - res->first_ns : 0;
    if (!busy_ready || !nbusy || !run)
        return; /* no DB (the union comes from its sorted ZE_OPS rows) or no device work */
    pa_sort(busy, nbusy, sizeof busy[0], cmp_busy);
    fprintf(out, "\nDevice utilization (busy time = union of the device's kernel, copy and fill intervals"
            " in ZE_OPS, over the session duration %llu ns):\n", (unsigned long long)run);
    for (size_t i = 0; i < nbusy; i++)
        fprintf(out, "  device %lld: %llu ns busy, %.1f %%\n", (long long)busy[i].dev,
                (unsigned long long)busy[i].busy, 100.0 * (double)busy[i].busy / (double)run);
}

/* Why the tracing layer was used (collector/ze_entry.c, enum pa_ze_why). */
static const char *ze_why_text(uint64_t why)
{
    switch (why) {
    case 1: return "PROFAGENT_ZE_INTERCEPT=tracer";
    case 2: return "ZE_ENABLE_TRACING_LAYER=1 is set in the environment";
    case 3: return "the application's ze* calls do not resolve to the agent";
    case 4: return "the loader's entry points are not of a recognized shape";
    case 5: return "loader entry points not available on this architecture";
    default: return "?";
    }
}

void pa_ze_summary_print(FILE *out, const pa_session_meta_t *meta, const pa_agg_results_t *res)
{
    if (!res)
        return;
    uint64_t path, why;
    pa_ze_intercept(&path, &why);
    if (path == 1)
        fprintf(out, "\nLevel Zero interception: loader entry points (no tracing layer)\n");
    else if (path == 2)
        fprintf(out, "\nLevel Zero interception: tracing layer (%s)\n", ze_why_text(why));
    else if (why == 6) /* collector/ze_internal.h PA_ZE_WHY_NO_GPU */
        fprintf(out, "\nLevel Zero: the application initialized it without GPU drivers (zeInit flags without"
                " ZE_INIT_FLAG_GPU_ONLY, e.g. ZE_INIT_FLAG_VPU_ONLY): no GPU activity to trace\n");
    section(out, res, PA_CAT_KERNEL, 0, "Level Zero kernels (device time)", "kern_sum", 1, 1, "Instances",
            "Name");
    section(out, res, PA_CAT_ZE_API, 0, "Level Zero API calls", "ze_api_sum", 0, 1, "Num Calls", "Name");
    section(out, res, PA_CAT_MEMOP, 0, "Level Zero copies and fills by direction (device time)",
            "mem_time_sum", 0, 1, "Count", "Operation");
    section(out, res, PA_CAT_MEMOP, 1, "Level Zero copies and fills by direction (bytes)",
            "mem_size_sum", 0, 0, "Count", "Operation");
    utilization(out, meta, res);
    uint64_t unc, full;
    pa_ze_counts(&unc, &full);
    if (unc || full)
        fprintf(out, "\nLevel Zero: %llu device operation(s) not collected (event never signaled or "
                "unavailable), %llu not tracked (in-flight table full)\n",
                (unsigned long long)unc, (unsigned long long)full);
}
