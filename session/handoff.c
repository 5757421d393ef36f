/* handoff.c - PROFAGENT_EXIT_LOAD: the exit hands a large rest of the DB's load to a fork child (the finisher). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "../collector/config.h"
#include "../common/pa_log.h"
#include "../writer/writer.h"
#include "session.h"

/* Spool records left to load at the exit above which auto hands off: ~50 ms of loading (the
 * exit's goal) at the ~2.7 M rows/s the exit's load runs at; below it the inline exit is short
 * anyway and everything stays as it always was. */
#define PA_HANDOFF_MIN_RECORDS 131072u
#define PA_FINISHER_MAX_S 600u /* the finisher ends itself (SIGALRM) if it ever takes this long */

static long finisher_pid;
static int lock_fd = -1;
static char lock_path[PATH_MAX + 16];

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
            if (e->d_name[0] < '0' || e->d_name[0] > '9' || fd < 3 || fd == dfd || fd == lock_fd || fd == nul)
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

/* What the finisher does before it loads: a connection of its own (the parent's file locks go
 * with the parent), then the tests' hold. */
static void finisher_ready(void)
{
    pa_writer_stream_reconnect();
    /* tests hold the finisher here (PA_TEST_FINISH_HOLD=file: it waits until the file exists)
     * to look at the application's end while the finisher is known to be still running */
    const char *hold = getenv("PA_TEST_FINISH_HOLD");
    struct timespec step = {0, 10000000};
    for (unsigned i = 0; hold && *hold && access(hold, F_OK) != 0 && i < 12000; i++)
        nanosleep(&step, NULL);
}

/* pa_writer_stream_handoff's split: -1 inline, 0 in the finisher, its pid in the session. */
static long handoff_split(uint64_t backlog, const char *db, const char *spool)
{
    int mode = pa_config.exit_load;
    if (mode == PA_EXIT_LOAD_INLINE || (mode == PA_EXIT_LOAD_AUTO && backlog < PA_HANDOFF_MIN_RECORDS))
        return -1;
    lock_fd = pa_finish_lock_create(db, lock_path, sizeof lock_path);
    if (lock_fd < 0) {
        pa_warn("agent", "cannot create the finisher's lock file %s.finishing (%s): the DB is completed here", db,
                strerror(errno));
        return -1;
    }
    /* _Fork, not fork: no atfork handler runs (the application's must not see the agent's
     * child, ours would forget the DB), and no lock of another thread is taken on the way (a
     * thread parked in malloc holds its arena for ever). The child only uses this thread's own
     * state and arena, then leaves by _exit. */
    pid_t pid = -1;
    errno = EAGAIN;
    /* tests make the start fail (PA_TEST_FINISH_FAIL=1) as fork does without a free process slot */
    const char *fail = getenv("PA_TEST_FINISH_FAIL");
    if (!fail || strcmp(fail, "1") != 0)
        pid = _Fork();
    if (pid < 0) {
        pa_warn("agent", "cannot start the DB's finisher process (%s): the DB is completed here", strerror(errno));
        unlink(lock_path);
        close(lock_fd);
        lock_fd = -1;
        return -1;
    }
    if (pid == 0) {
        finisher_detach(db, spool);
        finisher_ready();
        return 0;
    }
    pa_finish_lock_set_pid(lock_fd, pid);
    close(lock_fd); /* the lock stays: the child holds the same open file */
    lock_fd = -1;
    finisher_pid = pid;
    return pid;
}

/* pa_writer_stream_handoff's done, in the finisher: what the session does after a DB's
 * completion (the spool goes once the DB holds it all), then the lock, and the end. */
static void handoff_done(int rc, const char *db, const char *spool)
{
    if (rc == 0)
        unlink(spool);
    unlink(lock_path);
    (void)db;
    _exit(rc == 0 ? 0 : 1);
}

void pa_handoff_install(void)
{
    pa_writer_stream_handoff(handoff_split, handoff_done);
}
