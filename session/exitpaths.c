/* exitpaths.c - finalizes the session when the process ends without exit(): fatal signals (handlers in
 * signals.c), exec, _exit. */
#define _GNU_SOURCE /* RTLD_NEXT, execvpe */
#include <alloca.h>
#include <dlfcn.h>
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/resource.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "../collector/collector.h"
#include "../collector/config.h"
#include "../common/pa_log.h"
#include "../common/pa_thread.h"
#include "session.h"

/* Why a finisher thread: a signal handler (or _exit called from one) interrupts a thread
 * that may hold the malloc or stdio lock, and pa_finish() needs both. Running pa_finish() on
 * the interrupted thread could deadlock for good; running it on a thread of our own, while
 * the interrupted thread only polls a flag with raw syscalls (async-signal-safe), bounds the
 * damage: if the finisher blocks, the wait times out and the process ends as it would have
 * without the agent (spool kept: `profagent recover`). */

static _Atomic int fin_req;     /* futex word: 0 idle, 1 = finish now, 2 = main called pthread_exit(),
                                  3 = pa_finish() ran elsewhere: watch the exit's rest
                                  (one word for both, so a pthread_exit() between the finisher's
                                  check and its wait changes the word and cannot be a lost wake-up) */
static int finisher_started;
static _Atomic int finisher_tid; /* gettid() of the finisher thread */
static _Atomic int wait_gave_up; /* a bounded wait timed out: later ones (the destructor's) do not wait again */

/* Why the waiting thread lends its ring: the exit path's sources turn what is in flight into
 * records (the ze flush: the last device operations) and emit them on the thread running
 * pa_finish(); the finisher is an agent thread without a ring and none is created once the exit
 * began, so they were lost (exitlife nosync: 22 of 11,084 launches in ZE_OPS). The waiting
 * thread gives its ring (and the tid and open-push count its records carry) to the finisher
 * for good: it writes nothing meanwhile, and after the wait it has no ring (whatever it records
 * later is counted late), so the ring keeps a single producer even when the wait times out. Not
 * lent when the signal interrupted pa_emit() on this thread (the ring is mid-write). */
static pa_ring_t *lent_ring;
static uint32_t lent_tid, lent_hgtx_open;
static _Atomic int lent_ok;

static void ring_lend(void)
{
    if (!pa_tls.ring || pa_tls.emitting || atomic_load(&lent_ok))
        return;
    lent_ring = pa_tls.ring;
    lent_tid = pa_tls.tid;
    lent_hgtx_open = pa_tls.hgtx_open;
    pa_tls.ring = NULL;
    pa_tls.state = PA_THREAD_NORING;
    atomic_store_explicit(&lent_ok, 1, memory_order_release); /* before fin_req's store */
}

static void ring_borrow(void)
{
    if (!atomic_load_explicit(&lent_ok, memory_order_acquire))
        return;
    pa_tls.ring = lent_ring;
    pa_tls.tid = lent_tid;
    pa_tls.hgtx_open = lent_hgtx_open;
}
static _Atomic int deferred_sig; /* a fatal signal that interrupted pa_finish() on its own thread */
static _Atomic int sig_in_finish; /* a fatal signal came (on any thread) while pa_finish() ran */
_Atomic int pa_finish_tid;      /* thread running pa_finish() (session.c sets it) */

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
static execve_fn real_execve, real_execvpe;
static fexecve_fn real_fexecve;
static pid_t ep_owner; /* the process that ran pa_exitpaths_init(): its session's owner */

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* async-signal-safe (vDSO) */
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* 1 when no application thread is left: every thread of the process that is not a zombie
 * (the main thread after pthread_exit) is one of the agent's own. */
