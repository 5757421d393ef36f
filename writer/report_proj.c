/* report_proj.c - HGTX ranges projected onto the device (spec 2.3.9-2.3.12): hgtx_kern_sum,
 * hgtx_kern_trace, hgtx_gpu_proj_sum, hgtx_gpu_proj_trace, from HGTX_OP_ASSOC. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report_util.h"
#include "writer_proj.h"
#include "writer_ze.h"
#include "../common/pa_stddev.h"

#define OPT_STANDALONE {"standalone", PA_OPT_FLAG, "", "Also list kernels not associated with any HGTX range\n(their HGTX columns show '-').", NULL}
#define OPT_NOGRAPH {"no-graph-mapping", PA_OPT_FLAG, "", "Drop the ranges mapped through regular command lists (graphs): work of\nan executed list then belongs only to the ranges open around\nzeCommandQueueExecuteCommandLists, no longer also to those open when it\nwas appended (graph mapping, on by default, adds those).", NULL}
#define OPT_RANGE {"range", PA_OPT_REGEX, "<regex_filter>", "Perl-compatible regular expression (PCRE2) selecting the HGTX ranges\n(partial match on the name). Default is all ranges.", NULL}
#define OPT_RANGE_MODE {"range-mode", PA_OPT_ENUM, "<mode>", "Statistics time range of In-Use: active (default) = first to last\ndevice activity; full = the whole session.", range_modes}

static const char *const range_modes[] = {"active", "full", NULL};
static const pa_report_opt_t opts_kern[] = {PA_REPORT_OPT_BASE, PA_REPORT_OPT_MANGLED, OPT_STANDALONE,
                                            PA_REPORT_OPT_DEVICE, OPT_NOGRAPH, OPT_RANGE};
static const pa_report_opt_t opts_proj_sum[] = {PA_REPORT_OPT_DEVICE, OPT_RANGE_MODE, OPT_RANGE, OPT_NOGRAPH};
static const pa_report_opt_t opts_proj_trace[] = {PA_REPORT_OPT_DEVICE, OPT_RANGE, OPT_NOGRAPH};

static int flag(const pa_report_req_t *req, const char *name)
{
    const pa_opt_val_t *v = pa_req_opt(req, name);
    return v && v->set;
}

/* Graph mapping is additive (spec 2.3.9-2.3.12: no-graph-mapping "excludes HGTX range information
 * mapped through graph nodes"): by default a kernel of an executed regular list belongs to the
 * ranges open at its append (how 1) AND to those open around the execute call (how 2);
 * no-graph-mapping keeps how 0 and 2. */
static const char *how_filter(const pa_report_req_t *req)
{
    return flag(req, "no-graph-mapping") ? " AND x.how IN (0,2)" : " AND x.how IN (0,1,2)";
}

/* The associations of the selected mode, one row per (range, op): a range both open at the append
 * and around the execute of the same op counts once, as the execute-time (direct) association,
 * which has an API call to show (priority how 0, then 2, then 1). */
static const char *assoc_src(const pa_report_req_t *req)
{
    return flag(req, "no-graph-mapping")
        ? "(SELECT rangeId, opId, min(how) AS how FROM HGTX_OP_ASSOC WHERE how IN (0,2) GROUP BY 1, 2) x"
        : "(SELECT rangeId, opId, coalesce(nullif(min(CASE how WHEN 1 THEN 3 ELSE how END), 3), 1) AS how"
          " FROM HGTX_OP_ASSOC GROUP BY 1, 2) x";
}

/* pa_report_prepare_ze(), then range= (when set) bound to ?1. */
static int prep(sqlite3 *db, const pa_report_req_t *req, const char *sql, sqlite3_stmt **st, char *err,
                size_t errsz)
{
    int rc = pa_report_prepare_ze(db, req, sql, st, err, errsz);
    const pa_opt_val_t *re = pa_req_opt(req, "range");
    if (!rc && re && re->set)
        sqlite3_bind_text(*st, 1, re->s, -1, SQLITE_STATIC);
    return rc;
}

