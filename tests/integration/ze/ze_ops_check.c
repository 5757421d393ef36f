/* ze_ops_check.c - Level Zero scenarios with hand-computable device activity for test_ze.py.
 * usage: ze_ops_check devices|copies|reexec|devreset|names|ipc|many N
 *   devices  : 2 devices x 2 engines, one busy kernel of 200 ms per engine, all overlapping
 *              (each waits for one gate event the host signals after the four appends);
 *              device 0 runs "busy_d0", device 1 "busy_d1"
 *   copies   : on device 0: H2D 4096 (host USM) + 1000 (pageable), D2H 8192, D2D 3000,
 *              copy region 16x8 D2D (128 bytes), S2D 256, fills 512 and 2048 (no app events)
 *   reexec   : a regular list of 3 busy kernels (200 us) executed 5 times back-to-back, one sync
 *   devreset : immediate list: busy 2 ms signals app event E, AppendEventReset(E) queued behind
 *              it, busy 100 us signals E again; the host waits only for the end
 *   names    : kernels whose names demangle: _Z10vector_addPKfS0_Pfj x3, _ZN2ns4busyEm x2 (50 us)
 *   ipc      : an IPC event pool (no KERNEL_TIMESTAMP allowed with it): busy_ipc (100 us) signals its
 *              event, busy_plain (100 us) none; one op without device times, one with
 *   many N   : N rounds on device 0 of an H2D copy (host USM; 4 KiB, every 4th round 64 KiB) and
 *              busy_many (2 us, every 4th round 20 us), drained every 64 rounds: medians unlike the means
 * Exits 0 when every call succeeded. */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ze_kernel_handle_t busy(const sample_env_t *env, ze_device_handle_t dev, const char *name,
                               uint64_t ns)
{
    char text[256];
    snprintf(text, sizeof text, "SIMDEV-MODULE 1\nkernel %s builtin=busy_ns\n", name);
    ze_kernel_handle_t k = sample_kernel(sample_module_native(env, dev, text), name, 1);
    sample_set_arg(k, 0, sizeof ns, &ns);
    return k;
}

/* Waits for everything appended to an immediate list so far: a barrier signalling ev. */
static void drain(ze_command_list_handle_t l, ze_event_handle_t ev)
{
    SAMPLE_CHECK(zeCommandListAppendBarrier(l, ev, 0, NULL));
    SAMPLE_CHECK(zeEventHostSynchronize(ev, UINT64_MAX));
    SAMPLE_CHECK(zeEventHostReset(ev));
}

/* The four kernels start together however late the host's appends are: each waits for the gate
 * (launched one after the other, a host thread preempted 32 ms between two appends on a loaded
 * machine left one 20 ms kernel after the others); only the engines' own wake-ups set them apart. */
static int run_devices(sample_env_t *env)
{
    ze_event_pool_handle_t pool = sample_event_pool(env, 5, 1);
    ze_command_list_handle_t l[4];
    ze_event_handle_t ev[4], gate = sample_event(pool, 4);
    for (uint32_t i = 0; i < 4; i++) {
        ze_device_handle_t dev = env->devices[i / 2];
        l[i] = sample_immediate(env, dev, 0, i % 2);
        ev[i] = sample_event(pool, i);
    }
    ze_kernel_handle_t k0 = busy(env, env->devices[0], "busy_d0", 200000000);
    ze_kernel_handle_t k1 = busy(env, env->devices[1], "busy_d1", 200000000);
    ze_group_count_t g = {1, 1, 1};
    for (uint32_t i = 0; i < 4; i++)
        SAMPLE_CHECK(zeCommandListAppendLaunchKernel(l[i], i < 2 ? k0 : k1, &g, NULL, 1, &gate));
    SAMPLE_CHECK(zeEventHostSignal(gate));
    for (uint32_t i = 0; i < 4; i++)
        drain(l[i], ev[i]);
    return 0;
}

