/* stats.c - online statistics per key: count/total/min/max, Welford stddev, exact median. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agg_internal.h"
#include "../common/pa_stddev.h"

void pa_stat_add(pa_stat_t *st, uint64_t v)
{
    if (st->count == 0 || v < st->min)
        st->min = v;
    if (v > st->max)
        st->max = v;
    st->count++;
    st->total += v;
    double d = (double)v - st->mean; /* Welford: stable for large ns values */
    st->mean += d / (double)st->count;
    st->m2 += d * ((double)v - st->mean);
}

double pa_stat_stddev(const pa_stat_t *st)
{
    return pa_stddev_pop(st->count, st->m2);
}

/* Puts the k-th smallest of v[0..n) at v[k], smaller-or-equal before, larger-or-equal after.
 * Hoare-style quickselect on a median-of-three pivot; after 2*log2(n) rounds without
 * converging (adversarial input) it sorts the remaining window: O(n) expected, O(n log n) max.
 * One body for the 64-bit API and the 32-bit samples the statistics rows keep. */
#define PA_SELECT_KTH(NAME, T, CMP)                                                               \
    static int CMP(const void *a, const void *b)                                                  \
    {                                                                                             \
        T x = *(const T *)a, y = *(const T *)b;                                                   \
        return x < y ? -1 : x > y;                                                                \
    }                                                                                             \
    static void NAME(T *v, size_t n, size_t k)                                                    \
    {                                                                                             \
        size_t lo = 0, hi = n - 1;                                                                \
        int budget = 2;                                                                           \
        for (size_t m = n; m > 1; m >>= 1)                                                        \
            budget += 2;                                                                          \
        while (hi > lo) {                                                                         \
            if (budget-- == 0) {                                                                  \
                qsort(v + lo, hi - lo + 1, sizeof *v, CMP);                                       \
                return;                                                                           \
            }                                                                                     \
            size_t mid = lo + (hi - lo) / 2;                                                      \
            T t;                                                                                  \
            if (v[mid] < v[lo])                                                                   \
                t = v[mid], v[mid] = v[lo], v[lo] = t;                                            \
            if (v[hi] < v[lo])                                                                    \
                t = v[hi], v[hi] = v[lo], v[lo] = t;                                              \
            if (v[hi] < v[mid])                                                                   \
                t = v[hi], v[hi] = v[mid], v[mid] = t;                                            \
            T pivot = v[mid];                                                                     \
            size_t i = lo, j = hi;                                                                \
            while (i <= j) {                                                                      \
                while (v[i] < pivot)                                                              \
                    i++;                                                                          \
                while (v[j] > pivot)                                                              \
                    j--;                                                                          \
                if (i <= j) {                                                                     \
                    t = v[i], v[i] = v[j], v[j] = t;                                              \
                    i++;                                                                          \
                    if (j == 0)                                                                   \
                        break;                                                                    \
                    j--;                                                                          \
                }                                                                                 \
            }                                                                                     \
            /* now v[lo..j] <= pivot <= v[i..hi], and j < i */                                    \
            if (k <= j)                                                                           \
                hi = j;                                                                           \
            else if (k >= i)                                                                      \
                lo = i;                                                                           \
            else                                                                                  \
                return; /* j < k < i: v[k] == pivot, in place */                                  \
        }                                                                                         \
    }

PA_SELECT_KTH(select_kth, uint64_t, cmp_u64)
PA_SELECT_KTH(select_kth_u32, uint32_t, cmp_u32)

double pa_stat_median_u64(uint64_t *v, size_t n)
{
    if (n == 0)
        return 0.0;
    size_t k = n / 2;
    select_kth(v, n, k);
    if (n % 2)
        return (double)v[k];
    /* even count: the lower middle is the largest of the (partitioned) left part */
    uint64_t lower = v[0];
    for (size_t i = 1; i < k; i++)
        if (v[i] > lower)
            lower = v[i];
    return ((double)lower + (double)v[k]) / 2.0;
}

