/* report_pcs.c - pc_sampling_sum (per kernel) and pc_sampling_instr (per instruction): EU-stall
 * samples by reason, columns named like unitrace's stall-sampling CSV. */
#include <stdio.h>
#include <string.h>

#include "report_util.h"

#define C(t, h) {t, h}
/* unitrace's stall CSV reasons (PVC order); a device with other reason names counts them in
 * Samples only (PCS_REASONS/PCS_SAMPLES hold every reason) */
#define PCS_REASON_COLS                                                                          \
    C("Active", "Samples of a thread that was issuing (Active cycles)"),                         \
    C("ControlStall", "Stalled on a control-flow dependency (branch, jump)"),                    \
    C("PipeStall", "Stalled on an execution pipe (ALU, math, XMX) dependency"),                  \
    C("SendStall", "Stalled because the send (message) queue was full"),                         \
    C("DistStall", "Stalled on the instruction distribution to the pipes"),                      \
    C("SbidStall", "Stalled on scoreboard: waiting for a send's (memory) result"),               \
    C("SyncStall", "Stalled on a barrier or fence"),                                             \
    C("InstrFetchStall", "Stalled fetching the instruction"),                                    \
    C("OtherStall", "Stalled for another reason")
static const char *const reason_names[] = {"Active", "ControlStall", "PipeStall", "SendStall", "DistStall",
                                           "SbidStall", "SyncStall", "InstrFetchStall", "OtherStall"};
#define NREASONS 9

static const pa_report_col_t cols_sum[] = {
    C("Samples (%)", "Percentage of the samples of all kernels listed"),
    C("Samples", "EU-stall samples that fell in the kernel (all reasons)"), PCS_REASON_COLS,
    C("Dominant", "Reason with the most samples (ties: the first in this column order)"),
    C("Device", "Device id"), C("Kernel", "Kernel name")};
static const pa_report_col_t cols_instr[] = {
    C("Kernel", "Kernel name"), C("IP", "Instruction offset from the kernel base, hex (unitrace's IP)"),
    C("Source", "file:line of the instruction from the kernel's debug info, '-' without -g"),
    C("Samples", "Samples of the instruction (all reasons)"),
    C("Kernel Samples (%)", "Percentage of the kernel's samples"), PCS_REASON_COLS,
    C("Device", "Device id")};

static const pa_report_opt_t opts_pcs[] = {
    {"rows", PA_OPT_INT, "<limit>", "Optional argument. Limits the number of rows in the output.\nDefault is no limit.",
     NULL},
    PA_REPORT_OPT_DEVICE,
    {"kernel", PA_OPT_REGEX, "<regex>", "Only kernels whose (displayed) name matches this PCRE2 expression.", NULL},
    PA_REPORT_OPT_BASE, PA_REPORT_OPT_MANGLED,
};

/* " AND k.deviceId IN (..)" and " AND ze_kname(..) REGEXP ?" (the regex is bound as ?1). */
static int filters(const pa_report_req_t *req, char *buf, size_t sz, char *err, size_t errsz)
{
    char dev[600] = "";
    if (pa_report_device_clause(req, dev, sizeof dev, err, errsz) != PA_REP_OK)
        return PA_REP_EDATA;
    /* pa_report_device_filter writes "o.deviceId": our alias is kn */
    const char *o = strstr(dev, "o.deviceId");
    const pa_opt_val_t *kv = pa_req_opt(req, "kernel");
    snprintf(buf, sz, "%.*s%s%s%s", o ? (int)(o - dev) : (int)strlen(dev), dev, o ? "kn" : "", o ? o + 1 : "",
             kv && kv->s ? " AND kname REGEXP ?1" : "");
    return PA_REP_OK;
}

