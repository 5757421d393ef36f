/* agg_mem.c - device-memory records in the aggregator: STUB until the mem owner (issue 6) replaces it. */
#include "agg_internal.h"

void pa_agg_mem_record(pa_agg_t *a, const pa_record_t *rec, const uint8_t *payload)
{
    (void)a;
    (void)rec;
    (void)payload;
}

void pa_agg_mem_finish(pa_agg_t *a)
{
    (void)a;
}
