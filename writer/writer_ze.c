/* writer_ze.c - the Level Zero tables (ZE_API, ZE_OPS, ZE_DEVICES), kernel-name forms and
 * the Level Zero section of the exit summary. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <unistd.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "writer_internal.h"
#include "writer_ze.h"

static const char ze_schema[] =
    /* one row per ze call; nameId = API name, result = ze_result_t; tid = the calling thread as
     * globalTid (pid << 32 | tid, the convention of every table, so DBs of several processes merge) */
    /* ZE_API and ZE_OPS declare no column types: integers and NULLs only (the bulk's ints), and
     * INTEGER affinity cost a conversion per value of every row (see HGTX_RANGES, schema.c) */
    "CREATE TABLE ZE_API(start, end, tid, nameId,"
    " corrId, result);"
    /* one row per device execution of a kernel (kind 1), copy (2), fill (3) or barrier (4); times are host
     * ns; api* = the launching call (append, or execute for regular lists = graphs: graphId is
     * the list, nodeId the append index); srcKind/dstKind enum pa_ze_mem_kind; tid = the
     * launching thread as globalTid (pid << 32 | tid); staticSlm/dynamicSlm = kernels' shared
     * local memory bytes (localMemSize; local-memory arguments); appendCorrId = regular lists:
     * corrId of the append call that recorded the command (graph node), else NULL */
    "CREATE TABLE ZE_OPS(start, end, tid, kind, corrId,"
    " apiStart, apiEnd, apiNameId, deviceId, contextId,"
    " queueId, engine, graphId, nodeId, nameId,"
    " gridX, gridY, gridZ, blockX, blockY, blockZ,"
    " bytes, srcKind, dstKind, staticSlm, dynamicSlm,"
    " appendCorrId);"
    "CREATE TABLE ZE_DEVICES(deviceId INTEGER PRIMARY KEY, name TEXT, pciBusId TEXT, uuid TEXT,"
    " ccMajor INTEGER, ccMinor INTEGER, ceCount INTEGER, cuCount INTEGER, totalMem INTEGER,"
    " cuClockHz INTEGER, memClockHz INTEGER, timerHz INTEGER, simdWidth INTEGER, memBusWidth INTEGER);";

static pa_bulk_t bulk_api, bulk_ops;
static int bulk_ready;
static uint64_t ze_pid_shift; /* pid << 32 of the session (META pid), read on the first record */
static int ze_have_pid;

/* globalTid of thread `tid` of the session written to db: pid from META (the recorded process,
 * also when `profagent recover` writes the DB), else this process. */
static int64_t ze_gtid(sqlite3 *db, uint32_t tid)
{
    if (!ze_have_pid) {
        sqlite3_stmt *st;
        int64_t pid = getpid();
        if (sqlite3_prepare_v2(db, "SELECT value FROM META WHERE key = 'pid'", -1, &st, NULL) == SQLITE_OK) {
            if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) > 0)
                pid = sqlite3_column_int64(st, 0);
            sqlite3_finalize(st);
        }
        ze_pid_shift = (uint64_t)pid << 32;
        ze_have_pid = 1;
    }
    return (int64_t)(ze_pid_shift | tid);
}
static uint64_t cnt_uncollected, cnt_full, cnt_ctx_lost;
/* how the collector intercepted ze calls (PA_SP_ZE_COUNTS u.raw[2], raw[3]; collector/ze_entry.c) */
static uint64_t cnt_path, cnt_path_reason;
/* the largest clock-pair error bound of the ze source's conversions, ns (PA_SP_ZE_COUNTS payload) */
static uint64_t cnt_clock_err;
/* the API records' waits for room in a full ring: count, ns, given up (the payload's words 1..3) */
static uint64_t cnt_ring_waits, cnt_ring_wait_ns, cnt_ring_given_up;
/* capture lists the collector submitted with the application's executions (payload word 5) */
static uint64_t cnt_capture_lists;

/* From the start: it grows with the rows, so the exit's device-busy pass (pa_ze_busy_compute, in
 * start order) sorts nothing. ZE_API's indexes (one row per call: the largest table) are the
 * readers' (pa_schema_create_reader_indexes); the projection builds ZE_API(corrId) at exit only
 * when a graph node needs it (writer_proj.c). */
