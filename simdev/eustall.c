/* eustall.c - EU-stall sampling on the software device: at each sampling instant a running kernel's
 * busy hardware threads are sampled onto instructions and stall reasons (systematic sampling over
 * the ISA weights), aggregated into 64-byte reports in a bounded per-device buffer. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pa_sd_metrics.h"

typedef struct eustall_dev {
    pa_sd_streamer st;     /* st.gen: kernels restart their instant counter at a new one */
    uint64_t period_ns;
    uint64_t open_ns;      /* sampling instants are open_ns + k * period_ns, k >= 1 */
    pa_sd_eustall_report *ring;
    uint32_t cap, head, count;
    bool lost;             /* reports dropped since the last read */
    bool flag_next;        /* the next stored report carries the overflow flag */
    uint64_t launches;     /* kernel launches sampled: seeds the per-instant draws */
} eustall_dev;

static eustall_dev g_dev[PA_SD_MAX_DEVICES] = {[0 ... PA_SD_MAX_DEVICES - 1] = {.st = PA_SD_STREAMER_INIT}};

static eustall_dev *st_of(pa_sd_device *dev) { return &g_dev[dev->index % PA_SD_MAX_DEVICES]; }

uint32_t pa_sd_eustall_round_period(uint64_t ns)
{
    uint64_t tick = 1000000000ull / pa_sd_config_get()->timer_hz;
    if (tick == 0)
        tick = 1;
    uint64_t unit = ns / tick / SIMDEV_EUSTALL_CLOCK_GRANULARITY;
    unit = unit < 1 ? 1 : unit > 7 ? 7 : unit;
    return (uint32_t)(unit * SIMDEV_EUSTALL_CLOCK_GRANULARITY * tick);
}

uint32_t pa_sd_eustall_capacity(void)
{
    return pa_sd_streamer_capacity(pa_sd_config_get()->eustall_buffer, SIMDEV_EUSTALL_REPORT_BYTES);
}

int pa_sd_eustall_open(pa_sd_device *dev, uint32_t period_ns, uint32_t notify_n, ze_event_handle_t ev,
                       uint64_t *gen)
{
    eustall_dev *s = st_of(dev);
    uint32_t cap = pa_sd_eustall_capacity();
    pa_sd_eustall_report *ring = malloc((size_t)cap * sizeof *ring);
    if (!ring)
        return -1;
    pthread_mutex_lock(&s->st.mu);
    if (pa_sd_streamer_begin(&s->st, notify_n, ev, gen)) {
        pthread_mutex_unlock(&s->st.mu);
        free(ring);
        return 1;
    }
    s->ring = ring;
    s->cap = cap;
    s->head = s->count = 0;
    s->lost = s->flag_next = false;
    s->period_ns = period_ns;
    s->open_ns = pa_sd_clock_host_ns();
    pthread_mutex_unlock(&s->st.mu);
    return 0;
}

/* The buffer taken out of s, now closed (caller holds st.mu; frees it after unlocking). */
static pa_sd_eustall_report *take_ring(eustall_dev *s)
{
    pa_sd_eustall_report *ring = s->ring;
    pa_sd_streamer_end(&s->st);
    s->ring = NULL;
    s->count = s->cap = 0;
    return ring;
}

void pa_sd_eustall_close(pa_sd_device *dev, uint64_t gen)
{
    eustall_dev *s = st_of(dev);
    pthread_mutex_lock(&s->st.mu);
    if (!pa_sd_streamer_is(&s->st, gen)) { /* closed already (e.g. in a fork child) */
        pthread_mutex_unlock(&s->st.mu);
        return;
    }
    pa_sd_eustall_report *ring = take_ring(s);
    pthread_mutex_unlock(&s->st.mu);
    free(ring);
}

uint32_t pa_sd_eustall_read(pa_sd_device *dev, uint64_t gen, uint8_t *out, uint32_t max, bool *lost)
{
    eustall_dev *s = st_of(dev);
    pthread_mutex_lock(&s->st.mu);
    *lost = false;
    if (!pa_sd_streamer_is(&s->st, gen)) {
        pthread_mutex_unlock(&s->st.mu);
        return 0;
    }
    uint32_t n = max < s->count ? max : s->count;
    for (uint32_t i = 0; i < n; i++) {
        memcpy(out + (size_t)i * SIMDEV_EUSTALL_REPORT_BYTES, &s->ring[s->head], SIMDEV_EUSTALL_REPORT_BYTES);
        s->head = s->head + 1 == s->cap ? 0 : s->head + 1;
    }
    s->count -= n;
    *lost = s->lost;
    s->lost = false;
    pa_sd_streamer_notify(&s->st, s->count);
    pthread_mutex_unlock(&s->st.mu);
    return n;
}

