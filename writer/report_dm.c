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

/* ---- unit_util_sum / dma_util_sum: achieved / peak over the metric intervals ---- */

static const pa_report_col_t cols_unit[] = {
    C("Device ID", "Device id"), C("Unit", "TPU viewer unit (docs/utilization.md maps it to the Intel counter)"),
    C("Counter", "Intel metric(s) summed over the intervals; '-' when the device has no counterpart"),
    C("Achieved", "Instructions executed (sum of the counter over the intervals)"),
    C("Peak", "Instructions possible: rate per cycle x XVE count x GpuCoreClocks of the intervals"),
    C("Count Unit", "Unit of Achieved and Peak"), C("Util (%)", "100 x Achieved / Peak")};
static const pa_report_col_t cols_dma[] = {
    C("Device ID", "Device id"), C("Path", "TPU viewer DMA path (docs/utilization.md)"),
    C("Counter", "Intel / simdev metric summed over the intervals"),
    C("Bytes", "Bytes moved on the path (sum of the counter over the intervals)"),
    C("Peak Bytes", "Bytes possible: peak bandwidth x GpuTime of the intervals; '-' when no peak is known"),
    C("Util (%)", "100 x Bytes / Peak Bytes")};

static const pa_report_opt_t opts_util[] = {
    PA_REPORT_OPT_DEVICE,
    {"kernel", PA_OPT_REGEX, "<regex>", "Only the metric intervals that overlap a kernel whose name matches\n"
     "this PCRE2 expression (each interval counted once).", NULL},
    {"range", PA_OPT_REGEX, "<regex>", "Only the metric intervals that overlap the device work projected\n"
     "from an HGTX range whose name matches (each interval counted once).", NULL},
};

/* One device's sums over the selected intervals. */
typedef struct dm_sums {
    int64_t dev, nint, eus;
    double gputime, clocks, mem_bps;
    struct { char name[64]; double v; int have; } m[64];
    int nm;
} dm_sums_t;

static double sum_of(const dm_sums_t *s, const char *name, int *have)
{
    for (int i = 0; i < s->nm; i++)
        if (strcmp(s->m[i].name, name) == 0) {
            *have = 1;
            return s->m[i].v;
        }
    *have = 0;
    return 0;
}

/* Kernel and metric times are both converted from device ticks, each with its own clock pair, so
 * an edge may be off by a tick or so: "overlaps" allows two device ticks (ZE_DEVICES.timerHz). */
static long long slack_ns(sqlite3 *db)
{
    sqlite3_stmt *st;
    long long ns = 2;
    if (sqlite3_prepare_v2(db, "SELECT min(timerHz) FROM ZE_DEVICES WHERE timerHz > 0", -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) > 0)
            ns = 2000000000ll / sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    return ns;
}

