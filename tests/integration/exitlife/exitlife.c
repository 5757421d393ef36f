/* exitlife.c - endings that race the agent: Level Zero workers still calling while main returns,
 * pthread_exit() from main, ze calls in atexit handlers, quick_exit(), HGTX before the agent's
 * constructor (preinit_array, a library constructor), a signal during the exit-time DB write.
 * usage: exitlife MODE [args]   (modes in main()) */
#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <level_zero/ze_api.h>
#include <profagent/hgtx.h>

#include "common.h"

static sample_env_t env;
static int worker_no_fill; /* host-side calls only (no device work to wait for) */
static ze_command_list_handle_t imm;

static void nap_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static ze_command_list_handle_t immediate_list(void)
{
    ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                  .mode = ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS};
    ze_command_list_handle_t l;
    SAMPLE_CHECK(zeCommandListCreateImmediate(env.context, env.devices[0], &qd, &l));
    return l;
}

/* One small round of Level Zero work: a property query, a device allocation, a fill, a free. */
static void ze_round(ze_command_list_handle_t l)
{
    ze_device_properties_t p = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
    zeDeviceGetProperties(env.devices[0], &p);
    ze_device_mem_alloc_desc_t md = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
    void *buf = NULL;
    if (zeMemAllocDevice(env.context, &md, 256, 64, env.devices[0], &buf) == ZE_RESULT_SUCCESS) {
        int v = 7;
        if (!worker_no_fill)
            zeCommandListAppendMemoryFill(l, buf, &v, sizeof v, 256, NULL, 0, NULL);
        zeMemFree(env.context, buf);
    }
}

static long worker_pace_us;
static atomic_long rounds;

/* Loops on Level Zero (and HGTX) until the process ends: never joined. */
static void *ze_worker(void *arg)
{
    (void)arg;
    ze_command_list_handle_t l = immediate_list();
    for (;;) {
        hgtxRangePushA("worker");
        ze_round(l);
        hgtxRangePop();
        atomic_fetch_add(&rounds, 1);
        if (worker_pace_us < 0) /* flat out, but a runnable thread of the agent goes first */
            sched_yield();
        else if (worker_pace_us)
            nap_us(worker_pace_us);
    }
    return NULL;
}

/* A tight producer: HGTX ranges around a cheap Level Zero query, as fast as it goes. */
static void *tight_worker(void *arg)
{
    (void)arg;
    ze_device_properties_t p = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
    for (unsigned long i = 0;; i++) {
        hgtxRangePushA("tight");
        if ((i & 15) == 0)
            zeDeviceGetProperties(env.devices[0], &p);
        hgtxRangePop();
        if ((i & 1023) == 0)
            atomic_fetch_add(&rounds, 1024);
    }
    return NULL;
}

static long burst_n;
/* Nested push/pop bursts: 3 levels, every range closed before the thread ends. */
static void *burst_worker(void *arg)
{
    (void)arg;
    for (long i = 0; i < burst_n; i++) {
        hgtxRangePushA("b0");
        hgtxRangePushA("b1");
        hgtxRangePushA("b2");
        hgtxRangePop();
        hgtxRangePop();
        hgtxRangePop();
    }
    return NULL;
}

static void *hgtx_worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 20; i++) {
        hgtxRangePushA("pt_worker");
        nap_us(5000);
        hgtxRangePop();
    }
    return NULL;
}

static void atexit_ze(void)
{
    hgtxRangePushA("atexit_range");
    for (int i = 0; i < 5; i++)
        ze_round(imm);
    hgtxRangePop();
    ze_device_properties_t p = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
    printf("atexit: zeDeviceGetProperties %d\n", (int)zeDeviceGetProperties(env.devices[0], &p));
}

/* ---- HGTX before the agent's constructor ---- */
static int early_mode;
static void early_pushes(void)
{
    if (!early_mode)
        return;
    hgtxRangePushA("early_outer");
    hgtxRangePushA("early_inner");
    hgtxRangePop();
    hgtxMarkA("early_mark");
}

/* preinit_array runs before any shared library's constructor, the agent's included */
static void preinit(int argc, char **argv, char **envp)
{
    (void)envp;
    early_mode = argc > 1 && strcmp(argv[1], "preinit") == 0;
    early_pushes();
}
__attribute__((section(".preinit_array"), used)) static void (*const preinit_fn)(int, char **, char **) = preinit;

/* defined in libexitlife_early.so: its constructor pushes "lib_outer" when EXITLIFE_LIBCTOR=1 */
void exitlife_early_pop(void);

/* exit2nd: a second thread calls exit(7) once main made `arg` launches (not after a fixed time:
 * a loaded machine may take longer to set up), while main keeps launching and waiting. */
