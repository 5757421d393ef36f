/* agg_core.c - aggregator context: drain rings, dispatch records, build the results at stop. */
#include <stdlib.h>
#include <string.h>

#include "../common/pa_clock.h"
#include "../common/pa_log.h"
#include "../common/pa_names.h"
#include "agg_priv.h"
#include "agg_proj.h"

/* collector/thread.c: events that found no ring (weak: absent when a test links agg alone) */
extern _Atomic uint64_t pa_unrecorded __attribute__((weak));
extern _Atomic uint64_t pa_late_no_ring __attribute__((weak));
/* test seam (tests/unit/test_agg_pairing.c): runs between the exit drain's loop and its last pass */
extern void pa_agg_test_after_final_drain(void) __attribute__((weak));
/* agg_proj.c (weak: absent when a test links the core without it) */
extern __typeof__(pa_agg_proj_thread_exit) pa_agg_proj_thread_exit __attribute__((weak));
/* weak too; only called once agg_ze.c made its table (a->ze_api_ids), and agg_ze.c needs it */
extern __typeof__(pa_agg_proj_api) pa_agg_proj_api __attribute__((weak));

pa_agg_t *pa_agg_create(const pa_agg_config_t *cfg)
{
    pa_agg_t *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->cfg = *cfg;
    if (!a->cfg.poll_interval_ns)
        a->cfg.poll_interval_ns = PA_AGG_DEFAULT_POLL_NS;
    if (!a->cfg.median_budget)
        a->cfg.median_budget = PA_AGG_DEFAULT_MEDIAN_BUDGET;
    if (!a->cfg.max_open_ranges)
        a->cfg.max_open_ranges = PA_AGG_DEFAULT_MAX_OPEN;
    if (!a->cfg.max_stack_depth)
        a->cfg.max_stack_depth = PA_AGG_DEFAULT_MAX_DEPTH;
    if (!a->cfg.zstd_level)
        a->cfg.zstd_level = 1;
    a->cfg.spool_path = NULL; /* not owned: only used to open */
    a->stats.budget = a->cfg.median_budget;
    a->spool = cfg->spool_path ? pa_spool_open_write(cfg->spool_path, a->cfg.zstd_level) : NULL;
    if (cfg->spool_path && !a->spool) {
        free(a);
        return NULL;
    }
    pa_spool_set_publish(a->spool, cfg->spool_published);
    a->cfg.spool_published = NULL;
    if (!a->cfg.threads_later)
        pa_agg_start_spool_thread(a);
    if (!a->cfg.spool_flush_ns)
        a->cfg.spool_flush_ns = PA_AGG_DEFAULT_FLUSH_NS;
    return a;
}

void pa_agg_start_spool_thread(pa_agg_t *a)
{
    /* encoding and compressing on the spool's own thread: the drain only copies each record
     * into its pipe (without the thread the drain does both itself, as before) */
    if (a->spool)
        pa_spool_start_worker(a->spool, PA_AGG_SPOOL_PIPE);
}

int pa_agg_spool(pa_agg_t *a, const pa_record_t *rec, const void *payload)
{
    if (!a->spool)
        return 0;
    pa_record_t *s = payload ? NULL : pa_spool_slot(a->spool);
    if (s) { /* one slot straight into the spool thread's pipe */
        *s = *rec;
        s->len = 0;
        pa_spool_slot_commit(a->spool);
        a->spool_records++;
        return 0;
    }
    if (pa_spool_append(a->spool, rec, payload) < 0) {
        /* a file size limit's cut is said once, at the exit, with what the spool kept */
        if (a->spool_errors++ == 0 && !pa_spool_fsize_cut(NULL))
            pa_err("agg", "spool write failed; the DB will lack trace rows from here on");
        return -1;
    }
    a->spool_records++;
    return 0;
}

uint32_t pa_agg_intern_slow(pa_agg_t *a, const void *bytes, size_t len, struct pa_agg_icache *e,
                            uint64_t w0, uint64_t w1)
{
    int is_new;
    uint32_t id = pa_intern_get(&a->strings, bytes, len, &is_new);
    if (is_new) {
        pa_record_t r = { .kind = PA_SP_STRING, .len = (uint32_t)len };
        r.u.str.id = id;
        pa_agg_spool(a, &r, pa_intern_str(&a->strings, id, NULL));
    }
    if (e && id)
        *e = (struct pa_agg_icache){ w0, w1, (uint32_t)len, id };
    return id;
}

