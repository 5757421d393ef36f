/* test_report_opts.c - report name/alias lookup and option parsing with its error messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "writer_internal.h"

static char err[2048];

static pa_report_req_t *ok(const char *spec)
{
    pa_report_req_t *r = NULL;
    err[0] = '\0';
    int rc = pa_report_parse(spec, &r, err, sizeof err);
    if (rc != PA_REP_OK)
        print_error("unexpected error for %s: %s\n", spec, err);
    assert_int_equal(rc, PA_REP_OK);
    return r;
}

static void bad(const char *spec, const char *needle)
{
    pa_report_req_t *r = (pa_report_req_t *)1;
    assert_int_equal(pa_report_parse(spec, &r, err, sizeof err), PA_REP_EUSAGE);
    assert_null(r);
    if (!strstr(err, needle))
        print_error("'%s' not in '%s'\n", needle, err);
    assert_non_null(strstr(err, needle));
}

static void test_parse_values(void **state)
{
    (void)state;
    pa_report_req_t *r = ok("hgtx_sum:rows=10:process=1/22/333:thread=7");
    assert_ptr_equal(r->def, &pa_report_hgtx_sum);
    assert_int_equal(pa_req_opt(r, "rows")->i, 10);
    const pa_opt_val_t *p = pa_req_opt(r, "process");
    assert_int_equal(p->nids, 3);
    assert_int_equal(p->ids[0], 1);
    assert_int_equal(p->ids[2], 333);
    char sql[256] = "";
    assert_int_equal(pa_sql_tid_filter(r, "g", sql, sizeof sql), 0);
    assert_string_equal(sql, " AND (g >> 32) IN (1,22,333) AND (g & 4294967295) IN (7)");
    pa_report_req_free(r);

    r = ok("hgtx_pushpop_trace:range=^(a|b):c$");  /* ':' inside the regex is kept */
    assert_string_equal(pa_req_opt(r, "range")->s, "^(a|b):c$");
    pa_report_req_free(r);
    r = ok("osrt_sum");
    assert_null(pa_req_opt(r, "rows"));
    pa_report_req_free(r);
}

static void test_parse_errors(void **state)
{
    (void)state;
    bad("nosuch", "unknown report 'nosuch'; valid reports: hgtx_sum, hgtx_pushpop_trace, osrt_sum");
    bad("hgtx_sum:bogus", "unknown option 'bogus'; accepted options: rows=<limit>, "
                          "process=<pid_list>, thread=<tid_list>");
    bad("hgtx_sum:rows=-1", "rows='-1' is not a non-negative integer");
    bad("hgtx_sum:rows=", "option 'rows' needs a value: rows=<limit>");
    bad("hgtx_sum:rows", "option 'rows' needs a value");
    bad("hgtx_sum:process=1//2", "must be a '/'-separated list");
    bad("hgtx_sum:thread=abc", "'abc' is not a numeric id");
    bad("hgtx_pushpop_trace:range=a(b", "invalid regular expression 'a(b' at offset 3");
}

static void test_help(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(pa_report_help(f, "hgtx_pushpop_trace", err, sizeof err), PA_REP_OK);
    fclose(f);
    assert_non_null(strstr(buf, "hgtx_pushpop_trace -- HGTX Push/Pop Range Trace"));
    assert_non_null(strstr(buf, "range=<regex_filter>"));
    assert_non_null(strstr(buf, "RangeStack : Range IDs that make up the push/pop stack"));
    free(buf);
    f = open_memstream(&buf, &len);
    assert_int_equal(pa_report_help(f, "zzz", err, sizeof err), PA_REP_EUSAGE);
    fclose(f);
    free(buf);
    assert_non_null(strstr(err, "unknown report 'zzz'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_values),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_help),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
