/* pa_clock.h - the one host clock every stage uses: CLOCK_MONOTONIC in ns, read through the TSC. */
#ifndef PA_CLOCK_H
#define PA_CLOCK_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#if defined(__x86_64__)
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <x86intrin.h>
#endif

/*
 * Why not clock_gettime() every time: on the machines measured (2-core VM, tsc clocksource) a
 * vDSO clock_gettime costs 20-90 ns and an rdtsc with the conversion below 8-25 ns; the ze and
 * HGTX hot paths read the clock once or twice per event. pa_clock_ns() therefore converts the
 * TSC with a linear segment (ns = seg.ns + (tsc - seg.tsc) * seg.mult / 2^32) that follows
 * CLOCK_MONOTONIC:
 *
 *  - the TSC is used only when it is invariant (CPUID 0x80000007 EDX bit 8) and the kernel's
 *    clocksource is "tsc" (so the kernel found it synchronized across CPUs); otherwise, and in
 *    the first PA_TSC_WARMUP_NS of the process, pa_clock_ns() is clock_gettime itself;
 *  - the first segment starts on a (tsc, CLOCK_MONOTONIC) pair with the rate measured over the
 *    warm-up (~20 ppm: a pair's uncertainty is half its read window, <= 1 us, ~0.1 us typical);
 *  - a calibration reading (the warm-up's first and last pair) is up to PA_TSC_TRIES pairs: one
 *    preempted pair does not cost the run the TSC (it did: the first interrupted pair turned it
 *    off for the whole process). When all of them are interrupted, the next attempt comes at
 *    least PA_TSC_RETRY_NS later, on the next clock read of any thread; after PA_TSC_MAX_FAILS
 *    failed attempts the TSC is given up (clock_gettime for the rest of the run, as on a
 *    machine without a usable TSC). How long calibration may take: PA_TSC_WARMUP_NS (10 ms)
 *    after the first clock read when the readings succeed; each failed attempt adds >= 1 ms, so
 *    at most ~75 ms (2 readings x 64 attempts x 1 ms at worst, less when attempts succeed) plus
 *    the reads' own time (an attempt is <= 8 pairs of ~3 clock reads: a few us unless
 *    preempted) before the TSC is on or given up. Readers meanwhile get clock_gettime: the
 *    same CLOCK_MONOTONIC, never behind a value another thread got (the first segment starts at
 *    its pair's later read);
 *  - a segment is valid for PA_TSC_PERIOD_NS; the first reader past its "soft" end
 *    (PA_TSC_MARGIN_NS before that) reads a new pair and publishes the next segment, which
 *    starts at the old one's end *continuous* with it (or at the pair when later) with the rate
 *    measured over the period plus a correction absorbing the measured error over the next
 *    period (slewed, at most PA_TSC_SLEW_PPM). The clock is thus one continuous piecewise
 *    linear function of the TSC, each tick converted by the segment it lies in (a reader whose
 *    tick precedes the current segment uses the previous one): monotonic on a thread and within
 *    ~1 us of CLOCK_MONOTONIC. An error larger than PA_TSC_STEP_NS (suspend, a long stop) is
 *    stepped. Readers never block: during a recalibration elsewhere they use the current
 *    segment up to its hard end, then wait at most PA_TSC_WAIT_TICKS for the next one.
 *
 * Everything (the definitions are weak, in this header) works without an init call.
 */

