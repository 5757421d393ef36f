/* writer_dm.c - device metric streams (METRIC_DEVICES, METRIC_NAMES, METRIC_SAMPLES): one row per
 * device, metric and sample interval, as the driver's calculator gave the values. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/pa_log.h"
#include "writer_internal.h"

static const char dm_schema_sql[] =
    /* one row per device whose streamer was tried; state 1 streaming, 3 failed (result = the
     * ze_result_t); periodNs = the period the driver chose; droppedReads = reads answered
     * ZE_RESULT_WARNING_DROPPED_DATA (intervals were lost before them) */
    "CREATE TABLE METRIC_DEVICES(deviceId INTEGER PRIMARY KEY, groupName TEXT, state INTEGER,"
    " periodNs INTEGER, result INTEGER, intervals INTEGER DEFAULT 0, droppedReads INTEGER DEFAULT 0);"
    /* the group's metrics in the driver's order, with their result units */
    "CREATE TABLE METRIC_NAMES(deviceId INTEGER, metricId INTEGER, name TEXT, unit TEXT,"
    " PRIMARY KEY(deviceId, metricId));"
    /* one row per device, metric and interval [startNs, startNs + durationNs) (host ns);
     * consecutive intervals of a device tile its stream */
    "CREATE TABLE METRIC_SAMPLES(deviceId INTEGER, startNs INTEGER, durationNs INTEGER, metricId INTEGER,"
    " value REAL);";

static struct {
    pa_bulk_t samples;
    int open;
    char *summary;
    size_t summary_len;
} wd;

static int dm_create_schema(sqlite3 *db)
{
    if (pa_db_exec(db, dm_schema_sql) != 0)
        return -1;
    wd.open = pa_bulk_init(&wd.samples, db, "METRIC_SAMPLES(deviceId,startNs,durationNs,metricId,value)", 5, 200) == 0;
    return wd.open ? 0 : -1;
}

static int step_done(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(st);
    return rc;
}

static int on_device(sqlite3 *db, const pa_record_t *r, const uint8_t *p)
{
    const char *s = (const char *)p, *end = s + r->len;
    const char *group = s && r->len ? s : "";
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO METRIC_DEVICES(deviceId,groupName,state,periodNs,result)"
                           " VALUES(?,?,?,?,?)", -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, (int64_t)r->u.raw[0]);
    sqlite3_bind_text(st, 2, group, (int)strnlen(group, r->len), SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 3, (int64_t)r->u.raw[1]);
    sqlite3_bind_int64(st, 4, (int64_t)r->u.raw[2]);
    sqlite3_bind_int64(st, 5, (int32_t)r->u.raw[3]);
    if (step_done(st) != 0 || !r->len)
        return r->len ? -1 : 0;
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO METRIC_NAMES(deviceId,metricId,name,unit) VALUES(?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    s += strnlen(s, r->len) + 1;
    int rc = 0;
    for (int64_t k = 0; s < end && rc == 0; k++) {
        const char *name = s;
        s += strnlen(s, (size_t)(end - s)) + 1;
        const char *unit = s < end ? s : "";
        if (s < end)
            s += strnlen(s, (size_t)(end - s)) + 1;
        sqlite3_bind_int64(st, 1, (int64_t)r->u.raw[0]);
        sqlite3_bind_int64(st, 2, k);
        sqlite3_bind_text(st, 3, name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 4, unit, -1, SQLITE_TRANSIENT);
        rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc;
}

static int on_samples(sqlite3 *db, const pa_record_t *r, const uint8_t *p)
{
    uint64_t dev = r->u.raw[0], nm = r->u.raw[1], n = r->u.raw[2];
    size_t esz = 16 + 8 * (size_t)nm;
    if (!p || nm == 0 || nm > 1024 || (uint64_t)r->len < n * esz)
        return 0; /* truncated/malformed record: its intervals are not stored */
    for (uint64_t i = 0; i < n; i++) {
        const uint8_t *e = p + i * esz;
        uint64_t start, dur;
        memcpy(&start, e, 8);
        memcpy(&dur, e + 8, 8);
        for (uint64_t k = 0; k < nm; k++) {
            double v;
            memcpy(&v, e + 16 + 8 * k, 8);
            pa_bulk_int(&wd.samples, (int64_t)dev);
            pa_bulk_int(&wd.samples, (int64_t)start);
            pa_bulk_int(&wd.samples, (int64_t)dur);
            pa_bulk_int(&wd.samples, (int64_t)k);
            pa_bulk_double(&wd.samples, v);
        }
    }
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "UPDATE METRIC_DEVICES SET intervals = intervals + ?, droppedReads = max(droppedReads, ?)"
                           " WHERE deviceId = ?", -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, (int64_t)n);
    sqlite3_bind_int64(st, 2, (int64_t)r->u.raw[3]);
    sqlite3_bind_int64(st, 3, (int64_t)dev);
    return step_done(st);
}

static int dm_on_record(sqlite3 *db, const pa_record_t *r, const uint8_t *p)
{
    switch (r->kind) {
    case PA_SP_DM_DEVICE: return on_device(db, r, p);
    case PA_SP_DM_SAMPLES: return on_samples(db, r, p);
    default: return 0;
    }
}

/* The exit-summary section: per device, one line per unit and path (the reports themselves). */
static void render_summary(sqlite3 *db)
{
    free(wd.summary);
    wd.summary = NULL;
    sqlite3_stmt *st = NULL;
    int64_t n = 0;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM METRIC_DEVICES WHERE state = 1", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (!n)
        return;
    FILE *m = open_memstream(&wd.summary, &wd.summary_len);
    if (!m)
        return;
    fprintf(m, "\n== Device utilization (achieved / peak over the metric intervals of %lld device(s)) ==\n",
            (long long)n);
    static const char *const specs[] = {"unit_util_sum", "dma_util_sum"};
    pa_sqlfn_register(db);
    for (int i = 0; i < 2; i++) {
        pa_report_req_t *req = NULL;
        char err[256];
        if (pa_report_parse(specs[i], &req, err, sizeof err) != PA_REP_OK)
            continue;
        if (pa_report_run(db, req, PA_FMT_TABLE, m, err, sizeof err) != PA_REP_OK)
            fprintf(m, "  (%s)\n", err);
        pa_report_req_free(req);
    }
    fclose(m);
}

static void dm_summary(FILE *out, const pa_session_meta_t *meta, const pa_agg_results_t *res)
{
    (void)meta;
    (void)res;
    if (wd.summary)
        fwrite(wd.summary, 1, wd.summary_len, out);
    free(wd.summary);
    wd.summary = NULL;
}

static int dm_finish(sqlite3 *db)
{
    int rc = 0;
    if (wd.open) {
        rc |= pa_bulk_finish(&wd.samples);
        wd.open = 0;
    }
    rc |= pa_db_exec(db, "CREATE INDEX METRIC_SAMPLES_dev ON METRIC_SAMPLES(deviceId, startNs, metricId);");
    render_summary(db);
    return rc ? -1 : 0;
}

const pa_writer_source_t pa_writer_source_dm = {
    .name = "metrics",
    .create_schema = dm_create_schema,
    .on_record = dm_on_record,
    .finish = dm_finish,
    .summary = dm_summary,
};