static atomic_long launched;
static atomic_int exiting; /* the second thread is calling exit(7) */

static void *exit_later(void *arg)
{
    while (atomic_load(&launched) < (long)(intptr_t)arg)
        nap_us(1000);
    atomic_store(&exiting, 1);
    exit(7);
    return NULL;
}

/* 1 when the agent's exit path is over: the DB has its final name and the spool is gone. */
static int session_written(void)
{
    char db[64];
    snprintf(db, sizeof db, "out-%ld.db", (long)getpid());
    if (access(db, F_OK) != 0)
        return 0;
    DIR *d = opendir(".");
    int spool = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        spool |= strstr(e->d_name, ".spool.zst") != NULL;
    if (d)
        closedir(d);
    return !spool;
}

/* A failed call of main's: said on stderr with whether the agent's exit path was over by
 * then (the Level Zero loader's own destructor, which runs after it, makes the calls fail
 * with or without the agent), then main waits for the exiting thread to end the process. */
static void exit2nd_failed(const char *what, ze_result_t r)
{
    fprintf(stderr, "main: %s failed 0x%x %s\n", what, (unsigned)r,
            session_written() ? "after the session was written" : "WHILE THE SESSION ENDED");
    for (;;)
        pause();
}

static void exit2nd(long launches, long exit_after)
{
    sample_env_init(&env, 1);
    sample_busy_t b;
    sample_busy_init(&env, 1, &b);
    ze_kernel_handle_t k = b.kernel;
    ze_command_list_handle_t list = b.list;
    ze_event_handle_t ev = b.event;
    uint64_t ns = 100000;
    sample_set_arg(k, 0, sizeof ns, &ns);
    pthread_t t;
    pthread_create(&t, NULL, exit_later, (void *)(intptr_t)exit_after);
    ze_group_count_t g = {1, 1, 1};
    for (long i = 0; i < launches; i++) {
        ze_result_t r = zeCommandListAppendLaunchKernel(list, k, &g, ev, 0, NULL);
        if (r != ZE_RESULT_SUCCESS)
            exit2nd_failed("zeCommandListAppendLaunchKernel", r);
        if ((r = zeEventHostSynchronize(ev, UINT64_MAX)) != ZE_RESULT_SUCCESS)
            exit2nd_failed("zeEventHostSynchronize", r);
        if ((r = zeEventHostReset(ev)) != ZE_RESULT_SUCCESS)
            exit2nd_failed("zeEventHostReset", r);
        atomic_fetch_add(&launched, 1);
    }
    /* main returns only once the exit(7) began (the race under test: main's return runs exit()
     * meanwhile); a second thread starved for the whole loop on a loaded machine made main's
     * exit(0) the first one (status 0, once in a sanitizer run) */
    while (!atomic_load(&exiting))
        nap_us(1000);
    /* the flag is set just before exit(7) claims the ending: a second thread preempted between
     * the two let main's return claim it first (status 0, 1 of 20 sanitizer runs); 100 ms more */
    nap_us(100000);
    printf("main done\n");
}

/* Waits (bounded: 30 s) until *n reaches want: the workers' own progress, not a fixed time, on a
 * loaded machine where a thread may first be scheduled hundreds of ms after its creation. */
static void await_count(atomic_int *n, int want)
{
    for (int w = 0; w < 300000 && atomic_load(n) < want; w++)
        nap_us(100);
}

/* manyexit: T threads, each launching kernels on its own immediate list, meet main at a barrier
 * and all call exit(10 + i) at once; main calls exit(99) or, with "ret", returns 99 from main()
 * (libc's own exit() call, not the symbol an application calls). RUN_MS counts from the moment
 * every worker made its first launch (a worker first scheduled after a fixed 100 ms made none). */
static pthread_barrier_t manyexit_bar;
static atomic_int manyexit_go, manyexit_launching;
static ze_kernel_handle_t manyexit_k[16];
static ze_command_list_handle_t manyexit_l[16];

static void *manyexit_worker(void *arg)
{
    int i = (int)(intptr_t)arg, first = 1;
    ze_group_count_t g = {1, 1, 1};
    while (!atomic_load(&manyexit_go)) {
        zeCommandListAppendLaunchKernel(manyexit_l[i], manyexit_k[i], &g, NULL, 0, NULL);
        if (first)
            atomic_fetch_add(&manyexit_launching, 1);
        first = 0;
    }
    pthread_barrier_wait(&manyexit_bar);
    exit(10 + i);
    return NULL;
}

