/* pa_thread.c - starts the agent's threads with every signal blocked (pa_thread.h). */
#include "pa_thread.h"

#include <errno.h>
#include <signal.h>
#include <time.h>

int pa_thread_spawn(pthread_t *th, size_t stack_bytes, void *(*fn)(void *), void *arg)
{
    int saved = errno;
    sigset_t all, old;
    sigfillset(&all);
    /* the new thread inherits the creator's mask: block everything around the create only */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t at;
    int rc = pthread_attr_init(&at);
    if (rc == 0) {
        if (!th)
            pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        if (stack_bytes)
            pthread_attr_setstacksize(&at, stack_bytes);
        pthread_t local;
        rc = pthread_create(th ? th : &local, &at, fn, arg);
        pthread_attr_destroy(&at);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = saved;
    return rc;
}

double pa_thread_cpu_ms(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}
