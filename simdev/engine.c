/* engine.c - one worker thread per (device, ordinal, index) engine running jobs in order. */

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pa_sd_engine.h"

static pthread_mutex_t g_create_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic bool g_shutdown;
static _Atomic int g_active_workers;

bool pa_sd_shutting_down(void) { return atomic_load_explicit(&g_shutdown, memory_order_acquire); }

void pa_sd_cond_init_mono(pthread_cond_t *cv)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &a);
    pthread_condattr_destroy(&a);
}

void pa_sd_deadline(uint64_t timeout_ns, struct timespec *ts)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    uint64_t max_add = 100ull * 365 * 86400 * 1000000000ull; /* saturate near "forever" */
    if (timeout_ns > max_add)
        timeout_ns = max_add;
    uint64_t ns = (uint64_t)ts->tv_nsec + timeout_ns % 1000000000ull;
    ts->tv_sec += (time_t)(timeout_ns / 1000000000ull + ns / 1000000000ull);
    ts->tv_nsec = (long)(ns % 1000000000ull);
}

static void job_finish(pa_sd_engine *eng, pa_sd_job *j)
{
    pthread_mutex_lock(&eng->mu);
    if (j->queue)
        j->queue->completed++;
    if (j->list)
        j->list->completed++;
    if (j->fence)
        j->fence->signaled = true;
    pthread_cond_broadcast(&eng->done_cv);
    pthread_mutex_unlock(&eng->mu);
    if (j->owned)
        pa_sd_cmd_free(j->owned);
    free(j);
}

static void *worker_main(void *arg)
{
    pa_sd_engine *eng = arg;
    for (;;) {
        pthread_mutex_lock(&eng->mu);
        while (!eng->head && !pa_sd_shutting_down())
            pthread_cond_wait(&eng->cv, &eng->mu);
        if (pa_sd_shutting_down()) {
            pthread_mutex_unlock(&eng->mu);
            break;
        }
        pa_sd_job *j = eng->head;
        eng->head = j->next;
        if (!eng->head)
            eng->tail = NULL;
        pthread_mutex_unlock(&eng->mu);
        for (uint32_t i = 0; i < j->n && !pa_sd_shutting_down(); i++)
            pa_sd_exec_cmd(eng, j->cmds[i]);
        job_finish(eng, j);
    }
    atomic_fetch_sub(&g_active_workers, 1);
    return NULL;
}

/* Workers block every signal so the application's handlers only ever run on its own threads. */
static int engine_start(pa_sd_engine *eng)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    atomic_fetch_add(&g_active_workers, 1);
    int rc = pthread_create(&eng->thread, &attr, worker_main, eng);
    if (rc != 0)
        atomic_fetch_sub(&g_active_workers, 1);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc == 0) {
        char name[16];
        snprintf(name, sizeof name, "simdev%u.%u.%u", eng->dev->index % 100, eng->ordinal,
                 eng->index);
        pthread_setname_np(eng->thread, name);
    }
    return rc;
}

pa_sd_engine *pa_sd_engine_get(pa_sd_device *dev, uint32_t ordinal, uint32_t index)
{
    uint32_t n = ordinal == SIMDEV_ORDINAL_COMPUTE ? SIMDEV_NUM_COMPUTE_ENGINES
               : ordinal == SIMDEV_ORDINAL_COPY    ? SIMDEV_NUM_COPY_ENGINES : 0;
    if (!dev || index >= n)
        return NULL;
    pthread_mutex_lock(&g_create_mu);
    pa_sd_engine *eng = dev->engines[ordinal][index];
    if (!eng && (eng = calloc(1, sizeof *eng)) != NULL) {
        eng->dev = dev;
        eng->ordinal = ordinal;
        eng->index = index;
        pthread_mutex_init(&eng->mu, NULL);
        pthread_cond_init(&eng->cv, NULL);
        pa_sd_cond_init_mono(&eng->done_cv);
        if (engine_start(eng) != 0) {
            free(eng);
            eng = NULL;
        } else {
            dev->engines[ordinal][index] = eng;
        }
    }
    pthread_mutex_unlock(&g_create_mu);
    return eng;
}

