/* metrics_oa.c - the ComputeBasic time-based stream: one 256-byte report per sampling interval with
 * the deltas of the device activity counters, a bounded buffer, and the calculation into typed
 * values with units (README "ComputeBasic"). The buffer holds runs of equal intervals (an idle
 * device's intervals are one run) and the raw reports are written at zetMetricStreamerReadData
 * time, straight into the caller's buffer: the same bytes as a report per interval, without a
 * report per interval written and copied while nobody reads. */
#include <stdlib.h>
#include <string.h>

#include "pa_sd_activity.h"
#include "pa_sd_metrics.h"

#define OA_MAGIC 0x414f4453u /* "SDOA" */

/* Report layout (little endian): see README "ComputeBasic raw report". */
enum { OFF_MAGIC = 0, OFF_SIZE = 4, OFF_BEGIN_TICKS = 8, OFF_END_TICKS = 16, OFF_GPU_NS = 24, OFF_CLOCKS = 32,
       OFF_COUNTERS = 40, OFF_BUSY = OFF_COUNTERS + 8 * PA_SD_C_COUNT, OFF_FLAGS = OFF_BUSY + 8 * PA_SD_BUSY_COUNT };
_Static_assert(OFF_FLAGS + 4 <= SIMDEV_OA_REPORT_BYTES, "OA report fits");

/* n consecutive intervals [begin + j * dur, begin + (j + 1) * dur), j < n, with the same counter
 * deltas (all zero when n > 1: an idle stretch). */
typedef struct oa_run {
    uint64_t begin_ns, dur_ns;
    uint64_t n;
    uint32_t flags;           /* of the first report of the run (bit 0: reports dropped before) */
    int zero;                 /* every delta is 0 (c/busy not stored) */
    uint64_t c[PA_SD_C_COUNT], busy[PA_SD_BUSY_COUNT];
} oa_run;

typedef struct oa_dev {
    pa_sd_streamer st;
    bool have_base;
    pa_sd_counters prev;
    oa_run *runs;             /* a ring of runs, grown on demand (bounded by the report capacity) */
    uint32_t rcap, rhead, nruns;
    uint64_t cap, count;      /* capacity and pending reports (sum of the runs' n) */
    bool lost, flag_next;
} oa_dev;

static oa_dev g_oa[PA_SD_MAX_DEVICES] = {[0 ... PA_SD_MAX_DEVICES - 1] = {.st = PA_SD_STREAMER_INIT}};

static oa_dev *oa_of(pa_sd_device *dev) { return &g_oa[dev->index % PA_SD_MAX_DEVICES]; }

uint32_t pa_sd_oa_capacity(void)
{
    return pa_sd_streamer_capacity(pa_sd_config_get()->oa_buffer, SIMDEV_OA_REPORT_BYTES);
}

/* OA periods are 2^(e+1) timestamp ticks, e = 0..31: the largest not above the request, and at
 * least 10 us (i915's default oa_max_sample_rate of 100 kHz). */
#define OA_MIN_PERIOD_NS 10000ull
uint32_t pa_sd_oa_round_period(uint64_t ns)
{
    uint64_t hz = pa_sd_config_get()->timer_hz, best = 0;
    for (uint32_t e = 0; e < 32; e++) {
        uint64_t p = (uint64_t)(((unsigned __int128)2 << e) * 1000000000ull / hz);
        if (p > UINT32_MAX || (best && p > ns))
            break;
        if (p >= OA_MIN_PERIOD_NS)
            best = p;
    }
    return (uint32_t)(best ? best : OA_MIN_PERIOD_NS);
}

static void put64(uint8_t *r, int off, uint64_t v) { memcpy(r + off, &v, 8); }
static uint64_t get64(const uint8_t *r, int off)
{
    uint64_t v;
    memcpy(&v, r + off, 8);
    return v;
}

static oa_run *run_at(oa_dev *o, uint32_t i)
{
    uint32_t k = o->rhead + i;
    return &o->runs[k >= o->rcap ? k - o->rcap : k];
}