#define PA_TSC_WARMUP_NS 10000000ull   /* clock_gettime only, then the first segment */
#define PA_TSC_PERIOD_NS 50000000ull   /* segment length */
#define PA_TSC_MARGIN_NS 10000000ull   /* recalibration starts this long before a segment's end */
#define PA_TSC_STEP_NS 1000000ll       /* larger errors are stepped, not slewed */
#define PA_TSC_SLEW_PPM 500            /* bound of the rate correction */
#ifndef PA_TSC_PAIR_NS /* (overridable for instruction counts under valgrind, where a pair takes longer) */
#define PA_TSC_PAIR_NS 2000ull         /* a (tsc, ns) pair read in a longer window is discarded */
#endif
#define PA_TSC_NSEG 8u                 /* segments kept (ticks read up to ~7 periods ago convert exactly) */
#define PA_TSC_WAIT_TICKS 400000ull    /* ~0.1-0.2 ms: a reader past a hard end waits this long at most */
#define PA_TSC_TRIES 8u                /* pairs read per calibration attempt */
#define PA_TSC_RETRY_NS 1000000ull     /* a failed calibration attempt is retried this much later at the earliest */
#define PA_TSC_MAX_FAILS 64u           /* failed attempts before the TSC is given up */
/* Fault knob for tests: PROFAGENT_FAULT_TSC_PAIRS=N (read once, at the first calibration)
 * makes the first N (tsc, CLOCK_MONOTONIC) pairs read as interrupted (0 or unset: none). */
#define PA_TSC_FAULT_ENV "PROFAGENT_FAULT_TSC_PAIRS"

typedef struct pa_tsc_seg {
    uint64_t tsc, ns;   /* start of the segment */
    uint64_t mult;      /* ns per tick << 32 */
    uint64_t soft;      /* ticks after tsc from which readers recalibrate (0: no segment yet) */
    uint64_t end;       /* tsc of the segment's end: the next one starts there or later */
    uint64_t ptsc, pns, pmult; /* the previous segment's line, for ticks in [ptsc, tsc): a segment
                                  is published before it starts (empty range: ptsc == tsc) */
} pa_tsc_seg_t;

typedef struct pa_tsc_clock {
    _Atomic uint32_t seq;      /* seg[(seq >> 1) % PA_TSC_NSEG] is current; odd while the next slot is written */
    _Atomic int on;            /* 1: the TSC is used; 0: not (yet); -1: never (unsuitable) */
    _Atomic int lock;          /* 1 while a reader recalibrates */
    _Alignas(64) pa_tsc_seg_t seg[PA_TSC_NSEG]; /* the current segment and the ones before it
                                                   (one cache line each: a reader touches seq's
                                                   line and one segment line) */
    uint64_t cal_tsc, cal_ns;  /* last measured pair (the rate of the next segment is measured from it) */
    uint64_t rate;             /* measured ns per tick << 32 */
    /* calibration state, under the lock */
    int checked;               /* pa_tsc_usable() and the fault knob were read */
    uint32_t fails;            /* failed calibration attempts (PA_TSC_MAX_FAILS: given up) */
    uint64_t retry_ns;         /* no attempt before this CLOCK_MONOTONIC time */
    uint64_t fault_pairs;      /* pairs still to be read as interrupted (PA_TSC_FAULT_ENV) */
} pa_tsc_clock_t;

__attribute__((weak)) pa_tsc_clock_t pa_tsc;

static inline uint64_t pa_clock_gettime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__)
static inline uint64_t pa_tsc_conv(const pa_tsc_seg_t *g, uint64_t t)
{
    int64_t d = (int64_t)(t - g->tsc); /* negative: a tick before the start (previous segment missing) */
    return g->ns + (uint64_t)(((__int128)d * (__int128)g->mult) >> 32);
}

/* A (tsc, CLOCK_MONOTONIC) pair: the TSC between two clock reads at most PA_TSC_PAIR_NS apart
 * (ns = their midpoint, *hi = the later read); 0 when the window was longer (preempted). */
static inline int pa_tsc_pair(uint64_t *tsc, uint64_t *ns, uint64_t *hi)
{
    uint64_t a = pa_clock_gettime_ns();
    uint64_t t = __rdtsc();
    uint64_t b = pa_clock_gettime_ns();
    if (b - a > PA_TSC_PAIR_NS)
        return 0;
    if (pa_tsc.fault_pairs) { /* the test fault: read as interrupted (callers hold the lock) */
        pa_tsc.fault_pairs--;
        return 0;
    }
    *tsc = t;
    *ns = a + (b - a) / 2;
    *hi = b;
    return 1;
}

