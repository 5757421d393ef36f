/* mem_qa.h - tiny Level Zero helpers shared by the device-memory regression programs. */
#ifndef MEM_QA_H
#define MEM_QA_H
#include <stdio.h>
#include <stdlib.h>

#include <level_zero/ze_api.h>

#define QA_CHECK(call) do { ze_result_t r_ = (call); if (r_ != ZE_RESULT_SUCCESS) { \
    fprintf(stderr, "%s failed: 0x%x\n", #call, (unsigned)r_); exit(1); } } while (0)

extern ze_context_handle_t qa_ctx;
extern ze_device_handle_t qa_dev;

/* zeInit, first driver/device, one context (defined in the program with QA_IMPL). */
#ifdef QA_IMPL
ze_context_handle_t qa_ctx;
ze_device_handle_t qa_dev;
static void qa_init(void)
{
    ze_driver_handle_t drv;
    uint32_t n = 1;
    QA_CHECK(zeInit(0));
    QA_CHECK(zeDriverGet(&n, &drv));
    n = 1;
    QA_CHECK(zeDeviceGet(drv, &n, &qa_dev));
    ze_context_desc_t cd = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
    QA_CHECK(zeContextCreate(drv, &cd, &qa_ctx));
}
#endif

/* n bytes of device memory (exits on failure). */
static inline void *qa_alloc(size_t n)
{
    ze_device_mem_alloc_desc_t dd = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
    void *p = NULL;
    QA_CHECK(zeMemAllocDevice(qa_ctx, &dd, n, 64, qa_dev, &p));
    return p;
}
#endif