/* A new run at the tail; NULL when out of memory (the reports are counted lost). Caller holds st.mu. */
static oa_run *run_push(oa_dev *o)
{
    if (o->nruns == o->rcap) {
        uint32_t ncap = o->rcap ? o->rcap * 2 : 64;
        oa_run *nr = malloc((size_t)ncap * sizeof *nr);
        if (!nr)
            return NULL;
        for (uint32_t i = 0; i < o->nruns; i++)
            nr[i] = *run_at(o, i);
        free(o->runs);
        o->runs = nr;
        o->rcap = ncap;
        o->rhead = 0;
    }
    o->nruns++;
    return run_at(o, o->nruns - 1);
}

/* Append n intervals of begin, dur with these deltas (NULL = zero), as far as the buffer has room;
 * caller holds st.mu. */
static void oa_append(oa_dev *o, uint64_t begin, uint64_t dur, uint64_t n, const uint64_t *c, const uint64_t *busy)
{
    uint64_t room = o->cap - o->count;
    if (n > room) { /* the buffer is full: later reports are lost, the next stored one says so */
        o->lost = o->flag_next = true;
        n = room;
    }
    if (!n)
        return;
    oa_run *last = o->nruns ? run_at(o, o->nruns - 1) : NULL;
    if (!c && last && last->zero && !o->flag_next && last->dur_ns == dur && last->begin_ns + last->n * dur == begin) {
        last->n += n;
        o->count += n;
        return;
    }
    oa_run *r = run_push(o);
    if (!r) {
        o->lost = o->flag_next = true;
        return;
    }
    r->begin_ns = begin;
    r->dur_ns = dur;
    r->n = n;
    r->flags = o->flag_next ? 1u : 0u;
    r->zero = !c;
    if (c) {
        memcpy(r->c, c, sizeof r->c);
        memcpy(r->busy, busy, sizeof r->busy);
    }
    o->flag_next = false;
    o->count += n;
}

/* Called by the activity timeline for the interval boundaries it passes (the first call is the
 * baseline): the interval ending at the first boundary has the deltas since the previous one,
 * the n - 1 after it are idle. */
static void oa_tick(pa_sd_device *dev, const pa_sd_counters *c, uint64_t n)
{
    oa_dev *o = oa_of(dev);
    pthread_mutex_lock(&o->st.mu);
    if (!o->st.open) {
        pthread_mutex_unlock(&o->st.mu);
        return;
    }
    if (!o->have_base) {
        o->have_base = true;
        o->prev = *c;
        pthread_mutex_unlock(&o->st.mu);
        return;
    }
    uint64_t period = n > 1 ? (c->at_ns - o->prev.at_ns) / n : c->at_ns - o->prev.at_ns;
    uint64_t d[PA_SD_C_COUNT], b[PA_SD_BUSY_COUNT], any = 0;
    for (int k = 0; k < PA_SD_C_COUNT; k++)
        any |= d[k] = c->c[k] - o->prev.c[k];
    for (int k = 0; k < PA_SD_BUSY_COUNT; k++)
        any |= b[k] = c->busy[k] - o->prev.busy[k];
    oa_append(o, o->prev.at_ns, period, 1, any ? d : NULL, b);
    if (n > 1)
        oa_append(o, o->prev.at_ns + period, period, n - 1, NULL, NULL);
    o->prev = *c;
    pa_sd_streamer_notify(&o->st, o->count);
    pthread_mutex_unlock(&o->st.mu);
}

/* The runs taken out of o, now closed (caller holds st.mu; frees them after unlocking). */
static oa_run *take_runs(oa_dev *o)
{
    oa_run *runs = o->runs;
    pa_sd_streamer_end(&o->st);
    o->runs = NULL;
    o->count = o->cap = 0;
    o->nruns = o->rcap = o->rhead = 0;
    return runs;
}

int pa_sd_oa_open(pa_sd_device *dev, uint32_t period_ns, uint32_t notify_n, ze_event_handle_t ev, uint64_t *gen)
{
    oa_dev *o = oa_of(dev);
    pthread_mutex_lock(&o->st.mu);
    if (pa_sd_streamer_begin(&o->st, notify_n, ev, gen)) {
        pthread_mutex_unlock(&o->st.mu);
        return 1;
    }
    o->cap = pa_sd_oa_capacity();
    o->count = 0;
    o->nruns = o->rhead = 0;
    o->lost = o->flag_next = o->have_base = false;
    pthread_mutex_unlock(&o->st.mu);
    pa_sd_activity_stream(dev, pa_sd_clock_host_ns(), period_ns, oa_tick);
    return 0;
}