uint32_t pa_agg_intern(pa_agg_t *a, const void *bytes, size_t len)
{
    return pa_agg_intern_fast(a, bytes, len);
}

const char *pa_agg_string(const pa_agg_t *a, uint32_t id, size_t *len)
{
    return pa_intern_str(&a->strings, id, len);
}

void pa_agg_stat_add_id(pa_agg_t *a, int cat, uint32_t tag, uint32_t key_id, uint64_t value)
{
    pa_agg_stat_add_id_fast(a, cat, tag, key_id, value);
}

void pa_agg_stat_add(pa_agg_t *a, int cat, uint32_t tag, const void *key, size_t len, uint64_t value)
{
    uint32_t id = pa_agg_intern(a, key, len);
    if (id)
        pa_agg_stat_add_id(a, cat, tag, id, value);
}

const pa_agg_config_t *pa_agg_config(const pa_agg_t *a)
{
    return &a->cfg;
}

void **pa_agg_source_state(pa_agg_t *a, int source)
{
    return source >= 0 && source < PA_AGG_SRC_COUNT ? &a->src_state[source] : NULL;
}

uint64_t pa_agg_session_end_ns(const pa_agg_t *a)
{
    return a->end_ns;
}

struct pa_agg_thread *pa_agg_thread_get(pa_agg_t *a, uint32_t tid)
{
    if (a->last_thr && a->last_thr->tid == tid)
        return a->last_thr;
    uint32_t *ix = pa_map_get(&a->tid_map, (uint64_t)tid + 1); /* +1: tid 0 stays a key */
    if (ix)
        return a->last_thr = a->threads[*ix];
    if (a->nthreads == a->threads_cap) {
        size_t ncap = a->threads_cap ? a->threads_cap * 2 : 32;
        struct pa_agg_thread **nt = realloc(a->threads, ncap * sizeof *nt);
        if (!nt)
            return NULL;
        a->threads = nt;
        a->threads_cap = ncap;
    }
    struct pa_agg_thread *t = calloc(1, sizeof *t);
    if (!t || pa_map_put(&a->tid_map, (uint64_t)tid + 1, (uint32_t)a->nthreads) < 0) {
        free(t);
        return NULL;
    }
    t->tid = tid;
    a->threads[a->nthreads++] = t;
    return a->last_thr = t;
}

static void thread_set_name(pa_agg_t *a, struct pa_agg_thread *t, const uint8_t *name, size_t len)
{
    size_t n = strnlen((const char *)name, len);
    t->name_id = pa_agg_intern(a, name, n);
    t->named = n > 0;
}

/* The thread's name as the summary shows it: at most 15 bytes, NUL-terminated. */
static void thread_name_copy(const pa_agg_t *a, const struct pa_agg_thread *t, char out[16])
{
    size_t n = 0;
    const char *s = t->named ? pa_agg_string(a, t->name_id, &n) : NULL;
    if (!s)
        n = 0;
    if (n > 15)
        n = 15;
    memset(out, 0, 16);
    memcpy(out, s ? s : "", n);
}

/* A thread whose ring was retired (it exited) and drained: what only a live thread uses goes,
 * unless still in use (ranges left open, skips still to match: a reused tid carries them on). */
static void thread_retire(pa_agg_t *a, struct pa_agg_thread *t)
{
    if (pa_agg_proj_thread_exit)
        pa_agg_proj_thread_exit(a, t->tid);
    if (!t->depth) {
        free(t->stack);
        t->stack = NULL;
        t->cap = 0;
    }
    if (t->skipped) {
        uint32_t any = 0;
        for (unsigned i = 0; i < PA_AGG_DOM_SLOTS; i++)
            any |= t->skipped[i];
        if (!any) {
            free(t->skipped);
            t->skipped = NULL;
        }
    }
}

/* osrt_record() without room in the spool thread's pipe (or without it): through a copy. */
static __attribute__((noinline, cold)) void osrt_spool_copy(pa_agg_t *a, const pa_record_t *rec, uint32_t key)
{
    pa_record_t tmp = *rec;
    tmp.kind = PA_SP_OSRT;
    tmp.nslots = 1;
    tmp.len = 0;
    tmp.u.osrt.pad = key;
    pa_agg_spool(a, &tmp, NULL);
}

