/* hc_app.c - HGTX ranges with known host-counter behaviour: a 20 ms sleep, a 20 ms spin, N fresh pages
 * touched, a start/end on one thread and one across threads; or a pool of threads (fd count checked).
 * usage: hc_app ranges [PAGES] | hc_app pool [THREADS]; exit status 7 (checked unchanged). */
#define _GNU_SOURCE /* syscall */
#include <dirent.h>
#include <linux/perf_event.h>
#include <profagent/hgtx.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
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

/* The app's own task-clock: one perf event of this thread, opened and read here with plain
 * system calls (not through the agent's groups, its plan or its records), so its deltas are an
 * independent reading of the very quantity the agent reports. User level, like the agent asks
 * (perf_event_paranoid 2 allows it); -1 when the kernel refuses. */
static int own_tc_fd = -1;

static void own_tc_open(void)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    own_tc_fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/* The thread's task-clock now (ns), -1 without the event. syscall(): the agent interposes read(). */
static long long own_tc(void)
{
    uint64_t v = 0;
    return own_tc_fd >= 0 && syscall(SYS_read, own_tc_fd, &v, sizeof v) == (long)sizeof v ? (long long)v : -1;
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
    /* Around each range the app reads its own task-clock (own_tc: outside the push and the pop,
     * and inside them: the agent's reads lie in between, so its delta must lie between the two),
     * and measures the thread's CPU time (CLOCK_THREAD_CPUTIME_ID) and its time on a CPU (wall
     * time minus run-queue wait, /proc/thread-self/schedstat) over the spin: what task-clock is
     * compared with besides. task-clock is not CPU time on a VM (see docs/hostctr.md). */
    own_tc_open();
    for (int i = 0; i < 3; i++) {
        uint64_t c0 = cpu_ns();
        long long s0 = own_tc();
        hgtxRangePushA("sleep20");
        long long s1 = own_tc();
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
        long long s2 = own_tc();
        hgtxRangePop();
        long long s3 = own_tc();
        /* wall outside, run delay inside: a wait the reads miss only makes the on-CPU time larger */
        uint64_t w1 = now_ns();
        int64_t d1 = run_delay_ns();
        uint64_t c1 = cpu_ns();
        long long t0 = own_tc();
        hgtxRangePushA("spin20");
        long long t1 = own_tc();
        spin_cpu_ns(20000000);
        long long t2 = own_tc();
        hgtxRangePop();
        long long t3 = own_tc();
        uint64_t c2 = cpu_ns();
        int64_t d2 = run_delay_ns();
        uint64_t w2 = now_ns();
        long long steal = d1 < 0 || d2 < 0 ? -1 : (long long)((w2 - w1) - (uint64_t)(d2 - d1)) - (long long)(c2 - c1);
        printf("sleep20_cpu %llu spin20_cpu %llu spin20_steal %lld\n", (unsigned long long)(c1 - c0),
               (unsigned long long)(c2 - c1), steal < 0 && d1 >= 0 ? 0 : steal);
        /* own task-clock deltas: outside, inside the push and pop; the spin's wall outside */
        int own = s0 >= 0 && s3 >= 0 && t0 >= 0 && t3 >= 0;
        printf("own_tc sleep20 %lld %lld spin20 %lld %lld wall %llu\n", own ? s3 - s0 : -1, own ? s2 - s1 : -1,
               own ? t3 - t0 : -1, own ? t2 - t1 : -1, (unsigned long long)(w2 - w1));
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