static void add_pid_tid(pa_table_t *t, sqlite3_stmt *st, int col)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL) {
        pa_table_add_none(t);
        pa_table_add_none(t);
        return;
    }
    uint64_t g = (uint64_t)sqlite3_column_int64(st, col);
    pa_table_add_int(t, (int64_t)(g >> 32));
    pa_table_add_int(t, (int64_t)(g & 0xffffffffu));
}

/* Associated kernels: one row per (range, kernel op) with the filters applied. */
#define ASSOC_FROM \
    " FROM %s JOIN HGTX_RANGES_NAMED r ON r.id = x.rangeId JOIN ZE_OPS o ON o.rowid = x.opId" \
    " JOIN STRING_IDS s ON s.id = o.nameId WHERE o.kind = 1 AND (?1 IS NULL OR r.name REGEXP ?1)"
/* Kernels with no association in the selected mapping mode (the range filter does not apply). */
#define STANDALONE_WHERE \
    " FROM ZE_OPS o JOIN STRING_IDS s ON s.id = o.nameId WHERE o.kind = 1 AND NOT EXISTS (SELECT 1" \
    " FROM HGTX_OP_ASSOC x WHERE x.opId = o.rowid%s)"
/* TID of a (range, kernel) row (spec 2.3.9: rows per "thread, range name, kernel name", a kernel
 * being associated with a range when launched from that thread in it): the launching thread of
 * the kernel, which differs from the range's starting thread for a start/end range ended on
 * another thread; through a graph (how 1): the appending thread, which is the range's. */
#define ROW_GTID_SQL "CASE x.how WHEN 1 THEN r.globalTid ELSE " PA_SQL_GTID("o.tid") " END"

/* ---- hgtx_kern_sum (2.3.9) ---- */

static const pa_report_col_t cols_kern_sum[] = {
    {"HGTX Range", "Name of the HGTX range"},
    {"Style", "Range style: StartEnd or PushPop"},
    {"PID", "Process ID of the range"},
    {"TID", "Thread that launched these kernels (appended them, when mapped through a graph)"},
    {"HGTX Inst", "Number of HGTX range instances"},
    {"Kern Inst", "Number of kernel instances"},
    {"Total Time (ns)", "Total execution time of the kernel instances in this range"},
    {"Avg (ns)", "Average execution time of this kernel"},
    {"Med (ns)", "Median execution time of this kernel"},
    {"Min (ns)", "Minimum execution time of this kernel"},
    {"Max (ns)", "Maximum execution time of this kernel"},
    {"StdDev (ns)", "Standard deviation of the execution time of this kernel"},
    {"Kernel Name", "Name of the kernel"},
};

static int produce_kern_sum(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err, size_t errsz)
{
    char sql[8192], dev[1024] = "";
    if (pa_report_device_clause(req, dev, sizeof dev, err, errsz) != PA_REP_OK)
        return PA_REP_EDATA;
    int mode = pa_report_name_mode(req);
    /* d: one row per (range name, style, thread, kernel, op) so a kernel inside two instances of
     * the same name counts once; i: the instances per group */
    int n = snprintf(sql, sizeof sql,
        "WITH a AS (SELECT r.name AS name, r.style AS style, " ROW_GTID_SQL " AS gtid, x.rangeId AS rid,"
        " o.rowid AS oid, o.end - o.start AS dur, ze_kname(s.value, %d) AS kname" ASSOC_FROM "%s),"
        " d AS (SELECT DISTINCT name, style, gtid, kname, oid, dur FROM a),"
        " i AS (SELECT name, style, gtid, kname, count(DISTINCT rid) AS ninst FROM a GROUP BY 1, 2, 3, 4)"
        " SELECT 0 AS sa, d.name, CASE d.style WHEN 1 THEN 'StartEnd' ELSE 'PushPop' END, d.gtid,"
        " i.ninst, count(*), sum(dur) AS total, sum(dur) * 1.0 / count(*), median(dur), min(dur), max(dur),"
        " stddev(dur), d.kname FROM d JOIN i USING (name, style, gtid, kname) GROUP BY d.name, d.style,"
        " d.gtid, d.kname",
        mode, assoc_src(req), dev);
    if (flag(req, "standalone")) {
        n += snprintf(sql + n, sizeof sql - (size_t)n,
            " UNION ALL SELECT 1, NULL, NULL, " PA_SQL_GTID("o.tid") ", NULL, count(*),"
            " sum(o.end - o.start) AS total, sum(o.end - o.start) * 1.0 / count(*), median(o.end - o.start),"
            " min(o.end - o.start), max(o.end - o.start), stddev(o.end - o.start), ze_kname(s.value, %d)",
            mode);
        n += snprintf(sql + n, sizeof sql - (size_t)n, STANDALONE_WHERE, how_filter(req));
        n += snprintf(sql + n, sizeof sql - (size_t)n, "%s GROUP BY o.tid, 13", dev);
    }
    snprintf(sql + n, sizeof sql - (size_t)n, " ORDER BY 1, 2, 4, total DESC, 13");
    sqlite3_stmt *st;
    int rc = prep(db, req, sql, &st, err, errsz);
    if (rc)
        return rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        pa_table_add_sqlcol(t, st, 1, 0);
        pa_table_add_sqlcol(t, st, 2, 0);
        add_pid_tid(t, st, 3);
        for (int c = 4; c <= 12; c++)
            pa_table_add_sqlcol(t, st, c, 0);
    }
    if (rc != SQLITE_DONE)
        return pa_report_step_error(db, st, req->def->name, err, errsz);
    sqlite3_finalize(st);
    return PA_REP_OK;
}

