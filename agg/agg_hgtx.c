/* agg_hgtx.c - HGTX pairing: push/pop stacks per thread and domain, start/end ids across threads, marks. */
#include <stdlib.h>
#include <string.h>

#include "agg_priv.h"
#include "agg_proj.h"

/* weak: tests that build the HGTX pairing alone do not link the projection */
extern __typeof__(pa_agg_proj_range) pa_agg_proj_range __attribute__((weak));
/* weak too: host counter deltas (agg_hc.c) */
extern __typeof__(pa_agg_hc_hgtx) pa_agg_hc_hgtx __attribute__((weak));
extern __typeof__(pa_agg_hc_range) pa_agg_hc_range __attribute__((weak));
/* collector/hgtx.c: domain names as created (weak: absent when a test links agg alone) */
const char *pa_hgtx_domain_lookup(uint32_t id, size_t *len) __attribute__((weak));
/* collector/hgtx.c: start/end records a full ring cost (weak too) */
extern _Atomic uint64_t pa_hgtx_ends_unstarted __attribute__((weak)); /* ends of refused starts */
extern _Atomic uint64_t pa_hgtx_starts_lost __attribute__((weak)); /* starts refused, id kept */
extern _Atomic uint64_t pa_hgtx_ends_lost __attribute__((weak));   /* ends refused */

static uint64_t weak_count(_Atomic uint64_t *c)
{
    return c ? atomic_load_explicit(c, memory_order_relaxed) : 0;
}

/* "domain:name" (or just the name) as one interned string: the statistics key. */
static uint32_t display_id(pa_agg_t *a, uint32_t domain_id, uint32_t name_id)
{
    if (!domain_id)
        return name_id;
    uint64_t key = (uint64_t)domain_id << 32 | name_id;
    uint32_t *v = pa_map_get(&a->display, key);
    if (v)
        return *v;
    size_t dl, nl;
    const char *d = pa_intern_str(&a->strings, domain_id, &dl);
    const char *n = pa_intern_str(&a->strings, name_id, &nl);
    if (!d || !n || !dl) /* a domain created without a name (NULL, ""): the name alone, no ":" */
        return name_id;
    if (dl + nl + 1 > a->tmp_cap) {
        char *t = realloc(a->tmp, dl + nl + 1);
        if (!t)
            return name_id;
        a->tmp = t;
        a->tmp_cap = dl + nl + 1;
    }
    memcpy(a->tmp, d, dl);
    a->tmp[dl] = ':';
    memcpy(a->tmp + dl + 1, n, nl);
    uint32_t id = pa_agg_intern(a, a->tmp, dl + nl + 1);
    if (id)
        pa_map_put(&a->display, key, id);
    return id ? id : name_id;
}

static uint32_t domain_name_id_slow(pa_agg_t *a, uint32_t domain)
{
    uint32_t *v = pa_map_get(&a->domains, domain);
    if (v)
        return *v;
    /* its DOMAIN record is still in the creator's ring (drained later): the name as created */
    size_t len;
    const char *s = pa_hgtx_domain_lookup ? pa_hgtx_domain_lookup(domain, &len) : NULL;
    uint32_t id = s ? pa_agg_intern(a, s, len) : 0;
    if (id)
        pa_map_put(&a->domains, domain, id);
    return id; /* 0: a domain whose create record was dropped shows as the default one */
}

static inline uint32_t domain_name_id(pa_agg_t *a, uint32_t domain)
{
    return domain ? domain_name_id_slow(a, domain) : 0;
}

typedef struct range_out {
    uint64_t t0, t1;
    uint32_t tid, end_tid, range_id, parent_id, name_id, domain_id, flags;
    int32_t level;
} range_out_t;

/* Spools a range (a PA_SP_HGTX_RANGE record); terminated ranges also feed the HGTX statistics
 * (unterminated ones have no real duration and would distort them). When neither the device
 * projection nor the host counters want the record and the spool pipe has room, the record is
 * built straight in its pipe slot instead of on the stack and copied (bench_drain HGTX/OSRT
 * 195.6 -> 175.4 instr/event); a committed slot is the worker's, so the statistic reads `o`. */