/* The same on a row's 32-bit samples. */
static double median_u32(uint32_t *v, size_t n)
{
    if (n == 0)
        return 0.0;
    size_t k = n / 2;
    select_kth_u32(v, n, k);
    if (n % 2)
        return (double)v[k];
    uint32_t lower = v[0];
    for (size_t i = 1; i < k; i++)
        if (v[i] > lower)
            lower = v[i];
    return ((double)lower + (double)v[k]) / 2.0;
}

static long statset_row_new(pa_statset_t *s, int cat, uint32_t tag, uint32_t key_id)
{
    uint64_t key = ((uint64_t)(cat & 0xff) << 56) | ((uint64_t)(tag & 0xffffff) << 32) | key_id;
    uint32_t *v = pa_map_get(&s->index, key);
    if (v)
        return (long)*v;
    if (s->nrows == s->rows_cap) {
        size_t ncap = s->rows_cap ? s->rows_cap * 2 : 64;
        struct pa_statrow *nr = realloc(s->rows, ncap * sizeof *nr);
        if (!nr)
            return -1;
        s->rows = nr;
        s->rows_cap = ncap;
    }
    if (pa_map_put(&s->index, key, (uint32_t)s->nrows) < 0)
        return -1;
    struct pa_statrow *r = &s->rows[s->nrows];
    memset(r, 0, sizeof *r);
    r->cat = cat;
    r->tag = tag;
    r->key_id = key_id;
    return (long)s->nrows++;
}

/* Remembers row `row` of a small (cat, tag) under its key id (best effort: else the map). */
static void direct_put(pa_statset_t *s, int cat, uint32_t tag, uint32_t key_id, long row)
{
    uint32_t cap = s->direct_cap[cat][tag];
    if (key_id >= cap) {
        uint32_t ncap = cap ? cap : 256;
        while (ncap <= key_id)
            ncap *= 2;
        uint32_t *nd = realloc(s->direct[cat][tag], ncap * sizeof *nd);
        if (!nd)
            return;
        memset(nd + cap, 0, (ncap - cap) * sizeof *nd);
        s->direct[cat][tag] = nd;
        s->direct_cap[cat][tag] = ncap;
    }
    s->direct[cat][tag][key_id] = (uint32_t)row + 1;
}

long pa_statset_row_slow(pa_statset_t *s, int cat, uint32_t tag, uint32_t key_id)
{
    int small = (unsigned)cat < PA_STAT_DIRECT_CATS && tag < PA_STAT_DIRECT_TAGS && key_id < PA_STAT_DIRECT_MAX_ID;
    if (small && key_id < s->direct_cap[cat][tag] && s->direct[cat][tag][key_id])
        return (long)s->direct[cat][tag][key_id] - 1;
    long row = statset_row_new(s, cat, tag, key_id);
    if (row >= 0 && small)
        direct_put(s, cat, tag, key_id, row);
    return row;
}

long pa_statset_row(pa_statset_t *s, int cat, uint32_t tag, uint32_t key_id)
{
    return pa_statset_row_fast(s, cat, tag, key_id);
}

/* Mean and m2 of the kept samples, two-pass (exact rows defer Welford to here: no division
 * per sample on the drain path). */
static void row_moments(struct pa_statrow *r)
{
    if (r->nsamples == 0)
        return;
    double sum = 0;
    for (size_t i = 0; i < r->nsamples; i++)
        sum += (double)r->samples[i];
    double mean = sum / (double)r->nsamples, m2 = 0;
    for (size_t i = 0; i < r->nsamples; i++) {
        double d = (double)r->samples[i] - mean;
        m2 += d * d;
    }
    r->st.mean = mean;
    r->st.m2 = m2;
}

