/* spine_life.c - how a profiled process ends or misbehaves with its files: one mode per argv[1]
 * (tests/integration/spine/run_lifecycle.py checks the DB, the files and the exit status). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <profagent/hgtx.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Ten "work" ranges, then the mode's ending. */
static void work(const char *name)
{
    for (int i = 0; i < 10; i++) {
        hgtxRangePushA(name);
        usleep(200);
        hgtxRangePop();
    }
}

static void h_exit(int s)
{
    (void)s;
    hgtxMarkA("in-handler");
    _exit(42);
}

int main(int argc, char **argv)
{
    const char *m = argc > 1 ? argv[1] : "";
    if (!strcmp(m, "closefrom")) { /* daemon-style fd cleanup, then a file of the app's own */
        closefrom(3);
        int fd = open(argv[2], O_CREAT | O_TRUNC | O_WRONLY, 0644);
        if (write(fd, "APPDATA\n", 8) != 8)
            return 2;
        for (long i = 0; i < 300000; i++) { /* > 1 MiB of spool: several flushes */
            hgtxRangePushA("r");
            hgtxRangePop();
        }
        int keep = open(argv[3], O_CREAT | O_TRUNC | O_WRONLY, 0644); /* still open at exit */
        if (write(keep, "KEEP\n", 5) != 5)
            return 2;
        return 0;
    }
    work(m);
    if (!strcmp(m, "sigterm") || !strcmp(m, "sigint") || !strcmp(m, "sighup") || !strcmp(m, "sigquit")) {
        int sig = m[3] == 't' ? SIGTERM : m[3] == 'i' ? SIGINT : m[3] == 'h' ? SIGHUP : SIGQUIT;
        kill(getpid(), sig);
        pause();
    }
    if (!strcmp(m, "apphandler")) { /* the app's own handler wins: it exits 43 */
        signal(SIGTERM, h_exit);
        kill(getpid(), SIGTERM);
        pause();
    }
    if (!strcmp(m, "sigexit")) {
        signal(SIGUSR1, h_exit);
        raise(SIGUSR1);
    }
    if (!strcmp(m, "sigkill") || !strcmp(m, "abort")) {
        usleep(600000); /* > the aggregator's 250 ms spool flush interval */
        if (m[0] == 'a')
            abort();
        kill(getpid(), SIGKILL);
    }
    if (!strcmp(m, "exec")) /* the next image is a new session */
        execl("/bin/sh", "sh", "-c", "exit 16", (char *)NULL);
    if (!strcmp(m, "execfail")) {
        execl("/nonexistent/prog", "prog", (char *)NULL);
        work("after-failed-exec"); /* recorded: a missing file does not end the session */
        return 17;
    }
    if (!strcmp(m, "execnoperm")) { /* a file that is there but not executable: EACCES */
        execl("/etc/passwd", "passwd", (char *)NULL);
        work("after-failed-exec"); /* not recorded: the session ended at the exec */
        return 18;
    }
    if (!strcmp(m, "child")) /* exec'd by "samename": same output template as the parent */
        return 0;
    if (!strcmp(m, "samename")) {
        pid_t p = fork();
        if (p == 0) {
            execl("/proc/self/exe", "spine_life", "child", (char *)NULL);
            _exit(127);
        }
        int st;
        waitpid(p, &st, 0);
        work("parent-after");
        return 3;
    }
    if (!strcmp(m, "dlopen")) { /* the agent dlopen'ed instead of preloaded (argv[2]) */
        void *h = dlopen(argv[2], RTLD_NOW);
        if (!h) {
            fprintf(stderr, "dlopen: %s\n", dlerror());
            return 1;
        }
        void (*push)(const char *) = (void (*)(const char *))dlsym(h, "hgtxRangePushA");
        void (*pop)(void) = (void (*)(void))dlsym(h, "hgtxRangePop");
        for (int i = 0; i < 5; i++) {
            push("dl");
            usleep(100);
            pop();
        }
        return 6;
    }
    return 0;
}
