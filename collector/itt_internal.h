/* itt_internal.h - what itt.c (the mapped ITT calls) and itt_api.c (the collector protocol,
 * entry table, counters) share. */
#ifndef PA_ITT_INTERNAL_H
#define PA_ITT_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>

#include "itt_abi.h"

/* Collection state set by __itt_pause/__itt_resume/__itt_detach. */
enum { PA_ITT_RUNNING = 0, PA_ITT_PAUSED = 1, PA_ITT_DETACHED = 2 };
extern _Atomic int pa_itt_state;

/* Misuse and accepted-but-not-recorded counters (SESSION_COUNTERS itt_<name>). */
enum pa_itt_counter {
    PA_ITT_NULL_DOMAIN,        /* a call with a NULL domain: recorded on the default domain */
    PA_ITT_NULL_NAME,          /* a task, region or marker with a NULL name: recorded as "" */
    PA_ITT_END_WITHOUT_BEGIN,  /* __itt_task_end with no task open on that thread and domain */
    PA_ITT_PAUSED_CALLS,       /* tasks, frames, marks begun while paused or detached */
    PA_ITT_NCOUNTERS
};
extern _Atomic uint64_t pa_itt_counters[PA_ITT_NCOUNTERS];

static inline void pa_itt_count(int c)
{
    atomic_fetch_add_explicit(&pa_itt_counters[c], 1, memory_order_relaxed);
}

/*! pa_itt_lookup() : our implementation of entry point `name` ("__itt_task_begin"), or NULL
 *  when it is not mapped (itt.c). */
void *pa_itt_lookup(const char *name);

/*! pa_itt_adopt() : registers domains and string handles the static part created before the
 *  collector was loaded, so later creations with the same name return them (itt.c). */
void pa_itt_adopt(pa_itt_domain_t *domains, pa_itt_string_handle_t *strings);

/*! pa_itt_lock()/pa_itt_unlock() : one spin lock for the slow paths (creation, init); never
 *  taken by task begin/end. */
void pa_itt_lock(void);
void pa_itt_unlock(void);

#endif