/* count/total/min/max of one value, online (overflowed rows) */
static void row_count(pa_stat_t *st, uint64_t v)
{
    st->min = st->count == 0 || v < st->min ? v : st->min;
    st->max = v > st->max ? v : st->max;
    st->count++;
    st->total += v;
}

/* count/total/min/max of a row that kept all its samples (the drain only stores them). */
static void row_counts_from_samples(struct pa_statrow *r)
{
    uint64_t total = 0;
    uint32_t mn = UINT32_MAX, mx = 0;
    for (size_t i = 0; i < r->nsamples; i++) {
        uint32_t x = r->samples[i];
        total += x;
        mn = x < mn ? x : mn;
        mx = x > mx ? x : mx;
    }
    r->st.count = r->nsamples;
    r->st.total = total;
    r->st.min = r->nsamples ? mn : 0;
    r->st.max = mx;
}

/* Gives up exact median for a row: its samples return to the shared budget and its moments go
 * online as sums of v - shift and (v - shift)^2, shift = the kept samples' mean (or the first
 * value), which keeps them exact to rounding without a division per sample (finish divides). */
static void row_overflow(pa_statset_t *s, struct pa_statrow *r, uint64_t first)
{
    row_counts_from_samples(r);
    row_moments(r);
    r->shift = r->nsamples ? r->st.mean : (double)first;
    r->s1 = 0;
    r->s2 = r->nsamples ? r->st.m2 : 0;
    s->used -= r->cap;
    free(r->samples);
    r->samples = NULL;
    r->nsamples = r->cap = 0;
    r->overflow = 1;
}

/* A sample that does not fit the row's reserved room: grows it within the budget, or gives up
 * the row's exact median. Returns 1 when v was stored as a sample, 0 when it went online. */
static int statset_slow(pa_statset_t *s, struct pa_statrow *r, uint64_t v)
{
    if (!r->overflow && v <= UINT32_MAX) {
        size_t ncap = r->cap ? r->cap * 2 : 4; /* reserved from the budget: small for the many rare keys */
        if (ncap - r->nsamples > s->budget - s->used) /* never reserve past the budget */
            ncap = r->nsamples + (s->budget - s->used);
        uint32_t *ns = ncap > r->cap ? realloc(r->samples, ncap * sizeof *ns) : NULL;
        if (ns) {
            s->used += ncap - r->cap; /* the budget counts what is reserved, not what is filled */
            r->samples = ns;
            r->cap = ncap;
            r->samples[r->nsamples++] = (uint32_t)v;
            return 1;
        }
    }
    /* budget spent, no memory, or a sample past 4.29 s (or 4 GiB): kept samples are 32-bit */
    if (!r->overflow)
        row_overflow(s, r, v);
    row_count(&r->st, v);
    double d = (double)v - r->shift;
    r->s1 += d;
    r->s2 += d * d;
    return 0;
}

void pa_statset_add_slow(pa_statset_t *s, struct pa_statrow *r, uint64_t v)
{
    statset_slow(s, r, v);
}

void pa_statset_add(pa_statset_t *s, size_t row, uint64_t v)
{
    pa_statset_add_fast(s, row, v);
}

/* Large rows at finish (exit time): the median by counting the samples' digits instead of
 * quickselect's moves (11 bits a pass, only as many passes as the row's largest value needs),
 * and the moments from exact integer sums formed in the first pass. */
#define HIST_MIN_N 2048u
#define HIST_BITS 11u
#define HIST_N (1u << HIST_BITS)

/* The k-th smallest (0-based) of v[0..n) whose values are below 2^bits; *rank = how many of
 * the samples equal to it come before it in sorted order (0: it is the first of its value). */
