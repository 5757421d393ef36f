/* collector.h - interface of the collector: configuration, per-thread state, record emission. */
#ifndef PA_COLLECTOR_H
#define PA_COLLECTOR_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "../common/pa_clock.h"
#include "../common/pa_export.h"
#include "../common/pa_record.h"
#include "config.h"
#include "../common/pa_ring.h"

/* On an extern declaration: the definition is in this library. -fvisibility=hidden covers only
 * definitions, so without it every read of such a variable goes through its GOT address (two
 * instructions): for the variables that the per-event paths read. */
#define PA_HIDDEN __attribute__((visibility("hidden")))

/*
 * How a source (hgtx, osrt, ze, mem) records an event on the calling application thread:
 *
 *     if (pa_agent_collecting(PA_SRC_ZE)) {
 *         pa_record_t rec = { .kind = PA_REC_..., .t0 = t0, .t1 = t1 };
 *         rec.u.raw[0] = ...;
 *         pa_emit(&rec, payload, len);          // copies header + payload into this thread's ring
 *     }
 *
 * pa_emit() creates and registers the thread's ring on its first event (slow path, may
 * malloc), then costs a reserve, two copies and a release store: no lock, no malloc, no
 * syscall. For records built in place use pa_thread_ring() + pa_ring_reserve/commit directly
 * (set nslots, len and tid = pa_tls.tid yourself).
 *
 * Code of the agent that runs on an application thread and may call intercepted functions
 * (malloc-heavy setup, dlsym, Level Zero calls made by the agent itself) brackets itself with
 * pa_guard_enter()/pa_guard_leave() so the OSRT/ze wrappers don't record it. Agent-owned
 * threads call pa_thread_mark_agent() first thing: nothing is ever recorded on them.
 */

/* HGTX levels are per (thread, domain), as in NVTX: domain ids 0..PA_HGTX_DEPTH_SLOTS-2 have a
 * depth counter each; every higher domain id shares the last one (documented in hgtx.h). */
#define PA_HGTX_DEPTH_SLOTS 16

/* Per-thread state, initial-exec TLS (the agent is preloaded, so static TLS is available). The
 * fields every ze call and HGTX push/pop touch come first, in the struct's first 64-byte line
 * (the struct is line-aligned): one per-thread cache line per event besides the ring slot. */
typedef struct pa_tls {
    _Alignas(64) pa_ring_t *ring;  /* NULL until the first event, and again after retirement */
    uint32_t tid;     /* gettid(), cached at the first event */
    int guard;        /* > 0 while agent code runs on this thread: record nothing */
    int agent;        /* 1 on the agent's own threads (aggregator): record nothing, ever */
    int emitting;     /* PA_EMIT_BUSY inside a write to the ring (a signal handler recording now
                         stashes its records: PA_EMIT_STASHED, moved in when the write ends) */
    uint32_t hgtx_open; /* HGTX pushes open on this thread (all domains): one ring slot is kept
                           free for each one's pop (pa_emit), so a kept push never loses its pop */
    int state;        /* PA_THREAD_NEW / ACTIVE / RETIRED / NORING */
    uint64_t ze_corr_next, ze_corr_end; /* this thread's block of ze correlation ids (ze_api.c) */
    uint64_t ze_corr;                   /* correlation id of the thread's current ze call */
    int depth[PA_HGTX_DEPTH_SLOTS]; /* HGTX push/pop depth per domain (collector/hgtx.c) */
    int itt_depth[PA_HGTX_DEPTH_SLOTS];      /* ITT task nesting per domain slot (collector/itt.c) */
    uint64_t itt_skipped[PA_HGTX_DEPTH_SLOTS]; /* bit L: the ITT task at depth L was not recorded */
    uint64_t itt_dom_seen[4];                /* bit D: this ring carries domain D's name record */
    uint32_t hgtx_hc_seq; /* HGTX pushes/pops recorded with host counters on (hgtx.c: a handler's
                             record between a push's counter read and its write is seen) */
    uint32_t emit_src;    /* 0: a full ring's wait is counted under the record kind's source;
                             else the source that makes the record (PA_RING_SRC_ITT for the ITT
                             ranges hgtx.c writes) or PA_EMIT_NOWAIT (pa_emit_full) */
} pa_tls_t;
_Static_assert(offsetof(pa_tls_t, ze_corr) + 8 <= 64, "pa_tls_t hot fields in one line");

