/* proj_scen.c - HGTX-to-device scenarios with known device work (busy_ns kernels on simdev) for
 * the projection tests. usage: proj_scen nested|overlap|graph|recstep|xthread|xthread2|xthread3|xthread4|manyexec|relist|manymed N */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <profagent/hgtx.h>

#include "common.h"

static sample_env_t env;
static ze_kernel_handle_t kern;

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    nanosleep(&ts, NULL);
}

/* Appends one busy kernel of `ns` to list (busy_ns reads its duration from argument 0). */
static void busy(ze_command_list_handle_t list, uint64_t ns)
{
    sample_set_arg(kern, 0, sizeof ns, &ns);
    sample_launch_1d(list, kern, 1, 1, NULL);
}

static ze_command_list_handle_t lists[3];
static ze_event_handle_t done[3];

/* Waits for everything appended to list so far (a barrier signalling its own event). */
static void sync_list(ze_command_list_handle_t list)
{
    for (int i = 0; i < 3; i++)
        if (lists[i] == list) {
            SAMPLE_CHECK(zeCommandListAppendBarrier(list, done[i], 0, NULL));
            SAMPLE_CHECK(zeEventHostSynchronize(done[i], UINT64_MAX));
            SAMPLE_CHECK(zeEventHostReset(done[i]));
        }
}

/* profile > Loop1 > DoProcess > k(1 ms); profile > Loop2 > DoProcess > k(2 ms); k(0.5 ms) outside */
static void nested(ze_command_list_handle_t l)
{
    hgtxRangePushA("profile");
    hgtxRangePushA("Loop1");
    hgtxRangePushA("DoProcess");
    busy(l, 1000000);
    sync_list(l);
    hgtxRangePop();
    hgtxRangePop();
    hgtxRangePushA("Loop2");
    hgtxRangePushA("DoProcess");
    busy(l, 2000000);
    sync_list(l);
    hgtxRangePop();
    hgtxRangePop();
    hgtxRangePop();
    busy(l, 500000);
    sync_list(l);
}

/* k0 (1 ms, engine 0) before range "ovl"; inside: kA (20 ms, engine 1), 2 ms later kB (20 ms, engine 2):
 * long kernels so they overlap even on a loaded host */
static void overlap(ze_command_list_handle_t l0, ze_command_list_handle_t l1, ze_command_list_handle_t l2)
{
    busy(l0, 1000000);
    hgtxRangePushA("ovl");
    busy(l1, 20000000);
    sleep_ns(2000000);
    busy(l2, 20000000);
    hgtxRangePop();
    sync_list(l0);
    sync_list(l1);
    sync_list(l2);
}

/* 2 kernels recorded in "capture" into a regular list, executed 4x; the 4th inside "runner" */
static void graph(ze_device_handle_t dev)
{
    ze_command_queue_handle_t q = sample_queue(&env, dev, 0, 0);
    ze_command_list_handle_t l = sample_list(&env, dev, 0);
    hgtxRangePushA("capture");
    busy(l, 200000);
    busy(l, 300000);
    hgtxRangePop();
    SAMPLE_CHECK(zeCommandListClose(l));
    for (int i = 0; i < 4; i++) {
        if (i == 3)
            hgtxRangePushA("runner");
        SAMPLE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &l, NULL));
        SAMPLE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
        if (i == 3)
            hgtxRangePop();
    }
    SAMPLE_CHECK(zeCommandListDestroy(l));
    SAMPLE_CHECK(zeCommandQueueDestroy(q));
}

/* "all" > "rec": a regular list with kernels of 0.4 ms and 0.1 ms recorded; then twice "all" >
 * "step" executing it ("all" is open at the appends and around the executes) */
static void recstep(ze_device_handle_t dev)
{
    ze_command_queue_handle_t q = sample_queue(&env, dev, 0, 0);
    ze_command_list_handle_t l = sample_list(&env, dev, 0);
    hgtxRangePushA("all");
    hgtxRangePushA("rec");
    busy(l, 400000);
    busy(l, 100000);
    hgtxRangePop();
    SAMPLE_CHECK(zeCommandListClose(l));
    for (int i = 0; i < 2; i++) {
        hgtxRangePushA("step");
        SAMPLE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &l, NULL));
        SAMPLE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
        hgtxRangePop();
    }
    hgtxRangePop();
    SAMPLE_CHECK(zeCommandListDestroy(l));
    SAMPLE_CHECK(zeCommandQueueDestroy(q));
}