static __attribute__((noinline)) uint32_t osrt_key_new(pa_agg_t *a, uint32_t f)
{
    const char *name = pa_osrt_name(f);
    return a->osrt_key[f] = pa_agg_intern(a, name, strlen(name));
}

static inline __attribute__((always_inline)) void osrt_record(pa_agg_t *a, const pa_record_t *rec)
{
    uint32_t f = rec->u.osrt.func < PA_OSRT_COUNT ? rec->u.osrt.func : 0;
    uint32_t key = a->osrt_key[f];
    if (__builtin_expect(!key, 0))
        key = osrt_key_new(a, f);
    /* straight into the spool thread's pipe when it has room, else through a copy */
    pa_record_t *sp = a->spool ? pa_spool_slot(a->spool) : NULL;
    if (__builtin_expect(sp != NULL, 1)) {
        *sp = *rec;
        sp->kind = PA_SP_OSRT;
        sp->nslots = 1;
        sp->len = 0;
        sp->u.osrt.pad = key; /* the writer names the row with this id: one string, once */
        pa_spool_slot_commit(a->spool);
        a->spool_records++;
    } else {
        osrt_spool_copy(a, rec, key);
    }
    pa_agg_stat_add_id_fast(a, PA_CAT_OSRT, 0, key, rec->t1 > rec->t0 ? rec->t1 - rec->t0 : 0);
}

/* pa_agg_ze_api() inline for an API whose name is known and a free pipe slot (a call frame was
 * ~18 of its ~150 instructions per record): the same statistic, record and projection call. */
static inline __attribute__((always_inline)) void ze_api_record(pa_agg_t *a, const pa_record_t *rec)
{
    uint32_t api = rec->u.ze.api, id;
    pa_record_t *sp;
    if (__builtin_expect(!a->ze_api_ids || api >= PA_AGG_ZE_API_DIRECT || !(id = a->ze_api_ids[api]) ||
                         !a->spool || !(sp = pa_spool_slot(a->spool)), 0)) {
        pa_agg_ze_api(a, rec);
        return;
    }
    pa_agg_stat_add_id_fast(a, PA_CAT_ZE_API, 0, id, rec->t1 > rec->t0 ? rec->t1 - rec->t0 : 0);
    *sp = *rec;
    sp->kind = PA_SP_ZE_API;
    sp->nslots = 1;
    sp->len = 0;
    sp->u.ze.api = id;
    pa_spool_slot_commit(a->spool);
    a->spool_records++;
    pa_agg_proj_api(a, rec); /* launch-time HGTX ranges (agg_proj.c) */
}

/* The aggregator's side of each source: its ring record-kind range (common/pa_source.h) and
 * the function that consumes those records. A new source adds its consumer here (one line). */
typedef void (*agg_consume_fn)(pa_agg_t *a, struct pa_agg_thread *t, const pa_record_t *rec,
                               const uint8_t *payload);
static void consume_hgtx(pa_agg_t *a, struct pa_agg_thread *t, const pa_record_t *rec, const uint8_t *p)
{
    if (rec->kind <= PA_REC_HGTX_DOMAIN_DESTROY)
        pa_agg_hgtx_record(a, t, rec, p);
}
static void consume_osrt(pa_agg_t *a, struct pa_agg_thread *t, const pa_record_t *rec, const uint8_t *p)
{
    (void)t, (void)p;
    if (rec->kind == PA_REC_OSRT)
        osrt_record(a, rec);
}
static void consume_ze(pa_agg_t *a, struct pa_agg_thread *t, const pa_record_t *rec, const uint8_t *p)
{
    (void)t;
    pa_agg_ze_record(a, rec, p);
}
static void consume_mem(pa_agg_t *a, struct pa_agg_thread *t, const pa_record_t *rec, const uint8_t *p)
{
    (void)t;
    pa_agg_mem_record(a, rec, p);
}
static void consume_pcs(pa_agg_t *a, struct pa_agg_thread *t, const pa_record_t *rec, const uint8_t *p)
{
    (void)t;
    pa_agg_pcs_record(a, rec, p);
}
static void consume_hc(pa_agg_t *a, struct pa_agg_thread *t, const pa_record_t *rec, const uint8_t *p)
{
    pa_agg_hc_record(a, t->tid, rec, p);
}
/* ITT counters pass through: the writer stores them (writer/writer_itt.c). */
static void consume_itt(pa_agg_t *a, struct pa_agg_thread *t, const pa_record_t *rec, const uint8_t *p)
{
    (void)t;
    if (rec->kind != PA_REC_ITT_COUNTS)
        return;
    pa_record_t out = *rec;
    out.kind = PA_SP_ITT_COUNTS;
    out.len = p ? rec->len : 0;
    pa_agg_spool(a, &out, p);
}
/* Device metric records pass through to the writer (one DB row per interval, writer/writer_dm.c)
 * and feed the online per-device sums the exit summary prints (agg_dm.c). */
