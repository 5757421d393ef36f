/* test_report_sqlfn.c - SQL functions median, stddev, regexp and the regex error message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "writer_internal.h"

static sqlite3 *db;

static int setup(void **state)
{
    (void)state;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK || pa_sqlfn_register(db) != 0)
        return -1;
    return sqlite3_exec(db, "CREATE TABLE v(g, x); INSERT INTO v VALUES"
                            " (1, 5), (1, 1), (1, 3),"          /* odd: median 3 */
                            " (2, 10), (2, 40), (2, 20), (2, 30)," /* even: (20+30)/2 = 25 */
                            " (3, 7),"                           /* one sample: stddev 0 */
                            " (4, NULL)", NULL, NULL, NULL);
}

static int teardown(void **state)
{
    (void)state;
    sqlite3_close(db);
    return 0;
}

/* Runs a one-value query; returns the double, or -12345 for NULL. */
static double q1(const char *sql)
{
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    double v = sqlite3_column_type(st, 0) == SQLITE_NULL ? -12345 : sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    return v;
}

static void test_median(void **state)
{
    (void)state;
    assert_true(q1("SELECT median(x) FROM v WHERE g = 1") == 3.0);
    assert_true(q1("SELECT median(x) FROM v WHERE g = 2") == 25.0);
    assert_true(q1("SELECT median(x) FROM v WHERE g = 3") == 7.0);
    assert_true(q1("SELECT median(x) FROM v WHERE g = 4") == -12345);  /* NULLs only */
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median by sorting a copy, the independent path the SQL function is checked against. */
static double median_of(const double *v, size_t n)
{
    double *c = malloc(n * sizeof *c);
    assert_non_null(c);
    memcpy(c, v, n * sizeof *c);
    qsort(c, n, sizeof *c, cmp_d);
    double m = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2.0;
    free(c);
    return m;
}

/* Loads v[0..n) as group g of table s (emptied first when g == 0). */
static void load(const double *v, size_t n, int g)
{
    sqlite3_stmt *st;
    if (g == 0)
        assert_int_equal(sqlite3_exec(db, "DROP TABLE IF EXISTS s; CREATE TABLE s(g, x)", NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "INSERT INTO s VALUES (?1, ?2)", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
    for (size_t i = 0; i < n; i++) {
        sqlite3_bind_int(st, 1, g);
        if (v[i] == (double)(int64_t)v[i])
            sqlite3_bind_int64(st, 2, (int64_t)v[i]); /* as the trace tables hold times */
        else
            sqlite3_bind_double(st, 2, v[i]);
        assert_int_equal(sqlite3_step(st), SQLITE_DONE);
        sqlite3_reset(st);
    }
    assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_finalize(st);
}

static uint64_t rnd_state = 88172645463325252ull;
static uint64_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}

/* Past the budget (16 values here) the values go to a temporary file and the middle ones are
 * selected from it: the same exact medians as sorting them all, for odd and even counts, ties,
 * negative and real values, middle values in different radix buckets, one key for all. */
static void test_median_spill(void **state)
{
    (void)state;
    enum { N = 5001 };
    static double v[N];
    pa_sqlfn_set_median_budget(16);
    const size_t counts[] = {1, 2, 15, 16, 17, 32, 33, 100, 1000, 1001, N};
    for (int shape = 0; shape < 6; shape++)
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
            size_t n = counts[c];
            for (size_t i = 0; i < n; i++) {
                uint64_t r = rnd();
                switch (shape) {
                case 0: v[i] = (double)(r % 1000000); break;                  /* durations */
                case 1: v[i] = (double)(r % 7); break;                        /* many ties */
                case 2: v[i] = 42; break;                                     /* one key */
                case 3: v[i] = (double)((int64_t)(r % 2000001) - 1000000); break; /* negative too */
                case 4: v[i] = (double)(r % 1000) / 8.0 + 0.0625; break;      /* reals */
                default: v[i] = i % 2 ? (double)(1ll << 40) : 3; break;      /* two far-apart keys */
                }
            }
            load(v, n, 0);
            uint64_t spills = pa_sqlfn_median_spills();
            double got = q1("SELECT median(x) FROM s");
            assert_true(got == median_of(v, n));
            assert_int_equal(pa_sqlfn_median_spills() - spills, n > 16);
        }
    /* per group (GROUP BY holds one group's context at a time), a big group between small ones */
    for (size_t i = 0; i < N; i++)
        v[i] = (double)(rnd() % 100000);
    load(v, 3, 0);
    load(v + 3, N - 10, 1);
    load(v + N - 7, 7, 2);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT g, median(x) FROM s GROUP BY g ORDER BY g", -1, &st, NULL),
                     SQLITE_OK);
    const double want[3] = {median_of(v, 3), median_of(v + 3, N - 10), median_of(v + N - 7, 7)};
    for (int g = 0; g < 3; g++) {
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        assert_int_equal(sqlite3_column_int(st, 0), g);
        assert_true(sqlite3_column_double(st, 1) == want[g]);
    }
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    pa_sqlfn_set_median_budget(0);
}

