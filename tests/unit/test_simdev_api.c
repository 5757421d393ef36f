/* test_simdev_api.c - simdev API semantics: memory, modules, regular lists, fences, copies, events. */
#include "test_simdev_util.h"

#include <level_zero/zes_api.h>

static void *shared_on(ze_device_handle_t dev, size_t bytes) { return dev_alloc(dev, bytes); }

static void test_memory(void **state)
{
    (void)state;
    ze_device_mem_alloc_desc_t dd = {ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, NULL, 0, 0};
    ze_host_mem_alloc_desc_t hd = {ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, NULL, 0};
    void *d = NULL, *h = NULL, *big = NULL;
    ZE_OK(zeMemAllocDevice(g_ctx, &dd, 4096, 0, g_dev[1], &d));
    ZE_OK(zeMemAllocHost(g_ctx, &hd, 100, 0, &h));
    ze_memory_allocation_properties_t p = {.stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES};
    ze_device_handle_t owner = NULL;
    ZE_OK(zeMemGetAllocProperties(g_ctx, (char *)d + 100, &p, &owner));
    assert_int_equal(p.type, ZE_MEMORY_TYPE_DEVICE);
    assert_ptr_equal(owner, g_dev[1]);
    ZE_OK(zeMemGetAllocProperties(g_ctx, h, &p, &owner));
    assert_int_equal(p.type, ZE_MEMORY_TYPE_HOST);
    int local;
    ZE_OK(zeMemGetAllocProperties(g_ctx, &local, &p, NULL));
    assert_int_equal(p.type, ZE_MEMORY_TYPE_UNKNOWN);
    void *base = NULL;
    size_t size = 0;
    ZE_OK(zeMemGetAddressRange(g_ctx, (char *)d + 4095, &base, &size));
    assert_ptr_equal(base, d);
    assert_int_equal(size, 4096);
    /* 8192 MiB per device: 9 GiB cannot fit, and nothing is reserved by the failure. */
    assert_int_equal(zeMemAllocDevice(g_ctx, &dd, 9ull << 30, 0, g_dev[0], &big),
                     ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY);
    assert_int_equal(zeMemFree(g_ctx, (char *)d + 1), ZE_RESULT_ERROR_INVALID_ARGUMENT);
    ZE_OK(zeMemFree(g_ctx, d));
    assert_int_equal(zeMemFree(g_ctx, d), ZE_RESULT_ERROR_INVALID_ARGUMENT);
    ZE_OK(zeMemFree(g_ctx, h));
}

