/* pcs_reader.c - one streamer reader thread per device: activate EuStallSampling, open the streamer,
 * wait on its notification event (50 ms bound, as PTI), read, decode with the driver's calculator,
 * deliver to the agent's ring and/or the PTI session; final read and close at stop. Every loader
 * call is in a window of the loader's teardown (collector/ze.h): once it began a reader ends
 * without another call. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pcs_internal.h"
#include "../common/pa_clock.h"
#include "../common/pa_log.h"
#include "../common/pa_thread.h"

#define PCS_WAIT_NS 50000000ull      /* the longest between two reads without a notification */
#define PCS_NOTIFY_EVERY 32768u      /* PTI's notifyEveryNReports */
#define PCS_JOIN_NS 2000000000ll     /* bound of a reader join */
#define PCS_CHUNK_ENTRIES 512u       /* sample entries per ring record */

typedef struct reader {
    pcs_dev_t *d;
    pthread_t th;
    int running;
    _Atomic int stop;
    zet_metric_streamer_handle_t s;
    ze_event_pool_handle_t pool;
    ze_event_handle_t ev;
    void *ring;
    uint32_t kcursor;                /* kernels of pcs_kernels_get() already emitted to the ring */
    uint32_t period, notify;
    uint8_t *raw; size_t rawcap;
    zet_typed_value_t *vals; size_t valcap;
    uint32_t *ent; size_t entcap;
    _Atomic uint64_t flush_req, flush_done;
    uint64_t reads;
    int abandoned;                   /* the loader's teardown began: the streamer stays open */
} reader_t;

static reader_t readers[PCS_MAX_DEVICES];
static pthread_mutex_t smu = PTHREAD_MUTEX_INITIALIZER;   /* subscriptions, reader start/stop */
static _Atomic int readers_left; /* readers whose join timed out: they may still use their device */
static pthread_mutex_t sink_mu = PTHREAD_MUTEX_INITIALIZER; /* the PTI sink pointer and its table */
static pcs_pti_sink_t *pti_sink;
static int subs;

static uint64_t tval(const zet_typed_value_t *v)
{
    switch (v->type) {
    case ZET_VALUE_TYPE_UINT32: return v->value.ui32;
    case ZET_VALUE_TYPE_UINT64: return v->value.ui64;
    case ZET_VALUE_TYPE_FLOAT32: return v->value.fp32 > 0 ? (uint64_t)v->value.fp32 : 0;
    case ZET_VALUE_TYPE_FLOAT64: return v->value.fp64 > 0 ? (uint64_t)v->value.fp64 : 0;
    case ZET_VALUE_TYPE_BOOL8: return v->value.b8 != 0;
    default: return 0;
    }
}

static void emit_kernels(reader_t *r)
{
    uint32_t n = pcs_kernels_count();
    for (; r->kcursor < n; r->kcursor++) {
        const pcs_kernel_t *k = pcs_kernels_get(r->kcursor);
        if (k->k.device != r->d->index)
            continue;
        size_t need = pa_pcs_kernel_payload(&k->k, k->name, (const char *const *)k->files, k->lines, NULL, 0);
        uint8_t *buf = malloc(need);
        if (!buf)
            continue;
        pa_pcs_kernel_payload(&k->k, k->name, (const char *const *)k->files, k->lines, buf, need);
        pa_record_t rec = {.kind = PA_REC_PCS_KERNEL, .t0 = pa_clock_ns()};
        pcs_host.ring_emit(r->ring, &rec, buf, (uint32_t)need);
        free(buf);
    }
}

