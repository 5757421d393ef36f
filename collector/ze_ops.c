/* ze_ops.c - device activity: builds an operation for every kernel/copy/fill append, gives
 * it a kernel-timestamp event (the app's or one of the agent's), tracks executions in a
 * bounded in-flight table and turns signaled events into PA_REC_ZE_OP records at sync points. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "../common/pa_log.h"
#include "collector.h"
#include "mem.h"
#include "ze_internal.h"

_Atomic uint64_t pa_ze_uncollected, pa_ze_table_full, pa_ze_ctx_lost, pa_ze_capture_lists;

/* ---- command pool (preallocated, lock-free tagged free stack) ---- */
#define PA_ZE_MAX_CMDS 16384u
static pa_ze_cmd_t cmds[PA_ZE_MAX_CMDS];
static _Atomic uint64_t cmd_free_head;   /* tag << 32 | (index + 1), 0 = empty */
static _Atomic uint32_t cmd_bump;        /* never-used slots start here */

static uint32_t cmd_alloc(void)
{
    uint64_t h = atomic_load(&cmd_free_head);
    while ((uint32_t)h != 0) {
        uint32_t i = (uint32_t)h - 1;
        uint64_t nh = ((h >> 32) + 1) << 32 | (cmds[i].next == PA_ZE_CMD_NONE ? 0 : cmds[i].next + 1);
        if (atomic_compare_exchange_weak(&cmd_free_head, &h, nh))
            return i;
    }
    uint32_t i = atomic_fetch_add(&cmd_bump, 1);
    if (i < PA_ZE_MAX_CMDS)
        return i;
    atomic_store(&cmd_bump, PA_ZE_MAX_CMDS);
    return PA_ZE_CMD_NONE;
}

static void cmd_free(uint32_t i)
{
    uint64_t h = atomic_load(&cmd_free_head);
    do {
        cmds[i].next = (uint32_t)h == 0 ? PA_ZE_CMD_NONE : (uint32_t)h - 1;
    } while (!atomic_compare_exchange_weak(&cmd_free_head, &h, ((h >> 32) + 1) << 32 | (i + 1)));
}

/* ---- agent event pools: per context a growing set of pools of PA_ZE_POOL_EVENTS events
 * (bitmap allocation). A pool is added when every event of the context is taken and a
 * collection freed none, up to PROFAGENT_ZE_MAX_EVENTS per context: one pool creation
 * (1024 events) is amortised over 1024 launches, and bursts of launches between two
 * synchronizations (training loops) lose nothing. ---- */
#define PA_ZE_MAX_CTX 64
#define PA_ZE_POOL_EVENTS 1024
#define PA_ZE_MAX_CTX_POOLS 4096   /* 4M events: the ceiling of PROFAGENT_ZE_MAX_EVENTS */
typedef struct ev_pool {
    void *context;
    ze_event_pool_handle_t pool;
    ze_event_handle_t ev[PA_ZE_POOL_EVENTS];
    _Atomic uint64_t used[PA_ZE_POOL_EVENTS / 64];
    ze_kernel_timestamp_result_t *ts;  /* host USM, ts[k] = capture target of event k; NULL = none */
    int failed;
} ev_pool_t;
typedef struct ctx_pools {
    _Atomic(void *) context;
    _Atomic uint32_t npools;           /* published entries of p[] */
    _Atomic uint32_t hint;             /* pool where the last take succeeded */
    int failed;                        /* creation failed: no more attempts */
    ev_pool_t *p[PA_ZE_MAX_CTX_POOLS];
} ctx_pools_t;
static ctx_pools_t ctxs[PA_ZE_MAX_CTX];
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;

/* Pools a context may hold (PROFAGENT_ZE_MAX_EVENTS / 1024, at least 1). */
static uint32_t pools_max(void)
{
    uint64_t n = pa_config.ze_max_events / PA_ZE_POOL_EVENTS;
    return n < 1 ? 1 : n > PA_ZE_MAX_CTX_POOLS ? PA_ZE_MAX_CTX_POOLS : (uint32_t)n;
}

/* A new pool of context ctx; NULL when the driver refuses (slow path, pool_mu held). */
static ev_pool_t *pool_new(void *ctx)
{
    ev_pool_t *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->context = ctx;
    ze_event_pool_desc_t d = { ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, NULL,
        ZE_EVENT_POOL_FLAG_HOST_VISIBLE | ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP, PA_ZE_POOL_EVENTS };
    int failed = pa_ze.zeEventPoolCreate(ctx, &d, 0, NULL, &n->pool) != ZE_RESULT_SUCCESS;
    for (uint32_t k = 0; k < PA_ZE_POOL_EVENTS && !failed; k++) {
        ze_event_desc_t ed = { ZE_STRUCTURE_TYPE_EVENT_DESC, NULL, k, ZE_EVENT_SCOPE_FLAG_HOST, 0 };
        failed = pa_ze.zeEventCreate(n->pool, &ed, &n->ev[k]) != ZE_RESULT_SUCCESS;
    }
    if (failed) {
        free(n);  /* the driver's partial pool is left alone: it may be unusable */
        return NULL;
    }
    ze_host_mem_alloc_desc_t hd = { ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, NULL, 0 };
    if (pa_ze.zeMemAllocHost(ctx, &hd, PA_ZE_POOL_EVENTS * sizeof *n->ts, 64, (void **)&n->ts) !=
        ZE_RESULT_SUCCESS)
        n->ts = NULL;  /* captures unavailable: plain event queries still work */
    return n;
}

/* A set whose context the application destroyed (ctx_pools_free): free for another context,
 * but lookups scan past it (the sets after it are still in use). */
#define PA_ZE_CTX_DEAD ((void *)1)

/* The pool set of context ctx, created (empty) on first use; NULL when the table is full. */
static ctx_pools_t *ctx_for(void *ctx)
{
    for (int i = 0; i < PA_ZE_MAX_CTX; i++) {
        void *c = atomic_load_explicit(&ctxs[i].context, memory_order_acquire);
        if (c == ctx)
            return &ctxs[i];
        if (c == NULL)
            break;
    }
    ctx_pools_t *r = NULL, *spare = NULL;
    pthread_mutex_lock(&pool_mu);
    for (int i = 0; i < PA_ZE_MAX_CTX && !r; i++) {
        void *c = atomic_load(&ctxs[i].context);
        if (c == ctx)
            r = &ctxs[i];
        else if (c == PA_ZE_CTX_DEAD && !spare)
            spare = &ctxs[i];
        else if (c == NULL)
            r = spare ? spare : &ctxs[i];
    }
    if (!r)
        r = spare;
    if (r)
        atomic_store(&r->context, ctx);
    pthread_mutex_unlock(&pool_mu);
    return r;
}

/* Adds a pool to cp unless another thread just did or the bound is reached. 0 = try again. */
static int ctx_grow(ctx_pools_t *cp, uint32_t seen)
{
    int rc = -1;
    pthread_mutex_lock(&pool_mu);
    uint32_t n = atomic_load(&cp->npools);
    if (n != seen) {
        rc = 0;  /* grown meanwhile */
    } else if (!cp->failed && n < pools_max()) {
        ev_pool_t *p = pool_new(atomic_load(&cp->context));
        if (p) {
            cp->p[n] = p;
            atomic_store_explicit(&cp->npools, n + 1, memory_order_release);
            atomic_store(&cp->hint, n);
            rc = 0;
        } else {
            cp->failed = 1;
        }
    }
    pthread_mutex_unlock(&pool_mu);
    return rc;
}

static int pool_take(ev_pool_t *p, uint32_t *idx)
{
    if (!p || p->failed)
        return -1;
    for (uint32_t w = 0; w < PA_ZE_POOL_EVENTS / 64; w++) {
        uint64_t u = atomic_load(&p->used[w]);
        while (~u) {
            int b = __builtin_ctzll(~u);
            if (atomic_compare_exchange_weak(&p->used[w], &u, u | (1ull << b))) {
                *idx = w * 64 + (uint32_t)b;
                return 0;
            }
        }
    }
    return -1;
}

/* One free event of cp's pools, starting at the hint. 0 ok, -1 all taken. */
static int ctx_scan(ctx_pools_t *cp, ev_pool_t **pp, uint32_t *idx)
{
    uint32_t n = atomic_load_explicit(&cp->npools, memory_order_acquire), h = atomic_load(&cp->hint);
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = (h + k) % n;
        if (pool_take(cp->p[i], idx) == 0) {
            if (i != h)
                atomic_store(&cp->hint, i);
            *pp = cp->p[i];
            return 0;
        }
    }
    return -1;
}

/* Destroys pool p's driver objects and frees it (its context is being destroyed, nothing of
 * the agent refers to its events any more). */
static void pool_free(ev_pool_t *p)
{
    for (uint32_t k = 0; k < PA_ZE_POOL_EVENTS; k++)
        if (p->ev[k])
            pa_ze.zeEventDestroy(p->ev[k]);
    pa_ze.zeEventPoolDestroy(p->pool);
    if (p->ts)
        pa_ze.zeMemFree(p->context, p->ts);
    free(p);
}

/* Context ctx is being destroyed: its pools go, its set is free for another context (a driver
 * may give a later context the same handle: that one starts with no pools). */
static void ctx_pools_free(void *ctx)
{
    pthread_mutex_lock(&pool_mu);
    for (int i = 0; i < PA_ZE_MAX_CTX; i++) {
        ctx_pools_t *cp = &ctxs[i];
        void *c = atomic_load(&cp->context);
        if (c == NULL)
            break;
        if (c != ctx)
            continue;
        uint32_t n = atomic_load(&cp->npools);
        atomic_store(&cp->npools, 0);
        atomic_store(&cp->hint, 0);
        for (uint32_t k = 0; k < n; k++) {
            pool_free(cp->p[k]);
            cp->p[k] = NULL;
        }
        cp->failed = 0;
        atomic_store(&cp->context, PA_ZE_CTX_DEAD);
    }
    pthread_mutex_unlock(&pool_mu);
}

static int collect(ze_event_handle_t ev);

/*! ev_take() : an agent event of context ctx in *pp, *idx (with a capture slot when `need_ts`).
 *  Collects finished operations, then adds a pool, before giving up. 0 ok, -1 none to be had. */
static int ev_take(void *ctx, int need_ts, ev_pool_t **pp, uint32_t *idx)
{
    ctx_pools_t *cp = ctx_for(ctx);
    if (!cp)
        return -1;
    /* Not a fixed number of rounds: a pool added (by this thread or another) while this one
     * was preempted may be taken whole by the other threads before this one scans it again
     * (several threads appending without a sync, a loaded machine): the append lost its
     * event, "uncollected". Each round either takes an event, or sees a pool added (at most
     * pools_max() in all), or gives up. */
    for (int round = 0;; round++) {
        uint32_t seen = atomic_load(&cp->npools);
        if (ctx_scan(cp, pp, idx) == 0) {
            if (!need_ts || (*pp)->ts)
                return 0;
            atomic_fetch_and(&(*pp)->used[*idx / 64], ~(1ull << (*idx % 64)));
            return -1;  /* this context has no capture memory */
        }
        if (round == 0 && seen)
            collect(NULL);
        else if (ctx_grow(cp, seen) != 0)
            return ctx_scan(cp, pp, idx) == 0 && (!need_ts || (*pp)->ts) ? 0 : -1;
    }
}

static void pool_give(ev_pool_t *p, uint32_t idx)
{
    if (pa_ze_loader_enter()) { /* not once the loader's teardown began (ze_window.c) */
        pa_ze.zeEventHostReset(p->ev[idx]);
        pa_ze_loader_leave();
    }
    atomic_fetch_and(&p->used[idx / 64], ~(1ull << (idx % 64)));
}

/* ---- in-flight executions ---- */
#define PA_ZE_MAX_FLIGHTS 4096u
/* FL_DONE: the device finished and its timestamps are copied into the flight (done_ts), its
 * events and harvest list are released, but the thread that collected it found no room in its
 * ring: the record is written by a later collection (or the exit flush), never dropped. */