/* ---- hgtx_kern_trace (2.3.10) ---- */

static const pa_report_col_t cols_kern_trace[] = {
    {"Range Name", "Name of the HGTX range"},
    {"Style", "Range style: StartEnd or PushPop"},
    {"PID", "Process identifier"},
    {"TID", "Thread that launched the kernel (appended it, when mapped through a graph)"},
    {"Device ID", "Device identifier"},
    {"Context ID", "Context identifier"},
    {"Stream ID", "Command queue or immediate list identifier"},
    {"HGTX Range ID", "HGTX range identifier"},
    {"Kernel Exec ID", "Kernel execution identifier"},
    {"Kernel Start (ns)", "Start timestamp of the kernel"},
    {"Kernel Duration (ns)", "Duration of the kernel"},
    {"API Start (ns)", "Start of the launching API call ('-' when mapped through a graph)"},
    {"API Duration (ns)", "Duration of the launching API call ('-' when mapped through a graph)"},
    {"GridXYZ", "Group count"},
    {"BlockXYZ", "Group size"},
    {"Correlation ID", "Correlation identifier of the launching call"},
    {"Graph ID", "Regular command list (graph) identifier"},
    {"Graph Node ID", "Append index in the regular list"},
    {"Kernel Name", "Name of the kernel"},
    {"Mangled Name", "Mangled name of the kernel"},
};

#define TRACE_OP_COLS \
    " o.deviceId, o.contextId, o.queueId, o.rowid, o.start, o.end - o.start, o.apiStart, o.apiEnd - o.apiStart," \
    " o.gridX || ' ' || o.gridY || ' ' || o.gridZ, o.blockX || ' ' || o.blockY || ' ' || o.blockZ, o.corrId," \
    " o.graphId, o.nodeId, ze_kname(s.value, %d), s.value"

