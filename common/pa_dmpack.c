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

int pa_dm_pack_init(pa_dm_pack_t *p, uint32_t nmetrics)
{
    memset(p, 0, sizeof *p);
    p->nmetrics = nmetrics;
    p->prev = calloc(nmetrics ? nmetrics : 1, sizeof *p->prev);
    return p->prev ? 0 : -1;
}

void pa_dm_pack_reset(pa_dm_pack_t *p)
{
    p->len = 0;
    p->n = 0;
    p->base = p->prev_end = p->prev_dur = 0;
    memset(p->prev, 0, (p->nmetrics ? p->nmetrics : 1) * sizeof *p->prev);
}

int pa_dm_pack_add(pa_dm_pack_t *p, uint64_t start, uint64_t dur, const double *v)
{
    size_t need = p->len + 20 + 9 * (size_t)p->nmetrics;
    if (need > p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 4096;
        while (cap < need)
            cap *= 2;
        uint8_t *nb = realloc(p->buf, cap);
        if (!nb)
            return -1;
        p->buf = nb;
        p->cap = cap;
    }
    if (p->n == 0)
        p->base = p->prev_end = start;
    uint8_t *o = p->buf + p->len;
    o = put_var(o, zz((int64_t)(start - p->prev_end)));
    o = put_var(o, zz((int64_t)(dur - p->prev_dur)));
    for (uint32_t k = 0; k < p->nmetrics; k++) {
        double x = v[k];
        if (x < DM_INT_MAX && x > -DM_INT_MAX && x == (double)(int64_t)x && !(x == 0 && signbit(x))) {
            int64_t iv = (int64_t)x;
            o = put_var(o, zz(iv - p->prev[k]) << 1);
            p->prev[k] = iv;
        } else if ((double)(float)x == x || x != x) {
            float f = (float)x;
            *o++ = 1;
            memcpy(o, &f, 4);
            o += 4;
        } else {
            *o++ = 3;
            memcpy(o, &x, 8);
            o += 8;
        }
    }
    p->len = (size_t)(o - p->buf);
    p->prev_end = start + dur;
    p->prev_dur = dur;
    p->n++;
    return 0;
}

void pa_dm_pack_free(pa_dm_pack_t *p)
{
    free(p->buf);
    free(p->prev);
    memset(p, 0, sizeof *p);
}

void pa_dm_unpack_init(pa_dm_unpack_t *u, const void *data, size_t len, uint64_t base, uint32_t nmetrics,
                       int64_t *prev)
{
    u->p = data;
    u->end = u->p + (data ? len : 0);
    u->nmetrics = nmetrics;
    u->prev_end = base;
    u->prev_dur = 0;
    u->prev = prev;
    memset(prev, 0, (size_t)nmetrics * sizeof *prev);
}

static int get_var(pa_dm_unpack_t *u, uint64_t *v)
{
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

int pa_dm_unpack_next(pa_dm_unpack_t *u, uint64_t *start, uint64_t *dur, double *v)
{
    if (u->p >= u->end)
        return 0;
    uint64_t a, b;
    if (get_var(u, &a) != 0 || get_var(u, &b) != 0)
        return -1;
    *start = u->prev_end + (uint64_t)unzz(a);
    *dur = u->prev_dur + (uint64_t)unzz(b);
    u->prev_end = *start + *dur;
    u->prev_dur = *dur;
    for (uint32_t k = 0; k < u->nmetrics; k++) {
        uint64_t h;
        double x;
        if (get_var(u, &h) != 0)
            return -1;
        if (!(h & 1)) {
            u->prev[k] += unzz(h >> 1);
            x = (double)u->prev[k];
        } else if (h == 1) {
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
        if (v)
            v[k] = x;
    }
    return 1;
}
