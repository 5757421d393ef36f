/* itt.c - the ITT (ittnotify) calls the agent maps onto HGTX: domains, string handles, tasks,
 * overlapped tasks, regions, frames, markers, legacy marks and events, thread names, clocks. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <profagent/hgtx.h>
#include <sched.h>

#include "collector.h"
#include "itt_internal.h"

/*
 * Mapping (documented in docs/itt.md):
 *   domain                      -> HGTX domain (same name: same domain)
 *   task begin/end (+_ex, _fn)  -> push/pop range of that domain on the calling thread
 *   overlapped task, region     -> start/end range keyed by (domain, __itt_id)
 *   frame begin/end/submit (v3) -> start/end range "frame" keyed by (domain, id)
 *   marker (+_ex), legacy mark  -> HGTX mark
 *   legacy event start/end      -> push/pop on the default domain
 *   thread_set_name             -> the thread's name
 * Hot path (task begin/end): TLS, one relaxed load of the collection mask, the HGTX emission.
 */

#define PA_ITT_NAME_MAX HGTX_MESSAGE_MAX

_Atomic int pa_itt_state;
_Atomic uint64_t pa_itt_counters[PA_ITT_NCOUNTERS];

static atomic_flag itt_lock_flag = ATOMIC_FLAG_INIT;

void pa_itt_lock(void)
{
    while (atomic_flag_test_and_set_explicit(&itt_lock_flag, memory_order_acquire))
        sched_yield();
}

void pa_itt_unlock(void) { atomic_flag_clear_explicit(&itt_lock_flag, memory_order_release); }

/* ---- domains and string handles: created once per name, never freed ---- */

#define PA_ITT_HASH 1024u

static uint32_t str_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h & (PA_ITT_HASH - 1);
}

/* Name -> object, under the lock. The objects' own `next` belongs to the static part's lists,
 * so our index is made of separate small nodes. */
typedef struct pa_itt_node { void *obj; const char *name; struct pa_itt_node *next; } pa_itt_node_t;
static pa_itt_node_t *dom_nodes[PA_ITT_HASH], *str_nodes[PA_ITT_HASH];

static void *node_find(pa_itt_node_t **tab, const char *name)
{
    for (pa_itt_node_t *n = tab[str_hash(name)]; n; n = n->next)
        if (strcmp(n->name, name) == 0)
            return n->obj;
    return NULL;
}

static void node_add(pa_itt_node_t **tab, void *obj, const char *name)
{
    pa_itt_node_t *n = malloc(sizeof *n);
    if (!n)
        return;
    n->obj = obj;
    n->name = name;
    uint32_t h = str_hash(name);
    n->next = tab[h];
    tab[h] = n;
}

void pa_itt_adopt(pa_itt_domain_t *domains, pa_itt_string_handle_t *strings)
{
    pa_guard_enter();
    pa_itt_lock();
    for (pa_itt_domain_t *d = domains; d; d = d->next)
        if (d->nameA && !node_find(dom_nodes, d->nameA))
            node_add(dom_nodes, d, d->nameA);
    for (pa_itt_string_handle_t *s = strings; s; s = s->next)
        if (s->strA && !node_find(str_nodes, s->strA))
            node_add(str_nodes, s, s->strA);
    pa_itt_unlock();
    pa_guard_leave();
}

static pa_itt_domain_t *itt_domain_create(const char *name)
{
    if (!name)
        return NULL;
    pa_guard_enter();
    pa_itt_lock();
    pa_itt_domain_t *d = node_find(dom_nodes, name);
    if (!d && (d = calloc(1, sizeof *d)) != NULL) {
        d->nameA = strdup(name);
        if (!d->nameA) {
            free(d);
            d = NULL;
        } else {
            d->flags = 1;
            node_add(dom_nodes, d, d->nameA);
        }
    }
    pa_itt_unlock();
    pa_guard_leave();
    return d;
}

