/* fidelity_mix.c - a mixed workload for the report recomputation test (test_recompute.py): nested
 * and cross-thread HGTX ranges, domains, a regular list recorded in one range and executed in
 * another, two devices, copies in every direction between every memory kind (pageable malloc
 * memory, USM host, device, shared), fills, barriers, kernels with static and dynamic shared local
 * memory, kernels ending before their launch call returns, OS-runtime waits, device allocations
 * left unfreed, and ranges still open at exit.
 * usage: fidelity_mix [mix|syncappend|openproj]   (needs two devices: simdev's default)
 *   mix        : all of the above (default)
 *   syncappend : kernels on a synchronous immediate list: each ends before its append returns
 *   openproj   : "closed" and "open" push/pop ranges with a kernel each; "open" never popped */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <profagent/hgtx.h>

#include "common.h"

#define BUF 65536u

static sample_env_t env;
static ze_kernel_handle_t busy0, busy1, tile;
static ze_command_list_handle_t l0, l0b, lc, l1;
static ze_event_pool_handle_t pool;
static ze_event_handle_t ev[4];

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    nanosleep(&ts, NULL);
}

/* busy_ns kernel of `ns` device time on list (group count gx, group size set on the kernel) */
static void busy(ze_kernel_handle_t k, ze_command_list_handle_t list, uint64_t ns, uint32_t gx)
{
    ze_group_count_t g = {gx, 1, 1};
    sample_set_arg(k, 0, sizeof ns, &ns);
    SAMPLE_CHECK(zeCommandListAppendLaunchKernel(list, k, &g, NULL, 0, NULL));
}

/* Waits for what list `i` of (l0, l0b, lc, l1) was given: a barrier signalling ev[i]. */
static void sync_list(ze_command_list_handle_t list, int i)
{
    SAMPLE_CHECK(zeCommandListAppendBarrier(list, ev[i], 0, NULL));
    SAMPLE_CHECK(zeEventHostSynchronize(ev[i], UINT64_MAX));
    SAMPLE_CHECK(zeEventHostReset(ev[i]));
}

static void copy(ze_command_list_handle_t list, void *dst, const void *src, size_t n)
{
    SAMPLE_CHECK(zeCommandListAppendMemoryCopy(list, dst, src, n, NULL, 0, NULL));
}

static void fill(ze_command_list_handle_t list, void *dst, size_t n, uint32_t pattern)
{
    SAMPLE_CHECK(zeCommandListAppendMemoryFill(list, dst, &pattern, sizeof pattern, n, NULL, 0, NULL));
}

/* every copy direction between every kind, on the copy engine and the compute engine, and fills */
static void transfers(void *pg, void *h, void *d0, void *d1, void *s)
{
    hgtxRangePushA("transfers");
    void *kinds[4] = {pg, h, d0, s};
    size_t n = 1024;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++) {
            copy(lc, (char *)kinds[b] + BUF / 2, kinds[a], n);
            n += 512;
        }
    copy(l0, d1, d0, 4096);   /* device 0 -> device 1 (P2P) */
    copy(l0, pg, h, 3000);
    sync_list(lc, 2);
    sync_list(l0, 0);
    fill(l0, d0, 8192, 0xabcdu);
    fill(l0, h, 2048, 7u);
    fill(lc, s, 4096, 1u);
    fill(l1, d1, 16384, 2u);
    sync_list(l0, 0);
    sync_list(lc, 2);
    sync_list(l1, 3);
    hgtxRangePop();
}

/* push/pop nesting with kernels of varied durations (fractional means and medians) */
static void nested(void)
{
    hgtxRangePushA("outer");
    for (int i = 0; i < 3; i++) {
        hgtxRangePushA("inner");
        for (int k = 0; k < 4; k++)
            busy(busy0, l0, 50000 + (uint64_t)(i * 4 + k) * 1237u, 1 + (uint32_t)k % 2);
        sync_list(l0, 0);
        hgtxRangePop();
    }
    busy(busy0, l0b, 70001, 4);
    sync_list(l0b, 1);
    hgtxRangePop();
}

