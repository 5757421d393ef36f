/* report_sqlfn.c - SQL functions the reports use: median, stddev (aggregates), regexp (PCRE2). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <math.h>
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "writer_internal.h"
#include "../common/pa_stddev.h"

/* ---- median(x): exact; even count = mean of the two middle values (DESIGN.md) ----
 * The values are kept in memory up to a budget (the agent's exact-median rule: bounded memory,
 * the DB when it is exceeded): past it they go, in batches, to a temporary table of this
 * connection, and the median comes from SQLite's sorter over it (ORDER BY + LIMIT/OFFSET, which
 * spills to temporary files), so a group of any size costs the budget, not 8 bytes a value. */

#define PA_MEDIAN_BUDGET_DEFAULT (1u << 20) /* values per median() group in memory: 8 MiB */
#define PA_MEDIAN_BATCH 500                 /* rows per INSERT into the spill table */
static size_t pa_median_budget = PA_MEDIAN_BUDGET_DEFAULT;
static uint64_t pa_median_spilled_total; /* values moved to spill tables, for the tests */

uint64_t pa_sqlfn_median_spilled(void)
{
    return pa_median_spilled_total;
}

void pa_sqlfn_set_median_budget(size_t values)
{
    pa_median_budget = values >= PA_MEDIAN_BATCH ? values : values ? PA_MEDIAN_BATCH : PA_MEDIAN_BUDGET_DEFAULT;
}

typedef struct pa_median_ctx {
    double *v; size_t n, cap;
    int oom, failed;
    uint64_t spilled;  /* values moved to the table so far */
    char table[48];    /* temp.pa_median_<k>, "" until the first spill */
    sqlite3_stmt *ins; /* INSERT of PA_MEDIAN_BATCH rows */
} pa_median_ctx_t;

/* Moves every value held in memory to the spill table (created on first use). 0 or -1. */
static int pa_median_spill(sqlite3 *db, pa_median_ctx_t *m)
{
    static uint64_t seq;
    if (!m->table[0]) {
        char sql[160], *ins;
        snprintf(m->table, sizeof m->table, "temp.pa_median_%llu", (unsigned long long)++seq);
        snprintf(sql, sizeof sql, "CREATE TABLE %s(v REAL)", m->table);
        if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
            return -1;
        size_t len = strlen(m->table) + 32 + 4 * PA_MEDIAN_BATCH;
        if (!(ins = malloc(len)))
            return -1;
        size_t k = (size_t)snprintf(ins, len, "INSERT INTO %s(v) VALUES (?)", m->table);
        for (int i = 1; i < PA_MEDIAN_BATCH; i++)
            k += (size_t)snprintf(ins + k, len - k, ",(?)");
        int rc = sqlite3_prepare_v2(db, ins, -1, &m->ins, NULL);
        free(ins);
        if (rc != SQLITE_OK)
            return -1;
    }
    size_t i = 0;
    for (; i + PA_MEDIAN_BATCH <= m->n; i += PA_MEDIAN_BATCH) {
        for (int j = 0; j < PA_MEDIAN_BATCH; j++)
            sqlite3_bind_double(m->ins, j + 1, m->v[i + (size_t)j]);
        if (sqlite3_step(m->ins) != SQLITE_DONE)
            return -1;
        sqlite3_reset(m->ins);
    }
    /* the rest (fewer than a batch), one row each */
    char sql[96];
    snprintf(sql, sizeof sql, "INSERT INTO %s(v) VALUES (?)", m->table);
    sqlite3_stmt *one = NULL;
    if (i < m->n && sqlite3_prepare_v2(db, sql, -1, &one, NULL) != SQLITE_OK)
        return -1;
    for (; i < m->n; i++) {
        sqlite3_bind_double(one, 1, m->v[i]);
        if (sqlite3_step(one) != SQLITE_DONE) {
            sqlite3_finalize(one);
            return -1;
        }
        sqlite3_reset(one);
    }
    sqlite3_finalize(one);
    m->spilled += m->n;
    pa_median_spilled_total += m->n;
    m->n = 0;
    return 0;
}

static void pa_median_step(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL)
        return;
    pa_median_ctx_t *m = sqlite3_aggregate_context(ctx, sizeof *m);
    if (!m || m->oom || m->failed)
        return;
    if (m->n == m->cap && m->n >= pa_median_budget && pa_median_spill(sqlite3_context_db_handle(ctx), m) != 0)
        m->failed = 1;
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        if (cap > pa_median_budget)
            cap = pa_median_budget > m->n ? pa_median_budget : m->n + 1;
        double *nv = realloc(m->v, cap * sizeof *nv);
        if (!nv) {
            m->oom = 1;
            return;
        }
        m->v = nv;
        m->cap = cap;
    }
    m->v[m->n++] = sqlite3_value_double(argv[0]);
}

static int pa_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of the spilled values (the last ones moved there first): SQLite's sorter. */
static int pa_median_from_table(sqlite3 *db, pa_median_ctx_t *m, double *out)
{
    char sql[256];
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (pa_median_spill(db, m) != 0)
        return -1;
    snprintf(sql, sizeof sql, "SELECT avg(v) FROM (SELECT v FROM %s ORDER BY v LIMIT ?1 OFFSET ?2)", m->table);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, m->spilled % 2 ? 1 : 2);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)((m->spilled - 1) / 2));
        if (sqlite3_step(st) == SQLITE_ROW) {
            *out = sqlite3_column_double(st, 0);
            rc = 0;
        }
    }
    sqlite3_finalize(st);
    return rc;
}

