/* report_dm.c - ppu_metric_trace: every device metric sample (one row per device, metric and
 * interval), columns and order as the spec's "PPU metric trace" (asys-stats-reports.txt). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_util.h"
#include "writer_dm.h"
#include "../common/pa_stddev.h"

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

/* The metrics shown: (device, metricId, name, unit) of METRIC_NAMES, filtered by metrics=. */
typedef struct dm_col { int64_t dev; int id; char *name, *unit; } dm_col_t;
typedef struct dm_at { uint64_t start; int64_t dev; uint32_t s; uint32_t i; } dm_at_t;

static int cmp_at(const void *a, const void *b)
{
    const dm_at_t *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

static int load_cols(sqlite3 *db, const pa_report_req_t *req, const char *dev, dm_col_t **out, size_t *n, char *err,
                     size_t errsz)
{
    const pa_opt_val_t *mv = pa_req_opt(req, "metrics");
    char sql[1024];
    snprintf(sql, sizeof sql, "SELECT o.deviceId, o.metricId, o.name, o.unit FROM METRIC_NAMES o WHERE 1 %s%s"
             " ORDER BY o.deviceId, o.metricId", dev, mv && mv->s ? " AND o.name REGEXP ?1" : "");
    sqlite3_stmt *st;
    if (pa_report_prepare(db, sql, &st, req->def->name, err, errsz) != PA_REP_OK)
        return PA_REP_EDATA;
    if (mv && mv->s)
        sqlite3_bind_text(st, 1, mv->s, -1, SQLITE_TRANSIENT);
    size_t cap = 0;
    int rc;
    *out = NULL;
    *n = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            dm_col_t *nc = realloc(*out, (cap = cap ? cap * 2 : 64) * sizeof *nc);
            if (!nc)
                break;
            *out = nc;
        }
        const char *nm = (const char *)sqlite3_column_text(st, 2), *un = (const char *)sqlite3_column_text(st, 3);
        dm_col_t *c = &(*out)[(*n)++];
        c->dev = sqlite3_column_int64(st, 0);
        c->id = sqlite3_column_int(st, 1);
        c->name = strdup(nm ? nm : "");
        c->unit = strdup(un ? un : "");
    }
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        return pa_report_step_error(db, st, req->def->name, err, errsz);
    sqlite3_finalize(st);
    return PA_REP_OK;
}

static void free_cols(dm_col_t *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(c[i].name);
        free(c[i].unit);
    }
    free(c);
}

static int produce_trace(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err, size_t errsz)
{
    char dev[600] = "";
    if (pa_report_device_clause(req, dev, sizeof dev, err, errsz) != PA_REP_OK)
        return PA_REP_EDATA;
    dm_col_t *cols = NULL;
    size_t ncols = 0, nser = 0, nat = 0;
    int rc = load_cols(db, req, dev, &cols, &ncols, err, errsz);
    if (rc != PA_REP_OK)
        return rc;
    pa_dm_series_t *ser = NULL;
    if (pa_dm_series_load(db, dev, &ser, &nser, NULL) != 0) {
        free_cols(cols, ncols);
        snprintf(err, errsz, "report '%s': the database has no device metric intervals (METRIC_CHUNKS;"
                 " PROFAGENT_METRICS)", req->def->name);
        return PA_REP_EDATA;
    }
    for (size_t i = 0; i < nser; i++)
        nat += ser[i].n;
    dm_at_t *at = malloc((nat ? nat : 1) * sizeof *at);
    if (!at) {
        free_cols(cols, ncols);
        pa_dm_series_free(ser, nser);
        snprintf(err, errsz, "report '%s': out of memory", req->def->name);
        return PA_REP_EDATA;
    }
    nat = 0;
    for (size_t s = 0; s < nser; s++)
        for (size_t i = 0; i < ser[s].n; i++)
            at[nat++] = (dm_at_t){ser[s].start[i], ser[s].dev, (uint32_t)s, (uint32_t)i};
    qsort(at, nat, sizeof *at, cmp_at); /* start, then device (each series is sorted) */
    for (size_t a = 0; a < nat; a++) {
        const pa_dm_series_t *s = &ser[at[a].s];
        size_t c = 0;
        while (c < ncols && cols[c].dev < s->dev) /* cols are by device, then metricId */
            c++;
        for (; c < ncols && cols[c].dev == s->dev; c++) {
            if (cols[c].id < 0 || (uint32_t)cols[c].id >= s->nmetrics)
                continue;
            pa_table_add_int(t, s->dev);
            pa_table_add_int(t, (int64_t)s->start[at[a].i]);
            pa_table_add_int(t, (int64_t)s->dur[at[a].i]);
            pa_table_add_str(t, cols[c].name, strlen(cols[c].name));
            add_value(t, s->v[(size_t)at[a].i * s->nmetrics + (size_t)cols[c].id]);
            pa_table_add_str(t, cols[c].unit, strlen(cols[c].unit));
        }
    }
    free(at);
    free_cols(cols, ncols);
    pa_dm_series_free(ser, nser);
    pa_report_limit_rows(req, t);
    return PA_REP_OK;
}

