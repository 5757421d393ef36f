/* pti_api.c - the PTI PC-sampling lifecycle (spec/pti-pc-sampling-api.txt): one live handle, the
 * state machine with the spec's return codes, the two-call queries over the session's counts. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "pcs_internal.h"
#include "profagent/pti_pc_sampling.h"

enum st { ST_ENABLED = 1, ST_CONFIGURED, ST_STARTED, ST_STOPPED };

/* One observed kernel (samples > 0) of the stopped session, its rows in offset order. */
typedef struct okernel {
    uint32_t kidx;                       /* index in the sink's table */
    uint32_t *rows; uint32_t nrows;
    pti_pc_sampling_source_info_t *src;  /* per row; owned until Disable */
} okernel_t;

typedef struct session {
    int state;
    uint32_t period_ns;
    pcs_pti_sink_t sink;
    int built;                           /* views below built at the first post-stop query */
    okernel_t *ok; uint32_t nok;
} session_t;

static pthread_mutex_t api_mu = PTHREAD_MUTEX_INITIALIZER;
static session_t *live;

static session_t *valid(void *h)
{
    return h && h == (void *)live ? live : NULL;
}

static pcs_dev_t *configured_dev(void *device)
{
    for (uint32_t i = 0; device && i < pcs_ndevs; i++)
        if ((void *)pcs_devs[i].h == device && pcs_devs[i].group)
            return &pcs_devs[i];
    return NULL;
}

static int row_cmp(const void *a, const void *b, void *ctx)
{
    const pa_pcs_table_t *t = ctx;
    uint32_t x = t->rows[*(const uint32_t *)a].offset, y = t->rows[*(const uint32_t *)b].offset;
    return x < y ? -1 : x > y;
}

static const pcs_kernel_t *registry_kernel(const pa_pcs_kinfo_t *k)
{
    return k->id >= 1 && k->id <= pcs_kernels_count() ? pcs_kernels_get((uint32_t)(k->id - 1)) : NULL;
}

static int build(session_t *s)
{
    if (s->built)
        return 0;
    pa_pcs_table_t *t = &s->sink.table;
    s->ok = calloc(t->nkernels ? t->nkernels : 1, sizeof *s->ok);
    uint32_t *cnt = calloc(t->nkernels ? t->nkernels : 1, sizeof *cnt);
    if (!s->ok || !cnt) {
        free(cnt);
        return -1;
    }
    for (uint32_t r = 0; r < t->nrows; r++)
        cnt[t->rows[r].kernel]++;
    uint32_t *slot = calloc(t->nkernels ? t->nkernels : 1, sizeof *slot);
    if (!slot) {
        free(cnt);
        return -1;
    }
    for (uint32_t k = 0; k < t->nkernels; k++) {
        if (!cnt[k])
            continue;
        okernel_t *o = &s->ok[s->nok];
        o->kidx = k;
        o->rows = malloc(cnt[k] * sizeof *o->rows);
        o->src = calloc(cnt[k], sizeof *o->src);
        if (!o->rows || !o->src) {
            free(o->rows);
            free(o->src);
            continue;
        }
        slot[k] = s->nok + 1;
        s->nok++;
    }
    for (uint32_t r = 0; r < t->nrows; r++) {
        uint32_t o = slot[t->rows[r].kernel];
        if (o)
            s->ok[o - 1].rows[s->ok[o - 1].nrows++] = r;
    }
    for (uint32_t i = 0; i < s->nok; i++) {
        okernel_t *o = &s->ok[i];
        qsort_r(o->rows, o->nrows, sizeof *o->rows, row_cmp, t);
        /* strings of the process-wide registry: they stay valid after Disable (PTI's header) */
        const pcs_kernel_t *rk = registry_kernel(&t->kernels[o->kidx]);
        pa_pcs_kinfo_t lk = {.files = rk ? rk->files : NULL, .nfiles = rk ? rk->k.nfiles : 0,
                             .lines = rk ? rk->lines : NULL, .nlines = rk ? rk->k.nlines : 0};
        for (uint32_t r = 0; r < o->nrows; r++) {
            const char *file;
            uint32_t line = pa_pcs_kernel_line(&lk, t->rows[o->rows[r]].offset, &file);
            o->src[r]._file_path = file;
            o->src[r]._file_line = line;
        }
    }
    free(cnt);
    free(slot);
    s->built = 1;
    return 0;
}

