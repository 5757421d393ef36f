/* writer_internal.h - what the writer's sources and reports share: bulk inserts, per-source
 * callbacks (the extension point for the ze and mem owners), the report table model. */
#ifndef PA_WRITER_INTERNAL_H
#define PA_WRITER_INTERNAL_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <stdlib.h>

#include "../common/pa_record.h"
#include "writer.h"

/*! pa_sort() : qsort() for arrays that may be empty: an empty report has no array at all
 *  (v == NULL, n == 0), and qsort's pointer is declared nonnull (UBSan reports the call). */
static inline void pa_sort(void *v, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(v, n, size, cmp);
}

#ifndef PA_WRITER_AGENT_VERSION
#define PA_WRITER_AGENT_VERSION "0.1.0"  /* META.agent_version and `profagent --version` */
#endif

/* Strings the writer itself interns (OSRT function names, summary keys) get ids from this
 * base up, so they never collide with the aggregator's ids (which count up from 1). */
#define PA_WRITER_STRING_BASE 0x40000000u
#define PA_WRITER_STRING_OSRT (PA_WRITER_STRING_BASE)            /* + enum pa_osrt_func */
#define PA_WRITER_STRING_SUMMARY (PA_WRITER_STRING_BASE + 0x10000u) /* + summary row index */

/*! pa_writer_summary_key_id() : STRING id under which SUMMARY_STATS names `row` (one of
 *  res->rows): the aggregator's key id, or PA_WRITER_STRING_SUMMARY + index without one. */
static inline int64_t pa_writer_summary_key_id(const pa_agg_results_t *res, const pa_stat_row_t *row)
{
    return row->key_id ? (int64_t)row->key_id : (int64_t)PA_WRITER_STRING_SUMMARY + (row - res->rows);
}

/* The name of a row whose name id has no STRING_IDS entry (a damaged DB): the row is still listed,
 * under this name (the damaged-DB warning of pa_report_db_open() says which ids are missing). */
#define PA_SQL_UNKNOWN_NAME(idcol) "('<unknown name id ' || " idcol " || '>')"

/* ---- bulk inserts: rows buffered per batch, inserted by one prepared statement ---- */

/* one value: SQLite type, text length; integer, double or text offset in the bulk's arena */
typedef struct pa_bulk_val { int32_t type; uint32_t len; union { int64_t i; double d; uint64_t off; } u; } pa_bulk_val_t;

typedef struct pa_bulk {
    sqlite3 *db;
    char *head;          /* "INSERT INTO T(a,b)" */
    int ncols, batch;    /* columns per row, rows buffered before they are inserted */
    sqlite3_stmt *st;    /* head SELECT c0,c1 FROM pa_bulk_rows(?1): every buffered row */
    /* statements for batches whose columns hold one integer or NULL in every row (bulk_stmt.c) */
    struct pa_bulk_shape *shapes;
    int nshapes, shapes_failed;
    pa_bulk_val_t *vals; size_t nvals;
    size_t room;         /* ncols * batch, 0 once failed: values before the batch is full */
    char *arena; size_t arena_len, arena_cap;
    uint64_t rows;       /* rows inserted so far */
    int failed;
    struct pa_bulk *next_live; /* list of initialised bulks (pa_bulk_flush_all) */
    int detached;        /* its connection was closed between two batches (pa_bulk_detach_all) */
} pa_bulk_t;

/*! pa_bulk_register() : the pa_bulk_rows virtual table on `db`, once per connection, before any
 *  bulk inserts through it. Returns 0 or -1 (logged). */
int pa_bulk_register(sqlite3 *db);
/*! pa_bulk_init() : inserts rows into `head`; head "T(a,b)" means "INSERT INTO T(a,b)", a head
 *  starting with INSERT ("INSERT OR IGNORE INTO T(a,b)") is used as is; `ncols` columns (1..32),
 *  `batch` rows buffered before they are inserted. Returns 0 or -1 (logged). */
