/* timeline.c - loads a profagent DB into the timeline model: slices per logical track, split
 * into lanes that nest (threads) or never overlap (devices), flows and memory counters. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "timeline.h"
#include "writer_ze.h"

static const char *const pa_tl_cats[PA_TL_NCATS] = {
    "ze", "osrt", "mem", "hgtx", "hgtx_startend", "mark", "kernel", "copy", "fill",
};

const char *pa_tl_cat_name(int cat)
{
    return cat >= 0 && cat < PA_TL_NCATS ? pa_tl_cats[cat] : "?";
}

/* ---- growable arrays and strings ---- */

static int pa_tl_grow(pa_tl_t *tl, void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 1024;
    void *p = realloc(*arr, nc * elem);
    if (!p) {
        tl->oom = 1;
        return -1;
    }
    *arr = p;
    *cap = nc;
    return 0;
}
#define PA_TL_PUSH(tl, arr, n, cap) \
    (pa_tl_grow(tl, (void **)&(tl)->arr, &(tl)->cap, (tl)->n, sizeof *(tl)->arr) ? NULL : &(tl)->arr[(tl)->n++])

static uint64_t pa_tl_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* Index of the string s[0..n) in tl->strings, added when new; UINT32_MAX when out of memory. */
static uint32_t pa_tl_intern(pa_tl_t *tl, const char *s, size_t n)
{
    if (tl->nstrings * 2 >= tl->hash_cap) {
        size_t nc = tl->hash_cap ? tl->hash_cap * 2 : 4096;
        uint32_t *nh = calloc(nc, sizeof *nh);
        if (!nh) {
            tl->oom = 1;
            return UINT32_MAX;
        }
        for (size_t i = 0; i < tl->nstrings; i++) {
            size_t k = pa_tl_hash(tl->strings[i], tl->string_len[i]) & (nc - 1);
            while (nh[k])
                k = (k + 1) & (nc - 1);
            nh[k] = (uint32_t)i + 1;
        }
        free(tl->hash);
        tl->hash = nh;
        tl->hash_cap = nc;
    }
    size_t k = pa_tl_hash(s, n) & (tl->hash_cap - 1);
    for (; tl->hash[k]; k = (k + 1) & (tl->hash_cap - 1)) {
        uint32_t i = tl->hash[k] - 1;
        if (tl->string_len[i] == n && memcmp(tl->strings[i], s, n) == 0)
            return i;
    }
    if (pa_tl_grow(tl, (void **)&tl->strings, &tl->cap_strings, tl->nstrings, sizeof *tl->strings))
        return UINT32_MAX;
    size_t *nl = realloc(tl->string_len, tl->cap_strings * sizeof *nl);
    char *c = malloc(n + 1);
    if (!nl || !c) {
        if (nl)
            tl->string_len = nl;
        free(c);
        tl->oom = 1;
        return UINT32_MAX;
    }
    tl->string_len = nl;
    memcpy(c, s, n);
    c[n] = '\0';
    tl->strings[tl->nstrings] = c;
    tl->string_len[tl->nstrings] = n;
    tl->hash[k] = (uint32_t)++tl->nstrings;
    return (uint32_t)tl->nstrings - 1;
}

static uint32_t pa_tl_internz(pa_tl_t *tl, const char *s)
{
    return pa_tl_intern(tl, s ? s : "", s ? strlen(s) : 0);
}

/* ---- logical tracks (groups) before the lane split ---- */

typedef struct pa_tl_group {
    int kind;           /* enum pa_tl_track_kind of lane 0 */
    int nest;           /* 1: slices may nest (a thread's calls and ranges); 0: never overlap */
    int64_t pid, tid, device, key2, key3;
    uint32_t name;
    uint32_t first_track, ntracks;
} pa_tl_group_t;

typedef struct pa_tl_ctx {
    pa_tl_t *tl;
    sqlite3 *db;
    pa_tl_group_t *groups; size_t ngroups, cap;
    int64_t main_pid;
    struct pa_tl_api_key *keys; size_t nkeys;  /* API slices by (corrId, start, tid), for flows */
    char *err; size_t errsz;
} pa_tl_ctx_t;

/* The group of (kind, pid, tid, device, key2, key3), created with `name` when new. A linear
 * search from the end: groups are few (threads x sources + device queues). */
static int64_t pa_tl_group(pa_tl_ctx_t *c, int kind, int nest, int64_t pid, int64_t tid, int64_t dev,
                           int64_t k2, int64_t k3, const char *name)
{
    for (size_t i = c->ngroups; i-- > 0;) {
        const pa_tl_group_t *g = &c->groups[i];
        if (g->kind == kind && g->pid == pid && g->tid == tid && g->device == dev && g->key2 == k2 && g->key3 == k3)
            return (int64_t)i;
    }
    if (c->ngroups == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 64;
        pa_tl_group_t *ng = realloc(c->groups, nc * sizeof *ng);
        if (!ng) {
            c->tl->oom = 1;
            return -1;
        }
        c->groups = ng;
        c->cap = nc;
    }
    pa_tl_group_t *g = &c->groups[c->ngroups];
    memset(g, 0, sizeof *g);
    g->kind = kind;
    g->nest = nest;
    g->pid = pid;
    g->tid = tid;
    g->device = dev;
    g->key2 = k2;
    g->key3 = k3;
    g->name = pa_tl_internz(c->tl, name);
    return (int64_t)c->ngroups++;
}

