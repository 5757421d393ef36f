/* dm_series.c - device metric intervals decoded from METRIC_CHUNKS for the reports and the summary
 * (ppu_metric_trace, unit_util_sum, dma_util_sum, busiest ranges), and overlap selection by time. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "../common/pa_devmetrics.h"
#include "writer_dm.h"

static int grow(pa_dm_series_t *s, size_t want)
{
    if (want <= s->cap)
        return 0;
    size_t cap = s->cap ? s->cap : 1024;
    while (cap < want)
        cap *= 2;
    uint64_t *st = realloc(s->start, cap * sizeof *st);
    if (st)
        s->start = st;
    uint64_t *du = realloc(s->dur, cap * sizeof *du);
    if (du)
        s->dur = du;
    double *v = realloc(s->v, cap * (s->nmetrics ? s->nmetrics : 1) * sizeof *v);
    if (v)
        s->v = v;
    if (!st || !du || !v)
        return -1;
    s->cap = cap;
    return 0;
}

const uint8_t *pa_dm_chunk_raw(const void *data, size_t len, size_t *got, int *oom)
{
    static uint8_t *raw;   /* reports are made on one thread (the CLI, or the writer at exit) */
    static size_t rawcap;
    *oom = 0;
    unsigned long long full = data ? ZSTD_getFrameContentSize(data, len) : 0;
    if (!data || full == ZSTD_CONTENTSIZE_ERROR || full == ZSTD_CONTENTSIZE_UNKNOWN || full > (1ull << 31))
        return NULL;
    if (full > rawcap || !raw) {
        uint8_t *nr = realloc(raw, full ? full : 1);
        if (!nr) {
            *oom = 1;
            return NULL;
        }
        raw = nr;
        rawcap = full ? full : 1;
    }
    size_t n = ZSTD_decompress(raw, rawcap, data, len);
    if (ZSTD_isError(n) || n != full)
        return NULL;
    *got = n;
    return raw;
}

/* Appends one chunk's intervals to s (data: a zstd frame of the pack); -1 when malformed (what
 * decoded before stays). */
static int add_chunk(pa_dm_series_t *s, uint64_t base, size_t n, const void *data, size_t len, pa_dm_mstate_t *prev)
{
    if (grow(s, s->n + n) != 0)
        return -2;
    size_t got = 0;
    int oom;
    const uint8_t *raw = pa_dm_chunk_raw(data, len, &got, &oom);
    if (!raw)
        return oom ? -2 : -1;
    pa_dm_unpack_t u;
    pa_dm_unpack_init(&u, raw, got, base, s->nmetrics, prev);
    for (size_t i = 0; i < n; i++) {
        size_t at = s->n;
        if (pa_dm_unpack_next(&u, &s->start[at], &s->dur[at], s->v + at * s->nmetrics) != 1)
            return -1;
        s->n++;
    }
    return 0;
}

static int cmp_idx_start(const void *a, const void *b, void *arg)
{
    const pa_dm_series_t *s = arg;
    uint64_t x = s->start[*(const size_t *)a], y = s->start[*(const size_t *)b];
    return x < y ? -1 : x > y;
}

/* Chunks of a merged or recovered DB may come in any order: sort the intervals by start. */
static int sort_series(pa_dm_series_t *s)
{
    size_t i = 1;
    while (i < s->n && s->start[i - 1] <= s->start[i])
        i++;
    if (i >= s->n)
        return 0;
    size_t *ix = malloc(s->n * sizeof *ix);
    uint64_t *st = malloc(s->n * sizeof *st), *du = malloc(s->n * sizeof *du);
    double *v = malloc(s->n * (s->nmetrics ? s->nmetrics : 1) * sizeof *v);
    if (!ix || !st || !du || !v) {
        free(ix), free(st), free(du), free(v);
        return -1;
    }
    for (i = 0; i < s->n; i++)
        ix[i] = i;
    qsort_r(ix, s->n, sizeof *ix, cmp_idx_start, s);
    for (i = 0; i < s->n; i++) {
        st[i] = s->start[ix[i]];
        du[i] = s->dur[ix[i]];
        memcpy(v + i * s->nmetrics, s->v + ix[i] * s->nmetrics, s->nmetrics * sizeof *v);
    }
    free(ix), free(s->start), free(s->dur), free(s->v);
    s->start = st, s->dur = du, s->v = v, s->cap = s->n;
    return 0;
}

