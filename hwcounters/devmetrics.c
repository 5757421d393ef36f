/* devmetrics.c - device metric streams (PROFAGENT_METRICS=<group>): one time-based metric streamer
 * per device, a reader thread per device decoding reports with the driver's calculator into
 * per-interval values on host time, written to the reader's ring (PA_REC_DM_*). Every loader call
 * is in a window of the loader's teardown (collector/ze.h): none blocks (the readers sleep outside
 * the loader), and once the teardown began a reader ends without another call. */
#define _GNU_SOURCE /* pthread_cond_clockwait, pthread_timedjoin_np */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <level_zero/ze_api.h>
#include <level_zero/zet_api.h>

#include "../collector/collector.h"
#include "../collector/ze.h"
#include "../common/pa_clock.h"
#include "../common/pa_log.h"
#include "../common/pa_thread.h"
#include "../common/pa_source.h"
#include "devmetrics.h"

#define DM_MAX_DEVICES 16
#define DM_MAX_METRICS 1024         /* a group's metrics (the aggregator's and writer's bound too) */
#define DM_WAIT_NS 50000000ull      /* a read every 50 ms: at the shortest period (10 us) 5000
                                       reports, far below a 16 MiB OA buffer's 65536 */
#define DM_JOIN_NS 2000000000ll     /* bound of a reader join at exit */
#define DM_NOTIFY_EVERY 4096u       /* notifyEveryNReports (no event is given: the readers poll) */
#define DM_READ_BATCH 4096u         /* reports per zetMetricStreamerReadData (1 MiB of 256-byte reports) */
#define DM_CHUNK 4096u              /* intervals per ring record at most (one record per read) */
#define DM_CHUNK_BYTES (256u << 10) /* and packed bytes: a record stays far below the ring's 1 MiB
                                       payload bound whatever the group's metric count */
#define DM_SNAP_NS 2                /* device ticks -> ns rounding between consecutive intervals */

#define DM_FN(n) __typeof__(&n) n
static struct {
    DM_FN(zeDriverGet); DM_FN(zeDeviceGet); DM_FN(zeDeviceGetProperties);
    DM_FN(zeDeviceGetGlobalTimestamps); DM_FN(zeContextCreate);
    DM_FN(zetMetricGroupGet); DM_FN(zetMetricGroupGetProperties); DM_FN(zetMetricGet);
    DM_FN(zetMetricGetProperties); DM_FN(zetContextActivateMetricGroups); DM_FN(zetMetricStreamerOpen);
    DM_FN(zetMetricStreamerReadData); DM_FN(zetMetricStreamerClose); DM_FN(zetMetricGroupCalculateMetricValues);
} ze;

typedef struct dm_dev {
    uint32_t index;
    ze_device_handle_t h;
    ze_context_handle_t ctx;
    zet_metric_group_handle_t group;
    uint32_t nmetrics, begin_metric, time_metric;   /* QueryBeginTime / GpuTime indexes */
    char (*names)[ZET_MAX_METRIC_NAME];             /* nmetrics each (malloc'd) */
    char (*units)[ZET_MAX_METRIC_RESULT_UNITS];
    int64_t ref_host_ns, ref_dev_ns;                 /* a zeDeviceGetGlobalTimestamps pair */
    uint64_t timer_hz;
    /* reader */
    pthread_t th;
    int running;
    _Atomic int stop;
    zet_metric_streamer_handle_t s;
    pa_ring_t *ring;
    uint32_t period_ns;
    uint8_t *raw; size_t rawcap;
    zet_typed_value_t *vals; size_t valcap;
    pa_dm_pack_t pack;                                /* intervals ready for the ring, packed */
    double *sums;                                     /* per metric over the packed intervals */
    uint8_t *out; size_t outcap;                      /* the record's payload: sums, then the pack */
    int has_pending;                                  /* the last interval waits for its successor */
    uint64_t pend_start, pend_dur;
    double *pend_vals, *cur;                          /* nmetrics each */
    uint64_t dropped_reads;
    int abandoned;                                    /* the loader's teardown began: no more calls */
    pa_dm_sysman_dev_t sm;                            /* sysman beside the stream */
    uint64_t sm_last_ns;                              /* host ns of the last sysman reading */
} dm_dev_t;

#define DM_SYSMAN_EVERY_NS 10000000ull /* sysman readings while streaming: one per 10 ms at most */

