/* test_ze_clock.c - device tick -> host ns conversion: resolution, wrap (32 and 64 bits), before-reference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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

int main(void)
{
    const struct CMUnitTest t[] = { cmocka_unit_test(test_mask), cmocka_unit_test(test_resolution),
                                    cmocka_unit_test(test_wrap32), cmocka_unit_test(test_wrap64) };
    return cmocka_run_group_tests(t, NULL, NULL);
}
