/* stream.c - the DB thread: follows the spool as the aggregator writes it and commits rows while the program runs. */
#define _GNU_SOURCE /* pthread_cond_clockwait */
#include <errno.h>
#include <signal.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../common/pa_clock.h"
#include "../common/pa_log.h"
#include "../common/pa_thread.h"
#include "../common/pa_outname.h"
#include "../common/pa_spool.h"
#include "writer_internal.h"

/* Provided by the collector when linked into the agent: the thread is the agent's own, its
 * calls are not recorded. Weak: the writer also links without it (CLI, tests). */
void pa_thread_mark_agent(void) __attribute__((weak));

#define STREAM_IDLE_NS 20000000ull     /* wait for new frames when the spool is read up */
#define STREAM_LOOK_NS 50000000ull     /* at least this long between two looks, when much waits */
#define STREAM_LOOK_BYTES (32u << 10)  /* compressed spool bytes waiting that make a look due before
                                          the commit interval: bounds the exit's tail */
#define STREAM_EXIT_IDLE_NS 2000000ull /* during the exit: the wait for the last drain's next frame */
#define STREAM_EXIT_COMMIT_NS 100000000ull /* the exit's own load commits this often (streamed DB) */
#define STREAM_CREATE_NS 500000000ull  /* a small session gets its DB this long after its first frame */
#define STREAM_SMALL_SPOOL (512u << 10) /* streamed: compressed spool bytes below which pages are 4 KiB */
#define STREAM_CHECK_EVERY 4096u       /* records between two looks at the clock */
#define STREAM_STOP_EVERY 1024u        /* records between two looks at stop_asked (the exit's wait)
                                          and at the aggregator's backlog */
#define STREAM_YIELD_MAX_NS 5000000ull /* longest step aside per STREAM_STOP_EVERY records */

/* Why the spool stays between the aggregator and the DB: it is the unbounded buffer with a
 * bounded memory (the aggregator never waits for SQLite and never drops for it), and after a
 * kill -9 it still holds the tail the DB had not committed (`profagent recover`). */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;        /* CLOCK_MONOTONIC (pa_writer_stream_start) */
    int thread;               /* the DB thread runs */
    int stop;                 /* finish asked: the DB thread hands the connection over */
    int busy;                 /* the DB thread is in a look (it holds the connection) */
    int done;                 /* the DB thread ended: the connection is the caller's */
    /* configuration */
    char db_template[PATH_MAX];
    char spool_path[PATH_MAX + 16];
    int overwrite;
    uint64_t commit_ns;
    const pa_session_meta_t *meta;
    /* the DB thread's own (the caller's after `done`) */
    pa_spool_reader_t *rd;
    pa_dbw_t *w;
    int failed;               /* creating or loading failed: the DB is removed at the end */
    int truncated;
    char final[PATH_MAX];
    uint64_t first_frame_ns, last_commit_ns, committed;
    uint64_t read_up;         /* published bytes everything was loaded from; 0 while behind */
    uint64_t loaded;          /* spool records in the DB when the exit's load was cut */
    int thread_db;            /* the DB is the DB thread's (WAL, committed as it goes) */
} s = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static _Atomic uint64_t published; /* the aggregator's whole-frame spool bytes */
static _Atomic int agg_behind;     /* the aggregator has full batches waiting in rings */
static _Atomic int stop_asked;     /* s.stop, read without the lock while loading */
static _Atomic int exiting;        /* the exit began: look at once, keep the connection open */
/* The exit's bound on the final load (pa_writer_stream_bound): the load stops at cut_at_ns or
 * when cut_asked() says a signal wants the process to end; cut_why says which stopped it. */
static uint64_t cut_at_ns;
static int (*cut_asked)(void);
static int cut_why; /* 0 not cut, 1 the deadline, 2 a signal */
static _Atomic int db_tid;         /* the DB thread's kernel tid while it runs, else 0 */
static _Atomic uint64_t committed_pub; /* spool records the DB thread committed (read by the exit) */
static long (*handoff_split)(uint64_t, const pa_agg_results_t *, const char *, const char *); /* pa_writer_stream_handoff */
static void (*handoff_done)(int, const char *, const char *);
static uint64_t kill_at_records; /* tests: the finisher kills itself past this many records (0: never) */

