/* report_util.h - helpers for report producers (internal to writer/, usable by every report file). */
#ifndef PA_REPORT_UTIL_H
#define PA_REPORT_UTIL_H

#include "writer_internal.h"

/*! pa_table_add_sqlcol() : appends column `col` of the current row: INTEGER -> int, FLOAT ->
 *  double with `prec` digits, NULL -> "-", TEXT/BLOB -> string (exact bytes). */
void pa_table_add_sqlcol(pa_table_t *t, sqlite3_stmt *st, int col, int prec);

/*! pa_report_prepare() : prepares `sql`; on failure sets err ("report 'x': ...") and returns
 *  PA_REP_EDATA. */
int pa_report_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, const char *report,
                      char *err, size_t errsz);

/*! pa_report_step_error() : sets err from the DB error, finalizes st, returns PA_REP_EDATA. */
int pa_report_step_error(sqlite3 *db, sqlite3_stmt *st, const char *report, char *err, size_t errsz);

/*! pa_report_stat_rows() : runs st (finalized here) whose columns are: total (int, ns), count,
 *  then anything else (avg, med, ...); emits Time (%) (1 digit, of the total over all rows
 *  the query returned, spec 2.3.13 "of the total for all ranges listed"; rows= does not change
 *  it, as in nsys), Total, count, the rest as is (doubles truncated, pa_table_add_double()
 *  with 0 digits); then applies rows=. Returns PA_REP_OK / PA_REP_EDATA. */
int pa_report_stat_rows(sqlite3 *db, sqlite3_stmt *st, const pa_report_req_t *req,
                        pa_table_t *t, char *err, size_t errsz);

/*! pa_report_limit_rows() : keeps the first `rows=` rows when the option is set. */
void pa_report_limit_rows(const pa_report_req_t *req, pa_table_t *t);

/*! pa_report_name_mode() : kernel name mode of the base/mangled flags, as ze_kname() takes it:
 *  0 demangled (default), 1 base, 2 mangled (mangled wins when both are set). */
int pa_report_name_mode(const pa_report_req_t *req);

/*! pa_report_device_filter() : appends " AND o.deviceId IN (id,..)" to the NUL-terminated
 *  `buf` (capacity `sz` bytes) when the device= option is set; nothing otherwise. Returns 0, or
 *  -1 when the list does not fit (buf then holds a truncated clause: do not run it). */
int pa_report_device_filter(const pa_report_req_t *req, char *buf, size_t sz);

/*! pa_report_device_clause() : pa_report_device_filter() that, when the list does not fit, sets
 *  err ("report 'x': device list too long") and returns PA_REP_EDATA; else PA_REP_OK. */
int pa_report_device_clause(const pa_report_req_t *req, char *buf, size_t sz, char *err, size_t errsz);

/*! pa_report_check_devices() : when the device= option is set, every id it names must be a device
 *  of the DB (ZE_DEVICES, or a deviceId of ZE_OPS); otherwise err = "report 'x': device=7: no
 *  device 7 in this database; devices present: 0, 1" and PA_REP_EUSAGE. PA_REP_OK when the
 *  option is not set or every id exists (called by pa_report_run() for every report). */
int pa_report_check_devices(sqlite3 *db, const pa_report_req_t *req, char *err, size_t errsz);

/*! pa_report_prepare_ze() : registers ze_kname() on db (see writer_ze.h), then prepares `sql`
 *  like pa_report_prepare(). Returns PA_REP_OK, or PA_REP_EDATA with err set. */
int pa_report_prepare_ze(sqlite3 *db, const pa_report_req_t *req, const char *sql, sqlite3_stmt **st,
                         char *err, size_t errsz);

/* rows=<limit> help, shared by every report (report.c adds the option to those not declaring it):
 * Time (%) is the share of the whole report, as in nsys, so the listed rows keep their values. */
#define PA_REPORT_ROWS_HELP "Optional argument. Limits the number of rows in the output (the first\n" \
    "rows after the report's sorting). Time (%) stays each row's share of the\n" \
    "whole report (all rows, before the limit), as in nsys.\nDefault is no limit."

/* Kernel naming and device options, shared by the Level Zero and HGTX-device reports (values
 * read by pa_report_name_mode() and pa_report_device_filter()). */
#define PA_REPORT_OPT_BASE {"base", PA_OPT_FLAG, "", "Kernel base name (function name only, without parameters).", NULL}
#define PA_REPORT_OPT_MANGLED {"mangled", PA_OPT_FLAG, "", "Kernel mangled name (as given to zeKernelCreate).", NULL}
#define PA_REPORT_OPT_DEVICE {"device", PA_OPT_IDLIST, "<dev_list>", "Device ids to include, separated by '/'.\nDefault is all devices.", NULL}

/* Defines `static const pa_report_def_t var` with up to two aliases (NULL for none); opts and
 * cols are arrays, their counts taken from their sizes. */
#define PA_REPORT_NELEM(a) (sizeof a / sizeof a[0])
#define PA_REPORT_DEF(var, nm, ttl, a0, a1, desc, op, cl, fn) \
    static const pa_report_def_t var = { .name = nm, .title = ttl, .aliases = { a0, a1 }, .description = desc, \
        .opts = op, .nopts = PA_REPORT_NELEM(op), .cols = cl, .ncols = PA_REPORT_NELEM(cl), .produce = fn }