static pa_itt_string_handle_t *itt_string_handle_create(const char *name)
{
    if (!name)
        return NULL;
    pa_guard_enter();
    pa_itt_lock();
    pa_itt_string_handle_t *s = node_find(str_nodes, name);
    if (!s && (s = calloc(1, sizeof *s)) != NULL) {
        s->strA = strdup(name);
        if (!s->strA) {
            free(s);
            s = NULL;
        } else {
            node_add(str_nodes, s, s->strA);
        }
    }
    pa_itt_unlock();
    pa_guard_leave();
    return s;
}

/* The HGTX domain of an ITT domain, assigned on first use while collecting (the domain may
 * have been created before the session started, or by the static part); its record goes to
 * this thread's ring, created first (ring creation is refused inside guarded code). NULL:
 * counted, the default domain. */
static uint32_t dom_id_slow(const pa_itt_domain_t *d)
{
    pa_itt_domain_t *w = (pa_itt_domain_t *)d;
    if (!pa_agent_collecting(PA_SRC_ITT) || !pa_thread_ring())
        return 0; /* no session (yet, or any more): nothing is recorded either */
    pa_itt_lock();
    uintptr_t v = (uintptr_t)__atomic_load_n(&w->extra2, __ATOMIC_ACQUIRE);
    if (!v) {
        v = pa_hgtx_domain_new(d->nameA ? d->nameA : "");
        __atomic_store_n(&w->extra2, (void *)v, __ATOMIC_RELEASE);
    }
    pa_itt_unlock();
    if (v < 256)
        pa_tls.itt_dom_seen[v >> 6] |= 1ull << (v & 63);
    return (uint32_t)v;
}

/* The aggregator drains rings in any order: a thread's first use of a domain repeats the
 * domain's name record in its own ring, so its ranges never arrive before the name. */
static uint32_t dom_seen_slow(const pa_itt_domain_t *d, uint32_t v)
{
    if (pa_agent_collecting(PA_SRC_ITT) && pa_thread_ring()) {
        pa_hgtx_domain_name(v, d->nameA ? d->nameA : "");
        pa_tls.itt_dom_seen[v >> 6] |= 1ull << (v & 63);
    }
    return v;
}

static inline uint32_t dom_id(const pa_itt_domain_t *d)
{
    if (PA_UNLIKELY(!d)) {
        pa_itt_count(PA_ITT_NULL_DOMAIN);
        return 0;
    }
    uintptr_t v = (uintptr_t)__atomic_load_n(&d->extra2, __ATOMIC_ACQUIRE);
    if (PA_UNLIKELY(!v))
        return dom_id_slow(d);
    if (PA_UNLIKELY(v < 256 && !(pa_tls.itt_dom_seen[v >> 6] >> (v & 63) & 1)))
        return dom_seen_slow(d, (uint32_t)v);
    return (uint32_t)v;
}

/* Name bytes of a string handle; the length is measured once and kept in extra1. */
static inline const char *sh_name(const pa_itt_string_handle_t *s, size_t *len)
{
    if (PA_UNLIKELY(!s || !s->strA)) {
        pa_itt_count(PA_ITT_NULL_NAME);
        *len = 0;
        return "";
    }
    int l1 = __atomic_load_n(&s->extra1, __ATOMIC_RELAXED);
    if (PA_LIKELY(l1 > 0)) {
        *len = (size_t)l1 - 1;
        return s->strA;
    }
    size_t n = strnlen(s->strA, PA_ITT_NAME_MAX + 1);
    if (n < 0x7fffffff)
        __atomic_store_n(&((pa_itt_string_handle_t *)s)->extra1, (int)n + 1, __ATOMIC_RELAXED);
    *len = n;
    return s->strA;
}

/* Collecting ITT now (session running, `itt` in PROFAGENT_TRACE, not paused, not on an agent
 * thread). A call refused only because of pause/detach is counted. */
static inline int itt_on(void)
{
    if (!pa_agent_collecting(PA_SRC_ITT))
        return 0;
    if (PA_UNLIKELY(atomic_load_explicit(&pa_itt_state, memory_order_relaxed) != PA_ITT_RUNNING)) {
        pa_itt_count(PA_ITT_PAUSED_CALLS);
        return 0;
    }
    return 1;
}

/* ---- timestamps and clock domains ---- */