static int app_threads_gone(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return 0;
    int live = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], buf[256];
        snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
        if (fd >= 0)
            close(fd);
        if (n <= 0)
            continue; /* gone meanwhile */
        buf[n] = '\0';
        const char *rp = strrchr(buf, ')'); /* "tid (comm) S ..." : comm may hold spaces */
        if (rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X'))
            continue;
        live++;
    }
    closedir(d);
    return live <= atomic_load(&pa_agent_threads);
}

/* Why the finisher also watches for the last application thread: when main calls
 * pthread_exit() the process ends once its last thread ends, but the agent's own threads
 * (this one, the aggregator) would keep it alive for ever and no DB would be written. So
 * once main has exited, the finisher checks every 10 ms and, when only agent threads are
 * left, ends the process as glibc would have: exit(0) (atexit handlers, then the DB). */
static void *finisher_main(void *arg)
{
    (void)arg;
    pa_thread_mark_agent();
    atomic_store(&finisher_tid, (int)syscall(SYS_gettid));
    /* its malloc arena now, at the session's start: a thread's first malloc takes an arena from
     * glibc's free list, i.e. one an ended application thread left. At exit that was the arena
     * of a joined worker whose jobs simdev's engine was still freeing: the exit path's
     * allocations and those frees shared one lock, and with the holder preempted on a loaded
     * machine the flush saw the device stalled for 200 ms (exitlife nosync: 49 of 9,086 kernels
     * collected, 1 of 20 runs) */
    void *volatile arena_pin = malloc(64);
    free(arena_pin);
    struct timespec tick = {0, 10000000};
    int v;
    while ((v = atomic_load(&fin_req)) != 1 && v != 3) {
        int watching = v == 2;
        if (watching && app_threads_gone())
            exit(0);
        syscall(SYS_futex, &fin_req, FUTEX_WAIT_PRIVATE, v, watching ? &tick : NULL, NULL, 0);
    }
    if (v == 1) {
        ring_borrow();
        pa_finish();
    }
    /* the rest of an exit(), which may deadlock in code not ours, is watched on a thread of its
     * own (exitwatch.c); this one then stays as it is (its end would free its malloc cache) */
    if (pa_exitwatch_arm())
        for (int idle = 0;;)
            syscall(SYS_futex, &idle, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
    return NULL;
}

void pa_exitpaths_watch_exit(void)
{
    /* on the finisher (its exit() after main's pthread_exit) no application thread is left to
     * watch: the watch would take any slow destructor for a deadlock */
    if (getpid() != ep_owner || (finisher_started && syscall(SYS_gettid) == atomic_load(&finisher_tid)))
        return;
    pa_exitwatch_arm(); /* from here: the finisher may not get a core soon, the watch must not wait for it */
    if (!finisher_started)
        return;
    int v = atomic_load(&fin_req);
    while (v != 1 && v != 3 && !atomic_compare_exchange_weak(&fin_req, &v, 3)) {
    }
    syscall(SYS_futex, &fin_req, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

typedef void (*pthread_exit_fn)(void *);
static _Atomic(pthread_exit_fn) real_pthread_exit;

PA_EXPORT void pthread_exit(void *retval)
{
    /* asked even before the finisher started: one started later sees the word and watches */
    if (syscall(SYS_gettid) == getpid() && pa_session_active()) {
        int idle = 0; /* a finish already asked for (1) stays asked for */
        atomic_compare_exchange_strong(&fin_req, &idle, 2);
        syscall(SYS_futex, &fin_req, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    }
    pthread_exit_fn real = atomic_load(&real_pthread_exit);
    if (!real) {
        *(void **)&real = dlsym(RTLD_NEXT, "pthread_exit");
        atomic_store(&real_pthread_exit, real);
    }
    real(retval);
    __builtin_unreachable();
}

void pa_exitpaths_start_finisher(void)
{
    /* SQLite + summary: well below 1 MiB of stack */
    finisher_started = pa_thread_spawn(NULL, PA_THREAD_STACK_WORKER, finisher_main, NULL) == 0;
}

/* CPU time the finisher thread used so far (ns): the exit path's progress (the DB's exit part
 * runs on it too, writer/stream.c; the other agent threads wake periodically even when idle,
 * which would read as progress for ever). A thread CPU clock id of another thread of the
 * process is (~tid << 3) | 6 (the kernel's MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED), what
 * pthread_getcpuclockid() returns); a raw syscall, async-signal-safe. */
static uint64_t finisher_cpu_ns(void)
{
    int tid = atomic_load(&finisher_tid);
    struct timespec ts;
    if (tid <= 0 || syscall(SYS_clock_gettime, (clockid_t)((~(unsigned)tid << 3) | 6), &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Why the wait follows the agent's progress rather than a fixed deadline: pa_finish() has its
 * own bounds (the sources' flush, the aggregator's stop: PROFAGENT_EXIT_TIMEOUT_MS) but the
 * exit-time DB write takes as long as the tail and the indexes need (seconds on a loaded
 * machine), which a fixed PROFAGENT_EXIT_TIMEOUT_MS + 1 s cut off (session_complete=0). What must
 * be bounded is a finisher that cannot go on (a lock held by the thread waiting here: a signal
 * handler's exit() that interrupted malloc): then the finisher uses no CPU. Its waits for other
 * threads are bounded by PROFAGENT_EXIT_TIMEOUT_MS (the aggregator's stop) or less, so the wait
 * ends once pa_finish() is done, once the finisher used no CPU for PROFAGENT_EXIT_TIMEOUT_MS +
 * 1 s, and at the latest after 10 times that (60 s by default). */
static void wait_finished(void)
{
    uint64_t stall = (pa_config.exit_timeout_ms + 1000) * 1000000ull;
    uint64_t start = mono_ns(), last = start, cpu = finisher_cpu_ns();
    for (int st; (st = atomic_load(&pa_finish_state)) != 2 && !atomic_load(&wait_gave_up);) {
        uint64_t now = mono_ns(), c = finisher_cpu_ns();
        if (c != cpu) {
            cpu = c;
            last = now;
        }
        if (now - last >= stall || now - start >= 10 * stall) {
            atomic_store(&wait_gave_up, 1);
            break;
        }
        /* woken by pa_finish()'s last store; 10 ms at most (the progress check's period) */
        struct timespec ts = {0, 10000000};
        syscall(SYS_futex, &pa_finish_state, FUTEX_WAIT_PRIVATE, st, &ts, NULL, 0); /* raw: no OSRT wrapper */
    }
}

int pa_exitpaths_finish_bounded(int sig)
{
    int saved = errno, deferred = 0;
    /* a fork/vfork child inherits pa_finish_state == 1 from a finalizing parent but has no
     * finisher thread: only the owner may wait for it */
    if (getpid() != ep_owner || (!pa_session_active() && atomic_load(&pa_finish_state) != 1))
        goto out; /* not ours (fork/vfork child), or already finalized */
    pa_exit_deadline_arm(); /* the hand-off to the finisher counts against the exit's budget */
    if (sig && atomic_load(&pa_finish_state) == 1) /* the exit's DB load stops for it (cut) */
        atomic_store(&sig_in_finish, sig);
    if (sig && atomic_load(&pa_finish_state) == 1 && atomic_load(&pa_finish_tid) == (int)syscall(SYS_gettid)) {
        /* the signal interrupted pa_finish() itself (the exit-time DB write): waiting here would
         * wait for ourselves; let it finish, it raises the signal when done */
        atomic_store(&deferred_sig, sig);
        deferred = 1;
        goto out;
    }
    if (sig)
        atomic_store(&pa_finish_signal, sig);
    if (!finisher_started) {
        pa_finish(); /* no thread could be created at start: best effort on this one */
        goto out;
    }
    if (atomic_load(&pa_finish_state) == 0)
        ring_lend();
    atomic_store(&fin_req, 1);
    syscall(SYS_futex, &fin_req, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    wait_finished();
    /* given up on a finisher that used no CPU for the stall: it may wait for a lock this thread
     * holds (an exit() from a signal handler that interrupted malloc), and so may the libraries'
     * destructors the rest of the exit runs; the watchdog's thread bounds that rest */
    if (atomic_load(&wait_gave_up))
        pa_exitwatch_arm();
out:
    errno = saved;
    return deferred;
}

int pa_exitpaths_signal_in_finish(void)
{
    return atomic_load_explicit(&sig_in_finish, memory_order_relaxed);
}

int pa_exitpaths_finish_elsewhere(void)
{
    if (!finisher_started || getpid() != ep_owner || syscall(SYS_gettid) == atomic_load(&finisher_tid))
        return 0;
    pa_exitpaths_finish_bounded(0);
    return 1;
}

int pa_exitpaths_take_deferred(void)
{
    return atomic_exchange(&deferred_sig, 0);
}

void pa_exitpaths_init(void)
{
    ep_owner = getpid();
    real_execve = (execve_fn)dlsym(RTLD_NEXT, "execve");
    real_execvpe = (execve_fn)dlsym(RTLD_NEXT, "execvpe");
    real_fexecve = (fexecve_fn)dlsym(RTLD_NEXT, "fexecve");
    pa_signals_install(); /* signals.c */
}

/* ---- exec family: the image is about to be replaced, so the session ends here (DB written).
 * Why the checks first: ending the session cannot be undone, yet a failed exec returns to a
 * process that goes on (a shell's command search tries execve on each PATH entry; an
 * application tests for a helper). An exec the kernel is certain to refuse (the file cannot be
 * found, the arguments are too big) does not end it: the real exec runs, fails as it would
 * have, and the session goes on with nothing lost. An exec that fails anyway (ENOEXEC, EACCES,
 * ETXTBSY, ENOMEM: not certain beforehand) has ended the session: the process then records
 * nothing more, and a warning says so. ---- */

/* The path lookup itself fails: no file there whatever the permissions (faccessat checks the
 * same path the kernel resolves; EACCES and others are not taken as certain). */
static int path_missing(const char *path)
{
    if (!path || !*path)
        return 1; /* EFAULT, ENOENT */
    if (faccessat(AT_FDCWD, path, F_OK, AT_EACCESS) == 0)
        return 0;
    return errno == ENOENT || errno == ENOTDIR || errno == ENAMETOOLONG || errno == ELOOP;
}

/* Linux's limits on the strings an exec copies (fs/exec.c: one string at most 32 pages; all of
 * them plus their pointers within a quarter of the stack limit, at least 32 pages, at most 6 MiB
 * since 4.13): 1 when `argv` and `envp` surely exceed them (E2BIG). The file name, also copied,
 * is left out: the estimate stays below the kernel's count. */
static int args_too_big(char *const argv[], char *const envp[])
{
    const size_t page = 4096, strmax = 32 * page;
    size_t n = 0, bytes = 0;
    char *const *lists[2] = {argv, envp};
    for (int l = 0; l < 2; l++)
        for (size_t i = 0; lists[l] && lists[l][i]; i++, n++) {
            size_t len = strnlen(lists[l][i], strmax) + 1;
            if (len > strmax)
                return 1;
            bytes += len;
        }
    struct rlimit rl;
    if (getrlimit(RLIMIT_STACK, &rl) != 0)
        return 0;
    size_t limit = 6u << 20;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur / 4 < limit)
        limit = (size_t)(rl.rlim_cur / 4);
    if (limit < strmax)
        limit = strmax;
    size_t ptrs = (n ? n : 1) * sizeof(void *);
    return ptrs >= limit || bytes > limit - ptrs;
}

/* execvp's search (glibc): `file` with a slash is the path; else each PATH entry (unset:
 * "/bin:/usr/bin"; an empty entry is the working directory) is tried. 1 when none exists. */
static int search_missing(const char *file)
{
    if (!file || !*file || strchr(file, '/'))
        return path_missing(file);
    const char *p = getenv("PATH");
    if (!p)
        p = "/bin:/usr/bin";
    size_t fl = strlen(file);
    char buf[4096];
    for (;;) {
        const char *e = strchrnul(p, ':');
        size_t dl = (size_t)(e - p);
        if (dl + 1 + fl + 1 > sizeof buf)
            return 0; /* too long for us to build: not certain */
        memcpy(buf, p, dl);
        size_t k = dl;
        if (dl)
            buf[k++] = '/';
        memcpy(buf + k, file, fl + 1);
        if (!path_missing(buf))
            return 0;
        if (!*e)
            return 1;
        p = e + 1;
    }
}

/* Before an exec of `path` (is_search: execvp's `file`): ends the session unless the exec is
 * certain to fail. Returns 1 when it ended the session. errno is the caller's on return. */
static int before_exec(const char *path, int is_search, char *const argv[], char *const envp[])
{
    if (!pa_session_active())
        return 0;
    int saved = errno;
    int fails = (is_search ? search_missing(path) : path && path_missing(path)) || args_too_big(argv, envp);
    errno = saved;
    if (fails)
        return 0;
    atomic_store(&pa_finish_by_exec, 1); /* an empty session then stays quiet (session.c) */
    pa_exitpaths_finish_bounded(0);
    errno = saved;
    return 1;
}

/* After an exec that returned (failed) although the session was ended for it. */
static int after_exec(int ended, int rc)
{
    if (ended) {
        int saved = errno;
        pa_warn("agent", "exec failed (%s) after the session was ended for it: this process's later "
                "calls are not recorded", strerror(saved));
        errno = saved;
    }
    return rc;
}

/* The real exec functions are also resolved on first use: when the agent is disabled or could
 * not start a session, pa_exitpaths_init() never ran, yet these wrappers are still the app's
 * execv & co. (an exec must never fail because of the agent). */
#define REAL_EXEC(var, type, name) \
    (var ? var : (var = (type)dlsym(RTLD_NEXT, name)))

static int no_real(void)
{
    errno = ENOSYS;
    return -1;
}

/* The environment the new image gets: `envp` plus the configuration's note (config.h) when this
 * process printed configuration messages, so the new image does not print them a second time;
 * built on the caller's stack (an exec may follow a fork: no malloc), `envp` itself otherwise. */
#define PA_EXEC_ENV_MAX 16384
#define EXEC_ENV(envp, out)                                                                         \
    const char *note_ = pa_config_exec_entry();                                                     \
    size_t ne_ = 0;                                                                                 \
    while (note_ && (envp) && (envp)[ne_] && ne_ < PA_EXEC_ENV_MAX)                                 \
        ne_++;                                                                                      \
    char **out = (char **)(envp);                                                                   \
    if (note_ && (!(envp) || !(envp)[ne_])) {                                                       \
        out = alloca((ne_ + 2) * sizeof *out);                                                      \
        size_t k_ = 0;                                                                              \
        for (size_t i_ = 0; i_ < ne_; i_++)                                                         \
            if (strncmp((envp)[i_], PA_CONFIG_ONCE_VAR "=", sizeof PA_CONFIG_ONCE_VAR) != 0)        \
                out[k_++] = (envp)[i_];                                                             \
        out[k_++] = (char *)note_;                                                                  \
        out[k_] = NULL;                                                                             \
    }

/* Why the application's own environment is checked and tried again: the note makes the new
 * image's environment longer, and an exec that fits Linux's limits (E2BIG) only without it must
 * run as it would without the agent (the new image may then repeat the configuration's messages,
 * once). */
#define EXEC_PLAIN_AGAIN(rc, env, envp, call) \
    if ((rc) < 0 && errno == E2BIG && (env) != (char **)(envp)) \
        (rc) = (call)

static int execve_any(const char *path, char *const argv[], char *const env[])
{
    return REAL_EXEC(real_execve, execve_fn, "execve") ? real_execve(path, argv, env)
                                                       : (int)syscall(SYS_execve, path, argv, env);
}

static int do_execve(const char *path, char *const argv[], char *const envp[])
{
    EXEC_ENV(envp, env);
    int ended = before_exec(path, 0, argv, envp);
    int rc = execve_any(path, argv, env);
    EXEC_PLAIN_AGAIN(rc, env, envp, execve_any(path, argv, envp));
    return after_exec(ended, rc);
}

static int do_execvpe(const char *file, char *const argv[], char *const envp[])
{
    EXEC_ENV(envp, env);
    int ended = before_exec(file, 1, argv, envp);
    if (!REAL_EXEC(real_execvpe, execve_fn, "execvpe"))
        return after_exec(ended, no_real());
    int rc = real_execvpe(file, argv, env);
    EXEC_PLAIN_AGAIN(rc, env, envp, real_execvpe(file, argv, envp));
    return after_exec(ended, rc);
}

PA_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    return do_execve(path, argv, envp);
}

/* execv, execvp: the same as with `environ` given (POSIX), so the note can be added */
PA_EXPORT int execv(const char *path, char *const argv[])
{
    return do_execve(path, argv, environ);
}

PA_EXPORT int execvp(const char *file, char *const argv[])
{
    return do_execvpe(file, argv, environ);
}

PA_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    return do_execvpe(file, argv, envp);
}

PA_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    EXEC_ENV(envp, env);
    int ended = before_exec(NULL, 0, argv, envp); /* fd: only the arguments are checked */
    if (!REAL_EXEC(real_fexecve, fexecve_fn, "fexecve"))
        return after_exec(ended, no_real());
    int rc = real_fexecve(fd, argv, env);
    EXEC_PLAIN_AGAIN(rc, env, envp, real_fexecve(fd, argv, envp));
    return after_exec(ended, rc);
}

/* execl*: argv collected on the stack (they are async-signal-safe in POSIX terms; no malloc). */
#define COLLECT_ARGV(first, argv, ap)                                  \
    size_t n_ = 0;                                                     \
    va_start(ap, first);                                               \
    for (const char *a_ = first; a_; a_ = va_arg(ap, const char *))    \
        n_++;                                                          \
    va_end(ap);                                                        \
    char **argv = alloca((n_ + 1) * sizeof *argv);                     \
    va_start(ap, first);                                               \
    for (size_t i_ = 0; i_ < n_; i_++)                                 \
        argv[i_] = (char *)(i_ == 0 ? first : va_arg(ap, const char *)); \
    argv[n_] = NULL

PA_EXPORT int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    COLLECT_ARGV(arg, argv, ap);
    va_end(ap);
    return do_execve(path, argv, environ);
}

PA_EXPORT int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    COLLECT_ARGV(arg, argv, ap);
    va_end(ap);
    return do_execvpe(file, argv, environ);
}

PA_EXPORT int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    COLLECT_ARGV(arg, argv, ap);
    if (n_ > 0)
        (void)va_arg(ap, const char *); /* the terminating NULL */
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    return do_execve(path, argv, envp);
}

/* ---- _exit/_Exit: no atexit handlers run, so finalize here (bounded: often called from a
 * signal handler or a vfork/fork child, where pa_session_active() is 0 and nothing happens). */

PA_EXPORT void _exit(int status)
{
    pa_exitpaths_finish_bounded(0);
    for (;;)
        syscall(SYS_exit_group, status);
}

PA_EXPORT void _Exit(int status)
{
    pa_exitpaths_finish_bounded(0);
    for (;;)
        syscall(SYS_exit_group, status);
}