static int run_copies(sample_env_t *env)
{
    ze_device_handle_t dev = env->devices[0];
    ze_command_list_handle_t l = sample_immediate(env, dev, 0, 0);
    ze_event_pool_handle_t pool = sample_event_pool(env, 1, 1);
    ze_event_handle_t ev = sample_event(pool, 0);
    char *h = sample_alloc_host(env, 8192), *d1 = sample_alloc_device(env, dev, 8192);
    char *d2 = sample_alloc_device(env, dev, 8192), *s = sample_alloc_shared(env, dev, 256);
    char *pageable = malloc(1000);
    if (!pageable)
        sample_die("out of host memory");
    memset(pageable, 7, 1000);
    SAMPLE_CHECK(zeCommandListAppendMemoryCopy(l, d1, h, 4096, NULL, 0, NULL));
    SAMPLE_CHECK(zeCommandListAppendMemoryCopy(l, d1, pageable, 1000, NULL, 0, NULL));
    SAMPLE_CHECK(zeCommandListAppendMemoryCopy(l, h, d1, 8192, NULL, 0, NULL));
    SAMPLE_CHECK(zeCommandListAppendMemoryCopy(l, d2, d1, 3000, NULL, 0, NULL));
    ze_copy_region_t r = {0, 0, 0, 16, 8, 1};
    SAMPLE_CHECK(zeCommandListAppendMemoryCopyRegion(l, d2, &r, 64, 0, d1, &r, 64, 0, NULL, 0, NULL));
    SAMPLE_CHECK(zeCommandListAppendMemoryCopy(l, d2, s, 256, NULL, 0, NULL));
    uint32_t pat = 0xabcdef01u;
    SAMPLE_CHECK(zeCommandListAppendMemoryFill(l, d1, &pat, sizeof pat, 512, NULL, 0, NULL));
    SAMPLE_CHECK(zeCommandListAppendMemoryFill(l, d2, &pat, 1, 2048, NULL, 0, NULL));
    drain(l, ev);
    free(pageable);
    return 0;
}

static int run_reexec(sample_env_t *env)
{
    ze_device_handle_t dev = env->devices[0];
    ze_command_queue_handle_t q = sample_queue(env, dev, 0, 0);
    ze_command_list_handle_t l = sample_list(env, dev, 0);
    ze_kernel_handle_t k = busy(env, dev, "busy_ns", 200000);
    for (int i = 0; i < 3; i++)
        sample_launch_1d(l, k, 1, 1, NULL);
    SAMPLE_CHECK(zeCommandListClose(l));
    for (int x = 0; x < 5; x++)
        SAMPLE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &l, NULL));
    SAMPLE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
    return 0;
}

static int run_devreset(sample_env_t *env)
{
    ze_device_handle_t dev = env->devices[0];
    ze_command_list_handle_t l = sample_immediate(env, dev, 0, 0);
    ze_event_pool_handle_t pool = sample_event_pool(env, 2, 1);
    ze_event_handle_t e = sample_event(pool, 0), done = sample_event(pool, 1);
    ze_kernel_handle_t k2ms = busy(env, dev, "busy_2ms", 2000000);
    ze_kernel_handle_t k100 = busy(env, dev, "busy_100us", 100000);
    sample_launch_1d(l, k2ms, 1, 1, e);
    SAMPLE_CHECK(zeCommandListAppendEventReset(l, e));
    sample_launch_1d(l, k100, 1, 1, e);
    drain(l, done);
    return 0;
}

