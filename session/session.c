/* session.c - the session's lifecycle: constructor, meta, paths, aggregator and sources start, exit path, fork. */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../collector/collector.h"
#include "session.h"
#include "../agg/agg.h"
#include "../common/pa_export.h"
#include "../common/pa_log.h"
#include "../common/pa_outname.h"
#include "../common/pa_spool.h"
#include "../writer/writer.h"

static _Atomic int init_done;   /* constructor ran (it may be called twice: run once) */
static _Atomic int finish_done; /* exit path ran (atexit handler or destructor, first wins) */
static pid_t owner_pid;         /* the process whose session this is (not a fork child) */
static int agg_running;

/* Why the agent's threads (aggregator, spool, DB thread, finisher) start at the session's first
 * ring, not in the constructor: a process with more than one thread cannot unshare(CLONE_NEWUSER)
 * (EINVAL), nor do what else the kernel keeps for single-threaded callers, and an application
 * that does so first thing in main() must get what it gets without the agent. Nothing is
 * recorded before the first ring exists, so nothing waits; a session that never records starts
 * none (its exit drains and writes on the ending thread). */
static _Atomic int threads_state; /* 0 not started, 1 starting, 2 started, 3 never (exit or fork child) */
static _Atomic int threads_starter; /* gettid() of the thread starting them (state 1) */

static void session_threads_start(void)
{
    int none = 0;
    if (atomic_load_explicit(&threads_state, memory_order_acquire) || getpid() != owner_pid ||
        !atomic_compare_exchange_strong(&threads_state, &none, 1))
        return;
    atomic_store(&threads_starter, (int)syscall(SYS_gettid));
    pa_agg_start_thread();
    pa_writer_stream_start_thread();
    pa_exitpaths_start_finisher();
    pa_exitwatch_start();
    atomic_store_explicit(&threads_state, 2, memory_order_release);
}

/* The exit began: no thread starts from here on; one being started on another thread is waited
 * for (a few pthread_create calls; at most 1 s) so that the stops below find it. */
static void session_threads_close(void)
{
    int none = 0;
    if (atomic_compare_exchange_strong(&threads_state, &none, 3) ||
        atomic_load(&threads_starter) == (int)syscall(SYS_gettid))
        return; /* none started, or this thread's own start was interrupted (a signal's exit) */
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 1000 && atomic_load(&threads_state) == 1; i++)
        syscall(SYS_nanosleep, &ms, NULL);
}
_Atomic int pa_finish_signal;  /* the signal that ended the session (0: a normal end) */
_Atomic int pa_finish_state;   /* 2 once pa_finish() has completed */

static char db_path[PATH_MAX];
static char spool_path[PATH_MAX + 16];
static char summary_path[PATH_MAX]; /* PROFAGENT_SUMMARY=file:, absolute */
static char hostname[256];
static char cmdline[8192];
static pa_session_meta_t meta;

/* argv joined by spaces, from /proc/self/cmdline (works before main and in any library). */
static void read_cmdline(void)
{
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, cmdline, sizeof cmdline - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0) {
        strcpy(cmdline, "?");
        return;
    }
    while (n > 0 && cmdline[n - 1] == '\0')
        n--;
    for (ssize_t i = 0; i < n; i++)
        if (cmdline[i] == '\0')
            cmdline[i] = ' ';
    cmdline[n] = '\0';
}

static uint64_t clock_ns(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void record_meta(void)
{
    meta.pid = (uint32_t)getpid();
    if (gethostname(hostname, sizeof hostname) != 0)
        strcpy(hostname, "unknown");
    hostname[sizeof hostname - 1] = '\0';
    meta.hostname = hostname;
    read_cmdline();
    meta.cmdline = cmdline;
    meta.start_wall_ns = clock_ns(CLOCK_REALTIME);
    meta.start_mono_ns = pa_clock_ns();
    pa_session_identity(&meta);
}

/* A per-process unique tag for the spool name: two processes expanding the same template
 * (an exec'd child, system(), a shared pid number in another pid namespace) never share one. */
static unsigned spool_tag(void)
{
    unsigned r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
        r = (unsigned)(clock_ns(CLOCK_REALTIME) ^ (uintptr_t)&r);
    return r & 0xffffffu;
}

/* The DB template expanded and placed now, as absolute paths (the final name is claimed at
 * the DB thread creates it, writer/stream.c); the spool "<spool dir or DB dir>/<DB base>.<pid>.<tag>
 * .spool.zst" is created at once. Placement rules and their warnings: pa_outname_place(). */
static int choose_paths(void)
{
    char expanded[PATH_MAX];
    /* the default name carries the rank in a parallel job (pa_outname_default()) */
    const char *tmpl = strcmp(pa_config.output, PA_OUTNAME_DEFAULT) == 0 ? pa_outname_default() : pa_config.output;
    if (pa_outname_expand(tmpl, expanded, sizeof expanded) < 0 ||
        pa_outname_place("PROFAGENT_OUTPUT", pa_config.output, expanded, db_path, sizeof db_path) < 0) {
        pa_err("output", "PROFAGENT_OUTPUT=\"%s\" gives no usable file name (too long); profiling is off",
               pa_config.output);
        return -1;
    }
    if (pa_outname_spool(db_path, pa_config.spool_dir, (long)getpid(), spool_tag(), spool_path,
                         sizeof spool_path) < 0) {
        pa_err("output", "spool path for \"%s\" is too long; profiling is off", db_path);
        return -1;
    }
    if (pa_config.summary == PA_SUMMARY_FILE &&
        (pa_outname_expand(pa_config.summary_path, expanded, sizeof expanded) < 0 ||
         pa_outname_absolute(expanded, summary_path, sizeof summary_path) < 0))
        summary_path[0] = '\0';
    return 0;
}

/* The file size limit RLIMIT_FSIZE as the messages name it, in lim[size]; 0 when there is none. */
static int fsize_limit_text(char *lim, size_t size)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return 0;
    snprintf(lim, size, "the file size limit RLIMIT_FSIZE = %llu bytes (ulimit -f)", (unsigned long long)rl.rlim_cur);
    return 1;
}

