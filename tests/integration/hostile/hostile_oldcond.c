/* hostile_oldcond.c - a program bound to the old-ABI condition variables (GLIBC_2.2.5, as
 * binaries built against glibc < 2.3.2 are), with a condition initialised by the old
 * pthread_cond_init and one initialised statically: 2000 hand-offs each between two threads
 * through wait and timedwait. Prints "handoffs N" and exits 0 when every hand-off arrived. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

__asm__(".symver pthread_cond_init, pthread_cond_init@GLIBC_2.2.5");
__asm__(".symver pthread_cond_destroy, pthread_cond_destroy@GLIBC_2.2.5");
__asm__(".symver pthread_cond_wait, pthread_cond_wait@GLIBC_2.2.5");
__asm__(".symver pthread_cond_timedwait, pthread_cond_timedwait@GLIBC_2.2.5");
__asm__(".symver pthread_cond_signal, pthread_cond_signal@GLIBC_2.2.5");
__asm__(".symver pthread_cond_broadcast, pthread_cond_broadcast@GLIBC_2.2.5");

#define ROUNDS 2000

typedef struct chan {
    pthread_mutex_t m;
    pthread_cond_t *c;
    int full, timed;
    long got;
} chan_t;

static void *consumer(void *arg)
{
    chan_t *ch = arg;
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&ch->m);
        while (!ch->full) {
            if (ch->timed) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_sec += 5;
                if (pthread_cond_timedwait(ch->c, &ch->m, &ts) == ETIMEDOUT)
                    break;
            } else {
                pthread_cond_wait(ch->c, &ch->m);
            }
        }
        if (ch->full)
            ch->got++;
        ch->full = 0;
        pthread_cond_broadcast(ch->c);
        pthread_mutex_unlock(&ch->m);
    }
    return NULL;
}

static long run(pthread_cond_t *c, int timed)
{
    chan_t ch = {.m = PTHREAD_MUTEX_INITIALIZER, .c = c, .timed = timed};
    pthread_t th;
    if (pthread_create(&th, NULL, consumer, &ch) != 0)
        return -1;
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&ch.m);
        while (ch.full)
            pthread_cond_wait(c, &ch.m);
        ch.full = 1;
        pthread_cond_signal(c);
        pthread_mutex_unlock(&ch.m);
    }
    pthread_join(th, NULL);
    return ch.got;
}

int main(void)
{
    static pthread_cond_t st = PTHREAD_COND_INITIALIZER; /* static: the old ABI allocates on first use */
    pthread_cond_t dyn;
    if (pthread_cond_init(&dyn, NULL) != 0)
        return 3;
    long n = run(&dyn, 0) + run(&dyn, 1) + run(&st, 0) + run(&st, 1);
    pthread_cond_destroy(&dyn);
    pthread_cond_destroy(&st);
    printf("handoffs %ld\n", n);
    return n == 4L * ROUNDS ? 0 : 1;
}