void pa_sd_oa_close(pa_sd_device *dev, uint64_t gen)
{
    oa_dev *o = oa_of(dev);
    pthread_mutex_lock(&o->st.mu);
    bool mine = pa_sd_streamer_is(&o->st, gen);
    pthread_mutex_unlock(&o->st.mu);
    if (!mine)
        return;
    pa_sd_activity_stream(dev, 0, 0, NULL);
    pthread_mutex_lock(&o->st.mu);
    oa_run *runs = take_runs(o);
    pthread_mutex_unlock(&o->st.mu);
    free(runs);
}

/* Core clocks elapsed by host time ns: floor(ns * MHz / 1000). */
static uint64_t clocks_at(uint64_t ns, uint64_t mhz)
{
    return ns < UINT64_MAX / mhz ? ns * mhz / 1000 : (uint64_t)((unsigned __int128)ns * mhz / 1000);
}

/* The device ticks and core clocks at a report's begin, carried to the next report of a run (its
 * begin is this one's end). */
typedef struct oa_edge { uint64_t ticks, clocks; } oa_edge;

/* The raw report of interval j of run r; *at = its begin's edge in, its end's out. */
static void write_report(uint8_t *out, const oa_run *r, uint64_t j, uint64_t mhz, oa_edge *at)
{
    uint64_t e = r->begin_ns + (j + 1) * r->dur_ns;
    oa_edge end = {pa_sd_clock_ticks_at(e), clocks_at(e, mhz)};
    uint32_t magic = OA_MAGIC, size = SIMDEV_OA_REPORT_BYTES, flags = j == 0 ? r->flags : 0u;
    memcpy(out + OFF_MAGIC, &magic, 4);
    memcpy(out + OFF_SIZE, &size, 4);
    put64(out, OFF_BEGIN_TICKS, at->ticks);
    put64(out, OFF_END_TICKS, end.ticks);
    put64(out, OFF_GPU_NS, r->dur_ns);
    put64(out, OFF_CLOCKS, end.clocks - at->clocks);
    *at = end;
    if (r->zero)
        memset(out + OFF_COUNTERS, 0, OFF_FLAGS - OFF_COUNTERS);
    else {
        memcpy(out + OFF_COUNTERS, r->c, sizeof r->c);
        memcpy(out + OFF_BUSY, r->busy, sizeof r->busy);
    }
    memcpy(out + OFF_FLAGS, &flags, 4);
    memset(out + OFF_FLAGS + 4, 0, SIMDEV_OA_REPORT_BYTES - OFF_FLAGS - 4);
}

#define OA_READ_RUNS 64 /* runs taken from the buffer per lock hold */

/* The reports are written after the lock is released (from copies of the runs taken): a reader
 * preempted while writing its thousands of reports must not hold up the engines' ticks. */
uint32_t pa_sd_oa_read(pa_sd_device *dev, uint64_t gen, uint8_t *out, uint32_t max, bool *lost)
{
    oa_dev *o = oa_of(dev);
    pa_sd_activity_poll(dev); /* the intervals that have ended */
    uint64_t mhz = pa_sd_config_get()->core_clock_mhz;
    uint32_t w = 0;
    *lost = false;
    for (;;) {
        oa_run take[OA_READ_RUNS];
        uint32_t nt = 0, want = 0;
        pthread_mutex_lock(&o->st.mu);
        if (!pa_sd_streamer_is(&o->st, gen)) {
            pthread_mutex_unlock(&o->st.mu);
            break;
        }
        while (w + want < max && o->nruns && nt < OA_READ_RUNS) {
            oa_run *r = run_at(o, 0);
            uint64_t k = r->n < max - w - want ? r->n : max - w - want;
            take[nt] = *r;
            take[nt++].n = k;
            if (k == r->n) {
                o->rhead = o->rhead + 1 == o->rcap ? 0 : o->rhead + 1;
                o->nruns--;
            } else { /* the rest of the run stays: it starts k intervals later */
                r->begin_ns += k * r->dur_ns;
                r->n -= k;
                r->flags = 0;
            }
            want += (uint32_t)k;
        }
        o->count -= want;
        int more = nt == OA_READ_RUNS && w + want < max && o->nruns;
        if (!more) {
            *lost = o->lost;
            o->lost = false;
            pa_sd_streamer_notify(&o->st, o->count);
        }
        pthread_mutex_unlock(&o->st.mu);
        for (uint32_t t = 0; t < nt; t++) {
            const oa_run *r = &take[t];
            oa_edge at = {pa_sd_clock_ticks_at(r->begin_ns), clocks_at(r->begin_ns, mhz)};
            for (uint64_t j = 0; j < r->n; j++, w++)
                write_report(out + (size_t)w * SIMDEV_OA_REPORT_BYTES, r, j, mhz, &at);
        }
        if (!more)
            break;
    }
    return w;
}

