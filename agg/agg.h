/* agg.h - the aggregator: drains every ring, keeps online statistics, streams the spool. */
#ifndef PA_AGG_H
#define PA_AGG_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/pa_devmetrics.h"
#include "../common/pa_hostctr.h"
#include "../common/pa_record.h"

/* Online statistics of one key (spec: asys-stats-reports.txt, "Avg/Med/Min/Max/StdDev"):
 * median of an even count is the mean of the two middle values; stddev of one sample is 0
 * (population standard deviation, common/pa_stddev.h). */
typedef struct pa_stat {
    uint64_t count;
    uint64_t total;     /* ns (or bytes for size statistics) */
    uint64_t min, max;
    double mean, m2;    /* Welford */
    double median;      /* valid after pa_stat_finish() */
    int median_exact;   /* 0 when the sample budget ran out: writer recomputes from the DB */
} pa_stat_t;

/* Categories of summary statistics; each keyed by a string (and a style/extra tag). */
enum pa_stat_cat {
    PA_CAT_HGTX_RANGE = 1,  /* key: display name ("domain:range" or "range"), tag: 0 push/pop, 1 start/end */
    PA_CAT_OSRT = 2,        /* key: function name */
    PA_CAT_ZE_API = 3,      /* key: API name (issue 4) */
    PA_CAT_KERNEL = 4,      /* key: kernel name (issue 4) */
    PA_CAT_MEMOP = 5,       /* key: "[memcpy Host-to-Device]" ... (issue 4) */
    PA_CAT_HGTX_PROJ = 6,   /* key: range name (issue 5) */
};

typedef struct pa_stat_row {
    int cat;
    uint32_t tag;
    uint32_t key_id;     /* STRING id of the key in the spool (0: none, e.g. synthetic rows) */
    const char *key;     /* interned, valid until pa_agg_free() */
    size_t key_len;
    pa_stat_t st;
} pa_stat_row_t;

/* Per-thread bookkeeping the summary and the THREADS table need. */
typedef struct pa_thread_info {
    uint32_t tid;
    char name[16];
    uint64_t records;   /* committed by the producer */
    uint64_t drops;     /* refused by a full ring */
    uint64_t first_ns, last_ns;
} pa_thread_info_t;

/* Host counters (agg/agg_hc.c), for the summary; strings interned (valid until pa_agg_free()). */
typedef struct pa_hc_event_res {
    uint32_t status;      /* enum pa_hc_status (common/pa_hostctr.h) */
    uint32_t column;      /* index of its values, PA_HC_NO_COLUMN when not counted */
    int err;              /* errno of the failed open */
    const char *name, *asked, *encoding, *detail;
} pa_hc_event_res_t;

typedef struct pa_hc_thread_res {
    uint32_t tid;
    int at_exit;          /* 1: read at the thread's exit; 0: at its last range */
    uint64_t enabled, running; /* ns the group was enabled / counting */
    uint32_t n;
    uint64_t v[PA_HC_MAX_EVENTS]; /* since the thread's first range, scaled (by column) */
} pa_hc_thread_res_t;

typedef struct pa_hc_results {
    pa_hc_event_res_t *ev; size_t nev;     /* every asked or substituted event, in order */
    uint32_t ncols;                        /* counted events */
    pa_hc_thread_res_t *thr; size_t nthr;  /* threads that read their group at least once */
    uint64_t threads_opened, threads_failed, threads_no_fds;
    uint64_t unmatched;       /* reads whose HGTX record was lost */
    uint64_t ranges_with, ranges_without, cross_thread; /* ranges with deltas / without / ended elsewhere */
} pa_hc_results_t;

/* Device metric streams (agg/agg_dm.c): per device, the sums of every metric over all its
 * intervals (the online utilization's inputs, docs/utilization.md), the peaks' properties and the
 * first and last sysman readings. Strings and arrays valid until pa_agg_free(). */
typedef struct pa_dm_dev_res {
    uint32_t device, state, nmetrics;   /* state: PA_DM_* of its streamer */
    uint32_t result;                    /* ze_result_t of a failed streamer */
    uint64_t period_ns, intervals, dropped_reads;
    uint64_t first_ns, last_ns;         /* start of the first interval, end of the last */
    const char *group;
    const char **names, **units;        /* nmetrics each, the group's order */
    const double *sums;                 /* nmetrics: Σ value over the intervals */
    int have_peaks;
    pa_dm_peaks_t peaks;
    uint32_t nsysman;                   /* sysman readings */
    pa_dm_sysman_t sm_first, sm_last;
} pa_dm_dev_res_t;

