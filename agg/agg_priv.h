/* agg_priv.h - the aggregator context layout, shared by agg_core.c, agg_hgtx.c and agg.c only. */
#ifndef PA_AGG_PRIV_H
#define PA_AGG_PRIV_H

#include <string.h>

#include "../common/pa_ring.h"
#include "../common/pa_spool.h"
#include "agg_internal.h"

#define PA_AGG_BATCH 4096u   /* records per ring per pass: fairness between busy threads */
#define PA_AGG_SPOOL_PIPE (8u << 20) /* bytes between the drain and the spool thread (~130 k records) */
#define PA_AGG_ZE_API_DIRECT 1024u /* ze API enums below this: STRING id by index (the table has ~150) */
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
    const uint32_t *ze_api_ids;      /* agg_ze.c: its api enum -> STRING id table, [PA_AGG_ZE_API_DIRECT]
                                        (0: not yet; NULL: no state yet) */
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

/* The name bytes of a push/start/mark/domain record: inline in the header (PA_RF_INLINE) or
 * the payload; "" when there is none. */
static inline __attribute__((always_inline)) const void *pa_agg_hgtx_name(const pa_record_t *rec,
                                                                         const uint8_t *payload, size_t *len)
{
    if (rec->flags & PA_RF_INLINE) {
        uint32_t off = pa_hgtx_inline_off(rec->kind), n = PA_RF_INLINE_LEN(rec->flags);
        *len = n < PA_SLOT_SIZE - off ? n : PA_SLOT_SIZE - off;
        return (const uint8_t *)rec + off;
    }
    *len = payload ? rec->len : 0;
    return payload ? (const void *)payload : "";
}

/* Why the drain inlines push and pop: a call to either cost ~18 instructions of register saves
 * and frame on top of ~60 of work, at three records per instrumented iteration. The inline part
 * is the common case only (default domain, room on the stack, the top entry is the range closed,
 * nothing skipped or lost, no device projection instance held, a spool pipe slot free); it does
 * exactly what pa_agg_hgtx_push() / pa_agg_hgtx_pop() do then, anything else goes to them. */

/*! pa_agg_hgtx_push_inline() : pa_agg_hgtx_push(), its common case inline. */
static inline __attribute__((always_inline)) void pa_agg_hgtx_push_inline(pa_agg_t *a, struct pa_agg_thread *t,
                                                                         const pa_record_t *rec,
                                                                         const uint8_t *payload)
{
    uint32_t d = t->depth;
    if (__builtin_expect(rec->u.hgtx.domain != 0 || d >= t->cap || d >= a->cfg.max_stack_depth ||
                         (d && t->stack[d - 1].dom != 0), 0)) {
        pa_agg_hgtx_push(a, t, rec, payload);
        return;
    }
    pa_agg_open_range_t *o = &t->stack[d];
    o->t0 = rec->t0;
    o->range_id = ++a->next_range_id;
    o->parent_id = d ? t->stack[d - 1].range_id : 0;
    size_t len;
    const void *name = pa_agg_hgtx_name(rec, payload, &len);
    o->name_id = pa_agg_intern_fast(a, name, len);
    o->domain_id = 0;
    o->level = d ? t->stack[d - 1].level + 1 : 0;
    o->dom = 0;
    t->depth = d + 1;
}

/*! pa_agg_hgtx_pop_inline() : pa_agg_hgtx_pop(), its common case inline: the range is spooled
 *  straight into a pipe slot and its duration sampled under its name. */
static inline __attribute__((always_inline)) void pa_agg_hgtx_pop_inline(pa_agg_t *a, struct pa_agg_thread *t,
                                                                        const pa_record_t *rec)
{
    uint32_t d = t->depth;
    pa_record_t *r;
    if (__builtin_expect(rec->u.hgtx.domain != 0 || !d || t->stack[d - 1].dom != 0 || t->skipped ||
                         !a->proj_insts || *a->proj_insts || !a->spool ||
                         (a->cur_ring && atomic_load_explicit(&((pa_ring_t *)a->cur_ring)->drops,
                                                              memory_order_relaxed)) ||
                         !(r = pa_spool_slot(a->spool)), 0)) {
        pa_agg_hgtx_pop(a, t, rec);
        return;
    }
    const pa_agg_open_range_t *o = &t->stack[d - 1];
    uint64_t t0 = o->t0, t1 = rec->t0;
    uint32_t name_id = o->name_id;
    *r = (pa_record_t){ .kind = PA_SP_HGTX_RANGE, .tid = t->tid, .t0 = t0, .t1 = t1 };
    r->u.range.name_id = name_id;
    r->u.range.range_id = o->range_id;
    r->u.range.parent_id = o->parent_id;
    r->u.range.level = o->level;
    r->u.range.end_tid = t->tid;
    t->depth = d - 1;
    pa_spool_slot_commit(a->spool);
    a->spool_records++;
    pa_agg_stat_add_id_fast(a, PA_CAT_HGTX_RANGE, 0, name_id, t1 > t0 ? t1 - t0 : 0);
}

/*! pa_agg_hgtx_finish() : emits still-open ranges as unterminated (t1 = a->end_ns), counts
 *  early ends that never met their start as bad ends. */
void pa_agg_hgtx_finish(pa_agg_t *a);

#endif
