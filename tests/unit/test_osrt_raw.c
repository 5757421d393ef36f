/* test_osrt_raw.c - OSRT fallbacks used while dlsym runs: EDEADLK for an owned error-checking
 * mutex, ETIMEDOUT after abstime on the condition's clock, EINVAL/EPERM like glibc. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>

#include "collector.h"

static void errorcheck_init(pthread_mutex_t *m)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(m, &a);
    pthread_mutexattr_destroy(&a);
}

static void cond_init(pthread_cond_t *c, clockid_t clk)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, clk);
    pthread_cond_init(c, &a);
    pthread_condattr_destroy(&a);
}

static struct timespec at(clockid_t clk, long sec)
{
    struct timespec t;
    clock_gettime(clk, &t);
    t.tv_sec += sec;
    return t;
}

static void test_mutex_deadlock_reported(void **s)
{
    (void)s;
    pthread_mutex_t m;
    errorcheck_init(&m);
    assert_int_equal(pa_osrt_raw_mutex_lock(&m), 0);
    assert_int_equal(pa_osrt_raw_mutex_lock(&m), EDEADLK); /* used to spin forever */
    assert_int_equal(pthread_mutex_unlock(&m), 0);         /* still held once */
    assert_int_equal(pthread_mutex_unlock(&m), EPERM);
    pthread_mutex_destroy(&m);
}

static void test_cond_timeout_realtime(void **s)
{
    (void)s;
    pthread_mutex_t m;
    pthread_cond_t c;
    errorcheck_init(&m);
    cond_init(&c, CLOCK_REALTIME);
    pthread_mutex_lock(&m);
    struct timespec past = at(CLOCK_REALTIME, -1), future = at(CLOCK_REALTIME, 60);
    assert_int_equal(pa_osrt_raw_cond_wait(&c, &m, &past), ETIMEDOUT);
    assert_int_equal(pa_osrt_raw_cond_wait(&c, &m, &future), 0); /* a spurious wake-up */
    assert_int_equal(pa_osrt_raw_cond_wait(&c, &m, NULL), 0);
    struct timespec bad = {future.tv_sec, 1000000000L};
    assert_int_equal(pa_osrt_raw_cond_wait(&c, &m, &bad), EINVAL);
    assert_int_equal(pthread_mutex_unlock(&m), 0); /* held after every return */
    assert_int_equal(pa_osrt_raw_cond_wait(&c, &m, NULL), EPERM); /* not the owner */
    pthread_cond_destroy(&c);
    pthread_mutex_destroy(&m);
}

/* abstime on CLOCK_MONOTONIC (pthread_condattr_setclock): a deadline 60 s ahead on that clock
 * is not yet reached, though it lies decades before CLOCK_REALTIME's now. */
static void test_cond_timeout_monotonic(void **s)
{
    (void)s;
    pthread_mutex_t m;
    pthread_cond_t c;
    errorcheck_init(&m);
    cond_init(&c, CLOCK_MONOTONIC);
    pthread_mutex_lock(&m);
    struct timespec future = at(CLOCK_MONOTONIC, 60), past = at(CLOCK_MONOTONIC, -1);
    assert_int_equal(pa_osrt_raw_cond_wait(&c, &m, &future), 0);
    assert_int_equal(pa_osrt_raw_cond_wait(&c, &m, &past), ETIMEDOUT);
    assert_int_equal(pthread_mutex_unlock(&m), 0);
    pthread_cond_destroy(&c);
    pthread_mutex_destroy(&m);
}

int main(void)
{
    const struct CMUnitTest t[] = {cmocka_unit_test(test_mutex_deadlock_reported),
                                   cmocka_unit_test(test_cond_timeout_realtime),
                                   cmocka_unit_test(test_cond_timeout_monotonic)};
    return cmocka_run_group_tests(t, NULL, NULL);
}
