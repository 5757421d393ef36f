/* metrics.c - zet metric groups, activation, streamers and calculation (the EuStallSampling group
 * as Intel's driver exposes it; README "Metrics"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pa_sd_metrics.h"

enum { PA_SD_MAGIC_MGROUP = 0x53446d67u, PA_SD_MAGIC_METRIC = 0x53446d74u, PA_SD_MAGIC_STREAMER = 0x53447374u };
enum { GROUP_COMPUTE_BASIC = 0, GROUP_EUSTALL, GROUP_COUNT }; /* enumeration order, as Intel's */
#define EUSTALL_METRICS 10u
#define MAX_METRICS PA_SD_OA_METRICS

typedef struct mgroup mgroup;
typedef struct metric { uint32_t magic; mgroup *group; uint32_t index; } metric;
struct mgroup {
    uint32_t magic;
    uint32_t kind;
    pa_sd_device *dev;
    metric metrics[MAX_METRICS];
};

static uint32_t nmetrics(const mgroup *g) { return g->kind == GROUP_EUSTALL ? EUSTALL_METRICS : PA_SD_OA_METRICS; }

typedef struct streamer {
    uint32_t magic;
    pa_sd_device *dev;
    mgroup *group;
    uint64_t gen;
} streamer;

typedef struct mdev {
    mgroup groups[GROUP_COUNT];
    bool activated[GROUP_COUNT]; /* protected by g_mu */
} mdev;

static mdev g_mdev[PA_SD_MAX_DEVICES];
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static bool g_enabled;

typedef struct metric_desc { const char *name, *desc; } metric_desc;
static const metric_desc g_eustall[EUSTALL_METRICS] = {
    {"IP", "IP address"}, {"Active", "Active cycles"}, {"ControlStall", "Stall on control"},
    {"PipeStall", "Stall on pipe"}, {"SendStall", "Stall on send"}, {"DistStall", "Stall on distance"},
    {"SbidStall", "Stall on scoreboard"}, {"SyncStall", "Stall on sync"},
    {"InstrFetchStall", "Stall on instruction fetch"}, {"OtherStall", "Stall on other condition"},
};

void pa_sd_metrics_init(void)
{
    const char *v = getenv("ZET_ENABLE_METRICS");
    g_enabled = v && atoi(v) != 0; /* as the driver: an integer, non-zero enables */
}

bool pa_sd_metrics_enabled(void) { return g_enabled; }

/* Groups the device offers, in order (none unless metrics are enabled). */
static uint32_t groups_of(pa_sd_device *dev, mgroup **out)
{
    uint32_t n = 0;
    mdev *m = &g_mdev[dev->index % PA_SD_MAX_DEVICES];
    if (!g_enabled)
        return 0;
    pthread_mutex_lock(&g_mu);
    for (uint32_t k = 0; k < GROUP_COUNT; k++) {
        mgroup *g = &m->groups[k];
        if (g->magic != PA_SD_MAGIC_MGROUP) {
            g->kind = k;
            g->dev = dev;
            for (uint32_t i = 0; i < MAX_METRICS; i++)
                g->metrics[i] = (metric){PA_SD_MAGIC_METRIC, g, i};
            g->magic = PA_SD_MAGIC_MGROUP;
        }
    }
    pthread_mutex_unlock(&g_mu);
    if (pa_sd_config_get()->oa)
        out[n++] = &m->groups[GROUP_COMPUTE_BASIC];
    if (pa_sd_config_get()->eustall)
        out[n++] = &m->groups[GROUP_EUSTALL];
    return n;
}

static mgroup *group_of(zet_metric_group_handle_t h)
{
    mgroup *g = (mgroup *)h;
    for (uint32_t d = 0; g && d < PA_SD_MAX_DEVICES; d++)
        if (g >= &g_mdev[d].groups[0] && g < &g_mdev[d].groups[GROUP_COUNT])
            return g->magic == PA_SD_MAGIC_MGROUP ? g : NULL;
    return NULL;
}

