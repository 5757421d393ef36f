/* ze_api.c - the prologue/epilogue every traced ze call goes through: one API record per
 * call (start, end, thread, result, correlation id), plus the device-activity hooks. */
#include <errno.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

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

/* Why an API record waits for room instead of being dropped: a thread making cheap calls in a
 * tight loop (zeKernelSetArgumentValue: ~30 ns each with the agent) writes records faster than
 * one aggregator consumes them (~50-80 ns each with the spool), so a ring of any size overflows
 * within milliseconds and most of the calls are lost (440 k of 1 M calls in one run). Waiting
 * here slows such a loop to the aggregator's pace, which costs the program less than the DB's
 * load of the rows at exit, and keeps every call. The wait is taken after the call's end time
 * (its duration is unchanged), frees a quarter of the ring before the thread goes on (the next
 * wait is thousands of calls later), and is bounded: an aggregator that does not make room in
 * PA_ZE_FULL_STALL_NS (stopped, starved) has the thread record without waiting for a while. */
static __thread uint64_t full_nowait_until __attribute__((tls_model("initial-exec")));
_Atomic uint64_t pa_ze_full_waits, pa_ze_full_wait_ns, pa_ze_full_given_up;

static inline uint64_t ring_free(const pa_ring_t *r)
{
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    return r->mask + 1 - (tail - atomic_load_explicit(&((pa_ring_t *)r)->head, memory_order_acquire));
}

pa_record_t *pa_ze_api_slot_full(void)
{
    pa_ring_t *r = pa_tls.ring;
    /* the room pa_emit1_begin() keeps free after the record: pops, range ends (half the ring at most) */
    uint64_t cap = r ? r->mask + 1 : 0, keep = (uint64_t)pa_tls.hgtx_open + PA_KEEP_ENDS;
    keep = keep < cap / 2 ? keep : cap / 2;
    if (!r || pa_tls.emitting || ring_free(r) >= 1 + keep ||
        atomic_load_explicit(&pa_thread_no_new_rings, memory_order_relaxed))
        return NULL; /* not a full ring, or the exit began: the aggregator's last drains are cut */
    uint64_t now = pa_clock_ns();
    if (now < full_nowait_until)
        return NULL;
    int saved = errno;
    /* on a loaded machine the aggregator runs a slice every few tens of ms: what bounds the wait
     * is a time without any progress, not the wait's length */
    uint64_t seen = atomic_load_explicit(&r->head, memory_order_acquire), since = now, t_start = now;
    struct timespec pause = { 0, 20000 }; /* the timer slack makes it ~50-100 us */
    while (ring_free(r) < cap / 4 + 1 + keep) {
        syscall(SYS_nanosleep, &pause, NULL); /* raw: never the OSRT wrapper */
        now = pa_clock_ns();
        uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
        if (head != seen) {
            seen = head;
            since = now;
        } else if (now - since > PA_ZE_FULL_STALL_NS) {
            break;
        }
    }
    errno = saved;
    atomic_fetch_add_explicit(&pa_ze_full_waits, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&pa_ze_full_wait_ns, now - t_start, memory_order_relaxed);
    if (ring_free(r) < 1 + keep) {
        atomic_fetch_add_explicit(&pa_ze_full_given_up, 1, memory_order_relaxed);
        full_nowait_until = now + PA_ZE_FULL_NOWAIT_NS;
        return NULL;
    }
    /* the refused reserve counted a drop that this record no longer is (only this thread
     * writes the counter) */
    atomic_store_explicit(&r->drops, atomic_load_explicit(&r->drops, memory_order_relaxed) - 1,
                          memory_order_relaxed);
    return pa_emit1_begin();
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

void pa_ze_on_exit_slow(int api, void *params, int32_t result, void **inst)
{
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
    pa_record_t *rec = pa_emit1_begin(); /* filled in place: no record copy */
    if (PA_UNLIKELY(rec == NULL))
        rec = pa_ze_api_slot_full();
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

/*! pa_ze_api_name() : "zeCommandListAppendLaunchKernel" for an enum pa_ze_api_id, NULL
 *  when out of range (used by the aggregator to name API records). */
const char *pa_ze_api_name(uint32_t id)
{
    return id < PA_ZE_API_COUNT ? pa_ze_api_table[id].name : NULL;
}
