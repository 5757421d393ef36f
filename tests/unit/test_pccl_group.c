/* test_pccl_group.c - communications of collective kernels (docs/collectives.md): the overlap run
 * rule with one execution per (process, device), and the default collective-kernel pattern on
 * oneCCL's kernel names (src/kernels/kernels.cl) and on kernels that are no collectives. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "writer_internal.h"
#include "writer_pccl.h"

#define X(s, e, p, d) {(s), (e), (p), (d), 0, (e) - (s), 0}

static void test_two_devices_back_to_back(void **state)
{
    (void)state;
    /* device 1 late each time; device 0's next kernel starts before device 1's previous ends */
    pa_pccl_exec_t v[] = {X(0, 100, 1, 0), X(60, 101, 1, 1), X(100, 200, 1, 0), X(150, 201, 1, 1), X(99, 99, 1, 2)};
    /* sorted by start: 0, 60, 99(dev 2, empty), 100, 150 */
    pa_pccl_exec_t s[] = {v[0], v[1], v[4], v[2], v[3]};
    size_t first[6];
    size_t ng = pa_pccl_group(s, 5, first);
    assert_int_equal(ng, 2);
    assert_int_equal(first[0], 0);
    assert_int_equal(first[1], 3); /* 0, 60 and the empty one at 99 (< latest end 101) */
    assert_int_equal(first[2], 5);
}

static void test_device_repeat_splits(void **state)
{
    (void)state;
    /* an overlapping kernel of a device already in the run starts the next communication */
    pa_pccl_exec_t s[] = {X(0, 500, 7, 0), X(10, 20, 7, 0), X(15, 30, 8, 0)};
    size_t first[4];
    assert_int_equal(pa_pccl_group(s, 3, first), 2);
    assert_int_equal(first[1], 1);
    /* same device id in another process is another participant (DBs of several processes) */
    pa_pccl_exec_t t[] = {X(0, 50, 7, 0), X(10, 60, 8, 0), X(70, 80, 7, 0)};
    assert_int_equal(pa_pccl_group(t, 3, first), 2);
    assert_int_equal(first[1], 2);
}

static void test_touching_is_not_overlap(void **state)
{
    (void)state;
    pa_pccl_exec_t s[] = {X(0, 10, 1, 0), X(10, 20, 1, 1)};
    size_t first[3];
    assert_int_equal(pa_pccl_group(s, 2, first), 2);
    assert_int_equal(pa_pccl_group(s, 0, first), 0);
    assert_int_equal(first[0], 0);
}

static int matches(sqlite3 *db, const char *name)
{
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT ?1 REGEXP ?2", -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, PA_PCCL_DEFAULT_RE, -1, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int m = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return m;
}

static void test_default_pattern(void **state)
{
    (void)state;
    sqlite3 *db;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(pa_sqlfn_register(db), 0);
    const char *yes[] = {"allreduce_sum_f32", "allreduce_kernel_bfloat16_sum", "alltoallv_kernel_2_int8_custom",
                         "reduce_local_inplace_kernel_float32_sum", "reduce_local_outofplace_kernel_uint8_max",
                         "reduce_single_local_inplace_kernel_float16_prod", "reduce_monolithic_kernel_3_int32_sum",
                         "write_monolithic_kernel_1_float32_custom", "read_write_monolithic_kernel_4_int64_custom",
                         "ring_allreduce", "AllReduce_large", "void ccl::v1::allreduce_large_impl<float>(...)"};
    const char *no[] = {"vector_add", "gemm_f32", "reduce_sum_f32", "busy_ns", "my_allreduce", "empty_kernel",
                        "saxpy"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        if (!matches(db, yes[i]))
            fail_msg("default pattern misses collective kernel %s", yes[i]);
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        if (matches(db, no[i]))
            fail_msg("default pattern takes %s for a collective", no[i]);
    sqlite3_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_devices_back_to_back),
        cmocka_unit_test(test_device_repeat_splits),
        cmocka_unit_test(test_touching_is_not_overlap),
        cmocka_unit_test(test_default_pattern),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