/* Why one message for a file size limit: the spool's write, the aggregator's next append, the
 * DB's statement and the exit each said their part (four lines, none saying what was kept);
 * the lower layers now keep it (pa_spool_fsize_cut, pa_writer_fsize_hit) and this names the
 * limit, the file it stopped and what the user has. 1 when it was said. */
static int fsize_failed_message(void)
{
    uint64_t kept = 0;
    int spool_cut = pa_spool_fsize_cut(&kept), os_errno = 0;
    pa_writer_create_error(&os_errno);
    char lim[96];
    /* (a statement whose failure left no OS errno and no file at the limit, under a limit: the
     * limit still, as the one cause a process set for itself) */
    if ((os_errno && os_errno != EFBIG) || !fsize_limit_text(lim, sizeof lim))
        return 0;
    if (spool_cut && !kept) { /* not one whole frame: nothing to recover from, nothing left */
        unlink(spool_path);
        pa_err("agent", "the DB %s could not be written: %s stopped the spool %s at its first write: nothing of the"
               " session was kept", db_path, lim, spool_path);
    } else if (spool_cut)
        pa_err("agent", "the DB %s could not be written: %s stopped the spool %s after its first %llu records, the"
               " rest of the session was dropped; spool kept: with a larger limit, profagent recover %s builds a DB"
               " of those records", db_path, lim, spool_path, (unsigned long long)kept, spool_path);
    else
        pa_err("agent", "the DB %s could not be written: %s stopped it; spool kept: %s holds every record, with a"
               " larger limit build the DB with: profagent recover %s", db_path, lim, spool_path, spool_path);
    return 1;
}

/* The DB was written but a file size limit shaped it: the spool stopped early (the DB holds
 * what it kept), or the DB is larger than the limit (its WAL was not copied back: the -wal file
 * is part of it). One message; the summary's Database line gets the short form in note[size].
 * 0 when neither happened. */
static int fsize_written_message(const char *db, char *note, size_t size)
{
    uint64_t kept = 0, bytes = 0, limit = 0;
    char lim[96];
    if (!fsize_limit_text(lim, sizeof lim))
        return 0;
    if (pa_spool_fsize_cut(&kept)) {
        pa_err("agent", "%s stopped the spool %s after its first %llu records: the DB %s holds those, the rest of"
               " the session was dropped", lim, spool_path, (unsigned long long)kept, db);
        snprintf(note, size, "INCOMPLETE: the first %llu spool records only (%s)", (unsigned long long)kept, lim);
        return 1;
    }
    if (pa_writer_wal_kept(&bytes, &limit)) {
        pa_warn("agent", "the DB %s is complete only together with %s-wal: %s is below its %llu bytes, so its WAL"
                " was not copied back into it; keep %s-wal beside it (%s alone is the DB as of an earlier commit);"
                " opened where the limit is larger (profagent stats) it becomes one file again", db, db, lim,
                (unsigned long long)bytes, db, db);
        snprintf(note, size, "with its %s-wal: keep both (%s)", db, lim);
        return 1;
    }
    return 0;
}

/* The DB could not be written: say so, with the file size limit when there is one (the usual
 * reason besides a full disk), and where the spool stays. */
static void db_failed_message(void)
{
    struct rlimit rl;
    char why[160] = "";
    int os_errno = 0;
    if (fsize_failed_message())
        return;
    const char *err = pa_writer_create_error(&os_errno);
    if (os_errno == EMFILE && getrlimit(RLIMIT_NOFILE, &rl) == 0)
        snprintf(why, sizeof why, " (open files limit RLIMIT_NOFILE = %llu; raise it with ulimit -n)",
                 (unsigned long long)rl.rlim_cur);
    else if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        snprintf(why, sizeof why, " (file size limit RLIMIT_FSIZE = %llu bytes)", (unsigned long long)rl.rlim_cur);
    pa_err("agent", "the DB %s could not be written%s%s%s; spool kept: %s (profagent recover %s)", db_path,
           err[0] ? ": " : "", err, why, spool_path, spool_path);
}

void pa_session_db_failed(void)
{
    db_failed_message();
}

_Atomic int pa_finish_by_exec;
static long run_pid; /* the pid `profagent run` exec'd (PROFAGENT_RUN_PID), 0 without it */

