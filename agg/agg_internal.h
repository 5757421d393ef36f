/* agg_internal.h - the aggregator's interface to its own parts and to per-source hooks (ze, mem). */
#ifndef PA_AGG_INTERNAL_H
#define PA_AGG_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "agg.h"

/* The aggregator context: everything the drain loop owns. Only the aggregator thread (or a
 * test/bench calling the entry points below from one thread) touches it. */
typedef struct pa_agg pa_agg_t;

/* ---- helpers for source hooks (called on the aggregator thread only) ---- */

/*! pa_agg_intern() : id (> 0) of the exact `len` bytes (NUL and 0xFF allowed); the first time
 *  a string is seen a PA_SP_STRING record is spooled. Returns 0 only when out of memory. */
uint32_t pa_agg_intern(pa_agg_t *a, const void *bytes, size_t len);

/*! pa_agg_string() : bytes of an interned id (not NUL-terminated for the caller's purposes,
 *  though a NUL follows them), length in *len. NULL for an unknown id. */
const char *pa_agg_string(const pa_agg_t *a, uint32_t id, size_t *len);

/*! pa_agg_spool() : appends one spool record (kind PA_SP_*) and its rec->len payload bytes.
 *  Returns 0, or -1 when the spool failed (counted; the session continues without a trace). */
int pa_agg_spool(pa_agg_t *a, const pa_record_t *rec, const void *payload);

/*! pa_agg_stat_add() : adds one sample `value` (ns or bytes) to the statistic of (cat, tag, key);
 *  `tag` must fit 24 bits. The key bytes are interned. */
void pa_agg_stat_add(pa_agg_t *a, int cat, uint32_t tag, const void *key, size_t len, uint64_t value);

/*! pa_agg_stat_add_id() : same with an already interned key id (faster). */
void pa_agg_stat_add_id(pa_agg_t *a, int cat, uint32_t tag, uint32_t key_id, uint64_t value);

/* An open push/pop range on a thread's HGTX stack. */
typedef struct pa_agg_open_range {
    uint64_t t0;          /* ns, push time */
    uint32_t range_id;    /* the id its PA_SP_HGTX_RANGE record will carry */
    uint32_t parent_id;   /* enclosing range, 0 = none */
    uint32_t name_id;     /* STRING id of the range name */
    uint32_t domain_id;   /* STRING id of the domain name, 0 = none */
    int32_t level;        /* 0 = outermost within its domain (stacks are per thread and domain) */
    uint32_t dom;         /* the collector's domain number (0 = default), whose stack it is on */
} pa_agg_open_range_t;

/*! pa_agg_hgtx_stack() : the open push/pop ranges of thread `tid` in every domain, in push
 *  order (outermost first), as of the
 *  records drained so far; returns the depth (0 and *ranges = NULL when none). Valid until the
 *  next record is processed. Used to attribute device work to the enclosing range. */
size_t pa_agg_hgtx_stack(pa_agg_t *a, uint32_t tid, const pa_agg_open_range_t **ranges);

/* Per-source private state slots, so ze/mem keep their tables without globals. */
enum pa_agg_source { PA_AGG_SRC_ZE = 0, PA_AGG_SRC_MEM = 1, PA_AGG_SRC_PROJ = 2, PA_AGG_SRC_HC = 3,
                     PA_AGG_SRC_PCS = 4, PA_AGG_SRC_DM = 5, PA_AGG_SRC_COUNT };

/*! pa_agg_source_state() : address of the source's state pointer (NULL initially). */
void **pa_agg_source_state(pa_agg_t *a, int source);

/*! pa_agg_config() : the configuration the aggregator was created with (defaults filled). */
const pa_agg_config_t *pa_agg_config(const pa_agg_t *a);

/*! pa_agg_session_end_ns() : during *_finish hooks: the session end used for open things. */
uint64_t pa_agg_session_end_ns(const pa_agg_t *a);

/* ---- hooks implemented by the sources (agg_ze.c, agg_mem.c) ---- */

/*! pa_agg_ze_record() : a ring record of kind [PA_REC_ZE_FIRST, PA_REC_ZE_LAST]; `payload`
 *  holds rec->len bytes valid during the call. */
