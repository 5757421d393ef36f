/* agg_ze.c - Level Zero records in the aggregator: STUB until the ze owner (issue 4) replaces it. */
#include "agg_internal.h"

void pa_agg_ze_record(pa_agg_t *a, const pa_record_t *rec, const uint8_t *payload)
{
    (void)a;
    (void)rec;
    (void)payload;
}

void pa_agg_ze_finish(pa_agg_t *a)
{
    (void)a;
}
