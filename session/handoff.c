/* handoff.c - PROFAGENT_EXIT_LOAD: the exit hands a large rest of the DB's load to a fork child (the finisher). */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../agg/agg.h"
#include "../collector/config.h"
#include "../common/pa_log.h"
#include "../writer/writer.h"
#include "session.h"

/* Spool records left to load at the exit above which auto hands off: ~50 ms of loading (the
 * exit's goal) at the ~2.7 M rows/s the exit's load runs at; below it the inline exit is short
 * anyway and everything stays as it always was. */
#define PA_HANDOFF_MIN_RECORDS 131072u
#define PA_FINISHER_MAX_S 600u /* the finisher ends itself (SIGALRM) if it ever takes this long */
#define PA_FINISHER_LOCK_MS 500  /* the finisher's wait for other connections to let the DB go */
#define PA_FINISHER_READY_MS 1000 /* the session's wait for "the DB is locked" before it loads itself */
#define PA_FINISHER_TRIES 8       /* children forked before the session loads the DB itself */
#define PA_FINISHER_STALL_MS 20   /* a child asleep this long before its "ready" holds a copied lock */
#define PA_FINISHER_START_MS 1000 /* the longest wait for a runnable child's "ready" */

static long finisher_pid;
static int lock_fd = -1;
static int ready_fd = -1; /* the finisher's end of the pipe it says "locked" on */
static char lock_path[PATH_MAX + 16];
static char fin_db[PATH_MAX]; /* the DB the finisher completes */
static char fin_spool[PATH_MAX]; /* and its spool */

long pa_handoff_pid(void)
{
    return finisher_pid;
}

/* 1 when the descriptor's file is `db` or one of its side files, or the spool. */
static int fd_is_ours(int fd, const char *db, const char *spool)
{
    char link[64], target[PATH_MAX + 1], real[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n <= 0)
        return 1; /* unknown: kept (closing a descriptor SQLite uses would lose the DB) */
    target[n] = '\0';
    const char *d = realpath(db, real) ? real : db;
    size_t dl = strlen(d);
    if (strncmp(target, d, dl) == 0 && (target[dl] == '\0' || target[dl] == '-'))
        return 1;
    return spool && realpath(spool, real) && strcmp(target, real) == 0;
}

/* The finisher detaches from the application's session, terminal and pipes: a shell's
 * `x=$(app)` waits for every holder of the pipe, a terminal's ^C must not reach it, and it must
 * hold nothing the application opened (sockets, pipes, files). */
static void finisher_detach(const char *db, const char *spool)
{
    setsid();
    int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int fd = 0; fd < 3 && nul >= 0; fd++)
        if (fd != nul)
            dup2(nul, fd);
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        int dfd = dirfd(d);
        struct dirent *e;
        while ((e = readdir(d))) {
            int fd = atoi(e->d_name);
            if (e->d_name[0] < '0' || e->d_name[0] > '9' || fd < 3 || fd == dfd || fd == lock_fd || fd == ready_fd || fd == nul)
                continue;
            if (!fd_is_ours(fd, db, spool))
                close(fd);
        }
        closedir(d);
    }
    if (nul > 2)
        close(nul);
    /* the finisher's messages, for tests and debugging (PA_TEST_FINISH_LOG=file) */
    const char *log = getenv("PA_TEST_FINISH_LOG");
    int lfd = log && *log ? open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
    if (lfd >= 0) {
        dup2(lfd, 2);
        close(lfd);
    }
    pa_log_forget_copy(); /* the agent's messages go to the new fd 2, never the application's stderr */
    pa_log_pin_std(0);
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGALRM};
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        signal(sigs[i], SIG_DFL);
        sigaddset(&set, sigs[i]);
    }
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN); /* a file size limit: the write fails (EFBIG), the DB is removed */
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    alarm(PA_FINISHER_MAX_S);
    prctl(PR_SET_NAME, "profagent-fin", 0, 0, 0);
}

/* The finisher's start: SQLite's lock on the DB taken by its own connection, then the session told
 * on the pipe ('L', or 'F' and the reason), which only then ends (no reader meets the DB between
 * the session's end and the finisher's lock); then the rollback journal, and the tests' hold. */
