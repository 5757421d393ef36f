/* agg_hc.c - host counters: pairs each thread's group reads with its HGTX ranges (deltas), keeps per-thread totals. */
#include <stdlib.h>
#include <string.h>

#include "agg_priv.h"
#include "../common/pa_hostctr.h"

/*
 * The collector reads a thread's group just before each push/pop/start/end and emits the read
 * (PA_REC_HC_SAMPLE) tagged with that record's t0. Here a read becomes the thread's pending
 * sample; the HGTX record that follows with the same t0 claims it (pa_agg_hc_hgtx): a push or
 * start keeps it as the start of an open range, a pop or end as the closing read. When the
 * range is emitted (pa_agg_hc_range) its delta is end - start, scaled for multiplexing.
 * Start/end ranges ended on another thread get no delta (counters are per thread).
 */

#define PA_AGG_HC_MAX_OPEN (1u << 16) /* open ranges with a start read kept per thread */

typedef struct hc_open { uint64_t t0; pa_hc_snap_t s; } hc_open_t;

typedef struct hc_thr {
    uint32_t tid;
    int has_pending, has_closing, has_last, last_exit;
    uint64_t pending_t0, closing_t0;
    pa_hc_snap_t pending, closing, last;
    hc_open_t *open;
    uint32_t nopen, capopen;
} hc_thr_t;

typedef struct hc_state {
    pa_map_t tid_map; /* tid + 1 -> index in thr */
    hc_thr_t **thr;
    size_t nthr, cap;
    pa_hc_event_res_t ev[4 * PA_HC_MAX_EVENTS + 4];
    size_t nev;
    uint32_t ncols;
    uint64_t threads_opened, threads_failed, threads_no_fds;
    uint64_t unmatched, ranges_with, ranges_without, cross_thread, open_overflow;
} hc_state_t;

static hc_state_t *hc_get(pa_agg_t *a, int create)
{
    void **slot = pa_agg_source_state(a, PA_AGG_SRC_HC);
    if (!*slot && create)
        *slot = calloc(1, sizeof(hc_state_t));
    return *slot;
}

static hc_thr_t *thr_get(hc_state_t *st, uint32_t tid, int create)
{
    uint32_t *ix = pa_map_get(&st->tid_map, (uint64_t)tid + 1);
    if (ix)
        return st->thr[*ix];
    if (!create)
        return NULL;
    if (st->nthr == st->cap) {
        size_t ncap = st->cap ? st->cap * 2 : 16;
        hc_thr_t **n = realloc(st->thr, ncap * sizeof *n);
        if (!n)
            return NULL;
        st->thr = n;
        st->cap = ncap;
    }
    hc_thr_t *t = calloc(1, sizeof *t);
    if (!t || pa_map_put(&st->tid_map, (uint64_t)tid + 1, (uint32_t)st->nthr) < 0) {
        free(t);
        return NULL;
    }
    t->tid = tid;
    st->thr[st->nthr++] = t;
    return t;
}

/* "name\0asked\0encoding\0detail" -> four interned ids. */
static void event_record(pa_agg_t *a, hc_state_t *st, const pa_record_t *rec, const uint8_t *payload)
{
    uint32_t ids[4] = {0, 0, 0, 0};
    const char *strs[4] = {"", "", "", ""};
    size_t off = 0;
    for (int i = 0; i < 4 && payload && off < rec->len; i++) {
        const char *s = (const char *)payload + off;
        size_t n = strnlen(s, rec->len - off);
        ids[i] = pa_agg_intern(a, s, n);
        size_t l;
        const char *p = ids[i] ? pa_agg_string(a, ids[i], &l) : NULL;
        strs[i] = p ? p : "";
        off += n + 1;
    }
    pa_record_t sp = {.kind = PA_SP_HC_EVENT, .t0 = ids[0], .t1 = ids[1], .tid = ids[2]};
    memcpy(sp.u.raw, rec->u.raw, sizeof sp.u.raw);
    sp.u.raw[1] = (rec->u.raw[1] & 0xffffffffu) | (uint64_t)ids[3] << 32;
    pa_agg_spool(a, &sp, NULL);
    if (st->nev < sizeof st->ev / sizeof st->ev[0]) {
        pa_hc_event_res_t *e = &st->ev[st->nev++];
        e->status = (uint32_t)rec->u.raw[0];
        e->column = (uint32_t)(rec->u.raw[0] >> 32);
        e->err = (int)(uint32_t)rec->u.raw[1];
        e->name = strs[0];
        e->asked = strs[1];
        e->encoding = strs[2];
        e->detail = strs[3];
        if (e->column != PA_HC_NO_COLUMN && e->column + 1 > st->ncols && e->column < PA_HC_MAX_EVENTS)
            st->ncols = e->column + 1;
    }
}

