/* hgtx.c - the agent's definitions of the public HGTX API (override libhgtx.so's no-ops). */
#include "collector.h"
#include "../common/pa_source.h"

#include <stdlib.h>

#include <profagent/hgtx.h>

#define PA_HGTX_NAME_MAX HGTX_MESSAGE_MAX /* bytes of a name kept; longer ones are cut, flagged */

static _Atomic uint64_t next_range_id; /* start/end ids, > 0 */

/* Why a start whose record was refused (full ring, no ring, full stash) hands out its id with
 * PA_HGTX_ID_LOST set (common/pa_record.h): its end, on whatever thread, then knows the range's
 * start is missing and counts it (pa_hgtx_ends_unstarted) instead of recording an end the
 * aggregator could only take for the end of an unknown id, i.e. the application's misuse. Ids
 * stay opaque to the caller; bit 63 is ITT's (collector/itt.c key_of). */

_Atomic uint64_t pa_hgtx_ends_unstarted; /* ends whose start record was refused (not recorded) */
_Atomic uint64_t pa_hgtx_starts_lost;    /* collector.h */
_Atomic uint64_t pa_hgtx_ends_lost;      /* collector.h */
static _Atomic uint32_t next_domain_id; /* domain ids, > 0; 0 = default domain */

/* Destroyed domain ids, one bit each, for ids below PA_HGTX_DEAD_IDS (beyond: not tracked, a
 * destroyed handle is then still accepted; documented in hgtx.h). */
#define PA_HGTX_DEAD_IDS 4096u
static _Atomic uint64_t dead_domains[PA_HGTX_DEAD_IDS / 64];

/* Domain names by id (ids below PA_HGTX_DEAD_IDS), published before the id is handed out. The
 * aggregator drains the rings one after the other, newest first, so a thread that uses a domain
 * right after another thread created it can be drained before the creator's DOMAIN record: it
 * then takes the name from here (pa_hgtx_domain_lookup). Set once, never freed (names of
 * destroyed domains stay valid for records drained later). */
typedef struct domain_name { uint32_t len; char s[]; } domain_name_t;
static _Atomic(domain_name_t *) domain_names[PA_HGTX_DEAD_IDS];

static void domain_publish(uint32_t id, const char *name)
{
    if (!id || id >= PA_HGTX_DEAD_IDS || atomic_load_explicit(&domain_names[id], memory_order_relaxed))
        return;
    size_t n = name ? strnlen(name, PA_HGTX_NAME_MAX) : 0;
    pa_guard_enter(); /* the agent's own allocation: not recorded */
    domain_name_t *d = malloc(sizeof *d + n + 1), *none = NULL;
    if (d) {
        d->len = (uint32_t)n;
        if (n)
            memcpy(d->s, name, n);
        d->s[n] = '\0';
        if (!atomic_compare_exchange_strong_explicit(&domain_names[id], &none, d, memory_order_release,
                                                     memory_order_relaxed))
            free(d);
    }
    pa_guard_leave();
}

const char *pa_hgtx_domain_lookup(uint32_t id, size_t *len)
{
    domain_name_t *d = id < PA_HGTX_DEAD_IDS ? atomic_load_explicit(&domain_names[id], memory_order_acquire) : NULL;
    if (!d)
        return NULL;
    *len = d->len;
    return d->s;
}

/* A handle is valid when hgtxDomainCreateA returned it and it was not destroyed. Handles are
 * small integers, so anything above the last id handed out is garbage. Returns the domain id,
 * or 0 with *flags |= PA_RF_BAD_DOMAIN (the range is then recorded without a domain). */
static inline uint32_t domain_check(hgtxDomainHandle_t d, uint32_t *flags)
{
    uintptr_t id = (uintptr_t)d;
    if (id == 0)
        return 0;
    if (PA_UNLIKELY(id > atomic_load_explicit(&next_domain_id, memory_order_relaxed)))
        goto bad;
    if (id < PA_HGTX_DEAD_IDS &&
        PA_UNLIKELY(atomic_load_explicit(&dead_domains[id / 64], memory_order_relaxed) >> (id % 64) & 1))
        goto bad;
    return (uint32_t)id;
bad:
    *flags |= PA_RF_BAD_DOMAIN;
    return 0;
}