static dm_dev_t devs[DM_MAX_DEVICES];
static uint32_t ndevs;

/* The readers sleep a period here; pa_dm_stop wakes them. Not the streamer's notification event:
 * a driver's event wait may share one lock and condition among all events (simdev does), so a
 * reader waiting there would wake at every signal of the application's events and take that
 * lock from the application's own waits. */
static pthread_mutex_t wake_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake_cv = PTHREAD_COND_INITIALIZER;

static int resolve(void)
{
    void *lib = dlopen("libze_loader.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!lib)
        lib = dlopen("libze_loader.so.1", RTLD_NOW);
    if (!lib)
        return -1;
#define R(n) if (!(*(void **)&ze.n = dlsym(lib, #n))) return -1;
    R(zeDriverGet) R(zeDeviceGet) R(zeDeviceGetProperties) R(zeDeviceGetGlobalTimestamps)
    R(zeContextCreate) R(zetMetricGroupGet) R(zetMetricGroupGetProperties)
    R(zetMetricGet) R(zetMetricGetProperties) R(zetContextActivateMetricGroups) R(zetMetricStreamerOpen)
    R(zetMetricStreamerReadData) R(zetMetricStreamerClose) R(zetMetricGroupCalculateMetricValues)
#undef R
    return 0;
}


static double tval(const zet_typed_value_t *v)
{
    switch (v->type) {
    case ZET_VALUE_TYPE_UINT32: return v->value.ui32;
    case ZET_VALUE_TYPE_UINT64: return (double)v->value.ui64;
    case ZET_VALUE_TYPE_FLOAT32: return v->value.fp32;
    case ZET_VALUE_TYPE_FLOAT64: return v->value.fp64;
    case ZET_VALUE_TYPE_BOOL8: return v->value.b8 != 0;
    default: return 0;
    }
}

/* The time-based group `want` of device d (its metric names and units); appends the names of the
 * groups the device has to `have` (for the warning). Returns 0 when found. */
/* a device has a group of the wanted name that cannot be streamed as intervals: 1 not time-based,
 * 2 time-based without an interval begin/duration metric (EuStallSampling: raw IP samples) */
static int named_unusable;

static int find_group(dm_dev_t *d, const char *want, char *have, size_t havesz)
{
    uint32_t n = 0;
    if (ze.zetMetricGroupGet(d->h, &n, NULL) != ZE_RESULT_SUCCESS || n == 0)
        return -1;
    zet_metric_group_handle_t g[64];
    if (n > 64)
        n = 64;
    if (ze.zetMetricGroupGet(d->h, &n, g) != ZE_RESULT_SUCCESS)
        return -1;
    int found = -1;
    for (uint32_t i = 0; i < n; i++) {
        zet_metric_group_properties_t p = {.stype = ZET_STRUCTURE_TYPE_METRIC_GROUP_PROPERTIES};
        if (ze.zetMetricGroupGetProperties(g[i], &p) != ZE_RESULT_SUCCESS)
            continue;
        size_t l = strlen(have);
        int tb = (p.samplingType & ZET_METRIC_GROUP_SAMPLING_TYPE_FLAG_TIME_BASED) != 0;
        snprintf(have + l, havesz - l, "%s%s%s", l && have[l - 1] != ' ' ? ", " : "", p.name,
                 tb ? "" : " (not time-based)");
        if (!tb && strcmp(p.name, want) == 0)
            named_unusable = 1;
        if (found == 0 || strcmp(p.name, want) != 0 || !(p.samplingType & ZET_METRIC_GROUP_SAMPLING_TYPE_FLAG_TIME_BASED))
            continue;
        uint32_t nm = 0;
        if (ze.zetMetricGet(g[i], &nm, NULL) != ZE_RESULT_SUCCESS || nm == 0)
            continue;
        if (nm > DM_MAX_METRICS) {
            pa_warn("metrics", "device %u: group %s has %u metrics; the first %u are collected", d->index, p.name, nm,
                    DM_MAX_METRICS);
            nm = DM_MAX_METRICS;
        }
        zet_metric_handle_t *m = malloc(nm * sizeof *m);
        free(d->names);
        free(d->units);
        d->names = malloc(nm * sizeof *d->names);
        d->units = malloc(nm * sizeof *d->units);
        if (!m || !d->names || !d->units || ze.zetMetricGet(g[i], &nm, m) != ZE_RESULT_SUCCESS) {
            free(m);
            continue;
        }
        d->begin_metric = d->time_metric = UINT32_MAX;
        for (uint32_t k = 0; k < nm; k++) {
            zet_metric_properties_t mp = {.stype = ZET_STRUCTURE_TYPE_METRIC_PROPERTIES};
            if (ze.zetMetricGetProperties(m[k], &mp) != ZE_RESULT_SUCCESS)
                mp.name[0] = mp.resultUnits[0] = '\0';
            snprintf(d->names[k], sizeof d->names[k], "%s", mp.name);
            snprintf(d->units[k], sizeof d->units[k], "%s", mp.resultUnits);
            if (mp.metricType == ZET_METRIC_TYPE_TIMESTAMP && d->begin_metric == UINT32_MAX)
                d->begin_metric = k;
            if (mp.metricType == ZET_METRIC_TYPE_DURATION && d->time_metric == UINT32_MAX)
                d->time_metric = k;
        }
        free(m);
        if (d->begin_metric == UINT32_MAX || d->time_metric == UINT32_MAX) {
            named_unusable = 2;
            continue; /* no interval begin/length: values could not be placed on the timeline */
        }
        d->group = g[i];
        d->nmetrics = nm;
        found = 0;
    }
    return found;
}

static void enumerate(const char *want, char *have, size_t havesz)
{
    uint32_t nd = 0;
    ze_driver_handle_t drv[8];
    if (ze.zeDriverGet(&nd, NULL) != ZE_RESULT_SUCCESS)
        return;
    if (nd > 8)
        nd = 8;
    if (ze.zeDriverGet(&nd, drv) != ZE_RESULT_SUCCESS)
        return;
    for (uint32_t i = 0; i < nd && ndevs < DM_MAX_DEVICES; i++) {
        ze_context_desc_t cd = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
        ze_context_handle_t ctx = NULL;
        if (ze.zeContextCreate(drv[i], &cd, &ctx) != ZE_RESULT_SUCCESS)
            ctx = NULL;
        uint32_t n = 0;
        ze_device_handle_t h[DM_MAX_DEVICES];
        if (ze.zeDeviceGet(drv[i], &n, NULL) != ZE_RESULT_SUCCESS)
            continue;
        if (n > DM_MAX_DEVICES - ndevs)
            n = DM_MAX_DEVICES - ndevs;
        if (ze.zeDeviceGet(drv[i], &n, h) != ZE_RESULT_SUCCESS)
            continue;
        for (uint32_t k = 0; k < n; k++) {
            dm_dev_t *d = &devs[ndevs];
            memset(d, 0, sizeof *d);
            d->index = ndevs++;
            d->h = h[k];
            d->ctx = ctx;
            size_t l = strlen(have);
            snprintf(have + l, havesz - l, "%sdevice %u: ", l ? "; " : "", d->index);
            size_t l2 = strlen(have);
            if (ctx)
                find_group(d, want, have, havesz);
            if (strlen(have) == l2)
                snprintf(have + l2, havesz - l2, "no metric groups");
        }
    }
}

/* Ring record of the device's streamer state and its metric names and units. */
static void emit_device(dm_dev_t *d, uint32_t state, ze_result_t res, const char *group)
{
    if (!d->ring)
        return;
    size_t cap = ZET_MAX_METRIC_GROUP_NAME + d->nmetrics * (ZET_MAX_METRIC_NAME + ZET_MAX_METRIC_RESULT_UNITS);
    char *buf = malloc(cap), *p = buf;
    if (!buf)
        return;
    p += snprintf(p, ZET_MAX_METRIC_GROUP_NAME, "%s", group) + 1;
    for (uint32_t k = 0; k < d->nmetrics; k++) {
        p = stpcpy(p, d->names[k]) + 1;
        p = stpcpy(p, d->units[k]) + 1;
    }
    pa_record_t rec = {.kind = PA_REC_DM_DEVICE, .t0 = pa_clock_ns()};
    rec.u.raw[0] = d->index;
    rec.u.raw[1] = state;
    rec.u.raw[2] = d->period_ns;
    rec.u.raw[3] = (uint32_t)res;
    pa_dm_ring_emit(d->ring, &rec, buf, (uint32_t)(p - buf));
    free(buf);
}

/* A sysman reading of device d into its ring (after the stream's reports up to now were read, so
 * both cover the same time). */
static void emit_sysman(dm_dev_t *d)
{
    if (!d->sm.device)
        return;
    pa_dm_sysman_t v;
    if (!pa_ze_call_enter()) {
        d->abandoned = 1;
        return;
    }
    pa_dm_sysman_read(&d->sm, d->index, &v);
    pa_ze_call_leave();
    d->sm_last_ns = v.host_ns;
    pa_record_t rec = {.kind = PA_REC_DM_SYSMAN, .t0 = v.host_ns};
    rec.u.raw[0] = d->index;
    pa_dm_ring_emit(d->ring, &rec, &v, sizeof v);
}

static void emit_peaks(dm_dev_t *d)
{
    pa_dm_peaks_t pk;
    pa_dm_peaks_read(&d->sm, d->h, d->index, &pk);
    pa_record_t rec = {.kind = PA_REC_DM_PEAKS, .t0 = pa_clock_ns()};
    rec.u.raw[0] = d->index;
    pa_dm_ring_emit(d->ring, &rec, &pk, sizeof pk);
}

/* One ring record of the packed intervals: u.raw = {device, nmetrics, intervals, dropped reads},
 * [t0, t1) = from the first start to the last end; payload = nmetrics sums (doubles) then the pack. */
static void flush_out(dm_dev_t *d)
{
    if (!d->pack.n)
        return;
    pa_dm_pack_finish(&d->pack);
    size_t sl = 8 * (size_t)d->nmetrics, need = sl + d->pack.len;
    if (need > d->outcap) {
        uint8_t *nb = realloc(d->out, need);
        if (!nb) { /* out of memory: these intervals are lost (the stream shows the gap) */
            pa_dm_pack_reset(&d->pack);
            memset(d->sums, 0, sl);
            return;
        }
        d->out = nb;
        d->outcap = need;
    }
    memcpy(d->out, d->sums, sl);
    memcpy(d->out + sl, d->pack.buf, d->pack.len);
    pa_record_t rec = {.kind = PA_REC_DM_SAMPLES, .t0 = d->pack.base, .t1 = d->pack.prev_end};
    rec.u.raw[0] = d->index;
    rec.u.raw[1] = d->nmetrics;
    rec.u.raw[2] = d->pack.n;
    rec.u.raw[3] = d->dropped_reads;
    pa_dm_ring_emit(d->ring, &rec, d->out, (uint32_t)need);
    pa_dm_pack_reset(&d->pack);
    memset(d->sums, 0, sl);
}

static void push_pending(dm_dev_t *d)
{
    if (pa_dm_pack_add(&d->pack, d->pend_start, d->pend_dur, d->pend_vals) != 0)
        return;
    double *restrict sums = d->sums;
    const double *restrict v = d->pend_vals;
    uint32_t k = 0, n = d->nmetrics;
    for (; k + 4 <= n; k += 4) { /* four a step: the compiler pairs them */
        sums[k] += v[k];
        sums[k + 1] += v[k + 1];
        sums[k + 2] += v[k + 2];
        sums[k + 3] += v[k + 3];
    }
    for (; k < n; k++)
        sums[k] += v[k];
    if (d->pack.n == DM_CHUNK || d->pack.len >= DM_CHUNK_BYTES)
        flush_out(d);
}

/* One interval. The driver's intervals tile its stream in ns (open + k * GpuTime), but the begin
 * timestamp is in device ticks, so QueryBeginTime is up to one tick early: an interval that begins
 * within a tick of its predecessor's end begins exactly there, and a run of intervals tiles without
 * gaps or overlaps; a larger gap (reports dropped) keeps the converted begin. */
static void add_interval(dm_dev_t *d, const zet_typed_value_t *v)
{
    double *restrict cur = d->cur;
    for (uint32_t k = 0, n = d->nmetrics; k < n; k++) /* the common types first, the rest in tval */
        cur[k] = v[k].type == ZET_VALUE_TYPE_UINT64 ? (double)v[k].value.ui64
               : v[k].type == ZET_VALUE_TYPE_FLOAT32 ? (double)v[k].value.fp32 : tval(&v[k]);
    int64_t begin_dev = (int64_t)d->cur[d->begin_metric];
    uint64_t dur = (uint64_t)d->cur[d->time_metric];
    int64_t host = d->ref_host_ns + (begin_dev - d->ref_dev_ns);
    uint64_t start = host > 0 ? (uint64_t)host : 0;
    if (d->has_pending) {
        int64_t tick = (int64_t)(1000000000ull / d->timer_hz) + DM_SNAP_NS;
        int64_t gap = (int64_t)start - (int64_t)(d->pend_start + d->pend_dur);
        if (gap >= -tick && gap <= tick)
            start = d->pend_start + d->pend_dur;
        push_pending(d);
    }
    d->pend_start = start;
    d->pend_dur = dur;
    double *t = d->pend_vals; /* the values just converted become the pending ones */
    d->pend_vals = d->cur;
    d->cur = t;
    d->has_pending = 1;
}

/* One batch of at most DM_READ_BATCH reports, calculated in one call; returns the reports read. */
static uint32_t read_batch_in(dm_dev_t *d)
{
    size_t cap = 0;
    if (ze.zetMetricStreamerReadData(d->s, DM_READ_BATCH, &cap, NULL) != ZE_RESULT_SUCCESS || cap == 0)
        return 0;
    if (cap > d->rawcap) {
        uint8_t *nb = realloc(d->raw, cap);
        if (!nb)
            return 0;
        d->raw = nb;
        d->rawcap = cap;
    }
    size_t got = cap;
    ze_result_t res = ze.zetMetricStreamerReadData(d->s, DM_READ_BATCH, &got, d->raw);
    if (res == ZE_RESULT_WARNING_DROPPED_DATA)
        d->dropped_reads++;
    else if (res != ZE_RESULT_SUCCESS)
        return 0;
    uint32_t nv = 0;
    /* a report after a loss carries the driver's flag: the calculation then warns, values stay good */
    ze_result_t cr = got ? ze.zetMetricGroupCalculateMetricValues(d->group, ZET_METRIC_GROUP_CALCULATION_TYPE_METRIC_VALUES,
                                                                   got, d->raw, &nv, NULL) : ZE_RESULT_NOT_READY;
    if ((cr != ZE_RESULT_SUCCESS && cr != ZE_RESULT_WARNING_DROPPED_DATA) || !nv)
        return 0;
    if (nv > d->valcap) {
        zet_typed_value_t *n = realloc(d->vals, nv * sizeof *n);
        if (!n)
            return 0;
        d->vals = n;
        d->valcap = nv;
    }
    cr = ze.zetMetricGroupCalculateMetricValues(d->group, ZET_METRIC_GROUP_CALCULATION_TYPE_METRIC_VALUES, got, d->raw,
                                                &nv, d->vals);
    if (cr != ZE_RESULT_SUCCESS && cr != ZE_RESULT_WARNING_DROPPED_DATA)
        return 0;
    uint32_t n = nv / d->nmetrics;
    for (uint32_t e = 0; e < n; e++)
        add_interval(d, d->vals + (size_t)e * d->nmetrics);
    return n;
}

/* read_batch_in() in a window of its own (a read of 64 batches is not one long window). */
static uint32_t read_batch(dm_dev_t *d)
{
    if (!pa_ze_call_enter()) {
        d->abandoned = 1;
        return 0;
    }
    uint32_t n = read_batch_in(d);
    pa_ze_call_leave();
    return n;
}

/* Everything pending (batches until one comes back short, at most 64), one ring record. */
static void read_once(dm_dev_t *d)
{
    for (int i = 0; i < 64 && read_batch(d) == DM_READ_BATCH; i++)
        ;
    flush_out(d);
}

static void dev_buffers_free(dm_dev_t *d);

/* One period, or less when pa_dm_stop wakes the reader. */
static void reader_sleep(dm_dev_t *d)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t t = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + DM_WAIT_NS;
    ts.tv_sec = (time_t)(t / 1000000000ull);
    ts.tv_nsec = (long)(t % 1000000000ull);
    pthread_mutex_lock(&wake_mu);
    /* _clockwait: the agent exports an OSRT wrapper named pthread_cond_timedwait (agg/agg.c) */
    while (!atomic_load(&d->stop) && pthread_cond_clockwait(&wake_cv, &wake_mu, CLOCK_MONOTONIC, &ts) != ETIMEDOUT)
        ;
    pthread_mutex_unlock(&wake_mu);
}

