/* pa_ring.h - per-thread single-producer / single-consumer record rings and their registry. */
#ifndef PA_RING_H
#define PA_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../common/pa_clock.h"
#include "../common/pa_record.h"

/*
 * One ring per application thread. The owning thread is the only producer;
 * the aggregator thread is the only consumer. Positions are free-running
 * slot counters (never wrap in practice: 2^64 slots); index = pos & mask.
 *
 * Producer path (pa_ring_reserve / pa_ring_write_payload / pa_ring_commit):
 * no locks, no malloc, no syscalls; one acquire load of `head` only when the
 * cached copy says the ring looks full. A record that does not fit is not
 * written: `drops` is incremented (a relaxed add on a counter only this
 * thread writes) and reserve returns NULL.
 */
/* Records a ring holds for a signal handler while the interrupted code writes to the ring
 * (one-slot records; a handler making more before that write ends loses the excess, counted).
 * Why 256: a signal pending when a slow handler returns runs it again before the interrupted
 * write moves on, so one write can collect the records of a chain of handler runs (16 slots
 * overflowed at 5 chained runs of 4 records). Free on the hot path (only a handler and the
 * write it interrupted touch the stash) and in memory: the stash lies in the ring's anonymous
 * mapping, whose pages past the header's first stay untouched until a handler stashes there. */
#define PA_RING_STASH 256

typedef struct pa_ring {
    _Alignas(64) _Atomic uint64_t tail;   /* producer: next slot to write (published with release) */
    uint64_t cached_head;                 /* producer-local copy of head */
    _Atomic uint64_t drops;               /* records refused because the ring was full */
    _Atomic uint64_t records;             /* records committed */
    /* producer only: the stash (collector.h pa_stash_begin): records of a signal handler that
     * interrupted a write to this ring, moved into it, in order, when that write ends */
    uint32_t stash_w, stash_r;            /* free-running counts of records stashed / moved */
    int stashing;                         /* 1 while a stash slot is being written */
    uint64_t sigmask;                     /* producer only: signals 1-64 its thread blocked when the
                                           * ring was made (pa_ring_full_wait: more blocked now = a
                                           * signal handler runs) */
    uint64_t nowait_until;                /* producer only: pa_clock_ns() before which a full ring
                                           * is not waited for (a wait was given up) */
    _Alignas(64) _Atomic uint64_t head;   /* consumer: next slot to read (published with release) */
    _Alignas(64) uint64_t mask;           /* nslots - 1 */
    pa_record_t *slots;
    uint32_t tid;                         /* owning thread (gettid) */
    _Atomic int retired;                  /* set by the owner at thread exit; ring freed by the consumer */
    struct pa_ring *next;                 /* registry list */
    uint64_t cut;                         /* consumer only: exit-time cut-off position (0: none yet) */
    char name[16];                        /* thread name at registration */
    pa_record_t stash[PA_RING_STASH];     /* producer only: see stash_w */
} pa_ring_t;

/*! pa_ring_create() : allocates a ring of `nslots` slots (rounded up to a power of two,
 *  at least 64). Returns NULL on allocation failure. Slow path (first event of a thread). */
pa_ring_t *pa_ring_create(uint32_t nslots, uint32_t tid);

/*! pa_ring_destroy() : frees a ring; consumer side only, after it was drained and unlinked. */
void pa_ring_destroy(pa_ring_t *r);

/*! pa_ring_reserve_keep() : room for `nslots` contiguous-in-sequence slots (the payload may
 *  wrap around the array end: write it with pa_ring_write_payload) while `keep` more slots
 *  (at most half the ring: a larger keep counts as half) stay free after them (room promised to
 *  records that must follow, e.g. the pops of kept pushes). Returns the header slot to fill, or
 *  NULL when full (the drop is then counted). */
static inline __attribute__((always_inline)) pa_record_t *pa_ring_reserve_keep(pa_ring_t *r, uint32_t nslots, uint32_t keep)
{
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint64_t cap = r->mask + 1;
    uint64_t need = (uint64_t)nslots + keep;
    if (__builtin_expect(tail + need - r->cached_head > cap, 0)) {
        /* keep is at most half the ring (callers' cap): applied here, off the common path */
        if (keep > cap / 2)
            need = (uint64_t)nslots + cap / 2;
        r->cached_head = atomic_load_explicit(&r->head, memory_order_acquire);
        if (tail + need - r->cached_head > cap) {
            atomic_store_explicit(&r->drops, atomic_load_explicit(&r->drops, memory_order_relaxed) + 1,
                                  memory_order_relaxed);
            return NULL;
        }
    }
    return &r->slots[tail & r->mask];
}

/* Why a full ring holds its producer instead of dropping: a thread recording in a tight loop
 * (an HGTX push/pop pair, a cheap ze call: 30-40 ns each with the agent) writes records faster
 * than one aggregator consumes them (~50-80 ns each with the spool), so a ring of any size
 * overflows within milliseconds and half of a run's records would be lost. Waiting slows such a
 * loop to the aggregator's pace and keeps every record. The wait is bounded: an aggregator that
 * makes no progress for PA_RING_STALL_NS (stopped, starved, or blocked on something the waiting
 * thread holds) ends it, and that thread then records without waiting for PA_RING_NOWAIT_NS. */