/* Provided by session/ (weak: the collector's unit tests link no session). */
int pa_session_early(void) __attribute__((weak));
static _Atomic int early_tried; /* the first call that found HGTX off asked the session once */

/* The first HGTX call finding recording off before the agent's constructor ran (a shared
 * library's constructor, preinit_array) starts the session now: its ranges are recorded and
 * their pops are not taken for pops on an empty stack. */
static __attribute__((noinline)) int hgtx_first_use(void)
{
    if (!pa_session_early || pa_tls.guard || pa_tls.agent || atomic_exchange(&early_tried, 1))
        return 0;
    return pa_session_early() && pa_agent_collecting(PA_SRC_HGTX);
}

/*! hgtx_collecting() : pa_agent_collecting(PA_SRC_HGTX), starting the session on first use. */
static inline int hgtx_collecting(void)
{
    if (PA_LIKELY(pa_agent_collecting(PA_SRC_HGTX)))
        return 1;
    if (PA_LIKELY(atomic_load_explicit(&early_tried, memory_order_relaxed)))
        return 0;
    return hgtx_first_use();
}

/* The depth counter of a domain on this thread (shared by ids >= PA_HGTX_DEPTH_SLOTS - 1). */
static inline int *depth_of(uint32_t dom)
{
    return &pa_tls.depth[dom < PA_HGTX_DEPTH_SLOTS - 1 ? dom : PA_HGTX_DEPTH_SLOTS - 1];
}

/* Emits a named record of `len` name bytes at time t0 (0 = now): names up to the header's spare
 * room travel inline (one slot), longer ones as payload, cut at PA_HGTX_NAME_MAX (flagged
 * PA_RF_TRUNCATED). */
static inline int emit_named_len(pa_record_t *rec, const char *name, size_t len, uint64_t t0)
{
    uint32_t off = pa_hgtx_inline_off(rec->kind);
    rec->t0 = t0 ? t0 : pa_clock_ns();
    if (len <= PA_SLOT_SIZE - off) {
        if (len)
            memcpy((uint8_t *)rec + off, name, len);
        rec->flags |= PA_RF_INLINE | (uint32_t)len << 16;
        return pa_emit(rec, NULL, 0);
    }
    if (len > PA_HGTX_NAME_MAX) {
        len = PA_HGTX_NAME_MAX;
        rec->flags |= PA_RF_TRUNCATED;
    }
    return pa_emit(rec, name, (uint32_t)len);
}

/* emit_named_len() for a NUL-terminated name (NULL is ""), at t0 (0 = now). Returns pa_emit's. */
static inline int emit_named_at(pa_record_t *rec, const char *name, uint64_t t0)
{
    return emit_named_len(rec, name, name ? strnlen(name, PA_HGTX_NAME_MAX + 1) : 0, t0);
}

static inline void emit_named(pa_record_t *rec, const char *name) { (void)emit_named_at(rec, name, 0); }

/* The end of a start/end range: it may use the room kept for ends (PA_KEEP_ENDS). One refused
 * leaves its range open with nobody to tell: counted, the aggregator reports that many of the
 * ranges open at exit as cut by a drop, not as left open by the application. */
static void emit_end(const pa_record_t *rec)
{
    if (pa_emit_keep(rec, NULL, 0, 0) != 0)
        atomic_fetch_add_explicit(&pa_hgtx_ends_lost, 1, memory_order_relaxed);
}

/* The time of a range record (t0, 0 = now). Host counters on (hwcounters/): the thread's group
 * is read first, tagged with that time, so the aggregator pairs the read with the record. Off,
 * this costs one load and a predictable branch. */
static inline uint64_t range_time(uint64_t t0)
{
    if (!t0)
        t0 = pa_clock_ns();
    if (PA_UNLIKELY(pa_hc_active))
        pa_hc_sample(t0);
    return t0;
}

