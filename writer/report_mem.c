/* report_mem.c - device_memory_usage_summary / _detail (spec 2.3.1) and the exit summary's memory section. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../common/pa_callstack.h"
#include "report_util.h"

/* CLI configuration (--callstack-group-config, --filter-time), set before reports run. */
static pa_cs_rules_t *mem_cli_rules;
static uint64_t mem_from_ns, mem_to_ns;

int pa_report_mem_add_group_rule(const char *rule, FILE *err)
{
    if (!mem_cli_rules && !(mem_cli_rules = pa_cs_rules_new()))
        return -1;
    pa_cs_rules_set_origin(mem_cli_rules, "--callstack-group-config");
    return pa_cs_rules_add(mem_cli_rules, rule, err);
}

void pa_report_mem_set_time_range(uint64_t from_ns, uint64_t to_ns)
{
    mem_from_ns = from_ns;
    mem_to_ns = to_ns;
}

enum mem_mode { MODE_ALLOC_COUNT, MODE_ALLOC_SIZE, MODE_UNREL_COUNT, MODE_UNREL_SIZE };

/* Text of a STRING id through `sql` (one bound id), malloc'd; NULL when absent. */
static char *mem_string(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    char *s = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return NULL;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_TEXT)
        s = strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return s;
}

/* The rule set: the CLI's --callstack-group-config rules when `use_cli` and given (they
 * replace the agent's), else the agent's PROFAGENT_CALLSTACK_GROUPS stored in the DB, else the
 * built-in ones (application = the recorded executable). *custom: user rules in use. */
static pa_cs_rules_t *mem_rules(sqlite3 *db, int use_cli, int *owned, int *custom)
{
    *owned = 0;
    *custom = 1;
    if (use_cli && pa_cs_rules_count(mem_cli_rules) > 0)
        return mem_cli_rules;
    pa_cs_rules_t *rs = pa_cs_rules_new();
    if (!rs)
        return NULL;
    *owned = 1;
    pa_cs_rules_set_origin(rs, "PROFAGENT_CALLSTACK_GROUPS");
    char *text = mem_string(db, "SELECT s.value FROM DEVICE_MEMORY_INFO i JOIN STRING_IDS s ON s.id = i.groupRulesId");
    if (text && *text)
        pa_cs_rules_add_list(rs, text, use_cli ? NULL : stderr); /* the agent already named bad ones */
    free(text);
    if (pa_cs_rules_count(rs) == 0) {
        *custom = 0;
        char *exe = mem_string(db, "SELECT s.value FROM DEVICE_MEMORY_INFO i JOIN STRING_IDS s ON s.id = i.exeId");
        pa_cs_rules_add_defaults(rs, exe);
        free(exe);
    }
    return rs;
}