static int manyexit(int threads, long run_ms, int ret)
{
    sample_env_init(&env, 1);
    ze_module_handle_t m = sample_module_native(&env, env.devices[0], "SIMDEV-MODULE 1\nkernel busy_ns\n");
    uint64_t ns = 1000;
    threads = threads < 1 ? 1 : threads > 16 ? 16 : threads;
    for (int i = 0; i < threads; i++) {
        manyexit_k[i] = sample_kernel(m, "busy_ns", 1);
        sample_set_arg(manyexit_k[i], 0, sizeof ns, &ns);
        manyexit_l[i] = sample_immediate(&env, env.devices[0], 0, 0);
    }
    pthread_barrier_init(&manyexit_bar, NULL, (unsigned)threads + 1);
    for (int i = 0; i < threads; i++) {
        pthread_t t;
        pthread_create(&t, NULL, manyexit_worker, (void *)(intptr_t)i);
    }
    await_count(&manyexit_launching, threads);
    nap_us(run_ms * 1000);
    atomic_store(&manyexit_go, 1);
    pthread_barrier_wait(&manyexit_bar);
    if (ret)
        return 99;
    exit(99);
}

/* sigexit: workers append kernels on their own asynchronous immediate lists until the process
 * ends; main's SIGALRM handler calls exit(42) meanwhile, so the loader's destructors run while
 * they call. A call failing (the loader's own teardown, as without the agent) parks its thread. */
static ze_kernel_handle_t sig_kernel[16];
static ze_command_list_handle_t sig_list[16];

static void *sig_worker(void *arg)
{
    long i = (long)arg;
    ze_group_count_t g = {1, 1, 1};
    for (;;) {
        if (zeCommandListAppendLaunchKernel(sig_list[i], sig_kernel[i], &g, NULL, 0, NULL) != ZE_RESULT_SUCCESS)
            for (;;)
                pause();
        atomic_fetch_add(&rounds, 1);
    }
    return NULL;
}

/* nosync: THREADS workers, each with its own asynchronous immediate list and kernel, append
 * busy_ns kernels without ever synchronizing for RUN_MS from the moment each made 100 launches,
 * then are joined and main returns: the engine is left with the backlog the threads appended
 * faster than it runs. Prints the launches made. */
static atomic_int nosync_stop, nosync_warm;
static atomic_long nosync_launches;
typedef struct { ze_command_list_handle_t list; ze_kernel_handle_t k; } nosync_t;

static void *nosync_worker(void *arg)
{
    nosync_t *w = arg;
    for (long i = 1; !atomic_load(&nosync_stop); i++) {
        sample_launch_1d(w->list, w->k, 1, 1, NULL);
        atomic_fetch_add(&nosync_launches, 1);
        if (i == 100)
            atomic_fetch_add(&nosync_warm, 1);
    }
    return NULL;
}

static void sig_exit(int sig)
{
    (void)sig;
    exit(42);
}

/* sigexit / sigmalloc: n (1..16) workers, each with a 1 us kernel on its own immediate list,
 * started on `worker` with SIGALRM ending the process by exit(42). Returns n clamped. */
static int sig_start(int n, void *(*worker)(void *))
{
    uint64_t ns = 1000;
    n = n < 1 ? 1 : n > 16 ? 16 : n;
    sample_env_init(&env, 1);
    ze_module_handle_t mod = sample_module_native(&env, env.devices[0], "SIMDEV-MODULE 1\nkernel busy_ns\n");
    for (int i = 0; i < n; i++) {
        sig_kernel[i] = sample_kernel(mod, "busy_ns", 1);
        sample_set_arg(sig_kernel[i], 0, sizeof ns, &ns);
        sig_list[i] = sample_immediate(&env, env.devices[0], 0, 0);
    }
    signal(SIGALRM, sig_exit);
    for (long i = 0; i < n; i++) {
        pthread_t t;
        pthread_create(&t, NULL, worker, (void *)i);
    }
    return n;
}

