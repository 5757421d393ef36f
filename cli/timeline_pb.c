/* timeline_pb.c - the timeline model as a Perfetto protobuf trace (.pftrace), written with a
 * small varint writer of our own (no protobuf library needed).
 *
 * Field numbers, from Perfetto's protos/perfetto/trace/ (proto2; wire types: 0 varint,
 * 1 fixed64, 2 length-delimited). A test decodes the file with its own decoder written from
 * this same list (tests/integration/export/pftrace.py):
 *   Trace               packet = 1 (TracePacket, repeated)
 *   TracePacket         timestamp = 8, trusted_packet_sequence_id = 10, track_event = 11,
 *                       interned_data = 12, sequence_flags = 13 (1 INCREMENTAL_STATE_CLEARED,
 *                       2 NEEDS_INCREMENTAL_STATE), clock_snapshot = 6, track_descriptor = 60
 *   ClockSnapshot       clocks = 1 (Clock: clock_id = 1, timestamp = 2), primary_trace_clock = 2;
 *                       built-in clocks REALTIME = 1, MONOTONIC = 3, BOOTTIME = 6
 *   TrackDescriptor     uuid = 1, name = 2, process = 3, thread = 4, parent_uuid = 5, counter = 8
 *   ProcessDescriptor   pid = 1, process_name = 6
 *   ThreadDescriptor    pid = 1, tid = 2, thread_name = 5
 *   CounterDescriptor   unit = 3 (UNIT_SIZE_BYTES = 3)
 *   TrackEvent          category_iids = 3, debug_annotations = 4, type = 9 (SLICE_BEGIN = 1,
 *                       SLICE_END = 2, INSTANT = 3, COUNTER = 4), name_iid = 10,
 *                       track_uuid = 11, counter_value = 30, double_counter_value = 44
 *                       (double: fixed64 bits), flow_ids = 47 (fixed64),
 *                       terminating_flow_ids = 48 (fixed64)
 *   DebugAnnotation     int_value = 4, string_value = 6, name = 10
 *   InternedData        event_categories = 1, event_names = 2 (EventCategory / EventName:
 *                       iid = 1, name = 2)
 * Every packet is on sequence 1; the first clears the incremental state, the others that use
 * interned names say they need it. Times are ns from the timeline origin on BOOTTIME (the
 * default trace clock); one clock snapshot ties them to REALTIME (the absolute anchor). */
#include <stdlib.h>
#include <string.h>

#include "timeline.h"

typedef struct pa_pb { uint8_t *b; size_t n, cap; int oom; } pa_pb_t;

static void pa_pb_need(pa_pb_t *p, size_t more)
{
    if (p->n + more <= p->cap || p->oom)
        return;
    size_t nc = p->cap ? p->cap : 256;
    while (nc < p->n + more)
        nc *= 2;
    uint8_t *nb = realloc(p->b, nc);
    if (!nb) {
        p->oom = 1;
        return;
    }
    p->b = nb;
    p->cap = nc;
}

static void pa_pb_varint(pa_pb_t *p, uint64_t v)
{
    pa_pb_need(p, 10);
    if (p->oom)
        return;
    do {
        uint8_t byte = v & 0x7f;
        v >>= 7;
        p->b[p->n++] = byte | (v ? 0x80 : 0);
    } while (v);
}

static void pa_pb_tag(pa_pb_t *p, unsigned field, unsigned wire)
{
    pa_pb_varint(p, (uint64_t)field << 3 | wire);
}

/* varint field (int64 as its two's complement, as protobuf encodes int64) */
static void pa_pb_u64(pa_pb_t *p, unsigned field, uint64_t v)
{
    pa_pb_tag(p, field, 0);
    pa_pb_varint(p, v);
}

static void pa_pb_fixed64(pa_pb_t *p, unsigned field, uint64_t v)
{
    pa_pb_tag(p, field, 1);
    pa_pb_need(p, 8);
    if (p->oom)
        return;
    for (int i = 0; i < 8; i++)
        p->b[p->n++] = (uint8_t)(v >> (8 * i));
}

static void pa_pb_bytes(pa_pb_t *p, unsigned field, const void *s, size_t len)
{
    pa_pb_tag(p, field, 2);
    pa_pb_varint(p, len);
    pa_pb_need(p, len);
    if (p->oom)
        return;
    memcpy(p->b + p->n, s, len);
    p->n += len;
}

static void pa_pb_str(pa_pb_t *p, unsigned field, const char *s)
{
    pa_pb_bytes(p, field, s, strlen(s));
}