/* Memory records the agent lost (SESSION_COUNTERS mem_records_dropped; 0 in older DBs). */
static uint64_t mem_dropped(sqlite3 *db)
{
    sqlite3_stmt *st;
    uint64_t v = 0;
    if (sqlite3_prepare_v2(db, "SELECT value FROM SESSION_COUNTERS WHERE name = 'mem_records_dropped'",
                           -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            v = (uint64_t)sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    return v;
}

/* One stderr warning per CLI run when the DB's memory records are incomplete. */
static void mem_warn_dropped(sqlite3 *db)
{
    static int warned;
    uint64_t n = mem_dropped(db);
    if (n && !warned) {
        warned = 1;
        fprintf(stderr, "profagent: stats: warning: %" PRIu64 " device-memory record%s lost while recording"
                " (thread ring full): allocations/frees are missing, leak results are incomplete\n",
                n, n == 1 ? " was" : "s were");
    }
}

/* Group list of every call chain, indexed by chain id (0 = no stack = "others"). */
typedef struct mem_groups { char **g; size_t n; } mem_groups_t;

static void mem_groups_free(mem_groups_t *mg)
{
    for (size_t i = 0; i < mg->n; i++)
        free(mg->g[i]);
    free(mg->g);
    mg->g = NULL;
    mg->n = 0;
}

static const char *mem_group_of(const mem_groups_t *mg, int64_t chain)
{
    return chain > 0 && (size_t)chain < mg->n && mg->g[chain] ? mg->g[chain] : "others";
}

/* One frame's module and function copied into one allocation (SQLite text is transient). */
static char *mem_frame_copy(pa_cs_frame_t *f, const unsigned char *m, const unsigned char *fn)
{
    const char *ms = m ? (const char *)m : "", *fs = fn ? (const char *)fn : "";
    size_t ml = strlen(ms), fl = strlen(fs);
    char *b = malloc(ml + fl + 2);
    if (!b)
        return NULL;
    memcpy(b, ms, ml + 1);
    memcpy(b + ml + 1, fs, fl + 1);
    f->module = b;
    f->function = b + ml + 1;
    return b;
}

static int mem_groups_set(mem_groups_t *mg, int64_t id, const pa_cs_rules_t *rs, int first_only,
                          const pa_cs_frame_t *fr, size_t nf)
{
    if ((size_t)id >= mg->n) {
        size_t nn = (size_t)id + 64;
        char **g = realloc(mg->g, nn * sizeof(*g));
        if (!g)
            return -1;
        memset(g + mg->n, 0, (nn - mg->n) * sizeof(*g));
        mg->g = g;
        mg->n = nn;
    }
    char buf[1024];
    pa_cs_group_list(rs, fr, nf, first_only, buf, sizeof buf);
    free(mg->g[id]);
    mg->g[id] = strdup(buf);
    return mg->g[id] ? 0 : -1;
}

static int mem_groups_load(sqlite3 *db, const pa_cs_rules_t *rs, int first_only, mem_groups_t *mg)
{
    memset(mg, 0, sizeof *mg);
    sqlite3_stmt *st;
    /* root first (parent -> child): highest depth first */
    if (sqlite3_prepare_v2(db, "SELECT c.id, m.value, f.value FROM CALLCHAINS c"
                               " LEFT JOIN STRING_IDS m ON m.id = c.module"
                               " LEFT JOIN STRING_IDS f ON f.id = c.function"
                               " ORDER BY c.id, c.stackDepth DESC", -1, &st, NULL) != SQLITE_OK)
        return -1;
    pa_cs_frame_t fr[PA_CALLSTACK_MAX_DEPTH + 64];
    char *own[PA_CALLSTACK_MAX_DEPTH + 64];
    size_t nf = 0;
    int64_t cur = 0;
    int rc = 0, step;
    while (rc == 0) {
        step = sqlite3_step(st);
        int64_t id = step == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
        if (id != cur && cur > 0) /* chain `cur` is complete */
            rc = mem_groups_set(mg, cur, rs, first_only, fr, nf);
        if (id != cur) {
            for (size_t i = 0; i < nf; i++)
                free(own[i]);
            nf = 0;
            cur = id;
        }
        if (step != SQLITE_ROW) {
            rc = rc ? rc : step == SQLITE_DONE ? 0 : -1;
            break;
        }
        if (nf < sizeof fr / sizeof fr[0] &&
            (own[nf] = mem_frame_copy(&fr[nf], sqlite3_column_text(st, 1), sqlite3_column_text(st, 2))))
            nf++;
    }
    for (size_t i = 0; i < nf; i++)
        free(own[i]);
    sqlite3_finalize(st);
    return rc;
}

/* Absolute window [lo, hi] (ns, CLOCK_MONOTONIC) from the CLI's time range. */
static void mem_window(sqlite3 *db, int use_cli, int64_t *lo, int64_t *hi)
{
    int64_t start = 0;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT value FROM META WHERE key = 'start_mono_ns'", -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            start = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    *lo = INT64_MIN;
    *hi = INT64_MAX;
    if (use_cli && mem_from_ns)
        *lo = start + (int64_t)mem_from_ns;
    if (use_cli && mem_to_ns)
        *hi = start + (int64_t)mem_to_ns;
}

typedef struct mem_row { int64_t pid, device; const char *groups; uint64_t usage; } mem_row_t;

static int mem_row_cmp(const void *pa, const void *pb)
{
    const mem_row_t *a = pa, *b = pb;
    if (a->usage != b->usage)
        return a->usage > b->usage ? -1 : 1;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    if (a->device != b->device) /* host memory (-1) after every device */
        return (uint64_t)a->device < (uint64_t)b->device ? -1 : 1;
    return strcmp(a->groups, b->groups);
}

/* Summary rows (usage per pid/device/group list), sorted by usage descending. Group strings
 * point into mg. Returns 0 or -1. */
static int mem_summary_rows(sqlite3 *db, const mem_groups_t *mg, int mode, int use_cli,
                            mem_row_t **rows, size_t *nrows)
{
    int64_t lo, hi;
    mem_window(db, use_cli, &lo, &hi);
    int unrel = mode == MODE_UNREL_COUNT || mode == MODE_UNREL_SIZE;
    char sql[640];
    snprintf(sql, sizeof sql,
             "SELECT globalTid >> 32, ifnull(deviceId, -1), callchainId, count(*), sum(size)"
             " FROM DEVICE_MEMORY WHERE op = 0 AND result = 0 AND start >= ?1 AND start <= ?2%s"
             " GROUP BY 1, 2, 3",
             unrel ? " AND (freeTime IS NULL OR freeTime > ?2)" : "");
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, lo);
    sqlite3_bind_int64(st, 2, hi);
    mem_row_t *r = NULL;
    size_t n = 0, cap = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        mem_row_t k = {sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                       mem_group_of(mg, sqlite3_column_int64(st, 2)), 0};
        uint64_t v = (mode == MODE_ALLOC_COUNT || mode == MODE_UNREL_COUNT)
                         ? (uint64_t)sqlite3_column_int64(st, 3) : (uint64_t)sqlite3_column_int64(st, 4);
        size_t i = 0;
        while (i < n && !(r[i].pid == k.pid && r[i].device == k.device && !strcmp(r[i].groups, k.groups)))
            i++;
        if (i == n) {
            if (n == cap) {
                cap = cap ? cap * 2 : 32;
                mem_row_t *nr = realloc(r, cap * sizeof(*nr));
                if (!nr) {
                    free(r);
                    sqlite3_finalize(st);
                    return -1;
                }
                r = nr;
            }
            r[n++] = k;
        }
        r[i].usage += v;
    }
    sqlite3_finalize(st);
    if (n)
        pa_sort(r, n, sizeof *r, mem_row_cmp);
    *rows = r;
    *nrows = n;
    return 0;
}

