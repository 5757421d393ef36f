/* test_simdev_smoke.c - loads simdev through the real loader and checks devices, results, timing. */
#include "test_simdev_util.h"

static void test_devices(void **state)
{
    (void)state;
    assert_int_equal(g_ndev, 2);
    ze_device_properties_t p = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
    ZE_OK(zeDeviceGetProperties(g_dev[1], &p));
    assert_string_equal(p.name, "SimDev GPU 1");
    assert_int_equal(p.vendorId, 0x5344);
    assert_int_equal(p.type, ZE_DEVICE_TYPE_GPU);
    assert_int_equal(p.timerResolution, 52); /* ns per tick at 19.2 MHz, old struct */
    assert_int_equal(p.kernelTimestampValidBits, 36);
    uint32_t bits;
    assert_int_equal(timer_hz(g_dev[0], &bits), 19200000);
    uint32_t ng = 0;
    ZE_OK(zeDeviceGetCommandQueueGroupProperties(g_dev[0], &ng, NULL));
    assert_int_equal(ng, 2);
    ze_command_queue_group_properties_t gp[2];
    memset(gp, 0, sizeof gp);
    ZE_OK(zeDeviceGetCommandQueueGroupProperties(g_dev[0], &ng, gp));
    assert_int_equal(gp[0].numQueues, 4);
    assert_int_equal(gp[1].numQueues, 2);
    assert_true(gp[0].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE);
    assert_false(gp[1].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE);
}

static void test_vector_add(void **state)
{
    (void)state;
    /* The mangled name must keep its spelling and run the vector_add builtin via its base name. */
    const char *names[] = {"_Z10vector_addPKfS0_Pfj", "my_unknown_kernel"};
    ze_module_handle_t m = module_spirv(g_dev[0], names, 2);
    uint32_t nk = 0;
    ZE_OK(zeModuleGetKernelNames(m, &nk, NULL));
    assert_int_equal(nk, 2);
    ze_kernel_handle_t k = kernel(m, names[0]);
    char kname[64];
    size_t ks = sizeof kname;
    ZE_OK(zeKernelGetName(k, &ks, kname));
    assert_string_equal(kname, "_Z10vector_addPKfS0_Pfj");
    const uint32_t n = 1000;
    float *a = dev_alloc(g_dev[0], n * 4), *b = dev_alloc(g_dev[0], n * 4), *c = dev_alloc(g_dev[0], n * 4);
    for (uint32_t i = 0; i < n; i++) {
        a[i] = (float)i;
        b[i] = 2.0f * (float)i + 0.5f;
    }
    ZE_OK(zeKernelSetArgumentValue(k, 0, sizeof a, &a));
    ZE_OK(zeKernelSetArgumentValue(k, 1, sizeof b, &b));
    ZE_OK(zeKernelSetArgumentValue(k, 2, sizeof c, &c));
    ZE_OK(zeKernelSetArgumentValue(k, 3, sizeof n, &n));
    assert_int_equal(zeKernelSetArgumentValue(k, 4, sizeof n, &n), ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX);
    ZE_OK(zeKernelSetGroupSize(k, 100, 1, 1));
    ze_command_list_handle_t l = imm_list(g_dev[0], 0, 0);
    ze_group_count_t g = {10, 1, 1};
    ZE_OK(zeCommandListAppendLaunchKernel(l, k, &g, NULL, 0, NULL));
    ZE_OK(zeCommandListAppendBarrier(l, NULL, 0, NULL));
    ze_event_pool_handle_t pool = ts_pool(1);
    ze_event_handle_t done = event_at(pool, 0);
    ZE_OK(zeCommandListAppendSignalEvent(l, done));
    ZE_OK(zeEventHostSynchronize(done, UINT64_MAX));
    assert_true(c[0] == 0.5f);
    assert_true(c[999] == 2997.5f); /* 999 + 1998.5 */
    for (uint32_t i = 0; i < n; i++)
        assert_true(c[i] == 3.0f * (float)i + 0.5f);
    zeEventDestroy(done);
    zeEventPoolDestroy(pool);
    zeCommandListDestroy(l);
    zeKernelDestroy(k);
    zeModuleDestroy(m);
    ZE_OK(zeMemFree(g_ctx, a));
    ZE_OK(zeMemFree(g_ctx, b));
    ZE_OK(zeMemFree(g_ctx, c));
}

