/* report_html.c - `profagent report FILE.db -o report.html`: one self-contained page (the
 * template's inline CSS/JS, the data as JSON in the page): the session, a device-busy overview,
 * and each report that has data as a sortable table with the chart the spec names for it. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "timeline.h"
#include "writer_internal.h"

extern const unsigned char pa_report_template[];  /* cli/report_template.html, generated */

/* What each report's chart is (spec: "Pie chart statistics: ..."): a pie of the value column's
 * share per label, and/or bars of a percentage per label (In-Use of projections). Reports not
 * listed get a table only; any report with a "Util (%)" column gets utilization bars. */
typedef struct pa_html_chart {
    const char *report;
    const char *pie_value, *pie_label, *pie_label2;  /* column titles; label2 joined with " / " */
    const char *bar_value, *bar_label;
} pa_html_chart_t;

static const pa_html_chart_t pa_html_charts[] = {
    {"ze_api_sum", "Total Time (ns)", "Name", NULL, NULL, NULL},
    {"kern_sum", "Total Time (ns)", "Name", NULL, NULL, NULL},
    {"kern_gb_sum", "Total Time (ns)", "Name", NULL, NULL, NULL},
    {"mem_time_sum", "Total Time (ns)", "Operation", NULL, NULL, NULL},
    {"mem_size_sum", "Total (bytes)", "Operation", NULL, NULL, NULL},
    {"hgtx_sum", "Total Time (ns)", "Range", NULL, NULL, NULL},
    {"osrt_sum", "Total Time (ns)", "Name", NULL, NULL, NULL},
    {"hgtx_kern_sum", "Total Time (ns)", "HGTX Range", "Kernel Name", NULL, NULL},
    {"hgtx_gpu_proj_sum", "Proj Active Time (ns)", "Range", NULL, "In-Use (%)", "Range"},
    {"device_memory_usage_summary", "Memory Usage", "Group List", NULL, NULL, NULL},
    {"gpu_trace", NULL, NULL, NULL, NULL, NULL},
    {"ze_api_trace", NULL, NULL, NULL, NULL, NULL},
    {"hgtx_pushpop_trace", NULL, NULL, NULL, NULL, NULL},
    {"hgtx_gpu_proj_trace", NULL, NULL, NULL, NULL, NULL},
    {"device_memory_usage_detail", NULL, NULL, NULL, NULL, NULL},
    /* reports other sources may add; shown when they exist and have rows */
    {"unit_util_sum", NULL, NULL, NULL, "Util (%)", "Unit"},
    {"dma_util_sum", NULL, NULL, NULL, "Util (%)", "Path"},
    {"ppu_metric_trace", NULL, NULL, NULL, NULL, NULL},
};
#define PA_HTML_PIE_TOP 10  /* slices shown; the rest form one "other" slice */

static int pa_html_col(const pa_table_t *t, const char *title)
{
    for (int c = 0; title && c < t->ncols; c++)
        if (strcmp(t->titles[c], title) == 0)
            return c;
    return -1;
}

static const pa_cell_t *pa_html_cell(const pa_table_t *t, size_t r, int c)
{
    return &t->cells[r * (size_t)t->ncols + (size_t)c];
}

static double pa_html_num(const pa_cell_t *c)
{
    return c->type == PA_CELL_INT ? (double)c->i : c->type == PA_CELL_DOUBLE ? c->d : 0.0;
}

static void pa_html_cell_json(FILE *out, const pa_table_t *t, const pa_cell_t *c)
{
    char num[64];
    if (c->type == PA_CELL_STR)
        pa_tl_json_str(out, t->arena + c->off, c->len);
    else if (c->type == PA_CELL_INT)
        fprintf(out, "%lld", (long long)c->i);
    else if (c->type == PA_CELL_DOUBLE && isfinite(c->d)) {
        pa_format_double(num, sizeof num, c->d, c->prec);
        fputs(num, out);
    } else
        fputs("null", out);
}

