/* spine_xthread.c - 1000 start/end ranges started on thread A and ended on thread B >= 200 us later. */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <time.h>

#include <profagent/hgtx.h>

#define N 1000
static hgtxRangeId_t ids[N];
static sem_t started;

static void *ender(void *arg)
{
    (void)arg;
    for (int i = 0; i < N; i++) {
        sem_wait(&started);
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
        hgtxRangeEnd(ids[i]);
    }
    return NULL;
}

static void *starter(void *arg)
{
    (void)arg;
    char name[32];
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "xr%d", i % 4);
        ids[i] = hgtxRangeStartA(name);
        sem_post(&started);
    }
    return NULL;
}

int main(void)
{
    sem_init(&started, 0, 0);
    pthread_t a, b;
    pthread_create(&b, NULL, ender, NULL);
    pthread_create(&a, NULL, starter, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    int distinct = 1;
    for (int i = 1; i < N; i++)
        distinct &= ids[i] != ids[i - 1];
    printf("ids %s first=%llu\n", distinct ? "distinct" : "REPEATED", (unsigned long long)ids[0]);
    return 0;
}
