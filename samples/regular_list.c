/* regular_list.c - sample: a regular command list recorded once (saxpy, reduce_sum_f32, vector_add)
 * and executed M times; results checked after every execution. With "capture" the recording is
 * inside an HGTX range "capture".  usage: regular_list [M [capture]]  (default M = 5) */
#include "common.h"

#include <profagent/hgtx.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *MODULE_TEXT =
    "SIMDEV-MODULE 1\nkernel saxpy\nkernel reduce_sum_f32\nkernel vector_add\n";
#define N 1024u
#define ALPHA 2.0f

typedef struct bufs { float *x, *y, *z, *sum; } bufs_t;

/* Records y += ALPHA*x; sum = reduce(y); z = y + x — with barriers between dependent kernels. */
static ze_command_list_handle_t record(const sample_env_t *env, ze_device_handle_t dev,
                                       ze_kernel_handle_t k[3], const bufs_t *b)
{
    ze_command_list_handle_t list = sample_list(env, dev, 0);
    float alpha = ALPHA;
    uint32_t n = N;
    sample_set_arg(k[0], 0, sizeof(alpha), &alpha);
    sample_set_arg(k[0], 1, sizeof(b->x), &b->x);
    sample_set_arg(k[0], 2, sizeof(b->y), &b->y);
    sample_set_arg(k[0], 3, sizeof(n), &n);
    sample_set_arg(k[1], 0, sizeof(b->y), &b->y);
    sample_set_arg(k[1], 1, sizeof(b->sum), &b->sum);
    sample_set_arg(k[1], 2, sizeof(n), &n);
    sample_set_arg(k[2], 0, sizeof(b->y), &b->y);
    sample_set_arg(k[2], 1, sizeof(b->x), &b->x);
    sample_set_arg(k[2], 2, sizeof(b->z), &b->z);
    sample_set_arg(k[2], 3, sizeof(n), &n);
    sample_launch_1d(list, k[0], N, 64, NULL);
    SAMPLE_CHECK(zeCommandListAppendBarrier(list, NULL, 0, NULL));
    sample_launch_1d(list, k[1], N, 64, NULL);
    sample_launch_1d(list, k[2], N, 64, NULL);   /* reads y only, like reduce: no barrier */
    SAMPLE_CHECK(zeCommandListClose(list));
    return list;
}

/* After e executions y = 1 + e*ALPHA*x, all small integers: exact in float. */
static size_t check(const bufs_t *b, uint32_t e)
{
    static float want_y[N], want_z[N];
    double sum = 0;
    for (uint32_t i = 0; i < N; i++) {
        want_y[i] = 1.0f + (float)e * ALPHA * b->x[i];
        want_z[i] = want_y[i] + b->x[i];
        sum += want_y[i];
    }
    char what[64];
    snprintf(what, sizeof(what), "execution %u: y (saxpy)", e);
    size_t bad = sample_check_floats(what, b->y, want_y, N, 0.0f);
    snprintf(what, sizeof(what), "execution %u: z (vector_add)", e);
    bad += sample_check_floats(what, b->z, want_z, N, 0.0f);
    float want_sum = (float)sum;
    snprintf(what, sizeof(what), "execution %u: sum (reduce_sum_f32)", e);
    bad += sample_check_floats(what, b->sum, &want_sum, 1, 1e-4f); /* order of summation */
    return bad;
}

int main(int argc, char **argv)
{
    uint32_t execs = (uint32_t)sample_arg_u64(argc, argv, 1, "M (executions)", 5, 1, 1000000);
    int capture = argc > 2 && strcmp(argv[2], "capture") == 0;
    if (argc > 2 && !capture) {
        fprintf(stderr, "%s: bad second argument '%s': expected 'capture' or nothing\n", argv[0],
                argv[2]);
        return 2;
    }
    sample_env_t env;
    sample_env_init(&env, 1);
    ze_device_handle_t dev = env.devices[0];
    bufs_t b = {sample_alloc_shared(&env, dev, N * 4), sample_alloc_shared(&env, dev, N * 4),
                sample_alloc_shared(&env, dev, N * 4), sample_alloc_shared(&env, dev, 4)};
    for (uint32_t i = 0; i < N; i++) {
        b.x[i] = (float)(i % 7);
        b.y[i] = 1.0f;
        b.z[i] = 0.0f;
    }
    ze_module_handle_t mod = sample_module_native(&env, dev, MODULE_TEXT);
    ze_kernel_handle_t k[3] = {sample_kernel(mod, "saxpy", 64),
                               sample_kernel(mod, "reduce_sum_f32", 64),
                               sample_kernel(mod, "vector_add", 64)};
    if (capture)
        hgtxRangePushA("capture");
    ze_command_list_handle_t list = record(&env, dev, k, &b);
    if (capture)
        hgtxRangePop();
    ze_command_queue_handle_t q = sample_queue(&env, dev, 0, 0);
    size_t bad = 0;
    for (uint32_t e = 1; e <= execs && !bad; e++) {
        SAMPLE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &list, NULL));
        SAMPLE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
        bad += check(&b, e);
    }
    SAMPLE_CHECK(zeCommandQueueDestroy(q));
    SAMPLE_CHECK(zeCommandListDestroy(list));
    for (int i = 0; i < 3; i++)
        SAMPLE_CHECK(zeKernelDestroy(k[i]));
    SAMPLE_CHECK(zeModuleDestroy(mod));
    SAMPLE_CHECK(zeMemFree(env.context, b.x));
    SAMPLE_CHECK(zeMemFree(env.context, b.y));
    SAMPLE_CHECK(zeMemFree(env.context, b.z));
    SAMPLE_CHECK(zeMemFree(env.context, b.sum));
    sample_env_fini(&env);
    if (bad)
        return 1;
    printf("regular_list: 3 kernels x %u executions OK%s\n", execs, capture ? " (capture)" : "");
    return 0;
}
