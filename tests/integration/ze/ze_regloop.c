/* ze_regloop.c - a regular list of K busy kernels executed E times, optionally without any
 * synchronization between executions (the agent's capture under back-to-back replays), or N
 * kernels on one immediate list with one synchronization at the end.
 * Or `templates`: one kernel each of f<int>, f<double> and ns::Kernel<float> (mangled names).
 * Or `destroy N`: N times a regular list of one busy kernel of 200 us, executed and destroyed at
 * once (no host sync before the destroy; the queue is synchronized at the end).
 * usage: ze_regloop regular K E SYNC_EACH | ze_regloop immediate N | ze_regloop templates |
 *        ze_regloop destroy N */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

/* Kernel i runs 10 us + (i % 10) us: neighbouring rows differ, so duplicates stand out. */
static void append_busy(ze_command_list_handle_t l, ze_kernel_handle_t k, int i)
{
    uint64_t ns = 10000 + (uint64_t)(i % 10) * 1000;
    ze_group_count_t g = { 1, 1, 1 };
    SAMPLE_CHECK(zeKernelSetArgumentValue(k, 0, sizeof ns, &ns));
    SAMPLE_CHECK(zeCommandListAppendLaunchKernel(l, k, &g, NULL, 0, NULL));
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "templates") == 0) {
        sample_env_t te;
        sample_env_init(&te, 1);
        static const char *names[] = { "_Z1fIiEvPi", "_Z1fIdEvPd", "_ZN2ns6KernelIfEEvPf" };
        ze_module_handle_t tm = sample_module_native(&te, te.devices[0],
            "SIMDEV-MODULE 1\nkernel _Z1fIiEvPi builtin=busy_ns\nkernel _Z1fIdEvPd builtin=busy_ns\n"
            "kernel _ZN2ns6KernelIfEEvPf builtin=busy_ns\n");
        ze_command_list_handle_t il = sample_immediate(&te, te.devices[0], 0, 0);
        for (int i = 0; i < 3; i++)
            append_busy(il, sample_kernel(tm, names[i], 1), i);
        ze_event_pool_handle_t p = sample_event_pool(&te, 1, 0);
        ze_event_handle_t e = sample_event(p, 0);
        SAMPLE_CHECK(zeCommandListAppendBarrier(il, e, 0, NULL));
        SAMPLE_CHECK(zeEventHostSynchronize(e, UINT64_MAX));
        printf("templates\n");
        return 0;
    }
    if (argc < 3 || (strcmp(argv[1], "regular") == 0 && argc < 5)) {
        fprintf(stderr, "usage: %s regular K E SYNC_EACH | %s immediate N\n", argv[0], argv[0]);
        return 2;
    }
    sample_env_t env;
    sample_env_init(&env, 1);
    ze_device_handle_t dev = env.devices[0];
    ze_module_handle_t m = sample_module_native(&env, dev, "SIMDEV-MODULE 1\nkernel busy builtin=busy_ns\n");
    ze_kernel_handle_t k = sample_kernel(m, "busy", 1);
    int n = atoi(argv[2]);
    if (strcmp(argv[1], "immediate") == 0) {
        ze_command_list_handle_t il = sample_immediate(&env, dev, 0, 0);
        for (int i = 0; i < n; i++)
            append_busy(il, k, i);
        /* one synchronization at the end: a barrier signalling an event of the application's */
        ze_event_pool_handle_t p = sample_event_pool(&env, 1, 0);
        ze_event_handle_t e = sample_event(p, 0);
        SAMPLE_CHECK(zeCommandListAppendBarrier(il, e, 0, NULL));
        SAMPLE_CHECK(zeEventHostSynchronize(e, UINT64_MAX));
        printf("immediate %d\n", n);
        return 0;
    }
    ze_command_queue_handle_t q = sample_queue(&env, dev, 0, 0);
    if (strcmp(argv[1], "destroy") == 0) {
        uint64_t ns = 200000;
        ze_group_count_t g = { 1, 1, 1 };
        SAMPLE_CHECK(zeKernelSetArgumentValue(k, 0, sizeof ns, &ns));
        for (int i = 0; i < n; i++) {
            ze_command_list_handle_t l = sample_list(&env, dev, 0);
            SAMPLE_CHECK(zeCommandListAppendLaunchKernel(l, k, &g, NULL, 0, NULL));
            SAMPLE_CHECK(zeCommandListClose(l));
            SAMPLE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &l, NULL));
            SAMPLE_CHECK(zeCommandListDestroy(l));
        }
        SAMPLE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
        printf("destroy %d\n", n);
        return 0;
    }
    int ne = atoi(argv[3]), sync_each = atoi(argv[4]);
    ze_command_list_handle_t r = sample_list(&env, dev, 0);
    for (int i = 0; i < n; i++)
        append_busy(r, k, i);
    SAMPLE_CHECK(zeCommandListClose(r));
    for (int e = 0; e < ne; e++) {
        SAMPLE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &r, NULL));
        if (sync_each)
            SAMPLE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
    }
    SAMPLE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
    printf("regular %d x %d\n", n, ne);
    return 0;
}
