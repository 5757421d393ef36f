/* pa_ring.c - per-thread single-producer rings and their lock-free registry. */
#include "pa_ring.h"
#include "pa_clock.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

_Atomic(pa_ring_t *) pa_ring_list = NULL;

/* Header and slots live in one anonymous mapping, not malloc: a ring is created on a thread's
 * first event, which may be inside an interposed call made while the application's own
 * allocator holds its lock (e.g. a malloc replacement's pthread_mutex_lock). */
static size_t ring_header_bytes(void)
{
    return (sizeof(pa_ring_t) + 4095u) & ~(size_t)4095u;
}

pa_ring_t *pa_ring_create(uint32_t nslots, uint32_t tid)
{
    uint64_t n = 64;
    while (n < nslots && n < (1ull << 30))
        n <<= 1;
    size_t bytes = ring_header_bytes() + n * sizeof(pa_record_t);
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    pa_ring_t *r = m; /* mmap memory is zeroed */
    r->slots = (pa_record_t *)((char *)m + ring_header_bytes());
    r->mask = n - 1;
    r->tid = tid;
    return r;
}

void pa_ring_destroy(pa_ring_t *r)
{
    if (!r)
        return;
    munmap(r, ring_header_bytes() + (r->mask + 1) * sizeof(pa_record_t));
}

void pa_ring_write_payload(pa_ring_t *r, const void *data, uint32_t len)
{
    uint64_t pos = atomic_load_explicit(&r->tail, memory_order_relaxed) + 1;
    const uint8_t *src = data;
    uint64_t cap = r->mask + 1;
    while (len > 0) {
        uint64_t idx = pos & r->mask;
        /* bytes until the array end, so each memcpy is contiguous */
        uint64_t room = (cap - idx) * PA_SLOT_SIZE;
        uint32_t n = len < room ? len : (uint32_t)room;
        memcpy(&r->slots[idx], src, n);
        if (n % PA_SLOT_SIZE) /* zero the tail of the last slot: no stale bytes in the spool */
            memset((uint8_t *)&r->slots[idx] + n, 0, PA_SLOT_SIZE - n % PA_SLOT_SIZE);
        src += n;
        len -= n;
        pos += (n + PA_SLOT_SIZE - 1) / PA_SLOT_SIZE;
    }
}

static size_t ring_drain(pa_ring_t *r, pa_ring_sink_fn sink, void *ctx, uint8_t *scratch, size_t max_records,
                         uint64_t limit)
{
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    if (tail > limit)
        tail = limit; /* records are whole below a committed position: limit is one */
    uint64_t cap = r->mask + 1;
    size_t done = 0;
#if defined(__x86_64__) && PA_CLOCK_TSC
    pa_tsc_seg_t seg = {0}; /* loaded at the first tick, after the acquire of tail above */
#endif
    while (head < tail && (max_records == 0 || done < max_records)) {
        const pa_record_t *rec = &r->slots[head & r->mask];
        pa_record_t fixed;
        uint32_t ns = rec->nslots ? rec->nslots : 1;
        /* a corrupted header (a stray write by the application) must not make us read past
         * what was committed nor overflow `scratch`: at most the committed slots, and a payload
         * of at most the continuation slots; the sink sees the clamped length */
        if (ns > tail - head)
            ns = (uint32_t)(tail - head);
        if (rec->len > (uint64_t)(ns - 1) * PA_SLOT_SIZE) {
            fixed = *rec;
            fixed.len = (ns - 1) * PA_SLOT_SIZE;
            rec = &fixed;
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
        const uint8_t *payload = NULL;
        if (rec->len) {
            uint64_t first = (head + 1) & r->mask;
            if (first + (ns - 1) <= cap) {
                payload = (const uint8_t *)&r->slots[first];
            } else { /* wrapped: copy both pieces into scratch */
                size_t a = (size_t)(cap - first) * PA_SLOT_SIZE;
                memcpy(scratch, &r->slots[first], a);
                memcpy(scratch + a, &r->slots[0], rec->len > a ? rec->len - a : 0);
                payload = scratch;
            }
        }
        sink(ctx, rec, payload);
        head += ns;
        done++;
        /* release per record so a waiting producer sees room early */
        atomic_store_explicit(&r->head, head, memory_order_release);
    }
    return done;
}

size_t pa_ring_drain(pa_ring_t *r, pa_ring_sink_fn sink, void *ctx, uint8_t *scratch, size_t max_records)
{
    return ring_drain(r, sink, ctx, scratch, max_records, UINT64_MAX);
}

size_t pa_ring_drain_upto(pa_ring_t *r, pa_ring_sink_fn sink, void *ctx, uint8_t *scratch, size_t max_records,
                          uint64_t limit)
{
    return ring_drain(r, sink, ctx, scratch, max_records, limit);
}

void pa_ring_register(pa_ring_t *r)
{
    pa_ring_t *old = atomic_load_explicit(&pa_ring_list, memory_order_relaxed);
    do {
        r->next = old;
    } while (!atomic_compare_exchange_weak_explicit(&pa_ring_list, &old, r, memory_order_release,
                                                    memory_order_relaxed));
}

size_t pa_ring_unlink_retired(void (*on_retire)(void *ctx, const pa_ring_t *r), void *ctx)
{
    size_t n = 0;
    pa_ring_t *prev = NULL;
    pa_ring_t *cur = atomic_load_explicit(&pa_ring_list, memory_order_acquire);
    while (cur) {
        pa_ring_t *next = cur->next;
        int gone = atomic_load_explicit(&cur->retired, memory_order_acquire) &&
                   atomic_load_explicit(&cur->head, memory_order_relaxed) ==
                       atomic_load_explicit(&cur->tail, memory_order_acquire);
        if (gone) {
            int unlinked = 0;
            if (prev) {
                prev->next = next;
                unlinked = 1;
            } else {
                pa_ring_t *expect = cur;
                /* a producer may have pushed a new head meanwhile: then cur is no longer head */
                unlinked = atomic_compare_exchange_strong(&pa_ring_list, &expect, next);
                if (!unlinked) { /* find cur's predecessor from the new head */
                    pa_ring_t *p = atomic_load(&pa_ring_list);
                    while (p && p->next != cur)
                        p = p->next;
                    if (p) {
                        p->next = next;
                        unlinked = 1;
                    }
                }
            }
            if (unlinked) {
                if (on_retire)
                    on_retire(ctx, cur);
                pa_ring_destroy(cur);
                n++;
                cur = next;
                continue;
            }
        }
        prev = cur;
        cur = next;
    }
    return n;
}
