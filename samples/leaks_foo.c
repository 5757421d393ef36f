/* leaks_foo.c - libfoo.so: LaunchKernel allocates a device buffer and fills it (a call path the
 * leaks sample leaks from; built without inlining/sibling calls so the frame stays visible). */
#include "leaks_libs.h"

__attribute__((noinline)) void *LaunchKernel(ze_context_handle_t ctx, ze_device_handle_t dev,
                                             ze_command_list_handle_t list,
                                             ze_kernel_handle_t fill_kernel, size_t bytes,
                                             uint32_t value)
{
    ze_device_mem_alloc_desc_t dd = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
    void *p = NULL;
    if (zeMemAllocDevice(ctx, &dd, bytes, 64, dev, &p) != ZE_RESULT_SUCCESS)
        return NULL;
    uint32_t n = (uint32_t)(bytes / sizeof(uint32_t));
    ze_group_count_t gc = {(n + 63) / 64, 1, 1};
    if (zeKernelSetGroupSize(fill_kernel, 64, 1, 1) != ZE_RESULT_SUCCESS ||
        zeKernelSetArgumentValue(fill_kernel, 0, sizeof(p), &p) != ZE_RESULT_SUCCESS ||
        zeKernelSetArgumentValue(fill_kernel, 1, sizeof(value), &value) != ZE_RESULT_SUCCESS ||
        zeKernelSetArgumentValue(fill_kernel, 2, sizeof(n), &n) != ZE_RESULT_SUCCESS ||
        zeCommandListAppendLaunchKernel(list, fill_kernel, &gc, NULL, 0, NULL) !=
            ZE_RESULT_SUCCESS) {
        zeMemFree(ctx, p);
        return NULL;
    }
    return p;
}
