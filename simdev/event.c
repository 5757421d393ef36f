/* event.c - event pools and events: host/device signal, wait, reset, kernel timestamps. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pa_sd_engine.h"

#define PA_SD_DESTROY_WAIT_NS 5000000000ull /* bounded wait for queued work at pool destroy */

/* One lock and condition for all events' writers and waiters: signals are rare compared with
 * the work they mark, and a single condition lets a waiter watch any set of events. A signal
 * broadcasts only when the event has a waiter (an agent's own events usually have none, and
 * waking every host waiter for each was most of a profiled run's futex calls). Queries take no
 * lock: the specification asks zeEventQueryStatus to be lock-free, and a real driver reads the
 * event's memory; with the lock every poll of a profiler contended with the engines' signals. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void ev_init(void) { pa_sd_cond_init_mono(&g_cv); }

/* Validation, as a driver's validation layer checks handle lifetimes: the handles of the latest
 * destroyed pools and of their events (a bounded list of address ranges); a later call with one
 * of them, not live again, is a use after destroy. It is refused as before and said on stderr
 * (the first few), where a real driver would have read freed memory. */
#define DEAD_POOLS 256u
static struct { uintptr_t pool, ev_lo, ev_hi; } dead[DEAD_POOLS];
static uint32_t ndead;
static _Atomic uint32_t dead_uses;

static void dead_add(const pa_sd_event_pool *p)
{
    pthread_mutex_lock(&g_mu);
    uint32_t i = ndead++ % DEAD_POOLS;
    dead[i].pool = (uintptr_t)p;
    dead[i].ev_lo = (uintptr_t)p->events;
    dead[i].ev_hi = (uintptr_t)(p->events + p->count);
    pthread_mutex_unlock(&g_mu);
}

static void dead_check(const void *h, int is_event, const char *what)
{
    uintptr_t a = (uintptr_t)h;
    int hit = 0;
    pthread_mutex_lock(&g_mu);
    for (uint32_t i = 0; i < DEAD_POOLS && i < ndead && !hit; i++)
        hit = is_event ? (a >= dead[i].ev_lo && a < dead[i].ev_hi) : a == dead[i].pool;
    pthread_mutex_unlock(&g_mu);
    if (hit && atomic_fetch_add(&dead_uses, 1) < 8)
        fprintf(stderr, "simdev: validation: %s: %s %p of a destroyed event pool used after zeEventPoolDestroy\n",
                what, is_event ? "event" : "pool", h);
}

static pa_sd_event_pool *pool_of(ze_event_pool_handle_t h)
{
    pa_sd_event_pool *p = (pa_sd_event_pool *)h;
    if (p && !pa_sd_handle_live(p)) {
        dead_check(p, 0, "event pool call");
        return NULL;
    }
    return p && p->magic == PA_SD_MAGIC_POOL ? p : NULL;
}

pa_sd_event *pa_sd_event_of(ze_event_handle_t h)
{
    /* registry first: the handle of a destroyed pool's event points into freed memory */
    pa_sd_event *e = (pa_sd_event *)h;
    if (e && !pa_sd_handle_live(e)) {
        dead_check(e, 1, "event call");
        return NULL;
    }
    return e && e->magic == PA_SD_MAGIC_EVENT ? e : NULL;
}