static int pa_tl_has_table(sqlite3 *db, const char *name)
{
    sqlite3_stmt *st;
    int has = 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type IN ('table','view') AND name = ?1",
                           -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    has = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return has;
}

/* Runs `sql` and calls row() per result row; a missing table (`table` not in the DB) is no
 * error: that source simply recorded nothing. Returns 0 or -1 with err set. */
static int pa_tl_query(pa_tl_ctx_t *c, const char *table, const char *sql,
                       int (*row)(pa_tl_ctx_t *, sqlite3_stmt *))
{
    sqlite3_stmt *st;
    if (table && !pa_tl_has_table(c->db, table))
        return 0;
    if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(c->err, c->errsz, "reading %s: %s", table ? table : "the DB", sqlite3_errmsg(c->db));
        return -1;
    }
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if (row(c, st) != 0 || c->tl->oom) {
            sqlite3_finalize(st);
            snprintf(c->err, c->errsz, "out of memory while reading %s", table ? table : "the DB");
            return -1;
        }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        snprintf(c->err, c->errsz, "reading %s: %s", table ? table : "the DB", sqlite3_errmsg(c->db));
        return -1;
    }
    return 0;
}

static const char *pa_tl_col(sqlite3_stmt *st, int i, size_t *n)
{
    const char *s = (const char *)sqlite3_column_text(st, i);
    *n = s ? (size_t)sqlite3_column_bytes(st, i) : 0;
    return s ? s : "";
}

/* Appends a slice; its name is column `ncol` of st. Returns its index or -1. */
static int64_t pa_tl_add(pa_tl_ctx_t *c, int64_t group, int cat, int64_t t0, int64_t t1, sqlite3_stmt *st,
                         int ncol, int64_t id, int64_t val)
{
    size_t n;
    const char *s = pa_tl_col(st, ncol, &n);
    if (group < 0)
        return -1;
    pa_tl_slice_t *sl = PA_TL_PUSH(c->tl, slices, nslices, cap_slices);
    if (!sl)
        return -1;
    sl->t0 = t0;
    sl->t1 = t1 < t0 ? t0 : t1;
    sl->group = (uint32_t)group;
    sl->track = 0;
    sl->cat = (uint8_t)cat;
    sl->id = id;
    sl->val = val;
    sl->name = pa_tl_intern(c->tl, s, n);
    return (int64_t)(c->tl->nslices - 1);
}

/* ---- the sources ---- */

static int64_t pa_tl_thread_group(pa_tl_ctx_t *c, int64_t gtid)
{
    char name[64];
    int64_t pid = (int64_t)((uint64_t)gtid >> 32), tid = gtid & 0xffffffff;
    snprintf(name, sizeof name, "thread %lld", (long long)tid);
    return pa_tl_group(c, PA_TL_TRACK_THREAD, 1, pid, tid, -1, 0, 0, name);
}

static int pa_tl_row_thread(pa_tl_ctx_t *c, sqlite3_stmt *st)
{
    int64_t g = pa_tl_thread_group(c, sqlite3_column_int64(st, 0));
    size_t n;
    const char *s = pa_tl_col(st, 1, &n);
    if (g < 0)
        return -1;
    if (n)
        c->groups[g].name = pa_tl_intern(c->tl, s, n);
    return 0;
}

/* ZE_API rows; corrId in id (flows), their thread's global id from THREADS. */
static int pa_tl_row_ze(pa_tl_ctx_t *c, sqlite3_stmt *st)
{
    int64_t gtid = sqlite3_column_type(st, 5) == SQLITE_NULL ? (c->main_pid << 32 | sqlite3_column_int64(st, 2))
                                                             : sqlite3_column_int64(st, 5);
    return pa_tl_add(c, pa_tl_thread_group(c, gtid), PA_TL_ZE, sqlite3_column_int64(st, 0) - c->tl->origin_ns,
                     sqlite3_column_int64(st, 1) - c->tl->origin_ns, st, 3, sqlite3_column_int64(st, 4), 0) < 0 ? -1 : 0;
}

static int pa_tl_row_osrt(pa_tl_ctx_t *c, sqlite3_stmt *st)
{
    return pa_tl_add(c, pa_tl_thread_group(c, sqlite3_column_int64(st, 2)), PA_TL_OSRT,
                     sqlite3_column_int64(st, 0) - c->tl->origin_ns, sqlite3_column_int64(st, 1) - c->tl->origin_ns,
                     st, 3, 0, 0) < 0 ? -1 : 0;
}

/* A child track of a thread: (thread gtid, which, key), e.g. memory calls, one HGTX domain. */
static int64_t pa_tl_child_group(pa_tl_ctx_t *c, int64_t gtid, int which, int64_t key, const char *label)
{
    char name[256];
    int64_t pid = (int64_t)((uint64_t)gtid >> 32), tid = gtid & 0xffffffff;
    if (pa_tl_thread_group(c, gtid) < 0)
        return -1;
    snprintf(name, sizeof name, "%s (thread %lld)", label, (long long)tid);
    return pa_tl_group(c, PA_TL_TRACK_THREAD_CHILD, 1, pid, tid, -1, which, key, name);
}

