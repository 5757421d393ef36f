/* test_rank.c - rank detection over the launcher table: each variable, precedence, bad values, %r. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pa_outname.h"
#include "pa_rank.h"

/* A fake environment: NAME=VALUE pairs. */
static const char *fake[16][2];
static int nfake, nwarn;
static char last_warn[512];

static const char *fake_get(const char *name)
{
    for (int i = 0; i < nfake; i++)
        if (strcmp(fake[i][0], name) == 0)
            return fake[i][1];
    return NULL;
}
static void fake_set(const char *name, const char *value)
{
    fake[nfake][0] = name;
    fake[nfake++][1] = value;
}
static void count_warn(const char *msg, void *ctx)
{
    (void)ctx;
    nwarn++;
    snprintf(last_warn, sizeof last_warn, "%s", msg);
}
static long detect(pa_rank_info_t *ri)
{
    nwarn = 0;
    last_warn[0] = '\0';
    return pa_rank_detect(fake_get, count_warn, NULL, ri);
}

/* Every documented variable alone gives its rank (RANK with WORLD_SIZE). */
static void test_each_variable(void **state)
{
    (void)state;
    static const char *const expected[] = {"PROFAGENT_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
        "MV2_COMM_WORLD_RANK", "PALS_RANKID", "ALPS_APP_PE", "FLUX_TASK_RANK", "JSM_NAMESPACE_RANK",
        "SLURM_PROCID", "RANK", NULL};
    int n = 0;
    for (const pa_rank_var_t *v = pa_rank_vars; v->var; v++, n++) {
        assert_non_null(expected[n]);
        assert_string_equal(v->var, expected[n]); /* the documented precedence order */
        pa_rank_info_t ri;
        char val[16];
        snprintf(val, sizeof val, "%d", 3 + n);
        nfake = 0;
        fake_set(v->var, val);
        if (v->needs)
            fake_set(v->needs, "64");
        assert_int_equal(detect(&ri), 3 + n);
        assert_string_equal(ri.var, v->var);
        assert_non_null(ri.launcher);
        assert_int_equal(nwarn, 0);
    }
    assert_null(expected[n]);
}

static void test_precedence(void **state)
{
    (void)state;
    pa_rank_info_t ri;
    nfake = 0; /* mpirun inside a Slurm allocation: every rank inherits SLURM_PROCID=0 */
    fake_set("SLURM_PROCID", "0");
    fake_set("OMPI_COMM_WORLD_RANK", "5");
    assert_int_equal(detect(&ri), 5);
    assert_string_equal(ri.var, "OMPI_COMM_WORLD_RANK");
    nfake = 0;
    fake_set("PMI_RANK", "2");
    fake_set("PMIX_RANK", "4");
    assert_int_equal(detect(&ri), 4);
    fake_set("PROFAGENT_RANK", "9");
    assert_int_equal(detect(&ri), 9);
    assert_string_equal(ri.var, "PROFAGENT_RANK");
    nfake = 0; /* RANK alone is too generic a name */
    fake_set("RANK", "3");
    assert_int_equal(detect(&ri), -1);
    assert_null(ri.var);
    assert_int_equal(nwarn, 0);
    nfake = 0;
    assert_int_equal(detect(&ri), -1);
    assert_int_equal(nwarn, 0);
}

/* A bad value: one warning naming variable and value, then the next variable counts. */
static void test_bad_values(void **state)
{
    (void)state;
    static const char *const bad[] = {"abc", "-1", "2147483648", "99999999999999999999999", "1a", " 1", "+1", "0x10",
                                      "1.5", NULL};
    for (int i = 0; bad[i]; i++) {
        pa_rank_info_t ri;
        nfake = 0;
        fake_set("PMI_RANK", bad[i]);
        assert_int_equal(detect(&ri), -1);
        assert_int_equal(nwarn, 1);
        assert_non_null(strstr(last_warn, "PMI_RANK"));
        assert_non_null(strstr(last_warn, "0..2147483647"));
        fake_set("SLURM_PROCID", "6");
        assert_int_equal(detect(&ri), 6);
        assert_int_equal(nwarn, 1);
        assert_string_equal(ri.var, "SLURM_PROCID");
    }
    pa_rank_info_t ri;
    nfake = 0; /* the whole line: one pair of parentheses around the launcher */
    fake_set("PROFAGENT_RANK", "abc");
    assert_int_equal(detect(&ri), -1);
    assert_string_equal(last_warn, "PROFAGENT_RANK=\"abc\" (profagent, set by hand or by a wrapper script) is not a "
                                   "rank: accepted a decimal number 0..2147483647; ignored, the next launcher variable "
                                   "is tried");
    nfake = 0; /* the largest and the smallest accepted; empty = unset, silently */
    fake_set("OMPI_COMM_WORLD_RANK", "2147483647");
    assert_int_equal(detect(&ri), 2147483647L);
    nfake = 0;
    fake_set("OMPI_COMM_WORLD_RANK", "");
    fake_set("PMI_RANK", "0");
    assert_int_equal(detect(&ri), 0);
    assert_int_equal(nwarn, 0);
}

/* %r and the default name in this process (real environment, detected once). */
static void test_outname_rank(void **state)
{
    (void)state;
    char out[256];
    setenv("PMI_RANK", "12", 1);
    assert_int_equal(pa_rank_self()->rank, 12);
    assert_int_equal(pa_outname_expand("run-%r.db", out, sizeof out), 0);
    assert_string_equal(out, "run-12.db");
    assert_string_equal(pa_outname_default(), PA_OUTNAME_DEFAULT_RANK);
    assert_non_null(strstr(PA_OUTNAME_DEFAULT_RANK, "%r"));
    setenv("PMI_RANK", "13", 1); /* detected once: a later change is not seen */
    assert_int_equal(pa_rank_self()->rank, 12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_variable),
        cmocka_unit_test(test_precedence),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_outname_rank),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
