/* multithread.c - sample: T threads, each with its own command queue (spread over the engines of
 * every device) launching saxpy (C++-mangled SPIR-V entry point) ITER times; each thread checks
 * y after every execution.  usage: multithread [T [ITER [N]]]  (default 4 threads, 20, 4096) */
#include "common.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* saxpy(float, float const*, float*, unsigned int) as a C++ compiler names it */
static const sample_spirv_kernel_t KERNELS[] = {{"_Z5saxpyfPKfPfj", "fppu"}};

typedef struct worker {
    const sample_env_t *env;
    ze_device_handle_t dev;
    ze_module_handle_t mod;
    uint32_t tid, engine, iters, n;
    size_t bad;
} worker_t;

static uint32_t compute_engines(ze_device_handle_t dev)
{
    ze_command_queue_group_properties_t g[8];
    uint32_t n = 0;
    SAMPLE_CHECK(zeDeviceGetCommandQueueGroupProperties(dev, &n, NULL));
    if (n > 8)
        n = 8;
    for (uint32_t i = 0; i < n; i++)
        g[i] = (ze_command_queue_group_properties_t){
            .stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES};
    SAMPLE_CHECK(zeDeviceGetCommandQueueGroupProperties(dev, &n, g));
    if (n == 0 || !(g[0].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE))
        sample_die("queue group 0 is not a compute group");
    return g[0].numQueues;
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    float alpha = (float)(w->tid + 1);
    float *x = sample_alloc_shared(w->env, w->dev, w->n * sizeof(float));
    float *y = sample_alloc_shared(w->env, w->dev, w->n * sizeof(float));
    float *want = malloc(w->n * sizeof(float));
    if (!want)
        sample_die("out of host memory");
    for (uint32_t i = 0; i < w->n; i++) {
        x[i] = (float)(i % 13);
        y[i] = want[i] = 1.0f;
    }
    ze_kernel_handle_t k = sample_kernel(w->mod, KERNELS[0].name, 32);
    sample_set_arg(k, 0, sizeof(alpha), &alpha);
    sample_set_arg(k, 1, sizeof(x), &x);
    sample_set_arg(k, 2, sizeof(y), &y);
    sample_set_arg(k, 3, sizeof(w->n), &w->n);
    ze_command_queue_handle_t q = sample_queue(w->env, w->dev, 0, w->engine);
    ze_command_list_handle_t list = sample_list(w->env, w->dev, 0);
    for (uint32_t it = 0; it < w->iters && !w->bad; it++) {
        SAMPLE_CHECK(zeCommandListReset(list));
        sample_launch_1d(list, k, w->n, 32, NULL);
        SAMPLE_CHECK(zeCommandListClose(list));
        SAMPLE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &list, NULL));
        SAMPLE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
        for (uint32_t i = 0; i < w->n; i++)
            want[i] += alpha * x[i];
        char what[64];
        snprintf(what, sizeof(what), "thread %u iteration %u", w->tid, it);
        w->bad += sample_check_floats(what, y, want, w->n, 0.0f);
    }
    SAMPLE_CHECK(zeCommandListDestroy(list));
    SAMPLE_CHECK(zeCommandQueueDestroy(q));
    SAMPLE_CHECK(zeKernelDestroy(k));
    SAMPLE_CHECK(zeMemFree(w->env->context, x));
    SAMPLE_CHECK(zeMemFree(w->env->context, y));
    free(want);
    return NULL;
}

int main(int argc, char **argv)
{
    uint32_t nthreads = (uint32_t)sample_arg_u64(argc, argv, 1, "T (threads)", 4, 1, 256);
    uint32_t iters = (uint32_t)sample_arg_u64(argc, argv, 2, "ITER (launches per thread)", 20, 1,
                                              1000000);
    uint32_t n = (uint32_t)sample_arg_u64(argc, argv, 3, "N (elements)", 4096, 1, 1u << 24);
    sample_env_t env;
    sample_env_init(&env, 1);
    ze_module_handle_t mods[SAMPLE_MAX_DEVICES];
    uint32_t engines[SAMPLE_MAX_DEVICES];
    for (uint32_t d = 0; d < env.num_devices; d++) {
        mods[d] = sample_module_spirv(&env, env.devices[d], KERNELS, 1);
        engines[d] = compute_engines(env.devices[d]);
    }
    worker_t *w = calloc(nthreads, sizeof(*w));
    pthread_t *th = calloc(nthreads, sizeof(*th));
    if (!w || !th)
        sample_die("out of host memory");
    for (uint32_t t = 0; t < nthreads; t++) {
        uint32_t d = t % env.num_devices;       /* thread t: device t%D, engine (t/D)%E */
        w[t] = (worker_t){.env = &env, .dev = env.devices[d], .mod = mods[d], .tid = t,
                          .engine = (t / env.num_devices) % engines[d], .iters = iters, .n = n};
        if (pthread_create(&th[t], NULL, worker_main, &w[t]) != 0)
            sample_die("pthread_create failed for thread %u", t);
    }
    size_t bad = 0;
    for (uint32_t t = 0; t < nthreads; t++) {
        pthread_join(th[t], NULL);
        bad += w[t].bad;
    }
    for (uint32_t d = 0; d < env.num_devices; d++)
        SAMPLE_CHECK(zeModuleDestroy(mods[d]));
    free(w);
    free(th);
    sample_env_fini(&env);
    if (bad)
        return 1;
    printf("multithread: %u threads x %u saxpy launches on %u device(s) OK\n", nthreads, iters,
           env.num_devices);
    return 0;
}