static void deliver(reader_t *r, size_t nent, uint64_t reports, int dropped)
{
    uint32_t nr = r->d->nreasons, dev = r->d->index;
    if (r->ring) {
        emit_kernels(r);
        size_t i = 0;
        do { /* one record even without entries: it carries the report count and the drop flag */
            size_t m = nent - i < PCS_CHUNK_ENTRIES ? nent - i : PCS_CHUNK_ENTRIES;
            pa_record_t rec = {.kind = PA_REC_PCS_SAMPLES, .t0 = pa_clock_ns()};
            rec.u.raw[0] = dev;
            rec.u.raw[1] = nr;
            rec.u.raw[2] = i == 0 ? reports : 0;
            rec.u.raw[3] = i == 0 ? (uint64_t)dropped : 0;
            pcs_host.ring_emit(r->ring, &rec, r->ent + i * (1 + nr), (uint32_t)(m * (1 + nr) * sizeof(uint32_t)));
            i += m;
        } while (i < nent);
    }
    pthread_mutex_lock(&sink_mu);
    pcs_pti_sink_t *s = pti_sink;
    if (s) {
        uint32_t n = pcs_kernels_count();
        for (; s->kernels_added < n; s->kernels_added++) {
            const pcs_kernel_t *k = pcs_kernels_get(s->kernels_added);
            pa_pcs_table_add_kernel(&s->table, &k->k, k->name, (const char *const *)k->files, k->lines);
        }
        pa_pcs_table_add_samples(&s->table, dev, nr, r->ent, nent);
        if (s->table.nreasons[dev] < nr)
            s->table.nreasons[dev] = nr;
        s->table.dev[dev].reports += reports;
        if (dropped) {
            s->table.dev[dev].dropped_reads++;
            s->dropped[dev] = 1;
        }
    }
    pthread_mutex_unlock(&sink_mu);
}

/* One read of everything pending, decoded into r->ent (IP + count per reason); in a window.
 * Returns the entries decoded, -1 when nothing was read; *got bytes, *dropped the driver's flag. */
static long read_decode(reader_t *r, size_t *gotp, int *droppedp)
{
    pcs_dev_t *d = r->d;
    size_t cap = 0;
    if (pcs_ze.zetMetricStreamerReadData(r->s, UINT32_MAX, &cap, NULL) != ZE_RESULT_SUCCESS || cap == 0)
        return -1;
    if (cap > r->rawcap) {
        uint8_t *nb = realloc(r->raw, cap);
        if (!nb)
            return -1;
        r->raw = nb;
        r->rawcap = cap;
    }
    size_t got = r->rawcap;
    ze_result_t res = pcs_ze.zetMetricStreamerReadData(r->s, UINT32_MAX, &got, r->raw);
    int dropped = res == ZE_RESULT_WARNING_DROPPED_DATA;
    if ((res != ZE_RESULT_SUCCESS && !dropped) || (got == 0 && !dropped))
        return -1;
    size_t nent = 0;
    uint32_t nv = 0;
    if (got && pcs_ze.zetMetricGroupCalculateMetricValues(d->group, ZET_METRIC_GROUP_CALCULATION_TYPE_METRIC_VALUES,
                                                          got, r->raw, &nv, NULL) == ZE_RESULT_SUCCESS && nv) {
        if (nv > r->valcap) {
            zet_typed_value_t *nvv = realloc(r->vals, nv * sizeof *nvv);
            if (!nvv)
                return -1;
            r->vals = nvv;
            r->valcap = nv;
        }
        if (pcs_ze.zetMetricGroupCalculateMetricValues(d->group, ZET_METRIC_GROUP_CALCULATION_TYPE_METRIC_VALUES,
                                                       got, r->raw, &nv, r->vals) != ZE_RESULT_SUCCESS)
            nv = 0;
        nent = nv / d->nmetrics;
        size_t need = nent * (1 + d->nreasons);
        if (need > r->entcap) {
            uint32_t *ne = realloc(r->ent, need * sizeof *ne);
            if (!ne)
                return -1;
            r->ent = ne;
            r->entcap = need;
        }
        for (size_t e = 0; e < nent; e++) {
            const zet_typed_value_t *v = r->vals + e * d->nmetrics;
            uint32_t *o = r->ent + e * (1 + d->nreasons);
            o[0] = (uint32_t)((tval(&v[d->ip_metric]) << 3) & 0xffffffffu);
            for (uint32_t k = 0; k < d->nreasons; k++) {
                uint64_t c = tval(&v[d->reason_metric[k]]);
                o[1 + k] = c > UINT32_MAX ? UINT32_MAX : (uint32_t)c;
            }
        }
    }
    *gotp = got;
    *droppedp = dropped;
    return (long)nent;
}