static const char ze_index_sql[] = "CREATE INDEX ZE_OPS_start ON ZE_OPS(start);";

static int ze_create_schema(sqlite3 *db)
{
    if (pa_db_exec(db, ze_schema) != 0 || pa_db_exec(db, ze_index_sql) != 0)
        return -1;
    ze_have_pid = 0;
    if (pa_bulk_init(&bulk_api, db, "INSERT INTO ZE_API(start,end,tid,nameId,corrId,result)", 6, 256) != 0 ||
        pa_bulk_init(&bulk_ops, db,
                     "INSERT INTO ZE_OPS(start,end,tid,kind,corrId,apiStart,apiEnd,apiNameId,deviceId,contextId,"
                     "queueId,engine,graphId,nodeId,nameId,gridX,gridY,gridZ,blockX,blockY,blockZ,"
                     "bytes,srcKind,dstKind,staticSlm,dynamicSlm,appendCorrId)", 27, 64) != 0)
        return -1;
    bulk_ready = 1;
    return 0;
}

static void ops_row(sqlite3 *db, const pa_record_t *rec, const pa_ze_op_t *op)
{
    pa_bulk_t *b = &bulk_ops;
    pa_bulk_int(b, (int64_t)rec->t0);
    pa_bulk_int(b, (int64_t)rec->t1);
    pa_bulk_int(b, ze_gtid(db, rec->tid));
    pa_bulk_int(b, op->kind);
    pa_bulk_int(b, (int64_t)op->corr_id);
    pa_bulk_int(b, (int64_t)op->api_t0);
    pa_bulk_int(b, (int64_t)op->api_t1);
    pa_bulk_int(b, op->api);
    if (op->device == UINT32_MAX) pa_bulk_null(b); else pa_bulk_int(b, op->device);
    pa_bulk_int(b, (int64_t)op->context);
    pa_bulk_int(b, (int64_t)op->queue);
    if (op->engine == UINT32_MAX) pa_bulk_null(b); else pa_bulk_int(b, op->engine);
    if (op->graph_id) pa_bulk_int(b, (int64_t)op->graph_id); else pa_bulk_null(b);
    if (op->graph_id) pa_bulk_int(b, op->node_id); else pa_bulk_null(b);
    if (op->kind == PA_ZE_OP_KERNEL) pa_bulk_int(b, op->name_id); else pa_bulk_null(b);
    for (int i = 0; i < 3; i++)
        if (op->kind == PA_ZE_OP_KERNEL && op->grid[i]) pa_bulk_int(b, op->grid[i]); else pa_bulk_null(b);
    for (int i = 0; i < 3; i++)
        if (op->kind == PA_ZE_OP_KERNEL && op->block[i]) pa_bulk_int(b, op->block[i]); else pa_bulk_null(b);
    if (op->kind == PA_ZE_OP_KERNEL || op->kind == PA_ZE_OP_BARRIER) {
        pa_bulk_null(b); pa_bulk_null(b); pa_bulk_null(b);
    } else {
        pa_bulk_int(b, (int64_t)op->bytes);
        pa_bulk_int(b, op->src_kind);
        if (op->kind == PA_ZE_OP_COPY) pa_bulk_int(b, op->dst_kind); else pa_bulk_null(b);
    }
    if (op->kind == PA_ZE_OP_KERNEL) {
        pa_bulk_int(b, op->slm_static);
        pa_bulk_int(b, op->slm_dynamic);
    } else {
        pa_bulk_null(b); pa_bulk_null(b);
    }
    if (op->graph_id && op->append_corr) pa_bulk_int(b, (int64_t)op->append_corr); else pa_bulk_null(b);
}

static int device_row(sqlite3 *db, const pa_ze_device_t *d)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO ZE_DEVICES VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)", -1, &st,
                           NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, d->index);
    sqlite3_bind_text(st, 2, d->name, (int)strnlen(d->name, sizeof d->name), SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, d->pci, (int)strnlen(d->pci, sizeof d->pci), SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, d->uuid, (int)strnlen(d->uuid, sizeof d->uuid), SQLITE_TRANSIENT);
    int64_t v[] = { d->cc_major, d->cc_minor, d->ce_count, d->cu_count, (int64_t)d->total_mem,
                    (int64_t)d->cu_clock_hz, (int64_t)d->mem_clock_hz, (int64_t)d->timer_hz,
                    d->simd_width, d->mem_bus_bits };
    for (int i = 0; i < 10; i++)
        sqlite3_bind_int64(st, 5 + i, v[i]);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(st);
    return rc;
}

