/* report_ze.c - Level Zero reports (spec 2.3.2-2.3.8, 2.3.16, 2.3.17, 2.3.20): kern_sum,
 * kern_gb_sum, kern_gb_trace, kern_exec_trace, gpu_trace, mem_size_sum, mem_time_sum,
 * device_attribute, ze_api_sum, ze_api_trace; the spec's hggc_* / ppu_* names are aliases. */
#include <string.h>

#include "report_util.h"
#include "writer_proj.h"
#include "writer_ze.h"

#define OPT_ROWS {"rows", PA_OPT_INT, "<limit>", PA_REPORT_ROWS_HELP, NULL}

static const pa_report_opt_t opts_rows[] = { OPT_ROWS };
static const pa_report_opt_t opts_kern[] = { PA_REPORT_OPT_BASE, PA_REPORT_OPT_MANGLED, PA_REPORT_OPT_DEVICE,
                                             OPT_ROWS };
/* reports with the hgtx-name option (spec 2.3.5-2.3.8; expression from writer_proj.h) */
static const pa_report_opt_t opts_kern_hn[] = { PA_PROJ_OPT_HGTX_NAME, PA_REPORT_OPT_BASE, PA_REPORT_OPT_MANGLED,
                                                PA_REPORT_OPT_DEVICE, OPT_ROWS };
#define KNAME(req) pa_proj_kname_sql(pa_req_opt(req, "hgtx-name") && pa_req_opt(req, "hgtx-name")->set, pa_report_name_mode(req), kn, sizeof kn)

/* Rows of st: every column as is (doubles 0 digits), then rows=. */
static int plain_rows(sqlite3 *db, sqlite3_stmt *st, const pa_report_req_t *req, pa_table_t *t, char *err,
                      size_t errsz)
{
    int rc, nc = sqlite3_column_count(st);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        for (int c = 0; c < nc; c++)
            pa_table_add_sqlcol(t, st, c, 0);
    if (rc != SQLITE_DONE)
        return pa_report_step_error(db, st, req->def->name, err, errsz);
    sqlite3_finalize(st);
    pa_report_limit_rows(req, t);
    return PA_REP_OK;
}

/* "X Y Z" of a kernel's group count (f "grid") or size (f "block"), '-' for an unknown part */
#define XYZ(f) "coalesce(o." f "X,'-')||' '||coalesce(o." f "Y,'-')||' '||coalesce(o." f "Z,'-')"

/* Prepares sql (ze_kname registered) and emits its rows: with Time (%) (pa_report_stat_rows)
 * when `stat`, else as is (plain_rows). */
static int run_rows(sqlite3 *db, const pa_report_req_t *req, const char *sql, int stat, pa_table_t *t,
                    char *err, size_t errsz)
{
    sqlite3_stmt *st;
    int rc = pa_report_prepare_ze(db, req, sql, &st, err, errsz);
    if (rc)
        return rc;
    return stat ? pa_report_stat_rows(db, st, req, t, err, errsz) : plain_rows(db, st, req, t, err, errsz);
}

/* Trace tail: appends the device= filter to sql (capacity sz, 100 bytes kept for `order`), then
 * `order`, and emits the rows as is. A device list too long: PA_REP_EDATA. */
static int run_trace(sqlite3 *db, const pa_report_req_t *req, char *sql, size_t sz, const char *order,
                     pa_table_t *t, char *err, size_t errsz)
{
    if (pa_report_device_filter(req, sql, sz - 100) != 0)
        return PA_REP_EDATA;
    strcat(sql, order);
    return run_rows(db, req, sql, 0, t, err, errsz);
}

/* ---- kern_sum (2.3.7) and kern_gb_sum (2.3.5) ---- */
static int kern_sum_common(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err, size_t errsz,
                           int gb)
{
    char sql[2048], kn[512];
    snprintf(sql, sizeof sql,
             "SELECT " PA_SQL_STATS("o.end - o.start") ",%s %s AS name"
             " FROM ZE_OPS o LEFT JOIN STRING_IDS s ON s.id = o.nameId WHERE o.kind = 1",
             gb ? " " XYZ("grid") " AS g, " XYZ("block") " AS b," : "",
             KNAME(req));
    if (pa_report_device_clause(req, sql, sizeof sql - 200, err, errsz) != PA_REP_OK)
        return PA_REP_EDATA;
    strcat(sql, gb ? " GROUP BY name, g, b ORDER BY 1 DESC, name" : " GROUP BY name ORDER BY 1 DESC, name");
    return run_rows(db, req, sql, 1, t, err, errsz);
}
static int produce_kern_sum(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err, size_t errsz)
{ return kern_sum_common(db, req, t, err, errsz, 0); }
static int produce_kern_gb_sum(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err, size_t errsz)
{ return kern_sum_common(db, req, t, err, errsz, 1); }