typedef struct pa_itt_clock {
    pa_itt_clock_domain_t pub;  /* what the application sees (first member) */
    uint64_t ref_ns;            /* our clock when pub.info was read */
    struct pa_itt_clock *all;
} pa_itt_clock_t;
static pa_itt_clock_t *clocks;

static unsigned long long itt_get_timestamp(void) { return pa_clock_ns(); }

/* A timestamp of clock domain `c` (NULL: __itt_get_timestamp's ns) in our ns; 0 = now for
 * __itt_timestamp_none or a clock without a frequency. Ticks map linearly from the clock's
 * base at creation (or reset) time. */
static uint64_t ts_ns(const pa_itt_clock_domain_t *c, unsigned long long ts)
{
    if (ts == PA_ITT_TIMESTAMP_NONE)
        return 0;
    if (!c)
        return ts;
    const pa_itt_clock_t *k = (const pa_itt_clock_t *)c;
    if (!c->info.clock_freq)
        return 0;
    long double d = ((long double)ts - (long double)c->info.clock_base) * 1e9L / (long double)c->info.clock_freq;
    long double v = (long double)k->ref_ns + d;
    return v < 1 ? 1 : (uint64_t)v;
}

static pa_itt_clock_domain_t *itt_clock_domain_create(pa_itt_get_clock_info_fn fn, void *data)
{
    pa_guard_enter();
    pa_itt_clock_t *k = calloc(1, sizeof *k);
    if (k) {
        k->pub.fn = fn;
        k->pub.fn_data = data;
        if (fn)
            fn(&k->pub.info, data);
        k->ref_ns = pa_clock_ns();
        pa_itt_lock();
        k->all = clocks;
        clocks = k;
        pa_itt_unlock();
    }
    pa_guard_leave();
    return k ? &k->pub : NULL;
}

static void itt_clock_domain_reset(void)
{
    pa_itt_lock();
    for (pa_itt_clock_t *k = clocks; k; k = k->all) {
        if (k->pub.fn)
            k->pub.fn(&k->pub.info, k->pub.fn_data);
        k->ref_ns = pa_clock_ns();
    }
    pa_itt_unlock();
}

/* ---- tasks: push/pop per (thread, domain) ---- */

static inline unsigned slot_of(uint32_t dom) { return dom < PA_HGTX_DEPTH_SLOTS - 1 ? dom : PA_HGTX_DEPTH_SLOTS - 1; }

/* Records whether the task at this depth was recorded, so its end is emitted exactly when its
 * begin was (pause/resume between them, or a session starting in between). */
static inline void task_begin_dom(uint32_t dom, const char *name, size_t len, uint64_t t0)
{
    unsigned s = slot_of(dom);
    int depth = pa_tls.itt_depth[s]++;
    int rec = itt_on();
    if (depth < 64) {
        if (rec)
            pa_tls.itt_skipped[s] &= ~(1ull << depth);
        else
            pa_tls.itt_skipped[s] |= 1ull << depth;
    }
    if (rec)
        pa_hgtx_push_ex(dom, name, len, t0);
}

static inline void task_end_dom(uint32_t dom, uint64_t t0)
{
    unsigned s = slot_of(dom);
    if (PA_UNLIKELY(pa_tls.itt_depth[s] <= 0)) {
        pa_itt_count(PA_ITT_END_WITHOUT_BEGIN);
        return;
    }
    int depth = --pa_tls.itt_depth[s];
    int recorded = depth >= 64 || !(pa_tls.itt_skipped[s] >> depth & 1);
    if (recorded && pa_agent_collecting(PA_SRC_ITT))
        pa_hgtx_pop_ex(dom, t0);
}

static inline void task_begin_at(const pa_itt_domain_t *d, const char *name, size_t len, uint64_t t0)
{
    task_begin_dom(dom_id(d), name, len, t0);
}

static inline void task_end_at(const pa_itt_domain_t *d, uint64_t t0) { task_end_dom(dom_id(d), t0); }

