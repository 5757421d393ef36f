/* writer_proj.c - HGTX_OP_ASSOC (range -> device op associations from the aggregator) and the
 * exit summary section "HGTX ranges projected onto the device" (issue 5). */
#include <stdlib.h>
#include <string.h>

#include "../agg/agg_proj.h"
#include "writer_internal.h"
#include "writer_proj.h"

/* opId = rowid of ZE_OPS (ops are inserted in spool order, rowids 1..n); how = enum pa_proj_via:
 * 0 launched while the range was open, 1 through a graph (regular list recorded in the range),
 * 2 graph executed while the range was open (always counts; graph mapping, the default, adds 1). */
static const char proj_schema[] =
    "CREATE TABLE HGTX_OP_ASSOC(rangeId INTEGER, opId INTEGER, how INTEGER);";

static pa_bulk_t bulk_assoc;
static int bulk_ready;

static int proj_create_schema(sqlite3 *db)
{
    if (pa_db_exec(db, proj_schema) != 0)
        return -1;
    if (pa_bulk_init(&bulk_assoc, db, "INSERT INTO HGTX_OP_ASSOC(rangeId,opId,how)", 3, 256) != 0)
        return -1;
    bulk_ready = 1;
    return 0;
}

static int proj_on_record(sqlite3 *db, const pa_record_t *rec, const uint8_t *payload)
{
    (void)db;
    (void)payload;
    if (!bulk_ready || rec->kind != PA_SP_HGTX_ASSOC)
        return 0;
    pa_bulk_int(&bulk_assoc, (int64_t)rec->u.raw[0]);
    pa_bulk_int(&bulk_assoc, (int64_t)rec->u.raw[1]);
    pa_bulk_int(&bulk_assoc, (int64_t)rec->u.raw[2]);
    return 0;
}

/* The exit summary's projection rows when associations were removed at finish: hgtx_gpu_proj_sum run
 * on the DB just written (so the summary and the report agree); db_span = its range-mode=active
 * denominator. */
static pa_table_t sum_table;
static const char *sum_titles[64];
static int sum_ready;
static int64_t db_span;

