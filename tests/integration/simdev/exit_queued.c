/* exit_queued.c - exits with 5 s of device work still queued (qa3 defect 8 reproducer). */
#include <level_zero/ze_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x) do { if ((x) != ZE_RESULT_SUCCESS) { fprintf(stderr, "failed: %s\n", #x); return 1; } } while (0)

int main(void)
{
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
    for (int i = 0; i < 10; i++)
        CK(zeCommandListAppendLaunchKernel(l, k, &one, NULL, 0, NULL));
    printf("exiting with work queued\n");
    return 0;
}