PA_REPORT_DEF(r_dm_trace, "ppu_metric_trace", "PPU Metric Trace", "metric_trace", NULL,
    "Every device metric sample (PROFAGENT_METRICS=<group>, e.g. ComputeBasic): one row per device,\n"
    "metric and sample interval, sorted by start time ascending (then device, then the group's metric\n"
    "order). Start and Duration are host ns; each device's intervals tile its stream without gaps or\n"
    "overlaps. Values are the driver's calculated values (integral values print as integers, others\n"
    "with one decimal; METRIC_CHUNKS keeps them exact). device=<list> and metrics=<PCRE2 regex>\n"
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

/* One device's sums over the selected intervals (metric k = METRIC_NAMES.metricId k). */
#define DM_MAXM 1024 /* the reader's bound on a group's metrics */
typedef struct dm_sums {
    int64_t dev, nint;
    pa_dm_peaks_t pk;
    uint32_t nm;
    char names[DM_MAXM][64];
    const char *np[DM_MAXM];
    double v[DM_MAXM];
} dm_sums_t;

/* Devices streaming, their metric names and the properties of their peaks (METRIC_DEVICES; a DB
 * without them falls back on ZE_DEVICES' XVE count and memory bus). */
static int load_devices(sqlite3 *db, const char *dev, dm_sums_t *out, int maxdev, int *ndev)
{
    char sql[1024];
    snprintf(sql, sizeof sql, "SELECT o.deviceId, coalesce(o.xveCount, z.cuCount, 0), coalesce(o.coreClockMHz, 0),"
             " coalesce(o.memPeakBps, z.memClockHz * 2.0 * z.memBusWidth / 8, 0), coalesce(o.pciePeakBps, 0)"
             " FROM METRIC_DEVICES o LEFT JOIN ZE_DEVICES z ON z.deviceId = o.deviceId WHERE o.state = 1 %s"
             " ORDER BY o.deviceId", dev);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) { /* no ZE_DEVICES (ze not traced) */
        snprintf(sql, sizeof sql, "SELECT o.deviceId, coalesce(o.xveCount, 0), coalesce(o.coreClockMHz, 0),"
                 " coalesce(o.memPeakBps, 0), coalesce(o.pciePeakBps, 0) FROM METRIC_DEVICES o WHERE o.state = 1 %s"
                 " ORDER BY o.deviceId", dev);
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
            return -1;
    }
    *ndev = 0;
    while (sqlite3_step(st) == SQLITE_ROW && *ndev < maxdev) {
        dm_sums_t *s = &out[(*ndev)++];
        memset(s, 0, sizeof *s);
        s->dev = sqlite3_column_int64(st, 0);
        s->pk.xve_count = (uint32_t)sqlite3_column_int64(st, 1);
        s->pk.core_mhz = (uint32_t)sqlite3_column_int64(st, 2);
        s->pk.mem_peak_bps = (uint64_t)sqlite3_column_double(st, 3);
        s->pk.pcie_peak_bps = (uint64_t)sqlite3_column_int64(st, 4);
    }
    sqlite3_finalize(st);
    if (sqlite3_prepare_v2(db, "SELECT metricId, name FROM METRIC_NAMES WHERE deviceId = ? ORDER BY metricId", -1, &st,
                           NULL) != SQLITE_OK)
        return -1;
    for (int i = 0; i < *ndev; i++) {
        sqlite3_bind_int64(st, 1, out[i].dev);
        while (sqlite3_step(st) == SQLITE_ROW) {
            int k = sqlite3_column_int(st, 0);
            const char *n = (const char *)sqlite3_column_text(st, 1);
            if (k < 0 || k >= DM_MAXM)
                continue;
            snprintf(out[i].names[k], sizeof out[i].names[k], "%s", n ? n : "");
            if ((uint32_t)k + 1 > out[i].nm)
                out[i].nm = (uint32_t)k + 1;
        }
        for (uint32_t k = 0; k < out[i].nm; k++)
            out[i].np[k] = out[i].names[k];
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return 0;
}

static void add_interval(void *arg, const pa_dm_series_t *ser, size_t i)
{
    dm_sums_t *s = arg;
    s->nint++;
    const double *v = ser->v + i * ser->nmetrics;
    for (uint32_t k = 0; k < ser->nmetrics && k < s->nm; k++)
        s->v[k] += v[k];
}

/* The intervals kept: every one, or those overlapping the kernels / ranges' device work asked
 * (each interval once, pa_dm_series_mark); sums of every metric per device. */
static int load_sums(sqlite3 *db, const pa_report_req_t *req, dm_sums_t *out, int maxdev, int *ndev, char *err,
                     size_t errsz)
{
    char dev[600] = "", sql[4096];
    if (pa_report_device_clause(req, dev, sizeof dev, err, errsz) != PA_REP_OK)
        return PA_REP_EDATA;
    const pa_opt_val_t *kv = pa_req_opt(req, "kernel"), *rv = pa_req_opt(req, "range");
    int kre = kv && kv->s, rre = rv && rv->s, rc = PA_REP_OK;
    pa_dm_series_t *ser = NULL;
    size_t nser = 0;
    if (load_devices(db, dev, out, maxdev, ndev) != 0 || (!kre && !rre && pa_dm_series_load(db, dev, &ser, &nser, NULL) != 0)) {
        snprintf(err, errsz, "report '%s': the database has no device metric tables (PROFAGENT_METRICS)",
                 req->def->name);
        return PA_REP_EDATA;
    }
    if (!kre && !rre) {
        for (int d = 0; d < *ndev; d++) {
            pa_dm_series_t *se = pa_dm_series_find(ser, nser, out[d].dev);
            for (size_t i = 0; se && i < se->n; i++)
                add_interval(&out[d], se, i);
        }
        pa_dm_series_free(ser, nser);
        return PA_REP_OK;
    }
    /* the device work of the kernels / ranges asked, then only the chunks it overlaps */
    long long sl = pa_dm_slack_ns(db);
    snprintf(sql, sizeof sql,
             "SELECT o.deviceId, o.start, o.end FROM ZE_OPS o WHERE o.kind != 4 %s AND (%s%s%s)", dev,
             kre ? "(o.kind = 1 AND (SELECT ze_kname(value, 0) FROM STRING_IDS WHERE id = o.nameId) REGEXP ?1)" : "",
             kre && rre ? " OR " : "",
             rre ? "o.rowid IN (SELECT a.opId FROM HGTX_OP_ASSOC a JOIN HGTX_RANGES r ON r.id = a.rangeId"
                   " JOIN STRING_IDS rs ON rs.id = r.nameId WHERE rs.value REGEXP ?2)" : "");
    sqlite3_stmt *st;
    if (pa_report_prepare_ze(db, req, sql, &st, err, errsz) != PA_REP_OK)
        return PA_REP_EDATA;
    if (kre)
        sqlite3_bind_text(st, 1, kv->s, -1, SQLITE_TRANSIENT);
    if (rre)
        sqlite3_bind_text(st, 2, rv->s, -1, SQLITE_TRANSIENT);
    pa_dm_window_t *w = NULL;
    size_t nw = 0, cap = 0;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (nw == cap) {
            pa_dm_window_t *nwp = realloc(w, (cap = cap ? cap * 2 : 256) * sizeof *w);
            if (!nwp)
                break;
            w = nwp;
        }
        w[nw++] = (pa_dm_window_t){sqlite3_column_int64(st, 0), (uint64_t)sqlite3_column_int64(st, 1),
                                   (uint64_t)sqlite3_column_int64(st, 2)};
    }
    if (step != SQLITE_DONE && step != SQLITE_ROW) {
        free(w);
        return pa_report_step_error(db, st, req->def->name, err, errsz);
    }
    sqlite3_finalize(st);
    /* the windows come back sorted and merged (ops that overlap one another): an interval overlaps
     * a merged window iff it overlaps one of its ops, so marking by windows counts the same set */
    if (pa_dm_series_load_windows(db, dev, w, &nw, sl, &ser, &nser, NULL) != 0) {
        free(w);
        snprintf(err, errsz, "report '%s': the database has no device metric tables (PROFAGENT_METRICS)",
                 req->def->name);
        return PA_REP_EDATA;
    }
    for (size_t k = 0; k < nw; k++) {
        pa_dm_series_t *se = pa_dm_series_find(ser, nser, w[k].dev);
        dm_sums_t *s = NULL;
        for (int i = 0; i < *ndev && !s; i++)
            if (out[i].dev == w[k].dev)
                s = &out[i];
        if (se && s)
            pa_dm_series_mark(se, w[k].start, w[k].end, sl, 1, add_interval, s);
    }
    free(w);
    pa_dm_series_free(ser, nser);
    return rc;
}