static void test_native_module(void **state)
{
    (void)state;
    const char *text = "SIMDEV-MODULE 1\n# test\nkernel my_fill builtin=fill_u32\n"
                       "kernel _ZN2ns5saxpyEfPKfPfj\nkernel slow base_ns=3000000 ns_per_item=0\n";
    ze_module_desc_t md = {ZE_STRUCTURE_TYPE_MODULE_DESC, NULL, ZE_MODULE_FORMAT_NATIVE, strlen(text),
                           (const uint8_t *)text, "", NULL};
    ze_module_handle_t m = NULL;
    ZE_OK(zeModuleCreate(g_ctx, g_dev[0], &md, &m, NULL));
    ze_kernel_handle_t kf = kernel(m, "my_fill"), ks = kernel(m, "_ZN2ns5saxpyEfPKfPfj"),
                       kslow = kernel(m, "slow");
    ze_kernel_properties_t kp = {.stype = ZE_STRUCTURE_TYPE_KERNEL_PROPERTIES};
    ZE_OK(zeKernelGetProperties(ks, &kp));
    assert_int_equal(kp.numKernelArgs, 4);
    uint32_t *buf = shared_on(g_dev[0], 64 * 4);
    float *x = shared_on(g_dev[0], 64 * 4), *y = shared_on(g_dev[0], 64 * 4);
    uint32_t v = 7, n = 64;
    float alpha = 2.0f;
    for (int i = 0; i < 64; i++) {
        x[i] = (float)i;
        y[i] = 1.0f;
    }
    ZE_OK(zeKernelSetArgumentValue(kf, 0, sizeof buf, &buf));
    ZE_OK(zeKernelSetArgumentValue(kf, 1, 4, &v));
    ZE_OK(zeKernelSetArgumentValue(kf, 2, 4, &n));
    assert_int_equal(zeKernelSetArgumentValue(kf, 2, 8, &n), ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE);
    ZE_OK(zeKernelSetArgumentValue(ks, 0, 4, &alpha));
    ZE_OK(zeKernelSetArgumentValue(ks, 1, 8, &x));
    ZE_OK(zeKernelSetArgumentValue(ks, 2, 8, &y));
    ZE_OK(zeKernelSetArgumentValue(ks, 3, 4, &n));
    ze_command_list_handle_t l = imm_list(g_dev[0], 0, 0);
    ze_event_pool_handle_t pool = ts_pool(1);
    ze_event_handle_t ev = event_at(pool, 0);
    ze_group_count_t g = {64, 1, 1};
    ZE_OK(zeCommandListAppendLaunchKernel(l, kf, &g, NULL, 0, NULL));
    ZE_OK(zeCommandListAppendLaunchKernel(l, ks, &g, NULL, 0, NULL));
    ZE_OK(zeCommandListAppendLaunchKernel(l, kslow, &g, ev, 0, NULL));
    ZE_OK(zeEventHostSynchronize(ev, UINT64_MAX));
    assert_int_equal(buf[63], 7);
    assert_true(y[10] == 21.0f);
    ze_kernel_timestamp_result_t ts;
    ZE_OK(zeEventQueryKernelTimestamp(ev, &ts));
    uint32_t bits;
    uint64_t hz = timer_hz(g_dev[0], &bits);
    assert_in_range(ticks_to_ns(ts.global.kernelStart, ts.global.kernelEnd, bits, hz), 2900000, 3100000);
    /* Bad header and bad line: clear codes, reason in the build log. */
    ze_module_build_log_handle_t log = NULL;
    md.pInputModule = (const uint8_t *)"SIMDEV-MODULE 2\n";
    md.inputSize = 16;
    ze_module_handle_t m2 = NULL;
    assert_int_equal(zeModuleCreate(g_ctx, g_dev[0], &md, &m2, NULL), ZE_RESULT_ERROR_INVALID_NATIVE_BINARY);
    const char *bad = "SIMDEV-MODULE 1\nkernel k colour=red\n";
    md.pInputModule = (const uint8_t *)bad;
    md.inputSize = strlen(bad);
    assert_int_equal(zeModuleCreate(g_ctx, g_dev[0], &md, &m2, &log), ZE_RESULT_ERROR_MODULE_BUILD_FAILURE);
    char msg[256];
    size_t ms = sizeof msg;
    ZE_OK(zeModuleBuildLogGetString(log, &ms, msg));
    assert_non_null(strstr(msg, "line 2"));
    assert_non_null(strstr(msg, "colour"));
    zeModuleBuildLogDestroy(log);
    uint32_t junk[5] = {0x12345678u, 0, 0, 0, 0};
    ze_module_desc_t sd = {ZE_STRUCTURE_TYPE_MODULE_DESC, NULL, ZE_MODULE_FORMAT_IL_SPIRV, sizeof junk,
                           (const uint8_t *)junk, "", NULL};
    assert_int_equal(zeModuleCreate(g_ctx, g_dev[0], &sd, &m2, NULL), ZE_RESULT_ERROR_INVALID_NATIVE_BINARY);
    zeEventDestroy(ev);
    zeEventPoolDestroy(pool);
    zeCommandListDestroy(l);
    zeKernelDestroy(kf);
    zeKernelDestroy(ks);
    zeKernelDestroy(kslow);
    zeModuleDestroy(m);
    ZE_OK(zeMemFree(g_ctx, buf));
    ZE_OK(zeMemFree(g_ctx, x));
    ZE_OK(zeMemFree(g_ctx, y));
}