int pa_session_under_run(void)
{
    return run_pid != 0;
}

/* Why fds 1 and 2 are pinned (common/pa_log.c): the summary and the agent's messages go to
 * stdout / stderr only while they are the files they were when the session began: an
 * application started with `2>&-` that opens its own log (it gets fd 2) never finds the summary
 * in it. A close-on-exec copy of stderr (closed in fork children) takes the summary when the
 * application closed or replaced its stderr before exit. */
static void summary_keep_stderr(void)
{
    pa_log_pin_std(pa_config.summary != PA_SUMMARY_STDOUT && pa_config.summary != PA_SUMMARY_NONE);
}

/* PROFAGENT_SUMMARY=file: opened without waiting: a FIFO with no reader (ENXIO) is refused at
 * once, as the DB output refuses FIFOs, instead of blocking the exit in open(). -1 after the
 * warning (the summary then goes to stderr). */
static int summary_file_open(void)
{
    if (!summary_path[0])
        return -1;
    int fd = open(summary_path, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0666);
    if (fd < 0 && errno == ENXIO)
        pa_warn("summary", "PROFAGENT_SUMMARY=file:%s: %s is a FIFO with no reader; the summary goes to stderr",
                pa_config.summary_path, summary_path);
    else if (fd < 0)
        pa_warn("summary", "PROFAGENT_SUMMARY=file:%s: cannot write %s: %s; the summary goes to stderr",
                pa_config.summary_path, summary_path, strerror(errno));
    return fd;
}

/* Writes the rendered summary to fd within budget_ns (pa_log_write_bounded); a cut summary is
 * counted as a dropped message. Returns 1 when all of it was written. */
static int summary_put(int fd, const char *buf, size_t len, uint64_t budget_ns)
{
    size_t w = fd >= 0 ? pa_log_write_bounded(fd, buf, len, budget_ns) : 0;
    if (w == len)
        return 1;
    atomic_fetch_add(&pa_log_dropped, 1);
    return 0;
}
/* Nothing recorded at all (no ranges, calls, device operations or memory events, none lost) in
 * a session that ended normally: a shell, env or pyenv helper exec'd on the way to the real
 * program. Such a session writes no DB, only one line instead of the summary. (A session ended
 * by a fatal signal keeps its DB: it records how the process ended.) */
static int session_empty(const pa_agg_results_t *res)
{
    return meta.complete && !res->records_total && !res->drops_total && !res->late_records && !res->unrecorded &&
           !res->spool_errors && !res->hgtx_depth_overflow && !atomic_load(&pa_unrecorded);
}

/* SIGPIPE and SIGXFSZ blocked on this thread while the exit path writes (DB, summary,
 * messages): a reader that closed the pipe early, or a file size limit (RLIMIT_FSIZE) below
 * the DB's size, must not kill the application or change its exit status; the write fails
 * with EPIPE / EFBIG instead and is reported. A signal our writes left pending is consumed
 * before the mask is restored, so the application never gets it; one the application had
 * pending already is kept. */
typedef pa_log_sig_guard_t pipe_guard_t;
#define pipe_block pa_log_sig_block
#define pipe_restore pa_log_sig_restore

/* The summary (or, for an empty session, one line) at PROFAGENT_SUMMARY's destination.
 * Rendered in memory and written with raw bounded writes (pa_log_write_bounded): never through
 * the application's stdout/stderr FILE (whose buffered text an _exit() or a fatal signal must
 * discard, and whose lock another thread may hold), never waiting past deadline_ns (pa_clock_ns()
 * time) for a reader that does not read: what does not fit by then is dropped and counted. Returns
 * 1 when a summary was printed. */
static int print_summary(const pa_agg_results_t *res, const char *db, int empty, const char *db_note,
                         uint64_t deadline_ns)
{
    /* an empty session (the shell or pyenv shims exec'd on the way to the real program) says so
     * only at PROFAGENT_LOG=info or above: a launch through three shims then prints one summary;
     * except the program `profagent run` started when it ends by exiting (not by an exec): its
     * user asked for this one and would otherwise get no word at all */
    int asked = run_pid == (long)getpid() && !atomic_load(&pa_finish_by_exec);
    if ((empty && pa_log_level < PA_LOG_INFO && !asked) || pa_config.summary == PA_SUMMARY_NONE)
        return 0;
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return 0;
    if (empty)
        fprintf(m, "profagent: %s (pid %u): nothing recorded, no database written\n", cmdline, meta.pid);
    else {
        meta.log_dropped = atomic_load(&pa_log_dropped); /* also those since the DB was finished */
        pa_summary_print_note(m, &meta, res, db, db_note);
    }
    if (fclose(m) != 0) {
        free(buf);
        return 0;
    }
    uint64_t now = pa_clock_ns(), budget = deadline_ns > now ? deadline_ns - now : 0;
    int ok = 0;
    if (pa_config.summary == PA_SUMMARY_FILE) {
        int fd = summary_file_open();
        if (fd >= 0) {
            /* a summary file that cannot take it (full disk, /dev/full, file size limit, a FIFO
             * whose reader does not read) is not lost: it goes to stderr */
            ok = pa_log_write_bounded(fd, buf, len, budget) == len;
            int e = errno;
            if (close(fd) != 0 && ok)
                ok = 0, e = errno;
            if (!ok)
                pa_warn("summary", "PROFAGENT_SUMMARY=file:%s: writing %s failed: %s; the summary goes to stderr",
                        pa_config.summary_path, summary_path, strerror(e));
        }
    }
    /* stdout no longer the file it was (the application redirected it): stderr rather than lost */
    int fd = pa_config.summary == PA_SUMMARY_STDOUT ? pa_log_std_fd(1) : -1;
    if (!ok)
        ok = summary_put(fd >= 0 ? fd : pa_log_std_fd(2), buf, len, budget);
    free(buf);
    return 1;
}