/* The inline name area of a push (u.hgtx.id + u.hgtx.text: PA_SLOT_SIZE - its offset) in words. */
#define PA_HGTX_INLINE_MAX (PA_SLOT_SIZE - offsetof(pa_record_t, u.hgtx.id))
_Static_assert(PA_HGTX_INLINE_MAX == 24, "a push's inline name is three words");
#define PA_HGTX_NAME_LONG ((size_t)-1)

/* 0x80 in each byte of x that is zero, and possibly in bytes above the first zero (not below
 * it): the lowest one marks the first NUL. */
static inline uint64_t zero_bytes(uint64_t x)
{
    return (x - 0x0101010101010101ull) & ~x & 0x8080808080808080ull;
}

/*! name_words() : a message of at most PA_HGTX_INLINE_MAX bytes as the three words of a push's
 *  inline name (bytes past the NUL zeroed, so no stale ring bytes travel): its length; or
 *  PA_HGTX_NAME_LONG when it is longer, or when the 25 bytes from `s` cross a page end (then
 *  the caller measures it with strnlen). Word loads instead of strnlen + memcpy calls: it reads
 *  up to 24 bytes past the NUL, within s's page only (mapped: s is), not within the C object
 *  (hence not instrumented; the bytes read past the NUL are discarded). */
__attribute__((no_sanitize("address"))) static inline size_t name_words(const char *s, uint64_t w[3])
{
    if (PA_UNLIKELY(((uintptr_t)s & 4095u) > 4096u - PA_HGTX_INLINE_MAX - 1))
        return PA_HGTX_NAME_LONG;
    uint64_t a, b, c;
    memcpy(&a, s, 8);
    memcpy(&b, s + 8, 8);
    memcpy(&c, s + 16, 8);
    uint64_t z;
    if ((z = zero_bytes(a)) != 0) {
        unsigned n = (unsigned)__builtin_ctzll(z) >> 3;
        w[0] = a & ((1ull << (n * 8)) - 1); /* n < 8 */
        w[1] = w[2] = 0;
        return n;
    }
    w[0] = a;
    if ((z = zero_bytes(b)) != 0) {
        unsigned n = (unsigned)__builtin_ctzll(z) >> 3;
        w[1] = b & ((1ull << (n * 8)) - 1);
        w[2] = 0;
        return 8 + n;
    }
    w[1] = b;
    if ((z = zero_bytes(c)) != 0) {
        unsigned n = (unsigned)__builtin_ctzll(z) >> 3;
        w[2] = c & ((1ull << (n * 8)) - 1);
        return 16 + n;
    }
    w[2] = c;
    return s[24] == 0 ? 24 : PA_HGTX_NAME_LONG;
}

/* Why push and pop take their time inside their write to the ring: a signal handler that
 * pushes a range while this thread pushes or pops must see a stack that agrees with the times.
 * The ring's order is the aggregator's stack order, so the time of a push or pop, the depth
 * change and the record's place in the ring must look like one instant to a handler: set
 * PA_EMIT_BUSY first (a handler then stashes its records, moved in after ours), change the
 * depth, take the stamp while no handler stashes (window_time), then write. A handler that ran
 * before the stamp is ahead in the ring with earlier times, one after it behind with later
 * times: a handler's range pushed during our pop never gets the ending range as its parent,
 * one pushed during our push always gets the new range. */

/* The fields of a one-slot push or pop (a push's name inline: `len` bytes in the words `name`). */
static inline __attribute__((always_inline)) void pushpop_fill(pa_record_t *s, uint16_t kind, uint32_t flags,
                                                               uint32_t dom, int level, uint64_t t0,
                                                               const uint64_t *name, size_t len)
{
    pa_emit1_head(s, kind, kind == PA_REC_HGTX_PUSH ? flags | PA_RF_INLINE | (uint32_t)len << 16 : flags);
    s->t0 = t0;
    s->t1 = 0;
    uint64_t w = dom | (uint64_t)(uint32_t)level << 32; /* u.hgtx.domain, u.hgtx.level */
    memcpy((char *)s + offsetof(pa_record_t, u.hgtx.domain), &w, 8);
    if (kind == PA_REC_HGTX_PUSH)
        memcpy((char *)s + offsetof(pa_record_t, u.hgtx.id), name, PA_HGTX_INLINE_MAX);
}