/* One read, delivered (outside the window: the ring and the PTI sink's lock need no loader).
 * -1 once the loader's teardown began (nothing read). */
static int read_once(reader_t *r)
{
    if (!pa_ze_call_enter())
        return -1;
    size_t got = 0;
    int dropped = 0;
    long nent = read_decode(r, &got, &dropped);
    pa_ze_call_leave();
    if (nent >= 0)
        deliver(r, (size_t)nent, got / 64, dropped);
    return 0;
}

/* Waits for the streamer's notification (at most PCS_WAIT_NS, PTI's bound) in waits of at most
 * PA_ZE_CALL_MAX_BLOCK_NS, each in its own window: the loader's teardown never waits for a
 * reader longer than one of them (one 50 ms wait had made it wait up to 50 ms). Ends early on a
 * stop or a flush request (`done`: the flushes answered so far). -1 once the teardown began. */
static int wait_notified(reader_t *r, uint64_t done)
{
    uint64_t end = pa_clock_ns() + PCS_WAIT_NS;
    while (!atomic_load(&r->stop) && atomic_load(&r->flush_req) == done) {
        if (!pa_ze_call_enter())
            return -1;
        ze_result_t res = pcs_ze.zeEventHostSynchronize(r->ev, PA_ZE_CALL_MAX_BLOCK_NS);
        if (res == ZE_RESULT_SUCCESS)
            pcs_ze.zeEventHostReset(r->ev);
        pa_ze_call_leave();
        if (res == ZE_RESULT_SUCCESS || pa_clock_ns() >= end)
            break;
    }
    return 0;
}

static void *reader_main(void *arg)
{
    reader_t *r = arg;
    if (pcs_host.thread_start)
        pcs_host.thread_start();
    for (;;) {
        int stop = atomic_load(&r->stop);
        uint64_t req = atomic_load(&r->flush_req);
        if ((!stop && req == atomic_load(&r->flush_done) && wait_notified(r, req) != 0) || read_once(r) != 0) {
            r->abandoned = 1; /* the process is ending: no more calls into the loader */
            atomic_store(&r->flush_done, req);
            break;
        }
        r->reads++;
        atomic_store(&r->flush_done, req);
        if (stop)
            break;
    }
    if (r->ring)
        emit_kernels(r);
    struct timespec cpu;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
    pa_info("pc-sampling", "device %u: reader stopped after %llu reads, %.1f ms of CPU", r->d->index,
            (unsigned long long)r->reads, (double)cpu.tv_sec * 1e3 + (double)cpu.tv_nsec / 1e6);
    if (!r->abandoned && pa_ze_call_enter()) {
        pcs_ze.zetMetricStreamerClose(r->s);
        pcs_ze.zetContextActivateMetricGroups(r->d->ctx, r->d->h, 0, NULL);
        pcs_ze.zeEventDestroy(r->ev);
        pcs_ze.zeEventPoolDestroy(r->pool);
        pa_ze_call_leave();
    } else {
        r->abandoned = 1;
        pa_info("pc-sampling", "device %u: the Level Zero loader is being torn down: the streamer is left open",
                r->d->index);
    }
    if (r->ring)
        pcs_host.ring_close(r->ring);
    r->ring = NULL;
    free(r->raw);
    free(r->vals);
    free(r->ent);
    r->raw = NULL;
    r->vals = NULL;
    r->ent = NULL;
    r->rawcap = r->valcap = r->entcap = 0;
    return NULL;
}