static int pa_tl_row_mem(pa_tl_ctx_t *c, sqlite3_stmt *st)
{
    int64_t g = pa_tl_child_group(c, sqlite3_column_int64(st, 2), 1, 0, "device memory");
    return pa_tl_add(c, g, PA_TL_MEM, sqlite3_column_int64(st, 0) - c->tl->origin_ns,
                     sqlite3_column_int64(st, 1) - c->tl->origin_ns, st, 3, sqlite3_column_int64(st, 4),
                     sqlite3_column_int64(st, 5)) < 0 ? -1 : 0;
}

/* HGTX ranges: push/pop on a child track of the thread per domain (stacks are per thread and
 * domain, so they nest there); start/end on a process track per domain, in lanes. */
static int pa_tl_row_range(pa_tl_ctx_t *c, sqlite3_stmt *st)
{
    int64_t gtid = sqlite3_column_int64(st, 2), dom = sqlite3_column_int64(st, 4);
    int style = sqlite3_column_int(st, 5);
    size_t n;
    const char *dn = pa_tl_col(st, 7, &n);
    char label[160];
    int64_t g;
    if (!n) {
        dn = "default";
        n = 7;
    }
    snprintf(label, sizeof label, "HGTX %.*s%s", (int)(n > 100 ? 100 : n), dn, style ? " start/end" : "");
    if (style == 0) {
        g = pa_tl_child_group(c, gtid, 2, dom, label);
    } else {
        int64_t pid = (int64_t)((uint64_t)gtid >> 32);
        g = pa_tl_group(c, PA_TL_TRACK_PROCESS_CHILD, 0, pid, -1, -1, 3, dom, label);
    }
    return pa_tl_add(c, g, style ? PA_TL_HGTX_SE : PA_TL_HGTX, sqlite3_column_int64(st, 0) - c->tl->origin_ns,
                     sqlite3_column_int64(st, 1) - c->tl->origin_ns, st, 3, sqlite3_column_int64(st, 6),
                     sqlite3_column_int64(st, 8)) < 0 ? -1 : 0;
}

static int pa_tl_row_mark(pa_tl_ctx_t *c, sqlite3_stmt *st)
{
    size_t n;
    const char *dn = pa_tl_col(st, 3, &n);
    char label[160];
    int64_t t = sqlite3_column_int64(st, 0) - c->tl->origin_ns;
    if (!n) {
        dn = "default";
        n = 7;
    }
    snprintf(label, sizeof label, "HGTX %.*s", (int)(n > 100 ? 100 : n), dn);
    int64_t g = pa_tl_child_group(c, sqlite3_column_int64(st, 1), 2, sqlite3_column_int64(st, 4), label);
    return pa_tl_add(c, g, PA_TL_MARK, t, t, st, 2, 0, 0) < 0 ? -1 : 0;
}

/* Device operations: one logical track per (device, engine, queue); flows from the API call
 * that launched each (same corrId, thread and start). */
typedef struct pa_tl_api_key { int64_t corr, start, tid; uint32_t slice; } pa_tl_api_key_t;

static int pa_tl_key_cmp(const void *a, const void *b)
{
    const pa_tl_api_key_t *x = a, *y = b;
    if (x->corr != y->corr)
        return x->corr < y->corr ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int pa_tl_row_op(pa_tl_ctx_t *c, sqlite3_stmt *st)
{
    int64_t dev = sqlite3_column_type(st, 5) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 5);
    int64_t eng = sqlite3_column_int64(st, 6), q = sqlite3_column_int64(st, 7);
    int kind = sqlite3_column_int(st, 2);
    char name[128];
    snprintf(name, sizeof name, "engine %lld, queue %lld", (long long)eng, (long long)q);
    int64_t g = pa_tl_group(c, PA_TL_TRACK_DEVICE, 0, -1, -1, dev, eng, q, name);
    int cat = kind == 1 ? PA_TL_KERNEL : kind == 3 ? PA_TL_FILL : PA_TL_COPY;
    int64_t s = pa_tl_add(c, g, cat, sqlite3_column_int64(st, 0) - c->tl->origin_ns,
                          sqlite3_column_int64(st, 1) - c->tl->origin_ns, st, 11, sqlite3_column_int64(st, 3),
                          sqlite3_column_int64(st, 10));
    if (s < 0)
        return -1;
    pa_tl_api_key_t k = {sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 8) - c->tl->origin_ns,
                         sqlite3_column_int64(st, 9), 0};
    pa_tl_api_key_t *hit = c->nkeys ? bsearch(&k, c->keys, c->nkeys, sizeof k, pa_tl_key_cmp) : NULL;
    if (hit) {
        pa_tl_flow_t *f = PA_TL_PUSH(c->tl, flows, nflows, cap_flows);
        if (!f)
            return -1;
        f->id = (uint64_t)c->tl->nflows;
        f->from = hit->slice;
        f->to = (uint32_t)s;
    }
    return 0;
}