static void *reader_main(void *arg)
{
    dm_dev_t *d = arg;
    pa_thread_mark_agent();
    while (!atomic_load(&d->stop) && !d->abandoned) {
        reader_sleep(d);
        read_once(d);
        if (pa_clock_ns() - d->sm_last_ns >= DM_SYSMAN_EVERY_NS)
            emit_sysman(d);
    }
    if (!d->abandoned)
        read_once(d); /* what the device wrote until the stop */
    if (d->has_pending)
        push_pending(d);
    d->has_pending = 0;
    flush_out(d);
    if (!d->abandoned)
        emit_sysman(d);
    if (!d->abandoned && pa_ze_call_enter()) {
        ze.zetMetricStreamerClose(d->s);
        ze.zetContextActivateMetricGroups(d->ctx, d->h, 0, NULL);
        pa_ze_call_leave();
    } else {
        pa_info("metrics", "device %u: the Level Zero loader is being torn down: the streamer is left open",
                d->index);
    }
    pa_dm_ring_close(d->ring);
    d->ring = NULL;
    dev_buffers_free(d);
    return NULL;
}

/* The reader's buffers (sized by the group's metric count). */
static int dev_buffers_alloc(dm_dev_t *d)
{
    d->sums = calloc(d->nmetrics, sizeof *d->sums);
    d->pend_vals = calloc(d->nmetrics, sizeof *d->pend_vals);
    d->cur = calloc(d->nmetrics, sizeof *d->cur);
    return d->sums && d->pend_vals && d->cur && pa_dm_pack_init(&d->pack, d->nmetrics) == 0 ? 0 : -1;
}