/* appends `sub` as a length-delimited field and empties it */
static void pa_pb_msg(pa_pb_t *p, unsigned field, pa_pb_t *sub)
{
    p->oom |= sub->oom;
    pa_pb_bytes(p, field, sub->b, sub->n);
    sub->n = 0;
}

typedef struct pa_pbw {
    FILE *out;
    pa_pb_t pkt, ev, sub, sub2;
    uint8_t *name_sent;  /* per string: its interned EventName was emitted */
    long events;
    int first;
} pa_pbw_t;

/* Writes the packet as Trace.packet (field 1) and empties it. */
static void pa_pbw_flush(pa_pbw_t *w)
{
    pa_pb_t wrap = {0};
    pa_pb_bytes(&wrap, 1, w->pkt.b, w->pkt.n);
    if (!wrap.oom && !w->pkt.oom)
        fwrite(wrap.b, 1, wrap.n, w->out);
    else
        w->pkt.oom = 1;
    free(wrap.b);
    w->pkt.n = 0;
}

static void pa_pbw_begin(pa_pbw_t *w, int needs_state)
{
    pa_pb_u64(&w->pkt, 10, 1);  /* trusted_packet_sequence_id */
    if (w->first) {
        pa_pb_u64(&w->pkt, 13, 1);  /* SEQ_INCREMENTAL_STATE_CLEARED */
        w->first = 0;
    } else if (needs_state)
        pa_pb_u64(&w->pkt, 13, 2);  /* SEQ_NEEDS_INCREMENTAL_STATE */
}

static void pa_pbw_annot_int(pa_pb_t *ev, pa_pb_t *sub, const char *name, int64_t v)
{
    pa_pb_str(sub, 10, name);
    pa_pb_u64(sub, 4, (uint64_t)v);
    pa_pb_msg(ev, 4, sub);
}

static void pa_pbw_annot_str(pa_pb_t *ev, pa_pb_t *sub, const char *name, const char *v)
{
    pa_pb_str(sub, 10, name);
    pa_pb_str(sub, 6, v ? v : "");
    pa_pb_msg(ev, 4, sub);
}

/* One TrackEvent packet: type, track, name (interned, its EventName sent with first use),
 * category, flows, annotations of the slice `s` (NULL for an END or a counter). */
static uint64_t pa_pbw_dbits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static void pa_pbw_event(pa_pbw_t *w, const pa_tl_t *tl, int64_t ts, int type, uint64_t track,
                         const pa_tl_slice_t *s, const uint64_t *fout, size_t nout, uint64_t fin,
                         int64_t counter, const double *dcounter)
{
    int named = s != NULL;
    pa_pbw_begin(w, named);
    pa_pb_u64(&w->pkt, 8, (uint64_t)ts);
    if (named && !w->name_sent[s->name]) {
        pa_pb_u64(&w->sub2, 1, (uint64_t)s->name + 1);  /* iid 0 is invalid */
        pa_pb_bytes(&w->sub2, 2, tl->strings[s->name], tl->string_len[s->name]);
        pa_pb_msg(&w->sub, 2, &w->sub2);              /* InternedData.event_names */
        pa_pb_msg(&w->pkt, 12, &w->sub);
        w->name_sent[s->name] = 1;
    }
    pa_pb_u64(&w->ev, 9, (uint64_t)type);
    pa_pb_u64(&w->ev, 11, track);
    if (type == 4 && dcounter)
        pa_pb_fixed64(&w->ev, 44, pa_pbw_dbits(*dcounter));  /* double_counter_value */
    else if (type == 4)
        pa_pb_u64(&w->ev, 30, (uint64_t)counter);
    if (named) {
        pa_pb_u64(&w->ev, 10, (uint64_t)s->name + 1);
        pa_pb_u64(&w->ev, 3, (uint64_t)s->cat + 1);
        for (size_t i = 0; i < nout; i++)
            pa_pb_fixed64(&w->ev, 47, fout[i]);
        if (fin)
            pa_pb_fixed64(&w->ev, 48, fin);
        if (s->cat == PA_TL_HGTX || s->cat == PA_TL_HGTX_SE) {
            pa_pbw_annot_int(&w->ev, &w->sub, "id", s->id);
            pa_pbw_annot_int(&w->ev, &w->sub, "level", s->val);
        } else if (s->cat == PA_TL_ZE || s->cat >= PA_TL_KERNEL) {
            pa_pbw_annot_int(&w->ev, &w->sub, "corrId", s->id);
            if (s->cat == PA_TL_COPY || s->cat == PA_TL_FILL)
                pa_pbw_annot_int(&w->ev, &w->sub, "bytes", s->val);
        } else if (s->cat == PA_TL_MEM)
            pa_pbw_annot_int(&w->ev, &w->sub, "bytes", s->val);
    }
    pa_pb_msg(&w->pkt, 11, &w->ev);
    pa_pbw_flush(w);
    w->events++;
}

