/* sd_engine.h - engines, jobs and command execution shared by engine.c, exec.c and queue.c. */
#ifndef SD_ENGINE_H
#define SD_ENGINE_H

#include "sd_internal.h"

typedef struct sd_job {
    struct sd_job *next;
    sd_cmd **cmds;       /* commands to run in order (a regular list's array, or &one) */
    uint32_t n;
    sd_cmd *one;         /* storage for a single immediate command */
    sd_cmd *owned;       /* freed when the job finishes */
    sd_queue *queue;     /* completed++ when done */
    sd_cmdlist *list;    /* immediate list: completed++ when done */
    sd_fence *fence;     /* signaled when done */
} sd_job;

struct sd_engine {
    sd_device *dev;
    uint32_t ordinal, index;
    pthread_mutex_t mu;
    pthread_cond_t cv;      /* work available */
    pthread_cond_t done_cv; /* a job finished (CLOCK_MONOTONIC) */
    sd_job *head, *tail;
    pthread_t thread;
};

/*! sd_engine_push(eng, j) : append job j; counts it as submitted on its queue/list. 0 on success. */
SD_HIDDEN int sd_engine_push(sd_engine *eng, sd_job *j);
/*! sd_engine_wait(eng, done, target, flag, timeout_ns) : wait until *done >= target (or *flag when
 *  flag is non-NULL) under eng's lock; SUCCESS or NOT_READY (timeout, 0 = poll, shutdown). */
SD_HIDDEN ze_result_t sd_engine_wait(sd_engine *eng, const uint64_t *done, uint64_t target,
                                     const bool *flag, uint64_t timeout_ns);
/*! sd_exec_cmd(eng, c) : execute one command on the calling worker (waits, work, timestamps). */
SD_HIDDEN void sd_exec_cmd(sd_engine *eng, sd_cmd *c);

#endif