/* A regular list with 2 kernels executed 3 times: each execution gives new, later timestamps. */
static void test_regular_list_fence(void **state)
{
    (void)state;
    const char *names[] = {"busy_ns"};
    ze_module_handle_t m = module_spirv(g_dev[0], names, 1);
    ze_kernel_handle_t k = kernel(m, "busy_ns");
    ze_command_list_desc_t ld = {ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, NULL, 0, 0};
    ze_command_list_handle_t l = NULL;
    ZE_OK(zeCommandListCreate(g_ctx, g_dev[0], &ld, &l));
    ze_event_pool_handle_t pool = ts_pool(3);
    ze_event_handle_t e0 = event_at(pool, 0), e1 = event_at(pool, 1), gate = event_at(pool, 2);
    /* each run waits for the host's gate, so "not done yet" is checked before it can start */
    ZE_OK(zeCommandListAppendWaitOnEvents(l, 1, &gate));
    launch_busy(l, k, 1000000, e0);
    launch_busy(l, k, 500000, e1);
    ZE_OK(zeCommandListClose(l));
    ze_command_queue_desc_t qd = {ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, NULL, 0, 1, 0,
                                  ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    ze_command_queue_handle_t q = NULL;
    ZE_OK(zeCommandQueueCreate(g_ctx, g_dev[0], &qd, &q));
    ze_fence_desc_t fd = {ZE_STRUCTURE_TYPE_FENCE_DESC, NULL, 0};
    ze_fence_handle_t f = NULL;
    ZE_OK(zeFenceCreate(q, &fd, &f));
    assert_int_equal(zeFenceQueryStatus(f), ZE_RESULT_NOT_READY);
    uint64_t prev_end = 0;
    uint32_t bits;
    uint64_t hz = timer_hz(g_dev[0], &bits);
    for (int run = 0; run < 3; run++) {
        ZE_OK(zeEventHostReset(e0));
        ZE_OK(zeEventHostReset(e1));
        ZE_OK(zeEventHostReset(gate));
        ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, f));
        assert_int_equal(zeCommandQueueSynchronize(q, 0), ZE_RESULT_NOT_READY); /* gated, 1.5 ms queued */
        assert_int_equal(zeFenceQueryStatus(f), ZE_RESULT_NOT_READY);
        ZE_OK(zeEventHostSignal(gate));
        ZE_OK(zeFenceHostSynchronize(f, UINT64_MAX));
        ZE_OK(zeCommandQueueSynchronize(q, UINT64_MAX));
        ze_kernel_timestamp_result_t a, b;
        ZE_OK(zeEventQueryKernelTimestamp(e0, &a));
        ZE_OK(zeEventQueryKernelTimestamp(e1, &b));
        assert_in_range(ticks_to_ns(a.global.kernelStart, a.global.kernelEnd, bits, hz), 900000, 1100000);
        assert_in_range(ticks_to_ns(b.global.kernelStart, b.global.kernelEnd, bits, hz), 450000, 550000);
        assert_true(b.global.kernelStart >= a.global.kernelEnd);
        assert_true(a.global.kernelStart > prev_end);
        prev_end = b.global.kernelEnd;
        ZE_OK(zeFenceReset(f));
    }
    zeFenceDestroy(f);
    zeCommandQueueDestroy(q);
    zeEventDestroy(e0);
    zeEventDestroy(e1);
    zeEventDestroy(gate);
    zeEventPoolDestroy(pool);
    zeCommandListDestroy(l);
    zeKernelDestroy(k);
    zeModuleDestroy(m);
}

/* Copy engine: copy, fill and 2-D region copy give right bytes and timestamps of their own. */
static void test_copies(void **state)
{
    (void)state;
    ze_command_list_handle_t l = imm_list(g_dev[1], SIMDEV_ORDINAL_COPY, 1);
    uint8_t *src = shared_on(g_dev[1], 1024), *dst = shared_on(g_dev[1], 1024);
    for (int i = 0; i < 1024; i++)
        src[i] = (uint8_t)i;
    ze_event_pool_handle_t pool = ts_pool(3);
    ze_event_handle_t e0 = event_at(pool, 0), e1 = event_at(pool, 1), e2 = event_at(pool, 2);
    ZE_OK(zeCommandListAppendMemoryCopy(l, dst, src, 512, e0, 0, NULL));
    uint16_t pat = 0xabcd;
    ZE_OK(zeCommandListAppendMemoryFill(l, dst + 512, &pat, 2, 256, e1, 1, &e0));
    /* 4 rows x 8 bytes from (2,1) of a 32-byte-pitch source to (0,0) of a 16-byte-pitch dest. */
    ze_copy_region_t sr = {2, 1, 0, 8, 4, 1}, dr = {0, 0, 0, 8, 4, 1};
    ZE_OK(zeCommandListAppendMemoryCopyRegion(l, dst + 768, &dr, 16, 0, src, &sr, 32, 0, e2, 0, NULL));
    ZE_OK(zeEventHostSynchronize(e2, UINT64_MAX));
    assert_memory_equal(dst, src, 512);
    assert_int_equal(dst[512], 0xcd);
    assert_int_equal(dst[513], 0xab);
    assert_int_equal(dst[767], 0xab);
    assert_int_equal(dst[768], 34);            /* src[1*32 + 2] */
    assert_int_equal(dst[768 + 16 * 3 + 7], 4 * 32 + 9); /* src[4*32 + 9] */
    ze_kernel_timestamp_result_t a, b;
    ZE_OK(zeEventQueryKernelTimestamp(e0, &a));
    ZE_OK(zeEventQueryKernelTimestamp(e1, &b));
    assert_true(a.global.kernelEnd > a.global.kernelStart);
    assert_true(b.global.kernelStart >= a.global.kernelEnd);
    zeEventDestroy(e0);
    zeEventDestroy(e1);
    zeEventDestroy(e2);
    zeEventPoolDestroy(pool);
    zeCommandListDestroy(l);
    ZE_OK(zeMemFree(g_ctx, src));
    ZE_OK(zeMemFree(g_ctx, dst));
}