/* a domain's push/pop and start/end ranges around work on device 1 */
static void domain_work(void)
{
    hgtxDomainHandle_t io = hgtxDomainCreateA("io");
    hgtxDomainRangePushA(io, "phase");
    hgtxRangeId_t x = hgtxDomainRangeStartA(io, "xfer");
    for (int k = 0; k < 3; k++)
        busy(busy1, l1, 30000 + (uint64_t)k * 777u, 2);
    sync_list(l1, 3);
    hgtxDomainRangeEnd(io, x);
    hgtxRangePushA("phase"); /* same name, default domain: another row */
    busy(busy1, l1, 41234, 1);
    sync_list(l1, 3);
    hgtxRangePop();
    hgtxDomainRangePop(io);
    hgtxDomainDestroy(io);
}

/* kernels with static (slm=2048 in the module) and dynamic (a 4096-byte local argument) SLM */
static void slm_work(void *d0)
{
    hgtxRangePushA("slm");
    sample_set_arg(tile, 0, sizeof d0, &d0);
    SAMPLE_CHECK(zeKernelSetArgumentValue(tile, 1, 4096, NULL));
    ze_group_count_t g = {8, 1, 1};
    SAMPLE_CHECK(zeCommandListAppendLaunchKernel(l0, tile, &g, NULL, 0, NULL));
    SAMPLE_CHECK(zeKernelSetArgumentValue(tile, 1, 1024, NULL));
    SAMPLE_CHECK(zeCommandListAppendLaunchKernel(l0, tile, &g, NULL, 0, NULL));
    sync_list(l0, 0);
    hgtxRangePop();
}

/* a regular list recorded in "record" (2 kernels, a barrier, a copy), executed 3 times in "exec"
 * (and once more outside any range) */
static void graph(void *d0, void *h)
{
    ze_device_handle_t dev = env.devices[0];
    ze_command_queue_handle_t q = sample_queue(&env, dev, 0, 2);
    ze_command_list_handle_t rl = sample_list(&env, dev, 0);
    hgtxRangePushA("record");
    busy(busy0, rl, 90000, 1);
    SAMPLE_CHECK(zeCommandListAppendBarrier(rl, NULL, 0, NULL));
    busy(busy0, rl, 60000, 2);
    copy(rl, h, d0, 2048);
    hgtxRangePop();
    SAMPLE_CHECK(zeCommandListClose(rl));
    hgtxRangePushA("exec");
    for (int i = 0; i < 3; i++) {
        SAMPLE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &rl, NULL));
        SAMPLE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
    }
    hgtxRangePop();
    SAMPLE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &rl, NULL));
    SAMPLE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
    SAMPLE_CHECK(zeCommandListDestroy(rl));
    SAMPLE_CHECK(zeCommandQueueDestroy(q));
}

/* start/end "xa" begun on main (3 kernels inside), ended on thread B right after B launched 2:
 * B exists before, so its end may be drained before main's launches; B also has a push/pop */
static sem_t go_b;
static hgtxRangeId_t xa;
static void *thread_b(void *arg)
{
    (void)arg;
    hgtxMarkA("b ready");
    while (sem_wait(&go_b) != 0)
        ;
    busy(busy0, l0b, 45000, 1);
    busy(busy0, l0b, 46001, 1);
    hgtxRangeEnd(xa);
    hgtxRangePushA("worker");
    busy(busy0, l0b, 33333, 1);
    sync_list(l0b, 1);
    hgtxRangePop();
    return NULL;
}

static void cross_thread(void)
{
    pthread_t b;
    sem_init(&go_b, 0, 0);
    pthread_create(&b, NULL, thread_b, NULL);
    sleep_ns(3000000);
    xa = hgtxRangeStartA("xa");
    for (int i = 0; i < 3; i++)
        busy(busy0, l0, 25000 + (uint64_t)i * 1001u, 1);
    sem_post(&go_b);
    pthread_join(b, NULL);
    sync_list(l0, 0);
}