/* The depth change of a push or pop on this thread: the level of the range it opens or closes
 * (-1: a pop on an empty stack). A handler changes the counters in pairs, so a push or pop it
 * interrupts between their load and store still leaves them right. */
static inline __attribute__((always_inline)) int depth_step(uint16_t kind, uint32_t dom)
{
    int *depth = depth_of(dom);
    if (kind == PA_REC_HGTX_PUSH) {
        pa_tls.hgtx_open++; /* before the write: this push keeps room for its own pop */
        return (*depth)++;
    }
    int level = *depth > 0 ? --*depth : -1;
    if (level >= 0 && pa_tls.hgtx_open) /* before the write: the pop uses the room its push kept */
        pa_tls.hgtx_open--;
    return level;
}

/* The time of a push or pop inside its write to ring `r` (PA_EMIT_BUSY set): a stamp taken while
 * no handler stashed; what handlers stashed before it is moved into the ring now, ahead of the
 * record (their times are earlier). `t` nonzero: the time taken before the write began (host
 * counters on: hc_begin); whatever handlers stash now is later and stays behind the record. */
/* window_time() once a handler stashed: before the stamp `t` (read while stash_w was `s`) or
 * during it (then it is taken again). Out of line: the common path is one compare. */
static __attribute__((noinline, cold)) uint64_t window_time_stashed(pa_ring_t *r, uint32_t s, uint64_t t)
{
    while (r->stash_w != s) {
        s = r->stash_w;
        atomic_signal_fence(memory_order_seq_cst);
        t = pa_clock_stamp();
        atomic_signal_fence(memory_order_seq_cst);
    }
    if (r->stash_r != s)
        pa_stash_move(r, s);
    return t;
}

static inline __attribute__((always_inline)) uint64_t window_time(pa_ring_t *r, uint64_t t)
{
    if (PA_UNLIKELY(t))
        return t;
    uint32_t s = r->stash_w;
    atomic_signal_fence(memory_order_seq_cst);
    t = pa_clock_stamp();
    atomic_signal_fence(memory_order_seq_cst);
    if (PA_UNLIKELY((r->stash_w ^ s) | (r->stash_r ^ s)))
        t = window_time_stashed(r, s, t);
    return t;
}

/* push/pop when the thread has no ring, or from a signal handler that interrupted a write to
 * the ring: the record goes to the ring's stash (a push's name cut to its inline part). */
static __attribute__((noinline)) int pushpop_slow(pa_ring_t *r, uint16_t kind, uint32_t flags, uint32_t dom,
                                                  uint64_t t, const uint64_t *name, size_t len)
{
    if (!r) {
        pa_emit_unrecorded(NULL);
        return depth_step(kind, dom);
    }
    pa_record_t *st = pa_stash_begin(r);
    int level = depth_step(kind, dom);
    if (st) {
        pushpop_fill(st, kind, flags, dom, level, t ? t : pa_clock_stamp(), name, len);
        pa_stash_end(r);
    }
    return level;
}

/* With host counters on, the time is taken and the counters read (a record of its own) before
 * the write begins; a handler that records between the read and PA_EMIT_BUSY would be ahead in
 * the ring with later times: then time and read are taken again. Returns with PA_EMIT_BUSY set
 * (0: the thread has no ring, or this is a handler that interrupted a write: *t set). */