/* Per (device, kernel name) and reason; the CTE every query starts from. */
#define PCS_BASE_CTE(extra_cols, extra_group)                                                        \
    "WITH kn AS (SELECT k.kernelId, k.deviceId, ze_kname(s.value, %d) AS kname FROM PCS_KERNELS k"   \
    " JOIN STRING_IDS s ON s.id = k.nameId),"                                                        \
    " x AS (SELECT kn.deviceId, kn.kname" extra_cols ", r.reasonIdx, r.name AS reason, sum(p.count) AS c" \
    " FROM PCS_SAMPLES p JOIN kn ON kn.kernelId = p.kernelId JOIN PCS_REASONS r"                     \
    " ON r.deviceId = kn.deviceId AND r.reasonIdx = p.reasonIdx WHERE 1 %s"                          \
    " GROUP BY kn.deviceId, kn.kname" extra_group ", r.reasonIdx)"

#define PCS_PIVOT                                                                                    \
    "sum(c), sum(CASE WHEN reason = 'Active' THEN c ELSE 0 END),"                                    \
    " sum(CASE WHEN reason = 'ControlStall' THEN c ELSE 0 END),"                                     \
    " sum(CASE WHEN reason = 'PipeStall' THEN c ELSE 0 END),"                                        \
    " sum(CASE WHEN reason = 'SendStall' THEN c ELSE 0 END),"                                        \
    " sum(CASE WHEN reason = 'DistStall' THEN c ELSE 0 END),"                                        \
    " sum(CASE WHEN reason = 'SbidStall' THEN c ELSE 0 END),"                                        \
    " sum(CASE WHEN reason = 'SyncStall' THEN c ELSE 0 END),"                                        \
    " sum(CASE WHEN reason = 'InstrFetchStall' THEN c ELSE 0 END),"                                  \
    " sum(CASE WHEN reason = 'OtherStall' THEN c ELSE 0 END)"

static int bind_regex(const pa_report_req_t *req, sqlite3_stmt *st)
{
    const pa_opt_val_t *kv = pa_req_opt(req, "kernel");
    if (kv && kv->s)
        sqlite3_bind_text(st, 1, kv->s, -1, SQLITE_TRANSIENT);
    return 0;
}

/* The dominant reason of 9 counts (ties: the first in column order), NULL when all are 0. */
static const char *dominant(const int64_t *v)
{
    int best = -1;
    for (int i = 0; i < NREASONS; i++)
        if (v[i] > 0 && (best < 0 || v[i] > v[best]))
            best = i;
    return best < 0 ? NULL : reason_names[best];
}

static int produce_sum(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err, size_t errsz)
{
    char filt[800], sql[4096];
    if (filters(req, filt, sizeof filt, err, errsz) != PA_REP_OK)
        return PA_REP_EDATA;
    snprintf(sql, sizeof sql,
             PCS_BASE_CTE("", "") " SELECT " PCS_PIVOT ", deviceId, kname FROM x GROUP BY deviceId, kname"
             " ORDER BY 1 DESC, kname, deviceId",
             pa_report_name_mode(req), filt);
    sqlite3_stmt *st;
    if (pa_report_prepare_ze(db, req, sql, &st, err, errsz) != PA_REP_OK)
        return PA_REP_EDATA;
    bind_regex(req, st);
    int64_t grand = 0;
    /* two passes over the rows: the percentage is of the listed kernels' total */
    while (sqlite3_step(st) == SQLITE_ROW)
        grand += sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t total = sqlite3_column_int64(st, 0), v[NREASONS];
        pa_table_add_double(t, grand ? 100.0 * (double)total / (double)grand : 0.0, 1);
        pa_table_add_int(t, total);
        for (int i = 0; i < NREASONS; i++) {
            v[i] = sqlite3_column_int64(st, 1 + i);
            pa_table_add_int(t, v[i]);
        }
        const char *d = dominant(v);
        if (d)
            pa_table_add_str(t, d, strlen(d));
        else
            pa_table_add_none(t);
        pa_table_add_int(t, sqlite3_column_int64(st, 1 + NREASONS));
        pa_table_add_sqlcol(t, st, 2 + NREASONS, 0);
    }
    if (rc != SQLITE_DONE)
        return pa_report_step_error(db, st, req->def->name, err, errsz);
    sqlite3_finalize(st);
    pa_report_limit_rows(req, t);
    return PA_REP_OK;
}

