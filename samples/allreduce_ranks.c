/* allreduce_ranks.c - sample: one rank of an N-process all-reduce job (mpirun -np N, or N processes
 * started by hand with rank variables), each rank on its own device; rank LATE starts every
 * iteration LATE_US late (after one unmarked warm-up all-reduce without delay, which aligns the
 * ranks' start-up skew). Marks each iteration's operator range ("AllReduce, p:0, c:N, d:7, ...")
 * and its transfer stages (domain "PCCL", docs/collectives.md); checks the sum.
 * usage: allreduce_ranks [ITER [N [LATE_US [LATE_RANK]]]]  (default 5, 4096, 3000, last rank)
 * rank/size: OMPI_COMM_WORLD_RANK/_SIZE, PMIX_RANK + PMIX_SIZE... see rank_from_env(). */
#include "common.h"

#include <profagent/hgtx.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *MODULE_TEXT = "SIMDEV-MODULE 1\nkernel allreduce_sum_f32\n";
#define KEY 7u   /* the communicator, within the job SIMDEV_COMM_JOB names */

static float input(uint32_t r, uint32_t it, uint32_t i) { return (float)((r + 1) * (i % 13) + it); }

/* Rank and size from the launcher's variables (Open MPI, PMIx, MPICH/Hydra PMI, Slurm). */
static int rank_from_env(uint32_t *rank, uint32_t *size)
{
    static const char *const pairs[][2] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                           {"PMI_RANK", "PMI_SIZE"},
                                           {"SLURM_PROCID", "SLURM_NTASKS"}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        const char *r = getenv(pairs[i][0]), *s = getenv(pairs[i][1]);
        if (r && s) {
            char *e1, *e2;
            unsigned long rv = strtoul(r, &e1, 10), sv = strtoul(s, &e2, 10);
            if (*r && *s && !*e1 && !*e2 && sv >= 1 && rv < sv && sv <= 64) {
                *rank = (uint32_t)rv;
                *size = (uint32_t)sv;
                return 0;
            }
            fprintf(stderr, "allreduce_ranks: %s=%s %s=%s is not a rank < size <= 64\n", pairs[i][0], r,
                    pairs[i][1], s);
            return -1;
        }
    }
    fprintf(stderr, "allreduce_ranks: no rank in the environment (OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/SIZE, "
                    "SLURM_PROCID/NTASKS); run it under mpirun -np N\n");
    return -1;
}

