/* ze_api.c - the prologue/epilogue every traced ze call goes through: one API record per
 * call (start, end, thread, result, correlation id), plus the device-activity hooks. */
#include <errno.h>

#include "collector.h"
#include "ze_internal.h"

/* Correlation ids: blocks of PA_ZE_CORR_BLOCK handed to threads (pa_ze_corr_new, ze_internal.h). */
static _Atomic uint64_t next_corr = 1;

uint64_t pa_ze_corr_refill(void)
{
    uint64_t c = atomic_fetch_add_explicit(&next_corr, PA_ZE_CORR_BLOCK, memory_order_relaxed);
    pa_tls.ze_corr_next = c + 1;
    pa_tls.ze_corr_end = c + PA_ZE_CORR_BLOCK;
    return c;
}

/* zeCommandListReset/Destroy: the list's serial, read before the ops layer forgets the handle. */
static __thread uint32_t cur_list_serial __attribute__((tls_model("initial-exec")));

/* The list's Graph ID (serial) when `h` is a known regular list, else 0. */
static uint32_t regular_serial(const void *h)
{
    const pa_ze_obj_info_t *li = h ? pa_ze_obj_get(h) : NULL;
    return li && li->type == PA_ZE_OBJ_LIST && !li->immediate ? li->serial : 0;
}

/* API record aux words the aggregator's HGTX projection needs to release what it keeps per
 * regular list (agg_proj.c): appends aux[0] = list serial (0 immediate); execute aux[0] = upper
 * bound of device ops per execution (the lists' recorded commands), aux[1] = serial of the only
 * regular list executed (0 when several); reset/destroy aux[0] = serial. */
static void api_aux(int api, void *params, int32_t result, uint64_t aux[2])
{
    aux[0] = aux[1] = 0;
    switch (api) {
    case PA_ZE_API_CommandListAppendLaunchKernel: case PA_ZE_API_CommandListAppendLaunchCooperativeKernel:
    case PA_ZE_API_CommandListAppendLaunchKernelIndirect:
    case PA_ZE_API_CommandListAppendLaunchMultipleKernelsIndirect:
    case PA_ZE_API_CommandListAppendMemoryCopy: case PA_ZE_API_CommandListAppendMemoryCopyRegion:
    case PA_ZE_API_CommandListAppendMemoryCopyFromContext: case PA_ZE_API_CommandListAppendMemoryFill:
        aux[0] = regular_serial(**(ze_command_list_handle_t **)params); /* first param: the list */
        break;
    case PA_ZE_API_CommandQueueExecuteCommandLists: {
        ze_command_queue_execute_command_lists_params_t *p = params;
        uint32_t nreg = 0;
        for (uint32_t i = 0; result == 0 && *p->pphCommandLists && i < *p->pnumCommandLists; i++) {
            const pa_ze_obj_info_t *li = pa_ze_obj_get((*p->pphCommandLists)[i]);
            if (!li || li->type != PA_ZE_OBJ_LIST || li->immediate)
                continue; /* also the agent's harvest lists */
            aux[0] += li->ncmds;
            aux[1] = nreg++ ? 0 : li->serial;
        }
        if (nreg > 1)
            aux[1] = 0;
        break;
    }
    case PA_ZE_API_CommandListReset: case PA_ZE_API_CommandListDestroy:
        aux[0] = cur_list_serial;
        break;
    default:
        break;
    }
}

static inline int needs_ops(int api)
{
    return pa_ze_ops_api[api];
}

static inline int needs_prologue(int api)
{
    return pa_ze_ops_api[api] & PA_ZE_OPS_PRO;
}

static inline int is_mem_api(int api)
{
    return api == PA_ZE_API_MemAllocDevice || api == PA_ZE_API_MemAllocHost || api == PA_ZE_API_MemAllocShared ||
           api == PA_ZE_API_MemFree || api == PA_ZE_API_MemFreeExt;
}

