/* queue.c - command queues (regular-list execution, synchronize) and fences. */
#include <stdlib.h>

#include "pa_sd_engine.h"

#define PA_SD_DESTROY_WAIT_NS 5000000000ull

static pa_sd_queue *queue_of(ze_command_queue_handle_t h)
{
    pa_sd_queue *q = (pa_sd_queue *)h;
    return (q && q->magic == PA_SD_MAGIC_QUEUE) ? q : NULL;
}

static pa_sd_fence *fence_of(ze_fence_handle_t h)
{
    pa_sd_fence *f = (pa_sd_fence *)h;
    return (f && f->magic == PA_SD_MAGIC_FENCE) ? f : NULL;
}

ze_result_t pa_sd_zeCommandQueueCreate(ze_context_handle_t hc, ze_device_handle_t hd,
                                    const ze_command_queue_desc_t *desc, ze_command_queue_handle_t *ph)
{
    pa_sd_device *dev = pa_sd_device_of(hd);
    if (!pa_sd_context_of(hc) || !dev)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!desc || !ph)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (!pa_sd_queue_desc_valid(desc))
        return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    pa_sd_engine *eng = pa_sd_engine_get(dev, desc->ordinal, desc->index);
    if (!eng)
        return ZE_RESULT_ERROR_INVALID_ARGUMENT; /* ordinal/index outside the queue groups */
    pa_sd_queue *q = calloc(1, sizeof *q);
    if (!q)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    q->magic = PA_SD_MAGIC_QUEUE;
    q->device = dev;
    q->engine = eng;
    q->synchronous = desc->mode == ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS;
    q->ctx = pa_sd_context_of(hc);
    pa_sd_context_child(q->ctx, 1);
    *ph = (ze_command_queue_handle_t)q;
    return ZE_RESULT_SUCCESS;
}

bool pa_sd_queue_desc_valid(const ze_command_queue_desc_t *desc)
{
    return desc->mode <= ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS &&
           desc->priority <= ZE_COMMAND_QUEUE_PRIORITY_PRIORITY_HIGH;
}

static ze_result_t queue_wait(pa_sd_queue *q, uint64_t timeout)
{
    pthread_mutex_lock(&q->engine->mu);
    uint64_t target = q->submitted;
    pthread_mutex_unlock(&q->engine->mu);
    return pa_sd_engine_wait(q->engine, &q->completed, target, NULL, timeout);
}

ze_result_t pa_sd_zeCommandQueueDestroy(ze_command_queue_handle_t h)
{
    pa_sd_queue *q = queue_of(h);
    if (!q)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    pa_sd_context_child(q->ctx, -1);
    /* Jobs in flight point at the queue: if they do not drain in time, leak it rather than crash. */
    if (queue_wait(q, PA_SD_DESTROY_WAIT_NS) != ZE_RESULT_SUCCESS)
        return ZE_RESULT_SUCCESS;
    q->magic = PA_SD_MAGIC_DEAD;
    free(q);
    return ZE_RESULT_SUCCESS;
}

/* Each list becomes one job running all its recorded commands again (new timestamps each run). */
ze_result_t pa_sd_zeCommandQueueExecuteCommandLists(ze_command_queue_handle_t h, uint32_t n,
                                                 ze_command_list_handle_t *phLists, ze_fence_handle_t hFence)
{
    pa_sd_queue *q = queue_of(h);
    if (!q)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!phLists)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (n == 0)
        return ZE_RESULT_ERROR_INVALID_SIZE;
    pa_sd_fence *f = NULL;
    if (hFence && !(f = fence_of(hFence)))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    for (uint32_t i = 0; i < n; i++) {
        pa_sd_cmdlist *l = pa_sd_list_of(phLists[i]);
        if (!l)
            return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
        if (l->immediate)
            return ZE_RESULT_ERROR_INVALID_ARGUMENT;
        /* the spec: only lists of the queue's group ordinal (and so of its device) */
        if (l->device != q->device || l->ordinal != q->engine->ordinal)
            return ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE;
    }
    if (f) {
        pthread_mutex_lock(&q->engine->mu);
        f->signaled = false;
        pthread_mutex_unlock(&q->engine->mu);
    }
    for (uint32_t i = 0; i < n; i++) {
        pa_sd_cmdlist *l = pa_sd_list_of(phLists[i]);
        pa_sd_job *j = calloc(1, sizeof *j);
        if (!j)
            return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        j->cmds = l->cmds;
        j->n = l->ncmds;
        j->queue = q;
        j->fence = i + 1 == n ? f : NULL;
        j->exec_list = l; /* destroy/reset of l waits for this execution */
        if (pa_sd_engine_push(q->engine, j) != 0) {
            free(j);
            return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        }
    }
    return q->synchronous ? queue_wait(q, UINT64_MAX) : ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeCommandQueueSynchronize(ze_command_queue_handle_t h, uint64_t timeout)
{
    pa_sd_queue *q = queue_of(h);
    if (!q)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    return queue_wait(q, timeout);
}

ze_result_t pa_sd_zeFenceCreate(ze_command_queue_handle_t h, const ze_fence_desc_t *desc, ze_fence_handle_t *ph)
{
    pa_sd_queue *q = queue_of(h);
    if (!q)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!desc || !ph)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    pa_sd_fence *f = calloc(1, sizeof *f);
    if (!f)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    f->magic = PA_SD_MAGIC_FENCE;
    f->queue = q;
    f->signaled = (desc->flags & ZE_FENCE_FLAG_SIGNALED) != 0;
    *ph = (ze_fence_handle_t)f;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeFenceDestroy(ze_fence_handle_t h)
{
    pa_sd_fence *f = fence_of(h);
    if (!f)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    /* A pending job still points at the fence: wait for it (bounded), else leak. */
    if (queue_wait(f->queue, PA_SD_DESTROY_WAIT_NS) != ZE_RESULT_SUCCESS)
        return ZE_RESULT_SUCCESS;
    f->magic = PA_SD_MAGIC_DEAD;
    free(f);
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeFenceHostSynchronize(ze_fence_handle_t h, uint64_t timeout)
{
    pa_sd_fence *f = fence_of(h);
    if (!f)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    return pa_sd_engine_wait(f->queue->engine, NULL, 0, &f->signaled, timeout);
}

ze_result_t pa_sd_zeFenceQueryStatus(ze_fence_handle_t h)
{
    return pa_sd_zeFenceHostSynchronize(h, 0);
}

ze_result_t pa_sd_zeFenceReset(ze_fence_handle_t h)
{
    pa_sd_fence *f = fence_of(h);
    if (!f)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    pthread_mutex_lock(&f->queue->engine->mu);
    f->signaled = false;
    pthread_mutex_unlock(&f->queue->engine->mu);
    return ZE_RESULT_SUCCESS;
}
