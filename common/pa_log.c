/* pa_log.c - stderr diagnostics for the agent and the CLI; one write(2) per line. */
#include "pa_log.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

int pa_log_level = PA_LOG_WARN;

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
    /* One write keeps lines from different threads whole. */
    ssize_t w = write(STDERR_FILENO, buf, len);
    (void)w;
    errno = saved;
}
