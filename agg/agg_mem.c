/* agg_mem.c - device-memory aggregation: live allocations, call-chain dedup, spool records. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/pa_callstack.h"
#include "../common/pa_log.h"
#include "agg_internal.h"

typedef struct mem_chain {
    uint64_t hash;
    size_t off;          /* frames then Python text, in st->arena */
    uint32_t nframes, py_len;
    uint32_t gen, py_omitted, flags;  /* pa_mem_stack_hdr_t: part of the identity */
} mem_chain_t;

/* A module dlclose'd during the run (PA_REC_MEM_MODULE), for pa_sym_add_unloaded(). */
typedef struct mem_module { uint32_t gen; uint64_t bias, lo, hi; char *path; } mem_module_t;

typedef struct mem_live {
    uint64_t event_id, size, device_handle;
    uint32_t device, chain;
} mem_live_t;

typedef struct mem_state {
    pa_map_t chain_idx;              /* stack hash (probed on collision) -> chain index + 1 */
    mem_chain_t *chains; size_t nchains, chains_cap;
    uint8_t *arena; size_t arena_len, arena_cap;
    pa_map_t live;                   /* address -> slot index + 1 */
    mem_live_t *slots; size_t nslots, slots_cap;
    uint32_t *free_slots; size_t nfree, free_cap;
    uint64_t next_event;
    uint64_t failed_allocs, unknown_frees, failed_frees;
    uint64_t fallback_dev[16]; uint32_t nfallback; /* handles the ze source did not know */
    mem_module_t *mods; size_t nmods;
} mem_state_t;

/* Memory records the collector lost (collector/mem.c); weak for the same reason as pa_config. */
extern uint64_t pa_mem_dropped_count(void) __attribute__((weak));

static mem_state_t *mem_state(pa_agg_t *a)
{
    void **slot = pa_agg_source_state(a, PA_AGG_SRC_MEM);
    if (!*slot)
        *slot = calloc(1, sizeof(mem_state_t));
    return *slot;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 64;
    while (nc < need)
        nc *= 2;
    void *np = realloc(*p, nc * elem);
    if (!np)
        return -1;
    *p = np;
    *cap = nc;
    return 0;
}

static uint64_t next_key(uint64_t k) { return k + 1 ? k + 1 : 1; }

/* Chain id (> 0) of the stack bytes, added when new; 0 when out of memory or empty. */
static uint32_t chain_get(mem_state_t *st, const uint8_t *bytes, const pa_mem_stack_hdr_t *hd)
{
    uint32_t nframes = hd->nframes, py_len = hd->py_len;
    size_t len = (size_t)nframes * 8u + py_len;
    if (len == 0)
        return 0;
    /* the same addresses before and after a dlclose may be different code: gen is identity */
    uint64_t h = pa_hash_bytes(bytes, len) ^ ((uint64_t)hd->gen * 0x9e3779b97f4a7c15ull);
    uint64_t k = h ? h : 1;
    for (uint32_t *v; (v = pa_map_get(&st->chain_idx, k)) != NULL; k = next_key(k)) {
        const mem_chain_t *c = &st->chains[*v - 1];
        if (c->nframes == nframes && c->py_len == py_len && c->gen == hd->gen &&
            c->py_omitted == hd->py_omitted && c->flags == hd->flags &&
            memcmp(st->arena + c->off, bytes, len) == 0)
            return *v;
    }
    /* k is now the first free key of the probe sequence */
    if (grow((void **)&st->chains, &st->chains_cap, st->nchains + 1, sizeof(mem_chain_t)) ||
        grow((void **)&st->arena, &st->arena_cap, st->arena_len + len, 1) ||
        pa_map_put(&st->chain_idx, k, (uint32_t)st->nchains + 1))
        return 0;
    mem_chain_t *c = &st->chains[st->nchains++];
    c->hash = h;
    c->off = st->arena_len;
    c->nframes = nframes;
    c->py_len = py_len;
    c->gen = hd->gen;
    c->py_omitted = hd->py_omitted;
    c->flags = hd->flags;
    memcpy(st->arena + st->arena_len, bytes, len);
    st->arena_len += len;
    return (uint32_t)st->nchains;
}

static uint32_t device_index(mem_state_t *st, const pa_mem_stack_hdr_t *h)
{
    if (h->dev_index != UINT32_MAX || h->device == 0)
        return h->dev_index;
    /* unknown to the ze source: number the handles in order of first appearance, from 1000
     * so they never alias a real enumeration index */
    for (uint32_t i = 0; i < st->nfallback; i++)
        if (st->fallback_dev[i] == h->device)
            return 1000u + i;
    if (st->nfallback == 16)
        return UINT32_MAX;
    st->fallback_dev[st->nfallback] = h->device;
    return 1000u + st->nfallback++;
}

