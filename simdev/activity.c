/* activity.c - one timeline per device of what its engines executed: commands' totals spread
 * uniformly over their device time, cumulative counters and busy-time unions advanced in order,
 * period boundaries reported to an open ComputeBasic stream. */
#include <stdlib.h>
#include <string.h>

#include "pa_sd_activity.h"
#include "pa_sd_engine.h"

typedef struct op {
    uint64_t s, e;
    uint32_t eng;   /* 0..5: compute 0..3, copy 0..1 */
    uint32_t group; /* PA_SD_BUSY_COMPUTE or PA_SD_BUSY_COPY */
    uint64_t tot[PA_SD_C_COUNT];
} op;

typedef struct act_dev {
    pthread_mutex_t mu;
    bool started;
    uint64_t h;                       /* the timeline is complete up to h */
    pa_sd_counters acc;               /* counters at h */
    op *ops;
    uint32_t nops, cap;
    uint64_t pending[PA_SD_ENGINES];  /* start of a command not added yet, 0 = none */
    uint64_t next, period;            /* stream: next boundary, 0 = no stream */
    pa_sd_activity_tick_fn fn;
    uint64_t (*iv)[2];                /* union_len's scratch, ivcap entries (grown with ops) */
    uint32_t ivcap;
} act_dev;

static act_dev g_act[PA_SD_MAX_DEVICES];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void act_init(void)
{
    for (uint32_t i = 0; i < PA_SD_MAX_DEVICES; i++)
        pthread_mutex_init(&g_act[i].mu, NULL);
}

/* Locked device state; the timeline starts at the first touch (no work exists before it). */
static act_dev *lock_dev(pa_sd_device *dev)
{
    pthread_once(&g_once, act_init);
    act_dev *d = &g_act[dev->index % PA_SD_MAX_DEVICES];
    pthread_mutex_lock(&d->mu);
    if (!d->started) {
        d->started = true;
        d->h = d->acc.at_ns = pa_sd_clock_host_ns();
    }
    return d;
}

static uint32_t eng_slot(const pa_sd_engine *eng)
{
    return eng->ordinal == SIMDEV_ORDINAL_COMPUTE ? eng->index : SIMDEV_NUM_COMPUTE_ENGINES + eng->index;
}

/* Share of a total allocated by time t: floor(total * (t - s) / (e - s)), all of it once t >= e;
 * an instantaneous command (e == s) counts in the interval holding s. */
static uint64_t alloc_at(const op *o, uint32_t c, uint64_t t)
{
    if (t <= o->s)
        return 0;
    if (t >= o->e)
        return o->tot[c];
    return (uint64_t)((unsigned __int128)o->tot[c] * (t - o->s) / (o->e - o->s));
}

static int cmp_start(const void *a, const void *b)
{
    uint64_t x = ((const uint64_t *)a)[0], y = ((const uint64_t *)b)[0];
    return x < y ? -1 : x > y;
}

/* Length of the union of the group's commands within [a, b). */
static uint64_t union_len(act_dev *d, int group, uint64_t a, uint64_t b, uint64_t (*iv)[2])
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < d->nops; i++) {
        const op *o = &d->ops[i];
        if (group != PA_SD_BUSY_ANY && (int)o->group != group)
            continue;
        uint64_t s = o->s > a ? o->s : a, e = o->e < b ? o->e : b;
        if (e > s) {
            iv[n][0] = s;
            iv[n][1] = e;
            n++;
        }
    }
    if (n > 8) {
        qsort(iv, n, sizeof iv[0], cmp_start);
    } else { /* one or a few commands (the usual case at every period boundary): no call */
        for (uint32_t i = 1; i < n; i++)
            for (uint32_t j = i; j > 0 && iv[j - 1][0] > iv[j][0]; j--) {
                uint64_t t0 = iv[j][0], t1 = iv[j][1];
                iv[j][0] = iv[j - 1][0], iv[j][1] = iv[j - 1][1];
                iv[j - 1][0] = t0, iv[j - 1][1] = t1;
            }
    }
    uint64_t len = 0, cs = 0, ce = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (i == 0 || iv[i][0] > ce) {
            len += ce - cs;
            cs = iv[i][0];
            ce = iv[i][1];
        } else if (iv[i][1] > ce) {
            ce = iv[i][1];
        }
    }
    return n ? len + (ce - cs) : 0;
}