static __attribute__((noinline)) int hc_begin(pa_ring_t **rp, uint64_t *t)
{
    for (;;) {
        uint32_t seq = pa_tls.hgtx_hc_seq;
        atomic_signal_fence(memory_order_seq_cst);
        /* a handler that interrupted a write: no counter read (its record, with a payload,
         * could not be stashed); the range then has no counter deltas */
        *t = pa_tls.emitting ? pa_clock_ns() : range_time(0);
        pa_ring_t *r = *rp = pa_thread_ring();
        if (r == NULL || pa_tls.emitting) {
            pa_tls.hgtx_hc_seq++;
            return 0;
        }
        pa_tls.emitting = PA_EMIT_BUSY;
        atomic_signal_fence(memory_order_seq_cst);
        if (PA_LIKELY(pa_tls.hgtx_hc_seq == seq)) {
            pa_tls.hgtx_hc_seq++; /* a handler's record from now on is behind ours */
            return 1;
        }
        pa_emit_busy_clear();
    }
}

/* A push or pop of `ns` slots that found ring `r` full (the drop counted), PA_EMIT_BUSY set: the
 * wait of every record (pa_emit_full). A push waited for is timed again after the wait (the
 * range starts when the application goes on; what handlers stashed during the wait is moved in
 * ahead of it, as window_time() does), unless its time came from before the write (*t: host
 * counters on, the counter read carries that time). A pop keeps its time: the wait is after
 * the range's end. Returns the slot to fill, or NULL (dropped, counted). */
static __attribute__((noinline, cold)) pa_record_t *pushpop_full(pa_ring_t *r, uint16_t kind, uint32_t ns,
                                                                 uint64_t *t)
{
    uint32_t keep = pa_tls.hgtx_open + PA_KEEP_ENDS;
    uint64_t before = pa_ring_waits[pa_tls.emit_src ? pa_tls.emit_src : PA_RING_SRC_HGTX].waits;
    pa_record_t *s = &pa_emit_full ? pa_emit_full(r, ns, keep, kind) : NULL;
    if (!s || kind != PA_REC_HGTX_PUSH || pa_hc_active ||
        before == pa_ring_waits[pa_tls.emit_src ? pa_tls.emit_src : PA_RING_SRC_HGTX].waits)
        return s;
    *t = window_time(r, 0);
    return pa_ring_reserve_keep(r, ns, keep); /* the stash moved in may have taken the room again */
}

/* The write of a push or pop (one slot) into ring `r`, PA_EMIT_BUSY set; `t` as window_time().
 * Returns its level (depth_step). */
static inline __attribute__((always_inline)) int pushpop_write(pa_ring_t *r, uint16_t kind, uint32_t flags,
                                                               uint32_t dom, uint64_t t, const uint64_t *name,
                                                               size_t len)
{
    int level = depth_step(kind, dom);
    atomic_signal_fence(memory_order_seq_cst);
    t = window_time(r, t);
    pa_record_t *s = pa_ring_reserve_keep(r, 1, pa_tls.hgtx_open + PA_KEEP_ENDS);
    if (PA_UNLIKELY(s == NULL)) {
        uint64_t tw = t; /* a copy: `t` itself stays in a register on the common path */
        s = pushpop_full(r, kind, 1, &tw);
        t = tw;
    }
    if (PA_LIKELY(s != NULL)) {
        pushpop_fill(s, kind, flags, dom, level, t, name, len);
        pa_ring_commit(r, 1);
    }
    pa_emit_busy_clear();
    return level;
}

/* pushpop() with host counters on. */
static __attribute__((noinline)) int pushpop_hc(uint16_t kind, uint32_t flags, uint32_t dom, const uint64_t *name,
                                                size_t len)
{
    uint64_t t;
    pa_ring_t *r;
    if (!hc_begin(&r, &t))
        return pushpop_slow(r, kind, flags, dom, t, name, len);
    return pushpop_write(r, kind, flags, dom, t, name, len);
}

/* A push or pop recorded (one slot). Returns its level (depth_step). */
static inline __attribute__((always_inline)) int pushpop(uint16_t kind, uint32_t flags, uint32_t dom,
                                                         const uint64_t *name, size_t len)
{
    if (PA_UNLIKELY(pa_hc_active))
        return pushpop_hc(kind, flags, dom, name, len);
    pa_ring_t *r = pa_thread_ring();
    if (PA_UNLIKELY(r == NULL || pa_tls.emitting))
        return pushpop_slow(r, kind, flags, dom, 0, name, len);
    pa_tls.emitting = PA_EMIT_BUSY;
    atomic_signal_fence(memory_order_seq_cst);
    return pushpop_write(r, kind, flags, dom, 0, name, len);
}