static inline __attribute__((always_inline)) void range_emit(pa_agg_t *a, const range_out_t *o)
{
    /* device projection of this instance (agg_proj.c); a push/pop range while no instance is
     * held has nothing to do there (its own early return, without the call) */
    int proj = pa_agg_proj_range && ((o->flags & PA_RF_STARTEND) || !a->proj_insts || *a->proj_insts);
    int hc = pa_agg_hc_range && a->src_state[PA_AGG_SRC_HC]; /* host counter deltas of it */
    pa_record_t local, *slot = !proj && !hc && a->spool ? pa_spool_slot(a->spool) : NULL;
    pa_record_t *r = slot ? slot : &local;
    *r = (pa_record_t){ .kind = PA_SP_HGTX_RANGE, .tid = o->tid, .flags = o->flags, .t0 = o->t0, .t1 = o->t1 };
    r->u.range.name_id = o->name_id;
    r->u.range.domain_id = o->domain_id;
    r->u.range.range_id = o->range_id;
    r->u.range.parent_id = o->parent_id;
    r->u.range.level = o->level;
    r->u.range.end_tid = o->end_tid;
    if (__builtin_expect(slot != NULL, 1)) {
        pa_spool_slot_commit(a->spool);
        a->spool_records++;
    } else {
        pa_agg_spool1(a, r);
        if (proj)
            pa_agg_proj_range(a, r);
        if (hc)
            pa_agg_hc_range(a, r);
    }
    if (o->flags & PA_RF_UNTERMINATED)
        return;
    uint32_t key = o->domain_id ? display_id(a, o->domain_id, o->name_id) : o->name_id;
    pa_agg_stat_add_id_fast(a, PA_CAT_HGTX_RANGE, (o->flags & PA_RF_STARTEND) ? 1u : 0u, key,
                            o->t1 > o->t0 ? o->t1 - o->t0 : 0);
}

static inline __attribute__((always_inline)) uint32_t rec_name_id(pa_agg_t *a, const pa_record_t *rec, const uint8_t *payload)
{
    size_t len;
    const void *p = pa_agg_hgtx_name(rec, payload, &len);
    return pa_agg_intern_fast(a, p, len);
}

static inline uint32_t dom_slot(uint32_t dom)
{
    return dom < PA_AGG_DOM_SLOTS - 1 ? dom : PA_AGG_DOM_SLOTS - 1;
}

/* Index of the innermost open range of domain `dom` on the thread, -1 when none. Domains
 * rarely interleave, so this is the top entry in practice. */
static inline long top_of(const struct pa_agg_thread *t, uint32_t dom)
{
    if (__builtin_expect(t->depth && t->stack[t->depth - 1].dom == dom, 1))
        return (long)t->depth - 1;
    for (long i = (long)t->depth - 1; i >= 0; i--)
        if (t->stack[i].dom == dom)
            return i;
    return -1;
}

/* Removes stack entry i, keeping the push order of the others. */
static inline void remove_at(struct pa_agg_thread *t, long i)
{
    if (__builtin_expect((uint32_t)i + 1 == t->depth, 1)) { /* the top: pops come in order */
        t->depth--;
        return;
    }
    memmove(&t->stack[i], &t->stack[i + 1], (t->depth - (size_t)i - 1) * sizeof *t->stack);
    t->depth--;
}

void pa_agg_hgtx_skip(struct pa_agg_thread *t, uint32_t slot)
{
    if (!t->skipped && !(t->skipped = calloc(PA_AGG_DOM_SLOTS, sizeof *t->skipped)))
        return; /* no memory: its pop is then taken as a pop of an empty stack */
    t->skipped[slot]++;
}