int pa_bulk_init(pa_bulk_t *b, sqlite3 *db, const char *table_cols, int ncols, int batch);
/*! pa_bulk_int/_double/_null/_text() : the next column value of the current row; a row is
 *  complete after `ncols` values; a full batch is executed. Text bytes are copied (exact,
 *  length-delimited: NUL and 0xFF survive). Errors are sticky and reported by pa_bulk_finish(). */
void pa_bulk_int_last(pa_bulk_t *b, int64_t v);
static inline void pa_bulk_int(pa_bulk_t *b, int64_t v)
{
    if (b->nvals + 1 < b->room) { /* not the batch's last value (nor a failed bulk: room 0) */
        pa_bulk_val_t *x = &b->vals[b->nvals++];
        x->type = SQLITE_INTEGER;
        x->u.i = v;
        return;
    }
    pa_bulk_int_last(b, v);
}
void pa_bulk_double(pa_bulk_t *b, double v);
void pa_bulk_null(pa_bulk_t *b);
void pa_bulk_text(pa_bulk_t *b, const void *s, size_t len);
/*! pa_bulk_finish() : inserts what is pending, frees everything. Returns 0 or -1 (logged). */
int pa_bulk_finish(pa_bulk_t *b);
/*! pa_bulk_flush_all() : inserts the rows every live bulk of `db` buffers (before a commit that
 *  must hold every record loaded so far). Returns 0, or -1 when a bulk of db has failed. */
int pa_bulk_flush_all(sqlite3 *db);
/*! pa_bulk_detach_all() : before `db` is closed between two batches: every live bulk of db drops
 *  its statement (call after pa_bulk_flush_all: buffered rows would be lost). */
void pa_bulk_detach_all(sqlite3 *db);
/*! pa_bulk_attach_all() : every detached bulk prepares its statement on `db`. 0, or -1 (logged). */
int pa_bulk_attach_all(sqlite3 *db);

/* bulk.c's statements (bulk_stmt.c) */
/*! pa_bulk_stmt_for() : the statement inserting the `nrows` buffered rows, prepared on first use;
 *  *bind: the columns whose row-0 integer goes to ?(c+2). NULL when it cannot be prepared (logged). */
sqlite3_stmt *pa_bulk_stmt_for(pa_bulk_t *b, size_t nrows, uint32_t *bind);
/*! pa_bulk_stmt_drop() : finalizes every statement of b (its connection is about to close). */
void pa_bulk_stmt_drop(pa_bulk_t *b);
/*! pa_bulk_stmt_free() : pa_bulk_stmt_drop() and b's statement list freed. */
void pa_bulk_stmt_free(pa_bulk_t *b);

/*! pa_db_exec() : runs `sql` (several statements allowed). Returns 0 or -1 after logging it. */
int pa_db_exec(sqlite3 *db, const char *sql);
/*! pa_db_fsize_hit() : 1 when db's last failure came from EFBIG (the file size limit
 *  RLIMIT_FSIZE), remembered for pa_writer_fsize_hit(): the caller then logs it at debug level
 *  only (the session says it once). 0 otherwise. */
int pa_db_fsize_hit(sqlite3 *db);
/*! pa_db_capture_errors() : while `buf` is not NULL, pa_db_exec() and pa_meta_set_*() keep their
 *  first failure in `buf` ("SQLite: <message> (<OS reason>)") and its OS errno in `*os_errno`
 *  (0: none) instead of logging. One writer thread at a time (the DB's creation). NULL ends it. */
void pa_db_capture_errors(char *buf, size_t len, int *os_errno);

/* ---- a DB being written (db.c): the exit-time writer, recover and the streaming thread ---- */

#define PA_WRITER_SMALL_SPOOL (64u << 10) /* compressed spool bytes below which pages are 4 KiB */

typedef struct pa_dbw pa_dbw_t;
/*! pa_writer_page_size() : page size for a DB expected from `spool_bytes` of compressed spool. */
int pa_writer_page_size(uint64_t spool_bytes);
/*! pa_dbw_create() : opens the existing empty file `db_path`, sets the page size, the journal
 *  (wal: WAL, valid at every commit; else off), creates every table and index, META with
 *  session_complete = 0, and opens the first transaction. NULL on failure: stops at the first
 *  failing statement; not logged except a failed open, the reason in pa_writer_create_error(). */
