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
                                  " CASE style WHEN 1 THEN 'StartEnd' ELSE 'PushPop' END,"
                                  /* a name id missing from STRING_IDS (damage) is named, as in the other reports */
                                  " coalesce(name, " PA_SQL_UNKNOWN_NAME("nameId") ")"
                                  " FROM HGTX_RANGES_NAMED WHERE unterminated = 0",
                                  "globalTid", " GROUP BY domainId, nameId, style ORDER BY 1 DESC, 9, style",
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

/* Rows in the report's order, straight from the start index (which holds (start, id)): no
 * sort, and rows= stops the scan. Every push/pop range passes (range= only selects which are
 * listed) so each thread's stack stays current; RangeStack and the children come from
 * report_stack.c. The rows stream out one at a time (the def's .streams): memory is the nesting
 * depth, not the number of ranges. */
static const char pa_pushpop_sql[] =
    "SELECT r.start, r.end, coalesce(r.name, " PA_SQL_UNKNOWN_NAME("r.nameId") "), r.globalTid, r.level, r.id, r.parentId, r.unterminated,"
    " ?1 IS NULL OR r.name REGEXP ?1"
    " FROM HGTX_RANGES_NAMED r WHERE r.style = 0 ORDER BY r.start, r.id LIMIT ?2";

/* One row; 0, or -1 when a lookup or an allocation failed (t->oom or s->failed). */
static int pa_pushpop_row(pa_table_t *t, sqlite3_stmt *st, pa_range_stacks_t *s, const char *stack, size_t slen)
{
    int64_t start = sqlite3_column_int64(st, 0), end = sqlite3_column_int64(st, 1);
    int64_t gtid = sqlite3_column_int64(st, 3), level = sqlite3_column_int64(st, 4);
    int64_t id = sqlite3_column_int64(st, 5), parent = sqlite3_column_int64(st, 6);
    const char *name = sqlite3_column_blob(st, 2);
    size_t nlen = (size_t)sqlite3_column_bytes(st, 2);
    int64_t nchild, dchild;
    if (pa_range_stacks_children(s, id, &nchild, &dchild) < 0)
        return -1;
    /* NameTree: one '-' per level, then the name */
    size_t lv = level > 0 ? (size_t)level : 0;
    char *nametree = malloc(lv + nlen + 1);
    if (!nametree) {
        t->oom = 1;
        return -1;
    }
    pa_table_add_int(t, start);
    if (sqlite3_column_int64(st, 7)) {
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
    pa_table_add_int(t, nchild);
    pa_table_add_int(t, id);
    if (parent)
        pa_table_add_int(t, parent);
    else
        pa_table_add_none(t);
    pa_table_add_str(t, stack, slen);
    memset(nametree, '-', lv);
    if (nlen)
        memcpy(nametree + lv, name, nlen);
    pa_table_add_str(t, nametree, lv + nlen);
    free(nametree);
    return 0;
}

static int pa_produce_pushpop(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t,
                              char *err, size_t errsz)
{
    sqlite3_stmt *st;
    pa_range_stacks_t s;
    int rc = pa_range_stacks_open(db, &s, req->def->name, err, errsz);
    if (rc)
        return rc;
    if ((rc = pa_report_prepare(db, pa_pushpop_sql, &st, req->def->name, err, errsz)) != 0) {
        pa_range_stacks_close(&s);
        return rc;
    }
    const pa_opt_val_t *re = pa_req_opt(req, "range"), *rows = pa_req_opt(req, "rows");
    int64_t want = rows ? rows->i : -1, kept = 0;
    if (re)
        sqlite3_bind_text(st, 1, re->s, -1, SQLITE_STATIC);
    /* rows= cuts the work, not only the output: in SQL without range=, by the rows listed with it */
    sqlite3_bind_int64(st, 2, re ? -1 : want);
    rc = SQLITE_DONE;
    while ((want < 0 || kept < want) && !t->oom && !s.failed && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        size_t slen = 0;
        const char *stack = pa_range_stacks_get(&s, sqlite3_column_int64(st, 5), sqlite3_column_int64(st, 6),
                                                sqlite3_column_int64(st, 3), &slen);
        if (!stack || !sqlite3_column_int(st, 8))
            continue;
        kept++;
        pa_pushpop_row(t, st, &s, stack, slen);
    }
    int failed = s.failed;
    pa_range_stacks_close(&s);
    if (failed && !t->oom) {
        snprintf(err, errsz, "report '%s': reading the range stacks failed: %s", req->def->name, sqlite3_errmsg(db));
        sqlite3_finalize(st);
        return PA_REP_EDATA;
    }
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        return pa_report_step_error(db, st, req->def->name, err, errsz);
    sqlite3_finalize(st);
    if (t->oom) {
        snprintf(err, errsz, "report '%s': out of memory (deep nesting makes RangeStack long: try rows=N or"
                 " range=REGEX)", req->def->name);
        return PA_REP_EDATA;
    }
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
    .streams = 1,
};