void pa_agg_hgtx_push(pa_agg_t *a, struct pa_agg_thread *t, const pa_record_t *rec, const uint8_t *payload)
{
    uint32_t dom = rec->u.hgtx.domain;
    if (t->depth >= a->cfg.max_stack_depth) {
        pa_agg_hgtx_skip(t, dom_slot(dom));
        a->depth_overflow++;
        return;
    }
    if (t->depth == t->cap) {
        uint32_t ncap = t->cap ? t->cap * 2 : 8;
        pa_agg_open_range_t *ns = realloc(t->stack, ncap * sizeof *ns);
        if (!ns) {
            pa_agg_hgtx_skip(t, dom_slot(dom));
            a->depth_overflow++;
            return;
        }
        t->stack = ns;
        t->cap = ncap;
    }
    long parent = top_of(t, dom);
    pa_agg_open_range_t *o = &t->stack[t->depth];
    o->t0 = rec->t0;
    o->range_id = ++a->next_range_id;
    o->parent_id = parent >= 0 ? t->stack[parent].range_id : 0;
    o->name_id = rec_name_id(a, rec, payload);
    o->domain_id = domain_name_id(a, dom);
    o->level = parent >= 0 ? t->stack[parent].level + 1 : 0;
    o->dom = dom;
    t->depth++;
}

/* Emits open range i of thread t as ended at t1 and takes it off the stack. */
static inline void pop_emit(pa_agg_t *a, struct pa_agg_thread *t, long i, uint64_t t1, uint32_t flags)
{
    const pa_agg_open_range_t *o = &t->stack[i];
    range_out_t out = { .t0 = o->t0, .t1 = t1, .tid = t->tid, .end_tid = t->tid, .range_id = o->range_id,
                        .parent_id = o->parent_id, .name_id = o->name_id, .domain_id = o->domain_id,
                        .flags = flags, .level = o->level };
    remove_at(t, i);
    range_emit(a, &out);
}

void pa_agg_hgtx_pop(pa_agg_t *a, struct pa_agg_thread *t, const pa_record_t *rec)
{
    uint32_t dom = rec->u.hgtx.domain;
    uint32_t *skip = t->skipped;
    if (__builtin_expect(skip != NULL, 0) && skip[dom_slot(dom)]) { /* its push was past the depth limit */
        skip[dom_slot(dom)]--;
        return;
    }
    int32_t lvl = rec->u.hgtx.level; /* level of the closed range per the producer, -1: empty */
    long i = top_of(t, dom);
    /* Only a thread that lost records can disagree with the producer's depth; then trust the
     * producer (exact for domains with their own counter): drop ranges whose pop was lost,
     * ignore a pop whose push was lost. */
    if (a->cur_ring && lvl >= 0 && dom < PA_AGG_DOM_SLOTS - 1 &&
        atomic_load_explicit(&((pa_ring_t *)a->cur_ring)->drops, memory_order_relaxed)) {
        while (i >= 0 && t->stack[i].level > lvl) {
            remove_at(t, i);
            i = top_of(t, dom);
        }
        if (i < 0 || t->stack[i].level < lvl)
            return;
    }
    if (i < 0) {
        a->pop_empty++;
        return;
    }
    pop_emit(a, t, i, rec->t0, 0);
}

static struct pa_agg_se *se_alloc(pa_agg_t *a, uint64_t id)
{
    if (a->se_map.n >= a->cfg.max_open_ranges)
        return NULL;
    uint32_t ix;
    if (a->se_free) {
        ix = a->se_free - 1;
        a->se_free = a->se[ix].next_free;
    } else {
        if (a->se_n == a->se_cap) {
            size_t ncap = a->se_cap ? a->se_cap * 2 : 64;
            struct pa_agg_se *ns = realloc(a->se, ncap * sizeof *ns);
            if (!ns)
                return NULL;
            a->se = ns;
            a->se_cap = ncap;
        }
        ix = (uint32_t)a->se_n++;
    }
    if (pa_map_put(&a->se_map, id, ix) < 0) {
        a->se[ix].next_free = a->se_free;
        a->se_free = ix + 1;
        return NULL;
    }
    memset(&a->se[ix], 0, sizeof a->se[ix]);
    a->se[ix].id = id;
    return &a->se[ix];
}