static int ze_on_record(sqlite3 *db, const pa_record_t *rec, const uint8_t *payload)
{
    if (!bulk_ready)
        return -1;
    switch (rec->kind) {
    case PA_SP_ZE_API:
        pa_bulk_int(&bulk_api, (int64_t)rec->t0);
        pa_bulk_int(&bulk_api, (int64_t)rec->t1);
        pa_bulk_int(&bulk_api, ze_gtid(db, rec->tid));
        pa_bulk_int(&bulk_api, rec->u.ze.api);
        pa_bulk_int(&bulk_api, (int64_t)rec->u.ze.corr_id);
        pa_bulk_int(&bulk_api, rec->u.ze.result);
        return 0;
    case PA_SP_ZE_OP: {
        if (rec->len < sizeof(pa_ze_op_t))
            return 0;
        pa_ze_op_t op;
        memcpy(&op, payload, sizeof op);
        ops_row(db, rec, &op);
        return 0;
    }
    case PA_SP_ZE_DEVICE: {
        if (rec->len < sizeof(pa_ze_device_t))
            return 0;
        pa_ze_device_t d;
        memcpy(&d, payload, sizeof d);
        d.name[sizeof d.name - 1] = d.uuid[sizeof d.uuid - 1] = d.pci[sizeof d.pci - 1] = 0;
        return device_row(db, &d);
    }
    case PA_SP_ZE_COUNTS:
        cnt_uncollected += rec->u.raw[0];
        cnt_full += rec->u.raw[1];
        cnt_path = rec->u.raw[2];
        cnt_path_reason = rec->u.raw[3];
        if (rec->len >= sizeof(uint64_t)) {
            uint64_t err;
            memcpy(&err, payload, sizeof err);
            cnt_clock_err = err > cnt_clock_err ? err : cnt_clock_err;
        }
        if (rec->len >= 2 * sizeof(uint64_t)) { /* in flight at their context's destroy */
            uint64_t lost;
            memcpy(&lost, (const char *)payload + sizeof(uint64_t), sizeof lost);
            cnt_ctx_lost += lost;
        }
        if (rec->len >= 5 * sizeof(uint64_t)) { /* the API records' full-ring waits */
            uint64_t w[5];
            memcpy(w, payload, sizeof w);
            cnt_ring_waits += w[2];
            cnt_ring_wait_ns += w[3];
            cnt_ring_given_up += w[4];
        }
        if (rec->len >= 6 * sizeof(uint64_t)) {
            uint64_t lists;
            memcpy(&lists, (const char *)payload + 5 * sizeof(uint64_t), sizeof lists);
            cnt_capture_lists += lists;
        }
        return 0;
    default:
        return 0;
    }
}

static int ze_finish(sqlite3 *db)
{
    int rc = 0;
    if (bulk_ready) {
        rc |= pa_bulk_finish(&bulk_api);
        rc |= pa_bulk_finish(&bulk_ops);
        bulk_ready = 0;
    }
    char sql[640];
    snprintf(sql, sizeof sql,
             "INSERT OR REPLACE INTO SESSION_COUNTERS VALUES('ze_uncollected_ops', %llu),"
             "('ze_inflight_table_full', %llu),('ze_intercept_path', %llu),('ze_intercept_reason', %llu),"
             "('ze_clock_pair_err_ns', %llu),('ze_context_destroyed_ops', %llu),('ze_ring_full_waits', %llu),"
             "('ze_ring_full_wait_ns', %llu),('ze_ring_full_waits_given_up', %llu),('ze_capture_lists', %llu);",
             (unsigned long long)cnt_uncollected, (unsigned long long)cnt_full, (unsigned long long)cnt_path,
             (unsigned long long)cnt_path_reason, (unsigned long long)cnt_clock_err,
             (unsigned long long)cnt_ctx_lost, (unsigned long long)cnt_ring_waits,
             (unsigned long long)cnt_ring_wait_ns, (unsigned long long)cnt_ring_given_up,
             (unsigned long long)cnt_capture_lists);
    rc |= pa_db_exec(db, sql);
    pa_ze_busy_compute(db); /* exit summary's device utilization (writer_ze_summary.c) */
    return rc ? -1 : 0;
}