void pa_sd_oa_atfork(int phase)
{
    for (uint32_t i = 0; i < PA_SD_MAX_DEVICES; i++)
        if (pa_sd_streamer_atfork(&g_oa[i].st, phase))
            free(take_runs(&g_oa[i]));
}

/* ---- calculation ---- */
static const pa_sd_oa_metric g_metrics[PA_SD_OA_METRICS] = {
    {"QueryBeginTime", "GPU timestamp of the interval start", ZET_METRIC_TYPE_TIMESTAMP, ZET_VALUE_TYPE_UINT64, "ns"},
    {"GpuTime", "Time elapsed on the GPU during the interval", ZET_METRIC_TYPE_DURATION, ZET_VALUE_TYPE_UINT64, "ns"},
    {"GpuCoreClocks", "GPU core clocks in the interval", ZET_METRIC_TYPE_EVENT, ZET_VALUE_TYPE_UINT64, "cycles"},
    {"AvgGpuCoreFrequencyMHz", "Average GPU core frequency", ZET_METRIC_TYPE_RAW, ZET_VALUE_TYPE_UINT64, "MHz"},
    {"GPU_BUSY", "Percentage of time any engine was busy", ZET_METRIC_TYPE_RATIO, ZET_VALUE_TYPE_FLOAT32, "percent"},
    {"XVE_ACTIVE", "Percentage of XVE cycles with at least one pipe active", ZET_METRIC_TYPE_RATIO, ZET_VALUE_TYPE_FLOAT32, "percent"},
    {"XVE_STALL", "Percentage of XVE cycles with threads loaded and no pipe active", ZET_METRIC_TYPE_RATIO, ZET_VALUE_TYPE_FLOAT32, "percent"},
    {"XVE_THREADS_OCCUPANCY_ALL", "Average percentage of hardware threads loaded", ZET_METRIC_TYPE_RATIO, ZET_VALUE_TYPE_FLOAT32, "percent"},
    {"XVE_INST_EXECUTED_ALU0_ALL", "Instructions executed on ALU0", ZET_METRIC_TYPE_EVENT, ZET_VALUE_TYPE_UINT64, "events"},
    {"XVE_INST_EXECUTED_ALU1_ALL", "Instructions executed on ALU1", ZET_METRIC_TYPE_EVENT, ZET_VALUE_TYPE_UINT64, "events"},
    {"XVE_INST_EXECUTED_XMX_ALL", "Instructions executed on XMX", ZET_METRIC_TYPE_EVENT, ZET_VALUE_TYPE_UINT64, "events"},
    {"XVE_INST_EXECUTED_SEND_ALL", "Send instructions executed", ZET_METRIC_TYPE_EVENT, ZET_VALUE_TYPE_UINT64, "events"},
    {"XVE_INST_EXECUTED_CONTROL_ALL", "Control instructions executed", ZET_METRIC_TYPE_EVENT, ZET_VALUE_TYPE_UINT64, "events"},
    {"GPU_MEMORY_BYTE_READ", "Bytes read from GPU memory", ZET_METRIC_TYPE_EVENT, ZET_VALUE_TYPE_UINT64, "bytes"},
    {"GPU_MEMORY_BYTE_WRITE", "Bytes written to GPU memory", ZET_METRIC_TYPE_EVENT, ZET_VALUE_TYPE_UINT64, "bytes"},
    {"L3_BYTE_READ", "Bytes read from L3 by the XVEs", ZET_METRIC_TYPE_EVENT, ZET_VALUE_TYPE_UINT64, "bytes"},
    {"L3_BYTE_WRITE", "Bytes written to L3 by the XVEs", ZET_METRIC_TYPE_EVENT, ZET_VALUE_TYPE_UINT64, "bytes"},
    {"SLM_BYTE_READ", "Bytes read from shared local memory", ZET_METRIC_TYPE_EVENT, ZET_VALUE_TYPE_UINT64, "bytes"},
    {"SLM_BYTE_WRITE", "Bytes written to shared local memory", ZET_METRIC_TYPE_EVENT, ZET_VALUE_TYPE_UINT64, "bytes"},
    {"COMMAND_PARSER_COMPUTE_ENGINE_BUSY", "Percentage of time a compute engine was busy", ZET_METRIC_TYPE_RATIO, ZET_VALUE_TYPE_FLOAT32, "percent"},
    {"COMMAND_PARSER_COPY_ENGINE_BUSY", "Percentage of time a copy engine was busy", ZET_METRIC_TYPE_RATIO, ZET_VALUE_TYPE_FLOAT32, "percent"},
    {"COPY_BYTE_H2D", "Bytes copied host to device (simdev)", ZET_METRIC_TYPE_EVENT, ZET_VALUE_TYPE_UINT64, "bytes"},
    {"COPY_BYTE_D2H", "Bytes copied device to host (simdev)", ZET_METRIC_TYPE_EVENT, ZET_VALUE_TYPE_UINT64, "bytes"},
    {"COPY_BYTE_D2D", "Bytes copied within device memory (simdev)", ZET_METRIC_TYPE_EVENT, ZET_VALUE_TYPE_UINT64, "bytes"},
    {"COPY_BYTE_PEER", "Bytes copied between devices (simdev)", ZET_METRIC_TYPE_EVENT, ZET_VALUE_TYPE_UINT64, "bytes"},
    {"FILL_BYTE", "Bytes written by memory fills (simdev)", ZET_METRIC_TYPE_EVENT, ZET_VALUE_TYPE_UINT64, "bytes"},
};

