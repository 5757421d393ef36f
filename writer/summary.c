/* summary.c - pa_summary_print(): the human summary printed at exit, from the aggregates. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/pa_ring.h"
#include "writer_internal.h"
#include "../common/pa_stddev.h"
#include "writer_ze.h"

#define PA_SUMMARY_TOP 10
#define PA_SUMMARY_NAME_MAX 60 /* bytes of a name shown in the summary; reports keep it whole */

/*! pa_summary_name() : `name` for display: at most PA_SUMMARY_NAME_MAX bytes (cut on a UTF-8
 *  character boundary) followed by "..." when longer; written to buf (>= MAX + 4 bytes). */
static size_t pa_summary_name(const char *name, size_t len, char *buf)
{
    if (len <= PA_SUMMARY_NAME_MAX) {
        memcpy(buf, name, len);
        return len;
    }
    size_t n = PA_SUMMARY_NAME_MAX;
    while (n > 0 && ((unsigned char)name[n] & 0xc0) == 0x80) /* don't split a character */
        n--;
    memcpy(buf, name, n);
    memcpy(buf + n, "...", 3);
    return n + 3;
}

/* Rows of one category sorted by total, descending (ties by key), as in hgtx_sum / osrt_sum. */
static int pa_cmp_rows(const void *a, const void *b)
{
    const pa_stat_row_t *x = *(const pa_stat_row_t *const *)a, *y = *(const pa_stat_row_t *const *)b;
    if (x->st.total != y->st.total)
        return x->st.total < y->st.total ? 1 : -1;
    size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
    int c = memcmp(x->key, y->key, n);
    if (c)
        return c;
    if (x->key_len != y->key_len)
        return x->key_len < y->key_len ? -1 : 1;
    return (x->tag > y->tag) - (x->tag < y->tag);
}

void pa_summary_median_note(FILE *out, const char *report)
{
    fprintf(out, "(Med -: more samples than PROFAGENT_MEDIAN_BUDGET keeps; profagent stats -r %s computes it"
            " exactly from the DB)\n", report);
}

/* The median of a row: the aggregate's when exact, else the one the writer recomputed from the
 * trace rows into SUMMARY_STATS (so the summary equals the reports). Returns 0 when there is none
 * (the key had more samples than the budget and its median is left to the reports). */