/* The intervals kept: every one, or those overlapping the kernels / ranges' device work asked. */
static int load_sums(sqlite3 *db, const pa_report_req_t *req, dm_sums_t *out, int maxdev, int *ndev, char *err,
                     size_t errsz)
{
    char dev[600] = "", sql[4096], sel[1024] = "";
    if (pa_report_device_clause(req, dev, sizeof dev, err, errsz) != PA_REP_OK)
        return PA_REP_EDATA;
    const pa_opt_val_t *kv = pa_req_opt(req, "kernel"), *rv = pa_req_opt(req, "range");
    int kre = kv && kv->s, rre = rv && rv->s;
    if (kre || rre)
        snprintf(sel, sizeof sel,
                 " AND EXISTS (SELECT 1 FROM ZE_OPS z WHERE z.deviceId = o.deviceId AND z.kind != 4"
                 " AND z.start < o.startNs + o.durationNs + %lld AND z.end + %lld > o.startNs AND (%s%s%s))", slack_ns(db),
                 slack_ns(db),
                 kre ? "(z.kind = 1 AND (SELECT ze_kname(value, 0) FROM STRING_IDS WHERE id = z.nameId) REGEXP ?1)" : "",
                 kre && rre ? " OR " : "",
                 rre ? "z.rowid IN (SELECT a.opId FROM HGTX_OP_ASSOC a JOIN HGTX_RANGES r ON r.id = a.rangeId"
                       " JOIN STRING_IDS rs ON rs.id = r.nameId WHERE rs.value REGEXP ?2)" : "");
    snprintf(sql, sizeof sql,
             "WITH iv AS (SELECT o.deviceId, o.startNs FROM METRIC_SAMPLES o JOIN METRIC_NAMES n"
             " ON n.deviceId = o.deviceId AND n.metricId = o.metricId WHERE n.name = 'GpuTime' %s%s)"
             " SELECT o.deviceId, n.name, sum(o.value), count(*), coalesce(d.cuCount, 0),"
             " coalesce(d.memClockHz * 2.0 * d.memBusWidth / 8, 0)"
             " FROM METRIC_SAMPLES o %s JOIN METRIC_NAMES n"
             " ON n.deviceId = o.deviceId AND n.metricId = o.metricId LEFT JOIN ZE_DEVICES d ON d.deviceId = o.deviceId"
             " GROUP BY o.deviceId, n.metricId ORDER BY o.deviceId, n.metricId", dev, sel,
             /* unrestricted: every interval, no join (the CTE is not indexed) */
             kre || rre ? "JOIN iv USING (deviceId, startNs)" : "");
    sqlite3_stmt *st;
    if (pa_report_prepare_ze(db, req, sql, &st, err, errsz) != PA_REP_OK)
        return PA_REP_EDATA;
    if (kre)
        sqlite3_bind_text(st, 1, kv->s, -1, SQLITE_TRANSIENT);
    if (rre)
        sqlite3_bind_text(st, 2, rv->s, -1, SQLITE_TRANSIENT);
    int rc;
    *ndev = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t d = sqlite3_column_int64(st, 0);
        if (!*ndev || out[*ndev - 1].dev != d) {
            if (*ndev == maxdev)
                continue;
            dm_sums_t *s = &out[(*ndev)++];
            memset(s, 0, sizeof *s);
            s->dev = d;
            s->nint = sqlite3_column_int64(st, 3);
            s->eus = sqlite3_column_int64(st, 4);
            s->mem_bps = sqlite3_column_double(st, 5);
        }
        dm_sums_t *s = &out[*ndev - 1];
        const char *name = (const char *)sqlite3_column_text(st, 1);
        double v = sqlite3_column_double(st, 2);
        if (name && strcmp(name, "GpuTime") == 0)
            s->gputime = v;
        if (name && strcmp(name, "GpuCoreClocks") == 0)
            s->clocks = v;
        if (name && s->nm < 64) {
            snprintf(s->m[s->nm].name, sizeof s->m[s->nm].name, "%s", name);
            s->m[s->nm++].v = v;
        }
    }
    if (rc != SQLITE_DONE)
        return pa_report_step_error(db, st, req->def->name, err, errsz);
    sqlite3_finalize(st);
    return PA_REP_OK;
}

static void add_util(pa_table_t *t, double achieved, double peak)
{
    if (peak > 0)
        pa_table_add_double(t, 100.0 * achieved / peak, 3);
    else
        pa_table_add_none(t);
}

/* TPU viewer units (spec/tpu-utilization-viewer.ja.txt) -> Intel pipes (notes/utilization.md):
 * rate = instructions per cycle per XVE the peak assumes. */
static const struct { const char *unit, *m1, *m2, *label; double rate; } units[] = {
    {"Scalar Unit", "XVE_INST_EXECUTED_CONTROL_ALL", NULL, "XVE_INST_EXECUTED_CONTROL_ALL", 1},
    {"Vector ALU", "XVE_INST_EXECUTED_ALU0_ALL", "XVE_INST_EXECUTED_ALU1_ALL",
     "XVE_INST_EXECUTED_ALU0_ALL+ALU1_ALL", 2},
    {"Vector Load/Store", "XVE_INST_EXECUTED_SEND_ALL", NULL, "XVE_INST_EXECUTED_SEND_ALL", 1},
    {"MXU", "XVE_INST_EXECUTED_XMX_ALL", NULL, "XVE_INST_EXECUTED_XMX_ALL", 1},
    {"XU", NULL, NULL, NULL, 0},
    {"RPU", NULL, NULL, NULL, 0},
};

static int produce_unit(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err, size_t errsz)
{
    static dm_sums_t sums[16];
    int n;
    int rc = load_sums(db, req, sums, 16, &n, err, errsz);
    if (rc != PA_REP_OK)
        return rc;
    for (int i = 0; i < n; i++)
        for (size_t u = 0; u < sizeof units / sizeof units[0]; u++) {
            const dm_sums_t *s = &sums[i];
            int h1 = 0, h2 = 0;
            double a = units[u].m1 ? sum_of(s, units[u].m1, &h1) : 0;
            if (units[u].m2)
                a += sum_of(s, units[u].m2, &h2);
            pa_table_add_int(t, s->dev);
            pa_table_add_str(t, units[u].unit, strlen(units[u].unit));
            if (!h1) { /* no Intel counterpart (or the group lacks it): shown as such */
                pa_table_add_str(t, "-", 1);
                pa_table_add_none(t);
                pa_table_add_none(t);
                const char *na = units[u].m1 ? "n/a (counter not in group)" : "n/a (no Intel counterpart)";
                pa_table_add_str(t, na, strlen(na));
                pa_table_add_none(t);
                continue;
            }
            double peak = units[u].rate * (double)s->eus * s->clocks;
            pa_table_add_str(t, units[u].label, strlen(units[u].label));
            pa_table_add_int(t, (int64_t)a);
            if (peak > 0)
                pa_table_add_int(t, (int64_t)peak);
            else
                pa_table_add_none(t);
            pa_table_add_str(t, "instructions", 12);
            add_util(t, a, peak);
        }
    pa_report_limit_rows(req, t);
    return PA_REP_OK;
}