static void sample_record(hc_state_t *st, hc_thr_t *t, const pa_record_t *rec, const uint8_t *payload)
{
    pa_hc_snap_t s;
    if (pa_hc_sample_unpack(rec, payload, &s) != 0)
        return;
    t->last = s;
    t->has_last = 1;
    t->last_exit = (rec->flags & PA_RF_HC_EXIT) != 0;
    if (t->last_exit)
        return;
    if (t->has_pending)
        st->unmatched++; /* its HGTX record never came (dropped by a full ring) */
    t->pending = s;
    t->pending_t0 = rec->t0;
    t->has_pending = 1;
}

void pa_agg_hc_record(pa_agg_t *a, uint32_t tid, const pa_record_t *rec, const uint8_t *payload)
{
    hc_state_t *st = hc_get(a, 1);
    hc_thr_t *t = st ? thr_get(st, tid, 1) : NULL;
    if (!t)
        return;
    switch (rec->kind) {
    case PA_REC_HC_SAMPLE:
        sample_record(st, t, rec, payload);
        break;
    case PA_REC_HC_EVENT:
        event_record(a, st, rec, payload);
        break;
    case PA_REC_HC_THREAD:
        st->threads_opened += rec->u.raw[0] == PA_HC_THR_OPENED;
        st->threads_failed += rec->u.raw[0] == PA_HC_THR_FAILED;
        st->threads_no_fds += rec->u.raw[0] == PA_HC_THR_NO_FDS;
        break;
    default:
        break;
    }
}

void pa_agg_hc_hgtx(pa_agg_t *a, uint32_t tid, const pa_record_t *rec)
{
    hc_state_t *st = hc_get(a, 0);
    hc_thr_t *t = st ? thr_get(st, tid, 0) : NULL;
    if (!t || !t->has_pending)
        return;
    t->has_pending = 0;
    if (t->pending_t0 != rec->t0) {
        st->unmatched++;
        return;
    }
    if (rec->kind == PA_REC_HGTX_PUSH || rec->kind == PA_REC_HGTX_START) {
        if (t->nopen >= PA_AGG_HC_MAX_OPEN) {
            st->open_overflow++;
            return;
        }
        if (t->nopen == t->capopen) {
            uint32_t ncap = t->capopen ? t->capopen * 2 : 16;
            hc_open_t *n = realloc(t->open, ncap * sizeof *n);
            if (!n)
                return;
            t->open = n;
            t->capopen = ncap;
        }
        t->open[t->nopen].t0 = rec->t0;
        t->open[t->nopen].s = t->pending;
        t->nopen++;
    } else {
        t->closing = t->pending;
        t->closing_t0 = rec->t0;
        t->has_closing = 1;
    }
}

/* Index of the open start read at t0 (newest first: ranges close mostly in LIFO order). */
static long open_find(const hc_thr_t *t, uint64_t t0)
{
    for (long i = (long)t->nopen - 1; i >= 0; i--)
        if (t->open[i].t0 == t0)
            return i;
    return -1;
}

