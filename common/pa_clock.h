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
 * vDSO clock_gettime costs ~90 ns and a bare rdtsc ~50 ns; the ze and HGTX hot paths read the
 * clock twice per event. pa_clock_ns() therefore converts the TSC with a linear segment
 * (ns = seg.ns + (tsc - seg.tsc) * seg.mult / 2^32) that follows CLOCK_MONOTONIC:
 *
 *  - the TSC is used only when it is invariant (CPUID 0x80000007 EDX bit 8) and the kernel's
 *    clocksource is "tsc" (so the kernel found it synchronized across CPUs); otherwise, and in
 *    the first PA_TSC_WARMUP_NS of the process, pa_clock_ns() is clock_gettime itself;
 *  - the first segment starts on a (tsc, CLOCK_MONOTONIC) pair with the rate measured over the
 *    warm-up (~20 ppm: a pair's uncertainty is half its read window, <= 1 us, ~0.1 us typical);
 *  - every PA_TSC_PERIOD_NS the first reader past the segment's end reads a new pair and
 *    starts a new segment *continuous* with the old one whose rate absorbs the measured error
 *    over the next period (slewed, at most PA_TSC_SLEW_PPM), so the clock stays monotonic on a
 *    thread and within ~1 us of CLOCK_MONOTONIC; an error above PA_TSC_STEP_NS (suspend,
 *    migration) is stepped. Readers never wait: a recalibration in progress elsewhere (or in a
 *    signal handler's interrupted thread) just extends the current segment.
 *
 * Everything (the definitions are weak, in this header) works without an init call.
 */

#define PA_TSC_WARMUP_NS 10000000ull   /* clock_gettime only, then the first segment */
#define PA_TSC_PERIOD_NS 50000000ull   /* segment length */
#define PA_TSC_STEP_NS 1000000ll       /* larger errors are stepped, not slewed */
#define PA_TSC_SLEW_PPM 500            /* bound of the rate correction */
#define PA_TSC_PAIR_NS 2000ull         /* a (tsc, ns) pair read in a longer window is discarded */

typedef struct pa_tsc_seg {
    uint64_t tsc, ns;   /* start of the segment */
    uint64_t mult;      /* ns per tick << 32 */
    uint64_t end;       /* tsc after which the next reader recalibrates */
} pa_tsc_seg_t;

typedef struct pa_tsc_clock {
    _Atomic uint32_t seq;      /* seg[seq & 1] is current; +1 per publication */
    _Atomic int on;            /* 1: the TSC is used; 0: not (yet); -1: never (unsuitable) */
    _Atomic int lock;          /* 1 while a reader recalibrates */
    pa_tsc_seg_t seg[2];
    uint64_t cal_tsc, cal_ns;  /* last measured pair (the rate of the next segment is measured from it) */
    uint64_t rate;             /* measured ns per tick << 32 */
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
    int64_t d = (int64_t)(t - g->tsc); /* a little negative when read on another CPU just before */
    return g->ns + (uint64_t)(((__int128)d * (__int128)g->mult) >> 32);
}

/* A (tsc, CLOCK_MONOTONIC) pair: the TSC between two clock reads at most PA_TSC_PAIR_NS apart
 * (ns = their midpoint); 0 when the window was longer (preempted, or a slow clock read). */
static inline int pa_tsc_pair(uint64_t *tsc, uint64_t *ns)
{
    uint64_t a = pa_clock_gettime_ns();
    uint64_t t = __rdtsc();
    uint64_t b = pa_clock_gettime_ns();
    if (b - a > PA_TSC_PAIR_NS)
        return 0;
    *tsc = t;
    *ns = a + (b - a) / 2;
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

/* pa_clock_slow()'s work: warm-up (clock_gettime) and recalibration; `t` the tsc just read. */
static inline uint64_t pa_clock_slow_(uint64_t t)
{
    pa_tsc_clock_t *c = &pa_tsc;
    int on = atomic_load_explicit(&c->on, memory_order_acquire);
    uint32_t s = atomic_load_explicit(&c->seq, memory_order_acquire);
    int expect = 0;
    if (on < 0 || !atomic_compare_exchange_strong(&c->lock, &expect, 1))
        return on > 0 ? pa_tsc_conv(&c->seg[s & 1], t) : pa_clock_gettime_ns();
    uint64_t now = 0;
    uint64_t pt, pn;
    if (on == 0 && c->cal_tsc == 0) { /* first call in the process */
        if (!pa_tsc_usable() || !pa_tsc_pair(&pt, &pn)) {
            atomic_store_explicit(&c->on, -1, memory_order_release);
            atomic_store_explicit(&c->lock, 0, memory_order_release);
            return pa_clock_gettime_ns();
        }
        c->cal_tsc = pt;
        c->cal_ns = pn;
        now = pn;
    } else if (on == 0) { /* warming up: the rate once PA_TSC_WARMUP_NS passed */
        if (pa_tsc_pair(&pt, &pn) && pn - c->cal_ns >= PA_TSC_WARMUP_NS && pt > c->cal_tsc) {
            c->rate = (uint64_t)(((unsigned __int128)(pn - c->cal_ns) << 32) / (pt - c->cal_tsc));
            pa_tsc_seg_t g = {pt, pn, c->rate, pt + (uint64_t)(((unsigned __int128)PA_TSC_PERIOD_NS << 32) / c->rate)};
            c->seg[(s + 1) & 1] = g;
            atomic_store_explicit(&c->seq, s + 1, memory_order_release);
            c->cal_tsc = pt;
            c->cal_ns = pn;
            atomic_store_explicit(&c->on, 1, memory_order_release);
            now = pa_tsc_conv(&g, t);
        }
        if (!now)
            now = pa_clock_gettime_ns();
    } else { /* a segment ended: measure, then a continuous segment slewing the error away */
        const pa_tsc_seg_t *cur = &c->seg[s & 1];
        if (pa_tsc_pair(&pt, &pn) && pt > c->cal_tsc) {
            uint64_t rate = (uint64_t)(((unsigned __int128)(pn - c->cal_ns) << 32) / (pt - c->cal_tsc));
            uint64_t period = (uint64_t)(((unsigned __int128)PA_TSC_PERIOD_NS << 32) / rate);
            uint64_t est = pa_tsc_conv(cur, pt);
            int64_t err = (int64_t)(pn - est);
            pa_tsc_seg_t g;
            if (err > PA_TSC_STEP_NS || err < -PA_TSC_STEP_NS) {
                g = (pa_tsc_seg_t){pt, pn, rate, pt + period};
            } else {
                __int128 corr = (__int128)err * 4294967296 / (__int128)period; /* per tick << 32 */
                __int128 lim = (__int128)rate * PA_TSC_SLEW_PPM / 1000000;
                corr = corr > lim ? lim : corr < -lim ? -lim : corr;
                g = (pa_tsc_seg_t){pt, est, (uint64_t)((__int128)rate + corr), pt + period};
            }
            c->seg[(s + 1) & 1] = g;
            atomic_store_explicit(&c->seq, s + 1, memory_order_release);
            c->cal_tsc = pt;
            c->cal_ns = pn;
            c->rate = rate;
            now = pa_tsc_conv(&g, t);
        } else {
            now = pa_tsc_conv(cur, t); /* preempted while reading the pair: next reader retries */
        }
    }
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

/* The TSC segments are off by default: with 4 threads on a 2-vCPU VM a recalibration now and then
 * leaves the clock 1-2.5 ms behind CLOCK_MONOTONIC for the rest of a segment (about 1 process in
 * 10 over 250 ms; undiagnosed), which would misplace host events against device times and break
 * the cross-process alignment merge relies on. -DPA_CLOCK_TSC=1 turns them on for that work. */
#ifndef PA_CLOCK_TSC
#define PA_CLOCK_TSC 0
#endif

/*! pa_clock_ns() : CLOCK_MONOTONIC now, in ns: clock_gettime (vDSO); with PA_CLOCK_TSC an rdtsc,
 *  a multiply and three loads once the TSC is calibrated (see above). Async-signal-safe, never
 *  blocks, keeps errno. */
static inline uint64_t pa_clock_ns(void)
{
#if defined(__x86_64__) && PA_CLOCK_TSC
    uint64_t t = __rdtsc();
    for (;;) {
        uint32_t s = atomic_load_explicit(&pa_tsc.seq, memory_order_acquire);
        const pa_tsc_seg_t *g = &pa_tsc.seg[s & 1];
        pa_tsc_seg_t v = *g;
        atomic_thread_fence(memory_order_acquire);
        if (__builtin_expect(atomic_load_explicit(&pa_tsc.seq, memory_order_relaxed) != s, 0))
            continue; /* two publications during the copy */
        if (__builtin_expect(v.mult == 0 || (int64_t)(t - v.end) > 0, 0))
            return pa_clock_slow(t);
        return pa_tsc_conv(&v, t);
    }
#else
    return pa_clock_gettime_ns();
#endif
}

#endif