/* DMA paths: peak bandwidth in B/s; 0 = not known from what the DB holds. */
static const struct { const char *path, *metric; int mem_peak; } paths[] = {
    {"HBM read (HBM->VMem)", "GPU_MEMORY_BYTE_READ", 1},
    {"HBM write (VMem->HBM)", "GPU_MEMORY_BYTE_WRITE", 1},
    {"HIB->HBM (host to device)", "COPY_BYTE_H2D", 0},
    {"HBM->HIB (device to host)", "COPY_BYTE_D2H", 0},
    {"HBM->HBM (device to device)", "COPY_BYTE_D2D", 1},
    {"ICI (peer device)", "COPY_BYTE_PEER", 0},
    {"Fill", "FILL_BYTE", 1},
};

static int produce_dma(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err, size_t errsz)
{
    static dm_sums_t sums[16];
    int n;
    int rc = load_sums(db, req, sums, 16, &n, err, errsz);
    if (rc != PA_REP_OK)
        return rc;
    for (int i = 0; i < n; i++)
        for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++) {
            const dm_sums_t *s = &sums[i];
            int have = 0;
            double b = sum_of(s, paths[p].metric, &have);
            pa_table_add_int(t, s->dev);
            pa_table_add_str(t, paths[p].path, strlen(paths[p].path));
            pa_table_add_str(t, have ? paths[p].metric : "-", have ? strlen(paths[p].metric) : 1);
            if (!have) {
                pa_table_add_none(t);
                pa_table_add_none(t);
                pa_table_add_none(t);
                continue;
            }
            double peak = paths[p].mem_peak ? s->mem_bps * s->gputime / 1e9 : 0;
            pa_table_add_int(t, (int64_t)b);
            if (peak > 0)
                pa_table_add_int(t, (int64_t)peak);
            else
                pa_table_add_none(t);
            add_util(t, b, peak);
        }
    pa_report_limit_rows(req, t);
    return PA_REP_OK;
}

PA_REPORT_DEF(r_dm_unit, "unit_util_sum", "Execution Unit Utilization Summary", NULL, NULL,
    "Per device and TPU-viewer execution unit: instructions achieved over the device metric intervals\n"
    "(PROFAGENT_METRICS=ComputeBasic) against the peak rate per cycle x XVE count (ZE_DEVICES.cuCount)\n"
    "x GpuCoreClocks of those intervals. Mapping (docs/utilization.md): Scalar Unit = CONTROL pipe\n"
    "(1/cycle), Vector ALU = ALU0 + ALU1 (2/cycle), Vector Load/Store = SEND pipe (1/cycle, loads and\n"
    "stores not split), MXU = XMX (1/cycle); XU and RPU have no Intel counterpart and are shown as\n"
    "n/a. kernel=<regex> / range=<regex> keep the intervals overlapping those kernels / the device\n"
    "work projected from those HGTX ranges, each interval once.",
    opts_util, cols_unit, produce_unit);
PA_REPORT_DEF(r_dm_dma, "dma_util_sum", "DMA Path Utilization Summary", NULL, NULL,
    "Per device and DMA path: bytes over the device metric intervals against the peak bytes over\n"
    "those intervals. Device memory paths (GPU_MEMORY_BYTE_READ/WRITE, device-to-device copies, fills)\n"
    "use the memory bus peak memClockHz x 2 (DDR) x memBusWidth / 8 (ZE_DEVICES), which reads and\n"
    "writes share; host<->device and peer paths have no peak in the DB (PCIe and link peaks come from\n"
    "sysman, not collected) and show '-'. Options as unit_util_sum.",
    opts_util, cols_dma, produce_dma);

const pa_report_def_t *const pa_reports_dm[] = {&r_dm_trace, &r_dm_unit, &r_dm_dma, NULL};