/* "rec": a regular list with kernels of 1 us and 2 us recorded; "loop" around 10000 executions
 * of it, then the list is destroyed (the aggregator's projection state must stay bounded) */
#define PROJ_MANY 10000
static void manyexec(ze_device_handle_t dev)
{
    ze_command_queue_handle_t q = sample_queue(&env, dev, 0, 0);
    ze_command_list_handle_t l = sample_list(&env, dev, 0);
    hgtxRangePushA("rec");
    busy(l, 1000);
    busy(l, 2000);
    hgtxRangePop();
    SAMPLE_CHECK(zeCommandListClose(l));
    hgtxRangePushA("loop");
    for (int i = 0; i < PROJ_MANY; i++) {
        SAMPLE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &l, NULL));
        SAMPLE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
    }
    hgtxRangePop();
    SAMPLE_CHECK(zeCommandListDestroy(l));
    SAMPLE_CHECK(zeCommandQueueDestroy(q));
}

/* N instances of "it", each around one 2 us kernel, every 4th around two 20 us kernels: the
 * projected duration and ops per instance have means far from their medians */
static void manymed(ze_command_list_handle_t l, int n)
{
    for (int i = 0; i < n; i++) {
        hgtxRangePushA("it");
        busy(l, i % 4 ? 2000 : 20000);
        if (i % 4 == 0)
            busy(l, 20000);
        sync_list(l);
        hgtxRangePop();
    }
}

/* "run" around: 3 executions of a list recorded in "rec1" (1 us kernel), its reset, a new
 * recording in "rec2" (2 us kernel), 2 executions, the destroy */
static void relist(ze_device_handle_t dev)
{
    ze_command_queue_handle_t q = sample_queue(&env, dev, 0, 0);
    ze_command_list_handle_t l = sample_list(&env, dev, 0);
    hgtxRangePushA("rec1");
    busy(l, 1000);
    hgtxRangePop();
    SAMPLE_CHECK(zeCommandListClose(l));
    hgtxRangePushA("run");
    for (int i = 0; i < 5; i++) {
        if (i == 3) {
            SAMPLE_CHECK(zeCommandListReset(l));
            hgtxRangePushA("rec2");
            busy(l, 2000);
            hgtxRangePop();
            SAMPLE_CHECK(zeCommandListClose(l));
        }
        SAMPLE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &l, NULL));
        SAMPLE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
    }
    hgtxRangePop();
    SAMPLE_CHECK(zeCommandListDestroy(l));
    SAMPLE_CHECK(zeCommandQueueDestroy(q));
}

/* start/end "xr" begun on main, ended on thread B after B launched a kernel inside it */
static struct { hgtxRangeId_t id; ze_command_list_handle_t l; } xs;
static void *thread_b(void *arg)
{
    (void)arg;
    busy(xs.l, 1000000);
    sync_list(xs.l);
    hgtxRangeEnd(xs.id);
    return NULL;
}

static void xthread(ze_command_list_handle_t l)
{
    xs.l = l;
    xs.id = hgtxRangeStartA("xr");
    sleep_ns(2000000);
    pthread_t b;
    pthread_create(&b, NULL, thread_b, NULL);
    pthread_join(b, NULL);
}

/* start/end "xa" begun on main, which launches 3 kernels (0.2 ms) in it, ended on thread B after B
 * launched 2 (0.3 ms): both threads' kernels belong to it (started or ended by the launching
 * thread). B exists (its ring too) before the range starts and ends it right after main's
 * launches, so the aggregator may drain B's end before main's launch records. */
static sem_t go_b;
static void *thread_b2(void *arg)
{
    (void)arg;
    hgtxMarkA("b ready");
    while (sem_wait(&go_b) != 0)
        ;
    busy(lists[1], 300000);
    busy(lists[1], 300000);
    hgtxRangeEnd(xs.id);
    sync_list(lists[1]);
    return NULL;
}