static int mem_mode_of(const pa_report_req_t *req, const char *const *names, int def)
{
    const pa_opt_val_t *v = pa_req_opt(req, "usage-mode");
    for (int i = 0; v && v->set && v->s && names[i]; i++)
        if (!strcmp(v->s, names[i]))
            return i;
    return def;
}

static const char *const mem_sum_modes[] = {"alloc-count", "alloc-size", "unreleased-count",
                                            "unreleased-size", NULL};
static const char *const mem_det_modes[] = {"all", "unreleased", NULL};

static int mem_prepare(sqlite3 *db, const pa_report_req_t *req, int first_only, mem_groups_t *mg,
                       char *err, size_t errsz)
{
    int owned, custom;
    mem_warn_dropped(db);
    pa_cs_rules_t *rs = mem_rules(db, 1, &owned, &custom);
    int rc = rs ? mem_groups_load(db, rs, first_only, mg) : -1;
    if (owned)
        pa_cs_rules_free(rs);
    if (rc != 0) {
        snprintf(err, errsz, "report '%s': cannot read call chains: %s (is this a DB with device memory"
                 " records?)", req->def->name, sqlite3_errmsg(db));
        return PA_REP_EDATA;
    }
    return PA_REP_OK;
}

static int mem_produce_summary(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err,
                               size_t errsz)
{
    const pa_opt_val_t *ff = pa_req_opt(req, "match-first-group");
    mem_groups_t mg;
    int rc = mem_prepare(db, req, ff && ff->set, &mg, err, errsz);
    if (rc)
        return rc;
    mem_row_t *rows = NULL;
    size_t n = 0;
    if (mem_summary_rows(db, &mg, mem_mode_of(req, mem_sum_modes, MODE_UNREL_SIZE), 1, &rows, &n) != 0) {
        snprintf(err, errsz, "report '%s': %s", req->def->name, sqlite3_errmsg(db));
        mem_groups_free(&mg);
        return PA_REP_EDATA;
    }
    for (size_t i = 0; i < n; i++) {
        pa_table_add_int(t, rows[i].pid);
        if (rows[i].device < 0)
            pa_table_add_none(t);
        else
            pa_table_add_int(t, rows[i].device);
        pa_table_add_str(t, rows[i].groups, strlen(rows[i].groups));
        pa_table_add_int(t, (int64_t)rows[i].usage);
    }
    free(rows);
    mem_groups_free(&mg);
    return PA_REP_OK;
}

