/* allreduce.c - sample: ITER all-reduce (sum) iterations over two devices where device 1 starts
 * late (host sleep, or a busy_ns kernel queued before it); checks both buffers hold the sum.
 * Each device's launch is an operator range "AllReduce, p:0, c:N, d:7, r:0, w:2, ..." with the
 * stage "Post, ch:<device>, TX" in HGTX domain PCCL (docs/collectives.md).
 * usage: allreduce [ITER [N [sleep|busy [LATE_US]]]]  (default 5, 4096, sleep, 2000 us) */
#include "common.h"

#include <profagent/hgtx.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *MODULE_TEXT = "SIMDEV-MODULE 1\nkernel allreduce_sum_f32\nkernel busy_ns\n";
#define NRANKS 2u
#define KEY 42u                       /* reused by every iteration, as the contract allows */

typedef struct rank {
    ze_device_handle_t dev;
    ze_module_handle_t mod;
    ze_kernel_handle_t ar, busy;
    ze_command_list_handle_t list;
    float *buf, *host;
} rank_t;

static float input(uint32_t r, uint32_t it, uint32_t i) { return (float)((r + 1) * (i % 17) + it); }

static void rank_setup(const sample_env_t *env, rank_t *rk, uint32_t r, uint32_t n)
{
    rk->dev = env->devices[r];
    rk->mod = sample_module_native(env, rk->dev, MODULE_TEXT);
    rk->ar = sample_kernel(rk->mod, "allreduce_sum_f32", 64);
    rk->busy = sample_kernel(rk->mod, "busy_ns", 1);
    rk->list = sample_immediate(env, rk->dev, 0, 0);
    rk->buf = sample_alloc_device(env, rk->dev, n * sizeof(float));
    rk->host = malloc(n * sizeof(float));
    if (!rk->host)
        sample_die("out of host memory");
    uint32_t nranks = NRANKS;
    uint64_t key = KEY;
    sample_set_arg(rk->ar, 0, sizeof(rk->buf), &rk->buf);
    sample_set_arg(rk->ar, 1, sizeof(n), &n);
    sample_set_arg(rk->ar, 2, sizeof(r), &r);
    sample_set_arg(rk->ar, 3, sizeof(nranks), &nranks);
    sample_set_arg(rk->ar, 4, sizeof(key), &key);
}

static void rank_teardown(const sample_env_t *env, rank_t *rk)
{
    SAMPLE_CHECK(zeCommandListDestroy(rk->list));
    SAMPLE_CHECK(zeKernelDestroy(rk->ar));
    SAMPLE_CHECK(zeKernelDestroy(rk->busy));
    SAMPLE_CHECK(zeModuleDestroy(rk->mod));
    SAMPLE_CHECK(zeMemFree(env->context, rk->buf));
    free(rk->host);
}

/* Appends H2D(input), [busy late_ns], allreduce, D2H, barrier signalling done. */
static void rank_launch(rank_t *rk, uint32_t r, uint32_t it, uint32_t n, uint64_t busy_ns,
                        ze_event_handle_t done)
{
    for (uint32_t i = 0; i < n; i++)
        rk->host[i] = input(r, it, i);
    SAMPLE_CHECK(zeCommandListAppendMemoryCopy(rk->list, rk->buf, rk->host, n * 4, NULL, 0, NULL));
    SAMPLE_CHECK(zeCommandListAppendBarrier(rk->list, NULL, 0, NULL));
    if (busy_ns) {
        sample_set_arg(rk->busy, 0, sizeof(busy_ns), &busy_ns);
        sample_launch_1d(rk->list, rk->busy, 1, 1, NULL);
        SAMPLE_CHECK(zeCommandListAppendBarrier(rk->list, NULL, 0, NULL));
    }
    sample_launch_1d(rk->list, rk->ar, n, 64, NULL);
    SAMPLE_CHECK(zeCommandListAppendBarrier(rk->list, NULL, 0, NULL));
    SAMPLE_CHECK(zeCommandListAppendMemoryCopy(rk->list, rk->host, rk->buf, n * 4, NULL, 0, NULL));
    SAMPLE_CHECK(zeCommandListAppendBarrier(rk->list, done, 0, NULL));
}

