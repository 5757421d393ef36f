/* exittail.c - the part of exit() after the agent's: an executable destructor that deadlocks for
 * good, or one that is only slow (CPU work, a wait for a thread that works, a sleep).
 * usage: exittail deadlock RANGES PROPS STATUS | exittail slow cpu|wait|sleep OUTFILE STATUS */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <level_zero/ze_api.h>
#include <profagent/hgtx.h>

#include "common.h"

static sample_env_t env;
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER; /* non-recursive */
static const char *tail_mode = "";
static const char *out_file;
static atomic_int tail_started, worker_in;

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* 2 s of this thread's CPU time, spent computing. */
static void burn_2s(void)
{
    volatile unsigned x = 1;
    for (double t0 = cpu_s(); cpu_s() - t0 < 2.0;)
        for (int i = 0; i < 100000; i++)
            x = x * 1103515245u + 12345u;
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* deadlock: waits for the mutex main holds (main's destructor then waits for it too) */
static void *lock_waiter(void *arg)
{
    (void)arg;
    atomic_store(&worker_in, 1);
    pthread_mutex_lock(&held);
    return NULL;
}

static void *pauser(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

/* slow wait: holds the mutex; once the exit's tail began, computes for 2 s, then lets it go */
static void *slow_holder(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&held);
    atomic_store(&worker_in, 1);
    while (!atomic_load(&tail_started))
        nap_ms(1);
    burn_2s();
    pthread_mutex_unlock(&held);
    for (;;)
        pause();
    return NULL;
}

/* Runs in _dl_fini, after every exit handler (the agent's included). */
__attribute__((destructor)) static void tail(void)
{
    if (strcmp(tail_mode, "deadlock") == 0) {
        pthread_mutex_lock(&held); /* held by this very thread since main: waits for ever */
        return;
    }
    if (strncmp(tail_mode, "slow ", 5) != 0)
        return;
    atomic_store(&tail_started, 1);
    if (strcmp(tail_mode, "slow cpu") == 0)
        burn_2s();
    else if (strcmp(tail_mode, "slow wait") == 0)
        pthread_mutex_lock(&held); /* the holder lets it go after 2 s of work */
    else
        nap_ms(2000);
    FILE *f = fopen(out_file, "w");
    if (f) {
        fprintf(f, "done %s\n", tail_mode + 5);
        fclose(f);
    }
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "deadlock") == 0) {
        long ranges = atol(argv[2]), props = atol(argv[3]);
        sample_env_init(&env, 1);
        for (long i = 0; i < ranges; i++) {
            hgtxRangePushA("tail");
            hgtxRangePop();
        }
        ze_device_properties_t p = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
        for (long i = 0; i < props; i++)
            zeDeviceGetProperties(env.devices[0], &p);
        pthread_mutex_lock(&held);
        pthread_t t;
        pthread_create(&t, NULL, lock_waiter, NULL);
        pthread_create(&t, NULL, pauser, NULL);
        while (!atomic_load(&worker_in))
            nap_ms(1);
        tail_mode = "deadlock";
        exit(atoi(argv[4]));
    }
    if (argc == 5 && strcmp(argv[1], "slow") == 0) {
        sample_env_init(&env, 1);
        hgtxRangePushA("slow");
        hgtxRangePop();
        out_file = argv[3];
        if (strcmp(argv[2], "wait") == 0) {
            pthread_t t;
            pthread_create(&t, NULL, slow_holder, NULL);
            while (!atomic_load(&worker_in))
                nap_ms(1);
        }
        tail_mode = argv[2][0] == 'c' ? "slow cpu" : argv[2][0] == 'w' ? "slow wait" : "slow sleep";
        exit(atoi(argv[4]));
    }
    fprintf(stderr, "usage: exittail deadlock RANGES PROPS STATUS | exittail slow cpu|wait|sleep OUTFILE STATUS\n");
    return 2;
}
