/* agg_proj.c - HGTX ranges projected onto the device, online: associates every kernel/copy/fill
 * with the ranges open at its launch (spooled as PA_SP_HGTX_ASSOC) and keeps per-range-name
 * projections for the exit summary (spec asys-stats-reports.txt 2.3.9-2.3.12). */
#include <stdlib.h>
#include <string.h>

#include "../common/pa_ze_api_ids.h"
#include "agg_priv.h"
#include "agg_proj.h"

/* Why snapshots: a device op record reaches the aggregator long after its launch (often through
 * another thread's ring), when the launching thread's HGTX stack has moved on. The launch API
 * record is drained in order with that thread's pushes/pops, so the ranges open at that moment
 * are saved under its correlation id; the op picks them up whenever it arrives. */

typedef struct snap {          /* ranges open at one launch call */
    uint32_t n, cap;
    uint32_t *ids;             /* range ids */
    int consumable;            /* immediate-list append: freed by its one op */
    int pin;                   /* regular-list append or execute: its ranges' instances stay open
                                  while the snapshot lives (its ops may still arrive) */
    uint32_t remaining;        /* execute: device ops still expected (0 = unknown: kept to finish) */
    uint32_t serial;           /* execute: its only regular list, 0 = several */
    int counted;               /* execute: counted in its list's inflight (or multi_inflight) */
} snap_t;

typedef struct inst {          /* projection of one range instance */
    uint64_t pstart, pend;     /* earliest op start, latest op end (ns) */
    uint32_t range_id, nops;
    uint32_t outstanding;      /* launches seen whose op has not arrived */
    uint32_t key_id, style;    /* display name, 0 push/pop 1 start/end (set when closed) */
    int closed, used;
    int open_at_exit;          /* never ended: left out of every statistic (README) */
} inst_t;

#define PA_PROJ_NAME_IVS 64    /* disjoint spans kept per name before folding the oldest */
typedef struct name_acc {      /* per (display name, style): union of instance spans */
    uint64_t iv[PA_PROJ_NAME_IVS][2];
    uint32_t niv;
    uint64_t folded, floor;    /* union length of folded spans; nothing below floor counts twice */
} name_acc_t;

typedef struct pend_op {       /* op drained before its launch record */
    uint64_t op_id, corr, append_corr, api_t1, t0, t1;
    uint32_t tid;
    int graph;
    int barrier;               /* not a projection op: only counts down its execute */
} pend_op_t;

/* Why lists: the ranges open at a regular-list append are needed by every execution of the list,
 * so that snapshot lives until the list is reset or destroyed and the last execution issued
 * before it has delivered all its ops (upper bound: the list's recorded commands, API aux). */
#define PA_PROJ_LIST_TIDS 4
typedef struct plist {         /* one regular list (Graph ID) with append snapshots */
    uint32_t serial, n, cap, nr, rcap;
    uint64_t *corrs;           /* appends since the last reset (snapshots) */
    uint64_t *rcorrs;          /* appends retired by reset/destroy, released once nothing waits */
    uint64_t ret_t0;           /* latest reset/destroy call start (ns) */
    uint32_t inflight;         /* executions of it alone whose ops have not all arrived */
    uint32_t tids[PA_PROJ_LIST_TIDS], ntids; /* threads that executed it (ntids > cap: any) */
    int dead, used;
} plist_t;

#define PA_PROJ_HIST 64        /* recent launches per thread, for ranges ended on another thread */
#define PA_PROJ_EXIT_SCAN 4096 /* start/end slots looked through at a thread's exit, at most */
typedef struct hist { uint64_t corr, api_t0, op_id, t0, t1; int resolved; } hist_t;
typedef struct pthr {
    uint64_t progress;         /* t1 of the last API record drained from this thread */
    hist_t *h;                 /* [PA_PROJ_HIST], on its first launch; freed at its exit */
    uint32_t hn;               /* launches recorded (index = hn % PA_PROJ_HIST) */
    uint32_t nlate;            /* late ranges (below) this thread started */
} pthr_t;

/* Why late ranges: a start/end range belongs to the launches of the thread that started it and of
 * the one that ended it. Rings drain in no cross-thread order, so the starting thread's launches
 * made inside the range may be drained after the range closed (its end came through another
 * thread's ring first). Such a range is kept here, its instance pinned, until that thread has
 * been drained past the range's end. */
typedef struct late { uint64_t t0, t1; uint32_t range_id, tid; } late_t;
#define PA_PROJ_MAX_LATE 65536 /* beyond: counted in "dropped", the range keeps what it has */