static void consume_dm(pa_agg_t *a, struct pa_agg_thread *t, const pa_record_t *rec, const uint8_t *p)
{
    (void)t;
    if (rec->kind < PA_REC_DM_DEVICE || rec->kind > PA_REC_DM_SYSMAN)
        return;
    pa_agg_dm_record(a, rec, p);
    pa_record_t out = *rec;
    out.kind = (uint16_t)(0x1000u | rec->kind);
    out.len = p ? rec->len : 0;
    pa_agg_spool(a, &out, p);
}
/* kind -> consumer, one load per record (GCC range designators: each source's kind range) */
static const agg_consume_fn agg_consumers[256] = {
    [PA_REC_HGTX_FIRST ... PA_REC_HGTX_LAST] = consume_hgtx,
    [PA_REC_OSRT_FIRST ... PA_REC_OSRT_LAST] = consume_osrt,
    [PA_REC_ZE_FIRST ... PA_REC_ZE_LAST] = consume_ze,
    [PA_REC_MEM_FIRST ... PA_REC_MEM_LAST] = consume_mem,
    [PA_REC_PCSAMP_FIRST ... PA_REC_PCSAMP_LAST] = consume_pcs,
    [PA_REC_HC_FIRST ... PA_REC_HC_LAST] = consume_hc,
    [PA_REC_DM_FIRST ... PA_REC_DM_LAST] = consume_dm,
    [PA_REC_ITT_FIRST ... PA_REC_ITT_LAST] = consume_itt,
};

static inline __attribute__((always_inline)) void agg_dispatch(pa_agg_t *a, const pa_record_t *rec, const uint8_t *payload)
{
    a->consumed++;
    struct pa_agg_thread *t = a->last_thr;
    if (__builtin_expect(!t || t->tid != rec->tid, 0) && !(t = pa_agg_thread_get(a, rec->tid)))
        return;
    uint64_t t0 = rec->t0;
    if (t0) { /* the session span is the threads' (agg_span) */
        uint64_t end = rec->t1 > t0 ? rec->t1 : t0;
        if (t0 - 1 < t->first_ns - 1) /* also when first_ns is still 0 */
            t->first_ns = t0;
        if (end > t->last_ns)
            t->last_ns = end;
    }
    uint16_t k = rec->kind;
    /* the kinds that come by the million first, without the table's indirect call */
    if ((k == PA_REC_HGTX_PUSH || k == PA_REC_HGTX_POP) &&
        __builtin_expect(!(rec->flags & PA_RF_BAD_DOMAIN) && !a->src_state[PA_AGG_SRC_HC], 1)) {
        if (k == PA_REC_HGTX_PUSH)
            pa_agg_hgtx_push_inline(a, t, rec, payload);
        else
            pa_agg_hgtx_pop_inline(a, t, rec);
        return;
    }
    if (k == PA_REC_ZE_API) {
        ze_api_record(a, rec);
        return;
    }
    if (k == PA_REC_OSRT) {
        osrt_record(a, rec);
        return;
    }
    if (__builtin_expect(k < 256, 1) && agg_consumers[k]) {
        agg_consumers[k](a, t, rec, payload);
        return;
    }
    if (k == PA_REC_THREAD_NAME && payload)
        thread_set_name(a, t, payload, rec->len);
    /* PA_REC_THREAD_EXIT: only its time matters (t->last_ns, above); unknown kinds: skipped */
}

/* The session's first and last event times: those of its threads. */
static void agg_span(pa_agg_t *a)
{
    for (size_t i = 0; i < a->nthreads; i++) {
        const struct pa_agg_thread *t = a->threads[i];
        if (t->first_ns && (!a->first_ns || t->first_ns < a->first_ns))
            a->first_ns = t->first_ns;
        if (t->last_ns > a->last_ns)
            a->last_ns = t->last_ns;
    }
}

