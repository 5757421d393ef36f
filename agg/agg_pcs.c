/* agg_pcs.c - PC (EU-stall) sampling records in the aggregator: IP -> kernel by the base/size of
 * each kernel's creation record, per (kernel, instruction, reason) counts kept online in bounded
 * memory (common/pa_pcs.h), unmapped and dropped data counted; spooled once at the end. */
#include <stdlib.h>
#include <string.h>

#include "agg_internal.h"
#include "../common/pa_pcs.h"

typedef struct pcs_state {
    pa_pcs_table_t t;
    uint8_t *dev_rec[PA_PCS_MAX_DEVICES];   /* the PA_REC_PCS_DEVICE payload per device */
    uint32_t dev_len[PA_PCS_MAX_DEVICES];
    uint64_t first_read[PA_PCS_MAX_DEVICES];
    uint64_t bad_records;                   /* malformed sample records (skipped, counted) */
} pcs_state_t;

static pcs_state_t *state(pa_agg_t *a)
{
    void **slot = pa_agg_source_state(a, PA_AGG_SRC_PCS);
    if (!*slot) {
        pcs_state_t *s = calloc(1, sizeof *s);
        if (!s)
            return NULL;
        pa_pcs_table_init(&s->t, 0);
        *slot = s;
    }
    return *slot;
}

void pa_agg_pcs_record(pa_agg_t *a, const pa_record_t *rec, const uint8_t *payload)
{
    pcs_state_t *s = state(a);
    if (!s)
        return;
    switch (rec->kind) {
    case PA_REC_PCS_DEVICE: {
        pa_pcs_dev_t d;
        if (rec->len < sizeof d)
            return;
        memcpy(&d, payload, sizeof d);
        if (d.device >= PA_PCS_MAX_DEVICES)
            return;
        free(s->dev_rec[d.device]);
        s->dev_rec[d.device] = malloc(rec->len);
        if (s->dev_rec[d.device]) {
            memcpy(s->dev_rec[d.device], payload, rec->len);
            s->dev_len[d.device] = rec->len;
        }
        if (d.nreasons <= PA_PCS_MAX_REASONS && d.nreasons > s->t.nreasons[d.device])
            s->t.nreasons[d.device] = d.nreasons;
        return;
    }
    case PA_REC_PCS_KERNEL:
        pa_pcs_table_add_kernel_payload(&s->t, payload, rec->len);
        return;
    case PA_REC_PCS_SAMPLES: {
        uint64_t dev = rec->u.raw[0], nr = rec->u.raw[1];
        if (dev >= PA_PCS_MAX_DEVICES || nr == 0 || nr > PA_PCS_MAX_REASONS) {
            s->bad_records++;
            return;
        }
        size_t esz = (1 + nr) * sizeof(uint32_t);
        if (!s->first_read[dev])
            s->first_read[dev] = rec->t0;
        s->t.dev[dev].reports += rec->u.raw[2];
        s->t.dev[dev].dropped_reads += rec->u.raw[3] != 0;
        if (rec->len >= esz && payload) {
            /* the ring payload is 64-byte aligned (pa_ring_drain scratch): uint32 access is fine */
            pa_pcs_table_add_samples(&s->t, (uint32_t)dev, (uint32_t)nr, (const uint32_t *)(const void *)payload,
                                     rec->len / esz);
        }
        return;
    }
    default:
        return;
    }
}

static void spool_devices(pa_agg_t *a, pcs_state_t *s)
{
    for (uint32_t d = 0; d < PA_PCS_MAX_DEVICES; d++) {
        if (!s->dev_rec[d])
            continue;
        const pa_pcs_devstat_t *ds = &s->t.dev[d];
        pa_record_t r = {.kind = PA_SP_PCS_DEVICE, .len = s->dev_len[d]};
        r.u.raw[0] = ds->samples;
        r.u.raw[1] = ds->unmapped;
        r.u.raw[2] = ds->reports;
        r.u.raw[3] = ds->dropped_reads;
        pa_agg_spool(a, &r, s->dev_rec[d]);
        pa_record_t c = {.kind = PA_SP_PCS_COUNTS};
        c.u.raw[0] = d;
        c.u.raw[1] = ds->pcs;
        c.u.raw[2] = ds->overflow;
        c.u.raw[3] = s->first_read[d];
        pa_agg_spool(a, &c, NULL);
    }
}

static void spool_kernels(pa_agg_t *a, pcs_state_t *s)
{
    for (uint32_t i = 0; i < s->t.nkernels; i++) {
        const pa_pcs_kinfo_t *k = &s->t.kernels[i];
        pa_pcs_kernel_t h = {.id = k->id, .device = k->device, .base = k->base, .size = k->end - k->base,
                             .name_len = (uint32_t)strlen(k->name), .nfiles = k->nfiles, .nlines = k->nlines};
        size_t need = pa_pcs_kernel_payload(&h, k->name, (const char *const *)k->files, k->lines, NULL, 0);
        uint8_t *buf = malloc(need);
        if (!buf)
            continue;
        pa_pcs_kernel_payload(&h, k->name, (const char *const *)k->files, k->lines, buf, need);
        pa_record_t r = {.kind = PA_SP_PCS_KERNEL, .len = (uint32_t)need};
        r.u.raw[0] = k->samples;
        r.u.raw[1] = pa_agg_intern(a, k->name, h.name_len);
        pa_agg_spool(a, &r, buf);
        free(buf);
    }
}

static void spool_rows(pa_agg_t *a, pcs_state_t *s)
{
    for (uint32_t i = 0; i < s->t.nrows; i++) {
        const pa_pcs_row_t *row = &s->t.rows[i];
        const pa_pcs_kinfo_t *k = &s->t.kernels[row->kernel];
        uint32_t nr = s->t.nreasons[k->device < PA_PCS_MAX_DEVICES ? k->device : 0];
        const char *file;
        uint32_t line = pa_pcs_kernel_line(k, row->offset, &file);
        pa_record_t r = {.kind = PA_SP_PCS_INSTR, .len = nr * (uint32_t)sizeof(uint64_t)};
        r.u.raw[0] = k->id;
        r.u.raw[1] = row->offset;
        r.u.raw[2] = file ? pa_agg_intern(a, file, strlen(file)) : 0;
        r.u.raw[3] = line;
        pa_agg_spool(a, &r, row->counts);
    }
}

void pa_agg_pcs_finish(pa_agg_t *a)
{
    void **slot = pa_agg_source_state(a, PA_AGG_SRC_PCS);
    pcs_state_t *s = *slot;
    if (!s)
        return;
    spool_devices(a, s);
    spool_kernels(a, s);
    spool_rows(a, s);
    for (uint32_t d = 0; d < PA_PCS_MAX_DEVICES; d++)
        free(s->dev_rec[d]);
    pa_pcs_table_free(&s->t);
    free(s);
    *slot = NULL;
}