pa_dbw_t *pa_dbw_create(const char *db_path, int page_size, int wal, const pa_session_meta_t *meta);
/*! pa_dbw_meta_text() : META key = value in the open transaction. 0 or -1. */
int pa_dbw_meta_text(pa_dbw_t *w, const char *key, const char *value);
/*! pa_dbw_record() : loads one spool record into the open transaction. */
void pa_dbw_record(pa_dbw_t *w, const pa_record_t *rec, const uint8_t *payload);
/*! pa_dbw_bytes() : the DB's size in bytes as of its last commit (page_count x page_size). */
uint64_t pa_dbw_bytes(const pa_dbw_t *w);
/*! pa_dbw_records() : records loaded so far. */
uint64_t pa_dbw_records(const pa_dbw_t *w);
/*! pa_dbw_failed() : 1 once a load or commit failed (the DB is then not finished). */
int pa_dbw_failed(const pa_dbw_t *w);
/*! pa_dbw_commit() : commits every record loaded so far (rows the bulks buffer included, META
 *  spool_records_loaded = their count) and opens the next transaction. 0 or -1 (logged). */
int pa_dbw_commit(pa_dbw_t *w);
/*! pa_dbw_empty_wal() : copies the committed WAL frames into the main file and empties the WAL,
 *  without waiting for a reader that holds old frames (then partly, the next one goes on). */
void pa_dbw_empty_wal(pa_dbw_t *w);
/*! pa_dbw_suspend() : commits and closes the connection between two batches: the agent holds
 *  no file descriptor while it waits (an application that closes or reuses fds, closefrom(3),
 *  never gets DB bytes). pa_dbw_resume() reopens it (statements prepared again) and opens the
 *  next transaction. Both 0 or -1 (logged; the DB is then failed). */
int pa_dbw_suspend(pa_dbw_t *w);
/*! pa_dbw_release() : (the session, before it forks the finisher) commits what is loaded and
 *  closes the connection without copying the WAL back: the finisher opens its own (fcntl locks
 *  are per process). 0 or -1 (logged; failed). */
int pa_dbw_release(pa_dbw_t *w);
/*! pa_dbw_take_exclusive() : (the finisher) opens the released DB in locking_mode EXCLUSIVE and
 *  begins an EXCLUSIVE transaction, waiting at most wait_ms for other connections: from then to
 *  pa_dbw_finish()'s close every other connection gets SQLITE_BUSY. 0, or -1 with SQLite's
 *  reason in why[size] (the DB untouched; failed only when it could not be opened). */
int pa_dbw_take_exclusive(pa_dbw_t *w, int wait_ms, char *why, size_t size);
/*! pa_dbw_to_rollback() : (the finisher, holding the lock) commits, switches the DB from WAL to
 *  the rollback journal (the lock stays) and begins the next transaction. 0 or -1 (failed). */
int pa_dbw_to_rollback(pa_dbw_t *w);
/*! pa_dbw_close_file() : commits, copies the WAL back and closes: the DB is then one file the
 *  caller may link or move elsewhere (same file system). 0 or -1 (logged; failed). */
int pa_dbw_close_file(pa_dbw_t *w);
/*! pa_dbw_moved() : the closed DB's file is now `to` (its old WAL side files are removed);
 *  pa_dbw_resume() opens it there. 0 or -1 (out of memory; failed). */
int pa_dbw_moved(pa_dbw_t *w, const char *to);
int pa_dbw_resume(pa_dbw_t *w);
/*! pa_dbw_finish() : the exit part (summary tables, threads, counters, the sources' finish, META
 *  with session_complete from meta), commit, journal back to DELETE, close; frees w. 0 or -1. */
int pa_dbw_finish(pa_dbw_t *w, int truncated, const pa_session_meta_t *meta, const pa_agg_results_t *res);
/*! pa_dbw_abandon() : commits what is loaded and leaves the DB as it is (session_complete = 0):
 *  the process ends without its aggregates. */
