/* pcs_multi.c - PC-sampling scenarios for test_pcs.py: two devices at once (agent and PTI API),
 * a fork child, and an exit while a kernel still runs.
 * usage: pcs_multi two|fork|exit-running|pooldestroy|poolrunning|poollong|env [api]
 *   two:          busy_ns 10 ms on device 0 and 30 ms on device 1, concurrently
 *   fork:         busy_ns 10 ms, fork (the child runs busy_ns 10 ms and _exits), busy_ns 10 ms
 *   exit-running: busy_ns 400 ms launched, exit(0) without waiting
 *   pooldestroy:  busy_ns 5 ms signalling an event of pool A on a synchronous immediate list (no
 *                 host sync), zeEventPoolDestroy(A) without zeEventDestroy (as many applications
 *                 do), then busy_ns 5 ms signalling an event of pool B, zeEventHostSynchronize
 *   poolrunning:  busy_ns 5 ms signalling an event of pool A on an asynchronous immediate list,
 *                 zeEventPoolDestroy(A) at once (the kernel still runs, no host sync), busy_ns 7 ms
 *                 signalling an event of pool B, zeEventHostSynchronize; then busy_ns 6 ms whose
 *                 event is destroyed (zeEventDestroy) at once, busy_ns 8 ms on pool B, synchronized;
 *                 then busy_ns 9 ms in a regular list signalling an event of pool E, executed, E
 *                 destroyed at once, zeCommandQueueSynchronize
 *   poollong:     as poolrunning's first half with busy_ns 400 ms on pool A (longer than the
 *                 agent waits at a destroy), then busy_ns 7 ms on pool B, synchronized
 *   env:          busy_ns 10 ms; prints "env <ZE_ENABLE_TRACING_LAYER or unset>" as this process
 *                 and as a child shell see it after zeInit ("child ...")
 *   api:          wraps the work in a PTI collection; prints "device <i> samples <n> kernels <k>" */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "profagent/pti_pc_sampling.h"

typedef struct dev_run {
    ze_kernel_handle_t k;
    ze_command_list_handle_t list;
    ze_event_handle_t ev;
} dev_run_t;

static void dev_setup(sample_env_t *env, uint32_t d, dev_run_t *r, ze_event_pool_handle_t pool)
{
    ze_module_handle_t m = sample_module_native(env, env->devices[d], "SIMDEV-MODULE 1\nkernel busy_ns\n");
    r->k = sample_kernel(m, "busy_ns", 1);
    r->list = sample_immediate(env, env->devices[d], 0, 0);
    r->ev = sample_event(pool, d);
}

static void launch(dev_run_t *r, uint64_t ns)
{
    sample_set_arg(r->k, 0, sizeof ns, &ns);
    sample_launch_1d(r->list, r->k, 1, 1, r->ev);
}

static void wait_done(dev_run_t *r)
{
    SAMPLE_CHECK(zeEventHostSynchronize(r->ev, UINT64_MAX));
    SAMPLE_CHECK(zeEventHostReset(r->ev));
}

