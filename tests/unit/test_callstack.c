/* test_callstack.c - call-stack group rules: parsing errors, ordered frame matching, group lists. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "pa_callstack.h"

/* root first: main -> libfoo LaunchKernel -> libbar helper -> loader */
static const pa_cs_frame_t k_foo[] = {
    {"/usr/bin/leaks", "main"},
    {"/opt/lib/libfoo.so", "foo_run"},
    {"/opt/lib/libfoo.so", "LaunchKernel(int, unsigned long)"},
    {"/opt/lib/libbar.so", "bar_alloc"},
    {"/usr/lib/libze_loader.so.1", "zeMemAllocDevice"},
};
static const pa_cs_frame_t k_bar[] = {
    {"/usr/bin/leaks", "main"},
    {"/opt/lib/libbar.so", "bar_alloc"},
};
static const pa_cs_frame_t k_py[] = {
    {"/usr/bin/python3.11", "main"},
    {"/w/loss.py", "compute_loss"},
    {"/usr/lib/libffi.so.8", "ffi_call"},
};

static pa_cs_rules_t *issue_rules(void)
{
    pa_cs_rules_t *rs = pa_cs_rules_new();
    assert_non_null(rs);
    assert_int_equal(pa_cs_rules_add(rs, "acompute=(libfoo|libbar)", NULL), 0);
    assert_int_equal(pa_cs_rules_add(rs, "launch_kernel=libfoo/LaunchKernel", NULL), 0);
    assert_int_equal(pa_cs_rules_add(rs, "loss=loss.py", NULL), 0);
    return rs;
}

static void test_all_groups_joined_in_rule_order(void **s)
{
    (void)s;
    pa_cs_rules_t *rs = issue_rules();
    char out[128];
    assert_int_equal(pa_cs_group_list(rs, k_foo, 5, 0, out, sizeof out), 2);
    assert_string_equal(out, "acompute/launch_kernel");
    assert_int_equal(pa_cs_group_list(rs, k_bar, 2, 0, out, sizeof out), 1);
    assert_string_equal(out, "acompute");
    assert_int_equal(pa_cs_group_list(rs, k_py, 3, 0, out, sizeof out), 1);
    assert_string_equal(out, "loss");
    pa_cs_rules_free(rs);
}

static void test_match_first_group(void **s)
{
    (void)s;
    pa_cs_rules_t *rs = issue_rules();
    char out[128];
    assert_int_equal(pa_cs_group_list(rs, k_foo, 5, 1, out, sizeof out), 1);
    assert_string_equal(out, "acompute");
    pa_cs_rules_free(rs);
}

static void test_order_parent_to_child(void **s)
{
    (void)s;
    pa_cs_rules_t *rs = pa_cs_rules_new();
    char out[64];
    /* each frame regex must match the previous one's frame or one below it (a child) */
    assert_int_equal(pa_cs_rules_add(rs, "rev=libbar/LaunchKernel", NULL), 0);
    assert_int_equal(pa_cs_rules_add(rs, "rev=libze_loader/libbar", NULL), 0);
    assert_int_equal(pa_cs_group_list(rs, k_foo, 5, 0, out, sizeof out), 0);
    assert_string_equal(out, "others");
    assert_int_equal(pa_cs_rules_add(rs, "same=LaunchKernel/libfoo", NULL), 0); /* one frame, both */
    assert_int_equal(pa_cs_group_list(rs, k_foo, 5, 0, out, sizeof out), 1);
    assert_string_equal(out, "same");
    assert_int_equal(pa_cs_rules_add(rs, "fwd=leaks/libbar", NULL), 0); /* frames between are allowed */
    assert_int_equal(pa_cs_group_list(rs, k_foo, 5, 0, out, sizeof out), 2);
    assert_string_equal(out, "same/fwd");
    pa_cs_rules_free(rs);
}

static void test_same_name_merges(void **s)
{
    (void)s;
    pa_cs_rules_t *rs = pa_cs_rules_new();
    char out[64];
    assert_int_equal(pa_cs_rules_add(rs, "g=nomatch", NULL), 0);
    assert_int_equal(pa_cs_rules_add(rs, "h=libbar", NULL), 0);
    assert_int_equal(pa_cs_rules_add(rs, "g=loss", NULL), 0);
    assert_int_equal(pa_cs_group_list(rs, k_py, 3, 0, out, sizeof out), 1);
    assert_string_equal(out, "g");
    /* g listed before h: order of first appearance of the name */
    assert_int_equal(pa_cs_rules_add(rs, "g=libbar", NULL), 0);
    assert_int_equal(pa_cs_group_list(rs, k_bar, 2, 0, out, sizeof out), 2);
    assert_string_equal(out, "g/h");
    pa_cs_rules_free(rs);
}

