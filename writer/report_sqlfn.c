/* report_sqlfn.c - SQL functions the reports use: median, stddev (aggregates), regexp (PCRE2). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <math.h>
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "writer_internal.h"
#include "../common/pa_stddev.h"

/* ---- median(x): exact; even count = mean of the two middle values (DESIGN.md) ---- */

typedef struct pa_median_ctx { double *v; size_t n, cap; int oom; } pa_median_ctx_t;

static void pa_median_step(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL)
        return;
    pa_median_ctx_t *m = sqlite3_aggregate_context(ctx, sizeof *m);
    if (!m || m->oom)
        return;
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
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

static void pa_median_final(sqlite3_context *ctx)
{
    pa_median_ctx_t *m = sqlite3_aggregate_context(ctx, 0);
    if (!m || m->n == 0) {
        if (m && m->oom)
            sqlite3_result_error_nomem(ctx);
        else
            sqlite3_result_null(ctx);
        free(m ? m->v : NULL);
        return;
    }
    if (m->oom) {
        sqlite3_result_error_nomem(ctx);
    } else {
        pa_sort(m->v, m->n, sizeof *m->v, pa_cmp_double);
        size_t h = m->n / 2;
        sqlite3_result_double(ctx, m->n % 2 ? m->v[h] : (m->v[h - 1] + m->v[h]) / 2.0);
    }
    free(m->v);
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
