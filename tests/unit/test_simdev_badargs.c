/* test_simdev_badargs.c - invalid calls get their documented error, never a crash; run plain and
 * with libprofagent.so preloaded (the agent's prologues must let the driver answer): qa3 #4, #6, #7. */
#include "test_simdev_util.h"

static const char *const k_names[] = {"busy_ns", "fill_u32"};

static ze_command_list_handle_t regular_list(ze_device_handle_t dev, uint32_t ordinal)
{
    ze_command_list_desc_t ld = {ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, NULL, ordinal, 0};
    ze_command_list_handle_t l = NULL;
    ZE_OK(zeCommandListCreate(g_ctx, dev, &ld, &l));
    return l;
}

static ze_command_queue_handle_t queue_on(ze_device_handle_t dev, uint32_t ordinal)
{
    ze_command_queue_desc_t qd = {ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, NULL, ordinal, 0, 0,
                                  ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    ze_command_queue_handle_t q = NULL;
    ZE_OK(zeCommandQueueCreate(g_ctx, dev, &qd, &q));
    return q;
}

/* Defect 4: NULL arrays reach the driver's check instead of crashing the agent's prologue. */
static void test_null_arrays(void **state)
{
    (void)state;
    ze_command_queue_handle_t q = queue_on(g_dev[0], 0);
    ze_command_list_handle_t il = imm_list(g_dev[0], 0, 0);
    assert_int_equal(zeCommandQueueExecuteCommandLists(q, 1, NULL, NULL), ZE_RESULT_ERROR_INVALID_NULL_POINTER);
    uint32_t count = 1;
    ze_group_count_t g = {1, 1, 1};
    assert_int_equal(zeCommandListAppendLaunchMultipleKernelsIndirect(il, 1, NULL, &count, &g, NULL, 0, NULL),
                     ZE_RESULT_ERROR_INVALID_NULL_POINTER);
    ZE_OK(zeCommandListDestroy(il));
    ZE_OK(zeCommandQueueDestroy(q));
}

/* Defect 6: enumerations, list/queue type, copy-only lists, devices of modules, unset arguments. */
static void test_invalid_calls(void **state)
{
    (void)state;
    ze_command_queue_desc_t qd = {ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, NULL, 0, 0, 0,
                                  (ze_command_queue_mode_t)77, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    ze_command_queue_handle_t qbad = NULL;
    ze_command_list_handle_t lbad = NULL;
    assert_int_equal(zeCommandQueueCreate(g_ctx, g_dev[0], &qd, &qbad), ZE_RESULT_ERROR_INVALID_ENUMERATION);
    assert_int_equal(zeCommandListCreateImmediate(g_ctx, g_dev[0], &qd, &lbad), ZE_RESULT_ERROR_INVALID_ENUMERATION);

    uint32_t *buf = dev_alloc(g_dev[0], 64);
    ze_command_list_handle_t l0 = regular_list(g_dev[0], 0);
    ZE_OK(zeCommandListAppendMemoryFill(l0, buf, "q", 1, 64, NULL, 0, NULL));
    ZE_OK(zeCommandListClose(l0));
    ze_command_queue_handle_t qcopy = queue_on(g_dev[0], SIMDEV_ORDINAL_COPY), qdev1 = queue_on(g_dev[1], 0);
    assert_int_equal(zeCommandQueueExecuteCommandLists(qcopy, 1, &l0, NULL), ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE);
    assert_int_equal(zeCommandQueueExecuteCommandLists(qdev1, 1, &l0, NULL), ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE);

    ze_module_handle_t m0 = module_spirv(g_dev[0], k_names, 2), m1 = module_spirv(g_dev[1], k_names, 2);
    ze_kernel_handle_t k0 = kernel(m0, "busy_ns"), k1 = kernel(m1, "busy_ns"), kunset = kernel(m0, "fill_u32");
    uint64_t ns = 1000;
    ZE_OK(zeKernelSetArgumentValue(k0, 0, 8, &ns));
    ZE_OK(zeKernelSetArgumentValue(k1, 0, 8, &ns));
    ze_group_count_t g = {1, 1, 1};
    ze_command_list_handle_t lcopy = regular_list(g_dev[0], SIMDEV_ORDINAL_COPY), lk = regular_list(g_dev[0], 0);
    assert_int_equal(zeCommandListAppendLaunchKernel(lcopy, k0, &g, NULL, 0, NULL), ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE);
    assert_int_equal(zeCommandListAppendLaunchKernel(lk, k1, &g, NULL, 0, NULL), ZE_RESULT_ERROR_INVALID_ARGUMENT);
    assert_int_equal(zeCommandListAppendLaunchKernel(lk, kunset, &g, NULL, 0, NULL), ZE_RESULT_ERROR_INVALID_ARGUMENT);
    ZE_OK(zeCommandListAppendLaunchKernel(lk, k0, &g, NULL, 0, NULL));

    /* fill pattern: maxMemoryFillPatternSize is what AppendMemoryFill accepts (256 bytes) */
    ze_command_queue_group_properties_t gp[2] = {{.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES},
                                                 {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES}};
    uint32_t ng = 2;
    ZE_OK(zeDeviceGetCommandQueueGroupProperties(g_dev[0], &ng, gp));
    assert_int_equal(gp[0].maxMemoryFillPatternSize, 256);
    assert_int_equal(gp[1].maxMemoryFillPatternSize, 256);
    uint8_t pat[512] = {0};
    uint8_t *big = dev_alloc(g_dev[0], 4096);
    ZE_OK(zeCommandListAppendMemoryFill(lcopy, big, pat, 256, 4096, NULL, 0, NULL));
    assert_int_equal(zeCommandListAppendMemoryFill(lcopy, big, pat, 512, 4096, NULL, 0, NULL), ZE_RESULT_ERROR_INVALID_SIZE);

    /* zeMemFree through another context */
    ze_context_handle_t c2 = NULL;
    ze_context_desc_t cd = {ZE_STRUCTURE_TYPE_CONTEXT_DESC, NULL, 0};
    ZE_OK(zeContextCreate(g_drv, &cd, &c2));
    assert_int_equal(zeMemFree(c2, buf), ZE_RESULT_ERROR_INVALID_ARGUMENT);
    ZE_OK(zeMemFree(g_ctx, buf));

    /* NULL handle reported before NULL pointer */
    assert_int_equal(zeCommandListAppendMemoryCopy(NULL, NULL, NULL, 8, NULL, 0, NULL), ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    assert_int_equal(zeCommandListAppendLaunchKernel(lk, NULL, NULL, NULL, 0, NULL), ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    assert_int_equal(zeCommandListCreate(NULL, g_dev[0], NULL, NULL), ZE_RESULT_ERROR_INVALID_NULL_HANDLE);

    ZE_OK(zeCommandListDestroy(lcopy));
    ZE_OK(zeCommandListDestroy(lk));
    ZE_OK(zeCommandListDestroy(l0));
    ZE_OK(zeCommandQueueDestroy(qcopy));
    ZE_OK(zeCommandQueueDestroy(qdev1));
    ZE_OK(zeMemFree(g_ctx, big));
    ZE_OK(zeContextDestroy(c2));
    ZE_OK(zeKernelDestroy(k0));
    ZE_OK(zeKernelDestroy(k1));
    ZE_OK(zeKernelDestroy(kunset));
    ZE_OK(zeModuleDestroy(m0));
    ZE_OK(zeModuleDestroy(m1));
}

/* Defect 7: the pre-1.2 timerResolution (ns per tick) is >= 1 at the highest accepted rate, and
 * SIMDEV_TIMER_HZ above 1 GHz is refused (this test runs with SIMDEV_TIMER_HZ=3000000000). */
static void test_timer_resolution(void **state)
{
    (void)state;
    ze_device_properties_t old = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
    ze_device_properties_t p12 = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2};
    ZE_OK(zeDeviceGetProperties(g_dev[0], &old));
    ZE_OK(zeDeviceGetProperties(g_dev[0], &p12));
    const char *hz = getenv("SIMDEV_TIMER_HZ");
    if (hz && strcmp(hz, "3000000000") == 0)
        assert_int_equal(p12.timerResolution, 19200000); /* refused: default kept */
    assert_true(old.timerResolution >= 1);
    assert_int_equal(old.timerResolution, (1000000000ull + p12.timerResolution / 2) / p12.timerResolution);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_null_arrays),
        cmocka_unit_test(test_invalid_calls),
        cmocka_unit_test(test_timer_resolution),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