#define PA_RING_STALL_NS 100000000ull
#define PA_RING_NOWAIT_NS 1000000000ull

/* The sources whose waits are counted apart (the summary's "Ring full" line, SESSION_COUNTERS
 * <source>_ring_full_*). PA_RING_SRC_NONE: a record that never waits. */
enum pa_ring_src { PA_RING_SRC_NONE = 0, PA_RING_SRC_ZE, PA_RING_SRC_HGTX, PA_RING_SRC_OSRT, PA_RING_SRC_ITT,
                   PA_RING_NSRC };

/* Per source: waits, their total time (ns), waits given up (the record was then dropped). */
typedef struct pa_ring_waits {
    _Atomic uint64_t waits, wait_ns, given_up;
} pa_ring_waits_t;
extern pa_ring_waits_t pa_ring_waits[PA_RING_NSRC];

/*! pa_ring_src_name() : "ze", "hgtx", "osrt", "itt" for a PA_RING_SRC_* value; NULL otherwise. */
const char *pa_ring_src_name(unsigned src);

/*! pa_ring_src_of_kind() : the source a ring record kind (PA_REC_*) is counted under; mem and the
 *  agent's own kinds are PA_RING_SRC_NONE (mem records wait in collector/mem.c). */
unsigned pa_ring_src_of_kind(unsigned kind);

/*! pa_ring_full_wait() : the producer of `r` (its own thread, in normal context: the caller
 *  decided it may wait) waits until `nslots` slots plus `keep` (capped at half the ring, as the
 *  reserve caps it) are free: short raw nanosleeps (no lock, no OSRT wrapper, errno kept) until
 *  a quarter of the ring is free, so the next wait is a quarter ring of records later. Returns 1
 *  when the room is there (at once when the aggregator made it meanwhile: no wait counted), 0
 *  when not: a wait given up after PA_RING_STALL_NS without the consumer's progress (counted
 *  under `src`; no wait for PA_RING_NOWAIT_NS after), a given-up window still running, or the
 *  thread blocks signals it did not block when the ring was made (a signal handler runs: it
 *  must not sleep). Touches neither `drops` nor the ring's slots. Cold. */
int pa_ring_full_wait(pa_ring_t *r, uint32_t nslots, uint32_t keep, unsigned src);

/*! pa_ring_reserve() : pa_ring_reserve_keep() with nothing kept free. */
static inline pa_record_t *pa_ring_reserve(pa_ring_t *r, uint32_t nslots)
{
    return pa_ring_reserve_keep(r, nslots, 0);
}

/*! pa_ring_write_payload() : copies `len` bytes into the continuation slots after the header
 *  reserved by the last pa_ring_reserve(); handles the wrap at the array end. */
void pa_ring_write_payload(pa_ring_t *r, const void *data, uint32_t len);

/* The consumer's nap (agg/agg.c): 1 while it sleeps longer than its shortest poll, a futex
 * word. A producer whose commit crosses a quarter of its ring (one commit per cap/4 slots, at
 * most 1 in 16) wakes it (pa_ring_nudge), so a burst after a quiet spell finds the consumer
 * draining when the ring is a quarter full, whatever the nap's length. */
extern _Atomic int pa_ring_nap;

/*! pa_ring_nudge() : wakes the napping consumer (one futex wake, errno kept); nothing when it
 *  does not nap. Async-signal-safe. */
void pa_ring_nudge(void);

/*! pa_ring_publish() : pa_ring_commit() without the consumer's wake-up: returns 1 when the
 *  commit crossed a quarter of the ring, and the caller then calls pa_ring_nudge_due() (the
 *  caller's rare path, after the rest of its write). */
