/* merge_internal.h - what the merge files share: the table spec, the inputs' identities, the clock plan. */
#ifndef PA_MERGE_INTERNAL_H
#define PA_MERGE_INTERNAL_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* How a table is merged (merge_spec.c). */
enum pa_mtable_mode {
    PA_MT_ROWS = 0,  /* rows appended, each column transformed by its kind */
    PA_MT_STRINGS,   /* STRING_IDS: re-interned by value */
    PA_MT_META,      /* META: the merged session's keys; each input's rows go to MERGE_META */
    PA_MT_COUNTERS,  /* SESSION_COUNTERS: values summed by name */
    PA_MT_STATS,     /* SUMMARY_STATS: statistics combined per key */
    PA_MT_HCEV,      /* HOST_COUNTERS: one row per distinct event, indexes mapped */
};

typedef struct pa_mtable {
    const char *name;
    int mode;         /* enum pa_mtable_mode */
    const char *cols; /* "col[:kind] ..." (kinds: merge_spec.c) */
} pa_mtable_t;

/*! pa_merge_spec() : every table merge knows, in merge order; *n gets the count. */
const pa_mtable_t *pa_merge_spec(size_t *n);
/*! pa_merge_spec_find() : the entry of `table`, NULL when merge does not know it. */
const pa_mtable_t *pa_merge_spec_find(const char *table);
/*! pa_merge_spec_col() : the kind letter of column `col` (len bytes) of t, '-' for a column
 *  copied as is, 0 when t does not list it. */
int pa_merge_spec_col(const pa_mtable_t *t, const char *col, size_t len);

/* Per-process id kinds that get an offset per input (merge_spec.c letters). */
#define PA_MERGE_ID_KINDS "RCXQLEHOkdn"

/* How closely one session's recorded times follow its host's CLOCK_MONOTONIC: pa_clock_ns()
 * reads the TSC on a linear segment kept "within ~1 us of CLOCK_MONOTONIC" (common/pa_clock.h).
 * Two sessions of one machine therefore agree to 2x this; it is part of every input's residual. */
#define PA_MERGE_CLOCK_FOLLOW_NS 1000

/* One input DB: its identity from META, and what the plan decided for it. */
typedef struct pa_minput {
    const char *path;
    int64_t schema_version;
    int64_t pid, rank;
    char host[256], boot[64];      /* hostname; boot id ("" when the DB predates it) */
    int64_t start_wall, start_mono, end_mono;
    int64_t anchor_wall, anchor_mono, anchor_err; /* wall-clock anchor: CLOCK_REALTIME at anchor_mono, +- anchor_err */
    int64_t wall_esterr;           /* the kernel's estimated wall-clock error (adjtimex), ns; -1 unknown */
    int wall_synced;               /* 1 synchronized (NTP), 0 not, -1 unknown */
    int complete;                  /* session_complete && db_complete */
    int merged_inputs;             /* > 0: the input is itself a merged DB of that many sessions */
    /* the plan */
    int clock_ref;                 /* index of the first input of this input's clock domain */
    int64_t clock_off;             /* ns added to every time of this input */
    int64_t clock_unc;             /* residual uncertainty of clock_off, ns (0: same clock); -1 unknown */
    int clock_guess;               /* 1: no wall-clock anchor to align it by (a DB recovered from a spool):
                                    * taken as on input 0's clock (offset 0, uncertainty unknown) */
} pa_minput_t;

/*! pa_merge_check_inputs() : validates paths[0..n) and `out` before anything is written: each a
 *  readable, complete (not truncated) SQLite file with a profagent META, one schema version equal
 *  to the one this build writes, no file given twice (same inode, e.g. another path or a hard
 *  link), no session given twice (same host, pid and start: a copy), `out` not one of them.
 *  Fills in[0..n). Returns 0, or -1 with one message in err. */
int pa_merge_check_inputs(const char *out, const char *const *paths, size_t n, pa_minput_t *in,
                          char *err, size_t errsz);

/*! pa_merge_clock_plan() : the clock offset of every input onto input 0's clock. Inputs of one
 *  clock domain (same boot id, or same host name when a boot id is missing) share CLOCK_MONOTONIC:
 *  offset 0, uncertainty 2 x PA_MERGE_CLOCK_FOLLOW_NS (input 0 itself: 0). Another domain is aligned by the
 *  wall-clock anchors: off = (wall - mono)_domain - (wall - mono)_ref; uncertainty = both
 *  anchors' read errors + both hosts' estimated wall-clock errors + 2 x PA_MERGE_CLOCK_FOLLOW_NS
 *  (-1 when one is unknown or not synchronized). A domain without an anchor (start wall time 0: a DB recovered from a spool)
 *  is taken as on input 0's clock: offset 0, uncertainty -1, clock_guess 1. Sets
 *  clock_ref/clock_off/clock_unc/clock_guess of in[0..n). */
void pa_merge_clock_plan(pa_minput_t *in, size_t n);

/* The merge in progress (merge.c), with what the current input needs (merge_input.c). */
typedef struct pa_mctx {
    sqlite3 *db;                  /* the output; the current input is attached as "src" */
    char *err;
    size_t errsz;
    int64_t next[128], off[128];  /* per id kind letter: offset of the next / the current input */
    int64_t toff;                 /* the current input's clock offset, ns */
    int smap, pmap;               /* the current input needs temp.pa_smap / temp.pa_pmap */
    int64_t *pids;                /* pids taken by earlier inputs (after renumbering) */
    size_t npids, cap;
    FILE *log;                    /* warnings (a pid renumbered) */
} pa_mctx_t;

#define PA_SQL_MAX 16384
/*! pa_merge_cat() : appends printf output to sql (PA_SQL_MAX bytes); -1 once it does not fit. */
int pa_merge_cat(char *sql, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*! pa_merge_table_cols() : column names of schema.table into cols[sz] (each NUL-terminated, an
 *  empty name ends the list). Returns their count (0: no such table). */
int pa_merge_table_cols(sqlite3 *db, const char *schema, const char *table, char *cols, size_t sz);
/*! pa_merge_prepare_tables() : checks that merge knows every table and column of the attached
 *  input and creates the tables the output lacks (with the input's own CREATE statement);
 *  present[i] = 1 for each spec entry (pa_merge_spec() order) the input has. 0 or -1 (err set). */
int pa_merge_prepare_tables(pa_mctx_t *m, const pa_minput_t *in, char *present);
/*! pa_merge_copy_rows() : INSERT INTO `into`(cols) SELECT <each column transformed by its kind>
 *  FROM src.<t> AS s [WHERE `where`]. 0 or -1 (err set). */
int pa_merge_copy_rows(pa_mctx_t *m, const pa_mtable_t *t, const char *into, const char *where);
/*! pa_merge_input() : merges the attached input in[i] (inside the caller's transaction). 0 or -1. */
int pa_merge_input(pa_mctx_t *m, pa_minput_t *in, size_t i);

/*! pa_merge_exec() : sqlite3_exec with the message in err ("<what>: <sqlite message>").
 *  Returns 0 or -1. */
int pa_merge_exec(sqlite3 *db, const char *sql, const char *what, char *err, size_t errsz);

#endif
