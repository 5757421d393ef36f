/* report_hc.c - hgtx_counter_sum: host counter deltas of HGTX ranges by range name (and IPC). */
#include <stdio.h>
#include <string.h>

#include "report_util.h"

static const pa_report_col_t pa_cols_hc_sum[] = {
    {"Range", "Name of the range (domain:range when it has a domain)"},
    {"Style", "Range style; StartEnd or PushPop"},
    {"Instances", "Instances of this range with counter values (ended on the thread that started them)"},
    {"Counter", "Host counter (as named in PROFAGENT_HOST_COUNTERS, or the software event used in place of\n"
                "unavailable hardware events); IPC = instructions / cycles when both were counted"},
    {"Total", "Sum of the counter over the instances (task-clock and cpu-clock in ns); for IPC the\n"
              "instructions total over the cycles total"},
    {"Avg", "Average per instance (for IPC: average of the instances' IPC)"},
    {"Min", "Smallest value of one instance"},
    {"Max", "Largest value of one instance"},
};

/* 1 when the DB has the host counter tables (older DBs and sessions without them have none). */
static int has_tables(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    int ok = sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE name = 'HOST_COUNTER_RANGES'", -1, &st,
                                NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return ok;
}

static int pa_produce_hc_sum(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err, size_t errsz)
{
    if (!has_tables(db))
        return PA_REP_OK;
    char filt[1024];
    if (pa_sql_tid_filter(req, "h.globalTid", filt, sizeof filt) != 0) {
        snprintf(err, errsz, "report 'hgtx_counter_sum': too many process/thread ids");
        return PA_REP_EDATA;
    }
    char sql[4096];
    /* counters (ord = column), then IPC (ord 1000) from the cycles and instructions columns */
    snprintf(sql, sizeof sql,
             "WITH R AS (SELECT h.id, h.name, h.style, h.domainId, h.nameId FROM HGTX_RANGES_NAMED h"
             "  WHERE h.unterminated = 0%s),"
             " CY AS (SELECT eventIdx FROM HOST_COUNTERS WHERE eventIdx IS NOT NULL AND type = 0 AND config = 0 LIMIT 1),"
             " INS AS (SELECT eventIdx FROM HOST_COUNTERS WHERE eventIdx IS NOT NULL AND type = 0 AND config = 1 LIMIT 1)"
             " SELECT name, CASE style WHEN 1 THEN 'StartEnd' ELSE 'PushPop' END, n, counter, total, av, mn, mx FROM ("
             " SELECT R.name, R.style, R.domainId, R.nameId, count(*) AS n, e.name AS counter, sum(c.value) AS total,"
             "  avg(c.value) AS av, min(c.value) AS mn, max(c.value) AS mx, c.eventIdx AS ord"
             "  FROM HOST_COUNTER_RANGES c JOIN R ON R.id = c.rangeId JOIN HOST_COUNTERS e ON e.eventIdx = c.eventIdx"
             "  GROUP BY R.domainId, R.nameId, R.style, c.eventIdx"
             " UNION ALL"
             " SELECT R.name, R.style, R.domainId, R.nameId, count(*), 'IPC', sum(i.value) * 1.0 / sum(y.value),"
             "  avg(i.value * 1.0 / y.value), min(i.value * 1.0 / y.value), max(i.value * 1.0 / y.value), 1000"
             "  FROM R JOIN HOST_COUNTER_RANGES y ON y.rangeId = R.id AND y.eventIdx = (SELECT eventIdx FROM CY)"
             "  JOIN HOST_COUNTER_RANGES i ON i.rangeId = R.id AND i.eventIdx = (SELECT eventIdx FROM INS)"
             "  WHERE y.value > 0 GROUP BY R.domainId, R.nameId, R.style)"
             " ORDER BY name, style, ord",
             filt);
    sqlite3_stmt *st = NULL;
    int rc = pa_report_prepare(db, sql, &st, "hgtx_counter_sum", err, errsz);
    if (rc != PA_REP_OK)
        return rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int ipc = sqlite3_column_type(st, 4) == SQLITE_FLOAT;
        pa_table_add_sqlcol(t, st, 0, 0);
        pa_table_add_sqlcol(t, st, 1, 0);
        pa_table_add_sqlcol(t, st, 2, 0);
        pa_table_add_sqlcol(t, st, 3, 0);
        pa_table_add_sqlcol(t, st, 4, 2);
        pa_table_add_double(t, sqlite3_column_double(st, 5), ipc ? 2 : 1);
        pa_table_add_sqlcol(t, st, 6, 2);
        pa_table_add_sqlcol(t, st, 7, 2);
    }
    if (rc != SQLITE_DONE)
        return pa_report_step_error(db, st, "hgtx_counter_sum", err, errsz);
    sqlite3_finalize(st);
    pa_report_limit_rows(req, t);
    return PA_REP_OK;
}

const pa_report_def_t pa_report_hgtx_counter_sum = {
    .name = "hgtx_counter_sum",
    .title = "HGTX Range Host Counter Summary",
    .description = "Host counter deltas (PROFAGENT_HOST_COUNTERS, read with perf_event through libpfm4)\n"
                   "of HGTX ranges, by range name and counter: instances, total, average, min and\n"
                   "max per instance; an IPC row (instructions / cycles) when both were counted.\n"
                   "A delta is the counter's change between the range's start and end on the thread\n"
                   "that recorded them, scaled by time enabled / time running when the kernel\n"
                   "multiplexed the counters (raw values: HOST_COUNTER_RANGES.rawValue). Ranges ended\n"
                   "on another thread and ranges still open at exit have no delta. On a machine without\n"
                   "a CPU PMU the software events task-clock, context-switches and page-faults are\n"
                   "counted in place of the hardware ones (HOST_COUNTERS says what was asked, counted,\n"
                   "and why not). Sorted by range name, then counter order.",
    .opts = pa_report_opts_rows_pid_tid, .nopts = 3,
    .cols = pa_cols_hc_sum, .ncols = sizeof pa_cols_hc_sum / sizeof pa_cols_hc_sum[0],
    .produce = pa_produce_hc_sum,
};

const pa_report_def_t *const pa_reports_hostctr[] = {&pa_report_hgtx_counter_sum, NULL};