static metric *metric_of(zet_metric_handle_t h)
{
    metric *m = (metric *)h;
    for (uint32_t d = 0; m && d < PA_SD_MAX_DEVICES; d++)
        for (uint32_t k = 0; k < GROUP_COUNT; k++)
            if (m >= &g_mdev[d].groups[k].metrics[0] && m < &g_mdev[d].groups[k].metrics[MAX_METRICS])
                return (m->magic == PA_SD_MAGIC_METRIC && m->index < nmetrics(m->group)) ? m : NULL;
    return NULL;
}

static streamer *streamer_of(zet_metric_streamer_handle_t h)
{
    streamer *s = (streamer *)h;
    return (s && pa_sd_handle_live(s) && s->magic == PA_SD_MAGIC_STREAMER) ? s : NULL;
}

ze_result_t pa_sd_zetMetricGroupGet(zet_device_handle_t hd, uint32_t *pCount, zet_metric_group_handle_t *ph)
{
    pa_sd_device *dev = pa_sd_device_of((ze_device_handle_t)hd);
    if (!dev)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!pCount)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    mgroup *gs[GROUP_COUNT];
    uint32_t n = groups_of(dev, gs);
    if (*pCount == 0 || !ph) {
        *pCount = n;
        return ZE_RESULT_SUCCESS;
    }
    if (*pCount > n)
        *pCount = n;
    for (uint32_t i = 0; i < *pCount; i++)
        ph[i] = (zet_metric_group_handle_t)gs[i];
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zetMetricGroupGetProperties(zet_metric_group_handle_t h, zet_metric_group_properties_t *p)
{
    mgroup *g = group_of(h);
    if (!g)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!p)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    bool eu = g->kind == GROUP_EUSTALL;
    snprintf(p->name, sizeof p->name, "%s", eu ? SIMDEV_EUSTALL_GROUP : SIMDEV_COMPUTE_BASIC_GROUP);
    snprintf(p->description, sizeof p->description, "%s", eu ? "EU stall sampling" : "Compute Basic");
    p->samplingType = ZET_METRIC_GROUP_SAMPLING_TYPE_FLAG_TIME_BASED;
    p->domain = eu ? SIMDEV_EUSTALL_DOMAIN : SIMDEV_COMPUTE_BASIC_DOMAIN;
    p->metricCount = nmetrics(g);
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zetMetricGet(zet_metric_group_handle_t h, uint32_t *pCount, zet_metric_handle_t *ph)
{
    mgroup *g = group_of(h);
    if (!g)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!pCount)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (*pCount == 0 || !ph) {
        *pCount = nmetrics(g);
        return ZE_RESULT_SUCCESS;
    }
    if (*pCount > nmetrics(g))
        *pCount = nmetrics(g);
    for (uint32_t i = 0; i < *pCount; i++)
        ph[i] = (zet_metric_handle_t)&g->metrics[i];
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zetMetricGetProperties(zet_metric_handle_t h, zet_metric_properties_t *p)
{
    metric *m = metric_of(h);
    if (!m)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!p)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (m->group->kind == GROUP_COMPUTE_BASIC) {
        const pa_sd_oa_metric *om = pa_sd_oa_metric_at(m->index);
        snprintf(p->name, sizeof p->name, "%s", om->name);
        snprintf(p->description, sizeof p->description, "%s", om->desc);
        snprintf(p->component, sizeof p->component, "GPU");
        p->tierNumber = 1;
        p->metricType = om->type;
        p->resultType = om->result;
        snprintf(p->resultUnits, sizeof p->resultUnits, "%s", om->units);
        return ZE_RESULT_SUCCESS;
    }
    const metric_desc *d = &g_eustall[m->index];
    snprintf(p->name, sizeof p->name, "%s", d->name);
    snprintf(p->description, sizeof p->description, "%s", d->desc);
    snprintf(p->component, sizeof p->component, "XVE");
    p->tierNumber = 4;
    p->metricType = m->index == 0 ? ZET_METRIC_TYPE_IP_EXP : ZET_METRIC_TYPE_EVENT;
    p->resultType = ZET_VALUE_TYPE_UINT64;
    snprintf(p->resultUnits, sizeof p->resultUnits, "%s", m->index == 0 ? "Address" : "Events");
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zetContextActivateMetricGroups(zet_context_handle_t hc, zet_device_handle_t hd, uint32_t count,
                                                 zet_metric_group_handle_t *ph)
{
    pa_sd_device *dev = pa_sd_device_of((ze_device_handle_t)hd);
    if (!pa_sd_context_of((ze_context_handle_t)hc) || !dev)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (count && !ph)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    bool act[GROUP_COUNT] = {false};
    for (uint32_t i = 0; i < count; i++) {
        mgroup *g = group_of(ph[i]);
        if (!g)
            return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
        if (g->dev != dev || act[g->kind]) /* another device's group, or a domain given twice */
            return ZE_RESULT_ERROR_INVALID_ARGUMENT;
        act[g->kind] = true;
    }
    pthread_mutex_lock(&g_mu);
    memcpy(g_mdev[dev->index % PA_SD_MAX_DEVICES].activated, act, sizeof act);
    pthread_mutex_unlock(&g_mu);
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zetMetricStreamerOpen(zet_context_handle_t hc, zet_device_handle_t hd, zet_metric_group_handle_t hg,
                                        zet_metric_streamer_desc_t *desc, ze_event_handle_t hev,
                                        zet_metric_streamer_handle_t *phStreamer)
{
    pa_sd_device *dev = pa_sd_device_of((ze_device_handle_t)hd);
    mgroup *g = group_of(hg);
    if (!pa_sd_context_of((ze_context_handle_t)hc) || !dev || !g)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!desc || !phStreamer)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (hev && !pa_sd_event_of(hev))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (g->dev != dev)
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&g_mu);
    bool active = g_mdev[dev->index % PA_SD_MAX_DEVICES].activated[g->kind];
    pthread_mutex_unlock(&g_mu);
    if (!active)
        return ZE_RESULT_NOT_READY;
    streamer *s = calloc(1, sizeof *s);
    if (!s || pa_sd_handle_add(s) != 0) {
        free(s);
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    bool eu = g->kind == GROUP_EUSTALL;
    uint32_t period = eu ? pa_sd_eustall_round_period(desc->samplingPeriod) : pa_sd_oa_round_period(desc->samplingPeriod);
    uint32_t cap = eu ? pa_sd_eustall_capacity() : pa_sd_oa_capacity();
    uint32_t n = desc->notifyEveryNReports < 1 ? 1 : desc->notifyEveryNReports > cap ? cap : desc->notifyEveryNReports;
    int rc = eu ? pa_sd_eustall_open(dev, period, n, hev, &s->gen) : pa_sd_oa_open(dev, period, n, hev, &s->gen);
    if (rc != 0) {
        pa_sd_handle_remove(s);
        free(s);
        return rc > 0 ? ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE : ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    desc->samplingPeriod = period;
    desc->notifyEveryNReports = n;
    s->dev = dev;
    s->group = g;
    s->magic = PA_SD_MAGIC_STREAMER;
    *phStreamer = (zet_metric_streamer_handle_t)s;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zetMetricStreamerReadData(zet_metric_streamer_handle_t h, uint32_t maxReportCount,
                                            size_t *pRawDataSize, uint8_t *pRawData)
{
    streamer *s = streamer_of(h);
    if (!s)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!pRawDataSize)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    bool eu = s->group->kind == GROUP_EUSTALL;
    uint64_t rb = eu ? SIMDEV_EUSTALL_REPORT_BYTES : SIMDEV_OA_REPORT_BYTES;
    uint64_t cap = (uint64_t)(eu ? pa_sd_eustall_capacity() : pa_sd_oa_capacity()) * rb;
    uint64_t want = (uint64_t)maxReportCount * rb;
    if (want > cap)
        want = cap;
    if (*pRawDataSize == 0) { /* the size a read of maxReportCount reports needs, not what is pending */
        *pRawDataSize = (size_t)want;
        return ZE_RESULT_SUCCESS;
    }
    if (!pRawData)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (*pRawDataSize < want)
        want = *pRawDataSize;
    bool lost = false;
    uint32_t max = (uint32_t)(want / rb);
    uint32_t n = eu ? pa_sd_eustall_read(s->dev, s->gen, pRawData, max, &lost)
                    : pa_sd_oa_read(s->dev, s->gen, pRawData, max, &lost);
    *pRawDataSize = (size_t)(n * rb);
    return lost ? ZE_RESULT_WARNING_DROPPED_DATA : ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zetMetricStreamerClose(zet_metric_streamer_handle_t h)
{
    streamer *s = streamer_of(h);
    if (!s)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (s->group->kind == GROUP_EUSTALL)
        pa_sd_eustall_close(s->dev, s->gen);
    else
        pa_sd_oa_close(s->dev, s->gen);
    s->magic = PA_SD_MAGIC_DEAD;
    pa_sd_handle_remove(s);
    free(s);
    return ZE_RESULT_SUCCESS;
}

/* ---- calculation: one entry per unique IP (ascending), values IP then the 9 counts ---- */
typedef struct ip_sum { uint64_t ip; uint64_t cnt[PA_SD_SR_COUNT]; } ip_sum;

static int cmp_ip(const void *a, const void *b)
{
    uint64_t x = ((const ip_sum *)a)->ip, y = ((const ip_sum *)b)->ip;
    return x < y ? -1 : x > y;
}

/* Metric order of each raw counter slot. */
static const uint8_t g_metric_of_raw[PA_SD_RAW_COUNT] = {
    [PA_SD_RAW_ACTIVE] = PA_SD_SR_ACTIVE, [PA_SD_RAW_OTHER] = PA_SD_SR_OTHER,
    [PA_SD_RAW_CONTROL] = PA_SD_SR_CONTROL, [PA_SD_RAW_PIPE] = PA_SD_SR_PIPE, [PA_SD_RAW_SEND] = PA_SD_SR_SEND,
    [PA_SD_RAW_DIST] = PA_SD_SR_DIST, [PA_SD_RAW_SBID] = PA_SD_SR_SBID, [PA_SD_RAW_SYNC] = PA_SD_SR_SYNC,
    [PA_SD_RAW_INSTFETCH] = PA_SD_SR_INSTFETCH,
};

/* Sum reports per IP into a sorted array; *overflow when a report carries the dropped-data flag. */
static uint32_t sum_reports(const uint8_t *raw, uint32_t n, ip_sum *out, bool *overflow)
{
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *r = raw + (size_t)i * SIMDEV_EUSTALL_REPORT_BYTES;
        uint64_t ip;
        memcpy(&ip, r, 8);
        out[i].ip = ip & 0x1fffffffu;
        memset(out[i].cnt, 0, sizeof out[i].cnt);
        for (int k = 0; k < PA_SD_RAW_COUNT; k++) {
            uint16_t v = (uint16_t)(r[3 + k] | (r[4 + k] << 8));
            out[i].cnt[g_metric_of_raw[k]] = (v >> 5) & 0xff;
        }
        if ((r[50] | (r[51] << 8)) & PA_SD_EUSTALL_FLAG_OVERFLOW)
            *overflow = true;
    }
    qsort(out, n, sizeof *out, cmp_ip);
    uint32_t u = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (u && out[u - 1].ip == out[i].ip) {
            for (int k = 0; k < PA_SD_SR_COUNT; k++)
                out[u - 1].cnt[k] += out[i].cnt[k];
        } else {
            out[u++] = out[i];
        }
    }
    return u;
}