/* Access Flag: the memory kind of an allocation, "free" for a free; "(failed)" when the call
 * failed, "(unknown)" for a free of an address never allocated under the agent. */
static void mem_access_flag(pa_table_t *t, int op, int kind, int result, int known)
{
    static const char *const kinds[] = {"unknown", "host", "device", "shared"};
    char buf[64];
    /* a free of an address never allocated under the agent is "(unknown)" even when the driver
     * failed it (it always does): that is what it is, as docs/memory.md and the summary say */
    snprintf(buf, sizeof buf, "%s%s", op ? "free" : kinds[kind >= 0 && kind <= 3 ? kind : 0],
             op && !known ? " (unknown)" : result ? " (failed)" : "");
    pa_table_add_str(t, buf, strlen(buf));
}

static int mem_produce_detail(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err,
                              size_t errsz)
{
    mem_groups_t mg;
    int rc = mem_prepare(db, req, 0, &mg, err, errsz);
    if (rc)
        return rc;
    int all = mem_mode_of(req, mem_det_modes, 1) == 0;
    int64_t lo, hi;
    mem_window(db, 1, &lo, &hi);
    char sql[768];
    snprintf(sql, sizeof sql,
             "SELECT globalTid >> 32, deviceId, callchainId, start, globalTid & 4294967295, contextId,"
             " memory, size, op, memKind, result, allocEventId IS NOT NULL, seq FROM"
             " (SELECT *, row_number() OVER (ORDER BY start, eventId) AS seq FROM DEVICE_MEMORY)"
             " WHERE start >= ?1 AND start <= ?2 %s ORDER BY start, eventId",
             all ? "" : "AND op = 0 AND result = 0 AND (freeTime IS NULL OR freeTime > ?2)");
    sqlite3_stmt *st;
    if ((rc = pa_report_prepare(db, sql, &st, req->def->name, err, errsz)) != 0) {
        mem_groups_free(&mg);
        return rc;
    }
    sqlite3_bind_int64(st, 1, lo);
    sqlite3_bind_int64(st, 2, hi);
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        char hex[32];
        pa_table_add_sqlcol(t, st, 0, 0);
        pa_table_add_sqlcol(t, st, 1, 0);
        const char *g = mem_group_of(&mg, sqlite3_column_int64(st, 2));
        pa_table_add_str(t, g, strlen(g));
        pa_table_add_sqlcol(t, st, 3, 0);
        pa_table_add_sqlcol(t, st, 4, 0);
        if (sqlite3_column_int64(st, 5) > 0)
            pa_table_add_int(t, sqlite3_column_int64(st, 5));
        else
            pa_table_add_none(t);
        snprintf(hex, sizeof hex, "0x%" PRIx64, (uint64_t)sqlite3_column_int64(st, 6));
        pa_table_add_str(t, hex, strlen(hex));
        pa_table_add_sqlcol(t, st, 7, 0);
        mem_access_flag(t, sqlite3_column_int(st, 8), sqlite3_column_int(st, 9), sqlite3_column_int(st, 10),
                        sqlite3_column_int(st, 11));
        pa_table_add_sqlcol(t, st, 12, 0);
    }
    mem_groups_free(&mg);
    if (step != SQLITE_DONE)
        return pa_report_step_error(db, st, req->def->name, err, errsz);
    sqlite3_finalize(st);
    return PA_REP_OK;
}

