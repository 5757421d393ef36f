/* report_hgtx.c - hgtx_sum (spec 2.3.13) and hgtx_pushpop_trace (spec 2.3.25). */
#include <stdlib.h>
#include <string.h>

#include "report_util.h"

/* ---- hgtx_sum ---- */

static const pa_report_col_t pa_cols_hgtx_sum[] = {
    {"Time (%)", "Percentage of 'Total Time' (of all ranges listed)"},
    {"Total Time (ns)", "Total time used by all instances of this range"},
    {"Instances", "Number of instances of this range"},
    {"Avg (ns)", "Average execution time of this range"},
    {"Med (ns)", "Median execution time of this range"},
    {"Min (ns)", "Smallest execution time of this range"},
    {"Max (ns)", "Largest execution time of this range"},
    {"StdDev (ns)", "Standard deviation of this range's execution time"},
    {"Style", "Range style; StartEnd or PushPop"},
    {"Range", "Name of the range (domain:range when it has a domain)"},
};

static int pa_produce_hgtx_sum(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t,
                               char *err, size_t errsz)
{
    return pa_report_tid_stat_sum(db, req,
                                  "SELECT " PA_SQL_STATS("end - start") ","
                                  " CASE style WHEN 1 THEN 'StartEnd' ELSE 'PushPop' END, name"
                                  " FROM HGTX_RANGES_NAMED WHERE unterminated = 0",
                                  "globalTid", " GROUP BY domainId, nameId, style ORDER BY 1 DESC, name, style",
                                  t, err, errsz);
}

const pa_report_def_t pa_report_hgtx_sum = {
    .name = "hgtx_sum",
    .title = "HGTX Range Summary",
    .description = "Aggregates the execution time of HGTX ranges by domain and name (a range with\n"
                   "a domain is shown as domain:range), sorted by total time, descending.\n"
                   "Time (%) is of the total of all ranges listed, not of the application time.\n"
                   "Ranges still open at exit have no duration: they are left out here (as in the\n"
                   "exit summary, which lists them with their start).",
    .opts = pa_report_opts_rows_pid_tid, .nopts = 3,
    .cols = pa_cols_hgtx_sum, .ncols = sizeof pa_cols_hgtx_sum / sizeof pa_cols_hgtx_sum[0],
    .produce = pa_produce_hgtx_sum,
};

/* ---- hgtx_pushpop_trace ---- */

static const pa_report_opt_t pa_opts_range[] = {
    {"range", PA_OPT_REGEX, "<regex_filter>", "Optional argument. Perl-compatible regular"
     " expression (PCRE2) selecting the\nHGTX ranges to include (partial match on the name).\n"
     "Default is all ranges.", NULL},
};

static const pa_report_col_t pa_cols_pushpop[] = {
    {"Start (ns)", "Range start timestamp"},
    {"End (ns)", "Range end timestamp; '-' for a range still open at exit"},
    {"Duration (ns)", "Range duration; '-' for a range still open at exit"},
    {"DurChild (ns)", "Duration of all child ranges (those ended before exit)"},
    {"DurNonChild (ns)", "Duration of this range minus child ranges; '-' when still open at exit"},
    {"Name", "Name of the HGTX range"},
    {"PID", "Process ID"},
    {"TID", "Thread ID"},
    {"Lvl", "Stack level, starts at 0"},
    {"NumChild", "Number of children ranges"},
    {"RangeId", "Arbitrary ID for range"},
    {"ParentId", "Range ID of the enclosing range"},
    {"RangeStack", "Range IDs that make up the push/pop stack"},
    {"NameTree", "Range name prefixed with level indicator"},
};

/* RangeStack comes from walking parentId links (PA_SQL_PUSHPOP_STACK_CTE); a range whose parent
 * is not in the DB starts its own stack. Children are direct children only (spec 2.3.25). */
