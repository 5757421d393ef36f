/* report_osrt.c - osrt_sum (spec 2.3.14): OS runtime calls by function, total time descending. */
#include <string.h>

#include "report_util.h"

static const pa_report_opt_t pa_opts_osrt[] = {
    {"rows", PA_OPT_INT, "<limit>", "Optional argument. Limits the number of rows in the output.\n"
     "Default is no limit.", NULL},
    {"process", PA_OPT_IDLIST, "<pid_list>", "Optional argument. PIDs to include, separated by"
     " '/'.\nDefault is all processes.", NULL},
    {"thread", PA_OPT_IDLIST, "<tid_list>", "Optional argument. TIDs to include, separated by"
     " '/'.\nDefault is all threads.", NULL},
};

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
    char sql[2048] = "SELECT sum(o.end - o.start) AS total, count(*),"
                     " sum(o.end - o.start) * 1.0 / count(*), median(o.end - o.start),"
                     " min(o.end - o.start), max(o.end - o.start), stddev(o.end - o.start),"
                     " s.value AS name FROM OSRT_API o LEFT JOIN STRING_IDS s ON s.id = o.nameId"
                     " WHERE 1";
    if (pa_sql_tid_filter(req, "o.globalTid", sql, sizeof sql - 200) != 0) {
        snprintf(err, errsz, "report '%s': filter list too long", req->def->name);
        return PA_REP_EDATA;
    }
    strcat(sql, " GROUP BY o.nameId ORDER BY total DESC, name");
    sqlite3_stmt *st;
    int rc = pa_report_prepare(db, sql, &st, req->def->name, err, errsz);
    return rc ? rc : pa_report_stat_rows(db, st, req, t, err, errsz);
}

const pa_report_def_t pa_report_osrt_sum = {
    .name = "osrt_sum",
    .title = "OS Runtime Summary",
    .description = "Aggregates the time of OS runtime calls (waits, sleeps, polls, joins, ...)\n"
                   "above the recording threshold (PROFAGENT_OSRT_THRESHOLD_NS) by function name,\n"
                   "sorted by total time, descending. Time (%) is of the total of all functions\n"
                   "listed, not of the application time.",
    .opts = pa_opts_osrt, .nopts = 3,
    .cols = pa_cols_osrt, .ncols = sizeof pa_cols_osrt / sizeof pa_cols_osrt[0],
    .produce = pa_produce_osrt,
};
