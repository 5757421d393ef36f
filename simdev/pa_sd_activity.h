/* pa_sd_activity.h - what each device's engines executed, on one timeline: per-command totals
 * (instructions per pipe, bytes per path) spread uniformly over the command's device time, read
 * by the ComputeBasic metric stream and by sysman (README "Activity accounting"). */
#ifndef PA_SD_ACTIVITY_H
#define PA_SD_ACTIVITY_H

#include "pa_sd_internal.h"

/* Counters of a command (totals) and of a device (cumulative). */
enum {
    PA_SD_C_ALU0, PA_SD_C_ALU1, PA_SD_C_XMX, PA_SD_C_SEND, PA_SD_C_CONTROL, /* instructions */
    PA_SD_C_GMEM_READ, PA_SD_C_GMEM_WRITE, PA_SD_C_L3_READ, PA_SD_C_L3_WRITE, PA_SD_C_SLM_READ,
    PA_SD_C_SLM_WRITE,                                                       /* bytes */
    PA_SD_C_EU_ACTIVE, PA_SD_C_EU_STALL,                                     /* EU-cycles */
    PA_SD_C_THREAD_NS,                                                       /* thread-ns resident */
    PA_SD_C_H2D, PA_SD_C_D2H, PA_SD_C_D2D, PA_SD_C_PEER, PA_SD_C_FILL,       /* copy/fill bytes */
    PA_SD_C_COUNT
};
/* Busy-time unions (ns): any engine, the compute group (ordinal 0), the copy group (ordinal 1). */
enum { PA_SD_BUSY_ANY, PA_SD_BUSY_COMPUTE, PA_SD_BUSY_COPY, PA_SD_BUSY_COUNT };
#define PA_SD_ENGINES (SIMDEV_NUM_COMPUTE_ENGINES + SIMDEV_NUM_COPY_ENGINES)

typedef struct pa_sd_counters {
    uint64_t at_ns;                     /* host CLOCK_MONOTONIC the values hold at */
    uint64_t c[PA_SD_C_COUNT];
    uint64_t busy[PA_SD_BUSY_COUNT];
    uint64_t engine_busy[PA_SD_ENGINES]; /* compute engines 0..3, then copy engines 0..1 */
} pa_sd_counters;

/*! pa_sd_activity_begin(eng, start) : eng started a command at host time start whose totals are
 *  not known yet; the device timeline does not advance past start until it is added. */
PA_SD_HIDDEN void pa_sd_activity_begin(pa_sd_engine *eng, uint64_t start);
/*! pa_sd_activity_add(eng, start, end, totals) : the command on eng covers [start, end) with these
 *  totals (PA_SD_C_COUNT values), spread uniformly over it; ends a begin. */
PA_SD_HIDDEN void pa_sd_activity_add(pa_sd_engine *eng, uint64_t start, uint64_t end, const uint64_t *totals);
/*! pa_sd_activity_read(dev, out) : the device counters at the latest instant every engine's work
 *  is known for (<= now). */
PA_SD_HIDDEN void pa_sd_activity_read(pa_sd_device *dev, pa_sd_counters *out);

/* Interval reports of the ComputeBasic stream: the activity timeline calls this for the period
 * boundaries it passes while a stream is open (metrics_oa.c): n >= 1 boundaries, the counters at
 * the last of them; with n > 1 nothing ran between the first and the last (their n - 1 intervals
 * are idle), so a stream over an idle device costs one call per advance, not per interval. */
typedef void (*pa_sd_activity_tick_fn)(pa_sd_device *dev, const pa_sd_counters *at_last, uint64_t n);
/*! pa_sd_activity_stream(dev, open_ns, period_ns, fn) : start calling fn at open_ns + k*period_ns
 *  (k >= 0, the first call gives the baseline, n = 1); period 0 stops. */
PA_SD_HIDDEN void pa_sd_activity_stream(pa_sd_device *dev, uint64_t open_ns, uint64_t period_ns, pa_sd_activity_tick_fn fn);
/*! pa_sd_activity_poll(dev) : advance the timeline to now (as far as known): streams report. */
PA_SD_HIDDEN void pa_sd_activity_poll(pa_sd_device *dev);
/*! pa_sd_activity_atfork(phase) : fork handler (PA_SD_FORK_*). */
PA_SD_HIDDEN void pa_sd_activity_atfork(int phase);

#endif /* PA_SD_ACTIVITY_H */