_Atomic uint64_t *pa_writer_stream_published(void)
{
    return &published;
}

_Atomic int *pa_writer_stream_agg_behind(void)
{
    return &agg_behind;
}

/* While the aggregator has full rings to drain the DB thread steps aside (on a busy machine it
 * would take the aggregator's core and the rings would drop), for at most STREAM_YIELD_MAX_NS
 * per step so the DB still advances under a producer that never pauses (5 ms per 1024 records:
 * the share it had with 20 ms per 4096). */
static void stream_yield(void)
{
    if (!atomic_load_explicit(&agg_behind, memory_order_relaxed))
        return;
    uint64_t until = pa_clock_ns() + STREAM_YIELD_MAX_NS;
    struct timespec ms = {0, 1000000};
    while (atomic_load_explicit(&agg_behind, memory_order_relaxed) && pa_clock_ns() < until)
        syscall(SYS_nanosleep, &ms, NULL); /* raw: never the OSRT wrapper */
}

/* Removes a DB this session created (and its WAL files, or the rollback journal the finisher's
 * DB had: a hot journal left beside no DB would roll back into a later DB of that name). */
static void remove_db(const char *path)
{
    char side[PATH_MAX + 64];
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-journal", path);
    unlink(side);
}

/* Creates the DB (`wal` for streaming) under a temporary name beside the template, then gives it
 * the first free name like the template (pa_outname_link): a reader, or a kill, never meets a
 * claimed DB without its tables. Returns 0, or -1 (logged; s.failed set). */
static int stream_create(int page_size, int wal)
{
    char tmp[PATH_MAX + 32];
    if (snprintf(tmp, sizeof tmp, "%s.%ld.creating", s.db_template, (long)getpid()) >= (int)sizeof tmp) {
        pa_err("output", "the DB name %s is too long", s.db_template);
        s.failed = 1;
        return -1;
    }
    remove_db(tmp); /* a leftover of a process of this pid killed while creating */
    s.w = pa_dbw_create(tmp, page_size, wal, s.meta);
    if (!s.w) {
        remove_db(tmp);
        s.failed = 1;
        return -1;
    }
    /* `profagent recover` finds the DB a killed session streamed by it and completes it in place */
    pa_dbw_meta_text(s.w, "spool_path", s.spool_path);
    if (pa_dbw_close_file(s.w) != 0) {
        remove_db(tmp);
        s.failed = 1;
        return -1;
    }
    /* the DB takes its name by a hard link, in one step: a kill at any moment leaves either no
     * DB of this session or the whole file (claiming an empty file first and moving the DB onto
     * it left a 0-byte DB when the kill came in between) */
    static const char *const sides[] = {"-wal", "-shm", NULL};
    int rc = pa_outname_link(tmp, s.db_template, s.overwrite, sides, s.final, sizeof s.final);
    if (rc != 0 && errno != EEXIST && errno != ENAMETOOLONG) {
        /* no hard links on this file system: claim, then move at once (a window of two calls) */
        rc = pa_outname_claim(s.db_template, s.overwrite, s.final, sizeof s.final);
        if (rc == 0) {
            char side[PATH_MAX + 8];
            snprintf(side, sizeof side, "%s-wal", s.final);
            unlink(side);
            snprintf(side, sizeof side, "%s-shm", s.final);
            unlink(side);
            if (rename(tmp, s.final) != 0) {
                pa_err("output", "cannot move the new DB %s to %s: %s", tmp, s.final, strerror(errno));
                remove_db(tmp);
                s.failed = 1;
                return -1; /* the claimed name is removed at the end (s.final) */
            }
        }
    } else if (rc == 0) {
        unlink(tmp);
    }
    if (rc != 0) {
        pa_err("output", "cannot create a DB named like %s: %s", s.db_template,
               errno == EEXIST ? "100000 names taken" : strerror(errno));
        s.final[0] = '\0';
        s.failed = 1;
        remove_db(tmp);
        return -1;
    }
    if (pa_dbw_moved(s.w, s.final) != 0 || pa_dbw_resume(s.w) != 0) {
        s.failed = 1;
        return -1;
    }
    return 0;
}

static int stream_open_reader(void)
{
    if (!s.rd)
        s.rd = pa_spool_open_read(s.spool_path);
    return s.rd ? 0 : -1;
}