static void sleep_us(uint64_t us)
{
    struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    uint32_t iters = (uint32_t)sample_arg_u64(argc, argv, 1, "ITER (iterations)", 5, 1, 100000);
    uint32_t n = (uint32_t)sample_arg_u64(argc, argv, 2, "N (elements)", 4096, 1, 1u << 24);
    uint64_t late_us = sample_arg_u64(argc, argv, 3, "LATE_US (delay of the late rank)", 3000, 0, 10000000);
    uint32_t rank, size;
    if (rank_from_env(&rank, &size) != 0)
        return 2;
    uint32_t late = (uint32_t)sample_arg_u64(argc, argv, 4, "LATE_RANK", size - 1, 0, size - 1);
    /* the communicator spans the job: name it before the driver is loaded (a NCCL program would
     * broadcast its unique id); the launch id of mpirun unless the user named one */
    const char *jobid = getenv("PMIX_NAMESPACE") ? getenv("PMIX_NAMESPACE") : getenv("OMPI_MCA_ess_base_jobid");
    if (!getenv("SIMDEV_COMM_JOB") && jobid)
        setenv("SIMDEV_COMM_JOB", jobid, 0);
    if (!getenv("SIMDEV_COMM_JOB") && size > 1) {
        fprintf(stderr, "allreduce_ranks: no job id (PMIX_NAMESPACE, OMPI_MCA_ess_base_jobid) and no SIMDEV_COMM_JOB: "
                        "set SIMDEV_COMM_JOB to the same name in every rank\n");
        return 2;
    }
    sample_env_t env;
    sample_env_init(&env, rank + 1); /* rank r runs on device r */
    ze_device_handle_t dev = env.devices[rank];
    ze_module_handle_t mod = sample_module_native(&env, dev, MODULE_TEXT);
    ze_kernel_handle_t ar = sample_kernel(mod, "allreduce_sum_f32", 64);
    ze_command_list_handle_t list = sample_immediate(&env, dev, 0, 0);
    float *buf = sample_alloc_device(&env, dev, n * sizeof(float));
    float *host = malloc(n * sizeof(float)), *want = malloc(n * sizeof(float));
    if (!host || !want)
        sample_die("out of host memory");
    uint64_t key = KEY;
    sample_set_arg(ar, 0, sizeof buf, &buf);
    sample_set_arg(ar, 1, sizeof n, &n);
    sample_set_arg(ar, 2, sizeof rank, &rank);
    sample_set_arg(ar, 3, sizeof size, &size);
    sample_set_arg(ar, 4, sizeof key, &key);
    ze_event_pool_handle_t pool = sample_event_pool(&env, 2, 0);
    ze_event_handle_t kdone = sample_event(pool, 0), cdone = sample_event(pool, 1);
    hgtxDomainHandle_t pccl = hgtxDomainCreateA(HGTX_PCCL_DOMAIN);
    char op[256], st_post[64], st_wait[64], st_flush[64];
    /* NCCL's conventions: d:7 = ncclFloat32, r:0 = ncclSum; h = the communicator, w = its ranks */
    snprintf(op, sizeof op, "AllReduce, p:0, c:%u, d:7, r:0, w:%u, h:%016llx, t:1, b:%p/%p", n, size,
             (unsigned long long)(0x5ad0c0de00000000ull | key), (void *)buf, (void *)buf);
    hgtxPcclStageName(st_post, sizeof st_post, "Post", 0, 1);
    hgtxPcclStageName(st_wait, sizeof st_wait, "GPUWait", 0, 1);
    hgtxPcclStageName(st_flush, sizeof st_flush, "RecvFlush", 1, 0);
    size_t bad = 0;
    for (uint32_t it = 0; it <= iters && !bad; it++) { /* it 0: the warm-up */
        int marked = it > 0;
        for (uint32_t i = 0; i < n; i++)
            host[i] = input(rank, it, i);
        SAMPLE_CHECK(zeCommandListAppendMemoryCopy(list, buf, host, n * 4, NULL, 0, NULL));
        SAMPLE_CHECK(zeCommandListAppendBarrier(list, cdone, 0, NULL));
        SAMPLE_CHECK(zeEventHostSynchronize(cdone, UINT64_MAX));
        SAMPLE_CHECK(zeEventHostReset(cdone));
        if (marked && rank == late && late_us)
            sleep_us(late_us);
        if (marked) {
            hgtxRangePushA(op);
            hgtxDomainRangePushA(pccl, st_post);
        }
        sample_launch_1d(list, ar, n, 64, NULL);
        SAMPLE_CHECK(zeCommandListAppendBarrier(list, kdone, 0, NULL));
        if (marked) {
            hgtxDomainRangePop(pccl);
            hgtxDomainRangePushA(pccl, st_wait);
        }
        SAMPLE_CHECK(zeEventHostSynchronize(kdone, UINT64_MAX));
        if (marked) {
            hgtxDomainRangePop(pccl);
            hgtxDomainRangePushA(pccl, st_flush);
        }
        SAMPLE_CHECK(zeCommandListAppendMemoryCopy(list, host, buf, n * 4, NULL, 0, NULL));
        SAMPLE_CHECK(zeCommandListAppendBarrier(list, cdone, 0, NULL));
        SAMPLE_CHECK(zeEventHostSynchronize(cdone, UINT64_MAX));
        if (marked) {
            hgtxDomainRangePop(pccl);
            hgtxRangePop();
        }
        SAMPLE_CHECK(zeEventHostReset(kdone));
        SAMPLE_CHECK(zeEventHostReset(cdone));
        for (uint32_t i = 0; i < n; i++) {
            want[i] = 0.0f;
            for (uint32_t r = 0; r < size; r++)
                want[i] += input(r, it, i);
        }
        char what[64];
        snprintf(what, sizeof what, "iteration %u rank %u", it, rank);
        bad += sample_check_floats(what, host, want, n, 0.0f);
    }
    SAMPLE_CHECK(zeEventDestroy(kdone));
    SAMPLE_CHECK(zeEventDestroy(cdone));
    SAMPLE_CHECK(zeEventPoolDestroy(pool));
    SAMPLE_CHECK(zeCommandListDestroy(list));
    SAMPLE_CHECK(zeKernelDestroy(ar));
    SAMPLE_CHECK(zeModuleDestroy(mod));
    SAMPLE_CHECK(zeMemFree(env.context, buf));
    free(host);
    free(want);
    sample_env_fini(&env);
    if (bad)
        return 1;
    printf("allreduce_ranks: rank %u of %u: %u iterations x %u floats OK (rank %u late by %llu us)\n", rank, size,
           iters, n, late, (unsigned long long)late_us);
    return 0;
}