/* The exit's load of the spool's rest was cut (the budget ran out, or a fatal signal came): one
 * message naming why, what the DB holds and the command that completes it; the summary's
 * Database line gets the short form in note[size]. */
static void db_cut_message(char *note, size_t size, const char *db)
{
    uint64_t loaded = 0;
    int why = pa_writer_stream_cut_why(&loaded);
    int sig = pa_exitpaths_signal_in_finish();
    char reason[96];
    if (why == 2)
        snprintf(reason, sizeof reason, "signal %d arrived during the exit", sig);
    else
        snprintf(reason, sizeof reason, "PROFAGENT_EXIT_TIMEOUT_MS=%llu ran out",
                 (unsigned long long)pa_config.exit_timeout_ms);
    pa_err("agent", "the DB load at exit stopped (%s) after %llu spool records: %s holds them, valid but"
           " INCOMPLETE (session_complete=0, no summary tables); the spool %s holds the rest, complete the DB"
           " in place with: profagent recover %s", reason, (unsigned long long)loaded, db, spool_path, spool_path);
    snprintf(note, size, "INCOMPLETE: %s, the tail is in the spool; complete it with: profagent recover %s",
             reason, spool_path);
}

/* Why one deadline for the whole exit: every wait of the exit (the sources' flush, the
 * aggregator's last drain and its spool's close, the DB thread's hand-over, the tail's load)
 * used to get PROFAGENT_EXIT_TIMEOUT_MS or a share of it of its own, so their sum overshot the
 * budget (1.3 s at 500 ms under load). Armed once, by the first ending that begins (the exit
 * handler, _exit, exec, a fatal signal), on CLOCK_MONOTONIC (pa_clock_ns() follows it); each
 * stage gets what remains. Lock-free: armed in signal handlers too. */
static _Atomic uint64_t exit_deadline_ns;

uint64_t pa_exit_deadline_arm(void)
{
    uint64_t none = 0, d = pa_clock_ns() + pa_config.exit_timeout_ms * 1000000ull;
    if (atomic_load_explicit(&exit_deadline_ns, memory_order_acquire) ||
        !atomic_compare_exchange_strong(&exit_deadline_ns, &none, d))
        return atomic_load_explicit(&exit_deadline_ns, memory_order_acquire);
    return d;
}

uint64_t pa_exit_left_ns(void)
{
    uint64_t d = atomic_load_explicit(&exit_deadline_ns, memory_order_acquire), now = pa_clock_ns();
    if (!d)
        return pa_config.exit_timeout_ms * 1000000ull; /* not armed: the exit has not begun */
    return d > now ? d - now : 0;
}

/* The aggregator thread was still in a pass at the exit's deadline: it keeps the aggregates,
 * which this thread cannot read while it may write them. The summary still comes (the user
 * must always get one), without the statistics, saying why and how the DB is completed. */
static void no_results_summary(void)
{
    static char part[PATH_MAX], note[PATH_MAX + 256];
    int rc = pa_writer_stream_finish(NULL, 0, part, sizeof part);
    const char *db = rc == -2 || rc == -3 ? part : NULL; /* -3: the DB thread's last commit */
    unsigned long long ms = (unsigned long long)pa_config.exit_timeout_ms;
    pa_err("agent", "the exit budget PROFAGENT_EXIT_TIMEOUT_MS=%llu ran out while the aggregator drained: the"
           " summary is INCOMPLETE (no statistics); %s%s%s; spool kept, a complete DB: profagent recover %s", ms,
           db ? "the DB " : "no DB written", db ? db : "", db ? " holds what was committed (session_complete=0)" : "",
           spool_path);
    snprintf(note, sizeof note, "INCOMPLETE: PROFAGENT_EXIT_TIMEOUT_MS=%llu ran out while the aggregator drained, no"
             " statistics; complete it with: profagent recover %s", ms, spool_path);
    pipe_guard_t pg;
    pipe_block(&pg);
    /* the deadline has passed here: the summary may still wait up to 50 ms for a full pipe, so
     * that the user gets it, and never longer (a reader that never drains must not hold the exit) */
    print_summary(NULL, db, 0, note, pa_clock_ns() + 50000000ull);
    pipe_restore(&pg);
}

/* Tests make the exit's thread hold a lock that pa_finish() then waits for on any other thread
 * (PA_TEST_EXIT_HOLDS_LOCK=1), as a malloc arena's lock held by the code a signal handler's
 * exit() interrupted is: the finisher blocks for good, and the rest of the exit must still end. */