/* The index of API slices by (corrId, start, tid) the ops' flows look up. */
static int pa_tl_index_api(pa_tl_ctx_t *c)
{
    size_t n = 0;
    free(c->keys);
    c->keys = malloc((c->tl->nslices + 1) * sizeof *c->keys);
    if (!c->keys)
        return -1;
    for (size_t i = 0; i < c->tl->nslices; i++) {
        const pa_tl_slice_t *s = &c->tl->slices[i];
        if (s->cat == PA_TL_ZE)
            c->keys[n++] = (pa_tl_api_key_t){s->id, s->t0, c->groups[s->group].tid, (uint32_t)i};
    }
    qsort(c->keys, n, sizeof *c->keys, pa_tl_key_cmp);
    c->nkeys = n;
    return 0;
}

/* ---- memory in use: +size at each successful allocation, -size at its free ---- */

static int pa_tl_row_memctr(pa_tl_ctx_t *c, sqlite3_stmt *st)
{
    int64_t dev = sqlite3_column_type(st, 0) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 0);
    char name[96];
    if (dev < 0)
        snprintf(name, sizeof name, "host memory in use (bytes)");
    else
        snprintf(name, sizeof name, "device %lld memory in use (bytes)", (long long)dev);
    int64_t g = pa_tl_group(c, PA_TL_TRACK_COUNTER, 0, dev < 0 ? c->main_pid : -1, -1, dev, 4, 0, name);
    if (g < 0)
        return -1;
    pa_tl_counter_t *k = PA_TL_PUSH(c->tl, counters, ncounters, cap_counters);
    if (!k)
        return -1;
    memset(k, 0, sizeof *k);
    k->track = (uint32_t)g;  /* a group index until the tracks exist */
    k->t = sqlite3_column_int64(st, 1) - c->tl->origin_ns;
    k->v = sqlite3_column_int64(st, 2);  /* delta; summed once sorted */
    return 0;
}

static int pa_tl_ctr_cmp(const void *a, const void *b)
{
    const pa_tl_counter_t *x = a, *y = b;
    if (x->track != y->track)
        return x->track < y->track ? -1 : 1;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return (x->v < y->v) - (x->v > y->v);  /* allocations before frees at one instant */
}

/* Turns the deltas into the value in use after each change; one sample per instant. */
static void pa_tl_counters_sum(pa_tl_t *tl, size_t nmem)
{
    size_t o = 0;
    int64_t sum = 0;
    /* the first nmem counters are memory deltas; the metric samples after them stay as they are */
    if (nmem)
        qsort(tl->counters, nmem, sizeof *tl->counters, pa_tl_ctr_cmp);
    for (size_t i = 0; i < nmem; i++) {
        if (i && tl->counters[i].track != tl->counters[i - 1].track)
            sum = 0;
        sum += tl->counters[i].v;
        pa_tl_counter_t k = tl->counters[i];
        k.v = sum;
        if (o && tl->counters[o - 1].track == k.track && tl->counters[o - 1].t == k.t)
            tl->counters[o - 1].v = sum;
        else
            tl->counters[o++] = k;
    }
    if (tl->ncounters > nmem)
        memmove(tl->counters + o, tl->counters + nmem, (tl->ncounters - nmem) * sizeof *tl->counters);
    tl->ncounters = o + tl->ncounters - nmem;
}

/* ---- metric samples: any table named *_METRICS, *METRIC_SAMPLES or *UTILIZATION* with a
 * device column (deviceId), a time column (start, timestamp or time; ns on the DB's clock), a
 * metric name (nameId/metricId: a STRING_IDS id, or name/metric: text) and a value column (value,
 * util, utilization); one counter track per (table, device, metric). Tables that do not fit are
 * skipped: the export never depends on another source's schema. ---- */

static const char *pa_tl_pick(sqlite3 *db, const char *table, const char *const *names, char *buf, size_t sz)
{
    char sql[256];
    sqlite3_stmt *st;
    const char *hit = NULL;
    snprintf(sql, sizeof sql, "PRAGMA table_info(\"%s\")", table);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return NULL;
    while (!hit && sqlite3_step(st) == SQLITE_ROW) {
        const char *col = (const char *)sqlite3_column_text(st, 1);
        for (size_t i = 0; col && names[i] && !hit; i++)
            if (strcasecmp(col, names[i]) == 0) {
                snprintf(buf, sz, "%s", col);
                hit = buf;
            }
    }
    sqlite3_finalize(st);
    return hit;
}

static int pa_tl_row_metric(pa_tl_ctx_t *c, sqlite3_stmt *st)
{
    char name[300];
    size_t n;
    const char *mn = pa_tl_col(st, 2, &n);
    int64_t dev = sqlite3_column_type(st, 0) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 0);
    snprintf(name, sizeof name, "device %lld %.*s", (long long)dev, (int)(n > 200 ? 200 : n), mn);
    int64_t g = pa_tl_group(c, PA_TL_TRACK_COUNTER, 0, dev < 0 ? c->main_pid : -1, -1, dev, 5,
                            (int64_t)pa_tl_intern(c->tl, mn, n), name);
    pa_tl_counter_t *k = g < 0 ? NULL : PA_TL_PUSH(c->tl, counters, ncounters, cap_counters);
    if (!k)
        return -1;
    memset(k, 0, sizeof *k);
    k->track = (uint32_t)g;
    k->t = sqlite3_column_int64(st, 1) - c->tl->origin_ns;
    k->d = sqlite3_column_double(st, 3);
    k->is_double = 1;
    return 0;
}