/* A push whose name does not fit inline (payload slots), timed as pushpop(). */
static __attribute__((noinline)) int push_long(uint32_t flags, uint32_t dom, const char *message, size_t len)
{
    uint64_t t = 0;
    pa_ring_t *r = pa_thread_ring();
    int busy = 0, hc = pa_hc_active;
    if (PA_UNLIKELY(hc))
        busy = hc_begin(&r, &t);
    else if (r && !pa_tls.emitting)
        busy = 1;
    if (!busy) { /* stashed: one slot, the name cut to its inline part */
        uint64_t w[3];
        memcpy(w, message, sizeof w);
        return pushpop_slow(r, PA_REC_HGTX_PUSH, flags | PA_RF_TRUNCATED, dom, t, w, PA_HGTX_INLINE_MAX);
    }
    if (len > PA_HGTX_NAME_MAX) {
        len = PA_HGTX_NAME_MAX;
        flags |= PA_RF_TRUNCATED;
    }
    if (len > pa_emit_max_payload(r)) {
        len = pa_emit_max_payload(r);
        flags |= PA_RF_TRUNCATED;
    }
    if (!hc) {
        pa_tls.emitting = PA_EMIT_BUSY;
        atomic_signal_fence(memory_order_seq_cst);
    }
    int level = depth_step(PA_REC_HGTX_PUSH, dom);
    atomic_signal_fence(memory_order_seq_cst);
    t = window_time(r, t);
    uint32_t ns = pa_record_slots((uint32_t)len);
    pa_record_t *s = pa_ring_reserve_keep(r, ns, pa_tls.hgtx_open + PA_KEEP_ENDS);
    if (!s)
        s = pushpop_full(r, PA_REC_HGTX_PUSH, ns, &t);
    if (s) {
        pa_record_t rec = {.kind = PA_REC_HGTX_PUSH, .nslots = (uint16_t)ns, .len = (uint32_t)len,
                           .tid = pa_tls.tid, .flags = flags, .t0 = t};
        rec.u.hgtx.domain = dom;
        rec.u.hgtx.level = level;
        memcpy(s, &rec, sizeof rec);
        pa_ring_write_payload(r, message, (uint32_t)len);
        pa_ring_commit(r, ns);
    }
    pa_emit_busy_clear();
    return level;
}

static inline __attribute__((always_inline)) int push(hgtxDomainHandle_t d, const char *message)
{
    uint32_t flags = 0;
    uint32_t dom = domain_check(d, &flags);
    if (!hgtx_collecting())
        return depth_step(PA_REC_HGTX_PUSH, dom);
    uint64_t w[3] = {0, 0, 0};
    size_t len = message ? name_words(message, w) : 0;
    if (PA_UNLIKELY(len == PA_HGTX_NAME_LONG)) { /* longer, or near a page end */
        len = strnlen(message, PA_HGTX_NAME_MAX + 1);
        if (len > PA_HGTX_INLINE_MAX)
            return push_long(flags, dom, message, len);
        memcpy(w, message, len);
    }
    return pushpop(PA_REC_HGTX_PUSH, flags, dom, w, len);
}

/* Returns the level of the closed range, -1 on an empty stack (still recorded: the
 * aggregator counts the misuse). */
static inline __attribute__((always_inline)) int pop(hgtxDomainHandle_t d)
{
    uint32_t flags = 0;
    uint32_t dom = domain_check(d, &flags);
    if (!hgtx_collecting())
        return depth_step(PA_REC_HGTX_POP, dom);
    return pushpop(PA_REC_HGTX_POP, flags, dom, NULL, 0);
}