/* ---- kern_gb_trace (2.3.6) ---- */
static int produce_kern_gb_trace(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err, size_t errsz)
{
    char sql[2048], kn[512];
    snprintf(sql, sizeof sql,
             "SELECT o.start, o.end - o.start, " PA_SQL_PID("o.tid") ", o.deviceId,"
             " o.contextId, o.queueId,"
             " " XYZ("grid") ", " XYZ("block") ","
             " %s FROM ZE_OPS o LEFT JOIN STRING_IDS s ON s.id = o.nameId WHERE o.kind = 1",
             KNAME(req));
    return run_trace(db, req, sql, sizeof sql, " ORDER BY o.start, o.corrId", t, err, errsz);
}

/* ---- kern_exec_trace (2.3.4): queue columns '-' when the kernel started before the call ended ---- */
static int produce_kern_exec_trace(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err,
                                   size_t errsz)
{
    char sql[2048];
    snprintf(sql, sizeof sql,
             "SELECT o.apiStart, o.apiEnd - o.apiStart,"
             " CASE WHEN o.start > o.apiEnd THEN o.apiEnd END,"
             " CASE WHEN o.start > o.apiEnd THEN o.start - o.apiEnd END,"
             " o.start, o.end - o.start, o.end - o.apiStart,"
             " " PA_SQL_PID("o.tid") ", o.tid & 4294967295, o.deviceId, a.value,"
             " " XYZ("grid") ", " XYZ("block") ","
             " coalesce(ze_kname(s.value, %d), " PA_SQL_UNKNOWN_NAME("o.nameId") ")"
             " FROM ZE_OPS o LEFT JOIN STRING_IDS s ON s.id = o.nameId"
             " LEFT JOIN STRING_IDS a ON a.id = o.apiNameId WHERE o.kind = 1",
             pa_report_name_mode(req));
    return run_trace(db, req, sql, sizeof sql, " ORDER BY o.apiStart, o.nodeId, o.start", t, err, errsz);
}

/* ---- gpu_trace (2.3.8) ---- */
#define MEMKIND(c) "CASE " c " WHEN 1 THEN 'Host' WHEN 2 THEN 'Device' WHEN 3 THEN 'Shared' WHEN 4 THEN 'Pageable' WHEN 0 THEN 'Unknown' END"
static int produce_gpu_trace(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err, size_t errsz)
{
    char sql[3072], kn[512];
    snprintf(sql, sizeof sql,
             "SELECT o.start, o.end - o.start, o.corrId, o.gridX, o.gridY, o.gridZ, o.blockX, o.blockY,"
             " o.blockZ, NULL, o.staticSlm, o.dynamicSlm, o.bytes,"
             " CASE WHEN o.kind != 1 AND o.end > o.start THEN o.bytes * 1000000000 / (o.end - o.start) END,"
             " " MEMKIND("o.srcKind") ", " MEMKIND("o.dstKind") ","
             " coalesce(d.name, 'device') || ' (' || o.deviceId || ')', o.contextId, o.queueId,"
             " CASE o.kind WHEN 1 THEN %s WHEN 3 THEN 'Memset' ELSE"
             "  'Memcpy ' || CASE WHEN o.srcKind IN (1,4) THEN 'H' WHEN o.srcKind = 3 THEN 'S' ELSE 'D' END"
             "  || 'to' || CASE WHEN o.dstKind IN (1,4) THEN 'H' WHEN o.dstKind = 3 THEN 'S' ELSE 'D' END END"
             " FROM ZE_OPS o LEFT JOIN STRING_IDS s ON s.id = o.nameId LEFT JOIN ZE_DEVICES d"
             " ON d.deviceId = o.deviceId WHERE o.kind IN (1, 2, 3)",
             KNAME(req));
    return run_trace(db, req, sql, sizeof sql, " ORDER BY o.start, o.corrId", t, err, errsz);
}

/* ---- mem_time_sum (2.3.17) / mem_size_sum (2.3.16) ---- */
/* operation names of the spec ("[memcpy Host-to-Device]"), each side the memory kind as in
 * gpu_trace (Pageable = not a Level Zero allocation, Host = USM host): the agent's summary uses
 * the same words (pa_ze_memop_name) */
