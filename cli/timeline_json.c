/* timeline_json.c - the timeline model as Chrome trace-event JSON (what ui.perfetto.dev, Perfetto's
 * trace processor and chrome://tracing open): X slices, i marks, s/f flows, C counters, M names. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "timeline.h"

/* JSON string: '"', '\\' and control bytes escaped; bytes that are not valid UTF-8 become
 * \u00XX (their Latin-1 reading), so the file always parses. */
void pa_tl_json_str(FILE *out, const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    fputc('"', out);
    for (size_t i = 0; i < len;) {
        unsigned char ch = s[i];
        size_t ul = 0;
        if (ch < 0x80)
            ul = 1;
        else if ((ch & 0xe0) == 0xc0 && i + 1 < len && (s[i + 1] & 0xc0) == 0x80 && ch >= 0xc2)
            ul = 2;
        else if ((ch & 0xf0) == 0xe0 && i + 2 < len && (s[i + 1] & 0xc0) == 0x80 && (s[i + 2] & 0xc0) == 0x80 &&
                 !(ch == 0xe0 && s[i + 1] < 0xa0) && !(ch == 0xed && s[i + 1] >= 0xa0))
            ul = 3;
        else if ((ch & 0xf8) == 0xf0 && ch <= 0xf4 && i + 3 < len && (s[i + 1] & 0xc0) == 0x80 &&
                 (s[i + 2] & 0xc0) == 0x80 && (s[i + 3] & 0xc0) == 0x80 && !(ch == 0xf0 && s[i + 1] < 0x90) &&
                 !(ch == 0xf4 && s[i + 1] >= 0x90))
            ul = 4;
        if (ch == '"' || ch == '\\') {
            fputc('\\', out);
            fputc(ch, out);
            i++;
        } else if (ch < 0x20 || ch == 0x7f || ul == 0) {
            fprintf(out, "\\u%04x", ch);
            i++;
        } else {
            fwrite(s + i, 1, ul, out);
            i += ul;
        }
    }
    fputc('"', out);
}

static void pa_tlj_name(FILE *out, const pa_tl_t *tl, uint32_t s)
{
    pa_tl_json_str(out, tl->strings[s], tl->string_len[s]);
}

/* ns as microseconds with 3 decimals: exact */
static void pa_tlj_us(FILE *out, const char *key, int64_t ns)
{
    fprintf(out, ",\"%s\":%s%" PRId64 ".%03" PRId64, key, ns < 0 ? "-" : "", (ns < 0 ? -ns : ns) / 1000,
            (ns < 0 ? -ns : ns) % 1000);
}

static void pa_tlj_args(FILE *out, const pa_tl_slice_t *s)
{
    switch (s->cat) {
    case PA_TL_ZE: case PA_TL_KERNEL:
        fprintf(out, ",\"args\":{\"corrId\":%" PRId64 "}", s->id);
        break;
    case PA_TL_COPY: case PA_TL_FILL:
        fprintf(out, ",\"args\":{\"corrId\":%" PRId64 ",\"bytes\":%" PRId64 "}", s->id, s->val);
        break;
    case PA_TL_MEM:
        fprintf(out, ",\"args\":{\"eventId\":%" PRId64 ",\"bytes\":%" PRId64 "}", s->id, s->val);
        break;
    case PA_TL_HGTX: case PA_TL_HGTX_SE:
        fprintf(out, ",\"args\":{\"id\":%" PRId64 ",\"level\":%" PRId64 "}", s->id, s->val);
        break;
    default:
        break;
    }
}