int pa_sd_engine_push(pa_sd_engine *eng, pa_sd_job *j)
{
    j->next = NULL;
    pthread_mutex_lock(&eng->mu);
    if (eng->tail)
        eng->tail->next = j;
    else
        eng->head = j;
    eng->tail = j;
    if (j->queue)
        j->queue->submitted++;
    if (j->list)
        j->list->submitted++;
    pthread_cond_signal(&eng->cv);
    pthread_mutex_unlock(&eng->mu);
    return 0;
}

int pa_sd_engine_submit_one(pa_sd_engine *eng, pa_sd_cmd *c, pa_sd_cmdlist *list)
{
    pa_sd_job *j = calloc(1, sizeof *j);
    if (!j)
        return -1;
    j->owned = c;
    j->one = c;
    j->cmds = &j->one;
    j->n = 1;
    j->list = list;
    return pa_sd_engine_push(eng, j);
}

/* Wait on eng->done_cv until *done reaches target; UINT64_MAX infinite, 0 polls. */
ze_result_t pa_sd_engine_wait(pa_sd_engine *eng, const uint64_t *done, uint64_t target, const bool *flag,
                           uint64_t timeout_ns)
{
    struct timespec dl;
    pa_sd_deadline(timeout_ns, &dl);
    ze_result_t r = ZE_RESULT_SUCCESS;
    pthread_mutex_lock(&eng->mu);
    while (flag ? !*flag : *done < target) {
        if (timeout_ns == 0 || pa_sd_shutting_down()) {
            r = ZE_RESULT_NOT_READY;
            break;
        }
        int rc = timeout_ns == UINT64_MAX ? pthread_cond_wait(&eng->done_cv, &eng->mu)
                                          : pthread_cond_timedwait(&eng->done_cv, &eng->mu, &dl);
        if (rc == ETIMEDOUT && (flag ? !*flag : *done < target)) {
            r = ZE_RESULT_NOT_READY;
            break;
        }
    }
    pthread_mutex_unlock(&eng->mu);
    return r;
}

ze_result_t pa_sd_engine_wait_list(pa_sd_cmdlist *list, uint64_t timeout_ns)
{
    pthread_mutex_lock(&list->engine->mu);
    uint64_t target = list->submitted;
    pthread_mutex_unlock(&list->engine->mu);
    return pa_sd_engine_wait(list->engine, &list->completed, target, NULL, timeout_ns);
}

static void wake_engines(void)
{
    pa_sd_driver *drv = pa_sd_driver_get();
    for (uint32_t d = 0; drv && d < drv->ndevices; d++)
        for (uint32_t o = 0; o < PA_SD_NUM_ORDINALS; o++)
            for (uint32_t i = 0; i < PA_SD_MAX_ENGINES; i++) {
                pa_sd_engine *eng = drv->devices[d]->engines[o][i];
                if (!eng)
                    continue;
                pthread_mutex_lock(&eng->mu);
                pthread_cond_broadcast(&eng->cv);
                pthread_cond_broadcast(&eng->done_cv);
                pthread_mutex_unlock(&eng->mu);
            }
}

/* At process exit, queued work is abandoned: stop workers and wait at most ~1 s for them. The
 * library is linked -z nodelete, so a worker still returning never runs unmapped code. */
__attribute__((destructor)) static void engine_fini(void)
{
    atomic_store_explicit(&g_shutdown, true, memory_order_release);
    pthread_mutex_lock(&g_create_mu);
    wake_engines();
    pthread_mutex_unlock(&g_create_mu);
    pa_sd_events_wake_all();
    pa_sd_builtin_release_waiters();
    for (int i = 0; i < 1000 && atomic_load(&g_active_workers) > 0; i++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
}
