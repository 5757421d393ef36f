/* pa_log.h - the agent's own diagnostics, pr_dbg-style, by domain and level. */
#ifndef PA_LOG_H
#define PA_LOG_H

#include <stdarg.h>

/* Levels for PROFAGENT_LOG: error < warn (default) < info < debug. */
enum pa_log_level { PA_LOG_SILENT = 0, PA_LOG_ERROR = 1, PA_LOG_WARN = 2, PA_LOG_INFO = 3, PA_LOG_DEBUG = 4 };

extern int pa_log_level; /* current level, default PA_LOG_WARN */

/*! pa_log_print() : prints "profagent: <domain>: <message>\n" to stderr when
 *  level <= pa_log_level. Never allocates; preserves errno; lines over 1 KiB are cut. */
void pa_log_print(int level, const char *domain, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define pa_err(dom, ...)  pa_log_print(PA_LOG_ERROR, dom, __VA_ARGS__)
#define pa_warn(dom, ...) pa_log_print(PA_LOG_WARN, dom, __VA_ARGS__)
#define pa_info(dom, ...) do { if (pa_log_level >= PA_LOG_INFO) pa_log_print(PA_LOG_INFO, dom, __VA_ARGS__); } while (0)
#define pa_dbg(dom, ...)  do { if (pa_log_level >= PA_LOG_DEBUG) pa_log_print(PA_LOG_DEBUG, dom, __VA_ARGS__); } while (0)

#endif
