/* test_pcs_table.c - the IP -> kernel index and the per-instruction counts (common/pa_pcs.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pa_pcs.h"

static long add(pa_pcs_table_t *t, uint64_t id, uint32_t dev, uint32_t base, uint32_t size, const char *name)
{
    pa_pcs_kernel_t k = {.id = id, .device = dev, .base = base, .size = size, .name_len = (uint32_t)strlen(name)};
    return pa_pcs_table_add_kernel(t, &k, name, NULL, NULL);
}

/* ranges: [base, base+size) capped by the next kernel's base on the same device */
static void lookup_ranges(void **state)
{
    (void)state;
    pa_pcs_table_t t;
    pa_pcs_table_init(&t, 0);
    assert_int_equal(add(&t, 1, 0, 0x2000, 0x1000, "b"), 0);
    assert_int_equal(add(&t, 2, 0, 0x1000, 0x10000, "a"), 1); /* binary size covers b: capped at 0x2000 */
    assert_int_equal(add(&t, 3, 1, 0x1000, 0x100, "c"), 2);
    assert_int_equal(pa_pcs_table_lookup(&t, 0, 0x0fff), -1);
    assert_int_equal(pa_pcs_table_lookup(&t, 0, 0x1000), 1);
    assert_int_equal(pa_pcs_table_lookup(&t, 0, 0x1fff), 1);
    assert_int_equal(pa_pcs_table_lookup(&t, 0, 0x2000), 0);
    assert_int_equal(pa_pcs_table_lookup(&t, 0, 0x2fff), 0);
    assert_int_equal(pa_pcs_table_lookup(&t, 0, 0x3000), -1);
    assert_int_equal(pa_pcs_table_lookup(&t, 1, 0x10ff), 2);
    assert_int_equal(pa_pcs_table_lookup(&t, 1, 0x1100), -1);
    assert_int_equal(pa_pcs_table_lookup(&t, 2, 0x1000), -1);
    /* memory reused after zeKernelDestroy: the newer kernel at the same base wins */
    assert_int_equal(add(&t, 4, 0, 0x2000, 0x800, "b2"), 3);
    assert_int_equal(pa_pcs_table_lookup(&t, 0, 0x2004), 3);
    pa_pcs_table_free(&t);
}

static void counts_and_bounds(void **state)
{
    (void)state;
    pa_pcs_table_t t;
    pa_pcs_table_init(&t, 2); /* two rows at most */
    add(&t, 1, 0, 0x1000, 0x100, "k");
    uint32_t e[4][4] = {{0x1000, 1, 2, 3}, {0x1010, 4, 0, 0}, {0x1020, 1, 1, 1}, {0x9000, 5, 0, 0}};
    pa_pcs_table_add_samples(&t, 0, 3, &e[0][0], 4);
    pa_pcs_table_add_samples(&t, 0, 3, &e[0][0], 1);
    assert_int_equal(t.nrows, 2);
    assert_int_equal(t.rows[0].offset, 0);
    assert_int_equal(t.rows[0].counts[0], 2);
    assert_int_equal(t.rows[0].counts[2], 6);
    assert_int_equal(t.rows[1].offset, 0x10);
    assert_int_equal(t.dev[0].samples, 6 + 4 + 3 + 5 + 6);
    assert_int_equal(t.dev[0].overflow, 3);  /* the third instruction: over the row budget */
    assert_int_equal(t.dev[0].unmapped, 5);
    assert_int_equal(t.dev[0].pcs, 3);       /* two rows + one distinct unmapped IP */
    assert_int_equal(t.kernels[0].samples, 6 + 4 + 6);
    pa_pcs_table_free(&t);
}

/* consecutive entries in one kernel reuse its range; a newer kernel at the same base takes over */
static void reused_base(void **state)
{
    (void)state;
    pa_pcs_table_t t;
    pa_pcs_table_init(&t, 0);
    add(&t, 1, 0, 0x1000, 0x100, "old");
    uint32_t e[3][2] = {{0x1000, 1}, {0x1010, 1}, {0x1020, 1}};
    pa_pcs_table_add_samples(&t, 0, 1, &e[0][0], 3);
    add(&t, 2, 0, 0x1000, 0x100, "new");
    pa_pcs_table_add_samples(&t, 0, 1, &e[0][0], 3);
    assert_int_equal(t.kernels[0].samples, 3);
    assert_int_equal(t.kernels[1].samples, 3);
    pa_pcs_table_free(&t);
}

static void payload_and_lines(void **state)
{
    (void)state;
    const char *files[2] = {"a.cl", "b.h"};
    pa_pcs_line_t lines[3] = {{0, 3, 0}, {0x20, 7, 1}, {0x40, 0, 0}};
    pa_pcs_kernel_t k = {.id = 9, .device = 1, .base = 0x4000, .size = 0x80, .name_len = 3, .nfiles = 2, .nlines = 3};
    size_t need = pa_pcs_kernel_payload(&k, "foo", files, lines, NULL, 0);
    uint8_t *buf = malloc(need);
    assert_int_equal(pa_pcs_kernel_payload(&k, "foo", files, lines, buf, need), need);
    pa_pcs_table_t t;
    pa_pcs_table_init(&t, 0);
    assert_int_equal(pa_pcs_table_add_kernel_payload(&t, buf, need), 0);
    /* a truncated payload keeps the whole lines */
    assert_int_equal(pa_pcs_table_add_kernel_payload(&t, buf, need - sizeof(pa_pcs_line_t)), 1);
    const pa_pcs_kinfo_t *ki = &t.kernels[0];
    assert_string_equal(ki->name, "foo");
    assert_int_equal(ki->id, 9);
    const char *f;
    assert_int_equal(pa_pcs_kernel_line(ki, 0x10, &f), 3);
    assert_string_equal(f, "a.cl");
    assert_int_equal(pa_pcs_kernel_line(ki, 0x20, &f), 7);
    assert_string_equal(f, "b.h");
    assert_int_equal(pa_pcs_kernel_line(ki, 0x50, &f), 0); /* DWARF line 0: no source */
    assert_null(f);
    assert_int_equal(t.kernels[1].nlines, 2);
    pa_pcs_table_free(&t);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lookup_ranges),
        cmocka_unit_test(counts_and_bounds),
        cmocka_unit_test(reused_base),
        cmocka_unit_test(payload_and_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
