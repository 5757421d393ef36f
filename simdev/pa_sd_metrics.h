/* pa_sd_metrics.h - device side of metric streams: EU-stall sampling state per device, kernel
 * sampling while engines run, the report buffer the zet streamer reads (README "EU-stall"). */
#ifndef PA_SD_METRICS_H
#define PA_SD_METRICS_H

#include "pa_sd_internal.h"
#include "pa_sd_isa.h"

/* One EU-stall raw report (PVC layout): IP bits 0-28 in 8-byte units, nine 8-bit counters from
 * bit 29 (active, other, control, pipe, send, dist, sbid, sync, inst_fetch), bytes 48-49
 * subslice, bytes 50-51 flags (bit 8 = data was dropped before this report). */
typedef struct pa_sd_eustall_report { uint8_t b[SIMDEV_EUSTALL_REPORT_BYTES]; } pa_sd_eustall_report;
_Static_assert(sizeof(pa_sd_eustall_report) == 64, "EU-stall report is 64 bytes");
#define PA_SD_EUSTALL_FLAG_OVERFLOW 0x100u

/* Raw counter order inside a report (differs from the metric order). */
enum { PA_SD_RAW_ACTIVE, PA_SD_RAW_OTHER, PA_SD_RAW_CONTROL, PA_SD_RAW_PIPE, PA_SD_RAW_SEND,
       PA_SD_RAW_DIST, PA_SD_RAW_SBID, PA_SD_RAW_SYNC, PA_SD_RAW_INSTFETCH, PA_SD_RAW_COUNT };

/* The device side every metric streamer shares (streamer.c): its lock, whether it is open and
 * which open it is, and the notification event. One per device and kind, statically initialized
 * with PA_SD_STREAMER_INIT; every function below but _atfork is called with mu held. */
typedef struct pa_sd_streamer {
    pthread_mutex_t mu;
    bool open;
    uint64_t gen;         /* bumped at every open: a handle of an older open reads nothing */
    uint32_t notify_n;    /* the event is signalled while >= notify_n reports are pending */
    ze_event_handle_t ev; /* NULL: none */
    bool ev_set;          /* we signalled ev and have not reset it */
} pa_sd_streamer;
#define PA_SD_STREAMER_INIT {.mu = PTHREAD_MUTEX_INITIALIZER}

/*! pa_sd_streamer_begin(s, notify_n, ev, gen) : 1 when s is open already; else s opened with a
 *  new generation in *gen, 0. */
PA_SD_HIDDEN int pa_sd_streamer_begin(pa_sd_streamer *s, uint32_t notify_n, ze_event_handle_t ev, uint64_t *gen);
/*! pa_sd_streamer_is(s, gen) : s is open, by the open that returned gen. */
PA_SD_HIDDEN bool pa_sd_streamer_is(const pa_sd_streamer *s, uint64_t gen);
/*! pa_sd_streamer_end(s) : closed, its event forgotten (never signalled again). */
PA_SD_HIDDEN void pa_sd_streamer_end(pa_sd_streamer *s);
/*! pa_sd_streamer_notify(s, pending) : the event follows "pending >= notify_n" (signalled or reset
 *  on a change only); a destroyed event is left alone. */
PA_SD_HIDDEN void pa_sd_streamer_notify(pa_sd_streamer *s, uint64_t pending);
/*! pa_sd_streamer_capacity(bytes, report_bytes) : reports a buffer of `bytes` holds, 1..UINT32_MAX. */
PA_SD_HIDDEN uint32_t pa_sd_streamer_capacity(uint64_t bytes, uint32_t report_bytes);
/*! pa_sd_streamer_atfork(s, phase) : PA_SD_FORK_PREPARE locks mu, _PARENT unlocks it; _CHILD ends
 *  s and re-creates mu, returning true: the caller then drops its buffer (no streamer in a child). */
PA_SD_HIDDEN bool pa_sd_streamer_atfork(pa_sd_streamer *s, int phase);

/*! pa_sd_metrics_init() : read ZET_ENABLE_METRICS (once, at the first zeInit). */
PA_SD_HIDDEN void pa_sd_metrics_init(void);
/*! pa_sd_metrics_enabled() : ZET_ENABLE_METRICS was a non-zero integer at zeInit. */
PA_SD_HIDDEN bool pa_sd_metrics_enabled(void);

/*! pa_sd_eustall_round_period(ns) : the sampling period the device supports nearest to ns:
 *  unit = clamp(ns / tick / 251, 1, 7), period = unit * 251 * tick, tick = 1e9 / timer Hz (integer
 *  ns, >= 1). */