void pa_dbw_abandon(pa_dbw_t *w);

/* ---- schema (schema.c) ---- */

/*! pa_schema_create() : creates every core table (META, STRING_IDS, THREADS, HGTX_*, OSRT_API,
 *  SUMMARY_STATS, SESSION_COUNTERS). Returns 0 or -1. */
int pa_schema_create(sqlite3 *db);
/* When the aggregator's sample budget ran out, the exit still computes the medians from the DB
 * when it holds at most PA_MEDIAN_EXIT_ROWS records and at most PA_MEDIAN_EXIT_KEYS keys are
 * concerned (each key is one scan of its table: ~10 ms); else they are left to the first reader. */
#define PA_MEDIAN_EXIT_ROWS 65536u
#define PA_MEDIAN_EXIT_KEYS 64u

/*! pa_median_from_rows() : the exact median of summary key (cat, key, tag) from the trace rows
 *  (even count: mean of the two middle values). 0 and *out; -1 when the category has no
 *  trace table to compute it from (pa_median_recomputable() == 0) or it has no rows. */
int pa_median_from_rows(sqlite3 *db, int cat, const char *key, size_t key_len, int64_t tag, double *out);

/* The HGTX projection's instances from the DB, as agg_proj.c builds them with graph mapping on:
 * per terminated range instance, every associated op once; columns name, style, dur (latest op
 * end - earliest op start, ns), nops. */
#define PA_SQL_PROJ_INSTANCES                                                                    \
    "SELECT r.name AS name, r.style AS style, max(o.end) - min(o.start) AS dur, count(*) AS nops"  \
    " FROM (SELECT DISTINCT rangeId, opId FROM HGTX_OP_ASSOC) x JOIN HGTX_RANGES_NAMED r"          \
    " ON r.id = x.rangeId JOIN ZE_OPS o ON o.rowid = x.opId WHERE r.unterminated = 0 GROUP BY r.id"

/*! pa_median_recomputable() : 1 when pa_median_from_rows() serves category `cat`, tag `tag`
 *  (every category with one trace row per sample, and the HGTX projection's projected duration
 *  and ops per instance, tags 0-3, rebuilt from HGTX_OP_ASSOC and ZE_OPS as agg_proj.c builds its
 *  instances; not its one-sample rows: active time, device span, counters). */
static inline int pa_median_recomputable(int cat, int64_t tag)
{
    return cat == PA_CAT_HGTX_RANGE || cat == PA_CAT_OSRT || cat == PA_CAT_ZE_API || cat == PA_CAT_KERNEL ||
           cat == PA_CAT_MEMOP || (cat == PA_CAT_HGTX_PROJ && (tag & ~3) == 0);
}

/* The aggregator's name of a ZE_OPS copy or fill (alias a), as pa_ze_memop_name() makes it:
 * "[memset]", "[memcpy Host-to-Device]" (memory kinds 1..4, anything else "Unknown"). */
#define PA_SQL_MEMKIND(c) "CASE " c " WHEN 1 THEN 'Host' WHEN 2 THEN 'Device' WHEN 3 THEN 'Shared'" \
    " WHEN 4 THEN 'Pageable' ELSE 'Unknown' END"
#define PA_SQL_MEMOP_NAME(a) "(CASE " a ".kind WHEN 3 THEN '[memset]' ELSE '[memcpy ' || " \
    PA_SQL_MEMKIND(a ".srcKind") " || '-to-' || " PA_SQL_MEMKIND(a ".dstKind") " || ']' END)"

/*! pa_summary_row_median() : the exit summary's median of `row`: the aggregate's when exact,
 *  else the one the writer recomputed into SUMMARY_STATS of the DB the summary reads (set by
 *  pa_summary_print() while it prints). 1 and *med, 0 when there is none. */
int pa_summary_row_median(const pa_agg_results_t *res, const pa_stat_row_t *row, double *med);