enum { FL_FREE = 0, FL_CLAIMED, FL_PENDING, FL_BUSY, FL_DONE };
typedef struct flight {
    uint32_t tid;                /* launching thread */
    pa_ze_op_t op;
    const char *name;
    ze_event_handle_t event;
    ev_pool_t *pool;             /* release the agent event at collection when release_ev */
    uint32_t ev_index;
    int release_ev;
    /* captured flights: `event` is the agent event signalled once the device copied the
     * timestamps of the operation's own event to *tsp (see "device-side capture" below) */
    const ze_kernel_timestamp_result_t *tsp;
    int harvest;                 /* harvest list slot to release at collection, -1 none */
    /* regular list it came from (agent event baked in it), NULL = none; `src_serial` tells
     * whether that table entry still describes the same list when the flight ends */
    pa_ze_obj_info_t *src;
    uint32_t src_serial;
    ze_kernel_timestamp_result_t done_ts;  /* FL_DONE: the timestamps read */
} flight_t;
/* Sized at first use to PROFAGENT_ZE_MAX_EVENTS + PA_ZE_MAX_FLIGHTS (the agent's events plus
 * the application's); zeroed pages cost nothing until a burst reaches them. */
static flight_t *flights;
/* States live apart from the bodies so that a scan (every sync point of every thread scans
 * [0, flight_hwm)) reads one dense array instead of thousands of scattered 200-byte bodies. */
static _Atomic int *flight_state;
static uint32_t flight_cap;
static _Atomic uint32_t flight_hwm;
static _Atomic uint32_t npending;
static _Atomic uint32_t claim_hint;  /* no free slot below it (approximately: a hint) */
static pthread_once_t flights_once = PTHREAD_ONCE_INIT;

static void flights_alloc(void)
{
    uint64_t n = pa_config.ze_max_events + PA_ZE_MAX_FLIGHTS;
    flights = calloc(n, sizeof *flights);
    flight_state = calloc(n, sizeof *flight_state);
    if (flights && flight_state)
        flight_cap = (uint32_t)n;
}

static inline _Atomic int *fst(const flight_t *f)
{
    return &flight_state[f - flights];
}

/* Lowest free slot first, so flight_hwm stays at the peak number of executions in flight
 * (a round-robin start pushed it to the table size: 4096 states and bodies read per sync,
 * 80 % of the agent's CPU in samples/multithread). */
static flight_t *flight_claim(void)
{
    pthread_once(&flights_once, flights_alloc);
    uint32_t h = atomic_load_explicit(&claim_hint, memory_order_relaxed);
    for (uint32_t k = 0; k < flight_cap; k++) {
        uint32_t i = h + k < flight_cap ? h + k : h + k - flight_cap;
        int expect = FL_FREE;
        if (atomic_load_explicit(&flight_state[i], memory_order_relaxed) == FL_FREE &&
            atomic_compare_exchange_strong(&flight_state[i], &expect, FL_CLAIMED)) {
            uint32_t m = atomic_load(&flight_hwm);
            while (m < i + 1 && !atomic_compare_exchange_weak(&flight_hwm, &m, i + 1))
                ;
            atomic_store_explicit(&claim_hint, i + 1, memory_order_relaxed);
            return &flights[i];
        }
    }
    atomic_fetch_add(&pa_ze_table_full, 1);
    return NULL;
}

/* Slot i is free again: claims restart from the lowest free slot. */
static void flight_free(uint32_t i)
{
    atomic_store_explicit(&flight_state[i], FL_FREE, memory_order_release);
    uint32_t h = atomic_load_explicit(&claim_hint, memory_order_relaxed);
    while (i < h && !atomic_compare_exchange_weak(&claim_hint, &h, i))
        ;
}

/* One flight (or capture) of harvest slot i is done; the last one destroys the (executed,
 * complete) list (ze_harvest.c). */
static void harvest_release(int i)
{
    ze_command_list_handle_t h = pa_ze_harvest_drop(i);
    if (h && pa_ze_loader_enter()) {
        pa_ze.zeCommandListDestroy(h);
        pa_ze_loader_leave();
    }
}

/* Where a flight's timestamps come from when the device captured them (NULL = its own event). */
typedef struct flight_cap {
    ev_pool_t *pool;             /* agent pool: event ev_index is the "captured" signal */
    uint32_t ev_index;
    int harvest;                 /* harvest slot or -1 */
} flight_cap_t;

/* Tracks one operation; returns its flight slot, PA_ZE_CMD_NONE when the table is full. */
static uint32_t flight_start(const pa_ze_cmd_t *c, uint64_t corr, uint64_t t0, uint64_t t1,
                             void *queue, uint32_t engine, int release_ev, const flight_cap_t *cap,
                             pa_ze_obj_info_t *src)
{
    flight_t *f = flight_claim();
    if (!f) {
        /* The work is submitted: the device will still signal these events and run that
         * harvest list. Returning them now would let another operation reuse an event the
         * device then signals, or destroy a queued list; they stay pinned instead (rare: the
         * flight table is full). A pinned capture keeps src's own events out of the pool. */
        if (cap && src)
            atomic_fetch_add(&src->fl_cap, 1);
        return PA_ZE_CMD_NONE;
    }
    f->tid = pa_tls.tid;
    f->op = c->op;
    f->op.corr_id = corr;
    f->op.api_t0 = t0;
    f->op.api_t1 = t1;
    f->op.queue = (uint64_t)(uintptr_t)queue;
    if (!release_ev)  /* an execution of a regular list: the API call is the execute (spec's graph case) */
        f->op.api = PA_ZE_API_CommandQueueExecuteCommandLists;
    if (engine != UINT32_MAX)
        f->op.engine = engine;
    f->name = c->name;
    f->event = c->event;
    f->pool = c->pool;
    f->ev_index = c->ev_index;
    f->release_ev = release_ev;
    f->tsp = NULL;
    f->harvest = -1;
    f->src = c->pool ? src : NULL;  /* only the agent's baked events need the list's bookkeeping */
    f->src_serial = src ? src->serial : 0;
    if (f->src)
        atomic_fetch_add(cap ? &src->fl_cap : &src->fl_direct, 1);
    if (cap) {
        f->event = cap->pool->ev[cap->ev_index];
        f->pool = cap->pool;
        f->ev_index = cap->ev_index;
        f->release_ev = 1;
        f->tsp = &cap->pool->ts[cap->ev_index];
        f->harvest = cap->harvest;
    }
    atomic_fetch_add(&npending, 1);
    atomic_store_explicit(fst(f), FL_PENDING, memory_order_release);
    return (uint32_t)(f - flights);
}

/* Set on the thread running the exit flush: its own failed polls put the flight back (the
 * flush polls it again while the device makes progress, then counts what is left), and its
 * records wait for room in its ring (it emits a whole backlog at once) until flush_end. */
static __thread int ops_flushing __attribute__((tls_model("initial-exec")));
static uint64_t flush_end;

/* The exit flush emits every flight it collects from one thread, faster than the aggregator
 * drains a ring: waits (yielding) for room for `ns` slots in r, at most until flush_end. */
static void flush_wait_room(pa_ring_t *r, uint32_t ns)
{
    uint64_t cap = r->mask + 1, tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    for (unsigned i = 0; tail + ns - atomic_load_explicit(&r->head, memory_order_acquire) > cap; i++)
        if (i >= 64) { /* the aggregator drains in batches: a short spin often suffices */
            if (pa_clock_ns() > flush_end)
                return;
            sched_yield();
        }
}

/* 1 when this thread's ring r has room for `ns` slots with an eighth of it still free after them. */
static int ring_room(pa_ring_t *r, uint32_t ns)
{
    uint64_t cap = r->mask + 1, need = ns + cap / 8;
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    if (tail + need - r->cached_head <= cap)
        return 1;
    r->cached_head = atomic_load_explicit(&r->head, memory_order_acquire); /* producer's copy */
    return tail + need - r->cached_head <= cap;
}

/*! flight_emit() : writes f's PA_REC_ZE_OP record with timestamps ts into this thread's ring.
 *  Returns 0 when written (or lost for a reason counted elsewhere: no ring), 1 when the ring has
 *  no room for it now: nothing written, nothing counted, the caller keeps the flight (FL_DONE).
 *  Why not write and let the ring count a drop: a collection after a long burst of appends
 *  without a sync emits thousands of records at once from one thread, faster than the aggregator
 *  drains (a loaded machine gives it no CPU for a while): 4,247 of 20,000 kernels were dropped
 *  that way. Outside the exit flush an eighth of the ring stays free for the application's own
 *  calls that follow; the flush waits for room instead (flush_wait_room). */
static int flight_emit(flight_t *f, const ze_kernel_timestamp_result_t *ts)
{
    pa_ze_clock_t clk = { 0, 64, 0, 0 };
    uint32_t dev = f->op.device < pa_ze_ndevs ? f->op.device : 0;
    if (pa_ze_ndevs)
        pa_ze_dev_clock(dev, &clk);
    uint64_t start = pa_ze_ticks_to_ns(&clk, ts->global.kernelStart);
    uint64_t dur = pa_ze_span_ns(&clk, ts->global.kernelStart, ts->global.kernelEnd);
    size_t nlen = f->name ? strlen(f->name) : 0;
    if (nlen > 4096)
        nlen = 4096;
    pa_ring_t *r = pa_thread_ring();
    if (!r) {
        pa_emit_unrecorded(r);
        return 0;
    }
    uint32_t len = (uint32_t)(sizeof(pa_ze_op_t) + nlen);
    uint32_t ns = pa_record_slots(len);
    if (PA_UNLIKELY(ops_flushing))
        flush_wait_room(r, ns);
    else if (!ring_room(r, ns))
        return 1;
    pa_record_t *slot = pa_ring_reserve(r, ns);
    if (!slot)
        return 0; /* the flush's wait for room ran out: the ring counted the drop */
    memset(slot, 0, sizeof *slot);
    slot->kind = PA_REC_ZE_OP;
    slot->nslots = (uint16_t)ns;
    slot->len = len;
    slot->tid = f->tid;
    slot->t0 = start;
    slot->t1 = start + dur;
    f->op.name_len = (uint16_t)nlen;
    char buf[sizeof(pa_ze_op_t) + 4096];
    memcpy(buf, &f->op, sizeof f->op);
    if (nlen)
        memcpy(buf + sizeof f->op, f->name, nlen);
    pa_ring_write_payload(r, buf, len);
    pa_ring_commit(r, ns);
    return 0;
}

/* Releases what flight f holds on the device side: its agent events, its harvest list, its
 * list's bookkeeping (state FL_BUSY on entry); the flight then no longer matches any event. */
static void flight_release(flight_t *f)
{
    if (f->release_ev && f->pool)
        pool_give(f->pool, f->ev_index);
    harvest_release(f->harvest);
    if (f->src && f->src->serial == f->src_serial && f->src->type == PA_ZE_OBJ_LIST)
        atomic_fetch_sub(f->tsp ? &f->src->fl_cap : &f->src->fl_direct, 1);
    f->event = NULL;
    f->pool = NULL;
    f->release_ev = 0;
    f->harvest = -1;
    f->src = NULL;
}

/* Frees f's slot (released, state FL_BUSY on entry). */
static void flight_retire(flight_t *f)
{
    atomic_fetch_sub(&npending, 1);
    flight_free((uint32_t)(f - flights));
}

/* Releases what flight f holds and frees its slot (state FL_BUSY on entry). */
static void flight_end(flight_t *f)
{
    flight_release(f);
    flight_retire(f);
}

/* Set when the exit flush begins: from then on no operation is tracked (ops_closed_count). */
static _Atomic int ops_closed;

