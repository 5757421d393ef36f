/* agentthreads_app.c - a profiled program that looks at the agent's threads, one mode per argv[1]
 * (run_agentthreads.py checks what it prints, the DB and /proc of the running process):
 *   wait     one HGTX range, prints "ready", then blocks until its stdin is closed
 *   unshare  first thing: prints "threads T unshare R E" (T the process's thread count before,
 *            R unshare(CLONE_NEWUSER)'s result, E its errno), then Level Zero work and one range
 *   fork     first thing fork(); the child does Level Zero work and range "child", exits 3;
 *            the parent waits for it, prints "child S" (its wait status), then work, range "parent" */
#define _GNU_SOURCE
#include <errno.h>
#include <profagent/hgtx.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

/* Threads: of /proc/self/status, -1 when it cannot be read. */
static int thread_count(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    int n = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Threads: %d", &n) == 1)
            break;
    if (f)
        fclose(f);
    return n;
}

/* zeInit, a context, a host allocation written and freed: a few Level Zero calls in the DB. */
static void ze_work(void)
{
    sample_env_t env;
    sample_env_init(&env, 1);
    char *p = sample_alloc_host(&env, 4096);
    memset(p, 1, 4096);
    SAMPLE_CHECK(zeMemFree(env.context, p));
    sample_env_fini(&env);
}

int main(int argc, char **argv)
{
    const char *m = argc > 1 ? argv[1] : "";
    if (!strcmp(m, "wait")) {
        hgtxRangePushA("wait");
        hgtxRangePop();
        printf("ready\n");
        fflush(stdout);
        char buf[64];
        while (read(0, buf, sizeof buf) > 0) {
        }
        return 0;
    }
    if (!strcmp(m, "unshare")) {
        int threads = thread_count();
        int r = unshare(CLONE_NEWUSER);
        int e = r ? errno : 0;
        printf("threads %d unshare %d %d\n", threads, r, e);
        fflush(stdout);
        ze_work();
        hgtxRangePushA("after_unshare");
        hgtxRangePop();
        return 0;
    }
    if (!strcmp(m, "fork")) {
        pid_t c = fork();
        if (c == 0) {
            ze_work();
            hgtxRangePushA("child");
            hgtxRangePop();
            exit(3);
        }
        int st = -1;
        if (c < 0 || waitpid(c, &st, 0) != c)
            st = -1;
        printf("child %d\n", st);
        fflush(stdout);
        ze_work();
        hgtxRangePushA("parent");
        hgtxRangePop();
        return 0;
    }
    fprintf(stderr, "agentthreads_app: unknown mode \"%s\" (accepted: wait, unshare, fork)\n", m);
    return 2;
}
