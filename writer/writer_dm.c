/* writer_dm.c - device metric streams: METRIC_DEVICES, METRIC_NAMES, METRIC_CHUNKS (one row per
 * device and chunk of consecutive intervals, packed: common/pa_devmetrics.h; a device's intervals
 * tile its stream), METRIC_SYSMAN; the exit summary's utilization section. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "../common/pa_devmetrics.h"
#include "../common/pa_log.h"
#include "writer_dm.h"
#include "writer_internal.h"

static const char dm_schema_sql[] =
    /* one row per device whose streamer was tried; state 1 streaming, 3 failed (result = the
     * ze_result_t); periodNs = the period the driver chose; droppedReads = reads answered
     * ZE_RESULT_WARNING_DROPPED_DATA (intervals were lost before them); the properties the peaks
     * come from (docs/utilization.md; NULL = the device did not say) */
    "CREATE TABLE METRIC_DEVICES(deviceId INTEGER PRIMARY KEY, groupName TEXT, state INTEGER,"
    " periodNs INTEGER, result INTEGER, intervals INTEGER DEFAULT 0, droppedReads INTEGER DEFAULT 0,"
    " xveCount INTEGER, threadsPerXve INTEGER, coreClockMHz INTEGER, memPeakBps INTEGER, pciePeakBps INTEGER);"
    /* the group's metrics in the driver's order, with their result units; metricId = the value's
     * position in each interval of METRIC_CHUNKS.data */
    "CREATE TABLE METRIC_NAMES(deviceId INTEGER, metricId INTEGER, name TEXT, unit TEXT,"
    " PRIMARY KEY(deviceId, metricId));"
    /* sysman readings beside the stream (zes_api.h counters as read; NULL = not given) */
    "CREATE TABLE METRIC_SYSMAN(deviceId INTEGER, hostNs INTEGER, engineTimestampUs INTEGER,"
    " allActiveUs INTEGER, computeActiveUs INTEGER, copyActiveUs INTEGER, memTimestampUs INTEGER,"
    " memReadBytes INTEGER, memWriteBytes INTEGER, pciTimestampUs INTEGER, pciRxBytes INTEGER,"
    " pciTxBytes INTEGER);"
    /* the intervals [startNs, endNs) of one device, `intervals` of them with nmetrics values each,
     * packed in data, one zstd frame (format: common/pa_devmetrics.h, docs/utilization.md
     * "METRIC_CHUNKS"); times
     * in data are relative to startNs, so a clock shift of startNs/endNs shifts them all */
    "CREATE TABLE METRIC_CHUNKS(deviceId INTEGER, startNs INTEGER, endNs INTEGER, intervals INTEGER,"
    " nmetrics INTEGER, data BLOB);";


static struct {
    sqlite3_stmt *ins; /* INSERT into METRIC_CHUNKS, kept across records (see dm_detach) */
    ZSTD_CCtx *cc;     /* each chunk's data is one zstd frame (level 1) */
    uint8_t *z;
    size_t zcap;
    char *ranges;   /* the summary's busiest-ranges lines, rendered at finish */
    size_t ranges_len;
} wd;

/* A chunk's pack as one zstd frame (the pack of an idle stretch shrinks ~20x: the DB and its WAL
 * grow by ~0.1 byte a sample); NULL when out of memory. */
static const uint8_t *dm_compress(const uint8_t *p, size_t n, size_t *out)
{
    size_t bound = ZSTD_compressBound(n);
    if (!wd.cc && !(wd.cc = ZSTD_createCCtx()))
        return NULL;
    if (bound > wd.zcap) {
        uint8_t *nz = realloc(wd.z, bound);
        if (!nz)
            return NULL;
        wd.z = nz;
        wd.zcap = bound;
    }
    size_t r = ZSTD_compressCCtx(wd.cc, wd.z, wd.zcap, p, n, 1);
    if (ZSTD_isError(r))
        return NULL;
    *out = r;
    return wd.z;
}

static int dm_prepare_ins(sqlite3 *db)
{
    return sqlite3_prepare_v3(db, "INSERT INTO METRIC_CHUNKS VALUES(?,?,?,?,?,?)", -1, SQLITE_PREPARE_PERSISTENT,
                              &wd.ins, NULL) == SQLITE_OK ? 0 : -1;
}

static int dm_create_schema(sqlite3 *db)
{
    wd.ins = NULL;
    if (pa_db_exec(db, dm_schema_sql) != 0)
        return -1;
    return dm_prepare_ins(db);
}

/* The connection closes between two batches (the DB is written while the program runs): the
 * statement goes with it and is prepared again on the next one. */