/* Appends and executions in progress, per slot (a thread keeps one slot; 64 slots on their own
 * cache lines, so threads rarely share one). Why: an append that found ops_closed clear tracks
 * its flight at its end, in the epilogue, after its ZE_API record; the flush must not scan the
 * flights before that, or the flight is neither collected nor counted. A thread raises its slot
 * and then reads ops_closed; the flush sets ops_closed and then waits for the slots to drop
 * (both sequentially consistent: one of the two sees the other). One uncontended atomic add
 * and one subtract per traced append, no lock, no allocation. */
#define PA_ZE_BUSY_SLOTS 64u
static struct { _Alignas(64) _Atomic uint32_t n; } ops_busy[PA_ZE_BUSY_SLOTS];
static _Atomic uint32_t ops_busy_next;
static __thread uint8_t ops_slot __attribute__((tls_model("initial-exec")));  /* slot + 1, 0 = none yet */
static __thread uint8_t ops_held __attribute__((tls_model("initial-exec")));  /* this thread counts in it */

/*! ops_enter() : marks this thread's append/execution in progress (once: a prologue whose
 *  epilogue never ran, e.g. recording stopped meanwhile, is not counted twice). Returns 1 when
 *  the exit flush began: the operation is then counted, not tracked. */
static int ops_enter(void)
{
    if (!ops_held) {
        if (PA_UNLIKELY(!ops_slot))
            ops_slot = (uint8_t)(1 + atomic_fetch_add_explicit(&ops_busy_next, 1, memory_order_relaxed) %
                                         PA_ZE_BUSY_SLOTS);
        atomic_fetch_add(&ops_busy[ops_slot - 1].n, 1);
        ops_held = 1;
    }
    return atomic_load(&ops_closed);
}

/*! ops_leave() : the operation's flight (if any) is published: the flush may scan. */
static void ops_leave(void)
{
    if (ops_held) {
        ops_held = 0;
        atomic_fetch_sub_explicit(&ops_busy[ops_slot - 1].n, 1, memory_order_release);
    }
}

/* The flush's side: ops_closed is set; waits until no other thread is between an append's
 * ops_enter and ops_leave, at most until `end` (an append is microseconds: the bound only
 * matters for a thread stuck in the driver). The calling thread's own count is its own. */
static void ops_wait_appends(uint64_t end)
{
    for (uint32_t i = 0; i < PA_ZE_BUSY_SLOTS; i++) {
        uint32_t own = ops_held && ops_slot == i + 1;
        while (atomic_load(&ops_busy[i].n) > own && pa_clock_ns() < end)
            sched_yield();
    }
}

/* Why operations are counted, not tracked, once the exit flush began: the application's other
 * threads keep appending while exit() runs on one of them; a flight started now would be
 * collected (if ever: the process may end first) after the aggregator's last drain and
 * counted nowhere, while its ZE_API row is in the DB. Counted uncollected at the append
 * instead, in a ZE_COUNTS record (the writer sums them) that precedes the call's ZE_API record
 * in this thread's ring: the DB that holds the call also holds its count. (An append that
 * then fails is counted too: at most one per call racing the exit.) */
static void ops_closed_count(uint64_t n)
{
    /* not added to pa_ze_uncollected: the exit flush's own ZE_COUNTS record carries that total,
     * which would then count the appends made during the flush twice */
    pa_record_t rec = { .kind = PA_REC_ZE_COUNTS, .t0 = pa_clock_ns() };
    rec.u.raw[0] = n;
    rec.u.raw[2] = (uint64_t)pa_ze_path;
    rec.u.raw[3] = (uint64_t)pa_ze_path_reason;
    pa_emit(&rec, NULL, 0);
}

/* Flight f (FL_BUSY) holds timestamps ts its thread's ring had no room for: FL_DONE, written by
 * a later collection. Returns 0. Once the exit flush began on another thread it may already have
 * passed this slot: counted then instead (as flight_try does with a failed poll). */
static int flight_keep(flight_t *f, const ze_kernel_timestamp_result_t *ts)
{
    if (ts != &f->done_ts)
        memcpy(&f->done_ts, ts, sizeof *ts);
    flight_release(f);
    if (PA_UNLIKELY(atomic_load(&ops_closed)) && !ops_flushing) {
        ops_closed_count(1);
        flight_retire(f);
        return 0;
    }
    atomic_store_explicit(fst(f), FL_DONE, memory_order_release);
    return 0;
}

/* Writes the record of a FL_DONE flight when the ring has room now. 1 written, 0 not. */
static int flight_try_done(flight_t *f)
{
    int expect = FL_DONE;
    if (!atomic_compare_exchange_strong(fst(f), &expect, FL_BUSY))
        return 0;
    if (flight_emit(f, &f->done_ts) != 0)
        return flight_keep(f, &f->done_ts);
    flight_retire(f);
    return 1;
}

/* Tries to finish flight i (guard held). `ev`: only flights on this event (NULL = any, and then
 * also the FL_DONE ones). Returns 1 collected, 0 still pending / kept / not ours. */
static int flight_try_live(uint32_t i, ze_event_handle_t ev, int wait_ok, uint64_t wait_ns)
{
    flight_t *f = &flights[i];
    int expect = FL_PENDING, s = atomic_load_explicit(fst(f), memory_order_acquire);
    if (s == FL_DONE && !ev)
        return flight_try_done(f);
    if (s != FL_PENDING || (ev && f->event != ev) || !atomic_compare_exchange_strong(fst(f), &expect, FL_BUSY))
        return 0;
    ze_result_t st = wait_ok ? pa_ze.zeEventHostSynchronize(f->event, wait_ns)
                             : pa_ze.zeEventQueryStatus(f->event);
    ze_kernel_timestamp_result_t ts;
    if (st == ZE_RESULT_SUCCESS && f->tsp)
        memcpy(&ts, f->tsp, sizeof ts);  /* the device wrote it before signalling f->event */
    else if (st != ZE_RESULT_SUCCESS || pa_ze.zeEventQueryKernelTimestamp(f->event, &ts) != ZE_RESULT_SUCCESS) {
        if (PA_UNLIKELY(atomic_load(&ops_closed)) && !ops_flushing) {
            /* the exit flush began (on another thread): it may have given up waiting for this
             * poll, so a flight put back now would be neither collected nor counted; counted
             * here instead */
            ops_closed_count(1);
            flight_end(f);
            return 0;
        }
        atomic_store(fst(f), FL_PENDING);
        return 0;
    }
    if (f->tsp && ts.global.kernelStart == 0 && ts.global.kernelEnd == 0)
        atomic_fetch_add(&pa_ze_uncollected, 1); /* the captured event had no timestamps */
    else if (flight_emit(f, &ts) != 0)
        return flight_keep(f, &ts);
    flight_end(f);
    return 1;
}

/* flight_try_live() while the loader is alive: its polls and clock reads (the exit flush's, on
 * the finisher thread, too) never reach a loader whose teardown began (ze_window.c); a flight
 * not polled then stays pending (the flush counts it uncollected). */
static int flight_try(uint32_t i, ze_event_handle_t ev, int wait_ok, uint64_t wait_ns)
{
    if (!pa_ze_loader_enter())
        return 0;
    int r = flight_try_live(i, ev, wait_ok, wait_ns);
    pa_ze_loader_leave();
    return r;
}

/* Collects what is done; `ev` restricts to one event. Returns flights left on `ev`. */
static int collect(ze_event_handle_t ev)
{
    if (atomic_load_explicit(&npending, memory_order_relaxed) == 0)
        return 0;
    int left = 0;
    uint32_t hwm = atomic_load(&flight_hwm);
    (void)pa_thread_ring(); /* made before the guard (no ring is made under it): emits need it */
    pa_guard_enter();
    for (uint32_t i = 0; i < hwm; i++)
        if (!flight_try(i, ev, 0, 0) && ev && atomic_load(&flight_state[i]) == FL_PENDING &&
            flights[i].event == ev)
            left++;
    pa_guard_leave();
    return left;
}

/* ---- work still running on what the application destroys ----
 * An application may destroy an event, its pool or its context while operations signalling
 * them still run (the spec forbids it; sloppy applications do it, e.g. a pool destroyed right
 * after its last launch, without a host sync). The driver frees the events in that call: a later
 * poll of them reads freed memory, and the operations' device times are lost unless read before.
 * So the destroy's prologue waits for those operations, at most PA_ZE_DESTROY_WAIT_NS in all, and
 * collects them; what still runs then is ended and counted (said once), never polled again. */
#define PA_ZE_DESTROY_WAIT_NS 100000000ull
/* the last part of that budget is kept for flights another thread is polling right now */
#define PA_ZE_DESTROY_BUSY_NS 5000000ull

typedef int (*flight_match_t)(const flight_t *f, const void *arg);

/* Flights on the application's events of pool `pool`, or on an event whose pool is unknown
 * (created before the agent attached, or its table slot full): it may be one of this pool's,
 * waiting for it costs at most the budget. The agent's own events (captures too) stay valid. */
static int flight_on_pool(const flight_t *f, const void *pool)
{
    ze_event_handle_t e = f->event;
    if (!e || f->pool)
        return 0;
    const void *p = pa_ze_evmap_get(e);
    return p == pool || p == NULL;
}

static int flight_on_event(const flight_t *f, const void *ev)
{
    return f->event && f->event == ev;
}

/*! flights_settle() : collects the pending flights `match` selects, waiting for them (the whole
 *  call at most PA_ZE_DESTROY_WAIT_NS); ends the ones still running then, each counted in *lost
 *  (lost NULL: they stay pending, their events being the agent's). Returns how many were ended
 *  so. Not for the hot path: scans the flight table three times. */
static uint32_t flights_settle(flight_match_t match, const void *arg, _Atomic uint64_t *lost)
{
    if (!flights || atomic_load(&npending) == 0)
        return 0;
    (void)pa_thread_ring(); /* the records need it; no ring is made under the guard */
    uint64_t end = pa_clock_ns() + PA_ZE_DESTROY_WAIT_NS, wait_end = end - PA_ZE_DESTROY_BUSY_NS;
    pa_guard_enter();
    uint32_t hwm = atomic_load(&flight_hwm), dropped = 0;
    for (uint32_t i = 0; i < hwm && atomic_load(&npending); i++) {
        ze_event_handle_t e = flights[i].event;
        if (atomic_load(&flight_state[i]) != FL_PENDING || !e || !match(&flights[i], arg))
            continue;
        uint64_t now = pa_clock_ns();
        (void)flight_try(i, e, 1, now < wait_end ? wait_end - now : 0); /* 0: one more poll */
    }
    for (; lost;) {
        uint32_t busy = 0;
        for (uint32_t i = 0; i < hwm; i++) {
            flight_t *f = &flights[i];
            int s = atomic_load(&flight_state[i]), expect = FL_PENDING;
            if ((s != FL_PENDING && s != FL_BUSY) || !match(f, arg))
                continue;
            if (s == FL_BUSY || !atomic_compare_exchange_strong(&flight_state[i], &expect, FL_BUSY)) {
                busy++; /* another thread's poll: it collects it or puts it back, in microseconds */
                continue;
            }
            atomic_fetch_add(lost, 1);
            flight_end(f);
            dropped++;
        }
        if (!busy || pa_clock_ns() >= end)
            break;
        sched_yield();
    }
    pa_guard_leave();
    return dropped;
}

/* Says once that a destroy ended `n` operations still running (their device times lost). */
static void destroy_lost_say(const char *api, uint32_t n)
{
    static _Atomic int said;
    if (n && !atomic_exchange(&said, 1))
        pa_warn("ze", "%s while %u device operation%s signalling what it destroys still ran after %llu ms:"
                " %s device times are lost (counted as uncollected; further such losses are only counted)",
                api, n, n == 1 ? "" : "s", PA_ZE_DESTROY_WAIT_NS / 1000000ull, n == 1 ? "its" : "their");
}

/* 1 once a command of a regular list kept an application event (append_end): until then no
 * destroy needs to scan the commands (applications destroying thousands of events). */