static void add_util(pa_table_t *t, double achieved, double peak)
{
    if (peak > 0)
        pa_table_add_double(t, 100.0 * achieved / peak, 3);
    else
        pa_table_add_none(t);
}

static double sum_of(const dm_sums_t *s, const char *name, int *have)
{
    return pa_dm_sum(s->np, s->v, s->nm, name, have);
}

/* Peak (an integer as the reports print it), or none when the device's peak is not known. */
static void add_peak(pa_table_t *t, double peak)
{
    if (peak > 0)
        pa_table_add_int(t, pa_stat_trunc(peak));
    else
        pa_table_add_none(t);
}

/* One unit_util_sum row: device s, TPU-viewer execution unit u. */
static void unit_row(pa_table_t *t, const dm_sums_t *s, size_t u)
{
    const pa_dm_unit_t *un = &pa_dm_units[u];
    int h = 0, h1 = 0, h2 = 0;
    double a = un->m1 ? sum_of(s, un->m1, &h1) : 0;
    if (un->m2)
        a += sum_of(s, un->m2, &h2);
    pa_table_add_int(t, s->dev);
    pa_table_add_str(t, un->unit, strlen(un->unit));
    if (!h1) { /* no Intel counterpart (or the group lacks it): shown as such */
        pa_table_add_str(t, "-", 1);
        pa_table_add_none(t);
        pa_table_add_none(t);
        const char *na = un->m1 ? "n/a (counter not in group)" : "n/a (no Intel counterpart)";
        pa_table_add_str(t, na, strlen(na));
        pa_table_add_none(t);
        return;
    }
    double peak = un->rate * (double)s->pk.xve_count * sum_of(s, "GpuCoreClocks", &h);
    pa_table_add_str(t, un->label, strlen(un->label));
    pa_table_add_int(t, pa_stat_trunc(a));
    add_peak(t, peak);
    pa_table_add_str(t, "instructions", 12);
    add_util(t, a, peak);
}