static void sigexit(int n, long after_ms)
{
    n = sig_start(n, sig_worker);
    for (int w = 0; w < 100000 && atomic_load(&rounds) < 2 * n; w++) /* all calling (bounded: 10 s) */
        nap_us(100);
    struct itimerval it = {{0, 0}, {after_ms / 1000, (after_ms % 1000) * 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
    for (;;)
        pause();
}

/* sigmalloc: like sigexit, but SIGALRM is taken by a worker (main blocks it) and the workers
 * malloc/free blocks above the per-thread caches between their appends, so the handler's exit(42)
 * often interrupts a malloc holding its arena's lock: whatever the exit path allocates on that
 * thread then waits for a lock its own thread holds (exit() is not async-signal-safe, but
 * applications do call it from handlers; without the agent the exit completes). */
static void *sigmalloc_worker(void *arg)
{
    long i = (long)arg;
    ze_group_count_t g = {1, 1, 1};
    unsigned seed = (unsigned)i * 2654435761u;
    void *keep[8] = {0};
    for (unsigned r = 0;; r++) {
        for (int k = 0; k < 64; k++) {
            seed = seed * 1103515245u + 12345u;
            unsigned slot = (seed >> 8) % 8;
            free(keep[slot]);
            keep[slot] = malloc(2048 + (seed >> 16) % 30000); /* beyond tcache: the arena lock */
        }
        if (zeCommandListAppendLaunchKernel(sig_list[i], sig_kernel[i], &g, NULL, 0, NULL) != ZE_RESULT_SUCCESS)
            for (;;)
                pause();
        atomic_fetch_add(&rounds, 1);
    }
    return NULL;
}

static void sigmalloc(int n, long after_ms)
{
    n = sig_start(n, sigmalloc_worker);
    sigset_t alrm;
    sigemptyset(&alrm);
    sigaddset(&alrm, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &alrm, NULL); /* after the workers started: they take it */
    for (int w = 0; w < 100000 && atomic_load(&rounds) < 2 * n; w++) /* all calling (bounded: 10 s) */
        nap_us(100);
    struct itimerval it = {{0, 0}, {after_ms / 1000, (after_ms % 1000) * 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
    for (;;)
        pause();
}

/* blocksync: a thread waits for ever in zeEventHostSynchronize on an event nobody signals while
 * main returns 0: the loader's teardown waits only for the agent's own reads before a forwarded
 * call, never for the application's call itself (it would hold up every such exit). */
static atomic_int blocked_in;

static void *blocked_sync(void *arg)
{
    ze_event_handle_t ev = arg;
    atomic_store(&blocked_in, 1);
    zeEventHostSynchronize(ev, UINT64_MAX);
    for (;;)
        pause();
    return NULL;
}

static int blocksync(long run_ms)
{
    sample_env_init(&env, 1);
    ze_event_handle_t ev = sample_event(sample_event_pool(&env, 1, 0), 0);
    pthread_t t;
    pthread_create(&t, NULL, blocked_sync, ev);
    while (!atomic_load(&blocked_in))
        nap_us(100);
    nap_us(run_ms * 1000); /* inside the call by now */
    return 0;
}

static void nosync(int n, long run_ms)
{
    static nosync_t w[16];
    pthread_t t[16];
    n = n < 1 ? 1 : n > 16 ? 16 : n;
    sample_env_init(&env, 1);
    ze_module_handle_t m = sample_module_native(&env, env.devices[0], "SIMDEV-MODULE 1\nkernel busy_ns\n");
    uint64_t ns = 1000;
    for (int i = 0; i < n; i++) {
        w[i].k = sample_kernel(m, "busy_ns", 1);
        sample_set_arg(w[i].k, 0, sizeof ns, &ns);
        w[i].list = sample_immediate(&env, env.devices[0], 0, 0);
    }
    for (int i = 0; i < n; i++)
        pthread_create(&t[i], NULL, nosync_worker, &w[i]);
    await_count(&nosync_warm, n);
    nap_us(run_ms * 1000);
    atomic_store(&nosync_stop, 1);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    printf("launches %ld\n", atomic_load(&nosync_launches));
}

int main(int argc, char **argv)
{
    const char *mode0 = argc > 1 ? argv[1] : "";
    if (strcmp(mode0, "sigexit") == 0) { /* sigexit N AFTER_MS: exit(42) from SIGALRM while N threads append */
        sigexit(argc > 2 ? atoi(argv[2]) : 4, argc > 3 ? atol(argv[3]) : 100);
        return 0;
    }
    if (strcmp(mode0, "sigmalloc") == 0) { /* sigmalloc N AFTER_MS: exit(42) from SIGALRM on a worker in malloc */
        sigmalloc(argc > 2 ? atoi(argv[2]) : 4, argc > 3 ? atol(argv[3]) : 100);
        return 0;
    }
    if (strcmp(mode0, "blocksync") == 0) /* blocksync RUN_MS: main returns while a thread blocks in a sync */
        return blocksync(argc > 2 ? atol(argv[2]) : 50);
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "exit2nd") == 0) { /* exit2nd LAUNCHES EXIT_AFTER: exit(7) from a second thread */
        exit2nd(argc > 2 ? atol(argv[2]) : 4000, argc > 3 ? atol(argv[3]) : 1000);
        return 0;
    }
    if (strcmp(mode, "manyexit") == 0) /* manyexit THREADS RUN_MS [ret]: all threads exit at once */
        return manyexit(argc > 2 ? atoi(argv[2]) : 4, argc > 3 ? atol(argv[3]) : 100,
                        argc > 4 && strcmp(argv[4], "ret") == 0);
    if (strcmp(mode, "nosync") == 0) { /* nosync THREADS RUN_MS: launches never synchronized */
        nosync(argc > 2 ? atoi(argv[2]) : 2, argc > 3 ? atol(argv[3]) : 300);
        return 0;
    }
    if (strcmp(mode, "zeworkers") == 0) { /* zeworkers N PACE_US RUN_MS [nofill]: main returns meanwhile;
                                            * PACE_US -1: sched_yield() between rounds */
        int n = argc > 2 ? atoi(argv[2]) : 1;
        worker_pace_us = argc > 3 ? atol(argv[3]) : 0;
        worker_no_fill = argc > 5 && strcmp(argv[5], "nofill") == 0;
        long run_ms = argc > 4 ? atol(argv[4]) : 300;
        sample_env_init(&env, 1);
        for (int i = 0; i < n; i++) {
            pthread_t t;
            pthread_create(&t, NULL, ze_worker, NULL);
        }
        /* every worker in its loop before the clock starts (bounded: 10 s), so even a short run
         * ends with all of them calling */
        for (int w = 0; w < 100000 && atomic_load(&rounds) < 2 * n; w++)
            nap_us(100);
        hgtxRangePushA("main");
        nap_us(run_ms * 1000);
        hgtxRangePop();
        printf("rounds %ld\n", atomic_load(&rounds));
        return 0;
    }
    if (strcmp(mode, "tight") == 0) { /* tight N RUN_MS: producers flat out while main returns */
        int n = argc > 2 ? atoi(argv[2]) : 4;
        long run_ms = argc > 3 ? atol(argv[3]) : 400;
        sample_env_init(&env, 1);
        for (int i = 0; i < n; i++) {
            pthread_t t;
            pthread_create(&t, NULL, tight_worker, NULL);
        }
        nap_us(run_ms * 1000);
        printf("rounds %ld\n", atomic_load(&rounds));
        return 0;
    }
    if (strcmp(mode, "burst") == 0) { /* burst THREADS N: every range is closed; rings overflow */
        int n = argc > 2 ? atoi(argv[2]) : 8;
        burst_n = argc > 3 ? atol(argv[3]) : 20000;
        pthread_t t[64];
        for (int i = 0; i < n && i < 64; i++)
            pthread_create(&t[i], NULL, burst_worker, NULL);
        for (int i = 0; i < n && i < 64; i++)
            pthread_join(t[i], NULL);
        return 0;
    }
    if (strcmp(mode, "pthread_exit") == 0) {
        pthread_t t;
        pthread_create(&t, NULL, hgtx_worker, NULL);
        hgtxRangePushA("pt_main");
        hgtxRangePop();
        pthread_exit(NULL);
    }
    if (strcmp(mode, "atexit_ze") == 0) {
        sample_env_init(&env, 1);
        imm = immediate_list();
        atexit(atexit_ze);
        ze_round(imm);
        return 0;
    }
    if (strcmp(mode, "quick_exit") == 0) {
        for (int i = 0; i < 10; i++) {
            hgtxRangePushA("quick");
            hgtxRangePop();
        }
        quick_exit(3);
    }
    if (strcmp(mode, "preinit") == 0) { /* preinit [ze]: ze also initializes Level Zero */
        hgtxRangePop(); /* closes early_outer */
        hgtxRangePushA("main_range");
        hgtxRangePop();
        if (argc > 2 && strcmp(argv[2], "ze") == 0) {
            sample_env_init(&env, 1);
            sample_env_fini(&env);
        }
        return 0;
    }
    if (strcmp(mode, "libctor") == 0) {
        exitlife_early_pop(); /* closes lib_outer */
        hgtxRangePushA("main_range");
        hgtxRangePop();
        return 0;
    }
    if (strcmp(mode, "sigwrite") == 0) { /* many ranges: a slow exit-time DB write; the driver
                                            sends SIGTERM/SIGINT while it runs */
        long n = argc > 2 ? atol(argv[2]) : 400000;
        for (long i = 0; i < n; i++) {
            hgtxRangePushA("bulk");
            hgtxRangePop();
            if ((i & 1023) == 0)
                nap_us(50); /* let the aggregator keep up: nothing dropped */
        }
        printf("done\n");
        fflush(stdout);
        return 0;
    }
    fprintf(stderr, "exitlife: unknown mode '%s'\n", mode);
    return 2;
}
