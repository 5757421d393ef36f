/* hc_app.c - HGTX ranges with known host-counter behaviour: a 20 ms sleep, a 20 ms spin, N fresh pages
 * touched, a start/end on one thread and one across threads; or a pool of threads (fd count checked).
 * usage: hc_app ranges [PAGES] | hc_app pool [THREADS]; exit status 7 (checked unchanged). */
#include <dirent.h>
#include <profagent/hgtx.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The thread's run delay (ns waiting on a run queue: /proc/thread-self/schedstat's second field,
 * on the scheduler's rq_clock); -1 when the kernel has no schedstat (CONFIG_SCHED_INFO off). */
static int64_t run_delay_ns(void)
{
    char b[128] = {0};
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    unsigned long long run = 0, wait = 0;
    int ok = f && fgets(b, sizeof b, f) && sscanf(b, "%llu %llu", &run, &wait) == 2;
    if (f)
        fclose(f);
    return ok ? (int64_t)wait : -1;
}

static volatile uint64_t sink;

/* Spins until this thread used `ns` of CPU (not wall) time: on a loaded machine a wall-clock spin
 * would be descheduled part of the time and count less task-clock. */
static void spin_cpu_ns(uint64_t ns)
{
    uint64_t end = cpu_ns() + ns;
    while (cpu_ns() < end)
        sink++;
}

static void spin_ns(uint64_t ns)
{
    uint64_t end = now_ns() + ns;
    while (now_ns() < end)
        sink++;
}

/* perf_event fds open in the process (the counters' groups); other fds are left out: the agent
 * opens its DB (with its journal files) whenever the session has run long enough, which a loaded
 * machine makes happen between two counts. With "list", the others are printed as "fd TARGET". */
static int count_perf_fds(int list)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    for (struct dirent *e; d && (e = readdir(d));) {
        char target[256];
        ssize_t k = e->d_name[0] == '.' ? -1 : readlinkat(dirfd(d), e->d_name, target, sizeof target - 1);
        if (k < 0)
            continue;
        target[k] = 0;
        if (strcmp(target, "anon_inode:[perf_event]") == 0)
            n++;
        else if (list)
            printf("fd %s %s\n", e->d_name, target);
    }
    if (d)
        closedir(d);
    return n;
}

static hgtxRangeId_t cross_id;

static void *ender(void *arg)
{
    (void)arg;
    hgtxRangeEnd(cross_id);
    return NULL;
}

static int ranges(long pages)
{
    /* The thread's CPU time over each range, measured by the app (CLOCK_THREAD_CPUTIME_ID): the
     * independent value task-clock is checked against. On a VM, task-clock also counts the time
     * the hypervisor took the vCPU away while this thread held it (steal time), which
     * CLOCK_THREAD_CPUTIME_ID leaves out: the app measures that too, as its time on a CPU
     * (wall time minus run-queue wait) minus its CPU time, over the spin. */
    for (int i = 0; i < 3; i++) {
        uint64_t c0 = cpu_ns();
        hgtxRangePushA("sleep20");
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
        hgtxRangePop();
        /* wall outside, run delay inside: a wait the reads miss only makes the on-CPU time larger */
        uint64_t w1 = now_ns();
        int64_t d1 = run_delay_ns();
        uint64_t c1 = cpu_ns();
        hgtxRangePushA("spin20");
        spin_cpu_ns(20000000);
        hgtxRangePop();
        uint64_t c2 = cpu_ns();
        int64_t d2 = run_delay_ns();
        uint64_t w2 = now_ns();
        long long steal = d1 < 0 || d2 < 0 ? -1 : (long long)((w2 - w1) - (uint64_t)(d2 - d1)) - (long long)(c2 - c1);
        printf("sleep20_cpu %llu spin20_cpu %llu spin20_steal %lld\n", (unsigned long long)(c1 - c0),
               (unsigned long long)(c2 - c1), steal < 0 && d1 >= 0 ? 0 : steal);
    }
    long psz = sysconf(_SC_PAGESIZE);
    char *p = mmap(NULL, (size_t)(pages * psz), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return 1;
    hgtxRangePushA("touch");
    for (long i = 0; i < pages; i++)
        p[i * psz] = 1;
    hgtxRangePop();
    munmap(p, (size_t)(pages * psz));
    hgtxRangeId_t id = hgtxRangeStartA("se_spin");
    spin_cpu_ns(5000000);
    hgtxRangeEnd(id);
    cross_id = hgtxRangeStartA("cross");
    pthread_t th;
    pthread_create(&th, NULL, ender, NULL);
    pthread_join(th, NULL);
    printf("pages %ld\n", pages);
    return 0;
}

static pthread_barrier_t all_done;

static void *worker(void *arg)
{
    long k = (long)(intptr_t)arg;
    if (k % 2 == 0) { /* half the pool records ranges; the others never do */
        for (int i = 0; i < 5; i++) {
            hgtxRangePushA("work");
            spin_ns(100000);
            hgtxRangePop();
        }
    } else {
        spin_ns(100000);
    }
    pthread_barrier_wait(&all_done); /* every group of the round is open at once */
    return NULL;
}

static int pool(long n)
{
    int before = count_perf_fds(0);
    pthread_t *th = calloc((size_t)n, sizeof *th);
    pthread_barrier_init(&all_done, NULL, (unsigned)n);
    for (long round = 0; round < 2; round++) { /* twice: a recycled thread gets a new group */
        for (long i = 0; i < n; i++)
            pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
        for (long i = 0; i < n; i++)
            pthread_join(th[i], NULL);
    }
    int after = count_perf_fds(1);
    printf("fds_before %d fds_after %d\n", before, after);
    free(th);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "ranges";
    long arg = argc > 2 ? atol(argv[2]) : 0;
    int rc = strcmp(mode, "pool") == 0 ? pool(arg ? arg : 64) : ranges(arg ? arg : 256);
    fflush(stdout);
    return rc ? rc : 7;
}
