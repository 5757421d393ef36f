/* test_ze_evmap.c - the application event -> pool table (collector/ze_tables.c): lookups, a
 * handle put again takes its new pool, a full window refuses and a freed slot in it is reused,
 * a pool's destroy forgets exactly its events, and threads putting, reading and deleting their
 * own events at once always read their own pool. */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../collector/ze_tables.c"

#define P(x) ((const void *)(uintptr_t)(x))

static void test_basic(void **state)
{
    (void)state;
    assert_null(pa_ze_evmap_get(P(0x1000)));
    assert_int_equal(pa_ze_evmap_put(P(0x1000), P(0xa0)), 0);
    assert_int_equal(pa_ze_evmap_put(P(0x1010), P(0xb0)), 0);
    assert_ptr_equal(pa_ze_evmap_get(P(0x1000)), P(0xa0));
    assert_ptr_equal(pa_ze_evmap_get(P(0x1010)), P(0xb0));
    assert_null(pa_ze_evmap_get(P(0x1020)));
    /* the handle reused for an event of another pool (its destroy never seen) */
    assert_int_equal(pa_ze_evmap_put(P(0x1000), P(0xc0)), 0);
    assert_ptr_equal(pa_ze_evmap_get(P(0x1000)), P(0xc0));
    pa_ze_evmap_del(P(0x1000));
    assert_null(pa_ze_evmap_get(P(0x1000)));
    assert_ptr_equal(pa_ze_evmap_get(P(0x1010)), P(0xb0));
    pa_ze_evmap_del(P(0x1010));
    pa_ze_evmap_del(P(0x1010)); /* twice: nothing */
    assert_null(pa_ze_evmap_get(P(0x1010)));
    /* refused: NULL handles and pools */
    assert_int_equal(pa_ze_evmap_put(NULL, P(0xa0)), -1);
    assert_int_equal(pa_ze_evmap_put(P(0x1000), NULL), -1);
    assert_null(pa_ze_evmap_get(NULL));
}

static void test_window(void **state)
{
    (void)state;
    /* PA_ZE_EV_WINDOW + 1 handles that all hash to one slot */
    uintptr_t h[PA_ZE_EV_WINDOW + 1];
    uint32_t n = 0, want = ev_slot_of(0x7000000);
    for (uintptr_t k = 0x7000000; n < PA_ZE_EV_WINDOW + 1; k += 8)
        if (ev_slot_of(k) == want)
            h[n++] = k;
    for (uint32_t i = 0; i < PA_ZE_EV_WINDOW; i++)
        assert_int_equal(pa_ze_evmap_put(P(h[i]), P(0x100 + i)), 0);
    assert_int_equal(pa_ze_evmap_put(P(h[PA_ZE_EV_WINDOW]), P(0x999)), -1); /* its window is full */
    assert_null(pa_ze_evmap_get(P(h[PA_ZE_EV_WINDOW])));
    pa_ze_evmap_del(P(h[10]));
    assert_int_equal(pa_ze_evmap_put(P(h[PA_ZE_EV_WINDOW]), P(0x999)), 0); /* the freed slot */
    for (uint32_t i = 0; i < PA_ZE_EV_WINDOW; i++)
        assert_ptr_equal(pa_ze_evmap_get(P(h[i])), i == 10 ? NULL : P(0x100 + i));
    assert_ptr_equal(pa_ze_evmap_get(P(h[PA_ZE_EV_WINDOW])), P(0x999));
    for (uint32_t i = 0; i < PA_ZE_EV_SLOTS; i++) /* the slots a pool's destroy visits: exactly the used ones */
        assert_int_equal(atomic_load(&ev_keys[i]) > PA_ZE_TOMB, (int)(atomic_load(&ev_used[i / 64]) >> (i % 64) & 1));
    /* a pool's destroy: its events only (the window's events are of pools 0x100..) */
    assert_int_equal(pa_ze_evmap_put(P(0x2000), P(0x100)), 0);
    assert_int_equal(pa_ze_evmap_put(P(0x2008), P(0x101)), 0);
    assert_int_equal(pa_ze_evmap_del_pool(P(0x100)), 2);
    assert_null(pa_ze_evmap_get(P(h[0])));
    assert_null(pa_ze_evmap_get(P(0x2000)));
    assert_ptr_equal(pa_ze_evmap_get(P(0x2008)), P(0x101));
    assert_ptr_equal(pa_ze_evmap_get(P(h[1])), P(0x101));
    assert_int_equal(pa_ze_evmap_del_pool(P(0x100)), 0);
    for (uint32_t i = 1; i <= PA_ZE_EV_WINDOW; i++)
        pa_ze_evmap_del(P(h[i]));
    pa_ze_evmap_del(P(0x2008));
    assert_int_equal(pa_ze_evmap_del_pool(P(0x101)), 0);
}

#define THREADS 4
#define ROUNDS 20000
#define PER 256
static _Atomic int bad;

static void *churn(void *arg)
{
    uintptr_t t = (uintptr_t)arg, base = 0x10000000 + t * 0x1000000;
    for (int r = 0; r < ROUNDS; r++) {
        uintptr_t ev = base + (uintptr_t)(r % PER) * 16, pool = 0x5000 + t * 0x100 + (uintptr_t)(r % 7);
        if (pa_ze_evmap_put(P(ev), P(pool)) != 0 || pa_ze_evmap_get(P(ev)) != P(pool))
            atomic_fetch_add(&bad, 1);
        if (r % 3 == 0) {
            pa_ze_evmap_del(P(ev));
            if (pa_ze_evmap_get(P(ev)) != NULL)
                atomic_fetch_add(&bad, 1);
        }
    }
    for (int i = 0; i < PER; i++)
        pa_ze_evmap_del(P(base + (uintptr_t)i * 16));
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    pthread_t th[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, churn, (void *)i), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(atomic_load(&bad), 0);
    uint32_t left = 0, bits = 0;
    for (uint32_t i = 0; i < PA_ZE_EV_SLOTS; i++)
        left += atomic_load(&ev_keys[i]) > PA_ZE_TOMB;
    for (uint32_t w = 0; w < PA_ZE_EV_SLOTS / 64; w++)
        bits += (uint32_t)__builtin_popcountll(atomic_load(&ev_used[w]));
    assert_int_equal(left, 0);
    assert_int_equal(bits, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic),
        cmocka_unit_test(test_window),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
