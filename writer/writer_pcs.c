/* writer_pcs.c - PC (EU-stall) sampling tables (PCS_DEVICES, PCS_REASONS, PCS_KERNELS, PCS_INSTR,
 * PCS_SAMPLES) and the exit-summary section, printed by the report code from the DB. */
#include <stdlib.h>
#include <string.h>

#include "../common/pa_log.h"
#include "../common/pa_pcs.h"
#include "writer_internal.h"

static const char pcs_schema_sql[] =
    /* one row per device whose streamer was tried; state: 1 sampling, 2 unsupported, 3 failed
     * (result = the ze_result_t); samples = all reported, unmapped = in no known kernel (not in
     * PCS_SAMPLES), droppedReads = reads answered ZE_RESULT_WARNING_DROPPED_DATA, overSamples =
     * samples beyond the aggregator's row budget (not per instruction) */
    "CREATE TABLE PCS_DEVICES(deviceId INTEGER PRIMARY KEY, state INTEGER, periodNs INTEGER,"
    " notifyEvery INTEGER, result INTEGER, samples INTEGER, unmapped INTEGER, reports INTEGER,"
    " droppedReads INTEGER, distinctIps INTEGER, overSamples INTEGER, firstReadNs INTEGER);"
    "CREATE TABLE PCS_REASONS(deviceId INTEGER, reasonIdx INTEGER, name TEXT, description TEXT,"
    " PRIMARY KEY(deviceId, reasonIdx));"
    /* kernelId: per-process id of the zeKernelCreate (the PTI kernel handle); base/size: bytes,
     * low 32 bits of the device address; samples: mapped to it */
    "CREATE TABLE PCS_KERNELS(kernelId INTEGER PRIMARY KEY, deviceId INTEGER, nameId INTEGER,"
    " base INTEGER, size INTEGER, samples INTEGER);"
    /* one row per sampled instruction: offset from the kernel base, its source (fileId 0 = none) */
    "CREATE TABLE PCS_INSTR(kernelId INTEGER, offset INTEGER, fileId INTEGER, line INTEGER,"
    " samples INTEGER, PRIMARY KEY(kernelId, offset));"
    /* nonzero counts per (instruction, stall reason) */
    "CREATE TABLE PCS_SAMPLES(kernelId INTEGER, offset INTEGER, reasonIdx INTEGER, count INTEGER);";

static struct {
    pa_bulk_t instr, samples, kernels;
    int open;
    char *summary;      /* the section, rendered in finish() from the DB */
    size_t summary_len;
} wp;

static int pcs_create_schema(sqlite3 *db)
{
    if (pa_db_exec(db, pcs_schema_sql) != 0)
        return -1;
    wp.open = pa_bulk_init(&wp.instr, db, "PCS_INSTR(kernelId,offset,fileId,line,samples)", 5, 200) == 0 &&
              pa_bulk_init(&wp.samples, db, "PCS_SAMPLES(kernelId,offset,reasonIdx,count)", 4, 250) == 0 &&
              pa_bulk_init(&wp.kernels, db, "PCS_KERNELS(kernelId,deviceId,nameId,base,size,samples)", 6, 150) == 0;
    return wp.open ? 0 : -1;
}

static int exec_bind(sqlite3 *db, const char *sql, const int64_t *v, int n, const char *t1, const char *t2)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        pa_err("writer", "SQLite: %s", sqlite3_errmsg(db));
        return -1;
    }
    for (int i = 0; i < n; i++)
        sqlite3_bind_int64(st, i + 1, v[i]);
    if (t1)
        sqlite3_bind_text(st, n + 1, t1, -1, SQLITE_TRANSIENT);
    if (t2)
        sqlite3_bind_text(st, n + 2, t2, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

static int on_device(sqlite3 *db, const pa_record_t *r, const uint8_t *p)
{
    pa_pcs_dev_t d;
    if (r->len < sizeof d)
        return 0;
    memcpy(&d, p, sizeof d);
    int64_t v[9] = {d.device, d.state, d.period_ns, d.notify_every, d.result, (int64_t)r->u.raw[0],
                    (int64_t)r->u.raw[1], (int64_t)r->u.raw[2], (int64_t)r->u.raw[3]};
    int rc = exec_bind(db, "INSERT OR REPLACE INTO PCS_DEVICES(deviceId,state,periodNs,notifyEvery,result,samples,"
                           "unmapped,reports,droppedReads,distinctIps,overSamples) VALUES(?,?,?,?,?,?,?,?,?,0,0)",
                       v, 9, NULL, NULL);
    /* names then descriptions, NUL-terminated */
    const char *names[PA_PCS_MAX_REASONS], *descs[PA_PCS_MAX_REASONS];
    size_t off = sizeof d;
    uint32_t n = d.nreasons < PA_PCS_MAX_REASONS ? d.nreasons : PA_PCS_MAX_REASONS;
    for (uint32_t pass = 0; pass < 2; pass++)
        for (uint32_t i = 0; i < n; i++) {
            const char *s = off < r->len ? (const char *)p + off : "";
            size_t l = off < r->len ? strnlen(s, r->len - off) : 0;
            (pass ? descs : names)[i] = s;
            off += l + 1;
        }
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        int64_t k[2] = {d.device, i};
        rc = exec_bind(db, "INSERT OR REPLACE INTO PCS_REASONS(deviceId,reasonIdx,name,description) VALUES(?,?,?,?)",
                       k, 2, names[i], descs[i]);
    }
    return rc;
}

