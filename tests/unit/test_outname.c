/* test_outname.c - output name placeholders (%p %h %q{VAR} %%) and never-overwrite suffixes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "pa_outname.h"

static char out[4096], want[4096];

static void test_pid_host_percent(void **state)
{
    (void)state;
    assert_int_equal(pa_outname_expand("run-%p.db", out, sizeof out), 0);
    snprintf(want, sizeof want, "run-%ld.db", (long)getpid());
    assert_string_equal(out, want);
    char host[256];
    gethostname(host, sizeof host);
    assert_int_equal(pa_outname_expand("%h/%%/100%%", out, sizeof out), 0);
    snprintf(want, sizeof want, "%s/%%/100%%", host);
    assert_string_equal(out, want);
    assert_int_equal(pa_outname_expand("plain", out, sizeof out), 0);
    assert_string_equal(out, "plain");
}

static void test_env_var(void **state)
{
    (void)state;
    setenv("PA_TEST_RANK", "7", 1);
    assert_int_equal(pa_outname_expand("r%q{PA_TEST_RANK}-%q{PA_TEST_RANK}.db", out, sizeof out), 0);
    assert_string_equal(out, "r7-7.db");
    unsetenv("PA_TEST_RANK");
    assert_int_equal(pa_outname_expand("r%q{PA_TEST_RANK}.db", out, sizeof out), 0); /* unset: empty */
    assert_string_equal(out, "r.db");
    assert_int_equal(pa_outname_expand("a%q{OPEN", out, sizeof out), 0); /* unclosed: literal */
    assert_string_equal(out, "a%q{OPEN");
}

static void test_unknown_placeholder_kept(void **state)
{
    (void)state;
    assert_int_equal(pa_outname_expand("a%zb%", out, sizeof out), 0);
    assert_string_equal(out, "a%zb%");
}

static void test_too_long(void **state)
{
    (void)state;
    char small[8];
    assert_int_equal(pa_outname_expand("12345678", small, sizeof small), -1);
    assert_string_equal(small, "1234567");
    assert_int_equal(pa_outname_expand("1234567", small, sizeof small), 0);
    assert_int_equal(pa_outname_expand("%p%p%p%p", small, sizeof small), -1);
}

static void touch(const char *p)
{
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fclose(f);
}

static void test_unique_suffixes(void **state)
{
    (void)state;
    char dir[] = "/tmp/pa_outname_XXXXXX", p[512];
    assert_non_null(mkdtemp(dir));
    snprintf(p, sizeof p, "%s/t.db", dir);
    assert_int_equal(pa_outname_unique(p, out, sizeof out), 0);
    assert_string_equal(out, p); /* free: unchanged */
    touch(p);
    assert_int_equal(pa_outname_unique(p, out, sizeof out), 0);
    snprintf(want, sizeof want, "%s/t-1.db", dir);
    assert_string_equal(out, want);
    touch(want);
    assert_int_equal(pa_outname_unique(p, out, sizeof out), 0);
    snprintf(want, sizeof want, "%s/t-2.db", dir);
    assert_string_equal(out, want);
    /* overwrite requested: same name even though it exists */
    assert_int_equal(pa_outname_resolve(p, 1, out, sizeof out), 0);
    assert_string_equal(out, p);
    assert_int_equal(pa_outname_resolve(p, 0, out, sizeof out), 0);
    assert_string_equal(out, want);

    char q[512];
    snprintf(q, sizeof q, "%s/noext", dir); /* no extension: suffix at the end */
    touch(q);
    assert_int_equal(pa_outname_unique(q, out, sizeof out), 0);
    snprintf(want, sizeof want, "%s/noext-1", dir);
    assert_string_equal(out, want);
    snprintf(q, sizeof q, "%s/.hidden", dir); /* leading dot is not an extension */
    touch(q);
    assert_int_equal(pa_outname_unique(q, out, sizeof out), 0);
    snprintf(want, sizeof want, "%s/.hidden-1", dir);
    assert_string_equal(out, want);
    snprintf(q, sizeof q, "%s/a.b.db", dir); /* only the last extension */
    touch(q);
    assert_int_equal(pa_outname_unique(q, out, sizeof out), 0);
    snprintf(want, sizeof want, "%s/a.b-1.db", dir);
    assert_string_equal(out, want);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_unique_dot_in_directory(void **state)
{
    (void)state;
    char dir[] = "/tmp/pa.outname_XXXXXX", p[512];
    assert_non_null(mkdtemp(dir));
    snprintf(p, sizeof p, "%s/file", dir);
    touch(p);
    assert_int_equal(pa_outname_unique(p, out, sizeof out), 0);
    snprintf(want, sizeof want, "%s/file-1", dir);
    assert_string_equal(out, want);
    unlink(p);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pid_host_percent), cmocka_unit_test(test_env_var),
        cmocka_unit_test(test_unknown_placeholder_kept), cmocka_unit_test(test_too_long),
        cmocka_unit_test(test_unique_suffixes), cmocka_unit_test(test_unique_dot_in_directory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
