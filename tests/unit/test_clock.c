/* test_clock.c - pa_clock_ns() (TSC segments following CLOCK_MONOTONIC; clock_gettime where the
 * TSC is unsuitable or with -DPA_CLOCK_TSC=0): close to clock_gettime through the warm-up and
 * several recalibrations, monotonic on each of 6 threads, segment conversion exact at its start
 * and linear; a caller that saw a segment expire before another thread recalibrated does not
 * recalibrate again, and a recalibration soon after another keeps the measured rate. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <pthread.h>
#include <cmocka.h>

#include "../../common/pa_clock.h"

#define RUN_NS 250000000ull /* 5 segments after the warm-up */
#define NTHREADS 6           /* more readers than the CI machine's 2 vCPUs: preemptions in the slow path */

typedef struct {
    uint64_t back;      /* readings smaller than the thread's previous one */
    int64_t worst;      /* largest |pa_clock_ns - midpoint of two clock_gettime| in a tight window */
    uint64_t checked;
} res_t;

static void *reader(void *arg)
{
    res_t *r = arg;
    uint64_t end = pa_clock_gettime_ns() + RUN_NS, last = 0;
    while (pa_clock_gettime_ns() < end) {
        uint64_t a = pa_clock_gettime_ns();
        uint64_t x = pa_clock_ns();
        uint64_t b = pa_clock_gettime_ns();
        if (x < last)
            r->back++;
        last = x;
        if (b - a < 2000) { /* not preempted in between: x must lie near [a, b] */
            int64_t o = (int64_t)x - (int64_t)(a + (b - a) / 2);
            if (llabs(o) > llabs(r->worst))
                r->worst = o;
            r->checked++;
        }
    }
    return NULL;
}

static void test_follows_monotonic(void **s)
{
    (void)s;
    pthread_t t[NTHREADS];
    res_t r[NTHREADS] = {{0}};
    for (int i = 0; i < NTHREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, reader, &r[i]), 0);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < NTHREADS; i++) {
        assert_int_equal(r[i].back, 0);
        assert_true(r[i].checked > 1000);
        /* generous for a loaded VM: a segment's error is ~0.1 us; 20 us would be a broken rate */
        assert_true(llabs(r[i].worst) < 20000);
    }
#if defined(__x86_64__)
    if (atomic_load(&pa_tsc.on) == 1)
        assert_true(atomic_load(&pa_tsc.seq) >= 4); /* the first segment and a recalibration (+2 each) */
#endif
}

#if defined(__x86_64__)
static void test_segment_math(void **s)
{
    (void)s;
    /* 2.5 GHz: 0.4 ns per tick = 0.4 * 2^32 */
    pa_tsc_seg_t g = {.tsc = 1000000, .ns = 5000000000ull, .mult = (uint64_t)(0.4 * 4294967296.0)};
    assert_true(pa_tsc_conv(&g, 1000000) == 5000000000ull);
    assert_true(llabs((long long)(pa_tsc_conv(&g, 1000000 + 2500000000ull) - 6000000000ull)) <= 1);
    assert_true(llabs((long long)(pa_tsc_conv(&g, 1000000 - 2500) - 4999999000ull)) <= 1); /* before the start */
}
#endif

#if defined(__x86_64__)
/* Makes the current segment end before `t` (as the lock holder would publish it). */
static void expire_segment(uint64_t t)
{
    int expect = 0;
    while (!atomic_compare_exchange_strong(&pa_tsc.lock, &expect, 1))
        expect = 0;
    pa_tsc_seg_t g;
    pa_tsc_load(&g);
    g.ns = pa_tsc_conv(&g, t - 1000); /* the same line, from just before t (the current one may start later) */
    g.tsc = t - 1000;
    g.end = t - 1;
    g.soft = g.end - g.tsc;
    pa_tsc_publish(&pa_tsc, &g);
    atomic_store(&pa_tsc.lock, 0);
}

static int tsc_on(void)
{
    uint64_t end = pa_clock_gettime_ns() + 4 * PA_TSC_WARMUP_NS;
    while (atomic_load(&pa_tsc.on) == 0 && pa_clock_gettime_ns() < end)
        (void)pa_clock_ns();
    return atomic_load(&pa_tsc.on) == 1;
}

/* pa_clock_slow() at a tick read just before, until it published a segment (a preemption while
 * reading the pair makes it extend the current one instead); the tick used goes to *t. */