/* The same for a report whose rows may stream (pa_report_def .streams: fn only appends, in order). */
#define PA_REPORT_DEF_STREAMS(var, nm, ttl, a0, a1, desc, op, cl, fn) \
    static const pa_report_def_t var = { .name = nm, .title = ttl, .aliases = { a0, a1 }, .description = desc, \
        .opts = op, .nopts = PA_REPORT_NELEM(op), .cols = cl, .ncols = PA_REPORT_NELEM(cl), .produce = fn, \
        .streams = 1 }

/* ---- push/pop range stacks (report_stack.c) ---- */

/* RangeStack and direct children of push/pop ranges, read as rows stream by in start (or id)
 * order: per thread, the stack of the ranges last seen open (ids and the string so far); a range
 * whose parent is not on it has its ancestors looked up by primary key. Memory: the nesting depth
 * per thread, not the number of ranges. */
/* slen: the string's length through it; walked: pushed as an ancestor found by lookups */
typedef struct pa_rs_entry { int64_t id; size_t slen; int walked; } pa_rs_entry_t;
typedef struct pa_rs_thread {
    int64_t gtid;
    pa_rs_entry_t *v; size_t n, cap;
    size_t nwalked; /* walked entries on the stack */
    char *str; size_t scap;
} pa_rs_thread_t;
typedef struct pa_kid_agg { int64_t parent, n, dur; } pa_kid_agg_t;

typedef struct pa_range_stacks {
    sqlite3 *db;
    sqlite3_stmt *up;   /* parentId, style of a range by id */
    sqlite3_stmt *kids; /* children count and total by parentId (index HGTX_RANGES_parent) */
    pa_kid_agg_t *agg; size_t nagg; /* without that index: the children totals, sorted by parent */
    pa_rs_thread_t *th; size_t nth, capth; /* sorted by gtid */
    int64_t *chain; size_t capchain;
    int failed;
} pa_range_stacks_t;

/*! pa_range_stacks_open() : prepares the lookups on `db` (a DB without the index on
 *  HGTX_RANGES(parentId), e.g. one still being written, gets the children totals in one grouped
 *  pass instead: memory per range with children). Returns PA_REP_OK, or PA_REP_EDATA with err
 *  set ("report '<report>': ..."). */
int pa_range_stacks_open(sqlite3 *db, pa_range_stacks_t *s, const char *report, char *err, size_t errsz);

/*! pa_range_stacks_get() : RangeStack of push/pop range `id` (spec 2.3.25): ":root:...:parent:id",
 *  the parentId links walked up to a range whose parent is not a push/pop range in the DB (which
 *  starts its own stack); `parent` its parentId, `gtid` its thread. Cheapest when called in start
 *  order. Returns a pointer valid until the next call, *len its length; NULL when out of memory
 *  or a lookup failed (s->failed set). */
const char *pa_range_stacks_get(pa_range_stacks_t *s, int64_t id, int64_t parent, int64_t gtid, size_t *len);

/*! pa_range_stacks_children() : the number of direct push/pop children of range `id` and the
 *  total of their durations in ns (a child still open at exit counts, with no duration).
 *  0, or -1 when the lookup failed (s->failed set). */
int pa_range_stacks_children(pa_range_stacks_t *s, int64_t id, int64_t *n, int64_t *dur);

void pa_range_stacks_close(pa_range_stacks_t *s);

/* Statistics columns of pa_report_stat_rows() over the SQL expression x (ns or bytes): total,
 * count, avg, median, min, max, stddev (median/stddev from report_sqlfn.c). */
/* The pid of a row from its globalTid column `c` (pid << 32 | tid); a DB of schema version 1 stored
 * the bare tid in ZE_API/ZE_OPS, whose pid is the session's (META). Merged DBs hold many pids. */
#define PA_SQL_PID(c) "COALESCE(NULLIF((" c ") >> 32, 0), (SELECT CAST(value AS INTEGER) FROM META WHERE key = 'pid'))"
/* The globalTid of a row from such a column. */
#define PA_SQL_GTID(c) "(" PA_SQL_PID(c) " << 32 | ((" c ") & 4294967295))"

#define PA_SQL_STATS(x) "sum(" x "), count(*), sum(" x ") * 1.0 / count(*), median(" x "), min(" x "), max(" x "), stddev(" x ")"

/*! pa_report_opts_rows_pid_tid : the options rows=, process=, thread= (3 entries), for reports
 *  filtered with pa_sql_tid_filter(). */
extern const pa_report_opt_t pa_report_opts_rows_pid_tid[3];

/*! pa_report_tid_stat_sum() : runs `select` (SELECT ... WHERE ..., columns as
 *  pa_report_stat_rows() takes them, under 1800 bytes) + the process=/thread= filter on the
 *  global-tid column `gtid_col` + `tail` (GROUP BY / ORDER BY, under 200 bytes) and emits the
 *  rows with pa_report_stat_rows(). Returns PA_REP_OK, or PA_REP_EDATA with err set (filter
 *  list too long, SQL error). */
int pa_report_tid_stat_sum(sqlite3 *db, const pa_report_req_t *req, const char *select, const char *gtid_col,
                           const char *tail, pa_table_t *t, char *err, size_t errsz);

#endif