/* The label bytes of a row (cells `row` of t): the label column, or "label / label2". malloc'd. */
static char *pa_html_label(const pa_table_t *t, const pa_cell_t *row, int lc, int lc2, size_t *len)
{
    char *buf = NULL;
    *len = 0;
    FILE *m = open_memstream(&buf, len);
    if (!m)
        return NULL;
    const pa_cell_t *a = &row[lc];
    if (a->type == PA_CELL_STR)
        fwrite(t->arena + a->off, 1, a->len, m);
    if (lc2 >= 0) {
        const pa_cell_t *b = &row[lc2];
        fputs(" / ", m);
        if (b->type == PA_CELL_STR)
            fwrite(t->arena + b->off, 1, b->len, m);
    }
    if (fclose(m) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* The pie of a report as its rows stream by: the total of the value column over every row and
 * the PA_HTML_PIE_TOP largest rows (ties: the earlier row), so a report of any length costs the
 * top slices' labels. */
typedef struct pa_html_slice { double v; size_t row; char *label; size_t len; } pa_html_slice_t;
typedef struct pa_html_pie_acc {
    int vc, lc, lc2;  /* value and label columns, -1 when the report has none */
    double total;
    size_t nrows, n;
    pa_html_slice_t top[PA_HTML_PIE_TOP];  /* largest first */
} pa_html_pie_acc_t;

static void pa_html_pie_add(pa_html_pie_acc_t *p, const pa_table_t *t, const pa_cell_t *row, size_t r)
{
    double v = pa_html_num(&row[p->vc]);
    p->total += v;
    p->nrows++;
    if (p->n == PA_HTML_PIE_TOP && !(v > p->top[p->n - 1].v))
        return;
    size_t len;
    char *label = pa_html_label(t, row, p->lc, p->lc2, &len);
    if (!label)
        return;
    if (p->n == PA_HTML_PIE_TOP)
        free(p->top[--p->n].label);
    size_t at = p->n;
    while (at > 0 && v > p->top[at - 1].v)
        at--;
    memmove(&p->top[at + 1], &p->top[at], (p->n - at) * sizeof p->top[0]);
    p->top[at] = (pa_html_slice_t){v, r, label, len};
    p->n++;
}

/* "pie": the value column over every row: the PA_HTML_PIE_TOP largest rows, then one slice of
 * the rest; "total" is the sum over all rows (the slices sum to it exactly: integers). */
static void pa_html_pie(FILE *out, const pa_html_pie_acc_t *p, const char *value)
{
    if (!p->nrows)
        return;
    double rest = p->total;
    fprintf(out, ",\"pie\":{\"value\":");
    pa_tl_json_str(out, value, strlen(value));
    fprintf(out, ",\"total\":%.0f,\"rows\":%zu,\"slices\":[", p->total, p->nrows);
    for (size_t i = 0; i < p->n; i++) {
        rest -= p->top[i].v;
        fprintf(out, "%s[", i ? "," : "");
        pa_tl_json_str(out, p->top[i].label, p->top[i].len);
        fprintf(out, ",%.0f]", p->top[i].v);
    }
    if (p->nrows > PA_HTML_PIE_TOP)
        fprintf(out, ",[\"other (%zu rows)\",%.0f]", p->nrows - PA_HTML_PIE_TOP, rest);
    fputs("]}", out);
}

/* "bars": a percentage per label for every row shown (first `limit` rows). */
static void pa_html_bars(FILE *out, const pa_table_t *t, const char *value, const char *label, size_t limit)
{
    int vc = pa_html_col(t, value), lc = pa_html_col(t, label);
    size_t n = pa_table_nrows(t);
    if (vc < 0 || !n)
        return;
    if (lc < 0)
        for (int c = 0; c < t->ncols && lc < 0; c++)
            if (t->cells[c].type == PA_CELL_STR)
                lc = c;
    if (lc < 0)
        return;
    fprintf(out, ",\"bars\":{\"value\":");
    pa_tl_json_str(out, value, strlen(value));
    fputs(",\"items\":[", out);
    for (size_t r = 0; r < n && r < limit; r++) {
        size_t len;
        char *label = pa_html_label(t, pa_html_cell(t, r, 0), lc, -1, &len);
        fprintf(out, "%s[", r ? "," : "");
        pa_tl_json_str(out, label ? label : "", label ? len : 0);
        free(label);
        fputc(',', out);
        pa_html_cell_json(out, t, pa_html_cell(t, r, vc));
        fputc(']', out);
    }
    fputs("]}", out);
}

/* What pa_html_report() keeps of a report's rows as they stream by: the first `limit` (table,
 * bars) and the pie; the rest are only counted. */
typedef struct pa_html_acc {
    const pa_html_chart_t *ch;
    size_t limit;
    pa_table_t kept;
    pa_html_pie_acc_t pie;
} pa_html_acc_t;

static int pa_html_sink(const pa_table_t *t, void *arg)
{
    pa_html_acc_t *a = arg;
    const pa_cell_t *row = t->cells;
    if (t->sunk == 0) {
        a->pie.vc = pa_html_col(t, a->ch->pie_value);
        a->pie.lc = pa_html_col(t, a->ch->pie_label);
        a->pie.lc2 = pa_html_col(t, a->ch->pie_label2);
    }
    if (a->ch->pie_value && a->pie.vc >= 0 && a->pie.lc >= 0)
        pa_html_pie_add(&a->pie, t, row, t->sunk);
    if (t->sunk < a->limit)
        for (int c = 0; c < t->ncols; c++) {
            const pa_cell_t *x = &row[c];
            if (x->type == PA_CELL_STR)
                pa_table_add_str(&a->kept, t->arena + x->off, x->len);
            else if (x->type == PA_CELL_INT)
                pa_table_add_int(&a->kept, x->i);
            else if (x->type == PA_CELL_DOUBLE)
                pa_table_add_double(&a->kept, x->d, x->prec);
            else
                pa_table_add_none(&a->kept);
        }
    return 0;
}

/* One report as {"name","title","rows_total","columns","rows"[first limit],"pie","bars"};
 * returns 1 when written, 0 when the DB has no data for it (or it failed: *why set). Rows are
 * taken as they come (pa_report_produce_each): a trace report is never held whole. */
static int pa_html_report(FILE *out, sqlite3 *db, const pa_html_chart_t *ch, size_t limit, int first,
                          char *why, size_t whysz)
{
    pa_report_req_t *req = NULL;
    const char *titles[64];
    pa_html_acc_t a;
    size_t n = 0;
    why[0] = '\0';
    if (!pa_report_find(ch->report) || pa_report_parse(ch->report, &req, why, whysz) != PA_REP_OK)
        return 0;
    memset(&a, 0, sizeof a);
    a.ch = ch;
    a.limit = limit;
    a.pie.vc = a.pie.lc = a.pie.lc2 = -1;
    int ok = pa_report_produce_each(db, req, titles, pa_html_sink, &a, &n, why, whysz) == PA_REP_OK;
    pa_table_t *t = &a.kept;
    t->titles = titles;
    t->ncols = req->def->ncols < 64 ? (int)req->def->ncols : 64;
    if (ok && n && !t->oom) {
        fprintf(out, "%s\n{\"name\":\"%s\",\"title\":", first ? "" : ",", pa_report_name(req));
        pa_tl_json_str(out, pa_report_title(req), strlen(pa_report_title(req)));
        fprintf(out, ",\"rows_total\":%zu,\"columns\":[", n);
        for (int c = 0; c < t->ncols; c++) {
            fputs(c ? "," : "", out);
            pa_tl_json_str(out, t->titles[c], strlen(t->titles[c]));
        }
        /* digits of each double column (as the CSV prints them), -1 for the others */
        fputs("],\"prec\":[", out);
        for (int c = 0; c < t->ncols; c++) {
            const pa_cell_t *cell = pa_html_cell(t, 0, c);
            fprintf(out, "%s%d", c ? "," : "", cell->type == PA_CELL_DOUBLE ? cell->prec : -1);
        }
        fputs("],\"rows\":[", out);
        size_t kept = pa_table_nrows(t);
        for (size_t r = 0; r < kept; r++) {
            fputs(r ? ",[" : "[", out);
            for (int c = 0; c < t->ncols; c++) {
                fputs(c ? "," : "", out);
                pa_html_cell_json(out, t, pa_html_cell(t, r, c));
            }
            fputc(']', out);
        }
        fputc(']', out);
        if (ch->pie_value)
            pa_html_pie(out, &a.pie, ch->pie_value);
        const char *bar = ch->bar_value;
        for (int c = 0; !bar && c < t->ncols; c++)
            if (strstr(t->titles[c], "Util") && strstr(t->titles[c], "%"))
                bar = t->titles[c];
        if (bar)
            pa_html_bars(out, t, bar, ch->bar_label, limit);
        fputc('}', out);
    }
    for (size_t i = 0; i < a.pie.n; i++)
        free(a.pie.top[i].label);
    pa_table_free(t);
    pa_report_req_free(req);
    return ok && n && !t->oom;
}

/* ---- the session header and the device-busy overview ---- */

static int64_t pa_html_meta_int(sqlite3 *db, const char *key, int64_t dflt)
{
    sqlite3_stmt *st;
    int64_t v = dflt;
    if (sqlite3_prepare_v2(db, "SELECT value FROM META WHERE key = ?1", -1, &st, NULL) != SQLITE_OK)
        return dflt;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static void pa_html_meta_str(FILE *out, sqlite3 *db, const char *key)
{
    sqlite3_stmt *st;
    const char *v = "";
    int n = 0;
    if (sqlite3_prepare_v2(db, "SELECT value FROM META WHERE key = ?1", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)) {
            v = (const char *)sqlite3_column_text(st, 0);
            n = sqlite3_column_bytes(st, 0);
        }
    }
    pa_tl_json_str(out, v, (size_t)n);
    sqlite3_finalize(st);
}

#define PA_HTML_BINS 240

/* The overview's window: the session [t0, t1], widened to every device operation (a DB of an
 * older agent may hold operations converted with a device clock that had no reference yet,
 * seconds away from the session: clipped away, their time was in the device's busy total and in
 * none of its bins). */
static void pa_html_busy_window(sqlite3 *db, int64_t *t0, int64_t *t1)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT min(start), max(end) FROM ZE_OPS WHERE deviceId IS NOT NULL AND end > start"
                           " AND kind IN (1, 2, 3)", -1, &st, NULL) != SQLITE_OK)
        return;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        int64_t lo = sqlite3_column_int64(st, 0), hi = sqlite3_column_int64(st, 1);
        *t0 = lo < *t0 ? lo : *t0;
        *t1 = hi > *t1 ? hi : *t1;
    }
    sqlite3_finalize(st);
}