static void finisher_start(void)
{
    char msg[200] = "F";
    int rc = pa_writer_stream_lock(PA_FINISHER_LOCK_MS, msg + 1, sizeof msg - 1);
    if (rc == 0)
        msg[0] = 'L', msg[1] = '\0';
    ssize_t w = write(ready_fd, msg, strlen(msg));
    close(ready_fd);
    ready_fd = -1;
    if (rc != 0 || w <= 0)
        _exit(3); /* the session loads the DB itself (it kills this process if it does not hear) */
    const char *ka = getenv("PA_TEST_FINISH_KILL_AT"); /* tests: killed after this many records */
    if (pa_writer_stream_locked(ka ? strtoull(ka, NULL, 10) : 0) != 0)
        pa_warn("agent", "the finisher cannot move the DB to its rollback journal");
    /* tests hold the finisher here (PA_TEST_FINISH_HOLD=file: it waits until the file exists)
     * to look at the application's end, and at the DB, while the finisher is known to hold it */
    const char *hold = getenv("PA_TEST_FINISH_HOLD");
    struct timespec step = {0, 10000000};
    for (unsigned i = 0; hold && *hold && access(hold, F_OK) != 0 && i < 12000; i++)
        nanosleep(&step, NULL);
}

/* The child's first act, before anything else can take a lock: every lock the finisher's work
 * needs, taken and let go once. The fork copied them as the application's (and the agent's)
 * other threads left them: one held there (a thread inside malloc, dlopen, SQLite) is held for
 * ever in the copy, and the finisher would block on it, the DB locked and never completed. Past
 * here the child has one thread, so every lock it took once is free for good. malloc's arenas
 * (mallinfo2 locks each in turn, and a block too large for the thread's cache takes its own),
 * the dynamic loader's locks (dladdr: the load lock, dl_iterate_phdr: its write lock; the
 * finisher may dlopen a demangler), SQLite's static mutexes. */
static int phdr_none(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)info, (void)size, (void)arg;
    return 1;
}

static void finisher_probe(void)
{
    struct mallinfo2 mi = mallinfo2();
    (void)mi;
    void *volatile block = malloc(256u << 10);
    free(block);
    block = malloc(2048);
    free(block);
    Dl_info di;
    dladdr((void *)finisher_probe, &di);
    dl_iterate_phdr(phdr_none, NULL);
    pa_finish_probe_sqlite();
}

/* The scheduler's state letter of process pid (/proc/PID/stat: 'R' running or runnable, 'S' or
 * 'D' asleep), '?' when it cannot be read. */
static char child_state(pid_t pid)
{
    char path[48], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return '?';
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return '?';
    buf[n] = '\0';
    char *paren = strrchr(buf, ')');
    return paren && paren[1] == ' ' && paren[2] ? paren[2] : '?';
}

/* A child of ours stopped for good and reaped by its pid only (never another child of the
 * application's): at most 1 s for the kernel to end it (a process in an uninterruptible wait
 * dies when the wait ends; then init reaps it once this process is gone). */
static void child_end(pid_t pid)
{
    kill(pid, SIGKILL);
    struct timespec step = {0, 1000000};
    for (int i = 0; i < 1000; i++) {
        pid_t r = waitpid(pid, NULL, WNOHANG | __WALL);
        if (r == pid || (r < 0 && errno != EINTR))
            return;
        syscall(SYS_nanosleep, &step, NULL); /* raw: never the OSRT wrapper */
    }
}

static long ms_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (t1.tv_sec - t0->tv_sec) * 1000 + (t1.tv_nsec - t0->tv_nsec) / 1000000;
}

/* The session's wait for the child's "ready" ('R': its probe passed). Why its state is looked at
 * rather than a plain timeout: a child blocked on a lock the fork copied held sleeps (a futex
 * wait), and is given up on once seen asleep for PA_FINISHER_STALL_MS; one that only waits for a
 * core (a loaded machine takes tens of ms to give it one) is runnable and is waited for up to
 * limit_ms. 1 ready, 0 stuck or too slow, -1 it ended. */
