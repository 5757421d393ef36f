/* osrt.c - OS runtime interposers (dlsym RTLD_NEXT): time blocking calls, keep ret/errno intact. */
#define _GNU_SOURCE /* dlvsym, RTLD_NEXT, ppoll, pthread_tryjoin_np */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#include "../common/pa_source.h"

/* Every wrapped function: our name for its real one, its symbol, the symbol version to ask
 * for (NULL: the default one). pthread_cond_wait/timedwait exist twice in glibc: GLIBC_2.2.5 is
 * the old ABI (the condition holds a pointer to a condition of the new layout, allocated on
 * first use) and GLIBC_2.3.2 the current one. A program bound to the old version must reach
 * the old function: each version gets a wrapper of its own (agent.map defines the two
 * version nodes; the .symver lines below bind the wrappers to them). */
#define PA_OSRT_LIST(X)                                                                          \
    X(pthread_cond_wait, pthread_cond_wait, "GLIBC_2.3.2")                                       \
    X(pthread_cond_timedwait, pthread_cond_timedwait, "GLIBC_2.3.2")                             \
    X(pthread_cond_wait_old, pthread_cond_wait, "GLIBC_2.2.5")                                   \
    X(pthread_cond_timedwait_old, pthread_cond_timedwait, "GLIBC_2.2.5")                         \
    X(pthread_mutex_lock, pthread_mutex_lock, NULL) X(pthread_join, pthread_join, NULL)          \
    X(poll, poll, NULL) X(ppoll, ppoll, NULL) X(select, select, NULL) X(pselect, pselect, NULL)   \
    X(epoll_wait, epoll_wait, NULL) X(epoll_pwait, epoll_pwait, NULL)                            \
    X(nanosleep, nanosleep, NULL) X(clock_nanosleep, clock_nanosleep, NULL)                      \
    X(usleep, usleep, NULL) X(sleep, sleep, NULL) X(sem_wait, sem_wait, NULL)                    \
    X(sem_timedwait, sem_timedwait, NULL)

#define X(name, sym, ver) static _Atomic(__typeof__(&sym)) real_##name;
PA_OSRT_LIST(X)
#undef X

static uint64_t threshold_ns = 1000;
/* Set while this thread runs dlsym: a wrapper entered then must not resolve again. */
static __thread int resolving __attribute__((tls_model("initial-exec")));

/* A version that does not exist (the old condition ABI on an architecture younger than it)
 * falls back to the default symbol. */
static void *resolve(const char *name, const char *ver)
{
    void *p = ver ? dlvsym(RTLD_NEXT, name, ver) : NULL;
    return p ? p : dlsym(RTLD_NEXT, name);
}

/* Resolves every missing real_<fn>. Returns 0 when called re-entrantly (from inside dlsym):
 * the caller then uses its raw fallback. */
