/* writer_hc.c - host counters in the DB (HOST_COUNTERS, HOST_COUNTER_RANGES, HOST_COUNTER_THREADS) and the summary section. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "writer_internal.h"

/* One row per event asked (or substituted): what was asked, what libpfm4 made of it, whether it
 * was counted and why not. eventIdx is the column of its values in the two value tables (NULL
 * when not counted). Values: value = delta scaled for multiplexing (raw x enabled / running),
 * rawValue = the kernel's delta; timeEnabled/timeRunning = the group's times over the range. */
static const char hc_schema[] =
    "CREATE TABLE HOST_COUNTERS(eventIdx INTEGER, name TEXT, asked TEXT, encoding TEXT, status TEXT,"
    " errno INTEGER, detail TEXT, type INTEGER, config INTEGER, excludeKernel INTEGER, excludeUser INTEGER,"
    " nameId INTEGER, askedId INTEGER, encodingId INTEGER, detailId INTEGER);"
    "CREATE TABLE HOST_COUNTER_RANGES(rangeId INTEGER, eventIdx INTEGER, value INTEGER, rawValue INTEGER,"
    " timeEnabled INTEGER, timeRunning INTEGER);"
    "CREATE TABLE HOST_COUNTER_THREADS(globalTid INTEGER, tid INTEGER, eventIdx INTEGER, value INTEGER,"
    " rawValue INTEGER, timeEnabled INTEGER, timeRunning INTEGER, atExit INTEGER);";

static pa_bulk_t bulk_ev, bulk_rng, bulk_thr;
static int bulk_ready;
static uint64_t hc_counts[4];
static int have_counts;

static int hc_create_schema(sqlite3 *db)
{
    have_counts = 0;
    memset(hc_counts, 0, sizeof hc_counts);
    if (pa_db_exec(db, hc_schema) != 0)
        return -1;
    int rc = pa_bulk_init(&bulk_ev, db, "INSERT INTO HOST_COUNTERS(eventIdx,status,errno,type,config,"
                                        "excludeKernel,excludeUser,nameId,askedId,encodingId,detailId)", 11, 64);
    rc |= pa_bulk_init(&bulk_rng, db, "INSERT INTO HOST_COUNTER_RANGES(rangeId,eventIdx,value,rawValue,"
                                      "timeEnabled,timeRunning)", 6, 256);
    rc |= pa_bulk_init(&bulk_thr, db, "INSERT INTO HOST_COUNTER_THREADS(tid,eventIdx,value,rawValue,"
                                      "timeEnabled,timeRunning,atExit)", 7, 64);
    bulk_ready = rc == 0;
    return rc;
}

static void hc_event_row(const pa_record_t *rec)
{
    uint32_t status = (uint32_t)rec->u.raw[0], column = (uint32_t)(rec->u.raw[0] >> 32);
    if (column == PA_HC_NO_COLUMN)
        pa_bulk_null(&bulk_ev);
    else
        pa_bulk_int(&bulk_ev, column);
    pa_bulk_text(&bulk_ev, pa_hc_status_name(status), strlen(pa_hc_status_name(status)));
    pa_bulk_int(&bulk_ev, (int64_t)(uint32_t)rec->u.raw[1]);
    pa_bulk_int(&bulk_ev, (int64_t)(rec->u.raw[2] >> 32));
    pa_bulk_int(&bulk_ev, (int64_t)rec->u.raw[3]);
    pa_bulk_int(&bulk_ev, (int64_t)(rec->u.raw[2] >> 1 & 1));
    pa_bulk_int(&bulk_ev, (int64_t)(rec->u.raw[2] & 1));
    pa_bulk_int(&bulk_ev, (int64_t)rec->t0);
    pa_bulk_int(&bulk_ev, (int64_t)rec->t1);
    pa_bulk_int(&bulk_ev, (int64_t)rec->tid);
    pa_bulk_int(&bulk_ev, (int64_t)(rec->u.raw[1] >> 32));
}

