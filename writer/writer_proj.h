/* writer_proj.h - HGTX-to-device projection in the writer: its DB source and summary rows. */
#ifndef PA_WRITER_PROJ_H
#define PA_WRITER_PROJ_H

#include <stddef.h>
#include <stdint.h>

#include "writer_internal.h"

/* The writer source of PA_SP_HGTX_ASSOC (table HGTX_OP_ASSOC) and the summary section. */
extern const pa_writer_source_t pa_writer_source_proj;

/* One row of the online projection (hgtx_gpu_proj_sum with default options). */
typedef struct pa_proj_sum_row {
    const char *key; size_t key_len;  /* range display name, points into the results */
    uint32_t style;                   /* 0 push/pop, 1 start/end */
    uint64_t active_ns;               /* Proj Active Time: union of instance projections */
    uint64_t total_proj_ns;           /* sum of instance projected durations */
    uint64_t instances, ops;          /* instances with >= 1 device op; their ops */
    double in_use_pct;                /* active / device active span, capped at 100 */
} pa_proj_sum_row_t;

/*! pa_proj_summary_rows() : the aggregator's PA_CAT_HGTX_PROJ rows as at most `max` rows in the
 *  report's order (In-Use desc, then name); *span_ns = first-to-last device activity (ns, the
 *  range-mode=active denominator). Returns the number of rows written. */
size_t pa_proj_summary_rows(const pa_agg_results_t *res, pa_proj_sum_row_t *out, size_t max,
                            uint64_t *span_ns);

/* The hgtx-name report option (spec 2.3.5-2.3.8), shared by the kernel reports of report_ze.c. */
#define PA_PROJ_OPT_HGTX_NAME {"hgtx-name", PA_OPT_FLAG, "", "Prefix each kernel name with the name of the closest HGTX range open at its\nlaunch and '/' (kernels launched outside any range keep their name). For a\nkernel of a regular command list: the innermost range open when it was\nappended, else the innermost open around its execute call.", NULL}

/*! pa_proj_kname_sql() : SQL expression of a kernel's display name for rows `o` (ZE_OPS) joined
 *  with `s` (STRING_IDS of o.nameId): ze_kname(s.value, mode), prefixed with "<range>/" when
 *  hgtx_name is set (closest range = the associated one that started last, preferring ranges
 *  open at the launch/append (HGTX_OP_ASSOC.how 0, 1) over those around an execute (how 2)).
 *  Written to buf (512 bytes suffice); returns buf. */
const char *pa_proj_kname_sql(int hgtx_name, int mode, char *buf, size_t sz);

#endif