/* 1 when the TSC may stand for CLOCK_MONOTONIC here (raw syscalls: no interposed open/read). */
static inline int pa_tsc_usable(void)
{
    unsigned a, b, c, d;
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000000u), "c"(0));
    if (a < 0x80000007u)
        return 0;
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000007u), "c"(0));
    if (!(d & (1u << 8)))
        return 0;
    char buf[16] = {0};
    long fd = syscall(SYS_openat, AT_FDCWD, "/sys/devices/system/clocksource/clocksource0/current_clocksource",
                      O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    long n = syscall(SYS_read, (int)fd, buf, sizeof buf - 1);
    syscall(SYS_close, (int)fd);
    return n >= 3 && memcmp(buf, "tsc", 3) == 0 && (buf[3] == '\n' || buf[3] == 0);
}

/*! pa_tsc_load() : a consistent copy of the current segment (seqlock read, never waits: a
 *  publication in progress writes the other slot, the copy is retried only when seq moved). */
static inline __attribute__((always_inline)) void pa_tsc_load(pa_tsc_seg_t *v)
{
    for (;;) {
        uint32_t s = atomic_load_explicit(&pa_tsc.seq, memory_order_acquire);
        *v = pa_tsc.seg[(s >> 1) % PA_TSC_NSEG];
        atomic_thread_fence(memory_order_acquire);
        if (__builtin_expect(atomic_load_explicit(&pa_tsc.seq, memory_order_relaxed) == s, 1))
            return;
    }
}

/* The current segment (*cur) and the one `t` lies in (*in: the newest starting at or before t
 * among the PA_TSC_NSEG kept; the oldest when t precedes them all, e.g. a reader stopped for
 * several periods between its rdtsc and here). */
static inline void pa_tsc_find(uint64_t t, pa_tsc_seg_t *cur, pa_tsc_seg_t *in)
{
    for (;;) {
        uint32_t s = atomic_load_explicit(&pa_tsc.seq, memory_order_acquire);
        uint32_t i = s >> 1;
        *cur = pa_tsc.seg[i % PA_TSC_NSEG];
        *in = *cur;
        /* while seq is odd the oldest slot is being rewritten: not used */
        for (uint32_t k = 1; k < PA_TSC_NSEG - (s & 1) && (int64_t)(t - in->tsc) < 0; k++) {
            const pa_tsc_seg_t *o = &pa_tsc.seg[(i - k) % PA_TSC_NSEG];
            if (o->soft == 0)
                break; /* no older segment yet */
            *in = *o;
        }
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&pa_tsc.seq, memory_order_relaxed) == s)
            return;
    }
}

/* Publishes `g` as the current segment (lock held): seq odd while the other slot is written. */
static inline void pa_tsc_publish(pa_tsc_clock_t *c, const pa_tsc_seg_t *g)
{
    uint32_t s = atomic_load_explicit(&c->seq, memory_order_relaxed); /* even: only the lock holder writes */
    atomic_store_explicit(&c->seq, s + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release); /* odd seq visible before the slot changes */
    c->seg[((s >> 1) + 1) % PA_TSC_NSEG] = *g;
    atomic_store_explicit(&c->seq, s + 2, memory_order_release);
}

/* A segment from `start` (ns there `ns`) at `mult`, valid PA_TSC_PERIOD_NS at the measured `rate`,
 * following `prev` (NULL: the first). */
