/* ze_clock.c - device kernel-timestamp ticks to host CLOCK_MONOTONIC ns (wrap-safe). */
#include "ze.h"

uint64_t pa_ze_ticks_mask(uint32_t bits)
{
    /* a shift by 64 is undefined: treat 0 and >= 64 as "all bits valid" */
    return (bits == 0 || bits >= 64) ? ~(uint64_t)0 : (((uint64_t)1 << bits) - 1u);
}

static uint64_t ticks_to_ns(uint64_t ticks, uint64_t hz)
{
    if (hz == 0)
        return ticks;  /* unknown resolution: treat ticks as ns rather than divide by 0 */
    return (uint64_t)(((unsigned __int128)ticks * 1000000000u) / hz);
}

uint64_t pa_ze_ticks_to_ns(const pa_ze_clock_t *c, uint64_t ticks)
{
    uint64_t mask = pa_ze_ticks_mask(c->valid_bits);
    uint64_t delta = (ticks - c->ref_dev_ticks) & mask;
    if (delta > mask / 2) {  /* before the reference: negative distance */
        uint64_t back = ticks_to_ns(((c->ref_dev_ticks - ticks) & mask), c->timer_hz);
        return back > c->ref_host_ns ? 0 : c->ref_host_ns - back;
    }
    return c->ref_host_ns + ticks_to_ns(delta, c->timer_hz);
}

uint64_t pa_ze_span_ns(const pa_ze_clock_t *c, uint64_t start, uint64_t end)
{
    return ticks_to_ns((end - start) & pa_ze_ticks_mask(c->valid_bits), c->timer_hz);
}

void pa_ze_clock_publish(pa_ze_clock_sync_t *s, const pa_ze_clock_t *c)
{
    uint32_t q = atomic_load_explicit(&s->seq, memory_order_relaxed);
    int cur = atomic_load_explicit(&s->active, memory_order_relaxed);
    atomic_store_explicit(&s->seq, q + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release); /* odd seq visible before the copy changes */
    s->clock[cur ^ 1] = *c;
    atomic_store_explicit(&s->active, cur ^ 1, memory_order_release);
    atomic_store_explicit(&s->seq, q + 2, memory_order_release);
}

void pa_ze_clock_load(pa_ze_clock_sync_t *s, pa_ze_clock_t *out)
{
    /* The copy read is only rewritten by the publication after the one that made it current,
     * which first makes seq odd: an unchanged seq proves the copy was not written meanwhile
     * (a publication in progress at the start writes the other copy, so no wait for it). */
    for (;;) {
        uint32_t q0 = atomic_load_explicit(&s->seq, memory_order_acquire);
        int cur = atomic_load_explicit(&s->active, memory_order_acquire);
        *out = s->clock[cur];
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&s->seq, memory_order_relaxed) == q0)
            return;
    }
}
