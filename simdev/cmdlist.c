/* cmdlist.c - regular and immediate command lists and every zeCommandListAppend* entry point. */
#include <stdlib.h>
#include <string.h>

#include "pa_sd_engine.h"
#include "pa_sd_isa.h"

#define PA_SD_DESTROY_WAIT_NS 5000000000ull /* bounded wait for an immediate list's work at destroy */

pa_sd_cmdlist *pa_sd_list_of(ze_command_list_handle_t h)
{
    pa_sd_cmdlist *l = (pa_sd_cmdlist *)h;
    return (l && l->magic == PA_SD_MAGIC_LIST) ? l : NULL;
}

void pa_sd_cmd_free(pa_sd_cmd *c)
{
    if (!c)
        return;
    free(c->wait);
    if (c->type == PA_SD_CMD_KERNEL) {
        free(c->u.k.args);
        pa_sd_isa_unref(c->u.k.def.isa);
    }
    if (c->type == PA_SD_CMD_QUERY_TS || c->type == PA_SD_CMD_RESET) {
        free(c->u.qts.events);
        free(c->u.qts.offsets);
    }
    free(c);
}

/* Allocate a command with its signal and wait events validated and copied. */
static ze_result_t cmd_new(pa_sd_cmd_type type, ze_event_handle_t hSignal, uint32_t nwait,
                           ze_event_handle_t *phWait, pa_sd_cmd **out)
{
    if (hSignal && !pa_sd_event_of(hSignal))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (nwait && !phWait)
        return ZE_RESULT_ERROR_INVALID_SIZE;
    for (uint32_t i = 0; i < nwait; i++)
        if (!pa_sd_event_of(phWait[i]))
            return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    pa_sd_cmd *c = calloc(1, sizeof *c);
    if (!c || (nwait && !(c->wait = malloc(nwait * sizeof *c->wait)))) {
        free(c);
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    c->type = type;
    c->signal = pa_sd_event_of(hSignal);
    c->nwait = nwait;
    for (uint32_t i = 0; i < nwait; i++)
        c->wait[i] = pa_sd_event_of(phWait[i]);
    *out = c;
    return ZE_RESULT_SUCCESS;
}

/* Immediate lists hand the command to their engine now; regular lists keep it for execution. */
static ze_result_t record(pa_sd_cmdlist *l, pa_sd_cmd *c)
{
    if (l->immediate) {
        if (pa_sd_engine_submit_one(l->engine, c, l) != 0) {
            pa_sd_cmd_free(c);
            return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        }
        return l->synchronous ? pa_sd_engine_wait_list(l, UINT64_MAX) : ZE_RESULT_SUCCESS;
    }
    if (l->closed) {
        pa_sd_cmd_free(c);
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    }
    if (l->ncmds == l->cap) {
        uint32_t nc = l->cap ? l->cap * 2 : 16;
        pa_sd_cmd **na = realloc(l->cmds, nc * sizeof *na);
        if (!na) {
            pa_sd_cmd_free(c);
            return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        }
        l->cmds = na;
        l->cap = nc;
    }
    l->cmds[l->ncmds++] = c;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t list_new(ze_context_handle_t hc, ze_device_handle_t hd, pa_sd_cmdlist **out)
{
    pa_sd_device *dev = pa_sd_device_of(hd);
    if (!pa_sd_context_of(hc) || !dev)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    pa_sd_cmdlist *l = calloc(1, sizeof *l);
    if (!l)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    l->magic = PA_SD_MAGIC_LIST;
    l->device = dev;
    l->ctx = pa_sd_context_of(hc);
    *out = l;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeCommandListCreate(ze_context_handle_t hc, ze_device_handle_t hd,
                                   const ze_command_list_desc_t *desc, ze_command_list_handle_t *ph)
{
    if (!pa_sd_context_of(hc) || !pa_sd_device_of(hd))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE; /* handles before pointers, as the spec orders */
    if (!desc || !ph)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (desc->commandQueueGroupOrdinal >= PA_SD_NUM_ORDINALS)
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    pa_sd_cmdlist *l;
    ze_result_t r = list_new(hc, hd, &l);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    l->ordinal = desc->commandQueueGroupOrdinal;
    pa_sd_context_child(l->ctx, 1);
    *ph = (ze_command_list_handle_t)l;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeCommandListCreateImmediate(ze_context_handle_t hc, ze_device_handle_t hd,
                                            const ze_command_queue_desc_t *desc,
                                            ze_command_list_handle_t *ph)
{
    if (!pa_sd_context_of(hc) || !pa_sd_device_of(hd))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!desc || !ph)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (!pa_sd_queue_desc_valid(desc))
        return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    pa_sd_cmdlist *l;
    ze_result_t r = list_new(hc, hd, &l);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    l->engine = pa_sd_engine_get(l->device, desc->ordinal, desc->index);
    if (!l->engine) {
        free(l);
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    }
    l->immediate = true;
    pa_sd_context_child(l->ctx, 1);
    l->ordinal = desc->ordinal;
    l->synchronous = desc->mode == ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS;
    *ph = (ze_command_list_handle_t)l;
    return ZE_RESULT_SUCCESS;
}

static void list_clear(pa_sd_cmdlist *l)
{
    for (uint32_t i = 0; i < l->ncmds; i++)
        pa_sd_cmd_free(l->cmds[i]);
    l->ncmds = 0;
    l->closed = false;
}

ze_result_t pa_sd_zeCommandListDestroy(ze_command_list_handle_t h)
{
    pa_sd_cmdlist *l = pa_sd_list_of(h);
    if (!l)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    /* Work still queued references the list (immediate) or its commands (regular executions in
     * flight): wait for it, bounded; if it does not drain in time, leak the list. */
    ze_result_t w = l->immediate ? pa_sd_engine_wait_list(l, PA_SD_DESTROY_WAIT_NS)
                                 : pa_sd_list_wait_idle(l, PA_SD_DESTROY_WAIT_NS);
    l->magic = PA_SD_MAGIC_DEAD;
    pa_sd_context_child(l->ctx, -1);
    if (w != ZE_RESULT_SUCCESS)
        return ZE_RESULT_SUCCESS;
    list_clear(l);
    free(l->cmds);
    free(l);
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeCommandListClose(ze_command_list_handle_t h)
{
    pa_sd_cmdlist *l = pa_sd_list_of(h);
    if (!l)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!l->immediate)
        l->closed = true;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeCommandListReset(ze_command_list_handle_t h)
{
    pa_sd_cmdlist *l = pa_sd_list_of(h);
    if (!l)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (l->immediate)
        return pa_sd_engine_wait_list(l, UINT64_MAX) == ZE_RESULT_SUCCESS ? ZE_RESULT_SUCCESS
                                                                      : ZE_RESULT_ERROR_DEVICE_LOST;
    /* Executions in flight still run the recorded commands: wait for them (bounded); if they do
     * not finish in time, hand the old commands over to them (leaked) and start empty. */
    if (pa_sd_list_wait_idle(l, PA_SD_DESTROY_WAIT_NS) != ZE_RESULT_SUCCESS) {
        l->cmds = NULL;
        l->ncmds = l->cap = 0;
        l->closed = false;
        return ZE_RESULT_SUCCESS;
    }
    list_clear(l);
    return ZE_RESULT_SUCCESS;
}

/* Handle before pointers (the spec's check order): the list is checked first. */
#define LIST_FIRST()                                                              \
    do {                                                                          \
        if (!pa_sd_list_of(hList))                                                \
            return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;                           \
    } while (0)

/* Fault injection (SIMDEV_FAULT_LIST_APPENDS=N, SIMDEV_FAULT_LIST_BARRIERS=N): a list's appends
 * (barrier appends) after its first N fail as a driver out of host memory fails them. */
static bool append_refused(pa_sd_cmdlist *l)
{
    uint64_t lim = pa_sd_config_get()->fault_list_appends;
    return lim && atomic_fetch_add(&l->appended, 1) >= lim;
}

static bool barrier_refused(ze_command_list_handle_t h)
{
    pa_sd_cmdlist *l = pa_sd_list_of(h);
    uint64_t lim = pa_sd_config_get()->fault_list_barriers;
    return l && lim && atomic_fetch_add(&l->barriers, 1) >= lim;
}

/* Shared prologue of every append: list and events checked, command allocated. */
#define APPEND_BEGIN(type)                                                        \
    pa_sd_cmdlist *l = pa_sd_list_of(hList);                                            \
    pa_sd_cmd *c;                                                                    \
    if (!l)                                                                       \
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;                               \
    if (append_refused(l))                                                        \
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;                                \
    ze_result_t r = cmd_new(type, hSignal, nwait, phWait, &c);                    \
    if (r != ZE_RESULT_SUCCESS)                                                   \
        return r

ze_result_t pa_sd_zeCommandListAppendWriteGlobalTimestamp(ze_command_list_handle_t hList, uint64_t *dst,
                                                       ze_event_handle_t hSignal, uint32_t nwait,
                                                       ze_event_handle_t *phWait)
{
    LIST_FIRST();
    if (!dst)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    APPEND_BEGIN(PA_SD_CMD_WRITE_TS);
    c->u.wts.dst = dst;
    return record(l, c);
}

ze_result_t pa_sd_zeCommandListAppendBarrier(ze_command_list_handle_t hList, ze_event_handle_t hSignal,
                                          uint32_t nwait, ze_event_handle_t *phWait)
{
    if (barrier_refused(hList))
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    APPEND_BEGIN(PA_SD_CMD_BARRIER);
    return record(l, c);
}

ze_result_t pa_sd_zeCommandListAppendMemoryRangesBarrier(ze_command_list_handle_t hList, uint32_t n,
                                                      const size_t *sizes, const void **ranges,
                                                      ze_event_handle_t hSignal, uint32_t nwait,
                                                      ze_event_handle_t *phWait)
{
    LIST_FIRST();
    if (n && (!sizes || !ranges))
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    APPEND_BEGIN(PA_SD_CMD_BARRIER);
    return record(l, c);
}

ze_result_t pa_sd_zeCommandListAppendMemoryCopy(ze_command_list_handle_t hList, void *dst, const void *src,
                                             size_t size, ze_event_handle_t hSignal, uint32_t nwait,
                                             ze_event_handle_t *phWait)
{
    LIST_FIRST();
    if (!dst || !src)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    APPEND_BEGIN(PA_SD_CMD_COPY);
    c->u.copy.dst = dst;
    c->u.copy.src = src;
    c->u.copy.size = size;
    return record(l, c);
}

ze_result_t pa_sd_zeCommandListAppendMemoryCopyFromContext(ze_command_list_handle_t hList, void *dst,
                                                        ze_context_handle_t hSrcCtx, const void *src,
                                                        size_t size, ze_event_handle_t hSignal,
                                                        uint32_t nwait, ze_event_handle_t *phWait)
{
    LIST_FIRST();
    if (!pa_sd_context_of(hSrcCtx))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    return pa_sd_zeCommandListAppendMemoryCopy(hList, dst, src, size, hSignal, nwait, phWait);
}

ze_result_t pa_sd_zeCommandListAppendMemoryFill(ze_command_list_handle_t hList, void *ptr, const void *pattern,
                                             size_t psize, size_t size, ze_event_handle_t hSignal,
                                             uint32_t nwait, ze_event_handle_t *phWait)
{
    LIST_FIRST();
    if (!ptr || !pattern)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (psize == 0 || psize > PA_SD_MAX_FILL_PATTERN || (psize & (psize - 1)))
        return ZE_RESULT_ERROR_INVALID_SIZE;
    APPEND_BEGIN(PA_SD_CMD_FILL);
    c->u.fill.dst = ptr;
    memcpy(c->u.fill.pattern, pattern, psize);
    c->u.fill.psize = psize;
    c->u.fill.size = size;
    return record(l, c);
}

ze_result_t pa_sd_zeCommandListAppendMemoryCopyRegion(ze_command_list_handle_t hList, void *dst,
                                                   const ze_copy_region_t *dr, uint32_t dpitch,
                                                   uint32_t dslice, const void *src,
                                                   const ze_copy_region_t *sr, uint32_t spitch,
                                                   uint32_t sslice, ze_event_handle_t hSignal,
                                                   uint32_t nwait, ze_event_handle_t *phWait)
{
    LIST_FIRST();
    if (!dst || !src || !dr || !sr)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (dr->width != sr->width || dr->height != sr->height || dr->depth != sr->depth)
        return ZE_RESULT_ERROR_INVALID_SIZE;
    APPEND_BEGIN(PA_SD_CMD_COPY_REGION);
    c->u.region.dst = dst;
    c->u.region.src = src;
    c->u.region.dr = *dr;
    c->u.region.sr = *sr;
    c->u.region.dpitch = dpitch;
    c->u.region.dslice = dslice;
    c->u.region.spitch = spitch;
    c->u.region.sslice = sslice;
    return record(l, c);
}

ze_result_t pa_sd_zeCommandListAppendMemoryPrefetch(ze_command_list_handle_t hList, const void *ptr, size_t size)
{
    (void)size;
    if (!pa_sd_list_of(hList))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    return ptr ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_NULL_POINTER;
}

ze_result_t pa_sd_zeCommandListAppendMemAdvise(ze_command_list_handle_t hList, ze_device_handle_t hd,
                                            const void *ptr, size_t size, ze_memory_advice_t advice)
{
    (void)size;
    (void)advice;
    if (!pa_sd_list_of(hList) || !pa_sd_device_of(hd))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    return ptr ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_NULL_POINTER;
}

ze_result_t pa_sd_zeCommandListAppendSignalEvent(ze_command_list_handle_t hList, ze_event_handle_t hSignal)
{
    uint32_t nwait = 0;
    ze_event_handle_t *phWait = NULL;
    if (!pa_sd_event_of(hSignal))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    APPEND_BEGIN(PA_SD_CMD_SIGNAL);
    return record(l, c);
}

ze_result_t pa_sd_zeCommandListAppendWaitOnEvents(ze_command_list_handle_t hList, uint32_t nwait,
                                               ze_event_handle_t *phWait)
{
    ze_event_handle_t hSignal = NULL;
    LIST_FIRST();
    if (!phWait)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    APPEND_BEGIN(PA_SD_CMD_WAIT);
    return record(l, c);
}

static ze_result_t events_copy(uint32_t n, ze_event_handle_t *ph, pa_sd_cmd *c)
{
    c->u.qts.n = n;
    if (!(c->u.qts.events = malloc((n ? n : 1) * sizeof *c->u.qts.events)))
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    for (uint32_t i = 0; i < n; i++)
        if (!(c->u.qts.events[i] = pa_sd_event_of(ph[i])))
            return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeCommandListAppendEventReset(ze_command_list_handle_t hList, ze_event_handle_t hEvent)
{
    uint32_t nwait = 0;
    ze_event_handle_t *phWait = NULL, hSignal = NULL;
    if (!pa_sd_event_of(hEvent))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    APPEND_BEGIN(PA_SD_CMD_RESET);
    if ((r = events_copy(1, &hEvent, c)) != ZE_RESULT_SUCCESS) {
        pa_sd_cmd_free(c);
        return r;
    }
    return record(l, c);
}

ze_result_t pa_sd_zeCommandListAppendQueryKernelTimestamps(ze_command_list_handle_t hList, uint32_t n,
                                                        ze_event_handle_t *phEvents, void *dst,
                                                        const size_t *offsets, ze_event_handle_t hSignal,
                                                        uint32_t nwait, ze_event_handle_t *phWait)
{
    LIST_FIRST();
    if (!phEvents || !dst)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    APPEND_BEGIN(PA_SD_CMD_QUERY_TS);
    c->u.qts.dst = dst;
    if ((r = events_copy(n, phEvents, c)) == ZE_RESULT_SUCCESS && offsets) {
        if ((c->u.qts.offsets = malloc((n ? n : 1) * sizeof *offsets)) != NULL)
            memcpy(c->u.qts.offsets, offsets, n * sizeof *offsets);
        else
            r = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    if (r != ZE_RESULT_SUCCESS) {
        pa_sd_cmd_free(c);
        return r;
    }
    return record(l, c);
}

/* A launch needs a compute list (ordinal 0: the copy group has no compute engine, and the result is
 * named like a list/queue type mismatch), a module built for the list's device, and every argument
 * of a kernel with known parameters set (the 1.4 API lists no dedicated code: INVALID_ARGUMENT). */
static ze_result_t kernel_launchable(const pa_sd_cmdlist *l, const pa_sd_kernel *k)
{
    if (l->ordinal != SIMDEV_ORDINAL_COMPUTE)
        return ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE;
    if (k->module->device != l->device)
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    uint32_t need = k->nargs_required >= 32 ? UINT32_MAX : (1u << k->nargs_required) - 1;
    if ((k->args_set & need) != need)
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    return ZE_RESULT_SUCCESS;
}

/* Snapshot a kernel (definition, group size, arguments) into a launch command: Level Zero
 * captures arguments at append, and the kernel may be changed or destroyed afterwards. */
static ze_result_t kernel_cmd(pa_sd_cmdlist *l, ze_kernel_handle_t hKernel, ze_event_handle_t hSignal,
                              uint32_t nwait, ze_event_handle_t *phWait, pa_sd_cmd **out)
{
    pa_sd_kernel *k = pa_sd_kernel_of(hKernel);
    if (!k)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    ze_result_t r = kernel_launchable(l, k);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    if (append_refused(l))
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    r = cmd_new(PA_SD_CMD_KERNEL, hSignal, nwait, phWait, out);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    pa_sd_cmd *c = *out;
    if (!(c->u.k.args = malloc(sizeof k->args))) {
        pa_sd_cmd_free(c);
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    memcpy(c->u.k.args, k->args, sizeof k->args);
    c->u.k.def = *k->def;
    c->u.k.def.name = NULL;
    pa_sd_isa_ref(c->u.k.def.isa);
    memcpy(c->u.k.gsize, k->gsize, sizeof k->gsize);
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeCommandListAppendLaunchKernel(ze_command_list_handle_t hList, ze_kernel_handle_t hKernel,
                                               const ze_group_count_t *groups, ze_event_handle_t hSignal,
                                               uint32_t nwait, ze_event_handle_t *phWait)
{
    pa_sd_cmdlist *l = pa_sd_list_of(hList);
    pa_sd_cmd *c;
    if (!l)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!pa_sd_kernel_of(hKernel))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!groups)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    ze_result_t r = kernel_cmd(l, hKernel, hSignal, nwait, phWait, &c);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    c->u.k.groups = *groups;
    return record(l, c);
}

ze_result_t pa_sd_zeCommandListAppendLaunchCooperativeKernel(ze_command_list_handle_t hList,
                                                          ze_kernel_handle_t hKernel,
                                                          const ze_group_count_t *groups,
                                                          ze_event_handle_t hSignal, uint32_t nwait,
                                                          ze_event_handle_t *phWait)
{
    return pa_sd_zeCommandListAppendLaunchKernel(hList, hKernel, groups, hSignal, nwait, phWait);
}

ze_result_t pa_sd_zeCommandListAppendLaunchKernelIndirect(ze_command_list_handle_t hList,
                                                       ze_kernel_handle_t hKernel,
                                                       const ze_group_count_t *groups,
                                                       ze_event_handle_t hSignal, uint32_t nwait,
                                                       ze_event_handle_t *phWait)
{
    pa_sd_cmdlist *l = pa_sd_list_of(hList);
    pa_sd_cmd *c;
    if (!l)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!pa_sd_kernel_of(hKernel))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!groups)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    ze_result_t r = kernel_cmd(l, hKernel, hSignal, nwait, phWait, &c);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    c->u.k.indirect = groups; /* read at execution, as the device would */
    return record(l, c);
}

/* Expanded to one launch per kernel; slots at or beyond *pCount are skipped at execution.
 * Waits go on the first launch and the signal on the last, preserving the call's semantics. */
ze_result_t pa_sd_zeCommandListAppendLaunchMultipleKernelsIndirect(
    ze_command_list_handle_t hList, uint32_t nk, ze_kernel_handle_t *phKernels, const uint32_t *pCount,
    const ze_group_count_t *args, ze_event_handle_t hSignal, uint32_t nwait, ze_event_handle_t *phWait)
{
    pa_sd_cmdlist *l = pa_sd_list_of(hList);
    if (!l)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!phKernels || !pCount || !args)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    for (uint32_t i = 0; i < nk; i++)
        if (!pa_sd_kernel_of(phKernels[i]))
            return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    for (uint32_t i = 0; i < nk; i++) {
        pa_sd_cmd *c;
        ze_result_t r = kernel_cmd(l, phKernels[i], i + 1 == nk ? hSignal : NULL, i == 0 ? nwait : 0,
                                   i == 0 ? phWait : NULL, &c);
        if (r != ZE_RESULT_SUCCESS)
            return r;
        c->u.k.indirect = &args[i];
        c->u.k.count_ptr = pCount;
        c->u.k.slot = i;
        if ((r = record(l, c)) != ZE_RESULT_SUCCESS)
            return r;
    }
    return ZE_RESULT_SUCCESS;
}