static void dev_buffers_free(dm_dev_t *d)
{
    free(d->raw);
    free(d->vals);
    free(d->out);
    free(d->sums);
    free(d->pend_vals);
    free(d->cur);
    pa_dm_pack_free(&d->pack);
    d->raw = NULL, d->vals = NULL, d->out = NULL, d->sums = d->pend_vals = d->cur = NULL;
    d->outcap = 0;
}

/* Opens device d's streamer and starts its reader; on failure says why once (the app runs on). */
static int reader_start(dm_dev_t *d, const char *group, uint32_t period_ns)
{
    d->ring = pa_dm_ring_open(d->index);
    if (!d->ring)
        return -1;
    d->period_ns = period_ns;
    ze_device_properties_t p = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2};
    uint64_t host = 0, dev = 0;
    ze_result_t res = ze.zeDeviceGetProperties(d->h, &p);
    if (res == ZE_RESULT_SUCCESS)
        res = ze.zeDeviceGetGlobalTimestamps(d->h, &host, &dev);
    d->timer_hz = p.timerResolution ? p.timerResolution : 1000000000ull;
    d->ref_host_ns = (int64_t)host;
    d->ref_dev_ns = (int64_t)((unsigned __int128)dev * 1000000000u / d->timer_hz);
    if (res == ZE_RESULT_SUCCESS && dev_buffers_alloc(d) != 0)
        res = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    if (res == ZE_RESULT_SUCCESS)
        res = ze.zetContextActivateMetricGroups(d->ctx, d->h, 1, &d->group);
    zet_metric_streamer_desc_t sd = {.stype = ZET_STRUCTURE_TYPE_METRIC_STREAMER_DESC,
                                     .notifyEveryNReports = DM_NOTIFY_EVERY, .samplingPeriod = period_ns};
    if (res == ZE_RESULT_SUCCESS) /* no notification event: the reader reads every DM_WAIT_NS */
        res = ze.zetMetricStreamerOpen(d->ctx, d->h, d->group, &sd, NULL, &d->s);
    if (res == ZE_RESULT_SUCCESS) {
        d->period_ns = sd.samplingPeriod;
        emit_device(d, PA_DM_STREAMING, res, group);
        pa_dm_sysman_open(d->h, &d->sm);
        emit_peaks(d);
        emit_sysman(d);
        if (pa_thread_spawn(&d->th, PA_THREAD_STACK_READER, reader_main, d) == 0) {
            d->running = 1;
            return 0;
        }
        ze.zetMetricStreamerClose(d->s);
        res = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    pa_warn("metrics", "device %u: the %s metric streamer was not opened (ze_result 0x%x%s); this device's"
            " metrics are not collected, the rest is profiled as usual", d->index, group, (unsigned)res,
            res == ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE ? ": another streamer of that kind is open on it" : "");
    emit_device(d, PA_DM_FAILED, res, group);
    ze.zetContextActivateMetricGroups(d->ctx, d->h, 0, NULL);
    dev_buffers_free(d);
    pa_dm_ring_close(d->ring);
    d->ring = NULL;
    return -1;
}