static void live_add(mem_state_t *st, uint64_t ptr, const mem_live_t *l)
{
    size_t slot;
    if (st->nfree) {
        slot = st->free_slots[--st->nfree];
    } else {
        if (grow((void **)&st->slots, &st->slots_cap, st->nslots + 1, sizeof(mem_live_t)))
            return;
        slot = st->nslots++;
    }
    st->slots[slot] = *l;
    uint32_t *old = pa_map_get(&st->live, ptr);
    if (old) /* address reused without a free we saw: the old allocation is gone */
        *old = (uint32_t)slot + 1;
    else
        pa_map_put(&st->live, ptr, (uint32_t)slot + 1);
}

static void mem_alloc(pa_agg_t *a, mem_state_t *st, const pa_record_t *rec, const uint8_t *payload)
{
    pa_mem_stack_hdr_t h = {.dev_index = UINT32_MAX};
    const uint8_t *stack = NULL;
    if (rec->len >= sizeof h) {
        memcpy(&h, payload, sizeof h);
        size_t avail = rec->len - sizeof h;
        if ((size_t)h.nframes * 8u > avail) /* truncated record: keep what arrived */
            h.nframes = (uint16_t)(avail / 8u);
        if ((size_t)h.nframes * 8u + h.py_len > avail)
            h.py_len = (uint32_t)(avail - (size_t)h.nframes * 8u);
        stack = payload + sizeof h;
    }
    pa_mem_sp_t sp = {.event_id = ++st->next_event, .device_handle = h.device,
                      .device = device_index(st, &h)};
    sp.callchain_id = stack ? chain_get(st, stack, &h) : 0;
    pa_record_t out = *rec;
    out.kind = PA_SP_MEM_ALLOC;
    out.len = sizeof sp;
    if (rec->u.mem.result != 0 || rec->u.mem.ptr == 0) {
        st->failed_allocs++; /* recorded, never counted as usage */
    } else {
        mem_live_t l = {sp.event_id, rec->u.mem.size, h.device, sp.device, sp.callchain_id};
        live_add(st, rec->u.mem.ptr, &l);
    }
    pa_agg_spool(a, &out, &sp);
}

static void mem_free(pa_agg_t *a, mem_state_t *st, const pa_record_t *rec)
{
    pa_mem_sp_t sp = {.event_id = ++st->next_event, .device = UINT32_MAX};
    pa_record_t out = *rec;
    out.kind = PA_SP_MEM_FREE;
    out.len = sizeof sp;
    uint32_t *v = rec->u.mem.ptr ? pa_map_get(&st->live, rec->u.mem.ptr) : NULL;
    if (!v) {
        st->unknown_frees++; /* never allocated under the agent (or before it started) */
    } else if (rec->u.mem.result != 0) {
        st->failed_frees++;  /* the allocation stays live */
    } else {
        size_t slot = *v - 1;
        const mem_live_t *l = &st->slots[slot];
        sp.alloc_event_id = l->event_id;
        sp.device_handle = l->device_handle;
        sp.device = l->device;
        sp.callchain_id = l->chain;
        out.u.mem.size = l->size;
        pa_map_del(&st->live, rec->u.mem.ptr);
        if (!grow((void **)&st->free_slots, &st->free_cap, st->nfree + 1, sizeof(uint32_t)))
            st->free_slots[st->nfree++] = (uint32_t)slot;
    }
    pa_agg_spool(a, &out, &sp);
}

static void mem_module(mem_state_t *st, const pa_record_t *rec, const uint8_t *payload)
{
    mem_module_t *m = realloc(st->mods, (st->nmods + 1) * sizeof(*m));
    if (!m)
        return;
    st->mods = m;
    m[st->nmods] = (mem_module_t){(uint32_t)rec->u.raw[0], rec->u.raw[1], rec->u.raw[2], rec->u.raw[3],
                                  strndup((const char *)payload, rec->len)};
    if (m[st->nmods].path)
        st->nmods++;
}

void pa_agg_mem_record(pa_agg_t *a, const pa_record_t *rec, const uint8_t *payload)
{
    mem_state_t *st = mem_state(a);
    if (!st)
        return;
    if (rec->kind == PA_REC_MEM_ALLOC)
        mem_alloc(a, st, rec, payload);
    else if (rec->kind == PA_REC_MEM_MODULE)
        mem_module(st, rec, payload);
    else if (rec->kind == PA_REC_MEM_FREE)
        mem_free(a, st, rec);
}