static inline hgtxRangeId_t start(hgtxDomainHandle_t d, const char *message)
{
    if (!hgtx_collecting())
        return 0;
    pa_record_t rec = {.kind = PA_REC_HGTX_START};
    rec.u.hgtx.domain = domain_check(d, &rec.flags);
    rec.u.hgtx.id = atomic_fetch_add_explicit(&next_range_id, 1, memory_order_relaxed) + 1;
    rec.u.hgtx.level = -1;
    if (PA_UNLIKELY(emit_named_at(&rec, message, range_time(0)) != 0))
        return rec.u.hgtx.id | PA_HGTX_ID_LOST; /* the record was refused (counted): see the flag */
    return rec.u.hgtx.id;
}

static inline void end(hgtxDomainHandle_t d, hgtxRangeId_t id)
{
    if (!hgtx_collecting())
        return;
    if (PA_UNLIKELY(pa_hgtx_id_lost(id))) {
        atomic_fetch_add_explicit(&pa_hgtx_ends_unstarted, 1, memory_order_relaxed);
        return;
    }
    pa_record_t rec = {.kind = PA_REC_HGTX_END, .t0 = range_time(0)};
    rec.u.hgtx.domain = domain_check(d, &rec.flags);
    rec.u.hgtx.id = id;
    rec.u.hgtx.level = -1;
    emit_end(&rec);
}

static inline void mark(hgtxDomainHandle_t d, const char *message)
{
    if (!hgtx_collecting())
        return;
    pa_record_t rec = {.kind = PA_REC_HGTX_MARK};
    rec.u.hgtx.domain = domain_check(d, &rec.flags);
    emit_named(&rec, message);
}

PA_EXPORT int hgtxRangePushA(const char *message) { return push(NULL, message); }
PA_EXPORT int hgtxRangePop(void) { return pop(NULL); }
PA_EXPORT hgtxRangeId_t hgtxRangeStartA(const char *message) { return start(NULL, message); }
PA_EXPORT void hgtxRangeEnd(hgtxRangeId_t id) { end(NULL, id); }
PA_EXPORT void hgtxMarkA(const char *message) { mark(NULL, message); }

PA_EXPORT hgtxDomainHandle_t hgtxDomainCreateA(const char *name)
{
    if (!hgtx_collecting())
        return NULL;
    pa_record_t rec = {.kind = PA_REC_HGTX_DOMAIN};
    uint32_t id = atomic_fetch_add_explicit(&next_domain_id, 1, memory_order_relaxed) + 1;
    domain_publish(id, name);
    rec.u.hgtx.domain = id;
    emit_named(&rec, name);
    return (hgtxDomainHandle_t)(uintptr_t)id;
}

/* A garbage or already destroyed handle is recorded with PA_RF_BAD_DOMAIN (counted misuse). */
PA_EXPORT void hgtxDomainDestroy(hgtxDomainHandle_t domain)
{
    if (!domain || !hgtx_collecting())
        return;
    pa_record_t rec = {.kind = PA_REC_HGTX_DOMAIN_DESTROY, .t0 = pa_clock_ns()};
    uint32_t id = domain_check(domain, &rec.flags);
    if (id && id < PA_HGTX_DEAD_IDS)
        atomic_fetch_or_explicit(&dead_domains[id / 64], 1ull << (id % 64), memory_order_relaxed);
    rec.u.hgtx.domain = id;
    pa_emit(&rec, NULL, 0);
}

PA_EXPORT int hgtxDomainRangePushA(hgtxDomainHandle_t d, const char *message) { return push(d, message); }
PA_EXPORT int hgtxDomainRangePop(hgtxDomainHandle_t d) { return pop(d); }
PA_EXPORT hgtxRangeId_t hgtxDomainRangeStartA(hgtxDomainHandle_t d, const char *message)
{
    return start(d, message);
}
PA_EXPORT void hgtxDomainRangeEnd(hgtxDomainHandle_t d, hgtxRangeId_t id) { end(d, id); }
PA_EXPORT void hgtxDomainMarkA(hgtxDomainHandle_t d, const char *message) { mark(d, message); }

/* The HGTX source (common/pa_source.h): nothing to set up, nothing in flight at exit; the
 * public API above is the agent's definition of libhgtx's symbols. */
