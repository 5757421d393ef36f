/* agg_dm.c - device metric streams: per device, online sums of every metric over its intervals,
 * the peaks' properties and sysman readings, for the exit summary (no DB query needed). */
#include <stdlib.h>
#include <string.h>

#include "agg_priv.h"

#define DM_AGG_MAX_DEVICES 64
#define DM_AGG_MAX_METRICS 1024

typedef struct dm_acc {
    pa_dm_dev_res_t r;
    char *strings;          /* group, names and units (the device record's payload) */
    const char **names, **units;
    double *sums;
} dm_acc_t;

typedef struct dm_state {
    dm_acc_t dev[DM_AGG_MAX_DEVICES];
    uint32_t ndev;          /* highest device index + 1 seen */
    pa_dm_dev_res_t *out;
} dm_state_t;

static dm_state_t *dm_state(pa_agg_t *a)
{
    void **slot = pa_agg_source_state(a, PA_AGG_SRC_DM);
    if (slot && !*slot)
        *slot = calloc(1, sizeof(dm_state_t));
    return slot ? *slot : NULL;
}

static dm_acc_t *dev_get(dm_state_t *s, uint64_t index)
{
    if (index >= DM_AGG_MAX_DEVICES)
        return NULL;
    if (index >= s->ndev)
        s->ndev = (uint32_t)index + 1;
    s->dev[index].r.device = (uint32_t)index;
    return &s->dev[index];
}

/* The device record: state, period, result; payload group "\0" {name "\0" unit "\0"}*. */
static void on_device(dm_acc_t *d, const pa_record_t *rec, const uint8_t *p)
{
    d->r.state = (uint32_t)rec->u.raw[1];
    d->r.period_ns = rec->u.raw[2];
    d->r.result = (uint32_t)rec->u.raw[3];
    if (!p || !rec->len || d->strings)
        return;
    d->strings = malloc((size_t)rec->len + 1);
    if (!d->strings)
        return;
    memcpy(d->strings, p, rec->len);
    d->strings[rec->len] = '\0';
    const char *s = d->strings, *end = d->strings + rec->len;
    d->r.group = s;
    s += strlen(s) + 1;
    uint32_t n = 0;
    for (const char *q = s; q < end && n < DM_AGG_MAX_METRICS; n++) {
        q += strlen(q) + 1;
        if (q < end)
            q += strlen(q) + 1;
    }
    d->names = calloc(n ? n : 1, sizeof *d->names);
    d->units = calloc(n ? n : 1, sizeof *d->units);
    d->sums = calloc(n ? n : 1, sizeof *d->sums);
    if (!d->names || !d->units || !d->sums)
        return;
    for (uint32_t k = 0; k < n; k++) {
        d->names[k] = s;
        s += strlen(s) + 1;
        d->units[k] = s < end ? s : "";
        if (s < end)
            s += strlen(s) + 1;
    }
    d->r.nmetrics = n;
}

/* Packed intervals (hwcounters/devmetrics.c): u.raw = {device, nmetrics, intervals, dropped reads},
 * [t0, t1) their span; the payload starts with the per-metric sums over them (nmetrics doubles), so
 * the exit summary's totals cost O(metrics) a record; the intervals themselves go to the DB. */
static void on_samples(dm_acc_t *d, const pa_record_t *rec, const uint8_t *p)
{
    uint64_t nm = rec->u.raw[1], n = rec->u.raw[2];
    if (!p || nm == 0 || nm > DM_AGG_MAX_METRICS || (uint64_t)rec->len < 8 * nm || (rec->flags & PA_RF_TRUNCATED))
        return; /* truncated: the writer drops it too */
    if (rec->u.raw[3] > d->r.dropped_reads)
        d->r.dropped_reads = rec->u.raw[3];
    if (!d->r.intervals || rec->t0 < d->r.first_ns)
        d->r.first_ns = rec->t0;
    if (rec->t1 > d->r.last_ns)
        d->r.last_ns = rec->t1;
    d->r.intervals += n;
    uint32_t use = d->sums && nm <= d->r.nmetrics ? (uint32_t)nm : 0;
    for (uint32_t k = 0; k < use; k++) {
        double v;
        memcpy(&v, p + 8 * (size_t)k, 8);
        d->sums[k] += v;
    }
}

void pa_agg_dm_record(pa_agg_t *a, const pa_record_t *rec, const uint8_t *p)
{
    dm_state_t *s = dm_state(a);
    dm_acc_t *d = s ? dev_get(s, rec->u.raw[0]) : NULL;
    if (!d)
        return;
    switch (rec->kind) {
    case PA_REC_DM_DEVICE: on_device(d, rec, p); break;
    case PA_REC_DM_SAMPLES: on_samples(d, rec, p); break;
    case PA_REC_DM_PEAKS:
        if (p && rec->len >= sizeof(pa_dm_peaks_t)) {
            memcpy(&d->r.peaks, p, sizeof d->r.peaks);
            d->r.have_peaks = 1;
        }
        break;
    case PA_REC_DM_SYSMAN:
        if (p && rec->len >= sizeof(pa_dm_sysman_t)) {
            memcpy(d->r.nsysman ? &d->r.sm_last : &d->r.sm_first, p, sizeof(pa_dm_sysman_t));
            if (!d->r.nsysman)
                d->r.sm_last = d->r.sm_first;
            d->r.nsysman++;
        }
        break;
    default: break;
    }
}

void pa_agg_dm_finish(pa_agg_t *a)
{
    void **slot = pa_agg_source_state(a, PA_AGG_SRC_DM);
    dm_state_t *s = slot ? *slot : NULL;
    if (!s || !s->ndev)
        return;
    s->out = calloc(s->ndev, sizeof *s->out);
    if (!s->out)
        return;
    size_t n = 0;
    for (uint32_t i = 0; i < s->ndev; i++) {
        dm_acc_t *d = &s->dev[i];
        if (!d->r.state)
            continue; /* no device record: nothing known about it */
        d->r.names = d->names;
        d->r.units = d->units;
        d->r.sums = d->sums;
        if (!d->sums)
            d->r.nmetrics = 0;
        if (!d->r.group)
            d->r.group = "";
        s->out[n++] = d->r;
    }
    a->res.dm = s->out;
    a->res.ndm = n;
}

void pa_agg_dm_free(pa_agg_t *a)
{
    void **slot = pa_agg_source_state(a, PA_AGG_SRC_DM);
    dm_state_t *s = slot ? *slot : NULL;
    if (!s)
        return;
    for (uint32_t i = 0; i < s->ndev; i++) {
        free(s->dev[i].strings);
        free(s->dev[i].names);
        free(s->dev[i].units);
        free(s->dev[i].sums);
    }
    free(s->out);
    free(s);
    *slot = NULL;
    a->res.dm = NULL;
    a->res.ndm = 0;
}