static int session_hears_ready(pid_t pid, int fd, long limit_ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long asleep_since = -1;
    struct timespec slice = {0, 2000000};
    for (;;) {
        int r = (int)syscall(SYS_ppoll, &p, 1, &slice, NULL, 0); /* raw: never the OSRT wrapper */
        if (r > 0) {
            char c = 0;
            ssize_t n;
            while ((n = read(fd, &c, 1)) < 0 && errno == EINTR) {
            }
            return n == 1 && c == 'R' ? 1 : -1;
        }
        if (r < 0 && errno != EINTR)
            return 0;
        long now = ms_since(&t0);
        char st = child_state(pid);
        if (st == 'S' || st == 'D' || st == '?') {
            if (asleep_since < 0)
                asleep_since = now;
            if (now - asleep_since >= PA_FINISHER_STALL_MS)
                return 0;
        } else {
            asleep_since = -1;
        }
        if (now >= limit_ms)
            return 0;
    }
}

/* Why a clone without an exit signal and not _Fork: the application is never sent a SIGCHLD for
 * a child it did not make (a stuck one killed here, or the finisher ending while the process
 * still runs), and its wait() for any child never reaps ours (only __WALL waits see a child
 * without SIGCHLD); once this process is gone, init reaps the finisher as any orphan. Like _Fork
 * no atfork handler runs (the application's must not see the agent's child, ours would forget
 * the DB) and no lock is taken on the way (a thread parked in malloc would hold it for ever).
 * The child's cached thread id is this thread's: glibc reads the kernel's where it matters
 * (signals to itself), its mutexes only need it to be the same for every lock of the child. */
static pid_t finisher_clone(void)
{
    return (pid_t)syscall(SYS_clone, 0L, 0L, 0L, 0L, 0L);
}

/* Starts the finisher: up to PA_FINISHER_TRIES children, each made to say "ready" once its probe
 * took every lock it will need; a stuck one is killed and another forked after a growing gap
 * (1, 2, .. 64 ms: the application's threads leave the locks they held), the whole within half
 * of the exit's time left. 0 in the child (pipe end pfd[1]), its pid in the session (reads on
 * pfd[0]), -1 when fork failed (*err), -2 when no child got ready (said why). */
static pid_t finisher_fork(const char *db, const char *spool, int pfd[2], int *err)
{
    const char *stuck = getenv("PA_TEST_FINISH_STUCK"); /* tests: the first N children block */
    int stuck_n = stuck ? atoi(stuck) : 0;
    long budget_ms = (long)(pa_exit_left_ns() / 2000000u);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int tries = 0, ended = 0;
    for (long gap = 1;; gap *= 2) {
        if (pipe2(pfd, O_CLOEXEC) != 0) {
            *err = errno;
            return -1;
        }
        sigset_t all, old;
        sigfillset(&all);
        /* no handler of the application runs in the child (until finisher_detach resets them) */
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pid_t pid = finisher_clone();
        if (pid == 0) {
            close(pfd[0]);
            if (tries < stuck_n)
                for (;;)
                    pause();
            finisher_probe();
            if (write(pfd[1], "R", 1) != 1)
                _exit(3);
            return 0;
        }
        *err = errno;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        close(pfd[1]);
        if (pid < 0) {
            close(pfd[0]);
            return -1;
        }
        tries++;
        long left = budget_ms - ms_since(&t0);
        left = left < 2 * PA_FINISHER_STALL_MS ? 2 * PA_FINISHER_STALL_MS : left > PA_FINISHER_START_MS ? PA_FINISHER_START_MS : left;
        int ready = session_hears_ready(pid, pfd[0], left);
        if (ready == 1)
            return pid;
        ended += ready < 0;
        child_end(pid);
        close(pfd[0]);
        if (tries >= PA_FINISHER_TRIES || ms_since(&t0) + gap + PA_FINISHER_STALL_MS > budget_ms)
            break;
        struct timespec nap = {0, gap * 1000000};
        syscall(SYS_nanosleep, &nap, NULL);
        if (gap == 64)
            gap = 32; /* 64 ms is the longest gap */
    }
    (void)spool;
    pa_warn("agent", "the DB's finisher process could not start: %d forked copie%s of this process %s within %ld ms "
            "(another thread held a lock of malloc, of the dynamic loader or of SQLite at the fork): the DB of %s is "
            "completed here",
            tries, tries == 1 ? "" : "s", ended == tries ? "ended before they were ready" : "found a lock held for good",
            ms_since(&t0), db);
    return -2;
}