static okernel_t *find_kernel(session_t *s, uint32_t dev, uint64_t handle)
{
    for (uint32_t i = 0; i < s->nok; i++) {
        const pa_pcs_kinfo_t *k = &s->sink.table.kernels[s->ok[i].kidx];
        if (k->id == handle && k->device == dev)
            return &s->ok[i];
    }
    return NULL;
}

static int impl_enable(void **h)
{
    if (!h)
        return PTI_ERROR_BAD_ARGUMENT;
    pthread_mutex_lock(&api_mu);
    int rc = PTI_SUCCESS;
    if (live) {
        rc = PTI_ERROR_PC_SAMPLING_ALREADY_ENABLED;
    } else if (pcs_engine_init(1) <= 0) {
        rc = PTI_ERROR_PC_SAMPLING_UNSUPPORTED;
    } else {
        session_t *s = calloc(1, sizeof *s);
        if (!s) {
            rc = PTI_ERROR_INTERNAL;
        } else {
            pcs_kernels_attach(); /* no tracer: samples still counted, as unmapped */
            s->state = ST_ENABLED;
            s->period_ns = PA_PCS_DEFAULT_PERIOD_NS;
            pthread_mutex_init(&s->sink.mu, NULL);
            pa_pcs_table_init(&s->sink.table, 0);
            live = s;
            *h = s;
        }
    }
    pthread_mutex_unlock(&api_mu);
    return rc;
}

static int impl_configure(void *h, void *const *devices, size_t n, uint32_t period)
{
    (void)n;
    pthread_mutex_lock(&api_mu);
    session_t *s = valid(h);
    int rc = !s ? PTI_ERROR_BAD_ARGUMENT
             : s->state != ST_ENABLED ? PTI_ERROR_PC_SAMPLING_ALREADY_CONFIGURED
             : devices ? PTI_ERROR_NOT_IMPLEMENTED : PTI_SUCCESS;
    if (rc == PTI_SUCCESS) {
        s->period_ns = period ? period : PA_PCS_DEFAULT_PERIOD_NS;
        s->state = ST_CONFIGURED;
    }
    pthread_mutex_unlock(&api_mu);
    return rc;
}

static int impl_start(void *h)
{
    pthread_mutex_lock(&api_mu);
    session_t *s = valid(h);
    int rc = !s ? PTI_ERROR_BAD_ARGUMENT
             : s->state == ST_ENABLED ? PTI_ERROR_PC_SAMPLING_NOT_CONFIGURED
             : s->state == ST_STARTED ? PTI_ERROR_PC_SAMPLING_ALREADY_STARTED
             : s->state == ST_STOPPED ? PTI_ERROR_PC_SAMPLING_ALREADY_STOPPED : PTI_SUCCESS;
    if (rc == PTI_SUCCESS) {
        if (pcs_stream_start(PCS_SUB_PTI, s->period_ns, &s->sink) > 0)
            s->state = ST_STARTED;
        else
            rc = PTI_ERROR_INTERNAL; /* every streamer refused (warned with the driver's reason) */
    }
    pthread_mutex_unlock(&api_mu);
    return rc;
}

static int impl_stop(void *h)
{
    pthread_mutex_lock(&api_mu);
    session_t *s = valid(h);
    int rc = !s ? PTI_ERROR_BAD_ARGUMENT
             : s->state == ST_STOPPED ? PTI_ERROR_PC_SAMPLING_ALREADY_STOPPED
             : s->state != ST_STARTED ? PTI_ERROR_PC_SAMPLING_NOT_STARTED : PTI_SUCCESS;
    if (rc == PTI_SUCCESS) {
        pcs_stream_stop(PCS_SUB_PTI);
        s->state = ST_STOPPED;
    }
    pthread_mutex_unlock(&api_mu);
    return rc;
}

