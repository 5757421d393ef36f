/* agg_priv.h - the aggregator context layout, shared by agg_core.c, agg_hgtx.c and agg.c only. */
#ifndef PA_AGG_PRIV_H
#define PA_AGG_PRIV_H

#include "../common/pa_ring.h"
#include "../common/pa_spool.h"
#include "agg_internal.h"

#define PA_AGG_BATCH 4096u   /* records per ring per pass: fairness between busy threads */
#define PA_AGG_DOM_SLOTS 16u /* skipped-push counters: domains 0..14, 15 for all others */

/* One application thread (all rings of the same tid merge here). */
struct pa_agg_thread {
    uint32_t tid;
    uint32_t name_id;
    char name[16];
    uint64_t records, drops;         /* from rings already retired */
    uint64_t first_ns, last_ns;
    pa_agg_open_range_t *stack;      /* open push/pop ranges of all domains, in push order;
                                        each domain's stack is the subsequence of its entries */
    uint32_t depth, cap;
    uint32_t skipped[PA_AGG_DOM_SLOTS]; /* pushes past max depth per domain slot: pops skipped */
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
    uint64_t pop_empty, bad_end, unterminated, depth_overflow, bad_domain;
    uint64_t spool_records, spool_errors;
    uint64_t first_ns, last_ns, end_ns;

    void *src_state[PA_AGG_SRC_COUNT];
    pa_agg_results_t res;
    int finished;
    _Atomic uint64_t drain_deadline_ns; /* final drain stops here (pa_agg_stop: half its timeout); 0 = none */
};

/*! pa_agg_thread_get() : the entry of `tid`, created on first use; NULL on OOM. */
struct pa_agg_thread *pa_agg_thread_get(pa_agg_t *a, uint32_t tid);

/*! pa_agg_hgtx_record() : HGTX ring records (push/pop/start/end/mark/domain). */
void pa_agg_hgtx_record(pa_agg_t *a, struct pa_agg_thread *t, const pa_record_t *rec,
                        const uint8_t *payload);

/*! pa_agg_hgtx_finish() : emits still-open ranges as unterminated (t1 = a->end_ns), counts
 *  early ends that never met their start as bad ends. */
void pa_agg_hgtx_finish(pa_agg_t *a);

#endif
