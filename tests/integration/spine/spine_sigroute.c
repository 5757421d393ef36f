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
    ze_module_handle_t m = sample_module_native(&env, env.devices[0], "SIMDEV-MODULE 1\nkernel busy_ns\n");
    ze_kernel_handle_t k = sample_kernel(m, "busy_ns", 1);
    ze_command_list_handle_t list = sample_immediate(&env, env.devices[0], 0, 0);
    ze_event_pool_handle_t pool = sample_event_pool(&env, 1, 0);
    ze_event_handle_t ev = sample_event(pool, 0);
    uint64_t ns = 2000000;
    sample_set_arg(k, 0, sizeof ns, &ns);
    sample_launch_1d(list, k, 1, 1, ev);
    SAMPLE_CHECK(zeEventHostSynchronize(ev, UINT64_MAX));

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
    /* the context's children first: the driver refuses to destroy a context still holding them */
    SAMPLE_CHECK(zeEventDestroy(ev));
    SAMPLE_CHECK(zeEventPoolDestroy(pool));
    SAMPLE_CHECK(zeCommandListDestroy(list));
    SAMPLE_CHECK(zeKernelDestroy(k));
    SAMPLE_CHECK(zeModuleDestroy(m));
    sample_env_fini(&env);
    printf("sigroute: OK\n");
    return 0;
}