/* 101 appends to one immediate list signal 101 distinct, in-order, non-overlapping timestamps. */
static void test_101_appends(void **state)
{
    (void)state;
    const char *names[] = {"unknown_k"};
    ze_module_handle_t m = module_spirv(g_dev[0], names, 1);
    ze_kernel_handle_t k = kernel(m, "unknown_k");
    ze_command_list_handle_t l = imm_list(g_dev[0], 0, 3);
    ze_event_pool_handle_t pool = ts_pool(101);
    ze_event_handle_t ev[101];
    ze_group_count_t g = {1, 1, 1};
    for (int i = 0; i < 101; i++) {
        ev[i] = event_at(pool, (uint32_t)i);
        ZE_OK(zeCommandListAppendLaunchKernel(l, k, &g, ev[i], 0, NULL));
    }
    ZE_OK(zeEventHostSynchronize(ev[100], UINT64_MAX));
    uint64_t prev_end = 0;
    for (int i = 0; i < 101; i++) {
        ze_kernel_timestamp_result_t t;
        ZE_OK(zeEventQueryKernelTimestamp(ev[i], &t));
        assert_true(t.global.kernelEnd > t.global.kernelStart); /* 2001 ns = ~38 ticks */
        assert_true(t.global.kernelStart >= prev_end);
        prev_end = t.global.kernelEnd;
        zeEventDestroy(ev[i]);
    }
    zeEventPoolDestroy(pool);
    zeCommandListDestroy(l);
    zeKernelDestroy(k);
    zeModuleDestroy(m);
}

/* Two devices, one rank each, device 1 launches 5 ms late: both buffers get the sum, and the
 * early rank's device time includes its wait. */
static void test_allreduce(void **state)
{
    (void)state;
    const char *names[] = {"allreduce_sum_f32"};
    float *buf[2];
    ze_module_handle_t m[2];
    ze_command_list_handle_t l[2];
    ze_kernel_handle_t k[2];
    ze_event_pool_handle_t pool = ts_pool(2);
    ze_event_handle_t ev[2] = {event_at(pool, 0), event_at(pool, 1)};
    uint32_t n = 16, nr = 2;
    uint64_t key = 42;
    for (uint32_t r = 0; r < 2; r++) {
        m[r] = module_spirv(g_dev[r], names, 1);
        k[r] = kernel(m[r], names[0]);
        l[r] = imm_list(g_dev[r], 0, 0);
        buf[r] = shared_on(g_dev[r], n * 4);
        for (uint32_t i = 0; i < n; i++)
            buf[r][i] = (float)(i + 100 * r);
        ZE_OK(zeKernelSetArgumentValue(k[r], 0, 8, &buf[r]));
        ZE_OK(zeKernelSetArgumentValue(k[r], 1, 4, &n));
        ZE_OK(zeKernelSetArgumentValue(k[r], 2, 4, &r));
        ZE_OK(zeKernelSetArgumentValue(k[r], 3, 4, &nr));
        ZE_OK(zeKernelSetArgumentValue(k[r], 4, 8, &key));
    }
    ze_group_count_t g = {1, 1, 1};
    ZE_OK(zeCommandListAppendLaunchKernel(l[0], k[0], &g, ev[0], 0, NULL));
    struct timespec late = {0, 5000000};
    nanosleep(&late, NULL);
    ZE_OK(zeCommandListAppendLaunchKernel(l[1], k[1], &g, ev[1], 0, NULL));
    ZE_OK(zeEventHostSynchronize(ev[0], UINT64_MAX));
    ZE_OK(zeEventHostSynchronize(ev[1], UINT64_MAX));
    for (uint32_t i = 0; i < n; i++) {
        assert_true(buf[0][i] == (float)(2 * i + 100));
        assert_true(buf[1][i] == (float)(2 * i + 100));
    }
    ze_kernel_timestamp_result_t t0;
    ZE_OK(zeEventQueryKernelTimestamp(ev[0], &t0));
    uint32_t bits;
    uint64_t hz = timer_hz(g_dev[0], &bits);
    /* The early rank waited for the late one: its kernel cannot end before rank 1's kernel
     * started (both devices share one clock). A fixed ">= 4 ms" duration was flaky: under load
     * rank 0's engine thread may itself pick the command up late. */
    ze_kernel_timestamp_result_t t1;
    ZE_OK(zeEventQueryKernelTimestamp(ev[1], &t1));
    (void)hz;
    uint64_t mask = bits >= 64 ? UINT64_MAX : (1ull << bits) - 1;
    assert_true(((t0.global.kernelEnd - t1.global.kernelStart) & mask) < (mask >> 1));
    zeEventDestroy(ev[0]);
    zeEventDestroy(ev[1]);
    zeEventPoolDestroy(pool);
    for (int r = 0; r < 2; r++) {
        zeCommandListDestroy(l[r]);
        zeKernelDestroy(k[r]);
        zeModuleDestroy(m[r]);
        ZE_OK(zeMemFree(g_ctx, buf[r]));
    }
}