static int test_exit_holds;
static _Atomic int test_lock_holder; /* gettid() of the exit() that holds it; the waiters' futex word */

static void test_lock_wait(void)
{
    int holder = atomic_load(&test_lock_holder);
    while (test_exit_holds && holder && holder != (int)syscall(SYS_gettid))
        syscall(SYS_futex, &test_lock_holder, FUTEX_WAIT_PRIVATE, holder, NULL, NULL, 0); /* never woken */
}

/* The exit path: stop the aggregator (bounded), write the DB, print the summary, remove the
 * spool. Runs once, only in the process that owns the session; never changes exit status. */
void pa_finish(void)
{
    /* pid first: a vfork child shares our memory and must not consume the parent's flag */
    if (!agg_running || getpid() != owner_pid || atomic_exchange(&finish_done, 1))
        return;
    int saved = errno;
    atomic_store(&pa_finish_tid, (int)syscall(SYS_gettid));
    atomic_store(&pa_finish_state, 1);
    /* the whole exit's budget: what the drain leaves of it bounds the DB's load of the spool's
     * rest, cut as well by a fatal signal arriving meanwhile (writer/stream.c) */
    uint64_t deadline = pa_exit_deadline_arm();
    test_lock_wait();
    /* the load stops a tenth of the budget (at most 50 ms) early: what follows it (the commit of
     * what it loaded, 15-30 ms under load, and the process's teardown) is part of the exit too */
    uint64_t reserve = pa_config.exit_timeout_ms * 100000ull;
    reserve = reserve < 50000000ull ? reserve : 50000000ull;
    pa_writer_stream_bound(deadline - reserve, pa_exitpaths_signal_in_finish);
    pa_guard_enter();
    /* Existing rings keep recording (the aggregator counts what comes after its last drain
     * as late); no new ring is created from now on. */
    atomic_store(&pa_thread_no_new_rings, 1);
    session_threads_close();
    /* the sources turn what is in flight into records before the last drain (sources.c);
     * together they get at most half of the exit budget */
    uint64_t t0 = pa_clock_ns();
    pa_writer_stream_exit_begins(); /* the DB thread loads what the last drain publishes, meanwhile */
    uint64_t half = pa_config.exit_timeout_ms * 1000000ull / 2, left = pa_exit_left_ns();
    pa_sources_finish(left < half ? left : half);
    meta.end_mono_ns = pa_clock_ns();
    meta.host_clock = pa_clock_source();
    atomic_store(&pa_session_ended, 1); /* what ends from now on is after the session */
    const pa_agg_results_t *res = pa_agg_stop_by(deadline); /* absolute: the exit's one deadline */
    pa_dbg("agent", "exit: sources finished in %.1f ms, the aggregator stopped in %.1f ms",
           (meta.end_mono_ns - t0) / 1e6, (pa_clock_ns() - meta.end_mono_ns) / 1e6);
    atomic_store(&pa_sources, 0);
    if (!res) {
        no_results_summary();
        goto out;
    }
    meta.complete = pa_finish_signal == 0;
    pipe_guard_t pg;
    pipe_block(&pg);
    if (session_empty(res)) {
        pa_writer_stream_finish(res, 1, NULL, 0);
        unlink(spool_path);
        print_summary(res, NULL, 1, NULL, deadline);
        pipe_restore(&pg);
        goto out;
    }
    /* the DB thread loads the spool's rest and the aggregates (writer/stream.c); the DB got the
     * first free name like the template ("out.db", "out-1.db", ...) when it was created, claimed
     * atomically: a name another process took is skipped, never overwritten, unless
     * PROFAGENT_OVERWRITE=1. A DB that fails half-way is removed (the spool stays). */
    static char final_path[PATH_MAX];
    meta.log_dropped = atomic_load(&pa_log_dropped); /* the DB thread reads meta now */
    int rc = pa_writer_stream_finish(res, 0, final_path, sizeof final_path);
    int wrote = rc == 0, cut = rc == -3, handed = rc == 2;
    /* the spool goes before the summary: a reader (head -1) that closes the pipe early must
     * not leave a spool that `profagent stats` takes for a process that died */
    if (wrote)
        unlink(spool_path);
    else if (!cut && !handed) /* handed: the finisher removes the spool once the DB holds it */
        db_failed_message();
    static char note[PATH_MAX + 256];
    if (handed)
        snprintf(note, sizeof note, "being completed by the finisher process %ld: %s waits for it", pa_handoff_pid(),
                 pa_session_under_run() ? "profagent run" : "profagent stats");
    if (cut) /* the DB lacks the spool's tail: kept for `profagent recover`, which completes it */
        db_cut_message(note, sizeof note, final_path);
    int shaped = wrote && fsize_written_message(final_path, note, sizeof note);
    uint64_t t1 = pa_clock_ns();
    int shown = print_summary(res, wrote || cut || handed ? final_path : NULL, 0, cut || handed || shaped ? note : NULL,
                              deadline);
    pa_dbg("agent", "exit: DB %.1f ms, summary %.1f ms", (t1 - meta.end_mono_ns) / 1e6, (pa_clock_ns() - t1) / 1e6);
    /* the summary named the losses it saw: one message, here only for what it could not show */
    uint64_t unrec = atomic_load(&pa_unrecorded);
    if (unrec > (shown ? res->unrecorded : 0))
        pa_warn("agent", "%llu events were NOT recorded (no memory for a thread's ring, or produced inside a"
                " signal handler that interrupted the agent)", (unsigned long long)unrec);
    pipe_restore(&pg);
    if (handed)
        pa_handoff_wait(pa_exitpaths_signal_in_finish);
out:
    pa_dbg("agent", "exit: done %.1f ms before the exit's deadline (budget %llu ms)",
           ((double)deadline - (double)pa_clock_ns()) / 1e6, (unsigned long long)pa_config.exit_timeout_ms);
    atomic_store(&pa_finish_state, 2);
    syscall(SYS_futex, &pa_finish_state, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0); /* exitpaths.c waits */
    pa_guard_leave();
    int sig = pa_exitpaths_take_deferred();
    if (sig) /* a SIGTERM/SIGINT... arrived while this thread wrote the DB: it ends us now */
        pa_signals_die_by(sig);
    errno = saved;
}

