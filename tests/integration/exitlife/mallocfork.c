/* mallocfork.c - main returns while many threads allocate and free flat out, so the exit's fork
 * copies malloc's arena locks as those threads hold them. usage: mallocfork THREADS RANGES */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <profagent/hgtx.h>

static atomic_int in_loop;

/* Never returns: blocks of many sizes (the large ones past the per-thread cache, so the arena's
 * lock is taken), some kept a while so frees reach the arena too. No yield: a thread preempted
 * anywhere is most likely inside malloc, holding its arena (with a yield every 16 or 128 rounds
 * the old finisher never hung in 8 runs each; without, it did). */
static void *churn(void *arg)
{
    unsigned seed = (unsigned)(size_t)arg * 2654435761u + 1;
    void *keep[64] = {0};
    atomic_fetch_add(&in_loop, 1);
    for (;;) {
        seed = seed * 1103515245u + 12345u;
        size_t sz = 16 + (seed >> 8) % (seed & 1 ? 200000 : 4000);
        unsigned slot = (seed >> 20) % 64;
        free(keep[slot]);
        keep[slot] = malloc(sz);
        if (keep[slot])
            memset(keep[slot], 1, sz < 64 ? sz : 64);
    }
    return NULL;
}

/* The agent's children must not signal the application: said on stderr if one does. */
static void on_child(int sig)
{
    (void)sig;
    static const char msg[] = "mallocfork: SIGCHLD\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: mallocfork THREADS RANGES\n");
        return 2;
    }
    signal(SIGCHLD, on_child);
    int threads = atoi(argv[1]);
    long ranges = atol(argv[2]);
    for (long i = 0; i < ranges; i++) {
        hgtxRangePushA("mf");
        hgtxRangePop();
    }
    /* the streamed DB exists before the exit (a hand-off needs it): it is created after 50 commit
     * intervals (PROFAGENT_DB_COMMIT_MS) */
    struct timespec wait_db = {0, 300000000};
    nanosleep(&wait_db, NULL);
    for (int i = 0; i < threads; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, churn, (void *)(size_t)(i + 1)) != 0)
            return 3;
        pthread_detach(t);
    }
    struct timespec nap = {0, 1000000};
    while (atomic_load(&in_loop) < threads)
        nanosleep(&nap, NULL);
    nap.tv_nsec = 50000000; /* every thread well inside its loop */
    nanosleep(&nap, NULL);
    printf("returning %d %ld\n", threads, ranges);
    fflush(stdout);
    return 0;
}