int main(int argc, char **argv)
{
    uint32_t iters = (uint32_t)sample_arg_u64(argc, argv, 1, "ITER (iterations)", 5, 1, 100000);
    uint32_t n = (uint32_t)sample_arg_u64(argc, argv, 2, "N (elements)", 4096, 1, 1u << 24);
    int use_busy = 0;
    if (argc > 3) {
        if (strcmp(argv[3], "busy") == 0)
            use_busy = 1;
        else if (strcmp(argv[3], "sleep") != 0) {
            fprintf(stderr, "%s: bad late mode '%s': expected 'sleep' or 'busy'\n", argv[0],
                    argv[3]);
            return 2;
        }
    }
    uint64_t late_us = sample_arg_u64(argc, argv, 4, "LATE_US (delay of device 1)", 2000, 0,
                                      10000000);
    sample_env_t env;
    sample_env_init(&env, NRANKS);
    rank_t rk[NRANKS];
    for (uint32_t r = 0; r < NRANKS; r++)
        rank_setup(&env, &rk[r], r, n);
    ze_event_pool_handle_t pool = sample_event_pool(&env, NRANKS, 0);
    ze_event_handle_t done[NRANKS];
    for (uint32_t r = 0; r < NRANKS; r++)
        done[r] = sample_event(pool, r);
    float *want = malloc(n * sizeof(float));
    if (!want)
        sample_die("out of host memory");

    hgtxDomainHandle_t pccl = hgtxDomainCreateA(HGTX_PCCL_DOMAIN);
    char op[NRANKS][192], stage[NRANKS][48];
    for (uint32_t r = 0; r < NRANKS; r++) {
        snprintf(op[r], sizeof op[r], "AllReduce, p:0, c:%u, d:7, r:0, w:%u, h:%016llx, t:1, b:%p/%p", n, NRANKS,
                 (unsigned long long)KEY, (void *)rk[r].buf, (void *)rk[r].buf);
        hgtxPcclStageName(stage[r], sizeof stage[r], "Post", r, 1);
    }
    size_t bad = 0;
    for (uint32_t it = 0; it < iters && !bad; it++) {
        hgtxRangePushA(op[0]);
        hgtxDomainRangePushA(pccl, stage[0]);
        rank_launch(&rk[0], 0, it, n, 0, done[0]);
        hgtxDomainRangePop(pccl);
        hgtxRangePop();
        if (!use_busy && late_us) {
            struct timespec ts = {(time_t)(late_us / 1000000), (long)(late_us % 1000000) * 1000};
            nanosleep(&ts, NULL);
        }
        hgtxRangePushA(op[1]);
        hgtxDomainRangePushA(pccl, stage[1]);
        rank_launch(&rk[1], 1, it, n, use_busy ? late_us * 1000 : 0, done[1]);
        hgtxDomainRangePop(pccl);
        hgtxRangePop();
        for (uint32_t r = 0; r < NRANKS; r++) {
            SAMPLE_CHECK(zeEventHostSynchronize(done[r], UINT64_MAX));
            SAMPLE_CHECK(zeEventHostReset(done[r]));
        }
        for (uint32_t i = 0; i < n; i++)
            want[i] = input(0, it, i) + input(1, it, i);
        for (uint32_t r = 0; r < NRANKS; r++) {
            char what[64];
            snprintf(what, sizeof(what), "iteration %u rank %u", it, r);
            bad += sample_check_floats(what, rk[r].host, want, n, 0.0f);
        }
    }
    for (uint32_t r = 0; r < NRANKS; r++) {
        SAMPLE_CHECK(zeEventDestroy(done[r]));
        rank_teardown(&env, &rk[r]);
    }
    SAMPLE_CHECK(zeEventPoolDestroy(pool));
    free(want);
    sample_env_fini(&env);
    if (bad)
        return 1;
    printf("allreduce: %u iterations x %u floats on %u devices OK (device 1 late by %llu us, %s)\n",
           iters, n, NRANKS, (unsigned long long)late_us, use_busy ? "busy" : "sleep");
    return 0;
}