static int produce_kern_trace(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err, size_t errsz)
{
    char sql[8192], dev[1024] = "";
    if (pa_report_device_clause(req, dev, sizeof dev, err, errsz) != PA_REP_OK)
        return PA_REP_EDATA;
    int mode = pa_report_name_mode(req);
    int n = snprintf(sql, sizeof sql, "SELECT r.name, r.style, " ROW_GTID_SQL ", x.rangeId, x.how, r.start AS rs,"
                     TRACE_OP_COLS ASSOC_FROM "%s", mode, assoc_src(req), dev);
    if (flag(req, "standalone")) {
        n += snprintf(sql + n, sizeof sql - (size_t)n, " UNION ALL SELECT NULL, NULL, " PA_SQL_GTID("o.tid")
                      ", NULL, 0, NULL," TRACE_OP_COLS, mode);
        n += snprintf(sql + n, sizeof sql - (size_t)n, STANDALONE_WHERE, how_filter(req));
        n += snprintf(sql + n, sizeof sql - (size_t)n, "%s", dev);
    }
    snprintf(sql + n, sizeof sql - (size_t)n, " ORDER BY 11, 10, 6, 4");
    sqlite3_stmt *st;
    int rc = prep(db, req, sql, &st, err, errsz);
    if (rc)
        return rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int via_graph = sqlite3_column_int(st, 4) == 1;
        pa_table_add_sqlcol(t, st, 0, 0);
        if (sqlite3_column_type(st, 1) == SQLITE_NULL)
            pa_table_add_none(t);
        else
            pa_table_add_str(t, sqlite3_column_int(st, 1) ? "StartEnd" : "PushPop", sqlite3_column_int(st, 1) ? 8 : 7);
        add_pid_tid(t, st, 2);
        for (int c = 6; c <= 8; c++)
            pa_table_add_sqlcol(t, st, c, 0);
        pa_table_add_sqlcol(t, st, 3, 0);
        for (int c = 9; c <= 11; c++)
            pa_table_add_sqlcol(t, st, c, 0);
        for (int c = 12; c <= 13; c++)
            if (via_graph)
                pa_table_add_none(t);
            else
                pa_table_add_sqlcol(t, st, c, 0);
        for (int c = 14; c <= 20; c++)
            pa_table_add_sqlcol(t, st, c, 0);
    }
    if (rc != SQLITE_DONE)
        return pa_report_step_error(db, st, req->def->name, err, errsz);
    sqlite3_finalize(st);
    return PA_REP_OK;
}

/* ---- range instances projected onto the device (shared by 2.3.11 and 2.3.12) ---- */

typedef struct proj_inst {
    int64_t id, gtid, start, end, level, parent, nchild;
    int style;
    char *name; size_t name_len;
    char *stack; size_t stack_len;
    int64_t pstart, pend, active, nops;
} proj_inst_t;

typedef struct proj_set { proj_inst_t *v; size_t n, cap; } proj_set_t;

static void proj_set_free(proj_set_t *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i].name);
        free(s->v[i].stack);
    }
    free(s->v);
}

static char *dup_col(sqlite3_stmt *st, int c, size_t *len)
{
    *len = (size_t)sqlite3_column_bytes(st, c);
    const void *p = sqlite3_column_blob(st, c);
    char *d = malloc(*len + 1);
    if (d) {
        if (*len)
            memcpy(d, p, *len);
        d[*len] = '\0';
    }
    return d;
}

/* One pass over (range, op) pairs ordered by range then op start (ranges still open at exit have
 * no end, so no Orig Duration: left out, as from every statistic): projected start/end, the op
 * count and the device active time (union of op intervals, overlap counted once). */
