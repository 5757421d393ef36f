/* test_clock_stamp.c - TSC stamps converted later (by the ring's consumer) give the ns the reading
 * thread's pa_clock_ns() gave at the time: over a synthetic history of segments (continuous,
 * slewed, published ahead, stepped, a stale consumer snapshot), at every segment's start, soft
 * end and end, against a by-hand conversion; and through a ring (pa_ring_drain hands ns to its
 * sink, other kinds' values with bit 63 untouched). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../common/pa_clock.h"
#include "../../common/pa_ring.h"

#if defined(__x86_64__) && PA_CLOCK_TSC

/* What a reader "now" (segment `k` just published) computed for tick t, and by hand. */
typedef struct { uint64_t t, app, hand; } sample_t;

#define NS_MAX 256
static sample_t smp[NS_MAX];
static int nsmp;

/* 1 ns per tick << 32 = 2^32; a segment of rate r ns per tick: mult = r * 2^32. */
static uint64_t mult_of(double ns_per_tick)
{
    return (uint64_t)(ns_per_tick * 4294967296.0);
}

/* The reader's conversion of t right now (the state as published so far): pa_clock_ns's code
 * with the tick given. */
static void sample(uint64_t t, const pa_tsc_seg_t *by)
{
    assert_true(nsmp < NS_MAX);
    smp[nsmp].t = t;
    smp[nsmp].app = pa_clock_tick_ns(t);
    smp[nsmp].hand = pa_tsc_conv(by, t);
    nsmp++;
}

typedef struct { int n; uint64_t t0[3], t1[3]; } got_t;

static void sink(void *ctx, const pa_record_t *x, const uint8_t *p)
{
    (void)p;
    got_t *g = ctx;
    g->t0[g->n] = x->t0;
    g->t1[g->n] = x->t1;
    g->n++;
}

static void put(pa_ring_t *r, uint16_t kind, uint64_t t0, uint64_t t1)
{
    pa_record_t rec = {.kind = kind, .nslots = 1, .t0 = t0, .t1 = t1};
    pa_record_t *slot = pa_ring_reserve(r, 1);
    assert_non_null(slot);
    if (slot) {
        memcpy(slot, &rec, sizeof rec);
        pa_ring_commit(r, 1);
    }
}

static void publish(const pa_tsc_seg_t *g)
{
    pa_tsc_publish(&pa_tsc, g);
}

