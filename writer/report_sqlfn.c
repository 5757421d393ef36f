/* report_sqlfn.c - SQL functions the reports use: median, stddev (aggregates), regexp (PCRE2). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "writer_internal.h"
#include "../common/pa_stddev.h"

/* ---- median(x): exact; even count = mean of the two middle values (DESIGN.md). Memory is
 * bounded: up to pa_median_budget values are held in memory (sorted at the end); past that the
 * values go to an unlinked temporary file (TMPDIR, else /tmp) and the middle ones are found by a
 * radix selection over it: each pass counts the values by the next 16 bits of their order-keeping
 * 64-bit key, among those whose higher bits match the bucket found so far, until one bucket fits
 * in memory (then sorted) or is one key (at most 4 passes plus 1, per middle value). No SQLite
 * table: a function may not create one while its statement runs (recover, merge run it inside
 * an INSERT ... SELECT). ---- */

#define PA_MEDIAN_MIN_BUDGET 16u

static size_t pa_median_budget = PA_MEDIAN_BUDGET_VALUES;
static uint64_t pa_median_spill_count;

void pa_sqlfn_set_median_budget(size_t values)
{
    pa_median_budget = values == 0 ? PA_MEDIAN_BUDGET_VALUES
                       : values < PA_MEDIAN_MIN_BUDGET ? PA_MEDIAN_MIN_BUDGET : values;
}

uint64_t pa_sqlfn_median_spills(void)
{
    return __atomic_load_n(&pa_median_spill_count, __ATOMIC_RELAXED);
}

typedef struct pa_median_ctx {
    double *v;      /* in memory: the values; once spilled: the write (and later read) buffer */
    size_t n, cap;  /* values in v, its capacity (at most the budget) */
    uint64_t total; /* values seen, spilled ones included */
    int fd1;        /* the spill file's descriptor + 1 (the context starts zeroed), 0 none */
    int err;        /* ENOMEM, or the errno of a spill failure: the result is an error */
} pa_median_ctx_t;

static const char *pa_median_tmpdir(void)
{
    const char *d = getenv("TMPDIR");
    return d && *d ? d : "/tmp";
}

