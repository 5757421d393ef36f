/* leaks.c - sample: leaks known amounts of device memory from two call paths (libfoo's
 * LaunchKernel, libbar's bar_make_buffer), frees an allocation on another thread, frees an
 * unknown pointer and tries a too-large allocation. Prints what it leaked.  usage: leaks */
#include "common.h"
#include "leaks_libs.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define FOO_COUNT 4
#define FOO_BYTES (1u << 20)          /* 1 MiB each; the first is freed: 3 MiB leaked */
#define BAR_COUNT 3
#define BAR_BYTES (256u << 10)        /* 256 KiB each; the last is freed: 512 KiB leaked */
#define OTHER_THREAD_BYTES (64u << 10)

static const char *MODULE_TEXT = "SIMDEV-MODULE 1\nkernel fill_u32\n";

typedef struct free_job { ze_context_handle_t ctx; void *p; ze_result_t r; } free_job_t;

static void *free_on_thread(void *arg)
{
    free_job_t *j = arg;
    j->r = zeMemFree(j->ctx, j->p);
    return NULL;
}

/* Copies buf back and checks all its words are `value`. */
static int check_fill(const sample_env_t *env, ze_command_list_handle_t list,
                      ze_event_handle_t done, const void *buf, uint32_t value)
{
    static uint32_t host[FOO_BYTES / 4];
    SAMPLE_CHECK(zeCommandListAppendMemoryCopy(list, host, buf, FOO_BYTES, done, 0, NULL));
    SAMPLE_CHECK(zeEventHostSynchronize(done, UINT64_MAX));
    SAMPLE_CHECK(zeEventHostReset(done));
    (void)env;
    for (uint32_t i = 0; i < FOO_BYTES / 4; i++)
        if (host[i] != value) {
            fprintf(stderr, "leaks: fill_u32 wrote %u at word %u, want %u\n", host[i], i, value);
            return 1;
        }
    return 0;
}

int main(void)
{
    sample_env_t env;
    sample_env_init(&env, 1);
    ze_device_handle_t dev = env.devices[0];
    ze_module_handle_t mod = sample_module_native(&env, dev, MODULE_TEXT);
    ze_kernel_handle_t fill = sample_kernel(mod, "fill_u32", 64);
    ze_command_list_handle_t list = sample_immediate(&env, dev, 0, 0);
    ze_event_pool_handle_t pool = sample_event_pool(&env, 1, 0);
    ze_event_handle_t done = sample_event(pool, 0);
    int bad = 0;

    void *foo[FOO_COUNT], *bar[BAR_COUNT];
    for (uint32_t i = 0; i < FOO_COUNT; i++) {
        foo[i] = LaunchKernel(env.context, dev, list, fill, FOO_BYTES, 100 + i);
        if (!foo[i])
            sample_die("LaunchKernel %u failed", i);
        SAMPLE_CHECK(zeCommandListAppendBarrier(list, NULL, 0, NULL));
    }
    for (uint32_t i = 0; i < FOO_COUNT; i++)
        bad |= check_fill(&env, list, done, foo[i], 100 + i);
    for (uint32_t i = 0; i < BAR_COUNT; i++)
        if (!(bar[i] = bar_make_buffer(env.context, dev, BAR_BYTES)))
            sample_die("bar_make_buffer %u failed", i);
    SAMPLE_CHECK(zeMemFree(env.context, foo[0]));
    SAMPLE_CHECK(bar_release(env.context, bar[BAR_COUNT - 1]));

    /* an allocation made here and freed by another thread: not a leak */
    free_job_t job = {env.context, sample_alloc_device(&env, dev, OTHER_THREAD_BYTES),
                      ZE_RESULT_ERROR_UNKNOWN};
    pthread_t th;
    if (pthread_create(&th, NULL, free_on_thread, &job) != 0)
        sample_die("pthread_create failed");
    pthread_join(th, NULL);
    SAMPLE_CHECK(job.r);

    /* a pointer the driver never returned: the result is reported, not fatal */
    static char not_device_memory[64];
    ze_result_t r = zeMemFree(env.context, not_device_memory);
    printf("leaks: zeMemFree(unknown pointer) -> %s\n", sample_result_name(r));

    /* more than the device has: must fail */
    ze_device_memory_properties_t mp = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES};
    uint32_t nmem = 1;
    SAMPLE_CHECK(zeDeviceGetMemoryProperties(dev, &nmem, &mp));
    ze_device_mem_alloc_desc_t dd = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
    void *huge = NULL;
    r = zeMemAllocDevice(env.context, &dd, mp.totalSize * 2, 64, dev, &huge);
    printf("leaks: zeMemAllocDevice(%llu bytes, 2x device memory) -> %s\n",
           (unsigned long long)(mp.totalSize * 2), sample_result_name(r));
    if (r == ZE_RESULT_SUCCESS) {
        fprintf(stderr, "leaks: a too-large allocation succeeded\n");
        zeMemFree(env.context, huge);
        bad = 1;
    }

    SAMPLE_CHECK(zeEventDestroy(done));
    SAMPLE_CHECK(zeEventPoolDestroy(pool));
    SAMPLE_CHECK(zeCommandListDestroy(list));
    SAMPLE_CHECK(zeKernelDestroy(fill));
    SAMPLE_CHECK(zeModuleDestroy(mod));
    /* The context stays alive on purpose: the leaked buffers are still allocated at exit. */
    unsigned long long foo_leak = (FOO_COUNT - 1) * (unsigned long long)FOO_BYTES;
    unsigned long long bar_leak = (BAR_COUNT - 1) * (unsigned long long)BAR_BYTES;
    printf("leaks: leaked libfoo LaunchKernel %llu bytes in %u allocations\n", foo_leak,
           FOO_COUNT - 1);
    printf("leaks: leaked libbar bar_make_buffer %llu bytes in %u allocations\n", bar_leak,
           BAR_COUNT - 1);
    printf("leaks: leaked total %llu bytes in %u allocations\n", foo_leak + bar_leak,
           FOO_COUNT + BAR_COUNT - 2);
    return bad;
}
