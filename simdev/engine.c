/* engine.c - one worker thread per (device, ordinal, index) engine running jobs in order. */

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pa_sd_engine.h"
#include "pa_sd_activity.h"
#include "pa_sd_metrics.h"

static pthread_mutex_t g_create_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic bool g_shutdown;
static _Atomic int g_active_workers;

bool pa_sd_shutting_down(void) { return atomic_load_explicit(&g_shutdown, memory_order_acquire); }

int pa_sd_lock_until(pthread_mutex_t *m, const struct timespec *dl)
{
    return pthread_mutex_clocklock(m, CLOCK_MONOTONIC, dl);
}

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

/* Idle workers exit after this long (and are re-spawned by the next push), so they never keep a
 * process alive whose main thread ended with pthread_exit(). */
#define PA_SD_IDLE_EXIT_NS 100000000ull

static pthread_mutex_t g_list_mu = PTHREAD_MUTEX_INITIALIZER; /* regular lists' inflight */
static pthread_cond_t g_list_cv;                               /* an execution finished */
static pthread_once_t g_list_once = PTHREAD_ONCE_INIT;

static void list_cv_init(void) { pa_sd_cond_init_mono(&g_list_cv); }

/* Caller holds the engine lock (order: engine, then g_list_mu, as in pa_sd_engine_push). */
static void exec_list_done(pa_sd_cmdlist *l)
{
    pthread_once(&g_list_once, list_cv_init);
    pthread_mutex_lock(&g_list_mu);
    l->inflight--;
    pthread_cond_broadcast(&g_list_cv);
    pthread_mutex_unlock(&g_list_mu);
}

static void job_free(pa_sd_job *j)
{
    pa_sd_cmd_free(j->owned);
    free(j);
}

/* Counts a job done on its queue/list/fence; caller holds eng->mu. */
static void job_account(pa_sd_engine *eng, pa_sd_job *j)
{
    if (j->queue)
        j->queue->completed++;
    if (j->list)
        j->list->completed++;
    if (j->fence)
        j->fence->signaled = true;
    eng->finished++;
}

/* The accounting happens under the engine lock, which fork_prepare takes: a fork child sees the
 * job either still current (engine_reset_child frees it) or retired, never unreachable; a waiter
 * woken by the completion finds the list idle. The job is freed off the lock: it was allocated
 * on the appending thread's malloc arena, and when that thread is stopped holding the arena's
 * lock (a signal handler's exit() that interrupted its malloc) the free waits for ever; under
 * the engine lock every append, wait and the library destructor then waited with it. */
/* 1 when a thread in pa_sd_engine_wait may now stop waiting; caller holds eng->mu. */
static bool waiter_met(const pa_sd_engine *eng)
{
    if (eng->wait_over)
        return true;
    for (uint32_t i = 0; i < PA_SD_ENGINE_WAIT_SLOTS; i++) {
        const bool *f = eng->waits[i].flag;
        const uint64_t *d = eng->waits[i].done;
        if ((f && *f) || (d && *d >= eng->waits[i].target))
            return true;
    }
    return false;
}

static void job_finish(pa_sd_engine *eng, pa_sd_job *j)
{
    pthread_mutex_lock(&eng->mu);
    job_account(eng, j);
    eng->current = NULL;
    eng->retired = j;
    if (j->exec_list)
        exec_list_done(j->exec_list);
    if (waiter_met(eng))
        pthread_cond_broadcast(&eng->done_cv);
    pthread_mutex_unlock(&eng->mu);
    job_free(j);
    /* cleared after the free (a fork between the two leaves the child a dangling pointer it
     * never uses, not a chunk nothing references); only this worker writes it meanwhile */
    __atomic_store_n(&eng->retired, NULL, __ATOMIC_RELEASE);
}

/* Next job, or NULL when the worker must exit (shutdown, or idle for PA_SD_IDLE_EXIT_NS). */
static pa_sd_job *worker_next(pa_sd_engine *eng)
{
    struct timespec dl;
    pa_sd_deadline(PA_SD_IDLE_EXIT_NS, &dl);
    pthread_mutex_lock(&eng->mu);
    while (!eng->head && !pa_sd_shutting_down())
        if (pthread_cond_timedwait(&eng->cv, &eng->mu, &dl) == ETIMEDOUT && !eng->head)
            break;
    pa_sd_job *j = pa_sd_shutting_down() ? NULL : eng->head;
    if (j) {
        eng->head = j->next;
        if (!eng->head)
            eng->tail = NULL;
        eng->current = j;
    } else {
        eng->running = false; /* the next push starts a new worker */
    }
    pthread_mutex_unlock(&eng->mu);
    return j;
}