/* Per device: busy ns (union of its operations' intervals) in PA_HTML_BINS equal bins over the
 * session (pa_html_busy_window), and the total; from ZE_OPS in start order. "t0" and "t1" are ns
 * from the session's start (t0 < 0 when an operation precedes it). */
static void pa_html_busy(FILE *out, sqlite3 *db, int64_t start, int64_t t0, int64_t t1)
{
    sqlite3_stmt *st;
    fprintf(out, ",\n\"busy\":{\"t0\":%lld,\"t1\":%lld,\"bins\":%d,\"devices\":[", (long long)(t0 - start),
            (long long)(t1 - start), PA_HTML_BINS);
    if (sqlite3_prepare_v2(db, "SELECT o.deviceId, o.start, o.end, d.name FROM ZE_OPS o LEFT JOIN ZE_DEVICES d"
                           " ON d.deviceId = o.deviceId WHERE o.deviceId IS NOT NULL AND o.end > o.start AND o.kind IN (1, 2, 3)"
                           " ORDER BY o.deviceId, o.start", -1, &st, NULL) != SQLITE_OK) {
        fputs("]}", out);
        return;
    }
    double bins[PA_HTML_BINS], span = (double)(t1 > t0 ? t1 - t0 : 1), w = span / PA_HTML_BINS;
    int64_t dev = -1, cs = 0, ce = -1, busy = 0, nops = 0;
    int ndev = 0, rc;
    char name[256] = "";
    /* adds the merged interval [cs, ce) (inside [t0, t1]) to the bins */
#define PA_HTML_FLUSH()                                                                   \
    do {                                                                                  \
        if (ce > cs) {                                                                    \
            busy += ce - cs;                                                              \
            double a = (double)(cs - t0), b = (double)(ce - t0);                          \
            int k0 = (int)(a / w);                                                        \
            for (int k = k0 > 0 ? k0 : 0; k < PA_HTML_BINS && k * w < b; k++) {          \
                double lo = fmax(a, k * w), hi = fmin(b, (k + 1) * w);                    \
                if (hi > lo)                                                              \
                    bins[k] += hi - lo;                                                   \
            }                                                                             \
        }                                                                                 \
    } while (0)
#define PA_HTML_EMIT()                                                                    \
    do {                                                                                  \
        fprintf(out, "%s{\"id\":%lld,\"name\":", ndev++ ? "," : "", (long long)dev);      \
        pa_tl_json_str(out, name, strlen(name));                                          \
        fprintf(out, ",\"ops\":%lld,\"busy_ns\":%lld,\"bins\":[", (long long)nops, (long long)busy); \
        for (int k = 0; k < PA_HTML_BINS; k++)                                            \
            fprintf(out, "%s%.0f", k ? "," : "", bins[k]);                                \
        fputs("]}", out);                                                                 \
    } while (0)
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t d = sqlite3_column_int64(st, 0), s = sqlite3_column_int64(st, 1), e = sqlite3_column_int64(st, 2);
        if (d != dev) {
            if (dev >= 0) {
                PA_HTML_FLUSH();
                PA_HTML_EMIT();
            }
            dev = d;
            cs = s;
            ce = s;
            busy = nops = 0;
            memset(bins, 0, sizeof bins);
            snprintf(name, sizeof name, "%s", sqlite3_column_text(st, 3) ? (const char *)sqlite3_column_text(st, 3) : "");
        }
        nops++;
        if (s > ce) {
            PA_HTML_FLUSH();
            cs = s;
            ce = e;
        } else if (e > ce)
            ce = e;
    }
    if (dev >= 0) {
        PA_HTML_FLUSH();
        PA_HTML_EMIT();
    }