static inline __attribute__((always_inline)) void agg_sink(void *ctx, const pa_record_t *rec,
                                                           const uint8_t *payload)
{
    agg_dispatch(ctx, rec, payload);
}

void pa_agg_process_for_test(pa_agg_t *a, const pa_record_t *rec, const uint8_t *payload)
{
    agg_dispatch(a, rec, payload);
}

/* Counters of a ring that is about to be freed move to its thread. */
static void agg_on_retire(void *ctx, const pa_ring_t *r)
{
    pa_agg_t *a = ctx;
    uint64_t recs = atomic_load_explicit(&((pa_ring_t *)r)->records, memory_order_relaxed);
    uint64_t drops = atomic_load_explicit(&((pa_ring_t *)r)->drops, memory_order_relaxed);
    a->retired_records += recs;
    a->retired_drops += drops;
    struct pa_agg_thread *t = pa_agg_thread_get(a, r->tid);
    if (!t)
        return;
    t->records += recs;
    t->drops += drops;
    if (!t->named && r->name[0])
        thread_set_name(a, t, (const uint8_t *)r->name, sizeof r->name);
    thread_retire(a, t);
}

/* batch: records per ring (0 = all visible); final: drain each ring only up to its cut-off,
 * its tail as first seen by the final drain, so producers that keep writing at exit cannot
 * keep the drain going (what they write after it is counted late, not stored); catch_up: each
 * ring up to its tail now, once (pa_agg_finish). */
enum { DRAIN_RUN, DRAIN_FINAL, DRAIN_CATCH_UP };
static size_t agg_drain_pass_mode(pa_agg_t *a, size_t batch, int final)
{
    size_t total = 0;
    for (pa_ring_t *r = atomic_load_explicit(&pa_ring_list, memory_order_acquire); r; r = r->next) {
        size_t need = (size_t)(r->mask + 1) * PA_SLOT_SIZE;
        if (need > a->scratch_cap) {
            uint8_t *s = realloc(a->scratch, need);
            if (!s)
                continue; /* retried next pass; the producer counts drops meanwhile */
            a->scratch = s;
            a->scratch_cap = need;
        }
        a->cur_ring = r;
        uint64_t waiting = atomic_load_explicit(&r->tail, memory_order_relaxed) -
                           atomic_load_explicit(&r->head, memory_order_relaxed);
        if (waiting > a->fill_max)
            a->fill_max = waiting;
        if (final == DRAIN_CATCH_UP) {
            total += pa_ring_drain_inline(r, agg_sink, a, a->scratch, 0,
                                          atomic_load_explicit(&r->tail, memory_order_acquire));
        } else if (final) {
            if (!r->cut) /* 0 while the ring is still empty: looked at again next pass */
                r->cut = atomic_load_explicit(&r->tail, memory_order_acquire);
            /* a ring retired meanwhile cannot grow (its thread exited): drained to its end */
            uint64_t upto = atomic_load_explicit(&r->retired, memory_order_acquire)
                                ? atomic_load_explicit(&r->tail, memory_order_acquire) : r->cut;
            total += pa_ring_drain_inline(r, agg_sink, a, a->scratch, batch, upto);
        } else { /* the hot loop: the dispatch is inlined into the ring walk */
            total += pa_ring_drain_inline(r, agg_sink, a, a->scratch, batch, UINT64_MAX);
        }
    }
    a->cur_ring = NULL;
    a->passes++;
    pa_ring_unlink_retired(agg_on_retire, a);
    return total;
}

static size_t agg_drain_pass(pa_agg_t *a, size_t batch)
{
    return agg_drain_pass_mode(a, batch, DRAIN_RUN);
}

size_t pa_agg_drain_once(pa_agg_t *a)
{
    return agg_drain_pass(a, PA_AGG_BATCH);
}

static int row_cmp(const void *x, const void *y)
{
    const pa_stat_row_t *a = x, *b = y;
    if (a->cat != b->cat)
        return a->cat < b->cat ? -1 : 1;
    if (a->st.total != b->st.total)
        return a->st.total > b->st.total ? -1 : 1;
    return a->key_len != b->key_len ? (a->key_len < b->key_len ? -1 : 1)
                                    : memcmp(a->key, b->key, a->key_len);
}