/* The first packet: the interned categories, the clock snapshot (REALTIME anchor). */
static void pa_pbw_preamble(pa_pbw_t *w, const pa_tl_t *tl)
{
    int64_t end = tl->end_mono_ns > tl->origin_ns ? tl->end_mono_ns - tl->origin_ns : 1;
    int64_t origin_wall = tl->start_wall_ns - (tl->start_mono_ns - tl->origin_ns);
    pa_pbw_begin(w, 0);
    pa_pb_u64(&w->sub2, 1, 6);  /* BOOTTIME: the trace clock of every packet */
    pa_pb_u64(&w->sub2, 2, (uint64_t)end);
    pa_pb_msg(&w->sub, 1, &w->sub2);
    pa_pb_u64(&w->sub2, 1, 1);  /* REALTIME at the same instant */
    pa_pb_u64(&w->sub2, 2, (uint64_t)(origin_wall + end));
    pa_pb_msg(&w->sub, 1, &w->sub2);
    pa_pb_u64(&w->sub, 2, 6);
    pa_pb_msg(&w->pkt, 6, &w->sub);
    pa_pbw_flush(w);
    pa_pbw_begin(w, 1);
    for (int c = 0; c < PA_TL_NCATS; c++) {
        pa_pb_u64(&w->sub2, 1, (uint64_t)c + 1);
        pa_pb_str(&w->sub2, 2, pa_tl_cat_name(c));
        pa_pb_msg(&w->sub, 1, &w->sub2);  /* InternedData.event_categories */
    }
    pa_pb_msg(&w->pkt, 12, &w->sub);
    pa_pbw_flush(w);
}

static void pa_pbw_descriptors(pa_pbw_t *w, const pa_tl_t *tl)
{
    for (size_t i = 0; i < tl->nprocs; i++) {
        const pa_tl_proc_t *p = &tl->procs[i];
        pa_pbw_begin(w, 0);
        pa_pb_u64(&w->sub, 1, p->uuid);
        pa_pb_u64(&w->sub2, 1, (uint64_t)p->pid);
        pa_pb_bytes(&w->sub2, 6, tl->strings[p->name], tl->string_len[p->name]);
        pa_pb_msg(&w->sub, 3, &w->sub2);
        pa_pb_msg(&w->pkt, 60, &w->sub);
        pa_pbw_flush(w);
    }
    for (size_t i = 0; i < tl->ntracks; i++) {
        const pa_tl_track_t *t = &tl->tracks[i];
        uint64_t proc_uuid = 0;
        for (size_t k = 0; k < tl->nprocs; k++)
            if (tl->procs[k].pid == t->pid)
                proc_uuid = tl->procs[k].uuid;
        pa_pbw_begin(w, 0);
        pa_pb_u64(&w->sub, 1, t->uuid);
        if (t->kind == PA_TL_TRACK_THREAD) {
            pa_pb_u64(&w->sub2, 1, (uint64_t)t->pid);
            pa_pb_u64(&w->sub2, 2, (uint64_t)t->tid);
            pa_pb_bytes(&w->sub2, 5, tl->strings[t->name], tl->string_len[t->name]);
            pa_pb_msg(&w->sub, 4, &w->sub2);
        } else {
            pa_pb_bytes(&w->sub, 2, tl->strings[t->name], tl->string_len[t->name]);
            pa_pb_u64(&w->sub, 5, t->kind == PA_TL_TRACK_THREAD_CHILD ? tl->tracks[t->parent].uuid : proc_uuid);
            if (t->kind == PA_TL_TRACK_COUNTER) {
                if (t->unit_bytes)
                    pa_pb_u64(&w->sub2, 3, 3);  /* UNIT_SIZE_BYTES; metrics: unspecified */
                pa_pb_msg(&w->sub, 8, &w->sub2);
            }
        }
        pa_pb_msg(&w->pkt, 60, &w->sub);
        pa_pbw_flush(w);
    }
}