#undef PA_HTML_FLUSH
#undef PA_HTML_EMIT
    sqlite3_finalize(st);
    fputs("]}", out);
}

/* Loss counters worth a reader's attention: the non-zero ones. */
static void pa_html_losses(FILE *out, sqlite3 *db)
{
    sqlite3_stmt *st;
    int n = 0;
    fputs(",\"losses\":[", out);
    if (sqlite3_prepare_v2(db, "SELECT name, value FROM SESSION_COUNTERS WHERE value != 0 AND (name LIKE '%drop%'"
                           " OR name LIKE '%unrecorded%' OR name LIKE '%misuse%' OR name LIKE '%overflow%'"
                           " OR name LIKE '%error%' OR name LIKE '%uncollected%' OR name LIKE '%truncated%'"
                           " OR name LIKE 'late%' OR name LIKE '%unterminated%') ORDER BY name", -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            fprintf(out, "%s[", n++ ? "," : "");
            pa_tl_json_str(out, (const char *)sqlite3_column_text(st, 0), (size_t)sqlite3_column_bytes(st, 0));
            fprintf(out, ",%lld]", (long long)sqlite3_column_int64(st, 1));
        }
        sqlite3_finalize(st);
    }
    fputc(']', out);
}

static void pa_html_data(FILE *out, sqlite3 *db, const char *db_path, size_t limit)
{
    int64_t start = pa_html_meta_int(db, "start_mono_ns", 0), end = pa_html_meta_int(db, "end_mono_ns", start);
    int64_t wall = pa_html_meta_int(db, "start_wall_ns", 0);
    char when[64] = "";
    time_t secs = (time_t)(wall / 1000000000);
    struct tm tm;
    if (wall && gmtime_r(&secs, &tm))
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    fputs("{\"session\":{\"db\":", out);
    pa_tl_json_str(out, db_path, strlen(db_path));
    fputs(",\"command\":", out);
    pa_html_meta_str(out, db, "command_line");
    fputs(",\"host\":", out);
    pa_html_meta_str(out, db, "hostname");
    fprintf(out, ",\"pid\":%lld,\"rank\":%lld,\"start\":\"%s\",\"duration_ns\":%lld,\"complete\":%lld",
            (long long)pa_html_meta_int(db, "pid", 0), (long long)pa_html_meta_int(db, "rank", -1), when,
            (long long)(end - start), (long long)pa_html_meta_int(db, "session_complete", 1));
    /* a merged DB (profagent merge) has no single pid: its processes' pids and ranks, "," separated */
    fputs(",\"pids\":", out);
    pa_html_meta_str(out, db, "pids");
    fputs(",\"ranks\":", out);
    pa_html_meta_str(out, db, "ranks");
    pa_html_losses(out, db);
    fputc('}', out);
    int64_t b0 = start, b1 = end;
    pa_html_busy_window(db, &b0, &b1);
    pa_html_busy(out, db, start, b0, b1);
    fputs(",\n\"reports\":[", out);
    int first = 1;
    char why[1024], names[8192];
    for (size_t i = 0; i < sizeof pa_html_charts / sizeof pa_html_charts[0]; i++)
        if (pa_html_report(out, db, &pa_html_charts[i], limit, first, why, sizeof why))
            first = 0;
    /* every other registered report (sources added later: PC sampling, host counters, ...):
     * its table, a pie when it has "Total Time (ns)" and "Name" columns, Util bars if any */
    pa_report_names(names, sizeof names);
    for (char *p = names; *p;) {
        size_t len = strcspn(p, ",");
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), p);
        p += len;
        p += strspn(p, ", ");
        int listed = 0;
        for (size_t i = 0; i < sizeof pa_html_charts / sizeof pa_html_charts[0]; i++)
            listed |= strcmp(pa_html_charts[i].report, name) == 0;
        pa_html_chart_t ch = {name, "Total Time (ns)", "Name", NULL, NULL, NULL};
        if (!listed && pa_html_report(out, db, &ch, limit, first, why, sizeof why))
            first = 0;
    }
    fprintf(out, "\n],\"rows_shown\":%zu}", limit);
}