/* n x {scaled, raw} pairs after a range or thread record. */
static void hc_value_rows(pa_bulk_t *b, const pa_record_t *rec, const uint8_t *payload, int64_t key,
                          uint64_t en, uint64_t run, int thread)
{
    uint32_t n = PA_RF_HC_N(rec->flags);
    if (n > PA_HC_MAX_EVENTS || !payload || rec->len < n * 16u)
        return;
    for (uint32_t k = 0; k < n; k++) {
        uint64_t v[2];
        memcpy(v, payload + k * 16u, 16);
        pa_bulk_int(b, key);
        pa_bulk_int(b, k);
        pa_bulk_int(b, (int64_t)v[0]);
        pa_bulk_int(b, (int64_t)v[1]);
        pa_bulk_int(b, (int64_t)en);
        pa_bulk_int(b, (int64_t)run);
        if (thread)
            pa_bulk_int(b, (rec->u.raw[0] & PA_RF_HC_EXIT) ? 1 : 0);
    }
}

static int hc_on_record(sqlite3 *db, const pa_record_t *rec, const uint8_t *payload)
{
    (void)db;
    if (!bulk_ready)
        return 0;
    switch (rec->kind) {
    case PA_SP_HC_EVENT:
        hc_event_row(rec);
        break;
    case PA_SP_HC_RANGE:
        hc_value_rows(&bulk_rng, rec, payload, (int64_t)rec->u.raw[0], rec->u.raw[1], rec->u.raw[2], 0);
        break;
    case PA_SP_HC_THREAD:
        hc_value_rows(&bulk_thr, rec, payload, (int64_t)rec->tid, rec->t0, rec->t1, 1);
        break;
    case PA_SP_HC_COUNTS:
        memcpy(hc_counts, rec->u.raw, sizeof hc_counts);
        have_counts = 1;
        break;
    default:
        break;
    }
    return 0;
}

static int hc_finish(sqlite3 *db)
{
    int rc = 0;
    if (bulk_ready) {
        rc |= pa_bulk_finish(&bulk_ev);
        rc |= pa_bulk_finish(&bulk_rng);
        rc |= pa_bulk_finish(&bulk_thr);
        bulk_ready = 0;
    }
    rc |= pa_db_exec(db,
        "UPDATE HOST_COUNTERS SET name = (SELECT value FROM STRING_IDS WHERE id = nameId),"
        " asked = NULLIF((SELECT value FROM STRING_IDS WHERE id = askedId), ''),"
        " encoding = NULLIF((SELECT value FROM STRING_IDS WHERE id = encodingId), ''),"
        " detail = NULLIF((SELECT value FROM STRING_IDS WHERE id = detailId), '');"
        "UPDATE HOST_COUNTER_THREADS SET globalTid = ((SELECT value FROM META WHERE key = 'pid') << 32) | tid;"
        "CREATE INDEX HOST_COUNTER_RANGES_range ON HOST_COUNTER_RANGES(rangeId);");
    if (have_counts) {
        char sql[512];
        snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO SESSION_COUNTERS VALUES('host_counter_threads', %llu),"
                 " ('host_counter_threads_failed', %llu), ('host_counter_reads_unmatched', %llu),"
                 " ('host_counter_ranges_without', %llu);", (unsigned long long)hc_counts[0],
                 (unsigned long long)hc_counts[1], (unsigned long long)hc_counts[2], (unsigned long long)hc_counts[3]);
        rc |= pa_db_exec(db, sql);
    }
    return rc ? -1 : 0;
}

/* ---- summary ---- */

static const char *thread_name(const pa_agg_results_t *res, uint32_t tid, size_t *len)
{
    for (size_t i = 0; i < res->nthreads; i++)
        if (res->threads[i].tid == tid) {
            *len = strnlen(res->threads[i].name, sizeof res->threads[i].name);
            return res->threads[i].name;
        }
    *len = 1;
    return "?";
}

#define PA_HC_SUMMARY_THREADS 20