#define MEMOP_NAME "CASE o.kind WHEN 3 THEN '[memset]' ELSE '[memcpy ' ||" \
    " " MEMKIND("o.srcKind") " || '-to-' || " MEMKIND("o.dstKind") " || ']' END"
/* statistics of x per copy direction / fill, total descending */
#define MEMOP_SUM_SQL(x) "SELECT " PA_SQL_STATS(x) ", " MEMOP_NAME " AS op FROM ZE_OPS o" \
    " WHERE o.kind IN (2, 3) GROUP BY op ORDER BY 1 DESC, op"
static int produce_mem_time_sum(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err, size_t errsz)
{
    static const char sql[] = MEMOP_SUM_SQL("o.end - o.start");
    return run_rows(db, req, sql, 1, t, err, errsz);
}
static int produce_mem_size_sum(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err, size_t errsz)
{
    static const char sql[] = MEMOP_SUM_SQL("o.bytes");
    return run_rows(db, req, sql, 0, t, err, errsz);
}

/* ---- device_attribute (2.3.20) ---- */
static int produce_device_attribute(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err,
                                    size_t errsz)
{
    /* a merged DB: the host of the input whose device-id range holds the device */
    static const char merged[] = "SELECT d.deviceId, d.name, d.pciBusId, (SELECT m.hostname FROM MERGE_INPUTS m WHERE"
                                 " d.deviceId >= m.deviceOffset AND d.deviceId < m.deviceOffset + m.deviceCount LIMIT 1),"
                                 " d.uuid, d.ccMajor, d.ccMinor, d.ceCount, d.cuCount, d.totalMem, d.cuClockHz,"
                                 " d.memClockHz FROM ZE_DEVICES d ORDER BY d.deviceId";
    static const char sql[] = "SELECT deviceId, name, pciBusId, (SELECT value FROM META WHERE key = 'hostname'),"
                              " uuid, ccMajor, ccMinor, ceCount, cuCount, totalMem, cuClockHz, memClockHz"
                              " FROM ZE_DEVICES ORDER BY deviceId";
    sqlite3_stmt *st;
    int is_merged = 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE name = 'MERGE_INPUTS'", -1, &st, NULL) == SQLITE_OK) {
        is_merged = sqlite3_step(st) == SQLITE_ROW;
        sqlite3_finalize(st);
    }
    return run_rows(db, req, is_merged ? merged : sql, 0, t, err, errsz);
}

/* ---- ze_api_sum (2.3.2) / ze_api_trace (2.3.3) ---- */
static int produce_api_sum(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err, size_t errsz)
{
    static const char sql[] = "SELECT " PA_SQL_STATS("a.end - a.start") ", coalesce(s.value, "
                              PA_SQL_UNKNOWN_NAME("a.nameId") ") AS name FROM ZE_API a"
                              " LEFT JOIN STRING_IDS s ON s.id = a.nameId GROUP BY a.nameId ORDER BY 1 DESC, name";
    return run_rows(db, req, sql, 1, t, err, errsz);
}
static int produce_api_trace(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err, size_t errsz)
{
    /* spec 2.3.3: one row per call, by duration ascending (ties by start) */
    static const char sql[] =
        "SELECT a.start, a.end - a.start, coalesce(s.value, " PA_SQL_UNKNOWN_NAME("a.nameId") "), a.corrId, " PA_SQL_PID("a.tid") ","
        " a.tid & 4294967295, coalesce((SELECT n.value FROM THREADS th JOIN STRING_IDS n ON n.id = th.nameId"
        "  WHERE th.globalTid = " PA_SQL_GTID("a.tid") "), '')"
        " FROM ZE_API a LEFT JOIN STRING_IDS s ON s.id = a.nameId ORDER BY a.end - a.start, a.start";
    return run_rows(db, req, sql, 0, t, err, errsz);
}

/* ---- columns and definitions ---- */
#define C(t, h) { t, h }
#define STAT_COLS(what, unit) \
    C("Total Time (ns)", "Total time of all " what), C(unit, "Number of " what), \
    C("Avg (ns)", "Average time"), C("Med (ns)", "Median time"), C("Min (ns)", "Minimum time"), \
    C("Max (ns)", "Maximum time"), C("StdDev (ns)", "Standard deviation of the time")
static const pa_report_col_t cols_kern_sum[] = {
    C("Time (%)", "Percentage of 'Total Time' of all kernels listed"), STAT_COLS("executions", "Instances"),
    C("Name", "Kernel name") };