void pa_agg_ze_record(pa_agg_t *a, const pa_record_t *rec, const uint8_t *payload);
/*! pa_agg_ze_api() : a PA_REC_ZE_API record (the drain's fast path; same as pa_agg_ze_record). */
void pa_agg_ze_api(pa_agg_t *a, const pa_record_t *rec);
/*! pa_agg_ze_finish() : at stop, after the final drain and before statistics are finished. */
void pa_agg_ze_finish(pa_agg_t *a);
/*! pa_agg_mem_record() : a ring record of kind [PA_REC_MEM_FIRST, PA_REC_MEM_LAST]. */
void pa_agg_mem_record(pa_agg_t *a, const pa_record_t *rec, const uint8_t *payload);
/*! pa_agg_mem_finish() : at stop, like pa_agg_ze_finish(). */
void pa_agg_mem_finish(pa_agg_t *a);
/*! pa_agg_pcs_record() : a ring record of kind [PA_REC_PCSAMP_FIRST, PA_REC_PCSAMP_LAST] (agg_pcs.c). */
void pa_agg_pcs_record(pa_agg_t *a, const pa_record_t *rec, const uint8_t *payload);
/*! pa_agg_pcs_finish() : at stop: spools devices, kernels and per-instruction counts. */
void pa_agg_pcs_finish(pa_agg_t *a);
/*! pa_agg_dm_record() : a device metric record (PA_REC_DM_*, agg_dm.c): per-device interval sums. */
void pa_agg_dm_record(pa_agg_t *a, const pa_record_t *rec, const uint8_t *payload);
/*! pa_agg_dm_finish() : at stop: a->res.dm (freed by pa_agg_dm_free). */
void pa_agg_dm_finish(pa_agg_t *a);
void pa_agg_dm_free(pa_agg_t *a);
/*! pa_agg_hc_record() : a ring record of kind [PA_REC_HC_FIRST, PA_REC_HC_LAST] (agg_hc.c). */
void pa_agg_hc_record(pa_agg_t *a, uint32_t tid, const pa_record_t *rec, const uint8_t *payload);
/*! pa_agg_hc_hgtx() : before an HGTX push/pop/start/end of thread `tid` is paired: claims the
 *  thread's pending counter read with the same t0. */
void pa_agg_hc_hgtx(pa_agg_t *a, uint32_t tid, const pa_record_t *rec);
/*! pa_agg_hc_range() : a range was spooled (PA_SP_HGTX_RANGE `r`): its counter deltas. */
void pa_agg_hc_range(pa_agg_t *a, const pa_record_t *r);
/*! pa_agg_hc_finish() : at stop, after pa_agg_hgtx_finish(): per-thread totals, a->res.hc. */
void pa_agg_hc_finish(pa_agg_t *a);

/* ---- synchronous entry points (the thread in agg.c uses them; tests and bench too) ---- */

/*! pa_agg_create() : a context with the spool opened (cfg->spool_path) or NULL (logged). */
pa_agg_t *pa_agg_create(const pa_agg_config_t *cfg);

/*! pa_agg_start_spool_thread() : the spool's own thread (encoding, compression) for a; pa_agg_create()
 *  starts it unless cfg->threads_later. Without it the drain encodes and compresses itself. */
void pa_agg_start_spool_thread(pa_agg_t *a);

/*! pa_agg_drain_once() : one fair pass over pa_ring_list (bounded batch per ring), then
 *  unlinks retired empty rings. Returns the records consumed. */
size_t pa_agg_drain_once(pa_agg_t *a);

/*! pa_agg_process_for_test() : dispatches one ring record as if drained from a ring. */
void pa_agg_process_for_test(pa_agg_t *a, const pa_record_t *rec, const uint8_t *payload);

/*! pa_agg_finish() : final drains, closes open ranges (unterminated), runs the *_finish hooks,
 *  finishes statistics, closes the spool and builds the results (owned by `a`). */
const pa_agg_results_t *pa_agg_finish(pa_agg_t *a);

/*! pa_agg_destroy() : frees the context and its results. */
void pa_agg_destroy(pa_agg_t *a);

/* ---- building blocks (map.c, intern.c, stats.c) ---- */

/* Open-addressing hash map from a nonzero uint64 key to a uint32 value (linear probing,
 * backward-shift deletion, grows at 1/2 load). */
typedef struct pa_map {
    uint64_t *keys;   /* 0 = empty */
    uint32_t *vals;
    size_t cap, n;    /* cap a power of two */
} pa_map_t;

/*! pa_map_get() : pointer to the value of `key`, or NULL. */
uint32_t *pa_map_get(const pa_map_t *m, uint64_t key);
/*! pa_map_put() : inserts or replaces; returns 0, -1 on allocation failure. key != 0. */
int pa_map_put(pa_map_t *m, uint64_t key, uint32_t val);
/*! pa_map_del() : removes `key`; returns 1 when it was present. */
int pa_map_del(pa_map_t *m, uint64_t key);
void pa_map_free(pa_map_t *m);

/*! pa_hash_bytes() : 64-bit hash of exactly `len` bytes (8 bytes per step). */
uint64_t pa_hash_bytes(const void *p, size_t len);

/* String interning: ids 1..n, bytes stored in a chunked arena (pointers stay valid). */
typedef struct pa_intern {
    uint32_t *table;  /* ids, 0 = empty; cap a power of two */
    size_t cap;
    struct pa_intern_str { const char *p; uint32_t len; uint32_t hash32; } *strs; /* [id-1] */
    size_t n, strs_cap;
    struct pa_arena_chunk *chunks;
    char *cur; size_t cur_left;
} pa_intern_t;

