/* exitwatch.c - ends a process whose exit() is deadlocked after the agent's part of it was done. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../collector/collector.h"
#include "../collector/config.h"
#include "../common/pa_log.h"
#include "../common/pa_thread.h"
#include "session.h"

/* Why a watchdog: exit() is not async-signal-safe, yet applications call it from signal handlers.
 * One that interrupted the allocator while it held a lock (a sanitizer build's size-class lock,
 * shared by all threads) goes on, once the agent's exit part is done, into the handlers and
 * destructors of the libraries (the Level Zero loader's frees), which wait for that lock on the
 * thread that holds it: the process never ends. What marks such a process: every application
 * thread waits, without a timeout, on a private futex (only a thread of the process can wake it)
 * or in pause()/sigsuspend(), and none of them uses any CPU. Then nothing inside the process can
 * ever end the wait; a process that is only slow (a destructor doing real work uses CPU), one
 * waiting for a thread that runs, for a timed wait, for I/O or for another process (read, poll,
 * waitpid, a shared futex, nanosleep) never looks so. Once that lasted PROFAGENT_EXIT_TIMEOUT_MS
 * + 1 s, the process ends with the status exit() was given, as it would have. Only raw system
 * calls and stack buffers here: the allocator's lock may be the one held. */

static _Atomic int exit_status_known;
static _Atomic int exit_status;

void pa_exitwatch_note_status(int status)
{
    if (atomic_exchange(&exit_status_known, 1))
        return; /* the first exit() owns the ending (session.c parks the others) */
    atomic_store(&exit_status, status);
}

static int raw_open(const char *path, int flags)
{
    return (int)syscall(SYS_openat, AT_FDCWD, path, flags | O_CLOEXEC, 0);
}

/* The file's first size-1 bytes into buf, NUL-terminated; length, or -1. */
static long read_small(const char *path, char *buf, long size)
{
    int fd = raw_open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    long n = (long)syscall(SYS_read, fd, buf, size - 1);
    syscall(SYS_close, fd);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return n;
}

static const char *parse_hex(const char *p, uint64_t *v)
{
    *v = 0;
    while (*p == ' ')
        p++;
    if (p[0] == '0' && p[1] == 'x')
        p += 2;
    for (;; p++) {
        unsigned d = *p >= '0' && *p <= '9' ? (unsigned)(*p - '0')
                     : *p >= 'a' && *p <= 'f' ? (unsigned)(*p - 'a' + 10) : 16u;
        if (d == 16)
            return p;
        *v = *v << 4 | d;
    }
}

/* "/proc/self/task/<tid>/<leaf>" into buf[64]. */
static void task_path(char *buf, const char *tid, const char *leaf)
{
    static const char pre[] = "/proc/self/task/";
    char *o = buf;
    for (const char *s = pre; *s;)
        *o++ = *s++;
    for (int i = 0; tid[i] && i < 12; i++)
        *o++ = tid[i];
    *o++ = '/';
    for (const char *s = leaf; *s;)
        *o++ = *s++;
    *o = '\0';
}

/*! pa_exitwatch_stuck_wait() : 1 when /proc/.../syscall's text `sc` ("nr a0 a1 a2 a3 a4 a5 sp pc")
 *  is a wait nothing outside the process can end and no timeout ends: futex FUTEX_WAIT,
 *  FUTEX_WAIT_BITSET or FUTEX_LOCK_PI(2) on a private futex with no timeout, pause(),
 *  rt_sigsuspend(); else 0 ("running", other calls, a timed or shared futex wait). */
int pa_exitwatch_stuck_wait(const char *sc)
{
    uint64_t nr = 0;
    const char *p = sc;
    if (*p < '0' || *p > '9')
        return 0; /* "running", or "-1 ..." (blocked outside a system call) */
    for (; *p >= '0' && *p <= '9'; p++)
        nr = nr * 10 + (uint64_t)(*p - '0');
    if (*p != ' ')
        return 0;
#ifdef SYS_pause
    if (nr == SYS_pause)
        return 1;
#endif
    if (nr == SYS_rt_sigsuspend)
        return 1;
    if (nr != SYS_futex)
        return 0;
    uint64_t a[4];
    for (int i = 0; i < 4; i++)
        p = parse_hex(p, &a[i]);
    uint64_t op = a[1] & ~(uint64_t)(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME);
    int wait = op == FUTEX_WAIT || op == FUTEX_WAIT_BITSET || op == FUTEX_LOCK_PI || op == 13 /* LOCK_PI2 */;
    return wait && (a[1] & FUTEX_PRIVATE_FLAG) && a[3] == 0;
}

