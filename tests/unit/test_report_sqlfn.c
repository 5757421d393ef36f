/* test_report_sqlfn.c - SQL functions median, stddev, regexp and the regex error message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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
        cmocka_unit_test(test_stddev),
        cmocka_unit_test(test_regexp),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