static int thr_cmp(const void *a, const void *b)
{
    const pa_hc_thread_res_t *x = *(const pa_hc_thread_res_t *const *)a, *y = *(const pa_hc_thread_res_t *const *)b;
    if (x->v[0] != y->v[0])
        return x->v[0] > y->v[0] ? -1 : 1;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* The column of a counted event with that perf generic name (cycles, instructions), -1. */
static int column_named(const pa_hc_results_t *hc, const char *substr)
{
    for (size_t i = 0; i < hc->nev; i++)
        if (hc->ev[i].column != PA_HC_NO_COLUMN && hc->ev[i].encoding && strstr(hc->ev[i].encoding, substr))
            return (int)hc->ev[i].column;
    return -1;
}

static void hc_summary(FILE *out, const pa_session_meta_t *meta, const pa_agg_results_t *res)
{
    (void)meta;
    const pa_hc_results_t *hc = res ? res->hc : NULL;
    if (!hc || !hc->nev)
        return;
    fprintf(out, "\nHost counters (PROFAGENT_HOST_COUNTERS; DB: HOST_COUNTERS, per range: profagent stats -r"
                 " hgtx_counter_sum):\n");
    for (size_t i = 0; i < hc->nev; i++) {
        const pa_hc_event_res_t *e = &hc->ev[i];
        fprintf(out, "  %-24s %-16s%s%s\n", e->name, pa_hc_status_name(e->status), e->detail[0] ? "  " : "",
                e->detail);
    }
    fprintf(out, "  threads: %llu with counters, %llu failed to open, %llu out of file descriptors; ranges:"
                 " %llu with deltas, %llu without, %llu ended on another thread (no delta)%s\n",
            (unsigned long long)hc->threads_opened, (unsigned long long)hc->threads_failed,
            (unsigned long long)hc->threads_no_fds, (unsigned long long)hc->ranges_with,
            (unsigned long long)hc->ranges_without, (unsigned long long)hc->cross_thread,
            hc->unmatched ? " (some reads lost their HGTX record: ring full)" : "");
    if (!hc->ncols || !hc->nthr)
        return;
    int cyc = column_named(hc, "PERF_COUNT_HW_CPU_CYCLES"), ins = column_named(hc, "PERF_COUNT_HW_INSTRUCTIONS");
    int ipc = cyc >= 0 && ins >= 0;
    const char *titles[3 + PA_HC_MAX_EVENTS + 1];
    titles[0] = "TID";
    titles[1] = "Name";
    titles[2] = "Until";
    for (size_t i = 0; i < hc->nev; i++)
        if (hc->ev[i].column < hc->ncols && hc->ev[i].column < PA_HC_MAX_EVENTS)
            titles[3 + hc->ev[i].column] = hc->ev[i].name;
    if (ipc)
        titles[3 + hc->ncols] = "IPC";
    pa_table_t t;
    memset(&t, 0, sizeof t);
    t.ncols = 3 + (int)hc->ncols + ipc;
    t.titles = titles;
    /* the busiest threads by the first counter; all of them are in HOST_COUNTER_THREADS */
    const pa_hc_thread_res_t **v = malloc(hc->nthr * sizeof *v);
    if (!v)
        return;
    for (size_t i = 0; i < hc->nthr; i++)
        v[i] = &hc->thr[i];
    qsort(v, hc->nthr, sizeof *v, thr_cmp);
    size_t shown = hc->nthr < PA_HC_SUMMARY_THREADS ? hc->nthr : PA_HC_SUMMARY_THREADS;
    for (size_t i = 0; i < shown; i++) {
        const pa_hc_thread_res_t *r = v[i];
        size_t nl;
        const char *nm = thread_name(res, r->tid, &nl);
        pa_table_add_int(&t, r->tid);
        pa_table_add_str(&t, nm, nl);
        pa_table_add_str(&t, r->at_exit ? "exit" : "last range", r->at_exit ? 4 : 10);
        for (uint32_t k = 0; k < hc->ncols; k++) {
            if (k < r->n)
                pa_table_add_int(&t, (int64_t)r->v[k]);
            else
                pa_table_add_none(&t);
        }
        if (ipc) {
            if (r->v[cyc])
                pa_table_add_double(&t, (double)r->v[ins] / (double)r->v[cyc], 2);
            else
                pa_table_add_none(&t);
        }
    }
    fprintf(out, "Host counters per thread (%zu of %zu, most %s first; from its first HGTX range until its exit,"
                 " or its last range when the exit was not seen; task-clock in ns):\n", shown, hc->nthr, titles[3]);
    pa_table_write(&t, PA_FMT_TABLE, out);
    pa_table_free(&t);
    free(v);
}

const pa_writer_source_t pa_writer_source_hc = {
    .name = "hostctr",
    .create_schema = hc_create_schema,
    .on_record = hc_on_record,
    .finish = hc_finish,
    .summary = hc_summary,
};