/* A temporary file that cannot be created is one SQL error naming the directory, not a wrong median. */
static void test_median_spill_error(void **state)
{
    (void)state;
    double v[40];
    for (int i = 0; i < 40; i++)
        v[i] = i;
    load(v, 40, 0);
    pa_sqlfn_set_median_budget(16);
    setenv("TMPDIR", "/nonexistent-profagent-dir", 1);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT median(x) FROM s", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ERROR);
    sqlite3_finalize(st);
    assert_non_null(strstr(sqlite3_errmsg(db), "median(): the temporary file for its 40 values (past 16 in memory)"
                                               " in '/nonexistent-profagent-dir' failed: No such file or directory"));
    unsetenv("TMPDIR");
    pa_sqlfn_set_median_budget(0);
    assert_true(q1("SELECT median(x) FROM s") == 19.5); /* in memory again */
}

static void test_stddev(void **state)
{
    (void)state;
    /* population: g=1: mean 3, squares 4+4+0 = 8, /3 -> sqrt(2.667) = 1.63299... */
    double s = q1("SELECT stddev(x) FROM v WHERE g = 1");
    assert_true(s > 1.63299 && s < 1.63300);
    /* g=2: mean 25, squares 225+225+25+25 = 500, /4 = 125 -> 11.18033... */
    s = q1("SELECT stddev(x) FROM v WHERE g = 2");
    assert_true(s > 11.18033 && s < 11.18034);
    assert_true(q1("SELECT stddev(x) FROM v WHERE g = 3") == 0.0);
    assert_true(q1("SELECT stddev(x) FROM v WHERE g = 5") == -12345);
}

static void test_regexp(void **state)
{
    (void)state;
    assert_true(q1("SELECT 'Loop1' REGEXP '^Loop'") == 1.0);
    assert_true(q1("SELECT 'xLoop1' REGEXP '^Loop'") == 0.0);
    assert_true(q1("SELECT 'a:b' REGEXP 'a:b$'") == 1.0);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT 'x' REGEXP 'ab('", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ERROR);
    sqlite3_finalize(st);
    assert_non_null(strstr(sqlite3_errmsg(db), "invalid regular expression 'ab(' at offset 3"));
    char err[256];
    assert_int_equal(pa_regex_check("(", err, sizeof err), -1);
    assert_non_null(strstr(err, "'(' at offset 1: missing closing parenthesis"));
    assert_int_equal(pa_regex_check("^a|b$", err, sizeof err), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_median),
        cmocka_unit_test(test_median_spill),
        cmocka_unit_test(test_median_spill_error),
        cmocka_unit_test(test_stddev),
        cmocka_unit_test(test_regexp),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