/*! pa_writer_cross_thread_ranges() : start/end ranges (terminated) that ended on another thread
 *  than they started, among the records loaded into the DB being written (so the exit does not
 *  scan HGTX_RANGES to learn there are none). */
uint64_t pa_writer_cross_thread_ranges(void);

/*! pa_summary_median_note() : the summary's note under a table with a "-" median. */
void pa_summary_median_note(FILE *out, const char *report);

/*! pa_db_prepare_for_readers() : the first reader's part of a finished DB: the readers' indexes
 *  and the medians the exit left pending (META medians_pending), in one write transaction.
 *  Does nothing for a DB being written, or one that cannot be opened for writing (the reports
 *  run without the indexes; they compute medians from the rows anyway). Readers arriving
 *  together wait for the one preparing (a flock(2) on the file) as long as it lives, up to
 *  10 min, then find the DB prepared; another program's locks are waited for 2 s in all, then
 *  the preparation is skipped with one note on stderr. */
void pa_db_prepare_for_readers(const char *path);

/*! pa_schema_create_reader_indexes() : the trace tables' indexes only readers need (IF NOT
 *  EXISTS); created by the first reader of a finished DB, never while it is written. 0 or -1. */
int pa_schema_create_reader_indexes(sqlite3 *db);
/*! pa_meta_set_int/_text() : INSERT OR REPLACE into META. Return 0 or -1. */
int pa_meta_set_int(sqlite3 *db, const char *key, int64_t v);
int pa_meta_set_text(sqlite3 *db, const char *key, const char *v);
/*! pa_osrt_func_name() : "pthread_cond_wait" ... for enum pa_osrt_func, NULL when unknown. */
const char *pa_osrt_func_name(uint32_t func);

/* ---- per-source extension point ----
 * Kinds in [PA_SP_ZE_FIRST, PA_SP_ZE_LAST] go to pa_writer_source_ze (writer_ze.c),
 * [PA_SP_MEM_FIRST, PA_SP_MEM_LAST] to pa_writer_source_mem (writer_mem.c). Each callback
 * may be NULL. create_schema runs before the load, on_record once per spool record (inside
 * the one transaction), finish after the load (indexes, derived tables); each returns 0 or
 * -1 (the DB is then left with session_complete = 0). summary prints the source's section
 * of the exit summary (may be NULL). */
typedef struct pa_writer_source {
    const char *name;
    int (*create_schema)(sqlite3 *db);
    int (*on_record)(sqlite3 *db, const pa_record_t *rec, const uint8_t *payload);
    int (*finish)(sqlite3 *db);
    void (*summary)(FILE *out, const pa_session_meta_t *meta, const pa_agg_results_t *res);
    /* the connection is about to close between two batches of a DB written while the program runs:
     * finalize any statement kept across records (bulks are handled by pa_bulk_detach_all) */
    void (*detach)(sqlite3 *db);
} pa_writer_source_t;

extern const pa_writer_source_t pa_writer_source_ze;   /* writer/writer_ze.c */
extern const pa_writer_source_t pa_writer_source_mem;  /* writer/writer_mem.c */
extern const pa_writer_source_t pa_writer_source_proj; /* writer/writer_proj.c: PA_SP_HGTX_ASSOC */
extern const pa_writer_source_t pa_writer_source_pcs;  /* writer/writer_pcs.c: PA_SP_PCS_* */
extern const pa_writer_source_t pa_writer_source_hc;   /* writer/writer_hc.c: PA_SP_HC_* host counters */
extern const pa_writer_source_t pa_writer_source_itt;  /* writer/writer_itt.c: PA_SP_ITT_COUNTS */
extern const pa_writer_source_t pa_writer_source_dm;   /* writer/writer_dm.c: PA_SP_DM_* device metrics */
extern const pa_writer_source_t pa_writer_source_rank; /* writer/writer_rank.c: RANK_DEVICE_MAP (finish only) */

/* ---- SQL functions (report_sqlfn.c) ---- */