static int pa_tl_metrics(pa_tl_ctx_t *c)
{
    static const char *const devc[] = {"deviceId", "device", NULL}, *const timec[] = {"start", "timestamp", "time", NULL};
    static const char *const idc[] = {"nameId", "metricId", "metricNameId", NULL}, *const namec[] = {"name", "metric", NULL};
    static const char *const valc[] = {"value", "util", "utilization", NULL};
    sqlite3_stmt *st;
    int rc = 0;
    if (sqlite3_prepare_v2(c->db, "SELECT name FROM sqlite_master WHERE type = 'table' AND (name LIKE '%\\_METRICS'"
                           " ESCAPE '\\' OR name LIKE '%METRIC\\_SAMPLES' ESCAPE '\\' OR name LIKE '%UTILIZATION%')",
                           -1, &st, NULL) != SQLITE_OK)
        return 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        char t[128], d[64], tm[64], id[64], nm[64], v[64], sql[1024];
        snprintf(t, sizeof t, "%s", (const char *)sqlite3_column_text(st, 0));
        const char *dc = pa_tl_pick(c->db, t, devc, d, sizeof d), *tc = pa_tl_pick(c->db, t, timec, tm, sizeof tm);
        const char *ic = pa_tl_pick(c->db, t, idc, id, sizeof id), *ncol = pa_tl_pick(c->db, t, namec, nm, sizeof nm);
        const char *vc = pa_tl_pick(c->db, t, valc, v, sizeof v);
        if (!dc || !tc || !vc || (!ic && !ncol))
            continue;
        if (ic)
            snprintf(sql, sizeof sql, "SELECT m.\"%s\", m.\"%s\", s.value, m.\"%s\" FROM \"%s\" m LEFT JOIN"
                     " STRING_IDS s ON s.id = m.\"%s\" ORDER BY 1, 3, 2", dc, tc, vc, t, ic);
        else
            snprintf(sql, sizeof sql, "SELECT \"%s\", \"%s\", \"%s\", \"%s\" FROM \"%s\" ORDER BY 1, 3, 2",
                     dc, tc, ncol, vc, t);
        rc = pa_tl_query(c, NULL, sql, pa_tl_row_metric);
    }
    sqlite3_finalize(st);
    return rc;
}

/* ---- lanes: each logical track becomes one or more tracks ---- */

static pa_tl_t *pa_tl_sort_tl;  /* qsort has no context argument; the CLI is single-threaded */

