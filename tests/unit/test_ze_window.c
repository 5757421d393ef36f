/* test_ze_window.c - the loader's teardown windows (collector/ze_window.c): the drain waits for a
 * thread inside one and not longer than its bound, skips its own thread and ended threads, the
 * gate refuses once the loader is going, and threads reading an object inside windows never see
 * it freed after the drain (with membarrier and with the fallback), while without the drain
 * they do; the agent's call gate (collector/ze.h): refused after the teardown began, calls in
 * progress counted and waited for (a stub loader call that sleeps), reader loops ending. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "ze_internal.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void nap_us(long us)
{
    struct timespec t = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&t, NULL);
}

/* pa_ze_win_drain(); last_waited = the threads it waited for */
static int last_waited;
static int drain(uint64_t budget_ns)
{
    return pa_ze_win_drain(budget_ns, &last_waited);
}

static uint32_t my_depth(void)
{
    return pa_ze_win_self ? atomic_load(&pa_ze_win_self->depth) : 0;
}

/* ---- one thread inside a window while the drain runs ---- */
typedef struct holder {
    _Atomic int in, release, left_at_leave;
    long hold_us;          /* > 0: leave after this long; 0: leave once `release` is set */
    int exit_inside;       /* end the thread without leaving */
} holder_t;

static void *hold(void *arg)
{
    holder_t *h = arg;
    pa_ze_win_enter();
    atomic_store(&h->in, 1);
    if (h->exit_inside)
        pthread_exit(NULL);
    if (h->hold_us)
        nap_us(h->hold_us);
    else
        while (!atomic_load(&h->release))
            nap_us(1000);
    atomic_store(&h->left_at_leave, 1);
    pa_ze_win_leave();
    return NULL;
}

static void start(pthread_t *t, holder_t *h)
{
    assert_int_equal(pthread_create(t, NULL, hold, h), 0);
    while (!atomic_load(&h->in))
        nap_us(100);
}

/* a thread leaving its window after 30 ms: the drain returns after it left, nothing left */
static void drain_waits_for_window(void **state)
{
    (void)state;
    holder_t h = {.hold_us = 30000};
    pthread_t t;
    start(&t, &h);
    uint64_t t0 = now_ns();
    int left = drain(5000000000ull);
    uint64_t dt = now_ns() - t0;
    assert_int_equal(left, 0);
    assert_int_equal(last_waited, 1);
    assert_int_equal(atomic_load(&h.left_at_leave), 1);
    assert_true(dt < 4000000000ull);
    pthread_join(t, NULL);
}

/* a thread that stays inside: the drain ends at its 50 ms bound and says one is left */
static void drain_bounded(void **state)
{
    (void)state;
    holder_t h = {0};
    pthread_t t;
    start(&t, &h);
    uint64_t t0 = now_ns();
    int left = drain(50000000ull);
    uint64_t dt = now_ns() - t0;
    assert_int_equal(left, 1);
    assert_int_equal(last_waited, 1);
    assert_true(dt >= 50000000ull);
    assert_true(dt < 10000000000ull); /* bounded (a loaded machine may deschedule the drain) */
    assert_int_equal(atomic_load(&h.left_at_leave), 0);
    atomic_store(&h.release, 1);
    pthread_join(t, NULL);
    assert_int_equal(drain(1000000000ull), 0);
}

/* the draining thread's own window (exit() from a signal handler inside one) and the window of a
 * thread that ended inside one are not waited for */
static void drain_skips_self_and_ended(void **state)
{
    (void)state;
    holder_t h = {.exit_inside = 1};
    pthread_t t;
    start(&t, &h);
    pthread_join(t, NULL);
    pa_ze_win_enter();
    assert_int_equal(my_depth(), 1);
    uint64_t t0 = now_ns();
    assert_int_equal(drain(20000000000ull), 0);
    assert_int_equal(last_waited, 0);
    assert_true(now_ns() - t0 < 10000000000ull); /* not the bound */
    pa_ze_win_leave();
    assert_int_equal(my_depth(), 0);
}

/* windows nest; the gate enters one only while the loader is live; errno is kept */
static void gate_and_nesting(void **state)
{
    (void)state;
    atomic_store(&pa_ze_loader_live, 1);
    errno = 1234;
    assert_int_equal(pa_ze_loader_enter(), 1);
    pa_ze_win_enter();
    assert_int_equal(my_depth(), 2);
    pa_ze_win_leave();
    pa_ze_loader_leave();
    assert_int_equal(my_depth(), 0);
    atomic_store(&pa_ze_loader_live, 0);
    assert_int_equal(pa_ze_loader_enter(), 0);
    assert_int_equal(my_depth(), 0);
    assert_int_equal(errno, 1234);
    atomic_store(&pa_ze_loader_live, 1);
}

/* ---- readers racing the teardown ----
 * Readers loop: gate, read the object's state, linger (as a preempted thread would), read it
 * again; a state other than ALIVE inside a window that the gate let in is a read after free.
 * The teardown: gate off, drain (or not), mark the object freed, let the readers run, revive. */