int pa_session_active(void)
{
    return agg_running && getpid() == owner_pid && !atomic_load(&finish_done);
}

/* Why an exit owner: glibc before 2.41 lets a second thread that calls exit() (main returning
 * while another thread's exit() writes the DB, in our destructor or our handler) take the
 * remaining exit handlers and end the process with ITS status while the first exit is still
 * writing: the application's exit status changed and the DB was cut off half-written. Without
 * the agent the first exit's handlers take microseconds and its status wins. So the thread that
 * first reaches our exit handler or our destructor owns the ending; every other thread that
 * reaches either, or the gate the owner registers (an exit handler registered during exit()
 * runs next, on whichever thread takes it), is parked until the owner's exit ends the process
 * (glibc 2.41 blocks a second exit() the same way). */
static _Atomic int exit_owner; /* tid of the thread whose exit() runs the session's end */

static void exit_park_others(void)
{
    int owner = atomic_load(&exit_owner);
    if (!owner || owner == (int)syscall(SYS_gettid) || getpid() != owner_pid)
        return;
    for (;;)
        pause(); /* the owner's exit_group() ends this thread; its signals still run their handlers */
}

/* Why the gate is registered from an exit handler (or the destructor), not from exit() itself:
 * atexit() takes glibc's handler list lock and callocs a block when the list's head block is
 * full, and exit() may be called from a signal handler that interrupted malloc on this thread
 * (the calloc then waits for ever for a lock its own thread holds). Once glibc runs handlers the
 * head block has a free slot (the one just popped): no allocation. Every thread calling exit()
 * is parked in exit() anyway; the gate is for one reaching glibc's list another way. */
static _Atomic int gate_registered;

/* The first thread here owns the ending (and, with `reg`, registers the gate); any other one
 * is parked. */
static void exit_claim(int reg)
{
    int none = 0, self = (int)syscall(SYS_gettid);
    if (!pa_session_active())
        return;
    if (!atomic_compare_exchange_strong(&exit_owner, &none, self) && none != self)
        exit_park_others();
    else if (reg && !atomic_exchange(&gate_registered, 1))
        atexit(exit_park_others);
}

/* Why the session is ended on the finisher thread (exitpaths.c) while this one waits, bounded,
 * with raw syscalls: exit() may run in a signal handler that interrupted malloc (or stdio) on
 * this thread, and pa_finish() allocates (SQLite, zstd, the summary): on this thread it waited
 * for ever for the lock its own thread held (7 of 8 runs of exitlife sigmalloc hung). The
 * finisher allocates from its own arena; if it still blocks, the wait ends once the agent made
 * no progress for PROFAGENT_EXIT_TIMEOUT_MS + 1 s and the process ends as without the agent
 * (spool kept). The waiting thread lends its ring to the finisher (exitpaths.c). */
static _Atomic int main_returned_tid; /* the thread whose main() returned (pa_main) */

static void session_end(void)
{
    if (pa_session_active()) {
        pa_exit_deadline_arm(); /* the exit's budget counts from here (the application's own handlers ran) */
        pa_sources_exit_thread(); /* this thread's own last reads, before it lends its ring */
    }
    /* Why main's return ends the session on its own thread: the finisher is for an exit() that
     * may run in a signal handler; a return from main() runs in none, and each hand-off to the
     * finisher and back waits for a core (tens of ms on a loaded machine) */
    if (atomic_load(&main_returned_tid) == (int)syscall(SYS_gettid) || !pa_exitpaths_finish_elsewhere()) {
        pa_finish(); /* here, on the finisher itself, or no finisher could be started */
        pa_exitpaths_watch_exit();
    }
}

static void pa_quick_exit_handler(void)
{
    exit_claim(1);
    exit_park_others(); /* owned by a thread whose session already ended: still parked */
    session_end();
}

/* Why stdout is flushed first on exit()'s path (only there: exit() flushes it anyway, while
 * quick_exit(), _exit() and fatal signals discard its buffered text, and so must the agent):
 * the application's output comes before the summary as it would without the agent, and
 * `app 2>&1 | head -1` reads the application's first line, not the summary's, so head is not
 * gone already when the application's own flush comes (SIGPIPE: exit status 141). A thread
 * holding stdout's lock (blocked in printf on a full pipe) is not waited for. */