static int pa_tl_slice_cmp(const void *a, const void *b)
{
    const pa_tl_slice_t *x = &pa_tl_sort_tl->slices[*(const uint32_t *)a];
    const pa_tl_slice_t *y = &pa_tl_sort_tl->slices[*(const uint32_t *)b];
    if (x->track != y->track)
        return x->track < y->track ? -1 : 1;
    if (x->t0 != y->t0)
        return x->t0 < y->t0 ? -1 : 1;
    if (x->t1 != y->t1)
        return x->t1 > y->t1 ? -1 : 1;  /* the enclosing slice first */
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

uint32_t *pa_tl_order(const pa_tl_t *tl)
{
    uint32_t *ix = malloc((tl->nslices + 1) * sizeof *ix);
    if (!ix)
        return NULL;
    for (size_t i = 0; i < tl->nslices; i++)
        ix[i] = (uint32_t)i;
    pa_tl_sort_tl = (pa_tl_t *)tl;
    qsort(ix, tl->nslices, sizeof *ix, pa_tl_slice_cmp);
    return ix;
}

typedef struct pa_tl_lane { int64_t *end; size_t n, cap; } pa_tl_lane_t;

/* Assigns slice->track = lane number within its group (marks stay on lane 0): a slice goes to
 * the first lane whose open slices all ended by its start, or (nesting groups) whose innermost
 * open slice encloses it. Returns the number of lanes per group in g->ntracks. */
static int pa_tl_pack(pa_tl_ctx_t *c)
{
    pa_tl_t *tl = c->tl;
    for (size_t i = 0; i < tl->nslices; i++)
        tl->slices[i].track = tl->slices[i].group;  /* sort by group first */
    uint32_t *ix = pa_tl_order(tl);
    if (!ix)
        return -1;
    pa_tl_lane_t *lanes = NULL;
    size_t nlanes = 0, caplanes = 0;
    int rc = 0;
    for (size_t k = 0; k < tl->nslices && rc == 0;) {
        uint32_t grp = tl->slices[ix[k]].group;
        pa_tl_group_t *g = &c->groups[grp];
        for (size_t l = 0; l < nlanes; l++)
            lanes[l].n = 0;
        size_t used = 1;
        for (; k < tl->nslices && tl->slices[ix[k]].group == grp; k++) {
            pa_tl_slice_t *s = &tl->slices[ix[k]];
            size_t l = 0;
            if (s->cat == PA_TL_MARK) {
                s->track = 0;
                continue;
            }
            for (;; l++) {
                if (l == nlanes) {
                    if (nlanes == caplanes) {
                        size_t nc = caplanes ? caplanes * 2 : 8;
                        pa_tl_lane_t *nl = realloc(lanes, nc * sizeof *nl);
                        if (!nl) {
                            rc = -1;
                            break;
                        }
                        memset(nl + caplanes, 0, (nc - caplanes) * sizeof *nl);
                        lanes = nl;
                        caplanes = nc;
                    }
                    nlanes++;
                }
                pa_tl_lane_t *ln = &lanes[l];
                while (ln->n && ln->end[ln->n - 1] <= s->t0)
                    ln->n--;
                if (ln->n == 0 || (g->nest && ln->end[ln->n - 1] >= s->t1))
                    break;
            }
            if (rc)
                break;
            pa_tl_lane_t *ln = &lanes[l];
            if (ln->n == ln->cap) {
                size_t nc = ln->cap ? ln->cap * 2 : 16;
                int64_t *ne = realloc(ln->end, nc * sizeof *ne);
                if (!ne) {
                    rc = -1;
                    break;
                }
                ln->end = ne;
                ln->cap = nc;
            }
            ln->end[ln->n++] = s->t1;
            s->track = (uint32_t)l;
            if (l + 1 > used)
                used = l + 1;
        }
        g->ntracks = (uint32_t)used;
    }
    for (size_t l = 0; l < caplanes; l++)
        free(lanes[l].end);
    free(lanes);
    free(ix);
    return rc;
}

#define PA_TL_DEVICE_PID 1000000000  /* JSON pid of device d: this + d (beyond Linux pids) */
#define PA_TL_SYNTH_TID 500000000    /* JSON tid of a non-thread track: this + track index */

static int64_t pa_tl_proc(pa_tl_ctx_t *c, int64_t pid, int device)
{
    pa_tl_t *tl = c->tl;
    for (size_t i = 0; i < tl->nprocs; i++)
        if (tl->procs[i].pid == pid)
            return (int64_t)i;
    pa_tl_proc_t *p = PA_TL_PUSH(tl, procs, nprocs, cap_procs);
    if (!p)
        return -1;
    p->pid = pid;
    p->device = device;
    p->uuid = (1ull << 40) + tl->nprocs;
    p->name = UINT32_MAX;
    return (int64_t)tl->nprocs - 1;
}

/* Tracks from the groups and lanes; slices, counters and processes point at them. */
static int pa_tl_make_tracks(pa_tl_ctx_t *c)
{
    pa_tl_t *tl = c->tl;
    for (size_t gi = 0; gi < c->ngroups; gi++) {
        pa_tl_group_t *g = &c->groups[gi];
        if (g->ntracks == 0)
            g->ntracks = 1;
        g->first_track = (uint32_t)tl->ntracks;
        for (uint32_t l = 0; l < g->ntracks; l++) {
            pa_tl_track_t *t = PA_TL_PUSH(tl, tracks, ntracks, cap_tracks);
            if (!t)
                return -1;
            memset(t, 0, sizeof *t);
            size_t ti = tl->ntracks - 1;
            t->kind = g->kind == PA_TL_TRACK_THREAD && l ? PA_TL_TRACK_THREAD_CHILD : g->kind;
            t->device = g->device;
            t->unit_bytes = g->kind == PA_TL_TRACK_COUNTER && g->key2 == 4;
            t->parent = t->kind == PA_TL_TRACK_THREAD_CHILD ? (int64_t)c->groups[pa_tl_thread_group(c,
                            g->pid << 32 | g->tid)].first_track : -1;
            t->uuid = ti + 1;
            if (g->kind == PA_TL_TRACK_DEVICE || (g->kind == PA_TL_TRACK_COUNTER && g->device >= 0))
                t->pid = PA_TL_DEVICE_PID + g->device;
            else
                t->pid = g->pid;
            t->tid = t->kind == PA_TL_TRACK_THREAD ? g->tid : PA_TL_SYNTH_TID + (int64_t)ti;
            if (l) {
                char nm[512];
                snprintf(nm, sizeof nm, "%s (%u)", tl->strings[g->name], l + 1);
                t->name = pa_tl_internz(tl, nm);
            } else
                t->name = g->name;
            if (pa_tl_proc(c, t->pid, t->pid >= PA_TL_DEVICE_PID ? (int)(t->pid - PA_TL_DEVICE_PID) : -1) < 0)
                return -1;
        }
    }
    for (size_t i = 0; i < tl->nslices; i++) {
        pa_tl_slice_t *s = &tl->slices[i];
        s->track += c->groups[s->group].first_track;
        tl->tracks[s->track].nslices++;
    }
    for (size_t i = 0; i < tl->ncounters; i++)
        tl->counters[i].track = c->groups[tl->counters[i].track].first_track;
    return tl->oom ? -1 : 0;
}

/* Process names: the profiled command (basename) for META's pid, "GPU d: <device name>" for
 * devices, "pid N" otherwise. */
static int pa_tl_row_devname(pa_tl_ctx_t *c, sqlite3_stmt *st)
{
    char nm[300];
    size_t n;
    const char *s = pa_tl_col(st, 1, &n);
    int64_t p = -1;
    for (size_t i = 0; i < c->tl->nprocs; i++)  /* only devices that have tracks */
        if (c->tl->procs[i].pid == PA_TL_DEVICE_PID + sqlite3_column_int64(st, 0))
            p = (int64_t)i;
    if (p < 0)
        return 0;
    snprintf(nm, sizeof nm, "GPU %lld: %.*s", (long long)sqlite3_column_int64(st, 0), (int)(n > 256 ? 256 : n), s);
    c->tl->procs[p].name = pa_tl_internz(c->tl, nm);
    return 0;
}

static void pa_tl_name_procs(pa_tl_ctx_t *c)
{
    pa_tl_t *tl = c->tl;
    for (size_t i = 0; i < tl->nprocs; i++) {
        pa_tl_proc_t *p = &tl->procs[i];
        char nm[300];
        if (p->name != UINT32_MAX)
            continue;
        if (p->device >= 0)
            snprintf(nm, sizeof nm, "GPU %d", p->device);
        else if (p->pid == c->main_pid && tl->command && tl->command[0]) {
            const char *cmd = tl->command, *sp = strchr(cmd, ' ');
            size_t len = sp ? (size_t)(sp - cmd) : strlen(cmd);
            const char *sl = memrchr(cmd, '/', len);
            if (sl) {
                len -= (size_t)(sl + 1 - cmd);
                cmd = sl + 1;
            }
            snprintf(nm, sizeof nm, "%.*s (pid %lld)", (int)(len > 200 ? 200 : len), cmd, (long long)p->pid);
        } else
            snprintf(nm, sizeof nm, "pid %lld", (long long)p->pid);
        p->name = pa_tl_internz(tl, nm);
    }
}

/* ---- META and the origin ---- */

static int pa_tl_row_meta(pa_tl_ctx_t *c, sqlite3_stmt *st)
{
    const char *k = (const char *)sqlite3_column_text(st, 0);
    const char *v = (const char *)sqlite3_column_text(st, 1);
    int64_t iv = sqlite3_column_int64(st, 1);
    if (!k)
        return 0;
    if (strcmp(k, "start_mono_ns") == 0) c->tl->start_mono_ns = iv;
    else if (strcmp(k, "end_mono_ns") == 0) c->tl->end_mono_ns = iv;
    else if (strcmp(k, "start_wall_ns") == 0) c->tl->start_wall_ns = iv;
    else if (strcmp(k, "pid") == 0) c->main_pid = iv;
    else if (strcmp(k, "command_line") == 0 && v && !c->tl->command) c->tl->command = strdup(v);
    else if (strcmp(k, "hostname") == 0 && v && !c->tl->host) c->tl->host = strdup(v);
    return 0;
}

static int pa_tl_row_min(pa_tl_ctx_t *c, sqlite3_stmt *st)
{
    if (sqlite3_column_type(st, 0) != SQLITE_NULL && sqlite3_column_int64(st, 0) < c->tl->origin_ns)
        c->tl->origin_ns = sqlite3_column_int64(st, 0);
    return 0;
}

/* Kernel names as kern_sum shows them (demangled), copies and fills as mem_time_sum does. */
#define PA_TL_OP_NAME "CASE o.kind WHEN 1 THEN ze_kname(n.value, 0) WHEN 3 THEN '[memset]' ELSE '[memcpy ' ||" \
    " CASE o.srcKind WHEN 2 THEN 'Device' WHEN 3 THEN 'Shared' WHEN 0 THEN 'Unknown' ELSE 'Host' END || '-to-' ||" \
    " CASE o.dstKind WHEN 2 THEN 'Device' WHEN 3 THEN 'Shared' WHEN 0 THEN 'Unknown' ELSE 'Host' END || ']' END"

int pa_tl_load(sqlite3 *db, pa_tl_t *tl, char *err, size_t errsz)
{
    static const char *const mins[][2] = {
        {"ZE_API", "SELECT min(start) FROM ZE_API"}, {"OSRT_API", "SELECT min(start) FROM OSRT_API"},
        {"HGTX_RANGES", "SELECT min(start) FROM HGTX_RANGES"}, {"HGTX_MARKS", "SELECT min(start) FROM HGTX_MARKS"},
        {"DEVICE_MEMORY", "SELECT min(start) FROM DEVICE_MEMORY"}, {"ZE_OPS", "SELECT min(start) FROM ZE_OPS"},
    };
    pa_tl_ctx_t c = {.tl = tl, .db = db, .err = err, .errsz = errsz};
    int rc = 0;
    memset(tl, 0, sizeof *tl);
    snprintf(err, errsz, "out of memory");
    if (pa_ze_sql_register(db) != 0) {
        snprintf(err, errsz, "cannot register ze_kname() on the DB");
        return -1;
    }
    rc |= pa_tl_query(&c, "META", "SELECT key, value FROM META", pa_tl_row_meta);
    tl->origin_ns = tl->start_mono_ns ? tl->start_mono_ns : INT64_MAX;
    for (size_t i = 0; i < sizeof mins / sizeof mins[0] && !rc; i++)
        rc |= pa_tl_query(&c, mins[i][0], mins[i][1], pa_tl_row_min);
    if (tl->origin_ns == INT64_MAX)
        tl->origin_ns = 0;
    if (!rc)
        rc = pa_tl_query(&c, "THREADS", "SELECT t.globalTid, s.value FROM THREADS t LEFT JOIN STRING_IDS s"
                         " ON s.id = t.nameId ORDER BY t.globalTid", pa_tl_row_thread);
    if (!rc)
        /* ZE_API/ZE_OPS.tid: globalTid (schema 2: the thread itself, also in a merged DB of several
         * processes) or a plain tid (schema 1): compared on the low half */
        rc = pa_tl_query(&c, "ZE_API", "SELECT a.start, a.end, a.tid & 4294967295, s.value, a.corrId,"
                         " COALESCE((SELECT t.globalTid FROM THREADS t WHERE t.globalTid = a.tid),"
                         " (SELECT t.globalTid FROM THREADS t WHERE (t.globalTid & 4294967295) = (a.tid & 4294967295)"
                         " LIMIT 1))"
                         " FROM ZE_API a LEFT JOIN STRING_IDS s ON s.id = a.nameId", pa_tl_row_ze);
    if (!rc)
        rc = pa_tl_query(&c, "OSRT_API", "SELECT o.start, o.end, o.globalTid, s.value FROM OSRT_API o"
                         " LEFT JOIN STRING_IDS s ON s.id = o.nameId", pa_tl_row_osrt);
    if (!rc)
        rc = pa_tl_query(&c, "DEVICE_MEMORY", "SELECT start, end, globalTid, CASE WHEN op = 0 THEN 'alloc '"
                         " || CASE memKind WHEN 1 THEN 'host' WHEN 2 THEN 'device' WHEN 3 THEN 'shared' ELSE 'unknown' END"
                         " || CASE WHEN result != 0 THEN ' (failed)' ELSE '' END ELSE 'free' END, eventId, size"
                         " FROM DEVICE_MEMORY", pa_tl_row_mem);
    if (!rc)
        rc = pa_tl_query(&c, "HGTX_RANGES", "SELECT r.start, r.end, r.globalTid, n.value, r.domainId, r.style, r.id,"
                         " d.value, r.level FROM HGTX_RANGES r LEFT JOIN STRING_IDS n ON n.id = r.nameId"
                         " LEFT JOIN STRING_IDS d ON d.id = r.domainId AND r.domainId != 0", pa_tl_row_range);
    if (!rc)
        rc = pa_tl_query(&c, "HGTX_MARKS", "SELECT m.start, m.globalTid, n.value, d.value, m.domainId"
                         " FROM HGTX_MARKS m LEFT JOIN STRING_IDS n ON n.id = m.nameId"
                         " LEFT JOIN STRING_IDS d ON d.id = m.domainId AND m.domainId != 0", pa_tl_row_mark);
    if (!rc && (rc = pa_tl_index_api(&c)) != 0)
        snprintf(err, errsz, "out of memory");
    if (!rc)
        rc = pa_tl_query(&c, "ZE_OPS", "SELECT o.start, o.end, o.kind, o.corrId, 0, o.deviceId, o.engine,"
                         " o.queueId, o.apiStart, o.tid & 4294967295, o.bytes, " PA_TL_OP_NAME
                         " FROM ZE_OPS o LEFT JOIN STRING_IDS n ON n.id = o.nameId"
                         " WHERE o.kind IN (1, 2, 3)", pa_tl_row_op); /* kernels, copies, fills (as gpu_trace) */
    if (!rc)
        rc = pa_tl_query(&c, "DEVICE_MEMORY", "SELECT deviceId, start, size FROM DEVICE_MEMORY WHERE op = 0"
                         " AND result = 0 UNION ALL SELECT deviceId, freeTime, -size FROM DEVICE_MEMORY"
                         " WHERE op = 0 AND result = 0 AND freeTime IS NOT NULL", pa_tl_row_memctr);
    size_t nmem = tl->ncounters;
    if (!rc)
        rc = pa_tl_metrics(&c);
    if (!rc && (pa_tl_pack(&c) != 0 || pa_tl_make_tracks(&c) != 0)) {
        snprintf(err, errsz, "out of memory");
        rc = -1;
    }
    if (!rc) {
        pa_tl_counters_sum(tl, nmem);
        if (pa_tl_query(&c, "ZE_DEVICES", "SELECT deviceId, name FROM ZE_DEVICES", pa_tl_row_devname) != 0)
            rc = -1;
        pa_tl_name_procs(&c);
    }
    free(c.groups);
    free(c.keys);
    if (!rc && tl->oom) {
        snprintf(err, errsz, "out of memory");
        rc = -1;
    }
    if (rc)
        pa_tl_free(tl);
    return rc ? -1 : 0;
}

void pa_tl_free(pa_tl_t *tl)
{
    for (size_t i = 0; i < tl->nstrings; i++)
        free(tl->strings[i]);
    free(tl->strings);
    free(tl->string_len);
    free(tl->hash);
    free(tl->slices);
    free(tl->tracks);
    free(tl->flows);
    free(tl->counters);
    free(tl->procs);
    free(tl->command);
    free(tl->host);
    memset(tl, 0, sizeof *tl);
}