static ze_result_t calculate(mgroup *g, zet_metric_group_calculation_type_t type, size_t size, const uint8_t *raw,
                             uint32_t *pCount, zet_typed_value_t *values)
{
    if (g->kind == GROUP_COMPUTE_BASIC)
        return pa_sd_oa_calculate(type, size, raw, pCount, values);
    if (type != ZET_METRIC_GROUP_CALCULATION_TYPE_METRIC_VALUES &&
        type != ZET_METRIC_GROUP_CALCULATION_TYPE_MAX_METRIC_VALUES)
        return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    if (type != ZET_METRIC_GROUP_CALCULATION_TYPE_METRIC_VALUES)
        return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE; /* as the driver: IP sampling has no max values */
    if (size % SIMDEV_EUSTALL_REPORT_BYTES)
        return ZE_RESULT_ERROR_INVALID_SIZE;
    uint64_t n = size / SIMDEV_EUSTALL_REPORT_BYTES;
    if (n * EUSTALL_METRICS > UINT32_MAX)
        return ZE_RESULT_ERROR_INVALID_SIZE;
    if (*pCount == 0) { /* upper bound: every report a distinct IP */
        *pCount = (uint32_t)(n * EUSTALL_METRICS);
        return ZE_RESULT_SUCCESS;
    }
    if (!values)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    ip_sum *sums = malloc((n ? n : 1) * sizeof *sums);
    if (!sums)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    bool overflow = false;
    uint32_t u = sum_reports(raw, (uint32_t)n, sums, &overflow);
    uint32_t total = u * EUSTALL_METRICS, w = 0;
    if (*pCount < total)
        total = *pCount;
    for (uint32_t i = 0; i < u && w < total; i++)
        for (uint32_t k = 0; k < EUSTALL_METRICS && w < total; k++, w++) {
            values[w].type = ZET_VALUE_TYPE_UINT64;
            values[w].value.ui64 = k == 0 ? sums[i].ip : sums[i].cnt[k - 1];
        }
    free(sums);
    *pCount = w;
    return overflow ? ZE_RESULT_WARNING_DROPPED_DATA : ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zetMetricGroupCalculateMetricValues(zet_metric_group_handle_t h, zet_metric_group_calculation_type_t type,
                                                      size_t rawDataSize, const uint8_t *pRawData,
                                                      uint32_t *pMetricValueCount, zet_typed_value_t *pMetricValues)
{
    mgroup *g = group_of(h);
    if (!g)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if ((!pRawData && rawDataSize) || !pMetricValueCount)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    return calculate(g, type, rawDataSize, pRawData, pMetricValueCount, pMetricValues);
}

ze_result_t pa_sd_zetMetricGroupCalculateMultipleMetricValuesExp(zet_metric_group_handle_t h,
                                                                 zet_metric_group_calculation_type_t type,
                                                                 size_t rawDataSize, const uint8_t *pRawData,
                                                                 uint32_t *pSetCount, uint32_t *pTotalMetricValueCount,
                                                                 uint32_t *pMetricCounts, zet_typed_value_t *pMetricValues)
{
    mgroup *g = group_of(h);
    if (!g)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if ((!pRawData && rawDataSize) || !pSetCount || !pTotalMetricValueCount)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (*pSetCount == 0 || *pTotalMetricValueCount == 0) { /* sizes: one set (no sub-devices) */
        *pTotalMetricValueCount = 0;
        ze_result_t r = calculate(g, type, rawDataSize, pRawData, pTotalMetricValueCount, NULL);
        *pSetCount = r == ZE_RESULT_SUCCESS ? 1 : 0;
        return r;
    }
    if (!pMetricCounts)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    ze_result_t r = calculate(g, type, rawDataSize, pRawData, pTotalMetricValueCount, pMetricValues);
    if (r == ZE_RESULT_SUCCESS || r == ZE_RESULT_WARNING_DROPPED_DATA) {
        *pSetCount = 1;
        pMetricCounts[0] = *pTotalMetricValueCount;
    } else {
        pMetricCounts[0] = 0;
    }
    return r;
}