static void emit_dev(reader_t *r, uint32_t state, ze_result_t res)
{
    if (!r->ring)
        return;
    pcs_dev_t *d = r->d;
    uint8_t buf[sizeof(pa_pcs_dev_t) + PA_PCS_MAX_REASONS * (ZET_MAX_METRIC_NAME + ZET_MAX_METRIC_DESCRIPTION)];
    pa_pcs_dev_t h = {.device = d->index, .state = state, .nreasons = d->nreasons, .period_ns = r->period,
                      .notify_every = r->notify, .result = (int32_t)res};
    size_t off = sizeof h;
    memcpy(buf, &h, sizeof h);
    for (uint32_t k = 0; k < d->nreasons; k++) {
        size_t l = strlen(d->reason_name[k]) + 1;
        memcpy(buf + off, d->reason_name[k], l);
        off += l;
    }
    for (uint32_t k = 0; k < d->nreasons; k++) {
        size_t l = strlen(d->reason_desc[k]) + 1;
        memcpy(buf + off, d->reason_desc[k], l);
        off += l;
    }
    pa_record_t rec = {.kind = PA_REC_PCS_DEVICE, .t0 = pa_clock_ns()};
    pcs_host.ring_emit(r->ring, &rec, buf, (uint32_t)off);
}

/* Opens the streamer of one device on the calling thread; returns 0 and starts the reader. */
static int reader_start(reader_t *r, pcs_dev_t *d, uint32_t period)
{
    /* the kernels a previous reader of this device emitted stay emitted: a second collection
     * (PTI Start after Stop) re-emitted them all, and the DB's PCS_KERNELS refused the
     * duplicate ids (the whole DB was lost) */
    uint32_t kcursor = r->kcursor;
    memset(r, 0, sizeof *r);
    r->kcursor = kcursor;
    r->d = d;
    r->ring = pcs_host.ring_open ? pcs_host.ring_open(d->index) : NULL;
    ze_result_t res = pcs_ze.zetContextActivateMetricGroups(d->ctx, d->h, 1, &d->group);
    ze_event_pool_desc_t pd = {.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, .flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
                               .count = 1};
    ze_event_desc_t ed = {.stype = ZE_STRUCTURE_TYPE_EVENT_DESC, .index = 0, .signal = ZE_EVENT_SCOPE_FLAG_HOST,
                          .wait = ZE_EVENT_SCOPE_FLAG_HOST};
    if (res == ZE_RESULT_SUCCESS)
        res = pcs_ze.zeEventPoolCreate(d->ctx, &pd, 1, &d->h, &r->pool);
    if (res == ZE_RESULT_SUCCESS && (res = pcs_ze.zeEventCreate(r->pool, &ed, &r->ev)) != ZE_RESULT_SUCCESS)
        pcs_ze.zeEventPoolDestroy(r->pool);
    zet_metric_streamer_desc_t sd = {.stype = ZET_STRUCTURE_TYPE_METRIC_STREAMER_DESC,
                                     .notifyEveryNReports = PCS_NOTIFY_EVERY, .samplingPeriod = period};
    if (res == ZE_RESULT_SUCCESS &&
        (res = pcs_ze.zetMetricStreamerOpen(d->ctx, d->h, d->group, &sd, r->ev, &r->s)) != ZE_RESULT_SUCCESS) {
        pcs_ze.zeEventDestroy(r->ev);
        pcs_ze.zeEventPoolDestroy(r->pool);
    }
    r->period = sd.samplingPeriod;
    r->notify = sd.notifyEveryNReports;
    if (res != ZE_RESULT_SUCCESS) {
        pcs_ze.zetContextActivateMetricGroups(d->ctx, d->h, 0, NULL);
        pa_warn("pc-sampling", "device %u: EU-stall streamer not opened (ze_result 0x%x%s); this device is not"
                " sampled, the rest is profiled as usual", d->index, (unsigned)res,
                res == ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE ? ": another streamer is open on it" : "");
        emit_dev(r, PA_PCS_DEV_FAILED, res);
        if (r->ring)
            pcs_host.ring_close(r->ring);
        r->ring = NULL;
        return -1;
    }
    emit_dev(r, PA_PCS_DEV_SAMPLING, res);
    if (pa_thread_spawn(&r->th, PA_THREAD_STACK_READER, reader_main, r) != 0) {
        pcs_ze.zetMetricStreamerClose(r->s);
        pcs_ze.zetContextActivateMetricGroups(d->ctx, d->h, 0, NULL);
        pcs_ze.zeEventDestroy(r->ev);
        pcs_ze.zeEventPoolDestroy(r->pool);
        if (r->ring)
            pcs_host.ring_close(r->ring);
        r->ring = NULL;
        return -1;
    }
    r->running = 1;
    return 0;
}