/* ZET_ENABLE_METRICS=1 must be set before the application's first zeInit (this source is first
 * in the session's table); a user's other value is kept and said. */
void pa_dm_env(void)
{
    setenv("ZES_ENABLE_SYSMAN", "1", 0); /* sysman on the core device handles (API 1.4), read beside */
    const char *m = getenv("ZET_ENABLE_METRICS");
    if (!m)
        setenv("ZET_ENABLE_METRICS", "1", 0);
    else if (strcmp(m, "1") != 0)
        pa_warn("metrics", "ZET_ENABLE_METRICS=%s set by the user: drivers then offer no metric groups"
                " (accepted: unset or 1)", m);
}

/* pa_dm_start() in a window (its loader calls, the threads' start). */
static int dm_start_in(const char *group, uint64_t period_us)
{
    /* after the application's zeInit succeeded (and the ze source attached): the interception
     * path is chosen already, the metric streams need no tracing layer; Level Zero is the
     * application's, never initialized here */
    uint32_t nd = 0;
    if (resolve() != 0 || ze.zeDriverGet(&nd, NULL) != ZE_RESULT_SUCCESS) {
        pa_warn("metrics", "PROFAGENT_METRICS=%s: Level Zero is not initialized; no device metrics, the"
                " rest is profiled as usual", group);
        return 0;
    }
    static char have[4096];
    have[0] = '\0';
    enumerate(group, have, sizeof have);
    uint32_t with = 0;
    for (uint32_t i = 0; i < ndevs; i++)
        with += devs[i].group != NULL;
    if (with < ndevs || ndevs == 0)
        pa_warn("metrics", "PROFAGENT_METRICS=%s: %s offer%s no time-based metric group of that name%s (groups that"
                " exist: %s); %s", group, ndevs == 0 ? "no Level Zero device" : with ? "some devices" : "the devices",
                with || ndevs == 0 ? "" : "",
                named_unusable == 1 ? " (it exists but is not time-based)"
                : named_unusable == 2 ? " (it exists but has no interval begin/duration metric, so its values cannot be"
                                        " placed on the timeline; EU stalls: PROFAGENT_PC_SAMPLING=1)" : "",
                ndevs ? have : "none",
                with ? "the others are collected, the rest is profiled as usual" : "the rest is profiled as usual");
    uint32_t started = 0;
    uint32_t period_ns = (uint32_t)(period_us * 1000u);
    for (uint32_t i = 0; i < ndevs; i++)
        if (devs[i].group && reader_start(&devs[i], group, period_ns) == 0)
            started++;
    if (started)
        pa_info("metrics", "%u device(s) stream %s every %u ns", started, group, devs[0].period_ns);
    return (int)started;
}

