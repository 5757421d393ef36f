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

/* The one-compare repeat test gives the metric-by-metric answer at its edges: a stepping value
 * reaching 2^53 (no longer integral-exact: written out, not repeated), -0.0 after +0.0 and the
 * reverse, NaN repeated bit for bit; every interval decodes bit-exact and the repeats that are
 * real are taken (the byte count). */
static void repeat_edges(void **state)
{
    (void)state;
    enum { NM = 4, N = 12 };
    const double big = 9007199254740992.0; /* 2^53 */
    double v[N][NM];
    for (int i = 0; i < N; i++) {
        v[i][0] = big - 6 + i;             /* steps by 1 through 2^53 - 1, then 2^53 and beyond */
        v[i][1] = i < 6 ? 0.0 : -0.0;      /* the sign flips once */
        v[i][2] = NAN;
        v[i][3] = i == 9 ? 0.0 : 3;        /* one interval another value */
    }
    pa_dm_pack_t p;
    assert_int_equal(pa_dm_pack_init(&p, NM), 0);
    for (int i = 0; i < N; i++)
        assert_int_equal(pa_dm_pack_add(&p, 100 + (uint64_t)i * 10, 10, v[i]), 0);
    pa_dm_pack_finish(&p);
    pa_dm_mstate_t st[NM];
    pa_dm_unpack_t u;
    pa_dm_unpack_init(&u, p.buf, p.len, p.base, NM, st);
    int runs = 0;
    for (int i = 0; i < N; i++) {
        uint64_t s0, d0;
        double got[NM];
        runs += u.rep > 0;
        assert_int_equal(pa_dm_unpack_next(&u, &s0, &d0, got), 1);
        assert_int_equal(s0, 100 + (uint64_t)i * 10);
        assert_true(isnan(got[2]));
        got[2] = v[i][2] = 0;
        assert_memory_equal(got, v[i], sizeof got);
    }
    assert_true(runs > 0); /* intervals 2..5 repeat 1 (2^53 - 4 .. 2^53 - 1 by 1, +0.0, NaN, 3) */
    pa_dm_pack_free(&p);
}

/* pa_dm_unpack_keep: only the kept metrics are written, with the values a full decode gives,
 * across explicit intervals, float values and runs of repeats. */
static void keep_some(void **state)
{
    (void)state;
    enum { NM = 6, N = 50 };
    double v[N][NM];
    pa_dm_pack_t p;
    assert_int_equal(pa_dm_pack_init(&p, NM), 0);
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < NM; k++)
            v[i][k] = k == 1 ? 0.5 + (i / 10) : k == 4 ? 1e300 : (double)(k * 1000 + (i / 7) * k) + (k == 0 ? i : 0);
        assert_int_equal(pa_dm_pack_add(&p, 10 + (uint64_t)i * 5, 5, v[i]), 0);
    }
    pa_dm_pack_finish(&p);
    const uint8_t keep[NM] = {0, 1, 0, 1, 0, 1};
    pa_dm_mstate_t st[NM];
    pa_dm_unpack_t u;
    pa_dm_unpack_init(&u, p.buf, p.len, p.base, NM, st);
    pa_dm_unpack_keep(&u, keep);
    for (int i = 0; i < N; i++) {
        uint64_t s0, d0;
        double got[NM] = {-1, -1, -1, -1, -1, -1};
        assert_int_equal(pa_dm_unpack_next(&u, &s0, &d0, got), 1);
        assert_int_equal(s0, 10 + (uint64_t)i * 5);
        for (int k = 0; k < NM; k++)
            assert_true(keep[k] ? got[k] == v[i][k] : got[k] == -1);
    }
    uint64_t s0, d0;
    assert_int_equal(pa_dm_unpack_next(&u, &s0, &d0, NULL), 0);
    pa_dm_pack_free(&p);
}

/* ---- the encoder's fast paths (one-compare repeats, unchanged values) against the format's
 * rules written out metric by metric (pa_devmetrics.h): the same bytes for the same stream ---- */
typedef struct ref_pack { uint8_t buf[1 << 16]; size_t len; uint32_t n, rep; uint64_t prev_end, prev_dur;
                          pa_dm_mstate_t st[8]; } ref_pack_t;