static int proj_collect(sqlite3 *db, const pa_report_req_t *req, proj_set_t *s, char *err, size_t errsz)
{
    char sql[8192], dev[1024] = "";
    if (pa_report_device_clause(req, dev, sizeof dev, err, errsz) != PA_REP_OK)
        return PA_REP_EDATA;
    snprintf(sql, sizeof sql,
        "WITH ch(pid, n) AS (SELECT parentId, count(*) FROM HGTX_RANGES WHERE parentId != 0 GROUP BY parentId),"
        " p AS (SELECT DISTINCT x.rangeId AS rid, x.opId AS oid FROM HGTX_OP_ASSOC x JOIN HGTX_RANGES_NAMED r"
        "  ON r.id = x.rangeId JOIN ZE_OPS o ON o.rowid = x.opId WHERE r.unterminated = 0"
        "  AND (?1 IS NULL OR r.name REGEXP ?1)%s%s)"
        " SELECT r.id, r.name, r.style, r.globalTid, r.start, r.end, r.level, r.parentId, coalesce(ch.n, 0),"
        " o.start, o.end FROM p JOIN HGTX_RANGES_NAMED r ON r.id = p.rid JOIN ZE_OPS o"
        " ON o.rowid = p.oid LEFT JOIN ch ON ch.pid = r.id"
        " ORDER BY r.id, o.start, o.end",
        how_filter(req), dev);
    sqlite3_stmt *st;
    pa_range_stacks_t stacks; /* RangeStack of push/pop ranges (report_stack.c) */
    int rc = pa_range_stacks_open(db, &stacks, req->def->name, err, errsz);
    if (rc)
        return rc;
    if ((rc = prep(db, req, sql, &st, err, errsz)) != 0) {
        pa_range_stacks_close(&stacks);
        return rc;
    }
    proj_inst_t *cur = NULL;
    int64_t cover = 0; /* end of the union so far */
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0), os = sqlite3_column_int64(st, 9);
        int64_t oe = sqlite3_column_int64(st, 10);
        if (oe < os)
            oe = os;
        if (!cur || cur->id != id) {
            if (s->n == s->cap) {
                size_t nc = s->cap ? s->cap * 2 : 64;
                proj_inst_t *nv = realloc(s->v, nc * sizeof *nv);
                if (!nv) {
                    sqlite3_finalize(st);
                    pa_range_stacks_close(&stacks);
                    snprintf(err, errsz, "report '%s': out of memory", req->def->name);
                    return PA_REP_EDATA;
                }
                s->v = nv;
                s->cap = nc;
            }
            cur = &s->v[s->n++];
            memset(cur, 0, sizeof *cur);
            cur->id = id;
            cur->name = dup_col(st, 1, &cur->name_len);
            cur->style = sqlite3_column_int(st, 2);
            cur->gtid = sqlite3_column_int64(st, 3);
            cur->start = sqlite3_column_int64(st, 4);
            cur->end = sqlite3_column_int64(st, 5);
            cur->level = sqlite3_column_int64(st, 6);
            cur->parent = sqlite3_column_int64(st, 7);
            cur->nchild = sqlite3_column_int64(st, 8);
            if (cur->style == 0) { /* start/end ranges have no stack */
                size_t len = 0;
                const char *stk = pa_range_stacks_get(&stacks, id, cur->parent, cur->gtid, &len);
                if (stk && (cur->stack = malloc(len + 1)) != NULL) {
                    memcpy(cur->stack, stk, len);
                    cur->stack[len] = '\0';
                    cur->stack_len = len;
                }
            }
            cur->pstart = os;
            cover = os;
        }
        if (oe > cur->pend)
            cur->pend = oe;
        if (oe > cover) {
            cur->active += oe - (os > cover ? os : cover);
            cover = oe;
        }
        cur->nops++;
    }
    int failed = stacks.failed;
    pa_range_stacks_close(&stacks);
    if (failed && rc == SQLITE_DONE) {
        sqlite3_finalize(st);
        snprintf(err, errsz, "report '%s': reading the range stacks failed: %s", req->def->name, sqlite3_errmsg(db));
        return PA_REP_EDATA;
    }
    if (rc != SQLITE_DONE)
        return pa_report_step_error(db, st, req->def->name, err, errsz);
    sqlite3_finalize(st);
    return PA_REP_OK;
}

/* ---- hgtx_gpu_proj_trace (2.3.12) ---- */

static const pa_report_col_t cols_proj_trace[] = {
    {"Name", "Name of the HGTX range"},
    {"Projected Start (ns)", "Start of the earliest associated device operation"},
    {"Projected Duration (ns)", "Latest end of its device operations minus the projected start"},
    {"PPU Active Time (ns)", "Time any of its device operations ran (overlap counted once)"},
    {"Orig Start (ns)", "Original HGTX range start"},
    {"Orig Duration (ns)", "Original HGTX range duration"},
    {"Style", "Range style: StartEnd or PushPop"},
    {"PID", "Process identifier"},
    {"TID", "Thread identifier (that started the range)"},
    {"NumPPUOps", "Number of associated device operations (kernels, copies, fills)"},
    {"Lvl", "Stack level, starts at 0 ('-' for start/end ranges)"},
    {"NumChild", "Number of child ranges"},
    {"RangeId", "Arbitrary ID for range"},
    {"ParentId", "Range ID of the enclosing range"},
    {"RangeStack", "Range IDs that make up the push/pop stack"},
};