static void itt_task_begin(const pa_itt_domain_t *d, pa_itt_id_t id, pa_itt_id_t parent, pa_itt_string_handle_t *name)
{
    (void)id, (void)parent;
    size_t len;
    const char *n = sh_name(name, &len);
    task_begin_at(d, n, len, 0);
}

static void itt_task_end(const pa_itt_domain_t *d) { task_end_at(d, 0); }

static void itt_task_begin_ex(const pa_itt_domain_t *d, pa_itt_clock_domain_t *clk, unsigned long long ts,
                              pa_itt_id_t id, pa_itt_id_t parent, pa_itt_string_handle_t *name)
{
    (void)id, (void)parent;
    size_t len;
    const char *n = sh_name(name, &len);
    task_begin_at(d, n, len, ts_ns(clk, ts));
}

static void itt_task_end_ex(const pa_itt_domain_t *d, pa_itt_clock_domain_t *clk, unsigned long long ts)
{
    task_end_at(d, ts_ns(clk, ts));
}

/* ---- _fn tasks: the function's symbol as the name, resolved once per address ---- */

#define PA_ITT_FN_SLOTS 4096u
typedef struct pa_itt_fn { const void *fn; uint32_t len; char name[]; } pa_itt_fn_t;
static _Atomic(pa_itt_fn_t *) fn_tab[PA_ITT_FN_SLOTS];

static pa_itt_fn_t *fn_resolve(const void *fn)
{
    char buf[512];
    Dl_info di;
    memset(&di, 0, sizeof di);
    if (fn && dladdr(fn, &di) && di.dli_sname && di.dli_saddr) {
        uintptr_t off = (uintptr_t)fn - (uintptr_t)di.dli_saddr;
        if (off)
            snprintf(buf, sizeof buf, "%s+0x%lx", di.dli_sname, (unsigned long)off);
        else
            snprintf(buf, sizeof buf, "%s", di.dli_sname);
    } else if (fn && di.dli_fname && di.dli_fbase) {
        const char *base = strrchr(di.dli_fname, '/');
        snprintf(buf, sizeof buf, "%s+0x%lx", base ? base + 1 : di.dli_fname,
                 (unsigned long)((uintptr_t)fn - (uintptr_t)di.dli_fbase));
    } else {
        snprintf(buf, sizeof buf, "0x%lx", (unsigned long)(uintptr_t)fn);
    }
    size_t n = strlen(buf);
    pa_itt_fn_t *e = malloc(sizeof *e + n + 1);
    if (e) {
        e->fn = fn;
        e->len = (uint32_t)n;
        memcpy(e->name, buf, n + 1);
    }
    return e;
}

/* The cached name of fn; resolving takes dladdr and one allocation on the first sight of an
 * address (like a thread's first event), never again. */
static const pa_itt_fn_t *fn_name(const void *fn)
{
    uint32_t h = (uint32_t)(((uintptr_t)fn >> 4) * 0x9E3779B1u) & (PA_ITT_FN_SLOTS - 1);
    for (uint32_t i = 0; i < 16; i++) {
        pa_itt_fn_t *e = atomic_load_explicit(&fn_tab[(h + i) & (PA_ITT_FN_SLOTS - 1)], memory_order_acquire);
        if (!e)
            break;
        if (e->fn == fn)
            return e;
    }
    pa_guard_enter();
    pa_itt_fn_t *mine = fn_resolve(fn);
    pa_guard_leave();
    if (!mine)
        return NULL;
    for (uint32_t i = 0; i < 16; i++) {
        _Atomic(pa_itt_fn_t *) *slot = &fn_tab[(h + i) & (PA_ITT_FN_SLOTS - 1)];
        pa_itt_fn_t *cur = NULL;
        if (atomic_compare_exchange_strong_explicit(slot, &cur, mine, memory_order_acq_rel, memory_order_acquire))
            return mine;
        if (cur->fn == fn) {
            pa_guard_enter();
            free(mine);
            pa_guard_leave();
            return cur;
        }
    }
    return mine; /* probe window full: this one is leaked (bounded by distinct addresses) */
}