/* Whether the exit's final load must stop here (the deadline passed, or a signal came). */
static int stream_cut(void)
{
    if (cut_at_ns && pa_clock_ns() >= cut_at_ns)
        cut_why = 1;
    else if (cut_asked && cut_asked())
        cut_why = 2;
    return cut_why;
}

static void stream_commit(void);

/* Loads what the spool holds up to `limit` (final: to its end). Returns pa_spool_next()'s last
 * result: 2 when everything published was read, 0 at a clean end, -1 truncated or corrupt;
 * 4 when the final load was cut (stream_cut). */
static int stream_load(uint64_t limit, int final)
{
    const pa_record_t *rec;
    const uint8_t *payload;
    int rc;
    uint32_t k = 0;
    pa_spool_follow(s.rd, limit, final);
    while ((rc = pa_spool_next(s.rd, &rec, &payload)) == 1) {
        pa_dbw_record(s.w, rec, payload);
        if (final) {
            /* a look per STREAM_STOP_EVERY records (~1 ms of loading) */
            if (++k % STREAM_STOP_EVERY == 0) {
                if (stream_cut())
                    return 4;
                if (kill_at_records && pa_dbw_records(s.w) >= kill_at_records)
                    raise(SIGKILL); /* tests: a finisher killed in the middle of a transaction */
                /* Why the final load commits as it goes: cut at the deadline it commits what it
                 * loaded, and one transaction of a whole tail took 0.77 s to commit past the
                 * deadline at a load of 40; a commit per STREAM_EXIT_COMMIT_NS keeps that short */
                if (s.thread_db && pa_clock_ns() - s.last_commit_ns >= STREAM_EXIT_COMMIT_NS) {
                    stream_commit();
                    if (s.failed)
                        return 0; /* stops here: a failed DB is removed (stream_final) */
                }
            }
            continue;
        }
        if (++k % STREAM_STOP_EVERY == 0) {
            if (atomic_load_explicit(&stop_asked, memory_order_relaxed))
                return 3; /* the final part goes on from here, on the open connection */
            /* at the application's priority this thread competes with the aggregator as an
             * equal: it steps aside as soon as the rings wait (a 1024-record step is ~1-2 ms) */
            stream_yield();
            if (k < STREAM_CHECK_EVERY)
                continue;
            k = 0;
            if (pa_clock_ns() - s.last_commit_ns >= s.commit_ns)
                return 1; /* commit now; the rest follows */
        }
    }
    return rc;
}

static void stream_commit(void)
{
    s.last_commit_ns = pa_clock_ns();
    if (pa_dbw_records(s.w) == s.committed)
        return;
    if (pa_dbw_commit(s.w) != 0)
        s.failed = 1;
    /* a DB thread that is behind commits without closing: the WAL is emptied here as at a
     * suspend, so what the exit copies back into the plain file is its own last transaction,
     * not up to wal_autocheckpoint pages (16 MiB) of the run */
    pa_dbw_empty_wal(s.w);
    s.committed = pa_dbw_records(s.w);
    atomic_store_explicit(&committed_pub, s.committed, memory_order_relaxed);
}

/* Whether a look is due, the DB being read up to s.read_up. Each look has a fixed cost (the
 * reconnect parses the schema, the commit and the WAL truncation: ~0.9 ms of CPU), so a program
 * making few records gets one look per commit interval, and one making many a look as soon as
 * STREAM_LOOK_BYTES of spool wait (every STREAM_LOOK_NS at most): what is left for the exit is
 * at most the larger of STREAM_LOOK_BYTES of spool (a few ms of loading) and the program's last
 * STREAM_LOOK_NS. (One look per STREAM_LOOK_NS whatever was waiting: samples/gemm's ~10 k records
 * per second took ~28 looks per second, ~25 ms of CPU of its ~1 s.) */
static int stream_look_due(uint64_t pub, uint64_t now)
{
    uint64_t since = now - s.last_commit_ns;
    uint64_t soonest = s.commit_ns < STREAM_LOOK_NS ? s.commit_ns : STREAM_LOOK_NS;
    if (since < soonest)
        return 0;
    return since >= s.commit_ns || pub - s.read_up >= STREAM_LOOK_BYTES;
}

