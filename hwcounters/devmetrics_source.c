/* devmetrics_source.c - the device metric source's descriptor (common/pa_source.h) and reader rings. */
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../collector/collector.h"
#include "../common/pa_source.h"
#include "devmetrics.h"

#define DM_RING_SLOTS 32768u /* 2 MiB per reader ring */

static _Atomic int rings_ok; /* the session is active: reader rings get drained */

pa_ring_t *pa_dm_ring_open(uint32_t device)
{
    if (!atomic_load(&rings_ok) || atomic_load(&pa_thread_no_new_rings))
        return NULL;
    pa_ring_t *r = pa_ring_create(DM_RING_SLOTS, (uint32_t)syscall(SYS_gettid));
    if (!r)
        return NULL;
    snprintf(r->name, sizeof r->name, "dm-reader-%u", device % 100u);
    pa_ring_register(r);
    return r;
}

/* Never blocks: a full ring drops the record (counted in the ring's drops). */
void pa_dm_ring_emit(pa_ring_t *r, const pa_record_t *rec, const void *payload, uint32_t len)
{
    if (!r)
        return;
    uint32_t flags = rec->flags;
    if (len > pa_emit_max_payload(r)) {
        len = pa_emit_max_payload(r);
        flags |= PA_RF_TRUNCATED;
    }
    uint32_t ns = pa_record_slots(len);
    pa_record_t *slot = pa_ring_reserve(r, ns);
    if (!slot)
        return;
    memcpy(slot, rec, sizeof *slot);
    slot->nslots = (uint16_t)ns;
    slot->len = len;
    slot->tid = r->tid;
    slot->flags = flags;
    if (len)
        pa_ring_write_payload(r, payload, len);
    pa_ring_commit(r, ns);
}

void pa_dm_ring_close(pa_ring_t *r)
{
    if (r)
        atomic_store_explicit(&r->retired, 1, memory_order_release);
}

static int dm_src_init(void)
{
    if (!pa_config.metrics[0])
        return 0;
    atomic_store(&rings_ok, 1);
    pa_dm_start(pa_config.metrics, pa_config.metrics_period_us);
    return 0;
}

static void dm_src_finish(uint64_t budget_ns)
{
    (void)budget_ns;
    pa_dm_stop();
    atomic_store(&rings_ok, 0);
}

static void dm_src_fork_child(void)
{
    pa_dm_after_fork_child();
    atomic_store(&rings_ok, 0);
}

/* Opt-in (PROFAGENT_METRICS=<group> sets PA_SRC_DEVMET); first in the session's table, so the
 * ZET_ENABLE_METRICS=1 it sets precedes every zeInit of the agent. */
const pa_source_t pa_source_devmet = {
    .name = "metrics", .mask = PA_SRC_DEVMET,
    .rec_first = PA_REC_DM_FIRST, .rec_last = PA_REC_DM_LAST,
    .init = dm_src_init, .finish = dm_src_finish, .fork_child = dm_src_fork_child,
};