static void itt_task_begin_fn(const pa_itt_domain_t *d, pa_itt_id_t id, pa_itt_id_t parent, void *fn)
{
    (void)id, (void)parent;
    const pa_itt_fn_t *e = fn_name(fn);
    task_begin_at(d, e ? e->name : "", e ? e->len : 0, 0);
}

static void itt_task_begin_fn_ex(const pa_itt_domain_t *d, pa_itt_clock_domain_t *clk, unsigned long long ts,
                                 pa_itt_id_t id, pa_itt_id_t parent, void *fn)
{
    (void)id, (void)parent;
    const pa_itt_fn_t *e = fn_name(fn);
    task_begin_at(d, e ? e->name : "", e ? e->len : 0, ts_ns(clk, ts));
}

/* ---- start/end ranges keyed by (domain, ITT id): overlapped tasks, regions, frames ---- */

/* HGTX start/end id of an ITT id: a 63-bit mix with the top bit set, so it never meets the ids
 * hgtxRangeStartA hands out (small counters). `kind` separates tasks, regions and frames. */
static inline uint64_t key_of(uint32_t dom, const pa_itt_id_t *id, uint64_t kind)
{
    uint64_t x = (id ? id->d1 : 0) * 0x9E3779B97F4A7C15ull;
    x ^= (id ? id->d2 : 0) + 0xC2B2AE3D27D4EB4Full + (x << 6) + (x >> 2);
    x ^= (id ? id->d3 : 0) + 0x165667B19E3779F9ull + (x << 6) + (x >> 2);
    x ^= ((uint64_t)dom << 8 | kind) * 0xFF51AFD7ED558CCDull;
    x ^= x >> 33;
    return x | 1ull << 63;
}

enum { KEY_OVERLAPPED = 1, KEY_REGION = 2, KEY_FRAME = 3 };

static void se_begin(const pa_itt_domain_t *d, const pa_itt_id_t *id, int kind, const char *n, size_t len, uint64_t t0)
{
    uint32_t dom = dom_id(d);
    if (itt_on())
        pa_hgtx_start_ex(dom, key_of(dom, id, (uint64_t)kind), n, len, t0);
}

static void se_end(const pa_itt_domain_t *d, const pa_itt_id_t *id, int kind, uint64_t t0)
{
    uint32_t dom = dom_id(d);
    /* not gated by pause: a range begun before the pause still ends (an end whose begin was not
     * recorded is counted by the aggregator as an unknown end) */
    if (pa_agent_collecting(PA_SRC_ITT) && atomic_load_explicit(&pa_itt_state, memory_order_relaxed) != PA_ITT_DETACHED)
        pa_hgtx_end_ex(dom, key_of(dom, id, (uint64_t)kind), t0);
}

static void itt_task_begin_overlapped(const pa_itt_domain_t *d, pa_itt_id_t id, pa_itt_id_t parent,
                                      pa_itt_string_handle_t *name)
{
    (void)parent;
    size_t len;
    const char *n = sh_name(name, &len);
    se_begin(d, &id, KEY_OVERLAPPED, n, len, 0);
}

static void itt_task_begin_overlapped_ex(const pa_itt_domain_t *d, pa_itt_clock_domain_t *clk, unsigned long long ts,
                                         pa_itt_id_t id, pa_itt_id_t parent, pa_itt_string_handle_t *name)
{
    (void)parent;
    size_t len;
    const char *n = sh_name(name, &len);
    se_begin(d, &id, KEY_OVERLAPPED, n, len, ts_ns(clk, ts));
}

static void itt_task_end_overlapped(const pa_itt_domain_t *d, pa_itt_id_t id) { se_end(d, &id, KEY_OVERLAPPED, 0); }

static void itt_task_end_overlapped_ex(const pa_itt_domain_t *d, pa_itt_clock_domain_t *clk, unsigned long long ts,
                                       pa_itt_id_t id)
{
    se_end(d, &id, KEY_OVERLAPPED, ts_ns(clk, ts));
}

static void itt_region_begin(const pa_itt_domain_t *d, pa_itt_id_t id, pa_itt_id_t parent, pa_itt_string_handle_t *name)
{
    (void)parent;
    size_t len;
    const char *n = sh_name(name, &len);
    se_begin(d, &id, KEY_REGION, n, len, 0);
}

