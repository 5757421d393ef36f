/* osrt_raw.c - OSRT fallbacks used only while dlsym() has not returned the real function yet. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"

/* glibc only: whether `m` is an error-checking mutex (also its robust/PI/PP variants: the
 * type is in the low bits of __kind) owned by the calling thread. trylock says EBUSY for it,
 * where pthread_mutex_lock would say EDEADLK. */
static int raw_owned_errorcheck(pthread_mutex_t *m)
{
#ifdef __GLIBC__
    int kind = __atomic_load_n(&m->__data.__kind, __ATOMIC_RELAXED);
    return (kind & 3) == PTHREAD_MUTEX_ERRORCHECK &&
           __atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED) == (int)syscall(SYS_gettid);
#else
    (void)m;
    return 0;
#endif
}

int pa_osrt_raw_mutex_lock(pthread_mutex_t *m)
{
    int r;
    while ((r = pthread_mutex_trylock(m)) == EBUSY) {
        if (raw_owned_errorcheck(m))
            return EDEADLK;
        sched_yield();
    }
    return r;
}

/* The clock the condition variable's abstime is measured on: glibc keeps the
 * pthread_condattr_setclock choice in bit 1 of __wrefs (__PTHREAD_COND_CLOCK_MONOTONIC_MASK,
 * set = CLOCK_MONOTONIC; bit 0 is process-shared). */
static clockid_t raw_cond_clock(pthread_cond_t *c)
{
#ifdef __GLIBC__
    if (c && (__atomic_load_n(&c->__data.__wrefs, __ATOMIC_RELAXED) & 2u))
        return CLOCK_MONOTONIC;
#else
    (void)c;
#endif
    return CLOCK_REALTIME;
}

int pa_osrt_raw_cond_wait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abstime)
{
    if (abstime && (abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000L))
        return EINVAL; /* as glibc: checked before the mutex is released */
    int r = pthread_mutex_unlock(m); /* EPERM for an error-checking mutex we do not own */
    if (r)
        return r;
    sched_yield(); /* a wait may end spuriously (POSIX): the caller re-checks its predicate */
    r = pa_osrt_raw_mutex_lock(m);
    if (r || !abstime)
        return r;
    struct timespec now;
    clock_gettime(raw_cond_clock(c), &now);
    if (now.tv_sec > abstime->tv_sec || (now.tv_sec == abstime->tv_sec && now.tv_nsec >= abstime->tv_nsec))
        return ETIMEDOUT; /* with the mutex held again, as POSIX requires */
    return 0;
}