/* Store one report or count it lost when the buffer is full; caller holds s->st.mu. */
static void push_report(eustall_dev *s, uint32_t ip8, const uint8_t cnt[PA_SD_RAW_COUNT], uint16_t subslice)
{
    if (s->count == s->cap) {
        s->lost = true;
        s->flag_next = true;
        return;
    }
    uint32_t tail = s->head + s->count;
    if (tail >= s->cap)
        tail -= s->cap;
    pa_sd_eustall_report *r = &s->ring[tail];
    memset(r, 0, sizeof *r);
    unsigned __int128 v = ip8 & 0x1fffffffu;
    for (int k = 0; k < PA_SD_RAW_COUNT; k++)
        v |= (unsigned __int128)cnt[k] << (29 + 8 * k);
    for (int i = 0; i < 13; i++) /* bits 0..100 */
        r->b[i] = (uint8_t)(v >> (8 * i));
    uint16_t flags = s->flag_next ? PA_SD_EUSTALL_FLAG_OVERFLOW : 0;
    s->flag_next = false;
    r->b[48] = (uint8_t)subslice;
    r->b[49] = (uint8_t)(subslice >> 8);
    r->b[50] = (uint8_t)flags;
    r->b[51] = (uint8_t)(flags >> 8);
    s->count++;
}

static uint64_t splitmix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Raw counter slot of each stall reason (metric order -> report order). */
static const uint8_t g_raw_of[PA_SD_SR_COUNT] = {
    [PA_SD_SR_ACTIVE] = PA_SD_RAW_ACTIVE, [PA_SD_SR_CONTROL] = PA_SD_RAW_CONTROL,
    [PA_SD_SR_PIPE] = PA_SD_RAW_PIPE, [PA_SD_SR_SEND] = PA_SD_RAW_SEND, [PA_SD_SR_DIST] = PA_SD_RAW_DIST,
    [PA_SD_SR_SBID] = PA_SD_RAW_SBID, [PA_SD_SR_SYNC] = PA_SD_RAW_SYNC,
    [PA_SD_SR_INSTFETCH] = PA_SD_RAW_INSTFETCH, [PA_SD_SR_OTHER] = PA_SD_RAW_OTHER,
};

/* A kernel being sampled: boundaries of the (instruction, reason) cells scaled to sample units in
 * 32.32 fixed point, bnd[b] = cum[b] * threads * 2^32 / cum[last]. */
typedef struct run {
    const pa_sd_isa *isa;
    uint64_t base;
    uint32_t threads;
    uint64_t *bnd;
    uint64_t gen, last_k, launch;
} run;

/* First sample index j with (j + u) * W / T >= cum[b], i.e. ceil(bnd[b] - u). */
static uint32_t first_j(const run *r, size_t b, uint64_t u32)
{
    uint64_t x = r->bnd[b];
    return x <= u32 ? 0 : (uint32_t)((x - u32 + 0xffffffffull) >> 32);
}

/* One sampling instant: T samples j = 0..T-1 at positions (j + u) * W / T on the cumulative weight
 * axis; thread j lives on subslice j / 128; one report per (instruction, subslice) hit. */
static void sample_instant(eustall_dev *s, const run *r, uint64_t k)
{
    uint64_t u32 = splitmix(pa_sd_config_get()->eustall_seed ^ splitmix(r->launch * 0x100000001b3ull + k)) >> 32;
    uint32_t n = r->isa->ninstr;
    uint32_t j0 = first_j(r, 0, u32);
    for (uint32_t i = 0; i < n; i++) {
        size_t b0 = (size_t)i * PA_SD_SR_COUNT;
        uint32_t j1 = first_j(r, b0 + PA_SD_SR_COUNT, u32);
        if (j1 > r->threads)
            j1 = r->threads;
        if (j1 <= j0)
            continue;
        uint32_t rs[PA_SD_SR_COUNT + 1];
        for (uint32_t q = 0; q <= PA_SD_SR_COUNT; q++)
            rs[q] = q == 0 ? j0 : q == PA_SD_SR_COUNT ? j1 : first_j(r, b0 + q, u32);
        uint32_t ip8 = (uint32_t)(((r->base + (uint64_t)i * PA_SD_ISA_INSTR_BYTES) >> 3) & 0x1fffffffu);
        for (uint32_t lo = j0; lo < j1;) {
            uint32_t ss = lo / SIMDEV_THREADS_PER_SUBSLICE;
            uint32_t hi = (ss + 1) * SIMDEV_THREADS_PER_SUBSLICE;
            if (hi > j1)
                hi = j1;
            uint8_t cnt[PA_SD_RAW_COUNT] = {0};
            for (uint32_t q = 0; q < PA_SD_SR_COUNT; q++) {
                uint32_t a = rs[q] > lo ? rs[q] : lo, z = rs[q + 1] < hi ? rs[q + 1] : hi;
                if (z > a)
                    cnt[g_raw_of[q]] = (uint8_t)(z - a); /* <= 128 threads per subslice */
            }
            push_report(s, ip8, cnt, (uint16_t)ss);
            lo = hi;
        }
        j0 = j1;
    }
}