static int cmp_win(const void *a, const void *b)
{
    const pa_dm_window_t *x = a, *y = b;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Sorts and merges overlapping windows of a device; returns the new count. */
static size_t merge_windows(pa_dm_window_t *w, size_t n)
{
    if (!n)
        return 0;
    qsort(w, n, sizeof *w, cmp_win);
    size_t k = 0;
    for (size_t i = 1; i < n; i++) {
        if (w[i].dev == w[k].dev && w[i].start <= w[k].end) {
            if (w[i].end > w[k].end)
                w[k].end = w[i].end;
        } else {
            w[++k] = w[i];
        }
    }
    return k + 1;
}

/* Does [s, e) of device dev overlap a window widened by slack? */
static int in_windows(const pa_dm_window_t *w, size_t n, int64_t dev, uint64_t s, uint64_t e, long long slack)
{
    size_t lo = 0, hi = n; /* first window of dev whose end + slack > s */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (w[mid].dev < dev || (w[mid].dev == dev && (long long)w[mid].end + slack <= (long long)s))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && w[lo].dev == dev && (long long)w[lo].start < (long long)e + slack;
}

static int series_load(sqlite3 *db, const char *dev_clause, const pa_dm_window_t *w, size_t nw, long long slack,
                       pa_dm_series_t **out, size_t *nout, size_t *bad);

int pa_dm_series_load(sqlite3 *db, const char *dev_clause, pa_dm_series_t **out, size_t *nout, size_t *bad)
{
    return series_load(db, dev_clause, NULL, 0, 0, out, nout, bad);
}

int pa_dm_series_load_windows(sqlite3 *db, const char *dev_clause, pa_dm_window_t *w, size_t *nwp, long long slack,
                              pa_dm_series_t **out, size_t *nout, size_t *bad)
{
    size_t nw = *nwp = merge_windows(w, *nwp);
    if (!nw) { /* nothing to overlap: empty series, the DB still has to hold chunks */
        pa_dm_window_t none = {INT64_MIN, 0, 0};
        return series_load(db, dev_clause, &none, 1, 0, out, nout, bad);
    }
    return series_load(db, dev_clause, w, nw, slack, out, nout, bad);
}

static int series_load(sqlite3 *db, const char *dev_clause, const pa_dm_window_t *w, size_t nw, long long slack,
                       pa_dm_series_t **out, size_t *nout, size_t *bad)
{
    char sql[1024];
    snprintf(sql, sizeof sql, "SELECT o.deviceId, o.startNs, o.intervals, o.nmetrics, o.data, o.endNs FROM METRIC_CHUNKS o"
             " WHERE 1 %s ORDER BY o.deviceId, o.startNs", dev_clause ? dev_clause : "");
    sqlite3_stmt *st;
    *out = NULL;
    *nout = 0;
    if (bad)
        *bad = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    pa_dm_series_t *v = NULL;
    size_t n = 0, cap = 0;
    pa_dm_mstate_t *prev = NULL;
    uint32_t prevcap = 0;
    int rc = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        int64_t dev = sqlite3_column_int64(st, 0), nint = sqlite3_column_int64(st, 2), nm = sqlite3_column_int64(st, 3);
        if (nint <= 0 || nm <= 0 || nm > 1024 || nint > 100000000)
            continue;
        if (w && !in_windows(w, nw, dev, (uint64_t)sqlite3_column_int64(st, 1), (uint64_t)sqlite3_column_int64(st, 5), slack))
            continue; /* the blob is not even read */
        if (!n || v[n - 1].dev != dev || v[n - 1].nmetrics != (uint32_t)nm) {
            if (n && v[n - 1].dev == dev) { /* one device, another metric count: not a stream of ours */
                if (bad)
                    (*bad)++;
                continue;
            }
            if (n == cap) {
                pa_dm_series_t *nv = realloc(v, (cap = cap ? cap * 2 : 4) * sizeof *v);
                if (!nv) {
                    rc = -1;
                    break;
                }
                v = nv;
            }
            memset(&v[n], 0, sizeof v[n]);
            v[n].dev = dev;
            v[n].nmetrics = (uint32_t)nm;
            n++;
        }
        if ((uint32_t)nm > prevcap) {
            pa_dm_mstate_t *np = realloc(prev, (size_t)nm * sizeof *np);
            if (!np) {
                rc = -1;
                break;
            }
            prev = np;
            prevcap = (uint32_t)nm;
        }
        int r = add_chunk(&v[n - 1], (uint64_t)sqlite3_column_int64(st, 1), (size_t)nint, sqlite3_column_blob(st, 4),
                          (size_t)sqlite3_column_bytes(st, 4), prev);
        if (r == -2)
            rc = -1;
        else if (r != 0 && bad)
            (*bad)++;
    }
    sqlite3_finalize(st);
    free(prev);
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (sort_series(&v[i]) != 0 || !(v[i].mark = calloc(v[i].n ? v[i].n : 1, sizeof *v[i].mark)))
            rc = -1;
    if (rc != 0) {
        pa_dm_series_free(v, n);
        return -1;
    }
    *out = v;
    *nout = n;
    return 0;
}

void pa_dm_series_free(pa_dm_series_t *s, size_t n)
{
    for (size_t i = 0; s && i < n; i++) {
        free(s[i].start);
        free(s[i].dur);
        free(s[i].v);
        free(s[i].mark);
    }
    free(s);
}

pa_dm_series_t *pa_dm_series_find(pa_dm_series_t *s, size_t n, int64_t dev)
{
    for (size_t i = 0; i < n; i++)
        if (s[i].dev == dev)
            return &s[i];
    return NULL;
}

void pa_dm_series_mark(pa_dm_series_t *s, uint64_t start, uint64_t end, long long slack, uint32_t stamp,
                       void (*fn)(void *arg, const pa_dm_series_t *s, size_t i), void *arg)
{
    /* intervals tile (ends ascend with starts): the first whose end + slack > start */
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((long long)(s->start[mid] + s->dur[mid]) + slack > (long long)start)
            hi = mid;
        else
            lo = mid + 1;
    }
    for (size_t i = lo; i < s->n && (long long)s->start[i] < (long long)end + slack; i++) {
        if ((long long)(s->start[i] + s->dur[i]) + slack <= (long long)start || s->mark[i] == stamp)
            continue;
        s->mark[i] = stamp;
        fn(arg, s, i);
    }
}
