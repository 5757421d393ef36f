/* test_thread.c - pa_thread_spawn(): every signal blocked on the new thread, the caller's mask and
 * errno unchanged, detached when no id is asked for, joinable otherwise, the stack size kept. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "pa_thread.h"

typedef struct seen {
    int blocked[6]; /* SIGUSR1, SIGINT, SIGTERM, SIGXFSZ, SIGPIPE, SIGRTMIN */
    int detach;
    size_t stack;
    volatile int done;
} seen_t;

static const int sigs[6] = {SIGUSR1, SIGINT, SIGTERM, SIGXFSZ, SIGPIPE, 0};

static void *probe(void *arg)
{
    seen_t *s = arg;
    sigset_t cur;
    pthread_sigmask(SIG_BLOCK, NULL, &cur);
    for (int i = 0; i < 6; i++)
        s->blocked[i] = sigismember(&cur, sigs[i] ? sigs[i] : SIGRTMIN);
    pthread_attr_t at;
    pthread_getattr_np(pthread_self(), &at);
    pthread_attr_getdetachstate(&at, &s->detach);
    pthread_attr_getstacksize(&at, &s->stack);
    pthread_attr_destroy(&at);
    __atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
    return s;
}

static void caller_mask_kept(sigset_t *before)
{
    sigset_t after;
    pthread_sigmask(SIG_BLOCK, NULL, &after);
    for (int s = 1; s < SIGRTMAX; s++)
        assert_int_equal(sigismember(before, s), sigismember(&after, s));
}

static void joinable_with_id(void **state)
{
    (void)state;
    sigset_t before;
    pthread_sigmask(SIG_BLOCK, NULL, &before);
    assert_int_equal(sigismember(&before, SIGUSR1), 0);
    seen_t s = {0};
    pthread_t th;
    errno = 1234;
    assert_int_equal(pa_thread_spawn(&th, 0, probe, &s), 0);
    assert_int_equal(errno, 1234);
    void *ret = NULL;
    assert_int_equal(pthread_join(th, &ret), 0);
    assert_ptr_equal(ret, &s);
    for (int i = 0; i < 6; i++)
        assert_int_equal(s.blocked[i], 1);
    assert_int_equal(s.detach, PTHREAD_CREATE_JOINABLE);
    caller_mask_kept(&before);
}

static void detached_without_id(void **state)
{
    (void)state;
    sigset_t before;
    pthread_sigmask(SIG_BLOCK, NULL, &before);
    seen_t s = {0};
    assert_int_equal(pa_thread_spawn(NULL, 1u << 20, probe, &s), 0);
    for (int i = 0; i < 20000 && !__atomic_load_n(&s.done, __ATOMIC_ACQUIRE); i++) {
        struct timespec t = {0, 1000000};
        nanosleep(&t, NULL);
    }
    assert_int_equal(s.done, 1);
    for (int i = 0; i < 6; i++)
        assert_int_equal(s.blocked[i], 1);
    assert_int_equal(s.detach, PTHREAD_CREATE_DETACHED);
    assert_true(s.stack >= (1u << 20));
    caller_mask_kept(&before);
}

/* the caller's own blocked signals stay blocked, the rest stay unblocked */
static void caller_partial_mask(void **state)
{
    (void)state;
    sigset_t one, old;
    sigemptyset(&one);
    sigaddset(&one, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &one, &old);
    sigset_t before;
    pthread_sigmask(SIG_BLOCK, NULL, &before);
    seen_t s = {0};
    pthread_t th;
    assert_int_equal(pa_thread_spawn(&th, 0, probe, &s), 0);
    pthread_join(th, NULL);
    caller_mask_kept(&before);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(joinable_with_id),
        cmocka_unit_test(detached_without_id),
        cmocka_unit_test(caller_partial_mask),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