const pa_sd_oa_metric *pa_sd_oa_metric_at(uint32_t i) { return i < PA_SD_OA_METRICS ? &g_metrics[i] : NULL; }

static float pct(uint64_t num, uint64_t den) { return num && den ? (float)(100.0 * (double)num / (double)den) : 0.0f; }

/* floor(ticks * 1e9 / hz) without a 128-bit division: q * 1e9 + r * 1e9 / hz, ticks = q * hz + r. */
static uint64_t ticks_ns(uint64_t ticks, uint64_t hz)
{
    if (hz > UINT64_MAX / 1000000000u)
        return (uint64_t)((unsigned __int128)ticks * 1000000000u / hz);
    return ticks / hz * 1000000000u + ticks % hz * 1000000000u / hz;
}

/* Value i of a report, of the type g_metrics[i] gives (i is a constant at every call: the table's
 * type folds away). */
static inline void put_value(zet_typed_value_t *v, uint32_t i, uint64_t u, float f)
{
    v[i].type = g_metrics[i].result;
    if (g_metrics[i].result == ZET_VALUE_TYPE_FLOAT32)
        v[i].value.fp32 = f;
    else
        v[i].value.ui64 = u;
}

static void report_values(const uint8_t *r, zet_typed_value_t *v, uint64_t timer_hz)
{
    uint64_t c[PA_SD_C_COUNT], busy[PA_SD_BUSY_COUNT];
    memcpy(c, r + OFF_COUNTERS, sizeof c);
    memcpy(busy, r + OFF_BUSY, sizeof busy);
    uint64_t ns = get64(r, OFF_GPU_NS), clocks = get64(r, OFF_CLOCKS);
    put_value(v, 0, ticks_ns(get64(r, OFF_BEGIN_TICKS), timer_hz), 0);
    put_value(v, 1, ns, 0);
    put_value(v, 2, clocks, 0);
    put_value(v, 3, ns ? clocks * 1000 / ns : 0, 0);
    put_value(v, 4, 0, pct(busy[PA_SD_BUSY_ANY], ns));
    put_value(v, 5, 0, pct(c[PA_SD_C_EU_ACTIVE], clocks * SIMDEV_EU_COUNT));
    put_value(v, 6, 0, pct(c[PA_SD_C_EU_STALL], clocks * SIMDEV_EU_COUNT));
    put_value(v, 7, 0, pct(c[PA_SD_C_THREAD_NS], ns * SIMDEV_HW_THREADS));
    put_value(v, 8, c[PA_SD_C_ALU0], 0);
    put_value(v, 9, c[PA_SD_C_ALU1], 0);
    put_value(v, 10, c[PA_SD_C_XMX], 0);
    put_value(v, 11, c[PA_SD_C_SEND], 0);
    put_value(v, 12, c[PA_SD_C_CONTROL], 0);
    put_value(v, 13, c[PA_SD_C_GMEM_READ], 0);
    put_value(v, 14, c[PA_SD_C_GMEM_WRITE], 0);
    put_value(v, 15, c[PA_SD_C_L3_READ], 0);
    put_value(v, 16, c[PA_SD_C_L3_WRITE], 0);
    put_value(v, 17, c[PA_SD_C_SLM_READ], 0);
    put_value(v, 18, c[PA_SD_C_SLM_WRITE], 0);
    put_value(v, 19, 0, pct(busy[PA_SD_BUSY_COMPUTE], ns));
    put_value(v, 20, 0, pct(busy[PA_SD_BUSY_COPY], ns));
    put_value(v, 21, c[PA_SD_C_H2D], 0);
    put_value(v, 22, c[PA_SD_C_D2H], 0);
    put_value(v, 23, c[PA_SD_C_D2D], 0);
    put_value(v, 24, c[PA_SD_C_PEER], 0);
    put_value(v, 25, c[PA_SD_C_FILL], 0);
}
_Static_assert(PA_SD_OA_METRICS == 26, "report_values writes every metric of the group");