enum { PA_THREAD_NEW = 0, PA_THREAD_ACTIVE = 1, PA_THREAD_RETIRED = 2, PA_THREAD_NORING = 3 };

extern __thread pa_tls_t pa_tls __attribute__((tls_model("initial-exec")));

/* Sources currently recording (PA_SRC_* mask): 0 before the constructor finished, when
 * PROFAGENT_ENABLE=0, in a fork child, and after the exit path started. */
extern PA_HIDDEN _Atomic uint32_t pa_sources;

/* Events that could not get a ring during the session (allocation failed, an agent thread, a
 * signal handler that interrupted pa_emit): losses. Ring-full drops are counted per ring. */
extern _Atomic uint64_t pa_unrecorded;
/* Events of threads that had no ring once the exit path began (no new rings then): produced
 * after the session's end, like the records a ring gets after its exit-time cut-off ("late"). */
extern _Atomic uint64_t pa_late_no_ring;
extern _Atomic int pa_thread_no_new_rings; /* set when the exit path starts */
/* Set when the exit path fixes the session's end (META end_mono_ns), before the last drain: a
 * thread's exit or an OS call ending from then on ends after the session and is not recorded
 * (it would only be counted "late", as if data were lost). */
extern _Atomic int pa_session_ended;

/*! pa_agent_collecting() : nonzero when source `src` (PA_SRC_*) records on this thread now.
 *  A relaxed load and two TLS reads. */
static inline int pa_agent_collecting(uint32_t src)
{
    return PA_LIKELY(atomic_load_explicit(&pa_sources, memory_order_relaxed) & src) &&
           PA_LIKELY((pa_tls.guard | pa_tls.agent) == 0);
}

/*! pa_guard_enter() / pa_guard_leave() : brackets agent code on an application thread. */
static inline void pa_guard_enter(void) { pa_tls.guard++; }
static inline void pa_guard_leave(void) { pa_tls.guard--; }

/*! pa_thread_mark_agent() : called first thing by every thread the agent creates; that
 *  thread is never recorded, and counted in pa_agent_threads (the aggregator calls it
 *  through a weak reference). */
void pa_thread_mark_agent(void);
extern _Atomic int pa_agent_threads; /* agent threads alive now (marked, not yet ended) */
/*! pa_thread_is_agent_tid() : 1 when `tid` (gettid) is one of the agent's own threads alive now
 *  (marked by pa_thread_mark_agent, not yet ended), else 0. Lock-free, async-signal-safe. */
int pa_thread_is_agent_tid(uint32_t tid);
/*! pa_thread_agent_tids_complete() : 1 while every agent thread is known to
 *  pa_thread_is_agent_tid() (0 for good once more than 256 lived at the same time). */
int pa_thread_agent_tids_complete(void);

/*! pa_thread_ring_slow() : first event of a thread (or first after retirement): creates and
 *  registers the ring, records the thread name. NULL when no ring can be had (counted in
 *  pa_unrecorded, or pa_late_no_ring once the exit path began, by pa_emit). */
pa_ring_t *pa_thread_ring_slow(void);

/*! pa_thread_ring() : the calling thread's ring, created on first use; NULL when none. */
static inline pa_ring_t *pa_thread_ring(void)
{
    pa_ring_t *r = pa_tls.ring;
    return PA_LIKELY(r != NULL) ? r : pa_thread_ring_slow();
}

/*! pa_emit_max_payload() : largest payload (bytes) pa_emit() stores whole in ring `r`: half
 *  the ring minus the header (and what 16-bit nslots can count), so a big record still fits
 *  while the ring holds other data. */
static inline uint32_t pa_emit_max_payload(const pa_ring_t *r)
{
    uint64_t slots = (r->mask + 1) / 2 - 1;
    if (slots > UINT16_MAX - 1u) /* nslots is 16 bits */
        slots = UINT16_MAX - 1u;
    return (uint32_t)(slots * PA_SLOT_SIZE);
}

/* The exit path began and this thread has no ring: late, not lost (see pa_late_no_ring). */
static inline void pa_emit_unrecorded(const pa_ring_t *r)
{
    if (!r && atomic_load_explicit(&pa_thread_no_new_rings, memory_order_relaxed))
        atomic_fetch_add_explicit(&pa_late_no_ring, 1, memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&pa_unrecorded, 1, memory_order_relaxed);
}

