/* test_ze_clock.c - device tick -> host ns conversion: resolution, wrap (32 and 64 bits), before-reference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <cmocka.h>

#include "../../collector/ze.h"

static void test_mask(void **s)
{
    (void)s;
    assert_int_equal(pa_ze_ticks_mask(32), 0xffffffffull);
    assert_true(pa_ze_ticks_mask(64) == ~0ull);
    assert_true(pa_ze_ticks_mask(0) == ~0ull);
    assert_int_equal(pa_ze_ticks_mask(36), 0xfffffffffull);
}

static void test_resolution(void **s)
{
    (void)s;
    /* 19.2 MHz: 192 ticks = 10000 ns after the reference */
    pa_ze_clock_t c = { 19200000u, 36, 1000000, 5000 };
    assert_int_equal(pa_ze_ticks_to_ns(&c, 5192), 1010000);
    /* 96 ticks before the reference: 5000 ns earlier */
    assert_int_equal(pa_ze_ticks_to_ns(&c, 4904), 995000);
}

static void test_wrap32(void **s)
{
    (void)s;
    /* 1 GHz, 32 bits: reference 1000 ticks before the wrap; kernel from 500 before to 1.5 ms after */
    pa_ze_clock_t c = { 1000000000u, 32, 10000000, 0xffffffffull - 999 };
    uint64_t start = 0xffffffffull - 499, end = 1500000;
    assert_int_equal(pa_ze_ticks_to_ns(&c, start), 10000500);
    assert_int_equal(pa_ze_span_ns(&c, start, end), 1500500);
    assert_int_equal(pa_ze_ticks_to_ns(&c, end), 10000000 + 1000 + 1500000);
}

static void test_wrap64(void **s)
{
    (void)s;
    pa_ze_clock_t c = { 1000000000u, 64, 500, ~0ull - 9 };
    assert_int_equal(pa_ze_span_ns(&c, ~0ull - 4, 5), 10);
    assert_int_equal(pa_ze_ticks_to_ns(&c, 5), 500 + 15);
}

/* Seqlock: a reader finding a publication in progress (odd seq) does not wait for it and gets
 * the current copy; after it, the new one. */
static void test_sync_no_wait(void **st)
{
    (void)st;
    static pa_ze_clock_sync_t s;
    pa_ze_clock_t a = { 1000, 32, 5, 6 }, out;
    pa_ze_clock_publish(&s, &a);
    atomic_fetch_add(&s.seq, 1); /* a writer preempted mid-publication */
    pa_ze_clock_load(&s, &out);
    assert_int_equal(out.ref_host_ns, 5);
    assert_int_equal(out.ref_dev_ticks, 6);
    atomic_fetch_add(&s.seq, 1);
    pa_ze_clock_t b = { 1000, 32, 7, 8 };
    pa_ze_clock_publish(&s, &b);
    pa_ze_clock_load(&s, &out);
    assert_int_equal(out.ref_host_ns, 7);
    assert_int_equal(out.ref_dev_ticks, 8);
    assert_int_equal(atomic_load(&s.seq), 6);
}

/* Seqlock under contention: every published pair has ticks = 3 * host + 1 and timer_hz = host;
 * a reader must never see a mix of two publications. */
static pa_ze_clock_sync_t shared;
static _Atomic int stop;

static void *publisher(void *arg)
{
    (void)arg;
    for (uint64_t n = 1; !atomic_load_explicit(&stop, memory_order_relaxed); n++) {
        pa_ze_clock_t c = { n, 32, n, 3 * n + 1 };
        pa_ze_clock_publish(&shared, &c);
    }
    return NULL;
}

static void test_sync_never_torn(void **st)
{
    (void)st;
    pa_ze_clock_t c0 = { 0, 32, 0, 1 };
    pa_ze_clock_publish(&shared, &c0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, publisher, NULL), 0);
    unsigned torn = 0;
    for (int i = 0; i < 2000000; i++) {
        pa_ze_clock_t c;
        pa_ze_clock_load(&shared, &c);
        torn += c.ref_dev_ticks != 3 * c.ref_host_ns + 1 || c.timer_hz != c.ref_host_ns;
    }
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    assert_int_equal(torn, 0);
}

int main(void)
{
    const struct CMUnitTest t[] = { cmocka_unit_test(test_mask), cmocka_unit_test(test_resolution),
                                    cmocka_unit_test(test_wrap32), cmocka_unit_test(test_wrap64),
                                    cmocka_unit_test(test_sync_no_wait), cmocka_unit_test(test_sync_never_torn) };
    return cmocka_run_group_tests(t, NULL, NULL);
}
