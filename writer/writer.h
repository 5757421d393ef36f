/* writer.h - builds the SQLite DB from the spool and the aggregates; prints the exit summary. */
#ifndef PA_WRITER_H
#define PA_WRITER_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "../agg/agg.h"

#define PA_SCHEMA_VERSION 2  /* 2: ZE_API/ZE_OPS.tid as globalTid; ZE_OPS staticSlm, dynamicSlm, appendCorrId; barriers (kind 4) */

typedef struct pa_session_meta {
    uint32_t pid;
    const char *hostname;
    const char *cmdline;         /* argv joined by spaces */
    uint64_t start_wall_ns;      /* CLOCK_REALTIME at session start */
    uint64_t start_mono_ns;      /* CLOCK_MONOTONIC at session start */
    uint64_t end_mono_ns;
    int rank;                    /* -1 when unknown */
    int complete;                /* 0: the session did not finish (marked in META) */
    /* identity for merging DBs of several processes (all optional: 0/NULL = not known) */
    const char *rank_var;        /* the launcher variable the rank came from (common/pa_rank.h) */
    const char *boot_id;         /* /proc/sys/kernel/random/boot_id: equal = one CLOCK_MONOTONIC */
    uint64_t anchor_wall_ns;     /* CLOCK_REALTIME read between two CLOCK_MONOTONIC reads ... */
    uint64_t anchor_mono_ns;     /* ... whose midpoint this is */
    uint64_t anchor_err_ns;      /* half their distance (+1): the anchor's read error */
    int64_t wall_esterror_ns;    /* adjtimex(): the kernel's estimated wall-clock error; -1 unknown */
    int64_t wall_maxerror_ns;    /* adjtimex(): its maximum error; -1 unknown */
    int wall_synced;             /* adjtimex(): 1 synchronized (NTP/PTP), 0 not, -1 unknown */
    const char *host_clock;      /* pa_clock_source() at the end: "tsc" or "clock_gettime" (NULL: not known) */
    uint64_t log_dropped;        /* the agent's messages not written (stderr full, blocked, closed or
                                    replaced: pa_log_dropped) when the DB or summary was made */
} pa_session_meta_t;

/*! pa_writer_write_db() : creates `db_path` (must not exist), loads every spool record,
 *  the aggregates and META. Returns 0 or -1 after logging why. */
int pa_writer_write_db(const char *db_path, const char *spool_path, const pa_session_meta_t *meta,
                       const pa_agg_results_t *res);

/*! pa_writer_create_error() : why the last creation of a DB failed ("SQLite: <message> (<OS
 *  reason>)", "" when it did not fail); `*os_errno` (may be NULL) = that OS errno, 0 if none
 *  (EMFILE: RLIMIT_NOFILE, EFBIG: RLIMIT_FSIZE). Valid until the next creation. */
const char *pa_writer_create_error(int *os_errno);
/*! pa_writer_fsize_hit() : 1 once an SQLite write of this process failed with EFBIG (the file
 *  size limit RLIMIT_FSIZE stopped the DB), else 0. */
int pa_writer_fsize_hit(void);
/*! pa_spool_why() : the message a session's finisher left in "<spool>.why" when it could not
 *  complete the DB (its first line, without the "profagent: agent: " prefix) into out[sz]; 0, or
 *  -1 when there is none. */
int pa_spool_why(const char *spool, char *out, size_t sz);
/*! pa_writer_wal_kept() : 1 when a checkpoint of this process was not started because the DB
 *  (*db_bytes bytes) would pass the file size limit (*limit bytes): a DB then left in WAL mode
 *  is valid only with its -wal file (its main file alone holds its last checkpoint). Else 0. */
int pa_writer_wal_kept(uint64_t *db_bytes, uint64_t *limit);

/*! pa_writer_fill_db() : as pa_writer_write_db(), into the empty file `db_path` the caller
 *  already created (claimed with pa_outname_claim()). Returns 0 or -1 after logging why; the
 *  caller removes the file on failure. */
int pa_writer_fill_db(const char *db_path, const char *spool_path, const pa_session_meta_t *meta,
                      const pa_agg_results_t *res);

/* ---- the DB written while the program runs (stream.c) ---- */

typedef struct pa_writer_stream_cfg {
    const char *db_template;  /* placed DB path: the first free name like it (pa_outname_claim) is
                                 claimed when the DB is created, i.e. once the session has data */
    int overwrite;            /* PROFAGENT_OVERWRITE */
    const char *spool_path;   /* the aggregator's spool, followed as it grows */
    const pa_session_meta_t *meta; /* pid, command line, start: read when the DB is created and at
                                 the end (end_mono_ns, complete), valid for the whole session */
    uint64_t commit_ns;       /* ns between two commits; 0: no DB thread, the DB is written at exit */
} pa_writer_stream_cfg_t;

