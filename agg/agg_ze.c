/* agg_ze.c - Level Zero records in the aggregator: API and kernel/memop statistics, string
 * resolution, small context/queue ids; spools the trace records. (Device busy time is the union of
 * the ZE_OPS intervals, computed by the writer from the sorted rows: ops of several threads and
 * engines arrive here out of start order, where an online union is not exact.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agg_priv.h"
#include "agg_proj.h"

/* API names come from the collector's generated table (same library); weak so the
 * aggregator also links alone (unit tests): then ids print as "ze#<id>". */
extern const char *pa_ze_api_name(uint32_t id) __attribute__((weak));

#define ZE_API_DIRECT PA_AGG_ZE_API_DIRECT

typedef struct ze_state {
    uint32_t api_direct[ZE_API_DIRECT]; /* api enum -> STRING id, 0 = not yet */
    pa_map_t api_ids;                  /* api enum + 1 -> STRING id (enums past the table) */
    uint32_t memop_ids[8][5][5];       /* kind, src, dst kind -> STRING id of its name, 0 = not yet */
    pa_map_t ctx_ids, queue_ids;       /* handle -> small id (1..) */
} ze_state_t;

static ze_state_t *state(pa_agg_t *a)
{
    void **slot = pa_agg_source_state(a, PA_AGG_SRC_ZE);
    if (!*slot && (*slot = calloc(1, sizeof(ze_state_t))))
        a->ze_api_ids = ((ze_state_t *)*slot)->api_direct; /* the drain's inline case (agg_core.c) */
    return *slot;
}

static uint32_t api_id(pa_agg_t *a, ze_state_t *s, uint32_t api)
{
    if (api < ZE_API_DIRECT && s->api_direct[api])
        return s->api_direct[api];
    uint32_t *v = pa_map_get(&s->api_ids, (uint64_t)api + 1);
    if (v)
        return *v;
    char buf[96];
    const char *n = pa_ze_api_name ? pa_ze_api_name(api) : NULL;
    if (!n) {
        snprintf(buf, sizeof buf, "ze#%u", api);
        n = buf;
    }
    uint32_t id = pa_agg_intern(a, n, strlen(n));
    if (api < ZE_API_DIRECT)
        s->api_direct[api] = id;
    else
        pa_map_put(&s->api_ids, (uint64_t)api + 1, id);
    return id;
}

static uint64_t small_id(pa_map_t *m, uint64_t handle)
{
    if (!handle)
        return 0;
    uint32_t *v = pa_map_get(m, handle);
    if (v)
        return *v;
    uint32_t id = (uint32_t)m->n + 1;
    pa_map_put(m, handle, id);
    return id;
}

/*! pa_ze_memop_name() : "[memset]" for fills, "[memcpy <Src>-to-<Dst>]" for copies, each side
 *  the memory kind as gpu_trace's SrcMemKd/DstMemKd name it: Pageable (not a Level Zero
 *  allocation, e.g. malloc), Host (USM host, pinned), Device, Shared; Unknown. Spec 2.3.16/2.3.17
 *  operation names ("Host-to-Device" ...), the host side split as the spec's 2.3.8 kinds are. */
const char *pa_ze_memop_name(uint32_t kind, uint32_t src, uint32_t dst, char *buf, size_t sz)
{
    static const char *const side[] = { "Unknown", "Host", "Device", "Shared", "Pageable" };
    if (kind == PA_ZE_OP_FILL)
        return "[memset]";
    snprintf(buf, sz, "[memcpy %s-to-%s]", side[src <= 4 ? src : 0], side[dst <= 4 ? dst : 0]);
    return buf;
}