static _Atomic int cmds_app_events;

/* Commands of regular lists that signal the application's event `ev`, or an event of pool
 * `pool`, which is being destroyed: they keep no event, so a later execution (an application
 * error) is counted uncollected instead of polling a freed event. */
static void cmds_forget_events(const void *pool, ze_event_handle_t ev)
{
    if (!atomic_load_explicit(&cmds_app_events, memory_order_acquire))
        return;
    uint32_t n = atomic_load(&cmd_bump);
    for (uint32_t i = 0; i < n && i < PA_ZE_MAX_CMDS; i++) {
        pa_ze_cmd_t *c = &cmds[i];
        ze_event_handle_t e = c->event;
        if (e && !c->pool && (ev ? e == ev : pa_ze_evmap_get(e) == pool))
            c->event = NULL;
    }
}

/* zeEventDestroy(ev) / zeEventPoolDestroy(pool) prologue: what the event (the pool's events,
 * also those the application did not destroy) signals is collected while they are valid. */
static void app_events_destroying(const void *pool, ze_event_handle_t ev)
{
    uint32_t lost = ev ? flights_settle(flight_on_event, ev, &pa_ze_uncollected)
                       : flights_settle(flight_on_pool, pool, &pa_ze_uncollected);
    destroy_lost_say(ev ? "zeEventDestroy" : "zeEventPoolDestroy", lost);
    pa_guard_enter();
    cmds_forget_events(pool, ev);
    if (ev)
        pa_ze_evmap_del(ev);
    else
        (void)pa_ze_evmap_del_pool(pool);
    pa_guard_leave();
}

/* The exit flush gives up when no flight was collected for this long: a kernel the application
 * left running for seconds (or a hung one) is not waited for, while a backlog the device is
 * working through (threads that appended faster than it runs, no host sync) is collected
 * within the flush's timeout.
 * The window is not plain wall time: time in which a thread of the process waited for a CPU
 * (the most any one thread waited, pa_ze_stall_wait_ns) is added to it. Why: simdev's engines
 * are threads of the process, and a real driver may have its own; on a loaded machine they get
 * no CPU for longer than the window although the device is not hung. Measured at nice 19 under
 * load 30: 13,495 of 13,631 kernels were counted uncollected after a second in which the
 * engine ran 2 ms and waited 935 ms for a CPU. A real device's own progress does not need the
 * host's CPU, so there the extension only lengthens the wait for work that is truly stuck, by
 * the time the process was starved. Extensions stop when one adds less than
 * PA_ZE_FLUSH_EXTEND_MIN_NS, and add at most PA_ZE_FLUSH_EXTEND_MAX_NS in all to one window: an
 * engine that sleeps through a long kernel also waits for a CPU at each wake-up, and on a
 * starved machine those waits fill the window as a backlog's do (measured: the exit of a program
 * leaving 5 s of kernels queued took 2.5 s longer, the whole flush budget, without the bound). */
#define PA_ZE_FLUSH_STALL_NS 200000000ull
#define PA_ZE_FLUSH_EXTEND_MIN_NS 10000000ull
#define PA_ZE_FLUSH_EXTEND_MAX_NS 1000000000ull
/* a thread starved right now (its wait not counted by the kernel yet): looked at again this soon */
#define PA_ZE_FLUSH_RECHECK_NS 20000000ull
/* Reading the threads' waits again after a collection at most this often (a reading older than
 * the window's start also holds waits from before it: the extension is capped by the window) */
#define PA_ZE_FLUSH_REBASE_NS 100000000ull
static uint64_t stall_read_at;  /* when the flush last read the threads' waits */
static uint64_t stall_added;    /* extension given to the current window */

/* The window of no collection since *last is over: extends it (moves *last on) by the time a
 * thread of the process waited for a CPU since the previous reading, at most the window's
 * length so far. Returns 1 when the window stays over: the device made no progress. */
static int flush_stalled(uint64_t *last)
{
    uint64_t now = pa_clock_ns();
    if (now < *last + PA_ZE_FLUSH_STALL_NS)
        return 0;
    int starved;
    uint64_t w = pa_ze_stall_wait_ns(&starved);
    stall_read_at = now;
    if (w > now - *last)
        w = now - *last;
    uint64_t to = *last + w;
    if (starved && to + PA_ZE_FLUSH_STALL_NS < now + PA_ZE_FLUSH_RECHECK_NS)
        to = now + PA_ZE_FLUSH_RECHECK_NS - PA_ZE_FLUSH_STALL_NS; /* its wait is not counted yet */
    uint64_t add = to - *last;
    if (add > PA_ZE_FLUSH_EXTEND_MAX_NS - stall_added)
        add = PA_ZE_FLUSH_EXTEND_MAX_NS - stall_added;
    if (add < PA_ZE_FLUSH_EXTEND_MIN_NS)
        return 1;
    stall_added += add;
    *last += add;
    return now >= *last + PA_ZE_FLUSH_STALL_NS;
}

/* A collection at time `now`: the window restarts; the threads' waits are read again when the
 * last reading is old, so that the next extension counts waits from about this time on. */
static void flush_progress(uint64_t now, uint64_t *last)
{
    *last = now;
    stall_added = 0;
    if (now - stall_read_at > PA_ZE_FLUSH_REBASE_NS) {
        int starved;
        (void)pa_ze_stall_wait_ns(&starved);
        stall_read_at = now;
    }
}

/* One pass of the flush over the pending flights: each is waited for until `end` or until
 * PA_ZE_FLUSH_STALL_NS after the last collection (*last), whichever comes first; a flight not
 * done then stays pending for the next pass. Returns the flights collected. */
static uint32_t flush_pass(uint64_t end, uint64_t *last)
{
    uint32_t got = 0, hwm = atomic_load(&flight_hwm);
    for (uint32_t i = 0; i < hwm && atomic_load(&npending); i++) {
        int s = atomic_load_explicit(&flight_state[i], memory_order_relaxed);
        if (s != FL_PENDING && s != FL_DONE)
            continue;
        uint64_t now = pa_clock_ns(), stop = *last + PA_ZE_FLUSH_STALL_NS < end ? *last + PA_ZE_FLUSH_STALL_NS : end;
        if (flight_try(i, NULL, 1, now < stop ? stop - now : 0)) {
            got++;
            flush_progress(pa_clock_ns(), last);
        }
    }
    return got;
}

void pa_ze_ops_flush(uint64_t timeout_ns)
{
    atomic_store(&ops_closed, 1);
    uint64_t end = pa_clock_ns() + timeout_ns;
    flush_end = end;
    pa_guard_enter();
    ops_wait_appends(end);
    /* Passes while the device makes progress: flights are scanned in slot order, not in the
     * order the engines complete them, so one waited for in vain (stall window over while
     * another list's kernels ran) is done by the next pass. A pass that collects nothing ends
     * it once the window, extended by the process's waits for a CPU, is over (the device
     * stalled); before that (extended, or the pass waited for nothing: flights another thread
     * polls) the next pass waits again. */
    ops_flushing = 1;
    uint64_t last = pa_clock_ns();
    int starved;
    (void)pa_ze_stall_wait_ns(&starved); /* the baseline */
    stall_read_at = last;
    while (atomic_load(&npending) && pa_clock_ns() < end && atomic_load(&pa_ze_loader_live)) {
        if (flush_pass(end, &last))
            continue;
        if (flush_stalled(&last))
            break;
        sched_yield();
    }
    ops_flushing = 0;
    /* what is left is counted and released here, not left for an application thread's next
     * collect to emit after the last drain (uncounted). A flight another thread is polling
     * (FL_BUSY) is given what is left of the timeout, at least 10 ms, to be emitted (a poll
     * that fails now counts it itself: flight_try). */
    uint32_t hwm = atomic_load(&flight_hwm);
    uint64_t busy_end = pa_clock_ns() + 10000000ull;
    if (busy_end < end)
        busy_end = end;
    for (uint32_t i = 0; i < hwm; i++) {
        while (atomic_load(&flight_state[i]) == FL_BUSY && pa_clock_ns() < busy_end)
            sched_yield();
        int expect = FL_PENDING, done = FL_DONE;
        if (atomic_compare_exchange_strong(&flight_state[i], &expect, FL_BUSY) ||
            atomic_compare_exchange_strong(&flight_state[i], &done, FL_BUSY)) {
            atomic_fetch_add(&pa_ze_uncollected, 1);
            flight_end(&flights[i]);
        }
    }
    /* room for the ZE_COUNTS record pa_ze_detach emits next: the flush may have filled the ring,
     * and that record alone carries the uncollected total */
    pa_ring_t *r = pa_thread_ring();
    if (r) {
        flush_end = busy_end;
        flush_wait_room(r, 1);
    }
    pa_guard_leave();
}

/* ---- memory kinds ---- */
static uint8_t mem_kind(void *ctx, const void *ptr)
{
    ze_memory_allocation_properties_t p = { .stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES };
    ze_device_handle_t d = NULL;
    if (!ctx || pa_ze.zeMemGetAllocProperties(ctx, ptr, &p, &d) != ZE_RESULT_SUCCESS)
        return PA_ZE_MEM_PAGEABLE;
    switch (p.type) {
    case ZE_MEMORY_TYPE_HOST: return PA_ZE_MEM_HOST;
    case ZE_MEMORY_TYPE_DEVICE: return PA_ZE_MEM_DEVICE;
    case ZE_MEMORY_TYPE_SHARED: return PA_ZE_MEM_SHARED;
    default: return PA_ZE_MEM_PAGEABLE;  /* not a ze allocation: pageable host memory */
    }
}

/* ---- append hooks ---- */
static __thread uint32_t cur_cmd __attribute__((tls_model("initial-exec"))) = PA_ZE_CMD_NONE;

/* A barrier's own event, substituted by an agent event (append_begin): signalled by a second
 * barrier appended right after it (append_end). */
static __thread ze_event_handle_t cur_app_signal __attribute__((tls_model("initial-exec")));

/* Prologue of every append: a command describing the operation; substitutes an agent
 * timestamp event when the application passed none, or when it passed one to a barrier: an
 * application waits on a barrier's event and host-resets it at once, which in a re-executed
 * regular list could come before the harvest list copied its timestamps (lost). The barrier
 * then signals an agent event the application never sees, and a barrier appended after it
 * signals the application's event (append_end): same order, same waits. */