/* One look at the spool while the program runs. Returns 1 when it is read up (wait). Between
 * two looks the DB is closed (pa_dbw_suspend): no descriptor stays open while the program runs
 * on (the spool reader's neither, pa_spool_follow). */
static int stream_step(void)
{
    uint64_t pub = atomic_load_explicit(&published, memory_order_acquire);
    uint64_t now = pa_clock_ns();
    if (s.failed || !pub || pub == s.read_up)
        return 1;
    int ex = atomic_load_explicit(&exiting, memory_order_relaxed); /* the exit: every frame at once */
    if (!ex && s.w && s.read_up && !stream_look_due(pub, now))
        return 1;
    stream_yield(); /* the rings first */
    if (!s.w) {
        /* the page size follows the size: a session that stays small gets 4 KiB pages */
        if (!s.first_frame_ns)
            s.first_frame_ns = now;
        /* (a short commit interval, as tests ask for, shortens it: 50 intervals at most) */
        uint64_t delay = s.commit_ns * 50 < STREAM_CREATE_NS ? s.commit_ns * 50 : STREAM_CREATE_NS;
        if (pub < STREAM_SMALL_SPOOL && now - s.first_frame_ns < delay)
            return 1;
        /* not pa_writer_page_size(): a streamed DB commits every look, and each commit rewrites
         * the partly filled last page of every table it touched (64 KiB pages are worth it for
         * the one large transaction of a DB written at exit) */
        if (stream_open_reader() != 0 || stream_create(pub >= STREAM_SMALL_SPOOL ? 65536 : 4096, 1) != 0) {
            s.failed = 1;
            return 1;
        }
        s.last_commit_ns = now;
    } else if (pa_dbw_resume(s.w) != 0) {
        s.failed = 1;
        return 1;
    }
    uint64_t n0 = pa_dbw_records(s.w), t0 = pa_clock_ns();
    int rc = stream_load(pub, 0);
    pa_dbg("writer", "look: %llu records loaded in %.2f ms (spool published: %llu bytes)",
           (unsigned long long)(pa_dbw_records(s.w) - n0), (pa_clock_ns() - t0) / 1e6, (unsigned long long)pub);
    if (rc == 3)
        return 1; /* finish asked: the final part loads the rest, the connection stays open */
    if (rc < 0) {
        pa_warn("writer", "the spool %s cannot be read on; the DB stops at record %llu", s.spool_path,
                (unsigned long long)pa_dbw_records(s.w));
        s.failed = 1;
    }
    if (pa_dbw_failed(s.w))
        s.failed = 1;
    if (s.failed)
        return 1;
    if (rc == 1) { /* the commit interval passed while loading: commit, go on */
        stream_commit();
        s.read_up = 0; /* behind: the next look does not wait for the interval */
        return 0;
    }
    s.read_up = pub;
    if (ex)
        return 1; /* the exit takes the open connection: no commit nor close in between */
    if (pa_dbw_suspend(s.w) != 0)
        s.failed = 1;
    else
        atomic_store_explicit(&committed_pub, pa_dbw_records(s.w), memory_order_relaxed);
    s.last_commit_ns = pa_clock_ns(); /* the next look is an interval after this one's end */
    return 1;
}

/* The end of the session: the rest of the spool, the aggregates, META; or removal. Returns
 * pa_writer_stream_finish()'s result. */
