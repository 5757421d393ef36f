/* spine_sigroute.c - a process-directed signal that every application thread blocks must stay
 * pending, never run its handler on one of the agent's threads (aggregator, DB thread, device
 * metric and PC-sampling readers): those are started with every signal blocked. After device work
 * (the readers run), main blocks SIGUSR1, sends it to the process, waits 300 ms, checks the
 * handler has not run and the signal is pending, unblocks it and checks the handler ran on main.
 * Prints "sigroute: OK" or a reason and exits 1. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

static atomic_int hits;
static atomic_long hit_tid;

static void on_usr1(int s)
{
    (void)s;
    atomic_store(&hit_tid, (long)syscall(SYS_gettid));
    atomic_fetch_add(&hits, 1);
}

int main(void)
{
    sample_env_t env;
    sample_env_init(&env, 1);
    sample_busy_t b;
    sample_busy_init(&env, 0, &b);
    sample_busy_run(&b, 2000000, 1);

    struct sigaction sa = {.sa_handler = on_usr1};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    sigset_t one, pend;
    sigemptyset(&one);
    sigaddset(&one, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &one, NULL); /* main is the application's only thread */
    kill(getpid(), SIGUSR1);
    struct timespec t = {0, 300000000};
    nanosleep(&t, NULL);
    int early = atomic_load(&hits);
    sigpending(&pend);
    int pending = sigismember(&pend, SIGUSR1) == 1;
    pthread_sigmask(SIG_UNBLOCK, &one, NULL); /* delivered here, on main, before this returns */
    long self = (long)syscall(SYS_gettid);
    if (early || !pending) {
        printf("sigroute: the handler ran %d time(s) while every application thread blocked it"
               " (tid %ld, main %ld), pending %d\n", early, atomic_load(&hit_tid), self, pending);
        return 1;
    }
    if (atomic_load(&hits) != 1 || atomic_load(&hit_tid) != self) {
        printf("sigroute: after unblocking, %d run(s) on tid %ld (main %ld)\n", atomic_load(&hits),
               atomic_load(&hit_tid), self);
        return 1;
    }
    sample_busy_fini(&b);
    sample_env_fini(&env);
    printf("sigroute: OK\n");
    return 0;
}
