/* hostctr_internal.h - state shared by the host counter source's files (plan and per-thread groups). */
#ifndef PA_HOSTCTR_INTERNAL_H
#define PA_HOSTCTR_INTERNAL_H

#include "hostctr.h"

#define PA_HC_READ_FORMAT \
    (PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING)
#define PA_HC_NSUBST 3 /* task-clock, context-switches, page-faults */

typedef struct pa_hc_plan {
    pa_hc_event_t *ev;   /* asked events (in order), then substitutes */
    size_t nev;
    size_t asked;        /* names in the list (beyond the kept rows too) */
    uint32_t ntried;     /* encoded, not duplicates, within PA_HC_MAX_EVENTS */
    uint32_t ncounted;   /* events with a column, after the probe */
    int col_ev[PA_HC_MAX_EVENTS]; /* column -> index in ev */
    int pfm_ok, pfm_err;
} pa_hc_plan_t;

extern pa_hc_plan_t pa_hc_plan;

/*! pa_hc_encode() : libpfm4 encoding of `name` into e->attr / e->encoding (user level unless
 *  the name has :u/:k; context-switches and cpu-migrations at every level). 0, or -1 with
 *  e->detail set. */
int pa_hc_encode(const char *name, pa_hc_event_t *e);

/*! pa_hc_same_event() : both attributes count the same thing (duplicate names). */
int pa_hc_same_event(const struct perf_event_attr *a, const struct perf_event_attr *b);

/*! pa_hc_plan_clear() : empties the plan (keeps the storage). */
void pa_hc_plan_clear(void);

/*! pa_hc_thread_init() : creates the thread-exit key that closes a thread's group (once). */
void pa_hc_thread_init(void);

#endif
