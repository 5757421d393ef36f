/* pa_dmpack.c - packed device metric intervals: the varint chunk format of PA_REC_DM_SAMPLES and
 * METRIC_CHUNKS.data (format in pa_devmetrics.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pa_devmetrics.h"

#define DM_INT_MAX 9007199254740992.0 /* 2^53: integral doubles below it are exact int64 */
#define DM_INT_LIMIT 9007199254740992ll

static uint64_t zz(int64_t x) { return ((uint64_t)x << 1) ^ (uint64_t)(x >> 63); }
static int64_t unzz(uint64_t u) { return (int64_t)(u >> 1) ^ -(int64_t)(u & 1); }

static uint8_t *put_var(uint8_t *o, uint64_t v)
{
    while (v >= 0x80) {
        *o++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *o++ = (uint8_t)v;
    return o;
}

int pa_dm_pack_init(pa_dm_pack_t *p, uint32_t nmetrics)
{
    memset(p, 0, sizeof *p);
    p->nmetrics = nmetrics;
    p->st = calloc(nmetrics ? nmetrics : 1, sizeof *p->st);
    p->exp = calloc(nmetrics ? nmetrics : 1, sizeof *p->exp);
    p->stepping = calloc(nmetrics ? nmetrics : 1, sizeof *p->stepping);
    if (p->st && p->exp && p->stepping)
        return 0;
    pa_dm_pack_free(p);
    return -1;
}

void pa_dm_pack_reset(pa_dm_pack_t *p)
{
    p->len = 0;
    p->n = p->rep = 0;
    p->base = p->prev_end = p->prev_dur = 0;
    memset(p->st, 0, (p->nmetrics ? p->nmetrics : 1) * sizeof *p->st);
    memset(p->exp, 0, (p->nmetrics ? p->nmetrics : 1) * sizeof *p->exp); /* prev 0, step 0 */
    p->nsteps = p->inexact = 0;
}

static int reserve(pa_dm_pack_t *p, size_t more)
{
    size_t need = p->len + more;
    if (need <= p->cap)
        return 0;
    size_t cap = p->cap ? p->cap * 2 : 4096;
    while (cap < need)
        cap *= 2;
    uint8_t *nb = realloc(p->buf, cap);
    if (!nb)
        return -1;
    p->buf = nb;
    p->cap = cap;
    return 0;
}

/* Writes the pending run of repeats (10 bytes were reserved by the add that started it). */
static void put_rep(pa_dm_pack_t *p)
{
    if (p->rep)
        p->len = (size_t)(put_var(p->buf + p->len, ((uint64_t)p->rep << 1) | 1) - p->buf);
    p->rep = 0;
}

/* Does interval (start, dur, v) continue the last one: tiled, same duration, every integral value
 * one more step of its last step, every other value the same bits? exp holds exactly those bits
 * (an integral value below 2^53 has one double, +0.0 for 0: -0.0 and non-integral values are
 * taken as bits), so one compare answers it; an expectation at or beyond 2^53 answers no. */
static int repeats(const pa_dm_pack_t *p, uint64_t start, uint64_t dur, const double *v)
{
    if (!p->n || start != p->prev_end || dur != p->prev_dur || p->inexact)
        return 0;
    return memcmp(v, p->exp, (size_t)p->nmetrics * sizeof *v) == 0;
}

/* The value a repeat of the last interval has in integral metric k: its value plus its step. One
 * at or beyond 2^53 makes every repeat impossible (no integral value there is taken) until the
 * next interval written out. */
static inline void expect_int(pa_dm_pack_t *p, uint32_t k, int64_t next)
{
    if ((uint64_t)(next + DM_INT_LIMIT - 1) < (uint64_t)(2 * DM_INT_LIMIT - 1)) /* |next| < 2^53 */
        p->exp[k] = (double)next;
    else
        p->inexact++;
}

/* The values of an interval written out at o: their bytes, states and expectations (the loop
 * keeps its counters in locals: the stores through o and exp could alias p's fields). */
static uint8_t *put_values(pa_dm_pack_t *p, const double *restrict v, uint8_t *restrict o)
{
    pa_dm_mstate_t *restrict st = p->st;
    double *restrict exp = p->exp;
    uint32_t *restrict stepping = p->stepping;
    uint32_t nsteps = 0, inexact = 0;
    for (uint32_t k = 0, n = p->nmetrics; k < n; k++) {
        pa_dm_mstate_t *s = &st[k];
        double x = v[k];
        uint64_t xb, eb;
        memcpy(&xb, &x, 8);
        memcpy(&eb, &exp[k], 8);
        if (xb == eb && s->step == 0 && !s->is_float) {
            /* the integral value it had (exp holds it exactly: a step-0 metric is never inexact):
             * the branch below would write a 0 and leave the state as it is */
            *o++ = 0;
            continue;
        }
        if (x < DM_INT_MAX && x > -DM_INT_MAX) {
            int64_t iv = (int64_t)x;
            if ((double)iv == x && (iv != 0 || !signbit(x))) { /* integral (not -0.0) */
                int64_t d = iv - s->prev;
                uint64_t h = zz(d) << 1;
                if (h < 0x80)
                    *o++ = (uint8_t)h;
                else
                    o = put_var(o, h);
                int64_t step = s->is_float ? 0 : d, next = iv + step;
                s->step = step;
                s->prev = iv;
                s->is_float = 0;
                if (step)
                    stepping[nsteps++] = k;
                if ((uint64_t)(next + DM_INT_LIMIT - 1) < (uint64_t)(2 * DM_INT_LIMIT - 1)) /* |next| < 2^53 */
                    exp[k] = (double)next;
                else
                    inexact++;
                continue;
            }
        }
        if ((double)(float)x == x || x != x) {
            float f = (float)x;
            *o++ = 1;
            memcpy(o, &f, 4);
            o += 4;
            x = f; /* what a reader gets back (NaN payloads aside) */
        } else {
            *o++ = 3;
            memcpy(o, &x, 8);
            o += 8;
        }
        memcpy(&s->bits, &x, 8);
        s->is_float = 1;
        exp[k] = x;
    }
    p->nsteps = nsteps;
    p->inexact = inexact;
    return o;
}

int pa_dm_pack_add(pa_dm_pack_t *p, uint64_t start, uint64_t dur, const double *v)
{
    if (reserve(p, 30 + 9 * (size_t)p->nmetrics) != 0)
        return -1;
    if (repeats(p, start, dur, v)) { /* no bytes: the run's count is written before the next one */
        for (uint32_t i = 0; i < p->nsteps; i++) {
            pa_dm_mstate_t *s = &p->st[p->stepping[i]];
            s->prev += s->step;
            expect_int(p, p->stepping[i], s->prev + s->step);
        }
        p->rep++;
        p->n++;
        p->prev_end = start + dur;
        return 0;
    }
    put_rep(p);
    if (p->n == 0)
        p->base = p->prev_end = start;
    uint8_t *o = p->buf + p->len;
    o = put_var(o, zz((int64_t)(start - p->prev_end)) << 1);
    o = put_var(o, zz((int64_t)(dur - p->prev_dur)));
    o = put_values(p, v, o);
    p->len = (size_t)(o - p->buf);
    p->prev_end = start + dur;
    p->prev_dur = dur;
    p->n++;
    return 0;
}

void pa_dm_pack_finish(pa_dm_pack_t *p)
{
    put_rep(p);
}

void pa_dm_pack_free(pa_dm_pack_t *p)
{
    free(p->buf);
    free(p->st);
    free(p->exp);
    free(p->stepping);
    memset(p, 0, sizeof *p);
}

void pa_dm_unpack_init(pa_dm_unpack_t *u, const void *data, size_t len, uint64_t base, uint32_t nmetrics,
                       pa_dm_mstate_t *st)
{
    u->p = data;
    u->end = u->p + (data ? len : 0);
    u->nmetrics = nmetrics;
    u->prev_end = base;
    u->prev_dur = 0;
    u->rep = 0;
    u->first_done = 0;
    u->st = st;
    u->keep = NULL;
    memset(st, 0, (size_t)nmetrics * sizeof *st);
}

void pa_dm_unpack_keep(pa_dm_unpack_t *u, const uint8_t *keep) { u->keep = keep; }

static inline __attribute__((always_inline)) int get_var(pa_dm_unpack_t *u, uint64_t *v)
{
    if (u->p < u->end && !(*u->p & 0x80)) { /* one byte: most values of a steady stream */
        *v = *u->p++;
        return 0;
    }
    uint64_t x = 0;
    for (unsigned s = 0; s < 64; s += 7) {
        if (u->p >= u->end)
            return -1;
        uint8_t b = *u->p++;
        x |= (uint64_t)(b & 0x7f) << s;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return -1;
}

/* The next interval of a run of repeats. */
static void next_rep(pa_dm_unpack_t *u, uint64_t *start, uint64_t *dur, double *v)
{
    *start = u->prev_end;
    *dur = u->prev_dur;
    u->prev_end += u->prev_dur;
    for (uint32_t k = 0; k < u->nmetrics; k++) {
        if (u->keep && !u->keep[k])
            continue;
        pa_dm_mstate_t *s = &u->st[k];
        double x;
        if (s->is_float) {
            memcpy(&x, &s->bits, 8);
        } else {
            s->prev += s->step;
            x = (double)s->prev;
        }
        if (v)
            v[k] = x;
    }
    u->rep--;
}

int pa_dm_unpack_next(pa_dm_unpack_t *u, uint64_t *start, uint64_t *dur, double *v)
{
    if (u->rep) {
        next_rep(u, start, dur, v);
        return 1;
    }
    if (u->p >= u->end)
        return 0;
    uint64_t a, b;
    if (get_var(u, &a) != 0)
        return -1;
    if (a & 1) { /* a run of repeats of the last interval */
        if (!(a >> 1) || u->first_done == 0)
            return -1;
        u->rep = a >> 1;
        next_rep(u, start, dur, v);
        return 1;
    }
    if (get_var(u, &b) != 0)
        return -1;
    *start = u->prev_end + (uint64_t)unzz(a >> 1);
    *dur = u->prev_dur + (uint64_t)unzz(b);
    u->prev_end = *start + *dur;
    u->prev_dur = *dur;
    /* the loop reads through locals: the stores to v and st could alias u's fields */
    const uint8_t *keep = u->keep, *p = u->p, *end = u->end;
    pa_dm_mstate_t *st = u->st;
    for (uint32_t k = 0, n = u->nmetrics; k < n; k++) {
        uint64_t h;
        double x;
        if (p < end && !(*p & 0x80)) { /* one byte: most values of a steady stream */
            h = *p++;
        } else {
            u->p = p;
            if (get_var(u, &h) != 0)
                return -1;
            p = u->p;
        }
        if (keep && !keep[k]) { /* stepped over: its state is never read */
            if (h & 1) {
                size_t skip = h == 1 ? 4 : 8;
                if (h > 3 || (size_t)(end - p) < skip)
                    return -1;
                p += skip;
            }
            continue;
        }
        pa_dm_mstate_t *s = &st[k];
        if (!(h & 1)) {
            int64_t iv = s->prev + unzz(h >> 1);
            s->step = s->is_float ? 0 : iv - s->prev;
            s->prev = iv;
            s->is_float = 0;
            x = (double)iv;
        } else {
            if (h == 1) {
                float f;
                if (end - p < 4)
                    return -1;
                memcpy(&f, p, 4);
                p += 4;
                x = f;
            } else if (h == 3) {
                if (end - p < 8)
                    return -1;
                memcpy(&x, p, 8);
                p += 8;
            } else {
                return -1;
            }
            memcpy(&s->bits, &x, 8);
            s->is_float = 1;
        }
        if (v)
            v[k] = x;
    }
    u->p = p;
    u->first_done = 1;
    return 1;
}
