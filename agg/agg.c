/* agg.c - the aggregator thread: start, poll-drain loop, bounded stop, fork-child reset. */
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
    int running;                /* open (pa_agg_open) and not yet collected by stop */
    _Atomic int thread;         /* the aggregator thread was started */
    int done;                   /* the stop finished the aggregator; res is valid */
    _Atomic int stop;
    _Atomic int busy;           /* futex word: 1 while the thread works on the aggregator's state */
    uint64_t poll_ns;
    pa_agg_t *agg;
    const pa_agg_results_t *res;
} g;

/* Waits up to `ns` for the stop flag: a futex on it, so pa_agg_stop() wakes the thread at once
 * (an exit never waits out a poll). A raw syscall: the OSRT wrappers never see these waits. */
static void agg_wait(uint64_t ns)
{
    struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
    syscall(SYS_futex, (int *)&g.stop, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
}

static void agg_idle(void);

/* Quiet spells: after a sleep that brought fewer than AGG_NAP_FEW records the next one is twice
 * as long, up to AGG_NAP_MAX_NS (and never past the next spool flush); a sleep that brought a
 * full batch or more returns to the shortest poll. A 1 ms poll whatever the rate woke the
 * thread ~900 times per second of samples/gemm (~10 records per wake, ~25 ms of CPU per second,
 * mostly the kernel's side of the timed waits). A producer ends a nap when it fills a quarter of
 * its ring (pa_ring_nudge): at the default 4 MiB rings that is 16 k records, so no burst after a
 * quiet spell waits out a nap, and nothing drops that the shortest poll would have kept. */
#define AGG_NAP_MAX_NS 16000000ull
#define AGG_NAP_FEW 1024u

/* Frames of a quiet session: at a flush time (every spool_flush_ns) the staged records become a
 * frame once AGG_FRAME_FEW records were drained since the last frame, else once the last frame
 * is AGG_FRAME_QUIET_NS old. Each frame costs the spool thread a wake, a zstd frame and an
 * open/write/close of the spool (~100 us on this 2-core host whatever it holds): 25 ms frames of
 * samples/gemm's ~200 records took 7.4 ms of its CPU, 100 ms ones 3.9 (multithread's ~1000:
 * 11.8 -> 7.9 ms; medians of 5 alternated runs). A busy session (>= ~160 k records/s) keeps the
 * short frames that bound the exit's tail and the DB's lag behind a kill; a quiet one's lag
 * grows by at most 75 ms, its tail by what it records in 100 ms (< 16 k records). */
#define AGG_FRAME_FEW 4096u
#define AGG_FRAME_QUIET_NS 100000000ull

/* Sleeps `ns` longer than the shortest poll on the nap word a producer clears (pa_ring_nudge)
 * and pa_agg_stop too. Rechecks the stop flag after raising the nap: a stop between the last
 * check and the wait finds the word cleared (pa_agg_stop clears it after raising stop). */
static void agg_nap(uint64_t ns)
{
    atomic_exchange(&pa_ring_nap, 1);
    if (!atomic_load(&g.stop)) {
        struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
        syscall(SYS_futex, (int *)&pa_ring_nap, FUTEX_WAIT_PRIVATE, 1, &ts, NULL, 0);
    }
    atomic_store(&pa_ring_nap, 0);
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
    uint64_t last_frame = pa_clock_ns(), next_flush = last_frame + flush_ns;
    uint64_t sleep_ns = poll_ns, since_sleep = 0, since_frame = 0;
    for (;;) {
        /* busy, then stop (seq_cst both, as the stopper's stop then busy): either this thread
         * sees the stop, or the stopper sees it busy and waits for the pass's end */
        atomic_store(&g.busy, 1);
        if (atomic_load(&g.stop))
            break;
        size_t got = pa_agg_drain_once(a);
        if (behind)
            atomic_store_explicit(behind, got >= PA_AGG_BATCH, memory_order_relaxed);
        since_sleep += got;
        since_frame += got;
        /* staged spool records reach the file at least every max(flush_ns, AGG_FRAME_QUIET_NS),
         * so a process killed outright (SIGKILL, crash) loses at most that: profagent recover */
        uint64_t now = pa_clock_ns();
        if (now >= next_flush) {
            if (since_frame >= AGG_FRAME_FEW || now - last_frame >= AGG_FRAME_QUIET_NS) {
                if (a->spool && pa_spool_flush(a->spool) < 0)
                    a->spool_errors++;
                last_frame = now;
                since_frame = 0;
            }
            next_flush = now + flush_ns;
        }
        agg_idle();
        if (got == 0) {
            if (since_sleep >= PA_AGG_BATCH)
                sleep_ns = poll_ns;
            else if (since_sleep < AGG_NAP_FEW && sleep_ns < AGG_NAP_MAX_NS)
                sleep_ns = sleep_ns * 2 < AGG_NAP_MAX_NS ? sleep_ns * 2 : AGG_NAP_MAX_NS;
            since_sleep = 0;
            uint64_t ns = sleep_ns, t = pa_clock_ns();
            if (flush_ns && next_flush > t && next_flush - t < ns)
                ns = next_flush - t;
            if (ns > poll_ns)
                agg_nap(ns);
            else
                agg_wait(poll_ns);
        }
    }
    agg_idle(); /* the stopper owns the state now: nothing here touches it again */
    pa_dbg("agg", "the aggregator thread used %.1f ms of CPU", pa_thread_cpu_ms());
    return NULL;
}

/* The pass is over: the state is the stopper's to take from here (pa_agg_stop_by). */
static void agg_idle(void)
{
    atomic_store(&g.busy, 0);
    if (atomic_load(&g.stop))
        syscall(SYS_futex, (int *)&g.busy, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

int pa_agg_open(const pa_agg_config_t *cfg)
{
    if (g.running) {
        errno = EBUSY;
        return -1;
    }
    pa_agg_config_t c = *cfg;
    c.threads_later = 1;
    pa_agg_t *a = pa_agg_create(&c);
    if (!a)
        return -1;
    atomic_store(&g.stop, 0);
    atomic_store(&g.busy, 0);
    atomic_store(&g.thread, 0);
    g.done = 0;
    g.res = NULL;
    g.agg = a;
    g.poll_ns = cfg->poll_interval_ns ? cfg->poll_interval_ns : PA_AGG_DEFAULT_POLL_NS;
    g.running = 1;
    return 0;
}

int pa_agg_start_thread(void)
{
    if (!g.running || atomic_exchange(&g.thread, 1))
        return 0;
    pa_agg_start_spool_thread(g.agg);
    int rc = pa_thread_spawn(NULL, PA_THREAD_STACK_WORKER, agg_main, g.agg);
    if (rc != 0)
        pa_warn("agg", "cannot start the aggregator thread (%s): the rings are drained only at exit, what"
                " overflows them is counted as dropped", strerror(rc));
    return rc;
}

int pa_agg_start(const pa_agg_config_t *cfg)
{
    if (pa_agg_open(cfg) != 0)
        return -1;
    int rc = pa_agg_start_thread();
    if (rc != 0) {
        g.running = 0;
        pa_agg_destroy(g.agg);
        g.agg = NULL;
        errno = rc;
        return -1;
    }
    return 0;
}

/* Why the last drain runs on the caller (the exiting thread), not on the aggregator thread:
 * each hand-off between threads waits for the woken one to get a core (12.9 ms median, up to
 * 35 ms at a load of 23 on 2 cores), and the exit handed off twice here (the stop to the
 * aggregator, its results back). The caller takes the state as soon as the thread is between
 * two passes (at once when it waits for records: no wake-up needed), then drains, closes the
 * ranges and the spool itself at its own priority. */
const pa_agg_results_t *pa_agg_stop_by(uint64_t deadline_ns)
{
    if (!g.running)
        return g.done ? g.res : NULL;
    atomic_store(&g.stop, 1);
    syscall(SYS_futex, (int *)&g.stop, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0); /* agg_wait() */
    atomic_store(&pa_ring_nap, 0);
    syscall(SYS_futex, (int *)&pa_ring_nap, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0); /* agg_nap() */
    for (uint64_t now; atomic_load(&g.busy);) {
        if ((now = pa_clock_ns()) >= deadline_ns) {
            pa_warn("agg", "the aggregator thread did not end its pass before the exit's deadline; no results");
            return NULL; /* it ends at its next pass; its memory is never freed */
        }
        uint64_t ns = deadline_ns - now;
        struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
        syscall(SYS_futex, (int *)&g.busy, FUTEX_WAIT_PRIVATE, 1, &ts, NULL, 0);
    }
    pa_agg_t *a = g.agg;
    if (a->cfg.behind)
        atomic_store(a->cfg.behind, 0);
    /* the final drain gets half of what is left: the rest is for closing ranges and the spool */
    uint64_t now = pa_clock_ns(), left = deadline_ns > now ? deadline_ns - now : 0;
    atomic_store_explicit(&a->drain_deadline_ns, now + left / 2 + 1, memory_order_relaxed);
    a->close_deadline_ns = deadline_ns;
    g.res = pa_agg_finish(a);
    g.done = 1;
    g.running = 0;
    return g.res;
}

const pa_agg_results_t *pa_agg_stop(uint64_t timeout_ns)
{
    return pa_agg_stop_by(pa_clock_ns() + timeout_ns);
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
    g.running = 0;
    g.done = 0;
    g.agg = NULL;
    g.res = NULL;
    atomic_store(&g.thread, 0);
    atomic_store(&g.stop, 0);
    atomic_store(&g.busy, 0);
}
