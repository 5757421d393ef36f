/* pa_log.c - stderr diagnostics for the agent and the CLI; one write(2) per line; the agent's
 * guard against writing into a file the application put at fd 1 or 2 itself. */
#define _GNU_SOURCE /* F_DUPFD_CLOEXEC */
#include "pa_log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int pa_log_level = PA_LOG_WARN;
_Atomic unsigned long pa_log_dropped;

/* fds 1 and 2 as they were when the session began: 0 not pinned (the CLI: write as is), 1 open
 * on (dev, ino), 2 closed then */
typedef struct std_pin { _Atomic int state; dev_t dev; ino_t ino; } std_pin_t;
static std_pin_t pins[3];
static _Atomic int stderr_copy = -1;

static void pin_one(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        atomic_store(&pins[fd].state, 2);
        return;
    }
    pins[fd].dev = st.st_dev;
    pins[fd].ino = st.st_ino;
    atomic_store(&pins[fd].state, 1);
}

/* 1 when fd is open on the file `pin` remembers. */
static int same_file(int fd, const std_pin_t *pin)
{
    struct stat st;
    return fd >= 0 && atomic_load(&pin->state) == 1 && fstat(fd, &st) == 0 && st.st_dev == pin->dev &&
           st.st_ino == pin->ino;
}

void pa_log_pin_std(int keep_stderr_copy)
{
    pin_one(1);
    pin_one(2);
    if (!keep_stderr_copy || atomic_load(&pins[2].state) != 1)
        return;
    /* the highest free number below 64: the application's own opens keep the low numbers and
     * the kernel's fd table (64 entries to start with) does not grow, which select() and poll()
     * would show for numbers beyond it (ignored vs EBADF) */
    int fd = 63;
    while (fd >= 10 && !(fcntl(fd, F_GETFD) == -1 && errno == EBADF))
        fd--;
    if (fd >= 10) /* no free number there: no copy rather than one that moves the app's fds */
        atomic_store(&stderr_copy, fcntl(2, F_DUPFD_CLOEXEC, fd));
}

void pa_log_forget_copy(void)
{
    int fd = atomic_exchange(&stderr_copy, -1);
    if (fd >= 0)
        close(fd);
}

int pa_log_std_fd(int fd)
{
    if (fd != 1 && fd != 2)
        return -1;
    if (!atomic_load(&pins[fd].state))
        return fd;
    if (same_file(fd, &pins[fd]))
        return fd;
    int copy = fd == 2 ? atomic_load(&stderr_copy) : -1;
    return same_file(copy, &pins[2]) ? copy : -1;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const int guarded_sigs[2] = {SIGPIPE, SIGXFSZ};

void pa_log_sig_block(pa_log_sig_guard_t *g)
{
    sigset_t pend;
    int have = sigpending(&pend) == 0;
    sigemptyset(&g->set);
    for (int i = 0; i < 2; i++) {
        sigaddset(&g->set, guarded_sigs[i]);
        g->was_pending[i] = have && sigismember(&pend, guarded_sigs[i]) == 1;
    }
    pthread_sigmask(SIG_BLOCK, &g->set, &g->old);
}

void pa_log_sig_restore(pa_log_sig_guard_t *g)
{
    int saved = errno;
    sigset_t pend, one;
    struct timespec zero = {0, 0};
    for (int i = 0; i < 2; i++) {
        if (g->was_pending[i] || sigpending(&pend) != 0 || sigismember(&pend, guarded_sigs[i]) != 1)
            continue;
        sigemptyset(&one);
        sigaddset(&one, guarded_sigs[i]);
        while (sigtimedwait(&one, NULL, &zero) < 0 && errno == EINTR) {
        }
    }
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
    errno = saved;
}

/* Why poll and chunks of PIPE_BUF: the fd's file description is shared with the application
 * (and its caller), so it cannot be made non-blocking; a pipe that polls writable has a free
 * buffer, which takes a write of PIPE_BUF bytes at once. A socket takes MSG_DONTWAIT per call.
 * A regular file never waits for a reader: written as is. */
static size_t write_bounded(int fd, const char *buf, size_t len, uint64_t budget_ns);

/* Why the guard: an agent message or the summary may be written on any application thread (a
 * configuration warning at start, the exit's summary): into a stderr file past the file size
 * limit, or a pipe whose reader just closed, the write's signal would kill the application,
 * which without the agent never wrote there. */
size_t pa_log_write_bounded(int fd, const char *buf, size_t len, uint64_t budget_ns)
{
    pa_log_sig_guard_t g;
    pa_log_sig_block(&g);
    size_t done = write_bounded(fd, buf, len, budget_ns);
    pa_log_sig_restore(&g);
    return done;
}

static size_t write_bounded(int fd, const char *buf, size_t len, uint64_t budget_ns)
{
    struct stat st;
    int plain = fstat(fd, &st) == 0 && (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode));
    uint64_t end = mono_ns() + budget_ns;
    size_t done = 0;
    int sock = 1;
    while (done < len) {
        if (!plain) {
            uint64_t now = mono_ns();
            uint64_t left = now >= end ? 0 : end - now;
            struct timespec ts = {(time_t)(left / 1000000000ull), (long)(left % 1000000000ull)};
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            /* raw: the OS-runtime source's poll() wrapper would record the agent's own wait */
            int r = (int)syscall(SYS_ppoll, &p, 1, &ts, NULL, 0);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0 || (p.revents & (POLLERR | POLLHUP | POLLNVAL))) {
                errno = r == 0 ? ETIMEDOUT : r > 0 ? EPIPE : errno; /* the caller's message says why */
                break;
            }
        }
        size_t n = len - done;
        if (!plain && n > PIPE_BUF)
            n = PIPE_BUF;
        ssize_t w = -1;
        if (sock) {
            w = send(fd, buf + done, n, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (w < 0 && errno == ENOTSOCK)
                sock = 0;
        }
        if (!sock)
            w = write(fd, buf + done, n);
        if (w < 0 && (errno == EINTR || errno == EAGAIN) && mono_ns() < end)
            continue;
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    return done;
}

void pa_log_print(int level, const char *domain, const char *fmt, ...)
{
    if (level > pa_log_level)
        return;
    int saved = errno;
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "profagent: %s: ", domain ? domain : "agent");
    if (n < 0)
        n = 0;
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m > 0 ? (size_t)m : 0);
    if (len > sizeof buf - 2)
        len = sizeof buf - 2;
    buf[len++] = '\n';
    /* One write keeps lines from different threads whole (a line is below PIPE_BUF). Not into a
     * file the application put at fd 2 itself; never blocked for ever by a reader that does not
     * read: at most PA_LOG_WAIT_NS, then the line is counted as dropped. */
    int fd = pa_log_std_fd(2);
    if (fd < 0 || pa_log_write_bounded(fd, buf, len, PA_LOG_WAIT_NS) < len)
        atomic_fetch_add(&pa_log_dropped, 1);
    errno = saved;
}
