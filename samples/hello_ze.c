/* hello_ze.c - a plain Level Zero "hello world" (tutorial style, no simdev-specific formats):
 * discover a GPU, load a hand-assembled SPIR-V vector_add kernel, run it, copy back, check.
 * usage: hello_ze [--dump-spirv]   (the option writes the SPIR-V binary to stdout and exits) */
#include <level_zero/ze_api.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                  \
    do {                                                                             \
        ze_result_t r_ = (call);                                                     \
        if (r_ != ZE_RESULT_SUCCESS) {                                               \
            fprintf(stderr, "hello_ze: %s failed with 0x%x (line %d)\n", #call,      \
                    (unsigned)r_, __LINE__);                                         \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

/* OpenCL C equivalent:
 *   kernel void vector_add(global const float *a, global const float *b, global float *c, uint n)
 *   { size_t i = get_global_id(0); if (i < n) c[i] = a[i] + b[i]; }
 * SPIR-V 1.0, ids: 1 u64, 2 v3u64, 3 Input*v3u64, 4 void, 5 f32, 6 global f32*, 7 u32, 8 bool,
 * 9 fn type, 10 GlobalInvocationId var, 11 function, 12-15 params a b c n, 16 entry label,
 * 17-20 gid/i/n64/cond, 21 body label, 22-27 body, 28 merge label. */
static const uint32_t vector_add_spv[] = {
    0x07230203, 0x00010000, 0, 29, 0,                  /* magic, version 1.0, gen, bound, 0 */
    0x00020011, 4,                                     /* OpCapability Addresses */
    0x00020011, 6,                                     /* OpCapability Kernel */
    0x00020011, 11,                                    /* OpCapability Int64 */
    0x0003000E, 2, 2,                                  /* OpMemoryModel Physical64 OpenCL */
    0x0007000F, 6, 11, 0x74636576, 0x615f726f, 0x00006464, 10, /* OpEntryPoint Kernel "vector_add" */
    0x00040047, 10, 11, 28,                            /* OpDecorate %10 BuiltIn GlobalInvocationId */
    0x00030047, 10, 22,                                /* OpDecorate %10 Constant */
    0x00040015, 1, 64, 0,                              /* %1 = OpTypeInt 64 0 */
    0x00040017, 2, 1, 3,                               /* %2 = OpTypeVector %1 3 */
    0x00040020, 3, 1, 2,                               /* %3 = OpTypePointer Input %2 */
    0x00020013, 4,                                     /* %4 = OpTypeVoid */
    0x00030016, 5, 32,                                 /* %5 = OpTypeFloat 32 */
    0x00040020, 6, 5, 5,                               /* %6 = OpTypePointer CrossWorkgroup %5 */
    0x00040015, 7, 32, 0,                              /* %7 = OpTypeInt 32 0 */
    0x00020014, 8,                                     /* %8 = OpTypeBool */
    0x00070021, 9, 4, 6, 6, 6, 7,                      /* %9 = OpTypeFunction %4 %6 %6 %6 %7 */
    0x0004003B, 3, 10, 1,                              /* %10 = OpVariable %3 Input */
    0x00050036, 4, 11, 0, 9,                           /* %11 = OpFunction %4 None %9 */
    0x00030037, 6, 12, 0x00030037, 6, 13,              /* a, b */
    0x00030037, 6, 14, 0x00030037, 7, 15,              /* c, n */
    0x000200F8, 16,                                    /* OpLabel */
    0x0006003D, 2, 17, 10, 2, 32,                      /* %17 = OpLoad %2 %10 Aligned 32 */
    0x00050051, 1, 18, 17, 0,                          /* %18 = OpCompositeExtract %1 %17 0 */
    0x00040071, 1, 19, 15,                             /* %19 = OpUConvert %1 %15 */
    0x000500B0, 8, 20, 18, 19,                         /* %20 = OpULessThan %8 %18 %19 */
    0x000300F7, 28, 0,                                 /* OpSelectionMerge %28 None */
    0x000400FA, 20, 21, 28,                            /* OpBranchConditional %20 %21 %28 */
    0x000200F8, 21,                                    /* OpLabel */
    0x00050046, 6, 22, 12, 18,                         /* %22 = OpInBoundsPtrAccessChain %6 %12 %18 */
    0x0006003D, 5, 23, 22, 2, 4,                       /* %23 = OpLoad %5 %22 Aligned 4 */
    0x00050046, 6, 24, 13, 18,                         /* %24 = &b[i] */
    0x0006003D, 5, 25, 24, 2, 4,                       /* %25 = b[i] */
    0x00050081, 5, 26, 23, 25,                         /* %26 = OpFAdd %5 %23 %25 */
    0x00050046, 6, 27, 14, 18,                         /* %27 = &c[i] */
    0x0005003E, 27, 26, 2, 4,                          /* OpStore %27 %26 Aligned 4 */
    0x000200F9, 28,                                    /* OpBranch %28 */
    0x000200F8, 28,                                    /* OpLabel */
    0x000100FD,                                        /* OpReturn */
    0x00010038,                                        /* OpFunctionEnd */
};

#define N 1024

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--dump-spirv") == 0) {
        fwrite(vector_add_spv, sizeof(vector_add_spv), 1, stdout);
        return 0;
    }
    CHECK(zeInit(0));
    uint32_t ndrivers = 0;
    CHECK(zeDriverGet(&ndrivers, NULL));
    ze_driver_handle_t *drivers = calloc(ndrivers, sizeof(*drivers));
    CHECK(zeDriverGet(&ndrivers, drivers));

    /* first GPU device of any driver */
    ze_driver_handle_t driver = NULL;
    ze_device_handle_t device = NULL;
    ze_device_properties_t props = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
    for (uint32_t d = 0; d < ndrivers && !device; d++) {
        uint32_t ndev = 0;
        CHECK(zeDeviceGet(drivers[d], &ndev, NULL));
        ze_device_handle_t *devs = calloc(ndev, sizeof(*devs));
        CHECK(zeDeviceGet(drivers[d], &ndev, devs));
        for (uint32_t i = 0; i < ndev && !device; i++) {
            CHECK(zeDeviceGetProperties(devs[i], &props));
            if (props.type == ZE_DEVICE_TYPE_GPU) {
                driver = drivers[d];
                device = devs[i];
            }
        }
        free(devs);
    }
    free(drivers);
    if (!device) {
        fprintf(stderr, "hello_ze: no GPU device found\n");
        return 1;
    }
    printf("hello_ze: running on %s\n", props.name);

    ze_context_desc_t ctx_desc = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
    ze_context_handle_t context;
    CHECK(zeContextCreate(driver, &ctx_desc, &context));

    ze_module_desc_t mod_desc = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                                 .format = ZE_MODULE_FORMAT_IL_SPIRV,
                                 .inputSize = sizeof(vector_add_spv),
                                 .pInputModule = (const uint8_t *)vector_add_spv};
    ze_module_handle_t module;
    ze_module_build_log_handle_t log;
    ze_result_t r = zeModuleCreate(context, device, &mod_desc, &module, &log);
    if (r != ZE_RESULT_SUCCESS) {
        size_t sz = 0;
        zeModuleBuildLogGetString(log, &sz, NULL);
        char *text = calloc(1, sz + 1);
        zeModuleBuildLogGetString(log, &sz, text);
        fprintf(stderr, "hello_ze: module build failed (0x%x): %s\n", (unsigned)r, text);
        return 1;
    }
    CHECK(zeModuleBuildLogDestroy(log));

    ze_kernel_desc_t kern_desc = {.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC,
                                  .pKernelName = "vector_add"};
    ze_kernel_handle_t kernel;
    CHECK(zeKernelCreate(module, &kern_desc, &kernel));
    uint32_t gx = 1, gy = 1, gz = 1;
    CHECK(zeKernelSuggestGroupSize(kernel, N, 1, 1, &gx, &gy, &gz));
    CHECK(zeKernelSetGroupSize(kernel, gx, gy, gz));

    float a[N], b[N], c[N];
    for (int i = 0; i < N; i++) {
        a[i] = (float)i;
        b[i] = (float)(2 * i);
        c[i] = -1.0f;
    }
    ze_device_mem_alloc_desc_t mem_desc = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
    void *da, *db, *dc;
    CHECK(zeMemAllocDevice(context, &mem_desc, sizeof(a), 4, device, &da));
    CHECK(zeMemAllocDevice(context, &mem_desc, sizeof(b), 4, device, &db));
    CHECK(zeMemAllocDevice(context, &mem_desc, sizeof(c), 4, device, &dc));
    uint32_t n = N;
    CHECK(zeKernelSetArgumentValue(kernel, 0, sizeof(da), &da));
    CHECK(zeKernelSetArgumentValue(kernel, 1, sizeof(db), &db));
    CHECK(zeKernelSetArgumentValue(kernel, 2, sizeof(dc), &dc));
    CHECK(zeKernelSetArgumentValue(kernel, 3, sizeof(n), &n));

    ze_command_queue_desc_t queue_desc = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                          .ordinal = 0,
                                          .index = 0,
                                          .mode = ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS};
    ze_command_list_handle_t cmdlist;
    CHECK(zeCommandListCreateImmediate(context, device, &queue_desc, &cmdlist));
    ze_event_pool_desc_t pool_desc = {.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC,
                                      .flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
                                      .count = 1};
    ze_event_pool_handle_t pool;
    CHECK(zeEventPoolCreate(context, &pool_desc, 1, &device, &pool));
    ze_event_desc_t ev_desc = {.stype = ZE_STRUCTURE_TYPE_EVENT_DESC,
                               .signal = ZE_EVENT_SCOPE_FLAG_HOST,
                               .wait = ZE_EVENT_SCOPE_FLAG_HOST};
    ze_event_handle_t done;
    CHECK(zeEventCreate(pool, &ev_desc, &done));

    ze_group_count_t groups = {N / gx, 1, 1};
    CHECK(zeCommandListAppendMemoryCopy(cmdlist, da, a, sizeof(a), NULL, 0, NULL));
    CHECK(zeCommandListAppendMemoryCopy(cmdlist, db, b, sizeof(b), NULL, 0, NULL));
    CHECK(zeCommandListAppendBarrier(cmdlist, NULL, 0, NULL));
    CHECK(zeCommandListAppendLaunchKernel(cmdlist, kernel, &groups, NULL, 0, NULL));
    CHECK(zeCommandListAppendBarrier(cmdlist, NULL, 0, NULL));
    CHECK(zeCommandListAppendMemoryCopy(cmdlist, c, dc, sizeof(c), done, 0, NULL));
    CHECK(zeEventHostSynchronize(done, UINT64_MAX));

    int errors = 0;
    for (int i = 0; i < N; i++)
        if (c[i] != a[i] + b[i]) {
            if (!errors)
                fprintf(stderr, "hello_ze: c[%d] = %g, expected %g\n", i, (double)c[i],
                        (double)(a[i] + b[i]));
            errors++;
        }

    CHECK(zeEventDestroy(done));
    CHECK(zeEventPoolDestroy(pool));
    CHECK(zeCommandListDestroy(cmdlist));
    CHECK(zeMemFree(context, da));
    CHECK(zeMemFree(context, db));
    CHECK(zeMemFree(context, dc));
    CHECK(zeKernelDestroy(kernel));
    CHECK(zeModuleDestroy(module));
    CHECK(zeContextDestroy(context));
    if (errors) {
        printf("hello_ze: FAILED (%d wrong)\n", errors);
        return 1;
    }
    printf("hello_ze: vector_add of %d elements PASSED\n", N);
    return 0;
}
