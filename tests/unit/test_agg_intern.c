/* test_agg_intern.c - string interning (exact bytes, ids > 0) and the id hash map. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "agg_internal.h"

static void test_same_bytes_same_id(void **state)
{
    (void)state;
    pa_intern_t in = { 0 };
    int is_new;
    uint32_t a = pa_intern_get(&in, "alpha", 5, &is_new);
    assert_true(a > 0);
    assert_int_equal(is_new, 1);
    char copy[] = "alpha";
    assert_int_equal(pa_intern_get(&in, copy, 5, &is_new), a);
    assert_int_equal(is_new, 0);
    assert_int_not_equal(pa_intern_get(&in, "alph", 4, &is_new), a); /* exact length */
    uint32_t empty = pa_intern_get(&in, "", 0, &is_new);
    assert_true(empty > 0);
    size_t len = 99;
    assert_non_null(pa_intern_str(&in, empty, &len));
    assert_int_equal(len, 0);
    assert_null(pa_intern_str(&in, 0, &len));
    assert_null(pa_intern_str(&in, 1000, &len));
    pa_intern_free(&in);
}

static void test_embedded_nul_and_ff(void **state)
{
    (void)state;
    pa_intern_t in = { 0 };
    int is_new;
    const char s1[] = { 'a', '\0', 'b' }, s2[] = { 'a', '\0', 'c' }, s3[] = { 'a', '\0' };
    const char s4[] = { (char)0xFF, '"', ',', '\n', '\t', '\\' };
    uint32_t i1 = pa_intern_get(&in, s1, 3, &is_new);
    uint32_t i2 = pa_intern_get(&in, s2, 3, &is_new);
    uint32_t i3 = pa_intern_get(&in, s3, 2, &is_new);
    uint32_t i4 = pa_intern_get(&in, "a", 1, &is_new);
    uint32_t i5 = pa_intern_get(&in, s4, 6, &is_new);
    assert_true(i1 != i2 && i1 != i3 && i2 != i3 && i3 != i4 && i1 != i4);
    size_t len;
    const char *p = pa_intern_str(&in, i1, &len);
    assert_int_equal(len, 3);
    assert_memory_equal(p, s1, 3);
    p = pa_intern_str(&in, i5, &len);
    assert_int_equal(len, 6);
    assert_memory_equal(p, s4, 6);
    assert_int_equal(pa_intern_get(&in, s1, 3, &is_new), i1);
    pa_intern_free(&in);
}

/* Many strings (table growth, arena chunks, one 100 KB string): ids dense, pointers stable. */
static void test_many_strings(void **state)
{
    (void)state;
    pa_intern_t in = { 0 };
    int is_new;
    char buf[32];
    uint32_t first = pa_intern_get(&in, "k0", 2, &is_new);
    const char *first_p = pa_intern_str(&in, first, NULL);
    char *big = malloc(100 * 1024);
    memset(big, 'x', 100 * 1024);
    uint32_t bid = pa_intern_get(&in, big, 100 * 1024, &is_new);
    for (int i = 1; i < 100000; i++) {
        int n = snprintf(buf, sizeof buf, "k%d", i);
        assert_int_equal(pa_intern_get(&in, buf, (size_t)n, &is_new), (uint32_t)i + 2);
    }
    assert_ptr_equal(pa_intern_str(&in, first, NULL), first_p);
    assert_int_equal(pa_intern_get(&in, "k77777", 6, &is_new), 77779);
    size_t len;
    assert_memory_equal(pa_intern_str(&in, bid, &len), big, 100 * 1024);
    assert_int_equal(len, 100 * 1024);
    free(big);
    pa_intern_free(&in);
}

/* Random puts/deletes against a plain array: backward-shift deletion keeps every key findable. */
static void test_map_random(void **state)
{
    (void)state;
    enum { N = 5000 };
    static uint32_t ref[N]; /* 0 = absent, else value */
    pa_map_t m = { 0 };
    uint64_t seed = 99;
    for (int step = 0; step < 200000; step++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t k = (seed >> 33) % N;
        if ((seed >> 20) & 1) {
            assert_int_equal(pa_map_put(&m, k + 1, (uint32_t)step + 1), 0);
            ref[k] = (uint32_t)step + 1;
        } else {
            assert_int_equal(pa_map_del(&m, k + 1), ref[k] != 0);
            ref[k] = 0;
        }
    }
    size_t count = 0;
    for (uint64_t k = 0; k < N; k++) {
        uint32_t *v = pa_map_get(&m, k + 1);
        if (ref[k]) {
            assert_non_null(v);
            assert_int_equal(*v, ref[k]);
            count++;
        } else {
            assert_null(v);
        }
    }
    assert_int_equal(m.n, count);
    pa_map_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_bytes_same_id),
        cmocka_unit_test(test_embedded_nul_and_ff),
        cmocka_unit_test(test_many_strings),
        cmocka_unit_test(test_map_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
