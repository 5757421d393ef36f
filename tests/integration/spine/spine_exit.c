/* spine_exit.c - exit paths: detached threads recording while main returns, exit() from a
 * worker, atexit handlers and a destructor calling HGTX around the agent's own exit handler. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <profagent/hgtx.h>

static void nap_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

static atomic_int detached_ranged; /* detached threads that have ended a range */

static void *spin_forever(void *arg)
{
    (void)arg;
    for (int first = 1;; first = 0) {
        hgtxRangePushA("detached");
        nap_us(100);
        hgtxRangePop();
        if (first)
            atomic_fetch_add(&detached_ranged, 1);
    }
    return NULL;
}

static void *exit_from_worker(void *arg)
{
    (void)arg;
    hgtxRangePushA("worker");
    nap_us(20000);
    exit(5); /* range left open: reported as unterminated */
}

static void handler_inner(void) { hgtxMarkA("atexit_nested"); }

static void handler_before_agent(void)
{
    hgtxRangePushA("atexit_before");
    nap_us(1000);
    hgtxRangePop();
    atexit(handler_inner); /* registered during exit: runs next */
}

/* An application TLS destructor that records after the agent retired the thread's ring. */
static pthread_key_t app_key;
static void app_key_dtor(void *v)
{
    (void)v;
    hgtxRangePushA("late_dtor");
    hgtxRangePop();
}

static void *thread_with_dtor(void *arg)
{
    (void)arg;
    pthread_setspecific(app_key, (void *)1);
    hgtxRangePushA("thread_body");
    hgtxRangePop();
    return NULL;
}

static int mode_atexit;
__attribute__((destructor)) static void dtor_after_agent(void)
{
    if (mode_atexit) { /* runs after the agent's exit handler: must be harmless */
        hgtxRangePushA("dtor_after");
        hgtxRangePop();
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "detached") == 0) {
        for (int i = 0; i < 4; i++) {
            pthread_t t;
            pthread_attr_t a;
            pthread_attr_init(&a);
            pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
            pthread_create(&t, &a, spin_forever, NULL);
        }
        /* main returns while all 4 record: once each has ended a range (a loaded machine may run
         * them only after main's 50 ms; their records then all come after the exit drain began),
         * at most 10 s */
        for (int i = 0; i < 10000 && atomic_load(&detached_ranged) < 4; i++)
            nap_us(1000);
        nap_us(50000);
        return 3;
    }
    if (strcmp(mode, "worker_exit") == 0) {
        pthread_t t;
        pthread_create(&t, NULL, exit_from_worker, NULL);
        for (;;) { /* main keeps recording until the worker's exit() ends the process */
            hgtxRangePushA("main_loop");
            nap_us(500);
            hgtxRangePop();
        }
    }
    if (strcmp(mode, "atexit") == 0) {
        mode_atexit = 1;
        atexit(handler_before_agent);
        hgtxRangePushA("main_body");
        hgtxRangePop();
        return 7;
    }
    if (strcmp(mode, "tls_dtor") == 0) { /* app key created after the agent's: its dtor runs later */
        pthread_key_create(&app_key, app_key_dtor);
        for (int i = 0; i < 8; i++) {
            pthread_t t;
            pthread_create(&t, NULL, thread_with_dtor, NULL);
            pthread_join(t, NULL);
        }
        return 0;
    }
    if (strcmp(mode, "fork") == 0) {
        hgtxRangePushA("parent");
        pid_t pid = fork();
        if (pid == 0) { /* child: collection is off; must run normally and write no DB */
            hgtxRangePushA("child");
            nap_us(1000);
            exit(hgtxRangePop() == 1 ? 0 : 9);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        hgtxRangePop();
        return WIFEXITED(st) ? WEXITSTATUS(st) : 10;
    }
    fprintf(stderr, "usage: spine_exit detached|worker_exit|atexit|fork|tls_dtor\n");
    return 2;
}