/* Ring slots every record but an HGTX range end leaves free, besides the pops' room (hgtx_open):
 * the end of a kept start finds room while the ring stays full for up to this many ends. Ends
 * may come on another thread, so no per-range room can be promised as for pops; an end still
 * refused is counted (pa_hgtx_ends_lost) and its range is reported as cut by a drop. A
 * constant, so that it folds into the reserve's own constant (no instruction on the hot path). */
#define PA_KEEP_ENDS 8

/* HGTX start/end accounting of the collector (collector/hgtx.c; read by the aggregator at exit,
 * weak here: a test linking one collector file has none). */
extern _Atomic uint64_t pa_hgtx_starts_lost __attribute__((weak)); /* START records lost after
                                             their id was handed out (stash refused, ITT keys) */
extern _Atomic uint64_t pa_hgtx_ends_lost __attribute__((weak));   /* END records refused */

/* A stashed record the ring refused when it was moved in (counted as a drop by the ring): a
 * start or an end is also counted as a range cut by a drop. */
static inline __attribute__((cold)) void pa_stash_refused(const pa_record_t *st)
{
    _Atomic uint64_t *c = st->kind == PA_REC_HGTX_START ? &pa_hgtx_starts_lost
                          : st->kind == PA_REC_HGTX_END ? &pa_hgtx_ends_lost : NULL;
    if (c)
        atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* pa_tls.emitting: a write to the ring is under way on this thread / a signal handler that
 * interrupted it left records in the ring's stash, to move in when it ends. */
#define PA_EMIT_BUSY 1
#define PA_EMIT_STASHED 2

/* Why a stash: a signal handler that records while the code it interrupted is between the
 * reserve and the commit of a ring write cannot write the ring (the slot at the tail is being
 * filled). It writes its one-slot records to the ring's stash instead (pa_stash_begin), and the
 * interrupted write, once committed, moves them in after its own record: the ring keeps the
 * order in which the records' times were taken (hgtx.c takes its time inside the write). The
 * slow paths are header functions so that every user of pa_emit links: inline, so that a
 * translation unit that never calls them does not emit them (an unoptimized build would,
 * naming pa_tls), and cold, so that the compiler keeps them out of the fast path. */

/*! pa_stash_move() : (inside a write to ring `r`) moves the stashed records up to the count
 *  `upto` (a stash_w read earlier) into the ring, in order; one refused by a full ring counts
 *  as a drop. */
static inline __attribute__((cold)) void pa_stash_move(pa_ring_t *r, uint32_t upto)
{
    while (r->stash_r != upto) {
        const pa_record_t *st = &r->stash[r->stash_r % PA_RING_STASH];
        /* as pa_emit(): the pops of open pushes keep their room, and the ends theirs but for an
         * end (a refusal is counted as a drop) */
        uint32_t keep = pa_tls.hgtx_open + (st->kind == PA_REC_HGTX_END ? 0 : PA_KEEP_ENDS);
        pa_record_t *slot = pa_ring_reserve_keep(r, 1, keep);
        if (slot) {
            memcpy(slot, st, sizeof *slot);
            pa_ring_commit(r, 1);
        } else {
            pa_stash_refused(st);
        }
        atomic_signal_fence(memory_order_seq_cst);
        r->stash_r++; /* after the copy: a handler stashing meanwhile leaves this slot alone */
        atomic_signal_fence(memory_order_seq_cst);
    }
}

/* PA_EMIT_BUSY cleared by one instruction: a handler that stashes at any instant either ran
 * before (PA_EMIT_STASHED stays set) or finds emitting clear (it writes the ring itself). */
static inline __attribute__((always_inline)) void pa_emit_busy_dec(void)
{
#if defined(__x86_64__)
    __asm__ volatile("subl $1, %0" : "+m"(pa_tls.emitting) : : "cc", "memory");
#else
    atomic_signal_fence(memory_order_seq_cst);
    pa_tls.emitting -= PA_EMIT_BUSY; /* a load and a store: a handler between them is not seen */
    atomic_signal_fence(memory_order_seq_cst);
#endif
}

/*! pa_stash_flush() : moves the stashed records into the ring, in order (the write that a
 *  signal handler interrupted has ended: PA_EMIT_STASHED set, PA_EMIT_BUSY clear), and clears
 *  pa_tls.emitting, also when more handlers stash meanwhile. */
static inline __attribute__((cold)) void pa_stash_flush(void)
{
    pa_ring_t *r = pa_tls.ring;
    for (;;) {
        /* busy again while moving: a handler now stashes behind what is being moved */
        pa_tls.emitting = PA_EMIT_BUSY | PA_EMIT_STASHED;
        atomic_signal_fence(memory_order_seq_cst);
        if (r)
            pa_stash_move(r, r->stash_w);
        atomic_signal_fence(memory_order_seq_cst);
        /* a handler that stashes from here on sets PA_EMIT_STASHED again and leaves stash_w
         * ahead: either is seen below */
        pa_tls.emitting = PA_EMIT_BUSY;
        atomic_signal_fence(memory_order_seq_cst);
        if (r && r->stash_r != r->stash_w)
            continue;
        pa_emit_busy_dec();
        if (!pa_tls.emitting)
            return;
    }
}

/*! pa_emit_busy_clear() : ends a write to the ring: PA_EMIT_BUSY cleared by one instruction
 *  (a signal handler that stashes meanwhile sets PA_EMIT_STASHED: a plain store of 0 could
 *  erase it), then the records stashed during the write are moved in. */
static inline __attribute__((always_inline)) void pa_emit_busy_clear(void)
{
    pa_emit_busy_dec();
    if (PA_UNLIKELY(pa_tls.emitting))
        pa_stash_flush();
}

/*! pa_stash_begin() : (signal handler context: pa_tls.emitting was set) a slot of the stash
 *  of ring `r` to fill completely (nslots 1, len 0, tid included), then pa_stash_end(); NULL
 *  when the stash is full or another handler is writing it (counted in pa_unrecorded). */
static inline pa_record_t *pa_stash_begin(pa_ring_t *r)
{
    if (r->stashing || r->stash_w - r->stash_r >= PA_RING_STASH) {
        atomic_fetch_add_explicit(&pa_unrecorded, 1, memory_order_relaxed);
        return NULL;
    }
    r->stashing = 1;
    atomic_signal_fence(memory_order_seq_cst);
    return &r->stash[r->stash_w % PA_RING_STASH];
}

/*! pa_stash_end() : publishes the slot pa_stash_begin() returned to the interrupted write. */
static inline void pa_stash_end(pa_ring_t *r)
{
    atomic_signal_fence(memory_order_seq_cst);
    r->stash_w++;
    pa_tls.emitting |= PA_EMIT_STASHED;
    atomic_signal_fence(memory_order_seq_cst);
    r->stashing = 0;
}

/* pa_tls.emit_src: the record must not wait for room (its thread holds a lock that the
 * aggregator could need, e.g. the mutex an OSRT lock record reports). */
#define PA_EMIT_NOWAIT 0xffu

/*! pa_emit_full() : (inside a write to ring `r`, after pa_ring_reserve_keep(r, ns, keep) refused
 *  and counted a drop) waits for room when PROFAGENT_RING_FULL=wait and the thread may wait
 *  (pa_ring_full_wait: bounded, short sleeps; never on an agent thread, in agent code, once the
 *  exit began, on a retiring thread, for a PA_EMIT_NOWAIT record nor in a signal handler), then
 *  un-counts the drop and returns the reserved slot; NULL when the record stays dropped. The
 *  wait is counted under pa_tls.emit_src, else the source of `kind` (pa_ring_src_of_kind).
 *  Cold: called only on a refused reserve. Weak: a unit test linking a few collector files has
 *  none (its full rings drop). */
pa_record_t *pa_emit_full(pa_ring_t *r, uint32_t ns, uint32_t keep, unsigned kind) __attribute__((weak));

/*! pa_emit_keep() : pa_emit() leaving `keep_ends` slots free besides the pops' room:
 *  PA_KEEP_ENDS for every record but an HGTX range end (0: it may use that room). */
static inline __attribute__((always_inline)) int pa_emit_keep(const pa_record_t *rec, const void *payload,
                                                              uint32_t len, uint32_t keep_ends)
{
    pa_ring_t *r = pa_thread_ring();
    if (PA_UNLIKELY(r == NULL || pa_tls.emitting)) { /* no ring, or re-entered from a signal handler */
        pa_record_t *st = r && !len ? pa_stash_begin(r) : NULL; /* one slot: stashed */
        if (st) {
            memcpy(st, rec, sizeof *st);
            st->nslots = 1;
            st->len = 0;
            st->tid = pa_tls.tid;
            pa_stash_end(r);
            return 0;
        }
        if (!r || len)
            pa_emit_unrecorded(r);
        return -1;
    }
    pa_tls.emitting = PA_EMIT_BUSY;
    atomic_signal_fence(memory_order_seq_cst); /* compiler barrier: the flag is set before we write */
    uint32_t flags = rec->flags;
    if (PA_UNLIKELY(len > pa_emit_max_payload(r))) {
        len = pa_emit_max_payload(r);
        flags |= PA_RF_TRUNCATED;
    }
    uint32_t ns = pa_record_slots(len);
    /* room for the pops of the open pushes stays free (capped at half the ring): a record that
     * would take it is dropped instead, so a pop is never lost while its push was kept; and
     * keep_ends slots for range ends (PA_KEEP_ENDS) */
    pa_record_t *slot = pa_ring_reserve_keep(r, ns, pa_tls.hgtx_open + keep_ends);
    if (PA_UNLIKELY(slot == NULL) &&
        (!&pa_emit_full || (slot = pa_emit_full(r, ns, pa_tls.hgtx_open + keep_ends, rec->kind)) == NULL)) {
        pa_emit_busy_clear();
        return -1;
    }
    memcpy(slot, rec, sizeof *slot);
    slot->nslots = (uint16_t)ns;
    slot->len = len;
    slot->tid = pa_tls.tid;
    slot->flags = flags;
    if (len)
        pa_ring_write_payload(r, payload, len);
    pa_ring_commit(r, ns);
    pa_emit_busy_clear();
    return 0;
}

/*! pa_emit() : appends *rec (caller sets kind, flags, t0, t1, u) plus `len` payload bytes to
 *  the calling thread's ring; nslots, len and tid are filled here. A payload longer than
 *  pa_emit_max_payload() is cut to it and flagged PA_RF_TRUNCATED. Returns 0, or -1 when the
 *  record was not stored (ring full: counted in the ring's drops; no ring: pa_unrecorded). A
 *  signal handler that interrupted a write to the ring on this thread has its one-slot records
 *  stashed (moved in when that write ends) and loses those with a payload (pa_unrecorded).
 *  Async-signal-safe. */
static inline int pa_emit(const pa_record_t *rec, const void *payload, uint32_t len)
{
    return pa_emit_keep(rec, payload, len, PA_KEEP_ENDS);
}

/*! pa_emit1_begin() : the header slot of a one-slot record of `kind` (no payload) to fill in
 *  place, or NULL when it cannot be stored (a full ring waits as pa_emit() does, a drop is counted
 *  as pa_emit() counts it). The caller writes every field
 *  (kind, nslots = 1, len = 0, tid = pa_tls.tid, flags, t0, t1, u) straight into the ring, then
 *  calls pa_emit1_end(): no copy of a record built on the stack (whose 2- and 4-byte field
 *  stores, read back as 16-byte loads, stall store forwarding). Async-signal-safe. */
static inline __attribute__((always_inline)) pa_record_t *pa_emit1_begin(unsigned kind)
{
    pa_ring_t *r = pa_thread_ring();
    if (PA_UNLIKELY(r == NULL || pa_tls.emitting)) {
        pa_emit_unrecorded(r);
        return NULL;
    }
    pa_tls.emitting = PA_EMIT_BUSY;
    atomic_signal_fence(memory_order_seq_cst);
    /* as pa_emit(): the pops of open pushes and the range ends keep their room (capped at half
     * the ring by the reserve itself) */
    pa_record_t *slot = pa_ring_reserve_keep(r, 1, pa_tls.hgtx_open + PA_KEEP_ENDS);
    if (PA_UNLIKELY(slot == NULL) &&
        (!&pa_emit_full || (slot = pa_emit_full(r, 1, pa_tls.hgtx_open + PA_KEEP_ENDS, kind)) == NULL))
        pa_emit_busy_clear();
    return slot;
}

/*! pa_emit1_end() : publishes the record pa_emit1_begin() returned. */
static inline __attribute__((always_inline)) void pa_emit1_end(void)
{
    pa_ring_commit(pa_tls.ring, 1);
    pa_emit_busy_clear();
}

/*! pa_emit1_head() : the first 16 bytes of a one-slot header as two 8-byte words. */
static inline void pa_emit1_head(pa_record_t *s, uint16_t kind, uint32_t flags)
{
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "pa_emit1_head() assumes a little-endian layout"
#endif
    uint64_t w0 = (uint64_t)kind | (uint64_t)1 << 16; /* nslots 1, len 0 */
    uint64_t w1 = (uint64_t)pa_tls.tid | (uint64_t)flags << 32;
    _Static_assert(offsetof(pa_record_t, len) == 4 && offsetof(pa_record_t, tid) == 8 &&
                   offsetof(pa_record_t, flags) == 12, "pa_record_t header layout");
    memcpy((char *)s, &w0, 8);
    memcpy((char *)s + 8, &w1, 8);
}

/* Host counters (hwcounters/hostctr.h): nonzero while on; then every HGTX push/pop/start/end
 * calls pa_hc_sample(t0) with the record's t0 just before emitting it. */
extern PA_HIDDEN int pa_hc_active;
void pa_hc_sample(uint64_t t0);
/* HGTX emission for sources mapped onto HGTX ranges (hgtx.c; used by collector/itt.c). The
 * caller checked pa_agent_collecting(); `dom` is an id pa_hgtx_domain_new() returned (0: the
 * default domain); `len` name bytes (cut at HGTX_MESSAGE_MAX); t0 in ns, 0 = now. Start/end
 * ids must not collide with hgtxRangeStartA's (which count up from 1). */
int pa_hgtx_push_ex(uint32_t dom, const char *name, size_t len, uint64_t t0);
int pa_hgtx_pop_ex(uint32_t dom, uint64_t t0);
void pa_hgtx_start_ex(uint32_t dom, uint64_t id, const char *name, size_t len, uint64_t t0);
void pa_hgtx_end_ex(uint32_t dom, uint64_t id, uint64_t t0);
void pa_hgtx_mark_ex(uint32_t dom, const char *name, size_t len, uint64_t t0);
/*! pa_hgtx_domain_new() : a new HGTX domain id named `name` (its record is emitted now). */
uint32_t pa_hgtx_domain_new(const char *name);
/*! pa_hgtx_domain_name() : (re)emits the name record of domain `id` on this thread's ring. */
void pa_hgtx_domain_name(uint32_t id, const char *name);
/*! pa_hgtx_domain_lookup() : the name (`*len` bytes, not recorded through a ring) of domain `id`
 *  as created; NULL when unknown (id beyond the table, or no memory). For the aggregator, when
 *  a record using the domain is drained before the creator's DOMAIN record. */
const char *pa_hgtx_domain_lookup(uint32_t id, size_t *len);

/* Lifecycle internals (thread.c; driven by session/). */
/* Called on an application thread's first event, right after its ring was registered, with
 * the guard raised: the session sets it to run the sources' thread_attach() hooks
 * (common/pa_source.h). NULL when no source has one. */
extern void (*pa_thread_on_attach)(void);
/* Called at an application thread's exit, before its ring is retired, with the guard raised:
 * the sources' thread_detach() hooks. NULL when no source has one. */
extern void (*pa_thread_on_detach)(void);
/* Called, with the guard raised, each time a ring is registered (a thread's first event, a
 * reader's ring): the session starts its threads at the first one. NULL without a session. */
extern void (*pa_thread_on_ring)(void);
/*! pa_thread_ring_added() : a ring was registered: runs pa_thread_on_ring (the session's threads
 *  start on the first). Guard raised by the caller. */
void pa_thread_ring_added(void);
/*! pa_thread_init() : creates the thread-exit key (constructor: a low key index never needs
 *  glibc's calloc in pthread_setspecific). */
void pa_thread_init(void);
/*! pa_thread_after_fork_child() : drops the parent's ring from the forking thread's TLS. */
void pa_thread_after_fork_child(void);

/* Fallbacks (osrt_raw.c) while dlsym has not returned the real function: async-signal-safe
 * (trylock, yield, clock_gettime), no allocation. */
#include <pthread.h>
/*! pa_osrt_raw_mutex_lock() : pthread_mutex_lock by trylock + yield; EDEADLK for an
 *  error-checking mutex the caller already owns (glibc), trylock's other errors as is. */
int pa_osrt_raw_mutex_lock(pthread_mutex_t *m);
/*! pa_osrt_raw_cond_wait() : one spurious wake-up: unlock, yield, relock `m`; returns 0, the
 *  unlock/lock error (EPERM, EDEADLK), EINVAL for a bad abstime->tv_nsec, or ETIMEDOUT once
 *  `abstime` (NULL: none) passed on the condition's clock (glibc condattr clock, else REALTIME;
 *  `c` NULL: an old-ABI condition whose layout is not read, REALTIME). */
int pa_osrt_raw_cond_wait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abstime);

#endif
