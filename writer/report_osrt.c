/* report_osrt.c - osrt_sum (spec 2.3.14): OS runtime calls by function, total time descending. */
#include "report_util.h"

static const pa_report_col_t pa_cols_osrt[] = {
    {"Time (%)", "Percentage of 'Total Time' (of all functions listed)"},
    {"Total Time (ns)", "The total time for all executions of this function"},
    {"Num Calls", "Number of calls to this function"},
    {"Avg (ns)", "Average execution time of this function"},
    {"Med (ns)", "Median execution time of this function"},
    {"Min (ns)", "The minimum execution time of this function"},
    {"Max (ns)", "The maximum execution time of this function"},
    {"StdDev (ns)", "The standard deviation of the function's execution time"},
    {"Name", "Name of the function"},
};

static int pa_produce_osrt(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err,
                           size_t errsz)
{
    return pa_report_tid_stat_sum(db, req,
                                  "SELECT " PA_SQL_STATS("o.end - o.start") ", coalesce(s.value, "
                                  PA_SQL_UNKNOWN_NAME("o.nameId") ") AS name FROM OSRT_API o LEFT JOIN STRING_IDS s ON s.id = o.nameId WHERE 1",
                                  "o.globalTid", " GROUP BY o.nameId ORDER BY 1 DESC, name", t, err, errsz);
}

const pa_report_def_t pa_report_osrt_sum = {
    .name = "osrt_sum",
    .title = "OS Runtime Summary",
    .description = "Aggregates the time of OS runtime calls (waits, sleeps, polls, joins, ...)\n"
                   "above the recording threshold (PROFAGENT_OSRT_THRESHOLD_NS) by function name,\n"
                   "sorted by total time, descending. Time (%) is of the total of all functions\n"
                   "listed, not of the application time.",
    .opts = pa_report_opts_rows_pid_tid, .nopts = 3,
    .cols = pa_cols_osrt, .ncols = sizeof pa_cols_osrt / sizeof pa_cols_osrt[0],
    .produce = pa_produce_osrt,
};