static inline pa_tsc_seg_t pa_tsc_seg_make(uint64_t start, uint64_t ns, uint64_t mult, uint64_t rate,
                                           const pa_tsc_seg_t *prev)
{
    uint64_t period = (uint64_t)(((unsigned __int128)PA_TSC_PERIOD_NS << 32) / rate);
    uint64_t margin = (uint64_t)(((unsigned __int128)PA_TSC_MARGIN_NS << 32) / rate);
    pa_tsc_seg_t g = {start, ns, mult, period - margin, start + period, start, ns, mult};
    if (prev && (int64_t)(start - prev->tsc) > 0) {
        g.ptsc = prev->tsc;
        g.pns = prev->ns;
        g.pmult = prev->mult;
    }
    return g;
}

/* The next segment after `cur` from a pair measured now (lock held), or 0 when the pair failed. */
static inline int pa_tsc_next(pa_tsc_clock_t *c, const pa_tsc_seg_t *cur, pa_tsc_seg_t *g)
{
    uint64_t pt, pn, hi;
    if (!pa_tsc_pair(&pt, &pn, &hi) || pt <= c->cal_tsc)
        return 0;
    /* the rate over at least half a period (the previous one otherwise): +-1 us per pair */
    uint64_t rate = pn - c->cal_ns >= PA_TSC_PERIOD_NS / 2
                        ? (uint64_t)(((unsigned __int128)(pn - c->cal_ns) << 32) / (pt - c->cal_tsc))
                        : c->rate;
    int64_t err = (int64_t)(pn - pa_tsc_conv(cur, pt));
    if (err > PA_TSC_STEP_NS || err < -PA_TSC_STEP_NS) {
        *g = pa_tsc_seg_make(pt, pn, rate, rate, cur);
    } else {
        uint64_t start = (int64_t)(pt - cur->end) > 0 ? pt : cur->end; /* continuous at the old end */
        uint64_t period = (uint64_t)(((unsigned __int128)PA_TSC_PERIOD_NS << 32) / rate);
        __int128 corr = (__int128)err * 4294967296 / (__int128)period; /* per tick << 32 */
        __int128 lim = (__int128)rate * PA_TSC_SLEW_PPM / 1000000;
        corr = corr > lim ? lim : corr < -lim ? -lim : corr;
        *g = pa_tsc_seg_make(start, pa_tsc_conv(cur, start), (uint64_t)((__int128)rate + corr), rate, cur);
    }
    c->cal_tsc = pt;
    c->cal_ns = pn;
    c->rate = rate;
    return 1;
}

/* The fault knob's value (PA_TSC_FAULT_ENV): raw environ scan, no allocation. */
static inline uint64_t pa_tsc_fault_env(void)
{
    extern char **environ;
    size_t n = sizeof PA_TSC_FAULT_ENV - 1;
    for (char **e = environ; e && *e; e++)
        if (strncmp(*e, PA_TSC_FAULT_ENV, n) == 0 && (*e)[n] == '=') {
            uint64_t v = 0;
            for (const char *p = *e + n + 1; *p >= '0' && *p <= '9' && v < 1000000000ull; p++)
                v = v * 10 + (uint64_t)(*p - '0');
            return v;
        }
    return 0;
}

/* A calibration reading (lock held): up to PA_TSC_TRIES pairs, the first not interrupted. On
 * failure the next attempt waits PA_TSC_RETRY_NS; after PA_TSC_MAX_FAILS the TSC is given up.
 * `now` is CLOCK_MONOTONIC just read. Returns 1 with the pair, 0 (clock_gettime meanwhile). */
static inline int pa_tsc_cal_pair(pa_tsc_clock_t *c, uint64_t now, uint64_t *pt, uint64_t *pn, uint64_t *hi)
{
    if (now < c->retry_ns)
        return 0;
    for (unsigned i = 0; i < PA_TSC_TRIES; i++)
        if (pa_tsc_pair(pt, pn, hi))
            return 1;
    if (++c->fails >= PA_TSC_MAX_FAILS)
        atomic_store_explicit(&c->on, -1, memory_order_release);
    c->retry_ns = now + PA_TSC_RETRY_NS;
    return 0;
}

