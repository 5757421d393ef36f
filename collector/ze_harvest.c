/* ze_harvest.c - the table of the agent's harvest lists: one slot per list still referenced by
 * the flights that read its captures; the last reference hands the list back for destruction. */
#include "ze_internal.h"

#define PA_ZE_MAX_HARVESTS 256

typedef struct harvest {
    _Atomic int refs;            /* references still held; 0 = slot free */
    ze_command_list_handle_t list;
} harvest_t;
static harvest_t harvests[PA_ZE_MAX_HARVESTS];

/* Where a drop has given up its reference: from here on another thread may claim the slot and
 * store its own list in it, so nothing of the slot is read after this point. A test build
 * defines it to yield, which makes that reuse happen (tests/unit/test_ze_harvest.c). */
#ifndef PA_ZE_HARVEST_AFTER_DROP
#define PA_ZE_HARVEST_AFTER_DROP() ((void)0)
#endif

int pa_ze_harvest_put(ze_command_list_handle_t list, int refs)
{
    for (int i = 0; i < PA_ZE_MAX_HARVESTS; i++) {
        int expect = 0;
        if (atomic_load_explicit(&harvests[i].refs, memory_order_relaxed) == 0 &&
            atomic_compare_exchange_strong(&harvests[i].refs, &expect, refs)) {
            harvests[i].list = list;  /* before any other reference exists: the caller's only */
            return i;
        }
    }
    return -1;
}

void pa_ze_harvest_set(int slot, int refs)
{
    atomic_store(&harvests[slot].refs, refs);
}

void pa_ze_harvest_ref(int slot)
{
    atomic_fetch_add(&harvests[slot].refs, 1);
}

ze_command_list_handle_t pa_ze_harvest_drop(int slot)
{
    if (slot < 0)
        return NULL;
    /* Read while the caller's reference still pins the slot. Reading it after the decrement
     * returned the list of whichever thread reclaimed the slot meanwhile: the agent destroyed a
     * list another thread was submitting, and later destroyed it a second time (SIGSEGV in the
     * driver's zeCommandQueueExecuteCommandLists and zeCommandListDestroy, samples/multithread
     * about once in 50 runs of 4 threads x 2000 executions). */
    ze_command_list_handle_t list = harvests[slot].list;
    if (atomic_fetch_sub(&harvests[slot].refs, 1) != 1)
        return NULL;
    PA_ZE_HARVEST_AFTER_DROP();
    return list;
}