/* Move the timeline from d->h to t: counters, unions; drop finished commands. */
static void advance_to(act_dev *d, uint64_t t)
{
    if (t <= d->h)
        return;
    if (d->nops > d->ivcap) {
        void *n = realloc(d->iv, d->nops * sizeof *d->iv);
        if (n) {
            d->iv = n;
            d->ivcap = d->nops;
        }
    }
    uint64_t (*iv)[2] = d->nops && d->nops <= d->ivcap ? d->iv : NULL;
    for (uint32_t i = 0; i < d->nops; i++) {
        const op *o = &d->ops[i];
        for (uint32_t c = 0; c < PA_SD_C_COUNT; c++)
            d->acc.c[c] += alloc_at(o, c, t) - alloc_at(o, c, d->h);
        uint64_t s = o->s > d->h ? o->s : d->h, e = o->e < t ? o->e : t;
        if (e > s)
            d->acc.engine_busy[o->eng] += e - s;
    }
    for (int g = 0; iv && g < PA_SD_BUSY_COUNT; g++)
        d->acc.busy[g] += union_len(d, g, d->h, t, iv);
    uint32_t k = 0;
    for (uint32_t i = 0; i < d->nops; i++)
        if (d->ops[i].e > t || (d->ops[i].e == d->ops[i].s && d->ops[i].s >= t))
            d->ops[k++] = d->ops[i];
    d->nops = k;
    d->h = d->acc.at_ns = t;
}

/* Advance to t, stopping at every stream boundary on the way; once no command is left on the
 * timeline (nothing changes up to t: a command not added yet keeps t at its start), the remaining
 * boundaries up to t pass in one call. */
static void advance(pa_sd_device *dev, act_dev *d, uint64_t t)
{
    while (d->period && d->next <= t) {
        advance_to(d, d->next);
        uint64_t n = 1;
        if (d->nops == 0 && t - d->next >= d->period) {
            n += (t - d->next) / d->period;
            advance_to(d, d->next + (n - 1) * d->period);
        }
        d->fn(dev, &d->acc, n);
        d->next += n * d->period;
    }
    advance_to(d, t);
}

/* The latest instant every engine's work is known for: now, or the start of a command in flight. */
static uint64_t horizon(const act_dev *d)
{
    uint64_t t = pa_sd_clock_host_ns();
    for (uint32_t i = 0; i < PA_SD_ENGINES; i++)
        if (d->pending[i] && d->pending[i] < t)
            t = d->pending[i];
    return t;
}

void pa_sd_activity_begin(pa_sd_engine *eng, uint64_t start)
{
    act_dev *d = lock_dev(eng->dev);
    d->pending[eng_slot(eng)] = start > d->h ? start : d->h;
    pthread_mutex_unlock(&d->mu);
}

void pa_sd_activity_add(pa_sd_engine *eng, uint64_t start, uint64_t end, const uint64_t *totals)
{
    act_dev *d = lock_dev(eng->dev);
    uint32_t slot = eng_slot(eng);
    d->pending[slot] = 0;
    if (d->nops == d->cap) {
        uint32_t cap = d->cap ? d->cap * 2 : 64;
        op *n = realloc(d->ops, cap * sizeof *n);
        if (!n) { /* out of memory: this command is not accounted */
            pthread_mutex_unlock(&d->mu);
            return;
        }
        d->ops = n;
        d->cap = cap;
    }
    op *o = &d->ops[d->nops++];
    o->s = start > d->h ? start : d->h; /* begin() kept the timeline at or before start */
    o->e = end > o->s ? end : o->s;
    o->eng = slot;
    o->group = eng->ordinal == SIMDEV_ORDINAL_COMPUTE ? PA_SD_BUSY_COMPUTE : PA_SD_BUSY_COPY;
    memcpy(o->tot, totals, sizeof o->tot);
    advance(eng->dev, d, horizon(d));
    pthread_mutex_unlock(&d->mu);
}

void pa_sd_activity_read(pa_sd_device *dev, pa_sd_counters *out)
{
    act_dev *d = lock_dev(dev);
    advance(dev, d, horizon(d));
    *out = d->acc;
    pthread_mutex_unlock(&d->mu);
}

void pa_sd_activity_poll(pa_sd_device *dev)
{
    act_dev *d = lock_dev(dev);
    advance(dev, d, horizon(d));
    pthread_mutex_unlock(&d->mu);
}

void pa_sd_activity_stream(pa_sd_device *dev, uint64_t open_ns, uint64_t period_ns, pa_sd_activity_tick_fn fn)
{
    act_dev *d = lock_dev(dev);
    advance(dev, d, horizon(d));
    d->period = fn ? period_ns : 0;
    d->fn = fn;
    d->next = open_ns > d->h ? open_ns : d->h;
    if (d->period && d->next == d->h) { /* baseline now */
        d->fn(dev, &d->acc, 1);
        d->next += d->period;
    }
    pthread_mutex_unlock(&d->mu);
}

void pa_sd_activity_atfork(int phase)
{
    pthread_once(&g_once, act_init);
    for (uint32_t i = 0; i < PA_SD_MAX_DEVICES; i++) {
        act_dev *d = &g_act[i];
        if (phase == PA_SD_FORK_PREPARE) {
            pthread_mutex_lock(&d->mu);
        } else if (phase == PA_SD_FORK_PARENT) {
            pthread_mutex_unlock(&d->mu);
        } else { /* commands in flight in the parent never finish here; no stream reader */
            memset(d->pending, 0, sizeof d->pending);
            d->period = 0;
            d->fn = NULL;
            pthread_mutex_init(&d->mu, NULL);
        }
    }
}