static void test_busy_2ms(void **state)
{
    (void)state;
    const char *names[] = {"busy_ns"};
    ze_module_handle_t m = module_spirv(g_dev[0], names, 1);
    ze_kernel_handle_t k = kernel(m, "busy_ns");
    ze_command_list_handle_t l = imm_list(g_dev[0], 0, 1);
    ze_event_pool_handle_t pool = ts_pool(1);
    ze_event_handle_t ev = event_at(pool, 0);
    launch_busy(l, k, 2000000, ev);
    ZE_OK(zeEventHostSynchronize(ev, UINT64_MAX));
    ze_kernel_timestamp_result_t ts;
    ZE_OK(zeEventQueryKernelTimestamp(ev, &ts));
    uint32_t bits;
    uint64_t hz = timer_hz(g_dev[0], &bits);
    uint64_t ns = ticks_to_ns(ts.global.kernelStart, ts.global.kernelEnd, bits, hz);
    assert_in_range(ns, 1800000, 2200000);
    /* Reset and reuse: NOT_READY until signalled again, then the new run's times. */
    ZE_OK(zeEventHostReset(ev));
    assert_int_equal(zeEventQueryKernelTimestamp(ev, &ts), ZE_RESULT_NOT_READY);
    launch_busy(l, k, 1000000, ev);
    ZE_OK(zeEventHostSynchronize(ev, UINT64_MAX));
    ze_kernel_timestamp_result_t ts2;
    ZE_OK(zeEventQueryKernelTimestamp(ev, &ts2));
    assert_in_range(ticks_to_ns(ts2.global.kernelStart, ts2.global.kernelEnd, bits, hz), 900000, 1100000);
    assert_true(ts2.global.kernelStart >= ts.global.kernelEnd);
    zeEventDestroy(ev);
    zeEventPoolDestroy(pool);
    zeCommandListDestroy(l);
    zeKernelDestroy(k);
    zeModuleDestroy(m);
}

/* Two 20 ms kernels on two compute engines of device 0 run concurrently. Both wait for one host
 * signal; a kernel's device start is when its engine's worker thread ran after the signal, which
 * a loaded host can delay past the other kernel's end (seen: 2 of 20 runs beside 3 busy loops).
 * Engines that serialize start the second kernel >= 20 ms after the first every time; concurrent
 * ones start both within 20 ms of each other whenever their workers are not that late: so up to
 * 8 attempts, one of which must overlap, and no kernel may start before the signal. */
static void test_overlap(void **state)
{
    (void)state;
    const char *names[] = {"busy_ns"};
    ze_module_handle_t m = module_spirv(g_dev[0], names, 1);
    ze_kernel_handle_t k = kernel(m, "busy_ns");
    ze_command_list_handle_t l0 = imm_list(g_dev[0], 0, 2), l1 = imm_list(g_dev[0], 0, 3);
    ze_event_pool_handle_t pool = ts_pool(3);
    ze_event_handle_t e0 = event_at(pool, 0), e1 = event_at(pool, 1), gate = event_at(pool, 2);
    uint32_t bits;
    uint64_t hz = timer_hz(g_dev[0], &bits), mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
    int overlapped = 0, attempt;
    for (attempt = 0; attempt < 8 && !overlapped; attempt++) {
        ZE_OK(zeEventHostReset(e0));
        ZE_OK(zeEventHostReset(e1));
        ZE_OK(zeEventHostReset(gate));
        ZE_OK(zeCommandListAppendWaitOnEvents(l0, 1, &gate));
        ZE_OK(zeCommandListAppendWaitOnEvents(l1, 1, &gate));
        launch_busy(l0, k, 20000000, e0);
        launch_busy(l1, k, 20000000, e1);
        uint64_t host, signalled;
        ZE_OK(zeDeviceGetGlobalTimestamps(g_dev[0], &host, &signalled));
        ZE_OK(zeEventHostSignal(gate));
        ZE_OK(zeEventHostSynchronize(e0, UINT64_MAX));
        ZE_OK(zeEventHostSynchronize(e1, UINT64_MAX));
        ze_kernel_timestamp_result_t a, b;
        ZE_OK(zeEventQueryKernelTimestamp(e0, &a));
        ZE_OK(zeEventQueryKernelTimestamp(e1, &b));
        /* ticks after the signal (masked: the 36-bit clock may wrap in between) */
        uint64_t as = (a.global.kernelStart - signalled) & mask, ae = (a.global.kernelEnd - signalled) & mask;
        uint64_t bs = (b.global.kernelStart - signalled) & mask, be = (b.global.kernelEnd - signalled) & mask;
        assert_true(as < hz * 60 && bs < hz * 60); /* not before the signal (a negative difference wraps) */
        assert_true(ticks_to_ns(a.global.kernelStart, a.global.kernelEnd, bits, hz) >= 19900000);
        assert_true(ticks_to_ns(b.global.kernelStart, b.global.kernelEnd, bits, hz) >= 19900000);
        overlapped = as < be && bs < ae;
        if (!overlapped)
            printf("overlap attempt %d: starts %llu and %llu us after the signal (a worker ran late)\n", attempt,
                   (unsigned long long)(as * 1000000 / hz), (unsigned long long)(bs * 1000000 / hz));
    }
    assert_true(overlapped);
    zeEventDestroy(e0);
    zeEventDestroy(e1);
    zeEventDestroy(gate);
    zeEventPoolDestroy(pool);
    zeCommandListDestroy(l0);
    zeCommandListDestroy(l1);
    zeKernelDestroy(k);
    zeModuleDestroy(m);
}