static void xthread2(void)
{
    pthread_t b;
    sem_init(&go_b, 0, 0);
    pthread_create(&b, NULL, thread_b2, NULL);
    sleep_ns(5000000);
    xs.id = hgtxRangeStartA("xa");
    for (int i = 0; i < 3; i++)
        busy(lists[0], 200000);
    sem_post(&go_b);
    pthread_join(b, NULL);
    sync_list(lists[0]);
}

/* start/end "xe" begun on thread A (created after B, so A's ring is drained first), one kernel
 * (0.1 ms) launched inside, ended on B; A then launches 2 more (0.2 ms) after the end: only the first
 * belongs to "xe" (a launch after the end, drained before it, must not) */
static sem_t go_end, ended;
static void *thread_end(void *arg)
{
    (void)arg;
    hgtxMarkA("end thread ready");
    while (sem_wait(&go_end) != 0)
        ;
    hgtxRangeEnd(xs.id);
    sem_post(&ended);
    return NULL;
}

static void *thread_start(void *arg)
{
    (void)arg;
    xs.id = hgtxRangeStartA("xe");
    busy(lists[0], 100000);
    sem_post(&go_end);
    while (sem_wait(&ended) != 0)
        ;
    busy(lists[0], 200000);
    busy(lists[0], 200000);
    sync_list(lists[0]);
    return NULL;
}

static void xthread3(void)
{
    pthread_t a, b;
    sem_init(&go_end, 0, 0);
    sem_init(&ended, 0, 0);
    pthread_create(&b, NULL, thread_end, NULL);
    sleep_ns(3000000);
    pthread_create(&a, NULL, thread_start, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
}

/* start/end "xb" begun on main, ended on B after B launched 100 kernels (2 us) inside it: more than
 * the aggregator's per-thread launch history, all of them belong to "xb" */
static void *thread_many(void *arg)
{
    (void)arg;
    for (int i = 0; i < 100; i++)
        busy(lists[1], 2000);
    sync_list(lists[1]);
    hgtxRangeEnd(xs.id);
    return NULL;
}

static void xthread4(void)
{
    xs.id = hgtxRangeStartA("xb");
    pthread_t b;
    pthread_create(&b, NULL, thread_many, NULL);
    pthread_join(b, NULL);
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "";
    sample_env_init(&env, 1);
    ze_device_handle_t dev = env.devices[0];
    ze_module_handle_t mod = sample_module_native(&env, dev, "SIMDEV-MODULE 1\nkernel busy_ns\n");
    kern = sample_kernel(mod, "busy_ns", 1);
    ze_command_list_handle_t *l = lists;
    ze_event_pool_handle_t pool = sample_event_pool(&env, 3, 0);
    for (uint32_t e = 0; e < 3; e++) {
        l[e] = sample_immediate(&env, dev, 0, e);
        done[e] = sample_event(pool, e);
    }
    if (!strcmp(what, "nested"))
        nested(l[0]);
    else if (!strcmp(what, "overlap"))
        overlap(l[0], l[1], l[2]);
    else if (!strcmp(what, "graph"))
        graph(dev);
    else if (!strcmp(what, "recstep"))
        recstep(dev);
    else if (!strcmp(what, "xthread"))
        xthread(l[0]);
    else if (!strcmp(what, "xthread2"))
        xthread2();
    else if (!strcmp(what, "xthread3"))
        xthread3();
    else if (!strcmp(what, "xthread4"))
        xthread4();
    else if (!strcmp(what, "manyexec"))
        manyexec(dev);
    else if (!strcmp(what, "relist"))
        relist(dev);
    else if (!strcmp(what, "manymed") && argc > 2)
        manymed(l[0], atoi(argv[2]));
    else
        sample_die("usage: %s nested|overlap|graph|recstep|xthread|xthread2|xthread3|xthread4|manyexec|relist|manymed N (got '%s')", argv[0], what);
    for (uint32_t e = 0; e < 3; e++) {
        SAMPLE_CHECK(zeCommandListDestroy(l[e]));
        SAMPLE_CHECK(zeEventDestroy(done[e]));
    }
    SAMPLE_CHECK(zeEventPoolDestroy(pool));
    SAMPLE_CHECK(zeKernelDestroy(kern));
    SAMPLE_CHECK(zeModuleDestroy(mod));
    sample_env_fini(&env);
    return 0;
}