static const pa_report_col_t cols_kern_gb_sum[] = {
    C("Time (%)", "Percentage of 'Total Time' of all rows listed"), STAT_COLS("executions", "Instances"),
    C("GridXYZ", "Group count"), C("BlockXYZ", "Group size"), C("Name", "Kernel name") };
static const pa_report_col_t cols_kern_gb_trace[] = {
    C("Start (ns)", "Kernel start"), C("Duration (ns)", "Kernel duration"), C("PID", "Process id"),
    C("Device ID", "Device index"), C("Context ID", "Context id"), C("Stream ID", "Queue / immediate list id"),
    C("GridXYZ", "Group count"), C("BlockXYZ", "Group size"), C("Name", "Kernel name") };
static const pa_report_col_t cols_kern_exec[] = {
    C("API Start (ns)", "Start of the launching call"), C("API Dur (ns)", "Duration of the launching call"),
    C("Queue Start (ns)", "API end when the kernel started after it, else -"),
    C("Queue Dur (ns)", "Kernel start - API end when positive, else -"),
    C("Kernel Start (ns)", "Kernel start"), C("Kernel Dur (ns)", "Kernel duration"),
    C("Total Dur (ns)", "API start to kernel end"), C("PID", "Process id"), C("TID", "Launching thread"),
    C("DevId", "Device index"), C("API Function", "Launching call"), C("GridXYZ", "Group count"),
    C("BlockXYZ", "Group size"), C("Kernel Name", "Kernel name") };
static const pa_report_col_t cols_gpu_trace[] = {
    C("Start (ns)", "Start"), C("Duration (ns)", "Duration"), C("CorrId", "Correlation id of the launching call"),
    C("GrdX", "Group count X"), C("GrdY", "Group count Y"), C("GrdZ", "Group count Z"),
    C("BlkX", "Group size X"), C("BlkY", "Group size Y"), C("BlkZ", "Group size Z"),
    C("Reg/Trd", "Registers per thread: always '-', Level Zero does not expose it\n"
      "            (ze_kernel_properties_t has no register count)"),
    C("StcSMem (bytes)", "Static shared local memory of the kernel (ze_kernel_properties_t.localMemSize)"),
    C("DymSMem (bytes)", "Dynamic shared local memory: the sizes of the kernel's local-memory arguments\n"
      "            (zeKernelSetArgumentValue with a NULL value) at the append"), C("Bytes (bytes)", "Bytes copied or filled"),
    C("Throughput (B/s)", "Bytes / duration"), C("SrcMemKd", "Source (or filled) memory kind"),
    C("DstMemKd", "Destination memory kind"), C("Device", "Device name (id)"), C("Ctx", "Context id"),
    C("Strm", "Queue / immediate list id"), C("Name", "Kernel name, Memcpy XtoY, Memset") };
static const pa_report_col_t cols_mem_time[] = {
    C("Time (%)", "Percentage of 'Total Time'"), STAT_COLS("operations", "Count"), C("Operation", "Operation") };
static const pa_report_col_t cols_mem_size[] = {
    C("Total (bytes)", "Total bytes"), C("Count", "Operations"), C("Avg (bytes)", "Average"),
    C("Med (bytes)", "Median"), C("Min (bytes)", "Smallest"), C("Max (bytes)", "Largest"),
    C("StdDev (bytes)", "Standard deviation"), C("Operation", "Operation") };
static const pa_report_col_t cols_dev[] = {
    C("Device ID", "Device index"), C("Device Name", "Name"), C("PCI Bus ID", "PCI address (sysman) or -"),
    C("Host Name", "Host"), C("UUID", "Device UUID (hex)"), C("Compute Capability Major", "Level Zero API major of the driver"),
    C("Compute Capability Minor", "Level Zero API minor of the driver"), C("CE Number", "Compute engines"),
    C("CU Number", "Execution units"), C("Total Memory (bytes)", "Device memory"),
    C("CU Clock (Hz)", "Max core clock"), C("Memory Clock (Hz)", "Max memory clock") };
static const pa_report_col_t cols_api_sum[] = {
    C("Time (%)", "Percentage of 'Total Time' of all functions listed"), STAT_COLS("calls", "Num Calls"),
    C("Name", "API function") };
static const pa_report_col_t cols_api_trace[] = {
    C("Start (ns)", "Call start"), C("Duration (ns)", "Call duration"), C("Name", "API function"),
    C("CorrID", "Correlation id"), C("Pid", "Process id"), C("Tid", "Thread id"), C("Thread Name", "Thread name") };