static void pa_median_final(sqlite3_context *ctx)
{
    pa_median_ctx_t *m = sqlite3_aggregate_context(ctx, 0);
    sqlite3 *db = sqlite3_context_db_handle(ctx);
    double med = 0;
    if (!m || (m->n == 0 && !m->spilled && !m->oom && !m->failed))
        sqlite3_result_null(ctx);
    else if (m->oom)
        sqlite3_result_error_nomem(ctx);
    else if (m->failed || (m->table[0] && pa_median_from_table(db, m, &med) != 0))
        sqlite3_result_error(ctx, "median(): the temporary table for a group past the memory budget failed", -1);
    else if (m->table[0])
        sqlite3_result_double(ctx, med);
    else {
        pa_sort(m->v, m->n, sizeof *m->v, pa_cmp_double);
        size_t h = m->n / 2;
        sqlite3_result_double(ctx, m->n % 2 ? m->v[h] : (m->v[h - 1] + m->v[h]) / 2.0);
    }
    if (m) {
        free(m->v);
        sqlite3_finalize(m->ins);
        if (m->table[0]) {
            /* emptied (its pages go back to the temp file's free list, for the next group); the
             * DROP fails while the query that called us runs (SQLITE_LOCKED): the empty table then
             * goes with the connection */
            char sql[160];
            snprintf(sql, sizeof sql, "DELETE FROM %s; DROP TABLE IF EXISTS %s", m->table, m->table);
            sqlite3_exec(db, sql, NULL, NULL, NULL);
        }
    }
}

/* ---- stddev(x): population standard deviation (pa_stddev.h), Welford; 0 for a single value ---- */

typedef struct pa_stddev_ctx { uint64_t n; double mean, m2; } pa_stddev_ctx_t;

static void pa_stddev_step(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL)
        return;
    pa_stddev_ctx_t *s = sqlite3_aggregate_context(ctx, sizeof *s);
    if (!s)
        return;
    double x = sqlite3_value_double(argv[0]);
    s->n++;
    double d = x - s->mean;
    s->mean += d / (double)s->n;
    s->m2 += d * (x - s->mean);
}

static void pa_stddev_final(sqlite3_context *ctx)
{
    pa_stddev_ctx_t *s = sqlite3_aggregate_context(ctx, 0);
    if (!s || s->n == 0)
        sqlite3_result_null(ctx);
    else
        sqlite3_result_double(ctx, pa_stddev_pop(s->n, s->m2));
}

/* ---- regexp(pattern, text): PCRE2, partial match, bytes (no UTF check: names may hold any
 * byte); the compiled pattern is cached per statement with sqlite3_set_auxdata ---- */

static pcre2_code *pa_regex_compile(const char *pattern, size_t len, char *err, size_t errsz)
{
    int ec;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, len, 0, &ec, &off, NULL);
    if (!re && err) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(ec, msg, sizeof msg);
        snprintf(err, errsz, "invalid regular expression '%.*s' at offset %zu: %s",
                 (int)(len > 200 ? 200 : len), pattern, (size_t)off, (const char *)msg);
    }
    return re;
}

int pa_regex_check(const char *pattern, char *err, size_t errsz)
{
    pcre2_code *re = pa_regex_compile(pattern, strlen(pattern), err, errsz);
    if (!re)
        return -1;
    pcre2_code_free(re);
    return 0;
}

static void pa_regex_free(void *p)
{
    pcre2_code_free(p);
}

static void pa_regexp_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL || sqlite3_value_type(argv[1]) == SQLITE_NULL) {
        sqlite3_result_null(ctx);
        return;
    }
    pcre2_code *re = sqlite3_get_auxdata(ctx, 0);
    if (!re) {
        char err[512];
        const char *pat = (const char *)sqlite3_value_text(argv[0]);
        re = pa_regex_compile(pat, (size_t)sqlite3_value_bytes(argv[0]), err, sizeof err);
        if (!re) {
            sqlite3_result_error(ctx, err, -1);
            return;
        }
        sqlite3_set_auxdata(ctx, 0, re, pa_regex_free);
        re = sqlite3_get_auxdata(ctx, 0);  /* SQLite may have freed it already */
        if (!re) {
            sqlite3_result_error_nomem(ctx);
            return;
        }
    }
    const unsigned char *s = sqlite3_value_text(argv[1]);
    size_t n = (size_t)sqlite3_value_bytes(argv[1]);
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    if (!md) {
        sqlite3_result_error_nomem(ctx);
        return;
    }
    int rc = pcre2_match(re, (PCRE2_SPTR)s, n, 0, 0, md, NULL);
    pcre2_match_data_free(md);
    if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) {
        char err[128];
        snprintf(err, sizeof err, "regexp: PCRE2 match error %d", rc);
        sqlite3_result_error(ctx, err, -1);
        return;
    }
    sqlite3_result_int(ctx, rc >= 0);
}

/* stat_trunc(x): pa_stat_trunc() in SQL (NULL stays NULL), the rule every printed statistic follows */
static void pa_stat_trunc_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL)
        sqlite3_result_null(ctx);
    else
        sqlite3_result_int64(ctx, pa_stat_trunc(sqlite3_value_double(argv[0])));
}

int pa_sqlfn_register(sqlite3 *db)
{
    int f = SQLITE_UTF8 | SQLITE_DETERMINISTIC;
    if (sqlite3_create_function(db, "median", 1, f, NULL, NULL, pa_median_step, pa_median_final)
            != SQLITE_OK ||
        sqlite3_create_function(db, "stddev", 1, f, NULL, NULL, pa_stddev_step, pa_stddev_final)
            != SQLITE_OK ||
        sqlite3_create_function(db, "regexp", 2, f, NULL, pa_regexp_fn, NULL, NULL) != SQLITE_OK ||
        sqlite3_create_function(db, "stat_trunc", 1, f, NULL, pa_stat_trunc_fn, NULL, NULL) != SQLITE_OK)
        return -1;
    return 0;
}