static int stream_final(const pa_agg_results_t *res, int empty, int wal)
{
    if (empty && !s.w && !s.failed)
        return 1;
    if (!res) { /* the aggregator did not finish: the DB keeps what it committed */
        if (s.w)
            pa_dbw_abandon(s.w);
        s.w = NULL;
        return s.final[0] && !s.failed ? -2 : -1;
    }
    if (!s.w && !s.failed) {
        struct stat st;
        uint64_t size = stat(s.spool_path, &st) == 0 ? (uint64_t)st.st_size : 0;
        if (stream_create(pa_writer_page_size(size), wal) == 0 && stream_open_reader() != 0) {
            pa_warn("writer", "no spool '%s': the DB holds the aggregates only", s.spool_path);
            s.truncated = 1;
        }
    }
    if (s.w && !s.failed && s.rd && pa_dbw_resume(s.w) != 0)
        s.failed = 1;
    if (s.w && !s.failed && s.rd) {
        uint64_t t0 = pa_clock_ns(), n0 = pa_dbw_records(s.w);
        int rc = stream_cut() ? 4 : stream_load(UINT64_MAX, 1);
        pa_dbg("writer", "exit: the tail of %llu records loaded in %.1f ms%s",
               (unsigned long long)(pa_dbw_records(s.w) - n0), (pa_clock_ns() - t0) / 1e6, rc == 4 ? " (cut)" : "");
        if (rc == 4 && !empty) {
            /* the exit's bound: what is loaded is committed (the DB stays valid, as a kill leaves
             * it: no db_complete, session_complete = 0, no summary tables, which `profagent
             * recover` computes from the rows when it completes this DB in place from the spool) */
            s.loaded = pa_dbw_records(s.w);
            pa_dbw_meta_text(s.w, "exit_load_cut", cut_why == 1 ? "deadline" : "signal");
            pa_dbw_commit(s.w); /* failing, the DB keeps the DB thread's last commit: valid too */
            s.w = NULL;        /* left open: the sources still hold statements on it (pa_dbw_abandon) */
            return -3;
        }
        if (rc < 0 && pa_spool_fsize_cut(NULL)) { /* the session says it, with the limit */
            pa_dbg("writer", "spool '%s' (cut by the file size limit) ends after %llu records", s.spool_path,
                   (unsigned long long)pa_dbw_records(s.w));
            s.truncated = 1;
        } else if (rc < 0) {
            pa_warn("writer", "spool '%s' is truncated after %llu records; the DB keeps those", s.spool_path,
                    (unsigned long long)pa_dbw_records(s.w));
            s.truncated = 1;
        }
    }
    if (s.w && !s.failed && !empty) {
        pa_dbw_t *w = s.w;
        s.w = NULL;
        if (pa_dbw_finish(w, s.truncated, s.meta, res) == 0)
            return 0;
        s.failed = 1;
    }
    if (s.w)
        pa_dbw_abandon(s.w); /* failed or empty: removed below */
    s.w = NULL;
    if (s.final[0])
        remove_db(s.final);
    s.final[0] = '\0';
    return empty && !s.failed ? 1 : -1;
}

static void *stream_main(void *arg)
{
    (void)arg;
    if (pa_thread_mark_agent)
        pa_thread_mark_agent();
    atomic_store(&db_tid, (int)syscall(SYS_gettid));
    /* At the application's priority, not below it: the DB's work is the same CPU whenever it
     * runs, and what a lowered thread (it was nice +5: ~25-30 % of a core on a busy machine) had
     * not done when main returned became the exit's tail (paced exit at 250 k ranges/s 0.07 s ->
     * 0.04 s, medians of 7 alternated runs) and the DB's lag behind a kill. The rings still go
     * first: stream_yield steps aside while the aggregator has full batches waiting. */
    pthread_mutex_lock(&s.mu);
    while (!s.stop) {
        s.busy = 1;
        pthread_mutex_unlock(&s.mu);
        int idle = stream_step();
        pthread_mutex_lock(&s.mu);
        s.busy = 0;
        if (s.stop)
            pthread_cond_broadcast(&s.cv); /* the finish waits for the look's end */
        else if (idle) {
            uint64_t idle_ns = atomic_load(&exiting) ? STREAM_EXIT_IDLE_NS : STREAM_IDLE_NS;
            uint64_t t = pa_clock_ns() + (s.commit_ns < idle_ns ? s.commit_ns : idle_ns);
            struct timespec ts = { (time_t)(t / 1000000000ull), (long)(t % 1000000000ull) };
            pthread_cond_clockwait(&s.cv, &s.mu, CLOCK_MONOTONIC, &ts);
        }
    }
    /* the final part runs on the exiting thread (pa_writer_stream_finish): at the application's
     * priority, not this thread's lowered one, which on a busy machine made the exit wait for a
     * core (the connection moves with the lock's ordering; it is never used by two at once) */
    pa_dbg("writer", "the DB thread used %.1f ms of CPU (%llu records loaded)", pa_thread_cpu_ms(),
           (unsigned long long)(s.w ? pa_dbw_records(s.w) : 0));
    s.done = 1;
    pthread_cond_broadcast(&s.cv);
    pthread_mutex_unlock(&s.mu);
    return NULL;
}