static void test_malformed_rules_named(void **s)
{
    (void)s;
    pa_cs_rules_t *rs = pa_cs_rules_new();
    char *buf = NULL; size_t sz = 0;
    FILE *err = open_memstream(&buf, &sz);
    assert_int_equal(pa_cs_rules_add(rs, "=x", err), -1);
    assert_int_equal(pa_cs_rules_add(rs, "name=", err), -1);
    assert_int_equal(pa_cs_rules_add(rs, "bad=(unclosed", err), -1);
    assert_int_equal(pa_cs_rules_add(rs, "noequal", err), -1);
    assert_int_equal(pa_cs_rules_add(rs, "a=x//y", err), -1);
    fclose(err);
    assert_non_null(strstr(buf, "\"=x\" ignored: empty group name"));
    assert_non_null(strstr(buf, "\"name=\" ignored: no frame regex"));
    assert_non_null(strstr(buf, "\"bad=(unclosed\" ignored: invalid regex \"(unclosed\" at offset 9"));
    assert_non_null(strstr(buf, "\"noequal\" ignored: missing '='"));
    assert_non_null(strstr(buf, "\"a=x//y\" ignored: empty frame regex"));
    assert_int_equal(pa_cs_rules_count(rs), 0);
    free(buf);
    pa_cs_rules_free(rs);
}

static void test_list_separators_keep_valid(void **s)
{
    (void)s;
    pa_cs_rules_t *rs = pa_cs_rules_new();
    char out[64];
    int bad = pa_cs_rules_add_list(rs, "a=libfoo; =x\n b=libbar ;name=;", NULL);
    assert_int_equal(bad, 2);
    assert_int_equal(pa_cs_rules_count(rs), 2);
    assert_int_equal(pa_cs_group_list(rs, k_foo, 5, 0, out, sizeof out), 2);
    assert_string_equal(out, "a/b");
    pa_cs_rules_free(rs);
}

static void test_defaults(void **s)
{
    (void)s;
    pa_cs_rules_t *rs = pa_cs_rules_new();
    char out[64];
    pa_cs_rules_add_defaults(rs, "/usr/bin/leaks");
    assert_int_equal(pa_cs_rules_count(rs), 4);
    assert_int_equal(pa_cs_group_list(rs, k_bar, 2, 0, out, sizeof out), 1);
    assert_string_equal(out, "application");
    assert_int_equal(pa_cs_group_list(rs, k_py, 3, 0, out, sizeof out), 1);
    assert_string_equal(out, "python");
    pa_cs_rules_free(rs);
}

/* qa6 defect 7: frame regexes see the library's file name, not its folders */
static void test_module_basename(void **s)
{
    (void)s;
    pa_cs_rules_t *rs = pa_cs_rules_new();
    assert_int_equal(pa_cs_rules_add(rs, "a=opt", NULL), 0);      /* only in the folder /opt/lib */
    assert_int_equal(pa_cs_rules_add(rs, "b=^libbar", NULL), 0);  /* anchored at the file name */
    char out[128];
    assert_int_equal(pa_cs_group_list(rs, k_bar, 2, 0, out, sizeof out), 1);
    assert_string_equal(out, "b");
    pa_cs_rules_free(rs);
}

/* qa6 defect 7: "\/" is a literal '/' inside one frame regex, not a frame separator */
static void test_escaped_slash(void **s)
{
    (void)s;
    static const pa_cs_frame_t fr[] = {{"/bin/app", "main"}, {"/lib/libx.so", "operator/(int, int)"}};
    pa_cs_rules_t *rs = pa_cs_rules_new();
    assert_int_equal(pa_cs_rules_add(rs, "div=main/operator\\/", NULL), 0);
    assert_int_equal(pa_cs_rules_add(rs, "nodiv=operator\\/\\(char", NULL), 0);
    char out[128];
    assert_int_equal(pa_cs_group_list(rs, fr, 2, 0, out, sizeof out), 1);
    assert_string_equal(out, "div");
    pa_cs_rules_free(rs);
}

/* qa6 defect 8: a group name with '/' is rejected by name; blanks around names and frame
 * regexes are trimmed */
static void test_name_slash_and_blanks(void **s)
{
    (void)s;
    pa_cs_rules_t *rs = pa_cs_rules_new();
    char *msg = NULL;
    size_t len = 0;
    FILE *err = open_memstream(&msg, &len);
    assert_int_equal(pa_cs_rules_add(rs, "a/b=libfoo", err), -1);
    assert_int_equal(pa_cs_rules_add(rs, "  sp  =  libbar / bar_alloc  ", err), 0);
    assert_int_equal(pa_cs_rules_add(rs, "  =libbar", err), -1);
    fclose(err);
    assert_non_null(strstr(msg, "rule \"a/b=libfoo\" ignored: group name contains '/'"));
    assert_non_null(strstr(msg, "rule \"  =libbar\" ignored: empty group name"));
    free(msg);
    char out[128];
    assert_int_equal(pa_cs_group_list(rs, k_bar, 2, 0, out, sizeof out), 1);
    assert_string_equal(out, "sp");
    pa_cs_rules_free(rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_groups_joined_in_rule_order),
        cmocka_unit_test(test_match_first_group),
        cmocka_unit_test(test_order_parent_to_child),
        cmocka_unit_test(test_same_name_merges),
        cmocka_unit_test(test_malformed_rules_named),
        cmocka_unit_test(test_list_separators_keep_valid),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_module_basename),
        cmocka_unit_test(test_escaped_slash),
        cmocka_unit_test(test_name_slash_and_blanks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
