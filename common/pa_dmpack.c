/* pa_dmpack.c - packed device metric intervals: the varint chunk format of PA_REC_DM_SAMPLES and
 * METRIC_CHUNKS.data (format in pa_devmetrics.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pa_devmetrics.h"

#define DM_INT_MAX 9007199254740992.0 /* 2^53: integral doubles below it are exact int64 */

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

/* An integral value of the int path: |v| < 2^53, not -0.0. */
static int is_int(double x)
{
    return x < DM_INT_MAX && x > -DM_INT_MAX && x == (double)(int64_t)x && !(x == 0 && signbit(x));
}

int pa_dm_pack_init(pa_dm_pack_t *p, uint32_t nmetrics)
{
    memset(p, 0, sizeof *p);
    p->nmetrics = nmetrics;
    p->st = calloc(nmetrics ? nmetrics : 1, sizeof *p->st);
    return p->st ? 0 : -1;
}

void pa_dm_pack_reset(pa_dm_pack_t *p)
{
    p->len = 0;
    p->n = p->rep = 0;
    p->base = p->prev_end = p->prev_dur = 0;
    memset(p->st, 0, (p->nmetrics ? p->nmetrics : 1) * sizeof *p->st);
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
 * one more step of its last step, every other value the same bits? */
static int repeats(const pa_dm_pack_t *p, uint64_t start, uint64_t dur, const double *v)
{
    if (!p->n || start != p->prev_end || dur != p->prev_dur)
        return 0;
    for (uint32_t k = 0; k < p->nmetrics; k++) {
        const pa_dm_mstate_t *s = &p->st[k];
        double x = v[k];
        if (s->is_float) {
            uint64_t b;
            memcpy(&b, &x, 8);
            if (b != s->bits)
                return 0;
        } else if (!is_int(x) || (int64_t)x != s->prev + s->step) {
            return 0;
        }
    }
    return 1;
}

int pa_dm_pack_add(pa_dm_pack_t *p, uint64_t start, uint64_t dur, const double *v)
{
    if (reserve(p, 30 + 9 * (size_t)p->nmetrics) != 0)
        return -1;
    if (repeats(p, start, dur, v)) { /* no bytes: the run's count is written before the next one */
        for (uint32_t k = 0; k < p->nmetrics; k++)
            if (!p->st[k].is_float)
                p->st[k].prev += p->st[k].step;
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
    for (uint32_t k = 0; k < p->nmetrics; k++) {
        pa_dm_mstate_t *s = &p->st[k];
        double x = v[k];
        if (is_int(x)) {
            int64_t iv = (int64_t)x;
            o = put_var(o, zz(iv - s->prev) << 1);
            s->step = s->is_float ? 0 : iv - s->prev;
            s->prev = iv;
            s->is_float = 0;
        } else {
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
        }
    }
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
    memset(st, 0, (size_t)nmetrics * sizeof *st);
}

static int get_var(pa_dm_unpack_t *u, uint64_t *v)
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
    for (uint32_t k = 0; k < u->nmetrics; k++) {
        pa_dm_mstate_t *s = &u->st[k];
        uint64_t h;
        double x;
        if (get_var(u, &h) != 0)
            return -1;
        if (!(h & 1)) {
            int64_t iv = s->prev + unzz(h >> 1);
            s->step = s->is_float ? 0 : iv - s->prev;
            s->prev = iv;
            s->is_float = 0;
            x = (double)iv;
        } else {
            if (h == 1) {
                float f;
                if (u->end - u->p < 4)
                    return -1;
                memcpy(&f, u->p, 4);
                u->p += 4;
                x = f;
            } else if (h == 3) {
                if (u->end - u->p < 8)
                    return -1;
                memcpy(&x, u->p, 8);
                u->p += 8;
            } else {
                return -1;
            }
            memcpy(&s->bits, &x, 8);
            s->is_float = 1;
        }
        if (v)
            v[k] = x;
    }
    u->first_done = 1;
    return 1;
}
