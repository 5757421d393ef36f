/* pa_devmetrics.h - payloads of the device metric source's records (PA_REC_DM_*, PA_SP_DM_*). */
#ifndef PA_DEVMETRICS_REC_H
#define PA_DEVMETRICS_REC_H

#include <stddef.h>
#include <stdint.h>

/* PA_REC_DM_PEAKS payload: one device's properties the utilization peaks are computed from
 * (docs/utilization.md "Peaks"); 0 = not known (the device or driver did not say). */
typedef struct pa_dm_peaks {
    uint32_t device;
    uint32_t xve_count;        /* numSlices x numSubslicesPerSlice x numEUsPerSubslice */
    uint32_t threads_per_xve;  /* numThreadsPerEU */
    uint32_t core_mhz;         /* ze_device_properties_t.coreClockRate (max MHz) */
    uint64_t mem_peak_bps;     /* zesMemoryGetBandwidth maxBandwidth, else memory properties:
                                  maxClockRate MHz x 1e6 x 2 (DDR) x maxBusWidth / 8; B/s */
    uint64_t pcie_peak_bps;    /* zesDevicePciGetProperties maxSpeed.maxBandwidth, B/s per direction */
} pa_dm_peaks_t;
_Static_assert(sizeof(pa_dm_peaks_t) == 32, "pa_dm_peaks_t layout");

/* PA_REC_DM_SYSMAN payload: one reading of the device's sysman counters (zes_api.h), as a user's
 * tool reads them; a counter the device did not give is UINT64_MAX. */
typedef struct pa_dm_sysman {
    uint32_t device, pad;
    uint64_t host_ns;          /* CLOCK_MONOTONIC when read */
    uint64_t engine_ts_us;     /* zes_engine_stats_t.timestamp of the reads below (us) */
    uint64_t active_us[3];     /* activeTime of the ALL, COMPUTE_ALL, COPY_ALL engine groups (us) */
    uint64_t mem_ts_us;        /* zes_mem_bandwidth_t.timestamp (us) */
    uint64_t mem_read, mem_write; /* readCounter / writeCounter (bytes) */
    uint64_t pci_ts_us;        /* zes_pci_stats_t.timestamp (us) */
    uint64_t pci_rx, pci_tx;   /* rxCounter / txCounter (bytes) */
} pa_dm_sysman_t;
_Static_assert(sizeof(pa_dm_sysman_t) == 96, "pa_dm_sysman_t layout");

#define PA_DM_SYSMAN_NONE UINT64_MAX

/* ---- packed metric intervals (pa_dmpack.c): PA_REC_DM_SAMPLES payloads and METRIC_CHUNKS.data ----
 * A chunk holds n consecutive intervals of one device with nmetrics values each, as varints
 * (LEB128, 7 bits a byte, low first); zz(x) = zigzag (x << 1 ^ x >> 63). Each interval is either
 *   a varint t, t even: zz(start - previous end) = t >> 1 (the first interval: start - the
 *     chunk's base, its startNs), then zz(duration - previous duration) (the first: - 0), then
 *     nmetrics values, each a varint h:
 *       h even: an integral value (|v| < 2^53), v = the metric's previous integral value in the
 *               chunk (0 at first) + unzigzag(h >> 1);
 *       h == 1: a float32 (4 bytes little endian) follows; h == 3: a float64 (8 bytes);
 *   or t odd: t >> 1 (>= 1) intervals repeating the last one: each starts where the previous
 *     ended, with its duration, every integral metric advanced by the step of its last written
 *     value (its value minus the one before, 0 when that was not integral), every other metric
 *     the same value. An idle device's intervals cost nothing but the run's count; a steady
 *     stream about one byte a value. Documented in docs/utilization.md ("METRIC_CHUNKS"). */
typedef struct pa_dm_mstate {
    int64_t prev, step;           /* last integral value, its step */
    uint64_t bits;                /* last non-integral value (double bits) */
    int is_float;                 /* the last value was not integral */
} pa_dm_mstate_t;

typedef struct pa_dm_pack {
    uint8_t *buf;                 /* encoded bytes (malloc'd, grows) */
    size_t len, cap;
    uint32_t nmetrics, n, rep;    /* values per interval, intervals so far, repeats not written yet */
    uint64_t base, prev_end, prev_dur;
    pa_dm_mstate_t *st;           /* per metric */
    /* the repeat test in one compare: exp[k] = the bits a repeat of the last interval has in
     * metric k (its integral value plus its step, or its non-integral bits); nsteps metrics in
     * stepping[] advance on each repeat; inexact > 0: an expected integral value is >= 2^53
     * (then tested metric by metric) */
    double *exp;
    uint32_t *stepping;
    uint32_t nsteps, inexact;
} pa_dm_pack_t;

/*! pa_dm_pack_init(p, nmetrics) : an empty chunk. Returns 0, -1 when out of memory. */
int pa_dm_pack_init(pa_dm_pack_t *p, uint32_t nmetrics);
/*! pa_dm_pack_reset(p) : empty the chunk (keeps its buffers). */
void pa_dm_pack_reset(pa_dm_pack_t *p);
/*! pa_dm_pack_add(p, start, dur, v) : append one interval [start, start + dur) ns with
 *  nmetrics values. Returns 0, -1 when out of memory (the chunk is unchanged). */
int pa_dm_pack_add(pa_dm_pack_t *p, uint64_t start, uint64_t dur, const double *v);
/*! pa_dm_pack_finish(p) : write the pending run of repeats: buf/len are then the whole chunk. */
void pa_dm_pack_finish(pa_dm_pack_t *p);
/*! pa_dm_pack_free(p) : release the buffers. */
void pa_dm_pack_free(pa_dm_pack_t *p);

typedef struct pa_dm_unpack {
    const uint8_t *p, *end;
    uint32_t nmetrics;
    uint64_t prev_end, prev_dur, rep;
    pa_dm_mstate_t *st;           /* caller's array of nmetrics */
    const uint8_t *keep;          /* per metric: decode it (NULL = all; pa_dm_unpack_keep) */
    int first_done;
} pa_dm_unpack_t;

/*! pa_dm_unpack_init(u, data, len, base, nmetrics, st) : read a chunk whose first interval is
 *  relative to base; st = scratch of nmetrics owned by the caller. */
void pa_dm_unpack_init(pa_dm_unpack_t *u, const void *data, size_t len, uint64_t base, uint32_t nmetrics,
                       pa_dm_mstate_t *st);
/*! pa_dm_unpack_next(u, start, dur, v) : the next interval (v: nmetrics doubles, may be NULL to
 *  skip the values). Returns 1, 0 at the end, -1 when the data is malformed (truncated). */
int pa_dm_unpack_next(pa_dm_unpack_t *u, uint64_t *start, uint64_t *dur, double *v);
/*! pa_dm_unpack_keep(u, keep) : from now on only the metrics k with keep[k] != 0 are decoded into
 *  v[k] (the others are stepped over, v[k] left as it is): a reader that needs a few of a group's
 *  metrics skips the rest's arithmetic. keep (nmetrics bytes) must outlive u; call it right after
 *  pa_dm_unpack_init. */
void pa_dm_unpack_keep(pa_dm_unpack_t *u, const uint8_t *keep);

#endif