PA_REPORT_DEF(r_kern_sum, "kern_sum", "Kernel Summary", "hggc_ppu_kern_sum", "hggc_kern_sum",
    "Device time of Level Zero kernels by name, total descending (spec 2.3.7).\n"
    "Time (%) is of the total of all kernels listed. Names demangled unless base/mangled.",
    opts_kern_hn, cols_kern_sum, produce_kern_sum);
PA_REPORT_DEF(r_kern_gb_sum, "kern_gb_sum", "Kernel Grid/Block Summary", "hggc_ppu_kern_gb_sum", NULL,
    "Kernel statistics per (name, group count, group size), total descending (spec 2.3.5).",
    opts_kern_hn, cols_kern_gb_sum, produce_kern_gb_sum);
PA_REPORT_DEF_STREAMS(r_kern_gb_trace, "kern_gb_trace", "Kernel Grid/Block Trace", "hggc_ppu_kern_gb_trace", NULL,
    "One row per kernel execution with group count/size, by start (spec 2.3.6).",
    opts_kern_hn, cols_kern_gb_trace, produce_kern_gb_trace);
PA_REPORT_DEF_STREAMS(r_kern_exec, "kern_exec_trace", "Kernel Execution Trace", "hggc_kern_exec_trace", NULL,
    "Each kernel from its launching call to its execution, by API start (spec 2.3.4).\n"
    "Queue Start/Dur are '-' when the kernel started before the call ended.\n"
    "A regular command list executed N times yields N rows per kernel (graph).",
    opts_kern, cols_kern_exec, produce_kern_exec_trace);
PA_REPORT_DEF_STREAMS(r_gpu_trace, "gpu_trace", "Device Trace", "hggc_ppu_trace", NULL,
    "Kernels, copies and fills on the devices by start (spec 2.3.8); '-' where a column\n"
    "does not apply. Throughput in bytes per second.",
    opts_kern_hn, cols_gpu_trace, produce_gpu_trace);
PA_REPORT_DEF(r_mem_time, "mem_time_sum", "Memory Operation Time Summary", "hggc_ppu_mem_time_sum", NULL,
    "Device time of copies (by direction) and fills, total descending (spec 2.3.17).",
    opts_rows, cols_mem_time, produce_mem_time_sum);
PA_REPORT_DEF(r_mem_size, "mem_size_sum", "Memory Operation Size Summary", "hggc_ppu_mem_size_sum", NULL,
    "Bytes of copies (by direction) and fills, total descending (spec 2.3.16).",
    opts_rows, cols_mem_size, produce_mem_size_sum);
PA_REPORT_DEF(r_dev, "device_attribute", "Device Attributes", "ppu_device_attribute", NULL,
    "Every Level Zero device's properties by device index (spec 2.3.20). Level Zero equivalents:\n"
    "PCI Bus ID = zesDevicePciGetProperties address dddd:bb:dd.f (sysman; '-' when the driver\n"
    "refuses it, e.g. without ZES_ENABLE_SYSMAN=1); Compute Capability Major/Minor = the driver's\n"
    "Level Zero API version (zeDriverGetApiVersion; the device IP version extension is not in the\n"
    "1.4 headers); CE Number = engines of the compute queue groups; CU Number = execution units\n"
    "(numSlices x numSubslicesPerSlice x numEUsPerSubslice); CU Clock = coreClockRate; Memory\n"
    "Clock = the highest maxClockRate of the memory properties; Total Memory = their totalSize sum.",
    opts_rows, cols_dev, produce_device_attribute);
PA_REPORT_DEF(r_api_sum, "ze_api_sum", "Level Zero API Summary", "hggc_api_sum", NULL,
    "Level Zero API calls by name, total time descending (spec 2.3.2).",
    opts_rows, cols_api_sum, produce_api_sum);
PA_REPORT_DEF_STREAMS(r_api_trace, "ze_api_trace", "Level Zero API Trace", "hggc_api_trace", NULL,
    "One row per Level Zero API call, by duration ascending (spec 2.3.3).",
    opts_rows, cols_api_trace, produce_api_trace);

const pa_report_def_t *const pa_reports_ze[] = {
    &r_kern_sum, &r_kern_gb_sum, &r_kern_gb_trace, &r_kern_exec, &r_gpu_trace, &r_mem_time, &r_mem_size,
    &r_dev, &r_api_sum, &r_api_trace, NULL,
};