/* ---- kernel name forms ---- */

char *pa_ze_demangle(const char *mangled)
{
    static char *(*cxa)(const char *, char *, size_t *, int *);
    static int tried;
    if (!tried) {
        tried = 1;
        void *lib = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
        if (lib)
            *(void **)&cxa = dlsym(lib, "__cxa_demangle");
    }
    int status = -1;
    char *d = (cxa && mangled && mangled[0] == '_' && mangled[1] == 'Z') ? cxa(mangled, NULL, NULL, &status) : NULL;
    if (d && status == 0)
        return d;
    free(d);
    return strdup(mangled ? mangled : "");
}

size_t pa_ze_base_name(const char *demangled, const char **start)
{
    size_t n = strlen(demangled), end = n, begin = 0;
    int depth = 0;
    for (size_t i = 0; i < n; i++) { /* parameter list: first '(' outside template brackets */
        char c = demangled[i];
        if (c == '<') depth++;
        else if (c == '>' && depth > 0) depth--;
        else if (c == '(' && depth == 0 && i > 0) { end = i; break; }
    }
    depth = 0;
    for (size_t i = end; i-- > 0;) { /* scope and return type: last "::" or ' ' outside brackets */
        char c = demangled[i];
        if (c == '>') depth++;
        else if (c == '<' && depth > 0) depth--;
        else if (depth == 0 && (c == ' ' || (c == ':' && i > 0 && demangled[i - 1] == ':'))) {
            begin = i + 1;
            break;
        }
    }
    /* "function name only" (spec): template arguments go too, so f<int> and f<double> are one
     * row "f" (a name ending in '>' that has no matching '<', e.g. operator>, is kept whole) */
    if (end > begin + 1 && demangled[end - 1] == '>') {
        depth = 0;
        for (size_t i = end; i-- > begin;) {
            char c = demangled[i];
            if (c == '>') depth++;
            else if (c == '<' && --depth == 0) {
                if (i > begin && strncmp(demangled + begin, "operator", 8) != 0)
                    end = i;
                break;
            }
        }
    }
    *start = demangled + begin;
    return end - begin;
}

/* ze_kname(name, mode): mode 0 demangled, 1 base, 2 mangled (as given). */
static void sql_kname(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const char *name = (const char *)sqlite3_value_text(argv[0]);
    int mode = sqlite3_value_int(argv[1]);
    if (!name) {
        sqlite3_result_null(ctx);
        return;
    }
    if (mode == 2) {
        sqlite3_result_text(ctx, name, -1, SQLITE_TRANSIENT);
        return;
    }
    char *d = pa_ze_demangle(name);
    if (!d) {
        sqlite3_result_error_nomem(ctx);
        return;
    }
    if (mode == 1) {
        const char *b;
        size_t len = pa_ze_base_name(d, &b);
        sqlite3_result_text(ctx, b, (int)len, SQLITE_TRANSIENT);
    } else {
        sqlite3_result_text(ctx, d, -1, SQLITE_TRANSIENT);
    }
    free(d);
}

int pa_ze_sql_register(sqlite3 *db)
{
    return sqlite3_create_function(db, "ze_kname", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, sql_kname,
                                   NULL, NULL) == SQLITE_OK ? 0 : -1;
}

const pa_writer_source_t pa_writer_source_ze = {
    .name = "ze",
    .create_schema = ze_create_schema,
    .on_record = ze_on_record,
    .finish = ze_finish,
    .summary = pa_ze_summary_print,
};

void pa_ze_intercept(uint64_t *path, uint64_t *reason)
{
    *path = cnt_path;
    *reason = cnt_path_reason;
}

void pa_ze_counts(uint64_t *uncollected, uint64_t *table_full)
{
    *uncollected = cnt_uncollected;
    *table_full = cnt_full;
}

uint64_t pa_ze_ctx_lost_count(void)
{
    return cnt_ctx_lost;
}

void pa_ze_ring_waits(uint64_t *waits, uint64_t *wait_ns, uint64_t *given_up)
{
    *waits = cnt_ring_waits;
    *wait_ns = cnt_ring_wait_ns;
    *given_up = cnt_ring_given_up;
}