static void on_op(pa_agg_t *a, ze_state_t *s, const pa_record_t *rec, const uint8_t *payload)
{
    if (rec->len < sizeof(pa_ze_op_t))
        return;
    pa_ze_op_t op;
    memcpy(&op, payload, sizeof op);
    size_t nlen = rec->len - sizeof op;
    if (nlen > op.name_len)
        nlen = op.name_len;
    uint64_t dur = rec->t1 > rec->t0 ? rec->t1 - rec->t0 : 0;
    op.api = api_id(a, s, op.api);
    op.context = small_id(&s->ctx_ids, op.context);
    op.queue = small_id(&s->queue_ids, op.queue);
    op.name_id = 0;
    if (op.kind == PA_ZE_OP_KERNEL) {
        const char *n = nlen ? (const char *)payload + sizeof op : "<unknown kernel>";
        op.name_id = pa_agg_intern(a, n, nlen ? nlen : strlen(n));
        pa_agg_stat_add_id(a, PA_CAT_KERNEL, 0, op.name_id, dur);
    } else if (op.kind != PA_ZE_OP_BARRIER) { /* barriers: in ZE_OPS only, no statistic */
        uint32_t src = op.src_kind <= 4 ? op.src_kind : 0, dst = op.dst_kind <= 4 ? op.dst_kind : 0;
        uint32_t *kid = op.kind < 8 ? &s->memop_ids[op.kind][src][dst] : NULL, key_id = kid ? *kid : 0;
        if (!key_id) { /* the name once per (kind, src, dst), not a snprintf per operation */
            char buf[64];
            const char *key = pa_ze_memop_name(op.kind, src, dst, buf, sizeof buf);
            key_id = pa_agg_intern(a, key, strlen(key));
            if (kid)
                *kid = key_id;
        }
        if (key_id) {
            pa_agg_stat_add_id(a, PA_CAT_MEMOP, 0, key_id, dur);
            pa_agg_stat_add_id(a, PA_CAT_MEMOP, 1, key_id, op.bytes);
        }
    }
    op.name_len = 0;
    pa_record_t out = *rec;
    out.kind = PA_SP_ZE_OP;
    out.len = sizeof op;
    pa_agg_spool(a, &out, &op);
    pa_agg_proj_op(a, &out, &op); /* HGTX projection (agg_proj.c) */
}

void pa_agg_ze_api(pa_agg_t *a, const pa_record_t *rec)
{
    ze_state_t *s = a->src_state[PA_AGG_SRC_ZE];
    if (__builtin_expect(!s, 0) && !(s = state(a)))
        return;
    uint32_t api = rec->u.ze.api;
    uint32_t id = api < ZE_API_DIRECT && s->api_direct[api] ? s->api_direct[api] : api_id(a, s, api);
    pa_agg_stat_add_id_fast(a, PA_CAT_ZE_API, 0, id, rec->t1 > rec->t0 ? rec->t1 - rec->t0 : 0);
    /* straight into the spool thread's pipe when it has room: one copy of the record */
    pa_record_t tmp, *sp = a->spool ? pa_spool_slot(a->spool) : NULL;
    *(sp ? sp : &tmp) = *rec;
    pa_record_t *out = sp ? sp : &tmp;
    out->kind = PA_SP_ZE_API;
    out->nslots = 1;
    out->len = 0;
    out->u.ze.api = id;
    if (sp) {
        pa_spool_slot_commit(a->spool);
        a->spool_records++;
    } else {
        pa_agg_spool(a, &tmp, NULL);
    }
    pa_agg_proj_api(a, rec); /* launch-time HGTX ranges (agg_proj.c) */
}

void pa_agg_ze_record(pa_agg_t *a, const pa_record_t *rec, const uint8_t *payload)
{
    ze_state_t *s = state(a);
    if (!s)
        return;
    pa_record_t out = *rec;
    switch (rec->kind) {
    case PA_REC_ZE_API:
        out.kind = PA_SP_ZE_API;
        out.u.ze.api = api_id(a, s, rec->u.ze.api);
        pa_agg_stat_add_id(a, PA_CAT_ZE_API, 0, out.u.ze.api, rec->t1 > rec->t0 ? rec->t1 - rec->t0 : 0);
        out.len = 0;
        pa_agg_spool(a, &out, NULL);
        pa_agg_proj_api(a, rec); /* launch-time HGTX ranges (agg_proj.c) */
        break;
    case PA_REC_ZE_OP:
        on_op(a, s, rec, payload);
        break;
    case PA_REC_ZE_DEVICE:
        if (rec->len >= sizeof(pa_ze_device_t)) {
            out.kind = PA_SP_ZE_DEVICE;
            out.len = sizeof(pa_ze_device_t);
            pa_agg_spool(a, &out, payload);
        }
        break;
    case PA_REC_ZE_COUNTS: /* payload (the detach's record only): the clock-pair error bound, the
                            * operations lost to their context's destroy, the full-ring waits
                            * (count, ns, given up), the capture lists submitted: passed on whole,
                            * up to those 6 values */
        out.kind = PA_SP_ZE_COUNTS;
        out.len = rec->len < 6 * sizeof(uint64_t) ? rec->len / sizeof(uint64_t) * sizeof(uint64_t)
                                                  : 6 * sizeof(uint64_t);
        pa_agg_spool(a, &out, out.len ? payload : NULL);
        break;
    default:
        break;
    }
}

void pa_agg_ze_finish(pa_agg_t *a)
{
    pa_agg_proj_finish(a); /* after the HGTX finish closed every range */
    void **slot = pa_agg_source_state(a, PA_AGG_SRC_ZE);
    ze_state_t *s = *slot;
    if (!s)
        return;
    pa_map_free(&s->api_ids);
    pa_map_free(&s->ctx_ids);
    pa_map_free(&s->queue_ids);
    free(s);
    *slot = NULL;
    a->ze_api_ids = NULL;
}