static void append_begin(int api, ze_command_list_handle_t list, ze_event_handle_t *signal,
                         uint32_t kind, ze_kernel_handle_t kernel, const ze_group_count_t *groups)
{
    cur_cmd = PA_ZE_CMD_NONE;
    cur_app_signal = NULL;
    if (PA_UNLIKELY(ops_enter())) {
        ops_closed_count(1);
        return;
    }
    pa_ze_obj_info_t *li = pa_ze_obj_get(list);
    uint32_t ci = cmd_alloc();
    if (ci == PA_ZE_CMD_NONE) {
        atomic_fetch_add(&pa_ze_table_full, 1);
        return;
    }
    pa_ze_cmd_t *c = &cmds[ci];
    memset(c, 0, sizeof *c);
    c->next = PA_ZE_CMD_NONE;
    c->fl_idx = PA_ZE_CMD_NONE;
    c->op.kind = kind;
    c->op.api = (uint32_t)api;
    c->op.device = li ? li->device : UINT32_MAX;
    c->op.engine = li ? li->engine : UINT32_MAX;
    c->op.context = li ? (uint64_t)(uintptr_t)li->context : 0;
    if (kernel) {
        pa_ze_obj_info_t *ki = pa_ze_obj_get(kernel);
        if (ki) {
            c->name = ki->name;
            for (int i = 0; i < 3; i++)
                c->op.block[i] = atomic_load_explicit(&ki->gsize[i], memory_order_relaxed);
            c->op.slm_static = ki->slm_static;
            for (int i = 0; i < PA_ZE_SLM_ARGS; i++) /* arguments are captured at append */
                c->op.slm_dynamic += atomic_load_explicit(&ki->slm_arg[i], memory_order_relaxed);
        }
        if (groups) {
            c->op.grid[0] = groups->groupCountX;
            c->op.grid[1] = groups->groupCountY;
            c->op.grid[2] = groups->groupCountZ;
        }
    }
    ze_event_handle_t app_ev = kind == PA_ZE_OP_BARRIER && li && pa_ze.zeCommandListAppendBarrier ? *signal : NULL;
    if (*signal && !app_ev) {
        /* an IPC pool's event carries no device times: no event, the op is counted uncollected */
        pa_ze_obj_info_t *ei = pa_ze_obj_get(*signal);
        c->event = ei && ei->type == PA_ZE_OBJ_NOTS_EVENT ? NULL : *signal;
    } else if (li) {
        /* the thread's ring before the guard: a first append that finds every agent event taken
         * collects (ev_take), and under the guard no ring can be made for those records (a new
         * thread's first launch lost the operation it collected: "unrecorded") */
        (void)pa_thread_ring();
        pa_guard_enter();
        ev_pool_t *p;
        uint32_t idx;
        if (ev_take(li->context, 0, &p, &idx) == 0) {
            c->pool = p;
            c->ev_index = idx;
            c->event = p->ev[idx];
            *signal = c->event;  /* the driver signals our event; the app never sees it */
            cur_app_signal = app_ev;
        } else if (app_ev) { /* no agent event: the barrier keeps the application's */
            pa_ze_obj_info_t *ei = pa_ze_obj_get(app_ev);
            c->event = ei && ei->type == PA_ZE_OBJ_NOTS_EVENT ? NULL : app_ev;
        }
        pa_guard_leave();
    }
    cur_cmd = ci;
}

static void cmd_release(uint32_t ci)
{
    if (cmds[ci].pool)
        pool_give(cmds[ci].pool, cmds[ci].ev_index);
    cmd_free(ci);
}

/* The barrier that signals the application's event after its barrier (which signals ours) could
 * not be appended, e.g. out of memory. The application waits for that event: never leave it
 * unsignalled. A signal command in the list first; failing that, from the host: on an immediate
 * list once our event (its barrier) completed, bounded; on a regular list now, which is early
 * (before its execution) but cannot hang the application. */
#define PA_ZE_APP_SIGNAL_WAIT_NS 2000000000ull
static void app_signal_fallback(void *list_h, const pa_ze_obj_info_t *li, ze_event_handle_t ours,
                                ze_event_handle_t app_ev)
{
    static _Atomic int said;
    if (pa_ze.zeCommandListAppendSignalEvent(list_h, app_ev) == ZE_RESULT_SUCCESS)
        return;
    int immediate = !li || li->immediate;
    if (immediate && ours)
        pa_ze.zeEventHostSynchronize(ours, PA_ZE_APP_SIGNAL_WAIT_NS);
    ze_result_t r = pa_ze.zeEventHostSignal(app_ev);
    if (!atomic_exchange(&said, 1))
        pa_warn("ze", "a barrier's signal event could not be appended after it (the driver refused the"
                " command); the application's event was signalled from the host%s (ze_result 0x%x)",
                immediate ? " when the barrier completed" : " at append, before the list runs", (unsigned)r);
}

static void append_end(void *list_h, int32_t result, uint64_t corr, uint64_t t0, uint64_t t1)
{
    uint32_t ci = cur_cmd;
    ze_event_handle_t app_ev = cur_app_signal;
    cur_cmd = PA_ZE_CMD_NONE;
    cur_app_signal = NULL;
    if (ci == PA_ZE_CMD_NONE)
        return;
    pa_ze_cmd_t *c = &cmds[ci];
    pa_ze_obj_info_t *li = pa_ze_obj_get(list_h);
    pa_guard_enter();
    /* the application's barrier event, after the barrier that signals ours (append_begin) */
    if (app_ev && result == ZE_RESULT_SUCCESS &&
        pa_ze.zeCommandListAppendBarrier(list_h, app_ev, 0, NULL) != ZE_RESULT_SUCCESS)
        app_signal_fallback(list_h, li, c->event, app_ev);
    if (result != ZE_RESULT_SUCCESS || (!c->event && (!li || li->immediate))) {
        if (result == ZE_RESULT_SUCCESS)
            atomic_fetch_add(&pa_ze_uncollected, 1); /* no event could be had */
        cmd_release(ci);
    } else if (!li || li->immediate) {
        flight_start(c, corr, t0, t1, list_h, UINT32_MAX, 1, NULL, NULL);
        cmd_free(ci);
    } else { /* regular list: kept until reset/destroy, one flight per execution; a command
              * without an event stays in the chain and is counted uncollected per execution */
        if (c->event && !c->pool && !atomic_load_explicit(&cmds_app_events, memory_order_relaxed))
            atomic_store_explicit(&cmds_app_events, 1, memory_order_release);
        c->op.node_id = li->ncmds++;
        c->op.graph_id = li->serial;
        c->op.append_corr = corr;  /* HGTX graph mapping: ranges open at this append */
        if (li->cmd_tail == PA_ZE_CMD_NONE)
            li->cmd_head = ci;
        else
            cmds[li->cmd_tail].next = ci;
        li->cmd_tail = ci;
    }
    pa_guard_leave();
}

/* Flights of executions of list `li` (its agent events, captured or polled directly). */
static int flight_of_list(const flight_t *f, const void *li)
{
    const pa_ze_obj_info_t *l = li;
    return f->src == l && f->src_serial == l->serial;
}

/* Regular list reset/destroy: its commands go back to the pool (their agent events too,
 * after what is still in flight on them was collected or counted). An execution still running
 * (the application did not wait for it) is waited for first, bounded (flights_settle): its
 * events could not go back to the pool otherwise, and a list destroyed so in a loop took every
 * agent event of the context, the later operations then uncollected (476 of 1,500 with
 * PROFAGENT_ZE_MAX_EVENTS=1K). */
static void list_forget(ze_command_list_handle_t list, int destroy)
{
    pa_ze_obj_info_t *li = pa_ze_obj_get(list);
    if (!li)
        return;
    if (atomic_load(&li->fl_cap) || atomic_load(&li->fl_direct))
        (void)flights_settle(flight_of_list, li, NULL);
    int queued = 0; /* a harvest list of this list may still wait on / reset its agent events */
    if (atomic_load(&li->fl_cap)) {
        collect(NULL);
        queued = atomic_load(&li->fl_cap) != 0;
    }
    for (uint32_t ci = li->cmd_head; ci != PA_ZE_CMD_NONE;) {
        uint32_t next = cmds[ci].next;
        if (cmds[ci].pool && (queued || collect(cmds[ci].event) > 0)) {
            /* still used by the device: the event is left out of the pool (a host reset would
             * make a queued harvest list wait forever, a reuse would get its device reset) */
            if (!queued)
                atomic_fetch_add(&pa_ze_uncollected, 1);
            cmd_free(ci);
        } else {
            cmd_release(ci);
        }
        ci = next;
    }
    li->cmd_head = li->cmd_tail = PA_ZE_CMD_NONE;
    li->ncmds = 0;
    if (destroy)
        pa_ze_obj_del(list);
}

/* ---- device-side capture ----
 * The agent's timestamp event e of a command in a regular list is baked into the list. When no
 * earlier execution of the list is still pending (the usual case: the application synchronizes
 * before it submits the list again) an execution is "direct": e is host-reset before the
 * submission and its flight polls e itself; nothing else is submitted. A list executed again
 * while an earlier execution is pending would overwrite that execution's timestamps, and host
 * resets are impossible while it runs. Such an execution gets "capture" lists, submitted in the
 * same ExecuteCommandLists call: for each agent event e a capture list copies e's timestamps
 * into host memory (zeCommandListAppendQueryKernelTimestamps waiting on e), then resets e on the
 * device, and only then signals a fresh agent event d per capture (the list's last commands: d
 * fired = the device is done with the whole list); the flight polls d and reads the copy.
 * - the pending direct execution gets a pre-capture, placed ahead of the application's lists:
 *   it copies what that execution signals before the new one signals e again, and its flights
 *   move from e to d;
 * - the new execution gets a "harvest" list right after the application's lists, so that the
 *   next execution finds e clear.
 * The queue runs them in that order, before the next submission. Executions are captured until
 * every flight of the list is collected; the next one is direct again. Any failure falls back to
 * polling e itself. Lifetimes: a capture list is destroyed, and d and e go back to the pool, only
 * once the device can no longer touch them (all d fired); a flight that cannot be tracked pins
 * them instead (flight_start). Why direct first: a harvest list per execution cost about eight
 * driver calls and one more job for the engine, the agent's largest share of a program that
 * executes and synchronizes in a loop (samples/multithread). */
#define PA_ZE_MAX_EXEC_LISTS 64
static __thread ze_command_list_handle_t exec_lists[PA_ZE_MAX_EXEC_LISTS];
static __thread uint64_t exec_claimed;  /* bit i: list i's captures planned by this thread */
static __thread uint64_t exec_held;     /* bit i: this thread holds list i's exec_busy until execute_end */
static __thread uint64_t exec_pre;      /* bit i: list i's pending direct flights are pre-captured (held FL_BUSY) */
static __thread uint64_t exec_skip;     /* bit i: list i's agent events unusable this execution */
static __thread uint32_t exec_npre;     /* pre-captures ahead of the application's lists */
static __thread uint32_t exec_extra;    /* capture lists added in all (pre-captures and harvest lists) */
static __thread int exec_closed;        /* this execution began after the exit flush: counted, not tracked */

/* Returns capture i's agent pool event to the pool and drops its harvest reference. */
static void cap_drop(pa_ze_cmd_t *c)
{
    if (!c->cap_pool)
        return;
    pool_give(c->cap_pool, c->cap_index);
    harvest_release(c->cap_harvest);
    c->cap_pool = NULL;
}

/* Appends the copy of c's event timestamps to harvest list h (slot: its harvest table entry);
 * the agent event that will say "copied" is taken now and signalled at the end of the list
 * (harvest_close). 0 ok, -1 failed (c->cap_pool set when the event was taken). */
static int cap_append(ze_command_list_handle_t h, void *ctx, int slot, pa_ze_cmd_t *c)
{
    uint32_t idx;
    ev_pool_t *p;
    if (ev_take(ctx, 1, &p, &idx) != 0)
        return -1;
    memset(&p->ts[idx], 0, sizeof p->ts[idx]);
    c->cap_pool = p;
    c->cap_index = idx;
    c->cap_harvest = slot;
    ze_event_handle_t e = c->event;
    return pa_ze.zeCommandListAppendQueryKernelTimestamps(h, 1, &e, &p->ts[idx], NULL, NULL, 1, &e) ==
                   ZE_RESULT_SUCCESS ? 0 : -1;
}

/* The tail of harvest list h: a barrier (every copy done), the device resets of li's events, a
 * barrier (resets done), then one barrier per capture signalling its "copied" event. So every
 * capture event fires after the last reset: when the last flight of the list is collected the
 * device has finished every command of h and h may be destroyed (harvest_release). Signalling
 * before the resets let the agent free h while the engine still ran them (use after free in
 * the driver). 0 ok, -1 failed. */