/* The session anchor as an instant on the profiled process's track, readable in the UI. */
static void pa_pbw_anchor(pa_pbw_t *w, const pa_tl_t *tl)
{
    if (!tl->nprocs)
        return;
    pa_pbw_begin(w, 0);
    pa_pb_u64(&w->pkt, 8, 0);
    pa_pb_u64(&w->ev, 9, 3);
    pa_pb_u64(&w->ev, 11, tl->procs[0].uuid);
    pa_pb_str(&w->ev, 23, "session start");  /* TrackEvent.name (non-interned) = 23 */
    pa_pbw_annot_int(&w->ev, &w->sub, "origin_mono_ns", tl->origin_ns);
    pa_pbw_annot_int(&w->ev, &w->sub, "origin_wall_ns", tl->start_wall_ns - (tl->start_mono_ns - tl->origin_ns));
    pa_pbw_annot_int(&w->ev, &w->sub, "session_start_mono_ns", tl->start_mono_ns);
    pa_pbw_annot_int(&w->ev, &w->sub, "session_start_wall_ns", tl->start_wall_ns);
    pa_pbw_annot_str(&w->ev, &w->sub, "command", tl->command);
    pa_pbw_annot_str(&w->ev, &w->sub, "host", tl->host);
    pa_pb_msg(&w->pkt, 11, &w->ev);
    pa_pbw_flush(w);
}

static int pa_pbw_flow_cmp(const void *a, const void *b)
{
    const pa_tl_flow_t *x = a, *y = b;
    return x->from < y->from ? -1 : x->from > y->from;
}

long pa_tl_write_pftrace(const pa_tl_t *tl, FILE *out)
{
    pa_pbw_t w = {.out = out, .first = 1};
    uint32_t *ix = pa_tl_order(tl);
    uint64_t *fin = calloc(tl->nslices + 1, sizeof *fin);
    size_t *fout_at = calloc(tl->nslices + 1, sizeof *fout_at);
    pa_tl_flow_t *flows = malloc((tl->nflows + 1) * sizeof *flows);
    uint64_t *fout_ids = malloc((tl->nflows + 1) * sizeof *fout_ids);
    uint32_t *stack = malloc((tl->nslices + 1) * sizeof *stack);
    w.name_sent = calloc(tl->nstrings + 1, 1);
    long rc = -1;
    if (!ix || !fin || !fout_at || !flows || !fout_ids || !stack || !w.name_sent)
        goto done;
    /* outgoing flows of each slice: fout_ids[fout_at[s] .. fout_at[s + 1]) */
    if (tl->nflows) {
        memcpy(flows, tl->flows, tl->nflows * sizeof *flows);
        qsort(flows, tl->nflows, sizeof *flows, pa_pbw_flow_cmp);
    }
    for (size_t i = 0; i < tl->nflows; i++) {
        fout_at[flows[i].from + 1]++;
        fout_ids[i] = flows[i].id;
        fin[flows[i].to] = flows[i].id;
    }
    for (size_t i = 0; i < tl->nslices; i++)
        fout_at[i + 1] += fout_at[i];
    pa_pbw_preamble(&w, tl);
    pa_pbw_descriptors(&w, tl);
    pa_pbw_anchor(&w, tl);
    /* slices of each track in nesting order: an END for every open slice that ended by the
     * next one's start, then its BEGIN; marks are instants */
    size_t depth = 0;
    for (size_t k = 0; k <= tl->nslices; k++) {
        const pa_tl_slice_t *s = k < tl->nslices ? &tl->slices[ix[k]] : NULL;
        while (depth) {
            const pa_tl_slice_t *top = &tl->slices[stack[depth - 1]];
            if (s && top->track == s->track && top->t1 > s->t0)
                break;
            pa_pbw_event(&w, tl, top->t1, 2, tl->tracks[top->track].uuid, NULL, NULL, 0, 0, 0, NULL);
            depth--;
        }
        if (!s)
            break;
        size_t from = fout_at[ix[k]], to = fout_at[ix[k] + 1];
        if (s->cat == PA_TL_MARK) {
            pa_pbw_event(&w, tl, s->t0, 3, tl->tracks[s->track].uuid, s, NULL, 0, 0, 0, NULL);
            continue;
        }
        pa_pbw_event(&w, tl, s->t0, 1, tl->tracks[s->track].uuid, s, fout_ids + from, to - from, fin[ix[k]], 0, NULL);
        stack[depth++] = ix[k];
    }
    for (size_t i = 0; i < tl->ncounters; i++)
        pa_pbw_event(&w, tl, tl->counters[i].t, 4, tl->tracks[tl->counters[i].track].uuid, NULL, NULL, 0, 0,
                     tl->counters[i].v, tl->counters[i].is_double ? &tl->counters[i].d : NULL);
    rc = w.pkt.oom || w.ev.oom || w.sub.oom || w.sub2.oom || ferror(out) ? -1 : w.events;
done:
    free(ix);
    free(fin);
    free(fout_at);
    free(flows);
    free(fout_ids);
    free(stack);
    free(w.name_sent);
    free(w.pkt.b);
    free(w.ev.b);
    free(w.sub.b);
    free(w.sub2.b);
    return rc;
}