static const pa_report_opt_t mem_sum_opts[] = {
    {"match-first-group", PA_OPT_FLAG, NULL,
     "Optional argument. When used with --callstack-group-config:\n"
     "If given, only matching the first callstack group.\n"
     "Default is matching all callstack group.", NULL},
    {"usage-mode", PA_OPT_ENUM, "<mode>",
     "Possible values are 'alloc-size', 'unreleased-size', 'alloc-count' or 'unreleased-count'.\n"
     "Specify the memory usage mode.\n"
     "If 'alloc-size', statistic overall allocated device memory usage.\n"
     "If 'unreleased-size', statistic allocated but not freed device memory usage.\n"
     "If 'alloc-count', statistic overall allocated device memory count.\n"
     "If 'unreleased-count', statistic allocated but not freed device memory count.\n"
     "Default is 'unreleased-size'.\n"
     "Use --filter-time to specify report time range.\n"
     "Use --callstack-group-config to create report group configuration.", mem_sum_modes},
};

static const pa_report_col_t mem_sum_cols[] = {
    {"PID", "Process identifier"},
    {"Device ID", "Device identifier (Level Zero enumeration index; '-' for host memory)"},
    {"Group List", "Memory usage belonged group list, splited by '/'"},
    {"Memory Usage", "Device memory usage [bytes] (a count in the *-count modes)"},
};

static const pa_report_opt_t mem_det_opts[] = {
    {"usage-mode", PA_OPT_ENUM, "<mode>",
     "Possible values are 'all' or 'unreleased'.\n"
     "If 'all', export memory traces of both allocations and frees.\n"
     "If 'unreleased', export memory traces of unreleased allocations (potential leaks).\n"
     "Default is 'unreleased'.\n"
     "Use --filter-time to specify report time range.\n"
     "Use --callstack-group-config to create report group configuration.", mem_det_modes},
};

static const pa_report_col_t mem_det_cols[] = {
    {"PID", "Process identifier"},
    {"Device ID", "Device identifier (Level Zero enumeration index; '-' for host memory)"},
    {"Group List", "List of groups the memory usage belongs to, separated by '/'"},
    {"Time (ns)", "Memory usage timestamp (start of the call, CLOCK_MONOTONIC)"},
    {"TID", "Thread identifier"},
    {"Context ID", "Context identifier: the session's small context id, numbered in order of\n"
                   "first use (as in kern_gb_trace, gpu_trace, hgtx_kern_trace); '-' when none"},
    {"Memory", "Memory identifier (the address)"},
    {"Size (bytes)", "Memory usage size (of the allocation a free released)"},
    {"Access Flag", "Memory kind of an allocation (host, device, shared) or 'free';\n"
                    "'(failed)' when the call failed, '(unknown)' for a free of an unknown address"},
    {"Event ID", "Memory usage event identifier: the event's number in time order among all\n"
                 "allocations and frees of the session (1 = the first), whatever the filters"},
};