int pa_writer_stream_start(const pa_writer_stream_cfg_t *cfg)
{
    if (s.thread || snprintf(s.db_template, sizeof s.db_template, "%s", cfg->db_template) >= (int)sizeof s.db_template ||
        snprintf(s.spool_path, sizeof s.spool_path, "%s", cfg->spool_path) >= (int)sizeof s.spool_path) {
        errno = s.thread ? EBUSY : ENAMETOOLONG;
        return -1;
    }
    s.overwrite = cfg->overwrite;
    s.commit_ns = cfg->commit_ns;
    s.meta = cfg->meta;
    s.stop = s.busy = s.done = s.failed = s.truncated = 0;
    atomic_store(&stop_asked, 0);
    atomic_store(&exiting, 0);
    s.committed = s.first_frame_ns = s.read_up = s.loaded = 0;
    atomic_store(&committed_pub, 0);
    s.final[0] = '\0';
    if (!s.commit_ns)
        return 0; /* everything at exit */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s.cv, &ca);
    pthread_condattr_destroy(&ca);
    return 0;
}

void pa_writer_stream_start_thread(void)
{
    if (!s.commit_ns || s.thread)
        return; /* everything at exit, or started already */
    /* every signal blocked: a file size limit makes a write fail with EFBIG, no SIGXFSZ */
    int rc = pa_thread_spawn(NULL, PA_THREAD_STACK_WORKER, stream_main, NULL);
    if (rc != 0) {
        pa_warn("writer", "cannot start the DB thread (%s): the DB is written at exit", strerror(rc));
        s.commit_ns = 0;
        return;
    }
    s.thread = 1;
}

void pa_writer_stream_bound(uint64_t deadline_ns, int (*cut)(void))
{
    cut_at_ns = deadline_ns;
    cut_asked = cut;
    cut_why = 0;
}

int pa_writer_stream_cut_why(uint64_t *loaded)
{
    if (loaded)
        *loaded = s.loaded;
    return cut_why;
}

/* Why the DB thread goes on loading through the exit, at the application's priority and without
 * waiting for its commit interval: on a loaded machine each thread gets its share of a core, and
 * the DB thread loading the frames the last drain publishes while that drain and the spool thread
 * run is the exit's tail shortened by its share (it was stopped, or lowered to nice +5, and the
 * exit's own load of a 4-producer backlog took 2.7-3.8 s at a load of 30). The exit takes its
 * connection at the end of its look (pa_writer_stream_finish). */
void pa_writer_stream_exit_begins(void)
{
    if (!s.thread)
        return;
    pthread_mutex_lock(&s.mu);
    atomic_store(&exiting, 1);
    pthread_cond_broadcast(&s.cv); /* the next look now, not after the idle wait */
    pthread_mutex_unlock(&s.mu);
}