static uint32_t kth_hist(const uint32_t *v, size_t n, size_t k, unsigned bits, uint32_t *cnt, size_t *rank)
{
    uint32_t prefix = 0, hi_mask = 0; /* the digits found so far, and their bits */
    for (int sh = (int)(bits > HIST_BITS ? bits - HIST_BITS : 0);; sh = sh > (int)HIST_BITS ? sh - (int)HIST_BITS : 0) {
        unsigned width = bits - (unsigned)sh; /* digits of this pass: bits below the found ones */
        if (width > HIST_BITS)
            width = HIST_BITS;
        uint32_t dmask = (1u << width) - 1;
        memset(cnt, 0, (HIST_N + 1) * sizeof *cnt);
        for (size_t i = 0; i < n; i++) { /* samples off the prefix land in the spare bucket */
            uint32_t x = v[i];
            cnt[(x & hi_mask) == prefix ? (x >> sh) & dmask : HIST_N]++;
        }
        size_t acc = 0;
        uint32_t d = 0;
        while (acc + cnt[d] <= k)
            acc += cnt[d++];
        k -= acc;
        prefix |= d << sh;
        bits = (unsigned)sh;
        hi_mask = sh ? ~0u << sh : ~0u;
        if (sh == 0) {
            *rank = k;
            return prefix;
        }
    }
}

static void row_finish_hist(struct pa_statrow *r, uint32_t *cnt)
{
    const uint32_t *v = r->samples;
    size_t n = r->nsamples;
    unsigned __int128 sq = 0; /* < n * 2^64 <= 2^94 */
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        sum += v[i];
        sq += (uint64_t)v[i] * v[i];
    }
    /* m2 = sum (v - mean)^2 = (n * sq - sum^2) / n, exact in 128 bits (n <= 2^30 by the budget) */
    unsigned __int128 num = (unsigned __int128)n * sq - (unsigned __int128)sum * sum;
    r->st.mean = (double)sum / (double)n;
    r->st.m2 = (double)num / (double)n;
    unsigned bits = r->st.max ? 64u - (unsigned)__builtin_clzll(r->st.max) : 1u;
    size_t k = n / 2, rank;
    uint32_t x = kth_hist(v, n, k, bits, cnt, &rank);
    uint32_t lower = x; /* even count: the lower middle, x again unless x is the first of its value */
    if (n % 2 == 0 && rank == 0) {
        lower = 0;
        for (size_t i = 0; i < n; i++) { /* the largest sample below x (branch-free) */
            uint32_t y = v[i] < x ? v[i] : 0;
            lower = y > lower ? y : lower;
        }
    }
    r->st.median = n % 2 ? (double)x : ((double)lower + (double)x) / 2.0;
}

void pa_statset_finish(pa_statset_t *s)
{
    uint32_t *cnt = malloc((HIST_N + 1) * sizeof *cnt); /* NULL: quickselect for every row */
    for (size_t i = 0; i < s->nrows; i++) {
        struct pa_statrow *r = &s->rows[i];
        r->st.median_exact = !r->overflow;
        if (!r->overflow)
            row_counts_from_samples(r);
        if (r->overflow) {
            double n = (double)r->st.count, m2 = r->s2 - r->s1 * r->s1 / n;
            r->st.mean = r->shift + r->s1 / n;
            r->st.m2 = m2 > 0 ? m2 : 0;
            r->st.median = r->st.mean;
            continue;
        }
        if (cnt && r->nsamples >= HIST_MIN_N && r->nsamples == r->st.count) {
            row_finish_hist(r, cnt);
        } else {
            row_moments(r);
            r->st.median = median_u32(r->samples, r->nsamples);
        }
    }
    free(cnt);
}

void pa_statset_free(pa_statset_t *s)
{
    for (size_t i = 0; i < s->nrows; i++)
        free(s->rows[i].samples);
    free(s->rows);
    for (int c = 0; c < PA_STAT_DIRECT_CATS; c++)
        for (int t = 0; t < PA_STAT_DIRECT_TAGS; t++)
            free(s->direct[c][t]);
    pa_map_free(&s->index);
    memset(s, 0, sizeof *s);
}