/*! pa_sqlfn_register() : median(x) (aggregate; even count = mean of the two middle values),
 *  stddev(x) (aggregate, population, 0 for one value, NULL for none), regexp(pattern, text)
 *  (PCRE2, so `text REGEXP pattern` works; a bad pattern is an SQL error naming the offset).
 *  Returns 0 or -1. */
int pa_sqlfn_register(sqlite3 *db);
/* median()'s memory budget, values (8 bytes each): past it a median's values go to a temporary
 * file (TMPDIR, else /tmp; 8 bytes per value) and the middle ones are selected from it, so a
 * median holds at most twice this in memory (the buffer, and the bucket sorted at the end). */
#define PA_MEDIAN_BUDGET_VALUES (512u * 1024u)
/*! pa_sqlfn_set_median_budget() : sets the budget of every median() computed afterwards, in
 *  values (0: PA_MEDIAN_BUDGET_VALUES; raised to 16 at least). For tests and benchmarks. */
void pa_sqlfn_set_median_budget(size_t values);
/*! pa_sqlfn_median_spills() : how many median() results went past the budget to a temporary
 *  file in this process so far. */
uint64_t pa_sqlfn_median_spills(void);
/*! pa_regex_check() : compiles `pattern` with PCRE2; on failure writes "invalid regular
 *  expression '<p>' at offset N: <reason>" to err and returns -1; 0 when valid. */
int pa_regex_check(const char *pattern, char *err, size_t errsz);

/* ---- report model (report.c, report_fmt.c) ---- */

enum pa_cell_type { PA_CELL_NONE = 0, PA_CELL_INT, PA_CELL_DOUBLE, PA_CELL_STR };

typedef struct pa_cell {
    int type;      /* enum pa_cell_type; NONE prints as "-" (null in JSON) */
    int prec;      /* DOUBLE: digits after the point */
    int64_t i;
    double d;
    size_t off, len;  /* STR: bytes in the table's arena */
} pa_cell_t;

typedef struct pa_table {
    int ncols;
    const char *const *titles;  /* ncols titles, without Row# */
    pa_cell_t *cells; size_t ncells, cap;
    char *arena; size_t arena_len, arena_cap;
    int oom;
    /* streaming (set by the engine for a report whose def has .streams): each complete row, then
     * cells[0..ncols), is handed to sink and dropped, so the table holds one row at a time; sink
     * returns 1 when it wants no more (later rows are still counted, not handed out) */
    int (*sink)(const struct pa_table *t, void *arg);
    void *sink_arg;
    size_t sunk;    /* rows handed to the sink or counted after it stopped */
    int sink_stop;
} pa_table_t;

/*! pa_table_add_*() : appends the next cell (row-major). Out of memory is sticky (t->oom).
 *  pa_table_add_double() with prec 0 is an integer statistic (Avg, Med, StdDev...): it is
 *  truncated by pa_stat_trunc() (common/pa_stddev.h, the spec's rule), never rounded; so is a
 *  REAL SQL column added with pa_table_add_sqlcol(.., 0). */
void pa_table_add_int(pa_table_t *t, int64_t v);
void pa_table_add_double(pa_table_t *t, double v, int prec);
void pa_table_add_str(pa_table_t *t, const void *s, size_t len);
void pa_table_add_none(pa_table_t *t);
/*! pa_table_nrows() : complete rows so far (streamed ones included). */
size_t pa_table_nrows(const pa_table_t *t);
void pa_table_free(pa_table_t *t);

/*! pa_format_double() : the one number format shared by reports and the summary:
 *  "%.*f" with `prec` digits, "-0" printed as "0". Returns the snprintf length. */
int pa_format_double(char *buf, size_t sz, double v, int prec);

/*! pa_table_write() : prints `t` in `fmt` (enum pa_report_format) with a leading Row# column. */
void pa_table_write(const pa_table_t *t, int fmt, FILE *out);
/*! pa_table_write_unit() : pa_table_write() with time columns (titles with "(ns)") shifted by
 *  `shift` decimal digits (3 us, 6 ms, 9 s; 0 = pa_table_write()), see pa_report_run_unit(). */
