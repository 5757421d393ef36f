/* test_stats.c - online statistics: median (odd/even), stddev (population, single sample 0), budget. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <cmocka.h>

#include "agg_internal.h"

static pa_stat_t stat_of(const uint64_t *v, size_t n)
{
    pa_stat_t st = { 0 };
    for (size_t i = 0; i < n; i++)
        pa_stat_add(&st, v[i]);
    return st;
}

static void test_known_stddev(void **state)
{
    (void)state;
    uint64_t v[] = { 2, 4, 4, 4, 5, 5, 7, 9 };
    pa_stat_t st = stat_of(v, 8);
    assert_int_equal(st.count, 8);
    assert_int_equal(st.total, 40);
    assert_int_equal(st.min, 2);
    assert_int_equal(st.max, 9);
    assert_true(st.mean == 5.0);
    /* sum of squared deviations 32, n = 8: population sqrt(32/8) = 2 exactly (spec 2.3.9 example
     * is the population formula; the sample one would give 2.138) */
    assert_true(pa_stat_stddev(&st) > 1.999999 && pa_stat_stddev(&st) < 2.000001);
    assert_true(pa_stat_median_u64(v, 8) == 4.5); /* middle values 4 and 5 */
}

static void test_single_sample(void **state)
{
    (void)state;
    uint64_t v[] = { 123456789012ull };
    pa_stat_t st = stat_of(v, 1);
    assert_true(pa_stat_stddev(&st) == 0.0);
    assert_int_equal(st.min, 123456789012ull);
    assert_int_equal(st.max, 123456789012ull);
    assert_true(pa_stat_median_u64(v, 1) == 123456789012.0);
}

static void test_median_odd_even(void **state)
{
    (void)state;
    uint64_t odd[] = { 50, 10, 30 };
    assert_true(pa_stat_median_u64(odd, 3) == 30.0);
    uint64_t even[] = { 40, 10, 30, 20 };
    assert_true(pa_stat_median_u64(even, 4) == 25.0);
    uint64_t two[] = { 7, 8 };
    assert_true(pa_stat_median_u64(two, 2) == 7.5);
    uint64_t same[] = { 5, 5, 5, 5, 5, 5 };
    assert_true(pa_stat_median_u64(same, 6) == 5.0);
    assert_true(pa_stat_median_u64(NULL, 0) == 0.0);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Quickselect against a full sort on many shapes: random, sorted, reversed, few distinct. */
static void test_median_matches_sort(void **state)
{
    (void)state;
    uint64_t seed = 12345;
    for (int shape = 0; shape < 4; shape++) {
        for (size_t n = 1; n < 2000; n += 37) {
            uint64_t *v = malloc(n * sizeof *v), *w = malloc(n * sizeof *w);
            for (size_t i = 0; i < n; i++) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                v[i] = shape == 0 ? seed >> 20 : shape == 1 ? i : shape == 2 ? n - i : (seed >> 60);
                w[i] = v[i];
            }
            qsort(w, n, sizeof *w, cmp_u64);
            double want = n % 2 ? (double)w[n / 2] : ((double)w[n / 2 - 1] + (double)w[n / 2]) / 2.0;
            assert_true(pa_stat_median_u64(v, n) == want);
            free(v);
            free(w);
        }
    }
}

static void test_statset_budget(void **state)
{
    (void)state;
    pa_statset_t s = { .budget = 4 };
    long a = pa_statset_row(&s, PA_CAT_OSRT, 0, 1);
    long b = pa_statset_row(&s, PA_CAT_OSRT, 0, 2);
    assert_int_equal(pa_statset_row(&s, PA_CAT_OSRT, 0, 1), a); /* same key, same row */
    assert_int_not_equal(a, b);
    for (uint64_t v = 1; v <= 5; v++) /* 5 samples > budget 4: row a gives up its samples */
        pa_statset_add(&s, (size_t)a, v * 10);
    assert_int_equal(s.used, 0);
    pa_statset_add(&s, (size_t)b, 7); /* budget came back: b stays exact */
    pa_statset_add(&s, (size_t)b, 1);
    pa_statset_add(&s, (size_t)b, 100);
    pa_statset_finish(&s);
    assert_int_equal(s.rows[a].st.median_exact, 0);
    assert_int_equal(s.rows[a].st.count, 5);
    assert_int_equal(s.rows[a].st.total, 150);
    assert_int_equal(s.rows[b].st.median_exact, 1);
    assert_true(s.rows[b].st.median == 7.0);
    pa_statset_free(&s);
}

/* Kept samples are 32-bit: values up to UINT32_MAX stay exact (even count: mean of the two
 * middle values); a larger one makes the row inexact, its count/total/min/max still exact. */
static void test_statset_32bit_samples(void **state)
{
    (void)state;
    pa_statset_t s = { .budget = 1000 };
    long a = pa_statset_row(&s, PA_CAT_OSRT, 0, 1);
    long b = pa_statset_row(&s, PA_CAT_OSRT, 0, 2);
    pa_statset_add(&s, (size_t)a, UINT32_MAX);
    pa_statset_add(&s, (size_t)a, UINT32_MAX - 1);
    pa_statset_add(&s, (size_t)b, 5);
    pa_statset_add(&s, (size_t)b, (uint64_t)UINT32_MAX + 1);
    pa_statset_add(&s, (size_t)b, 7);
    pa_statset_finish(&s);
    assert_int_equal(s.rows[a].st.median_exact, 1);
    assert_true(s.rows[a].st.median == (double)UINT32_MAX - 0.5);
    assert_int_equal(s.rows[b].st.median_exact, 0);
    assert_int_equal(s.rows[b].st.count, 3);
    assert_true(s.rows[b].st.total == (uint64_t)UINT32_MAX + 13);
    assert_int_equal(s.rows[b].st.min, 5);
    assert_true(s.rows[b].st.max == (uint64_t)UINT32_MAX + 1);
    assert_int_equal(s.used, 4); /* a reserved 4 (its first allocation); b gave its back */
    pa_statset_free(&s);
}