long pa_tl_write_json(const pa_tl_t *tl, FILE *out)
{
    long n = 0;
    int64_t origin_wall = tl->start_wall_ns - (tl->start_mono_ns - tl->origin_ns);
    fprintf(out, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"profagent export\","
                 "\"time_origin\":\"ts 0 = origin_mono_ns (CLOCK_MONOTONIC) = origin_wall_ns (CLOCK_REALTIME)\","
                 "\"origin_mono_ns\":%" PRId64 ",\"origin_wall_ns\":%" PRId64 ",\"session_start_mono_ns\":%" PRId64
                 ",\"session_start_wall_ns\":%" PRId64 ",\"session_end_mono_ns\":%" PRId64 ",\"command\":",
            tl->origin_ns, origin_wall, tl->start_mono_ns, tl->start_wall_ns, tl->end_mono_ns);
    pa_tl_json_str(out, tl->command ? tl->command : "", tl->command ? strlen(tl->command) : 0);
    fputs(",\"host\":", out);
    pa_tl_json_str(out, tl->host ? tl->host : "", tl->host ? strlen(tl->host) : 0);
    fputs("},\n\"traceEvents\":[\n", out);
    const char *sep = "";
    for (size_t i = 0; i < tl->nprocs; i++) {
        fprintf(out, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%" PRId64 ",\"args\":{\"name\":", sep,
                tl->procs[i].pid);
        pa_tlj_name(out, tl, tl->procs[i].name);
        fprintf(out, "}},\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%" PRId64
                     ",\"args\":{\"sort_index\":%d}}", tl->procs[i].pid, tl->procs[i].device >= 0 ? 100 + tl->procs[i].device : (int)i);
        sep = ",\n";
    }
    for (size_t i = 0; i < tl->ntracks; i++) {
        const pa_tl_track_t *t = &tl->tracks[i];
        if (t->kind == PA_TL_TRACK_COUNTER)
            continue;
        fprintf(out, "%s{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"args\":{\"name\":",
                sep, t->pid, t->tid);
        pa_tlj_name(out, tl, t->name);
        fprintf(out, "}},\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%" PRId64 ",\"tid\":%" PRId64
                     ",\"args\":{\"sort_index\":%zu}}", t->pid, t->tid, i);
        sep = ",\n";
    }
    for (size_t i = 0; i < tl->nslices; i++) {
        const pa_tl_slice_t *s = &tl->slices[i];
        const pa_tl_track_t *t = &tl->tracks[s->track];
        fprintf(out, "%s{\"ph\":\"%s\",\"cat\":\"%s\",\"name\":", sep, s->cat == PA_TL_MARK ? "i" : "X",
                pa_tl_cat_name(s->cat));
        pa_tlj_name(out, tl, s->name);
        fprintf(out, ",\"pid\":%" PRId64 ",\"tid\":%" PRId64, t->pid, t->tid);
        pa_tlj_us(out, "ts", s->t0);
        if (s->cat == PA_TL_MARK)
            fputs(",\"s\":\"t\"", out);
        else
            pa_tlj_us(out, "dur", s->t1 - s->t0);
        pa_tlj_args(out, s);
        fputc('}', out);
        sep = ",\n";
        n++;
    }
    /* flows (v1): "s" at the launching call's start on its thread, "f" binding to the
     * enclosing slice ("bp":"e") at the device operation's start on its engine track */
    for (size_t i = 0; i < tl->nflows; i++) {
        const pa_tl_flow_t *f = &tl->flows[i];
        const pa_tl_slice_t *a = &tl->slices[f->from], *o = &tl->slices[f->to];
        fprintf(out, "%s{\"ph\":\"s\",\"cat\":\"launch\",\"name\":\"launch\",\"id\":%" PRIu64 ",\"pid\":%" PRId64
                     ",\"tid\":%" PRId64, sep, f->id, tl->tracks[a->track].pid, tl->tracks[a->track].tid);
        pa_tlj_us(out, "ts", a->t0);
        fprintf(out, "},\n{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"launch\",\"name\":\"launch\",\"id\":%" PRIu64
                     ",\"pid\":%" PRId64 ",\"tid\":%" PRId64, f->id, tl->tracks[o->track].pid, tl->tracks[o->track].tid);
        pa_tlj_us(out, "ts", o->t0);
        fputc('}', out);
        n += 2;
    }
    for (size_t i = 0; i < tl->ncounters; i++) {
        const pa_tl_counter_t *k = &tl->counters[i];
        const pa_tl_track_t *t = &tl->tracks[k->track];
        fprintf(out, "%s{\"ph\":\"C\",\"name\":", sep);
        pa_tlj_name(out, tl, t->name);
        fprintf(out, ",\"pid\":%" PRId64, t->pid);
        pa_tlj_us(out, "ts", k->t);
        if (k->is_double)
            fprintf(out, ",\"args\":{\"value\":%.17g}}", isfinite(k->d) ? k->d : 0.0);
        else
            fprintf(out, ",\"args\":{\"bytes\":%" PRId64 "}}", k->v);
        sep = ",\n";
        n++;
    }
    fputs("\n]}\n", out);
    return ferror(out) ? -1 : n;
}