/* An unlinked temporary file in pa_median_tmpdir(); its descriptor, or -1 with errno set. */
static int pa_median_tmpfile(void)
{
    const char *dir = pa_median_tmpdir();
    int fd;
#ifdef O_TMPFILE
    fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
        return fd;
#endif
    char path[4096];
    if (snprintf(path, sizeof path, "%s/profagent-median-XXXXXX", dir) >= (int)sizeof path)
        return errno = ENAMETOOLONG, -1;
    fd = mkstemp(path);
    if (fd >= 0) {
        unlink(path);
        (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    return fd;
}

/* Writes v[0..n) at the end of the spill file (created on the first call); 0 or -1 (m->err set). */
static int pa_median_spill(pa_median_ctx_t *m)
{
    if (!m->fd1) {
        int fd = pa_median_tmpfile();
        if (fd < 0) {
            m->err = errno ? errno : EIO;
            return -1;
        }
        m->fd1 = fd + 1;
        __atomic_add_fetch(&pa_median_spill_count, 1, __ATOMIC_RELAXED);
    }
    const char *p = (const char *)m->v;
    size_t left = m->n * sizeof *m->v;
    while (left) {
        ssize_t w = write(m->fd1 - 1, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            m->err = w < 0 ? errno : ENOSPC;
            return -1;
        }
        p += w;
        left -= (size_t)w;
    }
    m->n = 0;
    return 0;
}

static void pa_median_step(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL)
        return;
    pa_median_ctx_t *m = sqlite3_aggregate_context(ctx, sizeof *m);
    if (!m)
        return;
    m->total++; /* counted after a failure too: the message says how many there were */
    if (m->err)
        return;
    if (m->n == m->cap) {
        if (m->cap < pa_median_budget) {
            size_t cap = m->cap ? m->cap * 2 : 64;
            cap = cap > pa_median_budget ? pa_median_budget : cap;
            double *nv = realloc(m->v, cap * sizeof *nv);
            if (!nv) {
                m->err = ENOMEM;
                return;
            }
            m->v = nv;
            m->cap = cap;
        } else if (pa_median_spill(m) != 0) {
            return;
        }
    }
    m->v[m->n++] = sqlite3_value_double(argv[0]);
}

static int pa_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The order-keeping key of a double (key(a) < key(b) when a < b; -0 before +0) and back. */
static uint64_t pa_dkey(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u >> 63 ? ~u : u | 1ull << 63;
}

static double pa_dval(uint64_t k)
{
    uint64_t u = k >> 63 ? k & ~(1ull << 63) : ~k;
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* One pass over the spill file: fn(arg, key) per value; 0, or -1 with m->err set. */
static int pa_median_pass(pa_median_ctx_t *m, void (*fn)(void *, uint64_t), void *arg)
{
    size_t bytes = m->cap * sizeof *m->v;
    for (off_t off = 0;;) {
        ssize_t r = pread(m->fd1 - 1, m->v, bytes, off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            m->err = errno;
            return -1;
        }
        if (r == 0)
            return 0;
        size_t got = (size_t)r / sizeof *m->v;
        for (size_t i = 0; i < got; i++)
            fn(arg, pa_dkey(m->v[i]));
        off += (off_t)(got * sizeof *m->v);
    }
}

typedef struct {
    uint64_t *hist;   /* 65536 counts, or NULL when collecting */
    double *keep;     /* the collected values */
    size_t nkeep;
    uint64_t prefix;  /* the key bits fixed so far (the top `fixed` bits) */
    int fixed;        /* 0, 16, 32 or 48 */
} pa_select_t;

static int pa_select_match(const pa_select_t *s, uint64_t key)
{
    return s->fixed == 0 || key >> (64 - s->fixed) == s->prefix;
}

static void pa_select_count(void *arg, uint64_t key)
{
    pa_select_t *s = arg;
    if (pa_select_match(s, key))
        s->hist[key >> (48 - s->fixed) & 0xffff]++;
}

static void pa_select_keep(void *arg, uint64_t key)
{
    pa_select_t *s = arg;
    if (pa_select_match(s, key))
        s->keep[s->nkeep++] = pa_dval(key);
}

/* The spilled values of ranks k and k + 1 (0-based, in ascending order) into out[0], out[1]; the
 * second only when `two` and then *got2 says whether it was found on the way (it is not when it
 * lies in another bucket than the first). 0, or -1 with m->err set. */
static int pa_median_select(pa_median_ctx_t *m, uint64_t k, int two, double out[2], int *got2)
{
    pa_select_t s = {.hist = malloc(65536 * sizeof *s.hist)};
    int rc = -1;
    *got2 = 0;
    if (!s.hist) {
        m->err = ENOMEM;
        return -1;
    }
    for (;;) {
        memset(s.hist, 0, 65536 * sizeof *s.hist);
        if (pa_median_pass(m, pa_select_count, &s) != 0)
            break;
        uint32_t j = 0;
        while (j < 65535 && k >= s.hist[j])
            k -= s.hist[j++];
        uint64_t cnt = s.hist[j];
        s.prefix = s.prefix << 16 | j;
        s.fixed += 16;
        if (s.fixed == 64) { /* one key: every value of the bucket is that one */
            out[0] = out[1] = pa_dval(s.prefix);
            *got2 = two && k + 1 < cnt;
            rc = 0;
            break;
        }
        if (cnt <= m->cap) { /* fits: collect it and sort */
            free(s.hist);
            s.hist = NULL;
            s.keep = malloc((size_t)cnt * sizeof *s.keep);
            if (!s.keep) {
                m->err = ENOMEM;
                break;
            }
            if (pa_median_pass(m, pa_select_keep, &s) != 0)
                break;
            pa_sort(s.keep, s.nkeep, sizeof *s.keep, pa_cmp_double);
            out[0] = s.keep[k];
            if (two && k + 1 < s.nkeep) {
                out[1] = s.keep[k + 1];
                *got2 = 1;
            }
            rc = 0;
            break;
        }
    }
    free(s.hist);
    free(s.keep);
    return rc;
}

/* The median of the spilled values (v[0..n) written out first) into *out; 0, or -1 (m->err). */
static int pa_median_of_spill(pa_median_ctx_t *m, double *out)
{
    if (m->n && pa_median_spill(m) != 0)
        return -1;
    uint64_t k = (m->total - 1) / 2;
    int two = m->total % 2 == 0, got2;
    double v[2], w[2];
    if (pa_median_select(m, k, two, v, &got2) != 0)
        return -1;
    if (two && !got2) {
        if (pa_median_select(m, k + 1, 0, w, &got2) != 0)
            return -1;
        v[1] = w[0];
    }
    *out = two ? (v[0] + v[1]) / 2.0 : v[0];
    return 0;
}

static void pa_median_final(sqlite3_context *ctx)
{
    pa_median_ctx_t *m = sqlite3_aggregate_context(ctx, 0);
    if (!m || (m->total == 0 && !m->err)) {
        sqlite3_result_null(ctx);
        if (m)
            free(m->v);
        return;
    }
    double med = 0;
    if (!m->err && m->fd1) {
        pa_median_of_spill(m, &med);
    } else if (!m->err) {
        pa_sort(m->v, m->n, sizeof *m->v, pa_cmp_double);
        size_t h = m->n / 2;
        med = m->n % 2 ? m->v[h] : (m->v[h - 1] + m->v[h]) / 2.0;
    }
    if (m->err == ENOMEM) {
        sqlite3_result_error_nomem(ctx);
    } else if (m->err) {
        char msg[512];
        snprintf(msg, sizeof msg, "median(): the temporary file for its %llu values (past %zu in memory) in '%s'"
                 " failed: %s (set TMPDIR to a directory with room)", (unsigned long long)m->total,
                 pa_median_budget, pa_median_tmpdir(), strerror(m->err));
        sqlite3_result_error(ctx, msg, -1);
    } else {
        sqlite3_result_double(ctx, med);
    }
    if (m->fd1)
        close(m->fd1 - 1);
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