static int harvest_close(ze_command_list_handle_t h, pa_ze_obj_info_t *li)
{
    if (pa_ze.zeCommandListAppendBarrier(h, NULL, 0, NULL) != ZE_RESULT_SUCCESS)
        return -1;
    for (uint32_t ci = li->cmd_head; ci != PA_ZE_CMD_NONE; ci = cmds[ci].next)
        if (cmds[ci].cap_pool && pa_ze.zeCommandListAppendEventReset(h, cmds[ci].event) != ZE_RESULT_SUCCESS)
            return -1;
    if (pa_ze.zeCommandListAppendBarrier(h, NULL, 0, NULL) != ZE_RESULT_SUCCESS)
        return -1;
    for (uint32_t ci = li->cmd_head; ci != PA_ZE_CMD_NONE; ci = cmds[ci].next) {
        pa_ze_cmd_t *c = &cmds[ci];
        if (c->cap_pool && pa_ze.zeCommandListAppendBarrier(h, ((ev_pool_t *)c->cap_pool)->ev[c->cap_index], 0,
                                                            NULL) != ZE_RESULT_SUCCESS)
            return -1;
    }
    return pa_ze.zeCommandListClose(h) == ZE_RESULT_SUCCESS ? 0 : -1;
}

/* The harvest list of one execution of li on queue qi, closed; NULL = no capture. */
static ze_command_list_handle_t harvest_build(pa_ze_obj_info_t *li, const pa_ze_obj_info_t *qi)
{
    int ncap = 0;
    for (uint32_t ci = li->cmd_head; ci != PA_ZE_CMD_NONE; ci = cmds[ci].next) {
        cmds[ci].cap_pool = NULL;
        ncap += cmds[ci].pool != NULL;
    }
    if (!ncap || qi->device >= pa_ze_ndevs)
        return NULL;
    ze_command_list_desc_t d = { ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, NULL, qi->engine >> 16, 0 };
    ze_command_list_handle_t h;
    if (pa_ze.zeCommandListCreate(li->context, pa_ze_devs[qi->device].h, &d, &h) != ZE_RESULT_SUCCESS)
        return NULL;
    int slot = pa_ze_harvest_put(h, ncap + 1);  /* +1: held while building */
    if (slot < 0) {
        pa_ze.zeCommandListDestroy(h);
        return NULL;
    }
    int ok = 1;
    for (uint32_t ci = li->cmd_head; ci != PA_ZE_CMD_NONE && ok; ci = cmds[ci].next)
        if (cmds[ci].pool)
            ok = cap_append(h, li->context, slot, &cmds[ci]) == 0;
    ok = ok && harvest_close(h, li) == 0;
    if (!ok) { /* never submitted: its events and the list go back at once */
        pa_ze_harvest_set(slot, 1);  /* the builder's; each capture taken adds its own */
        for (uint32_t ci = li->cmd_head; ci != PA_ZE_CMD_NONE; ci = cmds[ci].next)
            if (cmds[ci].cap_pool) {
                pa_ze_harvest_ref(slot);
                cap_drop(&cmds[ci]);
            }
        harvest_release(slot);  /* the last reference: the list is destroyed */
        return NULL;
    }
    harvest_release(slot);
    return h;
}

/* Drops the pending flights that poll li's own agent events: the execution about to be
 * submitted signals those events again, so whatever they read from now on may be the new
 * execution's times (duplicates). Each one is counted uncollected. Guard held. */
static void direct_cancel(pa_ze_obj_info_t *li)
{
    collect(NULL);
    uint32_t hwm = atomic_load(&flight_hwm);
    for (uint32_t i = 0; i < hwm && atomic_load(&li->fl_direct); i++) {
        flight_t *f = &flights[i];
        int expect = FL_PENDING;
        if (atomic_load(&flight_state[i]) != FL_PENDING || f->src != li || f->tsp ||
            f->src_serial != li->serial || !atomic_compare_exchange_strong(&flight_state[i], &expect, FL_BUSY))
            continue;
        atomic_fetch_add(&pa_ze_uncollected, 1);
        flight_end(f);
    }
}

/* How long a pre-capture waits for another thread's poll of a flight it needs (a poll is
 * microseconds; the exit flush's waits are longer, and then the flight is cancelled instead). */
#define PA_ZE_CLAIM_SPINS 256

/* The pending direct flight of command c of li, claimed (FL_BUSY), or NULL: collected meanwhile,
 * its slot reused by another flight, or polled by another thread for too long. */
static flight_t *direct_claim(const pa_ze_obj_info_t *li, const pa_ze_cmd_t *c)
{
    uint32_t i = c->fl_idx;
    if (i >= flight_cap)
        return NULL;
    flight_t *f = &flights[i];
    for (int spin = 0;; spin++) {
        int expect = FL_PENDING;
        if (atomic_compare_exchange_strong(&flight_state[i], &expect, FL_BUSY)) {
            if (f->src == li && f->src_serial == li->serial && !f->tsp && f->event == c->event)
                return f;
            atomic_store_explicit(&flight_state[i], FL_PENDING, memory_order_release); /* another's */
            return NULL;
        }
        if (expect != FL_BUSY || spin >= PA_ZE_CLAIM_SPINS)
            return NULL;
        sched_yield();
    }
}

/* The pre-capture of li's pending direct execution, to run on qi ahead of li's next execution
 * (closed; NULL = none). Each flight it captures now polls its capture event and copy instead of
 * li's own event, and stays FL_BUSY (c->fl_idx) until execute_end knows whether the list was
 * submitted (precap_end). Flights it cannot capture are left to direct_cancel. */
static ze_command_list_handle_t precap_build(pa_ze_obj_info_t *li, const pa_ze_obj_info_t *qi)
{
    int ncap = 0;
    for (uint32_t ci = li->cmd_head; ci != PA_ZE_CMD_NONE; ci = cmds[ci].next) {
        pa_ze_cmd_t *c = &cmds[ci];
        flight_t *f = c->pool ? direct_claim(li, c) : NULL;
        c->cap_pool = NULL;
        c->fl_idx = f ? (uint32_t)(f - flights) : PA_ZE_CMD_NONE;
        ncap += f != NULL;
    }
    if (!ncap)
        return NULL;
    ze_command_list_desc_t d = { ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, NULL, qi->engine >> 16, 0 };
    ze_command_list_handle_t h = NULL;
    int slot = -1;
    if (qi->device < pa_ze_ndevs &&
        pa_ze.zeCommandListCreate(li->context, pa_ze_devs[qi->device].h, &d, &h) == ZE_RESULT_SUCCESS &&
        (slot = pa_ze_harvest_put(h, ncap + 1)) < 0) /* +1: held while building */
        pa_ze.zeCommandListDestroy(h);
    int ok = slot >= 0;
    for (uint32_t ci = li->cmd_head; ci != PA_ZE_CMD_NONE && ok; ci = cmds[ci].next)
        if (cmds[ci].fl_idx != PA_ZE_CMD_NONE)
            ok = cap_append(h, li->context, slot, &cmds[ci]) == 0;
    ok = ok && harvest_close(h, li) == 0;
    if (!ok && slot >= 0)
        pa_ze_harvest_set(slot, 1); /* the builder's; each capture taken adds its own (cap_drop) */
    for (uint32_t ci = li->cmd_head; ci != PA_ZE_CMD_NONE; ci = cmds[ci].next) {
        pa_ze_cmd_t *c = &cmds[ci];
        if (c->fl_idx == PA_ZE_CMD_NONE)
            continue;
        flight_t *f = &flights[c->fl_idx];
        if (!ok) { /* never submitted: its events go back, the flight is put back for direct_cancel */
            if (c->cap_pool) {
                pa_ze_harvest_ref(slot);
                cap_drop(c);
            }
            c->fl_idx = PA_ZE_CMD_NONE;
            atomic_store_explicit(fst(f), FL_PENDING, memory_order_release);
            continue;
        }
        /* counted captured before it stops counting direct: neither count reads 0 meanwhile */
        atomic_fetch_add(&li->fl_cap, 1);
        atomic_fetch_sub(&li->fl_direct, 1);
        ev_pool_t *p = c->cap_pool;
        f->event = p->ev[c->cap_index];
        f->pool = p;
        f->ev_index = c->cap_index;
        f->release_ev = 1;
        f->tsp = &p->ts[c->cap_index];
        f->harvest = slot;
        c->cap_pool = NULL;
    }
    if (slot >= 0)
        harvest_release(slot); /* the builder's reference (the last one when it failed) */
    return ok ? h : NULL;
}

/* Execution's end for a flight precap_build holds: polled from now on when the pre-capture was
 * submitted; otherwise the capture never runs, and the flight (whose own event the execution
 * did not signal either) is counted uncollected. */
static void precap_end(flight_t *f, int ok)
{
    if (ok) {
        atomic_store_explicit(fst(f), FL_PENDING, memory_order_release);
        return;
    }
    atomic_fetch_add(&pa_ze_uncollected, 1);
    flight_end(f);
}

/* Plans the collection of one execution of list li on queue qi. Direct when no earlier
 * execution is pending: li's events are host-reset, NULL returned. Otherwise a pre-capture of
 * the pending direct execution (*pre, NULL = none) and a harvest list for this one (returned,
 * its captures recorded in li's commands), or NULL with *skip = 1 when it cannot be had: queued
 * capture lists of earlier executions still wait on li's events, and a host reset would make
 * them wait forever (the application would hang); that execution's operations are then counted
 * uncollected. *held = 1: this thread holds li's exec_busy until execute_end (so that another
 * thread's execution of li cannot plan between this one's plan and its flights). */
static ze_command_list_handle_t execute_plan(pa_ze_obj_info_t *li, const pa_ze_obj_info_t *qi, int *skip,
                                             int *held, ze_command_list_handle_t *pre)
{
    *skip = *held = 0;
    *pre = NULL;
    int expect = 0;
    if (!qi || !atomic_compare_exchange_strong(&li->exec_busy, &expect, 1)) {
        *skip = 1; /* another thread is executing this list right now */
        return NULL;
    }
    *held = 1;
    if (atomic_load(&li->fl_direct) || atomic_load(&li->fl_cap))
        collect(NULL); /* what is done needs no capture */
    if (atomic_load(&li->fl_direct)) {
        *pre = precap_build(li, qi);
        if (atomic_load(&li->fl_direct))
            direct_cancel(li); /* what it could not capture */
    }
    if (atomic_load(&li->fl_cap)) {
        ze_command_list_handle_t h = harvest_build(li, qi);
        *skip = h == NULL;
        return h;
    }
    for (uint32_t ci = li->cmd_head; ci != PA_ZE_CMD_NONE; ci = cmds[ci].next)
        if (cmds[ci].pool)
            pa_ze.zeEventHostReset(cmds[ci].event); /* fresh for this execution */
    return NULL;
}

static void execute_begin(ze_command_queue_execute_command_lists_params_t *p)
{
    pa_ze_obj_info_t *qi = pa_ze_obj_get(*p->phCommandQueue);
    uint32_t n = *p->pnumCommandLists, npre = 0, nharv = 0;
    exec_claimed = exec_held = exec_pre = exec_skip = 0;
    exec_npre = exec_extra = 0;
    exec_closed = 0;
    if (!*p->pphCommandLists)
        return; /* bad call: the driver returns its error */
    if (PA_UNLIKELY(ops_enter())) {
        uint64_t n = 0; /* the exit flush began: this execution's operations are counted (ops_closed_count) */
        for (uint32_t i = 0; i < *p->pnumCommandLists; i++) {
            pa_ze_obj_info_t *li = pa_ze_obj_get((*p->pphCommandLists)[i]);
            if (li && !li->immediate && li->type == PA_ZE_OBJ_LIST)
                for (uint32_t ci = li->cmd_head; ci != PA_ZE_CMD_NONE; ci = cmds[ci].next)
                    n++;
        }
        if (n)
            ops_closed_count(n);
        exec_closed = 1;
        return;
    }
    ze_command_list_handle_t pre_lists[PA_ZE_MAX_EXEC_LISTS], harv_lists[PA_ZE_MAX_EXEC_LISTS];
    for (uint32_t i = 0; i < n; i++) {
        pa_ze_obj_info_t *li = pa_ze_obj_get((*p->pphCommandLists)[i]);
        if (!li || li->immediate || li->type != PA_ZE_OBJ_LIST)
            continue;
        int skip = 1, held = 0;
        ze_command_list_handle_t h = NULL, pre = NULL;
        if (i < 64 && n + npre + nharv + 2 <= PA_ZE_MAX_EXEC_LISTS) /* room for both lists */
            h = execute_plan(li, qi, &skip, &held, &pre);
        if (held)
            exec_held |= 1ull << i;
        if (pre) {
            exec_pre |= 1ull << i;
            pre_lists[npre++] = pre;
        }
        if (h) {
            exec_claimed |= 1ull << i;
            harv_lists[nharv++] = h;
        } else if (skip && i < 64) {
            exec_skip |= 1ull << i;
        }
    }
    if (npre + nharv) { /* the pre-captures, the application's lists, the harvest lists (same queue) */
        memcpy(exec_lists, pre_lists, npre * sizeof exec_lists[0]);
        memcpy(exec_lists + npre, *p->pphCommandLists, n * sizeof exec_lists[0]);
        memcpy(exec_lists + npre + n, harv_lists, nharv * sizeof exec_lists[0]);
        *p->pphCommandLists = exec_lists;
        *p->pnumCommandLists = n + npre + nharv;
        exec_npre = npre;
        exec_extra = npre + nharv;
    }
}