static const pa_report_def_t mem_report_summary = {
    .name = "device_memory_usage_summary",
    .title = "Device Memory Usage Summary",
    .description =
        "Group and statistic device memory usage of specified mode,\n"
        "If 'alloc-size' mode,  display allocated device memory usage summary.\n"
        "If 'alloc-count' mode, display allocated device memory count summary.\n"
        "If 'unreleased-size' mode, display allocated but not freed device memory usage summary.\n"
        "If 'unreleased-count' mode, display allocated but not freed device memory count summary.\n"
        "Rows are per process, device and group list, sorted by usage, descending. A record\n"
        "matching several groups is listed under all of them joined with '/' in rule order;\n"
        "unmatched records go to 'others'. Failed allocations are never counted.\n"
        "Group rules: --callstack-group-config \"name=frame_regex1/frame_regex2/...\" (PCRE2,\n"
        "partial match of a frame's library or function signature, parent frame first, other\n"
        "frames may sit between). Without rules the built-in groups apply: level_zero, sycl,\n"
        "python, application.",
    .opts = mem_sum_opts, .nopts = 2,
    .cols = mem_sum_cols, .ncols = 4,
    .produce = mem_produce_summary,
};

static const pa_report_def_t mem_report_detail = {
    .name = "device_memory_usage_detail",
    .title = "Device Memory Usage Detail",
    .description =
        "Outputs each unreleased memory usage record (or, with usage-mode=all, every allocation\n"
        "and free) and the group(s) it belongs to, sorted by time.",
    .opts = mem_det_opts, .nopts = 1,
    .cols = mem_det_cols, .ncols = 10,
    .produce = mem_produce_detail,
};

const pa_report_def_t *const pa_reports_mem[] = {&mem_report_summary, &mem_report_detail, NULL};

/* ---- exit summary section ---- */

#define MEM_TOP 3
#define MEM_TOP_FRAMES 12

struct pa_mem_exit {
    mem_groups_t mg;
    mem_row_t *rows; size_t nrows;
    uint64_t allocs, failed, frees, unknown, unrel_count, unrel_bytes;
    struct { char *stack; uint64_t bytes, count; } top[MEM_TOP];
    size_t ntop;
    int custom_rules;
    uint64_t dropped;
    uint64_t failed_frees;  /* failed frees of live allocations (which stay live) */
};

static uint64_t mem_count(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    uint64_t v = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            v = (uint64_t)sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    return v;
}

/* The innermost MEM_TOP_FRAMES frames of chain `id`, one per line. */
static char *mem_stack_text(sqlite3 *db, int64_t id)
{
    sqlite3_stmt *st;
    char *buf = NULL;
    size_t sz = 0;
    FILE *f = open_memstream(&buf, &sz);
    if (!f)
        return NULL;
    if (sqlite3_prepare_v2(db, "SELECT s.value FROM CALLCHAINS c JOIN STRING_IDS s ON s.id = c.stack"
                               " WHERE c.id = ?1 ORDER BY c.stackDepth", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, id);
        int n = 0;
        while (sqlite3_step(st) == SQLITE_ROW && n++ < MEM_TOP_FRAMES)
            fprintf(f, "        %s\n", (const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
        if (n == 0)
            fprintf(f, "        (no call stack)\n");
    }
    fclose(f);
    return buf;
}

pa_mem_exit_t *pa_mem_exit_compute(sqlite3 *db)
{
    if (mem_count(db, "SELECT count(*) FROM DEVICE_MEMORY") == 0 && mem_dropped(db) == 0)
        return NULL;
    pa_mem_exit_t *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    int owned;
    pa_cs_rules_t *rs = mem_rules(db, 0, &owned, &e->custom_rules);
    e->dropped = mem_dropped(db);
    if (rs)
        mem_groups_load(db, rs, 0, &e->mg);
    if (owned)
        pa_cs_rules_free(rs);
    mem_summary_rows(db, &e->mg, MODE_UNREL_SIZE, 0, &e->rows, &e->nrows);
    e->allocs = mem_count(db, "SELECT count(*) FROM DEVICE_MEMORY WHERE op = 0");
    e->failed = mem_count(db, "SELECT count(*) FROM DEVICE_MEMORY WHERE op = 0 AND result != 0");
    e->frees = mem_count(db, "SELECT count(*) FROM DEVICE_MEMORY WHERE op = 1");
    e->unknown = mem_count(db, "SELECT count(*) FROM DEVICE_MEMORY WHERE op = 1 AND allocEventId IS NULL");
    e->failed_frees = mem_count(db, "SELECT count(*) FROM DEVICE_MEMORY WHERE op = 1 AND result != 0"
                                    " AND allocEventId IS NOT NULL");
    e->unrel_count = mem_count(db, "SELECT count(*) FROM DEVICE_MEMORY WHERE op = 0 AND result = 0"
                                   " AND freeEventId IS NULL");
    e->unrel_bytes = mem_count(db, "SELECT ifnull(sum(size), 0) FROM DEVICE_MEMORY WHERE op = 0"
                                   " AND result = 0 AND freeEventId IS NULL");
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT callchainId, sum(size), count(*) FROM DEVICE_MEMORY WHERE op = 0"
                               " AND result = 0 AND freeEventId IS NULL GROUP BY callchainId"
                               " ORDER BY 2 DESC, 1 LIMIT 3", -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW && e->ntop < MEM_TOP) {
            e->top[e->ntop].stack = mem_stack_text(db, sqlite3_column_int64(st, 0));
            e->top[e->ntop].bytes = (uint64_t)sqlite3_column_int64(st, 1);
            e->top[e->ntop].count = (uint64_t)sqlite3_column_int64(st, 2);
            e->ntop++;
        }
        sqlite3_finalize(st);
    }
    return e;
}