/* Rows growing together never keep more samples than the budget (they each reserved the same
 * remaining budget, the kept samples passed it and then grew without bound: 4.5 M of 64 K). */
static void test_statset_budget_shared(void **state)
{
    (void)state;
    pa_statset_t s = { .budget = 65536 };
    long r[4];
    for (int i = 0; i < 4; i++)
        r[i] = pa_statset_row(&s, PA_CAT_HGTX_RANGE, 0, (uint32_t)i + 1);
    size_t peak = 0;
    for (uint64_t n = 0; n < 200000; n++)
        for (int i = 0; i < 4; i++) {
            pa_statset_add(&s, (size_t)r[i], 50 + (n * 7 + (uint64_t)i) % 60);
            size_t kept = 0;
            for (int j = 0; j < 4; j++)
                kept += s.rows[r[j]].cap;
            peak = kept > peak ? kept : peak;
        }
    pa_statset_finish(&s);
    assert_true(peak <= 65536);
    assert_true(s.used <= 65536);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(s.rows[r[i]].st.count, 200000);
        assert_int_equal(s.rows[r[i]].st.median_exact, 0); /* 200 k samples each > 64 K */
    }
    pa_statset_free(&s);
}

/* Large rows (the finish counts digits instead of quickselect): median, mean and m2 against a
 * sort and a two-pass long double on shapes with 1, 2 and 3 digit passes, odd and even counts,
 * duplicates around the middle, values up to UINT32_MAX. */
static void test_statset_large_rows(void **state)
{
    (void)state;
    uint64_t seed = 777;
    const size_t ns[] = { 2048, 2049, 5000, 65537, 100000 };
    for (int shape = 0; shape < 6; shape++)
        for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
            size_t n = ns[t];
            pa_statset_t s = { .budget = 1u << 20 };
            long r = pa_statset_row(&s, PA_CAT_ZE_API, 0, 1);
            uint64_t *w = malloc(n * sizeof *w);
            for (size_t i = 0; i < n; i++) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                uint64_t x = shape == 0 ? seed >> 32                       /* full 32 bits: 3 passes */
                           : shape == 1 ? 100 + (seed >> 58)               /* few distinct, 1 pass */
                           : shape == 2 ? (seed >> 44)                     /* 20 bits: 2 passes */
                           : shape == 3 ? 42                               /* all equal */
                           : shape == 4 ? (i % 2 ? UINT32_MAX : UINT32_MAX - (seed >> 60))
                                        : (i < n / 2 ? 1000 : 3000);       /* the middle splits */
                w[i] = x;
                pa_statset_add(&s, (size_t)r, x);
            }
            pa_statset_finish(&s);
            qsort(w, n, sizeof *w, cmp_u64);
            double want = n % 2 ? (double)w[n / 2] : ((double)w[n / 2 - 1] + (double)w[n / 2]) / 2.0;
            const pa_stat_t *st = &s.rows[r].st;
            assert_int_equal(st->median_exact, 1);
            assert_true(st->median == want);
            long double sum = 0, m2 = 0;
            for (size_t i = 0; i < n; i++)
                sum += w[i];
            long double mean = sum / n;
            for (size_t i = 0; i < n; i++)
                m2 += (w[i] - mean) * (w[i] - mean);
            assert_true(fabsl(st->mean - mean) <= 1e-12L * (mean + 1));
            assert_true(fabsl(st->m2 - m2) <= 1e-9L * (m2 + 1));
            free(w);
            pa_statset_free(&s);
        }
}

/* A row past the budget keeps shifted sums: its mean and stddev still match the exact ones
 * (two-pass long double over every sample) to 1e-9, also when the values sit far from zero. */
static void test_statset_overflow_moments(void **state)
{
    (void)state;
    for (int base = 0; base < 2; base++) {
        pa_statset_t s = { .budget = 1000 };
        long r = pa_statset_row(&s, PA_CAT_OSRT, 0, 1);
        size_t n = 300000;
        uint64_t *w = malloc(n * sizeof *w), seed = 99;
        for (size_t i = 0; i < n; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            w[i] = (base ? 4000000000ull : 0) + 5000 + (seed >> 54);
            pa_statset_add(&s, (size_t)r, w[i]);
        }
        pa_statset_finish(&s);
        const pa_stat_t *st = &s.rows[r].st;
        assert_int_equal(st->median_exact, 0);
        assert_int_equal(st->count, n);
        long double sum = 0, m2 = 0;
        for (size_t i = 0; i < n; i++)
            sum += w[i];
        long double mean = sum / n;
        for (size_t i = 0; i < n; i++)
            m2 += (w[i] - mean) * (w[i] - mean);
        assert_true(fabsl(st->mean - mean) <= 1e-9L * mean);
        assert_true(fabsl(pa_stat_stddev(st) - sqrtl(m2 / n)) <= 1e-9L * sqrtl(m2 / n));
        free(w);
        pa_statset_free(&s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_stddev),       cmocka_unit_test(test_single_sample),
        cmocka_unit_test(test_median_odd_even),    cmocka_unit_test(test_median_matches_sort),
        cmocka_unit_test(test_statset_budget),     cmocka_unit_test(test_statset_32bit_samples),
        cmocka_unit_test(test_statset_budget_shared), cmocka_unit_test(test_statset_large_rows),
        cmocka_unit_test(test_statset_overflow_moments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