typedef struct pa_agg_results {
    pa_stat_row_t *rows; size_t nrows;
    pa_thread_info_t *threads; size_t nthreads;
    uint64_t records_total, drops_total;
    uint64_t late_records;          /* produced after the session's end (counted, not stored):
                                       after a ring's exit-time cut-off, plus late_no_ring */
    uint64_t late_no_ring;          /* of those: events of threads without a ring once the exit
                                       path began (pa_late_no_ring as of the final drain) */
    uint64_t hgtx_misuse_pop_empty; /* pop on an empty stack */
    uint64_t hgtx_misuse_bad_end;   /* end of an unknown or already-ended id */
    uint64_t hgtx_unterminated;     /* ranges still open at exit (their end was not dropped) */
    uint64_t spool_records, spool_bytes_raw, spool_bytes_compressed;
    uint64_t first_ns, last_ns;     /* session span */
    uint64_t hgtx_depth_overflow;   /* pushes beyond max_stack_depth (their ranges are lost) */
    uint64_t spool_errors;          /* records the spool refused (disk full...) */
    uint64_t spool_pipe_waits;      /* times the drain found the spool thread's pipe full */
    uint64_t spool_pipe_wait_ns;    /* and waited for room in it, ns in all */
    uint64_t hgtx_misuse_bad_domain; /* calls with a domain handle never created or destroyed */
    uint64_t unrecorded;            /* events the collector could not put in any ring
                                       (pa_unrecorded as of the final drain) */
    /* start/end ranges cut by a full ring (consequences of drops, neither misuse nor open) */
    uint64_t hgtx_drop_end_no_start; /* ends whose start record was dropped */
    uint64_t hgtx_drop_start_no_end; /* ranges left open at exit because their end was dropped */
    /* waits of records that found their ring full (common/pa_ring.h pa_ring_waits), indexed by
     * PA_RING_SRC_* (0 unused): count, total ns, given up (as of the final drain) */
    uint64_t ring_full_waits[5], ring_full_wait_ns[5], ring_full_given_up[5];
    const pa_hc_results_t *hc;      /* host counters, NULL when none were asked */
    const pa_dm_dev_res_t *dm;      /* device metric streams, ndm devices (NULL: none) */
    size_t ndm;
} pa_agg_results_t;

typedef struct pa_agg_config {
    const char *spool_path;      /* zstd spool file, created */
    _Atomic uint64_t *spool_published; /* NULL, or where the spool's whole-frame bytes are stored
                                    after each frame (a DB writer follows the file) */
    _Atomic int *behind;         /* NULL, or set to 1 while a drain pass finds a full batch waiting
                                    in a ring (the DB thread then waits: the rings go first) */
    uint64_t spool_flush_ns;     /* staged records become a frame this often (default 250 ms),
                                    or, when fewer than 4096 came since the last frame, once it
                                    is 100 ms old: bounds what a kill loses and the DB's lag */
    uint64_t poll_interval_ns;   /* sleep between drains when idle (default 1 ms) */
    size_t median_budget;        /* max samples kept for exact medians over all keys */
    int zstd_level;              /* default 1 */
    int threads_later;           /* 1: no spool thread until pa_agg_start_thread() (pa_agg_open) */
    /* Bounds on in-flight state (0 = default); memory never grows with run length. */
    size_t max_open_ranges;      /* open start/end ranges + early ends (default 1 M); beyond:
                                    a start is closed at once as unterminated, an end counted bad */
    /* Device-memory stacks (PROFAGENT_* values the session passes; 0/NULL in unit tests). */
    uint32_t callstack_depth;    /* PROFAGENT_CALLSTACK_DEPTH: application frames per stack */
    const char *callstack_groups; /* PROFAGENT_CALLSTACK_GROUPS rules, stored in the DB; NULL = none */
    int symbols_system_debuginfo; /* PROFAGENT_SYMBOLS_SYSTEM_DEBUGINFO: lines of system libraries */
    uint32_t max_stack_depth;    /* push/pop depth kept per thread, all domains (default
                                    1 M, the stack grows on demand: 32 bytes a level); deeper
                                    pushes are counted (hgtx_depth_overflow) and their pops
                                    skipped */
} pa_agg_config_t;

#define PA_AGG_DEFAULT_POLL_NS 1000000ull
#define PA_AGG_DEFAULT_FLUSH_NS 250000000ull
#define PA_AGG_DEFAULT_MEDIAN_BUDGET ((size_t)2 << 20) /* samples (4 bytes each) */
#define PA_AGG_DEFAULT_MAX_OPEN ((size_t)1 << 20)
#define PA_AGG_DEFAULT_MAX_DEPTH (1u << 20)

/*! pa_agg_start() : pa_agg_open() then pa_agg_start_thread(). Returns 0, or -1 (errno set) when
 *  the thread or the spool could not be created (the agent then runs without collection). */
int pa_agg_start(const pa_agg_config_t *cfg);

/*! pa_agg_open() : the aggregator's state and its spool (created), no thread: until
 *  pa_agg_start_thread() the rings are drained only by the stop (pa_agg_stop_by). Returns 0,
 *  or -1 (errno set) when the spool could not be created or the aggregator is open already. */
int pa_agg_open(const pa_agg_config_t *cfg);

/*! pa_agg_start_thread() : starts the spool thread and the aggregator thread of the open
 *  aggregator; once only (a second call returns 0). Returns 0, or the pthread_create() error of
 *  the aggregator thread (the stop then drains everything; a spool thread that could not start
 *  leaves its work to the drain). */
int pa_agg_start_thread(void);

/*! pa_agg_stop_by() : stops the thread and, on the caller, drains every ring once more
 *  (until half of the time left before `deadline_ns`, pa_clock_ns() ns), resolves what is
 *  open, flushes and closes the spool (its thread waited for until `deadline_ns`). Returns the
 *  results (owned by the aggregator), or NULL when the thread was still in a pass at
 *  `deadline_ns` (it keeps the state: nothing is freed). */
const pa_agg_results_t *pa_agg_stop_by(uint64_t deadline_ns);

/*! pa_agg_stop() : pa_agg_stop_by(now + `timeout_ns`). */
const pa_agg_results_t *pa_agg_stop(uint64_t timeout_ns);

/*! pa_agg_free() : releases the results returned by pa_agg_stop() (row keys included) and
 *  the aggregator's memory; call after the writer is done. Safe with nothing to free. */
void pa_agg_free(void);

/*! pa_stat_stddev() : population standard deviation (common/pa_stddev.h) in the unit of the values; 0 for n <= 1. */
double pa_stat_stddev(const pa_stat_t *st);

/*! pa_agg_after_fork_child() : forgets the parent's thread and state in a fork child. */
void pa_agg_after_fork_child(void);

#endif
