/* test_report_sqlfn.c - SQL functions median, stddev, regexp and the regex error message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
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

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A group past the memory budget moves its values to a temporary table and takes its median
 * from SQLite's sorter: the same exact value as sorting them all, for odd and even counts (a
 * budget of 1000 values: groups of 20001 and 20000 spill 20 times, one of 999 does not), read
 * from a file DB opened read-only (as the CLI opens DBs); no temporary table is left behind. */
static void test_median_spill(void **state)
{
    (void)state;
    char path[] = "/tmp/pa_test_median_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    sqlite3 *w, *r;
    assert_int_equal(sqlite3_open(path, &w), SQLITE_OK);
    assert_int_equal(sqlite3_exec(w, "CREATE TABLE t(g, x); BEGIN", NULL, NULL, NULL), SQLITE_OK);
    static const int sizes[3] = {20001, 20000, 999};
    static double vals[3][20001];
    uint64_t seed = 88172645463325252ull;
    sqlite3_stmt *ins;
    assert_int_equal(sqlite3_prepare_v2(w, "INSERT INTO t VALUES (?, ?)", -1, &ins, NULL), SQLITE_OK);
    for (int g = 0; g < 3; g++)
        for (int i = 0; i < sizes[g]; i++) {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            vals[g][i] = (double)(seed % 5000000) - 1000000.0 + (g == 2 ? 0.5 : 0.0); /* duplicates too */
            sqlite3_bind_int(ins, 1, g);
            sqlite3_bind_double(ins, 2, vals[g][i]);
            assert_int_equal(sqlite3_step(ins), SQLITE_DONE);
            sqlite3_reset(ins);
        }
    sqlite3_finalize(ins);
    assert_int_equal(sqlite3_exec(w, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(w);
    assert_int_equal(sqlite3_open_v2(path, &r, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(pa_sqlfn_register(r), 0);
    pa_sqlfn_set_median_budget(1000);
    uint64_t spilled0 = pa_sqlfn_median_spilled();
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(r, "SELECT g, median(x), count(*) FROM t GROUP BY g ORDER BY g", -1, &st, NULL),
                     SQLITE_OK);
    for (int g = 0; g < 3; g++) {
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        assert_int_equal(sqlite3_column_int(st, 0), g);
        assert_int_equal(sqlite3_column_int(st, 2), sizes[g]);
        qsort(vals[g], (size_t)sizes[g], sizeof vals[g][0], cmp_dbl);
        int n = sizes[g];
        double want = n % 2 ? vals[g][n / 2] : (vals[g][n / 2 - 1] + vals[g][n / 2]) / 2.0;
        assert_true(sqlite3_column_double(st, 1) == want);
    }
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    /* the two large groups went through the table (every value), the small one did not */
    assert_int_equal(pa_sqlfn_median_spilled() - spilled0, 20001 + 20000);
    /* the spill tables are left empty (a DROP is refused while the query runs) */
    assert_int_equal(sqlite3_prepare_v2(r, "SELECT name FROM temp.sqlite_master WHERE type = 'table'", -1, &st, NULL),
                     SQLITE_OK);
    int ntab = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        char q[128];
        snprintf(q, sizeof q, "SELECT count(*) FROM temp.\"%s\"", (const char *)sqlite3_column_text(st, 0));
        sqlite3_stmt *c;
        assert_int_equal(sqlite3_prepare_v2(r, q, -1, &c, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(c), SQLITE_ROW);
        assert_int_equal(sqlite3_column_int(c, 0), 0);
        sqlite3_finalize(c);
        ntab++;
    }
    sqlite3_finalize(st);
    assert_true(ntab <= 2);
    pa_sqlfn_set_median_budget(0);
    sqlite3_close(r);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_median),
        cmocka_unit_test(test_median_spill),
        cmocka_unit_test(test_stddev),
        cmocka_unit_test(test_regexp),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
