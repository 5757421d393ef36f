/* agg.c - the aggregator thread: start, poll-drain loop, bounded stop, fork-child reset. */
#define _GNU_SOURCE /* pthread_cond_clockwait */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../common/pa_clock.h"
#include "../common/pa_log.h"
#include "../common/pa_thread.h"
#include "agg_priv.h"

/* Provided by the collector when linked into the agent: marks the calling thread as the
 * agent's own so interposers don't record it. Weak so agg/ also links without it (tests). */
void pa_thread_mark_agent(void) __attribute__((weak));


static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;          /* CLOCK_MONOTONIC, initialised in pa_agg_start() */
    int running;                /* a thread was started and not yet collected by stop */
    int done;                   /* the thread finished; res is valid */
    _Atomic int stop;
    uint64_t poll_ns;
    pa_agg_t *agg;
    const pa_agg_results_t *res;
} g = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

/* Waits up to `ns` for the stop flag: a futex on it, so pa_agg_stop() wakes the thread at once
 * (an exit never waits out a poll). A raw syscall: the OSRT wrappers never see these waits. */
static void agg_wait(uint64_t ns)
{
    struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
    syscall(SYS_futex, (int *)&g.stop, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
}

static void *agg_main(void *arg)
{
    pa_agg_t *a = arg;
    if (pa_thread_mark_agent)
        pa_thread_mark_agent();
    uint64_t poll_ns = g.poll_ns;
    /* a small zstd frame per interval: negligible cost */
    const uint64_t flush_ns = pa_agg_config(a)->spool_flush_ns;
    _Atomic int *behind = pa_agg_config(a)->behind;
    uint64_t next_flush = pa_clock_ns() + flush_ns;
    while (!atomic_load_explicit(&g.stop, memory_order_acquire)) {
        size_t got = pa_agg_drain_once(a);
        if (behind)
            atomic_store_explicit(behind, got >= PA_AGG_BATCH, memory_order_relaxed);
        if (got == 0)
            agg_wait(poll_ns);
        /* staged spool records reach the file at least this often, so a process killed
         * outright (SIGKILL, crash) loses at most the last interval: profagent recover */
        uint64_t now = pa_clock_ns();
        if (now >= next_flush) {
            if (a->spool && pa_spool_flush(a->spool) < 0)
                a->spool_errors++;
            next_flush = now + flush_ns;
        }
    }
    if (behind)
        atomic_store(behind, 0);
    const pa_agg_results_t *res = pa_agg_finish(a);
    pa_dbg("agg", "the aggregator thread used %.1f ms of CPU", pa_thread_cpu_ms());
    pthread_mutex_lock(&g.mu);
    g.res = res;
    g.done = 1;
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);
    return NULL;
}

int pa_agg_start(const pa_agg_config_t *cfg)
{
    if (g.running) {
        errno = EBUSY;
        return -1;
    }
    pa_agg_t *a = pa_agg_create(cfg);
    if (!a)
        return -1;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g.cv, &ca);
    pthread_condattr_destroy(&ca);
    atomic_store(&g.stop, 0);
    g.done = 0;
    g.res = NULL;
    g.agg = a;
    g.poll_ns = cfg->poll_interval_ns ? cfg->poll_interval_ns : PA_AGG_DEFAULT_POLL_NS;

    int rc = pa_thread_spawn(NULL, 0, agg_main, a);
    if (rc != 0) {
        pa_err("agg", "cannot start the aggregator thread: %s", strerror(rc));
        g.agg = NULL;
        pa_agg_destroy(a);
        errno = rc;
        return -1;
    }
    g.running = 1;
    return 0;
}

const pa_agg_results_t *pa_agg_stop(uint64_t timeout_ns)
{
    if (!g.running)
        return g.done ? g.res : NULL;
    /* the final drain gets half the time: the rest is for closing ranges and the spool */
    if (g.agg)
        atomic_store_explicit(&g.agg->drain_deadline_ns, pa_clock_ns() + timeout_ns / 2, memory_order_relaxed);
    atomic_store_explicit(&g.stop, 1, memory_order_release);
    syscall(SYS_futex, (int *)&g.stop, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0); /* agg_wait() */
    uint64_t deadline = pa_clock_ns() + timeout_ns;
    struct timespec ts = { (time_t)(deadline / 1000000000ull), (long)(deadline % 1000000000ull) };
    pthread_mutex_lock(&g.mu);
    while (!g.done) {
        /* pthread_cond_clockwait, not _timedwait: the agent exports an OSRT wrapper named
         * pthread_cond_timedwait, and when the agent is dlopen()ed instead of preloaded this
         * unversioned call binds to glibc's GLIBC_2.2.5 compat version (old condvar ABI,
         * realtime clock), which returned ETIMEDOUT at once: no DB (qa2 defect 9). */
        int rc = pthread_cond_clockwait(&g.cv, &g.mu, CLOCK_MONOTONIC, &ts);
        if (rc == ETIMEDOUT)
            break;
    }
    int done = g.done;
    pthread_mutex_unlock(&g.mu);
    if (!done) {
        pa_warn("agg", "the aggregator did not finish within %llu ms; no results",
                (unsigned long long)(timeout_ns / 1000000ull));
        return NULL; /* it keeps running detached; its memory is never freed */
    }
    g.running = 0;
    return g.res;
}

void pa_agg_free(void)
{
    if (g.running || !g.agg)
        return; /* still running (stop timed out): it owns the memory */
    pa_agg_destroy(g.agg);
    g.agg = NULL;
    g.res = NULL;
    g.done = 0;
}

void pa_agg_after_fork_child(void)
{
    /* The thread does not exist in the child and the lock may have been held at fork time:
     * re-initialise, and leak the parent's context (freeing it could race nothing, but its
     * spool handle shares the parent's file offset). */
    pthread_mutex_init(&g.mu, NULL);
    pthread_cond_init(&g.cv, NULL);
    g.running = 0;
    g.done = 0;
    g.agg = NULL;
    g.res = NULL;
    atomic_store(&g.stop, 0);
}
