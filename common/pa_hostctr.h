/* pa_hostctr.h - host counter records shared by hwcounters/ (producer), agg/ and writer/: layouts, scaling. */
#ifndef PA_HOSTCTR_H
#define PA_HOSTCTR_H

#include <stdint.h>
#include <string.h>

#include "pa_record.h"

/* Events counted per thread at most (the group leader not included): the group read then fits
 * 3 + 1 + 16 words on the stack of the recording thread. Names beyond it get one warning. */
#define PA_HC_MAX_EVENTS 16

/* pa_record_t.flags of PA_REC_HC_SAMPLE (bits 16..23 hold the number of values). */
#define PA_RF_HC_EXIT 0x0100u       /* read at the thread's exit, not at an HGTX record */
#define PA_RF_HC_N(f) (((f) >> 16) & 0xffu)

/* One read of a thread's group: cumulative since the group was opened on that thread.
 * enabled/running are the group's PERF_FORMAT_TOTAL_TIME_ENABLED / _RUNNING (ns); running
 * < enabled means the kernel multiplexed the group (it counted only part of the time). */
typedef struct pa_hc_snap {
    uint64_t enabled, running;
    uint32_t n;
    uint64_t v[PA_HC_MAX_EVENTS];
} pa_hc_snap_t;

/*! pa_hc_sample_pack() : fills a PA_REC_HC_SAMPLE header from *s: t1 = enabled, u.raw[0] =
 *  running, u.raw[1..3] = the first three values; the others go to `payload` (returned count
 *  of bytes, 8 per value beyond three). The caller sets kind, t0 and flags' other bits. */
static inline uint32_t pa_hc_sample_pack(pa_record_t *rec, uint64_t *payload, const pa_hc_snap_t *s)
{
    uint32_t n = s->n < PA_HC_MAX_EVENTS ? s->n : PA_HC_MAX_EVENTS;
    rec->t1 = s->enabled;
    rec->u.raw[0] = s->running;
    for (uint32_t i = 0; i < n && i < 3; i++)
        rec->u.raw[1 + i] = s->v[i];
    for (uint32_t i = 3; i < n; i++)
        payload[i - 3] = s->v[i];
    rec->flags = (rec->flags & 0xffffu) | n << 16;
    return n > 3 ? (n - 3) * 8u : 0u;
}

/*! pa_hc_sample_unpack() : the inverse; returns 0, or -1 when the payload is shorter than the
 *  header says (a cut record: not used). */
static inline int pa_hc_sample_unpack(const pa_record_t *rec, const uint8_t *payload, pa_hc_snap_t *s)
{
    uint32_t n = PA_RF_HC_N(rec->flags);
    if (n > PA_HC_MAX_EVENTS || (n > 3 && (!payload || rec->len < (n - 3) * 8u)))
        return -1;
    s->n = n;
    s->enabled = rec->t1;
    s->running = rec->u.raw[0];
    for (uint32_t i = 0; i < n && i < 3; i++)
        s->v[i] = rec->u.raw[1 + i];
    for (uint32_t i = 3; i < n; i++)
        memcpy(&s->v[i], payload + (i - 3) * 8u, 8);
    return 0;
}

/*! pa_hc_scaled_delta() : the count of event i between snapshots a (earlier) and b, scaled
 *  for multiplexing the way perf stat does: raw delta x (enabled delta / running delta) when
 *  the group ran only part of the time; the raw delta when it ran all the time; 0 when it did
 *  not run at all in between (*not_counted set to 1 then, else left alone). */
static inline uint64_t pa_hc_scaled_delta(const pa_hc_snap_t *a, const pa_hc_snap_t *b, uint32_t i,
                                          int *not_counted)
{
    uint64_t dv = b->v[i] >= a->v[i] ? b->v[i] - a->v[i] : 0;
    uint64_t de = b->enabled >= a->enabled ? b->enabled - a->enabled : 0;
    uint64_t dr = b->running >= a->running ? b->running - a->running : 0;
    if (dr == 0) {
        if (de != 0 && not_counted)
            *not_counted = 1;
        return de == 0 ? dv : 0;
    }
    if (dr >= de)
        return dv;
    return (uint64_t)((double)dv * ((double)de / (double)dr) + 0.5);
}

/* Outcome of one event (PA_REC_HC_EVENT u.raw[0] low 32 bits); names in pa_hc_status_name(). */
enum pa_hc_status {
    PA_HC_OPENED = 1,      /* counted as asked */
    PA_HC_USER_ONLY,       /* kernel level refused (EACCES/EPERM): counted at user level only */
    PA_HC_SUBSTITUTE,      /* not asked: a software event counted because no asked event works */
    PA_HC_UNKNOWN,         /* libpfm4 does not know the name */
    PA_HC_NO_PMU,          /* no such PMU/event on this machine (ENOENT, ENODEV, EOPNOTSUPP) */
    PA_HC_REFUSED,         /* EACCES/EPERM even at user level (perf_event_paranoid) */
    PA_HC_NO_FDS,          /* EMFILE/ENFILE: the process is out of file descriptors */
    PA_HC_TOO_MANY,        /* beyond PA_HC_MAX_EVENTS */
    PA_HC_DUPLICATE,       /* the same encoding was already asked */
    PA_HC_FAILED,          /* any other errno (recorded) */
    PA_HC_NOT_TRIED,       /* no thread recorded a range, so nothing was opened */
    PA_HC_STATUS_COUNT
};

static inline const char *pa_hc_status_name(uint32_t s)
{
    static const char *const names[PA_HC_STATUS_COUNT] = {
        "?", "opened", "opened_user_only", "substitute", "unknown_event", "no_pmu", "refused",
        "no_fds", "too_many", "duplicate", "failed", "not_tried"};
    return s < PA_HC_STATUS_COUNT ? names[s] : "?";
}

/* 1 when an event of that status is counted (has a column). */
static inline int pa_hc_status_counted(uint32_t s)
{
    return s == PA_HC_OPENED || s == PA_HC_USER_ONLY || s == PA_HC_SUBSTITUTE;
}

/* PA_REC_HC_EVENT / PA_SP_HC_EVENT u.raw: [0] status | column << 32 (column = index among the
 * counted events, UINT32_MAX when not counted), [1] errno of the failed open (0 if none),
 * [2] perf_event_attr.type << 32 | exclude_kernel << 1 | exclude_user, [3] attr.config. */
#define PA_HC_NO_COLUMN 0xffffffffu

/* PA_REC_HC_THREAD u.raw[0]: a thread's group. */
enum pa_hc_thread_status { PA_HC_THR_OPENED = 1, PA_HC_THR_FAILED = 2, PA_HC_THR_NO_FDS = 3 };

#endif /* PA_HOSTCTR_H */