static void app_stdout_first(void)
{
    if (ftrylockfile(stdout) != 0)
        return;
    fflush_unlocked(stdout);
    funlockfile(stdout);
}

static void pa_atexit_handler(void)
{
    exit_claim(1);
    exit_park_others(); /* owned by a thread whose session already ended: still parked */
    if (pa_session_active())
        app_stdout_first();
    session_end();
}

/* Why exit() itself is interposed: the gate above sits in the exit-handler list, and glibc
 * (before 2.41) lets every thread that calls exit() pop handlers from that one list. With four
 * or more threads exiting together the agent's parking handlers were all taken by some of them,
 * the next one found the list empty and ended the process with _exit() while the owner still
 * wrote the DB (no DB, the spool left). Claiming here, before glibc sees the call, parks every
 * later caller however many there are; main returning from main() reaches exit() inside libc,
 * not through this symbol, and is parked by the handlers as before. */
typedef void (*pa_exit_fn)(int);
static _Atomic(pa_exit_fn) real_exit;

PA_EXPORT void exit(int status)
{
    pa_exit_fn real = atomic_load(&real_exit);
    if (!real) {
        *(void **)&real = dlsym(RTLD_NEXT, "exit");
        atomic_store(&real_exit, real);
    }
    exit_claim(0);      /* the first caller owns the ending, a later one is parked (no
                           allocation here: this may be a signal handler's exit) */
    exit_park_others(); /* owned by another thread whose session already ended: still parked */
    pa_exitwatch_note_status(status); /* the status a deadlock after our exit part ends with */
    if (test_exit_holds && pa_session_active()) {
        int none = 0;
        atomic_compare_exchange_strong(&test_lock_holder, &none, (int)syscall(SYS_gettid));
    }
    if (real)
        real(status);
    for (;;)
        syscall(SYS_exit_group, status); /* no libc exit() to call: end as _exit() would */
}

/* Why the handler is registered again as main starts: our constructor runs before
 * __libc_start_main registers _dl_fini, so that first registration runs after _dl_fini, i.e.
 * the DB was written from our destructor, after the Level Zero loader's destructor had freed
 * its context: another application thread still calling Level Zero during that write got
 * ZE_RESULT_ERROR_UNSUPPORTED_FEATURE (the loader's answer for a table it no longer has).
 * Registered from main's start it runs before _dl_fini (and after the handlers main registers):
 * the libraries are all alive while the session ends. */
typedef int (*pa_main_fn)(int, char **, char **);
typedef int (*pa_start_main_fn)(pa_main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void), void *);
static pa_main_fn app_main;

static int pa_main(int argc, char **argv, char **envp)
{
    if (pa_session_active())
        atexit(pa_atexit_handler); /* pa_finish() runs once: the later registration is a no-op */
    /* main's return reaches exit() inside libc, past the interposed symbol: through it instead, so
     * a return while another thread's exit() owns the ending is parked like any exit() caller
     * (libc's own call took the handlers the owner had left and ended with main's status) */
    int status = app_main(argc, argv, envp);
    atomic_store(&main_returned_tid, (int)syscall(SYS_gettid));
    exit(status);
}

/* Unversioned: it satisfies the executable's reference of either version (agent.map). */
PA_EXPORT int __libc_start_main(pa_main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                                void (*rtld_fini)(void), void *stack_end)
{
    pa_start_main_fn real;
    *(void **)&real = dlsym(RTLD_NEXT, "__libc_start_main");
    if (!real)
        abort(); /* no libc to start the program: it could not have run without us either */
    app_main = main;
    return real(pa_main, argc, argv, init, fini, rtld_fini, stack_end);
}

__attribute__((destructor)) static void pa_destructor(void)
{
    exit_claim(1);
    exit_park_others(); /* the session may have ended meanwhile: an owner's rivals still wait */
    session_end();
}

/* Fork child: collection is OFF in the child (documented choice): the parent's rings and
 * aggregator thread do not exist there, and the parent's session name must not be reused.
 * An exec'd child starts a session of its own (LD_PRELOAD is inherited). */
static void pa_fork_child(void)
{
    /* the copy of stderr would keep the caller's pipe open as long as a daemon child lives
     * (`x=$(app 2>&1)` waited for it): the child's own dup2() over 0-2 cannot know about it */
    pa_log_forget_copy();
    if (!agg_running)
        return;
    atomic_store(&threads_state, 3); /* collection is off here: none of the agent's threads start */
    atomic_store(&pa_sources, 0);
    atomic_store(&pa_thread_no_new_rings, 1);
    pa_thread_after_fork_child();
    pa_sources_fork_child();
    pa_agg_after_fork_child();
    pa_writer_stream_after_fork_child();
    agg_running = 0;
    pa_info("agent", "fork: collection is off in child %ld (an exec'd program is profiled again)", (long)getpid());
}

/* The session's core: configuration, meta, paths, aggregator, exit paths. Runs once, from the
 * constructor or earlier from the first HGTX call (pa_session_early). Returns 1 when the
 * session runs (the aggregator started), 0 when profiling is off. */
static _Atomic int begin_state; /* 0 not begun, 1 running, 2 done */
static int begin_ok;