enum { ALIVE = 1, FREED = 2 };
static _Atomic int obj_state = ALIVE, stop_readers;
static _Atomic uint64_t bad_reads, good_reads;

static void *reader(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    while (!atomic_load_explicit(&stop_readers, memory_order_relaxed)) {
        if (!pa_ze_loader_enter()) {
            sched_yield();
            continue;
        }
        int a = atomic_load_explicit(&obj_state, memory_order_relaxed);
        seed = seed * 1103515245u + 12345u;
        if (seed >> 28 == 0)
            sched_yield();                     /* now and then a switch inside the window */
        else
            for (volatile unsigned k = 0; k < (seed >> 20 & 0xff); k++) {
            }
        int b = atomic_load_explicit(&obj_state, memory_order_relaxed);
        if (a != ALIVE || b != ALIVE)
            atomic_fetch_add(&bad_reads, 1);
        else
            atomic_fetch_add(&good_reads, 1);
        pa_ze_loader_leave();
    }
    return NULL;
}

/* `rounds` teardowns (stopping at the first bad read when !with_drain); returns the bad reads. */
static uint64_t race(int rounds, int with_drain)
{
    enum { NR = 3 };
    pthread_t t[NR];
    atomic_store(&stop_readers, 0);
    atomic_store(&bad_reads, 0);
    atomic_store(&good_reads, 0);
    atomic_store(&obj_state, ALIVE);
    atomic_store(&pa_ze_loader_live, 1);
    for (int i = 0; i < NR; i++)
        assert_int_equal(pthread_create(&t[i], NULL, reader, (void *)(uintptr_t)(i + 1)), 0);
    for (int r = 0; r < rounds && (with_drain || atomic_load(&bad_reads) == 0); r++) {
        nap_us(200 + r % 7 * 100);
        atomic_store_explicit(&pa_ze_loader_live, 0, memory_order_seq_cst);
        if (with_drain)
            assert_int_equal(drain(10000000000ull), 0);
        atomic_store(&obj_state, FREED);
        nap_us(300);                           /* readers inside now read the freed state */
        atomic_store(&obj_state, ALIVE);
        atomic_store_explicit(&pa_ze_loader_live, 1, memory_order_seq_cst);
    }
    atomic_store(&stop_readers, 1);
    for (int i = 0; i < NR; i++)
        pthread_join(t[i], NULL);
    assert_true(atomic_load(&good_reads) > 0);
    return atomic_load(&bad_reads);
}

/* the control: without the drain the readers do read the freed object (the test sees the bug) */
static void race_without_drain_reads_freed(void **state)
{
    (void)state;
    assert_true(race(5000, 0) > 0);
}

/* the fallback barrier (fence + 1 ms): no read after free in 300 teardowns */
static void race_fallback(void **state)
{
    (void)state;
    assert_int_equal(race(300, 1), 0);
}

/* membarrier (armed, as at attach): no read after free in 300 teardowns */
static void race_membarrier(void **state)
{
    (void)state;
    pa_ze_win_arm();
    assert_int_equal(race(300, 1), 0);
}

/* ---- the gate of the agent's calls outside the ze source (collector/ze.h) ----
 * A stub stands for a loader call: it counts its calls, the ones in progress, and the ones that
 * began after the teardown returned (which must not exist: the loader's state is gone then). */
static _Atomic int stub_inside, stub_calls, stub_after_teardown, torn, stub_release;

/* us > 0: returns after that long; us == 0: once stub_release is set */
static void stub_loader_call(long us)
{
    if (atomic_load(&torn))
        atomic_fetch_add(&stub_after_teardown, 1);
    atomic_fetch_add(&stub_inside, 1);
    atomic_fetch_add(&stub_calls, 1);
    if (us)
        nap_us(us);
    else
        while (!atomic_load(&stub_release))
            nap_us(500);
    atomic_fetch_sub(&stub_inside, 1);
}

static void stub_reset(void)
{
    atomic_store(&stub_inside, 0);
    atomic_store(&stub_calls, 0);
    atomic_store(&stub_after_teardown, 0);
    atomic_store(&torn, 0);
    atomic_store(&stub_release, 0);
    atomic_store(&pa_ze_loader_live, 1);
}

/* enter/leave nest and keep errno; after the teardown began every enter is refused, without
 * entering a window (a refused caller must not leave) */
static void call_gate_refuses_after_teardown(void **state)
{
    (void)state;
    stub_reset();
    errno = 4321;
    assert_int_equal(pa_ze_call_live(), 1);
    assert_int_equal(pa_ze_call_enter(), 1);
    assert_int_equal(pa_ze_call_enter(), 1);
    assert_int_equal(my_depth(), 2);
    pa_ze_call_leave();
    pa_ze_call_leave();
    assert_int_equal(my_depth(), 0);
    int waited = -1;
    assert_int_equal(pa_ze_call_teardown(1000000000ull, &waited), 0);
    assert_int_equal(waited, 0);
    assert_int_equal(pa_ze_call_live(), 0);
    assert_int_equal(pa_ze_call_enter(), 0);
    assert_int_equal(pa_ze_loader_enter(), 0); /* the ze source's own gate: the same flag */
    assert_int_equal(my_depth(), 0);
    assert_int_equal(errno, 4321);
    stub_reset();
}