/* Warm-up under the lock: the first pair, then the first segment once PA_TSC_WARMUP_NS passed;
 * returns the time of `t`. */
static inline uint64_t pa_tsc_warmup(pa_tsc_clock_t *c, uint64_t t)
{
    uint64_t pt, pn, hi, now = pa_clock_gettime_ns();
    if (!c->checked) { /* first call in the process */
        c->checked = 1;
        c->fault_pairs = pa_tsc_fault_env();
        if (!pa_tsc_usable()) {
            atomic_store_explicit(&c->on, -1, memory_order_release);
            return now;
        }
    }
    if (c->cal_tsc == 0) { /* the warm-up's first pair */
        if (!pa_tsc_cal_pair(c, now, &pt, &pn, &hi))
            return now;
        c->cal_tsc = pt;
        c->cal_ns = pn;
        return hi; /* not below `now`, nor below a value another thread got */
    }
    if (now - c->cal_ns < PA_TSC_WARMUP_NS) /* (no pair read for nothing meanwhile) */
        return now;
    if (pa_tsc_cal_pair(c, now, &pt, &pn, &hi) && pt > c->cal_tsc) {
        c->rate = (uint64_t)(((unsigned __int128)(pn - c->cal_ns) << 32) / (pt - c->cal_tsc));
        /* starts at the pair's later read: never below a clock_gettime another thread just returned */
        pa_tsc_seg_t g = pa_tsc_seg_make(pt, hi, c->rate, c->rate, NULL);
        pa_tsc_publish(c, &g);
        c->cal_tsc = pt;
        c->cal_ns = pn;
        atomic_store_explicit(&c->on, 1, memory_order_release);
        return pa_tsc_conv(&g, t);
    }
    return pa_clock_gettime_ns();
}

/* pa_clock_slow()'s work: `t` (the tsc just read) lies outside the current segment's
 * [start, soft end], or the clock is warming up or off. */
static inline uint64_t pa_clock_slow_(uint64_t t)
{
    pa_tsc_clock_t *c = &pa_tsc;
    pa_tsc_seg_t cur, in;
    uint64_t deadline = 0;
    for (;;) {
        int on = atomic_load_explicit(&c->on, memory_order_acquire);
        if (on < 0)
            return pa_clock_gettime_ns();
        pa_tsc_find(t, &cur, &in);
        if (on > 0 && (t - cur.tsc <= cur.soft || (int64_t)(t - cur.tsc) < 0))
            return pa_tsc_conv(&in, t); /* before the current segment, or it was renewed */
        int expect = 0;
        if (atomic_compare_exchange_strong(&c->lock, &expect, 1))
            break;
        if (on == 0)
            return pa_clock_gettime_ns();
        /* another thread recalibrates: the current segment holds up to its end */
        if ((int64_t)(t - cur.end) <= 0)
            return pa_tsc_conv(&cur, t);
        uint64_t now = __rdtsc();
        if (!deadline)
            deadline = now + PA_TSC_WAIT_TICKS;
        else if ((int64_t)(now - deadline) > 0)
            return pa_tsc_conv(&cur, t); /* the recalibrating thread is stopped: extend (rare) */
        _mm_pause();
    }
    /* Under the lock, with the state the last holder left. The caller's look at the segment may
     * predate a recalibration by another thread (checked above, once more here): recalibrating
     * again would measure the rate over the few us since that pair (a rate off by percents, the
     * clock ms off by the segment's end). */
    uint64_t now;
    int on = atomic_load_explicit(&c->on, memory_order_relaxed);
    pa_tsc_find(t, &cur, &in);
    pa_tsc_seg_t g;
    if (on == 0)
        now = pa_tsc_warmup(c, t);
    else if (t - cur.tsc <= cur.soft || (int64_t)(t - cur.tsc) < 0)
        now = pa_tsc_conv(&in, t);
    else if (pa_tsc_next(c, &cur, &g)) {
        pa_tsc_publish(c, &g);
        now = pa_tsc_conv((int64_t)(t - g.tsc) < 0 ? &cur : &g, t);
    } else
        now = pa_tsc_conv(&cur, t); /* preempted while reading the pair: the next reader retries */
    atomic_store_explicit(&c->lock, 0, memory_order_release);
    return now;
}

