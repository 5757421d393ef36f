/* emit_full.c - what a record does when its thread's ring is full: the bounded wait (or not). */
#include "collector.h"

/* Why these threads and moments never wait: an agent thread or agent code on an application
 * thread (guard) may hold what the aggregator needs (the ops layer's tables, the loader); once
 * the exit began the aggregator's last drains are cut, so a wait would only delay the exit; a
 * retiring thread is inside its TLS destructors; a PA_EMIT_NOWAIT record's thread holds a lock
 * the aggregator could need (an application's malloc replacement built on pthread mutexes). A
 * signal handler is told apart by pa_ring_full_wait() (its signal mask). */
static inline int emit_may_wait(void)
{
    return pa_config.ring_full == PA_RING_FULL_WAIT && (pa_tls.guard | pa_tls.agent) == 0 &&
           pa_tls.state == PA_THREAD_ACTIVE && pa_tls.emit_src != PA_EMIT_NOWAIT &&
           !atomic_load_explicit(&pa_thread_no_new_rings, memory_order_relaxed) &&
           !atomic_load_explicit(&pa_session_ended, memory_order_relaxed);
}

static inline unsigned emit_src(unsigned kind)
{
    return pa_tls.emit_src ? pa_tls.emit_src : pa_ring_src_of_kind(kind);
}

pa_record_t *pa_emit_full(pa_ring_t *r, uint32_t ns, uint32_t keep, unsigned kind)
{
    if (!pa_ring_full_wait(r, ns, keep, emit_may_wait() ? emit_src(kind) : PA_RING_SRC_NONE))
        return NULL;
    /* the refused reserve counted a drop that this record no longer is (only this thread writes
     * the counter) */
    atomic_store_explicit(&r->drops, atomic_load_explicit(&r->drops, memory_order_relaxed) - 1,
                          memory_order_relaxed);
    return pa_ring_reserve_keep(r, ns, keep); /* the room is there: only this thread writes */
}