/* One dma_util_sum row: device s, transfer path p. */
static void dma_row(pa_table_t *t, const dm_sums_t *s, size_t p)
{
    const pa_dm_path_t *pa = &pa_dm_paths[p];
    int h = 0, have = 0;
    double b = sum_of(s, pa->metric, &have);
    pa_table_add_int(t, s->dev);
    pa_table_add_str(t, pa->path, strlen(pa->path));
    pa_table_add_str(t, have ? pa->metric : "-", have ? strlen(pa->metric) : 1);
    if (!have) {
        pa_table_add_none(t);
        pa_table_add_none(t);
        pa_table_add_none(t);
        return;
    }
    double peak = pa_dm_path_bps(pa, &s->pk) * sum_of(s, "GpuTime", &h) / 1e9;
    pa_table_add_int(t, pa_stat_trunc(b));
    add_peak(t, peak);
    add_util(t, b, peak);
}

/* The sums over the selected intervals of every device, then one row per device and item. */
static int produce_per_device(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err, size_t errsz,
                              size_t nitems, void (*row)(pa_table_t *, const dm_sums_t *, size_t))
{
    static dm_sums_t sums[16];
    int n;
    int rc = load_sums(db, req, sums, 16, &n, err, errsz);
    if (rc != PA_REP_OK)
        return rc;
    for (int i = 0; i < n; i++)
        for (size_t k = 0; k < nitems; k++)
            row(t, &sums[i], k);
    pa_report_limit_rows(req, t);
    return PA_REP_OK;
}