/* Sample every instant in (start, min(now, end)] not sampled yet; returns after unlocking. */
static void sample_upto(pa_sd_device *dev, run *r, uint64_t start, uint64_t until)
{
    eustall_dev *s = st_of(dev);
    pthread_mutex_lock(&s->st.mu);
    if (!s->st.open || !s->period_ns) {
        pthread_mutex_unlock(&s->st.mu);
        return;
    }
    if (r->gen != s->st.gen) { /* a new streamer: restart from the kernel start or open */
        r->gen = s->st.gen;
        uint64_t from = start > s->open_ns ? start : s->open_ns;
        r->last_k = (from - s->open_ns) / s->period_ns;
        r->launch = ++s->launches;
    }
    if (until > s->open_ns) {
        uint64_t k_now = (until - s->open_ns) / s->period_ns;
        for (uint64_t k = r->last_k + 1; k <= k_now; k++)
            sample_instant(s, r, k);
        if (k_now > r->last_k)
            r->last_k = k_now;
    }
    pa_sd_streamer_notify(&s->st, s->count);
    pthread_mutex_unlock(&s->st.mu);
}

uint32_t pa_sd_kernel_threads(uint64_t groups, const uint32_t gsize[3])
{
    uint64_t gs = (uint64_t)gsize[0] * gsize[1] * gsize[2];
    uint64_t t = groups * ((gs + SIMDEV_SIMD_WIDTH - 1) / SIMDEV_SIMD_WIDTH);
    return (uint32_t)(t < 1 ? 1 : t > SIMDEV_HW_THREADS ? SIMDEV_HW_THREADS : t);
}

static int run_init(run *r, const pa_sd_isa *isa, uint64_t base, uint32_t threads)
{
    memset(r, 0, sizeof *r);
    r->isa = isa;
    r->base = base;
    r->threads = threads;
    r->gen = UINT64_MAX;
    size_t nb = (size_t)isa->ninstr * PA_SD_SR_COUNT + 1;
    uint64_t total = isa->cum[nb - 1];
    if (!(r->bnd = malloc(nb * sizeof *r->bnd)))
        return -1;
    for (size_t b = 0; b < nb; b++)
        r->bnd[b] = total ? (uint64_t)(((unsigned __int128)isa->cum[b] * threads << 32) / total) : 0;
    return 0;
}

#define SLICE_NS 1000000ull /* reports reach the buffer at least every 1 ms of a running kernel */

uint64_t pa_sd_eustall_kernel(pa_sd_device *dev, const pa_sd_isa *isa, uint64_t base, uint32_t threads,
                              uint64_t start, uint64_t end)
{
    run r;
    if (!pa_sd_metrics_enabled() || !pa_sd_config_get()->eustall || !isa || !isa->cum ||
        run_init(&r, isa, base, threads) != 0) {
        pa_sd_clock_wait_until(end);
        return end;
    }
    for (uint64_t now = pa_sd_clock_host_ns(); now < end && !pa_sd_shutting_down(); now = pa_sd_clock_host_ns()) {
        uint64_t next = now + SLICE_NS;
        if (next >= end) {
            pa_sd_clock_wait_until(end);
        } else {
            struct timespec ts = {0, (long)(next - now)};
            nanosleep(&ts, NULL);
        }
        now = pa_sd_clock_host_ns();
        sample_upto(dev, &r, start, now < end ? now : end);
    }
    sample_upto(dev, &r, start, end);
    free(r.bnd);
    return end;
}

void pa_sd_eustall_atfork(int phase)
{
    for (uint32_t i = 0; i < PA_SD_MAX_DEVICES; i++)
        if (pa_sd_streamer_atfork(&g_dev[i].st, phase))
            free(take_ring(&g_dev[i]));
}
