/* test_exitwatch.c - the exit watchdog's test of a thread's wait (session/exitwatch.c): which
 * /proc/<pid>/task/<tid>/syscall texts are waits only the process can end and no timeout ends,
 * on fixed texts and on live threads of this test blocked in known ways. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "config.h"
#include "session.h"

/* what exitwatch.c links against in the agent */
pa_config_t pa_config;
int pa_thread_is_agent_tid(uint32_t tid) { (void)tid; return 0; }
int pa_thread_agent_tids_complete(void) { return 1; }
void pa_thread_mark_agent(void) {}
int pa_thread_spawn(pthread_t *th, size_t stack_bytes, void *(*fn)(void *), void *arg)
{
    (void)th, (void)stack_bytes, (void)fn, (void)arg;
    return EAGAIN; /* the watchdog's thread is never started here: only the wait test runs */
}
void pa_log_print(int level, const char *domain, const char *fmt, ...) { (void)level, (void)domain, (void)fmt; }

/* A syscall line's arguments after its number (the /proc file: nr, 6 args, sp, pc) and whether
 * it is a wait only the process can end. */
static const struct { long nr; const char *args; int stuck; const char *why; } texts[] = {
    {SYS_futex, "0x55d0c0 0x80 0x2 0x0 0x0 0x0", 1, "FUTEX_WAIT_PRIVATE untimed: pthread_mutex_lock's wait"},
    {SYS_futex, "0x55d0c0 0x89 0x0 0x0 0x0 0xffffffff", 1, "FUTEX_WAIT_BITSET_PRIVATE untimed: join, cond wait"},
    {SYS_futex, "0x55d0c0 0x89 0x0 0x7ffd20 0x0 0xffffffff", 0, "the same with a timeout: it ends by itself"},
    {SYS_futex, "0x7f0000 0x0 0x2 0x0 0x0 0x0", 0, "a shared futex: another process may wake it"},
    {SYS_futex, "0x55d0c0 0x81 0x1 0x0 0x0 0x0", 0, "FUTEX_WAKE_PRIVATE is no wait"},
    {SYS_pause, "0x0 0x0 0x0 0x0 0x0 0x0", 1, "pause()"},
    {SYS_rt_sigsuspend, "0x7ffd00 0x8 0x0 0x0 0x0 0x0", 1, "sigsuspend()"},
    {SYS_read, "0x3 0x7ffd00 0x1000 0x0 0x0 0x0", 0, "read() on a pipe: something outside ends it"},
    {SYS_clock_nanosleep, "0x0 0x0 0x7ffd00 0x7ffd00 0x0 0x0", 0, "a sleep: the clock ends it"},
};

static void fixed_texts(void **state)
{
    (void)state;
    char t[256];
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        snprintf(t, sizeof t, "%ld %s 0x7ffd10 0x7f1234", texts[i].nr, texts[i].args);
        if (pa_exitwatch_stuck_wait(t) != texts[i].stuck)
            fail_msg("'%s' (%s): want %d", t, texts[i].why, texts[i].stuck);
    }
    assert_int_equal(pa_exitwatch_stuck_wait("running"), 0);
    assert_int_equal(pa_exitwatch_stuck_wait("-1 0x7ffd10 0x7f1234"), 0);
    assert_int_equal(pa_exitwatch_stuck_wait(""), 0);
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static atomic_int tid_of[3];

static void *locker(void *arg) /* waits for `mu`, held by the test */
{
    (void)arg;
    atomic_store(&tid_of[0], (int)syscall(SYS_gettid));
    pthread_mutex_lock(&mu);
    pthread_mutex_unlock(&mu);
    return NULL;
}

static pthread_mutex_t mu2 = PTHREAD_MUTEX_INITIALIZER;
static void *timed(void *arg) /* a condition wait with a deadline */
{
    (void)arg;
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 30;
    pthread_mutex_lock(&mu2);
    atomic_store(&tid_of[1], (int)syscall(SYS_gettid));
    while (pthread_cond_timedwait(&cv, &mu2, &dl) == 0 && atomic_load(&tid_of[2]) >= 0) {
    }
    pthread_mutex_unlock(&mu2);
    return NULL;
}

static void on_usr1(int sig) { (void)sig; }

static void *sleeper(void *arg) /* sleeps until SIGUSR1 and tid_of[2] < 0 */
{
    (void)arg;
    atomic_store(&tid_of[2], (int)syscall(SYS_gettid));
    while (atomic_load(&tid_of[2]) >= 0) {
        struct timespec ts = {30, 0};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* the thread's syscall text once it sits in a system call (bounded: 10 s) */
static int live_text(int tid, char *buf, size_t size)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    for (int i = 0; i < 10000; i++) {
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(buf, 1, size - 1, f) : 0;
        if (f)
            fclose(f);
        buf[n] = '\0';
        if (n > 0 && buf[0] >= '0' && buf[0] <= '9')
            return 1;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

static void live_threads(void **state)
{
    (void)state;
    pthread_t t[3];
    signal(SIGUSR1, on_usr1);
    pthread_mutex_lock(&mu);
    pthread_create(&t[0], NULL, locker, NULL);
    pthread_create(&t[1], NULL, timed, NULL);
    pthread_create(&t[2], NULL, sleeper, NULL);
    char buf[512];
    for (int i = 0; i < 3; i++) {
        while (!atomic_load(&tid_of[i])) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
    /* each reaches its wait: the expected system call number first, then the verdict */
    long want[3] = {SYS_futex, SYS_futex, SYS_clock_nanosleep};
    int stuck[3] = {1, 0, 0};
    for (int i = 0; i < 3; i++) {
        int seen = 0;
        for (int k = 0; k < 1000 && !seen; k++) {
            assert_true(live_text(tid_of[i], buf, sizeof buf));
            seen = atol(buf) == want[i];
            if (!seen) {
                struct timespec ts = {0, 10000000};
                nanosleep(&ts, NULL);
            }
        }
        assert_true(seen);
        assert_int_equal(pa_exitwatch_stuck_wait(buf), stuck[i]);
    }
    pthread_mutex_unlock(&mu);
    pthread_join(t[0], NULL);
    atomic_store(&tid_of[2], -1);
    pthread_mutex_lock(&mu2);
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu2);
    pthread_join(t[1], NULL);
    pthread_kill(t[2], SIGUSR1);
    pthread_join(t[2], NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(fixed_texts), cmocka_unit_test(live_threads)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