/*! pa_clock_slow() : warm-up and recalibration (out of line); keeps errno. */
__attribute__((weak, noinline)) uint64_t pa_clock_slow(uint64_t t)
{
    int saved_errno = errno; /* callers rely on pa_clock_ns() keeping errno (the syscalls below) */
    uint64_t r = pa_clock_slow_(t);
    errno = saved_errno;
    return r;
}
#endif

/*! pa_clock_source() : the clock pa_clock_ns() reads now: "tsc" (converted TSC segments) or
 *  "clock_gettime" (warming up, the TSC unsuitable or given up, or PA_CLOCK_TSC=0). */
static inline const char *pa_clock_source(void);

/* The TSC segments are on by default on x86-64 (an invariant TSC that the kernel uses as its
 * clocksource; clock_gettime otherwise); -DPA_CLOCK_TSC=0 makes pa_clock_ns() clock_gettime. */
#ifndef PA_CLOCK_TSC
#define PA_CLOCK_TSC 1
#endif

#if defined(__x86_64__) && PA_CLOCK_TSC
/*! pa_clock_tick_ns() : the CLOCK_MONOTONIC ns of TSC value `t` (read at or before this call),
 *  as pa_clock_ns() converts the tick it reads: by the segment `t` lies in (the newest starting at
 *  or before it), recalibrating first when `t` is past the current segment's soft end. The same
 *  value whenever it is called (the reading thread, or the aggregator later), except when a
 *  recalibration raced the reading thread's conversion (a stepped segment, or a recalibrating
 *  thread stopped past PA_TSC_WAIT_TICKS: the reader then used the old line). Only while the TSC is
 *  on (pa_tsc.on == 1). Never blocks, keeps errno. */
static inline __attribute__((always_inline)) uint64_t pa_clock_tick_ns(uint64_t t)
{
    pa_tsc_seg_t v;
    pa_tsc_load(&v); /* one cache line (the fields not used below are not loaded) */
    uint64_t d = t - v.tsc;
    if (__builtin_expect(d <= v.soft, 1)) /* not before the start (d would wrap) nor past the soft end */
        return v.ns + (uint64_t)(((unsigned __int128)d * v.mult) >> 32);
    /* published ahead (the last PA_TSC_MARGIN_NS of each period): the previous line */
    if ((int64_t)d < 0 && t - v.ptsc < v.tsc - v.ptsc)
        return v.pns + (uint64_t)(((unsigned __int128)(t - v.ptsc) * v.pmult) >> 32);
    return pa_clock_slow(t); /* past the soft end, older than the previous line, or no segment */
}
#endif

/*! pa_clock_ns() : CLOCK_MONOTONIC now, in ns: with PA_CLOCK_TSC (the default) an rdtsc, a
 *  multiply and a seqlock copy of the segment once the TSC is calibrated (see above); clock_gettime
 *  (vDSO) otherwise. Async-signal-safe, never blocks, keeps errno. */
static inline __attribute__((always_inline)) uint64_t pa_clock_ns(void)
{
#if defined(__x86_64__) && PA_CLOCK_TSC
    return pa_clock_tick_ns(__rdtsc());
#else
    return pa_clock_gettime_ns();
#endif
}

static inline const char *pa_clock_source(void)
{
#if defined(__x86_64__) && PA_CLOCK_TSC
    if (atomic_load_explicit(&pa_tsc.on, memory_order_acquire) == 1)
        return "tsc";
#endif
    return "clock_gettime";
}