static void itt_region_end(const pa_itt_domain_t *d, pa_itt_id_t id) { se_end(d, &id, KEY_REGION, 0); }

/* Frames have no name of their own: "frame" in the ITT domain (shown "<domain>:frame"). A NULL
 * id means the domain's one current frame. */
static void itt_frame_begin_v3(const pa_itt_domain_t *d, pa_itt_id_t *id) { se_begin(d, id, KEY_FRAME, "frame", 5, 0); }
static void itt_frame_end_v3(const pa_itt_domain_t *d, pa_itt_id_t *id) { se_end(d, id, KEY_FRAME, 0); }

static void itt_frame_submit_v3(const pa_itt_domain_t *d, pa_itt_id_t *id, unsigned long long begin,
                                unsigned long long end)
{
    uint32_t dom = dom_id(d);
    if (!itt_on())
        return;
    uint64_t t1 = ts_ns(NULL, end), t0 = ts_ns(NULL, begin);
    if (!t1)
        t1 = pa_clock_ns();
    if (!t0 || t0 > t1)
        t0 = t1;
    uint64_t key = key_of(dom, id, KEY_FRAME) ^ (t0 << 1); /* a submitted frame never meets an open one */
    key |= 1ull << 63;
    pa_hgtx_start_ex(dom, key, "frame", 5, t0);
    pa_hgtx_end_ex(dom, key, t1);
}

/* ---- markers, legacy marks and events ---- */

static void itt_marker(const pa_itt_domain_t *d, pa_itt_id_t id, pa_itt_string_handle_t *name, int scope)
{
    (void)id, (void)scope;
    size_t len;
    const char *n = sh_name(name, &len);
    uint32_t dom = dom_id(d);
    if (itt_on())
        pa_hgtx_mark_ex(dom, n, len, 0);
}

static void itt_marker_ex(const pa_itt_domain_t *d, pa_itt_clock_domain_t *clk, unsigned long long ts, pa_itt_id_t id,
                          pa_itt_string_handle_t *name, int scope)
{
    (void)id, (void)scope;
    size_t len;
    const char *n = sh_name(name, &len);
    uint32_t dom = dom_id(d);
    if (itt_on())
        pa_hgtx_mark_ex(dom, n, len, ts_ns(clk, ts));
}

/* Legacy mark types and events: small integers naming a string (1-based; 0 is an error). */
#define PA_ITT_LEGACY_MAX 4096
static const char *legacy_names[PA_ITT_LEGACY_MAX + 1];
static _Atomic int legacy_n;

static int legacy_create(const char *name, int namelen)
{
    if (!name)
        return 0;
    size_t n = namelen > 0 ? strnlen(name, (size_t)namelen) : strlen(name);
    pa_guard_enter();
    char *copy = malloc(n + 1);
    pa_guard_leave();
    if (!copy)
        return 0;
    memcpy(copy, name, n);
    copy[n] = '\0';
    pa_itt_lock();
    int id = atomic_load(&legacy_n) + 1;
    if (id <= PA_ITT_LEGACY_MAX) {
        legacy_names[id] = copy;
        atomic_store_explicit(&legacy_n, id, memory_order_release);
    } else {
        id = 0;
    }
    pa_itt_unlock();
    if (!id)
        free(copy);
    return id;
}

static const char *legacy_name(int id)
{
    return id > 0 && id <= atomic_load_explicit(&legacy_n, memory_order_acquire) ? legacy_names[id] : NULL;
}

static int itt_mark_create(const char *name) { return legacy_create(name, 0); }

/* __itt_mark(type, parameter): a mark named by its type ("type:parameter" with a parameter). */
static int itt_mark(int mt, const char *parameter)
{
    const char *n = legacy_name(mt);
    if (!n) {
        pa_itt_count(PA_ITT_NULL_NAME);
        return -1;
    }
    if (!itt_on())
        return 0;
    char buf[512];
    int len = parameter && *parameter ? snprintf(buf, sizeof buf, "%s:%s", n, parameter)
                                      : snprintf(buf, sizeof buf, "%s", n);
    if (len < 0)
        return -1;
    pa_hgtx_mark_ex(0, buf, (size_t)len < sizeof buf ? (size_t)len : sizeof buf - 1, 0);
    return 0;
}