void pa_table_write_unit(const pa_table_t *t, int fmt, int shift, FILE *out);

/* Report options. */
enum pa_opt_kind {
    PA_OPT_FLAG,    /* `name` */
    PA_OPT_INT,     /* `name=<n>`, n >= 0 */
    PA_OPT_IDLIST,  /* `name=<id>/<id>/...` */
    PA_OPT_REGEX,   /* `name=<PCRE2>`; may contain ':' (what follows that is no option joins it) */
    PA_OPT_ENUM,    /* `name=<one of choices>` */
};

typedef struct pa_report_opt {
    const char *name;
    int kind;                     /* enum pa_opt_kind */
    const char *arg;              /* "<limit>" shown in help */
    const char *help;             /* one or more lines */
    const char *const *choices;   /* ENUM: NULL-terminated */
} pa_report_opt_t;

typedef struct pa_report_col { const char *title; const char *help; } pa_report_col_t;

#define PA_REPORT_MAX_OPTS 12
#define PA_REPORT_MAX_IDS 64

typedef struct pa_opt_val {
    int set;
    int64_t i;
    char *s;
    int64_t ids[PA_REPORT_MAX_IDS]; size_t nids;
} pa_opt_val_t;

struct pa_report_def {
    const char *name;             /* our name, e.g. "hgtx_sum" */
    const char *title;            /* "HGTX Range Summary" */
    const char *aliases[4];       /* spec names etc., NULL-padded */
    const char *description;      /* paragraph(s) for --help-report */
    const pa_report_opt_t *opts; size_t nopts;
    const pa_report_col_t *cols; size_t ncols;  /* without Row# */
    /* fills t (titles and ncols already set); returns 0, or 1 with err set (data error) */
    int (*produce)(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err, size_t errsz);
    /* 1: produce only appends rows, already in the report's order, and never reads t back (no
     * pa_report_stat_rows, no sorting of t): the engine may stream them (t->sink), so a trace of
     * any length is written with the memory of one row */
    int streams;
};

struct pa_report_req {
    const pa_report_def_t *def;
    pa_opt_val_t vals[PA_REPORT_MAX_OPTS];  /* indexed like def->opts */
    pa_opt_val_t rows;  /* rows=<limit> of a report that does not declare it (report.c applies it to all) */
};

/*! pa_report_produce() : every row of the report (rows= not applied) into `t`, whose titles
 *  point into `titles` (64 entries, caller's). Returns PA_REP_OK (free t with pa_table_free) or
 *  PA_REP_EDATA with err set (t empty). */
int pa_report_produce(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, const char **titles,
                      char *err, size_t errsz);

/*! pa_report_db_writer_pid() : the pid of the live session still writing `db` (db_complete not 1,
 *  META's boot_id and hostname this machine's, that pid alive), else 0. */
int64_t pa_report_db_writer_pid(sqlite3 *db);

/*! pa_report_produce_each() : pa_report_produce() handing each row to sink(t, arg) in order (t
 *  holds that row alone, cells[0..ncols)); a report that streams (.streams) never holds more
 *  than one row, the others are produced whole then handed out. *nrows gets the number of rows.
 *  Returns PA_REP_OK or PA_REP_EDATA with err set. */
int pa_report_produce_each(sqlite3 *db, const pa_report_req_t *req, const char **titles,
                           int (*sink)(const pa_table_t *t, void *arg), void *arg, size_t *nrows,
                           char *err, size_t errsz);

/* A table written as its rows come: csv, tsv, json directly; the aligned table needs its column
 * widths first (pa_table_out_widen() over the same rows before the head). */
typedef struct pa_table_out {
    int fmt, shift;  /* enum pa_report_format; time columns' shift (pa_table_write_unit()) */
    size_t *w;       /* table format: ncols + 1 widths (Row# first), from pa_table_out_widen() */
    FILE *out;
} pa_table_out_t;
/*! pa_table_out_widen() : widens o->w to the titles (call once with row NULL first: sets them)
 *  and to row `num` (cells[0..ncols) of t's layout). */