static inline __attribute__((always_inline)) int pa_ring_publish(pa_ring_t *r, uint32_t nslots)
{
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint64_t next = tail + nslots;
    atomic_store_explicit(&r->records, atomic_load_explicit(&r->records, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    atomic_store_explicit(&r->tail, next, memory_order_release);
    /* a multiple of cap/4 crossed (the bits above cap/4 - 1 differ) */
    return __builtin_expect((tail ^ next) > (r->mask >> 2), 0);
}

/*! pa_ring_nudge_due() : a commit crossed a quarter of the ring: wakes the consumer if it naps. */
static inline void pa_ring_nudge_due(void)
{
    if (atomic_load_explicit(&pa_ring_nap, memory_order_relaxed))
        pa_ring_nudge();
}

/*! pa_ring_commit() : publishes the reserved record (header + continuation slots). */
static inline void pa_ring_commit(pa_ring_t *r, uint32_t nslots)
{
    if (pa_ring_publish(r, nslots))
        pa_ring_nudge_due();
}

/* Consumer side. `payload` points to `rec->len` contiguous bytes (copied into `scratch`
 * when the record wrapped), valid only during the callback. The sink sees times in ns: the
 * TSC stamps of the kinds pa_record_stamped() names are converted here (pa_clock_stamp_ns_in,
 * common/pa_clock.h), on a copy of the record. */
typedef void (*pa_ring_sink_fn)(void *ctx, const pa_record_t *rec, const uint8_t *payload);

/*! pa_ring_drain_inline() : pa_ring_drain_upto() for a caller whose sink should be inlined into
 *  the loop (the aggregator's drain; pa_ring.c's functions are this with a call per record). */
static inline __attribute__((always_inline)) size_t
pa_ring_drain_inline(pa_ring_t *r, pa_ring_sink_fn sink, void *ctx, uint8_t *scratch, size_t max_records,
                     uint64_t limit)
{
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    if (tail > limit)
        tail = limit; /* records are whole below a committed position: limit is one */
    /* locals: the sink writes memory, the compiler would reload them per record */
    pa_record_t *const slots = r->slots;
    const uint64_t mask = r->mask, cap = mask + 1;
    size_t done = 0;
    if (max_records == 0)
        max_records = SIZE_MAX;
#if defined(__x86_64__) && PA_CLOCK_TSC
    pa_tsc_seg_t seg = {0}; /* loaded at the first tick, after the acquire of tail above */
#endif
    while (head < tail && done < max_records) {
        const pa_record_t *rec = &slots[head & mask];
        pa_record_t fixed;
        uint32_t ns = rec->nslots ? rec->nslots : 1;
        /* a corrupted header (a stray write by the application) must not make us read past
         * what was committed nor overflow `scratch`: at most the committed slots, and a payload
         * of at most the continuation slots; the sink sees the clamped length */
        if (__builtin_expect(ns > tail - head, 0))
            ns = (uint32_t)(tail - head);
        const uint8_t *payload = NULL;
        if (rec->len) {
            if (__builtin_expect(rec->len > (uint64_t)(ns - 1) * PA_SLOT_SIZE, 0)) {
                fixed = *rec;
                fixed.len = (ns - 1) * PA_SLOT_SIZE;
                rec = &fixed;
            }
            uint64_t first = (head + 1) & mask;
            if (first + (ns - 1) <= cap) {
                payload = (const uint8_t *)&slots[first];
            } else { /* wrapped: copy both pieces into scratch */
                size_t a = (size_t)(cap - first) * PA_SLOT_SIZE;
                memcpy(scratch, &slots[first], a);
                memcpy(scratch + a, &slots[0], rec->len > a ? rec->len - a : 0);
                payload = scratch;
            }
        }
#if defined(__x86_64__) && PA_CLOCK_TSC
        /* stamps (pa_clock_stamp) of the kinds that store them: the sink sees ns */
        if (__builtin_expect(((rec->t0 | rec->t1) & PA_CLOCK_TICK) != 0, 0) && pa_record_stamped(rec->kind)) {
            if (rec != &fixed) {
                fixed = *rec;
                rec = &fixed;
            }
            fixed.t0 = pa_clock_stamp_ns_in(&seg, fixed.t0);
            fixed.t1 = pa_clock_stamp_ns_in(&seg, fixed.t1);
        }
#endif
        sink(ctx, rec, payload);
        head += ns;
        done++;
        /* release per record so a waiting producer sees room early */
        atomic_store_explicit(&r->head, head, memory_order_release);
    }
    return done;
}

/*! pa_ring_drain() : consumes at most `max_records` records (0 = all visible), calling `sink`
 *  for each; `scratch` must hold the ring's capacity in bytes. Returns the records consumed. */
size_t pa_ring_drain(pa_ring_t *r, pa_ring_sink_fn sink, void *ctx, uint8_t *scratch, size_t max_records);

/*! pa_ring_drain_upto() : pa_ring_drain() (at most `max_records`, 0 = all) of the records that
 *  start below slot position `limit` (a committed tail read earlier: the exit-time cut-off),
 *  nothing beyond it. */
size_t pa_ring_drain_upto(pa_ring_t *r, pa_ring_sink_fn sink, void *ctx, uint8_t *scratch, size_t max_records,
                          uint64_t limit);

/* Registry: a lock-free list of every live ring. Producers push (CAS) on registration;
 * only the consumer unlinks (retired and empty rings). */
extern _Atomic(pa_ring_t *) pa_ring_list;

/*! pa_ring_register() : pushes `r` onto pa_ring_list (lock-free). */
void pa_ring_register(pa_ring_t *r);

/*! pa_ring_unlink_retired() : consumer only: unlinks and destroys rings that are retired
 *  and fully drained, after calling `on_retire(ctx, r)` so their counters can be kept.
 *  Returns the number destroyed. */
size_t pa_ring_unlink_retired(void (*on_retire)(void *ctx, const pa_ring_t *r), void *ctx);

#endif