void pa_ze_on_enter_slow(int api, void *params, void **inst)
{
    if (!pa_agent_collecting(PA_SRC_ZE)) {
        *inst = NULL;
        if (PA_UNLIKELY(is_mem_api(api)) && pa_agent_collecting(PA_SRC_MEM)) /* PROFAGENT_TRACE=mem alone */
            *inst = (void *)(uintptr_t)pa_clock_ns();
        /* not recording now (paused), but the agent's objects of the context must still go,
         * and work recorded before that signals a destroyed event must be settled first */
        if (PA_UNLIKELY(api == PA_ZE_API_ContextDestroy || api == PA_ZE_API_EventPoolDestroy ||
                        api == PA_ZE_API_EventDestroy) && pa_ze_loader_enter()) {
            int saved = errno;
            pa_ze_ops_prologue(api, params, 0, 0);
            errno = saved;
            pa_ze_loader_leave();
        }
        return;
    }
    /* errno: only the ops hooks can change it (pa_clock_ns and pa_emit keep it) */
    uint64_t t0 = pa_clock_ns();
    pa_tls.ze_corr = pa_ze_corr_new();
    /* the hooks call the loader themselves: not once its teardown began (ze_window.c) */
    if (PA_UNLIKELY(needs_prologue(api)) && pa_ze_loader_enter()) {
        int saved = errno;
        if (api == PA_ZE_API_CommandListReset || api == PA_ZE_API_CommandListDestroy)
            cur_list_serial = regular_serial(**(ze_command_list_handle_t **)params);
        pa_ze_ops_prologue(api, params, pa_tls.ze_corr, t0);
        errno = saved;
        pa_ze_loader_leave();
    }
    *inst = (void *)(uintptr_t)t0;
}

static void (*_Atomic kobj_module)(void *, void *);
static void (*_Atomic kobj_kernel)(void *, void *, const char *);

void pa_ze_on_kernel_objects(void (*module_fn)(void *, void *), void (*kernel_fn)(void *, void *, const char *))
{
    atomic_store(&kobj_module, module_fn);
    atomic_store(&kobj_kernel, kernel_fn);
}

int pa_ze_intercepting(void)
{
    return atomic_load(&pa_ze_attached);
}

/* A module or kernel the application created: to the PC-sampling engine (IP -> kernel), also
 * while recording is paused: a kernel created then still runs (and is sampled) later. */
static void kernel_objects(int api, void *params)
{
    int saved = errno;
    if (api == PA_ZE_API_ModuleCreate) {
        ze_module_create_params_t *p = params;
        void (*fn)(void *, void *) = atomic_load_explicit(&kobj_module, memory_order_acquire);
        if (fn && p->pphModule && *p->pphModule && **p->pphModule)
            fn(**p->pphModule, *p->phDevice);
    } else {
        ze_kernel_create_params_t *p = params;
        void (*fn)(void *, void *, const char *) = atomic_load_explicit(&kobj_kernel, memory_order_acquire);
        if (fn && p->pphKernel && *p->pphKernel && **p->pphKernel && p->pdesc && *p->pdesc)
            fn(*p->phModule, **p->pphKernel, (*p->pdesc)->pKernelName);
    }
    errno = saved;
}

