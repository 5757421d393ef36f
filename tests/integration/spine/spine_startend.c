/* spine_startend.c - many start/end ranges into tiny rings: MODE self (bursts of 8 open ranges
 * ended on the same thread), cross (one thread starts them all, another ends them), misuse (self,
 * then one double end of a recorded range and one end of an id never started, once the
 * aggregator had time to empty the rings). Prints what it issued. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <profagent/hgtx.h>

static long n = 20000;
static hgtxRangeId_t *ids;

static void self_bursts(void)
{
    for (long i = 0; i < n; i += 8) {
        long k = n - i < 8 ? n - i : 8;
        for (long j = 0; j < k; j++)
            ids[i + j] = hgtxRangeStartA("r");
        for (long j = 0; j < k; j++)
            hgtxRangeEnd(ids[i + j]);
    }
}

static void *starter(void *arg)
{
    (void)arg;
    for (long i = 0; i < n; i++)
        ids[i] = hgtxRangeStartA("r");
    return NULL;
}

static void *ender(void *arg)
{
    (void)arg;
    for (long i = 0; i < n; i++)
        hgtxRangeEnd(ids[i]);
    return NULL;
}

static void on_thread(void *(*fn)(void *))
{
    pthread_t t;
    pthread_create(&t, NULL, fn, NULL);
    pthread_join(t, NULL);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "self";
    if (argc > 2)
        n = atol(argv[2]);
    ids = calloc((size_t)n, sizeof *ids);
    if (!ids)
        return 1;
    if (strcmp(mode, "cross") == 0) {
        on_thread(starter);
        on_thread(ender);
    } else {
        self_bursts();
    }
    if (strcmp(mode, "misuse") == 0) {
        struct timespec ts = {0, 200000000}; /* the aggregator empties the ring meanwhile */
        nanosleep(&ts, NULL);
        hgtxRangeId_t id = hgtxRangeStartA("twice");
        hgtxRangeEnd(id);
        hgtxRangeEnd(id);
        hgtxRangeEnd((hgtxRangeId_t)1 << 40);
        printf("misuse 2\n");
    }
    printf("issued %ld\n", n);
    return 0;
}