static int impl_reasons(void *h, void *out, size_t *count)
{
    pthread_mutex_lock(&api_mu);
    session_t *s = valid(h);
    int rc = !s || !count ? PTI_ERROR_BAD_ARGUMENT : PTI_SUCCESS;
    const pcs_dev_t *d = NULL;
    for (uint32_t i = 0; rc == PTI_SUCCESS && i < pcs_ndevs && !d; i++)
        if (pcs_devs[i].group)
            d = &pcs_devs[i];
    if (rc == PTI_SUCCESS && !d)
        rc = PTI_ERROR_INTERNAL;
    if (rc == PTI_SUCCESS && out) {
        pti_pc_sampling_stall_reason_info_t *r = out;
        size_t n = *count < d->nreasons ? *count : d->nreasons;
        for (size_t i = 0; i < n && rc == PTI_SUCCESS; i++)
            if (r[i]._struct_size < sizeof r[i])
                rc = PTI_ERROR_BAD_ARGUMENT;
        for (size_t i = 0; i < n && rc == PTI_SUCCESS; i++) {
            r[i]._name = d->reason_name[i];
            r[i]._description = d->reason_desc[i];
        }
    }
    if (rc == PTI_SUCCESS && (!out || *count > d->nreasons))
        *count = d->nreasons;
    pthread_mutex_unlock(&api_mu);
    return rc;
}

/* Common checks of the post-stop queries: handle, then the state. */
static int post_stop(session_t *s)
{
    if (s->state != ST_STOPPED)
        return PTI_ERROR_PC_SAMPLING_NOT_STOPPED;
    return build(s) == 0 ? PTI_SUCCESS : PTI_ERROR_INTERNAL;
}

static int profiled(const session_t *s, uint32_t dev)
{
    const pa_pcs_table_t *t = &s->sink.table;
    for (uint32_t k = 0; k < t->nkernels; k++)
        if (t->kernels[k].device == dev)
            return 1;
    return t->dev[dev].samples > 0;
}

static int impl_devices(void *h, void **out, size_t *count)
{
    pthread_mutex_lock(&api_mu);
    session_t *s = valid(h);
    int rc = !s || !count ? PTI_ERROR_BAD_ARGUMENT : post_stop(s);
    if (rc == PTI_SUCCESS) {
        size_t n = 0;
        for (uint32_t i = 0; i < pcs_ndevs; i++) {
            if (!pcs_devs[i].group || !profiled(s, i))
                continue;
            if (out && n < *count)
                out[n] = pcs_devs[i].h;
            n++;
        }
        if (!out || *count > n)
            *count = n;
    }
    pthread_mutex_unlock(&api_mu);
    return rc;
}

static int impl_status(void *h, void *device, void *out)
{
    pthread_mutex_lock(&api_mu);
    session_t *s = valid(h);
    pti_pc_sampling_device_status_t *st = out;
    pcs_dev_t *d = configured_dev(device);
    int rc = !s || !st || !d || st->_struct_size < sizeof *st ? PTI_ERROR_BAD_ARGUMENT : post_stop(s);
    if (rc == PTI_SUCCESS) {
        const pa_pcs_devstat_t *ds = &s->sink.table.dev[d->index];
        st->_device = d->h;
        st->_samples_dropped = s->sink.dropped[d->index] ? 1u : 0u;
        st->_total_sample_count = ds->samples;
        st->_total_pc_count = ds->pcs;
    }
    pthread_mutex_unlock(&api_mu);
    return rc;
}

static int impl_kernels(void *h, void *device, uint64_t *out, size_t *count)
{
    pthread_mutex_lock(&api_mu);
    session_t *s = valid(h);
    pcs_dev_t *d = configured_dev(device);
    int rc = !s || !count || !d ? PTI_ERROR_BAD_ARGUMENT : post_stop(s);
    if (rc == PTI_SUCCESS) {
        size_t n = 0;
        for (uint32_t i = 0; i < s->nok; i++) {
            const pa_pcs_kinfo_t *k = &s->sink.table.kernels[s->ok[i].kidx];
            if (k->device != d->index)
                continue;
            if (out && n < *count)
                out[n] = k->id;
            n++;
        }
        if (!out || *count > n)
            *count = n;
    }
    pthread_mutex_unlock(&api_mu);
    return rc;
}

