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
        qsort(v, n, sizeof *v, cmp_total);
    *out = v;
    return n;
}

static void stat_cells(pa_table_t *t, const pa_stat_t *s, double grand, int pct)
{
    if (pct)
        pa_table_add_double(t, grand > 0 ? (double)s->total * 100.0 / grand : 0.0, 1);
    pa_table_add_int(t, (int64_t)s->total);
    pa_table_add_int(t, (int64_t)s->count);
    pa_table_add_double(t, (double)s->total / (double)s->count, 0);
    pa_table_add_double(t, s->median, 0);
    pa_table_add_int(t, (int64_t)s->min);
    pa_table_add_int(t, (int64_t)s->max);
    pa_table_add_double(t, pa_stddev_pop(s->count, s->m2), 0);
}

static void section(FILE *out, const pa_agg_results_t *res, int cat, uint32_t tag, const char *heading,
                    const char *report, int demangle, int pct)
{
    static const char *const tpct[] = { "Time (%)", "Total Time (ns)", "Count", "Avg (ns)", "Med (ns)",
                                        "Min (ns)", "Max (ns)", "StdDev (ns)", "Name" };
    static const char *const tbytes[] = { "Total (bytes)", "Count", "Avg (bytes)", "Med (bytes)",
                                          "Min (bytes)", "Max (bytes)", "StdDev (bytes)", "Operation" };
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
    for (size_t i = 0; i < n && i < PA_ZE_TOP; i++) {
        stat_cells(&t, &v[i]->st, grand, pct);
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
}

static void utilization(FILE *out, const pa_agg_results_t *res)
{
    const pa_stat_row_t **v, **span;
    double g1, g2;
    size_t n = pick(res, PA_CAT_MEMOP, 2, &v, &g1);
    size_t ns = pick(res, PA_CAT_MEMOP, 3, &span, &g2);
    uint64_t run = res->last_ns > res->first_ns ? res->last_ns - res->first_ns : 0;
    if (n && run) {
        fprintf(out, "\nDevice utilization (busy time of kernels, copies and fills / run time %llu ns):\n",
                (unsigned long long)run);
        for (size_t i = 0; i < n; i++)
            fprintf(out, "  %.*s: %llu ns busy, %.1f %%\n", (int)v[i]->key_len, v[i]->key,
                    (unsigned long long)v[i]->st.total, 100.0 * (double)v[i]->st.total / (double)run);
    }
    (void)ns;
    free(v);
    free(span);
}

void pa_ze_summary_print(FILE *out, const pa_session_meta_t *meta, const pa_agg_results_t *res)
{
    (void)meta;
    if (!res)
        return;
    section(out, res, PA_CAT_KERNEL, 0, "Level Zero kernels (device time)", "kern_sum", 1, 1);
    section(out, res, PA_CAT_ZE_API, 0, "Level Zero API calls", "ze_api_sum", 0, 1);
    section(out, res, PA_CAT_MEMOP, 0, "Level Zero copies and fills by direction (device time)",
            "mem_time_sum", 0, 1);
    section(out, res, PA_CAT_MEMOP, 1, "Level Zero copies and fills by direction (bytes)",
            "mem_size_sum", 0, 0);
    utilization(out, res);
    uint64_t unc, full;
    pa_ze_counts(&unc, &full);
    if (unc || full)
        fprintf(out, "\nLevel Zero: %llu device operation(s) not collected (event never signaled or "
                "unavailable), %llu not tracked (in-flight table full)\n",
                (unsigned long long)unc, (unsigned long long)full);
}