static uint64_t recalibrate(uint64_t *t)
{
    uint32_t q = atomic_load(&pa_tsc.seq);
    uint64_t x = 0;
    for (int i = 0; i < 1000 && atomic_load(&pa_tsc.seq) == q; i++) {
        *t = __rdtsc();
        x = pa_clock_slow(*t);
    }
    assert_int_equal(atomic_load(&pa_tsc.seq), q + 2);
    return x;
}

/* Thread A reads the TSC and sees the segment expired, thread B recalibrates, then A takes the
 * lock: A must use B's segment, not measure a rate over the microseconds since B's pair. */
static void test_stale_caller_keeps_segment(void **s)
{
    (void)s;
    if (!tsc_on())
        skip(); /* no invariant TSC here: clock_gettime, covered above */
    uint64_t t0 = __rdtsc();
    expire_segment(t0);
    uint64_t tb;
    (void)recalibrate(&tb); /* thread B */
    uint32_t q1 = atomic_load(&pa_tsc.seq);
    pa_tsc_seg_t b;
    pa_tsc_load(&b);
    uint64_t a = pa_clock_gettime_ns();
    uint64_t x = pa_clock_slow(t0); /* thread A, late */
    assert_int_equal(atomic_load(&pa_tsc.seq), q1);
    pa_tsc_seg_t now;
    pa_tsc_load(&now);
    assert_memory_equal(&now, &b, sizeof b);
    assert_true(x <= a + 1000); /* t0 was read before a */
}

/* A recalibration a few us after another (the pair's +-1 us would be percents of the rate)
 * keeps the rate measured over the last period: the slope stays within the slew bound. */
static void test_early_recalibration_keeps_rate(void **s)
{
    (void)s;
    if (!tsc_on())
        skip();
    uint64_t tb;
    expire_segment(__rdtsc());
    (void)recalibrate(&tb);
    uint64_t rate = pa_tsc.rate;
    for (int i = 0; i < 20; i++) {
        expire_segment(__rdtsc());
        (void)recalibrate(&tb);
        pa_tsc_seg_t g;
        pa_tsc_load(&g);
        assert_true(pa_tsc.rate == rate);
        int64_t d = (int64_t)(g.mult - rate);
        assert_true(llabs(d) <= (long long)(rate * (PA_TSC_SLEW_PPM + 1) / 1000000));
    }
}

/* A recalibration started before a segment's end publishes the next segment from that end: ticks
 * before it still convert by the old one (now the previous slot), and the two meet there. */
static void test_recalibration_continuous_at_end(void **s)
{
    (void)s;
    if (!tsc_on())
        skip();
    int expect = 0;
    while (!atomic_compare_exchange_strong(&pa_tsc.lock, &expect, 1))
        expect = 0;
    pa_tsc_seg_t old, orig;
    pa_tsc_load(&old);
    orig = old;
    uint64_t t = __rdtsc();
    old.ns = pa_tsc_conv(&old, t - 1000);
    old.tsc = t - 1000;
    old.soft = t - 1 - old.tsc;    /* past the soft end */
    old.end = t + 2000000000ull;   /* the end ~1 s ahead */
    pa_tsc_publish(&pa_tsc, &old);
    atomic_store(&pa_tsc.lock, 0);
    uint32_t q0 = atomic_load(&pa_tsc.seq);
    uint64_t t1 = 0;
    uint64_t x1 = recalibrate(&t1);
    pa_tsc_seg_t g;
    pa_tsc_load(&g);
    assert_true(g.tsc == old.end);
    assert_true(g.ns == pa_tsc_conv(&old, old.end));
    assert_true(g.ptsc == old.tsc && g.pns == old.ns && g.pmult == old.mult); /* for the fast path */
    assert_true(x1 == pa_tsc_conv(&old, t1));
    uint64_t t2 = __rdtsc();
    assert_true(pa_clock_ns() >= x1);
    assert_true(pa_clock_slow(t2) == pa_tsc_conv(&old, t2)); /* before g: the previous segment */
    assert_int_equal(atomic_load(&pa_tsc.seq), q0 + 2);
    /* back to the segment covering now, so later readers see a normal clock */
    while (!atomic_compare_exchange_strong(&pa_tsc.lock, &expect, 1))
        expect = 0;
    pa_tsc_publish(&pa_tsc, &orig);
    atomic_store(&pa_tsc.lock, 0);
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_follows_monotonic),
#if defined(__x86_64__)
        cmocka_unit_test(test_segment_math),
        cmocka_unit_test(test_stale_caller_keeps_segment),
        cmocka_unit_test(test_early_recalibration_keeps_rate),
        cmocka_unit_test(test_recalibration_continuous_at_end),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
