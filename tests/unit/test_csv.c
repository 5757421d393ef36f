/* test_csv.c - report formatters: CSV escaping (spec style), JSON escaping, table, number format. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <math.h>

#include "writer_internal.h"
#include "../common/pa_stddev.h"

static const char *const titles2[] = {"Time (%)", "Name"};

/* Writes t in fmt to a memory buffer; caller frees. */
static char *render(const pa_table_t *t, int fmt, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    assert_non_null(f);
    pa_table_write(t, fmt, f);
    fclose(f);
    return buf;
}

static void one_string_csv(const char *s, size_t n, const char *expect, size_t elen)
{
    pa_table_t t = {.ncols = 2, .titles = titles2};
    pa_table_add_double(&t, 12.34, 1);
    pa_table_add_str(&t, s, n);
    size_t len;
    char *out = render(&t, PA_FMT_CSV, &len);
    const char *hdr = "Row#,Time (%),Name,\n1,12.3,";
    assert_true(len == strlen(hdr) + elen + 2);
    assert_memory_equal(out, hdr, strlen(hdr));
    assert_memory_equal(out + strlen(hdr), expect, elen);
    assert_memory_equal(out + len - 2, ",\n", 2);
    free(out);
    pa_table_free(&t);
}

static void test_csv_escaping(void **state)
{
    (void)state;
    one_string_csv("plain", 5, "\"plain\"", 7);
    one_string_csv("a\"b", 3, "\"a\"\"b\"", 6);             /* quote doubled */
    one_string_csv("a,b", 3, "\"a,b\"", 5);                 /* comma kept inside quotes */
    one_string_csv("a\nb", 3, "\"a\nb\"", 5);               /* newline kept */
    one_string_csv("a\tb\\c", 5, "\"a\tb\\c\"", 7);         /* tab, backslash kept */
    one_string_csv("\xff\x00z", 3, "\"\xff\x00z\"", 5);     /* 0xFF and NUL bytes kept */
    one_string_csv("", 0, "\"\"", 2);                       /* empty string */
}

static void test_csv_100k_and_columns(void **state)
{
    (void)state;
    size_t n = 100 * 1024;
    char *big = malloc(n);
    assert_non_null(big);
    memset(big, 'q', n);
    big[10] = '"';
    pa_table_t t = {.ncols = 2, .titles = titles2};
    pa_table_add_none(&t);
    pa_table_add_str(&t, big, n);
    pa_table_add_int(&t, -5);
    pa_table_add_none(&t);
    size_t len;
    char *out = render(&t, PA_FMT_CSV, &len);
    /* header + row 1 ("-" quoted, the string with one quote doubled) + row 2 */
    const char *hdr = "Row#,Time (%),Name,\n1,\"-\",\"";
    assert_int_equal(len, strlen(hdr) + n + 1 + 3 + strlen("2,-5,\"-\",\n"));
    assert_memory_equal(out, hdr, strlen(hdr));
    assert_memory_equal(out + len - 10, "2,-5,\"-\",\n", 10);
    free(out);
    free(big);
    pa_table_free(&t);
}

static void test_json_escaping(void **state)
{
    (void)state;
    pa_table_t t = {.ncols = 2, .titles = titles2};
    pa_table_add_double(&t, 50, 1);
    pa_table_add_str(&t, "q\"\\\n\x01\xff\xc3\xa9", 8);  /* quote, backslash, LF, ^A, 0xFF, é */
    size_t len;
    char *out = render(&t, PA_FMT_JSON, &len);
    const char *exp = "[\n  {\"Row#\": 1, \"Time (%)\": 50.0, \"Name\": "
                      "\"q\\\"\\\\\\u000a\\u0001\\u00ff\xc3\xa9\"}\n]\n";
    assert_string_equal(out, exp);
    free(out);
    pa_table_free(&t);
}

static void test_table_and_numbers(void **state)
{
    (void)state;
    char b[64];
    pa_format_double(b, sizeof b, 29.85, 1);
    assert_string_equal(b, "29.9");  /* 29.85 is 29.850000000000001 in binary */
    pa_format_double(b, sizeof b, -0.01, 1);
    assert_string_equal(b, "0.0");   /* no "-0.0" */
    pa_format_double(b, sizeof b, 2828.427, 0);
    assert_string_equal(b, "2828");
    pa_table_t t = {.ncols = 2, .titles = titles2};
    pa_table_add_double(&t, 5, 1);
    pa_table_add_str(&t, "a\tb", 3);
    size_t len;
    char *out = render(&t, PA_FMT_TABLE, &len);
    assert_string_equal(out, "Row#  Time (%)  Name\n----  --------  ------\n"
                             "   1       5.0  a\\x09b\n");
    free(out);
    pa_table_free(&t);
}

/* Integer statistics are truncated, as the spec's examples print them (2.3.2: 13487638 / 1495 =
 * 9021.83 -> 9021; 2.3.14: 34907845.96 -> 34907845), never rounded (half-to-even gave 9022, and
 * 2 for 1.5, 4 for 3.5); a double a rounding error below an integer still counts as it. */
static void test_stat_truncation(void **state)
{
    (void)state;
    static const char *const t1[] = {"v"};
    pa_table_t t = {.ncols = 1, .titles = t1};
    const double v[] = {13487638.0 / 1495.0, 34907845.96, 1.5, 3.5, 2.5, 0.0, 7.0, 5.0 - 1e-13, sqrt(25.0)};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        pa_table_add_double(&t, v[i], 0);
    size_t len;
    char *out = render(&t, PA_FMT_CSV, &len);
    assert_string_equal(out, "Row#,v,\n1,9021,\n2,34907845,\n3,1,\n4,3,\n5,2,\n6,0,\n7,7,\n8,5,\n9,5,\n");
    free(out);
    pa_table_free(&t);
    assert_int_equal(pa_stat_trunc(-2.7), -2);
    assert_int_equal(pa_stat_trunc(9021.999), 9021);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csv_escaping),
        cmocka_unit_test(test_csv_100k_and_columns),
        cmocka_unit_test(test_json_escaping),
        cmocka_unit_test(test_table_and_numbers),
        cmocka_unit_test(test_stat_truncation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