/* Writes the template with the data in place of its marker; "</" in the data is written "<\/"
 * so no string can close the <script> element that holds it. */
static int pa_html_write(FILE *out, sqlite3 *db, const char *db_path, size_t limit)
{
    static const char mark[] = "/*PA_DATA*/";
    const char *tpl = (const char *)pa_report_template, *at = strstr(tpl, mark);
    char *data = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&data, &len);
    if (!at || !m)
        return -1;
    pa_html_data(m, db, db_path, limit);
    if (fclose(m) != 0)
        return -1;
    fwrite(tpl, 1, (size_t)(at - tpl), out);
    for (size_t i = 0; i < len; i++) {
        if (data[i] == '<' && i + 1 < len && data[i + 1] == '/')
            fputs("<\\", out);
        else
            fputc(data[i], out);
    }
    fputs(at + sizeof mark - 1, out);
    free(data);
    return ferror(out) ? -1 : 0;
}

static void pa_report_usage(FILE *out)
{
    fprintf(out,
        "usage: profagent report FILE.db [-o report.html] [--rows N] [--force-overwrite]\n\n"
        "One self-contained HTML page (inline CSS and JavaScript, no network): the session (command,\n"
        "duration, devices, losses), a timeline overview of each device's busy time, and each report\n"
        "that has data as a sortable table of its first N rows (default 50) with the chart the\n"
        "spec names for it (pie charts of time or size shares, In-Use bars for projections, leak\n"
        "groups, utilization bars where the DB has them). Default output: FILE.html.\n");
}