int main(int argc, char **argv)
{
    if (argc < 2)
        sample_die("usage: %s two|fork|exit-running|pooldestroy|poolrunning|poollong|env [api]", argv[0]);
    int api = argc > 2 && strcmp(argv[2], "api") == 0;
    sample_env_t env;
    sample_env_init(&env, strcmp(argv[1], "two") == 0 ? 2 : 1);
    ze_event_pool_handle_t pool = sample_event_pool(&env, 2, 0);
    dev_run_t r[2];
    dev_setup(&env, 0, &r[0], pool);
    if (env.num_devices > 1)
        dev_setup(&env, 1, &r[1], pool);
    pti_pc_sampling_handle_t h = NULL;
    if (api) {
        pti_result pr = ptiPcSamplingEnable(&h);
        if (pr != PTI_SUCCESS)
            sample_die("ptiPcSamplingEnable: %s", ptiResultTypeToString(pr));
        if (ptiPcSamplingConfigure(h, NULL, 0, 0) != PTI_SUCCESS || ptiPcSamplingStartCollection(h) != PTI_SUCCESS)
            sample_die("configure/start failed");
    }
    if (strcmp(argv[1], "two") == 0) {
        launch(&r[0], 10000000);
        launch(&r[1], 30000000);
        wait_done(&r[0]);
        wait_done(&r[1]);
    } else if (strcmp(argv[1], "fork") == 0) {
        launch(&r[0], 10000000);
        wait_done(&r[0]);
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            launch(&r[0], 10000000);
            wait_done(&r[0]);
            _exit(0);
        }
        int st = 0;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            sample_die("fork child failed (status 0x%x)", st);
        launch(&r[0], 10000000);
        wait_done(&r[0]);
    } else if (strcmp(argv[1], "exit-running") == 0) {
        launch(&r[0], 400000000);
        exit(0);
    } else if (strcmp(argv[1], "pooldestroy") == 0) {
        ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                      .mode = ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS};
        ze_command_list_handle_t sync_list = NULL;
        SAMPLE_CHECK(zeCommandListCreateImmediate(env.context, env.devices[0], &qd, &sync_list));
        ze_event_pool_handle_t a = sample_event_pool(&env, 1, 0), b = sample_event_pool(&env, 1, 0);
        ze_event_handle_t ea = sample_event(a, 0), eb = sample_event(b, 0);
        uint64_t ns = 5000000;
        sample_set_arg(r[0].k, 0, sizeof ns, &ns);
        sample_launch_1d(sync_list, r[0].k, 1, 1, ea);
        SAMPLE_CHECK(zeEventPoolDestroy(a));
        sample_launch_1d(sync_list, r[0].k, 1, 1, eb);
        SAMPLE_CHECK(zeEventHostSynchronize(eb, UINT64_MAX));
        SAMPLE_CHECK(zeEventDestroy(eb));
        SAMPLE_CHECK(zeEventPoolDestroy(b));
    } else if (strcmp(argv[1], "poolrunning") == 0 || strcmp(argv[1], "poollong") == 0) {
        int lng = strcmp(argv[1], "poollong") == 0;
        ze_event_pool_handle_t a = sample_event_pool(&env, 1, 0), b = sample_event_pool(&env, 2, 0);
        ze_event_pool_handle_t d = sample_event_pool(&env, 1, 0);
        ze_event_handle_t ea = sample_event(a, 0), eb = sample_event(b, 0), eb2 = sample_event(b, 1);
        ze_event_handle_t ed = sample_event(d, 0);
        r[0].ev = ea;
        launch(&r[0], lng ? 400000000 : 5000000);
        SAMPLE_CHECK(zeEventPoolDestroy(a)); /* ea not destroyed, its kernel running */
        r[0].ev = eb;
        launch(&r[0], 7000000);
        wait_done(&r[0]);
        if (!lng) {
            r[0].ev = ed;
            launch(&r[0], 6000000);
            SAMPLE_CHECK(zeEventDestroy(ed)); /* its kernel running */
            r[0].ev = eb2;
            launch(&r[0], 8000000);
            wait_done(&r[0]);
            /* a regular list's execution signalling an event of pool E, destroyed at once */
            ze_event_pool_handle_t e = sample_event_pool(&env, 1, 0);
            ze_command_list_handle_t rl = sample_list(&env, env.devices[0], 0);
            ze_command_queue_handle_t q = sample_queue(&env, env.devices[0], 0, 0);
            uint64_t ns = 9000000;
            sample_set_arg(r[0].k, 0, sizeof ns, &ns);
            sample_launch_1d(rl, r[0].k, 1, 1, sample_event(e, 0));
            SAMPLE_CHECK(zeCommandListClose(rl));
            SAMPLE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &rl, NULL));
            SAMPLE_CHECK(zeEventPoolDestroy(e));
            SAMPLE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
            SAMPLE_CHECK(zeCommandListDestroy(rl));
            SAMPLE_CHECK(zeCommandQueueDestroy(q));
        }
        SAMPLE_CHECK(zeEventDestroy(eb));
        SAMPLE_CHECK(zeEventDestroy(eb2));
        SAMPLE_CHECK(zeEventPoolDestroy(b));
        SAMPLE_CHECK(zeEventPoolDestroy(d));
    } else if (strcmp(argv[1], "env") == 0) {
        launch(&r[0], 10000000);
        wait_done(&r[0]);
        const char *tl = getenv("ZE_ENABLE_TRACING_LAYER");
        printf("env %s\n", tl ? tl : "unset");
        fflush(stdout);
        if (system("echo child ${ZE_ENABLE_TRACING_LAYER-unset}") != 0)
            sample_die("the child shell failed");
    } else {
        sample_die("unknown scenario %s", argv[1]);
    }
    if (api) {
        if (ptiPcSamplingStopCollection(h) != PTI_SUCCESS)
            sample_die("stop failed");
        for (uint32_t d = 0; d < env.num_devices; d++) {
            pti_pc_sampling_device_status_t st = {._struct_size = sizeof st};
            size_t nk = 0;
            if (ptiPcSamplingGetDeviceStatus(h, env.devices[d], &st) != PTI_SUCCESS ||
                ptiPcSamplingGetObservedKernelHandles(h, env.devices[d], NULL, &nk) != PTI_SUCCESS)
                sample_die("queries of device %u failed", d);
            printf("device %u samples %llu kernels %zu\n", d, (unsigned long long)st._total_sample_count, nk);
        }
        size_t nd = 0;
        ptiPcSamplingGetProfiledDevices(h, NULL, &nd);
        printf("profiled %zu\n", nd);
        ptiPcSamplingDisable(h);
    }
    return 0;
}