/* CPU time (ns) thread `tid` of this process used so far (its thread CPU clock), or 0. */
static uint64_t task_cpu_ns(int tid)
{
    struct timespec ts;
    if (syscall(SYS_clock_gettime, (clockid_t)((~(unsigned)tid << 3) | 6), &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

typedef struct scan {
    int stuck;     /* 1: every application thread is in a stuck wait */
    uint64_t sig;  /* the threads' ids and CPU times folded: equal while nothing ran */
    int threads;   /* application threads seen */
} scan_t;

/* One look at every thread of the process (the agent's own left out). */
static void scan_threads(scan_t *s)
{
    s->stuck = 1, s->sig = 1469598103934665603ull, s->threads = 0;
    int dfd = raw_open("/proc/self/task", O_RDONLY | O_DIRECTORY);
    if (dfd < 0) {
        s->stuck = 0;
        return;
    }
    char ents[4096] __attribute__((aligned(8)));
    for (long n; s->stuck && (n = (long)syscall(SYS_getdents64, dfd, ents, sizeof ents)) > 0;) {
        for (long off = 0; off < n && s->stuck;) {
            /* struct linux_dirent64: ino 8, off 8, reclen 2, type 1, name */
            unsigned short reclen = *(unsigned short *)(ents + off + 16);
            const char *name = ents + off + 19;
            off += reclen;
            if (name[0] < '0' || name[0] > '9')
                continue;
            int tid = 0;
            for (const char *c = name; *c >= '0' && *c <= '9'; c++)
                tid = tid * 10 + (*c - '0');
            if (pa_thread_is_agent_tid((uint32_t)tid))
                continue;
            char path[64], buf[512];
            task_path(path, name, "stat");
            if (read_small(path, buf, sizeof buf) <= 0)
                continue; /* ended meanwhile */
            const char *rp = buf, *q;
            for (q = buf; *q; q++) /* "tid (comm) S ...": comm may hold spaces and parentheses */
                if (*q == ')')
                    rp = q;
            char state = rp[0] == ')' && rp[1] == ' ' ? rp[2] : '?';
            if (state == 'Z' || state == 'X')
                continue;
            task_path(path, name, "syscall");
            if (state != 'S' || read_small(path, buf, sizeof buf) <= 0 || !pa_exitwatch_stuck_wait(buf)) {
                s->stuck = 0; /* runs, sleeps for a time, waits for I/O, is stopped (a debugger) */
                break;
            }
            s->threads++;
            s->sig = (s->sig ^ (uint64_t)tid) * 1099511628211ull;
            s->sig = (s->sig ^ task_cpu_ns(tid)) * 1099511628211ull;
        }
    }
    syscall(SYS_close, dfd);
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Why a thread of its own: the watch used to run on the finisher thread once pa_finish() was
 * done, but the finisher may itself block for good on a lock the exiting thread holds (its exit()
 * from a signal handler interrupted malloc): the exit's wait then gives up on it and goes on into
 * the libraries' destructors, which block on that lock too, and no watch ran at all. This thread
 * starts with the session's other threads, allocates nothing and takes no lock once started: it
 * sleeps on its futex word until the exit asks for the watch (the agent's exit part done or given
 * up), then runs it. */
static _Atomic int watch_armed; /* futex word: 1 once an exit() asked for the watch */
static int watch_started;

static void watch(void)
{
    uint64_t stall = (pa_config.exit_timeout_ms + 1000) * 1000000ull, since = mono_ns(), last = 0;
    for (;;) {
        struct timespec tick = {0, 100000000}; /* 100 ms: the stall's resolution */
        syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &tick, NULL);
        scan_t s;
        scan_threads(&s);
        uint64_t now = mono_ns();
        s.stuck &= s.threads > 0; /* none left: the exit runs on an agent thread, nothing to judge */
        if (!s.stuck || s.sig != last || !pa_thread_agent_tids_complete()) {
            last = s.stuck ? s.sig : 0;
            since = now;
            continue;
        }
        if (now - since < stall)
            continue;
        int status = atomic_load(&exit_status);
        pa_warn("agent", "the process did not end %.1f s after exit(%d): its %d threads all wait on locks held within"
                " the process (a deadlock in an exit handler or a library destructor, after the agent's exit part"
                " was done or given up); ended with exit status %d",
                (double)(now - since) / 1e9, status, s.threads, status & 0xff);
        for (;;)
            syscall(SYS_exit_group, status);
    }
}

static void *watchdog_main(void *arg)
{
    (void)arg;
    pa_thread_mark_agent(); /* before the first arm can come: its watch must leave this thread out */
    while (!atomic_load(&watch_armed))
        syscall(SYS_futex, &watch_armed, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
    watch();
    return NULL;
}

void pa_exitwatch_start(void)
{
    /* the watch's own stack needs are a few KiB (a 4 KiB directory buffer, the message's format) */
    watch_started = pa_thread_spawn(NULL, 128u << 10, watchdog_main, NULL) == 0;
}

int pa_exitwatch_arm(void)
{
    if (!watch_started || !atomic_load(&exit_status_known) || !pa_thread_agent_tids_complete())
        return 0; /* not an exit() (exec, _exit, a fatal signal end the process themselves) */
    if (!atomic_exchange(&watch_armed, 1))
        syscall(SYS_futex, &watch_armed, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    return 1;
}
