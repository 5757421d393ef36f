/* ze_dlopen.c - an application that does not link Level Zero: it dlopen()s libze_loader.so.1 and
 * calls everything through dlsym; launches the "vector_add" kernel once (simdev native module)
 * and waits for it. Exits 0 on success, 1 with a message otherwise. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <level_zero/ze_api.h>

#define FN(n) static __typeof__(&n) p_##n
FN(zeInit); FN(zeDriverGet); FN(zeDeviceGet); FN(zeContextCreate); FN(zeModuleCreate);
FN(zeKernelCreate); FN(zeKernelSetGroupSize); FN(zeKernelSetArgumentValue); FN(zeMemAllocShared);
FN(zeCommandListCreateImmediate); FN(zeCommandListAppendLaunchKernel); FN(zeEventPoolCreate);
FN(zeEventCreate); FN(zeCommandListAppendBarrier); FN(zeEventHostSynchronize);

#define CHECK(call) do { ze_result_t r_ = (call); if (r_ != ZE_RESULT_SUCCESS) { \
    fprintf(stderr, "ze_dlopen: %s failed: 0x%x\n", #call, (unsigned)r_); return 1; } } while (0)

static int resolve(void *lib)
{
#define R(n) if (!(*(void **)&p_##n = dlsym(lib, #n))) { fprintf(stderr, "ze_dlopen: no %s\n", #n); return 1; }
    R(zeInit) R(zeDriverGet) R(zeDeviceGet) R(zeContextCreate) R(zeModuleCreate) R(zeKernelCreate)
    R(zeKernelSetGroupSize) R(zeKernelSetArgumentValue) R(zeMemAllocShared)
    R(zeCommandListCreateImmediate) R(zeCommandListAppendLaunchKernel) R(zeEventPoolCreate)
    R(zeEventCreate) R(zeCommandListAppendBarrier) R(zeEventHostSynchronize)
#undef R
    return 0;
}

int main(void)
{
    void *lib = dlopen("libze_loader.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "ze_dlopen: %s\n", dlerror());
        return 1;
    }
    if (resolve(lib))
        return 1;
    CHECK(p_zeInit(ZE_INIT_FLAG_GPU_ONLY));
    uint32_t n = 1;
    ze_driver_handle_t drv;
    ze_device_handle_t dev;
    CHECK(p_zeDriverGet(&n, &drv));
    n = 1;
    CHECK(p_zeDeviceGet(drv, &n, &dev));
    ze_context_desc_t cd = {ZE_STRUCTURE_TYPE_CONTEXT_DESC, NULL, 0};
    ze_context_handle_t ctx;
    CHECK(p_zeContextCreate(drv, &cd, &ctx));
    static const char text[] = "SIMDEV-MODULE 1\nkernel vector_add\n";
    ze_module_desc_t md = {ZE_STRUCTURE_TYPE_MODULE_DESC, NULL, ZE_MODULE_FORMAT_NATIVE, sizeof text - 1,
                           (const uint8_t *)text, NULL, NULL};
    ze_module_handle_t mod;
    CHECK(p_zeModuleCreate(ctx, dev, &md, &mod, NULL));
    ze_kernel_desc_t kd = {ZE_STRUCTURE_TYPE_KERNEL_DESC, NULL, 0, "vector_add"};
    ze_kernel_handle_t k;
    CHECK(p_zeKernelCreate(mod, &kd, &k));
    CHECK(p_zeKernelSetGroupSize(k, 64, 1, 1));
    ze_device_mem_alloc_desc_t dd = {ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, NULL, 0, 0};
    ze_host_mem_alloc_desc_t hd = {ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, NULL, 0};
    float *buf;
    CHECK(p_zeMemAllocShared(ctx, &dd, &hd, 3 * 64 * sizeof(float), 64, dev, (void **)&buf));
    for (int i = 0; i < 128; i++)
        buf[i] = (float)i;
    float *a = buf, *b = buf + 64, *c = buf + 128;
    uint32_t cnt = 64;
    CHECK(p_zeKernelSetArgumentValue(k, 0, sizeof a, &a));
    CHECK(p_zeKernelSetArgumentValue(k, 1, sizeof b, &b));
    CHECK(p_zeKernelSetArgumentValue(k, 2, sizeof c, &c));
    CHECK(p_zeKernelSetArgumentValue(k, 3, sizeof cnt, &cnt));
    ze_command_queue_desc_t qd = {ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, NULL, 0, 0, 0,
                                  ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    ze_command_list_handle_t list;
    CHECK(p_zeCommandListCreateImmediate(ctx, dev, &qd, &list));
    ze_event_pool_desc_t pd = {ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, NULL, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1};
    ze_event_pool_handle_t pool;
    CHECK(p_zeEventPoolCreate(ctx, &pd, 1, &dev, &pool));
    ze_event_desc_t ed = {ZE_STRUCTURE_TYPE_EVENT_DESC, NULL, 0, ZE_EVENT_SCOPE_FLAG_HOST, ZE_EVENT_SCOPE_FLAG_HOST};
    ze_event_handle_t ev;
    CHECK(p_zeEventCreate(pool, &ed, &ev));
    ze_group_count_t g = {1, 1, 1};
    CHECK(p_zeCommandListAppendLaunchKernel(list, k, &g, NULL, 0, NULL));
    CHECK(p_zeCommandListAppendBarrier(list, ev, 0, NULL));
    CHECK(p_zeEventHostSynchronize(ev, UINT64_MAX));
    if (c[63] != 63.0f + 127.0f) {
        fprintf(stderr, "ze_dlopen: vector_add gave %f, expected 190\n", (double)c[63]);
        return 1;
    }
    printf("ze_dlopen: vector_add done\n");
    return 0;
}