void pa_mem_exit_print(FILE *out, const pa_mem_exit_t *e)
{
    if (!out || !e)
        return;
    char ff[64] = "";
    if (e->failed_frees)
        snprintf(ff, sizeof ff, ", %" PRIu64 " failed: allocation kept", e->failed_frees);
    fprintf(out, "\nDevice memory: %" PRIu64 " allocation calls (%" PRIu64 " succeeded, %" PRIu64
            " failed: not counted as usage), %" PRIu64 " frees (%" PRIu64 " of unknown addresses%s), %" PRIu64
            " unreleased = %" PRIu64 " bytes\n",
            e->allocs, e->allocs - e->failed, e->failed, e->frees, e->unknown, ff, e->unrel_count, e->unrel_bytes);
    if (e->dropped)
        fprintf(out, "WARNING: %" PRIu64 " device-memory record%s lost (thread ring full): allocations/frees"
                " are missing, the leak figures below are incomplete\n", e->dropped, e->dropped == 1 ? " was" : "s were");
    if (e->nrows) {
        fprintf(out, "Unreleased device memory by group (%s rules; see device_memory_usage_summary):\n",
                e->custom_rules ? "PROFAGENT_CALLSTACK_GROUPS" : "built-in");
        /* the report's column order (device_memory_usage_summary); Group List as wide as its
         * longest entry so Memory Usage lines up */
        int gw = (int)strlen("Group List");
        for (size_t i = 0; i < e->nrows; i++)
            if ((int)strlen(e->rows[i].groups) > gw)
                gw = (int)strlen(e->rows[i].groups);
        fprintf(out, "  %8s  %9s  %-*s  %16s\n", "PID", "Device ID", gw, "Group List", "Memory Usage");
        for (size_t i = 0; i < e->nrows; i++) {
            char dev[24];
            if (e->rows[i].device < 0)
                snprintf(dev, sizeof dev, "-");
            else
                snprintf(dev, sizeof dev, "%" PRId64, e->rows[i].device);
            fprintf(out, "  %8" PRId64 "  %9s  %-*s  %16" PRIu64 "\n", e->rows[i].pid, dev, gw,
                    e->rows[i].groups, e->rows[i].usage);
        }
    }
    for (size_t i = 0; i < e->ntop; i++)
        fprintf(out, "Leak #%zu: %" PRIu64 " bytes in %" PRIu64 " allocation%s from:\n%s", i + 1,
                e->top[i].bytes, e->top[i].count, e->top[i].count == 1 ? "" : "s",
                e->top[i].stack ? e->top[i].stack : "");
}

void pa_mem_exit_free(pa_mem_exit_t *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->ntop; i++)
        free(e->top[i].stack);
    free(e->rows);
    mem_groups_free(&e->mg);
    free(e);
}
