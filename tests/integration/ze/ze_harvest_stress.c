/* ze_harvest_stress.c - T threads, each replaying a regular list of K busy kernels E times on its
 * own queue; the list ends with a barrier signalling an event of the application's. Each thread
 * waits on that event only (never on the queue), host-resets it, and every R executions destroys
 * the list and builds a new one right away: the agent's harvest list of the last execution may
 * then still be queued. usage: ze_harvest_stress T K E R */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "common.h"

typedef struct job {
    sample_env_t *env;
    ze_module_handle_t mod;
    uint32_t t, k, e, r;
} job_t;

static ze_command_list_handle_t build(job_t *j, ze_kernel_handle_t kern, ze_event_handle_t done)
{
    ze_command_list_handle_t l = sample_list(j->env, j->env->devices[0], 0);
    ze_group_count_t g = { 1, 1, 1 };
    for (uint32_t i = 0; i < j->k; i++)
        SAMPLE_CHECK(zeCommandListAppendLaunchKernel(l, kern, &g, NULL, 0, NULL));
    SAMPLE_CHECK(zeCommandListAppendBarrier(l, done, 0, NULL));
    SAMPLE_CHECK(zeCommandListClose(l));
    return l;
}

static void *worker(void *arg)
{
    job_t *j = arg;
    ze_kernel_handle_t kern = sample_kernel(j->mod, "busy", 1);
    uint64_t ns = 2000 + 1000 * (uint64_t)j->t;
    SAMPLE_CHECK(zeKernelSetArgumentValue(kern, 0, sizeof ns, &ns));
    ze_event_pool_handle_t p = sample_event_pool(j->env, 1, 0);
    ze_event_handle_t done = sample_event(p, 0);
    ze_command_queue_handle_t q = sample_queue(j->env, j->env->devices[0], 0, j->t % 4);
    ze_command_list_handle_t l = build(j, kern, done);
    for (uint32_t e = 0; e < j->e; e++) {
        SAMPLE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &l, NULL));
        SAMPLE_CHECK(zeEventHostSynchronize(done, UINT64_MAX));
        SAMPLE_CHECK(zeEventHostReset(done));
        if ((e + 1) % j->r == 0) { /* the agent's harvest list may still be queued behind l */
            SAMPLE_CHECK(zeCommandListDestroy(l));
            l = build(j, kern, done);
        }
    }
    SAMPLE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
    SAMPLE_CHECK(zeCommandListDestroy(l));
    SAMPLE_CHECK(zeCommandQueueDestroy(q));
    SAMPLE_CHECK(zeEventDestroy(done));
    SAMPLE_CHECK(zeEventPoolDestroy(p));
    SAMPLE_CHECK(zeKernelDestroy(kern));
    return NULL;
}

int main(int argc, char **argv)
{
    uint32_t t = (uint32_t)sample_arg_u64(argc, argv, 1, "T (threads)", 4, 1, 64);
    uint32_t k = (uint32_t)sample_arg_u64(argc, argv, 2, "K (kernels per list)", 4, 1, 256);
    uint32_t e = (uint32_t)sample_arg_u64(argc, argv, 3, "E (executions per thread)", 20, 1, 100000);
    uint32_t r = (uint32_t)sample_arg_u64(argc, argv, 4, "R (executions per list)", 5, 1, 100000);
    sample_env_t env;
    sample_env_init(&env, 1);
    ze_module_handle_t m = sample_module_native(&env, env.devices[0], "SIMDEV-MODULE 1\nkernel busy builtin=busy_ns\n");
    job_t jobs[64];
    pthread_t th[64];
    for (uint32_t i = 0; i < t; i++) {
        jobs[i] = (job_t){ &env, m, i, k, e, r };
        if (pthread_create(&th[i], NULL, worker, &jobs[i]) != 0)
            sample_die("pthread_create failed");
    }
    for (uint32_t i = 0; i < t; i++)
        pthread_join(th[i], NULL);
    SAMPLE_CHECK(zeModuleDestroy(m));
    sample_env_fini(&env);
    printf("harvest_stress %u x %u x %u\n", t, k, e);
    return 0;
}