PA_SD_HIDDEN uint32_t pa_sd_eustall_round_period(uint64_t ns);
/*! pa_sd_eustall_capacity() : device report buffer capacity in reports (SIMDEV_EUSTALL_BUFFER_KB). */
PA_SD_HIDDEN uint32_t pa_sd_eustall_capacity(void);

/*! pa_sd_eustall_open(dev, period_ns, notify_n, event, gen) : start sampling on dev; 0 and the
 *  sampling generation in *gen, 1 when sampling is already open on dev, -1 when out of memory. */
PA_SD_HIDDEN int pa_sd_eustall_open(pa_sd_device *dev, uint32_t period_ns, uint32_t notify_n, ze_event_handle_t ev,
                                    uint64_t *gen);
/*! pa_sd_eustall_close(dev, gen) : stop sampling generation gen, discard pending reports. */
PA_SD_HIDDEN void pa_sd_eustall_close(pa_sd_device *dev, uint64_t gen);
/*! pa_sd_eustall_read(dev, gen, out, max, lost) : move up to max pending reports to out; *lost set
 *  when reports were dropped since the previous read. Returns the number copied (0 when gen is not
 *  the open generation). */
PA_SD_HIDDEN uint32_t pa_sd_eustall_read(pa_sd_device *dev, uint64_t gen, uint8_t *out, uint32_t max, bool *lost);

/*! pa_sd_kernel_threads(groups, gsize) : busy hardware threads of a launch:
 *  min(groups * ceil(group size / SIMD width 8), 2048), at least 1. */
PA_SD_HIDDEN uint32_t pa_sd_kernel_threads(uint64_t groups, const uint32_t gsize[3]);
/*! pa_sd_eustall_kernel(dev, isa, base, threads, start, end) : hold the engine until host time end
 *  while the kernel's threads are sampled at every sampling instant in (start, end] (README
 *  "Where samples come from"). Returns end. */
PA_SD_HIDDEN uint64_t pa_sd_eustall_kernel(pa_sd_device *dev, const pa_sd_isa *isa, uint64_t base,
                                           uint32_t threads, uint64_t start, uint64_t end);
/* ---- ComputeBasic (metrics_oa.c) ---- */
#define PA_SD_OA_METRICS 26u
typedef struct pa_sd_oa_metric {
    const char *name, *desc;
    zet_metric_type_t type;
    zet_value_type_t result;
    const char *units;
} pa_sd_oa_metric;
/*! pa_sd_oa_metric_at(i) : metric i of ComputeBasic (NULL past the end). */
PA_SD_HIDDEN const pa_sd_oa_metric *pa_sd_oa_metric_at(uint32_t i);
/*! pa_sd_oa_round_period(ns) : largest 2^(e+1) timestamp ticks (e = 0..31) <= ns that is >= 10 us,
 *  in integer ns (the smallest such when ns is below it). */
PA_SD_HIDDEN uint32_t pa_sd_oa_round_period(uint64_t ns);
/*! pa_sd_oa_capacity() : report buffer capacity in reports (SIMDEV_OA_BUFFER_KB). */
PA_SD_HIDDEN uint32_t pa_sd_oa_capacity(void);
/*! pa_sd_oa_open / _close / _read : as the EU-stall ones, for the ComputeBasic stream. */
PA_SD_HIDDEN int pa_sd_oa_open(pa_sd_device *dev, uint32_t period_ns, uint32_t notify_n, ze_event_handle_t ev, uint64_t *gen);
PA_SD_HIDDEN void pa_sd_oa_close(pa_sd_device *dev, uint64_t gen);
PA_SD_HIDDEN uint32_t pa_sd_oa_read(pa_sd_device *dev, uint64_t gen, uint8_t *out, uint32_t max, bool *lost);
/*! pa_sd_oa_calculate(type, size, raw, count, values) : one set of PA_SD_OA_METRICS values per
 *  report (METRIC_VALUES) or the per-metric maximum (MAX_METRIC_VALUES). */
PA_SD_HIDDEN ze_result_t pa_sd_oa_calculate(zet_metric_group_calculation_type_t type, size_t size, const uint8_t *raw,
                                            uint32_t *pCount, zet_typed_value_t *values);
PA_SD_HIDDEN void pa_sd_oa_atfork(int phase);

/*! pa_sd_eustall_atfork(phase) : fork handler (PA_SD_FORK_*): a child starts with no streamer. */
PA_SD_HIDDEN void pa_sd_eustall_atfork(int phase);

#endif /* PA_SD_METRICS_H */