const pa_source_t pa_source_hgtx = {
    .name = "hgtx", .mask = PA_SRC_HGTX, .rec_first = PA_REC_HGTX_FIRST, .rec_last = PA_REC_HGTX_LAST,
};

/* ---- internal entry points for sources mapped onto HGTX (collector/itt.c) ---- */

/* Their records are ITT's: a full ring's wait is counted under it (pa_tls.emit_src, saved and
 * restored so that a signal handler's record in between keeps the interrupted one's source). */
#define ITT_SRC_BEGIN() uint32_t src_saved = pa_tls.emit_src; pa_tls.emit_src = PA_RING_SRC_ITT
#define ITT_SRC_END() pa_tls.emit_src = src_saved

int pa_hgtx_push_ex(uint32_t dom, const char *name, size_t len, uint64_t t0)
{
    int level = (*depth_of(dom))++;
    pa_tls.hgtx_open++; /* as push(): room kept for this push's pop */
    pa_record_t rec = {.kind = PA_REC_HGTX_PUSH};
    rec.u.hgtx.domain = dom;
    rec.u.hgtx.level = level;
    ITT_SRC_BEGIN();
    emit_named_len(&rec, name, len, range_time(t0));
    ITT_SRC_END();
    return level;
}

int pa_hgtx_pop_ex(uint32_t dom, uint64_t t0)
{
    int *depth = depth_of(dom);
    int level = *depth > 0 ? --*depth : -1;
    if (level >= 0 && pa_tls.hgtx_open) /* as pop(): the pop uses the room its push kept */
        pa_tls.hgtx_open--;
    pa_record_t rec = {.kind = PA_REC_HGTX_POP, .t0 = range_time(t0)};
    rec.u.hgtx.domain = dom;
    rec.u.hgtx.level = level;
    ITT_SRC_BEGIN();
    pa_emit(&rec, NULL, 0);
    ITT_SRC_END();
    return level;
}

void pa_hgtx_start_ex(uint32_t dom, uint64_t id, const char *name, size_t len, uint64_t t0)
{
    pa_record_t rec = {.kind = PA_REC_HGTX_START};
    rec.u.hgtx.domain = dom;
    rec.u.hgtx.id = id;
    rec.u.hgtx.level = -1;
    /* the id is the caller's key, known to its end: a refused start is only counted, and the
     * aggregator takes that many ends of unknown ids for ends of dropped starts */
    ITT_SRC_BEGIN();
    if (emit_named_len(&rec, name, len, range_time(t0)) != 0)
        atomic_fetch_add_explicit(&pa_hgtx_starts_lost, 1, memory_order_relaxed);
    ITT_SRC_END();
}

void pa_hgtx_end_ex(uint32_t dom, uint64_t id, uint64_t t0)
{
    pa_record_t rec = {.kind = PA_REC_HGTX_END, .t0 = range_time(t0)};
    rec.u.hgtx.domain = dom;
    rec.u.hgtx.id = id;
    rec.u.hgtx.level = -1;
    ITT_SRC_BEGIN();
    emit_end(&rec);
    ITT_SRC_END();
}

void pa_hgtx_mark_ex(uint32_t dom, const char *name, size_t len, uint64_t t0)
{
    pa_record_t rec = {.kind = PA_REC_HGTX_MARK};
    rec.u.hgtx.domain = dom;
    ITT_SRC_BEGIN();
    emit_named_len(&rec, name, len, t0);
    ITT_SRC_END();
}

void pa_hgtx_domain_name(uint32_t id, const char *name)
{
    domain_publish(id, name);
    pa_record_t rec = {.kind = PA_REC_HGTX_DOMAIN};
    rec.u.hgtx.domain = id;
    emit_named(&rec, name);
}

uint32_t pa_hgtx_domain_new(const char *name)
{
    uint32_t id = atomic_fetch_add_explicit(&next_domain_id, 1, memory_order_relaxed) + 1;
    pa_hgtx_domain_name(id, name);
    return id;
}