static void proj_summary_compute(sqlite3 *db)
{
    char err[512];
    pa_report_req_t *req = NULL;
    sum_ready = 0;
    pa_table_free(&sum_table);
    memset(&sum_table, 0, sizeof sum_table);
    if (pa_sqlfn_register(db) != 0 || pa_report_parse("hgtx_gpu_proj_sum", &req, err, sizeof err) != PA_REP_OK)
        return;
    const pa_report_def_t *d = req->def;
    for (size_t i = 0; i < d->ncols && i < 64; i++)
        sum_titles[i] = d->cols[i].title;
    sum_table.ncols = (int)d->ncols;
    sum_table.titles = sum_titles;
    sum_ready = d->produce(db, req, &sum_table, err, sizeof err) == 0 && !sum_table.oom && sum_table.ncols >= 13;
    pa_report_req_free(req);
    sqlite3_stmt *st;
    db_span = 0;
    if (sqlite3_prepare_v2(db, "SELECT max(end) - min(start) FROM ZE_OPS WHERE kind IN (1, 2, 3)", -1, &st,
                           NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            db_span = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
}

/* The other half of the rule: every launch the starting or the ending thread made inside a start/end
 * range ended on another thread. The aggregator finds the ending thread's in a short per-thread
 * history of recent launches when the range closes, and keeps a bounded list of such ranges for the
 * starting thread's late launches; what these missed (a thread that launched more inside it) is
 * added here, from the DB. Only when such ranges exist (the lookup index costs a sort of ZE_OPS).
 * Returns the rows added. */
static int proj_complete_end_threads(sqlite3 *db, int *rc)
{
    /* counted while the rows were loaded: no scan of HGTX_RANGES at exit */
    if (!pa_writer_cross_thread_ranges())
        return 0;
    /* direct launches (how 0) and executes of regular lists (how 2) by the ending thread */
    if (pa_db_exec(db, "CREATE INDEX IF NOT EXISTS ZE_OPS_tid_api ON ZE_OPS(tid, apiStart);"
                       "INSERT INTO HGTX_OP_ASSOC(rangeId, opId, how) SELECT r.id, o.rowid,"
                       " CASE WHEN o.graphId IS NULL THEN 0 ELSE 2 END FROM HGTX_RANGES r JOIN ZE_OPS o"
                       " ON o.tid IN (r.globalTid, r.endGlobalTid) AND o.apiStart BETWEEN r.start AND r.end"
                       " WHERE r.style = 1 AND r.unterminated = 0 AND r.endGlobalTid != r.globalTid"
                       " AND o.kind IN (1, 2, 3) AND NOT EXISTS (SELECT 1 FROM HGTX_OP_ASSOC x"
                       "  WHERE x.rangeId = r.id AND x.opId = o.rowid AND x.how != 1);") != 0) {
        *rc = -1;
        return 0;
    }
    return sqlite3_changes(db);
}

/* 1 when there is an association (graph: one through a graph node's append call, how 1). */
static int proj_has_assoc(sqlite3 *db, int graph)
{
    sqlite3_stmt *st;
    int have = 0;
    if (sqlite3_prepare_v2(db, graph ? "SELECT 1 FROM HGTX_OP_ASSOC WHERE how = 1 LIMIT 1"
                           : "SELECT 1 FROM HGTX_OP_ASSOC LIMIT 1", -1, &st, NULL) == SQLITE_OK) {
        have = sqlite3_step(st) == SQLITE_ROW;
        sqlite3_finalize(st);
    }
    return have;
}

static int proj_finish(sqlite3 *db)
{
    int rc = 0;
    if (bulk_ready) {
        rc = pa_bulk_finish(&bulk_assoc);
        bulk_ready = 0;
    }
    /* A start/end range holds the launches its starting or ending thread made inside it. The
     * aggregator snapshots the ranges open at each launch as it drains; a launch made on the starting
     * thread right after another thread ended the range, drained before that end, was snapshotted
     * with the range still open. Now every end is known: such associations go (the launching call of
     * a graph node is its append, else the op's launch or execute call). */
    /* ZE_API(corrId) (a sort of every call) only when a graph node's append is looked up */
    int any = proj_has_assoc(db, 0);
    if (any && proj_has_assoc(db, 1) &&
        pa_db_exec(db, "CREATE INDEX IF NOT EXISTS ZE_API_corrId ON ZE_API(corrId);") != 0)
        rc = -1;
    if (any && pa_db_exec(db, "DELETE FROM HGTX_OP_ASSOC WHERE rowid IN (SELECT x.rowid FROM HGTX_OP_ASSOC x"
                       " JOIN HGTX_RANGES r ON r.id = x.rangeId AND r.style = 1 JOIN ZE_OPS o ON o.rowid = x.opId"
                       " WHERE coalesce(CASE WHEN x.how = 1 THEN (SELECT a.start FROM ZE_API a"
                       "  WHERE a.corrId = o.appendCorrId) END, o.apiStart) NOT BETWEEN r.start AND r.end);") != 0)
        rc = -1;
    int removed = rc == 0 && any ? sqlite3_changes(db) : 0;
    removed += proj_complete_end_threads(db, &rc);
    if (pa_db_exec(db, "CREATE INDEX HGTX_OP_ASSOC_op ON HGTX_OP_ASSOC(opId);"
                       "CREATE INDEX HGTX_OP_ASSOC_range ON HGTX_OP_ASSOC(rangeId);") != 0)
        rc = -1;
    /* the aggregator's projection counted what was removed and missed what was added: the summary
     * then comes from the report (which costs a pass over the associations, so only then) */
    sum_ready = 0;
    if (removed > 0)
        proj_summary_compute(db);
    return rc;
}

/* The closest range (hgtx-name, spec 2.3.5): the innermost (latest started) range open at the
 * launch; for a kernel of an executed regular list, graph mapping being on by default, the
 * innermost range open at its append, and only when the list was recorded outside any range the
 * innermost range open around zeCommandQueueExecuteCommandLists. */
const char *pa_proj_kname_sql(int hgtx_name, int mode, char *buf, size_t sz)
{
    if (!hgtx_name)
        snprintf(buf, sz, "coalesce(ze_kname(s.value, %d), " PA_SQL_UNKNOWN_NAME("o.nameId") ")", mode);
    else
        snprintf(buf, sz, "coalesce((SELECT r.name || '/' FROM HGTX_OP_ASSOC x JOIN HGTX_RANGES_NAMED r"
                 " ON r.id = x.rangeId WHERE x.opId = o.rowid ORDER BY x.how = 2, r.start DESC,"
                 " r.id DESC LIMIT 1), '') || coalesce(ze_kname(s.value, %d), " PA_SQL_UNKNOWN_NAME("o.nameId") ")",
                 mode);
    return buf;
}

/* ---- exit summary ---- */

typedef struct proj_row {
    const char *key; size_t key_len;
    uint32_t style;
    uint64_t active, total_proj, instances, ops;
    double in_use;
} proj_row_t;

static int proj_row_cmp(const void *x, const void *y)
{
    const proj_row_t *a = x, *b = y;
    if (a->in_use != b->in_use)
        return a->in_use > b->in_use ? -1 : 1;
    size_t n = a->key_len < b->key_len ? a->key_len : b->key_len;
    int c = memcmp(a->key, b->key, n);
    if (c)
        return c;
    if (a->key_len != b->key_len)
        return a->key_len < b->key_len ? -1 : 1;
    return a->style < b->style ? -1 : a->style > b->style;
}

static proj_row_t *proj_find(proj_row_t *rows, size_t n, const pa_stat_row_t *r)
{
    for (size_t i = 0; i < n; i++)
        if (rows[i].style == (r->tag & 1u) && rows[i].key_len == r->key_len &&
            memcmp(rows[i].key, r->key, r->key_len) == 0)
            return &rows[i];
    return NULL;
}

size_t pa_proj_summary_rows(const pa_agg_results_t *res, pa_proj_sum_row_t *out, size_t max,
                            uint64_t *span_ns)
{
    uint64_t span = 0;
    size_t n = 0;
    proj_row_t *rows = calloc(res && res->nrows ? res->nrows : 1, sizeof *rows);
    if (!rows)
        return 0;
    for (size_t i = 0; res && i < res->nrows; i++) {
        const pa_stat_row_t *r = &res->rows[i];
        if (r->cat != PA_CAT_HGTX_PROJ)
            continue;
        if (r->tag == PA_PROJ_TAG_SPAN) {
            span = r->st.total;
            continue;
        }
        if (r->tag > (PA_PROJ_TAG_ACTIVE | 1u))
            continue;
        proj_row_t *p = proj_find(rows, n, r);
        if (!p) {
            p = &rows[n++];
            p->key = r->key;
            p->key_len = r->key_len;
            p->style = r->tag & 1u;
        }
        switch (r->tag & ~1u) {
        case PA_PROJ_TAG_DUR: p->total_proj = r->st.total; p->instances = r->st.count; break;
        case PA_PROJ_TAG_OPS: p->ops = r->st.total; break;
        default: p->active = r->st.total; break;
        }
    }
    for (size_t i = 0; i < n; i++) {
        double u = span ? (double)rows[i].active * 100.0 / (double)span : 0.0;
        rows[i].in_use = u > 100.0 ? 100.0 : u;
    }
    pa_sort(rows, n, sizeof *rows, proj_row_cmp);
    size_t k = 0;
    for (; k < n && k < max; k++) {
        out[k].key = rows[k].key;
        out[k].key_len = rows[k].key_len;
        out[k].style = rows[k].style;
        out[k].active_ns = rows[k].active;
        out[k].total_proj_ns = rows[k].total_proj;
        out[k].instances = rows[k].instances;
        out[k].ops = rows[k].ops;
        out[k].in_use_pct = rows[k].in_use;
    }
    free(rows);
    if (span_ns)
        *span_ns = span;
    return k;
}

#define PA_PROJ_SUMMARY_TOP 10

/* the other sections' style (a table with Row#) and hgtx_gpu_proj_sum's column names and order */
static const char *const proj_titles[] = {"Range", "Style", "In-Use (%)", "Proj Active Time (ns)",
                                          "Total Proj Time (ns)", "Range Instances", "Total PPU Ops"};

/* The summary from the report's rows (columns Range, Style, In-Use, Proj Active, Total Proj, Range
 * Instances, Total PPU Ops of hgtx_gpu_proj_sum). Returns 0, or -1 when there is none. */
static int proj_summary_db(FILE *out)
{
    static const int pick[] = {0, 1, 2, 3, 4, 6, 12};
    size_t n = sum_ready ? pa_table_nrows(&sum_table) : 0;
    if (!sum_ready)
        return -1;
    sum_ready = 0;
    if (n > PA_PROJ_SUMMARY_TOP)
        n = PA_PROJ_SUMMARY_TOP;
    pa_table_t t;
    memset(&t, 0, sizeof t);
    t.ncols = (int)(sizeof proj_titles / sizeof proj_titles[0]);
    t.titles = proj_titles;
    for (size_t r = 0; r < n; r++)
        for (size_t k = 0; k < sizeof pick / sizeof pick[0]; k++) {
            const pa_cell_t *c = &sum_table.cells[r * (size_t)sum_table.ncols + (size_t)pick[k]];
            if (c->type == PA_CELL_STR)
                pa_table_add_str(&t, sum_table.arena + c->off, c->len);
            else if (c->type == PA_CELL_DOUBLE)
                pa_table_add_double(&t, c->d, c->prec);
            else if (c->type == PA_CELL_INT)
                pa_table_add_int(&t, c->i);
            else
                pa_table_add_none(&t);
        }
    if (n) {
        fprintf(out, "\nHGTX ranges projected onto the device (top %zu by In-Use; device active span %lld ns;"
                     " all: profagent stats -r hgtx_gpu_proj_sum):\n", n, (long long)db_span);
        pa_table_write(&t, PA_FMT_TABLE, out);
    }
    pa_table_free(&t);
    pa_table_free(&sum_table);
    return 0;
}

static void proj_summary(FILE *out, const pa_session_meta_t *meta, const pa_agg_results_t *res)
{
    (void)meta;
    if (proj_summary_db(out) == 0)
        return;
    /* no DB (not written): the aggregator's rows */
    pa_proj_sum_row_t rows[PA_PROJ_SUMMARY_TOP];
    uint64_t span = 0;
    size_t n = pa_proj_summary_rows(res, rows, PA_PROJ_SUMMARY_TOP, &span);
    if (!n)
        return;
    pa_table_t t;
    memset(&t, 0, sizeof t);
    t.ncols = (int)(sizeof proj_titles / sizeof proj_titles[0]);
    t.titles = proj_titles;
    for (size_t i = 0; i < n; i++) {
        pa_table_add_str(&t, rows[i].key, rows[i].key_len);
        pa_table_add_str(&t, rows[i].style ? "StartEnd" : "PushPop", rows[i].style ? 8 : 7);
        pa_table_add_double(&t, rows[i].in_use_pct, 1);
        pa_table_add_int(&t, (int64_t)rows[i].active_ns);
        pa_table_add_int(&t, (int64_t)rows[i].total_proj_ns);
        pa_table_add_int(&t, (int64_t)rows[i].instances);
        pa_table_add_int(&t, (int64_t)rows[i].ops);
    }
    fprintf(out, "\nHGTX ranges projected onto the device (top %zu by In-Use; device active span %llu ns;"
                 " all: profagent stats -r hgtx_gpu_proj_sum):\n", n, (unsigned long long)span);
    pa_table_write(&t, PA_FMT_TABLE, out);
    pa_table_free(&t);
}

const pa_writer_source_t pa_writer_source_proj = {
    .name = "hgtx-projection",
    .create_schema = proj_create_schema,
    .on_record = proj_on_record,
    .finish = proj_finish,
    .summary = proj_summary,
};
