/* test_clock.c - pa_clock_ns() (clock_gettime by default; TSC segments following CLOCK_MONOTONIC
 * when built with PA_CLOCK_TSC, off for now: a recalibration can leave them ms off): close to clock_gettime
 * through the warm-up and several recalibrations, monotonic on each of 4 threads, segment
 * conversion exact at its start and linear, a recalibration continuous with the old segment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <pthread.h>
#include <cmocka.h>

#include "../../common/pa_clock.h"

#define RUN_NS 250000000ull /* 5 segments after the warm-up */

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
    pthread_t t[4];
    res_t r[4] = {{0}};
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, reader, &r[i]), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(r[i].back, 0);
        assert_true(r[i].checked > 1000);
        /* generous for a loaded VM: a segment's error is ~0.1 us; 20 us would be a broken rate */
        assert_true(llabs(r[i].worst) < 20000);
    }
#if defined(__x86_64__)
    if (atomic_load(&pa_tsc.on) == 1)
        assert_true(atomic_load(&pa_tsc.seq) >= 3); /* the first segment and recalibrations */
#endif
}

#if defined(__x86_64__)
static void test_segment_math(void **s)
{
    (void)s;
    /* 2.5 GHz: 0.4 ns per tick = 0.4 * 2^32 */
    pa_tsc_seg_t g = {1000000, 5000000000ull, (uint64_t)(0.4 * 4294967296.0), 0};
    assert_true(pa_tsc_conv(&g, 1000000) == 5000000000ull);
    assert_true(llabs((long long)(pa_tsc_conv(&g, 1000000 + 2500000000ull) - 6000000000ull)) <= 1);
    assert_true(llabs((long long)(pa_tsc_conv(&g, 1000000 - 2500) - 4999999000ull)) <= 1); /* before the start */
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_follows_monotonic),
#if defined(__x86_64__)
        cmocka_unit_test(test_segment_math),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