/*! pa_writer_stream_published() : where the aggregator stores the spool's whole-frame bytes
 *  (agg config spool_published). */
_Atomic uint64_t *pa_writer_stream_published(void);
/*! pa_writer_stream_agg_behind() : where the aggregator says it has full rings (agg config behind). */
_Atomic int *pa_writer_stream_agg_behind(void);

/*! pa_writer_stream_start() : configures the DB thread (pa_writer_stream_start_thread() starts
 *  it): it follows the spool, creates the DB (WAL, valid at every commit, session_complete = 0)
 *  ~0.5 s after the first frame or once 512 KiB of spool exist, and commits the rows every
 *  commit_ns. Returns 0 (without a thread the DB is written at exit), -1 (errno) when a path is
 *  too long. */
int pa_writer_stream_start(const pa_writer_stream_cfg_t *cfg);

/*! pa_writer_stream_start_thread() : starts the DB thread configured by pa_writer_stream_start()
 *  (none with commit_ns 0, or when it runs already); until then, and when it cannot start (said
 *  once), the whole DB is written at exit. Not concurrent with pa_writer_stream_finish(). */
void pa_writer_stream_start_thread(void);

/*! pa_writer_stream_exit_begins() : the session's exit started: the DB thread loads each frame as
 *  the last drain publishes it, without waiting for its commit interval and keeping its
 *  connection open; the exit takes the connection at the end of its look and loads the rest
 *  (pa_writer_stream_finish). Any thread; no effect without the DB thread. */
void pa_writer_stream_exit_begins(void);
/*! pa_writer_stream_finish() : after the aggregator closed the spool: loads its rest, writes the
 *  aggregates `res`, the sources' tables, META (session_complete from meta->complete) and closes.
 *  `empty`: nothing was recorded, no DB is left. Returns 0 with the DB's name in final[size];
 *  1: empty, no DB; -1: failed (logged), no DB left; -2: res == NULL (the aggregator did not
 *  finish), the DB keeps what it committed (session_complete = 0), its name in final; -3: the
 *  load of the spool's rest was cut (pa_writer_stream_bound): the DB keeps what was loaded, valid,
 *  as a killed session leaves it (no db_complete, session_complete = 0, META exit_load_cut, no
 *  summary tables), its name in final; the spool holds the rest (`profagent recover` completes
 *  the DB in place); 2: a finisher process completes it (pa_writer_stream_handoff), its name in
 *  final. The wait for the DB thread (to the end of its look, at once between two)
 *  ends at the deadline too: then -3 as well, the DB holding the DB thread's last commit. */
int pa_writer_stream_finish(const pa_agg_results_t *res, int empty, char *final, size_t size);

/*! pa_writer_stream_bound() : bounds the next pa_writer_stream_finish()'s load of the spool's rest:
 *  it stops at deadline_ns (pa_clock_ns() time; 0: none) or once cut() returns non-zero (NULL:
 *  never; called every ~1000 records, must be cheap), looked at every 1024 records (~1 ms). */
void pa_writer_stream_bound(uint64_t deadline_ns, int (*cut)(void));

/*! pa_writer_stream_cut_why() : after pa_writer_stream_finish() returned -3: 1 the deadline cut the
 *  load, 2 cut() did; the spool records the DB holds in *loaded. 0 when nothing was cut. */
int pa_writer_stream_cut_why(uint64_t *loaded);

/*! pa_writer_stream_handoff() : lets the exit hand the end of the DB to another process.
 *  pa_writer_stream_finish(), once it holds the DB thread's connection and the DB exists, calls
 *  split(backlog, res, db, spool) with the spool records not yet loaded, the session's results, the
 *  DB's and the spool's names:
 *  -1 loads the rest here (as without a hand-off); 0 is the finisher (a fork child): it loads the rest exactly as
 *  the exit would (unbounded: pa_writer_stream_bound is cleared), then calls done(rc, db, spool)
 *  with pa_writer_stream_finish()'s result, which must not return; > 0 is the session's process
 *  after the child `pid` took the DB over: pa_writer_stream_finish() returns 2, the DB's name in
 *  final. NULL split: never. */
void pa_writer_stream_handoff(long (*split)(uint64_t backlog, const pa_agg_results_t *res, const char *db,
                                            const char *spool),
                              void (*done)(int rc, const char *db, const char *spool));

/*! pa_writer_stream_fits() : (split, before a finisher is started) 1 when the DB, loaded with
 *  `backlog` more spool records, stays below the file size limit RLIMIT_FSIZE (projected from its
 *  bytes per record so far, with a quarter more) or there is none; 0 when it would not (or
 *  cannot be told), the projection and the limit in bytes in *projected, *limit. */