/* Live rings' counters (after the final drain) and everything retired: what was produced. */
static void results_threads(pa_agg_t *a)
{
    pa_agg_results_t *res = &a->res;
    uint64_t recs = a->retired_records, drops = a->retired_drops;
    for (pa_ring_t *r = atomic_load_explicit(&pa_ring_list, memory_order_acquire); r; r = r->next) {
        uint64_t rr = atomic_load_explicit(&r->records, memory_order_acquire);
        uint64_t rd = atomic_load_explicit(&r->drops, memory_order_relaxed);
        recs += rr;
        drops += rd;
        struct pa_agg_thread *t = pa_agg_thread_get(a, r->tid);
        if (t) {
            t->records += rr;
            t->drops += rd;
            if (!t->named && r->name[0])
                thread_set_name(a, t, (const uint8_t *)r->name, sizeof r->name);
        }
    }
    res->records_total = recs;
    res->drops_total = drops;
    res->late_records = recs > a->consumed ? recs - a->consumed : 0;
    res->threads = calloc(a->nthreads ? a->nthreads : 1, sizeof *res->threads);
    for (size_t i = 0; res->threads && i < a->nthreads; i++) {
        const struct pa_agg_thread *t = a->threads[i];
        pa_thread_info_t *ti = &res->threads[res->nthreads++];
        ti->tid = t->tid;
        thread_name_copy(a, t, ti->name);
        ti->records = t->records;
        ti->drops = t->drops;
        ti->first_ns = t->first_ns;
        ti->last_ns = t->last_ns;
        pa_record_t sp = { .kind = PA_SP_THREAD, .tid = t->tid, .t0 = t->first_ns, .t1 = t->last_ns };
        sp.u.thread.drops = t->drops;
        sp.u.thread.name_id = t->name_id;
        sp.u.thread.records = t->records;
        pa_agg_spool(a, &sp, NULL);
    }
}

static void results_rows(pa_agg_t *a)
{
    pa_agg_results_t *res = &a->res;
    pa_statset_finish(&a->stats);
    res->rows = calloc(a->stats.nrows ? a->stats.nrows : 1, sizeof *res->rows);
    if (!res->rows)
        return;
    for (size_t i = 0; i < a->stats.nrows; i++) {
        const struct pa_statrow *r = &a->stats.rows[i];
        pa_stat_row_t *o = &res->rows[i];
        o->cat = r->cat;
        o->tag = r->tag;
        o->key_id = r->key_id;
        o->key = pa_intern_str(&a->strings, r->key_id, &o->key_len);
        if (!o->key) {
            o->key = "";
            o->key_len = 0;
        }
        o->st = r->st;
    }
    res->nrows = a->stats.nrows;
    qsort(res->rows, res->nrows, sizeof *res->rows, row_cmp);
}