static int produce_unit(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err, size_t errsz)
{
    return produce_per_device(db, req, t, err, errsz, pa_dm_nunits, unit_row);
}

static int produce_dma(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err, size_t errsz)
{
    return produce_per_device(db, req, t, err, errsz, pa_dm_npaths, dma_row);
}

PA_REPORT_DEF(r_dm_unit, "unit_util_sum", "Execution Unit Utilization Summary", NULL, NULL,
    "Per device and TPU-viewer execution unit: instructions achieved over the device metric intervals\n"
    "(PROFAGENT_METRICS=ComputeBasic) against the peak rate per cycle x XVE count (METRIC_DEVICES.xveCount)\n"
    "x GpuCoreClocks of those intervals. Mapping (docs/utilization.md): Scalar Unit = CONTROL pipe\n"
    "(1/cycle), Vector ALU = ALU0 + ALU1 (2/cycle), Vector Load/Store = SEND pipe (1/cycle, loads and\n"
    "stores not split), MXU = XMX (1/cycle); XU and RPU have no Intel counterpart and are shown as\n"
    "n/a. kernel=<regex> / range=<regex> keep the intervals overlapping those kernels / the device\n"
    "work projected from those HGTX ranges, each interval once.",
    opts_util, cols_unit, produce_unit);
PA_REPORT_DEF(r_dm_dma, "dma_util_sum", "DMA Path Utilization Summary", NULL, NULL,
    "Per device and DMA path: bytes over the device metric intervals against the peak bytes over\n"
    "those intervals. Device memory paths (GPU_MEMORY_BYTE_READ/WRITE, device-to-device copies, fills)\n"
    "use the memory bus peak (METRIC_DEVICES.memPeakBps: sysman maxBandwidth, else memory clock x 2\n"
    "x bus width / 8), which reads and writes share; host<->device paths the PCIe peak per direction\n"
    "(METRIC_DEVICES.pciePeakBps: sysman zesDevicePciGetProperties maxSpeed.maxBandwidth); the peer\n"
    "path has no peak in Level Zero and shows '-'. Options as unit_util_sum.",
    opts_util, cols_dma, produce_dma);

const pa_report_def_t *const pa_reports_dm[] = {&r_dm_trace, &r_dm_unit, &r_dm_dma, NULL};