ze_result_t pa_sd_oa_calculate(zet_metric_group_calculation_type_t type, size_t size, const uint8_t *raw,
                               uint32_t *pCount, zet_typed_value_t *values)
{
    if (type != ZET_METRIC_GROUP_CALCULATION_TYPE_METRIC_VALUES &&
        type != ZET_METRIC_GROUP_CALCULATION_TYPE_MAX_METRIC_VALUES)
        return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    if (size % SIMDEV_OA_REPORT_BYTES)
        return ZE_RESULT_ERROR_INVALID_SIZE;
    uint64_t n = size / SIMDEV_OA_REPORT_BYTES;
    uint32_t sets = type == ZET_METRIC_GROUP_CALCULATION_TYPE_MAX_METRIC_VALUES ? (n ? 1 : 0) : (uint32_t)n;
    if ((uint64_t)sets * PA_SD_OA_METRICS > UINT32_MAX)
        return ZE_RESULT_ERROR_INVALID_SIZE;
    if (*pCount == 0) {
        *pCount = sets * PA_SD_OA_METRICS;
        return ZE_RESULT_SUCCESS;
    }
    if (!values)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    bool dropped = false;
    for (uint64_t i = 0; i < n; i++) {
        const uint8_t *r = raw + i * SIMDEV_OA_REPORT_BYTES;
        uint32_t magic, flags;
        memcpy(&magic, r + OFF_MAGIC, 4);
        memcpy(&flags, r + OFF_FLAGS, 4);
        if (magic != OA_MAGIC)
            return ZE_RESULT_ERROR_INVALID_ARGUMENT;
        dropped |= (flags & 1u) != 0;
    }
    uint32_t w = 0;
    uint64_t hz = pa_sd_config_get()->timer_hz;
    zet_typed_value_t tmp[PA_SD_OA_METRICS];
    if (type == ZET_METRIC_GROUP_CALCULATION_TYPE_MAX_METRIC_VALUES) {
        zet_typed_value_t mx[PA_SD_OA_METRICS];
        memset(mx, 0, sizeof mx);
        for (uint64_t i = 0; i < n; i++) {
            report_values(raw + i * SIMDEV_OA_REPORT_BYTES, tmp, hz);
            for (uint32_t k = 0; k < PA_SD_OA_METRICS; k++) {
                bool fl = tmp[k].type == ZET_VALUE_TYPE_FLOAT32;
                if (i == 0 || (fl ? tmp[k].value.fp32 > mx[k].value.fp32 : tmp[k].value.ui64 > mx[k].value.ui64))
                    mx[k] = tmp[k];
            }
        }
        for (; w < PA_SD_OA_METRICS && w < *pCount && n; w++)
            values[w] = mx[w];
    } else {
        for (uint64_t i = 0; i < n && w + PA_SD_OA_METRICS <= *pCount; i++, w += PA_SD_OA_METRICS)
            report_values(raw + i * SIMDEV_OA_REPORT_BYTES, values + w, hz);
    }
    *pCount = w;
    return dropped ? ZE_RESULT_WARNING_DROPPED_DATA : ZE_RESULT_SUCCESS;
}