static int resolve_all(void)
{
    if (resolving)
        return 0;
    int saved = errno;
    resolving = 1;
    pa_guard_enter();
#define X(name, sym, ver)                                                          \
    if (!atomic_load_explicit(&real_##name, memory_order_acquire))                   \
        atomic_store_explicit(&real_##name, (__typeof__(&sym))resolve(#sym, ver), memory_order_release);
    PA_OSRT_LIST(X)
#undef X
    pa_guard_leave();
    resolving = 0;
    errno = saved;
    return 1;
}

/* Source init (constructor): resolves every real_<fn> now, caches the threshold. Wrappers
 * called before it (another library's constructor) resolve on first use. */
static int osrt_init(void)
{
    threshold_ns = pa_config.osrt_threshold_ns;
    resolve_all();
    return 0;
}

/* The OS-runtime source (common/pa_source.h). */
const pa_source_t pa_source_osrt = {
    .name = "osrt", .mask = PA_SRC_OSRT, .rec_first = PA_REC_OSRT_FIRST, .rec_last = PA_REC_OSRT_LAST,
    .init = osrt_init,
};

/* The real function, resolved on first use; NULL only while resolving (then: fallback). */
#define REAL(fn)                                                                   \
    __typeof__(atomic_load_explicit(&real_##fn, memory_order_relaxed)) real =     \
        atomic_load_explicit(&real_##fn, memory_order_relaxed);                    \
    if (PA_UNLIKELY(!real) && resolve_all())                                       \
        real = atomic_load_explicit(&real_##fn, memory_order_relaxed)

/* Records one call that took at least the threshold; leaves errno as the call set it. */
static __attribute__((noinline)) void record(uint32_t func, uint64_t t0, int ret, int err)
{
    uint64_t t1 = pa_clock_ns();
    /* a call still blocked when the session ended (a driver's worker waiting until teardown)
     * ended after it: not part of the session, and not a loss (pa_session_ended) */
    if (t1 - t0 < threshold_ns || PA_UNLIKELY(atomic_load_explicit(&pa_session_ended, memory_order_relaxed)))
        return;
    int saved = errno;
    pa_record_t rec = {.kind = PA_REC_OSRT, .t0 = t0, .t1 = t1};
    rec.u.osrt.func = func;
    rec.u.osrt.ret = ret;
    rec.u.osrt.err = err;
    /* a lock or condition call returns with the mutex held, which may be one the aggregator
     * needs (a malloc replacement's): its record never waits for room in a full ring */
    int holds = func == PA_OSRT_PTHREAD_MUTEX_LOCK || func == PA_OSRT_PTHREAD_COND_WAIT ||
                func == PA_OSRT_PTHREAD_COND_TIMEDWAIT;
    uint32_t src_saved = pa_tls.emit_src;
    if (holds)
        pa_tls.emit_src = PA_EMIT_NOWAIT;
    pa_emit(&rec, NULL, 0);
    pa_tls.emit_src = src_saved;
    errno = saved;
}

/* Wrapper bodies. POSIX-style (-1 + errno) and pthread-style (error number returned) calls. */
#define TIMED_ERRNO(func, type, call)                          \
    if (!pa_agent_collecting(PA_SRC_OSRT))                     \
        return call;                                           \
    uint64_t t0 = pa_clock_ns();                               \
    type ret = call;                                           \
    record(func, t0, (int)ret, (int)ret == -1 ? errno : 0);    \
    return ret
#define TIMED_RETCODE(func, call)                              \
    if (!pa_agent_collecting(PA_SRC_OSRT))                     \
        return call;                                           \
    uint64_t t0 = pa_clock_ns();                               \
    int ret = call;                                            \
    record(func, t0, ret, ret);                                \
    return ret

/* ---- fallbacks, used only if a wrapper runs inside dlsym itself (never seen on glibc 2.36,
 * but a malloc replacement could do it). Each keeps the function's contract; the mutex and
 * condition ones are in osrt_raw.c. ---- */

static int raw_nanosleep(const struct timespec *req, struct timespec *rem)
{
    return (int)syscall(SYS_nanosleep, req, rem);
}

static int raw_sem_wait(sem_t *s, const struct timespec *abstime)
{
    for (;;) {
        if (sem_trywait(s) == 0)
            return 0;
        if (errno != EAGAIN)
            return -1;
        if (abstime) {
            struct timespec now;
            clock_gettime(CLOCK_REALTIME, &now);
            if (now.tv_sec > abstime->tv_sec || (now.tv_sec == abstime->tv_sec && now.tv_nsec >= abstime->tv_nsec))
                return errno = ETIMEDOUT, -1;
        }
        struct timespec ts = {0, 100000};
        raw_nanosleep(&ts, NULL);
    }
}

/* ---- the interposers ---- */

/* The exported names are the .symver aliases: pthread_cond_wait@@GLIBC_2.3.2 (the default,
 * what unversioned references and dlsym get) and pthread_cond_wait@GLIBC_2.2.5; the pa_ names
 * are local (agent.map). The raw fallback never reads an old-ABI condition (its layout differs):
 * it is given none, so it measures abstime on CLOCK_REALTIME. */
PA_EXPORT int pa_osrt_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
    REAL(pthread_cond_wait);
    if (PA_UNLIKELY(!real))
        return pa_osrt_raw_cond_wait(c, m, NULL);
    TIMED_RETCODE(PA_OSRT_PTHREAD_COND_WAIT, real(c, m));
}
__asm__(".symver pa_osrt_cond_wait, pthread_cond_wait@@GLIBC_2.3.2");

PA_EXPORT int pa_osrt_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abstime)
{
    REAL(pthread_cond_timedwait);
    if (PA_UNLIKELY(!real))
        return pa_osrt_raw_cond_wait(c, m, abstime);
    TIMED_RETCODE(PA_OSRT_PTHREAD_COND_TIMEDWAIT, real(c, m, abstime));
}
__asm__(".symver pa_osrt_cond_timedwait, pthread_cond_timedwait@@GLIBC_2.3.2");

PA_EXPORT int pa_osrt_cond_wait_old(pthread_cond_t *c, pthread_mutex_t *m)
{
    REAL(pthread_cond_wait_old);
    if (PA_UNLIKELY(!real))
        return pa_osrt_raw_cond_wait(NULL, m, NULL);
    TIMED_RETCODE(PA_OSRT_PTHREAD_COND_WAIT, real(c, m));
}
__asm__(".symver pa_osrt_cond_wait_old, pthread_cond_wait@GLIBC_2.2.5");

PA_EXPORT int pa_osrt_cond_timedwait_old(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abstime)
{
    REAL(pthread_cond_timedwait_old);
    if (PA_UNLIKELY(!real))
        return pa_osrt_raw_cond_wait(NULL, m, abstime);
    TIMED_RETCODE(PA_OSRT_PTHREAD_COND_TIMEDWAIT, real(c, m, abstime));
}
__asm__(".symver pa_osrt_cond_timedwait_old, pthread_cond_timedwait@GLIBC_2.2.5");

/* Uncontended locks (trylock succeeds) are not timed: they cost no wait, and the mutex is the
 * hottest function we wrap. trylock's other results (EOWNERDEAD, EAGAIN, EINVAL) equal lock's. */
PA_EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
    REAL(pthread_mutex_lock);
    if (PA_UNLIKELY(!real))
        return pa_osrt_raw_mutex_lock(m);
    if (!pa_agent_collecting(PA_SRC_OSRT))
        return real(m);
    int r = pthread_mutex_trylock(m);
    if (r != EBUSY)
        return r;
    uint64_t t0 = pa_clock_ns();
    int ret = real(m);
    record(PA_OSRT_PTHREAD_MUTEX_LOCK, t0, ret, ret);
    return ret;
}

PA_EXPORT int pthread_join(pthread_t t, void **retval)
{
    REAL(pthread_join);
    if (PA_UNLIKELY(!real)) {
        int r;
        while ((r = pthread_tryjoin_np(t, retval)) == EBUSY)
            sched_yield();
        return r;
    }
    TIMED_RETCODE(PA_OSRT_PTHREAD_JOIN, real(t, retval));
}

PA_EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
    REAL(poll);
    if (PA_UNLIKELY(!real))
        return (int)syscall(SYS_poll, fds, n, timeout);
    TIMED_ERRNO(PA_OSRT_POLL, int, real(fds, n, timeout));
}

PA_EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *mask)
{
    REAL(ppoll);
    if (PA_UNLIKELY(!real)) {
        struct timespec copy, *tp = tmo ? (copy = *tmo, &copy) : NULL; /* the kernel updates it */
        return (int)syscall(SYS_ppoll, fds, n, tp, mask, _NSIG / 8);
    }
    TIMED_ERRNO(PA_OSRT_PPOLL, int, real(fds, n, tmo, mask));
}

PA_EXPORT int select(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *tmo)
{
    REAL(select);
    if (PA_UNLIKELY(!real))
        return (int)syscall(SYS_select, n, r, w, e, tmo);
    TIMED_ERRNO(PA_OSRT_SELECT, int, real(n, r, w, e, tmo));
}

PA_EXPORT int pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *tmo, const sigset_t *mask)
{
    REAL(pselect);
    if (PA_UNLIKELY(!real)) {
        struct timespec copy, *tp = tmo ? (copy = *tmo, &copy) : NULL;
        struct { const sigset_t *ss; size_t len; } sm = {mask, _NSIG / 8};
        return (int)syscall(SYS_pselect6, n, r, w, e, tp, mask ? &sm : NULL);
    }
    TIMED_ERRNO(PA_OSRT_PSELECT, int, real(n, r, w, e, tmo, mask));
}

PA_EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
    REAL(epoll_wait);
    if (PA_UNLIKELY(!real))
        return (int)syscall(SYS_epoll_wait, epfd, ev, max, timeout);
    TIMED_ERRNO(PA_OSRT_EPOLL_WAIT, int, real(epfd, ev, max, timeout));
}

