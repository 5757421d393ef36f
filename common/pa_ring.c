/* pa_ring.c - per-thread single-producer rings and their lock-free registry. */
#include "pa_ring.h"
#include "pa_clock.h"

#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

_Atomic(pa_ring_t *) pa_ring_list = NULL;
_Atomic int pa_ring_nap = 0;

void pa_ring_nudge(void)
{
    /* the first producer to see the nap ends it: one wake per nap, not one per ring */
    if (!atomic_exchange_explicit(&pa_ring_nap, 0, memory_order_relaxed))
        return;
    int e = errno;
    syscall(SYS_futex, (int *)&pa_ring_nap, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0); /* raw: no OSRT wrapper */
    errno = e;
}

pa_ring_waits_t pa_ring_waits[PA_RING_NSRC];

const char *pa_ring_src_name(unsigned src)
{
    static const char *const names[PA_RING_NSRC] = {NULL, "ze", "hgtx", "osrt", "itt"};
    return src < PA_RING_NSRC ? names[src] : NULL;
}

unsigned pa_ring_src_of_kind(unsigned kind)
{
    if (kind >= PA_REC_HGTX_FIRST && kind <= PA_REC_HGTX_LAST)
        return PA_RING_SRC_HGTX;
    if (kind >= PA_REC_OSRT_FIRST && kind <= PA_REC_OSRT_LAST)
        return PA_RING_SRC_OSRT;
    if (kind >= PA_REC_ZE_FIRST && kind <= PA_REC_ZE_LAST)
        return PA_RING_SRC_ZE;
    if (kind >= PA_REC_ITT_FIRST && kind <= PA_REC_ITT_LAST)
        return PA_RING_SRC_ITT;
    return PA_RING_SRC_NONE;
}

/* Signals 1-64 the calling thread blocks: a raw syscall (no interposed wrapper, errno kept). */
static uint64_t ring_sigmask_now(void)
{
    uint64_t m = 0;
    int e = errno;
    if (syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &m, sizeof m) != 0)
        m = ~0ull; /* unknown: taken as "in a handler", never waited */
    errno = e;
    return m;
}

static inline uint64_t ring_free(pa_ring_t *r)
{
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    return r->mask + 1 - (tail - atomic_load_explicit(&r->head, memory_order_acquire));
}

/* One wait: raw nanosleeps until `want` slots are free or the consumer made no progress for
 * PA_RING_STALL_NS (on a loaded machine the aggregator runs a slice every few tens of ms: what
 * bounds the wait is a time without any progress, not its length). Returns the end time. */
static uint64_t ring_sleep_until_free(pa_ring_t *r, uint64_t want, uint64_t now)
{
    uint64_t seen = atomic_load_explicit(&r->head, memory_order_acquire), since = now;
    struct timespec pause = {0, 20000}; /* the timer slack makes it ~50-100 us */
    while (ring_free(r) < want) {
        syscall(SYS_nanosleep, &pause, NULL); /* raw: never the OSRT wrapper */
        now = pa_clock_ns();
        uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
        if (head != seen) {
            seen = head;
            since = now;
        } else if (now - since > PA_RING_STALL_NS) {
            break;
        }
    }
    return now;
}

int pa_ring_full_wait(pa_ring_t *r, uint32_t nslots, uint32_t keep, unsigned src)
{
    uint64_t cap = r->mask + 1;
    uint64_t need = (uint64_t)nslots + (keep < cap / 2 ? keep : cap / 2);
    if (ring_free(r) >= need) /* the consumer made room since the refused reserve */
        return 1;
    if (src == PA_RING_SRC_NONE || src >= PA_RING_NSRC || need > cap)
        return 0;
    uint64_t now = pa_clock_ns();
    if (now < r->nowait_until || (ring_sigmask_now() & ~r->sigmask))
        return 0;
    int saved = errno;
    uint64_t end = ring_sleep_until_free(r, cap / 4 + need < cap ? cap / 4 + need : cap, now);
    errno = saved;
    pa_ring_waits_t *w = &pa_ring_waits[src];
    atomic_fetch_add_explicit(&w->waits, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&w->wait_ns, end - now, memory_order_relaxed);
    if (ring_free(r) >= need)
        return 1;
    atomic_fetch_add_explicit(&w->given_up, 1, memory_order_relaxed);
    r->nowait_until = end + PA_RING_NOWAIT_NS;
    return 0;
}

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
    r->sigmask = ring_sigmask_now(); /* made on the thread's first event: its normal context */
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
    return pa_ring_drain_inline(r, sink, ctx, scratch, max_records, limit);
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
