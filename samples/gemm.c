/* gemm.c - sample: ITER iterations of gemm_f32 (C = A x B, row-major) inside HGTX ranges,
 * each checked against a CPU GEMM.  usage: gemm [ITER [SIZE]]  (default 10 iterations, 64x64) */
#include "common.h"

#include <profagent/hgtx.h>
#include <stdio.h>
#include <stdlib.h>

static const char *MODULE_TEXT = "SIMDEV-MODULE 1\nkernel gemm_f32\n";

/* Small integer inputs keep every product and sum exact in float, so the check is exact. */
static void fill_inputs(float *A, float *B, uint32_t m, uint32_t n, uint32_t k, uint32_t it)
{
    for (uint32_t i = 0; i < m * k; i++)
        A[i] = (float)((int)((i * 7 + it) % 5) - 2);
    for (uint32_t i = 0; i < k * n; i++)
        B[i] = (float)((int)((i * 3 + 2 * it) % 7) - 3);
}

static void cpu_gemm(const float *A, const float *B, float *C, uint32_t m, uint32_t n, uint32_t k)
{
    for (uint32_t i = 0; i < m; i++)
        for (uint32_t j = 0; j < n; j++) {
            double s = 0;
            for (uint32_t p = 0; p < k; p++)
                s += (double)A[i * k + p] * B[p * n + j];
            C[i * n + j] = (float)s;
        }
}

int main(int argc, char **argv)
{
    uint32_t iters = (uint32_t)sample_arg_u64(argc, argv, 1, "ITER (iterations)", 10, 1, 1000000);
    uint32_t sz = (uint32_t)sample_arg_u64(argc, argv, 2, "SIZE (matrix dimension)", 64, 1, 1024);
    uint32_t m = sz, n = sz, k = sz + 3;        /* K differs so a transposed kernel would fail */
    size_t bA = (size_t)m * k * 4, bB = (size_t)k * n * 4, bC = (size_t)m * n * 4;
    sample_env_t env;
    sample_env_init(&env, 1);
    ze_device_handle_t dev = env.devices[0];

    float *A = malloc(bA), *B = malloc(bB), *C = malloc(bC), *want = malloc(bC);
    if (!A || !B || !C || !want)
        sample_die("out of host memory");
    float *dA = sample_alloc_device(&env, dev, bA), *dB = sample_alloc_device(&env, dev, bB);
    float *dC = sample_alloc_device(&env, dev, bC);
    ze_module_handle_t mod = sample_module_native(&env, dev, MODULE_TEXT);
    ze_kernel_handle_t kern = sample_kernel(mod, "gemm_f32", 8);
    SAMPLE_CHECK(zeKernelSetGroupSize(kern, 8, 8, 1));
    sample_set_arg(kern, 0, sizeof(dA), &dA);
    sample_set_arg(kern, 1, sizeof(dB), &dB);
    sample_set_arg(kern, 2, sizeof(dC), &dC);
    sample_set_arg(kern, 3, sizeof(m), &m);
    sample_set_arg(kern, 4, sizeof(n), &n);
    sample_set_arg(kern, 5, sizeof(k), &k);
    ze_command_list_handle_t list = sample_immediate(&env, dev, 0, 0);
    ze_event_pool_handle_t pool = sample_event_pool(&env, 1, 0);
    ze_event_handle_t done = sample_event(pool, 0);
    ze_group_count_t gc = {(n + 7) / 8, (m + 7) / 8, 1};

    size_t bad = 0;
    hgtxRangePushA("gemm_loop");
    for (uint32_t it = 0; it < iters && !bad; it++) {
        hgtxRangePushA("iteration");
        fill_inputs(A, B, m, n, k, it);
        SAMPLE_CHECK(zeCommandListAppendMemoryCopy(list, dA, A, bA, NULL, 0, NULL));
        SAMPLE_CHECK(zeCommandListAppendMemoryCopy(list, dB, B, bB, NULL, 0, NULL));
        SAMPLE_CHECK(zeCommandListAppendBarrier(list, NULL, 0, NULL));
        SAMPLE_CHECK(zeCommandListAppendLaunchKernel(list, kern, &gc, NULL, 0, NULL));
        SAMPLE_CHECK(zeCommandListAppendBarrier(list, NULL, 0, NULL));
        SAMPLE_CHECK(zeCommandListAppendMemoryCopy(list, C, dC, bC, NULL, 0, NULL));
        SAMPLE_CHECK(zeCommandListAppendBarrier(list, done, 0, NULL));
        SAMPLE_CHECK(zeEventHostSynchronize(done, UINT64_MAX));
        SAMPLE_CHECK(zeEventHostReset(done));
        cpu_gemm(A, B, want, m, n, k);
        char what[64];
        snprintf(what, sizeof(what), "gemm iteration %u", it);
        bad += sample_check_floats(what, C, want, (size_t)m * n, 0.0f);
        hgtxRangePop();
    }
    hgtxRangePop();

    SAMPLE_CHECK(zeEventDestroy(done));
    SAMPLE_CHECK(zeEventPoolDestroy(pool));
    SAMPLE_CHECK(zeCommandListDestroy(list));
    SAMPLE_CHECK(zeKernelDestroy(kern));
    SAMPLE_CHECK(zeModuleDestroy(mod));
    SAMPLE_CHECK(zeMemFree(env.context, dA));
    SAMPLE_CHECK(zeMemFree(env.context, dB));
    SAMPLE_CHECK(zeMemFree(env.context, dC));
    free(A); free(B); free(C); free(want);
    sample_env_fini(&env);
    if (bad)
        return 1;
    printf("gemm: %u iterations of %ux%ux%u OK\n", iters, m, n, k);
    return 0;
}
