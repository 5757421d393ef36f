/* pa_sd_engine.h - engines, jobs and command execution shared by engine.c, exec.c and queue.c. */
#ifndef PA_SD_ENGINE_H
#define PA_SD_ENGINE_H

#include "pa_sd_internal.h"

typedef struct pa_sd_job {
    struct pa_sd_job *next;
    pa_sd_cmd **cmds;       /* commands to run in order (a regular list's array, or &one) */
    uint32_t n;
    pa_sd_cmd *one;         /* storage for a single immediate command */
    pa_sd_cmd *owned;       /* freed when the job finishes */
    pa_sd_queue *queue;     /* completed++ when done */
    pa_sd_cmdlist *list;    /* immediate list: completed++ when done */
    pa_sd_fence *fence;     /* signaled when done */
    pa_sd_cmdlist *exec_list; /* regular list executed by this job: its inflight-- when done */
} pa_sd_job;

#define PA_SD_ENGINE_WAIT_SLOTS 8
struct pa_sd_engine {
    pa_sd_device *dev;
    uint32_t ordinal, index;
    pthread_mutex_t mu;
    pthread_cond_t cv;      /* work available */
    pthread_cond_t done_cv; /* a job finished (CLOCK_MONOTONIC) */
    pa_sd_job *head, *tail;
    pa_sd_job *current;     /* job the worker is running (abandoned in a fork child) */
    pa_sd_job *retired;     /* the job the worker frees now, off the lock (see job_finish; a fork
                               child keeps it: reachable, never freed there) */
    uint64_t pushed, finished; /* jobs ever queued / finished: drain waits compare them */
    /* What the threads in pa_sd_engine_wait wait for: a finished job wakes them only when it
     * meets one's condition (a real driver's queue sync waits for its own last submission, not
     * every completion); `wait_over` waiters found no slot and are woken by every finish. */
    struct { const uint64_t *done; uint64_t target; const bool *flag; } waits[PA_SD_ENGINE_WAIT_SLOTS];
    uint32_t wait_over;
    bool running;           /* a worker thread exists; it exits after PA_SD_IDLE_EXIT_NS idle */
    pthread_t thread;
};

/*! pa_sd_engine_push(eng, j) : append job j; counts it as submitted on its queue/list. 0 on success. */
PA_SD_HIDDEN int pa_sd_engine_push(pa_sd_engine *eng, pa_sd_job *j);
/*! pa_sd_engine_wait(eng, done, target, flag, timeout_ns) : wait until *done >= target (or *flag when
 *  flag is non-NULL) under eng's lock; SUCCESS or NOT_READY (timeout, 0 = poll, shutdown). */
PA_SD_HIDDEN ze_result_t pa_sd_engine_wait(pa_sd_engine *eng, const uint64_t *done, uint64_t target,
                                     const bool *flag, uint64_t timeout_ns);
/*! pa_sd_engines_drain(timeout_ns) : wait until every job queued on any engine before the call
 *  has finished (later work is not waited for). SUCCESS or NOT_READY on timeout/shutdown. */
PA_SD_HIDDEN ze_result_t pa_sd_engines_drain(uint64_t timeout_ns);
/*! pa_sd_list_wait_idle(l, timeout_ns) : wait until no execution of regular list l is in flight;
 *  SUCCESS or NOT_READY on timeout/shutdown. */
PA_SD_HIDDEN ze_result_t pa_sd_list_wait_idle(pa_sd_cmdlist *l, uint64_t timeout_ns);
/*! pa_sd_exec_cmd(eng, c) : execute one command on the calling worker (waits, work, timestamps). */
PA_SD_HIDDEN void pa_sd_exec_cmd(pa_sd_engine *eng, pa_sd_cmd *c);

#endif
