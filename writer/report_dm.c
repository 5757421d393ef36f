/* report_dm.c - ppu_metric_trace: every device metric sample (one row per device, metric and
 * interval), columns and order as the spec's "PPU metric trace" (asys-stats-reports.txt). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report_util.h"

#define C(t, h) {t, h}
static const pa_report_col_t cols_trace[] = {
    C("Device ID", "Device id (Level Zero enumeration order)"),
    C("Start (ns)", "Start of the sample interval (host CLOCK_MONOTONIC ns)"),
    C("Duration (ns)", "Length of the sample interval; a device's intervals tile its stream"),
    C("Name", "Metric name, as the driver's metric group lists it (PROFAGENT_METRICS)"),
    C("Value", "Metric value over the interval, from zetMetricGroupCalculateMetricValues"),
    C("Unit", "Metric result unit, as the driver gives it")};

static const pa_report_opt_t opts_trace[] = {
    PA_REPORT_OPT_DEVICE,
    {"metrics", PA_OPT_REGEX, "<regex_filter>", "Only metrics whose name matches this PCRE2 expression.\n"
     "Default is all metrics.", NULL},
};

/* An integral value prints as an integer (events, bytes, ns), others with one decimal (ratios). */
static void add_value(pa_table_t *t, double v)
{
    if (v == floor(v) && fabs(v) < 9007199254740992.0)
        pa_table_add_int(t, (int64_t)v);
    else
        pa_table_add_double(t, v, 1);
}

static int produce_trace(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err, size_t errsz)
{
    char dev[600] = "", sql[2048];
    if (pa_report_device_clause(req, dev, sizeof dev, err, errsz) != PA_REP_OK)
        return PA_REP_EDATA;
    const pa_opt_val_t *mv = pa_req_opt(req, "metrics");
    snprintf(sql, sizeof sql,
             "SELECT o.deviceId, o.startNs, o.durationNs, n.name, o.value, n.unit FROM METRIC_SAMPLES o"
             " JOIN METRIC_NAMES n ON n.deviceId = o.deviceId AND n.metricId = o.metricId WHERE 1 %s%s"
             " ORDER BY o.startNs, o.deviceId, o.metricId", dev, mv && mv->s ? " AND n.name REGEXP ?1" : "");
    sqlite3_stmt *st;
    if (pa_report_prepare(db, sql, &st, req->def->name, err, errsz) != PA_REP_OK)
        return PA_REP_EDATA;
    if (mv && mv->s)
        sqlite3_bind_text(st, 1, mv->s, -1, SQLITE_TRANSIENT);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        pa_table_add_int(t, sqlite3_column_int64(st, 0));
        pa_table_add_int(t, sqlite3_column_int64(st, 1));
        pa_table_add_int(t, sqlite3_column_int64(st, 2));
        pa_table_add_sqlcol(t, st, 3, 0);
        add_value(t, sqlite3_column_double(st, 4));
        pa_table_add_sqlcol(t, st, 5, 0);
    }
    if (rc != SQLITE_DONE)
        return pa_report_step_error(db, st, req->def->name, err, errsz);
    sqlite3_finalize(st);
    pa_report_limit_rows(req, t);
    return PA_REP_OK;
}

PA_REPORT_DEF(r_dm_trace, "ppu_metric_trace", "PPU Metric Trace", "metric_trace", NULL,
    "Every device metric sample (PROFAGENT_METRICS=<group>, e.g. ComputeBasic): one row per device,\n"
    "metric and sample interval, sorted by start time ascending (then device, then the group's metric\n"
    "order). Start and Duration are host ns; each device's intervals tile its stream without gaps or\n"
    "overlaps. Values are the driver's calculated values (integral values print as integers, others\n"
    "with one decimal; METRIC_SAMPLES keeps them exact). device=<list> and metrics=<PCRE2 regex>\n"
    "filter; a bad regex is a usage error.",
    opts_trace, cols_trace, produce_trace);

const pa_report_def_t *const pa_reports_dm[] = {&r_dm_trace, NULL};
