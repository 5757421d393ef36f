/* leaks_bar.c - libbar.so: a second, distinct device-allocation call path for the leaks sample. */
#include "leaks_libs.h"

__attribute__((noinline)) void *bar_make_buffer(ze_context_handle_t ctx, ze_device_handle_t dev,
                                                size_t bytes)
{
    ze_device_mem_alloc_desc_t dd = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
    void *p = NULL;
    if (zeMemAllocDevice(ctx, &dd, bytes, 64, dev, &p) != ZE_RESULT_SUCCESS)
        return NULL;
    return p;
}

__attribute__((noinline)) ze_result_t bar_release(ze_context_handle_t ctx, void *p)
{
    return zeMemFree(ctx, p);
}