static int run_names(sample_env_t *env)
{
    ze_device_handle_t dev = env->devices[0];
    ze_command_list_handle_t l = sample_immediate(env, dev, 0, 0);
    ze_event_pool_handle_t pool = sample_event_pool(env, 1, 1);
    ze_event_handle_t ev = sample_event(pool, 0);
    ze_module_handle_t m = sample_module_native(env, dev,
        "SIMDEV-MODULE 1\nkernel _Z10vector_addPKfS0_Pfj\nkernel _ZN2ns4busyEm builtin=busy_ns\n");
    ze_kernel_handle_t va = sample_kernel(m, "_Z10vector_addPKfS0_Pfj", 64);
    ze_kernel_handle_t b = sample_kernel(m, "_ZN2ns4busyEm", 1);
    float *x = sample_alloc_shared(env, dev, 256 * sizeof(float));
    uint32_t n = 256;
    sample_set_arg(va, 0, sizeof x, &x);
    sample_set_arg(va, 1, sizeof x, &x);
    sample_set_arg(va, 2, sizeof x, &x);
    sample_set_arg(va, 3, sizeof n, &n);
    uint64_t ns = 50000;
    sample_set_arg(b, 0, sizeof ns, &ns);
    for (int i = 0; i < 3; i++)
        sample_launch_1d(l, va, 256, 64, NULL);
    for (int i = 0; i < 2; i++)
        sample_launch_1d(l, b, 1, 1, NULL);
    drain(l, ev);
    return 0;
}

static int run_ipc(sample_env_t *env)
{
    ze_device_handle_t dev = env->devices[0];
    ze_command_list_handle_t l = sample_immediate(env, dev, 0, 0);
    ze_event_pool_desc_t pd = {ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, NULL,
                               ZE_EVENT_POOL_FLAG_HOST_VISIBLE | ZE_EVENT_POOL_FLAG_IPC, 2};
    ze_event_pool_handle_t pool;
    SAMPLE_CHECK(zeEventPoolCreate(env->context, &pd, 1, &dev, &pool));
    ze_event_handle_t e = sample_event(pool, 0), done = sample_event(pool, 1);
    sample_launch_1d(l, busy(env, dev, "busy_ipc", 100000), 1, 1, e);
    sample_launch_1d(l, busy(env, dev, "busy_plain", 100000), 1, 1, NULL);
    drain(l, done);
    return 0;
}

static unsigned long many_rounds = 1000;

static int run_many(sample_env_t *env)
{
    ze_device_handle_t dev = env->devices[0];
    ze_command_list_handle_t l = sample_immediate(env, dev, 0, 0);
    ze_event_handle_t ev = sample_event(sample_event_pool(env, 1, 1), 0);
    char *h = sample_alloc_host(env, 65536), *d = sample_alloc_device(env, dev, 65536);
    ze_kernel_handle_t k = busy(env, dev, "busy_many", 2000);
    for (unsigned long i = 0; i < many_rounds; i++) {
        uint64_t ns = i % 4 == 3 ? 20000 : 2000;
        sample_set_arg(k, 0, sizeof ns, &ns);
        SAMPLE_CHECK(zeCommandListAppendMemoryCopy(l, d, h, i % 4 == 3 ? 65536 : 4096, NULL, 0, NULL));
        sample_launch_1d(l, k, 1, 1, NULL);
        if (i % 64 == 63)
            drain(l, ev);
    }
    drain(l, ev);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct { const char *name; int (*fn)(sample_env_t *); uint32_t ndev; } modes[] = {
        {"devices", run_devices, 2}, {"copies", run_copies, 1}, {"reexec", run_reexec, 1},
        {"devreset", run_devreset, 1}, {"names", run_names, 1}, {"ipc", run_ipc, 1}, {"many", run_many, 1}};
    if (argc == 3 && !strcmp(argv[1], "many"))
        many_rounds = strtoul(argv[2], NULL, 10);
    for (size_t i = 0; (argc == 2 || (argc == 3 && !strcmp(argv[1], "many"))) && i < sizeof modes / sizeof modes[0]; i++)
        if (!strcmp(argv[1], modes[i].name)) {
            sample_env_t env;
            sample_env_init(&env, modes[i].ndev);
            int rc = modes[i].fn(&env);
            printf("ze_ops_check %s: done\n", argv[1]);
            return rc;
        }
    fprintf(stderr, "usage: %s devices|copies|reexec|devreset|names|ipc|many N\n", argv[0]);
    return 2;
}