/* "function (module-basename) source" */
static size_t frame_display(const pa_sym_frame_t *f, char *buf, size_t sz)
{
    const char *base = strrchr(f->module, '/');
    int w = snprintf(buf, sz, "%s (%s)%s%s", f->function, base ? base + 1 : f->module,
                     f->source[0] ? " " : "", f->source);
    return w < 0 ? 0 : (size_t)w < sz ? (size_t)w : sz - 1;
}

/* Symbolizes every unique stack once and spools its frames (depth 0 = innermost). */
static void mem_spool_chains(pa_agg_t *a, mem_state_t *st)
{
    pa_sym_t *sym = st->nchains ? pa_sym_open(pa_agg_config(a)->symbols_system_debuginfo) : NULL;
    for (size_t i = 0; sym && i < st->nmods; i++)
        pa_sym_add_unloaded(sym, st->mods[i].gen, st->mods[i].bias, st->mods[i].lo, st->mods[i].hi,
                            st->mods[i].path);
    size_t depth = pa_agg_config(a)->callstack_depth;
    pa_sym_frame_t fr[PA_CALLSTACK_MAX_DEPTH + 64];
    uint64_t pcs[PA_CALLSTACK_MAX_DEPTH + PA_MEM_SKIP_FRAMES];
    char disp[4096];
    for (size_t i = 0; i < st->nchains; i++) {
        const mem_chain_t *c = &st->chains[i];
        uint32_t nf = c->nframes < PA_CALLSTACK_MAX_DEPTH + PA_MEM_SKIP_FRAMES ? c->nframes
                                                                                : PA_CALLSTACK_MAX_DEPTH + PA_MEM_SKIP_FRAMES;
        memcpy(pcs, st->arena + c->off, (size_t)nf * 8u); /* arena bytes are unaligned */
        int64_t more = c->flags & PA_MEM_STACK_CUT ? -1 : (int64_t)c->py_omitted;
        size_t n = pa_sym_chain(sym, pcs, nf, c->gen, (const char *)st->arena + c->off + (size_t)c->nframes * 8u,
                                c->py_len, depth, more, fr, sizeof fr / sizeof fr[0]);
        for (size_t d = 0; d < n; d++) {
            size_t dl = frame_display(&fr[d], disp, sizeof disp);
            pa_record_t r = {.kind = PA_SP_MEM_FRAME};
            r.u.raw[0] = i + 1;
            r.u.raw[1] = d;
            r.u.raw[2] = pa_agg_intern(a, disp, dl);
            r.u.raw[3] = (uint64_t)pa_agg_intern(a, fr[d].module, strlen(fr[d].module)) << 32 |
                         pa_agg_intern(a, fr[d].function, strlen(fr[d].function));
            pa_agg_spool(a, &r, NULL);
        }
    }
    pa_sym_close(sym);
}

void pa_agg_mem_finish(pa_agg_t *a)
{
    uint64_t dropped = pa_mem_dropped_count ? pa_mem_dropped_count() : 0;
    mem_state_t *st = *pa_agg_source_state(a, PA_AGG_SRC_MEM);
    if (!st && dropped)
        st = mem_state(a); /* every record lost: the DB still says so */
    if (!st)
        return; /* no memory record at all: nothing in the DB either */
    mem_spool_chains(a, st);
    char exe[4096];
    ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
    /* PROFAGENT_CALLSTACK_GROUPS travels to the DB so the exit summary uses the same rules */
    const char *rules = pa_agg_config(a)->callstack_groups ? pa_agg_config(a)->callstack_groups : "";
    pa_record_t info = {.kind = PA_SP_MEM_INFO};
    info.u.raw[0] = rules[0] ? pa_agg_intern(a, rules, strlen(rules)) : 0;
    info.u.raw[1] = el > 0 ? pa_agg_intern(a, exe, (size_t)el) : 0;
    info.u.raw[2] = st->failed_allocs;
    info.u.raw[3] = st->unknown_frees;
    pa_agg_spool(a, &info, NULL);
    pa_record_t counts = {.kind = PA_SP_MEM_COUNTS};
    counts.u.raw[0] = dropped;
    pa_agg_spool(a, &counts, NULL);

    pa_dbg("mem", "%zu call chains, %zu live allocations at exit, %llu failed allocs, %llu unknown frees",
           st->nchains, st->live.n, (unsigned long long)st->failed_allocs, (unsigned long long)st->unknown_frees);
    pa_map_free(&st->chain_idx);
    pa_map_free(&st->live);
    free(st->chains);
    free(st->arena);
    free(st->slots);
    free(st->free_slots);
    for (size_t i = 0; i < st->nmods; i++)
        free(st->mods[i].path);
    free(st->mods);
    free(st);
    *pa_agg_source_state(a, PA_AGG_SRC_MEM) = NULL;
}