/* Kernels that end before their launch call returns (a synchronous immediate list). */
static void syncappend(ze_device_handle_t d0)
{
    ze_command_queue_desc_t qd = {ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, NULL, 0, 3, 0,
                                  ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    ze_command_list_handle_t sl;
    SAMPLE_CHECK(zeCommandListCreateImmediate(env.context, d0, &qd, &sl));
    for (int i = 0; i < 3; i++)
        busy(busy0, sl, 200000, 1);
    SAMPLE_CHECK(zeCommandListDestroy(sl));
}

static void openproj(void)
{
    hgtxRangePushA("closed");
    busy(busy0, l0, 100000, 1);
    sync_list(l0, 0);
    hgtxRangePop();
    hgtxRangePushA("open");
    busy(busy0, l0, 150000, 1);
    sync_list(l0, 0);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "mix";
    if (strcmp(mode, "mix") && strcmp(mode, "syncappend") && strcmp(mode, "openproj"))
        sample_die("usage: %s [mix|syncappend|openproj] (got '%s')", argv[0], mode);
    sample_env_init(&env, 2);
    ze_device_handle_t d0 = env.devices[0], d1 = env.devices[1];
    /* static SLM (slm=): a driver without it still runs the rest (the comparison then fails) */
    static const char m0_text[] = "SIMDEV-MODULE 1\nkernel busy_ns\nkernel tile slm=2048 base_ns=20000\n";
    ze_module_desc_t md = {ZE_STRUCTURE_TYPE_MODULE_DESC, NULL, ZE_MODULE_FORMAT_NATIVE, sizeof m0_text - 1,
                           (const uint8_t *)m0_text, NULL, NULL};
    ze_module_handle_t m0;
    if (zeModuleCreate(env.context, d0, &md, &m0, NULL) != ZE_RESULT_SUCCESS) {
        fprintf(stderr, "fidelity_mix: the driver refuses slm=; tile without static SLM\n");
        m0 = sample_module_native(&env, d0, "SIMDEV-MODULE 1\nkernel busy_ns\nkernel tile base_ns=20000\n");
    }
    ze_module_handle_t m1 = sample_module_native(&env, d1, "SIMDEV-MODULE 1\nkernel busy_ns\n");
    busy0 = sample_kernel(m0, "busy_ns", 1);
    busy1 = sample_kernel(m1, "busy_ns", 1);
    tile = sample_kernel(m0, "tile", 64);
    l0 = sample_immediate(&env, d0, 0, 0);
    l0b = sample_immediate(&env, d0, 0, 1);
    lc = sample_immediate(&env, d0, 1, 0);
    l1 = sample_immediate(&env, d1, 0, 0);
    pool = sample_event_pool(&env, 4, 0);
    for (uint32_t i = 0; i < 4; i++)
        ev[i] = sample_event(pool, i);
    void *pg = malloc(BUF), *h = sample_alloc_host(&env, BUF), *dv0 = sample_alloc_device(&env, d0, BUF);
    void *dv1 = sample_alloc_device(&env, d1, BUF), *s = sample_alloc_shared(&env, d0, BUF);
    void *leak = sample_alloc_device(&env, d1, 12345);
    memset(pg, 1, BUF);
    if (!strcmp(mode, "syncappend") || !strcmp(mode, "openproj")) {
        if (*mode == 's')
            syncappend(d0);
        else
            openproj();
        free(pg);
        printf("fidelity_mix %s: OK\n", mode);
        return 0;
    }

    hgtxRangePushA("main");
    transfers(pg, h, dv0, dv1, s);
    nested();
    domain_work();
    slm_work(dv0);
    graph(dv0, h);
    cross_thread();
    syncappend(d0); /* kernels that end before their launch call returns */
    sleep_ns(2000000);
    hgtxRangePop();

    /* still open at exit: a push/pop with a kernel inside and a start/end */
    hgtxRangeStartA("open-se");
    hgtxRangePushA("left-open");
    busy(busy0, l0, 20000, 1);
    sync_list(l0, 0);

    SAMPLE_CHECK(zeMemFree(env.context, s));
    SAMPLE_CHECK(zeMemFree(env.context, dv1));
    (void)leak; /* left allocated: device_memory_usage_* rows */
    free(pg);
    printf("fidelity_mix: OK\n");
    return 0;
}