/*! pa_intern_get() : id of the bytes, adding them when new (*is_new = 1). 0 on OOM. */
uint32_t pa_intern_get(pa_intern_t *in, const void *bytes, size_t len, int *is_new);
/*! pa_intern_str() : bytes of `id` (a NUL follows them), length in *len; NULL if unknown. */
const char *pa_intern_str(const pa_intern_t *in, uint32_t id, size_t *len);
void pa_intern_free(pa_intern_t *in);

/*! pa_stat_add() : Welford update of count/total/min/max/mean/m2 with one sample. */
void pa_stat_add(pa_stat_t *st, uint64_t v);

/*! pa_stat_median_u64() : exact median of v[0..n) (reorders v; O(n) expected, quickselect
 *  with an introsort-style fallback); even n: mean of the two middle values; n = 0: 0. */
double pa_stat_median_u64(uint64_t *v, size_t n);

/* Rows of small (cat, tag) are found by key id in a vector (ids are dense), the rest by the map. */
#define PA_STAT_DIRECT_CATS 8
#define PA_STAT_DIRECT_TAGS 2
#define PA_STAT_DIRECT_MAX_ID (1u << 22)

/* A set of statistics rows keyed by (cat, tag, key string id), with the samples kept for
 * exact medians under one global budget. */
typedef struct pa_statset {
    pa_map_t index;                     /* (cat<<56 | tag<<32 | key_id) -> row */
    uint32_t *direct[PA_STAT_DIRECT_CATS][PA_STAT_DIRECT_TAGS]; /* key_id -> row + 1 (0: none) */
    uint32_t direct_cap[PA_STAT_DIRECT_CATS][PA_STAT_DIRECT_TAGS]; /* for small cat and tag: */
    struct pa_statrow {
        int cat; uint32_t tag; uint32_t key_id;
        pa_stat_t st;                   /* count/total/min/max: online once overflowed, from
                                           the samples at finish while they are all kept */
        uint32_t *samples; size_t nsamples, cap; /* ns (or bytes) < 2^32: 4 bytes a sample */
        int overflow;                   /* budget ran out: median not exact */
        double shift, s1, s2;           /* overflowed: sums of v - shift and its square
                                           (moments without a division per sample) */
    } *rows;
    size_t nrows, rows_cap;
    size_t budget, used;                /* samples reserved over all rows (the rows' caps): two
                                           rows growing into the same remaining budget made the
                                           kept samples exceed it, then grow without bound */
} pa_statset_t;

/*! pa_statset_row() : index of the row (created on first use), or -1 on OOM. */
long pa_statset_row(pa_statset_t *s, int cat, uint32_t tag, uint32_t key_id);
/*! pa_statset_add() : adds a sample to a row; when the budget is exceeded (or a sample is
 *  past UINT32_MAX) the row's samples are released (giving the budget back to others) and its
 *  median marked inexact. */
void pa_statset_add(pa_statset_t *s, size_t row, uint64_t v);
/* their slow paths (stats.c) */
long pa_statset_row_slow(pa_statset_t *s, int cat, uint32_t tag, uint32_t key_id);
void pa_statset_add_slow(pa_statset_t *s, struct pa_statrow *r, uint64_t v);

/*! pa_statset_row_fast() : pa_statset_row(), inline when the row is found by key id. */
static inline long pa_statset_row_fast(pa_statset_t *s, int cat, uint32_t tag, uint32_t key_id)
{
    if ((unsigned)cat < PA_STAT_DIRECT_CATS && tag < PA_STAT_DIRECT_TAGS &&
        key_id < s->direct_cap[cat][tag] && s->direct[cat][tag][key_id])
        return (long)s->direct[cat][tag][key_id] - 1;
    return pa_statset_row_slow(s, cat, tag, key_id);
}

/*! pa_statset_add_fast() : pa_statset_add(), inline while the row has reserved room. A row
 *  that keeps its samples gets count/total/min/max from them at finish (pa_statset_finish):
 *  the drain path only stores the sample. */
static inline void pa_statset_add_fast(pa_statset_t *s, size_t row, uint64_t v)
{
    struct pa_statrow *r = &s->rows[row];
    if (__builtin_expect(r->nsamples < r->cap && v <= UINT32_MAX, 1)) /* overflowed rows: cap 0 */
        r->samples[r->nsamples++] = (uint32_t)v;
    else
        pa_statset_add_slow(s, r, v);
}
/*! pa_statset_finish() : computes every row's median (st.median, st.median_exact). */
void pa_statset_finish(pa_statset_t *s);
void pa_statset_free(pa_statset_t *s);

#endif
