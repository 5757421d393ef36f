/* devmetrics_source.c - the device metric source's descriptor (common/pa_source.h) and reader rings. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../collector/collector.h"
#include "../collector/ze.h"
#include "../common/pa_log.h"
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
    pa_thread_ring_added(); /* the aggregator must drain it from now on */
    return r;
}

#define DM_RING_WAIT_NS 1000000L /* a reader waits for room in 1 ms steps ... */
#define DM_RING_WAITS 200          /* ... at most 200 ms a record, then drops it (counted) */

/* Room for nslots in r without counting a drop. */
static int ring_has_room(pa_ring_t *r, uint32_t nslots)
{
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    return tail + nslots - head <= r->mask + 1;
}

/* Runs on a reader thread of ours, never on the application's: a full ring (the aggregator late
 * on a loaded host) is waited for, bounded, since the device's buffer holds the reports meanwhile;
 * after the bound the record is dropped (counted in the ring's drops). */
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
    for (int i = 0; i < DM_RING_WAITS && !ring_has_room(r, ns) && atomic_load(&rings_ok); i++) {
        struct timespec ts = {0, DM_RING_WAIT_NS};
        nanosleep(&ts, NULL);
    }
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

static void dm_on_attach(void)
{
    pa_dm_start(pa_config.metrics, pa_config.metrics_period_us);
}

/* Streams start only in a process whose application initialized Level Zero (a device allows one
 * metric streamer: a wrapper such as a shell, timeout or mpirun must not take it from the
 * application), right after its first zeInit with GPU drivers succeeded (and the ze source, when
 * on, attached and chose its interception path): the agent never initializes Level Zero itself. */
static int dm_src_init(void)
{
    if (!pa_config.metrics[0])
        return 0;
    atomic_store(&rings_ok, 1);
    pa_dm_env();
    pa_ze_on_ready(dm_on_attach);
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
 * ZET_ENABLE_METRICS=1 it sets precedes the application's first zeInit. */
const pa_source_t pa_source_devmet = {
    .name = "metrics", .mask = PA_SRC_DEVMET,
    .rec_first = PA_REC_DM_FIRST, .rec_last = PA_REC_DM_LAST,
    .init = dm_src_init, .finish = dm_src_finish, .fork_child = dm_src_fork_child,
};