int pa_writer_stream_fits(uint64_t backlog, uint64_t *projected, uint64_t *limit);
/*! pa_writer_stream_release() : (the session, before it forks the finisher) commits what is
 *  loaded and closes the DB's connection. 0, or -1 (logged; the DB is then failed). */
int pa_writer_stream_release(void);
/*! pa_writer_stream_lock() : (the finisher, first) opens its own connection holding SQLite's
 *  EXCLUSIVE lock on the DB until the DB is complete (locking_mode EXCLUSIVE: every other
 *  connection gets SQLITE_BUSY), waiting at most wait_ms for other connections to let go.
 *  0, or -1 with the reason in why[size]: the DB is then untouched and the session may load it. */
int pa_writer_stream_lock(int wait_ms, char *why, size_t size);
/*! pa_writer_stream_locked() : (the finisher, once the session knows the lock is held) moves the
 *  DB to the rollback journal under the lock; kill_at > 0 (tests) makes the finisher SIGKILL
 *  itself once it loaded that many more spool records. 0 or -1 (the DB failed). */
int pa_writer_stream_locked(uint64_t kill_at);

/* ---- the finisher's lock file (finish.c): "<DB>.finishing", flock()ed while it runs ---- */

/*! pa_finish_lock_create() : creates and exclusively locks "<db>.finishing" (name in path[size]).
 *  Returns its descriptor (close-on-exec; a fork child keeps the lock), or -1 (errno). */
int pa_finish_lock_create(const char *db, char *path, size_t size);
/*! pa_finish_lock_set_pid() : writes the finisher's pid into the lock file (for readers' messages). */
void pa_finish_lock_set_pid(int fd, long pid);
/*! pa_finish_running() : whether a finisher holds db's lock: its pid, -1 when it holds it and no
 *  pid is written yet, 0 when none (no lock file, or one a killed finisher left). */
long pa_finish_running(const char *db);
/*! pa_finish_wait() : waits (polls every 10 ms) until db's finisher ends, at most timeout_ms; one
 *  line on msg (may be NULL) when it waits and one when it gives up. 0: no finisher (any more);
 *  1: still running at the timeout. */
int pa_finish_wait(const char *db, unsigned timeout_ms, FILE *msg);
/*! pa_finish_lock_remove_stale() : removes the lock file a killed finisher left (none running). */
void pa_finish_lock_remove_stale(const char *db);
/*! pa_finish_probe_sqlite() : (a fork child) takes and lets go every static mutex of the agent's
 *  SQLite: returns once none is held, blocks for ever when one was held at the fork. */
void pa_finish_probe_sqlite(void);
#define PA_FINISH_WAIT_MS 60000u /* readers and recover wait at most this long for a finisher */

/*! pa_writer_stream_after_fork_child() : a fork child forgets the parent's DB thread and DB. */
void pa_writer_stream_after_fork_child(void);

/*! pa_writer_recover() : builds `db_path` (must not exist) from the spool of a process that
 *  died without writing its DB (SIGKILL, abort, crash): trace rows up to the last complete
 *  spool frame, SUMMARY_STATS and THREADS recomputed from them, META session_complete=0 and
 *  recovered_from. `pid` gives the globalTid high half. Returns 0 or -1 after logging why. */
int pa_writer_recover(const char *spool_path, const char *db_path, uint32_t pid);

/*! pa_summary_print() : the human summary printed at exit. */
void pa_summary_print(FILE *out, const pa_session_meta_t *meta, const pa_agg_results_t *res,
                      const char *db_path);

/*! pa_summary_print_note() : the same summary (from the aggregates alone), the Database line
 *  followed by `db_note` in parentheses (an incomplete DB: why, what completes it); the DB is not
 *  read. db_note NULL: pa_summary_print(). */
void pa_summary_print_note(FILE *out, const pa_session_meta_t *meta, const pa_agg_results_t *res,
                           const char *db_path, const char *db_note);

/* ---- merging DBs of several processes (writer/merge*.c) ---- */

typedef struct pa_merge_opts {
    int overwrite;   /* 1: an existing regular file `out` is replaced */
    char *tmp_path;  /* NULL, or PATH_MAX bytes: the temporary file's name while it exists ("" else),
                      * for a signal handler that removes it */
    FILE *log;       /* notes (a pid renumbered); NULL: stderr */
} pa_merge_opts_t;

