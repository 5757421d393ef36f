/* pa_log.h - the agent's own diagnostics, pr_dbg-style, by domain and level. */
#ifndef PA_LOG_H
#define PA_LOG_H

#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* Levels for PROFAGENT_LOG: error < warn (default) < info < debug. */
enum pa_log_level { PA_LOG_SILENT = 0, PA_LOG_ERROR = 1, PA_LOG_WARN = 2, PA_LOG_INFO = 3, PA_LOG_DEBUG = 4 };

extern int pa_log_level; /* current level, default PA_LOG_WARN */

/*! pa_log_print() : prints "profagent: <domain>: <message>\n" to stderr when
 *  level <= pa_log_level. Never allocates; preserves errno; lines over 1 KiB are cut. */
void pa_log_print(int level, const char *domain, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* How long one message waits for room on a stderr pipe whose reader does not read (ns). */
#define PA_LOG_WAIT_NS 1000000000ull

/* Messages not written (stderr closed or replaced by the application, or full); counted. */
extern _Atomic unsigned long pa_log_dropped;

/*! pa_log_pin_std() : (agent, session start) remembers which files fds 1 and 2 are (device and
 *  inode, or closed): the agent's output goes to fd 1 or 2 only while it is still that file,
 *  never into a file the application opened at that number itself. keep_stderr_copy: also keeps
 *  a close-on-exec copy of fd 2 (highest free number in 10..63) that takes the output when the
 *  application closed or replaced its stderr meanwhile. Without a pin (the CLI) fds 1 and 2 are
 *  written as they are. */
void pa_log_pin_std(int keep_stderr_copy);

/*! pa_log_forget_copy() : closes the copy of stderr (a fork child: a daemon that closes its fds
 *  0-2 must not keep its caller's pipe open through it; the session's end failed). */
void pa_log_forget_copy(void);

/*! pa_log_std_fd() : fd (1 or 2) when it is still the file pinned, else stderr's copy when that
 *  is (fd 2 only), else -1: nothing is to be written there. */
int pa_log_std_fd(int fd);

/*! pa_log_write_bounded() : writes buf[len] to fd, waiting at most budget_ns in all for room on a
 *  pipe, socket or terminal (the rest is not written); a regular file is written at once. Under
 *  pa_log_sig_block(): a closed pipe or a file size limit fails the write (EPIPE, EFBIG) instead
 *  of killing the application. Returns the bytes written; when short, errno says why (ETIMEDOUT:
 *  no room in time, EPIPE: no reader, EFBIG: RLIMIT_FSIZE). */
size_t pa_log_write_bounded(int fd, const char *buf, size_t len, uint64_t budget_ns);

/* The signals an agent write can raise on the writing thread: SIGPIPE (a pipe whose reader
 * closed) and SIGXFSZ (a file grown past RLIMIT_FSIZE); by default each kills the process. */
typedef struct pa_log_sig_guard { sigset_t set, old; int was_pending[2]; } pa_log_sig_guard_t;

/*! pa_log_sig_block() : blocks SIGPIPE and SIGXFSZ on this thread, remembering which of them were
 *  pending already (the application's own). Async-signal-safe. */
void pa_log_sig_block(pa_log_sig_guard_t *g);

/*! pa_log_sig_restore() : consumes SIGPIPE / SIGXFSZ the writes since pa_log_sig_block() left
 *  pending (not one the application had pending before), then restores the mask: the application
 *  never sees a signal of the agent's writes. Keeps errno. */
void pa_log_sig_restore(pa_log_sig_guard_t *g);

#define pa_err(dom, ...)  pa_log_print(PA_LOG_ERROR, dom, __VA_ARGS__)
#define pa_warn(dom, ...) pa_log_print(PA_LOG_WARN, dom, __VA_ARGS__)
#define pa_info(dom, ...) do { if (pa_log_level >= PA_LOG_INFO) pa_log_print(PA_LOG_INFO, dom, __VA_ARGS__); } while (0)
#define pa_dbg(dom, ...)  do { if (pa_log_level >= PA_LOG_DEBUG) pa_log_print(PA_LOG_DEBUG, dom, __VA_ARGS__); } while (0)

#endif