/*
 * Stamps: the hot paths (a ze call's start and end, an HGTX push or pop) store the raw TSC in
 * their ring record and leave the conversion to the ring's consumer (pa_ring_drain converts
 * before its sink sees the record), so the application thread pays one rdtsc and no segment
 * load, compare or multiply. A stamp is either ns (bit 63 clear: CLOCK_MONOTONIC ns are far below
 * 2^63) or PA_CLOCK_TICK | tsc (the TSC counts from boot: bit 63 is not reached in a century at
 * 5 GHz); ticks only once the TSC is on, so a tick always converts by a published segment.
 */
#define PA_CLOCK_TICK (1ull << 63)

#if defined(__x86_64__) && PA_CLOCK_TSC
/* pa_clock_stamp() before the TSC is on: out of line, so that the hot paths inlining the stamp
 * keep their registers (the segment read inlined there made them spill around every stamp). */
static __attribute__((noinline, cold, unused)) uint64_t pa_clock_stamp_ns_cold(void)
{
    return pa_clock_ns();
}
#endif

/*! pa_clock_stamp() : now, as a stamp (see above): PA_CLOCK_TICK | rdtsc once the TSC is on,
 *  pa_clock_ns() before (the warm-up calibrates through it) or when the TSC is not used.
 *  Async-signal-safe, keeps errno. Convert with pa_clock_stamp_ns(). */
static inline __attribute__((always_inline)) uint64_t pa_clock_stamp(void)
{
#if defined(__x86_64__) && PA_CLOCK_TSC
    /* acquire: the segments published before `on` became 1 are visible to whoever sees this
     * record through the ring's release/acquire of its tail */
    if (__builtin_expect(atomic_load_explicit(&pa_tsc.on, memory_order_acquire) == 1, 1))
        return __rdtsc() | PA_CLOCK_TICK;
    return pa_clock_stamp_ns_cold();
#else
    return pa_clock_ns();
#endif
}

/*! pa_clock_tick_stamp() : pa_clock_stamp() for a caller that already got a tick from it (the TSC,
 *  once on, stays on): the rdtsc alone. */
static inline __attribute__((always_inline)) uint64_t pa_clock_tick_stamp(void)
{
#if defined(__x86_64__) && PA_CLOCK_TSC
    return __rdtsc() | PA_CLOCK_TICK;
#else
    return pa_clock_ns();
#endif
}

/*! pa_clock_stamp_ns() : the ns of stamp `s` (identity for ns stamps; pa_clock_tick_ns() of a
 *  tick). */
static inline uint64_t pa_clock_stamp_ns(uint64_t s)
{
#if defined(__x86_64__) && PA_CLOCK_TSC
    if (s & PA_CLOCK_TICK)
        return pa_clock_tick_ns(s & ~PA_CLOCK_TICK);
#endif
    return s;
}

#if defined(__x86_64__) && PA_CLOCK_TSC
/*! pa_clock_stamp_ns_in() : pa_clock_stamp_ns() for a consumer converting many stamps: *seg is a
 *  segment it loaded once (pa_tsc_load(); soft == 0 and tsc == 0: none yet, loaded here on the
 *  first tick). A tick within [seg->tsc, seg->tsc + seg->soft] converts by it (its successor starts
 *  after its soft end, so the segment such a tick lies in never changes); any other through
 *  pa_clock_tick_ns(). Same values as pa_clock_stamp_ns(). */
static inline uint64_t pa_clock_stamp_ns_in(pa_tsc_seg_t *seg, uint64_t s)
{
    if (!(s & PA_CLOCK_TICK))
        return s;
    uint64_t t = s & ~PA_CLOCK_TICK;
    if (__builtin_expect(seg->soft == 0, 0))
        pa_tsc_load(seg);
    uint64_t d = t - seg->tsc;
    if (__builtin_expect(d <= seg->soft, 1))
        return seg->ns + (uint64_t)(((unsigned __int128)d * seg->mult) >> 32);
    return pa_clock_tick_ns(t);
}
#endif

#endif