/*! pa_merge_dbs() : one DB `out` from the profagent DBs paths[0..n): pids kept (one taken by an
 *  earlier input renumbered, see MERGE_INPUTS), device ids offset per input (unique per host,
 *  process and device), threads as globalTid, strings re-interned, every time moved onto input
 *  0's clock (same boot: CLOCK_MONOTONIC is shared, offset 0; other hosts: by the wall-clock
 *  anchors in META, residual uncertainty in META merge_clock_uncertainty_ns), SUMMARY_STATS
 *  combined, SESSION_COUNTERS summed. Written under a temporary name in out's directory and
 *  renamed: `out` is never half-written. Returns PA_REP_OK; PA_REP_EUSAGE when the inputs are
 *  refused before anything is written (none, a file given twice, truncated, not a profagent DB,
 *  different schema versions, out exists); PA_REP_EDATA when writing failed (temporary removed).
 *  One message in err either way. */
int pa_merge_dbs(const char *out, const char *const *paths, size_t n, const pa_merge_opts_t *o, char *err,
                 size_t errsz);

/* ---- report engine (writer/report*.c), used by the profagent CLI ---- */

struct sqlite3;
typedef struct pa_report_def pa_report_def_t;   /* writer_internal.h */
typedef struct pa_report_req pa_report_req_t;   /* a report with parsed options */

enum pa_report_format { PA_FMT_CSV = 0, PA_FMT_TABLE = 1, PA_FMT_JSON = 2, PA_FMT_TSV = 3 };
/* Return codes of the report functions (also the CLI's exit status). */
enum pa_report_rc { PA_REP_OK = 0, PA_REP_EDATA = 1, PA_REP_EUSAGE = 2 };

/*! pa_report_db_open() : opens `path` read-only and checks it is a profagent DB (SQLite
 *  header, META.schema_version present and <= PA_SCHEMA_VERSION); registers median, stddev,
 *  regexp. Returns PA_REP_OK with *db set, or PA_REP_EDATA with one clear message in err. */
int pa_report_db_open(const char *path, struct sqlite3 **db, char *err, size_t errsz);

/*! pa_report_find() : report by name or alias, NULL when unknown. */
const pa_report_def_t *pa_report_find(const char *name);

/*! pa_report_list() : prints every report name (one a line, aliases in parentheses). */
void pa_report_list(FILE *out);

/*! pa_report_names() : writes "a, b, c" (every report name) to buf, for error messages. */
void pa_report_names(char *buf, size_t sz);

/*! pa_report_help() : the --help-report text (title, options, columns, description).
 *  Returns PA_REP_OK, or PA_REP_EUSAGE (message in err) when `name` is unknown. */
int pa_report_help(FILE *out, const char *name, char *err, size_t errsz);

/*! pa_report_parse() : parses "NAME[:opt[:opt]]" (opt = flag or key=value). Returns
 *  PA_REP_OK with *req set (free with pa_report_req_free), or PA_REP_EUSAGE with err naming
 *  the bad part and what is accepted. */
int pa_report_parse(const char *spec, pa_report_req_t **req, char *err, size_t errsz);
void pa_report_req_free(pa_report_req_t *req);

/*! pa_report_mem_add_group_rule() : one --callstack-group-config "name=re1/re2/..." for the
 *  device_memory_usage_* reports (several calls add several rules, in order; with none the
 *  built-in rules apply). A malformed rule gets one message on err naming it; returns 0 or -1
 *  (the valid rules still apply). */
int pa_report_mem_add_group_rule(const char *rule, FILE *err);

/*! pa_report_mem_set_time_range() : --filter-time for the device_memory_usage_* reports: only
 *  events in [from_ns, to_ns] relative to the session start count (to_ns 0 = session end);
 *  "unreleased" then means not freed by to_ns. */
void pa_report_mem_set_time_range(uint64_t from_ns, uint64_t to_ns);

/*! pa_report_run() : produces the report from `db` and prints it in `fmt`. Returns
 *  PA_REP_OK or PA_REP_EDATA (message in err). */
int pa_report_run(struct sqlite3 *db, const pa_report_req_t *req, int fmt, FILE *out,
                  char *err, size_t errsz);

/*! pa_report_run_unit() : pa_report_run() with time columns (titles containing "(ns)") shown in
 *  10^-9 * 10^`shift` s units: shift 0 ns, 3 us, 6 ms, 9 s (the ns text with its decimal point
 *  moved `shift` digits left, so conversions are exact); `*nrows` (may be NULL) gets the number
 *  of rows the report produced before rows= was applied (0: the DB has no data for it).
 *  Returns PA_REP_OK or PA_REP_EDATA (message in err). */
int pa_report_run_unit(struct sqlite3 *db, const pa_report_req_t *req, int fmt, int shift, FILE *out,
                       size_t *nrows, char *err, size_t errsz);

/*! pa_report_title() : the one-line title of a report ("HGTX Range Summary"). */
const char *pa_report_title(const pa_report_req_t *req);
/*! pa_report_name() : the report's own name ("hgtx_sum", also when asked by an alias). */
const char *pa_report_name(const pa_report_req_t *req);

#endif