void pa_table_out_widen(const pa_table_t *t, const pa_table_out_t *o, const pa_cell_t *row, size_t num);
void pa_table_out_head(const pa_table_t *t, const pa_table_out_t *o);
/*! pa_table_out_row() : row number `num` (1-based), cells `row` with strings in t's arena. */
void pa_table_out_row(const pa_table_t *t, const pa_table_out_t *o, const pa_cell_t *row, size_t num);
void pa_table_out_end(const pa_table_t *t, const pa_table_out_t *o, size_t nrows);

/*! pa_req_opt() : the value of option `name` of req's report, NULL if not set (or unknown). */
const pa_opt_val_t *pa_req_opt(const pa_report_req_t *req, const char *name);

/*! pa_sql_tid_filter() : appends " AND (<gtid_col> >> 32) IN (..)" / " AND (<gtid_col> &
 *  0xffffffff) IN (..)" for the process= / thread= options of req to buf (bounded).
 *  Returns 0, -1 when buf is too small. */
int pa_sql_tid_filter(const pa_report_req_t *req, const char *gtid_col, char *buf, size_t sz);

/* Weak, NULL-terminated report tables others provide in their own files, so they add
 * reports without editing report.c: ze (issue 4), hgtx-device (issue 5), mem (issue 6),
 * misc (anything later). */
extern const pa_report_def_t *const pa_reports_ze[] __attribute__((weak));
extern const pa_report_def_t *const pa_reports_hgtxdev[] __attribute__((weak));
extern const pa_report_def_t *const pa_reports_mem[] __attribute__((weak));
extern const pa_report_def_t *const pa_reports_misc[] __attribute__((weak));
extern const pa_report_def_t *const pa_reports_pcs[] __attribute__((weak)); /* report_pcs.c */
extern const pa_report_def_t *const pa_reports_dm[] __attribute__((weak)); /* report_dm.c */
extern const pa_report_def_t *const pa_reports_hostctr[] __attribute__((weak)); /* report_hc.c */
extern const pa_report_def_t *const pa_reports_op[] __attribute__((weak)); /* report_op.c: ppu_op_sum, moe_op_sum */
extern const pa_report_def_t *const pa_reports_pccl[] __attribute__((weak)); /* report_pccl.c: pccl_* */

/* ---- device memory (report_mem.c): the exit summary section, computed from the DB with the
 * same code as device_memory_usage_summary so both always agree ---- */
typedef struct pa_mem_exit pa_mem_exit_t;
/*! pa_mem_exit_compute() : unreleased bytes per pid/device/group (the rules the agent was given
 *  in PROFAGENT_CALLSTACK_GROUPS, else the built-in ones), top leaking call stacks, counts.
 *  NULL when the DB holds no memory record. */
pa_mem_exit_t *pa_mem_exit_compute(sqlite3 *db);
void pa_mem_exit_print(FILE *out, const pa_mem_exit_t *e);
void pa_mem_exit_free(pa_mem_exit_t *e);

/* Reports of issue 2 (report_hgtx.c, report_osrt.c). */
extern const pa_report_def_t pa_report_hgtx_sum;
extern const pa_report_def_t pa_report_hgtx_pushpop_trace;
extern const pa_report_def_t pa_report_osrt_sum;

/*! pa_spool_beside() : the name of a spool `<db>.<pid>.<tag>.spool.zst` beside `db` (the records
 *  of a process that died before its DB got them) into `out` (`sz` bytes): 0, or -1 when there is
 *  none or the name does not fit. */
int pa_spool_beside(const char *db, char *out, size_t sz);
/*! pa_db_check_file() : the checks every command makes of a DB file before SQLite opens it, with
 *  one wording for all of them: readable, not empty (naming a spool beside it), an SQLite file,
 *  not shorter than its header's page count nor cut inside a page (skipped when a non-empty
 *  `<path>-wal` is beside it: a WAL-mode writer, live or killed, left the pages there). 0, or -1
 *  with the message in err. */
int pa_db_check_file(const char *path, char *err, size_t errsz);

#endif