static int session_begin(void)
{
    int expect = 0;
    if (!atomic_compare_exchange_strong(&begin_state, &expect, 1))
        return atomic_load(&begin_state) == 2 && begin_ok; /* done, or another thread is in it */
    int saved = errno;
    pa_guard_enter();
    /* `profagent run`'s mark: kept in the environment, so a shell that execs the program passes
     * it on (same pid); children have other pids */
    const char *rp = getenv(PA_CONFIG_RUN_PID_VAR);
    run_pid = rp ? strtol(rp, NULL, 10) : 0;
    pa_log_pin_std(0); /* the configuration's own messages already respect fds 1 and 2 */
    pa_config_load();
    const char *hold = getenv("PA_TEST_EXIT_HOLDS_LOCK");
    test_exit_holds = hold && strcmp(hold, "1") == 0;
    if (!pa_config.enable) {
        pa_info("agent", "PROFAGENT_ENABLE=0: the agent is off");
        goto out;
    }
    owner_pid = getpid();
    record_meta();
    if (choose_paths() < 0)
        goto out;
    summary_keep_stderr();
    pa_thread_init();
    /* streaming: a frame every 25 ms: what the DB thread cannot have yet at exit (the tail the exit
     * loads) and after a kill (the DB's lag) is at most that + the DB thread's 50 ms look; 100 ms
     * frames made the paced exit load ~75 ms more rows (frames are cheap: an empty interval writes
     * none, a 25 ms one at 250 k records/s still holds ~6 k records) */
    uint64_t commit_ns = pa_config.db_commit_ms * 1000000ull;
    pa_agg_config_t acfg = {.spool_path = spool_path, .poll_interval_ns = 1000000,
                            .spool_published = pa_writer_stream_published(),
                            .behind = pa_writer_stream_agg_behind(),
                            .spool_flush_ns = commit_ns ? 25000000ull : 0,
                            .median_budget = pa_config.median_budget,
                            .callstack_depth = (uint32_t)pa_config.callstack_depth,
                            .callstack_groups = pa_config.callstack_groups,
                            .symbols_system_debuginfo = pa_config.symbols_system_debuginfo,
                            .zstd_level = -1}; /* zstd fast mode: on the compact spool encoding
                                                  it is both faster and smaller than level 1 */
    if (pa_agg_open(&acfg) != 0) {
        pa_err("agent", "cannot start the aggregator (spool %s): %s; profiling is off", spool_path,
               strerror(errno));
        goto out;
    }
    pa_writer_stream_cfg_t scfg = {.db_template = db_path, .overwrite = pa_config.overwrite,
                                   .spool_path = spool_path, .meta = &meta, .commit_ns = commit_ns};
    pa_handoff_install();
    if (pa_writer_stream_start(&scfg) != 0)
        pa_warn("agent", "the DB is written at exit: %s", strerror(errno));
    agg_running = 1;
    begin_ok = 1;
    pthread_atfork(NULL, NULL, pa_fork_child);
    pa_exitpaths_init(); /* fatal-signal handlers, exec/_exit finalization (exitpaths.c) */
    pa_thread_on_ring = session_threads_start; /* the threads start at the first ring */
out:
    if (!begin_ok)
        pa_log_forget_copy();
    atomic_store(&begin_state, 2);
    pa_guard_leave();
    errno = saved;
    return begin_ok;
}

/*! pa_session_early() : HGTX called before the agent's constructor (a shared library's
 *  constructor, the executable's preinit_array): the session's core starts now and HGTX
 *  records from here on; the other sources start in the constructor as usual (the libraries
 *  they attach to may not be initialised yet). Returns 1 when HGTX records now. */
int pa_session_early(void)
{
    if (atomic_load(&init_done) || !session_begin())
        return 0;
    uint32_t early = pa_config.trace & PA_SRC_HGTX;
    atomic_fetch_or_explicit(&pa_sources, early, memory_order_release);
    return early != 0;
}

/* Safe to call twice (a second call returns at once); also safe on a thread other than main. */
__attribute__((constructor)) static void pa_init(void)
{
    if (atomic_exchange(&init_done, 1))
        return;
    pa_exit_fn rx;
    *(void **)&rx = dlsym(RTLD_NEXT, "exit"); /* now, not at exit: dlsym there may wait for dlopen's lock */
    atomic_store(&real_exit, rx);
    if (!session_begin())
        return;
    int saved = errno;
    pa_guard_enter();
    uint32_t trace = pa_sources_init(pa_config.trace); /* the source table (sources.c) */
    /* Registered after the sources started, so it runs after every handler the application
     * registers later (they are still recorded) and before the exit handlers of the libraries
     * the sources loaded (the Level Zero tracing layer): the sources finish while those are
     * alive. at_quick_exit: quick_exit() runs only those handlers, then _exit. This first
     * registration precedes _dl_fini's: pa_main() registers it again, to run before _dl_fini. */
    atexit(pa_atexit_handler);
    at_quick_exit(pa_quick_exit_handler);
    atomic_store_explicit(&pa_sources, trace, memory_order_release);
    pa_info("agent", "profiling %s into %s", cmdline, db_path);
    pa_guard_leave();
    errno = saved;
}