int pa_dm_start(const char *group, uint64_t period_us)
{
    if (!pa_ze_call_enter())
        return 0; /* the process is ending */
    int n = dm_start_in(group, period_us);
    pa_ze_call_leave();
    return n;
}

void pa_dm_stop(void)
{
    pthread_mutex_lock(&wake_mu);
    for (uint32_t i = 0; i < ndevs; i++)
        atomic_store(&devs[i].stop, 1);
    pthread_cond_broadcast(&wake_cv); /* wakes the readers from their period's sleep */
    pthread_mutex_unlock(&wake_mu);
    for (uint32_t i = 0; i < ndevs; i++) {
        dm_dev_t *d = &devs[i];
        if (!d->running)
            continue;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += DM_JOIN_NS / 1000000000ll;
        if (pthread_timedjoin_np(d->th, NULL, &ts) != 0) {
            pa_warn("metrics", "device %u: the metric reader did not stop within 2 s; left running", d->index);
            pthread_detach(d->th);
        }
        d->running = 0;
    }
}

void pa_dm_after_fork_child(void)
{
    memset(devs, 0, sizeof devs);
    ndevs = 0;
    pthread_mutex_init(&wake_mu, NULL); /* a reader may have held it at the fork */
    pthread_cond_init(&wake_cv, NULL);
}