static void execute_end(ze_command_queue_execute_command_lists_params_t *p, int ok, uint64_t corr,
                        uint64_t t0, uint64_t t1)
{
    if (exec_closed) {
        exec_closed = 0;
        return;
    }
    pa_ze_obj_info_t *qi = pa_ze_obj_get(*p->phCommandQueue);
    uint32_t engine = qi ? qi->engine : UINT32_MAX;
    uint32_t napp = *p->pphCommandLists ? *p->pnumCommandLists - exec_extra : 0;
    if (ok)
        atomic_fetch_add_explicit(&pa_ze_capture_lists, exec_extra, memory_order_relaxed);
    for (uint32_t i = 0; i < napp; i++) {
        pa_ze_obj_info_t *li = pa_ze_obj_get((*p->pphCommandLists)[exec_npre + i]);
        if (!li)
            continue;
        int claimed = i < 64 && (exec_claimed >> i & 1);
        int held = i < 64 && (exec_held >> i & 1);
        int pre = i < 64 && (exec_pre >> i & 1);
        int skip = i >= 64 || (exec_skip >> i & 1);
        for (uint32_t ci = li->cmd_head; ci != PA_ZE_CMD_NONE; ci = cmds[ci].next) {
            pa_ze_cmd_t *c = &cmds[ci];
            if (held) { /* this thread's to write: the pre-captured flights, then this execution's */
                if (pre && c->fl_idx != PA_ZE_CMD_NONE)
                    precap_end(&flights[c->fl_idx], ok);
                c->fl_idx = PA_ZE_CMD_NONE;
            }
            if (claimed && c->cap_pool) {
                flight_cap_t cap = { c->cap_pool, c->cap_index, c->cap_harvest };
                if (ok)
                    flight_start(c, corr, t0, t1, *p->phCommandQueue, engine, 0, &cap, li);
                else
                    cap_drop(c);
                c->cap_pool = NULL;
            } else if (!ok) {
                continue;
            } else if (!c->event || (c->pool && skip)) {
                atomic_fetch_add(&pa_ze_uncollected, 1); /* no event, or its event unusable now */
            } else {
                uint32_t fi = flight_start(c, corr, t0, t1, *p->phCommandQueue, engine, 0, NULL, li);
                if (held && c->pool)
                    c->fl_idx = fi; /* direct: a re-execution pre-captures it from there */
            }
        }
        if (held)
            atomic_store(&li->exec_busy, 0);
    }
    exec_claimed = exec_held = exec_pre = exec_skip = 0;
    exec_npre = exec_extra = 0;
}

/* zeCommandListAppendEventReset(list, ev) on an immediate list while an operation signalling
 * the app's event ev is still running: the reset would erase its timestamps before the host
 * sees them. Queue a capture of ev's timestamps ahead of the reset (it waits for ev) and let
 * the pending flight poll the capture's agent event instead. Regular lists are not handled:
 * their recorded reset repeats on every execution (the flight then reads the next signal). */
static void capture_before_reset(ze_command_list_handle_t list, ze_event_handle_t ev)
{
    pa_ze_obj_info_t *li = pa_ze_obj_get(list);
    if (!li || !li->immediate || collect(ev) == 0)
        return;
    ev_pool_t *p;
    uint32_t idx, hwm = atomic_load(&flight_hwm);
    if (ev_take(li->context, 1, &p, &idx) != 0)
        return;
    for (uint32_t i = 0; i < hwm; i++) {
        flight_t *f = &flights[i];
        int expect = FL_PENDING;
        if (atomic_load(fst(f)) != FL_PENDING || f->event != ev || f->tsp ||
            !atomic_compare_exchange_strong(fst(f), &expect, FL_BUSY))
            continue;
        memset(&p->ts[idx], 0, sizeof p->ts[idx]);
        if (pa_ze.zeCommandListAppendQueryKernelTimestamps(list, 1, &ev, &p->ts[idx], NULL, p->ev[idx], 1,
                                                           &ev) == ZE_RESULT_SUCCESS) {
            if (f->release_ev && f->pool)
                pool_give(f->pool, f->ev_index);
            f->event = p->ev[idx];
            f->pool = p;
            f->ev_index = idx;
            f->release_ev = 1;
            f->tsp = &p->ts[idx];
            idx = UINT32_MAX;
        }
        atomic_store_explicit(fst(f), FL_PENDING, memory_order_release);
        break; /* one signal of ev is pending at a time: the next one would overwrite it */
    }
    if (idx != UINT32_MAX)
        pool_give(p, idx);
}

/* ---- context destroy ----
 * The spec wants a context's children destroyed before it: a validating driver refuses the
 * destroy while any is alive (HANDLE_OBJECT_IN_USE), a release one frees the context under
 * them. The application destroyed its own; the agent's (event pools, capture memory, harvest
 * lists) go here, in the prologue. The flights of the context are settled first
 * (flights_settle: waited for, bounded); those still running then are counted in
 * pa_ze_ctx_lost. */

/* 1 when flight f's agent objects or its operation belong to context ctx. */
static int flight_in_ctx(const flight_t *f, const void *ctx)
{
    const ev_pool_t *p = f->pool;
    return (p && p->context == ctx) || (const void *)(uintptr_t)f->op.context == ctx;
}

static void context_destroying(void *ctx)
{
    /* the application's own lists or queues still alive: its destroy is refused (or undefined);
     * the agent's events may be baked into those lists, so its pools stay */
    if (!ctx || pa_ze_obj_ctx_live(ctx))
        return;
    (void)pa_thread_ring(); /* collect's records need it; none is made under the guard */
    collect(NULL); /* what is done anywhere: the context's agent objects are about to go */
    destroy_lost_say("zeContextDestroy", flights_settle(flight_in_ctx, ctx, &pa_ze_ctx_lost));
    pa_guard_enter();
    ctx_pools_free(ctx);
    pa_guard_leave();
}

_Atomic int pa_ze_slm_seen;
static _Atomic uint32_t list_serial;  /* last list id given (Graph ID of regular lists) */

static void object_created(int api, void *params)
{
    switch (api) {
    case PA_ZE_API_KernelCreate: {
        ze_kernel_create_params_t *p = params;
        pa_ze_obj_info_t *o = pa_ze_obj_put(**p->pphKernel, PA_ZE_OBJ_KERNEL);
        if (o)
            o->module = *p->phModule; /* pa_ze_each_kernel(): PC sampling started late */
        if (o && (*p->pdesc)->pKernelName) {
            o->name = strdup((*p->pdesc)->pKernelName);
            o->name_len = o->name ? (uint16_t)strnlen(o->name, 4096) : 0;
        }
        if (o) { /* static shared local memory: what the compiled kernel declares */
            ze_kernel_properties_t kp = { .stype = ZE_STRUCTURE_TYPE_KERNEL_PROPERTIES };
            if (pa_ze.zeKernelGetProperties && pa_ze.zeKernelGetProperties(**p->pphKernel, &kp) == ZE_RESULT_SUCCESS)
                o->slm_static = kp.localMemSize;
        }
        break;
    }
    case PA_ZE_API_KernelSetArgumentValue: {
        /* a NULL value sets a local-memory argument: `size` bytes of dynamic shared local memory
         * (Level Zero's convention, e.g. SYCL local accessors); any value means not local */
        ze_kernel_set_argument_value_params_t *p = params;
        if (!*p->ppArgValue && *p->pargSize) /* before the store: later calls with a value come here */
            atomic_store_explicit(&pa_ze_slm_seen, 1, memory_order_relaxed);
        pa_ze_obj_info_t *o = pa_ze_obj_get(*p->phKernel);
        if (o && *p->pargIndex < PA_ZE_SLM_ARGS)
            atomic_store_explicit(&o->slm_arg[*p->pargIndex],
                                  *p->ppArgValue ? 0u : (uint32_t)(*p->pargSize > UINT32_MAX ? UINT32_MAX : *p->pargSize),
                                  memory_order_relaxed);
        break;
    }
    case PA_ZE_API_KernelSetGroupSize: {
        ze_kernel_set_group_size_params_t *p = params;
        pa_ze_obj_info_t *o = pa_ze_obj_get(*p->phKernel);
        if (o) {
            atomic_store(&o->gsize[0], *p->pgroupSizeX);
            atomic_store(&o->gsize[1], *p->pgroupSizeY);
            atomic_store(&o->gsize[2], *p->pgroupSizeZ);
        }
        break;
    }
    case PA_ZE_API_CommandListCreate: {
        ze_command_list_create_params_t *p = params;
        pa_ze_obj_info_t *o = pa_ze_obj_put(**p->pphCommandList, PA_ZE_OBJ_LIST);
        if (o) {
            o->context = *p->phContext;
            o->device = pa_ze_dev_index(*p->phDevice);
            o->engine = (*p->pdesc)->commandQueueGroupOrdinal << 16;
            o->serial = atomic_fetch_add(&list_serial, 1) + 1;
        }
        break;
    }
    case PA_ZE_API_CommandListCreateImmediate: {
        ze_command_list_create_immediate_params_t *p = params;
        pa_ze_obj_info_t *o = pa_ze_obj_put(**p->pphCommandList, PA_ZE_OBJ_LIST);
        if (o) {
            o->context = *p->phContext;
            o->device = pa_ze_dev_index(*p->phDevice);
            o->engine = (*p->paltdesc)->ordinal << 16 | ((*p->paltdesc)->index & 0xffff);
            o->immediate = 1;
            o->serial = atomic_fetch_add(&list_serial, 1) + 1;
        }
        break;
    }
    case PA_ZE_API_CommandQueueCreate: {
        ze_command_queue_create_params_t *p = params;
        pa_ze_obj_info_t *o = pa_ze_obj_put(**p->pphCommandQueue, PA_ZE_OBJ_QUEUE);
        if (o) {
            o->context = *p->phContext;
            o->device = pa_ze_dev_index(*p->phDevice);
            o->engine = (*p->pdesc)->ordinal << 16 | ((*p->pdesc)->index & 0xffff);
        }
        break;
    }
    case PA_ZE_API_EventPoolCreate: {
        ze_event_pool_create_params_t *p = params;
        if (*p->pdesc && ((*p->pdesc)->flags & ZE_EVENT_POOL_FLAG_IPC))
            pa_ze_obj_put(**p->pphEventPool, PA_ZE_OBJ_IPC_POOL);
        break;
    }
    case PA_ZE_API_EventPoolOpenIpcHandle: /* created IPC elsewhere: no timestamps either */
        pa_ze_obj_put(**((ze_event_pool_open_ipc_handle_params_t *)params)->pphEventPool, PA_ZE_OBJ_IPC_POOL);
        break;
    case PA_ZE_API_EventCreate: {
        ze_event_create_params_t *p = params;
        pa_ze_obj_info_t *pool = pa_ze_obj_get(*p->phEventPool);
        if (pool && pool->type == PA_ZE_OBJ_IPC_POOL)
            pa_ze_obj_put(**p->pphEvent, PA_ZE_OBJ_NOTS_EVENT);
        break;
    }
    default:
        break;
    }
}