static void se_release(pa_agg_t *a, struct pa_agg_se *e)
{
    uint32_t ix = (uint32_t)(e - a->se);
    pa_map_del(&a->se_map, e->id);
    e->next_free = a->se_free;
    a->se_free = ix + 1;
}

static __attribute__((noinline)) void hgtx_start(pa_agg_t *a, struct pa_agg_thread *t, const pa_record_t *rec,
                       const uint8_t *payload)
{
    uint64_t id = rec->u.hgtx.id;
    range_out_t out = { .t0 = rec->t0, .tid = t->tid, .range_id = ++a->next_range_id,
                        .flags = PA_RF_STARTEND, .level = -1 };
    out.name_id = rec_name_id(a, rec, payload);
    out.domain_id = domain_name_id(a, rec->u.hgtx.domain);
    uint32_t *ix = id ? pa_map_get(&a->se_map, id) : NULL;
    if (ix && a->se[*ix].is_end) { /* its end was drained first (another thread's ring) */
        struct pa_agg_se *e = &a->se[*ix];
        out.t1 = e->t;
        out.end_tid = e->tid;
        se_release(a, e);
        range_emit(a, &out);
        return;
    }
    struct pa_agg_se *e = (id && !ix) ? se_alloc(a, id) : NULL;
    if (!e) { /* duplicate id or no room: it can never be ended, report it open right away */
        out.t1 = rec->t0;
        out.end_tid = t->tid;
        out.flags |= PA_RF_UNTERMINATED;
        a->unterminated++;
        range_emit(a, &out);
        return;
    }
    e->t = rec->t0;
    e->tid = t->tid;
    e->name_id = out.name_id;
    e->domain_id = out.domain_id;
    e->range_id = out.range_id;
}

static __attribute__((noinline)) void hgtx_end(pa_agg_t *a, struct pa_agg_thread *t, const pa_record_t *rec)
{
    uint64_t id = rec->u.hgtx.id;
    if (pa_hgtx_id_lost(id)) { /* its start was refused by a full ring: a drop, not misuse */
        a->end_no_start++;
        return;
    }
    uint32_t *ix = id ? pa_map_get(&a->se_map, id) : NULL;
    if (ix && !a->se[*ix].is_end) {
        struct pa_agg_se *e = &a->se[*ix];
        range_out_t out = { .t0 = e->t, .t1 = rec->t0, .tid = e->tid, .end_tid = t->tid,
                            .range_id = e->range_id, .name_id = e->name_id,
                            .domain_id = e->domain_id, .flags = PA_RF_STARTEND, .level = -1 };
        se_release(a, e);
        range_emit(a, &out);
        return;
    }
    struct pa_agg_se *e = (id && !ix) ? se_alloc(a, id) : NULL;
    if (!e) { /* id 0, a second early end of the same id, or no room */
        a->bad_end++;
        return;
    }
    e->is_end = 1; /* keep it: its start may still be in another thread's ring */
    e->t = rec->t0;
    e->tid = t->tid;
}