int pa_writer_stream_finish(const pa_agg_results_t *res, int empty, char *final, size_t size)
{
    int result;
    if (!s.thread) {
        result = stream_final(res, empty, 0);
    } else {
        uint64_t t0 = pa_clock_ns();
        /* Why the connection is taken, not handed over: between two looks the DB thread holds
         * nothing (it waits on the condition variable), and waking it only to have it say so
         * cost a hand-off (a woken thread waits for a core: tens of ms on a loaded machine). In
         * a look it stops at its next STREAM_STOP_EVERY records; that wait ends at the exit's
         * deadline (the DB then keeps the DB thread's last commit). */
        struct timespec ts = { (time_t)(cut_at_ns / 1000000000ull), (long)(cut_at_ns % 1000000000ull) };
        int timed_out = 0;
        pthread_mutex_lock(&s.mu);
        s.stop = 1;
        atomic_store(&stop_asked, 1);
        pthread_cond_broadcast(&s.cv);
        while (s.busy && !s.done && !timed_out)
            timed_out = cut_at_ns ? pthread_cond_clockwait(&s.cv, &s.mu, CLOCK_MONOTONIC, &ts) == ETIMEDOUT
                                  : (pthread_cond_wait(&s.cv, &s.mu), 0);
        timed_out = s.busy && !s.done;
        if (!timed_out) {
            s.thread = 0;
            atomic_store(&db_tid, 0);
        }
        pthread_mutex_unlock(&s.mu);
        pa_dbg("writer", "exit: the DB connection taken over in %.1f ms%s", (pa_clock_ns() - t0) / 1e6,
               timed_out ? " (not: the DB thread was still loading at the exit's deadline)" : "");
        if (timed_out) {
            /* the DB thread's last commit is what the DB holds; the rest is in the spool */
            cut_why = cut_why ? cut_why : 1;
            s.loaded = atomic_load(&committed_pub);
            if (final && size)
                snprintf(final, size, "%s", s.final);
            return s.final[0] && !s.failed ? -3 : -1;
        }
        s.thread_db = 1;
        if (handoff_split && res && !empty && s.w && !s.failed && s.final[0]) {
            /* the rest needs nothing but this thread's state: a fork child continues from here
             * (the records loaded and committed, the loader's state, the aggregates) */
            uint64_t have = pa_dbw_records(s.w);
            long pid = handoff_split(res->spool_records > have ? res->spool_records - have : 0, res, s.final,
                                     s.spool_path);
            if (pid == 0) {
                pa_writer_stream_bound(0, NULL);
                handoff_done(stream_final(res, 0, 1), s.final, s.spool_path);
            }
            if (pid > 0) {
                s.w = NULL; /* the finisher's now: never touched here again */
                if (s.rd)
                    pa_spool_close_read(s.rd);
                s.rd = NULL;
                if (final && size)
                    snprintf(final, size, "%s", s.final);
                return 2;
            }
        }
        result = stream_final(res, empty, 1);
    }
    if (s.rd)
        pa_spool_close_read(s.rd);
    s.rd = NULL;
    if (final && size)
        snprintf(final, size, "%s", s.final);
    return result;
}

void pa_writer_stream_handoff(long (*split)(uint64_t backlog, const pa_agg_results_t *res, const char *db,
                                            const char *spool),
                              void (*done)(int rc, const char *db, const char *spool))
{
    handoff_split = done ? split : NULL;
    handoff_done = done;
}

int pa_writer_stream_fits(uint64_t backlog, uint64_t *projected, uint64_t *limit)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return 1;
    uint64_t have = s.w ? pa_dbw_records(s.w) : 0, bytes = s.w ? pa_dbw_bytes(s.w) : 0;
    /* the bytes per record so far, a quarter more for what the end adds (summary tables, the
     * last pages of each table): wrong towards loading here, which is always right */
    double per = have ? (double)bytes / (double)have : 0;
    uint64_t need = (uint64_t)((double)bytes + per * (double)backlog * 1.25);
    *projected = need;
    *limit = (uint64_t)rl.rlim_cur;
    return have && need <= (uint64_t)rl.rlim_cur;
}

int pa_writer_stream_release(void)
{
    /* Why the session closes its connection before the fork: the finisher must lock the DB
     * against every other connection, this process's too (its fcntl locks are its own, not the
     * child's), and the rows loaded so far must be committed by the process whose locks they were
     * written under. */
    if (!s.w || s.failed || pa_dbw_release(s.w) != 0) {
        s.failed = 1;
        return -1;
    }
    return 0;
}

int pa_writer_stream_lock(int wait_ms, char *why, size_t size)
{
    if (!s.w || s.failed) {
        snprintf(why, size, "the DB failed");
        return -1;
    }
    return pa_dbw_take_exclusive(s.w, wait_ms, why, size);
}

int pa_writer_stream_locked(uint64_t kill_at)
{
    kill_at_records = kill_at ? pa_dbw_records(s.w) + kill_at : 0;
    if (pa_dbw_to_rollback(s.w) != 0) {
        s.failed = 1;
        return -1;
    }
    return 0;
}

void pa_writer_stream_after_fork_child(void)
{
    /* the DB thread does not exist here and the DB is the parent's: forget both (leaked) */
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.cv, NULL);
    s.thread = 0;
    s.w = NULL;
    s.rd = NULL;
    s.final[0] = '\0';
    s.stop = s.busy = s.done = 0;
    atomic_store(&stop_asked, 0);
    atomic_store(&exiting, 0);
    atomic_store(&db_tid, 0);
}