static int pcs_on_record(sqlite3 *db, const pa_record_t *r, const uint8_t *p)
{
    switch (r->kind) {
    case PA_SP_PCS_DEVICE:
        return on_device(db, r, p);
    case PA_SP_PCS_COUNTS: {
        int64_t v[4] = {(int64_t)r->u.raw[1], (int64_t)r->u.raw[2], (int64_t)r->u.raw[3], (int64_t)r->u.raw[0]};
        return exec_bind(db, "UPDATE PCS_DEVICES SET distinctIps = ?, overSamples = ?, firstReadNs = ? WHERE"
                             " deviceId = ?", v, 4, NULL, NULL);
    }
    case PA_SP_PCS_KERNEL: {
        pa_pcs_kernel_t k;
        if (r->len < sizeof k)
            return 0;
        memcpy(&k, p, sizeof k);
        pa_bulk_int(&wp.kernels, (int64_t)k.id);
        pa_bulk_int(&wp.kernels, k.device);
        pa_bulk_int(&wp.kernels, (int64_t)r->u.raw[1]);
        pa_bulk_int(&wp.kernels, k.base);
        pa_bulk_int(&wp.kernels, k.size);
        pa_bulk_int(&wp.kernels, (int64_t)r->u.raw[0]);
        return 0;
    }
    case PA_SP_PCS_INSTR: {
        uint32_t n = r->len / (uint32_t)sizeof(uint64_t);
        uint64_t total = 0;
        for (uint32_t i = 0; i < n; i++) {
            uint64_t c;
            memcpy(&c, p + i * sizeof c, sizeof c);
            total += c;
            if (!c)
                continue;
            pa_bulk_int(&wp.samples, (int64_t)r->u.raw[0]);
            pa_bulk_int(&wp.samples, (int64_t)r->u.raw[1]);
            pa_bulk_int(&wp.samples, i);
            pa_bulk_int(&wp.samples, (int64_t)c);
        }
        pa_bulk_int(&wp.instr, (int64_t)r->u.raw[0]);
        pa_bulk_int(&wp.instr, (int64_t)r->u.raw[1]);
        pa_bulk_int(&wp.instr, (int64_t)r->u.raw[2]);
        pa_bulk_int(&wp.instr, (int64_t)r->u.raw[3]);
        pa_bulk_int(&wp.instr, (int64_t)total);
        return 0;
    }
    default:
        return 0;
    }
}

/* The section: top kernels and hottest instructions, by the reports themselves (same numbers). */
static void render_summary(sqlite3 *db)
{
    free(wp.summary);
    wp.summary = NULL;
    sqlite3_stmt *st = NULL;
    int64_t ndev = 0, samples = 0, unmapped = 0, dropped = 0, over = 0;
    if (sqlite3_prepare_v2(db, "SELECT count(*), total(samples), total(unmapped), total(droppedReads),"
                               " total(overSamples) FROM PCS_DEVICES WHERE state = 1", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        ndev = sqlite3_column_int64(st, 0);
        samples = sqlite3_column_int64(st, 1);
        unmapped = sqlite3_column_int64(st, 2);
        dropped = sqlite3_column_int64(st, 3);
        over = sqlite3_column_int64(st, 4);
    }
    sqlite3_finalize(st);
    if (!ndev)
        return;
    FILE *m = open_memstream(&wp.summary, &wp.summary_len);
    if (!m)
        return;
    fprintf(m, "\n== PC sampling (EU stalls): %lld samples on %lld device(s); %lld in no known kernel;"
            " %lld reads with dropped data%s%s ==\n", (long long)samples, (long long)ndev, (long long)unmapped,
            (long long)dropped, dropped ? " (WARNING: the device buffer overflowed, samples were lost)" : "",
            over ? " (WARNING: per-instruction budget exceeded; some samples counted per device only)" : "");
    static const char *const specs[] = {"pc_sampling_sum:rows=5", "pc_sampling_instr:rows=10"};
    static const char *const heads[] = {"Top kernels by samples (profagent stats -r pc_sampling_sum)",
                                        "Hottest instructions (profagent stats -r pc_sampling_instr)"};
    pa_sqlfn_register(db);
    for (int i = 0; i < 2; i++) {
        pa_report_req_t *req = NULL;
        char err[256];
        if (pa_report_parse(specs[i], &req, err, sizeof err) != PA_REP_OK)
            continue;
        fprintf(m, "%s:\n", heads[i]);
        if (pa_report_run(db, req, PA_FMT_TABLE, m, err, sizeof err) != PA_REP_OK)
            fprintf(m, "  (%s)\n", err);
        pa_report_req_free(req);
    }
    fclose(m);
}

static int pcs_finish(sqlite3 *db)
{
    int rc = 0;
    if (wp.open) {
        rc |= pa_bulk_finish(&wp.instr);
        rc |= pa_bulk_finish(&wp.samples);
        rc |= pa_bulk_finish(&wp.kernels);
        wp.open = 0;
    }
    rc |= pa_db_exec(db, "CREATE INDEX PCS_SAMPLES_kernel ON PCS_SAMPLES(kernelId, offset);");
    render_summary(db);
    return rc ? -1 : 0;
}

static void pcs_summary(FILE *out, const pa_session_meta_t *meta, const pa_agg_results_t *res)
{
    (void)meta;
    (void)res;
    if (wp.summary)
        fwrite(wp.summary, 1, wp.summary_len, out);
    free(wp.summary);
    wp.summary = NULL;
}

const pa_writer_source_t pa_writer_source_pcs = {
    .name = "pcs",
    .create_schema = pcs_create_schema,
    .on_record = pcs_on_record,
    .finish = pcs_finish,
    .summary = pcs_summary,
};