static int inst_by_pstart(const void *x, const void *y)
{
    const proj_inst_t *a = x, *b = y;
    if (a->pstart != b->pstart)
        return a->pstart < b->pstart ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

static int produce_proj_trace(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err, size_t errsz)
{
    proj_set_t s = {0};
    int rc = proj_collect(db, req, &s, err, errsz);
    if (rc) {
        proj_set_free(&s);
        return rc;
    }
    pa_sort(s.v, s.n, sizeof *s.v, inst_by_pstart);
    for (size_t i = 0; i < s.n; i++) {
        const proj_inst_t *p = &s.v[i];
        pa_table_add_str(t, p->name ? p->name : "", p->name ? p->name_len : 0);
        pa_table_add_int(t, p->pstart);
        pa_table_add_int(t, p->pend - p->pstart);
        pa_table_add_int(t, p->active);
        pa_table_add_int(t, p->start);
        pa_table_add_int(t, p->end - p->start);
        pa_table_add_str(t, p->style ? "StartEnd" : "PushPop", p->style ? 8 : 7);
        pa_table_add_int(t, (int64_t)((uint64_t)p->gtid >> 32));
        pa_table_add_int(t, (int64_t)((uint64_t)p->gtid & 0xffffffffu));
        pa_table_add_int(t, p->nops);
        if (p->style) pa_table_add_none(t); else pa_table_add_int(t, p->level);
        pa_table_add_int(t, p->nchild);
        pa_table_add_int(t, p->id);
        if (p->parent) pa_table_add_int(t, p->parent); else pa_table_add_none(t);
        if (p->stack) pa_table_add_str(t, p->stack, p->stack_len); else pa_table_add_none(t);
    }
    proj_set_free(&s);
    return PA_REP_OK;
}

/* ---- hgtx_gpu_proj_sum (2.3.11) ---- */

static const pa_report_col_t cols_proj_sum[] = {
    {"Range", "Name of the HGTX range"},
    {"Style", "Range style: StartEnd or PushPop"},
    {"In-Use (%)", "Proj Active Time / statistics time range (range-mode), at most 100"},
    {"Proj Active Time (ns)", "Union of the projections of all instances (overlap counted once)"},
    {"Total Proj Time (ns)", "Sum of the projected durations of all instances"},
    {"Total Range Time (ns)", "Sum of the original HGTX durations of these instances"},
    {"Range Instances", "Instances with at least one device operation"},
    {"Proj Avg (ns)", "Average projected duration"},
    {"Proj Med (ns)", "Median projected duration"},
    {"Proj Min (ns)", "Minimum projected duration"},
    {"Proj Max (ns)", "Maximum projected duration"},
    {"Proj StdDev (ns)", "Standard deviation of the projected durations"},
    {"Total PPU Ops", "Total number of device operations (kernels, copies, fills)"},
    {"Avg PPU Ops", "Average number of device operations per instance"},
    {"Avg Range Lvl", "Average range stack depth ('-' for start/end ranges)"},
    {"Avg Num Child", "Average number of child ranges"},
};

static int inst_by_name(const void *x, const void *y)
{
    const proj_inst_t *a = x, *b = y;
    size_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
    int c = n ? memcmp(a->name, b->name, n) : 0;
    if (c)
        return c;
    if (a->name_len != b->name_len)
        return a->name_len < b->name_len ? -1 : 1;
    if (a->style != b->style)
        return a->style - b->style;
    return inst_by_pstart(x, y);
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return a < b ? -1 : a > b;
}

/* Denominator of In-Use: first to last device activity (device filter applied), or the session. */
static int64_t proj_time_range(sqlite3 *db, const pa_report_req_t *req)
{
    const pa_opt_val_t *m = pa_req_opt(req, "range-mode");
    char sql[2048] = "SELECT max(o.end) - min(o.start) FROM ZE_OPS o WHERE o.kind IN (1, 2, 3)";
    if (m && m->set && m->s && strcmp(m->s, "full") == 0)
        snprintf(sql, sizeof sql, "SELECT (SELECT CAST(value AS INTEGER) FROM META WHERE key = 'end_mono_ns')"
                 " - (SELECT CAST(value AS INTEGER) FROM META WHERE key = 'start_mono_ns')");
    else if (pa_report_device_filter(req, sql, sizeof sql) != 0)
        return 0;
    sqlite3_stmt *st;
    int64_t v = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    return v > 0 ? v : 0;
}

typedef struct sum_row { size_t first, n; double in_use; int64_t active; } sum_row_t;

static int sum_row_cmp(const void *x, const void *y)
{
    const sum_row_t *a = x, *b = y;
    if (a->in_use != b->in_use)
        return a->in_use > b->in_use ? -1 : 1;
    return a->first < b->first ? -1 : a->first > b->first; /* instances are sorted by name */
}

static int produce_proj_sum(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err, size_t errsz)
{
    proj_set_t s = {0};
    int rc = proj_collect(db, req, &s, err, errsz);
    sum_row_t *rows = rc ? NULL : calloc(s.n ? s.n : 1, sizeof *rows);
    int64_t *durs = rows ? calloc(s.n ? s.n : 1, sizeof *durs) : NULL;
    if (rc || !durs) {
        free(rows);
        proj_set_free(&s);
        if (!rc)
            snprintf(err, errsz, "report '%s': out of memory", req->def->name);
        return rc ? rc : PA_REP_EDATA;
    }
    pa_sort(s.v, s.n, sizeof *s.v, inst_by_name);
    int64_t span = proj_time_range(db, req);
    size_t nrows = 0;
    for (size_t i = 0; i < s.n;) {
        size_t j = i;
        int64_t active = 0, cover = INT64_MIN;
        /* union of instance spans; instances of a name are sorted by projected start */
        for (; j < s.n && inst_by_name(&s.v[i], &s.v[j]) <= 0 && s.v[j].style == s.v[i].style &&
               s.v[j].name_len == s.v[i].name_len && (!s.v[i].name_len || !memcmp(s.v[i].name, s.v[j].name, s.v[i].name_len));
             j++) {
            if (s.v[j].pend > cover) {
                active += s.v[j].pend - (s.v[j].pstart > cover ? s.v[j].pstart : cover);
                cover = s.v[j].pend;
            }
        }
        double u = span ? (double)active * 100.0 / (double)span : 0.0;
        rows[nrows++] = (sum_row_t){i, j - i, u > 100.0 ? 100.0 : u, active};
        i = j;
    }
    pa_sort(rows, nrows, sizeof *rows, sum_row_cmp);
    for (size_t r = 0; r < nrows; r++) {
        const proj_inst_t *f = &s.v[rows[r].first];
        size_t n = rows[r].n;
        int64_t tproj = 0, trange = 0, ops = 0, lvl = 0, nch = 0;
        double mean = 0, m2 = 0;
        for (size_t k = 0; k < n; k++) {
            const proj_inst_t *p = f + k;
            durs[k] = p->pend - p->pstart;
            tproj += durs[k];
            trange += p->end - p->start;
            ops += p->nops;
            lvl += p->level;
            nch += p->nchild;
            double d = (double)durs[k] - mean; /* Welford, like the aggregator */
            mean += d / (double)(k + 1);
            m2 += d * ((double)durs[k] - mean);
        }
        pa_sort(durs, n, sizeof *durs, cmp_i64);
        double med = n % 2 ? (double)durs[n / 2] : ((double)durs[n / 2 - 1] + (double)durs[n / 2]) / 2.0;
        pa_table_add_str(t, f->name ? f->name : "", f->name ? f->name_len : 0);
        pa_table_add_str(t, f->style ? "StartEnd" : "PushPop", f->style ? 8 : 7);
        pa_table_add_double(t, rows[r].in_use, 1);
        pa_table_add_int(t, rows[r].active);
        pa_table_add_int(t, tproj);
        pa_table_add_int(t, trange);
        pa_table_add_int(t, (int64_t)n);
        pa_table_add_double(t, (double)tproj / (double)n, 0);
        pa_table_add_double(t, med, 0);
        pa_table_add_int(t, durs[0]);
        pa_table_add_int(t, durs[n - 1]);
        pa_table_add_double(t, pa_stddev_pop(n, m2), 0);
        pa_table_add_int(t, ops);
        pa_table_add_double(t, (double)ops / (double)n, 1);
        if (f->style) pa_table_add_none(t); else pa_table_add_double(t, (double)lvl / (double)n, 1);
        pa_table_add_double(t, (double)nch / (double)n, 1);
    }
    free(durs);
    free(rows);
    proj_set_free(&s);
    return PA_REP_OK;
}

/* ---- registry ---- */

PA_REPORT_DEF(rep_kern_sum, "hgtx_kern_sum", "HGTX-Associated Kernel Summary", "hgtx_ppu_kern_sum", NULL,
    "Kernels associated with HGTX ranges, per (range name, style, process, launching\n"
    "thread, kernel name). A kernel is associated with every range open on\n"
    "the launching thread when it was launched (push/pop: the whole stack; start/end:\n"
    "ranges started or ended by that thread whose start..end holds the start of the\n"
    "launch call). A kernel of a regular command list is\n"
    "launched by zeCommandQueueExecuteCommandLists; with graph mapping (the default)\n"
    "it is also associated, at every execution, with the ranges open when it was\n"
    "appended (a range open at both counts once). HGTX Inst counts the range\n"
    "instances holding such kernels.\n"
    "TID is the launching thread: a start/end range ended on another thread gets a\n"
    "row per thread that launched kernels in it (spec: rows per thread, range,\n"
    "kernel). Sorted by range name, PID, TID, then total time descending.",
    opts_kern, cols_kern_sum, produce_kern_sum);

PA_REPORT_DEF(rep_kern_trace, "hgtx_kern_trace", "HGTX Kernel Correlation Trace", "hgtx_ppu_kern_trace", NULL,
    "One row per (kernel execution, associated HGTX range), sorted by kernel start,\n"
    "then range start. A kernel of a regular command list has a row per range open\n"
    "around its zeCommandQueueExecuteCommandLists (the execute call's API times) and,\n"
    "with graph mapping (the default), per range open at its append, associated\n"
    "through the graph: '-' for API Start and API Duration. A range open at both\n"
    "gives one row, with the API times. TID: the kernel's launching thread.",
    opts_kern, cols_kern_trace, produce_kern_trace);

PA_REPORT_DEF(rep_proj_sum, "hgtx_gpu_proj_sum", "HGTX to Device Projection Summary", "hgtx_ppu_proj_sum", NULL,
    "HGTX ranges projected onto the device, per range name and style. An instance's\n"
    "projection spans from the start of its earliest associated kernel/copy/fill to\n"
    "the end of its latest; Proj Active Time is the union of the projections of all\n"
    "instances (overlap counted once); In-Use = Proj Active Time / statistics time\n"
    "range (range-mode). Only instances with device work are counted; ranges still\n"
    "open at exit are left out (no end, no duration). Associations\n"
    "as in hgtx_kern_sum (also copies and fills; graph mapping on by default). Sorted by\n"
    "In-Use descending, then range name.",
    opts_proj_sum, cols_proj_sum, produce_proj_sum);

PA_REPORT_DEF(rep_proj_trace, "hgtx_gpu_proj_trace", "HGTX to Device Projection Trace", "hgtx_ppu_proj_trace", NULL,
    "One row per HGTX range instance with device work, sorted by projected start:\n"
    "projected start/duration, device active time (union of its operations),\n"
    "original start/duration and the push/pop stack information. Ranges still open at\n"
    "exit are left out (no end, no duration). Associations as in\n"
    "hgtx_kern_sum (also copies and fills; graph mapping on by default).",
    opts_proj_trace, cols_proj_trace, produce_proj_trace);

const pa_report_def_t *const pa_reports_hgtxdev[] = {
    &rep_kern_sum, &rep_kern_trace, &rep_proj_sum, &rep_proj_trace, NULL,
};