static void reader_stop(reader_t *r)
{
    if (!r->running)
        return;
    atomic_store(&r->stop, 1);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += PCS_JOIN_NS / 1000000000ll;
    if (pthread_timedjoin_np(r->th, NULL, &ts) != 0) {
        pa_warn("pc-sampling", "device %u: the streamer reader did not stop within 2 s; left running",
                r->d->index);
        pthread_detach(r->th);
        atomic_fetch_add(&readers_left, 1);
    }
    r->running = 0;
}

int pcs_stream_left(void)
{
    return atomic_load(&readers_left);
}

static int nrunning(void)
{
    int n = 0;
    for (uint32_t i = 0; i < PCS_MAX_DEVICES; i++)
        n += readers[i].running;
    return n;
}

int pcs_stream_start(int who, uint32_t period_ns, pcs_pti_sink_t *sink)
{
    pthread_mutex_lock(&smu);
    if (sink) {
        pthread_mutex_lock(&sink_mu);
        pti_sink = sink;
        pthread_mutex_unlock(&sink_mu);
    }
    if (!subs && pa_ze_call_enter()) { /* the opens in a window; the readers take their own */
        pcs_host.guard_enter();
        for (uint32_t i = 0; i < pcs_ndevs; i++)
            if (pcs_devs[i].group)
                reader_start(&readers[i], &pcs_devs[i], period_ns);
        pcs_host.guard_leave();
        pa_ze_call_leave();
    }
    int n = nrunning();
    if (n)
        subs |= who;
    else if (sink) {
        pthread_mutex_lock(&sink_mu);
        pti_sink = NULL;
        pthread_mutex_unlock(&sink_mu);
    }
    pthread_mutex_unlock(&smu);
    return n;
}

/* Every reader reads once more (bounded wait), so the PTI sink has what was sampled until now. */
static void flush_all(void)
{
    uint64_t want[PCS_MAX_DEVICES];
    for (uint32_t i = 0; i < PCS_MAX_DEVICES; i++)
        if (readers[i].running)
            want[i] = atomic_fetch_add(&readers[i].flush_req, 1) + 1;
    uint64_t t0 = pa_clock_ns();
    for (uint32_t i = 0; i < PCS_MAX_DEVICES; i++)
        while (readers[i].running && atomic_load(&readers[i].flush_done) < want[i] &&
               pa_clock_ns() - t0 < 1000000000ull) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
}

void pcs_stream_stop(int who)
{
    pthread_mutex_lock(&smu);
    if (subs & who) {
        subs &= ~who;
        if (!subs) {
            for (uint32_t i = 0; i < PCS_MAX_DEVICES; i++)
                reader_stop(&readers[i]);
        } else if (who == PCS_SUB_PTI) {
            flush_all();
        }
    }
    if (who == PCS_SUB_PTI) {
        pthread_mutex_lock(&sink_mu);
        pti_sink = NULL;
        pthread_mutex_unlock(&sink_mu);
    }
    pthread_mutex_unlock(&smu);
}

void pcs_stream_after_fork_child(void)
{
    memset(readers, 0, sizeof readers);
    subs = 0;
    pti_sink = NULL;
    pthread_mutex_init(&smu, NULL);
    pthread_mutex_init(&sink_mu, NULL);
}