/* The record kinds other than push and pop, and the records that need a look beyond them. */
static inline void hgtx_record_other(pa_agg_t *a, struct pa_agg_thread *t,
                                                        const pa_record_t *rec, const uint8_t *payload)
{
    if (rec->flags & PA_RF_BAD_DOMAIN) /* the collector judged the handle; domain is 0 now */
        a->bad_domain++;
    if (pa_agg_hc_hgtx && a->src_state[PA_AGG_SRC_HC] && rec->kind <= PA_REC_HGTX_END)
        pa_agg_hc_hgtx(a, t->tid, rec); /* the counter read just before this record */
    switch (rec->kind) {
    case PA_REC_HGTX_PUSH:
        pa_agg_hgtx_push(a, t, rec, payload);
        break;
    case PA_REC_HGTX_POP:
        pa_agg_hgtx_pop(a, t, rec);
        break;
    case PA_REC_HGTX_START:
        hgtx_start(a, t, rec, payload);
        break;
    case PA_REC_HGTX_END:
        hgtx_end(a, t, rec);
        break;
    case PA_REC_HGTX_MARK: {
        pa_record_t m = { .kind = PA_SP_HGTX_MARK, .tid = t->tid, .t0 = rec->t0 };
        m.u.range.name_id = rec_name_id(a, rec, payload);
        m.u.range.domain_id = domain_name_id(a, rec->u.hgtx.domain);
        m.u.range.level = -1;
        pa_agg_spool(a, &m, NULL);
        break;
    }
    case PA_REC_HGTX_DOMAIN: {
        uint32_t nid = rec_name_id(a, rec, payload);
        /* put once: ranges already named from the creator's table keep the same key */
        if (rec->u.hgtx.domain && nid && !pa_map_get(&a->domains, rec->u.hgtx.domain))
            pa_map_put(&a->domains, rec->u.hgtx.domain, nid);
        break;
    }
    default: /* domain destroy: names stay valid for ranges still open or drained later */
        break;
    }
}

void pa_agg_hgtx_record(pa_agg_t *a, struct pa_agg_thread *t, const pa_record_t *rec,
                        const uint8_t *payload)
{
    hgtx_record_other(a, t, rec, payload);
}

/* Why ends of unknown ids and ranges open at exit are checked against the collector's counts:
 * a full ring can refuse a range's start (its end then names an id never seen) or its end (the
 * range then looks left open). Neither is the application's doing. The ends of refused HGTX
 * starts carry PA_HGTX_ID_LOST and are counted exactly (here and by the collector); refusals
 * the collector can only count (a start refused after its id was handed out, an ITT key's
 * start, any end) explain as many unmatched ends and open ranges, and only what they do not
 * explain is reported as misuse or as left open. Exact for a correct program, and for any
 * program whose rings dropped nothing; a program that both misuses ids and loses records can
 * see some misuse taken for drops. */
static void hgtx_drop_accounting(pa_agg_t *a, uint64_t unmatched, uint64_t open_se)
{
    uint64_t s = weak_count(&pa_hgtx_starts_lost), e = weak_count(&pa_hgtx_ends_lost);
    if (s > unmatched)
        s = unmatched;
    if (e > open_se)
        e = open_se;
    a->end_no_start += s + weak_count(&pa_hgtx_ends_unstarted);
    a->bad_end += unmatched - s;
    a->start_no_end += e;
    a->unterminated += open_se - e;
}

void pa_agg_hgtx_finish(pa_agg_t *a)
{
    uint64_t unmatched = 0, open_se = 0; /* ends of ids never started; start/end ranges open */
    for (size_t i = 0; i < a->nthreads; i++) {
        struct pa_agg_thread *t = a->threads[i];
        a->unterminated += t->depth;
        while (t->depth) /* innermost first, like pops would have come */
            pop_emit(a, t, (long)t->depth - 1, a->end_ns, PA_RF_UNTERMINATED);
    }
    for (size_t i = 0; i < a->se_n; i++) {
        struct pa_agg_se *e = &a->se[i];
        uint32_t *ix = e->id ? pa_map_get(&a->se_map, e->id) : NULL;
        if (!ix || *ix != i)
            continue; /* free slot */
        if (e->is_end) {
            unmatched++;
            continue;
        }
        open_se++;
        range_out_t out = { .t0 = e->t, .t1 = a->end_ns, .tid = e->tid, .end_tid = 0,
                            .range_id = e->range_id, .name_id = e->name_id,
                            .domain_id = e->domain_id, .level = -1,
                            .flags = PA_RF_STARTEND | PA_RF_UNTERMINATED };
        range_emit(a, &out);
    }
    hgtx_drop_accounting(a, unmatched, open_se);
    pa_map_free(&a->se_map);
    a->se_n = 0;
    a->se_free = 0;
}