static const char pa_pushpop_sql[] =
    PA_SQL_PUSHPOP_STACK_CTE
    " ch(pid, dur, n) AS (SELECT parentId, sum(CASE WHEN unterminated = 0 THEN end - start ELSE 0 END),"
    "  count(*) FROM HGTX_RANGES WHERE style = 0 AND parentId != 0 GROUP BY parentId)"
    " SELECT r.start, r.end, coalesce(ch.dur, 0), coalesce(ch.n, 0), r.name, r.globalTid,"
    " r.level, r.id, r.parentId, coalesce(stk.stack, ':' || r.id), r.unterminated"
    " FROM HGTX_RANGES_NAMED r LEFT JOIN ch ON ch.pid = r.id LEFT JOIN stk ON stk.id = r.id"
    " WHERE r.style = 0 AND (?1 IS NULL OR r.name REGEXP ?1) ORDER BY r.start, r.id";

static void pa_pushpop_row(pa_table_t *t, sqlite3_stmt *st)
{
    int64_t start = sqlite3_column_int64(st, 0), end = sqlite3_column_int64(st, 1);
    int64_t dchild = sqlite3_column_int64(st, 2), gtid = sqlite3_column_int64(st, 5);
    int64_t level = sqlite3_column_int64(st, 6), parent = sqlite3_column_int64(st, 8);
    const char *name = sqlite3_column_blob(st, 4);
    size_t nlen = (size_t)sqlite3_column_bytes(st, 4);
    pa_table_add_int(t, start);
    if (sqlite3_column_int64(st, 10)) {
        /* still open at exit: no end, so no duration (left out of every statistic, as in
         * hgtx_sum and the exit summary) */
        pa_table_add_none(t);
        pa_table_add_none(t);
        pa_table_add_int(t, dchild);
        pa_table_add_none(t);
    } else {
        pa_table_add_int(t, end);
        pa_table_add_int(t, end - start);
        pa_table_add_int(t, dchild);
        pa_table_add_int(t, end - start - dchild);
    }
    pa_table_add_str(t, name, nlen);
    pa_table_add_int(t, (int64_t)((uint64_t)gtid >> 32));
    pa_table_add_int(t, (int64_t)((uint64_t)gtid & 0xffffffffu));
    pa_table_add_int(t, level);
    pa_table_add_int(t, sqlite3_column_int64(st, 3));
    pa_table_add_int(t, sqlite3_column_int64(st, 7));
    if (parent)
        pa_table_add_int(t, parent);
    else
        pa_table_add_none(t);
    pa_table_add_sqlcol(t, st, 9, 0);
    /* NameTree: one '-' per level, then the name */
    size_t lv = level > 0 ? (size_t)level : 0;
    char *tree = malloc(lv + nlen + 1);
    if (!tree) {
        t->oom = 1;
        return;
    }
    memset(tree, '-', lv);
    if (nlen)
        memcpy(tree + lv, name, nlen);
    pa_table_add_str(t, tree, lv + nlen);
    free(tree);
}

static int pa_produce_pushpop(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t,
                              char *err, size_t errsz)
{
    sqlite3_stmt *st;
    int rc = pa_report_prepare(db, pa_pushpop_sql, &st, req->def->name, err, errsz);
    if (rc)
        return rc;
    const pa_opt_val_t *re = pa_req_opt(req, "range");
    if (re)
        sqlite3_bind_text(st, 1, re->s, -1, SQLITE_STATIC);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        pa_pushpop_row(t, st);
    if (rc != SQLITE_DONE)
        return pa_report_step_error(db, st, req->def->name, err, errsz);
    sqlite3_finalize(st);
    return PA_REP_OK;
}

const pa_report_def_t pa_report_hgtx_pushpop_trace = {
    .name = "hgtx_pushpop_trace",
    .title = "HGTX Push/Pop Range Trace",
    .description = "One row per push/pop HGTX range (with or without a domain), sorted by start\n"
                   "time. A range's stack is its thread's push/pop stack when it began; its\n"
                   "children are the ranges directly nested in it (not deeper ones).\n"
                   "A range still open at exit is listed with End, Duration and DurNonChild '-'\n"
                   "(it has no end; hgtx_sum and the exit summary leave it out of the statistics).",
    .opts = pa_opts_range, .nopts = 1,
    .cols = pa_cols_pushpop, .ncols = sizeof pa_cols_pushpop / sizeof pa_cols_pushpop[0],
    .produce = pa_produce_pushpop,
};
