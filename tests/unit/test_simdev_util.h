/* test_simdev_util.h - shared helpers of the simdev unit tests (setup through the loader). */
#ifndef TEST_SIMDEV_UTIL_H
#define TEST_SIMDEV_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <level_zero/ze_api.h>

#include "simdev.h"

static ze_driver_handle_t g_drv;
static ze_device_handle_t g_dev[4];
static uint32_t g_ndev;
static ze_context_handle_t g_ctx;

#define ZE_OK(call) assert_int_equal((call), ZE_RESULT_SUCCESS)

static inline int setup(void **state)
{
    (void)state;
    if (zeInit(ZE_INIT_FLAG_GPU_ONLY) != ZE_RESULT_SUCCESS)
        return -1;
    uint32_t n = 1;
    if (zeDriverGet(&n, &g_drv) != ZE_RESULT_SUCCESS || n != 1)
        return -1;
    g_ndev = 4;
    zeDeviceGet(g_drv, &g_ndev, g_dev);
    ze_context_desc_t cd = {ZE_STRUCTURE_TYPE_CONTEXT_DESC, NULL, 0};
    return zeContextCreate(g_drv, &cd, &g_ctx) == ZE_RESULT_SUCCESS ? 0 : -1;
}

/* Hand-built SPIR-V: header + one OpEntryPoint (Kernel model) per name; enough for simdev. */
static inline size_t build_spirv(uint32_t *w, const char *const *names, int n)
{
    size_t k = 0;
    w[k++] = 0x07230203u; w[k++] = 0x00010000u; w[k++] = 0; w[k++] = 100; w[k++] = 0;
    for (int i = 0; i < n; i++) {
        size_t len = strlen(names[i]), nw = len / 4 + 1, start = k;
        w[k++] = 0; /* patched below */
        w[k++] = 6; /* ExecutionModel Kernel */
        w[k++] = 10 + (uint32_t)i;
        memset(&w[k], 0, nw * 4);
        memcpy(&w[k], names[i], len);
        k += nw;
        w[start] = ((uint32_t)(k - start) << 16) | 15u;
    }
    return k * 4;
}

static inline ze_module_handle_t module_spirv(ze_device_handle_t dev, const char *const *names, int n)
{
    uint32_t words[256];
    size_t bytes = build_spirv(words, names, n);
    ze_module_desc_t md = {ZE_STRUCTURE_TYPE_MODULE_DESC, NULL, ZE_MODULE_FORMAT_IL_SPIRV, bytes,
                           (const uint8_t *)words, "", NULL};
    ze_module_handle_t m = NULL;
    ZE_OK(zeModuleCreate(g_ctx, dev, &md, &m, NULL));
    return m;
}

static inline ze_kernel_handle_t kernel(ze_module_handle_t m, const char *name)
{
    ze_kernel_desc_t kd = {ZE_STRUCTURE_TYPE_KERNEL_DESC, NULL, 0, name};
    ze_kernel_handle_t k = NULL;
    ZE_OK(zeKernelCreate(m, &kd, &k));
    return k;
}

static inline ze_command_list_handle_t imm_list(ze_device_handle_t dev, uint32_t ordinal, uint32_t index)
{
    ze_command_queue_desc_t qd = {ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, NULL, ordinal, index, 0,
                                  ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    ze_command_list_handle_t l = NULL;
    ZE_OK(zeCommandListCreateImmediate(g_ctx, dev, &qd, &l));
    return l;
}

static inline ze_event_pool_handle_t ts_pool(uint32_t count)
{
    ze_event_pool_desc_t pd = {ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, NULL,
                               ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP | ZE_EVENT_POOL_FLAG_HOST_VISIBLE, count};
    ze_event_pool_handle_t p = NULL;
    ZE_OK(zeEventPoolCreate(g_ctx, &pd, 0, NULL, &p));
    return p;
}

static inline ze_event_handle_t event_at(ze_event_pool_handle_t p, uint32_t i)
{
    ze_event_desc_t ed = {ZE_STRUCTURE_TYPE_EVENT_DESC, NULL, i, ZE_EVENT_SCOPE_FLAG_HOST, ZE_EVENT_SCOPE_FLAG_HOST};
    ze_event_handle_t e = NULL;
    ZE_OK(zeEventCreate(p, &ed, &e));
    return e;
}

static inline void *dev_alloc(ze_device_handle_t dev, size_t bytes)
{
    ze_device_mem_alloc_desc_t dd = {ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, NULL, 0, 0};
    ze_host_mem_alloc_desc_t hd = {ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, NULL, 0};
    void *p = NULL;
    ZE_OK(zeMemAllocShared(g_ctx, &dd, &hd, bytes, 64, dev, &p));
    return p;
}

static inline void launch_busy(ze_command_list_handle_t l, ze_kernel_handle_t k, uint64_t ns, ze_event_handle_t ev)
{
    ze_group_count_t g = {1, 1, 1};
    ZE_OK(zeKernelSetArgumentValue(k, 0, sizeof ns, &ns));
    ZE_OK(zeCommandListAppendLaunchKernel(l, k, &g, ev, 0, NULL));
}

/* Device timer frequency from the 1.2 properties (cycles/s). */
static inline uint64_t timer_hz(ze_device_handle_t dev, uint32_t *bits)
{
    ze_device_properties_t p = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2};
    ZE_OK(zeDeviceGetProperties(dev, &p));
    *bits = p.kernelTimestampValidBits;
    return p.timerResolution;
}

static inline uint64_t ticks_to_ns(uint64_t start, uint64_t end, uint32_t bits, uint64_t hz)
{
    uint64_t mask = bits >= 64 ? UINT64_MAX : (1ull << bits) - 1;
    return (uint64_t)((double)((end - start) & mask) * 1e9 / (double)hz);
}

#endif