static void dm_detach(sqlite3 *db)
{
    (void)db;
    sqlite3_finalize(wd.ins);
    wd.ins = NULL;
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
    if (sqlite3_prepare_v2(db, "INSERT INTO METRIC_DEVICES(deviceId,groupName,state,periodNs,result) VALUES(?,?,?,?,?)"
                           " ON CONFLICT(deviceId) DO UPDATE SET groupName = excluded.groupName, state = excluded.state,"
                           " periodNs = excluded.periodNs, result = excluded.result", -1, &st, NULL) != SQLITE_OK)
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
    int rc = 0, k = 0;
    for (; s < end && rc == 0; k++) {
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

/* A packed chunk (hwcounters/devmetrics.c flush_out): payload = nmetrics sums, then the pack,
 * stored as it is (the aggregator used the sums). */
static int on_samples(sqlite3 *db, const pa_record_t *r, const uint8_t *p)
{
    uint64_t dev = r->u.raw[0], nm = r->u.raw[1], n = r->u.raw[2];
    if (!p || nm == 0 || nm > 1024 || (uint64_t)r->len < 8 * nm || (r->flags & PA_RF_TRUNCATED))
        return 0; /* truncated/malformed record: its intervals are not stored */
    if (!wd.ins && dm_prepare_ins(db) != 0)
        return -1;
    size_t zl = 0;
    const uint8_t *z = dm_compress(p + 8 * nm, r->len - 8 * nm, &zl);
    if (!z)
        return -1;
    sqlite3_stmt *ins = wd.ins;
    sqlite3_bind_int64(ins, 1, (int64_t)dev);
    sqlite3_bind_int64(ins, 2, (int64_t)r->t0);
    sqlite3_bind_int64(ins, 3, (int64_t)r->t1);
    sqlite3_bind_int64(ins, 4, (int64_t)n);
    sqlite3_bind_int64(ins, 5, (int64_t)nm);
    sqlite3_bind_blob(ins, 6, z, (int)zl, SQLITE_STATIC);
    int rc = sqlite3_step(ins);
    sqlite3_reset(ins);
    sqlite3_clear_bindings(ins);
    if (rc != SQLITE_DONE)
        return -1;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "UPDATE METRIC_DEVICES SET intervals = intervals + ?, droppedReads = max(droppedReads, ?)"
                           " WHERE deviceId = ?", -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, (int64_t)n);
    sqlite3_bind_int64(st, 2, (int64_t)r->u.raw[3]);
    sqlite3_bind_int64(st, 3, (int64_t)dev);
    return step_done(st);
}

static void bind_u64(sqlite3_stmt *st, int i, uint64_t v)
{
    if (v == PA_DM_SYSMAN_NONE)
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_int64(st, i, (int64_t)v);
}

static int on_peaks(sqlite3 *db, const pa_record_t *r, const uint8_t *p)
{
    pa_dm_peaks_t pk;
    if (!p || r->len < sizeof pk)
        return 0;
    memcpy(&pk, p, sizeof pk);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "UPDATE METRIC_DEVICES SET xveCount = nullif(?1, 0), threadsPerXve = nullif(?2, 0),"
                           " coreClockMHz = nullif(?3, 0), memPeakBps = nullif(?4, 0), pciePeakBps = nullif(?5, 0)"
                           " WHERE deviceId = ?6", -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, pk.xve_count);
    sqlite3_bind_int64(st, 2, pk.threads_per_xve);
    sqlite3_bind_int64(st, 3, pk.core_mhz);
    sqlite3_bind_int64(st, 4, (int64_t)pk.mem_peak_bps);
    sqlite3_bind_int64(st, 5, (int64_t)pk.pcie_peak_bps);
    sqlite3_bind_int64(st, 6, (int64_t)r->u.raw[0]);
    return step_done(st);
}

static int on_sysman(sqlite3 *db, const pa_record_t *r, const uint8_t *p)
{
    pa_dm_sysman_t v;
    if (!p || r->len < sizeof v)
        return 0;
    memcpy(&v, p, sizeof v);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "INSERT INTO METRIC_SYSMAN VALUES(?,?,?,?,?,?,?,?,?,?,?,?)", -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, v.device);
    sqlite3_bind_int64(st, 2, (int64_t)v.host_ns);
    const uint64_t col[] = {v.engine_ts_us, v.active_us[0], v.active_us[1], v.active_us[2], v.mem_ts_us,
                            v.mem_read, v.mem_write, v.pci_ts_us, v.pci_rx, v.pci_tx};
    for (int i = 0; i < 10; i++)
        bind_u64(st, 3 + i, col[i]);
    return step_done(st);
}

static int dm_on_record(sqlite3 *db, const pa_record_t *r, const uint8_t *p)
{
    switch (r->kind) {
    case PA_SP_DM_DEVICE: return on_device(db, r, p);
    case PA_SP_DM_SAMPLES: return on_samples(db, r, p);
    case PA_SP_DM_PEAKS: return on_peaks(db, r, p);
    case PA_SP_DM_SYSMAN: return on_sysman(db, r, p);
    default: return 0;
    }
}

static int dm_finish(sqlite3 *db)
{
    int rc = 0;
    sqlite3_finalize(wd.ins);
    wd.ins = NULL;
    ZSTD_freeCCtx(wd.cc);
    wd.cc = NULL;
    free(wd.z);
    wd.z = NULL;
    wd.zcap = 0;
    rc |= pa_db_exec(db, "CREATE INDEX METRIC_CHUNKS_dev ON METRIC_CHUNKS(deviceId, startNs);");
    free(wd.ranges);
    wd.ranges = NULL;
    wd.ranges_len = 0;
    FILE *m = open_memstream(&wd.ranges, &wd.ranges_len);
    if (m) {
        pa_dm_summary_ranges(db, m);
        fclose(m);
    }
    return rc ? -1 : 0;
}

static void dm_summary(FILE *out, const pa_session_meta_t *meta, const pa_agg_results_t *res)
{
    (void)meta;
    if (res && res->ndm)
        pa_dm_summary_units(out, res->dm, res->ndm);
    if (wd.ranges && res && res->ndm)
        fwrite(wd.ranges, 1, wd.ranges_len, out);
    free(wd.ranges);
    wd.ranges = NULL;
}

const pa_writer_source_t pa_writer_source_dm = {
    .name = "metrics",
    .create_schema = dm_create_schema,
    .on_record = dm_on_record,
    .finish = dm_finish,
    .detach = dm_detach,
    .summary = dm_summary,
};