static void test_stamp_conversion_identity(void **s)
{
    (void)s;
    pa_tsc_clock_t saved;
    memcpy(&saved, &pa_tsc, sizeof saved);
    memset(&pa_tsc, 0, sizeof pa_tsc);
    atomic_store(&pa_tsc.on, 1);
    nsmp = 0;

    /* rate 0.4 ns per tick (2.5 GHz): period 125 M ticks, soft end 100 M */
    uint64_t rate = mult_of(0.4);
    pa_tsc_seg_t s1 = pa_tsc_seg_make(1000000000ull, 7000000000ull, rate, rate, NULL);
    assert_true(s1.soft > 0 && s1.end > s1.tsc + s1.soft);
    publish(&s1);
    pa_tsc_seg_t early; /* a consumer's snapshot taken now, used after everything below */
    pa_tsc_load(&early);
    for (uint64_t d = 0; d <= s1.soft; d += s1.soft / 7)
        sample(s1.tsc + d, &s1);
    sample(s1.tsc + s1.soft, &s1);       /* the soft end itself */
    sample(s1.tsc - 12345, &s1);         /* before the first segment: its line, backwards */

    /* s2 published ahead (a reader in s1's margin): continuous at s1's end, slewed +300 ppm */
    uint64_t m2 = rate + rate / 1000000 * 300;
    pa_tsc_seg_t s2 = pa_tsc_seg_make(s1.end, pa_tsc_conv(&s1, s1.end), m2, rate, &s1);
    publish(&s2);
    sample(s1.tsc + s1.soft + 1, &s1);   /* past s1's soft end, before s2: the previous line */
    sample(s1.end - 1, &s1);
    sample(s2.tsc, &s2);                 /* s2's start: continuity */
    assert_int_equal(pa_tsc_conv(&s1, s1.end), pa_tsc_conv(&s2, s2.tsc));
    for (uint64_t d = 1; d <= s2.soft; d += s2.soft / 5)
        sample(s2.tsc + d, &s2);

    /* s3: a step (suspend: the pair says +3 ms), starting at the pair, -200 ppm */
    uint64_t pt = s2.tsc + s2.soft + 5000;
    uint64_t m3 = rate - rate / 1000000 * 200;
    pa_tsc_seg_t s3 = pa_tsc_seg_make(pt, pa_tsc_conv(&s2, pt) + 3000000, m3, rate, &s2);
    publish(&s3);
    sample(pt - 1, &s2);                 /* just before the step: s2 (the previous line) */
    sample(pt, &s3);
    sample(pt + s3.soft, &s3);

    /* s4..s7: a thread idle across a whole period (s4 starts at the pair, after s3's end), then
     * renewals published ahead */
    pa_tsc_seg_t prev = s3, segs[4];
    uint64_t start = s3.end + 777777;
    for (int i = 0; i < 4; i++) {
        uint64_t m = rate + (uint64_t)(i * 37);
        segs[i] = pa_tsc_seg_make(start, pa_tsc_conv(&prev, start), m, rate, &prev);
        publish(&segs[i]);
        sample(prev.tsc + prev.soft + 3, &prev); /* in prev's margin (i = 0: s3 past its soft end, before s4) */
        sample(segs[i].tsc, &segs[i]);
        sample(segs[i].tsc + segs[i].soft / 2, &segs[i]);
        prev = segs[i];
        start = prev.end;
    }

    /* the consumer, later: fresh snapshot, the early one (stale by 6 segments), none yet */
    pa_tsc_seg_t fresh;
    pa_tsc_load(&fresh);
    for (int i = 0; i < nsmp; i++) {
        uint64_t st = smp[i].t | PA_CLOCK_TICK;
        pa_tsc_seg_t none = {0};
        assert_true(smp[i].app == smp[i].hand);
        assert_true(pa_clock_stamp_ns(st) == smp[i].app);
        assert_true(pa_clock_stamp_ns_in(&fresh, st) == smp[i].app);
        assert_true(pa_clock_stamp_ns_in(&early, st) == smp[i].app);
        assert_true(pa_clock_stamp_ns_in(&none, st) == smp[i].app);
    }
    /* ns stamps are ns */
    assert_true(pa_clock_stamp_ns(123456789) == 123456789);
    assert_true(pa_clock_stamp_ns_in(&fresh, 987654321) == 987654321);

    /* through a ring: stamped kinds converted on the sink's copy, other kinds as written */
    pa_ring_t *r = pa_ring_create(64, 42);
    assert_non_null(r);
    put(r, PA_REC_ZE_API, smp[3].t | PA_CLOCK_TICK, smp[9].t | PA_CLOCK_TICK);
    put(r, PA_REC_HGTX_POP, 5555, 0);                    /* an ns stamp */
    put(r, PA_REC_OSRT, smp[3].t | PA_CLOCK_TICK, 0);    /* not a stamped kind: passed as is */
    uint8_t scratch[64 * 64];
    got_t got = {0};
    assert_int_equal(pa_ring_drain(r, sink, &got, scratch, 0), 3);
    assert_true(got.t0[0] == smp[3].app && got.t1[0] == smp[9].app);
    assert_true(got.t0[1] == 5555 && got.t1[1] == 0);
    assert_true(got.t0[2] == (smp[3].t | PA_CLOCK_TICK));
    pa_ring_destroy(r);

    memcpy(&pa_tsc, &saved, sizeof saved);
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
#if defined(__x86_64__) && PA_CLOCK_TSC
        cmocka_unit_test(test_stamp_conversion_identity),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