const pa_agg_results_t *pa_agg_finish(pa_agg_t *a)
{
    if (a->finished)
        return &a->res;
    /* producers may still be writing: drain each ring up to its cut-off (its tail when this
     * drain first sees it), in batches, until nothing is left below the cut-offs or the
     * deadline passed (a slow machine: what is left is counted late, the DB is still written) */
    uint64_t deadline = atomic_load_explicit(&a->drain_deadline_ns, memory_order_relaxed);
    uint64_t t_drain = pa_clock_ns();
    int timed_out = 0;
    for (;;) {
        if (agg_drain_pass_mode(a, PA_AGG_BATCH, DRAIN_FINAL) == 0)
            break;
        if (deadline && pa_clock_ns() > deadline) {
            pa_warn("agg", "the exit drain reached its time limit (half of what PROFAGENT_EXIT_TIMEOUT_MS left): "
                    "the records still in the rings are counted as late");
            timed_out = 1;
            break;
        }
    }
    /* one last pass to each ring's tail now: what a thread wrote after its cut-off before this
     * point is stored, e.g. a driver thread's last calls as it exits just after the loop above
     * ended (its ring retired too late to be drained there). One pass, bounded by the rings'
     * size: producers still cannot keep the drain going. */
    if (pa_agg_test_after_final_drain)
        pa_agg_test_after_final_drain();
    if (!timed_out)
        agg_drain_pass_mode(a, 0, DRAIN_CATCH_UP);
    uint64_t t_hooks = pa_clock_ns();
    agg_span(a);
    uint64_t now = pa_clock_ns();
    a->end_ns = now > a->last_ns ? now : a->last_ns;
    pa_agg_hgtx_finish(a);
    pa_agg_hc_finish(a); /* after the open ranges were closed */
    pa_agg_ze_finish(a);
    pa_agg_mem_finish(a);
    pa_agg_pcs_finish(a);
    pa_agg_dm_finish(a);
    results_threads(a);
    results_rows(a);
    pa_agg_results_t *res = &a->res;
    res->hgtx_misuse_pop_empty = a->pop_empty;
    res->hgtx_misuse_bad_end = a->bad_end;
    res->hgtx_unterminated = a->unterminated;
    res->hgtx_drop_end_no_start = a->end_no_start;
    res->hgtx_drop_start_no_end = a->start_no_end;
    res->hgtx_depth_overflow = a->depth_overflow;
    res->hgtx_misuse_bad_domain = a->bad_domain;
    /* weak: unit tests link the aggregator without the collector's thread.c */
    res->unrecorded = &pa_unrecorded ? atomic_load_explicit(&pa_unrecorded, memory_order_relaxed) : 0;
    res->late_no_ring = &pa_late_no_ring ? atomic_load_explicit(&pa_late_no_ring, memory_order_relaxed) : 0;
    res->late_records += res->late_no_ring;
    _Static_assert(PA_RING_NSRC == sizeof res->ring_full_waits / sizeof res->ring_full_waits[0],
                   "one wait count per ring source");
    for (unsigned i = 0; i < PA_RING_NSRC; i++) {
        res->ring_full_waits[i] = atomic_load_explicit(&pa_ring_waits[i].waits, memory_order_relaxed);
        res->ring_full_wait_ns[i] = atomic_load_explicit(&pa_ring_waits[i].wait_ns, memory_order_relaxed);
        res->ring_full_given_up[i] = atomic_load_explicit(&pa_ring_waits[i].given_up, memory_order_relaxed);
    }
    res->first_ns = a->first_ns;
    res->last_ns = a->last_ns;
    uint64_t t_close = pa_clock_ns();
    if (a->spool) {
        if (a->close_deadline_ns)
            pa_spool_close_by(a->spool, a->close_deadline_ns);
        if (pa_spool_close_write_stats(a->spool, &res->spool_bytes_raw, &res->spool_bytes_compressed,
                                       &res->spool_pipe_waits, &res->spool_pipe_wait_ns) < 0)
            a->spool_errors++;
        a->spool = NULL;
    }
    pa_dbg("agg", "spool: %llu records, the spool thread's pipe full %llu times (%.1f ms waited)",
            (unsigned long long)a->spool_records, (unsigned long long)res->spool_pipe_waits,
            (double)res->spool_pipe_wait_ns / 1e6);
    pa_dbg("agg", "finish: last drain %.1f ms, ranges and tables %.1f ms, spool close %.1f ms",
           (t_hooks - t_drain) / 1e6, (t_close - t_hooks) / 1e6, (pa_clock_ns() - t_close) / 1e6);
    pa_dbg("agg", "%llu drain passes; at most %llu ring slots waiting at a pass", (unsigned long long)a->passes,
           (unsigned long long)a->fill_max);
    res->spool_records = a->spool_records;
    res->spool_errors = a->spool_errors;
    a->finished = 1;
    return res;
}

size_t pa_agg_hgtx_stack(pa_agg_t *a, uint32_t tid, const pa_agg_open_range_t **ranges)
{
    uint32_t *ix = pa_map_get(&a->tid_map, (uint64_t)tid + 1);
    const struct pa_agg_thread *t = ix ? a->threads[*ix] : NULL;
    *ranges = t && t->depth ? t->stack : NULL;
    return t ? t->depth : 0;
}

void pa_agg_destroy(pa_agg_t *a)
{
    if (!a)
        return;
    if (a->spool)
        pa_spool_close_write(a->spool, NULL, NULL);
    for (size_t i = 0; i < a->nthreads; i++) {
        free(a->threads[i]->stack);
        free(a->threads[i]->skipped);
        free(a->threads[i]);
    }
    free(a->threads);
    free(a->res.rows);
    free(a->res.threads);
    free((void *)a->res.hc);
    pa_agg_dm_free(a);
    free(a->se);
    free(a->tmp);
    free(a->scratch);
    pa_map_free(&a->tid_map);
    pa_map_free(&a->domains);
    pa_map_free(&a->display);
    pa_map_free(&a->se_map);
    pa_statset_free(&a->stats);
    pa_intern_free(&a->strings);
    free(a);
}