/* Sysman in legacy mode (ze device handles): PCI bus 0x10 + index, properties, unsupported calls. */
static void test_sysman_and_clock(void **state)
{
    (void)state;
    zes_pci_properties_t pp = {.stype = ZES_STRUCTURE_TYPE_PCI_PROPERTIES};
    ZE_OK(zesDevicePciGetProperties((zes_device_handle_t)g_dev[1], &pp));
    assert_int_equal(pp.address.domain, 0);
    assert_int_equal(pp.address.bus, 0x11);
    assert_int_equal(pp.address.device, 0);
    zes_device_properties_t dp = {.stype = ZES_STRUCTURE_TYPE_DEVICE_PROPERTIES};
    ZE_OK(zesDeviceGetProperties((zes_device_handle_t)g_dev[0], &dp));
    assert_string_equal(dp.core.name, "SimDev GPU 0");
    assert_int_equal(zesDeviceGetState((zes_device_handle_t)g_dev[0], NULL), ZE_RESULT_ERROR_UNSUPPORTED_FEATURE);
    /* Host/device pairs: the device advances by the host delta * 19.2 MHz (+-1 tick rounding). */
    uint64_t h0, d0, h1, d1;
    ZE_OK(zeDeviceGetGlobalTimestamps(g_dev[0], &h0, &d0));
    struct timespec ms = {0, 3000000};
    nanosleep(&ms, NULL);
    ZE_OK(zeDeviceGetGlobalTimestamps(g_dev[0], &h1, &d1));
    double expect = (double)(h1 - h0) * 19.2e6 / 1e9;
    assert_true((double)(d1 - d0) >= expect - 1.0 && (double)(d1 - d0) <= expect + 1.0);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    assert_true(h1 <= (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec);
}

static void test_bad_handles(void **state)
{
    (void)state;
    assert_int_equal(zeCommandQueueSynchronize(NULL, 0), ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    ze_command_queue_desc_t qd = {ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, NULL, 1, 2, 0,
                                  ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    ze_command_queue_handle_t q = NULL;
    /* copy group has engines 0 and 1 only */
    assert_int_equal(zeCommandQueueCreate(g_ctx, g_dev[0], &qd, &q), ZE_RESULT_ERROR_INVALID_ARGUMENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory),          cmocka_unit_test(test_native_module),
        cmocka_unit_test(test_regular_list_fence), cmocka_unit_test(test_copies),
        cmocka_unit_test(test_101_appends),     cmocka_unit_test(test_allreduce),
        cmocka_unit_test(test_sysman_and_clock), cmocka_unit_test(test_bad_handles),
    };
    return cmocka_run_group_tests_name("simdev_api", tests, setup, NULL);
}