PA_EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout, const sigset_t *mask)
{
    REAL(epoll_pwait);
    if (PA_UNLIKELY(!real))
        return (int)syscall(SYS_epoll_pwait, epfd, ev, max, timeout, mask, _NSIG / 8);
    TIMED_ERRNO(PA_OSRT_EPOLL_PWAIT, int, real(epfd, ev, max, timeout, mask));
}

PA_EXPORT int nanosleep(const struct timespec *req, struct timespec *rem)
{
    REAL(nanosleep);
    if (PA_UNLIKELY(!real))
        return raw_nanosleep(req, rem);
    TIMED_ERRNO(PA_OSRT_NANOSLEEP, int, real(req, rem));
}

PA_EXPORT int clock_nanosleep(clockid_t clk, int flags, const struct timespec *req, struct timespec *rem)
{
    REAL(clock_nanosleep);
    if (PA_UNLIKELY(!real)) {
        int saved = errno; /* clock_nanosleep returns the error, errno untouched */
        int r = syscall(SYS_clock_nanosleep, clk, flags, req, rem) == 0 ? 0 : errno;
        errno = saved;
        return r;
    }
    TIMED_RETCODE(PA_OSRT_CLOCK_NANOSLEEP, real(clk, flags, req, rem));
}

PA_EXPORT int usleep(useconds_t usec)
{
    REAL(usleep);
    if (PA_UNLIKELY(!real)) {
        struct timespec ts = {usec / 1000000, (long)(usec % 1000000) * 1000};
        return raw_nanosleep(&ts, NULL);
    }
    TIMED_ERRNO(PA_OSRT_USLEEP, int, real(usec));
}

PA_EXPORT unsigned int sleep(unsigned int sec)
{
    REAL(sleep);
    if (PA_UNLIKELY(!real)) {
        struct timespec ts = {sec, 0}, rem = {0, 0};
        return raw_nanosleep(&ts, &rem) == 0 ? 0 : (unsigned)rem.tv_sec + (rem.tv_nsec > 0);
    }
    if (!pa_agent_collecting(PA_SRC_OSRT))
        return real(sec);
    uint64_t t0 = pa_clock_ns();
    unsigned int ret = real(sec);
    record(PA_OSRT_SLEEP, t0, (int)ret, 0);
    return ret;
}

PA_EXPORT int sem_wait(sem_t *s)
{
    REAL(sem_wait);
    if (PA_UNLIKELY(!real))
        return raw_sem_wait(s, NULL);
    TIMED_ERRNO(PA_OSRT_SEM_WAIT, int, real(s));
}

PA_EXPORT int sem_timedwait(sem_t *s, const struct timespec *abstime)
{
    REAL(sem_timedwait);
    if (PA_UNLIKELY(!real))
        return raw_sem_wait(s, abstime);
    TIMED_ERRNO(PA_OSRT_SEM_TIMEDWAIT, int, real(s, abstime));
}