void pa_ze_on_exit_slow(int api, void *params, int32_t result, void **inst)
{
    if (PA_UNLIKELY(api == PA_ZE_API_ModuleCreate || api == PA_ZE_API_KernelCreate) &&
        result == ZE_RESULT_SUCCESS && !(pa_tls.guard | pa_tls.agent))
        kernel_objects(api, params);
    /* every event's pool, also while not recording: a later zeEventPoolDestroy settles the work
     * that signals the pool's events, whenever that work was recorded */
    if (PA_UNLIKELY(api == PA_ZE_API_EventCreate) && result == ZE_RESULT_SUCCESS && !(pa_tls.guard | pa_tls.agent)) {
        ze_event_create_params_t *p = params;
        if (p->pphEvent && *p->pphEvent)
            (void)pa_ze_evmap_put(**p->pphEvent, *p->phEventPool);
    }
    uint64_t t0 = (uint64_t)(uintptr_t)*inst;
    if (t0 == 0)
        return;
    t0 = pa_clock_stamp_ns(t0); /* the fast prologue stored a stamp: the hooks below want ns */
    if (!pa_agent_collecting(PA_SRC_ZE)) { /* mem without ze: only the memory hooks */
        if (pa_agent_collecting(PA_SRC_MEM) && pa_ze_loader_enter()) {
            pa_ze_mem_hooks(api, params, result, t0, pa_clock_ns());
            pa_ze_loader_leave();
        }
        return;
    }
    uint64_t t1 = pa_clock_ns();
    int ops = needs_ops(api);
    if (!needs_prologue(api)) /* the fast prologue took no correlation id (pa_ze_fast_enter) */
        pa_tls.ze_corr = pa_ze_corr_new();
    /* filled in place: no record copy; a full ring waits (pa_emit_full) after the call's end
     * time was taken: the call's duration is unchanged */
    pa_record_t *rec = pa_emit1_begin(PA_REC_ZE_API);
    if (PA_LIKELY(rec != NULL)) {
        pa_ze_api_rec_fill(rec, api, result, t0, t1, pa_tls.ze_corr);
        if (PA_UNLIKELY(ops))
            api_aux(api, params, result, rec->u.ze.aux);
        pa_emit1_end();
    }
    pa_ze_emit_devices();
    if (PA_UNLIKELY(ops) && pa_ze_loader_enter()) {
        int saved = errno;
        pa_ze_ops_epilogue(api, params, result, pa_tls.ze_corr, t0, t1);
        errno = saved;
        pa_ze_loader_leave();
    }
}

void pa_ze_rec_slow(int api, int32_t result, uint64_t t0, uint64_t t1)
{
    pa_record_t *rec = pa_emit1_begin(PA_REC_ZE_API); /* a full ring waits (pa_emit_full) */
    if (PA_LIKELY(rec != NULL)) {
        pa_ze_api_rec_fill(rec, api, result, t0, t1, pa_ze_corr_new());
        pa_emit1_end();
    }
    if (PA_UNLIKELY(atomic_load_explicit(&pa_ze_dev_attrs_pending, memory_order_relaxed)))
        pa_ze_emit_devices();
}

void pa_ze_rec_finish(pa_record_t *rec, int api, int32_t result, uint64_t t0, uint64_t t1)
{
    pa_ze_api_rec_fill(rec, api, result, t0, t1, pa_ze_corr_new());
    pa_emit1_end();
    if (PA_UNLIKELY(atomic_load_explicit(&pa_ze_dev_attrs_pending, memory_order_relaxed)))
        pa_ze_emit_devices();
}

void pa_ze_rec_full(pa_ring_t *r, int api, int32_t result, uint64_t t0, uint64_t t1)
{
    /* as pa_emit1_begin() after its reserve was refused */
    pa_record_t *rec = &pa_emit_full ? pa_emit_full(r, 1, pa_tls.hgtx_open + PA_KEEP_ENDS, PA_REC_ZE_API) : NULL;
    if (rec != NULL) {
        pa_ze_rec_finish(rec, api, result, t0, t1);
        return;
    }
    pa_emit_busy_clear();
    if (PA_UNLIKELY(atomic_load_explicit(&pa_ze_dev_attrs_pending, memory_order_relaxed)))
        pa_ze_emit_devices();
}

void pa_ze_rec_after(int nudge)
{
    if (nudge)
        pa_ring_nudge_due();
    if (pa_tls.emitting)
        pa_stash_flush();
    if (atomic_load_explicit(&pa_ze_dev_attrs_pending, memory_order_relaxed))
        pa_ze_emit_devices();
}

/*! pa_ze_api_name() : "zeCommandListAppendLaunchKernel" for an enum pa_ze_api_id, NULL
 *  when out of range (used by the aggregator to name API records). */
const char *pa_ze_api_name(uint32_t id)
{
    return id < PA_ZE_API_COUNT ? pa_ze_api_table[id].name : NULL;
}
