/* test_dmpack.c - packed device metric intervals (common/pa_dmpack.c): exact round trips of
 * integral, negative-delta, float32, float64, NaN and 2^53+ values; byte counts of a steady stream;
 * malformed data is refused, never over-read. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "pa_devmetrics.h"

static void round_trip(void **state)
{
    (void)state;
    enum { NM = 5, N = 4 };
    const double v[N][NM] = {
        {0, 100, 1.5, 9007199254740993.0, 1e300},
        {7, 50, -2.25, -3, 0.1},
        {1e15, 0, NAN, INFINITY, -0.0},
        {1e15 - 1, 9007199254740991.0, 3.0f, -9007199254740991.0, 42},
    };
    const uint64_t start[N] = {1000, 1100, 1100 + 90, 5000}, dur[N] = {100, 90, 0, 7};
    pa_dm_pack_t p;
    assert_int_equal(pa_dm_pack_init(&p, NM), 0);
    for (int i = 0; i < N; i++)
        assert_int_equal(pa_dm_pack_add(&p, start[i], dur[i], v[i]), 0);
    pa_dm_pack_finish(&p);
    assert_int_equal(p.n, N);
    assert_int_equal(p.base, 1000);
    assert_int_equal(p.prev_end, 5007);
    pa_dm_mstate_t prev[NM];
    pa_dm_unpack_t u;
    pa_dm_unpack_init(&u, p.buf, p.len, p.base, NM, prev);
    for (int i = 0; i < N; i++) {
        uint64_t s, d;
        double got[NM];
        assert_int_equal(pa_dm_unpack_next(&u, &s, &d, got), 1);
        assert_int_equal(s, start[i]);
        assert_int_equal(d, dur[i]);
        for (int k = 0; k < NM; k++) {
            if (isnan(v[i][k]))
                assert_true(isnan(got[k]));
            else
                assert_memory_equal(&got[k], &v[i][k], 8); /* bit-exact (-0.0 too) */
        }
    }
    uint64_t s, d;
    assert_int_equal(pa_dm_unpack_next(&u, &s, &d, NULL), 0);
    /* every truncation of the data gives fewer intervals (a cut at an interval's end reads as a
     * shorter chunk: readers compare with the row's count), never a read past the end */
    for (size_t cut = 0; cut < p.len; cut++) {
        pa_dm_unpack_init(&u, p.buf, cut, p.base, NM, prev);
        int r, n = 0;
        while ((r = pa_dm_unpack_next(&u, &s, &d, NULL)) == 1)
            n++;
        assert_true(n < N);
        assert_true(r == -1 || r == 0);
    }
    pa_dm_pack_free(&p);
}

/* A steady stream: tiling intervals of one duration, a timestamp metric advancing by the
 * duration, the others constant: runs of repeats (a few bytes for 1000 intervals), broken by one
 * interval with another value and resumed; decoded exactly, across the runs. */
static void steady_runs(void **state)
{
    (void)state;
    enum { NM = 26, N = 1000 };
    pa_dm_pack_t p;
    assert_int_equal(pa_dm_pack_init(&p, NM), 0);
    double v[N][NM];
    for (int i = 0; i < N; i++) {
        v[i][0] = 5000 + (double)i * 53333; /* QueryBeginTime-like */
        for (int k = 1; k < NM; k++)
            v[i][k] = k == 4 ? 12.5 : 1000 + k; /* a float metric too */
        if (i == 500)
            v[i][5] = 7;
        assert_int_equal(pa_dm_pack_add(&p, 5000 + (uint64_t)i * 53333, 53333, v[i]), 0);
    }
    pa_dm_pack_finish(&p);
    assert_int_equal(p.n, N);
    /* interval 0 and 1 in full (the second sets the steps), a run, 500, 501 (back: its step),
     * 502 (steps 0 again), a run: well under 3 bytes an interval */
    assert_true(p.len < 6 * (5 + 2 * NM));
    pa_dm_mstate_t st[NM];
    pa_dm_unpack_t u;
    pa_dm_unpack_init(&u, p.buf, p.len, p.base, NM, st);
    for (int i = 0; i < N; i++) {
        uint64_t s0, d0;
        double got[NM];
        assert_int_equal(pa_dm_unpack_next(&u, &s0, &d0, got), 1);
        assert_int_equal(s0, 5000 + (uint64_t)i * 53333);
        assert_int_equal(d0, 53333);
        assert_memory_equal(got, v[i], sizeof got);
    }
    uint64_t s0, d0;
    assert_int_equal(pa_dm_unpack_next(&u, &s0, &d0, NULL), 0);
    pa_dm_pack_reset(&p);
    assert_int_equal(p.n, 0);
    assert_int_equal(p.len, 0);
    assert_int_equal(pa_dm_pack_add(&p, 9, 1, v[0]), 0);
    assert_int_equal(p.base, 9);
    pa_dm_pack_free(&p);
}

/* Groups beyond 64 metrics (the old fixed-column layout's bound): 300 values an interval round
 * trip, some integral, some not. */
static void wide_group(void **state)
{
    (void)state;
    enum { NM = 300, N = 40 };
    static double v[N][NM];
    pa_dm_pack_t p;
    assert_int_equal(pa_dm_pack_init(&p, NM), 0);
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < NM; k++)
            v[i][k] = k % 3 ? (double)(k * i) : 0.25 * k + i;
        assert_int_equal(pa_dm_pack_add(&p, 100 + (uint64_t)i * 10, 10, v[i]), 0);
    }
    pa_dm_pack_finish(&p);
    static pa_dm_mstate_t st[NM];
    pa_dm_unpack_t u;
    pa_dm_unpack_init(&u, p.buf, p.len, p.base, NM, st);
    for (int i = 0; i < N; i++) {
        uint64_t s0, d0;
        static double got[NM];
        assert_int_equal(pa_dm_unpack_next(&u, &s0, &d0, got), 1);
        assert_int_equal(s0, 100 + (uint64_t)i * 10);
        assert_memory_equal(got, v[i], sizeof got);
    }
    pa_dm_pack_free(&p);
}

static void bad_header(void **state)
{
    (void)state;
    const uint8_t rep_first[] = {3}; /* a run of repeats before any interval */
    pa_dm_mstate_t st0[1];
    pa_dm_unpack_t u0;
    uint64_t s0, d0;
    pa_dm_unpack_init(&u0, rep_first, sizeof rep_first, 0, 1, st0);
    assert_int_equal(pa_dm_unpack_next(&u0, &s0, &d0, NULL), -1);
    const uint8_t data[] = {0, 0, 5}; /* value header 5: neither even, 1 nor 3 */
    pa_dm_mstate_t prev[1];
    pa_dm_unpack_t u;
    uint64_t s, d;
    double x;
    pa_dm_unpack_init(&u, data, sizeof data, 0, 1, prev);
    assert_int_equal(pa_dm_unpack_next(&u, &s, &d, &x), -1);
    const uint8_t endless[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80};
    pa_dm_unpack_init(&u, endless, sizeof endless, 0, 1, prev);
    assert_int_equal(pa_dm_unpack_next(&u, &s, &d, &x), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip),
        cmocka_unit_test(steady_runs),
        cmocka_unit_test(wide_group),
        cmocka_unit_test(bad_header),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
