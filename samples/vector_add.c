/* vector_add.c - sample: H2D copies, vector_add kernel, D2D copy, fill, D2H copies; checks c = a + b.
 * usage: vector_add [N]   (N floats, default 65536) */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *MODULE_TEXT = "SIMDEV-MODULE 1\nkernel vector_add\n";
#define FILL_VALUE 7.5f

/* Checks that zeMemGetAllocProperties knows p as device memory of dev. */
static void check_alloc_props(const sample_env_t *env, ze_device_handle_t dev, void *p)
{
    ze_memory_allocation_properties_t mp = {.stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES};
    ze_device_handle_t owner = NULL;
    SAMPLE_CHECK(zeMemGetAllocProperties(env->context, (char *)p + 4, &mp, &owner));
    if (mp.type != ZE_MEMORY_TYPE_DEVICE || owner != dev)
        sample_die("zeMemGetAllocProperties: type %d owner %p, want DEVICE of %p", (int)mp.type,
                   (void *)owner, (void *)dev);
}

int main(int argc, char **argv)
{
    uint32_t n = (uint32_t)sample_arg_u64(argc, argv, 1, "N (element count)", 65536, 1, 1u << 26);
    size_t bytes = (size_t)n * sizeof(float);
    sample_env_t env;
    sample_env_init(&env, 1);
    ze_device_handle_t dev = env.devices[0];

    /* a comes from USM host memory, b and the results from ordinary (pageable) malloc memory */
    float *a = sample_alloc_host(&env, bytes);
    float *b = malloc(bytes), *c = malloc(bytes), *filled = malloc(bytes), *want = malloc(bytes);
    if (!b || !c || !filled || !want)
        sample_die("out of host memory");
    for (uint32_t i = 0; i < n; i++) {
        a[i] = (float)(i % 1000);
        b[i] = 0.5f * (float)(i % 77);
        want[i] = a[i] + b[i];
    }
    float *da = sample_alloc_device(&env, dev, bytes), *db = sample_alloc_device(&env, dev, bytes);
    float *dc = sample_alloc_device(&env, dev, bytes), *dd = sample_alloc_device(&env, dev, bytes);
    float *dfill = sample_alloc_device(&env, dev, bytes);
    check_alloc_props(&env, dev, da);

    ze_module_handle_t mod = sample_module_native(&env, dev, MODULE_TEXT);
    ze_kernel_handle_t k = sample_kernel(mod, "vector_add", 64);
    sample_set_arg(k, 0, sizeof(da), &da);
    sample_set_arg(k, 1, sizeof(db), &db);
    sample_set_arg(k, 2, sizeof(dc), &dc);
    sample_set_arg(k, 3, sizeof(n), &n);

    ze_command_list_handle_t copy = sample_immediate(&env, dev, 1, 0);
    ze_command_list_handle_t comp = sample_immediate(&env, dev, 0, 0);
    ze_event_pool_handle_t pool = sample_event_pool(&env, 4, 0);
    ze_event_handle_t ev[4];
    for (uint32_t i = 0; i < 4; i++)
        ev[i] = sample_event(pool, i);

    /* copy engine: H2D; compute engine: kernel, fill, D2D; copy engine: D2H. Events order them. */
    SAMPLE_CHECK(zeCommandListAppendMemoryCopy(copy, da, a, bytes, NULL, 0, NULL));
    SAMPLE_CHECK(zeCommandListAppendMemoryCopy(copy, db, b, bytes, NULL, 0, NULL));
    SAMPLE_CHECK(zeCommandListAppendBarrier(copy, ev[0], 0, NULL));
    ze_group_count_t gc = {(n + 63) / 64, 1, 1};
    SAMPLE_CHECK(zeCommandListAppendLaunchKernel(comp, k, &gc, ev[1], 1, &ev[0]));
    float pattern = FILL_VALUE;
    SAMPLE_CHECK(zeCommandListAppendMemoryFill(comp, dfill, &pattern, sizeof(pattern), bytes,
                                               NULL, 0, NULL));
    SAMPLE_CHECK(zeCommandListAppendMemoryCopy(comp, dd, dc, bytes, NULL, 1, &ev[1]));
    SAMPLE_CHECK(zeCommandListAppendBarrier(comp, ev[2], 0, NULL));
    SAMPLE_CHECK(zeCommandListAppendMemoryCopy(copy, c, dd, bytes, NULL, 1, &ev[2]));
    SAMPLE_CHECK(zeCommandListAppendMemoryCopy(copy, filled, dfill, bytes, NULL, 1, &ev[2]));
    SAMPLE_CHECK(zeCommandListAppendBarrier(copy, ev[3], 0, NULL));
    SAMPLE_CHECK(zeEventHostSynchronize(ev[3], UINT64_MAX));

    for (uint32_t i = 0; i < n; i++)
        want[i] = FILL_VALUE;
    size_t bad = sample_check_floats("fill", filled, want, n, 0.0f);
    for (uint32_t i = 0; i < n; i++)
        want[i] = a[i] + b[i];
    bad += sample_check_floats("vector_add (via D2D copy)", c, want, n, 0.0f);

    for (uint32_t i = 0; i < 4; i++)
        SAMPLE_CHECK(zeEventDestroy(ev[i]));
    SAMPLE_CHECK(zeEventPoolDestroy(pool));
    SAMPLE_CHECK(zeCommandListDestroy(copy));
    SAMPLE_CHECK(zeCommandListDestroy(comp));
    SAMPLE_CHECK(zeKernelDestroy(k));
    SAMPLE_CHECK(zeModuleDestroy(mod));
    void *bufs[] = {da, db, dc, dd, dfill, a};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        SAMPLE_CHECK(zeMemFree(env.context, bufs[i]));
    free(b); free(c); free(filled); free(want);
    sample_env_fini(&env);
    if (bad)
        return 1;
    printf("vector_add: %u elements OK (H2D %zu B x2, D2D %zu B, fill %zu B, D2H %zu B x2)\n", n,
           bytes, bytes, bytes, bytes);
    return 0;
}