static void *worker_main(void *arg)
{
    pa_sd_engine *eng = arg;
    pa_sd_job *j;
    while ((j = worker_next(eng)) != NULL) {
        for (uint32_t i = 0; i < j->n && !pa_sd_shutting_down(); i++)
            pa_sd_exec_cmd(eng, j->cmds[i]);
        job_finish(eng, j);
    }
    atomic_fetch_sub(&g_active_workers, 1);
    return NULL;
}

/* Workers block every signal so the application's handlers only ever run on its own threads.
 * Caller holds eng->mu. */
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
        eng->running = true;
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
        pa_sd_cond_init_mono(&eng->cv);
        pa_sd_cond_init_mono(&eng->done_cv);
        dev->engines[ordinal][index] = eng; /* the worker starts with the first job */
    }
    pthread_mutex_unlock(&g_create_mu);
    return eng;
}

int pa_sd_engine_push(pa_sd_engine *eng, pa_sd_job *j)
{
    j->next = NULL;
    pthread_mutex_lock(&eng->mu);
    if (!eng->running && !pa_sd_shutting_down() && engine_start(eng) != 0) {
        pthread_mutex_unlock(&eng->mu);
        return -1;
    }
    if (eng->tail)
        eng->tail->next = j;
    else
        eng->head = j;
    eng->tail = j;
    eng->pushed++;
    if (j->exec_list) {
        pthread_once(&g_list_once, list_cv_init);
        pthread_mutex_lock(&g_list_mu);
        j->exec_list->inflight++;
        pthread_mutex_unlock(&g_list_mu);
    }
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

/* At exit the queued work is abandoned and waits give up, but a command a worker is already
 * executing still reads and writes the application's memory. A wait that gives up therefore
 * returns only once no worker runs any more (they stop after their current command, which
 * itself checks the shutdown; bounded like engine_fini: ~1 s): otherwise a synchronous append
 * returns, the application frees the buffer, and the worker's fill writes into freed memory.
 * Called without any simdev lock held (job_finish takes the engine's). */
static void shutdown_settle(void)
{
    for (int i = 0; i < 1000 && atomic_load(&g_active_workers) > 0; i++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
}

/* Wait on eng->done_cv until *done reaches target; UINT64_MAX infinite, 0 polls. */
ze_result_t pa_sd_engine_wait(pa_sd_engine *eng, const uint64_t *done, uint64_t target, const bool *flag,
                           uint64_t timeout_ns)
{
    struct timespec dl;
    pa_sd_deadline(timeout_ns, &dl);
    ze_result_t r = ZE_RESULT_SUCCESS;
    int settle = 0;
    int slot = -1;
    pthread_mutex_lock(&eng->mu);
    while (flag ? !*flag : *done < target) {
        if (slot < 0 && timeout_ns != 0) { /* registered once, before the first wait */
            for (int i = 0; i < PA_SD_ENGINE_WAIT_SLOTS && slot < 0; i++)
                if (!eng->waits[i].done && !eng->waits[i].flag)
                    slot = i;
            if (slot >= 0) {
                eng->waits[slot].done = flag ? NULL : done;
                eng->waits[slot].flag = flag;
                eng->waits[slot].target = target;
            } else {
                eng->wait_over++;
                slot = PA_SD_ENGINE_WAIT_SLOTS;
            }
        }
        if (timeout_ns == 0 || pa_sd_shutting_down()) {
            settle = pa_sd_shutting_down();
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
    if (slot == PA_SD_ENGINE_WAIT_SLOTS)
        eng->wait_over--;
    else if (slot >= 0) {
        eng->waits[slot].done = NULL;
        eng->waits[slot].flag = NULL;
    }
    pthread_mutex_unlock(&eng->mu);
    if (settle)
        shutdown_settle();
    return r;
}

ze_result_t pa_sd_engine_wait_list(pa_sd_cmdlist *list, uint64_t timeout_ns)
{
    pthread_mutex_lock(&list->engine->mu);
    uint64_t target = list->submitted;
    pthread_mutex_unlock(&list->engine->mu);
    return pa_sd_engine_wait(list->engine, &list->completed, target, NULL, timeout_ns);
}

ze_result_t pa_sd_list_wait_idle(pa_sd_cmdlist *l, uint64_t timeout_ns)
{
    struct timespec dl;
    pa_sd_deadline(timeout_ns, &dl);
    ze_result_t r = ZE_RESULT_SUCCESS;
    pthread_once(&g_list_once, list_cv_init);
    int settle = 0;
    pthread_mutex_lock(&g_list_mu);
    while (l->inflight > 0) {
        if (pa_sd_shutting_down() || pthread_cond_timedwait(&g_list_cv, &g_list_mu, &dl) == ETIMEDOUT) {
            r = l->inflight > 0 ? ZE_RESULT_NOT_READY : ZE_RESULT_SUCCESS;
            settle = r != ZE_RESULT_SUCCESS && pa_sd_shutting_down();
            break;
        }
    }
    pthread_mutex_unlock(&g_list_mu);
    if (settle)
        shutdown_settle();
    return r;
}

/* Calls fn(eng, arg) on every engine created so far; caller holds g_create_mu. */
static void engines_each(void (*fn)(pa_sd_engine *, void *), void *arg)
{
    pa_sd_driver *drv = pa_sd_driver_get();
    for (uint32_t d = 0; drv && d < drv->ndevices; d++)
        for (uint32_t o = 0; o < PA_SD_NUM_ORDINALS; o++)
            for (uint32_t i = 0; i < PA_SD_MAX_ENGINES; i++)
                if (drv->devices[d]->engines[o][i])
                    fn(drv->devices[d]->engines[o][i], arg);
}

ze_result_t pa_sd_engines_drain(uint64_t timeout_ns)
{
    pa_sd_engine *engs[PA_SD_MAX_DEVICES * PA_SD_NUM_ORDINALS * PA_SD_MAX_ENGINES];
    uint64_t target[sizeof engs / sizeof engs[0]];
    uint32_t n = 0;
    pa_sd_driver *drv = pa_sd_driver_get();
    pthread_mutex_lock(&g_create_mu);
    for (uint32_t d = 0; drv && d < drv->ndevices; d++)
        for (uint32_t o = 0; o < PA_SD_NUM_ORDINALS; o++)
            for (uint32_t i = 0; i < PA_SD_MAX_ENGINES; i++)
                if ((engs[n] = drv->devices[d]->engines[o][i]) != NULL) {
                    pthread_mutex_lock(&engs[n]->mu);
                    target[n] = engs[n]->pushed;
                    pthread_mutex_unlock(&engs[n]->mu);
                    n++;
                }
    pthread_mutex_unlock(&g_create_mu);
    uint64_t t0 = pa_sd_clock_host_ns();
    for (uint32_t k = 0; k < n; k++) {
        uint64_t spent = pa_sd_clock_host_ns() - t0;
        uint64_t left = timeout_ns == UINT64_MAX ? UINT64_MAX : spent >= timeout_ns ? 0 : timeout_ns - spent;
        if (pa_sd_engine_wait(engs[k], &engs[k]->finished, target[k], NULL, left) != ZE_RESULT_SUCCESS)
            return ZE_RESULT_NOT_READY;
    }
    return ZE_RESULT_SUCCESS;
}

static void engine_wake(pa_sd_engine *eng, void *arg)
{
    if (pa_sd_lock_until(&eng->mu, arg) != 0)
        return; /* held by a worker that cannot go on (see engine_fini): nothing to wake */
    pthread_cond_broadcast(&eng->cv);
    pthread_cond_broadcast(&eng->done_cv);
    pthread_mutex_unlock(&eng->mu);
}

static void engine_lock(pa_sd_engine *eng, void *arg) { (void)arg; pthread_mutex_lock(&eng->mu); }
static void engine_unlock(pa_sd_engine *eng, void *arg) { (void)arg; pthread_mutex_unlock(&eng->mu); }

/* In a fork child no worker exists: the job being run and the queued ones are abandoned (counted
 * done so no wait in the child hangs on them, never run) and freed: they are the child's own copies,
 * the parent's worker keeps using its own. The next push starts a fresh worker. */
static void engine_reset_child(pa_sd_engine *eng, void *arg)
{
    (void)arg;
    pa_sd_job *cur = eng->current;
    if (cur)
        cur->next = eng->head;
    for (pa_sd_job *j = cur ? cur : eng->head, *next; j; j = next) {
        next = j->next;
        job_account(eng, j);
        if (j->exec_list)
            j->exec_list->inflight--; /* caller holds g_list_mu */
        job_free(j);
    }
    eng->current = eng->head = eng->tail = NULL;
    eng->running = false;
    memset(eng->waits, 0, sizeof eng->waits); /* their threads do not exist in the child */
    eng->wait_over = 0;
    pa_sd_cond_init_mono(&eng->cv);
    pa_sd_cond_init_mono(&eng->done_cv);
    pthread_mutex_unlock(&eng->mu);
}

/* Lock order: create lock, engines, EU-stall devices, activity timelines, ComputeBasic streams, events, memory, all-reduce, handle registry (none of them
 * nests another). */
static void fork_prepare(void)
{
    pthread_mutex_lock(&g_create_mu);
    engines_each(engine_lock, NULL);
    pthread_mutex_lock(&g_list_mu);
    pa_sd_eustall_atfork(PA_SD_FORK_PREPARE);
    pa_sd_activity_atfork(PA_SD_FORK_PREPARE);
    pa_sd_oa_atfork(PA_SD_FORK_PREPARE);
    pa_sd_event_atfork(PA_SD_FORK_PREPARE);
    pa_sd_mem_atfork(PA_SD_FORK_PREPARE);
    pa_sd_builtin_atfork(PA_SD_FORK_PREPARE);
    pa_sd_handle_atfork(PA_SD_FORK_PREPARE);
}

static void fork_parent(void)
{
    pa_sd_handle_atfork(PA_SD_FORK_PARENT);
    pa_sd_builtin_atfork(PA_SD_FORK_PARENT);
    pa_sd_mem_atfork(PA_SD_FORK_PARENT);
    pa_sd_event_atfork(PA_SD_FORK_PARENT);
    pa_sd_oa_atfork(PA_SD_FORK_PARENT);
    pa_sd_activity_atfork(PA_SD_FORK_PARENT);
    pa_sd_eustall_atfork(PA_SD_FORK_PARENT);
    pthread_mutex_unlock(&g_list_mu);
    engines_each(engine_unlock, NULL);
    pthread_mutex_unlock(&g_create_mu);
}

/* The child has only the forking thread: locks taken in fork_prepare are released, conditions
 * re-created, engines emptied; L0 calls in the child then run on fresh workers. */
static void fork_child(void)
{
    atomic_store(&g_active_workers, 0);
    pa_sd_handle_atfork(PA_SD_FORK_CHILD);
    pa_sd_builtin_atfork(PA_SD_FORK_CHILD);
    pa_sd_mem_atfork(PA_SD_FORK_CHILD);
    pa_sd_event_atfork(PA_SD_FORK_CHILD);
    pa_sd_oa_atfork(PA_SD_FORK_CHILD);
    pa_sd_activity_atfork(PA_SD_FORK_CHILD);
    pa_sd_eustall_atfork(PA_SD_FORK_CHILD);
    engines_each(engine_reset_child, NULL);
    pa_sd_cond_init_mono(&g_list_cv);
    pthread_mutex_unlock(&g_list_mu);
    pthread_mutex_unlock(&g_create_mu);
}

__attribute__((constructor)) static void engine_init(void)
{
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* At process exit, queued work is abandoned: stop workers and wait at most ~1 s for them. The
 * library is linked -z nodelete, so a worker still returning never runs unmapped code.
 * Why every lock here is bounded (all of them together: PA_SD_FINI_LOCK_NS): exit() may run in
 * a signal handler that interrupted this thread inside malloc; a worker freeing a job allocated
 * on this thread's arena then waits for that arena's lock while holding its engine's, and the
 * engine lock taken here waited for it for ever (2 of 8 runs of exitlife sigmalloc hung, without
 * any profiler). A lock not had in time skips that wake-up: its holder is stuck anyway. The
 * whole destructor takes at most ~1.2 s and allocates nothing. */
#define PA_SD_FINI_LOCK_NS 200000000ull

__attribute__((destructor)) static void engine_fini(void)
{
    atomic_store_explicit(&g_shutdown, true, memory_order_release);
    struct timespec dl;
    pa_sd_deadline(PA_SD_FINI_LOCK_NS, &dl);
    if (pa_sd_lock_until(&g_create_mu, &dl) == 0) {
        engines_each(engine_wake, &dl);
        pthread_mutex_unlock(&g_create_mu);
    }
    pa_sd_events_wake_all(&dl);
    pa_sd_builtin_release_waiters(&dl);
    for (int i = 0; i < 1000 && atomic_load(&g_active_workers) > 0; i++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    pa_sd_deadline(PA_SD_FINI_LOCK_NS, &dl); /* the workers had their second: a fresh bound */
    pa_sd_coll_detach_all(&dl);
}
