/* agg_proj.h - HGTX-to-device projection in the aggregator (issue 5): hooks and result keys. */
#ifndef PA_AGG_PROJ_H
#define PA_AGG_PROJ_H

#include "agg_internal.h"

/* PA_SP_HGTX_ASSOC u.raw[2]: how an op is associated with a range (DB HGTX_OP_ASSOC.how). */
enum pa_proj_via {
    PA_PROJ_DIRECT = 0,  /* launched by an API call made while the range was open */
    PA_PROJ_VIA_GRAPH = 1, /* executed regular list whose command was appended in the range */
    PA_PROJ_VIA_EXEC = 2,  /* executed regular list, execute call made in the range (counts
                              always: graph mapping adds how 1 to it, no-graph-mapping drops 1) */
};

/* Result rows of category PA_CAT_HGTX_PROJ (key = range display name "domain:name"), tag =
 * PA_PROJ_TAG_* | style (0 push/pop, 1 start/end). Graph mapping on (the reports' default):
 * every association of a (range, op) pair, counted once. */
#define PA_PROJ_TAG_DUR 0u     /* one sample per range instance with >= 1 op: projected duration ns */
#define PA_PROJ_TAG_OPS 2u     /* one sample per such instance: its number of device ops */
#define PA_PROJ_TAG_ACTIVE 4u  /* one sample: Proj Active Time ns (union of instance spans) */
#define PA_PROJ_TAG_SPAN 8u    /* key "device span": first device op start to last op end, ns */
#define PA_PROJ_TAG_DROPPED 9u /* key "dropped": launch snapshots refused (bounds / OOM) */
#define PA_PROJ_TAG_LIVE 10u   /* key "live at finish": launch snapshots + range instances still
                                  held when the session stopped (before they are resolved) */

/*! pa_agg_proj_api() : every PA_REC_ZE_API ring record (in its thread's order): saves the ranges
 *  open on that thread for launch calls (appends, execute) under the call's correlation id. */
void pa_agg_proj_api(pa_agg_t *a, const pa_record_t *rec);
/*! pa_agg_proj_op() : every device op right after its PA_SP_ZE_OP was spooled (op ids count
 *  those records from 1); `rec` t0/t1 are device start/end ns, tid the launching thread. */
void pa_agg_proj_op(pa_agg_t *a, const pa_record_t *rec, const pa_ze_op_t *op);
/*! pa_agg_proj_range() : every PA_SP_HGTX_RANGE spool record (a range instance closed). */
void pa_agg_proj_range(pa_agg_t *a, const pa_record_t *range);
/*! pa_agg_proj_thread_exit() : thread `tid` exited and its records were all drained: its launch
 *  history is freed unless a range it ended may still be closed (its end came before the start). */
void pa_agg_proj_thread_exit(pa_agg_t *a, uint32_t tid);
/*! pa_agg_proj_finish() : at stop after the HGTX finish: resolves what waits, finalizes every
 *  instance, adds the PA_CAT_HGTX_PROJ rows, frees the state. */
void pa_agg_proj_finish(pa_agg_t *a);

#endif