static int produce_instr(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err, size_t errsz)
{
    char filt[800], sql[6144];
    if (filters(req, filt, sizeof filt, err, errsz) != PA_REP_OK)
        return PA_REP_EDATA;
    /* the source of an instruction: the same offset of any kernel object of that name (the
     * same binary); kernels by their total descending, instructions by samples descending */
    snprintf(sql, sizeof sql,
             PCS_BASE_CTE(", p.offset", ", p.offset")
             ", i AS (SELECT deviceId, kname, offset, " PCS_PIVOT " FROM x GROUP BY deviceId, kname, offset),"
             " kt AS (SELECT deviceId, kname, sum(c) AS ktotal FROM x GROUP BY deviceId, kname),"
             " src AS (SELECT kn.deviceId, kn.kname, pi.offset, max(f.value || ':' || pi.line) AS loc"
             "  FROM PCS_INSTR pi JOIN kn ON kn.kernelId = pi.kernelId JOIN STRING_IDS f ON f.id = pi.fileId"
             "  WHERE pi.fileId != 0 GROUP BY kn.deviceId, kn.kname, pi.offset)"
             " SELECT i.*, kt.ktotal, src.loc FROM i JOIN kt USING (deviceId, kname)"
             " LEFT JOIN src USING (deviceId, kname, offset)"
             " ORDER BY kt.ktotal DESC, i.kname, i.deviceId, 4 DESC, i.offset",
             pa_report_name_mode(req), filt);
    sqlite3_stmt *st;
    if (pa_report_prepare_ze(db, req, sql, &st, err, errsz) != PA_REP_OK)
        return PA_REP_EDATA;
    bind_regex(req, st);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        /* columns: deviceId, kname, offset, total, 9 reasons, ktotal, loc */
        int64_t total = sqlite3_column_int64(st, 3), ktotal = sqlite3_column_int64(st, 4 + NREASONS);
        char ip[24];
        pa_table_add_sqlcol(t, st, 1, 0);
        int n = snprintf(ip, sizeof ip, "0x%llx", (unsigned long long)sqlite3_column_int64(st, 2));
        pa_table_add_str(t, ip, (size_t)n);
        pa_table_add_sqlcol(t, st, 5 + NREASONS, 0);
        pa_table_add_int(t, total);
        pa_table_add_double(t, ktotal ? 100.0 * (double)total / (double)ktotal : 0.0, 1);
        for (int i = 0; i < NREASONS; i++)
            pa_table_add_int(t, sqlite3_column_int64(st, 4 + i));
        pa_table_add_int(t, sqlite3_column_int64(st, 0));
    }
    if (rc != SQLITE_DONE)
        return pa_report_step_error(db, st, req->def->name, err, errsz);
    sqlite3_finalize(st);
    pa_report_limit_rows(req, t);
    return PA_REP_OK;
}

PA_REPORT_DEF(r_pcs_sum, "pc_sampling_sum", "PC Sampling (EU Stall) Kernel Summary", "stall_sampling_sum", NULL,
    "EU-stall samples (PROFAGENT_PC_SAMPLING=1, or the PTI PC-sampling API under the agent) per\n"
    "kernel name and device, samples descending: the count per stall reason (columns as unitrace's\n"
    "--stall-sampling CSV: Active, ControlStall, ...) and the dominant reason. Samples (%) is of the\n"
    "kernels listed; samples whose IP lay in no known kernel are not listed (see PCS_DEVICES.unmapped\n"
    "and the exit summary). Names demangled unless base/mangled; kernel=<regex> matches the name shown.",
    opts_pcs, cols_sum, produce_sum);
PA_REPORT_DEF(r_pcs_instr, "pc_sampling_instr", "PC Sampling (EU Stall) Instruction Summary", "stall_sampling_instr",
    NULL,
    "EU-stall samples per kernel and instruction (IP = byte offset from the kernel's base address,\n"
    "hex, as unitrace prints it), with the instruction's source file:line when the kernel was built\n"
    "with debug info (-g), the count per stall reason and the share of the kernel's samples. Kernels\n"
    "by samples descending, their instructions by samples descending; rows= limits the lines.",
    opts_pcs, cols_instr, produce_instr);

const pa_report_def_t *const pa_reports_pcs[] = {&r_pcs_sum, &r_pcs_instr, NULL};