/* A 32-bit clock at 1 GHz started 50 ms before the wrap (test environment). The kernel is placed
 * across the wrap from the device clock, not by luck: with r ns left before the wrap, a busy kernel
 * of r + 2 ms appended now spans it unless it starts more than r ns late; then (the wrap passed) r is
 * ~4.29 s and the next attempt spans the following wrap. The masked difference must equal the
 * modelled duration exactly (at 1 GHz one tick = 1 ns); a lower bound only, since a loaded host can
 * only make the device time longer, and an unmasked or wrong conversion is off by ~4.29 s. */
static void test_wrap(void **state)
{
    (void)state;
    uint32_t bits;
    uint64_t hz = timer_hz(g_dev[0], &bits);
    assert_int_equal(bits, 32);
    assert_int_equal(hz, 1000000000);
    const char *names[] = {"busy_ns"};
    ze_module_handle_t m = module_spirv(g_dev[0], names, 1);
    ze_kernel_handle_t k = kernel(m, "busy_ns");
    ze_command_list_handle_t l = imm_list(g_dev[0], 0, 0);
    ze_event_pool_handle_t pool = ts_pool(1);
    ze_event_handle_t ev = event_at(pool, 0);
    int wrapped = 0;
    for (int attempt = 0; attempt < 3 && !wrapped; attempt++) {
        uint64_t host, dev;
        ZE_OK(zeDeviceGetGlobalTimestamps(g_dev[0], &host, &dev));
        assert_true(dev <= 0xffffffffull);
        uint64_t left = (0x100000000ull - dev) & 0xffffffffull, d = left + 2000000;
        ZE_OK(zeEventHostReset(ev));
        launch_busy(l, k, d, ev);
        ZE_OK(zeEventHostSynchronize(ev, UINT64_MAX));
        ze_kernel_timestamp_result_t ts;
        ZE_OK(zeEventQueryKernelTimestamp(ev, &ts));
        assert_true(ts.global.kernelEnd <= 0xffffffffull);
        assert_in_range(ticks_to_ns(ts.global.kernelStart, ts.global.kernelEnd, bits, hz), d, d + 2000000000ull);
        wrapped = ts.global.kernelEnd < ts.global.kernelStart;
    }
    assert_true(wrapped);
    zeEventDestroy(ev);
    zeEventPoolDestroy(pool);
    zeCommandListDestroy(l);
    zeKernelDestroy(k);
    zeModuleDestroy(m);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest smoke[] = {
        cmocka_unit_test(test_devices),
        cmocka_unit_test(test_vector_add),
        cmocka_unit_test(test_busy_2ms),
        cmocka_unit_test(test_overlap),
    };
    const struct CMUnitTest wrap[] = {cmocka_unit_test(test_wrap)};
    if (argc > 1 && strcmp(argv[1], "wrap") == 0)
        return cmocka_run_group_tests_name("simdev_wrap", wrap, setup, NULL);
    return cmocka_run_group_tests_name("simdev_smoke", smoke, setup, NULL);
}