void pa_agg_hc_range(pa_agg_t *a, const pa_record_t *r)
{
    hc_state_t *st = hc_get(a, 0);
    hc_thr_t *t = st ? thr_get(st, r->tid, 0) : NULL;
    if (!t)
        return;
    long i = open_find(t, r->t0);
    if (i < 0) {
        if (!(r->flags & PA_RF_UNTERMINATED))
            st->ranges_without++;
        return;
    }
    pa_hc_snap_t s0 = t->open[i].s;
    memmove(&t->open[i], &t->open[i + 1], (t->nopen - (size_t)i - 1) * sizeof *t->open);
    t->nopen--;
    if (r->flags & PA_RF_UNTERMINATED)
        return;
    if (r->u.range.end_tid != r->tid) {
        st->cross_thread++;
        return;
    }
    if (!t->has_closing || t->closing_t0 != r->t1) {
        st->ranges_without++;
        return;
    }
    t->has_closing = 0;
    const pa_hc_snap_t *s1 = &t->closing;
    uint32_t n = s0.n < s1->n ? s0.n : s1->n;
    uint64_t pl[2 * PA_HC_MAX_EVENTS];
    for (uint32_t k = 0; k < n; k++) {
        pl[2 * k] = pa_hc_scaled_delta(&s0, s1, k, NULL);
        pl[2 * k + 1] = s1->v[k] >= s0.v[k] ? s1->v[k] - s0.v[k] : 0;
    }
    pa_record_t sp = {.kind = PA_SP_HC_RANGE, .tid = r->tid, .t0 = r->t0, .t1 = r->t1, .len = n * 16u,
                      .flags = n << 16};
    sp.u.raw[0] = r->u.range.range_id;
    sp.u.raw[1] = s1->enabled >= s0.enabled ? s1->enabled - s0.enabled : 0;
    sp.u.raw[2] = s1->running >= s0.running ? s1->running - s0.running : 0;
    pa_agg_spool(a, &sp, pl);
    st->ranges_with++;
}

/* Spools every thread's totals (its last read: since its group opened) and the counts, and
 * keeps them in one block for the summary (a->res.hc, freed by pa_agg_destroy). */
void pa_agg_hc_finish(pa_agg_t *a)
{
    hc_state_t *st = hc_get(a, 0);
    if (!st)
        return;
    size_t nthr = 0;
    for (size_t i = 0; i < st->nthr; i++)
        nthr += st->thr[i]->has_last;
    pa_hc_results_t *res = calloc(1, sizeof *res + st->nev * sizeof *res->ev + nthr * sizeof *res->thr);
    if (res) {
        res->ev = (pa_hc_event_res_t *)(res + 1);
        res->thr = (pa_hc_thread_res_t *)(res->ev + st->nev);
        memcpy(res->ev, st->ev, st->nev * sizeof *res->ev);
        res->nev = st->nev;
        res->ncols = st->ncols;
    }
    pa_hc_snap_t zero;
    memset(&zero, 0, sizeof zero);
    for (size_t i = 0; i < st->nthr; i++) {
        hc_thr_t *t = st->thr[i];
        if (t->has_last) {
            uint64_t pl[2 * PA_HC_MAX_EVENTS];
            pa_hc_thread_res_t *o = res ? &res->thr[res->nthr++] : NULL;
            for (uint32_t k = 0; k < t->last.n; k++) {
                pl[2 * k] = pa_hc_scaled_delta(&zero, &t->last, k, NULL);
                pl[2 * k + 1] = t->last.v[k];
                if (o)
                    o->v[k] = pl[2 * k];
            }
            pa_record_t sp = {.kind = PA_SP_HC_THREAD, .tid = t->tid, .t0 = t->last.enabled,
                              .t1 = t->last.running, .len = t->last.n * 16u, .flags = t->last.n << 16};
            sp.u.raw[0] = t->last_exit ? PA_RF_HC_EXIT : 0;
            pa_agg_spool(a, &sp, pl);
            if (o) {
                o->tid = t->tid;
                o->at_exit = t->last_exit;
                o->enabled = t->last.enabled;
                o->running = t->last.running;
                o->n = t->last.n;
            }
        }
        free(t->open);
        free(t);
    }
    pa_record_t c = {.kind = PA_SP_HC_COUNTS};
    c.u.raw[0] = st->threads_opened;
    c.u.raw[1] = st->threads_failed + st->threads_no_fds;
    c.u.raw[2] = st->unmatched;
    c.u.raw[3] = st->ranges_without;
    pa_agg_spool(a, &c, NULL);
    if (res) {
        res->threads_opened = st->threads_opened;
        res->threads_failed = st->threads_failed;
        res->threads_no_fds = st->threads_no_fds;
        res->unmatched = st->unmatched;
        res->ranges_with = st->ranges_with;
        res->ranges_without = st->ranges_without;
        res->cross_thread = st->cross_thread;
    }
    a->res.hc = res;
    free(st->thr);
    pa_map_free(&st->tid_map);
    free(st);
    *pa_agg_source_state(a, PA_AGG_SRC_HC) = NULL;
}
