/* agg_priv.h - the aggregator context layout, shared by agg_core.c, agg_hgtx.c and agg.c only. */
#ifndef PA_AGG_PRIV_H
#define PA_AGG_PRIV_H

#include <string.h>

#include "../common/pa_ring.h"
#include "../common/pa_spool.h"
#include "agg_internal.h"

#define PA_AGG_BATCH 4096u   /* records per ring per pass: fairness between busy threads */
#define PA_AGG_SPOOL_PIPE (8u << 20) /* bytes between the drain and the spool thread (~130 k records) */
#define PA_AGG_DOM_SLOTS 16u /* skipped-push counters: domains 0..14, 15 for all others */

/* One application thread (all rings of the same tid merge here). */
/* Kept for every thread that ever recorded (its DB row), so it stays small: what only a live
 * thread needs (its stack, skip counters) is allocated on use and freed once it exited and its
 * records were drained (pa_agg_thread_retire). */
struct pa_agg_thread {
    uint32_t tid;
    uint32_t name_id;                /* its name's STRING id (the name itself: pa_agg_string) */
    uint64_t records, drops;         /* from rings already retired */
    uint64_t first_ns, last_ns;
    pa_agg_open_range_t *stack;      /* open push/pop ranges of all domains, in push order;
                                        each domain's stack is the subsequence of its entries */
    uint32_t depth, cap;
    uint32_t *skipped;               /* [PA_AGG_DOM_SLOTS] pushes past max depth per domain slot
                                        (pops skipped); NULL: none */
    uint32_t named;                  /* a non-empty name was set */
};

/* A start/end id in flight: either an open start or an end seen before its start. */
struct pa_agg_se {
    uint64_t id;
    uint64_t t;          /* start time (open start) or end time (early end) */
    uint32_t tid;        /* starting or ending thread */
    uint32_t name_id, domain_id, range_id;
    int is_end;
    uint32_t next_free;  /* free-list link (index + 1) */
};

/* A short string (<= 16 bytes) as two words that, with its length, identify it exactly. */
struct pa_agg_icache {
    uint64_t w0, w1;
    uint32_t len, id;            /* id 0: empty */
};
#define PA_AGG_ICACHE 256u       /* direct-mapped: names repeat, most lookups hit without hashing */

struct pa_agg {
    pa_agg_config_t cfg;
    pa_spool_writer_t *spool;
    pa_intern_t strings;
    struct pa_agg_icache icache[PA_AGG_ICACHE];
    pa_statset_t stats;

    pa_map_t tid_map;                /* tid -> index in threads */
    struct pa_agg_thread **threads;
    size_t nthreads, threads_cap;
    struct pa_agg_thread *last_thr;  /* one-entry cache: records come in per-ring batches */

    pa_map_t domains;                /* hgtx domain id -> STRING id of its name */
    pa_map_t display;                /* domain_id << 32 | name_id -> STRING id "domain:name" */
    char *tmp; size_t tmp_cap;       /* scratch for display names */

    pa_map_t se_map;                 /* start/end id -> index in se */
    struct pa_agg_se *se;
    size_t se_n, se_cap;
    uint32_t se_free;                /* free-list head (index + 1), 0 = empty */
    uint32_t next_range_id;

    uint32_t osrt_key[PA_OSRT_COUNT + 1]; /* STRING ids of OSRT names, 0 = not yet */

    const pa_ring_t *cur_ring;       /* ring being drained (drop-aware pop resync) */
    uint8_t *scratch; size_t scratch_cap;

    uint64_t consumed, retired_records, retired_drops;
    uint64_t passes, fill_max;       /* drain passes; most records seen waiting in one ring (debug log) */
    uint64_t pop_empty, bad_end, unterminated, depth_overflow, bad_domain;
    uint64_t end_no_start, start_no_end; /* start/end ranges cut by a drop (pa_agg_hgtx_finish) */
    uint64_t spool_records, spool_errors;
    uint64_t first_ns, last_ns, end_ns;

    void *src_state[PA_AGG_SRC_COUNT];
    const size_t *proj_insts;        /* agg_proj.c: its range instances held (NULL: no state yet);
                                        a push/pop range skips the call while it is 0 */
    pa_agg_results_t res;
    int finished;
    _Atomic uint64_t drain_deadline_ns; /* final drain stops here (pa_agg_stop: half its timeout); 0 = none */
    uint64_t close_deadline_ns;  /* bound on the spool's close at the end (pa_agg_stop_by); 0 = its own */
};

