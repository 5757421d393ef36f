/* devmetrics.h - device metric streams (time-based metric groups, e.g. ComputeBasic) as a source. */
#ifndef PA_DEVMETRICS_H
#define PA_DEVMETRICS_H

#include <stdint.h>

#include "../common/pa_record.h"
#include "../common/pa_ring.h"

/*! pa_dm_start() : sets ZET_ENABLE_METRICS=1 (unless the user set it), zeInit(0), finds the
 *  time-based group `group` on every device (one warning naming the groups that exist when a
 *  device has none of that name) and starts one streamer reader per device, sampling every
 *  `period_us` (the driver rounds it). Returns the number of devices streaming (0 is no error). */
int pa_dm_start(const char *group, uint64_t period_us);
/*! pa_dm_stop() : exit path: every reader reads once more, writes its last interval, closes its
 *  streamer; each join bounded by 2 s. */
void pa_dm_stop(void);
/*! pa_dm_after_fork_child() : readers do not exist in a fork child: forget them. */
void pa_dm_after_fork_child(void);

/* Reader rings (devmetrics_source.c). */
pa_ring_t *pa_dm_ring_open(uint32_t device);
void pa_dm_ring_emit(pa_ring_t *r, const pa_record_t *rec, const void *payload, uint32_t len);
void pa_dm_ring_close(pa_ring_t *r);

#endif
