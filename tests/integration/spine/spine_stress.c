/* spine_stress.c - 16 threads x PAIRS push/pop pairs, paced by short sleeps every BATCH pairs
 * (so the aggregator keeps up at default settings); prints what was generated. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <profagent/hgtx.h>

#define THREADS 16
static long pairs = 50000, batch = 100;

static void *worker(void *arg)
{
    (void)arg;
    for (long i = 0; i < pairs; i++) {
        hgtxRangePushA("stress");
        hgtxRangePop();
        if (batch && (i + 1) % batch == 0) {
            struct timespec ts = {0, 2000000};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        pairs = atol(argv[1]);
    if (argc > 2)
        batch = atol(argv[2]); /* 0: no pacing */
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("threads %d pairs %ld generated_ranges %ld\n", THREADS, pairs, THREADS * pairs);
    return 0;
}