static int impl_kinfo(void *h, void *device, uint64_t kernel, void *out)
{
    pthread_mutex_lock(&api_mu);
    session_t *s = valid(h);
    pti_pc_sampling_kernel_info_t *ki = out;
    pcs_dev_t *d = configured_dev(device);
    int rc = !s || !d || !ki || ki->_struct_size < sizeof *ki ? PTI_ERROR_BAD_ARGUMENT : post_stop(s);
    okernel_t *o = rc == PTI_SUCCESS ? find_kernel(s, d->index, kernel) : NULL;
    if (rc == PTI_SUCCESS && !o)
        rc = PTI_ERROR_BAD_ARGUMENT;
    if (rc == PTI_SUCCESS) {
        const pa_pcs_table_t *t = &s->sink.table;
        const pa_pcs_kinfo_t *k = &t->kernels[o->kidx];
        uint32_t nr = d->nreasons;
        ki->_device = d->h;
        ki->_kernel_handle = k->id;
        const pcs_kernel_t *rk = registry_kernel(k);
        ki->_kernel_name = rk ? rk->name : k->name;
        ki->_reason_count = nr;
        ki->_instructions_with_samples_count = o->nrows;
        if (ki->_aggregated_samples) {
            for (uint32_t j = 0; j < nr; j++)
                ki->_aggregated_samples[j] = 0;
            for (uint32_t r = 0; r < o->nrows; r++)
                for (uint32_t j = 0; j < nr; j++)
                    ki->_aggregated_samples[j] += t->rows[o->rows[r]].counts[j];
        }
    }
    pthread_mutex_unlock(&api_mu);
    return rc;
}

static int impl_instrs(void *h, void *device, uint64_t kernel, void *ibuf, size_t icount, uint64_t *sbuf,
                       size_t scount)
{
    pthread_mutex_lock(&api_mu);
    session_t *s = valid(h);
    pcs_dev_t *d = configured_dev(device);
    int rc = !s || !d || !ibuf || !sbuf ? PTI_ERROR_BAD_ARGUMENT : post_stop(s);
    okernel_t *o = rc == PTI_SUCCESS ? find_kernel(s, d->index, kernel) : NULL;
    if (rc == PTI_SUCCESS && !o)
        rc = PTI_ERROR_BAD_ARGUMENT;
    if (rc == PTI_SUCCESS) {
        const pa_pcs_table_t *t = &s->sink.table;
        pti_pc_sampling_instruction_t *in = ibuf;
        uint32_t nr = d->nreasons;
        size_t n = o->nrows;
        if (icount < n)
            n = icount;
        if (scount / nr < n)
            n = scount / nr;
        for (size_t i = 0; i < n; i++) {
            const pa_pcs_row_t *row = &t->rows[o->rows[i]];
            in[i]._instruction_offset = row->offset;
            in[i]._source_info = o->src[i]._file_path ? &o->src[i] : NULL;
            for (uint32_t j = 0; j < nr; j++)
                sbuf[i * nr + j] = row->counts[j];
        }
    }
    pthread_mutex_unlock(&api_mu);
    return rc;
}

static int impl_disable(void *h)
{
    pthread_mutex_lock(&api_mu);
    session_t *s = valid(h);
    int rc = !s ? PTI_ERROR_BAD_ARGUMENT : PTI_SUCCESS;
    if (s) {
        if (s->state == ST_STARTED)
            pcs_stream_stop(PCS_SUB_PTI);
        for (uint32_t i = 0; i < s->nok; i++) {
            free(s->ok[i].rows);
            free(s->ok[i].src);
        }
        free(s->ok);
        pa_pcs_table_free(&s->sink.table);
        pthread_mutex_destroy(&s->sink.mu);
        free(s);
        live = NULL;
    }
    pthread_mutex_unlock(&api_mu);
    return rc;
}

void pcs_pti_end(void)
{
    pthread_mutex_lock(&api_mu);
    session_t *s = live;
    pthread_mutex_unlock(&api_mu);
    if (s)
        impl_disable(s);
}

const pcs_pti_impl_t pcs_pti_impl = {
    .version = PCS_PTI_IMPL_VERSION,
    .enable = impl_enable, .configure = impl_configure, .start = impl_start, .stop = impl_stop,
    .reasons = impl_reasons, .devices = impl_devices, .status = impl_status, .kernels = impl_kernels,
    .kinfo = impl_kinfo, .instrs = impl_instrs, .disable = impl_disable, .end = pcs_pti_end,
};