/* Device-memory source hooks (collector/mem.h), weak: present when that source is linked. */
extern void pa_mem_on_alloc(uint64_t, uint64_t, uint32_t, void *, void *, uint64_t, void *, int32_t)
    __attribute__((weak));
extern void pa_mem_on_free(uint64_t, uint64_t, void *, void *, int32_t) __attribute__((weak));

void pa_ze_mem_hooks(int api, void *params, int32_t r, uint64_t t0, uint64_t t1)
{
    if (!pa_mem_on_alloc || !pa_mem_on_free)
        return;
    switch (api) {
    case PA_ZE_API_MemAllocDevice: {
        ze_mem_alloc_device_params_t *p = params;
        pa_mem_on_alloc(t0, t1, ZE_MEMORY_TYPE_DEVICE, *p->phContext, *p->phDevice, *p->psize,
                        r == 0 ? **p->ppptr : NULL, r);
        break;
    }
    case PA_ZE_API_MemAllocHost: {
        ze_mem_alloc_host_params_t *p = params;
        pa_mem_on_alloc(t0, t1, ZE_MEMORY_TYPE_HOST, *p->phContext, NULL, *p->psize,
                        r == 0 ? **p->ppptr : NULL, r);
        break;
    }
    case PA_ZE_API_MemAllocShared: {
        ze_mem_alloc_shared_params_t *p = params;
        pa_mem_on_alloc(t0, t1, ZE_MEMORY_TYPE_SHARED, *p->phContext, *p->phDevice, *p->psize,
                        r == 0 ? **p->ppptr : NULL, r);
        break;
    }
    case PA_ZE_API_MemFree: {
        ze_mem_free_params_t *p = params;
        pa_mem_on_free(t0, t1, *p->phContext, *p->pptr, r);
        break;
    }
    case PA_ZE_API_MemFreeExt: {
        ze_mem_free_ext_params_t *p = params;
        pa_mem_on_free(t0, t1, *p->phContext, *p->pptr, r);
        break;
    }
    default:
        break;
    }
}

/* Called only for the APIs marked OPS_PRO in ze_api.c's ops_api: a case added here needs that mark. */
void pa_ze_ops_prologue(int api, void *params, uint64_t corr, uint64_t t0)
{
    (void)corr; (void)t0;
    switch (api) {
    case PA_ZE_API_CommandListAppendLaunchKernel:
    case PA_ZE_API_CommandListAppendLaunchCooperativeKernel:
    case PA_ZE_API_CommandListAppendLaunchKernelIndirect: {
        /* the three share one parameter layout; the indirect group count lives on the device */
        ze_command_list_append_launch_kernel_params_t *p = params;
        append_begin(api, *p->phCommandList, p->phSignalEvent, PA_ZE_OP_KERNEL, *p->phKernel,
                     api == PA_ZE_API_CommandListAppendLaunchKernelIndirect ? NULL : *p->ppLaunchFuncArgs);
        break;
    }
    case PA_ZE_API_CommandListAppendLaunchMultipleKernelsIndirect: {
        ze_command_list_append_launch_multiple_kernels_indirect_params_t *p = params;
        append_begin(api, *p->phCommandList, p->phSignalEvent, PA_ZE_OP_KERNEL,
                     *p->pnumKernels && *p->pphKernels ? (*p->pphKernels)[0] : NULL, NULL);
        break;
    }
    case PA_ZE_API_CommandListAppendMemoryCopy: {
        ze_command_list_append_memory_copy_params_t *p = params;
        append_begin(api, *p->phCommandList, p->phSignalEvent, PA_ZE_OP_COPY, NULL, NULL);
        if (cur_cmd != PA_ZE_CMD_NONE) {
            pa_ze_cmd_t *c = &cmds[cur_cmd];
            void *ctx = (void *)(uintptr_t)c->op.context;
            c->op.bytes = *p->psize;
            pa_guard_enter();
            c->op.src_kind = mem_kind(ctx, *p->psrcptr);
            c->op.dst_kind = mem_kind(ctx, *p->pdstptr);
            pa_guard_leave();
        }
        break;
    }
    case PA_ZE_API_CommandListAppendMemoryCopyRegion: {
        ze_command_list_append_memory_copy_region_params_t *p = params;
        append_begin(api, *p->phCommandList, p->phSignalEvent, PA_ZE_OP_COPY, NULL, NULL);
        if (cur_cmd != PA_ZE_CMD_NONE) {
            pa_ze_cmd_t *c = &cmds[cur_cmd];
            const ze_copy_region_t *r = *p->psrcRegion;
            void *ctx = (void *)(uintptr_t)c->op.context;
            c->op.bytes = r ? (uint64_t)r->width * (r->height ? r->height : 1) * (r->depth ? r->depth : 1) : 0;
            pa_guard_enter();
            c->op.src_kind = mem_kind(ctx, *p->psrcptr);
            c->op.dst_kind = mem_kind(ctx, *p->pdstptr);
            pa_guard_leave();
        }
        break;
    }
    case PA_ZE_API_CommandListAppendMemoryCopyFromContext: {
        ze_command_list_append_memory_copy_from_context_params_t *p = params;
        append_begin(api, *p->phCommandList, p->phSignalEvent, PA_ZE_OP_COPY, NULL, NULL);
        if (cur_cmd != PA_ZE_CMD_NONE) {
            pa_ze_cmd_t *c = &cmds[cur_cmd];
            c->op.bytes = *p->psize;
            pa_guard_enter();
            c->op.src_kind = mem_kind(*p->phContextSrc, *p->psrcptr);
            c->op.dst_kind = mem_kind((void *)(uintptr_t)c->op.context, *p->pdstptr);
            pa_guard_leave();
        }
        break;
    }
    case PA_ZE_API_CommandListAppendMemoryFill: {
        ze_command_list_append_memory_fill_params_t *p = params;
        append_begin(api, *p->phCommandList, p->phSignalEvent, PA_ZE_OP_FILL, NULL, NULL);
        if (cur_cmd != PA_ZE_CMD_NONE) {
            pa_ze_cmd_t *c = &cmds[cur_cmd];
            c->op.bytes = *p->psize;
            pa_guard_enter();
            c->op.src_kind = mem_kind((void *)(uintptr_t)c->op.context, *p->pptr);
            pa_guard_leave();
        }
        break;
    }
    case PA_ZE_API_CommandListAppendBarrier: {
        ze_command_list_append_barrier_params_t *p = params;
        append_begin(api, *p->phCommandList, p->phSignalEvent, PA_ZE_OP_BARRIER, NULL, NULL);
        break;
    }
    case PA_ZE_API_CommandListAppendMemoryRangesBarrier: {
        ze_command_list_append_memory_ranges_barrier_params_t *p = params;
        append_begin(api, *p->phCommandList, p->phSignalEvent, PA_ZE_OP_BARRIER, NULL, NULL);
        break;
    }
    case PA_ZE_API_CommandQueueExecuteCommandLists:
        pa_guard_enter();
        execute_begin(params);
        pa_guard_leave();
        break;
    case PA_ZE_API_EventPoolCreate: {
        /* app pools get kernel timestamps so their events carry device times; not IPC pools:
         * the spec forbids combining KERNEL_TIMESTAMP with IPC (object_created marks them) */
        static __thread ze_event_pool_desc_t copy;
        ze_event_pool_create_params_t *p = params;
        if (*p->pdesc && !((*p->pdesc)->flags & (ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP | ZE_EVENT_POOL_FLAG_IPC))) {
            copy = **p->pdesc;
            copy.flags |= ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP;
            *p->pdesc = &copy;
        }
        break;
    }
    case PA_ZE_API_EventHostReset:
        collect(*((ze_event_host_reset_params_t *)params)->phEvent);
        break;
    case PA_ZE_API_EventDestroy:
        app_events_destroying(NULL, *((ze_event_destroy_params_t *)params)->phEvent);
        pa_guard_enter();
        pa_ze_obj_del(*((ze_event_destroy_params_t *)params)->phEvent);
        pa_guard_leave();
        break;
    case PA_ZE_API_EventPoolDestroy:
        app_events_destroying(*((ze_event_pool_destroy_params_t *)params)->phEventPool, NULL);
        pa_guard_enter();
        pa_ze_obj_del(*((ze_event_pool_destroy_params_t *)params)->phEventPool);
        pa_guard_leave();
        break;
    case PA_ZE_API_EventPoolCloseIpcHandle:
        pa_guard_enter();
        pa_ze_obj_del(*((ze_event_pool_close_ipc_handle_params_t *)params)->phEventPool);
        pa_guard_leave();
        break;
    case PA_ZE_API_CommandListAppendEventReset: {
        ze_command_list_append_event_reset_params_t *p = params;
        pa_guard_enter();
        capture_before_reset(*p->phCommandList, *p->phEvent);
        pa_guard_leave();
        break;
    }
    case PA_ZE_API_CommandListReset:
        pa_guard_enter();
        list_forget(*((ze_command_list_reset_params_t *)params)->phCommandList, 0);
        pa_guard_leave();
        break;
    case PA_ZE_API_CommandListDestroy:
        pa_guard_enter();
        list_forget(*((ze_command_list_destroy_params_t *)params)->phCommandList, 1);
        pa_guard_leave();
        break;
    case PA_ZE_API_KernelDestroy:
        pa_ze_obj_del(*((ze_kernel_destroy_params_t *)params)->phKernel);
        break;
    case PA_ZE_API_CommandQueueDestroy: /* forgotten: a live queue keeps the context's pools (context_destroying) */
        pa_guard_enter();
        pa_ze_obj_del(*((ze_command_queue_destroy_params_t *)params)->phCommandQueue);
        pa_guard_leave();
        break;
    case PA_ZE_API_ContextDestroy:
        context_destroying(*((ze_context_destroy_params_t *)params)->phContext);
        break;
    default:
        break;
    }
}

void pa_ze_ops_epilogue(int api, void *params, int32_t result, uint64_t corr, uint64_t t0, uint64_t t1)
{
    switch (api) {
    case PA_ZE_API_CommandListAppendLaunchKernel:
    case PA_ZE_API_CommandListAppendLaunchCooperativeKernel:
    case PA_ZE_API_CommandListAppendLaunchKernelIndirect:
    case PA_ZE_API_CommandListAppendLaunchMultipleKernelsIndirect:
    case PA_ZE_API_CommandListAppendMemoryCopy:
    case PA_ZE_API_CommandListAppendMemoryCopyRegion:
    case PA_ZE_API_CommandListAppendMemoryCopyFromContext:
    case PA_ZE_API_CommandListAppendMemoryFill:
    case PA_ZE_API_CommandListAppendBarrier: case PA_ZE_API_CommandListAppendMemoryRangesBarrier:
        /* every append params struct starts with the list handle pointer */
        append_end(**(ze_command_list_handle_t **)params, result, corr, t0, t1);
        ops_leave();
        break;
    case PA_ZE_API_CommandQueueExecuteCommandLists:
        pa_guard_enter();
        execute_end(params, result == ZE_RESULT_SUCCESS, corr, t0, t1);
        pa_guard_leave();
        ops_leave();
        break;
    case PA_ZE_API_CommandQueueSynchronize: case PA_ZE_API_EventHostSynchronize:
    case PA_ZE_API_FenceHostSynchronize:
    case PA_ZE_API_EventQueryStatus:
        collect(NULL);
        break;
    default:
        if (result == ZE_RESULT_SUCCESS) {
            pa_guard_enter();
            object_created(api, params);
            pa_guard_leave();
        }
        pa_ze_mem_hooks(api, params, result, t0, t1);
        break;
    }
}
