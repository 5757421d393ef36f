/* hostile_stdio.c - an application whose stdio the agent must leave alone: a daemon child, a full
 * stderr pipe, stderr closed or replaced by its own log, buffered stdout then _exit, an exec of an
 * environment at Linux's argument limit. Usage: hostile_stdio MODE [ARG...] (see main). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <profagent/hgtx.h>

static void ranges(int n)
{
    for (int i = 0; i < n; i++) {
        hgtxRangePushA("stdio");
        hgtxRangePop();
    }
}

/* daemon SECS: a child detaches like a daemon (setsid, 0-2 on /dev/null) and lives SECS s; the
 * parent prints the child's pid and exits at once */
static int daemon_child(int secs)
{
    ranges(3);
    pid_t pid = fork();
    if (pid == 0) {
        setsid();
        int n = open("/dev/null", O_RDWR);
        dup2(n, 0);
        dup2(n, 1);
        dup2(n, 2);
        if (n > 2)
            close(n);
        sleep((unsigned)secs);
        _exit(0);
    }
    printf("daemon %d\n", (int)pid);
    return 0;
}

/* pipefull: 65000 bytes to stderr (fit a 64 KiB pipe nobody reads yet) */
static int pipefull(void)
{
    static char b[65000];
    memset(b, 'x', sizeof b);
    if (write(2, b, sizeof b) != (ssize_t)sizeof b)
        return 2;
    ranges(3);
    return 0;
}

/* ownlog LOG: started with stderr closed, its log gets fd 2 */
static int ownlog(const char *log)
{
    int fd = open(log, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    dprintf(fd, "app log line (fd %d)\n", fd);
    ranges(100);
    return 0;
}

/* warnlog LOG SCRIPT: closes stderr, opens its log (fd 2), then an exec that fails (EACCES: the
 * agent warns in the middle of the run) */
static int warnlog(const char *log, const char *script)
{
    ranges(3);
    close(2);
    int fd = open(log, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    dprintf(fd, "app log (fd %d)\n", fd);
    int nx = open(script, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (write(nx, "#!/bin/sh\n", 10) != 10)
        return 2;
    close(nx);
    char *av[] = {"x", NULL};
    execv(script, av);
    dprintf(fd, "exec: %s\n", strerror(errno));
    ranges(3);
    return 0;
}

/* lines: 3 lines to stdout (buffered on a pipe: exit() flushes them) */
static int lines(void)
{
    ranges(3);
    for (int i = 0; i < 3; i++)
        printf("app line %d\n", i);
    return 0;
}

/* noflush 0|1: buffered stdout text, then _exit(3) (0) or a default-fatal SIGTERM (1): stdio
 * discards the text */
static int noflush(int sig)
{
    ranges(3);
    printf("BUFFERED-TEXT-THAT-MUST-VANISH");
    if (sig)
        raise(SIGTERM);
    _exit(3);
}

/* e2big BYTES: execve("/bin/true") with an environment of BYTES bytes of strings (100 KiB
 * variables); prints the errno when the exec fails */
static int e2big(long total)
{
    int n = (int)(total / 102400) + 1;
    char **env = calloc((size_t)n + 1, sizeof *env);
    long left = total;
    for (int i = 0; i < n; i++) {
        long sz = left > 102400 ? 102400 : left;
        if (sz < 8)
            sz = 8;
        env[i] = malloc((size_t)sz + 1);
        memset(env[i], 'a', (size_t)sz);
        snprintf(env[i], 8, "V%05u", (unsigned)i % 100000u);
        env[i][6] = '=';
        env[i][sz - 1] = '\0'; /* sz bytes with the terminating NUL */
        left -= sz;
    }
    char *av[] = {"/bin/true", NULL};
    execve("/bin/true", av, env);
    printf("exec failed errno %d\n", errno);
    return 3;
}

int main(int argc, char **argv)
{
    const char *m = argc > 1 ? argv[1] : "";
    if (!strcmp(m, "daemon") && argc > 2)
        return daemon_child(atoi(argv[2]));
    if (!strcmp(m, "pipefull"))
        return pipefull();
    if (!strcmp(m, "ownlog") && argc > 2)
        return ownlog(argv[2]);
    if (!strcmp(m, "warnlog") && argc > 3)
        return warnlog(argv[2], argv[3]);
    if (!strcmp(m, "lines"))
        return lines();
    if (!strcmp(m, "noflush") && argc > 2)
        return noflush(atoi(argv[2]));
    if (!strcmp(m, "e2big") && argc > 2)
        return e2big(atol(argv[2]));
    fprintf(stderr, "usage: hostile_stdio daemon SECS|pipefull|ownlog LOG|warnlog LOG SCRIPT|lines|noflush 0|1|e2big BYTES\n");
    return 2;
}