static int pa_row_median(sqlite3 *db, const pa_agg_results_t *res, const pa_stat_row_t *row, double *med)
{
    sqlite3_stmt *st = NULL;
    int have = row->st.median_exact;
    *med = row->st.median;
    if (have || !db)
        return have;
    if (sqlite3_prepare_v2(db, "SELECT median FROM SUMMARY_STATS WHERE nameId = ?1 AND"
                           " category = ?2 AND tag = ?3 AND medianExact", -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_int64(st, 1, pa_writer_summary_key_id(res, row));
    sqlite3_bind_int64(st, 2, row->cat);
    sqlite3_bind_int64(st, 3, row->tag);
    if (sqlite3_step(st) == SQLITE_ROW) {
        *med = sqlite3_column_double(st, 0);
        have = 1;
    }
    sqlite3_finalize(st);
    return have;
}

/* The DB pa_summary_print() reads while it prints (NULL: none written, or it did not open). */
static sqlite3 *summary_db;

int pa_summary_row_median(const pa_agg_results_t *res, const pa_stat_row_t *row, double *med)
{
    return pa_row_median(summary_db, res, row, med);
}

/* One statistics section (HGTX ranges or OSRT calls) in the hgtx_sum / osrt_sum layout. */
static void pa_summary_stats(FILE *out, sqlite3 *db, const pa_agg_results_t *res, int cat,
                             const char *heading, const char *const *titles, int ncols,
                             const char *report)
{
    size_t n = 0, nomed = 0;
    double grand = 0;
    const pa_stat_row_t **v = malloc((res->nrows + 1) * sizeof *v);
    if (!v)
        return;
    for (size_t i = 0; i < res->nrows; i++)
        if (res->rows[i].cat == cat && res->rows[i].st.count) {
            v[n++] = &res->rows[i];
            grand += (double)res->rows[i].st.total;
        }
    if (n == 0) {
        free(v);
        return;
    }
    pa_sort(v, n, sizeof *v, pa_cmp_rows);
    pa_table_t t;
    memset(&t, 0, sizeof t);
    t.ncols = ncols;
    t.titles = titles;
    for (size_t i = 0; i < n && i < PA_SUMMARY_TOP; i++) {
        const pa_stat_t *s = &v[i]->st;
        pa_table_add_double(&t, grand > 0 ? (double)s->total * 100.0 / grand : 0.0, 1);
        pa_table_add_int(&t, (int64_t)s->total);
        pa_table_add_int(&t, (int64_t)s->count);
        pa_table_add_double(&t, (double)s->total / (double)s->count, 0);
        double med;
        if (pa_row_median(db, res, v[i], &med))
            pa_table_add_double(&t, med, 0);
        else
            pa_table_add_str(&t, "-", 1), nomed++;
        pa_table_add_int(&t, (int64_t)s->min);
        pa_table_add_int(&t, (int64_t)s->max);
        pa_table_add_double(&t, pa_stddev_pop(s->count, s->m2), 0);
        if (cat == PA_CAT_HGTX_RANGE)
            pa_table_add_str(&t, v[i]->tag ? "StartEnd" : "PushPop", v[i]->tag ? 8 : 7);
        char shown[PA_SUMMARY_NAME_MAX + 4];
        pa_table_add_str(&t, shown, pa_summary_name(v[i]->key, v[i]->key_len, shown));
    }
    fprintf(out, "\n%s (top %zu of %zu by total time; all: profagent stats -r %s):\n", heading,
            n < PA_SUMMARY_TOP ? n : (size_t)PA_SUMMARY_TOP, n, report);
    pa_table_write(&t, PA_FMT_TABLE, out);
    pa_table_free(&t);
    free(v);
    if (nomed)
        pa_summary_median_note(out, report);
}

static void pa_summary_threads(FILE *out, const pa_agg_results_t *res)
{
    static const char *const titles[] = {"TID", "Name", "Records", "Drops"};
    pa_table_t t;
    if (res->drops_total == 0)
        return;
    memset(&t, 0, sizeof t);
    t.ncols = 4;
    t.titles = titles;
    for (size_t i = 0; i < res->nthreads; i++) {
        const pa_thread_info_t *ti = &res->threads[i];
        pa_table_add_int(&t, ti->tid);
        pa_table_add_str(&t, ti->name, strnlen(ti->name, sizeof ti->name));
        pa_table_add_int(&t, (int64_t)ti->records);
        pa_table_add_int(&t, (int64_t)ti->drops);
    }
    fprintf(out, "\nWARNING: %llu records were DROPPED (full rings); per thread:\n",
            (unsigned long long)res->drops_total);
    pa_table_write(&t, PA_FMT_TABLE, out);
    pa_table_free(&t);
}

/* Unterminated ranges with their start, from the DB (the aggregates only count them). */
static void pa_summary_unterminated(FILE *out, sqlite3 *db, const pa_agg_results_t *res)
{
    sqlite3_stmt *st = NULL;
    if (!res->hgtx_unterminated)
        return;
    fprintf(out, "HGTX ranges still open at exit (left out of the statistics): %llu\n",
            (unsigned long long)res->hgtx_unterminated);
    if (res->hgtx_drop_start_no_end) /* the DB cannot tell which rows lost their end */
        fprintf(out, "  (the rows listed may include the %llu whose end was dropped)\n",
                (unsigned long long)res->hgtx_drop_start_no_end);
    if (!db || sqlite3_prepare_v2(db, "SELECT start, globalTid & 4294967295, name FROM"
                                  " HGTX_RANGES_NAMED WHERE unterminated ORDER BY start LIMIT 10",
                                  -1, &st, NULL) != SQLITE_OK)
        return;
    while (sqlite3_step(st) == SQLITE_ROW) {
        char shown[PA_SUMMARY_NAME_MAX + 4];
        size_t n = pa_summary_name((const char *)sqlite3_column_blob(st, 2),
                                   (size_t)sqlite3_column_bytes(st, 2), shown);
        fprintf(out, "  started at %lld ns on thread %lld: \"%.*s\"\n",
                (long long)sqlite3_column_int64(st, 0), (long long)sqlite3_column_int64(st, 1),
                (int)n, shown);
    }
    sqlite3_finalize(st);
}

/* Holding an application thread changes its timing: said whenever it happened, per source, with
 * the way out. The Level Zero waits come with its counts record (the spool), the others with the
 * aggregator's results. */
static void pa_summary_ring_waits(FILE *out, const pa_agg_results_t *res)
{
    static const char *const label[PA_RING_NSRC] = {NULL, "Level Zero", "HGTX", "OSRT", "ITT"};
    uint64_t w[PA_RING_NSRC] = {0}, ns[PA_RING_NSRC] = {0}, gu[PA_RING_NSRC] = {0};
    pa_ze_ring_waits(&w[PA_RING_SRC_ZE], &ns[PA_RING_SRC_ZE], &gu[PA_RING_SRC_ZE]);
    uint64_t waits = 0, wait_ns = 0, given_up = 0;
    for (unsigned i = 1; i < PA_RING_NSRC; i++) {
        if (i != PA_RING_SRC_ZE) {
            w[i] = res->ring_full_waits[i];
            ns[i] = res->ring_full_wait_ns[i];
            gu[i] = res->ring_full_given_up[i];
        }
        waits += w[i], wait_ns += ns[i], given_up += gu[i];
    }
    if (!waits)
        return;
    fprintf(out, "Ring full: the application's threads were held %llu times, %.1f ms in all, to keep every"
            " record (", (unsigned long long)waits, (double)wait_ns / 1e6);
    const char *sep = "";
    for (unsigned i = 1; i < PA_RING_NSRC; i++)
        if (w[i]) {
            fprintf(out, "%s%s %llu", sep, label[i], (unsigned long long)w[i]);
            sep = ", ";
        }
    fprintf(out, "; PROFAGENT_RING_FULL=drop drops instead)");
    if (given_up) {
        fprintf(out, "; %llu waits given up (the aggregator made no progress for 100 ms), those records"
                " dropped (", (unsigned long long)given_up);
        sep = "";
        for (unsigned i = 1; i < PA_RING_NSRC; i++)
            if (gu[i]) {
                fprintf(out, "%s%s %llu", sep, label[i], (unsigned long long)gu[i]);
                sep = ", ";
            }
        fputc(')', out);
    }
    fputc('\n', out);
}

static void pa_summary_counters(FILE *out, sqlite3 *db, const pa_agg_results_t *res, const pa_session_meta_t *meta)
{
    /* device operations the Level Zero source could not collect are losses too: shown here so
     * that a "0 dropped" header never looks clean when they happened */
    uint64_t ze_unc = 0, ze_full = 0, ze_ctx = pa_ze_ctx_lost_count();
    pa_ze_counts(&ze_unc, &ze_full);
    fprintf(out, "Records: %llu recorded, %llu dropped, %llu late (after the exit drain began, not"
            " stored), %llu device operations uncollected\n", (unsigned long long)res->records_total,
            (unsigned long long)res->drops_total, (unsigned long long)res->late_records,
            (unsigned long long)(ze_unc + ze_full + ze_ctx));
    pa_summary_ring_waits(out, res);
    if (res->hgtx_misuse_pop_empty || res->hgtx_misuse_bad_end || res->hgtx_misuse_bad_domain)
        fprintf(out, "HGTX misuse: %llu pop on an empty stack, %llu end of an unknown or"
                " already-ended id, %llu bad domain handle (never created or destroyed; recorded"
                " without domain)\n", (unsigned long long)res->hgtx_misuse_pop_empty,
                (unsigned long long)res->hgtx_misuse_bad_end,
                (unsigned long long)res->hgtx_misuse_bad_domain);
    /* the ranges a full ring cut: the program is not at fault, the drops above are the cause */
    if (res->hgtx_drop_end_no_start || res->hgtx_drop_start_no_end)
        fprintf(out, "HGTX ranges cut by dropped records (not misuse): %llu ends whose start was dropped,"
                " %llu ranges whose end was dropped (not counted as open at exit)\n",
                (unsigned long long)res->hgtx_drop_end_no_start,
                (unsigned long long)res->hgtx_drop_start_no_end);
    /* losses other than full rings: each named, printed only when it happened */
    if (ze_ctx)
        fprintf(out, "WARNING: %llu device operations were still running when the application destroyed"
                " their context: no device times (zeContextDestroy before a host sync)\n",
                (unsigned long long)ze_ctx);
    if (res->hgtx_depth_overflow)
        fprintf(out, "WARNING: %llu HGTX pushes beyond the maximum nesting depth were NOT recorded"
                " (nor their pops)\n", (unsigned long long)res->hgtx_depth_overflow);
    if (res->unrecorded)
        fprintf(out, "WARNING: %llu events were NOT recorded (no memory for a thread's ring, or"
                " produced inside a signal handler that interrupted the agent)\n",
                (unsigned long long)res->unrecorded);
    if (res->spool_errors)
        fprintf(out, "WARNING: %llu spool write errors: the DB lacks trace rows from the first"
                " one on\n", (unsigned long long)res->spool_errors);
    /* the messages themselves are lost; this line (in a summary file or on stdout) says so */
    if (meta && meta->log_dropped)
        fprintf(out, "WARNING: %llu of the agent's messages were not written: stderr was full (a reader"
                " that does not read), closed or replaced by the application\n",
                (unsigned long long)meta->log_dropped);
    pa_summary_unterminated(out, db, res);
}

void pa_summary_print(FILE *out, const pa_session_meta_t *meta, const pa_agg_results_t *res,
                      const char *db_path)
{
    pa_summary_print_note(out, meta, res, db_path, NULL);
}

void pa_summary_print_note(FILE *out, const pa_session_meta_t *meta, const pa_agg_results_t *res,
                           const char *db_path, const char *db_note)
{
    static const char *const hgtx_titles[] = {"Time (%)", "Total Time (ns)", "Instances",
        "Avg (ns)", "Med (ns)", "Min (ns)", "Max (ns)", "StdDev (ns)", "Style", "Range"};
    static const char *const osrt_titles[] = {"Time (%)", "Total Time (ns)", "Num Calls",
        "Avg (ns)", "Med (ns)", "Min (ns)", "Max (ns)", "StdDev (ns)", "Name"};
    sqlite3 *db = NULL;
    if (!out)
        return;
    /* a DB with a note is not read: it lacks rows the aggregates count (its scans would also
     * cost what the exit's bound just saved) */
    if (db_path && !db_note && sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        db = NULL;
    }
    fprintf(out, "==== profagent summary ====\n");
    if (meta) {
        /* the one run length of the summary (device utilization divides by it too) */
        uint64_t dur = meta->end_mono_ns > meta->start_mono_ns ? meta->end_mono_ns - meta->start_mono_ns : 0;
        fprintf(out, "Process: pid %u on %s%s\nCommand: %s\nDuration: %.3f s (%llu ns, from the agent's"
                " start in the process to its exit)\n", meta->pid, meta->hostname ? meta->hostname : "?",
                meta->complete ? "" : " (session did not complete)",
                meta->cmdline ? meta->cmdline : "?", (double)dur / 1e9, (unsigned long long)dur);
    }
    if (db_note)
        fprintf(out, "Database: %s (%s)\n", db_path ? db_path : "(not written)", db_note);
    else
        fprintf(out, "Database: %s\n", db_path ? db_path : "(not written)");
    summary_db = db; /* the sources' sections print the medians the writer recomputed too */
    if (res) {
        pa_summary_counters(out, db, res, meta);
        pa_summary_threads(out, res);
        pa_summary_stats(out, db, res, PA_CAT_HGTX_RANGE, "HGTX ranges", hgtx_titles, 10, "hgtx_sum");
        pa_summary_stats(out, db, res, PA_CAT_OSRT, "OS runtime calls", osrt_titles, 9, "osrt_sum");
    }
    if (pa_writer_source_ze.summary)
        pa_writer_source_ze.summary(out, meta, res);
    if (pa_writer_source_mem.summary)
        pa_writer_source_mem.summary(out, meta, res);
    if (res && pa_writer_source_proj.summary)
        pa_writer_source_proj.summary(out, meta, res);
    if (res)
        pa_writer_source_hc.summary(out, meta, res);
    if (pa_writer_source_pcs.summary)
        pa_writer_source_pcs.summary(out, meta, res);
    if (pa_writer_source_dm.summary)
        pa_writer_source_dm.summary(out, meta, res);
    fflush(out);
    summary_db = NULL;
    sqlite3_close(db);
}