/* The session's wait for the finisher's word, at most PA_FINISHER_READY_MS. 1 when it holds the
 * DB's lock; else 0, the reason in why[size]. */
static int session_hears_locked(int fd, char *why, size_t size)
{
    struct pollfd p = {fd, POLLIN, 0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char buf[200];
    ssize_t n = -1;
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t1);
        long left = PA_FINISHER_READY_MS - ((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
        int r = left > 0 ? poll(&p, 1, (int)left) : 0;
        if (r < 0 && errno == EINTR)
            continue;
        if (r > 0)
            while ((n = read(fd, buf, sizeof buf - 1)) < 0 && errno == EINTR) {
            }
        break;
    }
    if (n > 0 && buf[0] == 'L')
        return 1;
    buf[n > 1 ? n : 1] = '\0';
    snprintf(why, size, "%s", n > 1 ? buf + 1 : n < 0 ? "no answer within 1 s" : "it ended at once");
    return 0;
}

/* The lock file is removed and its descriptor closed: no finisher holds the DB. */
static void lock_drop(void)
{
    unlink(lock_path);
    close(lock_fd);
    lock_fd = -1;
}

/* The session's side when the finisher does not take the DB: it is stopped for good (it never
 * wrote to the DB: SQLite's locks are what it would have written under), the lock file goes. */
static void session_takes_back(pid_t pid, const char *db, const char *why)
{
    child_end(pid);
    pa_warn("agent", "the DB's finisher process could not lock %s (%s): the DB is completed here", db, why);
    lock_drop();
}

/* 1 when the exit summary has a section computed from the completed DB's rows: device memory
 * (usage and leaks with their call stacks, from DEVICE_MEMORY: the session made zeMemAlloc or
 * zeMemFree calls) and PC sampling. A finisher would leave the summary without it. */
static int summary_needs_db(const pa_agg_results_t *res)
{
    if (pa_config.pc_sampling)
        return 1;
    for (size_t i = 0; res && i < res->nrows; i++)
        if (res->rows[i].cat == PA_CAT_ZE_API && res->rows[i].st.count && res->rows[i].key &&
            strncmp(res->rows[i].key, "zeMem", 5) == 0 &&
            (strncmp(res->rows[i].key + 5, "Alloc", 5) == 0 || strncmp(res->rows[i].key + 5, "Free", 4) == 0))
            return 1;
    return 0;
}

/* pa_writer_stream_handoff's split: -1 inline, 0 in the finisher, its pid in the session. auto
 * keeps the summary whole: a session whose summary reads the DB loads inline. */
static long handoff_split(uint64_t backlog, const pa_agg_results_t *res, const char *db, const char *spool)
{
    int mode = pa_config.exit_load;
    if (mode == PA_EXIT_LOAD_INLINE ||
        (mode == PA_EXIT_LOAD_AUTO && (backlog < PA_HANDOFF_MIN_RECORDS || summary_needs_db(res))))
        return -1;
    /* Why a DB larger than the file size limit is completed here: the finisher inherits the limit
     * and its stderr is /dev/null, so its failure reached nobody (no DB, the spool left, no
     * word); loaded here the user gets the one message naming the limit and what was kept */
    uint64_t need = 0, lim = 0;
    const char *nofit = getenv("PA_TEST_FINISH_NO_FIT"); /* tests: a projection that was wrong */
    if ((!nofit || strcmp(nofit, "1") != 0) && !pa_writer_stream_fits(backlog, &need, &lim)) {
        pa_dbg("agent", "the DB would take ~%llu bytes, the file size limit is %llu: completed here, no finisher",
               (unsigned long long)need, (unsigned long long)lim);
        return -1;
    }
    snprintf(fin_db, sizeof fin_db, "%s", db);
    snprintf(fin_spool, sizeof fin_spool, "%s", spool);
    lock_fd = pa_finish_lock_create(db, lock_path, sizeof lock_path);
    if (lock_fd < 0) {
        pa_warn("agent", "cannot create the finisher's lock file %s.finishing (%s): the DB is completed here", db,
                strerror(errno));
        return -1;
    }
    int pfd[2] = {-1, -1};
    const char *fail = getenv("PA_TEST_FINISH_FAIL");
    /* tests make the start fail (PA_TEST_FINISH_FAIL=1) as fork does without a free process slot */
    int can = !fail || strcmp(fail, "1") != 0;
    /* the rows loaded so far committed and the connection closed here, before the fork: the
     * finisher's connection must be the DB's only one to lock it (a failure fails the DB) */
    if (can && pa_writer_stream_release() != 0) {
        lock_drop();
        return -1;
    }
    int err = can ? 0 : EAGAIN;
    pid_t pid = can ? finisher_fork(db, spool, pfd, &err) : -1;
    if (pid == -2) {
        lock_drop();
        return -1; /* said why */
    }
    if (pid < 0) {
        pa_warn("agent", "cannot start the DB's finisher process (%s): the DB is completed here", strerror(err));
        lock_drop();
        return -1;
    }
    if (pid == 0) {
        ready_fd = pfd[1];
        finisher_detach(db, spool);
        finisher_start();
        return 0;
    }
    char why[200];
    int locked = session_hears_locked(pfd[0], why, sizeof why);
    close(pfd[0]);
    if (!locked) {
        session_takes_back(pid, db, why);
        return -1;
    }
    pa_finish_lock_set_pid(lock_fd, pid);
    close(lock_fd); /* the lock stays: the child holds the same open file */
    lock_fd = -1;
    finisher_pid = pid;
    return pid;
}

/* Why a failed finisher writes its message into "<spool>.why": its stderr is /dev/null (it must
 * hold none of the application's files), and the session ended before it; `profagent stats`
 * on the missing DB and `profagent recover` of the spool print it, and `profagent run`, which
 * waits for the finisher, says it at once (pa_handoff_wait). */
static void finisher_note(const char *spool)
{
    char path[PATH_MAX + 8];
    if (snprintf(path, sizeof path, "%s.why", spool) >= (int)sizeof path)
        return;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    dup2(fd, 2);
    close(fd);
    pa_log_forget_copy();
    pa_log_pin_std(0);
    pa_session_db_failed();
}

/* pa_writer_stream_handoff's done, in the finisher: what the session does after a DB's
 * completion (the spool goes once the DB holds it all), then the lock, and the end. */
static void handoff_done(int rc, const char *db, const char *spool)
{
    if (rc == 0)
        unlink(spool);
    else
        finisher_note(spool);
    unlink(lock_path);
    (void)db;
    _exit(rc == 0 ? 0 : 1);
}

/* Why the exiting process waits under `profagent run`: that command execs the program, so it
 * returns when the program's process is gone (a wrapper's, when it waits for its children), and
 * its users are told the DB is complete then. Waiting for the finisher rather than loading inline
 * keeps the load unbounded by PROFAGENT_EXIT_TIMEOUT_MS (inline, a large tail is cut there). */
void pa_handoff_wait(int (*stop)(void))
{
    if (finisher_pid <= 0 || !pa_session_under_run())
        return;
    struct timespec step = {0, 5000000};
    for (unsigned ms = 0; ms < PA_FINISH_WAIT_MS && pa_finish_running(fin_db); ms += 5) {
        if (stop && stop())
            return; /* a signal wants the process to end: it ends, the finisher goes on */
        syscall(SYS_nanosleep, &step, NULL); /* raw: never the OSRT wrapper */
    }
    /* the finisher's end, not left as a zombie for the rest of this exit (once it removed its
     * lock file it only closes and ends; ECHILD when the application reaps its children) */
    for (int i = 0; i < 200 && waitpid((pid_t)finisher_pid, NULL, WNOHANG | __WALL) == 0; i++)
        syscall(SYS_nanosleep, &step, NULL);
    if (pa_finish_running(fin_db))
        return;
    /* it failed: its one message (finisher_note), said here where the user sees it */
    char path[PATH_MAX + 8], msg[2048];
    snprintf(path, sizeof path, "%s.why", fin_spool);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, msg, sizeof msg - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return;
    msg[n] = '\0';
    msg[strcspn(msg, "\n")] = '\0';
    const char *pfx = "profagent: agent: ";
    pa_err("agent", "the DB's finisher process failed: %s", strncmp(msg, pfx, strlen(pfx)) ? msg : msg + strlen(pfx));
}

void pa_handoff_install(void)
{
    pa_writer_stream_handoff(handoff_split, handoff_done);
}