typedef struct caller {
    long call_us;         /* each stub call's length */
    int once;             /* one call, then end; else loop until refused */
    _Atomic int in, calls, refused;
} caller_t;

/* A reader thread's loop: gate, one stub call, leave; ends when the gate refuses. */
static void *caller_main(void *arg)
{
    caller_t *c = arg;
    for (;;) {
        if (!pa_ze_call_enter()) {
            atomic_store(&c->refused, 1);
            return NULL;
        }
        atomic_store(&c->in, 1);
        stub_loader_call(c->call_us);
        atomic_fetch_add(&c->calls, 1);
        pa_ze_call_leave();
        if (c->once)
            return NULL;
    }
}

/* n caller threads, each a copy of proto */
static void callers_start(caller_t *c, pthread_t *t, int n, caller_t proto)
{
    for (int i = 0; i < n; i++) {
        c[i] = proto;
        assert_int_equal(pthread_create(&t[i], NULL, caller_main, &c[i]), 0);
    }
}

/* three threads each in a 40 ms stub call: the teardown counts the three, waits until every call
 * returned (none still inside when it returns), and none starts a call after it */
static void call_teardown_waits_for_calls_in_progress(void **state)
{
    (void)state;
    stub_reset();
    enum { N = 3 };
    caller_t c[N];
    pthread_t t[N];
    callers_start(c, t, N, (caller_t){.call_us = 40000, .once = 1});
    for (int i = 0; i < N; i++)
        while (!atomic_load(&c[i].in))
            nap_us(100);
    int waited = -1;
    int left = pa_ze_call_teardown(20000000000ull, &waited);
    assert_int_equal(atomic_load(&stub_inside), 0);
    atomic_store(&torn, 1);
    assert_int_equal(left, 0);
    assert_true(waited >= 1 && waited <= N); /* a call may have ended before the drain looked */
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(atomic_load(&c[i].calls), 1);
    }
    assert_int_equal(atomic_load(&stub_calls), N);
    assert_int_equal(atomic_load(&stub_after_teardown), 0);
    stub_reset();
}

/* four reader loops of 2 ms calls (as the sampling readers' sliced waits): the teardown returns
 * with none inside, every loop then ends refused, and no call starts after the teardown */
static void call_readers_end_at_teardown(void **state)
{
    (void)state;
    stub_reset();
    enum { N = 4 };
    caller_t c[N];
    pthread_t t[N];
    callers_start(c, t, N, (caller_t){.call_us = 2000});
    for (int i = 0; i < N; i++)
        while (atomic_load(&c[i].calls) < 3)
            nap_us(500);
    int waited = -1;
    int left = pa_ze_call_teardown(20000000000ull, &waited);
    assert_int_equal(atomic_load(&stub_inside), 0);
    atomic_store(&torn, 1);
    assert_int_equal(left, 0);
    int total = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(atomic_load(&c[i].refused), 1);
        total += atomic_load(&c[i].calls);
    }
    assert_int_equal(atomic_load(&stub_calls), total);
    assert_int_equal(atomic_load(&stub_after_teardown), 0);
    stub_reset();
}

/* three calls that block past the bound (held until released; a 50 ms bound): the teardown
 * returns at its bound counting the three still inside (its caller then keeps the loader's
 * state: ze_attach.c); once they returned, a second teardown finds none */
static void call_teardown_bounded_counts(void **state)
{
    (void)state;
    stub_reset();
    enum { N = 3 };
    caller_t c[N];
    pthread_t t[N];
    callers_start(c, t, N, (caller_t){.call_us = 0, .once = 1});
    for (int i = 0; i < N; i++)
        while (!atomic_load(&c[i].in))
            nap_us(100);
    uint64_t t0 = now_ns();
    int waited = -1;
    int left = pa_ze_call_teardown(50000000ull, &waited);
    assert_true(now_ns() - t0 >= 50000000ull);
    assert_int_equal(left, N);
    assert_int_equal(waited, N);
    assert_int_equal(atomic_load(&stub_inside), N);
    assert_int_equal(pa_ze_call_enter(), 0);
    atomic_store(&stub_release, 1);
    for (int i = 0; i < N; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(pa_ze_call_teardown(1000000000ull, &waited), 0);
    assert_int_equal(waited, 0);
    assert_int_equal(atomic_load(&stub_calls), N);
    stub_reset();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gate_and_nesting),
        cmocka_unit_test(drain_waits_for_window),
        cmocka_unit_test(drain_bounded),
        cmocka_unit_test(drain_skips_self_and_ended),
        cmocka_unit_test(race_without_drain_reads_freed),
        cmocka_unit_test(race_fallback),
        cmocka_unit_test(race_membarrier),
        cmocka_unit_test(call_gate_refuses_after_teardown),
        cmocka_unit_test(call_teardown_waits_for_calls_in_progress),
        cmocka_unit_test(call_readers_end_at_teardown),
        cmocka_unit_test(call_teardown_bounded_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