static uint64_t rzz(int64_t x) { return ((uint64_t)x << 1) ^ (uint64_t)(x >> 63); }
static void rvar(ref_pack_t *r, uint64_t v)
{
    while (v >= 0x80) {
        r->buf[r->len++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    r->buf[r->len++] = (uint8_t)v;
}
static int ris_int(double x)
{
    return x < 9007199254740992.0 && x > -9007199254740992.0 && x == (double)(int64_t)x && !(x == 0 && signbit(x));
}
static void ref_add(ref_pack_t *r, uint32_t nm, uint64_t start, uint64_t dur, const double *v)
{
    int rep = r->n && start == r->prev_end && dur == r->prev_dur;
    for (uint32_t k = 0; rep && k < nm; k++) {
        uint64_t b;
        memcpy(&b, &v[k], 8);
        rep = r->st[k].is_float ? b == r->st[k].bits : ris_int(v[k]) && (int64_t)v[k] == r->st[k].prev + r->st[k].step;
    }
    if (rep) {
        for (uint32_t k = 0; k < nm; k++)
            if (!r->st[k].is_float)
                r->st[k].prev += r->st[k].step;
        r->rep++, r->n++, r->prev_end = start + dur;
        return;
    }
    if (r->rep)
        rvar(r, ((uint64_t)r->rep << 1) | 1);
    r->rep = 0;
    if (!r->n)
        r->prev_end = start;
    rvar(r, rzz((int64_t)(start - r->prev_end)) << 1);
    rvar(r, rzz((int64_t)(dur - r->prev_dur)));
    for (uint32_t k = 0; k < nm; k++) {
        pa_dm_mstate_t *s = &r->st[k];
        double x = v[k];
        if (ris_int(x)) {
            int64_t iv = (int64_t)x;
            rvar(r, rzz(iv - s->prev) << 1);
            s->step = s->is_float ? 0 : iv - s->prev;
            s->prev = iv, s->is_float = 0;
        } else {
            if ((double)(float)x == x || x != x) {
                float f = (float)x;
                r->buf[r->len++] = 1;
                memcpy(r->buf + r->len, &f, 4);
                r->len += 4;
                x = f;
            } else {
                r->buf[r->len++] = 3;
                memcpy(r->buf + r->len, &x, 8);
                r->len += 8;
            }
            memcpy(&s->bits, &x, 8);
            s->is_float = 1;
        }
    }
    r->prev_end = start + dur, r->prev_dur = dur, r->n++;
}

/* A stream of chunks (each packed, compared, decoded, then the pack reset and reused) of
 * patterns a device gives: constant counters, a timestamp stepping by one period or alternating
 * +-1 (ticks to ns), a counter alternating between two values, percentages as float32, values
 * reaching 2^53, -0.0 and NaN now and then, a gap in the timeline. */
static void same_bytes(void **state)
{
    (void)state;
    enum { NM = 8, CHUNKS = 40, N = 300 };
    static ref_pack_t ref;
    pa_dm_pack_t p;
    assert_int_equal(pa_dm_pack_init(&p, NM), 0);
    uint32_t seed = 12345;
    uint64_t t = 1000, qb = 77;
    for (int c = 0; c < CHUNKS; c++) {
        memset(&ref, 0, sizeof ref);
        double v[N][NM];
        for (int i = 0; i < N; i++) {
            seed = seed * 1103515245u + 12345u;
            uint32_t r = seed >> 16, mode = (uint32_t)(c % 5);
            v[i][0] = (double)qb;
            v[i][1] = 53333;
            v[i][2] = mode == 1 ? 85333 + (i & 1) : 85333;
            v[i][3] = mode == 2 && r % 7 == 0 ? (double)(r % 100) : 0;
            v[i][4] = mode == 3 ? (float)(r % 1000) / 8.0f : 0.0;
            v[i][5] = mode == 4 ? 9007199254740992.0 - 40 + i / 2 * 3 : (double)(i / 50);
            v[i][6] = r % 97 == 0 ? -0.0 : r % 89 == 0 ? NAN : 1e300 * (r % 3 == 0);
            v[i][7] = (double)(i / 10 * 5);
            uint64_t d = 53333, st = t + (r % 211 == 0 ? 999 : 0);
            assert_int_equal(pa_dm_pack_add(&p, st, d, v[i]), 0);
            ref_add(&ref, NM, st, d, v[i]);
            t = st + d;
            qb += 53333 + (c % 2 ? (uint64_t)(i % 3 == 0) : 0);
        }
        pa_dm_pack_finish(&p);
        if (ref.rep)
            rvar(&ref, ((uint64_t)ref.rep << 1) | 1);
        assert_int_equal(p.len, ref.len);
        assert_memory_equal(p.buf, ref.buf, ref.len);
        pa_dm_mstate_t ms[NM];
        pa_dm_unpack_t u;
        pa_dm_unpack_init(&u, p.buf, p.len, p.base, NM, ms);
        for (int i = 0; i < N; i++) {
            uint64_t s0, d0;
            double got[NM];
            assert_int_equal(pa_dm_unpack_next(&u, &s0, &d0, got), 1);
            for (int k = 0; k < NM; k++)
                assert_true(isnan(v[i][k]) ? isnan(got[k]) : memcmp(&got[k], &v[i][k], 8) == 0);
        }
        pa_dm_pack_reset(&p);
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
        cmocka_unit_test(repeat_edges),
        cmocka_unit_test(keep_some),
        cmocka_unit_test(same_bytes),
        cmocka_unit_test(bad_header),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
