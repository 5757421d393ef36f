/* writer_dm.h - the device-utilization model shared by the exit summary and the reports: TPU
 * viewer units and DMA paths mapped to Intel counters (docs/utilization.md). */
#ifndef PA_WRITER_DM_H
#define PA_WRITER_DM_H

#include <stdint.h>
#include <stdio.h>

#include <sqlite3.h>

#include "../agg/agg.h"

/* An execution unit (spec/tpu-utilization-viewer.ja.txt) and its Intel pipe counter(s): achieved =
 * m1 (+ m2) instructions, peak = rate x XVE count x GpuCoreClocks; m1 NULL = no Intel counterpart. */
typedef struct pa_dm_unit { const char *unit, *m1, *m2, *label; double rate; } pa_dm_unit_t;
/* A DMA path: achieved = metric bytes, peak = bandwidth x GpuTime (PA_DM_PEAK_*). */
enum { PA_DM_PEAK_NONE = 0, PA_DM_PEAK_MEM = 1, PA_DM_PEAK_PCIE = 2 };
typedef struct pa_dm_path { const char *path, *metric; int peak; } pa_dm_path_t;

extern const pa_dm_unit_t pa_dm_units[];
extern const size_t pa_dm_nunits;
extern const pa_dm_path_t pa_dm_paths[];
extern const size_t pa_dm_npaths;

/*! pa_dm_sum() : the sum of metric `name` among n (names, sums); *have = 0 when the group lacks it. */
double pa_dm_sum(const char *const *names, const double *sums, uint32_t n, const char *name, int *have);
/*! pa_dm_path_bps() : peak bandwidth (B/s) of path p from a device's peaks; 0 = none known. */
double pa_dm_path_bps(const pa_dm_path_t *p, const pa_dm_peaks_t *pk);

/*! pa_dm_slack_ns() : how far apart a kernel's and a metric interval's edges may be and still
 *  "overlap" (ns): kernel times and metric intervals are placed on host time with separate clock
 *  pairs — the ze source's is the midpoint of its own clock around zeDeviceGetGlobalTimestamps,
 *  uncertain by half that call (~0.5-1 us on a quiet host, tens of us when the caller was
 *  preempted inside it: the largest bound it used is SESSION_COUNTERS ze_clock_pair_err_ns),
 *  the reader's the driver's pair — so two device ticks (ZE_DEVICES.timerHz) plus
 *  ze_clock_pair_err_ns plus PA_DM_PAIR_SLACK_NS for the reader's pair. */
#define PA_DM_PAIR_SLACK_NS 5000
long long pa_dm_slack_ns(sqlite3 *db);

/* One device's metric intervals decoded from METRIC_CHUNKS (writer/dm_series.c): n intervals
 * sorted by start, v[i * nmetrics + k] = value of metric k in interval i. */
typedef struct pa_dm_series {
    int64_t dev;
    uint32_t nmetrics;
    size_t n, cap;
    uint64_t *start, *dur;
    double *v;
    uint32_t *mark;      /* per interval: the last selection that counted it (pa_dm_series_mark) */
} pa_dm_series_t;

/*! pa_dm_series_load(db, dev_clause, out, nout) : every device's intervals (dev_clause: "" or
 *  " AND o.deviceId IN (...)", as pa_report_device_clause gives). *out is malloc'd (free with
 *  pa_dm_series_free), one entry per device with chunks, by device id. Returns 0, -1 when the DB
 *  has no METRIC_CHUNKS or out of memory; a malformed chunk keeps the intervals decoded before the
 *  damage and *bad counts it (may be NULL). */
int pa_dm_series_load(sqlite3 *db, const char *dev_clause, pa_dm_series_t **out, size_t *nout, size_t *bad);
/* A time window of one device (ns, host clock). */
typedef struct pa_dm_window { int64_t dev; uint64_t start, end; } pa_dm_window_t;
/*! pa_dm_series_load_windows(db, dev_clause, w, nw, slack, out, nout, bad) : as pa_dm_series_load,
 *  decoding only the chunks that overlap one of the *nw windows widened by slack (w is sorted
 *  and merged in place, *nw the merged count): what kernel= / range= and the busiest ranges need, without decoding a whole
 *  session's intervals. A series then holds those chunks' intervals only. */
int pa_dm_series_load_windows(sqlite3 *db, const char *dev_clause, pa_dm_window_t *w, size_t *nw, long long slack,
                              pa_dm_series_t **out, size_t *nout, size_t *bad);
void pa_dm_series_free(pa_dm_series_t *s, size_t n);
/*! pa_dm_chunk_raw(data, len, got, oom) : a METRIC_CHUNKS.data frame decompressed into a buffer
 *  reused by the next call (one thread makes reports), *got its bytes; NULL when malformed, or out
 *  of memory (*oom = 1). */
const uint8_t *pa_dm_chunk_raw(const void *data, size_t len, size_t *got, int *oom);
/*! pa_dm_series_find(s, n, dev) : the series of device dev, NULL when none. */
pa_dm_series_t *pa_dm_series_find(pa_dm_series_t *s, size_t n, int64_t dev);
/*! pa_dm_series_mark(s, start, end, slack, stamp, fn, arg) : every interval overlapping
 *  [start, end) with the slack of pa_dm_slack_ns (start < iv end + slack, end + slack > iv start)
 *  whose mark is not stamp yet gets it and is passed to fn(arg, s, i): each interval once per
 *  stamp. O(log n + hits). */
void pa_dm_series_mark(pa_dm_series_t *s, uint64_t start, uint64_t end, long long slack, uint32_t stamp,
                       void (*fn)(void *arg, const pa_dm_series_t *s, size_t i), void *arg);

/*! pa_dm_summary_units() : the exit summary's utilization section from the aggregator's online
 *  sums: per device, one line per unit and DMA path with achieved / peak, Util % and a text bar. */
void pa_dm_summary_units(FILE *out, const pa_dm_dev_res_t *dm, size_t n);
/*! pa_dm_summary_ranges() : the busiest HGTX ranges by compute utilization (the busiest unit over
 *  the metric intervals overlapping each range's device work, counted once), from the DB; prints
 *  nothing without ranges or metric intervals. */
void pa_dm_summary_ranges(sqlite3 *db, FILE *out);

#endif