/* The words of a string of at most 16 bytes that, with its length, determine every byte:
 * overlapping loads of its first and last 8 (or 4) bytes, or its first, middle and last byte. */
static inline void pa_agg_short_words(const uint8_t *s, size_t len, uint64_t *w0, uint64_t *w1)
{
    uint64_t x = 0, y = 0;
    if (len >= 8) {
        memcpy(&x, s, 8);
        memcpy(&y, s + len - 8, 8);
    } else if (len >= 4) {
        uint32_t p, q;
        memcpy(&p, s, 4);
        memcpy(&q, s + len - 4, 4);
        x = (uint64_t)p << 32 | q;
    } else if (len) {
        x = (uint64_t)s[0] << 16 | (uint64_t)s[len / 2] << 8 | s[len - 1];
    }
    *w0 = x;
    *w1 = y;
}

/* pa_agg_intern()'s table lookup and new strings (`e`: the cache entry to fill, or NULL) */
uint32_t pa_agg_intern_slow(pa_agg_t *a, const void *bytes, size_t len, struct pa_agg_icache *e,
                            uint64_t w0, uint64_t w1);

/*! pa_agg_intern_fast() : pa_agg_intern(), inline: short names (ranges, APIs, kernels) repeat and
 *  are found in the direct-mapped cache without hashing or comparing their bytes. */
static inline uint32_t pa_agg_intern_fast(pa_agg_t *a, const void *bytes, size_t len)
{
    if (len > 16)
        return pa_agg_intern_slow(a, bytes, len, NULL, 0, 0);
    uint64_t w0, w1;
    pa_agg_short_words(bytes, len, &w0, &w1);
    uint64_t h = (w0 ^ (w1 * 0x9e3779b97f4a7c15ull) ^ len) * 0xff51afd7ed558ccdull;
    struct pa_agg_icache *e = &a->icache[h >> 56];
    if (__builtin_expect(e->id && e->w0 == w0 && e->w1 == w1 && e->len == len, 1))
        return e->id;
    return pa_agg_intern_slow(a, bytes, len, e, w0, w1);
}

/*! pa_agg_stat_add_id_fast() : pa_agg_stat_add_id(), inline. */
static inline void pa_agg_stat_add_id_fast(pa_agg_t *a, int cat, uint32_t tag, uint32_t key_id, uint64_t value)
{
    long row = pa_statset_row_fast(&a->stats, cat, tag, key_id);
    if (__builtin_expect(row >= 0, 1))
        pa_statset_add_fast(&a->stats, (size_t)row, value);
}

/*! pa_agg_spool1() : pa_agg_spool() of a record without payload (len 0), copied straight into
 *  the spool thread's pipe when it has room. */
static inline void pa_agg_spool1(pa_agg_t *a, const pa_record_t *rec)
{
    pa_record_t *s = a->spool ? pa_spool_slot(a->spool) : NULL;
    if (__builtin_expect(s != NULL, 1)) {
        *s = *rec;
        pa_spool_slot_commit(a->spool);
        a->spool_records++;
        return;
    }
    pa_agg_spool(a, rec, NULL);
}

/*! pa_agg_thread_get() : the entry of `tid`, created on first use; NULL on OOM. */
struct pa_agg_thread *pa_agg_thread_get(pa_agg_t *a, uint32_t tid);

/*! pa_agg_hgtx_skip() : counts a push of thread t in domain slot `slot` past the depth limit
 *  (its pop is then skipped); the counters are allocated on the first one. */
void pa_agg_hgtx_skip(struct pa_agg_thread *t, uint32_t slot);

/*! pa_agg_hgtx_record() : HGTX ring records (push/pop/start/end/mark/domain). */
void pa_agg_hgtx_record(pa_agg_t *a, struct pa_agg_thread *t, const pa_record_t *rec,
                        const uint8_t *payload);

/*! pa_agg_hgtx_push(), pa_agg_hgtx_pop() : a push or pop record alone, for the drain's fast path
 *  (a record without PA_RF_BAD_DOMAIN while no host counters are read; else pa_agg_hgtx_record). */
void pa_agg_hgtx_push(pa_agg_t *a, struct pa_agg_thread *t, const pa_record_t *rec, const uint8_t *payload);
void pa_agg_hgtx_pop(pa_agg_t *a, struct pa_agg_thread *t, const pa_record_t *rec);

/*! pa_agg_hgtx_finish() : emits still-open ranges as unterminated (t1 = a->end_ns), counts
 *  early ends that never met their start as bad ends. */
void pa_agg_hgtx_finish(pa_agg_t *a);

#endif
