/* exit_queued.c [N] - exits with N (default 10) launches of 500 ms of device work still queued
 * (qa3 defect 8 reproducer; N = 0: the same program with nothing queued), printing the
 * CLOCK_MONOTONIC ns at which main returns. */
#include <level_zero/ze_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CK(x) do { if ((x) != ZE_RESULT_SUCCESS) { fprintf(stderr, "failed: %s\n", #x); return 1; } } while (0)

int main(int argc, char **argv)
{
    int launches = argc > 1 ? atoi(argv[1]) : 10;
    ze_driver_handle_t drv;
    ze_device_handle_t dev;
    ze_context_handle_t ctx;
    uint32_t n = 1;
    CK(zeInit(0));
    CK(zeDriverGet(&n, &drv));
    n = 1;
    CK(zeDeviceGet(drv, &n, &dev));
    ze_context_desc_t cd = {ZE_STRUCTURE_TYPE_CONTEXT_DESC, NULL, 0};
    CK(zeContextCreate(drv, &cd, &ctx));
    const char *txt = "SIMDEV-MODULE 1\nkernel busy_ns\n";
    ze_module_desc_t md = {ZE_STRUCTURE_TYPE_MODULE_DESC, NULL, ZE_MODULE_FORMAT_NATIVE, strlen(txt),
                           (const uint8_t *)txt, NULL, NULL};
    ze_module_handle_t m;
    CK(zeModuleCreate(ctx, dev, &md, &m, NULL));
    ze_kernel_desc_t kd = {ZE_STRUCTURE_TYPE_KERNEL_DESC, NULL, 0, "busy_ns"};
    ze_kernel_handle_t k;
    CK(zeKernelCreate(m, &kd, &k));
    uint64_t ns = 500000000;
    CK(zeKernelSetArgumentValue(k, 0, 8, &ns));
    ze_command_queue_desc_t qd = {ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, NULL, 0, 0, 0,
                                  ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    ze_command_list_handle_t l;
    CK(zeCommandListCreateImmediate(ctx, dev, &qd, &l));
    ze_group_count_t one = {1, 1, 1};
    for (int i = 0; i < launches; i++)
        CK(zeCommandListAppendLaunchKernel(l, k, &one, NULL, 0, NULL));
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    printf("exiting with %d launches queued at %llu\n", launches,
           (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec);
    return 0;
}