ze_result_t pa_sd_zeEventPoolCreate(ze_context_handle_t hc, const ze_event_pool_desc_t *desc, uint32_t ndev,
                                 ze_device_handle_t *phDevices, ze_event_pool_handle_t *ph)
{
    if (!pa_sd_context_of(hc))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!desc || !ph || (ndev && !phDevices))
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (desc->count == 0)
        return ZE_RESULT_ERROR_INVALID_SIZE;
    if ((desc->flags & ZE_EVENT_POOL_FLAG_IPC) && (desc->flags & ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP))
        return ZE_RESULT_ERROR_INVALID_ENUMERATION; /* ze_api.h: these two cannot be combined */
    for (uint32_t i = 0; i < ndev; i++)
        if (!pa_sd_device_of(phDevices[i]))
            return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    pthread_once(&g_once, ev_init);
    pa_sd_event_pool *p = calloc(1, sizeof *p);
    if (!p || !(p->events = calloc(desc->count, sizeof *p->events)) || pa_sd_handle_add(p) != 0) {
        if (p)
            free(p->events);
        free(p);
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    p->magic = PA_SD_MAGIC_POOL;
    p->count = desc->count;
    p->flags = desc->flags;
    p->ctx = pa_sd_context_of(hc);
    pa_sd_context_child(p->ctx, 1);
    *ph = (ze_event_pool_handle_t)p;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeEventPoolDestroy(ze_event_pool_handle_t h)
{
    pa_sd_event_pool *p = pool_of(h);
    if (!p)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    /* Queued commands point into the events array: mark the events dead (a device waiting on one
     * gives up), wait for work queued so far (bounded), and leak the pool if it does not finish.
     * The handles leave the registry first, so later calls with them are rejected, not followed. */
    pa_sd_handle_remove(p);
    pa_sd_context_child(p->ctx, -1);
    for (uint32_t i = 0; i < p->count; i++)
        pa_sd_handle_remove(&p->events[i]);
    dead_add(p);
    pthread_mutex_lock(&g_mu);
    p->magic = PA_SD_MAGIC_DEAD;
    for (uint32_t i = 0; i < p->count; i++)
        if (p->events[i].magic == PA_SD_MAGIC_EVENT)
            p->events[i].magic = PA_SD_MAGIC_DEAD;
    pthread_cond_broadcast(&g_cv);
    pthread_mutex_unlock(&g_mu);
    if (pa_sd_engines_drain(PA_SD_DESTROY_WAIT_NS) != ZE_RESULT_SUCCESS)
        return ZE_RESULT_SUCCESS;
    free(p->events);
    free(p);
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeEventCreate(ze_event_pool_handle_t h, const ze_event_desc_t *desc, ze_event_handle_t *ph)
{
    pa_sd_event_pool *p = pool_of(h);
    if (!p)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!desc || !ph)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (desc->index >= p->count)
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    pa_sd_event *e = &p->events[desc->index];
    if (pa_sd_handle_add(e) != 0)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    pthread_mutex_lock(&g_mu);
    memset(e, 0, sizeof *e);
    e->pool = p;
    e->index = desc->index;
    e->magic = PA_SD_MAGIC_EVENT;
    pthread_mutex_unlock(&g_mu);
    *ph = (ze_event_handle_t)e;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeEventDestroy(ze_event_handle_t h)
{
    pa_sd_event *e = pa_sd_event_of(h);
    if (!e)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    pa_sd_handle_remove(e); /* the slot stays allocated (pool memory) for commands still queued */
    pthread_mutex_lock(&g_mu);
    e->magic = PA_SD_MAGIC_DEAD;
    pthread_cond_broadcast(&g_cv); /* a device waiting on it gives up instead of hanging */
    pthread_mutex_unlock(&g_mu);
    return ZE_RESULT_SUCCESS;
}

/* Stores ev's timestamps (caller holds g_mu): seq odd around the stores, for lock-free readers. */
static void ts_store(pa_sd_event *ev, bool has, uint64_t start, uint64_t end)
{
    uint32_t q = atomic_load_explicit(&ev->seq, memory_order_relaxed);
    atomic_store_explicit(&ev->seq, q + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    __atomic_store_n(&ev->has_ts, has, __ATOMIC_RELAXED);
    __atomic_store_n(&ev->ts.global.kernelStart, start, __ATOMIC_RELAXED);
    __atomic_store_n(&ev->ts.context.kernelStart, start, __ATOMIC_RELAXED);
    __atomic_store_n(&ev->ts.global.kernelEnd, end, __ATOMIC_RELAXED);
    __atomic_store_n(&ev->ts.context.kernelEnd, end, __ATOMIC_RELAXED);
    atomic_store_explicit(&ev->seq, q + 2, memory_order_release);
}

/* Reads ev's signal state and timestamps without the lock; 0 when a writer raced (retry locked). */
static int ts_load(pa_sd_event *ev, int *ok, ze_kernel_timestamp_result_t *out)
{
    bool sig = atomic_load_explicit(&ev->signaled, memory_order_acquire);
    uint32_t q = atomic_load_explicit(&ev->seq, memory_order_acquire);
    if (q & 1)
        return 0;
    bool has = __atomic_load_n(&ev->has_ts, __ATOMIC_RELAXED);
    out->global.kernelStart = __atomic_load_n(&ev->ts.global.kernelStart, __ATOMIC_RELAXED);
    out->global.kernelEnd = __atomic_load_n(&ev->ts.global.kernelEnd, __ATOMIC_RELAXED);
    out->context.kernelStart = __atomic_load_n(&ev->ts.context.kernelStart, __ATOMIC_RELAXED);
    out->context.kernelEnd = __atomic_load_n(&ev->ts.context.kernelEnd, __ATOMIC_RELAXED);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&ev->seq, memory_order_relaxed) != q)
        return 0;
    *ok = sig && has;
    return 1;
}

void pa_sd_event_signal_device(pa_sd_event *ev, uint64_t start_ticks, uint64_t end_ticks)
{
    uint64_t m = pa_sd_clock_mask();
    pthread_mutex_lock(&g_mu);
    if (ev->magic == PA_SD_MAGIC_EVENT) {
        ts_store(ev, true, start_ticks & m, end_ticks & m);
        atomic_store_explicit(&ev->signaled, true, memory_order_release); /* after its timestamps */
        if (ev->waiters)
            pthread_cond_broadcast(&g_cv);
    }
    pthread_mutex_unlock(&g_mu);
}

void pa_sd_event_reset_device(pa_sd_event *ev)
{
    pthread_mutex_lock(&g_mu);
    atomic_store_explicit(&ev->signaled, false, memory_order_release);
    ts_store(ev, false, 0, 0);
    pthread_mutex_unlock(&g_mu);
}

void pa_sd_event_wait_device(pa_sd_event *ev)
{
    pthread_once(&g_once, ev_init);
    if (atomic_load_explicit(&ev->signaled, memory_order_acquire))
        return;
    pthread_mutex_lock(&g_mu);
    ev->waiters++;
    while (ev->magic == PA_SD_MAGIC_EVENT && !ev->signaled && !pa_sd_shutting_down())
        pthread_cond_wait(&g_cv, &g_mu);
    ev->waiters--;
    pthread_mutex_unlock(&g_mu);
}

int pa_sd_event_get_ts(pa_sd_event *ev, ze_kernel_timestamp_result_t *out)
{
    int ok = 0;
    ze_kernel_timestamp_result_t t;
    if (ts_load(ev, &ok, &t)) {
        if (ok)
            *out = t;
        return ok;
    }
    pthread_mutex_lock(&g_mu);
    ok = ev->signaled && ev->has_ts;
    if (ok)
        *out = ev->ts;
    pthread_mutex_unlock(&g_mu);
    return ok;
}

void pa_sd_events_wake_all(const struct timespec *dl)
{
    pthread_once(&g_once, ev_init);
    if (pa_sd_lock_until(&g_mu, dl) != 0)
        return;
    pthread_cond_broadcast(&g_cv);
    pthread_mutex_unlock(&g_mu);
}

ze_result_t pa_sd_zeEventHostSignal(ze_event_handle_t h)
{
    pa_sd_event *e = pa_sd_event_of(h);
    if (!e)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    uint64_t now = pa_sd_clock_ticks_at(pa_sd_clock_host_ns());
    pa_sd_event_signal_device(e, now, now);
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeEventHostSynchronize(ze_event_handle_t h, uint64_t timeout)
{
    pa_sd_event *e = pa_sd_event_of(h);
    if (!e)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (atomic_load_explicit(&e->signaled, memory_order_acquire))
        return ZE_RESULT_SUCCESS;
    if (timeout == 0)
        return ZE_RESULT_NOT_READY;
    struct timespec dl;
    pa_sd_deadline(timeout, &dl);
    ze_result_t r = ZE_RESULT_SUCCESS;
    pthread_once(&g_once, ev_init);
    pthread_mutex_lock(&g_mu);
    e->waiters++;
    while (!e->signaled) {
        if (timeout == 0 || e->magic != PA_SD_MAGIC_EVENT) {
            r = ZE_RESULT_NOT_READY;
            break;
        }
        int rc = timeout == UINT64_MAX ? pthread_cond_wait(&g_cv, &g_mu)
                                       : pthread_cond_timedwait(&g_cv, &g_mu, &dl);
        if (rc == ETIMEDOUT && !e->signaled) {
            r = ZE_RESULT_NOT_READY;
            break;
        }
    }
    e->waiters--;
    pthread_mutex_unlock(&g_mu);
    return r;
}

ze_result_t pa_sd_zeEventQueryStatus(ze_event_handle_t h)
{
    pa_sd_event *e = pa_sd_event_of(h);
    if (!e)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    return atomic_load_explicit(&e->signaled, memory_order_acquire) ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY;
}

ze_result_t pa_sd_zeEventHostReset(ze_event_handle_t h)
{
    pa_sd_event *e = pa_sd_event_of(h);
    if (!e)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    pa_sd_event_reset_device(e);
    return ZE_RESULT_SUCCESS;
}

/* Timestamps of the last command that signalled the event, in device ticks masked to
 * kernelTimestampValidBits; NOT_READY until signalled again after a reset (never stale). */
ze_result_t pa_sd_zeEventQueryKernelTimestamp(ze_event_handle_t h, ze_kernel_timestamp_result_t *dst)
{
    pa_sd_event *e = pa_sd_event_of(h);
    if (!e)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!dst)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (!(e->pool->flags & ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP))
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    if (!pa_sd_event_get_ts(e, dst))
        return ZE_RESULT_NOT_READY;
    uint64_t slow = pa_sd_config_get()->fault_ts_query_ns;
    if (slow) { /* fault injection: the calling thread held up inside the call (as when preempted) */
        struct timespec ts = {(time_t)(slow / 1000000000ull), (long)(slow % 1000000000ull)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
    return ZE_RESULT_SUCCESS;
}

/* The event lock is held across fork; the child re-creates the condition because waiters of the
 * parent (workers, host synchronizers) do not exist there. */
void pa_sd_event_atfork(int phase)
{
    if (phase == PA_SD_FORK_PREPARE) {
        pthread_mutex_lock(&g_mu);
        return;
    }
    if (phase == PA_SD_FORK_CHILD)
        pa_sd_cond_init_mono(&g_cv);
    pthread_mutex_unlock(&g_mu);
}
