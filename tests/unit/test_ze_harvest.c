/* test_ze_harvest.c - the harvest-list table (collector/ze_harvest.c): references per slot, the
 * last drop hands back the slot's own list, a full table refuses, and threads claiming and
 * dropping slots concurrently each get back exactly the list they put, once, although the
 * slot is reused by another thread right after every last drop (the test's hook yields there). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define PA_ZE_HARVEST_AFTER_DROP() sched_yield()
#include "../../collector/ze_harvest.c"

#define H(x) ((ze_command_list_handle_t)(uintptr_t)(x))

static void test_refs(void **state)
{
    (void)state;
    assert_null(pa_ze_harvest_drop(-1));
    int s = pa_ze_harvest_put(H(0x100), 3);
    assert_int_equal(s, 0);
    assert_int_equal(pa_ze_harvest_put(H(0x200), 1), 1);  /* slot 0 is taken */
    assert_null(pa_ze_harvest_drop(s));
    pa_ze_harvest_ref(s);
    assert_null(pa_ze_harvest_drop(s));
    assert_null(pa_ze_harvest_drop(s));
    assert_ptr_equal(pa_ze_harvest_drop(s), H(0x100));   /* 3 + 1 references, the 4th drop */
    assert_int_equal(pa_ze_harvest_put(H(0x300), 5), 0);  /* lowest free slot again */
    pa_ze_harvest_set(0, 1);
    assert_ptr_equal(pa_ze_harvest_drop(0), H(0x300));
    assert_ptr_equal(pa_ze_harvest_drop(1), H(0x200));
}

static void test_full(void **state)
{
    (void)state;
    for (int i = 0; i < PA_ZE_MAX_HARVESTS; i++)
        assert_int_equal(pa_ze_harvest_put(H(0x1000 + i), 1), i);
    assert_int_equal(pa_ze_harvest_put(H(0x9999), 1), -1);
    assert_ptr_equal(pa_ze_harvest_drop(17), H(0x1000 + 17));
    assert_int_equal(pa_ze_harvest_put(H(0x9999), 1), 17);
    assert_ptr_equal(pa_ze_harvest_drop(17), H(0x9999));
    for (int i = 0; i < PA_ZE_MAX_HARVESTS; i++)
        if (i != 17)
            assert_ptr_equal(pa_ze_harvest_drop(i), H(0x1000 + i));
}

#define NTHREADS 4
#define ITERS 20000
static _Atomic uint64_t wrong, missing, full;

/* As the agent's threads do: put a list with two references (two flights), drop both; the
 * second drop must return this thread's own list. Every thread starts at slot 0, so the slot a
 * drop frees is claimed by another thread during the hook's yield. */
static void *churn(void *arg)
{
    uintptr_t t = (uintptr_t)arg;
    for (uintptr_t k = 1; k <= ITERS; k++) {
        ze_command_list_handle_t mine = H(t << 32 | k);
        int s = pa_ze_harvest_put(mine, 2);
        if (s < 0) {
            atomic_fetch_add(&full, 1);
            continue;
        }
        ze_command_list_handle_t a = pa_ze_harvest_drop(s), b = pa_ze_harvest_drop(s);
        if (a != NULL || (b != mine && b != NULL))
            atomic_fetch_add(&wrong, 1);   /* another thread's list: destroyed under its feet */
        else if (b == NULL)
            atomic_fetch_add(&missing, 1); /* own list never handed back: leaked */
    }
    return NULL;
}

static void test_concurrent(void **state)
{
    (void)state;
    pthread_t th[NTHREADS];
    for (uintptr_t i = 0; i < NTHREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, churn, (void *)(i + 1)), 0);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(atomic_load(&full), 0);
    assert_int_equal(atomic_load(&wrong), 0);
    assert_int_equal(atomic_load(&missing), 0);
    for (int i = 0; i < PA_ZE_MAX_HARVESTS; i++)  /* every slot free again */
        assert_int_equal(atomic_load(&harvests[i].refs), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refs),
        cmocka_unit_test(test_full),
        cmocka_unit_test(test_concurrent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