static int itt_event_create(const char *name, int namelen) { return legacy_create(name, namelen); }

static int itt_event_start(int ev)
{
    const char *n = legacy_name(ev);
    if (!n) {
        pa_itt_count(PA_ITT_NULL_NAME);
        return -1;
    }
    task_begin_dom(0, n, strlen(n), 0);
    return 0;
}

static int itt_event_end(int ev)
{
    if (!legacy_name(ev)) {
        pa_itt_count(PA_ITT_NULL_NAME);
        return -1;
    }
    task_end_dom(0, 0);
    return 0;
}

/* ---- threads, collection control, misc ---- */

static void itt_thread_set_name(const char *name)
{
    if (!name || !pa_agent_collecting(PA_SRC_ITT))
        return;
    pa_record_t rec = {.kind = PA_REC_THREAD_NAME, .t0 = pa_clock_ns()};
    pa_emit(&rec, name, (uint32_t)strnlen(name, 255));
}

static int itt_thr_name_set(const char *name, int namelen)
{
    if (!name || !pa_agent_collecting(PA_SRC_ITT))
        return 0;
    pa_record_t rec = {.kind = PA_REC_THREAD_NAME, .t0 = pa_clock_ns()};
    size_t n = namelen > 0 ? strnlen(name, (size_t)namelen) : strnlen(name, 255);
    pa_emit(&rec, name, (uint32_t)(n < 255 ? n : 255));
    return 0;
}

static void itt_pause(void)
{
    int want = PA_ITT_RUNNING;
    atomic_compare_exchange_strong(&pa_itt_state, &want, PA_ITT_PAUSED);
}

static void itt_resume(void)
{
    int want = PA_ITT_PAUSED;
    atomic_compare_exchange_strong(&pa_itt_state, &want, PA_ITT_RUNNING);
}

static void itt_detach(void) { atomic_store(&pa_itt_state, PA_ITT_DETACHED); }

static void itt_id_noop(const pa_itt_domain_t *d, pa_itt_id_t id) { (void)d, (void)id; }
static void itt_id_noop_ex(const pa_itt_domain_t *d, pa_itt_clock_domain_t *c, unsigned long long ts, pa_itt_id_t id)
{
    (void)d, (void)c, (void)ts, (void)id;
}

static const char *itt_api_version(void) { return "profagent ITT collector " "3.0"; }

/* ---- the entry table: ittnotify name -> implementation ---- */

typedef struct pa_itt_entry { const char *name; void *fn; } pa_itt_entry_t;
#define E(n) {"__itt_" #n, (void *)itt_##n}
static const pa_itt_entry_t entries[] = {
    E(domain_create), E(string_handle_create),
    E(task_begin), E(task_begin_fn), E(task_end), E(task_begin_ex), E(task_begin_fn_ex), E(task_end_ex),
    E(task_begin_overlapped), E(task_begin_overlapped_ex), E(task_end_overlapped), E(task_end_overlapped_ex),
    E(region_begin), E(region_end),
    E(frame_begin_v3), E(frame_end_v3), E(frame_submit_v3),
    E(marker), E(marker_ex),
    E(mark_create), E(mark), {"__itt_mark_global", (void *)itt_mark},
    E(event_create), E(event_start), E(event_end),
    E(thread_set_name), E(thr_name_set),
    E(pause), E(resume), E(detach),
    E(get_timestamp), E(clock_domain_create), E(clock_domain_reset),
    {"__itt_id_create", (void *)itt_id_noop}, {"__itt_id_destroy", (void *)itt_id_noop},
    {"__itt_id_create_ex", (void *)itt_id_noop_ex}, {"__itt_id_destroy_ex", (void *)itt_id_noop_ex},
    E(api_version),
};
#undef E

void *pa_itt_lookup(const char *name)
{
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
        if (strcmp(entries[i].name, name) == 0)
            return entries[i].fn;
    return NULL;
}