typedef struct proj {
    pa_map_t snap_ix; snap_t *snaps; size_t nsnaps, snaps_cap; uint32_t snap_free;
    pa_map_t inst_ix; inst_t *insts; size_t ninsts, insts_cap; uint32_t inst_free;
    pa_map_t name_ix; name_acc_t *names; uint64_t *name_keys; size_t nnames, names_cap;
    pa_map_t thr_ix; pthr_t *thrs; size_t nthrs, thrs_cap;
    uint32_t last_key, last_ix;        /* one-entry cache of thr_ix: tid + 1 (0: none) -> index */
    pend_op_t *pend; size_t npend, pend_cap;
    late_t *late; size_t nlate, late_cap;
    pa_map_t list_ix; plist_t *lists; size_t nlists, lists_cap; uint32_t list_free;
    uint32_t retiring;         /* lists with retired appends waiting */
    uint32_t multi_inflight;   /* multi-list executions whose ops have not all arrived */
    uint64_t op_seq, dev_first, dev_last;
    uint64_t dropped;          /* snapshots refused (bounds/OOM) */
} proj_t;

#define PA_PROJ_MAX_SNAPS ((size_t)1 << 20)

static proj_t *proj_state(pa_agg_t *a)
{
    void **slot = pa_agg_source_state(a, PA_AGG_SRC_PROJ);
    if (slot && !*slot && (*slot = calloc(1, sizeof(proj_t))))
        a->proj_insts = &((proj_t *)*slot)->inst_ix.n;
    return slot ? *slot : NULL;
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

/* ---- per-thread progress and launch history ---- */

static __attribute__((noinline)) pthr_t *thr_get_slow(proj_t *s, uint32_t tid)
{
    uint32_t *ix = pa_map_get(&s->thr_ix, (uint64_t)tid + 1);
    if (ix) {
        s->last_key = tid + 1u;
        s->last_ix = *ix;
        return &s->thrs[*ix];
    }
    if (grow((void **)&s->thrs, &s->thrs_cap, s->nthrs + 1, sizeof *s->thrs) < 0 ||
        pa_map_put(&s->thr_ix, (uint64_t)tid + 1, (uint32_t)s->nthrs) < 0)
        return NULL;
    memset(&s->thrs[s->nthrs], 0, sizeof s->thrs[0]);
    return &s->thrs[s->nthrs++];
}

/* thr_get_slow() behind the one-entry cache, inline: API records come by the million */
static inline pthr_t *thr_get(proj_t *s, uint32_t tid)
{
    if (__builtin_expect(s->last_key == tid + 1u && tid != UINT32_MAX, 1)) /* per-thread batches */
        return &s->thrs[s->last_ix];
    return thr_get_slow(s, tid);
}

/* ---- instances ---- */

static inst_t *inst_get(proj_t *s, uint32_t range_id, int create)
{
    uint32_t *ix = pa_map_get(&s->inst_ix, range_id);
    if (ix)
        return &s->insts[*ix];
    if (!create)
        return NULL;
    uint32_t i;
    if (s->inst_free) {
        i = s->inst_free - 1;
        s->inst_free = s->insts[i].outstanding; /* free-list link kept in outstanding */
    } else {
        if (grow((void **)&s->insts, &s->insts_cap, s->ninsts + 1, sizeof *s->insts) < 0)
            return NULL;
        i = (uint32_t)s->ninsts++;
    }
    if (pa_map_put(&s->inst_ix, range_id, i) < 0)
        return NULL;
    memset(&s->insts[i], 0, sizeof s->insts[i]);
    s->insts[i].range_id = range_id;
    s->insts[i].used = 1;
    return &s->insts[i];
}

/*! pa_proj_union_add() : adds [t0, t1) to a name's union (spans kept sorted and disjoint; when
 *  more than PA_PROJ_NAME_IVS are open the oldest is folded into `folded`). */
static void union_add(name_acc_t *n, uint64_t t0, uint64_t t1)
{
    if (t0 < n->floor)
        t0 = n->floor;
    if (t1 <= t0)
        return;
    uint32_t i = 0;
    while (i < n->niv && n->iv[i][1] < t0)
        i++;
    uint32_t j = i;
    while (j < n->niv && n->iv[j][0] <= t1) { /* merge every span touching [t0, t1) */
        if (n->iv[j][0] < t0) t0 = n->iv[j][0];
        if (n->iv[j][1] > t1) t1 = n->iv[j][1];
        j++;
    }
    if (j - i != 1) { /* shift the tail so exactly one slot holds the merged span */
        uint32_t tail = n->niv - j;
        if (i + 1 + tail > PA_PROJ_NAME_IVS) { /* full: fold the oldest span */
            n->folded += n->iv[0][1] - n->iv[0][0];
            n->floor = n->iv[0][1];
            memmove(n->iv[0], n->iv[1], (size_t)(n->niv - 1) * sizeof n->iv[0]);
            n->niv--;
            union_add(n, t0, t1);
            return;
        }
        memmove(n->iv[i + 1], n->iv[j], (size_t)tail * sizeof n->iv[0]);
        n->niv = i + 1 + tail;
    }
    n->iv[i][0] = t0;
    n->iv[i][1] = t1;
}

static uint64_t union_total(const name_acc_t *n)
{
    uint64_t t = n->folded;
    for (uint32_t i = 0; i < n->niv; i++)
        t += n->iv[i][1] - n->iv[i][0];
    return t;
}

static name_acc_t *name_get(proj_t *s, uint32_t key_id, uint32_t style)
{
    uint64_t key = (uint64_t)style << 32 | key_id;
    uint32_t *ix = pa_map_get(&s->name_ix, key);
    if (ix)
        return &s->names[*ix];
    size_t c = s->names_cap;
    if (grow((void **)&s->names, &s->names_cap, s->nnames + 1, sizeof *s->names) < 0)
        return NULL;
    if (s->names_cap != c) {
        size_t c2 = c;
        if (grow((void **)&s->name_keys, &c2, s->names_cap, sizeof *s->name_keys) < 0)
            return NULL;
    }
    if (pa_map_put(&s->name_ix, key, (uint32_t)s->nnames) < 0)
        return NULL;
    memset(&s->names[s->nnames], 0, sizeof s->names[0]);
    s->name_keys[s->nnames] = key;
    return &s->names[s->nnames++];
}

/* A closed instance without outstanding launches is final: its projected duration becomes a
 * statistics sample and its span joins the name's union; then it is forgotten. */
static void inst_try_final(pa_agg_t *a, proj_t *s, inst_t *in, int force)
{
    if (!in->closed || (in->outstanding && !force))
        return;
    if (in->nops && !in->open_at_exit) {
        pa_agg_stat_add_id(a, PA_CAT_HGTX_PROJ, PA_PROJ_TAG_DUR | in->style, in->key_id,
                           in->pend - in->pstart);
        pa_agg_stat_add_id(a, PA_CAT_HGTX_PROJ, PA_PROJ_TAG_OPS | in->style, in->key_id, in->nops);
        name_acc_t *n = name_get(s, in->key_id, in->style);
        if (n)
            union_add(n, in->pstart, in->pend);
    }
    uint32_t i = (uint32_t)(in - s->insts);
    pa_map_del(&s->inst_ix, in->range_id);
    in->used = 0;
    in->outstanding = s->inst_free;
    s->inst_free = i + 1;
}

/* ---- association ---- */

/* Spools one association row; `count` adds the op to the range instance's online projection
 * (graph mapping on, the summary's mode: every how, but a (range, op) pair only once). */
static void assoc_emit(pa_agg_t *a, proj_t *s, uint32_t range_id, uint64_t op_id, uint64_t t0,
                       uint64_t t1, uint32_t how, int settle, int count)
{
    pa_record_t r = { .kind = PA_SP_HGTX_ASSOC, .t0 = t0, .t1 = t1 };
    r.u.raw[0] = range_id;
    r.u.raw[1] = op_id;
    r.u.raw[2] = how;
    pa_agg_spool(a, &r, NULL);
    if (!count)
        return;
    inst_t *in = inst_get(s, range_id, 1);
    if (!in)
        return;
    if (!in->nops || t0 < in->pstart)
        in->pstart = t0;
    if (!in->nops || t1 > in->pend)
        in->pend = t1;
    in->nops++;
    if (settle && in->outstanding)
        in->outstanding--;
    inst_try_final(a, s, in, 0);
}

static snap_t *snap_find(proj_t *s, uint64_t corr)
{
    uint32_t *ix = corr ? pa_map_get(&s->snap_ix, corr) : NULL;
    return ix ? &s->snaps[*ix] : NULL;
}

static int snap_has(const snap_t *sn, uint32_t range_id)
{
    for (uint32_t i = 0; sn && i < sn->n; i++)
        if (sn->ids[i] == range_id)
            return 1;
    return 0;
}

static void snap_free(proj_t *s, uint64_t corr, snap_t *sn)
{
    pa_map_del(&s->snap_ix, corr);
    free(sn->ids);
    memset(sn, 0, sizeof *sn);
    sn->cap = s->snap_free; /* free-list link */
    s->snap_free = (uint32_t)(sn - s->snaps) + 1;
}

static snap_t *snap_new(proj_t *s, uint64_t corr)
{
    snap_t *sn = snap_find(s, corr);
    if (sn)
        return sn;
    if (s->snap_ix.n >= PA_PROJ_MAX_SNAPS) {
        s->dropped++;
        return NULL;
    }
    uint32_t i;
    if (s->snap_free) {
        i = s->snap_free - 1;
        s->snap_free = s->snaps[i].cap;
    } else {
        if (grow((void **)&s->snaps, &s->snaps_cap, s->nsnaps + 1, sizeof *s->snaps) < 0)
            return NULL;
        i = (uint32_t)s->nsnaps++;
    }
    if (pa_map_put(&s->snap_ix, corr, i) < 0)
        return NULL;
    memset(&s->snaps[i], 0, sizeof s->snaps[i]);
    return &s->snaps[i];
}

static void snap_push(proj_t *s, snap_t *sn, uint32_t range_id)
{
    for (uint32_t i = 0; i < sn->n; i++)
        if (sn->ids[i] == range_id)
            return;
    size_t cap = sn->cap;
    if (grow((void **)&sn->ids, &cap, sn->n + 1, sizeof *sn->ids) < 0) {
        s->dropped++;
        return;
    }
    sn->cap = (uint32_t)cap;
    sn->ids[sn->n++] = range_id;
    if (sn->consumable || sn->pin) { /* its op will settle it, or finish will */
        inst_t *in = inst_get(s, range_id, 1);
        if (in)
            in->outstanding++;
    }
}

/* Releases a pinning snapshot: its instances may now be final. */
static void snap_unpin(pa_agg_t *a, proj_t *s, uint64_t corr, snap_t *sn)
{
    for (uint32_t i = 0; i < sn->n; i++) {
        inst_t *in = inst_get(s, sn->ids[i], 0);
        if (in && in->outstanding) {
            in->outstanding--;
            inst_try_final(a, s, in, 0);
        }
    }
    snap_free(s, corr, sn);
}

/* ---- regular lists: append snapshots live until reset/destroy and the executions before ---- */

static plist_t *list_get(proj_t *s, uint32_t serial, int create)
{
    uint32_t *ix = serial ? pa_map_get(&s->list_ix, serial) : NULL;
    if (ix || !create || !serial)
        return ix ? &s->lists[*ix] : NULL;
    uint32_t i;
    if (s->list_free) {
        i = s->list_free - 1;
        s->list_free = s->lists[i].serial; /* free-list link kept in serial */
    } else {
        if (grow((void **)&s->lists, &s->lists_cap, s->nlists + 1, sizeof *s->lists) < 0)
            return NULL;
        i = (uint32_t)s->nlists++;
    }
    if (pa_map_put(&s->list_ix, serial, i) < 0)
        return NULL;
    memset(&s->lists[i], 0, sizeof s->lists[i]);
    s->lists[i].serial = serial;
    s->lists[i].used = 1;
    return &s->lists[i];
}

static int corr_push(uint64_t **v, uint32_t *n, uint32_t *cap, uint64_t corr)
{
    size_t c = *cap;
    if (grow((void **)v, &c, (size_t)*n + 1, sizeof **v) < 0)
        return -1;
    *cap = (uint32_t)c;
    (*v)[(*n)++] = corr;
    return 0;
}

static void list_maybe_del(proj_t *s, plist_t *l)
{
    if (!l->dead || l->n || l->nr || l->inflight)
        return;
    pa_map_del(&s->list_ix, l->serial);
    free(l->corrs);
    free(l->rcorrs);
    memset(l, 0, sizeof *l);
    l->serial = s->list_free;
    s->list_free = (uint32_t)(l - s->lists) + 1;
}

/* Every thread that executed the list has been drained past its reset/destroy: no execution of
 * the retired recording is still to come (threads that never executed it do not matter). */
static int list_quiet(proj_t *s, const plist_t *l)
{
    if (l->ntids > PA_PROJ_LIST_TIDS) {
        for (size_t i = 0; i < s->nthrs; i++)
            if (s->thrs[i].progress < l->ret_t0)
                return 0;
        return 1;
    }
    for (uint32_t i = 0; i < l->ntids; i++) {
        pthr_t *th = thr_get(s, l->tids[i]);
        if (th && th->progress < l->ret_t0)
            return 0;
    }
    return 1;
}

static void list_try_release(pa_agg_t *a, proj_t *s, plist_t *l)
{
    if (!l->nr || l->inflight || s->multi_inflight || !list_quiet(s, l))
        return;
    for (uint32_t i = 0; i < l->nr; i++) {
        snap_t *sn = snap_find(s, l->rcorrs[i]);
        if (sn)
            snap_unpin(a, s, l->rcorrs[i], sn);
    }
    l->nr = 0;
    s->retiring--;
    list_maybe_del(s, l);
}

static void lists_check(pa_agg_t *a, proj_t *s)
{
    for (size_t i = 0; s->retiring && i < s->nlists; i++)
        if (s->lists[i].used && s->lists[i].nr)
            list_try_release(a, s, &s->lists[i]);
}

/* zeCommandListReset/Destroy of list `serial`: its appends so far are retired. */
static void list_retire(pa_agg_t *a, proj_t *s, const pa_record_t *rec, int destroy)
{
    plist_t *l = list_get(s, (uint32_t)rec->u.ze.aux[0], 0);
    if (!l)
        return;
    for (uint32_t i = 0; i < l->n; i++)
        if (corr_push(&l->rcorrs, &l->nr, &l->rcap, l->corrs[i]) == 0 && l->nr == 1)
            s->retiring++;
    l->n = 0;
    if (rec->t0 > l->ret_t0)
        l->ret_t0 = rec->t0;
    l->dead |= destroy;
    if (l->nr)
        list_try_release(a, s, l);
    else
        list_maybe_del(s, l);
}

/* An execute's ops counted down: when all arrived its snapshot goes (or at finish). */
static void exec_track(proj_t *s, snap_t *sn, const pa_record_t *rec)
{
    uint64_t nops = rec->u.ze.aux[0];
    sn->remaining = nops > UINT32_MAX ? 0 : (uint32_t)nops;
    sn->serial = (uint32_t)rec->u.ze.aux[1];
    if (!sn->remaining)
        return;
    plist_t *l = list_get(s, sn->serial, 0);
    if (l) {
        l->inflight++;
        uint32_t k = 0, m = l->ntids < PA_PROJ_LIST_TIDS ? l->ntids : PA_PROJ_LIST_TIDS;
        while (k < m && l->tids[k] != rec->tid)
            k++;
        if (k == m && l->ntids < PA_PROJ_LIST_TIDS)
            l->tids[l->ntids++] = rec->tid;
        else if (k == m)
            l->ntids = PA_PROJ_LIST_TIDS + 1; /* too many: wait for every thread */
        sn->counted = 1;
    } else if (!sn->serial) {
        s->multi_inflight++;
        sn->counted = 1;
    }
}

static void exec_done(pa_agg_t *a, proj_t *s, uint64_t corr, snap_t *sn)
{
    uint32_t serial = sn->serial;
    int counted = sn->counted;
    snap_unpin(a, s, corr, sn);
    if (!counted)
        return;
    plist_t *l = list_get(s, serial, 0);
    if (serial && l && l->inflight)
        l->inflight--;
    else if (!serial && s->multi_inflight)
        s->multi_inflight--;
    lists_check(a, s);
    if (l)
        list_maybe_del(s, l);
}

static int is_launch(uint32_t api)
{
    switch (api) {
    case PA_ZE_API_CommandListAppendLaunchKernel: case PA_ZE_API_CommandListAppendLaunchCooperativeKernel:
    case PA_ZE_API_CommandListAppendLaunchKernelIndirect:
    case PA_ZE_API_CommandListAppendLaunchMultipleKernelsIndirect:
    case PA_ZE_API_CommandListAppendMemoryCopy: case PA_ZE_API_CommandListAppendMemoryCopyRegion:
    case PA_ZE_API_CommandListAppendMemoryCopyFromContext: case PA_ZE_API_CommandListAppendMemoryFill:
        return 1;
    case PA_ZE_API_CommandQueueExecuteCommandLists:
        return 2;
    default:
        return 0;
    }
}

static void op_resolve(pa_agg_t *a, proj_t *s, const pend_op_t *o);

/* Late ranges of thread `tid` drained past their end (progress ns; UINT64_MAX: all of every
 * thread) no longer wait for launches: their instances may be final. */
static void late_release(pa_agg_t *a, proj_t *s, uint32_t tid, uint64_t progress)
{
    pthr_t *th = progress == UINT64_MAX ? NULL : thr_get(s, tid);
    if (th && !th->nlate)
        return;
    for (size_t i = 0; i < s->nlate;) {
        late_t l = s->late[i];
        if (progress != UINT64_MAX && (l.tid != tid || progress < l.t1)) {
            i++;
            continue;
        }
        s->late[i] = s->late[--s->nlate];
        if (th)
            th->nlate--;
        inst_t *in = inst_get(s, l.range_id, 0);
        if (in && in->outstanding) {
            in->outstanding--;
            inst_try_final(a, s, in, 0);
        }
    }
}

/* pa_agg_proj_api() past its common case, out of line: that one stays a short leaf */
static __attribute__((noinline)) void proj_api_rest(pa_agg_t *a, proj_t *s, pthr_t *th, const pa_record_t *rec,
                                                    int kind)
{
    /* regular-list append (aux[0] = its Graph ID): pinned until the list is reset/destroyed */
    uint32_t serial = kind == 1 ? (uint32_t)rec->u.ze.aux[0] : 0;
    if ((rec->u.ze.api == PA_ZE_API_CommandListReset || rec->u.ze.api == PA_ZE_API_CommandListDestroy) &&
        rec->u.ze.result == 0 && rec->u.ze.aux[0])
        list_retire(a, s, rec, rec->u.ze.api == PA_ZE_API_CommandListDestroy);
    if (kind && rec->u.ze.result == 0) {
        const pa_agg_open_range_t *st;
        size_t depth = pa_agg_hgtx_stack(a, rec->tid, &st);
        snap_t *sn = NULL;
        for (size_t i = 0; i < depth; i++) { /* push/pop: the whole stack, outermost first */
            if (!sn && !(sn = snap_new(s, rec->u.ze.corr_id)))
                break;
            sn->consumable = kind == 1 && !serial;
            sn->pin = kind == 2 || serial;
            snap_push(s, sn, st[i].range_id);
        }
        /* start/end ranges this thread started and has not seen ended */
        for (size_t i = 0; a->se_map.n && i < a->se_n; i++) {
            const struct pa_agg_se *e = &a->se[i];
            uint32_t *ix = e->id ? pa_map_get(&a->se_map, e->id) : NULL;
            if (!ix || *ix != i || e->is_end || e->tid != rec->tid || e->t > rec->t0)
                continue;
            if (!sn && !(sn = snap_new(s, rec->u.ze.corr_id)))
                break;
            sn->consumable = kind == 1 && !serial;
            sn->pin = kind == 2 || serial;
            snap_push(s, sn, e->range_id);
        }
        /* start/end ranges this thread started that closed before this launch was drained */
        for (size_t i = 0; th->nlate && i < s->nlate; i++) {
            const late_t *l = &s->late[i];
            if (l->tid != rec->tid || rec->t0 < l->t0 || rec->t0 > l->t1)
                continue;
            if (!sn && !(sn = snap_new(s, rec->u.ze.corr_id)))
                break;
            sn->consumable = kind == 1 && !serial;
            sn->pin = kind == 2 || serial;
            snap_push(s, sn, l->range_id);
        }
        if (sn && serial) { /* remembered by its list */
            plist_t *l = list_get(s, serial, 1);
            if (!l || corr_push(&l->corrs, &l->n, &l->cap, rec->u.ze.corr_id) < 0)
                s->dropped++; /* kept until finish */
        }
        if (kind == 2 && rec->u.ze.aux[0]) { /* counted down by its ops when anything waits on them */
            plist_t *l = list_get(s, (uint32_t)rec->u.ze.aux[1], 0);
            if (!sn && ((l && l->n) || (!rec->u.ze.aux[1] && s->list_ix.n)))
                if ((sn = snap_new(s, rec->u.ze.corr_id)))
                    sn->pin = 1;
            if (sn)
                exec_track(s, sn, rec);
        }
        if (kind == 1 && !th->h)
            th->h = calloc(PA_PROJ_HIST, sizeof *th->h); /* NULL: nothing remembered */
        if (kind == 1 && th->h) { /* remembered for start/end ranges ended by this thread */
            hist_t *h = &th->h[th->hn++ % PA_PROJ_HIST];
            memset(h, 0, sizeof *h);
            h->corr = rec->u.ze.corr_id;
            h->api_t0 = rec->t0;
        }
    }
    if (rec->t1 > th->progress)
        th->progress = rec->t1;
    late_release(a, s, rec->tid, th->progress);
    /* ops that arrived before this thread's launch records can now be resolved */
    for (size_t i = 0; i < s->npend;) {
        if (s->pend[i].tid == rec->tid && s->pend[i].api_t1 <= th->progress) {
            pend_op_t o = s->pend[i];
            s->pend[i] = s->pend[--s->npend];
            op_resolve(a, s, &o);
        } else {
            i++;
        }
    }
    if (s->retiring)
        lists_check(a, s);
}

void pa_agg_proj_api(pa_agg_t *a, const pa_record_t *rec)
{
    proj_t *s = a->src_state[PA_AGG_SRC_PROJ]; /* proj_state() without its call once it exists */
    if (__builtin_expect(!s, 0))
        s = proj_state(a);
    pthr_t *th = s ? thr_get(s, rec->tid) : NULL;
    if (!th)
        return;
    int kind = is_launch(rec->u.ze.api);
    /* the calls that come by the million (set an argument, query, synchronize) with nothing
     * waiting on this thread's progress: only the progress moves (what the rest below does) */
    if (!kind && !th->nlate && !s->npend && !s->retiring && rec->u.ze.api != PA_ZE_API_CommandListReset &&
        rec->u.ze.api != PA_ZE_API_CommandListDestroy) {
        if (rec->t1 > th->progress)
            th->progress = rec->t1;
        if (th->progress != UINT64_MAX) /* (late_release's "release all" value) */
            return;
    }
    proj_api_rest(a, s, th, rec, kind);
}

static void hist_mark(proj_t *s, const pend_op_t *o)
{
    pthr_t *th = thr_get(s, o->tid);
    for (uint32_t i = 0; th && th->h && i < PA_PROJ_HIST; i++)
        if (th->h[i].corr == o->corr && !th->h[i].resolved) {
            th->h[i].resolved = 1;
            th->h[i].op_id = o->op_id;
            th->h[i].t0 = o->t0;
            th->h[i].t1 = o->t1;
            return;
        }
}

static void op_resolve(pa_agg_t *a, proj_t *s, const pend_op_t *o)
{
    if (o->barrier) { /* no association (spec: kernels, copies, fills); an execute expects it */
        snap_t *x = o->graph ? snap_find(s, o->corr) : NULL;
        if (x && x->remaining && !--x->remaining)
            exec_done(a, s, o->corr, x);
        return;
    }
    if (o->graph) { /* graph mapping is additive: both sets count, a range in both once */
        snap_t *g = snap_find(s, o->append_corr);   /* ranges open at the append */
        for (uint32_t i = 0; g && i < g->n; i++)
            assoc_emit(a, s, g->ids[i], o->op_id, o->t0, o->t1, PA_PROJ_VIA_GRAPH, 0, 1);
        snap_t *x = snap_find(s, o->corr);          /* ranges open at the execute */
        for (uint32_t i = 0; x && i < x->n; i++)
            assoc_emit(a, s, x->ids[i], o->op_id, o->t0, o->t1, PA_PROJ_VIA_EXEC, 0,
                       !snap_has(g, x->ids[i]));
        if (x && x->remaining && !--x->remaining)
            exec_done(a, s, o->corr, x);
        return;
    }
    snap_t *sn = snap_find(s, o->corr);
    if (sn) {
        for (uint32_t i = 0; i < sn->n; i++)
            assoc_emit(a, s, sn->ids[i], o->op_id, o->t0, o->t1, PA_PROJ_DIRECT, sn->consumable, 1);
        snap_free(s, o->corr, sn);
    }
    hist_mark(s, o);
}

void pa_agg_proj_op(pa_agg_t *a, const pa_record_t *rec, const pa_ze_op_t *op)
{
    proj_t *s = proj_state(a);
    if (!s)
        return;
    pend_op_t o = { .op_id = ++s->op_seq, .corr = op->corr_id, .append_corr = op->append_corr,
                    .api_t1 = op->api_t1, .t0 = rec->t0, .t1 = rec->t1 > rec->t0 ? rec->t1 : rec->t0,
                    .tid = rec->tid, .graph = op->graph_id != 0, .barrier = op->kind == PA_ZE_OP_BARRIER };
    if (!o.barrier && (!s->dev_first || o.t0 < s->dev_first))
        s->dev_first = o.t0;
    if (!o.barrier && o.t1 > s->dev_last)
        s->dev_last = o.t1;
    pthr_t *th = thr_get(s, rec->tid);
    if (th && th->progress >= o.api_t1) {
        op_resolve(a, s, &o);
        return;
    }
    if (grow((void **)&s->pend, &s->pend_cap, s->npend + 1, sizeof *s->pend) < 0) {
        s->dropped++;
        return;
    }
    s->pend[s->npend++] = o;
}

/* "domain:name" display id, the key hgtx_sum and the reports use. */
static uint32_t display_key(pa_agg_t *a, uint32_t name_id, uint32_t domain_id)
{
    if (!domain_id)
        return name_id;
    size_t dl, nl;
    const char *d = pa_agg_string(a, domain_id, &dl), *n = pa_agg_string(a, name_id, &nl);
    if (d && !dl) /* a domain created without a name (NULL, ""): the name alone, no ":" */
        return name_id;
    char *buf = d && n ? malloc(dl + nl + 1) : NULL;
    if (!buf)
        return name_id;
    memcpy(buf, d, dl);
    buf[dl] = ':';
    memcpy(buf + dl + 1, n, nl);
    uint32_t id = pa_agg_intern(a, buf, dl + nl + 1);
    free(buf);
    return id ? id : name_id;
}

void pa_agg_proj_range(pa_agg_t *a, const pa_record_t *r)
{
    proj_t *s = a->src_state[PA_AGG_SRC_PROJ];
    /* a push/pop range with no instance at all (nothing launched in any range): nothing below
     * applies (what follows needs start/end or this range's instance) */
    if (s && !(r->flags & PA_RF_STARTEND) && !s->inst_ix.n)
        return;
    if (!s && !(s = proj_state(a)))
        return;
    uint32_t rid = r->u.range.range_id;
    int style = (r->flags & PA_RF_STARTEND) ? 1 : 0;
    /* start/end ended on another thread: that thread's launches inside the range count too */
    if (style && r->u.range.end_tid && r->u.range.end_tid != r->tid) {
        pthr_t *th = thr_get(s, r->u.range.end_tid);
        for (uint32_t i = 0; th && th->h && i < PA_PROJ_HIST; i++) {
            hist_t *h = &th->h[i];
            if (!h->corr || h->api_t0 < r->t0 || h->api_t0 > r->t1)
                continue;
            if (h->resolved) {
                assoc_emit(a, s, rid, h->op_id, h->t0, h->t1, PA_PROJ_DIRECT, 0, 1);
            } else {
                snap_t *sn = snap_new(s, h->corr);
                if (sn) {
                    sn->consumable = 1;
                    snap_push(s, sn, rid);
                }
            }
        }
    }
    int open_at_exit = (r->flags & PA_RF_UNTERMINATED) != 0;
    /* start/end ended on another thread whose starting thread may still have launches inside it in
     * its ring (ended on the starting thread: its launches were all drained before the end) */
    pthr_t *st = style && !open_at_exit && r->u.range.end_tid != r->tid ? thr_get(s, r->tid) : NULL;
    if (st && st->progress < r->t1) {
        inst_t *pin = s->nlate < PA_PROJ_MAX_LATE &&
                      grow((void **)&s->late, &s->late_cap, s->nlate + 1, sizeof *s->late) == 0
                      ? inst_get(s, rid, 1) : NULL;
        if (pin) {
            pin->outstanding++;
            st->nlate++;
            s->late[s->nlate++] = (late_t){ .t0 = r->t0, .t1 = r->t1, .range_id = rid, .tid = r->tid };
        } else {
            s->dropped++;
        }
    }
    inst_t *in = inst_get(s, rid, 0);
    if (!in)
        return; /* nothing launched in it (yet: a graph recorded in it creates it) */
    in->closed = 1;
    in->open_at_exit = open_at_exit;
    in->style = (uint32_t)style;
    in->key_id = display_key(a, r->u.range.name_id, r->u.range.domain_id);
    inst_try_final(a, s, in, 0);
}

void pa_agg_proj_thread_exit(pa_agg_t *a, uint32_t tid)
{
    proj_t *s = a->src_state[PA_AGG_SRC_PROJ];
    uint32_t *ix = s ? pa_map_get(&s->thr_ix, (uint64_t)tid + 1) : NULL;
    pthr_t *th = ix ? &s->thrs[*ix] : NULL;
    if (!th || !th->h)
        return;
    /* its history serves ranges it ended; one whose end it drained before the start still has
     * its range to come (an early end in flight): kept for that one. The look is bounded: with
     * very many start/end ids in flight the history is kept (a thread exit must stay cheap). */
    if (a->se_n > PA_PROJ_EXIT_SCAN)
        return;
    for (size_t i = 0; a->se_map.n && i < a->se_n; i++) {
        const struct pa_agg_se *e = &a->se[i];
        uint32_t *sx = e->id ? pa_map_get(&a->se_map, e->id) : NULL;
        if (sx && *sx == i && e->is_end && e->tid == tid)
            return;
    }
    free(th->h);
    th->h = NULL;
    th->hn = 0;
}

void pa_agg_proj_finish(pa_agg_t *a)
{
    proj_t *s = proj_state(a);
    if (!s)
        return;
    /* projection state still held (bounded by open ranges, in-flight ops and live lists) */
    pa_agg_stat_add(a, PA_CAT_HGTX_PROJ, PA_PROJ_TAG_LIVE, "live at finish", 14,
                    (uint64_t)s->snap_ix.n + s->inst_ix.n);
    for (size_t i = 0; i < s->npend; i++) /* every launch record has been drained by now */
        op_resolve(a, s, &s->pend[i]);
    s->npend = 0;
    late_release(a, s, 0, UINT64_MAX);
    for (size_t i = 0; i < s->ninsts; i++) /* graph-mapped ones and ops never collected */
        if (s->insts[i].used)
            inst_try_final(a, s, &s->insts[i], 1);
    for (size_t i = 0; i < s->nnames; i++) {
        uint32_t key = (uint32_t)s->name_keys[i], style = (uint32_t)(s->name_keys[i] >> 32);
        pa_agg_stat_add_id(a, PA_CAT_HGTX_PROJ, PA_PROJ_TAG_ACTIVE | style, key, union_total(&s->names[i]));
    }
    if (s->dev_last > s->dev_first)
        pa_agg_stat_add(a, PA_CAT_HGTX_PROJ, PA_PROJ_TAG_SPAN, "device span", 11,
                        s->dev_last - s->dev_first);
    if (s->dropped)
        pa_agg_stat_add(a, PA_CAT_HGTX_PROJ, PA_PROJ_TAG_DROPPED, "dropped", 7, s->dropped);
    for (size_t i = 0; i < s->nsnaps; i++)
        free(s->snaps[i].ids);
    free(s->snaps);
    free(s->insts);
    free(s->names);
    free(s->name_keys);
    for (size_t i = 0; i < s->nthrs; i++)
        free(s->thrs[i].h);
    free(s->thrs);
    free(s->pend);
    free(s->late);
    for (size_t i = 0; i < s->nlists; i++) {
        free(s->lists[i].corrs);
        free(s->lists[i].rcorrs);
    }
    free(s->lists);
    pa_map_free(&s->list_ix);
    pa_map_free(&s->snap_ix);
    pa_map_free(&s->inst_ix);
    pa_map_free(&s->name_ix);
    pa_map_free(&s->thr_ix);
    free(s);
    *pa_agg_source_state(a, PA_AGG_SRC_PROJ) = NULL;
    a->proj_insts = NULL;
}