/* The temporary page while it is written: removed on SIGINT, SIGTERM or SIGHUP (a kill -9 leaves
 * it, and the next run writes the same name over it). */
static char report_tmp[4200];

static void on_report_signal(int sig)
{
    if (report_tmp[0])
        unlink(report_tmp);
    signal(sig, SIG_DFL);
    raise(sig);
}

int pa_cli_report(int argc, char **argv)
{
    const char *db_path = NULL, *out_path = NULL;
    char defpath[4096], tmp[4200], err[2048];
    long limit = 50;
    int force = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            pa_report_usage(stdout);
            return PA_CLI_OK;
        } else if (strcmp(a, "--force-overwrite") == 0)
            force = 1;
        else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0 || strcmp(a, "--rows") == 0) {
            if (i + 1 >= argc) {
                pa_cli_error("report: option %s needs a value", a);
                return PA_CLI_EUSAGE;
            }
            if (strcmp(a, "--rows") == 0) {
                char *end;
                limit = strtol(argv[++i], &end, 10);
                if (*end || limit < 1 || limit > 100000) {
                    pa_cli_error("report: --rows '%s' is not accepted; give 1..100000", argv[i]);
                    return PA_CLI_EUSAGE;
                }
            } else
                out_path = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            pa_cli_error("report: unknown option '%s'; accepted: -o/--output, --rows, --force-overwrite, --help", a);
            return PA_CLI_EUSAGE;
        } else if (db_path) {
            pa_cli_error("report: one database file expected, got '%s' and '%s'", db_path, a);
            return PA_CLI_EUSAGE;
        } else
            db_path = a;
    }
    if (!db_path) {
        pa_cli_error("report: no database file given; see 'profagent report --help'");
        return PA_CLI_EUSAGE;
    }
    if (!out_path) {
        size_t n = strlen(db_path);
        int cut = n > 3 && strcmp(db_path + n - 3, ".db") == 0 ? 3 : 0;
        snprintf(defpath, sizeof defpath, "%.*s.html", (int)(n - (size_t)cut), db_path);
        out_path = defpath;
    }
    struct stat ost;
    if (stat(out_path, &ost) == 0 && S_ISDIR(ost.st_mode)) {
        size_t n = strlen(db_path);
        const char *base = strrchr(db_path, '/');
        base = base ? base + 1 : db_path;
        n = strlen(base);
        pa_cli_error("report: -o '%s' is a directory; give the HTML file's name, e.g. -o %s%s%.*s.html", out_path,
                     out_path, out_path[strlen(out_path) - 1] == '/' ? "" : "/",
                     (int)(n > 3 && strcmp(base + n - 3, ".db") == 0 ? n - 3 : n), base);
        return PA_CLI_EUSAGE;
    }
    int dev = pa_cli_output_is_device(out_path); /* /dev/stdout, a FIFO: written in place */
    if (!dev && !force && access(out_path, F_OK) == 0) {
        pa_cli_error("report: '%s' exists; give --force-overwrite to replace it", out_path);
        return PA_CLI_EDATA;
    }
    sqlite3 *db = NULL;
    if (pa_report_db_open(db_path, &db, err, sizeof err) != PA_REP_OK) {
        pa_cli_error("report: %s", err);
        return PA_CLI_EDATA;
    }
    snprintf(tmp, sizeof tmp, "%s.tmp", out_path);
    struct sigaction sa = {.sa_handler = on_report_signal}, old[3];
    const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    sigemptyset(&sa.sa_mask);
    if (!dev) {
        snprintf(report_tmp, sizeof report_tmp, "%s", tmp);
        for (int i = 0; i < 3; i++)
            sigaction(sigs[i], &sa, &old[i]);
    }
    FILE *out = fopen(dev ? out_path : tmp, "w");
    if (!out) {
        pa_cli_error("report: cannot write '%s': %m", out_path);
        sqlite3_close(db);
        report_tmp[0] = '\0';
        return PA_CLI_EDATA;
    }
    int rc = pa_html_write(out, db, db_path, (size_t)limit) == 0 ? PA_CLI_OK : PA_CLI_EDATA;
    sqlite3_close(db);
    if (fclose(out) != 0)
        rc = PA_CLI_EDATA;
    if (rc == PA_CLI_OK && !dev && rename(tmp, out_path) != 0) {
        pa_cli_error("report: cannot create '%s': %m", out_path);
        rc = PA_CLI_EDATA;
    } else if (rc != PA_CLI_OK)
        pa_cli_error("report: writing '%s' failed: %m", out_path);
    if (rc != PA_CLI_OK && !dev)
        remove(tmp);
    if (!dev) {
        report_tmp[0] = '\0';
        for (int i = 0; i < 3; i++)
            sigaction(sigs[i], &old[i], NULL);
    }
    return rc;
}
